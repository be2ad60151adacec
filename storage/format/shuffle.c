/* Byte shuffle by element width (docs/how-it-works.md, "What is stored"): plane b holds byte b
 * of every element. A portable path and an AVX2 path picked at run time per call,
 * bit-identical. The AVX2 functions carry their own target attribute, so the file builds with
 * the project's plain flags. Each SIMD kernel does 16 or 32 elements per step as a small
 * byte-matrix transpose (pack or pshufb to group a register's bytes by plane, then unpacks
 * across registers) and hands the tail to the portable loop. The run-time choice is "avx2"
 * alone: these kernels need nothing else. */
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define S_HAVE_X86 1
#else
#define S_HAVE_X86 0
#endif

#include "rr/cpu.h"
#include "shuffle.h"

/* ---- portable: elements [i, n) of a run of n ---- */

static void s_shuffle_portable(const uint8_t *src, size_t i, size_t n, unsigned width,
			       uint8_t *dst)
{
	switch (width) {
	case 2:
		for (; i < n; i++) {
			dst[i] = src[2 * i];
			dst[n + i] = src[2 * i + 1];
		}
		break;
	case 4:
		for (; i < n; i++) {
			dst[i] = src[4 * i];
			dst[n + i] = src[4 * i + 1];
			dst[2 * n + i] = src[4 * i + 2];
			dst[3 * n + i] = src[4 * i + 3];
		}
		break;
	case 8:
		for (; i < n; i++)
			for (unsigned b = 0; b < 8; b++)
				dst[b * n + i] = src[8 * i + b];
		break;
	default:
		for (; i < n; i++)
			for (unsigned b = 0; b < width; b++)
				dst[b * n + i] = src[i * width + b];
		break;
	}
}

static void s_unshuffle_portable(const uint8_t *src, size_t i, size_t n, unsigned width,
				 uint8_t *dst)
{
	switch (width) {
	case 2:
		for (; i < n; i++) {
			dst[2 * i] = src[i];
			dst[2 * i + 1] = src[n + i];
		}
		break;
	case 4:
		for (; i < n; i++) {
			dst[4 * i] = src[i];
			dst[4 * i + 1] = src[n + i];
			dst[4 * i + 2] = src[2 * n + i];
			dst[4 * i + 3] = src[3 * n + i];
		}
		break;
	case 8:
		for (; i < n; i++)
			for (unsigned b = 0; b < 8; b++)
				dst[8 * i + b] = src[b * n + i];
		break;
	default:
		for (; i < n; i++)
			for (unsigned b = 0; b < width; b++)
				dst[i * width + b] = src[b * n + i];
		break;
	}
}

/* ---- AVX2 ---- */

#if S_HAVE_X86
#define S_TARGET __attribute__((target("avx2")))
#define S_LOAD128(p) _mm_loadu_si128((const __m128i_u *)(p))
#define S_STORE128(p, v) _mm_storeu_si128((__m128i_u *)(p), (v))
#define S_LOAD256(p) _mm256_loadu_si256((const __m256i_u *)(p))
#define S_STORE256(p, v) _mm256_storeu_si256((__m256i_u *)(p), (v))

S_TARGET static void s_shuffle2_avx2(const uint8_t *src, size_t n, uint8_t *dst)
{
	/* Low bytes: mask and pack; high bytes: shift and pack. packus works per 128-bit lane,
	 * leaving the quarters in the order 0-7 16-23 8-15 24-31, which one permute fixes. */
	const __m256i low = _mm256_set1_epi16(0xff);
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m256i a = S_LOAD256(src + 2 * i);
		__m256i b = S_LOAD256(src + 2 * i + 32);
		__m256i lo = _mm256_packus_epi16(_mm256_and_si256(a, low), _mm256_and_si256(b, low));
		__m256i hi = _mm256_packus_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8));
		S_STORE256(dst + i, _mm256_permute4x64_epi64(lo, 0xd8));
		S_STORE256(dst + n + i, _mm256_permute4x64_epi64(hi, 0xd8));
	}
	s_shuffle_portable(src, i, n, 2, dst);
}

S_TARGET static void s_unshuffle2_avx2(const uint8_t *src, size_t n, uint8_t *dst)
{
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m256i lo = S_LOAD256(src + i);
		__m256i hi = S_LOAD256(src + n + i);
		__m256i a = _mm256_unpacklo_epi8(lo, hi); /* 0-7 | 16-23 */
		__m256i b = _mm256_unpackhi_epi8(lo, hi); /* 8-15 | 24-31 */
		S_STORE256(dst + 2 * i, _mm256_permute2x128_si256(a, b, 0x20));
		S_STORE256(dst + 2 * i + 32, _mm256_permute2x128_si256(a, b, 0x31));
	}
	s_unshuffle_portable(src, i, n, 2, dst);
}

S_TARGET static void s_shuffle4_avx2(const uint8_t *src, size_t n, uint8_t *dst)
{
	/* Per lane of 4 elements: plane 0 of them, plane 1, plane 2, plane 3 (one dword each). */
	const __m256i split = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
					       0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
	const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		const uint8_t *p = src + 4 * i;
		__m256i v0 = _mm256_shuffle_epi8(S_LOAD256(p), split);      /* e0-3   | e4-7   */
		__m256i v1 = _mm256_shuffle_epi8(S_LOAD256(p + 32), split); /* e8-11  | e12-15 */
		__m256i v2 = _mm256_shuffle_epi8(S_LOAD256(p + 64), split); /* e16-19 | e20-23 */
		__m256i v3 = _mm256_shuffle_epi8(S_LOAD256(p + 96), split); /* e24-27 | e28-31 */
		__m256i a = _mm256_unpacklo_epi32(v0, v1); /* planes 0,1 */
		__m256i b = _mm256_unpackhi_epi32(v0, v1); /* planes 2,3 */
		__m256i c = _mm256_unpacklo_epi32(v2, v3);
		__m256i d = _mm256_unpackhi_epi32(v2, v3);
		/* Each result holds one plane of all 32 elements, dwords in the order
		 * e0-3 e8-11 e16-19 e24-27 | e4-7 e12-15 e20-23 e28-31. */
		S_STORE256(dst + i, _mm256_permutevar8x32_epi32(_mm256_unpacklo_epi64(a, c), order));
		S_STORE256(dst + n + i,
			   _mm256_permutevar8x32_epi32(_mm256_unpackhi_epi64(a, c), order));
		S_STORE256(dst + 2 * n + i,
			   _mm256_permutevar8x32_epi32(_mm256_unpacklo_epi64(b, d), order));
		S_STORE256(dst + 3 * n + i,
			   _mm256_permutevar8x32_epi32(_mm256_unpackhi_epi64(b, d), order));
	}
	s_shuffle_portable(src, i, n, 4, dst);
}

S_TARGET static void s_unshuffle4_avx2(const uint8_t *src, size_t n, uint8_t *dst)
{
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m256i p0 = S_LOAD256(src + i);
		__m256i p1 = S_LOAD256(src + n + i);
		__m256i p2 = S_LOAD256(src + 2 * n + i);
		__m256i p3 = S_LOAD256(src + 3 * n + i);
		__m256i a = _mm256_unpacklo_epi8(p0, p1); /* bytes 0,1 of e0-7   | e16-23 */
		__m256i b = _mm256_unpackhi_epi8(p0, p1); /* bytes 0,1 of e8-15  | e24-31 */
		__m256i c = _mm256_unpacklo_epi8(p2, p3);
		__m256i d = _mm256_unpackhi_epi8(p2, p3);
		__m256i e0 = _mm256_unpacklo_epi16(a, c); /* e0-3   | e16-19 */
		__m256i e1 = _mm256_unpackhi_epi16(a, c); /* e4-7   | e20-23 */
		__m256i e2 = _mm256_unpacklo_epi16(b, d); /* e8-11  | e24-27 */
		__m256i e3 = _mm256_unpackhi_epi16(b, d); /* e12-15 | e28-31 */
		uint8_t *q = dst + 4 * i;
		S_STORE256(q, _mm256_permute2x128_si256(e0, e1, 0x20));
		S_STORE256(q + 32, _mm256_permute2x128_si256(e2, e3, 0x20));
		S_STORE256(q + 64, _mm256_permute2x128_si256(e0, e1, 0x31));
		S_STORE256(q + 96, _mm256_permute2x128_si256(e2, e3, 0x31));
	}
	s_unshuffle_portable(src, i, n, 4, dst);
}

S_TARGET static void s_shuffle8_avx2(const uint8_t *src, size_t n, uint8_t *dst)
{
	/* Two elements per register: word b = byte b of both. */
	const __m128i split = _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		const uint8_t *p = src + 8 * i;
		__m128i x[8], y[8], z[8];
		for (int j = 0; j < 8; j++)
			x[j] = _mm_shuffle_epi8(S_LOAD128(p + 16 * j), split); /* e2j, e2j+1 */
		for (int j = 0; j < 4; j++) {
			y[2 * j] = _mm_unpacklo_epi16(x[2 * j], x[2 * j + 1]);     /* planes 0-3 */
			y[2 * j + 1] = _mm_unpackhi_epi16(x[2 * j], x[2 * j + 1]); /* planes 4-7 */
		}
		/* y[0], y[1]: e0-3; y[2], y[3]: e4-7; y[4], y[5]: e8-11; y[6], y[7]: e12-15. */
		for (int h = 0; h < 2; h++) {
			z[4 * h] = _mm_unpacklo_epi32(y[4 * h], y[4 * h + 2]);     /* planes 0,1 */
			z[4 * h + 1] = _mm_unpackhi_epi32(y[4 * h], y[4 * h + 2]); /* planes 2,3 */
			z[4 * h + 2] = _mm_unpacklo_epi32(y[4 * h + 1], y[4 * h + 3]); /* 4,5 */
			z[4 * h + 3] = _mm_unpackhi_epi32(y[4 * h + 1], y[4 * h + 3]); /* 6,7 */
		}
		for (int j = 0; j < 4; j++) {
			S_STORE128(dst + (size_t)(2 * j) * n + i, _mm_unpacklo_epi64(z[j], z[4 + j]));
			S_STORE128(dst + (size_t)(2 * j + 1) * n + i,
				   _mm_unpackhi_epi64(z[j], z[4 + j]));
		}
	}
	s_shuffle_portable(src, i, n, 8, dst);
}

S_TARGET static void s_unshuffle8_avx2(const uint8_t *src, size_t n, uint8_t *dst)
{
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m128i p[8], a[8], b[8];
		for (int j = 0; j < 8; j++)
			p[j] = S_LOAD128(src + (size_t)j * n + i);
		for (int j = 0; j < 4; j++) { /* bytes 2j, 2j+1 of e0-7 and e8-15 */
			a[j] = _mm_unpacklo_epi8(p[2 * j], p[2 * j + 1]);
			a[4 + j] = _mm_unpackhi_epi8(p[2 * j], p[2 * j + 1]);
		}
		for (int h = 0; h < 2; h++) { /* bytes 0-3 and 4-7 of e0-3, e4-7 (+8h) */
			b[4 * h] = _mm_unpacklo_epi16(a[4 * h], a[4 * h + 1]);
			b[4 * h + 1] = _mm_unpackhi_epi16(a[4 * h], a[4 * h + 1]);
			b[4 * h + 2] = _mm_unpacklo_epi16(a[4 * h + 2], a[4 * h + 3]);
			b[4 * h + 3] = _mm_unpackhi_epi16(a[4 * h + 2], a[4 * h + 3]);
		}
		uint8_t *q = dst + 8 * i;
		for (int h = 0; h < 2; h++) {
			for (int j = 0; j < 2; j++) {
				__m128i lo = b[4 * h + j], hi = b[4 * h + 2 + j];
				S_STORE128(q + 64 * h + 32 * j, _mm_unpacklo_epi32(lo, hi));
				S_STORE128(q + 64 * h + 32 * j + 16, _mm_unpackhi_epi32(lo, hi));
			}
		}
	}
	s_unshuffle_portable(src, i, n, 8, dst);
}
#endif /* S_HAVE_X86 */

/* ---- dispatch ---- */

/* Set by tests (rr_shuffle_force_portable); atomic so worker threads may read it. */
static atomic_int s_force_portable;
static int s_use_simd(void)
{
	const unsigned need = RR_CPU_AVX2;
	return !atomic_load_explicit(&s_force_portable, memory_order_relaxed) &&
	       (rr_cpu_features() & need) == need;
}

const char *rr_shuffle_force_portable(int on)
{
	atomic_store_explicit(&s_force_portable, on ? 1 : 0, memory_order_relaxed);
	return s_use_simd() ? "avx2" : "portable";
}

void rr_shuffle(const void *src, size_t n, unsigned width, uint8_t *dst)
{
	if (n == 0)
		return;
	if (width == 1) {
		memcpy(dst, src, n);
		return;
	}
#if S_HAVE_X86
	if (s_use_simd()) {
		switch (width) {
		case 2: s_shuffle2_avx2(src, n, dst); return;
		case 4: s_shuffle4_avx2(src, n, dst); return;
		case 8: s_shuffle8_avx2(src, n, dst); return;
		}
	}
#endif
	s_shuffle_portable(src, 0, n, width, dst);
}

void rr_unshuffle(const uint8_t *src, size_t n, unsigned width, void *dst)
{
	if (n == 0)
		return;
	if (width == 1) {
		memcpy(dst, src, n);
		return;
	}
#if S_HAVE_X86
	if (s_use_simd()) {
		switch (width) {
		case 2: s_unshuffle2_avx2(src, n, dst); return;
		case 4: s_unshuffle4_avx2(src, n, dst); return;
		case 8: s_unshuffle8_avx2(src, n, dst); return;
		}
	}
#endif
	s_unshuffle_portable(src, 0, n, width, dst);
}
