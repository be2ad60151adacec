/* Retention: keep the newest N committed checkpoints of a run, delete older manifests, then
 * chunks that no remaining manifest references. */
#ifndef RR_GC_H
#define RR_GC_H

#include <stddef.h>
#include <stdint.h>

#include "rr/store.h"

#define RR_GC_GRACE_MS_DEFAULT (3600 * 1000) /* chunks younger than this are never deleted */
/* The least --gc-grace a command line may give (README, "Command line"). A persist uploads
 * its chunks before the manifest that names them, and relies on chunks already stored that
 * are younger than half the grace (agent/pipeline/persist.c, struct s_known); one that runs
 * longer than that lists the chunks again before its manifest. 10 minutes covers every
 * notice's persist (windows of 30 s to 2 min) and routine ones of up to 5 minutes without
 * that second listing; a shorter grace would let gc delete the chunks of a persist still in
 * flight on another machine. */
#define RR_GC_GRACE_MS_MIN (10 * 60 * 1000)

struct rr_gc_stats {
	size_t checkpoints_deleted;
	size_t chunks_deleted;
	uint64_t bytes_freed;
	size_t chunks_young; /* unreferenced but within the grace period */
};

/* What retention keeps (README, "Command line": --keep, --keep-every, --keep-for). */
struct rr_gc_policy {
	unsigned keep;          /* the newest N committed checkpoints that are not suspect
				 * (suspect ones among them are kept too, not counted) */
	int64_t keep_every_ms;  /* > 0: besides, the oldest committed checkpoint of each such
				 * period (by commit time) ... */
	int64_t keep_for_ms;    /* ... committed within this long of now (0: for ever) */
	int64_t grace_ms;       /* unreferenced chunks younger than this stay */
};

/* Applies pol: keeps what it says, the newest proven checkpoint (rr/marks.h), every
 * checkpoint a restore holds a lease on, and everything newer than the newest committed
 * one (uploads in flight elsewhere); deletes the manifests of the others with their marks,
 * then unreferenced chunks older than the grace period, judged by the store's clock
 * (rr_store_now_ms). Manifests it cannot read are never deleted, and while one exists no
 * chunk is; nor while a restore holds a lease on a checkpoint whose manifest is gone.
 * Returns 0 or the store's error. */
int rr_gc_run_policy(struct rr_store *s, const char *run_id, const struct rr_gc_policy *pol,
		     struct rr_gc_stats *stats);

/* rr_gc_run_policy with --keep and the grace alone. Keeps the `keep` (at least 1) newest committed checkpoints and everything newer than the
 * newest committed one (uploads in flight elsewhere); deletes the manifests of older
 * checkpoints, then unreferenced chunks older than grace_ms (uploads in flight have written
 * chunks before their manifest). Manifests it cannot read are never deleted, and while one
 * exists no chunk is. Never touches the newest committed checkpoint.
 * Returns 0 or the store's error. */
int rr_gc_run(struct rr_store *s, const char *run_id, unsigned keep, int64_t grace_ms,
	      struct rr_gc_stats *stats);

/* Whether retention after a commit has work: more than `keep` checkpoints (one may go) or
 * multi-node parts, from one listing of the manifests. When not, rr_gc_run would delete
 * nothing but chunks no manifest names (a failed persist's, past the grace period): those
 * wait for the next retention that deletes a checkpoint, or for `resume-run gc`. A run of
 * `keep` checkpoints or fewer so skips listing every chunk after each commit. 1 on a store
 * error too, so that rr_gc_run meets and reports it. */
int rr_gc_due(struct rr_store *s, const char *run_id, unsigned keep);

#endif
