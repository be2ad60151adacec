/* AWS Signature Version 4 (header-based) for S3 requests.
 * The signing time is an argument, never read from the clock here, so known-answer vectors
 * (the S3 documentation examples and the AWS SigV4 test suite) test the signer exactly.
 * Headers: the caller passes every header it will send and wants signed. It must include
 * `host`, and for S3 `x-amz-content-sha256` (S3 requires it on every request; when present
 * its value must equal payload_sha256_hex, else RR_EINVAL). The signer adds, and the caller
 * must then send with the same values:
 *   - x-amz-date            (always; its value is written to amz_date_out),
 *   - x-amz-security-token  (when the credentials carry a session token).
 * Passing either of those (or `authorization`) among the caller's headers is RR_EINVAL, so
 * the signed value and the sent value cannot disagree. Header names are matched without
 * regard to case; repeated names are signed as one header whose values are joined by ',' in
 * the order given. Values holding CR, LF or other control bytes (except tab) are rejected:
 * obsolete line folding is not supported, and such values would let a caller inject
 * headers. */
#ifndef RR_SIGV4_H
#define RR_SIGV4_H

#include <stddef.h>
#include <time.h>

#include "rr/buf.h"

#define RR_SIGV4_AMZ_DATE_LEN 16 /* "YYYYMMDDTHHMMSSZ", without the NUL */
#define RR_SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
#define RR_SIGV4_MAX_HEADERS 64
#define RR_SIGV4_MAX_TEXT (256u * 1024u) /* ceiling for the canonical request */

struct rr_sigv4_credentials {
	const char *access_key_id;
	const char *secret_access_key;
	const char *session_token; /* NULL when the credentials are long-term */
};

struct rr_sigv4_header {
	const char *name;
	const char *value;
};

struct rr_sigv4_request {
	const char *method; /* "GET", "PUT", ... */
	/* Raw path starting with '/', not yet percent-encoded (an S3 key as it is named);
	 * the signer encodes it, and the wire path must be rr_sigv4_uri_encode(path, keep '/'). */
	const char *path;
	/* The query as sent after '?' (e.g. "uploadId=a%2Bb&partNumber=3"), or NULL. Names and
	 * values are percent-decoded then re-encoded canonically, so they may arrive encoded or
	 * not; a literal '&', '=' (in a name) or '%' must be sent encoded. A '+' is a plus, not
	 * a space. Parameters without '=' are signed as "name=". */
	const char *query;
	const struct rr_sigv4_header *headers;
	size_t nheaders;
	/* Lowercase hex SHA-256 of the body, or RR_SIGV4_UNSIGNED_PAYLOAD (or another literal
	 * payload marker such as "STREAMING-UNSIGNED-PAYLOAD-TRAILER"). */
	const char *payload_sha256_hex;
};

/* Appends the SigV4 URI encoding of len bytes of s to out: A-Z a-z 0-9 - _ . ~ are kept,
 * '/' is kept when keep_slash is nonzero, every other byte becomes %XX (uppercase hex).
 * Returns 0, RR_ENOMEM or RR_ETOOBIG. */
int rr_sigv4_uri_encode(struct rr_buf *out, const char *s, size_t len, int keep_slash);

/* Test hook (only the tests call it; signing goes through rr_sigv4_sign). Builds the canonical
 * request and the string to sign, replacing the contents of canonical_out and
 * string_to_sign_out (both initialised by the caller, who frees them; either may be NULL).
 * Returns 0, RR_EINVAL for a malformed request or argument, RR_ENOMEM or RR_ETOOBIG.
 *
 * s3_encoding = 1 applies the S3 rules: the path is encoded once and not normalized.
 * s3_encoding = 0 applies the generic-service rules: empty and dot segments are removed, and
 * the path is encoded twice (once for the wire, once more for the canonical form), so a raw
 * space becomes %2520. */
int rr_sigv4_canonical(const struct rr_sigv4_credentials *c, const char *region,
		       const char *service, time_t when, const struct rr_sigv4_request *r,
		       int s3_encoding, struct rr_buf *canonical_out,
		       struct rr_buf *string_to_sign_out);

/* Signs r at time `when` (UTC seconds) and writes the whole Authorization header value,
 * "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...", NUL-terminated, into
 * authorization_out (cap bytes), and the x-amz-date value into amz_date_out (at least
 * RR_SIGV4_AMZ_DATE_LEN + 1 bytes; may be NULL). Derived keys and intermediate text are
 * wiped before returning. Returns 0, RR_EINVAL, RR_ENOMEM, RR_ETOOBIG (output too small or
 * request over RR_SIGV4_MAX_TEXT) or RR_EIO (the HMAC failed). */
int rr_sigv4_sign(const struct rr_sigv4_credentials *c, const char *region, const char *service,
		  time_t when, const struct rr_sigv4_request *r, int s3_encoding,
		  char *authorization_out, size_t cap, char *amz_date_out);

#endif
