/* CUnit suite "beneath": opening below a held directory. Each case runs twice, through
 * openat2 (where the kernel has it) and through the per-component openat fallback. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "rr/beneath.h"
#include "rr/error.h"
#include "rr/fsutil.h"

#include "cunit_main.h"

static char s_root[64];
static int s_dirfd = -1;

static void s_put(const char *rel, const char *text)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", s_root, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(rr_write_all(fd, text, strlen(text)), 0);
	close(fd);
}

/* root/{a/b/file.txt, a/other.txt, fifo, outside -> /etc, a/link -> b, a/b/flink -> ../other.txt} */
static void s_setup(void)
{
	char path[256];

	snprintf(s_root, sizeof(s_root), "/tmp/rr_beneath_XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(s_root));
	snprintf(path, sizeof(path), "%s/a/b", s_root);
	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(path), 0);
	s_put("a/b/file.txt", "inside\n");
	s_put("a/other.txt", "other\n");
	snprintf(path, sizeof(path), "%s/fifo", s_root);
	CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/outside", s_root);
	CU_ASSERT_EQUAL_FATAL(symlink("/etc", path), 0);
	snprintf(path, sizeof(path), "%s/a/link", s_root);
	CU_ASSERT_EQUAL_FATAL(symlink("b", path), 0);
	snprintf(path, sizeof(path), "%s/a/b/flink", s_root);
	CU_ASSERT_EQUAL_FATAL(symlink("../other.txt", path), 0);
	s_dirfd = open(s_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CU_ASSERT_FATAL(s_dirfd >= 0);
}

static void s_teardown(void)
{
	close(s_dirfd);
	s_dirfd = -1;
	CU_ASSERT_EQUAL(rr_remove_tree(s_root), 0);
	rr_beneath_force_fallback(0);
}

static void s_opens_a_regular_file(int fallback)
{
	struct stat st;
	char buf[16] = "";
	int fd = -1;

	s_setup();
	rr_beneath_force_fallback(fallback);
	CU_ASSERT_EQUAL_FATAL(rr_open_beneath(s_dirfd, "a/b/file.txt", NULL, &fd, &st), 0);
	CU_ASSERT(S_ISREG(st.st_mode));
	CU_ASSERT_EQUAL(read(fd, buf, sizeof(buf) - 1), 7);
	CU_ASSERT_STRING_EQUAL(buf, "inside\n");
	/* Blocking again: the non-blocking flag was only for the open. */
	CU_ASSERT_EQUAL(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	CU_ASSERT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	s_teardown();
}

static void s_refuses_symlinks_anywhere(int fallback)
{
	int fd = 7;

	s_setup();
	rr_beneath_force_fallback(fallback);
	CU_ASSERT_EQUAL(rr_open_beneath(s_dirfd, "outside/passwd", NULL, &fd, NULL), RR_EPATH);
	CU_ASSERT_EQUAL(fd, -1);
	CU_ASSERT_EQUAL(rr_open_beneath(s_dirfd, "a/link/file.txt", NULL, &fd, NULL), RR_EPATH);
	CU_ASSERT_EQUAL(rr_open_beneath(s_dirfd, "a/b/flink", NULL, &fd, NULL), RR_EPATH);
	CU_ASSERT_EQUAL(rr_opendir_beneath(s_dirfd, "outside", &fd), RR_EPATH);
	CU_ASSERT_EQUAL(rr_opendir_beneath(s_dirfd, "a/link", &fd), RR_EPATH);
	CU_ASSERT_EQUAL(fd, -1);
	/* Paths that leave on their own are refused before any open. */
	CU_ASSERT_EQUAL(rr_open_beneath(s_dirfd, "../etc/passwd", NULL, &fd, NULL), RR_EPATH);
	CU_ASSERT_EQUAL(rr_open_beneath(s_dirfd, "/etc/passwd", NULL, &fd, NULL), RR_EPATH);
	CU_ASSERT_EQUAL(rr_open_beneath(s_dirfd, "a/./b/file.txt", NULL, &fd, NULL), RR_EPATH);
	CU_ASSERT_EQUAL(rr_open_beneath(s_dirfd, "a//b/file.txt", NULL, &fd, NULL), RR_EPATH);
	s_teardown();
}

/* A FIFO is refused at once: opening it for reading must not wait for a writer (if it
 * did, this test would hang and CTest's timeout would fail it). */
static void s_refuses_a_fifo_without_blocking(int fallback)
{
	int fd = -1;

	s_setup();
	rr_beneath_force_fallback(fallback);
	CU_ASSERT_EQUAL(rr_open_beneath(s_dirfd, "fifo", NULL, &fd, NULL), RR_EPATH);
	CU_ASSERT_EQUAL(fd, -1);
	CU_ASSERT_EQUAL(rr_open_beneath(s_dirfd, "a", NULL, &fd, NULL), RR_EPATH); /* a dir */
	s_teardown();
}

/* The file must be the inode that was listed: one put in its place is refused. */
static void s_refuses_another_inode(int fallback)
{
	struct stat want;
	char path[256];
	int fd = -1;

	s_setup();
	rr_beneath_force_fallback(fallback);
	CU_ASSERT_EQUAL_FATAL(fstatat(s_dirfd, "a/other.txt", &want, AT_SYMLINK_NOFOLLOW), 0);
	CU_ASSERT_EQUAL(rr_open_beneath(s_dirfd, "a/other.txt", &want, &fd, NULL), 0);
	close(fd);
	/* Written beside it, then renamed over it: a new inode while the old one still lives
	 * (unlink-then-create could reuse the inode number). */
	s_put("a/new.txt", "replaced\n");
	{
		char from[256];
		snprintf(from, sizeof(from), "%s/a/new.txt", s_root);
		snprintf(path, sizeof(path), "%s/a/other.txt", s_root);
		CU_ASSERT_EQUAL_FATAL(rename(from, path), 0);
	}
	fd = -1;
	CU_ASSERT_EQUAL(rr_open_beneath(s_dirfd, "a/other.txt", &want, &fd, NULL), RR_EPATH);
	CU_ASSERT_EQUAL(fd, -1);
	CU_ASSERT_EQUAL(rr_open_beneath(s_dirfd, "a/gone.txt", NULL, &fd, NULL), RR_ENOENT);
	s_teardown();
}

static void test_beneath_opens_a_regular_file(void) { s_opens_a_regular_file(0); }
static void test_beneath_fallback_opens_a_regular_file(void) { s_opens_a_regular_file(1); }
static void test_beneath_refuses_symlinks_anywhere(void) { s_refuses_symlinks_anywhere(0); }
static void test_beneath_fallback_refuses_symlinks_anywhere(void)
{
	s_refuses_symlinks_anywhere(1);
}
static void test_beneath_refuses_a_fifo_without_blocking(void)
{
	s_refuses_a_fifo_without_blocking(0);
}
static void test_beneath_fallback_refuses_a_fifo_without_blocking(void)
{
	s_refuses_a_fifo_without_blocking(1);
}
static void test_beneath_refuses_another_inode(void) { s_refuses_another_inode(0); }
static void test_beneath_fallback_refuses_another_inode(void) { s_refuses_another_inode(1); }

static CU_TestInfo s_tests[] = {
	{ "beneath_opens_a_regular_file", test_beneath_opens_a_regular_file },
	{ "beneath_fallback_opens_a_regular_file", test_beneath_fallback_opens_a_regular_file },
	{ "beneath_refuses_symlinks_anywhere", test_beneath_refuses_symlinks_anywhere },
	{ "beneath_fallback_refuses_symlinks_anywhere",
	  test_beneath_fallback_refuses_symlinks_anywhere },
	{ "beneath_refuses_a_fifo_without_blocking", test_beneath_refuses_a_fifo_without_blocking },
	{ "beneath_fallback_refuses_a_fifo_without_blocking",
	  test_beneath_fallback_refuses_a_fifo_without_blocking },
	{ "beneath_refuses_another_inode", test_beneath_refuses_another_inode },
	{ "beneath_fallback_refuses_another_inode", test_beneath_fallback_refuses_another_inode },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("beneath", s_tests)
