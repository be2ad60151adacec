/* CUnit suite "store_file": the file:// backend and rr_store_open. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/fsutil.h"
#include "rr/hash.h"
#include "rr/store.h"

#include "cunit_main.h"

static char *s_mkdtemp(void)
{
	char tmpl[] = "/tmp/rr_store_file_XXXXXX";
	char *d = mkdtemp(tmpl);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	return strdup(d);
}

/* A fresh store in a new temp directory; *root_out is that directory (caller frees). */
static struct rr_store *s_new_store(char **root_out)
{
	struct rr_store *s = NULL;
	char *root = s_mkdtemp();

	CU_ASSERT_EQUAL_FATAL(rr_store_file_new(root, &s), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	*root_out = root;
	return s;
}

static void s_done(struct rr_store *s, char *root)
{
	rr_store_destroy(s);
	CU_ASSERT_EQUAL(rr_remove_tree(root), 0);
	free(root);
}

static int s_put_str(struct rr_store *s, const char *key, const char *v)
{
	return rr_store_put(s, key, v, strlen(v), NULL, NULL);
}

/* 1 when key holds exactly the string want. */
static int s_holds(struct rr_store *s, const char *key, const char *want)
{
	struct rr_buf b;
	int ok;

	rr_buf_init(&b, 1 << 20);
	ok = rr_store_get(s, key, &b, NULL) == 0 && b.len == strlen(want) &&
	     memcmp(b.data ? (const char *)b.data : "", want, b.len) == 0;
	rr_buf_free(&b);
	return ok;
}

static int s_path_exists(const char *root, const char *rel)
{
	struct stat st;
	char *p = rr_path_join(root, rel);
	int ok = p && lstat(p, &st) == 0;

	free(p);
	return ok;
}

/* Temp files anywhere under a root: dot-names other than the lock directory (whose lock
 * files are named by hex digits). nftw has no user pointer; callers are single-threaded. */
static int s_dot_count;
static int s_count_dot(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	if (path[ftw->base] == '.' && strcmp(path + ftw->base, ".locks") != 0)
		s_dot_count++;
	return 0;
}
static int s_temp_files_under(const char *root)
{
	s_dot_count = 0;
	CU_ASSERT_EQUAL(nftw(root, s_count_dot, 16, FTW_PHYS), 0);
	return s_dot_count;
}

/* Temp files another writer left (a PID-1 agent in another container, SIGKILLed mid-put,
 * had this process's pid and counters): n of them, named as this process's would be. */
static void s_litter_like_ours(const char *dir, const char *base, const char *tag, int n)
{
	char path[PATH_MAX];

	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(dir), 0);
	for (int i = 0; i < n; i++) {
		FILE *f;
		snprintf(path, sizeof(path), "%s/.%s.%s.%ld.%d", dir, base, tag, (long)getpid(), i);
		f = fopen(path, "w");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fclose(f);
	}
}

/* Such temp files are not this put's: it writes beside them, and a create-only put of a
 * new key is not refused as if the key existed. */
static void test_put_writes_beside_temp_files_another_writer_left(void)
{
	char *root, *dir;
	struct rr_store *s = s_new_store(&root);
	struct rr_put_opts create = { .if_none_match = 1 };

	dir = rr_path_join(root, "run");
	s_litter_like_ours(dir, "LATEST", "put", 5000);
	free(dir);
	dir = rr_path_join(root, "run/checkpoints/c1");
	s_litter_like_ours(dir, "manifest.json", "put", 5000);
	free(dir);
	CU_ASSERT_EQUAL(s_put_str(s, "run/LATEST", "c1"), 0);
	CU_ASSERT(s_holds(s, "run/LATEST", "c1"));
	CU_ASSERT_EQUAL(rr_store_put(s, "run/checkpoints/c1/manifest.json", "{}", 2, &create,
				     NULL), 0);
	CU_ASSERT(s_holds(s, "run/checkpoints/c1/manifest.json", "{}"));
	s_done(s, root);
}

static void test_put_get_round_trip(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	char put_tag[RR_ETAG_MAX], get_tag[RR_ETAG_MAX];
	const char *v = "chunk bytes \x00\x01\x02 end";
	size_t len = 20;
	struct rr_buf b;

	CU_ASSERT_EQUAL(rr_store_put(s, "run/chunks/ab/ab12", v, len, NULL, put_tag), 0);
	CU_ASSERT(s_path_exists(root, "run/chunks/ab/ab12"));
	rr_buf_init(&b, 1024);
	CU_ASSERT_EQUAL(rr_store_get(s, "run/chunks/ab/ab12", &b, get_tag), 0);
	CU_ASSERT_EQUAL(b.len, len);
	CU_ASSERT(memcmp(b.data, v, len) == 0);
	CU_ASSERT_STRING_EQUAL(put_tag, get_tag);
	rr_buf_free(&b);
	CU_ASSERT_EQUAL(s_temp_files_under(root), 0);
	s_done(s, root);
}

static void test_put_get_zero_length_object(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	char put_tag[RR_ETAG_MAX], get_tag[RR_ETAG_MAX];
	uint64_t size = 99;
	struct rr_buf b;

	CU_ASSERT_EQUAL(rr_store_put(s, "empty", NULL, 0, NULL, put_tag), 0);
	rr_buf_init(&b, 0);
	CU_ASSERT_EQUAL(rr_store_get(s, "empty", &b, get_tag), 0);
	CU_ASSERT_EQUAL(b.len, 0);
	CU_ASSERT_STRING_EQUAL(put_tag, get_tag);
	CU_ASSERT_EQUAL(rr_store_head(s, "empty", &size), 0);
	CU_ASSERT_EQUAL(size, 0);
	rr_buf_free(&b);
	s_done(s, root);
}

static void test_etag_is_first_32_hex_of_sha256(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	char tag[RR_ETAG_MAX], hex[RR_SHA256_HEX_LEN + 1];

	CU_ASSERT_EQUAL(rr_store_put(s, "k", "abc", 3, NULL, tag), 0);
	rr_sha256_hex("abc", 3, hex);
	hex[32] = '\0';
	CU_ASSERT_STRING_EQUAL(tag, hex);
	CU_ASSERT_STRING_EQUAL(tag, "ba7816bf8f01cfea414140de5dae2223");
	s_done(s, root);
}

static void test_get_missing_key_is_enoent(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	struct rr_buf b;
	uint64_t size;

	rr_buf_init(&b, 1024);
	CU_ASSERT_EQUAL(rr_store_get(s, "nope", &b, NULL), RR_ENOENT);
	CU_ASSERT_EQUAL(rr_store_get(s, "no/such/dir/key", &b, NULL), RR_ENOENT);
	CU_ASSERT_EQUAL(rr_store_head(s, "nope", &size), RR_ENOENT);
	CU_ASSERT_EQUAL(b.len, 0);
	rr_buf_free(&b);
	s_done(s, root);
}

static void test_get_of_a_key_prefix_directory_is_enoent(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	struct rr_buf b;
	uint64_t size;

	CU_ASSERT_EQUAL(s_put_str(s, "dir/key", "v"), 0);
	rr_buf_init(&b, 1024);
	CU_ASSERT_EQUAL(rr_store_get(s, "dir", &b, NULL), RR_ENOENT);
	CU_ASSERT_EQUAL(rr_store_head(s, "dir", &size), RR_ENOENT);
	CU_ASSERT_EQUAL(rr_store_del(s, "dir"), 0);
	CU_ASSERT(s_holds(s, "dir/key", "v"));
	rr_buf_free(&b);
	s_done(s, root);
}

static void test_get_beyond_buffer_ceiling_is_etoobig(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	struct rr_buf b;

	CU_ASSERT_EQUAL(s_put_str(s, "k", "0123456789"), 0);
	rr_buf_init(&b, 9);
	CU_ASSERT_EQUAL(rr_store_get(s, "k", &b, NULL), RR_ETOOBIG);
	CU_ASSERT_EQUAL(b.len, 0);
	b.max = 10;
	CU_ASSERT_EQUAL(rr_store_get(s, "k", &b, NULL), 0);
	CU_ASSERT_EQUAL(b.len, 10);
	rr_buf_free(&b);
	s_done(s, root);
}

static void test_put_replaces_unconditionally(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);

	CU_ASSERT_EQUAL(s_put_str(s, "k", "one"), 0);
	CU_ASSERT_EQUAL(s_put_str(s, "k", "two!"), 0);
	CU_ASSERT(s_holds(s, "k", "two!"));
	CU_ASSERT_EQUAL(s_temp_files_under(root), 0);
	s_done(s, root);
}

static void test_put_if_none_match_refuses_existing_key(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	struct rr_put_opts create = { .if_none_match = 1 };
	char tag[RR_ETAG_MAX];

	CU_ASSERT_EQUAL(rr_store_put(s, "run/checkpoints/c1/manifest.json", "first", 5, &create,
				     tag), 0);
	CU_ASSERT_EQUAL(rr_store_put(s, "run/checkpoints/c1/manifest.json", "second", 6,
				     &create, tag), RR_EEXIST);
	CU_ASSERT(s_holds(s, "run/checkpoints/c1/manifest.json", "first"));
	CU_ASSERT_EQUAL(s_temp_files_under(root), 0);
	s_done(s, root);
}

static void test_put_with_both_preconditions_is_einval(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	struct rr_put_opts both = { .if_none_match = 1, .if_match = "x" };

	CU_ASSERT_EQUAL(rr_store_put(s, "k", "v", 1, &both, NULL), RR_EINVAL);
	s_done(s, root);
}

static void test_put_if_match_stale_etag_is_eprecond_and_keeps_old(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	char tag1[RR_ETAG_MAX], tag2[RR_ETAG_MAX];
	struct rr_put_opts cas = { 0 };

	CU_ASSERT_EQUAL(rr_store_put(s, "run/LATEST", "c1", 2, NULL, tag1), 0);
	cas.if_match = tag1;
	CU_ASSERT_EQUAL(rr_store_put(s, "run/LATEST", "c2", 2, &cas, tag2), 0);
	/* an old machine still holding tag1 cannot point LATEST back */
	CU_ASSERT_EQUAL(rr_store_put(s, "run/LATEST", "c0", 2, &cas, NULL), RR_EPRECOND);
	CU_ASSERT(s_holds(s, "run/LATEST", "c2"));
	cas.if_match = "";
	CU_ASSERT_EQUAL(rr_store_put(s, "run/LATEST", "c0", 2, &cas, NULL), RR_EPRECOND);
	CU_ASSERT(s_holds(s, "run/LATEST", "c2"));
	CU_ASSERT_EQUAL(s_temp_files_under(root), 0);
	s_done(s, root);
}

static void test_put_if_match_current_etag_replaces(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	char tag[RR_ETAG_MAX], got[RR_ETAG_MAX], after[RR_ETAG_MAX];
	struct rr_put_opts cas = { 0 };
	struct rr_buf b;

	CU_ASSERT_EQUAL(s_put_str(s, "LATEST", "c1"), 0);
	rr_buf_init(&b, 100);
	CU_ASSERT_EQUAL(rr_store_get(s, "LATEST", &b, tag), 0);
	cas.if_match = tag;
	CU_ASSERT_EQUAL(rr_store_put(s, "LATEST", "c2", 2, &cas, after), 0);
	CU_ASSERT(s_holds(s, "LATEST", "c2"));
	rr_buf_reset(&b);
	CU_ASSERT_EQUAL(rr_store_get(s, "LATEST", &b, got), 0);
	CU_ASSERT_STRING_EQUAL(got, after);
	CU_ASSERT_STRING_NOT_EQUAL(got, tag);
	rr_buf_free(&b);
	s_done(s, root);
}

static void test_put_if_match_missing_key_is_enoent(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	struct rr_put_opts cas = { .if_match = "0123456789abcdef0123456789abcdef" };
	uint64_t size;

	CU_ASSERT_EQUAL(rr_store_put(s, "LATEST", "c1", 2, &cas, NULL), RR_ENOENT);
	CU_ASSERT_EQUAL(rr_store_head(s, "LATEST", &size), RR_ENOENT);
	CU_ASSERT_EQUAL(s_temp_files_under(root), 0);
	s_done(s, root);
}

static void test_head_reports_size(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	uint64_t size = 0;

	CU_ASSERT_EQUAL(s_put_str(s, "a/b", "12345"), 0);
	CU_ASSERT_EQUAL(rr_store_head(s, "a/b", &size), 0);
	CU_ASSERT_EQUAL(size, 5);
	CU_ASSERT_EQUAL(rr_store_head(s, "a/b", NULL), 0);
	s_done(s, root);
}

#define S_MAX_SEEN 16

struct s_seen {
	int n;
	char *keys[S_MAX_SEEN];
	uint64_t sizes[S_MAX_SEEN];
	int64_t mtimes[S_MAX_SEEN];
};

static int s_collect(const struct rr_store_entry *e, void *ud)
{
	struct s_seen *seen = ud;

	if (seen->n == S_MAX_SEEN)
		return 99;
	seen->keys[seen->n] = strdup(e->key);
	seen->sizes[seen->n] = e->size;
	seen->mtimes[seen->n] = e->mtime_unix_ms;
	seen->n++;
	return 0;
}

static int s_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists prefix and checks the keys are exactly want (sorted, NULL-terminated). */
static void s_check_list(struct rr_store *s, const char *prefix, const char *const *want)
{
	struct s_seen seen = { 0 };
	int n_want = 0;

	while (want[n_want])
		n_want++;
	CU_ASSERT_EQUAL_FATAL(rr_store_list(s, prefix, s_collect, &seen), 0);
	qsort(seen.keys, (size_t)seen.n, sizeof(seen.keys[0]), s_cmp_str);
	CU_ASSERT_EQUAL(seen.n, n_want);
	for (int i = 0; i < seen.n && i < n_want; i++) {
		CU_ASSERT_STRING_EQUAL(seen.keys[i], want[i]);
		if (strcmp(seen.keys[i], want[i]) != 0)
			fprintf(stderr, "\nlist(\"%s\"): got %s, want %s\n", prefix, seen.keys[i],
				want[i]);
	}
	for (int i = 0; i < seen.n; i++) {
		CU_ASSERT(seen.mtimes[i] > 1000000000000LL); /* after 2001, in ms */
		free(seen.keys[i]);
	}
}

static void test_list_prefix_returns_exactly_the_matching_keys(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	struct rr_put_opts create = { .if_none_match = 1 };
	struct rr_put_opts cas = { 0 };
	char tag[RR_ETAG_MAX];
	char *litter;
	FILE *f;

	CU_ASSERT_EQUAL(rr_store_put(s, "run/checkpoints/c1/manifest.json", "{}", 2, &create,
				     NULL), 0);
	CU_ASSERT_EQUAL(rr_store_put(s, "run/checkpoints/c2/manifest.json", "{}", 2, &create,
				     NULL), 0);
	CU_ASSERT_EQUAL(s_put_str(s, "run/chunks/ab/abcd", "zstd"), 0);
	CU_ASSERT_EQUAL(rr_store_put(s, "run/LATEST", "c1", 2, NULL, tag), 0);
	cas.if_match = tag;
	CU_ASSERT_EQUAL(rr_store_put(s, "run/LATEST", "c2", 2, &cas, NULL), 0); /* lock files */
	CU_ASSERT_EQUAL(s_put_str(s, "runner/x", "x"), 0);
	CU_ASSERT_EQUAL(s_put_str(s, "other/y", "y"), 0);
	/* a crashed writer's temp file must not show up */
	litter = rr_path_join(root, "run/checkpoints/c1/.manifest.json.put.1.2");
	f = fopen(litter, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fclose(f);
	free(litter);

	{
		const char *const want[] = { "run/checkpoints/c1/manifest.json",
					     "run/checkpoints/c2/manifest.json", NULL };
		s_check_list(s, "run/checkpoints/", want);
		s_check_list(s, "run/check", want);
	}
	{
		const char *const want[] = { "run/LATEST", "run/checkpoints/c1/manifest.json",
					     "run/checkpoints/c2/manifest.json",
					     "run/chunks/ab/abcd", NULL };
		s_check_list(s, "run/", want);
	}
	{
		const char *const want[] = { "run/LATEST", "run/checkpoints/c1/manifest.json",
					     "run/checkpoints/c2/manifest.json",
					     "run/chunks/ab/abcd", "runner/x", NULL };
		s_check_list(s, "run", want);
	}
	{
		const char *const want[] = { "other/y", "run/LATEST",
					     "run/checkpoints/c1/manifest.json",
					     "run/checkpoints/c2/manifest.json",
					     "run/chunks/ab/abcd", "runner/x", NULL };
		s_check_list(s, "", want);
		s_check_list(s, NULL, want);
	}
	{
		const char *const want[] = { "run/LATEST", NULL };
		s_check_list(s, "run/LATEST", want);
	}
	{
		const char *const want[] = { NULL };
		s_check_list(s, "nope/", want);
		s_check_list(s, "run/LATEST/", want);
		s_check_list(s, "run/checkpoints/c1/manifest.json.", want);
	}
	s_done(s, root);
}

static void test_list_reports_sizes(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	struct s_seen seen = { 0 };

	CU_ASSERT_EQUAL(s_put_str(s, "d/five", "12345"), 0);
	CU_ASSERT_EQUAL(rr_store_list(s, "d/", s_collect, &seen), 0);
	CU_ASSERT_EQUAL_FATAL(seen.n, 1);
	CU_ASSERT_STRING_EQUAL(seen.keys[0], "d/five");
	CU_ASSERT_EQUAL(seen.sizes[0], 5);
	free(seen.keys[0]);
	s_done(s, root);
}

static int s_stop_at_first(const struct rr_store_entry *e, void *ud)
{
	(void)e;
	(*(int *)ud)++;
	return 7;
}

static void test_list_stops_when_callback_returns_nonzero(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	int calls = 0;

	CU_ASSERT_EQUAL(s_put_str(s, "a/1", "1"), 0);
	CU_ASSERT_EQUAL(s_put_str(s, "a/2", "2"), 0);
	CU_ASSERT_EQUAL(s_put_str(s, "b/3", "3"), 0);
	CU_ASSERT_EQUAL(rr_store_list(s, "", s_stop_at_first, &calls), 7);
	CU_ASSERT_EQUAL(calls, 1);
	s_done(s, root);
}

static void test_list_rejects_unsafe_prefix(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	struct s_seen seen = { 0 };

	CU_ASSERT_EQUAL(rr_store_list(s, "/abs", s_collect, &seen), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_store_list(s, "../x/", s_collect, &seen), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_store_list(s, "a/../b", s_collect, &seen), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_store_list(s, ".locks/", s_collect, &seen), RR_EINVAL);
	CU_ASSERT_EQUAL(seen.n, 0);
	s_done(s, root);
}

static void test_del_removes_key_and_empty_parent_dirs(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	uint64_t size;

	CU_ASSERT_EQUAL(s_put_str(s, "a/b/c/k", "v"), 0);
	CU_ASSERT_EQUAL(s_put_str(s, "a/other", "w"), 0);
	CU_ASSERT_EQUAL(rr_store_del(s, "a/b/c/k"), 0);
	CU_ASSERT_EQUAL(rr_store_head(s, "a/b/c/k", &size), RR_ENOENT);
	CU_ASSERT(!s_path_exists(root, "a/b/c"));
	CU_ASSERT(!s_path_exists(root, "a/b"));
	CU_ASSERT(s_path_exists(root, "a")); /* still holds a/other */
	CU_ASSERT(s_holds(s, "a/other", "w"));

	CU_ASSERT_EQUAL(rr_store_del(s, "a/other"), 0);
	CU_ASSERT(!s_path_exists(root, "a"));
	CU_ASSERT(s_path_exists(root, ""));
	CU_ASSERT(s_path_exists(root, ".locks"));
	/* and the store is still usable where directories were pruned */
	CU_ASSERT_EQUAL(s_put_str(s, "a/b/c/k", "again"), 0);
	CU_ASSERT(s_holds(s, "a/b/c/k", "again"));
	s_done(s, root);
}

static void test_del_missing_key_is_ok(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);

	CU_ASSERT_EQUAL(rr_store_del(s, "never/was"), 0);
	CU_ASSERT_EQUAL(s_put_str(s, "k", "v"), 0);
	CU_ASSERT_EQUAL(rr_store_del(s, "k"), 0);
	CU_ASSERT_EQUAL(rr_store_del(s, "k"), 0);
	s_done(s, root);
}

static void test_unsafe_keys_are_rejected(void)
{
	static const char *const bad[] = { "", "/abs", "a//b", "a/", ".", "..", "../escape",
					   "a/../../escape", "a/./b", ".hidden", "a/.locks",
					   ".locks/00", NULL };
	char *root;
	struct rr_store *s = s_new_store(&root);
	struct rr_put_opts create = { .if_none_match = 1 };
	struct rr_buf b;
	uint64_t size;
	char *parent, *escape;

	rr_buf_init(&b, 100);
	for (int i = 0; bad[i]; i++) {
		CU_ASSERT_EQUAL(s_put_str(s, bad[i], "x"), RR_EINVAL);
		CU_ASSERT_EQUAL(rr_store_put(s, bad[i], "x", 1, &create, NULL), RR_EINVAL);
		CU_ASSERT_EQUAL(rr_store_get(s, bad[i], &b, NULL), RR_EINVAL);
		CU_ASSERT_EQUAL(rr_store_head(s, bad[i], &size), RR_EINVAL);
		CU_ASSERT_EQUAL(rr_store_del(s, bad[i]), RR_EINVAL);
	}
	CU_ASSERT_EQUAL(rr_store_get(s, NULL, &b, NULL), RR_EINVAL);
	rr_buf_free(&b);
	parent = strdup(root);
	*strrchr(parent, '/') = '\0';
	escape = rr_path_join(parent, "escape");
	CU_ASSERT(!s_path_exists(escape, ""));
	free(escape);
	free(parent);
	s_done(s, root);
}

static void test_put_below_an_existing_object_is_einval(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	struct rr_put_opts create = { .if_none_match = 1 };

	CU_ASSERT_EQUAL(s_put_str(s, "a", "object"), 0);
	CU_ASSERT_EQUAL(s_put_str(s, "a/b", "x"), RR_EINVAL);
	CU_ASSERT_EQUAL(s_put_str(s, "d/x", "x"), 0);
	CU_ASSERT_EQUAL(s_put_str(s, "d", "x"), RR_EINVAL); /* "d" is a directory of keys */
	CU_ASSERT_EQUAL(rr_store_put(s, "d", "x", 1, &create, NULL), RR_EINVAL);
	CU_ASSERT(s_holds(s, "a", "object"));
	CU_ASSERT(s_holds(s, "d/x", "x"));
	CU_ASSERT_EQUAL(s_temp_files_under(root), 0);
	s_done(s, root);
}

static void test_open_file_url_absolute(void)
{
	char *dir = s_mkdtemp();
	char *store_dir = rr_path_join(dir, "store/nested");
	char url[PATH_MAX + 16];
	struct rr_store *s = NULL;

	snprintf(url, sizeof(url), "file://%s", store_dir);
	CU_ASSERT_EQUAL_FATAL(rr_store_open(url, NULL, &s), 0);
	CU_ASSERT_STRING_EQUAL(s->url, url);
	CU_ASSERT_STRING_EQUAL(s->vt->scheme, "file");
	CU_ASSERT_EQUAL(s_put_str(s, "run/k", "v"), 0);
	CU_ASSERT(s_path_exists(store_dir, "run/k"));
	rr_store_destroy(s);
	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(store_dir);
	free(dir);
}

static void test_open_file_url_relative(void)
{
	char *dir = s_mkdtemp();
	char cwd[PATH_MAX];
	struct rr_store *s1 = NULL, *s2 = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(cwd, sizeof(cwd)));
	CU_ASSERT_EQUAL_FATAL(chdir(dir), 0);
	CU_ASSERT_EQUAL(rr_store_open("file://./.resume-run/store", NULL, &s1), 0);
	CU_ASSERT_EQUAL(rr_store_open("file://rel", NULL, &s2), 0);
	CU_ASSERT_EQUAL_FATAL(chdir(cwd), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s2);
	CU_ASSERT_STRING_EQUAL(s1->url, "file://./.resume-run/store");
	/* the root was resolved at open, so a later chdir does not move the store */
	CU_ASSERT_EQUAL(s_put_str(s1, "k1", "1"), 0);
	CU_ASSERT_EQUAL(s_put_str(s2, "k2", "2"), 0);
	CU_ASSERT(s_path_exists(dir, ".resume-run/store/k1"));
	CU_ASSERT(s_path_exists(dir, "rel/k2"));
	rr_store_destroy(s1);
	rr_store_destroy(s2);
	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(dir);
}

static void test_open_gs_with_a_bad_bucket_is_einval_with_a_reason(void)
{
	struct rr_store *s = NULL;

	CU_ASSERT_EQUAL(rr_store_open("gs://x/prefix", NULL, &s), RR_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(rr_store_strerror(RR_EINVAL), "GCS bucket name"));
	CU_ASSERT_PTR_NULL(s);
}

static void test_open_unknown_or_malformed_url_is_einval(void)
{
	static const char *const bad[] = { "ftp://x", "", "file://", "file:/x", "s3:/x",
					   "/plain/path", "files://x", NULL };
	struct rr_store *s = NULL;

	for (int i = 0; bad[i]; i++)
		CU_ASSERT_EQUAL(rr_store_open(bad[i], NULL, &s), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_store_open(NULL, NULL, &s), RR_EINVAL);
	CU_ASSERT_PTR_NULL(s);
}

static void test_destroy_null_is_fine(void)
{
	RR_ASSERT_RETURNS(rr_store_destroy(NULL));
}

/* Compare-and-swap increments of the decimal counter at key, retried on RR_EPRECOND.
 * Returns 0 or the first unexpected error. */
static int s_increment(struct rr_store *s, const char *key, int times)
{
	for (int done = 0; done < times;) {
		char tag[RR_ETAG_MAX], next[32];
		struct rr_put_opts cas = { .if_match = tag };
		unsigned long long v;
		struct rr_buf b;
		char *end;
		int rc;

		rr_buf_init(&b, 31);
		rc = rr_store_get(s, key, &b, tag);
		if (rc) {
			rr_buf_free(&b);
			return rc;
		}
		errno = 0;
		v = strtoull((char *)b.data, &end, 10);
		if (errno || end == (char *)b.data || *end != '\0' || v > 1000) {
			rr_buf_free(&b);
			return RR_ECORRUPT;
		}
		rr_buf_free(&b);
		snprintf(next, sizeof(next), "%llu", v + 1);
		rc = rr_store_put(s, key, next, strlen(next), &cas, NULL);
		if (rc == RR_EPRECOND)
			continue;
		if (rc)
			return rc;
		done++;
	}
	return 0;
}

struct s_cas_arg {
	struct rr_store *s;
	pthread_barrier_t *start;
	int rc;
};

static void *s_cas_thread(void *p)
{
	struct s_cas_arg *a = p;

	pthread_barrier_wait(a->start);
	a->rc = s_increment(a->s, "counter", 50);
	return NULL;
}

static void test_concurrent_cas_increments_reach_exactly_100(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	pthread_barrier_t start;
	struct s_cas_arg a[2];
	pthread_t t[2];

	CU_ASSERT_EQUAL_FATAL(s_put_str(s, "counter", "0"), 0);
	pthread_barrier_init(&start, NULL, 2);
	for (int i = 0; i < 2; i++) {
		a[i] = (struct s_cas_arg){ .s = s, .start = &start };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, s_cas_thread, &a[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		CU_ASSERT_EQUAL(a[i].rc, 0);
	}
	pthread_barrier_destroy(&start);
	CU_ASSERT(s_holds(s, "counter", "100"));
	CU_ASSERT_EQUAL(s_temp_files_under(root), 0);
	s_done(s, root);
}

static void test_concurrent_cas_across_processes_reach_exactly_100(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	int go[2];
	pid_t pid[2];
	char token[2] = { 'g', 'g' };

	CU_ASSERT_EQUAL_FATAL(s_put_str(s, "counter", "0"), 0);
	CU_ASSERT_EQUAL_FATAL(pipe(go), 0);
	fflush(stdout);
	fflush(stderr);
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		CU_ASSERT_FATAL(pid[i] >= 0);
		if (pid[i] == 0) {
			/* each process opens the store on its own, as separate machines'
			 * agents sharing one directory would */
			struct rr_store *mine = NULL;
			char c;
			int rc;

			close(go[1]);
			if (read(go[0], &c, 1) != 1)
				_exit(3);
			if (rr_store_file_new(root, &mine) != 0)
				_exit(4);
			rc = s_increment(mine, "counter", 50);
			rr_store_destroy(mine);
			_exit(rc ? 5 : 0);
		}
	}
	close(go[0]);
	CU_ASSERT_EQUAL(write(go[1], token, 2), 2); /* start both at once */
	close(go[1]);
	for (int i = 0; i < 2; i++) {
		int status = -1;
		CU_ASSERT_EQUAL(waitpid(pid[i], &status, 0), pid[i]);
		CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CU_ASSERT(s_holds(s, "counter", "100"));
	CU_ASSERT_EQUAL(s_temp_files_under(root), 0);
	s_done(s, root);
}

struct s_create_arg {
	struct rr_store *s;
	pthread_barrier_t *start;
	char value[16];
	int rc;
};

static void *s_create_thread(void *p)
{
	struct s_create_arg *a = p;
	struct rr_put_opts create = { .if_none_match = 1 };

	pthread_barrier_wait(a->start);
	a->rc = rr_store_put(a->s, "run/checkpoints/c9/manifest.json", a->value,
			     strlen(a->value), &create, NULL);
	return NULL;
}

static void test_concurrent_create_only_exactly_one_wins(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	pthread_barrier_t start;
	struct s_create_arg a[4];
	pthread_t t[4];
	int winners = 0, winner = -1;

	pthread_barrier_init(&start, NULL, 4);
	for (int i = 0; i < 4; i++) {
		a[i] = (struct s_create_arg){ .s = s, .start = &start };
		snprintf(a[i].value, sizeof(a[i].value), "writer-%d", i);
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, s_create_thread, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		if (a[i].rc == 0) {
			winners++;
			winner = i;
		} else {
			CU_ASSERT_EQUAL(a[i].rc, RR_EEXIST);
		}
	}
	pthread_barrier_destroy(&start);
	CU_ASSERT_EQUAL_FATAL(winners, 1);
	CU_ASSERT(s_holds(s, "run/checkpoints/c9/manifest.json", a[winner].value));
	CU_ASSERT_EQUAL(s_temp_files_under(root), 0);
	s_done(s, root);
}

struct s_churn_arg {
	struct rr_store *s;
	pthread_barrier_t *start;
	const char *key;
	int errors;
};

/* Puts and deletes its own key in a directory shared with another thread, so each del may
 * prune the directory the other put is about to write into. */
static void *s_churn_thread(void *p)
{
	struct s_churn_arg *a = p;
	struct rr_put_opts create = { .if_none_match = 1 };

	pthread_barrier_wait(a->start);
	for (int i = 0; i < 300; i++) {
		if (rr_store_put(a->s, a->key, "v", 1, i % 2 ? &create : NULL, NULL) != 0)
			a->errors++;
		if (rr_store_del(a->s, a->key) != 0)
			a->errors++;
	}
	return NULL;
}

static void test_put_survives_concurrent_pruning_of_its_directory(void)
{
	char *root;
	struct rr_store *s = s_new_store(&root);
	pthread_barrier_t start;
	struct s_churn_arg a[2] = {
		{ .s = s, .start = &start, .key = "run/chunks/ab/ab01" },
		{ .s = s, .start = &start, .key = "run/chunks/ab/ab02" },
	};
	pthread_t t[2];

	pthread_barrier_init(&start, NULL, 2);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, s_churn_thread, &a[i]), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		CU_ASSERT_EQUAL(a[i].errors, 0);
	}
	pthread_barrier_destroy(&start);
	CU_ASSERT(!s_path_exists(root, "run"));
	CU_ASSERT_EQUAL(s_temp_files_under(root), 0);
	s_done(s, root);
}

/* Runs in a child with a 64 KiB tmpfs as the store: returns 0 when right, else the number
 * of the failed check (reported on stderr). */
static int s_enospc_case(const char *dir)
{
	size_t big_len = (size_t)1 << 20;
	struct rr_put_opts create = { .if_none_match = 1 };
	struct rr_store *s = NULL;
	char *big = malloc(big_len);
	uint64_t size;
	int rc;

	if (!big || rr_store_file_new(dir, &s) != 0)
		return 1;
	memset(big, 'x', big_len);
	if (s_put_str(s, "run/LATEST", "old") != 0)
		return 2;
	rc = rr_store_put(s, "run/LATEST", big, big_len, NULL, NULL);
	if (rc != RR_ENOSPC) {
		fprintf(stderr, "enospc case: replace: expected RR_ENOSPC, got %d (%s)\n", rc,
			rr_strerror(rc));
		return 3;
	}
	if (!s_holds(s, "run/LATEST", "old")) {
		fprintf(stderr, "enospc case: old content lost\n");
		return 4;
	}
	rc = rr_store_put(s, "run/chunks/ab/abcd", big, big_len, &create, NULL);
	if (rc != RR_ENOSPC) {
		fprintf(stderr, "enospc case: create: expected RR_ENOSPC, got %d (%s)\n", rc,
			rr_strerror(rc));
		return 5;
	}
	if (rr_store_head(s, "run/chunks/ab/abcd", &size) != RR_ENOENT)
		return 6;
	s_dot_count = 0;
	if (nftw(dir, s_count_dot, 16, FTW_PHYS) != 0 || s_dot_count != 0) {
		fprintf(stderr, "enospc case: temp file left behind\n");
		return 7;
	}
	rr_store_destroy(s);
	free(big);
	return 0;
}

static void test_put_enospc_keeps_old_content_and_leaves_no_temp(void)
{
	char *dir = s_mkdtemp();
	int status = -1;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		/* private mount namespace: the tmpfs never shows on the host and goes with us */
		if (unshare(CLONE_NEWNS) < 0) {
			perror("unshare(CLONE_NEWNS)");
			_exit(100);
		}
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
			perror("mount --make-rprivate /");
			_exit(101);
		}
		if (mount("tmpfs", dir, "tmpfs", 0, "size=64k") < 0) {
			perror("mount tmpfs size=64k");
			_exit(102);
		}
		_exit(s_enospc_case(dir));
	}
	if (waitpid(pid, &status, 0) == pid)
		status = WIFEXITED(status) ? WEXITSTATUS(status) : 200;
	if (status >= 100 && status <= 102)
		fprintf(stderr, "\nENOSPC test could not mount its tmpfs (status %d): failing\n",
			status);
	CU_ASSERT_EQUAL(status, 0);
	rmdir(dir);
	free(dir);
}

static mode_t s_mode_of(const char *root, const char *rel)
{
	char *p = rr_path_join(root, rel);
	struct stat st;
	mode_t m = (mode_t)-1;

	if (p && stat(p, &st) == 0)
		m = st.st_mode & 07777;
	free(p);
	return m;
}

/* A store root made by the store is private: objects 0600 in 0700 directories, whatever
 * the umask lets through, so an unprivileged trainer beside the agent reads nothing. */
static void test_new_root_keeps_objects_private(void)
{
	char *parent = s_mkdtemp(), *root = rr_path_join(parent, "store");
	struct rr_store *s = NULL;
	mode_t old = umask(022);

	CU_ASSERT_EQUAL_FATAL(rr_store_file_new(root, &s), 0);
	CU_ASSERT_EQUAL(s_put_str(s, "run/chunks/ab/abcd", "secret"), 0);
	CU_ASSERT_EQUAL(s_mode_of(root, ""), 0700);
	CU_ASSERT_EQUAL(s_mode_of(root, "run"), 0700);
	CU_ASSERT_EQUAL(s_mode_of(root, "run/chunks/ab"), 0700);
	CU_ASSERT_EQUAL(s_mode_of(root, "run/chunks/ab/abcd"), 0600);
	umask(old);
	rr_store_destroy(s);
	CU_ASSERT_EQUAL(rr_remove_tree(parent), 0);
	free(root);
	free(parent);
}

/* A root that existed says whom the store is shared with: a 0750 root gives its group
 * read access to what is stored below it, and nothing to others. */
static void test_existing_root_group_bits_are_followed(void)
{
	char *parent = s_mkdtemp(), *root = rr_path_join(parent, "store");
	struct rr_store *s = NULL;
	mode_t old = umask(022);

	CU_ASSERT_EQUAL_FATAL(mkdir(root, 0750), 0);
	CU_ASSERT_EQUAL_FATAL(chmod(root, 0750), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_file_new(root, &s), 0);
	CU_ASSERT_EQUAL(s_put_str(s, "run/x.json", "{}"), 0);
	CU_ASSERT_EQUAL(s_mode_of(root, ""), 0750);
	CU_ASSERT_EQUAL(s_mode_of(root, "run"), 0750);
	CU_ASSERT_EQUAL(s_mode_of(root, "run/x.json"), 0640);
	umask(old);
	rr_store_destroy(s);
	CU_ASSERT_EQUAL(rr_remove_tree(parent), 0);
	free(root);
	free(parent);
}

static CU_TestInfo s_tests[] = {
	{ "put_writes_beside_temp_files_another_writer_left",
	  test_put_writes_beside_temp_files_another_writer_left },
	{ "test_new_root_keeps_objects_private", test_new_root_keeps_objects_private },
	{ "test_existing_root_group_bits_are_followed", test_existing_root_group_bits_are_followed },
	{ "test_put_get_round_trip", test_put_get_round_trip },
	{ "test_put_get_zero_length_object", test_put_get_zero_length_object },
	{ "test_etag_is_first_32_hex_of_sha256", test_etag_is_first_32_hex_of_sha256 },
	{ "test_get_missing_key_is_enoent", test_get_missing_key_is_enoent },
	{ "test_get_of_a_key_prefix_directory_is_enoent",
	  test_get_of_a_key_prefix_directory_is_enoent },
	{ "test_get_beyond_buffer_ceiling_is_etoobig", test_get_beyond_buffer_ceiling_is_etoobig },
	{ "test_put_replaces_unconditionally", test_put_replaces_unconditionally },
	{ "test_put_if_none_match_refuses_existing_key",
	  test_put_if_none_match_refuses_existing_key },
	{ "test_put_with_both_preconditions_is_einval",
	  test_put_with_both_preconditions_is_einval },
	{ "test_put_if_match_stale_etag_is_eprecond_and_keeps_old",
	  test_put_if_match_stale_etag_is_eprecond_and_keeps_old },
	{ "test_put_if_match_current_etag_replaces", test_put_if_match_current_etag_replaces },
	{ "test_put_if_match_missing_key_is_enoent", test_put_if_match_missing_key_is_enoent },
	{ "test_head_reports_size", test_head_reports_size },
	{ "test_list_prefix_returns_exactly_the_matching_keys",
	  test_list_prefix_returns_exactly_the_matching_keys },
	{ "test_list_reports_sizes", test_list_reports_sizes },
	{ "test_list_stops_when_callback_returns_nonzero",
	  test_list_stops_when_callback_returns_nonzero },
	{ "test_list_rejects_unsafe_prefix", test_list_rejects_unsafe_prefix },
	{ "test_del_removes_key_and_empty_parent_dirs",
	  test_del_removes_key_and_empty_parent_dirs },
	{ "test_del_missing_key_is_ok", test_del_missing_key_is_ok },
	{ "test_unsafe_keys_are_rejected", test_unsafe_keys_are_rejected },
	{ "test_put_below_an_existing_object_is_einval",
	  test_put_below_an_existing_object_is_einval },
	{ "test_open_file_url_absolute", test_open_file_url_absolute },
	{ "test_open_file_url_relative", test_open_file_url_relative },
	{ "test_open_gs_with_a_bad_bucket_is_einval_with_a_reason", test_open_gs_with_a_bad_bucket_is_einval_with_a_reason },
	{ "test_open_unknown_or_malformed_url_is_einval",
	  test_open_unknown_or_malformed_url_is_einval },
	{ "test_destroy_null_is_fine", test_destroy_null_is_fine },
	{ "test_concurrent_cas_increments_reach_exactly_100",
	  test_concurrent_cas_increments_reach_exactly_100 },
	{ "test_concurrent_cas_across_processes_reach_exactly_100",
	  test_concurrent_cas_across_processes_reach_exactly_100 },
	{ "test_concurrent_create_only_exactly_one_wins",
	  test_concurrent_create_only_exactly_one_wins },
	{ "test_put_survives_concurrent_pruning_of_its_directory",
	  test_put_survives_concurrent_pruning_of_its_directory },
	{ "test_put_enospc_keeps_old_content_and_leaves_no_temp",
	  test_put_enospc_keeps_old_content_and_leaves_no_temp },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("store_file", s_tests)
