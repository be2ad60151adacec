/* rr_store_open: picks the backend from the URL's scheme. Each backend's constructor sets
 * s->url and its destroy frees it with the rest of the object. Also the per-thread reason
 * for a store call's failure. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "rr/clock.h"
#include "rr/error.h"
#include "rr/log.h"
#include "rr/store.h"
#include "store_azure.h"
#include "store_s3.h"
#include "rr/store_sealed.h"

static _Thread_local char s_why[1600];
static _Thread_local int s_why_rc;

int rr_store_fail(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s_why, sizeof(s_why), fmt, ap);
	va_end(ap);
	s_why_rc = rc;
	return rc;
}

void rr_store_clear_why(void)
{
	s_why[0] = '\0';
	s_why_rc = 0;
}

const char *rr_store_strerror(int rc)
{
	if (rc && rc == s_why_rc && s_why[0])
		return s_why;
	return rr_strerror(rc);
}

/* Returns the part after "<scheme>://" when url has that scheme (case-insensitively, as
 * URL schemes are), else NULL. */
static const char *s_after_scheme(const char *url, const char *scheme)
{
	size_t n = strlen(scheme);

	if (strncasecmp(url, scheme, n) != 0 || strncmp(url + n, "://", 3) != 0)
		return NULL;
	return url + n + 3;
}

/* Wraps s in the sealed store with the key in path (s is consumed either way). */
static int s_seal(struct rr_store *s, const char *path, struct rr_store **out)
{
	struct rr_seal_key *key = NULL;
	char why[300];
	int loose = 0, rc;

	rc = rr_seal_key_load_file(path, &key, &loose, why, sizeof(why));
	if (rc) {
		rr_store_destroy(s);
		return rr_store_fail(rc, "encryption key file %s: %s", path, why);
	}
	if (loose)
		rr_warn("encryption key file %s can be read by its group or others; "
			"chmod 600 it", path);
	return rr_store_sealed_new(s, key, out);
}

/* https://ACCOUNT.blob.core.windows.net/... (or another cloud's blob host). */
static int s_azure_https(const char *url)
{
	const char *host = url + 8, *end;

	if (strncmp(url, "https://", 8) != 0)
		return 0;
	end = host + strcspn(host, "/");
	return memmem(host, (size_t)(end - host), ".blob.", 6) != NULL;
}

int rr_store_open(const char *url, const struct rr_store_opts *opts, struct rr_store **out)
{
	static const struct rr_store_opts none;
	struct rr_store *s = NULL;
	const char *rest;
	char *copy;
	int rc;

	rr_store_clear_why();
	if (!url || !out)
		return RR_EINVAL;
	if (!opts)
		opts = &none;
	if ((rest = s_after_scheme(url, "file")) != NULL) {
		/* "file:///abs" -> "/abs"; "file://./rel" and "file://rel" are relative to the
		 * working directory (no host part: this is a local store only). */
		struct stat st;
		if (*rest == '\0')
			return rr_store_fail(RR_EINVAL, "a file:// URL needs a path");
		if (opts->existing && stat(rest, &st) != 0)
			return rr_store_fail(RR_ENOENT, "its directory does not exist (nothing "
					     "was stored there)");
		rc = rr_store_file_new(rest, &s);
	} else if ((rest = s_after_scheme(url, "s3")) != NULL) {
		rc = rr_store_s3_new(rest, opts, &s);
	} else if ((rest = s_after_scheme(url, "gs")) != NULL) {
		rc = rr_store_gcs_new(rest, opts, &s);
	} else if (s_after_scheme(url, "az") || s_azure_https(url)) {
		rc = rr_store_azure_new(url, opts, &s);
	} else {
		return rr_store_fail(RR_EINVAL, "the store URL must start with file://, s3://, "
					       "gs:// or az://");
	}
	if (rc)
		return rc;

	/* Keep the URL as the user wrote it for log lines. */
	copy = strdup(url);
	if (!copy) {
		rr_store_destroy(s);
		return RR_ENOMEM;
	}
	free(s->url);
	s->url = copy;
	if (opts->encryption_key_file)
		return s_seal(s, opts->encryption_key_file, out);
	*out = s;
	return 0;
}

void rr_store_destroy(struct rr_store *s)
{
	if (s)
		s->vt->destroy(s);
}

void rr_store_cancel(struct rr_store *s)
{
	/* A wrapper passes it on, as the deadline below. */
	for (; s; s = s->inner) {
		s->stopped = 1;
		s->cancel = &s->stopped;
		/* No retry fits before "now", so none is started. */
		s->deadline_mono_ms = rr_mono_ms();
	}
}

int64_t rr_store_now_ms(const struct rr_store *s)
{
	/* A wrapper's backend is the one that talks to the store. */
	while (s->inner)
		s = s->inner;
	return rr_wall_ms() + (atomic_load(&s->clock_known) ? atomic_load(&s->clock_offset_ms) : 0);
}

int rr_store_clock_known(const struct rr_store *s)
{
	while (s->inner)
		s = s->inner;
	return atomic_load(&s->clock_known);
}

void rr_store_observe_date(struct rr_store *s, const char *http_date)
{
	struct tm tm;
	char *end;
	long long offset;

	if (!http_date)
		return;
	memset(&tm, 0, sizeof(tm));
	end = strptime(http_date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!end || *end)
		return;
	/* The middle of the second the server named, against now. */
	offset = (long long)timegm(&tm) * 1000 + 500 - rr_wall_ms();
	/* Within the Date's own resolution the clocks agree: no offset at all. */
	if (offset > -1500 && offset < 1500)
		offset = 0;
	if (!atomic_load(&s->clock_known) && llabs(offset) >= 60000)
		rr_warn("the store's clock is %lld s %s this machine's: ages in the store are "
			"judged by the store's clock (fix this machine's clock with NTP)",
			llabs(offset) / 1000, offset > 0 ? "ahead of" : "behind");
	atomic_store(&s->clock_offset_ms, offset);
	atomic_store(&s->clock_known, 1);
}

void rr_store_set_deadline(struct rr_store *s, long long deadline_mono_ms)
{
	/* A wrapper passes it on: the backend underneath is the one that retries. */
	for (; s; s = s->inner)
		s->deadline_mono_ms = deadline_mono_ms;
}

void rr_store_set_cancel(struct rr_store *s, const atomic_int *flag)
{
	for (; s; s = s->inner)
		if (!s->stopped) /* a store stopped for good stays stopped */
			s->cancel = flag;
}

int rr_store_del_if_old(struct rr_store *s, const char *key, int64_t not_after_ms)
{
	rr_store_clear_why();
	return s->vt->del_if_old ? s->vt->del_if_old(s, key, not_after_ms) : RR_EUNSUPPORTED;
}

int rr_store_has_del_if_old(const struct rr_store *s)
{
	while (s->inner && s->vt->del_if_old)
		s = s->inner;
	return s->vt->del_if_old != NULL;
}

int rr_store_del_many(struct rr_store *s, const char *const *keys, size_t n)
{
	size_t i;
	int rc;

	rr_store_clear_why();
	if (s->vt->del_many)
		return s->vt->del_many(s, keys, n);
	for (i = 0; i < n; i++) {
		rc = s->vt->del(s, keys[i]);
		if (rc)
			return rc;
	}
	return 0;
}
