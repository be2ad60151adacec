/* The sealed store (storage/store/store_sealed.c): wraps another store and encrypts every
 * object (docs/how-it-works.md, "Encryption"). rr_store_open builds it when an encryption key
 * file is given. */
#ifndef RR_STORE_SEALED_H
#define RR_STORE_SEALED_H

#include <stddef.h>

#include "rr/seal.h"
#include "rr/store.h"

/* Wraps inner; takes ownership of inner and key (both freed by rr_store_destroy of *out, or
 * here on failure). Returns 0 or RR_ENOMEM. */
int rr_store_sealed_new(struct rr_store *inner, struct rr_seal_key *key, struct rr_store **out);

/* Bytes a caller of rr_store_put_scratch must leave writable in front of the data: the
 * sealed header for a sealed store, 0 for any other. */
size_t rr_store_scratch_before(struct rr_store *s);
#define RR_STORE_SCRATCH_AFTER RR_SEAL_TAG_LEN /* and after it */

/* rr_store_put for data in a scratch buffer the caller is done with: data may be
 * overwritten, and rr_store_scratch_before(s) bytes before it and RR_STORE_SCRATCH_AFTER
 * after it must be writable. A sealed store seals in place there instead of copying (the
 * copy costs about as much memory traffic as the cipher); other stores put data as is. */
int rr_store_put_scratch(struct rr_store *s, const char *key, unsigned char *data, size_t len,
			 const struct rr_put_opts *opts, char *etag_out);

/* The address a chunk of these stored bytes is named by in s: the keyed HMAC-SHA256 in a
 * sealed store (names reveal nothing), else the SHA-256 of the bytes. 64 lowercase hex
 * digits plus NUL. Returns 0, or RR_EIO when OpenSSL fails. */
int rr_store_chunk_address(struct rr_store *s, const void *data, size_t len, char out[65]);

#endif
