/* SHA-256 (the SHA extensions where the CPU has them, else OpenSSL's) and hex helpers for
 * content addressing. */
#ifndef RR_HASH_H
#define RR_HASH_H

#include <stddef.h>
#include <stdint.h>

#define RR_SHA256_LEN 32
#define RR_SHA256_HEX_LEN 64 /* without the NUL */

/* One-shot digest of len bytes. */
void rr_sha256(const void *data, size_t len, uint8_t out[RR_SHA256_LEN]);
/* Test hook: with on, rr_sha256 uses OpenSSL even where the CPU has the SHA extensions, so
 * that a test can compare the two; returns the one now in use, "sha-ni" or "openssl". */
const char *rr_sha256_force_openssl(int on);
/* One-shot digest written as 64 lowercase hex digits plus NUL. */
void rr_sha256_hex(const void *data, size_t len, char out[RR_SHA256_HEX_LEN + 1]);
/* XXH3-128 of len bytes as 32 lowercase hex digits (canonical, big-endian) plus NUL: a fast
 * non-cryptographic hash for noticing unchanged data (chunks are still named by sha256). */
void rr_xxh128_hex(const void *data, size_t len, char out[33]);
/* Test hook: with on, rr_xxh128_hex uses the system's libxxhash even where this build has its
 * own AVX2 form and the CPU runs it; returns the one now in use, "avx2" or "libxxhash". */
const char *rr_xxh128_force_portable(int on);
/* Returns 1 when s is exactly 32 lowercase hex digits, else 0. */
int rr_is_xxh128_hex(const char *s);

/* The value of one hex digit (either case), or -1 when c is not one. */
int rr_hex_digit(char c);
/* Writes 2*len lowercase hex digits plus NUL. */
void rr_hex_encode(const uint8_t *in, size_t len, char *out);
/* Returns 1 when s is exactly 64 lowercase hex digits, else 0. */
int rr_is_sha256_hex(const char *s);

#endif
