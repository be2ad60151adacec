/* --every: when the agent asks the trainer for its next periodic checkpoint. A fixed
 * interval, or --every auto's (docs/performance.md, "How often to checkpoint"): Daly's interval
 * (rr/interval.h) from the stalls measured here (the ask to the commit), the run's history
 * of uncovered losses (history.h) or --mtbf, the cloud's prior and notice lead, and the
 * persist rate, bounded by --max-overhead and the notice-lead rule. No clock and no I/O of
 * its own: the loop passes the times in, and the "interval" ledger events (which the
 * metrics count too) go out through io, so the rules are tested for given histories. */
#ifndef RR_CADENCE_H
#define RR_CADENCE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "history.h"
#include "rr/interval.h"
#include "rr/persist.h"

/* Re-chosen intervals within this share of the last one logged are not logged again. */
#define RR_CADENCE_LOG_CHANGE 0.10
/* Stalls whose median is the checkpoint cost: the recent ones. */
#define RR_CADENCE_STALLS 9

struct rr_cadence_io {
	/* Records a ledger event of kind with fields (taken over). */
	void (*record)(void *ud, const char *kind, cJSON *fields);
	void *ud;
};

struct rr_cadence_opts {
	int64_t every_ms;     /* a fixed interval; 0 with every_auto */
	int every_auto;
	int64_t mtbf_ms;      /* --mtbf; 0: from the prior and the history */
	double max_overhead;  /* --max-overhead, a fraction */
	int64_t grace_ms;     /* the notice lead when no cloud is known (SIGTERM's deadline) */
	unsigned nnodes;      /* a job's nodes: any one's loss stops it */
	int64_t start_mono_ms, start_wall_ms;
};

struct rr_cadence_status {
	double interval_s;    /* in force (fixed: every_ms) */
	double cost_s;        /* the checkpoint cost used */
	int cost_measured;    /* here, or by an earlier machine; else assumed */
	unsigned stalls;      /* measured here */
	double mtbf_s;        /* used */
	const char *mtbf_from; /* "--mtbf", "history", "prior" */
	double prior_s;       /* the cloud's prior for this job */
	unsigned losses;      /* in the history */
	double exposure_s;    /* history and this machine */
	double lead_s;        /* the notice lead used */
	enum rr_lead_state lead;
	double lead_cap_s;    /* RR_LEAD_CAP */
	struct rr_interval_choice choice;
	unsigned lead_warnings, overhead_warnings; /* logged (at most once each) */
};

struct rr_cadence;

/* Returns 0 or RR_ENOMEM; *out is the caller's (rr_cadence_destroy, NULL is fine). */
int rr_cadence_new(const struct rr_cadence_opts *o, const struct rr_cadence_io *io,
		   struct rr_cadence **out);
void rr_cadence_destroy(struct rr_cadence *c);

/* The cloud ("aws", "gcp", "azure", or "" for none) once known: its prior and lead. */
void rr_cadence_set_cloud(struct rr_cadence *c, const char *cloud);
/* The run's history once read. */
void rr_cadence_set_history(struct rr_cadence *c, const struct rr_history_summary *h);
/* The trainer was asked for a checkpoint at mono_ms: periodically, or for a notice (its
 * stall measures the cost too, but is no periodic overhead). */
void rr_cadence_asked(struct rr_cadence *c, int64_t mono_ms, int for_notice);
/* A checkpoint named name, committed at commit_wall_ms, was seen at mono_ms: the answer to
 * an outstanding ask (a stall measured), and the start of the next interval. */
void rr_cadence_committed(struct rr_cadence *c, const char *name, int64_t commit_wall_ms,
			  int64_t mono_ms);
/* name's commit at commit_wall_ms was persisted (st; the store's recent rate rate_bps): the
 * notice-lead rule's input. */
void rr_cadence_persisted(struct rr_cadence *c, const char *name, int64_t commit_wall_ms,
			  const struct rr_persist_stats *st, double rate_bps);
/* The periodic time came at mono_ms (asked or not). */
void rr_cadence_fired(struct rr_cadence *c, int64_t mono_ms);

/* When to ask next (monotonic ms), re-choosing the interval from the inputs at now_wall_ms
 * (auto), and logging and recording it when it changed by RR_CADENCE_LOG_CHANGE or more. */
int64_t rr_cadence_next(struct rr_cadence *c, int64_t now_wall_ms);

void rr_cadence_status(const struct rr_cadence *c, struct rr_cadence_status *out);

#endif
