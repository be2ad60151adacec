/* F32 <-> FP16 (with a per-tensor power-of-two scale) and F32 <-> BF16, round-to-nearest-
 * even, plus the statistics that choose between them (docs/how-it-works.md, "What is stored"). Each
 * function has a portable C path and an AVX2/F16C path chosen at run time; both give
 * bit-identical results. Buffers are little-endian element arrays; no alignment is
 * required. */
#ifndef RR_FP16_H
#define RR_FP16_H

#include <stddef.h>
#include <stdint.h>

#define RR_FP16_SCALE_MIN (-112) /* 2^k and 2^-k both stay normal F32 numbers */
#define RR_FP16_SCALE_MAX 112

/* What the encoder needs to know about a run of F32 values (bit patterns, so comparisons
 * are exact and NaN-safe). Merge the stats of several runs with rr_f32_stats_merge. */
struct rr_f32_stats {
	uint32_t max_abs_bits; /* greatest |x| over finite x, as F32 bits (0 when none) */
	uint32_t min_abs_bits; /* least |x| over finite non-zero x, as bits (0x7f800000: none) */
	uint64_t odd_nans;     /* NaNs other than the canonical quiet NaN (+/-0x7fc00000):
				* FP16/BF16 cannot give those back bit for bit */
	int has_fraction;      /* 1 once a finite value that is not an integer was seen; 0:
				* every finite value is one (a step counter, position ids) */
};

void rr_f32_stats_init(struct rr_f32_stats *s);
/* Adds n F32 values (src may be unaligned) to s. Looking for a fraction stops at the first
 * one found (for trained weights, the first value), so it costs a full pass only over
 * integer-valued data. */
void rr_f32_stats_update(struct rr_f32_stats *s, const void *src, size_t n);
void rr_f32_stats_merge(struct rr_f32_stats *into, const struct rr_f32_stats *from);

/* The power-of-two scale exponent k that puts max |x| in [2^14, 2^15), clamped to
 * [RR_FP16_SCALE_MIN, RR_FP16_SCALE_MAX]; 0 when there is no finite non-zero value. */
int rr_fp16_scale_for(const struct rr_f32_stats *s);

/* The `auto` rule (docs/how-it-works.md, "How checkpoints are made small"): 1 when scaled FP16
 * (scale k) keeps every non-zero finite value at or above 2^-17 after scaling (then FP16 is at
 * least as precise as BF16 for every element) and the largest below 65520 (no FP16 overflow:
 * only possible within 0.02% of FLT_MAX, where k is clamped); 0 when BF16 should be used. */
int rr_fp16_is_safe(const struct rr_f32_stats *s, int k);

/* F32 -> FP16: dst[i] = fp16_rne(src[i] * 2^k), written byte-shuffled: the n low bytes
 * first, then the n high bytes (dst has 2n bytes). NaN stays NaN (sign and top payload
 * bits kept, quiet bit set), +/-Inf stays +/-Inf, signs of zeros kept; values whose
 * scaled magnitude is below 2^-25 become signed zero. */
void rr_f32_to_fp16_shuffled(const void *src, size_t n, int k, uint8_t *dst);
/* The inverse: widens 2n shuffled FP16 bytes to n F32 values and multiplies by 2^-k. */
void rr_fp16_shuffled_to_f32(const uint8_t *src, size_t n, int k, void *dst);

/* F32 -> BF16 (round to nearest even), byte-shuffled as above. A finite value never becomes
 * Inf: values that would round up to Inf become the greatest finite BF16 of their sign.
 * NaN stays NaN (sign and top payload bits kept, quiet bit set). */
void rr_f32_to_bf16_shuffled(const void *src, size_t n, uint8_t *dst);
/* The inverse: n BF16 (shuffled, 2n bytes) -> n F32 (exact: bits << 16). */
void rr_bf16_shuffled_to_f32(const uint8_t *src, size_t n, void *dst);

/* Selects the implementation: 1 forces the portable path (tests compare the two), 0 lets
 * the CPU decide (default). Returns the name of the path in use ("avx2+f16c"/"portable"). */
const char *rr_fp16_force_portable(int on);

#endif
