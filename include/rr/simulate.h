/* `resume-run simulate` and `report`'s hindsight: a simulated trainer replayed against a
 * history of machine losses, under a fixed interval, under `--every auto`'s rule
 * (rr/interval.h), and under the best fixed interval in hindsight. Deterministic for a given
 * seed: no clock, no I/O (the trace file is parsed from memory). */
#ifndef RR_SIMULATE_H
#define RR_SIMULATE_H

#include <stddef.h>
#include <stdint.h>

#define RR_SIM_TRACE_MAX_EVENTS 100000
#define RR_SIM_TRACE_MAX_BYTES (8u << 20)
#define RR_SIM_MAX_LIVES 10000000 /* synthetic machines per simulation */

enum rr_sim_end {
	RR_SIM_CENSORED,  /* the simulation ended with the machine still training */
	RR_SIM_UNCOVERED, /* lost without a notice that could carry a checkpoint */
	RR_SIM_NOTICE,    /* lost after a notice whose lead held the checkpoint's stall */
};

/* One machine: it trains span_s, then ends. Its successor restores the newest checkpoint
 * at once (restore time is the same under every policy and is not simulated). */
struct rr_sim_life {
	double span_s;
	enum rr_sim_end end;
};

struct rr_sim_trace {
	struct rr_sim_life *lives;
	size_t n;
	double total_s;      /* the sum of the spans */
	unsigned uncovered;  /* lives that ended uncovered */
	unsigned notices;    /* lives that ended after a notice in time */
};

/* Synthetic histories of total_s seconds: machine lifetimes drawn independently from an
 * exponential distribution of mean mtbf_s (losses as a Poisson process), or a Weibull of
 * that mean and the given shape (< 1: losses cluster early in a machine's life). Every
 * lifetime but the last (censored at total_s) ends in an uncovered loss. Returns 0,
 * RR_EINVAL or RR_ENOMEM; free with rr_sim_trace_free. */
int rr_sim_exponential(double mtbf_s, double total_s, uint64_t seed, struct rr_sim_trace *out);
int rr_sim_weibull(double shape, double mtbf_s, double total_s, uint64_t seed,
		   struct rr_sim_trace *out);

/* A trace file (README, "resume-run simulate"): one event per line, "SECONDS loss" or
 * "SECONDS notice [LEAD]", seconds from the start in non-decreasing order, '#' comments and
 * blank lines ignored. A notice ends a machine covered when its lead (else lead_s) is at
 * least cost_s, the checkpoint's stall; otherwise, like a loss, uncovered. After the last
 * event a machine trains until total_s (0: until the last event). At most
 * RR_SIM_TRACE_MAX_EVENTS events and RR_SIM_TRACE_MAX_BYTES bytes. Returns 0, or RR_EINVAL
 * with "line N: ..." in why, or RR_ENOMEM. */
int rr_sim_trace_parse(const char *text, size_t len, double lead_s, double cost_s,
		       double total_s, struct rr_sim_trace *out, char *why, size_t why_len);

void rr_sim_trace_free(struct rr_sim_trace *t);

struct rr_sim_result {
	double interval_s;   /* fixed: the interval; auto: the one in force at the end */
	double checkpoints;  /* periodic checkpoints taken */
	double overhead_s;   /* their stalls, plus a stall per notice */
	double lost_s;       /* training redone after uncovered losses */
	double waste_s;      /* overhead + lost */
};

/* A fixed interval tau_s between checkpoints that each stall the trainer cost_s. */
void rr_sim_fixed(const struct rr_sim_trace *t, double cost_s, double tau_s,
		  struct rr_sim_result *out);

/* `--every auto` (rr/interval.h): starting from a cost of RR_INTERVAL_COST_ASSUMED_S until
 * the first checkpoint measures cost_s, and from prior_s for the mean time between losses
 * (mtbf_s > 0: known, as with --mtbf), re-chosen at every checkpoint from the losses seen so
 * far, within max_overhead. */
struct rr_sim_auto {
	double cost_s;
	double prior_s;
	double mtbf_s;
	double max_overhead;
};
void rr_sim_auto(const struct rr_sim_trace *t, const struct rr_sim_auto *a,
		 struct rr_sim_result *out);

/* The fixed interval with the least waste over t, found by search (the waste of a fixed
 * interval is piecewise smooth in it). */
void rr_sim_best_fixed(const struct rr_sim_trace *t, double cost_s, struct rr_sim_result *out);

#endif
