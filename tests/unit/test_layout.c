/* CUnit suite "layout": store keys under "<run-id>/" (README, "What is stored") and their
 * parsers, which
 * must accept exactly the shapes the writers make and nothing near them. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rr/error.h"
#include "rr/layout.h"

#include "cunit_main.h"

#define S_SHA "ab54a98ceb1f0ad2be0d6a16b6c7b3d5c1c2e3f40123456789abcdef01234567"
#define S_SHA2 "0054a98ceb1f0ad2be0d6a16b6c7b3d5c1c2e3f40123456789abcdef01234567"

static void test_chunk_key_is_run_chunks_first_two_hex_then_sha(void)
{
	char key[RR_KEY_MAX];

	CU_ASSERT_EQUAL(rr_key_chunk(key, "run", S_SHA), 0);
	CU_ASSERT_STRING_EQUAL(key, "run/chunks/ab/" S_SHA);
	CU_ASSERT_EQUAL(rr_key_chunk(key, "exp-7", S_SHA2), 0);
	CU_ASSERT_STRING_EQUAL(key, "exp-7/chunks/00/" S_SHA2);
}

static void test_manifest_latest_and_prefix_keys_have_their_exact_shapes(void)
{
	char key[RR_KEY_MAX];

	CU_ASSERT_EQUAL(rr_key_manifest(key, "run", "step-1200"), 0);
	CU_ASSERT_STRING_EQUAL(key, "run/checkpoints/step-1200/manifest.json");
	CU_ASSERT_EQUAL(rr_key_latest(key, "run"), 0);
	CU_ASSERT_STRING_EQUAL(key, "run/LATEST");
	CU_ASSERT_EQUAL(rr_key_checkpoints_prefix(key, "run"), 0);
	CU_ASSERT_STRING_EQUAL(key, "run/checkpoints/");
	CU_ASSERT_EQUAL(rr_key_chunks_prefix(key, "run"), 0);
	CU_ASSERT_STRING_EQUAL(key, "run/chunks/");
}

static void test_event_key_has_13_digit_zero_padded_milliseconds(void)
{
	char key[RR_KEY_MAX];

	/* 13 digits cover every millisecond until the year 2286, so keys list in time order. */
	CU_ASSERT_EQUAL(rr_key_event(key, "run", 1700000000000LL, "notice"), 0);
	CU_ASSERT_STRING_EQUAL(key, "run/events/1700000000000-notice.json");
	CU_ASSERT_EQUAL(rr_key_event(key, "run", 999999999999LL, "restore"), 0);
	CU_ASSERT_STRING_EQUAL(key, "run/events/0999999999999-restore.json");
	CU_ASSERT_EQUAL(rr_key_event(key, "run", 42, "checkpoint"), 0);
	CU_ASSERT_STRING_EQUAL(key, "run/events/0000000000042-checkpoint.json");
	CU_ASSERT_EQUAL(rr_key_event(key, "run", 0, "restart"), 0);
	CU_ASSERT_STRING_EQUAL(key, "run/events/0000000000000-restart.json");
}

static void test_event_keys_sort_in_time_order(void)
{
	char a[RR_KEY_MAX], b[RR_KEY_MAX], c[RR_KEY_MAX];

	CU_ASSERT_EQUAL(rr_key_event(a, "run", 999999999999LL, "notice"), 0);
	CU_ASSERT_EQUAL(rr_key_event(b, "run", 1000000000000LL, "notice"), 0);
	CU_ASSERT_EQUAL(rr_key_event(c, "run", 1700000000000LL, "checkpoint"), 0);
	CU_ASSERT(strcmp(a, b) < 0);
	CU_ASSERT(strcmp(b, c) < 0);
}

static void test_keys_that_would_not_fit_are_refused(void)
{
	char big[RR_KEY_MAX + 16];
	char key[RR_KEY_MAX];

	memset(big, 'r', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CU_ASSERT_EQUAL(rr_key_chunk(key, big, S_SHA), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_key_manifest(key, big, "step-1"), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_key_manifest(key, "run", big), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_key_latest(key, big), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_key_event(key, big, 1, "notice"), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_key_event(key, "run", 1, big), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_key_checkpoints_prefix(key, big), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_key_chunks_prefix(key, big), RR_EINVAL);
}

static void test_key_of_exactly_the_maximum_length_fits_and_one_more_does_not(void)
{
	/* "<run>/LATEST" is strlen(run) + 7 bytes; RR_KEY_MAX includes the NUL. */
	char run[RR_KEY_MAX];
	char key[RR_KEY_MAX];
	size_t n = RR_KEY_MAX - 1 - 7;

	memset(run, 'r', n);
	run[n] = '\0';
	CU_ASSERT_EQUAL(rr_key_latest(key, run), 0);
	CU_ASSERT_EQUAL(strlen(key), RR_KEY_MAX - 1);
	run[n] = 'r';
	run[n + 1] = '\0';
	CU_ASSERT_EQUAL(rr_key_latest(key, run), RR_EINVAL);
}

static void test_manifest_key_parses_back_to_its_checkpoint_name(void)
{
	char key[RR_KEY_MAX], name[256];

	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, "run", "step-1200.final"), 0);
	CU_ASSERT_EQUAL(rr_key_parse_manifest(key, "run", name, sizeof(name)), 1);
	CU_ASSERT_STRING_EQUAL(name, "step-1200.final");
	CU_ASSERT_EQUAL(rr_key_parse_manifest("r/checkpoints/a/manifest.json", "r", name,
					      sizeof(name)),
			1);
	CU_ASSERT_STRING_EQUAL(name, "a");
}

static void test_manifest_parse_refuses_near_misses(void)
{
	static const char *const bad[] = {
		"other/checkpoints/step-1/manifest.json",   /* another run */
		"run2/checkpoints/step-1/manifest.json",    /* a run whose id starts with ours */
		"ru/checkpoints/step-1/manifest.json",
		"run/checkpoints/step-1",                   /* no manifest.json */
		"run/checkpoints/step-1/",
		"run/checkpoints/step-1/manifest.jso",
		"run/checkpoints/step-1/manifest.json.tmp",
		"run/checkpoints/step-1/Manifest.json",
		"run/checkpoints/step-1/x/manifest.json",   /* extra path part */
		"run/checkpoints/step-1/manifest.json/manifest.json",
		"run/checkpoints//manifest.json",           /* empty name */
		"run/checkpoints/manifest.json",
		"run/checkpoint/step-1/manifest.json",
		"run/chunks/step-1/manifest.json",
		"/run/checkpoints/step-1/manifest.json",
		"run//checkpoints/step-1/manifest.json",
		"run/LATEST",
		"run",
		"",
	};
	char name[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		strcpy(name, "untouched");
		CU_ASSERT_EQUAL(rr_key_parse_manifest(bad[i], "run", name, sizeof(name)), 0);
		CU_ASSERT_STRING_EQUAL(name, "untouched");
	}
}

static void test_manifest_parse_refuses_a_name_longer_than_the_room_for_it(void)
{
	char name[8];

	CU_ASSERT_EQUAL(rr_key_parse_manifest("run/checkpoints/1234567/manifest.json", "run", name,
					      sizeof(name)),
			1);
	CU_ASSERT_STRING_EQUAL(name, "1234567");
	CU_ASSERT_EQUAL(rr_key_parse_manifest("run/checkpoints/12345678/manifest.json", "run",
					      name, sizeof(name)),
			0);
}

static void test_chunk_key_parses_back_to_its_sha(void)
{
	char key[RR_KEY_MAX];
	const char *sha;

	CU_ASSERT_EQUAL_FATAL(rr_key_chunk(key, "run", S_SHA), 0);
	sha = rr_key_parse_chunk(key, "run");
	CU_ASSERT_PTR_NOT_NULL_FATAL(sha);
	CU_ASSERT_STRING_EQUAL(sha, S_SHA);
	CU_ASSERT_PTR_EQUAL(sha, key + strlen("run/chunks/ab/")); /* points into key */
}

static void test_chunk_parse_refuses_near_misses(void)
{
	static const char *const bad[] = {
		"other/chunks/ab/" S_SHA,                       /* another run */
		"run2/chunks/ab/" S_SHA,
		"run/chunks/ac/" S_SHA,                         /* wrong 2-char dir */
		"run/chunks/AB/" S_SHA,
		"run/chunks/a/" S_SHA,
		"run/chunks/abc/" S_SHA,
		"run/chunks/ab/" "AB54a98ceb1f0ad2be0d6a16b6c7b3d5c1c2e3f40123456789abcdef01234567",
		"run/chunks/ab/" "ab54a98ceb1f0ad2be0d6a16b6c7b3d5c1c2e3f40123456789ABCDEF01234567",
		"run/chunks/ab/" "ab54a98ceb1f0ad2be0d6a16b6c7b3d5c1c2e3f40123456789abcdef0123456",
		"run/chunks/ab/" S_SHA "7",                     /* 65 hex */
		"run/chunks/ab/" S_SHA "/x",                    /* extra path part */
		"run/chunks/ab/" S_SHA ".tmp",
		"run/chunks/ab/x/" S_SHA,
		"run/chunks/" S_SHA,                            /* no dir */
		"run/chunks/ab" S_SHA,
		"run/chunk/ab/" S_SHA,
		"run/checkpoints/ab/" S_SHA,
		"run/chunks/ab/" "ab54a98ceg1f0ad2be0d6a16b6c7b3d5c1c2e3f40123456789abcdef01234567",
		"run/chunks/ab/",
		"run/chunks/",
		"",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_PTR_NULL(rr_key_parse_chunk(bad[i], "run"));
}

static void test_parsers_refuse_very_long_keys(void)
{
	static char key[8192];
	char name[256];

	memcpy(key, "run/checkpoints/", 16);
	memset(key + 16, 'n', sizeof(key) - 16 - 1 - 14);
	strcpy(key + sizeof(key) - 1 - 14, "/manifest.json");
	CU_ASSERT_EQUAL(strlen(key), sizeof(key) - 1);
	CU_ASSERT_EQUAL(rr_key_parse_manifest(key, "run", name, sizeof(name)), 0);

	memcpy(key, "run/chunks/ab/", 14);
	memset(key + 14, 'a', sizeof(key) - 14 - 1);
	key[sizeof(key) - 1] = '\0';
	CU_ASSERT_PTR_NULL(rr_key_parse_chunk(key, "run"));
}

static void test_mark_keys_parse_back_to_their_checkpoint_and_kind(void)
{
	char key[RR_KEY_MAX], name[256], token[64];

	CU_ASSERT_EQUAL_FATAL(rr_key_mark(key, "run", "step-12", "suspect"), 0);
	CU_ASSERT_STRING_EQUAL(key, "run/checkpoints/step-12/suspect.json");
	CU_ASSERT_EQUAL(rr_key_parse_mark(key, "run", name, sizeof(name), token, sizeof(token)),
			RR_KEY_SUSPECT);
	CU_ASSERT_STRING_EQUAL(name, "step-12");
	CU_ASSERT_EQUAL_FATAL(rr_key_mark(key, "run", "step-12", "proven"), 0);
	CU_ASSERT_EQUAL(rr_key_parse_mark(key, "run", name, sizeof(name), token, sizeof(token)),
			RR_KEY_PROVEN);
	CU_ASSERT_EQUAL_FATAL(rr_key_reader(key, "run", "step-12", "host-7-99"), 0);
	CU_ASSERT_STRING_EQUAL(key, "run/checkpoints/step-12/readers/host-7-99.json");
	CU_ASSERT_EQUAL(rr_key_parse_mark(key, "run", name, sizeof(name), token, sizeof(token)),
			RR_KEY_READER);
	CU_ASSERT_STRING_EQUAL(name, "step-12");
	CU_ASSERT_STRING_EQUAL(token, "host-7-99");
}

static void test_mark_parse_refuses_near_misses(void)
{
	static const char *const bad[] = {
		"run/checkpoints/a/manifest.json", "run/checkpoints/a/parts/0.json",
		"run/checkpoints/a/suspect.json.tmp", "run/checkpoints/a/suspect",
		"run/checkpoints//suspect.json", "other/checkpoints/a/suspect.json",
		"run/checkpoints/a/readers/.json", "run/checkpoints/a/readers/x/y.json",
		"run/checkpoints/a/readers/x", /* a token longer than the room for it: */
		("run/checkpoints/a/readers/"
		 "0123456789012345678901234567890123456789012345678901234567890123.json"),
		"run/chunks/ab/suspect.json", "",
	};
	char name[256], token[64];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(rr_key_parse_mark(bad[i], "run", name, sizeof(name), token,
						  sizeof(token)),
				RR_KEY_NOT_MARK);
}

static CU_TestInfo s_tests[] = {
	{ "test_mark_keys_parse_back_to_their_checkpoint_and_kind",
	  test_mark_keys_parse_back_to_their_checkpoint_and_kind },
	{ "test_mark_parse_refuses_near_misses", test_mark_parse_refuses_near_misses },
	{ "test_chunk_key_is_run_chunks_first_two_hex_then_sha",
	  test_chunk_key_is_run_chunks_first_two_hex_then_sha },
	{ "test_manifest_latest_and_prefix_keys_have_their_exact_shapes",
	  test_manifest_latest_and_prefix_keys_have_their_exact_shapes },
	{ "test_event_key_has_13_digit_zero_padded_milliseconds",
	  test_event_key_has_13_digit_zero_padded_milliseconds },
	{ "test_event_keys_sort_in_time_order", test_event_keys_sort_in_time_order },
	{ "test_keys_that_would_not_fit_are_refused", test_keys_that_would_not_fit_are_refused },
	{ "test_key_of_exactly_the_maximum_length_fits_and_one_more_does_not",
	  test_key_of_exactly_the_maximum_length_fits_and_one_more_does_not },
	{ "test_manifest_key_parses_back_to_its_checkpoint_name",
	  test_manifest_key_parses_back_to_its_checkpoint_name },
	{ "test_manifest_parse_refuses_near_misses", test_manifest_parse_refuses_near_misses },
	{ "test_manifest_parse_refuses_a_name_longer_than_the_room_for_it",
	  test_manifest_parse_refuses_a_name_longer_than_the_room_for_it },
	{ "test_chunk_key_parses_back_to_its_sha", test_chunk_key_parses_back_to_its_sha },
	{ "test_chunk_parse_refuses_near_misses", test_chunk_parse_refuses_near_misses },
	{ "test_parsers_refuse_very_long_keys", test_parsers_refuse_very_long_keys },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("layout", s_tests)
