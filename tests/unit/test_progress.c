/* CUnit suite "progress": byte counts for humans, and a progress object that callers may
 * leave NULL. When lines are printed depends on the monotonic clock, which is not
 * injectable here, so these tests check only what holds at any speed: exact formatting,
 * NULL safety, and that concurrent adds are safe (ASan/UBSan builds). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdint.h>
#include <string.h>

#include "rr/log.h"
#include "rr/progress.h"

#include "cunit_main.h"

static void s_fmt_is(uint64_t bytes, const char *want)
{
	char out[16];
	const char *got;

	memset(out, 'x', sizeof(out));
	got = rr_format_bytes(bytes, out);
	CU_ASSERT_PTR_EQUAL(got, out);
	CU_ASSERT_STRING_EQUAL(out, want);
}

static void test_format_bytes_below_1000_is_whole_bytes(void)
{
	s_fmt_is(0, "0 B");
	s_fmt_is(1, "1 B");
	s_fmt_is(999, "999 B");
}

static void test_format_bytes_uses_decimal_units_with_one_decimal(void)
{
	s_fmt_is(1000, "1.0 kB");
	s_fmt_is(1024, "1.0 kB");
	s_fmt_is(1500, "1.5 kB");
	s_fmt_is(1500000, "1.5 MB");
	s_fmt_is(8388608, "8.4 MB"); /* 8 MiB, the segment size */
	s_fmt_is(3000000000ULL, "3.0 GB");
	s_fmt_is(1000000000000ULL, "1.0 TB");
	s_fmt_is(2400000000000ULL, "2.4 TB");
}

static void test_format_bytes_that_round_to_1000_move_to_the_next_unit(void)
{
	/* 999999 B is 999.999 kB, which one decimal would show as "1000.0 kB". */
	s_fmt_is(999949, "999.9 kB");
	s_fmt_is(999950, "1.0 MB");
	s_fmt_is(999999, "1.0 MB");
	s_fmt_is(999999999ULL, "1.0 GB");
	s_fmt_is(999999999999ULL, "1.0 TB");
}

static void test_format_bytes_stops_at_terabytes_and_fits_16_bytes(void)
{
	s_fmt_is(1000000000000000ULL, "1000.0 TB");
	s_fmt_is(UINT64_MAX, "18446744.1 TB");
}

static void test_null_progress_is_accepted_everywhere(void)
{
	RR_ASSERT_RETURNS(rr_progress_add(NULL, 123));
	RR_ASSERT_RETURNS(rr_progress_destroy(NULL));
}

static void test_new_add_destroy_works_for_any_name_and_total(void)
{
	char long_name[1000];
	struct rr_progress *p;

	p = rr_progress_new("persist step-200", 1000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	rr_progress_add(p, 400);
	rr_progress_add(p, 600);
	rr_progress_add(p, 5); /* more than the total is not an error */
	rr_progress_destroy(p);

	p = rr_progress_new("restore nothing", 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	rr_progress_add(p, 0);
	rr_progress_destroy(p);

	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	p = rr_progress_new(long_name, UINT64_MAX); /* the name is cut to fit, not overrun */
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	rr_progress_add(p, UINT64_MAX);
	rr_progress_destroy(p);
}

static void *s_adder(void *arg)
{
	struct rr_progress *p = arg;
	for (int i = 0; i < 10000; i++)
		rr_progress_add(p, 1);
	return NULL;
}

/* Off a terminal, a long operation logs whole lines with bytes, percent, MB/s and time left. */
static void test_long_operation_logs_bytes_rate_and_time_left(void)
{
	char path[] = "/tmp/rr-progress-XXXXXX";
	char text[4096] = "";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	struct rr_progress *p;
	ssize_t n;

	CU_ASSERT_FATAL(fd >= 0 && saved >= 0);
	dup2(fd, STDERR_FILENO); /* a file: not a terminal */
	rr_log_init(0, RR_LOG_INFO);
	rr_progress_set_intervals(0, 0);
	p = rr_progress_new("persist step-7", 2000000);
	rr_progress_add(p, 1000000);
	rr_progress_add(p, 1000000);
	rr_progress_destroy(p);
	rr_progress_set_intervals(2000, 10000);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	unlink(path);
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "resume-run: persist step-7: 1.0 MB of 2.0 MB (50%), "));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "resume-run: persist step-7: 2.0 MB of 2.0 MB (100%), "));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, " MB/s, "));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, " s left\n"));
	CU_ASSERT_PTR_NULL(strchr(text, '\r')); /* no live-line control characters in a file */
}

/* Quick operations say nothing. */
static void test_short_operation_is_quiet(void)
{
	char path[] = "/tmp/rr-progress-XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	struct stat st;

	CU_ASSERT_FATAL(fd >= 0 && saved >= 0);
	dup2(fd, STDERR_FILENO);
	rr_log_init(0, RR_LOG_INFO);
	struct rr_progress *p = rr_progress_new("restore step-1", 100);
	rr_progress_add(p, 100);
	rr_progress_destroy(p);
	dup2(saved, STDERR_FILENO);
	close(saved);
	CU_ASSERT_EQUAL(fstat(fd, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 0);
	close(fd);
	unlink(path);
}

static void test_concurrent_adds_are_safe(void)
{
	struct rr_progress *p = rr_progress_new("persist concurrent", 80000);
	pthread_t t[8];

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_FATAL(pthread_create(&t[i], NULL, s_adder, p) == 0);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	rr_progress_destroy(p);
}

static void test_format_seconds_each_range(void)
{
	static const struct { double s; const char *want; } cases[] = {
		{ 0, "0 ms" }, { -3, "0 ms" }, { 0.2034, "203 ms" }, { 1, "1.00 s" },
		{ 2.6966, "2.70 s" }, { 20, "20.0 s" }, { 59.94, "59.9 s" }, { 60, "1 min 00 s" },
		{ 7001.4, "1 h 56 min" }, { 86400, "1 d 00 h" }, { 90061, "1 d 01 h" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[24];
		CU_ASSERT_STRING_EQUAL(rr_format_seconds(cases[i].s, out), cases[i].want);
	}
}

static CU_TestInfo s_tests[] = {
	{ "format_seconds_each_range", test_format_seconds_each_range },
	{ "test_format_bytes_below_1000_is_whole_bytes", test_format_bytes_below_1000_is_whole_bytes },
	{ "test_format_bytes_uses_decimal_units_with_one_decimal",
	  test_format_bytes_uses_decimal_units_with_one_decimal },
	{ "test_format_bytes_that_round_to_1000_move_to_the_next_unit",
	  test_format_bytes_that_round_to_1000_move_to_the_next_unit },
	{ "test_format_bytes_stops_at_terabytes_and_fits_16_bytes",
	  test_format_bytes_stops_at_terabytes_and_fits_16_bytes },
	{ "test_null_progress_is_accepted_everywhere", test_null_progress_is_accepted_everywhere },
	{ "test_new_add_destroy_works_for_any_name_and_total",
	  test_new_add_destroy_works_for_any_name_and_total },
	{ "test_concurrent_adds_are_safe", test_concurrent_adds_are_safe },
	{ "test_long_operation_logs_bytes_rate_and_time_left",
	  test_long_operation_logs_bytes_rate_and_time_left },
	{ "test_short_operation_is_quiet", test_short_operation_is_quiet },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("progress", s_tests)
