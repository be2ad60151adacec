/* CUnit suite "aws_credentials": the credential chain (storage/auth/aws_credentials.c) step by
 * step and in order, with the in-process HTTP server (http_fixture.h) playing STS, the
 * container credential endpoint and IMDS at once, and shared files in a temp directory.
 * Every environment variable the chain reads is saved before each test, cleared, and put
 * back after it, so the developer's own AWS setup neither leaks in nor gets lost. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rr/aws_credentials.h"
#include "rr/clock.h"
#include "rr/error.h"
#include "rr/http.h"
#include "rr/log.h"

#include "cunit_main.h"
#include "http_fixture.h"

#define S_AKID "ASIAFIXTUREKEY000001"
#define S_SECRET "fixture/SECRET/wJalrXUtnFEMIK7MDENG"
#define S_TOKEN "FixtureSessionToken//+secretish=="
#define S_WEB_TOKEN "eyJhbGciOiJSUzI1NiJ9.web-identity-secret+/=.sig"
#define S_AUTH_TOKEN "container-auth-secret-1"
#define S_ROLE "fixture-role"
#define S_ROLE_ARN "arn:aws:iam::123456789012:role/fixture-role"

static const char *const s_vars[] = {
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
	"AWS_DEFAULT_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
	"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
	"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
	"AWS_EC2_METADATA_DISABLED", "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL",
	"RESUME_RUN_METADATA_ENDPOINT", "AWS_EC2_METADATA_SERVICE_ENDPOINT", "HOME",
};
#define S_NVARS (sizeof(s_vars) / sizeof(s_vars[0]))

/* What the fake services answer. Handler calls are serialised by the fixture. */
struct s_fake {
	int fail_status;          /* nonzero: every request gets this status */
	const char *role_list;    /* IMDS security-credentials/ listing; NULL: 404 */
	char role_json[1024];     /* IMDS answer for the role */
	int sts_status;           /* 0: 200 */
	char sts_body[2048];
	int container_status;     /* 0: 200 */
	char container_body[1024];
	long imds_put_delay_ms;   /* hold the IMDS token answer (a container's hop limit) */
};

struct s_env {
	char *saved[S_NVARS];
	char dir[64];
	struct s_fake fake;
	struct fx_server srv;
	struct rr_http *http;
	struct rr_aws_creds *creds;
	struct rr_aws_creds_opts opts;
	struct rr_aws_credentials out;
	char why[1024];
};

static void s_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	struct s_fake *f = ud;
	const char *rolepath = "/latest/meta-data/iam/security-credentials/";

	if (f->fail_status) {
		fx_resp_text(resp, f->fail_status, "failing on purpose");
		return;
	}
	if (strcmp(req->method, "PUT") == 0 && strcmp(req->target, "/latest/api/token") == 0) {
		resp->delay_ms = f->imds_put_delay_ms;
		fx_resp_text(resp, 200, "imds-token");
		return;
	}
	if (strcmp(req->method, "GET") == 0 &&
	    strncmp(req->target, rolepath, strlen(rolepath)) == 0) {
		const char *tok = fx_header(req, "X-aws-ec2-metadata-token");
		const char *role = req->target + strlen(rolepath);
		if (!tok || strcmp(tok, "imds-token") != 0)
			fx_resp_text(resp, 401, "");
		else if (!f->role_list)
			fx_resp_text(resp, 404, "");
		else if (!*role)
			fx_resp_text(resp, 200, f->role_list);
		else if (strcmp(role, S_ROLE) == 0)
			fx_resp_text(resp, 200, f->role_json);
		else
			fx_resp_text(resp, 404, "");
		return;
	}
	if (strcmp(req->method, "POST") == 0 && strcmp(req->target, "/") == 0) {
		fx_resp_text(resp, f->sts_status ? f->sts_status : 200, f->sts_body);
		return;
	}
	if (strcmp(req->method, "GET") == 0 && strncmp(req->target, "/creds", 6) == 0) {
		fx_resp_text(resp, f->container_status ? f->container_status : 200,
			     f->container_body);
		return;
	}
	fx_resp_text(resp, 404, "");
}

/* ISO 8601 UTC for now + seconds. */
static void s_iso(char out[32], long long seconds_from_now)
{
	time_t t = (time_t)(rr_wall_ms() / 1000 + seconds_from_now);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void s_set_role_json(struct s_env *e, const char *code, long long expires_in)
{
	char exp[32];

	s_iso(exp, expires_in);
	snprintf(e->fake.role_json, sizeof(e->fake.role_json),
		 "{\"Code\":\"%s\",\"LastUpdated\":\"2024-01-01T00:00:00Z\",\"Type\":\"AWS-HMAC\","
		 "\"AccessKeyId\":\"" S_AKID "\",\"SecretAccessKey\":\"" S_SECRET "\","
		 "\"Token\":\"" S_TOKEN "\",\"Expiration\":\"%s\"}",
		 code, exp);
	e->fake.role_list = S_ROLE "\n";
}

static void s_set_container_json(struct s_env *e, long long expires_in)
{
	char exp[32];

	s_iso(exp, expires_in);
	snprintf(e->fake.container_body, sizeof(e->fake.container_body),
		 "{\"AccessKeyId\":\"" S_AKID "\",\"SecretAccessKey\":\"" S_SECRET "\","
		 "\"Token\":\"" S_TOKEN "\",\"Expiration\":\"%s\"}", exp);
}

static void s_set_sts_success(struct s_env *e, long long expires_in)
{
	char exp[32];

	s_iso(exp, expires_in);
	snprintf(e->fake.sts_body, sizeof(e->fake.sts_body),
		 "<AssumeRoleWithWebIdentityResponse "
		 "xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
		 "<AssumeRoleWithWebIdentityResult>"
		 "<SubjectFromWebIdentityToken>system:serviceaccount:ns:sa"
		 "</SubjectFromWebIdentityToken>"
		 "<Credentials><SessionToken>" S_TOKEN "</SessionToken>"
		 "<SecretAccessKey>" S_SECRET "</SecretAccessKey>"
		 "<Expiration>%s</Expiration><AccessKeyId>" S_AKID "</AccessKeyId></Credentials>"
		 "</AssumeRoleWithWebIdentityResult>"
		 "<ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata>"
		 "</AssumeRoleWithWebIdentityResponse>", exp);
}

static char *s_path(struct s_env *e, const char *name)
{
	static char p[4][256];
	static int next;
	char *out = p[next++ % 4];

	snprintf(out, 256, "%s/%s", e->dir, name);
	return out;
}

static void s_write(struct s_env *e, const char *name, const char *text)
{
	FILE *f = fopen(s_path(e, name), "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

static void s_setup(struct s_env *e)
{
	memset(e, 0, sizeof(*e));
	rr_log_init(0, RR_LOG_ERROR); /* the fallback tests provoke warnings on purpose */
	for (size_t i = 0; i < S_NVARS; i++) {
		const char *v = getenv(s_vars[i]);
		e->saved[i] = v ? strdup(v) : NULL;
		unsetenv(s_vars[i]);
	}
	snprintf(e->dir, sizeof(e->dir), "/tmp/rr_creds_XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(e->dir));
	/* No shared files unless a test writes them; never the developer's ~/.aws. */
	setenv("HOME", e->dir, 1);
	setenv("AWS_SHARED_CREDENTIALS_FILE", s_path(e, "credentials"), 1);
	setenv("AWS_CONFIG_FILE", s_path(e, "config"), 1);
	CU_ASSERT_EQUAL_FATAL(fx_server_start(&e->srv, s_handler, &e->fake), 0);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &e->http), 0);
	e->opts.http = e->http;
	e->opts.imds_endpoint = e->srv.url;
	e->opts.sts_endpoint = e->srv.url;
}

static void s_teardown(struct s_env *e)
{
	static const char *const files[] = { "credentials", "config", "web-token", "auth-token" };

	rr_aws_creds_destroy(e->creds);
	rr_http_destroy(e->http);
	fx_server_stop(&e->srv);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(s_path(e, files[i]));
	rmdir(e->dir);
	for (size_t i = 0; i < S_NVARS; i++) {
		if (e->saved[i])
			setenv(s_vars[i], e->saved[i], 1);
		else
			unsetenv(s_vars[i]);
		free(e->saved[i]);
	}
}

static int s_get(struct s_env *e, int force)
{
	if (!e->creds)
		CU_ASSERT_EQUAL_FATAL(rr_aws_creds_new(&e->opts, &e->creds), 0);
	memset(&e->out, 0x5a, sizeof(e->out));
	e->why[0] = '\0';
	return rr_aws_creds_get(e->creds, force, &e->out, e->why, sizeof(e->why));
}

static void s_assert_fixture_creds(const struct s_env *e)
{
	CU_ASSERT_STRING_EQUAL(e->out.access_key_id, S_AKID);
	CU_ASSERT_STRING_EQUAL(e->out.secret_access_key, S_SECRET);
	CU_ASSERT_STRING_EQUAL(e->out.session_token, S_TOKEN);
}

/* No secret of the fixture appears in the reason. */
static void s_assert_no_secret_in_why(const struct s_env *e)
{
	static const char *const secrets[] = { S_SECRET, S_TOKEN, S_WEB_TOKEN, S_AUTH_TOKEN,
					       "wJalrXUtnFEMI", "web-identity-secret",
					       "container-auth-secret" };
	for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++) {
		CU_ASSERT_PTR_NULL(strstr(e->why, secrets[i]));
		if (strstr(e->why, secrets[i]))
			fprintf(stderr, "\nsecret in why: %s\n", e->why);
	}
}

/* Value of name in an x-www-form-urlencoded body (still encoded), copied into out. */
static const char *s_form_value(const char *body, const char *name, char *out, size_t cap)
{
	size_t n = strlen(name);

	for (const char *p = body; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
		if (strncmp(p, name, n) == 0 && p[n] == '=') {
			size_t len = strcspn(p + n + 1, "&");
			if (len >= cap)
				return NULL;
			memcpy(out, p + n + 1, len);
			out[len] = '\0';
			return out;
		}
	}
	return NULL;
}

/* ---- 1. environment ---- */

static void test_env_credentials_are_used_with_session_token(void)
{
	struct s_env e;

	s_setup(&e);
	setenv("AWS_ACCESS_KEY_ID", S_AKID, 1);
	setenv("AWS_SECRET_ACCESS_KEY", S_SECRET, 1);
	setenv("AWS_SESSION_TOKEN", S_TOKEN, 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	s_assert_fixture_creds(&e);
	CU_ASSERT_EQUAL(e.out.expires_unix_ms, 0);
	CU_ASSERT_STRING_EQUAL(e.out.source, "environment");
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_env_without_session_token_gives_long_term_credentials(void)
{
	struct s_env e;

	s_setup(&e);
	setenv("AWS_ACCESS_KEY_ID", S_AKID, 1);
	setenv("AWS_SECRET_ACCESS_KEY", S_SECRET, 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.out.session_token, "");
	CU_ASSERT_EQUAL(e.out.expires_unix_ms, 0);
	s_teardown(&e);
}

static void test_env_with_secret_but_no_key_id_is_einval_without_the_secret(void)
{
	struct s_env e;

	s_setup(&e);
	setenv("AWS_SECRET_ACCESS_KEY", S_SECRET, 1);
	s_set_role_json(&e, "Success", 3600); /* IMDS would have credentials */
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "AWS_ACCESS_KEY_ID"));
	s_assert_no_secret_in_why(&e);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_env_beats_profile(void)
{
	struct s_env e;

	s_setup(&e);
	s_write(&e, "credentials", "[default]\naws_access_key_id = AKIDPROFILE\n"
				   "aws_secret_access_key = profilesecret\n");
	setenv("AWS_ACCESS_KEY_ID", S_AKID, 1);
	setenv("AWS_SECRET_ACCESS_KEY", S_SECRET, 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.out.access_key_id, S_AKID);
	CU_ASSERT_STRING_EQUAL(e.out.source, "environment");
	s_teardown(&e);
}

/* ---- 2. profile ---- */

static void test_default_profile_from_credentials_file(void)
{
	struct s_env e;

	s_setup(&e);
	s_write(&e, "credentials", "[default]\naws_access_key_id = " S_AKID "\n"
				   "aws_secret_access_key = " S_SECRET "\n");
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.out.access_key_id, S_AKID);
	CU_ASSERT_STRING_EQUAL(e.out.secret_access_key, S_SECRET);
	CU_ASSERT_STRING_EQUAL(e.out.session_token, "");
	CU_ASSERT_EQUAL(e.out.expires_unix_ms, 0);
	CU_ASSERT_STRING_EQUAL(e.out.source, "profile default");
	s_teardown(&e);
}

static void test_aws_profile_selects_a_config_file_profile(void)
{
	struct s_env e;

	s_setup(&e);
	s_write(&e, "config", "[default]\naws_access_key_id = AKIDDEFAULT\n"
			      "aws_secret_access_key = defaultsecret\n"
			      "[profile dev]\naws_access_key_id = " S_AKID "\n"
			      "aws_secret_access_key = " S_SECRET "\n"
			      "aws_session_token = " S_TOKEN "\n");
	setenv("AWS_PROFILE", "dev", 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	s_assert_fixture_creds(&e);
	CU_ASSERT_STRING_EQUAL(e.out.source, "profile dev");
	s_teardown(&e);
}

static void test_profile_option_overrides_aws_profile(void)
{
	struct s_env e;

	s_setup(&e);
	s_write(&e, "credentials", "[dev]\naws_access_key_id = AKIDDEV\n"
				   "aws_secret_access_key = devsecret\n"
				   "[ops]\naws_access_key_id = " S_AKID "\n"
				   "aws_secret_access_key = " S_SECRET "\n");
	setenv("AWS_PROFILE", "dev", 1);
	e.opts.profile = "ops";
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.out.access_key_id, S_AKID);
	CU_ASSERT_STRING_EQUAL(e.out.source, "profile ops");
	s_teardown(&e);
}

static void test_named_profile_that_does_not_exist_stops_the_chain(void)
{
	struct s_env e;

	s_setup(&e);
	s_write(&e, "credentials", "[default]\naws_access_key_id = AKIDDEFAULT\n"
				   "aws_secret_access_key = defaultsecret\n");
	setenv("AWS_PROFILE", "nosuch", 1);
	s_set_role_json(&e, "Success", 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "nosuch"));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_profile_with_secret_but_no_key_id_is_einval_without_the_secret(void)
{
	struct s_env e;

	s_setup(&e);
	s_write(&e, "credentials", "[default]\naws_secret_access_key = " S_SECRET "\n"
				   "aws_session_token = " S_TOKEN "\n");
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "profile default"));
	s_assert_no_secret_in_why(&e);
	s_teardown(&e);
}

static void test_profile_beats_container(void)
{
	struct s_env e;
	char uri[128];

	s_setup(&e);
	s_write(&e, "credentials", "[default]\naws_access_key_id = " S_AKID "\n"
				   "aws_secret_access_key = " S_SECRET "\n");
	snprintf(uri, sizeof(uri), "%s/creds", e.srv.url);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", uri, 1);
	s_set_container_json(&e, 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.out.source, "profile default");
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_profile_without_keys_falls_through(void)
{
	struct s_env e;

	s_setup(&e);
	s_write(&e, "config", "[default]\nregion = eu-west-1\n");
	s_set_role_json(&e, "Success", 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.out.source, "instance role " S_ROLE);
	s_teardown(&e);
}

/* ---- 3. web identity ---- */

static void s_web_identity_env(struct s_env *e)
{
	s_write(e, "web-token", S_WEB_TOKEN "\n");
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", s_path(e, "web-token"), 1);
	setenv("AWS_ROLE_ARN", S_ROLE_ARN, 1);
}

static void test_web_identity_posts_the_form_to_sts(void)
{
	struct s_env e;
	const struct fx_request *r;
	char v[512];

	s_setup(&e);
	s_web_identity_env(&e);
	setenv("AWS_ROLE_SESSION_NAME", "my session", 1);
	s_set_sts_success(&e, 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_EQUAL_FATAL(fx_server_nrequests(&e.srv), 1);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_STRING_EQUAL(r->method, "POST");
	CU_ASSERT_STRING_EQUAL(r->target, "/");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(r, "Content-Type"));
	CU_ASSERT_STRING_EQUAL(fx_header(r, "Content-Type"), "application/x-www-form-urlencoded");
	CU_ASSERT_PTR_NULL(fx_header(r, "Authorization")); /* unsigned */
	CU_ASSERT_EQUAL(strncmp((const char *)r->body,
				"Action=AssumeRoleWithWebIdentity&Version=2011-06-15&", 52), 0);
	CU_ASSERT_PTR_NOT_NULL(s_form_value((const char *)r->body, "RoleArn", v, sizeof(v)));
	CU_ASSERT_STRING_EQUAL(v, "arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Ffixture-role");
	CU_ASSERT_PTR_NOT_NULL(s_form_value((const char *)r->body, "RoleSessionName", v,
					    sizeof(v)));
	CU_ASSERT_STRING_EQUAL(v, "my%20session");
	CU_ASSERT_PTR_NOT_NULL(s_form_value((const char *)r->body, "WebIdentityToken", v,
					    sizeof(v)));
	/* the file's content without its newline, with '+', '/' and '=' encoded */
	CU_ASSERT_STRING_EQUAL(v, "eyJhbGciOiJSUzI1NiJ9.web-identity-secret%2B%2F%3D.sig");
	s_teardown(&e);
}

static void test_web_identity_parses_the_sts_credentials(void)
{
	struct s_env e;
	int64_t now = rr_wall_ms();

	s_setup(&e);
	s_web_identity_env(&e);
	s_set_sts_success(&e, 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	s_assert_fixture_creds(&e);
	CU_ASSERT(e.out.expires_unix_ms > now + 3590 * 1000LL);
	CU_ASSERT(e.out.expires_unix_ms < now + 3610 * 1000LL);
	CU_ASSERT_STRING_EQUAL(e.out.source, "web identity (" S_ROLE_ARN ")");
	s_teardown(&e);
}

static void test_web_identity_default_session_name_is_resume_run_and_unix_seconds(void)
{
	struct s_env e;
	char v[128];
	long long secs, now = rr_wall_ms() / 1000;

	s_setup(&e);
	s_web_identity_env(&e);
	s_set_sts_success(&e, 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_server_last(&e.srv, "/"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s_form_value((const char *)fx_server_last(&e.srv, "/")->body,
						  "RoleSessionName", v, sizeof(v)));
	CU_ASSERT_EQUAL_FATAL(strncmp(v, "resume-run-", 11), 0);
	secs = strtoll(v + 11, NULL, 10);
	CU_ASSERT(secs >= now - 5 && secs <= now + 5);
	s_teardown(&e);
}

static void test_web_identity_error_response_is_eacces_without_the_token(void)
{
	struct s_env e;

	s_setup(&e);
	s_web_identity_env(&e);
	e.fake.sts_status = 403;
	snprintf(e.fake.sts_body, sizeof(e.fake.sts_body),
		 "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error>"
		 "<Type>Sender</Type><Code>AccessDenied</Code>"
		 "<Message>Not authorized to perform sts:AssumeRoleWithWebIdentity</Message>"
		 "</Error><RequestId>req-2</RequestId></ErrorResponse>");
	s_set_role_json(&e, "Success", 3600); /* IMDS must not be tried after a refusal */
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EACCES);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "AccessDenied"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "web identity"));
	s_assert_no_secret_in_why(&e);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, NULL, "/latest/"), 0);
	s_teardown(&e);
}

static void test_web_identity_from_profile_keys(void)
{
	struct s_env e;
	char cfg[512], v[256];

	s_setup(&e);
	s_write(&e, "web-token", S_WEB_TOKEN);
	snprintf(cfg, sizeof(cfg), "[profile eks]\nrole_arn = %s\nweb_identity_token_file = %s\n"
		 "role_session_name = from-profile\n", S_ROLE_ARN, s_path(&e, "web-token"));
	s_write(&e, "config", cfg);
	setenv("AWS_PROFILE", "eks", 1);
	s_set_sts_success(&e, 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	s_assert_fixture_creds(&e);
	CU_ASSERT_STRING_EQUAL(e.out.source, "web identity (" S_ROLE_ARN ")");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_server_last(&e.srv, "/"));
	CU_ASSERT_PTR_NOT_NULL(s_form_value((const char *)fx_server_last(&e.srv, "/")->body,
					    "RoleSessionName", v, sizeof(v)));
	CU_ASSERT_STRING_EQUAL(v, "from-profile");
	s_teardown(&e);
}

static void test_web_identity_token_file_without_role_is_einval(void)
{
	struct s_env e;

	s_setup(&e);
	s_write(&e, "web-token", S_WEB_TOKEN);
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", s_path(&e, "web-token"), 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "AWS_ROLE_ARN"));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_web_identity_missing_token_file_is_einval(void)
{
	struct s_env e;

	s_setup(&e);
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", s_path(&e, "web-token"), 1); /* not written */
	setenv("AWS_ROLE_ARN", S_ROLE_ARN, 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "token file"));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_sts_endpoint_from_aws_endpoint_url_sts(void)
{
	struct s_env e;

	s_setup(&e);
	e.opts.sts_endpoint = NULL;
	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1/", 1); /* the STS-specific one wins */
	setenv("AWS_ENDPOINT_URL_STS", e.srv.url, 1);
	s_web_identity_env(&e);
	s_set_sts_success(&e, 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "POST", "/"), 1);
	s_teardown(&e);
}

/* ---- 4. container ---- */

static void s_full_uri(struct s_env *e)
{
	char uri[128];

	snprintf(uri, sizeof(uri), "%s/creds/v2", e->srv.url);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", uri, 1);
	s_set_container_json(e, 3600);
}

static void test_container_full_uri_with_token_file_sends_authorization(void)
{
	struct s_env e;
	const struct fx_request *r;

	s_setup(&e);
	s_full_uri(&e);
	s_write(&e, "auth-token", S_AUTH_TOKEN "\n");
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", s_path(&e, "auth-token"), 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	s_assert_fixture_creds(&e);
	CU_ASSERT(e.out.expires_unix_ms > rr_wall_ms());
	CU_ASSERT_STRING_EQUAL(e.out.source, "container endpoint");
	CU_ASSERT_EQUAL_FATAL(fx_server_nrequests(&e.srv), 1);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_STRING_EQUAL(r->method, "GET");
	CU_ASSERT_STRING_EQUAL(r->target, "/creds/v2");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(r, "Authorization"));
	CU_ASSERT_STRING_EQUAL(fx_header(r, "Authorization"), S_AUTH_TOKEN);
	s_teardown(&e);
}

static void test_container_full_uri_with_env_token_sends_authorization(void)
{
	struct s_env e;
	const struct fx_request *r;

	s_setup(&e);
	s_full_uri(&e);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", S_AUTH_TOKEN, 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	s_assert_fixture_creds(&e);
	r = fx_server_last(&e.srv, "/creds");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(r, "Authorization"));
	CU_ASSERT_STRING_EQUAL(fx_header(r, "Authorization"), S_AUTH_TOKEN);
	s_teardown(&e);
}

static void test_container_token_file_is_preferred_over_env_token(void)
{
	struct s_env e;
	const struct fx_request *r;

	s_setup(&e);
	s_full_uri(&e);
	s_write(&e, "auth-token", "from-the-file");
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", s_path(&e, "auth-token"), 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "from-the-environment", 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	r = fx_server_last(&e.srv, "/creds");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(fx_header(r, "Authorization"), "from-the-file");
	s_teardown(&e);
}

static void test_container_token_file_is_read_again_at_each_fetch(void)
{
	struct s_env e;
	const struct fx_request *r;

	s_setup(&e);
	s_full_uri(&e);
	s_write(&e, "auth-token", "first-token");
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", s_path(&e, "auth-token"), 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	s_write(&e, "auth-token", "rotated-token"); /* the agent rotates it */
	CU_ASSERT_EQUAL(s_get(&e, 1), 0);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 2);
	r = fx_server_last(&e.srv, "/creds");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(fx_header(r, "Authorization"), "rotated-token");
	s_teardown(&e);
}

static void test_container_full_uri_to_a_forbidden_host_is_einval_without_a_request(void)
{
	static const char *const bad[] = {
		"http://example.com/creds",
		"http://169.254.169.254/latest/meta-data/", /* IMDS is not a container agent */
		"http://127.0.0.1@example.com/creds",       /* userinfo: the host is example.com */
		"http://169.254.170.2.example.com/creds",
		"http://0177.0.0.1/creds",                  /* octal to curl */
		"http://[fe80::1]/creds",
		"ftp://127.0.0.1/creds",
		"127.0.0.1/creds",
	};
	struct s_env e;

	s_setup(&e);
	s_set_role_json(&e, "Success", 3600);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", bad[i], 1);
		CU_ASSERT_EQUAL(s_get(&e, 1), RR_EINVAL);
		if (!strstr(e.why, "FULL_URI"))
			fprintf(stderr, "\n%s: %s\n", bad[i], e.why);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "FULL_URI"));
	}
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_container_relative_uri_must_be_a_path(void)
{
	struct s_env e;

	s_setup(&e);
	/* Appended to http://169.254.170.2 this would name another host. */
	setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", ".example.com/creds", 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "RELATIVE_URI"));
	s_teardown(&e);
}

static void test_container_set_means_imds_is_not_tried(void)
{
	struct s_env e;

	s_setup(&e);
	s_full_uri(&e);
	e.fake.container_status = 500;
	s_set_role_json(&e, "Success", 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "container"));
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, NULL, "/latest/"), 0);
	s_teardown(&e);
}

static void test_container_refusal_is_eacces_without_the_auth_token(void)
{
	struct s_env e;

	s_setup(&e);
	s_full_uri(&e);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", S_AUTH_TOKEN, 1);
	e.fake.container_status = 403;
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EACCES);
	s_assert_no_secret_in_why(&e);
	s_teardown(&e);
}

static void test_container_auth_token_with_a_line_break_is_einval_without_a_request(void)
{
	struct s_env e;

	s_setup(&e);
	s_full_uri(&e);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "abc\r\nX-Injected: 1", 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EINVAL);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_container_answer_without_secret_is_eio_without_the_token(void)
{
	struct s_env e;

	s_setup(&e);
	s_full_uri(&e);
	snprintf(e.fake.container_body, sizeof(e.fake.container_body),
		 "{\"AccessKeyId\":\"" S_AKID "\",\"Token\":\"" S_TOKEN "\"}");
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "SecretAccessKey"));
	s_assert_no_secret_in_why(&e);
	s_teardown(&e);
}

/* ---- 5. instance role ---- */

static void test_instance_role_from_imds(void)
{
	struct s_env e;
	const struct fx_request *r;
	int64_t now = rr_wall_ms();

	s_setup(&e);
	s_set_role_json(&e, "Success", 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	s_assert_fixture_creds(&e);
	CU_ASSERT(e.out.expires_unix_ms > now + 3590 * 1000LL);
	CU_ASSERT(e.out.expires_unix_ms < now + 3610 * 1000LL);
	CU_ASSERT_STRING_EQUAL(e.out.source, "instance role " S_ROLE);
	CU_ASSERT_EQUAL_FATAL(fx_server_nrequests(&e.srv), 3);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_STRING_EQUAL(r->method, "PUT");
	CU_ASSERT_STRING_EQUAL(r->target, "/latest/api/token");
	r = fx_server_request(&e.srv, 1);
	CU_ASSERT_STRING_EQUAL(r->target, "/latest/meta-data/iam/security-credentials/");
	r = fx_server_request(&e.srv, 2);
	CU_ASSERT_STRING_EQUAL(r->target, "/latest/meta-data/iam/security-credentials/" S_ROLE);
	CU_ASSERT_STRING_EQUAL(fx_header(r, "X-aws-ec2-metadata-token"), "imds-token");
	s_teardown(&e);
}

static void test_instance_role_code_other_than_success_is_eacces(void)
{
	struct s_env e;

	s_setup(&e);
	s_set_role_json(&e, "AssumeRoleUnauthorizedAccess", 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EACCES);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "AssumeRoleUnauthorizedAccess"));
	s_assert_no_secret_in_why(&e);
	s_teardown(&e);
}

static void test_metadata_disabled_skips_imds(void)
{
	struct s_env e;

	s_setup(&e);
	s_set_role_json(&e, "Success", 3600);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "AWS_EC2_METADATA_DISABLED"));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_metadata_disabled_false_still_uses_imds(void)
{
	struct s_env e;

	s_setup(&e);
	s_set_role_json(&e, "Success", 3600);
	setenv("AWS_EC2_METADATA_DISABLED", "false", 1);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_STRING_EQUAL(e.out.source, "instance role " S_ROLE);
	s_teardown(&e);
}

static void test_nothing_anywhere_is_enoent_listing_the_steps(void)
{
	struct s_env e;

	s_setup(&e); /* no role attached: the listing answers 404 */
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "environment"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "profile default"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "web identity"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "container"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "instance role"));
	s_teardown(&e);
}

/* Nothing anywhere and no metadata service answering (a laptop, another cloud): the usual
 * fix first, then every step looked at; the unreachable IMDS is one of them, not the
 * reason (it was: "instance role: IMDS token PUT ... got no answer"). */
static void s_assert_every_step_with_the_usual_fix_first(const struct s_env *e)
{
	const char *fix = strstr(e->why, "the usual fix: export AWS_ACCESS_KEY_ID and "
					 "AWS_SECRET_ACCESS_KEY");
	const char *looked = strstr(e->why, "looked at: environment");

	CU_ASSERT_PTR_NOT_NULL(fix);
	CU_ASSERT_PTR_NOT_NULL(looked);
	CU_ASSERT(fix && looked && fix < looked);
	CU_ASSERT_PTR_NOT_NULL(strstr(e->why, "profile default"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e->why, "web identity"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e->why, "container"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e->why, "instance role: IMDS token PUT to"));
	if (!fix || !looked)
		fprintf(stderr, "\nwhy: %s\n", e->why);
}

static void test_unreachable_imds_with_nothing_else_lists_every_step(void)
{
	struct s_env e;
	char url[64];

	s_setup(&e);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", fx_closed_port());
	e.opts.imds_endpoint = url;
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_ENOENT);
	s_assert_every_step_with_the_usual_fix_first(&e);
	s_teardown(&e);
}

static void test_silent_imds_with_nothing_else_lists_every_step_and_the_hop_limit(void)
{
	struct s_env e;

	s_setup(&e);
	e.fake.imds_put_delay_ms = 5000; /* past the provider's 2 s: no answer */
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_ENOENT);
	s_assert_every_step_with_the_usual_fix_first(&e);
	/* On EC2 in a container, silence is the hop limit: still said, as one step's note. */
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "--http-put-response-hop-limit 2"));
	s_teardown(&e);
}

/* IMDS that answers, but with an error, is a configured step failing: its reason ends the
 * chain. */
static void test_imds_answering_5xx_is_eio_naming_the_instance_role(void)
{
	struct s_env e;

	s_setup(&e);
	e.fake.fail_status = 503;
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "instance role"));
	s_teardown(&e);
}

/* ---- cache ---- */

static void test_second_get_is_served_from_the_cache(void)
{
	struct s_env e;

	s_setup(&e);
	s_set_role_json(&e, "Success", 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 3);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	s_assert_fixture_creds(&e);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 3);
	s_teardown(&e);
}

static void test_credentials_within_the_margin_are_refreshed(void)
{
	struct s_env e;

	s_setup(&e);
	e.opts.refresh_margin_ms = 2 * 3600 * 1000LL; /* an hour ahead is already due */
	s_set_role_json(&e, "Success", 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", "/latest/meta-data/iam/security-credentials/"
								     S_ROLE), 2);
	s_teardown(&e);
}

static void test_force_refresh_resolves_again(void)
{
	struct s_env e;

	s_setup(&e);
	s_set_role_json(&e, "Success", 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	CU_ASSERT_EQUAL(s_get(&e, 1), 0);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", "/latest/meta-data/iam/security-credentials/"
								     S_ROLE), 2);
	s_teardown(&e);
}

static void test_failed_refresh_returns_the_still_valid_cache(void)
{
	struct s_env e;

	s_setup(&e);
	e.opts.refresh_margin_ms = 2 * 3600 * 1000LL;
	s_set_role_json(&e, "Success", 3600);
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	e.fake.fail_status = 500;
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	s_assert_fixture_creds(&e);
	CU_ASSERT_STRING_EQUAL(e.out.source, "instance role " S_ROLE);
	CU_ASSERT(fx_server_nrequests(&e.srv) > 3); /* it did try */
	s_teardown(&e);
}

static void test_failed_refresh_of_expired_credentials_is_an_error(void)
{
	struct s_env e;

	s_setup(&e);
	s_set_role_json(&e, "Success", -60); /* already expired */
	CU_ASSERT_EQUAL(s_get(&e, 0), 0);
	e.fake.fail_status = 500;
	CU_ASSERT_EQUAL(s_get(&e, 0), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "instance role"));
	s_assert_no_secret_in_why(&e);
	s_teardown(&e);
}

struct s_thread_arg {
	struct rr_aws_creds *creds;
	int rc;
	char akid[128];
};

static void *s_thread_get(void *p)
{
	struct s_thread_arg *a = p;
	struct rr_aws_credentials cr;

	a->rc = rr_aws_creds_get(a->creds, 0, &cr, NULL, 0);
	memcpy(a->akid, cr.access_key_id, sizeof(a->akid));
	rr_aws_credentials_wipe(&cr);
	return NULL;
}

static void test_concurrent_callers_share_one_resolution(void)
{
	struct s_env e;
	struct s_thread_arg args[4];
	pthread_t th[4];

	s_setup(&e);
	s_set_role_json(&e, "Success", 3600);
	CU_ASSERT_EQUAL_FATAL(rr_aws_creds_new(&e.opts, &e.creds), 0);
	for (int i = 0; i < 4; i++) {
		memset(&args[i], 0, sizeof(args[i]));
		args[i].creds = e.creds;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, s_thread_get, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(args[i].rc, 0);
		CU_ASSERT_STRING_EQUAL(args[i].akid, S_AKID);
	}
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 3);
	s_teardown(&e);
}

static void test_wipe_clears_every_field(void)
{
	struct rr_aws_credentials cr;
	static const struct rr_aws_credentials zero;

	memset(&cr, 0x41, sizeof(cr));
	rr_aws_credentials_wipe(&cr);
	CU_ASSERT_EQUAL(memcmp(&cr, &zero, sizeof(cr)), 0);
}

static CU_TestInfo s_tests[] = {
	{ "env_credentials_are_used_with_session_token",
	  test_env_credentials_are_used_with_session_token },
	{ "env_without_session_token_gives_long_term_credentials",
	  test_env_without_session_token_gives_long_term_credentials },
	{ "env_with_secret_but_no_key_id_is_einval_without_the_secret",
	  test_env_with_secret_but_no_key_id_is_einval_without_the_secret },
	{ "env_beats_profile", test_env_beats_profile },
	{ "default_profile_from_credentials_file", test_default_profile_from_credentials_file },
	{ "aws_profile_selects_a_config_file_profile",
	  test_aws_profile_selects_a_config_file_profile },
	{ "profile_option_overrides_aws_profile", test_profile_option_overrides_aws_profile },
	{ "named_profile_that_does_not_exist_stops_the_chain",
	  test_named_profile_that_does_not_exist_stops_the_chain },
	{ "profile_with_secret_but_no_key_id_is_einval_without_the_secret",
	  test_profile_with_secret_but_no_key_id_is_einval_without_the_secret },
	{ "profile_beats_container", test_profile_beats_container },
	{ "profile_without_keys_falls_through", test_profile_without_keys_falls_through },
	{ "web_identity_posts_the_form_to_sts", test_web_identity_posts_the_form_to_sts },
	{ "web_identity_parses_the_sts_credentials", test_web_identity_parses_the_sts_credentials },
	{ "web_identity_default_session_name_is_resume_run_and_unix_seconds",
	  test_web_identity_default_session_name_is_resume_run_and_unix_seconds },
	{ "web_identity_error_response_is_eacces_without_the_token",
	  test_web_identity_error_response_is_eacces_without_the_token },
	{ "web_identity_from_profile_keys", test_web_identity_from_profile_keys },
	{ "web_identity_token_file_without_role_is_einval",
	  test_web_identity_token_file_without_role_is_einval },
	{ "web_identity_missing_token_file_is_einval",
	  test_web_identity_missing_token_file_is_einval },
	{ "sts_endpoint_from_aws_endpoint_url_sts", test_sts_endpoint_from_aws_endpoint_url_sts },
	{ "container_full_uri_with_token_file_sends_authorization",
	  test_container_full_uri_with_token_file_sends_authorization },
	{ "container_full_uri_with_env_token_sends_authorization",
	  test_container_full_uri_with_env_token_sends_authorization },
	{ "container_token_file_is_preferred_over_env_token",
	  test_container_token_file_is_preferred_over_env_token },
	{ "container_token_file_is_read_again_at_each_fetch",
	  test_container_token_file_is_read_again_at_each_fetch },
	{ "container_full_uri_to_a_forbidden_host_is_einval_without_a_request",
	  test_container_full_uri_to_a_forbidden_host_is_einval_without_a_request },
	{ "container_relative_uri_must_be_a_path", test_container_relative_uri_must_be_a_path },
	{ "container_set_means_imds_is_not_tried", test_container_set_means_imds_is_not_tried },
	{ "container_refusal_is_eacces_without_the_auth_token",
	  test_container_refusal_is_eacces_without_the_auth_token },
	{ "container_auth_token_with_a_line_break_is_einval_without_a_request",
	  test_container_auth_token_with_a_line_break_is_einval_without_a_request },
	{ "container_answer_without_secret_is_eio_without_the_token",
	  test_container_answer_without_secret_is_eio_without_the_token },
	{ "instance_role_from_imds", test_instance_role_from_imds },
	{ "instance_role_code_other_than_success_is_eacces",
	  test_instance_role_code_other_than_success_is_eacces },
	{ "metadata_disabled_skips_imds", test_metadata_disabled_skips_imds },
	{ "metadata_disabled_false_still_uses_imds", test_metadata_disabled_false_still_uses_imds },
	{ "nothing_anywhere_is_enoent_listing_the_steps",
	  test_nothing_anywhere_is_enoent_listing_the_steps },
	{ "unreachable_imds_with_nothing_else_lists_every_step",
	  test_unreachable_imds_with_nothing_else_lists_every_step },
	{ "silent_imds_with_nothing_else_lists_every_step_and_the_hop_limit",
	  test_silent_imds_with_nothing_else_lists_every_step_and_the_hop_limit },
	{ "imds_answering_5xx_is_eio_naming_the_instance_role",
	  test_imds_answering_5xx_is_eio_naming_the_instance_role },
	{ "second_get_is_served_from_the_cache", test_second_get_is_served_from_the_cache },
	{ "credentials_within_the_margin_are_refreshed",
	  test_credentials_within_the_margin_are_refreshed },
	{ "force_refresh_resolves_again", test_force_refresh_resolves_again },
	{ "failed_refresh_returns_the_still_valid_cache",
	  test_failed_refresh_returns_the_still_valid_cache },
	{ "failed_refresh_of_expired_credentials_is_an_error",
	  test_failed_refresh_of_expired_credentials_is_an_error },
	{ "concurrent_callers_share_one_resolution", test_concurrent_callers_share_one_resolution },
	{ "wipe_clears_every_field", test_wipe_clears_every_field },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("aws_credentials", s_tests)
