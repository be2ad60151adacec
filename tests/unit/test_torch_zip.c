/* The strict zip reader: torch.save's archives (data descriptors, ZIP64 end records,
 * 64-byte aligned records) and zipfile's ZIP64 extra fields are read with every CRC field
 * located; truncations, inconsistent records and non-zips are refused with a reason. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "rr/crc32.h"
#include "torch_zip.h"
#include "torch_fixture.h"

static uint32_t s_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void test_crc32_known_answer(void)
{
	CU_ASSERT_EQUAL(rr_crc32(0, "123456789", 9), 0xCBF43926u);
	CU_ASSERT_EQUAL(rr_crc32(rr_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
	CU_ASSERT_EQUAL(rr_crc32(0, "", 0), 0u);
}

/* Every entry's data checks against its CRC, so offsets and sizes were read right; the
 * CRC fields found hold that CRC (or 0 in a local header before a data descriptor). */
static void s_check_archive(const char *name, int want_desc)
{
	struct tf_mem m = { 0 };
	struct rr_format_src src;
	struct rr_zip z;
	char why[256] = "";
	size_t records = 0;

	m.p = tf_load("fuzz_torch_zip", name, &m.n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m.p);
	src = tf_src(&m);
	CU_ASSERT_EQUAL_FATAL(rr_zip_read(&src, &z, why, sizeof(why)), 0);
	CU_ASSERT(z.n >= 3);
	for (size_t i = 0; i < z.n; i++) {
		const struct rr_zip_entry *e = &z.entries[i];
		uint32_t crc = rr_crc32(0, m.p + e->data_off, (size_t)e->csize);
		CU_ASSERT_EQUAL(crc, e->crc);
		CU_ASSERT_EQUAL(s_le32(m.p + e->central_crc_off), crc);
		CU_ASSERT_EQUAL(e->method, 0);
		if (want_desc && (e->flags & 8)) { /* torch: all but empty records */
			CU_ASSERT(e->desc_crc_off != 0);
			CU_ASSERT_EQUAL(s_le32(m.p + e->desc_crc_off), crc);
			CU_ASSERT_EQUAL(e->local_crc, 0);
		} else {
			CU_ASSERT_EQUAL(s_le32(m.p + e->local_crc_off), crc);
		}
		if (strstr(e->name, "/data/") && want_desc && e->csize) {
			CU_ASSERT_EQUAL(e->data_off % 64, 0); /* torch aligns records */
			records++;
		}
		CU_ASSERT_PTR_EQUAL(rr_zip_find(&z, e->name), e);
	}
	if (want_desc)
		CU_ASSERT(records > 0);
	CU_ASSERT_PTR_NULL(rr_zip_find(&z, "no/such/entry"));
	rr_zip_free(&z);
	free(m.p);
}

static void test_zip_reads_torch_save_archives(void)
{
	s_check_archive("optimizer.pt", 1);
	s_check_archive("lightning.ckpt", 1);
	s_check_archive("rng_state.pth", 1);
	s_check_archive("dtypes.pt", 1);
}

static void test_zip_reads_zip64_extra_fields(void)
{
	s_check_archive("zip64.pt", 0);
}

static void s_expect_refused(const unsigned char *p, size_t n, const char *why_part)
{
	struct tf_mem m = { (unsigned char *)p, n };
	struct rr_format_src src = tf_src(&m);
	struct rr_zip z;
	char why[256] = "";
	int rc = rr_zip_read(&src, &z, why, sizeof(why));

	CU_ASSERT(rc == RR_ECORRUPT || rc == RR_ETOOBIG);
	CU_ASSERT(why[0] != '\0');
	if (why_part && !strstr(why, why_part))
		fprintf(stderr, "\nreason was: %s\n", why);
	if (why_part)
		CU_ASSERT_PTR_NOT_NULL(strstr(why, why_part));
	CU_ASSERT_EQUAL(z.n, 0);
}

static void test_zip_refuses_every_truncation(void)
{
	size_t n;
	unsigned char *p = tf_load("fuzz_torch_zip", "optimizer.pt", &n);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	for (size_t k = 0; k < n; k++)
		s_expect_refused(p, k, NULL);
	free(p);
}

static void test_zip_refuses_a_legacy_torch_file(void)
{
	size_t n;
	unsigned char *p = tf_load("fuzz_torch_zip", "legacy.pt", &n);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	s_expect_refused(p, n, "end of central directory");
	free(p);
}

/* The central directory's CRC no longer matches the data descriptor's. */
static void test_zip_refuses_disagreeing_crc_fields(void)
{
	struct tf_mem m = { 0 };
	struct rr_format_src src;
	struct rr_zip z;
	char why[256];
	uint64_t at;

	m.p = tf_load("fuzz_torch_zip", "optimizer.pt", &m.n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m.p);
	src = tf_src(&m);
	CU_ASSERT_EQUAL_FATAL(rr_zip_read(&src, &z, why, sizeof(why)), 0);
	at = z.entries[1].central_crc_off;
	rr_zip_free(&z);
	m.p[at] ^= 1;
	s_expect_refused(m.p, m.n, "data descriptor disagrees");
	free(m.p);
}

/* A local header offset that points into another entry's data. */
static void test_zip_refuses_a_misplaced_local_header(void)
{
	struct tf_mem m = { 0 };
	struct rr_format_src src;
	struct rr_zip z;
	char why[256];
	uint64_t at;

	m.p = tf_load("fuzz_torch_zip", "optimizer.pt", &m.n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m.p);
	src = tf_src(&m);
	CU_ASSERT_EQUAL_FATAL(rr_zip_read(&src, &z, why, sizeof(why)), 0);
	at = z.entries[2].central_crc_off - 16 + 42; /* its local header offset field */
	rr_zip_free(&z);
	m.p[at] += 8;
	s_expect_refused(m.p, m.n, "local header");
	free(m.p);
}

static void test_zip_refuses_a_duplicate_name(void)
{
	struct tf_mem m = { 0 };
	struct rr_format_src src;
	struct rr_zip z;
	char why[256];
	uint64_t c1, c2;

	m.p = tf_load("fuzz_torch_zip", "zip64.pt", &m.n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m.p);
	src = tf_src(&m);
	CU_ASSERT_EQUAL_FATAL(rr_zip_read(&src, &z, why, sizeof(why)), 0);
	/* rename entry 2 to entry 1's name in both headers (same length: "model/data/N") */
	CU_ASSERT_EQUAL_FATAL(strlen(z.entries[1].name), strlen(z.entries[2].name));
	c1 = z.entries[1].central_crc_off - 16 + 46;
	c2 = z.entries[2].central_crc_off - 16 + 46;
	memcpy(m.p + c2, m.p + c1, strlen(z.entries[1].name));
	memcpy(m.p + z.entries[2].local_off + 30, m.p + c1, strlen(z.entries[1].name));
	rr_zip_free(&z);
	s_expect_refused(m.p, m.n, "twice");
	free(m.p);
}

static CU_TestInfo s_tests[] = {
	{ "crc32_known_answer", test_crc32_known_answer },
	{ "zip_reads_torch_save_archives", test_zip_reads_torch_save_archives },
	{ "zip_reads_zip64_extra_fields", test_zip_reads_zip64_extra_fields },
	{ "zip_refuses_every_truncation", test_zip_refuses_every_truncation },
	{ "zip_refuses_a_legacy_torch_file", test_zip_refuses_a_legacy_torch_file },
	{ "zip_refuses_disagreeing_crc_fields", test_zip_refuses_disagreeing_crc_fields },
	{ "zip_refuses_a_misplaced_local_header", test_zip_refuses_a_misplaced_local_header },
	{ "zip_refuses_a_duplicate_name", test_zip_refuses_a_duplicate_name },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("torch_zip", s_tests)
