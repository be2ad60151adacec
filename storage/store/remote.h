/* The request core of the remote stores (storage/store/remote.c), private to storage/store:
 * what S3, GCS and Azure Blob have in common. A backend embeds struct rr_remote first in its
 * own struct and fills a struct rr_remote_ops: how to authorize a request (SigV4, a bearer
 * token, Shared Key, a SAS) and how to read an answer that is not a success. The core does
 * the rest: the wire URL, the deadline and cancel checks, retries with backoff (and the
 * server's Retry-After), several requests of one object at once on one curl multi batch,
 * ranged parallel reads checked to come from one version, the "was my write applied?" check
 * after an ambiguous retry, and the constructor's tail (the probe). */
#ifndef RR_REMOTE_H
#define RR_REMOTE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "rr/aws_credentials.h"
#include "rr/buf.h"
#include "rr/hash.h"
#include "rr/http.h"
#include "rr/retry.h"
#include "rr/sigv4.h"
#include "rr/store.h"

#define RR_REMOTE_MAX_EXTRA_HEADERS 8
#define RR_REMOTE_AUTH_MAX (8192 + 16) /* "Bearer <token>", a SigV4 or Shared Key value */
#define RR_REMOTE_PARALLEL 4u          /* parts or ranges of one object in flight at once */
#define RR_REMOTE_CLEANUP_MS 2000L     /* the most a canceled upload's cleanup may hold up */

/* One request before it is authorized. */
struct rr_remote_req {
	const char *method;
	const char *key;   /* store key (the prefix is added), or NULL for the bucket/container */
	const char *what;  /* names a request without a key in reasons (default: "the bucket
			    * listing") */
	const char *query; /* wire form, or NULL */
	struct rr_sigv4_header extra[RR_REMOTE_MAX_EXTRA_HEADERS];
	size_t nextra;
	const void *body;
	size_t body_len;
	const char *payload_sha256; /* NULL: computed from the body (SigV4) */
	size_t response_max;
	/* Cleans up after a canceled upload (the abort of its multipart upload): sent even
	 * while the store is canceled, but given RR_REMOTE_CLEANUP_MS at most. */
	int cleanup;
	/* May be NULL; set to 1 when the request was sent again after a sending whose outcome
	 * is unknown (the connection broke, or a 5xx answer; also curl's own resend on a fresh
	 * connection), so the server may have applied it already. */
	int *maybe_applied;
	/* With maybe_applied: the first failure after a sending of unknown outcome ends the
	 * retries, whatever it is, so the caller can look whether the write is there (a
	 * retried completion is refused in ways that vary between servers). */
	int stop_after_unknown;
};

/* A request authorized and ready for the HTTP layer, with the storage behind it. */
struct rr_remote_signed {
	struct rr_buf url;
	struct rr_http_header headers[RR_REMOTE_MAX_EXTRA_HEADERS + 8];
	struct rr_http_request http;
	char sha[RR_SHA256_HEX_LEN + 1];
	char date[RR_SIGV4_AMZ_DATE_LEN + 32]; /* x-amz-date or x-ms-date */
	char auth[RR_REMOTE_AUTH_MAX];         /* the Authorization value; wiped */
	struct rr_aws_credentials cr;          /* SigV4's credentials; cr.source names any
						* backend's credentials in reasons */
};

struct rr_remote;

struct rr_remote_ops {
	/* Fills p->url and the first headers (Host, dates, Authorization), then calls
	 * rr_remote_finish_request with their count. refresh: fetch credentials anew. */
	int (*sign)(struct rr_remote *r, const struct rr_remote_req *q, int refresh,
		    struct rr_remote_signed *p);
	/* An answer that is not 2xx: returns its error with the reason recorded
	 * (rr_store_fail); *retry whether another attempt may help, *refresh whether
	 * credentials should be fetched anew first, *retry_after_ms (0 when none) the
	 * server's own wait. Never reads the body as data. */
	int (*judge)(struct rr_remote *r, const struct rr_remote_req *q,
		     const struct rr_remote_signed *p, const struct rr_http_response *resp,
		     int *retry, int *refresh, int64_t *retry_after_ms);
	const char *version_header; /* the response header compare-and-swap uses */
	const char *version_name;   /* how reasons call it: "ETag", "generation" */
	/* The request header that makes a write or delete conditional on the version tag
	 * ("If-Match", "x-goog-if-generation-match"); NULL where a tag does not change when
	 * the same bytes are written again (S3's ETag is their MD5), so that a delete
	 * conditional on it cannot tell an object written again (rr_remote_del_if_old). */
	const char *if_version_header;
};

struct rr_remote {
	struct rr_store base;
	const struct rr_remote_ops *ops;
	struct rr_http *http;
	const char *label;  /* "S3", "GCS", "Azure", for reasons */
	char *bucket;       /* the bucket or container */
	char *prefix;       /* "" or "a/b/" (ends with '/'): prepended to every key */
	char *scheme;       /* "https" or "http" */
	char *host;         /* host[:port] the requests go to (with the bucket when virtual) */
	char *path_root;    /* "/bucket" for path-style addressing, "" for virtual-hosted */
	size_t part_size;   /* bigger objects go up in parts and come down in ranges */
};

/* One of several requests of one object sent at once (parts, ranges). */
struct rr_remote_job {
	struct rr_remote_req q;
	struct rr_remote_signed p;
	struct rr_http_response resp;
	struct rr_retry retry;
	int64_t ready_at;
	int state; /* 0 waiting, 1 in flight, 2 done */
	int refresh;
	char query[512];
	char range[64];
};

/* Sets r's base fields, makes its HTTP client (ca_bundle may be NULL). */
int rr_remote_init(struct rr_remote *r, const struct rr_store_vtable *vt,
		   const struct rr_remote_ops *ops, const char *label, const char *ca_bundle);
/* The constructor's tail: names the store (url, e.g. "s3://"), probes it with one small
 * GET of the bucket with this query (4 attempts, about a second), and hands it to *out. On
 * failure the store is destroyed through its vtable. */
int rr_remote_finish_open(struct rr_remote *r, const char *url, const char *probe_query,
			  struct rr_store **out);
/* Frees what rr_remote_init and the setters below made (not r itself). */
void rr_remote_free(struct rr_remote *r);

/* "bucket[/prefix]": the bucket (checked by valid, named `what` in the reason), and the
 * prefix with one '/' after it (or ""). */
int rr_remote_set_bucket(struct rr_remote *r, const char *rest,
			 int (*valid)(const char *name, size_t len), const char *what);
/* RESUME_RUN_S3_PART_SIZE, else RR_S3_PART_SIZE_DEFAULT. */
int rr_remote_set_part_size(struct rr_remote *r);
/* Splits an endpoint URL "scheme://host[:port][/]" into its parts (what: "S3 endpoint"). */
int rr_remote_parse_endpoint(const char *url, const char *what, char **scheme,
			     char **hostport);

int rr_remote_add_header(struct rr_remote_req *q, const char *name, const char *value);
/* The raw (unencoded) path of a key: "/bucket/prefix/key" or "/prefix/key". */
int rr_remote_raw_path(const struct rr_remote *r, const char *key, struct rr_buf *out);
/* The wire URL of q: the raw path encoded once (as SigV4 encodes it), then the query,
 * then extra_query (e.g. a SAS) when not NULL. */
int rr_remote_url(const struct rr_remote *r, const struct rr_remote_req *q,
		  const struct rr_buf *path, const char *extra_query, struct rr_buf *url);
/* The fields of p->http once the first n headers are set. */
void rr_remote_finish_request(struct rr_remote *r, const struct rr_remote_req *q,
			      struct rr_remote_signed *p, size_t n);
void rr_remote_signed_free(struct rr_remote_signed *p);
const char *rr_remote_what(const struct rr_remote_req *q);

/* Sends q until it succeeds, fails for good, or retries run out (or would pass the
 * deadline). resp (initialised by the caller) holds the last response. */
int rr_remote_send_policy(struct rr_remote *r, const struct rr_remote_req *q,
			  struct rr_http_response *resp, struct rr_retry *retry);
int rr_remote_send(struct rr_remote *r, const struct rr_remote_req *q,
		   struct rr_http_response *resp);
/* Runs every job to success; stops at the first failure that retries cannot fix. */
int rr_remote_run_jobs(struct rr_remote *r, struct rr_remote_job *jobs, size_t n);
void rr_remote_jobs_free(struct rr_remote_job *jobs, size_t n);
/* Waits out a backoff, in slices so that a cancel ends the wait. */
void rr_remote_sleep_ms(const struct rr_remote *r, int64_t ms);

/* Copies the version tag (ops->version_header) of resp into etag_out (may be NULL). */
int rr_remote_copy_etag(const struct rr_remote *r, const struct rr_http_response *resp,
			char *etag_out);
/* After a conditional write was sent again following an attempt of unknown outcome and
 * the retry found its precondition failed: success only if the object now holds exactly
 * our bytes. Returns 0 (etag_out filled), RR_EPRECOND (other bytes), RR_ENOENT (no
 * object), or the error that kept it from checking. */
int rr_remote_check_ours(struct rr_remote *r, const char *key, const void *data, size_t len,
			 char *etag_out);
/* RR_EPRECOND on a create-only write is RR_EEXIST. */
int rr_remote_precondition_rc(int rc, const struct rr_put_opts *opts);

/* The store calls every backend shares: a whole or ranged parallel GET, HEAD, DELETE. */
int rr_remote_get(struct rr_store *s, const char *key, struct rr_buf *out, char *etag_out);
int rr_remote_head(struct rr_store *s, const char *key, uint64_t *size_out);
int rr_remote_del(struct rr_store *s, const char *key);
/* del_if_old for backends with if_version_header: a HEAD for the object's Last-Modified and
 * version tag, then a DELETE conditional on that tag (the store refuses it, 412, if the
 * object was written since the HEAD). */
int rr_remote_del_if_old(struct rr_store *s, const char *key, int64_t not_after_ms);

#endif
