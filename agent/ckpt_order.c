#include <string.h>

#include "rr/ckpt_order.h"

int rr_checkpoint_step(const char *name, uint64_t *step)
{
	const char *p;
	uint64_t n = 0;
	int digits = 0;

	if (strncmp(name, "step-", 5) != 0)
		return 0;
	for (p = name + 5; *p >= '0' && *p <= '9'; p++) {
		if (++digits > 19)
			return 0;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	if (digits == 0)
		return 0;
	*step = n;
	return 1;
}

static int s_cmp_i64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

int rr_checkpoint_compare(const char *a, int64_t a_ms, const char *b, int64_t b_ms)
{
	/* One key per checkpoint, compared in order, so the order is total and transitive:
	 * (has a step number, the step number, commit time, name). */
	uint64_t sa = 0, sb = 0;
	int ha = rr_checkpoint_step(a, &sa), hb = rr_checkpoint_step(b, &sb);
	int c;

	if (strcmp(a, b) == 0)
		return 0;
	if (ha != hb)
		return ha ? 1 : -1;
	if (sa != sb)
		return sa > sb ? 1 : -1;
	c = s_cmp_i64(a_ms, b_ms);
	if (c)
		return c;
	c = strcmp(a, b);
	return (c > 0) - (c < 0);
}

int rr_checkpoint_later(const char *a, int64_t a_ms, const char *b, int64_t b_ms)
{
	if (!b[0])
		return 1;
	if (strcmp(a, b) == 0)
		return 0;
	return a_ms > b_ms || rr_checkpoint_compare(a, a_ms, b, b_ms) > 0;
}
