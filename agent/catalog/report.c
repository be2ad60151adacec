#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/report.h"

/* Grows *arr (of elem-sized items, *n used) by one zeroed item; returns it or NULL. */
static void *s_push(void *arr, size_t *n, size_t elem)
{
	void **a = arr;
	unsigned char *p = realloc(*a, (*n + 1) * elem);
	if (!p)
		return NULL;
	*a = p;
	memset(p + *n * elem, 0, elem);
	return p + (*n)++ * elem;
}

static int s_instance_known(const struct rr_ledger_instance *in)
{
	return in->cloud[0] || in->instance_id[0];
}

/* The attempt (agent process) an event belongs to: one per host and pid. */
static int s_attempt_of(struct rr_report *r, const struct rr_ledger_event *e, size_t *idx)
{
	struct rr_report_attempt *a;

	for (size_t i = 0; i < r->nattempts; i++)
		if (r->attempts[i].pid == e->pid && strcmp(r->attempts[i].host, e->host) == 0) {
			*idx = i;
			return 0;
		}
	a = s_push(&r->attempts, &r->nattempts, sizeof(*a));
	if (!a)
		return RR_ENOMEM;
	memcpy(a->host, e->host, sizeof(a->host));
	a->pid = e->pid;
	a->from_ms = a->to_ms = e->unix_ms;
	*idx = r->nattempts - 1;
	return 0;
}

static void s_widen(struct rr_report_attempt *a, int64_t ms)
{
	if (ms > 0 && ms < a->from_ms)
		a->from_ms = ms;
	if (ms > a->to_ms)
		a->to_ms = ms;
}

static int s_count(struct rr_report *r, const char *cloud, const char *kind, const char *source)
{
	struct rr_report_count *c;

	for (size_t i = 0; i < r->ncounts; i++) {
		c = &r->counts[i];
		if (!strcmp(c->cloud, cloud) && !strcmp(c->kind, kind) && !strcmp(c->source, source)) {
			c->n++;
			return 0;
		}
	}
	c = s_push(&r->counts, &r->ncounts, sizeof(*c));
	if (!c)
		return RR_ENOMEM;
	snprintf(c->cloud, sizeof(c->cloud), "%s", cloud);
	snprintf(c->kind, sizeof(c->kind), "%s", kind);
	snprintf(c->source, sizeof(c->source), "%s", source);
	c->n = 1;
	return 0;
}

/* The checkpoint that answered notice n: the first of its attempt that became durable
 * after it and was written for it (urgent) or committed by the trainer after it. */
static const struct rr_ledger_event *s_answer(const struct rr_ledger_event *ev, size_t n,
					      const size_t *att, const struct rr_report_notice *no)
{
	const struct rr_ledger_event *best = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct rr_ledger_event *c = &ev[i];
		if (c->kind != RR_LEDGER_CHECKPOINT || att[i] != no->attempt ||
		    c->durable_ms < no->received_ms ||
		    !(c->urgent || (c->committed_ms && c->committed_ms >= no->received_ms)))
			continue;
		if (!best || c->durable_ms < best->durable_ms)
			best = c;
	}
	return best;
}

/* Where the training state stood before notice no: the newest checkpoint of its attempt
 * durable by then (as of when the trainer wrote it), or the attempt's start if later. */
static int64_t s_state_before(const struct rr_ledger_event *ev, size_t n, const size_t *att,
			      const struct rr_report_notice *no, int64_t attempt_from)
{
	int64_t base = attempt_from;

	for (size_t i = 0; i < n; i++) {
		const struct rr_ledger_event *c = &ev[i];
		int64_t at;
		if (c->kind != RR_LEDGER_CHECKPOINT || att[i] != no->attempt ||
		    c->durable_ms > no->received_ms)
			continue;
		at = c->committed_ms ? c->committed_ms : c->durable_ms;
		if (at > base)
			base = at;
	}
	return base;
}

static void s_judge(struct rr_report *r, struct rr_report_notice *no,
		    const struct rr_ledger_event *answer, int64_t state_ms)
{
	no->to_durable_ms = -1;
	if (answer) {
		snprintf(no->checkpoint, sizeof(no->checkpoint), "%s", answer->checkpoint);
		no->durable_ms = answer->durable_ms;
		no->to_durable_ms = answer->durable_ms - no->received_ms;
	}
	if (!no->deadline_ms) {
		no->outcome = RR_DEADLINE_NONE;
	} else if (answer && answer->durable_ms <= no->deadline_ms) {
		no->outcome = RR_DEADLINE_MET;
		no->margin_ms = no->deadline_ms - answer->durable_ms;
		r->deadlines_met++;
	} else {
		no->outcome = RR_DEADLINE_MISSED;
		no->margin_ms = answer ? no->deadline_ms - answer->durable_ms : 0;
		r->deadlines_missed++;
	}
	no->preemption = !strcmp(no->kind, "preempt") || !strcmp(no->kind, "terminate");
	no->at_risk_ms = no->received_ms > state_ms ? no->received_ms - state_ms : 0;
	no->work_lost_ms = -1;
	if (no->preemption) {
		int saved = no->outcome == RR_DEADLINE_MET ||
			    (no->outcome == RR_DEADLINE_NONE && answer);
		no->work_lost_ms = saved ? 0 : no->at_risk_ms;
		r->preemptions++;
		r->work_lost_ms += no->work_lost_ms;
		r->at_risk_ms += no->at_risk_ms;
	}
}

static void s_cost(struct rr_report *r, const struct rr_report_opts *o)
{
	const double ms_per_hour = 3600.0 * 1000.0;

	for (size_t i = 0; i < r->nattempts; i++) {
		const struct rr_report_attempt *a = &r->attempts[i];
		double h = (double)(a->to_ms - a->from_ms) / ms_per_hour;
		r->machine_hours += h;
		/* A machine that does not say is counted as spot: the report is about runs on
		 * preemptible capacity. */
		if (!strcmp(a->inst.lifecycle, "on-demand"))
			r->on_demand_hours += h;
		else
			r->spot_hours += h;
	}
	r->useful_hours = r->machine_hours - (double)(r->work_lost_ms + r->restore_ms) / ms_per_hour;
	if (r->useful_hours < 0)
		r->useful_hours = 0;
	if (!o || o->price_spot <= 0 || o->price_on_demand <= 0)
		return;
	r->have_cost = 1;
	r->cost = r->spot_hours * o->price_spot + r->on_demand_hours * o->price_on_demand;
	r->on_demand_cost = r->useful_hours * o->price_on_demand;
}

int rr_report_build(const struct rr_ledger_event *ev, size_t n, const struct rr_report_opts *o,
		    struct rr_report **out)
{
	struct rr_report *r = calloc(1, sizeof(*r));
	size_t *att = n ? calloc(n, sizeof(*att)) : NULL;
	int rc = RR_ENOMEM;

	*out = NULL;
	if (!r || (n && !att))
		goto out;
	r->events = n;
	/* Pass 1: attempts, their span and identity, and what each event is. */
	for (size_t i = 0; i < n; i++) {
		const struct rr_ledger_event *e = &ev[i];
		struct rr_report_attempt *a;

		if (s_attempt_of(r, e, &att[i]))
			goto out;
		a = &r->attempts[att[i]];
		s_widen(a, e->unix_ms);
		s_widen(a, e->started_ms);
		if (!r->first_ms || e->unix_ms < r->first_ms)
			r->first_ms = e->unix_ms;
		if (e->unix_ms > r->last_ms)
			r->last_ms = e->unix_ms;
		if (!s_instance_known(&a->inst) && s_instance_known(&e->inst))
			a->inst = e->inst;
		switch (e->kind) {
		case RR_LEDGER_CHECKPOINT:
			s_widen(a, e->durable_ms);
			a->checkpoints++;
			r->checkpoints++;
			r->urgent_checkpoints += e->urgent ? 1 : 0;
			r->bytes_checkpointed += e->bytes;
			r->bytes_stored += e->stored_bytes;
			r->bytes_uploaded += e->new_bytes;
			break;
		case RR_LEDGER_RESTORE: {
			struct rr_report_restore *s = s_push(&r->restores, &r->nrestores, sizeof(*s));
			if (!s)
				goto out;
			a->restored = 1;
			s->attempt = att[i];
			s->unix_ms = e->unix_ms;
			memcpy(s->checkpoint, e->checkpoint, sizeof(s->checkpoint));
			s->bytes = e->bytes;
			s->downloaded_bytes = e->downloaded_bytes;
			s->unused_bytes = e->unused_bytes;
			s->elapsed_ms = e->elapsed_ms;
			s->fallbacks = e->fallbacks;
			s->already_present = e->already_present;
			memcpy(s->passed_over, e->instead, sizeof(s->passed_over));
			r->restore_ms += e->elapsed_ms;
			break;
		}
		case RR_LEDGER_SUSPECT: {
			struct rr_report_suspect *s = s_push(&r->suspects, &r->nsuspects, sizeof(*s));
			if (!s)
				goto out;
			s->attempt = att[i];
			s->unix_ms = e->unix_ms;
			s->failures = e->failures;
			s->exit_status = e->exit_status;
			memcpy(s->checkpoint, e->checkpoint, sizeof(s->checkpoint));
			memcpy(s->instead, e->instead, sizeof(s->instead));
			break;
		}
		case RR_LEDGER_RESTART: {
			struct rr_report_restart *s = s_push(&r->restarts, &r->nrestarts, sizeof(*s));
			if (!s)
				goto out;
			a->restarts++;
			s->attempt = att[i];
			s->unix_ms = e->unix_ms;
			s->exit_status = e->exit_status;
			s->attempt_no = e->attempt;
			memcpy(s->checkpoint, e->checkpoint, sizeof(s->checkpoint));
			break;
		}
		case RR_LEDGER_NOTICE: {
			struct rr_report_notice *no = s_push(&r->notices, &r->nnotices, sizeof(*no));
			if (!no)
				goto out;
			a->notices++;
			no->attempt = att[i];
			snprintf(no->kind, sizeof(no->kind), "%s", e->notice[0] ? e->notice : "?");
			snprintf(no->source, sizeof(no->source), "%s", e->source[0] ? e->source : "?");
			no->received_ms = e->received_ms;
			no->deadline_ms = e->deadline_ms;
			s_widen(a, e->received_ms);
			break;
		}
		case RR_LEDGER_EXIT:
			r->exits++;
			snprintf(a->ended, sizeof(a->ended), "%s", e->how[0] ? e->how : "?");
			a->exit_status = e->exit_status;
			memcpy(a->signal, e->signal, sizeof(a->signal));
			break;
		case RR_LEDGER_START:
		case RR_LEDGER_INTERVAL: /* rr_report_interval_build reads them */
		case RR_LEDGER_OTHER:
			break;
		}
	}
	/* Pass 2: each notice against its checkpoint and deadline, once every attempt's span
	 * and checkpoints are known. */
	for (size_t i = 0; i < r->nnotices; i++) {
		struct rr_report_notice *no = &r->notices[i];
		const struct rr_report_attempt *a = &r->attempts[no->attempt];
		const struct rr_ledger_event *answer = s_answer(ev, n, att, no);

		s_judge(r, no, answer, s_state_before(ev, n, att, no, a->from_ms));
		if (s_count(r, a->inst.cloud, no->kind, no->source))
			goto out;
	}
	for (size_t i = 0; r->exits && i + 1 < r->nattempts; i++)
		r->lost += !r->attempts[i].ended[0];
	s_cost(r, o);
	if (rr_report_interval_build(r, ev, n))
		goto out;
	*out = r;
	r = NULL;
	rc = 0;
out:
	free(att);
	rr_report_destroy(r);
	return rc;
}

const char *rr_report_ended(const struct rr_report *r, size_t i)
{
	if (r->attempts[i].ended[0])
		return r->attempts[i].ended;
	if (!r->exits)
		return NULL;
	return i + 1 < r->nattempts ? "lost" : "running or lost";
}

void rr_report_destroy(struct rr_report *r)
{
	if (!r)
		return;
	free(r->attempts);
	free(r->notices);
	free(r->restores);
	free(r->restarts);
	free(r->suspects);
	free(r->counts);
	free(r);
}
