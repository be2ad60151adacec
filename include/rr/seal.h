/* Client-side encryption of stored objects (docs/how-it-works.md, "Encryption"): AES-256-GCM
 * with a fresh random 96-bit nonce per object, the object's store key bound as associated data,
 * and keyed (HMAC-SHA256) chunk addresses. The key comes from a file of 64 hex digits.  A
 * sealed object is a clear header, the ciphertext and the GCM tag: magic "\x89RRSEAL\n" (8) |
 * version 1 (1) | key id (8) | nonce (12) | ciphertext | tag (16) The key id is the first 8
 * bytes of HMAC-SHA256(key, "resume-run key id"): it tells a wrong key from a damaged object
 * without revealing anything about the key. The associated data is the whole header followed by
 * the object's key (its path in the store), so an object moved to another name, or a header
 * byte changed, does not open. */
#ifndef RR_SEAL_H
#define RR_SEAL_H

#include <stddef.h>
#include <stdint.h>

#define RR_SEAL_MAGIC "\x89RRSEAL\n"
#define RR_SEAL_MAGIC_LEN 8
#define RR_SEAL_VERSION 1
#define RR_SEAL_KEY_ID_LEN 8
#define RR_SEAL_NONCE_LEN 12
#define RR_SEAL_TAG_LEN 16
#define RR_SEAL_HEADER_LEN (RR_SEAL_MAGIC_LEN + 1 + RR_SEAL_KEY_ID_LEN + RR_SEAL_NONCE_LEN)
#define RR_SEAL_OVERHEAD (RR_SEAL_HEADER_LEN + RR_SEAL_TAG_LEN)
/* The largest object the opener accepts: a chunk's stored form (at most twice the 8 MiB
 * segment) or a manifest, with room to spare; GCM itself stops at about 64 GiB. */
#define RR_SEAL_MAX_PLAIN ((size_t)1 << 30)

struct rr_seal_key;

/* Reads a key from text: exactly 64 hex digits, then at most one "\n". Anything else is
 * RR_EINVAL with a reason in why that names the problem, never the key's characters. On
 * success *out is the caller's (rr_seal_key_destroy). */
int rr_seal_key_parse(const char *text, size_t len, struct rr_seal_key **out, char *why,
		      size_t why_len);

/* Reads a key file (see rr_seal_key_parse). *mode_loose is set to 1 when the file can be read
 * by its group or by others (the caller warns). Returns 0, RR_EINVAL (content), RR_ENOENT,
 * RR_EACCES or RR_EIO with a reason in why. */
int rr_seal_key_load_file(const char *path, struct rr_seal_key **out, int *mode_loose,
			  char *why, size_t why_len);

/* Wipes the key material and frees it. Accepts NULL. */
void rr_seal_key_destroy(struct rr_seal_key *k);

/* The key id as 16 lowercase hex digits plus NUL (a fingerprint, safe to log). */
void rr_seal_key_id_hex(const struct rr_seal_key *k, char out[2 * RR_SEAL_KEY_ID_LEN + 1]);

/* Seals len bytes of in, stored under name, into out, which must hold len +
 * RR_SEAL_OVERHEAD bytes. in may be out + RR_SEAL_HEADER_LEN (sealing in place, no copy);
 * otherwise in and out must not overlap. Returns 0, RR_ETOOBIG past RR_SEAL_MAX_PLAIN, or
 * RR_EIO when OpenSSL fails (no random bytes, no cipher). */
int rr_seal(const struct rr_seal_key *k, const char *name, const void *in, size_t len,
	    unsigned char *out);

/* Opens the sealed object obj (len bytes) read from name, in place: on success its first
 * *plain_len bytes are the plaintext. Returns 0; RR_EKEY when the object is not sealed or was
 * sealed with another key; RR_ECORRUPT when it is truncated, of an unknown version, or does
 * not authenticate (damaged, tampered with, or moved from another name); RR_EIO when OpenSSL
 * fails. A reason goes to why (why_len bytes). On failure obj's contents are unspecified. */
int rr_seal_open(const struct rr_seal_key *k, const char *name, unsigned char *obj,
		 size_t len, size_t *plain_len, char *why, size_t why_len);

/* 1 when data starts with the seal magic (a sealed object), else 0. */
int rr_seal_is_sealed(const void *data, size_t len);

/* The chunk address of data under this key: HMAC-SHA256 with a key derived for addresses,
 * as 64 lowercase hex digits plus NUL. Deterministic (dedup works) but not computable
 * without the key (it does not reveal or confirm contents). Returns 0, or RR_EIO when
 * OpenSSL fails (out is then empty). */
int rr_seal_address(const struct rr_seal_key *k, const void *data, size_t len, char out[65]);

#endif
