/* Which checkpoint is newest (docs/trainer-contract.md, "The trainer contract", "Order"): the
 * greatest step number in the name (step-N, checkpoint-N, global_stepN, epoch=E-step=N.ckpt),
 * else the latest commit time. */
#ifndef RR_CKPT_ORDER_H
#define RR_CKPT_ORDER_H

#include <stdint.h>

/* 1 and the number when name holds a step number: one of "step-N", "step=N", "checkpoint-N",
 * "global_stepN" at the start of the name or after '-', '_', '=' or '.', N decimal of 1 to
 * 19 digits, optionally followed by a suffix that starts with a non-digit ("step-1200.final",
 * "epoch=3-step=1200.ckpt"). When several are present the last one in the name counts.
 * Else 0, and *step is untouched. */
int rr_checkpoint_step(const char *name, uint64_t *step);

/* Negative when a is older than b, positive when newer, 0 when the same checkpoint.
 * Names with a step number compare by it, then commit time; other names by commit time,
 * then name; a name with a step number is newer than any other name (so the order stays
 * transitive when a run mixes both). */
int rr_checkpoint_compare(const char *a, int64_t a_committed_ms, const char *b,
			  int64_t b_committed_ms);

/* The order of commits within one run of the agent: 1 when a (committed at a_ms) should be
 * persisted after b, i.e. when a is newer by rr_checkpoint_compare OR was committed later;
 * else 0. Commit time counts too so that one stray far-future name ("step-9999999999")
 * cannot make every later commit look old and be skipped: what the trainer committed last
 * is what it would resume from. The same name is later only when it has no step number and
 * was committed again later (`last.ckpt`, a `ckpt.pt` replaced: its newest commit is the
 * checkpoint); a step-numbered name is one checkpoint, its first commit. An empty b is older
 * than anything. */
int rr_checkpoint_later(const char *a, int64_t a_committed_ms, const char *b,
			int64_t b_committed_ms);

#endif
