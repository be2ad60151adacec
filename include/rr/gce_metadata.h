/* The GCE metadata server as every caller reaches it: where it is (GCE_METADATA_HOST) and
 * the Metadata-Flavor handshake that tells its answers from a proxy's. The notice provider
 * (cloud/gcp.c), the OAuth2 token source (storage/auth/gcs_auth.c) and cloud detection
 * (cloud/detect.c) use it. */
#ifndef RR_GCE_METADATA_H
#define RR_GCE_METADATA_H

#include <stddef.h>

#include "rr/http.h"

#define RR_GCE_METADATA_HOST "metadata.google.internal" /* without GCE_METADATA_HOST */
#define RR_GCE_METADATA_IP "169.254.169.254"           /* without GCE_METADATA_IP */

/* The header every request carries: without it the server refuses to answer. */
extern const struct rr_http_header rr_gce_metadata_flavor;

/* The server's base URL without a trailing '/': endpoint when given (tests, proxies), else
 * http://$GCE_METADATA_HOST (host[:port], google-cloud-go's convention), else
 * http://metadata.google.internal. Returns 0, or RR_EINVAL when it is empty, holds a space or
 * a control character, or needs cap bytes or more. */
int rr_gce_metadata_base(const char *endpoint, char *out, size_t cap);

/* The base URL to ask whether this is GCE at all, as google-auth pings it: by address, so
 * that a machine elsewhere whose DNS does not answer is not held up by the lookup of
 * metadata.google.internal (10 s with glibc's defaults, and libcurl waits for it even when
 * the request is abandoned). http://$GCE_METADATA_HOST when that is set (tests, proxies),
 * else http://$GCE_METADATA_IP (default 169.254.169.254). Returns as rr_gce_metadata_base. */
int rr_gce_metadata_ping_base(char *out, size_t cap);

/* 1 when resp carries Metadata-Flavor: Google, so it came from the metadata server and not
 * from a proxy or captive portal in between; 0 otherwise. */
int rr_gce_metadata_answered(const struct rr_http_response *resp);

#endif
