/* Which checkpoint is newest (DESIGN §2): the greatest step-N number, else the latest
 * commit time. */
#ifndef RR_CKPT_ORDER_H
#define RR_CKPT_ORDER_H

#include <stdint.h>

/* 1 and the number when name is "step-N" (N decimal, at most 19 digits, optionally followed
 * by a suffix that starts with a non-digit, e.g. "step-1200.final"); else 0. */
int rr_checkpoint_step(const char *name, uint64_t *step);

/* Negative when a is older than b, positive when newer, 0 when the same checkpoint.
 * step-N names compare by N, then commit time; other names by commit time, then name; a
 * step-N name is newer than any other name (so the order stays transitive when a run
 * mixes both). */
int rr_checkpoint_compare(const char *a, int64_t a_committed_ms, const char *b,
			  int64_t b_committed_ms);

#endif
