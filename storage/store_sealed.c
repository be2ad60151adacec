/* The sealed store: a backend that wraps any other store and seals every object it writes
 * (AES-256-GCM, rr/seal.h) and opens every object it reads, with the object's key bound as
 * associated data. Listing, head and delete pass through: names are not secret (chunk names
 * are keyed addresses), and sizes are the stored ones. */
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/hash.h"
#include "rr/seal.h"
#include "rr/store.h"
#include "rr/store_sealed.h"

struct s_sealed {
	struct rr_store base;
	struct rr_seal_key *key; /* owned, wiped when the store is destroyed */
};

static const struct rr_store_vtable s_sealed_vt;

static struct s_sealed *s_of(struct rr_store *s)
{
	return (struct s_sealed *)s;
}

static int s_put(struct rr_store *s, const char *key, const void *data, size_t len,
		 const struct rr_put_opts *opts, char *etag_out)
{
	struct s_sealed *z = s_of(s);
	struct rr_put_opts po = opts ? *opts : (struct rr_put_opts){ 0 };
	unsigned char *sealed;
	int rc;

	if (len > RR_SEAL_MAX_PLAIN)
		return rr_store_fail(RR_ETOOBIG, "%s is too large to encrypt", key);
	sealed = malloc(len + RR_SEAL_OVERHEAD);
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
	free(sealed);
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

static int s_del_many(struct rr_store *s, const char *const *keys, size_t n)
{
	return rr_store_del_many(s->inner, keys, n);
}

static void s_destroy(struct rr_store *s)
{
	struct s_sealed *z = s_of(s);

	rr_store_destroy(s->inner);
	rr_seal_key_destroy(z->key);
	free(s->url);
	free(z);
}

static const struct rr_store_vtable s_sealed_vt = {
	.scheme = "sealed",
	.put = s_put,
	.get = s_get,
	.head = s_head,
	.list = s_list,
	.del = s_del,
	.del_many = s_del_many,
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
	z->base.vt = &s_sealed_vt;
	z->base.inner = inner;
	z->key = key;
	*out = &z->base;
	return 0;
}

int rr_store_chunk_address(struct rr_store *s, const void *data, size_t len, char out[65])
{
	if (s->vt == &s_sealed_vt)
		return rr_seal_address(s_of(s)->key, data, len, out);
	rr_sha256_hex(data, len, out);
	return 0;
}
