#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rr/error.h"
#include "rr/pool.h"

struct s_pool {
	rr_pool_fn fn;
	void *ud;
	size_t ntasks;
	atomic_size_t next;
	atomic_int error;
	const atomic_int *cancel;
};

struct s_worker {
	struct s_pool *pool;
	unsigned index;
};

static void *s_work(void *arg)
{
	struct s_worker *w = arg;
	struct s_pool *p = w->pool;

	for (;;) {
		if (atomic_load(&p->error))
			break;
		if (p->cancel && *p->cancel) {
			int expected = 0;
			atomic_compare_exchange_strong(&p->error, &expected, RR_ECANCELED);
			break;
		}
		size_t task = atomic_fetch_add(&p->next, 1);
		if (task >= p->ntasks)
			break;
		int rc = p->fn(task, w->index, p->ud);
		if (rc) {
			int expected = 0;
			atomic_compare_exchange_strong(&p->error, &expected, rc);
			break;
		}
	}
	return NULL;
}

int rr_pool_run(unsigned threads, size_t ntasks, rr_pool_fn fn, void *ud,
		const atomic_int *cancel)
{
	struct s_pool p = { .fn = fn, .ud = ud, .ntasks = ntasks, .cancel = cancel };
	pthread_t *tids = NULL;
	struct s_worker *workers = NULL;
	unsigned started = 0;

	atomic_init(&p.next, 0);
	atomic_init(&p.error, 0);
	if (threads < 1)
		threads = 1;
	if (threads > ntasks)
		threads = ntasks ? (unsigned)ntasks : 1;
	tids = calloc(threads, sizeof(*tids));
	workers = calloc(threads, sizeof(*workers));
	if (!tids || !workers) {
		free(tids);
		free(workers);
		return RR_ENOMEM;
	}
	for (unsigned i = 0; i < threads; i++)
		workers[i] = (struct s_worker){ .pool = &p, .index = i };
	/* Worker 0 is the calling thread; a failed pthread_create just means fewer helpers. */
	for (unsigned i = 1; i < threads; i++) {
		if (pthread_create(&tids[i], NULL, s_work, &workers[i]) != 0)
			break;
		started = i;
	}
	s_work(&workers[0]);
	for (unsigned i = 1; i <= started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	free(workers);
	return atomic_load(&p.error);
}

unsigned rr_pool_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 && n < 256 ? (unsigned)n : 1;
}

void rr_reason_set(struct rr_reason *r, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&r->lock);
	if (!r->text[0]) {
		va_start(ap, fmt);
		vsnprintf(r->text, sizeof(r->text), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&r->lock);
}
