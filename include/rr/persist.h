/* Persists one committed checkpoint directory into the store: chunks, then the manifest
 * (create-only). LATEST, the ledger and retention are the caller's next steps. */
#ifndef RR_PERSIST_H
#define RR_PERSIST_H

#include <stdatomic.h>
#include <stdint.h>

#include "rr/codec.h"
#include "rr/manifest.h"
#include "rr/store.h"

/* The run's chunks as persists saw them: the last listing of the store plus what persists
 * wrote since, kept by the caller (the persister) from one persist to the next. A persist
 * given one lists the store only when that listing is older than half the grace period,
 * and an urgent persist not at all: on S3 a listing is one request per 1000 chunks, paid
 * before the first upload. A failed persist makes the next one list. Not thread-safe: one
 * persist at a time. */
struct rr_catalog;
struct rr_chunk_index;
struct rr_chunk_index *rr_chunk_index_new(void); /* NULL when out of memory */
/* An index holding the chunks catalog c listed, as if a persist had listed them at
 * listed_ms (Unix ms by the store's clock, rr_store_now_ms, no later than the catalog's
 * load began): the start-up lookup's listing spares the first persist its own. NULL when
 * out of memory. */
struct rr_chunk_index *rr_chunk_index_of_catalog(const struct rr_catalog *c, int64_t listed_ms);
void rr_chunk_index_destroy(struct rr_chunk_index *x); /* NULL ok */

struct rr_persist_opts {
	const char *run_id;
	const char *host;                   /* recorded in the manifest; may be NULL */
	int zstd_level;
	unsigned threads;                   /* workers encoding, hashing and storing */
	enum rr_precision precision;        /* F32 tensors of *.safetensors files */
	const char *const *exact_globs;     /* tensors matching one are stored bit-exact */
	unsigned n_exact_globs;
	const struct rr_manifest *previous; /* segments whose original bytes are unchanged
					     * since this manifest reuse its chunks */
	/* The commit time of a stored commit of this name that this one is known to follow (the
	 * one restored, or persisted last, here): a name without a step number replaces it
	 * whatever the clocks of the machines that committed them say. 0: none. */
	int64_t supersedes_ms;
	const atomic_int *cancel;         /* non-zero: stop soon with RR_ECANCELED */
	int64_t gc_grace_ms;                /* the store's gc grace (0: no gc runs): a chunk
					     * already stored but older than half of it (for
					     * an urgent persist: all but 10 min of it) is
					     * written again instead of deduplicated, see
					     * persist.c */
	int urgent;                         /* a notice's checkpoint */
	int reread;                         /* 1: a tensor of several chunks is read again
					     * for encoding, never kept from its first read
					     * (tests of that path); 0 (default): up to 64
					     * MiB of first reads are kept */
	int no_packs;                       /* 1: every chunk is an object of its own (as
					     * before manifest-2); 0 (default): chunks stored
					     * in fewer than RR_PACK_SMALL_BYTES share packs */
	unsigned nnodes;                    /* > 1: the manifest is written as node_rank's
					     * part, checkpoints/<name>/parts/<rank>.json
					     * (docs/how-it-works.md, "What is stored",
					     * Multi-node); 0 or 1: manifest.json */
	unsigned node_rank;
	struct rr_chunk_index *chunks;      /* NULL: this persist lists the store's chunks */
	int64_t settle_ms;                  /* > 0: the checkpoint was written in place, and
					     * files may follow its commit: rr_persist_settle
					     * first; 0: it was complete at its commit */
};

struct rr_persist_stats {
	uint64_t files;
	uint64_t bytes;           /* original bytes */
	uint64_t stored_bytes;    /* bytes the checkpoint occupies in the store */
	uint64_t new_bytes;       /* stored bytes written by this persist */
	uint64_t segments, reused_segments;
	uint64_t refreshed_chunks;  /* already stored but old: written again for gc's grace */
	uint64_t tensors[4];      /* tensor segments by encoding (index: enum rr_encoding) */
	uint64_t held_peak;       /* most bytes of packable chunks held at once for their turn */
	int64_t elapsed_ms;
};

/* Persists <ckpt_dir>/<name>. The checkpoint is opened without following symlinks and its
 * files are held open from the listing on (each checked to be the regular file listed), so
 * a trainer deleting old checkpoints cannot pull files away mid-read, and one that plants a
 * symlink, FIFO or device cannot redirect or stall the read. A file whose size or mtime
 * changes, or whose bytes differ between the hashing and the encoding read, fails the
 * persist (RR_EIO, reason logged). A name or path restore would refuse fails it with one
 * warning (RR_EPATH), as does a checkpoint that is no longer a directory. On success *manifest_out (may be NULL) gets
 * the manifest written (caller destroys). Returns 0; RR_EEXIST when the store already holds
 * a manifest of that name with the same content (its chunks may have been written again to
 * renew their age); RR_EPRECOND when it holds one with other content, another writer's
 * (logged: this checkpoint is not stored); RR_ENOENT when the directory is gone;
 * RR_ECANCELED; or the store's error (the store then has no manifest for it, so the
 * previous checkpoint stays the newest committed one). */
int rr_persist_checkpoint(struct rr_store *s, const char *ckpt_dir, const char *name,
			  int64_t committed_unix_ms, const struct rr_persist_opts *opts,
			  struct rr_manifest **manifest_out, struct rr_persist_stats *stats);

/* The store holds theirs under the name ours would be written as: RR_EEXIST when both hold
 * the same files with the same bytes stored the same way (who wrote them and when may
 * differ), else RR_EPRECOND, logged: no one is told a checkpoint (or a part) is durable
 * when the store holds another writer's. */
int rr_persist_compare_existing(const struct rr_manifest *ours,
				const struct rr_manifest *theirs);

/* Files a trainer writes into a checkpoint after its commit (agent/pipeline/settle.c):
 * transformers 4.3x wrote rng_state.pth 0.2 s after trainer_state.json, its marker. */
#define RR_PERSIST_SETTLE_MS 1000      /* quiet this long: the checkpoint is complete */
/* After its commit, never wait longer while its files keep changing: DeepSpeed's rank 0
 * writes `latest` before the other ranks have written their shards (no barrier between),
 * which takes as long as the ranks' skew on a large model. A notice's persist waits less:
 * its window is short, and a routine one comes after it. */
#define RR_PERSIST_SETTLE_MAX_MS 120000
#define RR_PERSIST_SETTLE_URGENT_MAX_MS 10000

/* Waits until no regular file under <ckpt_dir>/<name> has been written for settle_ms, at
 * most max_ms after committed_unix_ms (sooner when *cancel is set), so that files closed
 * just after the commit are persisted with it. Logs when it took any. Returns how many
 * files were written after the commit. */
unsigned rr_persist_settle(const char *ckpt_dir, const char *name, int64_t committed_unix_ms,
			   int64_t settle_ms, int64_t max_ms, const atomic_int *cancel);

/* Compares <ckpt_dir>/<m->checkpoint> on disk with m, the manifest stored for it: a file
 * there that m does not hold, or holds with another size, came after the checkpoint was
 * persisted and is not in the store's copy: warned about by name (at most 10 names, then a
 * count). A checkpoint gone from disk is fine (the trainer deletes old ones). Returns the
 * number of such files. */
unsigned rr_persist_late_files(const char *ckpt_dir, const struct rr_manifest *m);

#endif
