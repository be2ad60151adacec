/* CUnit suite "store_s3": the S3 backend (storage/store/store_s3.c) against the in-process
 * HTTP server (http_fixture.h) playing S3 (AWS's SigV4 and S3 API references). The fake
 * checks every request's SigV4 signature the way S3 does (from the bytes that arrived, with
 * its own copy of the secret) and the body against x-amz-content-sha256, keeps objects in
 * memory, and speaks path-style or virtual-hosted addressing, ranged GETs with If-Match,
 * multipart uploads, ListObjectsV2 pages and DeleteObjects. Each test can put a hook in
 * front of it to inject failures. */
#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "rr/buf.h"
#include "rr/clock.h"
#include "rr/error.h"
#include "rr/store.h"
#include "store_s3.h"

#include "cunit_main.h"
#include "http_fixture.h"

#define S_AKID "AKIDTESTEXAMPLE"
#define S_SECRET "fake/secret+KEY0123456789abcdefghijklmn"
#define S_REGION "us-west-2"
#define S_PART (5u << 20)
#define S_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define S_MAX_OBJS 64
#define S_MAX_PARTS 16
#define S_MAX_ARRIVALS 64
#define S_BIG ((size_t)12 << 20) /* three parts of 5 MiB, the last one short */
#define S_UPLOAD_ID "VXBsb2Fk.x-y_z~1/2+3=" /* needs encoding in a query */

/* A string assertion that fails, rather than crashes, when the string is missing. */
#define S_ASSERT_STR(actual, want)                                                        \
	do {                                                                              \
		const char *s_a_ = (actual);                                              \
		CU_ASSERT_PTR_NOT_NULL(s_a_);                                             \
		if (s_a_)                                                                 \
			CU_ASSERT_STRING_EQUAL(s_a_, (want));                             \
	} while (0)

/* ---- small helpers ---- */

static void s_hex(const unsigned char *d, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = '\0';
}

static void s_sha256_hex(const void *d, size_t n, char out[65])
{
	unsigned char md[SHA256_DIGEST_LENGTH];

	SHA256(d, n, md);
	s_hex(md, sizeof(md), out);
}

static void s_md5_base64(const void *d, size_t n, char out[25])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	EVP_Digest(d, n, md, &len, EVP_md5(), NULL);
	EVP_EncodeBlock((unsigned char *)out, md, (int)len);
}

static int s_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes n bytes of s into out (cap bytes). Returns 0, or -1 if malformed or long. */
static int s_pct_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;

	if (cap)
		out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -1;
			int hi = s_hexval(s[i + 1]), lo = s_hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			c = hi * 16 + lo;
			i += 2;
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

/* The SigV4 UriEncode (unreserved bytes kept, '/' kept when asked). */
static void s_uri_encode(struct rr_buf *b, const char *s, int keep_slash)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
		    (keep_slash && c == '/'))
			rr_buf_append(b, s, 1);
		else
			rr_buf_printf(b, "%%%02X", c);
	}
}

/* Value of query parameter `name` (decoded) into out; 1 if present. */
static int s_qparam(const char *query, const char *name, char *out, size_t cap)
{
	size_t nlen = strlen(name);
	const char *p = query;

	while (p && *p) {
		const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		size_t klen = (size_t)((eq ? eq : end) - p);
		if (klen == nlen && strncmp(p, name, nlen) == 0) {
			if (!eq) {
				out[0] = '\0';
				return 1;
			}
			return s_pct_decode(eq + 1, (size_t)(end - eq - 1), out, cap) == 0;
		}
		p = amp ? amp + 1 : NULL;
	}
	return 0;
}

/* Replaces the five XML entities in place. */
static void s_xml_unescape(char *s)
{
	static const struct { const char *ent; char c; } ents[] = {
		{ "&quot;", '"' }, { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' },
		{ "&apos;", '\'' },
	};
	char *w = s;

	while (*s) {
		size_t i;
		for (i = 0; i < 5; i++)
			if (strncmp(s, ents[i].ent, strlen(ents[i].ent)) == 0)
				break;
		if (i < 5) {
			*w++ = ents[i].c;
			s += strlen(ents[i].ent);
		} else {
			*w++ = *s++;
		}
	}
	*w = '\0';
}

/* Copies the text of the n-th (0-based) <tag>...</tag> of xml, unescaped; 1 if found. */
static int s_xml_nth(const char *xml, const char *tag, int n, char *out, size_t cap)
{
	char open[64], close[64];
	const char *p = xml, *end;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	for (int i = 0; p; i++) {
		p = strstr(p, open);
		if (!p)
			return 0;
		p += strlen(open);
		end = strstr(p, close);
		if (!end)
			return 0;
		if (i == n) {
			size_t len = (size_t)(end - p);
			if (len >= cap)
				return 0;
			memcpy(out, p, len);
			out[len] = '\0';
			s_xml_unescape(out);
			return 1;
		}
	}
	return 0;
}

/* A body of n bytes that differ from one position to the next. */
static unsigned char *s_pattern(size_t n, unsigned salt)
{
	unsigned char *p = malloc(n ? n : 1);

	for (size_t i = 0; p && i < n; i++)
		p[i] = (unsigned char)((i * 2654435761u + (i >> 13) + salt) >> 7);
	return p;
}

/* ---- SigV4 as S3 checks it ---- */

struct s_param {
	char name[256];
	char value[1024];
};

static int s_param_cmp(const void *a, const void *b)
{
	const struct s_param *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

static void s_hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
	unsigned int len = 32;

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &len);
}

/* Recomputes the signature of a recorded request from what arrived on the wire. Returns 0,
 * or -1 with the reason in why. */
static int s_sigv4_check(const struct fx_request *req, const char *secret, char *why,
			 size_t cap)
{
	const char *auth = fx_header(req, "Authorization"), *date = fx_header(req, "x-amz-date");
	const char *payload = fx_header(req, "x-amz-content-sha256"), *q, *p;
	char cred[256], signed_hdrs[1024], sig[80], scope[128], path[2048], creq_hash[65];
	char expect[65], key[256];
	struct s_param params[16];
	size_t nparams = 0;
	struct rr_buf creq, sts;
	unsigned char k[32];
	int rc = -1;

	if (!auth || !date || !payload) {
		snprintf(why, cap, "missing Authorization, x-amz-date or x-amz-content-sha256");
		return -1;
	}
	if (sscanf(auth, "AWS4-HMAC-SHA256 Credential=%255[^,], SignedHeaders=%1023[^,], "
			 "Signature=%79s", cred, signed_hdrs, sig) != 3) {
		snprintf(why, cap, "malformed Authorization '%s'", auth);
		return -1;
	}
	snprintf(scope, sizeof(scope), "%.8s/%s/s3/aws4_request", date, S_REGION);
	if (strncmp(cred, S_AKID "/", strlen(S_AKID) + 1) != 0 ||
	    strcmp(cred + strlen(S_AKID) + 1, scope) != 0) {
		snprintf(why, cap, "credential scope '%s' is not %s/%s", cred, S_AKID, scope);
		return -1;
	}
	if (!strstr(signed_hdrs, "host") || !strstr(signed_hdrs, "x-amz-content-sha256") ||
	    !strstr(signed_hdrs, "x-amz-date")) {
		snprintf(why, cap, "SignedHeaders '%s' lacks host/x-amz-*", signed_hdrs);
		return -1;
	}
	rr_buf_init(&creq, 1 << 20);
	rr_buf_init(&sts, 1 << 16);
	/* Method and path: S3 decodes the wire path and encodes it once again. */
	q = strchr(req->target, '?');
	if (s_pct_decode(req->target, q ? (size_t)(q - req->target) : strlen(req->target), path,
			 sizeof(path))) {
		snprintf(why, cap, "bad path encoding");
		goto out;
	}
	rr_buf_printf(&creq, "%s\n", req->method);
	s_uri_encode(&creq, path, 1);
	rr_buf_printf(&creq, "\n");
	/* Query: decoded, encoded again, sorted by name then value, '=' always. */
	for (p = q ? q + 1 : NULL; p && *p && nparams < 16;) {
		const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		struct s_param *x = &params[nparams++];
		if (s_pct_decode(p, (size_t)((eq ? eq : end) - p), x->name, sizeof(x->name)) ||
		    s_pct_decode(eq ? eq + 1 : end, eq ? (size_t)(end - eq - 1) : 0, x->value,
				 sizeof(x->value))) {
			snprintf(why, cap, "bad query encoding");
			goto out;
		}
		p = amp ? amp + 1 : NULL;
	}
	qsort(params, nparams, sizeof(params[0]), s_param_cmp);
	for (size_t i = 0; i < nparams; i++) {
		if (i)
			rr_buf_printf(&creq, "&");
		s_uri_encode(&creq, params[i].name, 0);
		rr_buf_printf(&creq, "=");
		s_uri_encode(&creq, params[i].value, 0);
	}
	rr_buf_printf(&creq, "\n");
	/* Headers, in the order SignedHeaders lists them (which must be sorted). */
	for (p = signed_hdrs; *p;) {
		const char *semi = strchr(p, ';');
		size_t n = semi ? (size_t)(semi - p) : strlen(p);
		char name[128];
		const char *v;
		snprintf(name, sizeof(name), "%.*s", (int)n, p);
		v = fx_header(req, name);
		if (!v) {
			snprintf(why, cap, "signed header %s was not sent", name);
			goto out;
		}
		rr_buf_printf(&creq, "%s:%s\n", name, v);
		p = semi ? semi + 1 : p + n;
	}
	rr_buf_printf(&creq, "\n%s\n%s", signed_hdrs, payload);
	s_sha256_hex(creq.data, creq.len, creq_hash);
	rr_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s\n%s", date, scope, creq_hash);
	snprintf(key, sizeof(key), "AWS4%s", secret);
	{
		char day[9];
		snprintf(day, sizeof(day), "%.8s", date);
		s_hmac(key, strlen(key), day, k);
	}
	s_hmac(k, 32, S_REGION, k);
	s_hmac(k, 32, "s3", k);
	s_hmac(k, 32, "aws4_request", k);
	{
		unsigned char sigbin[32];
		s_hmac(k, 32, (const char *)sts.data, sigbin);
		s_hex(sigbin, 32, expect);
	}
	if (strcmp(expect, sig) != 0) {
		snprintf(why, cap, "signature mismatch; canonical request was:\n%s",
			 (const char *)creq.data);
		goto out;
	}
	rc = 0;
out:
	rr_buf_free(&creq);
	rr_buf_free(&sts);
	return rc;
}

/* ---- the fake S3 ---- */

struct s_obj {
	char *key; /* full key, prefix included */
	unsigned char *data;
	size_t len;
	char etag[48];
};

/* One request, taken apart. */
struct s_target {
	int virtual_host;
	int bucket_only;  /* no key: a bucket operation */
	char key[1100];   /* decoded full key */
	const char *query; /* after '?', or "" */
};

struct s_fake;
/* A hook sees every correctly signed request first; returns 1 when it answered. */
typedef int (*s_hook)(struct s_fake *m, const struct s_target *t, const struct fx_request *req,
		      struct fx_response *resp);

struct s_fake {
	const char *secret;    /* the secret S3 knows (the client's may differ) */
	int skip_body_hash;
	s_hook hook;
	int hook_n;            /* scratch for hooks */
	char bad_sig[4096];    /* the last signature failure, for diagnosis */
	struct s_obj objs[S_MAX_OBJS];
	unsigned etag_seq;
	unsigned list_page;    /* keys per listing page (0: 1000) */
	unsigned lists;        /* listing requests answered */
	/* multipart */
	unsigned uploads, aborts, completes;
	unsigned char *part[S_MAX_PARTS + 1];
	size_t part_len[S_MAX_PARTS + 1];
	char part_etag[S_MAX_PARTS + 1][32];
	long part_delay_ms;
	long first_part_delay_ms; /* the first part's answer instead, when set */
	int64_t part_arrived[S_MAX_ARRIVALS];
	unsigned nparts_arrived;
};

static void s_error(struct fx_response *resp, int status, const char *code, const char *msg)
{
	char body[1024];

	snprintf(body, sizeof(body),
		 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s"
		 "</Message><RequestId>REQ123</RequestId></Error>", code, msg);
	fx_resp_header(resp, "Content-Type", "application/xml");
	fx_resp_text(resp, status, body);
}

static struct s_obj *s_find(struct s_fake *m, const char *key)
{
	for (int i = 0; i < S_MAX_OBJS; i++)
		if (m->objs[i].key && strcmp(m->objs[i].key, key) == 0)
			return &m->objs[i];
	return NULL;
}

static void s_obj_drop(struct s_obj *o)
{
	free(o->key);
	free(o->data);
	memset(o, 0, sizeof(*o));
}

/* Stores a copy of data under key (replacing) and returns the object. */
static struct s_obj *s_store(struct s_fake *m, const char *key, const void *data, size_t len)
{
	struct s_obj *o = s_find(m, key);

	if (!o)
		for (int i = 0; i < S_MAX_OBJS && !o; i++)
			if (!m->objs[i].key)
				o = &m->objs[i];
	if (!o)
		abort();
	s_obj_drop(o);
	o->key = strdup(key);
	o->data = malloc(len ? len : 1);
	if (len)
		memcpy(o->data, data, len);
	o->len = len;
	snprintf(o->etag, sizeof(o->etag), "\"etag-%u\"", ++m->etag_seq);
	return o;
}

/* The ETag of a stored object, or "(absent)". */
static const char *s_etag_of(struct s_fake *m, const char *key)
{
	const struct s_obj *o = s_find(m, key);

	return o ? o->etag : "(absent)";
}

/* Whether key holds exactly these bytes. */
static int s_holds(struct s_fake *m, const char *key, const void *data, size_t len)
{
	const struct s_obj *o = s_find(m, key);

	return o && o->len == len && (len == 0 || memcmp(o->data, data, len) == 0);
}

static void s_fake_free(struct s_fake *m)
{
	for (int i = 0; i < S_MAX_OBJS; i++)
		s_obj_drop(&m->objs[i]);
	for (int i = 0; i <= S_MAX_PARTS; i++) {
		free(m->part[i]);
		m->part[i] = NULL;
	}
}

static int s_parse_target(const struct fx_request *req, struct s_target *t)
{
	const char *host = fx_header(req, "Host"), *q = strchr(req->target, '?');
	size_t plen = q ? (size_t)(q - req->target) : strlen(req->target);
	const char *path = req->target;

	memset(t, 0, sizeof(*t));
	t->query = q ? q + 1 : "";
	t->virtual_host = host && strncmp(host, "bkt.", 4) == 0;
	if (!t->virtual_host) {
		if (plen < 4 || strncmp(path, "/bkt", 4) != 0 || (plen > 4 && path[4] != '/'))
			return -1;
		path += 4;
		plen -= 4;
	}
	if (plen <= 1) {
		t->bucket_only = 1;
		return 0;
	}
	return s_pct_decode(path + 1, plen - 1, t->key, sizeof(t->key));
}

static void s_answer_list(struct s_fake *m, const struct s_target *t, struct fx_response *resp)
{
	char prefix[1100] = "", token[256] = "", maxk[16] = "";
	unsigned start = 0, page = m->list_page ? m->list_page : 1000, n = 0, i, seen = 0;
	const struct s_obj *match[S_MAX_OBJS];
	unsigned nmatch = 0;
	struct rr_buf b;

	if (++m->lists > 50) {
		/* A client that does not follow the token would ask forever: fail, not hang. */
		s_error(resp, 400, "TooManyListings", "the test fake stops here");
		return;
	}
	s_qparam(t->query, "prefix", prefix, sizeof(prefix));
	if (s_qparam(t->query, "max-keys", maxk, sizeof(maxk)) && (unsigned)atoi(maxk) < page)
		page = (unsigned)atoi(maxk);
	if (s_qparam(t->query, "continuation-token", token, sizeof(token)) &&
	    sscanf(token, "tok/%u+=", &start) != 1) {
		s_error(resp, 400, "InvalidArgument", "The continuation token is incorrect");
		return;
	}
	/* Keys in order, as S3 lists them. */
	for (i = 0; i < S_MAX_OBJS; i++)
		if (m->objs[i].key && strncmp(m->objs[i].key, prefix, strlen(prefix)) == 0)
			match[nmatch++] = &m->objs[i];
	for (i = 1; i < nmatch; i++)
		for (unsigned j = i; j > 0 && strcmp(match[j - 1]->key, match[j]->key) > 0; j--) {
			const struct s_obj *x = match[j];
			match[j] = match[j - 1];
			match[j - 1] = x;
		}
	rr_buf_init(&b, 1 << 20);
	rr_buf_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult "
		      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>bkt</Name><Prefix>%s"
		      "</Prefix>", prefix);
	for (i = start; i < nmatch && n < page; i++, n++) {
		rr_buf_printf(&b, "<Contents><Key>%s</Key><LastModified>2024-05-01T10:00:%02u.000Z"
			      "</LastModified><ETag>&quot;x&quot;</ETag><Size>%zu</Size>"
			      "<StorageClass>STANDARD</StorageClass></Contents>", match[i]->key, i,
			      match[i]->len);
		seen++;
	}
	rr_buf_printf(&b, "<KeyCount>%u</KeyCount><MaxKeys>%u</MaxKeys>", seen, page);
	if (i < nmatch)
		rr_buf_printf(&b, "<IsTruncated>true</IsTruncated><NextContinuationToken>tok/%u+="
			      "</NextContinuationToken>", i);
	else
		rr_buf_printf(&b, "<IsTruncated>false</IsTruncated>");
	rr_buf_printf(&b, "</ListBucketResult>");
	fx_resp_header(resp, "Content-Type", "application/xml");
	fx_resp_body(resp, b.data, b.len);
	resp->status = 200;
	rr_buf_free(&b);
}

static void s_answer_get(struct s_fake *m, const struct s_target *t, const struct fx_request *req,
			 struct fx_response *resp)
{
	struct s_obj *o = s_find(m, t->key);
	const char *range = fx_header(req, "Range"), *im = fx_header(req, "If-Match");
	unsigned long long a, b;

	if (!o) {
		if (strcmp(req->method, "HEAD") == 0)
			resp->status = 404;
		else
			s_error(resp, 404, "NoSuchKey", "The specified key does not exist.");
		return;
	}
	if (im && strcmp(im, o->etag) != 0) {
		s_error(resp, 412, "PreconditionFailed", "At least one of the preconditions you "
			"specified did not hold.");
		return;
	}
	fx_resp_header(resp, "ETag", "%s", o->etag);
	fx_resp_header(resp, "Last-Modified", "Wed, 01 May 2024 10:00:00 GMT");
	if (range && strcmp(req->method, "GET") == 0) {
		int n = sscanf(range, "bytes=%llu-%llu", &a, &b);
		if (n < 1)
			b = (unsigned long long)-1;
		if (n == 1)
			b = o->len ? o->len - 1 : 0;
		if (a >= o->len) {
			s_error(resp, 416, "InvalidRange", "The range is not satisfiable");
			return;
		}
		if (b >= o->len)
			b = o->len - 1;
		fx_resp_header(resp, "Content-Range", "bytes %llu-%llu/%zu", a, b, o->len);
		fx_resp_body(resp, o->data + a, (size_t)(b - a + 1));
		resp->status = 206;
		return;
	}
	fx_resp_body(resp, o->data, o->len);
	resp->status = 200;
}

static void s_answer_put(struct s_fake *m, const struct s_target *t, const struct fx_request *req,
			 struct fx_response *resp)
{
	struct s_obj *o = s_find(m, t->key);
	const char *inm = fx_header(req, "If-None-Match"), *im = fx_header(req, "If-Match");

	if (inm && strcmp(inm, "*") == 0 && o) {
		s_error(resp, 412, "PreconditionFailed", "At least one of the pre-conditions you "
			"specified did not hold");
		return;
	}
	if (im && !o) {
		s_error(resp, 404, "NoSuchKey", "The specified key does not exist.");
		return;
	}
	if (im && strcmp(im, o->etag) != 0) {
		s_error(resp, 412, "PreconditionFailed", "At least one of the pre-conditions you "
			"specified did not hold");
		return;
	}
	o = s_store(m, t->key, req->body, req->body_len);
	fx_resp_header(resp, "ETag", "%s", o->etag);
	resp->status = 200;
}

static void s_answer_part(struct s_fake *m, const struct s_target *t,
			  const struct fx_request *req, struct fx_response *resp)
{
	char num[16], id[256];
	unsigned n;

	if (!s_qparam(t->query, "uploadId", id, sizeof(id)) || strcmp(id, S_UPLOAD_ID) != 0) {
		s_error(resp, 404, "NoSuchUpload", "The specified upload does not exist.");
		return;
	}
	if (!s_qparam(t->query, "partNumber", num, sizeof(num)) || (n = (unsigned)atoi(num)) < 1 ||
	    n > S_MAX_PARTS) {
		s_error(resp, 400, "InvalidArgument", "Part number must be an integer");
		return;
	}
	if (m->nparts_arrived < S_MAX_ARRIVALS)
		m->part_arrived[m->nparts_arrived++] = rr_mono_ms();
	resp->delay_ms = m->nparts_arrived == 1 && m->first_part_delay_ms ? m->first_part_delay_ms
									    : m->part_delay_ms;
	free(m->part[n]);
	m->part[n] = malloc(req->body_len ? req->body_len : 1);
	memcpy(m->part[n], req->body, req->body_len);
	m->part_len[n] = req->body_len;
	snprintf(m->part_etag[n], sizeof(m->part_etag[n]), "\"part-%u-%zu\"", n, req->body_len);
	fx_resp_header(resp, "ETag", "%s", m->part_etag[n]);
	resp->status = 200;
}

static void s_answer_complete(struct s_fake *m, const struct s_target *t,
			      const struct fx_request *req, struct fx_response *resp)
{
	char id[256], etag[64], num[16];
	struct rr_buf all;
	struct s_obj *o;
	int i;

	if (!s_qparam(t->query, "uploadId", id, sizeof(id)) || strcmp(id, S_UPLOAD_ID) != 0) {
		s_error(resp, 404, "NoSuchUpload", "The specified upload does not exist.");
		return;
	}
	if (fx_header(req, "If-None-Match") && s_find(m, t->key)) {
		s_error(resp, 412, "PreconditionFailed", "At least one of the pre-conditions you "
			"specified did not hold");
		return;
	}
	rr_buf_init(&all, 64u << 20);
	for (i = 0; s_xml_nth((const char *)req->body, "ETag", i, etag, sizeof(etag)); i++) {
		unsigned n = (unsigned)(i + 1);
		if (!s_xml_nth((const char *)req->body, "PartNumber", i, num, sizeof(num)) ||
		    (unsigned)atoi(num) != n) {
			s_error(resp, 400, "InvalidPartOrder", "The list of parts was not in "
				"ascending order.");
			goto out;
		}
		if (n > S_MAX_PARTS || !m->part[n] || strcmp(etag, m->part_etag[n]) != 0) {
			s_error(resp, 400, "InvalidPart", "One or more of the parts could not be "
				"found.");
			goto out;
		}
		rr_buf_append(&all, m->part[n], m->part_len[n]);
	}
	m->completes++;
	o = s_store(m, t->key, all.data, all.len);
	snprintf(o->etag, sizeof(o->etag), "\"mp-%d\"", i);
	fx_resp_header(resp, "Content-Type", "application/xml");
	fx_resp_text(resp, 200, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<CompleteMultipartUploadResult "
		     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		     "<Location>http://x/bkt/k</Location><Bucket>bkt</Bucket><Key>k</Key>"
		     "<ETag>&quot;mp&quot;</ETag></CompleteMultipartUploadResult>");
out:
	rr_buf_free(&all);
}

static void s_answer_delete_many(struct s_fake *m, const struct fx_request *req,
				 struct fx_response *resp)
{
	const char *md5 = fx_header(req, "Content-MD5");
	char want[25], key[1100];
	struct s_obj *o;

	s_md5_base64(req->body, req->body_len, want);
	if (!md5 || strcmp(md5, want) != 0) {
		s_error(resp, 400, "InvalidDigest", "The Content-MD5 you specified was invalid.");
		return;
	}
	for (int i = 0; s_xml_nth((const char *)req->body, "Key", i, key, sizeof(key)); i++)
		if ((o = s_find(m, key)) != NULL)
			s_obj_drop(o);
	fx_resp_text(resp, 200, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeleteResult "
		     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"></DeleteResult>");
}

static void s_fake_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	struct s_fake *m = ud;
	const char *sha = fx_header(req, "x-amz-content-sha256");
	char got[65];
	struct s_target t;

	if (s_parse_target(req, &t)) {
		s_error(resp, 400, "InvalidURI", "Couldn't parse the specified URI.");
		return;
	}
	if (s_sigv4_check(req, m->secret ? m->secret : S_SECRET, m->bad_sig,
			  sizeof(m->bad_sig))) {
		s_error(resp, 403, "SignatureDoesNotMatch", "The request signature we calculated "
			"does not match the signature you provided. Check your key and signing "
			"method.");
		return;
	}
	s_sha256_hex(req->body, req->body_len, got);
	if (!m->skip_body_hash && (!sha || strcmp(sha, got) != 0)) {
		s_error(resp, 400, "XAmzContentSHA256Mismatch", "The provided "
			"'x-amz-content-sha256' header does not match what was computed.");
		return;
	}
	if (m->hook && m->hook(m, &t, req, resp))
		return;
	if (t.bucket_only) {
		if (strcmp(req->method, "GET") == 0 && strstr(t.query, "list-type=2"))
			s_answer_list(m, &t, resp);
		else if (strcmp(req->method, "POST") == 0 && strcmp(t.query, "delete") == 0)
			s_answer_delete_many(m, req, resp);
		else
			s_error(resp, 405, "MethodNotAllowed", "not here");
		return;
	}
	if (strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0) {
		s_answer_get(m, &t, req, resp);
	} else if (strcmp(req->method, "PUT") == 0) {
		if (strstr(t.query, "partNumber="))
			s_answer_part(m, &t, req, resp);
		else
			s_answer_put(m, &t, req, resp);
	} else if (strcmp(req->method, "POST") == 0 && strcmp(t.query, "uploads") == 0) {
		char body[512];
		m->uploads++;
		snprintf(body, sizeof(body), "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			 "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/"
			 "2006-03-01/\"><Bucket>bkt</Bucket><Key>%s</Key><UploadId>%s</UploadId>"
			 "</InitiateMultipartUploadResult>", t.key, S_UPLOAD_ID);
		fx_resp_text(resp, 200, body);
	} else if (strcmp(req->method, "POST") == 0 && strstr(t.query, "uploadId=")) {
		s_answer_complete(m, &t, req, resp);
	} else if (strcmp(req->method, "DELETE") == 0 && strstr(t.query, "uploadId=")) {
		m->aborts++;
		resp->status = 204;
	} else if (strcmp(req->method, "DELETE") == 0) {
		struct s_obj *o = s_find(m, t.key);
		if (o)
			s_obj_drop(o);
		resp->status = 204;
	} else {
		s_error(resp, 405, "MethodNotAllowed", "The specified method is not allowed.");
	}
}

/* ---- the environment of one test ---- */

struct s_env {
	struct s_fake m;
	struct fx_server srv;
	struct rr_store *s;
	char home[64];
	char path[128];
};

static void s_setenv_clean(struct s_env *e, const char *endpoint)
{
	static const char *const unset[] = {
		"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
		"AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_STS",
		"AWS_CA_BUNDLE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
		"AWS_ROLE_SESSION_NAME", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "RESUME_RUN_S3_PART_SIZE",
		"http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY",
	};

	for (size_t i = 0; i < sizeof(unset) / sizeof(unset[0]); i++)
		unsetenv(unset[i]);
	setenv("HOME", e->home, 1);
	snprintf(e->path, sizeof(e->path), "%s/no-config", e->home);
	setenv("AWS_CONFIG_FILE", e->path, 1);
	snprintf(e->path, sizeof(e->path), "%s/no-credentials", e->home);
	setenv("AWS_SHARED_CREDENTIALS_FILE", e->path, 1);
	setenv("AWS_ENDPOINT_URL", endpoint, 1);
	setenv("AWS_ACCESS_KEY_ID", S_AKID, 1);
	setenv("AWS_SECRET_ACCESS_KEY", S_SECRET, 1);
	setenv("AWS_REGION", S_REGION, 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

/* Starts the fake and sets the environment; the store is opened by s_open. */
static void s_start(struct s_env *e)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->home, sizeof(e->home), "/tmp/rr_test_s3_XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(e->home));
	CU_ASSERT_EQUAL_FATAL(fx_server_start(&e->srv, s_fake_handler, &e->m), 0);
	s_setenv_clean(e, e->srv.url);
}

static int s_open(struct s_env *e, const struct rr_store_opts *opts)
{
	return rr_store_open("s3://bkt/pre/fix", opts, &e->s);
}

/* s_start, then open with the part size of 5 MiB, and forget the probe. */
static void s_setup_opts(struct s_env *e, const struct rr_store_opts *opts)
{
	s_start(e);
	setenv("RESUME_RUN_S3_PART_SIZE", "5242880", 1);
	CU_ASSERT_EQUAL_FATAL(s_open(e, opts), 0);
	fx_server_reset(&e->srv);
}

static void s_setup(struct s_env *e)
{
	s_setup_opts(e, NULL);
}

static void s_teardown(struct s_env *e)
{
	rr_store_destroy(e->s);
	fx_server_stop(&e->srv);
	s_fake_free(&e->m);
	rmdir(e->home);
}

/* The query of a recorded request ("" when it has none). */
static const char *s_query(const struct fx_request *r)
{
	const char *q = strchr(r->target, '?');

	return q ? q + 1 : "";
}

/* Requests with this method whose query contains `needle` (NULL: any). */
static size_t s_count_query(struct fx_server *srv, const char *method, const char *needle)
{
	size_t n = 0;

	for (size_t i = 0; i < fx_server_nrequests(srv); i++) {
		const struct fx_request *r = fx_server_request(srv, i);
		const char *q = strchr(r->target, '?');
		if (strcmp(r->method, method) != 0)
			continue;
		if (needle && (!q || !strstr(q, needle)))
			continue;
		n++;
	}
	return n;
}

/* The last request with this method whose target starts with prefix, or NULL. */
static const struct fx_request *s_last(struct fx_server *srv, const char *method,
				       const char *prefix)
{
	const struct fx_request *found = NULL;

	for (size_t i = 0; i < fx_server_nrequests(srv); i++) {
		const struct fx_request *r = fx_server_request(srv, i);
		if (strcmp(r->method, method) == 0 &&
		    strncmp(r->target, prefix, strlen(prefix)) == 0)
			found = r;
	}
	return found;
}

/* ---- opening ---- */

static void test_open_probes_with_a_one_key_listing_of_the_prefix(void)
{
	struct s_env e;
	const struct fx_request *r;

	s_start(&e);
	CU_ASSERT_EQUAL_FATAL(s_open(&e, NULL), 0);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 1);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(r->method, "GET");
	CU_ASSERT_STRING_EQUAL(r->target, "/bkt?list-type=2&max-keys=1&prefix=pre%2Ffix%2F");
	CU_ASSERT_STRING_EQUAL(e.s->url, "s3://bkt/pre/fix");
	CU_ASSERT_STRING_EQUAL(e.s->vt->scheme, "s3");
	s_teardown(&e);
}

static void test_open_with_a_wrong_secret_is_eacces_naming_the_code_not_the_secret(void)
{
	static const char wrong[] = "wrong-SECRET-must-not-leak-0123456789";
	struct s_env e;
	const char *why;

	s_start(&e);
	setenv("AWS_SECRET_ACCESS_KEY", wrong, 1);
	CU_ASSERT_EQUAL(s_open(&e, NULL), RR_EACCES);
	CU_ASSERT_PTR_NULL(e.s);
	why = rr_store_strerror(RR_EACCES);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "SignatureDoesNotMatch"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "403"));
	CU_ASSERT_PTR_NULL(strstr(why, wrong));
	CU_ASSERT_PTR_NULL(strstr(why, S_SECRET));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 1); /* a 403 is not retried */
	s_teardown(&e);
}

static int s_hook_no_such_bucket(struct s_fake *m, const struct s_target *t,
				 const struct fx_request *req, struct fx_response *resp)
{
	(void)m;
	(void)t;
	(void)req;
	s_error(resp, 404, "NoSuchBucket", "The specified bucket does not exist");
	return 1;
}

static void test_open_of_a_missing_bucket_says_so(void)
{
	struct s_env e;
	const char *why;
	int rc;

	s_start(&e);
	e.m.hook = s_hook_no_such_bucket;
	rc = s_open(&e, NULL);
	CU_ASSERT(rc < 0);
	CU_ASSERT_NOT_EQUAL(rc, RR_ENOENT); /* not "no such key" */
	why = rr_store_strerror(rc);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "'bkt'"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "does not exist"));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 1);
	s_teardown(&e);
}

static int s_hook_wrong_region(struct s_fake *m, const struct s_target *t,
			       const struct fx_request *req, struct fx_response *resp)
{
	(void)m;
	(void)t;
	(void)req;
	fx_resp_header(resp, "x-amz-bucket-region", "eu-central-1");
	s_error(resp, 301, "PermanentRedirect", "The bucket you are attempting to access must "
		"be addressed using the specified endpoint.");
	return 1;
}

static void test_open_in_the_wrong_region_names_the_buckets_region(void)
{
	struct s_env e;
	const char *why;
	int rc;

	s_start(&e);
	e.m.hook = s_hook_wrong_region;
	rc = s_open(&e, NULL);
	CU_ASSERT(rc < 0);
	why = rr_store_strerror(rc);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "eu-central-1"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, S_REGION));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "AWS_REGION"));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 1);
	s_teardown(&e);
}

/* ---- addressing and signing ---- */

static void test_requests_are_path_style_and_signed_over_the_body_hash(void)
{
	struct s_env e;
	const struct fx_request *r;
	char host[64], sha[65];
	static const char data[] = "hello, checkpoint";

	s_setup(&e);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "dir/a b+c.bin", data, strlen(data), NULL, NULL), 0);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(r->method, "PUT");
	CU_ASSERT_STRING_EQUAL(r->target, "/bkt/pre/fix/dir/a%20b%2Bc.bin");
	snprintf(host, sizeof(host), "127.0.0.1:%d", e.srv.port);
	S_ASSERT_STR(fx_header(r, "Host"), host);
	CU_ASSERT_PTR_NOT_NULL(fx_header(r, "Authorization"));
	CU_ASSERT_PTR_NOT_NULL(fx_header(r, "x-amz-date"));
	CU_ASSERT_EQUAL(strlen(fx_header(r, "x-amz-date")), 16);
	s_sha256_hex(data, strlen(data), sha);
	S_ASSERT_STR(fx_header(r, "x-amz-content-sha256"), sha);
	CU_ASSERT_EQUAL(s_sigv4_check(r, S_SECRET, e.m.bad_sig, sizeof(e.m.bad_sig)), 0);
	CU_ASSERT_PTR_NULL(fx_header(r, "x-amz-security-token"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s_find(&e.m, "pre/fix/dir/a b+c.bin"));
	s_teardown(&e);
}

static void test_get_and_head_send_the_empty_body_hash(void)
{
	struct s_env e;
	struct rr_buf out;
	uint64_t size = 0;

	s_setup(&e);
	s_store(&e.m, "pre/fix/k", "abc", 3);
	rr_buf_init(&out, 1 << 20);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "k", &out, NULL), 0);
	CU_ASSERT_EQUAL(rr_store_head(e.s, "k", &size), 0);
	CU_ASSERT_EQUAL(size, 3);
	for (size_t i = 0; i < fx_server_nrequests(&e.srv); i++)
		S_ASSERT_STR(fx_header(fx_server_request(&e.srv, i), "x-amz-content-sha256"),
			     S_EMPTY_SHA256);
	rr_buf_free(&out);
	s_teardown(&e);
}

static void test_put_of_an_empty_object_then_get_it(void)
{
	struct s_env e;
	struct rr_buf out;
	char etag[RR_ETAG_MAX] = "";

	s_setup(&e);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "empty", "", 0, NULL, etag), 0);
	CU_ASSERT(s_holds(&e.m, "pre/fix/empty", "", 0));
	CU_ASSERT_STRING_EQUAL(etag, s_etag_of(&e.m, "pre/fix/empty"));
	rr_buf_init(&out, 1 << 20);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "empty", &out, NULL), 0);
	CU_ASSERT_EQUAL(out.len, 0);
	rr_buf_free(&out);
	s_teardown(&e);
}

static void test_put_signs_the_callers_sha256_instead_of_hashing(void)
{
	static const char fake_sha[] =
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	struct rr_put_opts po = { .sha256_hex = fake_sha };
	struct s_env e;
	const struct fx_request *r;

	s_setup(&e);
	e.m.skip_body_hash = 1; /* the fake value does not match the body: S3 would refuse */
	CU_ASSERT_EQUAL(rr_store_put(e.s, "chunk", "data", 4, &po, NULL), 0);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	S_ASSERT_STR(fx_header(r, "x-amz-content-sha256"), fake_sha);
	CU_ASSERT_EQUAL(s_sigv4_check(r, S_SECRET, e.m.bad_sig, sizeof(e.m.bad_sig)), 0);
	s_teardown(&e);
}

static void test_virtual_addressing_puts_the_bucket_in_the_host(void)
{
	struct rr_store_opts o = { .s3_addressing = "virtual" };
	struct s_env e;
	const struct fx_request *r;
	char endpoint[64], host[64];

	s_start(&e);
	snprintf(endpoint, sizeof(endpoint), "http://localhost:%d", e.srv.port);
	setenv("AWS_ENDPOINT_URL", endpoint, 1);
	CU_ASSERT_EQUAL_FATAL(s_open(&e, &o), 0);
	snprintf(host, sizeof(host), "bkt.localhost:%d", e.srv.port);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	S_ASSERT_STR(fx_header(r, "Host"), host);
	CU_ASSERT_STRING_EQUAL(r->target, "/?list-type=2&max-keys=1&prefix=pre%2Ffix%2F");
	CU_ASSERT_EQUAL(rr_store_put(e.s, "k", "v", 1, NULL, NULL), 0);
	r = fx_server_last(&e.srv, NULL);
	CU_ASSERT_STRING_EQUAL(r->method, "PUT");
	CU_ASSERT_STRING_EQUAL(r->target, "/pre/fix/k");
	S_ASSERT_STR(fx_header(r, "Host"), host);
	s_teardown(&e);
}

/* ---- conditional puts ---- */

static void test_put_if_none_match_sends_star_and_412_is_eexist(void)
{
	struct rr_put_opts po = { .if_none_match = 1 };
	struct s_env e;
	char etag[RR_ETAG_MAX] = "";

	s_setup(&e);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "manifest", "v1", 2, &po, etag), 0);
	CU_ASSERT_STRING_EQUAL(etag, s_etag_of(&e.m, "pre/fix/manifest"));
	CU_ASSERT_EQUAL(rr_store_put(e.s, "manifest", "v2", 2, &po, NULL), RR_EEXIST);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "PUT", NULL), 2); /* 412 is not retried */
	S_ASSERT_STR(fx_header(fx_server_last(&e.srv, NULL), "If-None-Match"), "*");
	CU_ASSERT(s_holds(&e.m, "pre/fix/manifest", "v1", 2));
	s_teardown(&e);
}

static void test_put_if_match_sends_the_etag_and_412_is_eprecond(void)
{
	struct s_env e;
	struct rr_put_opts po = { .if_match = "\"etag-old\"" };
	char etag[RR_ETAG_MAX] = "", etag2[RR_ETAG_MAX] = "";

	s_setup(&e);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "latest", "v1", 2, NULL, etag), 0);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "latest", "v2", 2, &po, NULL), RR_EPRECOND);
	S_ASSERT_STR(fx_header(fx_server_last(&e.srv, NULL), "If-Match"), "\"etag-old\"");
	po.if_match = etag;
	CU_ASSERT_EQUAL(rr_store_put(e.s, "latest", "v2", 2, &po, etag2), 0);
	S_ASSERT_STR(fx_header(fx_server_last(&e.srv, NULL), "If-Match"), etag);
	CU_ASSERT_STRING_NOT_EQUAL(etag, etag2);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "PUT", NULL), 3);
	s_teardown(&e);
}

/* ---- get, head, del ---- */

static void test_get_returns_body_and_etag(void)
{
	struct s_env e;
	struct rr_buf out;
	char etag[RR_ETAG_MAX] = "";

	s_setup(&e);
	s_store(&e.m, "pre/fix/obj", "0123456789", 10);
	rr_buf_init(&out, 1 << 20);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "obj", &out, etag), 0);
	CU_ASSERT_EQUAL(out.len, 10);
	CU_ASSERT_STRING_EQUAL((const char *)out.data, "0123456789");
	CU_ASSERT_STRING_EQUAL(etag, s_etag_of(&e.m, "pre/fix/obj"));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 1);
	rr_buf_free(&out);
	s_teardown(&e);
}

static void test_get_of_an_empty_object_returns_nothing(void)
{
	struct s_env e;
	struct rr_buf out;
	char etag[RR_ETAG_MAX] = "";

	s_setup(&e);
	s_store(&e.m, "pre/fix/empty", "", 0);
	rr_buf_init(&out, 1 << 20);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "empty", &out, etag), 0);
	CU_ASSERT_EQUAL(out.len, 0);
	CU_ASSERT_STRING_EQUAL(etag, s_etag_of(&e.m, "pre/fix/empty"));
	rr_buf_free(&out);
	s_teardown(&e);
}

static void test_get_of_a_missing_key_is_enoent(void)
{
	struct s_env e;
	struct rr_buf out;

	s_setup(&e);
	rr_buf_init(&out, 1 << 20);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "nope", &out, NULL), RR_ENOENT);
	CU_ASSERT_EQUAL(out.len, 0);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 1);
	rr_buf_free(&out);
	s_teardown(&e);
}

static void test_head_gives_the_size_or_enoent(void)
{
	struct s_env e;
	uint64_t size = 0;

	s_setup(&e);
	s_store(&e.m, "pre/fix/h", "12345", 5);
	CU_ASSERT_EQUAL(rr_store_head(e.s, "h", &size), 0);
	CU_ASSERT_EQUAL(size, 5);
	CU_ASSERT_EQUAL(rr_store_head(e.s, "missing", &size), RR_ENOENT);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "HEAD", NULL), 2);
	s_teardown(&e);
}

static void test_del_of_a_missing_key_is_0(void)
{
	struct s_env e;

	s_setup(&e);
	s_store(&e.m, "pre/fix/d", "x", 1);
	CU_ASSERT_EQUAL(rr_store_del(e.s, "d"), 0);
	CU_ASSERT_PTR_NULL(s_find(&e.m, "pre/fix/d"));
	CU_ASSERT_EQUAL(rr_store_del(e.s, "d"), 0);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "DELETE", "/bkt/pre/fix/d"), 2);
	s_teardown(&e);
}

/* ---- retries ---- */

/* Answers the first hook_n requests of a PUT of an object with a failure, then lets them
 * through. The failure is picked by s_fail_kind. */
static int s_fail_kind; /* 0: 503 no body, 1: 503 SlowDown, 2: 400 InvalidArgument,
			 * 3: reset, 4: 403 AccessDenied, 5: 409 ConditionalRequestConflict,
			 * 6: 400 ExpiredToken */

static int s_hook_fail_puts(struct s_fake *m, const struct s_target *t,
			    const struct fx_request *req, struct fx_response *resp)
{
	if (strcmp(req->method, "PUT") != 0 || t->bucket_only || m->hook_n <= 0)
		return 0;
	m->hook_n--;
	switch (s_fail_kind) {
	case 0:
		resp->status = 503;
		break;
	case 1:
		s_error(resp, 503, "SlowDown", "Please reduce your request rate.");
		break;
	case 2:
		s_error(resp, 400, "InvalidArgument", "Invalid argument.");
		break;
	case 3:
		resp->action = FX_RESET;
		break;
	case 5:
		s_error(resp, 409, "ConditionalRequestConflict", "A conflicting conditional "
			"operation is currently in progress against this resource.");
		break;
	case 6:
		s_error(resp, 400, "ExpiredToken", "The provided token has expired.");
		break;
	default:
		s_error(resp, 403, "AccessDenied", "Access Denied");
		break;
	}
	return 1;
}

static void s_put_with_failures(int kind, int failures, int want_rc, size_t want_puts)
{
	struct s_env e;

	s_setup(&e);
	s_fail_kind = kind;
	e.m.hook = s_hook_fail_puts;
	e.m.hook_n = failures;
	CU_ASSERT_EQUAL(rr_store_put(e.s, "k", "data", 4, NULL, NULL), want_rc);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "PUT", NULL), want_puts);
	if (want_rc == 0)
		CU_ASSERT_PTR_NOT_NULL(s_find(&e.m, "pre/fix/k"));
	s_teardown(&e);
}

static void test_put_503_then_200_is_retried(void)
{
	s_put_with_failures(0, 1, 0, 2);
}

static void test_put_slowdown_is_retried(void)
{
	s_put_with_failures(1, 2, 0, 3);
}

static void test_put_400_invalid_argument_is_not_retried(void)
{
	s_put_with_failures(2, 1, RR_EIO, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EIO), "InvalidArgument"));
}

static void test_put_403_access_denied_is_eacces_not_retried(void)
{
	s_put_with_failures(4, 1, RR_EACCES, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EACCES), "AccessDenied"));
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EACCES), "environment"));
}

static void test_put_on_a_reset_connection_is_retried(void)
{
	/* Two resets: curl itself may resend once on a reused connection, so the second
	 * one reaches the backend's own retry. */
	s_put_with_failures(3, 2, 0, 3);
}

static void test_put_409_conditional_request_conflict_is_retried(void)
{
	s_put_with_failures(5, 1, 0, 2);
}

static void test_expired_token_is_retried_once_with_fresh_credentials(void)
{
	s_put_with_failures(6, 1, 0, 2);
	/* Fresh credentials that do not help end it: no backoff through 10 attempts. */
	s_put_with_failures(6, 100, RR_EIO, 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EIO), "ExpiredToken"));
}

static int s_hook_always_503(struct s_fake *m, const struct s_target *t,
			     const struct fx_request *req, struct fx_response *resp)
{
	(void)t;
	(void)req;
	m->hook_n++;
	resp->status = 503;
	return 1;
}

static void test_deadline_ends_retries_early(void)
{
	struct s_env e;
	int64_t t0;

	s_setup(&e);
	e.m.hook = s_hook_always_503;
	t0 = rr_mono_ms();
	rr_store_set_deadline(e.s, t0 + 1500);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "k", "data", 4, NULL, NULL), RR_EIO);
	/* Without the deadline, 10 attempts with backoff up to 15 s take about a minute. */
	CU_ASSERT(rr_mono_ms() - t0 < 10000);
	CU_ASSERT(e.m.hook_n >= 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EIO), "503"));
	rr_store_set_deadline(e.s, 0);
	s_teardown(&e);
}

/* ---- a cancel, or the notice's deadline, ends requests in flight ---- */

/* Answers PUTs of keys ending in "slow" (parts included) with 200 and a 512 KiB body sent
 * 2 KiB a second: a degraded link, fast enough for the stall rule (1 KiB/s), so only a
 * cancel or a deadline ends such a request before about four minutes. */
static int s_hook_trickle(struct s_fake *m, const struct s_target *t,
			  const struct fx_request *req, struct fx_response *resp)
{
	static unsigned char body[512 * 1024];
	size_t klen = strlen(t->key);

	if (strcmp(req->method, "PUT") != 0 || klen < 4 || strcmp(t->key + klen - 4, "slow") != 0)
		return 0;
	m->hook_n++;
	memset(body, ' ', sizeof(body));
	fx_resp_header(resp, "ETag", "\"%s\"", "0123456789abcdef0123456789abcdef");
	fx_resp_body(resp, body, sizeof(body));
	resp->status = 200;
	resp->trickle_bytes = 2048;
	resp->trickle_every_ms = 1000;
	return 1;
}

struct s_canceller {
	struct fx_server *srv;
	const char *method;
	const char *prefix;
	atomic_int *flag;
};

/* Sets the flag once the server has received a matching request (it is then in flight). */
static void *s_cancel_when_seen(void *arg)
{
	struct s_canceller *c = arg;

	while (fx_server_count(c->srv, c->method, c->prefix) == 0)
		fx_sleep_ms(10);
	*c->flag = 1;
	return NULL;
}

/* Runs a put of len bytes to key while a thread cancels it once a PUT has arrived;
 * returns the put's result. Without a working cancel the put outlives the alarm. */
static int s_put_canceled_in_flight(struct s_env *e, const char *key, size_t len)
{
	static atomic_int flag;
	unsigned char *data = s_pattern(len, 7);
	struct s_canceller c = { &e->srv, "PUT", "/bkt/pre/fix/", &flag };
	pthread_t th;
	int rc;

	flag = 0;
	rr_store_set_cancel(e->s, &flag);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, s_cancel_when_seen, &c), 0);
	alarm(120); /* the trickle alone would take minutes */
	rc = rr_store_put(e->s, key, data, len, NULL, NULL);
	alarm(0);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(flag, 1);
	rr_store_set_cancel(e->s, NULL);
	free(data);
	return rc;
}

static void test_cancel_ends_a_put_whose_answer_trickles(void)
{
	struct s_env e;

	s_setup(&e);
	e.m.hook = s_hook_trickle;
	CU_ASSERT_EQUAL(s_put_canceled_in_flight(&e, "slow", 1000), RR_ECANCELED);
	pthread_mutex_lock(&e.srv.mu); /* the server threads count under it */
	CU_ASSERT_EQUAL(e.m.hook_n, 1); /* not retried */
	pthread_mutex_unlock(&e.srv.mu);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_ECANCELED), "canceled"));
	s_teardown(&e);
}

static void test_cancel_ends_a_multipart_put_in_flight(void)
{
	struct s_env e;

	s_setup(&e);
	e.m.hook = s_hook_trickle;
	CU_ASSERT_EQUAL(s_put_canceled_in_flight(&e, "big-slow", (size_t)8 << 20), RR_ECANCELED);
	/* Another part's server thread may still be in the hook: read under its lock. */
	pthread_mutex_lock(&e.srv.mu);
	CU_ASSERT(e.m.hook_n >= 1);
	CU_ASSERT_EQUAL(e.m.completes, 0);
	CU_ASSERT_EQUAL(e.m.aborts, 1); /* the parts sent do not linger */
	pthread_mutex_unlock(&e.srv.mu);
	s_teardown(&e);
}

static void test_cancel_ends_the_wait_between_retries(void)
{
	struct s_env e;

	s_setup(&e);
	e.m.hook = s_hook_always_503;
	/* 503 for ever: 10 attempts with backoff would take about a minute and end in EIO. */
	CU_ASSERT_EQUAL(s_put_canceled_in_flight(&e, "k", 4), RR_ECANCELED);
	pthread_mutex_lock(&e.srv.mu); /* the server threads count under it */
	CU_ASSERT(e.m.hook_n >= 1 && e.m.hook_n < 10);
	pthread_mutex_unlock(&e.srv.mu);
	s_teardown(&e);
}

static void test_a_canceled_store_sends_nothing(void)
{
	static atomic_int flag = 1;
	struct rr_buf b;
	struct s_env e;

	s_setup(&e);
	rr_store_set_cancel(e.s, &flag);
	rr_buf_init(&b, 1024);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "k", "data", 4, NULL, NULL), RR_ECANCELED);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "k", &b, NULL), RR_ECANCELED);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	flag = 0;
	CU_ASSERT_EQUAL(rr_store_put(e.s, "k", "data", 4, NULL, NULL), 0);
	rr_store_set_cancel(e.s, NULL);
	rr_buf_free(&b);
	s_teardown(&e);
}

static void test_the_deadline_ends_a_put_whose_answer_trickles(void)
{
	struct s_env e;

	s_setup(&e);
	e.m.hook = s_hook_trickle;
	rr_store_set_deadline(e.s, rr_mono_ms() + 1500);
	alarm(120);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "slow", "data", 4, NULL, NULL), RR_EIO);
	alarm(0);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EIO), "timed out"));
	pthread_mutex_lock(&e.srv.mu); /* the server threads count under it */
	CU_ASSERT_EQUAL(e.m.hook_n, 1); /* no retry could finish before the deadline */
	pthread_mutex_unlock(&e.srv.mu);
	rr_store_set_deadline(e.s, 0);
	s_teardown(&e);
}

/* ---- error answers of any length are errors, never object bytes ---- */

static size_t s_err_len;       /* body length of the injected error answers */
static int s_err_status;       /* 503 or 500 */

/* An S3 <Error> document of exactly len bytes (the Message padded), or for a len too
 * short for one, its first len bytes: what a cut or a proxy's error answer looks like. */
static void s_error_of_length(struct fx_response *resp, int status, size_t len)
{
	const char *code = status == 503 ? "SlowDown" : "InternalError";
	char head[256], tail[] = "</Message><RequestId>REQ9</RequestId></Error>";
	unsigned char *body = malloc(len + 1);
	size_t hl;

	snprintf(head, sizeof(head), "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>"
		 "%s</Code><Message>", code);
	hl = strlen(head);
	memset(body, 'x', len + 1);
	if (len >= hl + strlen(tail)) {
		memcpy(body, head, hl);
		memcpy(body + len - strlen(tail), tail, strlen(tail));
	} else {
		memcpy(body, head, len < hl ? len : hl);
	}
	fx_resp_header(resp, "Content-Type", "application/xml");
	fx_resp_body(resp, body, len);
	resp->status = status;
	free(body);
}

/* Answers the first hook_n GETs of an object with an error of s_err_len bytes. */
static int s_hook_fail_gets(struct s_fake *m, const struct s_target *t,
			    const struct fx_request *req, struct fx_response *resp)
{
	if (strcmp(req->method, "GET") != 0 || t->bucket_only || m->hook_n <= 0)
		return 0;
	m->hook_n--;
	s_error_of_length(resp, s_err_status, s_err_len);
	return 1;
}

/* A small object read with a buffer of exactly its size (as restore reads a chunk whose
 * manifest gives its size): every error answer is retried, whatever its length, and the
 * object comes back whole. */
static void test_get_error_answers_of_every_length_are_retried_not_taken_for_the_object(void)
{
	enum { OBJ = 109 };
	const size_t lens[] = { 0, 1, OBJ - 1, OBJ, OBJ + 1, 4096, 200000 };
	unsigned char *data = s_pattern(OBJ, 21);
	struct s_env e;
	struct rr_buf out;
	size_t i;

	s_setup(&e);
	s_store(&e.m, "pre/fix/chunk", data, OBJ);
	e.m.hook = s_hook_fail_gets;
	for (i = 0; i < 2 * sizeof(lens) / sizeof(lens[0]); i++) {
		s_err_len = lens[i / 2];
		s_err_status = i % 2 ? 500 : 503;
		e.m.hook_n = 1;
		fx_server_reset(&e.srv);
		rr_buf_init(&out, OBJ);
		CU_ASSERT_EQUAL(rr_store_get(e.s, "chunk", &out, NULL), 0);
		CU_ASSERT_EQUAL(out.len, OBJ);
		CU_ASSERT(out.len == OBJ && memcmp(out.data, data, OBJ) == 0);
		CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", NULL), 2);
		CU_ASSERT_EQUAL(e.m.hook_n, 0);
		rr_buf_free(&out);
	}
	s_teardown(&e);
	free(data);
}

/* Answers the first hook_n GETs of the last range of a big object with an error longer
 * than that range. */
static int s_hook_fail_last_range(struct s_fake *m, const struct s_target *t,
				  const struct fx_request *req, struct fx_response *resp)
{
	const char *range = fx_header(req, "Range");

	if (strcmp(req->method, "GET") != 0 || t->bucket_only || m->hook_n <= 0 || !range ||
	    strcmp(range, "bytes=10485760-12582911") != 0)
		return 0;
	m->hook_n--;
	s_error_of_length(resp, s_err_status, s_err_len);
	return 1;
}

/* The same for the ranges of a big object fetched in parallel: an error longer than the
 * range it answers is retried, and the object comes back whole. */
static void test_ranged_get_error_answers_longer_than_the_range_are_retried(void)
{
	unsigned char *data = s_pattern(S_BIG, 23);
	struct s_env e;
	struct rr_buf out;

	s_setup(&e);
	s_store(&e.m, "pre/fix/big", data, S_BIG);
	e.m.hook = s_hook_fail_last_range;
	e.m.hook_n = 2;
	s_err_status = 503;
	s_err_len = (3u << 20); /* the last range is 2 MiB */
	rr_buf_init(&out, S_BIG);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "big", &out, NULL), 0);
	CU_ASSERT_EQUAL(e.m.hook_n, 0);
	CU_ASSERT(out.len == S_BIG && memcmp(out.data, data, S_BIG) == 0);
	rr_buf_free(&out);
	s_teardown(&e);
	free(data);
}

/* The answers run out: the failure says what S3 answered (an error the caller may retry
 * later), not that the object is too big. */
static void test_get_that_only_gets_long_503s_fails_with_the_503_not_etoobig(void)
{
	struct s_env e;
	struct rr_buf out;

	s_setup(&e);
	s_store(&e.m, "pre/fix/chunk", "0123456789", 10);
	e.m.hook = s_hook_fail_gets;
	e.m.hook_n = 1000;
	s_err_len = 5000;
	s_err_status = 503;
	rr_store_set_deadline(e.s, rr_mono_ms() + 1500);
	rr_buf_init(&out, 10);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "chunk", &out, NULL), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EIO), "503"));
	CU_ASSERT_EQUAL(out.len, 0);
	rr_buf_free(&out);
	rr_store_set_deadline(e.s, 0);
	s_teardown(&e);
}

static void test_nothing_is_sent_once_the_deadline_has_passed(void)
{
	struct s_env e;

	s_setup(&e);
	rr_store_set_deadline(e.s, rr_mono_ms() - 1);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "k", "data", 4, NULL, NULL), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EIO), "deadline"));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	rr_store_set_deadline(e.s, 0);
	s_teardown(&e);
}

/* A 2xx answer longer than the ceiling is the object's own bytes: too big, at once. */
static void test_get_of_an_object_bigger_than_the_buffer_is_etoobig_at_once(void)
{
	struct s_env e;
	struct rr_buf out;

	s_setup(&e);
	s_store(&e.m, "pre/fix/chunk", "0123456789", 10);
	rr_buf_init(&out, 9);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "chunk", &out, NULL), RR_ETOOBIG);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", NULL), 1);
	rr_buf_free(&out);
	s_teardown(&e);
}

/* ---- a conditional write whose answer is lost ---- */

static const char *s_lost_other; /* NULL: the lost write applied our bytes; else these */

/* The first PUT (or completion) of a key is applied, with the request's bytes or with
 * s_lost_other, and then the connection is reset before any answer: the client cannot
 * know it went through. */
static int s_hook_apply_then_reset(struct s_fake *m, const struct s_target *t,
				   const struct fx_request *req, struct fx_response *resp)
{
	int complete = strcmp(req->method, "POST") == 0 && strstr(t->query, "uploadId=");

	if (t->bucket_only || m->hook_n <= 0 || strstr(t->query, "partNumber=") ||
	    !(complete || strcmp(req->method, "PUT") == 0))
		return 0;
	m->hook_n--;
	if (s_lost_other)
		s_store(m, t->key, s_lost_other, strlen(s_lost_other));
	else if (complete)
		s_answer_complete(m, t, req, resp);
	else
		s_answer_put(m, t, req, resp);
	resp->action = FX_RESET; /* what was answered is never sent */
	return 1;
}

static void test_create_only_put_applied_but_answer_lost_holding_our_bytes_succeeds(void)
{
	struct rr_put_opts po = { .if_none_match = 1 };
	struct s_env e;
	char etag[RR_ETAG_MAX] = "";

	s_setup(&e);
	e.m.hook = s_hook_apply_then_reset;
	e.m.hook_n = 1;
	s_lost_other = NULL;
	CU_ASSERT_EQUAL(rr_store_put(e.s, "manifest", "ours", 4, &po, etag), 0);
	CU_ASSERT(s_holds(&e.m, "pre/fix/manifest", "ours", 4));
	CU_ASSERT_STRING_EQUAL(etag, s_etag_of(&e.m, "pre/fix/manifest"));
	/* the retry met 412, and the object was read back to tell whose it is */
	CU_ASSERT(fx_server_count(&e.srv, "PUT", NULL) >= 2);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", NULL), 1);
	s_teardown(&e);
}

static void test_create_only_put_applied_but_answer_lost_holding_other_bytes_is_eexist(void)
{
	struct rr_put_opts po = { .if_none_match = 1 };
	struct s_env e;

	s_setup(&e);
	e.m.hook = s_hook_apply_then_reset;
	e.m.hook_n = 1;
	s_lost_other = "theirs";
	CU_ASSERT_EQUAL(rr_store_put(e.s, "manifest", "ours", 4, &po, NULL), RR_EEXIST);
	CU_ASSERT(s_holds(&e.m, "pre/fix/manifest", "theirs", 6));
	s_lost_other = NULL;
	s_teardown(&e);
}

/* Without an attempt of unknown outcome a 412 is someone else's object, even with our
 * bytes: not read back, not claimed. */
static void test_create_only_put_meeting_an_existing_object_at_once_is_eexist_unread(void)
{
	struct rr_put_opts po = { .if_none_match = 1 };
	struct s_env e;

	s_setup(&e);
	s_store(&e.m, "pre/fix/manifest", "ours", 4);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "manifest", "ours", 4, &po, NULL), RR_EEXIST);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", NULL), 0);
	s_teardown(&e);
}

static void test_create_only_multipart_completion_applied_but_answer_lost_succeeds(void)
{
	struct rr_put_opts po = { .if_none_match = 1 };
	unsigned char *data = s_pattern(S_BIG, 31);
	struct s_env e;
	char etag[RR_ETAG_MAX] = "";

	s_setup(&e);
	e.m.hook = s_hook_apply_then_reset;
	e.m.hook_n = 1;
	s_lost_other = NULL;
	CU_ASSERT_EQUAL(rr_store_put(e.s, "big", data, S_BIG, &po, etag), 0);
	CU_ASSERT(s_holds(&e.m, "pre/fix/big", data, S_BIG));
	CU_ASSERT_STRING_EQUAL(etag, s_etag_of(&e.m, "pre/fix/big"));
	CU_ASSERT_EQUAL(e.m.aborts, 0);
	s_teardown(&e);
	free(data);
}

/* ---- a clock off by more than S3 allows ---- */

static long s_skew_s;        /* how far the fake's clock is ahead of the request's */
static int s_skew_by_date;   /* 1: say it with the Date header, not ServerTime */

/* Parses an x-amz-date "YYYYMMDDTHHMMSSZ" into unix seconds, or -1. */
static long long s_amz_date_unix(const char *d)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!d || !strptime(d, "%Y%m%dT%H%M%SZ", &tm))
		return -1;
	return (long long)timegm(&tm);
}

/* Refuses requests signed more than 15 minutes away from its clock (now + s_skew_s), as
 * S3 does, naming its time in ServerTime or in the Date header. */
static int s_hook_skewed_clock(struct s_fake *m, const struct s_target *t,
			       const struct fx_request *req, struct fx_response *resp)
{
	long long server = (long long)time(NULL) + s_skew_s;
	long long sent = s_amz_date_unix(fx_header(req, "x-amz-date"));
	char body[1024], when[64];
	struct tm tm;
	time_t st = (time_t)server;

	(void)t;
	if (sent >= 0 && llabs(server - sent) <= 900)
		return 0;
	m->hook_n++;
	gmtime_r(&st, &tm);
	if (s_skew_by_date) {
		strftime(when, sizeof(when), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		fx_resp_header(resp, "Date", "%s", when);
		s_error(resp, 403, "RequestTimeTooSkewed", "The difference between the request "
			"time and the current time is too large.");
		return 1;
	}
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(body, sizeof(body), "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>"
		 "RequestTimeTooSkewed</Code><Message>The difference between the request time "
		 "and the current time is too large.</Message><RequestTime>%s</RequestTime>"
		 "<ServerTime>%s</ServerTime><MaxAllowedSkewMilliseconds>900000"
		 "</MaxAllowedSkewMilliseconds><RequestId>R</RequestId></Error>",
		 fx_header(req, "x-amz-date"), when);
	fx_resp_header(resp, "Content-Type", "application/xml");
	fx_resp_text(resp, 403, body);
	return 1;
}

static void s_skew_case(long skew_s, int by_date)
{
	struct s_env e;
	struct rr_buf out;
	long long signed_at;

	s_setup(&e);
	s_skew_s = skew_s;
	s_skew_by_date = by_date;
	e.m.hook = s_hook_skewed_clock;
	CU_ASSERT_EQUAL(rr_store_put(e.s, "k", "data", 4, NULL, NULL), 0);
	CU_ASSERT_EQUAL(e.m.hook_n, 1);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "PUT", NULL), 2);
	CU_ASSERT(s_holds(&e.m, "pre/fix/k", "data", 4));
	/* the retry, and every later request, is signed with the server's time */
	signed_at = s_amz_date_unix(fx_header(fx_server_last(&e.srv, NULL), "x-amz-date"));
	CU_ASSERT(llabs(signed_at - ((long long)time(NULL) + skew_s)) <= 5);
	rr_buf_init(&out, 16);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "k", &out, NULL), 0);
	CU_ASSERT_EQUAL(e.m.hook_n, 1);
	rr_buf_free(&out);
	s_teardown(&e);
}

static void test_request_time_too_skewed_is_retried_with_the_server_time(void)
{
	s_skew_case(3600, 0);
	s_skew_case(-1800, 0);
}

static void test_request_time_too_skewed_without_server_time_uses_the_date_header(void)
{
	s_skew_case(-7200, 1);
}

/* A server that refuses every time it is asked, whatever the clock: no retry loop. */
static int s_hook_always_skewed(struct s_fake *m, const struct s_target *t,
				const struct fx_request *req, struct fx_response *resp)
{
	(void)t;
	(void)req;
	m->hook_n++;
	s_error(resp, 403, "RequestTimeTooSkewed", "The difference between the request time "
		"and the current time is too large.");
	return 1;
}

static void test_request_time_too_skewed_without_a_time_is_not_retried(void)
{
	struct s_env e;

	s_setup(&e);
	e.m.hook = s_hook_always_skewed;
	CU_ASSERT_EQUAL(rr_store_put(e.s, "k", "data", 4, NULL, NULL), RR_EIO);
	CU_ASSERT_EQUAL(e.m.hook_n, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EIO), "clock"));
	s_teardown(&e);
}

/* ---- list and delete many ---- */

struct s_listed {
	char keys[8][64];
	uint64_t sizes[8];
	int n;
};

static int s_collect(const struct rr_store_entry *en, void *ud)
{
	struct s_listed *l = ud;

	if (l->n < 8) {
		snprintf(l->keys[l->n], sizeof(l->keys[0]), "%s", en->key);
		l->sizes[l->n] = en->size;
		l->n++;
	}
	return 0;
}

static void test_list_follows_continuation_tokens_and_strips_the_prefix(void)
{
	struct s_env e;
	struct s_listed l;
	const struct fx_request *r;
	char v[256] = "";

	s_setup(&e);
	e.m.list_page = 2;
	s_store(&e.m, "pre/fix/a/1", "1", 1);
	s_store(&e.m, "pre/fix/a/2", "22", 2);
	s_store(&e.m, "pre/fix/a/3", "333", 3);
	s_store(&e.m, "pre/fix/b/1", "x", 1);
	s_store(&e.m, "other/a/1", "x", 1);
	memset(&l, 0, sizeof(l));
	CU_ASSERT_EQUAL(rr_store_list(e.s, "a/", s_collect, &l), 0);
	CU_ASSERT_EQUAL_FATAL(l.n, 3);
	CU_ASSERT_STRING_EQUAL(l.keys[0], "a/1");
	CU_ASSERT_STRING_EQUAL(l.keys[1], "a/2");
	CU_ASSERT_STRING_EQUAL(l.keys[2], "a/3");
	CU_ASSERT_EQUAL(l.sizes[2], 3);
	CU_ASSERT_EQUAL_FATAL(fx_server_nrequests(&e.srv), 2);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT(s_qparam(s_query(r), "prefix", v, sizeof(v)));
	CU_ASSERT_STRING_EQUAL(v, "pre/fix/a/");
	CU_ASSERT_FALSE(s_qparam(s_query(r), "continuation-token", v, sizeof(v)));
	r = fx_server_request(&e.srv, 1);
	CU_ASSERT(s_qparam(s_query(r), "continuation-token", v, sizeof(v)));
	CU_ASSERT_STRING_EQUAL(v, "tok/2+=");
	s_teardown(&e);
}

static int s_stop_at_second(const struct rr_store_entry *en, void *ud)
{
	int *n = ud;

	(void)en;
	return ++*n == 2 ? 42 : 0;
}

static void test_list_stops_with_the_callbacks_value(void)
{
	struct s_env e;
	int n = 0;

	s_setup(&e);
	e.m.list_page = 1;
	s_store(&e.m, "pre/fix/1", "1", 1);
	s_store(&e.m, "pre/fix/2", "1", 1);
	s_store(&e.m, "pre/fix/3", "1", 1);
	CU_ASSERT_EQUAL(rr_store_list(e.s, "", s_stop_at_second, &n), 42);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 2); /* no page fetched after the stop */
	s_teardown(&e);
}

static void test_del_many_posts_delete_with_content_md5_and_prefixed_keys(void)
{
	static const char *const keys[] = { "c/1", "c/2", "c/a&b" };
	struct s_env e;
	const struct fx_request *r;
	char md5[25], k[256] = "";

	s_setup(&e);
	s_store(&e.m, "pre/fix/c/1", "1", 1);
	s_store(&e.m, "pre/fix/c/2", "2", 1);
	s_store(&e.m, "pre/fix/c/keep", "3", 1);
	CU_ASSERT_EQUAL(rr_store_del_many(e.s, keys, 3), 0);
	CU_ASSERT_EQUAL_FATAL(fx_server_nrequests(&e.srv), 1);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_STRING_EQUAL(r->method, "POST");
	CU_ASSERT_STRING_EQUAL(r->target, "/bkt?delete");
	s_md5_base64(r->body, r->body_len, md5);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(r, "Content-MD5"));
	S_ASSERT_STR(fx_header(r, "Content-MD5"), md5);
	for (int i = 0; i < 3; i++) {
		char want[64];
		snprintf(want, sizeof(want), "pre/fix/%s", keys[i]);
		CU_ASSERT(s_xml_nth((const char *)r->body, "Key", i, k, sizeof(k)));
		CU_ASSERT_STRING_EQUAL(k, want);
	}
	CU_ASSERT_PTR_NOT_NULL(strstr((const char *)r->body, "c/a&amp;b"));
	CU_ASSERT_PTR_NULL(s_find(&e.m, "pre/fix/c/1"));
	CU_ASSERT_PTR_NULL(s_find(&e.m, "pre/fix/c/2"));
	CU_ASSERT_PTR_NOT_NULL(s_find(&e.m, "pre/fix/c/keep"));
	s_teardown(&e);
}

/* ---- multipart uploads ---- */


static void test_multipart_put_initiates_uploads_3_parts_and_completes_in_order(void)
{
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 1);
	const struct fx_request *r;
	size_t i, nparts = 0, total = 0;
	char etag[RR_ETAG_MAX] = "", id[256] = "", num[16] = "", got[64] = "";
	int seen[4] = { 0 };

	s_setup(&e);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "big", data, S_BIG, NULL, etag), 0);
	CU_ASSERT_EQUAL(e.m.uploads, 1);
	CU_ASSERT_EQUAL(e.m.completes, 1);
	CU_ASSERT_EQUAL(e.m.aborts, 0);
	r = fx_server_request(&e.srv, 0);
	CU_ASSERT_STRING_EQUAL(r->method, "POST");
	CU_ASSERT_STRING_EQUAL(r->target, "/bkt/pre/fix/big?uploads");
	for (i = 0; i < fx_server_nrequests(&e.srv); i++) {
		r = fx_server_request(&e.srv, i);
		if (strcmp(r->method, "PUT") != 0)
			continue;
		const char *q = s_query(r);
		unsigned n;
		CU_ASSERT(s_qparam(q, "uploadId", id, sizeof(id)));
		CU_ASSERT_STRING_EQUAL(id, S_UPLOAD_ID);
		CU_ASSERT(s_qparam(q, "partNumber", num, sizeof(num)));
		n = (unsigned)atoi(num);
		CU_ASSERT_FATAL(n >= 1 && n <= 3);
		seen[n]++;
		CU_ASSERT_EQUAL(r->body_len, n < 3 ? S_PART : S_BIG - 2 * S_PART);
		CU_ASSERT(memcmp(r->body, data + (n - 1) * (size_t)S_PART, r->body_len) == 0);
		/* Parts carry no conditions; their bodies are hashed like any other. */
		CU_ASSERT_PTR_NULL(fx_header(r, "If-None-Match"));
		nparts++;
		total += r->body_len;
	}
	CU_ASSERT_EQUAL(nparts, 3);
	CU_ASSERT_EQUAL(total, S_BIG);
	CU_ASSERT(seen[1] == 1 && seen[2] == 1 && seen[3] == 1);
	r = s_last(&e.srv, "POST", "/bkt/pre/fix/big?uploadId=");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	for (i = 0; i < 3; i++) {
		CU_ASSERT(s_xml_nth((const char *)r->body, "ETag", (int)i, got, sizeof(got)));
		CU_ASSERT_STRING_EQUAL(got, e.m.part_etag[i + 1]);
		CU_ASSERT(s_xml_nth((const char *)r->body, "PartNumber", (int)i, num, sizeof(num)));
		CU_ASSERT_EQUAL(atoi(num), (int)i + 1);
	}
	CU_ASSERT_FALSE(s_xml_nth((const char *)r->body, "ETag", 3, got, sizeof(got)));
	/* The object S3 assembled is the data, and the ETag is the final object's. */
	CU_ASSERT(s_holds(&e.m, "pre/fix/big", data, S_BIG));
	CU_ASSERT_STRING_EQUAL(etag, s_etag_of(&e.m, "pre/fix/big"));
	s_teardown(&e);
	free(data);
}

static void test_multipart_parts_are_in_flight_together(void)
{
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 2);

	s_setup(&e);
	/* The first part's answer is held 5 s: a client that sends one part at a time sends
	 * the second only after it, one with parts in flight together sends it meanwhile, a
	 * margin that a loaded machine under TSan still keeps (1 s did not). */
	e.m.first_part_delay_ms = 5000;
	CU_ASSERT_EQUAL(rr_store_put(e.s, "big", data, S_BIG, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(e.m.nparts_arrived, 3);
	CU_ASSERT(e.m.part_arrived[1] - e.m.part_arrived[0] < 4990);
	s_teardown(&e);
	free(data);
}

static int s_hook_part_2_fails_once(struct s_fake *m, const struct s_target *t,
				    const struct fx_request *req, struct fx_response *resp)
{
	(void)req;
	if (strstr(t->query, "partNumber=2&") && m->hook_n == 0) {
		m->hook_n++;
		s_error(resp, 500, "InternalError", "We encountered an internal error.");
		return 1;
	}
	return 0;
}

static void test_multipart_part_failing_once_with_500_is_retried(void)
{
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 3);

	s_setup(&e);
	e.m.hook = s_hook_part_2_fails_once;
	CU_ASSERT_EQUAL(rr_store_put(e.s, "big", data, S_BIG, NULL, NULL), 0);
	CU_ASSERT_EQUAL(e.m.hook_n, 1);
	CU_ASSERT_EQUAL(s_count_query(&e.srv, "PUT", "partNumber=2&"), 2);
	CU_ASSERT_EQUAL(s_count_query(&e.srv, "PUT", "partNumber="), 4);
	CU_ASSERT_EQUAL(e.m.completes, 1);
	CU_ASSERT_EQUAL(e.m.aborts, 0);
	CU_ASSERT(s_holds(&e.m, "pre/fix/big", data, S_BIG));
	s_teardown(&e);
	free(data);
}

static int s_hook_part_2_refused(struct s_fake *m, const struct s_target *t,
				  const struct fx_request *req, struct fx_response *resp)
{
	(void)m;
	(void)req;
	if (strstr(t->query, "partNumber=2&")) {
		s_error(resp, 400, "InvalidArgument", "Part refused.");
		return 1;
	}
	return 0;
}

static void test_part_failing_for_good_aborts_the_upload(void)
{
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 12);
	int rc;

	s_setup(&e);
	e.m.hook = s_hook_part_2_refused;
	e.m.part_delay_ms = 300; /* the other parts are still in flight when part 2 fails */
	rc = rr_store_put(e.s, "big", data, S_BIG, NULL, NULL);
	CU_ASSERT_EQUAL(rc, RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(rc), "InvalidArgument"));
	CU_ASSERT_EQUAL(s_count_query(&e.srv, "PUT", "partNumber=2&"), 1);
	CU_ASSERT_EQUAL(s_count_query(&e.srv, "POST", "uploadId="), 0); /* no completion */
	CU_ASSERT_EQUAL(e.m.aborts, 1);
	CU_ASSERT_PTR_NULL(s_find(&e.m, "pre/fix/big"));
	s_teardown(&e);
	free(data);
}

static const char *s_complete_error_code; /* for s_hook_complete_error */

/* The first CompleteMultipartUpload is answered 200, padded with whitespace, then an Error,
 * the way S3 fails after it has started to answer. */
static int s_hook_complete_error(struct s_fake *m, const struct s_target *t,
				 const struct fx_request *req, struct fx_response *resp)
{
	char body[1024];

	if (strcmp(req->method, "POST") != 0 || !strstr(t->query, "uploadId=") || m->hook_n > 0)
		return 0;
	m->hook_n++;
	snprintf(body, sizeof(body),
		 "\n  \n    \n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
		 "<Message>failed late</Message><RequestId>R</RequestId></Error>",
		 s_complete_error_code);
	fx_resp_text(resp, 200, body);
	return 1;
}

static void test_complete_200_with_padded_internal_error_is_retried(void)
{
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 4);

	s_setup(&e);
	s_complete_error_code = "InternalError";
	e.m.hook = s_hook_complete_error;
	CU_ASSERT_EQUAL(rr_store_put(e.s, "big", data, S_BIG, NULL, NULL), 0);
	CU_ASSERT_EQUAL(s_count_query(&e.srv, "POST", "uploadId="), 2);
	CU_ASSERT_EQUAL(e.m.completes, 1);
	CU_ASSERT_EQUAL(e.m.aborts, 0);
	CU_ASSERT_PTR_NOT_NULL(s_find(&e.m, "pre/fix/big"));
	s_teardown(&e);
	free(data);
}

/* The completion is refused with a 500 (not applied), then throttled (503 SlowDown): S3's
 * errors come in bursts. The object is not there after them, so the completion is tried
 * again under the usual policy instead of the upload being aborted after two tries. */
static int s_hook_complete_500_then_503(struct s_fake *m, const struct s_target *t,
					const struct fx_request *req, struct fx_response *resp)
{
	if (strcmp(req->method, "POST") != 0 || !strstr(t->query, "uploadId=") || m->hook_n >= 2)
		return 0;
	if (m->hook_n++ == 0)
		s_error(resp, 500, "InternalError", "We encountered an internal error.");
	else
		s_error(resp, 503, "SlowDown", "Please reduce your request rate.");
	return 1;
}

static void test_complete_refused_500_then_503_is_tried_again_not_aborted(void)
{
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 6);

	s_setup(&e);
	e.m.hook = s_hook_complete_500_then_503;
	CU_ASSERT_EQUAL(rr_store_put(e.s, "big", data, S_BIG, NULL, NULL), 0);
	CU_ASSERT_EQUAL(s_count_query(&e.srv, "POST", "uploadId="), 3);
	CU_ASSERT_EQUAL(e.m.completes, 1);
	CU_ASSERT_EQUAL(e.m.aborts, 0);
	CU_ASSERT_PTR_NOT_NULL(s_find(&e.m, "pre/fix/big"));
	s_teardown(&e);
	free(data);
}

static void test_complete_200_with_access_denied_fails_and_aborts(void)
{
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 5);
	const struct fx_request *r;
	char id[256] = "";
	int rc;

	s_setup(&e);
	s_complete_error_code = "AccessDenied";
	e.m.hook = s_hook_complete_error;
	rc = rr_store_put(e.s, "big", data, S_BIG, NULL, NULL);
	CU_ASSERT(rc < 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(rc), "AccessDenied"));
	CU_ASSERT_EQUAL(s_count_query(&e.srv, "POST", "uploadId="), 1);
	CU_ASSERT_EQUAL(e.m.aborts, 1);
	r = fx_server_last(&e.srv, NULL);
	CU_ASSERT_STRING_EQUAL(r->method, "DELETE");
	CU_ASSERT(s_qparam(s_query(r), "uploadId", id, sizeof(id)));
	CU_ASSERT_STRING_EQUAL(id, S_UPLOAD_ID);
	CU_ASSERT_PTR_NULL(s_find(&e.m, "pre/fix/big"));
	s_teardown(&e);
	free(data);
}

static int s_hook_complete_and_abort_refused(struct s_fake *m, const struct s_target *t,
					     const struct fx_request *req,
					     struct fx_response *resp)
{
	if (strcmp(req->method, "DELETE") == 0 && strstr(t->query, "uploadId=")) {
		m->aborts++;
		s_error(resp, 403, "AccessDenied", "abort refused");
		return 1;
	}
	return s_hook_complete_error(m, t, req, resp);
}

static void test_failed_abort_keeps_the_reason_of_the_failed_upload(void)
{
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 13);
	int rc;

	s_setup(&e);
	s_complete_error_code = "InvalidPart";
	e.m.hook = s_hook_complete_and_abort_refused;
	rc = rr_store_put(e.s, "big", data, S_BIG, NULL, NULL);
	CU_ASSERT(rc < 0);
	CU_ASSERT(e.m.aborts >= 1);
	/* The reason is the completion's, not the abort's (nor a bare "I/O error"). */
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(rc), "InvalidPart"));
	CU_ASSERT_PTR_NULL(strstr(rr_store_strerror(rc), "abort refused"));
	s_teardown(&e);
	free(data);
}

static void test_multipart_if_none_match_goes_on_the_completion(void)
{
	struct rr_put_opts po = { .if_none_match = 1 };
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 6);
	const struct fx_request *r;

	s_setup(&e);
	s_store(&e.m, "pre/fix/big", "old", 3);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "big", data, S_BIG, &po, NULL), RR_EEXIST);
	r = s_last(&e.srv, "POST", "/bkt/pre/fix/big?uploadId=");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(r, "If-None-Match"));
	S_ASSERT_STR(fx_header(r, "If-None-Match"), "*");
	CU_ASSERT_EQUAL(e.m.aborts, 1); /* the parts are not left behind */
	CU_ASSERT(s_holds(&e.m, "pre/fix/big", "old", 3));
	s_teardown(&e);
	free(data);
}

/* ---- ranged downloads ---- */

static void test_ranged_get_of_12_mib_reassembles_with_if_match(void)
{
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 7);
	const struct fx_request *r;
	const struct s_obj *o;
	struct rr_buf out;
	char etag[RR_ETAG_MAX] = "";
	int seen_mid = 0, seen_last = 0;

	s_setup(&e);
	o = s_store(&e.m, "pre/fix/big", data, S_BIG);
	rr_buf_init(&out, 16u << 20);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "big", &out, etag), 0);
	CU_ASSERT_EQUAL_FATAL(out.len, S_BIG);
	CU_ASSERT(memcmp(out.data, data, S_BIG) == 0);
	CU_ASSERT_STRING_EQUAL(etag, o->etag);
	CU_ASSERT_EQUAL_FATAL(fx_server_nrequests(&e.srv), 3);
	r = fx_server_request(&e.srv, 0);
	S_ASSERT_STR(fx_header(r, "Range"), "bytes=0-5242879");
	CU_ASSERT_PTR_NULL(fx_header(r, "If-Match"));
	for (size_t i = 1; i < 3; i++) {
		r = fx_server_request(&e.srv, i);
		CU_ASSERT_STRING_EQUAL(r->method, "GET");
		CU_ASSERT_PTR_NOT_NULL_FATAL(fx_header(r, "If-Match"));
		S_ASSERT_STR(fx_header(r, "If-Match"), o->etag);
		const char *range = fx_header(r, "Range");
		CU_ASSERT_PTR_NOT_NULL_FATAL(range);
		if (strcmp(range, "bytes=5242880-10485759") == 0)
			seen_mid++;
		if (strcmp(range, "bytes=10485760-12582911") == 0)
			seen_last++;
	}
	CU_ASSERT_EQUAL(seen_mid, 1);
	CU_ASSERT_EQUAL(seen_last, 1);
	rr_buf_free(&out);
	s_teardown(&e);
	free(data);
}

static void test_ranged_get_over_the_buffer_ceiling_is_etoobig(void)
{
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 8);
	struct rr_buf out;

	s_setup(&e);
	s_store(&e.m, "pre/fix/big", data, S_BIG);
	rr_buf_init(&out, 8u << 20);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "big", &out, NULL), RR_ETOOBIG);
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 1); /* the size was known from the first */
	rr_buf_free(&out);
	s_teardown(&e);
	free(data);
}

/* Answers ranged GETs with the wrong Content-Range: the first one (hook_n 0) or the later
 * ones (hook_n 1). */
static int s_hook_bad_content_range(struct s_fake *m, const struct s_target *t,
				    const struct fx_request *req, struct fx_response *resp)
{
	const char *range = fx_header(req, "Range");
	const struct s_obj *o = s_find(m, t->key);

	if (strcmp(req->method, "GET") != 0 || !range || !o)
		return 0;
	if (m->hook_n == 0 && strcmp(range, "bytes=0-5242879") == 0) {
		/* claims the bytes start at 100 */
		fx_resp_header(resp, "ETag", "%s", o->etag);
		fx_resp_header(resp, "Content-Range", "bytes 100-5242979/%zu", o->len);
		fx_resp_body(resp, o->data + 100, S_PART);
		resp->status = 206;
		return 1;
	}
	if (m->hook_n == 1 && strcmp(range, "bytes=10485760-12582911") == 0) {
		/* a short answer to the last range, labelled as such */
		fx_resp_header(resp, "ETag", "%s", o->etag);
		fx_resp_header(resp, "Content-Range", "bytes 10485760-10485859/%zu", o->len);
		fx_resp_body(resp, o->data + 10485760, 100);
		resp->status = 206;
		return 1;
	}
	return 0;
}

static void test_ranged_get_with_a_bad_content_range_is_eio(void)
{
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 9);
	struct rr_buf out;

	s_setup(&e);
	s_store(&e.m, "pre/fix/big", data, S_BIG);
	e.m.hook = s_hook_bad_content_range;
	rr_buf_init(&out, 16u << 20);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "big", &out, NULL), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EIO), "Content-Range"));
	rr_buf_free(&out);
	s_teardown(&e);
	free(data);
}

static void test_ranged_get_with_a_short_later_range_is_eio(void)
{
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 10);
	struct rr_buf out;

	s_setup(&e);
	s_store(&e.m, "pre/fix/big", data, S_BIG);
	e.m.hook = s_hook_bad_content_range;
	e.m.hook_n = 1;
	rr_buf_init(&out, 16u << 20);
	CU_ASSERT_EQUAL(rr_store_get(e.s, "big", &out, NULL), RR_EIO);
	rr_buf_free(&out);
	s_teardown(&e);
	free(data);
}

/* ---- threads ---- */

struct s_thread_arg {
	struct rr_store *s;
	int id;
	int failures;
};

static void *s_thread_main(void *p)
{
	struct s_thread_arg *a = p;
	struct rr_buf out;
	char key[64], val[64];

	rr_buf_init(&out, 4096);
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "t%d/k%d", a->id, i);
		snprintf(val, sizeof(val), "value %d %d", a->id, i);
		rr_buf_reset(&out);
		if (rr_store_put(a->s, key, val, strlen(val), NULL, NULL) != 0 ||
		    rr_store_get(a->s, key, &out, NULL) != 0 || out.len != strlen(val) ||
		    memcmp(out.data, val, out.len) != 0)
			a->failures++;
	}
	rr_buf_free(&out);
	return NULL;
}

static void test_four_threads_share_one_store(void)
{
	struct s_env e;
	struct s_thread_arg args[4];
	pthread_t th[4];

	s_setup(&e);
	for (int i = 0; i < 4; i++) {
		args[i] = (struct s_thread_arg){ e.s, i, 0 };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, s_thread_main, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(args[i].failures, 0);
	}
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "PUT", NULL), 40);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", NULL), 40);
	s_teardown(&e);
}

/* ---- server-side encryption ---- */

static void test_sse_kms_headers_go_on_put_and_initiate_not_on_parts(void)
{
	struct rr_store_opts o = { .s3_sse = "aws:kms", .s3_sse_kms_key_id = "arn:key/1" };
	struct s_env e;
	unsigned char *data = s_pattern(S_BIG, 11);
	const struct fx_request *r;

	s_setup_opts(&e, &o);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "small", "x", 1, NULL, NULL), 0);
	r = fx_server_request(&e.srv, 0);
	S_ASSERT_STR(fx_header(r, "x-amz-server-side-encryption"), "aws:kms");
	S_ASSERT_STR(fx_header(r, "x-amz-server-side-encryption-aws-kms-key-id"), "arn:key/1");
	fx_server_reset(&e.srv);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "big", data, S_BIG, NULL, NULL), 0);
	for (size_t i = 0; i < fx_server_nrequests(&e.srv); i++) {
		r = fx_server_request(&e.srv, i);
		int initiate = strcmp(r->method, "POST") == 0 && strstr(r->target, "?uploads");
		if (initiate) {
			S_ASSERT_STR(fx_header(r, "x-amz-server-side-encryption"), "aws:kms");
			S_ASSERT_STR(fx_header(r, "x-amz-server-side-encryption-aws-kms-key-id"),
				     "arn:key/1");
		} else {
			/* S3 refuses these headers on UploadPart and Complete. */
			CU_ASSERT_PTR_NULL(fx_header(r, "x-amz-server-side-encryption"));
			CU_ASSERT_PTR_NULL(fx_header(r, "x-amz-server-side-encryption-aws-kms-"
							"key-id"));
		}
	}
	CU_ASSERT_EQUAL(s_count_query(&e.srv, "POST", "uploads"), 1);
	s_teardown(&e);
	free(data);
}

static void test_sse_aes256_sends_no_kms_key(void)
{
	struct rr_store_opts o = { .s3_sse = "AES256" };
	struct s_env e;
	const struct fx_request *r;

	s_setup_opts(&e, &o);
	CU_ASSERT_EQUAL(rr_store_put(e.s, "small", "x", 1, NULL, NULL), 0);
	r = fx_server_request(&e.srv, 0);
	S_ASSERT_STR(fx_header(r, "x-amz-server-side-encryption"), "AES256");
	CU_ASSERT_PTR_NULL(fx_header(r, "x-amz-server-side-encryption-aws-kms-key-id"));
	s_teardown(&e);
}

static CU_TestInfo s_tests[] = {
	{ "open_probes_with_a_one_key_listing_of_the_prefix",
	  test_open_probes_with_a_one_key_listing_of_the_prefix },
	{ "open_with_a_wrong_secret_is_eacces_naming_the_code_not_the_secret",
	  test_open_with_a_wrong_secret_is_eacces_naming_the_code_not_the_secret },
	{ "open_of_a_missing_bucket_says_so", test_open_of_a_missing_bucket_says_so },
	{ "open_in_the_wrong_region_names_the_buckets_region",
	  test_open_in_the_wrong_region_names_the_buckets_region },
	{ "requests_are_path_style_and_signed_over_the_body_hash",
	  test_requests_are_path_style_and_signed_over_the_body_hash },
	{ "get_and_head_send_the_empty_body_hash", test_get_and_head_send_the_empty_body_hash },
	{ "put_of_an_empty_object_then_get_it", test_put_of_an_empty_object_then_get_it },
	{ "put_signs_the_callers_sha256_instead_of_hashing",
	  test_put_signs_the_callers_sha256_instead_of_hashing },
	{ "virtual_addressing_puts_the_bucket_in_the_host",
	  test_virtual_addressing_puts_the_bucket_in_the_host },
	{ "put_if_none_match_sends_star_and_412_is_eexist",
	  test_put_if_none_match_sends_star_and_412_is_eexist },
	{ "put_if_match_sends_the_etag_and_412_is_eprecond",
	  test_put_if_match_sends_the_etag_and_412_is_eprecond },
	{ "get_returns_body_and_etag", test_get_returns_body_and_etag },
	{ "get_of_an_empty_object_returns_nothing", test_get_of_an_empty_object_returns_nothing },
	{ "get_of_a_missing_key_is_enoent", test_get_of_a_missing_key_is_enoent },
	{ "head_gives_the_size_or_enoent", test_head_gives_the_size_or_enoent },
	{ "del_of_a_missing_key_is_0", test_del_of_a_missing_key_is_0 },
	{ "put_503_then_200_is_retried", test_put_503_then_200_is_retried },
	{ "put_slowdown_is_retried", test_put_slowdown_is_retried },
	{ "put_400_invalid_argument_is_not_retried", test_put_400_invalid_argument_is_not_retried },
	{ "put_403_access_denied_is_eacces_not_retried",
	  test_put_403_access_denied_is_eacces_not_retried },
	{ "put_on_a_reset_connection_is_retried", test_put_on_a_reset_connection_is_retried },
	{ "put_409_conditional_request_conflict_is_retried",
	  test_put_409_conditional_request_conflict_is_retried },
	{ "expired_token_is_retried_once_with_fresh_credentials",
	  test_expired_token_is_retried_once_with_fresh_credentials },
	{ "deadline_ends_retries_early", test_deadline_ends_retries_early },
	{ "cancel_ends_a_put_whose_answer_trickles", test_cancel_ends_a_put_whose_answer_trickles },
	{ "cancel_ends_a_multipart_put_in_flight", test_cancel_ends_a_multipart_put_in_flight },
	{ "cancel_ends_the_wait_between_retries", test_cancel_ends_the_wait_between_retries },
	{ "a_canceled_store_sends_nothing", test_a_canceled_store_sends_nothing },
	{ "the_deadline_ends_a_put_whose_answer_trickles",
	  test_the_deadline_ends_a_put_whose_answer_trickles },
	{ "nothing_is_sent_once_the_deadline_has_passed",
	  test_nothing_is_sent_once_the_deadline_has_passed },
	{ "get_error_answers_of_every_length_are_retried_not_taken_for_the_object",
	  test_get_error_answers_of_every_length_are_retried_not_taken_for_the_object },
	{ "ranged_get_error_answers_longer_than_the_range_are_retried",
	  test_ranged_get_error_answers_longer_than_the_range_are_retried },
	{ "get_that_only_gets_long_503s_fails_with_the_503_not_etoobig",
	  test_get_that_only_gets_long_503s_fails_with_the_503_not_etoobig },
	{ "get_of_an_object_bigger_than_the_buffer_is_etoobig_at_once",
	  test_get_of_an_object_bigger_than_the_buffer_is_etoobig_at_once },
	{ "create_only_put_applied_but_answer_lost_holding_our_bytes_succeeds",
	  test_create_only_put_applied_but_answer_lost_holding_our_bytes_succeeds },
	{ "create_only_put_applied_but_answer_lost_holding_other_bytes_is_eexist",
	  test_create_only_put_applied_but_answer_lost_holding_other_bytes_is_eexist },
	{ "create_only_put_meeting_an_existing_object_at_once_is_eexist_unread",
	  test_create_only_put_meeting_an_existing_object_at_once_is_eexist_unread },
	{ "create_only_multipart_completion_applied_but_answer_lost_succeeds",
	  test_create_only_multipart_completion_applied_but_answer_lost_succeeds },
	{ "request_time_too_skewed_is_retried_with_the_server_time",
	  test_request_time_too_skewed_is_retried_with_the_server_time },
	{ "request_time_too_skewed_without_server_time_uses_the_date_header",
	  test_request_time_too_skewed_without_server_time_uses_the_date_header },
	{ "request_time_too_skewed_without_a_time_is_not_retried",
	  test_request_time_too_skewed_without_a_time_is_not_retried },
	{ "list_follows_continuation_tokens_and_strips_the_prefix",
	  test_list_follows_continuation_tokens_and_strips_the_prefix },
	{ "list_stops_with_the_callbacks_value", test_list_stops_with_the_callbacks_value },
	{ "del_many_posts_delete_with_content_md5_and_prefixed_keys",
	  test_del_many_posts_delete_with_content_md5_and_prefixed_keys },
	{ "multipart_put_initiates_uploads_3_parts_and_completes_in_order",
	  test_multipart_put_initiates_uploads_3_parts_and_completes_in_order },
	{ "multipart_parts_are_in_flight_together", test_multipart_parts_are_in_flight_together },
	{ "multipart_part_failing_once_with_500_is_retried",
	  test_multipart_part_failing_once_with_500_is_retried },
	{ "part_failing_for_good_aborts_the_upload", test_part_failing_for_good_aborts_the_upload },
	{ "complete_200_with_padded_internal_error_is_retried",
	  test_complete_200_with_padded_internal_error_is_retried },
	{ "complete_200_with_access_denied_fails_and_aborts",
	  test_complete_200_with_access_denied_fails_and_aborts },
	{ "complete_refused_500_then_503_is_tried_again_not_aborted",
	  test_complete_refused_500_then_503_is_tried_again_not_aborted },
	{ "failed_abort_keeps_the_reason_of_the_failed_upload",
	  test_failed_abort_keeps_the_reason_of_the_failed_upload },
	{ "multipart_if_none_match_goes_on_the_completion",
	  test_multipart_if_none_match_goes_on_the_completion },
	{ "ranged_get_of_12_mib_reassembles_with_if_match",
	  test_ranged_get_of_12_mib_reassembles_with_if_match },
	{ "ranged_get_over_the_buffer_ceiling_is_etoobig",
	  test_ranged_get_over_the_buffer_ceiling_is_etoobig },
	{ "ranged_get_with_a_bad_content_range_is_eio",
	  test_ranged_get_with_a_bad_content_range_is_eio },
	{ "ranged_get_with_a_short_later_range_is_eio",
	  test_ranged_get_with_a_short_later_range_is_eio },
	{ "four_threads_share_one_store", test_four_threads_share_one_store },
	{ "sse_kms_headers_go_on_put_and_initiate_not_on_parts",
	  test_sse_kms_headers_go_on_put_and_initiate_not_on_parts },
	{ "sse_aes256_sends_no_kms_key", test_sse_aes256_sends_no_kms_key },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("store_s3", s_tests)
