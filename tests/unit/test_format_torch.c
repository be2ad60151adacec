/* The torch.save format plug-in: which files it claims; a real optimizer state becomes
 * plain zip/pickle bytes plus one F32 tensor piece per storage record; what it does not
 * understand (legacy files, compressed entries, big-endian files, a pickle that only calls
 * os.system) is stored byte-exact; after a lossy restore, finish rewrites exactly the CRC-32
 * fields of the records that changed, so the zip checks again. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_main.h"
#include "rr/crc32.h"
#include "torch_zip.h"
#include "torch_fixture.h"

static void test_format_claims_by_name_and_signature(void)
{
	static const uint8_t zip[] = "PK\x03\x04";
	static const uint8_t other[] = "abcdefgh";

	CU_ASSERT_PTR_EQUAL(rr_format_for("m.safetensors", other, 8, 100), &rr_format_safetensors);
	CU_ASSERT_PTR_EQUAL(rr_format_for("optimizer.pt", other, 8, 100), &rr_format_torch);
	CU_ASSERT_PTR_EQUAL(rr_format_for("a/rng_state.pth", other, 8, 100), &rr_format_torch);
	CU_ASSERT_PTR_EQUAL(rr_format_for("pytorch_model.bin", other, 8, 100), &rr_format_torch);
	CU_ASSERT_PTR_EQUAL(rr_format_for("last.ckpt", other, 8, 100), &rr_format_torch);
	CU_ASSERT_PTR_EQUAL(rr_format_for("weights.data", zip, 4, 100), &rr_format_torch);
	CU_ASSERT_PTR_EQUAL(rr_format_for("trainer_state.json", other, 8, 100), &rr_format_plain);
	CU_ASSERT_PTR_EQUAL(rr_format_by_name("torch"), &rr_format_torch);
	CU_ASSERT_PTR_EQUAL(rr_format_by_name(""), &rr_format_plain);
	CU_ASSERT_PTR_NULL(rr_format_by_name("pickle"));
}

static int s_plan(const char *name, struct tf_mem *m, struct rr_format_plan *plan, char *why,
		  size_t why_len)
{
	struct rr_format_src src;

	memset(plan, 0, sizeof(*plan));
	m->p = tf_load("fuzz_torch_zip", name, &m->n);
	CU_ASSERT_PTR_NOT_NULL(m->p);
	if (!m->p)
		return RR_ENOENT;
	src = tf_src(m);
	return rr_format_torch.plan(&src, plan, why, why_len);
}

/* Pieces tile the file; tensors are exactly the records, named by entry. */
static void test_torch_plans_optimizer_records_as_f32_tensors(void)
{
	struct tf_mem m = { 0 };
	struct rr_format_plan plan;
	struct rr_format_src src;
	struct rr_zip z;
	char why[256] = "";
	uint64_t next = 0;
	size_t tensors = 0;

	CU_ASSERT_EQUAL_FATAL(s_plan("optimizer.pt", &m, &plan, why, sizeof(why)), 0);
	src = tf_src(&m);
	CU_ASSERT_EQUAL_FATAL(rr_zip_read(&src, &z, why, sizeof(why)), 0);
	for (size_t i = 0; i < plan.n; i++) {
		const struct rr_format_piece *pc = &plan.pieces[i];
		CU_ASSERT_EQUAL(pc->offset, next);
		next = pc->offset + pc->length;
		if (i > 0)
			CU_ASSERT(pc->tensor || plan.pieces[i - 1].tensor); /* plain runs merged */
		if (!pc->tensor)
			continue;
		const struct rr_zip_entry *e = rr_zip_find(&z, pc->name);
		CU_ASSERT_PTR_NOT_NULL_FATAL(e);
		CU_ASSERT_EQUAL(strncmp(pc->name, "archive/data/", 13), 0);
		CU_ASSERT_EQUAL(pc->offset, e->data_off);
		CU_ASSERT_EQUAL(pc->length, e->usize);
		CU_ASSERT_EQUAL(pc->dtype, RR_ST_F32);
		CU_ASSERT_EQUAL(pc->ndim, 1);
		CU_ASSERT_EQUAL(pc->shape[0] * 4, pc->length);
		tensors++;
	}
	CU_ASSERT_EQUAL(next, m.n);
	CU_ASSERT_EQUAL(tensors, 18);
	rr_zip_free(&z);
	rr_format_plan_free(&plan);
	free(m.p);
}

static void test_torch_plans_other_dtypes_and_skips_empty_records(void)
{
	struct tf_mem m = { 0 };
	struct rr_format_plan plan;
	char why[256] = "";
	size_t bf16 = 0, f32 = 0, tensors = 0;

	CU_ASSERT_EQUAL_FATAL(s_plan("dtypes.pt", &m, &plan, why, sizeof(why)), 0);
	for (size_t i = 0; i < plan.n; i++) {
		tensors += (size_t)plan.pieces[i].tensor;
		bf16 += plan.pieces[i].tensor && plan.pieces[i].dtype == RR_ST_BF16;
		f32 += plan.pieces[i].tensor && plan.pieces[i].dtype == RR_ST_F32;
		CU_ASSERT(!plan.pieces[i].tensor || plan.pieces[i].length > 0);
	}
	CU_ASSERT_EQUAL(tensors, 9); /* 10 storages, one of them empty */
	CU_ASSERT_EQUAL(bf16, 1);
	CU_ASSERT_EQUAL(f32, 1);
	rr_format_plan_free(&plan);
	free(m.p);
}

static void s_expect_refused(const char *name, int want_rc, const char *why_part)
{
	struct tf_mem m = { 0 };
	struct rr_format_plan plan;
	char why[256] = "";
	int rc = s_plan(name, &m, &plan, why, sizeof(why));

	CU_ASSERT_EQUAL(rc, want_rc);
	CU_ASSERT_EQUAL(plan.n, 0);
	if (why_part) {
		if (!strstr(why, why_part))
			fprintf(stderr, "\n%s: reason was: %s\n", name, why);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, why_part));
	}
	rr_format_plan_free(&plan);
	free(m.p);
}

static void test_torch_refuses_what_it_cannot_store_by_record(void)
{
	s_expect_refused("legacy.pt", RR_ECORRUPT, "legacy");
	s_expect_refused("deflated.pt", RR_ECORRUPT, "compressed");
	s_expect_refused("bigendian.pt", RR_ECORRUPT, "big-endian");
}

static void test_torch_reads_a_little_endian_byteorder_record(void)
{
	struct tf_mem m = { 0 };
	struct rr_format_plan plan;
	char why[256] = "";
	size_t tensors = 0;

	CU_ASSERT_EQUAL_FATAL(s_plan("little.pt", &m, &plan, why, sizeof(why)), 0);
	for (size_t i = 0; i < plan.n; i++)
		tensors += (size_t)plan.pieces[i].tensor;
	CU_ASSERT_EQUAL(tensors, 6);
	rr_format_plan_free(&plan);
	free(m.p);
}

/* archive/data.pkl would run os.system on torch.load: scanned only, no storage, all plain. */
static void test_torch_stores_a_malicious_pickle_plain_without_running_it(void)
{
	struct tf_mem m = { 0 };
	struct rr_format_plan plan;
	char why[256] = "";

	unlink("/tmp/rr-pickle-scan-ran");
	CU_ASSERT_EQUAL_FATAL(s_plan("malicious.pt", &m, &plan, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(plan.n, 1);
	CU_ASSERT(!plan.pieces[0].tensor && plan.pieces[0].length == m.n);
	CU_ASSERT_NOT_EQUAL(access("/tmp/rr-pickle-scan-ran", F_OK), 0);
	rr_format_plan_free(&plan);
	free(m.p);
}

/* A .bin that is not a zip nor a legacy torch file: plain, no warning due (RR_ENOENT). */
static void test_torch_leaves_other_bin_files_plain_without_warning(void)
{
	char dir[] = "/tmp/rr-fmt-XXXXXX", path[64], why[256] = "";
	struct rr_format_plan plan;
	const struct rr_format *used, *refused;
	FILE *f;
	int fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/data.bin", dir);
	f = fopen(path, "wb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("raw bytes of some other program", f);
	fclose(f);
	fd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(rr_format_plan_fd(fd, "data.bin", 31, &plan, &used, &refused, why,
					  sizeof(why)), 0);
	close(fd);
	CU_ASSERT_PTR_EQUAL(used, &rr_format_plain);
	CU_ASSERT_PTR_NULL(refused);
	CU_ASSERT_EQUAL(plan.n, 1);
	rr_format_plan_free(&plan);
	unlink(path);
	rmdir(dir);
}

static uint32_t s_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Writes optimizer.pt with one record's bytes changed (as a lossy restore would leave it),
 * runs finish with segments saying which record was lossy (that record in two chunks), and
 * checks the CRC fields. crcs: 0, finish reads the record back; 1, it is given its chunks'
 * CRCs; 2, it is given made-up ones, which must then be what it writes (it used them and
 * read nothing). */
static void s_finish_case(int lossy, int crcs, int *ok)
{
	char path[] = "/tmp/rr-fmt-finish-XXXXXX", why[256] = "";
	struct tf_mem m = { 0 }, after = { 0 };
	struct rr_format_src src;
	struct rr_zip z, z2;
	struct rr_segment segs[3];
	struct rr_file_entry fe = { 0 };
	const struct rr_zip_entry *e;
	struct rr_chunk_ref head[1] = { { .size = 0 } }, chunks[2] = { { .size = 0 } };
	uint32_t chunk_crc[3]; /* per chunk of the file: the head's (plain, never read), the record's two */
	int fd;

	m.p = tf_load("fuzz_torch_zip", "optimizer.pt", &m.n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m.p);
	src = tf_src(&m);
	CU_ASSERT_EQUAL_FATAL(rr_zip_read(&src, &z, why, sizeof(why)), 0);
	e = rr_zip_find(&z, "archive/data/1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	m.p[e->data_off + 5] ^= 0x01; /* a rounded mantissa bit */
	memset(segs, 0, sizeof(segs));
	head[0].size = e->data_off;
	segs[0] = (struct rr_segment){ .offset = 0, .length = e->data_off, .nchunks = 1,
				       .chunks = head };
	chunk_crc[0] = 0xdeadbeefu; /* counted, not used: a plain chunk */
	chunks[0].size = e->usize / 2;
	chunks[1].size = e->usize - chunks[0].size;
	segs[1] = (struct rr_segment){ .offset = e->data_off, .length = e->usize,
				       .encoding = lossy ? RR_ENC_FP16 : RR_ENC_SHUFFLE_ZSTD,
				       .nchunks = 2, .chunks = chunks };
	chunk_crc[1] = crcs == 2 ? 0x12345678u : rr_crc32(0, m.p + e->data_off, chunks[0].size);
	chunk_crc[2] = crcs == 2 ? 0x9abcdef0u
				 : rr_crc32(0, m.p + e->data_off + chunks[0].size, chunks[1].size);
	segs[2] = (struct rr_segment){ .offset = e->data_off + e->usize,
				       .length = m.n - e->data_off - e->usize };
	fe = (struct rr_file_entry){ .path = "optimizer.pt", .size = m.n, .nsegs = 3, .segs = segs };
	snprintf(fe.format, sizeof(fe.format), "torch");
	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(write(fd, m.p, m.n), (ssize_t)m.n);
	CU_ASSERT_EQUAL(rr_format_torch.finish(fd, &fe, crcs ? chunk_crc : NULL, why, sizeof(why)),
			0);
	after.p = malloc(m.n);
	after.n = m.n;
	CU_ASSERT_EQUAL_FATAL(pread(fd, after.p, m.n, 0), (ssize_t)m.n);
	close(fd);
	unlink(path);
	if (lossy) {
		uint32_t crc = crcs == 2 ? rr_crc32_combine(chunk_crc[1], chunk_crc[2],
							     chunks[1].size)
					 : rr_crc32(0, after.p + e->data_off, (size_t)e->usize);
		/* the zip checks again, and only the three CRC fields of that record moved */
		src = tf_src(&after);
		CU_ASSERT_EQUAL_FATAL(rr_zip_read(&src, &z2, why, sizeof(why)), 0);
		CU_ASSERT_EQUAL(rr_zip_find(&z2, "archive/data/1")->crc, crc);
		CU_ASSERT_EQUAL(s_le32(after.p + e->desc_crc_off), crc);
		CU_ASSERT_EQUAL(s_le32(after.p + e->local_crc_off), 0); /* its CRC is in the descriptor */
		for (size_t i = 0; i < m.n; i++)
			if (after.p[i] != m.p[i])
				*ok &= (i >= e->central_crc_off && i < e->central_crc_off + 4) ||
				       (i >= e->desc_crc_off && i < e->desc_crc_off + 4);
		rr_zip_free(&z2);
	} else {
		*ok &= memcmp(after.p, m.p, m.n) == 0; /* nothing lossy: nothing rewritten */
	}
	rr_zip_free(&z);
	free(after.p);
	free(m.p);
}

static void test_torch_finish_recomputes_crcs_of_lossy_records_only(void)
{
	int ok = 1;
	s_finish_case(1, 0, &ok);
	s_finish_case(1, 1, &ok);
	s_finish_case(1, 2, &ok);
	CU_ASSERT(ok);
	ok = 1;
	s_finish_case(0, 0, &ok);
	s_finish_case(0, 1, &ok);
	CU_ASSERT(ok);
}

static CU_TestInfo s_tests[] = {
	{ "format_claims_by_name_and_signature", test_format_claims_by_name_and_signature },
	{ "torch_plans_optimizer_records_as_f32_tensors", test_torch_plans_optimizer_records_as_f32_tensors },
	{ "torch_plans_other_dtypes_and_skips_empty_records", test_torch_plans_other_dtypes_and_skips_empty_records },
	{ "torch_refuses_what_it_cannot_store_by_record", test_torch_refuses_what_it_cannot_store_by_record },
	{ "torch_reads_a_little_endian_byteorder_record", test_torch_reads_a_little_endian_byteorder_record },
	{ "torch_stores_a_malicious_pickle_plain_without_running_it", test_torch_stores_a_malicious_pickle_plain_without_running_it },
	{ "torch_leaves_other_bin_files_plain_without_warning", test_torch_leaves_other_bin_files_plain_without_warning },
	{ "torch_finish_recomputes_crcs_of_lossy_records_only", test_torch_finish_recomputes_crcs_of_lossy_records_only },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("format_torch", s_tests)
