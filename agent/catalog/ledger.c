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
#define S_INT_MAX ((int64_t)1 << 53)
/* Times and durations (ms): up to the year 3000, so that sums over a whole ledger
 * (RR_LEDGER_EVENTS_MAX of them) stay far inside int64. */
#define S_MS_MAX 32503680000000LL
/* Every member is optional, and null reads as absent. */
#define S_OPT (RR_JSON_OPTIONAL | RR_JSON_NULLABLE)

/* The members read. Others are ignored: a newer agent writes members (and kinds) this one
 * does not know, and the report shows what it can of them. */
static const char *const s_names[] = {
	"kind",		  "unix_ms",	       "host",		  "pid",
	"started_unix_ms", "instance",	       "notice",	  "source",
	"received_unix",   "received_unix_ms", "deadline_unix",	  "checkpoint",
	"bytes",	  "stored_bytes",      "new_bytes",	  "downloaded_bytes",
	"unused_bytes",	  "elapsed_ms",	       "committed_unix_ms", "durable_unix_ms",
	"urgent",	  "already_present",   "fallbacks",	  "exit_status",
	"attempt",	  "mode",	       "interval_ms",	  "cost_ms",
	"mtbf_ms",	  "stall_ms",	       "how",		  "signal",
	"failures",	  "restored_instead",  "passed_over_suspect",
};
static const char *const s_instance_names[] = { "cloud", "instance_id", "instance_type", "zone",
						"lifecycle" };

/* The ledger's reasons name the member and what it must be, whatever was wrong with it. */
static int s_bad(const struct rr_json_obj *o, const char *field, const char *what)
{
	snprintf(o->why, o->why_len, "\"%s\" %s", field, what);
	return RR_EINVAL;
}

/* A string member that fits dst; absent leaves dst empty. */
static int s_str(const struct rr_json_obj *o, const char *name, char *dst, size_t cap)
{
	const char *v = "";
	size_t len;

	dst[0] = '\0';
	if (rr_json_get_string(o, name, S_OPT, &v))
		return s_bad(o, name, "must be a string");
	len = strlen(v);
	if (len >= cap)
		return s_bad(o, name, "is too long");
	memcpy(dst, v, len + 1);
	return 0;
}

/* An integer member within [lo, hi]; absent leaves *out alone. */
static int s_int(const struct rr_json_obj *o, const char *name, int64_t lo, int64_t hi,
		 int64_t *out)
{
	if (rr_json_get_int(o, name, S_OPT, lo, hi, out))
		return s_bad(o, name, "must be an integer in range");
	return 0;
}

static int s_u64(const struct rr_json_obj *o, const char *name, uint64_t *out)
{
	if (rr_json_get_uint(o, name, S_OPT, (uint64_t)S_INT_MAX, out))
		return s_bad(o, name, "must be an integer in range");
	return 0;
}

static int s_bool(const struct rr_json_obj *o, const char *name, int *out)
{
	if (rr_json_get_bool(o, name, S_OPT, out))
		return s_bad(o, name, "must be true or false");
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

static int s_instance(const struct rr_json_obj *root, struct rr_ledger_instance *in)
{
	struct rr_json_obj o;
	const cJSON *j;

	if (rr_json_get_object(root, "instance", S_OPT, &j))
		return s_bad(root, "instance", "must be an object");
	if (!j)
		return 0;
	if (rr_json_open(&o, j, "instance: ", RR_JSON_NAMES(s_instance_names), 0, root->why,
			 root->why_len) ||
	    s_str(&o, "cloud", in->cloud, sizeof(in->cloud)) ||
	    s_str(&o, "instance_id", in->instance_id, sizeof(in->instance_id)) ||
	    s_str(&o, "instance_type", in->instance_type, sizeof(in->instance_type)) ||
	    s_str(&o, "zone", in->zone, sizeof(in->zone)) ||
	    s_str(&o, "lifecycle", in->lifecycle, sizeof(in->lifecycle)))
		return RR_EINVAL;
	return 0;
}

/* The members after "kind" and "unix_ms", each as its kind of event writes it. */
static int s_members(const struct rr_json_obj *o, struct rr_ledger_event *e,
		     int64_t *received_s, int64_t *deadline_s)
{
	if (s_str(o, "host", e->host, sizeof(e->host)) ||
	    s_int(o, "pid", 0, S_INT_MAX, &e->pid) ||
	    s_int(o, "started_unix_ms", 0, S_MS_MAX, &e->started_ms) || s_instance(o, &e->inst) ||
	    s_str(o, "notice", e->notice, sizeof(e->notice)) ||
	    s_str(o, "source", e->source, sizeof(e->source)) ||
	    s_int(o, "received_unix", 0, S_MS_MAX / 1000, received_s) ||
	    s_int(o, "received_unix_ms", 0, S_MS_MAX, &e->received_ms) ||
	    s_int(o, "deadline_unix", 0, S_MS_MAX / 1000, deadline_s) ||
	    s_str(o, "checkpoint", e->checkpoint, sizeof(e->checkpoint)) ||
	    s_u64(o, "bytes", &e->bytes) || s_u64(o, "stored_bytes", &e->stored_bytes) ||
	    s_u64(o, "new_bytes", &e->new_bytes) ||
	    s_u64(o, "downloaded_bytes", &e->downloaded_bytes) ||
	    s_u64(o, "unused_bytes", &e->unused_bytes) ||
	    s_int(o, "elapsed_ms", 0, S_MS_MAX, &e->elapsed_ms) ||
	    s_int(o, "committed_unix_ms", 0, S_MS_MAX, &e->committed_ms) ||
	    s_int(o, "durable_unix_ms", 0, S_MS_MAX, &e->durable_ms) ||
	    s_bool(o, "urgent", &e->urgent) || s_bool(o, "already_present", &e->already_present) ||
	    s_int(o, "fallbacks", 0, 1000000, &e->fallbacks) ||
	    s_int(o, "exit_status", -1000000, 1000000, &e->exit_status) ||
	    s_int(o, "attempt", 0, S_INT_MAX, &e->attempt) ||
	    s_str(o, "mode", e->mode, sizeof(e->mode)) ||
	    s_int(o, "interval_ms", 0, S_MS_MAX, &e->interval_ms) ||
	    s_int(o, "cost_ms", 0, S_MS_MAX, &e->cost_ms) ||
	    s_int(o, "mtbf_ms", 0, S_MS_MAX, &e->mtbf_ms) ||
	    s_int(o, "stall_ms", 0, S_MS_MAX, &e->stall_ms) ||
	    s_str(o, "how", e->how, sizeof(e->how)) ||
	    s_str(o, "signal", e->signal, sizeof(e->signal)) ||
	    s_int(o, "failures", 0, S_INT_MAX, &e->failures) ||
	    s_str(o, e->kind == RR_LEDGER_SUSPECT ? "restored_instead" : "passed_over_suspect",
		  e->instead, sizeof(e->instead)))
		return RR_EINVAL;
	return 0;
}

int rr_ledger_event_parse(const char *text, size_t len, struct rr_ledger_event *out, char *why,
			  size_t why_len)
{
	struct rr_ledger_event e = { .fallbacks = -1 };
	char kind[32];
	int64_t received_s = 0, deadline_s = 0;
	struct rr_json_obj o;
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
	if (rr_json_open(&o, root, "", RR_JSON_NAMES(s_names), 0, why, why_len) ||
	    s_str(&o, "kind", kind, sizeof(kind)))
		goto out;
	if (!kind[0]) {
		snprintf(why, why_len, "no \"kind\"");
		goto out;
	}
	e.kind = s_kind(kind);
	if (s_int(&o, "unix_ms", 1, S_MS_MAX, &e.unix_ms))
		goto out;
	if (!e.unix_ms) {
		snprintf(why, why_len, "no \"unix_ms\"");
		goto out;
	}
	if (s_members(&o, &e, &received_s, &deadline_s))
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
