/* CUnit suite "pool": one function over task indices on a few threads. Counts are kept in
 * atomics per task; nothing depends on timing or scheduling: multi-threaded tests assert
 * only what holds for every interleaving, single-threaded ones assert exact sequences. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/pool.h"

#include "cunit_main.h"

#define S_TASKS 1000

struct s_count {
	atomic_int runs[S_TASKS];
	atomic_int total;
	atomic_int bad_worker;    /* a worker index >= threads was seen */
	atomic_int order_broken;  /* single thread: a task ran out of index order */
	atomic_long last;         /* single thread: the last task run */
	unsigned threads;
	size_t fail_at;           /* this task returns fail_rc (S_TASKS: none does) */
	int fail_rc;
	size_t fail_at2;          /* a second failing task, or S_TASKS */
	int fail_rc2;
	size_t cancel_at;         /* this task sets *cancel, or S_TASKS */
	atomic_int *cancel;
};

static void s_count_init(struct s_count *c, unsigned threads)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < S_TASKS; i++)
		atomic_init(&c->runs[i], 0);
	atomic_init(&c->total, 0);
	atomic_init(&c->bad_worker, 0);
	atomic_init(&c->order_broken, 0);
	atomic_init(&c->last, -1);
	c->threads = threads;
	c->fail_at = c->fail_at2 = c->cancel_at = S_TASKS;
}

static int s_task(size_t task, unsigned worker, void *ud)
{
	struct s_count *c = ud;

	if (task >= S_TASKS)
		return RR_EINVAL;
	atomic_fetch_add(&c->runs[task], 1);
	atomic_fetch_add(&c->total, 1);
	if (worker >= c->threads)
		atomic_store(&c->bad_worker, 1);
	if (c->threads == 1) {
		if (atomic_load(&c->last) != (long)task - 1)
			atomic_store(&c->order_broken, 1);
		atomic_store(&c->last, (long)task);
	}
	if (task == c->cancel_at)
		*c->cancel = 1;
	if (task == c->fail_at)
		return c->fail_rc;
	if (task == c->fail_at2)
		return c->fail_rc2;
	return 0;
}

static void s_assert_each_ran_once(struct s_count *c, size_t ntasks)
{
	int once = 1;
	for (size_t i = 0; i < ntasks; i++)
		once &= atomic_load(&c->runs[i]) == 1;
	CU_ASSERT(once);
	CU_ASSERT_EQUAL(atomic_load(&c->total), (int)ntasks);
	CU_ASSERT_EQUAL(atomic_load(&c->bad_worker), 0);
}

static void s_assert_none_ran_twice(struct s_count *c)
{
	int ok = 1;
	for (size_t i = 0; i < S_TASKS; i++)
		ok &= atomic_load(&c->runs[i]) <= 1;
	CU_ASSERT(ok);
}

static void s_every_task_runs_exactly_once(unsigned threads)
{
	struct s_count *c = malloc(sizeof(*c));

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	s_count_init(c, threads);
	CU_ASSERT_EQUAL(rr_pool_run(threads, S_TASKS, s_task, c, NULL), 0);
	s_assert_each_ran_once(c, S_TASKS);
	free(c);
}

static void test_every_task_runs_exactly_once_on_one_thread(void)
{
	s_every_task_runs_exactly_once(1);
}

static void test_every_task_runs_exactly_once_on_two_threads(void)
{
	s_every_task_runs_exactly_once(2);
}

static void test_every_task_runs_exactly_once_on_eight_threads(void)
{
	for (int round = 0; round < 20; round++)
		s_every_task_runs_exactly_once(8);
}

static void test_one_thread_runs_tasks_in_index_order(void)
{
	struct s_count *c = malloc(sizeof(*c));

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	s_count_init(c, 1);
	CU_ASSERT_EQUAL(rr_pool_run(1, S_TASKS, s_task, c, NULL), 0);
	CU_ASSERT_EQUAL(atomic_load(&c->order_broken), 0);
	CU_ASSERT_EQUAL(atomic_load(&c->last), S_TASKS - 1);
	free(c);
}

static void test_more_threads_than_tasks_still_runs_each_task_once(void)
{
	struct s_count *c = malloc(sizeof(*c));

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	s_count_init(c, 64);
	CU_ASSERT_EQUAL(rr_pool_run(64, 3, s_task, c, NULL), 0);
	s_assert_each_ran_once(c, 3);
	/* Worker indices stay below the number of tasks when threads are capped to it. */
	s_count_init(c, 3);
	CU_ASSERT_EQUAL(rr_pool_run(64, 3, s_task, c, NULL), 0);
	s_assert_each_ran_once(c, 3);
	free(c);
}

static void test_zero_threads_means_one(void)
{
	struct s_count *c = malloc(sizeof(*c));

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	s_count_init(c, 1);
	CU_ASSERT_EQUAL(rr_pool_run(0, 10, s_task, c, NULL), 0);
	s_assert_each_ran_once(c, 10);
	free(c);
}

static void test_zero_tasks_is_success_and_calls_nothing(void)
{
	struct s_count *c = malloc(sizeof(*c));

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	s_count_init(c, 8);
	CU_ASSERT_EQUAL(rr_pool_run(8, 0, s_task, c, NULL), 0);
	CU_ASSERT_EQUAL(rr_pool_run(1, 0, s_task, c, NULL), 0);
	CU_ASSERT_EQUAL(atomic_load(&c->total), 0);
	free(c);
}

static void test_first_task_failing_on_one_thread_stops_everything_after_it(void)
{
	struct s_count *c = malloc(sizeof(*c));

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	s_count_init(c, 1);
	c->fail_at = 0;
	c->fail_rc = RR_EIO;
	CU_ASSERT_EQUAL(rr_pool_run(1, S_TASKS, s_task, c, NULL), RR_EIO);
	CU_ASSERT_EQUAL(atomic_load(&c->total), 1);
	CU_ASSERT_EQUAL(atomic_load(&c->runs[0]), 1);
	free(c);
}

static void test_failure_in_the_middle_on_one_thread_runs_exactly_the_tasks_before_it(void)
{
	struct s_count *c = malloc(sizeof(*c));

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	s_count_init(c, 1);
	c->fail_at = 500;
	c->fail_rc = RR_ENOSPC;
	CU_ASSERT_EQUAL(rr_pool_run(1, S_TASKS, s_task, c, NULL), RR_ENOSPC);
	CU_ASSERT_EQUAL(atomic_load(&c->total), 501);
	CU_ASSERT_EQUAL(atomic_load(&c->last), 500);
	CU_ASSERT_EQUAL(atomic_load(&c->runs[501]), 0);
	free(c);
}

static void test_first_of_two_errors_is_returned_on_one_thread(void)
{
	struct s_count *c = malloc(sizeof(*c));

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	s_count_init(c, 1);
	c->fail_at = 3;
	c->fail_rc = RR_ECORRUPT;
	c->fail_at2 = 7;
	c->fail_rc2 = RR_EIO;
	CU_ASSERT_EQUAL(rr_pool_run(1, S_TASKS, s_task, c, NULL), RR_ECORRUPT);
	CU_ASSERT_EQUAL(atomic_load(&c->runs[7]), 0);
	free(c);
}

static void test_error_on_many_threads_is_returned_and_no_task_runs_twice(void)
{
	struct s_count *c = malloc(sizeof(*c));

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	for (int round = 0; round < 20; round++) {
		int rc;
		s_count_init(c, 8);
		c->fail_at = 10;
		c->fail_rc = RR_EIO;
		c->fail_at2 = 990;
		c->fail_rc2 = RR_ENOSPC;
		rc = rr_pool_run(8, S_TASKS, s_task, c, NULL);
		/* Which failure comes first depends on scheduling; one of them is returned. */
		CU_ASSERT(rc == RR_EIO || rc == RR_ENOSPC);
		CU_ASSERT_EQUAL(atomic_load(&c->bad_worker), 0);
		s_assert_none_ran_twice(c);
	}
	free(c);
}

static void test_cancel_already_set_runs_nothing_and_is_canceled(void)
{
	struct s_count *c = malloc(sizeof(*c));
	atomic_int cancel = 1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	s_count_init(c, 8);
	CU_ASSERT_EQUAL(rr_pool_run(8, S_TASKS, s_task, c, &cancel), RR_ECANCELED);
	CU_ASSERT_EQUAL(atomic_load(&c->total), 0);
	s_count_init(c, 1);
	CU_ASSERT_EQUAL(rr_pool_run(1, S_TASKS, s_task, c, &cancel), RR_ECANCELED);
	CU_ASSERT_EQUAL(atomic_load(&c->total), 0);
	free(c);
}

static void test_cancel_set_by_a_task_stops_the_rest_on_one_thread(void)
{
	struct s_count *c = malloc(sizeof(*c));
	atomic_int cancel = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	s_count_init(c, 1);
	c->cancel = &cancel;
	c->cancel_at = 41;
	CU_ASSERT_EQUAL(rr_pool_run(1, S_TASKS, s_task, c, &cancel), RR_ECANCELED);
	CU_ASSERT_EQUAL(atomic_load(&c->total), 42);
	CU_ASSERT_EQUAL(atomic_load(&c->runs[42]), 0);
	free(c);
}

static void test_cancel_set_by_a_task_on_many_threads_is_canceled(void)
{
	struct s_count *c = malloc(sizeof(*c));
	atomic_int cancel = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	s_count_init(c, 8);
	c->cancel = &cancel;
	c->cancel_at = 100;
	/* Task 100 sets the flag and returns 0. Its worker looks at the flag before taking
	 * another task, so the result is RR_ECANCELED in every interleaving. */
	CU_ASSERT_EQUAL(rr_pool_run(8, S_TASKS, s_task, c, &cancel), RR_ECANCELED);
	s_assert_none_ran_twice(c);
	free(c);
}

static void test_cancel_flag_left_clear_changes_nothing(void)
{
	struct s_count *c = malloc(sizeof(*c));
	atomic_int cancel = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	s_count_init(c, 8);
	CU_ASSERT_EQUAL(rr_pool_run(8, S_TASKS, s_task, c, &cancel), 0);
	s_assert_each_ran_once(c, S_TASKS);
	free(c);
}

static void test_default_threads_is_at_least_one(void)
{
	CU_ASSERT(rr_pool_default_threads() >= 1);
}

static CU_TestInfo s_tests[] = {
	{ "test_every_task_runs_exactly_once_on_one_thread",
	  test_every_task_runs_exactly_once_on_one_thread },
	{ "test_every_task_runs_exactly_once_on_two_threads",
	  test_every_task_runs_exactly_once_on_two_threads },
	{ "test_every_task_runs_exactly_once_on_eight_threads",
	  test_every_task_runs_exactly_once_on_eight_threads },
	{ "test_one_thread_runs_tasks_in_index_order", test_one_thread_runs_tasks_in_index_order },
	{ "test_more_threads_than_tasks_still_runs_each_task_once",
	  test_more_threads_than_tasks_still_runs_each_task_once },
	{ "test_zero_threads_means_one", test_zero_threads_means_one },
	{ "test_zero_tasks_is_success_and_calls_nothing",
	  test_zero_tasks_is_success_and_calls_nothing },
	{ "test_first_task_failing_on_one_thread_stops_everything_after_it",
	  test_first_task_failing_on_one_thread_stops_everything_after_it },
	{ "test_failure_in_the_middle_on_one_thread_runs_exactly_the_tasks_before_it",
	  test_failure_in_the_middle_on_one_thread_runs_exactly_the_tasks_before_it },
	{ "test_first_of_two_errors_is_returned_on_one_thread",
	  test_first_of_two_errors_is_returned_on_one_thread },
	{ "test_error_on_many_threads_is_returned_and_no_task_runs_twice",
	  test_error_on_many_threads_is_returned_and_no_task_runs_twice },
	{ "test_cancel_already_set_runs_nothing_and_is_canceled",
	  test_cancel_already_set_runs_nothing_and_is_canceled },
	{ "test_cancel_set_by_a_task_stops_the_rest_on_one_thread",
	  test_cancel_set_by_a_task_stops_the_rest_on_one_thread },
	{ "test_cancel_set_by_a_task_on_many_threads_is_canceled",
	  test_cancel_set_by_a_task_on_many_threads_is_canceled },
	{ "test_cancel_flag_left_clear_changes_nothing", test_cancel_flag_left_clear_changes_nothing },
	{ "test_default_threads_is_at_least_one", test_default_threads_is_at_least_one },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("pool", s_tests)
