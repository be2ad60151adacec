#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "rr/error.h"
#include "rr/ledger.h"
#include "rr/log.h"
#include "rr/report.h"

#define EXIT_ERROR 125

int rr_cmd_report(const struct rr_config *cfg)
{
	struct rr_report_opts o = { .price_spot = cfg->price_spot,
				    .price_on_demand = cfg->price_on_demand };
	struct rr_ledger_event *ev = NULL;
	struct rr_report *r = NULL;
	struct rr_store *s = NULL;
	size_t n = 0, skipped = 0;
	int rc, code = EXIT_ERROR;

	if (rr_cmd_open_store(cfg, &s))
		goto out;
	rc = rr_ledger_load(s, cfg->run_id, &ev, &n, &skipped);
	if (rc) {
		rr_error("cannot read the ledger of run '%s' in %s: %s", cfg->run_id,
			 cfg->store_url, rr_store_strerror(rc));
		goto out;
	}
	if (!n && !skipped && rr_cmd_check_run(cfg, s))
		goto out;
	if (!n && !skipped && !cfg->report_json) {
		printf("no ledger events for run '%s' in %s\n", cfg->run_id, cfg->store_url);
		code = 0;
		goto out;
	}
	rc = rr_report_build(ev, n, &o, &r);
	if (!rc) {
		r->skipped = skipped;
		rc = cfg->report_json ? rr_report_print_json(r, cfg->run_id, stdout)
				      : rr_report_print_text(r, cfg->run_id, stdout);
	}
	if (rc) {
		rr_error("report: %s", rr_strerror(rc));
		goto out;
	}
	code = 0;
out:
	rr_report_destroy(r);
	free(ev);
	rr_store_destroy(s);
	return code;
}
