/* Multi-node notice fan-out (docs/how-it-works.md, "What is stored"): the agent that gets a
 * notice writes it to notices/<unix-ms>-node<rank>.json in the store; every agent of the job
 * lists notices/ about once a second and takes another node's notice as its own, with the same
 * deadline. One thread per agent, only when --nnodes > 1; the store calls never block the run
 * loop. */
#ifndef RR_FANOUT_H
#define RR_FANOUT_H

#include <stdint.h>

#include "rr/notice.h"
#include "rr/store.h"

#define RR_FANOUT_POLL_MS 1000

struct rr_fanout;

/* Starts watching. Notices written before since_unix_ms (an earlier generation of the
 * job, before this agent started) are ignored, as are this node's own. */
int rr_fanout_start(struct rr_store *s, const char *run_id, unsigned rank,
		    int64_t since_unix_ms, struct rr_fanout **out);
/* Readable when another node's notice is waiting for rr_fanout_next. */
int rr_fanout_fd(const struct rr_fanout *f);
/* 1 and *n (source RR_SOURCE_NODE, received now) when one was waiting, else 0. */
int rr_fanout_next(struct rr_fanout *f, struct rr_notice *n);
/* Has the store listed now, and waits up to timeout_ms for that listing to end (a notice it
 * finds is then waiting for rr_fanout_next). Returns 0, or RR_ECANCELED when it timed out
 * or the thread is stopping. */
int rr_fanout_poll_now(struct rr_fanout *f, int64_t timeout_ms);
/* Queues this node's notice to be written to the store (by the thread, at once). */
void rr_fanout_announce(struct rr_fanout *f, const struct rr_notice *n);
/* Writes a notice of node rank now (the thread's write; for tests and tools). */
int rr_fanout_publish(struct rr_store *s, const char *run_id, unsigned rank,
		      const struct rr_notice *n);
/* Stops the thread (an announced notice not yet written is written first); NULL is fine. */
void rr_fanout_stop(struct rr_fanout *f);

#endif
