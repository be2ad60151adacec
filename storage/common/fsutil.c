/* Local file helpers. Durable writes follow redis (rdb.c): temp file beside the target,
 * write, fsync, close, rename, fsync the directory, and remove the temp file on any error. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rr/error.h"
#include "rr/fsutil.h"

/* rm -rf holds one descriptor per level; deeper trees than this are not ours. */
#define S_REMOVE_MAX_DEPTH 256
/* Largest single read/write; Linux caps a transfer at about 2 GiB anyway. */
#define S_IO_CHUNK ((size_t)1 << 30)
#define S_READ_STEP ((size_t)64 * 1024)

/* Tells temp names apart where random bytes are not to be had. */
static atomic_uint_fast64_t s_tmp_counter;

/* Attempts at a temp name before giving up on EEXIST (each name is new and random). */
#define S_TEMP_TRIES 8

/* Splits path into a malloc'd directory ("." when there is none) and its last component. */
static int s_split(const char *path, char **dir_out, const char **base_out)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char *dir;

	if (*base == '\0')
		return RR_EINVAL; /* "", "dir/": no file name */
	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return RR_ENOMEM;
	*dir_out = dir;
	*base_out = base;
	return 0;
}

int rr_pwrite_all(int fd, const void *data, size_t len, int64_t off)
{
	const unsigned char *p = data;

	while (len > 0) {
		size_t want = len < S_IO_CHUNK ? len : S_IO_CHUNK;
		ssize_t n = off < 0 ? write(fd, p, want) : pwrite(fd, p, want, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return rr_error_from_errno(errno);
		}
		if (n == 0)
			return RR_EIO; /* no progress and no errno: do not spin */
		p += n;
		len -= (size_t)n;
		if (off >= 0)
			off += n;
	}
	return 0;
}

int rr_write_all(int fd, const void *data, size_t len)
{
	return rr_pwrite_all(fd, data, len, -1);
}

int rr_pread_full(int fd, void *buf, size_t len, int64_t off, size_t *got)
{
	unsigned char *p = buf;

	*got = 0;
	while (*got < len) {
		ssize_t n = pread(fd, p + *got, len - *got, (off_t)(off + (int64_t)*got));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return rr_error_from_errno(errno);
		}
		if (n == 0)
			break; /* end of file */
		*got += (size_t)n;
	}
	return 0;
}

/* close() after fsync: an error still means the kernel could not keep the data (NFS reports
 * late write errors here). EINTR is not one: Linux has released the descriptor already and
 * the data was synced before. */
static int s_close_checked(int fd)
{
	if (close(fd) < 0 && errno != EINTR)
		return rr_error_from_errno(errno);
	return 0;
}

void rr_temp_path(char *out, size_t cap, const char *dir, const char *base, const char *tag)
{
	uint64_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		r = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^
		    (atomic_fetch_add(&s_tmp_counter, 1) << 40);
	}
	snprintf(out, cap, "%s/.%s.%s.%ld.%016llx", dir, base, tag, (long)getpid(),
		 (unsigned long long)r);
}

int rr_write_file_durable(const char *path, const void *data, size_t len, mode_t mode)
{
	char *dir = NULL, *tmp = NULL;
	const char *base;
	int fd = -1, tmp_created = 0, rc;
	size_t tmp_size;

	if (len > 0 && !data)
		return RR_EINVAL;
	rc = s_split(path, &dir, &base);
	if (rc)
		goto out;
	tmp_size = strlen(dir) + strlen(base) + RR_TEMP_PATH_EXTRA;
	tmp = malloc(tmp_size);
	if (!tmp) {
		rc = RR_ENOMEM;
		goto out;
	}
	for (int tries = 0; tries < S_TEMP_TRIES; tries++) {
		rr_temp_path(tmp, tmp_size, dir, base, "tmp");
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			break; /* EEXIST: another writer's temp file by chance, a new name */
	}
	if (fd < 0) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	tmp_created = 1;
	rc = rr_write_all(fd, data, len);
	if (rc)
		goto out;
	if (fsync(fd) < 0) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	rc = s_close_checked(fd);
	fd = -1;
	if (rc)
		goto out;
	if (rename(tmp, path) < 0) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	tmp_created = 0; /* it is path now */
	rc = rr_fsync_dir(dir);

out:
	if (fd >= 0)
		close(fd);
	if (tmp_created)
		unlink(tmp);
	free(tmp);
	free(dir);
	return rc;
}

/* Reads the file open as fd (which it closes) into out, as rr_read_file. */
static int s_read_fd(int fd, struct rr_buf *out)
{
	size_t start = out->len;
	struct stat st;
	int rc = 0;

	if (fstat(fd, &st) < 0) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = rr_error_from_errno(EISDIR);
		goto out;
	}
	/* The size is only a hint (the file may change under us), but it lets an oversized file
	 * fail before any memory is spent and a fitting one be read with one allocation. */
	if (S_ISREG(st.st_mode) && st.st_size > 0) {
		if ((uint64_t)st.st_size > out->max - out->len) {
			rc = RR_ETOOBIG;
			goto out;
		}
		rc = rr_buf_reserve(out, (size_t)st.st_size);
		if (rc)
			goto out;
	}
	for (;;) {
		size_t room = out->max - out->len;
		ssize_t n;

		if (room == 0) {
			/* At the ceiling: one more byte means the file does not fit. */
			unsigned char probe;
			n = read(fd, &probe, 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				rc = rr_error_from_errno(errno);
			else if (n > 0)
				rc = RR_ETOOBIG;
			break;
		}
		if (out->cap <= out->len + 1) {
			rc = rr_buf_reserve(out, room < S_READ_STEP ? room : S_READ_STEP);
			if (rc)
				break;
		}
		if (room > out->cap - out->len - 1)
			room = out->cap - out->len - 1; /* the last byte is the buffer's NUL */
		if (room > S_IO_CHUNK)
			room = S_IO_CHUNK;
		n = read(fd, out->data + out->len, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = rr_error_from_errno(errno);
			break;
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
	}

out:
	close(fd);
	if (rc)
		out->len = start; /* a failed read leaves the buffer as it was */
	if (out->data)
		out->data[out->len] = '\0';
	return rc;
}

int rr_read_file(const char *path, struct rr_buf *out)
{
	int fd;

	if (out->len > out->max)
		return RR_ETOOBIG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rr_error_from_errno(errno);
	return s_read_fd(fd, out);
}

int rr_read_regular_file(const char *path, struct rr_buf *out)
{
	struct stat st;
	int fd, fl;

	if (out->len > out->max)
		return RR_ETOOBIG;
	/* O_NONBLOCK: a FIFO would block the open until a writer came; this way it opens at
	 * once and is refused below. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return rr_error_from_errno(errno);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return RR_EPATH;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int rc = rr_error_from_errno(errno);
		close(fd);
		return rc;
	}
	return s_read_fd(fd, out);
}

int rr_fsync_dir(const char *dir)
{
	int fd, rc = 0;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return rr_error_from_errno(errno);
	/* EINVAL: this filesystem cannot sync a directory; there is nothing more to do. */
	if (fsync(fd) < 0 && errno != EINVAL)
		rc = rr_error_from_errno(errno);
	close(fd);
	return rc;
}

/* Creates one directory; a new one's entry is made durable by syncing its parent, so a
 * file later written durably inside it cannot vanish with it after a crash. */
static int s_mkdir_one(const char *path, mode_t mode)
{
	struct stat st;
	char *parent = NULL;
	const char *base;
	int rc;

	if (mkdir(path, mode) < 0) {
		if (errno != EEXIST)
			return rr_error_from_errno(errno);
		if (stat(path, &st) < 0)
			return rr_error_from_errno(errno);
		return S_ISDIR(st.st_mode) ? 0 : RR_EEXIST; /* a file is in the way */
	}
	rc = s_split(path, &parent, &base);
	if (rc)
		return rc;
	rc = rr_fsync_dir(parent);
	free(parent);
	return rc;
}

int rr_mkdir_p(const char *path)
{
	return rr_mkdir_p_mode(path, 0755);
}

int rr_mkdir_p_mode(const char *path, mode_t mode)
{
	struct stat st;
	size_t n;
	char *p, *c;
	int rc = 0;

	if (!path || !*path)
		return RR_EINVAL;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 0; /* the common case: nothing to create */
	p = strdup(path);
	if (!p)
		return RR_ENOMEM;
	n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	for (c = p + 1;; c++) {
		char save = *c;
		if (save != '/' && save != '\0')
			continue;
		if (c[-1] != '/') { /* "a//b": the empty component was handled already */
			*c = '\0';
			rc = s_mkdir_one(p, mode);
			*c = save;
			if (rc)
				break;
		}
		if (save == '\0')
			break;
	}
	free(p);
	return rc;
}

int rr_dir_each(int fd, int skip_hidden, rr_dir_entry_cb cb, void *ud)
{
	struct dirent *de;
	DIR *d;
	int rc = 0;

	d = fdopendir(fd);
	if (!d) {
		rc = rr_error_from_errno(errno);
		close(fd);
		return rc;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				rc = rr_error_from_errno(errno);
			break;
		}
		if (skip_hidden ? de->d_name[0] == '.' :
				  strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		rc = cb(dirfd(d), de->d_name, de->d_type, ud);
		if (rc)
			break;
	}
	closedir(d);
	return rc;
}

static int s_empty_dir(int fd, int depth);

/* One entry of a directory being emptied: a subdirectory is emptied, then removed. */
static int s_empty_entry(int dfd, const char *name, unsigned char type, void *ud)
{
	const int *depth = ud;
	int is_dir, rc;

	if (type == DT_UNKNOWN) {
		struct stat st;
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return errno == ENOENT ? 0 : rr_error_from_errno(errno);
		is_dir = S_ISDIR(st.st_mode);
	} else {
		is_dir = type == DT_DIR;
	}
	if (is_dir) {
		int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			return errno == ENOENT ? 0 : rr_error_from_errno(errno);
		rc = s_empty_dir(cfd, *depth + 1);
		if (rc)
			return rc;
		if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
			return rr_error_from_errno(errno);
	} else if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT) {
		return rr_error_from_errno(errno);
	}
	return 0;
}

/* Empties the directory open as fd (which it takes over) without following symlinks:
 * everything is reached through openat(O_NOFOLLOW) and removed with unlinkat, so a tree
 * that changes under us cannot redirect the removal outside it. */
static int s_empty_dir(int fd, int depth)
{
	if (depth > S_REMOVE_MAX_DEPTH) {
		close(fd);
		return RR_ETOOBIG;
	}
	return rr_dir_each(fd, 0, s_empty_entry, &depth);
}

int rr_remove_tree(const char *path)
{
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : rr_error_from_errno(errno);
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(path) < 0 && errno != ENOENT)
			return rr_error_from_errno(errno);
		return 0;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : rr_error_from_errno(errno);
	rc = s_empty_dir(fd, 0);
	if (rc)
		return rc;
	if (rmdir(path) < 0 && errno != ENOENT)
		return rr_error_from_errno(errno);
	return 0;
}

char *rr_path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb, sep;
	char *p;

	while (la > 1 && a[la - 1] == '/')
		la--; /* "/" itself stays */
	while (*b == '/')
		b++;
	lb = strlen(b);
	if (la == 0)
		return strdup(b);
	if (lb == 0)
		return strndup(a, la);
	sep = !(la == 1 && a[0] == '/');
	p = malloc(la + sep + lb + 1);
	if (!p)
		return NULL;
	memcpy(p, a, la);
	if (sep)
		p[la] = '/';
	memcpy(p + la + sep, b, lb + 1);
	return p;
}
