/* Which runs a store holds, for the commands that name one (ls, restore, verify, gc, report):
 * a run id that is not there is an error naming the ones that are, never an empty success. */
#ifndef RR_RUNS_H
#define RR_RUNS_H

#include <stddef.h>

#include "rr/store.h"

/* 1 when the store holds any object of run_id, 0 when none, or a negative store error. */
int rr_runs_exists(struct rr_store *s, const char *run_id);

/* The runs of the store, sorted and comma-separated, into out (cap bytes, always
 * terminated): "a, b, c", with ", ..." when more than fit or the listing stopped early
 * (it reads at most RR_RUNS_SCAN_MAX keys), "" when the store holds none. Returns 0 or a
 * negative store error. */
#define RR_RUNS_SCAN_MAX 100000
int rr_runs_list(struct rr_store *s, char *out, size_t cap);

#endif
