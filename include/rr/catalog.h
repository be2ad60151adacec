/* What one run holds in the store: its checkpoints (newest first), whether each is
 * committed (manifest valid and every chunk present), the chunks, and LATEST's hint.
 * Restore, ls, verify and gc all start from it; LATEST alone is never trusted. */
#ifndef RR_CATALOG_H
#define RR_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "rr/hash.h"
#include "rr/manifest.h"
#include "rr/store.h"

struct rr_catalog_entry {
	char name[256];
	struct rr_manifest *manifest; /* NULL when the manifest could not be read or parsed */
	int committed;                /* manifest valid and every chunk it names present */
	char problem[256];            /* why it is not committed, for log lines */
};

struct rr_catalog_chunk {
	char sha256[RR_SHA256_HEX_LEN + 1]; /* first: the array is sorted and searched by it */
	uint64_t size;                      /* stored bytes, from the listing */
	int64_t mtime_unix_ms;              /* when it was written, from the listing */
};

struct rr_catalog {
	size_t n;
	struct rr_catalog_entry *entries; /* readable ones newest first, then unreadable ones */
	size_t nchunks;
	struct rr_catalog_chunk *chunks; /* sorted by sha256, for rr_catalog_has_chunk */
	char latest[256];                      /* LATEST's checkpoint name, "" when none */
	int has_parts;  /* the listing showed multi-node parts (checkpoints/<name>/parts/) */
};

/* Lists and reads everything of run_id. On success *out is the caller's (destroy it).
 * Unreadable manifests do not fail the load; store errors do. */
int rr_catalog_load(struct rr_store *s, const char *run_id, struct rr_catalog **out);
void rr_catalog_destroy(struct rr_catalog *c);

int rr_catalog_has_chunk(const struct rr_catalog *c, const char *sha256_hex);
/* The newest committed checkpoint, or NULL. */
const struct rr_catalog_entry *rr_catalog_newest(const struct rr_catalog *c);
/* The entry named name, or NULL. */
const struct rr_catalog_entry *rr_catalog_find(const struct rr_catalog *c, const char *name);

#endif
