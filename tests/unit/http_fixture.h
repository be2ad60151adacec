/* A small HTTP/1.1 server inside the test process, for the suites of the HTTP clients (the
 * HTTP layer, IMDS, the credential providers, the object stores): real sockets on loopback,
 * so curl runs exactly as in production, with no network and no outside program.
 *
 *   static void handler(const struct fx_request *req, struct fx_response *resp, void *ud)
 *   {
 *           if (strcmp(req->method, "PUT") == 0)
 *                   fx_resp_header(resp, "ETag", "\"%s\"", "abc");
 *           fx_resp_text(resp, 200, "hello");
 *   }
 *   struct fx_server srv;
 *   CU_ASSERT_EQUAL_FATAL(fx_server_start(&srv, handler, &state), 0);
 *   ... requests to srv.url ("http://127.0.0.1:PORT") ...
 *   CU_ASSERT_EQUAL(fx_server_count(&srv, "PUT", "/latest/api/token"), 1);
 *   req = fx_server_request(&srv, 0);          (the first request seen)
 *   fx_header(req, "Content-Type")             (its header, case-insensitive, or NULL)
 *   fx_server_stop(&srv);
 *
 * The server: a thread accepts on 127.0.0.1 at an ephemeral port, and each connection gets
 * its own thread that reads requests one after another (keep-alive) until the client closes
 * it, the response asks for a close, or the server stops. A request is its request line,
 * headers (any size up to FX_MAX_HEAD), and a body given by Content-Length or chunked
 * encoding (up to FX_MAX_BODY); "Expect: 100-continue" is answered with 100 before the body
 * is read. Every request is recorded (method, target, all headers, body, connection number)
 * before the handler runs, so it is there once the client has its answer, even when the
 * response is a hang or a reset. Handler calls are serialised (one at a time, under the
 * server's lock), so a handler may keep plain counters in ud; the delays below happen after
 * the handler returns, outside that lock.
 *
 * The handler fills *resp, which arrives as 200 with an empty body and these options:
 *   status          any code; Content-Length is always sent (no body for HEAD, 1xx, 204, 304)
 *   fx_resp_header  adds a header line; fx_resp_body / fx_resp_text set the body
 *   delay_ms        wait this long before sending anything (a slow or hung server)
 *   action          FX_ANSWER (default); FX_CLOSE: close the connection without answering;
 *                   FX_RESET: the same with a TCP reset; FX_CUT: send the head and the first
 *                   split_at body bytes, then close (a response cut short)
 *   split_at + split_delay_ms  with FX_ANSWER: send split_at body bytes, pause, send the rest
 *                   (a stall in the middle of a body)
 *   trickle_bytes + trickle_every_ms  with FX_ANSWER: send the body trickle_bytes at a time,
 *                   pausing trickle_every_ms between pieces (a degraded link: slow, never
 *                   stalled)
 *   close_after     send "Connection: close" and close after answering
 * A request with "Connection: close" also closes the connection after its answer.
 *
 * fx_server_stop ends every thread (waits and pauses are cut short) and frees everything,
 * recorded requests included: read what you need before. The struct must not move while
 * the server runs. fx_server_reset forgets the recorded requests and the connection count;
 * fx_server_set_handler swaps the handler between phases of a test. fx_closed_port gives a
 * loopback port on which nothing listens (for "connection refused").
 *
 * Everything is static inline: a suite includes this header once and uses what it needs. */
#ifndef RR_HTTP_FIXTURE_H
#define RR_HTTP_FIXTURE_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FX_MAX_HEAD (256u << 10) /* request line + headers */
#define FX_MAX_BODY (64u << 20)
#define FX_TICK_MS 20            /* how often waiting threads look at the stop flag */

struct fx_header {
	char *name;
	char *value;
};

struct fx_request {
	char *method;
	char *target;           /* as sent: "/latest/api/token", "/b/k?uploads" */
	struct fx_header *headers;
	size_t nheaders;
	unsigned char *body;    /* NUL-terminated (not counted in body_len); never NULL */
	size_t body_len;
	unsigned conn;          /* 1-based number of the connection it came on */
	unsigned seq;           /* 1-based position among all requests recorded */
};

enum fx_action { FX_ANSWER, FX_CLOSE, FX_RESET, FX_CUT };

struct fx_response {
	int status;
	enum fx_action action;
	long delay_ms;
	size_t split_at;
	long split_delay_ms;
	size_t trickle_bytes;
	long trickle_every_ms;
	int close_after;
	/* Set through the helpers. */
	char *head;             /* extra header lines, each ending in CRLF */
	size_t head_len;
	unsigned char *body;
	size_t body_len;
};

typedef void (*fx_handler)(const struct fx_request *req, struct fx_response *resp, void *ud);

struct fx_conn {
	struct fx_server *srv;
	int fd;
	unsigned id;
	pthread_t thread;
	struct fx_conn *next;
	char *buf;  /* bytes read and not yet consumed */
	size_t len;
	size_t cap;
};

struct fx_server {
	char url[64]; /* "http://127.0.0.1:PORT" */
	int port;
	/* Private. */
	int lfd;
	pthread_t thread;
	pthread_mutex_t mu;
	atomic_int stop;
	fx_handler handler;
	void *ud;
	unsigned nconn;
	struct fx_conn *conns;
	struct fx_request **reqs;
	size_t nreqs;
	size_t reqs_cap;
};

static inline void fx_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Sleeps ms, in ticks so that a stop cuts it short. Returns nonzero when stopped. */
static inline int fx__pause(struct fx_server *s, long ms)
{
	while (ms > 0 && !atomic_load(&s->stop)) {
		long t = ms < FX_TICK_MS ? ms : FX_TICK_MS;
		fx_sleep_ms(t);
		ms -= t;
	}
	return atomic_load(&s->stop);
}

static inline void *fx__xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		fprintf(stderr, "http_fixture: out of memory\n");
		abort();
	}
	return q;
}

static inline char *fx__strndup(const char *s, size_t n)
{
	char *p = fx__xrealloc(NULL, n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

/* ---- response helpers (for handlers) ---- */

static inline void fx_resp_header(struct fx_response *r, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline void fx_resp_header(struct fx_response *r, const char *name, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	size_t add = strlen(name) + 2 + (size_t)n + 2;
	r->head = fx__xrealloc(r->head, r->head_len + add + 1);
	r->head_len += (size_t)sprintf(r->head + r->head_len, "%s: ", name);
	va_start(ap, fmt);
	r->head_len += (size_t)vsprintf(r->head + r->head_len, fmt, ap);
	va_end(ap);
	memcpy(r->head + r->head_len, "\r\n", 3);
	r->head_len += 2;
}

static inline void fx_resp_body(struct fx_response *r, const void *data, size_t len)
{
	free(r->body);
	r->body = fx__xrealloc(NULL, len);
	if (len)
		memcpy(r->body, data, len);
	r->body_len = len;
}

static inline void fx_resp_text(struct fx_response *r, int status, const char *text)
{
	r->status = status;
	fx_resp_body(r, text, strlen(text));
}

/* ---- recorded requests (for assertions) ---- */

/* The first value of header `name` (case-insensitive), or NULL. */
static inline const char *fx_header(const struct fx_request *r, const char *name)
{
	for (size_t i = 0; i < r->nheaders; i++)
		if (strcasecmp(r->headers[i].name, name) == 0)
			return r->headers[i].value;
	return NULL;
}

static inline size_t fx_server_nrequests(struct fx_server *s)
{
	pthread_mutex_lock(&s->mu);
	size_t n = s->nreqs;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* The i-th request recorded (0-based), or NULL; valid until reset or stop. */
static inline const struct fx_request *fx_server_request(struct fx_server *s, size_t i)
{
	pthread_mutex_lock(&s->mu);
	const struct fx_request *r = i < s->nreqs ? s->reqs[i] : NULL;
	pthread_mutex_unlock(&s->mu);
	return r;
}

/* The last request recorded whose target starts with prefix (NULL: any), or NULL. */
static inline const struct fx_request *fx_server_last(struct fx_server *s, const char *prefix)
{
	const struct fx_request *r = NULL;

	pthread_mutex_lock(&s->mu);
	for (size_t i = s->nreqs; i-- > 0 && !r;)
		if (!prefix || strncmp(s->reqs[i]->target, prefix, strlen(prefix)) == 0)
			r = s->reqs[i];
	pthread_mutex_unlock(&s->mu);
	return r;
}

/* Requests recorded with this method (NULL: any) whose target starts with prefix (NULL:
 * any). */
static inline size_t fx_server_count(struct fx_server *s, const char *method, const char *prefix)
{
	size_t n = 0;

	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nreqs; i++) {
		const struct fx_request *r = s->reqs[i];
		if (method && strcmp(r->method, method) != 0)
			continue;
		if (prefix && strncmp(r->target, prefix, strlen(prefix)) != 0)
			continue;
		n++;
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* Connections accepted so far. */
static inline unsigned fx_server_connections(struct fx_server *s)
{
	pthread_mutex_lock(&s->mu);
	unsigned n = s->nconn;
	pthread_mutex_unlock(&s->mu);
	return n;
}

static inline void fx__request_free(struct fx_request *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nheaders; i++) {
		free(r->headers[i].name);
		free(r->headers[i].value);
	}
	free(r->headers);
	free(r->method);
	free(r->target);
	free(r->body);
	free(r);
}

/* Forgets the recorded requests and the connection count (open connections stay open). */
static inline void fx_server_reset(struct fx_server *s)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nreqs; i++)
		fx__request_free(s->reqs[i]);
	s->nreqs = 0;
	s->nconn = 0;
	pthread_mutex_unlock(&s->mu);
}

static inline void fx_server_set_handler(struct fx_server *s, fx_handler h, void *ud)
{
	pthread_mutex_lock(&s->mu);
	s->handler = h;
	s->ud = ud;
	pthread_mutex_unlock(&s->mu);
}

/* ---- connection handling ---- */

/* Reads more bytes into c->buf. Returns >0, 0 at end of stream, -1 on error or stop. */
static inline int fx__fill(struct fx_conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	ssize_t n;

	for (;;) {
		if (atomic_load(&c->srv->stop))
			return -1;
		int pr = poll(&p, 1, FX_TICK_MS);
		if (pr < 0 && errno != EINTR)
			return -1;
		if (pr > 0)
			break;
	}
	if (c->cap - c->len < 65536) {
		c->cap = c->cap ? c->cap * 2 : 131072;
		c->buf = fx__xrealloc(c->buf, c->cap);
	}
	n = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
	if (n < 0)
		return errno == EINTR ? 1 : -1;
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	return n > 0 ? 1 : 0;
}

/* Makes sure at least n bytes are buffered. Returns 0, or -1 when the stream ended. */
static inline int fx__need(struct fx_conn *c, size_t n)
{
	while (c->len < n)
		if (fx__fill(c) <= 0)
			return -1;
	return 0;
}

/* Position of the first CRLF at or after from, reading more as needed; -1 at the end or
 * past limit bytes. */
static inline long fx__find_crlf(struct fx_conn *c, size_t from, size_t limit)
{
	for (;;) {
		for (size_t i = from; i + 1 < c->len; i++)
			if (c->buf[i] == '\r' && c->buf[i + 1] == '\n')
				return (long)i;
		if (c->len - from > limit || fx__fill(c) <= 0)
			return -1;
	}
}

static inline int fx__send_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static inline char *fx__trim(char *s, char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*end = '\0';
	return s;
}

/* Parses the head in c->buf[0..head_len) (ending in the blank line) into r. */
static inline int fx__parse_head(struct fx_conn *c, size_t head_len, struct fx_request *r)
{
	char *head = fx__strndup(c->buf, head_len);
	char *line = head, *eol, *sp1, *sp2;
	int rc = -1;

	eol = strstr(line, "\r\n");
	*eol = '\0';
	sp1 = strchr(line, ' ');
	sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (!sp1 || !sp2)
		goto out;
	r->method = fx__strndup(line, (size_t)(sp1 - line));
	r->target = fx__strndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
	for (line = eol + 2; *line; line = eol + 2) {
		char *colon;
		eol = strstr(line, "\r\n");
		if (!eol || eol == line)
			break;
		colon = memchr(line, ':', (size_t)(eol - line));
		if (!colon)
			goto out;
		r->headers = fx__xrealloc(r->headers, (r->nheaders + 1) * sizeof(*r->headers));
		r->headers[r->nheaders].name = fx__strndup(line, (size_t)(colon - line));
		r->headers[r->nheaders].value = strdup(fx__trim(colon + 1, eol));
		r->nheaders++;
	}
	rc = 0;
out:
	free(head);
	return rc;
}

/* Reads a chunked body starting at c->buf[pos]; on success the body is in r and *end is
 * the offset just past the trailers. */
static inline int fx__read_chunked(struct fx_conn *c, size_t pos, struct fx_request *r,
				   size_t *end)
{
	for (;;) {
		long eol = fx__find_crlf(c, pos, 1024);
		char *stop;
		unsigned long long size;

		if (eol < 0)
			return -1;
		size = strtoull(c->buf + pos, &stop, 16);
		if (stop == c->buf + pos || size > FX_MAX_BODY - r->body_len)
			return -1;
		pos = (size_t)eol + 2;
		if (size == 0)
			break;
		if (fx__need(c, pos + size + 2))
			return -1;
		r->body = fx__xrealloc(r->body, r->body_len + size + 1);
		memcpy(r->body + r->body_len, c->buf + pos, size);
		r->body_len += size;
		pos += size + 2;
	}
	for (;;) { /* trailers, up to the blank line */
		long eol = fx__find_crlf(c, pos, FX_MAX_HEAD);
		if (eol < 0)
			return -1;
		if ((size_t)eol == pos) {
			*end = pos + 2;
			return 0;
		}
		pos = (size_t)eol + 2;
	}
}

/* Reads one request. Returns 0, or -1 when the connection should end. */
static inline int fx__read_request(struct fx_conn *c, struct fx_request *r)
{
	size_t head_len = 0, end;
	const char *v;

	for (;;) {
		char *hit = c->len >= 4 ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL;
		if (hit) {
			head_len = (size_t)(hit - c->buf) + 4;
			break;
		}
		if (c->len > FX_MAX_HEAD || fx__fill(c) <= 0)
			return -1;
	}
	if (fx__parse_head(c, head_len, r))
		return -1;
	v = fx_header(r, "Expect");
	if (v && strcasecmp(v, "100-continue") == 0 && c->len == head_len) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		if (fx__send_all(c->fd, cont, sizeof(cont) - 1))
			return -1;
	}
	v = fx_header(r, "Transfer-Encoding");
	if (v && strcasecmp(v, "chunked") == 0) {
		r->body = fx__xrealloc(NULL, 1);
		if (fx__read_chunked(c, head_len, r, &end))
			return -1;
	} else {
		v = fx_header(r, "Content-Length");
		unsigned long long cl = v ? strtoull(v, NULL, 10) : 0;
		if (cl > FX_MAX_BODY || fx__need(c, head_len + cl))
			return -1;
		r->body = fx__xrealloc(NULL, cl + 1);
		memcpy(r->body, c->buf + head_len, cl);
		r->body_len = cl;
		end = head_len + cl;
	}
	r->body[r->body_len] = '\0';
	memmove(c->buf, c->buf + end, c->len - end);
	c->len -= end;
	return 0;
}

static inline const char *fx__reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 409: return "Conflict";
	case 412: return "Precondition Failed";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Status";
	}
}

/* Sends the answer. Returns 0 to keep the connection, -1 to close it. */
static inline int fx__respond(struct fx_conn *c, const struct fx_request *req,
			      struct fx_response *resp)
{
	struct fx_server *s = c->srv;
	int no_body = strcmp(req->method, "HEAD") == 0 || resp->status < 200 ||
		      resp->status == 204 || resp->status == 304;
	const char *conn = fx_header(req, "Connection");
	int close_after = resp->close_after || (conn && strcasecmp(conn, "close") == 0);
	size_t first = resp->body_len;
	char *head;
	int n, rc;

	if (fx__pause(s, resp->delay_ms))
		return -1;
	if (resp->action == FX_CLOSE)
		return -1;
	if (resp->action == FX_RESET) {
		struct linger lg = { 1, 0 };
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		return -1;
	}
	n = snprintf(NULL, 0, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\n%s", resp->status,
		     fx__reason(resp->status), resp->body_len,
		     close_after ? "Connection: close\r\n" : "");
	head = fx__xrealloc(NULL, (size_t)n + resp->head_len + 3);
	sprintf(head, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\n%s", resp->status,
		fx__reason(resp->status), resp->body_len,
		close_after ? "Connection: close\r\n" : "");
	if (resp->head_len)
		memcpy(head + n, resp->head, resp->head_len);
	memcpy(head + n + resp->head_len, "\r\n", 2);
	rc = fx__send_all(c->fd, head, (size_t)n + resp->head_len + 2);
	free(head);
	if (rc || no_body)
		return rc ? -1 : (close_after ? -1 : 0);
	if (resp->trickle_bytes)
		first = 0;
	else if (resp->action == FX_CUT || resp->split_delay_ms > 0)
		first = resp->split_at < resp->body_len ? resp->split_at : resp->body_len;
	if (fx__send_all(c->fd, resp->body, first))
		return -1;
	if (resp->action == FX_CUT)
		return -1;
	while (resp->trickle_bytes && first < resp->body_len) {
		size_t piece = resp->body_len - first;
		if (piece > resp->trickle_bytes)
			piece = resp->trickle_bytes;
		if (fx__pause(s, resp->trickle_every_ms) ||
		    fx__send_all(c->fd, resp->body + first, piece))
			return -1;
		first += piece;
	}
	if (first < resp->body_len) {
		if (fx__pause(s, resp->split_delay_ms) ||
		    fx__send_all(c->fd, resp->body + first, resp->body_len - first))
			return -1;
	}
	return close_after ? -1 : 0;
}

static inline void *fx__conn_main(void *arg)
{
	struct fx_conn *c = arg;
	struct fx_server *s = c->srv;

	for (;;) {
		struct fx_request *r = fx__xrealloc(NULL, sizeof(*r));
		struct fx_response resp;
		int keep;

		memset(r, 0, sizeof(*r));
		if (fx__read_request(c, r)) {
			fx__request_free(r);
			break;
		}
		memset(&resp, 0, sizeof(resp));
		resp.status = 200;
		pthread_mutex_lock(&s->mu);
		r->conn = c->id;
		if (s->nreqs == s->reqs_cap) {
			s->reqs_cap = s->reqs_cap ? s->reqs_cap * 2 : 16;
			s->reqs = fx__xrealloc(s->reqs, s->reqs_cap * sizeof(*s->reqs));
		}
		s->reqs[s->nreqs++] = r;
		r->seq = (unsigned)s->nreqs;
		if (s->handler)
			s->handler(r, &resp, s->ud);
		pthread_mutex_unlock(&s->mu);
		keep = fx__respond(c, r, &resp) == 0;
		free(resp.head);
		free(resp.body);
		if (!keep)
			break;
	}
	close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	return NULL;
}

static inline void *fx__accept_main(void *arg)
{
	struct fx_server *s = arg;
	struct pollfd p = { .fd = s->lfd, .events = POLLIN };

	while (!atomic_load(&s->stop)) {
		struct fx_conn *c;
		int fd;

		if (poll(&p, 1, FX_TICK_MS) <= 0)
			continue;
		fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		c = fx__xrealloc(NULL, sizeof(*c));
		memset(c, 0, sizeof(*c));
		c->srv = s;
		c->fd = fd;
		pthread_mutex_lock(&s->mu);
		c->id = ++s->nconn;
		c->next = s->conns;
		s->conns = c;
		pthread_mutex_unlock(&s->mu);
		if (pthread_create(&c->thread, NULL, fx__conn_main, c) != 0) {
			fprintf(stderr, "http_fixture: pthread_create failed\n");
			abort();
		}
	}
	return NULL;
}

/* Starts the server. Returns 0, or -1 (with a message on stderr). */
static inline int fx_server_start(struct fx_server *s, fx_handler h, void *ud)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);

	memset(s, 0, sizeof(*s));
	s->handler = h;
	s->ud = ud;
	atomic_init(&s->stop, 0);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		goto fail;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) || listen(s->lfd, 64) ||
	    getsockname(s->lfd, (struct sockaddr *)&a, &alen))
		goto fail;
	s->port = ntohs(a.sin_port);
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
	pthread_mutex_init(&s->mu, NULL);
	if (pthread_create(&s->thread, NULL, fx__accept_main, s) != 0) {
		pthread_mutex_destroy(&s->mu);
		goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "http_fixture: cannot start: %s\n", strerror(errno));
	if (s->lfd >= 0)
		close(s->lfd);
	return -1;
}

/* Stops every thread and frees everything (recorded requests included). */
static inline void fx_server_stop(struct fx_server *s)
{
	struct fx_conn *c, *next;

	atomic_store(&s->stop, 1);
	pthread_join(s->thread, NULL);
	close(s->lfd);
	for (c = s->conns; c; c = next) {
		next = c->next;
		pthread_join(c->thread, NULL);
		free(c);
	}
	s->conns = NULL;
	fx_server_reset(s);
	free(s->reqs);
	s->reqs = NULL;
	s->reqs_cap = 0;
	pthread_mutex_destroy(&s->mu);
}

/* A loopback port on which nothing listens (bound, then closed), or -1. */
static inline int fx_closed_port(void)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

#endif
