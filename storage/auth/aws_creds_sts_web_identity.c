/* Provider 3 of the AWS chain: web identity. AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN
 * (+ AWS_ROLE_SESSION_NAME), or the profile's web_identity_token_file / role_arn /
 * role_session_name, exchanged for credentials by STS AssumeRoleWithWebIdentity (an
 * unsigned POST). STS's XML answer is read here too, with the engine of rr/xml.h. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "aws_provider.h"
#include "rr/aws_credentials.h"
#include "rr/buf.h"
#include "rr/clock.h"
#include "rr/env.h"
#include "rr/error.h"
#include "rr/http.h"
#include "rr/quote.h"
#include "rr/sigv4.h"
#include "rr/timefmt.h"
#include "rr/xml.h"

#define S_STS_TIMEOUT_MS 10000
#define S_STS_CREDS "AssumeRoleWithWebIdentityResponse/AssumeRoleWithWebIdentityResult/Credentials/"

/* ---- STS's answer ---- */

int rr_s3_xml_parse_sts(const void *xml, size_t len, struct rr_s3_xml_credentials *out,
			struct rr_s3_error *err)
{
	struct rr_s3_error scratch, *e = err ? err : &scratch;
	struct rr_xml_field f[7];
	struct rr_xml_doc d;
	int64_t ms;
	int rc;

	if (!out)
		return RR_EINVAL;
	memset(e, 0, sizeof(*e));
	f[0] = (struct rr_xml_field){ S_STS_CREDS "AccessKeyId", out->access_key_id,
				      sizeof(out->access_key_id), 0 };
	f[1] = (struct rr_xml_field){ S_STS_CREDS "SecretAccessKey", out->secret_access_key,
				      sizeof(out->secret_access_key), 0 };
	f[2] = (struct rr_xml_field){ S_STS_CREDS "SessionToken", out->session_token,
				      sizeof(out->session_token), 0 };
	f[3] = (struct rr_xml_field){ S_STS_CREDS "Expiration", out->expiration,
				      sizeof(out->expiration), 0 };
	f[4] = (struct rr_xml_field){ "ErrorResponse/Error/Code", e->code, sizeof(e->code), 0 };
	f[5] = (struct rr_xml_field){ "ErrorResponse/Error/Message", e->message,
				      sizeof(e->message), 0 };
	f[6] = (struct rr_xml_field){ "ErrorResponse/RequestId", e->request_id,
				      sizeof(e->request_id), 0 };
	rr_xml_doc_init(&d, f, 7, NULL, NULL);
	rc = rr_xml_parse(&d, xml, len);
	if (!rc && strcmp(d.root, "ErrorResponse") == 0) {
		rc = RR_EACCES;
		goto out;
	}
	if (err)
		memset(err, 0, sizeof(*err));
	if (!rc && strcmp(d.root, "AssumeRoleWithWebIdentityResponse") != 0)
		rc = RR_ECORRUPT;
	/* all four, and a time the refresh logic can use */
	if (!rc && (!out->access_key_id[0] || !out->secret_access_key[0] ||
		    !out->session_token[0] || rr_iso8601_to_unix_ms(out->expiration, &ms)))
		rc = RR_ECORRUPT;
out:
	if (rc)
		OPENSSL_cleanse(out, sizeof(*out));
	return rc;
}

/* ---- the request ---- */

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
static int s_sts_refusal(struct rr_aws_chain *ch, const char *step,
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

/* Reads the token file into token, refusing an unreadable or empty one. */
static int s_read_token(struct rr_aws_chain *ch, const char *step, const char *token_file,
			struct rr_buf *token)
{
	char q[RR_QUOTE_CAP];
	int rc = rr_aws_read_secret_file(token_file, token);

	if (rc)
		return rr_fail(ch->why, ch->cap, rc == RR_ENOMEM ? rc : RR_EINVAL,
			       "%s: cannot read the token file %s: %s", step,
			       rr_quote_str(q, token_file),
			       rc == RR_ETOOBIG ? "larger than 64 KiB" : rr_strerror(rc));
	if (token->len == 0)
		return rr_fail(ch->why, ch->cap, RR_EINVAL, "%s: the token file %s is empty", step,
			       rr_quote_str(q, token_file));
	return 0;
}

/* The form body of AssumeRoleWithWebIdentity. */
static int s_request_body(struct rr_aws_chain *ch, const char *step, const char *role_arn,
			  const char *session_name, const struct rr_buf *token,
			  struct rr_buf *body)
{
	int rc = rr_buf_printf(body, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15");

	if (!rc)
		rc = s_form_append(body, "RoleArn", role_arn);
	if (!rc)
		rc = s_form_append(body, "RoleSessionName", session_name);
	if (!rc)
		rc = s_form_append(body, "WebIdentityToken", (const char *)token->data);
	if (rc)
		return rr_fail(ch->why, ch->cap, rc, "%s: cannot build the request: %s", step,
			       rr_strerror(rc));
	return 0;
}

/* Reads a 200 answer's credentials into ch->out. */
static int s_take_answer(struct rr_aws_chain *ch, const char *step, const char *role_arn,
			 const struct rr_http_response *resp)
{
	struct rr_s3_xml_credentials x;
	struct rr_s3_error err;
	char source[96];
	int64_t expires = 0;
	int rc;

	memset(&x, 0, sizeof(x));
	memset(&err, 0, sizeof(err));
	rc = rr_s3_xml_parse_sts(resp->body.data, resp->body.len, &x, &err);
	if (rc == RR_EACCES)
		rc = s_sts_refusal(ch, step, resp);
	else if (rc)
		rc = rr_fail(ch->why, ch->cap, RR_EIO,
			     "%s: STS answered 200 with an unreadable document (%s)", step,
			     rr_strerror(rc));
	else if (rr_iso8601_to_unix_ms(x.expiration, &expires))
		rc = rr_fail(ch->why, ch->cap, RR_EIO, "%s: STS sent an unreadable Expiration",
			     step);
	if (!rc) {
		snprintf(source, sizeof(source), "web identity (%s)", role_arn);
		rc = rr_aws_chain_fill(ch, step, x.access_key_id, x.secret_access_key,
				       x.session_token, expires, source);
	}
	OPENSSL_cleanse(&x, sizeof(x));
	return rc;
}

static int s_web_identity(struct rr_aws_chain *ch, const char *token_file, const char *role_arn,
			  const char *session_name)
{
	struct rr_http_header hdrs[] = {
		{ "Content-Type", "application/x-www-form-urlencoded" },
		{ "Accept", "text/xml" },
	};
	struct rr_http_request req;
	struct rr_http_response resp;
	struct rr_buf token, body;
	char step[96], url[RR_AWS_URL_MAX], session[80];
	int rc;

	snprintf(step, sizeof(step), "web identity (%s)", role_arn);
	rr_buf_init(&token, RR_AWS_SECRET_FILE_MAX);
	rr_buf_init(&body, 3 * RR_AWS_SECRET_FILE_MAX + 4096);
	rr_http_response_init(&resp);
	rc = s_read_token(ch, step, token_file, &token);
	if (rc)
		goto out;
	if (!session_name) {
		snprintf(session, sizeof(session), "resume-run-%lld",
			 (long long)(rr_wall_ms() / 1000));
		session_name = session;
	}
	if (s_sts_url(ch->c, url, sizeof(url))) {
		rc = rr_fail(ch->why, ch->cap, RR_EINVAL,
			     "%s: the STS endpoint is not a usable URL", step);
		goto out;
	}
	rc = s_request_body(ch, step, role_arn, session_name, &token, &body);
	if (rc)
		goto out;
	req = (struct rr_http_request){ .method = "POST", .url = url, .headers = hdrs,
					.nheaders = sizeof(hdrs) / sizeof(hdrs[0]),
					.body = body.data, .body_len = body.len,
					.response_max = RR_AWS_RESPONSE_MAX,
					.timeout_ms = S_STS_TIMEOUT_MS };
	rc = rr_http_perform(ch->c->http, &req, &resp);
	if (rc)
		rc = rr_fail(ch->why, ch->cap, rc == RR_ENOMEM ? rc : RR_EIO,
			     "%s: no answer from STS at %s: %s", step, url,
			     resp.message[0] ? resp.message : rr_strerror(rc));
	else if (resp.status != 200)
		rc = s_sts_refusal(ch, step, &resp);
	else
		rc = s_take_answer(ch, step, role_arn, &resp);
out:
	rr_buf_wipe_free(&token);
	rr_buf_wipe_free(&body);
	rr_http_response_wipe_free(&resp);
	return rc;
}

/* Environment first, key by key, then the profile (as botocore does). A role_arn in the
 * profile without a token file would be an assume-role profile (source_profile,
 * credential_source), which is not supported: refused rather than skipped, so that the
 * chain does not quietly pick another identity. */
int rr_aws_provider_web_identity(struct rr_aws_chain *ch)
{
	const char *token_file = rr_env("AWS_WEB_IDENTITY_TOKEN_FILE");
	const char *role_arn = rr_env("AWS_ROLE_ARN");
	const char *session = rr_env("AWS_ROLE_SESSION_NAME");
	const char *p_role = rr_aws_chain_profile_get(ch, "role_arn");

	if (!token_file)
		token_file = rr_aws_chain_profile_get(ch, "web_identity_token_file");
	if (!role_arn)
		role_arn = p_role;
	if (!session)
		session = rr_aws_chain_profile_get(ch, "role_session_name");
	if (!token_file) {
		if (p_role)
			return rr_fail(ch->why, ch->cap, RR_EINVAL,
				       "profile %s: role_arn without "
				       "web_identity_token_file (assume-role "
				       "profiles are not supported)",
				       rr_aws_profile_name(ch->profile));
		rr_aws_chain_looked(ch, "web identity: AWS_WEB_IDENTITY_TOKEN_FILE not set");
		return RR_AWS_NEXT;
	}
	if (!role_arn || !*role_arn)
		return rr_fail(ch->why, ch->cap, RR_EINVAL,
			       "web identity: a token file is configured but no "
			       "role (AWS_ROLE_ARN or the profile's role_arn)");
	return s_web_identity(ch, token_file, role_arn, session);
}
