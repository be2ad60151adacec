/* The S3 protocol on the request core (storage/store/remote.c): SigV4 signing, S3's error
 * documents, multipart uploads with parts in flight at once, ListObjectsV2, batched
 * deletes, and the s3:// constructor. GCS's XML API speaks the same protocol with Google's
 * authorization (storage/store/store_gcs.c). See storage/store/store_s3.h. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "rr/aws_credentials.h"
#include "rr/aws_profile.h"
#include "rr/clock.h"
#include "rr/env.h"
#include "rr/gcs_auth.h"
#include "rr/error.h"
#include "rr/hash.h"
#include "rr/http.h"
#include "rr/log.h"
#include "rr/retry.h"
#include "rr/s3_xml.h"
#include "rr/sigv4.h"
#include "rr/timefmt.h"
#include "remote.h"
#include "store_s3.h"

#define S_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define S_MAX_PARTS 10000u
#define S_DELETE_BATCH 1000u

static struct rr_s3 *s_of(struct rr_store *s)
{
	return (struct rr_s3 *)s;
}

int rr_s3_sign(struct rr_remote *r, const struct rr_remote_req *q, int refresh_creds,
	       struct rr_remote_signed *p)
{
	struct rr_s3 *s3 = (struct rr_s3 *)r;
	struct rr_sigv4_header sh[RR_REMOTE_MAX_EXTRA_HEADERS + 2];
	struct rr_sigv4_credentials sc;
	struct rr_sigv4_request sr;
	struct rr_buf path;
	char why[1400]; /* no credentials: every step of the chain, with what it looked at */
	size_t i, n = 0;
	int rc;

	rc = rr_aws_creds_get(s3->creds, refresh_creds, &p->cr, why, sizeof(why));
	if (rc)
		return rr_store_fail(rc, "no usable %s credentials: %s",
				     s3->gcs ? "GCS HMAC" : "AWS", why);

	if (q->payload_sha256)
		snprintf(p->sha, sizeof(p->sha), "%s", q->payload_sha256);
	else if (q->body_len)
		rr_sha256_hex(q->body, q->body_len, p->sha);
	else
		snprintf(p->sha, sizeof(p->sha), "%s", S_EMPTY_SHA256);

	sh[n++] = (struct rr_sigv4_header){ "host", s3->r.host };
	sh[n++] = (struct rr_sigv4_header){ "x-amz-content-sha256", p->sha };
	for (i = 0; i < q->nextra; i++)
		sh[n++] = q->extra[i];

	rr_buf_init(&path, 8192);
	rc = rr_remote_raw_path(&s3->r, q->key, &path);
	if (rc)
		goto out;
	sc = (struct rr_sigv4_credentials){ p->cr.access_key_id, p->cr.secret_access_key,
					    p->cr.session_token[0] ? p->cr.session_token : NULL };
	sr = (struct rr_sigv4_request){ q->method, (const char *)path.data, q->query, sh, n,
					p->sha };
	rc = rr_sigv4_sign(&sc, s3->region, "s3", time(NULL) + (time_t)s3->clock_offset_s, &sr, 1,
			   p->auth, sizeof(p->auth), p->date);
	if (rc) {
		rr_store_fail(rc, "cannot sign the request for %s", q->key ? q->key : "the bucket");
		goto out;
	}
	rc = rr_remote_url(&s3->r, q, &path, NULL, &p->url);
	if (rc)
		goto out;

	n = 0;
	p->headers[n++] = (struct rr_http_header){ "Host", s3->r.host };
	p->headers[n++] = (struct rr_http_header){ "x-amz-content-sha256", p->sha };
	p->headers[n++] = (struct rr_http_header){ "x-amz-date", p->date };
	if (p->cr.session_token[0])
		p->headers[n++] = (struct rr_http_header){ "x-amz-security-token",
							   p->cr.session_token };
	p->headers[n++] = (struct rr_http_header){ "Authorization", p->auth };
	rr_remote_finish_request(&s3->r, q, p, n);
out:
	rr_buf_free(&path);
	return rc;
}

/* The server's clock from a RequestTimeTooSkewed answer (its ServerTime, else its Date
 * header) becomes the signing clock. Returns 0 when the offset changed (a retry may pass),
 * RR_EINVAL when the answer gives no usable time or the offset was already in use. */
static int s_adopt_server_clock(struct rr_s3 *s3, const struct rr_s3_error *e,
				const struct rr_http_response *resp)
{
	const char *date = rr_http_response_header(resp, "Date");
	long long server_s, offset;
	int64_t ms;
	struct tm tm;
	char *end;

	if (e->server_time[0] && rr_iso8601_to_unix_ms(e->server_time, &ms) == 0) {
		server_s = ms / 1000;
	} else if (date) {
		memset(&tm, 0, sizeof(tm));
		end = strptime(date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		if (!end || *end)
			return RR_EINVAL;
		server_s = (long long)timegm(&tm);
	} else {
		return RR_EINVAL;
	}
	offset = server_s - (long long)time(NULL);
	if (offset == atomic_load(&s3->clock_offset_s))
		return RR_EINVAL;
	atomic_store(&s3->clock_offset_s, offset);
	if (offset == 0)
		rr_warn("%s refused a request as signed at the wrong time and its clock agrees "
			"with this machine's: requests are signed with this machine's time again",
			s3->r.label);
	else
		rr_warn("%s says this machine's clock is off by %lld s (RequestTimeTooSkewed): "
			"requests are signed with %s's time from now on; fix the clock (NTP)",
			s3->r.label, offset, s3->r.label);
	return 0;
}

/* S3's (and GCS's) answer that is not a success, read from its <Error> document. */
int rr_s3_judge(struct rr_remote *r, const struct rr_remote_req *q,
		const struct rr_remote_signed *p, const struct rr_http_response *resp, int *retry,
		int *refresh, int64_t *retry_after_ms)
{
	struct rr_s3 *s3 = (struct rr_s3 *)r;
	struct rr_s3_error e;
	const char *region;
	long st = resp->status;

	(void)retry_after_ms; /* S3 says when to come back by its error codes */
	memset(&e, 0, sizeof(e));
	if (resp->body.len)
		rr_s3_xml_parse_error(resp->body.data, resp->body.len, &e);
	if (!e.code[0] && st == 404)
		snprintf(e.code, sizeof(e.code), "NoSuchKey");
	*retry = rr_retry_worth_it(st, 0, e.code);
	if (strcmp(e.code, "ExpiredToken") == 0 || strcmp(e.code, "InvalidToken") == 0 ||
	    strcmp(e.code, "TokenRefreshRequired") == 0 || (s3->gauth && st == 401)) {
		*retry = 1;
		*refresh = 1;
	}
	if (st == 404 && strcmp(e.code, "NoSuchKey") == 0)
		return rr_store_fail(RR_ENOENT, "%s: no such key", rr_remote_what(q));
	if (st == 412)
		return rr_store_fail(RR_EPRECOND, "%s: precondition failed", rr_remote_what(q));
	if (st == 301 || st == 307 || strcmp(e.code, "PermanentRedirect") == 0 ||
	    strcmp(e.code, "AuthorizationHeaderMalformed") == 0) {
		region = rr_http_response_header(resp, "x-amz-bucket-region");
		return rr_store_fail(RR_EIO, "S3 bucket '%s' is not in region %s%s%s (%ld %s); set "
				     "AWS_REGION", s3->r.bucket, s3->region,
				     region ? ", it is in " : "", region ? region : "", st,
				     e.code[0] ? e.code : "redirect");
	}
	if (strcmp(e.code, "NoSuchBucket") == 0)
		return rr_store_fail(RR_EIO, "%s bucket '%s' does not exist (NoSuchBucket at %s)",
				     s3->r.label, s3->r.bucket, s3->r.host);
	if (strcmp(e.code, "RequestTimeTooSkewed") == 0) {
		*retry = s_adopt_server_clock(s3, &e, resp) == 0;
		return rr_store_fail(RR_EIO, "S3 refused the request because this machine's clock "
				     "is off (RequestTimeTooSkewed): fix the clock (NTP)");
	}
	return rr_store_fail(st == 403 || st == 401 ? RR_EACCES : RR_EIO,
			     "%s refused %s %s: %ld %s%s%s (credentials from %s)", s3->r.label,
			     q->method, rr_remote_what(q), st,
			     e.code[0] ? e.code : "(no error code)", e.message[0] ? ": " : "", e.message, p->cr.source);
}

/* ---- the store calls ---- */

static void s_add_sse(const struct rr_s3 *s3, struct rr_remote_req *q)
{
	if (!s3->sse)
		return;
	rr_remote_add_header(q, "x-amz-server-side-encryption", s3->sse);
	if (s3->sse_kms_key)
		rr_remote_add_header(q, "x-amz-server-side-encryption-aws-kms-key-id",
				     s3->sse_kms_key);
}

static void s_add_conditions(const struct rr_s3 *s3, struct rr_remote_req *q,
			     const struct rr_put_opts *opts)
{
	if (s3->gcs) {
		/* GCS: generation 0 means "no live object"; otherwise the generation read. */
		if (opts && opts->if_none_match)
			rr_remote_add_header(q, "x-goog-if-generation-match", "0");
		else if (opts && opts->if_match)
			rr_remote_add_header(q, "x-goog-if-generation-match", opts->if_match);
		return;
	}
	if (opts && opts->if_none_match)
		rr_remote_add_header(q, "if-none-match", "*");
	if (opts && opts->if_match)
		rr_remote_add_header(q, "if-match", opts->if_match);
}

static int s_upload_id_query(char *out, size_t cap, const char *upload_id, unsigned part)
{
	struct rr_buf b;
	int rc;

	rr_buf_init(&b, cap);
	rc = part ? rr_buf_printf(&b, "partNumber=%u&uploadId=", part)
		  : rr_buf_printf(&b, "uploadId=");
	if (!rc)
		rc = rr_sigv4_uri_encode(&b, upload_id, strlen(upload_id), 0);
	if (!rc && b.len < cap)
		memcpy(out, b.data, b.len + 1);
	else if (!rc)
		rc = RR_ETOOBIG;
	rr_buf_free(&b);
	return rc;
}

static void s_abort_upload(struct rr_s3 *s3, const char *key, const char *upload_id)
{
	struct rr_http_response resp;
	struct rr_remote_req q = { .method = "DELETE", .key = key };
	struct rr_retry r;
	char query[512];
	int rc;

	if (s_upload_id_query(query, sizeof(query), upload_id, 0))
		return;
	q.query = query;
	rr_http_response_init(&resp);
	rr_retry_init(&r, s3->r.base.deadline_mono_ms);
	r.max_attempts = 3;
	if (s3->r.base.cancel && *s3->r.base.cancel) {
		/* Canceled: one short try, so the parts sent do not linger in the bucket. */
		q.cleanup = 1;
		r.max_attempts = 1;
	}
	rc = rr_remote_send_policy(&s3->r, &q, &resp, &r);
	if (rc != 0)
		rr_warn("could not abort the multipart upload of %s (%s); a bucket lifecycle rule "
			"for incomplete uploads cleans such parts up", key, rr_store_strerror(rc));
	rr_http_response_free(&resp);
}

static int s_complete(struct rr_s3 *s3, const char *key, const char *upload_id,
		      struct rr_remote_job *parts, size_t n, const struct rr_put_opts *opts,
		      struct rr_http_response *resp, int *maybe_applied)
{
	struct rr_remote_req q = { .method = "POST", .key = key, .response_max = 1u << 20,
				   .maybe_applied = maybe_applied, .stop_after_unknown = 1 };
	const char **etags = calloc(n, sizeof(*etags));
	struct rr_s3_error e;
	struct rr_retry r;
	struct rr_buf body;
	char query[512];
	int64_t delay;
	size_t i;
	int rc;

	if (!etags)
		return RR_ENOMEM;
	/* About 100 bytes a part with S3's ETags (1 MB for 10000 parts): the XML ceiling. */
	rr_buf_init(&body, RR_S3_XML_MAX);
	for (i = 0; i < n; i++) {
		etags[i] = rr_http_response_header(&parts[i].resp, "ETag");
		if (!etags[i]) {
			rc = rr_store_fail(RR_EIO, "S3 sent no ETag for part %zu of %s", i + 1,
					   key);
			goto out;
		}
	}
	rc = rr_s3_xml_complete_body(&body, etags, n);
	if (!rc)
		rc = s_upload_id_query(query, sizeof(query), upload_id, 0);
	if (rc)
		goto out;
	q.query = query;
	q.body = body.data;
	q.body_len = body.len;
	rr_remote_add_header(&q, "content-type", "application/xml");
	if (!s3->gcs) /* GCS takes no preconditions on multipart requests */
		s_add_conditions(s3, &q, opts);
	rr_retry_init(&r, s3->r.base.deadline_mono_ms);
	for (;;) {
		rc = rr_remote_send_policy(&s3->r, &q, resp, &r);
		if (rc)
			break;
		/* 200 can still carry an error: S3 answers early and fails later. */
		rc = rr_s3_xml_parse_complete(resp->body.data, resp->body.len, &e);
		if (rc == 0)
			break;
		if (rc == RR_EIO) {
			rc = rr_store_fail(RR_EIO, "S3 could not complete the upload of %s: %s %s",
					   key, e.code, e.message);
			if (!rr_retry_worth_it(200, 0, e.code))
				break;
		} else {
			rc = rr_store_fail(RR_EIO, "S3 answered the completion of %s with an "
					   "unreadable body", key);
		}
		delay = rr_retry_next(&r, rr_mono_ms());
		if (delay < 0)
			break;
		rr_remote_sleep_ms(&s3->r, delay);
	}
out:
	rr_buf_free(&body);
	free(etags);
	return rc;
}

/* Completions of one multipart upload, each of up to two tries (the second ends it when the
 * first's outcome is unknown, for the object to be read back): S3's 5xx bursts pass. */
#define S_COMPLETE_ROUNDS 4

static int s_put_multipart(struct rr_s3 *s3, const char *key, const unsigned char *data,
			   size_t len, const struct rr_put_opts *opts, char *etag_out)
{
	struct rr_remote_req q = { .method = "POST", .key = key, .query = "uploads" };
	struct rr_http_response resp;
	struct rr_remote_job *parts = NULL;
	char upload_id[1024] = "";
	size_t n = (len + s3->r.part_size - 1) / s3->r.part_size, i, off;
	int rc, maybe_applied = 0;

	if (n > S_MAX_PARTS)
		return rr_store_fail(RR_ETOOBIG, "%s is too big for %zu parts of %zu bytes", key,
				     (size_t)S_MAX_PARTS, s3->r.part_size);
	rr_http_response_init(&resp);
	s_add_sse(s3, &q);
	rc = rr_remote_send(&s3->r, &q, &resp);
	if (rc)
		goto out_nothing;
	rc = rr_s3_xml_parse_initiate(resp.body.data, resp.body.len, upload_id,
				      sizeof(upload_id));
	if (rc) {
		rc = rr_store_fail(RR_EIO, "S3 started a multipart upload of %s without a "
				   "readable UploadId", key);
		goto out_nothing;
	}
	parts = calloc(n, sizeof(*parts));
	if (!parts) {
		rc = RR_ENOMEM;
		goto out;
	}
	for (i = 0, off = 0; i < n; i++, off += s3->r.part_size) {
		struct rr_remote_job *j = &parts[i];
		rc = s_upload_id_query(j->query, sizeof(j->query), upload_id, (unsigned)(i + 1));
		if (rc)
			goto out;
		j->q = (struct rr_remote_req){ .method = "PUT", .key = key, .query = j->query,
					       .body = data + off,
					       .body_len = len - off < s3->r.part_size
								   ? len - off
								   : s3->r.part_size };
	}
	rc = rr_remote_run_jobs(&s3->r, parts, n);
	if (!rc) {
		rr_http_response_free(&resp);
		rr_http_response_init(&resp);
		struct rr_retry rounds;

		rr_retry_init(&rounds, s3->r.base.deadline_mono_ms);
		rounds.max_attempts = S_COMPLETE_ROUNDS;
		rc = s_complete(s3, key, upload_id, parts, n, opts, &resp, &maybe_applied);
		/* A completion applied whose answer was lost: the retry finds the object there
		 * (412), the upload gone (S3: 404 NoSuchUpload; s3rver: 500), or the like, and
		 * the object read back says. Not there: it was not applied (a 500, then a 503
		 * SlowDown: S3's errors come in bursts), and is tried again. */
		while (rc && maybe_applied) {
			char why[512];
			int failed = rc;
			int64_t delay;

			snprintf(why, sizeof(why), "%s", rr_store_strerror(rc));
			rc = rr_remote_check_ours(&s3->r, key, data, len, etag_out);
			if (rc == 0) {
				upload_id[0] = '\0'; /* complete: nothing to abort */
				etag_out = NULL;     /* filled from the object read */
				break;
			}
			if (rc != RR_ENOENT)
				break;
			rc = rr_store_fail(failed, "%s", why);
			delay = rr_retry_next(&rounds, rr_mono_ms());
			if (delay < 0)
				break;
			rr_remote_sleep_ms(&s3->r, delay);
			maybe_applied = 0;
			rr_http_response_free(&resp);
			rr_http_response_init(&resp);
			rc = s_complete(s3, key, upload_id, parts, n, opts, &resp, &maybe_applied);
		}
		rc = rr_remote_precondition_rc(rc, opts);
	}
	if (!rc && etag_out) {
		/* The object is complete: nothing is left to abort whatever the HEAD says. */
		upload_id[0] = '\0';
		/* The completion's ETag header is optional; HEAD tells it for certain. */
		struct rr_remote_req h = { .method = "HEAD", .key = key };
		rr_http_response_free(&resp);
		rr_http_response_init(&resp);
		rc = rr_remote_send(&s3->r, &h, &resp);
		if (!rc)
			rc = rr_remote_copy_etag(&s3->r, &resp, etag_out);
	}
out:
	if (rc && upload_id[0]) {
		/* The abort records its own failures: keep the reason the upload failed. */
		char why[512];
		snprintf(why, sizeof(why), "%s", rr_store_strerror(rc));
		s_abort_upload(s3, key, upload_id);
		rr_store_fail(rc, "%s", why);
	}
out_nothing:
	rr_remote_jobs_free(parts, n);
	rr_http_response_free(&resp);
	return rc;
}

int rr_s3_put(struct rr_store *s, const char *key, const void *data, size_t len,
	      const struct rr_put_opts *opts, char *etag_out)
{
	struct rr_s3 *s3 = s_of(s);
	struct rr_remote_req q = { .method = "PUT", .key = key, .body = data, .body_len = len };
	struct rr_http_response resp;
	int rc, maybe_applied = 0, checked = 0;

	/* GCS takes no precondition on a multipart upload (its completion overwrites whatever
	 * is there): a conditional put goes up whole, as one PUT takes up to 5 TiB there. */
	if (len > s3->r.part_size &&
	    !(s3->gcs && opts && (opts->if_none_match || opts->if_match)))
		return s_put_multipart(s3, key, data, len, opts, etag_out);
	if (opts && opts->sha256_hex)
		q.payload_sha256 = opts->sha256_hex;
	q.maybe_applied = &maybe_applied;
	s_add_sse(s3, &q);
	s_add_conditions(s3, &q, opts);
	rr_http_response_init(&resp);
	rc = rr_remote_send(&s3->r, &q, &resp);
	if (rc == RR_EPRECOND && maybe_applied) {
		rc = rr_remote_check_ours(&s3->r, key, data, len, etag_out);
		if (rc == RR_ENOENT) /* gone again since the 412 */
			rc = rr_store_fail(RR_EPRECOND, "%s: precondition failed", key);
		checked = 1;
	}
	rc = rr_remote_precondition_rc(rc, opts);
	if (!rc && !checked)
		rc = rr_remote_copy_etag(&s3->r, &resp, etag_out);
	rr_http_response_free(&resp);
	return rc;
}

struct s_list_ctx {
	struct rr_s3 *s3;
	rr_store_list_cb cb;
	void *ud;
};

static int s_on_object(const struct rr_s3_object *o, void *ud)
{
	struct s_list_ctx *c = ud;
	size_t plen = strlen(c->s3->r.prefix);
	struct rr_store_entry e;

	if (strncmp(o->key, c->s3->r.prefix, plen) != 0)
		return 0;
	e = (struct rr_store_entry){ o->key + plen, o->size, o->mtime_unix_ms };
	return c->cb(&e, c->ud);
}

int rr_s3_list_query(struct rr_buf *qb, const char *root, const char *prefix,
			const char *token, int max_keys)
{
	int rc = rr_buf_printf(qb, "list-type=2");

	if (!rc && max_keys)
		rc = rr_buf_printf(qb, "&max-keys=%d", max_keys);
	if (!rc)
		rc = rr_buf_printf(qb, "&prefix=");
	if (!rc)
		rc = rr_sigv4_uri_encode(qb, root, strlen(root), 0);
	if (!rc)
		rc = rr_sigv4_uri_encode(qb, prefix, strlen(prefix), 0);
	if (!rc && token && *token) {
		rc = rr_buf_printf(qb, "&continuation-token=");
		if (!rc)
			rc = rr_sigv4_uri_encode(qb, token, strlen(token), 0);
	}
	return rc;
}

int rr_s3_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb, void *ud)
{
	struct rr_s3 *s3 = s_of(s);
	struct s_list_ctx ctx = { s3, cb, ud };
	struct rr_http_response resp;
	char token[2048] = "";
	struct rr_buf qb;
	int rc, truncated;

	rr_buf_init(&qb, 8192);
	do {
		struct rr_remote_req q = { .method = "GET", .key = NULL,
					   .response_max = RR_S3_XML_MAX };
		rr_buf_reset(&qb);
		rc = rr_s3_list_query(&qb, s3->r.prefix, prefix, token, 0);
		if (rc)
			break;
		q.query = (const char *)qb.data;
		rr_http_response_init(&resp);
		rc = rr_remote_send(&s3->r, &q, &resp);
		truncated = 0;
		if (!rc) {
			rc = rr_s3_xml_parse_list(resp.body.data, resp.body.len, s_on_object, &ctx,
						  &truncated, token, sizeof(token));
			if (rc == RR_ECORRUPT)
				rc = rr_store_fail(RR_EIO, "%s sent a listing that is not a "
						   "ListBucketResult this agent can read (invalid "
						   "XML, or IsTruncated missing)", s3->r.label);
		}
		rr_http_response_free(&resp);
		if (!rc && truncated && !token[0])
			rc = rr_store_fail(RR_EIO, "%s said the listing goes on but sent no "
					   "continuation token", s3->r.label);
	} while (!rc && truncated);
	rr_buf_free(&qb);
	return rc;
}

static int s_base64_md5(const void *data, size_t len, char out[25])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (EVP_Digest(data, len, md, &mdlen, EVP_md5(), NULL) != 1 || mdlen != 16)
		return RR_EIO;
	EVP_EncodeBlock((unsigned char *)out, md, 16);
	return 0;
}

static int s_del_batch(struct rr_s3 *s3, const char *const *keys, size_t n)
{
	struct rr_remote_req q = { .method = "POST", .key = NULL, .query = "delete",
				   .response_max = RR_S3_XML_MAX };
	struct rr_http_response resp;
	const char **full = calloc(n, sizeof(*full));
	struct rr_s3_error e;
	struct rr_buf body, names;
	char md5[25], first[1100];
	size_t i, *offs = calloc(n, sizeof(*offs));
	int rc = 0, failed;

	rr_buf_init(&body, RR_S3_XML_MAX);
	rr_buf_init(&names, RR_S3_XML_MAX);
	rr_http_response_init(&resp);
	if (!full || !offs) {
		rc = RR_ENOMEM;
		goto out;
	}
	for (i = 0; !rc && i < n; i++) {
		offs[i] = names.len;
		rc = rr_buf_printf(&names, "%s%s%c", s3->r.prefix, keys[i], 0);
	}
	if (rc)
		goto out;
	for (i = 0; i < n; i++)
		full[i] = (const char *)names.data + offs[i];
	rc = rr_s3_xml_delete_body(&body, full, n);
	if (!rc)
		rc = s_base64_md5(body.data, body.len, md5);
	if (rc)
		goto out;
	q.body = body.data;
	q.body_len = body.len;
	rr_remote_add_header(&q, "content-md5", md5);
	rr_remote_add_header(&q, "content-type", "application/xml");
	rc = rr_remote_send(&s3->r, &q, &resp);
	if (rc)
		goto out;
	failed = rr_s3_xml_parse_delete(resp.body.data, resp.body.len, first, sizeof(first), &e);
	if (failed < 0)
		rc = rr_store_fail(RR_EIO, "S3 answered a batch delete with an unreadable body");
	else if (failed > 0) /* S3 counts a missing key as deleted: any error is real */
		rc = rr_store_fail(RR_EIO, "S3 could not delete %d keys, %s among them: %s %s",
				   failed, first, e.code, e.message);
out:
	rr_http_response_free(&resp);
	rr_buf_free(&body);
	rr_buf_free(&names);
	free(full);
	free(offs);
	return rc;
}

static int s_del_many(struct rr_store *s, const char *const *keys, size_t n)
{
	size_t i, k;
	int rc;

	for (i = 0; i < n; i += k) {
		k = n - i < S_DELETE_BATCH ? n - i : S_DELETE_BATCH;
		rc = s_del_batch(s_of(s), keys + i, k);
		if (rc)
			return rc;
	}
	return 0;
}

void rr_s3_destroy(struct rr_store *s)
{
	struct rr_s3 *s3 = s_of(s);

	rr_aws_creds_destroy(s3->creds);
	rr_gcs_auth_destroy(s3->gauth);
	rr_remote_free(&s3->r);
	free(s3->region);
	free(s3->sse);
	free(s3->sse_kms_key);
	free(s3);
}

const struct rr_remote_ops rr_s3_ops = {
	.sign = rr_s3_sign,
	.judge = rr_s3_judge,
	.version_header = "ETag",
	.version_name = "ETag",
};

static const struct rr_store_vtable s_s3_vtable = {
	.scheme = "s3",
	.put = rr_s3_put,
	.get = rr_remote_get,
	.head = rr_remote_head,
	.list = rr_s3_list,
	.del = rr_remote_del,
	.del_many = s_del_many,
	.destroy = rr_s3_destroy,
};

/* ---- opening: where to send requests, how, and with what ---- */

int rr_s3_valid_bucket(const char *b, size_t len)
{
	size_t i;

	if (len < 3 || len > 63)
		return 0;
	for (i = 0; i < len; i++)
		if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '-' ||
		      b[i] == '.' || (b[i] == '_')))
			return 0;
	return 1;
}

/* Where requests go: AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL / the profile's, else the
 * region's endpoint; path-style or virtual-hosted addressing. */
static int s_set_host(struct rr_s3 *s3, const struct rr_store_opts *opts,
		      const struct rr_aws_profile *prof)
{
	const char *endpoint, *addressing;
	char *ep_host = NULL;
	int path_style, rc;

	endpoint = rr_env("AWS_ENDPOINT_URL_S3");
	if (!endpoint)
		endpoint = rr_env("AWS_ENDPOINT_URL");
	if (!endpoint)
		endpoint = rr_aws_profile_get(prof, "s3.endpoint_url");
	if (!endpoint)
		endpoint = rr_aws_profile_get(prof, "endpoint_url");
	addressing = opts->s3_addressing ? opts->s3_addressing : "auto";
	if (strcmp(addressing, "path") == 0)
		path_style = 1;
	else if (strcmp(addressing, "virtual") == 0)
		path_style = 0;
	else if (strcmp(addressing, "auto") == 0)
		/* Path style with a custom endpoint (as the AWS tools do), and for bucket names
		 * with dots, which the *.s3 TLS wildcard certificate does not cover. */
		path_style = endpoint != NULL || strchr(s3->r.bucket, '.') != NULL;
	else
		return rr_store_fail(RR_EINVAL, "--s3-addressing must be auto, path or virtual, "
				     "not '%s'", addressing);
	if (endpoint) {
		rc = rr_remote_parse_endpoint(endpoint, "S3 endpoint", &s3->r.scheme, &ep_host);
		if (rc)
			return rc;
	} else {
		s3->r.scheme = strdup("https");
		if (asprintf(&ep_host, "s3.%s.amazonaws.com", s3->region) < 0)
			ep_host = NULL;
		if (!s3->r.scheme || !ep_host)
			return RR_ENOMEM;
	}
	if (path_style) {
		s3->r.host = ep_host;
		if (asprintf(&s3->r.path_root, "/%s", s3->r.bucket) < 0)
			s3->r.path_root = NULL;
	} else {
		if (asprintf(&s3->r.host, "%s.%s", s3->r.bucket, ep_host) < 0)
			s3->r.host = NULL;
		free(ep_host);
		s3->r.path_root = strdup("");
	}
	return !s3->r.host || !s3->r.path_root ? RR_ENOMEM : 0;
}

static int s_set_sse(struct rr_s3 *s3, const struct rr_store_opts *opts)
{
	if (opts->s3_sse) {
		if (strcmp(opts->s3_sse, "AES256") != 0 && strcmp(opts->s3_sse, "aws:kms") != 0)
			return rr_store_fail(RR_EINVAL, "--s3-sse must be AES256 or aws:kms, not "
					     "'%s'", opts->s3_sse);
		s3->sse = strdup(opts->s3_sse);
		if (!s3->sse)
			return RR_ENOMEM;
	}
	if (opts->s3_sse_kms_key_id) {
		if (!s3->sse || strcmp(s3->sse, "aws:kms") != 0)
			return rr_store_fail(RR_EINVAL, "a KMS key id needs --s3-sse aws:kms");
		s3->sse_kms_key = strdup(opts->s3_sse_kms_key_id);
		if (!s3->sse_kms_key)
			return RR_ENOMEM;
	}
	return 0;
}

static int s_configure(struct rr_s3 *s3, const char *rest, const struct rr_store_opts *opts,
		       const struct rr_aws_profile *prof)
{
	int rc;

	rc = rr_remote_set_bucket(&s3->r, rest, rr_s3_valid_bucket, RR_S3_BUCKET_RULE("S3"));
	if (rc)
		return rc;
	s3->region = strdup(rr_env("AWS_REGION") ? rr_env("AWS_REGION")
			    : rr_env("AWS_DEFAULT_REGION") ? rr_env("AWS_DEFAULT_REGION")
			    : rr_aws_profile_get(prof, "region")
				    ? rr_aws_profile_get(prof, "region")
				    : "us-east-1");
	if (!s3->region)
		return RR_ENOMEM;
	rc = s_set_host(s3, opts, prof);
	if (!rc)
		rc = s_set_sse(s3, opts);
	if (!rc)
		rc = rr_remote_set_part_size(&s3->r);
	return rc;
}

static int s_probe_query(const struct rr_s3 *s3, struct rr_buf *qb)
{
	return rr_s3_list_query(qb, s3->r.prefix, "", NULL, 1);
}

/* Opens a store of the S3 protocol's family: the probe's query, then the core's tail. */
int rr_s3_finish_open(struct rr_s3 *s3, const char *url, struct rr_store **out)
{
	struct rr_buf qb;
	int rc;

	rr_buf_init(&qb, 4096);
	rc = s_probe_query(s3, &qb);
	if (rc) {
		rr_buf_free(&qb);
		rr_s3_destroy(&s3->r.base);
		return rc;
	}
	rc = rr_remote_finish_open(&s3->r, url, (const char *)qb.data, out);
	rr_buf_free(&qb);
	return rc;
}

int rr_store_s3_new(const char *rest, const struct rr_store_opts *opts, struct rr_store **out)
{
	struct rr_aws_profile *prof = NULL;
	struct rr_s3 *s3;
	char why[300];
	int rc;

	s3 = calloc(1, sizeof(*s3));
	if (!s3)
		return RR_ENOMEM;
	rc = rr_remote_init(&s3->r, &s_s3_vtable, &rr_s3_ops, "S3", rr_env("AWS_CA_BUNDLE"));
	if (rc)
		goto fail;
	rc = rr_aws_profile_load(NULL, &prof, why, sizeof(why));
	if (rc) {
		rc = rr_store_fail(rc, "cannot read the AWS profile: %s", why);
		goto fail;
	}
	rc = s_configure(s3, rest, opts, prof);
	if (!rc)
		rc = rr_aws_creds_new(&(struct rr_aws_creds_opts){ .http = s3->r.http,
								   .region = s3->region },
				      &s3->creds);
	rr_aws_profile_free(prof);
	if (rc)
		goto fail;
	return rr_s3_finish_open(s3, "s3://", out);
fail:
	rr_s3_destroy(&s3->r.base);
	return rc;
}
