/* CUnit suite "persister": the background persister thread against a real file store.
 * Waits are bounded polls on the persister's eventfd (S_WAIT_MS in all), never sleeps or
 * timing thresholds: a broken persister fails a test instead of hanging it. "Nothing
 * happened" is checked once the persister is idle (rr_persister_busy() == 0), since it
 * files a result before it stops being busy. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rr/catalog.h"
#include "rr/clock.h"
#include "rr/error.h"
#include "rr/gc.h"
#include "rr/manifest.h"
#include "persister.h"
#include "rr/restore.h"

#include "ckpt_fixture.h"
#include "cunit_main.h"

#define S_WAIT_MS 10000
#define S_MAX_RESULTS 16

struct s_env {
	struct fx f;
	struct rr_persister *p;
	struct rr_persist_result res[S_MAX_RESULTS];
	size_t nres;
};

static struct rr_persister_config s_config(struct fx *f, unsigned keep)
{
	return (struct rr_persister_config){ .store = f->s, .run_id = FX_RUN,
					     .checkpoint_dir = f->ckpt_dir, .keep = keep,
					     .threads = 2, .zstd_level = RR_ZSTD_LEVEL_DEFAULT,
					     .gc_grace_ms = RR_GC_GRACE_MS_DEFAULT };
}

static void s_start(struct s_env *e, unsigned keep, struct rr_manifest *baseline)
{
	struct rr_persister_config cfg = s_config(&e->f, keep);
	CU_ASSERT_EQUAL_FATAL(rr_persister_new(&cfg, baseline, &e->p), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e->p);
	CU_ASSERT(rr_persister_fd(e->p) >= 0);
}

/* The fixture without a persister yet (s_start makes one). */
static void s_env_init(struct s_env *e)
{
	memset(e, 0, sizeof(*e));
	fx_init(&e->f);
}

static void s_setup(struct s_env *e, unsigned keep)
{
	s_env_init(e);
	s_start(e, keep, NULL);
}

static void s_teardown(struct s_env *e)
{
	rr_persister_destroy(e->p);
	fx_done(&e->f);
}

/* A store that passes everything to the file store, except that puts of keys containing
 * `match` block while the gate is closed. It holds the persister at a known point (mid-
 * persist, mid-event) so that what happens meanwhile is deterministic. */
struct s_gate {
	struct rr_store base;
	struct rr_store *inner;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const char *match;
	int closed;
	int blocked; /* puts waiting at the gate */
	/* Like a remote backend: while the store's cancel flag (rr_store_set_cancel) is
	 * raised, puts fail with RR_ECANCELED, and a put held at the gate ends so. */
	int honour_cancel;
	int fail; /* puts of matching keys fail with RR_EIO at once instead of blocking */
};

static int s_gate_canceled(const struct s_gate *g)
{
	const atomic_int *flag = g->base.cancel;
	return g->honour_cancel && flag && *flag;
}

static int s_gate_put(struct rr_store *s, const char *key, const void *data, size_t len,
		      const struct rr_put_opts *opts, char *etag_out)
{
	struct s_gate *g = (struct s_gate *)s;
	pthread_mutex_lock(&g->lock);
	if (g->fail && strstr(key, g->match)) {
		pthread_mutex_unlock(&g->lock);
		return RR_EIO;
	}
	if (strstr(key, g->match)) {
		g->blocked++;
		pthread_cond_broadcast(&g->cond);
		while (g->closed && !s_gate_canceled(g)) {
			/* The cancel flag is not announced on the condition: look every 10 ms. */
			struct timespec t;
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_nsec += 10 * 1000000L;
			if (t.tv_nsec >= 1000000000L) {
				t.tv_sec++;
				t.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&g->cond, &g->lock, &t);
		}
		g->blocked--;
	}
	pthread_mutex_unlock(&g->lock);
	if (s_gate_canceled(g))
		return RR_ECANCELED;
	return rr_store_put(g->inner, key, data, len, opts, etag_out);
}

static int s_gate_get(struct rr_store *s, const char *key, struct rr_buf *out, char *etag_out)
{
	return rr_store_get(((struct s_gate *)s)->inner, key, out, etag_out);
}

static int s_gate_head(struct rr_store *s, const char *key, uint64_t *size_out)
{
	return rr_store_head(((struct s_gate *)s)->inner, key, size_out);
}

static int s_gate_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb, void *ud)
{
	return rr_store_list(((struct s_gate *)s)->inner, prefix, cb, ud);
}

static int s_gate_del(struct rr_store *s, const char *key)
{
	return rr_store_del(((struct s_gate *)s)->inner, key);
}

static void s_gate_destroy(struct rr_store *s)
{
	(void)s; /* lives on the test's stack; the inner store is the fixture's */
}

static const struct rr_store_vtable s_gate_vt = {
	.scheme = "gate", .put = s_gate_put, .get = s_gate_get, .head = s_gate_head,
	.list = s_gate_list, .del = s_gate_del, .destroy = s_gate_destroy,
};

static void s_gate_init(struct s_gate *g, struct rr_store *inner, const char *match)
{
	memset(g, 0, sizeof(*g));
	g->base.vt = &s_gate_vt;
	g->base.url = (char *)"gate://";
	g->inner = inner;
	g->match = match;
	g->closed = 1;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
}

/* Waits (bounded) until a put is held at the gate; returns 1 if one is. */
static int s_gate_wait_blocked(struct s_gate *g)
{
	struct timespec until;
	int ok;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += S_WAIT_MS / 1000;
	pthread_mutex_lock(&g->lock);
	while (!g->blocked &&
	       pthread_cond_timedwait(&g->cond, &g->lock, &until) == 0)
		;
	ok = g->blocked > 0;
	pthread_mutex_unlock(&g->lock);
	return ok;
}

static void s_gate_open(struct s_gate *g)
{
	pthread_mutex_lock(&g->lock);
	g->closed = 0;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static void s_gate_fini(struct s_gate *g)
{
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
}

/* Starts the persister on a gated store instead of the fixture's. */
static void s_setup_gated(struct s_env *e, struct s_gate *g, const char *match, unsigned keep)
{
	struct rr_persister_config cfg;
	memset(e, 0, sizeof(*e));
	fx_init(&e->f);
	s_gate_init(g, e->f.s, match);
	cfg = s_config(&e->f, keep);
	cfg.store = &g->base;
	CU_ASSERT_EQUAL_FATAL(rr_persister_new(&cfg, NULL, &e->p), 0);
}

/* A small checkpoint of two files; seed varies the weights. */
static void s_teardown_gated(struct s_env *e, struct s_gate *g)
{
	rr_persister_destroy(e->p);
	e->p = NULL;
	s_gate_fini(g);
	fx_done(&e->f);
}

static void s_make(struct s_env *e, const char *name, uint64_t seed)
{
	char *d = fx_ckpt(&e->f, name);
	fx_write_random(d, "weights.bin", 256 * 1024, seed, 0644);
	fx_write_str(d, "meta/config.json", "{\"hidden\": 64}\n", 0644);
	free(d);
}

/* Collects what is ready into e->res. */
/* step-1 submitted and held at the gate, then step-2 submitted as urgent (a notice's). */
static void s_urgent_while_blocked(struct s_env *e, struct s_gate *g)
{
	s_make(e, "step-1", 1);
	s_make(e, "step-2", 2);
	rr_persister_submit(e->p, "step-1", 1000, 0);
	CU_ASSERT_TRUE_FATAL(s_gate_wait_blocked(g));
	rr_persister_submit(e->p, "step-2", 2000, 1);
}

static void s_collect(struct s_env *e)
{
	e->nres += rr_persister_collect(e->p, e->res + e->nres, S_MAX_RESULTS - e->nres);
}

/* Waits (bounded) for the persister's fd, collecting results, until cond holds. */
static int s_wait(struct s_env *e, int (*cond)(struct s_env *, const void *), const void *arg)
{
	int64_t deadline = rr_mono_ms() + S_WAIT_MS;
	for (;;) {
		struct pollfd pfd = { .fd = rr_persister_fd(e->p), .events = POLLIN };
		int64_t left;
		s_collect(e);
		if (cond(e, arg))
			return 1;
		left = deadline - rr_mono_ms();
		if (left <= 0)
			return 0;
		/* The fd wakes us for results and finished events; the cap re-checks
		 * conditions that are not announced on it (idle after a skipped job). */
		poll(&pfd, 1, left < 100 ? (int)left : 100);
	}
}

static int s_has_result(struct s_env *e, const void *name)
{
	for (size_t i = 0; i < e->nres; i++)
		if (strcmp(e->res[i].name, name) == 0)
			return 1;
	return 0;
}

static int s_idle(struct s_env *e, const void *unused)
{
	(void)unused;
	return !rr_persister_busy(e->p);
}

/* The result for name, waiting (bounded) for it; NULL if none came. */
static const struct rr_persist_result *s_result(struct s_env *e, const char *name)
{
	if (!s_wait(e, s_has_result, name))
		return NULL;
	for (size_t i = 0; i < e->nres; i++)
		if (strcmp(e->res[i].name, name) == 0)
			return &e->res[i];
	return NULL;
}

/* LATEST's checkpoint name into out ("" when absent or unreadable). */
static void s_latest(struct s_env *e, char *out, size_t cap)
{
	char key[RR_KEY_MAX], *text;
	out[0] = '\0';
	CU_ASSERT_EQUAL_FATAL(rr_key_latest(key, FX_RUN), 0);
	text = fx_get_str(&e->f, key);
	if (text && rr_latest_parse(text, strlen(text), out, cap) != 0)
		out[0] = '\0';
	free(text);
}

struct s_events {
	const char *suffix;
	int n;
	char key[RR_KEY_MAX];
};

static int s_on_event(const struct rr_store_entry *se, void *ud)
{
	struct s_events *ev = ud;
	size_t kl = strlen(se->key), sl = strlen(ev->suffix);
	if (kl > sl && strcmp(se->key + kl - sl, ev->suffix) == 0) {
		ev->n++;
		snprintf(ev->key, sizeof(ev->key), "%s", se->key);
	}
	return 0;
}

/* Events of the run whose key ends in "-<kind>.json"; the last one's key in key_out. */
static int s_count_events(struct s_env *e, const char *kind, char *key_out)
{
	char suffix[64];
	struct s_events ev = { .suffix = suffix };
	snprintf(suffix, sizeof(suffix), "-%s.json", kind);
	CU_ASSERT_EQUAL(rr_store_list(e->f.s, FX_RUN "/events/", s_on_event, &ev), 0);
	if (key_out)
		snprintf(key_out, RR_KEY_MAX, "%s", ev.key);
	return ev.n;
}

static void test_persister_persists_submitted_checkpoint(void)
{
	struct s_env e;
	const struct rr_persist_result *r;
	char latest[256], key[RR_KEY_MAX], *text;
	cJSON *j;

	s_setup(&e, 3);
	s_make(&e, "step-1", 1);
	rr_persister_submit(e.p, "step-1", 1000, 0);
	r = s_result(&e, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_EQUAL(r->urgent, 0);
	CU_ASSERT_EQUAL(r->stats.files, 2);
	CU_ASSERT_EQUAL(r->stats.bytes, 256 * 1024 + strlen("{\"hidden\": 64}\n"));
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "step-1"));
	/* The result comes as soon as the manifest is written (the checkpoint is committed);
	 * LATEST and the ledger are written before the persister goes idle. */
	CU_ASSERT_TRUE_FATAL(s_wait(&e, s_idle, NULL));
	s_latest(&e, latest, sizeof(latest));
	CU_ASSERT_STRING_EQUAL(latest, "step-1");
	CU_ASSERT_EQUAL(s_count_events(&e, "checkpoint", key), 1);
	text = fx_get_str(&e.f, key);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	j = cJSON_Parse(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetObjectItem(j, "checkpoint")),
			       "step-1");
	CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetObjectItem(j, "kind")), "checkpoint");
	cJSON_Delete(j);
	free(text);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	CU_ASSERT_FALSE(fx_exists_in(e.f.ckpt_dir, RR_STAGING_DIR));
	s_teardown(&e);
}

static void test_persister_urgent_submission_is_reported_urgent(void)
{
	struct s_env e;
	const struct rr_persist_result *r;

	s_setup(&e, 3);
	s_make(&e, "step-1", 1);
	rr_persister_submit(e.p, "step-1", 1000, 1);
	r = s_result(&e, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_EQUAL(r->urgent, 1);
	s_teardown(&e);
}

static void test_persister_ignores_submission_older_than_persisted(void)
{
	struct s_env e;
	const struct rr_persist_result *r;
	char latest[256];

	s_setup(&e, 3);
	s_make(&e, "step-1", 1);
	s_make(&e, "step-2", 2);
	rr_persister_submit(e.p, "step-2", 2000, 0);
	r = s_result(&e, "step-2");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_TRUE_FATAL(s_wait(&e, s_idle, NULL));
	e.nres = 0;

	rr_persister_submit(e.p, "step-1", 1000, 0);
	rr_persister_submit(e.p, "step-1", 1000, 1); /* not even when urgent */
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	s_collect(&e);
	CU_ASSERT_EQUAL(e.nres, 0);
	CU_ASSERT_FALSE(fx_has_manifest(&e.f, "step-1"));
	s_latest(&e, latest, sizeof(latest));
	CU_ASSERT_STRING_EQUAL(latest, "step-2");
	s_teardown(&e);
}

static void test_persister_baseline_makes_older_submissions_ignored(void)
{
	struct s_env e;
	struct rr_manifest *m2 = NULL;
	const struct rr_persist_result *r;

	s_env_init(&e);
	s_make(&e, "step-1", 1);
	s_make(&e, "step-2", 2);
	s_make(&e, "step-3", 2); /* same weights as step-2 */
	CU_ASSERT_EQUAL_FATAL(fx_persist(&e.f, "step-2", 2000, NULL, &m2, NULL), 0);
	s_start(&e, 3, m2); /* taken over */

	rr_persister_submit(e.p, "step-1", 1000, 0);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	s_collect(&e);
	CU_ASSERT_EQUAL(e.nres, 0);
	CU_ASSERT_FALSE(fx_has_manifest(&e.f, "step-1"));

	/* Newer than the baseline: persisted, reusing every segment of the baseline. */
	rr_persister_submit(e.p, "step-3", 3000, 0);
	r = s_result(&e, "step-3");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_EQUAL(r->stats.segments, 2);
	CU_ASSERT_EQUAL(r->stats.reused_segments, 2);
	s_teardown(&e);
}

static void test_persister_reports_eexist_for_checkpoint_already_in_store(void)
{
	struct s_env e;
	const struct rr_persist_result *r;

	s_env_init(&e);
	s_make(&e, "step-1", 1);
	/* Another machine stored it; this persister does not know (no baseline). */
	CU_ASSERT_EQUAL_FATAL(fx_persist(&e.f, "step-1", 1000, NULL, NULL, NULL), 0);
	s_start(&e, 3, NULL);
	rr_persister_submit(e.p, "step-1", 1000, 0);
	r = s_result(&e, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, RR_EEXIST);
	CU_ASSERT_EQUAL(s_count_events(&e, "checkpoint", NULL), 0);
	s_teardown(&e);
}

static void test_persister_reports_enoent_for_vanished_checkpoint(void)
{
	struct s_env e;
	const struct rr_persist_result *r;
	char latest[256];

	s_setup(&e, 3);
	rr_persister_submit(e.p, "step-404", 1000, 0);
	r = s_result(&e, "step-404");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, RR_ENOENT);
	CU_ASSERT_FALSE(fx_has_manifest(&e.f, "step-404"));
	s_latest(&e, latest, sizeof(latest));
	CU_ASSERT_STRING_EQUAL(latest, "");
	s_teardown(&e);
}

static void test_persister_record_writes_ledger_event(void)
{
	struct s_env e;
	char key[RR_KEY_MAX], *text;
	cJSON *fields = cJSON_CreateObject(), *j;

	s_setup(&e, 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fields);
	cJSON_AddStringToObject(fields, "reason", "spot-termination");
	rr_persister_record(e.p, "notice", fields); /* taken over */
	rr_persister_record(e.p, "restart", NULL);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	CU_ASSERT_EQUAL(s_count_events(&e, "restart", NULL), 1);
	CU_ASSERT_EQUAL(s_count_events(&e, "notice", key), 1);
	text = fx_get_str(&e.f, key);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	j = cJSON_Parse(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetObjectItem(j, "kind")), "notice");
	CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetObjectItem(j, "reason")),
			       "spot-termination");
	CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(cJSON_GetObjectItem(j, "run_id")), FX_RUN);
	cJSON_Delete(j);
	free(text);
	/* Events are not checkpoint results. */
	s_collect(&e);
	CU_ASSERT_EQUAL(e.nres, 0);
	s_teardown(&e);
}

static void test_persister_applies_retention_with_keep_one(void)
{
	struct s_env e;
	const struct rr_persist_result *r;
	char latest[256], why[512];
	struct rr_catalog *c = NULL;

	s_setup(&e, 1);
	s_make(&e, "step-1", 1);
	s_make(&e, "step-2", 2);
	rr_persister_submit(e.p, "step-1", 1000, 0);
	r = s_result(&e, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	rr_persister_submit(e.p, "step-2", 2000, 0);
	r = s_result(&e, "step-2");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	/* Once retention has run (before idle): step-1's manifest is gone; step-2 stays whole. */
	CU_ASSERT_TRUE_FATAL(s_wait(&e, s_idle, NULL));
	CU_ASSERT_FALSE(fx_has_manifest(&e.f, "step-1"));
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "step-2"));
	s_latest(&e, latest, sizeof(latest));
	CU_ASSERT_STRING_EQUAL(latest, "step-2");
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(e.f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(c->n, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rr_catalog_newest(c));
	CU_ASSERT_EQUAL(rr_verify_checkpoint(e.f.s, FX_RUN, rr_catalog_newest(c)->manifest, 2, why,
					     sizeof(why)),
			0);
	rr_catalog_destroy(c);
	s_teardown(&e);
}

static void test_persister_reuses_segments_of_previous_checkpoint(void)
{
	struct s_env e;
	const struct rr_persist_result *r;

	s_setup(&e, 3);
	s_make(&e, "step-1", 1);
	s_make(&e, "step-2", 2); /* other weights, same config */
	rr_persister_submit(e.p, "step-1", 1000, 0);
	r = s_result(&e, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->stats.reused_segments, 0);
	rr_persister_submit(e.p, "step-2", 2000, 0);
	r = s_result(&e, "step-2");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_EQUAL(r->stats.segments, 2);
	CU_ASSERT_EQUAL(r->stats.reused_segments, 1);
	s_teardown(&e);
}

static void test_persister_does_not_move_latest_backwards(void)
{
	struct s_env e;
	const struct rr_persist_result *r;
	char latest[256], key[RR_KEY_MAX];
	struct rr_buf b;

	s_env_init(&e);
	s_make(&e, "step-2", 2);
	s_make(&e, "step-3", 3);
	/* Another machine already committed step-3 and pointed LATEST at it. */
	CU_ASSERT_EQUAL_FATAL(fx_persist(&e.f, "step-3", 3000, NULL, NULL, NULL), 0);
	rr_buf_init(&b, 64 * 1024);
	CU_ASSERT_EQUAL_FATAL(rr_latest_to_json("step-3", 3000, "other-host", &b), 0);
	CU_ASSERT_EQUAL_FATAL(rr_key_latest(key, FX_RUN), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_put(e.f.s, key, b.data, b.len, NULL, NULL), 0);
	rr_buf_free(&b);

	s_start(&e, 3, NULL);
	rr_persister_submit(e.p, "step-2", 2000, 0);
	r = s_result(&e, "step-2");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	s_latest(&e, latest, sizeof(latest));
	CU_ASSERT_STRING_EQUAL(latest, "step-3");
	s_teardown(&e);
}

static void test_persister_newest_queued_checkpoint_wins(void)
{
	struct s_env e;
	struct s_gate g;
	const struct rr_persist_result *r;

	s_setup_gated(&e, &g, "/chunks/", 3);
	s_make(&e, "step-1", 1);
	s_make(&e, "step-2", 2);
	s_make(&e, "step-3", 3);
	rr_persister_submit(e.p, "step-1", 1000, 0);
	CU_ASSERT_TRUE_FATAL(s_gate_wait_blocked(&g)); /* step-1 is being persisted */
	rr_persister_submit(e.p, "step-2", 2000, 0);
	rr_persister_submit(e.p, "step-3", 3000, 0); /* replaces step-2 in the queue */
	CU_ASSERT_TRUE(rr_persister_busy(e.p));
	s_gate_open(&g);
	r = s_result(&e, "step-3");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	s_collect(&e);
	CU_ASSERT_EQUAL(e.nres, 2);
	CU_ASSERT_TRUE(s_has_result(&e, "step-1"));
	CU_ASSERT_FALSE(s_has_result(&e, "step-2"));
	CU_ASSERT_FALSE(fx_has_manifest(&e.f, "step-2"));
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "step-3"));
	s_teardown_gated(&e, &g);
}

/* Lightning's save_last: last.ckpt is saved right after epoch=E-step=S.ckpt, with the same
 * state. Queued behind a persist in progress, the step file stays in the queue: it is what a
 * new machine restores (by step number), and last.ckpt sorts before it. Before, last.ckpt
 * replaced it as the later commit and the store's newest by step stayed an older state. */
static void test_persister_a_later_commit_sorting_before_the_queued_one_leaves_it(void)
{
	struct s_env e;
	struct s_gate g;
	const struct rr_persist_result *r;

	s_setup_gated(&e, &g, "/chunks/", 10);
	s_make(&e, "step-2", 1);
	s_make(&e, "step-4", 2);
	s_make(&e, "last", 2);
	rr_persister_submit(e.p, "step-2", 1000, 0);
	CU_ASSERT_TRUE_FATAL(s_gate_wait_blocked(&g)); /* step-2 is being persisted */
	rr_persister_submit(e.p, "step-4", 2000, 0);
	rr_persister_submit(e.p, "last", 2001, 0); /* does not displace step-4 */
	s_gate_open(&g);
	r = s_result(&e, "step-4");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "step-4"));
	s_teardown_gated(&e, &g);
}

/* A notice's checkpoint that sorts before the one being persisted by its step number
 * (Lightning's last.ckpt, the notice's answer, right after a routine epoch=E-step=S.ckpt
 * committed just before the request) does not set that one aside: it is what a new machine
 * restores. It goes on, and the notice's follows. */
static void test_persister_urgent_sorting_before_the_running_one_leaves_it(void)
{
	struct s_env e;
	struct s_gate g;
	const struct rr_persist_result *r1, *r2;

	s_setup_gated(&e, &g, "/chunks/", 10);
	s_make(&e, "step-4", 1);
	s_make(&e, "last", 2);
	rr_persister_submit(e.p, "step-4", 1000, 0);
	CU_ASSERT_TRUE_FATAL(s_gate_wait_blocked(&g)); /* step-4 is being persisted */
	rr_persister_submit(e.p, "last", 1001, 1);
	s_gate_open(&g);
	r1 = s_result(&e, "step-4");
	r2 = s_result(&e, "last");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r2);
	CU_ASSERT_EQUAL(r1->rc, 0);
	CU_ASSERT_EQUAL(r2->rc, 0);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "step-4"));
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "last"));
	s_teardown_gated(&e, &g);
}

static void test_persister_urgent_submission_sets_aside_older_persist_in_progress(void)
{
	struct s_env e;
	struct s_gate g;
	const struct rr_persist_result *r1, *r2;
	char latest[256];

	s_setup_gated(&e, &g, "/chunks/", 3);
	s_urgent_while_blocked(&e, &g);
	s_gate_open(&g);
	r2 = s_result(&e, "step-2");
	r1 = s_result(&e, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r2);
	CU_ASSERT_EQUAL(r1->rc, RR_ECANCELED);
	CU_ASSERT_EQUAL(r2->rc, 0);
	CU_ASSERT_EQUAL(r2->urgent, 1);
	CU_ASSERT_FALSE(fx_has_manifest(&e.f, "step-1"));
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "step-2"));
	CU_ASSERT_TRUE_FATAL(s_wait(&e, s_idle, NULL)); /* LATEST follows the result */
	s_latest(&e, latest, sizeof(latest));
	CU_ASSERT_STRING_EQUAL(latest, "step-2");
	s_teardown_gated(&e, &g);
}

/* A routine persist stuck on a link that never delivers (the gate stays closed) ends as soon
 * as a notice's checkpoint arrives: its store request in flight is canceled, not waited for.
 * The notice's checkpoint then persists with the flag lowered again. */
static void test_persister_urgent_submission_cancels_store_requests_in_flight(void)
{
	struct s_env e;
	struct s_gate g;
	const struct rr_persist_result *r1, *r2;

	s_setup_gated(&e, &g, "/chunks/", 3);
	g.honour_cancel = 1;
	s_urgent_while_blocked(&e, &g);
	r1 = s_result(&e, "step-1"); /* with the gate still closed */
	s_gate_open(&g);
	r2 = s_result(&e, "step-2");
	CU_ASSERT_PTR_NOT_NULL(r1);
	CU_ASSERT_PTR_NOT_NULL(r2);
	if (r1)
		CU_ASSERT_EQUAL(r1->rc, RR_ECANCELED);
	if (r2)
		CU_ASSERT_EQUAL(r2->rc, 0);
	CU_ASSERT_FALSE(fx_has_manifest(&e.f, "step-1"));
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "step-2"));
	rr_persister_destroy(e.p);
	e.p = NULL;
	CU_ASSERT_PTR_NULL(g.base.cancel); /* the persister's flag is not left behind */
	s_gate_fini(&g);
	fx_done(&e.f);
}

/* The trainer failed from step-6 while step-6 was still uploading (not yet in the store, so
 * no suspect mark can find it): the agent drops it, and the persist in progress is set aside
 * and waited for, so it never commits step-6 after the mark looked; the rewind to step-5
 * (the manifest restored instead) is taken over by the persister's thread, not freed under
 * a running persist; the trainer's good step-6, committed later, is persisted. Before, the
 * poisoned step-6 was committed unmarked, the rewind freed the manifest the persist read
 * (valgrind: invalid reads in s_reuse_find), and the good step-6 was skipped as not newer. */
static struct rr_manifest *s_stored_manifest(struct s_env *e, const char *name)
{
	char key[RR_KEY_MAX], *text;
	struct rr_manifest *m = NULL;

	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, FX_RUN, name), 0);
	text = fx_get_str(&e->f, key);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &m, NULL, 0), 0);
	free(text);
	return m;
}

static void s_big_step(struct s_env *e, const char *name, unsigned seed)
{
	char *d = fx_ckpt(&e->f, name);

	for (int i = 0; i < 12; i++) {
		char n[32];
		snprintf(n, sizeof(n), "w%02d.bin", i);
		fx_write_random(d, n, 2 * FX_MIB, i % 2 ? 100u + (unsigned)i : seed + (unsigned)i, 0644);
	}
	free(d);
}

static void test_persister_drop_sets_aside_a_suspect_persist_and_rewinds_safely(void)
{
	struct s_env e;
	struct s_gate g;
	const struct rr_persist_result *r;
	size_t before;

	s_setup_gated(&e, &g, "/chunks/", 3);
	g.honour_cancel = 1;
	s_big_step(&e, "step-5", 100);
	s_gate_open(&g);
	rr_persister_submit(e.p, "step-5", 1000, 0);
	r = s_result(&e, "step-5");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	pthread_mutex_lock(&g.lock);
	g.closed = 1;
	pthread_mutex_unlock(&g.lock);

	s_big_step(&e, "step-6", 600);
	rr_persister_submit(e.p, "step-6", 2000, 0);
	CU_ASSERT_TRUE_FATAL(s_gate_wait_blocked(&g));
	rr_persister_drop(e.p, "step-6"); /* returns once its persist is set aside */
	CU_ASSERT_FALSE(fx_has_manifest(&e.f, "step-6"));
	rr_persister_rewind(e.p, "step-5", 1000, s_stored_manifest(&e, "step-5"));
	s_gate_open(&g);
	r = s_result(&e, "step-6");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, RR_ECANCELED);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	CU_ASSERT_FALSE(fx_has_manifest(&e.f, "step-6"));

	/* The trainer, started again from step-5, commits a good step-6. */
	s_big_step(&e, "step-6", 900);
	before = e.nres;
	rr_persister_submit(e.p, "step-6", 9000, 1);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	CU_ASSERT_EQUAL(e.nres, before + 1);
	CU_ASSERT_EQUAL(e.res[e.nres - 1].rc, 0);
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "step-6"));
	s_teardown_gated(&e, &g);
}

/* A notice's checkpoint arriving while the previous one, already committed, updates LATEST
 * does not cancel that update or its ledger event: only the persist proper steps aside. */
static void test_persister_urgent_submission_lets_a_committed_checkpoint_finish(void)
{
	struct s_env e;
	struct s_gate g;
	const struct rr_persist_result *r1, *r2;

	s_setup_gated(&e, &g, "/LATEST", 3);
	g.honour_cancel = 1;
	s_urgent_while_blocked(&e, &g); /* step-1 committed, its LATEST held */
	s_gate_open(&g);
	r1 = s_result(&e, "step-1");
	r2 = s_result(&e, "step-2");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r2);
	CU_ASSERT_EQUAL(r1->rc, 0);
	CU_ASSERT_EQUAL(r2->rc, 0);
	CU_ASSERT_TRUE_FATAL(s_wait(&e, s_idle, NULL));
	CU_ASSERT_EQUAL(s_count_events(&e, "checkpoint", NULL), 2);
	s_teardown_gated(&e, &g);
}

static void test_persister_cancel_during_event_does_not_cancel_later_checkpoint(void)
{
	struct s_env e;
	struct s_gate g;
	const struct rr_persist_result *r;

	s_setup_gated(&e, &g, "/events/", 3);
	s_make(&e, "step-1", 1);
	rr_persister_record(e.p, "notice", NULL);
	CU_ASSERT_TRUE_FATAL(s_gate_wait_blocked(&g)); /* the event is being written */
	rr_persister_cancel(e.p, "the test cancels it");                       /* no persist in progress */
	s_gate_open(&g);
	CU_ASSERT_TRUE_FATAL(s_wait(&e, s_idle, NULL));
	rr_persister_submit(e.p, "step-1", 1000, 0);
	r = s_result(&e, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "step-1"));
	s_teardown_gated(&e, &g);
}

static void test_persister_cancel_drops_queued_checkpoint(void)
{
	struct s_env e;
	struct s_gate g;
	const struct rr_persist_result *r;

	s_setup_gated(&e, &g, "/chunks/", 3);
	s_make(&e, "step-1", 1);
	s_make(&e, "step-2", 2);
	rr_persister_submit(e.p, "step-1", 1000, 0);
	CU_ASSERT_TRUE_FATAL(s_gate_wait_blocked(&g));
	rr_persister_submit(e.p, "step-2", 2000, 0);
	rr_persister_cancel(e.p, "the test cancels it");
	s_gate_open(&g);
	r = s_result(&e, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, RR_ECANCELED);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	s_collect(&e);
	CU_ASSERT_FALSE(s_has_result(&e, "step-2"));
	CU_ASSERT_FALSE(fx_has_manifest(&e.f, "step-1"));
	CU_ASSERT_FALSE(fx_has_manifest(&e.f, "step-2"));
	s_teardown_gated(&e, &g);
}

static void test_persister_destroy_while_idle_is_clean(void)
{
	struct s_env e;
	char names[256];

	s_setup(&e, 3);
	/* A new persister applies retention in the background at once: idle once that ends. */
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	CU_ASSERT_FALSE(rr_persister_busy(e.p));
	rr_persister_destroy(e.p);
	e.p = NULL;
	rr_persister_destroy(NULL);
	/* Nothing was written anywhere. */
	CU_ASSERT_EQUAL(fx_dir_names(e.f.ckpt_dir, names, sizeof(names)), 0);
	CU_ASSERT_FALSE(fx_exists_in(e.f.store_dir, FX_RUN));
	fx_done(&e.f);
}

static void test_persister_destroy_after_work_is_clean(void)
{
	struct s_env e;
	const struct rr_persist_result *r;

	s_setup(&e, 3);
	s_make(&e, "step-1", 1);
	rr_persister_submit(e.p, "step-1", 1000, 0);
	r = s_result(&e, "step-1");
	CU_ASSERT_PTR_NOT_NULL(r);
	/* Queued but not yet collected: freed by destroy. */
	rr_persister_record(e.p, "restart", cJSON_CreateObject());
	s_teardown(&e);
}

/* One name saved again and again (ckpt.pt, last): restored from the store with the commit
 * time of a machine whose clock was ahead, it is still followed by this machine's later
 * commits of it, which the run loop saw come after the restore: each is persisted, the
 * stored copy replaced (the notice's too). Before, they sorted before the restored one by
 * commit time and were dropped, the notice's failed ("the store holds a later commit"). */
static void test_persister_stepless_name_after_a_restore_from_a_clock_ahead(void)
{
	struct s_env e;
	struct rr_manifest *ahead = NULL, *m = NULL;
	const struct rr_persist_result *r;
	char key[RR_KEY_MAX], *json;

	s_env_init(&e);
	s_make(&e, "last", 1);
	CU_ASSERT_EQUAL_FATAL(fx_persist(&e.f, "last", 9000000, NULL, &ahead, NULL), 0);
	s_start(&e, 3, ahead); /* taken over */

	s_make(&e, "last", 2);
	rr_persister_submit(e.p, "last", 2000, 0);
	r = s_result(&e, "last");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_EQUAL(r->committed_ms, 2000);
	CU_ASSERT_TRUE_FATAL(s_wait(&e, s_idle, NULL));
	e.nres = 0;

	s_make(&e, "last", 3);
	rr_persister_submit(e.p, "last", 3000, 1);
	r = s_result(&e, "last");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_EQUAL(r->urgent, 1);
	CU_ASSERT_TRUE_FATAL(s_wait(&e, s_idle, NULL));
	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, FX_RUN, "last"), 0);
	json = fx_get_str(&e.f, key);
	CU_ASSERT_PTR_NOT_NULL_FATAL(json);
	CU_ASSERT_EQUAL_FATAL(rr_manifest_parse(json, strlen(json), &m, NULL, 0), 0);
	CU_ASSERT_EQUAL(m->committed_unix_ms, 3000);
	rr_manifest_destroy(m);
	free(json);
	s_teardown(&e);
}

/* A stray far-future name restored from the store (the baseline) must not make later
 * commits "not newer": they are persisted by commit time, the notice's (urgent) one too,
 * while LATEST, which orders by step number, stays where it is. */
static void test_persister_persists_commits_after_far_future_name(void)
{
	struct s_env e;
	struct rr_manifest *stray = NULL;
	const struct rr_persist_result *r;
	char latest[256], key[RR_KEY_MAX];
	struct rr_buf b;

	s_env_init(&e);
	s_make(&e, "step-9999999999", 1);
	s_make(&e, "step-200", 2);
	s_make(&e, "step-300", 3);
	CU_ASSERT_EQUAL_FATAL(fx_persist(&e.f, "step-9999999999", 1000, NULL, &stray, NULL), 0);
	rr_buf_init(&b, 64 * 1024);
	CU_ASSERT_EQUAL_FATAL(rr_latest_to_json("step-9999999999", 1000, "other-host", &b), 0);
	CU_ASSERT_EQUAL_FATAL(rr_key_latest(key, FX_RUN), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_put(e.f.s, key, b.data, b.len, NULL, NULL), 0);
	rr_buf_free(&b);
	s_start(&e, 3, stray); /* taken over */

	rr_persister_submit(e.p, "step-200", 2000, 0);
	r = s_result(&e, "step-200");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "step-200"));
	CU_ASSERT_TRUE_FATAL(s_wait(&e, s_idle, NULL));

	rr_persister_submit(e.p, "step-300", 3000, 1);
	r = s_result(&e, "step-300");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_EQUAL(r->urgent, 1);
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "step-300"));
	CU_ASSERT_TRUE_FATAL(s_wait(&e, s_idle, NULL));

	/* Still not persisted twice, nor anything older by both name and time. */
	e.nres = 0;
	rr_persister_submit(e.p, "step-300", 3000, 0);
	rr_persister_submit(e.p, "step-200", 2000, 0);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	s_collect(&e);
	CU_ASSERT_EQUAL(e.nres, 0);
	s_latest(&e, latest, sizeof(latest));
	CU_ASSERT_STRING_EQUAL(latest, "step-9999999999"); /* orders by step number */
	s_teardown(&e);
}

/* The store's newest came from a machine whose clock was 2 minutes ahead of this one's.
 * A later checkpoint named by a step in a form the order did not know (Megatron's
 * iter_0000300, accelerate's checkpoint_3) sorted before it by commit time and was dropped
 * as "not newer", and so was a notice's checkpoint: never persisted, nothing said. */
static void test_persister_persists_commits_after_a_newest_from_a_clock_ahead(void)
{
	struct s_env e;
	struct rr_manifest *ahead = NULL;
	const struct rr_persist_result *r;

	s_env_init(&e);
	s_make(&e, "iter_0000200", 1);
	s_make(&e, "iter_0000300", 2);
	s_make(&e, "final", 3);
	CU_ASSERT_EQUAL_FATAL(fx_persist(&e.f, "iter_0000200", 120000 + 5000, NULL, &ahead, NULL),
			      0);
	s_start(&e, 3, ahead); /* taken over */

	rr_persister_submit(e.p, "iter_0000300", 5000, 0);
	r = s_result(&e, "iter_0000300");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_TRUE_FATAL(s_wait(&e, s_idle, NULL));

	/* No step number at all, older by the clock: a notice's checkpoint is persisted all
	 * the same (the agent's loop took it for the newest). */
	rr_persister_submit(e.p, "final", 6000, 1);
	r = s_result(&e, "final");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_EQUAL(r->urgent, 1);
	CU_ASSERT_TRUE(fx_has_manifest(&e.f, "final"));
	s_teardown(&e);
}

/* The throughput a notice's estimate starts from: the baseline until the first persist,
 * then the newest persisted checkpoint with its changed share. */
static void test_persister_throughput_follows_persists(void)
{
	struct s_env e;
	struct rr_manifest *m2 = NULL;
	struct rr_throughput t;
	const struct rr_persist_result *r;
	int64_t before = rr_wall_ms();

	s_env_init(&e);
	s_make(&e, "step-2", 2);
	s_make(&e, "step-3", 2); /* same weights as step-2 */
	CU_ASSERT_EQUAL_FATAL(fx_persist(&e.f, "step-2", 2000, NULL, &m2, NULL), 0);
	s_start(&e, 3, m2); /* taken over */

	rr_persister_throughput(e.p, &t);
	CU_ASSERT_STRING_EQUAL(t.last_name, "step-2");
	CU_ASSERT_EQUAL(t.last_bytes, 256 * 1024 + strlen("{\"hidden\": 64}\n"));
	CU_ASSERT_DOUBLE_EQUAL(t.last_new_fraction, 1.0, 1e-9);
	CU_ASSERT_EQUAL(t.last_durable_ms, 0);
	CU_ASSERT_EQUAL(t.samples, 0);
	CU_ASSERT_DOUBLE_EQUAL(t.bps, RR_THROUGHPUT_SEED_REMOTE_BPS, 1); /* no URL: remote */

	rr_persister_submit(e.p, "step-3", 3000, 0);
	r = s_result(&e, "step-3");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	rr_persister_throughput(e.p, &t);
	CU_ASSERT_STRING_EQUAL(t.last_name, "step-3");
	CU_ASSERT_EQUAL(t.last_bytes, r->stats.bytes);
	CU_ASSERT(t.last_durable_ms >= before);
	/* Only the manifest-sized remainder is new: the weights were reused. */
	CU_ASSERT(t.last_new_fraction < 0.5);
	CU_ASSERT_DOUBLE_EQUAL(t.last_new_fraction,
			       (double)r->stats.new_bytes / (double)r->stats.stored_bytes, 1e-9);
	s_teardown(&e);
}

/* Multi-node: the agent that sees every part in the store but cannot write the commit
 * manifest reports the persist failed (the checkpoint is not durable: a notice waiting on it
 * must not be told otherwise); submitted again, the part is found stored and the commit is
 * written. */
static void test_persister_multinode_commit_that_fails_is_a_failed_persist(void)
{
	struct rr_persister_config cfg;
	const struct rr_persist_result *r;
	struct rr_persister *node0 = NULL;
	struct s_gate g;
	struct s_env e;
	char key[RR_KEY_MAX], *text, latest[64];

	s_env_init(&e);
	s_make(&e, "step-1", 1);
	/* Node 0's part first, on the store itself: one of two, not committed. */
	cfg = s_config(&e.f, 0);
	cfg.nnodes = 2;
	cfg.node_rank = 0;
	CU_ASSERT_EQUAL_FATAL(rr_persister_new(&cfg, NULL, &node0), 0);
	e.p = node0;
	rr_persister_submit(e.p, "step-1", 1000, 1);
	r = s_result(&e, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, 0);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	rr_persister_destroy(node0);
	e.p = NULL;
	e.nres = 0;

	/* Node 1, the last part, where the commit manifest's put fails. */
	s_gate_init(&g, e.f.s, "/manifest.json");
	g.fail = 1;
	cfg.store = &g.base;
	cfg.node_rank = 1;
	CU_ASSERT_EQUAL_FATAL(rr_persister_new(&cfg, NULL, &e.p), 0);
	rr_persister_submit(e.p, "step-1", 1000, 1);
	r = s_result(&e, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(r->rc, RR_EIO);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, FX_RUN, "step-1"), 0);
	text = fx_get_str(&e.f, key);
	CU_ASSERT_PTR_NULL(text);
	free(text);

	/* The store writes again: the same checkpoint submitted again is committed. */
	pthread_mutex_lock(&g.lock);
	g.fail = 0;
	g.closed = 0;
	pthread_mutex_unlock(&g.lock);
	e.nres = 0;
	rr_persister_submit(e.p, "step-1", 1000, 1);
	r = s_result(&e, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT(r->rc == 0 || r->rc == RR_EEXIST);
	CU_ASSERT_TRUE(s_wait(&e, s_idle, NULL));
	text = fx_get_str(&e.f, key);
	CU_ASSERT_PTR_NOT_NULL(text);
	free(text);
	s_latest(&e, latest, sizeof(latest));
	CU_ASSERT_STRING_EQUAL(latest, "step-1");
	s_teardown_gated(&e, &g);
}

static CU_TestInfo s_tests[] = {
	{ "persister_persists_commits_after_a_newest_from_a_clock_ahead",
	  test_persister_persists_commits_after_a_newest_from_a_clock_ahead },
	{ "persister_multinode_commit_that_fails_is_a_failed_persist",
	  test_persister_multinode_commit_that_fails_is_a_failed_persist },
	{ "persister_stepless_name_after_a_restore_from_a_clock_ahead",
	  test_persister_stepless_name_after_a_restore_from_a_clock_ahead },
	{ "persister_persists_commits_after_far_future_name",
	  test_persister_persists_commits_after_far_future_name },
	{ "persister_persists_submitted_checkpoint", test_persister_persists_submitted_checkpoint },
	{ "persister_urgent_submission_is_reported_urgent",
	  test_persister_urgent_submission_is_reported_urgent },
	{ "persister_ignores_submission_older_than_persisted",
	  test_persister_ignores_submission_older_than_persisted },
	{ "persister_baseline_makes_older_submissions_ignored",
	  test_persister_baseline_makes_older_submissions_ignored },
	{ "persister_reports_eexist_for_checkpoint_already_in_store",
	  test_persister_reports_eexist_for_checkpoint_already_in_store },
	{ "persister_reports_enoent_for_vanished_checkpoint",
	  test_persister_reports_enoent_for_vanished_checkpoint },
	{ "persister_record_writes_ledger_event", test_persister_record_writes_ledger_event },
	{ "persister_applies_retention_with_keep_one",
	  test_persister_applies_retention_with_keep_one },
	{ "persister_reuses_segments_of_previous_checkpoint",
	  test_persister_reuses_segments_of_previous_checkpoint },
	{ "persister_does_not_move_latest_backwards",
	  test_persister_does_not_move_latest_backwards },
	{ "persister_a_later_commit_sorting_before_the_queued_one_leaves_it",
	  test_persister_a_later_commit_sorting_before_the_queued_one_leaves_it },
	{ "persister_newest_queued_checkpoint_wins", test_persister_newest_queued_checkpoint_wins },
	{ "persister_urgent_sorting_before_the_running_one_leaves_it",
	  test_persister_urgent_sorting_before_the_running_one_leaves_it },
	{ "persister_urgent_submission_sets_aside_older_persist_in_progress",
	  test_persister_urgent_submission_sets_aside_older_persist_in_progress },
	{ "persister_urgent_submission_cancels_store_requests_in_flight",
	  test_persister_urgent_submission_cancels_store_requests_in_flight },
	{ "persister_urgent_submission_lets_a_committed_checkpoint_finish",
	  test_persister_urgent_submission_lets_a_committed_checkpoint_finish },
	{ "persister_cancel_during_event_does_not_cancel_later_checkpoint",
	  test_persister_cancel_during_event_does_not_cancel_later_checkpoint },
	{ "persister_cancel_drops_queued_checkpoint", test_persister_cancel_drops_queued_checkpoint },
	{ "persister_drop_sets_aside_a_suspect_persist_and_rewinds_safely",
	  test_persister_drop_sets_aside_a_suspect_persist_and_rewinds_safely },
	{ "persister_destroy_while_idle_is_clean", test_persister_destroy_while_idle_is_clean },
	{ "persister_destroy_after_work_is_clean", test_persister_destroy_after_work_is_clean },
	{ "throughput follows persists", test_persister_throughput_follows_persists },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("persister", s_tests)
