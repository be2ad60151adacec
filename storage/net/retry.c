/* Backoff with full jitter and the classification of failures that may heal. */
#include <string.h>

#include "rr/clock.h"
#include "rr/retry.h"

void rr_retry_init(struct rr_retry *r, int64_t deadline_mono_ms)
{
	memset(r, 0, sizeof(*r));
	r->max_attempts = 10;
	r->base_ms = 200;
	r->cap_ms = 15000;
	r->deadline_mono_ms = deadline_mono_ms;
}

static uint64_t s_next_random(struct rr_retry *r)
{
	uint64_t x = r->rng;

	if (x == 0) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		x = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)r;
		x |= 1;
	}
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	r->rng = x;
	return x;
}

int64_t rr_retry_next(struct rr_retry *r, int64_t now_mono_ms)
{
	int64_t ceiling = r->base_ms, delay;
	unsigned i;

	r->attempt++;
	if (r->attempt >= r->max_attempts)
		return -1;
	for (i = 1; i < r->attempt && ceiling < r->cap_ms; i++)
		ceiling *= 2;
	if (ceiling > r->cap_ms)
		ceiling = r->cap_ms;
	delay = (int64_t)(s_next_random(r) % (uint64_t)(ceiling + 1));
	if (r->deadline_mono_ms) {
		if (now_mono_ms + delay + 1000 > r->deadline_mono_ms)
			delay = r->deadline_mono_ms - now_mono_ms - 1000;
		if (delay < 0)
			return -1;
	}
	return delay;
}

int rr_retry_worth_it(long status, int transport_retryable, const char *code)
{
	static const char *const codes[] = {
		"RequestTimeout", "InternalError", "SlowDown", "ServiceUnavailable",
		"Throttling", "ThrottlingException", "ThrottledException",
		"RequestThrottled", "RequestLimitExceeded", "OperationAborted",
		"ConditionalRequestConflict", "TooManyRequestsException",
	};
	size_t i;

	if (status == 0)
		return transport_retryable;
	if (status == 408 || status == 429 || status == 500 || status == 502 || status == 503 ||
	    status == 504)
		return 1;
	for (i = 0; code && i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(code, codes[i]) == 0)
			return 1;
	return 0;
}
