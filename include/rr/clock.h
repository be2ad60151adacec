/* Time in milliseconds. Wall clock for timestamps that leave the process, monotonic for
 * durations and deadlines inside it. */
#ifndef RR_CLOCK_H
#define RR_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t rr_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t rr_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
