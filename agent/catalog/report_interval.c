/* `report`'s checkpoint-interval section: the interval the run used (its "interval" ledger
 * events), the stall it spent and the work it lost to losses no notice covered, against
 * what the best fixed interval would have cost over the same machines in hindsight. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rr/error.h"
#include "rr/interval.h"
#include "rr/losses.h"
#include "rr/progress.h"
#include "rr/report.h"
#include "rr/simulate.h"

/* The run's machines as a simulated history: each trains its span, then ends uncovered,
 * after a notice in time, or still training. */
static int s_hindsight(struct rr_report_interval *iv, const struct rr_loss_history *lh)
{
	struct rr_sim_trace t = { 0 };
	struct rr_sim_result best;

	t.lives = calloc(lh->n ? lh->n : 1, sizeof(*t.lives));
	if (!t.lives)
		return RR_ENOMEM;
	for (size_t i = 0; i < lh->n; i++) {
		const struct rr_machine_life *l = &lh->lives[i];
		struct rr_sim_life *s = &t.lives[t.n++];
		s->span_s = (double)(l->to_ms - l->from_ms) / 1000.0;
		s->end = l->end == RR_END_VANISHED || l->end == RR_END_NOTICE_MISSED ?
				 RR_SIM_UNCOVERED :
			 l->end == RR_END_NOTICE_MET ? RR_SIM_NOTICE : RR_SIM_CENSORED;
		t.total_s += s->span_s;
	}
	rr_sim_best_fixed(&t, (double)iv->cost_ms / 1000.0, &best);
	free(t.lives);
	iv->have_best = 1;
	iv->best_ms = (int64_t)(best.interval_s * 1000);
	iv->best_overhead_ms = (int64_t)(best.overhead_s * 1000);
	iv->best_lost_ms = (int64_t)(best.lost_s * 1000);
	return 0;
}

/* The intervals, modes and periodic stalls the events recorded. */
static int s_recorded(struct rr_report_interval *iv, const struct rr_ledger_event *ev, size_t n)
{
	double *stalls = NULL;
	size_t ns = 0;

	for (size_t i = 0; i < n; i++) {
		const struct rr_ledger_event *e = &ev[i];
		if (e->kind != RR_LEDGER_INTERVAL || e->interval_ms <= 0)
			continue;
		if (!iv->have)
			snprintf(iv->mode, sizeof(iv->mode), "%s", e->mode[0] ? e->mode : "fixed");
		else if (strcmp(iv->mode, e->mode[0] ? e->mode : "fixed") != 0)
			snprintf(iv->mode, sizeof(iv->mode), "mixed");
		if (!iv->have || e->interval_ms < iv->min_ms)
			iv->min_ms = e->interval_ms;
		if (e->interval_ms > iv->max_ms)
			iv->max_ms = e->interval_ms;
		iv->last_ms = e->interval_ms;
		iv->have = 1;
		if (e->stall_ms <= 0)
			continue;
		if (!stalls && !(stalls = malloc(n * sizeof(*stalls))))
			return RR_ENOMEM;
		stalls[ns++] = (double)e->stall_ms / 1000.0;
		iv->overhead_ms += e->stall_ms;
	}
	iv->stalls = (unsigned)ns;
	/* the recent ones (rr_interval_median takes the newest 64) */
	iv->cost_ms = ns ? (int64_t)(rr_interval_median(stalls, ns) * 1000) : 0;
	free(stalls);
	return 0;
}

int rr_report_interval_build(struct rr_report *r, const struct rr_ledger_event *ev, size_t n)
{
	struct rr_report_interval *iv = &r->interval;
	struct rr_loss_history lh;
	int rc;

	memset(iv, 0, sizeof(*iv));
	rc = s_recorded(iv, ev, n);
	if (!rc)
		rc = rr_losses_build(r, ev, n, 0, 0, &lh);
	if (rc)
		return rc;
	iv->losses = lh.losses;
	iv->vanished = lh.vanished;
	iv->missed = lh.missed;
	iv->lost_ms = lh.lost_ms;
	for (size_t i = 0; i < r->nattempts; i++)
		iv->training_ms += r->attempts[i].to_ms - r->attempts[i].from_ms;
	if (iv->cost_ms > 0)
		rc = s_hindsight(iv, &lh);
	rr_losses_free(&lh);
	return rc;
}

void rr_report_interval_print_text(const struct rr_report *r, FILE *f)
{
	const struct rr_report_interval *iv = &r->interval;
	char a[24], b[24], c[24], d[24];
	double train = (double)iv->training_ms / 1000.0;

	fprintf(f, "\nCheckpoint interval");
	if (!iv->have) {
		fprintf(f, ": no periodic checkpoints recorded (--every not used)\n");
		if (iv->losses)
			fprintf(f, "  lost: %s to %u loss%s no notice covered (%u machine%s "
				"vanished, %u deadline%s missed)\n",
				rr_format_seconds((double)iv->lost_ms / 1000.0, a), iv->losses,
				iv->losses == 1 ? "" : "es", iv->vanished, iv->vanished == 1 ? "" : "s",
				iv->missed, iv->missed == 1 ? "" : "s");
		return;
	}
	fprintf(f, " (%s)\n", strcmp(iv->mode, "auto") == 0 ? "--every auto" :
			       strcmp(iv->mode, "fixed") == 0 ? "a fixed --every" :
								"--every auto and fixed");
	if (iv->min_ms == iv->max_ms)
		fprintf(f, "  used: %s", rr_format_seconds((double)iv->last_ms / 1000.0, a));
	else
		fprintf(f, "  used: %s to %s, %s at the end",
			rr_format_seconds((double)iv->min_ms / 1000.0, a),
			rr_format_seconds((double)iv->max_ms / 1000.0, b),
			rr_format_seconds((double)iv->last_ms / 1000.0, c));
	if (iv->stalls)
		fprintf(f, "; checkpoint cost %s (median of %u stalls)\n",
			rr_format_seconds((double)iv->cost_ms / 1000.0, a), iv->stalls);
	else
		fprintf(f, "; no stall measured\n");
	double waste = (double)(iv->overhead_ms + iv->lost_ms) / 1000.0;
	fprintf(f, "  spent: %s stalled (%u periodic checkpoints), %s lost to %u loss%s no "
		"notice covered (%u vanished, %u missed a deadline): waste %s of %s (%.1f%%)\n",
		rr_format_seconds((double)iv->overhead_ms / 1000.0, a), iv->stalls,
		rr_format_seconds((double)iv->lost_ms / 1000.0, b), iv->losses,
		iv->losses == 1 ? "" : "es", iv->vanished, iv->missed, rr_format_seconds(waste, c),
		rr_format_seconds(train, d), train > 0 ? 100 * waste / train : 0);
	if (!iv->have_best)
		return;
	double best = (double)(iv->best_overhead_ms + iv->best_lost_ms) / 1000.0;
	fprintf(f, "  best fixed interval in hindsight: %s: %s stalled, %s lost: waste %s (%.1f%%)\n",
		rr_format_seconds((double)iv->best_ms / 1000.0, a),
		rr_format_seconds((double)iv->best_overhead_ms / 1000.0, b),
		rr_format_seconds((double)iv->best_lost_ms / 1000.0, c), rr_format_seconds(best, d),
		train > 0 ? 100 * best / train : 0);
}

struct cJSON *rr_report_interval_json(const struct rr_report *r)
{
	const struct rr_report_interval *iv = &r->interval;
	cJSON *o, *b;

	if (!iv->have)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "mode", iv->mode);
	cJSON_AddNumberToObject(o, "interval_seconds", (double)iv->last_ms / 1000.0);
	cJSON_AddNumberToObject(o, "interval_seconds_min", (double)iv->min_ms / 1000.0);
	cJSON_AddNumberToObject(o, "interval_seconds_max", (double)iv->max_ms / 1000.0);
	if (iv->stalls)
		cJSON_AddNumberToObject(o, "cost_seconds", (double)iv->cost_ms / 1000.0);
	else
		cJSON_AddNullToObject(o, "cost_seconds");
	cJSON_AddNumberToObject(o, "stalls", iv->stalls);
	cJSON_AddNumberToObject(o, "overhead_seconds", (double)iv->overhead_ms / 1000.0);
	cJSON_AddNumberToObject(o, "uncovered_losses", iv->losses);
	cJSON_AddNumberToObject(o, "vanished", iv->vanished);
	cJSON_AddNumberToObject(o, "missed", iv->missed);
	cJSON_AddNumberToObject(o, "work_lost_seconds", (double)iv->lost_ms / 1000.0);
	cJSON_AddNumberToObject(o, "training_seconds", (double)iv->training_ms / 1000.0);
	if (!iv->have_best) {
		cJSON_AddNullToObject(o, "best_fixed");
		return o;
	}
	b = cJSON_AddObjectToObject(o, "best_fixed");
	if (!b) {
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_AddNumberToObject(b, "interval_seconds", (double)iv->best_ms / 1000.0);
	cJSON_AddNumberToObject(b, "overhead_seconds", (double)iv->best_overhead_ms / 1000.0);
	cJSON_AddNumberToObject(b, "work_lost_seconds", (double)iv->best_lost_ms / 1000.0);
	cJSON_AddNumberToObject(b, "waste_seconds",
				(double)(iv->best_overhead_ms + iv->best_lost_ms) / 1000.0);
	return o;
}
