/* rr_store_open: picks the backend from the URL's scheme. Each backend's constructor sets
 * s->url and its destroy frees it with the rest of the object. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rr/error.h"
#include "rr/store.h"

/* Returns the part after "<scheme>://" when url has that scheme (case-insensitively, as
 * URL schemes are), else NULL. */
static const char *s_after_scheme(const char *url, const char *scheme)
{
	size_t n = strlen(scheme);

	if (strncasecmp(url, scheme, n) != 0 || strncmp(url + n, "://", 3) != 0)
		return NULL;
	return url + n + 3;
}

int rr_store_open(const char *url, struct rr_store **out)
{
	struct rr_store *s = NULL;
	const char *rest;
	char *copy;
	int rc;

	if (!url || !out)
		return RR_EINVAL;
	rest = s_after_scheme(url, "file");
	if (rest) {
		/* "file:///abs" -> "/abs"; "file://./rel" and "file://rel" are relative to the
		 * working directory (no host part: this is a local store only). */
		if (*rest == '\0')
			return RR_EINVAL;
		rc = rr_store_file_new(rest, &s);
		if (rc)
			return rc;
	} else if (s_after_scheme(url, "s3") || s_after_scheme(url, "gs")) {
		return RR_EUNSUPPORTED;
	} else {
		return RR_EINVAL;
	}

	/* Keep the URL as the user wrote it for log lines. */
	copy = strdup(url);
	if (!copy) {
		rr_store_destroy(s);
		return RR_ENOMEM;
	}
	free(s->url);
	s->url = copy;
	*out = s;
	return 0;
}

void rr_store_destroy(struct rr_store *s)
{
	if (s)
		s->vt->destroy(s);
}
