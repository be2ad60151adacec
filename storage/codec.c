#include <stdlib.h>

#include <zstd.h>

#include "rr/codec.h"
#include "rr/error.h"

struct rr_codec {
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
	int level;
};

struct rr_codec *rr_codec_new(int zstd_level)
{
	struct rr_codec *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->cctx = ZSTD_createCCtx();
	c->dctx = ZSTD_createDCtx();
	c->level = zstd_level;
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
	free(c);
}

int rr_codec_encode(struct rr_codec *c, enum rr_encoding enc, const void *raw, size_t len,
		    struct rr_buf *out)
{
	size_t bound, n;
	int rc;

	if (enc != RR_ENC_ZSTD)
		return RR_EINVAL;
	bound = ZSTD_compressBound(len);
	rr_buf_reset(out);
	rc = rr_buf_reserve(out, bound);
	if (rc)
		return rc;
	/* compressCCtx writes the content size into the frame header, which decode checks. */
	n = ZSTD_compressCCtx(c->cctx, out->data, bound, raw, len, c->level);
	if (ZSTD_isError(n))
		return RR_EIO;
	out->len = n;
	return 0;
}

int rr_codec_decode(struct rr_codec *c, enum rr_encoding enc, const void *stored,
		    size_t stored_len, void *raw, size_t raw_len)
{
	unsigned long long declared;
	size_t n;

	if (enc != RR_ENC_ZSTD)
		return RR_EINVAL;
	declared = ZSTD_getFrameContentSize(stored, stored_len);
	if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN ||
	    declared != raw_len)
		return RR_ECORRUPT;
	n = ZSTD_decompressDCtx(c->dctx, raw, raw_len, stored, stored_len);
	if (ZSTD_isError(n) || n != raw_len)
		return RR_ECORRUPT;
	return 0;
}
