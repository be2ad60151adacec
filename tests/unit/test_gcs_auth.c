/* CUnit suite "gcs_auth": Google OAuth2 tokens for GCS (storage/auth/gcs_auth.c). The JWT is
 * taken apart and its signature checked with the public half of an RSA key made here; the
 * in-process HTTP server (http_fixture.h) plays the key file's token_uri and the metadata
 * server at once. GOOGLE_APPLICATION_CREDENTIALS and GCE_METADATA_HOST are saved before
 * each test, cleared, and put back after it, so the developer's own setup neither leaks in
 * nor gets lost. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "rr/buf.h"
#include "rr/clock.h"
#include "rr/error.h"
#include "rr/gcs_auth.h"
#include "rr/http.h"
#include "rr/log.h"

#include "cunit_main.h"
#include "http_fixture.h"

#define S_EMAIL "ckpt-writer@fixture-project.iam.gserviceaccount.com"
#define S_KID "0123456789abcdef0123456789abcdef01234567"
#define S_TOKEN_MARK "FixtureSecretToken"
#define S_TOKEN_PATH "/token"
#define S_MD_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define S_NOW 1700000000LL
#define S_CLAIMS_START "{\"iss\":\"" S_EMAIL "\",\"scope\":\"" RR_GCS_SCOPE "\",\"aud\":"

static const char *const s_vars[] = { "GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST" };
#define S_NVARS (sizeof(s_vars) / sizeof(s_vars[0]))

/* What the fake servers answer. Handler calls are serialised by the fixture. */
struct s_fake {
	int status;          /* 0: 200 with a fresh token */
	const char *body;    /* with status: the body of the failure */
	int bad_type;        /* the token answer says "token_type": "MAC" */
	int no_flavor;       /* metadata answers lack Metadata-Flavor: Google */
	long delay_ms;
	unsigned issued;     /* tokens handed out */
	long clock_s;        /* nonzero: the token endpoint's clock is this far ahead of ours,
			      * it says so in a Date header and refuses a JWT whose iat/exp
			      * are off by its clock (s_refused_for_time) */
	int time_refusals;
};

struct s_env {
	char *saved[S_NVARS];
	char dir[64];
	char key_path[128];
	struct s_fake fake;
	struct fx_server srv;
	struct rr_http *http;
	struct rr_gcs_auth *auth;
	struct rr_gcs_auth_opts opts;
	char token[RR_GCS_TOKEN_MAX];
	char source[96];
	char why[1024];
};

static EVP_PKEY *s_pkey; /* made once: RSA key generation is slow under the sanitizers */
static char *s_pem;

static void s_free_key(void)
{
	EVP_PKEY_free(s_pkey);
	free(s_pem);
}

static void s_make_key(void)
{
	BIO *bio;
	char *data;
	long n;

	if (s_pkey)
		return;
	s_pkey = EVP_RSA_gen(2048);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s_pkey);
	bio = BIO_new(BIO_s_mem());
	CU_ASSERT_PTR_NOT_NULL_FATAL(bio);
	CU_ASSERT_EQUAL_FATAL(PEM_write_bio_PrivateKey(bio, s_pkey, NULL, NULL, 0, NULL, NULL),
			      1);
	n = BIO_get_mem_data(bio, &data);
	s_pem = malloc((size_t)n + 1);
	memcpy(s_pem, data, (size_t)n);
	s_pem[n] = '\0';
	BIO_free(bio);
	atexit(s_free_key);
}

/* A key file as JSON text (the caller frees it). NULL fields are left out. */
static char *s_key_json(const char *type, const char *pem, const char *kid,
			const char *token_uri)
{
	cJSON *j = cJSON_CreateObject();
	char *text;

	if (type)
		cJSON_AddStringToObject(j, "type", type);
	cJSON_AddStringToObject(j, "project_id", "fixture-project");
	if (kid)
		cJSON_AddStringToObject(j, "private_key_id", kid);
	if (pem)
		cJSON_AddStringToObject(j, "private_key", pem);
	cJSON_AddStringToObject(j, "client_email", S_EMAIL);
	cJSON_AddStringToObject(j, "client_id", "123456789012345678901");
	cJSON_AddStringToObject(j, "auth_uri", "https://accounts.google.com/o/oauth2/auth");
	if (token_uri)
		cJSON_AddStringToObject(j, "token_uri", token_uri);
	text = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	return text;
}

static void s_write_key_file(struct s_env *e, const char *json)
{
	FILE *f = fopen(e->key_path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(json, f);
	fclose(f);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", e->key_path, 1);
}

static void s_token_answer(struct s_fake *f, struct fx_response *resp)
{
	char body[256];

	f->issued++;
	snprintf(body, sizeof(body), "{\"access_token\":\"ya29.c." S_TOKEN_MARK "-%u\","
		 "\"expires_in\":3599,\"token_type\":\"%s\"}", f->issued,
		 f->bad_type ? "MAC" : "Bearer");
	fx_resp_text(resp, 200, body);
}

static int s_refused_for_time(struct s_fake *f, const struct fx_request *req,
			      struct fx_response *resp);

static void s_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	struct s_fake *f = ud;

	resp->delay_ms = f->delay_ms;
	if (strcmp(req->method, "POST") == 0 && strcmp(req->target, S_TOKEN_PATH) == 0) {
		if (f->clock_s && s_refused_for_time(f, req, resp))
			return;
		if (f->status)
			fx_resp_text(resp, f->status, f->body ? f->body : "");
		else
			s_token_answer(f, resp);
		return;
	}
	if (strcmp(req->method, "GET") == 0 && strcmp(req->target, S_MD_PATH) == 0) {
		const char *flavor = fx_header(req, "Metadata-Flavor");
		if (!f->no_flavor)
			fx_resp_header(resp, "Metadata-Flavor", "Google");
		if (!flavor || strcmp(flavor, "Google") != 0)
			fx_resp_text(resp, 403, "Missing Metadata-Flavor:Google header.");
		else if (f->status)
			fx_resp_text(resp, f->status, f->body ? f->body : "");
		else
			s_token_answer(f, resp);
		return;
	}
	fx_resp_text(resp, 404, "");
}

static void s_setup(struct s_env *e)
{
	memset(e, 0, sizeof(*e));
	rr_log_init(0, RR_LOG_ERROR); /* the fallback tests provoke warnings on purpose */
	s_make_key();
	for (size_t i = 0; i < S_NVARS; i++) {
		const char *v = getenv(s_vars[i]);
		e->saved[i] = v ? strdup(v) : NULL;
		unsetenv(s_vars[i]);
	}
	snprintf(e->dir, sizeof(e->dir), "/tmp/rr_gcs_XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(e->dir));
	snprintf(e->key_path, sizeof(e->key_path), "%s/key.json", e->dir);
	CU_ASSERT_EQUAL_FATAL(fx_server_start(&e->srv, s_handler, &e->fake), 0);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &e->http), 0);
	e->opts.http = e->http;
	e->opts.metadata_endpoint = e->srv.url;
}

static void s_teardown(struct s_env *e)
{
	rr_gcs_auth_destroy(e->auth);
	rr_http_destroy(e->http);
	fx_server_stop(&e->srv);
	unlink(e->key_path);
	rmdir(e->dir);
	for (size_t i = 0; i < S_NVARS; i++) {
		if (e->saved[i])
			setenv(s_vars[i], e->saved[i], 1);
		else
			unsetenv(s_vars[i]);
		free(e->saved[i]);
	}
}

/* Writes the usual key file (token_uri on the fixture) and makes the auth object. */
static void s_setup_key(struct s_env *e)
{
	char uri[128];
	char *json;

	snprintf(uri, sizeof(uri), "%s" S_TOKEN_PATH, e->srv.url);
	json = s_key_json("service_account", s_pem, S_KID, uri);
	s_write_key_file(e, json);
	free(json);
	CU_ASSERT_EQUAL_FATAL(rr_gcs_auth_new(&e->opts, &e->auth, e->why, sizeof(e->why)), 0);
}

static int s_token(struct s_env *e, int force)
{
	memset(e->token, 0x5a, sizeof(e->token));
	e->source[0] = '\0';
	e->why[0] = '\0';
	return rr_gcs_auth_token(e->auth, force, e->token, sizeof(e->token), e->source, e->why,
				 sizeof(e->why));
}

static void s_assert_no_secret_in_why(const struct s_env *e)
{
	CU_ASSERT_PTR_NULL(strstr(e->why, S_TOKEN_MARK));
	CU_ASSERT_PTR_NULL(strstr(e->why, "PRIVATE KEY"));
	if (strstr(e->why, S_TOKEN_MARK) || strstr(e->why, "PRIVATE KEY"))
		fprintf(stderr, "\nsecret in why: %s\n", e->why);
}

/* ---- JWT helpers ---- */

static int s_b64url_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

/* Decodes unpadded base64url s[0..n) into out (the caller frees it); -1 when malformed. */
static long s_b64url_decode(const char *s, size_t n, unsigned char **out)
{
	unsigned char *o = malloc(n * 3 / 4 + 3);
	uint32_t acc = 0;
	int bits = 0;
	long len = 0;

	*out = o;
	if (n % 4 == 1)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int v = s_b64url_value(s[i]);
		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			o[len++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	o[len] = '\0';
	return len;
}

struct s_jwt {
	char *header;          /* decoded JSON text */
	char *claims;
	unsigned char *sig;
	long sig_len;
	size_t signed_len;     /* bytes of "header.claims" */
};

static void s_jwt_free(struct s_jwt *j)
{
	free(j->header);
	free(j->claims);
	free(j->sig);
}

/* Splits and decodes a JWT; 0 when it has three well-formed parts. */
static int s_jwt_split(const char *jwt, struct s_jwt *j)
{
	const char *d1 = strchr(jwt, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	long n;

	memset(j, 0, sizeof(*j));
	if (!d1 || !d2 || strchr(d2 + 1, '.'))
		return -1;
	n = s_b64url_decode(jwt, (size_t)(d1 - jwt), (unsigned char **)&j->header);
	if (n <= 0)
		return -1;
	n = s_b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), (unsigned char **)&j->claims);
	if (n <= 0)
		return -1;
	j->sig_len = s_b64url_decode(d2 + 1, strlen(d2 + 1), &j->sig);
	if (j->sig_len <= 0)
		return -1;
	j->signed_len = (size_t)(d2 - jwt);
	return 0;
}

/* The public half of the test key alone, as a verifier would hold it. */
static EVP_PKEY *s_public_key(void)
{
	unsigned char *der = NULL;
	const unsigned char *p;
	EVP_PKEY *pub;
	int n = i2d_PUBKEY(s_pkey, &der);

	CU_ASSERT_FATAL(n > 0);
	p = der;
	pub = d2i_PUBKEY(NULL, &p, n);
	OPENSSL_free(der);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pub);
	return pub;
}

static int s_verify(const unsigned char *msg, size_t len, const unsigned char *sig,
		    size_t sig_len)
{
	EVP_PKEY *pub = s_public_key();
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok;

	ok = EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, pub) == 1 &&
	     EVP_DigestVerify(ctx, sig, sig_len, msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(pub);
	return ok;
}

/* Checks a JWT made from the usual key file: header, claims (iat within [iat_lo, iat_hi])
 * and a signature that verifies with the public key. */
static void s_check_jwt(const char *jwt, const char *aud, int64_t iat_lo, int64_t iat_hi)
{
	struct s_jwt j;
	const cJSON *iat, *exp;
	cJSON *c;

	CU_ASSERT_EQUAL_FATAL(s_jwt_split(jwt, &j), 0);
	CU_ASSERT_STRING_EQUAL(j.header, "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"" S_KID
					 "\"}");
	c = cJSON_Parse(j.claims);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(c, "iss")->valuestring, S_EMAIL);
	CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(c, "scope")->valuestring, RR_GCS_SCOPE);
	CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(c, "aud")->valuestring, aud);
	iat = cJSON_GetObjectItem(c, "iat");
	exp = cJSON_GetObjectItem(c, "exp");
	CU_ASSERT_FATAL(cJSON_IsNumber(iat) && cJSON_IsNumber(exp));
	CU_ASSERT(iat->valuedouble >= (double)iat_lo && iat->valuedouble <= (double)iat_hi);
	CU_ASSERT_EQUAL((int64_t)exp->valuedouble, (int64_t)iat->valuedouble + 3600);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(c), 5);
	/* compact: no white space anywhere */
	CU_ASSERT_PTR_NULL(strpbrk(j.claims, " \n\t"));
	CU_ASSERT_EQUAL(j.sig_len, 256);
	CU_ASSERT(s_verify((const unsigned char *)jwt, j.signed_len, j.sig, (size_t)j.sig_len));
	cJSON_Delete(c);
	s_jwt_free(&j);
}

/* Percent-decodes the value of name in an x-www-form-urlencoded body into out. */
static int s_form_value(const char *body, const char *name, char *out, size_t cap)
{
	size_t n = strlen(name), o = 0;

	for (const char *p = body; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
		if (strncmp(p, name, n) != 0 || p[n] != '=')
			continue;
		for (p += n + 1; *p && *p != '&' && o + 1 < cap; p++) {
			unsigned v;
			if (*p == '%' && sscanf(p + 1, "%2x", &v) == 1) {
				out[o++] = (char)v;
				p += 2;
			} else {
				out[o++] = *p == '+' ? ' ' : *p;
			}
		}
		out[o] = '\0';
		return 1;
	}
	return 0;
}

/* The token endpoint's clock (now + clock_s), told in a Date header: a JWT whose exp has
 * passed by it, or whose iat is more than 5 minutes ahead of it, is refused as Google
 * refuses it (400 invalid_grant). 1: refused. */
static int s_refused_for_time(struct s_fake *f, const struct fx_request *req,
			      struct fx_response *resp)
{
	time_t server = time(NULL) + f->clock_s;
	char assertion[4096], when[64];
	double iat = 0, exp = 0;
	struct s_jwt j;
	struct tm tm;
	cJSON *c;

	gmtime_r(&server, &tm);
	strftime(when, sizeof(when), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	fx_resp_header(resp, "Date", "%s", when);
	if (s_form_value((const char *)req->body, "assertion", assertion, sizeof(assertion)) &&
	    s_jwt_split(assertion, &j) == 0) {
		c = cJSON_Parse(j.claims);
		if (c && cJSON_IsNumber(cJSON_GetObjectItem(c, "iat")) &&
		    cJSON_IsNumber(cJSON_GetObjectItem(c, "exp"))) {
			iat = cJSON_GetObjectItem(c, "iat")->valuedouble;
			exp = cJSON_GetObjectItem(c, "exp")->valuedouble;
		}
		cJSON_Delete(c);
		s_jwt_free(&j);
	}
	if (exp > (double)server && iat <= (double)server + 300)
		return 0;
	f->time_refusals++;
	fx_resp_text(resp, 400, "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid "
		     "JWT: Token must be a short-lived token (60 minutes) and in a reasonable "
		     "timeframe. Check your iat and exp values in the JWT claim.\"}");
	return 1;
}

/* ---- the JWT ---- */

static void test_jwt_parts_decode_to_header_and_claims(void)
{
	struct rr_buf out;
	char why[256] = "x", *json;

	s_make_key();
	json = s_key_json("service_account", s_pem, S_KID, "https://oauth2.googleapis.com/token");
	rr_buf_init(&out, 1u << 20);
	CU_ASSERT_EQUAL_FATAL(rr_gcs_jwt(json, strlen(json), S_NOW, RR_GCS_SCOPE, &out, why,
					 sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(why, "");
	s_check_jwt((const char *)out.data, "https://oauth2.googleapis.com/token", S_NOW, S_NOW);
	/* exactly iat = now, exp = now + 3600, printed as integers */
	{
		struct s_jwt j;
		CU_ASSERT_EQUAL_FATAL(s_jwt_split((const char *)out.data, &j), 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(j.claims, "\"iat\":1700000000,"));
		CU_ASSERT_PTR_NOT_NULL(strstr(j.claims, "\"exp\":1700003600}"));
		CU_ASSERT_EQUAL(strncmp(j.claims, S_CLAIMS_START, strlen(S_CLAIMS_START)), 0);
		s_jwt_free(&j);
	}
	rr_buf_free(&out);
	free(json);
}

static void test_jwt_signature_fails_after_a_flipped_byte(void)
{
	struct rr_buf out;
	struct s_jwt j;
	char why[256], *json;

	s_make_key();
	json = s_key_json("service_account", s_pem, S_KID, "https://oauth2.googleapis.com/token");
	rr_buf_init(&out, 1u << 20);
	CU_ASSERT_EQUAL_FATAL(rr_gcs_jwt(json, strlen(json), S_NOW, NULL, &out, why,
					 sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(s_jwt_split((const char *)out.data, &j), 0);
	CU_ASSERT(s_verify(out.data, j.signed_len, j.sig, (size_t)j.sig_len));
	j.sig[17] ^= 0x01;
	CU_ASSERT_FALSE(s_verify(out.data, j.signed_len, j.sig, (size_t)j.sig_len));
	j.sig[17] ^= 0x01;
	out.data[5] ^= 0x01; /* the signed text, not the signature */
	CU_ASSERT_FALSE(s_verify(out.data, j.signed_len, j.sig, (size_t)j.sig_len));
	s_jwt_free(&j);
	rr_buf_free(&out);
	free(json);
}

static void test_jwt_without_private_key_id_has_no_kid(void)
{
	struct rr_buf out;
	struct s_jwt j;
	char why[256], *json;

	s_make_key();
	json = s_key_json("service_account", s_pem, NULL, "https://oauth2.googleapis.com/token");
	rr_buf_init(&out, 1u << 20);
	CU_ASSERT_EQUAL_FATAL(rr_gcs_jwt(json, strlen(json), S_NOW, RR_GCS_SCOPE, &out, why,
					 sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(s_jwt_split((const char *)out.data, &j), 0);
	CU_ASSERT_STRING_EQUAL(j.header, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}");
	s_jwt_free(&j);
	rr_buf_free(&out);
	free(json);
}

/* ---- the key file at rr_gcs_auth_new ---- */

/* rr_gcs_auth_new on this key file text: RR_EINVAL, a reason naming `field`, no key text,
 * and no request sent. */
static void s_assert_bad_key_file(const char *json, const char *field)
{
	struct s_env e;
	char chunk[41];

	s_setup(&e);
	s_write_key_file(&e, json);
	CU_ASSERT_EQUAL(rr_gcs_auth_new(&e.opts, &e.auth, e.why, sizeof(e.why)), RR_EINVAL);
	CU_ASSERT_PTR_NULL(e.auth);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, field));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "GOOGLE_APPLICATION_CREDENTIALS"));
	if (!strstr(e.why, field))
		fprintf(stderr, "\nwhy: %s\n", e.why);
	s_assert_no_secret_in_why(&e);
	/* no piece of the PEM's base64 either */
	for (size_t off = 40; off + 40 < strlen(s_pem); off += 200) {
		memcpy(chunk, s_pem + off, 40);
		chunk[40] = '\0';
		CU_ASSERT_PTR_NULL(strstr(e.why, chunk));
	}
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_key_file_of_another_type_is_einval_naming_type(void)
{
	char *json;

	s_make_key();
	json = s_key_json("authorized_user", s_pem, S_KID, "https://oauth2.googleapis.com/token");
	s_assert_bad_key_file(json, "\"type\"");
	free(json);
	s_assert_bad_key_file("[\"service_account\"]", "not a JSON object");
}

static void test_key_file_without_private_key_is_einval_naming_it(void)
{
	char *json = s_key_json("service_account", NULL, S_KID,
				"https://oauth2.googleapis.com/token");

	s_assert_bad_key_file(json, "private_key");
	free(json);
}

static void test_key_file_with_bad_pem_is_einval_without_the_key_text(void)
{
	char *pem, *json;
	size_t n;

	s_make_key();
	/* The real key with the start of its body changed: PEM framing intact, DER broken. */
	pem = strdup(s_pem);
	n = strlen("-----BEGIN PRIVATE KEY-----\n");
	CU_ASSERT_EQUAL_FATAL(strncmp(pem, "-----BEGIN PRIVATE KEY-----\n", n), 0);
	for (size_t i = n; i < n + 60; i++)
		if (pem[i] != '\n')
			pem[i] = pem[i] == 'A' ? 'B' : 'A';
	json = s_key_json("service_account", pem, S_KID, "https://oauth2.googleapis.com/token");
	s_assert_bad_key_file(json, "\"private_key\"");
	free(json);
	json = s_key_json("service_account", "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n"
			  "-----END PRIVATE KEY-----\n", S_KID,
			  "https://oauth2.googleapis.com/token");
	s_assert_bad_key_file(json, "\"private_key\"");
	free(json);
	json = s_key_json("service_account", s_pem, S_KID, "file:///etc/passwd");
	s_assert_bad_key_file(json, "\"token_uri\"");
	free(json);
	free(pem);
}

static void test_plain_http_token_uri_off_loopback_is_refused(void)
{
	char *json;

	s_make_key();
	json = s_key_json("service_account", s_pem, S_KID, "http://10.0.0.1/token");
	s_assert_bad_key_file(json, "plain http");
	free(json);
	json = s_key_json("service_account", s_pem, S_KID, "http://127.0.0.1.evil.example/token");
	s_assert_bad_key_file(json, "plain http");
	free(json);
}

static void test_plain_http_metadata_host_off_loopback_is_refused(void)
{
	struct s_env e;

	s_setup(&e);
	e.opts.metadata_endpoint = NULL;
	setenv("GCE_METADATA_HOST", "10.0.0.1:80", 1);
	CU_ASSERT_EQUAL(rr_gcs_auth_new(&e.opts, &e.auth, e.why, sizeof(e.why)), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "plain http"));
	/* The metadata server itself is plain http by design. */
	setenv("GCE_METADATA_HOST", "metadata.google.internal", 1);
	CU_ASSERT_EQUAL(rr_gcs_auth_new(&e.opts, &e.auth, e.why, sizeof(e.why)), 0);
	rr_gcs_auth_destroy(e.auth);
	e.auth = NULL;
	setenv("GCE_METADATA_HOST", "169.254.169.254", 1);
	CU_ASSERT_EQUAL(rr_gcs_auth_new(&e.opts, &e.auth, e.why, sizeof(e.why)), 0);
	rr_gcs_auth_destroy(e.auth);
	e.auth = NULL;
	setenv("GCE_METADATA_HOST", "169.254.169.2540", 1);
	CU_ASSERT_EQUAL(rr_gcs_auth_new(&e.opts, &e.auth, e.why, sizeof(e.why)), RR_EINVAL);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_unreadable_key_file_is_eio(void)
{
	struct s_env e;

	s_setup(&e);
	setenv("GOOGLE_APPLICATION_CREDENTIALS", e.key_path, 1); /* never written */
	CU_ASSERT_EQUAL(rr_gcs_auth_new(&e.opts, &e.auth, e.why, sizeof(e.why)), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "key.json"));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

/* ---- the service account's token ---- */

static void test_token_exchange_posts_a_jwt_bearer_form(void)
{
	const struct fx_request *r;
	struct s_env e;
	char aud[128], grant[128], assertion[4096];
	int64_t before, after;

	s_setup(&e);
	s_setup_key(&e);
	before = rr_wall_ms() / 1000;
	CU_ASSERT_EQUAL_FATAL(s_token(&e, 0), 0);
	after = rr_wall_ms() / 1000;
	CU_ASSERT_STRING_EQUAL(e.token, "ya29.c." S_TOKEN_MARK "-1");
	CU_ASSERT_STRING_EQUAL(e.source, "service account " S_EMAIL);
	CU_ASSERT_STRING_EQUAL(e.why, "");
	CU_ASSERT_EQUAL_FATAL(fx_server_nrequests(&e.srv), 1);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_STRING_EQUAL(r->method, "POST");
	CU_ASSERT_STRING_EQUAL(r->target, S_TOKEN_PATH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(r, "Content-Type"));
	CU_ASSERT_STRING_EQUAL(fx_header(r, "Content-Type"), "application/x-www-form-urlencoded");
	CU_ASSERT_FATAL(s_form_value((const char *)r->body, "grant_type", grant, sizeof(grant)));
	CU_ASSERT_STRING_EQUAL(grant, "urn:ietf:params:oauth:grant-type:jwt-bearer");
	CU_ASSERT_FATAL(s_form_value((const char *)r->body, "assertion", assertion,
				     sizeof(assertion)));
	snprintf(aud, sizeof(aud), "%s" S_TOKEN_PATH, e.srv.url);
	s_check_jwt(assertion, aud, before, after);
	s_teardown(&e);
}

static void test_token_is_cached_across_calls(void)
{
	struct s_env e;

	s_setup(&e);
	s_setup_key(&e);
	CU_ASSERT_EQUAL(s_token(&e, 0), 0);
	CU_ASSERT_EQUAL(s_token(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.token, "ya29.c." S_TOKEN_MARK "-1");
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", S_TOKEN_PATH), 1);
	s_teardown(&e);
}

struct s_thread_arg {
	struct s_env *e;
	int rc;
	char token[RR_GCS_TOKEN_MAX];
};

static void *s_thread_token(void *p)
{
	struct s_thread_arg *t = p;

	t->rc = rr_gcs_auth_token(t->e->auth, 0, t->token, sizeof(t->token), NULL, NULL, 0);
	return NULL;
}

static void test_concurrent_callers_wait_for_one_fetch(void)
{
	struct s_thread_arg args[4];
	pthread_t th[4];
	struct s_env e;

	s_setup(&e);
	s_setup_key(&e);
	e.fake.delay_ms = 200;
	for (int i = 0; i < 4; i++) {
		args[i].e = &e;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, s_thread_token, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(args[i].rc, 0);
		CU_ASSERT_STRING_EQUAL(args[i].token, "ya29.c." S_TOKEN_MARK "-1");
	}
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", S_TOKEN_PATH), 1);
	s_teardown(&e);
}

static void test_token_within_refresh_margin_is_fetched_again(void)
{
	struct s_env e;

	s_setup(&e);
	e.opts.refresh_margin_ms = 2 * 3600 * 1000; /* a 3599 s token is always due */
	s_setup_key(&e);
	CU_ASSERT_EQUAL(s_token(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.token, "ya29.c." S_TOKEN_MARK "-1");
	CU_ASSERT_EQUAL(s_token(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.token, "ya29.c." S_TOKEN_MARK "-2");
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", S_TOKEN_PATH), 2);
	s_teardown(&e);
}

static void test_force_refresh_fetches_a_new_token(void)
{
	struct s_env e;

	s_setup(&e);
	s_setup_key(&e);
	CU_ASSERT_EQUAL(s_token(&e, 0), 0);
	CU_ASSERT_EQUAL(s_token(&e, 1), 0);
	CU_ASSERT_STRING_EQUAL(e.token, "ya29.c." S_TOKEN_MARK "-2");
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", S_TOKEN_PATH), 2);
	s_teardown(&e);
}

static void test_failed_refresh_keeps_a_still_valid_token_unless_forced(void)
{
	struct s_env e;

	s_setup(&e);
	e.opts.refresh_margin_ms = 2 * 3600 * 1000;
	s_setup_key(&e);
	CU_ASSERT_EQUAL(s_token(&e, 0), 0);
	e.fake.status = 503;
	e.fake.body = "{\"error\":\"internal_failure\"}";
	CU_ASSERT_EQUAL(s_token(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.token, "ya29.c." S_TOKEN_MARK "-1");
	CU_ASSERT_STRING_EQUAL(e.why, "");
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", S_TOKEN_PATH), 2);
	/* forced: the server said this token is no good, so it is not handed out again */
	CU_ASSERT_EQUAL(s_token(&e, 1), RR_EIO);
	CU_ASSERT_STRING_EQUAL(e.token, "");
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "503"));
	s_assert_no_secret_in_why(&e);
	/* and the server back: a fresh one */
	e.fake.status = 0;
	CU_ASSERT_EQUAL(s_token(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.token, "ya29.c." S_TOKEN_MARK "-2");
	s_teardown(&e);
}

static void test_oauth_error_is_eacces_quoting_error_and_description(void)
{
	struct s_env e;

	s_setup(&e);
	s_setup_key(&e);
	e.fake.status = 400;
	e.fake.body = "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT "
		      "Signature.\"}";
	CU_ASSERT_EQUAL(s_token(&e, 0), RR_EACCES);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "\"invalid_grant\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "\"Invalid JWT Signature.\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, S_EMAIL));
	s_assert_no_secret_in_why(&e);
	e.fake.status = 401;
	e.fake.body = "<html>no</html>";
	CU_ASSERT_EQUAL(s_token(&e, 0), RR_EACCES);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "401"));
	s_teardown(&e);
}

/* A machine whose clock is off: the token endpoint refuses the JWT for its iat/exp once,
 * its answer's Date tells its clock, and the JWT dated by that clock passes, as does the
 * next one (a refresh) at once. */
static void s_clock_case(long clock_s)
{
	struct s_env e;
	char assertion[4096], aud[128];
	int64_t now;

	s_setup(&e);
	s_setup_key(&e);
	e.fake.clock_s = clock_s;
	CU_ASSERT_EQUAL(s_token(&e, 0), 0);
	CU_ASSERT_EQUAL(e.fake.time_refusals, 1);
	CU_ASSERT_EQUAL(e.fake.issued, 1);
	CU_ASSERT_EQUAL(s_token(&e, 1), 0);
	CU_ASSERT_EQUAL(e.fake.time_refusals, 1);
	CU_ASSERT_EQUAL(e.fake.issued, 2);
	CU_ASSERT_FATAL(s_form_value((const char *)fx_server_last(&e.srv, NULL)->body,
				     "assertion", assertion, sizeof(assertion)));
	snprintf(aud, sizeof(aud), "%s" S_TOKEN_PATH, e.srv.url);
	now = rr_wall_ms() / 1000 + clock_s;
	s_check_jwt(assertion, aud, now - 5, now + 5);
	s_teardown(&e);
}

static void test_jwt_refused_for_a_clock_off_is_dated_by_the_endpoint(void)
{
	s_clock_case(-1200);     /* this machine 20 minutes ahead: iat in the future */
	s_clock_case(2 * 3600);  /* two hours behind: exp already past */
}

/* Refused whatever the time: one JWT, not a loop. */
static void test_jwt_refused_with_the_clocks_agreeing_is_not_sent_again(void)
{
	struct s_env e;

	s_setup(&e);
	s_setup_key(&e);
	e.fake.status = 400;
	e.fake.body = "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT: Token "
		      "must be a short-lived token (60 minutes) and in a reasonable timeframe.\"}";
	CU_ASSERT_EQUAL(s_token(&e, 0), RR_EACCES);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 1);
	s_teardown(&e);
}

static void test_server_error_or_no_server_is_eio(void)
{
	struct s_env e;
	char uri[64], *json;

	s_setup(&e);
	s_setup_key(&e);
	e.fake.status = 500;
	e.fake.body = "oops";
	CU_ASSERT_EQUAL(s_token(&e, 0), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "500"));
	rr_gcs_auth_destroy(e.auth);
	e.auth = NULL;
	snprintf(uri, sizeof(uri), "http://127.0.0.1:%d/token", fx_closed_port());
	json = s_key_json("service_account", s_pem, S_KID, uri);
	s_write_key_file(&e, json);
	free(json);
	CU_ASSERT_EQUAL_FATAL(rr_gcs_auth_new(&e.opts, &e.auth, e.why, sizeof(e.why)), 0);
	CU_ASSERT_EQUAL(s_token(&e, 0), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "127.0.0.1"));
	s_teardown(&e);
}

static void test_bad_token_answer_is_eio_without_the_token(void)
{
	struct s_env e;

	s_setup(&e);
	s_setup_key(&e);
	e.fake.bad_type = 1;
	CU_ASSERT_EQUAL(s_token(&e, 0), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "token_type"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "\"MAC\""));
	CU_ASSERT_STRING_EQUAL(e.token, "");
	s_assert_no_secret_in_why(&e);
	e.fake.bad_type = 0;
	e.fake.status = 200;
	e.fake.body = "{\"access_token\":\"ya29." S_TOKEN_MARK " with space\","
		      "\"expires_in\":3599,\"token_type\":\"Bearer\"}";
	CU_ASSERT_EQUAL(s_token(&e, 0), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "access_token"));
	s_assert_no_secret_in_why(&e);
	e.fake.body = "{\"access_token\":\"ya29." S_TOKEN_MARK "\",\"expires_in\":0,"
		      "\"token_type\":\"bearer\"}";
	CU_ASSERT_EQUAL(s_token(&e, 0), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "expires_in"));
	s_assert_no_secret_in_why(&e);
	s_teardown(&e);
}

/* ---- the metadata server ---- */

static void test_metadata_token_with_flavor_both_ways(void)
{
	const struct fx_request *r;
	struct s_env e;

	s_setup(&e);
	CU_ASSERT_EQUAL_FATAL(rr_gcs_auth_new(&e.opts, &e.auth, e.why, sizeof(e.why)), 0);
	CU_ASSERT_EQUAL_FATAL(s_token(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.token, "ya29.c." S_TOKEN_MARK "-1");
	CU_ASSERT_STRING_EQUAL(e.source, "metadata server");
	CU_ASSERT_EQUAL_FATAL(fx_server_nrequests(&e.srv), 1);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_STRING_EQUAL(r->method, "GET");
	CU_ASSERT_STRING_EQUAL(r->target, S_MD_PATH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(r, "Metadata-Flavor"));
	CU_ASSERT_STRING_EQUAL(fx_header(r, "Metadata-Flavor"), "Google");
	CU_ASSERT_EQUAL(s_token(&e, 0), 0);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 1);
	s_teardown(&e);
}

static void test_metadata_host_from_gce_metadata_host(void)
{
	struct s_env e;
	char host[64];

	s_setup(&e);
	snprintf(host, sizeof(host), "127.0.0.1:%d", e.srv.port);
	setenv("GCE_METADATA_HOST", host, 1);
	e.opts.metadata_endpoint = NULL;
	CU_ASSERT_EQUAL_FATAL(rr_gcs_auth_new(&e.opts, &e.auth, e.why, sizeof(e.why)), 0);
	CU_ASSERT_EQUAL(s_token(&e, 0), 0);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", S_MD_PATH), 1);
	s_teardown(&e);
}

static void test_metadata_answer_without_flavor_is_eio(void)
{
	struct s_env e;

	s_setup(&e);
	e.fake.no_flavor = 1;
	CU_ASSERT_EQUAL_FATAL(rr_gcs_auth_new(&e.opts, &e.auth, e.why, sizeof(e.why)), 0);
	CU_ASSERT_EQUAL(s_token(&e, 0), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "Metadata-Flavor"));
	CU_ASSERT_STRING_EQUAL(e.token, "");
	s_assert_no_secret_in_why(&e);
	s_teardown(&e);
}

static void test_no_key_and_no_metadata_server_is_enoent(void)
{
	struct s_env e;
	char url[64];

	s_setup(&e);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", fx_closed_port());
	e.opts.metadata_endpoint = url;
	CU_ASSERT_EQUAL_FATAL(rr_gcs_auth_new(&e.opts, &e.auth, e.why, sizeof(e.why)), 0);
	CU_ASSERT_EQUAL(s_token(&e, 0), RR_ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "GOOGLE_APPLICATION_CREDENTIALS"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, url));
	s_teardown(&e);
}

static CU_TestInfo s_tests[] = {
	{ "jwt_parts_decode_to_header_and_claims", test_jwt_parts_decode_to_header_and_claims },
	{ "jwt_signature_fails_after_a_flipped_byte",
	  test_jwt_signature_fails_after_a_flipped_byte },
	{ "jwt_without_private_key_id_has_no_kid", test_jwt_without_private_key_id_has_no_kid },
	{ "key_file_of_another_type_is_einval_naming_type",
	  test_key_file_of_another_type_is_einval_naming_type },
	{ "key_file_without_private_key_is_einval_naming_it",
	  test_key_file_without_private_key_is_einval_naming_it },
	{ "key_file_with_bad_pem_is_einval_without_the_key_text",
	  test_key_file_with_bad_pem_is_einval_without_the_key_text },
	{ "plain_http_token_uri_off_loopback_is_refused",
	  test_plain_http_token_uri_off_loopback_is_refused },
	{ "plain_http_metadata_host_off_loopback_is_refused",
	  test_plain_http_metadata_host_off_loopback_is_refused },
	{ "unreadable_key_file_is_eio", test_unreadable_key_file_is_eio },
	{ "token_exchange_posts_a_jwt_bearer_form", test_token_exchange_posts_a_jwt_bearer_form },
	{ "token_is_cached_across_calls", test_token_is_cached_across_calls },
	{ "concurrent_callers_wait_for_one_fetch", test_concurrent_callers_wait_for_one_fetch },
	{ "token_within_refresh_margin_is_fetched_again",
	  test_token_within_refresh_margin_is_fetched_again },
	{ "force_refresh_fetches_a_new_token", test_force_refresh_fetches_a_new_token },
	{ "failed_refresh_keeps_a_still_valid_token_unless_forced",
	  test_failed_refresh_keeps_a_still_valid_token_unless_forced },
	{ "oauth_error_is_eacces_quoting_error_and_description",
	  test_oauth_error_is_eacces_quoting_error_and_description },
	{ "jwt_refused_for_a_clock_off_is_dated_by_the_endpoint",
	  test_jwt_refused_for_a_clock_off_is_dated_by_the_endpoint },
	{ "jwt_refused_with_the_clocks_agreeing_is_not_sent_again",
	  test_jwt_refused_with_the_clocks_agreeing_is_not_sent_again },
	{ "server_error_or_no_server_is_eio", test_server_error_or_no_server_is_eio },
	{ "bad_token_answer_is_eio_without_the_token",
	  test_bad_token_answer_is_eio_without_the_token },
	{ "metadata_token_with_flavor_both_ways", test_metadata_token_with_flavor_both_ways },
	{ "metadata_host_from_gce_metadata_host", test_metadata_host_from_gce_metadata_host },
	{ "metadata_answer_without_flavor_is_eio", test_metadata_answer_without_flavor_is_eio },
	{ "no_key_and_no_metadata_server_is_enoent",
	  test_no_key_and_no_metadata_server_is_enoent },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("gcs_auth", s_tests)
