#include <stdio.h>
#include <string.h>

#include "rr/progress.h"
#include "throughput.h"

void rr_throughput_init(struct rr_throughput *t, const char *url)
{
	memset(t, 0, sizeof(*t));
	t->bps = url && strncmp(url, "file://", 7) == 0 ? RR_THROUGHPUT_SEED_FILE_BPS
							: RR_THROUGHPUT_SEED_REMOTE_BPS;
	t->last_new_fraction = 1.0;
}

void rr_throughput_baseline(struct rr_throughput *t, const char *name, uint64_t bytes)
{
	snprintf(t->last_name, sizeof(t->last_name), "%s", name);
	t->last_bytes = bytes;
	/* What the run's first checkpoint shares with it is unknown: assume nothing. */
	t->last_new_fraction = 1.0;
	t->last_durable_ms = 0;
}

void rr_throughput_observe(struct rr_throughput *t, const char *name, uint64_t bytes,
			   uint64_t stored_bytes, uint64_t new_bytes, int64_t elapsed_ms,
			   int64_t durable_ms)
{
	double frac = stored_bytes ? (double)new_bytes / (double)stored_bytes : 1.0;
	double work;

	if (frac > 1.0) /* chunks written again to renew their age count as new */
		frac = 1.0;
	snprintf(t->last_name, sizeof(t->last_name), "%s", name);
	t->last_bytes = bytes;
	t->last_new_fraction = frac;
	t->last_durable_ms = durable_ms;
	/* The rate is in original bytes of what changed: the estimate scales the next
	 * checkpoint the same way, so compression and reuse cancel out, and the time spent
	 * hashing unchanged segments is charged to the changed ones, as it will be again. */
	work = (double)bytes * frac;
	if (elapsed_ms <= 0 || work < RR_THROUGHPUT_MIN_SAMPLE_BYTES)
		return;
	double sample = work * 1000.0 / (double)elapsed_ms;
	t->bps = t->samples ? 0.5 * t->bps + 0.5 * sample : sample;
	t->samples++;
}

void rr_throughput_estimate(const struct rr_throughput *t, int64_t left_ms,
			    struct rr_deadline_estimate *e)
{
	memset(e, 0, sizeof(*e));
	e->expect_bytes = t->last_bytes;
	e->expect_work = (uint64_t)((double)t->last_bytes * t->last_new_fraction);
	e->left_ms = left_ms;
	e->need_ms = t->bps > 0 ? (int64_t)((double)e->expect_work * 1000.0 / t->bps) : 0;
	e->fits = e->need_ms <= left_ms;
}

/* "3 min", "45 s", "2 h": how long ago something was, for a log line. */
static void s_ago(int64_t ms, char *out, size_t size)
{
	int64_t s = ms / 1000;
	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(out, size, "%lld s", (long long)s);
	else if (s < 7200)
		snprintf(out, size, "%lld min", (long long)(s / 60));
	else
		snprintf(out, size, "%lld h", (long long)(s / 3600));
}

const char *rr_throughput_describe(const struct rr_throughput *t,
				   const struct rr_deadline_estimate *e, int64_t now_ms,
				   char *out, size_t size)
{
	char rate[16], whole[16], changed[16], like[340], verdict[512];
	double need_s = (double)e->need_ms / 1000.0, left_s = (double)e->left_ms / 1000.0;

	rr_format_bytes((uint64_t)t->bps, rate);
	if (!t->last_name[0]) {
		snprintf(out, size, "deadline in %.0f s; no checkpoint persisted yet to estimate "
			 "from (rate %s/s %s); a new machine would start without one", left_s,
			 rate, t->samples ? "measured" : "assumed");
		return out;
	}
	rr_format_bytes(e->expect_bytes, whole);
	rr_format_bytes(e->expect_work, changed);
	if (e->expect_work < e->expect_bytes)
		snprintf(like, sizeof(like), "%s, like %s, of which about %s new", whole,
			 t->last_name, changed);
	else
		snprintf(like, sizeof(like), "%s, like %s", whole, t->last_name);
	if (e->fits) {
		snprintf(verdict, sizeof(verdict), "it should be durable with %.0f s to spare",
			 left_s - need_s);
	} else {
		char ago[32];
		if (t->last_durable_ms)
			s_ago(now_ms - t->last_durable_ms, ago, sizeof(ago));
		snprintf(verdict, sizeof(verdict), "it will likely miss the deadline by %.0f s; "
			 "%s (durable %s%s) is what a new machine would restore",
			 need_s - left_s, t->last_name, t->last_durable_ms ? ago : "before this run",
			 t->last_durable_ms ? " ago" : "");
	}
	snprintf(out, size, "deadline in %.0f s; at the %s %s/s the expected checkpoint (%s) "
		 "needs ~%.0f s: %s", left_s, t->samples ? "recent" : "assumed", rate, like,
		 need_s, verdict);
	return out;
}
