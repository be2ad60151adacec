/* The object store interface: one table of function pointers, one backend per file
 * (storage/store_file.c now; S3 and GCS later). Keys are '/'-separated paths relative to
 * the store's root (the URL's path or prefix), e.g. "default/chunks/ab/ab12...". */
#ifndef RR_STORE_H
#define RR_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "rr/buf.h"

#define RR_ETAG_MAX 80 /* room for any backend's version tag, NUL included */

struct rr_store;

struct rr_put_opts {
	int if_none_match;      /* 1: create only; RR_EEXIST when the key exists */
	const char *if_match;   /* non-NULL: replace only if the current version tag equals
				 * this; RR_EPRECOND otherwise (RR_ENOENT when absent) */
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
	void (*destroy)(struct rr_store *s);
};

struct rr_store {
	const struct rr_store_vtable *vt;
	char *url; /* as given, for log lines (never holds secrets) */
};

/* Opens the store named by url ("file:///abs", "file://./rel", "s3://...", "gs://...").
 * On success *out is owned by the caller (rr_store_destroy). Returns RR_EINVAL for a URL
 * it cannot read, RR_EUNSUPPORTED for a scheme this build lacks, or the backend's error. */
int rr_store_open(const char *url, struct rr_store **out);
void rr_store_destroy(struct rr_store *s);

/* Opens a file:// store rooted at dir (created if missing). */
int rr_store_file_new(const char *dir, struct rr_store **out);

static inline int rr_store_put(struct rr_store *s, const char *key, const void *data,
			       size_t len, const struct rr_put_opts *opts, char *etag_out)
{
	return s->vt->put(s, key, data, len, opts, etag_out);
}
static inline int rr_store_get(struct rr_store *s, const char *key, struct rr_buf *out,
			       char *etag_out)
{
	return s->vt->get(s, key, out, etag_out);
}
static inline int rr_store_head(struct rr_store *s, const char *key, uint64_t *size_out)
{
	return s->vt->head(s, key, size_out);
}
static inline int rr_store_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb,
				void *ud)
{
	return s->vt->list(s, prefix, cb, ud);
}
static inline int rr_store_del(struct rr_store *s, const char *key)
{
	return s->vt->del(s, key);
}

#endif
