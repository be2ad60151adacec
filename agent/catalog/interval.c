#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/interval.h"

#define S_HOUR 3600.0

/* Uncovered losses per machine, before the run has a history of its own (README, "How often
 * to checkpoint", says why): AWS's two-minute notice carries most checkpoints, so fewer of
 * its preemptions go uncovered than on GCP and Azure, whose 30 s carry less; with no cloud
 * known, a notice is whatever SIGTERM a scheduler sends, and the prior is Daly's own
 * reference case, a day. */
double rr_interval_prior_s(const char *cloud)
{
	if (cloud && strcmp(cloud, "aws") == 0)
		return 72 * S_HOUR;
	return 24 * S_HOUR;
}

double rr_interval_lead_s(const char *cloud)
{
	if (!cloud)
		return 0;
	if (strcmp(cloud, "aws") == 0)
		return 120;
	if (strcmp(cloud, "gcp") == 0 || strcmp(cloud, "azure") == 0)
		return 30;
	return 0;
}

double rr_interval_daly(double cost_s, double mtbf_s)
{
	double x;

	if (!(cost_s > 0) || !(mtbf_s > 0))
		return 0;
	if (cost_s >= 2 * mtbf_s)
		return mtbf_s;
	x = cost_s / (2 * mtbf_s);
	return sqrt(2 * cost_s * mtbf_s) * (1 + sqrt(x) / 3 + x / 9) - cost_s;
}

double rr_interval_mtbf(double prior_s, double exposure_s, unsigned losses)
{
	if (exposure_s < 0)
		exposure_s = 0;
	return (prior_s + exposure_s) / (1.0 + (double)losses);
}

static int s_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double rr_interval_median(const double *v, size_t n)
{
	double s[64];

	if (n == 0)
		return 0;
	if (n > 64) {
		v += n - 64;
		n = 64;
	}
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), s_cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

void rr_interval_lead(const struct rr_lead_inputs *in, struct rr_lead_verdict *out)
{
	double window = in->lead_s - in->cost_s, c;

	memset(out, 0, sizeof(*out));
	if (!(in->lead_s > 0) || !(in->rate_bps > 0) || !(in->bytes > 0))
		return; /* unknown */
	if (window <= 0) {
		out->state = RR_LEAD_IMPOSSIBLE;
		snprintf(out->why, sizeof(out->why), "the trainer's own checkpoint takes %.1f s, "
			 "as long as the %.0f s notice lead", in->cost_s, in->lead_s);
		return;
	}
	out->budget_bytes = in->rate_bps * window * RR_INTERVAL_LEAD_SAFETY;
	if (in->bytes <= out->budget_bytes) {
		out->state = RR_LEAD_FITS;
		return;
	}
	if (!(in->between_s > 0))
		return; /* one checkpoint only: no change rate yet */
	out->saturated = in->changed >= RR_INTERVAL_SATURATED * in->bytes;
	c = in->changed / in->between_s;
	out->change_bps = c;
	if (out->saturated && in->tried_cap_s > 0 && in->between_s <= 1.25 * in->tried_cap_s) {
		out->state = RR_LEAD_IMPOSSIBLE;
		snprintf(out->why, sizeof(out->why), "every byte changed again within %.1f s, so "
			 "checkpointing more often does not shrink what a notice must carry",
			 in->between_s);
		return;
	}
	if (!(c > 0)) {
		out->state = RR_LEAD_FITS; /* nothing changes: a notice carries nothing */
		return;
	}
	out->cap_s = out->budget_bytes / (c * (1 + c / in->rate_bps)) - in->cost_s;
	if (out->cap_s < RR_INTERVAL_MIN_S) {
		out->state = RR_LEAD_IMPOSSIBLE;
		snprintf(out->why, sizeof(out->why), "it would need a checkpoint every %.2f s "
			 "(under the %.0f s minimum)", out->cap_s > 0 ? out->cap_s : 0,
			 RR_INTERVAL_MIN_S);
		out->cap_s = 0;
		return;
	}
	out->state = RR_LEAD_CAP;
}

void rr_interval_choose(double cost_s, double mtbf_s, double max_overhead, int cost_measured,
			double lead_cap_s, struct rr_interval_choice *out)
{
	memset(out, 0, sizeof(*out));
	out->daly_s = rr_interval_daly(cost_s, mtbf_s);
	out->interval_s = out->daly_s;
	out->bound = RR_BOUND_DALY;
	if (lead_cap_s > 0 && lead_cap_s < out->interval_s) {
		out->interval_s = lead_cap_s;
		out->bound = RR_BOUND_LEAD;
	}
	if (cost_measured && max_overhead > 0)
		out->floor_s = cost_s / max_overhead;
	if (out->interval_s < out->floor_s) {
		out->lead_overruled = out->bound == RR_BOUND_LEAD;
		out->interval_s = out->floor_s;
		out->bound = RR_BOUND_OVERHEAD;
	}
	if (out->interval_s < RR_INTERVAL_MIN_S) {
		out->interval_s = RR_INTERVAL_MIN_S;
		out->bound = RR_BOUND_MIN;
	} else if (out->interval_s > RR_INTERVAL_MAX_S) {
		out->interval_s = RR_INTERVAL_MAX_S;
		out->bound = RR_BOUND_MAX;
	}
}

const char *rr_interval_bound_name(enum rr_interval_bound b)
{
	static const char *const names[] = { "daly", "notice lead", "max overhead", "minimum",
					     "maximum" };
	return (unsigned)b < sizeof(names) / sizeof(names[0]) ? names[b] : "?";
}
