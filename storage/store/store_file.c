/* The file:// backend: each key is a file under the root directory.
 *
 * Every put writes a complete, fsynced temp file beside the target first, so no reader ever
 * sees a partial object, and then publishes it in one step:
 *   - create-only: link(temp, key) fails with EEXIST if the key exists, atomically, also
 *     between processes;
 *   - plain and compare-and-swap: rename(temp, key) under an exclusive flock, which the
 *     compare-and-swap also holds while it reads the current version tag. flock locks belong
 *     to the open file description, so they exclude the threads of one process as well as
 *     other processes. del takes the same lock, so a replace cannot resurrect a key deleted
 *     between its check and its rename.
 * Locks are 256 files "<root>/.locks/<xx>" picked by the first byte of sha256(key): bounded
 * in number (a lock file per chunk would double the inodes) and outside the key namespace,
 * because key components may not start with '.'. Temp files are dot-names too, so list
 * never returns them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "rr/error.h"
#include "rr/fsutil.h"
#include "rr/hash.h"
#include "rr/store.h"

#define S_ETAG_BYTES 16 /* etag: the first 32 hex digits of sha256(content) */
#define S_LOCK_DIR ".locks"
/* A put whose directory a concurrent del just removed creates it again; bound the rounds. */
#define S_PUT_DIR_RETRIES 16
#define S_LIST_MAX_DEPTH 128

struct s_file_store {
	struct rr_store base;
	char *root;     /* absolute, no trailing '/' */
	char *lock_dir; /* <root>/.locks */
	mode_t file_mode, dir_mode; /* for what the store creates (s_modes) */
};

/* Objects are 0600 in 0700 directories, so a store beside an unprivileged trainer does not
 * hand it what the agent stored (a file the trainer could not read, uploaded through a
 * symlink, say). Unless the root says otherwise: its group and other bits are kept (a
 * 0750 or 0755 root shares with them on purpose; setgid passes its group down by itself),
 * and a root with a default ACL gets the old 0644/0755, for the ACL to decide. */
static void s_modes(struct s_file_store *fs, const struct stat *root)
{
	if (getxattr(fs->root, "system.posix_acl_default", NULL, 0) > 0) {
		fs->file_mode = 0644;
		fs->dir_mode = 0755;
		return;
	}
	fs->dir_mode = 0700 | (root->st_mode & 0077);
	fs->file_mode = 0600 | (root->st_mode & 0066);
}

/* A key is '/'-separated non-empty components, none starting with '.': that rejects "",
 * "/abs", "a//b", "a/", "." and "..", and reserves dot-names for temp files and locks. */
static int s_key_ok(const char *key)
{
	const char *c = key;

	if (!key || !*key)
		return 0;
	for (;;) {
		const char *end = strchr(c, '/');
		size_t n = end ? (size_t)(end - c) : strlen(c);
		if (n == 0 || c[0] == '.')
			return 0;
		if (!end)
			return 1;
		c = end + 1;
	}
}

static void s_etag_of(const void *data, size_t len, char *etag)
{
	uint8_t d[RR_SHA256_LEN];

	rr_sha256(len ? data : "", len, d);
	rr_hex_encode(d, S_ETAG_BYTES, etag);
}

/* The version tag of the file at path: RR_ENOENT when it is missing or not a regular file.
 * mmap is safe here because stored files are only ever replaced by rename, never
 * truncated in place. */
static int s_file_etag(const char *path, char *etag)
{
	struct stat st;
	void *map;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == EISDIR ? RR_ENOENT : rr_error_from_errno(errno);
	if (fstat(fd, &st) < 0) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = RR_ENOENT;
		goto out;
	}
	if (st.st_size == 0) {
		s_etag_of("", 0, etag);
		goto out;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	s_etag_of(map, (size_t)st.st_size, etag);
	munmap(map, (size_t)st.st_size);
out:
	close(fd);
	return rc;
}

/* A key's modification time as listings report it, Unix ms. */
static int64_t s_mtime_ms(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

/* Takes the exclusive lock for key; *fd_out is released with s_unlock. */
static int s_lock(struct s_file_store *fs, const char *key, int *fd_out)
{
	char hex[RR_SHA256_HEX_LEN + 1];
	char *path;
	int fd = -1, rc = 0;

	rr_sha256_hex(key, strlen(key), hex);
	hex[2] = '\0';
	path = rr_path_join(fs->lock_dir, hex);
	if (!path)
		return RR_ENOMEM;
	fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, fs->file_mode);
	if (fd < 0 && errno == ENOENT) {
		/* someone removed .locks; it holds nothing that must survive */
		rc = rr_mkdir_p_mode(fs->lock_dir, fs->dir_mode);
		if (rc)
			goto out;
		fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, fs->file_mode);
	}
	if (fd < 0) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			rc = rr_error_from_errno(errno);
			close(fd);
			fd = -1;
			goto out;
		}
	}
	*fd_out = fd;
out:
	free(path);
	return rc;
}

static void s_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* closing the last descriptor of the description drops the flock */
}

/* Makes a rename, link or unlink inside path's directory durable. */
static int s_sync_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
	int rc;

	if (!dir)
		return RR_ENOMEM;
	rc = rr_fsync_dir(dir);
	free(dir);
	/* The directory is gone only if a del removed our object and pruned it after we
	 * published: our write happened and was superseded, nothing is left to sync. */
	return rc == RR_ENOENT ? 0 : rc;
}

/* Writes data to a new temp file beside path (creating path's directories as needed) and
 * fsyncs and closes it. On success *tmp_out is the malloc'd temp path; on failure nothing
 * is left behind. */
static int s_write_temp(const struct s_file_store *fs, const char *path, const void *data,
			size_t len, char **tmp_out)
{
	const char *slash = strrchr(path, '/');
	char *dir = NULL, *tmp = NULL;
	size_t tmp_size;
	int fd = -1, rc = 0, attempt, created = 0;

	dir = strndup(path, (size_t)(slash - path));
	tmp_size = strlen(path) + RR_TEMP_PATH_EXTRA;
	tmp = malloc(tmp_size);
	if (!dir || !tmp) {
		rc = RR_ENOMEM;
		goto out;
	}

	/* ".<base>.put.<pid>.<random>": the "put" infix keeps them apart from
	 * rr_write_file_durable's ".tmp." names. */
	for (attempt = 0;; attempt++) {
		rr_temp_path(tmp, tmp_size, dir, slash + 1, "put");
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, fs->file_mode);
		if (fd >= 0)
			break;
		if (errno == ENOTDIR) {
			rc = RR_EINVAL; /* a key's directory is an object: "a/b" with "a" stored */
			goto out;
		}
		if (errno == EEXIST && attempt < S_PUT_DIR_RETRIES)
			continue; /* another writer's temp file by chance: a new name */
		if (errno != ENOENT || attempt == S_PUT_DIR_RETRIES) {
			rc = rr_error_from_errno(errno);
			goto out;
		}
		rc = rr_mkdir_p_mode(dir, fs->dir_mode);
		if (rc == RR_EEXIST)
			rc = RR_EINVAL; /* as above, found while creating directories */
		if (rc && rc != RR_ENOENT) /* ENOENT: pruned meanwhile, go round */
			goto out;
		rc = 0;
	}
	created = 1;
	rc = rr_write_all(fd, data, len);
	if (rc)
		goto out;
	if (fsync(fd) < 0) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	/* fsynced already, so EINTR from close (descriptor released anyway) loses nothing */
	if (close(fd) < 0 && errno != EINTR) {
		fd = -1;
		rc = rr_error_from_errno(errno);
		goto out;
	}
	fd = -1;
	*tmp_out = tmp;
	tmp = NULL;
out:
	if (fd >= 0)
		close(fd);
	if (tmp && created)
		unlink(tmp);
	free(tmp);
	free(dir);
	return rc;
}

/* After EEXIST from link: a directory at the key's place is not an object. */
static int s_exists_rc(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return RR_EINVAL;
	return RR_EEXIST;
}

static int s_file_put(struct rr_store *s, const char *key, const void *data, size_t len,
		      const struct rr_put_opts *opts, char *etag_out)
{
	struct s_file_store *fs = (struct s_file_store *)s;
	char cur[RR_ETAG_MAX];
	char *path = NULL, *tmp = NULL;
	int lock_fd = -1, rc;
	int create_only = opts && opts->if_none_match;
	const char *if_match = opts ? opts->if_match : NULL;

	if (!s_key_ok(key) || (len > 0 && !data) || (create_only && if_match))
		return RR_EINVAL;
	path = rr_path_join(fs->root, key);
	if (!path)
		return RR_ENOMEM;
	rc = s_write_temp(fs, path, data, len, &tmp);
	if (rc)
		goto out;

	if (create_only) {
		if (link(tmp, path) < 0) {
			rc = errno == EEXIST ? s_exists_rc(path) : rr_error_from_errno(errno);
			goto out;
		}
		unlink(tmp); /* the object is published; a leftover temp is only litter */
	} else {
		rc = s_lock(fs, key, &lock_fd);
		if (rc)
			goto out;
		if (if_match) {
			rc = s_file_etag(path, cur);
			if (rc)
				goto out;
			if (strcmp(cur, if_match) != 0) {
				rc = RR_EPRECOND;
				goto out;
			}
		}
		if (rename(tmp, path) < 0) {
			rc = errno == EISDIR ? RR_EINVAL : rr_error_from_errno(errno);
			goto out;
		}
		s_unlock(lock_fd);
		lock_fd = -1;
	}
	free(tmp);
	tmp = NULL;
	rc = s_sync_parent(path);
	if (rc)
		goto out;
	if (etag_out)
		s_etag_of(data, len, etag_out);
out:
	s_unlock(lock_fd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	free(path);
	return rc;
}

static int s_file_get(struct rr_store *s, const char *key, struct rr_buf *out, char *etag_out)
{
	struct s_file_store *fs = (struct s_file_store *)s;
	size_t start = out->len;
	struct stat st;
	char *path;
	int rc;

	if (!s_key_ok(key))
		return RR_EINVAL;
	path = rr_path_join(fs->root, key);
	if (!path)
		return RR_ENOMEM;
	rc = rr_read_file(path, out);
	if (rc && rc != RR_ENOENT && rc != RR_ETOOBIG && stat(path, &st) == 0 &&
	    !S_ISREG(st.st_mode))
		rc = RR_ENOENT; /* a directory of other keys, not an object */
	if (!rc && etag_out)
		s_etag_of(out->data ? out->data + start : NULL, out->len - start, etag_out);
	free(path);
	return rc;
}

static int s_file_head(struct rr_store *s, const char *key, uint64_t *size_out)
{
	struct s_file_store *fs = (struct s_file_store *)s;
	struct stat st;
	char *path;
	int rc = 0;

	if (!s_key_ok(key))
		return RR_EINVAL;
	path = rr_path_join(fs->root, key);
	if (!path)
		return RR_ENOMEM;
	if (stat(path, &st) < 0)
		rc = rr_error_from_errno(errno);
	else if (!S_ISREG(st.st_mode))
		rc = RR_ENOENT;
	else if (size_out)
		*size_out = (uint64_t)st.st_size;
	free(path);
	return rc;
}

struct s_walk {
	const char *prefix;
	size_t prefix_len;
	rr_store_list_cb cb;
	void *ud;
	char key[PATH_MAX]; /* the key being visited, built level by level */
};

/* One directory being visited: where its name ends in the key, and how deep it is. */
struct s_walk_level {
	struct s_walk *w;
	size_t key_len;
	int depth;
};

/* key[0..n) could still lead to a match: it and the prefix agree on their common part. */
static int s_may_match(const struct s_walk *w, size_t n)
{
	return memcmp(w->key, w->prefix, n < w->prefix_len ? n : w->prefix_len) == 0;
}

static int s_walk_dir(struct s_walk *w, int fd, size_t key_len, int depth);

/* One directory entry: a subdirectory is visited, a regular file under the prefix is an
 * object; symlinks, sockets, ...: not objects this backend wrote. Dot names (temp files,
 * the lock directory) never reach here. */
static int s_walk_entry(int dfd, const char *name, unsigned char type, void *ud)
{
	struct s_walk_level *l = ud;
	struct s_walk *w = l->w;
	struct stat st;
	size_t n = strlen(name), klen;

	(void)type;
	if (l->key_len + n + 2 > sizeof(w->key))
		return RR_ETOOBIG;
	memcpy(w->key + l->key_len, name, n + 1);
	klen = l->key_len + n;
	if (!s_may_match(w, klen))
		return 0;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : rr_error_from_errno(errno);
	if (S_ISDIR(st.st_mode)) {
		int cfd;

		w->key[klen++] = '/';
		w->key[klen] = '\0';
		if (!s_may_match(w, klen))
			return 0;
		cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			return errno == ENOENT ? 0 : rr_error_from_errno(errno);
		return s_walk_dir(w, cfd, klen, l->depth + 1);
	}
	if (S_ISREG(st.st_mode) && klen >= w->prefix_len) {
		struct rr_store_entry e = {
			.key = w->key,
			.size = (uint64_t)st.st_size,
			.mtime_unix_ms = s_mtime_ms(&st),
		};
		return w->cb(&e, w->ud);
	}
	return 0;
}

/* Visits the directory open as fd (taken over), whose key with its trailing '/' is
 * key[0..key_len). Entries may vanish under a concurrent del; those are skipped. */
static int s_walk_dir(struct s_walk *w, int fd, size_t key_len, int depth)
{
	struct s_walk_level l = { w, key_len, depth };

	if (depth > S_LIST_MAX_DEPTH) {
		close(fd);
		return RR_ETOOBIG;
	}
	return rr_dir_each(fd, 1, s_walk_entry, &l);
}

static int s_file_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb, void *ud)
{
	struct s_file_store *fs = (struct s_file_store *)s;
	struct s_walk *w = NULL;
	const char *slash;
	char *dir = NULL, *path = NULL;
	size_t dir_len;
	int fd, rc = 0;

	if (!prefix)
		prefix = "";
	if (!cb || prefix[0] == '/')
		return RR_EINVAL;
	/* Start in the deepest directory the prefix names in full: "run/checkpoints/" starts
	 * in run/checkpoints, "run/chec" in run. */
	slash = strrchr(prefix, '/');
	dir_len = slash ? (size_t)(slash - prefix) : 0;
	if (dir_len + 2 > PATH_MAX)
		return RR_ETOOBIG;
	w = calloc(1, sizeof(*w));
	if (!w)
		return RR_ENOMEM;
	w->prefix = prefix;
	w->prefix_len = strlen(prefix);
	w->cb = cb;
	w->ud = ud;
	if (dir_len > 0) {
		dir = strndup(prefix, dir_len);
		if (!dir) {
			rc = RR_ENOMEM;
			goto out;
		}
		if (!s_key_ok(dir)) {
			rc = RR_EINVAL;
			goto out;
		}
		path = rr_path_join(fs->root, dir);
		memcpy(w->key, dir, dir_len);
		w->key[dir_len++] = '/';
		w->key[dir_len] = '\0';
	} else {
		path = strdup(fs->root);
	}
	if (!path) {
		rc = RR_ENOMEM;
		goto out;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* nothing stored under the prefix yet */
		if (errno != ENOENT && errno != ENOTDIR)
			rc = rr_error_from_errno(errno);
		goto out;
	}
	rc = s_walk_dir(w, fd, dir_len, 0);
out:
	free(path);
	free(dir);
	free(w);
	return rc;
}

/* Removes the directories between path and the root that are now empty, deepest first;
 * stops at the first one that is not (ENOTEMPTY) or is gone. A put racing this recreates
 * its directory (s_write_temp). */
static void s_prune_dirs(struct s_file_store *fs, const char *path)
{
	size_t root_len = strlen(fs->root);
	char *p = strdup(path);
	char *slash;

	if (!p)
		return;
	while ((slash = strrchr(p, '/')) && (size_t)(slash - p) > root_len) {
		*slash = '\0';
		if (rmdir(p) < 0)
			break;
	}
	free(p);
}

/* Deletes key if it was last written at or before not_after_ms (INT64_MAX: whenever). Under
 * the key's lock, which a plain put holds for its rename: a put and this are one after the
 * other, never interleaved. */
static int s_file_remove(struct rr_store *s, const char *key, int64_t not_after_ms)
{
	struct s_file_store *fs = (struct s_file_store *)s;
	struct stat st;
	char *path;
	int lock_fd = -1, rc, removed = 0;

	if (!s_key_ok(key))
		return RR_EINVAL;
	path = rr_path_join(fs->root, key);
	if (!path)
		return RR_ENOMEM;
	rc = s_lock(fs, key, &lock_fd);
	if (rc)
		goto out;
	if (not_after_ms != INT64_MAX && lstat(path, &st) == 0 &&
	    s_mtime_ms(&st) > not_after_ms) {
		s_unlock(lock_fd);
		rc = RR_EPRECOND; /* written again since the listing */
		goto out;
	}
	if (unlink(path) == 0)
		removed = 1;
	else if (errno != ENOENT && errno != ENOTDIR && errno != EISDIR) /* EISDIR: not a key */
		rc = rr_error_from_errno(errno);
	s_unlock(lock_fd);
	if (removed)
		rc = s_sync_parent(path);
	s_prune_dirs(fs, path);
out:
	free(path);
	return rc;
}

static int s_file_del(struct rr_store *s, const char *key)
{
	return s_file_remove(s, key, INT64_MAX);
}

static int s_file_del_if_old(struct rr_store *s, const char *key, int64_t not_after_ms)
{
	return s_file_remove(s, key, not_after_ms);
}

static void s_file_destroy(struct rr_store *s)
{
	struct s_file_store *fs = (struct s_file_store *)s;

	free(fs->root);
	free(fs->lock_dir);
	free(fs->base.url);
	free(fs);
}

static const struct rr_store_vtable s_file_vtable = {
	.scheme = "file",
	.put = s_file_put,
	.get = s_file_get,
	.head = s_file_head,
	.list = s_file_list,
	.del = s_file_del,
	.del_if_old = s_file_del_if_old,
	.destroy = s_file_destroy,
};

int rr_store_file_new(const char *dir, struct rr_store **out)
{
	struct s_file_store *fs;
	struct stat st;
	size_t url_size;
	int rc, existed;

	if (!dir || !*dir || !out)
		return RR_EINVAL;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return RR_ENOMEM;
	fs->base.vt = &s_file_vtable;
	existed = stat(dir, &st) == 0;
	rc = rr_mkdir_p(dir);
	if (rc)
		goto out;
	/* absolute, so a later chdir of the process cannot move the store */
	fs->root = realpath(dir, NULL);
	if (!fs->root) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	/* A root made here is private (its parents stay 0755: the checkpoint dir may be
	 * beside it); one that existed says itself whom it shares with. */
	if (!existed && chmod(fs->root, 0700) != 0) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	if (stat(fs->root, &st) != 0) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	s_modes(fs, &st);
	fs->lock_dir = rr_path_join(fs->root, S_LOCK_DIR);
	url_size = strlen(fs->root) + sizeof("file://");
	fs->base.url = malloc(url_size);
	if (!fs->lock_dir || !fs->base.url) {
		rc = RR_ENOMEM;
		goto out;
	}
	snprintf(fs->base.url, url_size, "file://%s", fs->root);
	rc = rr_mkdir_p_mode(fs->lock_dir, fs->dir_mode);
	if (rc)
		goto out;
	*out = &fs->base;
	fs = NULL;
out:
	if (fs)
		s_file_destroy(&fs->base);
	return rc;
}
