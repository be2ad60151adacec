/* CUnit suite "loopback": which URL hosts count as this machine, where a credential may
 * travel over plain http. */
#include "cunit_main.h"
#include "rr/loopback.h"

static void test_loopback_accepts_127_slash_8_ipv6_and_localhost(void)
{
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://127.0.0.1:4443"), 1);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://127.9.8.7/x"), 1);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("127.0.0.1:9000"), 1);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://[::1]:8080/"), 1);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://localhost"), 1);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://LOCALHOST.:80"), 1);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://gcs.localhost:80"), 1);
}

static void test_loopback_refuses_other_hosts_and_lookalikes(void)
{
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://10.255.255.1:9"), 0);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://169.254.169.254"), 0);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://storage.googleapis.com"), 0);
	/* Names that merely start or end like loopback ones. */
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://127.0.0.1.evil.example"), 0);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://localhost.evil.example"), 0);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://evillocalhost"), 0);
	/* The host is what follows the userinfo. */
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://127.0.0.1@10.0.0.1/"), 0);
	/* Short and odd IPv4 spellings are not taken (their meaning varies by parser). */
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://127.1"), 0);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://[::ffff:10.0.0.1]"), 0);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://[::1"), 0);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback("http://"), 0);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback(""), 0);
	CU_ASSERT_EQUAL(rr_url_host_is_loopback(NULL), 0);
}

static CU_TestInfo s_tests[] = {
	{ "loopback_accepts_127_slash_8_ipv6_and_localhost",
	  test_loopback_accepts_127_slash_8_ipv6_and_localhost },
	{ "loopback_refuses_other_hosts_and_lookalikes",
	  test_loopback_refuses_other_hosts_and_lookalikes },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("loopback", s_tests)
