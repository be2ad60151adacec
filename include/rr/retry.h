/* When to send a failed request again, and after how long: exponential backoff with full
 * jitter (delay drawn uniformly from [0, min(cap, base * 2^attempt)]), bounded by a number of
 * attempts and by a deadline, so a notice's window is never spent waiting on a retry that
 * could not finish in time. */
#ifndef RR_RETRY_H
#define RR_RETRY_H

#include <stdint.h>

struct rr_retry {
	unsigned max_attempts; /* attempts in all, the first included */
	int64_t base_ms;
	int64_t cap_ms;
	int64_t deadline_mono_ms; /* 0: none */
	unsigned attempt;         /* attempts made so far */
	uint64_t rng;             /* xorshift state; 0 seeds it from the clock */
};

/* The default policy of the stores: 10 attempts, 200 ms base, 15 s cap (about a minute
 * and a half of waiting in all at worst, enough to ride out a server restart). */
void rr_retry_init(struct rr_retry *r, int64_t deadline_mono_ms);

/* Call after a failed attempt: returns the delay before the next one (ms), or -1 when
 * attempts are used up or sleeping that long would pass the deadline (with at least
 * 1 s left over for the request itself). */
int64_t rr_retry_next(struct rr_retry *r, int64_t now_mono_ms);

/* Whether an S3-style failure may heal: transport failures the HTTP layer called
 * retryable, 500/502/503/504, 429, 408, and the S3 error codes RequestTimeout,
 * InternalError, SlowDown, ServiceUnavailable, Throttling*, OperationAborted and
 * ConditionalRequestConflict (409), whatever their status. code may be NULL or "". */
int rr_retry_worth_it(long status, int transport_retryable, const char *code);

#endif
