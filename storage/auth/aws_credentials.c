/* The AWS credentials value (include/rr/aws_credentials.h) and what every provider of the
 * chain checks its answer with (storage/auth/aws_provider.h): lengths and bytes that can
 * travel in a header, the JSON shape the container endpoint and IMDS share, and secret
 * files read without leaving copies behind. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "aws_provider.h"
#include "rr/aws_credentials.h"
#include "rr/aws_profile.h"
#include "rr/buf.h"
#include "rr/error.h"
#include "rr/timefmt.h"

void rr_aws_credentials_wipe(struct rr_aws_credentials *cr)
{
	if (cr)
		OPENSSL_cleanse(cr, sizeof(*cr));
}

void rr_aws_chain_looked(struct rr_aws_chain *ch, const char *fmt, ...)
{
	size_t n = strlen(ch->looked);
	va_list ap;

	if (n && n + 2 < sizeof(ch->looked)) {
		memcpy(ch->looked + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(ch->looked + n, sizeof(ch->looked) - n, fmt, ap);
	va_end(ap);
}

const char *rr_aws_chain_profile_get(const struct rr_aws_chain *ch, const char *key)
{
	return ch->profile ? rr_aws_profile_get(ch->profile, key) : NULL;
}

/* Bytes that may not appear in a key, secret or token: they travel in HTTP headers. */
int rr_aws_printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

/* Fills ch->out after checking lengths and bytes; names what is wrong without showing it. */
int rr_aws_chain_fill(struct rr_aws_chain *ch, const char *step, const char *akid,
		      const char *secret, const char *token, int64_t expires_ms,
		      const char *source)
{
	struct rr_aws_credentials *o = ch->out;

	if (!token)
		token = "";
	if (strlen(akid) >= sizeof(o->access_key_id) ||
	    strlen(secret) >= sizeof(o->secret_access_key) ||
	    strlen(token) >= sizeof(o->session_token))
		return rr_fail(ch->why, ch->cap, RR_EINVAL,
			       "%s: the access key id, secret or session token is "
			       "longer than AWS issues",
			       step);
	if (!*akid || !*secret)
		return rr_fail(ch->why, ch->cap, RR_EINVAL,
			       "%s: the access key id or secret is empty", step);
	if (!rr_aws_printable(akid) || !rr_aws_printable(secret) || !rr_aws_printable(token))
		return rr_fail(ch->why, ch->cap, RR_EINVAL,
			       "%s: the access key id, secret or session token "
			       "holds a space or control character",
			       step);
	rr_aws_credentials_wipe(o);
	memcpy(o->access_key_id, akid, strlen(akid));
	memcpy(o->secret_access_key, secret, strlen(secret));
	memcpy(o->session_token, token, strlen(token));
	o->expires_unix_ms = expires_ms;
	snprintf(o->source, sizeof(o->source), "%s", source);
	return 0;
}

/* Reads a small file that holds a secret (a web identity or authorization token) into
 * out, without trailing white space. Returns 0 or an rr_error, errno-derived. */
int rr_aws_read_secret_file(const char *path, struct rr_buf *out)
{
	char chunk[4096];
	int fd, rc = 0;
	ssize_t n;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rr_error_from_errno(errno);
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = rr_error_from_errno(errno);
			break;
		}
		if (n == 0)
			break;
		rc = rr_buf_append(out, chunk, (size_t)n);
		if (rc)
			break;
	}
	OPENSSL_cleanse(chunk, sizeof(chunk));
	close(fd);
	while (rc == 0 && out->len > 0 &&
	       (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == '\r' ||
		out->data[out->len - 1] == ' ' || out->data[out->len - 1] == '\t'))
		out->data[--out->len] = '\0';
	return rc;
}

/* Reads AccessKeyId, SecretAccessKey, Token, Expiration from a JSON document (the container
 * and the IMDS answers share these names). */
int rr_aws_chain_fill_json(struct rr_aws_chain *ch, const char *step, const cJSON *j,
			   int token_required, const char *source)
{
	const cJSON *akid = cJSON_GetObjectItemCaseSensitive(j, "AccessKeyId");
	const cJSON *secret = cJSON_GetObjectItemCaseSensitive(j, "SecretAccessKey");
	const cJSON *token = cJSON_GetObjectItemCaseSensitive(j, "Token");
	const cJSON *exp = cJSON_GetObjectItemCaseSensitive(j, "Expiration");
	int64_t expires = 0;

	if (!cJSON_IsString(akid) || !cJSON_IsString(secret))
		return rr_fail(ch->why, ch->cap, RR_EIO,
			       "%s: the answer has no AccessKeyId or SecretAccessKey", step);
	if ((token && !cJSON_IsString(token)) || (token_required && !token))
		return rr_fail(ch->why, ch->cap, RR_EIO, "%s: the answer has no usable Token",
			       step);
	if (exp && (!cJSON_IsString(exp) || rr_iso8601_to_unix_ms(exp->valuestring, &expires)))
		return rr_fail(ch->why, ch->cap, RR_EIO,
			       "%s: the answer's Expiration is not an ISO 8601 time", step);
	if (token_required && !exp)
		return rr_fail(ch->why, ch->cap, RR_EIO, "%s: the answer has no Expiration", step);
	return rr_aws_chain_fill(ch, step, akid->valuestring, secret->valuestring,
				 token ? token->valuestring : NULL, expires, source);
}
