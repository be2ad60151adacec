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
	uint64_t sa, sb;
	int c;

	if (rr_checkpoint_step(a, &sa) && rr_checkpoint_step(b, &sb) && sa != sb)
		return sa > sb ? 1 : -1;
	if (strcmp(a, b) == 0)
		return 0;
	c = s_cmp_i64(a_ms, b_ms);
	if (c)
		return c;
	c = strcmp(a, b);
	return (c > 0) - (c < 0);
}
