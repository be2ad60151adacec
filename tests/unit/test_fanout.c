/* CUnit suite "fanout": multi-node notices through a real file store. A notice another
 * node wrote reaches this node's watcher with its deadline; this node's own notices and
 * notices from before the agent started, and notices past their deadline, do not; an
 * announced notice is written to notices/ under this node's rank; a listing asked for now
 * lists at once; each of many nodes' notices is taken once. */
#include <poll.h>

#include "rr/clock.h"
#include "fanout.h"

#include "ckpt_fixture.h"
#include "cunit_main.h"

/* Waits (a failure guard, not a measurement) until the watcher has a notice. */
static int s_wait_notice(struct rr_fanout *f, struct rr_notice *n)
{
	for (int i = 0; i < 300; i++) {
		struct pollfd p = { .fd = rr_fanout_fd(f), .events = POLLIN };
		poll(&p, 1, 100);
		if (rr_fanout_next(f, n))
			return 1;
	}
	return 0;
}

struct s_count {
	int n;
	char last[RR_KEY_MAX];
};

static int s_on_key(const struct rr_store_entry *e, void *ud)
{
	struct s_count *c = ud;
	c->n++;
	snprintf(c->last, sizeof(c->last), "%s", e->key);
	return 0;
}

static void test_another_nodes_notice_arrives_with_its_deadline(void)
{
	struct fx f;
	struct rr_fanout *w = NULL;
	struct rr_notice in = { .kind = RR_NOTICE_PREEMPT, .source = RR_SOURCE_AWS,
				.deadline_unix = rr_wall_ms() / 1000 + 120,
				.received_unix = rr_wall_ms() / 1000 };
	struct rr_notice got;

	fx_init(&f);
	CU_ASSERT_EQUAL_FATAL(rr_fanout_start(f.s, FX_RUN, 0, rr_wall_ms() - 1000, &w), 0);
	CU_ASSERT_EQUAL(rr_fanout_publish(f.s, FX_RUN, 1, &in), 0);
	CU_ASSERT_FATAL(s_wait_notice(w, &got));
	CU_ASSERT_EQUAL(got.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_EQUAL(got.source, RR_SOURCE_NODE);
	CU_ASSERT_EQUAL(got.deadline_unix, in.deadline_unix);
	/* Taken once: the same key does not come again. */
	CU_ASSERT_EQUAL(rr_fanout_next(w, &got), 0);
	rr_fanout_stop(w);
	fx_done(&f);
}

static void test_own_and_earlier_notices_are_ignored_and_an_announce_is_written(void)
{
	struct fx f;
	struct rr_fanout *w = NULL, *other = NULL;
	struct rr_notice n = { .kind = RR_NOTICE_TERMINATE, .source = RR_SOURCE_FILE,
			       .received_unix = rr_wall_ms() / 1000 };
	struct rr_notice got;
	struct s_count c = { 0 };
	char prefix[RR_KEY_MAX];

	fx_init(&f);
	/* Before this agent started: an earlier generation's notice. */
	CU_ASSERT_EQUAL(rr_fanout_publish(f.s, FX_RUN, 1, &n), 0);
	CU_ASSERT_EQUAL_FATAL(rr_fanout_start(f.s, FX_RUN, 0, rr_wall_ms() + 5, &w), 0);
	/* Node 1's watcher from now on; node 0 announces. */
	CU_ASSERT_EQUAL_FATAL(rr_fanout_start(f.s, FX_RUN, 1, rr_wall_ms() - 1, &other),
			      0);
	usleep(10 * 1000);
	rr_fanout_announce(w, &n);
	CU_ASSERT_FATAL(s_wait_notice(other, &got)); /* node 1 hears node 0 */
	CU_ASSERT_EQUAL(got.kind, RR_NOTICE_TERMINATE);
	/* Node 0 heard neither its own notice nor the earlier one. */
	CU_ASSERT_EQUAL(rr_fanout_next(w, &got), 0);
	rr_fanout_stop(w);
	rr_fanout_stop(other);
	CU_ASSERT_EQUAL(rr_key_notices_prefix(prefix, FX_RUN), 0);
	CU_ASSERT_EQUAL(rr_store_list(f.s, prefix, s_on_key, &c), 0);
	CU_ASSERT_EQUAL(c.n, 2);
	fx_done(&f);
}

/* rr_fanout_poll_now: a notice written a moment ago is there when it returns, not at the
 * next listing a second later (the agent's last look as a trainer exits 0). */
static void test_poll_now_lists_at_once(void)
{
	struct fx f;
	struct rr_fanout *w = NULL;
	struct rr_notice in = { .kind = RR_NOTICE_PREEMPT, .source = RR_SOURCE_FILE,
				.received_unix = rr_wall_ms() / 1000 };
	struct rr_notice got;

	fx_init(&f);
	CU_ASSERT_EQUAL_FATAL(rr_fanout_start(f.s, FX_RUN, 0, rr_wall_ms() - 1000, &w), 0);
	CU_ASSERT_EQUAL(rr_fanout_poll_now(w, 5000), 0); /* the first listing: nothing */
	CU_ASSERT_EQUAL(rr_fanout_next(w, &got), 0);
	CU_ASSERT_EQUAL(rr_fanout_publish(f.s, FX_RUN, 1, &in), 0);
	CU_ASSERT_EQUAL(rr_fanout_poll_now(w, 5000), 0);
	CU_ASSERT_EQUAL(rr_fanout_next(w, &got), 1);
	CU_ASSERT_EQUAL(got.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_EQUAL(got.source, RR_SOURCE_NODE);
	rr_fanout_stop(w);
	fx_done(&f);
}

/* A notice from each of 70 other nodes (one spot reclaim across a large job) is taken once
 * each. Before, past 64 remembered, the 65th was taken again at every listing, for ever. */
static void test_many_nodes_notices_are_each_taken_once(void)
{
	struct fx f;
	struct rr_fanout *w = NULL;
	struct rr_notice in = { .kind = RR_NOTICE_PREEMPT, .source = RR_SOURCE_AWS,
				.deadline_unix = rr_wall_ms() / 1000 + 600,
				.received_unix = rr_wall_ms() / 1000 };
	struct rr_notice got;
	int taken = 0;

	fx_init(&f);
	CU_ASSERT_EQUAL_FATAL(rr_fanout_start(f.s, FX_RUN, 0, rr_wall_ms() - 1000, &w), 0);
	for (unsigned rank = 1; rank <= 70; rank++)
		CU_ASSERT_EQUAL(rr_fanout_publish(f.s, FX_RUN, rank, &in), 0);
	/* A listing takes at most one new notice, and the fan-out keeps only the newest one not
	 * yet read (they all say the same: the job is going), so a listing of the fan-out's own
	 * in between may pass one over (a loaded sanitizer run): most are taken, none twice. */
	for (int i = 0, idle = 0; i < 300 && idle < 10; i++) {
		int got1;
		CU_ASSERT_EQUAL(rr_fanout_poll_now(w, 5000), 0);
		got1 = rr_fanout_next(w, &got);
		taken += got1;
		idle = got1 ? 0 : idle + 1;
	}
	CU_ASSERT(taken >= 50 && taken <= 70);
	for (int i = 0, before = taken; i < 5; i++) { /* and none of them again */
		CU_ASSERT_EQUAL(rr_fanout_poll_now(w, 5000), 0);
		taken += rr_fanout_next(w, &got);
		CU_ASSERT_EQUAL(taken, before);
	}
	rr_fanout_stop(w);
	fx_done(&f);
}

/* A notice whose deadline has passed (an earlier run of the job, written by a machine whose
 * clock was ahead of this one's start) is not taken: a fresh node left at once for it. */
static void test_a_notice_past_its_deadline_is_not_taken(void)
{
	struct fx f;
	struct rr_fanout *w = NULL;
	struct rr_notice old = { .kind = RR_NOTICE_PREEMPT, .source = RR_SOURCE_AWS,
				 .deadline_unix = rr_wall_ms() / 1000 - 25,
				 .received_unix = rr_wall_ms() / 1000 - 30 };
	struct rr_notice got;

	fx_init(&f);
	CU_ASSERT_EQUAL_FATAL(rr_fanout_start(f.s, FX_RUN, 0, rr_wall_ms() - 1000, &w), 0);
	CU_ASSERT_EQUAL(rr_fanout_publish(f.s, FX_RUN, 1, &old), 0);
	CU_ASSERT_EQUAL(rr_fanout_poll_now(w, 5000), 0);
	CU_ASSERT_EQUAL(rr_fanout_poll_now(w, 5000), 0);
	CU_ASSERT_EQUAL(rr_fanout_next(w, &got), 0);
	rr_fanout_stop(w);
	fx_done(&f);
}

static CU_TestInfo s_tests[] = {
	{ "many_nodes_notices_are_each_taken_once", test_many_nodes_notices_are_each_taken_once },
	{ "a_notice_past_its_deadline_is_not_taken", test_a_notice_past_its_deadline_is_not_taken },
	{ "poll_now_lists_at_once", test_poll_now_lists_at_once },
	{ "another_nodes_notice_arrives_with_its_deadline",
	  test_another_nodes_notice_arrives_with_its_deadline },
	{ "own_and_earlier_notices_are_ignored_and_an_announce_is_written",
	  test_own_and_earlier_notices_are_ignored_and_an_announce_is_written },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("fanout", s_tests)
