/* Azure Blob Storage credentials (include/rr/azure_auth.h): the connection string, account
 * keys, SAS tokens, and Microsoft Entra ID bearer tokens (client credentials flow or IMDS),
 * cached and refreshed before they expire. */
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "aws_provider.h" /* rr_aws_read_secret_file: the same care for any secret file */
#include "rr/azure_auth.h"
#include "rr/azure_shared_key.h"
#include "rr/buf.h"
#include "rr/clock.h"
#include "rr/env.h"
#include "rr/error.h"
#include "rr/http.h"
#include "rr/json.h"
#include "rr/log.h"
#include "rr/loopback.h"
#include "rr/quote.h"
#include "rr/sigv4.h"

#define S_DEFAULT_MARGIN_MS (5 * 60 * 1000)
#define S_TOKEN_TIMEOUT_MS 10000
#define S_ANSWER_MAX (64u << 10)
#define S_ASSERTION_MAX (64u << 10)
#define S_EXPIRES_MAX_S (24 * 3600) /* a longer validity is read as this much */
#define S_IMDS_DEFAULT "http://169.254.169.254"
#define S_AUTHORITY_DEFAULT "https://login.microsoftonline.com/"
#define S_ID_MAX 128

/* ---- connection strings ---- */

struct s_conn_key {
	const char *name;
	size_t off, cap;
};

static const struct s_conn_key s_conn_keys[] = {
	{ "AccountName", offsetof(struct rr_azure_conn, account), 65 },
	{ "AccountKey", offsetof(struct rr_azure_conn, key), 128 },
	{ "SharedAccessSignature", offsetof(struct rr_azure_conn, sas), RR_AZURE_SAS_MAX },
	{ "BlobEndpoint", offsetof(struct rr_azure_conn, blob_endpoint), RR_AZURE_ENDPOINT_MAX },
	{ "DefaultEndpointsProtocol", offsetof(struct rr_azure_conn, protocol), 8 },
	{ "EndpointSuffix", offsetof(struct rr_azure_conn, suffix), 128 },
};

void rr_azure_conn_wipe(struct rr_azure_conn *c)
{
	if (c)
		OPENSSL_cleanse(c, sizeof(*c));
}

/* One "Name=Value" pair into c; seen marks the keys already given. */
static int s_conn_pair(struct rr_azure_conn *c, const char *p, size_t n, unsigned *seen,
		       char *why, size_t why_len)
{
	const char *eq = memchr(p, '=', n);
	size_t nlen = eq ? (size_t)(eq - p) : n, vlen = eq ? n - nlen - 1 : 0;
	char q[RR_QUOTE_CAP];

	while (nlen && (p[0] == ' ' || p[0] == '\t')) {
		p++;
		nlen--;
	}
	if (!eq || nlen == 0)
		return rr_fail(why, why_len, RR_EINVAL,
			       "the connection string has a part %s that is "
			       "not Name=Value", rr_quote(q, p, nlen < 40 ? nlen : 40));
	if (nlen == 21 && strncasecmp(p, "UseDevelopmentStorage", 21) == 0) {
		c->dev = vlen == 4 && strncasecmp(eq + 1, "true", 4) == 0;
		return 0;
	}
	for (size_t i = 0; i < sizeof(s_conn_keys) / sizeof(s_conn_keys[0]); i++) {
		const struct s_conn_key *k = &s_conn_keys[i];
		char *dst = (char *)c + k->off;
		if (strlen(k->name) != nlen || strncasecmp(p, k->name, nlen) != 0)
			continue;
		if (*seen & (1u << i))
			return rr_fail(why, why_len, RR_EINVAL,
				       "the connection string gives %s twice",
				       k->name);
		if (vlen >= k->cap || memchr(eq + 1, '\0', vlen))
			return rr_fail(why, why_len, RR_EINVAL,
				       "the connection string's %s is longer "
				       "than %zu bytes", k->name, k->cap - 1);
		*seen |= 1u << i;
		memcpy(dst, eq + 1, vlen);
		dst[vlen] = '\0';
		return 0;
	}
	return 0; /* QueueEndpoint, TableEndpoint, ...: not ours */
}

int rr_azure_conn_parse(const char *s, size_t len, struct rr_azure_conn *out, char *why,
			size_t why_len)
{
	unsigned seen = 0;
	size_t i = 0;
	int rc = 0;

	if (!s || !out)
		return RR_EINVAL;
	rr_azure_conn_wipe(out);
	if (len > RR_AZURE_CONN_MAX)
		return rr_fail(why, why_len, RR_EINVAL,
			       "the connection string is longer than %u bytes",
			       RR_AZURE_CONN_MAX);
	while (i < len && !rc) {
		const char *semi = memchr(s + i, ';', len - i);
		size_t n = semi ? (size_t)(semi - (s + i)) : len - i;
		if (n)
			rc = s_conn_pair(out, s + i, n, &seen, why, why_len);
		i += n + 1;
	}
	if (!rc && out->protocol[0] && strcmp(out->protocol, "http") != 0 &&
	    strcmp(out->protocol, "https") != 0)
		rc = rr_fail(why, why_len, RR_EINVAL, "the connection string's "
			     "DefaultEndpointsProtocol must be http or https");
	if (!rc) {
		size_t n = strlen(out->blob_endpoint);
		while (n && out->blob_endpoint[n - 1] == '/')
			out->blob_endpoint[--n] = '\0';
		if (out->sas[0] == '?')
			memmove(out->sas, out->sas + 1, strlen(out->sas));
	}
	if (rc)
		rr_azure_conn_wipe(out);
	return rc;
}

/* ---- token answers ---- */

/* A whole number of seconds (a fraction dropped), given as a JSON number or a string of
 * digits. */
static int s_seconds(const cJSON *v, double *out)
{
	char *end;

	if (cJSON_IsNumber(v)) {
		/* Whole seconds: 0.5 of a second left is a token that has expired. */
		*out = floor(v->valuedouble);
	} else if (cJSON_IsString(v) && v->valuestring[0] && strlen(v->valuestring) < 20 &&
		   strspn(v->valuestring, "0123456789") == strlen(v->valuestring)) {
		*out = strtod(v->valuestring, &end);
	} else {
		return RR_EIO;
	}
	return isfinite(*out) && *out >= 0 ? 0 : RR_EIO;
}

/* Bytes an Authorization header can carry. */
static int s_visible(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

int rr_azure_token_parse(const char *step, const void *json, size_t len, int64_t now_s,
			 char *token, size_t cap, int64_t *expires_unix_s, char *why,
			 size_t why_len)
{
	char jwhy[256] = "";
	const cJSON *access, *in, *on;
	double secs;
	cJSON *j = NULL;
	size_t n;
	int rc;

	if (!token || !cap || !expires_unix_s)
		return RR_EINVAL;
	token[0] = '\0';
	if (len > S_ANSWER_MAX)
		return rr_fail(why, why_len, RR_EIO,
			       "%s: the token answer is larger than 64 KiB",
			       step);
	rc = rr_json_parse_object("the token answer", json ? json : "", len, &j, jwhy,
				  sizeof(jwhy));
	if (rc == RR_ENOMEM)
		return rc;
	if (rc)
		return rr_fail(why, why_len, RR_EIO, "%s: %s", step, jwhy);
	access = cJSON_GetObjectItemCaseSensitive(j, "access_token");
	in = cJSON_GetObjectItemCaseSensitive(j, "expires_in");
	on = cJSON_GetObjectItemCaseSensitive(j, "expires_on");
	n = cJSON_IsString(access) ? strlen(access->valuestring) : 0;
	if (n == 0 || n >= cap || !s_visible(access->valuestring)) {
		rc = rr_fail(why, why_len, RR_EIO,
			     "%s: the answer's \"access_token\" is missing, "
			     "empty, longer than %zu bytes, or holds a space or control character",
			     step, cap - 1);
		goto out;
	}
	if (in && s_seconds(in, &secs) == 0 && secs > 0) {
		*expires_unix_s = now_s +
				  (int64_t)(secs < S_EXPIRES_MAX_S ? secs : S_EXPIRES_MAX_S);
	} else if (!in && on && s_seconds(on, &secs) == 0 && secs > (double)now_s) {
		*expires_unix_s = secs - (double)now_s < S_EXPIRES_MAX_S ? (int64_t)secs
									  : now_s + S_EXPIRES_MAX_S;
	} else {
		rc = rr_fail(why, why_len, RR_EIO,
			     "%s: the answer has no usable \"expires_in\" or "
			     "\"expires_on\"", step);
		goto out;
	}
	memcpy(token, access->valuestring, n + 1);
out:
	rr_json_wipe_delete(j);
	return rc;
}

/* ---- the credential ---- */

enum s_flow { S_NONE, S_WORKLOAD, S_SECRET, S_IMDS };

struct rr_azure_creds {
	enum rr_azure_auth_kind kind;
	char source[96];
	struct rr_http *http;
	char account[65];
	unsigned char key[RR_AZURE_KEY_MAX]; /* decoded account key (secret) */
	size_t key_len;
	char sas[RR_AZURE_SAS_MAX];          /* (secret) */
	enum s_flow flow;
	char tenant[S_ID_MAX], client_id[S_ID_MAX];
	char *secret;                        /* AZURE_CLIENT_SECRET (secret) */
	char *token_file;                    /* AZURE_FEDERATED_TOKEN_FILE */
	char *token_url;                     /* the authority's token endpoint, or IMDS's */
	int64_t margin_ms;
	pthread_mutex_t lock;                /* guards what follows */
	char token[RR_AZURE_TOKEN_MAX];      /* (secret) */
	int64_t token_expires_ms;            /* wall clock; 0: none cached */
	int64_t token_refresh_ms;            /* wall clock: fetch anew from then on */
	int failure_logged;
};

static int s_take_key(struct rr_azure_creds *c, const char *b64, const char *source,
		      char *why, size_t why_len)
{
	int n = rr_azure_key_decode(b64, c->key, sizeof(c->key));

	if (n < 0)
		return rr_fail(why, why_len, RR_EINVAL, "%s is not a base64 account key",
			       source);
	c->key_len = (size_t)n;
	c->kind = RR_AZURE_AUTH_SHARED_KEY;
	snprintf(c->source, sizeof(c->source), "%s", source);
	return 0;
}

static int s_take_sas(struct rr_azure_creds *c, const char *sas, const char *source,
		      char *why, size_t why_len)
{
	if (*sas == '?')
		sas++;
	if (!*sas || strlen(sas) >= sizeof(c->sas) || !s_visible(sas) || strchr(sas, '#'))
		return rr_fail(why, why_len, RR_EINVAL,
			       "%s is empty, longer than %zu bytes, or not "
			       "a query string", source, sizeof(c->sas) - 1);
	snprintf(c->sas, sizeof(c->sas), "%s", sas);
	c->kind = RR_AZURE_AUTH_SAS;
	snprintf(c->source, sizeof(c->source), "%s", source);
	return 0;
}

/* An id (tenant, client) goes into a URL or a form: letters, digits, '-', '.', '_'. */
static int s_take_id(char *dst, const char *v, const char *name, char *why, size_t why_len)
{
	if (!v || !*v || strlen(v) >= S_ID_MAX || strspn(v, "abcdefghijklmnopqrstuvwxyz"
				"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._") != strlen(v))
		return rr_fail(why, why_len, RR_EINVAL,
			       "%s must be set to an id (letters, digits, "
			       "'-', '.', '_')", name);
	snprintf(dst, S_ID_MAX, "%s", v);
	return 0;
}

/* The client credentials flow: the authority's token endpoint for the tenant. */
static int s_entra_flow(struct rr_azure_creds *c, enum s_flow flow, char *why, size_t why_len)
{
	const char *authority = rr_env("AZURE_AUTHORITY_HOST");
	size_t n;
	int rc;

	rc = s_take_id(c->tenant, rr_env("AZURE_TENANT_ID"), "AZURE_TENANT_ID", why, why_len);
	if (!rc)
		rc = s_take_id(c->client_id, rr_env("AZURE_CLIENT_ID"), "AZURE_CLIENT_ID", why,
			       why_len);
	if (rc)
		return rc;
	if (!authority || !*authority)
		authority = S_AUTHORITY_DEFAULT;
	n = strlen(authority);
	if (strncasecmp(authority, "https://", 8) != 0 &&
	    !(strncasecmp(authority, "http://", 7) == 0 && rr_url_host_is_loopback(authority)))
		return rr_fail(why, why_len, RR_EINVAL,
			       "AZURE_AUTHORITY_HOST must be https:// (or "
			       "http:// to this machine)");
	if (asprintf(&c->token_url, "%s%s%s/oauth2/v2.0/token", authority,
		     n && authority[n - 1] == '/' ? "" : "/", c->tenant) < 0) {
		c->token_url = NULL;
		return RR_ENOMEM;
	}
	c->flow = flow;
	c->kind = RR_AZURE_AUTH_BEARER;
	if (flow == S_WORKLOAD) {
		c->token_file = strdup(rr_env("AZURE_FEDERATED_TOKEN_FILE"));
		snprintf(c->source, sizeof(c->source), "workload identity (%s)", c->client_id);
		return c->token_file ? 0 : RR_ENOMEM;
	}
	c->secret = strdup(rr_env("AZURE_CLIENT_SECRET"));
	snprintf(c->source, sizeof(c->source), "service principal (%s)", c->client_id);
	return c->secret ? 0 : RR_ENOMEM;
}

static int s_imds_flow(struct rr_azure_creds *c, const char *endpoint, char *why,
		       size_t why_len)
{
	const char *id = rr_env("AZURE_CLIENT_ID");
	size_t n;

	/* --metadata-endpoint, else the variable Microsoft's identity libraries read */
	if (!endpoint || !*endpoint)
		endpoint = rr_env("AZURE_POD_IDENTITY_AUTHORITY_HOST");
	if (!endpoint || !*endpoint)
		endpoint = S_IMDS_DEFAULT;
	n = strlen(endpoint);
	if (id && *id && s_take_id(c->client_id, id, "AZURE_CLIENT_ID", why, why_len))
		return RR_EINVAL;
	if (asprintf(&c->token_url, "%.*s/metadata/identity/oauth2/token?api-version=2018-02-01"
		     "&resource=https%%3A%%2F%%2Fstorage.azure.com%%2F%s%s",
		     (int)(n && endpoint[n - 1] == '/' ? n - 1 : n), endpoint,
		     c->client_id[0] ? "&client_id=" : "", c->client_id) < 0) {
		c->token_url = NULL;
		return RR_ENOMEM;
	}
	c->flow = S_IMDS;
	c->kind = RR_AZURE_AUTH_BEARER;
	snprintf(c->source, sizeof(c->source), "managed identity%s%s%s",
		 c->client_id[0] ? " (" : "", c->client_id, c->client_id[0] ? ")" : "");
	return 0;
}

/* The order of Azure's tools: connection string, key, SAS, then Entra ID. */
static int s_choose(struct rr_azure_creds *c, const struct rr_azure_creds_opts *o, char *why,
		    size_t why_len)
{
	const struct rr_azure_conn *conn = o->conn;

	if (conn && conn->key[0])
		return s_take_key(c, conn->key, "the connection string's AccountKey", why,
				  why_len);
	if (conn && conn->sas[0])
		return s_take_sas(c, conn->sas, "the connection string's SharedAccessSignature",
				  why, why_len);
	if (rr_env("AZURE_STORAGE_KEY") && *rr_env("AZURE_STORAGE_KEY"))
		return s_take_key(c, rr_env("AZURE_STORAGE_KEY"), "AZURE_STORAGE_KEY", why,
				  why_len);
	if (rr_env("AZURE_STORAGE_SAS_TOKEN") && *rr_env("AZURE_STORAGE_SAS_TOKEN"))
		return s_take_sas(c, rr_env("AZURE_STORAGE_SAS_TOKEN"), "AZURE_STORAGE_SAS_TOKEN",
				  why, why_len);
	if (rr_env("AZURE_FEDERATED_TOKEN_FILE") && *rr_env("AZURE_FEDERATED_TOKEN_FILE"))
		return s_entra_flow(c, S_WORKLOAD, why, why_len);
	if (rr_env("AZURE_CLIENT_SECRET") && *rr_env("AZURE_CLIENT_SECRET"))
		return s_entra_flow(c, S_SECRET, why, why_len);
	return s_imds_flow(c, o->imds_endpoint, why, why_len);
}

int rr_azure_creds_new(const struct rr_azure_creds_opts *opts, struct rr_azure_creds **out,
		       char *why, size_t why_len)
{
	struct rr_azure_creds *c;
	int rc;

	if (!opts || !opts->http || !out || opts->refresh_margin_ms < 0)
		return RR_EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return RR_ENOMEM;
	c->http = opts->http;
	c->margin_ms = opts->refresh_margin_ms ? opts->refresh_margin_ms : S_DEFAULT_MARGIN_MS;
	snprintf(c->account, sizeof(c->account), "%s", opts->account ? opts->account : "");
	pthread_mutex_init(&c->lock, NULL);
	rc = s_choose(c, opts, why, why_len);
	if (rc) {
		rr_azure_creds_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

enum rr_azure_auth_kind rr_azure_creds_kind(const struct rr_azure_creds *c)
{
	return c->kind;
}

const char *rr_azure_creds_source(const struct rr_azure_creds *c)
{
	return c->source;
}

int rr_azure_creds_sign(const struct rr_azure_creds *c, const struct rr_buf *sts, char *out,
			size_t cap)
{
	if (c->kind != RR_AZURE_AUTH_SHARED_KEY)
		return RR_EINVAL;
	return rr_azure_shared_key_sign(c->key, c->key_len, c->account, sts, out, cap);
}

const char *rr_azure_creds_sas(const struct rr_azure_creds *c)
{
	return c->kind == RR_AZURE_AUTH_SAS ? c->sas : NULL;
}

static int s_form_append(struct rr_buf *b, const char *name, const char *value)
{
	int rc = rr_buf_printf(b, "%s%s=", b->len ? "&" : "", name);
	return rc ? rc : rr_sigv4_uri_encode(b, value, strlen(value), 0);
}

/* The client credentials form: the secret, or the federated token (re-read each time). */
static int s_token_form(struct rr_azure_creds *c, struct rr_buf *form, char *why,
			size_t why_len)
{
	struct rr_buf assertion;
	char q[RR_QUOTE_CAP];
	int rc;

	rc = s_form_append(form, "grant_type", "client_credentials");
	if (!rc)
		rc = s_form_append(form, "client_id", c->client_id);
	if (!rc)
		rc = s_form_append(form, "scope", RR_AZURE_RESOURCE ".default");
	if (rc || c->flow == S_SECRET)
		return rc ? rc : s_form_append(form, "client_secret", c->secret);
	rr_buf_init(&assertion, S_ASSERTION_MAX);
	rc = rr_aws_read_secret_file(c->token_file, &assertion);
	if (rc || !assertion.len)
		rc = rr_fail(why, why_len, rc == RR_ENOMEM ? rc : RR_EINVAL, "%s: cannot read "
			     "AZURE_FEDERATED_TOKEN_FILE %s: %s", c->source,
			     rr_quote_str(q, c->token_file),
			     rc == RR_ETOOBIG ? "larger than 64 KiB" : rc ? rr_strerror(rc)
									  : "it is empty");
	if (!rc)
		rc = s_form_append(form, "client_assertion_type",
				   "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
	if (!rc)
		rc = s_form_append(form, "client_assertion", (const char *)assertion.data);
	rr_buf_wipe_free(&assertion);
	return rc;
}

/* An answer other than 200; the OAuth "error" and the first line of its description
 * ("AADSTS7000215: Invalid client secret provided. ...", "Identity not found") are quoted
 * when there are. */
static int s_token_refusal(const struct rr_azure_creds *c, const struct rr_http_response *resp,
			   char *why, size_t why_len)
{
	int refused = resp->status == 400 || resp->status == 401 || resp->status == 403;
	char qerr[RR_QUOTE_CAP], qdesc[RR_QUOTE_CAP];
	const cJSON *err = NULL, *desc = NULL;
	cJSON *j = NULL;
	int rc;

	if (rr_json_parse_object("the error answer", (const char *)resp->body.data,
				 resp->body.len, &j, NULL, 0) == 0) {
		err = cJSON_GetObjectItemCaseSensitive(j, "error");
		desc = cJSON_GetObjectItemCaseSensitive(j, "error_description");
	}
	if (cJSON_IsString(desc)) {
		size_t n = strcspn(desc->valuestring, "\r\n");
		rr_quote(qdesc, desc->valuestring, n < 160 ? n : 160);
	}
	rc = rr_fail(why, why_len, refused ? RR_EACCES : RR_EIO,
		     "%s: the token endpoint %s %ld%s%s%s%s",
		     c->source, refused ? "refused with" : "answered", resp->status,
		     cJSON_IsString(err) ? ": " : "",
		     cJSON_IsString(err) ? rr_quote_str(qerr, err->valuestring) : "",
		     cJSON_IsString(desc) ? " " : "", cJSON_IsString(desc) ? qdesc : "");
	rr_json_wipe_delete(j);
	return rc;
}

/* A token is fetched anew the margin before it expires, or halfway through its life when
 * that is shorter than twice the margin: a token issued for less than the margin (a short
 * lifetime policy, a test) is then still reused for half its life instead of being fetched
 * again for every request. */
static void s_set_expiry(struct rr_azure_creds *c, int64_t expires_ms, int64_t now_ms)
{
	int64_t life = expires_ms - now_ms, early = c->margin_ms;

	if (life < 2 * early)
		early = life > 0 ? life / 2 : 0;
	c->token_expires_ms = expires_ms;
	c->token_refresh_ms = expires_ms - early;
}

/* One token request; on success c->token and its expiry are replaced. */
static int s_fetch_token(struct rr_azure_creds *c, char *why, size_t why_len)
{
	struct rr_http_header hdr[2];
	struct rr_http_request req = { .url = c->token_url, .headers = hdr,
				       .response_max = S_ANSWER_MAX,
				       .timeout_ms = S_TOKEN_TIMEOUT_MS };
	struct rr_http_response resp;
	struct rr_buf form;
	int64_t expires_s;
	int rc = 0;

	rr_buf_init(&form, 3 * S_ASSERTION_MAX);
	rr_http_response_init(&resp);
	if (c->flow == S_IMDS) {
		req.method = "GET";
		hdr[0] = (struct rr_http_header){ "Metadata", "true" };
		req.nheaders = 1;
	} else {
		req.method = "POST";
		hdr[0] = (struct rr_http_header){ "Content-Type",
						  "application/x-www-form-urlencoded" };
		req.nheaders = 1;
		rc = s_token_form(c, &form, why, why_len);
		req.body = form.data;
		req.body_len = form.len;
	}
	if (!rc)
		rc = rr_http_perform(c->http, &req, &resp);
	if (rc && !why[0])
		rc = rr_fail(why, why_len, rc == RR_ENOMEM ? rc : RR_EIO,
			     "%s: no answer from %s: %s",
			     c->source, c->flow == S_IMDS ? "IMDS" : "the token endpoint",
			     resp.message[0] ? resp.message : rr_strerror(rc));
	else if (!rc && resp.status != 200)
		rc = s_token_refusal(c, &resp, why, why_len);
	else if (!rc)
		rc = rr_azure_token_parse(c->source, resp.body.data, resp.body.len,
					  rr_wall_ms() / 1000, c->token, sizeof(c->token),
					  &expires_s, why, why_len);
	if (!rc)
		s_set_expiry(c, expires_s * 1000, rr_wall_ms());
	rr_buf_wipe_free(&form);
	rr_http_response_wipe_free(&resp);
	return rc;
}

int rr_azure_creds_token(struct rr_azure_creds *c, int force_refresh, char *out, size_t cap,
			 char *why, size_t why_len)
{
	char fwhy[512] = "";
	int64_t now;
	int rc = 0;

	if (why && why_len)
		why[0] = '\0';
	if (!c || c->kind != RR_AZURE_AUTH_BEARER || !out)
		return RR_EINVAL;
	pthread_mutex_lock(&c->lock);
	now = rr_wall_ms();
	if (force_refresh || !c->token_expires_ms || now >= c->token_refresh_ms) {
		char old[RR_AZURE_TOKEN_MAX];
		int64_t old_exp = c->token_expires_ms, old_refresh = c->token_refresh_ms;

		memcpy(old, c->token, sizeof(old));
		rc = s_fetch_token(c, fwhy, sizeof(fwhy));
		if (rc && old_exp > now) {
			/* still valid: a slow token endpoint must not stop uploads */
			if (!c->failure_logged)
				rr_warn("refreshing the Azure token failed (%s); using the one "
					"held until it expires", fwhy);
			c->failure_logged = 1;
			memcpy(c->token, old, sizeof(old));
			c->token_expires_ms = old_exp;
			c->token_refresh_ms = old_refresh;
			rc = 0;
		} else if (!rc) {
			c->failure_logged = 0;
		}
		OPENSSL_cleanse(old, sizeof(old));
	}
	if (!rc && strlen(c->token) >= cap)
		rc = RR_ETOOBIG;
	if (!rc)
		memcpy(out, c->token, strlen(c->token) + 1);
	else if (why && why_len)
		snprintf(why, why_len, "%s", fwhy[0] ? fwhy : rr_strerror(rc));
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void rr_azure_creds_destroy(struct rr_azure_creds *c)
{
	if (!c)
		return;
	if (c->secret)
		OPENSSL_cleanse(c->secret, strlen(c->secret));
	free(c->secret);
	free(c->token_file);
	free(c->token_url);
	pthread_mutex_destroy(&c->lock);
	OPENSSL_cleanse(c, sizeof(*c));
	free(c);
}
