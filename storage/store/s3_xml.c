/* S3's XML answers and request bodies (include/rr/s3_xml.h): error documents,
 * ListObjectsV2 pages, multipart initiate/complete, DeleteObjects. Read with the engine of
 * storage/common/xml.c, which names each wanted text by its path from the root and bounds
 * it; written with its escaping. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/s3_xml.h"
#include "rr/timefmt.h"
#include "rr/xml.h"

#define S_KEY_MAX 1024       /* S3's limit on a key, in bytes */
#define S_NUM_CAP 24         /* a uint64 has at most 20 digits */
#define S_TIME_CAP 64
#define S_BOOL_CAP 8
#define S_MAX_PARTS 10000    /* S3's limit on parts of a multipart upload */
#define S_MAX_DELETE 1000    /* S3's limit on keys of one DeleteObjects */
#define S_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"

/* --- <Error> ------------------------------------------------------------------------- */

static void s_error_clear(struct rr_s3_error *e)
{
	if (e)
		memset(e, 0, sizeof(*e));
}

/* Three fields that read an error's Code, Message and RequestId into e, which starts
 * empty: a document without ServerTime (or a parser that does not look for it) leaves ""
 * there, never what the caller's stack held. */
static void s_error_fields(struct rr_xml_field f[3], struct rr_s3_error *e, const char *code,
			   const char *message, const char *request_id)
{
	memset(e, 0, sizeof(*e));
	f[0] = (struct rr_xml_field){ code, e->code, sizeof(e->code), 0 };
	f[1] = (struct rr_xml_field){ message, e->message, sizeof(e->message), 0 };
	f[2] = (struct rr_xml_field){ request_id, e->request_id, sizeof(e->request_id), 0 };
}

int rr_s3_xml_parse_error(const void *xml, size_t len, struct rr_s3_error *out)
{
	struct rr_xml_field f[4];
	struct rr_xml_doc d;
	int rc;

	if (!out)
		return RR_EINVAL;
	s_error_fields(f, out, "Error/Code", "Error/Message", "Error/RequestId");
	f[3] = (struct rr_xml_field){ "Error/ServerTime", out->server_time,
				      sizeof(out->server_time), 0 };
	rr_xml_doc_init(&d, f, 4, NULL, NULL);
	rc = rr_xml_parse(&d, xml, len);
	if (!rc && strcmp(d.root, "Error") != 0)
		rc = RR_ENOENT;
	if (rc)
		s_error_clear(out);
	return rc;
}

/* --- multipart upload ---------------------------------------------------------------- */

int rr_s3_xml_parse_initiate(const void *xml, size_t len, char *upload_id, size_t cap)
{
	struct rr_xml_field f[] = {
		{ "InitiateMultipartUploadResult/UploadId", upload_id, cap, 0 },
	};
	struct rr_xml_doc d;
	int rc;

	if (!upload_id || !cap)
		return RR_EINVAL;
	rr_xml_doc_init(&d, f, 1, NULL, NULL);
	rc = rr_xml_parse(&d, xml, len);
	if (!rc && (strcmp(d.root, "InitiateMultipartUploadResult") != 0 || !upload_id[0]))
		rc = RR_ECORRUPT;
	if (rc)
		upload_id[0] = '\0';
	return rc;
}

int rr_s3_xml_parse_complete(const void *xml, size_t len, struct rr_s3_error *err)
{
	struct rr_s3_error scratch, *e = err ? err : &scratch;
	struct rr_xml_field f[3];
	struct rr_xml_doc d;
	int rc;

	s_error_fields(f, e, "Error/Code", "Error/Message", "Error/RequestId");
	rr_xml_doc_init(&d, f, 3, NULL, NULL);
	rc = rr_xml_parse(&d, xml, len);
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

static int s_list_element(struct rr_xml_doc *d, int start)
{
	struct s_list *l = d->ud;
	struct rr_xml_field *f = d->fields;
	struct rr_s3_object o;

	if (strcmp(d->path, "ListBucketResult/Contents") != 0)
		return 0;
	if (start) {
		rr_xml_fields_reset(f + S_L_KEY, S_L_MTIME - S_L_KEY + 1);
		return 0;
	}
	/* an entry without its key, size or time would be a guess, not a listing */
	if (!l->key[0] || !f[S_L_SIZE].seen || !f[S_L_MTIME].seen)
		return RR_ECORRUPT;
	o.key = l->key;
	if (rr_xml_parse_u64(l->size, &o.size) || rr_iso8601_to_unix_ms(l->mtime, &o.mtime_unix_ms))
		return RR_ECORRUPT;
	return l->cb ? l->cb(&o, l->ud) : 0;
}

static int s_list_pass(struct s_list *l, const void *xml, size_t len, int *truncated,
		       char *next_token, size_t cap)
{
	char flag[S_BOOL_CAP];
	struct rr_xml_field f[S_L_N] = {
		[S_L_TRUNCATED] = { "ListBucketResult/IsTruncated", flag, sizeof(flag), 0 },
		[S_L_TOKEN] = { "ListBucketResult/NextContinuationToken", next_token, cap, 0 },
		[S_L_KEY] = { "ListBucketResult/Contents/Key", l->key, sizeof(l->key), 0 },
		[S_L_SIZE] = { "ListBucketResult/Contents/Size", l->size, sizeof(l->size), 0 },
		[S_L_MTIME] = { "ListBucketResult/Contents/LastModified", l->mtime,
				sizeof(l->mtime), 0 },
	};
	struct rr_xml_doc d;
	int rc;

	rr_xml_doc_init(&d, f, S_L_N, s_list_element, l);
	rc = rr_xml_parse(&d, xml, len);
	if (rc)
		return rc;
	if (strcmp(d.root, "ListBucketResult") != 0 || rr_xml_parse_bool(flag, truncated))
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

static int s_delete_element(struct rr_xml_doc *d, int start)
{
	struct s_delete *x = d->ud;
	size_t n;

	if (strcmp(d->path, "DeleteResult/Error") != 0)
		return 0;
	if (start) {
		rr_xml_fields_reset(d->fields, d->nfields);
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
	struct rr_xml_field f[S_D_N] = {
		[S_D_KEY] = { "DeleteResult/Error/Key", x.key, sizeof(x.key), 0 },
		[S_D_CODE] = { "DeleteResult/Error/Code", x.e.code, sizeof(x.e.code), 0 },
		[S_D_MESSAGE] = { "DeleteResult/Error/Message", x.e.message,
				  sizeof(x.e.message), 0 },
	};
	struct rr_xml_doc d;
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
	rr_xml_doc_init(&d, f, S_D_N, s_delete_element, &x);
	rc = rr_xml_parse(&d, xml, len);
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

/* --- writing ------------------------------------------------------------------------- */

int rr_s3_xml_escape(struct rr_buf *out, const char *text, size_t len)
{
	return rr_xml_escape(out, text, len);
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
