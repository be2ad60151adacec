/* The S3-protocol backend, for S3 and for GCS's XML API: every store call becomes requests
 * signed with SigV4 (storage/sigv4.c) or carrying a Google bearer token
 * (storage/gcs_auth.c), over the HTTP layer (storage/http.c), retried with backoff
 * (storage/retry.c) within the notice deadline. Big objects go up in parts and come down in
 * ranges, several at once on one curl multi batch. See include/rr/store_s3.h. */
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
#include "rr/gcs_auth.h"
#include "rr/error.h"
#include "rr/hash.h"
#include "rr/http.h"
#include "rr/log.h"
#include "rr/retry.h"
#include "rr/s3_xml.h"
#include "rr/sigv4.h"
#include "rr/store_s3.h"

#define S_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define S_MAX_EXTRA_HEADERS 8
#define S_MAX_PARTS 10000u
#define S_PARALLEL 4u      /* parts or ranges of one object in flight at once */
#define S_DELETE_BATCH 1000u
#define S_CLEANUP_MS 2000L /* the most a canceled upload's abort may hold up what follows */

struct s_s3 {
	struct rr_store base;
	struct rr_http *http;
	struct rr_aws_creds *creds;   /* SigV4 credentials (S3; GCS with HMAC keys) */
	struct rr_gcs_auth *gauth;    /* GCS: OAuth2 bearer tokens instead of SigV4 */
	int gcs;                      /* the GCS XML API: x-goog-* preconditions, generations */
	const char *label;            /* "S3" or "GCS", for reasons */
	char *bucket;
	char *prefix;     /* "" or "a/b/" (ends with '/'): prepended to every key */
	char *region;
	char *scheme;     /* "https" or "http" */
	char *host;       /* host[:port] the requests go to (with the bucket when virtual) */
	char *path_root;  /* "/bucket" for path-style addressing, "" for virtual-hosted */
	char *sse, *sse_kms_key;
	size_t part_size;
};

/* One request before signing. */
struct s_req {
	const char *method;
	const char *key;   /* store key (the prefix is added), or NULL for the bucket */
	const char *query; /* wire form, or NULL */
	struct rr_sigv4_header extra[S_MAX_EXTRA_HEADERS];
	size_t nextra;
	const void *body;
	size_t body_len;
	const char *payload_sha256; /* NULL: computed from the body */
	size_t response_max;
	/* Cleans up after a canceled upload (the abort of its multipart upload): sent even
	 * while the store is canceled, but given S_CLEANUP_MS at most. */
	int cleanup;
};

/* A request signed and ready for the HTTP layer, with the storage behind it. */
struct s_signed {
	struct rr_buf url;
	struct rr_http_header headers[S_MAX_EXTRA_HEADERS + 6];
	struct rr_http_request http;
	char sha[RR_SHA256_HEX_LEN + 1];
	char date[RR_SIGV4_AMZ_DATE_LEN + 1];
	char auth[RR_GCS_TOKEN_MAX + 16]; /* "AWS4-HMAC-SHA256 ..." or "Bearer <token>" */
	struct rr_aws_credentials cr;
};

static struct s_s3 *s_of(struct rr_store *s)
{
	return (struct s_s3 *)s;
}

static int s_add_header(struct s_req *q, const char *name, const char *value)
{
	if (q->nextra >= S_MAX_EXTRA_HEADERS)
		return RR_EINVAL;
	q->extra[q->nextra].name = name;
	q->extra[q->nextra].value = value;
	q->nextra++;
	return 0;
}

static void s_signed_free(struct s_signed *p)
{
	rr_buf_free(&p->url);
	rr_aws_credentials_wipe(&p->cr);
	OPENSSL_cleanse(p->auth, sizeof(p->auth));
}

/* The raw (unencoded) path of a key: "/bucket/prefix/key" or "/prefix/key". */
static int s_raw_path(const struct s_s3 *s3, const char *key, struct rr_buf *out)
{
	if (!key)
		return rr_buf_printf(out, "%s", s3->path_root[0] ? s3->path_root : "/");
	return rr_buf_printf(out, "%s/%s%s", s3->path_root, s3->prefix, key);
}

/* The fields of p->http once the Authorization value is known. */
static void s_finish_request(struct s_s3 *s3, const struct s_req *q, struct s_signed *p,
			     size_t n)
{
	for (size_t i = 0; i < q->nextra; i++)
		p->headers[n++] = (struct rr_http_header){ q->extra[i].name, q->extra[i].value };
	p->http = (struct rr_http_request){
		.method = q->method, .url = (const char *)p->url.data, .headers = p->headers,
		.nheaders = n, .body = q->body_len ? q->body : NULL, .body_len = q->body_len,
		.response_max = q->response_max ? q->response_max : (1u << 20),
	};
	if (strcmp(q->method, "POST") == 0 && !q->body_len)
		p->http.body = ""; /* an empty body, sent with Content-Length: 0 */
	/* The HTTP client bounds every request by the notice's deadline (rr_http_opts). */
	p->http.cancel = q->cleanup ? NULL : s3->base.cancel;
	if (q->cleanup)
		p->http.timeout_ms = S_CLEANUP_MS;
}

/* Nothing is sent once the store's work is canceled or the notice's deadline has passed:
 * a request then could only delay what the notice needs, or be cut off by the machine's
 * end. */
static int s_may_send(struct s_s3 *s3, const struct s_req *q)
{
	const atomic_int *cancel = s3->base.cancel;
	long long deadline = s3->base.deadline_mono_ms;
	const char *what = q->key ? q->key : "the bucket listing";

	if (cancel && *cancel && !q->cleanup)
		return rr_store_fail(RR_ECANCELED, "%s %s %s canceled", s3->label, q->method, what);
	if (deadline && rr_mono_ms() >= deadline)
		return rr_store_fail(RR_EIO, "%s %s %s not sent: the notice's deadline has passed",
				     s3->label, q->method, what);
	return 0;
}

/* The wire URL of q: the raw path encoded once (as SigV4 encodes it), then the query. */
static int s_url(struct s_s3 *s3, const struct s_req *q, const struct rr_buf *path,
		 struct rr_buf *url)
{
	int rc = rr_buf_printf(url, "%s://%s", s3->scheme, s3->host);

	if (!rc)
		rc = rr_sigv4_uri_encode(url, (const char *)path->data, path->len, 1);
	if (!rc && q->query)
		rc = rr_buf_printf(url, "?%s", q->query);
	return rc;
}

/* GCS with OAuth2: "Authorization: Bearer <token>" and nothing signed. */
static int s_sign_bearer(struct s_s3 *s3, const struct s_req *q, int refresh, struct s_signed *p)
{
	char token[RR_GCS_TOKEN_MAX], why[300];
	struct rr_buf path;
	int rc;

	rc = rr_gcs_auth_token(s3->gauth, refresh, token, sizeof(token), p->cr.source, why,
			       sizeof(why));
	if (rc)
		return rr_store_fail(rc, "no usable Google credentials: %s", why);
	snprintf(p->auth, sizeof(p->auth), "Bearer %s", token);
	OPENSSL_cleanse(token, sizeof(token));
	rr_buf_init(&path, 8192);
	rc = s_raw_path(s3, q->key, &path);
	if (!rc)
		rc = s_url(s3, q, &path, &p->url);
	rr_buf_free(&path);
	if (rc)
		return rc;
	p->headers[0] = (struct rr_http_header){ "Host", s3->host };
	p->headers[1] = (struct rr_http_header){ "Authorization", p->auth };
	s_finish_request(s3, q, p, 2);
	return 0;
}

/* Signs q with the current credentials into p (initialised here; s_signed_free after). */
static int s_sign(struct s_s3 *s3, const struct s_req *q, int refresh_creds, struct s_signed *p)
{
	struct rr_sigv4_header sh[S_MAX_EXTRA_HEADERS + 2];
	struct rr_sigv4_credentials sc;
	struct rr_sigv4_request sr;
	struct rr_buf path;
	char why[300];
	size_t i, n = 0;
	int rc;

	memset(p, 0, sizeof(*p));
	rr_buf_init(&p->url, 16384);
	rc = s_may_send(s3, q);
	if (rc)
		return rc;
	if (s3->gauth)
		return s_sign_bearer(s3, q, refresh_creds, p);
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

	sh[n++] = (struct rr_sigv4_header){ "host", s3->host };
	sh[n++] = (struct rr_sigv4_header){ "x-amz-content-sha256", p->sha };
	for (i = 0; i < q->nextra; i++)
		sh[n++] = q->extra[i];

	rr_buf_init(&path, 8192);
	rc = s_raw_path(s3, q->key, &path);
	if (rc)
		goto out;
	sc = (struct rr_sigv4_credentials){ p->cr.access_key_id, p->cr.secret_access_key,
					    p->cr.session_token[0] ? p->cr.session_token : NULL };
	sr = (struct rr_sigv4_request){ q->method, (const char *)path.data, q->query, sh, n,
					p->sha };
	rc = rr_sigv4_sign(&sc, s3->region, "s3", time(NULL), &sr, 1, p->auth, sizeof(p->auth),
			   p->date);
	if (rc) {
		rr_store_fail(rc, "cannot sign the request for %s", q->key ? q->key : "the bucket");
		goto out;
	}
	rc = s_url(s3, q, &path, &p->url);
	if (rc)
		goto out;

	n = 0;
	p->headers[n++] = (struct rr_http_header){ "Host", s3->host };
	p->headers[n++] = (struct rr_http_header){ "x-amz-content-sha256", p->sha };
	p->headers[n++] = (struct rr_http_header){ "x-amz-date", p->date };
	if (p->cr.session_token[0])
		p->headers[n++] = (struct rr_http_header){ "x-amz-security-token",
							   p->cr.session_token };
	p->headers[n++] = (struct rr_http_header){ "Authorization", p->auth };
	s_finish_request(s3, q, p, n);
out:
	rr_buf_free(&path);
	return rc;
}

static const char *s_what(const struct s_req *q)
{
	return q->key ? q->key : "the bucket listing";
}

/* Turns one attempt's outcome into 0 (2xx) or an error with its reason recorded. *retry
 * says whether another attempt may help; *refresh whether credentials should be fetched
 * anew first. */
static int s_judge(struct s_s3 *s3, const struct s_req *q, const struct s_signed *p,
		   const struct rr_http_response *resp, int *retry, int *refresh)
{
	struct rr_s3_error e;
	const char *region;
	long st = resp->status;

	*retry = 0;
	*refresh = 0;
	if (resp->error == RR_ECANCELED)
		return rr_store_fail(RR_ECANCELED, "%s %s %s canceled in flight", s3->label,
				     q->method, s_what(q));
	if (resp->error) {
		*retry = resp->retryable;
		return rr_store_fail(resp->error == RR_ETOOBIG ? RR_ETOOBIG : RR_EIO,
				     "%s request %s %s to %s failed: %s", s3->label, q->method,
				     s_what(q), s3->host, resp->message);
	}
	if (st >= 200 && st < 300)
		return 0;
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
		return rr_store_fail(RR_ENOENT, "%s: no such key", s_what(q));
	if (st == 412)
		return rr_store_fail(RR_EPRECOND, "%s: precondition failed", s_what(q));
	if (st == 301 || st == 307 || strcmp(e.code, "PermanentRedirect") == 0 ||
	    strcmp(e.code, "AuthorizationHeaderMalformed") == 0) {
		region = rr_http_response_header(resp, "x-amz-bucket-region");
		return rr_store_fail(RR_EIO, "S3 bucket '%s' is not in region %s%s%s (%ld %s); set "
				     "AWS_REGION", s3->bucket, s3->region,
				     region ? ", it is in " : "", region ? region : "", st,
				     e.code[0] ? e.code : "redirect");
	}
	if (strcmp(e.code, "NoSuchBucket") == 0)
		return rr_store_fail(RR_EIO, "%s bucket '%s' does not exist (NoSuchBucket at %s)",
				     s3->label, s3->bucket, s3->host);
	if (strcmp(e.code, "RequestTimeTooSkewed") == 0)
		return rr_store_fail(RR_EIO, "S3 refused the request because this machine's clock "
				     "is off (RequestTimeTooSkewed): fix the clock (NTP)");
	return rr_store_fail(st == 403 || st == 401 ? RR_EACCES : RR_EIO,
			     "%s refused %s %s: %ld %s%s%s (credentials from %s)", s3->label,
			     q->method, s_what(q), st, e.code[0] ? e.code : "(no error code)",
			     e.message[0] ? ": " : "", e.message, p->cr.source);
}

/* Waits out a retry's backoff, in slices so that a cancel ends the wait (the next
 * s_may_send then fails). */
static void s_sleep_ms(const struct s_s3 *s3, int64_t ms)
{
	const atomic_int *cancel = s3->base.cancel;
	int64_t end = rr_mono_ms() + ms, left;

	while ((left = end - rr_mono_ms()) > 0 && !(cancel && *cancel)) {
		if (left > 50)
			left = 50;
		struct timespec ts = { 0, (long)left * 1000000L };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
}

/* Sends q until it succeeds, fails for good, or retries run out (or would pass the
 * deadline). resp (initialised by the caller) holds the last response. */
static int s_send_policy(struct s_s3 *s3, const struct s_req *q, struct rr_http_response *resp,
			 struct rr_retry *r)
{
	struct s_signed p;
	int rc, retry = 0, refresh = 0, refreshed = 0;
	int64_t delay;

	for (;;) {
		rc = s_sign(s3, q, refresh, &p);
		if (rc) {
			s_signed_free(&p);
			return rc;
		}
		rr_http_perform(s3->http, &p.http, resp);
		rc = s_judge(s3, q, &p, resp, &retry, &refresh);
		s_signed_free(&p);
		if (rc == 0 || !retry)
			return rc;
		if (refresh && refreshed++)
			return rc; /* fresh credentials did not help */
		delay = rr_retry_next(r, rr_mono_ms());
		if (delay < 0)
			return rc;
		rr_debug("S3 %s %s: %s; retrying in %lld ms", q->method, s_what(q),
			 rr_store_strerror(rc), (long long)delay);
		s_sleep_ms(s3, delay);
	}
}

static int s_send(struct s_s3 *s3, const struct s_req *q, struct rr_http_response *resp)
{
	struct rr_retry r;

	rr_retry_init(&r, s3->base.deadline_mono_ms);
	return s_send_policy(s3, q, resp, &r);
}

/* ---- several requests of one object at once (parts, ranges) ---- */

struct s_job {
	struct s_req q;
	struct s_signed p;
	struct rr_http_response resp;
	struct rr_retry retry;
	int64_t ready_at;
	int state; /* 0 waiting, 1 in flight, 2 done */
	int refresh;
	char query[512];
	char range[64];
};

/* Runs every job to success; stops at the first failure that retries cannot fix. */
static int s_run_jobs(struct s_s3 *s3, struct s_job *jobs, size_t n)
{
	struct rr_http_batch *b = NULL;
	size_t i, done = 0, flying = 0;
	int64_t now, next;
	void *tag;
	int rc, retry, refresh;

	rc = rr_http_batch_new(s3->http, S_PARALLEL, &b);
	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		rr_retry_init(&jobs[i].retry, s3->base.deadline_mono_ms);
		rr_http_response_init(&jobs[i].resp);
	}
	while (done < n) {
		now = rr_mono_ms();
		next = now + 1000;
		for (i = 0; i < n && flying < S_PARALLEL; i++) {
			struct s_job *j = &jobs[i];
			if (j->state != 0)
				continue;
			if (j->ready_at > now) {
				if (j->ready_at < next)
					next = j->ready_at;
				continue;
			}
			rc = s_sign(s3, &j->q, j->refresh, &j->p);
			if (!rc)
				rc = rr_http_batch_add(b, &j->p.http, &j->resp, j);
			if (rc) {
				s_signed_free(&j->p);
				goto out;
			}
			j->state = 1;
			flying++;
		}
		rc = rr_http_batch_wait(b, (long)(next - now), &tag);
		if (rc == RR_ENOENT || rc == 0) {
			if (!flying && next > rr_mono_ms())
				s_sleep_ms(s3, next - rr_mono_ms());
			continue;
		}
		if (rc < 0)
			goto out;
		{
			struct s_job *j = tag;
			flying--;
			rc = s_judge(s3, &j->q, &j->p, &j->resp, &retry, &refresh);
			if (rc == 0) {
				j->state = 2;
				done++;
				continue;
			}
			s_signed_free(&j->p);
			if (!retry || (refresh && j->refresh))
				goto out;
			j->refresh = refresh;
			next = rr_retry_next(&j->retry, rr_mono_ms());
			if (next < 0)
				goto out;
			rr_debug("S3 %s %s (%s): %s; retrying in %lld ms", j->q.method, s_what(&j->q),
				 j->range[0] ? j->range : j->query, rr_store_strerror(rc),
				 (long long)next);
			j->ready_at = rr_mono_ms() + next;
			j->state = 0;
		}
	}
	rc = 0;
out:
	rr_http_batch_destroy(b);
	for (i = 0; i < n; i++)
		if (jobs[i].state == 1)
			s_signed_free(&jobs[i].p);
	return rc;
}

static void s_jobs_free(struct s_job *jobs, size_t n)
{
	size_t i;

	for (i = 0; jobs && i < n; i++) {
		if (jobs[i].state == 2)
			s_signed_free(&jobs[i].p);
		rr_http_response_free(&jobs[i].resp);
	}
	free(jobs);
}

/* ---- the store calls ---- */

/* The version tag compare-and-swap uses: the ETag on S3, the generation on GCS (its
 * preconditions take generations). */
static int s_copy_etag(const struct s_s3 *s3, const struct rr_http_response *resp,
		       char *etag_out)
{
	const char *etag = rr_http_response_header(resp, s3->gcs ? "x-goog-generation" : "ETag");

	if (!etag_out)
		return 0;
	if (!etag || strlen(etag) >= RR_ETAG_MAX)
		return rr_store_fail(RR_EIO, "%s answered without a usable %s", s3->label,
				     s3->gcs ? "generation" : "ETag");
	strcpy(etag_out, etag);
	return 0;
}

static void s_add_sse(const struct s_s3 *s3, struct s_req *q)
{
	if (!s3->sse)
		return;
	s_add_header(q, "x-amz-server-side-encryption", s3->sse);
	if (s3->sse_kms_key)
		s_add_header(q, "x-amz-server-side-encryption-aws-kms-key-id", s3->sse_kms_key);
}

static void s_add_conditions(const struct s_s3 *s3, struct s_req *q,
			     const struct rr_put_opts *opts)
{
	if (s3->gcs) {
		/* GCS: generation 0 means "no live object"; otherwise the generation read. */
		if (opts && opts->if_none_match)
			s_add_header(q, "x-goog-if-generation-match", "0");
		else if (opts && opts->if_match)
			s_add_header(q, "x-goog-if-generation-match", opts->if_match);
		return;
	}
	if (opts && opts->if_none_match)
		s_add_header(q, "if-none-match", "*");
	if (opts && opts->if_match)
		s_add_header(q, "if-match", opts->if_match);
}

static int s_precondition_rc(int rc, const struct rr_put_opts *opts)
{
	if (rc == RR_EPRECOND && opts && opts->if_none_match)
		return rr_store_fail(RR_EEXIST, "already exists");
	return rc;
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

static void s_abort_upload(struct s_s3 *s3, const char *key, const char *upload_id)
{
	struct rr_http_response resp;
	struct s_req q = { .method = "DELETE", .key = key };
	struct rr_retry r;
	char query[512];
	int rc;

	if (s_upload_id_query(query, sizeof(query), upload_id, 0))
		return;
	q.query = query;
	rr_http_response_init(&resp);
	rr_retry_init(&r, s3->base.deadline_mono_ms);
	r.max_attempts = 3;
	if (s3->base.cancel && *s3->base.cancel) {
		/* Canceled: one short try, so the parts sent do not linger in the bucket. */
		q.cleanup = 1;
		r.max_attempts = 1;
	}
	rc = s_send_policy(s3, &q, &resp, &r);
	if (rc != 0)
		rr_warn("could not abort the multipart upload of %s (%s); a bucket lifecycle rule "
			"for incomplete uploads cleans such parts up", key, rr_store_strerror(rc));
	rr_http_response_free(&resp);
}

static int s_complete(struct s_s3 *s3, const char *key, const char *upload_id,
		      struct s_job *parts, size_t n, const struct rr_put_opts *opts,
		      struct rr_http_response *resp)
{
	struct s_req q = { .method = "POST", .key = key, .response_max = 1u << 20 };
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
			rc = rr_store_fail(RR_EIO, "S3 sent no ETag for part %zu of %s", i + 1, key);
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
	s_add_header(&q, "content-type", "application/xml");
	if (!s3->gcs) /* GCS takes no preconditions on multipart requests */
		s_add_conditions(s3, &q, opts);
	rr_retry_init(&r, s3->base.deadline_mono_ms);
	for (;;) {
		rc = s_send_policy(s3, &q, resp, &r);
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
		s_sleep_ms(s3, delay);
	}
out:
	rr_buf_free(&body);
	free(etags);
	return rc;
}

static int s_put_multipart(struct s_s3 *s3, const char *key, const unsigned char *data,
			   size_t len, const struct rr_put_opts *opts, char *etag_out)
{
	struct s_req q = { .method = "POST", .key = key, .query = "uploads" };
	struct rr_http_response resp;
	struct s_job *parts = NULL;
	char upload_id[1024] = "";
	size_t n = (len + s3->part_size - 1) / s3->part_size, i, off;
	int rc;

	if (n > S_MAX_PARTS)
		return rr_store_fail(RR_ETOOBIG, "%s is too big for %zu parts of %zu bytes", key,
				     (size_t)S_MAX_PARTS, s3->part_size);
	rr_http_response_init(&resp);
	s_add_sse(s3, &q);
	rc = s_send(s3, &q, &resp);
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
	for (i = 0, off = 0; i < n; i++, off += s3->part_size) {
		struct s_job *j = &parts[i];
		rc = s_upload_id_query(j->query, sizeof(j->query), upload_id, (unsigned)(i + 1));
		if (rc)
			goto out;
		j->q = (struct s_req){ .method = "PUT", .key = key, .query = j->query,
				       .body = data + off,
				       .body_len = len - off < s3->part_size ? len - off
									     : s3->part_size };
	}
	rc = s_run_jobs(s3, parts, n);
	if (!rc) {
		rr_http_response_free(&resp);
		rr_http_response_init(&resp);
		rc = s_complete(s3, key, upload_id, parts, n, opts, &resp);
		rc = s_precondition_rc(rc, opts);
	}
	if (!rc && etag_out) {
		/* The object is complete: nothing is left to abort whatever the HEAD says. */
		upload_id[0] = '\0';
		/* The completion's ETag header is optional; HEAD tells it for certain. */
		struct s_req h = { .method = "HEAD", .key = key };
		rr_http_response_free(&resp);
		rr_http_response_init(&resp);
		rc = s_send(s3, &h, &resp);
		if (!rc)
			rc = s_copy_etag(s3, &resp, etag_out);
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
	s_jobs_free(parts, n);
	rr_http_response_free(&resp);
	return rc;
}

static int s_put(struct rr_store *s, const char *key, const void *data, size_t len,
		 const struct rr_put_opts *opts, char *etag_out)
{
	struct s_s3 *s3 = s_of(s);
	struct s_req q = { .method = "PUT", .key = key, .body = data, .body_len = len };
	struct rr_http_response resp;
	int rc;

	if (len > s3->part_size)
		return s_put_multipart(s3, key, data, len, opts, etag_out);
	if (opts && opts->sha256_hex)
		q.payload_sha256 = opts->sha256_hex;
	s_add_sse(s3, &q);
	s_add_conditions(s3, &q, opts);
	rr_http_response_init(&resp);
	rc = s_precondition_rc(s_send(s3, &q, &resp), opts);
	if (!rc)
		rc = s_copy_etag(s3, &resp, etag_out);
	rr_http_response_free(&resp);
	return rc;
}

/* Reads "bytes A-B/TOTAL"; returns 0 or RR_EIO. */
static int s_content_range(const char *v, uint64_t *first, uint64_t *last, uint64_t *total)
{
	unsigned long long a, b, t;
	int used = 0;

	if (!v || sscanf(v, "bytes %llu-%llu/%llu%n", &a, &b, &t, &used) != 3 ||
	    v[used] != '\0' || a > b || b >= t)
		return RR_EIO;
	*first = a;
	*last = b;
	*total = t;
	return 0;
}

static int s_get(struct rr_store *s, const char *key, struct rr_buf *out, char *etag_out)
{
	struct s_s3 *s3 = s_of(s);
	struct s_req q = { .method = "GET", .key = key };
	uint64_t first, last, total, last_total, off;
	size_t room = out->max - out->len, n, i;
	struct rr_http_response resp;
	struct s_job *ranges = NULL;
	const char *etag;
	char range[64];
	int rc;

	/* An object that fits in one part comes in one plain GET. Otherwise the first range
	 * tells the size, and a big object's other ranges follow in parallel. */
	if (room > s3->part_size) {
		snprintf(range, sizeof(range), "bytes=0-%zu", s3->part_size - 1);
		s_add_header(&q, "range", range);
	}
	q.response_max = room < s3->part_size ? (room ? room : 1) : s3->part_size;
	rr_http_response_init(&resp);
	rc = s_send(s3, &q, &resp);
	if (rc == RR_EIO && resp.status == 416) {
		/* An empty object has no byte 0. */
		q.nextra = 0;
		rr_http_response_free(&resp);
		rr_http_response_init(&resp);
		rc = s_send(s3, &q, &resp);
	}
	if (rc)
		goto out;
	etag = rr_http_response_header(&resp, "ETag");
	rc = s_copy_etag(s3, &resp, etag_out);
	if (rc)
		goto out;
	if (resp.status != 206) {
		rc = rr_buf_append(out, resp.body.data, resp.body.len);
		goto out;
	}
	if (s_content_range(rr_http_response_header(&resp, "Content-Range"), &first, &last,
			    &total) || first != 0 || resp.body.len != last + 1) {
		rc = rr_store_fail(RR_EIO, "S3 answered a ranged GET of %s with a bad "
				   "Content-Range", key);
		goto out;
	}
	if (total > room) {
		rc = rr_store_fail(RR_ETOOBIG, "%s is %llu bytes, more than the %zu expected", key,
				   (unsigned long long)total, room);
		goto out;
	}
	rc = rr_buf_reserve(out, (size_t)total);
	if (!rc)
		rc = rr_buf_append(out, resp.body.data, resp.body.len);
	if (rc || total == resp.body.len)
		goto out;
	if (!etag) {
		rc = rr_store_fail(RR_EIO, "S3 sent no ETag for %s, so its ranges cannot be "
				   "checked to belong to one version", key);
		goto out;
	}
	n = (size_t)((total - resp.body.len + s3->part_size - 1) / s3->part_size);
	ranges = calloc(n, sizeof(*ranges));
	if (!ranges) {
		rc = RR_ENOMEM;
		goto out;
	}
	for (i = 0, off = resp.body.len; i < n; i++, off += s3->part_size) {
		struct s_job *j = &ranges[i];
		uint64_t end = off + s3->part_size - 1 < total - 1 ? off + s3->part_size - 1
								  : total - 1;
		snprintf(j->range, sizeof(j->range), "bytes=%llu-%llu", (unsigned long long)off,
			 (unsigned long long)end);
		j->q = (struct s_req){ .method = "GET", .key = key,
				       .response_max = (size_t)(end - off + 1) };
		s_add_header(&j->q, "range", j->range);
		s_add_header(&j->q, "if-match", etag); /* all ranges from one version */
	}
	rc = s_run_jobs(s3, ranges, n);
	for (i = 0, off = resp.body.len; !rc && i < n; i++, off += s3->part_size) {
		const struct rr_http_response *r = &ranges[i].resp;
		uint64_t end = off + s3->part_size - 1 < total - 1 ? off + s3->part_size - 1
								  : total - 1;
		if (r->status != 206) {
			rc = rr_store_fail(RR_EIO, "S3 ignored a range request for %s", key);
			break;
		}
		/* A short or shifted range would be spliced in silently: check it is the one
		 * asked for. */
		if (s_content_range(rr_http_response_header(r, "Content-Range"), &first, &last,
				    &last_total) || first != off || last != end ||
		    last_total != total || r->body.len != end - off + 1) {
			rc = rr_store_fail(RR_EIO, "S3 answered a ranged GET of %s with a bad "
					   "Content-Range", key);
			break;
		}
		rc = rr_buf_append(out, r->body.data, r->body.len);
	}
out:
	s_jobs_free(ranges, ranges ? n : 0);
	rr_http_response_free(&resp);
	return rc;
}

static int s_head(struct rr_store *s, const char *key, uint64_t *size_out)
{
	struct s_req q = { .method = "HEAD", .key = key };
	struct rr_http_response resp;
	const char *len;
	char *end;
	int rc;

	rr_http_response_init(&resp);
	rc = s_send(s_of(s), &q, &resp);
	if (!rc && size_out) {
		len = rr_http_response_header(&resp, "Content-Length");
		if (!len || !*len || (*size_out = strtoull(len, &end, 10), *end))
			rc = rr_store_fail(RR_EIO, "S3 answered HEAD %s without a length", key);
	}
	rr_http_response_free(&resp);
	return rc;
}

struct s_list_ctx {
	struct s_s3 *s3;
	rr_store_list_cb cb;
	void *ud;
};

static int s_on_object(const struct rr_s3_object *o, void *ud)
{
	struct s_list_ctx *c = ud;
	size_t plen = strlen(c->s3->prefix);
	struct rr_store_entry e;

	if (strncmp(o->key, c->s3->prefix, plen) != 0)
		return 0;
	e = (struct rr_store_entry){ o->key + plen, o->size, o->mtime_unix_ms };
	return c->cb(&e, c->ud);
}

static int s_list_query(struct rr_buf *qb, const char *root, const char *prefix,
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

static int s_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb, void *ud)
{
	struct s_s3 *s3 = s_of(s);
	struct s_list_ctx ctx = { s3, cb, ud };
	struct rr_http_response resp;
	char token[2048] = "";
	struct rr_buf qb;
	int rc, truncated;

	rr_buf_init(&qb, 8192);
	do {
		struct s_req q = { .method = "GET", .key = NULL, .response_max = RR_S3_XML_MAX };
		rr_buf_reset(&qb);
		rc = s_list_query(&qb, s3->prefix, prefix, token, 0);
		if (rc)
			break;
		q.query = (const char *)qb.data;
		rr_http_response_init(&resp);
		rc = s_send(s3, &q, &resp);
		truncated = 0;
		if (!rc) {
			rc = rr_s3_xml_parse_list(resp.body.data, resp.body.len, s_on_object, &ctx,
						  &truncated, token, sizeof(token));
			if (rc == RR_ECORRUPT)
				rc = rr_store_fail(RR_EIO, "S3 sent a listing that is not valid XML");
		}
		rr_http_response_free(&resp);
		if (!rc && truncated && !token[0])
			rc = rr_store_fail(RR_EIO, "S3 said the listing goes on but sent no "
					   "continuation token");
	} while (!rc && truncated);
	rr_buf_free(&qb);
	return rc;
}

static int s_del(struct rr_store *s, const char *key)
{
	struct s_req q = { .method = "DELETE", .key = key };
	struct rr_http_response resp;
	int rc;

	rr_http_response_init(&resp);
	rc = s_send(s_of(s), &q, &resp);
	rr_http_response_free(&resp);
	return rc == RR_ENOENT ? 0 : rc;
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

static int s_del_batch(struct s_s3 *s3, const char *const *keys, size_t n)
{
	struct s_req q = { .method = "POST", .key = NULL, .query = "delete",
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
		rc = rr_buf_printf(&names, "%s%s%c", s3->prefix, keys[i], 0);
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
	s_add_header(&q, "content-md5", md5);
	s_add_header(&q, "content-type", "application/xml");
	rc = s_send(s3, &q, &resp);
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

	if (s_of(s)->gcs) { /* the GCS XML API has no multi-object delete */
		for (i = 0; i < n; i++)
			if ((rc = s_del(s, keys[i])) != 0)
				return rc;
		return 0;
	}

	for (i = 0; i < n; i += k) {
		k = n - i < S_DELETE_BATCH ? n - i : S_DELETE_BATCH;
		rc = s_del_batch(s_of(s), keys + i, k);
		if (rc)
			return rc;
	}
	return 0;
}

static void s_destroy(struct rr_store *s)
{
	struct s_s3 *s3 = s_of(s);

	rr_aws_creds_destroy(s3->creds);
	rr_gcs_auth_destroy(s3->gauth);
	rr_http_destroy(s3->http);
	free(s3->bucket);
	free(s3->prefix);
	free(s3->region);
	free(s3->scheme);
	free(s3->host);
	free(s3->path_root);
	free(s3->sse);
	free(s3->sse_kms_key);
	free(s3->base.url);
	free(s3);
}

static const struct rr_store_vtable s_s3_vtable = {
	.scheme = "s3",
	.put = s_put,
	.get = s_get,
	.head = s_head,
	.list = s_list,
	.del = s_del,
	.del_many = s_del_many,
	.destroy = s_destroy,
};

/* ---- opening: where to send requests, how, and with what ---- */

static const char *s_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static int s_valid_bucket(const char *b, size_t len)
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

/* Splits an endpoint URL "scheme://host[:port][/]" into its parts. */
static int s_parse_endpoint(const char *url, char **scheme, char **hostport)
{
	const char *p = strstr(url, "://"), *end;

	if (!p)
		return rr_store_fail(RR_EINVAL, "the S3 endpoint '%s' is not a URL", url);
	if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0)
		return rr_store_fail(RR_EINVAL, "the S3 endpoint '%s' must be http:// or https://",
				     url);
	p += 3;
	end = p + strcspn(p, "/?#");
	if (end == p || (*end && strcmp(end, "/") != 0))
		return rr_store_fail(RR_EINVAL, "the S3 endpoint '%s' must be scheme://host[:port] "
				     "with no path", url);
	*scheme = strndup(url, (size_t)(strstr(url, "://") - url));
	*hostport = strndup(p, (size_t)(end - p));
	if (!*scheme || !*hostport)
		return RR_ENOMEM;
	for (char *c = *scheme; *c; c++)
		*c = (char)(*c | 0x20);
	return 0;
}

/* "bucket[/prefix]": the bucket, and the prefix with one '/' after it (or ""). */
static int s_set_bucket(struct s_s3 *s3, const char *rest)
{
	const char *slash = strchr(rest, '/');
	size_t blen = slash ? (size_t)(slash - rest) : strlen(rest), plen;

	if (!s_valid_bucket(rest, blen))
		return rr_store_fail(RR_EINVAL, "'%.*s' is not a %s bucket name (3-63 characters "
				     "of a-z 0-9 . - _)", (int)blen, rest, s3->label);
	s3->bucket = strndup(rest, blen);
	rest = slash ? slash + 1 : "";
	while (*rest == '/')
		rest++;
	plen = strlen(rest);
	while (plen > 0 && rest[plen - 1] == '/')
		plen--;
	s3->prefix = malloc(plen + 2);
	if (!s3->bucket || !s3->prefix)
		return RR_ENOMEM;
	memcpy(s3->prefix, rest, plen);
	strcpy(s3->prefix + plen, plen ? "/" : "");
	return 0;
}

static int s_set_part_size(struct s_s3 *s3)
{
	const char *part = s_env("RESUME_RUN_S3_PART_SIZE");
	unsigned long long v;
	char *end;

	s3->part_size = RR_S3_PART_SIZE_DEFAULT;
	if (!part)
		return 0;
	v = strtoull(part, &end, 10);
	if (*end || v < RR_S3_PART_SIZE_MIN || v > (1ull << 32))
		return rr_store_fail(RR_EINVAL, "RESUME_RUN_S3_PART_SIZE must be a byte count "
				     "from %u to 4 GiB", RR_S3_PART_SIZE_MIN);
	s3->part_size = (size_t)v;
	return 0;
}

static int s_configure(struct s_s3 *s3, const char *rest, const struct rr_store_opts *opts,
		       const struct rr_aws_profile *prof)
{
	const char *endpoint, *addressing;
	char *ep_host = NULL;
	int path_style, rc;

	rc = s_set_bucket(s3, rest);
	if (rc)
		return rc;

	s3->region = strdup(s_env("AWS_REGION") ? s_env("AWS_REGION")
			    : s_env("AWS_DEFAULT_REGION") ? s_env("AWS_DEFAULT_REGION")
			    : rr_aws_profile_get(prof, "region") ? rr_aws_profile_get(prof, "region")
			    : "us-east-1");
	if (!s3->region)
		return RR_ENOMEM;

	endpoint = s_env("AWS_ENDPOINT_URL_S3");
	if (!endpoint)
		endpoint = s_env("AWS_ENDPOINT_URL");
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
		path_style = endpoint != NULL || strchr(s3->bucket, '.') != NULL;
	else
		return rr_store_fail(RR_EINVAL, "--s3-addressing must be auto, path or virtual, "
				     "not '%s'", addressing);
	if (endpoint) {
		rc = s_parse_endpoint(endpoint, &s3->scheme, &ep_host);
		if (rc)
			return rc;
	} else {
		s3->scheme = strdup("https");
		if (asprintf(&ep_host, "s3.%s.amazonaws.com", s3->region) < 0)
			ep_host = NULL;
		if (!s3->scheme || !ep_host)
			return RR_ENOMEM;
	}
	if (path_style) {
		s3->host = ep_host;
		if (asprintf(&s3->path_root, "/%s", s3->bucket) < 0)
			s3->path_root = NULL;
	} else {
		if (asprintf(&s3->host, "%s.%s", s3->bucket, ep_host) < 0)
			s3->host = NULL;
		free(ep_host);
		s3->path_root = strdup("");
	}
	if (!s3->host || !s3->path_root)
		return RR_ENOMEM;

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

	return s_set_part_size(s3);
}

/* One small listing: checks the endpoint, the bucket, the region and the credentials. */
static int s_probe(struct s_s3 *s3)
{
	struct rr_http_response resp;
	struct rr_retry r;
	struct rr_buf qb;
	int rc;

	rr_buf_init(&qb, 4096);
	rc = s_list_query(&qb, s3->prefix, "", NULL, 1);
	if (!rc) {
		struct s_req q = { .method = "GET", .query = (const char *)qb.data,
				   .response_max = RR_S3_XML_MAX };
		rr_http_response_init(&resp);
		rr_retry_init(&r, 0);
		r.max_attempts = 4; /* about a second: a wrong endpoint should not hang start */
		rc = s_send_policy(s3, &q, &resp, &r);
		rr_http_response_free(&resp);
	}
	rr_buf_free(&qb);
	return rc;
}

int rr_store_s3_new(const char *rest, const struct rr_store_opts *opts, struct rr_store **out)
{
	struct rr_aws_profile *prof = NULL;
	struct rr_aws_creds_opts co;
	struct rr_http_opts ho;
	struct s_s3 *s3;
	char why[300];
	int rc;

	s3 = calloc(1, sizeof(*s3));
	if (!s3)
		return RR_ENOMEM;
	s3->base.vt = &s_s3_vtable;
	s3->label = "S3";
	rc = rr_aws_profile_load(NULL, &prof, why, sizeof(why));
	if (rc) {
		rc = rr_store_fail(rc, "cannot read the AWS profile: %s", why);
		goto fail;
	}
	rc = s_configure(s3, rest, opts, prof);
	if (rc)
		goto fail;
	ho = (struct rr_http_opts){ .ca_bundle = s_env("AWS_CA_BUNDLE"),
				    .deadline_mono_ms = &s3->base.deadline_mono_ms };
	rc = rr_http_new(&ho, &s3->http);
	if (rc)
		goto fail;
	co = (struct rr_aws_creds_opts){ .http = s3->http, .region = s3->region };
	rc = rr_aws_creds_new(&co, &s3->creds);
	if (rc)
		goto fail;
	s3->base.url = strdup("s3://");
	if (!s3->base.url) {
		rc = RR_ENOMEM;
		goto fail;
	}
	rc = s_probe(s3);
	if (rc)
		goto fail;
	rr_aws_profile_free(prof);
	*out = &s3->base;
	return 0;
fail:
	rr_aws_profile_free(prof);
	s_destroy(&s3->base);
	return rc;
}

/* GCS through its XML API, the S3 protocol with Google's authorization and preconditions:
 * storage.googleapis.com (or STORAGE_EMULATOR_HOST), path-style, OAuth2 bearer tokens
 * (storage/gcs_auth.c), or with --gcs-hmac SigV4 with HMAC keys from the AWS variables. */
int rr_store_gcs_new(const char *rest, const struct rr_store_opts *opts, struct rr_store **out)
{
	const char *emulator = s_env("STORAGE_EMULATOR_HOST");
	struct rr_gcs_auth_opts go;
	struct rr_aws_creds_opts co;
	char why[300], *endpoint = NULL;
	struct s_s3 *s3;
	int rc;

	s3 = calloc(1, sizeof(*s3));
	if (!s3)
		return RR_ENOMEM;
	s3->base.vt = &s_s3_vtable;
	s3->label = "GCS";
	s3->gcs = 1;
	rc = s_set_bucket(s3, rest);
	if (!rc && (opts->s3_sse || opts->s3_sse_kms_key_id))
		rc = rr_store_fail(RR_EINVAL, "--s3-sse is for s3:// stores (GCS encrypts every "
				   "object itself)");
	if (rc)
		goto fail;
	/* Google's client libraries take STORAGE_EMULATOR_HOST with or without a scheme. */
	if (asprintf(&endpoint, "%s%s", emulator && !strstr(emulator, "://") ? "http://" : "",
		     emulator ? emulator : "https://storage.googleapis.com") < 0) {
		endpoint = NULL;
		rc = RR_ENOMEM;
		goto fail;
	}
	rc = s_parse_endpoint(endpoint, &s3->scheme, &s3->host);
	if (!rc && asprintf(&s3->path_root, "/%s", s3->bucket) < 0) {
		s3->path_root = NULL;
		rc = RR_ENOMEM;
	}
	s3->region = strdup("auto"); /* the scope GCS takes for HMAC-signed requests */
	if (!rc && !s3->region)
		rc = RR_ENOMEM;
	if (!rc)
		rc = s_set_part_size(s3);
	if (!rc)
		rc = rr_http_new(&(struct rr_http_opts){
					 .deadline_mono_ms = &s3->base.deadline_mono_ms },
				 &s3->http);
	if (rc)
		goto fail;
	if (opts->gcs_hmac) {
		co = (struct rr_aws_creds_opts){ .http = s3->http, .region = s3->region };
		rc = rr_aws_creds_new(&co, &s3->creds);
	} else {
		go = (struct rr_gcs_auth_opts){ .http = s3->http,
						.metadata_endpoint = opts->metadata_endpoint };
		rc = rr_gcs_auth_new(&go, &s3->gauth, why, sizeof(why));
		if (rc)
			rc = rr_store_fail(rc, "Google credentials: %s", why);
	}
	if (rc)
		goto fail;
	s3->base.url = strdup("gs://");
	if (!s3->base.url) {
		rc = RR_ENOMEM;
		goto fail;
	}
	rc = s_probe(s3);
	if (rc)
		goto fail;
	free(endpoint);
	*out = &s3->base;
	return 0;
fail:
	free(endpoint);
	s_destroy(&s3->base);
	return rc;
}
