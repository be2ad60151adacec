/* Shared main() for the CUnit suites: one suite per module, each test a behaviour.
 * Include once per test file, after defining the tests:
 *   static CU_TestInfo s_tests[] = { {"name", fn}, CU_TEST_INFO_NULL };
 *   RR_CUNIT_MAIN("store_file", s_tests)
 */
#ifndef RR_CUNIT_MAIN_H
#define RR_CUNIT_MAIN_H

#include <CUnit/Basic.h>

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
