/* What preemptions cost a run, from its ledger alone (README, "Command line", `resume-run
 * report`). */
#ifndef RR_REPORT_H
#define RR_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rr/ledger.h"

enum rr_deadline_outcome {
	RR_DEADLINE_NONE,   /* the notice gave no deadline */
	RR_DEADLINE_MET,    /* the notice's checkpoint was durable before it */
	RR_DEADLINE_MISSED, /* durable after it, or never */
};

/* One agent process: from its first to its last ledger event (or its recorded start). */
struct rr_report_attempt {
	char host[256];
	int64_t pid;
	struct rr_ledger_instance inst;
	int64_t from_ms, to_ms;
	int restored;            /* it began from a checkpoint of the store */
	unsigned notices, checkpoints, restarts;
};

struct rr_report_notice {
	size_t attempt;                  /* index into attempts */
	char kind[16], source[16];
	int64_t received_ms, deadline_ms; /* deadline 0: none */
	char checkpoint[256];            /* the checkpoint that answered it ("": none) */
	int64_t durable_ms;              /* 0: no checkpoint became durable for it */
	int64_t to_durable_ms;           /* durable - received; -1 when none */
	enum rr_deadline_outcome outcome;
	int64_t margin_ms;               /* deadline - durable: >= 0 met by, < 0 missed by;
					  * 0 with no deadline or no durable checkpoint */
	int preemption;                  /* preempt/terminate: the machine goes away */
	/* From the newest durable checkpoint before the notice (or the attempt's start, if
	 * later) to the notice: the training a preemption puts at risk; -1: unknown. */
	int64_t at_risk_ms;
	/* What the preemption cost: at_risk_ms when the deadline was missed, 0 when the
	 * notice's checkpoint was durable in time; -1 for a precaution (no preemption). */
	int64_t work_lost_ms;
};

struct rr_report_restore {
	size_t attempt;
	int64_t unix_ms;
	char checkpoint[256];
	uint64_t bytes, downloaded_bytes;
	int64_t elapsed_ms;
	int64_t fallbacks; /* damaged checkpoints skipped; -1: not recorded (older agent) */
	int already_present;
	char passed_over[256]; /* the suspect checkpoint it passed over, "" when none */
};

struct rr_report_restart {
	size_t attempt;
	int64_t unix_ms;
	int64_t exit_status, attempt_no;
	char checkpoint[256];
};

struct rr_report_suspect {
	size_t attempt;
	int64_t unix_ms;
	int64_t failures, exit_status;
	char checkpoint[256];
	char instead[256]; /* restored in its place; "" when nothing was */
};

/* Notices counted by cloud (the instance's, "" when unknown), kind and source. */
struct rr_report_count {
	char cloud[16], kind[16], source[16];
	unsigned n;
};

struct rr_report_opts {
	double price_spot;      /* per machine-hour; 0: not given */
	double price_on_demand; /* per machine-hour; 0: not given */
};

struct rr_report {
	size_t events, skipped;
	int64_t first_ms, last_ms;
	struct rr_report_attempt *attempts;
	size_t nattempts;
	struct rr_report_notice *notices;
	size_t nnotices;
	struct rr_report_restore *restores;
	size_t nrestores;
	struct rr_report_restart *restarts;
	size_t nrestarts;
	struct rr_report_suspect *suspects;
	size_t nsuspects;
	struct rr_report_count *counts;
	size_t ncounts;
	/* checkpoints */
	unsigned checkpoints, urgent_checkpoints;
	uint64_t bytes_checkpointed, bytes_stored, bytes_uploaded;
	/* notices */
	unsigned preemptions, deadlines_met, deadlines_missed;
	int64_t work_lost_ms, at_risk_ms; /* sums over preemptions */
	int64_t restore_ms;               /* sum of restore times */
	/* cost (have_cost: both prices given) */
	int have_cost;
	double machine_hours, spot_hours, on_demand_hours;
	double useful_hours;   /* machine hours less work lost and restore time */
	double cost;           /* machine hours at their own price */
	double on_demand_cost; /* the useful hours, at the on-demand price */
};

/* Builds the report from n ledger events (oldest first, as rr_ledger_load gives them).
 * Returns 0 or RR_ENOMEM; *out is the caller's (rr_report_destroy). */
int rr_report_build(const struct rr_ledger_event *ev, size_t n, const struct rr_report_opts *o,
		    struct rr_report **out);
void rr_report_destroy(struct rr_report *r);

/* Writes the report as a table for people, or as the JSON shape documented in README
 * ("## What preemptions cost"). Return 0 or RR_ENOMEM / RR_EIO. */
int rr_report_print_text(const struct rr_report *r, const char *run_id, FILE *f);
int rr_report_print_json(const struct rr_report *r, const char *run_id, FILE *f);

#endif
