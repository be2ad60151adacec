/* CUnit suite "hash": SHA-256 against FIPS 180-2's known answers, on the SHA extensions and
 * on OpenSSL, and the two against each other on every length around the block boundaries;
 * the XXH3-128 hex form. */
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "rr/cpu.h"
#include "rr/hash.h"

/* FIPS 180-2, appendix B (and the empty message). */
static const struct {
	const char *msg;
	size_t repeat; /* the message this many times */
	const char *hex;
} s_known[] = {
	{ "abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
	{ "", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
	{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
	  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	{ "a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
};

static void s_check_known(void)
{
	for (size_t i = 0; i < sizeof(s_known) / sizeof(s_known[0]); i++) {
		size_t n = strlen(s_known[i].msg), len = n * s_known[i].repeat;
		char *buf = malloc(len + 1), hex[RR_SHA256_HEX_LEN + 1];
		CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
		for (size_t r = 0; r < s_known[i].repeat; r++)
			memcpy(buf + r * n, s_known[i].msg, n);
		rr_sha256_hex(buf, len, hex);
		CU_ASSERT_STRING_EQUAL(hex, s_known[i].hex);
		free(buf);
	}
}

static void test_sha256_known_answers_on_openssl(void)
{
	CU_ASSERT_STRING_EQUAL(rr_sha256_force_openssl(1), "openssl");
	s_check_known();
	rr_sha256_force_openssl(0);
}

static void test_sha256_known_answers_on_the_sha_extensions(void)
{
	if (strcmp(rr_sha256_force_openssl(0), "sha-ni") != 0) {
		/* Said, not silently passed: this CPU (or build) has no SHA extensions. */
		fprintf(stderr, "no SHA extensions on this CPU: only OpenSSL's SHA-256 tested ");
		CU_ASSERT_FALSE(rr_cpu_features() & RR_CPU_SHA);
		return;
	}
	s_check_known();
}

/* A hash's two forms compared (force(1): the reference one, force(0): the fast one, each
 * writing hex): every length from 0 to max_len at offsets 0, step, 2 step... below 16 of a
 * patterned buffer, then big bytes from offset big_off. Returns how many differed. */
static unsigned s_forms_differ(void (*hex)(const void *, size_t, char *),
			       const char *(*force)(int), size_t max_len, size_t step, size_t big,
			       size_t big_off)
{
	unsigned char *buf = malloc(big + 16);
	char a[RR_SHA256_HEX_LEN + 1], b[RR_SHA256_HEX_LEN + 1];
	unsigned mismatches = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	for (size_t i = 0; i < big + 16; i++)
		buf[i] = (unsigned char)(i * 2654435761u >> 13);
	for (size_t off = 0; off < 16; off += step) {
		for (size_t len = 0; len <= max_len; len++) {
			force(1);
			hex(buf + off, len, a);
			force(0);
			hex(buf + off, len, b);
			mismatches += strcmp(a, b) != 0;
		}
	}
	force(1);
	hex(buf + big_off, big, a);
	force(0);
	hex(buf + big_off, big, b);
	mismatches += strcmp(a, b) != 0;
	free(buf);
	return mismatches;
}

/* Every length from 0 to 4 blocks and a few past (each padding case: the length fits in
 * the last block or needs one more), at every third alignment of the start, and one of 5 MiB. */
static void test_sha256_ni_and_openssl_agree_on_every_length_and_alignment(void)
{
	if (strcmp(rr_sha256_force_openssl(0), "sha-ni") != 0)
		fprintf(stderr, "no SHA extensions on this CPU: OpenSSL compared with itself ");
	CU_ASSERT_EQUAL(s_forms_differ(rr_sha256_hex, rr_sha256_force_openssl, 300, 3, 5u << 20, 1),
			0);
}

static void test_xxh128_hex_is_32_lowercase_digits(void)
{
	char hex[33];

	rr_xxh128_hex("abc", 3, hex);
	CU_ASSERT_EQUAL(strlen(hex), 32);
	CU_ASSERT(rr_is_xxh128_hex(hex));
	/* XXH3-128 of "abc", canonical form: its output is stable since xxHash 0.8.0. */
	CU_ASSERT_STRING_EQUAL(hex, "06b05ab6733a618578af5f94892f3950");
}

/* The AVX2 form and libxxhash give the same hash: every length across XXH3's internal
 * cases (0-16, 17-128, 129-240, longer: stripes and blocks) at several alignments, and one of
 * 9 MiB (several blocks of 1 KiB stripes, a chunk's size). */
static void test_xxh128_avx2_and_libxxhash_agree(void)
{
	char a[33], b[33];

	if (strcmp(rr_xxh128_force_portable(0), "avx2") != 0) {
		fprintf(stderr, "no AVX2 form of XXH3 here: libxxhash compared with itself ");
#if defined(RR_XXH3_AVX2) /* where the build has it, only a CPU without AVX2 goes without */
		CU_ASSERT_FALSE(rr_cpu_features() & RR_CPU_AVX2);
#endif
	}
	CU_ASSERT_EQUAL(s_forms_differ(rr_xxh128_hex, rr_xxh128_force_portable, 2100, 5, 9u << 20,
				       3),
			0);
	/* And the known answer on both. */
	rr_xxh128_force_portable(1);
	rr_xxh128_hex("abc", 3, a);
	rr_xxh128_force_portable(0);
	rr_xxh128_hex("abc", 3, b);
	CU_ASSERT_STRING_EQUAL(a, "06b05ab6733a618578af5f94892f3950");
	CU_ASSERT_STRING_EQUAL(b, "06b05ab6733a618578af5f94892f3950");
}

static CU_TestInfo s_tests[] = {
	{ "sha256_known_answers_on_openssl", test_sha256_known_answers_on_openssl },
	{ "sha256_known_answers_on_the_sha_extensions",
	  test_sha256_known_answers_on_the_sha_extensions },
	{ "sha256_ni_and_openssl_agree_on_every_length_and_alignment",
	  test_sha256_ni_and_openssl_agree_on_every_length_and_alignment },
	{ "xxh128_hex_is_32_lowercase_digits", test_xxh128_hex_is_32_lowercase_digits },
	{ "xxh128_avx2_and_libxxhash_agree", test_xxh128_avx2_and_libxxhash_agree },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("hash", s_tests)
