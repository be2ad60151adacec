// Starts @20minutes/s3rver (an S3 server that verifies SigV4 signatures) for the tests.
// usage: node --openssl-legacy-provider s3rver.js PORT DIRECTORY BUCKET...
// prints "ready PORT" once listening and runs until killed. The flag matters: s3rver makes
// ListObjectsV2 continuation tokens with DES, which Node's OpenSSL 3 keeps in its legacy
// provider; without it every truncated listing answers 500 InternalError. The package comes from tests/s3/install-s3rver.sh (RR_S3RVER_DIR).
'use strict';
const path = require('path');
const dir = process.env.RR_S3RVER_DIR || '/var/tmp/resume-run-s3rver';
const S3rver = require(path.join(dir, 'node_modules', '@20minutes', 's3rver'));
// RR_S3RVER_KEYS="AKID:SECRET,...": key pairs accepted besides S3RVER/S3RVER (the secrets
// test signs with distinctive secrets it then looks for everywhere).
const Account = require(path.join(dir, 'node_modules', '@20minutes', 's3rver', 'lib', 'models', 'account'));
for (const pair of (process.env.RR_S3RVER_KEYS || '').split(',').filter(Boolean)) {
  const i = pair.indexOf(':');
  Account.DUMMY_ACCOUNT.createKeyPair(pair.slice(0, i), pair.slice(i + 1));
}

const [port, directory, ...buckets] = process.argv.slice(2);
if (!port || !directory || buckets.length === 0) {
  console.error('usage: node s3rver.js PORT DIRECTORY BUCKET...');
  process.exit(2);
}
const server = new S3rver({
  port: Number(port),
  address: '127.0.0.1',
  directory,
  silent: !process.env.S3RVER_VERBOSE, // S3RVER_VERBOSE=1: log every request and stored part
  configureBuckets: buckets.map((name) => ({ name })),
});
require('./conditional')(server); // If-None-Match / If-Match on PUT, as real S3
server.run().then(
  (info) => console.log(`ready ${info.port}`),
  (err) => { console.error(`s3rver: ${err.message}`); process.exit(1); });
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => server.close().then(() => process.exit(0)));
