/* CUnit suite "throughput": the persist rate learned from given histories, the estimate
 * for a notice's deadline, and the log line for a deadline met and one missed. */
#include <stdint.h>
#include <string.h>

#include "throughput.h"

#include "cunit_main.h"

#define MB (1000.0 * 1000.0)

static void test_throughput_seed_is_per_store_kind(void)
{
	struct rr_throughput s3, gs, file;
	rr_throughput_init(&s3, "s3://bucket/run");
	rr_throughput_init(&gs, "gs://bucket/run");
	rr_throughput_init(&file, "file:///var/ckpt");
	CU_ASSERT_DOUBLE_EQUAL(s3.bps, RR_THROUGHPUT_SEED_REMOTE_BPS, 1);
	CU_ASSERT_DOUBLE_EQUAL(gs.bps, RR_THROUGHPUT_SEED_REMOTE_BPS, 1);
	CU_ASSERT_DOUBLE_EQUAL(file.bps, RR_THROUGHPUT_SEED_FILE_BPS, 1);
	CU_ASSERT_EQUAL(s3.samples, 0);
	CU_ASSERT_EQUAL(s3.last_name[0], '\0');
}

static void test_throughput_first_sample_replaces_seed_then_averages(void)
{
	struct rr_throughput t;
	rr_throughput_init(&t, "s3://b/r");
	/* 100 MB written in full in 1 s: 100 MB/s, the seed forgotten */
	rr_throughput_observe(&t, "step-1", 100 * 1000 * 1000, 40 * 1000 * 1000,
			      40 * 1000 * 1000, 1000, 5000);
	CU_ASSERT_DOUBLE_EQUAL(t.bps, 100 * MB, 1);
	CU_ASSERT_EQUAL(t.samples, 1);
	/* then 100 MB in 4 s (25 MB/s): half weight each */
	rr_throughput_observe(&t, "step-2", 100 * 1000 * 1000, 40 * 1000 * 1000,
			      40 * 1000 * 1000, 4000, 9000);
	CU_ASSERT_DOUBLE_EQUAL(t.bps, 62.5 * MB, 1);
	/* then 100 MB in 2 s (50 MB/s) */
	rr_throughput_observe(&t, "step-3", 100 * 1000 * 1000, 40 * 1000 * 1000,
			      40 * 1000 * 1000, 2000, 12000);
	CU_ASSERT_DOUBLE_EQUAL(t.bps, 56.25 * MB, 1);
	CU_ASSERT_STRING_EQUAL(t.last_name, "step-3");
	CU_ASSERT_EQUAL(t.last_durable_ms, 12000);
}

static void test_throughput_incremental_rate_counts_changed_bytes(void)
{
	struct rr_throughput t;
	rr_throughput_init(&t, "s3://b/r");
	/* 1 GB checkpoint, a tenth of its stored bytes new, in 2 s: 100 MB changed / 2 s */
	rr_throughput_observe(&t, "step-4", 1000 * 1000 * 1000, 500 * 1000 * 1000,
			      50 * 1000 * 1000, 2000, 1);
	CU_ASSERT_DOUBLE_EQUAL(t.bps, 50 * MB, 1);
	CU_ASSERT_DOUBLE_EQUAL(t.last_new_fraction, 0.1, 1e-9);
}

static void test_throughput_tiny_or_unchanged_persists_leave_rate_alone(void)
{
	struct rr_throughput t;
	rr_throughput_init(&t, "s3://b/r");
	rr_throughput_observe(&t, "step-1", 10 * 1000 * 1000, 10 * 1000 * 1000, 0, 300, 100);
	CU_ASSERT_EQUAL(t.samples, 0);
	CU_ASSERT_DOUBLE_EQUAL(t.bps, RR_THROUGHPUT_SEED_REMOTE_BPS, 1);
	CU_ASSERT_STRING_EQUAL(t.last_name, "step-1");
	CU_ASSERT_DOUBLE_EQUAL(t.last_new_fraction, 0.0, 1e-9);
	rr_throughput_observe(&t, "step-2", 1000, 1000, 1000, 1, 200);
	CU_ASSERT_EQUAL(t.samples, 0);
	rr_throughput_observe(&t, "step-3", 10 * 1000 * 1000, 10 * 1000 * 1000,
			      10 * 1000 * 1000, 0, 300);
	CU_ASSERT_EQUAL(t.samples, 0);
	CU_ASSERT_STRING_EQUAL(t.last_name, "step-3");
}

static void test_throughput_estimate_scales_last_checkpoint_by_new_fraction(void)
{
	struct rr_throughput t;
	struct rr_deadline_estimate e;
	rr_throughput_init(&t, "s3://b/r");
	rr_throughput_observe(&t, "step-1", 1200 * 1000 * 1000, 600 * 1000 * 1000,
			      600 * 1000 * 1000, 12000, 1); /* 100 MB/s */
	rr_throughput_estimate(&t, 30000, &e);
	CU_ASSERT_EQUAL(e.expect_bytes, 1200ull * 1000 * 1000);
	CU_ASSERT_EQUAL(e.expect_work, 1200ull * 1000 * 1000);
	CU_ASSERT_EQUAL(e.need_ms, 12000);
	CU_ASSERT_TRUE(e.fits);
	rr_throughput_estimate(&t, 11999, &e);
	CU_ASSERT_FALSE(e.fits);
	/* a quarter new next time: a quarter of the time */
	rr_throughput_observe(&t, "step-2", 1200 * 1000 * 1000, 600 * 1000 * 1000,
			      150 * 1000 * 1000, 3000, 2); /* 300 MB in 3 s: 100 MB/s again */
	rr_throughput_estimate(&t, 30000, &e);
	CU_ASSERT_EQUAL(e.expect_work, 300ull * 1000 * 1000);
	CU_ASSERT_EQUAL(e.need_ms, 3000);
}

static void test_throughput_baseline_assumes_a_full_write(void)
{
	struct rr_throughput t;
	struct rr_deadline_estimate e;
	rr_throughput_init(&t, "s3://b/r");
	rr_throughput_baseline(&t, "step-9", 400 * 1000 * 1000);
	rr_throughput_estimate(&t, 30000, &e);
	CU_ASSERT_EQUAL(e.expect_work, 400ull * 1000 * 1000);
	CU_ASSERT_EQUAL(e.need_ms, 20000); /* at the 20 MB/s seed */
	CU_ASSERT_TRUE(e.fits);
}

static void test_throughput_message_when_the_deadline_is_met(void)
{
	struct rr_throughput t;
	struct rr_deadline_estimate e;
	char line[512];
	rr_throughput_init(&t, "s3://b/r");
	rr_throughput_observe(&t, "step-400", 1200 * 1000 * 1000, 600 * 1000 * 1000,
			      600 * 1000 * 1000, 14118, 1000); /* 85 MB/s */
	rr_throughput_estimate(&t, 28000, &e);
	rr_throughput_describe(&t, &e, 2000, line, sizeof(line));
	CU_ASSERT_STRING_EQUAL(line, "deadline in 28 s; at the recent 85.0 MB/s the expected "
				     "checkpoint (1.2 GB, like step-400) needs ~14 s: it should "
				     "be durable with 14 s to spare");
}

static void test_throughput_message_when_the_deadline_is_missed(void)
{
	struct rr_throughput t;
	struct rr_deadline_estimate e;
	char line[512];
	rr_throughput_init(&t, "s3://b/r");
	rr_throughput_observe(&t, "step-400", 1200 * 1000 * 1000, 600 * 1000 * 1000,
			      300 * 1000 * 1000, 22500, 1000000); /* 600 MB in 22.5 s */
	rr_throughput_estimate(&t, 5000, &e);
	rr_throughput_describe(&t, &e, 1000000 + 180000, line, sizeof(line));
	CU_ASSERT_STRING_EQUAL(line, "deadline in 5 s; at the recent 26.7 MB/s the expected "
				     "checkpoint (1.2 GB, like step-400, of which about 600.0 MB "
				     "new) needs ~22 s: it will likely miss the deadline by 18 s; "
				     "step-400 (durable 3 min ago) is what a new machine would "
				     "restore");
}

static void test_throughput_message_names_baseline_and_empty_history(void)
{
	struct rr_throughput t;
	struct rr_deadline_estimate e;
	char line[512];
	rr_throughput_init(&t, "gs://b/r");
	rr_throughput_estimate(&t, 30000, &e);
	rr_throughput_describe(&t, &e, 0, line, sizeof(line));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "no checkpoint persisted yet"));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "20.0 MB/s assumed"));
	rr_throughput_baseline(&t, "step-7", 2000ull * 1000 * 1000);
	rr_throughput_estimate(&t, 30000, &e);
	rr_throughput_describe(&t, &e, 0, line, sizeof(line));
	CU_ASSERT_STRING_EQUAL(line, "deadline in 30 s; at the assumed 20.0 MB/s the expected "
				     "checkpoint (2.0 GB, like step-7) needs ~100 s: it will "
				     "likely miss the deadline by 70 s; step-7 (durable before "
				     "this run) is what a new machine would restore");
}

static void test_throughput_message_fits_a_small_buffer(void)
{
	struct rr_throughput t;
	struct rr_deadline_estimate e;
	char line[24];
	rr_throughput_init(&t, "s3://b/r");
	rr_throughput_baseline(&t, "step-1", 1000);
	rr_throughput_estimate(&t, 1000, &e);
	CU_ASSERT_PTR_EQUAL(rr_throughput_describe(&t, &e, 0, line, sizeof(line)), line);
	CU_ASSERT_EQUAL(strlen(line), sizeof(line) - 1);
}

static CU_TestInfo s_tests[] = {
	{ "seed is per store kind", test_throughput_seed_is_per_store_kind },
	{ "first sample replaces the seed, then averages",
	  test_throughput_first_sample_replaces_seed_then_averages },
	{ "incremental rate counts changed bytes",
	  test_throughput_incremental_rate_counts_changed_bytes },
	{ "tiny or unchanged persists leave the rate alone",
	  test_throughput_tiny_or_unchanged_persists_leave_rate_alone },
	{ "estimate scales the last checkpoint by its new fraction",
	  test_throughput_estimate_scales_last_checkpoint_by_new_fraction },
	{ "baseline assumes a full write", test_throughput_baseline_assumes_a_full_write },
	{ "message when the deadline is met", test_throughput_message_when_the_deadline_is_met },
	{ "message when the deadline is missed",
	  test_throughput_message_when_the_deadline_is_missed },
	{ "message names the baseline and an empty history",
	  test_throughput_message_names_baseline_and_empty_history },
	{ "message fits a small buffer", test_throughput_message_fits_a_small_buffer },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("throughput", s_tests)
