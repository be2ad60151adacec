/* The cache in front of the AWS chain (include/rr/aws_credentials.h): one resolution at a
 * time, credentials kept until they are within the refresh margin of expiry, and cached
 * ones still used while a refresh fails and they are valid. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws_provider.h"
#include "rr/clock.h"
#include "rr/error.h"
#include "rr/imds.h"
#include "rr/log.h"

#define S_DEFAULT_MARGIN_MS (5 * 60 * 1000)

/* The region names the STS endpoint's host: letters, digits and '-' only. */
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
	char fwhy[RR_AWS_LOOKED_MAX + 512] = "";
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
	rc = rr_aws_chain_resolve(c, &fresh, fwhy, sizeof(fwhy));
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
