#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/buf.h"
#include "rr/error.h"

void rr_buf_init(struct rr_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

int rr_buf_reserve(struct rr_buf *b, size_t n)
{
	size_t need, cap;
	unsigned char *p;

	if (n > b->max || b->len > b->max - n)
		return RR_ETOOBIG;
	need = b->len + n + 1; /* room for the terminating NUL */
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > ((size_t)-1) / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		return RR_ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int rr_buf_append(struct rr_buf *b, const void *data, size_t len)
{
	int rc = rr_buf_reserve(b, len);
	if (rc)
		return rc;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int rr_buf_printf(struct rr_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return RR_EINVAL;
	rc = rr_buf_reserve(b, (size_t)n);
	if (rc)
		return rc;
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void rr_buf_reset(struct rr_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void rr_buf_free(struct rr_buf *b)
{
	free(b->data);
	rr_buf_init(b, b->max);
}

void rr_buf_wipe_free(struct rr_buf *b)
{
	if (b->data)
		explicit_bzero(b->data, b->cap);
	rr_buf_free(b);
}
