/* Waiting for the cloud watcher's notices in the suites that run one (cloud_watch,
 * cloud_azure). */
#ifndef RR_TEST_WATCH_FIXTURE_H
#define RR_TEST_WATCH_FIXTURE_H

#include <poll.h>

#include "rr/clock.h"
#include "rr/cloud.h"
#include "rr/notice.h"

/* Waits (polling the watcher's eventfd) for its next notice: 1 with *n filled, or 0 after
 * ms. */
static inline int wf_next_within(struct rr_cloud_watch *w, struct rr_notice *n, long ms)
{
	struct pollfd p = { .fd = rr_cloud_watch_fd(w), .events = POLLIN };
	int64_t end = rr_mono_ms() + ms;

	while (rr_mono_ms() < end)
		if (poll(&p, 1, 50) > 0 && rr_cloud_watch_next(w, n) == 1)
			return 1;
	return 0;
}

#endif
