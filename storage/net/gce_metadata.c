/* The GCE metadata server's address and handshake (include/rr/gce_metadata.h). */
#include <stdio.h>
#include <strings.h>

#include "rr/env.h"
#include "rr/error.h"
#include "rr/gce_metadata.h"
#include "rr/http.h"

const struct rr_http_header rr_gce_metadata_flavor = { "Metadata-Flavor", "Google" };

int rr_gce_metadata_base(const char *endpoint, char *out, size_t cap)
{
	const char *host = rr_env("GCE_METADATA_HOST");
	char url[4096]; /* more than any caller's cap */
	int len;

	if (endpoint && *endpoint)
		len = snprintf(url, sizeof(url), "%s", endpoint);
	else /* host[:port], no scheme */
		len = snprintf(url, sizeof(url), "http://%s", host ? host : RR_GCE_METADATA_HOST);
	if (len < 0 || (size_t)len >= sizeof(url))
		return RR_EINVAL;
	return rr_http_base_url(url, out, cap);
}

int rr_gce_metadata_ping_base(char *out, size_t cap)
{
	const char *ip = rr_env("GCE_METADATA_IP");
	char url[4096];
	int len;

	if (rr_env("GCE_METADATA_HOST"))
		return rr_gce_metadata_base(NULL, out, cap);
	len = snprintf(url, sizeof(url), "http://%s", ip ? ip : RR_GCE_METADATA_IP);
	if (len < 0 || (size_t)len >= sizeof(url))
		return RR_EINVAL;
	return rr_http_base_url(url, out, cap);
}

int rr_gce_metadata_answered(const struct rr_http_response *resp)
{
	const char *v = rr_http_response_header(resp, "Metadata-Flavor");

	return v && strcasecmp(v, "Google") == 0;
}
