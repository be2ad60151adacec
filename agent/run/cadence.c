#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cadence.h"
#include "rr/error.h"
#include "rr/log.h"
#include "rr/progress.h"

#define S_COMMITS 16 /* recent commits remembered, for their commit times */

struct s_commit {
	char name[256];
	int64_t wall_ms;
};

struct rr_cadence {
	struct rr_cadence_opts o;
	struct rr_cadence_io io;
	char cloud[16];
	int cloud_known;
	struct rr_history_summary hist;

	double stalls[RR_CADENCE_STALLS]; /* seconds, a ring */
	unsigned nstalls, stall_next;
	int64_t ask_mono;
	int ask_open, ask_for_notice;
	int64_t last_commit_mono, last_fire_mono;

	struct s_commit commits[S_COMMITS];
	unsigned commit_next;
	int64_t prev_persisted_ms; /* commit time of the newest persisted checkpoint */
	enum rr_lead_state lead;
	double lead_cap_s, lead_budget, lead_rate;

	struct rr_cadence_status st; /* the last evaluation */
	double logged_s;             /* the interval last logged (0: none yet) */
	enum rr_interval_bound logged_bound;
	int overruled_logged, impossible_logged;
};

int rr_cadence_new(const struct rr_cadence_opts *o, const struct rr_cadence_io *io,
		   struct rr_cadence **out)
{
	struct rr_cadence *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return RR_ENOMEM;
	c->o = *o;
	if (c->o.nnodes < 1)
		c->o.nnodes = 1;
	if (io)
		c->io = *io;
	c->last_commit_mono = c->last_fire_mono = o->start_mono_ms;
	c->st.interval_s = o->every_auto ? 0 : (double)o->every_ms / 1000.0;
	*out = c;
	return 0;
}

void rr_cadence_destroy(struct rr_cadence *c)
{
	free(c);
}

void rr_cadence_set_cloud(struct rr_cadence *c, const char *cloud)
{
	if (!c)
		return;
	snprintf(c->cloud, sizeof(c->cloud), "%s", cloud ? cloud : "");
	c->cloud_known = 1;
}

void rr_cadence_set_history(struct rr_cadence *c, const struct rr_history_summary *h)
{
	char d1[24], d2[24];

	if (!c)
		return;
	c->hist = *h;
	if (!c->o.every_auto)
		return;
	if (h->machines)
		rr_info("every auto: the run's history: %u earlier machine%s in %s, %u lost with no "
			"notice covering them (%u vanished, %u missed a deadline)%s%s",
			h->machines, h->machines == 1 ? "" : "s",
			rr_format_seconds((double)h->exposure_ms / 1000.0, d1), h->losses,
			h->vanished, h->missed, h->cost_ms ? "; checkpoint cost there " : "",
			h->cost_ms ? rr_format_seconds((double)h->cost_ms / 1000.0, d2) : "");
}

void rr_cadence_asked(struct rr_cadence *c, int64_t mono_ms, int for_notice)
{
	if (!c)
		return;
	c->ask_mono = mono_ms;
	c->ask_open = 1;
	c->ask_for_notice = for_notice;
}

void rr_cadence_fired(struct rr_cadence *c, int64_t mono_ms)
{
	if (c)
		c->last_fire_mono = mono_ms;
}

static double s_cost(const struct rr_cadence *c, int *measured)
{
	*measured = 1;
	if (c->nstalls)
		return rr_interval_median(c->stalls, c->nstalls);
	if (c->hist.cost_ms > 0)
		return (double)c->hist.cost_ms / 1000.0;
	*measured = 0;
	return RR_INTERVAL_COST_ASSUMED_S;
}

static double s_lead_s(const struct rr_cadence *c)
{
	double l = rr_interval_lead_s(c->cloud);
	return l > 0 ? l : (double)c->o.grace_ms / 1000.0;
}

/* Re-chooses the interval from what is known at now_wall_ms (auto). */
static void s_evaluate(struct rr_cadence *c, int64_t now_wall_ms)
{
	struct rr_cadence_status *st = &c->st;
	int64_t own_from = c->o.start_wall_ms > c->hist.end_ms ? c->o.start_wall_ms : c->hist.end_ms;
	int64_t own = now_wall_ms > own_from ? now_wall_ms - own_from : 0;

	st->cost_s = s_cost(c, &st->cost_measured);
	st->stalls = c->nstalls;
	/* Any node's loss stops a multi-node job: its losses come nnodes times as often. */
	st->prior_s = rr_interval_prior_s(c->cloud) / c->o.nnodes;
	st->losses = c->hist.losses;
	st->exposure_s = (double)(c->hist.exposure_ms + own) / 1000.0;
	if (c->o.mtbf_ms) {
		st->mtbf_s = (double)c->o.mtbf_ms / 1000.0;
		st->mtbf_from = "--mtbf";
	} else {
		st->mtbf_s = rr_interval_mtbf(st->prior_s, st->exposure_s, st->losses);
		st->mtbf_from = c->hist.machines ? "history" : "prior";
	}
	st->lead_s = s_lead_s(c);
	st->lead = c->lead;
	st->lead_cap_s = c->lead == RR_LEAD_CAP ? c->lead_cap_s : 0;
	rr_interval_choose(st->cost_s, st->mtbf_s, c->o.max_overhead, st->cost_measured,
			   st->lead_cap_s, &st->choice);
	st->interval_s = st->choice.interval_s;
}

static const char *s_lead_name(enum rr_lead_state s)
{
	static const char *const names[] = { "unknown", "fits", "cap", "impossible" };
	return (unsigned)s < 4 ? names[s] : "?";
}

/* An "interval" ledger event: the interval in force and what it was chosen from, and the
 * periodic stall measured now (stall_s >= 0). */
static void s_record(struct rr_cadence *c, double stall_s)
{
	const struct rr_cadence_status *st = &c->st;
	cJSON *ev;

	if (!c->io.record || !(ev = cJSON_CreateObject()))
		return;
	cJSON_AddStringToObject(ev, "mode", c->o.every_auto ? "auto" : "fixed");
	cJSON_AddNumberToObject(ev, "interval_ms", round(st->interval_s * 1000));
	if (st->cost_s > 0)
		cJSON_AddNumberToObject(ev, "cost_ms", round(st->cost_s * 1000));
	cJSON_AddNumberToObject(ev, "stalls", st->stalls);
	if (stall_s >= 0)
		cJSON_AddNumberToObject(ev, "stall_ms", round(stall_s * 1000));
	if (c->o.every_auto) {
		cJSON_AddBoolToObject(ev, "cost_measured", st->cost_measured);
		cJSON_AddNumberToObject(ev, "daly_ms", round(st->choice.daly_s * 1000));
		cJSON_AddStringToObject(ev, "bound", rr_interval_bound_name(st->choice.bound));
		cJSON_AddNumberToObject(ev, "mtbf_ms", round(st->mtbf_s * 1000));
		cJSON_AddStringToObject(ev, "mtbf_from", st->mtbf_from);
		cJSON_AddNumberToObject(ev, "prior_ms", round(st->prior_s * 1000));
		cJSON_AddNumberToObject(ev, "losses", st->losses);
		cJSON_AddNumberToObject(ev, "exposure_ms", round(st->exposure_s * 1000));
		cJSON_AddNumberToObject(ev, "lead_ms", round(st->lead_s * 1000));
		cJSON_AddStringToObject(ev, "lead", s_lead_name(st->lead));
		cJSON_AddNumberToObject(ev, "max_overhead_pct", c->o.max_overhead * 100);
	}
	c->io.record(c->io.ud, "interval", ev);
}

/* The log line of a newly chosen interval: what it is and which input decided it. */
static void s_log_choice(struct rr_cadence *c)
{
	const struct rr_cadence_status *st = &c->st;
	char iv[24], cost[24], mtbf[24], daly[24], exp[24], prior[24], lead[24], costwhy[64],
		mtbfwhy[200], b[16];

	rr_format_seconds(st->interval_s, iv);
	rr_format_seconds(st->cost_s, cost);
	rr_format_seconds(st->mtbf_s, mtbf);
	rr_format_seconds(st->choice.daly_s, daly);
	if (st->stalls)
		snprintf(costwhy, sizeof(costwhy), "the median of %u stall%s", st->stalls,
			 st->stalls == 1 ? "" : "s");
	else
		snprintf(costwhy, sizeof(costwhy), "%s", st->cost_measured ?
			 "an earlier machine's" : "assumed until one is measured");
	if (c->o.mtbf_ms)
		snprintf(mtbfwhy, sizeof(mtbfwhy), "from --mtbf");
	else
		snprintf(mtbfwhy, sizeof(mtbfwhy), "%u uncovered loss%s in %s of the run, with "
			 "the %s prior of %s worth one", st->losses, st->losses == 1 ? "" : "es",
			 rr_format_seconds(st->exposure_s, exp), c->cloud[0] ? c->cloud : "no-cloud",
			 rr_format_seconds(st->prior_s, prior));
	switch (st->choice.bound) {
	case RR_BOUND_LEAD:
		rr_info("every auto: a checkpoint every %s: the notice-lead rule (a notice's "
			"checkpoint must be durable within the %s lead: at most %s changed, at "
			"%s/s); Daly's interval would be %s (cost %s, %s; MTBF %s, %s)", iv,
			rr_format_seconds(st->lead_s, lead),
			rr_format_bytes((uint64_t)c->lead_budget, b),
			rr_format_bytes((uint64_t)c->lead_rate, exp), daly, cost, costwhy, mtbf,
			mtbfwhy);
		break;
	case RR_BOUND_OVERHEAD:
		rr_info("every auto: a checkpoint every %s: the stall bound (--max-overhead %g%%); "
			"Daly's interval would be %s (cost %s, %s; MTBF %s, %s)", iv,
			c->o.max_overhead * 100, daly, cost, costwhy, mtbf, mtbfwhy);
		break;
	default:
		rr_info("every auto: a checkpoint every %s: %s (cost %s, %s; MTBF %s, %s)", iv,
			st->choice.bound == RR_BOUND_DALY ? "Daly's interval" :
			rr_interval_bound_name(st->choice.bound), cost, costwhy, mtbf, mtbfwhy);
	}
}

/* The lead rule asks for more stall than --max-overhead allows: said once, when the cost
 * has settled (three stalls: the first ones move a lot). */
static void s_warn_overruled(struct rr_cadence *c)
{
	char cap[24], lead[24];

	if (!c->st.choice.lead_overruled || c->overruled_logged || c->st.stalls < 3)
		return;
	c->overruled_logged = 1;
	c->st.lead_warnings++;
	rr_warn("every auto: the notice-lead rule asks for a checkpoint every %s, more stall than "
		"--max-overhead %g%% allows; a notice's checkpoint may not be durable within the %s "
		"lead", rr_format_seconds(c->lead_cap_s, cap), c->o.max_overhead * 100,
		rr_format_seconds(c->st.lead_s, lead));
}

/* Logs and records a new interval when it moved by RR_CADENCE_LOG_CHANGE or its bound
 * changed (once the cloud is known: the prior and the lead depend on it). */
static void s_note_change(struct rr_cadence *c)
{
	double s = c->st.interval_s;

	if (!c->cloud_known)
		return;
	s_warn_overruled(c);
	if (c->logged_s > 0 && c->st.choice.bound == c->logged_bound &&
	    fabs(s - c->logged_s) < RR_CADENCE_LOG_CHANGE * c->logged_s)
		return;
	c->logged_s = s;
	c->logged_bound = c->st.choice.bound;
	s_log_choice(c);
	s_record(c, -1);
}

/* A fixed interval whose measured stall takes more than --max-overhead: said once. */
static void s_check_fixed(struct rr_cadence *c)
{
	double cost;
	char a[24], b[24];

	if (c->nstalls < 3 || c->st.overhead_warnings)
		return;
	cost = rr_interval_median(c->stalls, c->nstalls);
	if (cost <= c->o.max_overhead * c->st.interval_s)
		return;
	c->st.overhead_warnings++;
	rr_warn("--every %s: the checkpoint stall (median %s) takes %.0f%% of training time, "
		"above --max-overhead %g%%; --every auto would keep it within",
		rr_format_seconds(c->st.interval_s, a), rr_format_seconds(cost, b),
		100 * cost / c->st.interval_s, c->o.max_overhead * 100);
}

static void s_remember_commit(struct rr_cadence *c, const char *name, int64_t wall_ms)
{
	struct s_commit *k = &c->commits[c->commit_next++ % S_COMMITS];
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->wall_ms = wall_ms;
}

void rr_cadence_committed(struct rr_cadence *c, const char *name, int64_t commit_wall_ms,
			  int64_t mono_ms)
{
	double stall;

	if (!c)
		return;
	s_remember_commit(c, name, commit_wall_ms);
	c->last_commit_mono = mono_ms;
	if (!c->ask_open || mono_ms < c->ask_mono)
		return;
	c->ask_open = 0;
	stall = (double)(mono_ms - c->ask_mono) / 1000.0;
	c->stalls[c->stall_next++ % RR_CADENCE_STALLS] = stall;
	if (c->nstalls < RR_CADENCE_STALLS)
		c->nstalls++;
	if (c->ask_for_notice)
		return;
	/* A periodic checkpoint's stall: the overhead the interval costs, in the ledger. */
	if (c->o.every_auto)
		s_evaluate(c, c->o.start_wall_ms + (mono_ms - c->o.start_mono_ms));
	else
		c->st.cost_s = s_cost(c, &c->st.cost_measured);
	c->st.stalls = c->nstalls;
	s_record(c, stall);
}

/* The lead rule's verdict, kept with hysteresis: once it cannot be met because every byte
 * changes, it stays so until a checkpoint shows otherwise, so the agent never spins between
 * shorter and longer intervals; its warning is logged once. */
static void s_lead_observe(struct rr_cadence *c, const struct rr_lead_verdict *v)
{
	char lead[24];

	switch (v->state) {
	case RR_LEAD_UNKNOWN:
		return;
	case RR_LEAD_IMPOSSIBLE:
		if (c->lead != RR_LEAD_IMPOSSIBLE && !c->impossible_logged) {
			c->impossible_logged = 1;
			c->st.lead_warnings++;
			rr_warn("every auto: the notice-lead rule cannot be met: %s; a notice's "
				"checkpoint may not be durable within the %s lead; checkpointing at "
				"Daly's interval", v->why, rr_format_seconds(s_lead_s(c), lead));
		} else if (c->lead != RR_LEAD_IMPOSSIBLE) {
			rr_debug("every auto: the notice-lead rule cannot be met again: %s", v->why);
		}
		c->lead = RR_LEAD_IMPOSSIBLE;
		c->lead_cap_s = 0;
		return;
	case RR_LEAD_CAP:
		if (c->lead == RR_LEAD_IMPOSSIBLE && v->saturated)
			return;
		c->lead = RR_LEAD_CAP;
		c->lead_cap_s = v->cap_s;
		return;
	case RR_LEAD_FITS:
		c->lead = RR_LEAD_FITS;
		c->lead_cap_s = 0;
		return;
	}
}

void rr_cadence_persisted(struct rr_cadence *c, const char *name, int64_t commit_wall_ms,
			  const struct rr_persist_stats *st, double rate_bps)
{
	int64_t commit_ms = 0;
	struct rr_lead_inputs in;
	struct rr_lead_verdict v;
	double frac;
	int measured;

	if (!c || !c->o.every_auto)
		return;
	for (unsigned i = 0; i < S_COMMITS; i++)
		if (c->commits[i].wall_ms == commit_wall_ms && strcmp(c->commits[i].name, name) == 0)
			commit_ms = c->commits[i].wall_ms; /* a name may be committed again */
	if (!commit_ms)
		return;
	frac = st->stored_bytes ? (double)st->new_bytes / (double)st->stored_bytes : 1.0;
	in = (struct rr_lead_inputs){
		.lead_s = s_lead_s(c), .cost_s = s_cost(c, &measured),
		.rate_bps = rate_bps, .bytes = (double)st->bytes,
		.changed = (double)st->bytes * (frac < 1 ? frac : 1),
		.between_s = c->prev_persisted_ms && commit_ms > c->prev_persisted_ms ?
				     (double)(commit_ms - c->prev_persisted_ms) / 1000.0 : 0,
		.tried_cap_s = c->st.choice.bound == RR_BOUND_LEAD ? c->lead_cap_s : 0,
	};
	if (commit_ms > c->prev_persisted_ms)
		c->prev_persisted_ms = commit_ms;
	rr_interval_lead(&in, &v);
	c->lead_budget = v.budget_bytes;
	c->lead_rate = rate_bps;
	s_lead_observe(c, &v);
}

int64_t rr_cadence_next(struct rr_cadence *c, int64_t now_wall_ms)
{
	int64_t base;

	if (!c)
		return 0;
	if (!c->o.every_auto) {
		s_check_fixed(c);
		return c->last_fire_mono + c->o.every_ms;
	}
	s_evaluate(c, now_wall_ms);
	s_note_change(c);
	/* Daly's interval is training time since the last checkpoint, whoever asked for it. */
	base = c->last_commit_mono > c->last_fire_mono ? c->last_commit_mono : c->last_fire_mono;
	return base + (int64_t)llround(c->st.interval_s * 1000);
}

void rr_cadence_status(const struct rr_cadence *c, struct rr_cadence_status *out)
{
	*out = c->st;
}
