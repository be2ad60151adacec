/* Prometheus metrics of one agent (--metrics-file), fed the same events as the ledger, in
 * the text exposition format, for node_exporter's textfile collector: the file is
 * replaced atomically (temp file beside it, fsync, rename), so a scrape never sees half. */
#ifndef RR_METRICS_H
#define RR_METRICS_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "rr/buf.h"

struct rr_metrics;

/* A metrics object that writes to path (NULL: keeps the numbers, writes nothing), with the
 * build-info gauge carrying version. Nothing is written until the first flush. Returns 0
 * or RR_ENOMEM; *out is the caller's (rr_metrics_destroy). */
int rr_metrics_new(const char *path, const char *version, struct rr_metrics **out);
void rr_metrics_destroy(struct rr_metrics *m);

/* Counts one ledger event: kind as given to rr_event_record and its fields (read, not
 * taken; may be NULL). Thread-safe and cheap: no I/O (see rr_metrics_flush). NULL m: no-op. */
void rr_metrics_observe(struct rr_metrics *m, const char *kind, const cJSON *fields);

/* Counts a notice whose deadline passed at now_unix_ms with no durable checkpoint for it
 * (the agent is leaving). */
void rr_metrics_finish(struct rr_metrics *m, int64_t now_unix_ms);

/* Rewrites the file if anything changed since the last flush (or it was never written).
 * Returns 0 or the write's error (logged once). NULL m: 0. */
int rr_metrics_flush(struct rr_metrics *m);

/* Test hook (the agent writes the file with rr_metrics_flush; only the tests call this). The
 * exposition text of the current numbers, appended to out. Returns 0 or RR_ENOMEM /
 * RR_ETOOBIG. */
int rr_metrics_render(struct rr_metrics *m, struct rr_buf *out);

#endif
