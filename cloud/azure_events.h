/* The Azure Scheduled Events document (Microsoft's
 * "Azure Metadata Service: Scheduled Events" page) and its RFC 1123 dates, parsed apart
 * from the HTTP polling in cloud/azure.c so that a fuzz target can reach them
 * (tests/fuzz/fuzz_azure_events.c). */
#ifndef RR_AZURE_EVENTS_H
#define RR_AZURE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#define RR_AZURE_EVENTS_MAX (1u << 20) /* ceiling on the document's bytes */
#define RR_AZURE_EVENT_ID_MAX 128      /* an EventId is shorter than this (GUIDs: 36) */

/* One event for this VM, as the callback sees it. The strings belong to the parser and
 * are valid during the callback only. */
struct rr_azure_event {
	const char *event_id;     /* 1..RR_AZURE_EVENT_ID_MAX-1 bytes, no control characters */
	const char *event_type;   /* "Reboot", "Redeploy", "Freeze", "Preempt", "Terminate", or
				   * a type newer than this code */
	const char *event_status; /* "Scheduled", "Started"; "" when absent */
	const char *not_before;   /* as sent; "" when blank or absent (the event started) */
	int64_t not_before_unix;  /* 0 when blank; -1 when not a valid RFC 1123 date */
	int64_t duration_s;       /* DurationInSeconds; -1 when unknown or absent */
};

/* Called once per event whose Resources name vm_name. Returns 0 to go on, or a negative
 * rr_error that stops the parse and becomes its result. */
typedef int (*rr_azure_event_cb)(void *ud, const struct rr_azure_event *ev);

/* Parses len bytes of a Scheduled Events document (no NUL terminator needed):
 * {"DocumentIncarnation": integer >= 0, "Events": [{"EventId": string, "EventType":
 * string, "Resources": [strings], optional "EventStatus", "NotBefore", "ResourceType",
 * "Description", "EventSource" strings and "DurationInSeconds" integer}]}; other members
 * are ignored. The whole document is checked before the first callback, so a refused one
 * reports no event. *incarnation (may be NULL) is set before the first callback.
 * vm_name is compared with each Resources entry without regard to ASCII case; NULL
 * passes every event. Returns 0; RR_ETOOBIG past RR_AZURE_EVENTS_MAX; RR_ECORRUPT for
 * anything else malformed (a wrong type, a missing member, a member twice, a NUL
 * character, trailing data), with a one-line reason in why (why_len bytes, may be NULL);
 * RR_ENOMEM; or the callback's error. */
int rr_azure_parse_events(const char *json, size_t len, const char *vm_name,
			  rr_azure_event_cb cb, void *ud, int64_t *incarnation, char *why,
			  size_t why_len);

#endif
