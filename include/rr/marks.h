/* Marks the agent leaves beside a checkpoint's manifest (README, "Suspect and proven
 * checkpoints"): suspect.json (the trainer failed repeatedly after resuming from it: restore
 * passes it over), proven.json (a trainer resumed from it and committed a newer one:
 * retention always keeps the newest such), and readers/<token>.json, a restore's lease while
 * it reads one (retention keeps it meanwhile). Marks are small JSON objects, outside data
 * when read back: bounded and checked. */
#ifndef RR_MARKS_H
#define RR_MARKS_H

#include <stddef.h>
#include <stdint.h>

#include "rr/store.h"

#define RR_MARK_MAX_BYTES 4096
#define RR_READER_TOKEN_MAX 64
/* A restore's lease older than this (by the store's clock) is a restore that died: its
 * checkpoint is no longer kept for it. */
#define RR_READER_LEASE_MS (6LL * 3600 * 1000)

struct rr_suspect {
	/* The manifest the mark was made for (its committed_unix_ms): a checkpoint committed
	 * again under the same name is another one, and the mark does not apply to it. */
	int64_t for_committed_ms;
	int64_t unix_ms;   /* when it was marked (0: not said) */
	int64_t failures;  /* failed attempts that led to it (0: not said) */
	int64_t exit_status; /* the last one's (-1: not said) */
	char host[64];     /* which machine marked it ("" : not said) */
	char why[256];
};

/* Marks name suspect (replacing an earlier mark). Returns 0 or the store's error. */
int rr_mark_suspect(struct rr_store *s, const char *run_id, const char *name,
		    const struct rr_suspect *m);

/* Records that a trainer resumed from name and then committed `by`. Returns 0 or the
 * store's error. */
int rr_mark_proven(struct rr_store *s, const char *run_id, const char *name, const char *by,
		   const char *host);

/* Deletes the suspect mark of name (a missing one is not an error). Returns 0 or the
 * store's error. */
int rr_mark_clear_suspect(struct rr_store *s, const char *run_id, const char *name);

/* Reads name's suspect mark. Returns 0, RR_ENOENT when there is none, RR_ECORRUPT when it
 * cannot be read as one, or the store's error. */
int rr_mark_read_suspect(struct rr_store *s, const char *run_id, const char *name,
			 struct rr_suspect *out);

/* Parses a suspect mark (len bytes, at most RR_MARK_MAX_BYTES). Returns 0 or RR_ECORRUPT
 * with the reason in why. */
int rr_suspect_parse(const char *text, size_t len, struct rr_suspect *out, char *why,
		     size_t why_len);

/* Takes a restore's lease on name before reading it; token (RR_READER_TOKEN_MAX bytes)
 * receives what rr_reader_end needs. Returns 0 or the store's error. */
int rr_reader_begin(struct rr_store *s, const char *run_id, const char *name, char *token);
/* Gives the lease back (a failure leaves it to expire). */
void rr_reader_end(struct rr_store *s, const char *run_id, const char *name,
		   const char *token);

#endif
