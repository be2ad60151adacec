/* CUnit suite "retention": what rr_gc_run_policy keeps besides the newest N (README, "Suspect
 * and proven checkpoints"): the newest proven checkpoint, checkpoints a restore holds a lease
 * on, one per --keep-every period, suspect checkpoints not counted among the N; marks go
 * with their checkpoint; ages judged by the store's clock. And a property test over random
 * histories of commits, failures, restores, suspect marks and gc on a real file store: no
 * sequence deletes the newest proven checkpoint, one a restore in progress is reading, or
 * the one a restart would take. */
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
#include "rr/marks.h"

#include "ckpt_fixture.h"
#include "cunit_main.h"

#define S_MIN_MS (60 * 1000)

/* Commits step-<step> holding a file of its own and a shared one; committed at ms. Returns
 * persist's result: RR_EPRECOND when the name is in the store with other bytes (and not
 * suspect), as for a trainer that is not deterministic across a restart. */
static int s_try_commit(struct fx *f, int step, int64_t ms, unsigned salt)
{
	char name[32], *d;

	snprintf(name, sizeof(name), "step-%d", step);
	d = fx_ckpt(f, name);
	fx_write_random(d, "shared.bin", 2048, 7, 0644);
	fx_write_random(d, "own.bin", 1024, (uint64_t)step * 1000 + salt, 0644);
	free(d);
	return fx_persist(f, name, ms, NULL, NULL, NULL);
}

static void s_commit(struct fx *f, int step, int64_t ms, unsigned salt)
{
	CU_ASSERT_EQUAL_FATAL(s_try_commit(f, step, ms, salt), 0);
}

/* 1 when step-<step> is in the store and committed (manifest and every chunk). */
static int s_committed(struct fx *f, int step)
{
	struct rr_catalog *c = NULL;
	const struct rr_catalog_entry *e;
	char name[32];
	int ok;

	snprintf(name, sizeof(name), "step-%d", step);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f->s, FX_RUN, &c), 0);
	e = rr_catalog_find(c, name);
	ok = e && e->committed;
	rr_catalog_destroy(c);
	return ok;
}

static int64_t s_committed_ms_of(struct fx *f, int step)
{
	struct rr_catalog *c = NULL;
	const struct rr_catalog_entry *e;
	char name[32];
	int64_t ms = -1;

	snprintf(name, sizeof(name), "step-%d", step);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f->s, FX_RUN, &c), 0);
	e = rr_catalog_find(c, name);
	if (e && e->manifest)
		ms = e->manifest->committed_unix_ms;
	rr_catalog_destroy(c);
	return ms;
}

static void s_suspect(struct fx *f, int step)
{
	struct rr_suspect m = { .failures = 2, .exit_status = 1 };
	char name[32];

	snprintf(name, sizeof(name), "step-%d", step);
	snprintf(m.why, sizeof(m.why), "test");
	m.for_committed_ms = s_committed_ms_of(f, step);
	CU_ASSERT_EQUAL_FATAL(rr_mark_suspect(f->s, FX_RUN, name, &m), 0);
}

static void s_proven(struct fx *f, int step)
{
	char name[32];

	snprintf(name, sizeof(name), "step-%d", step);
	CU_ASSERT_EQUAL_FATAL(rr_mark_proven(f->s, FX_RUN, name, "later", "test-host"), 0);
}

static void s_gc(struct fx *f, unsigned keep, int64_t every, int64_t keep_for)
{
	struct rr_gc_stats st;
	struct rr_gc_policy pol = { .keep = keep, .keep_every_ms = every, .keep_for_ms = keep_for };

	CU_ASSERT_EQUAL_FATAL(rr_gc_run_policy(f->s, FX_RUN, &pol, &st), 0);
}

static void test_the_newest_proven_checkpoint_outlives_keep(void)
{
	struct fx f;
	int64_t now = rr_wall_ms();

	fx_init(&f);
	for (int i = 1; i <= 6; i++)
		s_commit(&f, i, now - 100000 + i, 0);
	s_proven(&f, 1);
	s_proven(&f, 2);
	s_gc(&f, 2, 0, 0);
	CU_ASSERT_TRUE(s_committed(&f, 6) && s_committed(&f, 5));
	CU_ASSERT_TRUE(s_committed(&f, 2)); /* the newest proven */
	CU_ASSERT_FALSE(s_committed(&f, 1) || s_committed(&f, 3) || s_committed(&f, 4));
	/* Its marks went with it. */
	CU_ASSERT_FALSE(fx_exists_in(f.store_dir, FX_RUN "/checkpoints/step-1/proven.json"));
	fx_done(&f);
}

static void test_suspect_checkpoints_are_not_counted_among_the_newest(void)
{
	struct fx f;
	int64_t now = rr_wall_ms();

	fx_init(&f);
	for (int i = 1; i <= 4; i++)
		s_commit(&f, i, now - 100000 + i, 0);
	s_suspect(&f, 4);
	s_gc(&f, 1, 0, 0);
	/* step-3 is what a restart takes: kept; the suspect step-4 is not deleted for it. */
	CU_ASSERT_TRUE(s_committed(&f, 3) && s_committed(&f, 4));
	CU_ASSERT_FALSE(s_committed(&f, 1) || s_committed(&f, 2));
	fx_done(&f);
}

static void test_a_checkpoint_being_restored_is_kept_until_its_lease_ends(void)
{
	struct fx f;
	char token[RR_READER_TOKEN_MAX];
	int64_t now = rr_wall_ms();

	fx_init(&f);
	for (int i = 1; i <= 4; i++)
		s_commit(&f, i, now - 100000 + i, 0);
	CU_ASSERT_EQUAL_FATAL(rr_reader_begin(f.s, FX_RUN, "step-1", token), 0);
	s_gc(&f, 1, 0, 0);
	CU_ASSERT_TRUE(s_committed(&f, 1) && s_committed(&f, 4));
	CU_ASSERT_FALSE(s_committed(&f, 2) || s_committed(&f, 3));
	rr_reader_end(f.s, FX_RUN, "step-1", token);
	s_gc(&f, 1, 0, 0);
	CU_ASSERT_FALSE(s_committed(&f, 1));
	fx_done(&f);
}

/* A lease on a checkpoint whose manifest is gone (a restore read it just before another
 * machine's retention deleted it) holds every chunk back while it lasts. */
static void test_a_lease_on_a_deleted_checkpoint_holds_its_chunks(void)
{
	struct fx f;
	char key[RR_KEY_MAX], token[RR_READER_TOKEN_MAX];
	size_t before;
	int64_t now = rr_wall_ms();

	fx_init(&f);
	for (int i = 1; i <= 3; i++)
		s_commit(&f, i, now - 100000 + i, 0);
	CU_ASSERT_EQUAL_FATAL(rr_reader_begin(f.s, FX_RUN, "step-1", token), 0);
	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, FX_RUN, "step-1"), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_del(f.s, key), 0);
	before = fx_count_chunks(&f);
	s_gc(&f, 1, 0, 0);
	CU_ASSERT_EQUAL(fx_count_chunks(&f), before);
	rr_reader_end(f.s, FX_RUN, "step-1", token);
	s_gc(&f, 1, 0, 0);
	CU_ASSERT_EQUAL(fx_count_chunks(&f), 2); /* step-3's own and the shared one */
	fx_done(&f);
}

static void test_keep_every_keeps_the_oldest_of_each_period_for_keep_for(void)
{
	struct fx f;
	int64_t now = rr_wall_ms(), base = (now / (10 * S_MIN_MS) - 6) * 10 * S_MIN_MS;

	fx_init(&f);
	/* Two commits in each 10-minute period, six periods back, then the newest. */
	for (int p = 0; p < 6; p++) {
		s_commit(&f, 2 * p + 1, base + p * 10 * S_MIN_MS + 1000, 0);
		s_commit(&f, 2 * p + 2, base + p * 10 * S_MIN_MS + 5 * S_MIN_MS, 0);
	}
	/* keep-for 35 min: the periods that began within it (p = 3, 4, 5 at least). */
	s_gc(&f, 1, 10 * S_MIN_MS, 35 * S_MIN_MS);
	CU_ASSERT_TRUE(s_committed(&f, 12));                 /* the newest */
	CU_ASSERT_TRUE(s_committed(&f, 9) && s_committed(&f, 11)); /* oldest of p = 4, 5 */
	CU_ASSERT_FALSE(s_committed(&f, 10));                /* not the oldest of p = 4 */
	CU_ASSERT_FALSE(s_committed(&f, 1) || s_committed(&f, 3)); /* older than keep-for */
	/* Without keep-for: every period's oldest. */
	fx_done(&f);
	fx_init(&f);
	for (int p = 0; p < 3; p++) {
		s_commit(&f, 2 * p + 1, base + p * 10 * S_MIN_MS + 1000, 0);
		s_commit(&f, 2 * p + 2, base + p * 10 * S_MIN_MS + 5 * S_MIN_MS, 0);
	}
	s_gc(&f, 1, 10 * S_MIN_MS, 0);
	CU_ASSERT_TRUE(s_committed(&f, 1) && s_committed(&f, 3) && s_committed(&f, 5) &&
		       s_committed(&f, 6));
	CU_ASSERT_FALSE(s_committed(&f, 2) || s_committed(&f, 4));
	fx_done(&f);
}

/* The store's clock judges a chunk's age: with this machine's clock 20 minutes ahead of the
 * store's, a chunk the store wrote 2 s ago is 2 s old, not 20 minutes. */
static void test_grace_is_judged_by_the_store_clock(void)
{
	struct fx f;
	struct rr_gc_stats st;
	char key[RR_KEY_MAX];
	int64_t now = rr_wall_ms();
	struct timespec ts[2];

	fx_init(&f);
	s_commit(&f, 1, now - 1000, 0);
	s_commit(&f, 2, now, 0);
	/* The store's clock is this machine's minus 20 minutes: its chunks carry times that
	 * much behind (set them so), and its answers say so. */
	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, FX_RUN, "step-1"), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_del(f.s, key), 0);
	{
		char *dir = fx_join(f.store_dir, FX_RUN "/chunks");
		struct rr_dir_listing l;
		int64_t t = now - 20 * S_MIN_MS - 2000;
		ts[0] = ts[1] = (struct timespec){ .tv_sec = t / 1000, .tv_nsec = (t % 1000) * 1000000 };
		CU_ASSERT_EQUAL_FATAL(rr_dir_list(dir, &l), 0);
		for (size_t i = 0; i < l.n; i++) {
			char *p = fx_join(dir, l.files[i].path);
			CU_ASSERT_EQUAL(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
			free(p);
		}
		rr_dir_listing_free(&l);
		free(dir);
	}
	atomic_store(&f.s->clock_offset_ms, -20LL * S_MIN_MS);
	atomic_store(&f.s->clock_known, 1);
	CU_ASSERT_EQUAL_FATAL(rr_gc_run(f.s, FX_RUN, 1, 15 * S_MIN_MS, &st), 0);
	CU_ASSERT_EQUAL(st.chunks_deleted, 0);
	CU_ASSERT_EQUAL(st.chunks_young, 1); /* step-1's own chunk: 2 s old by the store */
	/* By this machine's clock it would have gone. */
	atomic_store(&f.s->clock_known, 0);
	CU_ASSERT_EQUAL_FATAL(rr_gc_run(f.s, FX_RUN, 1, 15 * S_MIN_MS, &st), 0);
	CU_ASSERT_EQUAL(st.chunks_deleted, 1);
	fx_done(&f);
}

/* ---- the property test ---- */

struct s_model {
	struct fx f;
	int step;          /* the trainer's step: the next commit is step + 1 */
	int from;          /* what the current attempt resumed from (0: fresh) */
	int newer;         /* it committed a newer one since */
	int failures;
	int readers[4];    /* steps restores in progress read */
	char tokens[4][RR_READER_TOKEN_MAX];
	int nreaders;
	unsigned salt;     /* a commit again of a name holds other bytes */
};

/* The newest committed checkpoint that is not suspect: what a restore takes. */
static int s_target(struct s_model *m)
{
	struct rr_catalog *c = NULL;
	int step = 0;

	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(m->f.s, FX_RUN, &c), 0);
	for (size_t i = 0; i < c->n && !step; i++)
		if (c->entries[i].committed && !rr_catalog_is_suspect(&c->entries[i]))
			step = atoi(c->entries[i].name + 5);
	rr_catalog_destroy(c);
	return step;
}

static int s_newest_proven(struct s_model *m)
{
	struct rr_catalog *c = NULL;
	const struct rr_catalog_entry *e;
	int step;

	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(m->f.s, FX_RUN, &c), 0);
	e = rr_catalog_newest_proven(c);
	step = e ? atoi(e->name + 5) : 0;
	rr_catalog_destroy(c);
	return step;
}

/* A machine (re)starts the trainer from the restore target. */
static void s_resume(struct s_model *m)
{
	m->from = m->step = s_target(m);
	m->newer = 0;
	m->failures = 0;
}

static void s_op(struct s_model *m, unsigned r, int64_t *clock)
{
	switch (r % 6) {
	case 0: case 1: /* a commit (durable) */
		m->step++;
		*clock += 1000;
		if (s_try_commit(&m->f, m->step, *clock, ++m->salt) != 0)
			break; /* not durable: the store keeps the other one */
		if (m->from && !m->newer) {
			m->newer = 1;
			s_proven(&m->f, m->from);
		}
		break;
	case 2: /* the trainer fails */
		if (m->from && !m->newer && ++m->failures >= 2)
			s_suspect(&m->f, m->from);
		if (m->from && !m->newer && m->failures >= 2)
			s_resume(m);
		else
			m->step = m->newer ? m->step : m->from;
		break;
	case 3: /* a new machine starts restoring */
		if (m->nreaders < 4 && s_target(m)) {
			int t = s_target(m);
			char name[32];
			snprintf(name, sizeof(name), "step-%d", t);
			CU_ASSERT_EQUAL_FATAL(rr_reader_begin(m->f.s, FX_RUN, name,
							      m->tokens[m->nreaders]), 0);
			m->readers[m->nreaders++] = t;
			s_resume(m);
		}
		break;
	case 4: /* a restore finishes */
		if (m->nreaders) {
			char name[32];
			int k = (int)(r / 6) % m->nreaders;
			snprintf(name, sizeof(name), "step-%d", m->readers[k]);
			rr_reader_end(m->f.s, FX_RUN, name, m->tokens[k]);
			m->readers[k] = m->readers[--m->nreaders];
			memcpy(m->tokens[k], m->tokens[m->nreaders], sizeof(m->tokens[k]));
		}
		break;
	case 5: { /* retention, under a random policy */
		int proven = s_newest_proven(m), target = s_target(m);
		s_gc(&m->f, 1 + (r / 6) % 3, (r / 18) % 2 ? 3000 : 0, (r / 36) % 2 ? 6000 : 0);
		if (proven)
			CU_ASSERT_TRUE(s_committed(&m->f, proven));
		if (target)
			CU_ASSERT_TRUE(s_committed(&m->f, target));
		for (int k = 0; k < m->nreaders; k++)
			CU_ASSERT_TRUE(s_committed(&m->f, m->readers[k]));
		break;
	}
	}
}

static void test_no_history_deletes_the_newest_proven_or_one_being_read(void)
{
	unsigned seed = 26;

	for (int h = 0; h < 40; h++) {
		struct s_model m;
		int64_t clock = rr_wall_ms() - 3600 * 1000;

		memset(&m, 0, sizeof(m));
		fx_init(&m.f);
		for (int op = 0; op < 30; op++)
			s_op(&m, (unsigned)rand_r(&seed), &clock);
		fx_done(&m.f);
		if (CU_get_number_of_failures())
			break; /* one history's failures say enough */
	}
}

static CU_TestInfo s_tests[] = {
	{ "test_the_newest_proven_checkpoint_outlives_keep",
	  test_the_newest_proven_checkpoint_outlives_keep },
	{ "test_suspect_checkpoints_are_not_counted_among_the_newest",
	  test_suspect_checkpoints_are_not_counted_among_the_newest },
	{ "test_a_checkpoint_being_restored_is_kept_until_its_lease_ends",
	  test_a_checkpoint_being_restored_is_kept_until_its_lease_ends },
	{ "test_a_lease_on_a_deleted_checkpoint_holds_its_chunks",
	  test_a_lease_on_a_deleted_checkpoint_holds_its_chunks },
	{ "test_keep_every_keeps_the_oldest_of_each_period_for_keep_for",
	  test_keep_every_keeps_the_oldest_of_each_period_for_keep_for },
	{ "test_grace_is_judged_by_the_store_clock", test_grace_is_judged_by_the_store_clock },
	{ "test_no_history_deletes_the_newest_proven_or_one_being_read",
	  test_no_history_deletes_the_newest_proven_or_one_being_read },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("retention", s_tests)
