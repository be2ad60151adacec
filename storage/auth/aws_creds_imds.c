/* Provider 5 of the AWS chain: the instance role from IMDSv2 (storage/net/imds.c), unless
 * AWS_EC2_METADATA_DISABLED is set to anything but "false". The IMDS client is kept by the
 * cache for its session token. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "aws_provider.h"
#include "rr/buf.h"
#include "rr/env.h"
#include "rr/error.h"
#include "rr/imds.h"
#include "rr/json.h"
#include "rr/quote.h"

#define S_ROLE_NAME_MAX 64 /* IAM's limit */

static int s_valid_role_name(const char *s, size_t n)
{
	if (n == 0 || n > S_ROLE_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || (ch && strchr("+=,.@_-", ch))))
			return 0;
	}
	return 1;
}

int rr_aws_provider_imds(struct rr_aws_chain *ch)
{
	const char *disabled = rr_env("AWS_EC2_METADATA_DISABLED");
	const char *list_path = "meta-data/iam/security-credentials/";
	struct rr_aws_creds *c = ch->c;
	struct rr_buf body;
	char role[S_ROLE_NAME_MAX + 1], path[128], step[96], mwhy[512] = "", q[RR_QUOTE_CAP];
	const cJSON *code;
	cJSON *j = NULL;
	long status = 0;
	size_t n;
	int rc;

	if (disabled && strcasecmp(disabled, "false") != 0) {
		rr_aws_chain_looked(ch, "instance role: IMDS disabled by "
				    "AWS_EC2_METADATA_DISABLED");
		return RR_AWS_NEXT;
	}
	if (!c->imds) {
		rc = rr_imds_new(c->http, c->imds_endpoint, &c->imds);
		if (rc)
			return rr_fail(ch->why, ch->cap, rc == RR_ENOMEM ? rc : RR_EINVAL,
				       "instance role: the IMDS endpoint is not usable");
	}
	rr_buf_init(&body, RR_AWS_RESPONSE_MAX);
	rc = rr_imds_get(c->imds, list_path, &body, 0, &status, mwhy, sizeof(mwhy));
	if (rc == RR_EIO && status == 0) {
		/* No answer at all: no EC2 metadata service here (a laptop, another cloud), or
		 * one out of reach (a container's hop limit, which mwhy names). Not a configured
		 * step that failed, so the chain ends listing every step it looked at, rather
		 * than blaming this one. */
		rr_aws_chain_looked(ch, "instance role: %s", mwhy);
		rc = RR_AWS_NEXT;
		goto out;
	}
	if (rc == RR_ENOENT) {
		rr_aws_chain_looked(ch, "instance role: none attached (IMDS at %s)",
				    rr_imds_endpoint(c->imds));
		rc = RR_AWS_NEXT;
		goto out;
	}
	if (rc) {
		rc = rr_fail(ch->why, ch->cap, rc, "instance role: %s", mwhy);
		goto out;
	}
	n = strcspn((const char *)body.data, "\r\n");
	if (n == 0) {
		rr_aws_chain_looked(ch, "instance role: none attached (IMDS at %s)",
				    rr_imds_endpoint(c->imds));
		rc = RR_AWS_NEXT;
		goto out;
	}
	if (!s_valid_role_name((const char *)body.data, n)) {
		rc = rr_fail(ch->why, ch->cap, RR_EIO,
			     "instance role: IMDS listed a role name %s that IAM "
			     "would not allow",
			     rr_quote(q, (const char *)body.data, n));
		goto out;
	}
	memcpy(role, body.data, n);
	role[n] = '\0';
	snprintf(path, sizeof(path), "%s%s", list_path, role);
	snprintf(step, sizeof(step), "instance role %s", role);
	rr_buf_reset(&body);
	rc = rr_imds_get(c->imds, path, &body, 0, NULL, mwhy, sizeof(mwhy));
	if (rc) {
		rc = rr_fail(ch->why, ch->cap, rc, "%s: %s", step, mwhy);
		goto out;
	}
	j = rr_json_parse((const char *)body.data, body.len, NULL);
	if (!cJSON_IsObject(j)) {
		rc = rr_fail(ch->why, ch->cap, RR_EIO, "%s: IMDS did not answer a JSON object",
			     step);
		goto out;
	}
	code = cJSON_GetObjectItemCaseSensitive(j, "Code");
	if (!cJSON_IsString(code) || strcmp(code->valuestring, "Success") != 0) {
		rc = rr_fail(ch->why, ch->cap, RR_EACCES, "%s: IMDS answered Code %s", step,
			     cJSON_IsString(code) ? rr_quote_str(q, code->valuestring) : "(none)");
		goto out;
	}
	rc = rr_aws_chain_fill_json(ch, step, j, 1, step);
out:
	rr_json_wipe_delete(j);
	rr_buf_wipe_free(&body);
	return rc;
}
