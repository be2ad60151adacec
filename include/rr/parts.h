/* Multi-node checkpoints (docs/how-it-works.md, "What is stored"): each node's agent stores its
 * files as a part, checkpoints/<name>/parts/<rank>.json (a manifest of that node's files);
 * whichever agent sees the last of the N parts commits the checkpoint with a create-only
 * checkpoints/<name>/manifest.json naming them all. That commit manifest is an ordinary
 * manifest whose files are the parts' files under RR_PART_DIR "<rank>/", so ls, verify, gc and
 * retention count and check it like any other; restore takes one node's view of it. */
#ifndef RR_PARTS_H
#define RR_PARTS_H

#include <stdint.h>

#include "rr/catalog.h"
#include "rr/manifest.h"
#include "rr/store.h"

/* The directory a part's files sit under in the commit manifest, followed by the rank. A
 * dot name: a trainer's own checkpoint files are never all under it. */
#define RR_PART_DIR ".resume-run-node-"

/* rr_parts_commit: not every part is in the store yet (not an error). */
#define RR_PARTS_NOT_YET 1

/* Commits checkpoint name of run_id when all nnodes parts are in the store. Returns 0 with
 * *commit_out (may be NULL; caller destroys) the commit manifest now in the store, whether
 * this call wrote it or another agent wrote the same (the create-only write settles two
 * agents that both saw the last part); RR_PARTS_NOT_YET (positive) while parts are
 * missing; RR_EPRECOND (logged) when the store holds a commit manifest of that name with
 * other content; RR_EINVAL (logged) for a part of a rank not below nnodes or a part that
 * names another checkpoint; RR_ECORRUPT for an unreadable part; or the store's error. */
int rr_parts_commit(struct rr_store *s, const char *run_id, const char *name, unsigned nnodes,
		    const char *host, struct rr_manifest **commit_out);

/* Turns commit (in place) into node rank's view: only that node's files, under their own
 * paths again. Returns 0; RR_EINVAL with a reason in why, commit untouched, when the
 * manifest was not written by nnodes nodes (a store written with another --nnodes: a
 * single-node checkpoint for nnodes > 1 or the reverse); or the store's error (reason in
 * why). With nnodes 1 a single-node manifest stays as it is. A node whose checkpoint had no
 * files stored an empty part, which the commit names no file of: when some rank has none,
 * the parts of the checkpoint in store s (run_id) say how many nodes wrote it. */
int rr_parts_view(struct rr_store *s, const char *run_id, struct rr_manifest *commit,
		  unsigned nnodes, unsigned rank, char *why, size_t why_len);

/* Test hook (only the tests call it). Replaces every committed entry's manifest of c (read
 * from s) by node rank's view (rr_parts_view), for restore. A committed entry written by
 * another number of nodes fails the whole call (RR_EINVAL, logged with the reason): a node
 * must never restore another layout's files. */
int rr_parts_catalog_view(struct rr_store *s, struct rr_catalog *c, unsigned nnodes,
			  unsigned rank);

/* Deletes the parts of checkpoints that have no commit manifest (partial: some node never
 * finished) once every part is older than grace_ms, and the parts left behind by
 * checkpoints whose manifest retention deleted. *deleted (may be NULL) counts keys. */
int rr_parts_sweep(struct rr_store *s, const char *run_id, int64_t grace_ms, size_t *deleted);

/* The parts of checkpoints no commit manifest names yet (their last node may still commit
 * them): for gc, which keeps every chunk they name. keys (sorted) are the parts' keys. */
struct rr_parts_pending {
	struct rr_manifest **parts;
	char **keys;
	size_t n;
};

/* Lists and reads them. 0, or an error (a part that cannot be read: gc deletes no chunk). */
int rr_parts_pending(struct rr_store *s, const char *run_id, struct rr_parts_pending *out);
/* 1 when key is one of them. */
int rr_parts_pending_has(const struct rr_parts_pending *p, const char *key);
void rr_parts_pending_free(struct rr_parts_pending *p);

#endif
