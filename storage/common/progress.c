#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rr/clock.h"
#include "rr/log.h"
#include "rr/progress.h"

#define LIVE_EVERY_MS 200

static int64_t s_quiet_ms = 2000;     /* say nothing for operations shorter than this */
static int64_t s_line_every_ms = 10000;

void rr_progress_set_intervals(int64_t quiet_ms, int64_t line_every_ms)
{
	s_quiet_ms = quiet_ms;
	s_line_every_ms = line_every_ms;
}

struct rr_progress {
	pthread_mutex_t lock;
	char what[256];
	uint64_t total, done;
	int64_t start_ms, last_ms;
	int live, shown;
};

const char *rr_format_bytes(uint64_t bytes, char *out)
{
	static const char *const units[] = { "B", "kB", "MB", "GB", "TB" };
	double v = (double)bytes;
	int u = 0;
	/* 999.95 and up would print as "1000.0": show those in the next unit ("1.0 MB"). */
	while (v >= 999.95 && u < 4) {
		v /= 1000;
		u++;
	}
	snprintf(out, 16, u ? "%.1f %s" : "%.0f %s", v, units[u]);
	return out;
}

const char *rr_format_seconds(double s, char *out)
{
	long long w = s > 0 && s < 9e15 ? (long long)s : 0;

	if (!(s >= 1))
		snprintf(out, 24, "%.0f ms", s > 0 ? s * 1000 : 0);
	else if (s < 10)
		snprintf(out, 24, "%.2f s", s);
	else if (s < 60)
		snprintf(out, 24, "%.1f s", s);
	else if (s < 3600)
		snprintf(out, 24, "%lld min %02lld s", w / 60, w % 60);
	else if (s < 86400)
		snprintf(out, 24, "%lld h %02lld min", w / 3600, w % 3600 / 60);
	else
		snprintf(out, 24, "%lld d %02lld h", w / 86400, w % 86400 / 3600);
	return out;
}

struct rr_progress *rr_progress_new(const char *what, uint64_t total)
{
	struct rr_progress *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	snprintf(p->what, sizeof(p->what), "%s", what);
	p->total = total;
	p->start_ms = p->last_ms = rr_mono_ms();
	p->live = isatty(STDERR_FILENO);
	return p;
}

static void s_show(struct rr_progress *p, int64_t now)
{
	char done[16], total[16];
	double secs = (double)(now - p->start_ms) / 1000.0;
	double rate = secs > 0 ? (double)p->done / secs : 0;
	double left = rate > 0 && p->total > p->done ? (double)(p->total - p->done) / rate : 0;
	unsigned pct = p->total ? (unsigned)(p->done * 100 / p->total) : 100;

	rr_log_progress(p->live, "%s: %s of %s (%u%%), %.0f MB/s, %.0f s left", p->what,
			rr_format_bytes(p->done, done), rr_format_bytes(p->total, total), pct,
			rate / 1e6, left);
	p->shown = 1;
	p->last_ms = now;
}

void rr_progress_add(struct rr_progress *p, uint64_t bytes)
{
	int64_t now;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->done += bytes;
	now = rr_mono_ms();
	if (now - p->start_ms >= s_quiet_ms &&
	    now - p->last_ms >= (p->live ? LIVE_EVERY_MS : s_line_every_ms))
		s_show(p, now);
	pthread_mutex_unlock(&p->lock);
}

void rr_progress_destroy(struct rr_progress *p)
{
	if (!p)
		return;
	if (p->shown && p->live)
		s_show(p, rr_mono_ms()); /* final figures; the next log line ends it */
	pthread_mutex_destroy(&p->lock);
	free(p);
}
