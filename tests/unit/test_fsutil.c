/* CUnit suite "fsutil": durable writes, bounded reads, mkdir -p, rm -rf, path joins. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <limits.h>
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

#include "cunit_main.h"

static char *s_mkdtemp(void)
{
	char tmpl[] = "/tmp/rr_fsutil_XXXXXX";
	char *d = mkdtemp(tmpl);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	return strdup(d);
}

/* Counts the entries of dir (without "." and ".."), and separately those that are temp
 * files (names starting with '.'). */
static int s_count_entries(const char *dir, int *dot_count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	*dot_count = 0;
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		if (de->d_name[0] == '.')
			(*dot_count)++;
	}
	closedir(d);
	return n;
}

/* 1 when the file at path holds exactly want[0..len). */
static int s_file_is(const char *path, const void *want, size_t len)
{
	struct rr_buf b;
	int ok;

	rr_buf_init(&b, 1 << 24);
	ok = rr_read_file(path, &b) == 0 && b.len == len &&
	     (len == 0 || memcmp(b.data, want, len) == 0);
	rr_buf_free(&b);
	return ok;
}

static void test_write_file_durable_round_trip(void)
{
	char *dir = s_mkdtemp();
	char *path = rr_path_join(dir, "state.json");
	struct stat st;
	int dots;

	CU_ASSERT_EQUAL(rr_write_file_durable(path, "{\"a\":1}", 7, 0600), 0);
	CU_ASSERT(s_file_is(path, "{\"a\":1}", 7));
	CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
	CU_ASSERT_EQUAL(s_count_entries(dir, &dots), 1);
	CU_ASSERT_EQUAL(dots, 0);

	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(path);
	free(dir);
}

static void test_write_file_durable_replaces_and_leaves_no_temp(void)
{
	char *dir = s_mkdtemp();
	char *path = rr_path_join(dir, "f");
	int dots;

	CU_ASSERT_EQUAL(rr_write_file_durable(path, "first", 5, 0644), 0);
	CU_ASSERT_EQUAL(rr_write_file_durable(path, "second!", 7, 0644), 0);
	CU_ASSERT(s_file_is(path, "second!", 7));
	CU_ASSERT_EQUAL(rr_write_file_durable(path, NULL, 0, 0644), 0);
	CU_ASSERT(s_file_is(path, "", 0));
	CU_ASSERT_EQUAL(s_count_entries(dir, &dots), 1);
	CU_ASSERT_EQUAL(dots, 0);

	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(path);
	free(dir);
}

/* A temp file named as this process's would be, left by another (a PID-1 agent in another
 * container, killed mid-write): the write goes beside it. */
static void test_write_file_durable_writes_beside_another_writer_temp_files(void)
{
	char *dir = s_mkdtemp();
	char *path = rr_path_join(dir, "f"), litter[PATH_MAX];

	for (int i = 0; i < 5000; i++) {
		FILE *f;
		snprintf(litter, sizeof(litter), "%s/.f.tmp.%ld.%d", dir, (long)getpid(), i);
		f = fopen(litter, "w");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fclose(f);
	}
	CU_ASSERT_EQUAL(rr_write_file_durable(path, "x", 1, 0644), 0);
	CU_ASSERT(s_file_is(path, "x", 1));
	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(path);
	free(dir);
}

static void test_write_file_durable_missing_dir_is_enoent(void)
{
	char *dir = s_mkdtemp();
	char *path = rr_path_join(dir, "missing/f");
	int dots;

	CU_ASSERT_EQUAL(rr_write_file_durable(path, "x", 1, 0644), RR_ENOENT);
	CU_ASSERT_EQUAL(s_count_entries(dir, &dots), 0);

	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(path);
	free(dir);
}

static void test_write_file_durable_failed_rename_removes_temp(void)
{
	char *dir = s_mkdtemp();
	char *target = rr_path_join(dir, "target");
	char *inner = rr_path_join(target, "keep");
	int dots;

	/* A non-empty directory where the file should go: rename fails after the temp file
	 * was fully written and synced. */
	CU_ASSERT_EQUAL_FATAL(mkdir(target, 0755), 0);
	CU_ASSERT_EQUAL(rr_write_file_durable(inner, "k", 1, 0644), 0);
	CU_ASSERT_NOT_EQUAL(rr_write_file_durable(target, "data", 4, 0644), 0);
	CU_ASSERT_EQUAL(s_count_entries(dir, &dots), 1);
	CU_ASSERT_EQUAL(dots, 0);
	CU_ASSERT(s_file_is(inner, "k", 1));

	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(inner);
	free(target);
	free(dir);
}

static void test_write_file_durable_rejects_path_without_name(void)
{
	CU_ASSERT_EQUAL(rr_write_file_durable("/tmp/", "x", 1, 0644), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_write_file_durable("", "x", 1, 0644), RR_EINVAL);
}

/* Runs in a child with its own mount namespace: fills a 64 KiB tmpfs. Returns 0 when the
 * behaviour is right, else the number of the check that failed (reported on stderr). */
static int s_enospc_case(const char *dir)
{
	size_t big_len = (size_t)1 << 20;
	char *path = rr_path_join(dir, "state");
	char *big = malloc(big_len);
	int rc, dots;

	if (!path || !big)
		return 1;
	memset(big, 'x', big_len);
	rc = rr_write_file_durable(path, "old", 3, 0644);
	if (rc) {
		fprintf(stderr, "enospc case: first write: %s\n", rr_strerror(rc));
		return 2;
	}
	rc = rr_write_file_durable(path, big, big_len, 0644);
	if (rc != RR_ENOSPC) {
		fprintf(stderr, "enospc case: expected RR_ENOSPC, got %d (%s)\n", rc,
			rr_strerror(rc));
		return 3;
	}
	if (!s_file_is(path, "old", 3)) {
		fprintf(stderr, "enospc case: old content lost\n");
		return 4;
	}
	if (s_count_entries(dir, &dots) != 1 || dots != 0) {
		fprintf(stderr, "enospc case: temp file left behind\n");
		return 5;
	}
	free(big);
	free(path);
	return 0;
}

/* Runs fn(dir) in a forked child that mounts a 64 KiB tmpfs on dir inside a private mount
 * namespace (root only), so nothing leaks into the host's mounts and the tmpfs vanishes with
 * the child. Returns the child's exit status; 100-102 mean the setup itself failed, which
 * must fail the test rather than skip it. */
static int s_run_on_tiny_tmpfs(int (*fn)(const char *dir))
{
	char *dir = s_mkdtemp();
	int status = -1;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
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
		_exit(fn(dir));
	}
	if (pid > 0 && waitpid(pid, &status, 0) == pid)
		status = WIFEXITED(status) ? WEXITSTATUS(status) : 200;
	rmdir(dir);
	free(dir);
	return status;
}

static void test_write_file_durable_enospc_keeps_old_content_and_no_temp(void)
{
	int status = s_run_on_tiny_tmpfs(s_enospc_case);

	if (status >= 100 && status <= 102)
		fprintf(stderr, "\nENOSPC test could not mount its tmpfs (status %d): failing\n",
			status);
	CU_ASSERT_EQUAL(status, 0);
}

struct s_writer {
	const char *path;
	char fill;
	int errors;
};

#define S_WRITER_LEN 4096

static void *s_writer_main(void *p)
{
	struct s_writer *w = p;
	char data[S_WRITER_LEN];

	memset(data, w->fill, sizeof(data));
	for (int i = 0; i < 20; i++)
		if (rr_write_file_durable(w->path, data, sizeof(data), 0644) != 0)
			w->errors++;
	return NULL;
}

static void test_write_file_durable_concurrent_writers_do_not_collide(void)
{
	char *dir = s_mkdtemp();
	char *path = rr_path_join(dir, "shared");
	struct s_writer w[8];
	pthread_t t[8];
	struct rr_buf b;
	int dots, uniform = 1;

	for (int i = 0; i < 8; i++) {
		w[i] = (struct s_writer){ .path = path, .fill = (char)('a' + i) };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, s_writer_main, &w[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		CU_ASSERT_EQUAL(w[i].errors, 0);
	}
	/* one writer's content, whole */
	rr_buf_init(&b, 1 << 20);
	CU_ASSERT_EQUAL_FATAL(rr_read_file(path, &b), 0);
	CU_ASSERT_EQUAL(b.len, S_WRITER_LEN);
	for (size_t i = 1; i < b.len; i++)
		uniform &= b.data[i] == b.data[0];
	CU_ASSERT(uniform);
	CU_ASSERT(b.data[0] >= 'a' && b.data[0] < 'a' + 8);
	rr_buf_free(&b);
	CU_ASSERT_EQUAL(s_count_entries(dir, &dots), 1);
	CU_ASSERT_EQUAL(dots, 0);

	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(path);
	free(dir);
}

static void test_read_file_appends_and_terminates(void)
{
	char *dir = s_mkdtemp();
	char *path = rr_path_join(dir, "f");
	struct rr_buf b;

	CU_ASSERT_EQUAL(rr_write_file_durable(path, "world", 5, 0644), 0);
	rr_buf_init(&b, 100);
	CU_ASSERT_EQUAL(rr_buf_append(&b, "hello ", 6), 0);
	CU_ASSERT_EQUAL(rr_read_file(path, &b), 0);
	CU_ASSERT_EQUAL(b.len, 11);
	CU_ASSERT_STRING_EQUAL((char *)b.data, "hello world");
	rr_buf_free(&b);

	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(path);
	free(dir);
}

static void test_read_file_bounded_by_ceiling(void)
{
	char *dir = s_mkdtemp();
	char *path = rr_path_join(dir, "f");
	char data[300000];
	struct rr_buf b;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7);
	CU_ASSERT_EQUAL(rr_write_file_durable(path, data, sizeof(data), 0644), 0);

	/* one byte short: refused, buffer unchanged */
	rr_buf_init(&b, sizeof(data) + 2);
	CU_ASSERT_EQUAL(rr_buf_append(&b, "ab", 2), 0);
	b.max = sizeof(data) + 1;
	CU_ASSERT_EQUAL(rr_read_file(path, &b), RR_ETOOBIG);
	CU_ASSERT_EQUAL(b.len, 2);
	CU_ASSERT_STRING_EQUAL((char *)b.data, "ab");
	/* exactly at the ceiling: fits */
	b.max = sizeof(data) + 2;
	CU_ASSERT_EQUAL(rr_read_file(path, &b), 0);
	CU_ASSERT_EQUAL(b.len, sizeof(data) + 2);
	CU_ASSERT(memcmp(b.data + 2, data, sizeof(data)) == 0);
	rr_buf_free(&b);

	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(path);
	free(dir);
}

static void test_read_file_unsized_input_is_bounded(void)
{
	/* /proc files report size 0, so only the read loop can enforce the ceiling. */
	struct rr_buf b;

	rr_buf_init(&b, 8);
	CU_ASSERT_EQUAL(rr_read_file("/proc/self/status", &b), RR_ETOOBIG);
	CU_ASSERT_EQUAL(b.len, 0);
	rr_buf_free(&b);
	rr_buf_init(&b, 1 << 20);
	CU_ASSERT_EQUAL(rr_read_file("/proc/self/status", &b), 0);
	CU_ASSERT(b.len > 8);
	CU_ASSERT_PTR_NOT_NULL(strstr((char *)b.data, "Pid:"));
	rr_buf_free(&b);
}

/* A path someone else may have put there (a --drill-file in /tmp): a FIFO is refused at
 * once, without waiting for a writer (if the open blocked, CTest's timeout would fail this
 * test); a directory and a device are refused; a regular file reads as rr_read_file. */
static void test_read_regular_file_refuses_fifo_dir_and_device_without_blocking(void)
{
	char *dir = s_mkdtemp();
	char *fifo = rr_path_join(dir, "fifo"), *file = rr_path_join(dir, "f");
	struct rr_buf b;

	CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
	CU_ASSERT_EQUAL(rr_write_file_durable(file, "{}", 2, 0644), 0);
	rr_buf_init(&b, 100);
	CU_ASSERT_EQUAL(rr_read_regular_file(fifo, &b), RR_EPATH);
	CU_ASSERT_EQUAL(rr_read_regular_file(dir, &b), RR_EPATH);
	CU_ASSERT_EQUAL(rr_read_regular_file("/dev/zero", &b), RR_EPATH);
	CU_ASSERT_EQUAL(b.len, 0);
	CU_ASSERT_EQUAL(rr_read_regular_file(file, &b), 0);
	CU_ASSERT_EQUAL(b.len, 2);
	rr_buf_free(&b);
	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(fifo);
	free(file);
	free(dir);
}

static void test_read_file_missing_is_enoent(void)
{
	struct rr_buf b;

	rr_buf_init(&b, 100);
	CU_ASSERT_EQUAL(rr_read_file("/nonexistent/rr/file", &b), RR_ENOENT);
	CU_ASSERT_EQUAL(b.len, 0);
	CU_ASSERT_NOT_EQUAL(rr_read_file("/tmp", &b), 0); /* a directory */
	rr_buf_free(&b);
}

static void test_fsync_dir_missing_is_enoent(void)
{
	CU_ASSERT_EQUAL(rr_fsync_dir("/tmp"), 0);
	CU_ASSERT_EQUAL(rr_fsync_dir("/nonexistent/rr/dir"), RR_ENOENT);
}

static void test_mkdir_p_creates_nested_and_accepts_existing(void)
{
	char *dir = s_mkdtemp();
	char *deep = rr_path_join(dir, "a//b/c/");
	char *abc = rr_path_join(dir, "a/b/c");
	struct stat st;

	CU_ASSERT_EQUAL(rr_mkdir_p(deep), 0);
	CU_ASSERT_EQUAL_FATAL(stat(abc, &st), 0);
	CU_ASSERT(S_ISDIR(st.st_mode));
	CU_ASSERT_EQUAL(rr_mkdir_p(abc), 0);
	CU_ASSERT_EQUAL(rr_mkdir_p(dir), 0);
	CU_ASSERT_EQUAL(rr_mkdir_p(""), RR_EINVAL);

	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(abc);
	free(deep);
	free(dir);
}

static void test_mkdir_p_fails_when_a_file_is_in_the_way(void)
{
	char *dir = s_mkdtemp();
	char *file = rr_path_join(dir, "f");
	char *below = rr_path_join(dir, "f/sub");

	CU_ASSERT_EQUAL(rr_write_file_durable(file, "x", 1, 0644), 0);
	CU_ASSERT_NOT_EQUAL(rr_mkdir_p(file), 0);
	CU_ASSERT_NOT_EQUAL(rr_mkdir_p(below), 0);

	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	free(below);
	free(file);
	free(dir);
}

static void test_remove_tree_removes_nested_and_missing_is_fine(void)
{
	char *dir = s_mkdtemp();
	char *deep = rr_path_join(dir, "a/b/c");
	char *f1 = rr_path_join(dir, "a/b/c/f");
	char *f2 = rr_path_join(dir, "a/.hidden");
	struct stat st;

	CU_ASSERT_EQUAL(rr_mkdir_p(deep), 0);
	CU_ASSERT_EQUAL(rr_write_file_durable(f1, "1", 1, 0644), 0);
	CU_ASSERT_EQUAL(rr_write_file_durable(f2, "2", 1, 0644), 0);
	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	CU_ASSERT_EQUAL(lstat(dir, &st), -1);
	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);

	free(f2);
	free(f1);
	free(deep);
	free(dir);
}

static void test_remove_tree_does_not_follow_symlinks(void)
{
	char *outside = s_mkdtemp();
	char *victim = rr_path_join(outside, "precious");
	char *dir = s_mkdtemp();
	char *link_dir = rr_path_join(dir, "to_dir");
	char *link_file = rr_path_join(dir, "to_file");
	char *lone_link = rr_path_join(outside, "lone");
	struct stat st;

	CU_ASSERT_EQUAL(rr_write_file_durable(victim, "keep", 4, 0644), 0);
	CU_ASSERT_EQUAL_FATAL(symlink(outside, link_dir), 0);
	CU_ASSERT_EQUAL_FATAL(symlink(victim, link_file), 0);
	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
	CU_ASSERT_EQUAL(lstat(dir, &st), -1);
	CU_ASSERT(s_file_is(victim, "keep", 4));

	/* a symlink given as the tree itself is removed, not its target */
	CU_ASSERT_EQUAL_FATAL(symlink(outside, lone_link), 0);
	CU_ASSERT_EQUAL(rr_remove_tree(lone_link), 0);
	CU_ASSERT_EQUAL(lstat(lone_link, &st), -1);
	CU_ASSERT(s_file_is(victim, "keep", 4));

	CU_ASSERT_EQUAL(rr_remove_tree(outside), 0);
	free(lone_link);
	free(link_file);
	free(link_dir);
	free(dir);
	free(victim);
	free(outside);
}

static void s_check_join(const char *a, const char *b, const char *want)
{
	char *p = rr_path_join(a, b);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_STRING_EQUAL(p, want);
	free(p);
}

static void test_path_join_uses_exactly_one_separator(void)
{
	s_check_join("a", "b", "a/b");
	s_check_join("a/", "b", "a/b");
	s_check_join("a//", "/b/c", "a/b/c");
	s_check_join("/", "b", "/b");
	s_check_join("/", "/b", "/b");
	s_check_join("", "b", "b");
	s_check_join("a", "", "a");
}

static CU_TestInfo s_tests[] = {
	{ "write_file_durable_writes_beside_another_writer_temp_files",
	  test_write_file_durable_writes_beside_another_writer_temp_files },
	{ "test_write_file_durable_round_trip", test_write_file_durable_round_trip },
	{ "test_write_file_durable_replaces_and_leaves_no_temp",
	  test_write_file_durable_replaces_and_leaves_no_temp },
	{ "test_write_file_durable_missing_dir_is_enoent",
	  test_write_file_durable_missing_dir_is_enoent },
	{ "test_write_file_durable_failed_rename_removes_temp",
	  test_write_file_durable_failed_rename_removes_temp },
	{ "test_write_file_durable_rejects_path_without_name",
	  test_write_file_durable_rejects_path_without_name },
	{ "test_write_file_durable_enospc_keeps_old_content_and_no_temp",
	  test_write_file_durable_enospc_keeps_old_content_and_no_temp },
	{ "test_write_file_durable_concurrent_writers_do_not_collide",
	  test_write_file_durable_concurrent_writers_do_not_collide },
	{ "test_read_file_appends_and_terminates", test_read_file_appends_and_terminates },
	{ "test_read_file_bounded_by_ceiling", test_read_file_bounded_by_ceiling },
	{ "test_read_file_unsized_input_is_bounded", test_read_file_unsized_input_is_bounded },
	{ "test_read_regular_file_refuses_fifo_dir_and_device_without_blocking",
	  test_read_regular_file_refuses_fifo_dir_and_device_without_blocking },
	{ "test_read_file_missing_is_enoent", test_read_file_missing_is_enoent },
	{ "test_fsync_dir_missing_is_enoent", test_fsync_dir_missing_is_enoent },
	{ "test_mkdir_p_creates_nested_and_accepts_existing",
	  test_mkdir_p_creates_nested_and_accepts_existing },
	{ "test_mkdir_p_fails_when_a_file_is_in_the_way",
	  test_mkdir_p_fails_when_a_file_is_in_the_way },
	{ "test_remove_tree_removes_nested_and_missing_is_fine",
	  test_remove_tree_removes_nested_and_missing_is_fine },
	{ "test_remove_tree_does_not_follow_symlinks", test_remove_tree_does_not_follow_symlinks },
	{ "test_path_join_uses_exactly_one_separator", test_path_join_uses_exactly_one_separator },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("fsutil", s_tests)
