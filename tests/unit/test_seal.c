/* CUnit suite "seal": AES-256-GCM sealing of objects, keyed chunk addresses, key files. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rr/error.h"
#include "rr/hash.h"
#include "rr/seal.h"

#include "cunit_main.h"

#define S_HEX_A "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define S_HEX_B "f0e1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff"
#define S_NAME "run/checkpoints/step-1/manifest.json"

static struct rr_seal_key *s_key(const char *hex)
{
	struct rr_seal_key *k = NULL;
	char why[200];

	CU_ASSERT_EQUAL_FATAL(rr_seal_key_parse(hex, strlen(hex), &k, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	return k;
}

/* Seals msg under name into a fresh buffer (caller frees); *len_out is its length. */
static unsigned char *s_sealed(const struct rr_seal_key *k, const char *name, const char *msg,
			       size_t *len_out)
{
	size_t n = strlen(msg);
	unsigned char *obj = malloc(n + RR_SEAL_OVERHEAD);

	CU_ASSERT_PTR_NOT_NULL_FATAL(obj);
	CU_ASSERT_EQUAL_FATAL(rr_seal(k, name, msg, n, obj), 0);
	*len_out = n + RR_SEAL_OVERHEAD;
	return obj;
}

static const char s_msg[] = "{\"files\":[{\"path\":\"model.safetensors\"}],\"marker\":\"PLAINTEXT\"}";

static void test_seal_round_trip_gives_back_the_bytes(void)
{
	struct rr_seal_key *k = s_key(S_HEX_A);
	size_t len, plain = 0;
	unsigned char *obj = s_sealed(k, S_NAME, s_msg, &len);
	char why[300] = "";

	CU_ASSERT_EQUAL(memcmp(obj, RR_SEAL_MAGIC, RR_SEAL_MAGIC_LEN), 0);
	CU_ASSERT(rr_seal_is_sealed(obj, len));
	/* Nothing of the plaintext is visible in the sealed object. */
	CU_ASSERT_PTR_NULL(memmem(obj, len, "PLAINTEXT", 9));
	CU_ASSERT_PTR_NULL(memmem(obj, len, "model", 5));
	CU_ASSERT_EQUAL(rr_seal_open(k, S_NAME, obj, len, &plain, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(plain, strlen(s_msg));
	CU_ASSERT_EQUAL(memcmp(obj, s_msg, plain), 0);
	free(obj);
	rr_seal_key_destroy(k);
}

static void test_seal_empty_object_round_trips(void)
{
	struct rr_seal_key *k = s_key(S_HEX_A);
	size_t len, plain = 1;
	unsigned char *obj = s_sealed(k, "x", "", &len);

	CU_ASSERT_EQUAL(len, RR_SEAL_OVERHEAD);
	CU_ASSERT_EQUAL(rr_seal_open(k, "x", obj, len, &plain, NULL, 0), 0);
	CU_ASSERT_EQUAL(plain, 0);
	free(obj);
	rr_seal_key_destroy(k);
}

static void test_seal_uses_a_fresh_nonce_per_object(void)
{
	struct rr_seal_key *k = s_key(S_HEX_A);
	size_t l1, l2;
	unsigned char *a = s_sealed(k, S_NAME, s_msg, &l1), *b = s_sealed(k, S_NAME, s_msg, &l2);
	const size_t nonce_at = RR_SEAL_MAGIC_LEN + 1 + RR_SEAL_KEY_ID_LEN;

	CU_ASSERT_EQUAL(l1, l2);
	CU_ASSERT_NOT_EQUAL(memcmp(a + nonce_at, b + nonce_at, RR_SEAL_NONCE_LEN), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(a + RR_SEAL_HEADER_LEN, b + RR_SEAL_HEADER_LEN,
				   l1 - RR_SEAL_HEADER_LEN), 0);
	free(a);
	free(b);
	rr_seal_key_destroy(k);
}

static void test_seal_wrong_key_is_a_key_error_naming_both_ids(void)
{
	struct rr_seal_key *a = s_key(S_HEX_A), *b = s_key(S_HEX_B);
	char ida[17], idb[17], why[300] = "";
	size_t len, plain = 7;
	unsigned char *obj = s_sealed(a, S_NAME, s_msg, &len);

	rr_seal_key_id_hex(a, ida);
	rr_seal_key_id_hex(b, idb);
	CU_ASSERT_STRING_NOT_EQUAL(ida, idb);
	CU_ASSERT_EQUAL(rr_seal_open(b, S_NAME, obj, len, &plain, why, sizeof(why)), RR_EKEY);
	CU_ASSERT_EQUAL(plain, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "another key"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, ida));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, idb));
	/* Neither key's digits appear in the reason. */
	CU_ASSERT_PTR_NULL(strstr(why, "0001020304"));
	CU_ASSERT_PTR_NULL(strstr(why, "f0e1d2c3"));
	free(obj);
	rr_seal_key_destroy(a);
	rr_seal_key_destroy(b);
}

static void test_seal_key_id_is_first_bytes_of_hmac_of_label(void)
{
	struct rr_seal_key *k = s_key(S_HEX_A);
	char id[17];

	/* HMAC-SHA256(key=00..1f, "resume-run key id"), computed with Python's hmac module. */
	rr_seal_key_id_hex(k, id);
	CU_ASSERT_STRING_EQUAL(id, "39869c2eef328457");
	rr_seal_key_destroy(k);
}

/* Sealed by Python's `cryptography` (AESGCM) from the format in rr/seal.h: key 00..1f,
 * nonce 00..0b, name S_NAME, plaintext {"checkpoint":"step-1"}. */
static void test_seal_opens_an_object_sealed_by_another_implementation(void)
{
	static const char hex[] =
		"8952525345414c0a0139869c2eef328457000102030405060708090a0b1b731592bf64f83cecf4"
		"d7e65c2f639546fc04413514469c6ac6179d805c7f0df52ce6ee50d2f4";
	struct rr_seal_key *k = s_key(S_HEX_A);
	unsigned char obj[sizeof(hex) / 2];
	size_t plain = 0;
	char why[300] = "";

	for (size_t i = 0; i < sizeof(obj); i++)
		CU_ASSERT_EQUAL_FATAL(sscanf(hex + 2 * i, "%2hhx", &obj[i]), 1);
	CU_ASSERT_EQUAL(rr_seal_open(k, S_NAME, obj, sizeof(obj), &plain, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(plain, 23);
	CU_ASSERT_EQUAL(memcmp(obj, "{\"checkpoint\":\"step-1\"}", 23), 0);
	rr_seal_key_destroy(k);
}

/* Flips one bit at offset off of a fresh sealed object; returns what opening it gives. */
static int s_open_flipped(size_t off, char *why, size_t cap)
{
	struct rr_seal_key *k = s_key(S_HEX_A);
	size_t len, plain = 0;
	unsigned char *obj = s_sealed(k, S_NAME, s_msg, &len);
	int rc;

	CU_ASSERT_FATAL(off < len);
	obj[off] ^= 0x10;
	rc = rr_seal_open(k, S_NAME, obj, len, &plain, why, cap);
	CU_ASSERT_EQUAL(plain, 0);
	/* A failed open leaves no plaintext behind. */
	CU_ASSERT_PTR_NULL(memmem(obj, len, "PLAINTEXT", 9));
	free(obj);
	rr_seal_key_destroy(k);
	return rc;
}

static void test_seal_flipped_byte_anywhere_does_not_open(void)
{
	char why[300];
	size_t len = strlen(s_msg) + RR_SEAL_OVERHEAD;

	/* magic: not a sealed object at all */
	CU_ASSERT_EQUAL(s_open_flipped(0, why, sizeof(why)), RR_EKEY);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not encrypted"));
	/* version */
	CU_ASSERT_EQUAL(s_open_flipped(RR_SEAL_MAGIC_LEN, why, sizeof(why)), RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "unknown format"));
	/* key id: reads as another key */
	CU_ASSERT_EQUAL(s_open_flipped(RR_SEAL_MAGIC_LEN + 3, why, sizeof(why)), RR_EKEY);
	/* nonce, ciphertext (first, middle, last byte) and tag (first, last byte) */
	size_t offs[] = { RR_SEAL_HEADER_LEN - RR_SEAL_NONCE_LEN, RR_SEAL_HEADER_LEN - 1,
			  RR_SEAL_HEADER_LEN, RR_SEAL_HEADER_LEN + 20,
			  len - RR_SEAL_TAG_LEN - 1, len - RR_SEAL_TAG_LEN, len - 1 };
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		CU_ASSERT_EQUAL(s_open_flipped(offs[i], why, sizeof(why)), RR_ECORRUPT);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, "tag mismatch"));
	}
}

static void test_seal_truncated_object_does_not_open(void)
{
	struct rr_seal_key *k = s_key(S_HEX_A);
	size_t len, plain;
	unsigned char *obj = s_sealed(k, S_NAME, s_msg, &len);
	char why[300];

	for (size_t cut = 0; cut < len; cut++) {
		unsigned char *copy = malloc(cut ? cut : 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
		memcpy(copy, obj, cut);
		/* Cut inside the magic too: damage, not "written without a key" (that was said,
		 * and a manifest cut to a few bytes read as a missing key, exit 125). */
		CU_ASSERT_EQUAL(rr_seal_open(k, S_NAME, copy, cut, &plain, why, sizeof(why)),
				RR_ECORRUPT);
		free(copy);
	}
	/* A short object that is not the magic's start is a clear one. */
	CU_ASSERT_EQUAL(rr_seal_open(k, S_NAME, (unsigned char *)"{}", 2, &plain, why,
				     sizeof(why)), RR_EKEY);
	/* One byte more is no better. */
	unsigned char *longer = malloc(len + 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(longer);
	memcpy(longer, obj, len);
	longer[len] = 0;
	CU_ASSERT_EQUAL(rr_seal_open(k, S_NAME, longer, len + 1, &plain, why, sizeof(why)),
			RR_ECORRUPT);
	free(longer);
	free(obj);
	rr_seal_key_destroy(k);
}

static void test_seal_object_moved_to_another_name_does_not_open(void)
{
	struct rr_seal_key *k = s_key(S_HEX_A);
	size_t len, plain;
	unsigned char *obj = s_sealed(k, S_NAME, s_msg, &len);
	char why[300];

	CU_ASSERT_EQUAL(rr_seal_open(k, "run/checkpoints/step-2/manifest.json", obj, len, &plain,
				     why, sizeof(why)), RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "another name"));
	free(obj);
	obj = s_sealed(k, S_NAME, s_msg, &len);
	CU_ASSERT_EQUAL(rr_seal_open(k, "", obj, len, &plain, why, sizeof(why)), RR_ECORRUPT);
	free(obj);
	rr_seal_key_destroy(k);
}

static void test_seal_plain_object_is_refused_as_not_encrypted(void)
{
	struct rr_seal_key *k = s_key(S_HEX_A);
	unsigned char obj[sizeof(s_msg)];
	size_t plain;
	char why[300];

	memcpy(obj, s_msg, sizeof(s_msg));
	CU_ASSERT_FALSE(rr_seal_is_sealed(obj, sizeof(obj)));
	CU_ASSERT_EQUAL(rr_seal_open(k, S_NAME, obj, sizeof(obj), &plain, why, sizeof(why)),
			RR_EKEY);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not encrypted"));
	rr_seal_key_destroy(k);
}

static void test_seal_address_is_keyed_and_deterministic(void)
{
	struct rr_seal_key *a = s_key(S_HEX_A), *a2 = s_key(S_HEX_A "\n"), *b = s_key(S_HEX_B);
	char x1[65], x2[65], y[65], plain[65], other[65];
	static const char data[] = "the same tensor bytes";

	CU_ASSERT_EQUAL(rr_seal_address(a, data, sizeof(data), x1), 0);
	CU_ASSERT_EQUAL(rr_seal_address(a2, data, sizeof(data), x2), 0);
	CU_ASSERT_EQUAL(rr_seal_address(b, data, sizeof(data), y), 0);
	CU_ASSERT_EQUAL(rr_seal_address(a, data, sizeof(data) - 1, other), 0);
	rr_sha256_hex(data, sizeof(data), plain);
	/* HMAC-SHA256(HMAC-SHA256(key, "resume-run chunk address"), data), from Python. */
	CU_ASSERT_STRING_EQUAL(x1, "e74188087b367e5aea9af3360efa3753d352567f80c5d3d85cee1343d0946201");
	CU_ASSERT_STRING_EQUAL(x1, x2);          /* same key, same bytes: dedup works */
	CU_ASSERT_STRING_NOT_EQUAL(x1, y);       /* another key names it otherwise */
	CU_ASSERT_STRING_NOT_EQUAL(x1, plain);   /* not the guessable SHA-256 */
	CU_ASSERT_STRING_NOT_EQUAL(x1, other);
	rr_seal_key_destroy(a);
	rr_seal_key_destroy(a2);
	rr_seal_key_destroy(b);
}

/* rr_seal_key_parse on text; returns its code and leaves the reason in why. */
static int s_parse(const char *text, size_t len, char *why, size_t cap)
{
	struct rr_seal_key *k = (struct rr_seal_key *)1;
	int rc = rr_seal_key_parse(text, len, &k, why, cap);

	if (rc)
		CU_ASSERT_PTR_NULL(k);
	rr_seal_key_destroy(k);
	return rc;
}

static void test_seal_key_text_accepts_64_hex_and_one_newline_only(void)
{
	char why[300], buf[200];

	CU_ASSERT_EQUAL(s_parse(S_HEX_A, 64, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(s_parse(S_HEX_A "\n", 65, why, sizeof(why)), 0);
	/* upper case hex is the same key */
	CU_ASSERT_EQUAL(s_parse("000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F",
				64, why, sizeof(why)), 0);
	struct {
		const char *text, *reason;
	} bad[] = {
		{ "", "0 hex digits" },
		{ "\n", "0 hex digits" },
		{ S_HEX_A "\n\n", "not a hex digit" },
		{ S_HEX_A "\r\n", "character 65 is not a hex digit" },
		{ S_HEX_A " ", "character 65 is not a hex digit" },
		{ " " S_HEX_A, "character 1 is not a hex digit" },
		{ "00010203 0405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "character 9" },
		{ "0001020304050607g8090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "character 17" },
		{ "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1", "63 hex digits" },
		{ S_HEX_A "00", "66 hex digits" },
		{ "0x0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "character 2" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		CU_ASSERT_EQUAL(s_parse(bad[i].text, strlen(bad[i].text), why, sizeof(why)),
				RR_EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, bad[i].reason));
		/* the reason never quotes key material */
		CU_ASSERT_PTR_NULL(strstr(why, "0102"));
		CU_ASSERT_PTR_NULL(strstr(why, "1e1f"));
	}
	/* A NUL inside is not a digit either (length-delimited, not a C string). */
	memcpy(buf, S_HEX_A, 64);
	buf[10] = '\0';
	CU_ASSERT_EQUAL(s_parse(buf, 64, why, sizeof(why)), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "character 11"));
}

static char *s_write_temp(const char *content, size_t len, mode_t mode)
{
	char tmpl[] = "/tmp/rr_seal_key_XXXXXX";
	int fd = mkstemp(tmpl);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(write(fd, content, len) == (ssize_t)len);
	CU_ASSERT_EQUAL(fchmod(fd, mode), 0);
	close(fd);
	return strdup(tmpl);
}

static void test_seal_key_file_loads_and_reports_loose_modes(void)
{
	struct rr_seal_key *k = NULL;
	char *p600 = s_write_temp(S_HEX_A "\n", 65, 0600), *p644 = s_write_temp(S_HEX_A, 64, 0644);
	char id_text[17], id_file[17], why[300];
	struct rr_seal_key *direct = s_key(S_HEX_A);
	int loose = -1;

	CU_ASSERT_EQUAL(rr_seal_key_load_file(p600, &k, &loose, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(loose, 0);
	rr_seal_key_id_hex(k, id_file);
	rr_seal_key_id_hex(direct, id_text);
	CU_ASSERT_STRING_EQUAL(id_file, id_text);
	rr_seal_key_destroy(k);
	k = NULL;
	CU_ASSERT_EQUAL(rr_seal_key_load_file(p644, &k, &loose, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(loose, 1);
	rr_seal_key_destroy(k);
	rr_seal_key_destroy(direct);
	unlink(p600);
	unlink(p644);
	free(p600);
	free(p644);
}

static void test_seal_key_file_problems_are_named(void)
{
	struct rr_seal_key *k = NULL;
	char big[300], why[300];
	int loose;

	CU_ASSERT_EQUAL(rr_seal_key_load_file("/nonexistent/rr-key", &k, &loose, why, sizeof(why)),
			RR_ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "cannot open"));
	CU_ASSERT_EQUAL(rr_seal_key_load_file("/tmp", &k, &loose, why, sizeof(why)), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a regular file"));
	char fifo[] = "/tmp/rr_seal_fifo_XXXXXX";
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(fifo));
	char fifo_path[64];
	snprintf(fifo_path, sizeof(fifo_path), "%s/key", fifo);
	CU_ASSERT_EQUAL_FATAL(mkfifo(fifo_path, 0600), 0);
	CU_ASSERT_EQUAL(rr_seal_key_load_file(fifo_path, &k, &loose, why, sizeof(why)), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a regular file"));
	unlink(fifo_path);
	rmdir(fifo);
	memset(big, 'a', sizeof(big));
	char *p = s_write_temp(big, sizeof(big), 0600);
	CU_ASSERT_EQUAL(rr_seal_key_load_file(p, &k, &loose, why, sizeof(why)), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "longer than a key"));
	CU_ASSERT_PTR_NULL(strstr(why, "aaaa"));
	CU_ASSERT_PTR_NULL(k);
	unlink(p);
	free(p);
	p = s_write_temp(S_HEX_A " \n", 66, 0600);
	CU_ASSERT_EQUAL(rr_seal_key_load_file(p, &k, &loose, why, sizeof(why)), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "character 65"));
	unlink(p);
	free(p);
}

static CU_TestInfo s_tests[] = {
	{ "seal_round_trip_gives_back_the_bytes", test_seal_round_trip_gives_back_the_bytes },
	{ "seal_empty_object_round_trips", test_seal_empty_object_round_trips },
	{ "seal_uses_a_fresh_nonce_per_object", test_seal_uses_a_fresh_nonce_per_object },
	{ "seal_wrong_key_is_a_key_error_naming_both_ids",
	  test_seal_wrong_key_is_a_key_error_naming_both_ids },
	{ "seal_key_id_is_first_bytes_of_hmac_of_label",
	  test_seal_key_id_is_first_bytes_of_hmac_of_label },
	{ "seal_opens_an_object_sealed_by_another_implementation",
	  test_seal_opens_an_object_sealed_by_another_implementation },
	{ "seal_flipped_byte_anywhere_does_not_open", test_seal_flipped_byte_anywhere_does_not_open },
	{ "seal_truncated_object_does_not_open", test_seal_truncated_object_does_not_open },
	{ "seal_object_moved_to_another_name_does_not_open",
	  test_seal_object_moved_to_another_name_does_not_open },
	{ "seal_plain_object_is_refused_as_not_encrypted",
	  test_seal_plain_object_is_refused_as_not_encrypted },
	{ "seal_address_is_keyed_and_deterministic", test_seal_address_is_keyed_and_deterministic },
	{ "seal_key_text_accepts_64_hex_and_one_newline_only",
	  test_seal_key_text_accepts_64_hex_and_one_newline_only },
	{ "seal_key_file_loads_and_reports_loose_modes",
	  test_seal_key_file_loads_and_reports_loose_modes },
	{ "seal_key_file_problems_are_named", test_seal_key_file_problems_are_named },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("seal", s_tests)
