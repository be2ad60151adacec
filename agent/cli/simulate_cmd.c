/* `resume-run simulate` (README, "How often to checkpoint"): what --every auto would choose,
 * and what auto, fixed intervals and the best fixed interval in hindsight lose and spend
 * over a history of losses (rr/simulate.h). */
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "rr/buf.h"
#include "rr/error.h"
#include "rr/fsutil.h"
#include "rr/interval.h"
#include "rr/log.h"
#include "rr/progress.h"
#include "rr/simulate.h"

#define EXIT_ERROR 125
#define S_DEFAULT_HOURS 10000.0

static const struct {
	const char *name;
	double s;
} s_fixed[] = { { "fixed 5m", 5 * 60 }, { "fixed 15m", 15 * 60 }, { "fixed 30m", 30 * 60 },
		{ "fixed 1h", 3600 }, { "fixed 2h", 2 * 3600 }, { "fixed 4h", 4 * 3600 },
		{ "fixed 8h", 8 * 3600 } };
#define S_NFIXED (sizeof(s_fixed) / sizeof(s_fixed[0]))

struct s_row {
	char name[48];
	struct rr_sim_result r;
};

static int s_load_trace(const struct rr_config *cfg, double cost_s, double total_s,
			struct rr_sim_trace *t)
{
	struct rr_buf b;
	char why[160];
	int rc;

	rr_buf_init(&b, RR_SIM_TRACE_MAX_BYTES);
	rc = rr_read_regular_file(cfg->sim_trace, &b);
	if (rc) {
		rr_error("cannot read the trace %s: %s", cfg->sim_trace,
			 rc == RR_ETOOBIG ? "larger than 8 MiB" : rr_strerror(rc));
		rr_buf_free(&b);
		return rc;
	}
	rc = rr_sim_trace_parse(b.data ? (const char *)b.data : "", b.len,
				(double)cfg->sim_lead_ms / 1000.0, cost_s, total_s, t, why,
				sizeof(why));
	if (rc)
		rr_error("trace %s: %s", cfg->sim_trace, rc == RR_EINVAL ? why : rr_strerror(rc));
	rr_buf_free(&b);
	return rc;
}

static void s_print_text(const struct rr_config *cfg, const struct rr_sim_trace *t,
			 const struct rr_interval_choice *ch, double mtbf_s, const struct s_row *rows,
			 size_t nrows, double best_waste)
{
	char d1[32], d2[32], d3[32], d4[32];

	if (cfg->sim_trace)
		printf("Replayed %s: %.1f h of training; losses no notice covered: %u; notices in "
		       "time: %u\n", cfg->sim_trace, t->total_s / 3600, t->uncovered, t->notices);
	else
		printf("Simulated %.0f h of training: %s losses, mean %s apart (%u of them)\n",
		       t->total_s / 3600, cfg->sim_weibull > 0 ? "Weibull" : "exponential",
		       rr_format_seconds((double)cfg->mtbf_ms / 1000.0, d2), t->uncovered);
	printf("Checkpoint cost %s; --every auto with an MTBF of %s checkpoints every %s",
	       rr_format_seconds((double)cfg->sim_cost_ms / 1000.0, d1),
	       rr_format_seconds(mtbf_s, d2), rr_format_seconds(ch->interval_s, d3));
	if (ch->bound == RR_BOUND_DALY)
		printf(" (Daly's interval; the %g%% stall bound is %s)\n\n",
		       cfg->max_overhead * 100, rr_format_seconds(ch->floor_s, d4));
	else
		printf(" (bound: %s; Daly's interval is %s)\n\n", rr_interval_bound_name(ch->bound),
		       rr_format_seconds(ch->daly_s, d4));
	printf("  %-24s %-12s %11s %10s %10s %10s %7s %8s\n", "POLICY", "INTERVAL",
	       "CHECKPOINTS", "OVERHEAD h", "LOST h", "WASTE h", "WASTE", "VS BEST");
	for (size_t i = 0; i < nrows; i++) {
		const struct rr_sim_result *r = &rows[i].r;
		printf("  %-24s %-12s %11.0f %10.1f %10.1f %10.1f %6.2f%% %+7.1f%%\n", rows[i].name,
		       rr_format_seconds(r->interval_s, d1), r->checkpoints, r->overhead_s / 3600,
		       r->lost_s / 3600, r->waste_s / 3600,
		       t->total_s > 0 ? 100 * r->waste_s / t->total_s : 0,
		       best_waste > 0 ? 100 * (r->waste_s / best_waste - 1) : 0);
	}
	printf("\nWaste = checkpoint stalls + training redone after losses no notice covered. "
	       "\"auto\" learns\nthe MTBF from --prior and the losses as they come; the best "
	       "fixed interval is\nchosen knowing the whole history.\n");
}

static int s_print_json(const struct rr_config *cfg, const struct rr_sim_trace *t,
			const struct rr_interval_choice *ch, double mtbf_s,
			const struct s_row *rows, size_t nrows)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	char *text = NULL;
	int rc = RR_ENOMEM;

	if (!root)
		return RR_ENOMEM;
	cJSON_AddNumberToObject(root, "schema", 1);
	cJSON_AddStringToObject(root, "history", cfg->sim_trace ? "trace" :
						 cfg->sim_weibull > 0 ? "weibull" : "exponential");
	if (cfg->sim_weibull > 0)
		cJSON_AddNumberToObject(root, "weibull_shape", cfg->sim_weibull);
	cJSON_AddNumberToObject(root, "hours", t->total_s / 3600);
	cJSON_AddNumberToObject(root, "cost_s", (double)cfg->sim_cost_ms / 1000.0);
	cJSON_AddNumberToObject(root, "mtbf_s", mtbf_s);
	cJSON_AddNumberToObject(root, "losses", t->uncovered);
	cJSON_AddNumberToObject(root, "notices", t->notices);
	cJSON_AddNumberToObject(root, "max_overhead_pct", cfg->max_overhead * 100);
	cJSON_AddNumberToObject(root, "interval_s", ch->interval_s);
	cJSON_AddNumberToObject(root, "daly_s", ch->daly_s);
	cJSON_AddStringToObject(root, "interval_bound", rr_interval_bound_name(ch->bound));
	arr = cJSON_AddArrayToObject(root, "policies");
	for (size_t i = 0; arr && i < nrows; i++) {
		cJSON *o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			goto out;
		}
		cJSON_AddStringToObject(o, "policy", rows[i].name);
		cJSON_AddNumberToObject(o, "interval_s", rows[i].r.interval_s);
		cJSON_AddNumberToObject(o, "checkpoints", rows[i].r.checkpoints);
		cJSON_AddNumberToObject(o, "overhead_s", rows[i].r.overhead_s);
		cJSON_AddNumberToObject(o, "lost_s", rows[i].r.lost_s);
		cJSON_AddNumberToObject(o, "waste_s", rows[i].r.waste_s);
		cJSON_AddNumberToObject(o, "waste_fraction",
					t->total_s > 0 ? rows[i].r.waste_s / t->total_s : 0);
	}
	text = arr ? cJSON_Print(root) : NULL;
	if (!text)
		goto out;
	printf("%s\n", text);
	rc = ferror(stdout) ? RR_EIO : 0;
out:
	free(text);
	cJSON_Delete(root);
	return rc;
}

int rr_cmd_simulate(const struct rr_config *cfg)
{
	double cost = (double)cfg->sim_cost_ms / 1000.0, prior = (double)cfg->sim_prior_ms / 1000.0;
	double hours = cfg->sim_hours > 0 ? cfg->sim_hours : cfg->sim_trace ? 0 : S_DEFAULT_HOURS;
	double mtbf;
	struct rr_sim_trace t;
	struct rr_interval_choice ch;
	struct s_row rows[S_NFIXED + 3];
	size_t n = 0;
	int rc;

	if (cfg->sim_trace)
		rc = s_load_trace(cfg, cost, hours * 3600, &t);
	else if (cfg->sim_weibull > 0)
		rc = rr_sim_weibull(cfg->sim_weibull, (double)cfg->mtbf_ms / 1000.0, hours * 3600,
				    cfg->sim_seed, &t);
	else
		rc = rr_sim_exponential((double)cfg->mtbf_ms / 1000.0, hours * 3600, cfg->sim_seed,
					&t);
	if (rc) {
		if (!cfg->sim_trace)
			rr_error("simulate: %s", rc == RR_EINVAL ? "too many losses to simulate "
				 "(fewer --hours, or a longer --mtbf)" : rr_strerror(rc));
		return EXIT_ERROR;
	}
	/* What --every auto chooses: told the MTBF, or learning it from this whole history. */
	mtbf = cfg->mtbf_ms ? (double)cfg->mtbf_ms / 1000.0 :
			      rr_interval_mtbf(prior, t.total_s, t.uncovered);
	rr_interval_choose(cost, mtbf, cfg->max_overhead, 1, 0, &ch);

	struct rr_sim_auto learn = { .cost_s = cost, .prior_s = prior,
				     .max_overhead = cfg->max_overhead };
	snprintf(rows[n].name, sizeof(rows[n].name), "auto (prior %.4g h)", prior / 3600);
	rr_sim_auto(&t, &learn, &rows[n++].r);
	if (cfg->mtbf_ms) {
		struct rr_sim_auto told = learn;
		told.mtbf_s = mtbf;
		snprintf(rows[n].name, sizeof(rows[n].name), "auto (--mtbf %.4g h)", mtbf / 3600);
		rr_sim_auto(&t, &told, &rows[n++].r);
	}
	for (size_t i = 0; i < S_NFIXED; i++) {
		snprintf(rows[n].name, sizeof(rows[n].name), "%s", s_fixed[i].name);
		rr_sim_fixed(&t, cost, s_fixed[i].s, &rows[n++].r);
	}
	snprintf(rows[n].name, sizeof(rows[n].name), "best fixed (hindsight)");
	rr_sim_best_fixed(&t, cost, &rows[n++].r);
	if (cfg->report_json)
		rc = s_print_json(cfg, &t, &ch, mtbf, rows, n);
	else
		s_print_text(cfg, &t, &ch, mtbf, rows, n, rows[n - 1].r.waste_s);
	rr_sim_trace_free(&t);
	if (rc) {
		rr_error("simulate: %s", rr_strerror(rc));
		return EXIT_ERROR;
	}
	return 0;
}
