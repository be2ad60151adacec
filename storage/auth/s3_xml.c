/* The S3 API's XML, read with expat and written with escaping (include/rr/s3_xml.h).
 *
 * Every parser runs one engine (s_run): expat with namespace processing, so an element is
 * known by its local name whatever prefix or xmlns the server used; no DOCTYPE, so no
 * entity can be declared or expanded; a nesting limit; and the path of local names from
 * the root ("ListBucketResult/Contents/Key"), so that a name means something only where
 * the document shape puts it. A parser lists the paths whose text it wants (struct
 * s_field), each with a bounded buffer: a text that does not fit is refused, not cut, and
 * a field that appears twice where one is expected is refused too, since the two copies
 * could mean different things to different readers. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <expat.h>
#include <openssl/crypto.h> /* OPENSSL_cleanse */

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/s3_xml.h"
#include "rr/timefmt.h"

#define S_NS_SEP '|'         /* expat reports "uri|local"; '|' is not a name character */
#define S_MAX_DEPTH 32       /* S3 documents nest five deep */
#define S_PATH_CAP 256       /* longer paths are none of ours */
#define S_ROOT_CAP 64
#define S_KEY_MAX 1024       /* S3's limit on a key, in bytes */
#define S_NUM_CAP 24         /* a uint64 has at most 20 digits */
#define S_TIME_CAP 64
#define S_BOOL_CAP 8
#define S_MAX_PARTS 10000    /* S3's limit on parts of a multipart upload */
#define S_MAX_DELETE 1000    /* S3's limit on keys of one DeleteObjects */
#define S_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"

struct s_field {
	const char *path; /* local names from the root, '/'-separated */
	char *buf;        /* the text, NUL-terminated */
	size_t cap;       /* bytes of buf, NUL included */
	int seen;
};

struct s_doc;
/* Called when an element on a tracked path starts (start = 1) and ends (0), with d->path
 * naming it; a nonzero return stops the parse and is its result. */
typedef int (*s_element_fn)(struct s_doc *d, int start);

struct s_doc {
	XML_Parser xp;
	char path[S_PATH_CAP];
	size_t path_len;
	size_t plen[S_MAX_DEPTH]; /* path_len before each tracked element */
	unsigned depth;           /* open elements */
	unsigned tracked;         /* how many of them path names (the outermost ones) */
	char root[S_ROOT_CAP];    /* local name of the root element, "" when too long */
	struct s_field *fields;
	size_t nfields;
	struct s_field *cur; /* the field whose text is being read */
	size_t cur_len;
	s_element_fn on_element;
	void *ud;
	int rc; /* why the parse was stopped, 0 while it runs */
};

/* --- the engine ---------------------------------------------------------------------- */

static void s_fields_reset(struct s_field *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		f[i].seen = 0;
		f[i].buf[0] = '\0';
	}
}

static void s_doc_init(struct s_doc *d, struct s_field *fields, size_t nfields,
		       s_element_fn on_element, void *ud)
{
	memset(d, 0, sizeof(*d));
	d->fields = fields;
	d->nfields = nfields;
	d->on_element = on_element;
	d->ud = ud;
	s_fields_reset(fields, nfields);
}

static void s_stop(struct s_doc *d, int rc)
{
	if (!d->rc) {
		d->rc = rc;
		XML_StopParser(d->xp, XML_FALSE);
	}
}

static const char *s_local(const XML_Char *name)
{
	const char *sep = strrchr(name, S_NS_SEP);
	return sep ? sep + 1 : name;
}

/* Starts reading the text of the field on the path just entered, if there is one. */
static int s_match(struct s_doc *d)
{
	for (size_t i = 0; i < d->nfields; i++) {
		struct s_field *f = &d->fields[i];

		if (strcmp(f->path, d->path) != 0)
			continue;
		if (f->seen)
			return RR_ECORRUPT; /* two values for one field */
		f->seen = 1;
		f->buf[0] = '\0';
		d->cur = f;
		d->cur_len = 0;
		return 0;
	}
	return 0;
}

/* Appends the element's local name to the path; 0 when it did not fit (the element and
 * everything inside it then stay untracked: no path of ours is that long). */
static int s_push(struct s_doc *d, const char *local)
{
	size_t n = strlen(local), sep = d->tracked ? 1 : 0;

	if (n >= S_PATH_CAP || d->path_len + sep + n >= S_PATH_CAP)
		return 0;
	d->plen[d->tracked++] = d->path_len;
	if (sep)
		d->path[d->path_len++] = '/';
	memcpy(d->path + d->path_len, local, n + 1);
	d->path_len += n;
	return 1;
}

static void XMLCALL s_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
	struct s_doc *d = ud;
	const char *local = s_local(name);
	int rc;

	(void)atts;
	if (d->rc)
		return;
	if (d->cur || d->depth == S_MAX_DEPTH) {
		/* markup inside a text value, or nesting no S3 document has */
		s_stop(d, RR_ECORRUPT);
		return;
	}
	if (d->depth++ == 0 && strlen(local) < sizeof(d->root))
		memcpy(d->root, local, strlen(local) + 1);
	if (d->tracked + 1 != d->depth || !s_push(d, local))
		return;
	rc = d->on_element ? d->on_element(d, 1) : 0;
	if (!rc)
		rc = s_match(d);
	if (rc)
		s_stop(d, rc);
}

static void XMLCALL s_end(void *ud, const XML_Char *name)
{
	struct s_doc *d = ud;
	int rc;

	(void)name;
	if (d->rc)
		return;
	if (d->depth-- > d->tracked)
		return;
	d->cur = NULL;
	rc = d->on_element ? d->on_element(d, 0) : 0;
	if (rc) {
		s_stop(d, rc);
		return;
	}
	d->path_len = d->plen[--d->tracked];
	d->path[d->path_len] = '\0';
}

static void XMLCALL s_text(void *ud, const XML_Char *s, int len)
{
	struct s_doc *d = ud;
	struct s_field *f = d->cur;

	if (d->rc || !f || len <= 0)
		return;
	if ((size_t)len >= f->cap - d->cur_len) {
		s_stop(d, RR_ECORRUPT); /* longer than its field: refused, never cut */
		return;
	}
	memcpy(f->buf + d->cur_len, s, (size_t)len);
	d->cur_len += (size_t)len;
	f->buf[d->cur_len] = '\0';
}

/* A DTD could declare entities (billion laughs, external files): S3 never sends one. */
static void XMLCALL s_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
			      const XML_Char *pubid, int has_internal_subset)
{
	(void)name;
	(void)sysid;
	(void)pubid;
	(void)has_internal_subset;
	s_stop(ud, RR_ECORRUPT);
}

static void XMLCALL s_entity(void *ud, const XML_Char *name, int is_parameter_entity,
			     const XML_Char *value, int value_length, const XML_Char *base,
			     const XML_Char *sysid, const XML_Char *pubid,
			     const XML_Char *notation)
{
	(void)name;
	(void)is_parameter_entity;
	(void)value;
	(void)value_length;
	(void)base;
	(void)sysid;
	(void)pubid;
	(void)notation;
	s_stop(ud, RR_ECORRUPT);
}

static int s_is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Parses one whole document into d. Leading whitespace is skipped: S3 pads a
 * CompleteMultipartUpload answer with it while it works, ahead of the XML declaration
 * (which expat accepts only as the very first bytes). */
static int s_run(struct s_doc *d, const void *xml, size_t len)
{
	const char *p = xml;
	int rc;

	if (!xml && len)
		return RR_EINVAL;
	if (len > RR_S3_XML_MAX)
		return RR_ETOOBIG;
	while (len && s_is_space((unsigned char)*p)) {
		p++;
		len--;
	}
	if (!len)
		return RR_ECORRUPT;
	d->xp = XML_ParserCreateNS(NULL, S_NS_SEP);
	if (!d->xp)
		return RR_ENOMEM;
	XML_SetUserData(d->xp, d);
	XML_SetElementHandler(d->xp, s_start, s_end);
	XML_SetCharacterDataHandler(d->xp, s_text);
	XML_SetStartDoctypeDeclHandler(d->xp, s_doctype);
	XML_SetEntityDeclHandler(d->xp, s_entity);
	/* len <= RR_S3_XML_MAX, so it fits an int */
	if (XML_Parse(d->xp, p, (int)len, XML_TRUE) == XML_STATUS_OK)
		rc = d->rc;
	else if (d->rc)
		rc = d->rc;
	else if (XML_GetErrorCode(d->xp) == XML_ERROR_NO_MEMORY)
		rc = RR_ENOMEM;
	else
		rc = RR_ECORRUPT;
	XML_ParserFree(d->xp);
	d->xp = NULL;
	return rc;
}

/* --- values -------------------------------------------------------------------------- */

/* A decimal without sign, leading zeros or overflow. */
static int s_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s || (s[0] == '0' && s[1]))
		return RR_ECORRUPT;
	for (; *s; s++) {
		unsigned dig = (unsigned)(*s - '0');
		if (dig > 9 || v > (UINT64_MAX - dig) / 10)
			return RR_ECORRUPT;
		v = v * 10 + dig;
	}
	*out = v;
	return 0;
}

static int s_parse_bool(const char *s, int *out)
{
	if (strcmp(s, "true") == 0)
		*out = 1;
	else if (strcmp(s, "false") == 0)
		*out = 0;
	else
		return RR_ECORRUPT;
	return 0;
}

/* --- <Error> ------------------------------------------------------------------------- */

static void s_error_clear(struct rr_s3_error *e)
{
	if (e)
		memset(e, 0, sizeof(*e));
}

/* Three fields that read an error's Code, Message and RequestId into e, which starts
 * empty: a document without ServerTime (or a parser that does not look for it) leaves ""
 * there, never what the caller's stack held. */
static void s_error_fields(struct s_field f[3], struct rr_s3_error *e, const char *code,
			   const char *message, const char *request_id)
{
	memset(e, 0, sizeof(*e));
	f[0] = (struct s_field){ code, e->code, sizeof(e->code), 0 };
	f[1] = (struct s_field){ message, e->message, sizeof(e->message), 0 };
	f[2] = (struct s_field){ request_id, e->request_id, sizeof(e->request_id), 0 };
}

int rr_s3_xml_parse_error(const void *xml, size_t len, struct rr_s3_error *out)
{
	struct s_field f[4];
	struct s_doc d;
	int rc;

	if (!out)
		return RR_EINVAL;
	s_error_fields(f, out, "Error/Code", "Error/Message", "Error/RequestId");
	f[3] = (struct s_field){ "Error/ServerTime", out->server_time, sizeof(out->server_time),
				 0 };
	s_doc_init(&d, f, 4, NULL, NULL);
	rc = s_run(&d, xml, len);
	if (!rc && strcmp(d.root, "Error") != 0)
		rc = RR_ENOENT;
	if (rc)
		s_error_clear(out);
	return rc;
}

/* --- multipart upload ---------------------------------------------------------------- */

int rr_s3_xml_parse_initiate(const void *xml, size_t len, char *upload_id, size_t cap)
{
	struct s_field f[] = {
		{ "InitiateMultipartUploadResult/UploadId", upload_id, cap, 0 },
	};
	struct s_doc d;
	int rc;

	if (!upload_id || !cap)
		return RR_EINVAL;
	s_doc_init(&d, f, 1, NULL, NULL);
	rc = s_run(&d, xml, len);
	if (!rc && (strcmp(d.root, "InitiateMultipartUploadResult") != 0 || !upload_id[0]))
		rc = RR_ECORRUPT;
	if (rc)
		upload_id[0] = '\0';
	return rc;
}

int rr_s3_xml_parse_complete(const void *xml, size_t len, struct rr_s3_error *err)
{
	struct rr_s3_error scratch, *e = err ? err : &scratch;
	struct s_field f[3];
	struct s_doc d;
	int rc;

	s_error_fields(f, e, "Error/Code", "Error/Message", "Error/RequestId");
	s_doc_init(&d, f, 3, NULL, NULL);
	rc = s_run(&d, xml, len);
	if (!rc && strcmp(d.root, "Error") == 0)
		return RR_EIO;
	if (!rc && strcmp(d.root, "CompleteMultipartUploadResult") != 0)
		rc = RR_ECORRUPT;
	s_error_clear(err);
	return rc;
}

/* --- ListObjectsV2 ------------------------------------------------------------------- */

enum { S_L_TRUNCATED, S_L_TOKEN, S_L_KEY, S_L_SIZE, S_L_MTIME, S_L_N };

struct s_list {
	rr_s3_object_cb cb; /* NULL while checking the whole document first */
	void *ud;
	char key[S_KEY_MAX + 1];
	char size[S_NUM_CAP];
	char mtime[S_TIME_CAP];
};

static int s_list_element(struct s_doc *d, int start)
{
	struct s_list *l = d->ud;
	struct s_field *f = d->fields;
	struct rr_s3_object o;

	if (strcmp(d->path, "ListBucketResult/Contents") != 0)
		return 0;
	if (start) {
		s_fields_reset(f + S_L_KEY, S_L_MTIME - S_L_KEY + 1);
		return 0;
	}
	/* an entry without its key, size or time would be a guess, not a listing */
	if (!l->key[0] || !f[S_L_SIZE].seen || !f[S_L_MTIME].seen)
		return RR_ECORRUPT;
	o.key = l->key;
	if (s_parse_u64(l->size, &o.size) || rr_iso8601_to_unix_ms(l->mtime, &o.mtime_unix_ms))
		return RR_ECORRUPT;
	return l->cb ? l->cb(&o, l->ud) : 0;
}

static int s_list_pass(struct s_list *l, const void *xml, size_t len, int *truncated,
		       char *next_token, size_t cap)
{
	char flag[S_BOOL_CAP];
	struct s_field f[S_L_N] = {
		[S_L_TRUNCATED] = { "ListBucketResult/IsTruncated", flag, sizeof(flag), 0 },
		[S_L_TOKEN] = { "ListBucketResult/NextContinuationToken", next_token, cap, 0 },
		[S_L_KEY] = { "ListBucketResult/Contents/Key", l->key, sizeof(l->key), 0 },
		[S_L_SIZE] = { "ListBucketResult/Contents/Size", l->size, sizeof(l->size), 0 },
		[S_L_MTIME] = { "ListBucketResult/Contents/LastModified", l->mtime,
				sizeof(l->mtime), 0 },
	};
	struct s_doc d;
	int rc;

	s_doc_init(&d, f, S_L_N, s_list_element, l);
	rc = s_run(&d, xml, len);
	if (rc)
		return rc;
	if (strcmp(d.root, "ListBucketResult") != 0 || s_parse_bool(flag, truncated))
		return RR_ECORRUPT;
	/* a truncated page without a token cannot be continued: it would end the listing
	 * early, and a caller deciding what to delete must not see a partial listing whole */
	if (*truncated && !next_token[0])
		return RR_ECORRUPT;
	return 0;
}

int rr_s3_xml_parse_list(const void *xml, size_t len, rr_s3_object_cb cb, void *ud,
			 int *truncated, char *next_token, size_t cap)
{
	struct s_list l;
	int rc;

	if (!truncated || !next_token || !cap)
		return RR_EINVAL;
	/* The whole page is checked before the first callback, so a caller never acts on
	 * the entries of a document that turns out cut or malformed further on. */
	memset(&l, 0, sizeof(l));
	rc = s_list_pass(&l, xml, len, truncated, next_token, cap);
	if (!rc && cb) {
		l.cb = cb;
		l.ud = ud;
		rc = s_list_pass(&l, xml, len, truncated, next_token, cap);
	}
	if (rc) {
		*truncated = 0;
		next_token[0] = '\0';
	}
	return rc;
}

/* --- DeleteObjects ------------------------------------------------------------------- */

enum { S_D_KEY, S_D_CODE, S_D_MESSAGE, S_D_N };

struct s_delete {
	char key[S_KEY_MAX + 1];
	struct rr_s3_error e; /* of the <Error> being read */
	int nerrors;
	char *first_key;
	size_t key_cap;
	struct rr_s3_error *first_err;
};

static int s_delete_element(struct s_doc *d, int start)
{
	struct s_delete *x = d->ud;
	size_t n;

	if (strcmp(d->path, "DeleteResult/Error") != 0)
		return 0;
	if (start) {
		s_fields_reset(d->fields, d->nfields);
		return 0;
	}
	if (x->nerrors == INT_MAX)
		return RR_ECORRUPT;
	if (x->nerrors++)
		return 0;
	n = strlen(x->key);
	if (x->first_key) {
		if (n >= x->key_cap)
			return RR_ECORRUPT; /* the caller's field is too small: refused, not cut */
		memcpy(x->first_key, x->key, n + 1);
	}
	if (x->first_err)
		*x->first_err = x->e;
	return 0;
}

int rr_s3_xml_parse_delete(const void *xml, size_t len, char *first_key, size_t key_cap,
			   struct rr_s3_error *first_err)
{
	struct s_delete x;
	struct s_field f[S_D_N] = {
		[S_D_KEY] = { "DeleteResult/Error/Key", x.key, sizeof(x.key), 0 },
		[S_D_CODE] = { "DeleteResult/Error/Code", x.e.code, sizeof(x.e.code), 0 },
		[S_D_MESSAGE] = { "DeleteResult/Error/Message", x.e.message,
				  sizeof(x.e.message), 0 },
	};
	struct s_doc d;
	int rc;

	if (first_key && !key_cap)
		return RR_EINVAL;
	memset(&x, 0, sizeof(x));
	x.first_key = first_key;
	x.key_cap = key_cap;
	x.first_err = first_err;
	if (first_key)
		first_key[0] = '\0';
	s_error_clear(first_err);
	s_doc_init(&d, f, S_D_N, s_delete_element, &x);
	rc = s_run(&d, xml, len);
	if (!rc && strcmp(d.root, "DeleteResult") != 0)
		rc = RR_ECORRUPT;
	if (rc) {
		if (first_key)
			first_key[0] = '\0';
		s_error_clear(first_err);
		return rc;
	}
	return x.nerrors;
}

/* --- STS ----------------------------------------------------------------------------- */

#define S_STS_CREDS "AssumeRoleWithWebIdentityResponse/AssumeRoleWithWebIdentityResult/Credentials/"

int rr_s3_xml_parse_sts(const void *xml, size_t len, struct rr_s3_xml_credentials *out,
			struct rr_s3_error *err)
{
	struct rr_s3_error scratch, *e = err ? err : &scratch;
	struct s_field f[7];
	struct s_doc d;
	int64_t ms;
	int rc;

	if (!out)
		return RR_EINVAL;
	f[0] = (struct s_field){ S_STS_CREDS "AccessKeyId", out->access_key_id,
				 sizeof(out->access_key_id), 0 };
	f[1] = (struct s_field){ S_STS_CREDS "SecretAccessKey", out->secret_access_key,
				 sizeof(out->secret_access_key), 0 };
	f[2] = (struct s_field){ S_STS_CREDS "SessionToken", out->session_token,
				 sizeof(out->session_token), 0 };
	f[3] = (struct s_field){ S_STS_CREDS "Expiration", out->expiration,
				 sizeof(out->expiration), 0 };
	s_error_fields(f + 4, e, "ErrorResponse/Error/Code", "ErrorResponse/Error/Message",
		       "ErrorResponse/RequestId");
	s_doc_init(&d, f, 7, NULL, NULL);
	rc = s_run(&d, xml, len);
	if (!rc && strcmp(d.root, "ErrorResponse") == 0) {
		rc = RR_EACCES;
		goto out;
	}
	s_error_clear(err);
	if (!rc && strcmp(d.root, "AssumeRoleWithWebIdentityResponse") != 0)
		rc = RR_ECORRUPT;
	/* all four, and a time the refresh logic can use */
	if (!rc && (!out->access_key_id[0] || !out->secret_access_key[0] ||
		    !out->session_token[0] || rr_iso8601_to_unix_ms(out->expiration, &ms)))
		rc = RR_ECORRUPT;
out:
	if (rc)
		OPENSSL_cleanse(out, sizeof(*out));
	return rc;
}

/* --- writing ------------------------------------------------------------------------- */

/* The entity for byte c, or NULL when c stands for itself. CR and LF are written as
 * references too: a parser turns a literal CR (or CR LF) into LF, so a key holding one
 * would reach S3 as another key. */
static const char *s_entity_for(unsigned char c, char tmp[8])
{
	switch (c) {
	case '&': return "&amp;";
	case '<': return "&lt;";
	case '>': return "&gt;";
	case '"': return "&quot;";
	case '\'': return "&apos;";
	case '\r': return "&#13;";
	case '\n': return "&#10;";
	case '\t': return NULL;
	}
	if (c < 0x20 || c == 0x7f) {
		snprintf(tmp, 8, "&#x%02X;", c);
		return tmp;
	}
	return NULL;
}

int rr_s3_xml_escape(struct rr_buf *out, const char *text, size_t len)
{
	size_t start = out->len, run = 0;
	char tmp[8];
	int rc = 0;

	if (!out || (!text && len))
		return RR_EINVAL;
	if (!len)
		return 0;
	for (size_t i = 0; i < len && !rc; i++) {
		const char *ent = s_entity_for((unsigned char)text[i], tmp);

		if (!ent)
			continue;
		rc = rr_buf_append(out, text + run, i - run);
		if (!rc)
			rc = rr_buf_append(out, ent, strlen(ent));
		run = i + 1;
	}
	if (!rc)
		rc = rr_buf_append(out, text + run, len - run);
	if (rc) {
		out->len = start;
		if (out->data)
			out->data[start] = '\0';
	}
	return rc;
}

static int s_append(struct rr_buf *out, const char *s)
{
	return rr_buf_append(out, s, strlen(s));
}

static int s_complete_part(struct rr_buf *out, const char *etag, size_t number)
{
	int rc = s_append(out, "<Part><ETag>");
	if (!rc)
		rc = rr_s3_xml_escape(out, etag, strlen(etag));
	if (!rc)
		rc = rr_buf_printf(out, "</ETag><PartNumber>%zu</PartNumber></Part>", number);
	return rc;
}

int rr_s3_xml_complete_body(struct rr_buf *out, const char *const *etags, size_t n)
{
	int rc;

	if (!out || !etags || n == 0 || n > S_MAX_PARTS)
		return RR_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!etags[i] || !etags[i][0])
			return RR_EINVAL;
	rr_buf_reset(out);
	rc = s_append(out, "<CompleteMultipartUpload xmlns=\"" S_XMLNS "\">");
	for (size_t i = 0; i < n && !rc; i++)
		rc = s_complete_part(out, etags[i], i + 1);
	if (!rc)
		rc = s_append(out, "</CompleteMultipartUpload>");
	if (rc)
		rr_buf_reset(out);
	return rc;
}

static int s_delete_object(struct rr_buf *out, const char *key)
{
	int rc = s_append(out, "<Object><Key>");
	if (!rc)
		rc = rr_s3_xml_escape(out, key, strlen(key));
	if (!rc)
		rc = s_append(out, "</Key></Object>");
	return rc;
}

int rr_s3_xml_delete_body(struct rr_buf *out, const char *const *keys, size_t n)
{
	int rc;

	if (!out || !keys || n == 0 || n > S_MAX_DELETE)
		return RR_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!keys[i] || !keys[i][0] || strlen(keys[i]) > S_KEY_MAX)
			return RR_EINVAL;
	rr_buf_reset(out);
	rc = s_append(out, "<Delete xmlns=\"" S_XMLNS "\"><Quiet>true</Quiet>");
	for (size_t i = 0; i < n && !rc; i++)
		rc = s_delete_object(out, keys[i]);
	if (!rc)
		rc = s_append(out, "</Delete>");
	if (rc)
		rr_buf_reset(out);
	return rc;
}
