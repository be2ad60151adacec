/* Fuzz target: the Scheduled Events document comes from the metadata service, which the
 * agent trusts no more than the network. Any bytes must be refused without a single event
 * reported, or give events whose fields keep the header's promises; an accepted NotBefore
 * must print back as the same RFC 1123 text. The same bytes as a date string must be
 * refused or round-trip too. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "azure_events.h"
#include "rr/error.h"
#include "rr/timefmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                             \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "fuzz_azure_events: %s (%s)\n", what, #cond);  \
			__builtin_trap();                                               \
		}                                                                       \
	} while (0)

struct s_state {
	unsigned events;
	int fail_with; /* nonzero: the callback returns this on the first event */
};

/* An accepted date prints back as exactly the text it came from. */
static void s_check_round_trip(const char *text, int64_t v)
{
	char again[64];
	struct tm tm;
	time_t t = (time_t)v;

	S_CHECK(v >= 0 && v <= 253402300799, "a date outside 1970..9999");
	S_CHECK(gmtime_r(&t, &tm) != NULL, "gmtime_r failed");
	strftime(again, sizeof(again), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	S_CHECK(strcmp(again, text) == 0, "a date does not print back the same");
}

static int s_on_event(void *ud, const struct rr_azure_event *ev)
{
	struct s_state *s = ud;
	size_t n = strlen(ev->event_id);

	S_CHECK(n > 0 && n < RR_AZURE_EVENT_ID_MAX, "EventId length");
	for (size_t i = 0; i < n; i++)
		S_CHECK((unsigned char)ev->event_id[i] >= 0x20 && ev->event_id[i] != 0x7f,
			"control character in EventId");
	S_CHECK(ev->event_type[0] != '\0', "empty EventType");
	S_CHECK(ev->event_status != NULL && ev->not_before != NULL, "NULL string");
	S_CHECK(ev->duration_s >= -1, "DurationInSeconds below -1");
	S_CHECK(ev->not_before_unix >= -1, "NotBefore below -1");
	S_CHECK(ev->not_before[0] != '\0' || ev->not_before_unix == 0,
		"a blank NotBefore with a date");
	if (ev->not_before[0] && ev->not_before_unix >= 0)
		s_check_round_trip(ev->not_before, ev->not_before_unix);
	s->events++;
	if (s->fail_with)
		return s->fail_with;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s_state ours = { 0, 0 }, all = { 0, 0 }, stop = { 0, RR_ECANCELED };
	char why[256], date[64];
	int64_t inc = -7, inc_all = -7, v = -1;
	int rc, rc_all, rc_stop;

	why[0] = 'x';
	rc = rr_azure_parse_events((const char *)data, size, "trainer-7", s_on_event, &ours,
				   &inc, why, sizeof(why));
	if (rc != 0) {
		S_CHECK(rc == RR_ECORRUPT || rc == RR_ETOOBIG || rc == RR_ENOMEM,
			"unexpected error code");
		S_CHECK(ours.events == 0, "a refused document reported an event");
		S_CHECK(inc == -7, "a refused document set the incarnation");
		S_CHECK(rc == RR_ENOMEM || (why[0] != '\0' && why[0] != 'x'),
			"a refusal without a reason");
	} else {
		S_CHECK(inc >= 0, "a negative incarnation");
	}

	/* Without a name every event passes: a superset of ours, same verdict. */
	rc_all = rr_azure_parse_events((const char *)data, size, NULL, s_on_event, &all,
				       &inc_all, NULL, 0);
	if (rc != RR_ENOMEM && rc_all != RR_ENOMEM) {
		S_CHECK(rc_all == rc, "the verdict depends on the VM name");
		S_CHECK(all.events >= ours.events, "fewer events without a filter");
		S_CHECK(inc_all == inc, "the incarnation depends on the VM name");
	}

	/* A callback's error stops the parse and is its result. */
	rc_stop = rr_azure_parse_events((const char *)data, size, NULL, s_on_event, &stop,
					NULL, NULL, 0);
	if (rc_all == 0)
		S_CHECK(rc_stop == (all.events ? RR_ECANCELED : 0) && stop.events <= 1,
			"a callback error was not passed on");

	/* The same bytes as a date. */
	if (size < sizeof(date)) {
		memcpy(date, data, size);
		date[size] = '\0';
		if (rr_rfc1123_to_unix(date, &v) == 0)
			s_check_round_trip(date, v);
	}
	return 0;
}
