/* What one run holds in the store: its checkpoints (newest first), whether each is
 * committed (manifest valid and every chunk present), the chunks, and LATEST's hint.
 * Restore, ls, verify and gc all start from it; LATEST alone is never trusted. */
#ifndef RR_CATALOG_H
#define RR_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "rr/hash.h"
#include "rr/manifest.h"
#include "rr/marks.h"
#include "rr/store.h"

struct rr_catalog_entry {
	char name[256];
	uint64_t listed_size;         /* the manifest's size in the listing */
	int opened;                   /* its manifest was read (rr_catalog_load, _next) */
	struct rr_manifest *manifest; /* NULL when the manifest could not be read or parsed */
	int committed;                /* manifest valid and every chunk it names present */
	char problem[256];            /* why it is not committed, for log lines */
	/* Marks (rr/marks.h), from the same listing: suspect (the mark as read; it applies
	 * only to the manifest it names, rr_catalog_is_suspect), proven, and the newest
	 * restore lease's time (store clock, 0: none). */
	struct rr_suspect *suspect;
	int proven;
	int64_t reader_ms;
};

/* A mark's key in the listing, for retention (which deletes a deleted checkpoint's marks
 * with it). */
struct rr_catalog_mark {
	char name[256];
	char token[RR_READER_TOKEN_MAX]; /* a reader's, else "" */
	int kind;                        /* enum rr_key_mark_kind */
	int64_t mtime_unix_ms;
};

struct rr_catalog_chunk {
	char sha256[RR_SHA256_HEX_LEN + 1]; /* first: the array is sorted and searched by it */
	uint64_t size;                      /* stored bytes, from the listing */
	int64_t mtime_unix_ms;              /* when it was written, from the listing */
};

struct rr_catalog {
	char run_id[256];
	size_t n;
	/* rr_catalog_load: readable ones newest first, then unreadable ones. rr_catalog_list:
	 * newest first by name (step number), each group of names that do not order
	 * themselves ordered as rr_catalog_next opens it. */
	struct rr_catalog_entry *entries;
	size_t nchunks;
	struct rr_catalog_chunk *chunks; /* sorted by sha256, for rr_catalog_has_chunk */
	char latest[256];                      /* LATEST's checkpoint name, "" when none */
	size_t nmarks;
	struct rr_catalog_mark *marks;
	int has_parts;  /* the listing showed multi-node parts (checkpoints/<name>/parts/) */
	size_t key_failures, opened_ok; /* manifests the key did not open, and that opened */
	char key_why[512];
};

/* Lists and reads everything of run_id. On success *out is the caller's (destroy it).
 * Damaged manifests (empty, truncated, not a manifest, deleted meanwhile) do not fail the
 * load, each entry saying why; store errors do, as does a key that opens none of them. */
int rr_catalog_load(struct rr_store *s, const char *run_id, struct rr_catalog **out);

/* Lists run_id's checkpoints and chunks and reads LATEST, but no manifest: what a walk
 * from the newest (rr_catalog_next) needs, at a cost that does not grow with the number of
 * checkpoints. On success *out is the caller's (destroy it). */
int rr_catalog_list(struct rr_store *s, const char *run_id, struct rr_catalog **out);

/* The next entry newest first from *pos (start at 0), opening manifests only as far as the
 * order needs them. *out is NULL at the end. Returns 0, or a store error (as
 * rr_catalog_load's) with *out NULL. */
int rr_catalog_next(struct rr_catalog *c, struct rr_store *s, size_t *pos,
		    const struct rr_catalog_entry **out);
void rr_catalog_destroy(struct rr_catalog *c);

int rr_catalog_has_chunk(const struct rr_catalog *c, const char *sha256_hex);
/* Test hook (only the tests call it): the newest committed checkpoint, or NULL. */
const struct rr_catalog_entry *rr_catalog_newest(const struct rr_catalog *c);
/* 1 when e's opened manifest is the one its suspect mark was made for. */
int rr_catalog_is_suspect(const struct rr_catalog_entry *e);
/* Puts on name's entry a suspect mark read after the listing (another node made it while
 * this one restored), so that the catalog tells of it as if listed. Returns 0, RR_ENOENT
 * (no such entry) or RR_ENOMEM. */
int rr_catalog_set_suspect(struct rr_catalog *c, const char *name, const struct rr_suspect *m);
/* The newest committed, proven checkpoint that is not suspect, or NULL (opened entries
 * only: after rr_catalog_load). */
const struct rr_catalog_entry *rr_catalog_newest_proven(const struct rr_catalog *c);
/* The entry named name, or NULL. */
const struct rr_catalog_entry *rr_catalog_find(const struct rr_catalog *c, const char *name);

#endif
