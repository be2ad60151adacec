/* A growing byte buffer with a ceiling, so no outside input can make it grow without bound. */
#ifndef RR_BUF_H
#define RR_BUF_H

#include <stddef.h>

struct rr_buf {
	unsigned char *data; /* always NUL-terminated past len when non-NULL */
	size_t len;
	size_t cap;
	size_t max; /* appends that would pass this fail with RR_ETOOBIG */
};

void rr_buf_init(struct rr_buf *b, size_t max);
/* Returns 0, RR_ENOMEM or RR_ETOOBIG (the buffer is unchanged on failure). */
int rr_buf_append(struct rr_buf *b, const void *data, size_t len);
int rr_buf_printf(struct rr_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Makes room for at least n more bytes; returns 0, RR_ENOMEM or RR_ETOOBIG. */
int rr_buf_reserve(struct rr_buf *b, size_t n);
/* Empties b (len 0, data "" when allocated) and keeps its memory for reuse; rr_buf_free
 * releases it. */
void rr_buf_reset(struct rr_buf *b);
/* Working buffers of megabytes (a chunk's bytes, a pack, byte planes) come straight from
 * mmap, in multiples of 2 MiB, with Linux's MADV_HUGEPAGE (smaller ones in whole pages,
 * without it): first touched, 8 MiB then takes 4
 * page faults instead of 2048 (0.3 ms instead of 4.7 ms on the bench machine, a one-off
 * measurement with a scratch program; a persist touches tens of megabytes of fresh
 * buffers). Without transparent huge pages they are
 * ordinary pages. rr_buf_reserve gives the same advice for its buffers of RR_BUF_BIG_MIN
 * and more (they stay malloc's, so that their owner may free() them). rr_buf_big_alloc
 * returns NULL when out of memory; free with rr_buf_big_free and the same len (NULL ok). */
#define RR_BUF_BIG_MIN ((size_t)2 << 20)
void *rr_buf_big_alloc(size_t len);
void rr_buf_big_free(void *p, size_t len);
/* Frees the memory; the buffer can be used again after rr_buf_init. */
void rr_buf_free(struct rr_buf *b);
/* Zeroes the whole allocation (it held a secret), then frees it like rr_buf_free. */
void rr_buf_wipe_free(struct rr_buf *b);

#endif
