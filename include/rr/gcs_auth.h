/* Google OAuth2 access tokens for the GCS XML API, found the way Google's client libraries
 * find them, cached, and refreshed before they expire:
 *   1. GOOGLE_APPLICATION_CREDENTIALS naming a service-account key file (JSON with "type":
 *      "service_account", client_email, private_key (PEM), private_key_id, token_uri): a JWT
 *      signed RS256 with OpenSSL ({"alg":"RS256","typ":"JWT","kid":private_key_id};
 *      claims iss = client_email, scope, aud = token_uri, iat = now, exp = now + 3600)
 *      exchanged at token_uri (POST, application/x-www-form-urlencoded,
 *      grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=JWT);
 *   2. else the metadata server's token: GET
 *      <metadata>/computeMetadata/v1/instance/service-accounts/default/token with
 *      Metadata-Flavor: Google (metadata = the endpoint given, else http://$GCE_METADATA_HOST,
 *      else http://metadata.google.internal).
 * Both answer {"access_token", "expires_in", "token_type": "Bearer"}. Secrets (the private
 * key, tokens) never reach a log line or a why text, and are wiped when freed. */
#ifndef RR_GCS_AUTH_H
#define RR_GCS_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "rr/buf.h"
#include "rr/http.h"

#define RR_GCS_SCOPE "https://www.googleapis.com/auth/devstorage.read_write"
#define RR_GCS_TOKEN_MAX 4096

struct rr_gcs_auth_opts {
	struct rr_http *http;          /* borrowed, thread-safe */
	const char *metadata_endpoint; /* NULL: see above */
	/* Tokens are refreshed when fewer than this many ms of validity remain (0: 5 min). */
	int64_t refresh_margin_ms;
};

struct rr_gcs_auth;

/* Reads GOOGLE_APPLICATION_CREDENTIALS now (a bad key file is reported here: RR_EINVAL
 * with why), so later failures are only about fetching tokens. Returns 0, RR_EINVAL,
 * RR_ENOMEM, RR_EIO (the key file cannot be read). */
int rr_gcs_auth_new(const struct rr_gcs_auth_opts *o, struct rr_gcs_auth **out, char *why,
		    size_t why_len);

/* Copies a valid access token into token (cap bytes), fetching or refreshing it first when
 * needed (or when force_refresh: the server said the token is no good). Thread-safe. When
 * a refresh (not forced) fails while the cached token is still valid, that one is returned.
 * Returns 0; RR_EACCES when the token endpoint refused (why quotes its "error" and
 * "error_description"); RR_EIO when it could not be reached or answered badly; RR_ENOENT
 * when there is no key file and no metadata server. source (may be NULL, 96 bytes) gets
 * "service account <client_email>" or "metadata server". */
int rr_gcs_auth_token(struct rr_gcs_auth *a, int force_refresh, char *token, size_t cap,
		      char *source, char *why, size_t why_len);

/* Wipes the private key and the cached token, and frees. NULL is fine. */
void rr_gcs_auth_destroy(struct rr_gcs_auth *a);

/* Test hook (only the tests and the fuzz target call it): builds the signed JWT for a key
 * file's contents at time `now` (unix seconds) into out (replacing it). Returns 0, RR_EINVAL
 * (not a usable service account key, why says which field), RR_ENOMEM, RR_EIO (OpenSSL refused
 * to sign). */
int rr_gcs_jwt(const char *key_json, size_t len, int64_t now, const char *scope,
	       struct rr_buf *out, char *why, size_t why_len);

#endif
