/* CUnit suite "cloud_azure": the Azure notice provider (cloud/azure.c) against the
 * in-process HTTP server (http_fixture.h) playing the instance metadata service
 * (Microsoft's "Azure Metadata Service: Scheduled Events" page): Metadata: true required on
 * every request (400 without it), the instance document at /metadata/instance, Scheduled
 * Events at /metadata/scheduledevents (GET to read, POST to approve); the watcher
 * (cloud/watch.c) approving with it; and the document and RFC 1123 parsers on their own
 * (cloud/azure_events.h). */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azure_events.h"
#include "rr/clock.h"
#include "rr/cloud.h"
#include "rr/error.h"
#include "rr/http.h"
#include "rr/notice.h"
#include "rr/timefmt.h"

#include "cunit_main.h"
#include "http_fixture.h"
#include "watch_fixture.h"

#define S_INSTANCE_TARGET "/metadata/instance?api-version=2021-02-01"
#define S_EVENTS_TARGET "/metadata/scheduledevents?api-version=2020-07-01"
#define S_VM "trainer-7"
#define S_INSTANCE_DOC                                                                      \
	"{\"compute\":{\"name\":\"trainer-7\",\"vmId\":\"02aab8a4-74ef-476e-8182-f6d2ba4166a6\"," \
	"\"vmSize\":\"Standard_NC24ads_A100_v4\",\"location\":\"eastus\",\"zone\":\"1\","       \
	"\"priority\":\"Spot\",\"osType\":\"Linux\",\"tags\":\"\"},"                            \
	"\"network\":{\"interface\":[]}}"
#define S_DOC1 "{\"DocumentIncarnation\":1,\"Events\":["
#define S_NOT_BEFORE "Mon, 19 Sep 2016 18:29:47 GMT"
#define S_NOT_BEFORE_UNIX 1474309787

/* The fake metadata service. Guarded by mu: handler calls come from server threads. */
struct s_imds {
	pthread_mutex_t mu;
	const char *instance;   /* NULL: S_INSTANCE_DOC */
	int instance_status;    /* 0: 200 */
	const char *events;     /* NULL: an empty document */
	int events_status;      /* 0: 200 */
	int post_status;        /* 0: 200 */
	unsigned missing_header;
	char post_body[1024];
};

static void s_imds_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	struct s_imds *m = ud;
	const char *md = fx_header(req, "Metadata");

	pthread_mutex_lock(&m->mu);
	if (!md || strcmp(md, "true") != 0) {
		m->missing_header++;
		fx_resp_text(resp, 400, "{\"error\":\"Bad request. Required metadata header not "
					"specified\"}");
	} else if (strcmp(req->method, "GET") == 0 &&
		   strcmp(req->target, S_INSTANCE_TARGET) == 0) {
		fx_resp_text(resp, m->instance_status ? m->instance_status : 200,
			     m->instance ? m->instance : S_INSTANCE_DOC);
	} else if (strcmp(req->method, "GET") == 0 && strcmp(req->target, S_EVENTS_TARGET) == 0) {
		fx_resp_text(resp, m->events_status ? m->events_status : 200,
			     m->events ? m->events : "{\"DocumentIncarnation\":0,\"Events\":[]}");
	} else if (strcmp(req->method, "POST") == 0 &&
		   strcmp(req->target, S_EVENTS_TARGET) == 0) {
		snprintf(m->post_body, sizeof(m->post_body), "%s", (const char *)req->body);
		fx_resp_text(resp, m->post_status ? m->post_status : 200, "");
	} else {
		fx_resp_text(resp, 404, "");
	}
	pthread_mutex_unlock(&m->mu);
}

struct s_env {
	struct s_imds imds;
	struct fx_server srv;
	struct rr_http *http;
	struct rr_cloud_opts o;
	atomic_int stop;
	void *state;
	struct rr_notice n;
	char why[512];
};

static void s_setup_opts(struct s_env *e, int ack, int64_t poll_ms)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->imds.mu, NULL);
	CU_ASSERT_EQUAL_FATAL(fx_server_start(&e->srv, s_imds_handler, &e->imds), 0);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &e->http), 0);
	e->o.http = e->http;
	e->o.endpoint = e->srv.url;
	e->o.stop = &e->stop;
	e->o.azure_ack = ack;
	e->o.poll_interval_ms = poll_ms;
	CU_ASSERT_EQUAL_FATAL(rr_cloud_azure.create(&e->o, &e->state), 0);
}

static void s_setup(struct s_env *e)
{
	s_setup_opts(e, 0, 10);
}

static void s_teardown(struct s_env *e)
{
	rr_cloud_azure.destroy(e->state);
	rr_http_destroy(e->http);
	fx_server_stop(&e->srv);
	pthread_mutex_destroy(&e->imds.mu);
}

/* The service's next Scheduled Events document. */
static void s_events(struct s_env *e, const char *json)
{
	pthread_mutex_lock(&e->imds.mu);
	e->imds.events = json;
	pthread_mutex_unlock(&e->imds.mu);
}

static int s_wait(struct s_env *e)
{
	memset(&e->n, 0xa5, sizeof(e->n));
	e->why[0] = '\0';
	return rr_cloud_azure.wait(e->state, &e->n, e->why, sizeof(e->why));
}

static const char s_preempt_doc[] =
	"{\"DocumentIncarnation\":2,\"Events\":[{\"EventId\":\"A123BC45-1234-5678-AB90-"
	"ABCDEF123456\",\"EventStatus\":\"Scheduled\",\"EventType\":\"Preempt\","
	"\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"trainer-7\"],"
	"\"NotBefore\":\"" S_NOT_BEFORE "\",\"Description\":\"Spot eviction\","
	"\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}";

static void test_azure_requests_send_metadata_true_and_api_version(void)
{
	struct rr_cloud_identity id;
	struct s_env e;

	s_setup(&e);
	CU_ASSERT_EQUAL(rr_cloud_azure.identity(e.state, &id, e.why, sizeof(e.why)), 0);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	CU_ASSERT_EQUAL_FATAL(fx_server_nrequests(&e.srv), 2);
	CU_ASSERT_STRING_EQUAL(fx_server_request(&e.srv, 0)->target, S_INSTANCE_TARGET);
	CU_ASSERT_STRING_EQUAL(fx_server_request(&e.srv, 1)->target, S_EVENTS_TARGET);
	for (size_t i = 0; i < 2; i++) {
		const struct fx_request *r = fx_server_request(&e.srv, i);
		CU_ASSERT_STRING_EQUAL(r->method, "GET");
		CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(r, "Metadata"));
		CU_ASSERT_STRING_EQUAL(fx_header(r, "Metadata"), "true");
	}
	CU_ASSERT_EQUAL(e.imds.missing_header, 0);
	s_teardown(&e);
}

static void test_azure_wait_fetches_the_vm_name_itself(void)
{
	struct s_env e;

	s_setup(&e);
	s_events(&e, s_preempt_doc);
	CU_ASSERT_EQUAL(s_wait(&e), 1); /* no identity() call before */
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_STRING_EQUAL(fx_server_request(&e.srv, 0)->target, S_INSTANCE_TARGET);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_INSTANCE_TARGET), 1);

	/* Without the name there is no telling whose events they are: an error. */
	s_teardown(&e);
	s_setup(&e);
	e.imds.instance_status = 500;
	s_events(&e, s_preempt_doc);
	CU_ASSERT_EQUAL(s_wait(&e), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "500"));
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_EVENTS_TARGET), 0);
	s_teardown(&e);
}

static void test_azure_events_for_another_vm_are_ignored(void)
{
	struct s_env e;

	s_setup(&e);
	s_events(&e, "{\"DocumentIncarnation\":3,\"Events\":[{\"EventId\":\"E1\","
		     "\"EventType\":\"Preempt\",\"Resources\":[\"trainer-8\",\"trainer-70\"],"
		     "\"NotBefore\":\"" S_NOT_BEFORE "\"}]}");
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	/* The name is compared without regard to case. */
	s_events(&e, "{\"DocumentIncarnation\":4,\"Events\":[{\"EventId\":\"E2\","
		     "\"EventType\":\"Preempt\",\"Resources\":[\"trainer-8\",\"TRAINER-7\"],"
		     "\"NotBefore\":\"" S_NOT_BEFORE "\"}]}");
	CU_ASSERT_EQUAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_PREEMPT);
	s_teardown(&e);
}

static void test_azure_preempt_gives_a_notice_with_the_notbefore_deadline(void)
{
	struct s_env e;
	int64_t w0, w1;

	s_setup(&e);
	s_events(&e, s_preempt_doc);
	w0 = rr_wall_ms() / 1000;
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	w1 = rr_wall_ms() / 1000;
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_EQUAL(e.n.source, RR_SOURCE_AZURE);
	CU_ASSERT_EQUAL(e.n.deadline_unix, S_NOT_BEFORE_UNIX);
	CU_ASSERT(e.n.received_unix >= w0 && e.n.received_unix <= w1);
	s_teardown(&e);
}

static void test_azure_started_event_with_blank_notbefore_is_due_now(void)
{
	struct s_env e;

	s_setup(&e);
	s_events(&e, "{\"DocumentIncarnation\":9,\"Events\":[{\"EventId\":\"T1\","
		     "\"EventType\":\"Terminate\",\"EventStatus\":\"Started\","
		     "\"Resources\":[\"trainer-7\"],\"NotBefore\":\"\"}]}");
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_TERMINATE);
	CU_ASSERT_EQUAL(e.n.deadline_unix, e.n.received_unix);
	s_teardown(&e);
}

static void test_azure_same_eventid_is_not_reported_twice(void)
{
	static const char later[] =
		"{\"DocumentIncarnation\":3,\"Events\":[{\"EventId\":\"A123BC45-1234-5678-AB90-"
		"ABCDEF123456\",\"EventStatus\":\"Started\",\"EventType\":\"Preempt\","
		"\"Resources\":[\"trainer-7\"],\"NotBefore\":\"\"}]}";
	struct s_env e;

	s_setup(&e);
	s_events(&e, s_preempt_doc);
	CU_ASSERT_EQUAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(s_wait(&e), 0); /* the same document */
	s_events(&e, later);            /* a new incarnation, the same event started */
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_EVENTS_TARGET), 3);
	s_teardown(&e);
}

static void test_azure_unchanged_incarnation_is_skipped(void)
{
	struct s_env e;

	s_setup(&e);
	s_events(&e, "{\"DocumentIncarnation\":2,\"Events\":[]}");
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	/* A document with the incarnation already handled is not looked into. */
	s_events(&e, s_preempt_doc);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	s_events(&e, "{\"DocumentIncarnation\":3,\"Events\":[{\"EventId\":\"A123BC45-1234-5678-"
		     "AB90-ABCDEF123456\",\"EventType\":\"Preempt\",\"Resources\":[\"trainer-7\"],"
		     "\"NotBefore\":\"" S_NOT_BEFORE "\"}]}");
	CU_ASSERT_EQUAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_PREEMPT);
	s_teardown(&e);
}

static void test_azure_two_events_give_two_notices_on_consecutive_calls(void)
{
	struct s_env e;

	s_setup(&e);
	s_events(&e, "{\"DocumentIncarnation\":5,\"Events\":["
		     "{\"EventId\":\"R1\",\"EventType\":\"Reboot\",\"Resources\":[\"trainer-7\"],"
		     "\"NotBefore\":\"Tue, 29 Feb 2028 23:59:59 GMT\"},"
		     "{\"EventId\":\"T1\",\"EventType\":\"Terminate\","
		     "\"Resources\":[\"trainer-7\"],"
		     "\"NotBefore\":\"Thu, 01 Jan 1970 00:00:01 GMT\"}]}");
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_MAINTENANCE);
	CU_ASSERT_EQUAL(e.n.deadline_unix, 1835481599);
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_TERMINATE);
	CU_ASSERT_EQUAL(e.n.deadline_unix, 1);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_EVENTS_TARGET), 1); /* from the queue */
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	s_teardown(&e);
}

/* With --azure-ack, a Reboot's checkpoint made durable after a Preempt was reported answers
 * the Reboot, not the Preempt: approving the Preempt then would let Azure evict the machine
 * before the checkpoint the Preempt asks for exists. The Preempt is approved once its own
 * checkpoint is durable. */
static void test_azure_watch_approves_a_preempt_only_for_its_own_checkpoint(void)
{
	struct rr_cloud_watch *w = NULL;
	struct rr_notice reboot, preempt;
	struct s_env e;
	int64_t end;

	s_setup_opts(&e, 1, 20);
	e.o.stop = NULL; /* the watcher's own */
	s_events(&e, S_DOC1 "{\"EventId\":\"R1\",\"EventType\":\"Reboot\","
		     "\"Resources\":[\"trainer-7\"],\"NotBefore\":\"" S_NOT_BEFORE "\"}]}");
	CU_ASSERT_EQUAL_FATAL(rr_cloud_watch_start(RR_CLOUD_AZURE, &e.o, &w), 0);
	CU_ASSERT_EQUAL_FATAL(wf_next_within(w, &reboot, 5000), 1);
	CU_ASSERT_EQUAL(reboot.kind, RR_NOTICE_MAINTENANCE);
	s_events(&e, s_preempt_doc);
	CU_ASSERT_EQUAL_FATAL(wf_next_within(w, &preempt, 5000), 1);
	CU_ASSERT_EQUAL(preempt.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT(preempt.seq > reboot.seq);

	rr_cloud_watch_durable(w, reboot.seq);
	fx_sleep_ms(400); /* twenty polls */
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", NULL), 0);

	rr_cloud_watch_durable(w, preempt.seq);
	end = rr_mono_ms() + 5000;
	while (fx_server_count(&e.srv, "POST", NULL) == 0 && rr_mono_ms() < end)
		fx_sleep_ms(20);
	CU_ASSERT_EQUAL_FATAL(fx_server_count(&e.srv, "POST", NULL), 1);
	rr_cloud_watch_stop(w); /* no request is being handled after it */
	CU_ASSERT_PTR_NOT_NULL(strstr(e.imds.post_body, "A123BC45-1234-5678-AB90-ABCDEF123456"));
	s_teardown(&e);
}

static void test_azure_freeze_is_ignored_and_redeploy_is_maintenance(void)
{
	struct s_env e;

	s_setup(&e);
	s_events(&e, S_DOC1 "{\"EventId\":\"F1\","
		     "\"EventType\":\"Freeze\",\"Resources\":[\"trainer-7\"],"
		     "\"NotBefore\":\"" S_NOT_BEFORE "\",\"DurationInSeconds\":9}]}");
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	s_events(&e, "{\"DocumentIncarnation\":2,\"Events\":[{\"EventId\":\"F1\","
		     "\"EventType\":\"Freeze\",\"Resources\":[\"trainer-7\"],\"NotBefore\":\"\"},"
		     "{\"EventId\":\"D1\",\"EventType\":\"Redeploy\",\"Resources\":[\"trainer-7\"],"
		     "\"NotBefore\":\"" S_NOT_BEFORE "\"}]}");
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_MAINTENANCE);
	CU_ASSERT_EQUAL(e.n.deadline_unix, S_NOT_BEFORE_UNIX);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	s_teardown(&e);
}

static void test_azure_ack_posts_the_exact_body_once(void)
{
	const struct fx_request *post;
	struct s_env e;

	s_setup_opts(&e, 1, 10);
	s_events(&e, s_preempt_doc);
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	rr_cloud_azure.durable(e.state);
	CU_ASSERT_EQUAL_FATAL(fx_server_count(&e.srv, "POST", NULL), 1);
	post = fx_server_last(&e.srv, S_EVENTS_TARGET);
	CU_ASSERT_STRING_EQUAL(post->method, "POST");
	CU_ASSERT_STRING_EQUAL(post->target, S_EVENTS_TARGET);
	CU_ASSERT_STRING_EQUAL((const char *)post->body,
			       "{\"StartRequests\":[{\"EventId\":\"A123BC45-1234-5678-AB90-"
			       "ABCDEF123456\"}]}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(post, "Content-Type"));
	CU_ASSERT_STRING_EQUAL(fx_header(post, "Content-Type"), "application/json");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(post, "Metadata"));
	CU_ASSERT_STRING_EQUAL(fx_header(post, "Metadata"), "true");
	rr_cloud_azure.durable(e.state); /* once per event */
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", NULL), 1);
	s_teardown(&e);
}

static void test_azure_no_ack_without_azure_ack_or_a_preempt(void)
{
	struct s_env e;

	s_setup_opts(&e, 0, 10);
	s_events(&e, s_preempt_doc);
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	rr_cloud_azure.durable(e.state);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", NULL), 0);
	s_teardown(&e);

	/* With --azure-ack, but only a Reboot reported: nothing to approve. */
	s_setup_opts(&e, 1, 10);
	rr_cloud_azure.durable(e.state);
	s_events(&e, S_DOC1 "{\"EventId\":\"R1\","
		     "\"EventType\":\"Reboot\",\"Resources\":[\"trainer-7\"],"
		     "\"NotBefore\":\"\"}]}");
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	rr_cloud_azure.durable(e.state);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", NULL), 0);
	s_teardown(&e);
}

static void test_azure_ack_refused_with_429_is_tried_again(void)
{
	struct s_env e;

	s_setup_opts(&e, 1, 10);
	s_events(&e, s_preempt_doc);
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	e.imds.post_status = 429;
	rr_cloud_azure.durable(e.state);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", NULL), 1);
	pthread_mutex_lock(&e.imds.mu);
	e.imds.post_status = 200;
	pthread_mutex_unlock(&e.imds.mu);
	rr_cloud_azure.durable(e.state);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", NULL), 2);
	rr_cloud_azure.durable(e.state);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", NULL), 2);
	s_teardown(&e);
}

static void test_azure_malformed_document_is_an_error_not_a_crash(void)
{
	static const char *const bad[] = {
		"{",
		"",
		"[]",
		"{\"DocumentIncarnation\":1}",
		"{\"DocumentIncarnation\":\"1\",\"Events\":[]}",
		"{\"DocumentIncarnation\":1.5,\"Events\":[]}",
		"{\"DocumentIncarnation\":-1,\"Events\":[]}",
		"{\"DocumentIncarnation\":1,\"Events\":{}}",
		"{\"DocumentIncarnation\":1,\"Events\":[7]}",
		S_DOC1 "{\"EventId\":5,\"EventType\":\"Preempt\","
		"\"Resources\":[\"trainer-7\"]}]}",
		S_DOC1 "{\"EventId\":\"X\",\"EventType\":\"Preempt\","
		"\"Resources\":\"trainer-7\"}]}",
		S_DOC1 "{\"EventId\":\"X\",\"EventType\":\"Preempt\","
		"\"Resources\":[\"trainer-7\"],\"NotBefore\":0}]}",
	};
	struct s_env e;

	s_setup(&e);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s_events(&e, bad[i]);
		CU_ASSERT_EQUAL(s_wait(&e), RR_ECORRUPT);
		CU_ASSERT(e.why[0] != '\0');
	}
	s_events(&e, s_preempt_doc); /* and it still works after */
	CU_ASSERT_EQUAL(s_wait(&e), 1);
	s_teardown(&e);
}

static void test_azure_429_and_5xx_are_eio_with_why(void)
{
	struct s_env e;

	s_setup(&e);
	e.imds.events_status = 429;
	CU_ASSERT_EQUAL(s_wait(&e), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "429"));
	pthread_mutex_lock(&e.imds.mu);
	e.imds.events_status = 503;
	pthread_mutex_unlock(&e.imds.mu);
	CU_ASSERT_EQUAL(s_wait(&e), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "503"));
	s_teardown(&e);
}

static void test_azure_poll_interval_and_stop(void)
{
	struct s_env e;
	int64_t t0;

	s_setup_opts(&e, 0, 400);
	CU_ASSERT_EQUAL(s_wait(&e), 0); /* the first poll goes out at once */
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	/* The 400 ms count from the first poll, and t0 from when its answer got here, which on
	 * a loaded machine can be well after (under TSan beside other tests, under 300 ms was
	 * seen): half the interval is asked, which a poller that did not wait still fails. */
	CU_ASSERT(rr_mono_ms() - t0 >= 200);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_EVENTS_TARGET), 2);
	s_teardown(&e);

	s_setup_opts(&e, 0, 60000);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	e.stop = 1;
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL(s_wait(&e), 0); /* the pause before the next poll is cut short */
	CU_ASSERT(rr_mono_ms() - t0 < 5000);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_EVENTS_TARGET), 1);
	s_teardown(&e);
}

static void test_azure_identity_fields(void)
{
	struct rr_cloud_identity id;
	struct s_env e;

	s_setup(&e);
	CU_ASSERT_EQUAL(rr_cloud_azure.identity(e.state, &id, e.why, sizeof(e.why)), 0);
	CU_ASSERT_STRING_EQUAL(id.cloud, "azure");
	CU_ASSERT_STRING_EQUAL(id.instance_id, "02aab8a4-74ef-476e-8182-f6d2ba4166a6");
	CU_ASSERT_STRING_EQUAL(id.instance_type, "Standard_NC24ads_A100_v4");
	CU_ASSERT_STRING_EQUAL(id.zone, "eastus-1");
	CU_ASSERT_STRING_EQUAL(id.lifecycle, "spot");

	e.imds.instance = "{\"compute\":{\"name\":\"trainer-7\",\"vmId\":\"v\",\"vmSize\":\"s\","
			  "\"location\":\"westeurope\",\"zone\":\"\",\"priority\":\"Regular\"}}";
	CU_ASSERT_EQUAL(rr_cloud_azure.identity(e.state, &id, e.why, sizeof(e.why)), 0);
	CU_ASSERT_STRING_EQUAL(id.zone, "westeurope");
	CU_ASSERT_STRING_EQUAL(id.lifecycle, "on-demand");

	e.imds.instance = "{\"compute\":{\"name\":17}}";
	CU_ASSERT_EQUAL(rr_cloud_azure.identity(e.state, &id, e.why, sizeof(e.why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "name"));
	s_teardown(&e);
}

/* ---- the parsers on their own ---- */

struct s_seen {
	unsigned n;
	char ids[8][RR_AZURE_EVENT_ID_MAX];
	int64_t not_before[8];
	int64_t duration[8];
};

static int s_collect(void *ud, const struct rr_azure_event *ev)
{
	struct s_seen *s = ud;

	if (s->n < 8) {
		snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", ev->event_id);
		s->not_before[s->n] = ev->not_before_unix;
		s->duration[s->n] = ev->duration_s;
	}
	s->n++;
	return 0;
}

static int s_parse(const char *json, struct s_seen *s, int64_t *inc, char *why, size_t cap)
{
	memset(s, 0, sizeof(*s));
	*inc = -7;
	return rr_azure_parse_events(json, strlen(json), S_VM, s_collect, s, inc, why, cap);
}

static void test_azure_parser_checks_the_whole_document_first(void)
{
	static const char *const bad[] = {
		/* the second event is bad: the first must not be reported either */
		S_DOC1 "{\"EventId\":\"A\",\"EventType\":\"Preempt\","
		"\"Resources\":[\"trainer-7\"]},{\"EventId\":\"B\",\"EventType\":\"Preempt\"}]}",
		/* a member twice */
		"{\"DocumentIncarnation\":1,\"DocumentIncarnation\":2,\"Events\":[]}",
		S_DOC1 "{\"EventId\":\"A\",\"EventId\":\"B\","
		"\"EventType\":\"Preempt\",\"Resources\":[\"trainer-7\"]}]}",
		/* a NUL that would cut a resource name to ours */
		S_DOC1 "{\"EventId\":\"A\",\"EventType\":\"Preempt\","
		"\"Resources\":[\"trainer-7\\u0000x\"]}]}",
		/* trailing data, an empty or control-character EventId, a bad duration */
		"{\"DocumentIncarnation\":1,\"Events\":[]} x",
		S_DOC1 "{\"EventId\":\"\",\"EventType\":\"Preempt\","
		"\"Resources\":[]}]}",
		S_DOC1 "{\"EventId\":\"a\\nb\",\"EventType\":\"Preempt\","
		"\"Resources\":[]}]}",
		S_DOC1 "{\"EventId\":\"A\",\"EventType\":\"Preempt\","
		"\"Resources\":[],\"DurationInSeconds\":-2}]}",
		"{\"DocumentIncarnation\":1e300,\"Events\":[]}",
	};
	struct s_seen s;
	char why[256];
	int64_t inc;
	char *big;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		CU_ASSERT_EQUAL(s_parse(bad[i], &s, &inc, why, sizeof(why)), RR_ECORRUPT);
		CU_ASSERT_EQUAL(s.n, 0);
		CU_ASSERT_EQUAL(inc, -7);
		CU_ASSERT(why[0] != '\0');
	}
	/* The escaped backslash before u0000 makes it plain text, not a NUL. */
	CU_ASSERT_EQUAL(s_parse(S_DOC1 "{\"EventId\":\"A\","
				"\"EventType\":\"Preempt\",\"Resources\":[\"x\\\\u0000\"]}]}",
				&s, &inc, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(s.n, 0);
	CU_ASSERT_EQUAL(inc, 1);

	big = malloc(RR_AZURE_EVENTS_MAX + 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	memset(big, ' ', RR_AZURE_EVENTS_MAX + 1);
	big[RR_AZURE_EVENTS_MAX + 1] = '\0';
	CU_ASSERT_EQUAL(s_parse(big, &s, &inc, why, sizeof(why)), RR_ETOOBIG);
	free(big);
}

static void test_azure_parser_reports_our_events_with_their_fields(void)
{
	struct s_seen s;
	char why[256];
	int64_t inc;

	CU_ASSERT_EQUAL_FATAL(
		s_parse("{\"DocumentIncarnation\":42,\"Unknown\":{\"x\":[1]},\"Events\":["
			"{\"EventId\":\"A\",\"EventType\":\"Preempt\","
			"\"Resources\":[\"Trainer-7\"],"
			"\"NotBefore\":\"" S_NOT_BEFORE "\",\"DurationInSeconds\":30,\"New\":1},"
			"{\"EventId\":\"B\",\"EventType\":\"Reboot\",\"Resources\":[\"other\"]},"
			"{\"EventId\":\"C\",\"EventType\":\"Freeze\",\"Resources\":[\"trainer-7\"],"
			"\"NotBefore\":\"19 Sep 2016 18:29:47 GMT\"},"
			"{\"EventId\":\"D\",\"EventType\":\"Terminate\","
			"\"Resources\":[\"trainer-7\"],"
			"\"NotBefore\":\" \"}]}",
			&s, &inc, why, sizeof(why)),
		0);
	CU_ASSERT_EQUAL(inc, 42);
	CU_ASSERT_EQUAL_FATAL(s.n, 3);
	CU_ASSERT_STRING_EQUAL(s.ids[0], "A");
	CU_ASSERT_EQUAL(s.not_before[0], S_NOT_BEFORE_UNIX);
	CU_ASSERT_EQUAL(s.duration[0], 30);
	CU_ASSERT_STRING_EQUAL(s.ids[1], "C");
	CU_ASSERT_EQUAL(s.not_before[1], -1); /* not RFC 1123: no weekday */
	CU_ASSERT_EQUAL(s.duration[1], -1);
	CU_ASSERT_STRING_EQUAL(s.ids[2], "D");
	CU_ASSERT_EQUAL(s.not_before[2], 0);  /* blank */
}

static void test_azure_rfc1123_parser_edge_cases(void)
{
	static const struct {
		const char *text;
		int64_t unix_s;
	} good[] = {
		{ "Mon, 19 Sep 2016 18:29:47 GMT", 1474309787 },
		{ "Thu, 01 Jan 1970 00:00:00 GMT", 0 },
		{ "Mon, 29 Feb 2016 12:00:00 GMT", 1456747200 },  /* leap year */
		{ "Tue, 29 Feb 2000 00:00:00 GMT", 951782400 },   /* divisible by 400 */
		{ "Fri, 31 Dec 9999 23:59:59 GMT", 253402300799 },
		{ "Sun, 06 Nov 1994 08:49:37 GMT", 784111777 },   /* RFC 7231's example */
	};
	static const char *const bad[] = {
		"",
		"Mon, 19 Sep 2016 18:29:47",          /* no zone */
		"Mon, 19 Sep 2016 18:29:47 UTC",      /* not GMT */
		"Mon, 19 Sep 2016 18:29:47 GMT ",     /* trailing space */
		"Mon, 19 Sep 2016 18:29:47 GMTX",
		"Mon,  9 Sep 2016 18:29:47 GMT",      /* day not two digits */
		"Mon, 9 Sep 2016 18:29:47 GMT",
		"Tue, 19 Sep 2016 18:29:47 GMT",      /* wrong weekday */
		"Mon, 19 sep 2016 18:29:47 GMT",      /* month case */
		"Mon, 19 Sept 2016 18:29:47 GMT",
		"Tue, 29 Feb 2017 00:00:00 GMT",      /* not a leap year */
		"Mon, 29 Feb 2100 00:00:00 GMT",      /* divisible by 100 */
		"Thu, 31 Apr 2016 00:00:00 GMT",      /* April has 30 days */
		"Sat, 00 Jan 2000 00:00:00 GMT",
		"Sat, 01 Jan 2000 24:00:00 GMT",
		"Sat, 01 Jan 2000 23:60:00 GMT",
		"Sat, 01 Jan 2000 23:59:60 GMT",
		"Wed, 31 Dec 1969 23:59:59 GMT",      /* before 1970 */
		"Sat, 01 Jan 2000 1:00:00 GMT",
		"Sat, 01 Jan 2000 +1:00:00 GMT",
		"Sat, 01 Jan 20x0 01:00:00 GMT",
		"Saturday, 01 Jan 2000 01:00:00 GMT",
		"2016-09-19T18:29:47Z",
	};
	int64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = -1;
		CU_ASSERT_EQUAL(rr_rfc1123_to_unix(good[i].text, &v), 0);
		CU_ASSERT_EQUAL(v, good[i].unix_s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 12345;
		CU_ASSERT_EQUAL(rr_rfc1123_to_unix(bad[i], &v), RR_EINVAL);
		CU_ASSERT_EQUAL(v, 12345);
	}
	CU_ASSERT_EQUAL(rr_rfc1123_to_unix(NULL, &v), RR_EINVAL);
}

static CU_TestInfo s_tests[] = {
	{ "azure_requests_send_metadata_true_and_api_version",
	  test_azure_requests_send_metadata_true_and_api_version },
	{ "azure_wait_fetches_the_vm_name_itself", test_azure_wait_fetches_the_vm_name_itself },
	{ "azure_events_for_another_vm_are_ignored",
	  test_azure_events_for_another_vm_are_ignored },
	{ "azure_preempt_gives_a_notice_with_the_notbefore_deadline",
	  test_azure_preempt_gives_a_notice_with_the_notbefore_deadline },
	{ "azure_started_event_with_blank_notbefore_is_due_now",
	  test_azure_started_event_with_blank_notbefore_is_due_now },
	{ "azure_same_eventid_is_not_reported_twice",
	  test_azure_same_eventid_is_not_reported_twice },
	{ "azure_unchanged_incarnation_is_skipped", test_azure_unchanged_incarnation_is_skipped },
	{ "azure_two_events_give_two_notices_on_consecutive_calls",
	  test_azure_two_events_give_two_notices_on_consecutive_calls },
	{ "azure_freeze_is_ignored_and_redeploy_is_maintenance",
	  test_azure_freeze_is_ignored_and_redeploy_is_maintenance },
	{ "azure_ack_posts_the_exact_body_once", test_azure_ack_posts_the_exact_body_once },
	{ "azure_no_ack_without_azure_ack_or_a_preempt",
	  test_azure_no_ack_without_azure_ack_or_a_preempt },
	{ "azure_ack_refused_with_429_is_tried_again",
	  test_azure_ack_refused_with_429_is_tried_again },
	{ "azure_watch_approves_a_preempt_only_for_its_own_checkpoint",
	  test_azure_watch_approves_a_preempt_only_for_its_own_checkpoint },
	{ "azure_malformed_document_is_an_error_not_a_crash",
	  test_azure_malformed_document_is_an_error_not_a_crash },
	{ "azure_429_and_5xx_are_eio_with_why", test_azure_429_and_5xx_are_eio_with_why },
	{ "azure_poll_interval_and_stop", test_azure_poll_interval_and_stop },
	{ "azure_identity_fields", test_azure_identity_fields },
	{ "azure_parser_checks_the_whole_document_first",
	  test_azure_parser_checks_the_whole_document_first },
	{ "azure_parser_reports_our_events_with_their_fields",
	  test_azure_parser_reports_our_events_with_their_fields },
	{ "azure_rfc1123_parser_edge_cases", test_azure_rfc1123_parser_edge_cases },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("cloud_azure", s_tests)
