/* The watcher thread: detects the cloud (when asked to), fetches the instance identity,
 * then waits for notices with the provider, backing off while the metadata service fails.
 * Notices are queued for the event loop, which an eventfd wakes. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "rr/clock.h"
#include "rr/cloud.h"
#include "rr/error.h"
#include "rr/log.h"

#define S_QUEUE_MAX 16
/* The longest wait between tries while the metadata service fails: well under the 30 s a
 * GCP or Azure notice leaves (at 30 s, a notice posted as the service came back was seen up
 * to 30 s late: its whole window). One request every 2.5-5 s is far below the services'
 * rate limits (IMDS: 5 a second). */
#define S_BACKOFF_MAX_MS 5000
#define S_IDENTITY_RETRY_MS 30000

struct rr_cloud_watch {
	enum rr_cloud cloud;
	struct rr_cloud_opts o;
	atomic_int stop;
	/* Notices are numbered as reported (pushed: the last number given, written by the
	 * thread). durable: the newest notice whose checkpoint the event loop made durable;
	 * told: the newest the thread has handed to the provider's durable (or passed over). */
	atomic_uint_fast64_t pushed, durable, told;
	atomic_int settled;          /* detection done and the identity asked for */
	atomic_int decided;          /* the cloud once known (enum rr_cloud), AUTO before */
	atomic_int acks;             /* the provider acknowledges durable checkpoints */
	int efd;
	int started;
	pthread_t thread;
	pthread_mutex_t lock;        /* guards the queue and the identity */
	struct rr_notice queue[S_QUEUE_MAX];
	unsigned head, count;
	struct rr_cloud_identity id;
	int id_known;
};

static const struct rr_cloud_provider *s_provider(enum rr_cloud c)
{
	switch (c) {
	case RR_CLOUD_AWS: return &rr_cloud_aws;
	case RR_CLOUD_GCP: return &rr_cloud_gcp;
	case RR_CLOUD_AZURE: return &rr_cloud_azure;
	default: return NULL;
	}
}

/* Sleeps ms, in short steps so that a stop is seen at once. */
static void s_nap(struct rr_cloud_watch *w, int64_t ms)
{
	int64_t end = rr_mono_ms() + ms;

	while (!w->stop && rr_mono_ms() < end) {
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
}

static void s_push(struct rr_cloud_watch *w, const struct rr_notice *n)
{
	uint64_t one = 1;

	pthread_mutex_lock(&w->lock);
	if (w->count < S_QUEUE_MAX) {
		struct rr_notice *q = &w->queue[(w->head + w->count) % S_QUEUE_MAX];
		*q = *n;
		q->seq = atomic_fetch_add(&w->pushed, 1) + 1;
		w->count++;
		n = NULL;
	}
	pthread_mutex_unlock(&w->lock);
	if (n) /* the event loop has not taken the last S_QUEUE_MAX: it is stuck */
		rr_warn("cloud watcher: %d notices are waiting for the event loop; this %s from "
			"%s is dropped", S_QUEUE_MAX, rr_notice_kind_name(n->kind),
			rr_notice_source_name(n->source));
	if (write(w->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		rr_warn("cloud watcher: cannot wake the event loop: %s", strerror(errno));
}

static void s_fetch_identity(struct rr_cloud_watch *w, const struct rr_cloud_provider *p,
			     void *state)
{
	struct rr_cloud_identity id;
	char why[300] = "";
	int rc = p->identity(state, &id, why, sizeof(why));

	if (rc && !id.instance_id[0]) {
		rr_debug("%s instance identity not available yet: %s", p->name, why);
		return;
	}
	pthread_mutex_lock(&w->lock);
	w->id = id;
	w->id_known = 1;
	pthread_mutex_unlock(&w->lock);
	rr_info("running on %s: instance %s, %s, %s, %s", p->name,
		id.instance_id[0] ? id.instance_id : "?", id.instance_type[0] ? id.instance_type : "?",
		id.zone[0] ? id.zone : "?", id.lifecycle[0] ? id.lifecycle : "lifecycle unknown");
}

/* Marks detection and identity done, and wakes the event loop to see it. */
static void s_settle(struct rr_cloud_watch *w)
{
	uint64_t one = 1;

	if (atomic_exchange(&w->settled, 1))
		return;
	if (write(w->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		rr_warn("cloud watcher: cannot wake the event loop: %s", strerror(errno));
}

static void *s_main(void *arg)
{
	struct rr_cloud_watch *w = arg;
	const struct rr_cloud_provider *p;
	char why[300], last_why[300] = "";
	int64_t backoff = 0, identity_at = 0;
	void *state = NULL;
	int failing = 0, rc;

	if (w->cloud == RR_CLOUD_AUTO) {
		w->cloud = rr_cloud_detect(&w->o, NULL, why, sizeof(why));
		if (w->stop)
			return NULL;
		if (w->cloud == RR_CLOUD_NONE) {
			rr_info("cloud: none (%s); notices come from signals, --drill-file and "
				"--every", why);
			atomic_store(&w->decided, RR_CLOUD_NONE);
			s_settle(w);
			return NULL;
		}
		rr_info("cloud: %s (%s)", rr_cloud_name(w->cloud), why);
	}
	atomic_store(&w->decided, (int)w->cloud);
	p = s_provider(w->cloud);
	rc = p ? p->create(&w->o, &state) : RR_EINVAL;
	if (!rc && p->durable)
		atomic_store(&w->acks, 1);
	if (rc) {
		rr_error("cannot watch %s notices: %s", rr_cloud_name(w->cloud), rr_strerror(rc));
		s_settle(w);
		return NULL;
	}
	while (!w->stop) {
		struct rr_notice n;
		if (!w->id_known && rr_mono_ms() >= identity_at) {
			s_fetch_identity(w, p, state);
			identity_at = rr_mono_ms() + S_IDENTITY_RETRY_MS;
			s_settle(w);
		}
		/* A checkpoint made durable for an older notice than the newest reported
		 * answers not that one (an Azure Preempt reported just after a Reboot's
		 * checkpoint was durable must not be approved by it): passed over. */
		uint64_t d = atomic_load(&w->durable);
		if (d > atomic_load(&w->told)) {
			if (p->durable && d == atomic_load(&w->pushed))
				p->durable(state);
			atomic_store(&w->told, d);
		}
		why[0] = '\0';
		rc = p->wait(state, &n, why, sizeof(why));
		if (w->stop)
			break;
		if (rc >= 0) {
			if (failing)
				rr_info("%s metadata service answers again", p->name);
			failing = 0;
			backoff = 0;
			last_why[0] = '\0';
			if (rc == 1)
				s_push(w, &n);
			continue;
		}
		/* One line per change of state, not one per attempt; training goes on. */
		if (!failing || !rr_log_same_gist(why, last_why))
			rr_warn("%s metadata service: %s; training goes on, retrying with backoff",
				p->name, why[0] ? why : rr_strerror(rc));
		snprintf(last_why, sizeof(last_why), "%s", why);
		failing = 1;
		backoff = backoff ? backoff * 2 : 1000;
		if (backoff > S_BACKOFF_MAX_MS)
			backoff = S_BACKOFF_MAX_MS;
		s_nap(w, backoff / 2 + rand() % (backoff / 2 + 1));
	}
	p->destroy(state);
	return NULL;
}

int rr_cloud_watch_start(enum rr_cloud cloud, const struct rr_cloud_opts *o,
			 struct rr_cloud_watch **out)
{
	struct rr_cloud_watch *w = calloc(1, sizeof(*w));

	if (!w)
		return RR_ENOMEM;
	w->cloud = cloud;
	w->decided = cloud;
	w->o = *o;
	w->o.stop = &w->stop;
	w->efd = -1;
	pthread_mutex_init(&w->lock, NULL);
	if (cloud != RR_CLOUD_NONE) {
		w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (w->efd < 0 || pthread_create(&w->thread, NULL, s_main, w) != 0) {
			if (w->efd >= 0)
				close(w->efd);
			pthread_mutex_destroy(&w->lock);
			free(w);
			return RR_ENOMEM;
		}
		w->started = 1;
	}
	*out = w;
	return 0;
}

int rr_cloud_watch_fd(const struct rr_cloud_watch *w)
{
	return w ? w->efd : -1;
}

int rr_cloud_watch_next(struct rr_cloud_watch *w, struct rr_notice *n)
{
	uint64_t v;
	int got = 0;

	if (!w || w->efd < 0)
		return 0;
	if (read(w->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return 0;
	pthread_mutex_lock(&w->lock);
	if (w->count) {
		*n = w->queue[w->head];
		w->head = (w->head + 1) % S_QUEUE_MAX;
		w->count--;
		got = 1;
	}
	/* More queued: keep the eventfd readable for the next round. */
	if (w->count) {
		v = 1;
		if (write(w->efd, &v, sizeof(v)) < 0)
			v = 0;
	}
	pthread_mutex_unlock(&w->lock);
	return got;
}

int rr_cloud_watch_identity(struct rr_cloud_watch *w, struct rr_cloud_identity *id)
{
	int known;

	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	known = w->id_known;
	if (known)
		*id = w->id;
	pthread_mutex_unlock(&w->lock);
	return known;
}

int rr_cloud_watch_settled(struct rr_cloud_watch *w)
{
	return !w || w->efd < 0 || atomic_load(&w->settled);
}

enum rr_cloud rr_cloud_watch_cloud(struct rr_cloud_watch *w)
{
	return w ? (enum rr_cloud)atomic_load(&w->decided) : RR_CLOUD_NONE;
}

void rr_cloud_watch_durable(struct rr_cloud_watch *w, uint64_t seq)
{
	uint_fast64_t was;

	if (!w)
		return;
	was = atomic_load(&w->durable);
	while (seq > was && !atomic_compare_exchange_weak(&w->durable, &was, seq))
		;
}

void rr_cloud_watch_stop(struct rr_cloud_watch *w)
{
	int64_t give_up;

	if (!w)
		return;
	/* A durable checkpoint not yet acknowledged (Azure): let the thread send it first,
	 * within a few seconds, since approving the event is what the user asked for. */
	give_up = rr_mono_ms() + 3000;
	while (w->started && atomic_load(&w->acks) &&
	       atomic_load(&w->durable) > atomic_load(&w->told) &&
	       atomic_load(&w->durable) == atomic_load(&w->pushed) && rr_mono_ms() < give_up) {
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
	}
	w->stop = 1;
	if (w->started)
		pthread_join(w->thread, NULL);
	if (w->efd >= 0)
		close(w->efd);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
