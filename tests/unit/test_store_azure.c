/* CUnit suite "store_azure": the az:// store against the in-process HTTP fixture playing the
 * Blob service (path-style, as Azurite) and IMDS: deletes in Blob Batches of at most 256
 * sub-requests, each authorized on its own and without x-ms-version; what a batch does not
 * settle deleted alone; a batch refused as a whole switching the store to one by one; a
 * bearer token refused with 403 AuthenticationFailed (expired) fetched anew; a Put Block
 * List retried through transient errors after an attempt of unknown outcome, and settled
 * by reading the blob back when the retry finds its blocks gone; a machine whose clock is
 * off refused once (403 AuthenticationFailed for its x-ms-date), then dating its requests by
 * Azure's clock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cunit_main.h"
#include "http_fixture.h"
#include "rr/buf.h"
#include "rr/error.h"
#include "rr/store.h"

#define S_KEY                                                                     \
	"Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
#define S_ROOT "/devstoreaccount1/ckpt"

enum s_batch_mode { S_BATCH_ALL, S_BATCH_PARTIAL, S_BATCH_REFUSED };

struct s_blob {
	enum s_batch_mode mode;
	int batches;      /* POSTs of comp=batch */
	int subs;         /* sub-requests seen in them */
	int tokens;       /* IMDS tokens issued */
	int expire_next;  /* answer the next PUT 403 AuthenticationFailed */
	char first_sub[512];
	const int *list_answers; /* statuses for the Put Block Lists, in turn (0 ends) */
	int lists;               /* Put Block Lists seen */
	size_t blob_len;         /* the committed blob: that many 'x' */
	size_t pending_len;      /* blocks put since */
	long clock_s;            /* nonzero: the service's clock is this far ahead of ours,
				  * it says so in a Date header and refuses what is dated
				  * more than 15 minutes off */
	int date_refusals;
};

static long long s_http_date_unix(const char *d)
{
	struct tm tm;
	char *end;

	memset(&tm, 0, sizeof(tm));
	end = d ? strptime(d, "%a, %d %b %Y %H:%M:%S GMT", &tm) : NULL;
	return end && !*end ? (long long)timegm(&tm) : -1;
}

/* Azure's clock: every answer tells it; a request dated more than 15 minutes from it is
 * refused as Azure does ("Authorize with Shared Key"). 1: refused. */
static int s_clock(struct s_blob *g, const struct fx_request *req, struct fx_response *resp)
{
	time_t server = time(NULL) + g->clock_s;
	long long sent = s_http_date_unix(fx_header(req, "x-ms-date"));
	char when[64], body[512];
	struct tm tm;

	gmtime_r(&server, &tm);
	strftime(when, sizeof(when), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	fx_resp_header(resp, "Date", "%s", when);
	if (sent >= 0 && llabs((long long)server - sent) <= 900)
		return 0;
	g->date_refusals++;
	snprintf(body, sizeof(body), "<?xml version=\"1.0\"?><Error><Code>AuthenticationFailed"
		 "</Code><Message>Server failed to authenticate the request.</Message>"
		 "<AuthenticationErrorDetail>Request date header too old: '%s'"
		 "</AuthenticationErrorDetail></Error>", fx_header(req, "x-ms-date"));
	fx_resp_header(resp, "x-ms-error-code", "AuthenticationFailed");
	fx_resp_text(resp, 403, body);
	return 1;
}

/* GET of the committed blob, whole or a range "bytes=A-B". */
static void s_get_blob(struct s_blob *g, const struct fx_request *req, struct fx_response *resp)
{
	const char *range = fx_header(req, "Range");
	unsigned long long a = 0, b = g->blob_len ? g->blob_len - 1 : 0;
	char *body;

	if (range && sscanf(range, "bytes=%llu-%llu", &a, &b) == 2 && b >= g->blob_len)
		b = g->blob_len - 1;
	body = malloc(b - a + 1);
	memset(body, 'x', b - a + 1);
	fx_resp_header(resp, "ETag", "\"0x8D2\"");
	if (range) {
		fx_resp_header(resp, "Content-Range", "bytes %llu-%llu/%zu", a, b, g->blob_len);
		resp->status = 206;
	} else {
		resp->status = 200;
	}
	fx_resp_body(resp, body, b - a + 1);
	free(body);
}

/* Put Block and Put Block List (the scripted answers; a list that "fails" after it was
 * applied commits the blob all the same). */
static void s_blocks(struct s_blob *g, const struct fx_request *req, struct fx_response *resp)
{
	int st;

	if (strstr(req->target, "comp=block&")) {
		g->pending_len += req->body_len;
		fx_resp_text(resp, 201, "");
		return;
	}
	st = g->list_answers && g->list_answers[g->lists] ? g->list_answers[g->lists] : 201;
	g->lists++;
	if (st == 201 || st == -201) { /* -201: applied, but the answer is a 503 */
		g->blob_len = g->pending_len ? g->pending_len : g->blob_len;
		g->pending_len = 0;
	}
	if (st == 201) {
		fx_resp_header(resp, "ETag", "\"0x8D2\"");
		fx_resp_text(resp, 201, "");
		return;
	}
	st = st == -201 ? 503 : st;
	fx_resp_header(resp, "x-ms-error-code", st == 400 ? "InvalidBlockList" :
				    st == 503 ? "ServerBusy" : "InternalError");
	fx_resp_text(resp, st, "<?xml version=\"1.0\"?><Error><Code>Busy</Code></Error>");
}

/* One part of a batch answer for Content-ID id with this status line. */
static void s_part(struct rr_buf *b, int id, const char *status)
{
	rr_buf_printf(b, "--batchresponse_t\r\nContent-Type: application/http\r\nContent-ID: %d\r\n"
		      "\r\nHTTP/1.1 %s\r\nx-ms-request-id: r%d\r\n\r\n", id, status, id);
}

static void s_batch(struct s_blob *g, const struct fx_request *req, struct fx_response *resp)
{
	const char *p = (const char *)req->body;
	struct rr_buf b;
	int n = 0;

	g->batches++;
	if (g->mode == S_BATCH_REFUSED) {
		fx_resp_header(resp, "x-ms-error-code", "InvalidInput");
		fx_resp_text(resp, 400, "<?xml version=\"1.0\"?><Error><Code>InvalidInput</Code>"
					"<Message>One of the request inputs is not valid.</Message>"
					"</Error>");
		return;
	}
	while ((p = strstr(p, "\r\nContent-ID: ")) != NULL) {
		if (n == 0)
			snprintf(g->first_sub, sizeof(g->first_sub), "%.500s", p + 2);
		n++;
		p += 2;
	}
	g->subs += n;
	rr_buf_init(&b, 1u << 20);
	for (int i = n - 1; i >= 0; i--) { /* in another order than asked: ids tell them apart */
		if (g->mode == S_BATCH_PARTIAL && i == 1)
			s_part(&b, i, "403 This request is not authorized to perform this operation.");
		else if (g->mode == S_BATCH_PARTIAL && i == 2)
			continue; /* no answer at all */
		else
			s_part(&b, i, i == 3 ? "404 The specified blob does not exist."
					     : "202 Accepted");
	}
	rr_buf_printf(&b, "--batchresponse_t--");
	fx_resp_header(resp, "Content-Type", "multipart/mixed; boundary=batchresponse_t");
	fx_resp_body(resp, b.data, b.len);
	resp->status = 202;
	rr_buf_free(&b);
}

static void s_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	struct s_blob *g = ud;

	if (g->clock_s && strncmp(req->target, S_ROOT, strlen(S_ROOT)) == 0 &&
	    s_clock(g, req, resp))
		return;
	if (strncmp(req->target, "/metadata/identity/oauth2/token?", 32) == 0) {
		char body[128];
		g->tokens++;
		snprintf(body, sizeof(body), "{\"access_token\":\"tok-%d\",\"expires_in\":\"3600\"}",
			 g->tokens);
		fx_resp_text(resp, 200, body);
		return;
	}
	if (strncmp(req->target, S_ROOT "?restype=container&comp=list",
		    strlen(S_ROOT "?restype=container&comp=list")) == 0) {
		fx_resp_text(resp, 200, "<?xml version=\"1.0\"?><EnumerationResults><Blobs/>"
					"<NextMarker/></EnumerationResults>");
		return;
	}
	if (strcmp(req->method, "POST") == 0 &&
	    strcmp(req->target, S_ROOT "?restype=container&comp=batch") == 0) {
		s_batch(g, req, resp);
		return;
	}
	if (strcmp(req->method, "PUT") == 0 && g->expire_next) {
		g->expire_next = 0;
		fx_resp_header(resp, "x-ms-error-code", "AuthenticationFailed");
		fx_resp_text(resp, 403, "<?xml version=\"1.0\"?><Error><Code>AuthenticationFailed"
					"</Code><Message>Server failed to authenticate the request."
					"</Message><AuthenticationErrorDetail>Lifetime validation failed."
					" The token is expired.</AuthenticationErrorDetail></Error>");
		return;
	}
	if (strcmp(req->method, "PUT") == 0 && strstr(req->target, "comp=block")) {
		s_blocks(g, req, resp);
		return;
	}
	if (strcmp(req->method, "GET") == 0 && strcmp(req->target, S_ROOT "/p/big") == 0 &&
	    g->blob_len) {
		s_get_blob(g, req, resp);
		return;
	}
	if (strcmp(req->method, "PUT") == 0) {
		fx_resp_header(resp, "ETag", "\"0x8D1\"");
		fx_resp_text(resp, 201, "");
		return;
	}
	if (strcmp(req->method, "DELETE") == 0) {
		fx_resp_text(resp, 202, "");
		return;
	}
	fx_resp_header(resp, "x-ms-error-code", "BlobNotFound");
	fx_resp_text(resp, 404, "<?xml version=\"1.0\"?><Error><Code>BlobNotFound</Code></Error>");
}

static void s_clear_env(void)
{
	const char *v[] = { "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_ACCOUNT",
			    "AZURE_FEDERATED_TOKEN_FILE", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_ID",
			    "AZURE_TENANT_ID", "AZURE_AUTHORITY_HOST",
			    "AZURE_STORAGE_CONNECTION_STRING", "REQUESTS_CA_BUNDLE" };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		unsetenv(v[i]);
}

/* Opens az://ckpt/p on the fixture with Shared Key (key != NULL) or IMDS's tokens, the
 * service's clock clock_s ahead of this machine's (0: the same, and no Date sent). */
static struct rr_store *s_open_clock(struct fx_server *srv, struct s_blob *g, const char *key,
				     long clock_s)
{
	struct rr_store_opts opts = { 0 };
	struct rr_store *s = NULL;
	char cs[512];

	memset(g, 0, sizeof(*g));
	g->clock_s = clock_s;
	s_clear_env();
	CU_ASSERT_EQUAL_FATAL(fx_server_start(srv, s_handler, g), 0);
	snprintf(cs, sizeof(cs), "AccountName=devstoreaccount1;%s%s;BlobEndpoint=%s/devstoreaccount1",
		 key ? "AccountKey=" : "", key ? key : "", srv->url);
	setenv("AZURE_STORAGE_CONNECTION_STRING", cs, 1);
	opts.metadata_endpoint = srv->url;
	CU_ASSERT_EQUAL(rr_store_open("az://ckpt/p", &opts, &s), 0);
	return s;
}

static struct rr_store *s_open(struct fx_server *srv, struct s_blob *g, const char *key)
{
	return s_open_clock(srv, g, key, 0);
}

static void s_close(struct fx_server *srv, struct rr_store *s)
{
	rr_store_destroy(s);
	fx_server_stop(srv);
	s_clear_env();
	unsetenv("RESUME_RUN_S3_PART_SIZE"); /* a test may set it before s_open */
}

static const char *const *s_keys(size_t n)
{
	static char names[300][16];
	static const char *keys[300];

	for (size_t i = 0; i < n && i < 300; i++) {
		snprintf(names[i], sizeof(names[i]), "k%zu", i);
		keys[i] = names[i];
	}
	return keys;
}

static void test_del_many_sends_one_blob_batch_per_256_keys(void)
{
	struct fx_server srv;
	struct s_blob g;
	struct rr_store *s = s_open(&srv, &g, S_KEY);
	const char *s_first = "Content-ID: 0\r\n\r\nDELETE " S_ROOT "/p/k256 HTTP/1.1\r\n"
			      "x-ms-date: ";
	const struct fx_request *post;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(rr_store_del_many(s, s_keys(300), 300), 0);
	CU_ASSERT_EQUAL(g.batches, 2);
	CU_ASSERT_EQUAL(g.subs, 300);
	CU_ASSERT_EQUAL(fx_server_count(&srv, "DELETE", "/"), 0);
	/* The batch request: versioned, signed, multipart/mixed with the body's boundary. */
	post = fx_server_last(&srv, S_ROOT "?restype=container&comp=batch");
	CU_ASSERT_PTR_NOT_NULL_FATAL(post);
	CU_ASSERT_PTR_NOT_NULL(fx_header(post, "x-ms-version"));
	CU_ASSERT_EQUAL(strncmp(fx_header(post, "Authorization"), "SharedKey devstoreaccount1:",
				27), 0);
	CU_ASSERT_EQUAL(strncmp(fx_header(post, "Content-Type"), "multipart/mixed; boundary=batch_",
				32), 0);
	/* Each sub-request: its own date and signature, no version (the batch's applies). */
	CU_ASSERT_EQUAL(strncmp(g.first_sub, s_first, strlen(s_first)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(g.first_sub, "\r\nAuthorization: SharedKey devstoreaccount1:"));
	CU_ASSERT_PTR_NULL(strstr((const char *)post->body, "x-ms-version"));
	s_close(&srv, s);
}

static void test_del_many_deletes_alone_what_the_batch_did_not_settle(void)
{
	struct fx_server srv;
	struct s_blob g;
	struct rr_store *s = s_open(&srv, &g, S_KEY);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	g.mode = S_BATCH_PARTIAL;
	/* k0 deleted, k1 refused, k2 unanswered, k3 already gone (404) */
	CU_ASSERT_EQUAL(rr_store_del_many(s, s_keys(4), 4), 0);
	CU_ASSERT_EQUAL(g.batches, 1);
	CU_ASSERT_EQUAL(fx_server_count(&srv, "DELETE", "/"), 2);
	CU_ASSERT_EQUAL(fx_server_count(&srv, "DELETE", S_ROOT "/p/k1"), 1);
	CU_ASSERT_EQUAL(fx_server_count(&srv, "DELETE", S_ROOT "/p/k2"), 1);
	s_close(&srv, s);
}

static void test_a_batch_refused_as_a_whole_switches_to_one_by_one(void)
{
	struct fx_server srv;
	struct s_blob g;
	struct rr_store *s = s_open(&srv, &g, S_KEY);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	g.mode = S_BATCH_REFUSED;
	CU_ASSERT_EQUAL(rr_store_del_many(s, s_keys(3), 3), 0);
	CU_ASSERT_EQUAL(fx_server_count(&srv, "DELETE", "/"), 3);
	CU_ASSERT_EQUAL(rr_store_del_many(s, s_keys(2), 2), 0);
	CU_ASSERT_EQUAL(g.batches, 1); /* not asked again */
	CU_ASSERT_EQUAL(fx_server_count(&srv, "DELETE", "/"), 5);
	s_close(&srv, s);
}

/* Azure (and Azurite) refuse an expired bearer token with 403 AuthenticationFailed, not
 * 401: a fresh token is fetched and the request sent again, once. */
static void test_a_bearer_token_refused_as_expired_is_fetched_anew(void)
{
	struct fx_server srv;
	struct s_blob g;
	struct rr_store *s = s_open(&srv, &g, NULL);
	const struct fx_request *put;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(g.tokens, 1);
	g.expire_next = 1;
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "hello", 5, NULL, NULL), 0);
	CU_ASSERT_EQUAL(g.tokens, 2);
	put = fx_server_last(&srv, S_ROOT "/p/k");
	CU_ASSERT_PTR_NOT_NULL_FATAL(put);
	CU_ASSERT_STRING_EQUAL(fx_header(put, "Authorization"), "Bearer tok-2");
	/* and again on the next refusal */
	g.expire_next = 1;
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "hello", 5, NULL, NULL), 0);
	CU_ASSERT_EQUAL(g.tokens, 3);
	s_close(&srv, s);
}

/* A Put Block List whose first answer is lost (503 after it was applied) is sent again; a
 * transient error then is retried like any other (S3's completion stops there instead),
 * and a retry that finds the blocks gone (InvalidBlockList) reads the blob back: ours. */
static void test_block_list_after_an_unknown_outcome(void)
{
	static const int busy_then_500[] = { -201, 500, 201, 0 };
	static const int applied_then_invalid[] = { -201, 400, 0 };
	size_t len = 6u << 20;
	char *data = malloc(len);
	struct fx_server srv;
	struct s_blob g;
	struct rr_store *s;

	setenv("RESUME_RUN_S3_PART_SIZE", "5242880", 1);
	s = s_open(&srv, &g, S_KEY);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(data);
	memset(data, 'x', len);
	g.list_answers = busy_then_500;
	CU_ASSERT_EQUAL(rr_store_put(s, "big", data, len, NULL, NULL), 0);
	CU_ASSERT_EQUAL(g.lists, 3);
	CU_ASSERT_EQUAL(g.blob_len, len);
	g.list_answers = applied_then_invalid;
	g.lists = 0;
	CU_ASSERT_EQUAL(rr_store_put(s, "big", data, len, NULL, NULL), 0);
	CU_ASSERT_EQUAL(g.lists, 2);
	CU_ASSERT(fx_server_count(&srv, "GET", S_ROOT "/p/big") >= 1); /* read back */
	/* other bytes there: not ours, not success */
	data[0] = 'y';
	g.lists = 0;
	CU_ASSERT_NOT_EQUAL(rr_store_put(s, "big", data, len, NULL, NULL), 0);
	free(data);
	s_close(&srv, s);
}

/* A machine whose clock is off by more than Azure's 15 minutes: the store's first request
 * (the probe) is refused for its x-ms-date, signed again with the time of the answer's
 * Date, and every later request is dated by Azure's clock: one refusal in all. */
static void s_clock_case(long clock_s, const char *key)
{
	struct fx_server srv;
	struct s_blob g;
	struct rr_store *s = s_open_clock(&srv, &g, key, clock_s);
	long long dated;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(g.date_refusals, 1);
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "hello", 5, NULL, NULL), 0);
	CU_ASSERT_EQUAL(rr_store_del_many(s, s_keys(3), 3), 0);
	CU_ASSERT_EQUAL(g.batches, 1);
	CU_ASSERT_EQUAL(g.date_refusals, 1);
	dated = s_http_date_unix(fx_header(fx_server_last(&srv, S_ROOT "/p/k"), "x-ms-date"));
	CU_ASSERT(llabs(dated - ((long long)time(NULL) + clock_s)) <= 5);
	s_close(&srv, s);
}

static void test_a_clock_off_is_refused_once_then_dated_by_azure(void)
{
	s_clock_case(1200, S_KEY);  /* this machine 20 minutes behind */
	s_clock_case(-3600, S_KEY); /* an hour ahead */
	s_clock_case(-1200, NULL);  /* bearer tokens carry an x-ms-date too */
}

/* A refusal whatever the date: signed again once, not in a loop. */
static void test_a_refusal_not_about_the_date_is_not_retried_in_a_loop(void)
{
	struct fx_server srv;
	struct s_blob g;
	struct rr_store *s = s_open(&srv, &g, S_KEY);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	fx_server_reset(&srv);
	g.expire_next = 1; /* 403 AuthenticationFailed with no Date at all */
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "hello", 5, NULL, NULL), RR_EACCES);
	CU_ASSERT_EQUAL(fx_server_count(&srv, "PUT", NULL), 1);
	s_close(&srv, s);
}

static CU_TestInfo s_tests[] = {
	{ "test_del_many_sends_one_blob_batch_per_256_keys",
	  test_del_many_sends_one_blob_batch_per_256_keys },
	{ "test_del_many_deletes_alone_what_the_batch_did_not_settle",
	  test_del_many_deletes_alone_what_the_batch_did_not_settle },
	{ "test_a_batch_refused_as_a_whole_switches_to_one_by_one",
	  test_a_batch_refused_as_a_whole_switches_to_one_by_one },
	{ "test_a_bearer_token_refused_as_expired_is_fetched_anew",
	  test_a_bearer_token_refused_as_expired_is_fetched_anew },
	{ "test_block_list_after_an_unknown_outcome", test_block_list_after_an_unknown_outcome },
	{ "test_a_clock_off_is_refused_once_then_dated_by_azure",
	  test_a_clock_off_is_refused_once_then_dated_by_azure },
	{ "test_a_refusal_not_about_the_date_is_not_retried_in_a_loop",
	  test_a_refusal_not_about_the_date_is_not_retried_in_a_loop },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("store_azure", s_tests)
