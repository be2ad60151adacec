/* GCP notices (Google's "About VM metadata" and "Preemptible VM instances" pages): hanging
 * GETs on instance/preempted and instance/maintenance-event, both in flight at once on one
 * curl multi, as Google's k8s-node-termination-handler subscribes to the two. Every request
 * carries Metadata-Flavor: Google, and an answer without it did not come from the metadata
 * server (a captive portal, a proxy, another cloud's service at the same address).
 *
 * The first GET of each value is a plain one, for its ETag; a value that already asks for a
 * checkpoint then (a preemption or a maintenance event under way when the agent starts) is
 * reported like a change. After that, each change is reported once: TRUE staying TRUE is
 * nothing new, and NONE in between makes the next maintenance event new again. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "rr/clock.h"
#include "rr/cloud.h"
#include "rr/error.h"
#include "rr/gce_metadata.h"
#include "rr/http.h"
#include "rr/log.h"

#define S_ROOT "/computeMetadata/v1/"
#define S_BASE_MAX 512
#define S_URL_MAX 1024
#define S_ETAG_MAX 128          /* real ETags are 16 hex digits */
#define S_VALUE_MAX 64          /* "TRUE", "TERMINATE_ON_HOST_MAINTENANCE" */
#define S_BODY_MAX 4096
#define S_HANG_S 55             /* timeout_sec of a hanging GET: the server answers by then */
#define S_HANG_TIMEOUT_MS 65000 /* ... and the client gives up 10 s after that */
#define S_PLAIN_TIMEOUT_MS 5000
#define S_WAIT_MAX_MS 60000     /* one wait() call, as cloud.h promises */
#define S_TICK_MS 100           /* how often wait() looks at the stop flag */
#define S_MIN_HANG_MS 1000      /* at most one hanging GET per second and path */
#define S_503_TRIES 4           /* a maintenance 503 lasts under a second */
#define S_503_PAUSE_MS 250
#define S_NOTICE_S 30           /* Spot VMs get 30 s between the notice and power off */


enum s_which { S_PREEMPTED, S_MAINTENANCE, S_NSLOTS };

/* One watched value and the transfer that watches it. */
struct s_slot {
	const char *path;       /* under /computeMetadata/v1/ */
	int known;              /* value and etag hold an answer of the server */
	char value[S_VALUE_MAX];
	char etag[S_ETAG_MAX];
	int in_flight;          /* req/resp belong to the batch until it reports them */
	int64_t sent_mono;
	int64_t start_mono;     /* not sent again before this */
	unsigned unavailable;   /* 503 answers in a row */
	char url[S_URL_MAX];
	struct rr_http_request req;
	struct rr_http_response resp;
};

struct s_gcp {
	struct rr_http *http;
	const atomic_int *stop;
	char base[S_BASE_MAX];  /* "http://host" + S_ROOT */
	struct rr_http_batch *batch; /* NULL while nothing is in flight */
	struct s_slot slot[S_NSLOTS];
};

static int s_stopped(const struct s_gcp *g)
{
	return g->stop && *g->stop;
}

static void s_nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Sleeps ms in ticks; returns nonzero when the stop flag cut it short. */
static int s_pause(const struct s_gcp *g, long ms)
{
	while (ms > 0 && !s_stopped(g)) {
		long t = ms < S_TICK_MS ? ms : S_TICK_MS;
		s_nap(t);
		ms -= t;
	}
	return s_stopped(g);
}

static int s_create(const struct rr_cloud_opts *o, void **state)
{
	struct s_gcp *g;
	char base[S_BASE_MAX];

	if (!o || !o->http || !state)
		return RR_EINVAL;
	/* with room for S_ROOT after it */
	if (rr_gce_metadata_base(o->endpoint, base, sizeof(base) - sizeof(S_ROOT) + 1))
		return RR_EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return RR_ENOMEM;
	g->http = o->http;
	g->stop = o->stop;
	snprintf(g->base, sizeof(g->base), "%s%s", base, S_ROOT);
	g->slot[S_PREEMPTED].path = "instance/preempted";
	g->slot[S_MAINTENANCE].path = "instance/maintenance-event";
	for (int i = 0; i < S_NSLOTS; i++)
		rr_http_response_init(&g->slot[i].resp);
	*state = g;
	return 0;
}

/* Drops the transfers in flight. The slots keep their last value and ETag, so the next
 * hanging GET asks about exactly what is not known yet. */
static void s_abandon(struct s_gcp *g)
{
	rr_http_batch_destroy(g->batch);
	g->batch = NULL;
	for (int i = 0; i < S_NSLOTS; i++)
		g->slot[i].in_flight = 0;
}

static void s_destroy(void *state)
{
	struct s_gcp *g = state;

	if (!g)
		return;
	s_abandon(g);
	for (int i = 0; i < S_NSLOTS; i++)
		rr_http_response_free(&g->slot[i].resp);
	free(g);
}

/* Copies the body into out without surrounding white space. Returns 0, or RR_ECORRUPT
 * when it does not fit or holds anything but printable ASCII. */
static int s_body_value(const struct rr_http_response *resp, char *out, size_t cap)
{
	const char *p = resp->body.data ? (const char *)resp->body.data : "";
	size_t n = resp->body.len;

	while (n > 0 && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) {
		p++;
		n--;
	}
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r' ||
			 p[n - 1] == '\n'))
		n--;
	if (n >= cap)
		return RR_ECORRUPT;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] >= 0x7f)
			return RR_ECORRUPT;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

/* The checks every answer passes: a response came, from the metadata server, with 200.
 * Returns 0; 1 for 503 (maintenance: the caller pauses and asks again); RR_ECANCELED when
 * the stop flag cut the transfer short; RR_ENOENT for 404; else RR_EIO with why. */
static int s_check_answer(const struct s_gcp *g, const char *path,
			  const struct rr_http_response *resp, char *why, size_t why_len)
{

	if (resp->error == RR_ECANCELED)
		return RR_ECANCELED;
	if (resp->error) {
		rr_why(why, why_len, "GCP metadata GET %s%s failed: %s", g->base, path,
		      resp->message[0] ? resp->message : rr_strerror(resp->error));
		return resp->error == RR_ENOMEM ? RR_ENOMEM : RR_EIO;
	}
	/* Before the flavor check: a 503 during maintenance may come from a front end. */
	if (resp->status == 503)
		return 1;
	if (!rr_gce_metadata_answered(resp)) {
		return rr_fail(why, why_len, RR_EIO,
			       "GCP metadata GET %s%s: the answer (%ld) has no Metadata-Flavor: "
			       "Google, so it is not from the metadata server", g->base, path, resp->status);
	}
	if (resp->status == 404) {
		return rr_fail(why, why_len, RR_ENOENT,
			       "GCP metadata GET %s%s: not found (404)", g->base, path);
	}
	if (resp->status != 200) {
		return rr_fail(why, why_len, RR_EIO,
			       "GCP metadata GET %s%s answered %ld", g->base, path, resp->status);
	}
	return 0;
}

/* ---- identity: plain GETs, one at a time ---- */

/* GET <base><path> into out (cap bytes). Retries a 503 a few times. Returns 0, RR_ENOENT
 * (404), RR_ECANCELED, RR_ECORRUPT (an answer that is not a short value) or RR_EIO. */
static int s_get(struct s_gcp *g, const char *path, char *out, size_t cap, char *why,
		 size_t why_cap)
{
	struct rr_http_request req;
	struct rr_http_response resp;
	char url[S_URL_MAX];
	int rc = RR_EIO;

	out[0] = '\0';
	snprintf(url, sizeof(url), "%s%s", g->base, path);
	memset(&req, 0, sizeof(req));
	req.method = "GET";
	req.url = url;
	req.headers = &rr_gce_metadata_flavor;
	req.nheaders = 1;
	req.response_max = S_BODY_MAX;
	req.timeout_ms = S_PLAIN_TIMEOUT_MS;
	req.cancel = g->stop;
	rr_http_response_init(&resp);
	for (int attempt = 0; attempt < S_503_TRIES; attempt++) {
		if (attempt && s_pause(g, S_503_PAUSE_MS)) {
			rc = RR_ECANCELED;
			break;
		}
		rr_http_perform(g->http, &req, &resp);
		rc = s_check_answer(g, path, &resp, why, why_cap);
		if (rc != 1)
			break;
		rr_why(why, why_cap, "GCP metadata GET %s%s answered 503 %d times", g->base, path,
		      attempt + 1);
		rc = RR_EIO;
	}
	if (rc == 0 && s_body_value(&resp, out, cap) != 0) {
		rr_why(why, why_cap, "GCP metadata GET %s%s: the answer is not a short text value "
				   "(%zu bytes)", g->base, path, resp.body.len);
		rc = RR_ECORRUPT;
	}
	if (rc == RR_ECANCELED)
		rr_why(why, why_cap, "GCP metadata GET %s%s: stopped", g->base, path);
	rr_http_response_free(&resp);
	return rc;
}

/* "projects/123/zones/us-central1-a" -> "us-central1-a" */
static void s_last_component(char *dst, size_t cap, const char *src)
{
	const char *slash = strrchr(src, '/');

	snprintf(dst, cap, "%s", slash ? slash + 1 : src);
}

static int s_identity(void *state, struct rr_cloud_identity *id, char *why, size_t why_len)
{
	static const char *const paths[] = { "instance/id", "instance/machine-type",
					     "instance/zone" };
	char *const dst[] = { id->instance_id, id->instance_type, id->zone };
	const size_t dst_cap[] = { sizeof(id->instance_id), sizeof(id->instance_type),
				   sizeof(id->zone) };
	struct s_gcp *g = state;
	char value[S_VALUE_MAX * 4], w[256];
	int rc = 0, r;

	memset(id, 0, sizeof(*id));
	snprintf(id->cloud, sizeof(id->cloud), "gcp");
	if (why && why_len)
		why[0] = '\0';
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		r = s_get(g, paths[i], value, sizeof(value), w, sizeof(w));
		if (r == 0)
			s_last_component(dst[i], dst_cap[i], value);
		else if (!rc) {
			rc = r;
			rr_why(why, why_len, "%s", w);
		}
		if (r == RR_ECANCELED)
			return rc;
	}
	/* provisioning-model is newer than preemptible; older VMs answer 404. */
	r = s_get(g, "instance/scheduling/provisioning-model", value, sizeof(value), w,
		  sizeof(w));
	if (r == 0 && strcmp(value, "SPOT") == 0)
		snprintf(id->lifecycle, sizeof(id->lifecycle), "spot");
	else if (r == 0 && strcmp(value, "STANDARD") == 0)
		snprintf(id->lifecycle, sizeof(id->lifecycle), "on-demand");
	else if (r != RR_ECANCELED &&
		 s_get(g, "instance/scheduling/preemptible", value, sizeof(value), w,
		       sizeof(w)) == 0)
		snprintf(id->lifecycle, sizeof(id->lifecycle), "%s",
			 strcasecmp(value, "TRUE") == 0 ? "spot" : "on-demand");
	return rc;
}

/* ---- wait: the two hanging GETs ---- */

/* The ETag as a query value: unreserved characters as they are, the rest %XX. */
static int s_append_escaped(char *dst, size_t cap, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(dst);

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
			    c == '~';
		if (n + (plain ? 1 : 3) >= cap)
			return RR_EINVAL;
		if (plain) {
			dst[n++] = (char)c;
		} else {
			dst[n++] = '%';
			dst[n++] = hex[c >> 4];
			dst[n++] = hex[c & 15];
		}
	}
	dst[n] = '\0';
	return 0;
}

/* Queues the slot's next GET: a plain one while its value is unknown, else a hanging one
 * that the server answers when the value's ETag moves on from the one we hold. */
static int s_start(struct s_gcp *g, struct s_slot *s)
{
	int rc;

	snprintf(s->url, sizeof(s->url), "%s%s", g->base, s->path);
	if (s->known) {
		size_t n = strlen(s->url);
		snprintf(s->url + n, sizeof(s->url) - n, "?wait_for_change=true&last_etag=");
		rc = s_append_escaped(s->url, sizeof(s->url), s->etag);
		n = strlen(s->url);
		if (rc || snprintf(s->url + n, sizeof(s->url) - n, "&timeout_sec=%d", S_HANG_S) >=
				  (int)(sizeof(s->url) - n))
			return RR_EINVAL;
	}
	memset(&s->req, 0, sizeof(s->req));
	s->req.method = "GET";
	s->req.url = s->url;
	s->req.headers = &rr_gce_metadata_flavor;
	s->req.nheaders = 1;
	s->req.response_max = S_BODY_MAX;
	s->req.timeout_ms = s->known ? S_HANG_TIMEOUT_MS : S_PLAIN_TIMEOUT_MS;
	s->req.may_idle = s->known;
	s->req.cancel = g->stop;
	if (!g->batch) {
		rc = rr_http_batch_new(g->http, S_NSLOTS, &g->batch);
		if (rc)
			return rc;
	}
	rc = rr_http_batch_add(g->batch, &s->req, &s->resp, s);
	if (rc)
		return rc;
	s->in_flight = 1;
	s->sent_mono = rr_mono_ms();
	return 0;
}

/* Whether a value asks for a checkpoint, and with which kind and notice. */
static int s_is_event(enum s_which which, const char *value, enum rr_notice_kind *kind,
		      int64_t *notice_s)
{
	if (which == S_PREEMPTED) {
		*kind = RR_NOTICE_PREEMPT;
		*notice_s = S_NOTICE_S;
		return strcasecmp(value, "TRUE") == 0;
	}
	/* NONE, MIGRATE_ON_HOST_MAINTENANCE (live migration: the VM stays, no deadline),
	 * TERMINATE_ON_HOST_MAINTENANCE, and the SHUTDOWN_ON_HOST_MAINTENANCE of Google's
	 * older sample. Anything but NONE is an event (Google's "About VM metadata" and
	 * "Preemptible VM instances" pages). */
	*kind = RR_NOTICE_MAINTENANCE;
	*notice_s = strstr(value, "TERMINATE") || strstr(value, "SHUTDOWN") ? S_NOTICE_S : 0;
	return value[0] && strcmp(value, "NONE") != 0;
}

/* Takes in a finished transfer. Returns 1 with *n for a new event, 0 to go on waiting
 * (no change, a timeout answer, a 503 to ask again), or a negative error with why. */
static int s_finish(struct s_gcp *g, struct s_slot *s, struct rr_notice *n, char *why,
		    size_t why_len)
{
	enum s_which which = (enum s_which)(s - g->slot);
	const char *etag;
	char value[S_VALUE_MAX];
	int64_t now = rr_mono_ms(), notice_s;
	enum rr_notice_kind kind;
	int rc, changed, hanging = s->known;

	rc = s_check_answer(g, s->path, &s->resp, why, why_len);
	if (rc == 1) {
		if (++s->unavailable < S_503_TRIES) {
			s->start_mono = now + S_503_PAUSE_MS;
			return 0;
		}
		s->unavailable = 0;
		return rr_fail(why, why_len, RR_EIO,
			       "GCP metadata GET %s%s answered 503 %d times", g->base, s->path, S_503_TRIES);
	}
	if (rc == RR_ENOENT)
		rc = RR_EIO; /* both paths exist on every GCE VM */
	if (rc)
		return rc;
	s->unavailable = 0;
	etag = rr_http_response_header(&s->resp, "ETag");
	if (!etag || !etag[0] || strlen(etag) >= sizeof(s->etag)) {
		return rr_fail(why, why_len, RR_EIO,
			       "GCP metadata GET %s%s: the answer has no usable ETag", g->base, s->path);
	}
	if (s_body_value(&s->resp, value, sizeof(value)) != 0) {
		return rr_fail(why, why_len, RR_ECORRUPT,
			       "GCP metadata GET %s%s: the answer is not a short text value (%zu "
			       "bytes)", g->base, s->path, s->resp.body.len);
	}
	changed = !s->known || strcmp(value, s->value) != 0;
	/* A server that answers a hanging GET at once with nothing new (a proxy that drops
	 * the query, a stand-in that ignores it) would otherwise be asked again and again. */
	if (hanging && !changed && now - s->sent_mono < S_MIN_HANG_MS)
		s->start_mono = s->sent_mono + S_MIN_HANG_MS;
	s->known = 1;
	snprintf(s->value, sizeof(s->value), "%s", value);
	snprintf(s->etag, sizeof(s->etag), "%s", etag);
	if (!changed || !s_is_event(which, value, &kind, &notice_s))
		return 0;
	rr_debug("GCP metadata: %s is %s", s->path, value);
	memset(n, 0, sizeof(*n));
	n->kind = kind;
	n->source = RR_SOURCE_GCP;
	n->received_unix = rr_wall_ms() / 1000;
	n->deadline_unix = notice_s ? n->received_unix + notice_s : 0;
	return 1;
}

static int s_wait(void *state, struct rr_notice *n, char *why, size_t why_len)
{
	struct s_gcp *g = state;
	int64_t end = rr_mono_ms() + S_WAIT_MAX_MS;
	int rc = 0;

	if (why && why_len)
		why[0] = '\0';
	for (;;) {
		int64_t now = rr_mono_ms(), next = now + S_TICK_MS;
		void *tag = NULL;

		if (s_stopped(g) || now >= end) {
			/* At shutdown nothing is kept; at the end of an ordinary call the
			 * hanging GETs stay in flight for the next one. */
			if (s_stopped(g))
				s_abandon(g);
			return 0;
		}
		for (int i = 0; i < S_NSLOTS; i++) {
			struct s_slot *s = &g->slot[i];
			if (s->in_flight)
				continue;
			if (s->start_mono > now) {
				if (s->start_mono < next)
					next = s->start_mono;
				continue;
			}
			rc = s_start(g, s);
			if (rc) {
				rr_why(why, why_len,
				       "GCP metadata: cannot start a GET of %s: %s",
				      s->path, rr_strerror(rc));
				goto fail;
			}
		}
		if (!g->batch || rr_http_batch_pending(g->batch) == 0) {
			s_nap((long)(next - now)); /* both slots pause after a 503 */
			continue;
		}
		rc = rr_http_batch_wait(g->batch, (long)(next - now), &tag);
		if (rc < 0) {
			rr_why(why, why_len,
			       "GCP metadata: waiting for the hanging GETs failed: %s",
			      rr_strerror(rc));
			goto fail;
		}
		if (rc == 0)
			continue;
		((struct s_slot *)tag)->in_flight = 0;
		rc = s_finish(g, tag, n, why, why_len);
		if (rc == RR_ECANCELED) {
			s_abandon(g);
			return 0;
		}
		if (rc < 0)
			goto fail;
		if (rc == 1)
			return 1; /* the other GET stays in flight for the next call */
	}
fail:
	/* A fresh start next time: the slots keep what the server last said. */
	s_abandon(g);
	return rc;
}

const struct rr_cloud_provider rr_cloud_gcp = {
	.name = "gcp",
	.source = RR_SOURCE_GCP,
	.create = s_create,
	.identity = s_identity,
	.wait = s_wait,
	.durable = NULL,
	.destroy = s_destroy,
};
