#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/losses.h"

const char *rr_machine_end_name(enum rr_machine_end e)
{
	static const char *const names[] = { "unknown", "exit", "notice met", "notice missed",
					     "vanished" };
	return (unsigned)e < sizeof(names) / sizeof(names[0]) ? names[e] : "?";
}

/* The attempt (agent process) an event belongs to, as rr_report_build groups them. */
static int s_attempt_of(const struct rr_report *r, const struct rr_ledger_event *e, size_t *i)
{
	for (*i = 0; *i < r->nattempts; (*i)++)
		if (r->attempts[*i].pid == e->pid && strcmp(r->attempts[*i].host, e->host) == 0)
			return 1;
	return 0;
}

/* What the events say of each attempt, in one pass: whether it recorded an exit, and its
 * newest checkpoint durable by its end, as of when the trainer wrote it (else its start). */
struct s_seen {
	int exited;
	int64_t last_durable_ms;
};

static void s_scan(const struct rr_report *r, const struct rr_ledger_event *ev, size_t n,
		   struct s_seen *seen)
{
	for (size_t a = 0; a < r->nattempts; a++)
		seen[a].last_durable_ms = r->attempts[a].from_ms;
	for (size_t i = 0; i < n; i++) {
		size_t a;
		int64_t at;
		if ((ev[i].kind != RR_LEDGER_EXIT && ev[i].kind != RR_LEDGER_CHECKPOINT) ||
		    !s_attempt_of(r, &ev[i], &a))
			continue;
		if (ev[i].kind == RR_LEDGER_EXIT) {
			seen[a].exited = 1;
			continue;
		}
		if (ev[i].durable_ms > r->attempts[a].to_ms)
			continue;
		at = ev[i].committed_ms ? ev[i].committed_ms : ev[i].durable_ms;
		if (at > seen[a].last_durable_ms)
			seen[a].last_durable_ms = at;
	}
}

/* How attempt a ended: its last preemption notice decides; else an exit event; else a
 * machine that started after its last event (by more than concurrent_ms) says it is gone. */
static void s_classify(const struct rr_report *r, const struct s_seen *seen, size_t a,
		       int64_t later_start_ms, int64_t concurrent_ms, struct rr_machine_life *l)
{
	const struct rr_report_attempt *at = &r->attempts[a];
	const struct rr_report_notice *going = NULL;
	int later = later_start_ms > at->to_ms + concurrent_ms;

	for (size_t i = 0; i < r->nnotices; i++)
		if (r->notices[i].attempt == a && r->notices[i].preemption)
			going = &r->notices[i];
	for (size_t i = 0; i < r->nattempts && !later; i++)
		later = i != a && r->attempts[i].from_ms > at->to_ms + concurrent_ms;
	l->attempt = a;
	l->from_ms = at->from_ms;
	l->to_ms = at->to_ms;
	if (going && going->work_lost_ms > 0) {
		l->end = RR_END_NOTICE_MISSED;
		l->lost_ms = going->work_lost_ms;
	} else if (going) {
		l->end = RR_END_NOTICE_MET;
	} else if (seen[a].exited) {
		l->end = RR_END_EXIT;
	} else if (later) {
		l->end = RR_END_VANISHED;
		l->lost_ms = at->to_ms - seen[a].last_durable_ms;
		if (l->lost_ms < 0)
			l->lost_ms = 0;
	}
}

static int s_cmp_from(const void *a, const void *b)
{
	const struct rr_machine_life *x = a, *y = b;
	return x->from_ms < y->from_ms ? -1 : x->from_ms > y->from_ms;
}

/* The length of the union of the lives' spans. */
static int64_t s_union(const struct rr_machine_life *lives, size_t n)
{
	struct rr_machine_life *s;
	int64_t total = 0, cur_from = 0, cur_to = 0;

	if (!n)
		return 0;
	s = malloc(n * sizeof(*s));
	if (!s)
		return -1;
	memcpy(s, lives, n * sizeof(*s));
	qsort(s, n, sizeof(*s), s_cmp_from);
	cur_from = s[0].from_ms;
	cur_to = s[0].to_ms;
	for (size_t i = 1; i < n; i++) {
		if (s[i].from_ms > cur_to) {
			total += cur_to - cur_from;
			cur_from = s[i].from_ms;
			cur_to = s[i].to_ms;
		} else if (s[i].to_ms > cur_to) {
			cur_to = s[i].to_ms;
		}
	}
	total += cur_to - cur_from;
	free(s);
	return total;
}

int rr_losses_build(const struct rr_report *r, const struct rr_ledger_event *ev, size_t n,
		    int64_t later_start_ms, int64_t concurrent_ms, struct rr_loss_history *out)
{
	struct s_seen *seen;

	memset(out, 0, sizeof(*out));
	if (!r->nattempts)
		return 0;
	out->lives = calloc(r->nattempts, sizeof(*out->lives));
	seen = calloc(r->nattempts, sizeof(*seen));
	if (!out->lives || !seen) {
		free(seen);
		rr_losses_free(out);
		return RR_ENOMEM;
	}
	s_scan(r, ev, n, seen);
	for (size_t a = 0; a < r->nattempts; a++) {
		struct rr_machine_life *l = &out->lives[out->n++];
		s_classify(r, seen, a, later_start_ms, concurrent_ms, l);
		out->vanished += l->end == RR_END_VANISHED;
		out->missed += l->end == RR_END_NOTICE_MISSED;
		out->lost_ms += l->lost_ms;
		if (l->to_ms > out->end_ms)
			out->end_ms = l->to_ms;
	}
	free(seen);
	out->losses = out->vanished + out->missed;
	out->exposure_ms = s_union(out->lives, out->n);
	if (out->exposure_ms < 0) {
		rr_losses_free(out);
		return RR_ENOMEM;
	}
	for (size_t i = n; i-- > 0;)
		if (ev[i].kind == RR_LEDGER_INTERVAL && ev[i].cost_ms > 0) {
			out->cost_ms = ev[i].cost_ms;
			break;
		}
	return 0;
}

void rr_losses_free(struct rr_loss_history *h)
{
	if (!h)
		return;
	free(h->lives);
	memset(h, 0, sizeof(*h));
}
