/* The background persister: one thread that takes committed checkpoints (the newest wins;
 * a notice's checkpoint goes ahead of everything) and ledger events, persists them, moves
 * LATEST forward (compare-and-swap), and applies retention. The event loop never waits on
 * it: it is told of finished work through a readable file descriptor. */
#ifndef RR_PERSISTER_H
#define RR_PERSISTER_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "rr/commit_rule.h"
#include "rr/manifest.h"
#include "metrics.h"
#include "rr/persist.h"
#include "rr/store.h"
#include "throughput.h"

struct rr_persister_config {
	struct rr_store *store;
	const char *run_id;
	const char *checkpoint_dir;
	unsigned keep;
	int64_t keep_every_ms, keep_for_ms; /* --keep-every, --keep-for (rr/gc.h) */
	unsigned threads;
	int zstd_level;
	int64_t gc_grace_ms;
	enum rr_precision precision;
	const char *const *exact_globs;
	unsigned n_exact_globs;
	/* NULL: none. Fed every ledger event as it is queued; the file is rewritten on this
	 * thread, after the work in hand, so it never holds a notice's checkpoint back. */
	struct rr_metrics *metrics;
	/* The store's URL: its scheme seeds the throughput estimate (NULL: a remote store). */
	const char *store_url;
	unsigned nnodes;    /* > 1: checkpoints are stored as this node's part (rr/parts.h) */
	unsigned node_rank;
	/* The store's chunks as the start-up lookup listed them (rr_chunk_index_of_catalog),
	 * taken over by rr_persister_new even when it fails; NULL: the first persist lists. */
	struct rr_chunk_index *chunks;
	/* What commits a checkpoint: one written in place is let settle before it is read
	 * (rr_persist_settle). NULL: none is. */
	const struct rr_commit_rule *commit;
};

struct rr_persist_result {
	char name[256];
	int64_t committed_ms; /* the commit it persisted (a name may be committed again) */
	int rc;       /* 0, RR_EEXIST (already in the store), RR_ECANCELED, or an error */
	int urgent;
	struct rr_persist_stats stats;
};

struct rr_persister;

/* Starts the thread. baseline (may be NULL; copied by reference and taken over) is the
 * newest checkpoint already in the store: older submissions are ignored and its unchanged
 * segments are reused. Returns 0 or an rr_error; *out is the caller's to destroy. */
int rr_persister_new(const struct rr_persister_config *cfg, struct rr_manifest *baseline,
		     struct rr_persister **out);

/* Queues a committed checkpoint. urgent (a notice's): persisted before anything else,
 * setting aside an older persist in progress, and never replaced by a routine one (submitting
 * a queued routine one again with urgent set makes it the notice's). Of the routine ones only
 * the newest queued is kept. */
void rr_persister_submit(struct rr_persister *p, const char *name, int64_t committed_unix_ms,
			 int urgent);

/* The trainer starts again from name, older than what was persisted (a suspect checkpoint
 * set aside): the next commit of a later one, even under a name already persisted, is
 * persisted. m (may be NULL; taken over) is its manifest, for reuse: the persister's thread
 * takes it before its next piece of work (a persist in progress keeps what it started with). */
void rr_persister_rewind(struct rr_persister *p, const char *name, int64_t committed_ms,
			 struct rr_manifest *m);

/* name is suspect: a queued submission of it is dropped, and a persist of it in progress is
 * set aside and waited for (a moment: its requests end within ~100 ms), so that what the
 * store holds of it is settled when this returns: its manifest is there (it landed first,
 * and can be marked) or it never will be. */
void rr_persister_drop(struct rr_persister *p, const char *name);
/* Queues a ledger event (fields taken over, may be NULL). A "proven" event ({"checkpoint",
 * "committed_after"}) also writes that checkpoint's proven mark (rr/marks.h). */
void rr_persister_record(struct rr_persister *p, const char *kind, cJSON *fields);

/* Readable when results are waiting (eventfd). */
int rr_persister_fd(const struct rr_persister *p);

/* Moves up to max finished results into out; returns how many. */
size_t rr_persister_collect(struct rr_persister *p, struct rr_persist_result *out, size_t max);

/* 1 while anything is queued or running. */
int rr_persister_busy(struct rr_persister *p);

/* Copies the recent persist throughput and the newest persisted checkpoint into out, for a
 * notice's deadline estimate. */
void rr_persister_throughput(struct rr_persister *p, struct rr_throughput *out);

/* Cancels the persist in progress (it ends with RR_ECANCELED, logged with why) and drops
 * queued work. */
void rr_persister_cancel(struct rr_persister *p, const char *why);

/* The agent is leaving and has waited long enough: retention starts no more, and one
 * running stops at once (its next run, here or on the next machine, finishes it); persists
 * go on. */
void rr_persister_leaving(struct rr_persister *p);

/* Stops the thread (finishing the current job) and frees everything; NULL is fine. */
void rr_persister_destroy(struct rr_persister *p);

#endif
