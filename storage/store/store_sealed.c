/* The sealed store: a backend that wraps any other store and seals every object it writes
 * (AES-256-GCM, rr/seal.h) and opens every object it reads, with the object's key bound as
 * associated data. Listing, head and delete pass through: names are not secret (chunk names
 * are keyed addresses), and sizes are the stored ones. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/hash.h"
#include "rr/seal.h"
#include "rr/store.h"
#include "rr/store_sealed.h"

/* Sealing needs a second buffer as big as the object. Fresh multi-MiB allocations come
 * from mmap and are paid again in page faults on every chunk, so a few are kept (about one
 * per persist worker). */
#define S_SPARE_MAX 16
#define S_SPARE_MIN ((size_t)1 << 20) /* smaller ones come from malloc's own free lists */
/* Kept buffers are made big enough for any chunk (a stored chunk is at most twice the
 * 8 MiB segment), so every one serves every chunk; pages never written are never faulted
 * in, so a small chunk in a big buffer costs no more memory. */
#define S_SPARE_SIZE (((size_t)16 << 20) + 4096)

struct s_spare {
	unsigned char *p;
	size_t cap;
};

struct s_sealed {
	struct rr_store base;
	struct rr_seal_key *key; /* owned, wiped when the store is destroyed */
	pthread_mutex_t lock;    /* guards spare */
	struct s_spare spare[S_SPARE_MAX];
	size_t nspare;
};

static const struct rr_store_vtable s_sealed_vtable;

static struct s_sealed *s_of(struct rr_store *s)
{
	return (struct s_sealed *)s;
}

/* A buffer of at least n bytes: a kept one when one is big enough, else a new one. */
static unsigned char *s_buf_take(struct s_sealed *z, size_t n, size_t *cap)
{
	unsigned char *p = NULL;

	pthread_mutex_lock(&z->lock);
	for (size_t i = 0; n >= S_SPARE_MIN && i < z->nspare; i++)
		if (z->spare[i].cap >= n) {
			p = z->spare[i].p;
			*cap = z->spare[i].cap;
			z->spare[i] = z->spare[--z->nspare];
			break;
		}
	pthread_mutex_unlock(&z->lock);
	if (!p) {
		*cap = n >= S_SPARE_MIN && n < S_SPARE_SIZE ? S_SPARE_SIZE : n;
		p = malloc(*cap);
	}
	return p;
}

static void s_buf_give(struct s_sealed *z, unsigned char *p, size_t cap)
{
	if (cap < S_SPARE_MIN) {
		free(p);
		return;
	}
	pthread_mutex_lock(&z->lock);
	if (z->nspare < S_SPARE_MAX) {
		z->spare[z->nspare++] = (struct s_spare){ .p = p, .cap = cap };
		p = NULL;
	} else {
		/* Full: keep the bigger buffers, which serve any request. */
		size_t small = 0;
		for (size_t i = 1; i < z->nspare; i++)
			if (z->spare[i].cap < z->spare[small].cap)
				small = i;
		if (z->spare[small].cap < cap) {
			struct s_spare out = z->spare[small];
			z->spare[small] = (struct s_spare){ .p = p, .cap = cap };
			p = out.p;
		}
	}
	pthread_mutex_unlock(&z->lock);
	free(p);
}

static int s_put(struct rr_store *s, const char *key, const void *data, size_t len,
		 const struct rr_put_opts *opts, char *etag_out)
{
	struct s_sealed *z = s_of(s);
	struct rr_put_opts po = opts ? *opts : (struct rr_put_opts){ 0 };
	unsigned char *sealed;
	size_t cap = 0;
	int rc;

	if (len > RR_SEAL_MAX_PLAIN)
		return rr_store_fail(RR_ETOOBIG, "%s is too large to encrypt", key);
	sealed = s_buf_take(z, len + RR_SEAL_OVERHEAD, &cap);
	if (!sealed)
		return RR_ENOMEM;
	rc = rr_seal(z->key, key, data, len, sealed);
	if (rc) {
		rr_store_fail(rc, "cannot encrypt %s (OpenSSL failed)", key);
		goto out;
	}
	/* The caller's digest is of the plaintext; the backend must sign what it sends. */
	po.sha256_hex = NULL;
	rc = rr_store_put(s->inner, key, sealed, len + RR_SEAL_OVERHEAD, &po, etag_out);
out:
	s_buf_give(z, sealed, cap);
	return rc;
}

static int s_get(struct rr_store *s, const char *key, struct rr_buf *out, char *etag_out)
{
	struct s_sealed *z = s_of(s);
	size_t start = out->len, max = out->max, plain = 0;
	char why[512];
	int rc;

	/* The sealed object is the plaintext plus the overhead: the caller's ceiling is for the
	 * plaintext, so the backend may read that much more. The object is opened where it
	 * lands, no second buffer. */
	out->max = max > SIZE_MAX - RR_SEAL_OVERHEAD ? SIZE_MAX : max + RR_SEAL_OVERHEAD;
	rc = rr_store_get(s->inner, key, out, etag_out);
	out->max = max;
	if (rc)
		return rc;
	rc = rr_seal_open(z->key, key, out->data + start, out->len - start, &plain, why,
			  sizeof(why));
	if (rc) {
		out->len = start;
		if (out->data)
			out->data[start] = '\0';
		return rr_store_fail(rc, "%s", why);
	}
	out->len = start + plain;
	out->data[out->len] = '\0';
	return 0;
}

static int s_head(struct rr_store *s, const char *key, uint64_t *size_out)
{
	return rr_store_head(s->inner, key, size_out);
}

static int s_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb, void *ud)
{
	return rr_store_list(s->inner, prefix, cb, ud);
}

static int s_del(struct rr_store *s, const char *key)
{
	return rr_store_del(s->inner, key);
}

static int s_del_if_old(struct rr_store *s, const char *key, int64_t not_after_ms)
{
	return rr_store_del_if_old(s->inner, key, not_after_ms);
}

static int s_del_many(struct rr_store *s, const char *const *keys, size_t n)
{
	return rr_store_del_many(s->inner, keys, n);
}

static void s_destroy(struct rr_store *s)
{
	struct s_sealed *z = s_of(s);

	rr_store_destroy(s->inner);
	rr_seal_key_destroy(z->key);
	for (size_t i = 0; i < z->nspare; i++)
		free(z->spare[i].p);
	pthread_mutex_destroy(&z->lock);
	free(s->url);
	free(z);
}

static const struct rr_store_vtable s_sealed_vtable = {
	.scheme = "sealed",
	.put = s_put,
	.get = s_get,
	.head = s_head,
	.list = s_list,
	.del = s_del,
	.del_many = s_del_many,
	.del_if_old = s_del_if_old,
	.destroy = s_destroy,
};

int rr_store_sealed_new(struct rr_store *inner, struct rr_seal_key *key, struct rr_store **out)
{
	struct s_sealed *z = calloc(1, sizeof(*z));

	*out = NULL;
	if (!z || !(z->base.url = strdup(inner->url ? inner->url : ""))) {
		free(z);
		rr_store_destroy(inner);
		rr_seal_key_destroy(key);
		return RR_ENOMEM;
	}
	pthread_mutex_init(&z->lock, NULL);
	z->base.vt = &s_sealed_vtable;
	z->base.inner = inner;
	z->key = key;
	*out = &z->base;
	return 0;
}

size_t rr_store_scratch_before(struct rr_store *s)
{
	return s->vt == &s_sealed_vtable ? RR_SEAL_HEADER_LEN : 0;
}

int rr_store_put_scratch(struct rr_store *s, const char *key, unsigned char *data, size_t len,
			 const struct rr_put_opts *opts, char *etag_out)
{
	struct rr_put_opts po = opts ? *opts : (struct rr_put_opts){ 0 };
	unsigned char *obj = data - rr_store_scratch_before(s);
	int rc;

	if (s->vt != &s_sealed_vtable)
		return rr_store_put(s, key, data, len, opts, etag_out);
	rr_store_clear_why();
	if (len > RR_SEAL_MAX_PLAIN)
		return rr_store_fail(RR_ETOOBIG, "%s is too large to encrypt", key);
	rc = rr_seal(s_of(s)->key, key, data, len, obj);
	if (rc)
		return rr_store_fail(rc, "cannot encrypt %s (OpenSSL failed)", key);
	po.sha256_hex = NULL; /* the caller's digest is of the plaintext */
	return rr_store_put(s->inner, key, obj, len + RR_SEAL_OVERHEAD, &po, etag_out);
}

int rr_store_chunk_address(struct rr_store *s, const void *data, size_t len, char out[65])
{
	if (s->vt == &s_sealed_vtable)
		return rr_seal_address(s_of(s)->key, data, len, out);
	rr_sha256_hex(data, len, out);
	return 0;
}
