/* Provider 4 of the AWS chain: the container endpoint (ECS task roles, EKS Pod Identity).
 * AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (appended to http://169.254.170.2) or
 * AWS_CONTAINER_CREDENTIALS_FULL_URI (https, or http to a loopback / ECS / EKS agent
 * address only), with Authorization from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (preferred)
 * or AWS_CONTAINER_AUTHORIZATION_TOKEN. When configured it is the last word: IMDS is not
 * tried after it. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "aws_provider.h"
#include "rr/buf.h"
#include "rr/env.h"
#include "rr/error.h"
#include "rr/http.h"
#include "rr/json.h"
#include "rr/quote.h"

#define S_CONTAINER_TIMEOUT_MS 5000
#define S_CONTAINER_HOST "http://169.254.170.2"
#define S_STEP "container endpoint"

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

/* The URL of the endpoint from the RELATIVE_URI or FULL_URI variable. */
static int s_container_url(struct rr_aws_chain *ch, const char *rel, const char *full,
			   char *url, size_t cap)
{
	char q[RR_QUOTE_CAP];

	if (rel) {
		if (rel[0] != '/' || strlen(rel) + sizeof(S_CONTAINER_HOST) > cap ||
		    !rr_aws_printable(rel))
			return rr_fail(ch->why, ch->cap, RR_EINVAL,
				       "%s: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI %s "
				       "is not a path",
				       S_STEP, rr_quote_str(q, rel));
		snprintf(url, cap, "%s%s", S_CONTAINER_HOST, rel);
		return 0;
	}
	if (strchr(full, '@'))
		/* user info may be a password: not repeated in the reason */
		return rr_fail(ch->why, ch->cap, RR_EINVAL,
			       "%s: AWS_CONTAINER_CREDENTIALS_FULL_URI "
			       "must not carry user info ('@')",
			       S_STEP);
	if (strlen(full) >= cap || !s_full_uri_allowed(full))
		return rr_fail(ch->why, ch->cap, RR_EINVAL,
			       "%s: AWS_CONTAINER_CREDENTIALS_FULL_URI %s "
			       "must be https, or http to a loopback address "
			       "or 169.254.170.2 / .23 or [fd00:ec2::23]",
			       S_STEP, rr_quote_str(q, full));
	snprintf(url, cap, "%s", full);
	return 0;
}

/* The Authorization value, if one is configured, into auth. The token file is read at
 * every fetch: the agent that writes it rotates it. */
static int s_container_token(struct rr_aws_chain *ch, struct rr_buf *auth)
{
	const char *token_file = rr_env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	const char *t = rr_env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
	char q[RR_QUOTE_CAP];
	int rc;

	if (token_file) {
		rc = rr_aws_read_secret_file(token_file, auth);
		if (rc)
			return rr_fail(
				ch->why, ch->cap, rc == RR_ENOMEM ? rc : RR_EINVAL,
				"%s: cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE %s: %s",
				S_STEP, rr_quote_str(q, token_file),
				rc == RR_ETOOBIG ? "larger than 64 KiB" : rr_strerror(rc));
	} else if (t && rr_buf_append(auth, t, strlen(t))) {
		return rr_fail(ch->why, ch->cap, RR_EINVAL,
			       "%s: AWS_CONTAINER_AUTHORIZATION_TOKEN is "
			       "longer than 64 KiB",
			       S_STEP);
	}
	for (size_t i = 0; i < auth->len; i++) {
		unsigned char b = auth->data[i];
		if ((b < 0x20 && b != '\t') || b == 0x7f)
			return rr_fail(ch->why, ch->cap, RR_EINVAL,
				       "%s: the authorization token holds a line break "
				       "or control character",
				       S_STEP);
	}
	return 0;
}

/* GETs url (with auth when not empty) and reads the credentials it answers. */
static int s_container_fetch(struct rr_aws_chain *ch, const char *url,
			     const struct rr_buf *auth)
{
	struct rr_http_header hdr = { "Authorization",
				      auth->len ? (const char *)auth->data : NULL };
	struct rr_http_request req = { .method = "GET", .url = url, .headers = &hdr,
				       .nheaders = hdr.value ? 1 : 0,
				       .response_max = RR_AWS_RESPONSE_MAX,
				       .timeout_ms = S_CONTAINER_TIMEOUT_MS };
	struct rr_http_response resp;
	cJSON *j = NULL;
	int rc;

	rr_http_response_init(&resp);
	rc = rr_http_perform(ch->c->http, &req, &resp);
	if (rc) {
		rc = rr_fail(ch->why, ch->cap, rc == RR_ENOMEM ? rc : RR_EIO,
			     "%s: no answer from %s: %s", S_STEP, url,
			     resp.message[0] ? resp.message : rr_strerror(rc));
		goto out;
	}
	if (resp.status != 200) {
		int transient = resp.status >= 500 || resp.status == 429 || resp.status < 400;
		rc = rr_fail(ch->why, ch->cap, transient ? RR_EIO : RR_EACCES,
			     "%s: %s answered %ld", S_STEP, url, resp.status);
		goto out;
	}
	j = s_parse_object(&resp);
	if (!j) {
		rc = rr_fail(ch->why, ch->cap, RR_EIO, "%s: %s did not answer a JSON object",
			     S_STEP, url);
		goto out;
	}
	rc = rr_aws_chain_fill_json(ch, S_STEP, j, 0, "container endpoint");
out:
	rr_json_wipe_delete(j);
	rr_http_response_wipe_free(&resp);
	return rc;
}

int rr_aws_provider_container(struct rr_aws_chain *ch)
{
	const char *rel = rr_env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full = rr_env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	struct rr_buf auth;
	char url[RR_AWS_URL_MAX];
	int rc;

	if (!rel && !full) {
		rr_aws_chain_looked(ch, "container: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/"
				    "FULL_URI not set");
		return RR_AWS_NEXT;
	}
	rr_buf_init(&auth, RR_AWS_SECRET_FILE_MAX);
	rc = s_container_url(ch, rel, full, url, sizeof(url));
	if (!rc)
		rc = s_container_token(ch, &auth);
	if (!rc)
		rc = s_container_fetch(ch, url, &auth);
	rr_buf_wipe_free(&auth);
	return rc;
}
