#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <openssl/evp.h>
#include <xxhash.h>

#include "rr/cpu.h"
#include "rr/hash.h"
#include "sha256_ni.h"
#include "xxh3_avx2.h"

static EVP_MD *s_sha256_md;
static pthread_once_t s_sha256_once = PTHREAD_ONCE_INIT;
static atomic_int s_force_openssl; /* rr_sha256_force_openssl */

static void s_sha256_fetch(void)
{
	s_sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static int s_use_ni(void)
{
	return RR_HAVE_SHA_NI && (rr_cpu_features() & RR_CPU_SHA) &&
	       !atomic_load_explicit(&s_force_openssl, memory_order_relaxed);
}

const char *rr_sha256_force_openssl(int on)
{
	atomic_store_explicit(&s_force_openssl, on ? 1 : 0, memory_order_relaxed);
	return s_use_ni() ? "sha-ni" : "openssl";
}

void rr_sha256(const void *data, size_t len, uint8_t out[RR_SHA256_LEN])
{
	unsigned int n = RR_SHA256_LEN;

#if RR_HAVE_SHA_NI
	if (s_use_ni()) {
		rr_sha256_ni(data, len, out);
		return;
	}
#endif
	/* Fetched once: EVP_sha256() makes every EVP_Digest look the algorithm up in the
	 * provider's tables again, under a lock (OpenSSL 3's "implicit fetch"), once per chunk
	 * the pipeline hashes. EVP picks the AVX2 (or ARMv8) implementation the CPU offers. */
	pthread_once(&s_sha256_once, s_sha256_fetch);
	EVP_Digest(data, len, out, &n, s_sha256_md ? s_sha256_md : EVP_sha256(), NULL);
}

void rr_hex_encode(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

void rr_sha256_hex(const void *data, size_t len, char out[RR_SHA256_HEX_LEN + 1])
{
	uint8_t d[RR_SHA256_LEN];
	rr_sha256(data, len, d);
	rr_hex_encode(d, sizeof(d), out);
}

static atomic_int s_xxh_force_portable; /* rr_xxh128_force_portable */

static int s_xxh_avx2(void)
{
	return RR_HAVE_XXH3_AVX2 && (rr_cpu_features() & RR_CPU_AVX2) &&
	       !atomic_load_explicit(&s_xxh_force_portable, memory_order_relaxed);
}

const char *rr_xxh128_force_portable(int on)
{
	atomic_store_explicit(&s_xxh_force_portable, on ? 1 : 0, memory_order_relaxed);
	return s_xxh_avx2() ? "avx2" : "libxxhash";
}

void rr_xxh128_hex(const void *data, size_t len, char out[33])
{
	XXH128_canonical_t c;
	XXH128_hash_t h;

#if RR_HAVE_XXH3_AVX2
	if (s_xxh_avx2())
		rr_xxh3_128_avx2(data, len, &h.low64, &h.high64);
	else
#endif
		h = XXH3_128bits(data, len);
	XXH128_canonicalFromHash(&c, h);
	rr_hex_encode(c.digest, sizeof(c.digest), out);
}

static int s_is_hex(const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
	}
	return s[i] == '\0';
}

int rr_is_sha256_hex(const char *s)
{
	return s_is_hex(s, RR_SHA256_HEX_LEN);
}

int rr_is_xxh128_hex(const char *s)
{
	return s_is_hex(s, 32);
}

int rr_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
