/* AES-256-GCM sealing of stored objects and keyed chunk addresses (see rr/seal.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "rr/error.h"
#include "rr/hash.h"
#include "rr/seal.h"

#define S_KEY_LEN 32
/* A key file is 65 bytes at most; reading a little more tells "too long" from "just right". */
#define S_KEY_FILE_READ 128

struct rr_seal_key {
	/* Subkeys derived from the user's key with HMAC-SHA256 and distinct labels, so the
	 * cipher key, the address key and the published key id never share a value. */
	unsigned char enc[S_KEY_LEN];
	unsigned char addr[S_KEY_LEN];
	unsigned char id[RR_SEAL_KEY_ID_LEN];
};

static int s_derive(const unsigned char key[S_KEY_LEN], const char *label,
		    unsigned char out[S_KEY_LEN])
{
	unsigned int n = 0;

	if (!HMAC(EVP_sha256(), key, S_KEY_LEN, (const unsigned char *)label, strlen(label),
		  out, &n) || n != S_KEY_LEN)
		return RR_EIO;
	return 0;
}

int rr_seal_key_parse(const char *text, size_t len, struct rr_seal_key **out, char *why,
		      size_t why_len)
{
	unsigned char key[S_KEY_LEN], id[S_KEY_LEN];
	struct rr_seal_key *k = NULL;
	size_t digits = len;
	int rc = 0;

	*out = NULL;
	if (digits && text[digits - 1] == '\n')
		digits--;
	/* Report the shape of the problem only: a message must never echo key material. */
	for (size_t i = 0; i < digits; i++)
		if (rr_hex_digit(text[i]) < 0) {
			rc = rr_fail(why, why_len, RR_EINVAL,
				     "character %zu is not a hex digit (the "
				     "file must hold 64 hex digits and at most one newline)", i + 1);
			goto out;
		}
	if (digits != 2 * S_KEY_LEN) {
		rc = rr_fail(why, why_len, RR_EINVAL,
			     "it holds %zu hex digits, a 256-bit key is 64",
			     digits);
		goto out;
	}
	for (size_t i = 0; i < S_KEY_LEN; i++)
		key[i] = (unsigned char)(rr_hex_digit(text[2 * i]) << 4 | rr_hex_digit(text[2 * i + 1]));
	k = OPENSSL_secure_zalloc(sizeof(*k));
	if (!k) {
		rc = RR_ENOMEM;
		goto out;
	}
	rc = s_derive(key, "resume-run encryption key", k->enc);
	if (!rc)
		rc = s_derive(key, "resume-run chunk address", k->addr);
	if (!rc)
		rc = s_derive(key, "resume-run key id", id);
	if (rc) {
		rr_fail(why, why_len, rc, "cannot derive keys (OpenSSL HMAC failed)");
		goto out;
	}
	memcpy(k->id, id, RR_SEAL_KEY_ID_LEN);
	*out = k;
	k = NULL;
out:
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(id, sizeof(id));
	rr_seal_key_destroy(k);
	return rc;
}

int rr_seal_key_load_file(const char *path, struct rr_seal_key **out, int *mode_loose,
			  char *why, size_t why_len)
{
	char text[S_KEY_FILE_READ];
	struct stat st;
	size_t len = 0;
	int fd, rc = 0;

	*out = NULL;
	*mode_loose = 0;
	/* O_NONBLOCK: a FIFO given by mistake is refused below instead of blocking here. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return rr_fail(why, why_len, rr_error_from_errno(errno), "cannot open it: %s",
			       strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = rr_fail(why, why_len, RR_EINVAL, "it is not a regular file");
		goto out;
	}
	*mode_loose = (st.st_mode & (S_IRGRP | S_IROTH)) != 0;
	while (len < sizeof(text)) {
		ssize_t n = read(fd, text + len, sizeof(text) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = rr_fail(why, why_len, RR_EIO, "cannot read it: %s",
				     strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len == sizeof(text)) {
		rc = rr_fail(why, why_len, RR_EINVAL,
			     "it is longer than a key (64 hex digits and at "
			     "most one newline)");
		goto out;
	}
	rc = rr_seal_key_parse(text, len, out, why, why_len);
out:
	OPENSSL_cleanse(text, sizeof(text));
	close(fd);
	return rc;
}

void rr_seal_key_destroy(struct rr_seal_key *k)
{
	if (k)
		OPENSSL_secure_clear_free(k, sizeof(*k));
}

void rr_seal_key_id_hex(const struct rr_seal_key *k, char out[2 * RR_SEAL_KEY_ID_LEN + 1])
{
	rr_hex_encode(k->id, RR_SEAL_KEY_ID_LEN, out);
}

int rr_seal_is_sealed(const void *data, size_t len)
{
	return len >= RR_SEAL_MAGIC_LEN && memcmp(data, RR_SEAL_MAGIC, RR_SEAL_MAGIC_LEN) == 0;
}

/* Associated data: the clear header, then the object's name. */
static int s_aad(EVP_CIPHER_CTX *c, const unsigned char *hdr, const char *name)
{
	int n;

	if (EVP_CipherUpdate(c, NULL, &n, hdr, RR_SEAL_HEADER_LEN) != 1)
		return RR_EIO;
	if (*name && EVP_CipherUpdate(c, NULL, &n, (const unsigned char *)name,
				      (int)strlen(name)) != 1)
		return RR_EIO;
	return 0;
}

/* EVP takes int lengths: feeds len bytes in pieces. */
static int s_crypt(EVP_CIPHER_CTX *c, const unsigned char *in, size_t len, unsigned char *out)
{
	const size_t step = (size_t)1 << 30;

	while (len) {
		int piece = (int)(len < step ? len : step), n = 0;
		if (EVP_CipherUpdate(c, out, &n, in, piece) != 1 || n != piece)
			return RR_EIO;
		in += piece;
		out += piece;
		len -= (size_t)piece;
	}
	return 0;
}

int rr_seal(const struct rr_seal_key *k, const char *name, const void *in, size_t len,
	    unsigned char *out)
{
	unsigned char *hdr = out, *body = out + RR_SEAL_HEADER_LEN;
	EVP_CIPHER_CTX *c = NULL;
	int n, rc = RR_EIO;

	if (len > RR_SEAL_MAX_PLAIN || strlen(name) > 4096)
		return RR_ETOOBIG;
	memcpy(hdr, RR_SEAL_MAGIC, RR_SEAL_MAGIC_LEN);
	hdr[RR_SEAL_MAGIC_LEN] = RR_SEAL_VERSION;
	memcpy(hdr + RR_SEAL_MAGIC_LEN + 1, k->id, RR_SEAL_KEY_ID_LEN);
	unsigned char *nonce = hdr + RR_SEAL_MAGIC_LEN + 1 + RR_SEAL_KEY_ID_LEN;
	/* A random 96-bit nonce per object: a repeat under one key is a birthday event, about
	 * 2^-33 likely after 2^32 objects (NIST SP 800-38D's limit), far beyond any run. */
	if (RAND_bytes(nonce, RR_SEAL_NONCE_LEN) != 1)
		goto out;
	c = EVP_CIPHER_CTX_new();
	if (!c || EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, k->enc, nonce) != 1)
		goto out;
	if (s_aad(c, hdr, name) || s_crypt(c, in, len, body))
		goto out;
	if (EVP_EncryptFinal_ex(c, body + len, &n) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, RR_SEAL_TAG_LEN, body + len) != 1)
		goto out;
	rc = 0;
out:
	EVP_CIPHER_CTX_free(c);
	return rc;
}

int rr_seal_open(const struct rr_seal_key *k, const char *name, unsigned char *obj,
		 size_t len, size_t *plain_len, char *why, size_t why_len)
{
	const unsigned char *hdr = obj, *id = obj + RR_SEAL_MAGIC_LEN + 1;
	unsigned char hdr_copy[RR_SEAL_HEADER_LEN], tag[RR_SEAL_TAG_LEN];
	EVP_CIPHER_CTX *c = NULL;
	size_t body_len;
	int n, rc;

	*plain_len = 0;
	/* Shorter than the magic, and its start: a sealed object cut down (damage), not one
	 * written without a key. */
	if (len < RR_SEAL_MAGIC_LEN && memcmp(obj, RR_SEAL_MAGIC, len) == 0)
		return rr_fail(why, why_len, RR_ECORRUPT,
			       "%s is truncated (%zu bytes, a sealed object has at least %d)",
			       name, len, RR_SEAL_OVERHEAD);
	if (!rr_seal_is_sealed(obj, len))
		return rr_fail(why, why_len, RR_EKEY, "%s is not encrypted (written without "
			       "--encryption-key-file?)", name);
	if (len < RR_SEAL_OVERHEAD)
		return rr_fail(why, why_len, RR_ECORRUPT,
			       "%s is truncated (%zu bytes, a sealed object "
			       "has at least %d)", name, len, RR_SEAL_OVERHEAD);
	if (hdr[RR_SEAL_MAGIC_LEN] != RR_SEAL_VERSION)
		return rr_fail(why, why_len, RR_ECORRUPT, "%s is sealed in an unknown format "
			       "(version %u)", name, (unsigned)hdr[RR_SEAL_MAGIC_LEN]);
	if (CRYPTO_memcmp(id, k->id, RR_SEAL_KEY_ID_LEN) != 0) {
		char theirs[2 * RR_SEAL_KEY_ID_LEN + 1], ours[2 * RR_SEAL_KEY_ID_LEN + 1];
		rr_hex_encode(id, RR_SEAL_KEY_ID_LEN, theirs);
		rr_seal_key_id_hex(k, ours);
		return rr_fail(why, why_len, RR_EKEY,
			       "%s was encrypted with another key (key id %s; "
			       "the given key's id is %s)", name, theirs, ours);
	}
	body_len = len - RR_SEAL_OVERHEAD;
	if (body_len > RR_SEAL_MAX_PLAIN)
		return rr_fail(why, why_len, RR_ECORRUPT,
			       "%s is larger than any sealed object",
			       name);
	/* Decrypting in place overwrites the header's start: the AAD and tag are copied
	 * first. */
	memcpy(hdr_copy, hdr, sizeof(hdr_copy));
	memcpy(tag, obj + len - RR_SEAL_TAG_LEN, sizeof(tag));
	rc = RR_EIO;
	c = EVP_CIPHER_CTX_new();
	if (!c || EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, k->enc, hdr_copy +
				     RR_SEAL_MAGIC_LEN + 1 + RR_SEAL_KEY_ID_LEN) != 1)
		goto out;
	if (s_aad(c, hdr_copy, name) ||
	    s_crypt(c, obj + RR_SEAL_HEADER_LEN, body_len, obj + RR_SEAL_HEADER_LEN))
		goto out;
	if (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, RR_SEAL_TAG_LEN, tag) != 1)
		goto out;
	if (EVP_DecryptFinal_ex(c, obj + RR_SEAL_HEADER_LEN + body_len, &n) != 1) {
		/* Plaintext that did not authenticate must not be used: wipe it. */
		OPENSSL_cleanse(obj, len);
		rc = rr_fail(why, why_len, RR_ECORRUPT,
			     "%s does not authenticate (AES-GCM tag "
			     "mismatch): damaged, tampered with, or moved from another name",
			     name);
		goto out;
	}
	memmove(obj, obj + RR_SEAL_HEADER_LEN, body_len);
	*plain_len = body_len;
	rc = 0;
out:
	if (rc == RR_EIO)
		rr_fail(why, why_len, rc, "OpenSSL cannot open %s", name);
	EVP_CIPHER_CTX_free(c);
	return rc;
}

int rr_seal_address(const struct rr_seal_key *k, const void *data, size_t len, char out[65])
{
	unsigned char mac[32];
	unsigned int n = 0;

	out[0] = '\0';
	if (!HMAC(EVP_sha256(), k->addr, S_KEY_LEN, data, len, mac, &n) || n != sizeof(mac))
		return RR_EIO;
	rr_hex_encode(mac, sizeof(mac), out);
	return 0;
}
