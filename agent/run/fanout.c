/* Multi-node notice fan-out: a thread that writes this node's notice to the store and
 * lists notices/ about once a second for the other nodes' (see rr/fanout.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rr/clock.h"
#include "rr/error.h"
#include "fanout.h"
#include "rr/layout.h"
#include "rr/log.h"


struct rr_fanout {
	struct rr_store *store;
	char *run_id;
	unsigned rank;
	int64_t since_ms;
	int pipe[2];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_cond_t polled;   /* broadcast after each listing */
	uint64_t npolls;         /* listings finished */
	int polling;             /* a listing is under way */
	int stop;
	int have_announce;
	struct rr_notice announce;
	int have_incoming;
	struct rr_notice incoming;
	char (*seen)[64];        /* the thread's: keys' names already taken (a job of many
				  * nodes may write one each) */
	size_t nseen, capseen;
};

int rr_fanout_publish(struct rr_store *s, const char *run_id, unsigned rank,
		      const struct rr_notice *n)
{
	char key[RR_KEY_MAX];
	struct rr_buf json;
	int rc;

	rr_buf_init(&json, 4096);
	rc = rr_key_notice(key, run_id, rr_wall_ms(), rank);
	if (!rc)
		rc = rr_notice_to_json(n, &json);
	if (!rc)
		rc = rr_store_put(s, key, json.data, json.len, NULL, NULL);
	rr_buf_free(&json);
	return rc;
}

/* "<13 digits>-node<rank>.json" after the prefix: the time and the rank, else 0. */
static int s_parse_notice_name(const char *rest, int64_t *ms, unsigned *rank)
{
	unsigned long long t;
	unsigned r;
	int used = 0;

	if (strlen(rest) >= 64 || sscanf(rest, "%13llu-node%u.json%n", &t, &r, &used) != 2 ||
	    (size_t)used != strlen(rest))
		return 0;
	*ms = (int64_t)t;
	*rank = r;
	return 1;
}

struct s_found {
	struct rr_fanout *f;
	size_t prefix_len;
	char name[64]; /* the first new notice of another node, "" when none */
};

static int s_on_notice(const struct rr_store_entry *e, void *ud)
{
	struct s_found *w = ud;
	const char *rest = e->key + w->prefix_len;
	int64_t ms;
	unsigned rank;

	if (w->name[0] || strlen(e->key) <= w->prefix_len ||
	    !s_parse_notice_name(rest, &ms, &rank) || rank == w->f->rank || ms < w->f->since_ms)
		return 0;
	for (size_t i = 0; i < w->f->nseen; i++)
		if (strcmp(w->f->seen[i], rest) == 0)
			return 0;
	snprintf(w->name, sizeof(w->name), "%s", rest);
	return 0;
}

/* Remembers name as taken. 0, or RR_ENOMEM (then it may be taken again). */
static int s_seen_add(struct rr_fanout *f, const char *name)
{
	if (f->nseen == f->capseen) {
		size_t n = f->capseen ? f->capseen * 2 : 64;
		void *p = realloc(f->seen, n * sizeof(*f->seen));
		if (!p)
			return RR_ENOMEM;
		f->seen = p;
		f->capseen = n;
	}
	snprintf(f->seen[f->nseen++], sizeof(f->seen[0]), "%s", name);
	return 0;
}

/* One listing; a new notice of another node becomes incoming. */
static void s_poll_once(struct rr_fanout *f)
{
	struct s_found w = { .f = f };
	char prefix[RR_KEY_MAX], key[RR_KEY_MAX + 64], why[200] = "";
	struct rr_notice n;
	struct rr_buf b;

	if (rr_key_notices_prefix(prefix, f->run_id))
		return;
	w.prefix_len = strlen(prefix);
	if (rr_store_list(f->store, prefix, s_on_notice, &w) != 0 || !w.name[0])
		return;
	snprintf(key, sizeof(key), "%s%s", prefix, w.name);
	rr_buf_init(&b, RR_NOTICE_FILE_MAX);
	int rc = rr_store_get(f->store, key, &b, NULL);
	if (!rc)
		rc = rr_notice_parse_file((const char *)(b.data ? b.data : (unsigned char *)""),
					  b.len, rr_wall_ms() / 1000, &n, why, sizeof(why));
	rr_buf_free(&b);
	if (rc == RR_ENOENT || rc == RR_ECANCELED || rc == RR_EIO)
		return; /* tried again next time */
	if (s_seen_add(f, w.name) != 0)
		return; /* out of memory: taken again at the next listing */
	if (rc) {
		rr_warn("notice %s in the store is unreadable (%s); ignored", w.name,
			why[0] ? why : rr_strerror(rc));
		return;
	}
	/* Its deadline passed already (a notice of an earlier run of the job, whose writer's
	 * clock was ahead of this node's start): nothing to answer any more. */
	if (n.deadline_unix && n.deadline_unix < rr_wall_ms() / 1000) {
		rr_info("notice %s of another node ignored: its deadline has passed", w.name);
		return;
	}
	n.source = RR_SOURCE_NODE;
	n.received_unix = rr_wall_ms() / 1000;
	pthread_mutex_lock(&f->lock);
	f->incoming = n;
	f->have_incoming = 1;
	pthread_mutex_unlock(&f->lock);
	if (write(f->pipe[1], "n", 1) < 0) {
		/* a full pipe already wakes the loop */
	}
}

/* CLOCK_MONOTONIC ms from now, for pthread_cond_timedwait (the conds use that clock). */
static struct timespec s_in_ms(int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static void *s_thread(void *arg)
{
	struct rr_fanout *f = arg;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		if (f->have_announce) {
			struct rr_notice n = f->announce;
			f->have_announce = 0;
			pthread_mutex_unlock(&f->lock);
			int rc = rr_fanout_publish(f->store, f->run_id, f->rank, &n);
			if (rc)
				rr_warn("could not write the notice for the other nodes: %s",
					rr_store_strerror(rc));
			else
				rr_info("notice written to the store for the other nodes");
			pthread_mutex_lock(&f->lock);
			continue;
		}
		if (f->stop)
			break;
		f->polling = 1;
		pthread_mutex_unlock(&f->lock);
		s_poll_once(f);
		pthread_mutex_lock(&f->lock);
		f->polling = 0;
		f->npolls++;
		pthread_cond_broadcast(&f->polled);
		if (f->stop || f->have_announce)
			continue;
		struct timespec ts = s_in_ms(RR_FANOUT_POLL_MS);
		pthread_cond_timedwait(&f->wake, &f->lock, &ts);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

int rr_fanout_start(struct rr_store *s, const char *run_id, unsigned rank,
		    int64_t since_unix_ms, struct rr_fanout **out)
{
	struct rr_fanout *f = calloc(1, sizeof(*f));
	pthread_condattr_t ca;
	int rc = RR_ENOMEM;

	*out = NULL;
	if (!f)
		return RR_ENOMEM;
	f->store = s;
	f->rank = rank;
	f->since_ms = since_unix_ms;
	f->pipe[0] = f->pipe[1] = -1;
	f->run_id = strdup(run_id);
	if (!f->run_id || pipe2(f->pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		goto fail;
	pthread_mutex_init(&f->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->wake, &ca);
	pthread_cond_init(&f->polled, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&f->thread, NULL, s_thread, f) != 0) {
		pthread_cond_destroy(&f->wake);
		pthread_cond_destroy(&f->polled);
		pthread_mutex_destroy(&f->lock);
		rc = RR_EIO;
		goto fail;
	}
	*out = f;
	return 0;
fail:
	if (f->pipe[0] >= 0)
		close(f->pipe[0]);
	if (f->pipe[1] >= 0)
		close(f->pipe[1]);
	free(f->seen);
	free(f->run_id);
	free(f);
	return rc;
}

int rr_fanout_fd(const struct rr_fanout *f)
{
	return f ? f->pipe[0] : -1;
}

int rr_fanout_next(struct rr_fanout *f, struct rr_notice *n)
{
	char drain[16];
	int got;

	if (!f)
		return 0;
	while (read(f->pipe[0], drain, sizeof(drain)) > 0)
		;
	pthread_mutex_lock(&f->lock);
	got = f->have_incoming;
	if (got)
		*n = f->incoming;
	f->have_incoming = 0;
	pthread_mutex_unlock(&f->lock);
	return got;
}

void rr_fanout_announce(struct rr_fanout *f, const struct rr_notice *n)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->announce = *n;
	f->have_announce = 1;
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
}

int rr_fanout_poll_now(struct rr_fanout *f, int64_t timeout_ms)
{
	struct timespec ts;
	uint64_t want;
	int rc, timed_out = 0;

	if (!f)
		return RR_EINVAL;
	ts = s_in_ms(timeout_ms);
	pthread_mutex_lock(&f->lock);
	/* A listing under way may have listed before the notice landed: the next one. */
	want = f->npolls + (f->polling ? 2 : 1);
	pthread_cond_signal(&f->wake);
	while (f->npolls < want && !f->stop && !timed_out)
		timed_out = pthread_cond_timedwait(&f->polled, &f->lock, &ts) == ETIMEDOUT;
	rc = f->npolls >= want ? 0 : RR_ECANCELED;
	pthread_mutex_unlock(&f->lock);
	return rc;
}

void rr_fanout_stop(struct rr_fanout *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = 1;
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	pthread_cond_destroy(&f->wake);
	pthread_cond_destroy(&f->polled);
	pthread_mutex_destroy(&f->lock);
	close(f->pipe[0]);
	close(f->pipe[1]);
	free(f->seen);
	free(f->run_id);
	free(f);
}
