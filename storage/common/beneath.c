/* Opens below a held directory without following symlinks. openat2 does the whole walk in
 * the kernel; the fallback walks one component at a time with O_NOFOLLOW, which is as safe
 * (each step is relative to a directory already open), only more system calls. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rr/beneath.h"
#include "rr/error.h"

/* Names longer than this are not ours to open (PATH_MAX). */
#define S_REL_MAX 4096

/* 1 once openat2 was found missing (ENOSYS, or EPERM from a seccomp filter): no retries. */
static atomic_int s_no_openat2;
static int s_force_fallback;

void rr_beneath_force_fallback(int on)
{
	s_force_fallback = on;
}

/* ELOOP: a symlink where O_NOFOLLOW or RESOLVE_NO_SYMLINKS met one; EXDEV: RESOLVE_BENEATH
 * refused to leave; ENOTDIR: a file where a directory was needed. */
static int s_map(int e)
{
	if (e == ELOOP || e == EXDEV || e == ENOTDIR || e == ENXIO)
		return RR_EPATH;
	return rr_error_from_errno(e);
}

/* 1 when rel is a relative path that stays below its base on its own. */
static int s_rel_ok(const char *rel)
{
	const char *comp = rel, *p;

	if (!rel || !*rel || *rel == '/' || strnlen(rel, S_REL_MAX + 1) > S_REL_MAX)
		return 0;
	for (p = rel;; p++) {
		if (*p == '/' || *p == '\0') {
			size_t n = (size_t)(p - comp);
			if (n == 0 || (n == 1 && comp[0] == '.') ||
			    (n == 2 && comp[0] == '.' && comp[1] == '.'))
				return 0;
			if (*p == '\0')
				return 1;
			comp = p + 1;
		}
	}
}

/* openat2 with no symlink and no escape; -2 (errno kept) when the kernel lacks it. */
static int s_openat2(int dirfd, const char *rel, int flags)
{
	struct open_how how;
	long fd;

	if (s_force_fallback || atomic_load(&s_no_openat2))
		return -2;
	memset(&how, 0, sizeof(how));
	how.flags = (unsigned long long)flags;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	do {
		fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	} while (fd < 0 && errno == EINTR);
	if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {
		atomic_store(&s_no_openat2, 1);
		return -2;
	}
	return (int)fd;
}

/* The fallback: each directory on the way opened O_NOFOLLOW | O_DIRECTORY relative to the
 * one before, then the last component with flags (which carry O_NOFOLLOW). */
static int s_walk(int dirfd, const char *rel, int flags)
{
	char *copy = strdup(rel), *comp, *slash;
	int cur = dirfd, fd = -1, saved = 0;

	if (!copy) {
		errno = ENOMEM;
		return -1;
	}
	for (comp = copy; (slash = strchr(comp, '/')) != NULL; comp = slash + 1) {
		int next;
		*slash = '\0';
		do {
			next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		} while (next < 0 && errno == EINTR);
		saved = errno;
		if (cur != dirfd)
			close(cur);
		cur = next;
		if (cur < 0)
			goto out;
	}
	do {
		fd = openat(cur, comp, flags);
	} while (fd < 0 && errno == EINTR);
	saved = errno;
	if (cur != dirfd)
		close(cur);
out:
	free(copy);
	errno = saved;
	return fd;
}

static int s_open(int dirfd, const char *rel, int flags)
{
	int fd = s_openat2(dirfd, rel, flags);
	return fd == -2 ? s_walk(dirfd, rel, flags) : fd;
}

int rr_open_beneath(int dirfd, const char *rel, const struct stat *want, int *fd_out,
		    struct stat *st_out)
{
	struct stat st;
	int fd, fl, rc = 0;

	*fd_out = -1;
	if (!s_rel_ok(rel))
		return RR_EPATH;
	/* O_NONBLOCK: opening a FIFO for reading would wait for a writer; this way it returns
	 * at once and the fstat below refuses it. */
	fd = s_open(dirfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return s_map(errno);
	if (fstat(fd, &st) != 0) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	if (!S_ISREG(st.st_mode) ||
	    (want && (st.st_dev != want->st_dev || st.st_ino != want->st_ino))) {
		rc = RR_EPATH;
		goto out;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	if (st_out)
		*st_out = st;
out:
	if (rc)
		close(fd);
	else
		*fd_out = fd;
	return rc;
}

int rr_opendir_beneath(int dirfd, const char *rel, int *fd_out)
{
	int fd;

	*fd_out = -1;
	if (!s_rel_ok(rel))
		return RR_EPATH;
	fd = s_open(dirfd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return s_map(errno);
	*fd_out = fd;
	return 0;
}
