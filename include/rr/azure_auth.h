/* Azure Blob Storage credentials (storage/auth/azure_auth.c), found in the order Azure's own
 * tools use (DESIGN.md §3):
 *   1. AZURE_STORAGE_CONNECTION_STRING with AccountKey (Shared Key) or SharedAccessSignature;
 *   2. AZURE_STORAGE_KEY (Shared Key, rr/azure_shared_key.h);
 *   3. AZURE_STORAGE_SAS_TOKEN (appended to every request's query, with or without '?');
 *   4. Microsoft Entra ID bearer tokens for https://storage.azure.com/:
 *      workload identity (AZURE_FEDERATED_TOKEN_FILE + AZURE_CLIENT_ID + AZURE_TENANT_ID,
 *      re-read at every fetch since it rotates), a service principal (AZURE_CLIENT_SECRET +
 *      AZURE_CLIENT_ID + AZURE_TENANT_ID), both through the OAuth 2.0 client credentials
 *      flow at AZURE_AUTHORITY_HOST (default https://login.microsoftonline.com/), else the
 *      VM's managed identity from IMDS (AZURE_CLIENT_ID for a user-assigned one; the
 *      endpoint from opts, else AZURE_POD_IDENTITY_AUTHORITY_HOST as for Microsoft's
 *      identity libraries, else http://169.254.169.254).
 * Tokens are cached and fetched anew when fewer than the refresh margin (5 minutes) of
 * validity remain, or halfway through the life of a token issued for less than twice the
 * margin; keys, SAS tokens and bearer tokens are wiped when freed and never reach
 * a log line or a reason. */
#ifndef RR_AZURE_AUTH_H
#define RR_AZURE_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "rr/buf.h"
#include "rr/http.h"

#define RR_AZURE_CONN_MAX 4096   /* a connection string longer than this is refused */
#define RR_AZURE_SAS_MAX 2048
#define RR_AZURE_TOKEN_MAX 8192  /* Entra access tokens are JWTs of a few KB */
#define RR_AZURE_ENDPOINT_MAX 512
#define RR_AZURE_RESOURCE "https://storage.azure.com/"

/* The parts of a connection string ("Configure Azure Storage connection strings"): ';'-
 * separated Key=Value pairs, keys matched without regard to case, values verbatim ('=' may
 * appear in a value, as in base64 keys and SAS signatures). Unknown keys are ignored
 * (QueueEndpoint, ...); a key given twice, an empty pair or a value too long is refused. */
struct rr_azure_conn {
	char account[65];                    /* AccountName */
	char key[128];                       /* AccountKey, base64 (secret) */
	char sas[RR_AZURE_SAS_MAX];          /* SharedAccessSignature, without '?' (secret) */
	char blob_endpoint[RR_AZURE_ENDPOINT_MAX]; /* BlobEndpoint, without a trailing '/' */
	char protocol[8];                    /* DefaultEndpointsProtocol: "", "http", "https" */
	char suffix[128];                    /* EndpointSuffix */
	int dev;                             /* UseDevelopmentStorage=true */
};

/* Parses s (len bytes, no NUL needed) into *out (wiped first). Returns 0, or RR_EINVAL
 * with a reason that never quotes a key or SAS. */
int rr_azure_conn_parse(const char *s, size_t len, struct rr_azure_conn *out, char *why,
			size_t cap);
void rr_azure_conn_wipe(struct rr_azure_conn *c);

/* Reads an Entra token answer ({"access_token": ..., "expires_in": N} from the token
 * endpoint, or "expires_on": unix seconds from IMDS; either as a number or a string of
 * digits). now_s is the wall clock. Writes the token into token (cap bytes) and its expiry
 * in unix seconds. Returns 0, RR_ENOMEM, or RR_EIO with a reason naming `step`. */
int rr_azure_token_parse(const char *step, const void *json, size_t len, int64_t now_s,
			 char *token, size_t cap, int64_t *expires_unix_s, char *why,
			 size_t wcap);

enum rr_azure_auth_kind { RR_AZURE_AUTH_SHARED_KEY, RR_AZURE_AUTH_SAS, RR_AZURE_AUTH_BEARER };

struct rr_azure_creds_opts {
	struct rr_http *http;          /* borrowed: for token requests */
	const char *account;           /* the storage account (for Shared Key) */
	const struct rr_azure_conn *conn; /* a parsed connection string, or NULL */
	const char *imds_endpoint;     /* NULL: AZURE_POD_IDENTITY_AUTHORITY_HOST, else
					* http://169.254.169.254 */
	int64_t refresh_margin_ms;     /* 0: 5 minutes */
};

struct rr_azure_creds;

/* Picks the first configured credential of the order above (nothing is fetched yet).
 * Returns 0, or RR_EINVAL with a reason (an unreadable key, half a service principal). */
int rr_azure_creds_new(const struct rr_azure_creds_opts *opts, struct rr_azure_creds **out,
		       char *why, size_t cap);
enum rr_azure_auth_kind rr_azure_creds_kind(const struct rr_azure_creds *c);
/* For log lines and reasons: "connection string (account key)", "AZURE_STORAGE_KEY",
 * "workload identity (CLIENT_ID)", "managed identity", ... */
const char *rr_azure_creds_source(const struct rr_azure_creds *c);
/* Shared Key: the Authorization value for this StringToSign. */
int rr_azure_creds_sign(const struct rr_azure_creds *c, const struct rr_buf *string_to_sign,
			char *out, size_t cap);
/* SAS: the query to append (no '?'). */
const char *rr_azure_creds_sas(const struct rr_azure_creds *c);
/* Bearer: a valid token into out (cap bytes), fetched when none is cached, within the
 * refresh margin of expiry (half the life of a short-lived token), or force_refresh (the server said it expired). Thread-safe.
 * Returns 0, or RR_EACCES / RR_EIO / RR_EINVAL with a reason naming the step. A failed
 * refresh while the cached token is still valid returns the cached one. */
int rr_azure_creds_token(struct rr_azure_creds *c, int force_refresh, char *out, size_t cap,
			 char *why, size_t wcap);
/* Wipes and frees; NULL is fine. */
void rr_azure_creds_destroy(struct rr_azure_creds *c);

#endif
