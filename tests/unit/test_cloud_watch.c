/* CUnit suite "cloud_watch": the watcher thread (cloud/watch.c) with the AWS provider
 * against the in-process HTTP server (http_fixture.h) playing IMDSv2 (the EC2 user guide,
 * "Use IMDSv2"): notices reach the caller through the eventfd and rr_cloud_watch_next, the
 * identity and the settled flag become available, a failing service is retried without a
 * notice, and rr_cloud_watch_stop comes back promptly whatever the thread is doing.
 *
 * RR_CLOUD_AUTO reads the DMI strings under /sys/class/dmi/id first; on a machine without
 * that directory (a container) the probes of the fixture decide. */
#include <poll.h>
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
#include "watch_fixture.h"

#define S_MD "/latest/meta-data/"
#define S_SPOT_PATH S_MD "spot/instance-action"
#define S_SPOT "{\"action\":\"terminate\",\"time\":\"2026-01-01T00:02:00Z\"}"
#define S_SPOT_TIME_UNIX 1767225720

/* The fake IMDSv2. Guarded by mu: server threads read it while the watcher runs. */
struct s_ec2 {
	pthread_mutex_t mu;
	int fail_status;        /* nonzero: every request gets this */
	const char *spot, *rebalance; /* NULL: 404 */
	char valid[32];
	unsigned tokens;
};

static void s_ec2_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	struct s_ec2 *m = ud;
	const char *tok, *value = NULL;

	pthread_mutex_lock(&m->mu);
	if (m->fail_status) {
		fx_resp_text(resp, m->fail_status, "");
		goto out;
	}
	if (strcmp(req->method, "PUT") == 0 && strcmp(req->target, "/latest/api/token") == 0) {
		snprintf(m->valid, sizeof(m->valid), "tok-%u", ++m->tokens);
		fx_resp_text(resp, 200, m->valid);
		goto out;
	}
	tok = fx_header(req, "X-aws-ec2-metadata-token");
	if (strcmp(req->method, "GET") != 0 || !tok || strcmp(tok, m->valid) != 0) {
		fx_resp_text(resp, 401, "");
		goto out;
	}
	if (strcmp(req->target, S_SPOT_PATH) == 0)
		value = m->spot;
	else if (strcmp(req->target, S_MD "events/recommendations/rebalance") == 0)
		value = m->rebalance;
	else if (strcmp(req->target, S_MD "instance-id") == 0)
		value = "i-0123456789abcdef0";
	else if (strcmp(req->target, S_MD "instance-type") == 0)
		value = "g5.xlarge";
	else if (strcmp(req->target, S_MD "placement/availability-zone") == 0)
		value = "us-west-2b";
	else if (strcmp(req->target, S_MD "instance-life-cycle") == 0)
		value = "spot";
	fx_resp_text(resp, value ? 200 : 404, value ? value : "");
out:
	pthread_mutex_unlock(&m->mu);
}

struct s_env {
	struct s_ec2 ec2;
	struct fx_server srv;
	struct rr_http *http;
	struct rr_cloud_opts o;
	struct rr_cloud_watch *w;
};

static void s_setup(struct s_env *e, int64_t poll_ms)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->ec2.mu, NULL);
	CU_ASSERT_EQUAL_FATAL(fx_server_start(&e->srv, s_ec2_handler, &e->ec2), 0);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &e->http), 0);
	e->o.http = e->http;
	e->o.endpoint = e->srv.url;
	e->o.poll_interval_ms = poll_ms;
}

static void s_start(struct s_env *e, enum rr_cloud cloud)
{
	CU_ASSERT_EQUAL_FATAL(rr_cloud_watch_start(cloud, &e->o, &e->w), 0);
	CU_ASSERT_FATAL(rr_cloud_watch_fd(e->w) >= 0);
}

static void s_teardown(struct s_env *e)
{
	rr_cloud_watch_stop(e->w);
	rr_http_destroy(e->http);
	fx_server_stop(&e->srv);
	pthread_mutex_destroy(&e->ec2.mu);
}

static int s_settled_within(struct rr_cloud_watch *w, long ms)
{
	int64_t end = rr_mono_ms() + ms;

	while (!rr_cloud_watch_settled(w) && rr_mono_ms() < end)
		fx_sleep_ms(20);
	return rr_cloud_watch_settled(w);
}

/* Waits until the server has seen at least want requests of method to prefix. */
static int s_requests_within(struct s_env *e, const char *method, const char *prefix,
			     size_t want, long ms)
{
	int64_t end = rr_mono_ms() + ms;

	while (fx_server_count(&e->srv, method, prefix) < want && rr_mono_ms() < end)
		fx_sleep_ms(20);
	return fx_server_count(&e->srv, method, prefix) >= want;
}

static void test_watch_none_has_no_fd_no_notice_and_is_settled(void)
{
	struct rr_cloud_identity id;
	struct rr_cloud_watch *w = NULL;
	struct rr_cloud_opts o;
	struct rr_notice n;

	memset(&o, 0, sizeof(o));
	CU_ASSERT_EQUAL_FATAL(rr_cloud_watch_start(RR_CLOUD_NONE, &o, &w), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_EQUAL(rr_cloud_watch_fd(w), -1);
	CU_ASSERT_EQUAL(rr_cloud_watch_next(w, &n), 0);
	CU_ASSERT_EQUAL(rr_cloud_watch_settled(w), 1);
	CU_ASSERT_EQUAL(rr_cloud_watch_identity(w, &id), 0);
	rr_cloud_watch_durable(w, 1);
	rr_cloud_watch_stop(w);
	rr_cloud_watch_stop(NULL);
}

static void test_watch_aws_notice_arrives_on_the_eventfd_once(void)
{
	struct rr_notice n;
	struct s_env e;
	size_t seen;

	s_setup(&e, 100);
	e.ec2.spot = S_SPOT;
	s_start(&e, RR_CLOUD_AWS);
	CU_ASSERT_EQUAL_FATAL(wf_next_within(e.w, &n, 5000), 1);
	CU_ASSERT_EQUAL(n.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_EQUAL(n.source, RR_SOURCE_AWS);
	CU_ASSERT_EQUAL(n.deadline_unix, S_SPOT_TIME_UNIX);
	/* The provider looks again a few times and finds nothing new. */
	seen = fx_server_count(&e.srv, "GET", S_SPOT_PATH);
	CU_ASSERT(s_requests_within(&e, "GET", S_SPOT_PATH, seen + 3, 5000));
	CU_ASSERT_EQUAL(rr_cloud_watch_next(e.w, &n), 0);
	s_teardown(&e);
}

static void test_watch_aws_spot_and_rebalance_both_come_out_in_order(void)
{
	struct rr_notice n1, n2;
	struct s_env e;

	s_setup(&e, 60000); /* the second comes from the look again at once, not a poll */
	e.ec2.spot = S_SPOT;
	e.ec2.rebalance = "{\"noticeTime\":\"2026-01-01T00:00:00Z\"}";
	s_start(&e, RR_CLOUD_AWS);
	CU_ASSERT_EQUAL_FATAL(wf_next_within(e.w, &n1, 5000), 1);
	CU_ASSERT_EQUAL_FATAL(wf_next_within(e.w, &n2, 5000), 1);
	CU_ASSERT_EQUAL(n1.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_EQUAL(n2.kind, RR_NOTICE_REBALANCE);
	CU_ASSERT_EQUAL(rr_cloud_watch_next(e.w, &n1), 0);
	s_teardown(&e);
}

static void test_watch_aws_identity_becomes_known_and_the_watch_settles(void)
{
	struct rr_cloud_identity id;
	struct s_env e;

	s_setup(&e, 100);
	s_start(&e, RR_CLOUD_AWS);
	CU_ASSERT_EQUAL_FATAL(s_settled_within(e.w, 5000), 1);
	CU_ASSERT_EQUAL_FATAL(rr_cloud_watch_identity(e.w, &id), 1);
	CU_ASSERT_STRING_EQUAL(id.cloud, "aws");
	CU_ASSERT_STRING_EQUAL(id.instance_id, "i-0123456789abcdef0");
	CU_ASSERT_STRING_EQUAL(id.instance_type, "g5.xlarge");
	CU_ASSERT_STRING_EQUAL(id.zone, "us-west-2b");
	CU_ASSERT_STRING_EQUAL(id.lifecycle, "spot");
	s_teardown(&e);
}

static void test_watch_auto_detects_aws_from_the_metadata_service(void)
{
	struct rr_cloud_identity id;
	struct rr_notice n;
	struct s_env e;

	s_setup(&e, 100);
	e.ec2.spot = S_SPOT;
	s_start(&e, RR_CLOUD_AUTO);
	CU_ASSERT_EQUAL_FATAL(wf_next_within(e.w, &n, 5000), 1);
	CU_ASSERT_EQUAL(n.source, RR_SOURCE_AWS);
	CU_ASSERT_EQUAL(n.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_EQUAL_FATAL(s_settled_within(e.w, 5000), 1);
	CU_ASSERT_EQUAL_FATAL(rr_cloud_watch_identity(e.w, &id), 1);
	CU_ASSERT_STRING_EQUAL(id.cloud, "aws");
	CU_ASSERT_STRING_EQUAL(id.instance_id, "i-0123456789abcdef0");
	s_teardown(&e);
}

static void test_watch_auto_with_no_cloud_settles_without_a_notice(void)
{
	struct rr_cloud_identity id;
	struct rr_notice n;
	struct s_env e;

	s_setup(&e, 100);
	pthread_mutex_lock(&e.ec2.mu);
	e.ec2.fail_status = 404; /* nothing there */
	pthread_mutex_unlock(&e.ec2.mu);
	s_start(&e, RR_CLOUD_AUTO);
	CU_ASSERT_EQUAL_FATAL(s_settled_within(e.w, 5000), 1);
	CU_ASSERT_EQUAL(rr_cloud_watch_identity(e.w, &id), 0);
	CU_ASSERT_EQUAL(rr_cloud_watch_next(e.w, &n), 0);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 3); /* the probes, and nothing after */
	s_teardown(&e);
}

static void test_watch_failing_service_gives_no_notice_and_is_retried(void)
{
	struct rr_cloud_identity id;
	struct rr_notice n;
	struct s_env e;
	size_t before;
	int64_t t0;

	s_setup(&e, 100);
	pthread_mutex_lock(&e.ec2.mu);
	e.ec2.fail_status = 503;
	pthread_mutex_unlock(&e.ec2.mu);
	s_start(&e, RR_CLOUD_AWS);
	CU_ASSERT_EQUAL_FATAL(s_settled_within(e.w, 5000), 1); /* asked for, if not had */
	CU_ASSERT_EQUAL(rr_cloud_watch_identity(e.w, &id), 0);
	/* The watcher goes on past the first failure, after a backoff of about a second. */
	before = fx_server_nrequests(&e.srv);
	CU_ASSERT(s_requests_within(&e, NULL, NULL, before + 2, 10000));
	CU_ASSERT_EQUAL(rr_cloud_watch_next(e.w, &n), 0);
	t0 = rr_mono_ms();
	rr_cloud_watch_stop(e.w);
	e.w = NULL;
	CU_ASSERT(rr_mono_ms() - t0 < 5000);
	s_teardown(&e);
}

static void test_watch_stop_during_the_aws_poll_sleep_is_prompt(void)
{
	struct s_env e;
	int64_t t0;

	s_setup(&e, 60000);
	s_start(&e, RR_CLOUD_AWS);
	CU_ASSERT_EQUAL_FATAL(s_settled_within(e.w, 5000), 1);
	CU_ASSERT_FATAL(s_requests_within(&e, "GET", S_MD "events/maintenance/scheduled", 1,
					  5000));
	fx_sleep_ms(200); /* well into the minute until the next poll */
	t0 = rr_mono_ms();
	rr_cloud_watch_stop(e.w);
	e.w = NULL;
	CU_ASSERT(rr_mono_ms() - t0 < 5000);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_SPOT_PATH), 1);
	s_teardown(&e);
}

static void test_watch_durable_without_a_provider_ack_does_not_hold_stop(void)
{
	struct rr_notice n;
	struct s_env e;
	int64_t t0;

	s_setup(&e, 60000);
	e.ec2.spot = S_SPOT;
	s_start(&e, RR_CLOUD_AWS);
	CU_ASSERT_EQUAL_FATAL(wf_next_within(e.w, &n, 5000), 1);
	CU_ASSERT_EQUAL(n.seq, 1);
	CU_ASSERT_FATAL(s_requests_within(&e, "GET", S_MD "events/maintenance/scheduled", 1,
					  5000));
	/* The thread sleeps until the next poll a minute away, so the durable mark stays
	 * unconsumed; AWS has nothing to acknowledge, so stop must not wait out the grace
	 * period (3 s) that an Azure approval gets. */
	rr_cloud_watch_durable(e.w, n.seq);
	t0 = rr_mono_ms();
	rr_cloud_watch_stop(e.w);
	e.w = NULL;
	CU_ASSERT(rr_mono_ms() - t0 < 2500);
	s_teardown(&e);
}

static CU_TestInfo s_tests[] = {
	{ "watch_none_has_no_fd_no_notice_and_is_settled",
	  test_watch_none_has_no_fd_no_notice_and_is_settled },
	{ "watch_aws_notice_arrives_on_the_eventfd_once",
	  test_watch_aws_notice_arrives_on_the_eventfd_once },
	{ "watch_aws_spot_and_rebalance_both_come_out_in_order",
	  test_watch_aws_spot_and_rebalance_both_come_out_in_order },
	{ "watch_aws_identity_becomes_known_and_the_watch_settles",
	  test_watch_aws_identity_becomes_known_and_the_watch_settles },
	{ "watch_auto_detects_aws_from_the_metadata_service",
	  test_watch_auto_detects_aws_from_the_metadata_service },
	{ "watch_auto_with_no_cloud_settles_without_a_notice",
	  test_watch_auto_with_no_cloud_settles_without_a_notice },
	{ "watch_failing_service_gives_no_notice_and_is_retried",
	  test_watch_failing_service_gives_no_notice_and_is_retried },
	{ "watch_stop_during_the_aws_poll_sleep_is_prompt",
	  test_watch_stop_during_the_aws_poll_sleep_is_prompt },
	{ "watch_durable_without_a_provider_ack_does_not_hold_stop",
	  test_watch_durable_without_a_provider_ack_does_not_hold_stop },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("cloud_watch", s_tests)
