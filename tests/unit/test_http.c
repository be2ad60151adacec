/* CUnit suite "http": the libcurl layer (storage/net/http.c) against the in-process HTTP server
 * (http_fixture.h): methods and bodies (from memory and streamed), request and response
 * headers, the response ceiling, connection reuse, timeouts and broken connections (and
 * which of them are retryable), batches with a bound on transfers in flight, and one client
 * shared by several threads. */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rr/clock.h"
#include "rr/error.h"
#include "rr/http.h"

#include "cunit_main.h"
#include "http_fixture.h"

/* A string assertion that fails, rather than crashes, when the string is missing. */
#define S_ASSERT_STR(actual, want)                                                        \
	do {                                                                              \
		const char *s_a_ = (actual);                                              \
		CU_ASSERT_PTR_NOT_NULL(s_a_);                                             \
		if (s_a_)                                                                 \
			CU_ASSERT_STRING_EQUAL(s_a_, (want));                             \
	} while (0)

/* ---- the fake server ---- */

#define S_MAX_SEEN 64

/* What the handler does, and what it saw. Handler calls are serialised by the fixture. */
struct s_srv {
	int status;          /* 0: 200 */
	const char *body;    /* NULL: "ok" */
	size_t body_len;     /* with body: its length (0: strlen) */
	long delay_ms;
	enum fx_action action;
	size_t split_at;
	int echo_target;     /* answer with the request target as the body */
	/* Arrival times (monotonic ms) of every request, for counting overlaps. */
	int64_t arrived[S_MAX_SEEN];
	unsigned narrived;
};

static void s_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	struct s_srv *m = ud;

	if (m->narrived < S_MAX_SEEN)
		m->arrived[m->narrived++] = rr_mono_ms();
	resp->delay_ms = m->delay_ms;
	resp->action = m->action;
	resp->split_at = m->split_at;
	fx_resp_header(resp, "X-Request-Method", "%s", req->method);
	fx_resp_header(resp, "ETag", "\"etag-1\"");
	if (m->echo_target) {
		fx_resp_text(resp, m->status ? m->status : 200, req->target);
		return;
	}
	resp->status = m->status ? m->status : 200;
	if (m->body)
		fx_resp_body(resp, m->body, m->body_len ? m->body_len : strlen(m->body));
	else
		fx_resp_body(resp, "ok", 2);
}

struct s_env {
	struct s_srv m;
	struct fx_server srv;
	struct rr_http *http;
	struct rr_http_response resp;
	char url[256];
};

/* curl would send loopback requests to a proxy named in the environment. */
static void s_no_proxy(void)
{
	static const char *const names[] = { "http_proxy", "HTTP_PROXY", "https_proxy",
					     "HTTPS_PROXY", "all_proxy", "ALL_PROXY" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unsetenv(names[i]);
}

static void s_setup_opts(struct s_env *e, const struct rr_http_opts *opts)
{
	s_no_proxy();
	memset(e, 0, sizeof(*e));
	CU_ASSERT_EQUAL_FATAL(fx_server_start(&e->srv, s_handler, &e->m), 0);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(opts, &e->http), 0);
	rr_http_response_init(&e->resp);
	snprintf(e->url, sizeof(e->url), "%s/b/key", e->srv.url);
}

static void s_setup(struct s_env *e)
{
	s_setup_opts(e, NULL);
}

static void s_teardown(struct s_env *e)
{
	rr_http_response_free(&e->resp);
	rr_http_destroy(e->http);
	fx_server_stop(&e->srv);
}

/* A body of n bytes that differ from one position to the next. */
static unsigned char *s_pattern(size_t n)
{
	unsigned char *p = malloc(n ? n : 1);

	for (size_t i = 0; p && i < n; i++)
		p[i] = (unsigned char)((i * 131u + (i >> 8) * 7u) & 0xff);
	return p;
}

/* A streamed body: hands out at most `step` bytes per call; fails with `fail_rc` once
 * `fail_at` bytes have gone out (fail_rc 0: never). */
struct s_stream {
	const unsigned char *data;
	size_t len, off, step, fail_at;
	int fail_rc;
	unsigned calls;
};

static long s_stream_read(void *ud, void *buf, size_t cap)
{
	struct s_stream *st = ud;
	size_t n = st->len - st->off;

	st->calls++;
	if (st->fail_rc && st->off >= st->fail_at)
		return st->fail_rc;
	if (n > cap)
		n = cap;
	if (n > st->step)
		n = st->step;
	memcpy(buf, st->data + st->off, n);
	st->off += n;
	return (long)n;
}

static int s_perform(struct s_env *e, const char *method, const void *body, size_t len)
{
	struct rr_http_request req = { .method = method, .url = e->url, .body = body,
				       .body_len = len };

	return rr_http_perform(e->http, &req, &e->resp);
}

/* ---- methods and bodies ---- */

static void test_get_returns_status_body_and_etag(void)
{
	struct s_env e;
	const struct fx_request *r;

	s_setup(&e);
	e.m.status = 203;
	e.m.body = "hello world";
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), 0);
	CU_ASSERT_EQUAL(e.resp.status, 203);
	CU_ASSERT_EQUAL(e.resp.error, 0);
	CU_ASSERT_EQUAL(e.resp.body.len, 11);
	CU_ASSERT_STRING_EQUAL((const char *)e.resp.body.data, "hello world");
	CU_ASSERT_PTR_NOT_NULL_FATAL(rr_http_response_header(&e.resp, "ETag"));
	CU_ASSERT_STRING_EQUAL(rr_http_response_header(&e.resp, "ETag"), "\"etag-1\"");
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(r->method, "GET");
	CU_ASSERT_STRING_EQUAL(r->target, "/b/key");
	CU_ASSERT_EQUAL(r->body_len, 0);
	s_teardown(&e);
}

static void test_error_status_is_a_response_not_an_error(void)
{
	struct s_env e;

	s_setup(&e);
	e.m.status = 503;
	e.m.body = "<Error><Code>SlowDown</Code></Error>";
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), 0);
	CU_ASSERT_EQUAL(e.resp.status, 503);
	CU_ASSERT_EQUAL(e.resp.error, 0);
	CU_ASSERT_EQUAL(e.resp.retryable, 0);
	CU_ASSERT_STRING_EQUAL((const char *)e.resp.body.data, e.m.body);
	s_teardown(&e);
}

/* Checks that the recorded request carried exactly this body, with its length as
 * Content-Length, and without an Expect header or chunked encoding. */
static void s_check_body(const struct fx_request *r, const char *method,
			 const unsigned char *body, size_t len)
{
	char cl[32];

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(r->method, method);
	CU_ASSERT_EQUAL_FATAL(r->body_len, len);
	CU_ASSERT(len == 0 || memcmp(r->body, body, len) == 0);
	snprintf(cl, sizeof(cl), "%zu", len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(r, "Content-Length"));
	CU_ASSERT_STRING_EQUAL(fx_header(r, "Content-Length"), cl);
	CU_ASSERT_PTR_NULL(fx_header(r, "Expect"));
	CU_ASSERT_PTR_NULL(fx_header(r, "Transfer-Encoding"));
}

static void test_put_from_memory_sends_exact_bytes_and_length_without_expect(void)
{
	struct s_env e;
	size_t len = (2u << 20) + 17; /* past curl's own threshold for Expect: 100-continue */
	unsigned char *body = s_pattern(len);

	s_setup(&e);
	CU_ASSERT_EQUAL(s_perform(&e, "PUT", body, len), 0);
	CU_ASSERT_EQUAL(e.resp.status, 200);
	s_check_body(fx_server_request(&e.srv, 0), "PUT", body, len);
	s_teardown(&e);
	free(body);
}

static void test_put_streamed_from_read_cb_sends_exact_bytes_and_length(void)
{
	struct s_env e;
	size_t len = (3u << 20) + 5;
	unsigned char *body = s_pattern(len);
	struct s_stream st = { .data = body, .len = len, .step = 70000 };
	struct rr_http_request req = { .method = "PUT", .body_len = len,
				       .read_cb = s_stream_read, .read_ud = &st };

	s_setup(&e);
	req.url = e.url;
	CU_ASSERT_EQUAL(rr_http_perform(e.http, &req, &e.resp), 0);
	CU_ASSERT_EQUAL(e.resp.status, 200);
	CU_ASSERT_EQUAL(st.off, len);
	CU_ASSERT(st.calls > 1);
	s_check_body(fx_server_request(&e.srv, 0), "PUT", body, len);
	s_teardown(&e);
	free(body);
}

static void test_post_from_memory_and_streamed_send_exact_bytes(void)
{
	struct s_env e;
	static const char xml[] = "<Delete><Object><Key>a</Key></Object></Delete>";
	size_t len = 1u << 20;
	unsigned char *body = s_pattern(len);
	struct s_stream st = { .data = body, .len = len, .step = 4096 };
	struct rr_http_request req = { .method = "POST", .body_len = len,
				       .read_cb = s_stream_read, .read_ud = &st };

	s_setup(&e);
	CU_ASSERT_EQUAL(s_perform(&e, "POST", xml, strlen(xml)), 0);
	CU_ASSERT_EQUAL(e.resp.status, 200);
	s_check_body(fx_server_request(&e.srv, 0), "POST", (const unsigned char *)xml,
		     strlen(xml));
	/* curl adds a form Content-Type to POSTs of its own accord; not to these. */
	CU_ASSERT_PTR_NULL(fx_header(fx_server_request(&e.srv, 0), "Content-Type"));
	req.url = e.url;
	CU_ASSERT_EQUAL(rr_http_perform(e.http, &req, &e.resp), 0);
	CU_ASSERT_EQUAL(e.resp.status, 200);
	s_check_body(fx_server_request(&e.srv, 1), "POST", body, len);
	s_teardown(&e);
	free(body);
}

static void test_post_without_body_sends_content_length_0(void)
{
	struct s_env e;

	s_setup(&e);
	CU_ASSERT_EQUAL(s_perform(&e, "POST", NULL, 0), 0);
	CU_ASSERT_EQUAL(e.resp.status, 200);
	s_check_body(fx_server_request(&e.srv, 0), "POST", NULL, 0);
	s_teardown(&e);
}

static void test_put_without_body_sends_content_length_0(void)
{
	struct s_env e;

	s_setup(&e);
	CU_ASSERT_EQUAL(s_perform(&e, "PUT", NULL, 0), 0);
	CU_ASSERT_EQUAL(e.resp.status, 200);
	s_check_body(fx_server_request(&e.srv, 0), "PUT", NULL, 0);
	CU_ASSERT_EQUAL(s_perform(&e, "PUT", "", 0), 0); /* an empty body from memory */
	s_check_body(fx_server_request(&e.srv, 1), "PUT", NULL, 0);
	s_teardown(&e);
}

static void test_head_gets_headers_and_no_body(void)
{
	struct s_env e;

	s_setup(&e);
	e.m.body = "0123456789";
	CU_ASSERT_EQUAL(s_perform(&e, "HEAD", NULL, 0), 0);
	CU_ASSERT_EQUAL(e.resp.status, 200);
	CU_ASSERT_EQUAL(e.resp.body.len, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rr_http_response_header(&e.resp, "Content-Length"));
	CU_ASSERT_STRING_EQUAL(rr_http_response_header(&e.resp, "Content-Length"), "10");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_server_request(&e.srv, 0));
	CU_ASSERT_STRING_EQUAL(fx_server_request(&e.srv, 0)->method, "HEAD");
	s_teardown(&e);
}

static void test_delete_is_sent_as_delete_and_gets_its_body(void)
{
	struct s_env e;

	s_setup(&e);
	e.m.status = 204;
	CU_ASSERT_EQUAL(s_perform(&e, "DELETE", NULL, 0), 0);
	CU_ASSERT_EQUAL(e.resp.status, 204);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_server_request(&e.srv, 0));
	CU_ASSERT_STRING_EQUAL(fx_server_request(&e.srv, 0)->method, "DELETE");
	CU_ASSERT_EQUAL(fx_server_request(&e.srv, 0)->body_len, 0);
	/* The handler saw the method it was sent. */
	S_ASSERT_STR(rr_http_response_header(&e.resp, "X-Request-Method"), "DELETE");
	s_teardown(&e);
}

/* ---- headers ---- */

static void test_request_headers_arrive_including_an_empty_value(void)
{
	struct s_env e;
	const struct fx_request *r;
	struct rr_http_header h[] = {
		{ "x-amz-date", "20240101T000000Z" },
		{ "Authorization", "AWS4-HMAC-SHA256 Credential=AKID/x, Signature=abc" },
		{ "X-Empty", "" },
		{ "Range", "bytes=0-9" },
	};
	struct rr_http_request req = { .method = "GET", .headers = h, .nheaders = 4 };

	s_setup(&e);
	req.url = e.url;
	CU_ASSERT_EQUAL(rr_http_perform(e.http, &req, &e.resp), 0);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	for (size_t i = 0; i < 4; i++) {
		CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(r, h[i].name));
		CU_ASSERT_STRING_EQUAL(fx_header(r, h[i].name), h[i].value);
	}
	CU_ASSERT_PTR_NOT_NULL(fx_header(r, "User-Agent"));
	CU_ASSERT_PTR_NOT_NULL(strstr(fx_header(r, "User-Agent"), "resume-run/"));
	s_teardown(&e);
}

static void test_response_headers_are_found_case_insensitively(void)
{
	struct s_env e;

	s_setup(&e);
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rr_http_response_header(&e.resp, "etag"));
	CU_ASSERT_STRING_EQUAL(rr_http_response_header(&e.resp, "etag"), "\"etag-1\"");
	CU_ASSERT_PTR_NOT_NULL(rr_http_response_header(&e.resp, "ETAG"));
	CU_ASSERT_PTR_NOT_NULL(rr_http_response_header(&e.resp, "x-request-method"));
	CU_ASSERT_PTR_NULL(rr_http_response_header(&e.resp, "X-Not-Sent"));
	s_teardown(&e);
}

/* A server that answers one connection with canned bytes, whatever it is asked. */
struct s_raw {
	int lfd;
	int port;
	const char *answer;
	pthread_t thread;
};

static void *s_raw_main(void *arg)
{
	struct s_raw *r = arg;
	char buf[65536];
	size_t len = 0;
	ssize_t n;
	int fd = accept(r->lfd, NULL, NULL);

	if (fd < 0)
		return NULL;
	while (len < sizeof(buf) - 1 && (n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0)) > 0) {
		len += (size_t)n;
		buf[len] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	if (send(fd, r->answer, strlen(r->answer), MSG_NOSIGNAL) < 0)
		perror("raw server send");
	shutdown(fd, SHUT_WR);
	while (recv(fd, buf, sizeof(buf), 0) > 0)
		;
	close(fd);
	return NULL;
}

static int s_raw_start(struct s_raw *r, const char *answer)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);

	memset(r, 0, sizeof(*r));
	r->answer = answer;
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (r->lfd < 0 || bind(r->lfd, (struct sockaddr *)&a, sizeof(a)) || listen(r->lfd, 4) ||
	    getsockname(r->lfd, (struct sockaddr *)&a, &alen))
		return -1;
	r->port = ntohs(a.sin_port);
	return pthread_create(&r->thread, NULL, s_raw_main, r) ? -1 : 0;
}

static void s_raw_stop(struct s_raw *r)
{
	pthread_join(r->thread, NULL);
	close(r->lfd);
}

static void test_interim_response_headers_do_not_leak_into_the_final_ones(void)
{
	static const char answer[] =
		"HTTP/1.1 100 Continue\r\nX-Interim: 100\r\n\r\n"
		"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nX-Interim: 103\r\n\r\n"
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Final: yes\r\nConnection: close\r\n"
		"\r\nfinal";
	struct s_raw raw;
	struct rr_http *http;
	struct rr_http_response resp;
	struct rr_http_request req = { .method = "PUT", .body = "abc", .body_len = 3 };
	char url[64];

	s_no_proxy();
	CU_ASSERT_EQUAL_FATAL(s_raw_start(&raw, answer), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/k", raw.port);
	req.url = url;
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &http), 0);
	rr_http_response_init(&resp);
	CU_ASSERT_EQUAL(rr_http_perform(http, &req, &resp), 0);
	CU_ASSERT_EQUAL(resp.status, 200);
	CU_ASSERT_STRING_EQUAL((const char *)resp.body.data, "final");
	CU_ASSERT_PTR_NOT_NULL(rr_http_response_header(&resp, "X-Final"));
	CU_ASSERT_PTR_NULL(rr_http_response_header(&resp, "X-Interim"));
	CU_ASSERT_PTR_NULL(rr_http_response_header(&resp, "Link"));
	CU_ASSERT_EQUAL(resp.nheaders, 3); /* Content-Length, X-Final, Connection */
	rr_http_response_free(&resp);
	rr_http_destroy(http);
	s_raw_stop(&raw);
}

/* ---- limits and failures ---- */

static void test_body_over_response_max_is_etoobig_and_not_retryable(void)
{
	struct s_env e;
	size_t len = 100000;
	unsigned char *big = s_pattern(len);
	struct rr_http_request req = { .method = "GET", .response_max = 65536 };

	s_setup(&e);
	e.m.body = (const char *)big;
	e.m.body_len = len;
	req.url = e.url;
	CU_ASSERT_EQUAL(rr_http_perform(e.http, &req, &e.resp), RR_ETOOBIG);
	CU_ASSERT_EQUAL(e.resp.error, RR_ETOOBIG);
	CU_ASSERT_EQUAL(e.resp.retryable, 0);
	CU_ASSERT(e.resp.message[0] != '\0');
	/* Exactly at the ceiling is fine. */
	req.response_max = len;
	CU_ASSERT_EQUAL(rr_http_perform(e.http, &req, &e.resp), 0);
	CU_ASSERT_EQUAL(e.resp.body.len, len);
	CU_ASSERT(memcmp(e.resp.body.data, big, len) == 0);
	s_teardown(&e);
	free(big);
}

/* Sockets of this process connected to port (the client side of connections to the test
 * server) that would survive an execve; *seen counts all of them. */
static int s_inheritable_client_sockets(int port, int *seen)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int bad = 0;

	*seen = 0;
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((de = readdir(d)) != NULL) {
		struct sockaddr_in peer;
		socklen_t len = sizeof(peer);
		int fd = atoi(de->d_name);

		if (de->d_name[0] == '.' || fd == dirfd(d))
			continue;
		if (getpeername(fd, (struct sockaddr *)&peer, &len) != 0 ||
		    peer.sin_family != AF_INET || ntohs(peer.sin_port) != port)
			continue;
		(*seen)++;
		if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC))
			bad++;
	}
	closedir(d);
	return bad;
}

static void test_kept_alive_connection_is_close_on_exec(void)
{
	struct s_env e;
	int seen = 0;

	s_setup(&e);
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), 0);
	/* The connection stays open in the handle pool for the next request: a trainer
	 * forked now must not get it. */
	CU_ASSERT_EQUAL(s_inheritable_client_sockets(e.srv.port, &seen), 0);
	CU_ASSERT(seen >= 1);
	s_teardown(&e);
}

/* The ceiling bounds what was asked for: an error answer of any length is that error, with
 * the first 64 KiB of its body kept to say why. */
static void test_error_answer_over_response_max_is_the_error_not_etoobig(void)
{
	static const int statuses[] = { 503, 500, 404 };
	struct s_env e;
	size_t len = 100000;
	unsigned char *big = s_pattern(len);
	struct rr_http_request req = { .method = "GET", .response_max = 10 };

	s_setup(&e);
	e.m.body = (const char *)big;
	req.url = e.url;
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		e.m.status = statuses[i];
		e.m.body_len = i == 2 ? 11 : len; /* just over the ceiling, and far over it */
		CU_ASSERT_EQUAL(rr_http_perform(e.http, &req, &e.resp), 0);
		CU_ASSERT_EQUAL(e.resp.status, statuses[i]);
		CU_ASSERT_EQUAL(e.resp.error, 0);
		CU_ASSERT_EQUAL(e.resp.body.len, i == 2 ? 11 : 65536);
		CU_ASSERT(memcmp(e.resp.body.data, big, e.resp.body.len) == 0);
	}
	/* the same body with 200 is the object's bytes: over the ceiling */
	e.m.status = 200;
	CU_ASSERT_EQUAL(rr_http_perform(e.http, &req, &e.resp), RR_ETOOBIG);
	s_teardown(&e);
	free(big);
}

static void test_sequential_requests_reuse_one_connection(void)
{
	struct s_env e;

	s_setup(&e);
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), 0);
	CU_ASSERT_EQUAL(s_perform(&e, "PUT", "abc", 3), 0);
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), 0);
	CU_ASSERT_EQUAL(e.resp.status, 200);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 3);
	CU_ASSERT_EQUAL(fx_server_connections(&e.srv), 1);
	s_teardown(&e);
}

static void test_stalled_server_times_out_retryable(void)
{
	struct rr_http_opts o = { .stall_timeout_ms = 1000 };
	struct s_env e;
	int64_t t0;

	s_setup_opts(&e, &o);
	e.m.delay_ms = 30000;
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), RR_EIO);
	CU_ASSERT(rr_mono_ms() - t0 < 20000); /* the stall limit, not the server, ended it */
	CU_ASSERT_EQUAL(e.resp.status, 0);
	CU_ASSERT_EQUAL(e.resp.error, RR_EIO);
	CU_ASSERT_EQUAL(e.resp.retryable, 1);
	CU_ASSERT(e.resp.message[0] != '\0');
	s_teardown(&e);
}

static void test_timeout_ms_cuts_a_slow_answer_retryable(void)
{
	struct s_env e;
	struct rr_http_request req = { .method = "GET", .timeout_ms = 300 };
	int64_t t0;

	s_setup(&e);
	e.m.delay_ms = 30000;
	req.url = e.url;
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL(rr_http_perform(e.http, &req, &e.resp), RR_EIO);
	CU_ASSERT(rr_mono_ms() - t0 < 15000);
	CU_ASSERT_EQUAL(e.resp.status, 0);
	CU_ASSERT_EQUAL(e.resp.retryable, 1);
	s_teardown(&e);
}

static void test_the_owners_deadline_bounds_every_request(void)
{
	static _Atomic long long deadline;
	struct rr_http_opts o = { .deadline_mono_ms = &deadline };
	struct s_env e;

	s_setup_opts(&e, &o);
	e.m.delay_ms = 120000; /* far past the alarm: only the deadline can end the request */
	deadline = rr_mono_ms() + 300;
	alarm(60);
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), RR_EIO);
	alarm(0);
	CU_ASSERT_EQUAL(e.resp.status, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.resp.message, "timed out"));
	/* Cleared, it bounds nothing. (The server thread of the cut-off request may still be
	 * in the handler: change what it reads under the lock it holds there.) */
	deadline = 0;
	pthread_mutex_lock(&e.srv.mu);
	e.m.delay_ms = 0;
	pthread_mutex_unlock(&e.srv.mu);
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), 0);
	CU_ASSERT_EQUAL(e.resp.status, 200);
	s_teardown(&e);
}

static void test_connection_refused_is_eio_retryable(void)
{
	struct rr_http *http;
	struct rr_http_response resp;
	struct rr_http_request req = { .method = "GET" };
	char url[64];
	int port = fx_closed_port();

	CU_ASSERT_FATAL(port > 0);
	s_no_proxy();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", port);
	req.url = url;
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &http), 0);
	rr_http_response_init(&resp);
	CU_ASSERT_EQUAL(rr_http_perform(http, &req, &resp), RR_EIO);
	CU_ASSERT_EQUAL(resp.status, 0);
	CU_ASSERT_EQUAL(resp.retryable, 1);
	CU_ASSERT(resp.message[0] != '\0');
	rr_http_response_free(&resp);
	rr_http_destroy(http);
}

static void test_reset_connection_is_eio_retryable(void)
{
	struct s_env e;

	s_setup(&e);
	e.m.action = FX_RESET;
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), RR_EIO);
	CU_ASSERT_EQUAL(e.resp.status, 0);
	CU_ASSERT_EQUAL(e.resp.retryable, 1);
	s_teardown(&e);
}

static void test_closed_without_answer_is_eio_retryable(void)
{
	struct s_env e;

	s_setup(&e);
	e.m.action = FX_CLOSE;
	CU_ASSERT_EQUAL(s_perform(&e, "PUT", "abc", 3), RR_EIO);
	CU_ASSERT_EQUAL(e.resp.retryable, 1);
	s_teardown(&e);
}

static void test_body_cut_short_is_eio_retryable(void)
{
	struct s_env e;

	s_setup(&e);
	e.m.body = "0123456789abcdefghij";
	e.m.action = FX_CUT;
	e.m.split_at = 7;
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), RR_EIO);
	CU_ASSERT_EQUAL(e.resp.status, 0);
	CU_ASSERT_EQUAL(e.resp.retryable, 1);
	s_teardown(&e);
}

static void test_read_cb_error_aborts_with_that_error(void)
{
	struct s_env e;
	size_t len = 1u << 20;
	unsigned char *body = s_pattern(len);
	struct s_stream st = { .data = body, .len = len, .step = 16384, .fail_at = 65536,
			       .fail_rc = RR_ECORRUPT };
	struct rr_http_request req = { .method = "PUT", .body_len = len,
				       .read_cb = s_stream_read, .read_ud = &st };

	s_setup(&e);
	req.url = e.url;
	CU_ASSERT_EQUAL(rr_http_perform(e.http, &req, &e.resp), RR_ECORRUPT);
	CU_ASSERT_EQUAL(e.resp.error, RR_ECORRUPT);
	CU_ASSERT_EQUAL(e.resp.status, 0);
	CU_ASSERT_EQUAL(e.resp.retryable, 0);
	CU_ASSERT_EQUAL(st.off, 65536); /* nothing was read after the failure */
	/* The handle goes back to the pool and serves the next request. */
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), 0);
	CU_ASSERT_EQUAL(e.resp.status, 200);
	s_teardown(&e);
	free(body);
}

/* ---- batches ---- */

/* The most arrivals that fall within one window of `window_ms` ending at an arrival. With
 * every answer held delay_ms > window_ms, that is a lower bound of the transfers the server
 * had in flight at once, and it cannot exceed the client's limit: a transfer starts only
 * after another one ended, at least delay_ms after that one arrived. */
static unsigned s_max_overlap(const struct s_srv *m, int64_t window_ms)
{
	unsigned best = 0;

	for (unsigned i = 0; i < m->narrived; i++) {
		unsigned n = 0;
		for (unsigned j = 0; j < m->narrived; j++)
			if (m->arrived[j] <= m->arrived[i] &&
			    m->arrived[j] > m->arrived[i] - window_ms)
				n++;
		if (n > best)
			best = n;
	}
	return best;
}

static void test_batch_completes_all_with_their_tags_at_most_3_in_flight(void)
{
	enum { N = 8 };
	struct s_env e;
	struct rr_http_batch *b;
	struct rr_http_request req[N];
	struct rr_http_response resp[N];
	char urls[N][128];
	int seen[N] = { 0 };
	void *tag;
	int rc;

	s_setup(&e);
	e.m.delay_ms = 400;
	e.m.echo_target = 1;
	CU_ASSERT_EQUAL_FATAL(rr_http_batch_new(e.http, 3, &b), 0);
	for (int i = 0; i < N; i++) {
		snprintf(urls[i], sizeof(urls[i]), "%s/b/part-%d", e.srv.url, i);
		req[i] = (struct rr_http_request){ .method = "GET", .url = urls[i] };
		rr_http_response_init(&resp[i]);
		CU_ASSERT_EQUAL(rr_http_batch_add(b, &req[i], &resp[i], &seen[i]), 0);
	}
	CU_ASSERT_EQUAL(rr_http_batch_pending(b), N);
	for (int k = 0; k < N; k++) {
		tag = NULL;
		rc = rr_http_batch_wait(b, -1, &tag);
		CU_ASSERT_EQUAL(rc, 1);
		if (rc != 1)
			break;
		CU_ASSERT_FATAL(tag >= (void *)&seen[0] && tag <= (void *)&seen[N - 1]);
		(*(int *)tag)++;
	}
	CU_ASSERT_EQUAL(rr_http_batch_pending(b), 0);
	CU_ASSERT_EQUAL(rr_http_batch_wait(b, 100, &tag), RR_ENOENT);
	for (int i = 0; i < N; i++) {
		char want[64];
		snprintf(want, sizeof(want), "/b/part-%d", i);
		CU_ASSERT_EQUAL(seen[i], 1);
		CU_ASSERT_EQUAL(resp[i].error, 0);
		CU_ASSERT_EQUAL(resp[i].status, 200);
		/* Each tag came back with its own response. */
		CU_ASSERT(resp[i].body.data && strcmp((const char *)resp[i].body.data, want) == 0);
		rr_http_response_free(&resp[i]);
	}
	rr_http_batch_destroy(b);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), N);
	CU_ASSERT(s_max_overlap(&e.m, 390) <= 3);
	CU_ASSERT(s_max_overlap(&e.m, 390) >= 2); /* they did run side by side */
	s_teardown(&e);
}

static void test_batch_reports_failures_per_transfer(void)
{
	struct s_env e;
	struct rr_http_batch *b;
	struct rr_http_request ok = { .method = "GET" }, refused = { .method = "GET" };
	struct rr_http_response r1, r2;
	char url2[64];
	int t1, t2, got = 0;
	void *tag;

	s_setup(&e);
	snprintf(url2, sizeof(url2), "http://127.0.0.1:%d/x", fx_closed_port());
	ok.url = e.url;
	refused.url = url2;
	rr_http_response_init(&r1);
	rr_http_response_init(&r2);
	CU_ASSERT_EQUAL_FATAL(rr_http_batch_new(e.http, 2, &b), 0);
	CU_ASSERT_EQUAL(rr_http_batch_add(b, &ok, &r1, &t1), 0);
	CU_ASSERT_EQUAL(rr_http_batch_add(b, &refused, &r2, &t2), 0);
	while (rr_http_batch_wait(b, -1, &tag) == 1)
		got++;
	CU_ASSERT_EQUAL(got, 2);
	CU_ASSERT_EQUAL(r1.status, 200);
	CU_ASSERT_EQUAL(r1.error, 0);
	CU_ASSERT_EQUAL(r2.status, 0);
	CU_ASSERT_EQUAL(r2.error, RR_EIO);
	CU_ASSERT_EQUAL(r2.retryable, 1);
	rr_http_batch_destroy(b);
	rr_http_response_free(&r1);
	rr_http_response_free(&r2);
	s_teardown(&e);
}

static void test_batch_wait_timeout_returns_0_then_finishes(void)
{
	struct s_env e;
	struct rr_http_batch *b;
	struct rr_http_request req = { .method = "GET" };
	struct rr_http_response resp;
	int mine;
	void *tag = NULL;

	s_setup(&e);
	e.m.delay_ms = 1500;
	req.url = e.url;
	rr_http_response_init(&resp);
	CU_ASSERT_EQUAL_FATAL(rr_http_batch_new(e.http, 1, &b), 0);
	CU_ASSERT_EQUAL(rr_http_batch_add(b, &req, &resp, &mine), 0);
	CU_ASSERT_EQUAL(rr_http_batch_wait(b, 50, &tag), 0);
	CU_ASSERT_PTR_NULL(tag);
	CU_ASSERT_EQUAL(rr_http_batch_pending(b), 1);
	CU_ASSERT_EQUAL(rr_http_batch_wait(b, -1, &tag), 1);
	CU_ASSERT_PTR_EQUAL(tag, &mine);
	CU_ASSERT_EQUAL(resp.status, 200);
	rr_http_batch_destroy(b);
	rr_http_response_free(&resp);
	s_teardown(&e);
}

static void test_batch_wait_with_nothing_queued_is_enoent(void)
{
	struct rr_http *http;
	struct rr_http_batch *b;
	void *tag = NULL;

	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &http), 0);
	CU_ASSERT_EQUAL_FATAL(rr_http_batch_new(http, 3, &b), 0);
	CU_ASSERT_EQUAL(rr_http_batch_pending(b), 0);
	CU_ASSERT_EQUAL(rr_http_batch_wait(b, 0, &tag), RR_ENOENT);
	CU_ASSERT_EQUAL(rr_http_batch_wait(b, -1, &tag), RR_ENOENT);
	rr_http_batch_destroy(b);
	rr_http_destroy(http);
}

static void test_batch_destroyed_with_transfers_unfinished_frees_them(void)
{
	struct s_env e;
	struct rr_http_batch *b;
	struct rr_http_request req = { .method = "GET" };
	struct rr_http_response resp[4];
	void *tag;

	s_setup(&e);
	e.m.delay_ms = 5000;
	req.url = e.url;
	CU_ASSERT_EQUAL_FATAL(rr_http_batch_new(e.http, 2, &b), 0);
	for (int i = 0; i < 4; i++) {
		rr_http_response_init(&resp[i]);
		CU_ASSERT_EQUAL(rr_http_batch_add(b, &req, &resp[i], NULL), 0);
	}
	CU_ASSERT_EQUAL(rr_http_batch_wait(b, 200, &tag), 0); /* two start, none ends */
	rr_http_batch_destroy(b); /* ASan checks that nothing leaks */
	for (int i = 0; i < 4; i++)
		rr_http_response_free(&resp[i]);
	/* The client still works afterwards. The server's connection threads may still be
	 * handling the abandoned requests: its lock keeps the handler's state theirs. */
	pthread_mutex_lock(&e.srv.mu);
	e.m.delay_ms = 0;
	pthread_mutex_unlock(&e.srv.mu);
	CU_ASSERT_EQUAL(s_perform(&e, "GET", NULL, 0), 0);
	CU_ASSERT_EQUAL(e.resp.status, 200);
	s_teardown(&e);
}

/* ---- threads ---- */

struct s_thread_arg {
	struct rr_http *http;
	const char *base;
	int id;
	int failures;
};

static void *s_thread_main(void *p)
{
	struct s_thread_arg *a = p;
	struct rr_http_response resp;
	char url[128], want[64];

	rr_http_response_init(&resp);
	for (int i = 0; i < 20; i++) {
		struct rr_http_request req = { .method = i % 2 ? "PUT" : "GET", .url = url,
					       .body = i % 2 ? "data" : NULL,
					       .body_len = i % 2 ? 4 : 0 };
		snprintf(want, sizeof(want), "/t%d/r%d", a->id, i);
		snprintf(url, sizeof(url), "%s%s", a->base, want);
		if (rr_http_perform(a->http, &req, &resp) != 0 || resp.status != 200 ||
		    !resp.body.data || strcmp((const char *)resp.body.data, want) != 0)
			a->failures++;
	}
	rr_http_response_free(&resp);
	return NULL;
}

static void test_four_threads_share_one_client(void)
{
	struct s_env e;
	struct s_thread_arg args[4];
	pthread_t th[4];

	s_setup(&e);
	e.m.echo_target = 1;
	for (int i = 0; i < 4; i++) {
		args[i] = (struct s_thread_arg){ e.http, e.srv.url, i, 0 };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, s_thread_main, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(args[i].failures, 0);
	}
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 80);
	/* Handles go back to the pool with their connections: far fewer than 80. */
	CU_ASSERT(fx_server_connections(&e.srv) <= 8);
	s_teardown(&e);
}

static CU_TestInfo s_tests[] = {
	{ "get_returns_status_body_and_etag", test_get_returns_status_body_and_etag },
	{ "error_status_is_a_response_not_an_error",
	  test_error_status_is_a_response_not_an_error },
	{ "put_from_memory_sends_exact_bytes_and_length_without_expect",
	  test_put_from_memory_sends_exact_bytes_and_length_without_expect },
	{ "put_streamed_from_read_cb_sends_exact_bytes_and_length",
	  test_put_streamed_from_read_cb_sends_exact_bytes_and_length },
	{ "post_from_memory_and_streamed_send_exact_bytes",
	  test_post_from_memory_and_streamed_send_exact_bytes },
	{ "post_without_body_sends_content_length_0",
	  test_post_without_body_sends_content_length_0 },
	{ "put_without_body_sends_content_length_0",
	  test_put_without_body_sends_content_length_0 },
	{ "head_gets_headers_and_no_body", test_head_gets_headers_and_no_body },
	{ "delete_is_sent_as_delete_and_gets_its_body",
	  test_delete_is_sent_as_delete_and_gets_its_body },
	{ "request_headers_arrive_including_an_empty_value",
	  test_request_headers_arrive_including_an_empty_value },
	{ "response_headers_are_found_case_insensitively",
	  test_response_headers_are_found_case_insensitively },
	{ "interim_response_headers_do_not_leak_into_the_final_ones",
	  test_interim_response_headers_do_not_leak_into_the_final_ones },
	{ "body_over_response_max_is_etoobig_and_not_retryable",
	  test_body_over_response_max_is_etoobig_and_not_retryable },
	{ "kept_alive_connection_is_close_on_exec", test_kept_alive_connection_is_close_on_exec },
	{ "error_answer_over_response_max_is_the_error_not_etoobig",
	  test_error_answer_over_response_max_is_the_error_not_etoobig },
	{ "sequential_requests_reuse_one_connection",
	  test_sequential_requests_reuse_one_connection },
	{ "stalled_server_times_out_retryable", test_stalled_server_times_out_retryable },
	{ "timeout_ms_cuts_a_slow_answer_retryable", test_timeout_ms_cuts_a_slow_answer_retryable },
	{ "the_owners_deadline_bounds_every_request", test_the_owners_deadline_bounds_every_request },
	{ "connection_refused_is_eio_retryable", test_connection_refused_is_eio_retryable },
	{ "reset_connection_is_eio_retryable", test_reset_connection_is_eio_retryable },
	{ "closed_without_answer_is_eio_retryable", test_closed_without_answer_is_eio_retryable },
	{ "body_cut_short_is_eio_retryable", test_body_cut_short_is_eio_retryable },
	{ "read_cb_error_aborts_with_that_error", test_read_cb_error_aborts_with_that_error },
	{ "batch_completes_all_with_their_tags_at_most_3_in_flight",
	  test_batch_completes_all_with_their_tags_at_most_3_in_flight },
	{ "batch_reports_failures_per_transfer", test_batch_reports_failures_per_transfer },
	{ "batch_wait_timeout_returns_0_then_finishes",
	  test_batch_wait_timeout_returns_0_then_finishes },
	{ "batch_wait_with_nothing_queued_is_enoent",
	  test_batch_wait_with_nothing_queued_is_enoent },
	{ "batch_destroyed_with_transfers_unfinished_frees_them",
	  test_batch_destroyed_with_transfers_unfinished_frees_them },
	{ "four_threads_share_one_client", test_four_threads_share_one_client },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("http", s_tests)
