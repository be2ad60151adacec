#include <stdio.h>
#include <string.h>

#include "recovery.h"

void rr_recovery_launch(struct rr_recovery *r, const char *from, int64_t from_ms)
{
	if (!from)
		from = "";
	if (strcmp(from, r->from) == 0 && from_ms == r->from_ms)
		return;
	snprintf(r->from, sizeof(r->from), "%s", from);
	r->from_ms = from_ms;
	r->failures = 0;
	r->newer[0] = '\0';
	r->proven = 0;
}

void rr_recovery_commit(struct rr_recovery *r, const char *name, int64_t ms)
{
	if (r->from[0] && !r->newer[0] && (strcmp(name, r->from) != 0 || ms > r->from_ms)) {
		snprintf(r->newer, sizeof(r->newer), "%s", name);
		r->newer_ms = ms;
	}
}

int rr_recovery_durable(struct rr_recovery *r, const char *name, int64_t ms)
{
	if (!r->from[0] || r->proven || !r->newer[0] || strcmp(name, r->newer) != 0 ||
	    ms < r->newer_ms)
		return 0;
	r->proven = 1;
	return 1;
}

int rr_recovery_failed(struct rr_recovery *r, int exit_code)
{
	if (!r->from[0] || r->newer[0] || exit_code == 126 || exit_code == 127 ||
	    !r->suspect_after)
		return 0;
	return ++r->failures >= r->suspect_after;
}
