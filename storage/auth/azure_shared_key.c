/* Azure Shared Key signing (include/rr/azure_shared_key.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "rr/azure_shared_key.h"
#include "rr/buf.h"
#include "rr/error.h"
#include "rr/hash.h"

#define S_MAX_PARAMS 32
#define S_MAX_XMS 32

/* The standard headers of the StringToSign, in its order (Date stays empty: x-ms-date). */
static const char *const s_standard[] = {
	"Content-Encoding", "Content-Language", "Content-Length", "Content-MD5",
	"Content-Type",     "Date",             "If-Modified-Since", "If-Match",
	"If-None-Match",    "If-Unmodified-Since", "Range",
};

static const char *s_header(const struct rr_http_header *h, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (h[i].value && strcasecmp(h[i].name, name) == 0)
			return h[i].value;
	return NULL;
}

static int s_has_line_break(const char *v)
{
	return strpbrk(v, "\r\n") != NULL;
}

/* Appends value trimmed of surrounding spaces (the canonical form of a header value). */
static int s_append_trimmed(struct rr_buf *out, const char *v)
{
	size_t n = strlen(v);

	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	return rr_buf_append(out, v, n);
}

static int s_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* CanonicalizedHeaders: every x-ms- header as "name:value\n", names lower-cased, sorted. */
static int s_xms_headers(struct rr_buf *out, const struct rr_http_header *h, size_t n)
{
	char *lines[S_MAX_XMS];
	size_t k = 0;
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		size_t nl;
		if (!h[i].value || strncasecmp(h[i].name, "x-ms-", 5) != 0)
			continue;
		if (k == S_MAX_XMS || s_has_line_break(h[i].value))
			rc = RR_EINVAL;
		else if (asprintf(&lines[k], "%s:%s", h[i].name, h[i].value) < 0)
			rc = RR_ENOMEM;
		else {
			nl = strlen(h[i].name);
			for (size_t j = 0; j < nl; j++)
				lines[k][j] = (char)(lines[k][j] | (lines[k][j] >= 'A' &&
								    lines[k][j] <= 'Z' ? 0x20 : 0));
			k++;
		}
	}
	if (!rc)
		qsort(lines, k, sizeof(lines[0]), s_cmp_str);
	for (size_t i = 0; i < k; i++) {
		char *colon = strchr(lines[i], ':');
		if (!rc)
			rc = rr_buf_append(out, lines[i], (size_t)(colon - lines[i]) + 1);
		if (!rc)
			rc = s_append_trimmed(out, colon + 1);
		if (!rc)
			rc = rr_buf_append(out, "\n", 1);
		free(lines[i]);
	}
	return rc;
}

/* Percent-decodes s[0..n) into a new string; NULL for a malformed escape or no memory. */
static char *s_decode(const char *s, size_t n)
{
	char *d = malloc(n + 1), *o = d;

	for (size_t i = 0; d && i < n; i++) {
		if (s[i] != '%') {
			*o++ = s[i];
			continue;
		}
		int hi = i + 2 < n ? rr_hex_digit(s[i + 1]) : -1;
		int lo = i + 2 < n ? rr_hex_digit(s[i + 2]) : -1;
		if (hi < 0 || lo < 0) {
			free(d);
			return NULL;
		}
		*o++ = (char)(hi * 16 + lo);
		i += 2;
	}
	if (d)
		*o = '\0';
	return d;
}

struct s_param {
	char *name; /* lower-cased, decoded */
	char *value;
};

static int s_cmp_param(const void *a, const void *b)
{
	const struct s_param *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->value, y->value);
}

/* Splits the wire query into decoded parameters (*count of them made, to be freed even
 * on failure). Returns 0, RR_EINVAL or RR_ENOMEM. */
static int s_params(const char *q, struct s_param *p, size_t cap, size_t *count)
{
	*count = 0;
	while (q && *q) {
		size_t len = strcspn(q, "&"), nlen;
		const char *eq = memchr(q, '=', len);
		if (len) {
			if (*count == cap)
				return RR_EINVAL;
			nlen = eq ? (size_t)(eq - q) : len;
			p[*count].name = s_decode(q, nlen);
			p[*count].value = eq ? s_decode(eq + 1, len - nlen - 1) : strdup("");
			if (!p[(*count)++].name || !p[*count - 1].value)
				return RR_EINVAL;
			for (char *c = p[*count - 1].name; *c; c++)
				if (*c >= 'A' && *c <= 'Z')
					*c = (char)(*c | 0x20);
		}
		q += len;
		if (*q == '&')
			q++;
	}
	return 0;
}

/* CanonicalizedResource: "/account" + path, then "\nname:v1,v2" per sorted parameter. */
static int s_resource(struct rr_buf *out, const char *account, const char *path,
		      const char *query)
{
	struct s_param p[S_MAX_PARAMS];
	size_t n = 0;
	int rc;

	memset(p, 0, sizeof(p));
	rc = rr_buf_printf(out, "/%s%s", account, path);
	if (!rc)
		rc = s_params(query, p, S_MAX_PARAMS, &n);
	if (!rc)
		qsort(p, n, sizeof(p[0]), s_cmp_param);
	for (size_t i = 0; i < n && !rc; i++) {
		if (i > 0 && strcmp(p[i].name, p[i - 1].name) == 0)
			rc = rr_buf_printf(out, ",%s", p[i].value);
		else
			rc = rr_buf_printf(out, "\n%s:%s", p[i].name, p[i].value);
	}
	for (size_t i = 0; i < n; i++) {
		free(p[i].name);
		free(p[i].value);
	}
	return rc;
}

int rr_azure_string_to_sign(struct rr_buf *out, const char *account, const char *method,
			    const struct rr_http_header *headers, size_t nheaders,
			    const char *path_wire, const char *query_wire)
{
	int rc;

	if (!out || !account || !method || !path_wire || path_wire[0] != '/')
		return RR_EINVAL;
	rr_buf_reset(out);
	rc = rr_buf_printf(out, "%s\n", method);
	for (size_t i = 0; i < sizeof(s_standard) / sizeof(s_standard[0]) && !rc; i++) {
		const char *v = s_header(headers, nheaders, s_standard[i]);
		if (i == 5 || (v && i == 2 && strcmp(v, "0") == 0))
			v = NULL; /* Date: x-ms-date is sent; a zero length is an empty line */
		if (v && s_has_line_break(v))
			rc = RR_EINVAL;
		else if (v)
			rc = rr_buf_printf(out, "%s\n", v);
		else
			rc = rr_buf_append(out, "\n", 1);
	}
	if (!rc)
		rc = s_xms_headers(out, headers, nheaders);
	if (!rc)
		rc = s_resource(out, account, path_wire, query_wire);
	if (rc)
		rr_buf_reset(out);
	return rc;
}

int rr_azure_key_decode(const char *b64, unsigned char *key, size_t cap)
{
	size_t n = strlen(b64), pad = 0;
	unsigned char *tmp;
	int len;

	if (n == 0 || n % 4 || n / 4 * 3 > cap + 2)
		return RR_EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = b64[i];
		if (c == '=' && i >= n - 2) {
			pad++;
			continue;
		}
		if (pad || !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || c == '+' || c == '/'))
			return RR_EINVAL;
	}
	tmp = malloc(n / 4 * 3 + 1);
	if (!tmp)
		return RR_ENOMEM;
	len = EVP_DecodeBlock(tmp, (const unsigned char *)b64, (int)n);
	if (len >= 0)
		len -= (int)pad; /* EVP_DecodeBlock counts the padding as zero bytes */
	if (len <= 0 || (size_t)len > cap) {
		OPENSSL_cleanse(tmp, n / 4 * 3 + 1);
		free(tmp);
		return RR_EINVAL;
	}
	memcpy(key, tmp, (size_t)len);
	OPENSSL_cleanse(tmp, n / 4 * 3 + 1);
	free(tmp);
	return len;
}

int rr_azure_shared_key_sign(const unsigned char *key, size_t key_len, const char *account,
			     const struct rr_buf *sts, char *out, size_t cap)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mlen = 0;
	char sig[64];
	int w;

	if (!key || !key_len || !account || !sts || !out)
		return RR_EINVAL;
	if (!HMAC(EVP_sha256(), key, (int)key_len, sts->data ? sts->data : (const void *)"",
		  sts->len, mac, &mlen) || mlen != RR_SHA256_LEN)
		return RR_EINVAL;
	EVP_EncodeBlock((unsigned char *)sig, mac, RR_SHA256_LEN);
	OPENSSL_cleanse(mac, sizeof(mac));
	w = snprintf(out, cap, "SharedKey %s:%s", account, sig);
	return w > 0 && (size_t)w < cap ? 0 : RR_ETOOBIG;
}
