#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rr/buf.h"
#include "rr/error.h"

void rr_buf_init(struct rr_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

/* MADV_HUGEPAGE on the whole pages of [p, p + len); without THP it fails and changes nothing. */
static void s_advise_huge(void *p, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = ((uintptr_t)p + page - 1) & ~(page - 1);
	uintptr_t to = ((uintptr_t)p + len) & ~(page - 1);

	if (to > from)
		(void)madvise((void *)from, to - from, MADV_HUGEPAGE);
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
	if (b->len == 0 && b->data) {
		/* Empty: nothing to keep, so no copy. realloc would copy all of the old
		 * allocation into memory touched for the first time (a codec's buffers grow so,
		 * once per worker and persist, to megabytes). */
		p = malloc(cap);
		if (!p)
			return RR_ENOMEM;
		free(b->data);
		p[0] = '\0';
	} else {
		p = realloc(b->data, cap);
		if (!p)
			return RR_ENOMEM;
	}
	if (cap >= RR_BUF_BIG_MIN)
		s_advise_huge(p, cap);
	b->data = p;
	b->cap = cap;
	return 0;
}

/* What rr_buf_big_alloc maps for len bytes: whole 2 MiB units from RR_BUF_BIG_MIN on, else
 * whole pages (at least one). */
static size_t s_big_len(size_t len)
{
	size_t unit = len >= RR_BUF_BIG_MIN ? RR_BUF_BIG_MIN : (size_t)sysconf(_SC_PAGESIZE);

	return len ? (len + unit - 1) & ~(unit - 1) : unit;
}

void *rr_buf_big_alloc(size_t len)
{
	size_t map = s_big_len(len);
	void *p;

	p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Not below 2 MiB: the first byte written to a huge page zeroes all 2 MiB of it
	 * (0.2-0.5 ms), which a 1 kB file kept for phase 2 paid in full. */
	if (len >= RR_BUF_BIG_MIN)
		s_advise_huge(p, map);
	return p;
}

void rr_buf_big_free(void *p, size_t len)
{
	if (p)
		munmap(p, s_big_len(len));
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
