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
	size_t cap, mark_cap;
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

static int s_on_mark(struct s_names *s, const struct rr_store_entry *e, int kind,
		     const char *name, const char *token)
{
	struct rr_catalog_mark *m;
	int rc = s_grow((void **)&s->c->marks, &s->mark_cap, s->c->nmarks, sizeof(*s->c->marks));

	if (rc)
		return rc;
	m = &s->c->marks[s->c->nmarks++];
	snprintf(m->name, sizeof(m->name), "%s", name);
	snprintf(m->token, sizeof(m->token), "%s", token);
	m->kind = kind;
	m->mtime_unix_ms = e->mtime_unix_ms;
	return 0;
}

static int s_on_manifest(const struct rr_store_entry *e, void *ud)
{
	struct s_names *s = ud;
	char name[256], token[RR_READER_TOKEN_MAX];
	unsigned rank;
	int rc, kind;

	if (rr_key_parse_part(e->key, s->run_id, name, sizeof(name), &rank))
		s->c->has_parts = 1;
	kind = (int)rr_key_parse_mark(e->key, s->run_id, name, sizeof(name), token,
				      sizeof(token));
	if (kind != RR_KEY_NOT_MARK)
		return s_on_mark(s, e, kind, name, token);
	if (!rr_key_parse_manifest(e->key, s->run_id, name, sizeof(name)))
		return 0;
	rc = s_grow((void **)&s->c->entries, &s->cap, s->c->n, sizeof(*s->c->entries));
	if (rc)
		return rc;
	struct rr_catalog_entry *ce = &s->c->entries[s->c->n++];
	memset(ce, 0, sizeof(*ce));
	memcpy(ce->name, name, sizeof(name));
	ce->listed_size = e->size;
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

/* Reads and checks one manifest. Returns 0 when the entry is settled (committed, or with
 * its problem said: damaged, gone meanwhile); RR_EKEY (the store's reason kept) when it
 * cannot be opened with the key given (or was sealed and none was given); or the store's
 * error when the store could not answer (after its retries): that is no damage, and the
 * caller cannot order the run without it. A completed answer that is wrong (empty,
 * truncated, not a manifest) is damage at once: nothing is retried for it. */
static int s_check_entry(struct rr_store *s, const char *run_id, struct rr_catalog *c,
			 struct rr_catalog_entry *ce)
{
	char key[RR_KEY_MAX], why[200] = "";
	struct rr_buf b;
	int rc, out_rc = 0;

	ce->opened = 1;
	if (ce->listed_size == 0) {
		/* An aborted upload on a store that is not atomic; some answer a read of an
		 * empty object with a length they never send, which would only be retried. */
		snprintf(ce->problem, sizeof(ce->problem), "manifest is empty (0 bytes)");
		return 0;
	}
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
		/* Gone since the listing (another machine's retention), or too big to be one:
		 * the entry's problem. Anything else: the store's. */
		out_rc = rc == RR_ENOENT || rc == RR_ETOOBIG || rc == RR_ECORRUPT ? 0 : rc;
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
	return out_rc;
}

/* Newest first by what the names alone tell (a step number, then its value); the entries
 * the names cannot order (the same step, or none) form one group, ordered once opened. */
static int s_cmp_name(const void *pa, const void *pb)
{
	const struct rr_catalog_entry *a = pa, *b = pb;
	uint64_t sa = 0, sb = 0;
	int ha = rr_checkpoint_step(a->name, &sa), hb = rr_checkpoint_step(b->name, &sb);

	if (ha != hb)
		return ha ? -1 : 1;
	if (sa != sb)
		return sa > sb ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int s_same_group(const struct rr_catalog_entry *a, const struct rr_catalog_entry *b)
{
	uint64_t sa = 0, sb = 0;
	int ha = rr_checkpoint_step(a->name, &sa), hb = rr_checkpoint_step(b->name, &sb);

	return ha == hb && sa == sb;
}

/* Puts the listed marks on their entries; suspect marks are read (they are few: a run
 * gets one only after its trainer failed repeatedly). A mark that cannot be read is
 * treated as none, with a warning: restore then tries that checkpoint as before. */
static int s_apply_marks(struct rr_store *s, struct rr_catalog *c)
{
	for (size_t i = 0; i < c->nmarks; i++) {
		const struct rr_catalog_mark *m = &c->marks[i];
		struct rr_catalog_entry *e = (struct rr_catalog_entry *)rr_catalog_find(c, m->name);
		struct rr_suspect sus;
		int rc;

		if (!e)
			continue;
		if (m->kind == RR_KEY_PROVEN) {
			e->proven = 1;
		} else if (m->kind == RR_KEY_READER) {
			if (m->mtime_unix_ms > e->reader_ms)
				e->reader_ms = m->mtime_unix_ms;
		} else if (m->kind == RR_KEY_SUSPECT && !e->suspect) {
			rc = rr_mark_read_suspect(s, c->run_id, m->name, &sus);
			if (rc == RR_ENOENT)
				continue; /* cleared since the listing */
			if (rc == RR_ECORRUPT) {
				rr_warn("the suspect mark of checkpoint %s is unreadable; ignored",
					m->name);
				continue;
			}
			if (rc)
				return rc;
			e->suspect = malloc(sizeof(*e->suspect));
			if (!e->suspect)
				return RR_ENOMEM;
			*e->suspect = sus;
		}
	}
	return 0;
}

int rr_catalog_list(struct rr_store *s, const char *run_id, struct rr_catalog **out)
{
	struct rr_catalog *c = calloc(1, sizeof(*c));
	struct s_names names = { .run_id = run_id, .c = c };
	char key[RR_KEY_MAX];
	struct rr_buf b;
	int rc;

	*out = NULL;
	if (!c)
		return RR_ENOMEM;
	rr_buf_init(&b, 64 * 1024);
	snprintf(c->run_id, sizeof(c->run_id), "%s", run_id);
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
	if (c->n)
		qsort(c->entries, c->n, sizeof(*c->entries), s_cmp_name);
	rc = s_apply_marks(s, c);
	if (rc)
		goto out;
	rc = rr_key_latest(key, run_id);
	if (!rc && rr_store_get(s, key, &b, NULL) == 0 &&
	    rr_latest_parse((const char *)b.data, b.len, c->latest, sizeof(c->latest)) != 0)
		rr_warn("LATEST of run %s is unreadable; listing checkpoints instead", run_id);
	rc = 0;
out:
	rr_buf_free(&b);
	if (rc)
		rr_catalog_destroy(c);
	else
		*out = c;
	return rc;
}

/* Opens the entries of [from, to) and orders them newest first, unreadable ones last.
 * Returns 0, or the store's error (RR_EKEY only once no entry opened at all). */
static int s_open_range(struct rr_catalog *c, struct rr_store *s, size_t from, size_t to)
{
	int rc;

	for (size_t i = from; i < to; i++) {
		if (c->entries[i].opened)
			continue;
		rc = s_check_entry(s, c->run_id, c, &c->entries[i]);
		if (rc == RR_EKEY) {
			/* Damage unless no entry opens at all (s_key_verdict): the first reason
			 * is kept for that verdict. */
			if (!c->key_failures++)
				snprintf(c->key_why, sizeof(c->key_why), "%s",
					 rr_store_strerror(RR_EKEY));
		} else if (rc) {
			return rc;
		} else {
			c->opened_ok += c->entries[i].manifest != NULL;
		}
	}
	if (to - from > 1)
		qsort(c->entries + from, to - from, sizeof(*c->entries), s_cmp_entry);
	return 0;
}

/* A key that opens no manifest at all is the wrong key (or encryption is on for a clear
 * store, or off for an encrypted one): an error, not a run of damaged checkpoints to fall
 * back through. One manifest that does not open beside others that do is damage. */
static int s_key_verdict(const struct rr_catalog *c)
{
	if (c->key_failures && !c->opened_ok)
		return rr_store_fail(RR_EKEY, "%s", c->key_why);
	return 0;
}

int rr_catalog_load(struct rr_store *s, const char *run_id, struct rr_catalog **out)
{
	struct rr_catalog *c = NULL;
	int rc = rr_catalog_list(s, run_id, &c);

	*out = NULL;
	if (rc)
		return rc;
	/* Every manifest, in the walk's own order (rr_catalog_next), so that a checkpoint
	 * whose manifest is unreadable stands where its name puts it. */
	for (size_t pos = 0; !rc && pos < c->n;) {
		const struct rr_catalog_entry *e;
		rc = rr_catalog_next(c, s, &pos, &e);
	}
	if (!rc)
		rc = s_key_verdict(c);
	if (rc) {
		rr_catalog_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

int rr_catalog_next(struct rr_catalog *c, struct rr_store *s, size_t *pos,
		    const struct rr_catalog_entry **out)
{
	int rc;

	*out = NULL;
	while (*pos < c->n) {
		size_t i = *pos, end = i + 1;
		while (end < c->n && s_same_group(&c->entries[i], &c->entries[end]))
			end++;
		if (!c->entries[i].opened) {
			rc = s_open_range(c, s, i, end);
			if (rc)
				return rc;
		}
		(*pos)++;
		*out = &c->entries[i];
		return 0;
	}
	return s_key_verdict(c);
}

void rr_catalog_destroy(struct rr_catalog *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		rr_manifest_destroy(c->entries[i].manifest);
		free(c->entries[i].suspect);
	}
	free(c->entries);
	free(c->marks);
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

int rr_catalog_is_suspect(const struct rr_catalog_entry *e)
{
	return e->suspect && e->manifest &&
	       e->manifest->committed_unix_ms == e->suspect->for_committed_ms;
}

int rr_catalog_set_suspect(struct rr_catalog *c, const char *name, const struct rr_suspect *m)
{
	struct rr_catalog_entry *e = (struct rr_catalog_entry *)rr_catalog_find(c, name);

	if (!e)
		return RR_ENOENT;
	if (!e->suspect && !(e->suspect = malloc(sizeof(*e->suspect))))
		return RR_ENOMEM;
	*e->suspect = *m;
	return 0;
}

const struct rr_catalog_entry *rr_catalog_newest_proven(const struct rr_catalog *c)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->entries[i].committed && c->entries[i].proven &&
		    !rr_catalog_is_suspect(&c->entries[i]))
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
