/* Fuzz target: sealed objects come from the store, so the opener reads bytes anyone with
 * write access to the bucket may have made. Any bytes must be refused as a key problem or as
 * damage, or open to exactly size - overhead bytes that seal and open again the same. The
 * input is also used as a plaintext (sealing it and opening must give it back, and one
 * flipped bit, at a place the input picks, must stop it opening) and as key-file text. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/seal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                      \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_sealed: %s (%s)\n", what, #cond);  \
			__builtin_trap();                                        \
		}                                                                \
	} while (0)

/* The key the corpus's valid objects were sealed with (tests/fuzz/corpus/fuzz_sealed/README). */
#define S_KEY_HEX "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define S_NAME "default/checkpoints/step-1/manifest.json"

static struct rr_seal_key *s_key(void)
{
	static struct rr_seal_key *k;
	if (!k)
		S_CHECK(rr_seal_key_parse(S_KEY_HEX, 64, &k, NULL, 0) == 0, "test key refused");
	return k;
}

static void s_open_as_object(const uint8_t *data, size_t size)
{
	unsigned char *obj = malloc(size ? size : 1), *again;
	size_t plain = 1, back = 1;
	char why[512];
	int rc;

	S_CHECK(obj != NULL, "out of memory");
	memcpy(obj, data, size);
	rc = rr_seal_open(s_key(), S_NAME, obj, size, &plain, why, sizeof(why));
	if (rc != 0) {
		S_CHECK(rc == RR_EKEY || rc == RR_ECORRUPT, "unexpected error code");
		S_CHECK(plain == 0, "a refused object reported plaintext");
		S_CHECK(memchr(why, '\0', sizeof(why)) && why[0], "no reason given");
		free(obj);
		return;
	}
	S_CHECK(size >= RR_SEAL_OVERHEAD && plain == size - RR_SEAL_OVERHEAD, "wrong length");
	again = malloc(plain + RR_SEAL_OVERHEAD);
	S_CHECK(again != NULL, "out of memory");
	S_CHECK(rr_seal(s_key(), S_NAME, obj, plain, again) == 0, "reseal failed");
	S_CHECK(rr_seal_open(s_key(), S_NAME, again, plain + RR_SEAL_OVERHEAD, &back, NULL, 0) == 0,
		"a resealed object does not open");
	S_CHECK(back == plain && memcmp(again, obj, plain) == 0, "reseal changed the bytes");
	free(again);
	free(obj);
}

static void s_seal_as_plaintext(const uint8_t *data, size_t size)
{
	size_t len = size + RR_SEAL_OVERHEAD, plain = 0, at;
	unsigned char *obj = malloc(len);
	int rc;

	S_CHECK(obj != NULL, "out of memory");
	S_CHECK(rr_seal(s_key(), S_NAME, data, size, obj) == 0, "seal failed");
	at = size >= 2 ? ((size_t)data[0] << 8 | data[1]) % len : 0;
	unsigned char bit = (unsigned char)(1u << (size ? data[size - 1] % 8 : 0));
	obj[at] ^= bit;
	rc = rr_seal_open(s_key(), S_NAME, obj, len, &plain, NULL, 0);
	S_CHECK(rc == RR_EKEY || rc == RR_ECORRUPT, "a flipped bit still opened");
	obj[at] ^= bit;
	/* The failed open may have overwritten the buffer: seal afresh. */
	S_CHECK(rr_seal(s_key(), S_NAME, data, size, obj) == 0, "seal failed");
	S_CHECK(rr_seal_open(s_key(), S_NAME, obj, len, &plain, NULL, 0) == 0, "does not open");
	S_CHECK(plain == size && (size == 0 || memcmp(obj, data, size) == 0), "round trip");
	free(obj);
}

static void s_parse_as_key_text(const uint8_t *data, size_t size)
{
	struct rr_seal_key *k = NULL;
	char why[300];
	int rc = rr_seal_key_parse((const char *)data, size, &k, why, sizeof(why));

	if (rc) {
		S_CHECK(rc == RR_EINVAL && k == NULL, "a refused key left something");
		return;
	}
	S_CHECK(size == 64 || (size == 65 && data[64] == '\n'), "accepted a key of another shape");
	rr_seal_key_destroy(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1u << 20))
		return 0;
	s_open_as_object(data, size);
	s_seal_as_plaintext(data, size);
	s_parse_as_key_text(data, size);
	return 0;
}
