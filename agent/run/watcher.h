/* Watches the checkpoint directory for committed checkpoints (README,
 * "The trainer contract", "Committing a checkpoint"): a checkpoint is a directory or a
 * regular file directly inside it, committed by the rule of --commit (rr_commit_rule):
 * renamed into its final name, a marker file closed inside the directory, or a pointer file
 * naming it. Dot-names and temporary names (rr_commit_is_temp_name) are never reported.
 * Built on inotify, so the agent's event loop can poll() rr_watcher_fd() next to its other
 * descriptors.
 *
 * A name may be reported more than once (a rescan after a queue overflow or after the
 * directory was recreated reports everything present); the caller de-duplicates. */
#ifndef RR_WATCHER_H
#define RR_WATCHER_H

#include <stdint.h>

#include "rr/commit_rule.h"

struct rr_watcher;

/* Called once per committed checkpoint. name is the directory's name inside the watched
 * directory (no '/'), valid only during the call. committed_unix_ms is the commit time in
 * milliseconds since the epoch: the st_ctim of what was renamed, of the marker, or of the
 * pointer file.
 * The callback must not destroy the watcher. */
typedef void (*rr_watcher_cb)(const char *name, int64_t committed_unix_ms, void *ud);

/* Creates dir (and its parents, mode 0755) if missing and starts watching it. On success
 * *out is owned by the caller (rr_watcher_destroy); on failure *out is NULL. Returns 0,
 * RR_EINVAL (NULL or empty argument), RR_ENOENT (a path component is not a directory),
 * RR_EACCES, RR_ENOMEM or RR_EIO. Hitting an inotify limit is logged here with the sysctl
 * to raise. Existing checkpoints are not reported: call rr_watcher_scan for them. The rule
 * is rename until rr_watcher_set_rule says otherwise. */
int rr_watcher_new(const char *dir, struct rr_watcher **out);

/* Sets the commit rule; call it before the first scan. */
void rr_watcher_set_rule(struct rr_watcher *w, const struct rr_commit_rule *rule);

/* Returns the descriptor to poll() for POLLIN: readable while events are pending. It stays
 * the same for the watcher's lifetime and is owned by the watcher (do not close it). */
int rr_watcher_fd(const struct rr_watcher *w);

/* Calls cb for every committed checkpoint present now (symlinks are not followed, dot- and
 * temporary names skipped): a directory holding its marker, the directory the pointer
 * names, and, when the rule takes renames, every other directory and regular file but the
 * pointer file (under auto: except directories a framework writes in place, checkpoint-N,
 * global_stepN or holding *.distcp files, which need their marker or pointer, and files
 * that do not look like checkpoints: rr_commit_scan_takes_file). Directories
 * still without a marker are watched for it. Entries that vanish during the scan are
 * skipped. Returns 0 or an rr_error. */
int rr_watcher_scan(struct rr_watcher *w, rr_watcher_cb cb, void *ud);

/* Drains the pending events without blocking and calls cb for each commit by the rule: a
 * directory or regular file renamed (or moved in) to a final name; a marker file closed
 * (or renamed into place) inside a directory; the pointer file written, naming a directory
 * beside it. On an event-queue overflow
 * it does a full rr_watcher_scan instead. If the watched directory itself was deleted or
 * moved away, it recreates it, watches it again, logs a warning and scans it; if that
 * fails, the error is returned and the next call tries again. A directory created directly
 * under a final name (mkdir, no rename) is not a commit: under a marker rule (or auto) it
 * is watched for its marker; under rename it is logged as a warning, once per name and for
 * at most 10 names. Returns 0 or an rr_error; on an error some events of
 * this call may have been reported already. */
int rr_watcher_process(struct rr_watcher *w, rr_watcher_cb cb, void *ud);

/* rr_watcher_process, and a checkpoint file closed whole in place is committed at once
 * instead of after its settle time: the trainer has exited, nothing moves it away now. */
int rr_watcher_flush(struct rr_watcher *w, rr_watcher_cb cb, void *ud);

/* When rr_watcher_process should be called even with nothing to read (monotonic ms; 0:
 * never): a directory that could not be watched for its marker (the kernel's inotify
 * watches used up) is looked for by a scan then, and a checkpoint file closed whole in
 * place is committed once it has stayed under its name for its settle time. */
int64_t rr_watcher_next_at(const struct rr_watcher *w);

/* Reports what is still queued (as rr_watcher_process), then removes every watch: nothing
 * is reported afterwards, and rr_watcher_process only drains the descriptor. Closing an
 * inotify instance that still has watches waits for the kernel to retire them (an RCU
 * grace period, 5-20 ms on the bench machine); removed well before, the close does not
 * wait. Returns what rr_watcher_process returned; the watches are removed either way.
 * NULL or a second call: 0. */
int rr_watcher_stop(struct rr_watcher *w, rr_watcher_cb cb, void *ud);

/* Stops watching and frees w. NULL is fine. */
void rr_watcher_destroy(struct rr_watcher *w);

/* rr_watcher_destroy at the agent's exit, without waiting for the kernel to retire the
 * watches (the last close of an inotify descriptor waits for an RCU grace period: 1-8 ms
 * measured here, most of a small checkpoint's whole run): a forked child holds the
 * descriptor's last reference and closes it. The child keeps nothing else open, so a
 * pipe on the agent's output sees its end when the agent exits. */
void rr_watcher_destroy_detached(struct rr_watcher *w);

#endif
