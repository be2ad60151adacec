#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/fsutil.h"
#include "rr/log.h"
#include "metrics.h"

#define S_MAX_NOTICE_SERIES 32 /* kinds x sources: 4 x 5 today */
#define S_TEXT_MAX (64 * 1024)

/* Upper bounds (seconds) of the persist-duration histogram: a routine persist of a large
 * model takes minutes, a notice's must finish in 30 s (Azure) to 2 min (AWS). */
static const double s_buckets[] = { 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600 };
#define S_NBUCKETS (sizeof(s_buckets) / sizeof(s_buckets[0]))

struct s_notice_series {
	char kind[16], source[16];
	uint64_t n;
};

struct rr_metrics {
	pthread_mutex_t lock;       /* the numbers: held only to update or render them */
	pthread_mutex_t write_lock; /* one file write at a time, in the order rendered */
	char *path;
	char *version;
	int dirty, warned;

	struct s_notice_series notices[S_MAX_NOTICE_SERIES];
	size_t nnotices;
	uint64_t checkpoints_notice, checkpoints_routine;
	int64_t last_durable_ms;          /* 0: none yet */
	uint64_t persist_buckets[S_NBUCKETS];
	uint64_t persist_count;
	double persist_sum_s;
	uint64_t bytes_checkpointed, bytes_stored, bytes_uploaded;
	uint64_t last_checkpoint_bytes;
	uint64_t deadlines_met, deadlines_missed;
	int64_t last_notice_to_durable_ms; /* -1: none yet */
	uint64_t restores, restored_bytes;
	int64_t last_restore_ms;          /* -1: none yet */
	uint64_t restarts;
	/* --every ("interval" events): absent until the first */
	int have_interval;
	int64_t interval_ms, cost_ms, mtbf_ms; /* mtbf 0: a fixed interval */
	uint64_t stall_ms_total;

	/* the notice waiting for its checkpoint */
	int pending;
	int64_t pending_received_ms, pending_deadline_ms;
};

int rr_metrics_new(const char *path, const char *version, struct rr_metrics **out)
{
	struct rr_metrics *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return RR_ENOMEM;
	m->version = strdup(version ? version : "unknown");
	m->path = path ? strdup(path) : NULL;
	if (!m->version || (path && !m->path)) {
		free(m->version);
		free(m->path);
		free(m);
		return RR_ENOMEM;
	}
	m->last_notice_to_durable_ms = -1;
	m->last_restore_ms = -1;
	m->dirty = 1;
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->write_lock, NULL);
	*out = m;
	return 0;
}

void rr_metrics_destroy(struct rr_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->write_lock);
	free(m->path);
	free(m->version);
	free(m);
}

static int64_t s_num(const cJSON *f, const char *name, int64_t fallback)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(f, name);
	/* Our own events: still, nothing outside a sane range reaches a cast. */
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= -9.0e15 && v->valuedouble <= 9.0e15))
		return fallback;
	return (int64_t)v->valuedouble;
}

static const char *s_str(const cJSON *f, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(f, name);
	return cJSON_IsString(v) && v->valuestring ? v->valuestring : "unknown";
}

static void s_notice(struct rr_metrics *m, const cJSON *f)
{
	const char *kind = s_str(f, "notice"), *source = s_str(f, "source");
	int64_t received_ms = s_num(f, "received_unix_ms", 0);
	size_t i;

	for (i = 0; i < m->nnotices; i++)
		if (!strcmp(m->notices[i].kind, kind) && !strcmp(m->notices[i].source, source))
			break;
	if (i == m->nnotices && i < S_MAX_NOTICE_SERIES) {
		snprintf(m->notices[i].kind, sizeof(m->notices[i].kind), "%s", kind);
		snprintf(m->notices[i].source, sizeof(m->notices[i].source), "%s", source);
		m->nnotices++;
	}
	if (i < m->nnotices)
		m->notices[i].n++;
	if (!received_ms)
		received_ms = s_num(f, "received_unix", 0) * 1000;
	/* A notice replaced before its checkpoint was durable counts as missed only if its
	 * deadline had already passed. */
	if (m->pending && m->pending_deadline_ms && received_ms > m->pending_deadline_ms)
		m->deadlines_missed++;
	m->pending = 1;
	m->pending_received_ms = received_ms;
	m->pending_deadline_ms = s_num(f, "deadline_unix", 0) * 1000;
}

static void s_checkpoint(struct rr_metrics *m, const cJSON *f)
{
	int urgent = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "urgent"));
	int64_t durable_ms = s_num(f, "durable_unix_ms", 0);
	int64_t committed_ms = s_num(f, "committed_unix_ms", 0);
	double s = (double)s_num(f, "elapsed_ms", 0) / 1000.0;
	size_t b;

	if (urgent)
		m->checkpoints_notice++;
	else
		m->checkpoints_routine++;
	if (durable_ms > m->last_durable_ms)
		m->last_durable_ms = durable_ms;
	for (b = 0; b < S_NBUCKETS; b++)
		if (s <= s_buckets[b])
			m->persist_buckets[b]++;
	m->persist_count++;
	m->persist_sum_s += s;
	m->last_checkpoint_bytes = (uint64_t)s_num(f, "bytes", 0);
	m->bytes_checkpointed += m->last_checkpoint_bytes;
	m->bytes_stored += (uint64_t)s_num(f, "stored_bytes", 0);
	m->bytes_uploaded += (uint64_t)s_num(f, "new_bytes", 0);
	/* The notice's checkpoint: written for it, or committed by the trainer after it. */
	if (m->pending && durable_ms >= m->pending_received_ms &&
	    (urgent || committed_ms >= m->pending_received_ms)) {
		m->last_notice_to_durable_ms = durable_ms - m->pending_received_ms;
		if (m->pending_deadline_ms && durable_ms > m->pending_deadline_ms)
			m->deadlines_missed++;
		else if (m->pending_deadline_ms)
			m->deadlines_met++;
		m->pending = 0;
	}
}

void rr_metrics_observe(struct rr_metrics *m, const char *kind, const cJSON *fields)
{
	if (!m || !kind)
		return;
	pthread_mutex_lock(&m->lock);
	if (!strcmp(kind, "notice")) {
		s_notice(m, fields);
	} else if (!strcmp(kind, "checkpoint")) {
		s_checkpoint(m, fields);
	} else if (!strcmp(kind, "restore")) {
		m->restores++;
		m->restored_bytes += (uint64_t)s_num(fields, "bytes", 0);
		m->last_restore_ms = s_num(fields, "elapsed_ms", 0);
	} else if (!strcmp(kind, "restart")) {
		m->restarts++;
	} else if (!strcmp(kind, "interval")) {
		m->have_interval = 1;
		m->interval_ms = s_num(fields, "interval_ms", m->interval_ms);
		m->cost_ms = s_num(fields, "cost_ms", m->cost_ms);
		m->mtbf_ms = s_num(fields, "mtbf_ms", m->mtbf_ms);
		m->stall_ms_total += (uint64_t)s_num(fields, "stall_ms", 0);
	} else {
		pthread_mutex_unlock(&m->lock);
		return;
	}
	m->dirty = 1;
	pthread_mutex_unlock(&m->lock);
}

void rr_metrics_finish(struct rr_metrics *m, int64_t now_unix_ms)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	if (m->pending && m->pending_deadline_ms && now_unix_ms > m->pending_deadline_ms) {
		m->deadlines_missed++;
		m->pending = 0;
		m->dirty = 1;
	}
	pthread_mutex_unlock(&m->lock);
}

/* Label values: backslash, double quote and newline escaped (exposition format). */
static int s_label(struct rr_buf *out, const char *v)
{
	int rc = 0;
	for (; *v && !rc; v++)
		rc = *v == '\\' ? rr_buf_append(out, "\\\\", 2) :
		     *v == '"'  ? rr_buf_append(out, "\\\"", 2) :
		     *v == '\n' ? rr_buf_append(out, "\\n", 2) : rr_buf_append(out, v, 1);
	return rc;
}

static int s_head(struct rr_buf *o, const char *name, const char *type, const char *help)
{
	return rr_buf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int s_counter(struct rr_buf *o, const char *name, const char *help, uint64_t v)
{
	int rc = s_head(o, name, "counter", help);
	return rc ? rc : rr_buf_printf(o, "%s %llu\n", name, (unsigned long long)v);
}

static int s_gauge_s(struct rr_buf *o, const char *name, const char *help, int64_t ms)
{
	int rc = s_head(o, name, "gauge", help);
	return rc ? rc : rr_buf_printf(o, "%s %.3f\n", name, (double)ms / 1000.0);
}

/* --every: the interval in force, what it was chosen from, and the stall it costs. */
static int s_render_interval(struct rr_metrics *m, struct rr_buf *o)
{
	int rc = s_gauge_s(o, "resume_run_checkpoint_interval_seconds",
			   "Training time between periodic checkpoints now (--every).",
			   m->interval_ms);
	if (!rc && m->cost_ms)
		rc = s_gauge_s(o, "resume_run_checkpoint_cost_seconds",
			       "Checkpoint cost the interval uses: the median stall from the ask "
			       "to the commit.", m->cost_ms);
	if (!rc && m->mtbf_ms)
		rc = s_gauge_s(o, "resume_run_uncovered_mtbf_seconds",
			       "Mean time between losses no notice covers, as --every auto "
			       "estimates it (or --mtbf).", m->mtbf_ms);
	if (!rc) {
		rc = s_head(o, "resume_run_checkpoint_stall_seconds_total", "counter",
			    "Training time stalled by periodic checkpoints (ask to commit).");
		if (!rc)
			rc = rr_buf_printf(o, "resume_run_checkpoint_stall_seconds_total %.3f\n",
					   (double)m->stall_ms_total / 1000.0);
	}
	return rc;
}

static int s_render_locked(struct rr_metrics *m, struct rr_buf *o)
{
	int rc;

	rc = s_head(o, "resume_run_build_info", "gauge",
		    "Always 1; the version label says which resume-run this is.");
	if (!rc)
		rc = rr_buf_printf(o, "resume_run_build_info{version=\"");
	if (!rc)
		rc = s_label(o, m->version);
	if (!rc)
		rc = rr_buf_printf(o, "\"} 1\n");
	if (!rc)
		rc = s_head(o, "resume_run_notices_total", "counter",
			    "Preemption, termination and maintenance notices, by kind and source.");
	for (size_t i = 0; !rc && i < m->nnotices; i++) {
		rc = rr_buf_printf(o, "resume_run_notices_total{kind=\"");
		if (!rc)
			rc = s_label(o, m->notices[i].kind);
		if (!rc)
			rc = rr_buf_printf(o, "\",source=\"");
		if (!rc)
			rc = s_label(o, m->notices[i].source);
		if (!rc)
			rc = rr_buf_printf(o, "\"} %llu\n", (unsigned long long)m->notices[i].n);
	}
	if (!rc)
		rc = s_head(o, "resume_run_checkpoints_persisted_total", "counter",
			    "Checkpoints made durable in the store, by what asked for them.");
	if (!rc)
		rc = rr_buf_printf(o, "resume_run_checkpoints_persisted_total{trigger=\"notice\"} "
				   "%llu\nresume_run_checkpoints_persisted_total{trigger=\"routine\"} "
				   "%llu\n", (unsigned long long)m->checkpoints_notice,
				   (unsigned long long)m->checkpoints_routine);
	if (!rc && m->last_durable_ms) {
		rc = s_head(o, "resume_run_last_durable_checkpoint_timestamp_seconds", "gauge",
			    "When the newest checkpoint became durable (seconds since the epoch).");
		if (!rc)
			rc = rr_buf_printf(o, "resume_run_last_durable_checkpoint_timestamp_seconds "
					   "%.3f\n", (double)m->last_durable_ms / 1000.0);
	}
	if (!rc)
		rc = s_head(o, "resume_run_persist_duration_seconds", "histogram",
			    "Time to make one checkpoint durable in the store.");
	for (size_t b = 0; !rc && b < S_NBUCKETS; b++)
		rc = rr_buf_printf(o, "resume_run_persist_duration_seconds_bucket{le=\"%g\"} %llu\n",
				   s_buckets[b], (unsigned long long)m->persist_buckets[b]);
	if (!rc)
		rc = rr_buf_printf(o, "resume_run_persist_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
				   "resume_run_persist_duration_seconds_sum %.3f\n"
				   "resume_run_persist_duration_seconds_count %llu\n",
				   (unsigned long long)m->persist_count, m->persist_sum_s,
				   (unsigned long long)m->persist_count);
	if (!rc)
		rc = s_counter(o, "resume_run_checkpointed_bytes_total",
			       "Bytes of the checkpoints persisted, as the trainer wrote them.",
			       m->bytes_checkpointed);
	if (!rc)
		rc = s_counter(o, "resume_run_stored_bytes_total",
			       "Bytes those checkpoints take in the store, compressed.",
			       m->bytes_stored);
	if (!rc)
		rc = s_counter(o, "resume_run_uploaded_bytes_total",
			       "Bytes sent to the store (new chunks only).", m->bytes_uploaded);
	if (!rc) {
		rc = s_head(o, "resume_run_last_checkpoint_bytes", "gauge",
			    "Size of the newest persisted checkpoint, as the trainer wrote it.");
		if (!rc)
			rc = rr_buf_printf(o, "resume_run_last_checkpoint_bytes %llu\n",
					   (unsigned long long)m->last_checkpoint_bytes);
	}
	if (!rc)
		rc = s_counter(o, "resume_run_deadlines_met_total",
			       "Notices whose checkpoint was durable before the deadline.",
			       m->deadlines_met);
	if (!rc)
		rc = s_counter(o, "resume_run_deadline_misses_total",
			       "Notices whose checkpoint was not durable by the deadline.",
			       m->deadlines_missed);
	if (!rc && m->last_notice_to_durable_ms >= 0) {
		rc = s_head(o, "resume_run_last_notice_to_durable_seconds", "gauge",
			    "From the newest answered notice to its checkpoint being durable.");
		if (!rc)
			rc = rr_buf_printf(o, "resume_run_last_notice_to_durable_seconds %.3f\n",
					   (double)m->last_notice_to_durable_ms / 1000.0);
	}
	if (!rc)
		rc = s_counter(o, "resume_run_restores_total",
			       "Checkpoints restored from the store at start.", m->restores);
	if (!rc)
		rc = s_counter(o, "resume_run_restored_bytes_total",
			       "Bytes of the checkpoints restored.", m->restored_bytes);
	if (!rc && m->last_restore_ms >= 0) {
		rc = s_head(o, "resume_run_last_restore_duration_seconds", "gauge",
			    "Time the newest restore took.");
		if (!rc)
			rc = rr_buf_printf(o, "resume_run_last_restore_duration_seconds %.3f\n",
					   (double)m->last_restore_ms / 1000.0);
	}
	if (!rc)
		rc = s_counter(o, "resume_run_restarts_total",
			       "Restarts of the trainer after it failed.", m->restarts);
	if (!rc && m->have_interval)
		rc = s_render_interval(m, o);
	return rc;
}

int rr_metrics_render(struct rr_metrics *m, struct rr_buf *out)
{
	int rc;

	pthread_mutex_lock(&m->lock);
	rc = s_render_locked(m, out);
	pthread_mutex_unlock(&m->lock);
	return rc;
}

int rr_metrics_flush(struct rr_metrics *m)
{
	struct rr_buf b;
	int rc = 0, dirty;

	if (!m || !m->path)
		return 0;
	rr_buf_init(&b, S_TEXT_MAX);
	/* The write (an fsync) happens outside the numbers' lock, so the event loop counting a
	 * notice never waits on the disk; write_lock keeps an older text from being renamed
	 * over a newer one. */
	pthread_mutex_lock(&m->write_lock);
	pthread_mutex_lock(&m->lock);
	dirty = m->dirty;
	if (dirty)
		rc = s_render_locked(m, &b);
	m->dirty = 0;
	pthread_mutex_unlock(&m->lock);
	if (dirty && !rc)
		rc = rr_write_file_durable(m->path, b.data, b.len, 0644);
	if (rc) {
		pthread_mutex_lock(&m->lock);
		m->dirty = 1; /* try again at the next flush */
		if (!m->warned)
			rr_warn("cannot write the metrics file %s: %s", m->path, rr_strerror(rc));
		m->warned = 1;
		pthread_mutex_unlock(&m->lock);
	}
	pthread_mutex_unlock(&m->write_lock);
	rr_buf_free(&b);
	return rc;
}
