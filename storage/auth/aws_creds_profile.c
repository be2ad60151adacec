/* Provider 2 of the AWS chain: the shared files' profile (AWS_PROFILE, else "default";
 * storage/auth/aws_profile.c reads the files). The profile stays loaded for the providers
 * after it (a profile's web_identity_token_file and role_arn). */
#include <stdio.h>

#include "aws_provider.h"
#include "rr/aws_profile.h"
#include "rr/error.h"

int rr_aws_provider_profile(struct rr_aws_chain *ch)
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
		rr_aws_chain_looked(ch, "profile %s: no aws_access_key_id", name);
		return RR_AWS_NEXT;
	}
	snprintf(source, sizeof(source), "profile %s", name);
	if (!akid || !secret)
		return rr_fail(ch->why, ch->cap, RR_EINVAL, "%s: %s without %s", source,
			       akid ? "aws_access_key_id" : "aws_secret_access_key",
			       akid ? "aws_secret_access_key" : "aws_access_key_id");
	return rr_aws_chain_fill(ch, source, akid, secret,
				 rr_aws_profile_get(ch->profile, "aws_session_token"), 0, source);
}
