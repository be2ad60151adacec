/* CUnit suite "interval": Daly's optimum, the estimate of the mean time between uncovered
 * losses, the bounds (--max-overhead, the notice-lead rule) and the choice between them. */
#include <math.h>
#include <string.h>

#include "rr/interval.h"

#include "cunit_main.h"

#define MIN 60.0
#define HOUR 3600.0

/* Daly's own example (FGCS 2006, Fig. 3): delta = 5 min, M = 24 h: 116.7 min. */
static void test_interval_daly_matches_the_papers_case(void)
{
	double tau = rr_interval_daly(5 * MIN, 24 * HOUR);
	/* sqrt(2*300*86400) = 7200; x = 300/172800; 7200*(1 + sqrt(x)/3 + x/9) - 300 */
	double x = 300.0 / 172800.0;
	double exact = 7200.0 * (1 + sqrt(x) / 3 + x / 9) - 300.0;
	CU_ASSERT_DOUBLE_EQUAL(tau, exact, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(tau / MIN, 116.7, 0.05);
	CU_ASSERT_EQUAL((int)lround(tau / MIN * 10), 1167);
	/* Fig. 4: M = 6 h gives 57 min */
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_daly(5 * MIN, 6 * HOUR) / MIN, 57, 0.5);
}

static void test_interval_daly_edges(void)
{
	/* a checkpoint that costs twice the MTBF or more: checkpoint every M */
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_daly(40, 20), 20, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_daly(100, 20), 20, 1e-12);
	CU_ASSERT_EQUAL(rr_interval_daly(0, 20), 0);
	CU_ASSERT_EQUAL(rr_interval_daly(5, 0), 0);
	CU_ASSERT_EQUAL(rr_interval_daly(-1, 20), 0);
	CU_ASSERT_EQUAL(rr_interval_daly(NAN, 20), 0);
	/* first order (Young) is the leading term */
	double y = sqrt(2 * 1.0 * 1e6);
	CU_ASSERT(fabs(rr_interval_daly(1.0, 1e6) - y) / y < 0.01);
	/* the test's agent case: 0.2 s and 20 s */
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_daly(0.2, 20), 2.6966, 1e-3);
}

static void test_interval_mtbf_is_posterior_with_one_pseudo_loss(void)
{
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_mtbf(24 * HOUR, 0, 0), 24 * HOUR, 1e-9);
	/* two losses in 12 h on a 24 h prior: 36 h / 3 */
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_mtbf(24 * HOUR, 12 * HOUR, 2), 12 * HOUR, 1e-9);
	/* no loss in 48 h: the estimate grows */
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_mtbf(24 * HOUR, 48 * HOUR, 0), 72 * HOUR, 1e-9);
	/* much history: it tends to exposure / losses */
	CU_ASSERT(fabs(rr_interval_mtbf(24 * HOUR, 6000 * HOUR, 1000) - 6 * HOUR) < 0.05 * HOUR);
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_mtbf(100, -5, 0), 100, 1e-9);
}

static void test_interval_priors_and_leads_per_cloud(void)
{
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_prior_s("aws"), 72 * HOUR, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_prior_s("gcp"), 24 * HOUR, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_prior_s("azure"), 24 * HOUR, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_prior_s(""), 24 * HOUR, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_prior_s(NULL), 24 * HOUR, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_lead_s("aws"), 120, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_lead_s("gcp"), 30, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_lead_s("azure"), 30, 1e-9);
	CU_ASSERT_EQUAL(rr_interval_lead_s("none"), 0);
	CU_ASSERT_EQUAL(rr_interval_lead_s(NULL), 0);
}

static void test_interval_median_of_recent(void)
{
	double v[] = { 5, 1, 9, 3 }, big[100];
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_median(v, 3), 5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_median(v, 4), 4, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_median(v, 1), 5, 1e-12);
	CU_ASSERT_EQUAL(rr_interval_median(v, 0), 0);
	CU_ASSERT_DOUBLE_EQUAL(v[0], 5, 0); /* untouched */
	for (int i = 0; i < 100; i++)
		big[i] = i < 36 ? 1000 : 2; /* the 64 newest are all 2 */
	CU_ASSERT_DOUBLE_EQUAL(rr_interval_median(big, 100), 2, 1e-12);
}

static void test_interval_overhead_bound_lengthens_a_short_optimum(void)
{
	struct rr_interval_choice ch;
	/* 0.2 s and 20 s: Daly 2.70 s is 7.4% stall; at 5% the interval is 0.2 / 0.05 = 4 s */
	rr_interval_choose(0.2, 20, 0.05, 1, 0, &ch);
	CU_ASSERT_DOUBLE_EQUAL(ch.interval_s, 4.0, 1e-9);
	CU_ASSERT_EQUAL(ch.bound, RR_BOUND_OVERHEAD);
	CU_ASSERT_DOUBLE_EQUAL(ch.daly_s, rr_interval_daly(0.2, 20), 1e-12);
	/* at 20% Daly stands */
	rr_interval_choose(0.2, 20, 0.20, 1, 0, &ch);
	CU_ASSERT_DOUBLE_EQUAL(ch.interval_s, rr_interval_daly(0.2, 20), 1e-12);
	CU_ASSERT_EQUAL(ch.bound, RR_BOUND_DALY);
	/* an assumed cost bounds nothing */
	rr_interval_choose(0.2, 20, 0.05, 0, 0, &ch);
	CU_ASSERT_EQUAL(ch.bound, RR_BOUND_DALY);
	CU_ASSERT_EQUAL(ch.floor_s, 0);
	/* Daly's case: 116.7 min, above the 100 min a 5% overhead asks */
	rr_interval_choose(5 * MIN, 24 * HOUR, 0.05, 1, 0, &ch);
	CU_ASSERT_EQUAL(ch.bound, RR_BOUND_DALY);
	CU_ASSERT_DOUBLE_EQUAL(ch.floor_s, 100 * MIN, 1e-9);
}

static void test_interval_lead_cap_shortens_but_overhead_wins(void)
{
	struct rr_interval_choice ch;
	rr_interval_choose(1, 24 * HOUR, 0.05, 1, 120, &ch);
	CU_ASSERT_DOUBLE_EQUAL(ch.interval_s, 120, 1e-9);
	CU_ASSERT_EQUAL(ch.bound, RR_BOUND_LEAD);
	CU_ASSERT_EQUAL(ch.lead_overruled, 0);
	/* a cap above Daly changes nothing */
	rr_interval_choose(1, 24 * HOUR, 0.05, 1, 1e6, &ch);
	CU_ASSERT_EQUAL(ch.bound, RR_BOUND_DALY);
	/* the lead wants 10 s; 5% of a 1 s stall needs 20 s: the stall bound wins */
	rr_interval_choose(1, 24 * HOUR, 0.05, 1, 10, &ch);
	CU_ASSERT_DOUBLE_EQUAL(ch.interval_s, 20, 1e-9);
	CU_ASSERT_EQUAL(ch.bound, RR_BOUND_OVERHEAD);
	CU_ASSERT_EQUAL(ch.lead_overruled, 1);
}

static void test_interval_bounds_min_and_max(void)
{
	struct rr_interval_choice ch;
	rr_interval_choose(0.001, 1, 0.05, 0, 0, &ch);
	CU_ASSERT_DOUBLE_EQUAL(ch.interval_s, RR_INTERVAL_MIN_S, 1e-12);
	CU_ASSERT_EQUAL(ch.bound, RR_BOUND_MIN);
	rr_interval_choose(3600, 1e12, 0.05, 1, 0, &ch);
	CU_ASSERT_DOUBLE_EQUAL(ch.interval_s, RR_INTERVAL_MAX_S, 1e-12);
	CU_ASSERT_EQUAL(ch.bound, RR_BOUND_MAX);
	CU_ASSERT_STRING_EQUAL(rr_interval_bound_name(RR_BOUND_LEAD), "notice lead");
}

/* A 4 MB checkpoint, a 400 kB/s link, a 4 s lead, a 0.05 s stall, 262 kB/s changing. */
static struct rr_lead_inputs s_lead_case(void)
{
	return (struct rr_lead_inputs){ .lead_s = 4, .cost_s = 0.05, .rate_bps = 400e3,
					.bytes = 4e6, .changed = 262e3 * 3, .between_s = 3 };
}

static void test_interval_lead_cap_keeps_the_increment_within_the_lead(void)
{
	struct rr_lead_inputs in = s_lead_case();
	struct rr_lead_verdict v;
	rr_interval_lead(&in, &v);
	CU_ASSERT_EQUAL(v.state, RR_LEAD_CAP);
	CU_ASSERT_DOUBLE_EQUAL(v.budget_bytes, 400e3 * 3.95 * RR_INTERVAL_LEAD_SAFETY, 1);
	CU_ASSERT_DOUBLE_EQUAL(v.change_bps, 262e3, 1e-6);
	CU_ASSERT_EQUAL(v.saturated, 0);
	/* the worst case at the cap uses the budget exactly: c (tau + d)(1 + c/rate) */
	double c = v.change_bps, used = c * (v.cap_s + 0.05) * (1 + c / 400e3);
	CU_ASSERT_DOUBLE_EQUAL(used, v.budget_bytes, 1e-3);
	CU_ASSERT(v.cap_s > 2.5 && v.cap_s < 3.5);
}

static void test_interval_lead_fits_when_a_whole_checkpoint_fits(void)
{
	struct rr_lead_inputs in = s_lead_case();
	struct rr_lead_verdict v;
	in.bytes = 1e6; /* 1 MB moves in 2.5 s */
	in.changed = 1e6;
	rr_interval_lead(&in, &v);
	CU_ASSERT_EQUAL(v.state, RR_LEAD_FITS);
	/* unknown without a rate, a lead, or a second checkpoint */
	in = s_lead_case();
	in.between_s = 0;
	rr_interval_lead(&in, &v);
	CU_ASSERT_EQUAL(v.state, RR_LEAD_UNKNOWN);
	in = s_lead_case();
	in.rate_bps = 0;
	rr_interval_lead(&in, &v);
	CU_ASSERT_EQUAL(v.state, RR_LEAD_UNKNOWN);
	/* nothing changed at all: nothing to carry */
	in = s_lead_case();
	in.changed = 0;
	rr_interval_lead(&in, &v);
	CU_ASSERT_EQUAL(v.state, RR_LEAD_FITS);
}

static void test_interval_lead_impossible_cases(void)
{
	struct rr_lead_inputs in = s_lead_case();
	struct rr_lead_verdict v;
	/* the stall alone takes the lead */
	in.cost_s = 5;
	rr_interval_lead(&in, &v);
	CU_ASSERT_EQUAL(v.state, RR_LEAD_IMPOSSIBLE);
	CU_ASSERT_PTR_NOT_NULL(strstr(v.why, "as long as the 4 s notice lead"));
	/* changes faster than any interval can keep up with */
	in = s_lead_case();
	in.changed = 3.9e6 * 0.9;
	in.between_s = 0.3;
	rr_interval_lead(&in, &v);
	CU_ASSERT_EQUAL(v.state, RR_LEAD_IMPOSSIBLE);
	CU_ASSERT_PTR_NOT_NULL(strstr(v.why, "would need a checkpoint every"));
	CU_ASSERT_EQUAL(v.cap_s, 0);
}

/* Every byte changes each step: the first saturated sight gives a cap to try (the change
 * rate is only a lower bound); everything changing again at that cap is impossible. */
static void test_interval_lead_saturated_is_tried_once_then_impossible(void)
{
	struct rr_lead_inputs in = s_lead_case();
	struct rr_lead_verdict v;
	in.changed = in.bytes; /* all of it, over 30 s */
	in.between_s = 30;
	rr_interval_lead(&in, &v);
	CU_ASSERT_EQUAL(v.state, RR_LEAD_CAP);
	CU_ASSERT_EQUAL(v.saturated, 1);
	double tried = v.cap_s;
	CU_ASSERT(tried > 1 && tried < 30);
	/* at that cap, all of it changed again */
	in.between_s = tried * 1.1;
	in.tried_cap_s = tried;
	rr_interval_lead(&in, &v);
	CU_ASSERT_EQUAL(v.state, RR_LEAD_IMPOSSIBLE);
	CU_ASSERT_PTR_NOT_NULL(strstr(v.why, "every byte changed again"));
	/* at that cap only part of it changed: a real rate, a cap again */
	in.changed = in.bytes * 0.5;
	rr_interval_lead(&in, &v);
	CU_ASSERT_EQUAL(v.state, RR_LEAD_CAP);
	CU_ASSERT_EQUAL(v.saturated, 0);
}

static CU_TestInfo s_tests[] = {
	{ "daly_matches_the_papers_case", test_interval_daly_matches_the_papers_case },
	{ "daly_edges", test_interval_daly_edges },
	{ "mtbf_is_posterior_with_one_pseudo_loss",
	  test_interval_mtbf_is_posterior_with_one_pseudo_loss },
	{ "priors_and_leads_per_cloud", test_interval_priors_and_leads_per_cloud },
	{ "median_of_recent", test_interval_median_of_recent },
	{ "overhead_bound_lengthens_a_short_optimum",
	  test_interval_overhead_bound_lengthens_a_short_optimum },
	{ "lead_cap_shortens_but_overhead_wins", test_interval_lead_cap_shortens_but_overhead_wins },
	{ "bounds_min_and_max", test_interval_bounds_min_and_max },
	{ "lead_cap_keeps_the_increment_within_the_lead",
	  test_interval_lead_cap_keeps_the_increment_within_the_lead },
	{ "lead_fits_when_a_whole_checkpoint_fits",
	  test_interval_lead_fits_when_a_whole_checkpoint_fits },
	{ "lead_impossible_cases", test_interval_lead_impossible_cases },
	{ "lead_saturated_is_tried_once_then_impossible",
	  test_interval_lead_saturated_is_tried_once_then_impossible },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("interval", s_tests)
