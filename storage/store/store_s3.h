/* The S3-protocol backends of the store interface (storage/store/store_s3.c), s3:// and gs://:
 * signed requests over storage/net/http.c, retries with backoff (storage/net/retry.c), multipart
 * uploads with parts in flight at once, ranged parallel downloads, batched deletes (S3), the
 * AWS credential chain (storage/auth/aws_credentials.c) or Google tokens (storage/auth/gcs_auth.c). */
#ifndef RR_STORE_S3_H
#define RR_STORE_S3_H

#include "rr/store.h"

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

#endif
