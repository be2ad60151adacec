/* Encodes one chunk's original bytes into its stored form and back (README,
 * "What is stored"). Each worker owns one rr_codec: zstd contexts and the plane buffer are
 * reused across chunks. */
#ifndef RR_CODEC_H
#define RR_CODEC_H

#include <stddef.h>

#include "rr/buf.h"
#include "rr/fp16.h"
#include "rr/manifest.h"

#define RR_SEGMENT_BYTES (8u << 20) /* chunks cover at most 8 MiB of original bytes */
#define RR_ZSTD_LEVEL_DEFAULT 3     /* plain files */
#define RR_ZSTD_LEVEL_TENSOR 1      /* byte planes of tensors: entropy coding does the work */

/* How F32 tensors are stored (--precision; docs/how-it-works.md, "How checkpoints are made
 * small"). */
enum rr_precision { RR_PRECISION_AUTO, RR_PRECISION_FP16, RR_PRECISION_BF16,
		    RR_PRECISION_EXACT };

/* F32 tensors of at most this many elements are never rounded: such tensors are scalars
 * and per-head or per-group settings (a learning rate, an EMA decay BF16 would make 1.0, a
 * temperature) more often than weights, and rounding one saves at most 512 bytes, about
 * what the tensor's own entry in the manifest takes (some 330 bytes). */
#define RR_EXACT_MAX_ELEMS 256

/* How a chunk is stored: the segment's encoding, its element width in bytes (1, 2, 4 or 8;
 * shuffle+zstd) and its scale exponent (fp16). */
struct rr_chunk_form {
	enum rr_encoding encoding;
	unsigned width;
	int scale_exp;
};

struct rr_codec;

/* Returns a codec compressing plain bytes at zstd_level (tensor planes at
 * RR_ZSTD_LEVEL_TENSOR), or NULL when out of memory. Free with rr_codec_destroy (NULL ok). */
struct rr_codec *rr_codec_new(int zstd_level);
void rr_codec_destroy(struct rr_codec *c);

/* Test hook (the agent calls rr_codec_encode_framed; only the tests call this). Encodes len
 * original bytes, replacing out's contents with the stored bytes: one zstd frame for "zstd",
 * else one zstd frame per byte plane, concatenated. len must be a whole number of elements.
 * Returns 0 or an rr_error. */
int rr_codec_encode(struct rr_codec *c, const struct rr_chunk_form *f, const void *raw,
		    size_t len, struct rr_buf *out);

/* The same, but out's first `before` bytes are left for the caller (unspecified contents;
 * the stored bytes follow them) and `after` bytes of capacity past the end are reserved: room
 * for a store to seal the stored bytes in place (rr_store_put_scratch). */
int rr_codec_encode_framed(struct rr_codec *c, const struct rr_chunk_form *f, const void *raw,
			   size_t len, size_t before, size_t after, struct rr_buf *out);

/* Decodes stored bytes that must give back exactly raw_len original bytes into raw.
 * Returns 0, or RR_ECORRUPT when they are not frames of exactly that size. */
int rr_codec_decode(struct rr_codec *c, const struct rr_chunk_form *f, const void *stored,
		    size_t stored_len, void *raw, size_t raw_len);

/* How an F32 tensor of n elements whose values s describes is stored under p
 * (docs/how-it-works.md, "How checkpoints are made small"): RR_ENC_SHUFFLE_ZSTD, bit-exact,
 * under `exact`, for a tensor of at most RR_EXACT_MAX_ELEMS elements, one whose finite values
 * are all integers and one holding NaNs with payloads, whatever p asks; else RR_ENC_FP16 with
 * its scale exponent in *scale_exp (`fp16`, or `auto` where rr_fp16_is_safe), or RR_ENC_BF16. */
enum rr_encoding rr_codec_f32_encoding(enum rr_precision p, const struct rr_f32_stats *s,
				       uint64_t n, int *scale_exp);

/* The form of a segment's chunks: width from its dtype (bits/8, or 1 for sub-byte and
 * non-tensor segments). */
struct rr_chunk_form rr_chunk_form_of(const struct rr_segment *seg);

#endif
