/* The XML of the S3 API (storage/store/s3_xml.c), read with the engine of rr/xml.h and
 * written with escaping: error documents, ListObjectsV2 pages, multipart initiate/complete,
 * DeleteObjects. Every parser has a size ceiling, treats element names by their local name
 * (namespace prefixes and xmlns values vary between S3 and its clones), refuses
 * DOCTYPE/entity declarations (no entity expansion attacks), and copies text only into
 * bounded fields: an over-long value is RR_ECORRUPT, never truncated. STS's answer is read
 * beside the provider that asks for it (rr_s3_xml_parse_sts in rr/aws_credentials.h). */
#ifndef RR_S3_XML_H
#define RR_S3_XML_H

#include <stddef.h>
#include <stdint.h>

#include "rr/aws_credentials.h"
#include "rr/buf.h"
#include "rr/xml.h"

#define RR_S3_XML_MAX RR_XML_MAX /* ceiling on any XML document read */

/* struct rr_s3_error (the fields of an AWS error document) is in rr/aws_credentials.h,
 * whose STS reader fills it too. */

/* Parses an S3 <Error> document (Code, Message, RequestId, ServerTime). Returns 0 when the
 * root element is Error (fields filled; missing ones ""), RR_ENOENT when the document is
 * well-formed but its root is something else, RR_ECORRUPT when it is not well-formed XML
 * (e.g. an HTML page from a proxy). */
int rr_s3_xml_parse_error(const void *xml, size_t len, struct rr_s3_error *out);

/* <InitiateMultipartUploadResult>: copies UploadId (at most cap-1 bytes). */
int rr_s3_xml_parse_initiate(const void *xml, size_t len, char *upload_id, size_t cap);

/* The body of a CompleteMultipartUpload answered 200: 0 for a
 * <CompleteMultipartUploadResult> root; RR_EIO with *err filled for an <Error> root (S3 can
 * send 200 and then fail); RR_ECORRUPT for anything else (including an empty or cut body). */
int rr_s3_xml_parse_complete(const void *xml, size_t len, struct rr_s3_error *err);

struct rr_s3_object {
	const char *key;        /* valid only during the callback */
	uint64_t size;
	int64_t mtime_unix_ms;  /* from LastModified (ISO 8601, e.g. 2009-10-12T17:50:30.000Z) */
};
/* Return nonzero to stop; that value is returned by the parser. */
typedef int (*rr_s3_object_cb)(const struct rr_s3_object *o, void *ud);

/* One <ListBucketResult> page of ListObjectsV2: cb for each Contents entry in order;
 * *truncated from IsTruncated; next_token (cap bytes) from NextContinuationToken ("" when
 * absent). Keys are at most 1024 bytes (S3's limit). Returns 0, RR_ECORRUPT, or cb's
 * value. */
int rr_s3_xml_parse_list(const void *xml, size_t len, rr_s3_object_cb cb, void *ud,
			 int *truncated, char *next_token, size_t cap);

/* <DeleteResult>: returns 0 when every key was deleted, or the number of <Error> entries
 * (> 0) with the first one's key (key_cap bytes) and error in first_key/first_err. */
int rr_s3_xml_parse_delete(const void *xml, size_t len, char *first_key, size_t key_cap,
			   struct rr_s3_error *first_err);

/* rr_xml_escape, under the name S3's callers know. */
int rr_s3_xml_escape(struct rr_buf *out, const char *text, size_t len);

/* Builds the CompleteMultipartUpload body for n parts numbered 1..n with these ETags (as
 * the server sent them, quotes included). Replaces out's contents. */
int rr_s3_xml_complete_body(struct rr_buf *out, const char *const *etags, size_t n);

/* Builds a DeleteObjects body (<Delete><Quiet>true</Quiet><Object><Key>..</Key></Object>...)
 * for n keys (S3 allows at most 1000: more is RR_EINVAL). Replaces out's contents. */
int rr_s3_xml_delete_body(struct rr_buf *out, const char *const *keys, size_t n);

#endif
