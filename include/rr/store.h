/* The object store interface: one table of function pointers, one backend per file
 * (storage/store/store_file.c, storage/store/store_s3.c). Keys are '/'-separated paths relative to
 * the store's root (the URL's path or prefix), e.g. "default/chunks/ab/ab12...". */
#ifndef RR_STORE_H
#define RR_STORE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "rr/buf.h"

#define RR_ETAG_MAX 80 /* room for any backend's version tag, NUL included */

struct rr_store;

struct rr_put_opts {
	int if_none_match;      /* 1: create only; RR_EEXIST when the key exists */
	const char *if_match;   /* non-NULL: replace only if the current version tag equals
				 * this; RR_EPRECOND otherwise (RR_ENOENT when absent) */
	const char *sha256_hex; /* lowercase hex SHA-256 of the data when the caller knows it
				 * (chunks are named by it): a backend that signs payloads uses
				 * it instead of hashing the data again */
};

struct rr_store_entry {
	const char *key;        /* full key, valid only during the callback */
	uint64_t size;
	int64_t mtime_unix_ms;  /* last modification, for garbage-collection grace periods */
};

/* Return 0 to go on listing, anything else stops the listing and is returned by list. */
typedef int (*rr_store_list_cb)(const struct rr_store_entry *e, void *ud);

struct rr_store_vtable {
	const char *scheme; /* "file", "s3", ... */
	/* Writes the whole object durably. etag_out (may be NULL) receives the new version
	 * tag. Returns 0, RR_EEXIST, RR_EPRECOND, RR_ENOENT (if_match on a missing key),
	 * RR_ENOSPC, RR_EIO... A failed put leaves any previous object untouched. */
	int (*put)(struct rr_store *s, const char *key, const void *data, size_t len,
		   const struct rr_put_opts *opts, char *etag_out);
	/* Reads the whole object into out (appending; out's ceiling bounds it; RR_ETOOBIG
	 * past it). etag_out (may be NULL) receives its version tag. RR_ENOENT if absent. */
	int (*get)(struct rr_store *s, const char *key, struct rr_buf *out, char *etag_out);
	/* 0 and the size if the key exists, RR_ENOENT if not. */
	int (*head)(struct rr_store *s, const char *key, uint64_t *size_out);
	/* Calls cb for every key that starts with prefix (no particular order). */
	int (*list)(struct rr_store *s, const char *prefix, rr_store_list_cb cb, void *ud);
	/* Deletes a key; deleting a missing key is not an error. */
	int (*del)(struct rr_store *s, const char *key);
	/* Deletes n keys, in batches where the backend can (may be NULL: then del, one by
	 * one). */
	int (*del_many)(struct rr_store *s, const char *const *keys, size_t n);
	/* Deletes key only if it was last written at or before not_after_ms (the store's
	 * clock, as list reports modification times), checked and deleted in one step, so that
	 * what a garbage collector decided from a listing never removes an object written again
	 * since. 0 (deleted, or absent), RR_EPRECOND (kept: written since). May be NULL: the
	 * backend has no such step. */
	int (*del_if_old)(struct rr_store *s, const char *key, int64_t not_after_ms);
	void (*destroy)(struct rr_store *s);
};

struct rr_store {
	const struct rr_store_vtable *vt;
	char *url; /* as given, for log lines (never holds secrets) */
	/* CLOCK_MONOTONIC ms by which a notice needs the store's work done, 0 for none:
	 * remote backends stop retrying when a retry could not finish before it. */
	_Atomic long long deadline_mono_ms;
	/* While *cancel is nonzero, remote backends end requests in flight (within ~100 ms)
	 * and send no more, failing with RR_ECANCELED: a routine persist on a slow link steps
	 * aside at once for a notice's checkpoint. NULL: never. */
	const atomic_int *_Atomic cancel;
	/* Set by rr_store_cancel: the store's work stops for good (the agent is leaving during
	 * its start-up restore); cancel then points at it. Callers that loop over many calls
	 * (restore) check it between them. */
	atomic_int stopped;
	struct rr_store *inner; /* a wrapper's backend (store_sealed.c), else NULL */
	/* The store's clock minus this machine's, from the Date of its latest answer
	 * (remote backends); clock_known 0 until one came: then the store keeps this
	 * machine's time (a file store's modification times do). */
	_Atomic long long clock_offset_ms;
	atomic_int clock_known;
};

/* Options for remote backends (all may be NULL/0 for the defaults). */
struct rr_store_opts {
	const char *s3_addressing;     /* "auto" (default), "path" or "virtual" */
	const char *s3_sse;            /* NULL, "AES256" or "aws:kms" */
	const char *s3_sse_kms_key_id; /* with "aws:kms": the key; NULL: the bucket's default */
	int gcs_hmac;                  /* gs://: SigV4 with HMAC keys instead of OAuth2 */
	const char *metadata_endpoint; /* gs://: where the metadata server's token comes from */
	const char *encryption_key_file; /* non-NULL: seal every object with this key */
	int existing;                  /* file://: open only a directory that exists (the
					* commands that read a store create nothing) */
};

/* Opens the store named by url ("file:///abs", "file://./rel", "s3://bucket/prefix",
 * "gs://..."). A remote store is probed once (a one-key listing), so a wrong bucket, secret
 * or endpoint is reported here. On success *out is owned by the caller (rr_store_destroy).
 * Returns RR_EINVAL for a URL or option it cannot read, RR_EUNSUPPORTED for a scheme this
 * build lacks, or the backend's error; rr_store_strerror(rc) then says why. */
int rr_store_open(const char *url, const struct rr_store_opts *opts, struct rr_store **out);
void rr_store_destroy(struct rr_store *s);

/* Stops the store's work for good: the agent is leaving (a signal during its start-up
 * restore). Safe to call from any thread while others use the store. */
void rr_store_cancel(struct rr_store *s);

/* Sets (or with 0 clears) the deadline remote backends bound their requests and retries
 * by: no request outlives it, and none is sent once it has passed. */
void rr_store_set_deadline(struct rr_store *s, long long deadline_mono_ms);

/* Sets (or with NULL clears) the flag that cancels this store's requests while nonzero
 * (see struct rr_store). The flag must outlive its use here: clear it before freeing it. */
void rr_store_set_cancel(struct rr_store *s, const atomic_int *flag);

/* The reason for the last failed store call on this thread when its backend gave one
 * (e.g. "S3 said 403 SignatureDoesNotMatch: ..."), else rr_strerror(rc). Static storage
 * per thread, valid until the next store call on the thread. */
const char *rr_store_strerror(int rc);
/* For backends: records why the current call fails with rc, and returns rc. */
int rr_store_fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Forgets the reason (each call below starts with it). */
void rr_store_clear_why(void);

/* Now by the store's clock, Unix ms: the time its listings' modification times are in, so
 * ages (gc's grace, a restore lease's) are judged the same however far this machine's
 * clock is off. */
int64_t rr_store_now_ms(const struct rr_store *s);
/* 1 once the store's answers told its time (rr_store_now_ms is then the store's own). */
int rr_store_clock_known(const struct rr_store *s);
/* For backends: records the store's time from an answer's Date header (RFC 7231
 * IMF-fixdate, one-second resolution); an unreadable one is ignored. */
void rr_store_observe_date(struct rr_store *s, const char *http_date);

/* The backend's del_if_old; RR_EUNSUPPORTED when it has none. */
int rr_store_del_if_old(struct rr_store *s, const char *key, int64_t not_after_ms);
/* 1 when the backend (beneath any wrapper) has del_if_old. */
int rr_store_has_del_if_old(const struct rr_store *s);

/* Deletes n keys with the backend's batch delete when it has one. */
int rr_store_del_many(struct rr_store *s, const char *const *keys, size_t n);

/* Opens a file:// store rooted at dir (created if missing). */
int rr_store_file_new(const char *dir, struct rr_store **out);

static inline int rr_store_put(struct rr_store *s, const char *key, const void *data,
			       size_t len, const struct rr_put_opts *opts, char *etag_out)
{
	rr_store_clear_why();
	return s->vt->put(s, key, data, len, opts, etag_out);
}
static inline int rr_store_get(struct rr_store *s, const char *key, struct rr_buf *out,
			       char *etag_out)
{
	rr_store_clear_why();
	return s->vt->get(s, key, out, etag_out);
}
static inline int rr_store_head(struct rr_store *s, const char *key, uint64_t *size_out)
{
	rr_store_clear_why();
	return s->vt->head(s, key, size_out);
}
static inline int rr_store_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb,
				void *ud)
{
	rr_store_clear_why();
	return s->vt->list(s, prefix, cb, ud);
}
static inline int rr_store_del(struct rr_store *s, const char *key)
{
	rr_store_clear_why();
	return s->vt->del(s, key);
}

#endif
