/* Which checkpoint the trainer resumed from, and what its attempts since made of it
 * (README, "Suspect and proven checkpoints"): failed repeatedly with no newer commit
 * (suspect), or committed a newer one that became durable (proven). Pure bookkeeping; the
 * run loop (agent/run/run.c) writes the marks. */
#ifndef RR_RECOVERY_H
#define RR_RECOVERY_H

struct rr_recovery {
	unsigned suspect_after; /* failures that mark the checkpoint suspect (0: never) */
	char from[256];         /* what the attempts resume from, "" for a fresh start */
	unsigned failures;      /* failed attempts from it with no newer commit */
	char newer[256];        /* the first newer checkpoint committed after resuming */
	int proven;             /* `from` is proven (its mark asked for): said once */
};

/* An attempt starts from `from` ("" or NULL: nothing restored). A different checkpoint
 * than before starts the count afresh. */
void rr_recovery_launch(struct rr_recovery *r, const char *from);

/* The trainer committed `name`, later than `from` (the run loop judged the order). */
void rr_recovery_commit(struct rr_recovery *r, const char *name);

/* `name` is durable in the store. Returns 1 when `from` is now proven (once per `from`). */
int rr_recovery_durable(struct rr_recovery *r, const char *name);

/* The attempt failed with exit_code (the shell's convention: 128+N for signal N). Returns
 * 1 when `from` is to be marked suspect now. A command that could not start (126, 127) has
 * nothing to do with the checkpoint and counts for nothing. */
int rr_recovery_failed(struct rr_recovery *r, int exit_code);

#endif
