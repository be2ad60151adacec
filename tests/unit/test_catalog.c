/* CUnit suite "catalog": rr_catalog_load and friends against a real file store. Checkpoints
 * are small (one or two files) since only what the store holds matters here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/catalog.h"
#include "rr/error.h"
#include "rr/manifest.h"
#include "rr/persist.h"
#include "rr/seal.h"
#include "rr/store_sealed.h"

#include "ckpt_fixture.h"
#include "cunit_main.h"

/* Persists a two-file checkpoint whose contents depend on seed; returns its manifest. */
static struct rr_manifest *s_ckpt(struct fx *f, const char *name, uint64_t seed, int64_t ms)
{
	struct rr_manifest *m = NULL;
	char *d = fx_ckpt(f, name);
	fx_write_random(d, "weights.bin", 64 * 1024, seed, 0644);
	fx_write_str(d, "meta/info.json", "{\"kind\": \"test\"}\n", 0644);
	free(d);
	CU_ASSERT_EQUAL_FATAL(fx_persist(f, name, ms, NULL, &m, NULL), 0);
	return m;
}

static void s_ckpt_drop(struct fx *f, const char *name, uint64_t seed, int64_t ms)
{
	rr_manifest_destroy(s_ckpt(f, name, seed, ms));
}

static void s_put_latest(struct fx *f, const char *text)
{
	char key[RR_KEY_MAX];
	CU_ASSERT_EQUAL_FATAL(rr_key_latest(key, FX_RUN), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_put(f->s, key, text, strlen(text), NULL, NULL), 0);
}

static void test_catalog_of_empty_run_is_empty(void)
{
	struct fx f;
	struct rr_catalog *c = NULL;

	fx_init(&f);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(c->n, 0);
	CU_ASSERT_EQUAL(c->nchunks, 0);
	CU_ASSERT_STRING_EQUAL(c->latest, "");
	CU_ASSERT_PTR_NULL(rr_catalog_newest(c));
	CU_ASSERT_PTR_NULL(rr_catalog_find(c, "step-1"));
	rr_catalog_destroy(c);
	rr_catalog_destroy(NULL);
	fx_done(&f);
}

static void test_catalog_lists_persisted_checkpoint_as_committed(void)
{
	struct fx f;
	struct rr_catalog *c = NULL;
	struct rr_manifest *m;

	fx_init(&f);
	m = s_ckpt(&f, "step-1", 1, 1000);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL_FATAL(c->n, 1);
	CU_ASSERT_STRING_EQUAL(c->entries[0].name, "step-1");
	CU_ASSERT_PTR_NOT_NULL(c->entries[0].manifest);
	CU_ASSERT_EQUAL(c->entries[0].committed, 1);
	CU_ASSERT_STRING_EQUAL(c->entries[0].problem, "");
	CU_ASSERT_EQUAL(c->nchunks, fx_count_chunks(&f));
	CU_ASSERT_EQUAL(c->nchunks, 2);
	for (size_t i = 0; i < m->nfiles; i++)
		CU_ASSERT_TRUE(rr_catalog_has_chunk(c, m->files[i].segs[0].chunks[0].sha256));
	CU_ASSERT_FALSE(rr_catalog_has_chunk(
		c, "0000000000000000000000000000000000000000000000000000000000000000"));
	CU_ASSERT_PTR_EQUAL(rr_catalog_newest(c), &c->entries[0]);
	rr_catalog_destroy(c);
	rr_manifest_destroy(m);
	fx_done(&f);
}

static void test_catalog_missing_chunk_makes_checkpoint_incomplete(void)
{
	struct fx f;
	struct rr_catalog *c = NULL;
	struct rr_manifest *m2;
	char sha[RR_SHA256_HEX_LEN + 1];

	fx_init(&f);
	s_ckpt_drop(&f, "step-1", 1, 1000);
	m2 = s_ckpt(&f, "step-2", 2, 2000);
	snprintf(sha, sizeof(sha), "%s", fx_first_chunk(m2, "weights.bin"));
	fx_delete_chunk(&f, sha);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL_FATAL(c->n, 2);
	/* Still listed first (its manifest is fine), but not committed. */
	CU_ASSERT_STRING_EQUAL(c->entries[0].name, "step-2");
	CU_ASSERT_PTR_NOT_NULL(c->entries[0].manifest);
	CU_ASSERT_EQUAL(c->entries[0].committed, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(c->entries[0].problem, "missing"));
	CU_ASSERT_PTR_NOT_NULL(strstr(c->entries[0].problem, "weights.bin"));
	CU_ASSERT_FALSE(rr_catalog_has_chunk(c, sha));
	/* The newest committed one is the older checkpoint. */
	CU_ASSERT_PTR_NOT_NULL_FATAL(rr_catalog_newest(c));
	CU_ASSERT_STRING_EQUAL(rr_catalog_newest(c)->name, "step-1");
	rr_catalog_destroy(c);
	rr_manifest_destroy(m2);
	fx_done(&f);
}

/* An unreadable manifest stands where its name puts it (the walk from the newest, at a
 * machine's start, passes it there and says why), never taken for the newest committed. */
static void test_catalog_garbage_manifest_stands_in_its_order_with_problem(void)
{
	struct fx f;
	struct rr_catalog *c = NULL;
	static const char garbage[] = "{\"format\": \"resume-run/manifest-1\", oops";

	fx_init(&f);
	s_ckpt_drop(&f, "step-1", 1, 1000);
	s_ckpt_drop(&f, "step-2", 2, 2000);
	fx_put_manifest_bytes(&f, "step-99", garbage, strlen(garbage));
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL_FATAL(c->n, 3);
	CU_ASSERT_STRING_EQUAL(c->entries[0].name, "step-99");
	CU_ASSERT_PTR_NULL(c->entries[0].manifest);
	CU_ASSERT_EQUAL(c->entries[0].committed, 0);
	CU_ASSERT_NOT_EQUAL(c->entries[0].problem[0], '\0');
	CU_ASSERT_STRING_EQUAL(c->entries[1].name, "step-2");
	CU_ASSERT_STRING_EQUAL(c->entries[2].name, "step-1");
	CU_ASSERT_STRING_EQUAL(rr_catalog_newest(c)->name, "step-2");
	rr_catalog_destroy(c);
	fx_done(&f);
}

static void test_catalog_rejects_manifest_stored_under_another_name(void)
{
	struct fx f;
	struct rr_catalog *c = NULL;
	char key[RR_KEY_MAX], *json;
	const struct rr_catalog_entry *e;

	fx_init(&f);
	s_ckpt_drop(&f, "step-1", 1, 1000);
	/* step-1's manifest copied to step-50: valid JSON and checksum, wrong name. */
	CU_ASSERT_EQUAL(rr_key_manifest(key, FX_RUN, "step-1"), 0);
	json = fx_get_str(&f, key);
	CU_ASSERT_PTR_NOT_NULL_FATAL(json);
	fx_put_manifest_bytes(&f, "step-50", json, strlen(json));
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	e = rr_catalog_find(c, "step-50");
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_PTR_NULL(e->manifest);
	CU_ASSERT_EQUAL(e->committed, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(e->problem, "another checkpoint"));
	CU_ASSERT_STRING_EQUAL(rr_catalog_newest(c)->name, "step-1");
	free(json);
	rr_catalog_destroy(c);
	fx_done(&f);
}

static void test_catalog_orders_newest_first_by_step_number(void)
{
	struct fx f;
	struct rr_catalog *c = NULL;

	fx_init(&f);
	/* Commit times disagree with the step numbers on purpose: steps decide. */
	s_ckpt_drop(&f, "step-9", 9, 5000);
	s_ckpt_drop(&f, "step-10", 10, 1000);
	s_ckpt_drop(&f, "step-2", 2, 9000);
	s_ckpt_drop(&f, "step-100", 100, 10);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL_FATAL(c->n, 4);
	CU_ASSERT_STRING_EQUAL(c->entries[0].name, "step-100");
	CU_ASSERT_STRING_EQUAL(c->entries[1].name, "step-10");
	CU_ASSERT_STRING_EQUAL(c->entries[2].name, "step-9");
	CU_ASSERT_STRING_EQUAL(c->entries[3].name, "step-2");
	CU_ASSERT_STRING_EQUAL(rr_catalog_newest(c)->name, "step-100");
	rr_catalog_destroy(c);
	fx_done(&f);
}

static void test_catalog_orders_other_names_by_commit_time(void)
{
	struct fx f;
	struct rr_catalog *c = NULL;

	fx_init(&f);
	s_ckpt_drop(&f, "zeta", 1, 1000);
	s_ckpt_drop(&f, "alpha", 2, 3000);
	s_ckpt_drop(&f, "mid", 3, 2000);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL_FATAL(c->n, 3);
	CU_ASSERT_STRING_EQUAL(c->entries[0].name, "alpha");
	CU_ASSERT_STRING_EQUAL(c->entries[1].name, "mid");
	CU_ASSERT_STRING_EQUAL(c->entries[2].name, "zeta");
	rr_catalog_destroy(c);
	fx_done(&f);
}

static void test_catalog_reads_latest(void)
{
	struct fx f;
	struct rr_catalog *c = NULL;
	struct rr_buf b;

	fx_init(&f);
	s_ckpt_drop(&f, "step-1", 1, 1000);
	s_ckpt_drop(&f, "step-2", 2, 2000);
	/* LATEST is a hint and may lag: it names step-1 while step-2 is newest. */
	rr_buf_init(&b, 64 * 1024);
	CU_ASSERT_EQUAL_FATAL(rr_latest_to_json("step-1", 1234, "host-a", &b), 0);
	s_put_latest(&f, (const char *)b.data);
	rr_buf_free(&b);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_STRING_EQUAL(c->latest, "step-1");
	CU_ASSERT_STRING_EQUAL(rr_catalog_newest(c)->name, "step-2");
	rr_catalog_destroy(c);
	fx_done(&f);
}

static void test_catalog_unreadable_latest_is_ignored(void)
{
	struct fx f;
	struct rr_catalog *c = NULL;

	fx_init(&f);
	s_ckpt_drop(&f, "step-1", 1, 1000);
	s_put_latest(&f, "not json at all");
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_STRING_EQUAL(c->latest, "");
	CU_ASSERT_EQUAL(c->n, 1);
	rr_catalog_destroy(c);
	fx_done(&f);
}

static void test_catalog_find_returns_entry_or_null(void)
{
	struct fx f;
	struct rr_catalog *c = NULL;
	const struct rr_catalog_entry *e;

	fx_init(&f);
	s_ckpt_drop(&f, "step-1", 1, 1000);
	s_ckpt_drop(&f, "step-2", 2, 2000);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	e = rr_catalog_find(c, "step-1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_STRING_EQUAL(e->name, "step-1");
	CU_ASSERT_STRING_EQUAL(e->manifest->checkpoint, "step-1");
	CU_ASSERT_EQUAL(e->manifest->committed_unix_ms, 1000);
	CU_ASSERT_PTR_NULL(rr_catalog_find(c, "step-3"));
	CU_ASSERT_PTR_NULL(rr_catalog_find(c, "step"));
	CU_ASSERT_PTR_NULL(rr_catalog_find(c, ""));
	rr_catalog_destroy(c);
	fx_done(&f);
}

static void test_catalog_ignores_other_runs(void)
{
	struct fx f;
	struct rr_catalog *c = NULL;
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats st;
	char *d;

	fx_init(&f);
	s_ckpt_drop(&f, "step-1", 1, 1000);
	d = fx_ckpt(&f, "step-7");
	fx_write_random(d, "other.bin", 4096, 77, 0644);
	free(d);
	o.run_id = "run-other"; /* shares the prefix "run" */
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(f.s, f.ckpt_dir, "step-7", 7000, &o, NULL, &st),
			      0);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(c->n, 1);
	CU_ASSERT_STRING_EQUAL(c->entries[0].name, "step-1");
	CU_ASSERT_EQUAL(c->nchunks, 2);
	rr_catalog_destroy(c);
	fx_done(&f);
}

static struct rr_seal_key *s_key(const char *hex)
{
	struct rr_seal_key *k = NULL;
	CU_ASSERT_EQUAL_FATAL(rr_seal_key_parse(hex, strlen(hex), &k, NULL, 0), 0);
	return k;
}

#define S_KEY1 "8f3a0c1d2e4b5a6978877665544332211000ffeeddccbbaa9988776655443322"
#define S_KEY2 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* With encryption: a key that opens no manifest is an error for the whole run (nothing to
 * fall back through); one manifest that does not open beside others that do is damage. */
static void test_catalog_encrypted_run_needs_its_key(void)
{
	struct fx f;
	struct rr_catalog *c = NULL;
	struct rr_store *plain = NULL, *other = NULL, *other_inner = NULL;
	char key[RR_KEY_MAX];
	struct rr_buf raw;

	fx_init(&f);
	CU_ASSERT_EQUAL_FATAL(rr_store_sealed_new(f.s, s_key(S_KEY1), &f.s), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_file_new(f.store_dir, &plain), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_file_new(f.store_dir, &other_inner), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_sealed_new(other_inner, s_key(S_KEY2), &other), 0);
	s_ckpt_drop(&f, "step-1", 1, 1000);
	s_ckpt_drop(&f, "step-2", 2, 2000);

	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(c->n, 2);
	CU_ASSERT_STRING_EQUAL(rr_catalog_newest(c)->name, "step-2");
	rr_catalog_destroy(c);

	CU_ASSERT_EQUAL(rr_catalog_load(plain, FX_RUN, &c), RR_EKEY);
	CU_ASSERT_PTR_NULL(c);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EKEY), "--encryption-key-file"));
	CU_ASSERT_EQUAL(rr_catalog_load(other, FX_RUN, &c), RR_EKEY);
	CU_ASSERT_PTR_NULL(c);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EKEY), "another key"));

	/* step-2's manifest with a changed key id: damage, step-1 is the newest. */
	rr_buf_init(&raw, RR_MANIFEST_MAX_BYTES + RR_SEAL_OVERHEAD);
	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, FX_RUN, "step-2"), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_get(plain, key, &raw, NULL), 0);
	raw.data[RR_SEAL_MAGIC_LEN + 1] ^= 1;
	CU_ASSERT_EQUAL_FATAL(rr_store_put(plain, key, raw.data, raw.len, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_STRING_EQUAL(rr_catalog_newest(c)->name, "step-1");
	const struct rr_catalog_entry *e = rr_catalog_find(c, "step-2");
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_FALSE(e->committed);
	CU_ASSERT_PTR_NOT_NULL(strstr(e->problem, "another key"));
	rr_catalog_destroy(c);

	/* Two damaged so, beside step-1 intact: still damage, not a wrong key for the run (the
	 * second failure ended the listing: ls, gc and restore failed with no fallback). */
	s_ckpt_drop(&f, "step-3", 3, 3000);
	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, FX_RUN, "step-3"), 0);
	rr_buf_reset(&raw);
	CU_ASSERT_EQUAL_FATAL(rr_store_get(plain, key, &raw, NULL), 0);
	raw.data[RR_SEAL_MAGIC_LEN + 1] ^= 1;
	CU_ASSERT_EQUAL_FATAL(rr_store_put(plain, key, raw.data, raw.len, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_STRING_EQUAL(rr_catalog_newest(c)->name, "step-1");
	CU_ASSERT(rr_catalog_find(c, "step-3") && !rr_catalog_find(c, "step-3")->committed);
	rr_catalog_destroy(c);
	rr_buf_free(&raw);
	rr_store_destroy(plain);
	rr_store_destroy(other);
	fx_done(&f);
}

static CU_TestInfo s_tests[] = {
	{ "catalog_encrypted_run_needs_its_key", test_catalog_encrypted_run_needs_its_key },
	{ "catalog_of_empty_run_is_empty", test_catalog_of_empty_run_is_empty },
	{ "catalog_lists_persisted_checkpoint_as_committed",
	  test_catalog_lists_persisted_checkpoint_as_committed },
	{ "catalog_missing_chunk_makes_checkpoint_incomplete",
	  test_catalog_missing_chunk_makes_checkpoint_incomplete },
	{ "catalog_garbage_manifest_stands_in_its_order_with_problem",
	  test_catalog_garbage_manifest_stands_in_its_order_with_problem },
	{ "catalog_rejects_manifest_stored_under_another_name",
	  test_catalog_rejects_manifest_stored_under_another_name },
	{ "catalog_orders_newest_first_by_step_number",
	  test_catalog_orders_newest_first_by_step_number },
	{ "catalog_orders_other_names_by_commit_time",
	  test_catalog_orders_other_names_by_commit_time },
	{ "catalog_reads_latest", test_catalog_reads_latest },
	{ "catalog_unreadable_latest_is_ignored", test_catalog_unreadable_latest_is_ignored },
	{ "catalog_find_returns_entry_or_null", test_catalog_find_returns_entry_or_null },
	{ "catalog_ignores_other_runs", test_catalog_ignores_other_runs },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("catalog", s_tests)
