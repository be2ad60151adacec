/* CUnit suite "log": rr_log_same_gist, which tells a retry loop whether a failure is the
 * one it has already reported (cloud/watch.c logs once per change of state). */
#include "rr/log.h"

#include "cunit_main.h"

static void test_same_gist_ignores_numbers_only(void)
{
	/* curl's message for the same refused connection, one attempt after another */
	CU_ASSERT_TRUE(rr_log_same_gist(
		"Failed to connect to 127.0.0.1 port 33557 after 0 ms: Couldn't connect to server",
		"Failed to connect to 127.0.0.1 port 33557 after 2 ms: Couldn't connect to server"));
	CU_ASSERT_TRUE(rr_log_same_gist("HTTP 503 after 10 ms", "HTTP 503 after 1500 ms"));
	CU_ASSERT_TRUE(rr_log_same_gist("", ""));
	CU_ASSERT_TRUE(rr_log_same_gist("no digits", "no digits"));
}

static void test_same_gist_sees_a_change_of_state(void)
{
	CU_ASSERT_FALSE(rr_log_same_gist("Recv failure: Connection reset by peer",
					 "Failed to connect to 127.0.0.1 port 1 after 0 ms"));
	CU_ASSERT_FALSE(rr_log_same_gist("HTTP 503", "HTTP 503 Slow Down"));
	CU_ASSERT_FALSE(rr_log_same_gist("HTTP 503 x", "HTTP 503"));
	CU_ASSERT_FALSE(rr_log_same_gist("HTTP 503", ""));
	CU_ASSERT_FALSE(rr_log_same_gist("timeout after 5 s", "timeout after 5 ms"));
}

static CU_TestInfo s_tests[] = {
	{ "same_gist_ignores_numbers_only", test_same_gist_ignores_numbers_only },
	{ "same_gist_sees_a_change_of_state", test_same_gist_sees_a_change_of_state },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("log", s_tests)
