/* CUnit suite "cloud_gcp": the GCP notice provider (cloud/gcp.c) against the in-process
 * HTTP server (http_fixture.h) playing the metadata server (Google's "About VM metadata"
 * and "Preemptible VM instances" pages): every request must carry Metadata-Flavor: Google,
 * every answer carries it too, with an ETag, and a GET with
 * ?wait_for_change=true&last_etag=<current ETag> hangs until the value changes.
 *
 * The fixture's handler runs under the server's lock, so it must not block. A hanging GET
 * is played from a script instead: when the test has scheduled a change (s_schedule), the
 * handler answers the hanging GET with the new value, held back by delay_ms until the
 * moment of the change; with nothing scheduled it answers "no change" after hang_ms. */
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

#define S_ROOT "/computeMetadata/v1/"

enum { S_PRE, S_MAINT, S_NWATCH };

static const char *const s_watch_path[S_NWATCH] = { "instance/preempted",
						    "instance/maintenance-event" };
static const char *const s_etag_name[S_NWATCH] = { "pre", "maint" };

struct s_watch {
	const char *value;
	unsigned version;        /* the ETag is "<name>-<version>" */
	const char *next_value;  /* scheduled change, or NULL */
	int64_t change_at;       /* monotonic ms */
	int fail_503;            /* answer 503 this many times first */
	unsigned plain, hanging; /* GETs seen */
};

/* The fake metadata server. Guarded by mu: the test changes it while transfers run. */
struct s_gce {
	pthread_mutex_t mu;
	struct s_watch w[S_NWATCH];
	long hang_ms;            /* a hanging GET with nothing scheduled answers after this */
	int no_flavor;           /* answers lack Metadata-Flavor: Google */
	unsigned no_flavor_requests; /* requests that came without it */
	const char *id, *machine_type, *zone, *model, *preemptible; /* NULL: 404 */
};

static void s_etag(const struct s_gce *g, int i, char *out, size_t cap)
{
	snprintf(out, cap, "%s-%u", s_etag_name[i], g->w[i].version);
}

/* The value of query parameter name in q ("a=1&b=2"), copied into out, or 0. */
static int s_param(const char *q, const char *name, char *out, size_t cap)
{
	size_t n = strlen(name);

	while (q && *q) {
		const char *amp = strchr(q, '&');
		size_t len = amp ? (size_t)(amp - q) : strlen(q);
		if (len > n && strncmp(q, name, n) == 0 && q[n] == '=') {
			snprintf(out, cap, "%.*s", (int)(len - n - 1), q + n + 1);
			return 1;
		}
		q = amp ? amp + 1 : NULL;
	}
	return 0;
}

static void s_gce_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	struct s_gce *g = ud;
	const char *flavor = fx_header(req, "Metadata-Flavor");
	const char *path, *q, *value = NULL;
	char p[256], etag[64], last[64];
	int64_t now = rr_mono_ms();

	pthread_mutex_lock(&g->mu);
	if (!g->no_flavor)
		fx_resp_header(resp, "Metadata-Flavor", "Google");
	if (!flavor || strcmp(flavor, "Google") != 0) {
		g->no_flavor_requests++;
		fx_resp_text(resp, 403, "Missing Metadata-Flavor:Google header.");
		goto out;
	}
	if (strcmp(req->method, "GET") != 0 ||
	    strncmp(req->target, S_ROOT, strlen(S_ROOT)) != 0) {
		fx_resp_text(resp, 404, "");
		goto out;
	}
	path = req->target + strlen(S_ROOT);
	q = strchr(path, '?');
	snprintf(p, sizeof(p), "%.*s", (int)(q ? (size_t)(q - path) : strlen(path)), path);
	for (int i = 0; i < S_NWATCH; i++) {
		struct s_watch *w = &g->w[i];
		char wait[16];
		if (strcmp(p, s_watch_path[i]) != 0)
			continue;
		if (w->fail_503 > 0) {
			w->fail_503--;
			fx_resp_text(resp, 503, "");
			goto out;
		}
		if (w->next_value && now >= w->change_at) { /* the change is due */
			w->value = w->next_value;
			w->next_value = NULL;
			w->version++;
		}
		s_etag(g, i, etag, sizeof(etag));
		if (q && s_param(q + 1, "wait_for_change", wait, sizeof(wait)) &&
		    strcmp(wait, "true") == 0) {
			w->hanging++;
			if (s_param(q + 1, "last_etag", last, sizeof(last)) &&
			    strcmp(last, etag) == 0) {
				if (w->next_value) { /* answered at the moment of the change */
					resp->delay_ms = (long)(w->change_at - now);
					w->value = w->next_value;
					w->next_value = NULL;
					w->version++;
					s_etag(g, i, etag, sizeof(etag));
				} else {
					resp->delay_ms = g->hang_ms; /* timeout_sec: no change */
				}
			}
		} else {
			w->plain++;
		}
		fx_resp_header(resp, "ETag", "%s", etag);
		fx_resp_text(resp, 200, w->value);
		goto out;
	}
	if (strcmp(p, "instance/id") == 0)
		value = g->id;
	else if (strcmp(p, "instance/machine-type") == 0)
		value = g->machine_type;
	else if (strcmp(p, "instance/zone") == 0)
		value = g->zone;
	else if (strcmp(p, "instance/scheduling/provisioning-model") == 0)
		value = g->model;
	else if (strcmp(p, "instance/scheduling/preemptible") == 0)
		value = g->preemptible;
	if (value)
		fx_resp_text(resp, 200, value);
	else
		fx_resp_text(resp, 404, "");
out:
	pthread_mutex_unlock(&g->mu);
}

struct s_env {
	struct s_gce gce;
	struct fx_server srv;
	struct rr_http *http;
	struct rr_cloud_opts o;
	atomic_int stop;
	void *state;
	struct rr_notice n;
	char why[512];
};

static void s_setup_endpoint(struct s_env *e, const char *endpoint)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->gce.mu, NULL);
	e->gce.w[S_PRE].value = "FALSE";
	e->gce.w[S_MAINT].value = "NONE";
	e->gce.w[S_PRE].version = e->gce.w[S_MAINT].version = 1;
	e->gce.hang_ms = 30000;
	CU_ASSERT_EQUAL_FATAL(fx_server_start(&e->srv, s_gce_handler, &e->gce), 0);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &e->http), 0);
	e->o.http = e->http;
	e->o.endpoint = endpoint ? endpoint : e->srv.url;
	e->o.stop = &e->stop;
	CU_ASSERT_EQUAL_FATAL(rr_cloud_gcp.create(&e->o, &e->state), 0);
}

static void s_setup(struct s_env *e)
{
	s_setup_endpoint(e, NULL);
}

static void s_teardown(struct s_env *e)
{
	rr_cloud_gcp.destroy(e->state);
	rr_http_destroy(e->http);
	fx_server_stop(&e->srv);
	pthread_mutex_destroy(&e->gce.mu);
}

/* The value of watched path i becomes value in ms from now. */
static void s_schedule(struct s_env *e, int i, const char *value, long ms)
{
	pthread_mutex_lock(&e->gce.mu);
	e->gce.w[i].next_value = value;
	e->gce.w[i].change_at = rr_mono_ms() + ms;
	pthread_mutex_unlock(&e->gce.mu);
}

static struct s_watch s_watch_copy(struct s_env *e, int i)
{
	struct s_watch w;

	pthread_mutex_lock(&e->gce.mu);
	w = e->gce.w[i];
	pthread_mutex_unlock(&e->gce.mu);
	return w;
}

static int s_wait(struct s_env *e)
{
	memset(&e->n, 0xa5, sizeof(e->n));
	e->why[0] = '\0';
	return rr_cloud_gcp.wait(e->state, &e->n, e->why, sizeof(e->why));
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

static void s_stop_after(struct s_stopper *s, atomic_int *flag, long ms)
{
	s->flag = flag;
	s->ms = ms;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&s->thread, NULL, s_stopper_main, s), 0);
}

static void test_gcp_every_request_sends_metadata_flavor_google(void)
{
	struct rr_cloud_identity id;
	struct s_env e;

	s_setup(&e);
	e.gce.id = "42";
	e.gce.machine_type = "n1-standard-1";
	e.gce.zone = "us-east1-b";
	CU_ASSERT_EQUAL(rr_cloud_gcp.identity(e.state, &id, e.why, sizeof(e.why)), 0);
	s_schedule(&e, S_PRE, "TRUE", 200);
	CU_ASSERT_EQUAL(s_wait(&e), 1);
	CU_ASSERT(fx_server_nrequests(&e.srv) >= 8);
	for (size_t i = 0; i < fx_server_nrequests(&e.srv); i++) {
		const struct fx_request *r = fx_server_request(&e.srv, i);
		CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(r, "Metadata-Flavor"));
		CU_ASSERT_STRING_EQUAL(fx_header(r, "Metadata-Flavor"), "Google");
	}
	pthread_mutex_lock(&e.gce.mu);
	CU_ASSERT_EQUAL(e.gce.no_flavor_requests, 0);
	pthread_mutex_unlock(&e.gce.mu);
	s_teardown(&e);
}

static void test_gcp_answer_without_metadata_flavor_is_not_the_metadata_server(void)
{
	struct rr_cloud_identity id;
	struct s_env e;

	s_setup(&e);
	e.gce.no_flavor = 1;
	e.gce.w[S_PRE].value = "TRUE"; /* would be a notice, but the answer is not trusted */
	e.gce.id = "42";
	CU_ASSERT_EQUAL(s_wait(&e), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "Metadata-Flavor"));
	CU_ASSERT_EQUAL(rr_cloud_gcp.identity(e.state, &id, e.why, sizeof(e.why)), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "Metadata-Flavor"));
	CU_ASSERT_STRING_EQUAL(id.instance_id, "");
	s_teardown(&e);
}

static void test_gcp_first_plain_get_then_hanging_get_with_last_etag(void)
{
	const struct fx_request *r;
	struct s_env e;
	char want[256];

	s_setup(&e);
	s_schedule(&e, S_PRE, "TRUE", 300);
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	for (int i = 0; i < S_NWATCH; i++) {
		size_t seen = 0;
		snprintf(want, sizeof(want), "%s%s", S_ROOT, s_watch_path[i]);
		for (size_t k = 0; k < fx_server_nrequests(&e.srv); k++) {
			r = fx_server_request(&e.srv, k);
			if (strncmp(r->target, want, strlen(want)) != 0)
				continue;
			if (seen++ == 0) {
				CU_ASSERT_STRING_EQUAL(r->target, want);
			} else {
				char hang[256];
				snprintf(hang, sizeof(hang),
					 "%s?wait_for_change=true&last_etag=%s-1&timeout_sec=55",
					 want, s_etag_name[i]);
				CU_ASSERT_STRING_EQUAL(r->target, hang);
			}
		}
		CU_ASSERT_EQUAL(seen, 2);
	}
	s_teardown(&e);
}

static void test_gcp_preemption_wakes_the_hanging_get_with_a_30_s_deadline(void)
{
	struct s_env e;
	int64_t t0, t1, w0, w1;

	s_setup(&e);
	w0 = rr_wall_ms() / 1000;
	t0 = rr_mono_ms();
	s_schedule(&e, S_PRE, "TRUE", 400);
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	t1 = rr_mono_ms();
	w1 = rr_wall_ms() / 1000;
	CU_ASSERT(t1 - t0 >= 300);  /* it did wait for the change */
	CU_ASSERT(t1 - t0 < 3000);  /* and came back promptly after it */
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_EQUAL(e.n.source, RR_SOURCE_GCP);
	CU_ASSERT(e.n.received_unix >= w0 && e.n.received_unix <= w1);
	CU_ASSERT_EQUAL(e.n.deadline_unix, e.n.received_unix + 30);
	CU_ASSERT_EQUAL(s_watch_copy(&e, S_PRE).plain, 1);
	CU_ASSERT_EQUAL(s_watch_copy(&e, S_PRE).hanging, 1);
	CU_ASSERT_EQUAL(s_watch_copy(&e, S_MAINT).hanging, 1); /* both hang at once */
	s_teardown(&e);
}

static void test_gcp_preempted_already_true_at_start_is_a_notice(void)
{
	struct s_env e;
	int64_t t0;

	s_setup(&e);
	e.gce.w[S_PRE].value = "TRUE";
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL(s_wait(&e), 1);
	CU_ASSERT(rr_mono_ms() - t0 < 3000);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_EQUAL(e.n.deadline_unix, e.n.received_unix + 30);
	CU_ASSERT_EQUAL(s_watch_copy(&e, S_PRE).hanging, 0);
	s_teardown(&e);
}

static void test_gcp_preemption_is_reported_once_across_timeout_answers(void)
{
	struct s_stopper st;
	struct s_env e;

	s_setup(&e);
	e.gce.w[S_PRE].value = "TRUE";
	e.gce.hang_ms = 150; /* every hanging GET comes back "no change" soon */
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	s_stop_after(&st, &e.stop, 2500);
	CU_ASSERT_EQUAL(s_wait(&e), 0); /* TRUE stays TRUE: nothing new until the stop */
	pthread_join(st.thread, NULL);
	/* The wait went on through the timeout answers, at most one GET a second each. */
	CU_ASSERT(s_watch_copy(&e, S_PRE).hanging >= 2);
	CU_ASSERT(s_watch_copy(&e, S_PRE).hanging <= 4);
	s_teardown(&e);
}

static void test_gcp_maintenance_terminate_has_a_30_s_deadline(void)
{
	struct s_env e;

	s_setup(&e);
	s_schedule(&e, S_MAINT, "TERMINATE_ON_HOST_MAINTENANCE", 200);
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_MAINTENANCE);
	CU_ASSERT_EQUAL(e.n.source, RR_SOURCE_GCP);
	CU_ASSERT_EQUAL(e.n.deadline_unix, e.n.received_unix + 30);
	s_teardown(&e);
}

static void test_gcp_maintenance_migrate_has_no_deadline_and_each_change_counts(void)
{
	struct s_stopper st;
	struct s_env e;

	s_setup(&e);
	s_schedule(&e, S_MAINT, "MIGRATE_ON_HOST_MAINTENANCE", 200);
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_MAINTENANCE);
	CU_ASSERT_EQUAL(e.n.deadline_unix, 0);
	/* Back to NONE is no notice; a new event after it is one. */
	s_schedule(&e, S_MAINT, "NONE", 100);
	s_stop_after(&st, &e.stop, 1500);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	pthread_join(st.thread, NULL);
	e.stop = 0;
	s_schedule(&e, S_MAINT, "SHUTDOWN_ON_HOST_MAINTENANCE", 100);
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_MAINTENANCE);
	CU_ASSERT_EQUAL(e.n.deadline_unix, e.n.received_unix + 30);
	s_teardown(&e);
}

static void test_gcp_changes_on_both_paths_give_two_notices(void)
{
	struct s_env e;
	int64_t t0;
	int kinds = 0;

	s_setup(&e);
	s_schedule(&e, S_PRE, "TRUE", 300);
	s_schedule(&e, S_MAINT, "TERMINATE_ON_HOST_MAINTENANCE", 300);
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1);
	kinds |= 1 << e.n.kind;
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL_FATAL(s_wait(&e), 1); /* the other answer was not lost */
	CU_ASSERT(rr_mono_ms() - t0 < 3000);
	kinds |= 1 << e.n.kind;
	CU_ASSERT_EQUAL(kinds, (1 << RR_NOTICE_PREEMPT) | (1 << RR_NOTICE_MAINTENANCE));
	s_teardown(&e);
}

static void test_gcp_503_is_retried_after_a_short_pause(void)
{
	struct s_env e;
	int64_t t0;

	s_setup(&e);
	e.gce.w[S_PRE].value = "TRUE";
	e.gce.w[S_PRE].fail_503 = 2;
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL(s_wait(&e), 1);
	CU_ASSERT(rr_mono_ms() - t0 < 3000);
	CU_ASSERT_EQUAL(e.n.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_ROOT "instance/preempted"), 3);
	s_teardown(&e);
}

static void test_gcp_503_that_persists_is_eio_with_why(void)
{
	struct s_env e;
	size_t tries;
	int64_t t0;

	s_setup(&e);
	e.gce.w[S_PRE].fail_503 = 1000;
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL(s_wait(&e), RR_EIO);
	CU_ASSERT(rr_mono_ms() - t0 < 5000);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "503"));
	tries = fx_server_count(&e.srv, "GET", S_ROOT "instance/preempted");
	CU_ASSERT(tries >= 2 && tries <= 6);
	s_teardown(&e);
}

static void test_gcp_stop_flag_cuts_a_hanging_get_short(void)
{
	struct s_stopper st;
	struct s_env e;
	int64_t t0;

	s_setup(&e);
	t0 = rr_mono_ms();
	s_stop_after(&st, &e.stop, 300);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	CU_ASSERT(rr_mono_ms() - t0 < 5000);
	pthread_join(st.thread, NULL);
	CU_ASSERT_EQUAL(s_watch_copy(&e, S_PRE).hanging, 1);
	s_teardown(&e);
}

static void test_gcp_server_that_ignores_wait_for_change_is_not_hammered(void)
{
	struct s_stopper st;
	struct s_env e;

	s_setup(&e);
	e.gce.hang_ms = 0; /* "no change" at once, every time */
	s_stop_after(&st, &e.stop, 2500);
	CU_ASSERT_EQUAL(s_wait(&e), 0);
	pthread_join(st.thread, NULL);
	CU_ASSERT(s_watch_copy(&e, S_PRE).hanging <= 4);
	CU_ASSERT(s_watch_copy(&e, S_MAINT).hanging <= 4);
	s_teardown(&e);
}

static void test_gcp_server_not_listening_is_eio(void)
{
	struct rr_cloud_opts o;
	struct rr_http *http;
	struct rr_notice n;
	void *state;
	char url[64], why[512] = "";
	int port = fx_closed_port();

	CU_ASSERT_FATAL(port > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &http), 0);
	memset(&o, 0, sizeof(o));
	o.http = http;
	o.endpoint = url;
	CU_ASSERT_EQUAL_FATAL(rr_cloud_gcp.create(&o, &state), 0);
	CU_ASSERT_EQUAL(rr_cloud_gcp.wait(state, &n, why, sizeof(why)), RR_EIO);
	CU_ASSERT(why[0] != '\0');
	rr_cloud_gcp.destroy(state);
	rr_http_destroy(http);
}

static void test_gcp_identity_fields(void)
{
	struct rr_cloud_identity id;
	struct s_env e;

	s_setup(&e);
	e.gce.id = "4520031799277581759";
	e.gce.machine_type = "projects/123456789/machineTypes/n2-standard-8";
	e.gce.zone = "projects/123456789/zones/us-central1-a";
	e.gce.model = "SPOT";
	CU_ASSERT_EQUAL(rr_cloud_gcp.identity(e.state, &id, e.why, sizeof(e.why)), 0);
	CU_ASSERT_STRING_EQUAL(id.cloud, "gcp");
	CU_ASSERT_STRING_EQUAL(id.instance_id, "4520031799277581759");
	CU_ASSERT_STRING_EQUAL(id.instance_type, "n2-standard-8");
	CU_ASSERT_STRING_EQUAL(id.zone, "us-central1-a");
	CU_ASSERT_STRING_EQUAL(id.lifecycle, "spot");

	e.gce.model = "STANDARD";
	CU_ASSERT_EQUAL(rr_cloud_gcp.identity(e.state, &id, e.why, sizeof(e.why)), 0);
	CU_ASSERT_STRING_EQUAL(id.lifecycle, "on-demand");

	/* No provisioning-model (an older VM): the preemptible flag decides. */
	e.gce.model = NULL;
	e.gce.preemptible = "TRUE";
	CU_ASSERT_EQUAL(rr_cloud_gcp.identity(e.state, &id, e.why, sizeof(e.why)), 0);
	CU_ASSERT_STRING_EQUAL(id.lifecycle, "spot");
	e.gce.preemptible = "FALSE";
	CU_ASSERT_EQUAL(rr_cloud_gcp.identity(e.state, &id, e.why, sizeof(e.why)), 0);
	CU_ASSERT_STRING_EQUAL(id.lifecycle, "on-demand");
	e.gce.preemptible = NULL;
	CU_ASSERT_EQUAL(rr_cloud_gcp.identity(e.state, &id, e.why, sizeof(e.why)), 0);
	CU_ASSERT_STRING_EQUAL(id.lifecycle, "");
	s_teardown(&e);
}

static void test_gcp_endpoint_from_gce_metadata_host(void)
{
	const char *v = getenv("GCE_METADATA_HOST");
	char *saved = v ? strdup(v) : NULL;
	struct rr_cloud_identity id;
	struct s_env e;
	char host[64];

	s_setup(&e);
	snprintf(host, sizeof(host), "127.0.0.1:%d", e.srv.port);
	setenv("GCE_METADATA_HOST", host, 1);
	rr_cloud_gcp.destroy(e.state);
	e.o.endpoint = NULL;
	CU_ASSERT_EQUAL_FATAL(rr_cloud_gcp.create(&e.o, &e.state), 0);
	e.gce.id = "7";
	e.gce.machine_type = "e2-small";
	e.gce.zone = "europe-west4-b";
	CU_ASSERT_EQUAL(rr_cloud_gcp.identity(e.state, &id, e.why, sizeof(e.why)), 0);
	CU_ASSERT_STRING_EQUAL(id.instance_id, "7");
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_ROOT "instance/id"), 1);
	if (saved)
		setenv("GCE_METADATA_HOST", saved, 1);
	else
		unsetenv("GCE_METADATA_HOST");
	free(saved);
	s_teardown(&e);
}

static CU_TestInfo s_tests[] = {
	{ "gcp_every_request_sends_metadata_flavor_google",
	  test_gcp_every_request_sends_metadata_flavor_google },
	{ "gcp_answer_without_metadata_flavor_is_not_the_metadata_server",
	  test_gcp_answer_without_metadata_flavor_is_not_the_metadata_server },
	{ "gcp_first_plain_get_then_hanging_get_with_last_etag",
	  test_gcp_first_plain_get_then_hanging_get_with_last_etag },
	{ "gcp_preemption_wakes_the_hanging_get_with_a_30_s_deadline",
	  test_gcp_preemption_wakes_the_hanging_get_with_a_30_s_deadline },
	{ "gcp_preempted_already_true_at_start_is_a_notice",
	  test_gcp_preempted_already_true_at_start_is_a_notice },
	{ "gcp_preemption_is_reported_once_across_timeout_answers",
	  test_gcp_preemption_is_reported_once_across_timeout_answers },
	{ "gcp_maintenance_terminate_has_a_30_s_deadline",
	  test_gcp_maintenance_terminate_has_a_30_s_deadline },
	{ "gcp_maintenance_migrate_has_no_deadline_and_each_change_counts",
	  test_gcp_maintenance_migrate_has_no_deadline_and_each_change_counts },
	{ "gcp_changes_on_both_paths_give_two_notices",
	  test_gcp_changes_on_both_paths_give_two_notices },
	{ "gcp_503_is_retried_after_a_short_pause", test_gcp_503_is_retried_after_a_short_pause },
	{ "gcp_503_that_persists_is_eio_with_why", test_gcp_503_that_persists_is_eio_with_why },
	{ "gcp_stop_flag_cuts_a_hanging_get_short", test_gcp_stop_flag_cuts_a_hanging_get_short },
	{ "gcp_server_that_ignores_wait_for_change_is_not_hammered",
	  test_gcp_server_that_ignores_wait_for_change_is_not_hammered },
	{ "gcp_server_not_listening_is_eio", test_gcp_server_not_listening_is_eio },
	{ "gcp_identity_fields", test_gcp_identity_fields },
	{ "gcp_endpoint_from_gce_metadata_host", test_gcp_endpoint_from_gce_metadata_host },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("cloud_gcp", s_tests)
