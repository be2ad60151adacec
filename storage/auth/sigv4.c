/* AWS Signature Version 4 (see include/rr/sigv4.h and AWS's "Signature Version 4 for S3",
 * sig-v4-header-based-auth). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "rr/error.h"
#include "rr/hash.h"
#include "rr/sigv4.h"

#define S_ALGORITHM "AWS4-HMAC-SHA256"

struct s_hdr {
	char *name;  /* lowercased copy */
	char *value; /* trimmed copy, inner whitespace runs collapsed */
	size_t order;
};

struct s_param {
	char *name; /* canonical (encoded) forms */
	char *value;
};

static int s_is_unreserved(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '_' || ch == '.' || ch == '~';
}

int rr_sigv4_uri_encode(struct rr_buf *out, const char *s, size_t len, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;
	int rc;

	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (s_is_unreserved(ch) || (keep_slash && ch == '/')) {
			rc = rr_buf_append(out, &ch, 1);
		} else {
			char esc[3] = { '%', hex[ch >> 4], hex[ch & 15] };
			rc = rr_buf_append(out, esc, sizeof(esc));
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int s_hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Percent-decodes s[0..len) and encodes the result canonically into a new string (*out,
 * freed by the caller). A '%' not followed by two hex digits is RR_EINVAL. */
static int s_requote(const char *s, size_t len, char **out)
{
	struct rr_buf dec, enc;
	size_t i;
	int rc = 0;

	rr_buf_init(&dec, RR_SIGV4_MAX_TEXT);
	rr_buf_init(&enc, RR_SIGV4_MAX_TEXT);
	*out = NULL;
	for (i = 0; i < len && !rc; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '%') {
			if (len - i < 3 || s_hexval(s[i + 1]) < 0 || s_hexval(s[i + 2]) < 0) {
				rc = RR_EINVAL;
				break;
			}
			ch = (unsigned char)(s_hexval(s[i + 1]) * 16 + s_hexval(s[i + 2]));
			i += 2;
		}
		rc = rr_buf_append(&dec, &ch, 1);
	}
	if (!rc)
		rc = rr_sigv4_uri_encode(&enc, (const char *)dec.data, dec.len, 0);
	if (!rc)
		rc = rr_buf_append(&enc, "", 0); /* an empty string still needs storage */
	if (!rc) {
		*out = (char *)enc.data;
		enc.data = NULL;
	}
	rr_buf_free(&dec);
	rr_buf_free(&enc);
	return rc;
}

static int s_param_cmp(const void *a, const void *b)
{
	const struct s_param *x = a, *y = b;
	int d = strcmp(x->name, y->name);
	return d ? d : strcmp(x->value, y->value);
}

/* Appends the canonical query string (sorted name=value pairs joined by '&'). */
static int s_canonical_query(struct rr_buf *out, const char *query)
{
	struct s_param *params = NULL;
	size_t n = 0, cap = 0, i;
	const char *p = query;
	int rc = 0;

	while (p && *p) {
		const char *end = strchr(p, '&');
		size_t plen = end ? (size_t)(end - p) : strlen(p);
		if (plen) {
			const char *eq = memchr(p, '=', plen);
			size_t nlen = eq ? (size_t)(eq - p) : plen;
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 8;
				struct s_param *np;
				if (ncap > 4096) {
					rc = RR_ETOOBIG;
					goto out;
				}
				np = realloc(params, ncap * sizeof(*np));
				if (!np) {
					rc = RR_ENOMEM;
					goto out;
				}
				params = np;
				cap = ncap;
			}
			params[n].name = params[n].value = NULL;
			n++;
			rc = s_requote(p, nlen, &params[n - 1].name);
			if (rc)
				goto out;
			rc = eq ? s_requote(eq + 1, plen - nlen - 1, &params[n - 1].value)
				: s_requote("", 0, &params[n - 1].value);
			if (rc)
				goto out;
		}
		p = end ? end + 1 : NULL;
	}
	if (n)
		qsort(params, n, sizeof(*params), s_param_cmp);
	for (i = 0; i < n && !rc; i++)
		rc = rr_buf_printf(out, "%s%s=%s", i ? "&" : "", params[i].name, params[i].value);
out:
	for (i = 0; i < n; i++) {
		free(params[i].name);
		free(params[i].value);
	}
	free(params);
	return rc;
}

/* Removes empty, "." and ".." segments; keeps a trailing '/' when anything is left. */
static int s_normalize_path(const char *path, struct rr_buf *out)
{
	size_t len = strlen(path), *starts = NULL, nseg = 0, i = 0;
	int rc = 0;

	starts = malloc((len + 1) * sizeof(*starts)); /* start offsets in out of kept segments */
	if (!starts)
		return RR_ENOMEM;
	while (i < len) {
		size_t j = i;
		while (j < len && path[j] != '/')
			j++;
		size_t slen = j - i;
		if (slen == 0 || (slen == 1 && path[i] == '.')) {
			/* skip */
		} else if (slen == 2 && path[i] == '.' && path[i + 1] == '.') {
			if (nseg) {
				out->len = starts[--nseg];
				out->data[out->len] = '\0';
			}
		} else {
			starts[nseg++] = out->len;
			rc = rr_buf_append(out, "/", 1);
			if (!rc)
				rc = rr_buf_append(out, path + i, slen);
			if (rc)
				goto out;
		}
		i = j + 1;
	}
	if (nseg == 0 || (len && path[len - 1] == '/'))
		rc = rr_buf_append(out, "/", 1);
out:
	free(starts);
	return rc;
}

static int s_canonical_path(struct rr_buf *out, const char *path, int s3_encoding)
{
	struct rr_buf norm, once;
	int rc;

	if (s3_encoding)
		return rr_sigv4_uri_encode(out, path, strlen(path), 1);
	rr_buf_init(&norm, RR_SIGV4_MAX_TEXT);
	rr_buf_init(&once, RR_SIGV4_MAX_TEXT);
	rc = s_normalize_path(path, &norm);
	if (!rc)
		rc = rr_sigv4_uri_encode(&once, (const char *)norm.data, norm.len, 1);
	if (!rc)
		rc = rr_sigv4_uri_encode(out, (const char *)once.data, once.len, 1);
	rr_buf_free(&norm);
	rr_buf_free(&once);
	return rc;
}

static int s_hdr_cmp(const void *a, const void *b)
{
	const struct s_hdr *x = a, *y = b;
	int d = strcmp(x->name, y->name);
	if (d)
		return d;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int s_valid_name_char(unsigned char ch)
{
	/* RFC 9110 token characters. */
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static int s_add_hdr(struct s_hdr *h, size_t order, const char *name, const char *value)
{
	size_t nlen, vlen, i, o = 0;
	const char *v;

	if (!name || !value || !*name)
		return RR_EINVAL;
	nlen = strlen(name);
	h->order = order;
	h->name = calloc(1, nlen + 1);
	h->value = calloc(1, strlen(value) + 1); /* zeroed: cleanup may strlen it after an error */
	if (!h->name || !h->value)
		return RR_ENOMEM;
	for (i = 0; i < nlen; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (!s_valid_name_char(ch))
			return RR_EINVAL;
		h->name[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
	}
	h->name[nlen] = '\0';
	for (v = value; *v == ' ' || *v == '\t'; v++)
		;
	vlen = strlen(v);
	while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	for (i = 0; i < vlen; i++) {
		unsigned char ch = (unsigned char)v[i];
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return RR_EINVAL;
		if (ch == ' ' || ch == '\t') {
			if (o && h->value[o - 1] == ' ')
				continue;
			ch = ' ';
		}
		h->value[o++] = (char)ch;
	}
	h->value[o] = '\0';
	return 0;
}

static int s_reserved(const char *lname, int has_token)
{
	return !strcmp(lname, "x-amz-date") || !strcmp(lname, "authorization") ||
	       (has_token && !strcmp(lname, "x-amz-security-token"));
}

static int s_valid_scope_part(const char *s)
{
	if (!s || !*s)
		return 0;
	for (; *s; s++)
		if (*s == '/' || (unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

static int s_valid_payload(const char *p)
{
	if (!p || !*p)
		return 0;
	if (rr_is_sha256_hex(p))
		return 1;
	/* literal markers: UNSIGNED-PAYLOAD, STREAMING-... */
	for (; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return 0;
	return 1;
}

static int s_amz_date(time_t when, char out[RR_SIGV4_AMZ_DATE_LEN + 1])
{
	struct tm tm;

	if (!gmtime_r(&when, &tm) || tm.tm_year < 0 || tm.tm_year > 9999 - 1900)
		return RR_EINVAL;
	if (strftime(out, RR_SIGV4_AMZ_DATE_LEN + 1, "%Y%m%dT%H%M%SZ", &tm) !=
	    RR_SIGV4_AMZ_DATE_LEN)
		return RR_EINVAL;
	return 0;
}

/* Builds the canonical request into creq, and the signed-headers list into signed_hdrs. */
static int s_build(const struct rr_sigv4_credentials *c, const char *amz_date,
		   const struct rr_sigv4_request *r, int s3_encoding, struct rr_buf *creq,
		   struct rr_buf *signed_hdrs)
{
	struct s_hdr *h = NULL;
	size_t n = 0, total, i;
	int has_token = c->session_token != NULL, have_host = 0;
	int rc;

	if (!r->method || !*r->method || !r->path || r->path[0] != '/' ||
	    !s_valid_payload(r->payload_sha256_hex) || (r->nheaders && !r->headers) ||
	    r->nheaders > RR_SIGV4_MAX_HEADERS)
		return RR_EINVAL;
	for (i = 0; r->method[i]; i++)
		if (!s_valid_name_char((unsigned char)r->method[i]))
			return RR_EINVAL;

	total = r->nheaders + 2;
	h = calloc(total, sizeof(*h));
	if (!h)
		return RR_ENOMEM;
	for (i = 0; i < r->nheaders; i++) {
		rc = s_add_hdr(&h[n], n, r->headers[i].name, r->headers[i].value);
		n++;
		if (rc)
			goto out;
		if (s_reserved(h[n - 1].name, has_token) ||
		    (!strcmp(h[n - 1].name, "x-amz-content-sha256") &&
		     strcmp(h[n - 1].value, r->payload_sha256_hex))) {
			rc = RR_EINVAL;
			goto out;
		}
		if (!strcmp(h[n - 1].name, "host"))
			have_host = 1;
	}
	if (!have_host) {
		rc = RR_EINVAL;
		goto out;
	}
	rc = s_add_hdr(&h[n], n, "x-amz-date", amz_date);
	n++;
	if (!rc && has_token) {
		rc = s_add_hdr(&h[n], n, "x-amz-security-token", c->session_token);
		n++;
	}
	if (rc)
		goto out;
	qsort(h, n, sizeof(*h), s_hdr_cmp);

	rc = rr_buf_printf(creq, "%s\n", r->method);
	if (!rc)
		rc = s_canonical_path(creq, r->path, s3_encoding);
	if (!rc)
		rc = rr_buf_append(creq, "\n", 1);
	if (!rc)
		rc = s_canonical_query(creq, r->query);
	if (!rc)
		rc = rr_buf_append(creq, "\n", 1);
	for (i = 0; i < n && !rc; i++) {
		if (i && !strcmp(h[i].name, h[i - 1].name)) {
			/* a repeated name: its values join the previous line */
			creq->len--; /* drop the '\n' */
			rc = rr_buf_printf(creq, ",%s\n", h[i].value);
			continue;
		}
		rc = rr_buf_printf(creq, "%s:%s\n", h[i].name, h[i].value);
		if (!rc)
			rc = rr_buf_printf(signed_hdrs, "%s%s", i ? ";" : "", h[i].name);
	}
	if (!rc)
		rc = rr_buf_printf(creq, "\n%s\n%s", signed_hdrs->data, r->payload_sha256_hex);
out:
	for (i = 0; i < total; i++) {
		if (h[i].value)
			OPENSSL_cleanse(h[i].value, strlen(h[i].value));
		free(h[i].name);
		free(h[i].value);
	}
	free(h);
	return rc;
}

static void s_wipe(struct rr_buf *b)
{
	if (b->data)
		OPENSSL_cleanse(b->data, b->cap);
	rr_buf_free(b);
}

static int s_check_args(const struct rr_sigv4_credentials *c, const char *region,
			const char *service, const struct rr_sigv4_request *r)
{
	if (!c || !r || !c->secret_access_key || !s_valid_scope_part(c->access_key_id) ||
	    !s_valid_scope_part(region) || !s_valid_scope_part(service))
		return RR_EINVAL;
	return 0;
}

/* Canonical request, string to sign, scope and signed-headers list in one place. */
static int s_prepare(const struct rr_sigv4_credentials *c, const char *region,
		     const char *service, time_t when, const struct rr_sigv4_request *r,
		     int s3_encoding, char amz_date[RR_SIGV4_AMZ_DATE_LEN + 1], struct rr_buf *creq,
		     struct rr_buf *sts, struct rr_buf *signed_hdrs)
{
	char creq_hash[RR_SHA256_HEX_LEN + 1];
	int rc;

	rc = s_check_args(c, region, service, r);
	if (rc)
		return rc;
	rc = s_amz_date(when, amz_date);
	if (rc)
		return rc;
	rc = s_build(c, amz_date, r, s3_encoding, creq, signed_hdrs);
	if (rc)
		return rc;
	rr_sha256_hex(creq->data, creq->len, creq_hash);
	return rr_buf_printf(sts, S_ALGORITHM "\n%s\n%.8s/%s/%s/aws4_request\n%s", amz_date,
			     amz_date, region, service, creq_hash);
}

int rr_sigv4_canonical(const struct rr_sigv4_credentials *c, const char *region,
		       const char *service, time_t when, const struct rr_sigv4_request *r,
		       int s3_encoding, struct rr_buf *canonical_out,
		       struct rr_buf *string_to_sign_out)
{
	struct rr_buf creq, sts, sh;
	char amz_date[RR_SIGV4_AMZ_DATE_LEN + 1];
	int rc;

	rr_buf_init(&creq, RR_SIGV4_MAX_TEXT);
	rr_buf_init(&sts, RR_SIGV4_MAX_TEXT);
	rr_buf_init(&sh, RR_SIGV4_MAX_TEXT);
	rc = s_prepare(c, region, service, when, r, s3_encoding, amz_date, &creq, &sts, &sh);
	if (rc)
		goto out;
	if (canonical_out) {
		rr_buf_reset(canonical_out);
		rc = rr_buf_append(canonical_out, creq.data, creq.len);
		if (rc)
			goto out;
	}
	if (string_to_sign_out) {
		rr_buf_reset(string_to_sign_out);
		rc = rr_buf_append(string_to_sign_out, sts.data, sts.len);
	}
out:
	s_wipe(&creq);
	s_wipe(&sts);
	s_wipe(&sh);
	return rc;
}

static int s_hmac(const uint8_t *key, size_t klen, const void *msg, size_t mlen,
		  uint8_t out[RR_SHA256_LEN])
{
	unsigned int olen = 0;

	if (!HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &olen) || olen != RR_SHA256_LEN)
		return RR_EIO;
	return 0;
}

int rr_sigv4_sign(const struct rr_sigv4_credentials *c, const char *region, const char *service,
		  time_t when, const struct rr_sigv4_request *r, int s3_encoding,
		  char *authorization_out, size_t cap, char *amz_date_out)
{
	struct rr_buf creq, sts, sh, secret;
	char amz_date[RR_SIGV4_AMZ_DATE_LEN + 1];
	uint8_t k1[RR_SHA256_LEN], k2[RR_SHA256_LEN], sig[RR_SHA256_LEN];
	char sig_hex[RR_SHA256_HEX_LEN + 1];
	int rc, n;

	rr_buf_init(&creq, RR_SIGV4_MAX_TEXT);
	rr_buf_init(&sts, RR_SIGV4_MAX_TEXT);
	rr_buf_init(&sh, RR_SIGV4_MAX_TEXT);
	rr_buf_init(&secret, 4096);
	if (!authorization_out || cap == 0) {
		rc = RR_EINVAL;
		goto out;
	}
	authorization_out[0] = '\0';
	rc = s_prepare(c, region, service, when, r, s3_encoding, amz_date, &creq, &sts, &sh);
	if (rc)
		goto out;

	/* Reserve first so the secret is written once and never left behind by a realloc. */
	rc = rr_buf_reserve(&secret, 4 + strlen(c->secret_access_key));
	if (!rc)
		rc = rr_buf_printf(&secret, "AWS4%s", c->secret_access_key);
	if (rc)
		goto out;
	rc = s_hmac(secret.data, secret.len, amz_date, 8, k1); /* kDate */
	if (!rc)
		rc = s_hmac(k1, sizeof(k1), region, strlen(region), k2); /* kRegion */
	if (!rc)
		rc = s_hmac(k2, sizeof(k2), service, strlen(service), k1); /* kService */
	if (!rc)
		rc = s_hmac(k1, sizeof(k1), "aws4_request", 12, k2); /* kSigning */
	if (!rc)
		rc = s_hmac(k2, sizeof(k2), sts.data, sts.len, sig);
	if (rc)
		goto out;
	rr_hex_encode(sig, sizeof(sig), sig_hex);

	n = snprintf(authorization_out, cap,
		     S_ALGORITHM " Credential=%s/%.8s/%s/%s/aws4_request, SignedHeaders=%s, "
				 "Signature=%s",
		     c->access_key_id, amz_date, region, service, (const char *)sh.data, sig_hex);
	if (n < 0 || (size_t)n >= cap) {
		authorization_out[0] = '\0';
		rc = RR_ETOOBIG;
		goto out;
	}
	if (amz_date_out)
		memcpy(amz_date_out, amz_date, sizeof(amz_date));
out:
	OPENSSL_cleanse(k1, sizeof(k1));
	OPENSSL_cleanse(k2, sizeof(k2));
	OPENSSL_cleanse(sig, sizeof(sig));
	s_wipe(&secret);
	s_wipe(&creq);
	s_wipe(&sts);
	s_wipe(&sh);
	return rc;
}
