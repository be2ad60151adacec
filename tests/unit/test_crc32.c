/* CUnit suite "crc32": rr_crc32 (storage/common/crc32.c), the PCLMULQDQ folding and the
 * tables, against known answers (the standard check value, and Python's zlib.crc32 of longer
 * inputs that take the folding path), and the two against each other on every length
 * around the folding's 16- and 64-byte steps, at every alignment, in pieces, and on 5 MiB;
 * rr_crc32_combine against the CRC of the whole. */
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "rr/cpu.h"
#include "rr/crc32.h"

/* Computed with Python's zlib.crc32 (zlib 1.2.13). */
static void s_check_known(void)
{
	unsigned char seq[1027];
	char *as = malloc(1000000);

	CU_ASSERT_PTR_NOT_NULL_FATAL(as);
	for (size_t i = 0; i < 1024; i++)
		seq[i] = (unsigned char)i;
	memcpy(seq + 1024, "abc", 3);
	memset(as, 'a', 1000000);
	CU_ASSERT_EQUAL(rr_crc32(0, "123456789", 9), 0xCBF43926u);
	CU_ASSERT_EQUAL(rr_crc32(0, "", 0), 0u);
	CU_ASSERT_EQUAL(rr_crc32(0, "The quick brown fox jumps over the lazy dog", 43), 0x414FA339u);
	CU_ASSERT_EQUAL(rr_crc32(0, seq, 1024), 0xB70B4C26u);
	CU_ASSERT_EQUAL(rr_crc32(0, seq, 1027), 0xC2FAA2A6u);
	CU_ASSERT_EQUAL(rr_crc32(0, as, 1000000), 0xDC25BFBCu);
	free(as);
}

static void test_known_answers_on_the_tables(void)
{
	CU_ASSERT_STRING_EQUAL(rr_crc32_force_table(1), "table");
	s_check_known();
	rr_crc32_force_table(0);
}

static void test_known_answers_on_pclmul(void)
{
	if (strcmp(rr_crc32_force_table(0), "pclmul") != 0) {
		/* Said, not silently passed: this CPU (or build) has no PCLMULQDQ. */
		fprintf(stderr, "no PCLMULQDQ on this CPU: only the tables tested ");
		CU_ASSERT_FALSE(rr_cpu_features() & RR_CPU_PCLMUL);
		return;
	}
	s_check_known();
}

static uint32_t s_crc(int table, uint32_t crc, const void *p, size_t len)
{
	rr_crc32_force_table(table);
	crc = rr_crc32(crc, p, len);
	rr_crc32_force_table(0);
	return crc;
}

static void test_pclmul_and_tables_agree_on_every_length_alignment_and_split(void)
{
	size_t big = 5u << 20;
	unsigned char *buf = malloc(big + 16);
	unsigned mismatches = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	if (strcmp(rr_crc32_force_table(0), "pclmul") != 0)
		fprintf(stderr, "no PCLMULQDQ on this CPU: the tables compared with themselves ");
	for (size_t i = 0; i < big + 16; i++)
		buf[i] = (unsigned char)(i * 2654435761u >> 13);
	for (size_t off = 0; off < 16; off++)
		for (size_t len = 0; len <= 300; len++)
			mismatches += s_crc(1, 0, buf + off, len) != s_crc(0, 0, buf + off, len);
	/* Continued from a running CRC, split at every point of 200 bytes. */
	for (size_t cut = 0; cut <= 200; cut++)
		mismatches += s_crc(0, s_crc(0, 0, buf, cut), buf + cut, 200 - cut) !=
			      s_crc(1, 0, buf, 200);
	mismatches += s_crc(1, 0, buf + 1, big) != s_crc(0, 0, buf + 1, big);
	CU_ASSERT_EQUAL(mismatches, 0);
	free(buf);
}

/* Pieces computed apart, in any lengths (0 too), combine to the CRC of the whole. */
static void test_combine_gives_the_crc_of_the_concatenation(void)
{
	size_t len = 70000;
	unsigned char *buf = malloc(len);
	unsigned mismatches = 0;
	uint32_t whole;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 2654435761u >> 11);
	whole = rr_crc32(0, buf, len);
	for (size_t cut = 0; cut <= len; cut += cut < 300 ? 1 : 997)
		mismatches += rr_crc32_combine(rr_crc32(0, buf, cut), rr_crc32(0, buf + cut, len - cut),
					       len - cut) != whole;
	/* Three pieces, the middle one empty. */
	mismatches += rr_crc32_combine(rr_crc32_combine(rr_crc32(0, buf, 100), 0, 0),
				       rr_crc32(0, buf + 100, len - 100), len - 100) != whole;
	CU_ASSERT_EQUAL(mismatches, 0);
	CU_ASSERT_EQUAL(rr_crc32_combine(rr_crc32(0, "1234", 4), rr_crc32(0, "56789", 5), 5),
			0xCBF43926u);
	free(buf);
}

static CU_TestInfo s_tests[] = {
	{ "combine_gives_the_crc_of_the_concatenation",
	  test_combine_gives_the_crc_of_the_concatenation },
	{ "known_answers_on_the_tables", test_known_answers_on_the_tables },
	{ "known_answers_on_pclmul", test_known_answers_on_pclmul },
	{ "pclmul_and_tables_agree_on_every_length_alignment_and_split",
	  test_pclmul_and_tables_agree_on_every_length_alignment_and_split },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("crc32", s_tests)
