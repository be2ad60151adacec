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

/* Members not named here are ignored: people and tools write this file, and may note in it
 * what they like ("note": "drill #4"). */
static const char *const s_names[] = { "kind", "deadline_unix", "deadline_in" };

int rr_notice_parse_file(const char *text, size_t len, int64_t now_unix, struct rr_notice *n,
			 char *why, size_t why_len)
{
	const char *kind = s_kinds[RR_NOTICE_PREEMPT];
	int64_t at = 0, in = -1;
	struct rr_json_obj o;
	cJSON *root;
	size_t i = 0;
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
	if (rr_json_open(&o, root, "", RR_JSON_NAMES(s_names), 0, why, why_len))
		goto out;
	if (rr_json_get_string(&o, "kind", RR_JSON_OPTIONAL, &kind))
		kind = ""; /* not a string: refused below */
	while (i < 4 && strcmp(kind, s_kinds[i]) != 0)
		i++;
	if (i == 4) {
		snprintf(why, why_len, "\"kind\" must be one of preempt, rebalance, "
			 "maintenance, terminate");
		goto out;
	}
	n->kind = (enum rr_notice_kind)i;
	if (rr_json_get_int(&o, "deadline_unix", RR_JSON_OPTIONAL | RR_JSON_NULLABLE, 1,
			    (int64_t)1e12, &at)) {
		snprintf(why, why_len, "\"deadline_unix\" must be a positive integer");
		goto out;
	}
	if (!at && rr_json_get_int(&o, "deadline_in", RR_JSON_OPTIONAL, 0, 30 * 86400, &in)) {
		snprintf(why, why_len, "\"deadline_in\" must be seconds (0 to 30 days)");
		goto out;
	}
	n->deadline_unix = at ? at : in >= 0 ? now_unix + in : 0;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}
