/* Fuzz target: `resume-run simulate --trace FILE` reads a file the user names, perhaps
 * written by another tool. Whatever parses is replayed under a fixed interval, --every auto
 * and the best fixed interval; the results must stay within the history's own time. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "rr/simulate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void s_check(const struct rr_sim_trace *t, const struct rr_sim_result *r, double cost)
{
	/* every notice costs a stall, every checkpoint one; nothing is lost twice */
	if (!(r->waste_s >= 0) || !(r->lost_s >= 0) || r->lost_s > t->total_s + 1e-6 ||
	    r->overhead_s > (r->checkpoints + t->notices) * cost + 1e-6 || !isfinite(r->waste_s))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_sim_trace t;
	struct rr_sim_result r;
	struct rr_sim_auto a = { .cost_s = 30, .prior_s = 86400, .max_overhead = 0.05 };
	double sum = 0;
	char why[128];

	if (rr_sim_trace_parse((const char *)data, size, 120, 30, 0, &t, why, sizeof(why)))
		return 0;
	for (size_t i = 0; i < t.n; i++) {
		if (!(t.lives[i].span_s >= 0))
			__builtin_trap();
		sum += t.lives[i].span_s;
	}
	if (fabs(sum - t.total_s) > 1e-6 * (1 + sum) || t.uncovered + t.notices > t.n)
		__builtin_trap();
	/* the replays step through checkpoints: keep the histories the fuzzer makes short */
	if (t.total_s < 1e7) {
		rr_sim_fixed(&t, 30, 600, &r);
		s_check(&t, &r, 30);
		rr_sim_auto(&t, &a, &r);
		s_check(&t, &r, 30);
		rr_sim_best_fixed(&t, 30, &r);
		s_check(&t, &r, 30);
	}
	rr_sim_trace_free(&t);
	return 0;
}
