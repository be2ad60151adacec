/* AWS notices (the EC2 user guide, "Use IMDSv2"): IMDSv2 polled every poll interval for the
 * spot interruption notice (spot/instance-action: action and time), the rebalance
 * recommendation and scheduled maintenance, as AWS's node termination handler does. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "aws_notices.h"
#include "rr/clock.h"
#include "rr/cloud.h"
#include "rr/error.h"
#include "rr/imds.h"
#include "rr/json.h"
#include "rr/quote.h"
#include "rr/timefmt.h"

#define S_DEFAULT_POLL_MS 2000
#define S_REQUEST_TIMEOUT_MS 2000
#define S_SEEN_MAX 32

struct s_aws {
	struct rr_cloud_opts o;
	struct rr_imds *imds;
	int64_t next_poll_mono;
	char action_seen[RR_AWS_SPOT_KEY_MAX]; /* "action@time" of the spot notice reported */
	int rebalance_standing;   /* the recommendation reported is still there */
	char maint_seen[S_SEEN_MAX][96]; /* a ring of the EventIds reported */
	unsigned nmaint, maint_next;
};

static int s_create(const struct rr_cloud_opts *o, void **state)
{
	struct s_aws *a = calloc(1, sizeof(*a));
	int rc;

	if (!a)
		return RR_ENOMEM;
	a->o = *o;
	rc = rr_imds_new(o->http, o->endpoint, &a->imds);
	if (rc) {
		free(a);
		return rc;
	}
	if (a->o.poll_interval_ms <= 0)
		a->o.poll_interval_ms = S_DEFAULT_POLL_MS;
	*state = a;
	return 0;
}

static void s_destroy(void *state)
{
	struct s_aws *a = state;

	if (!a)
		return;
	rr_imds_destroy(a->imds);
	free(a);
}

/* GET meta-data/<path> into out (reset first). 0, RR_ENOENT (404) or an error with why. */
static int s_get(struct s_aws *a, const char *path, struct rr_buf *out, char *why,
		 size_t why_len)
{
	char full[160];

	rr_buf_reset(out);
	snprintf(full, sizeof(full), "meta-data/%s", path);
	return rr_imds_get(a->imds, full, out, S_REQUEST_TIMEOUT_MS, NULL, why, why_len);
}

static void s_copy_text(char *dst, size_t cap, const struct rr_buf *b)
{
	size_t n = b->len < cap - 1 ? b->len : cap - 1;

	memcpy(dst, b->data ? (const char *)b->data : "", n);
	dst[n] = '\0';
	while (n > 0 && (dst[n - 1] == '\n' || dst[n - 1] == '\r' || dst[n - 1] == ' '))
		dst[--n] = '\0';
}

static int s_identity(void *state, struct rr_cloud_identity *id, char *why, size_t why_len)
{
	static const struct { const char *path; size_t off, size; } fields[] = {
		{ "instance-id", offsetof(struct rr_cloud_identity, instance_id),
		  sizeof(((struct rr_cloud_identity *)0)->instance_id) },
		{ "instance-type", offsetof(struct rr_cloud_identity, instance_type),
		  sizeof(((struct rr_cloud_identity *)0)->instance_type) },
		{ "placement/availability-zone", offsetof(struct rr_cloud_identity, zone),
		  sizeof(((struct rr_cloud_identity *)0)->zone) },
		{ "instance-life-cycle", offsetof(struct rr_cloud_identity, lifecycle),
		  sizeof(((struct rr_cloud_identity *)0)->lifecycle) },
	};
	struct s_aws *a = state;
	struct rr_buf b;
	char w[512];
	int rc = 0;

	memset(id, 0, sizeof(*id));
	snprintf(id->cloud, sizeof(id->cloud), "aws");
	if (why && why_len)
		why[0] = '\0';
	rr_buf_init(&b, 4096);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		/* Each GET clears its why: keep the one of the error returned. */
		int r = s_get(a, fields[i].path, &b, w, sizeof(w));
		if (r == 0) {
			s_copy_text((char *)id + fields[i].off, fields[i].size, &b);
		} else if (r != RR_ENOENT && !rc) {
			rc = r;
			if (why && why_len)
				snprintf(why, why_len, "%s", w);
		}
	}
	rr_buf_free(&b);
	return rc;
}

/* "21 Jan 2019 09:00:43 GMT" (scheduled events) → unix seconds. */
static int s_parse_event_date(const char *s, int64_t *out)
{
	static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	char mon[4], iso[40];
	int d, y, h, mi, se, used = 0;

	if (sscanf(s, "%2d %3s %4d %2d:%2d:%2d GMT%n", &d, mon, &y, &h, &mi, &se, &used) != 6 ||
	    s[used] != '\0')
		return RR_EINVAL;
	for (int m = 0; m < 12; m++) {
		if (strcmp(mon, months[m]) == 0) {
			int64_t ms;
			snprintf(iso, sizeof(iso), "%04d-%02d-%02dT%02d:%02d:%02dZ", y, m + 1, d, h,
				 mi, se);
			/* Before 1970 is no deadline (a negative one would read as long past). */
			if (rr_iso8601_to_unix_ms(iso, &ms) || ms < 0)
				return RR_EINVAL;
			*out = ms / 1000;
			return 0;
		}
	}
	return RR_EINVAL;
}

/* ---- the answers ---- */

#define S_SPOT_SHAPE "IMDS spot/instance-action is not {\"action\", \"time\"} JSON"

/* An answer that is one object with the string members names[0..n), read into values
 * (they point into *j, which the caller deletes). A refusal's why is "<shape> (<reason>)". */
static int s_read_strings(const char *text, size_t len, const char *shape,
			  const char *const *names, size_t n, const char **values, cJSON **j,
			  char *why, size_t why_len)
{
	struct rr_json_obj o;
	char w[256];
	int rc = rr_json_parse_object("it", text, len, j, w, sizeof(w));

	if (!rc)
		rc = rr_json_open(&o, *j, "", names, n, 0, w, sizeof(w));
	for (size_t i = 0; !rc && i < n; i++)
		rc = rr_json_get_string(&o, names[i], 0, &values[i]);
	if (rc && rc != RR_ENOMEM)
		rr_why(why, why_len, "%s (%s)", shape, w);
	return rc;
}

int rr_aws_parse_spot(const char *text, size_t len, int64_t *deadline_ms,
		      char key[RR_AWS_SPOT_KEY_MAX], char *why, size_t why_len)
{
	static const char *const names[] = { "action", "time" };
	const char *v[2] = { "", "" };
	char q[RR_QUOTE_CAP];
	cJSON *j = NULL;
	int rc = s_read_strings(text, len, S_SPOT_SHAPE, RR_JSON_NAMES(names), v, &j, why,
				why_len);

	if (!rc && rr_iso8601_to_unix_ms(v[1], deadline_ms) != 0)
		rc = rr_fail(why, why_len, RR_ECORRUPT,
			     S_SPOT_SHAPE " (\"time\" %s is not an RFC 3339 time)",
			     rr_quote_str(q, v[1]));
	if (!rc)
		snprintf(key, RR_AWS_SPOT_KEY_MAX, "%.40s@%.100s", v[0], v[1]);
	cJSON_Delete(j);
	return rc;
}

int rr_aws_parse_rebalance(const char *text, size_t len, char *why, size_t why_len)
{
	static const char *const names[] = { "noticeTime" };
	const char *v[1];
	cJSON *j = NULL;
	int rc = s_read_strings(text, len,
				"IMDS rebalance recommendation is not {\"noticeTime\"} JSON",
				RR_JSON_NAMES(names), v, &j, why, why_len);

	cJSON_Delete(j);
	return rc;
}

/* One element of the maintenance array: its members read, *event_id NULL when it has none
 * or when it is canceled or completed (nothing to checkpoint for). */
static int s_read_event(const cJSON *e, size_t i, const char **event_id, int64_t *not_before,
			char *why, size_t why_len)
{
	static const char *const names[] = { "EventId", "State", "NotBefore" };
	const char *state = "", *nb = NULL;
	struct rr_json_obj o;
	char where[64];
	int rc;

	snprintf(where, sizeof(where), "IMDS scheduled maintenance [%zu]: ", i);
	*event_id = NULL;
	*not_before = 0;
	rc = rr_json_open(&o, e, where, RR_JSON_NAMES(names), 0, why, why_len);
	if (!rc)
		rc = rr_json_get_string(&o, "EventId", RR_JSON_OPTIONAL, event_id);
	if (!rc)
		rc = rr_json_get_string(&o, "State", RR_JSON_OPTIONAL, &state);
	if (!rc)
		rc = rr_json_get_string(&o, "NotBefore", RR_JSON_OPTIONAL, &nb);
	if (rc)
		return rc;
	if (strcmp(state, "canceled") == 0 || strcmp(state, "completed") == 0)
		*event_id = NULL;
	if (nb)
		s_parse_event_date(nb, not_before);
	return 0;
}

int rr_aws_parse_maintenance(const char *text, size_t len, rr_aws_event_cb cb, void *ud,
			     char *why, size_t why_len)
{
	const cJSON *e;
	const char *id;
	int64_t not_before;
	cJSON *j = NULL;
	size_t i = 0;
	int rc;

	rc = rr_json_parse_array("IMDS scheduled maintenance", text, len, &j, why, why_len);
	/* Everything is checked before anything is reported. */
	for (e = j ? j->child : NULL; !rc && e; e = e->next)
		rc = s_read_event(e, i++, &id, &not_before, why, why_len);
	for (e = j ? j->child : NULL, i = 0; !rc && e; e = e->next) {
		s_read_event(e, i++, &id, &not_before, why, why_len);
		if (id && cb)
			rc = cb(ud, id, not_before);
	}
	cJSON_Delete(j);
	return rc;
}

/* ---- the provider ---- */

/* spot/instance-action: a preemption notice, once per action and time. */
static int s_check_spot(struct s_aws *a, struct rr_buf *b, struct rr_notice *n, char *why,
			size_t why_len)
{
	char key[RR_AWS_SPOT_KEY_MAX];
	int64_t ms;
	int rc = s_get(a, "spot/instance-action", b, why, why_len);

	if (rc)
		return rc == RR_ENOENT ? 0 : rc;
	rc = rr_aws_parse_spot((const char *)b->data, b->len, &ms, key, why, why_len);
	if (rc)
		return rc;
	if (strcmp(key, a->action_seen) == 0)
		return 0;
	snprintf(a->action_seen, sizeof(a->action_seen), "%s", key);
	n->kind = RR_NOTICE_PREEMPT;
	n->deadline_unix = ms / 1000;
	return 1;
}

/* events/recommendations/rebalance: {"noticeTime": ...}: checkpoint now, keep training. One
 * recommendation is one notice for as long as the item stands, whatever its noticeTime says:
 * AWS's metadata mock (amazon-ec2-metadata-mock) writes the time of each request there, and
 * taking every new time for a new recommendation asked for a checkpoint on every poll. Once
 * the item is gone (404), the next one is new. */
static int s_check_rebalance(struct s_aws *a, struct rr_buf *b, struct rr_notice *n, char *why,
			     size_t why_len)
{
	int rc = s_get(a, "events/recommendations/rebalance", b, why, why_len);

	if (rc == RR_ENOENT)
		a->rebalance_standing = 0;
	if (rc)
		return rc == RR_ENOENT ? 0 : rc;
	rc = rr_aws_parse_rebalance((const char *)b->data, b->len, why, why_len);
	if (rc)
		return rc;
	if (a->rebalance_standing)
		return 0;
	a->rebalance_standing = 1;
	n->kind = RR_NOTICE_REBALANCE;
	n->deadline_unix = 0;
	return 1;
}

static int s_maint_seen(struct s_aws *a, const char *id)
{
	for (unsigned i = 0; i < a->nmaint; i++)
		if (strcmp(a->maint_seen[i], id) == 0)
			return 1;
	return 0;
}

struct s_maint {
	struct s_aws *a;
	struct rr_notice *n;
};

/* The first event not seen before is the notice; 1 stops the parse there. */
static int s_on_maint(void *ud, const char *id, int64_t not_before_unix)
{
	struct s_maint *m = ud;
	struct s_aws *a = m->a;

	if (s_maint_seen(a, id))
		return 0;
	/* A ring, as azure.c's: the oldest is forgotten. Once full, a new event used to go
	 * unremembered, and was reported again at every poll while it stood. */
	snprintf(a->maint_seen[a->maint_next], sizeof(a->maint_seen[0]), "%s", id);
	a->maint_next = (a->maint_next + 1) % S_SEEN_MAX;
	if (a->nmaint < S_SEEN_MAX)
		a->nmaint++;
	m->n->kind = RR_NOTICE_MAINTENANCE;
	m->n->deadline_unix = not_before_unix;
	return 1;
}

/* events/maintenance/scheduled: the first new event that still stands. */
static int s_check_maintenance(struct s_aws *a, struct rr_buf *b, struct rr_notice *n,
			       char *why, size_t why_len)
{
	struct s_maint m = { a, n };
	int rc = s_get(a, "events/maintenance/scheduled", b, why, why_len);

	if (rc)
		return rc == RR_ENOENT ? 0 : rc;
	return rr_aws_parse_maintenance((const char *)b->data, b->len, s_on_maint, &m, why,
					why_len);
}

static int s_wait(void *state, struct rr_notice *n, char *why, size_t why_len)
{
	struct s_aws *a = state;
	struct rr_buf b;
	int rc;

	/* Sleep until the next poll, in short steps so a stop is seen at once. */
	while (!(a->o.stop && *a->o.stop)) {
		int64_t left = a->next_poll_mono - rr_mono_ms();
		struct timespec ts;
		if (left <= 0)
			break;
		if (left > 100)
			left = 100;
		ts = (struct timespec){ 0, (long)left * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (a->o.stop && *a->o.stop)
		return 0;
	a->next_poll_mono = rr_mono_ms() + a->o.poll_interval_ms;
	memset(n, 0, sizeof(*n));
	n->source = RR_SOURCE_AWS;
	n->received_unix = rr_wall_ms() / 1000;
	rr_buf_init(&b, RR_AWS_ANSWER_MAX);
	rc = s_check_spot(a, &b, n, why, why_len);
	if (rc == 0)
		rc = s_check_rebalance(a, &b, n, why, why_len);
	if (rc == 0)
		rc = s_check_maintenance(a, &b, n, why, why_len);
	rr_buf_free(&b);
	if (rc == 1)
		a->next_poll_mono = 0; /* look again at once: more may be pending */
	return rc;
}

const struct rr_cloud_provider rr_cloud_aws = {
	.name = "aws",
	.source = RR_SOURCE_AWS,
	.create = s_create,
	.identity = s_identity,
	.wait = s_wait,
	.durable = NULL,
	.destroy = s_destroy,
};
