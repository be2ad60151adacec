#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "rr/error.h"
#include "rr/ledger.h"
#include "rr/log.h"
#include "rr/losses.h"
#include "rr/report.h"

/* A multi-node job's nodes start within about this of each other. */
#define S_CONCURRENT_MS 60000

struct rr_history {
	char *url, *run_id;
	struct rr_store_opts opts;
	int64_t start_wall_ms;
	unsigned nnodes;
	pthread_t tid;
	atomic_int cancel;  /* the store's requests stop while set */
	atomic_int done;    /* the thread has filled sum */
	int reported;
	struct rr_history_summary sum;
};

/* The events before this machine's start (its own come after it), classified. */
static int s_read(struct rr_history *h, struct rr_store *s)
{
	struct rr_ledger_event *ev = NULL;
	struct rr_report *r = NULL;
	struct rr_loss_history lh;
	size_t n = 0, skipped = 0, past = 0;
	int rc;

	rc = rr_ledger_load_newest(s, h->run_id, RR_HISTORY_MAX_EVENTS, &ev, &n, &skipped);
	if (rc)
		return rc;
	while (past < n && ev[past].unix_ms < h->start_wall_ms)
		past++;
	rc = rr_report_build(ev, past, NULL, &r);
	if (!rc)
		rc = rr_losses_build(r, ev, past, h->start_wall_ms,
				     h->nnodes > 1 ? S_CONCURRENT_MS : 0, &lh);
	if (!rc) {
		h->sum = (struct rr_history_summary){
			.machines = (unsigned)lh.n, .losses = lh.losses, .vanished = lh.vanished,
			.missed = lh.missed, .exposure_ms = lh.exposure_ms, .end_ms = lh.end_ms,
			.cost_ms = lh.cost_ms,
		};
		rr_losses_free(&lh);
	}
	rr_report_destroy(r);
	free(ev);
	return rc;
}

static void *s_main(void *arg)
{
	struct rr_history *h = arg;
	struct rr_store *s = NULL;
	int rc = rr_store_open(h->url, &h->opts, &s);

	if (!rc) {
		rr_store_set_cancel(s, &h->cancel);
		rc = s_read(h, s);
		rr_store_set_cancel(s, NULL);
	}
	if (rc && !h->cancel) {
		memset(&h->sum, 0, sizeof(h->sum));
		rr_warn("--every auto: cannot read the run's history of losses (%s); going by "
			"the prior alone", rr_store_strerror(rc));
	}
	rr_store_destroy(s);
	atomic_store(&h->done, 1);
	return NULL;
}

int rr_history_start(const char *url, const struct rr_store_opts *opts, const char *run_id,
		     int64_t start_wall_ms, unsigned nnodes, struct rr_history **out)
{
	struct rr_history *h = calloc(1, sizeof(*h));

	*out = NULL;
	if (!h)
		return RR_ENOMEM;
	h->url = strdup(url);
	h->run_id = strdup(run_id);
	h->opts = *opts;
	h->start_wall_ms = start_wall_ms;
	h->nnodes = nnodes;
	if (!h->url || !h->run_id || pthread_create(&h->tid, NULL, s_main, h) != 0) {
		free(h->url);
		free(h->run_id);
		free(h);
		return RR_ENOMEM;
	}
	*out = h;
	return 0;
}

int rr_history_poll(struct rr_history *h, struct rr_history_summary *out)
{
	if (!h || h->reported || !atomic_load(&h->done))
		return 0;
	h->reported = 1;
	*out = h->sum;
	return 1;
}

void rr_history_stop(struct rr_history *h)
{
	if (!h)
		return;
	atomic_store(&h->cancel, 1);
	pthread_join(h->tid, NULL);
	free(h->url);
	free(h->run_id);
	free(h);
}
