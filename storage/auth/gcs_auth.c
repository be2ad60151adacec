/* Google OAuth2 access tokens for GCS (include/rr/gcs_auth.h): a service-account key file,
 * whose RS256-signed JWT is exchanged at its token_uri, or else the metadata server's token
 * of the VM's default service account, behind one cache.
 *
 * The key file is read and checked once, at rr_gcs_auth_new, so that a bad one is reported
 * at start-up; its PEM text is kept (wiped when freed) and turned into a key for each JWT,
 * about once an hour. A configured key file that later fails does not fall through to the
 * metadata server, as Google's client libraries do not: that would quietly swap
 * identities. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "rr/buf.h"
#include "rr/clock.h"
#include "rr/error.h"
#include "rr/gce_metadata.h"
#include "rr/gcs_auth.h"
#include "rr/loopback.h"
#include "rr/http.h"
#include "rr/json.h"
#include "rr/log.h"
#include "rr/quote.h"
#include "rr/sigv4.h"
#include "rr/timefmt.h"

#define S_KEY_FILE_MAX (64u << 10)      /* Google's key files are about 2.3 KiB */
#define S_RESPONSE_MAX (64u << 10)
#define S_JWT_MAX (256u << 10)          /* bounded by the key file's fields anyway */
#define S_TIMEOUT_MS 10000
#define S_DEFAULT_MARGIN_MS (5 * 60 * 1000)
#define S_JWT_LIFETIME_S 3600           /* the longest Google's token endpoint accepts */
#define S_NOW_MAX (253402300799LL - S_JWT_LIFETIME_S) /* exp stays before year 10000 */
/* A longer lifetime is counted as a day: refreshing earlier than needed is harmless, and
 * the arithmetic on it cannot overflow. */
#define S_EXPIRES_MAX_S 86400.0
#define S_URL_MAX 2048
#define S_SOURCE_MAX 96                 /* the header's size for `source` */
/* Google issues 2048-bit keys; the upper bound keeps a hostile key file from making each
 * signature take minutes (OpenSSL's own ceiling for RSA moduli). */
#define S_RSA_MIN_BITS 1024
#define S_RSA_MAX_BITS 16384
#define S_METADATA_TOKEN_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define S_STEP_MAX 512
#define S_CLOCK_NOISE_S 2               /* a Date's resolution and the request's time */
#define S_CLOCK_MOVED_S 30              /* a refused JWT is dated anew past this */

/* The fields of a service-account key file that the JWT needs. */
struct s_key {
	char *email;
	char *pem;        /* secret: wiped before it is freed */
	char *kid;        /* NULL: no "kid" in the JWT header */
	char *token_uri;
};

struct rr_gcs_auth {
	struct rr_http *http;
	int have_key;                 /* 0: the metadata server */
	struct s_key key;
	char *metadata_url;           /* the token URL, when !have_key */
	char source[S_SOURCE_MAX];
	int64_t margin_ms;
	pthread_mutex_t lock;         /* one fetch at a time; guards what follows */
	int have;                     /* token holds a token */
	char token[RR_GCS_TOKEN_MAX]; /* secret */
	int64_t expires_mono_ms;
	int failure_logged;           /* a failed refresh was logged since the last success */
	int metadata_answered;        /* the metadata server has answered at least once */
	int64_t clock_offset_s;       /* the token endpoint's clock minus this machine's, from
				       * its answers' Date: JWTs are dated by it */
};

static void s_str_wipe_free(char *s)
{
	if (s)
		OPENSSL_cleanse(s, strlen(s));
	free(s);
}

static void s_key_free(struct s_key *k)
{
	free(k->email);
	s_str_wipe_free(k->pem);
	free(k->kid);
	free(k->token_uri);
	memset(k, 0, sizeof(*k));
}

/* Printable ASCII without spaces: what may go into a header, a URL or a log line as is. */
static int s_visible(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

/* An absolute http or https URL with a host, nothing curl would have to guess about. */
static int s_url_ok(const char *u)
{
	size_t skip;

	if (strncasecmp(u, "https://", 8) == 0)
		skip = 8;
	else if (strncasecmp(u, "http://", 7) == 0)
		skip = 7;
	else
		return 0;
	return strlen(u) < S_URL_MAX && s_visible(u) && strcspn(u + skip, "/?#") > 0;
}

/* The string member `name` of j, or NULL when it is absent or not a string. */
static const char *s_string(const cJSON *j, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* An encrypted key would make OpenSSL ask for a passphrase on the terminal. */
static int s_no_passphrase(char *buf, int size, int rwflag, void *ud)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)ud;
	return -1;
}

/* Reads an unencrypted RSA private key from PEM text. Returns 0, RR_EINVAL or RR_ENOMEM. */
static int s_load_pkey(const char *pem, EVP_PKEY **out)
{
	EVP_PKEY *pkey;
	BIO *bio;
	int bits;

	*out = NULL;
	bio = BIO_new_mem_buf(pem, (int)strlen(pem)); /* a view, not a copy of the secret */
	if (!bio)
		return RR_ENOMEM;
	pkey = PEM_read_bio_PrivateKey(bio, NULL, s_no_passphrase, NULL);
	BIO_free(bio);
	/* OpenSSL's error queue is per thread and curl reads it: leave nothing behind. */
	ERR_clear_error();
	if (!pkey)
		return RR_EINVAL;
	bits = EVP_PKEY_get_bits(pkey);
	if (!EVP_PKEY_is_a(pkey, "RSA") || bits < S_RSA_MIN_BITS || bits > S_RSA_MAX_BITS) {
		EVP_PKEY_free(pkey);
		return RR_EINVAL;
	}
	*out = pkey;
	return 0;
}

/* The other credential types Google's tools write, or NULL; nothing else is repeated,
 * since a mangled file can put any of its text (the key's too) where the type should be. */
static const char *s_known_type(const char *type)
{
	static const char *const known[] = {
		"authorized_user", "external_account", "external_account_authorized_user",
		"impersonated_service_account", "gdch_service_account",
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(type, known[i]) == 0)
			return known[i];
	return NULL;
}

/* Parses and checks a service-account key file into k and, when pkey_out is not NULL, its
 * private key into *pkey_out (the caller frees both). Reasons name the field and show no
 * text of the file. Returns 0, RR_EINVAL or RR_ENOMEM. */
static int s_key_parse(const char *json, size_t len, struct s_key *k, EVP_PKEY **pkey_out,
		       char *why, size_t cap)
{
	char jwhy[256] = "";
	const char *type, *email, *pem, *uri, *kid = NULL;
	const cJSON *kid_item;
	EVP_PKEY *pkey = NULL;
	cJSON *j = NULL;
	int rc;

	memset(k, 0, sizeof(*k));
	if (pkey_out)
		*pkey_out = NULL;
	if (len > S_KEY_FILE_MAX)
		return rr_fail(why, cap, RR_EINVAL, "the key file is larger than %u KiB",
			      S_KEY_FILE_MAX >> 10);
	rc = rr_json_parse_object("the key file", json, len, &j, jwhy, sizeof(jwhy));
	if (rc == RR_ENOMEM)
		return rc;
	if (rc)
		return rr_fail(why, cap, RR_EINVAL, "%s", jwhy);
	type = s_string(j, "type");
	email = s_string(j, "client_email");
	pem = s_string(j, "private_key");
	uri = s_string(j, "token_uri");
	kid_item = cJSON_GetObjectItemCaseSensitive(j, "private_key_id");
	if (!type) {
		rc = rr_fail(why, cap, RR_EINVAL, "the key file has no \"type\" string");
		goto out;
	}
	if (strcmp(type, "service_account") != 0) {
		const char *known = s_known_type(type);
		if (known)
			rc = rr_fail(why, cap, RR_EINVAL, "the key file's \"type\" is \"%s\", not "
				    "\"service_account\"", known);
		else
			rc = rr_fail(why, cap, RR_EINVAL, "the key file's \"type\" is not "
				    "\"service_account\"");
		goto out;
	}
	if (!email || !*email) {
		rc = rr_fail(why, cap, RR_EINVAL, "the key file has no \"client_email\"");
		goto out;
	}
	if (!s_visible(email)) {
		rc = rr_fail(why, cap, RR_EINVAL, "the key file's \"client_email\" holds a space, "
			    "a control character or non-ASCII text");
		goto out;
	}
	if (!pem || !*pem) {
		rc = rr_fail(why, cap, RR_EINVAL, "the key file has no \"private_key\"");
		goto out;
	}
	if (!uri || !*uri) {
		rc = rr_fail(why, cap, RR_EINVAL, "the key file has no \"token_uri\"");
		goto out;
	}
	if (!s_url_ok(uri)) {
		rc = rr_fail(why, cap, RR_EINVAL, "the key file's \"token_uri\" is not an http "
			    "or https URL");
		goto out;
	}
	if (kid_item && !cJSON_IsNull(kid_item)) {
		kid = cJSON_IsString(kid_item) ? kid_item->valuestring : NULL;
		if (!kid || !s_visible(kid)) {
			rc = rr_fail(why, cap, RR_EINVAL, "the key file's \"private_key_id\" is not "
				    "a string of printable ASCII");
			goto out;
		}
		if (!*kid)
			kid = NULL;
	}
	rc = s_load_pkey(pem, &pkey);
	if (rc == RR_EINVAL)
		rc = rr_fail(why, cap, RR_EINVAL, "the key file's \"private_key\" is not an "
			    "unencrypted PEM RSA private key of %d to %d bits", S_RSA_MIN_BITS,
			    S_RSA_MAX_BITS);
	if (rc)
		goto out;
	k->email = strdup(email);
	k->pem = strdup(pem);
	k->kid = kid ? strdup(kid) : NULL;
	k->token_uri = strdup(uri);
	if (!k->email || !k->pem || !k->token_uri || (kid && !k->kid)) {
		rc = RR_ENOMEM;
		goto out;
	}
	if (pkey_out) {
		*pkey_out = pkey;
		pkey = NULL;
	}
out:
	EVP_PKEY_free(pkey);
	rr_json_wipe_delete(j);
	if (rc)
		s_key_free(k);
	return rc;
}

static size_t s_b64url_len(size_t n)
{
	return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
}

/* Appends the base64url encoding of p[0..n) to out, without padding (RFC 7515 §2). */
static int s_b64url_append(struct rr_buf *out, const unsigned char *p, size_t n)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t need = s_b64url_len(n), i;
	unsigned char *o;
	uint32_t v;
	int rc;

	rc = rr_buf_reserve(out, need);
	if (rc)
		return rc;
	o = out->data + out->len;
	for (i = 0; i + 3 <= n; i += 3) {
		v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = (unsigned char)tbl[v >> 18];
		*o++ = (unsigned char)tbl[(v >> 12) & 63];
		*o++ = (unsigned char)tbl[(v >> 6) & 63];
		*o++ = (unsigned char)tbl[v & 63];
	}
	if (n - i == 1) {
		v = (uint32_t)p[i] << 16;
		*o++ = (unsigned char)tbl[v >> 18];
		*o++ = (unsigned char)tbl[(v >> 12) & 63];
	} else if (n - i == 2) {
		v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		*o++ = (unsigned char)tbl[v >> 18];
		*o++ = (unsigned char)tbl[(v >> 12) & 63];
		*o++ = (unsigned char)tbl[(v >> 6) & 63];
	}
	out->len += need;
	out->data[out->len] = '\0';
	return 0;
}

/* The JWT header and claims, compact JSON (the caller frees both with cJSON_free). */
static int s_jwt_json(const struct s_key *k, int64_t now, const char *scope, char **header,
		      char **claims)
{
	cJSON *h = cJSON_CreateObject(), *c = cJSON_CreateObject();
	int ok = h && c;

	*header = *claims = NULL;
	ok = ok && cJSON_AddStringToObject(h, "alg", "RS256");
	ok = ok && cJSON_AddStringToObject(h, "typ", "JWT");
	ok = ok && (!k->kid || cJSON_AddStringToObject(h, "kid", k->kid));
	ok = ok && cJSON_AddStringToObject(c, "iss", k->email);
	ok = ok && cJSON_AddStringToObject(c, "scope", scope);
	ok = ok && cJSON_AddStringToObject(c, "aud", k->token_uri);
	/* Whole seconds below 2^53 print as integers. */
	ok = ok && cJSON_AddNumberToObject(c, "iat", (double)now);
	ok = ok && cJSON_AddNumberToObject(c, "exp", (double)(now + S_JWT_LIFETIME_S));
	if (ok) {
		*header = cJSON_PrintUnformatted(h);
		*claims = cJSON_PrintUnformatted(c);
	}
	cJSON_Delete(h);
	cJSON_Delete(c);
	if (*header && *claims)
		return 0;
	cJSON_free(*header);
	cJSON_free(*claims);
	*header = *claims = NULL;
	return RR_ENOMEM;
}

/* Builds "b64(header).b64(claims).b64(RS256 signature)" into out (replacing it). The room
 * is reserved first, so the signed token is never left behind in a reallocated block.
 * Returns 0, RR_ENOMEM, RR_ETOOBIG (out's ceiling) or RR_EIO (OpenSSL refused to sign). */
static int s_jwt_build(const struct s_key *k, EVP_PKEY *pkey, int64_t now, const char *scope,
		       struct rr_buf *out, char *why, size_t cap)
{
	char *header = NULL, *claims = NULL;
	unsigned char *sig = NULL;
	EVP_MD_CTX *ctx = NULL;
	size_t hlen, clen, siglen;
	int rc, size = EVP_PKEY_get_size(pkey);

	rr_buf_reset(out);
	if (size <= 0)
		return rr_fail(why, cap, RR_EIO, "OpenSSL cannot tell the RSA signature size");
	rc = s_jwt_json(k, now, scope, &header, &claims);
	if (rc)
		goto out;
	hlen = strlen(header);
	clen = strlen(claims);
	siglen = (size_t)size;
	rc = rr_buf_reserve(out, s_b64url_len(hlen) + 1 + s_b64url_len(clen) + 1 +
				 s_b64url_len(siglen));
	if (!rc)
		rc = s_b64url_append(out, (const unsigned char *)header, hlen);
	if (!rc)
		rc = rr_buf_append(out, ".", 1);
	if (!rc)
		rc = s_b64url_append(out, (const unsigned char *)claims, clen);
	if (rc)
		goto out;
	ctx = EVP_MD_CTX_new();
	sig = malloc(siglen);
	if (!ctx || !sig) {
		rc = RR_ENOMEM;
		goto out;
	}
	if (EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, pkey) != 1 ||
	    EVP_DigestSign(ctx, sig, &siglen, out->data, out->len) != 1) {
		ERR_clear_error();
		rc = rr_fail(why, cap, RR_EIO, "OpenSSL refused to sign the JWT");
		goto out;
	}
	rc = rr_buf_append(out, ".", 1);
	if (!rc)
		rc = s_b64url_append(out, sig, siglen);
out:
	if (rc)
		rr_buf_reset(out);
	EVP_MD_CTX_free(ctx);
	free(sig);
	cJSON_free(header);
	cJSON_free(claims);
	return rc;
}

int rr_gcs_jwt(const char *key_json, size_t len, int64_t now, const char *scope,
	       struct rr_buf *out, char *why, size_t cap)
{
	struct s_key k;
	EVP_PKEY *pkey = NULL;
	int rc;

	if (why && cap)
		why[0] = '\0';
	if (!out || (!key_json && len))
		return rr_fail(why, cap, RR_EINVAL, "no key file text or no output buffer");
	rr_buf_reset(out);
	if (now < 0 || now > S_NOW_MAX)
		return rr_fail(why, cap, RR_EINVAL, "the time %lld is out of range",
			      (long long)now);
	rc = s_key_parse(key_json ? key_json : "", len, &k, &pkey, why, cap);
	if (rc)
		return rc;
	rc = s_jwt_build(&k, pkey, now, scope ? scope : RR_GCS_SCOPE, out, why, cap);
	EVP_PKEY_free(pkey);
	s_key_free(&k);
	return rc;
}

/* ---- fetching a token ---- */

/* Reads a whole token answer (200). The access token is checked for what an Authorization
 * header can carry; reasons never show it. Returns 0, RR_EIO or RR_ENOMEM. */
static int s_read_token(const char *step, const struct rr_http_response *resp,
			char token[RR_GCS_TOKEN_MAX], double *expires_s, char *why, size_t cap)
{
	char jwhy[256] = "", q[RR_QUOTE_CAP];
	const char *access, *type;
	const cJSON *exp;
	cJSON *j = NULL;
	size_t n;
	int rc;

	rc = rr_json_parse_object("the token answer", (const char *)resp->body.data,
				  resp->body.len, &j, jwhy, sizeof(jwhy));
	if (rc == RR_ENOMEM)
		return rc;
	if (rc)
		return rr_fail(why, cap, RR_EIO, "%s: %s", step, jwhy);
	access = s_string(j, "access_token");
	type = s_string(j, "token_type");
	exp = cJSON_GetObjectItemCaseSensitive(j, "expires_in");
	n = access ? strlen(access) : 0;
	if (n == 0 || n >= RR_GCS_TOKEN_MAX || !s_visible(access)) {
		rc = rr_fail(why, cap, RR_EIO, "%s: the answer's \"access_token\" is missing, "
			    "empty, longer than %d bytes, or holds a space or control character",
			    step, RR_GCS_TOKEN_MAX - 1);
		goto out;
	}
	if (!cJSON_IsNumber(exp) || !(exp->valuedouble > 0)) {
		rc = rr_fail(why, cap, RR_EIO, "%s: the answer's \"expires_in\" is not a positive "
			    "number", step);
		goto out;
	}
	if (!type || strcasecmp(type, "Bearer") != 0) {
		rc = rr_fail(why, cap, RR_EIO, "%s: the answer's \"token_type\" is %s, not "
			    "\"Bearer\"", step, type ? rr_quote_str(q, type) : "missing");
		goto out;
	}
	memcpy(token, access, n + 1);
	*expires_s = exp->valuedouble < S_EXPIRES_MAX_S ? exp->valuedouble : S_EXPIRES_MAX_S;
out:
	rr_json_wipe_delete(j);
	return rc;
}

/* Maps an answer other than 200: 400, 401 and 403 are refusals (RR_EACCES), anything else
 * a server that answered badly (RR_EIO). The OAuth "error" and "error_description" are
 * quoted when the body has them. */
static int s_refusal(const char *step, const struct rr_http_response *resp, char *why,
		     size_t cap)
{
	char qerr[RR_QUOTE_CAP], qdesc[RR_QUOTE_CAP];
	const char *err = NULL, *desc = NULL;
	int refused = resp->status == 400 || resp->status == 401 || resp->status == 403;
	int rc = refused ? RR_EACCES : RR_EIO;
	cJSON *j = NULL;

	if (rr_json_parse_object("the error answer", (const char *)resp->body.data,
				 resp->body.len, &j, NULL, 0) == 0) {
		err = s_string(j, "error");
		desc = s_string(j, "error_description");
	}
	if (err)
		rr_fail(why, cap, rc, "%s: %s %ld: %s: %s", step,
		       refused ? "refused with" : "answered", resp->status, rr_quote_str(qerr, err),
		       desc ? rr_quote_str(qdesc, desc) : "(no error_description)");
	else
		rr_fail(why, cap, rc, "%s: %s %ld without an OAuth error", step,
		       refused ? "refused with" : "answered", resp->status);
	rr_json_wipe_delete(j);
	return rc;
}

/* Learns the token endpoint's clock from its answer's Date (one-second resolution: a
 * difference within S_CLOCK_NOISE_S is none). Returns 1 when that moved the JWT's clock by
 * more than S_CLOCK_MOVED_S: a JWT refused for its iat/exp may then pass. */
static int s_learn_clock(struct rr_gcs_auth *a, const struct rr_http_response *resp)
{
	const char *date = rr_http_response_header(resp, "Date");
	int64_t server, offset, before = a->clock_offset_s;

	if (!date || rr_rfc1123_to_unix(date, &server))
		return 0;
	offset = server - rr_wall_ms() / 1000;
	if (offset >= -S_CLOCK_NOISE_S && offset <= S_CLOCK_NOISE_S)
		offset = 0;
	a->clock_offset_s = offset;
	return offset - before > S_CLOCK_MOVED_S || before - offset > S_CLOCK_MOVED_S;
}

/* One exchange of a JWT dated by the token endpoint's clock as last learned (Google refuses
 * an iat or exp far from its own: "invalid_grant", "Invalid JWT: Token must be a
 * short-lived token (60 minutes) and in a reasonable timeframe"). *moved: its answer moved
 * that clock (s_learn_clock). */
static int s_exchange(struct rr_gcs_auth *a, EVP_PKEY *pkey, const char *step,
		      char token[RR_GCS_TOKEN_MAX], double *expires_s, int *moved, char *why,
		      size_t cap)
{
	/* grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer, form-encoded */
	static const char grant[] = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3A"
				    "jwt-bearer&assertion=";
	struct rr_http_header hdrs[] = {
		{ "Content-Type", "application/x-www-form-urlencoded" },
		{ "Accept", "application/json" },
	};
	struct rr_http_request req;
	struct rr_http_response resp;
	struct rr_buf jwt, body;
	int rc;

	*moved = 0;
	/* The assertion is a credential for an hour: both buffers are wiped. */
	rr_buf_init(&jwt, S_JWT_MAX);
	rr_buf_init(&body, sizeof(grant) + 3 * S_JWT_MAX);
	rr_http_response_init(&resp);
	rc = s_jwt_build(&a->key, pkey, rr_wall_ms() / 1000 + a->clock_offset_s, RR_GCS_SCOPE,
			 &jwt, why, cap);
	if (rc) {
		if (rc == RR_ETOOBIG)
			rc = rr_fail(why, cap, RR_EIO, "%s: the JWT is too large", step);
		goto out;
	}
	/* The JWT's alphabet needs no encoding, but the form's rules are kept anyway. */
	rc = rr_buf_reserve(&body, sizeof(grant) + 3 * jwt.len);
	if (!rc)
		rc = rr_buf_append(&body, grant, sizeof(grant) - 1);
	if (!rc)
		rc = rr_sigv4_uri_encode(&body, (const char *)jwt.data, jwt.len, 0);
	if (rc)
		goto out;
	memset(&req, 0, sizeof(req));
	req.method = "POST";
	req.url = a->key.token_uri;
	req.headers = hdrs;
	req.nheaders = sizeof(hdrs) / sizeof(hdrs[0]);
	req.body = body.data;
	req.body_len = body.len;
	req.response_max = S_RESPONSE_MAX;
	req.timeout_ms = S_TIMEOUT_MS;
	rc = rr_http_perform(a->http, &req, &resp);
	if (rc == RR_ENOMEM)
		goto out;
	if (rc) {
		rc = rr_fail(why, cap, RR_EIO, "%s: no usable answer: %s", step,
			    resp.message[0] ? resp.message : rr_strerror(rc));
		goto out;
	}
	*moved = s_learn_clock(a, &resp);
	if (resp.status == 200)
		rc = s_read_token(step, &resp, token, expires_s, why, cap);
	else
		rc = s_refusal(step, &resp, why, cap);
out:
	rr_buf_wipe_free(&jwt);
	rr_buf_wipe_free(&body);
	rr_http_response_wipe_free(&resp);
	return rc;
}

/* Exchanges a fresh JWT at the key file's token_uri: once more, dated by the endpoint's
 * clock, when a refusal's Date says this machine's clock is off. */
static int s_fetch_service_account(struct rr_gcs_auth *a, char token[RR_GCS_TOKEN_MAX],
				   double *expires_s, char *why, size_t cap)
{
	char step[S_STEP_MAX], qe[RR_QUOTE_CAP], qu[RR_QUOTE_CAP];
	EVP_PKEY *pkey = NULL;
	int rc, moved;

	snprintf(step, sizeof(step), "service account %s at %s", rr_quote_str(qe, a->key.email),
		 rr_quote_str(qu, a->key.token_uri));
	rc = s_load_pkey(a->key.pem, &pkey);
	if (rc)
		return rr_fail(why, cap, rc == RR_ENOMEM ? rc : RR_EIO,
			       "%s: the private key no longer loads", step);
	rc = s_exchange(a, pkey, step, token, expires_s, &moved, why, cap);
	if (rc == RR_EACCES && moved) {
		rr_warn("%s refused the JWT and says this machine's clock is off by %lld s: the "
			"JWT is dated by its clock from now on; fix the clock (NTP)", step,
			(long long)a->clock_offset_s);
		rc = s_exchange(a, pkey, step, token, expires_s, &moved, why, cap);
	}
	EVP_PKEY_free(pkey);
	return rc;
}

/* Asks the metadata server for the default service account's token. An answer without
 * Metadata-Flavor: Google is not from the metadata server (a proxy, a captive portal). A
 * server never reached means there is none (RR_ENOENT); once one has answered, a failure
 * to reach it is an outage (RR_EIO). */
static int s_fetch_metadata(struct rr_gcs_auth *a, char token[RR_GCS_TOKEN_MAX],
			    double *expires_s, char *why, size_t cap)
{
	struct rr_http_request req;
	struct rr_http_response resp;
	char step[S_STEP_MAX], q[RR_QUOTE_CAP];
	int rc;

	/* The endpoint, not the whole URL: the quote would cut it short. */
	snprintf(step, sizeof(step), "metadata server %s",
		 rr_quote(q, a->metadata_url,
			  strlen(a->metadata_url) - (sizeof(S_METADATA_TOKEN_PATH) - 1)));
	rr_http_response_init(&resp);
	memset(&req, 0, sizeof(req));
	req.method = "GET";
	req.url = a->metadata_url;
	req.headers = &rr_gce_metadata_flavor;
	req.nheaders = 1;
	req.response_max = S_RESPONSE_MAX;
	req.timeout_ms = S_TIMEOUT_MS;
	rc = rr_http_perform(a->http, &req, &resp);
	if (rc == RR_ENOMEM)
		goto out;
	if (rc && resp.status == 0) {
		rc = rr_fail(why, cap, a->metadata_answered ? RR_EIO : RR_ENOENT,
			    "no GOOGLE_APPLICATION_CREDENTIALS, and no answer from the %s: %s",
			    step, resp.message[0] ? resp.message : rr_strerror(rc));
		goto out;
	}
	if (rc) {
		rc = rr_fail(why, cap, RR_EIO, "%s: no usable answer: %s", step,
			    resp.message[0] ? resp.message : rr_strerror(rc));
		goto out;
	}
	if (!rr_gce_metadata_answered(&resp)) {
		rc = rr_fail(why, cap, RR_EIO, "%s: the answer (%ld) has no Metadata-Flavor: "
			    "Google, so it is not from the metadata server", step, resp.status);
		goto out;
	}
	a->metadata_answered = 1;
	if (resp.status == 404)
		rc = rr_fail(why, cap, RR_ENOENT, "%s: this VM has no service account (404)",
			    step);
	else if (resp.status == 200)
		rc = s_read_token(step, &resp, token, expires_s, why, cap);
	else
		rc = s_refusal(step, &resp, why, cap);
out:
	rr_http_response_wipe_free(&resp);
	return rc;
}

int rr_gcs_auth_token(struct rr_gcs_auth *a, int force_refresh, char *token, size_t cap,
		      char *source, char *why, size_t wcap)
{
	char fresh[RR_GCS_TOKEN_MAX], fwhy[1024] = "";
	double expires_s = 0;
	int64_t now;
	size_t n;
	int rc = 0;

	if (why && wcap)
		why[0] = '\0';
	if (!a || !token || !cap)
		return rr_fail(why, wcap, RR_EINVAL, "no auth object or no token buffer");
	token[0] = '\0';
	if (source)
		snprintf(source, S_SOURCE_MAX, "%s", a->source);
	pthread_mutex_lock(&a->lock);
	/* Monotonic: expires_in is a duration, and a wall clock step must not stretch it. */
	now = rr_mono_ms();
	if (!a->have || force_refresh || a->expires_mono_ms - now < a->margin_ms) {
		if (a->have_key)
			rc = s_fetch_service_account(a, fresh, &expires_s, fwhy, sizeof(fwhy));
		else
			rc = s_fetch_metadata(a, fresh, &expires_s, fwhy, sizeof(fwhy));
		if (rc == 0) {
			if (!a->have)
				rr_debug("GCS access token from %s", a->source);
			OPENSSL_cleanse(a->token, sizeof(a->token));
			memcpy(a->token, fresh, strlen(fresh) + 1);
			/* From before the request: the token may have been issued then. */
			a->expires_mono_ms = now + (int64_t)(expires_s * 1000.0);
			a->have = 1;
			a->failure_logged = 0;
		} else if (a->have && !force_refresh && a->expires_mono_ms > now) {
			/* Still valid: a slow token endpoint must not stop uploads that the
			 * cached token can finish. */
			if (!a->failure_logged)
				rr_warn("refreshing the GCS access token failed (%s); using the "
					"one from %s until it expires", fwhy, a->source);
			a->failure_logged = 1;
			rc = 0;
		} else {
			rr_fail(why, wcap, rc, "%s", fwhy);
		}
	}
	if (rc == 0) {
		n = strlen(a->token);
		if (n < cap)
			memcpy(token, a->token, n + 1);
		else
			rc = rr_fail(why, wcap, RR_EINVAL, "the token buffer is too small (%zu "
				    "bytes; RR_GCS_TOKEN_MAX is enough)", cap);
	}
	pthread_mutex_unlock(&a->lock);
	OPENSSL_cleanse(fresh, sizeof(fresh));
	return rc;
}

/* ---- construction ---- */

/* Reads the key file into b (whose ceiling is S_KEY_FILE_MAX), reserving the whole ceiling
 * first so that no reallocation leaves a copy of the key behind. Returns 0, RR_ETOOBIG,
 * RR_ENOMEM, or RR_EIO with *errnum. */
static int s_read_key_file(const char *path, struct rr_buf *b, int *errnum)
{
	char chunk[4096];
	ssize_t n;
	int fd, rc;

	*errnum = 0;
	rc = rr_buf_reserve(b, S_KEY_FILE_MAX);
	if (rc)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*errnum = errno;
		return RR_EIO;
	}
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*errnum = errno;
			rc = RR_EIO;
			break;
		}
		if (n == 0)
			break;
		rc = rr_buf_append(b, chunk, (size_t)n);
		if (rc)
			break;
	}
	OPENSSL_cleanse(chunk, sizeof(chunk));
	close(fd);
	return rc;
}

/* 1 when a URL may carry a credential: https, or plain http to this machine or (metadata
 * is plain http by design, on a link-local address no router forwards) to the GCE
 * metadata server itself. */
static int s_url_may_carry_secret(const char *u, int metadata)
{
	const char *host;

	if (strncasecmp(u, "https://", 8) == 0 || rr_url_host_is_loopback(u))
		return 1;
	if (!metadata || strncasecmp(u, "http://", 7) != 0)
		return 0;
	host = u + 7;
	return strncasecmp(host, RR_GCE_METADATA_HOST, strlen(RR_GCE_METADATA_HOST)) == 0 ?
		       strchr(":/", host[strlen(RR_GCE_METADATA_HOST)]) != NULL :
	       strncmp(host, "169.254.169.254", 15) == 0 ? strchr(":/", host[15]) != NULL : 0;
}

/* The metadata token URL: the endpoint given, else http://$GCE_METADATA_HOST (host[:port],
 * google-cloud-go's convention), else http://metadata.google.internal. */
static int s_metadata_url(const char *endpoint, char **out)
{
	char base[S_URL_MAX];
	size_t n;

	*out = NULL;
	if (rr_gce_metadata_base(endpoint, base, sizeof(base)) || !s_visible(base))
		return RR_EINVAL;
	n = strlen(base);
	*out = malloc(n + sizeof(S_METADATA_TOKEN_PATH));
	if (!*out)
		return RR_ENOMEM;
	memcpy(*out, base, n);
	memcpy(*out + n, S_METADATA_TOKEN_PATH, sizeof(S_METADATA_TOKEN_PATH));
	return 0;
}

int rr_gcs_auth_new(const struct rr_gcs_auth_opts *o, struct rr_gcs_auth **out, char *why,
		    size_t cap)
{
	const char *path = getenv("GOOGLE_APPLICATION_CREDENTIALS");
	char kwhy[512] = "", q[RR_QUOTE_CAP];
	struct rr_gcs_auth *a;
	struct rr_buf file;
	int rc, errnum;

	if (why && cap)
		why[0] = '\0';
	if (!out)
		return rr_fail(why, cap, RR_EINVAL, "no place for the result");
	*out = NULL;
	if (!o || !o->http || o->refresh_margin_ms < 0)
		return rr_fail(why, cap, RR_EINVAL, "GCS auth needs an HTTP client and a refresh "
			      "margin of 0 or more");
	a = calloc(1, sizeof(*a));
	if (!a)
		return RR_ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	a->http = o->http;
	a->margin_ms = o->refresh_margin_ms ? o->refresh_margin_ms : S_DEFAULT_MARGIN_MS;
	rr_buf_init(&file, S_KEY_FILE_MAX);
	if (path && *path) {
		rr_quote_str(q, path);
		rc = s_read_key_file(path, &file, &errnum);
		if (rc == RR_ETOOBIG)
			rc = rr_fail(why, cap, RR_EINVAL, "GOOGLE_APPLICATION_CREDENTIALS %s: the "
				    "key file is larger than %u KiB", q, S_KEY_FILE_MAX >> 10);
		else if (rc == RR_EIO)
			rc = rr_fail(why, cap, RR_EIO, "GOOGLE_APPLICATION_CREDENTIALS %s: cannot "
				    "read the key file: %s", q, strerror(errnum));
		if (rc)
			goto out;
		rc = s_key_parse((const char *)file.data, file.len, &a->key, NULL, kwhy,
				 sizeof(kwhy));
		if (rc) {
			rr_fail(why, cap, rc, "GOOGLE_APPLICATION_CREDENTIALS %s: %s", q,
			       rc == RR_ENOMEM ? rr_strerror(rc) : kwhy);
			goto out;
		}
		if (!s_url_may_carry_secret(a->key.token_uri, 0)) {
			rc = rr_fail(why, cap, RR_EINVAL, "GOOGLE_APPLICATION_CREDENTIALS %s: refusing "
				     "to send a signed assertion over plain http to %s (token_uri): "
				     "only https, or http to 127.0.0.1", q, a->key.token_uri);
			goto out;
		}
		a->have_key = 1;
		snprintf(a->source, sizeof(a->source), "service account %s", a->key.email);
	} else {
		rc = s_metadata_url(o->metadata_endpoint, &a->metadata_url);
		if (rc == RR_EINVAL)
			rr_fail(why, cap, rc, "the GCP metadata endpoint (the option, else "
			       "GCE_METADATA_HOST) is empty, too long or holds a space or control "
			       "character");
		if (!rc && !s_url_may_carry_secret(a->metadata_url, 1)) {
			rc = rr_fail(why, cap, RR_EINVAL, "refusing to fetch an OAuth token over "
				     "plain http from %s (the metadata endpoint, else "
				     "GCE_METADATA_HOST): only https, 127.0.0.1, or the metadata "
				     "server itself", a->metadata_url);
		}
		if (rc)
			goto out;
		snprintf(a->source, sizeof(a->source), "metadata server");
	}
out:
	rr_buf_wipe_free(&file);
	if (rc) {
		rr_gcs_auth_destroy(a);
		return rc;
	}
	*out = a;
	return 0;
}

void rr_gcs_auth_destroy(struct rr_gcs_auth *a)
{
	if (!a)
		return;
	OPENSSL_cleanse(a->token, sizeof(a->token));
	s_key_free(&a->key);
	free(a->metadata_url);
	pthread_mutex_destroy(&a->lock);
	free(a);
}
