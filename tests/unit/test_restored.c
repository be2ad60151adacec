/* CUnit suite "restored": the record of what a restore wrote for lossy chunks. It is read
 * back from a directory others can write, so its parser takes only what the writer makes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/fsutil.h"
#include "restored.h"

#include "cunit_main.h"

#define S_SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define S_SHA_B "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define S_XXH_1 "00112233445566778899aabbccddeeff"
#define S_XXH_2 "ffeeddccbbaa99887766554433221100"

static void test_restored_round_trip_and_lookup(void)
{
	struct rr_restored *r = rr_restored_new(), *back = NULL;
	struct rr_buf b;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(rr_restored_add(r, S_SHA_B, RR_ENC_FP16, -3, S_XXH_1), 0);
	CU_ASSERT_EQUAL(rr_restored_add(r, S_SHA_A, RR_ENC_BF16, 0, S_XXH_2), 0);
	CU_ASSERT_EQUAL(rr_restored_add(r, S_SHA_A, RR_ENC_BF16, 0, S_XXH_1), 0); /* replaces */
	CU_ASSERT_EQUAL(rr_restored_count(r), 2);
	rr_buf_init(&b, 1 << 20);
	CU_ASSERT_EQUAL_FATAL(rr_restored_to_text(r, &b), 0);
	CU_ASSERT_STRING_EQUAL((char *)b.data, "resume-run-restored 1\n"
			       S_SHA_B " 3 -3 " S_XXH_1 "\n"
			       S_SHA_A " 2 0 " S_XXH_1 "\n");
	CU_ASSERT_EQUAL_FATAL(rr_restored_parse((char *)b.data, b.len, &back), 0);
	CU_ASSERT_EQUAL(rr_restored_count(back), 2);
	CU_ASSERT_STRING_EQUAL(rr_restored_find(back, S_SHA_B, RR_ENC_FP16, -3), S_XXH_1);
	CU_ASSERT_STRING_EQUAL(rr_restored_find(back, S_SHA_A, RR_ENC_BF16, 0), S_XXH_1);
	/* The same chunk decoded another way is another entry. */
	CU_ASSERT_PTR_NULL(rr_restored_find(back, S_SHA_B, RR_ENC_FP16, -2));
	CU_ASSERT_PTR_NULL(rr_restored_find(back, S_SHA_B, RR_ENC_BF16, -3));
	rr_buf_free(&b);
	rr_restored_destroy(r);
	rr_restored_destroy(back);
}

static void test_restored_parse_refuses_anything_else(void)
{
	static const char *const bad[] = {
		"",
		"resume-run-restored 2\n",
		"resume-run-restored 1\n" S_SHA_A " 2 0 " S_XXH_1,          /* no newline */
		"resume-run-restored 1\n" S_SHA_A " 4 0 " S_XXH_1 "\n",     /* encoding */
		"resume-run-restored 1\n" S_SHA_A " 2 00 " S_XXH_1 "\n",    /* leading zero */
		"resume-run-restored 1\n" S_SHA_A " 2 -0 " S_XXH_1 "\n",
		"resume-run-restored 1\n" S_SHA_A " 2 1000 " S_XXH_1 "\n",  /* range */
		"resume-run-restored 1\n" S_SHA_A " 2 0  " S_XXH_1 "\n",
		"resume-run-restored 1\n" S_SHA_A " 2 0 " S_XXH_1 "0\n",
		"resume-run-restored 1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA 2 0 "
			S_XXH_1 "\n",                                       /* upper case */
		"resume-run-restored 1\n" S_SHA_A " 2 0 " S_XXH_1 "\n" S_SHA_A " 2 0 " S_XXH_1
			"\n",                                               /* duplicate */
		"resume-run-restored 1\n" S_SHA_A " 2 0 " S_XXH_1 "\n" S_SHA_B " 2 0 " S_XXH_1
			"\n",                                               /* order */
	};
	struct rr_restored *r = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL(rr_restored_parse(bad[i], strlen(bad[i]), &r), RR_ECORRUPT);
		CU_ASSERT_PTR_NULL(r);
	}
	CU_ASSERT_EQUAL(rr_restored_parse("x", RR_RESTORED_MAX_BYTES + 1, &r), RR_ETOOBIG);
}

/* Missing, malformed or not a regular file: an empty record (it only saves downloads). */
static void test_restored_load_falls_back_to_empty(void)
{
	char tmpl[] = "/tmp/rr_restored_XXXXXX", *path;
	struct rr_restored *r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmpl));
	r = rr_restored_load(tmpl);
	CU_ASSERT_PTR_NOT_NULL(r);
	CU_ASSERT_EQUAL(rr_restored_count(r), 0);
	CU_ASSERT_EQUAL(rr_restored_add(r, S_SHA_A, RR_ENC_FP16, 1, S_XXH_2), 0);
	CU_ASSERT_EQUAL(rr_restored_save(r, tmpl), 0);
	rr_restored_destroy(r);
	r = rr_restored_load(tmpl);
	CU_ASSERT_STRING_EQUAL(rr_restored_find(r, S_SHA_A, RR_ENC_FP16, 1), S_XXH_2);
	rr_restored_destroy(r);
	path = rr_path_join(tmpl, RR_RESTORED_FILE);
	CU_ASSERT_EQUAL(rr_write_file_durable(path, "garbage\n", 8, 0644), 0);
	r = rr_restored_load(tmpl);
	CU_ASSERT_EQUAL(rr_restored_count(r), 0);
	rr_restored_destroy(r);
	CU_ASSERT_EQUAL(unlink(path), 0);
	CU_ASSERT_EQUAL(mkfifo(path, 0600), 0);
	r = rr_restored_load(tmpl); /* a FIFO: refused, not waited on */
	CU_ASSERT_EQUAL(rr_restored_count(r), 0);
	rr_restored_destroy(r);
	free(path);
	CU_ASSERT_EQUAL(rr_remove_tree(tmpl), 0);
}

static CU_TestInfo s_tests[] = {
	{ "restored_round_trip_and_lookup", test_restored_round_trip_and_lookup },
	{ "restored_parse_refuses_anything_else", test_restored_parse_refuses_anything_else },
	{ "restored_load_falls_back_to_empty", test_restored_load_falls_back_to_empty },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("restored", s_tests)
