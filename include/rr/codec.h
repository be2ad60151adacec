/* Encodes one chunk's original bytes into its stored form and back. Each worker owns one
 * rr_codec (zstd contexts are reused across chunks). */
#ifndef RR_CODEC_H
#define RR_CODEC_H

#include <stddef.h>

#include "rr/buf.h"
#include "rr/manifest.h"

#define RR_SEGMENT_BYTES (8u << 20) /* plain files are cut into segments of at most 8 MiB */
#define RR_ZSTD_LEVEL_DEFAULT 3

struct rr_codec;

/* Returns a codec compressing at the given zstd level, or NULL when out of memory.
 * Free with rr_codec_destroy (NULL is fine). */
struct rr_codec *rr_codec_new(int zstd_level);
void rr_codec_destroy(struct rr_codec *c);

/* Encodes len bytes of raw in encoding enc, replacing out's contents with the stored bytes.
 * Returns 0 or an rr_error. */
int rr_codec_encode(struct rr_codec *c, enum rr_encoding enc, const void *raw, size_t len,
		    struct rr_buf *out);

/* Decodes stored bytes that must yield exactly raw_len bytes into raw (raw_len bytes of
 * room). Returns 0, or RR_ECORRUPT when the stored bytes are not a valid frame of that
 * size. */
int rr_codec_decode(struct rr_codec *c, enum rr_encoding enc, const void *stored,
		    size_t stored_len, void *raw, size_t raw_len);

#endif
