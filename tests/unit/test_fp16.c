/* CUnit suite "fp16": F32 <-> scaled FP16 and F32 <-> BF16 (docs/how-it-works.md, "What is
 * stored").  The encoders are checked on every one of the 2^32 F32 bit patterns: the AVX2/F16C
 * path against the portable one (bit for bit), the portable FP16 rounding against an
 * independent reference (the midpoints between neighbouring halves, computed in double), and
 * the error bounds the design promises. The scans go block by block (2^16 patterns,
 * cache-sized) in one child process per CPU, and count failures rather than assert per pattern
 * (a CU_ASSERT costs more than the kernels), printing the first. Sanitizer builds are ~10x
 * slower, so there every 61st pattern of each block is checked, plus its first and last 64
 * (which hold zeros, the least subnormals, FLT_MAX, Inf and the NaN boundaries).  On a CPU
 * without AVX2/F16C both "paths" are the portable one and the comparisons are trivially true;
 * the reference and error checks still run. */
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rr/fp16.h"

#include "cunit_main.h"

#if defined(__SANITIZE_ADDRESS__)
#define S_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define S_SANITIZED 1
#endif
#endif
#ifndef S_SANITIZED
#define S_SANITIZED 0
#endif

#define S_BLOCK_BITS 16
#define S_BLOCK (1u << S_BLOCK_BITS)
#define S_NBLOCKS (1u << (32 - S_BLOCK_BITS))
#define S_STRIDE (S_SANITIZED ? 61u : 1u)
#define S_EDGE 64u

/* ---- helpers ---- */

static float s_f32(uint32_t b)
{
	float f;
	memcpy(&f, &b, sizeof(f));
	return f;
}

static uint32_t s_bits(float f)
{
	uint32_t b;
	memcpy(&b, &f, sizeof(b));
	return b;
}

/* 2^e as a double, built from its bits (no libm). */
static double s_pow2(int e)
{
	uint64_t b = (uint64_t)(e + 1023) << 52;
	double d;
	memcpy(&d, &b, sizeof(d));
	return d;
}

/* |d| without libm, and without a branch: rounding errors change sign at random, and a
 * mispredicted branch per value doubled the exhaustive tests' time. */
static double s_abs(double d)
{
	return __builtin_fabs(d);
}

/* Value of a non-negative finite half h, and 65536 for 0x7c00 (where the next binade would
 * start), so the midpoint below 0x7c00 is FP16's overflow threshold 65520. */
static double s_half_value(uint32_t h)
{
	uint32_t e = h >> 10, m = h & 0x3ff;
	if (e == 0)
		return m * s_pow2(-24);
	return (1024 + m) * s_pow2((int)e - 25);
}

static uint16_t s_half_at(const uint8_t *shuffled, size_t n, size_t i)
{
	return (uint16_t)(shuffled[i] | (shuffled[n + i] << 8));
}

static uint64_t s_rng(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1DULL;
}

/* The bit patterns of block b in increasing order: all S_BLOCK of them (stride 1), or the
 * edges of the block and every stride-th pattern between them. Returns how many. */
static size_t s_fill_strided(uint32_t *x, uint32_t b, uint32_t stride)
{
	uint32_t base = b << S_BLOCK_BITS;
	size_t m = 0;

	if (stride == 1) {
		for (uint32_t j = 0; j < S_BLOCK; j++)
			x[j] = base + j;
		return S_BLOCK;
	}
	for (uint32_t j = 0; j < S_EDGE; j++)
		x[m++] = base + j;
	for (uint32_t j = S_EDGE + b % stride; j < S_BLOCK - S_EDGE; j += stride)
		x[m++] = base + j;
	for (uint32_t j = S_BLOCK - S_EDGE; j < S_BLOCK; j++)
		x[m++] = base + j;
	return m;
}

static size_t s_fill_block(uint32_t *x, uint32_t b)
{
	return s_fill_strided(x, b, S_STRIDE);
}

/* Reference: 1 when F32 bits x are finite and not an integer, from the fields (the code
 * under test converts to int32 and back): below 1 only zeros are integers; from 2^23 all
 * are; between, the mantissa bits worth less than 1 must all be 0. */
static int s_ref_fraction(uint32_t x)
{
	uint32_t a = x & 0x7fffffff, e = a >> 23;

	if (a == 0 || e >= 150)
		return 0; /* zeros, 2^23 and up, Inf, NaN */
	if (e < 127)
		return 1;
	return (a & ((1u << (150 - e)) - 1)) != 0;
}

/* Field by field: the struct has padding, which memcmp would compare. */
static int s_stats_equal(const struct rr_f32_stats *a, const struct rr_f32_stats *b)
{
	return a->max_abs_bits == b->max_abs_bits && a->min_abs_bits == b->min_abs_bits &&
	       a->odd_nans == b->odd_nans && a->has_fraction == b->has_fraction;
}

/* ---- the exhaustive scans ---- */

#define S_NCOUNT 4
#define S_MAX_WORKERS 4

/* One worker's buffers and findings: bad[] counts failures by kind. */
struct s_scan {
	uint32_t *x;         /* input patterns */
	uint8_t *simd;       /* encoded by the SIMD path */
	uint8_t *port;       /* encoded by the portable path */
	uint32_t *dec;       /* decoded */
	const uint32_t *lim; /* FP16 reference: greatest |x| rounding to each half */
	uint32_t h;          /* FP16 reference: position of the walk */
	uint64_t bad[S_NCOUNT];
};

typedef void (*s_block_fn)(struct s_scan *s, uint32_t blk);

/* A worker: runs fn on blocks [first, end) and writes its counters to fd. */
static void s_worker(s_block_fn fn, const uint32_t *lim, uint32_t first, uint32_t end, int fd)
{
	struct s_scan s = { 0 };
	int ok;

	s.x = malloc(S_BLOCK * sizeof(uint32_t));
	s.simd = malloc(2 * S_BLOCK);
	s.port = malloc(2 * S_BLOCK);
	s.dec = malloc(S_BLOCK * sizeof(uint32_t));
	s.lim = lim;
	if (!s.x || !s.simd || !s.port || !s.dec)
		_exit(3);
	for (uint32_t blk = first; blk < end; blk++) {
		if (blk == first || blk == S_NBLOCKS / 2)
			s.h = 0; /* the walk starts again from |x| = 0 (negatives: at 0x80000000) */
		fn(&s, blk);
	}
	fflush(stdout);
	ok = write(fd, s.bad, sizeof(s.bad)) == (ssize_t)sizeof(s.bad);
	_exit(ok ? 0 : 4);
}

/* Runs fn on every block and sums the workers' counters into bad[]. The blocks are split
 * between child processes, one per CPU up to 4 (each scan is ~20 s of CPU): processes
 * rather than threads because the path switch (rr_fp16_force_portable) is process-wide.
 * Returns 0 when every worker finished; a crashed worker is reported. */
static int s_scan_all(s_block_fn fn, const uint32_t *lim, uint64_t bad[S_NCOUNT])
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nw = ncpu < 1 ? 1 : ncpu > S_MAX_WORKERS ? S_MAX_WORKERS : (int)ncpu;
	pid_t pid[S_MAX_WORKERS];
	int fd[S_MAX_WORKERS];
	int started = 0, rc = 0;

	memset(bad, 0, S_NCOUNT * sizeof(bad[0]));
	fflush(stdout); /* or the children would print it again */
	for (; started < nw; started++) {
		int p[2];
		if (pipe(p)) {
			rc = -1;
			break;
		}
		pid[started] = fork();
		if (pid[started] < 0) {
			close(p[0]);
			close(p[1]);
			rc = -1;
			break;
		}
		if (pid[started] == 0) {
			close(p[0]);
			s_worker(fn, lim, (uint32_t)((uint64_t)started * S_NBLOCKS / (unsigned)nw),
				 (uint32_t)((uint64_t)(started + 1) * S_NBLOCKS / (unsigned)nw), p[1]);
		}
		close(p[1]);
		fd[started] = p[0];
	}
	for (int w = 0; w < started; w++) {
		uint64_t got[S_NCOUNT];
		ssize_t r = read(fd[w], got, sizeof(got));
		int status = 0;
		close(fd[w]);
		if (waitpid(pid[w], &status, 0) != pid[w] || r != (ssize_t)sizeof(got) ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			printf("\n  worker %d failed (status 0x%x)\n", w, (unsigned)status);
			rc = -1;
			continue;
		}
		for (int c = 0; c < S_NCOUNT; c++)
			bad[c] += got[c];
	}
	return rc;
}

static void s_fp16_both(const struct s_scan *s, size_t n, int k)
{
	rr_fp16_force_portable(0);
	rr_f32_to_fp16_shuffled(s->x, n, k, s->simd);
	rr_fp16_force_portable(1);
	rr_f32_to_fp16_shuffled(s->x, n, k, s->port);
	rr_fp16_force_portable(0);
}

/* Counts differences between the two encodings, printing the worker's first. */
static uint64_t s_count_diffs(const struct s_scan *s, size_t n, const char *what, int k)
{
	uint64_t bad = 0;
	if (!memcmp(s->simd, s->port, 2 * n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint16_t v = s_half_at(s->simd, n, i), p = s_half_at(s->port, n, i);
		if (v != p && !bad++ && !s->bad[0])
			printf("\n  %s k=%d: x=0x%08x simd=0x%04x portable=0x%04x\n", what, k,
			       s->x[i], v, p);
	}
	return bad;
}

/* ---- exhaustive FP16 ---- */

#define S_CHECK 64

/* 1 when |d - x| > |x| / r, for normal x and a power of two r. Computed in F32 so that
 * loops of it vectorize, and exact where it matters: when d is within a factor 2 of x the
 * difference is exact (Sterbenz), otherwise it is at least |x| / 2 after rounding, and Inf
 * only makes it larger. c, a power of two, scales both first (exactly): c = 2^64 for tiny x
 * keeps the difference out of F32's subnormals, whose microcode assists (~150 cycles per
 * instruction) would otherwise dominate the exhaustive tests. */
static inline uint32_t s_far(float x, float d, float r, float c)
{
	x *= c;
	d *= c;
	return __builtin_fabsf(d - x) * r > __builtin_fabsf(x);
}

/* The scale for s_far for values with biased exponent e. */
static float s_far_scale(uint32_t e)
{
	return e < 64 ? s_f32(0x5f800000) /* 2^64 */ : 1.0f;
}

/* For each non-negative half h < 0x7c00, the greatest |x| (as F32 bits) that rounds to h:
 * the midpoint m between h and h+1 (computed in double) when h is even, since ties go to
 * the even neighbour, and the F32 just below m when h is odd. m needs 12 significant bits,
 * so it is exact as an F32, and for non-negative floats the order of the bit patterns is
 * the order of the values. Above the last limit (65520 and up) is Inf. */
static uint32_t *s_limits(void)
{
	uint32_t *lim = malloc(0x7c00 * sizeof(uint32_t));
	CU_ASSERT_FATAL(lim != NULL);
	for (uint32_t h = 0; h < 0x7c00; h++) {
		double m = (s_half_value(h) + s_half_value(h + 1)) / 2;
		CU_ASSERT_FATAL((double)(float)m == m);
		lim[h] = s_bits((float)m) - (h & 1);
	}
	return lim;
}

/* The reference rounding of x (F32 bits, walked in increasing order of |x| within a sign):
 * the least h whose limit is at or above |x|. *h carries the position between calls. */
static uint16_t s_ref_half(uint32_t x, const uint32_t *lim, uint32_t *h)
{
	uint32_t sign = (x >> 16) & 0x8000, a = x & 0x7fffffff;

	if (a > 0x7f800000)
		return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff));
	while (*h < 0x7c00 && a > lim[*h])
		(*h)++;
	return (uint16_t)(sign | *h);
}

/* How many of the halves [i, j) of a shuffled run of n differ from want (in chunks of a
 * fixed count, which the compiler vectorizes). */
static uint64_t s_count_ne(const uint8_t *enc, size_t n, size_t i, size_t j, uint16_t want)
{
	uint8_t wl = (uint8_t)want, wh = (uint8_t)(want >> 8);
	uint64_t bad = 0;

	for (; i + S_CHECK <= j; i += S_CHECK) {
		uint32_t c = 0;
		for (size_t t = 0; t < S_CHECK; t++)
			c += (enc[i + t] != wl) | (enc[n + i + t] != wh);
		bad += c;
	}
	for (; i < j; i++)
		bad += (enc[i] != wl) | (enc[n + i] != wh);
	return bad;
}

/* bad[0]: SIMD differs from portable; bad[1]: portable differs from the reference. A block
 * holds one sign and one binade, in increasing order of |x|, so its finite values fall into
 * runs that round to the same half: each run's end is found by binary search against the
 * half's limit and the whole run compared at once. NaNs are checked one by one. */
static void s_block_fp16_k0(struct s_scan *s, uint32_t blk)
{
	size_t n = s_fill_block(s->x, blk);
	const uint32_t *xs = s->x, *lim = s->lim;
	const uint8_t *port = s->port;
	uint32_t h = s->h;
	uint64_t wrong = 0;

	s_fp16_both(s, n, 0);
	s->bad[0] += s_count_diffs(s, n, "fp16", 0);
	for (size_t i = 0; i < n;) {
		uint16_t want = s_ref_half(xs[i], lim, &h);
		size_t j = i + 1;
		if ((xs[i] & 0x7fffffff) <= 0x7f800000) {
			uint32_t top = h < 0x7c00 ? lim[h] : 0x7f800000; /* greatest |x| for h */
			size_t hi = n;
			while (j < hi) {
				size_t mid = j + (hi - j) / 2;
				if ((xs[mid] & 0x7fffffff) <= top)
					j = mid + 1;
				else
					hi = mid;
			}
		}
		if (s_count_ne(port, n, i, j, want) && !wrong++ && !s->bad[1]) {
			while (s_half_at(port, n, i) == want)
				i++;
			printf("\n  x=0x%08x portable=0x%04x reference=0x%04x\n", xs[i],
			       s_half_at(port, n, i), want);
		}
		i = j;
	}
	s->h = h;
	s->bad[1] += wrong;
}

static void test_fp16_encode_of_every_f32_matches_nearest_even_reference_on_both_paths(void)
{
	uint32_t *lim = s_limits();
	uint64_t bad[S_NCOUNT];

	CU_ASSERT_EQUAL(s_scan_all(s_block_fp16_k0, lim, bad), 0);
	CU_ASSERT_EQUAL(bad[0], 0);
	CU_ASSERT_EQUAL(bad[1], 0);
	free(lim);
}

/* bad[0]: SIMD differs from portable. 20, a typical weight scale, moves F32's small values
 * through FP16's subnormals: every pattern. 112 scales F32's subnormals into FP16's range:
 * every pattern below 2^-96, above which the product is at least 2^16 and all Inf (there,
 * every 61st pattern and the block edges). -112 makes the multiply itself round to F32
 * subnormals, which cost a microcode assist (~150 cycles) per instruction on x86: every
 * 61st pattern and the block edges. */
static void s_block_fp16_scales(struct s_scan *s, uint32_t blk)
{
	uint32_t e = (blk >> (23 - S_BLOCK_BITS)) & 0xff;
	size_t n = s_fill_block(s->x, blk);

	s_fp16_both(s, n, 20);
	s->bad[0] += s_count_diffs(s, n, "fp16", 20);
	if (e >= 127 - 96) /* |x| >= 2^-96 */
		n = s_fill_strided(s->x, blk, S_STRIDE * 61);
	s_fp16_both(s, n, 112);
	s->bad[0] += s_count_diffs(s, n, "fp16", 112);
	n = s_fill_strided(s->x, blk, S_STRIDE * 61);
	s_fp16_both(s, n, -112);
	s->bad[0] += s_count_diffs(s, n, "fp16", -112);
}

static void test_fp16_encode_of_every_f32_is_identical_on_both_paths_at_other_scales(void)
{
	uint64_t bad[S_NCOUNT];

	CU_ASSERT_EQUAL(s_scan_all(s_block_fp16_scales, NULL, bad), 0);
	CU_ASSERT_EQUAL(bad[0], 0);
}

/* Adds x's FP16 round-trip failures to the counters: a finite result that is a subnormal
 * half, off by more than 2^-11 or with its sign lost (wrong); an Inf (inf). */
static inline void s_check_fp16(uint32_t x, uint16_t hv, uint32_t back, float c,
				uint32_t *wrong, uint32_t *inf)
{
	uint32_t finite = (hv & 0x7c00) != 0x7c00;
	uint32_t bad = ((hv & 0x7c00) == 0) | s_far(s_f32(x), s_f32(back), 2048.0f, c) |
		       ((back ^ x) >> 31);

	*wrong += finite & bad;
	*inf += !finite;
}

/* bad[0]: error above 2^-11 (or a subnormal half, or a sign lost); bad[1]: is_safe
 * disagrees with whether the value overflowed; bad[2]: the scale differs within a block. */
static void s_block_fp16_round_trip(struct s_scan *s, uint32_t blk)
{
	uint32_t e = (blk >> (23 - S_BLOCK_BITS)) & 0xff;
	const uint32_t *xs = s->x, *dec = s->dec;
	const uint8_t *enc = s->simd;
	float c = s_far_scale(e);
	struct rr_f32_stats st;
	uint64_t wrong = 0, unsafe = 0;
	size_t n;
	int k;

	if (e == 0 || e == 0xff) /* zeros and subnormals; Inf and NaN */
		return;
	n = s_fill_block(s->x, blk);
	/* A single-element tensor's scale depends on its exponent only, which the whole
	 * block shares. */
	rr_f32_stats_init(&st);
	rr_f32_stats_update(&st, &xs[0], 1);
	k = rr_fp16_scale_for(&st);
	rr_f32_stats_init(&st);
	rr_f32_stats_update(&st, &xs[n - 1], 1);
	s->bad[2] += rr_fp16_scale_for(&st) != k;
	rr_f32_to_fp16_shuffled(xs, n, k, s->simd);
	rr_fp16_shuffled_to_f32(s->simd, n, k, s->dec);
	/* Branch-free, in chunks of a fixed count, so the compiler vectorizes the checks. */
	for (size_t i0 = 0; i0 < n; i0 += S_CHECK) {
		uint32_t cnt_wrong = 0, cnt_inf = 0;
		size_t m = n - i0 < S_CHECK ? n - i0 : S_CHECK;
		if (m == S_CHECK) {
			for (size_t j = 0; j < S_CHECK; j++)
				s_check_fp16(xs[i0 + j], s_half_at(enc, n, i0 + j), dec[i0 + j],
					     c, &cnt_wrong, &cnt_inf);
		} else {
			for (size_t j = 0; j < m; j++)
				s_check_fp16(xs[i0 + j], s_half_at(enc, n, i0 + j), dec[i0 + j],
					     c, &cnt_wrong, &cnt_inf);
		}
		wrong += cnt_wrong;
		/* Only the top binade (clamped scale) can overflow. */
		unsafe += e != 0xfe ? cnt_inf : 0;
	}
	/* is_safe must refuse exactly the values that would overflow FP16: below the top
	 * binade it accepts the block whatever the mantissas, in it it decides value by value. */
	for (size_t i = 0; i < n; i += e == 0xfe ? 1 : n) {
		uint32_t a = xs[i] & 0x7fffffff;
		struct rr_f32_stats one = { a, a, 0, 1 };
		unsafe += rr_fp16_is_safe(&one, k) != ((s_half_at(enc, n, i) & 0x7c00) != 0x7c00);
	}
	if ((wrong || unsafe) && !s->bad[0] && !s->bad[1])
		printf("\n  round trip fails in block 0x%x, k=%d\n", blk, k);
	s->bad[0] += wrong;
	s->bad[1] += unsafe;
}

static void test_fp16_round_trip_of_every_normal_f32_with_its_own_scale_is_within_2_pow_minus_11(void)
{
	uint64_t bad[S_NCOUNT];

	CU_ASSERT_EQUAL(s_scan_all(s_block_fp16_round_trip, NULL, bad), 0);
	CU_ASSERT_EQUAL(bad[0], 0);
	CU_ASSERT_EQUAL(bad[1], 0);
	CU_ASSERT_EQUAL(bad[2], 0);
}

/* ---- exhaustive BF16 ---- */

/* Adds x's BF16 failures to the counters: a NaN that stopped being NaN of its sign, a
 * finite value that became Inf, a normal value off by more than 2^-8 or with its sign lost. */
static inline void s_check_bf16(uint32_t x, uint16_t bf, float c, uint32_t *to_inf,
				uint32_t *wrong, uint32_t *nan_lost)
{
	uint32_t a = x & 0x7fffffff, back = (uint32_t)bf << 16, ba = back & 0x7fffffff;
	uint32_t sign_lost = (back ^ x) >> 31;
	uint32_t normal = (a >= 0x00800000) & (a < 0x7f800000);
	uint32_t far = s_far(s_f32(x), s_f32(back), 256.0f, c);

	*nan_lost += (a > 0x7f800000) & ((ba <= 0x7f800000) | sign_lost);
	*to_inf += (a < 0x7f800000) & (ba >= 0x7f800000);
	*wrong += normal & (far | sign_lost);
}

/* bad[0]: SIMD differs from portable; bad[1]: a finite value became Inf; bad[2]: error
 * above 2^-8 or a sign lost; bad[3]: a NaN stopped being NaN of its sign. */
static void s_block_bf16(struct s_scan *s, uint32_t blk)
{
	size_t n = s_fill_block(s->x, blk);
	const uint32_t *xs = s->x;
	const uint8_t *port = s->port;
	float c = s_far_scale((blk >> (23 - S_BLOCK_BITS)) & 0xff); /* one binade per block */
	uint64_t to_inf = 0, wrong = 0, nan_lost = 0;

	rr_fp16_force_portable(0);
	rr_f32_to_bf16_shuffled(xs, n, s->simd);
	rr_fp16_force_portable(1);
	rr_f32_to_bf16_shuffled(xs, n, s->port);
	rr_fp16_force_portable(0);
	s->bad[0] += s_count_diffs(s, n, "bf16", 0);
	/* Counted without branches, in chunks of a fixed count, so the compiler vectorizes
	 * the checks (they cost more than the kernels otherwise); the first failure is looked
	 * up afterwards. */
	for (size_t i0 = 0; i0 < n; i0 += S_CHECK) {
		uint32_t cnt_inf = 0, cnt_wrong = 0, cnt_nan = 0;
		size_t m = n - i0 < S_CHECK ? n - i0 : S_CHECK;
		if (m == S_CHECK) {
			for (size_t j = 0; j < S_CHECK; j++)
				s_check_bf16(xs[i0 + j], s_half_at(port, n, i0 + j), c, &cnt_inf,
					     &cnt_wrong, &cnt_nan);
		} else {
			for (size_t j = 0; j < m; j++)
				s_check_bf16(xs[i0 + j], s_half_at(port, n, i0 + j), c, &cnt_inf,
					     &cnt_wrong, &cnt_nan);
		}
		to_inf += cnt_inf;
		wrong += cnt_wrong;
		nan_lost += cnt_nan;
	}
	if (to_inf + wrong + nan_lost && !s->bad[1] && !s->bad[2] && !s->bad[3]) {
		for (size_t i = 0; i < n; i++) {
			uint32_t back = (uint32_t)s_half_at(port, n, i) << 16;
			double xv = s_f32(xs[i]), dv = s_f32(back);
			if (s_abs(dv - xv) > s_abs(xv) * s_pow2(-8) || (back ^ xs[i]) >> 31 ||
			    ((back & 0x7fffffff) >= 0x7f800000) != ((xs[i] & 0x7fffffff) >= 0x7f800000)) {
				printf("\n  bf16 x=0x%08x back=0x%08x\n", xs[i], back);
				break;
			}
		}
	}
	s->bad[1] += to_inf;
	s->bad[2] += wrong;
	s->bad[3] += nan_lost;
}

static void test_bf16_encode_of_every_f32_is_identical_on_both_paths_never_inf_and_within_2_pow_minus_8(void)
{
	uint64_t bad[S_NCOUNT];

	CU_ASSERT_EQUAL(s_scan_all(s_block_bf16, NULL, bad), 0);
	CU_ASSERT_EQUAL(bad[0], 0);
	CU_ASSERT_EQUAL(bad[1], 0);
	CU_ASSERT_EQUAL(bad[2], 0);
	CU_ASSERT_EQUAL(bad[3], 0);
}

/* ---- decode ---- */

static void test_fp16_decode_of_every_half_is_exact_and_identical_on_both_paths(void)
{
	static const int ks[] = { 0, 1, -1, 14, -14, 37, 112, -112 };
	const size_t n = 65536;
	uint8_t *src = malloc(2 * n);
	uint32_t *simd = malloc(4 * n), *port = malloc(4 * n);
	uint64_t diffs = 0, wrong = 0;

	CU_ASSERT_FATAL(src && simd && port);
	for (size_t h = 0; h < n; h++) {
		src[h] = (uint8_t)h;
		src[n + h] = (uint8_t)(h >> 8);
	}
	for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
		int k = ks[j];
		rr_fp16_force_portable(0);
		rr_fp16_shuffled_to_f32(src, n, k, simd);
		rr_fp16_force_portable(1);
		rr_fp16_shuffled_to_f32(src, n, k, port);
		rr_fp16_force_portable(0);
		for (uint32_t h = 0; h < n; h++) {
			uint32_t sign = (h & 0x8000) << 16, m = h & 0x3ff;
			uint32_t got = port[h];
			int ok;
			diffs += simd[h] != got;
			if ((h & 0x7c00) == 0x7c00) /* Inf, or quiet NaN with the payload kept */
				ok = got == (sign | 0x7f800000 | (m << 13) | (m ? 0x400000 : 0));
			else
				ok = (got & 0x80000000) == sign &&
				     (double)s_f32(got & 0x7fffffff) ==
					     s_half_value(h & 0x7fff) * s_pow2(-k);
			if (!ok && !wrong++)
				printf("\n  half=0x%04x k=%d got=0x%08x\n", h, k, got);
		}
	}
	CU_ASSERT_EQUAL(diffs, 0);
	CU_ASSERT_EQUAL(wrong, 0);
	free(src);
	free(simd);
	free(port);
}

static void test_bf16_decode_of_every_value_is_a_shift_on_both_paths(void)
{
	const size_t n = 65536;
	uint8_t *src = malloc(2 * n);
	uint32_t *simd = malloc(4 * n), *port = malloc(4 * n);
	uint64_t wrong = 0;

	CU_ASSERT_FATAL(src && simd && port);
	for (size_t h = 0; h < n; h++) {
		src[h] = (uint8_t)h;
		src[n + h] = (uint8_t)(h >> 8);
	}
	rr_fp16_force_portable(0);
	rr_bf16_shuffled_to_f32(src, n, simd);
	rr_fp16_force_portable(1);
	rr_bf16_shuffled_to_f32(src, n, port);
	rr_fp16_force_portable(0);
	for (uint32_t h = 0; h < n; h++)
		wrong += simd[h] != h << 16 || port[h] != h << 16;
	CU_ASSERT_EQUAL(wrong, 0);
	free(src);
	free(simd);
	free(port);
}

/* ---- integer-valued data: has_fraction ---- */

/* On both paths: every integer-valued pattern of the block in one update, where no fraction
 * may be seen; every non-integer among every 61st pattern (and the block's edges), one
 * update each, where each must be seen. All patterns of magnitude 2^-1 to 2^24, where
 * integers and fractions interleave; every 61st elsewhere, where a fraction is any non-zero
 * below 1 (every 997th one checked on its own). Sanitizer builds check a 61st of that. */
static void s_block_fraction(struct s_scan *s, uint32_t blk)
{
	uint32_t e = (blk >> (23 - S_BLOCK_BITS)) & 0xff;
	int mixed = e >= 126 && e <= 150;
	struct rr_f32_stats st;

	for (int portable = 0; portable <= 1; portable++) {
		size_t n = s_fill_strided(s->x, blk, mixed ? S_STRIDE : 61), ni = 0, m;
		rr_fp16_force_portable(portable);
		for (size_t i = 0; i < n; i++)
			if (!s_ref_fraction(s->x[i]))
				s->x[ni++] = s->x[i];
		rr_f32_stats_init(&st);
		rr_f32_stats_update(&st, s->x, ni);
		if (st.has_fraction && !s->bad[0]++)
			printf("\n  portable=%d: a fraction seen among the integers of block 0x%x\n",
			       portable, blk);
		m = s_fill_strided(s->x, blk, (mixed ? 61 : 997) * S_STRIDE);
		for (size_t i = 0; i < m; i++) {
			if (!s_ref_fraction(s->x[i]))
				continue;
			rr_f32_stats_init(&st);
			rr_f32_stats_update(&st, &s->x[i], 1);
			if (!st.has_fraction && !s->bad[1]++)
				printf("\n  portable=%d: no fraction seen in 0x%08x\n", portable,
				       s->x[i]);
		}
	}
	rr_fp16_force_portable(0);
}

static void test_stats_see_a_fraction_exactly_in_finite_non_integers(void)
{
	static const uint32_t hand[][2] = {
		{ 0x00000000, 0 }, { 0x80000000, 0 }, /* +-0 */
		{ 0x00000001, 1 }, { 0x3f7fffff, 1 }, /* least subnormal, just below 1 */
		{ 0x3f800000, 0 }, { 0xbf800000, 0 }, { 0x3fc00000, 1 }, /* 1, -1, 1.5 */
		{ 0x45800800, 0 }, { 0x4b7fffff, 0 }, /* 4097, 2^24 - 1 */
		{ 0x4afffffe, 0 }, { 0x4affffff, 1 }, /* 2^23 - 2, 2^23 - 0.5 */
		{ 0x4b000000, 0 }, { 0x4b800001, 0 }, { 0x7f7fffff, 0 }, /* 2^23, 2^24 + 2, max */
		{ 0x7f800000, 0 }, { 0xff800000, 0 }, { 0x7fc00000, 0 }, { 0xffc00001, 0 },
	};
	uint64_t bad[S_NCOUNT];

	for (size_t i = 0; i < sizeof(hand) / sizeof(hand[0]); i++) {
		struct rr_f32_stats st;
		CU_ASSERT_EQUAL(s_ref_fraction(hand[i][0]), (int)hand[i][1]);
		rr_f32_stats_init(&st);
		rr_f32_stats_update(&st, &hand[i][0], 1);
		if (st.has_fraction != (int)hand[i][1])
			printf("\n  0x%08x: has_fraction %d\n", hand[i][0], st.has_fraction);
		CU_ASSERT_EQUAL(st.has_fraction, (int)hand[i][1]);
	}
	CU_ASSERT_EQUAL(s_scan_all(s_block_fraction, NULL, bad), 0);
	CU_ASSERT_EQUAL(bad[0], 0);
	CU_ASSERT_EQUAL(bad[1], 0);
}

/* One fraction among integers is seen at every position of runs of every length up to 80
 * (the vectorized blocks and the tail), from an unaligned buffer, on both paths, in one
 * update or whichever of several it came in; integers alone never count as one. */
static void test_stats_find_a_fraction_wherever_it_sits(void)
{
	uint8_t buf[4 * 80 + 1];
	float *x = malloc(80 * sizeof(float));
	struct rr_f32_stats s;
	uint64_t missed = 0, false_alarm = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	for (int portable = 0; portable <= 1; portable++) {
		rr_fp16_force_portable(portable);
		for (size_t n = 1; n <= 80; n++) {
			for (size_t i = 0; i < n; i++)
				x[i] = (float)((int)i * 4099 - 70000);
			memcpy(buf + 1, x, 4 * n);
			rr_f32_stats_init(&s);
			rr_f32_stats_update(&s, buf + 1, n);
			false_alarm += s.has_fraction != 0;
			for (size_t at = 0; at < n; at++) {
				float keep = x[at];
				x[at] = keep + 0.25f;
				memcpy(buf + 1, x, 4 * n);
				x[at] = keep;
				rr_f32_stats_init(&s);
				rr_f32_stats_update(&s, buf + 1, n);
				missed += s.has_fraction != 1;
				rr_f32_stats_init(&s);
				rr_f32_stats_update(&s, buf + 1, at);
				false_alarm += s.has_fraction != 0;
				rr_f32_stats_update(&s, buf + 1 + 4 * at, n - at);
				missed += s.has_fraction != 1;
				rr_f32_stats_update(&s, buf + 1, at); /* integers after: still seen */
				missed += s.has_fraction != 1;
			}
		}
	}
	rr_fp16_force_portable(0);
	CU_ASSERT_EQUAL(missed, 0);
	CU_ASSERT_EQUAL(false_alarm, 0);
	free(x);
}

/* ---- odd lengths and unaligned buffers ---- */

/* Random F32 patterns with all kinds of specials mixed in. */
static void s_random_f32(uint32_t *x, size_t n, uint64_t seed)
{
	static const uint32_t specials[] = {
		0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
		0x7f800001, 0xffbfffff, 0x7fffffff, 0x00000001, 0x807fffff, 0x7f7fffff,
		0x477ff000, 0xc77fefff, 0x33000000, 0x33000001, 0x38800000, 0xb87fffff,
	};
	uint64_t r = seed | 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = s_rng(&r);
		switch (v & 7) {
		case 0: x[i] = specials[(v >> 8) % (sizeof(specials) / sizeof(specials[0]))]; break;
		case 1: x[i] = (uint32_t)(v >> 32); break; /* any pattern at all */
		default: /* near 1.0 in magnitude, random sign */
			x[i] = ((uint32_t)(v >> 32) & 0x80ffffffu) | (uint32_t)(0x38 + (v >> 8) % 16) << 24;
			break;
		}
	}
}

static void test_all_kernels_agree_on_odd_lengths_and_unaligned_buffers(void)
{
	static const size_t lens[] = { 0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 100, 1000003 };
	const size_t max = 1000003;
	uint8_t *in = malloc(4 * max + 8), *a = malloc(4 * max + 8), *c = malloc(4 * max + 8);
	uint8_t *da = malloc(4 * max + 8), *dc = malloc(4 * max + 8);
	uint32_t *x = malloc(4 * max);
	int bad = 0;

	CU_ASSERT_FATAL(in && a && c && da && dc && x);
	s_random_f32(x, max, 42);
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		for (size_t off = 0; off < 4; off++) {
			size_t n = lens[li];
			uint8_t *src = in + off, *o1 = a + (3 - off), *o2 = c + off;
			struct rr_f32_stats s1, s2;
			memcpy(src, x, 4 * n);

			for (int k = -30; k <= 30; k += 30) {
				rr_fp16_force_portable(0);
				rr_f32_to_fp16_shuffled(src, n, k, o1);
				rr_fp16_shuffled_to_f32(o1, n, k, da + off);
				rr_fp16_force_portable(1);
				rr_f32_to_fp16_shuffled(src, n, k, o2);
				rr_fp16_shuffled_to_f32(o2, n, k, dc + 1);
				bad += memcmp(o1, o2, 2 * n) != 0;
				bad += memcmp(da + off, dc + 1, 4 * n) != 0;
			}
			rr_fp16_force_portable(0);
			rr_f32_to_bf16_shuffled(src, n, o1);
			rr_bf16_shuffled_to_f32(o1, n, da + off);
			rr_f32_stats_init(&s1);
			rr_f32_stats_update(&s1, src, n);
			rr_fp16_force_portable(1);
			rr_f32_to_bf16_shuffled(src, n, o2);
			rr_bf16_shuffled_to_f32(o2, n, dc + 1);
			rr_f32_stats_init(&s2);
			rr_f32_stats_update(&s2, src, n);
			rr_fp16_force_portable(0);
			bad += memcmp(o1, o2, 2 * n) != 0;
			bad += memcmp(da + off, dc + 1, 4 * n) != 0;
			bad += !s_stats_equal(&s1, &s2);
			if (bad) {
				printf("\n  n=%zu off=%zu differs\n", n, off);
				break;
			}
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	free(in);
	free(a);
	free(c);
	free(da);
	free(dc);
	free(x);
}

/* ---- stats ---- */

static void s_stats_reference(struct rr_f32_stats *s, const uint32_t *x, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t a = x[i] & 0x7fffffff;
		float f = s_f32(a);
		s->has_fraction |= s_ref_fraction(x[i]);
		if (f != f) {
			s->odd_nans += a != 0x7fc00000;
			continue;
		}
		if (a == 0x7f800000)
			continue;
		if (f > s_f32(s->max_abs_bits))
			s->max_abs_bits = a;
		if (a && (s->min_abs_bits == 0x7f800000 || f < s_f32(s->min_abs_bits)))
			s->min_abs_bits = a;
	}
}

static void test_stats_of_random_and_special_values_match_reference_on_both_paths(void)
{
	const size_t max = 100003;
	uint32_t *x = malloc(4 * max);
	int bad = 0;

	CU_ASSERT_FATAL(x != NULL);
	for (uint64_t seed = 1; seed <= 40; seed++) {
		size_t n = seed < 20 ? (size_t)seed * 7 : max - seed;
		struct rr_f32_stats ref, simd, port;
		s_random_f32(x, n, seed);
		if (seed % 5 == 0) /* no specials at all in some runs: pure small weights */
			for (size_t i = 0; i < n; i++)
				x[i] = (x[i] & 0x807fffff) | 0x3c000000;
		if (seed % 5 == 1) /* integers only, as a step counter or position ids */
			for (size_t i = 0; i < n; i++)
				x[i] = s_bits((float)(int32_t)(x[i] >> 8) - 8388608.0f);
		rr_f32_stats_init(&ref);
		s_stats_reference(&ref, x, n);
		bad += ref.has_fraction != (seed % 5 != 1); /* the runs are what they claim */
		rr_fp16_force_portable(0);
		rr_f32_stats_init(&simd);
		rr_f32_stats_update(&simd, x, n);
		rr_fp16_force_portable(1);
		rr_f32_stats_init(&port);
		rr_f32_stats_update(&port, x, n);
		rr_fp16_force_portable(0);
		bad += !s_stats_equal(&ref, &simd) || !s_stats_equal(&ref, &port);
	}
	CU_ASSERT_EQUAL(bad, 0);
	free(x);
}

static void test_stats_init_is_empty_and_skip_zeros_inf_and_canonical_nan(void)
{
	const uint32_t x[] = { 0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
			       0xffc00000, 0x7fc00000, 0x00000000, 0x80000000, 0x7f800000,
			       0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
			       0xffc00000, 0x7fc00000, 0x00000000 };
	struct rr_f32_stats s;

	for (int portable = 0; portable <= 1; portable++) {
		rr_fp16_force_portable(portable);
		rr_f32_stats_init(&s);
		CU_ASSERT_EQUAL(s.max_abs_bits, 0);
		CU_ASSERT_EQUAL(s.min_abs_bits, 0x7f800000);
		CU_ASSERT_EQUAL(s.odd_nans, 0);
		rr_f32_stats_update(&s, x, sizeof(x) / sizeof(x[0]));
		CU_ASSERT_EQUAL(s.max_abs_bits, 0);
		CU_ASSERT_EQUAL(s.min_abs_bits, 0x7f800000);
		CU_ASSERT_EQUAL(s.odd_nans, 0);
		CU_ASSERT_EQUAL(rr_fp16_scale_for(&s), 0);
		CU_ASSERT_EQUAL(rr_fp16_is_safe(&s, 0), 1);
	}
	rr_fp16_force_portable(0);
}

static void test_stats_count_nans_with_payloads_on_both_paths(void)
{
	uint32_t x[40];
	struct rr_f32_stats s;

	for (size_t i = 0; i < 40; i++)
		x[i] = 0x3f800000;
	x[3] = 0x7f800001;  /* signalling */
	x[17] = 0xffc00001; /* quiet with payload */
	x[18] = 0xffc00000; /* canonical (negative) */
	x[39] = 0x7fffffff; /* in the portable tail */
	for (int portable = 0; portable <= 1; portable++) {
		rr_fp16_force_portable(portable);
		rr_f32_stats_init(&s);
		rr_f32_stats_update(&s, x, 40);
		CU_ASSERT_EQUAL(s.odd_nans, 3);
		CU_ASSERT_EQUAL(s.max_abs_bits, 0x3f800000);
		CU_ASSERT_EQUAL(s.min_abs_bits, 0x3f800000);
	}
	rr_fp16_force_portable(0);
}

static void test_stats_merge_takes_max_min_sums_nans_and_any_fraction(void)
{
	struct rr_f32_stats a = { 0x3f800000, 0x3a000000, 2, 0 }, b = { 0x40400000, 0x3b000000, 5, 1 };
	struct rr_f32_stats e;

	rr_f32_stats_merge(&a, &b);
	CU_ASSERT_EQUAL(a.max_abs_bits, 0x40400000);
	CU_ASSERT_EQUAL(a.min_abs_bits, 0x3a000000);
	CU_ASSERT_EQUAL(a.odd_nans, 7);
	CU_ASSERT_EQUAL(a.has_fraction, 1);
	b.has_fraction = 0;
	rr_f32_stats_merge(&a, &b);
	CU_ASSERT_EQUAL(a.has_fraction, 1); /* once seen, it stays */
	rr_f32_stats_init(&e);
	rr_f32_stats_merge(&e, &a);
	CU_ASSERT(s_stats_equal(&e, &a));
}

/* ---- scale and the auto rule ---- */

static int s_scale_of(uint32_t max_bits)
{
	struct rr_f32_stats s = { max_bits, max_bits, 0, 1 };
	return rr_fp16_scale_for(&s);
}

static void test_scale_puts_max_in_2_pow_14_to_2_pow_15(void)
{
	const float v[] = { 0.5f, -3.0f, 0.0f, 1e-3f };
	struct rr_f32_stats s;

	CU_ASSERT_EQUAL(s_scale_of(0x3f800000), 14);   /* 1.0 */
	CU_ASSERT_EQUAL(s_scale_of(0x47000000), -1);   /* 2^15 */
	CU_ASSERT_EQUAL(s_scale_of(0x40400000), 13);   /* 3.0 */
	CU_ASSERT_EQUAL(s_scale_of(0x3fffffff), 14);   /* just below 2.0 */
	CU_ASSERT_EQUAL(s_scale_of(0x46fffe00), 0);    /* 32767 */
	CU_ASSERT_EQUAL(s_scale_of(0x46800000), 0);    /* 2^14 */
	CU_ASSERT_EQUAL(s_scale_of(0x3ca3d70a), 20);   /* 0.02 */
	CU_ASSERT_EQUAL(s_scale_of(0), 0);             /* all zeros */
	CU_ASSERT_EQUAL(s_scale_of(0x0d800000), 112);  /* 2^-100: clamped from 114 */
	CU_ASSERT_EQUAL(s_scale_of(0x0e800000), 112);  /* 2^-98: exactly 112 */
	CU_ASSERT_EQUAL(s_scale_of(0x0f000000), 111);  /* 2^-97 */
	CU_ASSERT_EQUAL(s_scale_of(0x00000001), 112);  /* least subnormal */
	CU_ASSERT_EQUAL(s_scale_of(0x007fffff), 112);  /* greatest subnormal */
	CU_ASSERT_EQUAL(s_scale_of(0x7e800000), -112); /* 2^126: exactly -112 */
	CU_ASSERT_EQUAL(s_scale_of(0x7f7fffff), -112); /* FLT_MAX: clamped from -113 */
	/* End to end through the stats: max |x| is 3.0. */
	for (int portable = 0; portable <= 1; portable++) {
		rr_fp16_force_portable(portable);
		rr_f32_stats_init(&s);
		rr_f32_stats_update(&s, v, 4);
		CU_ASSERT_EQUAL(s.max_abs_bits, 0x40400000);
		CU_ASSERT_EQUAL(rr_fp16_scale_for(&s), 13);
	}
	rr_fp16_force_portable(0);
}

static int s_safe(uint32_t min_bits, uint32_t max_bits, int k)
{
	struct rr_f32_stats s = { max_bits, min_bits, 0, 1 };
	return rr_fp16_is_safe(&s, k);
}

static void test_is_safe_boundary_is_exactly_2_pow_minus_17_after_scaling(void)
{
	struct rr_f32_stats none;

	rr_f32_stats_init(&none);
	CU_ASSERT_EQUAL(rr_fp16_is_safe(&none, 0), 1);
	CU_ASSERT_EQUAL(s_safe(0x37000000, 0x3f800000, 0), 1);  /* 2^-17 */
	CU_ASSERT_EQUAL(s_safe(0x36ffffff, 0x3f800000, 0), 0);  /* just below */
	CU_ASSERT_EQUAL(s_safe(0x30000000, 0x3f800000, 14), 1); /* 2^-31 * 2^14 */
	CU_ASSERT_EQUAL(s_safe(0x2fffffff, 0x3f800000, 14), 0);
	CU_ASSERT_EQUAL(s_safe(0x37000000, 0x3f800000, -1), 0);
	CU_ASSERT_EQUAL(s_safe(0x36800000, 0x3f800000, 1), 1);
	/* Subnormal minimum: floor(log2) from its highest set bit. */
	CU_ASSERT_EQUAL(s_safe(0x00400000, 0x0d800000, 110), 1); /* 2^-127 (max 2^-100) */
	CU_ASSERT_EQUAL(s_safe(0x00400000, 0x0d800000, 109), 0);
	CU_ASSERT_EQUAL(s_safe(0x003fffff, 0x0d800000, 111), 1); /* < 2^-127 */
	CU_ASSERT_EQUAL(s_safe(0x003fffff, 0x0d800000, 110), 0);
	CU_ASSERT_EQUAL(s_safe(0x00000001, 0x0d800000, 112), 0); /* 2^-149 */
	/* Adam-like second moments: max 1e-2, min 1e-12 -> k = 21; 1e-12 * 2^21 < 2^-17. */
	CU_ASSERT_EQUAL(s_safe(s_bits(1e-12f), s_bits(1e-2f), s_scale_of(s_bits(1e-2f))), 0);
	CU_ASSERT_EQUAL(s_safe(s_bits(1e-7f), s_bits(1e-2f), s_scale_of(s_bits(1e-2f))), 1);
}

static void test_is_safe_refuses_a_scale_that_would_overflow_fp16(void)
{
	/* Only reachable through the clamp (max |x| >= 2^127) or a caller's own k; min = max
	 * here, so the 2^-17 rule passes and only the overflow check decides. */
	CU_ASSERT_EQUAL(s_safe(0x7f7fffff, 0x7f7fffff, -112), 0); /* FLT_MAX */
	CU_ASSERT_EQUAL(s_safe(0x7f7ff000, 0x7f7ff000, -112), 0); /* 65520 * 2^112 */
	CU_ASSERT_EQUAL(s_safe(0x7f7fefff, 0x7f7fefff, -112), 1); /* rounds to 65504 * 2^112 */
	CU_ASSERT_EQUAL(s_safe(0x7f000000, 0x7f000000, -112), 1); /* 2^127 -> 2^15 */
	CU_ASSERT_EQUAL(s_safe(0x477fefff, 0x477fefff, 0), 1);
	CU_ASSERT_EQUAL(s_safe(0x477ff000, 0x477ff000, 0), 0);    /* 65520 */
	CU_ASSERT_EQUAL(s_safe(0x47800000, 0x47800000, 0), 0);    /* 65536 */
	CU_ASSERT_EQUAL(s_safe(0x46800000, 0x47000000, 1), 0);    /* 2^15 * 2 = 65536 */
	CU_ASSERT_EQUAL(s_safe(0x46800000, 0x47000000, 0), 1);    /* 2^15 */
}

/* A tensor the auto rule sends to FP16 keeps every normal value within 2^-8, even the small
 * ones that land in FP16's subnormals (the guarantee in docs/how-it-works.md, "How checkpoints
 * are made small"). */
static void test_fp16_chosen_by_auto_rule_keeps_every_value_within_2_pow_minus_8(void)
{
	const size_t n = 4096;
	uint32_t *x = malloc(4 * n), *back = malloc(4 * n);
	uint8_t *enc = malloc(2 * n);
	uint64_t r = 7;
	int chosen = 0, wrong = 0;

	CU_ASSERT_FATAL(x && back && enc);
	for (int t = 0; t < 200; t++) {
		struct rr_f32_stats s;
		int span = t % 36; /* binades between the largest and smallest magnitude */
		int top = (int)(s_rng(&r) % 200) - 100;
		int k;
		for (size_t i = 0; i < n; i++) {
			uint64_t v = s_rng(&r);
			int e = top - (int)((v >> 40) % (unsigned)(span + 1));
			x[i] = (uint32_t)(v & 0x807fffff) | (uint32_t)(e + 127) << 23;
		}
		rr_f32_stats_init(&s);
		rr_f32_stats_update(&s, x, n);
		k = rr_fp16_scale_for(&s);
		if (!rr_fp16_is_safe(&s, k))
			continue;
		chosen++;
		rr_f32_to_fp16_shuffled(x, n, k, enc);
		rr_fp16_shuffled_to_f32(enc, n, k, back);
		for (size_t i = 0; i < n; i++) {
			double xv = s_f32(x[i]), dv = s_f32(back[i]);
			if (s_abs(dv - xv) > s_abs(xv) * s_pow2(-8) && !wrong++)
				printf("\n  x=0x%08x k=%d back=0x%08x\n", x[i], k, back[i]);
		}
	}
	CU_ASSERT(chosen > 50);
	CU_ASSERT_EQUAL(wrong, 0);
	free(x);
	free(back);
	free(enc);
}

/* ---- specials ---- */

static void test_zeros_infinities_and_canonical_nan_round_trip_exactly(void)
{
	static const uint32_t x[] = { 0x00000000, 0x80000000, 0x7f800000,
				      0xff800000, 0x7fc00000, 0xffc00000 };
	static const uint16_t want_half[] = { 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe00 };
	static const uint16_t want_bf16[] = { 0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc0 };
	static const int ks[] = { 0, 14, -1, 112, -112 };
	const size_t n = sizeof(x) / sizeof(x[0]);
	uint8_t enc[2 * 6];
	uint32_t back[6];

	for (int portable = 0; portable <= 1; portable++) {
		rr_fp16_force_portable(portable);
		for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
			rr_f32_to_fp16_shuffled(x, n, ks[j], enc);
			rr_fp16_shuffled_to_f32(enc, n, ks[j], back);
			for (size_t i = 0; i < n; i++) {
				CU_ASSERT_EQUAL(s_half_at(enc, n, i), want_half[i]);
				CU_ASSERT_EQUAL(back[i], x[i]);
			}
		}
		rr_f32_to_bf16_shuffled(x, n, enc);
		rr_bf16_shuffled_to_f32(enc, n, back);
		for (size_t i = 0; i < n; i++) {
			CU_ASSERT_EQUAL(s_half_at(enc, n, i), want_bf16[i]);
			CU_ASSERT_EQUAL(back[i], x[i]);
		}
	}
	rr_fp16_force_portable(0);
}

static void test_bf16_of_flt_max_is_greatest_finite_bf16_not_inf(void)
{
	const float x[] = { FLT_MAX, -FLT_MAX, s_f32(0x7f7f8000), s_f32(0x7f7f7fff), 1.0f,
			    s_f32(0x3f808000), s_f32(0x3f818000), s_f32(0x7f800001) };
	const uint16_t want[] = { 0x7f7f, 0xff7f, 0x7f7f, 0x7f7f, 0x3f80, 0x3f80, 0x3f82, 0x7fc0 };
	const size_t n = sizeof(x) / sizeof(x[0]);
	uint8_t enc[2 * 8];

	for (int portable = 0; portable <= 1; portable++) {
		rr_fp16_force_portable(portable);
		rr_f32_to_bf16_shuffled(x, n, enc);
		for (size_t i = 0; i < n; i++)
			CU_ASSERT_EQUAL(s_half_at(enc, n, i), want[i]);
	}
	rr_fp16_force_portable(0);
}

static void test_fp16_encode_hand_cases_including_subnormal_halves_and_overflow(void)
{
	const uint32_t x[] = {
		0x3f800000, /* 1.0 */
		0x477fe000, /* 65504, FP16's greatest */
		0x477fefff, /* rounds down to 65504 */
		0x477ff000, /* 65520: ties to Inf */
		0x33000000, /* 2^-25: ties to zero */
		0x33000001, /* just above: least subnormal */
		0x33c00000, /* 1.5 * 2^-24: ties to even 2 * 2^-24 */
		0x387fc000, /* 2^-14 - 2^-24 = greatest subnormal */
		0x387fe000, /* ties up to 2^-14 */
		0xb3800000, /* -2^-24 */
		0x7f800001, /* signalling NaN -> quiet, top payload bits kept */
		0xffa00000,
	};
	const uint16_t want[] = { 0x3c00, 0x7bff, 0x7bff, 0x7c00, 0x0000, 0x0001,
				  0x0002, 0x03ff, 0x0400, 0x8001, 0x7e00, 0xfe00 | 0x100 };
	const size_t n = sizeof(x) / sizeof(x[0]);
	uint8_t enc[2 * 12];

	for (int portable = 0; portable <= 1; portable++) {
		rr_fp16_force_portable(portable);
		rr_f32_to_fp16_shuffled(x, n, 0, enc);
		for (size_t i = 0; i < n; i++)
			CU_ASSERT_EQUAL(s_half_at(enc, n, i), want[i]);
		/* The scale is applied before rounding: 2^-20 * 2^20 = 1.0. */
		uint32_t small = 0x35800000;
		rr_f32_to_fp16_shuffled(&small, 1, 20, enc);
		CU_ASSERT_EQUAL(s_half_at(enc, 1, 0), 0x3c00);
	}
	rr_fp16_force_portable(0);
}

static void test_force_portable_selects_the_path_and_reports_it(void)
{
	const char *simd = rr_fp16_force_portable(0);
	CU_ASSERT_STRING_EQUAL(rr_fp16_force_portable(1), "portable");
	CU_ASSERT(!strcmp(rr_fp16_force_portable(0), simd));
	CU_ASSERT(!strcmp(simd, "avx2+f16c") || !strcmp(simd, "portable"));
	printf(" [%s]", simd);
}

static CU_TestInfo s_tests[] = {
	{ "test_force_portable_selects_the_path_and_reports_it",
	  test_force_portable_selects_the_path_and_reports_it },
	{ "test_fp16_encode_hand_cases_including_subnormal_halves_and_overflow",
	  test_fp16_encode_hand_cases_including_subnormal_halves_and_overflow },
	{ "test_zeros_infinities_and_canonical_nan_round_trip_exactly",
	  test_zeros_infinities_and_canonical_nan_round_trip_exactly },
	{ "test_bf16_of_flt_max_is_greatest_finite_bf16_not_inf",
	  test_bf16_of_flt_max_is_greatest_finite_bf16_not_inf },
	{ "test_scale_puts_max_in_2_pow_14_to_2_pow_15", test_scale_puts_max_in_2_pow_14_to_2_pow_15 },
	{ "test_is_safe_boundary_is_exactly_2_pow_minus_17_after_scaling",
	  test_is_safe_boundary_is_exactly_2_pow_minus_17_after_scaling },
	{ "test_is_safe_refuses_a_scale_that_would_overflow_fp16",
	  test_is_safe_refuses_a_scale_that_would_overflow_fp16 },
	{ "test_stats_init_is_empty_and_skip_zeros_inf_and_canonical_nan",
	  test_stats_init_is_empty_and_skip_zeros_inf_and_canonical_nan },
	{ "test_stats_count_nans_with_payloads_on_both_paths",
	  test_stats_count_nans_with_payloads_on_both_paths },
	{ "test_stats_merge_takes_max_min_sums_nans_and_any_fraction",
	  test_stats_merge_takes_max_min_sums_nans_and_any_fraction },
	{ "test_stats_see_a_fraction_exactly_in_finite_non_integers",
	  test_stats_see_a_fraction_exactly_in_finite_non_integers },
	{ "test_stats_find_a_fraction_wherever_it_sits", test_stats_find_a_fraction_wherever_it_sits },
	{ "test_stats_of_random_and_special_values_match_reference_on_both_paths",
	  test_stats_of_random_and_special_values_match_reference_on_both_paths },
	{ "test_all_kernels_agree_on_odd_lengths_and_unaligned_buffers",
	  test_all_kernels_agree_on_odd_lengths_and_unaligned_buffers },
	{ "test_fp16_decode_of_every_half_is_exact_and_identical_on_both_paths",
	  test_fp16_decode_of_every_half_is_exact_and_identical_on_both_paths },
	{ "test_bf16_decode_of_every_value_is_a_shift_on_both_paths",
	  test_bf16_decode_of_every_value_is_a_shift_on_both_paths },
	{ "test_fp16_chosen_by_auto_rule_keeps_every_value_within_2_pow_minus_8",
	  test_fp16_chosen_by_auto_rule_keeps_every_value_within_2_pow_minus_8 },
	{ "test_fp16_encode_of_every_f32_matches_nearest_even_reference_on_both_paths",
	  test_fp16_encode_of_every_f32_matches_nearest_even_reference_on_both_paths },
	{ "test_fp16_encode_of_every_f32_is_identical_on_both_paths_at_other_scales",
	  test_fp16_encode_of_every_f32_is_identical_on_both_paths_at_other_scales },
	{ "test_fp16_round_trip_of_every_normal_f32_with_its_own_scale_is_within_2_pow_minus_11",
	  test_fp16_round_trip_of_every_normal_f32_with_its_own_scale_is_within_2_pow_minus_11 },
	{ "test_bf16_encode_of_every_f32_is_identical_on_both_paths_never_inf_and_within_2_pow_minus_8",
	  test_bf16_encode_of_every_f32_is_identical_on_both_paths_never_inf_and_within_2_pow_minus_8 },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("fp16", s_tests)
