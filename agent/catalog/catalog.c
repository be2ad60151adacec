#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/catalog.h"
#include "rr/ckpt_order.h"
#include "rr/error.h"
#include "rr/layout.h"
#include "rr/log.h"
#include "rr/seal.h"

struct s_names {
	const char *run_id;
	struct rr_catalog *c;
	size_t cap;
};

static int s_grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 64;
	void *p = realloc(*arr, ncap * elem);
	if (!p)
		return RR_ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static int s_on_manifest(const struct rr_store_entry *e, void *ud)
{
	struct s_names *s = ud;
	char name[256];
	unsigned rank;
	int rc;

	if (rr_key_parse_part(e->key, s->run_id, name, sizeof(name), &rank))
		s->c->has_parts = 1;
	if (!rr_key_parse_manifest(e->key, s->run_id, name, sizeof(name)))
		return 0;
	rc = s_grow((void **)&s->c->entries, &s->cap, s->c->n, sizeof(*s->c->entries));
	if (rc)
		return rc;
	struct rr_catalog_entry *ce = &s->c->entries[s->c->n++];
	memset(ce, 0, sizeof(*ce));
	memcpy(ce->name, name, sizeof(name));
	return 0;
}

static int s_on_chunk(const struct rr_store_entry *e, void *ud)
{
	struct s_names *s = ud;
	const char *sha = rr_key_parse_chunk(e->key, s->run_id);
	int rc;

	if (!sha)
		return 0;
	rc = s_grow((void **)&s->c->chunks, &s->cap, s->c->nchunks, sizeof(*s->c->chunks));
	if (rc)
		return rc;
	struct rr_catalog_chunk *ch = &s->c->chunks[s->c->nchunks++];
	memcpy(ch->sha256, sha, RR_SHA256_HEX_LEN + 1);
	ch->size = e->size;
	ch->mtime_unix_ms = e->mtime_unix_ms;
	return 0;
}

static int s_cmp_chunk(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int s_cmp_entry(const void *pa, const void *pb)
{
	const struct rr_catalog_entry *a = pa, *b = pb;
	if (!a->manifest || !b->manifest) {
		if (a->manifest != b->manifest)
			return a->manifest ? -1 : 1;
		return strcmp(a->name, b->name);
	}
	/* newest first */
	return -rr_checkpoint_compare(a->manifest->checkpoint, a->manifest->committed_unix_ms,
				      b->manifest->checkpoint, b->manifest->committed_unix_ms);
}

/* Returns RR_EKEY (with the store's reason kept) when the manifest cannot be opened with the
 * key given (or was sealed and none was given), else 0: other problems are the entry's. */
static int s_check_entry(struct rr_store *s, const char *run_id, struct rr_catalog *c,
			 struct rr_catalog_entry *ce)
{
	char key[RR_KEY_MAX], why[200] = "";
	struct rr_buf b;
	int rc, key_rc = 0;

	rr_buf_init(&b, RR_MANIFEST_MAX_BYTES);
	rc = rr_key_manifest(key, run_id, ce->name);
	if (!rc)
		rc = rr_store_get(s, key, &b, NULL);
	if (!rc && rr_seal_is_sealed(b.data, b.len))
		rc = rr_store_fail(RR_EKEY, "the store's objects are encrypted: give the key "
				   "with --encryption-key-file");
	if (rc) {
		snprintf(ce->problem, sizeof(ce->problem), "manifest unreadable: %s",
			 rr_store_strerror(rc));
		key_rc = rc == RR_EKEY ? rc : 0;
		goto out;
	}
	rc = rr_manifest_parse((const char *)b.data, b.len, &ce->manifest, why, sizeof(why));
	if (rc) {
		snprintf(ce->problem, sizeof(ce->problem), "manifest rejected: %s", why);
		goto out;
	}
	if (strcmp(ce->manifest->checkpoint, ce->name) != 0 ||
	    strcmp(ce->manifest->run_id, run_id) != 0) {
		snprintf(ce->problem, sizeof(ce->problem),
			 "manifest names another checkpoint (%s/%s)", ce->manifest->run_id,
			 ce->manifest->checkpoint);
		rr_manifest_destroy(ce->manifest);
		ce->manifest = NULL;
		goto out;
	}
	ce->committed = 1;
	for (size_t f = 0; f < ce->manifest->nfiles && ce->committed; f++) {
		const struct rr_file_entry *fe = &ce->manifest->files[f];
		for (size_t g = 0; g < fe->nsegs && ce->committed; g++)
			for (size_t k = 0; k < fe->segs[g].nchunks; k++)
				if (!rr_catalog_has_chunk(c, fe->segs[g].chunks[k].sha256)) {
					snprintf(ce->problem, sizeof(ce->problem),
						 "chunk %.16s... of %s is missing",
						 fe->segs[g].chunks[k].sha256, fe->path);
					ce->committed = 0;
					break;
				}
	}
out:
	rr_buf_free(&b);
	return key_rc;
}

int rr_catalog_load(struct rr_store *s, const char *run_id, struct rr_catalog **out)
{
	struct rr_catalog *c = calloc(1, sizeof(*c));
	struct s_names names = { .run_id = run_id, .c = c };
	char key[RR_KEY_MAX];
	struct rr_buf b;
	int rc;

	rr_buf_init(&b, 64 * 1024);
	if (!c)
		return RR_ENOMEM;
	rc = rr_key_checkpoints_prefix(key, run_id);
	if (!rc)
		rc = rr_store_list(s, key, s_on_manifest, &names);
	if (rc)
		goto out;
	names.cap = 0;
	rc = rr_key_chunks_prefix(key, run_id);
	if (!rc)
		rc = rr_store_list(s, key, s_on_chunk, &names);
	if (rc)
		goto out;
	if (c->nchunks)
		qsort(c->chunks, c->nchunks, sizeof(*c->chunks), s_cmp_chunk);
	/* A key that opens no manifest at all is the wrong key (or encryption is on for a
	 * clear store, or off for an encrypted one): an error, not a run of damaged
	 * checkpoints to fall back through. One manifest that does not open beside others
	 * that do is damage. */
	size_t key_failures = 0;
	char key_why[512] = "";
	for (size_t i = 0; i < c->n; i++)
		if (s_check_entry(s, run_id, c, &c->entries[i]) == RR_EKEY && !key_failures++)
			snprintf(key_why, sizeof(key_why), "%s", rr_store_strerror(RR_EKEY));
	if (c->n && key_failures == c->n) {
		rc = rr_store_fail(RR_EKEY, "%s", key_why);
		goto out;
	}
	if (c->n)
		qsort(c->entries, c->n, sizeof(*c->entries), s_cmp_entry);

	rc = rr_key_latest(key, run_id);
	if (!rc && rr_store_get(s, key, &b, NULL) == 0 &&
	    rr_latest_parse((const char *)b.data, b.len, c->latest, sizeof(c->latest)) != 0)
		rr_warn("LATEST of run %s is unreadable; listing checkpoints instead", run_id);
	rc = 0;
out:
	rr_buf_free(&b);
	if (rc) {
		rr_catalog_destroy(c);
		c = NULL;
	}
	*out = c;
	return rc;
}

void rr_catalog_destroy(struct rr_catalog *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		rr_manifest_destroy(c->entries[i].manifest);
	free(c->entries);
	free(c->chunks);
	free(c);
}

int rr_catalog_has_chunk(const struct rr_catalog *c, const char *sha)
{
	return c->nchunks && bsearch(sha, c->chunks, c->nchunks, sizeof(*c->chunks),
				     s_cmp_chunk) != NULL;
}

const struct rr_catalog_entry *rr_catalog_newest(const struct rr_catalog *c)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->entries[i].committed)
			return &c->entries[i];
	return NULL;
}

const struct rr_catalog_entry *rr_catalog_find(const struct rr_catalog *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->entries[i].name, name) == 0)
			return &c->entries[i];
	return NULL;
}
