#include <math.h> /* isfinite, a macro: no libm */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rr/error.h"
#include "rr/json.h"
#include "rr/notice.h"

static const char *const s_kinds[] = { "preempt", "rebalance", "maintenance", "terminate" };
static const char *const s_sources[] = { "aws", "gcp", "azure", "signal", "file", "node" };

const char *rr_notice_kind_name(enum rr_notice_kind k)
{
	return (unsigned)k < 4 ? s_kinds[k] : "preempt";
}

const char *rr_notice_source_name(enum rr_notice_source s)
{
	return (unsigned)s < 6 ? s_sources[s] : "file";
}

int rr_notice_to_json(const struct rr_notice *n, struct rr_buf *out)
{
	char deadline[32];
	if (n->deadline_unix)
		snprintf(deadline, sizeof(deadline), "%lld", (long long)n->deadline_unix);
	else
		strcpy(deadline, "null");
	return rr_buf_printf(out,
			     "{\"kind\":\"%s\",\"source\":\"%s\",\"deadline_unix\":%s,"
			     "\"received_unix\":%lld}\n",
			     rr_notice_kind_name(n->kind), rr_notice_source_name(n->source),
			     deadline, (long long)n->received_unix);
}

/* An integral JSON number within [lo, hi]. The range is checked before the cast, so the
 * cast is defined; no floor(): the library does not link libm. */
static int s_int(const cJSON *v, double lo, double hi, int64_t *out)
{
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
	    v->valuedouble > hi || (double)(int64_t)v->valuedouble != v->valuedouble)
		return RR_EINVAL;
	*out = (int64_t)v->valuedouble;
	return 0;
}

int rr_notice_parse_file(const char *text, size_t len, int64_t now_unix, struct rr_notice *n,
			 char *why, size_t why_len)
{
	const cJSON *kind, *deadline, *deadline_in;
	cJSON *root;
	int64_t v;
	int rc = RR_EINVAL;

	n->kind = RR_NOTICE_PREEMPT;
	n->deadline_unix = 0;
	if (len > RR_NOTICE_FILE_MAX) {
		snprintf(why, why_len, "notice file is larger than %d bytes", RR_NOTICE_FILE_MAX);
		return RR_ETOOBIG;
	}
	root = rr_json_parse(text, len, NULL);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return 0; /* not JSON: its appearance alone is the notice */
	}
	kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
	deadline = cJSON_GetObjectItemCaseSensitive(root, "deadline_unix");
	deadline_in = cJSON_GetObjectItemCaseSensitive(root, "deadline_in");
	if (kind) {
		size_t i;
		for (i = 0; i < 4; i++)
			if (cJSON_IsString(kind) && strcmp(kind->valuestring, s_kinds[i]) == 0)
				break;
		if (i == 4) {
			snprintf(why, why_len, "\"kind\" must be one of preempt, rebalance, "
				 "maintenance, terminate");
			goto out;
		}
		n->kind = (enum rr_notice_kind)i;
	}
	if (deadline && !cJSON_IsNull(deadline)) {
		if (s_int(deadline, 1, 1e12, &v)) {
			snprintf(why, why_len, "\"deadline_unix\" must be a positive integer");
			goto out;
		}
		n->deadline_unix = v;
	} else if (deadline_in) {
		if (s_int(deadline_in, 0, 30 * 86400, &v)) {
			snprintf(why, why_len, "\"deadline_in\" must be seconds (0 to 30 days)");
			goto out;
		}
		n->deadline_unix = now_unix + v;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}
