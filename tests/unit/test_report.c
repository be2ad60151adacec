/* CUnit suite "report": the ledger event parser (old and new events, bounded, refusing
 * what it cannot trust), loading a ledger from a real file store, and the report model
 * built from a synthetic three-machine ledger: counts, deadlines met and missed, work lost,
 * restores, restarts and the cost estimate. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "events.h"
#include "rr/fsutil.h"
#include "rr/layout.h"
#include "rr/ledger.h"
#include "rr/report.h"

#include "ckpt_fixture.h"
#include "cunit_main.h"

#define T0 1700000000000LL /* ms */
#define S(sec) (T0 + (int64_t)(sec) * 1000)

static void s_parse(const char *json, struct rr_ledger_event *e)
{
	char why[160] = "";
	int rc = rr_ledger_event_parse(json, strlen(json), e, why, sizeof(why));
	if (rc)
		fprintf(stderr, "parse failed: %s: %s\n", why, json);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
}

static int s_refused(const char *json)
{
	struct rr_ledger_event e;
	char why[160] = "";
	int rc = rr_ledger_event_parse(json, strlen(json), &e, why, sizeof(why));
	CU_ASSERT(rc != 0 ? why[0] != '\0' : 1);
	return rc != 0;
}

static void test_ledger_parses_a_notice_with_instance_and_ms_receive_time(void)
{
	struct rr_ledger_event e;
	s_parse("{\"notice\":\"preempt\",\"source\":\"aws\",\"deadline_unix\":1700000120,"
		"\"received_unix\":1700000000,\"received_unix_ms\":1700000000250,"
		"\"instance\":{\"cloud\":\"aws\",\"instance_id\":\"i-1\",\"instance_type\":"
		"\"g5.xlarge\",\"zone\":\"us-east-1a\",\"lifecycle\":\"spot\"},\"kind\":\"notice\","
		"\"unix_ms\":1700000001000,\"run_id\":\"r\",\"host\":\"h1\",\"pid\":42}", &e);
	CU_ASSERT_EQUAL(e.kind, RR_LEDGER_NOTICE);
	CU_ASSERT_STRING_EQUAL(e.notice, "preempt");
	CU_ASSERT_STRING_EQUAL(e.source, "aws");
	CU_ASSERT_EQUAL(e.received_ms, 1700000000250LL);
	CU_ASSERT_EQUAL(e.deadline_ms, 1700000120000LL);
	CU_ASSERT_EQUAL(e.unix_ms, 1700000001000LL);
	CU_ASSERT_STRING_EQUAL(e.host, "h1");
	CU_ASSERT_EQUAL(e.pid, 42);
	CU_ASSERT_STRING_EQUAL(e.inst.instance_type, "g5.xlarge");
	CU_ASSERT_STRING_EQUAL(e.inst.lifecycle, "spot");
}

static void test_ledger_reads_events_of_older_agents_with_fallbacks(void)
{
	struct rr_ledger_event e;
	/* No received_unix_ms: the second; no deadline: null. */
	s_parse("{\"kind\":\"notice\",\"notice\":\"terminate\",\"source\":\"signal\","
		"\"deadline_unix\":null,\"received_unix\":1700000000,\"unix_ms\":1700000003000}", &e);
	CU_ASSERT_EQUAL(e.received_ms, 1700000000000LL);
	CU_ASSERT_EQUAL(e.deadline_ms, 0);
	/* No durable/committed time: the event's own time stands in for durable. */
	s_parse("{\"kind\":\"checkpoint\",\"checkpoint\":\"step-5\",\"bytes\":1000,"
		"\"stored_bytes\":400,\"new_bytes\":300,\"elapsed_ms\":1500,\"urgent\":true,"
		"\"unix_ms\":1700000005000}", &e);
	CU_ASSERT_EQUAL(e.kind, RR_LEDGER_CHECKPOINT);
	CU_ASSERT_EQUAL(e.durable_ms, 1700000005000LL);
	CU_ASSERT_EQUAL(e.committed_ms, 0);
	CU_ASSERT_EQUAL(e.urgent, 1);
	CU_ASSERT_EQUAL(e.bytes, 1000);
	/* A restore without fallbacks: -1, "not recorded", not 0. */
	s_parse("{\"kind\":\"restore\",\"checkpoint\":\"step-5\",\"unix_ms\":1700000009000}", &e);
	CU_ASSERT_EQUAL(e.fallbacks, -1);
	/* A kind from a newer agent is read, as "other". */
	s_parse("{\"kind\":\"resize\",\"unix_ms\":1700000009000,\"whatever\":[1,2,3]}", &e);
	CU_ASSERT_EQUAL(e.kind, RR_LEDGER_OTHER);
}

static void test_ledger_refuses_what_it_cannot_trust(void)
{
	char big[RR_LEDGER_EVENT_MAX + 64], name[400];
	struct rr_ledger_event e;
	char why[160];

	CU_ASSERT(s_refused("[1,2]"));
	CU_ASSERT(s_refused("{\"kind\":\"notice\""));
	CU_ASSERT(s_refused("{\"unix_ms\":1700000000000}"));                   /* no kind */
	CU_ASSERT(s_refused("{\"kind\":\"notice\"}"));                         /* no time */
	CU_ASSERT(s_refused("{\"kind\":\"notice\",\"unix_ms\":1.5}"));
	CU_ASSERT(s_refused("{\"kind\":\"notice\",\"unix_ms\":-5}"));
	CU_ASSERT(s_refused("{\"kind\":\"notice\",\"unix_ms\":1e300}"));
	CU_ASSERT(s_refused("{\"kind\":\"checkpoint\",\"unix_ms\":1,\"bytes\":-1}"));
	CU_ASSERT(s_refused("{\"kind\":\"checkpoint\",\"unix_ms\":1,\"bytes\":\"1\"}"));
	CU_ASSERT(s_refused("{\"kind\":\"checkpoint\",\"unix_ms\":1,\"urgent\":1}"));
	CU_ASSERT(s_refused("{\"kind\":\"notice\",\"unix_ms\":1,\"instance\":\"aws\"}"));
	CU_ASSERT(s_refused("{\"kind\":\"notice\",\"unix_ms\":1,\"deadline_unix\":1e16}"));
	/* a member read, named twice: JSON readers disagree on which counts */
	CU_ASSERT(s_refused("{\"kind\":\"notice\",\"unix_ms\":1,\"unix_ms\":2}"));
	CU_ASSERT(s_refused("{\"kind\":\"notice\",\"unix_ms\":1,\"instance\":{\"zone\":\"a\","
			    "\"zone\":\"b\"}}"));
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(big, sizeof(big), "{\"kind\":\"checkpoint\",\"unix_ms\":1,\"checkpoint\":\"%s\"}",
		 name);
	CU_ASSERT(s_refused(big)); /* a name longer than any checkpoint's */
	memset(big, ' ', sizeof(big));
	memcpy(big, "{\"kind\":\"notice\",\"unix_ms\":1}", 30);
	CU_ASSERT_EQUAL(rr_ledger_event_parse(big, sizeof(big), &e, why, sizeof(why)),
			RR_ETOOBIG);
}

static void test_ledger_load_reads_a_store_oldest_first_and_skips_damage(void)
{
	struct fx f;
	struct rr_ledger_event *ev = NULL;
	size_t n = 0, skipped = 0;
	char key[RR_KEY_MAX];
	cJSON *o;

	fx_init(&f);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "checkpoint", "step-1");
	CU_ASSERT_EQUAL(rr_event_record(f.s, FX_RUN, "checkpoint", o), 0);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "notice", "preempt");
	CU_ASSERT_EQUAL(rr_event_record(f.s, FX_RUN, "notice", o), 0);
	/* Older than both by its name: must come first. And one that is not JSON. */
	CU_ASSERT_EQUAL(rr_key_event(key, FX_RUN, 1000, "restore"), 0);
	const char *old = "{\"kind\":\"restore\",\"unix_ms\":1000,\"checkpoint\":\"step-0\"}";
	CU_ASSERT_EQUAL(rr_store_put(f.s, key, old, strlen(old), NULL, NULL), 0);
	CU_ASSERT_EQUAL(rr_key_event(key, FX_RUN, 2000, "notice"), 0);
	CU_ASSERT_EQUAL(rr_store_put(f.s, key, "garbage", 7, NULL, NULL), 0);

	CU_ASSERT_EQUAL_FATAL(rr_ledger_load(f.s, FX_RUN, &ev, &n, &skipped), 0);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	CU_ASSERT_EQUAL(skipped, 1);
	CU_ASSERT_EQUAL(ev[0].kind, RR_LEDGER_RESTORE);
	CU_ASSERT_STRING_EQUAL(ev[0].checkpoint, "step-0");
	CU_ASSERT_EQUAL(ev[1].kind, RR_LEDGER_CHECKPOINT);
	CU_ASSERT_EQUAL(ev[2].kind, RR_LEDGER_NOTICE);
	CU_ASSERT_STRING_EQUAL(ev[2].host, rr_hostname());
	free(ev);

	/* Another run of the same store has no events. */
	CU_ASSERT_EQUAL(rr_ledger_load(f.s, "other", &ev, &n, &skipped), 0);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_PTR_NULL(ev);
	fx_done(&f);
}

/* Machine a (spot): fresh start at 0 s, checkpoint committed 100 durable 110; preemption
 * notice at 300 (deadline 420); its checkpoint committed 305, durable 320: met by 100 s.
 * Machine b (spot): started 590, restored at 600 (30 s, after one fallback); checkpoint
 * committed 690 durable 700; preemption notice at 1000 (deadline 1030); its checkpoint
 * durable only at 1040: missed by 10 s, and the work since 690 (310 s) is lost.
 * Machine c (on-demand): restored at 1100 (20 s); a crash and restart at 1200; a rebalance
 * recommendation (no deadline) at 1300 answered at 1310; a last checkpoint at 1800. */
static const char *const s_ledger[] = {
	"{\"kind\":\"start\",\"unix_ms\":1700000005000,\"started_unix_ms\":1700000000000,"
	"\"host\":\"a\",\"pid\":1,\"instance\":{\"cloud\":\"aws\",\"instance_type\":\"g5.xlarge\","
	"\"zone\":\"us-east-1a\",\"lifecycle\":\"spot\"}}",
	"{\"kind\":\"checkpoint\",\"unix_ms\":1700000110000,\"host\":\"a\",\"pid\":1,"
	"\"checkpoint\":\"step-1\",\"bytes\":1000,\"stored_bytes\":500,\"new_bytes\":500,"
	"\"committed_unix_ms\":1700000100000,\"durable_unix_ms\":1700000110000,\"urgent\":false}",
	"{\"kind\":\"notice\",\"unix_ms\":1700000321000,\"host\":\"a\",\"pid\":1,"
	"\"notice\":\"preempt\",\"source\":\"aws\",\"received_unix\":1700000300,"
	"\"received_unix_ms\":1700000300000,\"deadline_unix\":1700000420}",
	"{\"kind\":\"checkpoint\",\"unix_ms\":1700000320000,\"host\":\"a\",\"pid\":1,"
	"\"checkpoint\":\"step-2\",\"bytes\":1000,\"stored_bytes\":500,\"new_bytes\":100,"
	"\"committed_unix_ms\":1700000305000,\"durable_unix_ms\":1700000320000,\"urgent\":true}",
	"{\"kind\":\"restore\",\"unix_ms\":1700000600000,\"host\":\"b\",\"pid\":2,"
	"\"started_unix_ms\":1700000590000,\"checkpoint\":\"step-2\",\"bytes\":1000,"
	"\"downloaded_bytes\":500,\"elapsed_ms\":30000,\"fallbacks\":1,\"already_present\":false,"
	"\"instance\":{\"cloud\":\"gcp\",\"instance_type\":\"a2-highgpu-1g\","
	"\"zone\":\"us-central1-a\",\"lifecycle\":\"spot\"}}",
	"{\"kind\":\"checkpoint\",\"unix_ms\":1700000700000,\"host\":\"b\",\"pid\":2,"
	"\"checkpoint\":\"step-3\",\"bytes\":1000,\"stored_bytes\":500,\"new_bytes\":100,"
	"\"committed_unix_ms\":1700000690000,\"durable_unix_ms\":1700000700000}",
	"{\"kind\":\"notice\",\"unix_ms\":1700001000000,\"host\":\"b\",\"pid\":2,"
	"\"notice\":\"preempt\",\"source\":\"gcp\",\"received_unix_ms\":1700001000000,"
	"\"deadline_unix\":1700001030}",
	"{\"kind\":\"checkpoint\",\"unix_ms\":1700001040000,\"host\":\"b\",\"pid\":2,"
	"\"checkpoint\":\"step-4\",\"bytes\":1000,\"stored_bytes\":500,\"new_bytes\":100,"
	"\"committed_unix_ms\":1700001010000,\"durable_unix_ms\":1700001040000,\"urgent\":true}",
	"{\"kind\":\"restore\",\"unix_ms\":1700001100000,\"host\":\"c\",\"pid\":3,"
	"\"started_unix_ms\":1700001100000,\"checkpoint\":\"step-4\",\"bytes\":1000,"
	"\"downloaded_bytes\":500,\"elapsed_ms\":20000,\"fallbacks\":0,"
	"\"instance\":{\"cloud\":\"azure\",\"lifecycle\":\"on-demand\"}}",
	"{\"kind\":\"restart\",\"unix_ms\":1700001200000,\"host\":\"c\",\"pid\":3,"
	"\"exit_status\":1,\"attempt\":1,\"checkpoint\":\"step-4\"}",
	"{\"kind\":\"notice\",\"unix_ms\":1700001300000,\"host\":\"c\",\"pid\":3,"
	"\"notice\":\"rebalance\",\"source\":\"azure\",\"received_unix_ms\":1700001300000,"
	"\"deadline_unix\":null}",
	"{\"kind\":\"checkpoint\",\"unix_ms\":1700001310000,\"host\":\"c\",\"pid\":3,"
	"\"checkpoint\":\"step-5\",\"bytes\":1000,\"stored_bytes\":500,\"new_bytes\":100,"
	"\"committed_unix_ms\":1700001302000,\"durable_unix_ms\":1700001310000,\"urgent\":true}",
	"{\"kind\":\"checkpoint\",\"unix_ms\":1700001800000,\"host\":\"c\",\"pid\":3,"
	"\"checkpoint\":\"step-6\",\"bytes\":1000,\"stored_bytes\":500,\"new_bytes\":100,"
	"\"committed_unix_ms\":1700001790000,\"durable_unix_ms\":1700001800000}",
};
#define S_NLEDGER (sizeof(s_ledger) / sizeof(s_ledger[0]))

static struct rr_report *s_build(const struct rr_report_opts *o)
{
	struct rr_ledger_event ev[S_NLEDGER];
	struct rr_report *r = NULL;

	for (size_t i = 0; i < S_NLEDGER; i++)
		s_parse(s_ledger[i], &ev[i]);
	CU_ASSERT_EQUAL(rr_report_build(ev, S_NLEDGER, o, &r), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	return r;
}

static void test_report_counts_machines_notices_restores_and_restarts(void)
{
	struct rr_report *r = s_build(NULL);

	CU_ASSERT_EQUAL(r->events, S_NLEDGER);
	CU_ASSERT_EQUAL_FATAL(r->nattempts, 3);
	CU_ASSERT_STRING_EQUAL(r->attempts[0].host, "a");
	CU_ASSERT_STRING_EQUAL(r->attempts[0].inst.instance_type, "g5.xlarge");
	CU_ASSERT_EQUAL(r->attempts[0].from_ms, S(0));   /* its recorded start, not the event */
	CU_ASSERT_EQUAL(r->attempts[0].to_ms, S(321));   /* the notice event, written last */
	CU_ASSERT_EQUAL(r->attempts[0].restored, 0);
	CU_ASSERT_EQUAL(r->attempts[1].from_ms, S(590));
	CU_ASSERT_EQUAL(r->attempts[1].to_ms, S(1040));
	CU_ASSERT_EQUAL(r->attempts[1].restored, 1);
	CU_ASSERT_STRING_EQUAL(r->attempts[2].inst.lifecycle, "on-demand");
	CU_ASSERT_EQUAL(r->attempts[2].restarts, 1);

	CU_ASSERT_EQUAL(r->nnotices, 3);
	CU_ASSERT_EQUAL(r->preemptions, 2);
	CU_ASSERT_EQUAL_FATAL(r->ncounts, 3);
	CU_ASSERT_STRING_EQUAL(r->counts[0].cloud, "aws");
	CU_ASSERT_STRING_EQUAL(r->counts[1].cloud, "gcp");
	CU_ASSERT_STRING_EQUAL(r->counts[2].kind, "rebalance");
	CU_ASSERT_STRING_EQUAL(r->counts[2].source, "azure");
	CU_ASSERT_EQUAL(r->counts[0].n + r->counts[1].n + r->counts[2].n, 3);

	CU_ASSERT_EQUAL_FATAL(r->nrestores, 2);
	CU_ASSERT_STRING_EQUAL(r->restores[0].checkpoint, "step-2");
	CU_ASSERT_EQUAL(r->restores[0].attempt, 1);
	CU_ASSERT_EQUAL(r->restores[0].fallbacks, 1);
	CU_ASSERT_EQUAL(r->restores[0].downloaded_bytes, 500);
	CU_ASSERT_EQUAL(r->restore_ms, 50000);
	CU_ASSERT_EQUAL_FATAL(r->nrestarts, 1);
	CU_ASSERT_EQUAL(r->restarts[0].exit_status, 1);
	CU_ASSERT_EQUAL(r->restarts[0].attempt, 2);

	CU_ASSERT_EQUAL(r->checkpoints, 6);
	CU_ASSERT_EQUAL(r->urgent_checkpoints, 3);
	CU_ASSERT_EQUAL(r->bytes_checkpointed, 6000);
	CU_ASSERT_EQUAL(r->bytes_stored, 3000);
	CU_ASSERT_EQUAL(r->bytes_uploaded, 1000);
	rr_report_destroy(r);
}

static void test_report_judges_each_notice_against_its_deadline(void)
{
	struct rr_report *r = s_build(NULL);
	const struct rr_report_notice *a = &r->notices[0], *b = &r->notices[1], *c = &r->notices[2];

	CU_ASSERT_EQUAL(r->deadlines_met, 1);
	CU_ASSERT_EQUAL(r->deadlines_missed, 1);

	CU_ASSERT_STRING_EQUAL(a->checkpoint, "step-2");
	CU_ASSERT_EQUAL(a->outcome, RR_DEADLINE_MET);
	CU_ASSERT_EQUAL(a->to_durable_ms, 20000);
	CU_ASSERT_EQUAL(a->margin_ms, 100000);
	CU_ASSERT_EQUAL(a->at_risk_ms, 200000); /* since step-1 was committed at 100 s */
	CU_ASSERT_EQUAL(a->work_lost_ms, 0);

	CU_ASSERT_STRING_EQUAL(b->checkpoint, "step-4");
	CU_ASSERT_EQUAL(b->outcome, RR_DEADLINE_MISSED);
	CU_ASSERT_EQUAL(b->margin_ms, -10000);
	CU_ASSERT_EQUAL(b->at_risk_ms, 310000);
	CU_ASSERT_EQUAL(b->work_lost_ms, 310000);

	CU_ASSERT_STRING_EQUAL(c->checkpoint, "step-5");
	CU_ASSERT_EQUAL(c->outcome, RR_DEADLINE_NONE);
	CU_ASSERT_EQUAL(c->preemption, 0);
	CU_ASSERT_EQUAL(c->work_lost_ms, -1);

	CU_ASSERT_EQUAL(r->work_lost_ms, 310000);
	CU_ASSERT_EQUAL(r->at_risk_ms, 510000);
	rr_report_destroy(r);
}

static void test_report_notice_never_answered_is_missed_with_its_work_lost(void)
{
	struct rr_ledger_event ev[3];
	struct rr_report *r = NULL;

	s_parse("{\"kind\":\"start\",\"unix_ms\":1700000000000,\"host\":\"a\",\"pid\":1}", &ev[0]);
	s_parse("{\"kind\":\"notice\",\"unix_ms\":1700000060000,\"host\":\"a\",\"pid\":1,"
		"\"notice\":\"terminate\",\"source\":\"signal\",\"received_unix_ms\":1700000060000,"
		"\"deadline_unix\":1700000085}", &ev[1]);
	/* A routine checkpoint of another machine after the notice answers nothing here. */
	s_parse("{\"kind\":\"checkpoint\",\"unix_ms\":1700000070000,\"host\":\"b\",\"pid\":1,"
		"\"urgent\":true,\"committed_unix_ms\":1700000065000}", &ev[2]);
	CU_ASSERT_EQUAL_FATAL(rr_report_build(ev, 3, NULL, &r), 0);
	CU_ASSERT_EQUAL(r->notices[0].outcome, RR_DEADLINE_MISSED);
	CU_ASSERT_EQUAL(r->notices[0].durable_ms, 0);
	CU_ASSERT_EQUAL(r->notices[0].to_durable_ms, -1);
	CU_ASSERT_EQUAL(r->notices[0].work_lost_ms, 60000); /* all of it since the start */
	CU_ASSERT_EQUAL(r->deadlines_missed, 1);
	rr_report_destroy(r);
}

static void test_report_estimates_cost_against_on_demand(void)
{
	struct rr_report_opts o = { .price_spot = 1.0, .price_on_demand = 3.0 };
	struct rr_report *r = s_build(&o);

	/* Machines: a 321 s (to its notice event, written after its checkpoint) and b 450 s
	 * spot, c 700 s on-demand. Useful: 1471 s less 310 s lost and 50 s restoring. */
	CU_ASSERT_EQUAL(r->have_cost, 1);
	CU_ASSERT_DOUBLE_EQUAL(r->machine_hours, 1471.0 / 3600, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(r->spot_hours, 771.0 / 3600, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(r->on_demand_hours, 700.0 / 3600, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(r->useful_hours, 1111.0 / 3600, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(r->cost, (771.0 * 1 + 700.0 * 3) / 3600, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(r->on_demand_cost, 1111.0 * 3 / 3600, 1e-12);
	rr_report_destroy(r);

	/* One price alone is not an estimate. */
	o.price_on_demand = 0;
	r = s_build(&o);
	CU_ASSERT_EQUAL(r->have_cost, 0);
	rr_report_destroy(r);
}

static void test_report_json_has_the_documented_shape(void)
{
	struct rr_report_opts o = { .price_spot = 1.0, .price_on_demand = 3.0 };
	struct rr_report *r = s_build(&o);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cJSON *root, *t, *n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(rr_report_print_json(r, "run-1", f), 0);
	fclose(f);
	root = cJSON_Parse(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(root);
	CU_ASSERT_EQUAL(cJSON_GetObjectItem(root, "schema")->valueint, 1);
	CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(root, "run_id")->valuestring, "run-1");
	CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(root, "machines")), 3);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(root, "restores")), 2);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(root, "restarts")), 1);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(root, "notice_counts")), 3);
	t = cJSON_GetObjectItem(root, "totals");
	CU_ASSERT_EQUAL(cJSON_GetObjectItem(t, "deadlines_missed")->valueint, 1);
	CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(t, "work_lost_seconds")->valuedouble, 310, 1e-9);
	n = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "notices"), 1);
	CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(n, "deadline")->valuestring, "missed");
	CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(n, "margin_seconds")->valuedouble, -10, 1e-9);
	n = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "notices"), 2);
	CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(n, "deadline")->valuestring, "no_deadline");
	CU_ASSERT(cJSON_IsNull(cJSON_GetObjectItem(n, "work_lost_seconds")));
	CU_ASSERT(cJSON_IsNull(cJSON_GetObjectItem(n, "deadline_unix_ms")));
	CU_ASSERT(cJSON_IsObject(cJSON_GetObjectItem(root, "cost")));
	cJSON_Delete(root);
	free(text);
	rr_report_destroy(r);
}

/* Each machine's exit event says how it ended; one without (killed, no notice) that a later
 * machine followed was lost; the newest without one may still run. A ledger of agents older
 * than exit events says nothing about ends. */
static void test_report_tells_lost_machines_from_finished_and_preempted_ones(void)
{
	static const char *const ledger[] = {
		"{\"kind\":\"start\",\"unix_ms\":1700000001000,\"host\":\"a\",\"pid\":1}",
		"{\"kind\":\"exit\",\"unix_ms\":1700000030000,\"host\":\"a\",\"pid\":1,"
		"\"how\":\"preempted\",\"exit_status\":75,\"trainer_status\":0}",
		"{\"kind\":\"restore\",\"unix_ms\":1700000040000,\"host\":\"b\",\"pid\":2,"
		"\"checkpoint\":\"step-2\",\"bytes\":1000,\"downloaded_bytes\":1500,"
		"\"unused_bytes\":700,\"elapsed_ms\":50}",
		"{\"kind\":\"restore\",\"unix_ms\":1700000050000,\"host\":\"c\",\"pid\":3}",
		"{\"kind\":\"exit\",\"unix_ms\":1700000052000,\"host\":\"c\",\"pid\":3,"
		"\"how\":\"killed\",\"exit_status\":137,\"signal\":\"KILL\"}",
		"{\"kind\":\"start\",\"unix_ms\":1700000060000,\"host\":\"d\",\"pid\":4}",
		"{\"kind\":\"exit\",\"unix_ms\":1700000061500,\"host\":\"d\",\"pid\":4,"
		"\"how\":\"finished\",\"exit_status\":0}",
		"{\"kind\":\"start\",\"unix_ms\":1700000070000,\"host\":\"e\",\"pid\":5}",
	};
	enum { N = sizeof(ledger) / sizeof(ledger[0]) };
	struct rr_ledger_event ev[N];
	struct rr_report *r = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	for (size_t i = 0; i < N; i++)
		s_parse(ledger[i], &ev[i]);
	CU_ASSERT_EQUAL(ev[1].kind, RR_LEDGER_EXIT);
	CU_ASSERT_STRING_EQUAL(ev[4].signal, "KILL");
	CU_ASSERT_EQUAL(ev[2].unused_bytes, 700);
	CU_ASSERT_EQUAL_FATAL(rr_report_build(ev, N, NULL, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r->nattempts, 5);
	CU_ASSERT_STRING_EQUAL(rr_report_ended(r, 0), "preempted");
	CU_ASSERT_EQUAL(r->attempts[0].exit_status, 75);
	CU_ASSERT_STRING_EQUAL(rr_report_ended(r, 1), "lost");
	CU_ASSERT_STRING_EQUAL(rr_report_ended(r, 2), "killed");
	CU_ASSERT_STRING_EQUAL(rr_report_ended(r, 3), "finished");
	CU_ASSERT_STRING_EQUAL(rr_report_ended(r, 4), "running or lost");
	CU_ASSERT_EQUAL(r->lost, 1);
	CU_ASSERT_EQUAL(r->attempts[0].to_ms, S(30)); /* the machine's time runs to its exit */

	f = open_memstream(&text, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(rr_report_print_text(r, "run-1", f), 0);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, " preempted (75)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, " lost\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, " killed (SIGKILL)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, " finished\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, " running or lost\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "1 machine recorded no end: lost without a word"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "1.5 kB read from the store (700 B of it other "
					    "checkpoints' data in shared packs)"));
	/* 29 + 0 + 2 + 1.5 + 0 s of machines: in seconds, not "0.01 h". */
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "Machine time: 32.5 s (32.5 s spot or unknown, "
					    "0 ms on-demand)"));
	if (!strstr(text, "Machine time: 32.5 s"))
		fprintf(stderr, "%s", text);
	free(text);
	rr_report_destroy(r);

	/* Agents older than exit events: nothing is said about how machines ended. */
	CU_ASSERT_EQUAL_FATAL(rr_report_build(ev + 2, 2, NULL, &r), 0);
	CU_ASSERT_PTR_NULL(rr_report_ended(r, 0));
	CU_ASSERT_EQUAL(r->lost, 0);
	rr_report_destroy(r);
}

static CU_TestInfo s_tests[] = {
	{ "report_tells_lost_machines_from_finished_and_preempted_ones",
	  test_report_tells_lost_machines_from_finished_and_preempted_ones },
	{ "ledger_parses_a_notice_with_instance_and_ms_receive_time",
	  test_ledger_parses_a_notice_with_instance_and_ms_receive_time },
	{ "ledger_reads_events_of_older_agents_with_fallbacks",
	  test_ledger_reads_events_of_older_agents_with_fallbacks },
	{ "ledger_refuses_what_it_cannot_trust", test_ledger_refuses_what_it_cannot_trust },
	{ "ledger_load_reads_a_store_oldest_first_and_skips_damage",
	  test_ledger_load_reads_a_store_oldest_first_and_skips_damage },
	{ "report_counts_machines_notices_restores_and_restarts",
	  test_report_counts_machines_notices_restores_and_restarts },
	{ "report_judges_each_notice_against_its_deadline",
	  test_report_judges_each_notice_against_its_deadline },
	{ "report_notice_never_answered_is_missed_with_its_work_lost",
	  test_report_notice_never_answered_is_missed_with_its_work_lost },
	{ "report_estimates_cost_against_on_demand", test_report_estimates_cost_against_on_demand },
	{ "report_json_has_the_documented_shape", test_report_json_has_the_documented_shape },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("report", s_tests)
