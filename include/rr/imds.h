/* The EC2 instance metadata service, IMDSv2 only (the EC2 user guide, "Use IMDSv2"): a
 * session token from PUT /latest/api/token (X-aws-ec2-metadata-token-ttl-seconds), sent on
 * every GET as X-aws-ec2-metadata-token, fetched again shortly before its TTL ends and once
 * more when a GET gets 401. Shared by the instance-role credential provider and the spot
 * notice poller. Thread-safe. */
#ifndef RR_IMDS_H
#define RR_IMDS_H

#include "rr/buf.h"
#include "rr/http.h"

#define RR_IMDS_DEFAULT_ENDPOINT "http://169.254.169.254"
#define RR_IMDS_TOKEN_TTL_S 21600

struct rr_imds;

/* endpoint: base URL without a trailing path, e.g. "http://127.0.0.1:1338"; NULL means
 * RESUME_RUN_METADATA_ENDPOINT, else AWS_EC2_METADATA_SERVICE_ENDPOINT, else
 * RR_IMDS_DEFAULT_ENDPOINT. http is borrowed. */
int rr_imds_new(struct rr_http *http, const char *endpoint, struct rr_imds **out);
void rr_imds_destroy(struct rr_imds *m);

/* GET <endpoint>/latest/<path> (path like "meta-data/spot/instance-action"), body appended
 * to out (out's ceiling applies). timeout_ms bounds each request (0: 2000). Returns 0;
 * RR_ENOENT for 404; RR_EACCES for 403 (IMDS turned off, or the path not allowed); RR_EIO
 * when the service cannot be reached, answers 5xx or 429, or the token PUT gets no answer
 * (then why says the PUT response hop limit may be too small for a container: `aws ec2
 * modify-instance-metadata-options --http-put-response-hop-limit 2`). *status_out (may be
 * NULL) receives the last HTTP status (0 if none). why (why_len bytes, may be NULL): one
 * line. */
int rr_imds_get(struct rr_imds *m, const char *path, struct rr_buf *out, long timeout_ms,
		long *status_out, char *why, size_t why_len);

/* The base URL in use (for log lines). */
const char *rr_imds_endpoint(const struct rr_imds *m);

#endif
