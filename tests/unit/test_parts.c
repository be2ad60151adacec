/* CUnit suite "parts": multi-node checkpoints (docs/how-it-works.md, "What is stored") against
 * a real file store. Two "nodes" are two checkpoint directories persisting into one store, each
 * as its part; the agent that sees the last part commits; restore takes one node's view; parts
 * no commit names are swept after the grace. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

#include "rr/catalog.h"
#include "rr/clock.h"
#include "rr/gc.h"
#include "rr/layout.h"
#include "rr/parts.h"
#include "rr/restore.h"

#include "ckpt_fixture.h"
#include "cunit_main.h"

#define S_NODES 2

struct s_two {
	struct fx f;
	char *dir[S_NODES]; /* each node's checkpoint directory */
};

static void s_two_init(struct s_two *t)
{
	fx_init(&t->f);
	t->dir[0] = t->f.ckpt_dir; /* the fixture's own */
	t->dir[1] = fx_join(t->f.root, "node1");
	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(t->dir[1]), 0);
}

static void s_two_done(struct s_two *t)
{
	free(t->dir[1]);
	fx_done(&t->f);
}

/* Node rank's step files: different bytes per node, and one path both nodes have. */
static void s_write_step(struct s_two *t, unsigned rank, const char *name, unsigned seed)
{
	char *d = fx_join(t->dir[rank], name);
	fx_write_random(d, "model.bin", 300 * 1024, seed * 10 + rank, 0644);
	fx_write_str(d, rank ? "rank1/only.txt" : "rank0/only.txt", rank ? "one" : "zero", 0600);
	free(d);
}

static int s_persist_part(struct s_two *t, unsigned rank, const char *name, int64_t ms)
{
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats st;
	o.nnodes = S_NODES;
	o.node_rank = rank;
	return rr_persist_checkpoint(t->f.s, t->dir[rank], name, ms, &o, NULL, &st);
}

static int s_exists(struct fx *f, const char *key)
{
	return rr_store_head(f->s, key, NULL) == 0;
}

static void test_commit_waits_for_the_last_part_and_each_node_restores_its_own(void)
{
	struct s_two t;
	struct rr_manifest *commit = NULL;
	struct rr_catalog *c = NULL;
	struct rr_restore_stats rs;
	char key[RR_KEY_MAX], why[512];

	s_two_init(&t);
	s_write_step(&t, 0, "step-1", 1);
	s_write_step(&t, 1, "step-1", 1);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 0, "step-1", 1000), 0);
	CU_ASSERT_EQUAL(rr_key_part(key, FX_RUN, "step-1", 0), 0);
	CU_ASSERT(s_exists(&t.f, key));
	CU_ASSERT_EQUAL(rr_parts_commit(t.f.s, FX_RUN, "step-1", S_NODES, "h0", &commit),
			RR_PARTS_NOT_YET);
	CU_ASSERT_PTR_NULL(commit);
	CU_ASSERT_EQUAL(rr_key_manifest(key, FX_RUN, "step-1"), 0);
	CU_ASSERT(!s_exists(&t.f, key));
	/* A partial checkpoint is not in the catalog: nothing to restore, ls or keep. */
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(t.f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(c->n, 0);
	CU_ASSERT_PTR_NULL(rr_catalog_newest(c));
	rr_catalog_destroy(c);

	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 1, "step-1", 1200), 0);
	CU_ASSERT_EQUAL_FATAL(rr_parts_commit(t.f.s, FX_RUN, "step-1", S_NODES, "h1", &commit),
			      0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(commit);
	CU_ASSERT_EQUAL(commit->nfiles, 4);
	CU_ASSERT_EQUAL(commit->committed_unix_ms, 1200); /* the last node's */
	CU_ASSERT(s_exists(&t.f, key));
	rr_manifest_destroy(commit);

	for (unsigned rank = 0; rank < S_NODES; rank++) {
		CU_ASSERT_EQUAL_FATAL(rr_catalog_load(t.f.s, FX_RUN, &c), 0);
		CU_ASSERT_EQUAL(c->n, 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(rr_catalog_newest(c));
		CU_ASSERT_EQUAL_FATAL(rr_parts_catalog_view(t.f.s, c, S_NODES, rank), 0);
		const struct rr_catalog_entry *e = rr_catalog_newest(c);
		CU_ASSERT_EQUAL(e->manifest->nfiles, 2);
		char *to = fx_join(t.f.root, rank ? "restore1" : "restore0");
		CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(t.f.s, FX_RUN, e->manifest, to, 2, &rs,
							    why, sizeof(why)), 0);
		char *src = fx_join(t.dir[rank], "step-1"), *dst = fx_join(to, "step-1");
		FX_ASSERT_SAME_TREE(src, dst);
		free(src);
		free(dst);
		free(to);
		rr_catalog_destroy(c);
	}
	s_two_done(&t);
}

static void test_both_agents_seeing_the_last_part_both_commit_the_same(void)
{
	struct s_two t;
	struct rr_manifest *a = NULL, *b = NULL;

	s_two_init(&t);
	s_write_step(&t, 0, "step-1", 1);
	s_write_step(&t, 1, "step-1", 1);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 0, "step-1", 1000), 0);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 1, "step-1", 1000), 0);
	/* Both listed both parts; one's create-only write lands first, the other finds the
	 * same content there: a commit for both. */
	CU_ASSERT_EQUAL(rr_parts_commit(t.f.s, FX_RUN, "step-1", S_NODES, "h0", &a), 0);
	CU_ASSERT_EQUAL(rr_parts_commit(t.f.s, FX_RUN, "step-1", S_NODES, "h1", &b), 0);
	CU_ASSERT_PTR_NOT_NULL(a);
	CU_ASSERT_PTR_NOT_NULL(b);
	rr_manifest_destroy(a);
	rr_manifest_destroy(b);
	s_two_done(&t);
}

struct s_racer {
	struct fx *f;
	const char *host;
	int rc;
};

static void *s_race(void *arg)
{
	struct s_racer *r = arg;
	r->rc = rr_parts_commit(r->f->s, FX_RUN, "step-1", S_NODES, r->host, NULL);
	return NULL;
}

static void test_two_threads_committing_at_once_both_succeed_with_one_manifest(void)
{
	struct s_two t;
	struct rr_catalog *c = NULL;

	s_two_init(&t);
	s_write_step(&t, 0, "step-1", 1);
	s_write_step(&t, 1, "step-1", 1);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 0, "step-1", 1000), 0);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 1, "step-1", 1000), 0);
	for (int round = 0; round < 20; round++) {
		struct s_racer r[2] = { { &t.f, "h0", -99 }, { &t.f, "h1", -99 } };
		pthread_t th[2];
		char key[RR_KEY_MAX];
		CU_ASSERT_EQUAL(rr_key_manifest(key, FX_RUN, "step-1"), 0);
		CU_ASSERT_EQUAL(rr_store_del(t.f.s, key), 0);
		for (int i = 0; i < 2; i++)
			CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, s_race, &r[i]), 0);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(r[0].rc, 0);
		CU_ASSERT_EQUAL(r[1].rc, 0);
	}
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(t.f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(c->n, 1);
	CU_ASSERT_PTR_NOT_NULL(rr_catalog_newest(c));
	rr_catalog_destroy(c);
	s_two_done(&t);
}

static void test_a_part_already_stored_with_other_content_is_an_error(void)
{
	struct s_two t;

	s_two_init(&t);
	s_write_step(&t, 1, "step-1", 1);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 1, "step-1", 1000), 0);
	/* The same files again: the store has this very part. */
	CU_ASSERT_EQUAL(s_persist_part(&t, 1, "step-1", 1000), RR_EEXIST);
	/* Another machine's step-1 (other bytes) must not be told it is durable. */
	s_write_step(&t, 1, "step-1", 2);
	CU_ASSERT_EQUAL(s_persist_part(&t, 1, "step-1", 1000), RR_EPRECOND);
	s_two_done(&t);
}

static void test_a_commit_manifest_with_other_content_is_an_error(void)
{
	struct s_two t;
	char key[RR_KEY_MAX];

	s_two_init(&t);
	s_write_step(&t, 0, "step-1", 1);
	s_write_step(&t, 1, "step-1", 1);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 0, "step-1", 1000), 0);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 1, "step-1", 1000), 0);
	CU_ASSERT_EQUAL_FATAL(rr_parts_commit(t.f.s, FX_RUN, "step-1", S_NODES, "h0", NULL), 0);
	/* Node 1's part replaced by another state (a machine that restored an older step
	 * and wrote step-1 again): its commit finds the committed one and fails. */
	CU_ASSERT_EQUAL(rr_key_part(key, FX_RUN, "step-1", 1), 0);
	CU_ASSERT_EQUAL(rr_store_del(t.f.s, key), 0);
	s_write_step(&t, 1, "step-1", 3);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 1, "step-1", 1000), 0);
	CU_ASSERT_EQUAL(rr_parts_commit(t.f.s, FX_RUN, "step-1", S_NODES, "h1", NULL),
			RR_EPRECOND);
	s_two_done(&t);
}

static void test_a_store_written_with_another_node_count_is_refused(void)
{
	struct s_two t;
	struct rr_catalog *c = NULL;
	char why[300];

	s_two_init(&t);
	s_write_step(&t, 0, "step-1", 1);
	s_write_step(&t, 1, "step-1", 1);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 0, "step-1", 1000), 0);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 1, "step-1", 1000), 0);
	/* A part of rank 1 is not below --nnodes 1. */
	CU_ASSERT_EQUAL(rr_parts_commit(t.f.s, FX_RUN, "step-1", 1, "h", NULL), RR_EINVAL);
	CU_ASSERT_EQUAL_FATAL(rr_parts_commit(t.f.s, FX_RUN, "step-1", S_NODES, "h", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(t.f.s, FX_RUN, &c), 0);
	struct rr_manifest *m = c->entries[0].manifest;
	CU_ASSERT_EQUAL(rr_parts_view(t.f.s, FX_RUN, m, 3, 0, why, sizeof(why)), RR_EINVAL);
	CU_ASSERT(strstr(why, "2 nodes") != NULL);
	CU_ASSERT_EQUAL(rr_parts_view(t.f.s, FX_RUN, m, 1, 0, why, sizeof(why)), RR_EINVAL);
	CU_ASSERT(strstr(why, "--nnodes 1") != NULL);
	CU_ASSERT_EQUAL(m->nfiles, 4); /* untouched by a refusal */
	rr_catalog_destroy(c);

	/* A single-node checkpoint asked for by a two-node job. */
	s_write_step(&t, 0, "step-2", 2);
	CU_ASSERT_EQUAL_FATAL(fx_persist(&t.f, "step-2", 2000, NULL, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(t.f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(c->n, 2);
	CU_ASSERT_EQUAL(rr_parts_catalog_view(t.f.s, c, S_NODES, 0), RR_EINVAL);
	rr_catalog_destroy(c);
	s_two_done(&t);
}

/* A node whose checkpoint directory held no files stores an empty part: the commit names no
 * file of it, and is still a checkpoint of S_NODES nodes that each node restores. */
static void test_a_node_with_no_files_is_a_part_and_every_node_restores(void)
{
	struct s_two t;
	struct rr_catalog *c = NULL;
	struct rr_restore_stats rs;
	char name[256], why[300];

	s_two_init(&t);
	s_write_step(&t, 0, "step-1", 1);
	char *empty = fx_join(t.dir[1], "step-1");
	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(empty), 0);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 0, "step-1", 1000), 0);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 1, "step-1", 1000), 0);
	CU_ASSERT_EQUAL_FATAL(rr_parts_commit(t.f.s, FX_RUN, "step-1", S_NODES, "h", NULL), 0);
	for (unsigned rank = 0; rank < S_NODES; rank++) {
		char *to = fx_join(t.f.root, rank ? "restore1" : "restore0");
		char *src = fx_join(t.dir[rank], "step-1"), *dst = fx_join(to, "step-1");
		CU_ASSERT_EQUAL_FATAL(rr_catalog_list(t.f.s, FX_RUN, &c), 0);
		CU_ASSERT_EQUAL(rr_restore_newest(t.f.s, c, S_NODES, rank, to, 2, name,
						  sizeof(name), &rs), 0);
		CU_ASSERT_STRING_EQUAL(name, "step-1");
		FX_ASSERT_SAME_TREE(src, dst);
		free(src);
		free(dst);
		free(to);
		rr_catalog_destroy(c);
	}
	/* Still a job of 2 nodes: 3 are refused, by the parts' count. */
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(t.f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(rr_parts_view(t.f.s, FX_RUN, c->entries[0].manifest, 3, 2, why,
				      sizeof(why)), RR_EINVAL);
	CU_ASSERT(strstr(why, "job of 2 nodes") != NULL);
	rr_catalog_destroy(c);
	free(empty);
	s_two_done(&t);
}

/* A job of 3 nodes whose last node stored an empty part is refused to --nnodes 2, though
 * the commit names files of ranks 0 and 1 only: the parts say 3. Before, ranks 0 and 1 each
 * restored their part of a 3-node layout. */
static void test_an_empty_part_of_a_larger_job_is_refused(void)
{
	struct s_two t;
	struct rr_catalog *c = NULL;
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats st;
	char why[300];
	char *node2, *empty;

	s_two_init(&t);
	node2 = fx_join(t.f.root, "node2");
	empty = fx_join(node2, "step-1");
	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(empty), 0);
	s_write_step(&t, 0, "step-1", 1);
	s_write_step(&t, 1, "step-1", 1);
	o.nnodes = 3;
	for (unsigned rank = 0; rank < 3; rank++) {
		o.node_rank = rank;
		CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(t.f.s, rank < 2 ? t.dir[rank] : node2,
							    "step-1", 1000, &o, NULL, &st), 0);
	}
	CU_ASSERT_EQUAL_FATAL(rr_parts_commit(t.f.s, FX_RUN, "step-1", 3, "h", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(t.f.s, FX_RUN, &c), 0);
	why[0] = '\0';
	CU_ASSERT_EQUAL(rr_parts_view(t.f.s, FX_RUN, c->entries[0].manifest, 2, 0, why,
				      sizeof(why)), RR_EINVAL);
	CU_ASSERT(strstr(why, "job of 3 nodes") != NULL);
	rr_catalog_destroy(c);
	/* And to --nnodes 3 it is what it was: rank 0's files. */
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(t.f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(rr_parts_view(t.f.s, FX_RUN, c->entries[0].manifest, 3, 0, why,
				      sizeof(why)), 0);
	rr_catalog_destroy(c);
	free(empty);
	free(node2);
	s_two_done(&t);
}

/* Two nodes commit step-1 and step-2; *m2 (the caller's) is step-2's commit manifest. */
static void s_two_steps(struct s_two *t, struct rr_manifest **m2)
{
	for (unsigned step = 1; step <= 2; step++) {
		char name[16];
		snprintf(name, sizeof(name), "step-%u", step);
		for (unsigned rank = 0; rank < S_NODES; rank++) {
			s_write_step(t, rank, name, step);
			CU_ASSERT_EQUAL_FATAL(s_persist_part(t, rank, name, step * 1000), 0);
		}
		CU_ASSERT_EQUAL_FATAL(rr_parts_commit(t->f.s, FX_RUN, name, S_NODES, "h",
						      step == 2 ? m2 : NULL), 0);
	}
}

/* Node rank's restore of the newest into <root>/restore<rank>; its result, the name in name. */
static int s_restore_node(struct s_two *t, struct rr_catalog *c, unsigned rank, char *name,
			  struct rr_restore_stats *st)
{
	char dir[32];
	snprintf(dir, sizeof(dir), "restore%u", rank);
	char *to = fx_join(t->f.root, dir);
	int rc = rr_restore_newest(t->f.s, c, S_NODES, rank, to, 2, name, 256, st);
	free(to);
	return rc;
}

/* A node that finds its part of the newest checkpoint damaged must not fall back alone (the
 * other nodes restore the newest: the trainers would resume from different steps): it marks
 * the checkpoint suspect for every node and fails; every node's next start restores the one
 * before. */
static void test_a_damaged_part_is_marked_suspect_for_every_node_instead_of_a_lone_fallback(void)
{
	struct s_two t;
	struct rr_manifest *m2 = NULL;
	struct rr_catalog *c = NULL;
	struct rr_restore_stats st;
	struct rr_suspect mark;
	char name[256];

	s_two_init(&t);
	s_two_steps(&t, &m2);
	fx_corrupt_chunk(&t.f, fx_first_chunk(m2, RR_PART_DIR "1/model.bin"));
	/* Node 0's part is intact: it restores step-2 (nothing has said otherwise yet). */
	CU_ASSERT_EQUAL_FATAL(rr_catalog_list(t.f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(s_restore_node(&t, c, 0, name, &st), 0);
	CU_ASSERT_STRING_EQUAL(name, "step-2");
	rr_catalog_destroy(c);
	/* Node 1 finds the damage: no step-1 of its own, a mark for everyone. */
	snprintf(name, sizeof(name), "untouched");
	CU_ASSERT_EQUAL_FATAL(rr_catalog_list(t.f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(s_restore_node(&t, c, 1, name, &st), RR_ECORRUPT);
	CU_ASSERT_STRING_EQUAL(name, "untouched");
	CU_ASSERT_FALSE(fx_exists_in(t.f.root, "restore1/step-1"));
	rr_catalog_destroy(c);
	CU_ASSERT_EQUAL_FATAL(rr_mark_read_suspect(t.f.s, FX_RUN, "step-2", &mark), 0);
	CU_ASSERT_EQUAL(mark.for_committed_ms, m2->committed_unix_ms);
	CU_ASSERT_PTR_NOT_NULL(strstr(mark.why, "node 1 of 2"));
	CU_ASSERT_PTR_NOT_NULL(strstr(mark.why, "does not match its sha256"));
	/* The job relaunched: both nodes pass step-2 over. */
	for (unsigned rank = 0; rank < S_NODES; rank++) {
		CU_ASSERT_EQUAL_FATAL(rr_catalog_list(t.f.s, FX_RUN, &c), 0);
		CU_ASSERT_EQUAL(s_restore_node(&t, c, rank, name, &st), 0);
		CU_ASSERT_STRING_EQUAL(name, "step-1");
		CU_ASSERT_EQUAL(st.suspects, 1);
		CU_ASSERT_EQUAL(st.fallbacks, 0);
		rr_catalog_destroy(c);
	}
	rr_manifest_destroy(m2);
	s_two_done(&t);
}

/* Node 1 marks step-2 suspect after node 0 listed the catalog: node 0, once it has restored
 * its part, finds the mark and passes step-2 over too. */
static void test_a_mark_made_while_a_node_restores_is_honoured(void)
{
	struct s_two t;
	struct rr_manifest *m2 = NULL;
	struct rr_catalog *c = NULL;
	struct rr_restore_stats st;
	struct rr_suspect mark = { .exit_status = -1 };
	char name[256];

	s_two_init(&t);
	s_two_steps(&t, &m2);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_list(t.f.s, FX_RUN, &c), 0);
	mark.for_committed_ms = m2->committed_unix_ms;
	snprintf(mark.why, sizeof(mark.why), "node 1 of 2 found its part damaged");
	CU_ASSERT_EQUAL_FATAL(rr_mark_suspect(t.f.s, FX_RUN, "step-2", &mark), 0);
	CU_ASSERT_EQUAL(s_restore_node(&t, c, 0, name, &st), 0);
	CU_ASSERT_STRING_EQUAL(name, "step-1");
	CU_ASSERT_EQUAL(st.suspects, 1);
	CU_ASSERT_STRING_EQUAL(st.suspect, "step-2");
	/* The catalog tells of the mark as if listed: the agent sets aside the copy of step-2
	 * this node restored before it saw the mark (run.c, s_note_passed_over), so the trainer
	 * does not resume from it. Before, only listed marks were, and it did. */
	CU_ASSERT_TRUE(rr_catalog_is_suspect(rr_catalog_find(c, "step-2")));
	rr_catalog_destroy(c);
	/* A mark made for another manifest of that name is not this checkpoint's. */
	mark.for_committed_ms = m2->committed_unix_ms - 1;
	CU_ASSERT_EQUAL_FATAL(rr_mark_suspect(t.f.s, FX_RUN, "step-2", &mark), 0);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_list(t.f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(s_restore_node(&t, c, 0, name, &st), 0);
	CU_ASSERT_STRING_EQUAL(name, "step-2");
	rr_catalog_destroy(c);
	rr_manifest_destroy(m2);
	s_two_done(&t);
}

static void test_sweep_deletes_partial_parts_after_the_grace_only(void)
{
	struct s_two t;
	char key0[RR_KEY_MAX], key1[RR_KEY_MAX], key2[RR_KEY_MAX];
	size_t n = 99;

	s_two_init(&t);
	s_write_step(&t, 0, "step-1", 1);
	s_write_step(&t, 1, "step-1", 1);
	s_write_step(&t, 0, "step-2", 2);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 0, "step-1", 1000), 0);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 1, "step-1", 1000), 0);
	CU_ASSERT_EQUAL_FATAL(rr_parts_commit(t.f.s, FX_RUN, "step-1", S_NODES, "h", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 0, "step-2", 2000), 0); /* node 1 never did */
	CU_ASSERT_EQUAL(rr_key_part(key0, FX_RUN, "step-1", 0), 0);
	CU_ASSERT_EQUAL(rr_key_part(key1, FX_RUN, "step-1", 1), 0);
	CU_ASSERT_EQUAL(rr_key_part(key2, FX_RUN, "step-2", 0), 0);

	/* Within the grace: node 1 may be about to commit step-2. */
	CU_ASSERT_EQUAL(rr_parts_sweep(t.f.s, FX_RUN, 3600 * 1000, &n), 0);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT(s_exists(&t.f, key2));
	/* Past it (a negative grace puts every part behind it): the partial one goes, the
	 * committed checkpoint's parts stay. */
	CU_ASSERT_EQUAL(rr_parts_sweep(t.f.s, FX_RUN, -1, &n), 0);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT(!s_exists(&t.f, key2));
	CU_ASSERT(s_exists(&t.f, key0));
	CU_ASSERT(s_exists(&t.f, key1));
	s_two_done(&t);
}

/* Parts are aged by the store's clock, as retention ages chunks: on a machine whose clock
 * runs 2 h ahead of the store, a part the store wrote a moment ago (by its clock) is young,
 * not 2 h old. Before, the sweep aged it by this machine's clock and deleted it while its
 * last node might still commit. (A file store's times are this machine's: the part is
 * dated 2 h back, and the store's clock told 2 h behind.) */
static void test_sweep_ages_parts_by_the_store_clock(void)
{
	struct s_two t;
	char key[RR_KEY_MAX], date[64], *path;
	size_t n = 99;
	time_t behind = time(NULL) - 2 * 3600;
	int64_t back = rr_wall_ms() - 2 * 3600 * 1000;
	struct timespec ts[2] = { { .tv_sec = back / 1000 }, { .tv_sec = back / 1000 } };

	s_two_init(&t);
	s_write_step(&t, 0, "step-1", 1);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 0, "step-1", 1000), 0); /* node 1 not yet */
	CU_ASSERT_EQUAL_FATAL(rr_key_part(key, FX_RUN, "step-1", 0), 0);
	path = fx_join(t.f.store_dir, key);
	CU_ASSERT_EQUAL_FATAL(utimensat(AT_FDCWD, path, ts, 0), 0);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime(&behind));
	rr_store_observe_date(t.f.s, date);
	CU_ASSERT_EQUAL(rr_parts_sweep(t.f.s, FX_RUN, 3600 * 1000, &n), 0);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT(s_exists(&t.f, key));
	free(path);
	s_two_done(&t);
}

/* Ages every chunk in the store by age_ms (their files' times: a file store's clock). */
static void s_age_all_chunks(struct s_two *t, int64_t age_ms)
{
	char key[RR_KEY_MAX], cmd[1024], *dir;
	int64_t then = rr_wall_ms() - age_ms;

	CU_ASSERT_EQUAL_FATAL(rr_key_chunk(key, FX_RUN, "00"), 0);
	dir = fx_join(t->f.store_dir, key);
	*strrchr(dir, '/') = '\0'; /* .../chunks/00 */
	*strrchr(dir, '/') = '\0'; /* .../chunks */
	snprintf(cmd, sizeof(cmd), "find '%s' -type f -exec touch -m -d @%lld {} +", dir,
		 (long long)(then / 1000));
	CU_ASSERT_EQUAL(system(cmd), 0);
	free(dir);
}

/* gc keeps the chunks a part names while no commit names them yet: the part's node reused
 * old chunks (unchanged tensors), and its last node commits later. Before, only commit
 * manifests counted, gc deleted those chunks, and the commit that followed named chunks no
 * longer in the store: the newest checkpoint of the job could not be restored. */
static void test_gc_keeps_the_chunks_of_a_part_no_commit_names_yet(void)
{
	struct s_two t;
	struct rr_gc_stats gs;
	struct rr_catalog *c = NULL;
	const struct rr_catalog_entry *e;

	s_two_init(&t);
	s_write_step(&t, 0, "step-1", 1);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 0, "step-1", 1000), 0); /* node 1 not yet */
	s_age_all_chunks(&t, 2 * 3600 * 1000); /* older than the grace: as reused old chunks */
	CU_ASSERT_EQUAL(rr_gc_run(t.f.s, FX_RUN, 1, 3600 * 1000, &gs), 0);
	CU_ASSERT_EQUAL(gs.chunks_deleted, 0);

	s_write_step(&t, 1, "step-1", 1);
	CU_ASSERT_EQUAL_FATAL(s_persist_part(&t, 1, "step-1", 1000), 0);
	CU_ASSERT_EQUAL_FATAL(rr_parts_commit(t.f.s, FX_RUN, "step-1", S_NODES, "h", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(t.f.s, FX_RUN, &c), 0);
	e = rr_catalog_find(c, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(e->committed, 1);
	CU_ASSERT_STRING_EQUAL(e->problem, "");
	rr_catalog_destroy(c);
	s_two_done(&t);
}

static void test_part_keys_parse_back_and_refuse_lookalikes(void)
{
	char key[RR_KEY_MAX], name[256];
	unsigned rank = 99;

	CU_ASSERT_EQUAL(rr_key_part(key, "r", "step-7", 12), 0);
	CU_ASSERT_STRING_EQUAL(key, "r/checkpoints/step-7/parts/12.json");
	CU_ASSERT(rr_key_parse_part(key, "r", name, sizeof(name), &rank));
	CU_ASSERT_STRING_EQUAL(name, "step-7");
	CU_ASSERT_EQUAL(rank, 12);
	CU_ASSERT(!rr_key_parse_part("r/checkpoints/step-7/parts/012.json", "r", name,
				     sizeof(name), &rank));
	CU_ASSERT(!rr_key_parse_part("r/checkpoints/step-7/parts/1.json.tmp", "r", name,
				     sizeof(name), &rank));
	CU_ASSERT(!rr_key_parse_part("r/checkpoints/step-7/parts/.json", "r", name,
				     sizeof(name), &rank));
	CU_ASSERT(!rr_key_parse_part("r/checkpoints/step-7/manifest.json", "r", name,
				     sizeof(name), &rank));
	CU_ASSERT(!rr_key_parse_part("q/checkpoints/step-7/parts/1.json", "r", name,
				     sizeof(name), &rank));
}

static CU_TestInfo s_tests[] = {
	{ "gc_keeps_the_chunks_of_a_part_no_commit_names_yet",
	  test_gc_keeps_the_chunks_of_a_part_no_commit_names_yet },
	{ "commit_waits_for_the_last_part_and_each_node_restores_its_own",
	  test_commit_waits_for_the_last_part_and_each_node_restores_its_own },
	{ "both_agents_seeing_the_last_part_both_commit_the_same",
	  test_both_agents_seeing_the_last_part_both_commit_the_same },
	{ "two_threads_committing_at_once_both_succeed_with_one_manifest",
	  test_two_threads_committing_at_once_both_succeed_with_one_manifest },
	{ "a_part_already_stored_with_other_content_is_an_error",
	  test_a_part_already_stored_with_other_content_is_an_error },
	{ "a_commit_manifest_with_other_content_is_an_error",
	  test_a_commit_manifest_with_other_content_is_an_error },
	{ "a_store_written_with_another_node_count_is_refused",
	  test_a_store_written_with_another_node_count_is_refused },
	{ "a_node_with_no_files_is_a_part_and_every_node_restores",
	  test_a_node_with_no_files_is_a_part_and_every_node_restores },
	{ "a_damaged_part_is_marked_suspect_for_every_node_instead_of_a_lone_fallback",
	  test_a_damaged_part_is_marked_suspect_for_every_node_instead_of_a_lone_fallback },
	{ "an_empty_part_of_a_larger_job_is_refused", test_an_empty_part_of_a_larger_job_is_refused },
	{ "a_mark_made_while_a_node_restores_is_honoured",
	  test_a_mark_made_while_a_node_restores_is_honoured },
	{ "sweep_deletes_partial_parts_after_the_grace_only",
	  test_sweep_deletes_partial_parts_after_the_grace_only },
	{ "sweep_ages_parts_by_the_store_clock", test_sweep_ages_parts_by_the_store_clock },
	{ "part_keys_parse_back_and_refuse_lookalikes",
	  test_part_keys_parse_back_and_refuse_lookalikes },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("parts", s_tests)
