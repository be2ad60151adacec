/* Blob Batch bodies and answers (storage/store/azure_batch.h). The request follows "Blob
 * Batch" (learn.microsoft.com/rest/api/storageservices/blob-batch): each part is
 * "Content-Type: application/http", "Content-Transfer-Encoding: binary", "Content-ID: i",
 * a blank line, then the sub-request's request line and headers. The answer has one part
 * per sub-request, in any order, each "Content-ID: i" and the sub-response's status line,
 * headers and (for an error) an XML body. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "azure_batch.h"
#include "rr/error.h"

static int s_clean(const char *s)
{
	return s && !strpbrk(s, "\r\n");
}

int rr_azure_batch_body(struct rr_buf *out, const char *boundary,
			const struct rr_azure_batch_sub *subs, size_t n)
{
	int rc = 0;

	if (!out || !s_clean(boundary) || !*boundary || strlen(boundary) > RR_AZURE_BOUNDARY_MAX ||
	    !subs || n == 0 || n > RR_AZURE_BATCH_MAX)
		return RR_EINVAL;
	rr_buf_reset(out);
	for (size_t i = 0; i < n && !rc; i++) {
		const struct rr_azure_batch_sub *s = &subs[i];
		if (!s_clean(s->target) || s->target[0] != '/' || !s_clean(s->date) ||
		    (s->auth && !s_clean(s->auth)))
			return RR_EINVAL;
		rc = rr_buf_printf(out, "--%s\r\nContent-Type: application/http\r\n"
				   "Content-Transfer-Encoding: binary\r\nContent-ID: %zu\r\n\r\n"
				   "DELETE %s HTTP/1.1\r\nx-ms-date: %s\r\n", boundary, i, s->target,
				   s->date);
		if (!rc && s->auth)
			rc = rr_buf_printf(out, "Authorization: %s\r\n", s->auth);
		if (!rc)
			rc = rr_buf_printf(out, "Content-Length: 0\r\n\r\n");
	}
	if (!rc)
		rc = rr_buf_printf(out, "--%s--\r\n", boundary);
	return rc;
}

/* RFC 2046's bchars, less the space (no server sends one, and trailing ones are illegal). */
static const char s_bchars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			       "0123456789'()+_,-./:=?";

int rr_azure_batch_boundary(const char *content_type, char *out, size_t cap)
{
	const char *p, *v;
	size_t n;

	if (!content_type || !out || cap <= RR_AZURE_BOUNDARY_MAX)
		return RR_ECORRUPT;
	if (strncasecmp(content_type, "multipart/mixed", 15) != 0)
		return RR_ECORRUPT;
	for (p = content_type + 15; (p = strchr(p, ';')) != NULL;) {
		p++;
		p += strspn(p, " \t");
		if (strncasecmp(p, "boundary=", 9) != 0)
			continue;
		v = p + 9;
		if (*v == '"') {
			v++;
			n = strspn(v, s_bchars);
			if (v[n] != '"')
				return RR_ECORRUPT;
		} else {
			n = strspn(v, s_bchars);
			if (v[n] && v[n] != ';' && v[n] != ' ' && v[n] != '\t')
				return RR_ECORRUPT;
		}
		if (n == 0 || n > RR_AZURE_BOUNDARY_MAX)
			return RR_ECORRUPT;
		memcpy(out, v, n);
		out[n] = '\0';
		return 0;
	}
	return RR_ECORRUPT;
}

/* The next line of [*p, end) without its CRLF (a bare LF is taken too): 1 and the line,
 * 0 at the end of the region. */
static int s_line(const char **p, const char *end, const char **line, size_t *len)
{
	const char *nl;

	if (*p >= end)
		return 0;
	nl = memchr(*p, '\n', (size_t)(end - *p));
	*line = *p;
	*len = (size_t)((nl ? nl : end) - *p);
	if (*len && (*line)[*len - 1] == '\r')
		(*len)--;
	*p = nl ? nl + 1 : end;
	return 1;
}

/* Whether the n bytes at v (not NUL-terminated) are all bchars. */
static int s_all_bchars(const char *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!v[i] || !strchr(s_bchars, v[i]))
			return 0;
	return 1;
}

/* The value of header line (len bytes) when its name is `name`, trimmed; NULL otherwise. */
static const char *s_header(const char *line, size_t len, const char *name, size_t *vlen)
{
	size_t nlen = strlen(name);
	const char *v, *e = line + len;

	if (len <= nlen || strncasecmp(line, name, nlen) != 0 || line[nlen] != ':')
		return NULL;
	for (v = line + nlen + 1; v < e && (*v == ' ' || *v == '\t'); v++)
		;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*vlen = (size_t)(e - v);
	return v;
}

/* A decimal number of at most `digits` digits filling [v, v+len); -1 otherwise. */
static long s_number(const char *v, size_t len, size_t digits)
{
	long x = 0;

	if (len == 0 || len > digits)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	return x;
}

struct s_sub_answer {
	long id;       /* Content-ID, or -1 */
	int status;    /* 0: no status line */
	char code[64]; /* x-ms-error-code */
};

/* One part [p, end): its MIME headers (Content-ID), then the sub-response's status line and
 * headers (x-ms-error-code). The body after them is not read. */
static void s_read_part(const char *p, const char *end, struct s_sub_answer *a)
{
	const char *line, *v;
	size_t len, vlen;

	memset(a, 0, sizeof(*a));
	a->id = -1;
	while (s_line(&p, end, &line, &len) && len) {
		if ((v = s_header(line, len, "Content-ID", &vlen)) != NULL)
			a->id = s_number(v, vlen, 5);
	}
	if (!s_line(&p, end, &line, &len) || len < 12 || strncmp(line, "HTTP/1.", 7) != 0 ||
	    line[8] != ' ' || (len > 12 && line[12] != ' '))
		return;
	a->status = (int)s_number(line + 9, 3, 3);
	if (a->status < 100 || a->status > 599) {
		a->status = 0;
		return;
	}
	while (s_line(&p, end, &line, &len) && len) {
		v = s_header(line, len, "x-ms-error-code", &vlen);
		if (v && vlen < sizeof(a->code) && s_all_bchars(v, vlen)) {
			memcpy(a->code, v, vlen);
			a->code[vlen] = '\0';
		}
	}
}

int rr_azure_batch_parse(const void *body, size_t len, const char *boundary, int *status,
			 char (*code)[64], size_t n)
{
	char delim[2 + RR_AZURE_BOUNDARY_MAX + 1];
	const char *p = body, *end = p + len, *part, *next, *eol;
	unsigned char seen[RR_AZURE_BATCH_MAX] = { 0 };
	struct s_sub_answer a;
	size_t dlen;
	int attributed = 0;

	if (!body || !boundary || !*boundary || strlen(boundary) > RR_AZURE_BOUNDARY_MAX ||
	    len > RR_AZURE_BATCH_ANSWER_MAX || !status || n > RR_AZURE_BATCH_MAX)
		return RR_ECORRUPT;
	dlen = (size_t)snprintf(delim, sizeof(delim), "--%s", boundary);
	p = memmem(p, len, delim, dlen);
	if (!p)
		return RR_ECORRUPT;
	for (;;) {
		p += dlen;
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			break; /* the close delimiter */
		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			break;
		part = eol + 1;
		next = memmem(part, (size_t)(end - part), delim, dlen);
		s_read_part(part, next ? next : end, &a);
		if (a.id >= 0 && (size_t)a.id < n && a.status && seen[a.id] < 2 &&
		    seen[a.id]++ == 0) {
			status[a.id] = a.status;
			if (code)
				memcpy(code[a.id], a.code, sizeof(a.code));
		}
		if (!next)
			break;
		p = next;
	}
	for (size_t i = 0; i < n; i++) {
		if (seen[i] == 1) {
			attributed++;
		} else if (seen[i] > 1) { /* two answers for one sub-request: neither counts */
			status[i] = 0;
			if (code)
				code[i][0] = '\0';
		}
	}
	return attributed;
}
