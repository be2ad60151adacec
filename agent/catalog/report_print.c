#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "rr/error.h"
#include "rr/progress.h"
#include "rr/report.h"

#define S_JSON_SCHEMA 1 /* bumped only when a member changes meaning or goes away */

static const char *const s_outcomes[] = { "no_deadline", "met", "missed" };

static char *s_when(int64_t ms, char out[24])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || !gmtime_r(&t, &tm) || !strftime(out, 24, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(out, 24, "-");
	return out;
}

/* A duration for people: "850 ms", "12.4 s", "3 min 20 s", "2 h 05 min". */
static char *s_dur(int64_t ms, char out[24])
{
	int64_t a = ms < 0 ? -ms : ms;

	if (a < 1000)
		snprintf(out, 24, "%lld ms", (long long)a);
	else if (a < 60000)
		snprintf(out, 24, "%.1f s", (double)a / 1000.0);
	else if (a < 3600000)
		snprintf(out, 24, "%lld min %02lld s", (long long)(a / 60000),
			 (long long)(a / 1000 % 60));
	else
		snprintf(out, 24, "%lld h %02lld min", (long long)(a / 3600000),
			 (long long)(a / 60000 % 60));
	return out;
}

static const char *s_or(const char *s, const char *dash)
{
	return s && s[0] ? s : dash;
}

/* Machine i's end for the table: "preempted (75)", "failed (3)", "killed (SIGKILL)", ... */
static const char *s_ended(const struct rr_report *r, size_t i, char out[48])
{
	const struct rr_report_attempt *a = &r->attempts[i];
	const char *how = rr_report_ended(r, i);

	if (!a->ended[0] || !strcmp(a->ended, "finished"))
		snprintf(out, 48, "%s", how ? how : "-");
	else if (!strcmp(a->ended, "killed") && a->signal[0])
		snprintf(out, 48, "killed (SIG%s)", a->signal);
	else
		snprintf(out, 48, "%s (%lld)", a->ended, (long long)a->exit_status);
	return out;
}

/* Hours as a duration for people: short runs are seconds, not "0.00 h". */
static char *s_hours(double h, char out[24])
{
	return s_dur((int64_t)(h * 3600.0 * 1000.0 + 0.5), out);
}

static void s_print_notices(const struct rr_report *r, FILE *f)
{
	char w[24], d1[24], d2[24];

	fprintf(f, "\nNotices by cloud, kind and source\n");
	if (!r->ncounts)
		fprintf(f, "  none\n");
	for (size_t i = 0; i < r->ncounts; i++)
		fprintf(f, "  %-6s %-12s from %-7s %u\n", s_or(r->counts[i].cloud, "-"),
			r->counts[i].kind, r->counts[i].source, r->counts[i].n);
	if (!r->nnotices)
		return;
	fprintf(f, "\nNotice to durable checkpoint\n");
	fprintf(f, "  %-19s %-3s %-11s %-7s %-12s %-22s %-10s %-24s %s\n", "RECEIVED (UTC)", "#",
		"KIND", "SOURCE", "DEADLINE IN", "CHECKPOINT", "DURABLE IN", "DEADLINE", "WORK LOST");
	for (size_t i = 0; i < r->nnotices; i++) {
		const struct rr_report_notice *n = &r->notices[i];
		char outcome[48], lost[32], dl[24], td[24];
		if (n->outcome == RR_DEADLINE_NONE)
			snprintf(outcome, sizeof(outcome), "no deadline");
		else if (n->outcome == RR_DEADLINE_MET)
			snprintf(outcome, sizeof(outcome), "met, %s to spare", s_dur(n->margin_ms, d1));
		else if (n->durable_ms)
			snprintf(outcome, sizeof(outcome), "MISSED by %s", s_dur(n->margin_ms, d1));
		else
			snprintf(outcome, sizeof(outcome), "MISSED (never durable)");
		if (n->work_lost_ms < 0)
			snprintf(lost, sizeof(lost), "- (precaution)");
		else
			snprintf(lost, sizeof(lost), "%s", s_dur(n->work_lost_ms, d2));
		if (n->deadline_ms)
			s_dur(n->deadline_ms - n->received_ms, dl);
		else
			snprintf(dl, sizeof(dl), "-");
		if (n->to_durable_ms >= 0)
			s_dur(n->to_durable_ms, td);
		else
			snprintf(td, sizeof(td), "-");
		fprintf(f, "  %-19s %-3zu %-11s %-7s %-12s %-22s %-10s %-24s %s\n",
			s_when(n->received_ms, w), n->attempt + 1, n->kind, n->source, dl,
			s_or(n->checkpoint, "-"), td, outcome, lost);
	}
}

int rr_report_print_text(const struct rr_report *r, const char *run_id, FILE *f)
{
	char w1[24], w2[24], d1[24], b1[16], b2[16], b3[16];

	fprintf(f, "Run '%s': %zu ledger events from %s to %s UTC", run_id, r->events,
		s_when(r->first_ms, w1), s_when(r->last_ms, w2));
	if (r->skipped)
		fprintf(f, " (%zu unreadable, left out)", r->skipped);
	fprintf(f, "\n\nMachines (one line per agent start)\n");
	fprintf(f, "  %-3s %-20s %-6s %-16s %-14s %-10s %-19s %-19s %-14s %-12s %s\n", "#",
		"HOST", "CLOUD", "TYPE", "ZONE", "LIFECYCLE", "FROM (UTC)", "TO (UTC)", "DURATION",
		"STARTED FROM", "ENDED");
	for (size_t i = 0; i < r->nattempts; i++) {
		const struct rr_report_attempt *a = &r->attempts[i];
		char ended[48];
		fprintf(f, "  %-3zu %-20.20s %-6s %-16.16s %-14.14s %-10s %-19s %-19s %-14s %-12s "
			"%s\n", i + 1, a->host, s_or(a->inst.cloud, "-"),
			s_or(a->inst.instance_type, "-"), s_or(a->inst.zone, "-"),
			s_or(a->inst.lifecycle, "-"), s_when(a->from_ms, w1), s_when(a->to_ms, w2),
			s_dur(a->to_ms - a->from_ms, d1), a->restored ? "a checkpoint" : "scratch",
			s_ended(r, i, ended));
	}
	if (r->lost)
		fprintf(f, "  %u machine%s recorded no end: lost without a word (no notice came, "
			"or the agent was killed)\n", r->lost, r->lost == 1 ? "" : "s");
	s_print_notices(r, f);
	fprintf(f, "\nPreemptions: %u; deadlines met %u, missed %u; work lost %s",
		r->preemptions, r->deadlines_met, r->deadlines_missed, s_dur(r->work_lost_ms, d1));
	fprintf(f, " (at risk without a notice checkpoint: %s)\n", s_dur(r->at_risk_ms, w1));

	fprintf(f, "\nRestores\n");
	if (!r->nrestores)
		fprintf(f, "  none\n");
	for (size_t i = 0; i < r->nrestores; i++) {
		const struct rr_report_restore *s = &r->restores[i];
		char fb[24], shared[80] = "";
		if (s->fallbacks < 0)
			snprintf(fb, sizeof(fb), "not recorded");
		else
			snprintf(fb, sizeof(fb), "%lld", (long long)s->fallbacks);
		/* A pack is read whole: an older checkpoint's pack can hold segments this one
		 * does not use, so what is read can exceed what the checkpoint stores. */
		if (s->unused_bytes)
			snprintf(shared, sizeof(shared), " (%s of it other checkpoints' data in "
				 "shared packs)", rr_format_bytes(s->unused_bytes, b3));
		fprintf(f, "  %s  machine %zu  %s: %s, %s read from the store%s, in %s; fallbacks "
			"%s%s\n", s_when(s->unix_ms, w1), s->attempt + 1, s->checkpoint,
			rr_format_bytes(s->bytes, b1), rr_format_bytes(s->downloaded_bytes, b2),
			shared, s_dur(s->elapsed_ms, d1), fb,
			s->already_present ? " (already on disk)" : "");
		if (s->passed_over[0])
			fprintf(f, "      passed over suspect checkpoint %s\n", s->passed_over);
	}
	fprintf(f, "\nRestarts after crashes\n");
	if (!r->nrestarts)
		fprintf(f, "  none\n");
	for (size_t i = 0; i < r->nrestarts; i++) {
		const struct rr_report_restart *s = &r->restarts[i];
		fprintf(f, "  %s  machine %zu  exit status %lld, restart %lld%s%s\n",
			s_when(s->unix_ms, w1), s->attempt + 1, (long long)s->exit_status,
			(long long)s->attempt_no, s->checkpoint[0] ? " from " : "", s->checkpoint);
	}
	fprintf(f, "\nSuspect checkpoints (the trainer failed repeatedly after resuming from them)\n");
	if (!r->nsuspects)
		fprintf(f, "  none\n");
	for (size_t i = 0; i < r->nsuspects; i++) {
		const struct rr_report_suspect *s = &r->suspects[i];
		fprintf(f, "  %s  machine %zu  %s after %lld failures (last exit status %lld)%s%s\n",
			s_when(s->unix_ms, w1), s->attempt + 1, s->checkpoint,
			(long long)s->failures, (long long)s->exit_status,
			s->instead[0] ? "; restored instead: " : "", s->instead);
	}
	fprintf(f, "\nCheckpoints: %u persisted (%u for notices); %s checkpointed, %s stored",
		r->checkpoints, r->urgent_checkpoints, rr_format_bytes(r->bytes_checkpointed, b1),
		rr_format_bytes(r->bytes_stored, b2));
	if (r->bytes_checkpointed)
		fprintf(f, " (%.1f%%)", 100.0 * (double)r->bytes_stored / (double)r->bytes_checkpointed);
	fprintf(f, ", %s uploaded (new chunks and manifests)\n",
		rr_format_bytes(r->bytes_uploaded, b3));

	rr_report_interval_print_text(r, f);
	{
		char h1[24], h2[24], h3[24], h4[24];
		fprintf(f, "\nMachine time: %s (%s spot or unknown, %s on-demand); useful %s\n",
			s_hours(r->machine_hours, h1), s_hours(r->spot_hours, h2),
			s_hours(r->on_demand_hours, h3), s_hours(r->useful_hours, h4));
	}
	if (r->have_cost)
		fprintf(f, "Cost estimate: %.2f on these machines vs %.2f on on-demand machines "
			"(saved %.2f, %.0f%%)\n  how: each machine from its first to its last ledger "
			"event at its price (spot when\n  unknown); on-demand = the useful hours "
			"(machine time less work lost and restore\n  time) at the on-demand price. "
			"Gaps between machines are not billed.\n",
			r->cost, r->on_demand_cost, r->on_demand_cost - r->cost,
			r->on_demand_cost > 0 ? 100.0 * (r->on_demand_cost - r->cost) / r->on_demand_cost
					      : 0.0);
	else
		fprintf(f, "Cost estimate: give --price-spot and --price-on-demand (per hour)\n");
	return ferror(f) ? RR_EIO : 0;
}

/* ---- JSON ---- */

static void s_num_or_null(cJSON *o, const char *name, int have, double v)
{
	if (have)
		cJSON_AddNumberToObject(o, name, v);
	else
		cJSON_AddNullToObject(o, name);
}

static void s_str_or_null(cJSON *o, const char *name, const char *v)
{
	if (v && v[0])
		cJSON_AddStringToObject(o, name, v);
	else
		cJSON_AddNullToObject(o, name);
}

static cJSON *s_attempts(const struct rr_report *r)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; arr && i < r->nattempts; i++) {
		const struct rr_report_attempt *a = &r->attempts[i];
		cJSON *o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			break;
		}
		cJSON_AddStringToObject(o, "host", a->host);
		cJSON_AddNumberToObject(o, "pid", (double)a->pid);
		s_str_or_null(o, "cloud", a->inst.cloud);
		s_str_or_null(o, "instance_id", a->inst.instance_id);
		s_str_or_null(o, "instance_type", a->inst.instance_type);
		s_str_or_null(o, "zone", a->inst.zone);
		s_str_or_null(o, "lifecycle", a->inst.lifecycle);
		cJSON_AddNumberToObject(o, "from_unix_ms", (double)a->from_ms);
		cJSON_AddNumberToObject(o, "to_unix_ms", (double)a->to_ms);
		cJSON_AddNumberToObject(o, "seconds", (double)(a->to_ms - a->from_ms) / 1000.0);
		cJSON_AddBoolToObject(o, "restored", a->restored);
		cJSON_AddNumberToObject(o, "notices", a->notices);
		cJSON_AddNumberToObject(o, "checkpoints", a->checkpoints);
		cJSON_AddNumberToObject(o, "restarts", a->restarts);
		/* "running or lost" is for people: tools get null for the newest machine */
		const char *ended = rr_report_ended(r, i);
		s_str_or_null(o, "ended", ended && strcmp(ended, "running or lost") ? ended : NULL);
		s_num_or_null(o, "exit_status", a->ended[0] != 0, (double)a->exit_status);
		s_str_or_null(o, "signal", a->signal);
	}
	return arr;
}

static cJSON *s_notices(const struct rr_report *r)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; arr && i < r->nnotices; i++) {
		const struct rr_report_notice *n = &r->notices[i];
		int met_or_missed = n->outcome != RR_DEADLINE_NONE && n->durable_ms;
		cJSON *o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			break;
		}
		cJSON_AddNumberToObject(o, "machine", (double)n->attempt + 1);
		cJSON_AddStringToObject(o, "kind", n->kind);
		cJSON_AddStringToObject(o, "source", n->source);
		cJSON_AddBoolToObject(o, "preemption", n->preemption);
		cJSON_AddNumberToObject(o, "received_unix_ms", (double)n->received_ms);
		s_num_or_null(o, "deadline_unix_ms", n->deadline_ms != 0, (double)n->deadline_ms);
		s_str_or_null(o, "checkpoint", n->checkpoint);
		s_num_or_null(o, "durable_unix_ms", n->durable_ms != 0, (double)n->durable_ms);
		s_num_or_null(o, "to_durable_seconds", n->to_durable_ms >= 0,
			      (double)n->to_durable_ms / 1000.0);
		cJSON_AddStringToObject(o, "deadline", s_outcomes[n->outcome]);
		s_num_or_null(o, "margin_seconds", met_or_missed, (double)n->margin_ms / 1000.0);
		cJSON_AddNumberToObject(o, "at_risk_seconds", (double)n->at_risk_ms / 1000.0);
		s_num_or_null(o, "work_lost_seconds", n->work_lost_ms >= 0,
			      (double)n->work_lost_ms / 1000.0);
	}
	return arr;
}

static cJSON *s_restores(const struct rr_report *r)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; arr && i < r->nrestores; i++) {
		const struct rr_report_restore *s = &r->restores[i];
		cJSON *o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			break;
		}
		cJSON_AddNumberToObject(o, "machine", (double)s->attempt + 1);
		cJSON_AddNumberToObject(o, "unix_ms", (double)s->unix_ms);
		cJSON_AddStringToObject(o, "checkpoint", s->checkpoint);
		cJSON_AddNumberToObject(o, "bytes", (double)s->bytes);
		cJSON_AddNumberToObject(o, "downloaded_bytes", (double)s->downloaded_bytes);
		cJSON_AddNumberToObject(o, "unused_bytes", (double)s->unused_bytes);
		cJSON_AddNumberToObject(o, "seconds", (double)s->elapsed_ms / 1000.0);
		s_num_or_null(o, "fallbacks", s->fallbacks >= 0, (double)s->fallbacks);
		cJSON_AddBoolToObject(o, "already_present", s->already_present);
		s_str_or_null(o, "passed_over_suspect", s->passed_over);
	}
	return arr;
}

static cJSON *s_suspects(const struct rr_report *r)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; arr && i < r->nsuspects; i++) {
		const struct rr_report_suspect *s = &r->suspects[i];
		cJSON *o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			break;
		}
		cJSON_AddNumberToObject(o, "machine", (double)s->attempt + 1);
		cJSON_AddNumberToObject(o, "unix_ms", (double)s->unix_ms);
		cJSON_AddStringToObject(o, "checkpoint", s->checkpoint);
		cJSON_AddNumberToObject(o, "failures", (double)s->failures);
		cJSON_AddNumberToObject(o, "exit_status", (double)s->exit_status);
		s_str_or_null(o, "restored_instead", s->instead);
	}
	return arr;
}

static cJSON *s_restarts_and_counts(const struct rr_report *r, cJSON **counts)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; arr && i < r->nrestarts; i++) {
		const struct rr_report_restart *s = &r->restarts[i];
		cJSON *o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			break;
		}
		cJSON_AddNumberToObject(o, "machine", (double)s->attempt + 1);
		cJSON_AddNumberToObject(o, "unix_ms", (double)s->unix_ms);
		cJSON_AddNumberToObject(o, "exit_status", (double)s->exit_status);
		cJSON_AddNumberToObject(o, "attempt", (double)s->attempt_no);
		s_str_or_null(o, "checkpoint", s->checkpoint);
	}
	*counts = cJSON_CreateArray();
	for (size_t i = 0; *counts && i < r->ncounts; i++) {
		cJSON *o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(*counts, o)) {
			cJSON_Delete(o);
			break;
		}
		s_str_or_null(o, "cloud", r->counts[i].cloud);
		cJSON_AddStringToObject(o, "kind", r->counts[i].kind);
		cJSON_AddStringToObject(o, "source", r->counts[i].source);
		cJSON_AddNumberToObject(o, "count", r->counts[i].n);
	}
	return arr;
}

static cJSON *s_totals(const struct rr_report *r)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "machines", (double)r->nattempts);
	cJSON_AddNumberToObject(o, "machines_lost", r->lost);
	cJSON_AddNumberToObject(o, "notices", (double)r->nnotices);
	cJSON_AddNumberToObject(o, "preemptions", r->preemptions);
	cJSON_AddNumberToObject(o, "deadlines_met", r->deadlines_met);
	cJSON_AddNumberToObject(o, "deadlines_missed", r->deadlines_missed);
	cJSON_AddNumberToObject(o, "work_lost_seconds", (double)r->work_lost_ms / 1000.0);
	cJSON_AddNumberToObject(o, "at_risk_seconds", (double)r->at_risk_ms / 1000.0);
	cJSON_AddNumberToObject(o, "restores", (double)r->nrestores);
	cJSON_AddNumberToObject(o, "restore_seconds", (double)r->restore_ms / 1000.0);
	cJSON_AddNumberToObject(o, "restarts", (double)r->nrestarts);
	cJSON_AddNumberToObject(o, "checkpoints", r->checkpoints);
	cJSON_AddNumberToObject(o, "notice_checkpoints", r->urgent_checkpoints);
	cJSON_AddNumberToObject(o, "bytes_checkpointed", (double)r->bytes_checkpointed);
	cJSON_AddNumberToObject(o, "bytes_stored", (double)r->bytes_stored);
	cJSON_AddNumberToObject(o, "bytes_uploaded", (double)r->bytes_uploaded);
	cJSON_AddNumberToObject(o, "machine_hours", r->machine_hours);
	cJSON_AddNumberToObject(o, "spot_hours", r->spot_hours);
	cJSON_AddNumberToObject(o, "on_demand_hours", r->on_demand_hours);
	cJSON_AddNumberToObject(o, "useful_hours", r->useful_hours);
	return o;
}

static cJSON *s_cost(const struct rr_report *r)
{
	cJSON *o;

	if (!r->have_cost)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "cost", r->cost);
	cJSON_AddNumberToObject(o, "on_demand_cost", r->on_demand_cost);
	cJSON_AddNumberToObject(o, "saved", r->on_demand_cost - r->cost);
	cJSON_AddStringToObject(o, "method",
				"each machine from its first to its last ledger event at its "
				"price (spot when unknown); on-demand: the useful hours (machine "
				"time less work lost and restore time) at the on-demand price");
	return o;
}

int rr_report_print_json(const struct rr_report *r, const char *run_id, FILE *f)
{
	cJSON *root = cJSON_CreateObject(), *counts = NULL;
	char *text = NULL;
	int rc = RR_ENOMEM;

	if (!root)
		return RR_ENOMEM;
	if (!cJSON_AddNumberToObject(root, "schema", S_JSON_SCHEMA) ||
	    !cJSON_AddStringToObject(root, "run_id", run_id) ||
	    !cJSON_AddNumberToObject(root, "events", (double)r->events) ||
	    !cJSON_AddNumberToObject(root, "events_skipped", (double)r->skipped) ||
	    !cJSON_AddItemToObject(root, "machines", s_attempts(r)) ||
	    !cJSON_AddItemToObject(root, "notices", s_notices(r)) ||
	    !cJSON_AddItemToObject(root, "restores", s_restores(r)) ||
	    !cJSON_AddItemToObject(root, "restarts", s_restarts_and_counts(r, &counts)) ||
	    !cJSON_AddItemToObject(root, "notice_counts", counts) ||
	    !cJSON_AddItemToObject(root, "suspects", s_suspects(r)) ||
	    !cJSON_AddItemToObject(root, "totals", s_totals(r)) ||
	    !cJSON_AddItemToObject(root, "cost", s_cost(r)) ||
	    !cJSON_AddItemToObject(root, "interval", rr_report_interval_json(r)))
		goto out;
	counts = NULL;
	text = cJSON_Print(root);
	if (!text)
		goto out;
	fprintf(f, "%s\n", text);
	rc = ferror(f) ? RR_EIO : 0;
out:
	if (counts && cJSON_GetObjectItemCaseSensitive(root, "notice_counts") != counts)
		cJSON_Delete(counts);
	free(text);
	cJSON_Delete(root);
	return rc;
}
