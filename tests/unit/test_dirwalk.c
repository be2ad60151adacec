/* CUnit suite "dirwalk": the regular files of a checkpoint directory, as paths relative to
 * its root, sorted, with modes and sizes; anything else (symlinks, fifos, sockets) skipped
 * and counted, never followed. Each test works in its own mkdtemp directory under /tmp. */
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "dirwalk.h"
#include "rr/error.h"

#include "cunit_main.h"

static void s_tmpdir(char *out, size_t cap)
{
	snprintf(out, cap, "/tmp/rr-dirwalk-XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(out));
}

static int s_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void s_rm_rf(const char *path)
{
	nftw(path, s_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void s_join(char *out, size_t cap, const char *root, const char *rel)
{
	int n = snprintf(out, cap, "%s/%s", root, rel);
	CU_ASSERT_FATAL(n > 0 && (size_t)n < cap);
}

static void s_mkdir(const char *root, const char *rel)
{
	char p[PATH_MAX];
	s_join(p, sizeof(p), root, rel);
	CU_ASSERT_FATAL(mkdir(p, 0755) == 0);
}

/* A file of size bytes with exactly the given mode (chmod, so the umask plays no part). */
static void s_file(const char *root, const char *rel, size_t size, mode_t mode)
{
	char p[PATH_MAX];
	FILE *f;

	s_join(p, sizeof(p), root, rel);
	f = fopen(p, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	for (size_t i = 0; i < size; i++)
		fputc((int)(i & 0xff), f);
	CU_ASSERT_FATAL(fclose(f) == 0);
	CU_ASSERT_FATAL(chmod(p, mode) == 0);
}

static void s_symlink(const char *root, const char *rel, const char *target)
{
	char p[PATH_MAX];
	s_join(p, sizeof(p), root, rel);
	CU_ASSERT_FATAL(symlink(target, p) == 0);
}

static const struct rr_dir_file *s_find(const struct rr_dir_listing *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->files[i].path, path) == 0)
			return &l->files[i];
	return NULL;
}

static void test_nested_files_are_listed_with_relative_sorted_paths(void)
{
	static const char *const want[] = { "A", "a-1", "a.txt", "a/b/c", "a/z", "b" };
	char root[64];
	struct rr_dir_listing l;

	s_tmpdir(root, sizeof(root));
	s_file(root, "b", 1, 0644);
	s_mkdir(root, "a");
	s_mkdir(root, "a/b");
	s_file(root, "a/z", 1, 0644);
	s_file(root, "a/b/c", 1, 0644);
	s_file(root, "a.txt", 1, 0644);
	s_file(root, "A", 1, 0644);
	s_file(root, "a-1", 1, 0644);
	CU_ASSERT_EQUAL_FATAL(rr_dir_list(root, &l), 0);
	CU_ASSERT_EQUAL_FATAL(l.n, 6);
	/* strcmp order: '-' < '.' < '/' */
	for (size_t i = 0; i < 6; i++)
		CU_ASSERT_STRING_EQUAL(l.files[i].path, want[i]);
	CU_ASSERT_EQUAL(l.skipped, 0);
	rr_dir_listing_free(&l);
	s_rm_rf(root);
}

static void test_modes_and_sizes_are_those_of_each_file(void)
{
	char root[64];
	struct rr_dir_listing l;
	const struct rr_dir_file *f;

	s_tmpdir(root, sizeof(root));
	s_mkdir(root, "sub");
	s_file(root, "empty", 0, 0600);
	s_file(root, "one", 1, 0640);
	s_file(root, "sub/run.sh", 70000, 0755);
	s_file(root, "sub/setuid", 3, 04711);
	CU_ASSERT_EQUAL_FATAL(rr_dir_list(root, &l), 0);
	CU_ASSERT_EQUAL_FATAL(l.n, 4);
	f = s_find(&l, "empty");
	CU_ASSERT(f && f->size == 0 && f->mode == 0600);
	f = s_find(&l, "one");
	CU_ASSERT(f && f->size == 1 && f->mode == 0640);
	f = s_find(&l, "sub/run.sh");
	CU_ASSERT(f && f->size == 70000 && f->mode == 0755);
	/* Permission bits only (07777): no file-type bits. */
	f = s_find(&l, "sub/setuid");
	CU_ASSERT(f && f->size == 3 && f->mode == 04711);
	rr_dir_listing_free(&l);
	s_rm_rf(root);
}

static void test_dot_files_and_dot_directories_are_listed(void)
{
	char root[64];
	struct rr_dir_listing l;

	s_tmpdir(root, sizeof(root));
	s_mkdir(root, ".meta");
	s_file(root, ".meta/.state", 2, 0644);
	s_file(root, ".hidden", 2, 0644);
	CU_ASSERT_EQUAL_FATAL(rr_dir_list(root, &l), 0);
	CU_ASSERT_EQUAL_FATAL(l.n, 2);
	CU_ASSERT_STRING_EQUAL(l.files[0].path, ".hidden");
	CU_ASSERT_STRING_EQUAL(l.files[1].path, ".meta/.state");
	rr_dir_listing_free(&l);
	s_rm_rf(root);
}

static void test_a_symlink_is_skipped_counted_and_named(void)
{
	char root[64];
	struct rr_dir_listing l;

	s_tmpdir(root, sizeof(root));
	s_mkdir(root, "d");
	s_file(root, "d/real", 5, 0644);
	s_symlink(root, "d/link", "real");
	CU_ASSERT_EQUAL_FATAL(rr_dir_list(root, &l), 0);
	CU_ASSERT_EQUAL(l.n, 1);
	CU_ASSERT_STRING_EQUAL(l.files[0].path, "d/real");
	CU_ASSERT_EQUAL(l.skipped, 1);
	CU_ASSERT_STRING_EQUAL(l.first_skipped, "d/link");
	rr_dir_listing_free(&l);
	s_rm_rf(root);
}

static void test_symlinks_fifos_and_sockets_are_skipped_and_never_followed(void)
{
	char root[64], outside[64], p[PATH_MAX];
	struct rr_dir_listing l;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int sock;

	s_tmpdir(root, sizeof(root));
	s_tmpdir(outside, sizeof(outside));
	s_file(outside, "secret", 10, 0600);
	s_file(root, "weights.bin", 8, 0644);
	s_symlink(root, "to-file", "weights.bin");
	s_symlink(root, "to-outside-dir", outside);   /* a directory: must not be entered */
	s_symlink(root, "dangling", "does-not-exist");
	s_join(p, sizeof(p), root, "fifo");
	CU_ASSERT_FATAL(mkfifo(p, 0600) == 0);
	s_join(sa.sun_path, sizeof(sa.sun_path), root, "sock");
	sock = socket(AF_UNIX, SOCK_STREAM, 0);
	CU_ASSERT_FATAL(sock >= 0);
	CU_ASSERT_FATAL(bind(sock, (struct sockaddr *)&sa, sizeof(sa)) == 0);

	CU_ASSERT_EQUAL_FATAL(rr_dir_list(root, &l), 0);
	CU_ASSERT_EQUAL(l.n, 1);
	CU_ASSERT_STRING_EQUAL(l.files[0].path, "weights.bin");
	CU_ASSERT_EQUAL(l.skipped, 5);
	/* The first one met in directory order: any of them. */
	CU_ASSERT(strcmp(l.first_skipped, "to-file") == 0 ||
		  strcmp(l.first_skipped, "to-outside-dir") == 0 ||
		  strcmp(l.first_skipped, "dangling") == 0 || strcmp(l.first_skipped, "fifo") == 0 ||
		  strcmp(l.first_skipped, "sock") == 0);
	CU_ASSERT_PTR_NULL(s_find(&l, "to-outside-dir/secret"));
	rr_dir_listing_free(&l);
	close(sock);
	s_rm_rf(root);
	s_rm_rf(outside);
}

static void test_missing_root_is_enoent(void)
{
	char root[64], p[PATH_MAX];
	struct rr_dir_listing l;

	s_tmpdir(root, sizeof(root));
	s_join(p, sizeof(p), root, "missing");
	CU_ASSERT_EQUAL(rr_dir_list(p, &l), RR_ENOENT);
	CU_ASSERT_EQUAL(l.n, 0);
	CU_ASSERT_PTR_NULL(l.files);
	rr_dir_listing_free(&l);
	/* A regular file is not a directory to walk either. */
	s_file(root, "plain", 1, 0644);
	s_join(p, sizeof(p), root, "plain");
	CU_ASSERT_EQUAL(rr_dir_list(p, &l), RR_ENOENT);
	s_rm_rf(root);
}

static void test_empty_directory_lists_nothing(void)
{
	char root[64];
	struct rr_dir_listing l;

	s_tmpdir(root, sizeof(root));
	CU_ASSERT_EQUAL_FATAL(rr_dir_list(root, &l), 0);
	CU_ASSERT_EQUAL(l.n, 0);
	CU_ASSERT_EQUAL(l.skipped, 0);
	CU_ASSERT_STRING_EQUAL(l.first_skipped, "");
	rr_dir_listing_free(&l);
	/* Empty subdirectories hold no files, so they add nothing either. */
	s_mkdir(root, "x");
	s_mkdir(root, "x/y");
	CU_ASSERT_EQUAL_FATAL(rr_dir_list(root, &l), 0);
	CU_ASSERT_EQUAL(l.n, 0);
	CU_ASSERT_EQUAL(l.skipped, 0);
	rr_dir_listing_free(&l);
	s_rm_rf(root);
}

static void test_root_with_a_trailing_slash_gives_the_same_paths(void)
{
	char root[64], slashed[80];
	struct rr_dir_listing l;

	s_tmpdir(root, sizeof(root));
	s_mkdir(root, "d");
	s_file(root, "d/f", 1, 0644);
	snprintf(slashed, sizeof(slashed), "%s/", root);
	CU_ASSERT_EQUAL_FATAL(rr_dir_list(slashed, &l), 0);
	CU_ASSERT_EQUAL_FATAL(l.n, 1);
	CU_ASSERT_STRING_EQUAL(l.files[0].path, "d/f");
	rr_dir_listing_free(&l);
	s_rm_rf(root);
}

/* Makes `levels` nested directories "d/d/d..." under root with a file "f" at the bottom. */
static void s_deep(const char *root, int levels)
{
	char rel[PATH_MAX] = "";
	size_t n = 0;

	for (int i = 0; i < levels; i++) {
		n += (size_t)snprintf(rel + n, sizeof(rel) - n, "%sd", i ? "/" : "");
		s_mkdir(root, rel);
	}
	snprintf(rel + n, sizeof(rel) - n, "/f");
	s_file(root, rel, 1, 0644);
}

static void test_64_levels_of_directories_are_walked(void)
{
	char root[64];
	struct rr_dir_listing l;

	s_tmpdir(root, sizeof(root));
	s_deep(root, 64);
	CU_ASSERT_EQUAL_FATAL(rr_dir_list(root, &l), 0);
	CU_ASSERT_EQUAL_FATAL(l.n, 1);
	CU_ASSERT_EQUAL(strlen(l.files[0].path), 64 * 2 + 1);
	rr_dir_listing_free(&l);
	s_rm_rf(root);
}

static void test_a_tree_deeper_than_the_limit_is_refused_and_nothing_leaks(void)
{
	char root[64];
	struct rr_dir_listing l;

	s_tmpdir(root, sizeof(root));
	s_file(root, "top", 1, 0644);
	s_deep(root, 100);
	CU_ASSERT_EQUAL(rr_dir_list(root, &l), RR_ETOOBIG);
	CU_ASSERT_EQUAL(l.n, 0);
	CU_ASSERT_PTR_NULL(l.files);
	s_rm_rf(root);
}

static void test_many_files_are_all_listed(void)
{
	char root[64], name[32];
	struct rr_dir_listing l;
	int sorted = 1;

	s_tmpdir(root, sizeof(root));
	s_mkdir(root, "shard");
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "shard/%03d.bin", 299 - i);
		s_file(root, name, (size_t)i % 3, 0644);
	}
	CU_ASSERT_EQUAL_FATAL(rr_dir_list(root, &l), 0);
	CU_ASSERT_EQUAL_FATAL(l.n, 300);
	for (size_t i = 1; i < l.n; i++)
		sorted &= strcmp(l.files[i - 1].path, l.files[i].path) < 0;
	CU_ASSERT(sorted);
	CU_ASSERT_STRING_EQUAL(l.files[0].path, "shard/000.bin");
	CU_ASSERT_STRING_EQUAL(l.files[299].path, "shard/299.bin");
	rr_dir_listing_free(&l);
	s_rm_rf(root);
}

static void test_listing_free_leaves_an_empty_listing(void)
{
	char root[64];
	struct rr_dir_listing l;

	s_tmpdir(root, sizeof(root));
	s_file(root, "f", 1, 0644);
	CU_ASSERT_EQUAL_FATAL(rr_dir_list(root, &l), 0);
	rr_dir_listing_free(&l);
	CU_ASSERT_EQUAL(l.n, 0);
	CU_ASSERT_PTR_NULL(l.files);
	rr_dir_listing_free(&l); /* a second free is harmless */
	s_rm_rf(root);
}

/* Listing a directory held open: the caller's descriptor stays usable, and each file
 * carries the inode and mtime it had, for reads to be checked against. */
static void test_list_fd_records_inodes_and_keeps_the_descriptor(void)
{
	char root[64], p[PATH_MAX];
	struct rr_dir_listing l;
	struct stat st;
	int fd;

	s_tmpdir(root, sizeof(root));
	s_mkdir(root, "a");
	s_file(root, "a/x", 3, 0644);
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(rr_dir_list_fd(fd, &l), 0);
	CU_ASSERT_EQUAL_FATAL(l.n, 1);
	s_join(p, sizeof(p), root, "a/x");
	CU_ASSERT_EQUAL(lstat(p, &st), 0);
	CU_ASSERT_EQUAL(l.files[0].st.st_ino, st.st_ino);
	CU_ASSERT_EQUAL(l.files[0].st.st_dev, st.st_dev);
	CU_ASSERT_EQUAL(l.files[0].st.st_mtim.tv_nsec, st.st_mtim.tv_nsec);
	rr_dir_listing_free(&l);
	/* Listed twice through the same descriptor: the first listing did not consume it. */
	CU_ASSERT_EQUAL(rr_dir_list_fd(fd, &l), 0);
	CU_ASSERT_EQUAL(l.n, 1);
	CU_ASSERT_EQUAL(fstatat(fd, "a/x", &st, AT_SYMLINK_NOFOLLOW), 0);
	rr_dir_listing_free(&l);
	close(fd);
	s_rm_rf(root);
}

static CU_TestInfo s_tests[] = {
	{ "test_list_fd_records_inodes_and_keeps_the_descriptor",
	  test_list_fd_records_inodes_and_keeps_the_descriptor },
	{ "test_nested_files_are_listed_with_relative_sorted_paths",
	  test_nested_files_are_listed_with_relative_sorted_paths },
	{ "test_modes_and_sizes_are_those_of_each_file", test_modes_and_sizes_are_those_of_each_file },
	{ "test_dot_files_and_dot_directories_are_listed",
	  test_dot_files_and_dot_directories_are_listed },
	{ "test_a_symlink_is_skipped_counted_and_named", test_a_symlink_is_skipped_counted_and_named },
	{ "test_symlinks_fifos_and_sockets_are_skipped_and_never_followed",
	  test_symlinks_fifos_and_sockets_are_skipped_and_never_followed },
	{ "test_missing_root_is_enoent", test_missing_root_is_enoent },
	{ "test_empty_directory_lists_nothing", test_empty_directory_lists_nothing },
	{ "test_root_with_a_trailing_slash_gives_the_same_paths",
	  test_root_with_a_trailing_slash_gives_the_same_paths },
	{ "test_64_levels_of_directories_are_walked", test_64_levels_of_directories_are_walked },
	{ "test_a_tree_deeper_than_the_limit_is_refused_and_nothing_leaks",
	  test_a_tree_deeper_than_the_limit_is_refused_and_nothing_leaks },
	{ "test_many_files_are_all_listed", test_many_files_are_all_listed },
	{ "test_listing_free_leaves_an_empty_listing", test_listing_free_leaves_an_empty_listing },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("dirwalk", s_tests)
