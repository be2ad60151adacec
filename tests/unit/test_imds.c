/* CUnit suite "imds": the IMDSv2 client (storage/net/imds.c) against the in-process HTTP
 * server (http_fixture.h) playing the metadata service the way AEMM -I does (the EC2 user
 * guide, "Use IMDSv2"): a token from PUT /latest/api/token, required on every GET, 401 for
 * a wrong or expired one. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/buf.h"
#include "rr/clock.h"
#include "rr/error.h"
#include "rr/http.h"
#include "rr/imds.h"

#include "cunit_main.h"
#include "http_fixture.h"

/* The fake metadata service. Handler calls are serialised by the fixture. */
struct s_meta {
	int put_status;      /* answer to the token PUT (200) */
	long put_delay_ms;   /* hold the PUT answer this long */
	long put_ttl_echo;   /* TTL echoed on the PUT answer (0: the one asked for) */
	int get_status;      /* answer to an authorised GET (200) */
	const char *get_body;
	int always_401;      /* refuse every GET as if the token were bad */
	unsigned tokens;     /* tokens handed out: "token-1", "token-2", ... */
	char valid[32];      /* the token GETs must carry ("" after s_expire) */
};

static void s_meta_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	struct s_meta *m = ud;
	const char *tok;

	if (strcmp(req->method, "PUT") == 0 && strcmp(req->target, "/latest/api/token") == 0) {
		const char *ttl = fx_header(req, "X-aws-ec2-metadata-token-ttl-seconds");
		resp->delay_ms = m->put_delay_ms;
		if (!ttl) {
			fx_resp_text(resp, 400, "missing ttl");
			return;
		}
		if (m->put_status && m->put_status != 200) {
			fx_resp_text(resp, m->put_status, "no");
			return;
		}
		snprintf(m->valid, sizeof(m->valid), "token-%u", ++m->tokens);
		if (m->put_ttl_echo)
			fx_resp_header(resp, "X-aws-ec2-metadata-token-ttl-seconds", "%ld",
				       m->put_ttl_echo);
		else
			fx_resp_header(resp, "X-aws-ec2-metadata-token-ttl-seconds", "%s", ttl);
		fx_resp_text(resp, 200, m->valid);
		return;
	}
	if (strcmp(req->method, "GET") != 0) {
		fx_resp_text(resp, 405, "");
		return;
	}
	tok = fx_header(req, "X-aws-ec2-metadata-token");
	if (m->always_401 || !tok || !m->valid[0] || strcmp(tok, m->valid) != 0) {
		fx_resp_text(resp, 401, "");
		return;
	}
	fx_resp_text(resp, m->get_status ? m->get_status : 200,
		     m->get_body ? m->get_body : "ok");
}

struct s_env {
	struct s_meta meta;
	struct fx_server srv;
	struct rr_http *http;
	struct rr_imds *imds;
	struct rr_buf out;
	char why[512];
	long status;
};

static void s_setup(struct s_env *e)
{
	memset(e, 0, sizeof(*e));
	CU_ASSERT_EQUAL_FATAL(fx_server_start(&e->srv, s_meta_handler, &e->meta), 0);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &e->http), 0);
	CU_ASSERT_EQUAL_FATAL(rr_imds_new(e->http, e->srv.url, &e->imds), 0);
	rr_buf_init(&e->out, 1 << 16);
}

static void s_teardown(struct s_env *e)
{
	rr_buf_free(&e->out);
	rr_imds_destroy(e->imds);
	rr_http_destroy(e->http);
	fx_server_stop(&e->srv);
}

static int s_get(struct s_env *e, const char *path, long timeout_ms)
{
	rr_buf_reset(&e->out);
	e->why[0] = '\0';
	return rr_imds_get(e->imds, path, &e->out, timeout_ms, &e->status, e->why, sizeof(e->why));
}

static void test_get_sends_the_token_from_the_put(void)
{
	struct s_env e;
	const struct fx_request *put, *get;

	s_setup(&e);
	e.meta.get_body = "i-0123456789";
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 0), 0);
	CU_ASSERT_EQUAL(e.status, 200);
	CU_ASSERT_STRING_EQUAL((const char *)e.out.data, "i-0123456789");
	CU_ASSERT_EQUAL_FATAL(fx_server_nrequests(&e.srv), 2);
	put = fx_server_request(&e.srv, 0);
	get = fx_server_request(&e.srv, 1);
	CU_ASSERT_STRING_EQUAL(put->method, "PUT");
	CU_ASSERT_STRING_EQUAL(put->target, "/latest/api/token");
	CU_ASSERT_STRING_EQUAL(get->method, "GET");
	CU_ASSERT_STRING_EQUAL(get->target, "/latest/meta-data/instance-id");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(get, "X-aws-ec2-metadata-token"));
	CU_ASSERT_STRING_EQUAL(fx_header(get, "X-aws-ec2-metadata-token"), "token-1");
	s_teardown(&e);
}

static void test_token_put_asks_for_a_21600_s_ttl_without_forwarded_for(void)
{
	struct s_env e;
	const struct fx_request *put;

	s_setup(&e);
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 0), 0);
	put = fx_server_last(&e.srv, "/latest/api/token");
	CU_ASSERT_PTR_NOT_NULL_FATAL(put);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(put, "X-aws-ec2-metadata-token-ttl-seconds"));
	CU_ASSERT_STRING_EQUAL(fx_header(put, "X-aws-ec2-metadata-token-ttl-seconds"), "21600");
	/* IMDS rejects a token PUT that carries X-Forwarded-For. */
	CU_ASSERT_PTR_NULL(fx_header(put, "X-Forwarded-For"));
	s_teardown(&e);
}

static void test_leading_slash_of_the_path_is_ignored(void)
{
	struct s_env e;

	s_setup(&e);
	CU_ASSERT_EQUAL(s_get(&e, "/meta-data/instance-id", 0), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_server_last(&e.srv, "/latest/meta-data/"));
	CU_ASSERT_STRING_EQUAL(fx_server_last(&e.srv, "/latest/meta-data/")->target,
			       "/latest/meta-data/instance-id");
	s_teardown(&e);
}

static void test_token_is_reused_across_gets(void)
{
	struct s_env e;

	s_setup(&e);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 0), 0);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "PUT", "/latest/api/token"), 1);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", NULL), 3);
	s_teardown(&e);
}

static void test_401_fetches_a_new_token_once_then_succeeds(void)
{
	struct s_env e;
	const struct fx_request *get;

	s_setup(&e);
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 0), 0);
	e.meta.valid[0] = '\0'; /* the service forgets the token (expiry, restart) */
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 0), 0);
	CU_ASSERT_EQUAL(e.status, 200);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "PUT", NULL), 2);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", NULL), 3);
	get = fx_server_last(&e.srv, "/latest/meta-data/");
	CU_ASSERT_STRING_EQUAL(fx_header(get, "X-aws-ec2-metadata-token"), "token-2");
	s_teardown(&e);
}

static void test_401_with_the_new_token_too_is_eacces_without_more_tries(void)
{
	struct s_env e;

	s_setup(&e);
	e.meta.always_401 = 1;
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 0), RR_EACCES);
	CU_ASSERT_EQUAL(e.status, 401);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "PUT", NULL), 2);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", NULL), 2);
	CU_ASSERT_PTR_NULL(strstr(e.why, "token-")); /* the token is not in the reason */
	s_teardown(&e);
}

static void test_404_is_enoent_with_the_status(void)
{
	struct s_env e;

	s_setup(&e);
	e.meta.get_status = 404;
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/spot/instance-action", 0), RR_ENOENT);
	CU_ASSERT_EQUAL(e.status, 404);
	CU_ASSERT_EQUAL(e.out.len, 0);
	s_teardown(&e);
}

static void test_403_on_get_is_eacces(void)
{
	struct s_env e;

	s_setup(&e);
	e.meta.get_status = 403;
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 0), RR_EACCES);
	CU_ASSERT_EQUAL(e.status, 403);
	s_teardown(&e);
}

static void test_403_on_token_put_is_eacces(void)
{
	struct s_env e;

	s_setup(&e);
	e.meta.put_status = 403;
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 0), RR_EACCES);
	CU_ASSERT_EQUAL(e.status, 403);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", NULL), 0);
	s_teardown(&e);
}

static void test_5xx_is_eio(void)
{
	struct s_env e;

	s_setup(&e);
	e.meta.get_status = 503;
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 0), RR_EIO);
	CU_ASSERT_EQUAL(e.status, 503);
	s_teardown(&e);
}

static void test_429_is_eio(void)
{
	struct s_env e;

	s_setup(&e);
	e.meta.get_status = 429;
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 0), RR_EIO);
	CU_ASSERT_EQUAL(e.status, 429);
	s_teardown(&e);
}

static void test_server_not_listening_is_eio_quickly(void)
{
	struct rr_http *http;
	struct rr_imds *m;
	struct rr_buf out;
	char url[64], why[512] = "";
	long status = -1;
	int64_t t0;
	int port = fx_closed_port();

	CU_ASSERT_FATAL(port > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &http), 0);
	CU_ASSERT_EQUAL_FATAL(rr_imds_new(http, url, &m), 0);
	rr_buf_init(&out, 4096);
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL(rr_imds_get(m, "meta-data/instance-id", &out, 5000, &status, why,
				    sizeof(why)), RR_EIO);
	CU_ASSERT(rr_mono_ms() - t0 < 2000);
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT(why[0] != '\0');
	rr_buf_free(&out);
	rr_imds_destroy(m);
	rr_http_destroy(http);
}

static void test_hanging_token_put_is_eio_with_the_hop_limit_hint(void)
{
	struct s_env e;
	int64_t t0;

	s_setup(&e);
	e.meta.put_delay_ms = 5000;
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 300), RR_EIO);
	CU_ASSERT(rr_mono_ms() - t0 < 2000);
	CU_ASSERT_EQUAL(e.status, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "hop limit"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "--http-put-response-hop-limit 2"));
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", NULL), 0); /* no IMDSv1 fallback */
	s_teardown(&e);
}

static void test_token_granted_for_under_a_minute_is_fetched_again(void)
{
	struct s_env e;

	s_setup(&e);
	e.meta.put_ttl_echo = 30; /* less than the 60 s the client keeps in hand */
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 0), 0);
	CU_ASSERT_EQUAL(s_get(&e, "meta-data/instance-id", 0), 0);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "PUT", NULL), 2);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", NULL), 2);
	s_teardown(&e);
}

static void test_body_over_the_out_ceiling_is_etoobig(void)
{
	struct s_env e;
	struct rr_buf small;

	s_setup(&e);
	e.meta.get_body = "0123456789abcdef";
	rr_buf_init(&small, 8);
	CU_ASSERT_EQUAL(rr_imds_get(e.imds, "meta-data/x", &small, 0, NULL, NULL, 0), RR_ETOOBIG);
	CU_ASSERT_EQUAL(small.len, 0);
	rr_buf_free(&small);
	s_teardown(&e);
}

struct s_thread_arg {
	struct rr_imds *imds;
	int rc;
};

static void *s_thread_get(void *p)
{
	struct s_thread_arg *a = p;
	struct rr_buf out;

	rr_buf_init(&out, 4096);
	a->rc = rr_imds_get(a->imds, "meta-data/instance-id", &out, 0, NULL, NULL, 0);
	rr_buf_free(&out);
	return NULL;
}

static void test_concurrent_gets_share_one_token_put(void)
{
	struct s_env e;
	struct s_thread_arg args[4];
	pthread_t th[4];

	s_setup(&e);
	e.meta.put_delay_ms = 200; /* all four arrive while the first PUT is out */
	for (int i = 0; i < 4; i++) {
		args[i].imds = e.imds;
		args[i].rc = -100;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, s_thread_get, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(args[i].rc, 0);
	}
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "PUT", NULL), 1);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", NULL), 4);
	s_teardown(&e);
}

static char *s_env_save(const char *name)
{
	const char *v = getenv(name);
	return v ? strdup(v) : NULL;
}

static void s_env_restore(const char *name, char *saved)
{
	if (saved)
		setenv(name, saved, 1);
	else
		unsetenv(name);
	free(saved);
}

static void test_endpoint_from_environment_resume_run_first(void)
{
	char *a = s_env_save("RESUME_RUN_METADATA_ENDPOINT");
	char *b = s_env_save("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	struct rr_http *http;
	struct rr_imds *m;

	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &http), 0);
	unsetenv("RESUME_RUN_METADATA_ENDPOINT");
	unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	CU_ASSERT_EQUAL_FATAL(rr_imds_new(http, NULL, &m), 0);
	CU_ASSERT_STRING_EQUAL(rr_imds_endpoint(m), RR_IMDS_DEFAULT_ENDPOINT);
	rr_imds_destroy(m);

	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://[fd00:ec2::254]/", 1);
	CU_ASSERT_EQUAL_FATAL(rr_imds_new(http, NULL, &m), 0);
	CU_ASSERT_STRING_EQUAL(rr_imds_endpoint(m), "http://[fd00:ec2::254]");
	rr_imds_destroy(m);

	setenv("RESUME_RUN_METADATA_ENDPOINT", "http://127.0.0.1:1338", 1);
	CU_ASSERT_EQUAL_FATAL(rr_imds_new(http, NULL, &m), 0);
	CU_ASSERT_STRING_EQUAL(rr_imds_endpoint(m), "http://127.0.0.1:1338");
	rr_imds_destroy(m);

	rr_http_destroy(http);
	s_env_restore("RESUME_RUN_METADATA_ENDPOINT", a);
	s_env_restore("AWS_EC2_METADATA_SERVICE_ENDPOINT", b);
}

static CU_TestInfo s_tests[] = {
	{ "get_sends_the_token_from_the_put", test_get_sends_the_token_from_the_put },
	{ "token_put_asks_for_a_21600_s_ttl_without_forwarded_for",
	  test_token_put_asks_for_a_21600_s_ttl_without_forwarded_for },
	{ "leading_slash_of_the_path_is_ignored", test_leading_slash_of_the_path_is_ignored },
	{ "token_is_reused_across_gets", test_token_is_reused_across_gets },
	{ "401_fetches_a_new_token_once_then_succeeds",
	  test_401_fetches_a_new_token_once_then_succeeds },
	{ "401_with_the_new_token_too_is_eacces_without_more_tries",
	  test_401_with_the_new_token_too_is_eacces_without_more_tries },
	{ "404_is_enoent_with_the_status", test_404_is_enoent_with_the_status },
	{ "403_on_get_is_eacces", test_403_on_get_is_eacces },
	{ "403_on_token_put_is_eacces", test_403_on_token_put_is_eacces },
	{ "5xx_is_eio", test_5xx_is_eio },
	{ "429_is_eio", test_429_is_eio },
	{ "server_not_listening_is_eio_quickly", test_server_not_listening_is_eio_quickly },
	{ "hanging_token_put_is_eio_with_the_hop_limit_hint",
	  test_hanging_token_put_is_eio_with_the_hop_limit_hint },
	{ "token_granted_for_under_a_minute_is_fetched_again",
	  test_token_granted_for_under_a_minute_is_fetched_again },
	{ "body_over_the_out_ceiling_is_etoobig", test_body_over_the_out_ceiling_is_etoobig },
	{ "concurrent_gets_share_one_token_put", test_concurrent_gets_share_one_token_put },
	{ "endpoint_from_environment_resume_run_first",
	  test_endpoint_from_environment_resume_run_first },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("imds", s_tests)
