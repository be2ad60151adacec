/* Which runs a store holds (rr/runs.h): the first component of its keys,
 * <run>/{checkpoints,chunks,events,...}. The store interface lists by prefix only, so the
 * run names come from one bounded listing of everything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/manifest.h"
#include "rr/runs.h"

#define S_NAMES_MAX 64 /* names kept; a store with more says ", ..." */

static int s_any(const struct rr_store_entry *e, void *ud)
{
	(void)e, (void)ud;
	return 1; /* one is enough: stop the listing */
}

int rr_runs_exists(struct rr_store *s, const char *run_id)
{
	char prefix[300];
	size_t n = strlen(run_id);
	int rc;

	if (n + 2 > sizeof(prefix))
		return RR_EINVAL;
	memcpy(prefix, run_id, n);
	prefix[n] = '/';
	prefix[n + 1] = '\0';
	rc = rr_store_list(s, prefix, s_any, NULL);
	return rc == 1 ? 1 : rc;
}

struct s_names {
	char *name[S_NAMES_MAX];
	size_t n;
	size_t scanned;
	int more; /* names left out, or the listing stopped early */
};

static int s_on_key(const struct rr_store_entry *e, void *ud)
{
	struct s_names *k = ud;
	const char *slash = strchr(e->key, '/');
	size_t len = slash ? (size_t)(slash - e->key) : 0;
	char name[256];

	if (++k->scanned > RR_RUNS_SCAN_MAX) {
		k->more = 1;
		return 1;
	}
	/* A run's objects lie below its name; anything else at the top (the file store's
	 * .locks, a stray file) is no run. */
	if (!len || len >= sizeof(name))
		return 0;
	memcpy(name, e->key, len);
	name[len] = '\0';
	if (!rr_checkpoint_name_valid(name))
		return 0;
	for (size_t i = 0; i < k->n; i++)
		if (strcmp(k->name[i], name) == 0)
			return 0;
	if (k->n == S_NAMES_MAX) {
		k->more = 1;
		return 0;
	}
	k->name[k->n] = strdup(name);
	if (!k->name[k->n])
		return RR_ENOMEM;
	k->n++;
	return 0;
}

static int s_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rr_runs_list(struct rr_store *s, char *out, size_t cap)
{
	struct s_names k = { 0 };
	size_t used = 0;
	int rc = rr_store_list(s, "", s_on_key, &k);

	if (rc == 1)
		rc = 0; /* stopped at RR_RUNS_SCAN_MAX keys */
	out[0] = '\0';
	if (!rc) {
		qsort(k.name, k.n, sizeof(k.name[0]), s_cmp);
		for (size_t i = 0; i < k.n + (k.more ? 1 : 0); i++) {
			const char *item = i < k.n ? k.name[i] : "...";
			size_t len = strlen(item) + (i ? 2 : 0);
			if (used + len + 6 >= cap) { /* room for ", ..." */
				snprintf(out + used, cap - used, "%s...", used ? ", " : "");
				break;
			}
			used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? ", " : "",
						 item);
		}
	}
	for (size_t i = 0; i < k.n; i++)
		free(k.name[i]);
	return rc;
}
