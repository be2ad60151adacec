/* CUnit suite "gc": rr_gc_run (retention) against a real file store. Each checkpoint holds a
 * file shared by all (one chunk referenced by every manifest) and a file of its own (one
 * chunk only it references). Chunk ages are set explicitly with utimensat, so the grace
 * period is tested without depending on how fast the test runs. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "rr/catalog.h"
#include "rr/clock.h"
#include "rr/error.h"
#include "rr/gc.h"
#include "rr/layout.h"
#include "rr/persist.h"
#include "rr/restore.h"

#include "ckpt_fixture.h"
#include "cunit_main.h"

#define S_N 5
#define S_HOUR_MS (3600 * 1000)

struct s_run {
	struct fx f;
	struct rr_manifest *m[S_N + 1]; /* m[i] is step-i, 1..S_N */
	char own[S_N + 1][RR_SHA256_HEX_LEN + 1]; /* the chunk only step-i references */
	char shared[RR_SHA256_HEX_LEN + 1];
	uint64_t own_size[S_N + 1];
};

static void s_name(char *out, size_t cap, int i)
{
	snprintf(out, cap, "step-%d", i);
}

/* Sets the mtime of every chunk file in the store to now - age_ms. */
static void s_age_chunks(struct s_run *r, int64_t age_ms)
{
	char *dir = fx_join(r->f.store_dir, FX_RUN "/chunks");
	struct rr_dir_listing l;
	int64_t t = rr_wall_ms() - age_ms;
	struct timespec ts[2] = { { .tv_sec = t / 1000, .tv_nsec = (t % 1000) * 1000000 },
				  { .tv_sec = t / 1000, .tv_nsec = (t % 1000) * 1000000 } };

	CU_ASSERT_EQUAL_FATAL(rr_dir_list(dir, &l), 0);
	for (size_t i = 0; i < l.n; i++) {
		char *p = fx_join(dir, l.files[i].path);
		CU_ASSERT_EQUAL(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
		free(p);
	}
	rr_dir_listing_free(&l);
	free(dir);
}

/* step-1..step-S_N, committed at increasing times; every chunk an hour and a half old
 * unless fresh. */
static void s_setup(struct s_run *r, int fresh)
{
	memset(r, 0, sizeof(*r));
	fx_init(&r->f);
	for (int i = 1; i <= S_N; i++) {
		char name[32], *d;
		s_name(name, sizeof(name), i);
		d = fx_ckpt(&r->f, name);
		fx_write_random(d, "shared/tokenizer.bin", 32 * 1024, 424242, 0644);
		fx_write_random(d, "weights.bin", 64 * 1024, (uint64_t)i, 0644);
		free(d);
		CU_ASSERT_EQUAL_FATAL(fx_persist(&r->f, name, 1000 * i, NULL, &r->m[i], NULL), 0);
		snprintf(r->own[i], sizeof(r->own[i]), "%s", fx_first_chunk(r->m[i], "weights.bin"));
		r->own_size[i] = fx_file(r->m[i], "weights.bin")->segs[0].chunks[0].stored_size;
	}
	snprintf(r->shared, sizeof(r->shared), "%s",
		 fx_first_chunk(r->m[1], "shared/tokenizer.bin"));
	CU_ASSERT_EQUAL_FATAL(fx_count_chunks(&r->f), S_N + 1);
	if (!fresh)
		s_age_chunks(r, S_HOUR_MS + S_HOUR_MS / 2);
}

static void s_teardown(struct s_run *r)
{
	for (int i = 1; i <= S_N; i++)
		rr_manifest_destroy(r->m[i]);
	fx_done(&r->f);
}

static int s_has(struct s_run *r, int i)
{
	char name[32];
	s_name(name, sizeof(name), i);
	return fx_has_manifest(&r->f, name);
}

static void test_gc_keeps_newest_two_and_deletes_unreferenced_chunks(void)
{
	struct s_run r;
	struct rr_gc_stats st;

	/* Chunks written just now: with no grace period they may go at once (a file's mtime
	 * is never later than the clock read after writing it). */
	s_setup(&r, 1);
	CU_ASSERT_EQUAL_FATAL(rr_gc_run(r.f.s, FX_RUN, 2, 0, &st), 0);
	CU_ASSERT_EQUAL(st.checkpoints_deleted, 3);
	CU_ASSERT_EQUAL(st.chunks_deleted, 3);
	CU_ASSERT_EQUAL(st.bytes_freed, r.own_size[1] + r.own_size[2] + r.own_size[3]);
	CU_ASSERT_EQUAL(st.chunks_young, 0);
	for (int i = 1; i <= 3; i++) {
		CU_ASSERT_FALSE(s_has(&r, i));
		CU_ASSERT_FALSE(fx_chunk_exists(&r.f, r.own[i]));
	}
	for (int i = 4; i <= 5; i++) {
		CU_ASSERT_TRUE(s_has(&r, i));
		CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.own[i]));
	}
	/* Referenced by the survivors too. */
	CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.shared));
	CU_ASSERT_EQUAL(fx_count_chunks(&r.f), 3);

	/* Nothing more to do the second time. */
	CU_ASSERT_EQUAL(rr_gc_run(r.f.s, FX_RUN, 2, 0, &st), 0);
	CU_ASSERT_EQUAL(st.checkpoints_deleted, 0);
	CU_ASSERT_EQUAL(st.chunks_deleted, 0);
	s_teardown(&r);
}

/* Retention after a commit asks rr_gc_due first: it has work only when a checkpoint can go
 * (more than keep) or multi-node parts exist; otherwise it skips listing the chunks. */
static void test_gc_due_only_when_a_checkpoint_can_go_or_parts_exist(void)
{
	struct s_run r;
	char key[RR_KEY_MAX];

	s_setup(&r, 0);
	CU_ASSERT_EQUAL(rr_gc_due(r.f.s, FX_RUN, S_N), 0);
	CU_ASSERT_EQUAL(rr_gc_due(r.f.s, FX_RUN, S_N + 7), 0);
	CU_ASSERT_EQUAL(rr_gc_due(r.f.s, FX_RUN, S_N - 1), 1);
	CU_ASSERT_EQUAL(rr_gc_due(r.f.s, FX_RUN, 0), 1); /* keep 0 means 1, as rr_gc_run */
	CU_ASSERT_EQUAL(rr_gc_due(r.f.s, "run-empty", 1), 0);
	/* A node's part of a checkpoint: the parts sweep is retention's too. */
	CU_ASSERT_EQUAL_FATAL(rr_key_part(key, FX_RUN, "step-9", 1), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_put(r.f.s, key, "{}", 2, NULL, NULL), 0);
	CU_ASSERT_EQUAL(rr_gc_due(r.f.s, FX_RUN, S_N), 1);
	s_teardown(&r);
}

static void test_gc_grace_period_keeps_young_unreferenced_chunks(void)
{
	struct s_run r;
	struct rr_gc_stats st;

	s_setup(&r, 1); /* chunks written just now */
	CU_ASSERT_EQUAL_FATAL(rr_gc_run(r.f.s, FX_RUN, 2, S_HOUR_MS, &st), 0);
	CU_ASSERT_EQUAL(st.checkpoints_deleted, 3);
	CU_ASSERT_EQUAL(st.chunks_deleted, 0);
	CU_ASSERT_EQUAL(st.chunks_young, 3);
	CU_ASSERT_EQUAL(st.bytes_freed, 0);
	for (int i = 1; i <= 3; i++) {
		CU_ASSERT_FALSE(s_has(&r, i));
		CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.own[i]));
	}
	CU_ASSERT_EQUAL(fx_count_chunks(&r.f), S_N + 1);

	/* Once they are older than the grace period, the next run deletes them. */
	s_age_chunks(&r, 2 * S_HOUR_MS);
	CU_ASSERT_EQUAL(rr_gc_run(r.f.s, FX_RUN, 2, S_HOUR_MS, &st), 0);
	CU_ASSERT_EQUAL(st.chunks_deleted, 3);
	CU_ASSERT_EQUAL(st.chunks_young, 0);
	CU_ASSERT_EQUAL(fx_count_chunks(&r.f), 3);
	s_teardown(&r);
}

static void test_gc_never_deletes_newest_committed_even_with_keep_one(void)
{
	struct s_run r;
	struct rr_gc_stats st;
	char why[512];

	s_setup(&r, 0);
	CU_ASSERT_EQUAL_FATAL(rr_gc_run(r.f.s, FX_RUN, 1, 0, &st), 0);
	CU_ASSERT_EQUAL(st.checkpoints_deleted, 4);
	CU_ASSERT_TRUE(s_has(&r, 5));
	/* keep 0 means 1: the newest committed stays. */
	CU_ASSERT_EQUAL_FATAL(rr_gc_run(r.f.s, FX_RUN, 0, 0, &st), 0);
	CU_ASSERT_EQUAL(st.checkpoints_deleted, 0);
	CU_ASSERT_EQUAL(st.chunks_deleted, 0);
	CU_ASSERT_TRUE(s_has(&r, 5));
	CU_ASSERT_EQUAL(fx_count_chunks(&r.f), 2);
	CU_ASSERT_EQUAL(rr_verify_checkpoint(r.f.s, FX_RUN, r.m[5], 2, why, sizeof(why)), 0);
	s_teardown(&r);
}

static void test_gc_keeps_uncommitted_checkpoints_newer_than_newest_committed(void)
{
	struct s_run r;
	struct rr_gc_stats st;

	s_setup(&r, 0);
	/* step-5 lacks its own chunk (an upload in flight elsewhere): step-4 is the newest
	 * committed one, and step-5 with the chunks it has stays. */
	fx_delete_chunk(&r.f, r.own[5]);
	CU_ASSERT_EQUAL_FATAL(rr_gc_run(r.f.s, FX_RUN, 1, 0, &st), 0);
	CU_ASSERT_EQUAL(st.checkpoints_deleted, 3);
	CU_ASSERT_TRUE(s_has(&r, 5));
	CU_ASSERT_TRUE(s_has(&r, 4));
	for (int i = 1; i <= 3; i++)
		CU_ASSERT_FALSE(s_has(&r, i));
	CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.own[4]));
	CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.shared));
	CU_ASSERT_EQUAL(fx_count_chunks(&r.f), 2);
	s_teardown(&r);
}

static void test_gc_deletes_incomplete_checkpoints_older_than_newest_committed(void)
{
	struct s_run r;
	struct rr_gc_stats st;

	s_setup(&r, 0);
	fx_delete_chunk(&r.f, r.own[4]); /* step-4 can never be restored */
	CU_ASSERT_EQUAL_FATAL(rr_gc_run(r.f.s, FX_RUN, 2, 0, &st), 0);
	/* Kept: step-5 and step-3, the two newest committed ones. */
	CU_ASSERT_TRUE(s_has(&r, 5));
	CU_ASSERT_TRUE(s_has(&r, 3));
	CU_ASSERT_FALSE(s_has(&r, 4));
	CU_ASSERT_FALSE(s_has(&r, 2));
	CU_ASSERT_FALSE(s_has(&r, 1));
	CU_ASSERT_EQUAL(st.checkpoints_deleted, 3);
	s_teardown(&r);
}

static void test_gc_with_unreadable_manifest_deletes_no_chunk(void)
{
	struct s_run r;
	struct rr_gc_stats st;
	static const char garbage[] = "\x00\x01 definitely not a manifest";

	s_setup(&r, 0);
	fx_put_manifest_bytes(&r.f, "step-3-broken", garbage, sizeof(garbage) - 1);
	CU_ASSERT_EQUAL_FATAL(rr_gc_run(r.f.s, FX_RUN, 2, 0, &st), 0);
	CU_ASSERT_EQUAL(st.chunks_deleted, 0);
	CU_ASSERT_EQUAL(fx_count_chunks(&r.f), S_N + 1);
	for (int i = 1; i <= S_N; i++)
		CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.own[i]));
	/* The unreadable manifest itself is never deleted. */
	CU_ASSERT_TRUE(fx_has_manifest(&r.f, "step-3-broken"));
	CU_ASSERT_TRUE(s_has(&r, 4));
	CU_ASSERT_TRUE(s_has(&r, 5));
	s_teardown(&r);
}

static void test_gc_remaining_checkpoints_restore_after_gc(void)
{
	struct s_run r;
	struct rr_gc_stats st;
	struct rr_catalog *c = NULL;
	struct rr_restore_stats rs;
	char why[512];

	s_setup(&r, 0);
	CU_ASSERT_EQUAL_FATAL(rr_gc_run(r.f.s, FX_RUN, 2, 0, &st), 0);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(r.f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL_FATAL(c->n, 2);
	for (size_t k = 0; k < c->n; k++) {
		const struct rr_catalog_entry *e = &c->entries[k];
		char *src, *dst;
		CU_ASSERT_EQUAL(e->committed, 1);
		CU_ASSERT_EQUAL(rr_restore_checkpoint(r.f.s, FX_RUN, e->manifest, r.f.restore_dir, 2,
						      &rs, why, sizeof(why)),
				0);
		src = fx_ckpt(&r.f, e->name);
		dst = fx_join(r.f.restore_dir, e->name);
		FX_ASSERT_SAME_TREE(src, dst);
		free(src);
		free(dst);
	}
	rr_catalog_destroy(c);
	s_teardown(&r);
}

static void test_gc_ignores_other_runs(void)
{
	struct s_run r;
	struct rr_gc_stats st;
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats ps;
	char *d, *other_chunks;

	s_setup(&r, 0);
	d = fx_ckpt(&r.f, "step-1");
	o.run_id = "run-other";
	/* Another run's only checkpoint, older than everything of ours. */
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(r.f.s, r.f.ckpt_dir, "step-1", 1, &o, NULL, &ps),
			      0);
	other_chunks = fx_join(r.f.store_dir, "run-other/chunks");
	CU_ASSERT_EQUAL(rr_gc_run(r.f.s, FX_RUN, 1, 0, &st), 0);
	CU_ASSERT_EQUAL(fx_count_files(other_chunks), 2);
	CU_ASSERT_TRUE(fx_exists_in(r.f.store_dir, "run-other/checkpoints/step-1/manifest.json"));
	free(other_chunks);
	free(d);
	s_teardown(&r);
}

/* A store that passes everything to the fixture's file store, and runs a hook once: before
 * the first put of a key containing put_match, or after the first listing of a prefix
 * containing list_match. The hook plays another machine acting at exactly that moment. */
struct s_hook {
	struct rr_store base;
	struct rr_store *inner;
	const char *put_match, *list_match, *del_match;
	void (*hook)(struct s_hook *h);
	int fired;
	/* for the hooks */
	struct rr_gc_stats st;
	int gc_rc;
	char *manifest;
	const char *manifest_name;
	char doomed_key[RR_KEY_MAX];
};

static void s_hook_fire(struct s_hook *h, const char *key, const char *match)
{
	if (match && !h->fired && strstr(key, match)) {
		h->fired = 1;
		h->hook(h);
	}
}

static int s_fail_chunk_puts; /* set by a hook: chunk puts through the hook store fail */

static int s_hook_put(struct rr_store *s, const char *key, const void *data, size_t len,
		      const struct rr_put_opts *opts, char *etag_out)
{
	struct s_hook *h = (struct s_hook *)s;
	s_hook_fire(h, key, h->put_match);
	if (s_fail_chunk_puts && strstr(key, "/chunks/"))
		return RR_EIO;
	return rr_store_put(h->inner, key, data, len, opts, etag_out);
}

static int s_hook_get(struct rr_store *s, const char *key, struct rr_buf *out, char *etag_out)
{
	return rr_store_get(((struct s_hook *)s)->inner, key, out, etag_out);
}

static int s_hook_head(struct rr_store *s, const char *key, uint64_t *size_out)
{
	return rr_store_head(((struct s_hook *)s)->inner, key, size_out);
}

static int s_hook_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb, void *ud)
{
	struct s_hook *h = (struct s_hook *)s;
	int rc = rr_store_list(h->inner, prefix, cb, ud);
	s_hook_fire(h, prefix, h->list_match);
	return rc;
}

static int s_hook_del(struct rr_store *s, const char *key)
{
	struct s_hook *h = (struct s_hook *)s;
	s_hook_fire(h, key, h->del_match);
	return rr_store_del(h->inner, key);
}

static int s_hook_del_if_old(struct rr_store *s, const char *key, int64_t not_after_ms)
{
	struct s_hook *h = (struct s_hook *)s;
	s_hook_fire(h, key, h->del_match);
	return rr_store_del_if_old(h->inner, key, not_after_ms);
}

static void s_hook_destroy(struct rr_store *s)
{
	(void)s; /* on the test's stack */
}

static const struct rr_store_vtable s_hook_vt = {
	.scheme = "hook", .put = s_hook_put, .get = s_hook_get, .head = s_hook_head,
	.list = s_hook_list, .del = s_hook_del, .destroy = s_hook_destroy,
};

/* The same, offering the file store's one-step conditional delete (del_if_old). */
static const struct rr_store_vtable s_hook_vt_if_old = {
	.scheme = "hook", .put = s_hook_put, .get = s_hook_get, .head = s_hook_head,
	.list = s_hook_list, .del = s_hook_del, .del_if_old = s_hook_del_if_old,
	.destroy = s_hook_destroy,
};

static void s_hook_init(struct s_hook *h, struct rr_store *inner, void (*hook)(struct s_hook *))
{
	memset(h, 0, sizeof(*h));
	h->base.vt = &s_hook_vt;
	h->base.url = (char *)"hook://";
	h->inner = inner;
	h->hook = hook;
}

/* The old machine's retention, keeping two. */
static void s_hook_gc(struct s_hook *h)
{
	h->gc_rc = rr_gc_run(h->inner, FX_RUN, 2, S_HOUR_MS, &h->st);
}

static int s_committed(struct rr_store *s, const char *name)
{
	struct rr_catalog *c = NULL;
	const struct rr_catalog_entry *e;
	int ok;

	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(s, FX_RUN, &c), 0);
	e = rr_catalog_find(c, name);
	ok = e && e->committed;
	rr_catalog_destroy(c);
	return ok;
}

/* step-6 in the checkpoint directory: the tokenizer every step has, and step-1's weights. */
static void s_step6_holds_step1s_weights(struct s_run *r)
{
	char *d = fx_ckpt(&r->f, "step-6");

	fx_write_random(d, "shared/tokenizer.bin", 32 * 1024, 424242, 0644);
	fx_write_random(d, "weights.bin", 64 * 1024, 1, 0644);
	free(d);
}

/* Another machine persists step-6, which holds the weights only step-1 had, while this
 * retention deletes step-1..3: its persist writes that old chunk again and its manifest
 * lands after gc listed the manifests the second time, just before gc deletes the chunk.
 * With a store that checks a key's age and deletes in one step (the file store), the chunk
 * written again stays and step-6 is committed. Before, gc deleted it: step-6's manifest
 * named a missing chunk and restore fell back to step-5. */
static struct s_run *s_late;
static int s_late_rc;
static struct rr_persist_stats s_late_st;

static void s_hook_persist_step6(struct s_hook *h)
{
	struct rr_persist_opts o = fx_opts();

	o.previous = s_late->m[5];
	o.gc_grace_ms = S_HOUR_MS;
	s_late_rc = rr_persist_checkpoint(h->inner, s_late->f.ckpt_dir, "step-6", 6000, &o, NULL,
					  &s_late_st);
}

static void test_gc_keeps_a_chunk_written_again_after_its_listing(void)
{
	struct s_run r;
	struct s_hook h;
	struct rr_gc_stats st;

	s_setup(&r, 0); /* chunks 1.5 h old, grace 1 h */
	s_late = &r;
	s_step6_holds_step1s_weights(&r);
	s_hook_init(&h, r.f.s, s_hook_persist_step6);
	h.del_match = "/chunks/";
	h.base.vt = &s_hook_vt_if_old;
	CU_ASSERT_EQUAL(rr_gc_run(&h.base, FX_RUN, 2, S_HOUR_MS, &st), 0);
	CU_ASSERT_EQUAL(h.fired, 1);
	CU_ASSERT_EQUAL(s_late_rc, 0);
	CU_ASSERT(s_late_st.refreshed_chunks >= 1); /* it wrote step-1's old chunk again */
	CU_ASSERT_EQUAL(st.checkpoints_deleted, 3);
	CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.own[1]));
	CU_ASSERT_FALSE(fx_chunk_exists(&r.f, r.own[2]));
	CU_ASSERT_TRUE(s_committed(r.f.s, "step-6"));
	s_teardown(&r);
}

/* On a store that cannot delete only what was not written since (S3, GCS, Azure here), a gc
 * elsewhere that listed a chunk as old and unreferenced may delete it after this persist
 * wrote it again: here just before the manifest lands. The persist lists the chunks once
 * more after its manifest and stores again what is missing, so step-6 is committed when it
 * says so. Before, step-6's manifest named a chunk the store no longer had. */
static void s_hook_delete_step1_weights(struct s_hook *h)
{
	(void)h;
	fx_delete_chunk(&s_late->f, s_late->own[1]);
}

/* Chunks 1.5 h old, grace 1 h; step-6 holds step-1's weights and is persisted (options *o,
 * with the chunk index idx, may be NULL) through a store that runs hook just before its
 * manifest's put. Returns the persist's result. */
static int s_persist_step6_hooked(struct s_run *r, struct s_hook *h, void (*hook)(struct s_hook *),
				  struct rr_chunk_index *idx, struct rr_persist_opts *o,
				  struct rr_persist_stats *ps)
{
	s_setup(r, 0);
	s_late = r;
	s_step6_holds_step1s_weights(r);
	s_hook_init(h, r->f.s, hook);
	h->put_match = "step-6/manifest.json";
	*o = fx_opts();
	o->previous = r->m[5];
	o->gc_grace_ms = S_HOUR_MS;
	o->chunks = idx;
	return rr_persist_checkpoint(&h->base, r->f.ckpt_dir, "step-6", 6000, o, NULL, ps);
}

static void test_gc_persist_stores_again_a_renewed_chunk_deleted_before_its_manifest(void)
{
	struct s_run r;
	struct s_hook h;
	struct rr_persist_opts o;
	struct rr_persist_stats ps;

	CU_ASSERT_EQUAL(s_persist_step6_hooked(&r, &h, s_hook_delete_step1_weights, NULL, &o, &ps),
			0);
	CU_ASSERT_EQUAL(h.fired, 1);
	CU_ASSERT(ps.refreshed_chunks >= 1);
	CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.own[1]));
	CU_ASSERT_TRUE(s_committed(r.f.s, "step-6"));
	s_teardown(&r);
}

/* The same, but storing the lost chunk again fails (a network blip, the deadline): step-6's
 * persist fails, and the chunk index the persists share must not go on saying the chunk is
 * stored. Before, step-7 (the same weights, the same index) relied on it without a look,
 * and reported a checkpoint durable whose manifest named a chunk the store had lost. */
static void s_hook_delete_then_fail_puts(struct s_hook *h)
{
	(void)h;
	fx_delete_chunk(&s_late->f, s_late->own[1]);
	s_fail_chunk_puts = 1;
}

static void test_gc_failed_repair_leaves_no_chunk_index_naming_the_lost_chunk(void)
{
	struct s_run r;
	struct s_hook h;
	struct rr_persist_opts o;
	struct rr_persist_stats ps;
	struct rr_chunk_index *idx = rr_chunk_index_new();
	struct rr_catalog *c = NULL;
	const struct rr_catalog_entry *e;
	char *d;

	CU_ASSERT_PTR_NOT_NULL_FATAL(idx);
	CU_ASSERT_NOT_EQUAL(s_persist_step6_hooked(&r, &h, s_hook_delete_then_fail_puts, idx, &o,
						   &ps), 0);
	CU_ASSERT_EQUAL(h.fired, 1);
	s_fail_chunk_puts = 0;
	/* step-7 holds the same weights, persisted with the same index */
	d = fx_ckpt(&r.f, "step-7");
	fx_write_random(d, "shared/tokenizer.bin", 32 * 1024, 424242, 0644);
	fx_write_random(d, "weights.bin", 64 * 1024, 1, 0644);
	free(d);
	CU_ASSERT_EQUAL(rr_persist_checkpoint(r.f.s, r.f.ckpt_dir, "step-7", 7000, &o, NULL, &ps),
			0);
	CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.own[1]));
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(r.f.s, FX_RUN, &c), 0);
	e = rr_catalog_find(c, "step-7");
	CU_ASSERT_PTR_NOT_NULL(e);
	if (e) {
		CU_ASSERT_TRUE(e->committed);
		CU_ASSERT_STRING_EQUAL(e->problem, ""); /* every chunk it names is there */
	}
	rr_catalog_destroy(c);
	rr_chunk_index_destroy(idx);
	s_teardown(&r);
}

/* The handover: a new machine deduplicates against chunks first uploaded long ago (its
 * step-6 holds the weights step-1 had) while the old machine's retention retires step-1 and
 * runs between the new machine's chunk decisions and its manifest. The chunk must survive:
 * the persist wrote it again (its age renewed) instead of relying on the old copy. */
static void test_gc_handover_keeps_old_chunks_a_new_manifest_deduplicated(void)
{
	struct s_run r;
	struct s_hook h;
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats ps;
	struct rr_catalog *c = NULL;
	struct rr_restore_stats rs;
	char why[512];

	s_setup(&r, 0); /* chunks 1.5 h old, grace 1 h */
	s_step6_holds_step1s_weights(&r);
	s_hook_init(&h, r.f.s, s_hook_gc);
	h.put_match = "step-6/manifest.json";
	o.previous = r.m[5]; /* what the new machine restored */
	o.gc_grace_ms = S_HOUR_MS;
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(&h.base, r.f.ckpt_dir, "step-6", 6000, &o,
						    NULL, &ps), 0);
	CU_ASSERT_EQUAL(h.fired, 1);
	CU_ASSERT_EQUAL(h.gc_rc, 0);
	CU_ASSERT_EQUAL(h.st.checkpoints_deleted, 3);
	CU_ASSERT_FALSE(s_has(&r, 1));
	/* Both of step-6's chunks were old: written again, so young for that gc. */
	CU_ASSERT_EQUAL(ps.refreshed_chunks, 2);
	CU_ASSERT_EQUAL(ps.reused_segments, 0);
	CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.own[1]));
	CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.shared));
	CU_ASSERT_TRUE(s_committed(r.f.s, "step-6"));

	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(r.f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(rr_restore_checkpoint(r.f.s, FX_RUN, rr_catalog_find(c, "step-6")->manifest,
					      r.f.restore_dir, 2, &rs, why, sizeof(why)), 0);
	rr_catalog_destroy(c);
	{
		char *src = fx_ckpt(&r.f, "step-6"), *dst = fx_join(r.f.restore_dir, "step-6");
		FX_ASSERT_SAME_TREE(src, dst);
		free(src);
		free(dst);
	}
	s_teardown(&r);
}

/* Chunks written within the last half of the grace period are relied on, not rewritten. */
static void test_gc_persist_relies_on_recent_chunks_without_rewriting_them(void)
{
	struct s_run r;
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats ps;
	char *d;

	s_setup(&r, 0);
	s_age_chunks(&r, S_HOUR_MS / 4);
	d = fx_ckpt(&r.f, "step-6");
	fx_write_random(d, "shared/tokenizer.bin", 32 * 1024, 424242, 0644);
	fx_write_random(d, "weights.bin", 64 * 1024, 1, 0644);
	free(d);
	o.previous = r.m[5];
	o.gc_grace_ms = S_HOUR_MS;
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(r.f.s, r.f.ckpt_dir, "step-6", 6000, &o, NULL,
						    &ps), 0);
	CU_ASSERT_EQUAL(ps.refreshed_chunks, 0);
	CU_ASSERT_EQUAL(ps.reused_segments, 1); /* the tokenizer, from step-5 */
	s_teardown(&r);
}

/* Ages are the store's: this machine's clock 40 min behind the store's (as the store's Date
 * headers tell), chunks written 25 min ago by this clock are 65 min old by the store's, past
 * the grace another machine's gc judges by: the persist writes them again rather than rely
 * on them. Before, it judged by its own clock and relied on them. */
static void test_gc_persist_judges_chunk_ages_by_the_store_clock(void)
{
	struct s_run r;
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats ps;
	char date[64];
	time_t ahead = time(NULL) + 40 * 60;

	s_setup(&r, 0);
	s_age_chunks(&r, 25 * 60 * 1000);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime(&ahead));
	rr_store_observe_date(r.f.s, date);
	CU_ASSERT_TRUE_FATAL(rr_store_clock_known(r.f.s));
	s_step6_holds_step1s_weights(&r);
	o.previous = r.m[5];
	o.gc_grace_ms = S_HOUR_MS;
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(r.f.s, r.f.ckpt_dir, "step-6", 6000, &o, NULL,
						    &ps), 0);
	CU_ASSERT_EQUAL(ps.refreshed_chunks, 2); /* the tokenizer's and step-1's weights */
	s_teardown(&r);
}

/* A notice's checkpoint, racing its deadline, relies on chunks up to 50 min old (grace
 * 1 h less its 10 min margin) that a routine persist would upload again. */
static void test_gc_urgent_persist_relies_on_older_chunks_than_a_routine_one(void)
{
	for (int urgent = 1; urgent >= 0; urgent--) {
		struct s_run r;
		struct rr_persist_opts o = fx_opts();
		struct rr_persist_stats ps;
		char *d;

		s_setup(&r, 0);
		s_age_chunks(&r, 40 * 60 * 1000);
		d = fx_ckpt(&r.f, "step-6");
		fx_write_random(d, "shared/tokenizer.bin", 32 * 1024, 424242, 0644);
		fx_write_random(d, "weights.bin", 64 * 1024, 1, 0644);
		free(d);
		o.previous = r.m[5];
		o.gc_grace_ms = S_HOUR_MS;
		o.urgent = urgent;
		CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(r.f.s, r.f.ckpt_dir, "step-6", 6000, &o,
							    NULL, &ps), 0);
		CU_ASSERT_EQUAL(ps.refreshed_chunks, urgent ? 0 : 2);
		s_teardown(&r);
	}
}

static struct s_run *s_inject_run;

static void s_hook_inject(struct s_hook *h)
{
	fx_put_manifest_bytes(&s_inject_run->f, h->manifest_name, h->manifest,
			      strlen(h->manifest));
}

/* A checkpoint committed by another writer after gc read the catalog names chunks that gc
 * found unreferenced and old: gc lists the manifests again and deletes no chunk. */
static void test_gc_deletes_no_chunk_when_a_manifest_appears_during_its_run(void)
{
	struct s_run r;
	struct s_hook h;
	struct rr_gc_stats st;
	char key[RR_KEY_MAX], *d;

	s_setup(&r, 0);
	d = fx_ckpt(&r.f, "step-6");
	fx_write_random(d, "shared/tokenizer.bin", 32 * 1024, 424242, 0644);
	fx_write_random(d, "weights.bin", 64 * 1024, 1, 0644); /* step-1's chunk */
	free(d);
	CU_ASSERT_EQUAL_FATAL(fx_persist(&r.f, "step-6", 6000, NULL, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, FX_RUN, "step-6"), 0);
	s_hook_init(&h, r.f.s, s_hook_inject);
	h.manifest = fx_get_str(&r.f, key);
	h.manifest_name = "step-6";
	CU_ASSERT_PTR_NOT_NULL_FATAL(h.manifest);
	CU_ASSERT_EQUAL_FATAL(rr_store_del(r.f.s, key), 0);
	s_inject_run = &r;
	h.list_match = "/chunks/"; /* the catalog's chunk listing: its manifests are read */

	CU_ASSERT_EQUAL(rr_gc_run(&h.base, FX_RUN, 2, S_HOUR_MS, &st), 0);
	CU_ASSERT_EQUAL(h.fired, 1);
	CU_ASSERT_EQUAL(st.checkpoints_deleted, 3);
	CU_ASSERT_EQUAL(st.chunks_deleted, 0);
	CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.own[1]));
	CU_ASSERT_TRUE(s_committed(r.f.s, "step-6"));

	/* The next run sees step-6: it keeps step-6 and step-5, and frees what nothing names. */
	CU_ASSERT_EQUAL(rr_gc_run(r.f.s, FX_RUN, 2, S_HOUR_MS, &st), 0);
	CU_ASSERT_EQUAL(st.checkpoints_deleted, 1);
	CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.own[1]));
	CU_ASSERT_FALSE(fx_chunk_exists(&r.f, r.own[2]));
	CU_ASSERT_FALSE(fx_chunk_exists(&r.f, r.own[4]));
	CU_ASSERT_TRUE(s_committed(r.f.s, "step-6"));
	free(h.manifest);
	s_teardown(&r);
}

/* Lets time pass (so the persist has outlasted half of a tiny grace), then deletes
 * doomed_key if set: another machine's retention removing a chunk the persist named. */
static void s_hook_slow_delete(struct s_hook *h)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 20 * 1000000 };
	nanosleep(&ts, NULL);
	if (h->doomed_key[0])
		CU_ASSERT_EQUAL(rr_store_del(h->inner, h->doomed_key), 0);
}

/* A persist that outlasted half the grace lists the chunks again before its manifest: a
 * chunk it named that was deleted meanwhile fails it (no manifest naming a missing chunk);
 * with nothing deleted it commits. */
static void test_gc_long_persist_checks_its_chunks_before_the_manifest(void)
{
	for (int del = 1; del >= 0; del--) {
		struct s_run r;
		struct s_hook h;
		struct rr_persist_opts o = fx_opts();
		struct rr_persist_stats ps;
		char key[RR_KEY_MAX], *d;

		s_setup(&r, 0); /* every chunk old: written again, the hook's one included */
		d = fx_ckpt(&r.f, "step-6");
		fx_write_random(d, "shared/tokenizer.bin", 32 * 1024, 424242, 0644);
		fx_write_random(d, "weights.bin", 64 * 1024, 1, 0644); /* written last */
		free(d);
		s_hook_init(&h, r.f.s, s_hook_slow_delete);
		CU_ASSERT_EQUAL_FATAL(rr_key_chunk(key, FX_RUN, r.own[1]), 0);
		h.put_match = key;
		if (del)
			CU_ASSERT_EQUAL_FATAL(rr_key_chunk(h.doomed_key, FX_RUN, r.shared), 0);
		o.threads = 1; /* files in path order: the tokenizer's chunk is written first */
		o.gc_grace_ms = 4; /* everything stored is "old"; 20 ms is past half of it */
		CU_ASSERT_EQUAL(rr_persist_checkpoint(&h.base, r.f.ckpt_dir, "step-6", 6000, &o,
						      NULL, &ps), del ? RR_EPRECOND : 0);
		CU_ASSERT_EQUAL(h.fired, 1);
		CU_ASSERT_EQUAL(s_has(&r, 6), !del);
		s_teardown(&r);
	}
}


/* At the manifest's put: lets the persist outlast half the grace, then deletes doomed_key
 * (another machine's retention, after any listing the persist made before its manifest). */
static void s_hook_late_delete(struct s_hook *h)
{
	struct timespec ts = { .tv_sec = 1, .tv_nsec = 100 * 1000000 };
	nanosleep(&ts, NULL);
	CU_ASSERT_EQUAL(rr_store_del(h->inner, h->doomed_key), 0);
}

/* A persist that outlasted half the grace relied on a young chunk it did not write again;
 * another machine's retention deleted it between the persist's last look and its manifest.
 * The persist lists its chunks once more after the manifest and stores the missing one
 * again, so the checkpoint it reports durable is whole. Before, it named a missing chunk. */
static void test_gc_long_persist_checks_its_chunks_after_the_manifest(void)
{
	struct s_run r;
	struct s_hook h;
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats ps;
	char key[RR_KEY_MAX], *d;

	s_setup(&r, 1);
	d = fx_ckpt(&r.f, "step-6");
	fx_write_random(d, "shared/tokenizer.bin", 32 * 1024, 424242, 0644); /* relied on */
	fx_write_random(d, "weights.bin", 64 * 1024, 77, 0644);
	free(d);
	s_age_chunks(&r, 0); /* young: the persist relies on them */
	s_hook_init(&h, r.f.s, s_hook_late_delete);
	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, FX_RUN, "step-6"), 0);
	h.put_match = key;
	CU_ASSERT_EQUAL_FATAL(rr_key_chunk(h.doomed_key, FX_RUN, r.shared), 0);
	o.gc_grace_ms = 2000; /* relied on below 1 s; the hook makes the persist last longer */
	CU_ASSERT_EQUAL(rr_persist_checkpoint(&h.base, r.f.ckpt_dir, "step-6", 6000, &o, NULL,
					      &ps), 0);
	CU_ASSERT_EQUAL(h.fired, 1);
	CU_ASSERT_TRUE(fx_chunk_exists(&r.f, r.shared));
	CU_ASSERT_TRUE(s_committed(r.f.s, "step-6"));
	s_teardown(&r);
}

/* At the first chunk put: the framework's rotation deletes the checkpoint being persisted
 * (HF Trainer's save_total_limit, right after the next checkpoint's commit). */
static char s_rotated_dir[4096];
static void s_hook_rotate(struct s_hook *h)
{
	char cmd[4200];

	(void)h;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s_rotated_dir);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

/* A checkpoint deleted while it is persisted is not stored: the files the listing saw are
 * read through descriptors held since, but others may have gone before the listing, and
 * the stored checkpoint would lack them. Before, it was committed (with the files its
 * listing saw) and restore brought back a partial checkpoint. */
static void test_gc_a_checkpoint_deleted_while_persisted_is_not_stored(void)
{
	struct s_run r;
	struct s_hook h;
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats ps;
	char *d;

	s_setup(&r, 1);
	d = fx_ckpt(&r.f, "step-6");
	fx_write_random(d, "weights.bin", 64 * 1024, 66, 0644);
	fx_write_random(d, "optimizer.bin", 64 * 1024, 67, 0644);
	snprintf(s_rotated_dir, sizeof(s_rotated_dir), "%s", d);
	free(d);
	s_hook_init(&h, r.f.s, s_hook_rotate);
	h.put_match = "/chunks/";
	CU_ASSERT_NOT_EQUAL(rr_persist_checkpoint(&h.base, r.f.ckpt_dir, "step-6", 6000, &o, NULL,
						  &ps), 0);
	CU_ASSERT_EQUAL(h.fired, 1);
	CU_ASSERT_FALSE(s_has(&r, 6));
	s_teardown(&r);
}

/* Packs: step-2 changes one of step-1's small files, so it points into step-1's pack for
 * the others and into a new pack for the changed one. gc keeping one checkpoint deletes
 * step-1's manifest but not the pack step-2 still reads from; step-2 restores. */
static void test_gc_keeps_a_pack_a_newer_checkpoint_reads_from(void)
{
	struct fx f;
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats ps;
	struct rr_gc_stats st;
	struct rr_restore_stats rs;
	struct rr_manifest *m1 = NULL, *m2 = NULL;
	char why[512], *d, *dst;

	fx_init(&f);
	o.no_packs = 0;
	for (int step = 1; step <= 2; step++) {
		char name[16];
		snprintf(name, sizeof(name), "step-%d", step);
		d = fx_ckpt(&f, name);
		for (int i = 0; i < 6; i++) {
			char rel[16];
			snprintf(rel, sizeof(rel), "f%d.bin", i);
			fx_write_random(d, rel, 20000 + 1000 * (size_t)i,
					(uint64_t)(i == 3 ? 100 * step : i + 1), 0644);
		}
		free(d);
		o.previous = m1;
		CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(f.s, f.ckpt_dir, name, 1000 * step, &o,
							    step == 1 ? &m1 : &m2, &ps), 0);
	}
	CU_ASSERT_EQUAL_FATAL(fx_count_chunks(&f), 2); /* step-1's pack, step-2's new one */
	CU_ASSERT_STRING_EQUAL(fx_first_chunk(m2, "f0.bin"), fx_first_chunk(m1, "f0.bin"));
	CU_ASSERT_STRING_NOT_EQUAL(fx_first_chunk(m2, "f3.bin"), fx_first_chunk(m1, "f3.bin"));
	CU_ASSERT_EQUAL_FATAL(rr_gc_run(f.s, FX_RUN, 1, 0, &st), 0);
	CU_ASSERT_EQUAL(st.checkpoints_deleted, 1);
	CU_ASSERT_EQUAL(st.chunks_deleted, 0);
	CU_ASSERT_FALSE(fx_has_manifest(&f, "step-1"));
	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m2, f.restore_dir, 2, &rs, why,
					      sizeof(why)), 0);
	d = fx_ckpt(&f, "step-2");
	dst = fx_join(f.restore_dir, "step-2");
	FX_ASSERT_SAME_TREE(d, dst);
	free(d);
	free(dst);
	rr_manifest_destroy(m1);
	rr_manifest_destroy(m2);
	fx_done(&f);
}

static CU_TestInfo s_tests[] = {
	{ "gc_persist_stores_again_a_renewed_chunk_deleted_before_its_manifest",
	  test_gc_persist_stores_again_a_renewed_chunk_deleted_before_its_manifest },
	{ "gc_keeps_a_chunk_written_again_after_its_listing",
	  test_gc_keeps_a_chunk_written_again_after_its_listing },
	{ "gc_failed_repair_leaves_no_chunk_index_naming_the_lost_chunk",
	  test_gc_failed_repair_leaves_no_chunk_index_naming_the_lost_chunk },
	{ "gc_keeps_a_pack_a_newer_checkpoint_reads_from",
	  test_gc_keeps_a_pack_a_newer_checkpoint_reads_from },
	{ "gc_urgent_persist_relies_on_older_chunks_than_a_routine_one",
	  test_gc_urgent_persist_relies_on_older_chunks_than_a_routine_one },
	{ "gc_a_checkpoint_deleted_while_persisted_is_not_stored",
	  test_gc_a_checkpoint_deleted_while_persisted_is_not_stored },
	{ "gc_long_persist_checks_its_chunks_after_the_manifest",
	  test_gc_long_persist_checks_its_chunks_after_the_manifest },
	{ "gc_long_persist_checks_its_chunks_before_the_manifest",
	  test_gc_long_persist_checks_its_chunks_before_the_manifest },
	{ "gc_handover_keeps_old_chunks_a_new_manifest_deduplicated",
	  test_gc_handover_keeps_old_chunks_a_new_manifest_deduplicated },
	{ "gc_persist_judges_chunk_ages_by_the_store_clock",
	  test_gc_persist_judges_chunk_ages_by_the_store_clock },
	{ "gc_persist_relies_on_recent_chunks_without_rewriting_them",
	  test_gc_persist_relies_on_recent_chunks_without_rewriting_them },
	{ "gc_deletes_no_chunk_when_a_manifest_appears_during_its_run",
	  test_gc_deletes_no_chunk_when_a_manifest_appears_during_its_run },
	{ "gc_due_only_when_a_checkpoint_can_go_or_parts_exist",
	  test_gc_due_only_when_a_checkpoint_can_go_or_parts_exist },
	{ "gc_keeps_newest_two_and_deletes_unreferenced_chunks",
	  test_gc_keeps_newest_two_and_deletes_unreferenced_chunks },
	{ "gc_grace_period_keeps_young_unreferenced_chunks",
	  test_gc_grace_period_keeps_young_unreferenced_chunks },
	{ "gc_never_deletes_newest_committed_even_with_keep_one",
	  test_gc_never_deletes_newest_committed_even_with_keep_one },
	{ "gc_keeps_uncommitted_checkpoints_newer_than_newest_committed",
	  test_gc_keeps_uncommitted_checkpoints_newer_than_newest_committed },
	{ "gc_deletes_incomplete_checkpoints_older_than_newest_committed",
	  test_gc_deletes_incomplete_checkpoints_older_than_newest_committed },
	{ "gc_with_unreadable_manifest_deletes_no_chunk",
	  test_gc_with_unreadable_manifest_deletes_no_chunk },
	{ "gc_remaining_checkpoints_restore_after_gc", test_gc_remaining_checkpoints_restore_after_gc },
	{ "gc_ignores_other_runs", test_gc_ignores_other_runs },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("gc", s_tests)
