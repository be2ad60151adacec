/* The AWS credential chain: the providers in the order the AWS SDKs use ("Standardized
 * credential providers"). The first that has credentials wins; the first that is
 * configured but fails ends the chain with its reason (storage/auth/aws_provider.h). */
#include <string.h>

#include "aws_provider.h"
#include "rr/aws_profile.h"
#include "rr/error.h"

int rr_aws_chain_resolve(struct rr_aws_creds *c, struct rr_aws_credentials *out, char *why,
			 size_t cap)
{
	static const rr_aws_provider_fn steps[] = {
		rr_aws_provider_environment, rr_aws_provider_profile, rr_aws_provider_web_identity,
		rr_aws_provider_container, rr_aws_provider_imds,
	};
	struct rr_aws_chain ch;
	int rc = RR_AWS_NEXT;

	memset(&ch, 0, sizeof(ch));
	ch.c = c;
	ch.out = out;
	ch.why = why;
	ch.cap = cap;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && rc == RR_AWS_NEXT; i++) {
		/* The container step, when configured, is the last word: IMDS is not tried. */
		rc = steps[i](&ch);
	}
	if (rc == RR_AWS_NEXT)
		rc = rr_fail(ch.why, ch.cap, RR_ENOENT, "none found; the usual fix: export "
			     "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE naming a "
			     "profile of ~/.aws/credentials; on EC2, attach an instance role); "
			     "looked at: %s", ch.looked);
	rr_aws_profile_free(ch.profile);
	if (rc)
		rr_aws_credentials_wipe(out);
	return rc;
}
