/* Blob Batch for Delete Blob (storage/store/azure_batch.c), private to storage/store: the
 * multipart/mixed request body of up to RR_AZURE_BATCH_MAX sub-requests and the reading of
 * the multipart/mixed answer ("Blob Batch", REST API 2018-11-09 and later). Each
 * sub-request is authorized on its own by the caller and carries no x-ms-version (the
 * batch request's applies to all). Nothing here trusts the answer: every part is bounded,
 * and a part that cannot be attributed to one sub-request is left unattributed, so the
 * caller deletes that key on its own. */
#ifndef RR_AZURE_BATCH_H
#define RR_AZURE_BATCH_H

#include <stddef.h>

#include "rr/buf.h"

#define RR_AZURE_BATCH_MAX 256       /* sub-requests in one batch (Azure's limit) */
#define RR_AZURE_BOUNDARY_MAX 70     /* RFC 2046 */
#define RR_AZURE_BATCH_ANSWER_MAX (1u << 20)

/* One Delete Blob sub-request, already authorized. */
struct rr_azure_batch_sub {
	const char *target; /* the request target as sent: the encoded path, "?SAS" when any */
	const char *date;   /* its x-ms-date */
	const char *auth;   /* its Authorization value, or NULL (a SAS is in the target) */
};

/* The request body for n sub-requests (Content-ID i for subs[i]) with this boundary (the
 * caller's random one, also named in the Content-Type). Replaces out's contents. Returns 0,
 * RR_EINVAL (n is 0 or above RR_AZURE_BATCH_MAX, a line break in a field), RR_ENOMEM or
 * RR_ETOOBIG. */
int rr_azure_batch_body(struct rr_buf *out, const char *boundary,
			const struct rr_azure_batch_sub *subs, size_t n);

/* The boundary of a "multipart/mixed; boundary=..." Content-Type (quoted or not) into out
 * (cap bytes, at least RR_AZURE_BOUNDARY_MAX + 1). Returns 0 or RR_ECORRUPT. */
int rr_azure_batch_boundary(const char *content_type, char *out, size_t cap);

/* Reads the answer's body (len bytes) whose parts are separated by "--boundary": for each
 * part whose Content-ID is a number below n, status[id] becomes the HTTP status of its
 * sub-response (100-599); code[id] (when code is not NULL; 64 bytes each) its
 * x-ms-error-code, or "". A Content-ID seen twice makes that sub-request's status 0 again
 * (unknown). status[] and code[] entries of sub-requests without a part stay as the
 * caller set them. Returns the number of parts attributed, or RR_ECORRUPT when the body
 * holds no delimiter at all or is larger than RR_AZURE_BATCH_ANSWER_MAX. */
int rr_azure_batch_parse(const void *body, size_t len, const char *boundary, int *status,
			 char (*code)[64], size_t n);

#endif
