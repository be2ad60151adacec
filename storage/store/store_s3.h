/* The S3-protocol backends of the store interface, s3:// (storage/store/store_s3.c) and gs://
 * (storage/store/store_gcs.c), on the request core of storage/store/remote.h: SigV4 or
 * Google bearer tokens, multipart uploads with parts in flight at once, ranged parallel
 * downloads, batched deletes (S3), the AWS credential chain (storage/auth/aws_creds_*.c) or
 * Google tokens (storage/auth/gcs_auth.c). */
#ifndef RR_STORE_S3_H
#define RR_STORE_S3_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "rr/buf.h"
#include "rr/store.h"
#include "remote.h"

/* Objects larger than this are uploaded in parts, and downloaded in ranges of this size. */
#define RR_S3_PART_SIZE_DEFAULT (8u << 20)
#define RR_S3_PART_SIZE_MIN (5u << 20) /* S3's minimum for every part but the last */

/* Opens "bucket[/prefix]" (the URL after "s3://"). The environment supplies what the AWS
 * tools read: AWS_REGION / AWS_DEFAULT_REGION / the profile's region; AWS_ENDPOINT_URL_S3 /
 * AWS_ENDPOINT_URL / the profile's endpoint_url (path-style addressing when one is given,
 * unless opts say otherwise); AWS_CA_BUNDLE; the credential chain of aws_credentials.h.
 * RESUME_RUN_S3_PART_SIZE (bytes, at least RR_S3_PART_SIZE_MIN) changes the part size.
 * Probes the bucket with a one-key listing; on failure rr_store_strerror says why. */
int rr_store_s3_new(const char *bucket_and_prefix, const struct rr_store_opts *opts,
		    struct rr_store **out);

/* Opens "bucket[/prefix]" (the URL after "gs://") through the GCS XML API: the same
 * requests, retries and multipart machinery, with OAuth2 bearer tokens (gcs_auth.h) or,
 * with opts->gcs_hmac, SigV4 and HMAC keys from the AWS credential variables; preconditions
 * are x-goog-if-generation-match and version tags are generations; no batched delete.
 * STORAGE_EMULATOR_HOST redirects every request. */
int rr_store_gcs_new(const char *bucket_and_prefix, const struct rr_store_opts *opts,
		     struct rr_store **out);

/* ---- shared by the two backends (private to storage/store) ---- */

struct rr_remote;
struct rr_remote_req;
struct rr_remote_signed;
struct rr_http_response;

#define RR_S3_BUCKET_RULE(label) label " bucket name (3-63 characters of a-z 0-9 . - _)"

struct rr_s3 {
	struct rr_remote r;           /* first: the core's view of the store */
	struct rr_aws_creds *creds;   /* SigV4 credentials (S3; GCS with HMAC keys) */
	struct rr_gcs_auth *gauth;    /* GCS: OAuth2 bearer tokens instead of SigV4 */
	int gcs;                      /* GCS's XML API: x-goog-* preconditions, generations */
	char *region;
	char *sse, *sse_kms_key;
	/* Seconds to add to this machine's clock to get the server's, learnt from a
	 * RequestTimeTooSkewed answer: requests are signed with the server's time. */
	_Atomic long long clock_offset_s;
};

/* The core's hooks for S3: SigV4 and S3's error documents. */
extern const struct rr_remote_ops rr_s3_ops;
int rr_s3_sign(struct rr_remote *r, const struct rr_remote_req *q, int refresh_creds,
	       struct rr_remote_signed *p);
int rr_s3_judge(struct rr_remote *r, const struct rr_remote_req *q,
		const struct rr_remote_signed *p, const struct rr_http_response *resp, int *retry,
		int *refresh, int64_t *retry_after_ms);

/* The S3 protocol's store calls (rr_remote_get/head/del do the rest). */
int rr_s3_put(struct rr_store *s, const char *key, const void *data, size_t len,
	      const struct rr_put_opts *opts, char *etag_out);
int rr_s3_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb, void *ud);
void rr_s3_destroy(struct rr_store *s);

int rr_s3_valid_bucket(const char *b, size_t len);
int rr_s3_list_query(struct rr_buf *qb, const char *root, const char *prefix,
		     const char *token, int max_keys);
/* Probes the store (a one-key listing) and hands it to *out; destroys it on failure. */
int rr_s3_finish_open(struct rr_s3 *s3, const char *url, struct rr_store **out);

#endif
