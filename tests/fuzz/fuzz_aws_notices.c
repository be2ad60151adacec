/* Fuzz target: IMDS answers about notices come from the metadata service, which the agent
 * trusts no more than the network. The same bytes go to each of the three parsers: each
 * refuses them with a reason and reports nothing, or accepts them keeping the header's
 * promises. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "aws_notices.h"
#include "rr/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                             \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "fuzz_aws_notices: %s (%s)\n", what, #cond);   \
			__builtin_trap();                                               \
		}                                                                       \
	} while (0)

struct s_state {
	unsigned events;
	int stop_with; /* nonzero: the callback returns this on the first event */
};

static int s_on_event(void *ud, const char *event_id, int64_t not_before_unix)
{
	struct s_state *s = ud;

	S_CHECK(event_id != NULL, "an event without an id");
	S_CHECK(not_before_unix >= 0, "a negative NotBefore");
	s->events++;
	return s->stop_with;
}

static void s_check_refusal(int rc, const char *why)
{
	S_CHECK(rc == RR_ECORRUPT || rc == RR_ENOMEM, "unexpected error code");
	S_CHECK(rc == RR_ENOMEM || (why[0] != '\0' && why[0] != 'x'), "a refusal without a reason");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct s_state all = { 0, 0 }, stop = { 0, 1 };
	char why[256], key[RR_AWS_SPOT_KEY_MAX];
	int64_t ms = -7;
	int rc, rc_stop;

	if (size > RR_AWS_ANSWER_MAX)
		return 0; /* the answer's buffer holds no more */

	why[0] = 'x';
	key[0] = '\0';
	rc = rr_aws_parse_spot(text, size, &ms, key, why, sizeof(why));
	if (rc)
		s_check_refusal(rc, why);
	else
		S_CHECK(strchr(key, '@') != NULL && memchr(key, '\0', sizeof(key)) != NULL,
			"a spot key without its '@' or its NUL");

	why[0] = 'x';
	rc = rr_aws_parse_rebalance(text, size, why, sizeof(why));
	if (rc)
		s_check_refusal(rc, why);

	why[0] = 'x';
	rc = rr_aws_parse_maintenance(text, size, s_on_event, &all, why, sizeof(why));
	if (rc) {
		s_check_refusal(rc, why);
		S_CHECK(all.events == 0, "a refused answer reported an event");
	}
	/* A callback's result stops the parse and is its result. */
	rc_stop = rr_aws_parse_maintenance(text, size, s_on_event, &stop, NULL, 0);
	if (rc == 0)
		S_CHECK(rc_stop == (all.events ? 1 : 0) && stop.events <= 1,
			"a callback's result was not passed on");
	return 0;
}
