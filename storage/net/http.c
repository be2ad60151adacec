/* HTTP over libcurl: a pool of easy handles (each keeps its connections open for the next
 * request that borrows it), a share object for DNS and TLS sessions, and batches on curl
 * multi. See include/rr/http.h. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "rr/clock.h"
#include "rr/error.h"
#include "rr/http.h"

#include "curl_api.h"

#define S_POOL_MAX 64               /* idle easy handles kept for reuse */
#define S_HEADERS_MAX (64u << 10)   /* ceiling on one response's header bytes */
#define S_DEFAULT_RESPONSE_MAX (1u << 20)
/* What is kept of an error answer's body (an S3 <Error> document is well under 1 KiB);
 * the rest is read and dropped. */
#define S_ERROR_BODY_MAX (64u << 10)

struct rr_http {
	struct rr_http_opts opts;
	char *ca_bundle;
	char *user_agent;
	CURLSH *share;
	pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
	pthread_mutex_t pool_lock;
	CURL *pool[S_POOL_MAX];
	unsigned npool;
};

/* One transfer: the request, where its response goes, and the curl state behind it. */
struct s_transfer {
	struct rr_http *h;
	const struct rr_http_request *req;
	struct rr_http_response *resp;
	void *tag;
	CURL *easy;
	struct curl_slist *headers;
	size_t body_off;
	size_t response_max;
	long status;              /* of the current response, from its status line */
	int error;                /* set by a callback that stopped the transfer */
	int resent;               /* curl rewound a body it had begun to send */
	int headers_done;
	struct rr_buf header_raw; /* "name\0value\0" pairs of the current response */
	char errbuf[CURL_ERROR_SIZE];
	struct s_transfer *next;  /* batch queue */
};

static void s_share_lock(CURL *easy, curl_lock_data data, curl_lock_access access, void *ud)
{
	struct rr_http *h = ud;

	(void)easy;
	(void)access;
	if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST)
		pthread_mutex_lock(&h->share_locks[data]);
}

static void s_share_unlock(CURL *easy, curl_lock_data data, void *ud)
{
	struct rr_http *h = ud;

	(void)easy;
	if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST)
		pthread_mutex_unlock(&h->share_locks[data]);
}

int rr_http_new(const struct rr_http_opts *opts, struct rr_http **out)
{
	struct rr_http *h;
	int i;

	if (rr_curl_load() != 0)
		return RR_EIO;
	h = calloc(1, sizeof(*h));
	if (!h)
		return RR_ENOMEM;
	if (opts)
		h->opts = *opts;
	if (h->opts.connect_timeout_ms <= 0)
		h->opts.connect_timeout_ms = 5000;
	if (h->opts.stall_timeout_ms <= 0)
		h->opts.stall_timeout_ms = 20000;
	/* libcurl itself ignores SSL_CERT_FILE (only the curl tool and OpenSSL's default paths,
	 * which libcurl's built-in bundle overrides, read it), yet it is how a private CA is
	 * named for every other TLS client on the machine: honour it when the caller has no
	 * bundle of its own (AWS_CA_BUNDLE wins for S3, as the AWS SDKs do). */
	if (!h->opts.ca_bundle) {
		const char *env = getenv("SSL_CERT_FILE");
		if (env && env[0])
			h->opts.ca_bundle = env;
	}
	h->ca_bundle = h->opts.ca_bundle ? strdup(h->opts.ca_bundle) : NULL;
	h->user_agent = strdup(h->opts.user_agent ? h->opts.user_agent : "resume-run/0.1");
	h->share = rr_curl.share_init();
	if ((h->opts.ca_bundle && !h->ca_bundle) || !h->user_agent || !h->share) {
		if (h->share)
			rr_curl.share_cleanup(h->share);
		free(h->ca_bundle);
		free(h->user_agent);
		free(h);
		return RR_ENOMEM;
	}
	h->opts.ca_bundle = h->ca_bundle;
	h->opts.user_agent = h->user_agent;
	for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&h->share_locks[i], NULL);
	pthread_mutex_init(&h->pool_lock, NULL);
	rr_curl.share_setopt(h->share, CURLSHOPT_LOCKFUNC, s_share_lock);
	rr_curl.share_setopt(h->share, CURLSHOPT_UNLOCKFUNC, s_share_unlock);
	rr_curl.share_setopt(h->share, CURLSHOPT_USERDATA, h);
	rr_curl.share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	rr_curl.share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	*out = h;
	return 0;
}

void rr_http_destroy(struct rr_http *h)
{
	unsigned i;
	int j;

	if (!h)
		return;
	for (i = 0; i < h->npool; i++)
		rr_curl.easy_cleanup(h->pool[i]);
	rr_curl.share_cleanup(h->share);
	for (j = 0; j < CURL_LOCK_DATA_LAST; j++)
		pthread_mutex_destroy(&h->share_locks[j]);
	pthread_mutex_destroy(&h->pool_lock);
	free(h->ca_bundle);
	free(h->user_agent);
	free(h);
}

static CURL *s_borrow(struct rr_http *h)
{
	CURL *easy = NULL;

	pthread_mutex_lock(&h->pool_lock);
	if (h->npool > 0)
		easy = h->pool[--h->npool];
	pthread_mutex_unlock(&h->pool_lock);
	if (easy)
		rr_curl.easy_reset(easy); /* keeps its open connections, drops the options */
	else
		easy = rr_curl.easy_init();
	return easy;
}

static void s_give_back(struct rr_http *h, CURL *easy)
{
	if (!easy)
		return;
	pthread_mutex_lock(&h->pool_lock);
	if (h->npool < S_POOL_MAX) {
		h->pool[h->npool++] = easy;
		easy = NULL;
	}
	pthread_mutex_unlock(&h->pool_lock);
	if (easy)
		rr_curl.easy_cleanup(easy);
}

void rr_http_response_init(struct rr_http_response *resp)
{
	memset(resp, 0, sizeof(*resp));
	rr_buf_init(&resp->body, S_DEFAULT_RESPONSE_MAX);
}

void rr_http_response_free(struct rr_http_response *resp)
{
	rr_buf_free(&resp->body);
	free(resp->header_text);
	resp->header_text = NULL;
	resp->nheaders = 0;
}

void rr_http_response_wipe_free(struct rr_http_response *resp)
{
	rr_buf_wipe_free(&resp->body);
	rr_http_response_free(resp);
}

int rr_http_base_url(const char *in, char *out, size_t cap)
{
	size_t n = strlen(in);

	while (n > 0 && in[n - 1] == '/')
		n--;
	if (n == 0 || n >= cap)
		return RR_EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)in[i] <= 0x20 || in[i] == 0x7f)
			return RR_EINVAL;
	memmove(out, in, n);
	out[n] = '\0';
	return 0;
}

const char *rr_http_response_header(const struct rr_http_response *resp, const char *name)
{
	size_t i;

	for (i = 0; i < resp->nheaders; i++)
		if (strcasecmp(resp->headers[i].name, name) == 0)
			return resp->headers[i].value;
	return NULL;
}

/* The caller's ceiling bounds the bytes of what it asked for, so it applies to 2xx answers
 * only. An error answer (503 SlowDown, 500 InternalError...) must reach the caller as that
 * error whatever its length: judged by the ceiling, a 503 with a body longer than a small
 * object would pass for an object too big, i.e. for damage. */
static size_t s_on_body(char *ptr, size_t size, size_t n, void *ud)
{
	struct s_transfer *t = ud;
	size_t len = size * n, keep;

	if (t->status >= 300) {
		keep = t->resp->body.len < S_ERROR_BODY_MAX ? S_ERROR_BODY_MAX - t->resp->body.len
							     : 0;
		if (keep > len)
			keep = len;
		if (t->resp->body.max < S_ERROR_BODY_MAX)
			t->resp->body.max = S_ERROR_BODY_MAX;
		if (keep && rr_buf_append(&t->resp->body, ptr, keep) != 0) {
			t->error = RR_ENOMEM;
			return 0;
		}
		return len;
	}
	if (t->resp->body.len + len > t->response_max) {
		t->error = RR_ETOOBIG;
		return 0; /* curl stops with CURLE_WRITE_ERROR */
	}
	if (rr_buf_append(&t->resp->body, ptr, len) != 0) {
		t->error = RR_ENOMEM;
		return 0;
	}
	return len;
}

static void s_trim(const char **s, size_t *len)
{
	while (*len > 0 && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t' ||
			    (*s)[*len - 1] == '\r' || (*s)[*len - 1] == '\n'))
		(*len)--;
}

/* The status code of a status line ("HTTP/1.1 503 Slow Down", "HTTP/2 200"), or 0. */
static long s_status_of(const char *line, size_t len)
{
	const char *sp = memchr(line, ' ', len);
	size_t i, off;
	long st = 0;

	if (!sp)
		return 0;
	off = (size_t)(sp - line) + 1;
	for (i = 0; i < 3; i++) {
		if (off + i >= len || line[off + i] < '0' || line[off + i] > '9')
			return 0;
		st = st * 10 + (line[off + i] - '0');
	}
	return st;
}

/* Keeps "name: value" lines of the last response; a new status line (after 100 Continue
 * or a redirect) starts over. */
static size_t s_on_header(char *ptr, size_t size, size_t n, void *ud)
{
	struct s_transfer *t = ud;
	size_t len = size * n, nlen, vlen;
	const char *colon, *name = ptr, *value;
	static const char zero = 0;

	if (len >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
		t->status = s_status_of(ptr, len);
		rr_buf_reset(&t->header_raw);
		return len;
	}
	colon = memchr(ptr, ':', len);
	if (!colon)
		return len; /* the blank line ending the headers, or junk */
	nlen = (size_t)(colon - ptr);
	value = colon + 1;
	vlen = len - nlen - 1;
	s_trim(&name, &nlen);
	s_trim(&value, &vlen);
	if (nlen == 0 || memchr(name, 0, nlen) || memchr(value, 0, vlen))
		return len;
	if (rr_buf_append(&t->header_raw, name, nlen) || rr_buf_append(&t->header_raw, &zero, 1) ||
	    rr_buf_append(&t->header_raw, value, vlen) || rr_buf_append(&t->header_raw, &zero, 1)) {
		t->error = RR_ETOOBIG;
		return 0;
	}
	return len;
}

static size_t s_on_read(char *buf, size_t size, size_t n, void *ud)
{
	struct s_transfer *t = ud;
	const struct rr_http_request *r = t->req;
	size_t cap = size * n, left;
	long got;

	if (r->read_cb) {
		got = r->read_cb(r->read_ud, buf, cap);
		if (got < 0) {
			t->error = (int)got;
			return CURL_READFUNC_ABORT;
		}
		return (size_t)got;
	}
	left = r->body_len - t->body_off;
	if (left > cap)
		left = cap;
	memcpy(buf, (const char *)r->body + t->body_off, left);
	t->body_off += left;
	return left;
}

static int s_on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			 curl_off_t ulnow)
{
	struct s_transfer *t = ud;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	if ((t->req->cancel && *t->req->cancel) || (t->req->stop && *t->req->stop)) {
		t->error = RR_ECANCELED;
		return 1;
	}
	return 0;
}

/* curl rewinds the body when it resends on a fresh connection (a reused one that had been
 * closed by the server): possible for bodies in memory only. */
static int s_on_seek(void *ud, curl_off_t offset, int origin)
{
	struct s_transfer *t = ud;

	if (t->req->read_cb || origin != SEEK_SET || offset < 0 ||
	    (size_t)offset > t->req->body_len)
		return CURL_SEEKFUNC_CANTSEEK;
	if (t->body_off > 0)
		t->resent = 1;
	t->body_off = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

/* Every socket close-on-exec from its creation (SOCK_CLOEXEC, not a later fcntl: another
 * thread may fork the trainer at any moment), so neither the trainer nor a restarted
 * attempt inherits a keep-alive connection to the store or the metadata server. */
static curl_socket_t s_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	(void)ud;
	(void)purpose;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* For any socket curl obtained without the callback above: close-on-exec all the same. */
static int s_sockopt(void *ud, curl_socket_t fd, curlsocktype purpose)
{
	int flags = fcntl(fd, F_GETFD);

	(void)ud;
	(void)purpose;
	if (flags >= 0 && !(flags & FD_CLOEXEC))
		(void)fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
	return CURL_SOCKOPT_OK;
}

/* Frees a request's header lines, zeroed first: they hold Authorization values and session
 * tokens. */
static void s_headers_wipe_free(struct curl_slist *l)
{
	for (struct curl_slist *p = l; p; p = p->next)
		if (p->data)
			explicit_bzero(p->data, strlen(p->data));
	rr_curl.slist_free_all(l);
}

static int s_has_body(const struct rr_http_request *r)
{
	return r->read_cb != NULL || r->body != NULL;
}

/* Sets every option of one transfer on a freshly reset easy handle. */
static int s_setup(struct s_transfer *t)
{
	const struct rr_http_request *r = t->req;
	struct rr_http *h = t->h;
	CURL *e = t->easy;
	struct curl_slist *l;
	struct rr_buf line;
	long long deadline;
	long timeout_ms;
	size_t i, need;
	int rc = 0;

	if (!r->method || !r->url)
		return RR_EINVAL;
	t->response_max = r->response_max ? r->response_max : S_DEFAULT_RESPONSE_MAX;
	rr_buf_init(&t->header_raw, S_HEADERS_MAX);
	rr_buf_init(&line, 16384);
	/* Room for the longest line at once: a buffer grown by realloc would leave copies of
	 * the lines before (an Authorization value) in freed memory, unwiped. */
	for (i = 0, need = 0; i < r->nheaders; i++) {
		size_t n = strlen(r->headers[i].name) + strlen(r->headers[i].value) + 4;
		need = n > need ? n : need;
	}
	rc = rr_buf_reserve(&line, need);
	if (rc) {
		rr_buf_free(&line);
		return rc;
	}
	/* No "Expect: 100-continue" round trip before a body. */
	t->headers = rr_curl.slist_append(NULL, "Expect:");
	for (i = 0; t->headers && i < r->nheaders; i++) {
		rr_buf_reset(&line);
		/* "Name;" is curl's way to send a header with an empty value. */
		if (r->headers[i].value[0])
			rc = rr_buf_printf(&line, "%s: %s", r->headers[i].name, r->headers[i].value);
		else
			rc = rr_buf_printf(&line, "%s;", r->headers[i].name);
		if (rc)
			break;
		l = rr_curl.slist_append(t->headers, (const char *)line.data);
		if (!l) {
			rc = RR_ENOMEM;
			break;
		}
		t->headers = l;
	}
	rr_buf_wipe_free(&line);
	if (rc)
		return rc;
	if (!t->headers)
		return RR_ENOMEM;

	rr_curl.easy_setopt(e, CURLOPT_URL, r->url);
#if LIBCURL_VERSION_NUM >= 0x075500
	rr_curl.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	rr_curl.easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	rr_curl.easy_setopt(e, CURLOPT_SHARE, h->share);
	rr_curl.easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, s_open_socket);
	rr_curl.easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, s_sockopt);
	rr_curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	rr_curl.easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
	rr_curl.easy_setopt(e, CURLOPT_USERAGENT, h->user_agent);
	rr_curl.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, h->opts.connect_timeout_ms);
	if (!r->may_idle) {
		rr_curl.easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1024L);
		rr_curl.easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (h->opts.stall_timeout_ms + 999) / 1000);
	}
	if (r->cancel || r->stop) {
		rr_curl.easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
		rr_curl.easy_setopt(e, CURLOPT_XFERINFOFUNCTION, s_on_progress);
		rr_curl.easy_setopt(e, CURLOPT_XFERINFODATA, t);
	}
	timeout_ms = r->timeout_ms;
	deadline = h->opts.deadline_mono_ms ? *h->opts.deadline_mono_ms : 0;
	if (deadline) {
		long long left = deadline - rr_mono_ms();
		if (left < 1)
			left = 1; /* past it: curl gives up at once */
		if (timeout_ms <= 0 || left < timeout_ms)
			timeout_ms = (long)left;
	}
	if (timeout_ms > 0)
		rr_curl.easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	rr_curl.easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	rr_curl.easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	if (h->ca_bundle)
		rr_curl.easy_setopt(e, CURLOPT_CAINFO, h->ca_bundle);
	rr_curl.easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	rr_curl.easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	rr_curl.easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
	rr_curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, s_on_body);
	rr_curl.easy_setopt(e, CURLOPT_WRITEDATA, t);
	rr_curl.easy_setopt(e, CURLOPT_HEADERFUNCTION, s_on_header);
	rr_curl.easy_setopt(e, CURLOPT_HEADERDATA, t);

	if (strcmp(r->method, "HEAD") == 0) {
		rr_curl.easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (s_has_body(r) || strcmp(r->method, "PUT") == 0) {
		/* Every request with a body goes out as an "upload" with a known length (curl
		 * then adds no Content-Type of its own); the method is set explicitly. */
		rr_curl.easy_setopt(e, CURLOPT_UPLOAD, 1L);
		rr_curl.easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
		rr_curl.easy_setopt(e, CURLOPT_READFUNCTION, s_on_read);
		rr_curl.easy_setopt(e, CURLOPT_READDATA, t);
		rr_curl.easy_setopt(e, CURLOPT_SEEKFUNCTION, s_on_seek);
		rr_curl.easy_setopt(e, CURLOPT_SEEKDATA, t);
		if (strcmp(r->method, "PUT") != 0)
			rr_curl.easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
	} else if (strcmp(r->method, "POST") == 0) {
		rr_curl.easy_setopt(e, CURLOPT_POST, 1L);
		rr_curl.easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
		rr_curl.easy_setopt(e, CURLOPT_POSTFIELDS, "");
	} else if (strcmp(r->method, "GET") != 0) {
		rr_curl.easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
	}
	return 0;
}

/* Transport failures that may heal if the request is sent again. */
static int s_retryable(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return 1;
	default:
		return 0;
	}
}

/* Fills the response once curl is done with the transfer. */
static int s_finish(struct s_transfer *t, CURLcode c)
{
	struct rr_http_response *resp = t->resp;
	size_t off = 0, n = 0;
	double secs = 0;
	long status = 0;

	rr_curl.easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
	rr_curl.easy_getinfo(t->easy, CURLINFO_TOTAL_TIME, &secs);
	resp->seconds = secs;
	resp->resent = t->resent;
	if (c == CURLE_OK) {
		resp->status = status;
		resp->error = 0;
	} else {
		resp->status = 0;
		resp->retryable = t->error ? 0 : s_retryable(c);
		resp->error = t->error ? t->error
			    : c == CURLE_ABORTED_BY_CALLBACK ? RR_ECANCELED : RR_EIO;
		snprintf(resp->message, sizeof(resp->message), "%s",
			 t->error == RR_ETOOBIG ? "response larger than its ceiling"
			 : t->errbuf[0]	  ? t->errbuf
					  : rr_curl.easy_strerror(c));
	}
	/* Move the header pairs into the response and point headers[] into them. */
	free(resp->header_text);
	resp->header_text = (char *)t->header_raw.data;
	t->header_raw.data = NULL;
	while (resp->header_text && off < t->header_raw.len && n < RR_HTTP_MAX_RESPONSE_HEADERS) {
		resp->headers[n].name = resp->header_text + off;
		off += strlen(resp->header_text + off) + 1;
		resp->headers[n].value = resp->header_text + off;
		off += strlen(resp->header_text + off) + 1;
		n++;
	}
	resp->nheaders = n;
	rr_buf_free(&t->header_raw);
	s_headers_wipe_free(t->headers);
	t->headers = NULL;
	return resp->error;
}

/* Resets resp for a new transfer, keeping its body ceiling from the request. */
static void s_reset_response(struct s_transfer *t)
{
	struct rr_http_response *resp = t->resp;

	rr_buf_free(&resp->body);
	free(resp->header_text);
	memset(resp, 0, sizeof(*resp));
	rr_buf_init(&resp->body, t->req->response_max ? t->req->response_max
						      : S_DEFAULT_RESPONSE_MAX);
}

static int s_start(struct rr_http *h, struct s_transfer *t)
{
	int rc;

	t->h = h;
	t->status = 0;
	t->resent = 0;
	t->body_off = 0;
	s_reset_response(t);
	t->easy = s_borrow(h);
	if (!t->easy) {
		t->resp->error = RR_ENOMEM;
		return RR_ENOMEM;
	}
	rc = s_setup(t);
	if (rc) {
		s_headers_wipe_free(t->headers);
		t->headers = NULL;
		rr_buf_free(&t->header_raw);
		s_give_back(h, t->easy);
		t->easy = NULL;
		t->resp->error = rc;
	}
	return rc;
}

int rr_http_perform(struct rr_http *h, const struct rr_http_request *req,
		    struct rr_http_response *resp)
{
	struct s_transfer t;
	CURLcode c;
	int rc;

	memset(&t, 0, sizeof(t));
	t.req = req;
	t.resp = resp;
	rc = s_start(h, &t);
	if (rc)
		return rc;
	c = rr_curl.easy_perform(t.easy);
	rc = s_finish(&t, c);
	s_give_back(h, t.easy);
	return rc;
}

/* ---- batches ---- */

struct rr_http_batch {
	struct rr_http *h;
	CURLM *multi;
	unsigned max_in_flight, running, pending;
	struct s_transfer *queue_head, *queue_tail; /* not started yet */
	struct s_transfer *done_head;               /* finished, not yet reported */
	struct s_transfer *active;                  /* started (linked by next) */
};

int rr_http_batch_new(struct rr_http *h, unsigned max_in_flight, struct rr_http_batch **out)
{
	struct rr_http_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return RR_ENOMEM;
	b->multi = rr_curl.multi_init();
	if (!b->multi) {
		free(b);
		return RR_ENOMEM;
	}
	b->h = h;
	b->max_in_flight = max_in_flight ? max_in_flight : 1;
	rr_curl.multi_setopt(b->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)b->max_in_flight);
	*out = b;
	return 0;
}

int rr_http_batch_add(struct rr_http_batch *b, const struct rr_http_request *req,
		      struct rr_http_response *resp, void *tag)
{
	struct s_transfer *t = calloc(1, sizeof(*t));

	if (!t)
		return RR_ENOMEM;
	t->req = req;
	t->resp = resp;
	t->tag = tag;
	if (b->queue_tail)
		b->queue_tail->next = t;
	else
		b->queue_head = t;
	b->queue_tail = t;
	b->pending++;
	return 0;
}

unsigned rr_http_batch_pending(const struct rr_http_batch *b)
{
	return b->pending;
}

static void s_unlink(struct s_transfer **head, struct s_transfer *t)
{
	while (*head && *head != t)
		head = &(*head)->next;
	if (*head)
		*head = t->next;
	t->next = NULL;
}

static void s_push_done(struct rr_http_batch *b, struct s_transfer *t)
{
	t->next = b->done_head;
	b->done_head = t;
}

/* Starts queued transfers while slots are free; a transfer that cannot start is done. */
static void s_fill(struct rr_http_batch *b)
{
	struct s_transfer *t;

	while (b->queue_head && b->running < b->max_in_flight) {
		t = b->queue_head;
		b->queue_head = t->next;
		if (!b->queue_head)
			b->queue_tail = NULL;
		t->next = NULL;
		if (s_start(b->h, t) != 0) {
			s_push_done(b, t);
			continue;
		}
		rr_curl.easy_setopt(t->easy, CURLOPT_PRIVATE, t);
		if (rr_curl.multi_add_handle(b->multi, t->easy) != CURLM_OK) {
			s_finish(t, CURLE_OUT_OF_MEMORY);
			t->resp->error = RR_ENOMEM;
			s_give_back(b->h, t->easy);
			t->easy = NULL;
			s_push_done(b, t);
			continue;
		}
		t->next = b->active;
		b->active = t;
		b->running++;
	}
}

static void s_collect(struct rr_http_batch *b)
{
	struct s_transfer *t;
	CURLMsg *m;
	int left;
	char *priv;

	while ((m = rr_curl.multi_info_read(b->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		priv = NULL;
		rr_curl.easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
		t = (struct s_transfer *)(void *)priv;
		s_finish(t, m->data.result);
		rr_curl.multi_remove_handle(b->multi, t->easy);
		s_give_back(b->h, t->easy);
		t->easy = NULL;
		s_unlink(&b->active, t);
		b->running--;
		s_push_done(b, t);
	}
}

int rr_http_batch_wait(struct rr_http_batch *b, long timeout_ms, void **tag_out)
{
	int64_t start = rr_mono_ms(), left;
	struct s_transfer *t;
	int still, numfds;

	for (;;) {
		s_fill(b);
		if (b->done_head) {
			t = b->done_head;
			b->done_head = t->next;
			b->pending--;
			if (tag_out)
				*tag_out = t->tag;
			free(t);
			return 1;
		}
		if (b->pending == 0)
			return RR_ENOENT;
		rr_curl.multi_perform(b->multi, &still);
		s_collect(b);
		if (b->done_head)
			continue;
		left = 1000;
		if (timeout_ms >= 0) {
			left = timeout_ms - (rr_mono_ms() - start);
			if (left <= 0)
				return 0;
		}
		numfds = 0;
		rr_curl.multi_poll(b->multi, NULL, 0, (int)(left < 1000 ? left : 1000), &numfds);
	}
}

void rr_http_batch_destroy(struct rr_http_batch *b)
{
	struct s_transfer *t;

	if (!b)
		return;
	while ((t = b->active) != NULL) {
		b->active = t->next;
		rr_curl.multi_remove_handle(b->multi, t->easy);
		s_headers_wipe_free(t->headers);
		rr_buf_free(&t->header_raw);
		/* A transfer cut off halfway leaves its connection in an unknown state. */
		rr_curl.easy_cleanup(t->easy);
		free(t);
	}
	while ((t = b->queue_head) != NULL) {
		b->queue_head = t->next;
		free(t);
	}
	while ((t = b->done_head) != NULL) {
		b->done_head = t->next;
		free(t);
	}
	rr_curl.multi_cleanup(b->multi);
	free(b);
}
