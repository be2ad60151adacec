/* SHA-256 (FIPS 180-4) on the x86 SHA extensions, for CPUs that have them (AMD Zen, Intel
 * Ice Lake, Sapphire Rapids and later); hash.c uses OpenSSL's on the others. Its reason to
 * exist is start-up: OpenSSL 3 loads its configuration and builds its provider tables on
 * the first digest, 3 ms of every agent run that hashes anything (docs/performance.md), and
 * the digest itself runs at the same speed either way (the same instructions).
 *
 * The round structure follows FIPS 180-4 §6.2.2 and the instructions' use Intel's "Intel SHA
 * Extensions" paper (2013): the state is kept as two vectors, ABEF and CDGH; SHA256RNDS2
 * does two rounds from the message words plus constants in its third operand's low half;
 * SHA256MSG1 and SHA256MSG2 compute the message schedule four words at a time. */
#include "sha256_ni.h"

#if RR_HAVE_SHA_NI
#include <immintrin.h>
#include <string.h>

#define S_TARGET __attribute__((target("sha,sse4.1,ssse3")))

static const uint32_t s_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

/* Hashes nblocks 64-byte blocks into state[8] (A..H). */
S_TARGET static void s_blocks(uint32_t state[8], const uint8_t *p, size_t nblocks)
{
	/* The message is big-endian: swap the bytes of each 32-bit word. */
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
	__m128i abef, cdgh, t;

	/* A B C D and E F G H (lane 0 first) to ABEF and CDGH (lane 3 first, as the
	 * instructions want them). */
	t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[0]), 0xB1); /* B A D C */
	cdgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[4]), 0x1B); /* H G F E */
	abef = _mm_alignr_epi8(t, cdgh, 8);      /* F E B A */
	cdgh = _mm_blend_epi16(cdgh, t, 0xF0);   /* H G D C */

	for (; nblocks; nblocks--, p += 64) {
		const __m128i abef0 = abef, cdgh0 = cdgh;
		__m128i w[4]; /* the last 16 message words, four per vector, group g in w[g % 4] */

#if defined(__clang__)
#pragma clang loop unroll(full)
#else
#pragma GCC unroll 16
#endif
		for (int g = 0; g < 16; g++) {
			__m128i m;
			if (g < 4) {
				m = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)),
						     bswap);
			} else {
				/* W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16], four at once:
				 * MSG1 adds σ0 of the next four to the oldest four, the aligned
				 * pair gives W[t-7..t-4], MSG2 adds σ1 in order. */
				m = _mm_sha256msg1_epu32(w[g % 4], w[(g + 1) % 4]);
				m = _mm_add_epi32(m, _mm_alignr_epi8(w[(g + 3) % 4], w[(g + 2) % 4], 4));
				m = _mm_sha256msg2_epu32(m, w[(g + 3) % 4]);
			}
			w[g % 4] = m;
			m = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)&s_k[4 * g]));
			cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
			abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(m, 0x0E));
		}
		abef = _mm_add_epi32(abef, abef0);
		cdgh = _mm_add_epi32(cdgh, cdgh0);
	}

	/* Back to A B C D and E F G H. */
	t = _mm_shuffle_epi32(abef, 0x1B);       /* A B E F */
	cdgh = _mm_shuffle_epi32(cdgh, 0xB1);    /* G H C D */
	_mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(t, cdgh, 0xF0));
	_mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(cdgh, t, 8));
}

void rr_sha256_ni(const void *data, size_t len, uint8_t out[32])
{
	uint32_t st[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	const uint8_t *p = data;
	size_t whole = len / 64, rest = len % 64;
	uint8_t tail[128] = { 0 };
	uint64_t bits = (uint64_t)len * 8;
	size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;

	if (whole)
		s_blocks(st, p, whole);
	/* The padding (§5.1.1): a one bit, zeros, the length in bits, big-endian. */
	if (rest)
		memcpy(tail, p + whole * 64, rest);
	tail[rest] = 0x80;
	for (int i = 0; i < 8; i++)
		tail[tail_len - 1 - i] = (uint8_t)(bits >> (8 * i));
	s_blocks(st, tail, tail_len / 64);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(st[i] >> 24);
		out[4 * i + 1] = (uint8_t)(st[i] >> 16);
		out[4 * i + 2] = (uint8_t)(st[i] >> 8);
		out[4 * i + 3] = (uint8_t)st[i];
	}
}

#endif /* RR_HAVE_SHA_NI */
