/* Environment variables as configuration: one that is set but empty counts as unset, the
 * way the AWS CLI, gcloud and the README's RESUME_RUN_* variables all treat them. */
#ifndef RR_ENV_H
#define RR_ENV_H

#include <stdlib.h>

/* The value of name, or NULL when it is unset or empty. The string belongs to the
 * environment (valid until it changes). */
static inline const char *rr_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

#endif
