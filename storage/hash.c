#include <string.h>

#include <openssl/evp.h>

#include "rr/hash.h"

void rr_sha256(const void *data, size_t len, uint8_t out[RR_SHA256_LEN])
{
	unsigned int n = RR_SHA256_LEN;
	/* EVP_Digest picks the SHA-NI / AVX2 implementation the CPU offers. */
	EVP_Digest(data, len, out, &n, EVP_sha256(), NULL);
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

int rr_is_sha256_hex(const char *s)
{
	size_t i;
	for (i = 0; i < RR_SHA256_HEX_LEN; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
	}
	return s[i] == '\0';
}
