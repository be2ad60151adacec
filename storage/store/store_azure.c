/* az://: Azure Blob Storage on the request core (storage/store/remote.c). Shared Key
 * signing, a SAS appended to the query, or Entra ID bearer tokens (storage/auth/azure_auth.c);
 * Put Blob up to the part size, Put Block in parallel + Put Block List above it; ranged
 * Get Blob (the core); List Blobs paged by NextMarker; Delete Blob; create-only with
 * If-None-Match: *, compare-and-swap with If-Match: ETag, and the core's "was my write
 * applied?" check after an ambiguous retry; x-ms-version pinned; 500, 503 ServerBusy and
 * OperationTimedOut retried with backoff honouring Retry-After. Error bodies are read only
 * as errors. See storage/store/store_azure.h. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "azure_batch.h"
#include "azure_xml.h"
#include "remote.h"
#include "rr/azure_auth.h"
#include "rr/azure_shared_key.h"
#include "rr/env.h"
#include "rr/error.h"
#include "rr/loopback.h"
#include "rr/log.h"
#include "rr/retry.h"
#include "rr/sigv4.h"
#include "rr/timefmt.h"
#include "rr/xml.h"
#include "store_azure.h"

#define S_VERSION "2021-08-06" /* x-ms-version: every request speaks this one */
#define S_PUBLIC_SUFFIX "core.windows.net"
#define S_MAX_BLOCKS 50000u
#define S_RETRY_AFTER_MAX_S 60
/* Azure refuses a request dated more than 15 minutes from its own clock ("Authorize with
 * Shared Key": 403 AuthenticationFailed, "Request date header too old"). A refusal of one
 * dated further than this from the answer's Date is taken for that one. */
#define S_DATE_OFF_S 300

struct s_az {
	struct rr_remote r;            /* first: the core's view of the store */
	struct rr_azure_creds *creds;
	char *account;
	char *base_path;               /* "" or "/devstoreaccount1" (path-style endpoints) */
	atomic_int no_batch;           /* the account refused a Blob Batch: delete one by one */
	atomic_int date_refused;       /* a request was refused for its date (said once) */
};

static struct s_az *s_of(struct rr_store *s)
{
	return (struct s_az *)s;
}

/* ---- authorizing a request ---- */

/* x-ms-date: now by the store's clock (this machine's, corrected by the Date of Azure's
 * answers: rr_store_now_ms), so a machine whose clock is off is not refused for it. */
static void s_http_date(const struct s_az *az, char out[40])
{
	time_t now = (time_t)(rr_store_now_ms(&az->r.base) / 1000);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(out, 40, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* The Authorization value of a request: Shared Key over exactly the headers, path and
 * query that go on the wire, or "Bearer TOKEN" (fetched anew when refresh); "" with a SAS,
 * which travels in the query. what names the request in reasons. */
static int s_authorization(struct s_az *az, const char *method, const struct rr_http_header *h,
			   size_t n, const char *wire_path, const char *query, int refresh,
			   char *out, size_t cap, const char *what)
{
	char token[RR_AZURE_TOKEN_MAX], why[600];
	struct rr_buf sts;
	int rc = 0;

	out[0] = '\0';
	switch (rr_azure_creds_kind(az->creds)) {
	case RR_AZURE_AUTH_SHARED_KEY:
		rr_buf_init(&sts, 64 * 1024);
		rc = rr_azure_string_to_sign(&sts, az->account, method, h, n, wire_path, query);
		if (!rc)
			rc = rr_azure_creds_sign(az->creds, &sts, out, cap);
		rr_buf_free(&sts);
		if (rc)
			return rr_store_fail(rc, "cannot sign the request for %s", what);
		return 0;
	case RR_AZURE_AUTH_BEARER:
		rc = rr_azure_creds_token(az->creds, refresh, token, sizeof(token), why,
					  sizeof(why));
		if (rc)
			rc = rr_store_fail(rc, "no usable Azure credentials: %s", why);
		else if ((size_t)snprintf(out, cap, "Bearer %s", token) >= cap)
			rc = rr_store_fail(RR_ETOOBIG, "the Azure token is too long");
		OPENSSL_cleanse(token, sizeof(token));
		return rc;
	case RR_AZURE_AUTH_SAS:
		break;
	}
	return 0;
}

static int s_sign(struct rr_remote *r, const struct rr_remote_req *q, int refresh,
		  struct rr_remote_signed *p)
{
	struct s_az *az = (struct s_az *)r;
	struct rr_http_header all[RR_REMOTE_MAX_EXTRA_HEADERS + 8];
	char length[24];
	struct rr_buf path, wire;
	size_t n = 0, k = 0;
	int rc;

	snprintf(p->cr.source, sizeof(p->cr.source), "%s", rr_azure_creds_source(az->creds));
	s_http_date(az, p->date);
	p->headers[n++] = (struct rr_http_header){ "x-ms-date", p->date };
	p->headers[n++] = (struct rr_http_header){ "x-ms-version", S_VERSION };
	rr_buf_init(&path, 8192);
	rr_buf_init(&wire, 16384);
	rc = rr_remote_raw_path(r, q->key, &path);
	if (!rc)
		rc = rr_sigv4_uri_encode(&wire, (const char *)path.data, path.len, 1);
	if (!rc)
		rc = rr_remote_url(r, q, &path, rr_azure_creds_sas(az->creds), &p->url);
	if (!rc) {
		for (size_t i = 0; i < n; i++)
			all[k++] = p->headers[i];
		for (size_t i = 0; i < q->nextra; i++)
			all[k++] = (struct rr_http_header){ q->extra[i].name, q->extra[i].value };
		snprintf(length, sizeof(length), "%zu", q->body_len);
		all[k++] = (struct rr_http_header){ "Content-Length", q->body_len ? length : NULL };
		rc = s_authorization(az, q->method, all, k, (const char *)wire.data, q->query,
				     refresh, p->auth, sizeof(p->auth), rr_remote_what(q));
	}
	if (!rc && p->auth[0])
		p->headers[n++] = (struct rr_http_header){ "Authorization", p->auth };
	rr_buf_free(&path);
	rr_buf_free(&wire);
	if (rc)
		return rc;
	rr_remote_finish_request(r, q, p, n);
	return 0;
}

/* ---- reading an answer that is not a success ---- */

/* Retry-After in seconds (the only form Azure sends), bounded. */
static int64_t s_retry_after_ms(const struct rr_http_response *resp)
{
	const char *v = rr_http_response_header(resp, "Retry-After");
	long long s = 0;

	if (!v || !*v || strlen(v) > 6 || strspn(v, "0123456789") != strlen(v))
		return 0;
	s = atoll(v);
	return (s < S_RETRY_AFTER_MAX_S ? s : S_RETRY_AFTER_MAX_S) * 1000;
}

static int s_transient_code(const char *code)
{
	return strcmp(code, "ServerBusy") == 0 || strcmp(code, "OperationTimedOut") == 0 ||
	       strcmp(code, "InternalError") == 0;
}

/* Whether a 403 AuthenticationFailed refused the request for its x-ms-date: it was further
 * than S_DATE_OFF_S from the answer's Date. The store's clock was just taken from that Date
 * (remote.c), so the request signed again carries Azure's time. Said once per store. */
static int s_refused_for_date(struct s_az *az, const struct rr_remote_signed *p,
			      const struct rr_http_response *resp)
{
	const char *date = rr_http_response_header(resp, "Date");
	int64_t sent, server;

	if (!date || rr_rfc1123_to_unix(p->date, &sent) || rr_rfc1123_to_unix(date, &server) ||
	    llabs((long long)(server - sent)) <= S_DATE_OFF_S)
		return 0;
	if (!atomic_exchange(&az->date_refused, 1))
		rr_warn("Azure refused a request dated %s: this machine's clock is off by %lld s "
			"(AuthenticationFailed); requests are dated by Azure's clock from now on; "
			"fix the clock (NTP)", p->date, (long long)(server - sent));
	return 1;
}

static int s_judge(struct rr_remote *r, const struct rr_remote_req *q,
		   const struct rr_remote_signed *p, const struct rr_http_response *resp,
		   int *retry, int *refresh, int64_t *retry_after_ms)
{
	struct s_az *az = (struct s_az *)r;
	const char *hcode = rr_http_response_header(resp, "x-ms-error-code");
	struct rr_azure_error e;
	long st = resp->status;

	memset(&e, 0, sizeof(e));
	if (resp->body.len)
		rr_azure_xml_parse_error(resp->body.data, resp->body.len, &e);
	if (hcode && strlen(hcode) < sizeof(e.code) && strspn(hcode, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				"abcdefghijklmnopqrstuvwxyz0123456789") == strlen(hcode))
		snprintf(e.code, sizeof(e.code), "%s", hcode);
	e.message[strcspn(e.message, "\r\n")] = '\0'; /* Azure adds RequestId and Time lines */
	*retry = rr_retry_worth_it(st, 0, NULL) || s_transient_code(e.code);
	*retry_after_ms = *retry ? s_retry_after_ms(resp) : 0;
	/* A bearer token refused: 401 InvalidAuthenticationInfo, or 403 AuthenticationFailed
	 * ("Lifetime validation failed. The token is expired.": revoked, or expired early by
	 * the clocks' disagreement). One fresh token is worth a try; the core tries once. */
	if (rr_azure_creds_kind(az->creds) == RR_AZURE_AUTH_BEARER &&
	    (st == 401 || strcmp(e.code, "InvalidAuthenticationInfo") == 0 ||
	     strcmp(e.code, "AuthenticationFailed") == 0)) {
		*retry = 1;
		*refresh = 1;
	}
	/* Signed anew once, whatever the credentials: the core tries a refresh only once. */
	if (st == 403 && strcmp(e.code, "AuthenticationFailed") == 0 &&
	    s_refused_for_date(az, p, resp)) {
		*retry = 1;
		*refresh = 1;
	}
	if (strcmp(e.code, "ContainerNotFound") == 0)
		return rr_store_fail(RR_EIO, "Azure container '%s' does not exist "
				     "(ContainerNotFound at %s)", r->bucket, r->host);
	if (st == 404 && q->key)
		return rr_store_fail(RR_ENOENT, "%s: no such key", q->key);
	if (st == 412 || (st == 409 && strcmp(e.code, "BlobAlreadyExists") == 0))
		return rr_store_fail(RR_EPRECOND, "%s: precondition failed", rr_remote_what(q));
	return rr_store_fail(st == 403 || st == 401 ? RR_EACCES : RR_EIO,
			     "Azure refused %s %s: %ld %s%s%s (credentials from %s)", q->method,
			     rr_remote_what(q), st, e.code[0] ? e.code : "(no error code)",
			     e.message[0] ? ": " : "", e.message, p->cr.source);
}

/* ---- writing ---- */

static void s_add_conditions(struct rr_remote_req *q, const struct rr_put_opts *opts)
{
	if (opts && opts->if_none_match)
		rr_remote_add_header(q, "If-None-Match", "*");
	if (opts && opts->if_match)
		rr_remote_add_header(q, "If-Match", opts->if_match);
}

/* A write sent again after an attempt of unknown outcome that then found its precondition
 * failed (or, for a block list, its blocks gone: s_commit_blocks): the core checks whether
 * the blob holds our bytes. */
static int s_settle(struct s_az *az, int rc, int maybe_applied, const char *key,
		    const void *data, size_t len, char *etag_out, int *checked)
{
	if (rc != RR_EPRECOND || !maybe_applied)
		return rc;
	*checked = 1;
	rc = rr_remote_check_ours(&az->r, key, data, len, etag_out);
	if (rc == RR_ENOENT) /* gone again since the refusal */
		rc = rr_store_fail(RR_EPRECOND, "%s: precondition failed", key);
	return rc;
}

/* Block ids: one length for every block of a blob (Azure's rule), and a nonce of this
 * upload's own, so two writers of one blob never commit each other's blocks. Each job's
 * query gets its id, encoded. */
static int s_block_ids(size_t n, char (*ids)[48], struct rr_remote_job *jobs)
{
	unsigned char nonce[8];
	char raw[40];
	struct rr_buf b;
	int rc = 0;

	if (RAND_bytes(nonce, sizeof(nonce)) != 1)
		return RR_EIO;
	for (size_t i = 0; i < n && !rc; i++) {
		int w = snprintf(raw, sizeof(raw), "%02x%02x%02x%02x%02x%02x%02x%02x-%06zu",
				 nonce[0], nonce[1], nonce[2], nonce[3], nonce[4], nonce[5],
				 nonce[6], nonce[7], i);
		EVP_EncodeBlock((unsigned char *)ids[i], (unsigned char *)raw, w);
		rr_buf_init(&b, sizeof(jobs[i].query));
		rc = rr_buf_printf(&b, "comp=block&blockid=");
		if (!rc)
			rc = rr_sigv4_uri_encode(&b, ids[i], strlen(ids[i]), 0);
		if (!rc)
			memcpy(jobs[i].query, b.data, b.len + 1);
		rr_buf_free(&b);
	}
	return rc;
}

/* Put Block List after every block is in: the one request that makes the blob, with the
 * write's conditions. */
static int s_commit_blocks(struct s_az *az, const char *key, char (*ids)[48], size_t n,
			   const struct rr_put_opts *opts, struct rr_http_response *resp,
			   int *maybe_applied)
{
	struct rr_remote_req q = { .method = "PUT", .key = key, .query = "comp=blocklist",
				   .maybe_applied = maybe_applied };
	const char **list = calloc(n, sizeof(*list));
	struct rr_buf body;
	int rc;

	if (!list)
		return RR_ENOMEM;
	for (size_t i = 0; i < n; i++)
		list[i] = ids[i];
	rr_buf_init(&body, RR_XML_MAX);
	rc = rr_azure_xml_block_list(&body, list, n);
	if (!rc) {
		q.body = body.data;
		q.body_len = body.len;
		rr_remote_add_header(&q, "Content-Type", "application/xml");
		s_add_conditions(&q, opts);
		rc = rr_remote_send(&az->r, &q, resp);
	}
	/* Sent again after an attempt that may have committed the list: the blocks are
	 * committed (or, once another writer committed the blob, discarded), so the retry can
	 * meet InvalidBlockList. Whether the blob holds our bytes settles it (s_settle). Unlike
	 * S3's completion, a retried Put Block List is otherwise answered as the first, so
	 * transient errors keep being retried. */
	if (rc == RR_EIO && *maybe_applied && resp->status == 400 &&
	    rr_http_response_header(resp, "x-ms-error-code") &&
	    strcmp(rr_http_response_header(resp, "x-ms-error-code"), "InvalidBlockList") == 0)
		rc = RR_EPRECOND;
	rr_buf_free(&body);
	free(list);
	return rc;
}

/* Put Block for every part at once (RR_REMOTE_PARALLEL in flight), then Put Block List.
 * Uncommitted blocks of a failed upload are discarded by Azure after a week. */
static int s_put_blocks(struct s_az *az, const char *key, const unsigned char *data,
			size_t len, const struct rr_put_opts *opts, char *etag_out)
{
	size_t part = az->r.part_size, n = (len + part - 1) / part, off = 0;
	struct rr_remote_job *jobs = NULL;
	struct rr_http_response resp;
	char (*ids)[48] = NULL;
	int rc, maybe_applied = 0, checked = 0;

	if (n > S_MAX_BLOCKS)
		return rr_store_fail(RR_ETOOBIG, "%s is too big for %u blocks of %zu bytes", key,
				     S_MAX_BLOCKS, part);
	rr_http_response_init(&resp);
	jobs = calloc(n, sizeof(*jobs));
	ids = calloc(n, sizeof(*ids));
	rc = jobs && ids ? s_block_ids(n, ids, jobs) : RR_ENOMEM;
	for (size_t i = 0; !rc && i < n; i++, off += part)
		jobs[i].q = (struct rr_remote_req){
			.method = "PUT", .key = key, .query = jobs[i].query, .body = data + off,
			.body_len = len - off < part ? len - off : part };
	if (!rc)
		rc = rr_remote_run_jobs(&az->r, jobs, n);
	if (!rc) {
		rc = s_commit_blocks(az, key, ids, n, opts, &resp, &maybe_applied);
		rc = s_settle(az, rc, maybe_applied, key, data, len, etag_out, &checked);
		rc = rr_remote_precondition_rc(rc, opts);
	}
	if (!rc && !checked)
		rc = rr_remote_copy_etag(&az->r, &resp, etag_out);
	rr_remote_jobs_free(jobs, jobs ? n : 0);
	free(ids);
	rr_http_response_free(&resp);
	return rc;
}

static int s_put(struct rr_store *s, const char *key, const void *data, size_t len,
		 const struct rr_put_opts *opts, char *etag_out)
{
	struct s_az *az = s_of(s);
	struct rr_remote_req q = { .method = "PUT", .key = key, .body = data, .body_len = len };
	struct rr_http_response resp;
	int rc, maybe_applied = 0, checked = 0;

	if (len > az->r.part_size)
		return s_put_blocks(az, key, data, len, opts, etag_out);
	if (len == 0)
		q.body = ""; /* Content-Length: 0, which Put Blob needs */
	q.maybe_applied = &maybe_applied;
	rr_remote_add_header(&q, "x-ms-blob-type", "BlockBlob");
	rr_remote_add_header(&q, "Content-Type", "application/octet-stream");
	s_add_conditions(&q, opts);
	rr_http_response_init(&resp);
	rc = rr_remote_send(&az->r, &q, &resp);
	rc = s_settle(az, rc, maybe_applied, key, data, len, etag_out, &checked);
	rc = rr_remote_precondition_rc(rc, opts);
	if (!rc && !checked)
		rc = rr_remote_copy_etag(&az->r, &resp, etag_out);
	rr_http_response_free(&resp);
	return rc;
}

/* ---- listing ---- */

struct s_list_ctx {
	struct s_az *az;
	rr_store_list_cb cb;
	void *ud;
};

static int s_on_blob(const struct rr_azure_blob *b, void *ud)
{
	struct s_list_ctx *c = ud;
	size_t plen = strlen(c->az->r.prefix);
	struct rr_store_entry e;

	if (strncmp(b->name, c->az->r.prefix, plen) != 0)
		return 0;
	e = (struct rr_store_entry){ b->name + plen, b->size, b->mtime_unix_ms };
	return c->cb(&e, c->ud);
}

static int s_list_query(struct rr_buf *qb, const char *root, const char *prefix,
			const char *marker, int max)
{
	int rc = rr_buf_printf(qb, "restype=container&comp=list");

	if (!rc && max)
		rc = rr_buf_printf(qb, "&maxresults=%d", max);
	if (!rc)
		rc = rr_buf_printf(qb, "&prefix=");
	if (!rc)
		rc = rr_sigv4_uri_encode(qb, root, strlen(root), 0);
	if (!rc)
		rc = rr_sigv4_uri_encode(qb, prefix, strlen(prefix), 0);
	if (!rc && marker && *marker) {
		rc = rr_buf_printf(qb, "&marker=");
		if (!rc)
			rc = rr_sigv4_uri_encode(qb, marker, strlen(marker), 0);
	}
	return rc;
}

static int s_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb, void *ud)
{
	struct s_az *az = s_of(s);
	struct s_list_ctx ctx = { az, cb, ud };
	struct rr_http_response resp;
	char marker[RR_AZURE_MARKER_MAX] = "";
	struct rr_buf qb;
	int rc;

	rr_buf_init(&qb, 8192);
	do {
		struct rr_remote_req q = { .method = "GET", .response_max = RR_XML_MAX };
		rr_buf_reset(&qb);
		rc = s_list_query(&qb, az->r.prefix, prefix, marker, 0);
		if (rc)
			break;
		q.query = (const char *)qb.data;
		rr_http_response_init(&resp);
		rc = rr_remote_send(&az->r, &q, &resp);
		if (!rc) {
			rc = rr_azure_xml_parse_list(resp.body.data, resp.body.len, s_on_blob, &ctx,
						     marker, sizeof(marker));
			if (rc == RR_ECORRUPT || rc == RR_ETOOBIG)
				rc = rr_store_fail(RR_EIO, "Azure sent a listing that is not "
						   "valid XML");
		}
		rr_http_response_free(&resp);
	} while (!rc && marker[0]);
	rr_buf_free(&qb);
	return rc;
}

/* ---- deleting many: Blob Batch ---- */

struct s_batch {
	char boundary[48];
	char date[40];
	struct rr_azure_batch_sub subs[RR_AZURE_BATCH_MAX];
	char *targets[RR_AZURE_BATCH_MAX];
	char *auths[RR_AZURE_BATCH_MAX];
	int status[RR_AZURE_BATCH_MAX];
	char code[RR_AZURE_BATCH_MAX][64];
};

static void s_batch_free(struct s_batch *b, size_t n)
{
	for (size_t i = 0; b && i < n; i++) {
		free(b->targets[i]);
		if (b->auths[i])
			OPENSSL_cleanse(b->auths[i], strlen(b->auths[i]));
		free(b->auths[i]);
	}
	free(b);
}

/* Sub-request i: the Delete Blob of keys[i], authorized on its own. */
static int s_batch_sub(struct s_az *az, struct s_batch *b, size_t i, const char *key)
{
	struct rr_http_header h[2] = { { "x-ms-date", b->date }, { "Content-Length", NULL } };
	const char *sas = rr_azure_creds_sas(az->creds);
	char auth[RR_REMOTE_AUTH_MAX];
	struct rr_buf path, wire;
	int rc;

	rr_buf_init(&path, 8192);
	rr_buf_init(&wire, 16384);
	rc = rr_remote_raw_path(&az->r, key, &path);
	if (!rc)
		rc = rr_sigv4_uri_encode(&wire, (const char *)path.data, path.len, 1);
	if (!rc)
		rc = s_authorization(az, "DELETE", h, 2, (const char *)wire.data, NULL, 0, auth,
				     sizeof(auth), key);
	if (!rc && sas)
		rc = rr_buf_printf(&wire, "?%s", sas);
	if (!rc) {
		b->targets[i] = strdup((const char *)wire.data);
		b->auths[i] = auth[0] ? strdup(auth) : NULL;
		if (!b->targets[i] || (auth[0] && !b->auths[i]))
			rc = RR_ENOMEM;
	}
	b->subs[i] = (struct rr_azure_batch_sub){ b->targets[i], b->date, b->auths[i] };
	OPENSSL_cleanse(auth, sizeof(auth));
	rr_buf_free(&path);
	rr_buf_free(&wire);
	return rc;
}

/* Sends the batch; b->status[i] is then each sub-response's status (0: not answered). A
 * refusal of the batch as a whole with a 4xx is RR_EUNSUPPORTED: this account (or this
 * credential) does not take Blob Batch. */
static int s_batch_send(struct s_az *az, struct s_batch *b, size_t n)
{
	struct rr_remote_req q = { .method = "POST", .query = "restype=container&comp=batch",
				   .what = "a Blob Batch of deletes",
				   .response_max = RR_AZURE_BATCH_ANSWER_MAX };
	char ctype[96], boundary[RR_AZURE_BOUNDARY_MAX + 1];
	struct rr_http_response resp;
	struct rr_buf body;
	int rc;

	rr_buf_init(&body, 4u << 20);
	rr_http_response_init(&resp);
	rc = rr_azure_batch_body(&body, b->boundary, b->subs, n);
	if (rc)
		goto out;
	snprintf(ctype, sizeof(ctype), "multipart/mixed; boundary=%s", b->boundary);
	rr_remote_add_header(&q, "Content-Type", ctype);
	q.body = body.data;
	q.body_len = body.len;
	rc = rr_remote_send(&az->r, &q, &resp);
	if (rc && resp.status >= 400 && resp.status < 500) {
		rr_info("%s; deleting blobs one by one from now on", rr_store_strerror(rc));
		rc = RR_EUNSUPPORTED;
	}
	if (rc)
		goto out;
	if (rr_azure_batch_boundary(rr_http_response_header(&resp, "Content-Type"), boundary,
				    sizeof(boundary)) ||
	    rr_azure_batch_parse(resp.body.data, resp.body.len, boundary, b->status, b->code,
				 n) < 0)
		rr_debug("Azure answered a Blob Batch with a body that is not multipart/mixed; "
			 "its %zu deletes are made one by one", n);
out:
	rr_http_response_free(&resp);
	rr_buf_wipe_free(&body); /* it holds bearer tokens */
	return rc;
}

/* Up to RR_AZURE_BATCH_MAX keys: one Blob Batch, then one by one whatever it did not
 * settle (a sub-request answered other than 202, or 404: already gone). */
static int s_del_batch(struct s_az *az, const char *const *keys, size_t n)
{
	struct s_batch *b = calloc(1, sizeof(*b));
	unsigned char nonce[16];
	size_t i, singly = 0;
	int rc = b ? 0 : RR_ENOMEM;

	if (!rc && RAND_bytes(nonce, sizeof(nonce)) != 1)
		rc = RR_EIO;
	if (!rc) {
		snprintf(b->boundary, sizeof(b->boundary), "batch_");
		for (i = 0; i < sizeof(nonce); i++)
			snprintf(b->boundary + 6 + 2 * i, 3, "%02x", nonce[i]);
		s_http_date(az, b->date);
	}
	for (i = 0; !rc && i < n; i++)
		rc = s_batch_sub(az, b, i, keys[i]);
	if (!rc)
		rc = s_batch_send(az, b, n);
	for (i = 0; !rc && i < n; i++) {
		if (b->status[i] == 202 || b->status[i] == 404)
			continue;
		if (b->status[i])
			rr_debug("Blob Batch: delete of %s answered %d %s; deleting it alone",
				 keys[i], b->status[i], b->code[i]);
		singly++;
		rc = rr_remote_del(&az->r.base, keys[i]);
	}
	if (!rc && singly)
		rr_debug("Blob Batch: %zu of %zu deletes made one by one", singly, n);
	s_batch_free(b, b ? n : 0);
	return rc;
}

static int s_del_many(struct rr_store *s, const char *const *keys, size_t n)
{
	struct s_az *az = s_of(s);
	size_t i, k;
	int rc = 0;

	for (i = 0; !rc && i < n; i += k) {
		k = n - i < RR_AZURE_BATCH_MAX ? n - i : RR_AZURE_BATCH_MAX;
		rc = atomic_load(&az->no_batch) ? RR_EUNSUPPORTED : s_del_batch(az, keys + i, k);
		if (rc == RR_EUNSUPPORTED) {
			atomic_store(&az->no_batch, 1);
			rc = 0;
			for (size_t j = 0; !rc && j < k; j++)
				rc = rr_remote_del(&az->r.base, keys[i + j]);
		}
	}
	return rc;
}

static void s_destroy(struct rr_store *s)
{
	struct s_az *az = s_of(s);

	rr_azure_creds_destroy(az->creds);
	rr_remote_free(&az->r);
	free(az->account);
	free(az->base_path);
	free(az);
}

static const struct rr_remote_ops s_ops = {
	.sign = s_sign,
	.judge = s_judge,
	.version_header = "ETag",
	.version_name = "ETag",
};

static const struct rr_store_vtable s_vtable = {
	.scheme = "az",
	.put = s_put,
	.get = rr_remote_get,
	.head = rr_remote_head,
	.list = s_list,
	.del = rr_remote_del,
	.del_many = s_del_many,
	.destroy = s_destroy,
};

/* ---- opening: which account, where, with what ---- */

static int s_valid_container(const char *c, size_t len)
{
	if (len < 3 || len > 63 || c[0] == '-' || c[len - 1] == '-')
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= '0' && c[i] <= '9') ||
		      (c[i] == '-' && c[i + 1] != '-')))
			return 0;
	return 1;
}

static int s_valid_account(const char *a)
{
	size_t n = strlen(a);
	return n >= 3 && n <= 64 && strspn(a, "abcdefghijklmnopqrstuvwxyz0123456789") == n;
}

/* An endpoint "scheme://host[:port][/path]": the path (Azurite's "/devstoreaccount1")
 * goes before the container in every request. */
static int s_set_endpoint(struct s_az *az, const char *url)
{
	const char *p = strstr(url, "://");
	char *ep;
	size_t n;
	int rc;

	p = p ? p + 3 : url;
	n = (size_t)(p - url) + strcspn(p, "/?#");
	ep = strndup(url, n);
	if (!ep)
		return RR_ENOMEM;
	rc = rr_remote_parse_endpoint(ep, "Azure blob endpoint", &az->r.scheme, &az->r.host);
	free(ep);
	if (rc)
		return rc;
	if (url[n] && url[n] != '/')
		return rr_store_fail(RR_EINVAL, "the Azure blob endpoint '%s' has a query", url);
	az->base_path = strdup(url + n);
	if (!az->base_path)
		return RR_ENOMEM;
	n = strlen(az->base_path);
	while (n && az->base_path[n - 1] == '/')
		az->base_path[--n] = '\0';
	return 0;
}

/* "az://CONTAINER/PREFIX" or "https://ACCOUNT.blob.SUFFIX/CONTAINER/PREFIX": the account,
 * the endpoint and what follows it. */
static int s_locate(struct s_az *az, const char *url, const struct rr_azure_conn *conn,
		    const char **rest)
{
	const char *account = rr_env("AZURE_STORAGE_ACCOUNT");
	char *ep = NULL;
	int rc;

	if (strncmp(url, "https://", 8) == 0) {
		const char *host = url + 8, *dot = strchr(host, '.'), *slash = strchr(host, '/');
		if (!dot || !slash || dot > slash)
			return rr_store_fail(RR_EINVAL, "'%s' is not an Azure blob URL (https://"
					     "ACCOUNT.blob.core.windows.net/CONTAINER)", url);
		az->account = strndup(host, (size_t)(dot - host));
		ep = strndup(url, (size_t)(slash - url));
		*rest = slash + 1;
	} else {
		*rest = url + 5; /* after "az://" */
		if (!account || !*account)
			account = conn->account[0] ? conn->account
				  : conn->dev	   ? "devstoreaccount1"
						   : NULL;
		if (!account)
			return rr_store_fail(RR_EINVAL, "az:// needs the storage account: set "
					     "AZURE_STORAGE_ACCOUNT or "
					     "AZURE_STORAGE_CONNECTION_STRING");
		az->account = strdup(account);
		if (conn->blob_endpoint[0])
			ep = strdup(conn->blob_endpoint);
		else if (conn->dev)
			ep = strdup("http://127.0.0.1:10000/devstoreaccount1");
		else if (asprintf(&ep, "%s://%s.blob.%s",
				  conn->protocol[0] ? conn->protocol : "https", account,
				  conn->suffix[0] ? conn->suffix : S_PUBLIC_SUFFIX) < 0)
			ep = NULL;
	}
	if (!az->account || !ep) {
		free(ep);
		return RR_ENOMEM;
	}
	rc = s_valid_account(az->account) ? s_set_endpoint(az, ep)
					  : rr_store_fail(RR_EINVAL, "'%s' is not an Azure storage "
							  "account name (3-24 lowercase letters "
							  "and digits)", az->account);
	free(ep);
	return rc;
}

static int s_set_credentials(struct s_az *az, const struct rr_azure_conn *conn,
			     const struct rr_store_opts *opts)
{
	struct rr_azure_creds_opts co = { .http = az->r.http, .account = az->account,
					  .conn = conn,
					  .imds_endpoint = opts->metadata_endpoint };
	char why[512];
	int rc;

	rc = rr_azure_creds_new(&co, &az->creds, why, sizeof(why));
	if (rc)
		return rr_store_fail(rc, "Azure credentials: %s", why);
	/* A bearer token is the credential itself: over plain http only to this machine. */
	if (rr_azure_creds_kind(az->creds) == RR_AZURE_AUTH_BEARER &&
	    strcmp(az->r.scheme, "https") != 0 && !rr_url_host_is_loopback(az->r.host))
		return rr_store_fail(RR_EINVAL, "refusing to send an Azure bearer token (%s) over "
				     "plain http to %s: use https://",
				     rr_azure_creds_source(az->creds), az->r.host);
	return 0;
}

static int s_open(struct s_az *az, const char *url, const struct rr_store_opts *opts)
{
	const char *cs = rr_env("AZURE_STORAGE_CONNECTION_STRING"), *rest = NULL;
	struct rr_azure_conn conn;
	char why[300];
	int rc = 0;

	memset(&conn, 0, sizeof(conn));
	if (cs && *cs && rr_azure_conn_parse(cs, strlen(cs), &conn, why, sizeof(why)))
		return rr_store_fail(RR_EINVAL, "AZURE_STORAGE_CONNECTION_STRING: %s", why);
	if (opts->s3_sse || opts->s3_sse_kms_key_id || opts->gcs_hmac)
		rc = rr_store_fail(RR_EINVAL, "--s3-sse and --gcs-hmac are not for az:// stores "
				   "(Azure encrypts every blob itself)");
	if (!rc)
		rc = s_locate(az, url, &conn, &rest);
	if (!rc)
		rc = rr_remote_set_bucket(&az->r, rest, s_valid_container,
					  "container name (3-63 characters of a-z 0-9 -)");
	if (!rc && asprintf(&az->r.path_root, "%s/%s", az->base_path, az->r.bucket) < 0) {
		az->r.path_root = NULL;
		rc = RR_ENOMEM;
	}
	if (!rc)
		rc = rr_remote_set_part_size(&az->r);
	if (!rc)
		rc = s_set_credentials(az, &conn, opts);
	rr_azure_conn_wipe(&conn);
	return rc;
}

int rr_store_azure_new(const char *url, const struct rr_store_opts *opts,
		       struct rr_store **out)
{
	struct s_az *az = calloc(1, sizeof(*az));
	struct rr_buf qb;
	int rc;

	if (!az)
		return RR_ENOMEM;
	rc = rr_remote_init(&az->r, &s_vtable, &s_ops, "Azure", rr_env("REQUESTS_CA_BUNDLE"));
	if (!rc)
		rc = s_open(az, url, opts);
	rr_buf_init(&qb, 4096);
	if (!rc)
		rc = s_list_query(&qb, az->r.prefix, "", NULL, 1);
	if (rc) {
		rr_buf_free(&qb);
		s_destroy(&az->r.base);
		return rc;
	}
	rc = rr_remote_finish_open(&az->r, "az://", (const char *)qb.data, out);
	rr_buf_free(&qb);
	return rc;
}
