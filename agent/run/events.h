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

/* This machine's host name, for ledgers and manifests (static storage). */
const char *rr_hostname(void);

#endif
