/* Azure credentials: the Shared Key StringToSign (against the canonicalization examples of
 * Microsoft's "Authorize with Shared Key", learn.microsoft.com/rest/api/storageservices/
 * authorize-with-shared-key), the signature, connection strings, Entra token answers, the
 * order in which credentials are chosen, and when a cached token is fetched anew (against
 * the in-process HTTP server playing IMDS). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "http_fixture.h"
#include "rr/azure_auth.h"
#include "rr/azure_shared_key.h"
#include "rr/buf.h"
#include "rr/error.h"
#include "rr/http.h"

#define S_DEV_KEY                                                                 \
	"Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

static char *s_sts(const char *account, const char *method, const struct rr_http_header *h,
		   size_t n, const char *path, const char *query)
{
	struct rr_buf b;
	char *out;

	rr_buf_init(&b, 1 << 16);
	if (rr_azure_string_to_sign(&b, account, method, h, n, path, query)) {
		rr_buf_free(&b);
		return NULL;
	}
	out = strdup((const char *)b.data);
	rr_buf_free(&b);
	return out;
}

/* The page's examples: "?restype=container&comp=metadata" canonicalizes to
 * "/myaccount/mycontainer\ncomp:metadata\nrestype:container", and repeated "include"
 * values are sorted and comma-joined. */
static void test_string_to_sign_resource_matches_documented_examples(void)
{
	struct rr_http_header h[] = { { "x-ms-date", "Sun, 11 Oct 2009 21:49:13 GMT" },
				      { "x-ms-version", "2009-09-19" } };
	const char *head = "GET\n\n\n\n\n\n\n\n\n\n\n\n"
			   "x-ms-date:Sun, 11 Oct 2009 21:49:13 GMT\nx-ms-version:2009-09-19\n";
	char want[512], *got;

	got = s_sts("myaccount", "GET", h, 2, "/mycontainer", "restype=container&comp=metadata");
	snprintf(want, sizeof(want), "%s/myaccount/mycontainer\ncomp:metadata\nrestype:container",
		 head);
	CU_ASSERT_STRING_EQUAL(got, want);
	free(got);
	got = s_sts("myaccount", "GET", h, 2, "/mycontainer",
		    "restype=container&comp=list&include=snapshots&include=metadata"
		    "&include=uncommittedblobs");
	snprintf(want, sizeof(want), "%s/myaccount/mycontainer\ncomp:list\n"
		 "include:metadata,snapshots,uncommittedblobs\nrestype:container", head);
	CU_ASSERT_STRING_EQUAL(got, want);
	free(got);
}

/* Standard headers in the page's order whatever order they are sent in; a zero
 * Content-Length is an empty line; x-ms- headers lower-cased, sorted, trimmed; query values
 * decoded. */
static void test_string_to_sign_orders_and_canonicalizes_headers(void)
{
	struct rr_http_header h[] = {
		{ "Range", "bytes=0-9" },         { "X-MS-Version", "2021-08-06" },
		{ "If-Match", "\"0x8D\"" },       { "x-ms-date", "Mon, 02 Nov 2026 10:00:00 GMT" },
		{ "Content-Length", "0" },        { "x-ms-blob-type", "  BlockBlob " },
		{ "Content-Type", "application/xml" },
	};
	char *got = s_sts("acct", "PUT", h, 7, "/acct/c/a%20b", "comp=block&blockid=YQ%3D%3D");

	CU_ASSERT_STRING_EQUAL(got, "PUT\n\n\n\n\napplication/xml\n\n\n\"0x8D\"\n\n\nbytes=0-9\n"
				    "x-ms-blob-type:BlockBlob\n"
				    "x-ms-date:Mon, 02 Nov 2026 10:00:00 GMT\n"
				    "x-ms-version:2021-08-06\n"
				    "/acct/acct/c/a%20b\nblockid:YQ==\ncomp:block");
	free(got);
}

static void test_string_to_sign_refuses_line_breaks_and_bad_escapes(void)
{
	struct rr_http_header bad[] = { { "x-ms-meta-a", "x\ny" } };
	struct rr_buf b;

	rr_buf_init(&b, 4096);
	CU_ASSERT_EQUAL(rr_azure_string_to_sign(&b, "a", "GET", bad, 1, "/c", NULL), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_azure_string_to_sign(&b, "a", "GET", NULL, 0, "/c", "marker=%4"),
			RR_EINVAL);
	CU_ASSERT_EQUAL(rr_azure_string_to_sign(&b, "a", "GET", NULL, 0, "c", NULL), RR_EINVAL);
	rr_buf_free(&b);
}

/* The signature of a List Blobs request with Azurite's development key, as Python's hmac
 * and base64 compute it (the key and account are Azurite's documented ones); Azurite
 * accepting the same signer is tested in integration_azure_store. */
static void test_shared_key_signature_known_answer(void)
{
	struct rr_http_header h[] = { { "x-ms-date", "Mon, 02 Nov 2026 10:00:00 GMT" },
				      { "x-ms-version", "2021-08-06" } };
	unsigned char key[RR_AZURE_KEY_MAX];
	char out[256];
	struct rr_buf b;
	int n = rr_azure_key_decode(S_DEV_KEY, key, sizeof(key));

	CU_ASSERT_EQUAL(n, 64);
	rr_buf_init(&b, 4096);
	CU_ASSERT_EQUAL(rr_azure_string_to_sign(&b, "devstoreaccount1", "GET", h, 2,
						"/devstoreaccount1/ckpt",
						"restype=container&comp=list"), 0);
	CU_ASSERT_EQUAL(rr_azure_shared_key_sign(key, (size_t)n, "devstoreaccount1", &b, out,
						 sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "SharedKey devstoreaccount1:"
				    "6vEwMGLCUxuecSkAlYwGnZJBha8LWhSyB4Qiz4oD8WY=");
	rr_buf_free(&b);
}

static void test_key_decode_refuses_what_is_not_base64(void)
{
	unsigned char key[RR_AZURE_KEY_MAX];

	CU_ASSERT_EQUAL(rr_azure_key_decode("", key, sizeof(key)), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_azure_key_decode("abc", key, sizeof(key)), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_azure_key_decode("ab c", key, sizeof(key)), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_azure_key_decode("a=bc", key, sizeof(key)), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_azure_key_decode("YWJj", key, 2), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_azure_key_decode("YQ==", key, sizeof(key)), 1);
	CU_ASSERT_EQUAL(key[0], 'a');
}

static void test_conn_string_reads_its_parts(void)
{
	const char *s = "DefaultEndpointsProtocol=https;accountname=acct;AccountKey=" S_DEV_KEY
			";BlobEndpoint=http://127.0.0.1:10000/acct/;QueueEndpoint=x;"
			"SharedAccessSignature=?sv=1&sig=a%3D";
	struct rr_azure_conn c;
	char why[256];

	CU_ASSERT_EQUAL(rr_azure_conn_parse(s, strlen(s), &c, why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(c.account, "acct");
	CU_ASSERT_STRING_EQUAL(c.key, S_DEV_KEY);
	CU_ASSERT_STRING_EQUAL(c.blob_endpoint, "http://127.0.0.1:10000/acct");
	CU_ASSERT_STRING_EQUAL(c.protocol, "https");
	CU_ASSERT_STRING_EQUAL(c.sas, "sv=1&sig=a%3D");
	rr_azure_conn_wipe(&c);
	CU_ASSERT_EQUAL(rr_azure_conn_parse("UseDevelopmentStorage=true", 26, &c, why,
					    sizeof(why)), 0);
	CU_ASSERT_EQUAL(c.dev, 1);
}

static void test_conn_string_refuses_repeats_long_values_and_bad_parts(void)
{
	const char *twice = "AccountName=a;AccountName=b";
	const char *nopair = "AccountName=a;garbage";
	const char *proto = "DefaultEndpointsProtocol=ftp";
	char longv[400], why[256];
	struct rr_azure_conn c;

	CU_ASSERT_EQUAL(rr_azure_conn_parse(twice, strlen(twice), &c, why, sizeof(why)),
			RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "twice"));
	CU_ASSERT_EQUAL(rr_azure_conn_parse(nopair, strlen(nopair), &c, why, sizeof(why)),
			RR_EINVAL);
	CU_ASSERT_EQUAL(rr_azure_conn_parse(proto, strlen(proto), &c, why, sizeof(why)),
			RR_EINVAL);
	snprintf(longv, sizeof(longv), "AccountKey=%0300d", 0);
	CU_ASSERT_EQUAL(rr_azure_conn_parse(longv, strlen(longv), &c, why, sizeof(why)),
			RR_EINVAL);
	CU_ASSERT_PTR_NULL(strstr(why, "0000")); /* the key is not quoted */
	CU_ASSERT_EQUAL(c.key[0], '\0');
}

static void test_token_answer_reads_expires_in_and_expires_on(void)
{
	const char *in = "{\"token_type\":\"Bearer\",\"expires_in\":3599,"
			 "\"access_token\":\"eyJ0\"}";
	const char *in_s = "{\"expires_in\":\"3600\",\"access_token\":\"tok\"}";
	const char *on = "{\"access_token\":\"eyJ1\",\"expires_on\":\"1000600\","
			 "\"resource\":\"https://storage.azure.com/\"}";
	char tok[64], why[256];
	int64_t exp = 0;

	CU_ASSERT_EQUAL(rr_azure_token_parse("t", in, strlen(in), 1000000, tok, sizeof(tok), &exp,
					     why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(tok, "eyJ0");
	CU_ASSERT_EQUAL(exp, 1003599);
	CU_ASSERT_EQUAL(rr_azure_token_parse("t", in_s, strlen(in_s), 1000000, tok, sizeof(tok),
					     &exp, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(exp, 1003600);
	CU_ASSERT_EQUAL(rr_azure_token_parse("t", on, strlen(on), 1000000, tok, sizeof(tok), &exp,
					     why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(tok, "eyJ1");
	CU_ASSERT_EQUAL(exp, 1000600);
}

static void test_token_answer_refuses_what_cannot_be_used(void)
{
	const char *bad[] = {
		"{\"expires_in\":3600}",
		"{\"access_token\":\"a b\",\"expires_in\":3600}",
		"{\"access_token\":\"t\"}",
		"{\"access_token\":\"t\",\"expires_in\":-5}",
		"{\"access_token\":\"t\",\"expires_on\":\"999\"}", /* already past */
		/* under a second: the token would expire at once (found by fuzz_azure_auth) */
		"{\"access_token\":\"t\",\"expires_in\":1e-99}",
		"{\"access_token\":\"t\",\"expires_in\":0.5}",
		"{\"access_token\":\"t\",\"expires_on\":1000.5}",
		"{\"access_token\":\"t\",\"expires_in\":\"12x\"}",
		"[1]",
		"{\"access_token\":\"t\",\"expires_in\":3600} trailing",
	};
	char tok[8], why[256];
	int64_t exp;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL(rr_azure_token_parse("t", bad[i], strlen(bad[i]), 1000, tok,
						     sizeof(tok), &exp, why, sizeof(why)),
				RR_EIO);
		CU_ASSERT_EQUAL(tok[0], '\0');
	}
	/* a token too long for the caller's buffer is refused, not cut */
	const char *too_long = "{\"access_token\":\"123456789\",\"expires_in\":1}";
	CU_ASSERT_EQUAL(rr_azure_token_parse("t", too_long, strlen(too_long), 1000, tok,
					     sizeof(tok), &exp, why, sizeof(why)), RR_EIO);
}

static void s_clear_env(void)
{
	const char *v[] = { "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN",
			    "AZURE_FEDERATED_TOKEN_FILE", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_ID",
			    "AZURE_TENANT_ID", "AZURE_AUTHORITY_HOST",
			    "AZURE_POD_IDENTITY_AUTHORITY_HOST" };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		unsetenv(v[i]);
}

static enum rr_azure_auth_kind s_kind(const struct rr_azure_conn *conn, char *source,
				      size_t cap, int *rc)
{
	struct rr_azure_creds_opts o = { .account = "acct", .conn = conn };
	struct rr_azure_creds *c = NULL;
	struct rr_http *h = NULL;
	enum rr_azure_auth_kind k = 0;
	char why[256] = "";

	rr_http_new(&(struct rr_http_opts){ 0 }, &h);
	o.http = h;
	*rc = rr_azure_creds_new(&o, &c, why, sizeof(why));
	if (!*rc) {
		k = rr_azure_creds_kind(c);
		snprintf(source, cap, "%s", rr_azure_creds_source(c));
	} else {
		snprintf(source, cap, "%s", why);
	}
	rr_azure_creds_destroy(c);
	rr_http_destroy(h);
	return k;
}

/* Connection string, then AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN, workload identity,
 * service principal, managed identity: the order of Azure's tools. */
static void test_credentials_follow_azure_tools_order(void)
{
	struct rr_azure_conn conn;
	char src[256];
	int rc;

	s_clear_env();
	memset(&conn, 0, sizeof(conn));
	snprintf(conn.sas, sizeof(conn.sas), "sv=1&sig=x");
	setenv("AZURE_STORAGE_KEY", S_DEV_KEY, 1);
	CU_ASSERT_EQUAL(s_kind(&conn, src, sizeof(src), &rc), RR_AZURE_AUTH_SAS);
	CU_ASSERT_PTR_NOT_NULL(strstr(src, "connection string"));
	CU_ASSERT_EQUAL(s_kind(NULL, src, sizeof(src), &rc), RR_AZURE_AUTH_SHARED_KEY);
	CU_ASSERT_STRING_EQUAL(src, "AZURE_STORAGE_KEY");
	unsetenv("AZURE_STORAGE_KEY");
	setenv("AZURE_STORAGE_SAS_TOKEN", "?sv=1&sig=y", 1);
	CU_ASSERT_EQUAL(s_kind(NULL, src, sizeof(src), &rc), RR_AZURE_AUTH_SAS);
	unsetenv("AZURE_STORAGE_SAS_TOKEN");
	setenv("AZURE_CLIENT_SECRET", "secret", 1);
	setenv("AZURE_CLIENT_ID", "app-1", 1);
	setenv("AZURE_TENANT_ID", "tenant-1", 1);
	CU_ASSERT_EQUAL(s_kind(NULL, src, sizeof(src), &rc), RR_AZURE_AUTH_BEARER);
	CU_ASSERT_STRING_EQUAL(src, "service principal (app-1)");
	setenv("AZURE_FEDERATED_TOKEN_FILE", "/nonexistent", 1);
	CU_ASSERT_EQUAL(s_kind(NULL, src, sizeof(src), &rc), RR_AZURE_AUTH_BEARER);
	CU_ASSERT_STRING_EQUAL(src, "workload identity (app-1)");
	s_clear_env();
	CU_ASSERT_EQUAL(s_kind(NULL, src, sizeof(src), &rc), RR_AZURE_AUTH_BEARER);
	CU_ASSERT_STRING_EQUAL(src, "managed identity");
	setenv("AZURE_CLIENT_SECRET", "secret", 1); /* half a service principal */
	s_kind(NULL, src, sizeof(src), &rc);
	CU_ASSERT_EQUAL(rc, RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(src, "AZURE_TENANT_ID"));
	CU_ASSERT_PTR_NULL(strstr(src, "secret"));
	setenv("AZURE_TENANT_ID", "t", 1);
	setenv("AZURE_CLIENT_ID", "c", 1);
	setenv("AZURE_AUTHORITY_HOST", "http://login.example.com/", 1);
	s_kind(NULL, src, sizeof(src), &rc);
	CU_ASSERT_EQUAL(rc, RR_EINVAL); /* tokens fetched over plain http from afar */
	s_clear_env();
}

/* IMDS handing out tokens "tok-N" valid for `life` seconds. */
struct s_imds {
	int n;
	int life;
};

static void s_imds_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	struct s_imds *t = ud;
	char body[128];

	if (!fx_header(req, "Metadata") || !strstr(req->target, "resource=https%3A%2F%2Fstorage")) {
		fx_resp_text(resp, 400, "{\"error\":\"invalid_request\"}");
		return;
	}
	t->n++;
	snprintf(body, sizeof(body), "{\"access_token\":\"tok-%d\",\"expires_in\":\"%d\"}",
		 t->n, t->life);
	fx_resp_text(resp, 200, body);
}

static int s_token(struct rr_azure_creds *c, int force, char *out)
{
	char why[256];
	return rr_azure_creds_token(c, force, out, 64, why, sizeof(why));
}

/* A token is reused until the margin before its expiry, or halfway through the life of one
 * issued for less than twice the margin (else a token shorter than the margin would be
 * fetched again for every request); force_refresh (the server refused it) always fetches. */
static void test_token_is_reused_until_its_refresh_time(void)
{
	struct s_imds t = { 0, 60 };
	struct fx_server srv;
	struct rr_azure_creds_opts o = { .account = "acct" };
	struct rr_azure_creds *c = NULL;
	struct rr_http *h = NULL;
	char why[256], tok[64];

	s_clear_env();
	CU_ASSERT_EQUAL_FATAL(fx_server_start(&srv, s_imds_handler, &t), 0);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(&(struct rr_http_opts){ 0 }, &h), 0);
	o.http = h;
	setenv("AZURE_POD_IDENTITY_AUTHORITY_HOST", srv.url, 1); /* where IMDS is */
	CU_ASSERT_EQUAL_FATAL(rr_azure_creds_new(&o, &c, why, sizeof(why)), 0);
	/* 60 s, under the 5 min margin: reused for 30 s */
	CU_ASSERT_EQUAL(s_token(c, 0, tok), 0);
	CU_ASSERT_STRING_EQUAL(tok, "tok-1");
	CU_ASSERT_EQUAL(s_token(c, 0, tok), 0);
	CU_ASSERT_STRING_EQUAL(tok, "tok-1");
	CU_ASSERT_EQUAL(t.n, 1);
	CU_ASSERT_EQUAL(s_token(c, 1, tok), 0);
	CU_ASSERT_STRING_EQUAL(tok, "tok-2");
	/* 2 s: fetched anew once half of it has passed, while it is still valid */
	t.life = 2;
	CU_ASSERT_EQUAL(s_token(c, 1, tok), 0);
	CU_ASSERT_STRING_EQUAL(tok, "tok-3");
	fx_sleep_ms(1100);
	CU_ASSERT_EQUAL(s_token(c, 0, tok), 0);
	CU_ASSERT_STRING_EQUAL(tok, "tok-4");
	/* an hour: reused (the margin, 5 minutes, is far off) */
	t.life = 3600;
	CU_ASSERT_EQUAL(s_token(c, 1, tok), 0);
	CU_ASSERT_EQUAL(s_token(c, 0, tok), 0);
	CU_ASSERT_STRING_EQUAL(tok, "tok-5");
	CU_ASSERT_EQUAL(fx_server_count(&srv, "GET", "/metadata/identity/oauth2/token"), 5);
	rr_azure_creds_destroy(c);
	rr_http_destroy(h);
	fx_server_stop(&srv);
	s_clear_env();
}

static CU_TestInfo s_tests[] = {
	{ "test_string_to_sign_resource_matches_documented_examples",
	  test_string_to_sign_resource_matches_documented_examples },
	{ "test_string_to_sign_orders_and_canonicalizes_headers",
	  test_string_to_sign_orders_and_canonicalizes_headers },
	{ "test_string_to_sign_refuses_line_breaks_and_bad_escapes",
	  test_string_to_sign_refuses_line_breaks_and_bad_escapes },
	{ "test_shared_key_signature_known_answer", test_shared_key_signature_known_answer },
	{ "test_key_decode_refuses_what_is_not_base64",
	  test_key_decode_refuses_what_is_not_base64 },
	{ "test_conn_string_reads_its_parts", test_conn_string_reads_its_parts },
	{ "test_conn_string_refuses_repeats_long_values_and_bad_parts",
	  test_conn_string_refuses_repeats_long_values_and_bad_parts },
	{ "test_token_answer_reads_expires_in_and_expires_on",
	  test_token_answer_reads_expires_in_and_expires_on },
	{ "test_token_answer_refuses_what_cannot_be_used",
	  test_token_answer_refuses_what_cannot_be_used },
	{ "test_credentials_follow_azure_tools_order", test_credentials_follow_azure_tools_order },
	{ "test_token_is_reused_until_its_refresh_time",
	  test_token_is_reused_until_its_refresh_time },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("azure_auth", s_tests)
