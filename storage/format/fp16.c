/* F32 <-> scaled FP16 and F32 <-> BF16 with byte-shuffled output, and the statistics that
 * choose between them (docs/how-it-works.md, "What is stored"). Every kernel has a portable
 * path and an AVX2/F16C path, picked at run time per call; the two are bit-identical
 * (tests/unit/test_fp16.c checks all 2^32 F32 patterns). The SIMD functions carry their own
 * target attribute, so the file builds with the project's plain flags and runs on any x86_64.
 * Why the SIMD path matches the portable one bit for bit: - the scale multiply is one IEEE F32
 * multiply by an exact power of two on both paths, under the default MXCSR (round to nearest,
 * no FTZ/DAZ: hence the -ffast-math check); - the portable FP16 rounding reproduces VCVTPS2PH
 * with imm8 = 0x08 (round to nearest even from the immediate, subnormal halves, Inf from 65520
 * up, NaN keeps sign and the top 10 payload bits with the quiet bit set); - the portable
 * widening quiets NaNs as VCVTPH2PS (and the following multiply) do. */
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define S_HAVE_X86 1
#else
#define S_HAVE_X86 0
#endif

#include "rr/cpu.h"
#include "rr/fp16.h"

#ifdef __FAST_MATH__
#error "storage/format/fp16.c needs IEEE arithmetic: -ffast-math links code that sets FTZ/DAZ"
#endif

#define S_ABS 0x7fffffffu
#define S_INF 0x7f800000u
#define S_CANON_NAN 0x7fc00000u

/* ---- portable scalar helpers ---- */

static inline uint32_t s_load32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void s_store32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static inline float s_f32(uint32_t bits)
{
	float f;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

static inline uint32_t s_bits(float f)
{
	uint32_t b;
	memcpy(&b, &f, sizeof(b));
	return b;
}

/* 2^k for k in [-126, 127], built from its bits so it is exact. */
static inline uint32_t s_pow2_bits(int k)
{
	return (uint32_t)(k + 127) << 23;
}

/* F32 bits -> FP16 bits, round to nearest even, as VCVTPS2PH does (after F. Giesen's
 * float_to_half_fast3_rtne). All three cases are computed and selected with masks, so the
 * function has no branches and the compiler can vectorize the loops that call it (GCC 12
 * at -O2 does, with SSE2): twice as fast as the branchy form, which the exhaustive tests
 * (three passes over 2^32 values) feel. */
static inline uint16_t s_half_from_bits(uint32_t x)
{
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t a = x & S_ABS;
	/* |x| < 2^31, so signed compares give the same answers; SSE2 has only those. */
	int32_t sa = (int32_t)a;
	uint32_t sub = 0u - (uint32_t)(sa < 0x38800000);  /* below 2^-14 */
	uint32_t big = 0u - (uint32_t)(sa >= 0x47800000); /* 2^16 and up, Inf, NaN */
	uint32_t nan = 0u - (uint32_t)(sa > 0x7f800000);
	/* Normal half: rebias the exponent (127 - 15 = 112) and round the 13 dropped bits to
	 * even; a carry out of the mantissa bumps the exponent, up to Inf from 65520 on. */
	uint32_t hn = (a - 0x38000000u + 0x0fffu + ((a >> 13) & 1u)) >> 13;
	/* Subnormal half or zero: 0.5 + |x| puts |x| in units of 2^-24 (the least subnormal
	 * half) into the low mantissa bits, and the F32 add rounds it to nearest even, one
	 * rounding as in the hardware; just below 2^-14 it carries into 0x400 correctly. */
	uint32_t hs = s_bits(s_f32(a & sub) + 0.5f) - 0x3f000000u;
	/* Inf, or NaN with the quiet bit set and the top 10 payload bits. */
	uint32_t hi = 0x7c00u | (nan & (0x200u | ((a >> 13) & 0x3ffu)));
	uint32_t h = (hs & sub) | (hn & ~sub);

	h = (hi & big) | (h & ~big);
	return (uint16_t)(sign | h);
}

/* FP16 bits -> F32 bits, exact; NaNs come out quiet (as VCVTPH2PS gives them). */
static inline uint32_t s_bits_from_half(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t o = (uint32_t)(h & 0x7fffu) << 13;
	uint32_t e = o & 0x0f800000u;

	o += 0x38000000u; /* rebias: 127 - 15 */
	if (e == 0x0f800000u) { /* Inf or NaN: exponent all ones */
		o += 0x38000000u;
		if (o != S_INF)
			o |= 0x400000u;
	} else if (e == 0) { /* zero or subnormal: m * 2^-24 = (1 + m/1024) * 2^-14 - 2^-14 */
		o = s_bits(s_f32(o + 0x00800000u) - s_f32(0x38800000u));
	}
	return sign | o;
}

/* F32 bits -> BF16 bits: NaN kept quiet, round to nearest even, finite never to Inf.
 * Branch-free like s_half_from_bits. */
static inline uint16_t s_bf16_from_bits(uint32_t x)
{
	uint32_t a = x & S_ABS;
	uint32_t nan = 0u - (uint32_t)((int32_t)a > 0x7f800000); /* signed: see above */
	uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;

	/* Finite but rounds to Inf: keep 0x7f7f. */
	r -= (uint32_t)(((int32_t)a >= 0x7f7f8000) & ((int32_t)a < 0x7f800000));
	return (uint16_t)((nan & ((x >> 16) | 0x0040u)) | (~nan & r));
}

/* Encoders convert S_CHUNK values at a time into small arrays and copy the two byte planes
 * out with memcpy: loops of a fixed count without calls are what compilers vectorize. */
#define S_CHUNK 16

/* The portable kernels work on elements [i, n) of a run of n, so the SIMD kernels can
 * hand them their tails. */
static void s_to_fp16_portable(const uint8_t *src, size_t i, size_t n, int k, uint8_t *dst)
{
	float scale = s_f32(s_pow2_bits(k));
	float f[S_CHUNK];
	uint32_t h[S_CHUNK];
	uint8_t lo[S_CHUNK], hi[S_CHUNK];

	for (; i + S_CHUNK <= n; i += S_CHUNK) {
		memcpy(f, src + 4 * i, sizeof(f));
		for (unsigned j = 0; j < S_CHUNK; j++)
			h[j] = s_half_from_bits(s_bits(f[j] * scale));
		for (unsigned j = 0; j < S_CHUNK; j++) {
			lo[j] = (uint8_t)h[j];
			hi[j] = (uint8_t)(h[j] >> 8);
		}
		memcpy(dst + i, lo, sizeof(lo));
		memcpy(dst + n + i, hi, sizeof(hi));
	}
	for (; i < n; i++) {
		uint16_t v = s_half_from_bits(s_bits(s_f32(s_load32(src + 4 * i)) * scale));
		dst[i] = (uint8_t)v;
		dst[n + i] = (uint8_t)(v >> 8);
	}
}

static void s_from_fp16_portable(const uint8_t *src, size_t i, size_t n, int k, uint8_t *dst)
{
	float scale = s_f32(s_pow2_bits(-k));

	for (; i < n; i++) {
		uint16_t h = (uint16_t)(src[i] | (src[n + i] << 8));
		s_store32(dst + 4 * i, s_bits(s_f32(s_bits_from_half(h)) * scale));
	}
}

static void s_to_bf16_portable(const uint8_t *src, size_t i, size_t n, uint8_t *dst)
{
	uint32_t x[S_CHUNK];
	uint8_t lo[S_CHUNK], hi[S_CHUNK];

	for (; i + S_CHUNK <= n; i += S_CHUNK) {
		memcpy(x, src + 4 * i, sizeof(x));
		for (unsigned j = 0; j < S_CHUNK; j++) {
			uint16_t h = s_bf16_from_bits(x[j]);
			lo[j] = (uint8_t)h;
			hi[j] = (uint8_t)(h >> 8);
		}
		memcpy(dst + i, lo, sizeof(lo));
		memcpy(dst + n + i, hi, sizeof(hi));
	}
	for (; i < n; i++) {
		uint16_t h = s_bf16_from_bits(s_load32(src + 4 * i));
		dst[i] = (uint8_t)h;
		dst[n + i] = (uint8_t)(h >> 8);
	}
}

static void s_from_bf16_portable(const uint8_t *src, size_t i, size_t n, uint8_t *dst)
{
	for (; i < n; i++)
		s_store32(dst + 4 * i, (uint32_t)(src[i] | (src[n + i] << 8)) << 16);
}

static void s_stats_portable(struct rr_f32_stats *s, const uint8_t *src, size_t i, size_t n)
{
	uint32_t mx = s->max_abs_bits, mn = s->min_abs_bits;
	uint64_t odd = s->odd_nans;

	for (; i < n; i++) {
		uint32_t a = s_load32(src + 4 * i) & S_ABS;
		if (a < S_INF) {
			if (a > mx)
				mx = a;
			if (a && a < mn)
				mn = a;
		} else if (a > S_INF && a != S_CANON_NAN) {
			odd++;
		}
	}
	s->max_abs_bits = mx;
	s->min_abs_bits = mn;
	s->odd_nans = odd;
}

/* 1 when x (F32 bits) is finite and not an integer. From 2^23 up every F32 is an integer
 * (or Inf/NaN); below, x is one exactly when truncating it to int32 and back gives x. */
static inline uint32_t s_fraction(uint32_t x)
{
	uint32_t a = x & S_ABS;
	uint32_t small = 0u - (uint32_t)((int32_t)a < 0x4b000000); /* signed: see above */
	float f = s_f32(a & small);

	return small & (uint32_t)((float)(int32_t)f != f);
}

/* 1 when one of elements [i, n) is finite and not an integer. Branch-free within a block
 * of S_CHUNK values, so the compiler vectorizes it; it stops after the first block holding
 * a fraction, which for trained weights is the first. */
static int s_fraction_portable(const uint8_t *src, size_t i, size_t n)
{
	uint32_t x[S_CHUNK];

	for (; i + S_CHUNK <= n; i += S_CHUNK) {
		uint32_t frac = 0;
		memcpy(x, src + 4 * i, sizeof(x));
		for (unsigned j = 0; j < S_CHUNK; j++)
			frac |= s_fraction(x[j]);
		if (frac)
			return 1;
	}
	for (; i < n; i++)
		if (s_fraction(s_load32(src + 4 * i)))
			return 1;
	return 0;
}

/* ---- AVX2 + F16C kernels ---- */

#if S_HAVE_X86
#define S_TARGET __attribute__((target("avx2,f16c")))

S_TARGET static void s_to_fp16_avx2(const uint8_t *src, size_t n, int k, uint8_t *dst)
{
	const __m256 scale = _mm256_castsi256_ps(_mm256_set1_epi32((int)s_pow2_bits(k)));
	/* 8 halves -> their 8 low bytes, then their 8 high bytes. */
	const __m128i split = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		const uint8_t *p = src + 4 * i;
		__m256 f0 = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i_u *)p));
		__m256 f1 = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i_u *)(p + 32)));
		__m256 f2 = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i_u *)(p + 64)));
		__m256 f3 = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i_u *)(p + 96)));
		__m128i h0 = _mm256_cvtps_ph(_mm256_mul_ps(f0, scale),
					     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		__m128i h1 = _mm256_cvtps_ph(_mm256_mul_ps(f1, scale),
					     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		__m128i h2 = _mm256_cvtps_ph(_mm256_mul_ps(f2, scale),
					     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		__m128i h3 = _mm256_cvtps_ph(_mm256_mul_ps(f3, scale),
					     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		/* Two halves of each 256-bit register: elements 0-7 | 16-23 and 8-15 | 24-31. */
		__m256i a = _mm256_shuffle_epi8(_mm256_set_m128i(h2, h0), _mm256_set_m128i(split, split));
		__m256i b = _mm256_shuffle_epi8(_mm256_set_m128i(h3, h1), _mm256_set_m128i(split, split));
		__m256i lo = _mm256_unpacklo_epi64(a, b); /* low bytes of 0-15 | 16-31 */
		__m256i hi = _mm256_unpackhi_epi64(a, b);
		_mm256_storeu_si256((__m256i_u *)(dst + i), lo);
		_mm256_storeu_si256((__m256i_u *)(dst + n + i), hi);
	}
	for (; i + 8 <= n; i += 8) {
		__m256 f = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i_u *)(src + 4 * i)));
		__m128i h = _mm_shuffle_epi8(
			_mm256_cvtps_ph(_mm256_mul_ps(f, scale),
					_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
			split);
		_mm_storel_epi64((__m128i_u *)(dst + i), h);
		_mm_storel_epi64((__m128i_u *)(dst + n + i), _mm_unpackhi_epi64(h, h));
	}
	s_to_fp16_portable(src, i, n, k, dst);
}

S_TARGET static void s_from_fp16_avx2(const uint8_t *src, size_t n, int k, uint8_t *dst)
{
	const __m256 scale = _mm256_castsi256_ps(_mm256_set1_epi32((int)s_pow2_bits(-k)));
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m128i lo = _mm_loadu_si128((const __m128i_u *)(src + i));
		__m128i hi = _mm_loadu_si128((const __m128i_u *)(src + n + i));
		__m256 f0 = _mm256_mul_ps(_mm256_cvtph_ps(_mm_unpacklo_epi8(lo, hi)), scale);
		__m256 f1 = _mm256_mul_ps(_mm256_cvtph_ps(_mm_unpackhi_epi8(lo, hi)), scale);
		_mm256_storeu_si256((__m256i_u *)(dst + 4 * i), _mm256_castps_si256(f0));
		_mm256_storeu_si256((__m256i_u *)(dst + 4 * i + 32), _mm256_castps_si256(f1));
	}
	s_from_fp16_portable(src, i, n, k, dst);
}

/* 8 F32 -> 8 BF16 in the low halves of 32-bit lanes (see s_bf16_from_bits). */
S_TARGET static inline __m256i s_bf16x8(__m256i x)
{
	const __m256i inf = _mm256_set1_epi32((int)S_INF);
	__m256i a = _mm256_and_si256(x, _mm256_set1_epi32((int)S_ABS));
	__m256i top = _mm256_srli_epi32(x, 16);
	__m256i lsb = _mm256_and_si256(top, _mm256_set1_epi32(1));
	__m256i r = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb);
	__m256i rabs = _mm256_and_si256(_mm256_srli_epi32(r, 16), _mm256_set1_epi32(0x7fff));
	/* Finite values stop at 0x7f7f; Inf itself (where the compare gives -1) at 0x7f80. */
	__m256i limit = _mm256_sub_epi32(_mm256_set1_epi32(0x7f7f), _mm256_cmpeq_epi32(a, inf));
	__m256i sign = _mm256_and_si256(top, _mm256_set1_epi32(0x8000));
	__m256i y = _mm256_or_si256(_mm256_min_epu32(rabs, limit), sign);
	__m256i nan = _mm256_cmpgt_epi32(a, inf); /* a < 2^31, so signed compare is fine */
	__m256i qnan = _mm256_or_si256(top, _mm256_set1_epi32(0x0040));
	return _mm256_blendv_epi8(y, qnan, nan);
}

S_TARGET static void s_to_bf16_avx2(const uint8_t *src, size_t n, uint8_t *dst)
{
	/* Per 128-bit lane of the packed words a0-3 b0-3: low bytes of a0-3, high bytes of
	 * a0-3, low bytes of b0-3, high bytes of b0-3 (dwords D0-D3, lane 1: D4-D7). */
	const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15,
					       0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15);
	const __m256i order = _mm256_setr_epi32(0, 4, 2, 6, 1, 5, 3, 7);
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256i a = s_bf16x8(_mm256_loadu_si256((const __m256i_u *)(src + 4 * i)));
		__m256i b = s_bf16x8(_mm256_loadu_si256((const __m256i_u *)(src + 4 * i + 32)));
		__m256i w = _mm256_packus_epi32(a, b); /* a0-3 b0-3 | a4-7 b4-7 */
		w = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(w, split), order);
		_mm_storeu_si128((__m128i_u *)(dst + i), _mm256_castsi256_si128(w));
		_mm_storeu_si128((__m128i_u *)(dst + n + i), _mm256_extracti128_si256(w, 1));
	}
	s_to_bf16_portable(src, i, n, dst);
}

S_TARGET static void s_from_bf16_avx2(const uint8_t *src, size_t n, uint8_t *dst)
{
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m128i lo = _mm_loadu_si128((const __m128i_u *)(src + i));
		__m128i hi = _mm_loadu_si128((const __m128i_u *)(src + n + i));
		__m256i f0 = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_unpacklo_epi8(lo, hi)), 16);
		__m256i f1 = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_unpackhi_epi8(lo, hi)), 16);
		_mm256_storeu_si256((__m256i_u *)(dst + 4 * i), f0);
		_mm256_storeu_si256((__m256i_u *)(dst + 4 * i + 32), f1);
	}
	s_from_bf16_portable(src, i, n, dst);
}

/* As s_fraction_portable, 32 values a step: x has a fraction when truncating it changes
 * it; the ordered compare leaves NaN out, and Inf and values from 2^23 up truncate to
 * themselves. */
S_TARGET static int s_fraction_avx2(const uint8_t *src, size_t n)
{
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		__m256 any = _mm256_setzero_ps();
		for (unsigned j = 0; j < 4; j++) {
			const uint8_t *p = src + 4 * i + 32 * j;
			__m256 x = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i_u *)p));
			__m256 t = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
			any = _mm256_or_ps(any, _mm256_cmp_ps(t, x, _CMP_NEQ_OQ));
		}
		if (!_mm256_testz_ps(any, any))
			return 1;
	}
	return s_fraction_portable(src, i, n);
}

/* Number of NaNs in a (absolute values) other than the canonical one. */
S_TARGET static inline unsigned s_odd_nans8(__m256i a)
{
	__m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32((int)S_INF));
	__m256i canon = _mm256_cmpeq_epi32(a, _mm256_set1_epi32((int)S_CANON_NAN));
	__m256i odd = _mm256_andnot_si256(canon, nan);
	return (unsigned)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(odd)));
}

S_TARGET static void s_stats_avx2(struct rr_f32_stats *s, const uint8_t *src, size_t n)
{
	/* max: |x| + 2^23 as a signed int turns Inf and NaN negative, so a signed max skips
	 * them without a compare. min: |x| - 1 as unsigned turns 0 into the greatest value
	 * and leaves Inf/NaN at or above 0x7f7fffff (the "none" start), so an unsigned min
	 * skips zeros and non-finite values. */
	const __m256i absmask = _mm256_set1_epi32((int)S_ABS);
	const __m256i bias = _mm256_set1_epi32(0x00800000);
	const __m256i one = _mm256_set1_epi32(1);
	const __m256i inf = _mm256_set1_epi32((int)S_INF);
	__m256i mx0 = bias, mx1 = bias;
	__m256i mn0 = _mm256_set1_epi32((int)(S_INF - 1)), mn1 = mn0;
	uint64_t odd = 0;
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256i a = _mm256_and_si256(_mm256_loadu_si256((const __m256i_u *)(src + 4 * i)),
					     absmask);
		__m256i b = _mm256_and_si256(
			_mm256_loadu_si256((const __m256i_u *)(src + 4 * i + 32)), absmask);
		mx0 = _mm256_max_epi32(mx0, _mm256_add_epi32(a, bias));
		mx1 = _mm256_max_epi32(mx1, _mm256_add_epi32(b, bias));
		mn0 = _mm256_min_epu32(mn0, _mm256_sub_epi32(a, one));
		mn1 = _mm256_min_epu32(mn1, _mm256_sub_epi32(b, one));
		__m256i nan = _mm256_or_si256(_mm256_cmpgt_epi32(a, inf), _mm256_cmpgt_epi32(b, inf));
		if (!_mm256_testz_si256(nan, nan))
			odd += s_odd_nans8(a) + s_odd_nans8(b);
	}
	mx0 = _mm256_max_epi32(mx0, mx1);
	mn0 = _mm256_min_epu32(mn0, mn1);
	uint32_t mxv[8], mnv[8];
	_mm256_storeu_si256((__m256i_u *)mxv, mx0);
	_mm256_storeu_si256((__m256i_u *)mnv, mn0);
	for (int l = 0; l < 8; l++) {
		uint32_t m = mxv[l] - 0x00800000u;
		uint32_t v = mnv[l] + 1u;
		if (m > s->max_abs_bits)
			s->max_abs_bits = m;
		if (v < s->min_abs_bits)
			s->min_abs_bits = v;
	}
	s->odd_nans += odd;
	s_stats_portable(s, src, i, n);
}
#endif /* S_HAVE_X86 */

/* ---- dispatch ---- */

/* Tests set this (rr_fp16_force_portable) to compare the two paths; atomic so that reading
 * it from worker threads is never a data race. */
static atomic_int s_force_portable;
static int s_use_simd(void)
{
	const unsigned need = RR_CPU_AVX2 | RR_CPU_F16C;
	return !atomic_load_explicit(&s_force_portable, memory_order_relaxed) &&
	       (rr_cpu_features() & need) == need;
}

const char *rr_fp16_force_portable(int on)
{
	atomic_store_explicit(&s_force_portable, on ? 1 : 0, memory_order_relaxed);
	return s_use_simd() ? "avx2+f16c" : "portable";
}

/* ---- public API ---- */

void rr_f32_stats_init(struct rr_f32_stats *s)
{
	s->max_abs_bits = 0;
	s->min_abs_bits = S_INF;
	s->odd_nans = 0;
	s->has_fraction = 0;
}

void rr_f32_stats_update(struct rr_f32_stats *s, const void *src, size_t n)
{
#if S_HAVE_X86
	if (s_use_simd()) {
		if (!s->has_fraction)
			s->has_fraction = s_fraction_avx2(src, n);
		s_stats_avx2(s, src, n);
		return;
	}
#endif
	if (!s->has_fraction)
		s->has_fraction = s_fraction_portable(src, 0, n);
	s_stats_portable(s, src, 0, n);
}

void rr_f32_stats_merge(struct rr_f32_stats *into, const struct rr_f32_stats *from)
{
	if (from->max_abs_bits > into->max_abs_bits)
		into->max_abs_bits = from->max_abs_bits;
	if (from->min_abs_bits < into->min_abs_bits)
		into->min_abs_bits = from->min_abs_bits;
	into->odd_nans += from->odd_nans;
	into->has_fraction |= from->has_fraction;
}

/* floor(log2(x)) for the bits of a finite, non-zero, non-negative F32. */
static int s_ilog2(uint32_t bits)
{
	uint32_t e = bits >> 23;

	if (e)
		return (int)e - 127;
	return -149 + (31 - __builtin_clz(bits)); /* subnormal: its highest set bit */
}

int rr_fp16_scale_for(const struct rr_f32_stats *s)
{
	int k;

	if (s->max_abs_bits == 0)
		return 0;
	k = 14 - s_ilog2(s->max_abs_bits);
	if (k < RR_FP16_SCALE_MIN)
		k = RR_FP16_SCALE_MIN;
	if (k > RR_FP16_SCALE_MAX)
		k = RR_FP16_SCALE_MAX;
	return k;
}

int rr_fp16_is_safe(const struct rr_f32_stats *s, int k)
{
	if (s->min_abs_bits == S_INF)
		return 1;
	if (s_ilog2(s->min_abs_bits) + k < -17)
		return 0;
	/* The largest value must also stay below 65520 once scaled, or it would come back
	 * as Inf. Only a clamped scale (max |x| >= 2^127) or a caller's own k gets here. */
	int top = s_ilog2(s->max_abs_bits) + k;
	if (top > 15 || (top == 15 && (s->max_abs_bits & 0x7fffffu) >= 0x7ff000u))
		return 0;
	return 1;
}

void rr_f32_to_fp16_shuffled(const void *src, size_t n, int k, uint8_t *dst)
{
#if S_HAVE_X86
	if (s_use_simd()) {
		s_to_fp16_avx2(src, n, k, dst);
		return;
	}
#endif
	s_to_fp16_portable(src, 0, n, k, dst);
}

void rr_fp16_shuffled_to_f32(const uint8_t *src, size_t n, int k, void *dst)
{
#if S_HAVE_X86
	if (s_use_simd()) {
		s_from_fp16_avx2(src, n, k, dst);
		return;
	}
#endif
	s_from_fp16_portable(src, 0, n, k, dst);
}

void rr_f32_to_bf16_shuffled(const void *src, size_t n, uint8_t *dst)
{
#if S_HAVE_X86
	if (s_use_simd()) {
		s_to_bf16_avx2(src, n, dst);
		return;
	}
#endif
	s_to_bf16_portable(src, 0, n, dst);
}

void rr_bf16_shuffled_to_f32(const uint8_t *src, size_t n, void *dst)
{
#if S_HAVE_X86
	if (s_use_simd()) {
		s_from_bf16_avx2(src, n, dst);
		return;
	}
#endif
	s_from_bf16_portable(src, 0, n, dst);
}
