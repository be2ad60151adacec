/* HTTP over libcurl for the object stores, the credential providers and the cloud metadata
 * pollers: connection reuse, timeouts, TLS verification always on, bounded response bodies,
 * and a batch of transfers in flight at once (curl multi) for multipart uploads and ranged
 * downloads.
 *
 * No retries happen here: callers decide (storage/net/retry.c), because whether a failure
 * heals depends on the protocol above. A client is safe to use from several threads at
 * once: each request borrows an easy handle from the client's pool, so a connection opened
 * by one request is reused by the next one that borrows that handle. */
#ifndef RR_HTTP_H
#define RR_HTTP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "rr/buf.h"

struct rr_http;

struct rr_http_opts {
	long connect_timeout_ms; /* 0: 5000 */
	/* A transfer that moves fewer than 1 KiB/s for this long is abandoned (a hung server
	 * or a dead connection). 0: 20 s. */
	long stall_timeout_ms;
	const char *ca_bundle;   /* PEM file of trusted CAs; NULL: $SSL_CERT_FILE when set,
				  * else the system's (callers pass AWS_CA_BUNDLE here) */
	const char *user_agent;  /* NULL: "resume-run/<version>" */
	/* NULL, or where the client's owner keeps a CLOCK_MONOTONIC ms deadline (0: none) that
	 * no request of this client outlives: a store's notice deadline, so the credential and
	 * token requests made for a notice's checkpoint are bounded by it too. */
	const _Atomic long long *deadline_mono_ms;
};

struct rr_http_header {
	const char *name;
	const char *value;
};

/* Reads the next bytes of a streamed request body into buf (at most cap); returns the count,
 * 0 at the end, or a negative rr_error to abort the transfer. */
typedef long (*rr_http_read_cb)(void *ud, void *buf, size_t cap);

struct rr_http_request {
	const char *method; /* "GET", "PUT", "POST", "HEAD", "DELETE" */
	const char *url;    /* absolute, already percent-encoded for the wire */
	const struct rr_http_header *headers;
	size_t nheaders;
	/* The body: body/body_len from memory, or read_cb (with body_len as the exact length
	 * sent as Content-Length). Neither: no body. */
	const void *body;
	size_t body_len;
	rr_http_read_cb read_cb;
	void *read_ud;
	size_t response_max;  /* ceiling on the response body kept; 0: 1 MiB. A bigger body
			       * fails the request with RR_ETOOBIG. */
	long timeout_ms;      /* whole-transfer limit; 0: none beyond the stall timeout */
	/* Nonzero while the transfer runs: it stops within ~100 ms with RR_ECANCELED (a
	 * hanging GET cut short at shutdown). May be NULL. */
	const atomic_int *cancel;
	const atomic_int *stop; /* the same, a second flag (a store stopped for good) */
	/* Nonzero: no stall timeout (a hanging GET that legitimately sends nothing for a
	 * minute); timeout_ms then bounds the transfer. */
	int may_idle;
};

#define RR_HTTP_MAX_RESPONSE_HEADERS 48

struct rr_http_response {
	long status;        /* HTTP status, 0 when no response came (see error) */
	/* 0 when a response came (whatever its status); otherwise why not: transport failures
	 * (timeouts, resets, refused connections) are RR_EIO with `message` saying which,
	 * RR_ETOOBIG for a body over response_max, and the read callback's own negative code
	 * when it aborted the transfer. */
	int error;
	int retryable;      /* the transport failure may heal (timeout, reset, refused, DNS) */
	char message[256];  /* curl's description of a transport failure, or "" */
	struct rr_buf body; /* response body (the caller calls rr_http_response_free) */
	size_t nheaders;    /* headers of the final response (not of a 100 Continue) */
	struct rr_http_header headers[RR_HTTP_MAX_RESPONSE_HEADERS];
	char *header_text;  /* storage behind headers[] */
	double seconds;     /* time the transfer took */
	/* curl sent the body again on a fresh connection after the first one broke with no
	 * answer: the first sending may have been applied by the server. */
	int resent;
};

/* Makes a client (opts copied, NULL: the defaults) whose requests share DNS and TLS
 * sessions and reuse connections. The first call loads libcurl (storage/net/curl_api.h).
 * Returns 0 with *out set, RR_EIO when libcurl cannot be loaded or initialised (logged),
 * RR_ENOMEM. The caller frees *out with rr_http_destroy. */
int rr_http_new(const struct rr_http_opts *opts, struct rr_http **out);
/* Closes the connections and frees the client. NULL is fine. */
void rr_http_destroy(struct rr_http *h);

/* Prepares resp to receive a response (must be called once before first use). */
void rr_http_response_init(struct rr_http_response *resp);
/* Frees what a response holds; it may be used again after rr_http_response_init. */
void rr_http_response_free(struct rr_http_response *resp);
/* The same, zeroing the body first (it held credentials or a token). */
void rr_http_response_wipe_free(struct rr_http_response *resp);

/* A base URL as a user or the environment gives it (a metadata endpoint, an STS endpoint):
 * copies it to out without its trailing '/'s. Returns 0, or RR_EINVAL when nothing is left,
 * when it holds a space or a control character, or when it needs cap bytes or more
 * (with its NUL). out may be in. */
int rr_http_base_url(const char *in, char *out, size_t cap);
/* The value of the first response header with this name (case-insensitive), or NULL. */
const char *rr_http_response_header(const struct rr_http_response *resp, const char *name);

/* Performs one request and fills resp (reset first). Returns 0 when a response came
 * (whatever its status: check resp->status), else resp->error. */
int rr_http_perform(struct rr_http *h, const struct rr_http_request *req,
		    struct rr_http_response *resp);

/* A batch runs up to max_in_flight transfers at once on one thread (curl multi). Requests
 * and their buffers must stay valid until the transfer is reported done. */
struct rr_http_batch;

int rr_http_batch_new(struct rr_http *h, unsigned max_in_flight, struct rr_http_batch **out);
/* Queues a transfer; it starts as soon as a slot is free. tag comes back from wait. */
int rr_http_batch_add(struct rr_http_batch *b, const struct rr_http_request *req,
		      struct rr_http_response *resp, void *tag);
/* Drives the transfers until one finishes (returns 1 and its tag), until timeout_ms passes
 * with none finished (returns 0; -1 waits without limit), or returns RR_ENOENT when nothing
 * is queued or running. */
int rr_http_batch_wait(struct rr_http_batch *b, long timeout_ms, void **tag_out);
/* Number of transfers queued or running. */
unsigned rr_http_batch_pending(const struct rr_http_batch *b);
/* Abandons unfinished transfers and frees the batch. */
void rr_http_batch_destroy(struct rr_http_batch *b);

#endif
