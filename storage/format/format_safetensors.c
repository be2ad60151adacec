/* *.safetensors files (docs/how-it-works.md, "What is stored"): the header as plain bytes, then one
 * tensor piece per tensor with bytes, in file order. */
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/format.h"
#include "rr/safetensors.h"

static int s_claims(const char *path, const uint8_t *head, size_t head_len, uint64_t size)
{
	size_t n = strlen(path);

	(void)head, (void)head_len;
	return n > 12 && strcmp(path + n - 12, ".safetensors") == 0 && size >= 8;
}

/* Reads and checks the header. 0 on success; h is the caller's to free either way. */
static int s_read_header(const struct rr_format_src *src, struct rr_st_header *h, char *why,
			 size_t why_len)
{
	uint8_t first8[8];
	uint8_t *buf = NULL;
	uint64_t n;
	int rc;

	rc = src->pread(src->ud, first8, 8, 0);
	if (!rc)
		rc = rr_st_header_size(first8, src->size, &n);
	if (rc)
		return rr_fail(why, why_len, rc == RR_EIO ? RR_EIO : RR_ECORRUPT,
			       "its first 8 bytes are not a header length for its size");
	buf = malloc(8 + n);
	if (!buf)
		return RR_ENOMEM;
	rc = src->pread(src->ud, buf, 8 + n, 0);
	if (rc)
		rr_fail(why, why_len, rc, "cannot read its header");
	else
		rc = rr_st_parse(buf, 8 + n, src->size, h, why, why_len);
	free(buf);
	return rc;
}

static int s_plan(const struct rr_format_src *src, struct rr_format_plan *out, char *why,
		  size_t why_len)
{
	struct rr_st_header h = { 0 };
	int rc = s_read_header(src, &h, why, why_len);

	if (rc)
		goto out;
	/* The header as plain bytes, then one piece per tensor, in file order, so the restored
	 * file is the same file: names, dtypes, shapes, order and metadata. */
	rc = rr_format_plan_add(out, 0, 8 + h.header_len, 0, NULL, RR_ST_U8, 0, NULL);
	for (size_t t = 0; !rc && t < h.ntensors; t++) {
		const struct rr_st_tensor *st = &h.tensors[t];
		if (st->end == st->begin)
			continue; /* no bytes, nothing to store: the header holds it */
		rc = rr_format_plan_add(out, 8 + h.header_len + st->begin, st->end - st->begin, 1,
					st->name, st->dtype, st->ndim, st->shape);
	}
out:
	rr_st_header_free(&h);
	return rc;
}

const struct rr_format rr_format_safetensors = {
	.name = "safetensors",
	.claims = s_claims,
	.plan = s_plan,
	.finish = NULL,
};
