/* Provider 1 of the AWS chain: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN).
 * One without the other is a configuration error, not a reason to look further. */
#include <stddef.h>

#include "aws_provider.h"
#include "rr/env.h"
#include "rr/error.h"

int rr_aws_provider_environment(struct rr_aws_chain *ch)
{
	const char *akid = rr_env("AWS_ACCESS_KEY_ID");
	const char *secret = rr_env("AWS_SECRET_ACCESS_KEY");

	if (!akid && !secret) {
		rr_aws_chain_looked(ch, "environment: AWS_ACCESS_KEY_ID not set");
		return RR_AWS_NEXT;
	}
	if (!akid || !secret)
		return rr_fail(ch->why, ch->cap, RR_EINVAL, "environment: %s is set but %s is not",
			       akid ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
			       akid ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
	return rr_aws_chain_fill(ch, "environment", akid, secret, rr_env("AWS_SESSION_TOKEN"),
				 0, "environment");
}
