/* IMDSv2 client (include/rr/imds.h, the EC2 user guide, "Use IMDSv2"). There is
 * deliberately no IMDSv1 fallback: a token PUT that gets no answer is reported, with the
 * hop-limit hint, instead of being papered over by unauthenticated GETs. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "rr/clock.h"
#include "rr/env.h"
#include "rr/error.h"
#include "rr/imds.h"

#define S_DEFAULT_TIMEOUT_MS 2000
#define S_REFRESH_BEFORE_MS 60000 /* fetch a new token when less than this remains */
#define S_TOKEN_MAX 1024          /* real tokens are ~56 bytes */
#define S_ENDPOINT_MAX 512
#define S_PATH_MAX 1024
#define S_URL_MAX (S_ENDPOINT_MAX + S_PATH_MAX + 16)
#define S_TTL_HEADER "X-aws-ec2-metadata-token-ttl-seconds"
#define S_TOKEN_HEADER "X-aws-ec2-metadata-token"
#define S_HOP_HINT                                                                         \
	"; in a container the PUT response hop limit may be too small: `aws ec2 "          \
	"modify-instance-metadata-options --http-put-response-hop-limit 2`"

struct rr_imds {
	struct rr_http *http;
	char endpoint[S_ENDPOINT_MAX];
	pthread_mutex_t lock;       /* guards the token */
	char token[S_TOKEN_MAX];    /* "" when none is held */
	int64_t token_expires_ms;   /* monotonic */
};

int rr_imds_new(struct rr_http *http, const char *endpoint, struct rr_imds **out)
{
	struct rr_imds *m;
	char base[S_ENDPOINT_MAX];

	if (!http || !out)
		return RR_EINVAL;
	if (!endpoint)
		endpoint = rr_env("RESUME_RUN_METADATA_ENDPOINT");
	if (!endpoint)
		endpoint = rr_env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	if (!endpoint)
		endpoint = RR_IMDS_DEFAULT_ENDPOINT;
	if (rr_http_base_url(endpoint, base, sizeof(base)))
		return RR_EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return RR_ENOMEM;
	m->http = http;
	memcpy(m->endpoint, base, sizeof(base));
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	return 0;
}

void rr_imds_destroy(struct rr_imds *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	OPENSSL_cleanse(m->token, sizeof(m->token));
	free(m);
}

const char *rr_imds_endpoint(const struct rr_imds *m)
{
	return m->endpoint;
}

/* A token goes into a header line: visible ASCII only, and it must fit. */
static int s_is_token(const unsigned char *p, size_t len)
{
	if (len == 0 || len >= S_TOKEN_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (p[i] <= 0x20 || p[i] >= 0x7f)
			return 0;
	return 1;
}

/* Parses the TTL the service echoes; 0 when absent or not a number in 1..max. */
static long s_echoed_ttl(const struct rr_http_response *resp, long max)
{
	const char *v = rr_http_response_header(resp, S_TTL_HEADER);
	char *end;
	long ttl;

	if (!v || *v < '0' || *v > '9')
		return 0;
	ttl = strtol(v, &end, 10);
	if (*end || ttl < 1 || ttl > max)
		return 0;
	return ttl;
}

/* Fetches a new token into m->token. Called with m->lock held, so that concurrent callers
 * wait for one PUT instead of each sending their own (IMDS is throttled per instance). */
static int s_fetch_token(struct rr_imds *m, long timeout_ms, long *status, char *why,
			 size_t why_len)
{
	char url[S_URL_MAX], ttl_text[16];
	struct rr_http_header hdr = { S_TTL_HEADER, ttl_text };
	struct rr_http_request req;
	struct rr_http_response resp;
	int64_t start = rr_mono_ms();
	long ttl = RR_IMDS_TOKEN_TTL_S, echoed;
	int rc;

	OPENSSL_cleanse(m->token, sizeof(m->token));
	m->token[0] = '\0';
	snprintf(url, sizeof(url), "%s/latest/api/token", m->endpoint);
	snprintf(ttl_text, sizeof(ttl_text), "%d", RR_IMDS_TOKEN_TTL_S);
	memset(&req, 0, sizeof(req));
	req.method = "PUT";
	req.url = url;
	req.headers = &hdr;
	req.nheaders = 1;
	req.response_max = S_TOKEN_MAX - 1;
	req.timeout_ms = timeout_ms;
	rr_http_response_init(&resp);
	rc = rr_http_perform(m->http, &req, &resp);
	*status = resp.status;
	if (rc) {
		/* The hop limit shows as silence: the response packets die on their way into
		 * the container and the PUT times out. A refusal that comes back at once is
		 * something else (no metadata service at this address). */
		int timed_out = rr_mono_ms() - start >= timeout_ms / 2;
		rr_why(why, why_len, "IMDS token PUT to %s got no answer (%s)%s", m->endpoint,
		      resp.message[0] ? resp.message : rr_strerror(rc),
		      timed_out ? S_HOP_HINT : "");
		rc = rc == RR_ENOMEM ? RR_ENOMEM : RR_EIO;
		goto out;
	}
	if (resp.status == 403) {
		rr_why(why, why_len,
		       "IMDS token PUT to %s refused (403): the metadata service may "
			       "be turned off for this instance", m->endpoint);
		rc = RR_EACCES;
		goto out;
	}
	if (resp.status != 200) {
		rr_why(why, why_len, "IMDS token PUT to %s answered %ld", m->endpoint,
		       resp.status);
		rc = RR_EIO;
		goto out;
	}
	if (!s_is_token(resp.body.data, resp.body.len)) {
		rr_why(why, why_len,
		       "IMDS token PUT to %s: the answer is not a token (%zu bytes)",
		      m->endpoint, resp.body.len);
		rc = RR_EIO;
		goto out;
	}
	memcpy(m->token, resp.body.data, resp.body.len);
	m->token[resp.body.len] = '\0';
	/* A service that grants less than asked says so in the echoed header. */
	echoed = s_echoed_ttl(&resp, RR_IMDS_TOKEN_TTL_S);
	if (echoed)
		ttl = echoed;
	m->token_expires_ms = start + (int64_t)ttl * 1000; /* from before the PUT went out */
	rc = 0;
out:
	rr_http_response_wipe_free(&resp);
	return rc;
}

/* Copies a usable token into tok (fetching one when none is held, when less than a minute
 * of it remains, or when the caller saw `stale` refused). */
static int s_get_token(struct rr_imds *m, const char *stale, char tok[S_TOKEN_MAX],
		       long timeout_ms, long *status, char *why, size_t why_len)
{
	int rc = 0;

	pthread_mutex_lock(&m->lock);
	if (stale && strcmp(m->token, stale) == 0) {
		OPENSSL_cleanse(m->token, sizeof(m->token));
		m->token[0] = '\0';
	}
	if (!m->token[0] || m->token_expires_ms - rr_mono_ms() < S_REFRESH_BEFORE_MS)
		rc = s_fetch_token(m, timeout_ms, status, why, why_len);
	if (rc == 0)
		memcpy(tok, m->token, S_TOKEN_MAX);
	pthread_mutex_unlock(&m->lock);
	return rc;
}

int rr_imds_get(struct rr_imds *m, const char *path, struct rr_buf *out, long timeout_ms,
		long *status_out, char *why, size_t why_len)
{
	char url[S_URL_MAX], tok[S_TOKEN_MAX];
	struct rr_http_header hdr = { S_TOKEN_HEADER, tok };
	struct rr_http_request req;
	struct rr_http_response resp;
	long status = 0;
	size_t room;
	int rc, attempt;

	if (why && why_len)
		why[0] = '\0';
	if (status_out)
		*status_out = 0;
	if (!m || !path || !out)
		return RR_EINVAL;
	while (*path == '/')
		path++;
	if (strlen(path) >= S_PATH_MAX)
		return RR_EINVAL;
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return RR_EINVAL;
	if (timeout_ms <= 0)
		timeout_ms = S_DEFAULT_TIMEOUT_MS;
	snprintf(url, sizeof(url), "%s/latest/%s", m->endpoint, path);
	room = out->max > out->len ? out->max - out->len : 0;

	rr_http_response_init(&resp);
	tok[0] = '\0';
	for (attempt = 0; attempt < 2; attempt++) {
		/* The second round follows a 401: the token expired or the service restarted,
		 * so get a new one, unless another thread already has. */
		rc = s_get_token(m, attempt ? tok : NULL, tok, timeout_ms, &status, why,
				 why_len);
		if (rc)
			goto out;
		if (attempt) {
			rr_http_response_wipe_free(&resp);
			rr_http_response_init(&resp);
		}
		memset(&req, 0, sizeof(req));
		req.method = "GET";
		req.url = url;
		req.headers = &hdr;
		req.nheaders = 1;
		req.response_max = room ? room : 1;
		req.timeout_ms = timeout_ms;
		rc = rr_http_perform(m->http, &req, &resp);
		status = resp.status;
		if (rc) {
			if (rc == RR_ETOOBIG)
				rr_why(why, why_len,
				       "IMDS GET %s: the answer passes its ceiling", url);
			else
				rr_why(why, why_len, "IMDS GET %s failed: %s", url,
				      resp.message[0] ? resp.message : rr_strerror(rc));
			rc = rc == RR_ETOOBIG || rc == RR_ENOMEM ? rc : RR_EIO;
			goto out;
		}
		if (status != 401)
			break;
	}
	switch (status) {
	case 200:
		rc = rr_buf_append(out, resp.body.data, resp.body.len);
		if (rc)
			rr_why(why, why_len, "IMDS GET %s: the answer passes its ceiling",
			       url);
		break;
	case 401:
		rr_why(why, why_len, "IMDS GET %s: the service refused a fresh token (401)",
		       url);
		rc = RR_EACCES;
		break;
	case 403:
		rr_why(why, why_len,
		       "IMDS GET %s refused (403): the metadata service or this path "
			       "is not allowed", url);
		rc = RR_EACCES;
		break;
	case 404:
		rr_why(why, why_len, "IMDS GET %s: not found (404)", url);
		rc = RR_ENOENT;
		break;
	default:
		rr_why(why, why_len, "IMDS GET %s answered %ld%s", url, status,
		      status == 429 ? " (throttled)" : "");
		rc = RR_EIO;
		break;
	}
out:
	if (status_out)
		*status_out = status;
	OPENSSL_cleanse(tok, sizeof(tok));
	rr_http_response_wipe_free(&resp);
	return rc;
}
