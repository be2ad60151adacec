#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rr/clock.h"
#include "rr/error.h"
#include "rr/json.h"
#include "rr/layout.h"
#include "rr/marks.h"

/* Writes one mark object (fields taken over and freed). */
static int s_put(struct rr_store *s, const char *key, cJSON *o)
{
	char *text = o ? cJSON_PrintUnformatted(o) : NULL;
	int rc = text ? rr_store_put(s, key, text, strlen(text), NULL, NULL) : RR_ENOMEM;

	free(text);
	cJSON_Delete(o);
	return rc;
}

int rr_mark_suspect(struct rr_store *s, const char *run_id, const char *name,
		    const struct rr_suspect *m)
{
	char key[RR_KEY_MAX];
	cJSON *o = cJSON_CreateObject();
	int rc = rr_key_mark(key, run_id, name, "suspect");

	if (rc || !o) {
		cJSON_Delete(o);
		return rc ? rc : RR_ENOMEM;
	}
	cJSON_AddStringToObject(o, "checkpoint", name);
	cJSON_AddNumberToObject(o, "committed_unix_ms", (double)m->for_committed_ms);
	cJSON_AddNumberToObject(o, "unix_ms", (double)(m->unix_ms ? m->unix_ms : rr_wall_ms()));
	cJSON_AddNumberToObject(o, "failures", (double)m->failures);
	cJSON_AddNumberToObject(o, "exit_status", (double)m->exit_status);
	cJSON_AddStringToObject(o, "host", m->host);
	cJSON_AddStringToObject(o, "why", m->why);
	return s_put(s, key, o);
}

int rr_mark_proven(struct rr_store *s, const char *run_id, const char *name, const char *by,
		   const char *host)
{
	char key[RR_KEY_MAX];
	cJSON *o = cJSON_CreateObject();
	int rc = rr_key_mark(key, run_id, name, "proven");

	if (rc || !o) {
		cJSON_Delete(o);
		return rc ? rc : RR_ENOMEM;
	}
	cJSON_AddStringToObject(o, "checkpoint", name);
	cJSON_AddStringToObject(o, "committed_after", by);
	cJSON_AddNumberToObject(o, "unix_ms", (double)rr_wall_ms());
	cJSON_AddStringToObject(o, "host", host);
	return s_put(s, key, o);
}

int rr_mark_clear_suspect(struct rr_store *s, const char *run_id, const char *name)
{
	char key[RR_KEY_MAX];
	int rc = rr_key_mark(key, run_id, name, "suspect");

	return rc ? rc : rr_store_del(s, key);
}

/* A whole number field in [min, max], or fallback when absent. */
static int s_int(const cJSON *o, const char *field, int64_t min, int64_t max, int64_t fallback,
		 int64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);

	*out = fallback;
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < (double)min || v->valuedouble > (double)max ||
	    v->valuedouble != (double)(int64_t)v->valuedouble)
		return RR_ECORRUPT;
	*out = (int64_t)v->valuedouble;
	return 0;
}

static void s_str(const cJSON *o, const char *field, char *out, size_t cap)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);

	out[0] = '\0';
	if (cJSON_IsString(v) && v->valuestring)
		snprintf(out, cap, "%s", v->valuestring);
}

int rr_suspect_parse(const char *text, size_t len, struct rr_suspect *out, char *why,
		     size_t why_len)
{
	static const int64_t max_ms = 1LL << 53;
	cJSON *o = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len > RR_MARK_MAX_BYTES) {
		snprintf(why, why_len, "suspect mark is %zu bytes, more than a mark can be", len);
		return RR_ECORRUPT;
	}
	rc = rr_json_parse_object("suspect mark", text, len, &o, why, why_len);
	if (rc)
		return rc;
	/* committed_unix_ms is what the mark applies to: without it, it applies to nothing. */
	if (!cJSON_GetObjectItemCaseSensitive(o, "committed_unix_ms") ||
	    s_int(o, "committed_unix_ms", 0, max_ms, 0, &out->for_committed_ms) ||
	    s_int(o, "unix_ms", 0, max_ms, 0, &out->unix_ms) ||
	    s_int(o, "failures", 0, 1000000, 0, &out->failures) ||
	    s_int(o, "exit_status", -1, 255, -1, &out->exit_status)) {
		snprintf(why, why_len, "suspect mark has a missing or out-of-range number");
		rc = RR_ECORRUPT;
	}
	s_str(o, "host", out->host, sizeof(out->host));
	s_str(o, "why", out->why, sizeof(out->why));
	cJSON_Delete(o);
	return rc;
}

int rr_mark_read_suspect(struct rr_store *s, const char *run_id, const char *name,
			 struct rr_suspect *out)
{
	char key[RR_KEY_MAX], why[200];
	struct rr_buf b;
	int rc = rr_key_mark(key, run_id, name, "suspect");

	memset(out, 0, sizeof(*out));
	if (rc)
		return rc;
	rr_buf_init(&b, RR_MARK_MAX_BYTES);
	rc = rr_store_get(s, key, &b, NULL);
	if (rc == RR_ETOOBIG)
		rc = RR_ECORRUPT;
	if (!rc)
		rc = rr_suspect_parse((const char *)(b.data ? b.data : (unsigned char *)""), b.len,
				      out, why, sizeof(why));
	rr_buf_free(&b);
	return rc;
}

/* "<host>-<pid>-<ms>", the host reduced to characters every store keeps in a key. */
static void s_token(char *token)
{
	char host[64] = "host";
	size_t i;

	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "host");
	host[sizeof(host) - 1] = '\0';
	host[24] = '\0';
	for (i = 0; host[i]; i++)
		if (!((host[i] >= 'a' && host[i] <= 'z') || (host[i] >= 'A' && host[i] <= 'Z') ||
		      (host[i] >= '0' && host[i] <= '9') || host[i] == '-' || host[i] == '.'))
			host[i] = '_';
	snprintf(token, RR_READER_TOKEN_MAX, "%s-%d-%lld", host, (int)getpid(),
		 (long long)rr_wall_ms());
}

int rr_reader_begin(struct rr_store *s, const char *run_id, const char *name, char *token)
{
	char key[RR_KEY_MAX];
	cJSON *o;
	int rc;

	s_token(token);
	rc = rr_key_reader(key, run_id, name, token);
	if (rc)
		return rc;
	o = cJSON_CreateObject();
	if (o) {
		cJSON_AddStringToObject(o, "checkpoint", name);
		cJSON_AddNumberToObject(o, "unix_ms", (double)rr_wall_ms());
	}
	return s_put(s, key, o);
}

void rr_reader_end(struct rr_store *s, const char *run_id, const char *name,
		   const char *token)
{
	char key[RR_KEY_MAX];

	if (token[0] && rr_key_reader(key, run_id, name, token) == 0)
		(void)rr_store_del(s, key);
}
