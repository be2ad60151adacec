/* CUnit suite "recovery": when the agent marks a checkpoint suspect or proven
 * (agent/run/recovery.c; docs/how-it-works.md, "Suspect and proven checkpoints"). */
#include <string.h>

#include "recovery.h"

#include "cunit_main.h"

static void test_two_failures_from_one_checkpoint_mark_it(void)
{
	struct rr_recovery r = { .suspect_after = 2 };

	rr_recovery_launch(&r, "step-6", 1000);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	rr_recovery_launch(&r, "step-6", 1000);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 137), 1); /* killed by a signal counts too */
}

static void test_a_newer_commit_clears_the_suspicion_and_proves_it_once_durable(void)
{
	struct rr_recovery r = { .suspect_after = 2 };

	rr_recovery_launch(&r, "step-6", 1000);
	rr_recovery_commit(&r, "step-6", 1000); /* the restored one itself is no newer commit */
	CU_ASSERT_EQUAL(rr_recovery_durable(&r, "step-6", 2000), 0);
	rr_recovery_commit(&r, "step-7", 2000);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	CU_ASSERT_EQUAL(rr_recovery_durable(&r, "step-8", 2000), 0); /* not the one it committed */
	CU_ASSERT_EQUAL(rr_recovery_durable(&r, "step-7", 2000), 1);
	CU_ASSERT_EQUAL(rr_recovery_durable(&r, "step-7", 2000), 0); /* said once */
}

static void test_a_command_that_cannot_start_marks_nothing(void)
{
	struct rr_recovery r = { .suspect_after = 2 };

	rr_recovery_launch(&r, "step-6", 1000);
	for (int i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL(rr_recovery_failed(&r, 127), 0);
		CU_ASSERT_EQUAL(rr_recovery_failed(&r, 126), 0);
	}
}

static void test_a_fresh_start_or_suspect_after_0_marks_nothing(void)
{
	struct rr_recovery r = { .suspect_after = 2 }, off = { .suspect_after = 0 };

	rr_recovery_launch(&r, "", 1000);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	rr_recovery_commit(&r, "step-1", 2000);
	CU_ASSERT_EQUAL(rr_recovery_durable(&r, "step-1", 2000), 0);
	rr_recovery_launch(&off, "step-6", 1000);
	CU_ASSERT_EQUAL(rr_recovery_failed(&off, 1), 0);
	CU_ASSERT_EQUAL(rr_recovery_failed(&off, 1), 0);
}

static void test_resuming_from_another_checkpoint_counts_afresh(void)
{
	struct rr_recovery r = { .suspect_after = 2 };

	rr_recovery_launch(&r, "step-6", 1000);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	rr_recovery_launch(&r, "step-5", 1000);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 1);
	CU_ASSERT_STRING_EQUAL(r.from, "step-5");
}

/* One name saved again and again (ckpt.pt, last.ckpt): an attempt that committed it again
 * made progress, so failures after it count afresh, and its durable commit proves the one
 * resumed from. Before, the name alone was compared: each attempt's progress went unseen
 * and two failures marked the newest state suspect. */
static void test_a_stepless_name_committed_again_is_progress(void)
{
	struct rr_recovery r = { .suspect_after = 2 };

	rr_recovery_launch(&r, "ckpt.pt", 1000);
	rr_recovery_commit(&r, "ckpt.pt", 1000); /* the restored copy itself */
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	rr_recovery_launch(&r, "ckpt.pt", 1000);
	rr_recovery_commit(&r, "ckpt.pt", 5000); /* saved again, then failed */
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	CU_ASSERT_EQUAL(rr_recovery_durable(&r, "ckpt.pt", 1000), 0); /* an older commit */
	CU_ASSERT_EQUAL(rr_recovery_durable(&r, "ckpt.pt", 5000), 1);
	rr_recovery_launch(&r, "ckpt.pt", 5000); /* resumes from the new commit: afresh */
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 0);
	CU_ASSERT_EQUAL(rr_recovery_failed(&r, 1), 1);
}

static CU_TestInfo s_tests[] = {
	{ "test_a_stepless_name_committed_again_is_progress",
	  test_a_stepless_name_committed_again_is_progress },
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
