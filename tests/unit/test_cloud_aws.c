/* CUnit suite "cloud_aws": the AWS notice provider (cloud/aws.c) against the in-process
 * HTTP server (http_fixture.h) playing IMDSv2 (the EC2 user guide, "Use IMDSv2"): a session
 * token from PUT /latest/api/token, required as X-aws-ec2-metadata-token on every GET (401
 * without it); spot/instance-action, the rebalance recommendation and scheduled maintenance
 * under /latest/meta-data/, each 404 while there is nothing to say. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/clock.h"
#include "rr/cloud.h"
#include "rr/error.h"
#include "rr/http.h"
#include "rr/notice.h"

#include "cunit_main.h"
#include "http_fixture.h"

#define S_MD "/latest/meta-data/"
#define S_SPOT_PATH S_MD "spot/instance-action"
#define S_REBALANCE_PATH S_MD "events/recommendations/rebalance"
#define S_MAINT_PATH S_MD "events/maintenance/scheduled"
#define S_SPOT_TIME "2026-01-01T00:02:00Z"
#define S_SPOT_TIME_UNIX 1767225720
#define S_NOT_BEFORE "21 Jan 2019 09:00:43 GMT"
#define S_NOT_BEFORE_UNIX 1548061243
#define S_MAX_SPOT_GETS 16

/* The fake IMDSv2. Guarded by mu: the test changes it between calls while server threads
 * read it. A NULL body is a 404. */
struct s_ec2 {
	pthread_mutex_t mu;
	const char *spot, *rebalance, *maintenance;
	const char *instance_id, *instance_type, *zone, *lifecycle;
	int id_status;          /* nonzero: instance-id answers this instead */
	unsigned tokens;        /* tokens handed out: "tok-1", "tok-2", ... */
	char valid[32];
	unsigned unauthorised;  /* GETs that came without the valid token */
	int64_t spot_at[S_MAX_SPOT_GETS]; /* monotonic ms of each spot GET */
	unsigned nspot;
};

static void s_ec2_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	struct s_ec2 *m = ud;
	const char *tok, *value = NULL;
	int status = 200;

	pthread_mutex_lock(&m->mu);
	if (strcmp(req->method, "PUT") == 0 && strcmp(req->target, "/latest/api/token") == 0) {
		const char *ttl = fx_header(req, "X-aws-ec2-metadata-token-ttl-seconds");
		if (!ttl) {
			fx_resp_text(resp, 400, "missing ttl");
			goto out;
		}
		snprintf(m->valid, sizeof(m->valid), "tok-%u", ++m->tokens);
		fx_resp_header(resp, "X-aws-ec2-metadata-token-ttl-seconds", "%s", ttl);
		fx_resp_text(resp, 200, m->valid);
		goto out;
	}
	tok = fx_header(req, "X-aws-ec2-metadata-token");
	if (strcmp(req->method, "GET") != 0 || !tok || strcmp(tok, m->valid) != 0) {
		m->unauthorised++;
		fx_resp_text(resp, 401, "");
		goto out;
	}
	if (strcmp(req->target, S_SPOT_PATH) == 0) {
		if (m->nspot < S_MAX_SPOT_GETS)
			m->spot_at[m->nspot] = rr_mono_ms();
		m->nspot++;
		value = m->spot;
	} else if (strcmp(req->target, S_REBALANCE_PATH) == 0) {
		value = m->rebalance;
	} else if (strcmp(req->target, S_MAINT_PATH) == 0) {
		value = m->maintenance;
	} else if (strcmp(req->target, S_MD "instance-id") == 0) {
		value = m->instance_id;
		if (m->id_status)
			status = m->id_status;
	} else if (strcmp(req->target, S_MD "instance-type") == 0) {
		value = m->instance_type;
	} else if (strcmp(req->target, S_MD "placement/availability-zone") == 0) {
		value = m->zone;
	} else if (strcmp(req->target, S_MD "instance-life-cycle") == 0) {
		value = m->lifecycle;
	}
	if (status != 200)
		fx_resp_text(resp, status, "");
	else
		fx_resp_text(resp, value ? 200 : 404, value ? value : "");
out:
	pthread_mutex_unlock(&m->mu);
}

struct s_env {
	struct s_ec2 ec2;
	struct fx_server srv;
	struct rr_http *http;
	struct rr_cloud_opts o;
	atomic_int stop;
	void *state;
	struct rr_notice n;
	char why[512];
};

static void s_setup_poll(struct s_env *e, int64_t poll_ms)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->ec2.mu, NULL);
	CU_ASSERT_EQUAL_FATAL(fx_server_start(&e->srv, s_ec2_handler, &e->ec2), 0);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &e->http), 0);
	e->o.http = e->http;
	e->o.endpoint = e->srv.url;
	e->o.poll_interval_ms = poll_ms;
	e->o.stop = &e->stop;
	CU_ASSERT_EQUAL_FATAL(rr_cloud_aws.create(&e->o, &e->state), 0);
}

/* A short poll interval, so that calls one after another do not hold the suite up. */
static void s_setup(struct s_env *e)
{
	s_setup_poll(e, 50);
}

static void s_teardown(struct s_env *e)
{
	rr_cloud_aws.destroy(e->state);
	rr_http_destroy(e->http);
	fx_server_stop(&e->srv);
	pthread_mutex_destroy(&e->ec2.mu);
}

static int s_wait(struct s_env *e)
{
	memset(&e->n, 0xa5, sizeof(e->n));
	e->why[0] = '\0';
	return rr_cloud_aws.wait(e->state, &e->n, e->why, sizeof(e->why));
}

static void s_set(struct s_env *e, const char **field, const char *value)
{
	pthread_mutex_lock(&e->ec2.mu);
	*field = value;
	pthread_mutex_unlock(&e->ec2.mu);
}

/* Sets *flag after ms, from another thread (the watcher's stop). */
struct s_stopper {
	atomic_int *flag;
	long ms;
	pthread_t thread;
};

static void *s_stopper_main(void *p)
{
	struct s_stopper *s = p;

	fx_sleep_ms(s->ms);
	*s->flag = 1;
	return NULL;
}

static void test_aws_no_spot_notice_is_nothing_new(void)
{
	struct s_env e;

	s_setup(&e);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	/* All three places were looked at, each with the session token. */
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_SPOT_PATH), 1);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_REBALANCE_PATH), 1);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_MAINT_PATH), 1);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "PUT", "/latest/api/token"), 1);
	pthread_mutex_lock(&e.ec2.mu);
	CU_ASSERT_EQUAL(e.ec2.unauthorised, 0);
	pthread_mutex_unlock(&e.ec2.mu);
	s_teardown(&e);
}

static void test_aws_spot_terminate_is_a_preempt_notice_with_its_time(void)
{
	struct s_env e;
	int64_t w0, w1;

	s_setup(&e);
	e.ec2.spot = "{\"action\":\"terminate\",\"time\":\"" S_SPOT_TIME "\"}";
	w0 = rr_wall_ms() / 1000;
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	w1 = rr_wall_ms() / 1000;
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_EQUAL(e.n.source, RR_SOURCE_AWS);
	CU_ASSERT_EQUAL(e.n.deadline_unix, S_SPOT_TIME_UNIX);
	CU_ASSERT(e.n.received_unix >= w0 && e.n.received_unix <= w1);
	s_teardown(&e);
}

static void test_aws_same_spot_action_is_reported_once(void)
{
	struct s_env e;

	s_setup(&e);
	e.ec2.spot = "{\"action\":\"terminate\",\"time\":\"" S_SPOT_TIME "\"}";
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_SPOT_PATH), 3); /* it did look */
	s_teardown(&e);
}

static void test_aws_spot_action_with_a_new_time_is_reported_again(void)
{
	struct s_env e;

	s_setup(&e);
	e.ec2.spot = "{\"action\":\"terminate\",\"time\":\"" S_SPOT_TIME "\"}";
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	s_set(&e, &e.ec2.spot, "{\"action\":\"terminate\",\"time\":\"2026-01-01T00:05:00Z\"}");
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_EQUAL(e.n.deadline_unix, S_SPOT_TIME_UNIX + 180);
	s_teardown(&e);
}

static void test_aws_spot_stop_and_hibernate_are_preempt_notices(void)
{
	static const char *const bodies[] = {
		"{\"action\": \"stop\", \"time\": \"2026-01-01T00:02:00Z\"}",
		"{\"action\": \"hibernate\", \"time\": \"2026-01-01T00:02:00Z\"}",
	};

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		struct s_env e;
		s_setup(&e);
		e.ec2.spot = bodies[i];
		CU_ASSERT_EQUAL(s_wait(&e), 1);
		CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_PREEMPT);
		CU_ASSERT_EQUAL(e.n.source, RR_SOURCE_AWS);
		CU_ASSERT_EQUAL(e.n.deadline_unix, S_SPOT_TIME_UNIX);
		s_teardown(&e);
	}
}

static void test_aws_malformed_spot_answer_is_ecorrupt_with_why(void)
{
	static const char *const bodies[] = {
		"{\"action\":\"terminate\",\"time\":",           /* cut short */
		"{\"action\":\"terminate\"}",                     /* no time */
		"{\"action\":\"terminate\",\"time\":\"soon\"}",   /* not a time */
		"terminate",                                      /* not JSON */
	};

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		struct s_env e;
		s_setup(&e);
		e.ec2.spot = bodies[i];
		CU_ASSERT_EQUAL(s_wait(&e), RR_ECORRUPT);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "spot/instance-action"));
		s_teardown(&e);
	}
}

static void test_aws_rebalance_recommendation_is_reported_once(void)
{
	struct s_env e;

	s_setup(&e);
	e.ec2.rebalance = "{\"noticeTime\": \"2026-01-01T00:00:00Z\"}";
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_REBALANCE);
	CU_ASSERT_EQUAL(e.n.source, RR_SOURCE_AWS);
	CU_ASSERT_EQUAL(e.n.deadline_unix, 0); /* checkpoint now, training goes on */
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	s_teardown(&e);
}

/* amazon-ec2-metadata-mock writes each request's time into noticeTime: a recommendation that
 * stands is one notice however its time moves; after a 404 the next one is new. */
static void test_aws_rebalance_with_a_moving_notice_time_is_one_notice_until_gone(void)
{
	struct s_env e;

	s_setup(&e);
	e.ec2.rebalance = "{\"noticeTime\": \"2026-01-01T00:00:00Z\"}";
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	s_set(&e, &e.ec2.rebalance, "{\"noticeTime\": \"2026-01-01T00:00:02Z\"}");
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	s_set(&e, &e.ec2.rebalance, "{\"noticeTime\": \"2026-01-01T00:00:04Z\"}");
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	s_set(&e, &e.ec2.rebalance, NULL);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	s_set(&e, &e.ec2.rebalance, "{\"noticeTime\": \"2026-01-01T01:00:00Z\"}");
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_REBALANCE);
	s_teardown(&e);
}

static void test_aws_scheduled_maintenance_has_its_not_before_deadline(void)
{
	struct s_env e;

	s_setup(&e);
	e.ec2.maintenance = "[{\"NotBefore\": \"" S_NOT_BEFORE "\", \"Code\": "
			    "\"system-reboot\", \"Description\": \"scheduled reboot\", "
			    "\"EventId\": \"instance-event-0d59937288b749b32\", "
			    "\"NotAfter\": \"21 Jan 2019 09:17:23 GMT\", \"State\": "
			    "\"active\"}]";
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_MAINTENANCE);
	CU_ASSERT_EQUAL(e.n.source, RR_SOURCE_AWS);
	CU_ASSERT_EQUAL(e.n.deadline_unix, S_NOT_BEFORE_UNIX);
	s_teardown(&e);
}

static void test_aws_same_maintenance_event_is_reported_once(void)
{
	struct s_env e;

	s_setup(&e);
	e.ec2.maintenance = "[{\"NotBefore\": \"" S_NOT_BEFORE "\", \"Code\": \"system-reboot\", "
			    "\"EventId\": \"instance-event-1\", \"State\": \"active\"}]";
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	/* A second event next to the first is new. */
	s_set(&e, &e.ec2.maintenance,
	      "[{\"NotBefore\": \"" S_NOT_BEFORE "\", \"EventId\": \"instance-event-1\", "
	      "\"State\": \"active\"}, {\"NotBefore\": \"22 Jan 2019 10:00:00 GMT\", "
	      "\"EventId\": \"instance-event-2\", \"State\": \"active\"}]");
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_MAINTENANCE);
	CU_ASSERT_EQUAL(e.n.deadline_unix, S_NOT_BEFORE_UNIX + 86400 + 3600 - 43);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	s_teardown(&e);
}

/* More events than the 32 remembered, one after another over an instance's life: each is
 * reported once (the 33rd was reported at every poll while it stood, 7.5 a second). */
static void test_aws_maintenance_events_past_the_memory_are_reported_once(void)
{
	static char bodies[40][200];
	struct s_env e;

	s_setup_poll(&e, 5);
	for (int i = 0; i < 40; i++) {
		snprintf(bodies[i], sizeof(bodies[i]),
			 "[{\"NotBefore\": \"" S_NOT_BEFORE "\", \"EventId\": "
			 "\"instance-event-%d\", \"State\": \"active\"}]", i);
		s_set(&e, &e.ec2.maintenance, bodies[i]);
		CU_ASSERT_EQUAL(s_wait(&e), 1);
		CU_ASSERT_EQUAL(s_wait(&e), 0);
		CU_ASSERT_EQUAL(s_wait(&e), 0);
	}
	s_teardown(&e);
}

static void test_aws_canceled_and_completed_maintenance_is_ignored(void)
{
	struct s_env e;

	s_setup(&e);
	e.ec2.maintenance = "[{\"NotBefore\": \"" S_NOT_BEFORE "\", \"EventId\": \"instance-event-1\","
			    " \"State\": \"canceled\"}, {\"NotBefore\": \"" S_NOT_BEFORE "\", "
			    "\"EventId\": \"instance-event-2\", \"State\": \"completed\"}]";
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_MAINT_PATH), 1);
	s_teardown(&e);
}

/* What AWS (and its metadata mock) sends beyond the members read is accepted: AEMM's
 * scheduled events carry "NotBeforeDeadline", spot answers may grow members. */
static void test_aws_unknown_members_are_accepted(void)
{
	struct s_env e;

	s_setup(&e);
	e.ec2.spot = "{\"action\": \"terminate\", \"time\": \"2026-01-01T00:02:00Z\", "
		     "\"reason\": {\"code\": 7}}";
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.deadline_unix, S_SPOT_TIME_UNIX);
	s_teardown(&e);

	s_setup(&e);
	e.ec2.maintenance = "[{\"NotBefore\": \"" S_NOT_BEFORE "\", \"Code\": \"system-reboot\", "
			    "\"EventId\": \"instance-event-1\", \"NotBeforeDeadline\": "
			    "\"31 Jan 2019 09:00:43 GMT\", \"State\": \"active\"}]";
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_MAINTENANCE);
	CU_ASSERT_EQUAL(e.n.deadline_unix, S_NOT_BEFORE_UNIX);
	s_teardown(&e);
}

/* A member read that is there twice (JSON readers disagree on which counts) or of another
 * type is refused with a reason; so is a scheduled event that is not an object. Before
 * rr_json these were read loosely: the first "action", a numeric EventId as none. */
static void test_aws_duplicate_and_mistyped_members_are_ecorrupt_with_why(void)
{
	static const struct {
		const char *spot, *rebalance, *maintenance, *why;
	} bad[] = {
		{ "{\"action\":\"stop\",\"action\":\"terminate\",\"time\":\"2026-01-01T00:02:00Z\"}",
		  NULL, NULL,
		  "IMDS spot/instance-action is not {\"action\", \"time\"} JSON (\"action\" "
		  "appears twice)" },
		{ "{\"action\":[\"terminate\"],\"time\":\"2026-01-01T00:02:00Z\"}", NULL, NULL,
		  "(\"action\" is not a string)" },
		{ "{\"action\":\"terminate\",\"time\":\"2026-01-01T00:02:00Z\"} x", NULL, NULL,
		  "(it has data after its JSON value (at byte 53))" },
		{ NULL, "{\"noticeTime\":\"2026-01-01T00:00:00Z\",\"noticeTime\":\"x\"}", NULL,
		  "IMDS rebalance recommendation is not {\"noticeTime\"} JSON (\"noticeTime\" "
		  "appears twice)" },
		{ NULL, NULL, "[{\"EventId\":\"instance-event-1\",\"State\":\"active\","
			      "\"State\":\"canceled\"}]",
		  "IMDS scheduled maintenance [0]: \"State\" appears twice" },
		{ NULL, NULL, "[{\"EventId\":\"instance-event-1\"},{\"EventId\":42}]",
		  "IMDS scheduled maintenance [1]: \"EventId\" is not a string" },
		{ NULL, NULL, "[\"instance-event-1\"]",
		  "IMDS scheduled maintenance [0]: is not an object" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct s_env e;
		s_setup(&e);
		e.ec2.spot = bad[i].spot;
		e.ec2.rebalance = bad[i].rebalance;
		e.ec2.maintenance = bad[i].maintenance;
		CU_ASSERT_EQUAL(s_wait(&e), RR_ECORRUPT);
		if (!strstr(e.why, bad[i].why))
			fprintf(stderr, "case %zu: %s\n", i, e.why);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.why, bad[i].why));
		s_teardown(&e);
	}
}

static void test_aws_spot_and_rebalance_together_come_one_after_the_other_at_once(void)
{
	struct s_env e;
	int64_t t0;

	s_setup_poll(&e, 60000); /* a second poll on schedule would take a minute */
	e.ec2.spot = "{\"action\":\"terminate\",\"time\":\"" S_SPOT_TIME "\"}";
	e.ec2.rebalance = "{\"noticeTime\":\"2026-01-01T00:00:00Z\"}";
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_PREEMPT);
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT(rr_mono_ms() - t0 < 5000);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_REBALANCE);
	s_teardown(&e);
}

static void test_aws_imds_not_listening_is_an_error_with_why(void)
{
	struct rr_cloud_opts o;
	struct rr_http *http;
	struct rr_notice n;
	void *state;
	char url[64], why[512] = "";
	int port = fx_closed_port(), rc;

	CU_ASSERT_FATAL(port > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &http), 0);
	memset(&o, 0, sizeof(o));
	o.http = http;
	o.endpoint = url;
	CU_ASSERT_EQUAL_FATAL(rr_cloud_aws.create(&o, &state), 0);
	rc = rr_cloud_aws.wait(state, &n, why, sizeof(why));
	CU_ASSERT(rc < 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, url));
	rr_cloud_aws.destroy(state);
	rr_http_destroy(http);
}

static void test_aws_identity_fields(void)
{
	struct rr_cloud_identity id;
	struct s_env e;

	s_setup(&e);
	e.ec2.instance_id = "i-0123456789abcdef0";
	e.ec2.instance_type = "p4d.24xlarge";
	e.ec2.zone = "us-east-1a\n";
	e.ec2.lifecycle = "spot";
	CU_ASSERT_EQUAL(rr_cloud_aws.identity(e.state, &id, e.why, sizeof(e.why)), 0);
	CU_ASSERT_STRING_EQUAL(id.cloud, "aws");
	CU_ASSERT_STRING_EQUAL(id.instance_id, "i-0123456789abcdef0");
	CU_ASSERT_STRING_EQUAL(id.instance_type, "p4d.24xlarge");
	CU_ASSERT_STRING_EQUAL(id.zone, "us-east-1a");
	CU_ASSERT_STRING_EQUAL(id.lifecycle, "spot");
	s_teardown(&e);
}

static void test_aws_identity_missing_field_is_empty_and_no_error(void)
{
	struct rr_cloud_identity id;
	struct s_env e;

	s_setup(&e);
	e.ec2.instance_id = "i-0123456789abcdef0";
	e.ec2.instance_type = "m5.large";
	e.ec2.zone = "eu-west-1b";
	/* instance-life-cycle: 404 */
	CU_ASSERT_EQUAL(rr_cloud_aws.identity(e.state, &id, e.why, sizeof(e.why)), 0);
	CU_ASSERT_STRING_EQUAL(id.instance_id, "i-0123456789abcdef0");
	CU_ASSERT_STRING_EQUAL(id.lifecycle, "");
	s_teardown(&e);
}

static void test_aws_identity_failure_keeps_its_why(void)
{
	struct rr_cloud_identity id;
	struct s_env e;

	s_setup(&e);
	e.ec2.id_status = 503; /* the first field fails, the ones after it answer */
	e.ec2.instance_type = "m5.large";
	e.ec2.zone = "eu-west-1b";
	e.ec2.lifecycle = "on-demand";
	CU_ASSERT(rr_cloud_aws.identity(e.state, &id, e.why, sizeof(e.why)) < 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "instance-id"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "503"));
	CU_ASSERT_STRING_EQUAL(id.instance_id, "");
	CU_ASSERT_STRING_EQUAL(id.instance_type, "m5.large");
	s_teardown(&e);
}

static void test_aws_poll_interval_is_respected(void)
{
	struct s_env e;
	int64_t gap;

	s_setup_poll(&e, 300);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	pthread_mutex_lock(&e.ec2.mu);
	CU_ASSERT_EQUAL_FATAL(e.ec2.nspot, 2);
	gap = e.ec2.spot_at[1] - e.ec2.spot_at[0];
	pthread_mutex_unlock(&e.ec2.mu);
	/* The server's arrival times: the first request can reach it late on a loaded machine
	 * (under TSan, beside other tests, a gap of under 250 ms was seen), so half the interval
	 * is asked, which a poller that did not wait (a gap of a few ms) still fails. */
	CU_ASSERT(gap >= 150);
	s_teardown(&e);
}

static void test_aws_stop_flag_ends_the_wait_promptly(void)
{
	struct s_stopper st;
	struct s_env e;
	int64_t t0;

	s_setup_poll(&e, 60000);
	CU_ASSERT_EQUAL(s_wait(&e), 0); /* the first poll is at once */
	st.flag = &e.stop;
	st.ms = 200;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&st.thread, NULL, s_stopper_main, &st), 0);
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL(s_wait(&e), 0); /* in the minute's sleep until the stop */
	CU_ASSERT(rr_mono_ms() - t0 < 5000);
	pthread_join(st.thread, NULL);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_SPOT_PATH), 1);
	/* Already stopped: no request at all. */
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_SPOT_PATH), 1);
	s_teardown(&e);
}

static CU_TestInfo s_tests[] = {
	{ "aws_no_spot_notice_is_nothing_new", test_aws_no_spot_notice_is_nothing_new },
	{ "aws_spot_terminate_is_a_preempt_notice_with_its_time",
	  test_aws_spot_terminate_is_a_preempt_notice_with_its_time },
	{ "aws_same_spot_action_is_reported_once", test_aws_same_spot_action_is_reported_once },
	{ "aws_spot_action_with_a_new_time_is_reported_again",
	  test_aws_spot_action_with_a_new_time_is_reported_again },
	{ "aws_spot_stop_and_hibernate_are_preempt_notices",
	  test_aws_spot_stop_and_hibernate_are_preempt_notices },
	{ "aws_malformed_spot_answer_is_ecorrupt_with_why",
	  test_aws_malformed_spot_answer_is_ecorrupt_with_why },
	{ "aws_rebalance_recommendation_is_reported_once",
	  test_aws_rebalance_recommendation_is_reported_once },
	{ "aws_rebalance_with_a_moving_notice_time_is_one_notice_until_gone",
	  test_aws_rebalance_with_a_moving_notice_time_is_one_notice_until_gone },
	{ "aws_scheduled_maintenance_has_its_not_before_deadline",
	  test_aws_scheduled_maintenance_has_its_not_before_deadline },
	{ "aws_same_maintenance_event_is_reported_once",
	  test_aws_same_maintenance_event_is_reported_once },
	{ "aws_maintenance_events_past_the_memory_are_reported_once",
	  test_aws_maintenance_events_past_the_memory_are_reported_once },
	{ "aws_canceled_and_completed_maintenance_is_ignored",
	  test_aws_canceled_and_completed_maintenance_is_ignored },
	{ "aws_unknown_members_are_accepted", test_aws_unknown_members_are_accepted },
	{ "aws_duplicate_and_mistyped_members_are_ecorrupt_with_why",
	  test_aws_duplicate_and_mistyped_members_are_ecorrupt_with_why },
	{ "aws_spot_and_rebalance_together_come_one_after_the_other_at_once",
	  test_aws_spot_and_rebalance_together_come_one_after_the_other_at_once },
	{ "aws_imds_not_listening_is_an_error_with_why",
	  test_aws_imds_not_listening_is_an_error_with_why },
	{ "aws_identity_fields", test_aws_identity_fields },
	{ "aws_identity_missing_field_is_empty_and_no_error",
	  test_aws_identity_missing_field_is_empty_and_no_error },
	{ "aws_identity_failure_keeps_its_why", test_aws_identity_failure_keeps_its_why },
	{ "aws_poll_interval_is_respected", test_aws_poll_interval_is_respected },
	{ "aws_stop_flag_ends_the_wait_promptly", test_aws_stop_flag_ends_the_wait_promptly },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("cloud_aws", s_tests)
