/* What the AWS credential providers of this folder share (private to storage/auth): one
 * resolution of the chain (struct rr_aws_chain), the checks every provider's answer goes
 * through, and the providers themselves, one per file as in aws-c-auth:
 *   aws_creds_environment.c       AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
 *   aws_creds_profile.c           the shared files' profile
 *   aws_creds_sts_web_identity.c  STS AssumeRoleWithWebIdentity (and STS's XML answer)
 *   aws_creds_container.c         the ECS / EKS container endpoint
 *   aws_creds_imds.c              the instance role from IMDSv2
 *   aws_creds_chain.c             tries them in order
 *   aws_creds_cached.c            rr_aws_creds_*: the cache in front of the chain
 * A provider returns RR_AWS_NEXT when it is not configured (after noting what it looked at
 * with rr_aws_chain_looked); anything else (0 with ch->out filled, or a failure with
 * ch->why set) ends the chain, so a misconfigured step is reported rather than silently
 * replaced by a different identity further down. */
#ifndef RR_AWS_PROVIDER_H
#define RR_AWS_PROVIDER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "rr/aws_credentials.h"
#include "rr/aws_profile.h"
#include "rr/buf.h"
#include "rr/http.h"
#include "rr/imds.h"

#define RR_AWS_NEXT 1                        /* a provider that is not configured */
#define RR_AWS_SECRET_FILE_MAX (64u << 10)   /* web identity tokens are at most 20000 bytes */
#define RR_AWS_RESPONSE_MAX (64u << 10)
#define RR_AWS_URL_MAX 2048
#define RR_AWS_LOOKED_MAX 1024

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
struct rr_aws_chain {
	struct rr_aws_creds *c;
	struct rr_aws_credentials *out;
	char *why;
	size_t cap;
	struct rr_aws_profile *profile;    /* loaded by the profile provider, NULL before */
	char looked[RR_AWS_LOOKED_MAX];    /* steps that had nothing, for the RR_ENOENT reason */
};

typedef int (*rr_aws_provider_fn)(struct rr_aws_chain *ch);

int rr_aws_provider_environment(struct rr_aws_chain *ch);
int rr_aws_provider_profile(struct rr_aws_chain *ch);
int rr_aws_provider_web_identity(struct rr_aws_chain *ch);
int rr_aws_provider_container(struct rr_aws_chain *ch);
int rr_aws_provider_imds(struct rr_aws_chain *ch);

/* Runs the providers in order into *out (wiped on failure). Returns 0, or the first
 * configured provider's failure, or RR_ENOENT naming what was looked at. */
int rr_aws_chain_resolve(struct rr_aws_creds *c, struct rr_aws_credentials *out, char *why,
			 size_t cap);

/* Adds "; <what>" to the list of steps that had nothing. */
void rr_aws_chain_looked(struct rr_aws_chain *ch, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A key of the profile loaded so far, or NULL. */
const char *rr_aws_chain_profile_get(const struct rr_aws_chain *ch, const char *key);

/* Fills ch->out after checking lengths and bytes; names what is wrong without showing it.
 * token may be NULL; expires_ms 0 means the credentials do not expire. */
int rr_aws_chain_fill(struct rr_aws_chain *ch, const char *step, const char *akid,
		      const char *secret, const char *token, int64_t expires_ms,
		      const char *source);

/* Reads AccessKeyId, SecretAccessKey, Token, Expiration from a JSON document (the
 * container and the IMDS answers share these names) into ch->out. */
int rr_aws_chain_fill_json(struct rr_aws_chain *ch, const char *step, const cJSON *j,
			   int token_required, const char *source);

/* 1 when s holds no space, control byte or DEL (it travels in an HTTP header). */
int rr_aws_printable(const char *s);

/* Reads a small file that holds a secret (a web identity or authorization token) into
 * out, without trailing white space; out's ceiling bounds it (RR_ETOOBIG). Returns 0 or
 * an rr_error, errno-derived. */
int rr_aws_read_secret_file(const char *path, struct rr_buf *out);

#endif
