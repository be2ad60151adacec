/* Azure Storage's Shared Key authorization for the Blob service (storage/auth/
 * azure_shared_key.c), after "Authorize with Shared Key"
 * (learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key), version
 * 2015-02-21 and later: Authorization: SharedKey ACCOUNT:base64(HMAC-SHA256(key,
 * StringToSign)). The date travels as x-ms-date, so the Date line is empty; a zero
 * Content-Length is an empty line. The string is built from the request as it goes on the
 * wire, so what is signed is what is sent. */
#ifndef RR_AZURE_SHARED_KEY_H
#define RR_AZURE_SHARED_KEY_H

#include <stddef.h>

#include "rr/buf.h"
#include "rr/http.h"

#define RR_AZURE_KEY_MAX 128 /* decoded account keys are 64 bytes */
#define RR_AZURE_ACCOUNT_MAX 64 /* 3-24 lowercase letters and digits; Azurite allows more */

/* Builds the StringToSign of a request into out (replacing its contents). method is the
 * verb; headers the request's headers (names in any case; the standard ones are looked up,
 * every x-ms- one is canonicalized); path_wire the URL path exactly as sent (encoded once,
 * starting with '/'); query_wire the query as sent without '?', or NULL. account is the
 * first segment of the canonicalized resource. Query values are percent-decoded, names
 * lower-cased and sorted, repeated names joined by ','. Returns 0, RR_EINVAL (a header
 * value with a line break, a malformed query), RR_ENOMEM or RR_ETOOBIG. */
int rr_azure_string_to_sign(struct rr_buf *out, const char *account, const char *method,
			    const struct rr_http_header *headers, size_t nheaders,
			    const char *path_wire, const char *query_wire);

/* Decodes a base64 account key into key (cap bytes). Returns the length, or RR_EINVAL when
 * it is not base64 or decodes to nothing or more than cap bytes. */
int rr_azure_key_decode(const char *b64, unsigned char *key, size_t cap);

/* "SharedKey ACCOUNT:SIGNATURE" for string_to_sign into out (cap bytes). Returns 0,
 * RR_EINVAL or RR_ETOOBIG. */
int rr_azure_shared_key_sign(const unsigned char *key, size_t key_len, const char *account,
			     const struct rr_buf *string_to_sign, char *out, size_t cap);

#endif
