/* CUnit suite "store_sealed": the encrypting store wrapper over a real file:// store. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/fsutil.h"
#include "rr/hash.h"
#include "rr/seal.h"
#include "rr/store.h"
#include "rr/store_sealed.h"

#include "cunit_main.h"

#define S_KEY "8f3a0c1d2e4b5a6978877665544332211000ffeeddccbbaa9988776655443322"
#define S_OTHER "1111111111111111111111111111111111111111111111111111111111111111"

struct s_fix {
	char root[64];
	char url[128];
	char keyfile[128];
	char otherfile[128];
	struct rr_store *sealed, *plain;
};

static void s_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
	chmod(path, 0600);
}

static void s_setup(struct s_fix *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->root, sizeof(f->root), "/tmp/rr_sealed_XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(f->root));
	snprintf(f->url, sizeof(f->url), "file://%s/store", f->root);
	snprintf(f->keyfile, sizeof(f->keyfile), "%s/key", f->root);
	snprintf(f->otherfile, sizeof(f->otherfile), "%s/other", f->root);
	s_write(f->keyfile, S_KEY "\n");
	s_write(f->otherfile, S_OTHER);
	CU_ASSERT_EQUAL_FATAL(rr_store_open(f->url, &(struct rr_store_opts){
		.encryption_key_file = f->keyfile }, &f->sealed), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_open(f->url, NULL, &f->plain), 0);
}

static void s_teardown(struct s_fix *f)
{
	rr_store_destroy(f->sealed);
	rr_store_destroy(f->plain);
	CU_ASSERT_EQUAL(rr_remove_tree(f->root), 0);
}

static const char s_body[] = "{\"path\":\"secret_model.safetensors\",\"tensor\":\"layer0.weight\"}";

static void test_store_sealed_round_trip_and_nothing_readable_underneath(void)
{
	struct s_fix f;
	struct rr_buf b;

	s_setup(&f);
	CU_ASSERT_STRING_EQUAL(f.sealed->url, f.url);
	CU_ASSERT_EQUAL(rr_store_put(f.sealed, "run/LATEST", s_body, strlen(s_body), NULL, NULL), 0);
	rr_buf_init(&b, 1 << 20);
	CU_ASSERT_EQUAL(rr_store_get(f.sealed, "run/LATEST", &b, NULL), 0);
	CU_ASSERT_EQUAL(b.len, strlen(s_body));
	CU_ASSERT_STRING_EQUAL((char *)b.data, s_body);
	rr_buf_reset(&b);
	/* What the backend holds is sealed: no plaintext, the header in front. */
	CU_ASSERT_EQUAL(rr_store_get(f.plain, "run/LATEST", &b, NULL), 0);
	CU_ASSERT_EQUAL(b.len, strlen(s_body) + RR_SEAL_OVERHEAD);
	CU_ASSERT(rr_seal_is_sealed(b.data, b.len));
	CU_ASSERT_PTR_NULL(memmem(b.data, b.len, "secret_model", 12));
	CU_ASSERT_PTR_NULL(memmem(b.data, b.len, "layer0", 6));
	rr_buf_free(&b);
	s_teardown(&f);
}

static void test_store_sealed_get_appends_and_keeps_the_plaintext_ceiling(void)
{
	struct s_fix f;
	struct rr_buf b;
	size_t n = strlen(s_body);

	s_setup(&f);
	CU_ASSERT_EQUAL(rr_store_put(f.sealed, "k", s_body, n, NULL, NULL), 0);
	/* The ceiling is for the plaintext: exactly its size fits, one byte less does not. */
	rr_buf_init(&b, 3 + n);
	CU_ASSERT_EQUAL(rr_buf_append(&b, "ab:", 3), 0);
	CU_ASSERT_EQUAL(rr_store_get(f.sealed, "k", &b, NULL), 0);
	CU_ASSERT_EQUAL(b.len, 3 + n);
	CU_ASSERT_EQUAL(memcmp(b.data, "ab:", 3), 0);
	CU_ASSERT_EQUAL(memcmp(b.data + 3, s_body, n), 0);
	CU_ASSERT_EQUAL(b.max, 3 + n);
	rr_buf_free(&b);
	rr_buf_init(&b, n - 1);
	CU_ASSERT_EQUAL(rr_store_get(f.sealed, "k", &b, NULL), RR_ETOOBIG);
	CU_ASSERT_EQUAL(b.max, n - 1);
	rr_buf_free(&b);
	s_teardown(&f);
}

static void test_store_sealed_object_copied_to_another_key_is_damage(void)
{
	struct s_fix f;
	struct rr_buf raw, b;

	s_setup(&f);
	CU_ASSERT_EQUAL(rr_store_put(f.sealed, "run/checkpoints/a/manifest.json", s_body,
				     strlen(s_body), NULL, NULL), 0);
	rr_buf_init(&raw, 1 << 20);
	rr_buf_init(&b, 1 << 20);
	CU_ASSERT_EQUAL(rr_store_get(f.plain, "run/checkpoints/a/manifest.json", &raw, NULL), 0);
	CU_ASSERT_EQUAL(rr_store_put(f.plain, "run/checkpoints/b/manifest.json", raw.data, raw.len,
				     NULL, NULL), 0);
	CU_ASSERT_EQUAL(rr_store_get(f.sealed, "run/checkpoints/b/manifest.json", &b, NULL),
			RR_ECORRUPT);
	CU_ASSERT_EQUAL(b.len, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_ECORRUPT), "tag mismatch"));
	/* A flipped byte in place is damage too. */
	raw.data[raw.len / 2] ^= 1;
	CU_ASSERT_EQUAL(rr_store_put(f.plain, "run/checkpoints/a/manifest.json", raw.data, raw.len,
				     NULL, NULL), 0);
	CU_ASSERT_EQUAL(rr_store_get(f.sealed, "run/checkpoints/a/manifest.json", &b, NULL),
			RR_ECORRUPT);
	rr_buf_free(&raw);
	rr_buf_free(&b);
	s_teardown(&f);
}

static void test_store_sealed_wrong_key_and_clear_objects_are_key_errors(void)
{
	struct s_fix f;
	struct rr_store *other = NULL;
	struct rr_buf b;

	s_setup(&f);
	CU_ASSERT_EQUAL(rr_store_put(f.sealed, "x", s_body, strlen(s_body), NULL, NULL), 0);
	CU_ASSERT_EQUAL(rr_store_put(f.plain, "clear", s_body, strlen(s_body), NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_open(f.url, &(struct rr_store_opts){
		.encryption_key_file = f.otherfile }, &other), 0);
	rr_buf_init(&b, 1 << 20);
	CU_ASSERT_EQUAL(rr_store_get(other, "x", &b, NULL), RR_EKEY);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EKEY), "another key"));
	CU_ASSERT_EQUAL(b.len, 0);
	CU_ASSERT_EQUAL(rr_store_get(f.sealed, "clear", &b, NULL), RR_EKEY);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EKEY), "not encrypted"));
	CU_ASSERT_EQUAL(rr_store_get(f.sealed, "missing", &b, NULL), RR_ENOENT);
	rr_buf_free(&b);
	rr_store_destroy(other);
	s_teardown(&f);
}

static void test_store_sealed_create_only_and_compare_and_swap_pass_through(void)
{
	struct s_fix f;
	char etag[RR_ETAG_MAX], etag2[RR_ETAG_MAX];
	struct rr_buf b;

	s_setup(&f);
	struct rr_put_opts create = { .if_none_match = 1 };
	CU_ASSERT_EQUAL(rr_store_put(f.sealed, "m", "one", 3, &create, etag), 0);
	CU_ASSERT_EQUAL(rr_store_put(f.sealed, "m", "two", 3, &create, NULL), RR_EEXIST);
	CU_ASSERT_EQUAL(rr_store_put(f.sealed, "m", "two", 3,
				     &(struct rr_put_opts){ .if_match = "nope" }, NULL), RR_EPRECOND);
	rr_buf_init(&b, 100);
	CU_ASSERT_EQUAL(rr_store_get(f.sealed, "m", &b, etag2), 0);
	CU_ASSERT_STRING_EQUAL(etag, etag2);
	CU_ASSERT_EQUAL(rr_store_put(f.sealed, "m", "three", 5,
				     &(struct rr_put_opts){ .if_match = etag2 }, NULL), 0);
	rr_buf_reset(&b);
	CU_ASSERT_EQUAL(rr_store_get(f.sealed, "m", &b, NULL), 0);
	CU_ASSERT_STRING_EQUAL((char *)b.data, "three");
	rr_buf_free(&b);
	s_teardown(&f);
}

static void test_store_sealed_chunk_address_is_keyed_only_when_sealed(void)
{
	struct s_fix f;
	char a[65], p[65], sha[65];
	static const char data[] = "chunk bytes";

	s_setup(&f);
	CU_ASSERT_EQUAL(rr_store_chunk_address(f.sealed, data, sizeof(data), a), 0);
	CU_ASSERT_EQUAL(rr_store_chunk_address(f.plain, data, sizeof(data), p), 0);
	rr_sha256_hex(data, sizeof(data), sha);
	CU_ASSERT_STRING_EQUAL(p, sha);
	CU_ASSERT_STRING_NOT_EQUAL(a, sha);
	CU_ASSERT(rr_is_sha256_hex(a));
	s_teardown(&f);
}

static void test_store_sealed_deadline_reaches_the_backend(void)
{
	struct s_fix f;

	s_setup(&f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f.sealed->inner);
	rr_store_set_deadline(f.sealed, 12345);
	CU_ASSERT_EQUAL(f.sealed->inner->deadline_mono_ms, 12345);
	rr_store_set_deadline(f.sealed, 0);
	CU_ASSERT_EQUAL(f.sealed->inner->deadline_mono_ms, 0);
	s_teardown(&f);
}

static void test_store_sealed_bad_key_file_fails_open_without_the_key(void)
{
	struct s_fix f;
	struct rr_store *s = (struct rr_store *)1;
	char path[160];

	s_setup(&f);
	snprintf(path, sizeof(path), "%s/short", f.root);
	s_write(path, "8f3a0c1d2e4b5a69\n");
	CU_ASSERT_EQUAL(rr_store_open(f.url, &(struct rr_store_opts){
		.encryption_key_file = path }, &s), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EINVAL), "16 hex digits"));
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EINVAL), path));
	CU_ASSERT_PTR_NULL(strstr(rr_store_strerror(RR_EINVAL), "8f3a"));
	snprintf(path, sizeof(path), "%s/absent", f.root);
	CU_ASSERT_EQUAL(rr_store_open(f.url, &(struct rr_store_opts){
		.encryption_key_file = path }, &s), RR_ENOENT);
	s_teardown(&f);
}

struct s_writer {
	struct rr_store *s;
	int id, failures;
};

/* Each writer puts big objects of its own pattern (the kept buffers are shared). */
static void *s_write_many(void *arg)
{
	struct s_writer *w = arg;
	size_t n = ((size_t)2 << 20) + (size_t)w->id * 4096;
	unsigned char *data = malloc(n);
	char key[64];

	for (int i = 0; data && i < 6; i++) {
		memset(data, 'a' + w->id + i, n);
		snprintf(key, sizeof(key), "big/%d-%d", w->id, i);
		if (rr_store_put(w->s, key, data, n - (size_t)i, NULL, NULL) != 0)
			w->failures++;
	}
	free(data);
	return NULL;
}

static void test_store_sealed_big_objects_from_many_threads_round_trip(void)
{
	struct s_fix f;
	pthread_t t[4];
	struct s_writer w[4];
	struct rr_buf b;
	char key[64];

	s_setup(&f);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct s_writer){ .s = f.sealed, .id = i };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, s_write_many, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CU_ASSERT_EQUAL(w[i].failures, 0);
	}
	rr_buf_init(&b, 4u << 20);
	for (int id = 0; id < 4; id++)
		for (int i = 0; i < 6; i++) {
			size_t n = ((size_t)2 << 20) + (size_t)id * 4096 - (size_t)i;
			snprintf(key, sizeof(key), "big/%d-%d", id, i);
			rr_buf_reset(&b);
			CU_ASSERT_EQUAL_FATAL(rr_store_get(f.sealed, key, &b, NULL), 0);
			CU_ASSERT_EQUAL(b.len, n);
			CU_ASSERT(b.data[0] == 'a' + id + i && b.data[n - 1] == 'a' + id + i);
		}
	rr_buf_free(&b);
	s_teardown(&f);
}

static void test_store_sealed_scratch_put_seals_in_place(void)
{
	struct s_fix f;
	size_t n = strlen(s_body), before;
	unsigned char *scratch = malloc(RR_SEAL_HEADER_LEN + n + RR_STORE_SCRATCH_AFTER);
	struct rr_buf b;

	CU_ASSERT_PTR_NOT_NULL_FATAL(scratch);
	s_setup(&f);
	rr_buf_init(&b, 1 << 20);
	/* A plain store needs no room and stores the bytes as they are. */
	CU_ASSERT_EQUAL(rr_store_scratch_before(f.plain), 0);
	memcpy(scratch, s_body, n);
	CU_ASSERT_EQUAL(rr_store_put_scratch(f.plain, "p", scratch, n, NULL, NULL), 0);
	CU_ASSERT_EQUAL(rr_store_get(f.plain, "p", &b, NULL), 0);
	CU_ASSERT(b.len == n && memcmp(b.data, s_body, n) == 0);
	/* A sealed store seals where the data is: the scratch now holds the sealed object. */
	before = rr_store_scratch_before(f.sealed);
	CU_ASSERT_EQUAL_FATAL(before, RR_SEAL_HEADER_LEN);
	memcpy(scratch + before, s_body, n);
	CU_ASSERT_EQUAL(rr_store_put_scratch(f.sealed, "run/chunks/ab/x", scratch + before, n,
					     &(struct rr_put_opts){ .if_none_match = 1 }, NULL), 0);
	CU_ASSERT(rr_seal_is_sealed(scratch, n + RR_SEAL_OVERHEAD));
	CU_ASSERT_PTR_NULL(memmem(scratch, n + RR_SEAL_OVERHEAD, "secret_model", 12));
	rr_buf_reset(&b);
	CU_ASSERT_EQUAL(rr_store_get(f.plain, "run/chunks/ab/x", &b, NULL), 0);
	CU_ASSERT(b.len == n + RR_SEAL_OVERHEAD && memcmp(b.data, scratch, b.len) == 0);
	rr_buf_reset(&b);
	CU_ASSERT_EQUAL(rr_store_get(f.sealed, "run/chunks/ab/x", &b, NULL), 0);
	CU_ASSERT(b.len == n && memcmp(b.data, s_body, n) == 0);
	/* Create-only still holds. */
	memcpy(scratch + before, s_body, n);
	CU_ASSERT_EQUAL(rr_store_put_scratch(f.sealed, "run/chunks/ab/x", scratch + before, n,
					     &(struct rr_put_opts){ .if_none_match = 1 }, NULL),
			RR_EEXIST);
	rr_buf_free(&b);
	free(scratch);
	s_teardown(&f);
}

static CU_TestInfo s_tests[] = {
	{ "store_sealed_scratch_put_seals_in_place", test_store_sealed_scratch_put_seals_in_place },
	{ "store_sealed_big_objects_from_many_threads_round_trip",
	  test_store_sealed_big_objects_from_many_threads_round_trip },
	{ "store_sealed_round_trip_and_nothing_readable_underneath",
	  test_store_sealed_round_trip_and_nothing_readable_underneath },
	{ "store_sealed_get_appends_and_keeps_the_plaintext_ceiling",
	  test_store_sealed_get_appends_and_keeps_the_plaintext_ceiling },
	{ "store_sealed_object_copied_to_another_key_is_damage",
	  test_store_sealed_object_copied_to_another_key_is_damage },
	{ "store_sealed_wrong_key_and_clear_objects_are_key_errors",
	  test_store_sealed_wrong_key_and_clear_objects_are_key_errors },
	{ "store_sealed_create_only_and_compare_and_swap_pass_through",
	  test_store_sealed_create_only_and_compare_and_swap_pass_through },
	{ "store_sealed_chunk_address_is_keyed_only_when_sealed",
	  test_store_sealed_chunk_address_is_keyed_only_when_sealed },
	{ "store_sealed_deadline_reaches_the_backend", test_store_sealed_deadline_reaches_the_backend },
	{ "store_sealed_bad_key_file_fails_open_without_the_key",
	  test_store_sealed_bad_key_file_fails_open_without_the_key },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("store_sealed", s_tests)
