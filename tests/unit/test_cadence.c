/* CUnit suite "cadence": when --every asks for the next checkpoint, for given asks, commits,
 * persists, histories and clouds (no clock: the times are the test's). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cadence.h"
#include "rr/interval.h"
#include "rr/log.h"

#include "cunit_main.h"

#define HOUR 3600.0

/* The "interval" events the cadence recorded. */
static struct {
	int n;
	double interval_ms[64], stall_ms[64];
	char mode[64][8], bound[64][16];
} s_ev;

static double s_num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static void s_capture(void *ud, const char *kind, cJSON *fields)
{
	(void)ud;
	CU_ASSERT_STRING_EQUAL(kind, "interval");
	if (s_ev.n < 64) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(fields, "mode");
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(fields, "bound");
		s_ev.interval_ms[s_ev.n] = s_num(fields, "interval_ms");
		s_ev.stall_ms[s_ev.n] = s_num(fields, "stall_ms");
		snprintf(s_ev.mode[s_ev.n], 8, "%s", cJSON_IsString(m) ? m->valuestring : "");
		snprintf(s_ev.bound[s_ev.n], 16, "%s", cJSON_IsString(b) ? b->valuestring : "");
		s_ev.n++;
	}
	cJSON_Delete(fields);
}

static struct rr_cadence *s_new(int64_t every_ms, int64_t mtbf_ms, double max_overhead)
{
	struct rr_cadence_opts o = { .every_ms = every_ms, .every_auto = every_ms == 0,
				     .mtbf_ms = mtbf_ms, .max_overhead = max_overhead,
				     .grace_ms = 25000, .nnodes = 1, .start_mono_ms = 1000,
				     .start_wall_ms = 1700000000000LL };
	struct rr_cadence_io io = { .record = s_capture };
	struct rr_cadence *c = NULL;

	memset(&s_ev, 0, sizeof(s_ev));
	rr_log_init(0, RR_LOG_ERROR); /* the suite's output stays readable */
	CU_ASSERT_EQUAL_FATAL(rr_cadence_new(&o, &io, &c), 0);
	return c;
}

/* One periodic checkpoint: asked at mono, committed stall_ms later. */
static void s_checkpoint(struct rr_cadence *c, const char *name, int64_t mono, int64_t stall_ms)
{
	rr_cadence_fired(c, mono);
	rr_cadence_asked(c, mono, 0);
	rr_cadence_committed(c, name, 1700000000000LL + mono + stall_ms, mono + stall_ms);
}

static void test_cadence_fixed_interval_is_as_before(void)
{
	struct rr_cadence *c = s_new(90000, 0, 0.05);
	struct rr_cadence_status st;

	CU_ASSERT_EQUAL(rr_cadence_next(c, 0), 1000 + 90000);
	rr_cadence_fired(c, 91000);
	CU_ASSERT_EQUAL(rr_cadence_next(c, 0), 91000 + 90000);
	/* a commit does not move a fixed schedule */
	rr_cadence_committed(c, "step-1", 1, 95000);
	CU_ASSERT_EQUAL(rr_cadence_next(c, 0), 91000 + 90000);
	/* each periodic stall is recorded, for report's overhead */
	s_checkpoint(c, "step-2", 181000, 2000);
	CU_ASSERT_EQUAL(s_ev.n, 1);
	CU_ASSERT_STRING_EQUAL(s_ev.mode[0], "fixed");
	CU_ASSERT_DOUBLE_EQUAL(s_ev.interval_ms[0], 90000, 0);
	CU_ASSERT_DOUBLE_EQUAL(s_ev.stall_ms[0], 2000, 0);
	rr_cadence_status(c, &st);
	CU_ASSERT_EQUAL(st.overhead_warnings, 0);
	rr_cadence_destroy(c);
}

static void test_cadence_fixed_interval_warns_once_when_the_stall_is_too_dear(void)
{
	struct rr_cadence *c = s_new(90000, 0, 0.05);
	struct rr_cadence_status st;

	/* 10 s stalls every 90 s: 11% of training time */
	for (int i = 0; i < 6; i++) {
		char name[16];
		snprintf(name, sizeof(name), "step-%d", i);
		s_checkpoint(c, name, 91000 + i * 100000, 10000);
		rr_cadence_next(c, 0);
	}
	rr_cadence_status(c, &st);
	CU_ASSERT_EQUAL(st.overhead_warnings, 1);
	rr_cadence_destroy(c);
}

/* The integration test's case: a 0.2 s stall and --mtbf 20s; Daly says 2.70 s. */
static void test_cadence_auto_measures_the_cost_and_follows_daly(void)
{
	struct rr_cadence *c = s_new(0, 20000, 0.20);
	struct rr_cadence_status st;
	int64_t next;

	rr_cadence_set_cloud(c, "");
	next = rr_cadence_next(c, 1700000000000LL);
	rr_cadence_status(c, &st);
	/* before any stall: the assumed cost, which bounds nothing */
	CU_ASSERT_EQUAL(st.cost_measured, 0);
	CU_ASSERT_DOUBLE_EQUAL(st.cost_s, RR_INTERVAL_COST_ASSUMED_S, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(st.interval_s, rr_interval_daly(1.0, 20), 1e-9);
	CU_ASSERT_EQUAL(next, 1000 + llround(rr_interval_daly(1.0, 20) * 1000));
	CU_ASSERT_STRING_EQUAL(st.mtbf_from, "--mtbf");
	CU_ASSERT_EQUAL(s_ev.n, 1); /* the first choice, recorded */

	s_checkpoint(c, "step-1", next, 200);
	next = rr_cadence_next(c, 1700000000000LL + next);
	rr_cadence_status(c, &st);
	CU_ASSERT_EQUAL(st.cost_measured, 1);
	CU_ASSERT_DOUBLE_EQUAL(st.cost_s, 0.2, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(st.interval_s, rr_interval_daly(0.2, 20), 1e-9);
	CU_ASSERT_EQUAL(st.choice.bound, RR_BOUND_DALY);
	/* the next ask: the interval after the commit */
	CU_ASSERT(llabs(next - (1000 + llround(rr_interval_daly(1.0, 20) * 1000) + 200 +
				llround(rr_interval_daly(0.2, 20) * 1000))) <= 1);
	/* recorded: the stall (with the interval of the moment), then the new interval */
	CU_ASSERT_EQUAL(s_ev.n, 3);
	CU_ASSERT_DOUBLE_EQUAL(s_ev.stall_ms[1], 200, 0);
	CU_ASSERT_STRING_EQUAL(s_ev.mode[1], "auto");
	CU_ASSERT_DOUBLE_EQUAL(s_ev.interval_ms[2], round(rr_interval_daly(0.2, 20) * 1000), 0);
	CU_ASSERT_STRING_EQUAL(s_ev.bound[2], "daly");
	/* the cost is the median of the recent stalls: one slow commit moves nothing */
	s_checkpoint(c, "step-2", next, 210);
	s_checkpoint(c, "step-3", next + 5000, 5000);
	rr_cadence_next(c, 1700000000000LL + next + 10000);
	rr_cadence_status(c, &st);
	CU_ASSERT_DOUBLE_EQUAL(st.cost_s, 0.21, 1e-12);
	rr_cadence_destroy(c);
}

static void test_cadence_auto_overhead_bound(void)
{
	struct rr_cadence *c = s_new(0, 20000, 0.05);
	struct rr_cadence_status st;

	rr_cadence_set_cloud(c, "");
	s_checkpoint(c, "step-1", 5000, 200);
	rr_cadence_next(c, 1700000000000LL + 6000);
	rr_cadence_status(c, &st);
	CU_ASSERT_DOUBLE_EQUAL(st.interval_s, 4.0, 1e-9); /* 0.2 s is 5% of 4 s */
	CU_ASSERT_EQUAL(st.choice.bound, RR_BOUND_OVERHEAD);
	rr_cadence_destroy(c);
}

/* A notice's stall measures the cost too, but is no periodic overhead. */
static void test_cadence_notice_stall_counts_for_the_cost_only(void)
{
	struct rr_cadence *c = s_new(0, 20000, 0.5);
	struct rr_cadence_status st;

	rr_cadence_set_cloud(c, "");
	rr_cadence_next(c, 1700000000000LL);
	int before = s_ev.n;
	rr_cadence_asked(c, 3000, 1);
	rr_cadence_committed(c, "step-1", 1700000003300LL, 3300);
	rr_cadence_next(c, 1700000003300LL);
	rr_cadence_status(c, &st);
	CU_ASSERT_DOUBLE_EQUAL(st.cost_s, 0.3, 1e-12);
	for (int i = before; i < s_ev.n; i++)
		CU_ASSERT(s_ev.stall_ms[i] < 0);
	rr_cadence_destroy(c);
}

/* No --mtbf: the cloud's prior (per node of a job), then the run's history, and this
 * machine's own time. */
static void test_cadence_auto_mtbf_from_prior_and_history(void)
{
	struct rr_cadence *c = s_new(0, 0, 0.05);
	struct rr_history_summary h = { .machines = 4, .losses = 3, .vanished = 2, .missed = 1,
					.exposure_ms = 10 * 3600 * 1000LL,
					.end_ms = 1700000000000LL - 60000, .cost_ms = 30000 };
	struct rr_cadence_status st;
	int64_t now = 1700000000000LL + 2 * 3600 * 1000LL;

	rr_cadence_set_cloud(c, "aws");
	rr_cadence_next(c, 1700000000000LL);
	rr_cadence_status(c, &st);
	CU_ASSERT_DOUBLE_EQUAL(st.prior_s, 72 * HOUR, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(st.mtbf_s, 72 * HOUR, 1e-6);
	CU_ASSERT_STRING_EQUAL(st.mtbf_from, "prior");
	CU_ASSERT_DOUBLE_EQUAL(st.lead_s, 120, 1e-12);

	rr_cadence_set_history(c, &h);
	rr_cadence_next(c, now);
	rr_cadence_status(c, &st);
	/* (72 h + 10 h + 2 h of this machine) / (1 + 3) */
	CU_ASSERT_DOUBLE_EQUAL(st.mtbf_s, (72 + 10 + 2) * HOUR / 4, 1e-6);
	CU_ASSERT_STRING_EQUAL(st.mtbf_from, "history");
	/* an earlier machine's measured cost stands until one is measured here */
	CU_ASSERT_EQUAL(st.cost_measured, 1);
	CU_ASSERT_DOUBLE_EQUAL(st.cost_s, 30, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(st.interval_s, rr_interval_daly(30, 21 * HOUR), 1e-6);
	rr_cadence_destroy(c);

	/* a 4-node job on GCP: any node's loss stops it */
	struct rr_cadence_opts o = { .every_auto = 1, .max_overhead = 0.05, .grace_ms = 25000,
				     .nnodes = 4, .start_mono_ms = 0, .start_wall_ms = 0 };
	CU_ASSERT_EQUAL_FATAL(rr_cadence_new(&o, NULL, &c), 0);
	rr_cadence_set_cloud(c, "gcp");
	rr_cadence_next(c, 0);
	rr_cadence_status(c, &st);
	CU_ASSERT_DOUBLE_EQUAL(st.prior_s, 6 * HOUR, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(st.lead_s, 30, 1e-12);
	rr_cadence_destroy(c);
}

/* A persisted checkpoint of bytes, changed since the one before. */
static void s_persist(struct rr_cadence *c, const char *name, int64_t commit_mono, double bytes,
		      double changed, double rate)
{
	struct rr_persist_stats st = { .bytes = (uint64_t)bytes, .stored_bytes = (uint64_t)bytes,
				       .new_bytes = (uint64_t)changed, .elapsed_ms = 1000 };
	rr_cadence_committed(c, name, 1700000000000LL + commit_mono, commit_mono);
	rr_cadence_persisted(c, name, 1700000000000LL + commit_mono, &st, rate);
}

/* A 4 MB checkpoint over a 400 kB/s link with a 4 s lead (--grace, no cloud). */
static struct rr_cadence *s_lead_cadence(void)
{
	struct rr_cadence_opts o = { .every_auto = 1, .mtbf_ms = 600000, .max_overhead = 0.05,
				     .grace_ms = 4000, .nnodes = 1, .start_mono_ms = 0,
				     .start_wall_ms = 1700000000000LL };
	struct rr_cadence_io io = { .record = s_capture };
	struct rr_cadence *c = NULL;

	memset(&s_ev, 0, sizeof(s_ev));
	CU_ASSERT_EQUAL_FATAL(rr_cadence_new(&o, &io, &c), 0);
	rr_cadence_set_cloud(c, "");
	s_checkpoint(c, "step-0", 1000, 50); /* a 50 ms stall: Daly ~7.7 s */
	return c;
}

static void test_cadence_lead_rule_shortens_the_interval(void)
{
	struct rr_cadence *c = s_lead_cadence();
	struct rr_cadence_status st;

	rr_cadence_next(c, 1700000000000LL + 2000);
	rr_cadence_status(c, &st);
	CU_ASSERT_EQUAL(st.choice.bound, RR_BOUND_DALY);
	double daly = st.interval_s;
	/* 262 kB/s changing: 2.1 MB in 8 s, more than the ~1.26 MB the lead carries */
	s_persist(c, "step-1", 10000, 4e6, 262e3 * 8, 400e3);
	s_persist(c, "step-2", 18000, 4e6, 262e3 * 8, 400e3);
	rr_cadence_next(c, 1700000000000LL + 18000);
	rr_cadence_status(c, &st);
	CU_ASSERT_EQUAL(st.lead, RR_LEAD_CAP);
	CU_ASSERT_EQUAL(st.choice.bound, RR_BOUND_LEAD);
	CU_ASSERT(st.interval_s < daly / 2);
	CU_ASSERT(st.interval_s > 2.5 && st.interval_s < 3.5);
	CU_ASSERT_STRING_EQUAL(s_ev.bound[s_ev.n - 1], "notice lead");
	CU_ASSERT_EQUAL(st.lead_warnings, 0);
	rr_cadence_destroy(c);
}

/* Every byte changes each step: tried once at the lead's cap, then given up, said once,
 * and never tried again however many checkpoints follow (no spinning). */
static void test_cadence_lead_rule_impossible_is_said_once_and_sticks(void)
{
	struct rr_cadence *c = s_lead_cadence();
	struct rr_cadence_status st;
	int64_t at = 10000;

	s_persist(c, "step-1", at, 4e6, 4e6, 400e3);
	at += 8000;
	s_persist(c, "step-2", at, 4e6, 4e6, 400e3);
	rr_cadence_next(c, 1700000000000LL + at);
	rr_cadence_status(c, &st);
	CU_ASSERT_EQUAL(st.lead, RR_LEAD_CAP); /* a lower bound on the change rate: tried */
	double tried = st.interval_s;
	at += (int64_t)(tried * 1000) + 50;
	s_persist(c, "step-3", at, 4e6, 4e6, 400e3); /* all of it changed again */
	rr_cadence_next(c, 1700000000000LL + at);
	rr_cadence_status(c, &st);
	CU_ASSERT_EQUAL(st.lead, RR_LEAD_IMPOSSIBLE);
	CU_ASSERT_EQUAL(st.choice.bound, RR_BOUND_DALY);
	CU_ASSERT_EQUAL(st.lead_warnings, 1);
	int events = s_ev.n;
	for (int i = 4; i < 30; i++) {
		char name[16];
		snprintf(name, sizeof(name), "step-%d", i);
		at += (int64_t)(st.interval_s * 1000);
		s_persist(c, name, at, 4e6, 4e6, 400e3);
		rr_cadence_next(c, 1700000000000LL + at);
		struct rr_cadence_status again;
		rr_cadence_status(c, &again);
		CU_ASSERT_EQUAL(again.lead, RR_LEAD_IMPOSSIBLE);
		CU_ASSERT_DOUBLE_EQUAL(again.interval_s, st.interval_s, 1e-6);
	}
	rr_cadence_status(c, &st);
	CU_ASSERT_EQUAL(st.lead_warnings, 1);
	CU_ASSERT_EQUAL(s_ev.n, events); /* the interval did not move: nothing recorded */
	/* a checkpoint that did not change everything brings the rule back */
	at += 3000;
	s_persist(c, "step-40", at, 4e6, 262e3 * 3, 400e3);
	rr_cadence_next(c, 1700000000000LL + at);
	rr_cadence_status(c, &st);
	CU_ASSERT_EQUAL(st.lead, RR_LEAD_CAP);
	CU_ASSERT_EQUAL(st.lead_warnings, 1);
	rr_cadence_destroy(c);
}

/* The lead rule asks for more stall than --max-overhead allows: the bound wins, said once. */
static void test_cadence_lead_rule_overruled_by_the_overhead_bound(void)
{
	struct rr_cadence_opts o = { .every_auto = 1, .mtbf_ms = 600000, .max_overhead = 0.05,
				     .grace_ms = 4000, .nnodes = 1, .start_mono_ms = 0,
				     .start_wall_ms = 1700000000000LL };
	struct rr_cadence *c = NULL;
	struct rr_cadence_status st;

	CU_ASSERT_EQUAL_FATAL(rr_cadence_new(&o, NULL, &c), 0);
	rr_cadence_set_cloud(c, "");
	s_checkpoint(c, "step-0", 1000, 500); /* 0.5 s: at 5%, no less than 10 s */
	s_persist(c, "step-1", 10000, 4e6, 262e3 * 8, 400e3);
	s_persist(c, "step-2", 18000, 4e6, 262e3 * 8, 400e3);
	rr_cadence_next(c, 1700000000000LL + 19000);
	rr_cadence_status(c, &st);
	CU_ASSERT_EQUAL(st.choice.lead_overruled, 1);
	CU_ASSERT_EQUAL(st.lead_warnings, 0); /* one stall: not settled yet, not said */
	s_checkpoint(c, "step-3", 20000, 500);
	s_checkpoint(c, "step-4", 31000, 500);
	for (int i = 0; i < 5; i++)
		rr_cadence_next(c, 1700000000000LL + 42000 + i * 1000);
	rr_cadence_status(c, &st);
	CU_ASSERT_EQUAL(st.choice.bound, RR_BOUND_OVERHEAD);
	CU_ASSERT_EQUAL(st.choice.lead_overruled, 1);
	CU_ASSERT_DOUBLE_EQUAL(st.interval_s, 10, 1e-9);
	CU_ASSERT_EQUAL(st.lead_warnings, 1);
	rr_cadence_destroy(c);
}

/* Re-evaluated at every turn of the loop, logged and recorded only when it moves by 10%. */
static void test_cadence_records_only_real_changes(void)
{
	struct rr_cadence *c = s_new(0, 0, 0.05);
	int64_t wall = 1700000000000LL;

	rr_cadence_next(c, wall);
	CU_ASSERT_EQUAL(s_ev.n, 0); /* the cloud is not known yet: nothing said */
	rr_cadence_set_cloud(c, "");
	for (int i = 0; i < 100; i++)
		rr_cadence_next(c, wall + i * 1000);
	CU_ASSERT_EQUAL(s_ev.n, 1);
	/* 24 h of this machine's own time: the estimate doubles, the interval grows ~41% */
	rr_cadence_next(c, wall + 24 * 3600 * 1000LL);
	CU_ASSERT_EQUAL(s_ev.n, 2);
	rr_cadence_destroy(c);
}

static CU_TestInfo s_tests[] = {
	{ "fixed_interval_is_as_before", test_cadence_fixed_interval_is_as_before },
	{ "fixed_interval_warns_once_when_the_stall_is_too_dear",
	  test_cadence_fixed_interval_warns_once_when_the_stall_is_too_dear },
	{ "auto_measures_the_cost_and_follows_daly",
	  test_cadence_auto_measures_the_cost_and_follows_daly },
	{ "auto_overhead_bound", test_cadence_auto_overhead_bound },
	{ "notice_stall_counts_for_the_cost_only",
	  test_cadence_notice_stall_counts_for_the_cost_only },
	{ "auto_mtbf_from_prior_and_history", test_cadence_auto_mtbf_from_prior_and_history },
	{ "lead_rule_shortens_the_interval", test_cadence_lead_rule_shortens_the_interval },
	{ "lead_rule_impossible_is_said_once_and_sticks",
	  test_cadence_lead_rule_impossible_is_said_once_and_sticks },
	{ "lead_rule_overruled_by_the_overhead_bound",
	  test_cadence_lead_rule_overruled_by_the_overhead_bound },
	{ "records_only_real_changes", test_cadence_records_only_real_changes },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("cadence", s_tests)
