/* The run's past, for --every auto: how often its earlier machines were lost without a
 * notice covering them, and what a checkpoint cost there (rr/losses.h). Read from the ledger
 * on a thread of its own with a store handle of its own, so neither the trainer's start nor
 * the agent's exit waits on a long ledger. */
#ifndef RR_HISTORY_H
#define RR_HISTORY_H

#include <stdint.h>

#include "rr/store.h"

/* The newest ledger events read (one GET each): the recent past is the relevant one. */
#define RR_HISTORY_MAX_EVENTS 2000

struct rr_history_summary {
	unsigned machines;    /* earlier machines of the run in the events read */
	unsigned losses;      /* uncovered: vanished + missed */
	unsigned vanished, missed;
	int64_t exposure_ms;  /* the run's own time on them */
	int64_t end_ms;       /* the newest of their events (wall clock) */
	int64_t cost_ms;      /* the checkpoint cost their newest interval event recorded; 0 */
};

struct rr_history;

/* Starts reading the ledger of run_id at url (opts as for rr_store_open) for the events
 * before start_wall_ms (this machine's start: what follows is its own). nnodes > 1: the
 * nodes of one job start together, so a node silent since a minute before this start is
 * taken as still running. Returns 0 or an error; *out is the caller's (rr_history_stop). */
int rr_history_start(const char *url, const struct rr_store_opts *opts, const char *run_id,
		     int64_t start_wall_ms, unsigned nnodes, struct rr_history **out);

/* 1 once the read is over (successfully: *out filled; or not: logged, *out zeroed), and
 * only the first time it is asked after that; 0 meanwhile. */
int rr_history_poll(struct rr_history *h, struct rr_history_summary *out);

/* Stops the read (cancelling its requests) and frees; NULL is fine. */
void rr_history_stop(struct rr_history *h);

#endif
