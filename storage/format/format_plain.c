/* Every file no other format claims, and every file one refused: plain bytes (persist
 * cuts them into segments of at most RR_SEGMENT_BYTES). */
#include "rr/format.h"

static int s_claims(const char *path, const uint8_t *head, size_t head_len, uint64_t size)
{
	(void)path, (void)head, (void)head_len, (void)size;
	return 1;
}

static int s_plan(const struct rr_format_src *src, struct rr_format_plan *out, char *why,
		  size_t why_len)
{
	(void)why, (void)why_len;
	if (src->size == 0)
		return 0;
	return rr_format_plan_add(out, 0, src->size, 0, NULL, RR_ST_U8, 0, NULL);
}

const struct rr_format rr_format_plain = {
	.name = "",
	.claims = s_claims,
	.plan = s_plan,
	.finish = NULL,
};
