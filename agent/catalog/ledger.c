#include <math.h> /* isfinite, a macro: no libm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rr/error.h"
#include "rr/json.h"
#include "rr/layout.h"
#include "rr/ledger.h"
#include "rr/log.h"

/* 2^53: beyond it a JSON number no longer holds every integer. */
#define S_INT_MAX 9007199254740992.0
/* Times and durations (ms): up to the year 3000, so that sums over a whole ledger
 * (RR_LEDGER_EVENTS_MAX of them) stay far inside int64. */
#define S_MS_MAX 32503680000000.0

static int s_bad(char *why, size_t why_len, const char *field, const char *what)
{
	snprintf(why, why_len, "\"%s\" %s", field, what);
	return RR_EINVAL;
}

/* An optional string member: absent or null leaves dst empty; anything else must be a
 * string that fits. */
static int s_str(const cJSON *o, const char *name, char *dst, size_t cap, char *why,
		 size_t why_len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	size_t len;

	dst[0] = '\0';
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v) || !v->valuestring)
		return s_bad(why, why_len, name, "must be a string");
	len = strlen(v->valuestring);
	if (len >= cap)
		return s_bad(why, why_len, name, "is too long");
	memcpy(dst, v->valuestring, len + 1);
	return 0;
}

/* An optional integral number within [lo, hi]; absent or null leaves *out alone. The range
 * is checked before the cast, so the cast is defined. */
static int s_int(const cJSON *o, const char *name, double lo, double hi, int64_t *out,
		 char *why, size_t why_len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
	    v->valuedouble > hi || (double)(int64_t)v->valuedouble != v->valuedouble)
		return s_bad(why, why_len, name, "must be an integer in range");
	*out = (int64_t)v->valuedouble;
	return 0;
}

static int s_u64(const cJSON *o, const char *name, uint64_t *out, char *why, size_t why_len)
{
	int64_t v = 0;
	int rc = s_int(o, name, 0, S_INT_MAX, &v, why, why_len);
	if (!rc)
		*out = (uint64_t)v;
	return rc;
}

static int s_bool(const cJSON *o, const char *name, int *out, char *why, size_t why_len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return s_bad(why, why_len, name, "must be true or false");
	*out = cJSON_IsTrue(v);
	return 0;
}

static enum rr_ledger_kind s_kind(const char *k)
{
	static const struct { const char *name; enum rr_ledger_kind kind; } kinds[] = {
		{ "start", RR_LEDGER_START }, { "restore", RR_LEDGER_RESTORE },
		{ "notice", RR_LEDGER_NOTICE }, { "checkpoint", RR_LEDGER_CHECKPOINT },
		{ "restart", RR_LEDGER_RESTART }, { "interval", RR_LEDGER_INTERVAL },
		{ "suspect", RR_LEDGER_SUSPECT },
		{ "exit", RR_LEDGER_EXIT },
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(k, kinds[i].name) == 0)
			return kinds[i].kind;
	return RR_LEDGER_OTHER;
}

static int s_instance(const cJSON *root, struct rr_ledger_instance *in, char *why,
		      size_t why_len)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "instance");

	if (!o || cJSON_IsNull(o))
		return 0;
	if (!cJSON_IsObject(o))
		return s_bad(why, why_len, "instance", "must be an object");
	if (s_str(o, "cloud", in->cloud, sizeof(in->cloud), why, why_len) ||
	    s_str(o, "instance_id", in->instance_id, sizeof(in->instance_id), why, why_len) ||
	    s_str(o, "instance_type", in->instance_type, sizeof(in->instance_type), why,
		  why_len) ||
	    s_str(o, "zone", in->zone, sizeof(in->zone), why, why_len) ||
	    s_str(o, "lifecycle", in->lifecycle, sizeof(in->lifecycle), why, why_len))
		return RR_EINVAL;
	return 0;
}

int rr_ledger_event_parse(const char *text, size_t len, struct rr_ledger_event *out, char *why,
			  size_t why_len)
{
	struct rr_ledger_event e = { .fallbacks = -1 };
	char kind[32];
	int64_t received_s = 0, deadline_s = 0;
	cJSON *root = NULL;
	int rc = RR_EINVAL;

	if (len > RR_LEDGER_EVENT_MAX) {
		snprintf(why, why_len, "event larger than %d bytes", RR_LEDGER_EVENT_MAX);
		return RR_ETOOBIG;
	}
	root = rr_json_parse(text, len, NULL);
	if (!cJSON_IsObject(root)) {
		snprintf(why, why_len, "not a JSON object");
		goto out;
	}
	if (s_str(root, "kind", kind, sizeof(kind), why, why_len))
		goto out;
	if (!kind[0]) {
		snprintf(why, why_len, "no \"kind\"");
		goto out;
	}
	e.kind = s_kind(kind);
	if (s_int(root, "unix_ms", 1, S_MS_MAX, &e.unix_ms, why, why_len))
		goto out;
	if (!e.unix_ms) {
		snprintf(why, why_len, "no \"unix_ms\"");
		goto out;
	}
	if (s_str(root, "host", e.host, sizeof(e.host), why, why_len) ||
	    s_int(root, "pid", 0, S_INT_MAX, &e.pid, why, why_len) ||
	    s_int(root, "started_unix_ms", 0, S_MS_MAX, &e.started_ms, why, why_len) ||
	    s_instance(root, &e.inst, why, why_len) ||
	    s_str(root, "notice", e.notice, sizeof(e.notice), why, why_len) ||
	    s_str(root, "source", e.source, sizeof(e.source), why, why_len) ||
	    s_int(root, "received_unix", 0, S_MS_MAX / 1000, &received_s, why, why_len) ||
	    s_int(root, "received_unix_ms", 0, S_MS_MAX, &e.received_ms, why, why_len) ||
	    s_int(root, "deadline_unix", 0, S_MS_MAX / 1000, &deadline_s, why, why_len) ||
	    s_str(root, "checkpoint", e.checkpoint, sizeof(e.checkpoint), why, why_len) ||
	    s_u64(root, "bytes", &e.bytes, why, why_len) ||
	    s_u64(root, "stored_bytes", &e.stored_bytes, why, why_len) ||
	    s_u64(root, "new_bytes", &e.new_bytes, why, why_len) ||
	    s_u64(root, "downloaded_bytes", &e.downloaded_bytes, why, why_len) ||
	    s_u64(root, "unused_bytes", &e.unused_bytes, why, why_len) ||
	    s_int(root, "elapsed_ms", 0, S_MS_MAX, &e.elapsed_ms, why, why_len) ||
	    s_int(root, "committed_unix_ms", 0, S_MS_MAX, &e.committed_ms, why, why_len) ||
	    s_int(root, "durable_unix_ms", 0, S_MS_MAX, &e.durable_ms, why, why_len) ||
	    s_bool(root, "urgent", &e.urgent, why, why_len) ||
	    s_bool(root, "already_present", &e.already_present, why, why_len) ||
	    s_int(root, "fallbacks", 0, 1e6, &e.fallbacks, why, why_len) ||
	    s_int(root, "exit_status", -1e6, 1e6, &e.exit_status, why, why_len) ||
	    s_int(root, "attempt", 0, S_INT_MAX, &e.attempt, why, why_len) ||
	    s_str(root, "mode", e.mode, sizeof(e.mode), why, why_len) ||
	    s_int(root, "interval_ms", 0, S_MS_MAX, &e.interval_ms, why, why_len) ||
	    s_int(root, "cost_ms", 0, S_MS_MAX, &e.cost_ms, why, why_len) ||
	    s_int(root, "mtbf_ms", 0, S_MS_MAX, &e.mtbf_ms, why, why_len) ||
	    s_int(root, "stall_ms", 0, S_MS_MAX, &e.stall_ms, why, why_len) ||
	    s_str(root, "how", e.how, sizeof(e.how), why, why_len) ||
	    s_str(root, "signal", e.signal, sizeof(e.signal), why, why_len) ||
	    s_int(root, "failures", 0, S_INT_MAX, &e.failures, why, why_len) ||
	    s_str(root, e.kind == RR_LEDGER_SUSPECT ? "restored_instead" : "passed_over_suspect",
		  e.instead, sizeof(e.instead), why, why_len))
		goto out;
	/* Older agents wrote whole seconds only, and no durable time (the event is written
	 * just after the manifest, so its own time stands in). */
	if (!e.received_ms)
		e.received_ms = received_s ? received_s * 1000 : e.unix_ms;
	e.deadline_ms = deadline_s * 1000;
	if (e.kind == RR_LEDGER_CHECKPOINT && !e.durable_ms)
		e.durable_ms = e.unix_ms;
	*out = e;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

struct s_keys {
	char **keys;
	size_t n, cap;
	int too_many;
};

static int s_collect(const struct rr_store_entry *e, void *ud)
{
	struct s_keys *k = ud;
	size_t len = strlen(e->key);

	if (len < 5 || strcmp(e->key + len - 5, ".json") != 0)
		return 0; /* not an event (a temp file of some other tool) */
	if (k->n == RR_LEDGER_EVENTS_MAX) {
		k->too_many = 1;
		return 0;
	}
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 64;
		char **keys = realloc(k->keys, cap * sizeof(*keys));
		if (!keys)
			return RR_ENOMEM;
		k->keys = keys;
		k->cap = cap;
	}
	k->keys[k->n] = strdup(e->key);
	if (!k->keys[k->n])
		return RR_ENOMEM;
	k->n++;
	return 0;
}

static int s_cmp_keys(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rr_ledger_load(struct rr_store *s, const char *run_id, struct rr_ledger_event **out,
		   size_t *n, size_t *skipped)
{
	return rr_ledger_load_newest(s, run_id, RR_LEDGER_EVENTS_MAX, out, n, skipped);
}

int rr_ledger_load_newest(struct rr_store *s, const char *run_id, size_t max,
			  struct rr_ledger_event **out, size_t *n, size_t *skipped)
{
	struct s_keys k = { 0 };
	struct rr_ledger_event *ev = NULL;
	char prefix[RR_KEY_MAX];
	struct rr_buf b;
	size_t got = 0;
	int rc;

	*out = NULL;
	*n = 0;
	*skipped = 0;
	rr_buf_init(&b, RR_LEDGER_EVENT_MAX);
	rc = rr_key_events_prefix(prefix, run_id);
	if (rc)
		goto out;
	rc = rr_store_list(s, prefix, s_collect, &k);
	if (rc)
		goto out;
	if (k.too_many)
		rr_warn("run '%s' has more than %d events; the newest are left out", run_id,
			RR_LEDGER_EVENTS_MAX);
	/* <13-digit unix ms>-<kind>.json: the names sort in time order. */
	if (k.n > 1)
		qsort(k.keys, k.n, sizeof(*k.keys), s_cmp_keys);
	if (max && k.n > max) { /* the newest: the end of the sorted list */
		for (size_t i = 0; i < k.n - max; i++)
			free(k.keys[i]);
		memmove(k.keys, k.keys + (k.n - max), max * sizeof(*k.keys));
		k.n = max;
	}
	if (k.n) {
		ev = calloc(k.n, sizeof(*ev));
		if (!ev) {
			rc = RR_ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < k.n; i++) {
		char why[160];
		rr_buf_reset(&b);
		rc = rr_store_get(s, k.keys[i], &b, NULL);
		if (rc == RR_ENOENT) { /* deleted since the listing */
			rc = 0;
			continue;
		}
		if (rc == RR_ETOOBIG) {
			snprintf(why, sizeof(why), "larger than %d bytes", RR_LEDGER_EVENT_MAX);
		} else if (rc) {
			goto out;
		} else {
			rc = rr_ledger_event_parse(b.data ? (const char *)b.data : "", b.len,
						   &ev[got], why, sizeof(why));
			if (!rc) {
				got++;
				continue;
			}
		}
		rr_warn("ledger event %s left out: %s", k.keys[i], why);
		(*skipped)++;
		rc = 0;
	}
	*out = ev;
	*n = got;
	ev = NULL;
out:
	free(ev);
	for (size_t i = 0; i < k.n; i++)
		free(k.keys[i]);
	free(k.keys);
	rr_buf_free(&b);
	return rc;
}
