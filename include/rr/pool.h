/* Runs one function over task indices 0..n-1 on a few threads. Persist, restore and verify
 * use it so that hashing, compression and store I/O overlap. */
#ifndef RR_POOL_H
#define RR_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/* Called for each task on some worker; worker is 0..threads-1 so callers can keep
 * per-worker buffers. Returns 0 or an rr_error; the first error stops the pool. */
typedef int (*rr_pool_fn)(size_t task, unsigned worker, void *ud);

/* Runs fn over ntasks tasks on `threads` threads (at least 1; the calling thread is one of
 * them). Tasks are handed out in index order. Returns 0 when every task returned 0, else the
 * first error; tasks not yet started when an error occurs are skipped. If cancel is
 * non-NULL and becomes non-zero, remaining tasks are skipped and RR_ECANCELED returned. */
int rr_pool_run(unsigned threads, size_t ntasks, rr_pool_fn fn, void *ud,
		const atomic_int *cancel);

/* The reason for the first failure among workers; later ones are dropped, so the log line
 * names what went wrong first. */
struct rr_reason {
	pthread_mutex_t lock;
	char text[512]; /* "" until set */
};
#define RR_REASON_INIT { PTHREAD_MUTEX_INITIALIZER, "" }

void rr_reason_set(struct rr_reason *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Number of online CPUs (at least 1). */
unsigned rr_pool_default_threads(void);

#endif
