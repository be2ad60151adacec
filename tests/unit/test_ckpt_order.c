/* CUnit suite "ckpt_order": which checkpoint is newest (docs/trainer-contract.md, "The trainer
 * contract"): the greatest step-N number, else the latest commit time, then the name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rr/ckpt_order.h"

#include "cunit_main.h"

/* Sign of a comparison, so tests do not depend on its magnitude. */
static int s_cmp(const char *a, int64_t a_ms, const char *b, int64_t b_ms)
{
	int c = rr_checkpoint_compare(a, a_ms, b, b_ms);
	return (c > 0) - (c < 0);
}

static void test_step_is_parsed_from_step_names(void)
{
	uint64_t n = 12345;

	CU_ASSERT(rr_checkpoint_step("step-0", &n) == 1 && n == 0);
	CU_ASSERT(rr_checkpoint_step("step-2", &n) == 1 && n == 2);
	CU_ASSERT(rr_checkpoint_step("step-1200", &n) == 1 && n == 1200);
	CU_ASSERT(rr_checkpoint_step("step-007", &n) == 1 && n == 7);
}

static void test_step_may_be_followed_by_a_suffix(void)
{
	uint64_t n = 0;

	CU_ASSERT(rr_checkpoint_step("step-1200.final", &n) == 1 && n == 1200);
	CU_ASSERT(rr_checkpoint_step("step-5-epoch2", &n) == 1 && n == 5);
	CU_ASSERT(rr_checkpoint_step("step-9_best", &n) == 1 && n == 9);
}

static void test_names_that_are_not_steps_are_recognised(void)
{
	static const char *const not_steps[] = {
		"step-", "step", "steps-1", "Step-1", "step__1", "step--1", "step-x1", "xstep-1",
		"best", "", "step-+1", " step-1",
	};
	uint64_t n = 777;

	for (size_t i = 0; i < sizeof(not_steps) / sizeof(not_steps[0]); i++)
		CU_ASSERT_EQUAL(rr_checkpoint_step(not_steps[i], &n), 0);
	CU_ASSERT_EQUAL(n, 777); /* untouched */
}

static void test_step_numbers_of_up_to_19_digits_are_steps_and_longer_are_not(void)
{
	uint64_t n = 0;

	/* 19 nines still fit in 64 bits; 20 digits may not, so they are not step numbers. */
	CU_ASSERT(rr_checkpoint_step("step-9999999999999999999", &n) == 1 &&
		  n == 9999999999999999999ULL);
	CU_ASSERT(rr_checkpoint_step("step-0000000000000000001", &n) == 1 && n == 1);
	n = 777;
	CU_ASSERT_EQUAL(rr_checkpoint_step("step-18446744073709551615", &n), 0); /* UINT64_MAX */
	CU_ASSERT_EQUAL(rr_checkpoint_step("step-99999999999999999999", &n), 0);
	CU_ASSERT_EQUAL(rr_checkpoint_step("step-00000000000000000001", &n), 0);
	CU_ASSERT_EQUAL(n, 777);
}

static void test_steps_compare_numerically_not_lexically(void)
{
	/* Commit times point the other way: the step number wins. */
	CU_ASSERT_EQUAL(s_cmp("step-2", 2000, "step-10", 1000), -1);
	CU_ASSERT_EQUAL(s_cmp("step-10", 1000, "step-2", 2000), 1);
	CU_ASSERT_EQUAL(s_cmp("step-0", 9000, "step-1", 0), -1);
	CU_ASSERT_EQUAL(s_cmp("step-999", 5, "step-1000", 5), -1);
	CU_ASSERT_EQUAL(s_cmp("step-010", 5, "step-9", 5), 1);
}

static void test_same_step_with_different_suffixes_compares_by_time_then_name(void)
{
	CU_ASSERT_EQUAL(s_cmp("step-5", 1000, "step-5.final", 2000), -1);
	CU_ASSERT_EQUAL(s_cmp("step-5.final", 1000, "step-5", 2000), -1);
	CU_ASSERT_EQUAL(s_cmp("step-5", 1000, "step-5.final", 1000), -1); /* by name */
	CU_ASSERT_EQUAL(s_cmp("step-5.final", 1000, "step-5", 1000), 1);
	CU_ASSERT_EQUAL(s_cmp("step-05", 1000, "step-5", 1000), -1);
}

static void test_step_suffix_does_not_change_the_number_order(void)
{
	CU_ASSERT_EQUAL(s_cmp("step-10.a", 0, "step-9.z", 1000), 1);
	CU_ASSERT_EQUAL(s_cmp("step-9.final", 1000, "step-10", 0), -1);
}

static void test_non_step_names_compare_by_commit_time(void)
{
	CU_ASSERT_EQUAL(s_cmp("best", 2000, "latest", 1000), 1);
	CU_ASSERT_EQUAL(s_cmp("latest", 1000, "best", 2000), -1);
	CU_ASSERT_EQUAL(s_cmp("epoch-2", 100, "epoch-10", 200), -1);
	CU_ASSERT_EQUAL(s_cmp("epoch-10", -5, "epoch-2", -6), 1); /* negative times still order */
}

static void test_step_name_is_newer_than_any_other_name(void)
{
	CU_ASSERT_EQUAL(s_cmp("step-100", 1000, "manual", 2000), 1);
	CU_ASSERT_EQUAL(s_cmp("manual", 2000, "step-100", 1000), -1);
	CU_ASSERT_EQUAL(s_cmp("step-1", 3000, "manual", 2000), 1);
	/* a 20-digit "step" is just a name */
	CU_ASSERT_EQUAL(s_cmp("step-99999999999999999999", 1, "step-1", 2), -1);
}

/* step-9 (t=3), foo (t=2), step-10 (t=1): pairwise rules that mix step numbers and times
 * would make a cycle; the order must stay transitive so sorting is well defined. */
static void test_order_is_transitive_when_names_are_mixed(void)
{
	CU_ASSERT_EQUAL(s_cmp("step-10", 1, "step-9", 3), 1);
	CU_ASSERT_EQUAL(s_cmp("step-9", 3, "foo", 2), 1);
	CU_ASSERT_EQUAL(s_cmp("step-10", 1, "foo", 2), 1);
}

static void test_commit_time_ties_are_broken_by_name(void)
{
	CU_ASSERT_EQUAL(s_cmp("a", 1000, "b", 1000), -1);
	CU_ASSERT_EQUAL(s_cmp("b", 1000, "a", 1000), 1);
	CU_ASSERT_EQUAL(s_cmp("ab", 7, "abc", 7), -1);
}

static void test_equal_names_are_the_same_checkpoint(void)
{
	CU_ASSERT_EQUAL(rr_checkpoint_compare("best", 1000, "best", 1000), 0);
	/* Same name with two different times is still one checkpoint (seen twice). */
	CU_ASSERT_EQUAL(rr_checkpoint_compare("best", 1000, "best", 5000), 0);
	CU_ASSERT_EQUAL(rr_checkpoint_compare("step-7", 1, "step-7", 2), 0);
	CU_ASSERT_EQUAL(rr_checkpoint_compare("step-0", 0, "step-0", 0), 0);
}

struct s_ckpt {
	const char *name;
	int64_t ms;
};

static int s_qsort_cmp(const void *a, const void *b)
{
	const struct s_ckpt *x = a, *y = b;
	return rr_checkpoint_compare(x->name, x->ms, y->name, y->ms);
}

static void test_sorting_a_list_of_steps_puts_the_greatest_last(void)
{
	struct s_ckpt list[] = {
		{ "step-10", 100 }, { "step-2", 300 }, { "step-100", 50 },
		{ "step-1", 400 },  { "step-0", 500 }, { "step-11", 90 },
	};
	static const char *const want[] = { "step-0", "step-1", "step-2",
					    "step-10", "step-11", "step-100" };

	qsort(list, 6, sizeof(list[0]), s_qsort_cmp);
	for (int i = 0; i < 6; i++)
		CU_ASSERT_STRING_EQUAL(list[i].name, want[i]);
}

static void test_compare_is_antisymmetric(void)
{
	static const struct s_ckpt c[] = {
		{ "step-1", 5 }, { "step-2", 5 }, { "step-2.b", 5 }, { "best", 5 },
		{ "best2", 9 },  { "step-3", 1 }, { "x", 0 },        { "step-99999999999999999999", 5 },
	};
	const size_t n = sizeof(c) / sizeof(c[0]);

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			CU_ASSERT_EQUAL(s_cmp(c[i].name, c[i].ms, c[j].name, c[j].ms),
					-s_cmp(c[j].name, c[j].ms, c[i].name, c[i].ms));
}

static void test_later_commit_follows_a_far_future_name_within_a_run(void)
{
	/* A stray far-future name must not make later commits look old. */
	CU_ASSERT_EQUAL(rr_checkpoint_later("step-200", 5000, "step-9999999999", 4000), 1);
	CU_ASSERT_EQUAL(rr_checkpoint_later("step-9999999999", 4000, "step-200", 5000), 1);
	/* Older by name and by commit time: not later. */
	CU_ASSERT_EQUAL(rr_checkpoint_later("step-100", 3000, "step-200", 5000), 0);
	/* Newer by name though committed earlier (a rescan of an older directory). */
	CU_ASSERT_EQUAL(rr_checkpoint_later("step-300", 3000, "step-200", 5000), 1);
	/* A step-numbered name is one checkpoint: committed again, it is not later. */
	CU_ASSERT_EQUAL(rr_checkpoint_later("step-200", 9000, "step-200", 5000), 0);
	/* A name without one (last.ckpt, a ckpt.pt replaced) committed again later is. */
	CU_ASSERT_EQUAL(rr_checkpoint_later("ckpt.pt", 9000, "ckpt.pt", 5000), 1);
	CU_ASSERT_EQUAL(rr_checkpoint_later("ckpt.pt", 5000, "ckpt.pt", 5000), 0);
	CU_ASSERT_EQUAL(rr_checkpoint_later("ckpt.pt", 4000, "ckpt.pt", 5000), 0);
	/* Nothing yet: anything is later. */
	CU_ASSERT_EQUAL(rr_checkpoint_later("step-1", 0, "", 0), 1);
}

static void test_framework_names_give_their_step_numbers(void)
{
	uint64_t n = 0;

	/* HF Trainer, DeepSpeed, Lightning (docs/trainer-contract.md, "The trainer contract",
	 * "Order") */
	CU_ASSERT(rr_checkpoint_step("checkpoint-1200", &n) == 1 && n == 1200);
	CU_ASSERT(rr_checkpoint_step("global_step1200", &n) == 1 && n == 1200);
	CU_ASSERT(rr_checkpoint_step("epoch=3-step=1200.ckpt", &n) == 1 && n == 1200);
	CU_ASSERT(rr_checkpoint_step("epoch=3-step=1200-v1.ckpt", &n) == 1 && n == 1200);
	/* the last key in the name counts */
	CU_ASSERT(rr_checkpoint_step("step-5-checkpoint-7", &n) == 1 && n == 7);
	CU_ASSERT(rr_checkpoint_step("run_global_step42", &n) == 1 && n == 42);
	/* accelerate's automatic naming, Megatron, step_N */
	CU_ASSERT(rr_checkpoint_step("checkpoint_3", &n) == 1 && n == 3);
	CU_ASSERT(rr_checkpoint_step("iter_0000300", &n) == 1 && n == 300);
	CU_ASSERT(rr_checkpoint_step("step_1", &n) == 1 && n == 1);
}

static void test_framework_keys_need_a_boundary_and_digits(void)
{
	static const char *const not_steps[] = {
		"mycheckpoint-3", "checkpoint-", "checkpoint_", "global_step", "xglobal_step3",
		"myiter_3", "iter_", "Iter_3",
		"epoch=3-mystep=9.ckpt", "epoch=3.ckpt", "last.ckpt", "latest", "Checkpoint-3",
	};
	uint64_t n = 777;

	for (size_t i = 0; i < sizeof(not_steps) / sizeof(not_steps[0]); i++)
		CU_ASSERT_EQUAL(rr_checkpoint_step(not_steps[i], &n), 0);
	CU_ASSERT_EQUAL(n, 777);
}

static void test_framework_names_order_by_step_not_text(void)
{
	CU_ASSERT_EQUAL(s_cmp("checkpoint-500", 2000, "checkpoint-1000", 1000), -1);
	CU_ASSERT_EQUAL(s_cmp("global_step9", 2000, "global_step10", 1000), -1);
	CU_ASSERT_EQUAL(s_cmp("epoch=9-step=90.ckpt", 2000, "epoch=10-step=100.ckpt", 1000), -1);
	CU_ASSERT_EQUAL(s_cmp("epoch=10-step=100.ckpt", 1, "last.ckpt", 2), 1);
}

static CU_TestInfo s_tests[] = {
	{ "test_framework_names_give_their_step_numbers",
	  test_framework_names_give_their_step_numbers },
	{ "test_framework_keys_need_a_boundary_and_digits",
	  test_framework_keys_need_a_boundary_and_digits },
	{ "test_framework_names_order_by_step_not_text",
	  test_framework_names_order_by_step_not_text },
	{ "test_later_commit_follows_a_far_future_name_within_a_run",
	  test_later_commit_follows_a_far_future_name_within_a_run },
	{ "test_step_is_parsed_from_step_names", test_step_is_parsed_from_step_names },
	{ "test_step_may_be_followed_by_a_suffix", test_step_may_be_followed_by_a_suffix },
	{ "test_names_that_are_not_steps_are_recognised",
	  test_names_that_are_not_steps_are_recognised },
	{ "test_step_numbers_of_up_to_19_digits_are_steps_and_longer_are_not",
	  test_step_numbers_of_up_to_19_digits_are_steps_and_longer_are_not },
	{ "test_steps_compare_numerically_not_lexically",
	  test_steps_compare_numerically_not_lexically },
	{ "test_same_step_with_different_suffixes_compares_by_time_then_name",
	  test_same_step_with_different_suffixes_compares_by_time_then_name },
	{ "test_step_suffix_does_not_change_the_number_order",
	  test_step_suffix_does_not_change_the_number_order },
	{ "test_non_step_names_compare_by_commit_time", test_non_step_names_compare_by_commit_time },
	{ "test_step_name_is_newer_than_any_other_name",
	  test_step_name_is_newer_than_any_other_name },
	{ "test_order_is_transitive_when_names_are_mixed",
	  test_order_is_transitive_when_names_are_mixed },
	{ "test_commit_time_ties_are_broken_by_name", test_commit_time_ties_are_broken_by_name },
	{ "test_equal_names_are_the_same_checkpoint", test_equal_names_are_the_same_checkpoint },
	{ "test_sorting_a_list_of_steps_puts_the_greatest_last",
	  test_sorting_a_list_of_steps_puts_the_greatest_last },
	{ "test_compare_is_antisymmetric", test_compare_is_antisymmetric },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("ckpt_order", s_tests)
