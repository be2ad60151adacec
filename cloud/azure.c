/* Azure notices (Microsoft's "Azure Metadata Service: Scheduled Events" page): Scheduled
 * Events polled once a poll interval (Microsoft recommends once a second), filtered to this
 * VM by name (events for an availability set reach every VM in it), each EventId reported
 * once. With --azure-ack the Preempt or Terminate event is approved once the checkpoint it
 * asked for is durable, so the eviction goes ahead without waiting out the rest of its
 * notice. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "azure_events.h"
#include "rr/clock.h"
#include "rr/cloud.h"
#include "rr/error.h"
#include "rr/json.h"
#include "rr/http.h"
#include "rr/log.h"
#include "rr/quote.h"
#include "rr/timefmt.h"

#define S_DEFAULT_ENDPOINT "http://169.254.169.254"
#define S_EVENTS_PATH "/metadata/scheduledevents?api-version=2020-07-01"
#define S_INSTANCE_PATH "/metadata/instance?api-version=2021-02-01"
#define S_ENDPOINT_MAX 512
#define S_URL_MAX (S_ENDPOINT_MAX + 128)
#define S_DEFAULT_POLL_MS 1000
#define S_TIMEOUT_MS 5000
#define S_TICK_MS 50            /* how often the pause between polls looks at the stop flag */
#define S_NAME_MAX 256          /* compute.name: Azure allows 64 (Linux) or 15 (Windows) */
#define S_TYPE_MAX 64           /* EventType */
#define S_SEEN_MAX 64           /* EventIds remembered (events vanish once finished) */
#define S_QUEUE_MAX 32          /* notices found and not yet returned */
#define S_INT_MAX ((int64_t)1 << 53) /* largest integer a double holds exactly */

static const struct rr_http_header s_metadata = { "Metadata", "true" };

/* ---- the Scheduled Events document ---- */

/* Members not named below are ignored, in the events and in the instance document: Microsoft
 * adds members to both with new api-versions, and what we do not read cannot mislead us. */

/* Reads (and checks) one element of "Events". */
static int s_read_event(const cJSON *e, size_t i, struct rr_azure_event *ev,
			const cJSON **resources, char *why, size_t why_len)
{
	static const char *const keys[] = { "EventId",	   "EventType",	  "Resources",
					    "EventStatus", "NotBefore",	  "ResourceType",
					    "Description", "EventSource", "DurationInSeconds" };
	static const char *const optional[] = { "ResourceType", "Description", "EventSource" };
	char where[48];
	struct rr_json_obj o;
	const cJSON *it;
	const char *s, *nb;
	size_t n;
	int rc;

	snprintf(where, sizeof(where), "Scheduled Events: \"Events\"[%zu]: ", i);
	*ev = (struct rr_azure_event){ .event_status = "", .not_before = "", .duration_s = -1 };
	rc = rr_json_open(&o, e, where, RR_JSON_NAMES(keys), 0, why, why_len);
	if (!rc)
		rc = rr_json_get_label(&o, "EventId", 0, RR_AZURE_EVENT_ID_MAX - 1, &ev->event_id);
	if (!rc)
		rc = rr_json_get_label(&o, "EventType", 0, S_TYPE_MAX - 1, &ev->event_type);
	if (!rc)
		rc = rr_json_get_string(&o, "EventStatus", RR_JSON_OPTIONAL, &ev->event_status);
	if (!rc)
		rc = rr_json_get_string(&o, "NotBefore", RR_JSON_OPTIONAL, &ev->not_before);
	for (size_t k = 0; !rc && k < sizeof(optional) / sizeof(optional[0]); k++)
		rc = rr_json_get_string(&o, optional[k], RR_JSON_OPTIONAL, &s);
	if (!rc)
		rc = rr_json_get_int(&o, "DurationInSeconds", RR_JSON_OPTIONAL, -1, S_INT_MAX,
				     &ev->duration_s);
	if (!rc)
		rc = rr_json_get_array(&o, "Resources", 0, resources, &n);
	if (rc)
		return rc;
	cJSON_ArrayForEach(it, *resources)
	{
		if (!cJSON_IsString(it) || !it->valuestring)
			return rr_fail(why, why_len, RR_ECORRUPT,
				       "%s\"Resources\" holds a non-string", where);
	}
	/* Blank once the event has started: it is happening now. */
	nb = ev->not_before;
	while (*nb == ' ' || *nb == '\t')
		nb++;
	if (!*nb) {
		ev->not_before = "";
		ev->not_before_unix = 0;
	} else if (rr_rfc1123_to_unix(ev->not_before, &ev->not_before_unix) != 0) {
		ev->not_before_unix = -1;
	}
	return 0;
}

static int s_names_vm(const cJSON *resources, const char *vm_name)
{
	const cJSON *it;

	if (!vm_name)
		return 1;
	cJSON_ArrayForEach(it, resources)
	{
		if (strcasecmp(it->valuestring, vm_name) == 0)
			return 1;
	}
	return 0;
}

int rr_azure_parse_events(const char *json, size_t len, const char *vm_name,
			  rr_azure_event_cb cb, void *ud, int64_t *incarnation, char *why,
			  size_t why_len)
{
	static const char *const keys[] = { "DocumentIncarnation", "Events" };
	struct rr_azure_event ev;
	const cJSON *events, *e, *resources;
	struct rr_json_obj o;
	cJSON *root = NULL;
	int64_t inc = 0;
	size_t i, n;
	int rc;

	if (why && why_len)
		why[0] = '\0';
	if (!json && len)
		return RR_EINVAL;
	if (len > RR_AZURE_EVENTS_MAX)
		return rr_fail(why, why_len, RR_ETOOBIG,
			       "Scheduled Events: the document is %zu bytes, over "
			       "the %u limit",
			       len, RR_AZURE_EVENTS_MAX);
	/* No NUL either (rr_json_parse_object): cJSON would cut a resource name there
	 * ("myvm\u0000x" reads as "myvm"), and a name cut short could match this VM. */
	rc = rr_json_parse_object("the Scheduled Events document", json ? json : "", len, &root,
				  why, why_len);
	if (rc)
		return rc;
	rc = rr_json_open(&o, root, "Scheduled Events: ", RR_JSON_NAMES(keys), 0, why, why_len);
	if (!rc)
		rc = rr_json_get_int(&o, "DocumentIncarnation", 0, 0, S_INT_MAX, &inc);
	if (!rc)
		rc = rr_json_get_array(&o, "Events", 0, &events, &n);
	if (rc)
		goto out;
	/* Everything is checked before anything is reported. */
	i = 0;
	cJSON_ArrayForEach(e, events)
	{
		rc = s_read_event(e, i++, &ev, &resources, why, why_len);
		if (rc)
			goto out;
	}
	if (incarnation)
		*incarnation = inc;
	i = 0;
	cJSON_ArrayForEach(e, events)
	{
		s_read_event(e, i++, &ev, &resources, why, why_len);
		if (!cb || !s_names_vm(resources, vm_name))
			continue;
		rc = cb(ud, &ev);
		if (rc)
			goto out;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* ---- the provider ---- */

struct s_pending {
	struct rr_notice n;
	char event_id[RR_AZURE_EVENT_ID_MAX];
};

struct s_azure {
	struct rr_http *http;
	const atomic_int *stop;
	char events_url[S_URL_MAX];
	char instance_url[S_URL_MAX];
	int64_t poll_ms;
	int ack;
	char vm_name[S_NAME_MAX];   /* compute.name; "" until known */
	int have_incarnation;
	int64_t incarnation;
	int64_t next_poll_mono;
	char seen[S_SEEN_MAX][RR_AZURE_EVENT_ID_MAX]; /* a ring of EventIds handled */
	unsigned nseen, seen_next;
	struct s_pending queue[S_QUEUE_MAX];
	unsigned qhead, qlen;
	char ack_id[RR_AZURE_EVENT_ID_MAX]; /* last Preempt/Terminate reported; "" if none */
	int ack_done;
};

static int s_stopped(const struct s_azure *a)
{
	return a->stop && *a->stop;
}

static int s_create(const struct rr_cloud_opts *o, void **state)
{
	const char *ep;
	struct s_azure *a;
	char base[S_ENDPOINT_MAX];

	if (!o || !o->http || !state)
		return RR_EINVAL;
	ep = o->endpoint && *o->endpoint ? o->endpoint : S_DEFAULT_ENDPOINT;
	if (rr_http_base_url(ep, base, sizeof(base)))
		return RR_EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return RR_ENOMEM;
	a->http = o->http;
	a->stop = o->stop;
	a->poll_ms = o->poll_interval_ms > 0 ? o->poll_interval_ms : S_DEFAULT_POLL_MS;
	a->ack = o->azure_ack;
	snprintf(a->events_url, sizeof(a->events_url), "%s%s", base, S_EVENTS_PATH);
	snprintf(a->instance_url, sizeof(a->instance_url), "%s%s", base, S_INSTANCE_PATH);
	*state = a;
	return 0;
}

static void s_destroy(void *state)
{
	free(state);
}

/* One request to the metadata service (Metadata: true). Returns 0 with the answer's body in
 * resp (the caller frees it), RR_ECANCELED on stop, or RR_EIO / RR_ETOOBIG / RR_ENOMEM with
 * why; the status of a refusal is in why. */
static int s_request(struct s_azure *a, const char *method, const char *url, const char *body,
		     struct rr_http_response *resp, char *why, size_t why_len)
{
	struct rr_http_header hdrs[2] = { s_metadata, { "Content-Type", "application/json" } };
	struct rr_http_request req;
	int rc;

	memset(&req, 0, sizeof(req));
	req.method = method;
	req.url = url;
	req.headers = hdrs;
	req.nheaders = body ? 2 : 1;
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	req.response_max = RR_AZURE_EVENTS_MAX;
	req.timeout_ms = S_TIMEOUT_MS;
	req.cancel = a->stop;
	rc = rr_http_perform(a->http, &req, resp);
	if (rc == RR_ECANCELED) {
		return rr_fail(why, why_len, rc, "Azure metadata %s %s: stopped", method, url);
	}
	if (rc) {
		rr_why(why, why_len, "Azure metadata %s %s failed: %s", method, url,
		      rc == RR_ETOOBIG ? "the answer passes its ceiling"
		      : resp->message[0] ? resp->message : rr_strerror(rc));
		return rc == RR_ETOOBIG || rc == RR_ENOMEM ? rc : RR_EIO;
	}
	if (resp->status != 200)
		return rr_fail(why, why_len, RR_EIO, "Azure metadata %s %s answered %ld%s",
			       method, url,
			       resp->status, resp->status == 429 ? " (throttled)" : "");
	return 0;
}

/* The instance document's compute section: fills *id and the VM's name. */
static int s_parse_instance(struct s_azure *a, const char *json, size_t len,
			    struct rr_cloud_identity *id, char *why, size_t why_len)
{
	static const char *const keys[] = { "compute" };
	static const char *const compute_keys[] = { "name",	"vmId", "vmSize",
						    "location", "zone", "priority" };
	const char *name = "", *vm_id = "", *size = "", *location = "", *zone = "",
		   *priority = "";
	struct rr_json_obj o, co;
	const cJSON *compute;
	cJSON *root;
	int rc;

	rc = rr_json_parse_object("the Azure instance metadata", json, len, &root, why, why_len);
	if (rc)
		return rc;
	rc = rr_json_open(&o, root, "Azure instance metadata: ", RR_JSON_NAMES(keys), 0, why,
			  why_len);
	if (!rc)
		rc = rr_json_get_object(&o, "compute", 0, &compute);
	if (!rc)
		rc = rr_json_open(&co, compute, "Azure instance metadata: \"compute\": ",
				  RR_JSON_NAMES(compute_keys), 0, why, why_len);
	if (!rc)
		rc = rr_json_get_label(&co, "name", 0, S_NAME_MAX - 1, &name);
	if (!rc)
		rc = rr_json_get_string(&co, "vmId", RR_JSON_OPTIONAL, &vm_id);
	if (!rc)
		rc = rr_json_get_string(&co, "vmSize", RR_JSON_OPTIONAL, &size);
	if (!rc)
		rc = rr_json_get_string(&co, "location", RR_JSON_OPTIONAL, &location);
	if (!rc)
		rc = rr_json_get_string(&co, "zone", RR_JSON_OPTIONAL, &zone);
	if (!rc)
		rc = rr_json_get_string(&co, "priority", RR_JSON_OPTIONAL, &priority);
	if (rc)
		goto out;
	snprintf(a->vm_name, sizeof(a->vm_name), "%s", name);
	if (id) {
		snprintf(id->instance_id, sizeof(id->instance_id), "%s", vm_id);
		snprintf(id->instance_type, sizeof(id->instance_type), "%s", size);
		if (zone[0])
			snprintf(id->zone, sizeof(id->zone), "%s-%s", location, zone);
		else
			snprintf(id->zone, sizeof(id->zone), "%s", location);
		/* "Low" is what scale sets called Spot before Spot existed. */
		snprintf(id->lifecycle, sizeof(id->lifecycle), "%s",
			 strcmp(priority, "Spot") == 0 || strcmp(priority, "Low") == 0
				 ? "spot"
				 : "on-demand");
	}
out:
	cJSON_Delete(root);
	return rc;
}

/* GET the instance document: the VM's name (and the identity when id is not NULL). */
static int s_fetch_instance(struct s_azure *a, struct rr_cloud_identity *id, char *why,
			    size_t why_len)
{
	struct rr_http_response resp;
	int rc;

	rr_http_response_init(&resp);
	rc = s_request(a, "GET", a->instance_url, NULL, &resp, why, why_len);
	if (!rc)
		rc = s_parse_instance(a, resp.body.data ? (const char *)resp.body.data : "",
				      resp.body.len, id, why, why_len);
	rr_http_response_free(&resp);
	return rc;
}

static int s_identity(void *state, struct rr_cloud_identity *id, char *why, size_t why_len)
{
	struct s_azure *a = state;

	memset(id, 0, sizeof(*id));
	snprintf(id->cloud, sizeof(id->cloud), "azure");
	if (why && why_len)
		why[0] = '\0';
	return s_fetch_instance(a, id, why, why_len);
}

static int s_seen(struct s_azure *a, const char *event_id)
{
	for (unsigned i = 0; i < a->nseen; i++)
		if (strcmp(a->seen[i], event_id) == 0)
			return 1;
	return 0;
}

static void s_remember(struct s_azure *a, const char *event_id)
{
	snprintf(a->seen[a->seen_next], sizeof(a->seen[0]), "%s", event_id);
	a->seen_next = (a->seen_next + 1) % S_SEEN_MAX;
	if (a->nseen < S_SEEN_MAX)
		a->nseen++;
}

struct s_poll {
	struct s_azure *a;
	int64_t incarnation; /* set by the parser before the first event */
	int64_t now_unix;
};

/* An event for this VM: queued as a notice when it is new and asks for a checkpoint. */
static int s_on_event(void *ud, const struct rr_azure_event *ev)
{
	struct s_poll *p = ud;
	struct s_azure *a = p->a;
	struct s_pending *q;
	enum rr_notice_kind kind;
	char qt[RR_QUOTE_CAP];

	if (a->have_incarnation && p->incarnation == a->incarnation)
		return 0; /* the same document as last time */
	if (s_seen(a, ev->event_id))
		return 0;
	s_remember(a, ev->event_id);
	if (strcmp(ev->event_type, "Preempt") == 0) {
		kind = RR_NOTICE_PREEMPT;
	} else if (strcmp(ev->event_type, "Terminate") == 0) {
		kind = RR_NOTICE_TERMINATE;
	} else if (strcmp(ev->event_type, "Reboot") == 0 ||
		   strcmp(ev->event_type, "Redeploy") == 0) {
		kind = RR_NOTICE_MAINTENANCE;
	} else {
		/* Freeze pauses the VM for seconds, memory intact: nothing to save. */
		rr_debug("Azure scheduled event %s (%s) ignored", ev->event_id,
			 rr_quote_str(qt, ev->event_type));
		return 0;
	}
	if (a->qlen == S_QUEUE_MAX) {
		rr_warn("Azure scheduled event %s (%s) dropped: %d notices are waiting already",
			ev->event_id, ev->event_type, S_QUEUE_MAX);
		return 0;
	}
	q = &a->queue[(a->qhead + a->qlen++) % S_QUEUE_MAX];
	memset(q, 0, sizeof(*q));
	q->n.kind = kind;
	q->n.source = RR_SOURCE_AZURE;
	q->n.received_unix = p->now_unix;
	/* Blank: the event has started. Unreadable: treat it as now rather than miss it. */
	q->n.deadline_unix = ev->not_before_unix > 0 ? ev->not_before_unix : p->now_unix;
	if (ev->not_before_unix < 0)
		rr_warn("Azure scheduled event %s: NotBefore %s is not an RFC 1123 date; taken "
			"as now", ev->event_id, rr_quote_str(qt, ev->not_before));
	snprintf(q->event_id, sizeof(q->event_id), "%s", ev->event_id);
	return 0;
}

static int s_pop(struct s_azure *a, struct rr_notice *n)
{
	struct s_pending *q;

	if (!a->qlen)
		return 0;
	q = &a->queue[a->qhead];
	a->qhead = (a->qhead + 1) % S_QUEUE_MAX;
	a->qlen--;
	*n = q->n;
	if (q->n.kind == RR_NOTICE_PREEMPT || q->n.kind == RR_NOTICE_TERMINATE) {
		snprintf(a->ack_id, sizeof(a->ack_id), "%s", q->event_id);
		a->ack_done = 0;
	}
	return 1;
}

static int s_wait(void *state, struct rr_notice *n, char *why, size_t why_len)
{
	struct s_azure *a = state;
	struct rr_http_response resp;
	struct s_poll p;
	int rc;

	if (why && why_len)
		why[0] = '\0';
	if (s_pop(a, n))
		return 1;
	/* Without the name, events for the rest of the availability set would look ours. */
	if (!a->vm_name[0]) {
		rc = s_fetch_instance(a, NULL, why, why_len);
		if (rc)
			return rc == RR_ECANCELED ? 0 : rc;
	}
	while (!s_stopped(a)) {
		int64_t left = a->next_poll_mono - rr_mono_ms();
		struct timespec ts;
		if (left <= 0)
			break;
		if (left > S_TICK_MS)
			left = S_TICK_MS;
		ts = (struct timespec){ 0, (long)left * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (s_stopped(a))
		return 0;
	a->next_poll_mono = rr_mono_ms() + a->poll_ms;

	rr_http_response_init(&resp);
	rc = s_request(a, "GET", a->events_url, NULL, &resp, why, why_len);
	if (rc) {
		rr_http_response_free(&resp);
		return rc == RR_ECANCELED ? 0 : rc;
	}
	p.a = a;
	p.incarnation = -1;
	p.now_unix = rr_wall_ms() / 1000;
	rc = rr_azure_parse_events(resp.body.data ? (const char *)resp.body.data : "",
				   resp.body.len, a->vm_name, s_on_event, &p, &p.incarnation, why,
				   why_len);
	rr_http_response_free(&resp);
	if (rc)
		return rc;
	a->incarnation = p.incarnation;
	a->have_incarnation = 1;
	return s_pop(a, n);
}

/* The body approving one event, exactly {"StartRequests":[{"EventId":"<id>"}]}. */
static char *s_ack_body(const char *event_id)
{
	cJSON *root = cJSON_CreateObject(), *item = cJSON_CreateObject();
	cJSON *list = root ? cJSON_AddArrayToObject(root, "StartRequests") : NULL;
	char *text = NULL;

	if (item && cJSON_AddStringToObject(item, "EventId", event_id) && list &&
	    cJSON_AddItemToArray(list, item)) {
		item = NULL; /* root owns it now */
		text = cJSON_PrintUnformatted(root);
	}
	cJSON_Delete(item);
	cJSON_Delete(root);
	return text;
}

/* POSTs the approval of a->ack_id. Returns 0, or a negative error with why (429, 5xx and
 * timeouts are RR_EIO: worth another try later). */
static int s_ack(struct s_azure *a, char *why, size_t why_len)
{
	struct rr_http_response resp;
	char *body = s_ack_body(a->ack_id);
	int rc;

	if (!body) {
		return rr_fail(why, why_len, RR_ENOMEM, "out of memory");
	}
	rr_http_response_init(&resp);
	rc = s_request(a, "POST", a->events_url, body, &resp, why, why_len);
	rr_http_response_free(&resp);
	cJSON_free(body);
	return rc;
}

static void s_durable(void *state)
{
	struct s_azure *a = state;
	char why[512] = "";
	int rc;

	if (!a->ack || !a->ack_id[0] || a->ack_done)
		return;
	rc = s_ack(a, why, sizeof(why));
	if (rc) {
		/* Not marked done: the next durable checkpoint tries again. */
		rr_warn("Azure scheduled event %s not approved: %s", a->ack_id, why);
		return;
	}
	a->ack_done = 1;
	rr_info("Azure scheduled event %s approved (--azure-ack): the eviction may go ahead "
		"now", a->ack_id);
}

const struct rr_cloud_provider rr_cloud_azure = {
	.name = "azure",
	.source = RR_SOURCE_AZURE,
	.create = s_create,
	.identity = s_identity,
	.wait = s_wait,
	.durable = s_durable,
	.destroy = s_destroy,
};
