/* AWS credentials, found the way the AWS SDKs find them (the S3 API reference and the AWS
 * SDKs' "Standardized credential providers"), cached, and refreshed before they expire:
 *   1. environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
 *   2. the shared files' profile (AWS_PROFILE, else "default"): aws_access_key_id,
 *      aws_secret_access_key, aws_session_token; a profile with web_identity_token_file +
 *      role_arn goes to step 3 with those;
 *   3. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (+ AWS_ROLE_SESSION_NAME)
 *      through STS AssumeRoleWithWebIdentity (an unsigned POST to the STS endpoint);
 *   4. container credentials: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (appended to
 *      http://169.254.170.2) or AWS_CONTAINER_CREDENTIALS_FULL_URI (https, or http to a
 *      loopback / 169.254.170.2 / 169.254.170.23 / fd00:ec2::23 host only), with
 *      Authorization from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (preferred) or
 *      AWS_CONTAINER_AUTHORIZATION_TOKEN; when those variables are set, IMDS is not tried;
 *   5. the instance role from IMDSv2 (storage/net/imds.c), unless AWS_EC2_METADATA_DISABLED is
 *      set to anything but "false".
 * The first step that has credentials wins; a step that is configured but fails (a profile
 * that names a missing key, an STS refusal, an endpoint that answers 4xx) stops the chain
 * with its reason, as the SDKs do, instead of silently falling through to the next one.
 *
 * Secrets never reach a log line or a `why` text; buffers that held them are wiped. */
#ifndef RR_AWS_CREDENTIALS_H
#define RR_AWS_CREDENTIALS_H

#include <stdint.h>

#include "rr/http.h"

struct rr_aws_credentials {
	char access_key_id[128];
	char secret_access_key[128];
	char session_token[4096]; /* "" when the credentials are long-term */
	int64_t expires_unix_ms;  /* 0: they do not expire */
	char source[96];          /* for log lines: "environment", "profile dev",
				   * "web identity (arn:...)", "container endpoint",
				   * "instance role NAME" */
};

struct rr_aws_creds_opts {
	struct rr_http *http;       /* borrowed; used for STS, container and IMDS requests */
	const char *profile;        /* NULL: AWS_PROFILE, else "default" */
	const char *region;         /* for the STS endpoint; NULL: us-east-1 */
	const char *sts_endpoint;   /* NULL: AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else
				     * https://sts.<region>.amazonaws.com */
	const char *imds_endpoint;  /* NULL: see rr_imds_new */
	/* Credentials are refreshed when fewer than this many ms of validity remain.
	 * 0: 5 minutes (IMDS publishes new ones at least 5 minutes before expiry). */
	int64_t refresh_margin_ms;
};

struct rr_aws_creds;

/* Builds a credential chain that has looked for nothing yet (rr_aws_creds_get does). opts
 * and its strings are copied; opts->http is borrowed and must outlive the chain. Returns 0
 * with *out set, RR_EINVAL for a missing argument or an invalid region, RR_ENOMEM. The
 * caller frees *out with rr_aws_creds_destroy. */
int rr_aws_creds_new(const struct rr_aws_creds_opts *opts, struct rr_aws_creds **out);

/* Copies the current credentials into *out, resolving the chain on first use and again
 * when the cached ones are within the refresh margin of expiry (or force_refresh, e.g.
 * after the server said ExpiredToken). Thread-safe: concurrent callers wait for one
 * resolution. If a refresh fails while the cached credentials are still valid, those are
 * returned (and the failure logged once). Returns 0; RR_ENOENT when no step of the chain
 * has credentials (why lists what was looked at); RR_EACCES when a configured step was
 * refused; RR_EINVAL for a configuration error (e.g. a FULL_URI to a forbidden host); RR_EIO
 * when an endpoint could not be reached. why (why_len bytes) gets one line naming the step. */
int rr_aws_creds_get(struct rr_aws_creds *c, int force_refresh, struct rr_aws_credentials *out,
		     char *why, size_t why_len);

/* Wipes and frees. NULL is fine. */
void rr_aws_creds_destroy(struct rr_aws_creds *c);

/* Wipes a credentials struct (for callers' copies). */
void rr_aws_credentials_wipe(struct rr_aws_credentials *cr);

/* The fields of an AWS XML error document: S3's <Error> (rr/s3_xml.h) and STS's
 * <ErrorResponse><Error> share them. */
struct rr_s3_error {
	char code[64];     /* e.g. "SignatureDoesNotMatch", "SlowDown", "NoSuchBucket" */
	char message[512];
	char request_id[128];
	char server_time[64]; /* RequestTimeTooSkewed: the server's clock, ISO 8601 */
};

struct rr_s3_xml_credentials {
	char access_key_id[128];
	char secret_access_key[128];
	char session_token[4096];
	char expiration[64];    /* as sent, e.g. "2026-11-22T12:00:00Z" */
};
/* <AssumeRoleWithWebIdentityResponse> from STS (Result/Credentials/{AccessKeyId,
 * SecretAccessKey, SessionToken, Expiration}); all four required. An <ErrorResponse> root
 * gives RR_EACCES with *err filled (Error/Code, Error/Message). Read by the web identity
 * provider (storage/auth/aws_creds_sts_web_identity.c); out is wiped on failure. */
int rr_s3_xml_parse_sts(const void *xml, size_t len, struct rr_s3_xml_credentials *out,
			struct rr_s3_error *err);

#endif
