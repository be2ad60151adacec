/* CUnit suite "losses": how each machine of a run ended, read from a synthetic ledger (lost
 * without a notice, a notice met or missed, an orderly exit, still running), with and
 * without exit events; and report's checkpoint-interval section built from it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rr/ledger.h"
#include "rr/losses.h"
#include "rr/report.h"

#include "cunit_main.h"

#define T0 1700000000000LL /* ms */
#define S(sec) (T0 + (int64_t)(sec) * 1000)

static struct rr_ledger_event s_ev[64];
static size_t s_n;

static void s_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void s_add(const char *fmt, ...)
{
	char json[1024], why[160] = "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(json, sizeof(json), fmt, ap);
	va_end(ap);
	CU_ASSERT_FATAL(s_n < 64);
	int rc = rr_ledger_event_parse(json, strlen(json), &s_ev[s_n], why, sizeof(why));
	if (rc)
		fprintf(stderr, "parse failed: %s: %s\n", why, json);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	s_n++;
}

static void s_checkpoint(const char *host, int pid, long long committed, long long durable)
{
	s_add("{\"kind\":\"checkpoint\",\"checkpoint\":\"step-%lld\",\"bytes\":1000,"
	      "\"committed_unix_ms\":%lld,\"durable_unix_ms\":%lld,\"unix_ms\":%lld,"
	      "\"host\":\"%s\",\"pid\":%d}", committed, committed, durable, durable, host, pid);
}

static void s_interval(const char *host, int pid, long long at, int interval_ms, int stall_ms)
{
	s_add("{\"kind\":\"interval\",\"mode\":\"auto\",\"interval_ms\":%d,\"cost_ms\":%d,"
	      "\"stall_ms\":%d,\"mtbf_ms\":86400000,\"unix_ms\":%lld,\"host\":\"%s\",\"pid\":%d}",
	      interval_ms, stall_ms ? stall_ms : 1000, stall_ms, at, host, pid);
}

/* Five machines, one hour each, 10 min apart:
 *  h1 vanishes (nothing after its last checkpoint event; h2 starts later),
 *  h2 gets a preemption notice met in time, h3 one missed, h4 exits in order (when with_exit),
 *  h5 is the newest and says nothing of its end. */
static void s_ledger(int with_exit)
{
	s_n = 0;
	s_add("{\"kind\":\"start\",\"started_unix_ms\":%lld,\"unix_ms\":%lld,\"host\":\"h1\","
	      "\"pid\":1}", S(0), S(1));
	s_interval("h1", 1, S(600), 600000, 0);
	s_checkpoint("h1", 1, S(1200), S(1210));
	s_interval("h1", 1, S(1210), 600000, 10000);
	s_checkpoint("h1", 1, S(2400), S(2410));
	s_interval("h1", 1, S(2410), 660000, 20000);
	s_add("{\"kind\":\"interval\",\"mode\":\"auto\",\"interval_ms\":660000,\"unix_ms\":%lld,"
	      "\"host\":\"h1\",\"pid\":1}", S(3600)); /* its last event: 20 min after step-2400 */

	s_add("{\"kind\":\"restore\",\"checkpoint\":\"step\",\"started_unix_ms\":%lld,"
	      "\"unix_ms\":%lld,\"host\":\"h2\",\"pid\":2}", S(4200), S(4210));
	s_interval("h2", 2, S(5000), 600000, 30000);
	s_add("{\"kind\":\"notice\",\"notice\":\"preempt\",\"source\":\"aws\",\"deadline_unix\":%lld,"
	      "\"received_unix_ms\":%lld,\"unix_ms\":%lld,\"host\":\"h2\",\"pid\":2}",
	      S(7800) / 1000 + 120, S(7800), S(7800));
	s_add("{\"kind\":\"checkpoint\",\"checkpoint\":\"n2\",\"urgent\":true,"
	      "\"committed_unix_ms\":%lld,\"durable_unix_ms\":%lld,\"unix_ms\":%lld,"
	      "\"host\":\"h2\",\"pid\":2}", S(7810), S(7830), S(7830));

	s_add("{\"kind\":\"restore\",\"checkpoint\":\"n2\",\"started_unix_ms\":%lld,"
	      "\"unix_ms\":%lld,\"host\":\"h3\",\"pid\":3}", S(8400), S(8410));
	s_checkpoint("h3", 3, S(9000), S(9010));
	s_add("{\"kind\":\"notice\",\"notice\":\"preempt\",\"source\":\"gcp\",\"deadline_unix\":%lld,"
	      "\"received_unix_ms\":%lld,\"unix_ms\":%lld,\"host\":\"h3\",\"pid\":3}",
	      S(12000) / 1000 + 30, S(12000), S(12000));

	s_add("{\"kind\":\"restore\",\"checkpoint\":\"x\",\"started_unix_ms\":%lld,"
	      "\"unix_ms\":%lld,\"host\":\"h4\",\"pid\":4}", S(12600), S(12610));
	if (with_exit)
		s_add("{\"kind\":\"exit\",\"how\":\"failed\",\"unix_ms\":%lld,\"host\":\"h4\","
		      "\"pid\":4}", S(16200));
	else
		s_checkpoint("h4", 4, S(16100), S(16200));

	s_add("{\"kind\":\"restore\",\"checkpoint\":\"x\",\"started_unix_ms\":%lld,"
	      "\"unix_ms\":%lld,\"host\":\"h5\",\"pid\":5}", S(16800), S(16810));
	s_checkpoint("h5", 5, S(18000), S(18010));
}

static void s_build(struct rr_report **r, struct rr_loss_history *lh, int64_t later,
		    int64_t concurrent)
{
	CU_ASSERT_EQUAL_FATAL(rr_report_build(s_ev, s_n, NULL, r), 0);
	CU_ASSERT_EQUAL_FATAL(rr_losses_build(*r, s_ev, s_n, later, concurrent, lh), 0);
	CU_ASSERT_EQUAL_FATAL(lh->n, 5);
}

static void test_losses_each_machine_end(void)
{
	struct rr_report *r;
	struct rr_loss_history lh;

	s_ledger(1);
	s_build(&r, &lh, 0, 0);
	CU_ASSERT_EQUAL(lh.lives[0].end, RR_END_VANISHED);
	/* from its newest durable checkpoint (as committed) to its last event */
	CU_ASSERT_EQUAL(lh.lives[0].lost_ms, S(3600) - S(2400));
	CU_ASSERT_EQUAL(lh.lives[1].end, RR_END_NOTICE_MET);
	CU_ASSERT_EQUAL(lh.lives[1].lost_ms, 0);
	CU_ASSERT_EQUAL(lh.lives[2].end, RR_END_NOTICE_MISSED);
	CU_ASSERT_EQUAL(lh.lives[2].lost_ms, S(12000) - S(9000)); /* the report's work lost */
	CU_ASSERT_EQUAL(lh.lives[3].end, RR_END_EXIT);
	CU_ASSERT_EQUAL(lh.lives[4].end, RR_END_UNKNOWN);
	CU_ASSERT_EQUAL(lh.losses, 2);
	CU_ASSERT_EQUAL(lh.vanished, 1);
	CU_ASSERT_EQUAL(lh.missed, 1);
	CU_ASSERT_EQUAL(lh.lost_ms, 1200000 + 3000000);
	/* the union of the spans: the gaps between machines are not the run's time */
	int64_t spans = 0;
	for (size_t i = 0; i < lh.n; i++)
		spans += lh.lives[i].to_ms - lh.lives[i].from_ms;
	CU_ASSERT_EQUAL(lh.exposure_ms, spans);
	CU_ASSERT_EQUAL(lh.end_ms, S(18010));
	/* the cost: the newest interval event that says one */
	CU_ASSERT_EQUAL(lh.cost_ms, 30000);
	CU_ASSERT_STRING_EQUAL(rr_machine_end_name(lh.lives[2].end), "notice missed");
	rr_losses_free(&lh);
	rr_report_destroy(r);
}

/* Before exit events existed (or from an agent that never wrote one), a machine followed by
 * another and silent about its end counts as vanished: the estimate errs toward more
 * checkpoints, never fewer. */
static void test_losses_without_exit_events(void)
{
	struct rr_report *r;
	struct rr_loss_history lh;

	s_ledger(0);
	s_build(&r, &lh, 0, 0);
	CU_ASSERT_EQUAL(lh.lives[3].end, RR_END_VANISHED);
	CU_ASSERT_EQUAL(lh.lives[3].lost_ms, S(16200) - S(16100));
	CU_ASSERT_EQUAL(lh.vanished, 2);
	CU_ASSERT_EQUAL(lh.losses, 3);
	rr_losses_free(&lh);
	rr_report_destroy(r);
}

/* The agent asking about its run's past: it started after all of them, so the newest one,
 * silent about its end, is gone too; multi-node siblings that started with it are not. */
static void test_losses_seen_by_a_new_machine(void)
{
	struct rr_report *r;
	struct rr_loss_history lh;

	s_ledger(1);
	s_build(&r, &lh, S(19000), 0);
	CU_ASSERT_EQUAL(lh.lives[4].end, RR_END_VANISHED);
	CU_ASSERT_EQUAL(lh.losses, 3);
	rr_losses_free(&lh);
	rr_report_destroy(r);
	/* within a minute of the new machine's start: a node of the same job */
	s_ledger(1);
	s_build(&r, &lh, S(18050), 60000);
	CU_ASSERT_EQUAL(lh.lives[4].end, RR_END_UNKNOWN);
	CU_ASSERT_EQUAL(lh.losses, 2);
	rr_losses_free(&lh);
	rr_report_destroy(r);
}

static void test_losses_empty_ledger(void)
{
	struct rr_report *r;
	struct rr_loss_history lh;

	CU_ASSERT_EQUAL_FATAL(rr_report_build(NULL, 0, NULL, &r), 0);
	CU_ASSERT_EQUAL(rr_losses_build(r, NULL, 0, S(5), 0, &lh), 0);
	CU_ASSERT_EQUAL(lh.n, 0);
	CU_ASSERT_EQUAL(lh.losses, 0);
	CU_ASSERT_EQUAL(lh.exposure_ms, 0);
	CU_ASSERT_EQUAL(r->interval.have, 0);
	rr_losses_free(&lh);
	rr_report_destroy(r);
}

static void test_report_interval_section(void)
{
	struct rr_report *r;
	const struct rr_report_interval *iv;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	s_ledger(1);
	CU_ASSERT_EQUAL_FATAL(rr_report_build(s_ev, s_n, NULL, &r), 0);
	iv = &r->interval;
	CU_ASSERT_EQUAL(iv->have, 1);
	CU_ASSERT_STRING_EQUAL(iv->mode, "auto");
	CU_ASSERT_EQUAL(iv->min_ms, 600000);
	CU_ASSERT_EQUAL(iv->max_ms, 660000);
	CU_ASSERT_EQUAL(iv->last_ms, 600000);
	CU_ASSERT_EQUAL(iv->stalls, 3);
	CU_ASSERT_EQUAL(iv->overhead_ms, 10000 + 20000 + 30000);
	CU_ASSERT_EQUAL(iv->cost_ms, 20000);
	CU_ASSERT_EQUAL(iv->losses, 2);
	CU_ASSERT_EQUAL(iv->lost_ms, 1200000 + 3000000);
	CU_ASSERT_EQUAL(iv->have_best, 1);
	/* two uncovered ends of ~1 h machines, a 20 s stall: the hindsight interval is
	 * somewhere in between, and never wastes more than checkpointing never would */
	CU_ASSERT(iv->best_ms > 60000 && iv->best_ms < 3600000);
	CU_ASSERT(iv->best_overhead_ms + iv->best_lost_ms <= 3600000 + 3600000);

	f = open_memstream(&text, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	rr_report_interval_print_text(r, f);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "Checkpoint interval (--every auto)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "used: 10 min 00 s to 11 min 00 s, 10 min 00 s at "
					    "the end; checkpoint cost 20.0 s (median of 3 stalls)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "1 min 00 s stalled (3 periodic checkpoints), 1 h "
					    "10 min lost to 2 losses no notice covered (1 vanished, "
					    "1 missed a deadline)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "best fixed interval in hindsight: "));
	free(text);

	cJSON *o = rr_report_interval_json(r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(o, "mode")->valuestring, "auto");
	CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(o, "overhead_seconds")->valuedouble, 60, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(o, "work_lost_seconds")->valuedouble, 4200,
			       1e-9);
	CU_ASSERT(cJSON_IsObject(cJSON_GetObjectItem(o, "best_fixed")));
	cJSON_Delete(o);
	rr_report_destroy(r);

	/* a run without --every: JSON null, one line of text */
	s_n = 0;
	s_add("{\"kind\":\"start\",\"unix_ms\":%lld,\"host\":\"h\",\"pid\":1}", S(0));
	CU_ASSERT_EQUAL_FATAL(rr_report_build(s_ev, s_n, NULL, &r), 0);
	o = rr_report_interval_json(r);
	CU_ASSERT(cJSON_IsNull(o));
	cJSON_Delete(o);
	rr_report_destroy(r);
}

static CU_TestInfo s_tests[] = {
	{ "each_machine_end", test_losses_each_machine_end },
	{ "without_exit_events", test_losses_without_exit_events },
	{ "seen_by_a_new_machine", test_losses_seen_by_a_new_machine },
	{ "empty_ledger", test_losses_empty_ledger },
	{ "report_interval_section", test_report_interval_section },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("losses", s_tests)
