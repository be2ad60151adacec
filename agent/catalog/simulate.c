#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/interval.h"
#include "rr/simulate.h"

#define S_TIME_MAX 1.0e10 /* seconds in a trace: about 300 years */
#define S_LINE_MAX 256

/* splitmix64 (Steele, Lea, Flood 2014): small, fast, and the same numbers on every
 * machine, so a seed names one history. */
static uint64_t s_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1): never 0, so its logarithm is finite. */
static double s_uniform(uint64_t *state)
{
	return ((double)(s_next(state) >> 11) + 0.5) * 0x1.0p-53;
}

static int s_push(struct rr_sim_trace *t, size_t *cap, double span, enum rr_sim_end end)
{
	if (t->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		struct rr_sim_life *l;
		if (t->n >= RR_SIM_MAX_LIVES)
			return RR_EINVAL;
		l = realloc(t->lives, ncap * sizeof(*l));
		if (!l)
			return RR_ENOMEM;
		t->lives = l;
		*cap = ncap;
	}
	t->lives[t->n++] = (struct rr_sim_life){ span, end };
	t->total_s += span;
	t->uncovered += end == RR_SIM_UNCOVERED;
	t->notices += end == RR_SIM_NOTICE;
	return 0;
}

/* Lifetimes scale * (-ln u)^(1/shape) until total_s is used up: shape 1 is exponential. */
static int s_synthetic(double shape, double scale, double total_s, uint64_t seed,
		       struct rr_sim_trace *out)
{
	uint64_t state = seed;
	size_t cap = 0;
	double at = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!(scale > 0) || !(total_s > 0) || !isfinite(scale) || !isfinite(total_s))
		return RR_EINVAL;
	while (!rc && at < total_s) {
		double e = -log(s_uniform(&state));
		double life = scale * (shape == 1.0 ? e : pow(e, 1.0 / shape));
		if (at + life >= total_s)
			rc = s_push(out, &cap, total_s - at, RR_SIM_CENSORED);
		else
			rc = s_push(out, &cap, life, RR_SIM_UNCOVERED);
		at += life;
	}
	if (rc)
		rr_sim_trace_free(out);
	return rc;
}

int rr_sim_exponential(double mtbf_s, double total_s, uint64_t seed, struct rr_sim_trace *out)
{
	return s_synthetic(1.0, mtbf_s, total_s, seed, out);
}

int rr_sim_weibull(double shape, double mtbf_s, double total_s, uint64_t seed,
		   struct rr_sim_trace *out)
{
	memset(out, 0, sizeof(*out));
	if (!(shape >= 0.1 && shape <= 10))
		return RR_EINVAL;
	/* The Weibull mean is scale * Gamma(1 + 1/shape). */
	return s_synthetic(shape, mtbf_s / tgamma(1.0 + 1.0 / shape), total_s, seed, out);
}

/* A plain non-negative decimal number of seconds, nothing else. */
static int s_seconds(const char *w, double *out)
{
	char *end;

	if (!*w || strspn(w, "0123456789.") != strlen(w))
		return RR_EINVAL;
	errno = 0;
	*out = strtod(w, &end);
	if (errno || *end || !(*out >= 0) || *out > S_TIME_MAX)
		return RR_EINVAL;
	return 0;
}

/* One line's words (at most 3) into w, NUL-terminated in place. Returns how many, or -1
 * for more. */
static int s_words(char *line, char **w)
{
	int n = 0;

	for (char *p = line; *p;) {
		while (*p == ' ' || *p == '\t')
			*p++ = '\0';
		if (!*p)
			break;
		if (n == 3)
			return -1;
		w[n++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	return n;
}

static int s_parse_line(char *line, double lead_s, double cost_s, double *at,
			enum rr_sim_end *end, char *why, size_t why_len)
{
	char *w[3];
	double lead = lead_s;
	int n = s_words(line, w);

	if (n < 0) {
		snprintf(why, why_len, "too many words");
		return RR_EINVAL;
	}
	if (n < 2) {
		snprintf(why, why_len, "expected \"SECONDS loss\" or \"SECONDS notice [LEAD]\"");
		return RR_EINVAL;
	}
	if (s_seconds(w[0], at)) {
		snprintf(why, why_len, "bad time in seconds");
		return RR_EINVAL;
	}
	if (strcmp(w[1], "loss") == 0 && n == 2) {
		*end = RR_SIM_UNCOVERED;
	} else if (strcmp(w[1], "notice") == 0) {
		if (n == 3 && s_seconds(w[2], &lead)) {
			snprintf(why, why_len, "bad notice lead in seconds");
			return RR_EINVAL;
		}
		/* The notice carries a checkpoint only when its lead holds the stall. */
		*end = lead >= cost_s ? RR_SIM_NOTICE : RR_SIM_UNCOVERED;
	} else {
		snprintf(why, why_len, "expected \"loss\" or \"notice [LEAD]\" after the time");
		return RR_EINVAL;
	}
	return 0;
}

int rr_sim_trace_parse(const char *text, size_t len, double lead_s, double cost_s,
		       double total_s, struct rr_sim_trace *out, char *why, size_t why_len)
{
	char line[S_LINE_MAX + 1], what[128];
	size_t cap = 0, pos = 0, lineno = 0, events = 0;
	double last = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (len > RR_SIM_TRACE_MAX_BYTES) {
		snprintf(why, why_len, "trace larger than %u bytes", RR_SIM_TRACE_MAX_BYTES);
		return RR_EINVAL;
	}
	while (!rc && pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (text + pos)) : len - pos;
		enum rr_sim_end end;
		double at;

		lineno++;
		if (l > S_LINE_MAX) {
			snprintf(what, sizeof(what), "longer than %d characters", S_LINE_MAX);
			rc = RR_EINVAL;
			break;
		}
		memcpy(line, text + pos, l);
		line[l] = '\0';
		pos += l + 1;
		if (strlen(line) != l) {
			snprintf(what, sizeof(what), "a NUL byte");
			rc = RR_EINVAL;
			break;
		}
		if (l && line[l - 1] == '\r')
			line[l - 1] = '\0';
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		if (line[strspn(line, " \t")] == '\0')
			continue;
		rc = s_parse_line(line, lead_s, cost_s, &at, &end, what, sizeof(what));
		if (!rc && at < last) {
			snprintf(what, sizeof(what), "time %.3f is before the line above (%.3f)", at,
				 last);
			rc = RR_EINVAL;
		}
		if (!rc && ++events > RR_SIM_TRACE_MAX_EVENTS) {
			snprintf(what, sizeof(what), "more than %d events", RR_SIM_TRACE_MAX_EVENTS);
			rc = RR_EINVAL;
		}
		if (rc || (total_s > 0 && at > total_s))
			break;
		rc = s_push(out, &cap, at - last, end);
		if (rc == RR_EINVAL)
			snprintf(what, sizeof(what), "too many machines");
		last = at;
	}
	if (!rc && total_s > last)
		rc = s_push(out, &cap, total_s - last, RR_SIM_CENSORED);
	if (rc) {
		if (rc == RR_EINVAL)
			snprintf(why, why_len, "line %zu: %s", lineno, what);
		rr_sim_trace_free(out);
	}
	return rc;
}

void rr_sim_trace_free(struct rr_sim_trace *t)
{
	if (!t)
		return;
	free(t->lives);
	memset(t, 0, sizeof(*t));
}

/* What the rest of a life costs once its checkpoints are taken: remain_s since the last. */
static void s_end_of_life(const struct rr_sim_life *l, double cost_s, double remain_s,
			  struct rr_sim_result *out)
{
	if (l->end == RR_SIM_UNCOVERED)
		out->lost_s += remain_s;
	else if (l->end == RR_SIM_NOTICE)
		out->overhead_s += cost_s; /* the notice's own checkpoint */
}

void rr_sim_fixed(const struct rr_sim_trace *t, double cost_s, double tau_s,
		  struct rr_sim_result *out)
{
	double cycle = tau_s + cost_s;

	memset(out, 0, sizeof(*out));
	out->interval_s = tau_s;
	for (size_t i = 0; i < t->n && cycle > 0; i++) {
		double k = floor(t->lives[i].span_s / cycle);
		out->checkpoints += k;
		out->overhead_s += k * cost_s;
		s_end_of_life(&t->lives[i], cost_s, t->lives[i].span_s - k * cycle, out);
	}
	out->waste_s = out->overhead_s + out->lost_s;
}

void rr_sim_auto(const struct rr_sim_trace *t, const struct rr_sim_auto *a,
		 struct rr_sim_result *out)
{
	double before = 0; /* training on earlier machines: the history's exposure */
	unsigned losses = 0;
	int measured = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < t->n; i++) {
		const struct rr_sim_life *l = &t->lives[i];
		double at = 0;
		for (;;) {
			struct rr_interval_choice ch;
			double m = a->mtbf_s > 0 ? a->mtbf_s :
				   rr_interval_mtbf(a->prior_s, before + at, losses);
			double cycle, k;
			rr_interval_choose(measured ? a->cost_s : RR_INTERVAL_COST_ASSUMED_S, m,
					   a->max_overhead, measured, 0, &ch);
			out->interval_s = ch.interval_s;
			cycle = ch.interval_s + a->cost_s;
			if (at + cycle > l->span_s)
				break;
			/* The agent chooses again at every checkpoint; here checkpoints are taken
			 * in runs over which the exposure grows by at most 1% (the estimate of M,
			 * and so the interval, by less), so that long simulations stay fast. */
			k = 1;
			if (measured && a->mtbf_s > 0)
				k = floor((l->span_s - at) / cycle);
			else if (measured)
				k = fmax(1, floor(0.01 * (a->prior_s + before + at) / cycle));
			if (at + k * cycle > l->span_s)
				k = floor((l->span_s - at) / cycle);
			at += k * cycle;
			out->checkpoints += k;
			out->overhead_s += k * a->cost_s;
			measured = 1;
		}
		s_end_of_life(l, a->cost_s, l->span_s - at, out);
		before += l->span_s;
		losses += l->end == RR_SIM_UNCOVERED;
	}
	out->waste_s = out->overhead_s + out->lost_s;
}

void rr_sim_best_fixed(const struct rr_sim_trace *t, double cost_s, struct rr_sim_result *out)
{
	enum { S_COARSE = 240, S_FINE = 200 };
	double lo = RR_INTERVAL_MIN_S, hi = RR_INTERVAL_MIN_S, grid[S_COARSE];
	struct rr_sim_result r;
	size_t best = 0;

	for (size_t i = 0; i < t->n; i++)
		if (t->lives[i].span_s > hi)
			hi = t->lives[i].span_s;
	hi *= 1.01; /* past the longest life: no checkpoint at all */
	/* Coarse: log-spaced, then fine: linear between the best point's neighbours. */
	for (size_t i = 0; i < S_COARSE; i++) {
		grid[i] = lo * pow(hi / lo, (double)i / (S_COARSE - 1));
		rr_sim_fixed(t, cost_s, grid[i], &r);
		if (i == 0 || r.waste_s < out->waste_s) {
			*out = r;
			best = i;
		}
	}
	double a = grid[best > 0 ? best - 1 : 0], b = grid[best + 1 < S_COARSE ? best + 1 : best];
	for (size_t i = 0; i <= S_FINE; i++) {
		rr_sim_fixed(t, cost_s, a + (b - a) * (double)i / S_FINE, &r);
		if (r.waste_s < out->waste_s)
			*out = r;
	}
}
