/* Names of the clouds, for --cloud and log lines. */
#include <string.h>

#include "rr/cloud.h"
#include "rr/error.h"

static const char *const s_names[] = { "auto", "none", "aws", "gcp", "azure" };

const char *rr_cloud_name(enum rr_cloud c)
{
	return (unsigned)c < sizeof(s_names) / sizeof(s_names[0]) ? s_names[c] : "?";
}

int rr_cloud_parse(const char *s, enum rr_cloud *out)
{
	for (unsigned i = 0; s && i < sizeof(s_names) / sizeof(s_names[0]); i++) {
		if (strcmp(s, s_names[i]) == 0) {
			*out = (enum rr_cloud)i;
			return 0;
		}
	}
	return RR_EINVAL;
}
