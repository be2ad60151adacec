/* CUnit suite "retry": backoff with full jitter (storage/net/retry.c) and the classification of
 * S3-style failures that may heal. The random state is seeded by hand, so every run draws
 * the same delays; the clock is passed in, so nothing here sleeps. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rr/retry.h"

#include "cunit_main.h"

#define S_NOW 1000000 /* an arbitrary monotonic "now" (ms) */

static void s_init(struct rr_retry *r, unsigned max_attempts, int64_t base, int64_t cap,
		   uint64_t seed)
{
	rr_retry_init(r, 0);
	r->max_attempts = max_attempts;
	r->base_ms = base;
	r->cap_ms = cap;
	r->rng = seed;
}

/* min(cap, base * 2^(n-1)) for the n-th failure (n >= 1). */
static int64_t s_ceiling(int64_t base, int64_t cap, unsigned n)
{
	int64_t c = base;

	for (unsigned i = 1; i < n && c < cap; i++)
		c *= 2;
	return c < cap ? c : cap;
}

static void test_default_policy_is_10_attempts_200_ms_base_15_s_cap(void)
{
	struct rr_retry r;
	int n = 0;

	rr_retry_init(&r, 0);
	CU_ASSERT_EQUAL(r.max_attempts, 10);
	CU_ASSERT_EQUAL(r.base_ms, 200);
	CU_ASSERT_EQUAL(r.cap_ms, 15000);
	CU_ASSERT_EQUAL(r.deadline_mono_ms, 0);
	CU_ASSERT_EQUAL(r.attempt, 0);
	/* The clock seeds the generator when rng is 0. */
	while (rr_retry_next(&r, S_NOW) >= 0)
		n++;
	CU_ASSERT_EQUAL(n, 9); /* 10 attempts: 9 waits between them */
}

static void test_delays_stay_within_0_and_the_ceiling_of_each_attempt(void)
{
	struct rr_retry r;
	int64_t d;
	int bad = 0;

	for (uint64_t seed = 1; seed <= 500; seed++) {
		s_init(&r, 30, 100, 20000, seed * 0x9E3779B97F4A7C15ull);
		for (unsigned n = 1; n < 30; n++) {
			d = rr_retry_next(&r, S_NOW);
			if (d < 0 || d > s_ceiling(100, 20000, n))
				bad++;
		}
		CU_ASSERT_EQUAL(rr_retry_next(&r, S_NOW), -1);
	}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_ceiling_doubles_from_base_then_stays_at_cap(void)
{
	enum { SEEDS = 400, N = 12 };
	int64_t most[N + 1] = { 0 }, least[N + 1];
	struct rr_retry r;

	for (int n = 0; n <= N; n++)
		least[n] = INT64_MAX;
	for (uint64_t seed = 1; seed <= SEEDS; seed++) {
		s_init(&r, N + 1, 100, 3000, seed * 0x2545F4914F6CDD1Dull);
		for (int n = 1; n <= N; n++) {
			int64_t d = rr_retry_next(&r, S_NOW);
			if (d > most[n])
				most[n] = d;
			if (d < least[n])
				least[n] = d;
		}
	}
	/* Over many draws the largest delay nears each attempt's ceiling (100, 200, 400,
	 * 800, 1600, then 3000 for good) and the smallest nears 0 (full jitter). */
	for (int n = 1; n <= N; n++) {
		int64_t c = s_ceiling(100, 3000, (unsigned)n);
		CU_ASSERT(most[n] <= c);
		CU_ASSERT(most[n] >= c * 9 / 10);
		CU_ASSERT(least[n] <= c / 10);
	}
	CU_ASSERT(most[4] <= 800);
	CU_ASSERT(most[5] > 800);
	CU_ASSERT(most[6] > 1600);
	CU_ASSERT(most[N] <= 3000);
}

static void test_max_attempts_ends_the_retries(void)
{
	struct rr_retry r;

	s_init(&r, 3, 10, 100, 42);
	CU_ASSERT(rr_retry_next(&r, S_NOW) >= 0); /* after attempt 1 */
	CU_ASSERT(rr_retry_next(&r, S_NOW) >= 0); /* after attempt 2 */
	CU_ASSERT_EQUAL(rr_retry_next(&r, S_NOW), -1); /* attempt 3 was the last */
	CU_ASSERT_EQUAL(rr_retry_next(&r, S_NOW), -1); /* and stays so */
	s_init(&r, 1, 10, 100, 42);
	CU_ASSERT_EQUAL(rr_retry_next(&r, S_NOW), -1); /* one attempt: no retry at all */
}

static void test_delay_past_deadline_minus_1_s_is_shortened(void)
{
	struct rr_retry r;
	int shortened = 0, bad = 0;

	for (uint64_t seed = 1; seed <= 200; seed++) {
		s_init(&r, 10, 10000, 10000, seed * 0x9E3779B97F4A7C15ull);
		r.deadline_mono_ms = S_NOW + 1500;
		int64_t d = rr_retry_next(&r, S_NOW);
		if (d < 0 || d > 500)
			bad++; /* sleeping more would leave under 1 s for the request */
		if (d == 500)
			shortened++;
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(shortened > 0); /* draws up to 10 s were cut to what the deadline allows */
}

static void test_no_time_left_before_the_deadline_refuses_the_retry(void)
{
	struct rr_retry r;

	s_init(&r, 10, 0, 0, 7); /* a zero delay, so only the deadline can refuse */
	r.deadline_mono_ms = S_NOW + 900;
	CU_ASSERT_EQUAL(rr_retry_next(&r, S_NOW), -1);
	s_init(&r, 10, 100, 100, 7);
	r.deadline_mono_ms = S_NOW - 5000; /* already passed */
	CU_ASSERT_EQUAL(rr_retry_next(&r, S_NOW), -1);
	s_init(&r, 10, 100, 100, 7);
	r.deadline_mono_ms = S_NOW + 1000; /* exactly the second the request needs */
	CU_ASSERT_EQUAL(rr_retry_next(&r, S_NOW), 0);
}

static void test_deadline_far_away_leaves_delays_alone(void)
{
	struct rr_retry a, b;

	s_init(&a, 10, 200, 15000, 99);
	s_init(&b, 10, 200, 15000, 99);
	b.deadline_mono_ms = S_NOW + 3600 * 1000;
	for (int n = 1; n < 10; n++)
		CU_ASSERT_EQUAL(rr_retry_next(&a, S_NOW), rr_retry_next(&b, S_NOW));
}

static void test_retryable_statuses(void)
{
	static const long yes[] = { 408, 429, 500, 502, 503, 504 };
	static const long no[] = { 200, 301, 307, 400, 401, 403, 404, 405, 409, 411, 412, 416,
				   501 };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		CU_ASSERT_EQUAL(rr_retry_worth_it(yes[i], 0, NULL), 1);
		CU_ASSERT_EQUAL(rr_retry_worth_it(yes[i], 0, ""), 1);
		CU_ASSERT_EQUAL(rr_retry_worth_it(yes[i], 0, "AccessDenied"), 1);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		CU_ASSERT_EQUAL(rr_retry_worth_it(no[i], 0, NULL), 0);
		CU_ASSERT_EQUAL(rr_retry_worth_it(no[i], 0, ""), 0);
	}
	CU_ASSERT_EQUAL(rr_retry_worth_it(400, 0, "InvalidArgument"), 0);
	CU_ASSERT_EQUAL(rr_retry_worth_it(403, 0, "SignatureDoesNotMatch"), 0);
	CU_ASSERT_EQUAL(rr_retry_worth_it(404, 0, "NoSuchKey"), 0);
	CU_ASSERT_EQUAL(rr_retry_worth_it(412, 0, "PreconditionFailed"), 0);
}

static void test_retryable_codes_whatever_the_status(void)
{
	static const char *const yes[] = {
		"SlowDown", "InternalError", "RequestTimeout", "ConditionalRequestConflict",
		"ServiceUnavailable", "OperationAborted", "Throttling", "ThrottlingException",
		"RequestLimitExceeded", "TooManyRequestsException",
	};
	static const long statuses[] = { 200, 400, 403, 409 };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		for (size_t k = 0; k < sizeof(statuses) / sizeof(statuses[0]); k++)
			CU_ASSERT_EQUAL(rr_retry_worth_it(statuses[k], 0, yes[i]), 1);
	/* Codes are matched exactly. */
	CU_ASSERT_EQUAL(rr_retry_worth_it(400, 0, "slowdown"), 0);
	CU_ASSERT_EQUAL(rr_retry_worth_it(400, 0, "SlowDownPlease"), 0);
	CU_ASSERT_EQUAL(rr_retry_worth_it(409, 0, "BucketAlreadyExists"), 0);
}

static void test_transport_failures_follow_the_http_layers_flag(void)
{
	CU_ASSERT_EQUAL(rr_retry_worth_it(0, 1, NULL), 1);
	CU_ASSERT_EQUAL(rr_retry_worth_it(0, 0, NULL), 0);
	CU_ASSERT_EQUAL(rr_retry_worth_it(0, 0, ""), 0);
}

static CU_TestInfo s_tests[] = {
	{ "default_policy_is_10_attempts_200_ms_base_15_s_cap",
	  test_default_policy_is_10_attempts_200_ms_base_15_s_cap },
	{ "delays_stay_within_0_and_the_ceiling_of_each_attempt",
	  test_delays_stay_within_0_and_the_ceiling_of_each_attempt },
	{ "ceiling_doubles_from_base_then_stays_at_cap",
	  test_ceiling_doubles_from_base_then_stays_at_cap },
	{ "max_attempts_ends_the_retries", test_max_attempts_ends_the_retries },
	{ "delay_past_deadline_minus_1_s_is_shortened",
	  test_delay_past_deadline_minus_1_s_is_shortened },
	{ "no_time_left_before_the_deadline_refuses_the_retry",
	  test_no_time_left_before_the_deadline_refuses_the_retry },
	{ "deadline_far_away_leaves_delays_alone", test_deadline_far_away_leaves_delays_alone },
	{ "retryable_statuses", test_retryable_statuses },
	{ "retryable_codes_whatever_the_status", test_retryable_codes_whatever_the_status },
	{ "transport_failures_follow_the_http_layers_flag",
	  test_transport_failures_follow_the_http_layers_flag },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("retry", s_tests)
