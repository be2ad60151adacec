/* `--every auto` (README, "How often to checkpoint"): how long to train between periodic
 * checkpoints. Pure arithmetic, no clock and no I/O, so every rule is tested for given
 * inputs; the agent (agent/run/cadence.c), `resume-run simulate` (rr/simulate.h) and
 * `report` all decide with these same functions.
 *
 * The interval is Daly's higher-order optimum (J. T. Daly, "A higher order estimate of the
 * optimum checkpoint interval for restart dumps", Future Generation Computer Systems 22(3),
 * 2006, doi:10.1016/j.future.2004.11.016; the first-order sqrt(2 delta M) is J. W. Young,
 * "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974), with
 * delta the measured checkpoint cost and M the mean time between the losses a notice did not
 * cover, then bounded by --max-overhead and by the notice-lead rule. */
#ifndef RR_INTERVAL_H
#define RR_INTERVAL_H

#include <stddef.h>

/* The checkpoint cost assumed before any has been measured (here or by an earlier machine
 * of the run): small, so that the first periodic checkpoint comes early and measures it. */
#define RR_INTERVAL_COST_ASSUMED_S 1.0
/* --every's own bounds. */
#define RR_INTERVAL_MIN_S 1.0
#define RR_INTERVAL_MAX_S (30.0 * 86400)
/* The notice-lead rule plans for this share of what the link moved lately (rates move). */
#define RR_INTERVAL_LEAD_SAFETY 0.8
/* A checkpoint of which at least this share changed since the one before: "everything
 * changed", so its change rate is only a lower bound. */
#define RR_INTERVAL_SATURATED 0.95

/* The prior mean time between uncovered losses of one machine on cloud ("aws", "gcp",
 * "azure"; anything else: no cloud known), in seconds (README says why these). */
double rr_interval_prior_s(const char *cloud);

/* The cloud's notice lead time in seconds (aws 120, gcp and azure 30); 0 when cloud is none
 * of them (the caller uses its SIGTERM grace). */
double rr_interval_lead_s(const char *cloud);

/* Daly's optimum compute time between checkpoints, in seconds, for a checkpoint that costs
 * cost_s and a mean time between losses mtbf_s:
 *   sqrt(2 d M) * (1 + sqrt(d / 2M) / 3 + (d / 2M) / 9) - d   when d < 2M, else M.
 * d = 5 min, M = 24 h: 116.7 min. Non-positive inputs give 0. */
double rr_interval_daly(double cost_s, double mtbf_s);

/* The estimate of the mean time between uncovered losses after losses of them in
 * exposure_s of observed time, from a Gamma prior on the loss rate worth one pseudo-loss at
 * prior_s: the reciprocal of the posterior mean rate, (prior_s + exposure_s) / (1 + losses).
 * With no history it is the prior; each loss weighs as much as the prior. */
double rr_interval_mtbf(double prior_s, double exposure_s, unsigned losses);

/* The median of n values (n > 0; the array is not changed; at most 64 are used: the
 * caller keeps the recent ones). 0 for n == 0. */
double rr_interval_median(const double *v, size_t n);

/* ---- the notice-lead rule ---- */

enum rr_lead_state {
	RR_LEAD_UNKNOWN,    /* not measured yet: two persisted checkpoints are needed */
	RR_LEAD_FITS,       /* even a whole checkpoint moves within the lead: no bound */
	RR_LEAD_CAP,        /* checkpoints at most cap_s apart keep the increment within it */
	RR_LEAD_IMPOSSIBLE, /* no interval can: why says which reason */
};

struct rr_lead_inputs {
	double lead_s;    /* the notice lead time (the cloud's, or --grace) */
	double cost_s;    /* the trainer's stall for the notice's own checkpoint */
	double rate_bps;  /* persist rate: original bytes of changed segments per second */
	double bytes;     /* the newest persisted checkpoint's original bytes */
	double changed;   /* of those, the bytes that changed since the checkpoint before it */
	double between_s; /* from that checkpoint's commit to this one's */
	/* The bound in force while between_s ran (0: none): a checkpoint that changed everything
	 * even then shows that a shorter interval does not shrink the increment. */
	double tried_cap_s;
};

struct rr_lead_verdict {
	enum rr_lead_state state;
	double cap_s;        /* RR_LEAD_CAP: the longest interval that keeps it */
	double budget_bytes; /* what the link moves in the lead, less the stall, with margin */
	double change_bps;   /* bytes changing per second of training (a lower bound when
			      * saturated) */
	int saturated;       /* everything changed between the two checkpoints */
	char why[160];       /* RR_LEAD_IMPOSSIBLE: the reason, for the log */
};

/* The rule: a notice arriving just before the next periodic checkpoint is durable must
 * carry the increment since the last durable one (the interval, the stall, and that
 * persist's own time, all at the measured change rate c) within what the link moves in the
 * lead: c (tau + d) (1 + c / rate) <= rate (lead - d) * RR_INTERVAL_LEAD_SAFETY, so
 * cap = budget / (c (1 + c / rate)) - d. Impossible when the stall alone exceeds the lead,
 * when the cap would be under RR_INTERVAL_MIN_S, or when everything changed again within
 * the cap already tried (every byte changes each step). */
void rr_interval_lead(const struct rr_lead_inputs *in, struct rr_lead_verdict *out);

/* ---- the choice ---- */

enum rr_interval_bound {
	RR_BOUND_DALY,     /* Daly's optimum */
	RR_BOUND_LEAD,     /* shortened by the notice-lead rule */
	RR_BOUND_OVERHEAD, /* lengthened to keep the stall within --max-overhead */
	RR_BOUND_MIN,      /* RR_INTERVAL_MIN_S */
	RR_BOUND_MAX,      /* RR_INTERVAL_MAX_S */
};

struct rr_interval_choice {
	double daly_s;     /* Daly's optimum for the inputs */
	double floor_s;    /* the overhead bound: cost / max_overhead (0: not applied) */
	double interval_s; /* what to use */
	enum rr_interval_bound bound;
	int lead_overruled; /* the lead rule wanted less than the overhead bound allows */
};

/* The interval for cost_s and mtbf_s, with the stall at most max_overhead (a fraction,
 * e.g. 0.05) of training time when cost_measured (an assumed cost bounds nothing), and at
 * most lead_cap_s when that is > 0. The overhead bound wins over the lead rule. */
void rr_interval_choose(double cost_s, double mtbf_s, double max_overhead, int cost_measured,
			double lead_cap_s, struct rr_interval_choice *out);

/* "daly", "notice lead", "max overhead", "minimum", "maximum" */
const char *rr_interval_bound_name(enum rr_interval_bound b);

#endif
