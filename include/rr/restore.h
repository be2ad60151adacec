/* Puts a checkpoint from the store back on disk, trusting nothing: every chunk's sha256,
 * every decoded segment's sha256, every path confined to the target. */
#ifndef RR_RESTORE_H
#define RR_RESTORE_H

#include <stddef.h>
#include <stdint.h>

#include "rr/catalog.h"
#include "rr/manifest.h"
#include "rr/store.h"

struct rr_restore_stats {
	uint64_t files, bytes;
	uint64_t downloaded_bytes; /* stored bytes fetched */
	uint64_t unused_bytes;     /* of those, parts of packs shared with other checkpoints
				    * that this one does not use (a pack is read whole) */
	uint64_t kept_files;       /* already present and identical: linked, not copied */
	int already_present;       /* the whole checkpoint was there already */
	unsigned fallbacks;        /* rr_restore_newest: damaged newer checkpoints skipped */
	unsigned suspects;         /* rr_restore_newest: newer suspect checkpoints passed over */
	char suspect[256];         /* the newest of them, "" when none */
	int64_t elapsed_ms;
};

/* Restores m into <parent>/<m->checkpoint>/. It builds the checkpoint in a dot-directory
 * beside it and renames it into place, so the final name only ever holds a complete,
 * verified checkpoint. Files of an existing directory of that name that are identical are
 * kept (linked, not copied); if that directory differed, it is moved aside to
 * ".<name>.local-<unix-ms>" and the log says so. Modes are restored without
 * setuid/setgid/sticky bits. Returns 0; RR_ECORRUPT (reason in why) when stored data is
 * damaged or missing; or an I/O error. Nothing is left behind on failure. */
int rr_restore_checkpoint(struct rr_store *s, const char *run_id, const struct rr_manifest *m,
			  const char *parent, unsigned threads, struct rr_restore_stats *stats,
			  char *why, size_t why_len);

/* Re-reads every chunk of m and checks it as restore would, writing nothing.
 * Returns 0 or RR_ECORRUPT with the reason in why. */
int rr_verify_checkpoint(struct rr_store *s, const char *run_id, const struct rr_manifest *m,
			 unsigned threads, char *why, size_t why_len);

/* rr_restore_checkpoint under a restore's lease in the store (rr/marks.h), so retention
 * elsewhere keeps the checkpoint while it is read. */
int rr_restore_leased(struct rr_store *s, const char *run_id, const struct rr_manifest *m,
		      const char *parent, unsigned threads, struct rr_restore_stats *stats,
		      char *why, size_t why_len);

/* Restores the newest committed checkpoint of the catalog that is not suspect (as node
 * rank of nnodes: its own part, rr_parts_view) into parent, under a lease
 * (rr_restore_leased), falling back to older ones (loudly) when one is damaged.
 * With nnodes > 1 no node falls back alone: a node that finds its part damaged marks the
 * checkpoint suspect for every node (rr_mark_suspect) and returns RR_ECORRUPT, and a node
 * that finds such a mark made after the catalog was listed, once it has restored its part,
 * passes that checkpoint over as if it had been listed.
 * Reads manifests only as far as it walks (rr_catalog_next), so c may come from
 * rr_catalog_list. On success copies the restored name into name_out (cap bytes). Returns
 * 0, RR_ENOENT when there is nothing to restore, the store's error when it could not read
 * a manifest (not a damaged one: one it got no answer for), or the error of the last
 * attempt. */
int rr_restore_newest(struct rr_store *s, struct rr_catalog *c, unsigned nnodes, unsigned rank,
		      const char *parent, unsigned threads, char *name_out, size_t cap,
		      struct rr_restore_stats *stats);

/* rr_restore_newest, but the lease is not given back: on success lease (RR_READER_TOKEN_MAX
 * bytes, "" when none was taken) is what rr_reader_end needs for name_out, so a caller that
 * cannot wait on the store (the agent's start-up, under a slow store) gives it back its own
 * way, or leaves it to expire. */
int rr_restore_newest_leased(struct rr_store *s, struct rr_catalog *c, unsigned nnodes,
			     unsigned rank, const char *parent, unsigned threads, char *name_out,
			     size_t cap, struct rr_restore_stats *stats, char *lease);

#endif
