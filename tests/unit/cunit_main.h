/* Shared main() for the CUnit suites: one suite per module, each test a behaviour.
 * Include once per test file, after defining the tests:
 *   static CU_TestInfo s_tests[] = { {"name", fn}, CU_TEST_INFO_NULL };
 *   RR_CUNIT_MAIN("store_file", s_tests)
 */
#ifndef RR_CUNIT_MAIN_H
#define RR_CUNIT_MAIN_H

#include <CUnit/Basic.h>
#include <sys/wait.h>
#include <unistd.h>

/* Asserts that stmt returns (does not crash, abort or hang the caller's process): it runs
 * in a forked child, which then exits 0. For "accepts NULL" and the like, whose only
 * promise is to return. */
#define RR_ASSERT_RETURNS(stmt)                                                          \
	do {                                                                              \
		pid_t rr_pid_ = fork();                                                   \
		int rr_st_ = -1;                                                          \
		if (rr_pid_ == 0) {                                                       \
			stmt;                                                             \
			_exit(0);                                                         \
		}                                                                         \
		CU_ASSERT_FATAL(rr_pid_ > 0);                                             \
		CU_ASSERT(waitpid(rr_pid_, &rr_st_, 0) == rr_pid_ && WIFEXITED(rr_st_) && \
			  WEXITSTATUS(rr_st_) == 0);                                      \
	} while (0)

#define RR_CUNIT_MAIN(suite_name, tests)                                                  \
	int main(void)                                                                    \
	{                                                                                 \
		CU_SuiteInfo suites[] = { { suite_name, NULL, NULL, NULL, NULL, tests },  \
					  CU_SUITE_INFO_NULL };                           \
		if (CU_initialize_registry() != CUE_SUCCESS)                              \
			return 2;                                                         \
		if (CU_register_suites(suites) != CUE_SUCCESS)                            \
			return 2;                                                         \
		CU_basic_set_mode(CU_BRM_VERBOSE);                                        \
		CU_basic_run_tests();                                                     \
		unsigned failed = CU_get_number_of_failures() +                           \
				  CU_get_number_of_tests_failed();                        \
		unsigned run = CU_get_number_of_tests_run();                              \
		CU_cleanup_registry();                                                    \
		return (failed || run == 0) ? 1 : 0;                                      \
	}

#endif
