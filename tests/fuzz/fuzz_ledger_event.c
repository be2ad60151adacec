/* Fuzz target: ledger events are outside input (any machine of the run, any version, wrote
 * them). Each line of the input is one event; those that parse are built into a report,
 * which is printed both ways. The report's own invariants must hold whatever the events. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/ledger.h"
#include "rr/report.h"

#define S_MAX_EVENTS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rr_ledger_event ev[S_MAX_EVENTS];
	struct rr_report_opts o = { .price_spot = 0.5, .price_on_demand = 2.0 };
	struct rr_report *r = NULL;
	size_t n = 0, start = 0;
	char why[160];
	FILE *sink;

	for (size_t i = 0; i <= size && n < S_MAX_EVENTS; i++) {
		if (i < size && data[i] != '\n')
			continue;
		if (rr_ledger_event_parse((const char *)data + start, i - start, &ev[n], why,
					  sizeof(why)) == 0) {
			if (ev[n].unix_ms <= 0 || ev[n].fallbacks < -1)
				__builtin_trap();
			n++;
		} else if (!why[0]) {
			__builtin_trap(); /* a refusal always says why */
		}
		why[0] = '\0';
		start = i + 1;
	}
	if (rr_report_build(ev, n, &o, &r) != 0)
		return 0;
	if (r->deadlines_met + r->deadlines_missed > r->nnotices || r->preemptions > r->nnotices ||
	    r->work_lost_ms < 0 || r->work_lost_ms > r->at_risk_ms || r->useful_hours < 0 ||
	    r->nattempts > n)
		__builtin_trap();
	for (size_t i = 0; i < r->nnotices; i++)
		if (r->notices[i].attempt >= r->nattempts || r->notices[i].to_durable_ms < -1)
			__builtin_trap();
	sink = fopen("/dev/null", "w");
	if (sink) {
		rr_report_print_text(r, "fuzz", sink);
		rr_report_print_json(r, "fuzz", sink);
		fclose(sink);
	}
	rr_report_destroy(r);
	return 0;
}
