#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "rr/codec.h"
#include "rr/error.h"
#include "rr/fp16.h"
#include "rr/safetensors.h"
#include "shuffle.h"

struct rr_codec {
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
	int level;
	struct rr_buf planes; /* shuffled (and narrowed) bytes on their way to or from zstd */
};

struct rr_codec *rr_codec_new(int zstd_level)
{
	struct rr_codec *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->cctx = ZSTD_createCCtx();
	c->dctx = ZSTD_createDCtx();
	c->level = zstd_level;
	rr_buf_init(&c->planes, 2 * (size_t)RR_CHUNK_MAX_RAW);
	if (!c->cctx || !c->dctx) {
		rr_codec_destroy(c);
		return NULL;
	}
	return c;
}

void rr_codec_destroy(struct rr_codec *c)
{
	if (!c)
		return;
	ZSTD_freeCCtx(c->cctx);
	ZSTD_freeDCtx(c->dctx);
	rr_buf_free(&c->planes);
	free(c);
}

struct rr_chunk_form rr_chunk_form_of(const struct rr_segment *seg)
{
	struct rr_chunk_form f = { .encoding = seg->encoding, .width = 1,
				   .scale_exp = seg->scale_exp };
	enum rr_st_dtype d;
	if (seg->dtype[0] && rr_st_dtype_from_name(seg->dtype, &d) == 0 &&
	    rr_st_dtype_bits(d) % 8 == 0)
		f.width = rr_st_dtype_bits(d) / 8;
	return f;
}

enum rr_encoding rr_codec_f32_encoding(enum rr_precision p, const struct rr_f32_stats *s,
				       uint64_t n, int *scale_exp)
{
	int k;

	/* Never lossy where it is not safe: FP16 holds integers exactly only up to 2048 and
	 * BF16 up to 256, so a rounded step counter changes Adam's bias correction on every
	 * resume; small tensors cost nothing to keep; NaN payloads would not come back. */
	if (p == RR_PRECISION_EXACT || n <= RR_EXACT_MAX_ELEMS || !s->has_fraction ||
	    s->odd_nans)
		return RR_ENC_SHUFFLE_ZSTD;
	k = rr_fp16_scale_for(s);
	if (p == RR_PRECISION_BF16 || (p == RR_PRECISION_AUTO && !rr_fp16_is_safe(s, k)))
		return RR_ENC_BF16;
	*scale_exp = k;
	return RR_ENC_FP16;
}

/* Appends `planes` zstd frames of len/planes bytes each to out. */
static int s_compress_planes(struct rr_codec *c, const uint8_t *src, size_t len,
			     unsigned planes, int level, int tensor, struct rr_buf *out)
{
	size_t plane = len / planes;
	int rc;

	ZSTD_CCtx_reset(c->cctx, ZSTD_reset_parameters);
	if (ZSTD_isError(ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_compressionLevel, level)))
		return RR_EINVAL;
	if (tensor) {
		/* A byte plane of a tensor has few long repeats: a 1 KiB-entry match table that
		 * stays in L1 and matches of 7 bytes or more find what there is. On the bench's
		 * transformer planes: 1.25x the speed of level 1's defaults, 0.1% smaller (a
		 * one-off measurement with a scratch program, not one of scripts/bench.sh). */
		ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_hashLog, 10);
		ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_minMatch, 7);
	}

	for (unsigned p = 0; p < planes; p++) {
		size_t bound = ZSTD_compressBound(plane), n;
		rc = rr_buf_reserve(out, bound);
		if (rc)
			return rc;
		/* Every frame carries its content size (ZSTD_c_contentSizeFlag's default), which
		 * decode relies on. */
		n = ZSTD_compress2(c->cctx, out->data + out->len, bound, src + p * plane, plane);
		if (ZSTD_isError(n))
			return RR_EIO;
		out->len += n;
	}
	return 0;
}

/* Element width as the encoding sees it: 2 for the narrowed forms. */
static unsigned s_stored_width(const struct rr_chunk_form *f)
{
	return f->encoding == RR_ENC_BF16 || f->encoding == RR_ENC_FP16 ? 2 : f->width;
}

/* Bytes of the shuffled planes for raw_len original bytes. */
static size_t s_planes_len(const struct rr_chunk_form *f, size_t raw_len)
{
	return f->encoding == RR_ENC_BF16 || f->encoding == RR_ENC_FP16 ? raw_len / 2 : raw_len;
}

static int s_form_ok(const struct rr_chunk_form *f, size_t len)
{
	switch (f->encoding) {
	case RR_ENC_ZSTD:
		return 1;
	case RR_ENC_SHUFFLE_ZSTD:
		return (f->width == 1 || f->width == 2 || f->width == 4 || f->width == 8) &&
		       len % f->width == 0;
	case RR_ENC_BF16:
		return len % 4 == 0;
	case RR_ENC_FP16:
		return len % 4 == 0 && f->scale_exp >= RR_FP16_SCALE_MIN &&
		       f->scale_exp <= RR_FP16_SCALE_MAX;
	}
	return 0;
}

/* The most s_compress_planes can need for len bytes of form f. */
static size_t s_stored_bound(const struct rr_chunk_form *f, size_t len)
{
	unsigned planes = f->encoding == RR_ENC_ZSTD ? 1 : s_stored_width(f);
	return planes * ZSTD_compressBound(s_planes_len(f, len) / planes);
}

int rr_codec_encode(struct rr_codec *c, const struct rr_chunk_form *f, const void *raw,
		    size_t len, struct rr_buf *out)
{
	return rr_codec_encode_framed(c, f, raw, len, 0, 0, out);
}

/* Encodes after out's current contents. */
static int s_encode(struct rr_codec *c, const struct rr_chunk_form *f, const void *raw,
		    size_t len, struct rr_buf *out)
{
	size_t plen;
	int rc;

	if (f->encoding == RR_ENC_ZSTD)
		return s_compress_planes(c, raw, len, 1, c->level, 0, out);

	plen = s_planes_len(f, len);
	rr_buf_reset(&c->planes);
	rc = rr_buf_reserve(&c->planes, plen);
	if (rc)
		return rc;
	switch (f->encoding) {
	case RR_ENC_SHUFFLE_ZSTD:
		rr_shuffle(raw, len / f->width, f->width, c->planes.data);
		break;
	case RR_ENC_BF16:
		rr_f32_to_bf16_shuffled(raw, len / 4, c->planes.data);
		break;
	default:
		rr_f32_to_fp16_shuffled(raw, len / 4, f->scale_exp, c->planes.data);
		break;
	}
	/* One frame per plane: zstd passes over the random mantissa planes quickly when they
	 * are on their own, and spends its effort on the sign/exponent planes. */
	return s_compress_planes(c, c->planes.data, plen, s_stored_width(f), RR_ZSTD_LEVEL_TENSOR,
				 1, out);
}

int rr_codec_encode_framed(struct rr_codec *c, const struct rr_chunk_form *f, const void *raw,
			   size_t len, size_t before, size_t after, struct rr_buf *out)
{
	int rc;

	if (!s_form_ok(f, len))
		return RR_EINVAL;
	rr_buf_reset(out);
	/* All the room at once, while out is empty: growing plane by plane would copy. */
	rc = rr_buf_reserve(out, before + s_stored_bound(f, len) + after);
	if (rc)
		return rc;
	out->len = before;
	rc = s_encode(c, f, raw, len, out);
	if (!rc)
		rc = rr_buf_reserve(out, after);
	return rc;
}

/* Decompresses all frames of stored into exactly want bytes at dst. */
static int s_decompress(struct rr_codec *c, const void *stored, size_t stored_len, void *dst,
			size_t want)
{
	unsigned long long first = ZSTD_getFrameContentSize(stored, stored_len);
	size_t n;

	/* Every frame we write declares its size; anything else is not ours. */
	if (first == ZSTD_CONTENTSIZE_ERROR || first == ZSTD_CONTENTSIZE_UNKNOWN || first > want)
		return RR_ECORRUPT;
	n = ZSTD_decompressDCtx(c->dctx, dst, want, stored, stored_len);
	return ZSTD_isError(n) || n != want ? RR_ECORRUPT : 0;
}

int rr_codec_decode(struct rr_codec *c, const struct rr_chunk_form *f, const void *stored,
		    size_t stored_len, void *raw, size_t raw_len)
{
	size_t plen;
	int rc;

	if (f->encoding > RR_ENC_FP16)
		return RR_EINVAL;
	if (!s_form_ok(f, raw_len))
		return RR_ECORRUPT;
	if (f->encoding == RR_ENC_ZSTD)
		return s_decompress(c, stored, stored_len, raw, raw_len);
	plen = s_planes_len(f, raw_len);
	rr_buf_reset(&c->planes);
	rc = rr_buf_reserve(&c->planes, plen);
	if (rc)
		return rc;
	rc = s_decompress(c, stored, stored_len, c->planes.data, plen);
	if (rc)
		return rc;
	switch (f->encoding) {
	case RR_ENC_SHUFFLE_ZSTD:
		rr_unshuffle(c->planes.data, raw_len / f->width, f->width, raw);
		break;
	case RR_ENC_BF16:
		rr_bf16_shuffled_to_f32(c->planes.data, raw_len / 4, raw);
		break;
	default:
		rr_fp16_shuffled_to_f32(c->planes.data, raw_len / 4, f->scale_exp, raw);
		break;
	}
	return 0;
}
