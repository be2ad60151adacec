#include <stdio.h>
#include <string.h>

#include "recovery.h"

void rr_recovery_launch(struct rr_recovery *r, const char *from)
{
	if (!from)
		from = "";
	if (strcmp(from, r->from) == 0)
		return;
	snprintf(r->from, sizeof(r->from), "%s", from);
	r->failures = 0;
	r->newer[0] = '\0';
	r->proven = 0;
}

void rr_recovery_commit(struct rr_recovery *r, const char *name)
{
	if (r->from[0] && !r->newer[0] && strcmp(name, r->from) != 0)
		snprintf(r->newer, sizeof(r->newer), "%s", name);
}

int rr_recovery_durable(struct rr_recovery *r, const char *name)
{
	if (!r->from[0] || r->proven || !r->newer[0] || strcmp(name, r->newer) != 0)
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
