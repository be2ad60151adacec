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
	/* How it ended, from its exit event: "finished", "preempted", "failed", "killed"; ""
	 * when it recorded none (lost without a word, still running, or an agent older than
	 * exit events: rr_report_ended says which) */
	char ended[16];
	int64_t exit_status;     /* the agent's, with ended */
	char signal[16];         /* "killed": the trainer's signal ("KILL") */
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
	uint64_t unused_bytes; /* of downloaded: other checkpoints' data in the packs it read */
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

/* The periodic interval (--every) against what it cost, and against the best fixed interval
 * in hindsight (agent/catalog/report_interval.c). */
struct rr_report_interval {
	int have;               /* the ledger has interval events */
	char mode[8];           /* "auto", "fixed" or "mixed" */
	int64_t last_ms, min_ms, max_ms; /* the intervals recorded */
	int64_t cost_ms;        /* the median of the periodic stalls recorded (0: none) */
	unsigned stalls;        /* periodic checkpoints whose stall was recorded */
	int64_t overhead_ms;    /* those stalls, summed */
	unsigned losses, vanished, missed; /* ends no notice covered (rr/losses.h) */
	int64_t lost_ms;        /* the training they lost (a vanished machine's: a lower bound) */
	int64_t training_ms;    /* the machines' time, summed */
	int have_best;          /* a cost to judge by: the hindsight below is filled */
	int64_t best_ms, best_overhead_ms, best_lost_ms;
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
	unsigned exits;          /* exit events: with none, the agents predate them */
	unsigned lost;           /* machines without an exit event that a later one followed */
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
	struct rr_report_interval interval;
};

/* How machine i ended, for people: its exit event's "how"; "lost" when it recorded none and
 * a later machine followed it; "running or lost" for the newest without one; NULL when the
 * ledger has no exit events at all (agents older than them). */
const char *rr_report_ended(const struct rr_report *r, size_t i);

/* Builds the report from n ledger events (oldest first, as rr_ledger_load gives them).
 * Returns 0 or RR_ENOMEM; *out is the caller's (rr_report_destroy). */
int rr_report_build(const struct rr_ledger_event *ev, size_t n, const struct rr_report_opts *o,
		    struct rr_report **out);
void rr_report_destroy(struct rr_report *r);

/* Writes the report as a table for people, or as the JSON shape documented in README
 * ("## What preemptions cost"). Return 0 or RR_ENOMEM / RR_EIO. */
int rr_report_print_text(const struct rr_report *r, const char *run_id, FILE *f);
int rr_report_print_json(const struct rr_report *r, const char *run_id, FILE *f);

/* Fills r->interval from the report and its n events. Returns 0 or RR_ENOMEM. */
int rr_report_interval_build(struct rr_report *r, const struct rr_ledger_event *ev, size_t n);
/* The section for people; and for tools, a new cJSON object (NULL on ENOMEM; a JSON null
 * when the run recorded no interval). */
void rr_report_interval_print_text(const struct rr_report *r, FILE *f);
struct cJSON *rr_report_interval_json(const struct rr_report *r);

#endif
