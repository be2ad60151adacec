/* Which checkpoint the trainer resumed from, and what its attempts since made of it
 * (docs/how-it-works.md, "Suspect and proven checkpoints"): failed repeatedly with no newer commit
 * (suspect), or committed a newer one that became durable (proven). Pure bookkeeping; the
 * run loop (agent/run/run.c) writes the marks. */
#ifndef RR_RECOVERY_H
#define RR_RECOVERY_H

#include <stdint.h>

struct rr_recovery {
	unsigned suspect_after; /* failures that mark the checkpoint suspect (0: never) */
	char from[256];         /* what the attempts resume from, "" for a fresh start */
	int64_t from_ms;        /* its commit (a name without a step number is committed again) */
	unsigned failures;      /* failed attempts from it with no newer commit */
	char newer[256];        /* the first newer checkpoint committed after resuming */
	int64_t newer_ms;
	int proven;             /* `from` is proven (its mark asked for): said once */
};

/* An attempt starts from `from` ("" or NULL: nothing restored), committed at from_ms. A
 * different checkpoint than before (another name, or the same one committed again) starts
 * the count afresh. */
void rr_recovery_launch(struct rr_recovery *r, const char *from, int64_t from_ms);

/* The trainer committed `name` at ms, later than `from` (the run loop judged the order): a
 * newer checkpoint unless it is `from`'s own commit. */
void rr_recovery_commit(struct rr_recovery *r, const char *name, int64_t ms);

/* The commit of `name` at ms is durable in the store. Returns 1 when `from` is now proven
 * (once per `from`). */
int rr_recovery_durable(struct rr_recovery *r, const char *name, int64_t ms);

/* The attempt failed with exit_code (the shell's convention: 128+N for signal N). Returns
 * 1 when `from` is to be marked suspect now. A command that could not start (126, 127) has
 * nothing to do with the checkpoint and counts for nothing. */
int rr_recovery_failed(struct rr_recovery *r, int exit_code);

#endif
