/* Reading the run's ledger back (events/<unix-ms>-<kind>.json in the store, written by
 * rr_event_record). Events are outside data: any machine of the run, of any version, wrote
 * them, so every field is optional, bounded and checked. */
#ifndef RR_LEDGER_H
#define RR_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include "rr/store.h"

#define RR_LEDGER_EVENT_MAX (64 * 1024) /* bytes of one event object */
#define RR_LEDGER_EVENTS_MAX 200000     /* events read per run */

enum rr_ledger_kind {
	RR_LEDGER_OTHER, /* a kind this version does not know: counted, not used */
	RR_LEDGER_START, /* an agent started without a checkpoint to restore */
	RR_LEDGER_RESTORE,
	RR_LEDGER_NOTICE,
	RR_LEDGER_CHECKPOINT,
	RR_LEDGER_RESTART,
	RR_LEDGER_INTERVAL, /* --every: the periodic interval and what it was chosen from */
	RR_LEDGER_SUSPECT,  /* a checkpoint set aside after repeated failures */
	RR_LEDGER_EXIT,     /* an agent ended: how (a machine without one was lost, or runs) */
};

/* Where an event was recorded; empty strings when the ledger does not say. */
struct rr_ledger_instance {
	char cloud[16];
	char instance_id[128];
	char instance_type[128];
	char zone[128];
	char lifecycle[16]; /* "spot", "on-demand" or "" */
};

/* One event. Times are Unix milliseconds, 0 when unknown; counts are 0 when absent. */
struct rr_ledger_event {
	enum rr_ledger_kind kind;
	int64_t unix_ms;       /* when it was written to the ledger */
	char host[256];
	int64_t pid;
	int64_t started_ms;    /* start/restore: when the agent started */
	struct rr_ledger_instance inst;
	/* notice */
	char notice[16];       /* "preempt", "rebalance", "maintenance", "terminate" */
	char source[16];       /* "aws", "gcp", "azure", "signal", "file" */
	int64_t received_ms;   /* ms precision when recorded, else the second */
	int64_t deadline_ms;   /* 0: no deadline */
	/* checkpoint, restore, restart: the checkpoint's name ("" when none) */
	char checkpoint[256];
	uint64_t bytes, stored_bytes, new_bytes, downloaded_bytes;
	uint64_t unused_bytes; /* restore: of downloaded, parts of packs it does not use */
	int64_t elapsed_ms;
	int64_t committed_ms;  /* checkpoint: when the trainer committed it (0: unknown) */
	int64_t durable_ms;    /* checkpoint: when its manifest was written (else unix_ms) */
	int urgent;            /* checkpoint: written for a notice */
	int already_present;   /* restore: nothing had to be copied */
	int64_t fallbacks;     /* restore: damaged checkpoints skipped (-1: not recorded) */
	int64_t exit_status;   /* restart: the failed trainer's exit status; exit: the agent's */
	char how[16];          /* exit: "finished", "preempted", "failed", "killed", "error",
				* "stopped" */
	char signal[16];       /* exit: "KILL", ... when the trainer died of a signal */
	int64_t attempt;       /* restart: the attempt number started */
	/* interval (0 when absent) */
	char mode[8];          /* "auto" or "fixed" */
	int64_t interval_ms;   /* the interval in force */
	int64_t cost_ms;       /* the checkpoint cost it was chosen with */
	int64_t mtbf_ms;       /* the mean time between uncovered losses it was chosen with */
	int64_t stall_ms;      /* a periodic checkpoint's stall measured now (0: none) */
	int64_t failures;      /* suspect: failed attempts that led to the mark */
	/* suspect: what was restored instead ("" when nothing, or not here); restore: the
	 * suspect checkpoint it passed over ("" when none) */
	char instead[256];
};

/* Parses one ledger event (len bytes of JSON, at most RR_LEDGER_EVENT_MAX). Fields older
 * versions did not write get their fallbacks (see the struct). Returns 0, or RR_EINVAL /
 * RR_ETOOBIG with the reason in why. */
int rr_ledger_event_parse(const char *text, size_t len, struct rr_ledger_event *out, char *why,
			  size_t why_len);

/* Reads every event of run_id from the store, oldest first, into *out (malloc'd, the
 * caller frees; NULL when there are none). Events that cannot be read or parsed are left
 * out, logged and counted in *skipped. Returns 0 or the store's error. */
int rr_ledger_load(struct rr_store *s, const char *run_id, struct rr_ledger_event **out,
		   size_t *n, size_t *skipped);

/* The same, for at most the max newest events (1 <= max <= RR_LEDGER_EVENTS_MAX): what a
 * running agent reads of its run's history. */
int rr_ledger_load_newest(struct rr_store *s, const char *run_id, size_t max,
			  struct rr_ledger_event **out, size_t *n, size_t *skipped);

#endif
