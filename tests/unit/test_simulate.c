/* CUnit suite "simulate": synthetic loss histories, trace files, and the waste of fixed
 * intervals, of --every auto and of the best fixed interval in hindsight over them. The
 * histories are seeded, so every number here is the same on every run. */
#include <math.h>
#include <string.h>

#include "rr/error.h"
#include "rr/interval.h"
#include "rr/simulate.h"

#include "cunit_main.h"

#define MIN 60.0
#define HOUR 3600.0

static double s_mean_uncovered(const struct rr_sim_trace *t)
{
	double sum = 0;
	unsigned n = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->lives[i].end == RR_SIM_UNCOVERED) {
			sum += t->lives[i].span_s;
			n++;
		}
	return n ? sum / n : 0;
}

static void test_simulate_synthetic_histories_have_the_asked_mean(void)
{
	struct rr_sim_trace t, again;

	CU_ASSERT_EQUAL_FATAL(rr_sim_exponential(24 * HOUR, 20000 * HOUR, 1, &t), 0);
	CU_ASSERT(t.n > 700 && t.n < 950);
	CU_ASSERT_DOUBLE_EQUAL(t.total_s, 20000 * HOUR, 1e-3);
	CU_ASSERT_EQUAL(t.lives[t.n - 1].end, RR_SIM_CENSORED);
	CU_ASSERT_EQUAL(t.uncovered, t.n - 1);
	CU_ASSERT(fabs(s_mean_uncovered(&t) / (24 * HOUR) - 1) < 0.08);
	/* one seed, one history */
	CU_ASSERT_EQUAL_FATAL(rr_sim_exponential(24 * HOUR, 20000 * HOUR, 1, &again), 0);
	CU_ASSERT_EQUAL(again.n, t.n);
	/* Member by member: a memcmp would compare the padding after `end` too, which the
	 * compound literal that fills each life leaves unspecified (clang leaves it as is). */
	for (size_t i = 0; i < t.n; i++) {
		if (again.lives[i].span_s != t.lives[i].span_s || again.lives[i].end != t.lives[i].end) {
			CU_FAIL("one seed gave two histories");
			break;
		}
	}
	rr_sim_trace_free(&again);
	rr_sim_trace_free(&t);

	CU_ASSERT_EQUAL_FATAL(rr_sim_weibull(0.7, 24 * HOUR, 20000 * HOUR, 1, &t), 0);
	CU_ASSERT(fabs(s_mean_uncovered(&t) / (24 * HOUR) - 1) < 0.1);
	rr_sim_trace_free(&t);
	CU_ASSERT_EQUAL(rr_sim_weibull(0.01, 24 * HOUR, 100 * HOUR, 1, &t), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_sim_exponential(0, 100 * HOUR, 1, &t), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_sim_exponential(HOUR, 0, 1, &t), RR_EINVAL);
}

/* Three machines: 100 s lost, 50 s lost, 100 s still training; a checkpoint every 20 s of
 * training that stalls 5 s. */
static void test_simulate_fixed_interval_by_hand(void)
{
	struct rr_sim_life lives[] = { { 100, RR_SIM_UNCOVERED }, { 50, RR_SIM_UNCOVERED },
				       { 100, RR_SIM_CENSORED }, { 30, RR_SIM_NOTICE } };
	struct rr_sim_trace t = { .lives = lives, .n = 4, .total_s = 280 };
	struct rr_sim_result r;

	rr_sim_fixed(&t, 5, 20, &r);
	/* cycles of 25 s: 4 (0 s left, lost), 2 (0 s... 50 - 50 = 0 lost), 4, 1 (5 s saved) */
	CU_ASSERT_DOUBLE_EQUAL(r.checkpoints, 4 + 2 + 4 + 1, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(r.overhead_s, 11 * 5 + 5, 1e-12); /* and the notice's own */
	CU_ASSERT_DOUBLE_EQUAL(r.lost_s, 0, 1e-12);
	rr_sim_fixed(&t, 5, 30, &r);
	/* cycles of 35 s: 2 (30 s lost), 1 (15 s lost), 2 (censored), 0 (notice) */
	CU_ASSERT_DOUBLE_EQUAL(r.checkpoints, 5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(r.lost_s, 30 + 15, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(r.overhead_s, 5 * 5 + 5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(r.waste_s, r.lost_s + r.overhead_s, 1e-12);
}

static void test_simulate_best_fixed_beats_every_fixed_interval(void)
{
	struct rr_sim_trace t;
	struct rr_sim_result best, r;

	CU_ASSERT_EQUAL_FATAL(rr_sim_exponential(6 * HOUR, 3000 * HOUR, 7, &t), 0);
	rr_sim_best_fixed(&t, 60, &best);
	for (double tau = 60; tau < 20 * HOUR; tau *= 1.1) {
		rr_sim_fixed(&t, 60, tau, &r);
		CU_ASSERT(best.waste_s <= r.waste_s + 1e-6);
	}
	rr_sim_trace_free(&t);
}

/* auto's waste against the best fixed interval in hindsight, on a synthetic history. */
static double s_auto_over_best(struct rr_sim_trace *t, double cost, double prior, double known)
{
	struct rr_sim_auto a = { .cost_s = cost, .prior_s = prior, .mtbf_s = known,
				 .max_overhead = 0.05 };
	struct rr_sim_result ar, best;
	rr_sim_auto(t, &a, &ar);
	rr_sim_best_fixed(t, cost, &best);
	rr_sim_trace_free(t);
	return ar.waste_s / best.waste_s;
}

/* The bar: auto within 5% of the optimum, here on exponential and Weibull histories
 * of hundreds of losses each, learning M from a prior that is right, and told M. (Cases
 * where --max-overhead does not bind: where it does, auto trades waste for less stall.) */
static void test_simulate_auto_within_5_percent_of_the_optimum(void)
{
	struct rr_sim_trace t;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		CU_ASSERT_EQUAL_FATAL(rr_sim_exponential(24 * HOUR, 20000 * HOUR, seed, &t), 0);
		CU_ASSERT(s_auto_over_best(&t, 5 * MIN, 24 * HOUR, 0) < 1.05);
		CU_ASSERT_EQUAL_FATAL(rr_sim_exponential(24 * HOUR, 20000 * HOUR, seed, &t), 0);
		CU_ASSERT(s_auto_over_best(&t, 5 * MIN, 24 * HOUR, 24 * HOUR) < 1.05);
		CU_ASSERT_EQUAL_FATAL(rr_sim_exponential(6 * HOUR, 10000 * HOUR, seed, &t), 0);
		CU_ASSERT(s_auto_over_best(&t, 30, 6 * HOUR, 0) < 1.05);
		CU_ASSERT_EQUAL_FATAL(rr_sim_exponential(HOUR, 2000 * HOUR, seed, &t), 0);
		CU_ASSERT(s_auto_over_best(&t, 10, HOUR, 0) < 1.05);
		CU_ASSERT_EQUAL_FATAL(rr_sim_weibull(0.7, 24 * HOUR, 20000 * HOUR, seed, &t), 0);
		CU_ASSERT(s_auto_over_best(&t, 5 * MIN, 24 * HOUR, 0) < 1.05);
		CU_ASSERT_EQUAL_FATAL(rr_sim_weibull(1.5, 24 * HOUR, 20000 * HOUR, seed, &t), 0);
		CU_ASSERT(s_auto_over_best(&t, 5 * MIN, 24 * HOUR, 0) < 1.05);
	}
}

/* Losses 4x as often as the prior says (M = 6 h against the 24 h prior), a 10 s stall:
 * auto learns the rate from the losses and wastes at least 20% less than --every 30m. */
static void test_simulate_auto_beats_30_minutes_when_losses_are_4x_the_prior(void)
{
	struct rr_sim_auto a = { .cost_s = 10, .prior_s = rr_interval_prior_s("gcp"),
				 .max_overhead = 0.05 };
	CU_ASSERT_DOUBLE_EQUAL_FATAL(a.prior_s, 24 * HOUR, 1e-9);
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct rr_sim_trace t;
		struct rr_sim_result ar, fixed;
		CU_ASSERT_EQUAL_FATAL(rr_sim_exponential(6 * HOUR, 2000 * HOUR, seed, &t), 0);
		rr_sim_auto(&t, &a, &ar);
		rr_sim_fixed(&t, 10, 30 * MIN, &fixed);
		CU_ASSERT(ar.waste_s <= 0.8 * fixed.waste_s);
		/* and it ends near Daly's interval for the real rate */
		CU_ASSERT(fabs(ar.interval_s / rr_interval_daly(10, 6 * HOUR) - 1) < 0.15);
		rr_sim_trace_free(&t);
	}
}

static void test_simulate_auto_starts_from_the_assumed_cost(void)
{
	/* One machine of 100 s with a 2 s stall and a known M of 1 h: the first interval uses
	 * the assumed 1 s (Daly 84 s), later ones the measured 2 s (Daly ~118 s): so one
	 * checkpoint at 84 + 2 = 86 s, and the 14 s after it lost. */
	struct rr_sim_life lives[] = { { 100, RR_SIM_UNCOVERED } };
	struct rr_sim_trace t = { .lives = lives, .n = 1, .total_s = 100 };
	struct rr_sim_auto a = { .cost_s = 2, .prior_s = HOUR, .mtbf_s = HOUR,
				 .max_overhead = 0.05 };
	struct rr_sim_result r;
	double first = rr_interval_daly(RR_INTERVAL_COST_ASSUMED_S, HOUR);

	rr_sim_auto(&t, &a, &r);
	CU_ASSERT_DOUBLE_EQUAL(r.checkpoints, 1, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(r.lost_s, 100 - (first + 2), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.interval_s, rr_interval_daly(2, HOUR), 1e-9);
}

static int s_parse(const char *text, double lead, double cost, double total,
		   struct rr_sim_trace *t, char *why)
{
	return rr_sim_trace_parse(text, strlen(text), lead, cost, total, t, why, 128);
}

static void test_simulate_trace_file(void)
{
	struct rr_sim_trace t;
	char why[128] = "";
	const char *text = "# a comment\r\n"
			   "3600 loss\n"
			   "\n"
			   "  7200.5 notice   # AWS's two minutes\n"
			   "9000 notice 10\n"
			   "9000 loss";

	CU_ASSERT_EQUAL_FATAL(s_parse(text, 120, 30, 0, &t, why), 0);
	CU_ASSERT_EQUAL(t.n, 4);
	CU_ASSERT_DOUBLE_EQUAL(t.lives[0].span_s, 3600, 1e-9);
	CU_ASSERT_EQUAL(t.lives[0].end, RR_SIM_UNCOVERED);
	CU_ASSERT_DOUBLE_EQUAL(t.lives[1].span_s, 3600.5, 1e-9);
	CU_ASSERT_EQUAL(t.lives[1].end, RR_SIM_NOTICE);     /* 120 s hold a 30 s stall */
	CU_ASSERT_EQUAL(t.lives[2].end, RR_SIM_UNCOVERED);  /* 10 s do not */
	CU_ASSERT_DOUBLE_EQUAL(t.lives[3].span_s, 0, 1e-9);
	CU_ASSERT_EQUAL(t.uncovered, 3);
	CU_ASSERT_EQUAL(t.notices, 1);
	CU_ASSERT_DOUBLE_EQUAL(t.total_s, 9000, 1e-9);
	rr_sim_trace_free(&t);

	/* a horizon: the events past it are cut, a machine trains to it */
	CU_ASSERT_EQUAL_FATAL(s_parse(text, 120, 30, 8000, &t, why), 0);
	CU_ASSERT_EQUAL(t.n, 3);
	CU_ASSERT_EQUAL(t.lives[2].end, RR_SIM_CENSORED);
	CU_ASSERT_DOUBLE_EQUAL(t.total_s, 8000, 1e-9);
	rr_sim_trace_free(&t);
}

static void test_simulate_trace_file_errors_name_the_line(void)
{
	static const struct { const char *text, *why; } bad[] = {
		{ "10 loss\n5 loss\n", "line 2: time 5.000 is before the line above" },
		{ "10 crash\n", "line 1: expected \"loss\" or \"notice [LEAD]\"" },
		{ "10 loss extra\n", "line 1: expected \"loss\"" },
		{ "10 notice x\n", "line 1: bad notice lead" },
		{ "-3 loss\n", "line 1: bad time" },
		{ "1e5 loss\n", "line 1: bad time" },
		{ "nan loss\n", "line 1: bad time" },
		{ "99999999999 loss\n", "line 1: bad time" },
		{ "10\n", "line 1: expected \"SECONDS loss\"" },
		{ "1 notice 2 3\n", "line 1: too many words" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rr_sim_trace t;
		char why[128] = "";
		CU_ASSERT_EQUAL(s_parse(bad[i].text, 120, 1, 0, &t, why), RR_EINVAL);
		if (!strstr(why, bad[i].why))
			fprintf(stderr, "case %zu: got '%s'\n", i, why);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, bad[i].why));
		CU_ASSERT_PTR_NULL(t.lives);
	}
	/* an embedded NUL and an over-long line */
	struct rr_sim_trace t;
	char why[128], nul[] = "1 loss\n2 lo\0ss\n", longline[400];
	CU_ASSERT_EQUAL(rr_sim_trace_parse(nul, sizeof(nul) - 1, 120, 1, 0, &t, why, 128),
			RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 2: a NUL byte"));
	memset(longline, ' ', sizeof(longline));
	memcpy(longline + sizeof(longline) - 8, "1 loss\n", 7);
	CU_ASSERT_EQUAL(rr_sim_trace_parse(longline, sizeof(longline) - 1, 120, 1, 0, &t, why,
					   128), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "longer than"));
}

static CU_TestInfo s_tests[] = {
	{ "synthetic_histories_have_the_asked_mean",
	  test_simulate_synthetic_histories_have_the_asked_mean },
	{ "fixed_interval_by_hand", test_simulate_fixed_interval_by_hand },
	{ "best_fixed_beats_every_fixed_interval",
	  test_simulate_best_fixed_beats_every_fixed_interval },
	{ "auto_within_5_percent_of_the_optimum",
	  test_simulate_auto_within_5_percent_of_the_optimum },
	{ "auto_beats_30_minutes_when_losses_are_4x_the_prior",
	  test_simulate_auto_beats_30_minutes_when_losses_are_4x_the_prior },
	{ "auto_starts_from_the_assumed_cost", test_simulate_auto_starts_from_the_assumed_cost },
	{ "trace_file", test_simulate_trace_file },
	{ "trace_file_errors_name_the_line", test_simulate_trace_file_errors_name_the_line },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("simulate", s_tests)
