/* gs://: GCS through its XML API, the S3 protocol (storage/store/store_s3.c) with Google's
 * authorization and preconditions: storage.googleapis.com (or STORAGE_EMULATOR_HOST),
 * path-style, OAuth2 bearer tokens (storage/auth/gcs_auth.c), or with --gcs-hmac SigV4 with
 * HMAC keys from the AWS variables; x-goog-if-generation-match preconditions and
 * generations as version tags; no multi-object delete (rr_store_del_many deletes one by
 * one when a backend has none). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "remote.h"
#include "rr/aws_credentials.h"
#include "rr/env.h"
#include "rr/error.h"
#include "rr/gcs_auth.h"
#include "rr/loopback.h"
#include "store_s3.h"

/* OAuth2: "Authorization: Bearer <token>" and nothing signed; HMAC keys: SigV4. */
static int s_sign(struct rr_remote *r, const struct rr_remote_req *q, int refresh,
		  struct rr_remote_signed *p)
{
	struct rr_s3 *s3 = (struct rr_s3 *)r;
	char token[RR_GCS_TOKEN_MAX], why[300];
	struct rr_buf path;
	int rc;

	if (!s3->gauth)
		return rr_s3_sign(r, q, refresh, p);
	rc = rr_gcs_auth_token(s3->gauth, refresh, token, sizeof(token), p->cr.source, why,
			       sizeof(why));
	if (rc)
		return rr_store_fail(rc, "no usable Google credentials: %s", why);
	snprintf(p->auth, sizeof(p->auth), "Bearer %s", token);
	OPENSSL_cleanse(token, sizeof(token));
	rr_buf_init(&path, 8192);
	rc = rr_remote_raw_path(r, q->key, &path);
	if (!rc)
		rc = rr_remote_url(r, q, &path, NULL, &p->url);
	rr_buf_free(&path);
	if (rc)
		return rc;
	p->headers[0] = (struct rr_http_header){ "Host", r->host };
	p->headers[1] = (struct rr_http_header){ "Authorization", p->auth };
	rr_remote_finish_request(r, q, p, 2);
	return 0;
}

static const struct rr_remote_ops s_gcs_ops = {
	.sign = s_sign,
	.judge = rr_s3_judge,
	.version_header = "x-goog-generation", /* its preconditions take generations */
	.version_name = "generation",
	.if_version_header = "x-goog-if-generation-match",
};

static const struct rr_store_vtable s_gcs_vtable = {
	.scheme = "gs",
	.put = rr_s3_put,
	.get = rr_remote_get,
	.head = rr_remote_head,
	.list = rr_s3_list,
	.del = rr_remote_del,
	.del_if_old = rr_remote_del_if_old,
	.destroy = rr_s3_destroy,
};

/* Where requests go; Google's client libraries take STORAGE_EMULATOR_HOST with or without
 * a scheme. */
static int s_set_host(struct rr_s3 *s3)
{
	const char *emulator = rr_env("STORAGE_EMULATOR_HOST");
	char *endpoint = NULL;
	int rc;

	if (asprintf(&endpoint, "%s%s", emulator && !strstr(emulator, "://") ? "http://" : "",
		     emulator ? emulator : "https://storage.googleapis.com") < 0)
		return RR_ENOMEM;
	rc = rr_remote_parse_endpoint(endpoint, "S3 endpoint", &s3->r.scheme, &s3->r.host);
	free(endpoint);
	if (!rc && asprintf(&s3->r.path_root, "/%s", s3->r.bucket) < 0) {
		s3->r.path_root = NULL;
		rc = RR_ENOMEM;
	}
	return rc;
}

/* OAuth2 tokens (over plain http only to this machine), or HMAC keys. */
static int s_set_credentials(struct rr_s3 *s3, const struct rr_store_opts *opts)
{
	char why[300];
	int rc;

	/* A bearer token is the credential itself, readable by anyone on the path: over plain
	 * http only to this machine (an emulator), never across a network. (HMAC requests
	 * carry a signature, not the secret.) */
	if (!opts->gcs_hmac && strcmp(s3->r.scheme, "http") == 0 &&
	    !rr_url_host_is_loopback(s3->r.host))
		return rr_store_fail(RR_EINVAL, "refusing to send a Google OAuth token over "
				     "plain http to %s (STORAGE_EMULATOR_HOST): use https://, an "
				     "emulator on 127.0.0.1, or --gcs-hmac", s3->r.host);
	if (opts->gcs_hmac)
		return rr_aws_creds_new(&(struct rr_aws_creds_opts){ .http = s3->r.http,
								     .region = s3->region },
					&s3->creds);
	rc = rr_gcs_auth_new(&(struct rr_gcs_auth_opts){
				     .http = s3->r.http,
				     .metadata_endpoint = opts->metadata_endpoint },
			     &s3->gauth, why, sizeof(why));
	if (rc)
		rc = rr_store_fail(rc, "Google credentials: %s", why);
	return rc;
}

int rr_store_gcs_new(const char *rest, const struct rr_store_opts *opts, struct rr_store **out)
{
	struct rr_s3 *s3;
	int rc;

	s3 = calloc(1, sizeof(*s3));
	if (!s3)
		return RR_ENOMEM;
	s3->gcs = 1;
	rc = rr_remote_init(&s3->r, &s_gcs_vtable, &s_gcs_ops, "GCS", NULL);
	if (!rc)
		rc = rr_remote_set_bucket(&s3->r, rest, rr_s3_valid_bucket,
					  RR_S3_BUCKET_RULE("GCS"));
	if (!rc && (opts->s3_sse || opts->s3_sse_kms_key_id))
		rc = rr_store_fail(RR_EINVAL, "--s3-sse is for s3:// stores (GCS encrypts every "
				   "object itself)");
	if (!rc)
		rc = s_set_host(s3);
	s3->region = strdup("auto"); /* the scope GCS takes for HMAC-signed requests */
	if (!rc && !s3->region)
		rc = RR_ENOMEM;
	if (!rc)
		rc = rr_remote_set_part_size(&s3->r);
	if (!rc)
		rc = s_set_credentials(s3, opts);
	if (rc) {
		rr_s3_destroy(&s3->r.base);
		return rc;
	}
	return rr_s3_finish_open(s3, "gs://", out);
}
