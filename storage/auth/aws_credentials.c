/* The AWS credential chain (include/rr/aws_credentials.h, the S3 API reference and the AWS
 * SDKs' "Standardized credential providers"): environment,
 * shared-file profile, STS web identity, container endpoint, IMDS instance role, behind one
 * cache. Each step answers S_NEXT when it is not configured; anything else (credentials or
 * a failure) ends the chain, so a misconfigured step is reported rather than silently
 * replaced by a different identity further down. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "rr/aws_credentials.h"
#include "rr/aws_profile.h"
#include "rr/buf.h"
#include "rr/clock.h"
#include "rr/env.h"
#include "rr/error.h"
#include "rr/imds.h"
#include "rr/json.h"
#include "rr/log.h"
#include "rr/quote.h"
#include "rr/s3_xml.h"
#include "rr/sigv4.h"
#include "rr/timefmt.h"

#define S_NEXT 1                          /* a step that is not configured */
#define S_DEFAULT_MARGIN_MS (5 * 60 * 1000)
#define S_TOKEN_FILE_MAX (64u << 10)      /* web identity tokens are at most 20000 bytes */
#define S_RESPONSE_MAX (64u << 10)
#define S_STS_TIMEOUT_MS 10000
#define S_CONTAINER_TIMEOUT_MS 5000
#define S_CONTAINER_HOST "http://169.254.170.2"
#define S_ROLE_NAME_MAX 64                /* IAM's limit */
#define S_URL_MAX 2048
#define S_LOOKED_MAX 768

struct rr_aws_creds {
	struct rr_http *http;
	char *profile;
	char *region;
	char *sts_endpoint;
	char *imds_endpoint;
	int64_t margin_ms;
	pthread_mutex_t lock;              /* one resolution at a time; guards what follows */
	int have;
	struct rr_aws_credentials cached;
	int failure_logged;                /* a failed refresh was logged since the last success */
	struct rr_imds *imds;              /* made on first use, kept for its token */
};

/* One resolution of the chain. */
struct s_chain {
	struct rr_aws_creds *c;
	struct rr_aws_credentials *out;
	char *why;
	size_t cap;
	struct rr_aws_profile *profile;
	char looked[S_LOOKED_MAX];         /* steps that had nothing, for the RR_ENOENT reason */
};

__attribute__((format(printf, 2, 3))) static void s_looked(struct s_chain *ch, const char *fmt,
							   ...)
{
	size_t n = strlen(ch->looked);
	va_list ap;

	if (n && n + 2 < sizeof(ch->looked)) {
		memcpy(ch->looked + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(ch->looked + n, sizeof(ch->looked) - n, fmt, ap);
	va_end(ap);
}

static const char *s_pget(const struct s_chain *ch, const char *key)
{
	return ch->profile ? rr_aws_profile_get(ch->profile, key) : NULL;
}

static char *s_strdup_or_null(const char *s, int *failed)
{
	char *p;

	if (!s)
		return NULL;
	p = strdup(s);
	if (!p)
		*failed = 1;
	return p;
}

/* Bytes that may not appear in a key, secret or token: they travel in HTTP headers. */
static int s_printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

void rr_aws_credentials_wipe(struct rr_aws_credentials *cr)
{
	if (cr)
		OPENSSL_cleanse(cr, sizeof(*cr));
}

/* Fills ch->out after checking lengths and bytes; names what is wrong without showing it. */
static int s_fill(struct s_chain *ch, const char *step, const char *akid, const char *secret,
		  const char *token, int64_t expires_ms, const char *source)
{
	struct rr_aws_credentials *o = ch->out;

	if (!token)
		token = "";
	if (strlen(akid) >= sizeof(o->access_key_id) ||
	    strlen(secret) >= sizeof(o->secret_access_key) ||
	    strlen(token) >= sizeof(o->session_token))
		return rr_fail(ch->why, ch->cap, RR_EINVAL,
			       "%s: the access key id, secret or session token is "
			       "longer than AWS issues",
			       step);
	if (!*akid || !*secret)
		return rr_fail(ch->why, ch->cap, RR_EINVAL,
			       "%s: the access key id or secret is empty", step);
	if (!s_printable(akid) || !s_printable(secret) || !s_printable(token))
		return rr_fail(ch->why, ch->cap, RR_EINVAL,
			       "%s: the access key id, secret or session token "
			       "holds a space or control character",
			       step);
	rr_aws_credentials_wipe(o);
	memcpy(o->access_key_id, akid, strlen(akid));
	memcpy(o->secret_access_key, secret, strlen(secret));
	memcpy(o->session_token, token, strlen(token));
	o->expires_unix_ms = expires_ms;
	snprintf(o->source, sizeof(o->source), "%s", source);
	return 0;
}

/* Reads a small file that holds a secret (a web identity or authorization token) into
 * out, without trailing white space. Returns 0 or an rr_error, errno-derived. */
static int s_read_secret_file(const char *path, struct rr_buf *out)
{
	char chunk[4096];
	int fd, rc = 0;
	ssize_t n;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rr_error_from_errno(errno);
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = rr_error_from_errno(errno);
			break;
		}
		if (n == 0)
			break;
		rc = rr_buf_append(out, chunk, (size_t)n);
		if (rc)
			break;
	}
	OPENSSL_cleanse(chunk, sizeof(chunk));
	close(fd);
	while (rc == 0 && out->len > 0 &&
	       (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == '\r' ||
		out->data[out->len - 1] == ' ' || out->data[out->len - 1] == '\t'))
		out->data[--out->len] = '\0';
	return rc;
}

/* ---- 1. environment ---- */

static int s_step_env(struct s_chain *ch)
{
	const char *akid = rr_env("AWS_ACCESS_KEY_ID");
	const char *secret = rr_env("AWS_SECRET_ACCESS_KEY");

	if (!akid && !secret) {
		s_looked(ch, "environment: AWS_ACCESS_KEY_ID not set");
		return S_NEXT;
	}
	if (!akid || !secret)
		return rr_fail(ch->why, ch->cap, RR_EINVAL, "environment: %s is set but %s is not",
			       akid ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
			       akid ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
	return s_fill(ch, "environment", akid, secret, rr_env("AWS_SESSION_TOKEN"), 0,
		      "environment");
}

/* ---- 2. shared-file profile ---- */

static int s_step_profile(struct s_chain *ch)
{
	char pwhy[512] = "", source[96];
	const char *name, *akid, *secret;
	int rc;

	rc = rr_aws_profile_load(ch->c->profile, &ch->profile, pwhy, sizeof(pwhy));
	if (rc == RR_ENOENT || rc == RR_ECORRUPT || rc == RR_ETOOBIG)
		return rr_fail(ch->why, ch->cap, RR_EINVAL, "shared config: %s",
			       pwhy[0] ? pwhy : rr_strerror(rc));
	if (rc)
		return rr_fail(ch->why, ch->cap, rc, "shared config: %s",
			       pwhy[0] ? pwhy : rr_strerror(rc));
	name = rr_aws_profile_name(ch->profile);
	akid = rr_aws_profile_get(ch->profile, "aws_access_key_id");
	secret = rr_aws_profile_get(ch->profile, "aws_secret_access_key");
	if (!akid && !secret) {
		s_looked(ch, "profile %s: no aws_access_key_id", name);
		return S_NEXT;
	}
	snprintf(source, sizeof(source), "profile %s", name);
	if (!akid || !secret)
		return rr_fail(ch->why, ch->cap, RR_EINVAL, "%s: %s without %s", source,
			       akid ? "aws_access_key_id" : "aws_secret_access_key",
			       akid ? "aws_secret_access_key" : "aws_access_key_id");
	return s_fill(ch, source, akid, secret,
		      rr_aws_profile_get(ch->profile, "aws_session_token"), 0, source);
}

/* ---- 3. web identity (STS AssumeRoleWithWebIdentity) ---- */

static int s_valid_region(const char *r)
{
	size_t n = strlen(r);

	if (n == 0 || n > 32)
		return 0;
	for (; *r; r++)
		if (!((*r >= 'a' && *r <= 'z') || (*r >= '0' && *r <= '9') || *r == '-'))
			return 0;
	return 1;
}

/* The STS URL, always ending in '/' (the action goes in the body). */
static int s_sts_url(const struct rr_aws_creds *c, char *url, size_t cap)
{
	const char *ep = c->sts_endpoint;
	const char *region = c->region ? c->region : "us-east-1";
	int w;

	if (!ep)
		ep = rr_env("AWS_ENDPOINT_URL_STS");
	if (!ep)
		ep = rr_env("AWS_ENDPOINT_URL");
	if (!ep) {
		w = snprintf(url, cap, "https://sts.%s.amazonaws.com%s/", region,
			     strncmp(region, "cn-", 3) == 0 ? ".cn" : "");
		return w > 0 && (size_t)w < cap ? 0 : RR_EINVAL;
	}
	/* room for the '/' that ends it */
	if (cap < 2 || rr_http_base_url(ep, url, cap - 1))
		return RR_EINVAL;
	strcat(url, "/");
	return 0;
}

static int s_form_append(struct rr_buf *b, const char *name, const char *value)
{
	int rc = rr_buf_printf(b, "&%s=", name);
	if (rc)
		return rc;
	return rr_sigv4_uri_encode(b, value, strlen(value), 0);
}

/* Maps an STS answer that is not a success; why names the step, never the token. */
static int s_sts_refusal(struct s_chain *ch, const char *step,
			 const struct rr_http_response *resp)
{
	struct rr_s3_xml_credentials x;
	struct rr_s3_error err;
	char qcode[RR_QUOTE_CAP], qmsg[RR_QUOTE_CAP];
	int rc, transient = resp->status >= 500 || resp->status == 429;

	memset(&err, 0, sizeof(err));
	rc = rr_s3_xml_parse_sts(resp->body.data ? resp->body.data : (const void *)"",
				 resp->body.len, &x, &err);
	OPENSSL_cleanse(&x, sizeof(x));
	if (rc == RR_EACCES && err.code[0]) {
		if (strcmp(err.code, "Throttling") == 0 ||
		    strcmp(err.code, "IDPCommunicationError") == 0)
			transient = 1;
		return rr_fail(ch->why, ch->cap, transient ? RR_EIO : RR_EACCES,
			       "%s: STS answered %ld %s: %s", step, resp->status,
			       rr_quote_str(qcode, err.code), rr_quote_str(qmsg, err.message));
	}
	return rr_fail(ch->why, ch->cap, transient || resp->status < 400 ? RR_EIO : RR_EACCES,
		       "%s: STS answered %ld without a readable error", step, resp->status);
}

static int s_web_identity(struct s_chain *ch, const char *token_file, const char *role_arn,
			  const char *session_name)
{
	struct rr_http_header hdrs[] = {
		{ "Content-Type", "application/x-www-form-urlencoded" },
		{ "Accept", "text/xml" },
	};
	struct rr_s3_xml_credentials x;
	struct rr_s3_error err;
	struct rr_http_request req;
	struct rr_http_response resp;
	struct rr_buf token, body;
	char step[96], url[S_URL_MAX], session[80], source[96];
	int64_t expires = 0;
	int rc;

	snprintf(step, sizeof(step), "web identity (%s)", role_arn);
	memset(&x, 0, sizeof(x));
	rr_buf_init(&token, S_TOKEN_FILE_MAX);
	rr_buf_init(&body, 3 * S_TOKEN_FILE_MAX + 4096);
	rr_http_response_init(&resp);
	rc = s_read_secret_file(token_file, &token);
	if (rc) {
		char q[RR_QUOTE_CAP];
		rc = rr_fail(ch->why, ch->cap, rc == RR_ENOMEM ? rc : RR_EINVAL,
			     "%s: cannot read the token file %s: %s", step,
			     rr_quote_str(q, token_file),
			     rc == RR_ETOOBIG ? "larger than 64 KiB" : rr_strerror(rc));
		goto out;
	}
	if (token.len == 0) {
		char q[RR_QUOTE_CAP];
		rc = rr_fail(ch->why, ch->cap, RR_EINVAL, "%s: the token file %s is empty", step,
			     rr_quote_str(q, token_file));
		goto out;
	}
	if (!session_name) {
		snprintf(session, sizeof(session), "resume-run-%lld",
			 (long long)(rr_wall_ms() / 1000));
		session_name = session;
	}
	rc = s_sts_url(ch->c, url, sizeof(url));
	if (rc) {
		rc = rr_fail(ch->why, ch->cap, RR_EINVAL,
			     "%s: the STS endpoint is not a usable URL", step);
		goto out;
	}
	rc = rr_buf_printf(&body, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15");
	if (!rc)
		rc = s_form_append(&body, "RoleArn", role_arn);
	if (!rc)
		rc = s_form_append(&body, "RoleSessionName", session_name);
	if (!rc)
		rc = s_form_append(&body, "WebIdentityToken", (const char *)token.data);
	if (rc) {
		rc = rr_fail(ch->why, ch->cap, rc, "%s: cannot build the request: %s", step,
			     rr_strerror(rc));
		goto out;
	}
	memset(&req, 0, sizeof(req));
	req.method = "POST";
	req.url = url;
	req.headers = hdrs;
	req.nheaders = sizeof(hdrs) / sizeof(hdrs[0]);
	req.body = body.data;
	req.body_len = body.len;
	req.response_max = S_RESPONSE_MAX;
	req.timeout_ms = S_STS_TIMEOUT_MS;
	rc = rr_http_perform(ch->c->http, &req, &resp);
	if (rc) {
		rc = rr_fail(ch->why, ch->cap, rc == RR_ENOMEM ? rc : RR_EIO,
			     "%s: no answer from STS at %s: %s", step, url,
			     resp.message[0] ? resp.message : rr_strerror(rc));
		goto out;
	}
	if (resp.status != 200) {
		rc = s_sts_refusal(ch, step, &resp);
		goto out;
	}
	memset(&err, 0, sizeof(err));
	rc = rr_s3_xml_parse_sts(resp.body.data, resp.body.len, &x, &err);
	if (rc == RR_EACCES) {
		rc = s_sts_refusal(ch, step, &resp);
		goto out;
	}
	if (rc) {
		rc = rr_fail(ch->why, ch->cap, RR_EIO,
			     "%s: STS answered 200 with an unreadable document (%s)", step,
			     rr_strerror(rc));
		goto out;
	}
	if (rr_iso8601_to_unix_ms(x.expiration, &expires)) {
		rc = rr_fail(ch->why, ch->cap, RR_EIO, "%s: STS sent an unreadable Expiration",
			     step);
		goto out;
	}
	snprintf(source, sizeof(source), "web identity (%s)", role_arn);
	rc = s_fill(ch, step, x.access_key_id, x.secret_access_key, x.session_token, expires,
		    source);
out:
	OPENSSL_cleanse(&x, sizeof(x));
	rr_buf_wipe_free(&token);
	rr_buf_wipe_free(&body);
	rr_http_response_wipe_free(&resp);
	return rc;
}

/* Environment first, key by key, then the profile (as botocore does). A role_arn in the
 * profile without a token file would be an assume-role profile (source_profile,
 * credential_source), which is not supported: refused rather than skipped, so that the
 * chain does not quietly pick another identity. */
static int s_step_web_identity(struct s_chain *ch)
{
	const char *token_file = rr_env("AWS_WEB_IDENTITY_TOKEN_FILE");
	const char *role_arn = rr_env("AWS_ROLE_ARN");
	const char *session = rr_env("AWS_ROLE_SESSION_NAME");
	const char *p_role = s_pget(ch, "role_arn");

	if (!token_file)
		token_file = s_pget(ch, "web_identity_token_file");
	if (!role_arn)
		role_arn = p_role;
	if (!session)
		session = s_pget(ch, "role_session_name");
	if (!token_file) {
		if (p_role)
			return rr_fail(ch->why, ch->cap, RR_EINVAL,
				       "profile %s: role_arn without "
				       "web_identity_token_file (assume-role "
				       "profiles are not supported)",
				       rr_aws_profile_name(ch->profile));
		s_looked(ch, "web identity: AWS_WEB_IDENTITY_TOKEN_FILE not set");
		return S_NEXT;
	}
	if (!role_arn || !*role_arn)
		return rr_fail(ch->why, ch->cap, RR_EINVAL,
			       "web identity: a token file is configured but no "
			       "role (AWS_ROLE_ARN or the profile's role_arn)");
	return s_web_identity(ch, token_file, role_arn, session);
}

/* ---- 4. container credentials ---- */

/* A dotted quad in strict decimal (no leading zeros, which curl would read as octal). */
static int s_parse_ipv4(const char *s, size_t n, unsigned char out[4])
{
	size_t i = 0;

	for (int part = 0; part < 4; part++) {
		unsigned v = 0, digits = 0;
		if (part) {
			if (i >= n || s[i] != '.')
				return 0;
			i++;
		}
		while (i < n && s[i] >= '0' && s[i] <= '9' && digits < 4) {
			v = v * 10 + (unsigned)(s[i] - '0');
			i++;
			digits++;
		}
		if (digits == 0 || digits > 3 || v > 255 || (digits > 1 && s[i - digits] == '0'))
			return 0;
		out[part] = (unsigned char)v;
	}
	return i == n;
}

/* The FULL_URI rule (aws-c-auth, botocore): https to anywhere; plain http only to the
 * loopback or to the ECS / EKS Pod Identity agents. Literal addresses and "localhost" only:
 * a name is not resolved here, since what curl then connects to could differ. */
static int s_full_uri_allowed(const char *uri)
{
	static const unsigned char ecs[4] = { 169, 254, 170, 2 }, eks[4] = { 169, 254, 170, 23 };
	const char *auth, *end, *host_end, *port;
	unsigned char v4[4], v6[16], want6[16];
	char host[64];
	size_t hlen;
	int https = strncasecmp(uri, "https://", 8) == 0;

	if (!https && strncasecmp(uri, "http://", 7) != 0)
		return 0;
	for (const char *p = uri; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f || *p == '\\')
			return 0;
	auth = uri + (https ? 8 : 7);
	end = auth + strcspn(auth, "/?#");
	if (end == auth || memchr(auth, '@', (size_t)(end - auth)))
		return 0; /* no host, or userinfo (http://169.254.170.2@elsewhere/) */
	if (*auth == '[') {
		host_end = memchr(auth, ']', (size_t)(end - auth));
		if (!host_end)
			return 0;
		port = host_end + 1;
		auth++;
	} else {
		host_end = memchr(auth, ':', (size_t)(end - auth));
		if (!host_end)
			host_end = end;
		port = host_end;
	}
	if (port < end) {
		if (*port != ':' || port + 1 == end)
			return 0;
		for (const char *p = port + 1; p < end; p++)
			if (*p < '0' || *p > '9')
				return 0;
	}
	hlen = (size_t)(host_end - auth);
	if (hlen == 0 || hlen >= sizeof(host))
		return 0;
	if (https)
		return 1;
	memcpy(host, auth, hlen);
	host[hlen] = '\0';
	if (auth[-1] == '[') {
		if (inet_pton(AF_INET6, host, v6) != 1)
			return 0;
		inet_pton(AF_INET6, "::1", want6);
		if (memcmp(v6, want6, 16) == 0)
			return 1;
		inet_pton(AF_INET6, "fd00:ec2::23", want6);
		return memcmp(v6, want6, 16) == 0;
	}
	if (strcasecmp(host, "localhost") == 0)
		return 1; /* curl resolves it to the loopback itself, never through DNS */
	if (!s_parse_ipv4(host, hlen, v4))
		return 0;
	return v4[0] == 127 || memcmp(v4, ecs, 4) == 0 || memcmp(v4, eks, 4) == 0;
}

/* Reads AccessKeyId, SecretAccessKey, Token, Expiration from a JSON document (the container
 * and the IMDS answers share these names). */
static int s_json_credentials(struct s_chain *ch, const char *step, const cJSON *j,
			      int token_required, const char *source)
{
	const cJSON *akid = cJSON_GetObjectItemCaseSensitive(j, "AccessKeyId");
	const cJSON *secret = cJSON_GetObjectItemCaseSensitive(j, "SecretAccessKey");
	const cJSON *token = cJSON_GetObjectItemCaseSensitive(j, "Token");
	const cJSON *exp = cJSON_GetObjectItemCaseSensitive(j, "Expiration");
	int64_t expires = 0;

	if (!cJSON_IsString(akid) || !cJSON_IsString(secret))
		return rr_fail(ch->why, ch->cap, RR_EIO,
			       "%s: the answer has no AccessKeyId or SecretAccessKey", step);
	if ((token && !cJSON_IsString(token)) || (token_required && !token))
		return rr_fail(ch->why, ch->cap, RR_EIO, "%s: the answer has no usable Token",
			       step);
	if (exp && (!cJSON_IsString(exp) || rr_iso8601_to_unix_ms(exp->valuestring, &expires)))
		return rr_fail(ch->why, ch->cap, RR_EIO,
			       "%s: the answer's Expiration is not an ISO 8601 time", step);
	if (token_required && !exp)
		return rr_fail(ch->why, ch->cap, RR_EIO, "%s: the answer has no Expiration", step);
	return s_fill(ch, step, akid->valuestring, secret->valuestring,
		      token ? token->valuestring : NULL, expires, source);
}

/* Parses a JSON object from a response body; NULL when it is not one. */
static cJSON *s_parse_object(const struct rr_http_response *resp)
{
	cJSON *j;

	if (!resp->body.data || resp->body.len == 0)
		return NULL;
	j = rr_json_parse((const char *)resp->body.data, resp->body.len, NULL);
	if (j && !cJSON_IsObject(j)) {
		rr_json_wipe_delete(j);
		return NULL;
	}
	return j;
}

static int s_step_container(struct s_chain *ch)
{
	const char *rel = rr_env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full = rr_env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	const char *token_file = rr_env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	const char *step = "container endpoint";
	struct rr_http_header hdr = { "Authorization", NULL };
	struct rr_http_request req;
	struct rr_http_response resp;
	struct rr_buf auth;
	char url[S_URL_MAX], q[RR_QUOTE_CAP];
	cJSON *j = NULL;
	int rc;

	if (!rel && !full) {
		s_looked(ch, "container: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI not set");
		return S_NEXT;
	}
	rr_buf_init(&auth, S_TOKEN_FILE_MAX);
	rr_http_response_init(&resp);
	if (rel) {
		if (rel[0] != '/' || strlen(rel) + sizeof(S_CONTAINER_HOST) > sizeof(url) ||
		    !s_printable(rel)) {
			rc = rr_fail(ch->why, ch->cap, RR_EINVAL,
				     "%s: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI %s "
				     "is not a path",
				     step, rr_quote_str(q, rel));
			goto out;
		}
		snprintf(url, sizeof(url), "%s%s", S_CONTAINER_HOST, rel);
	} else {
		if (strchr(full, '@')) {
			/* user info may be a password: not repeated in the reason */
			rc = rr_fail(ch->why, ch->cap, RR_EINVAL,
				     "%s: AWS_CONTAINER_CREDENTIALS_FULL_URI "
				     "must not carry user info ('@')",
				     step);
			goto out;
		}
		if (strlen(full) >= sizeof(url) || !s_full_uri_allowed(full)) {
			rc = rr_fail(ch->why, ch->cap, RR_EINVAL,
				     "%s: AWS_CONTAINER_CREDENTIALS_FULL_URI %s "
				     "must be https, or http to a loopback address "
				     "or 169.254.170.2 / .23 or [fd00:ec2::23]",
				     step, rr_quote_str(q, full));
			goto out;
		}
		snprintf(url, sizeof(url), "%s", full);
	}
	/* The token file is read at every fetch: the agent that writes it rotates it. */
	if (token_file) {
		rc = s_read_secret_file(token_file, &auth);
		if (rc) {
			rc = rr_fail(
				ch->why, ch->cap, rc == RR_ENOMEM ? rc : RR_EINVAL,
				"%s: cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE %s: %s",
				step, rr_quote_str(q, token_file),
				rc == RR_ETOOBIG ? "larger than 64 KiB" : rr_strerror(rc));
			goto out;
		}
	} else if (rr_env("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
		const char *t = rr_env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
		rc = rr_buf_append(&auth, t, strlen(t));
		if (rc) {
			rc = rr_fail(ch->why, ch->cap, RR_EINVAL,
				     "%s: AWS_CONTAINER_AUTHORIZATION_TOKEN is "
				     "longer than 64 KiB",
				     step);
			goto out;
		}
	}
	for (size_t i = 0; i < auth.len; i++) {
		unsigned char b = auth.data[i];
		if ((b < 0x20 && b != '\t') || b == 0x7f) {
			rc = rr_fail(ch->why, ch->cap, RR_EINVAL,
				     "%s: the authorization token holds a line break "
				     "or control character",
				     step);
			goto out;
		}
	}
	hdr.value = auth.len ? (const char *)auth.data : NULL;
	memset(&req, 0, sizeof(req));
	req.method = "GET";
	req.url = url;
	req.headers = &hdr;
	req.nheaders = hdr.value ? 1 : 0;
	req.response_max = S_RESPONSE_MAX;
	req.timeout_ms = S_CONTAINER_TIMEOUT_MS;
	rc = rr_http_perform(ch->c->http, &req, &resp);
	if (rc) {
		rc = rr_fail(ch->why, ch->cap, rc == RR_ENOMEM ? rc : RR_EIO,
			     "%s: no answer from %s: %s", step, url,
			     resp.message[0] ? resp.message : rr_strerror(rc));
		goto out;
	}
	if (resp.status != 200) {
		int transient = resp.status >= 500 || resp.status == 429 || resp.status < 400;
		rc = rr_fail(ch->why, ch->cap, transient ? RR_EIO : RR_EACCES,
			     "%s: %s answered %ld", step, url, resp.status);
		goto out;
	}
	j = s_parse_object(&resp);
	if (!j) {
		rc = rr_fail(ch->why, ch->cap, RR_EIO, "%s: %s did not answer a JSON object", step,
			     url);
		goto out;
	}
	rc = s_json_credentials(ch, step, j, 0, "container endpoint");
out:
	rr_json_wipe_delete(j);
	rr_buf_wipe_free(&auth);
	rr_http_response_wipe_free(&resp);
	return rc;
}

/* ---- 5. instance role from IMDS ---- */

static int s_valid_role_name(const char *s, size_t n)
{
	if (n == 0 || n > S_ROLE_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || (ch && strchr("+=,.@_-", ch))))
			return 0;
	}
	return 1;
}

static int s_step_imds(struct s_chain *ch)
{
	const char *disabled = rr_env("AWS_EC2_METADATA_DISABLED");
	const char *list_path = "meta-data/iam/security-credentials/";
	struct rr_aws_creds *c = ch->c;
	struct rr_buf body;
	char role[S_ROLE_NAME_MAX + 1], path[128], step[96], mwhy[512] = "", q[RR_QUOTE_CAP];
	const cJSON *code;
	cJSON *j = NULL;
	size_t n;
	int rc;

	if (disabled && strcasecmp(disabled, "false") != 0) {
		s_looked(ch, "instance role: IMDS disabled by AWS_EC2_METADATA_DISABLED");
		return S_NEXT;
	}
	if (!c->imds) {
		rc = rr_imds_new(c->http, c->imds_endpoint, &c->imds);
		if (rc)
			return rr_fail(ch->why, ch->cap, rc == RR_ENOMEM ? rc : RR_EINVAL,
				       "instance role: the IMDS endpoint is not usable");
	}
	rr_buf_init(&body, S_RESPONSE_MAX);
	rc = rr_imds_get(c->imds, list_path, &body, 0, NULL, mwhy, sizeof(mwhy));
	if (rc == RR_ENOENT) {
		s_looked(ch, "instance role: none attached (IMDS at %s)",
			 rr_imds_endpoint(c->imds));
		rc = S_NEXT;
		goto out;
	}
	if (rc) {
		rc = rr_fail(ch->why, ch->cap, rc, "instance role: %s", mwhy);
		goto out;
	}
	n = strcspn((const char *)body.data, "\r\n");
	if (n == 0) {
		s_looked(ch, "instance role: none attached (IMDS at %s)",
			 rr_imds_endpoint(c->imds));
		rc = S_NEXT;
		goto out;
	}
	if (!s_valid_role_name((const char *)body.data, n)) {
		rc = rr_fail(ch->why, ch->cap, RR_EIO,
			     "instance role: IMDS listed a role name %s that IAM "
			     "would not allow",
			     rr_quote(q, (const char *)body.data, n));
		goto out;
	}
	memcpy(role, body.data, n);
	role[n] = '\0';
	snprintf(path, sizeof(path), "%s%s", list_path, role);
	snprintf(step, sizeof(step), "instance role %s", role);
	rr_buf_reset(&body);
	rc = rr_imds_get(c->imds, path, &body, 0, NULL, mwhy, sizeof(mwhy));
	if (rc) {
		rc = rr_fail(ch->why, ch->cap, rc, "%s: %s", step, mwhy);
		goto out;
	}
	j = rr_json_parse((const char *)body.data, body.len, NULL);
	if (!cJSON_IsObject(j)) {
		rc = rr_fail(ch->why, ch->cap, RR_EIO, "%s: IMDS did not answer a JSON object",
			     step);
		goto out;
	}
	code = cJSON_GetObjectItemCaseSensitive(j, "Code");
	if (!cJSON_IsString(code) || strcmp(code->valuestring, "Success") != 0) {
		rc = rr_fail(ch->why, ch->cap, RR_EACCES, "%s: IMDS answered Code %s", step,
			     cJSON_IsString(code) ? rr_quote_str(q, code->valuestring) : "(none)");
		goto out;
	}
	rc = s_json_credentials(ch, step, j, 1, step);
out:
	rr_json_wipe_delete(j);
	rr_buf_wipe_free(&body);
	return rc;
}

/* ---- the chain and its cache ---- */

static int s_resolve(struct rr_aws_creds *c, struct rr_aws_credentials *out, char *why,
		     size_t cap)
{
	static int (*const steps[])(struct s_chain *) = {
		s_step_env, s_step_profile, s_step_web_identity, s_step_container, s_step_imds,
	};
	struct s_chain ch;
	int rc = S_NEXT;

	memset(&ch, 0, sizeof(ch));
	ch.c = c;
	ch.out = out;
	ch.why = why;
	ch.cap = cap;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && rc == S_NEXT; i++) {
		/* The container step, when configured, is the last word: IMDS is not tried. */
		rc = steps[i](&ch);
	}
	if (rc == S_NEXT)
		rc = rr_fail(ch.why, ch.cap, RR_ENOENT, "no AWS credentials found; looked at %s",
			     ch.looked);
	rr_aws_profile_free(ch.profile);
	if (rc)
		rr_aws_credentials_wipe(out);
	return rc;
}

int rr_aws_creds_new(const struct rr_aws_creds_opts *opts, struct rr_aws_creds **out)
{
	struct rr_aws_creds *c;
	int failed = 0;

	if (!opts || !opts->http || !out || opts->refresh_margin_ms < 0)
		return RR_EINVAL;
	if (opts->region && !s_valid_region(opts->region))
		return RR_EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return RR_ENOMEM;
	c->http = opts->http;
	c->profile = s_strdup_or_null(opts->profile, &failed);
	c->region = s_strdup_or_null(opts->region, &failed);
	c->sts_endpoint = s_strdup_or_null(opts->sts_endpoint, &failed);
	c->imds_endpoint = s_strdup_or_null(opts->imds_endpoint, &failed);
	c->margin_ms = opts->refresh_margin_ms ? opts->refresh_margin_ms : S_DEFAULT_MARGIN_MS;
	pthread_mutex_init(&c->lock, NULL);
	if (failed) {
		rr_aws_creds_destroy(c);
		return RR_ENOMEM;
	}
	*out = c;
	return 0;
}

int rr_aws_creds_get(struct rr_aws_creds *c, int force_refresh, struct rr_aws_credentials *out,
		     char *why, size_t cap)
{
	struct rr_aws_credentials fresh;
	char fwhy[S_LOOKED_MAX + 256] = "";
	int64_t now;
	int rc;

	if (why && cap)
		why[0] = '\0';
	if (!c || !out)
		return RR_EINVAL;
	pthread_mutex_lock(&c->lock);
	now = rr_wall_ms();
	if (c->have && !force_refresh &&
	    (c->cached.expires_unix_ms == 0 || c->cached.expires_unix_ms - now > c->margin_ms)) {
		*out = c->cached;
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	rc = s_resolve(c, &fresh, fwhy, sizeof(fwhy));
	if (rc == 0) {
		if (!c->have || strcmp(c->cached.source, fresh.source) != 0)
			rr_debug("AWS credentials from %s", fresh.source);
		rr_aws_credentials_wipe(&c->cached);
		c->cached = fresh;
		c->have = 1;
		c->failure_logged = 0;
		*out = fresh;
	} else if (c->have && (c->cached.expires_unix_ms == 0 || c->cached.expires_unix_ms > now)) {
		/* Still valid: a slow or throttled endpoint must not stop uploads that the
		 * cached credentials can finish. */
		if (!c->failure_logged)
			rr_warn("refreshing AWS credentials failed (%s); using those from %s "
				"until they expire", fwhy, c->cached.source);
		c->failure_logged = 1;
		*out = c->cached;
		rc = 0;
	} else if (why && cap) {
		snprintf(why, cap, "%s", fwhy);
	}
	rr_aws_credentials_wipe(&fresh);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void rr_aws_creds_destroy(struct rr_aws_creds *c)
{
	if (!c)
		return;
	rr_aws_credentials_wipe(&c->cached);
	rr_imds_destroy(c->imds);
	pthread_mutex_destroy(&c->lock);
	free(c->profile);
	free(c->region);
	free(c->sts_endpoint);
	free(c->imds_endpoint);
	free(c);
}
