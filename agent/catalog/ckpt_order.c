/* Checkpoint order (docs/trainer-contract.md, "The trainer contract", "Order"): the step number
 * in the name, else commit time. */
#include <string.h>

#include "rr/ckpt_order.h"

/* The names frameworks put before a step number: the Python helper (step-N), HF Trainer
 * (checkpoint-N), DeepSpeed (global_stepN), Lightning (epoch=E-step=S.ckpt), accelerate's
 * automatic naming (checkpoint_N), Megatron (iter_0000300), and step_N. */
static const char *const s_step_keys[] = { "step-",       "step=",  "checkpoint-", "global_step",
					   "checkpoint_", "step_", "iter_" };

/* A key counts only at the start of the name or after a separator, so "xstep-1" or
 * "epoch=3-mystep=9" do not borrow a number that means something else. */
static int s_at_boundary(const char *name, const char *p)
{
	return p == name || p[-1] == '-' || p[-1] == '_' || p[-1] == '=' || p[-1] == '.';
}

/* Digits at p: 1 to 19 of them (so the value fits in 64 bits), the number in *n. */
static int s_parse_digits(const char *p, uint64_t *n)
{
	uint64_t v = 0;
	int digits = 0;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (++digits > 19)
			return 0;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (digits == 0)
		return 0;
	*n = v;
	return 1;
}

int rr_checkpoint_step(const char *name, uint64_t *step)
{
	const char *best = NULL;
	uint64_t best_n = 0;

	/* The last key in the name wins: "epoch=3-step=1200.ckpt" is step 1200. */
	for (size_t k = 0; k < sizeof(s_step_keys) / sizeof(s_step_keys[0]); k++) {
		size_t klen = strlen(s_step_keys[k]);
		for (const char *p = strstr(name, s_step_keys[k]); p;
		     p = strstr(p + 1, s_step_keys[k])) {
			uint64_t n;
			if (!s_at_boundary(name, p) || !s_parse_digits(p + klen, &n))
				continue;
			if (!best || p > best) {
				best = p;
				best_n = n;
			}
		}
	}
	if (!best)
		return 0;
	*step = best_n;
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
	uint64_t step;

	if (!b[0])
		return 1;
	if (strcmp(a, b) == 0)
		return !rr_checkpoint_step(a, &step) && a_ms > b_ms;
	return a_ms > b_ms || rr_checkpoint_compare(a, a_ms, b, b_ms) > 0;
}
