/* Throughput of the conversion and shuffle kernels (storage/format/fp16.c, storage/format/shuffle.c)
 * and of the XXH3-128 of each tensor's bytes (storage/common/hash.c: libxxhash against the AVX2
 * form), on one core, portable and SIMD paths, for BENCHMARKS.md. Not a test: no assertions, and the
 * numbers depend on the machine.
 *
 * Data: 256 MiB of F32 (64 Mi values) shaped like a checkpoint: normal(0, 0.02) weights and
 * "Adam second moments" (squared normal * 1e-6), and integer-valued F32 (counters, position
 * ids) for the statistics alone: there the look for a fraction reads every value, where on
 * the others it stops at the first. "stats, no fraction check" is the statistics as they
 * were before that look (it is skipped once a fraction was seen). Each kernel runs 5 times; the best run is
 * reported in GB/s (10^9 bytes per second) of F32 data: bytes read for encoders, stats and
 * shuffles, bytes written for decoders and unshuffles, i.e. always the size of the tensor.
 *
 * Built with the project (build/kernels_bench; scripts/bench.sh runs it). An optional
 * argument gives the size in MiB (default 256). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rr/fp16.h"
#include "rr/hash.h"
#include "shuffle.h"

#define S_RUNS 5

static double s_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t s_rng_state = 0x9e3779b97f4a7c15ULL;

static double s_uniform(void)
{
	uint64_t x = s_rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	s_rng_state = x;
	return ((double)((x * 0x2545F4914F6CDD1DULL) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Standard normal values, two at a time (Box-Muller). */
static void s_normals(float *x, size_t n, double sigma, int square_scale)
{
	for (size_t i = 0; i < n; i += 2) {
		double r = sqrt(-2.0 * log(s_uniform())), t = 6.283185307179586 * s_uniform();
		double z[2] = { r * cos(t), r * sin(t) };
		for (size_t j = 0; j < 2 && i + j < n; j++)
			x[i + j] = square_scale ? (float)(z[j] * z[j] * 1e-6) : (float)(z[j] * sigma);
	}
}

enum s_kernel {
	S_STATS,
	S_STATS_NO_CHECK,
	S_FP16_ENC,
	S_FP16_DEC,
	S_BF16_ENC,
	S_BF16_DEC,
	S_SHUF,
	S_UNSHUF,
	S_MEMCPY,
	S_XXH3,
};

struct s_ctx {
	float *f32;    /* input tensor */
	uint8_t *half; /* 2 bytes per value */
	uint8_t *out;  /* 4 bytes per value */
	size_t n;      /* values */
	int k;
};

static void s_run(struct s_ctx *c, enum s_kernel kind, unsigned width)
{
	struct rr_f32_stats st;
	switch (kind) {
	case S_STATS:
		rr_f32_stats_init(&st);
		rr_f32_stats_update(&st, c->f32, c->n);
		c->k = rr_fp16_scale_for(&st);
		break;
	case S_STATS_NO_CHECK:
		rr_f32_stats_init(&st);
		st.has_fraction = 1;
		rr_f32_stats_update(&st, c->f32, c->n);
		c->k = rr_fp16_scale_for(&st);
		break;
	case S_FP16_ENC: rr_f32_to_fp16_shuffled(c->f32, c->n, c->k, c->half); break;
	case S_FP16_DEC: rr_fp16_shuffled_to_f32(c->half, c->n, c->k, c->out); break;
	case S_BF16_ENC: rr_f32_to_bf16_shuffled(c->f32, c->n, c->half); break;
	case S_BF16_DEC: rr_bf16_shuffled_to_f32(c->half, c->n, c->out); break;
	case S_SHUF: rr_shuffle(c->f32, 4 * c->n / width, width, c->out); break;
	case S_UNSHUF: rr_unshuffle(c->out, 4 * c->n / width, width, c->f32); break;
	case S_MEMCPY: memcpy(c->out, c->f32, 4 * c->n); break;
	case S_XXH3: {
		char hex[33];
		rr_xxh128_hex(c->f32, 4 * c->n, hex);
		break;
	}
	}
}

static double s_best(struct s_ctx *c, enum s_kernel kind, unsigned width)
{
	double best = 1e30;
	for (int r = 0; r < S_RUNS; r++) {
		double t0 = s_now();
		s_run(c, kind, width);
		double t = s_now() - t0;
		if (t < best)
			best = t;
	}
	return 4.0 * (double)c->n / best / 1e9;
}

static void s_row(struct s_ctx *c, const char *name, enum s_kernel kind, unsigned width)
{
	double g[2];
	for (int portable = 1; portable >= 0; portable--) {
		rr_fp16_force_portable(portable);
		rr_shuffle_force_portable(portable);
		rr_xxh128_force_portable(portable);
		g[portable] = s_best(c, kind, width);
	}
	printf("%-24s %10.2f %10.2f %8.1fx\n", name, g[1], g[0], g[0] / g[1]);
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
	struct s_ctx c = { 0 };
	static const char *const data[] = { "weights normal(0, 0.02)", "adam exp_avg_sq z^2*1e-6",
					    "integers (counters, position ids)" };

	if (mib == 0 || mib > 4096) {
		fprintf(stderr, "usage: %s [MiB, 1..4096]\n", argv[0]);
		return 2;
	}
	c.n = mib * 1024 * 1024 / 4;
	c.f32 = malloc(4 * c.n);
	c.half = malloc(2 * c.n);
	c.out = malloc(4 * c.n);
	if (!c.f32 || !c.half || !c.out)
		return 1;
	/* Touch everything once so page faults are not timed. */
	memset(c.half, 0, 2 * c.n);
	memset(c.out, 0, 4 * c.n);
	printf("paths: fp16 %s, shuffle %s, xxh3 %s\n", rr_fp16_force_portable(0),
	       rr_shuffle_force_portable(0), rr_xxh128_force_portable(0));
	for (int d = 0; d < 3; d++) {
		struct rr_f32_stats st;
		s_normals(c.f32, c.n, 0.02, d == 1);
		for (size_t i = 0; d == 2 && i < c.n; i++)
			c.f32[i] = (float)(i % 1000003);
		rr_f32_stats_init(&st);
		rr_f32_stats_update(&st, c.f32, c.n);
		c.k = rr_fp16_scale_for(&st);
		printf("\n%s, %zu MiB, k = %d, fp16 %s; best of %d, GB/s of F32 data, one thread\n",
		       data[d], mib, c.k, rr_fp16_is_safe(&st, c.k) ? "safe" : "unsafe", S_RUNS);
		printf("%-24s %10s %10s %9s\n", "kernel", "portable", "simd", "speedup");
		s_row(&c, "stats", S_STATS, 0);
		s_row(&c, "stats, no fraction check", S_STATS_NO_CHECK, 0);
		if (d == 2)
			continue;
		s_row(&c, "fp16 encode+shuffle", S_FP16_ENC, 0);
		s_row(&c, "fp16 unshuffle+decode", S_FP16_DEC, 0);
		s_row(&c, "bf16 encode+shuffle", S_BF16_ENC, 0);
		s_row(&c, "bf16 unshuffle+decode", S_BF16_DEC, 0);
		if (d == 0) {
			static const unsigned widths[] = { 1, 2, 4, 8 };
			char name[32];
			for (size_t w = 0; w < 4; w++) {
				snprintf(name, sizeof(name), "shuffle width %u", widths[w]);
				s_row(&c, name, S_SHUF, widths[w]);
				snprintf(name, sizeof(name), "unshuffle width %u", widths[w]);
				s_row(&c, name, S_UNSHUF, widths[w]);
			}
			s_row(&c, "xxh3-128", S_XXH3, 0);
			s_row(&c, "memcpy (reference)", S_MEMCPY, 0);
		}
	}
	free(c.f32);
	free(c.half);
	free(c.out);
	return 0;
}
