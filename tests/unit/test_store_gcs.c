/* CUnit suite "store_gcs": the GCS XML API dialect of the S3 backend against the in-process
 * HTTP fixture playing storage.googleapis.com (via STORAGE_EMULATOR_HOST) and the token
 * endpoint of a service-account key: bearer tokens on every request and no AWS headers,
 * x-goog-if-generation-match preconditions, generations as version tags, a 401 answered by
 * a fresh token, deletes one by one (retention's conditional on the generation), and HMAC
 * keys signing with SigV4 instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "cunit_main.h"
#include <time.h>

#include "http_fixture.h"
#include "rr/buf.h"
#include "rr/error.h"
#include "rr/store.h"

struct s_gcs {
	int tokens;           /* tokens issued */
	int expire_next;      /* answer the next data request 401 */
	int generation;
	int object_exists;    /* the single object "pre/k" */
	char body[64];
	time_t modified;      /* its Last-Modified */
	int written_before_delete; /* another writer's PUT lands between a HEAD and a DELETE */
	int token_503;        /* answer this many token requests 503 first */
};

static void s_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	struct s_gcs *g = ud;
	const char *cond;

	if (strcmp(req->target, "/token") == 0 && g->token_503 > 0) {
		g->token_503--;
		fx_resp_text(resp, 503, "Service Unavailable");
		return;
	}
	if (strcmp(req->target, "/token") == 0) {
		g->tokens++;
		fx_resp_header(resp, "Content-Type", "application/json");
		char body[128];
		snprintf(body, sizeof(body),
			 "{\"access_token\":\"tok-%d\",\"expires_in\":3600,\"token_type\":\"Bearer\"}",
			 g->tokens);
		fx_resp_text(resp, 200, body);
		return;
	}
	if (g->expire_next) {
		g->expire_next = 0;
		fx_resp_text(resp, 401, "<Error><Code>AuthenticationRequired</Code>"
					"<Message>expired</Message></Error>");
		return;
	}
	if (strncmp(req->target, "/bkt?list-type=2", 16) == 0) {
		fx_resp_text(resp, 200, "<ListBucketResult><IsTruncated>false</IsTruncated>"
					"</ListBucketResult>");
		return;
	}
	cond = fx_header(req, "x-goog-if-generation-match");
	if (strcmp(req->method, "PUT") == 0 && strcmp(req->target, "/bkt/pre/k") == 0) {
		if (cond && ((strcmp(cond, "0") == 0 && g->object_exists) ||
			     (strcmp(cond, "0") != 0 && atoi(cond) != g->generation))) {
			fx_resp_text(resp, 412, "<Error><Code>PreconditionFailed</Code></Error>");
			return;
		}
		g->object_exists = 1;
		g->generation++;
		g->modified = time(NULL);
		snprintf(g->body, sizeof(g->body), "%.*s", (int)req->body_len, (char *)req->body);
		fx_resp_header(resp, "x-goog-generation", "%d", g->generation);
		fx_resp_header(resp, "ETag", "\"e%d\"", g->generation);
		fx_resp_text(resp, 200, "");
		return;
	}
	if (strcmp(req->method, "GET") == 0 && strcmp(req->target, "/bkt/pre/k") == 0 &&
	    g->object_exists) {
		fx_resp_header(resp, "x-goog-generation", "%d", g->generation);
		fx_resp_header(resp, "ETag", "\"e%d\"", g->generation);
		fx_resp_text(resp, 200, g->body);
		return;
	}
	if (strcmp(req->method, "HEAD") == 0 && strcmp(req->target, "/bkt/pre/k") == 0 &&
	    g->object_exists) {
		char date[64];
		strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime(&g->modified));
		fx_resp_header(resp, "x-goog-generation", "%d", g->generation);
		fx_resp_header(resp, "Last-Modified", "%s", date);
		fx_resp_text(resp, 200, "");
		return;
	}
	if (strcmp(req->method, "DELETE") == 0 && strcmp(req->target, "/bkt/pre/k") == 0) {
		if (g->written_before_delete) {
			g->written_before_delete = 0;
			g->generation++;
			g->modified = time(NULL);
		}
		if (!g->object_exists) {
			fx_resp_text(resp, 404, "<Error><Code>NoSuchKey</Code></Error>");
		} else if (cond && atoi(cond) != g->generation) {
			fx_resp_text(resp, 412, "<Error><Code>PreconditionFailed</Code></Error>");
		} else {
			g->object_exists = 0;
			fx_resp_text(resp, 204, "");
		}
		return;
	}
	if (strcmp(req->method, "DELETE") == 0) {
		fx_resp_text(resp, 204, "");
		return;
	}
	fx_resp_text(resp, 404, "<Error><Code>NoSuchKey</Code></Error>");
}

static char s_dir[] = "/tmp/rr-gcs-test.XXXXXX";

/* A fresh service-account key file whose token_uri is the fixture's /token. */
static void s_write_key(const struct fx_server *srv)
{
	EVP_PKEY *key = EVP_RSA_gen(2048);
	BIO *bio = BIO_new(BIO_s_mem());
	char path[128], *pem = NULL;
	long n;
	FILE *f;

	CU_ASSERT_FATAL(key && bio);
	PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL);
	n = BIO_get_mem_data(bio, &pem);
	snprintf(path, sizeof(path), "%s/sa.json", s_dir);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs("{\"type\":\"service_account\",\"client_email\":\"t@p.iam.gserviceaccount.com\","
	      "\"private_key_id\":\"k1\",\"private_key\":\"", f);
	for (long i = 0; i < n; i++) /* JSON-escape the PEM's newlines */
		fputs(pem[i] == '\n' ? "\\n" : (char[2]){ pem[i], 0 }, f);
	fprintf(f, "\",\"token_uri\":\"%s/token\"}", srv->url);
	fclose(f);
	BIO_free(bio);
	EVP_PKEY_free(key);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
}

static struct rr_store *s_open(struct fx_server *srv, struct s_gcs *g,
			       const struct rr_store_opts *opts)
{
	struct rr_store *s = NULL;

	memset(g, 0, sizeof(*g));
	CU_ASSERT_EQUAL_FATAL(fx_server_start(srv, s_handler, g), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(s_dir));
	s_write_key(srv);
	setenv("STORAGE_EMULATOR_HOST", srv->url + strlen("http://"), 1);
	setenv("HOME", s_dir, 1);
	unsetenv("GCE_METADATA_HOST");
	unsetenv("RESUME_RUN_S3_PART_SIZE");
	CU_ASSERT_EQUAL(rr_store_open("gs://bkt/pre", opts, &s), 0);
	return s;
}

static void s_close(struct fx_server *srv, struct rr_store *s)
{
	char cmd[128];

	rr_store_destroy(s);
	fx_server_stop(srv);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", s_dir);
	CU_ASSERT_EQUAL(system(cmd), 0);
	strcpy(s_dir, "/tmp/rr-gcs-test.XXXXXX");
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	unsetenv("STORAGE_EMULATOR_HOST");
}

static void test_every_request_carries_the_bearer_token_and_no_aws_headers(void)
{
	struct fx_server srv;
	struct s_gcs g;
	struct rr_store *s = s_open(&srv, &g, NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "hello", 5, NULL, NULL), 0);
	CU_ASSERT_EQUAL(g.tokens, 1);
	for (size_t i = 0; i < fx_server_nrequests(&srv); i++) {
		const struct fx_request *r = fx_server_request(&srv, i);
		if (strcmp(r->target, "/token") == 0)
			continue;
		CU_ASSERT_STRING_EQUAL(fx_header(r, "Authorization"), "Bearer tok-1");
		for (size_t h = 0; h < r->nheaders; h++)
			CU_ASSERT(strncasecmp(r->headers[h].name, "x-amz-", 6) != 0);
	}
	s_close(&srv, s);
}

static void test_create_only_is_generation_zero_and_412_is_eexist(void)
{
	struct rr_put_opts once = { .if_none_match = 1 };
	struct fx_server srv;
	struct s_gcs g;
	struct rr_store *s = s_open(&srv, &g, NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "one", 3, &once, NULL), 0);
	CU_ASSERT_STRING_EQUAL(fx_header(fx_server_last(&srv, "/bkt/pre/k"),
					 "x-goog-if-generation-match"), "0");
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "two", 3, &once, NULL), RR_EEXIST);
	CU_ASSERT_STRING_EQUAL(g.body, "one");
	s_close(&srv, s);
}

/* A create-only or compare-and-swap put bigger than a multipart part (a manifest of a very
 * large checkpoint) goes up as one PUT with its precondition: GCS takes none on a multipart
 * upload, whose completion overwrote whatever was there, and the put reported success. */
static void test_a_big_conditional_put_is_one_put_with_its_precondition(void)
{
	struct rr_put_opts once = { .if_none_match = 1 }, cas = { .if_match = "999" };
	size_t big = (9u << 20) + 7;
	struct fx_server srv;
	struct s_gcs g;
	struct rr_store *s = s_open(&srv, &g, NULL);
	char *data = malloc(big);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(data);
	memset(data, 'B', big);
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "one", 3, &once, NULL), 0);
	CU_ASSERT_EQUAL(rr_store_put(s, "k", data, big, &once, NULL), RR_EEXIST);
	CU_ASSERT_EQUAL(rr_store_put(s, "k", data, big, &cas, NULL), RR_EPRECOND);
	CU_ASSERT_EQUAL(fx_server_count(&srv, "POST", "/bkt"), 0); /* no multipart upload */
	CU_ASSERT_STRING_EQUAL(g.body, "one");
	free(data);
	s_close(&srv, s);
}

static void test_version_tags_are_generations_for_compare_and_swap(void)
{
	char gen[RR_ETAG_MAX], got[RR_ETAG_MAX];
	struct fx_server srv;
	struct s_gcs g;
	struct rr_buf b;
	struct rr_store *s = s_open(&srv, &g, NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "v1", 2, NULL, gen), 0);
	CU_ASSERT_STRING_EQUAL(gen, "1");
	rr_buf_init(&b, 1024);
	CU_ASSERT_EQUAL(rr_store_get(s, "k", &b, got), 0);
	CU_ASSERT_STRING_EQUAL(got, "1");
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "v2", 2, &(struct rr_put_opts){ .if_match = got },
				     gen), 0);
	CU_ASSERT_STRING_EQUAL(fx_header(fx_server_last(&srv, "/bkt/pre/k"),
					 "x-goog-if-generation-match"), "1");
	CU_ASSERT_STRING_EQUAL(gen, "2");
	/* The old generation no longer matches. */
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "v3", 2, &(struct rr_put_opts){ .if_match = got },
				     NULL), RR_EPRECOND);
	CU_ASSERT_STRING_EQUAL(g.body, "v2");
	rr_buf_free(&b);
	s_close(&srv, s);
}

static void test_a_401_gets_a_fresh_token_and_one_retry(void)
{
	struct fx_server srv;
	struct s_gcs g;
	struct rr_store *s = s_open(&srv, &g, NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	g.expire_next = 1;
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "x", 1, NULL, NULL), 0);
	CU_ASSERT_EQUAL(g.tokens, 2);
	CU_ASSERT_STRING_EQUAL(fx_header(fx_server_last(&srv, "/bkt/pre/k"), "Authorization"),
			       "Bearer tok-2");
	s_close(&srv, s);
}

/* The token endpoint answers 503 once when a token is needed (here the fresh one after a
 * 401; a metadata server during a host's maintenance does the same): the request waits and
 * asks again, as a 503 from the bucket would, instead of failing at once. */
static void test_a_token_endpoint_503_is_retried(void)
{
	struct fx_server srv;
	struct s_gcs g;
	struct rr_store *s = s_open(&srv, &g, NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	g.expire_next = 1;
	g.token_503 = 1;
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "x", 1, NULL, NULL), 0);
	CU_ASSERT_EQUAL(g.token_503, 0);
	CU_ASSERT_EQUAL(g.tokens, 2);
	CU_ASSERT_STRING_EQUAL(g.body, "x");
	s_close(&srv, s);
}

static void test_batch_delete_goes_key_by_key(void)
{
	static const char *const keys[] = { "a", "b", "c" };
	struct fx_server srv;
	struct s_gcs g;
	struct rr_store *s = s_open(&srv, &g, NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(rr_store_del_many(s, keys, 3), 0);
	CU_ASSERT_EQUAL(fx_server_count(&srv, "DELETE", "/bkt/pre/"), 3);
	CU_ASSERT_EQUAL(fx_server_count(&srv, "POST", "/bkt?delete"), 0);
	s_close(&srv, s);
}

/* Retention's delete (rr_store_del_if_old): only an object not written since its listing
 * goes, conditional on the generation a HEAD saw, so that a write landing between the HEAD
 * and the DELETE is not deleted either. */
static void test_delete_if_old_deletes_only_what_was_not_written_since(void)
{
	struct fx_server srv;
	struct s_gcs g;
	struct rr_store *s = s_open(&srv, &g, NULL);
	int64_t cutoff = ((int64_t)time(NULL) - 3600) * 1000;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "v1", 2, NULL, NULL), 0);
	g.modified = time(NULL) - 7200; /* two hours old */
	CU_ASSERT_EQUAL(rr_store_del_if_old(s, "k", cutoff), 0);
	CU_ASSERT_STRING_EQUAL(fx_header(fx_server_last(&srv, "/bkt/pre/k"),
					 "x-goog-if-generation-match"), "1");
	CU_ASSERT_FALSE(g.object_exists);
	CU_ASSERT_EQUAL(rr_store_del_if_old(s, "k", cutoff), 0); /* absent: nothing to do */

	/* written again since the cutoff: kept, no DELETE sent */
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "v2", 2, NULL, NULL), 0);
	CU_ASSERT_EQUAL(rr_store_del_if_old(s, "k", cutoff), RR_EPRECOND);
	CU_ASSERT_EQUAL(fx_server_count(&srv, "DELETE", "/bkt/pre/k"), 1);
	CU_ASSERT_TRUE(g.object_exists);

	/* old at the HEAD, written again before the DELETE: the store refuses it */
	g.modified = time(NULL) - 7200;
	g.written_before_delete = 1;
	CU_ASSERT_EQUAL(rr_store_del_if_old(s, "k", cutoff), RR_EPRECOND);
	CU_ASSERT_TRUE(g.object_exists);
	s_close(&srv, s);
}

static void test_sse_options_are_refused_for_gcs(void)
{
	struct rr_store_opts o = { .s3_sse = "AES256" };
	struct rr_store *s = NULL;

	setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1", 1);
	CU_ASSERT_EQUAL(rr_store_open("gs://bkt/pre", &o, &s), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EINVAL), "s3://"));
	unsetenv("STORAGE_EMULATOR_HOST");
}

static void test_hmac_keys_sign_with_sigv4_in_the_auto_region(void)
{
	struct rr_store_opts o = { .gcs_hmac = 1 };
	struct fx_server srv;
	struct s_gcs g;
	struct rr_store *s;
	const char *auth;

	setenv("AWS_ACCESS_KEY_ID", "GOOGHMACKEY", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "hmac-secret", 1);
	s = s_open(&srv, &g, &o);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(rr_store_put(s, "k", "x", 1, NULL, NULL), 0);
	auth = fx_header(fx_server_last(&srv, "/bkt/pre/k"), "Authorization");
	CU_ASSERT_PTR_NOT_NULL_FATAL(auth);
	CU_ASSERT_PTR_NOT_NULL(strstr(auth, "AWS4-HMAC-SHA256 Credential=GOOGHMACKEY/"));
	CU_ASSERT_PTR_NOT_NULL(strstr(auth, "/auto/s3/aws4_request"));
	CU_ASSERT_EQUAL(g.tokens, 0);
	s_close(&srv, s);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
}

static CU_TestInfo s_tests[] = {
	{ "a_big_conditional_put_is_one_put_with_its_precondition",
	  test_a_big_conditional_put_is_one_put_with_its_precondition },
	{ "every_request_carries_the_bearer_token_and_no_aws_headers",
	  test_every_request_carries_the_bearer_token_and_no_aws_headers },
	{ "create_only_is_generation_zero_and_412_is_eexist",
	  test_create_only_is_generation_zero_and_412_is_eexist },
	{ "version_tags_are_generations_for_compare_and_swap",
	  test_version_tags_are_generations_for_compare_and_swap },
	{ "a_401_gets_a_fresh_token_and_one_retry", test_a_401_gets_a_fresh_token_and_one_retry },
	{ "a_token_endpoint_503_is_retried", test_a_token_endpoint_503_is_retried },
	{ "batch_delete_goes_key_by_key", test_batch_delete_goes_key_by_key },
	{ "delete_if_old_deletes_only_what_was_not_written_since",
	  test_delete_if_old_deletes_only_what_was_not_written_since },
	{ "sse_options_are_refused_for_gcs", test_sse_options_are_refused_for_gcs },
	{ "hmac_keys_sign_with_sigv4_in_the_auto_region",
	  test_hmac_keys_sign_with_sigv4_in_the_auto_region },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("store_gcs", s_tests)
