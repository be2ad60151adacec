/* The request core of the remote stores (storage/store/remote.h): every store call of S3,
 * GCS and Azure Blob becomes requests that the backend authorizes, sent over the HTTP layer
 * (storage/net/http.c), retried with backoff (storage/net/retry.c) within the notice's
 * deadline. Big objects come down in ranges, several at once on one curl multi batch. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>

#include "remote.h"
#include "rr/aws_credentials.h"
#include "rr/clock.h"
#include "rr/env.h"
#include "rr/error.h"
#include "rr/http.h"
#include "rr/log.h"
#include "rr/retry.h"
#include "rr/sigv4.h"
#include "rr/timefmt.h"
#include "rr/xml.h"
#include "store_s3.h"

/* ---- a store's life ---- */

int rr_remote_init(struct rr_remote *r, const struct rr_store_vtable *vt,
		   const struct rr_remote_ops *ops, const char *label, const char *ca_bundle)
{
	r->base.vt = vt;
	r->ops = ops;
	r->label = label;
	return rr_http_new(&(struct rr_http_opts){ .ca_bundle = ca_bundle,
						   .deadline_mono_ms = &r->base.deadline_mono_ms },
			   &r->http);
}

/* One small listing: checks the endpoint, the bucket, the region and the credentials. */
static int s_probe(struct rr_remote *r, const char *query)
{
	struct rr_remote_req q = { .method = "GET", .query = query,
				   .response_max = RR_XML_MAX };
	struct rr_http_response resp;
	struct rr_retry retry;
	int rc;

	rr_http_response_init(&resp);
	rr_retry_init(&retry, 0);
	retry.max_attempts = 4; /* about a second: a wrong endpoint should not hang start */
	rc = rr_remote_send_policy(r, &q, &resp, &retry);
	rr_http_response_free(&resp);
	return rc;
}

int rr_remote_finish_open(struct rr_remote *r, const char *url, const char *probe_query,
			  struct rr_store **out)
{
	int rc = 0;

	r->base.url = strdup(url);
	if (!r->base.url)
		rc = RR_ENOMEM;
	if (!rc)
		rc = s_probe(r, probe_query);
	if (rc) {
		r->base.vt->destroy(&r->base);
		return rc;
	}
	*out = &r->base;
	return 0;
}

void rr_remote_free(struct rr_remote *r)
{
	rr_http_destroy(r->http);
	free(r->bucket);
	free(r->prefix);
	free(r->scheme);
	free(r->host);
	free(r->path_root);
	free(r->base.url);
}

int rr_remote_set_bucket(struct rr_remote *r, const char *rest,
			 int (*valid)(const char *name, size_t len), const char *what)
{
	const char *slash = strchr(rest, '/');
	size_t blen = slash ? (size_t)(slash - rest) : strlen(rest), plen;

	if (!valid(rest, blen))
		return rr_store_fail(RR_EINVAL, "'%.*s' is not a %s", (int)blen, rest, what);
	r->bucket = strndup(rest, blen);
	rest = slash ? slash + 1 : "";
	while (*rest == '/')
		rest++;
	plen = strlen(rest);
	while (plen > 0 && rest[plen - 1] == '/')
		plen--;
	r->prefix = malloc(plen + 2);
	if (!r->bucket || !r->prefix)
		return RR_ENOMEM;
	memcpy(r->prefix, rest, plen);
	strcpy(r->prefix + plen, plen ? "/" : "");
	return 0;
}

int rr_remote_set_part_size(struct rr_remote *r)
{
	const char *part = rr_env("RESUME_RUN_S3_PART_SIZE");
	unsigned long long v;
	char *end;

	r->part_size = RR_S3_PART_SIZE_DEFAULT;
	if (!part)
		return 0;
	v = strtoull(part, &end, 10);
	if (*end || v < RR_S3_PART_SIZE_MIN || v > (1ull << 32))
		return rr_store_fail(RR_EINVAL, "RESUME_RUN_S3_PART_SIZE must be a byte count "
				     "from %u to 4 GiB", RR_S3_PART_SIZE_MIN);
	r->part_size = (size_t)v;
	return 0;
}

int rr_remote_parse_endpoint(const char *url, const char *what, char **scheme,
			     char **hostport)
{
	const char *p = strstr(url, "://"), *end;

	if (!p)
		return rr_store_fail(RR_EINVAL, "the %s '%s' is not a URL", what, url);
	if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0)
		return rr_store_fail(RR_EINVAL, "the %s '%s' must be http:// or https://", what,
				     url);
	p += 3;
	end = p + strcspn(p, "/?#");
	if (end == p || (*end && strcmp(end, "/") != 0))
		return rr_store_fail(RR_EINVAL, "the %s '%s' must be scheme://host[:port] "
				     "with no path", what, url);
	*scheme = strndup(url, (size_t)(strstr(url, "://") - url));
	*hostport = strndup(p, (size_t)(end - p));
	if (!*scheme || !*hostport)
		return RR_ENOMEM;
	for (char *c = *scheme; *c; c++)
		*c = (char)(*c | 0x20);
	return 0;
}

/* ---- one request ---- */

int rr_remote_add_header(struct rr_remote_req *q, const char *name, const char *value)
{
	if (q->nextra >= RR_REMOTE_MAX_EXTRA_HEADERS)
		return RR_EINVAL;
	q->extra[q->nextra].name = name;
	q->extra[q->nextra].value = value;
	q->nextra++;
	return 0;
}

void rr_remote_signed_free(struct rr_remote_signed *p)
{
	rr_buf_free(&p->url);
	rr_aws_credentials_wipe(&p->cr);
	OPENSSL_cleanse(p->auth, sizeof(p->auth));
}

int rr_remote_raw_path(const struct rr_remote *r, const char *key, struct rr_buf *out)
{
	if (!key)
		return rr_buf_printf(out, "%s", r->path_root[0] ? r->path_root : "/");
	return rr_buf_printf(out, "%s/%s%s", r->path_root, r->prefix, key);
}

void rr_remote_finish_request(struct rr_remote *r, const struct rr_remote_req *q,
			      struct rr_remote_signed *p, size_t n)
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
	p->http.cancel = q->cleanup ? NULL : r->base.cancel;
	p->http.stop = &r->base.stopped;
	if (q->cleanup)
		p->http.timeout_ms = RR_REMOTE_CLEANUP_MS;
}

/* Nothing is sent once the store's work is canceled or the notice's deadline has passed:
 * a request then could only delay what the notice needs, or be cut off by the machine's
 * end. */
static int s_may_send(struct rr_remote *r, const struct rr_remote_req *q)
{
	const atomic_int *cancel = r->base.cancel;
	long long deadline = r->base.deadline_mono_ms;
	const char *what = rr_remote_what(q);

	if (cancel && *cancel && !q->cleanup)
		return rr_store_fail(RR_ECANCELED, "%s %s %s canceled", r->label, q->method, what);
	if (deadline && rr_mono_ms() >= deadline)
		return rr_store_fail(RR_EIO, "%s %s %s not sent: the notice's deadline has passed",
				     r->label, q->method, what);
	return 0;
}

int rr_remote_url(const struct rr_remote *r, const struct rr_remote_req *q,
		  const struct rr_buf *path, const char *extra_query, struct rr_buf *url)
{
	int rc = rr_buf_printf(url, "%s://%s", r->scheme, r->host);

	if (!rc)
		rc = rr_sigv4_uri_encode(url, (const char *)path->data, path->len, 1);
	if (!rc && q->query)
		rc = rr_buf_printf(url, "?%s", q->query);
	if (!rc && extra_query && *extra_query)
		rc = rr_buf_printf(url, "%s%s", q->query ? "&" : "?", extra_query);
	return rc;
}

/* Authorizes q into p (initialised here; rr_remote_signed_free after). */
/* *again: the signing failed for want of credentials a metadata service or token endpoint
 * could not give just now (a 5xx, a 429, no answer: RR_EIO; a refusal is RR_EACCES, none
 * configured RR_ENOENT), to be tried again under the request's own policy, as Google,
 * Microsoft and AWS advise for their metadata services, which answer 503 for a moment
 * during a host's maintenance (reference/protocols.md): when notices come. */
static int s_sign(struct rr_remote *r, const struct rr_remote_req *q, int refresh,
		  struct rr_remote_signed *p, int *again)
{
	int rc;

	*again = 0;
	memset(p, 0, sizeof(*p));
	rr_buf_init(&p->url, 16384);
	rc = s_may_send(r, q);
	if (rc)
		return rc;
	rc = r->ops->sign(r, q, refresh, p);
	*again = rc == RR_EIO;
	return rc;
}

const char *rr_remote_what(const struct rr_remote_req *q)
{
	return q->key ? q->key : q->what ? q->what : "the bucket listing";
}

/* One attempt's outcome: 0 (2xx) or an error with its reason recorded. */
static int s_judge(struct rr_remote *r, const struct rr_remote_req *q,
		   const struct rr_remote_signed *p, const struct rr_http_response *resp,
		   int *retry, int *refresh, int64_t *retry_after_ms)
{
	*retry = 0;
	*refresh = 0;
	*retry_after_ms = 0;
	if (resp->error == RR_ECANCELED)
		return rr_store_fail(RR_ECANCELED, "%s %s %s canceled in flight", r->label,
				     q->method, rr_remote_what(q));
	if (resp->error) {
		*retry = resp->retryable;
		return rr_store_fail(resp->error == RR_ETOOBIG ? RR_ETOOBIG : RR_EIO,
				     "%s request %s %s to %s failed: %s", r->label, q->method,
				     rr_remote_what(q), r->host, resp->message);
	}
	/* Every answer tells the store's time: ages in its listings are judged by it. */
	rr_store_observe_date(&r->base, rr_http_response_header(resp, "Date"));
	if (resp->status >= 200 && resp->status < 300)
		return 0;
	return r->ops->judge(r, q, p, resp, retry, refresh, retry_after_ms);
}

void rr_remote_sleep_ms(const struct rr_remote *r, int64_t ms)
{
	const atomic_int *cancel = r->base.cancel;
	int64_t end = rr_mono_ms() + ms, left;

	while ((left = end - rr_mono_ms()) > 0 && !(cancel && *cancel)) {
		if (left > 50)
			left = 50;
		struct timespec ts = { 0, (long)left * 1000000L };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
}

/* The backoff before the next attempt: the retry policy's, or the server's Retry-After
 * when longer, as long as it ends before the deadline. -1: no more attempts. */
static int64_t s_next_delay(struct rr_retry *retry, int64_t retry_after_ms)
{
	int64_t delay = rr_retry_next(retry, rr_mono_ms());

	if (delay < 0 || retry_after_ms <= delay)
		return delay;
	if (retry->deadline_mono_ms && rr_mono_ms() + retry_after_ms >= retry->deadline_mono_ms)
		return -1;
	return retry_after_ms;
}

int rr_remote_send_policy(struct rr_remote *r, const struct rr_remote_req *q,
			  struct rr_http_response *resp, struct rr_retry *retry)
{
	struct rr_remote_signed p;
	int rc, again = 0, refresh = 0, refreshed = 0;
	int64_t delay, retry_after;

	for (;;) {
		int unknown_before = q->maybe_applied && *q->maybe_applied;

		rc = s_sign(r, q, refresh, &p, &again);
		if (rc) {
			rr_remote_signed_free(&p);
			if (!again || (delay = s_next_delay(retry, 0)) < 0)
				return rc;
			rr_debug("%s %s %s: no credentials yet (%s); retrying in %lld ms", r->label,
				 q->method, rr_remote_what(q), rr_store_strerror(rc),
				 (long long)delay);
			rr_remote_sleep_ms(r, delay);
			continue;
		}
		rr_http_perform(r->http, &p.http, resp);
		if (q->maybe_applied && resp->resent)
			*q->maybe_applied = 1;
		rc = s_judge(r, q, &p, resp, &again, &refresh, &retry_after);
		rr_remote_signed_free(&p);
		if (rc == 0 || !again || (q->stop_after_unknown && unknown_before))
			return rc;
		if (q->maybe_applied && (resp->status == 0 || resp->status >= 500))
			*q->maybe_applied = 1;
		if (refresh && refreshed++)
			return rc; /* fresh credentials did not help */
		delay = s_next_delay(retry, retry_after);
		if (delay < 0)
			return rc;
		/* A request the store keeps failing is said at the default level once, on its
		 * third try: a machine silent for minutes at start-up looks hung. */
		if (retry->attempt == 2)
			rr_info("%s %s %s: %s; still retrying (attempt %u of %u)", r->label,
				q->method, rr_remote_what(q), rr_store_strerror(rc),
				retry->attempt + 1, retry->max_attempts);
		else
			rr_debug("%s %s %s: %s; retrying in %lld ms", r->label, q->method,
				 rr_remote_what(q), rr_store_strerror(rc), (long long)delay);
		rr_remote_sleep_ms(r, delay);
	}
}

int rr_remote_send(struct rr_remote *r, const struct rr_remote_req *q,
		   struct rr_http_response *resp)
{
	struct rr_retry retry;

	rr_retry_init(&retry, r->base.deadline_mono_ms);
	return rr_remote_send_policy(r, q, resp, &retry);
}

/* ---- several requests of one object at once (parts, ranges) ---- */

/* Signs and adds the jobs that are ready while fewer than RR_REMOTE_PARALLEL fly; *next
 * becomes the earliest time a waiting job is ready. */
static int s_start_jobs(struct rr_remote *r, struct rr_http_batch *b,
			struct rr_remote_job *jobs, size_t n, size_t *flying, int64_t now,
			int64_t *next)
{
	int rc, again;

	for (size_t i = 0; i < n && *flying < RR_REMOTE_PARALLEL; i++) {
		struct rr_remote_job *j = &jobs[i];
		if (j->state != 0)
			continue;
		if (j->ready_at > now) {
			if (j->ready_at < *next)
				*next = j->ready_at;
			continue;
		}
		rc = s_sign(r, &j->q, j->refresh, &j->p, &again);
		if (rc && again) {
			int64_t delay = s_next_delay(&j->retry, 0);
			rr_remote_signed_free(&j->p);
			if (delay < 0)
				return rc;
			j->ready_at = now + delay;
			if (j->ready_at < *next)
				*next = j->ready_at;
			continue;
		}
		if (!rc)
			rc = rr_http_batch_add(b, &j->p.http, &j->resp, j);
		if (rc) {
			rr_remote_signed_free(&j->p);
			return rc;
		}
		j->state = 1;
		(*flying)++;
	}
	return 0;
}

/* A job came back: done (0, *done counted), scheduled again, or failed for good. */
static int s_job_back(struct rr_remote *r, struct rr_remote_job *j, size_t *done)
{
	int64_t next, retry_after;
	int rc, retry, refresh;

	rc = s_judge(r, &j->q, &j->p, &j->resp, &retry, &refresh, &retry_after);
	if (rc == 0) {
		j->state = 2;
		(*done)++;
		return 0;
	}
	rr_remote_signed_free(&j->p);
	j->state = 0;
	if (!retry || (refresh && j->refresh))
		return rc;
	j->refresh = refresh;
	next = s_next_delay(&j->retry, retry_after);
	if (next < 0)
		return rc;
	rr_debug("%s %s %s (%s): %s; retrying in %lld ms", r->label, j->q.method,
		 rr_remote_what(&j->q), j->range[0] ? j->range : j->query, rr_store_strerror(rc),
		 (long long)next);
	j->ready_at = rr_mono_ms() + next;
	return 0;
}

int rr_remote_run_jobs(struct rr_remote *r, struct rr_remote_job *jobs, size_t n)
{
	struct rr_http_batch *b = NULL;
	size_t i, done = 0, flying = 0;
	int64_t now, next;
	void *tag;
	int rc;

	rc = rr_http_batch_new(r->http, RR_REMOTE_PARALLEL, &b);
	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		rr_retry_init(&jobs[i].retry, r->base.deadline_mono_ms);
		rr_http_response_init(&jobs[i].resp);
	}
	while (done < n) {
		now = rr_mono_ms();
		next = now + 1000;
		rc = s_start_jobs(r, b, jobs, n, &flying, now, &next);
		if (rc)
			goto out;
		rc = rr_http_batch_wait(b, (long)(next - now), &tag);
		if (rc == RR_ENOENT || rc == 0) {
			if (!flying && next > rr_mono_ms())
				rr_remote_sleep_ms(r, next - rr_mono_ms());
			continue;
		}
		if (rc < 0)
			goto out;
		flying--;
		rc = s_job_back(r, tag, &done);
		if (rc)
			goto out;
	}
	rc = 0;
out:
	rr_http_batch_destroy(b);
	for (i = 0; i < n; i++)
		if (jobs[i].state == 1)
			rr_remote_signed_free(&jobs[i].p);
	return rc;
}

void rr_remote_jobs_free(struct rr_remote_job *jobs, size_t n)
{
	size_t i;

	for (i = 0; jobs && i < n; i++) {
		if (jobs[i].state == 2)
			rr_remote_signed_free(&jobs[i].p);
		rr_http_response_free(&jobs[i].resp);
	}
	free(jobs);
}

/* ---- what every backend's store calls share ---- */

int rr_remote_copy_etag(const struct rr_remote *r, const struct rr_http_response *resp,
			char *etag_out)
{
	const char *etag = rr_http_response_header(resp, r->ops->version_header);

	if (!etag_out)
		return 0;
	if (!etag || strlen(etag) >= RR_ETAG_MAX)
		return rr_store_fail(RR_EIO, "%s answered without a usable %s", r->label,
				     r->ops->version_name);
	strcpy(etag_out, etag);
	return 0;
}

int rr_remote_check_ours(struct rr_remote *r, const char *key, const void *data, size_t len,
			 char *etag_out)
{
	char etag[RR_ETAG_MAX] = "";
	struct rr_buf got;
	int rc;

	rr_buf_init(&got, len);
	rc = rr_remote_get(&r->base, key, &got, etag);
	if (rc == 0 && got.len == len && (len == 0 || memcmp(got.data, data, len) == 0)) {
		rr_info("%s: the answer to its write was lost and the retry found it written; "
			"it holds our bytes, so the write stands", key);
		if (etag_out)
			strcpy(etag_out, etag);
	} else if (rc == 0 || rc == RR_ETOOBIG) {
		rc = rr_store_fail(RR_EPRECOND, "%s: precondition failed (it holds other bytes "
				   "than this write's)", key);
	}
	rr_buf_free(&got);
	return rc;
}

int rr_remote_precondition_rc(int rc, const struct rr_put_opts *opts)
{
	if (rc == RR_EPRECOND && opts && opts->if_none_match)
		return rr_store_fail(RR_EEXIST, "already exists");
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

static uint64_t s_range_end(const struct rr_remote *r, uint64_t off, uint64_t total)
{
	return off + r->part_size - 1 < total - 1 ? off + r->part_size - 1 : total - 1;
}

/* The ranges of a big object after its first one came (first_len bytes of total), in
 * parallel, each checked to be the one asked for, appended to out. */
static int s_get_rest(struct rr_remote *r, const char *key, const char *etag,
		      uint64_t first_len, uint64_t total, struct rr_buf *out)
{
	size_t n = (size_t)((total - first_len + r->part_size - 1) / r->part_size), i;
	struct rr_remote_job *ranges = calloc(n, sizeof(*ranges));
	uint64_t off, first, last, last_total;
	int rc;

	if (!ranges)
		return RR_ENOMEM;
	for (i = 0, off = first_len; i < n; i++, off += r->part_size) {
		struct rr_remote_job *j = &ranges[i];
		uint64_t end = s_range_end(r, off, total);
		snprintf(j->range, sizeof(j->range), "bytes=%llu-%llu", (unsigned long long)off,
			 (unsigned long long)end);
		j->q = (struct rr_remote_req){ .method = "GET", .key = key,
					       .response_max = (size_t)(end - off + 1) };
		rr_remote_add_header(&j->q, "range", j->range);
		rr_remote_add_header(&j->q, "if-match", etag); /* all ranges from one version */
	}
	rc = rr_remote_run_jobs(r, ranges, n);
	for (i = 0, off = first_len; !rc && i < n; i++, off += r->part_size) {
		const struct rr_http_response *resp = &ranges[i].resp;
		uint64_t end = s_range_end(r, off, total);
		if (resp->status != 206) {
			rc = rr_store_fail(RR_EIO, "%s ignored a range request for %s", r->label,
					   key);
			break;
		}
		/* A short or shifted range would be spliced in silently: check it is the one
		 * asked for. */
		if (s_content_range(rr_http_response_header(resp, "Content-Range"), &first, &last,
				    &last_total) || first != off || last != end ||
		    last_total != total || resp->body.len != end - off + 1) {
			rc = rr_store_fail(RR_EIO, "%s answered a ranged GET of %s with a bad "
					   "Content-Range", r->label, key);
			break;
		}
		rc = rr_buf_append(out, resp->body.data, resp->body.len);
	}
	rr_remote_jobs_free(ranges, n);
	return rc;
}

/* The first GET: the whole object when it fits in one part, else its first range. An
 * empty object has no byte 0 (416): asked again without a range. */
static int s_get_first(struct rr_remote *r, const char *key, size_t room,
		       struct rr_http_response *resp)
{
	struct rr_remote_req q = { .method = "GET", .key = key };
	char range[64];
	int rc;

	if (room > r->part_size) {
		snprintf(range, sizeof(range), "bytes=0-%zu", r->part_size - 1);
		rr_remote_add_header(&q, "range", range);
	}
	q.response_max = room < r->part_size ? (room ? room : 1) : r->part_size;
	rc = rr_remote_send(r, &q, resp);
	if (rc == RR_EIO && resp->status == 416) {
		q.nextra = 0;
		rr_http_response_free(resp);
		rr_http_response_init(resp);
		rc = rr_remote_send(r, &q, resp);
	}
	return rc;
}

int rr_remote_get(struct rr_store *s, const char *key, struct rr_buf *out, char *etag_out)
{
	struct rr_remote *r = (struct rr_remote *)s;
	size_t room = out->max - out->len;
	uint64_t first, last, total;
	struct rr_http_response resp;
	const char *etag;
	int rc;

	/* An object that fits in one part comes in one plain GET. Otherwise the first range
	 * tells the size, and a big object's other ranges follow in parallel. */
	rr_http_response_init(&resp);
	rc = s_get_first(r, key, room, &resp);
	if (rc)
		goto out;
	etag = rr_http_response_header(&resp, "ETag");
	rc = rr_remote_copy_etag(r, &resp, etag_out);
	if (rc)
		goto out;
	if (resp.status != 206) {
		rc = rr_buf_append(out, resp.body.data, resp.body.len);
		goto out;
	}
	if (s_content_range(rr_http_response_header(&resp, "Content-Range"), &first, &last,
			    &total) || first != 0 || resp.body.len != last + 1) {
		rc = rr_store_fail(RR_EIO, "%s answered a ranged GET of %s with a bad "
				   "Content-Range", r->label, key);
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
		rc = rr_store_fail(RR_EIO, "%s sent no ETag for %s, so its ranges cannot be "
				   "checked to belong to one version", r->label, key);
		goto out;
	}
	rc = s_get_rest(r, key, etag, resp.body.len, total, out);
out:
	rr_http_response_free(&resp);
	return rc;
}

int rr_remote_head(struct rr_store *s, const char *key, uint64_t *size_out)
{
	struct rr_remote *r = (struct rr_remote *)s;
	struct rr_remote_req q = { .method = "HEAD", .key = key };
	struct rr_http_response resp;
	const char *len;
	char *end;
	int rc;

	rr_http_response_init(&resp);
	rc = rr_remote_send(r, &q, &resp);
	if (!rc && size_out) {
		len = rr_http_response_header(&resp, "Content-Length");
		if (!len || !*len || (*size_out = strtoull(len, &end, 10), *end))
			rc = rr_store_fail(RR_EIO, "%s answered HEAD %s without a length",
					   r->label, key);
	}
	rr_http_response_free(&resp);
	return rc;
}

int rr_remote_del(struct rr_store *s, const char *key)
{
	struct rr_remote_req q = { .method = "DELETE", .key = key };
	struct rr_http_response resp;
	int rc;

	rr_http_response_init(&resp);
	rc = rr_remote_send((struct rr_remote *)s, &q, &resp);
	rr_http_response_free(&resp);
	return rc == RR_ENOENT ? 0 : rc;
}

int rr_remote_del_if_old(struct rr_store *s, const char *key, int64_t not_after_ms)
{
	struct rr_remote *r = (struct rr_remote *)s;
	struct rr_remote_req q = { .method = "HEAD", .key = key };
	struct rr_http_response resp;
	char tag[RR_ETAG_MAX];
	const char *lm;
	int64_t written;
	int rc;

	if (!r->ops->if_version_header)
		return RR_EUNSUPPORTED;
	rr_http_response_init(&resp);
	rc = rr_remote_send(r, &q, &resp);
	if (!rc)
		rc = rr_remote_copy_etag(r, &resp, tag);
	lm = rc ? NULL : rr_http_response_header(&resp, "Last-Modified");
	if (!rc && (!lm || rr_rfc1123_to_unix(lm, &written) != 0))
		rc = rr_store_fail(RR_EIO, "%s answered HEAD %s without a usable Last-Modified",
				   r->label, key);
	rr_http_response_free(&resp);
	if (rc)
		return rc == RR_ENOENT ? 0 : rc;
	/* Last-Modified is in whole seconds, at or before the listing's time of the same write:
	 * an object the listing showed as old shows as old here too. */
	if (written * 1000 > not_after_ms)
		return RR_EPRECOND;
	q = (struct rr_remote_req){ .method = "DELETE", .key = key };
	rc = rr_remote_add_header(&q, r->ops->if_version_header, tag);
	rr_http_response_init(&resp);
	if (!rc)
		rc = rr_remote_send(r, &q, &resp);
	rr_http_response_free(&resp);
	return rc == RR_ENOENT ? 0 : rc; /* RR_EPRECOND: written again since the HEAD */
}
