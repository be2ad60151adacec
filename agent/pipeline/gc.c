#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/catalog.h"
#include "rr/clock.h"
#include "rr/error.h"
#include "rr/gc.h"
#include "rr/layout.h"
#include "rr/marks.h"
#include "rr/parts.h"
#include "rr/log.h"

struct s_sweep {
	char (*live)[RR_SHA256_HEX_LEN + 1]; /* sorted */
	size_t nlive;
	int64_t cutoff_ms;
	struct rr_gc_stats *stats;
	/* Deleting while listing is not safe on every backend: collect first. */
	char (*doomed)[RR_SHA256_HEX_LEN + 1];
	uint64_t *doomed_size;
	size_t ndoomed, cap;
};

static int s_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* A restore's lease still counts (rr/marks.h). */
static int s_leased(int64_t lease_ms, int64_t now_ms)
{
	return lease_ms && lease_ms > now_ms - RR_READER_LEASE_MS;
}

/* Marks one chunk of the catalog's listing for deletion when no remaining manifest names it
 * and it is older than the grace period. */
static int s_consider(struct s_sweep *w, const struct rr_catalog_chunk *ch)
{
	if (bsearch(ch->sha256, w->live, w->nlive, sizeof(*w->live), s_cmp))
		return 0;
	if (ch->mtime_unix_ms > w->cutoff_ms) {
		w->stats->chunks_young++;
		return 0;
	}
	if (w->ndoomed == w->cap) {
		size_t ncap = w->cap ? w->cap * 2 : 256;
		void *a = realloc(w->doomed, ncap * sizeof(*w->doomed));
		if (a)
			w->doomed = a;
		void *b = a ? realloc(w->doomed_size, ncap * sizeof(*w->doomed_size)) : NULL;
		if (!a || !b)
			return RR_ENOMEM;
		w->doomed_size = b;
		w->cap = ncap;
	}
	memcpy(w->doomed[w->ndoomed], ch->sha256, RR_SHA256_HEX_LEN + 1);
	w->doomed_size[w->ndoomed++] = ch->size;
	return 0;
}

/* Adds the chunk digests m names to w->live (unsorted). */
static int s_add_live(struct s_sweep *w, const struct rr_manifest *m, size_t *cap)
{
	for (size_t f = 0; f < m->nfiles; f++)
		for (size_t g = 0; g < m->files[f].nsegs; g++)
			for (size_t k = 0; k < m->files[f].segs[g].nchunks; k++) {
				if (w->nlive == *cap) {
					size_t n = *cap ? *cap * 2 : 1024;
					void *p = realloc(w->live, n * sizeof(*w->live));
					if (!p)
						return RR_ENOMEM;
					w->live = p;
					*cap = n;
				}
				memcpy(w->live[w->nlive++], m->files[f].segs[g].chunks[k].sha256,
				       RR_SHA256_HEX_LEN + 1);
			}
	return 0;
}

/* Collects the chunk digests of every manifest that stays, and of every part no commit
 * names yet (multi-node: its last node may still commit it, naming them). */
static int s_live_chunks(const struct rr_catalog *c, const unsigned char *doomed,
			 const struct rr_parts_pending *pending, struct s_sweep *w)
{
	size_t cap = 0;
	int rc = 0;

	for (size_t i = 0; !rc && i < c->n; i++)
		if (!doomed[i] && c->entries[i].manifest)
			rc = s_add_live(w, c->entries[i].manifest, &cap);
	for (size_t i = 0; !rc && i < pending->n; i++)
		rc = s_add_live(w, pending->parts[i], &cap);
	if (!rc && w->nlive)
		qsort(w->live, w->nlive, sizeof(*w->live), s_cmp);
	return rc;
}

struct s_appeared {
	const struct rr_catalog *c;
	const struct rr_parts_pending *pending;
	const char *run_id;
	const unsigned char *doomed;
	int64_t now_ms;
	char name[256];
};

static int s_on_manifest(const struct rr_store_entry *e, void *ud)
{
	struct s_appeared *a = ud;
	const struct rr_catalog_entry *ce;
	char name[256], token[RR_READER_TOKEN_MAX];

	/* A restore that took its lease on a doomed checkpoint before its manifest went,
	 * and so may have read that manifest: its chunks stay this time. */
	if (rr_key_parse_mark(e->key, a->run_id, name, sizeof(name), token, sizeof(token)) ==
		    RR_KEY_READER &&
	    (ce = rr_catalog_find(a->c, name)) && a->doomed[ce - a->c->entries] &&
	    s_leased(e->mtime_unix_ms, a->now_ms)) {
		memcpy(a->name, name, sizeof(name));
		return 1;
	}
	unsigned rank;
	/* A part stored since (multi-node): its chunks were not counted live. */
	if (rr_key_parse_part(e->key, a->run_id, name, sizeof(name), &rank) &&
	    !rr_catalog_find(a->c, name) && !rr_parts_pending_has(a->pending, e->key)) {
		memcpy(a->name, name, sizeof(name));
		return 1;
	}
	if (!rr_key_parse_manifest(e->key, a->run_id, name, sizeof(name)) ||
	    rr_catalog_find(a->c, name))
		return 0;
	memcpy(a->name, name, sizeof(name));
	return 1; /* one is enough */
}

/* Another writer may commit a checkpoint (or store a part of one) after the catalog was
 * read; its manifest can name chunks that looked unreferenced (and, deduplicated, old).
 * Listing the manifests again after the chunks closes that window: such a run deletes no
 * chunk, the next one decides with the manifest in view. Returns 1 and the name when one
 * appeared, 0, or an error. */
static int s_manifest_appeared(struct rr_store *s, const char *run_id,
			       const struct rr_catalog *c, const struct rr_parts_pending *pending,
			       const unsigned char *doomed, int64_t now_ms, char *name,
			       size_t cap)
{
	struct s_appeared a = { .c = c, .pending = pending, .run_id = run_id, .doomed = doomed,
				.now_ms = now_ms };
	char key[RR_KEY_MAX];
	int rc = rr_key_checkpoints_prefix(key, run_id);

	if (!rc)
		rc = rr_store_list(s, key, s_on_manifest, &a);
	if (rc == 1)
		snprintf(name, cap, "%s", a.name);
	return rc;
}

#define S_DELETE_BATCH 1000

/* A persist elsewhere may write a doomed chunk again (renewing an old chunk it reuses:
 * struct s_known in persist.c) and name it in a manifest after s_manifest_appeared looked.
 * Where the store can check a key's age and delete it in one step (a file store, under the
 * key's lock), each chunk goes only if it was not written since the listing, which closes
 * that window. RR_EUNSUPPORTED, before deleting anything, where it cannot. */
static int s_delete_chunks_if_old(struct rr_store *s, const char *run_id,
				  const struct s_sweep *w, struct rr_gc_stats *stats)
{
	char key[RR_KEY_MAX];
	int rc = 0;

	for (size_t i = 0; !rc && i < w->ndoomed; i++) {
		rc = rr_key_chunk(key, run_id, w->doomed[i]);
		if (!rc)
			rc = rr_store_del_if_old(s, key, w->cutoff_ms);
		if (rc == RR_EPRECOND) {
			stats->chunks_young++; /* written again since the listing */
			rc = 0;
		} else if (!rc) {
			stats->chunks_deleted++;
			stats->bytes_freed += w->doomed_size[i];
		}
	}
	return rc;
}

/* Elsewhere in batches (one request per 1000 on S3), listing the manifests again before each
 * batch after the first: that narrows the window to one batch, and a persist that renewed a
 * chunk checks after its manifest that the chunk is still there (persist.c). */
static int s_delete_chunks_batched(struct rr_store *s, const char *run_id,
				   const struct rr_catalog *c,
				   const struct rr_parts_pending *pending,
				   const unsigned char *doomed, int64_t now_ms,
				   const struct s_sweep *w, struct rr_gc_stats *stats)
{
	char (*keys)[RR_KEY_MAX] = malloc(S_DELETE_BATCH * sizeof(*keys));
	const char *ptrs[S_DELETE_BATCH];
	char name[256];
	size_t i, k, n;
	int rc = keys ? 0 : RR_ENOMEM;

	for (i = 0; !rc && i < w->ndoomed; i += n) {
		n = w->ndoomed - i < S_DELETE_BATCH ? w->ndoomed - i : S_DELETE_BATCH;
		if (i > 0 && (rc = s_manifest_appeared(s, run_id, c, pending, doomed, now_ms,
						       name, sizeof(name))) == 1) {
			rr_info("retention: checkpoint %s appeared meanwhile (another machine); the "
				"other %zu chunks are not deleted this time", name, w->ndoomed - i);
			stats->chunks_young += w->ndoomed - i;
			rc = 0;
			break;
		}
		for (k = 0; !rc && k < n; k++) {
			rc = rr_key_chunk(keys[k], run_id, w->doomed[i + k]);
			ptrs[k] = keys[k];
		}
		if (!rc)
			rc = rr_store_del_many(s, ptrs, n);
		for (k = 0; !rc && k < n; k++) {
			stats->chunks_deleted++;
			stats->bytes_freed += w->doomed_size[i + k];
		}
	}
	free(keys);
	return rc;
}

/* Deletes the doomed checkpoints' manifests, in batches where the store can (a checkpoint is
 * gone once its manifest is; its chunks follow). */
static int s_delete_manifests(struct rr_store *s, const char *run_id, const struct rr_catalog *c,
			      const unsigned char *doomed, struct rr_gc_stats *stats)
{
	char (*keys)[RR_KEY_MAX] = malloc(S_DELETE_BATCH * sizeof(*keys));
	const char *ptrs[S_DELETE_BATCH], *names[S_DELETE_BATCH];
	size_t i = 0, n;
	int rc = keys ? 0 : RR_ENOMEM;

	while (!rc && i < c->n) {
		for (n = 0; !rc && i < c->n && n < S_DELETE_BATCH; i++) {
			if (!doomed[i])
				continue;
			rc = rr_key_manifest(keys[n], run_id, c->entries[i].name);
			names[n] = c->entries[i].name;
			ptrs[n] = keys[n];
			n++;
		}
		if (!rc && n)
			rc = rr_store_del_many(s, ptrs, n);
		if (!rc && n > 3)
			rr_info("retention: deleted %zu checkpoints, %s to %s", n, names[n - 1],
				names[0]);
		for (size_t k = 0; !rc && k < n; k++) {
			stats->checkpoints_deleted++;
			if (n <= 3)
				rr_info("retention: deleted checkpoint %s", names[k]);
		}
	}
	free(keys);
	return rc;
}

struct s_due {
	const char *run_id;
	size_t manifests;
	int parts;
};

static int s_on_due(const struct rr_store_entry *e, void *ud)
{
	struct s_due *d = ud;
	char name[256];
	unsigned rank;

	if (rr_key_parse_manifest(e->key, d->run_id, name, sizeof(name)))
		d->manifests++;
	else if (rr_key_parse_part(e->key, d->run_id, name, sizeof(name), &rank))
		d->parts = 1;
	return 0;
}

int rr_gc_due(struct rr_store *s, const char *run_id, unsigned keep)
{
	struct s_due d = { .run_id = run_id };
	char key[RR_KEY_MAX];
	int rc = rr_key_checkpoints_prefix(key, run_id);

	if (!rc)
		rc = rr_store_list(s, key, s_on_due, &d);
	return rc || d.parts || d.manifests > (keep < 1 ? 1 : keep);
}

/* The checkpoints keep-every keeps: of those committed within keep_for of now, the oldest
 * of each period. Entries are newest first: one is its period's oldest when the next
 * eligible one (older) lies in another period. */
static void s_keep_periods(const struct rr_catalog *c, const struct rr_gc_policy *pol,
			   int64_t now_ms, unsigned char *keep)
{
	size_t prev = SIZE_MAX;

	if (pol->keep_every_ms <= 0)
		return;
	for (size_t i = c->n; i-- > 0;) {
		const struct rr_catalog_entry *e = &c->entries[i];
		int64_t t = e->manifest ? e->manifest->committed_unix_ms : 0;

		if (!e->committed || rr_catalog_is_suspect(e) ||
		    (pol->keep_for_ms > 0 && t < now_ms - pol->keep_for_ms))
			continue;
		/* Walking oldest first: the first of each period is kept. */
		if (prev == SIZE_MAX || c->entries[prev].manifest->committed_unix_ms /
						pol->keep_every_ms != t / pol->keep_every_ms)
			keep[i] = 1;
		prev = i;
	}
}

/* Decides which checkpoints go (doomed[i] = 1). Returns how many manifests could not be
 * read (never deleted). */
static size_t s_plan(const struct rr_catalog *c, const struct rr_gc_policy *pol, int64_t now_ms,
		     unsigned char *doomed, unsigned char *keep)
{
	const struct rr_catalog_entry *proven = rr_catalog_newest_proven(c);
	size_t kept = 0, unreadable = 0;
	unsigned n = pol->keep < 1 ? 1 : pol->keep;
	int seen_committed = 0;

	s_keep_periods(c, pol, now_ms, keep);
	/* Entries are newest first, unreadable manifests last. */
	for (size_t i = 0; i < c->n; i++) {
		const struct rr_catalog_entry *e = &c->entries[i];
		if (!e->manifest) {
			unreadable++;
			continue;
		}
		if (e->committed) {
			seen_committed = 1;
			/* A suspect checkpoint is not one of the N: the one restored instead
			 * must stay, and the suspect one is not deleted for being suspect. */
			if (kept < n && rr_catalog_is_suspect(e))
				continue;
			if (kept < n) {
				kept++;
				continue;
			}
		}
		/* Uncommitted and newer than every committed one: maybe still uploading. */
		if (!seen_committed || keep[i] || e == proven || s_leased(e->reader_ms, now_ms))
			continue;
		doomed[i] = 1;
	}
	return unreadable;
}

/* The marks of deleted checkpoints go with them; a mark whose checkpoint is gone goes once
 * past the grace period (a suspect mark may briefly outlive its manifest while the name is
 * committed again, see persist.c). A restore's lease stays until it expires, then goes. */
static int s_delete_marks(struct rr_store *s, const struct rr_catalog *c,
			  const unsigned char *doomed, int64_t now_ms, int64_t grace_ms)
{
	char key[RR_KEY_MAX];
	int rc = 0;

	for (size_t i = 0; !rc && i < c->nmarks; i++) {
		const struct rr_catalog_mark *m = &c->marks[i];
		const struct rr_catalog_entry *e = rr_catalog_find(c, m->name);
		int leased = m->kind == RR_KEY_READER && s_leased(m->mtime_unix_ms, now_ms);
		int go = e ? (doomed[e - c->entries] || m->kind == RR_KEY_READER) && !leased
			   : m->mtime_unix_ms < now_ms - grace_ms && !leased;
		if (!go)
			continue;
		if (m->kind == RR_KEY_READER)
			rc = rr_key_reader(key, c->run_id, m->name, m->token);
		else
			rc = rr_key_mark(key, c->run_id, m->name,
					 m->kind == RR_KEY_SUSPECT ? "suspect" : "proven");
		if (!rc)
			rc = rr_store_del(s, key);
	}
	return rc;
}

/* A restore may still read a checkpoint whose manifest is gone (it read the manifest just
 * before): while its lease lasts, no chunk is deleted. */
static const char *s_orphan_lease(const struct rr_catalog *c, int64_t now_ms)
{
	for (size_t i = 0; i < c->nmarks; i++)
		if (c->marks[i].kind == RR_KEY_READER && !rr_catalog_find(c, c->marks[i].name) &&
		    s_leased(c->marks[i].mtime_unix_ms, now_ms))
			return c->marks[i].name;
	return NULL;
}

int rr_gc_run(struct rr_store *s, const char *run_id, unsigned keep, int64_t grace_ms,
	      struct rr_gc_stats *stats)
{
	struct rr_gc_policy pol = { .keep = keep, .grace_ms = grace_ms };

	return rr_gc_run_policy(s, run_id, &pol, stats);
}

int rr_gc_run_policy(struct rr_store *s, const char *run_id, const struct rr_gc_policy *pol,
		     struct rr_gc_stats *stats)
{
	struct rr_catalog *c = NULL;
	struct s_sweep w = { .stats = stats };
	struct rr_parts_pending pending = { 0 };
	unsigned char *doomed = NULL;
	size_t unreadable;
	const char *leased;
	int64_t now_ms;
	int rc;

	memset(stats, 0, sizeof(*stats));
	rc = rr_catalog_load(s, run_id, &c);
	if (rc)
		return rc;
	/* After the listing: its modification times are in the store's clock, and so is
	 * this, whatever this machine's clock says. */
	now_ms = rr_store_now_ms(s);
	doomed = calloc(c->n ? 2 * c->n : 1, 1);
	if (!doomed) {
		rc = RR_ENOMEM;
		goto out;
	}
	unreadable = s_plan(c, pol, now_ms, doomed, doomed + c->n);
	rc = s_delete_manifests(s, run_id, c, doomed, stats);
	if (!rc)
		rc = s_delete_marks(s, c, doomed, now_ms, pol->grace_ms);
	if (rc)
		goto out;
	if (unreadable) {
		rr_warn("%zu manifest(s) of run %s could not be read; no chunk is deleted until "
			"they are removed or readable", unreadable, run_id);
		goto out;
	}
	if ((leased = s_orphan_lease(c, now_ms))) {
		rr_info("retention: a restore still reads checkpoint %s; no chunk is deleted this "
			"time", leased);
		goto out;
	}

	if (c->has_parts)
		rc = rr_parts_pending(s, run_id, &pending);
	if (!rc)
		rc = s_live_chunks(c, doomed, &pending, &w);
	if (rc)
		goto out;
	/* The catalog's listing of the chunks came after its listing of the manifests, and
	 * s_manifest_appeared lists them again after it: what is decided from it is safe. */
	w.cutoff_ms = now_ms - pol->grace_ms;
	for (size_t i = 0; !rc && i < c->nchunks; i++)
		rc = s_consider(&w, &c->chunks[i]);
	if (!rc && w.ndoomed) {
		char name[256];
		rc = s_manifest_appeared(s, run_id, c, &pending, doomed, now_ms, name,
					 sizeof(name));
		if (rc == 1) {
			rr_info("retention: checkpoint %s appeared or is being restored meanwhile "
				"(another machine); no chunk is deleted this time", name);
			stats->chunks_young += w.ndoomed;
			rc = 0;
			goto out;
		}
	}
	if (!rc)
		rc = s_delete_chunks_if_old(s, run_id, &w, stats);
	if (rc == RR_EUNSUPPORTED)
		rc = s_delete_chunks_batched(s, run_id, c, &pending, doomed, now_ms, &w, stats);
	/* Multi-node: parts no commit names (a node that never finished, or a checkpoint
	 * deleted above) go once past the grace. Single-node runs have none to list. */
	if (!rc && c->has_parts)
		rc = rr_parts_sweep(s, run_id, pol->grace_ms, NULL);
out:
	rr_parts_pending_free(&pending);
	free(w.live);
	free(w.doomed);
	free(w.doomed_size);
	free(doomed);
	rr_catalog_destroy(c);
	return rc;
}
