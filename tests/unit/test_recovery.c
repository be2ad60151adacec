/* CUnit suite "recovery": when the agent marks a checkpoint suspect or proven
 * (agent/run/recovery.c; README, "Suspect and proven checkpoints"). */
#include <string.h>

#include "recovery.h"

#include "cunit_main.h"

static void test_two_failures_from_one_checkpoint_mark_it(void)
{
	struct rr_recovery r = { .suspect_after = 2 };

	rr_recovery_launch(&r, "step-6");
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	rr_recovery_launch(&r, "step-6");
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 137), 1); /* killed by a signal counts too */
}

static void test_a_newer_commit_clears_the_suspicion_and_proves_it_once_durable(void)
{
	struct rr_recovery r = { .suspect_after = 2 };

	rr_recovery_launch(&r, "step-6");
	rr_recovery_commit(&r, "step-6"); /* the restored one itself is no newer commit */
	CU_ASSERT_EQUAL(rr_recovery_durable(&r, "step-6"), 0);
	rr_recovery_commit(&r, "step-7");
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	CU_ASSERT_EQUAL(rr_recovery_durable(&r, "step-8"), 0); /* not the one it committed */
	CU_ASSERT_EQUAL(rr_recovery_durable(&r, "step-7"), 1);
	CU_ASSERT_EQUAL(rr_recovery_durable(&r, "step-7"), 0); /* said once */
}

static void test_a_command_that_cannot_start_marks_nothing(void)
{
	struct rr_recovery r = { .suspect_after = 2 };

	rr_recovery_launch(&r, "step-6");
	for (int i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL(rr_recovery_failed(&r, 127), 0);
		CU_ASSERT_EQUAL(rr_recovery_failed(&r, 126), 0);
	}
}

static void test_a_fresh_start_or_suspect_after_0_marks_nothing(void)
{
	struct rr_recovery r = { .suspect_after = 2 }, off = { .suspect_after = 0 };

	rr_recovery_launch(&r, "");
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	rr_recovery_commit(&r, "step-1");
	CU_ASSERT_EQUAL(rr_recovery_durable(&r, "step-1"), 0);
	rr_recovery_launch(&off, "step-6");
	CU_ASSERT_EQUAL(rr_recovery_failed(&off, 1), 0);
	CU_ASSERT_EQUAL(rr_recovery_failed(&off, 1), 0);
}

static void test_resuming_from_another_checkpoint_counts_afresh(void)
{
	struct rr_recovery r = { .suspect_after = 2 };

	rr_recovery_launch(&r, "step-6");
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	rr_recovery_launch(&r, "step-5");
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 1);
	CU_ASSERT_STRING_EQUAL(r.from, "step-5");
}

static CU_TestInfo s_tests[] = {
	{ "test_two_failures_from_one_checkpoint_mark_it",
	  test_two_failures_from_one_checkpoint_mark_it },
	{ "test_a_newer_commit_clears_the_suspicion_and_proves_it_once_durable",
	  test_a_newer_commit_clears_the_suspicion_and_proves_it_once_durable },
	{ "test_a_command_that_cannot_start_marks_nothing",
	  test_a_command_that_cannot_start_marks_nothing },
	{ "test_a_fresh_start_or_suspect_after_0_marks_nothing",
	  test_a_fresh_start_or_suspect_after_0_marks_nothing },
	{ "test_resuming_from_another_checkpoint_counts_afresh",
	  test_resuming_from_another_checkpoint_counts_afresh },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("recovery", s_tests)
