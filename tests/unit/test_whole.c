/* CUnit suite "whole": whether a checkpoint file written in place is whole by its own format
 * (storage/format/whole.c), on torch.save files of the fuzz corpus cut at every length. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rr/format.h"

#include "cunit_main.h"
#include "torch_fixture.h"

static enum rr_file_state s_state(const void *data, size_t len, const char *name)
{
	int fd = memfd_create("whole", MFD_CLOEXEC);
	enum rr_file_state st;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(len == 0 || write(fd, data, len) == (ssize_t)len);
	st = rr_format_file_state(fd, name, len);
	close(fd);
	return st;
}

/* torch.save's zip (ZIP64 end records) and torch.jit.save's (compressed entries) are whole;
 * every shorter prefix of them is cut. */
static void test_a_zip_is_whole_and_every_prefix_cut(void)
{
	static const char *const seeds[] = { "little.pt", "deflated.pt", "lightning.ckpt" };

	for (size_t k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
		size_t len = 0, cut = 0;
		unsigned char *z = tf_load("fuzz_torch_zip", seeds[k], &len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(z);
		CU_ASSERT_EQUAL(s_state(z, len, "ckpt.pt"), RR_FILE_WHOLE);
		for (size_t n = 4; n < len; n++)
			cut += s_state(z, n, "ckpt.pt") == RR_FILE_CUT;
		CU_ASSERT_EQUAL(cut, len - 4);
		free(z);
	}
}

/* A save cut right after a tensor whose bytes are themselves a whole zip ends with that zip's
 * end record, whose offsets name its own directory, not the file's: cut. */
static void test_a_zip_inside_a_cut_save_does_not_make_it_whole(void)
{
	size_t la = 0, lb = 0;
	unsigned char *a = tf_load("fuzz_torch_zip", "little.pt", &la);
	unsigned char *b = tf_load("fuzz_torch_zip", "deflated.pt", &lb);
	unsigned char *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	f = malloc(700 + lb);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	memcpy(f, a, 700);
	memcpy(f + 700, b, lb);
	CU_ASSERT_EQUAL(s_state(f, 700 + lb, "ckpt.pt"), RR_FILE_CUT);
	free(f);
	free(a);
	free(b);
}

/* Each of corpus's files, written under name (NULL: its own), judged want. */
static void s_expect(const char *corpus, const char *const *files, size_t n, const char *name,
		     enum rr_file_state want)
{
	for (size_t k = 0; k < n; k++) {
		size_t len = 0;
		unsigned char *z = tf_load(corpus, files[k], &len);
		enum rr_file_state got;

		CU_ASSERT_PTR_NOT_NULL_FATAL(z);
		got = s_state(z, len, name ? name : files[k]);
		if (got != want)
			fprintf(stderr, "%s: judged %d, not %d\n", files[k], (int)got, (int)want);
		CU_ASSERT_EQUAL(got, want);
		free(z);
	}
}

static void test_an_interrupted_torch_save_is_cut_every_whole_one_whole(void)
{
	static const char *const whole[] = { "little.pt", "deflated.pt", "lightning.ckpt",
					     "bigendian.pt", "dtypes.pt", "adam_step.pt",
					     "model.bin" };
	static const char *const cut[] = { "interrupted.pt", "interrupted_torch2.pt",
					   "missing_record.pt" };
	/* Zips that are no torch.save archive, or ones its reader refuses, whole as before:
	 * torch.package's (a version record, no data.pkl), duplicate names, two archives. */
	static const char *const other[] = { "package.pt", "dup_names.bin", "two_archives.pt" };
	/* A pickle the scanner does not follow (a newer torch's opcode): taken as it is. */
	static const char *const odd[] = { "odd_pickle.pt" };

	s_expect("fuzz_torch_zip", whole, sizeof(whole) / sizeof(whole[0]), "ckpt.pt",
		 RR_FILE_WHOLE);
	s_expect("fuzz_whole_file", cut, sizeof(cut) / sizeof(cut[0]), "ckpt.pt", RR_FILE_CUT);
	s_expect("fuzz_whole_file", other, sizeof(other) / sizeof(other[0]), NULL, RR_FILE_WHOLE);
	s_expect("fuzz_whole_file", odd, 1, "ckpt.pt", RR_FILE_WHOLE);
	CU_ASSERT_EQUAL(s_state("", 0, "ckpt.pt"), RR_FILE_CUT);
	CU_ASSERT_EQUAL(s_state("PK", 2, "last.ckpt"), RR_FILE_CUT);
	CU_ASSERT_EQUAL(s_state("", 0, "notes.txt"), RR_FILE_OTHER);
}

static void test_safetensors_whole_or_cut_and_other_files_other(void)
{
	static const char hdr[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
	unsigned char st[128];
	uint64_t n = sizeof(hdr) - 1;
	size_t len = 8 + n + 8;

	for (int i = 0; i < 8; i++)
		st[i] = (unsigned char)(n >> (8 * i));
	memcpy(st + 8, hdr, n);
	memset(st + 8 + n, 0, 8);
	CU_ASSERT_EQUAL(s_state(st, len, "model.safetensors"), RR_FILE_WHOLE);
	for (size_t k = 0; k < len; k++)
		CU_ASSERT_EQUAL(s_state(st, k, "model.safetensors"), RR_FILE_CUT);
	/* A dtype this reader does not know yet: whole all the same (its offsets say so). */
	{
		static const char nh[] = "{\"a\":{\"dtype\":\"F2_NEW\",\"shape\":[2],"
					 "\"data_offsets\":[0,8]}}";
		unsigned char nf[128];
		uint64_t nn = sizeof(nh) - 1;
		for (int i = 0; i < 8; i++)
			nf[i] = (unsigned char)(nn >> (8 * i));
		memcpy(nf + 8, nh, nn);
		memset(nf + 8 + nn, 0, 8);
		CU_ASSERT_EQUAL(s_state(nf, 8 + nn + 8, "model.safetensors"), RR_FILE_WHOLE);
		CU_ASSERT_EQUAL(s_state(nf, 8 + nn + 7, "model.safetensors"), RR_FILE_CUT);
	}
	/* Not a zip, not named .safetensors: a legacy pickle, a tarball: no answer. */
	CU_ASSERT_EQUAL(s_state("\x80\x02legacy", 8, "old.pt"), RR_FILE_OTHER);
	CU_ASSERT_EQUAL(s_state(st, len, "model.bin"), RR_FILE_OTHER);
}

static CU_TestInfo s_tests[] = {
	{ "test_a_zip_is_whole_and_every_prefix_cut", test_a_zip_is_whole_and_every_prefix_cut },
	{ "test_a_zip_inside_a_cut_save_does_not_make_it_whole",
	  test_a_zip_inside_a_cut_save_does_not_make_it_whole },
	{ "test_an_interrupted_torch_save_is_cut_every_whole_one_whole",
	  test_an_interrupted_torch_save_is_cut_every_whole_one_whole },
	{ "test_safetensors_whole_or_cut_and_other_files_other",
	  test_safetensors_whole_or_cut_and_other_files_other },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("whole", s_tests)
