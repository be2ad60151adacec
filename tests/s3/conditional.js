// Conditional writes for the S3 test server. @20minutes/s3rver 5.0.0 ignores If-None-Match
// and If-Match on PutObject, which real S3 honours (create-only since 2024-08, compare-and-
// swap since 2024-11: 412 PreconditionFailed when the condition fails). The agent relies on
// both (manifests are create-only, LATEST is replaced by compare-and-swap), and a test with
// two writers on one store needs the server to enforce them. This middleware checks them
// for single-request PUTs (not parts, not copies) and serialises PUTs of one key, so the
// check and the write are atomic as on S3.
'use strict';

const locks = new Map();

async function serialized(k, fn) {
  const prev = locks.get(k) || Promise.resolve();
  let release;
  const mine = new Promise((r) => { release = r; });
  const tail = prev.then(() => mine);
  locks.set(k, tail);
  await prev;
  try {
    return await fn();
  } finally {
    release();
    if (locks.get(k) === tail) locks.delete(k);
  }
}

function preconditionFailed(ctx, key) {
  ctx.status = 412;
  ctx.type = 'application/xml';
  ctx.body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PreconditionFailed</Code>' +
    '<Message>At least one of the pre-conditions you specified did not hold</Message>' +
    `<Condition>If-None-Match or If-Match</Condition><Key>${key}</Key></Error>`;
}

// Installs the check ahead of every other middleware of the S3rver (a Koa app).
module.exports = function installConditionalPut(server) {
  server.middleware.unshift(async (ctx, next) => {
    const noneMatch = ctx.get('if-none-match');
    const match = ctx.get('if-match');
    if (ctx.method !== 'PUT' || (!noneMatch && !match) || ctx.query.uploadId !== undefined ||
        ctx.get('x-amz-copy-source')) {
      return next();
    }
    const parts = ctx.path.split('/').slice(1);
    if (parts.length < 2) return next();
    const bucket = decodeURIComponent(parts[0]);
    const key = parts.slice(1).map(decodeURIComponent).join('/');
    return serialized(`${bucket}/${key}`, async () => {
      const exists = await server.store.existsObject(bucket, key);
      if (noneMatch === '*' && exists) return preconditionFailed(ctx, key);
      if (match) {
        const etag = exists ? (await server.store.getMetadata(bucket, key)).etag : null;
        if (etag !== match && etag !== `"${match.replace(/"/g, '')}"`) {
          return preconditionFailed(ctx, key);
        }
      }
      return next();
    });
  });
};
