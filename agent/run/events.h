/* The run's ledger in the store: events/<unix-ms>-<kind>.json, one object per event. */
#ifndef RR_EVENTS_H
#define RR_EVENTS_H

#include <cjson/cJSON.h>

#include "rr/store.h"

/* Writes an event of `kind` ("notice", "checkpoint", "restore", "restart", ...) with the
 * members of fields (taken over and freed; may be NULL) plus kind, unix_ms, run_id, host
 * and pid. Create-only, so events from several machines never overwrite each other.
 * Returns 0 or the store's error. */
int rr_event_record(struct rr_store *s, const char *run_id, const char *kind, cJSON *fields);

/* The fields of the ledger's "exit" event: how this machine's agent ended (README, "What is
 * stored"), so `report` can tell a lost machine (no exit event) from one that finished:
 * how is "finished" (the trainer exited 0), "preempted" (a notice or SIGTERM stopped it; the
 * work goes on elsewhere), "failed" (the trainer failed with no restart left), "error" (the
 * agent could not start or run it) or "stopped" (a signal before the trainer started).
 * checkpoint: the newest the trainer committed here ("" : none). Returns the object, NULL
 * when out of memory. */
cJSON *rr_event_exit(const char *how, int exit_status, int trainer_status, unsigned restarts,
		     const char *checkpoint, int64_t started_unix_ms);

/* This machine's host name, for ledgers and manifests (static storage). */
const char *rr_hostname(void);

#endif
