#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirwalk.h"
#include "rr/error.h"

#define MAX_DEPTH 64

struct s_walk {
	struct rr_dir_listing *out;
	size_t cap;
};

static int s_add(struct s_walk *w, const char *path, const struct stat *st)
{
	if (w->out->n == w->cap) {
		size_t ncap = w->cap ? w->cap * 2 : 32;
		void *p = realloc(w->out->files, ncap * sizeof(*w->out->files));
		if (!p)
			return RR_ENOMEM;
		w->out->files = p;
		w->cap = ncap;
	}
	char *copy = strdup(path);
	if (!copy)
		return RR_ENOMEM;
	w->out->files[w->out->n++] = (struct rr_dir_file){
		.path = copy, .mode = st->st_mode & 07777, .size = (uint64_t)st->st_size,
		.st = *st,
	};
	return 0;
}

/* Walks the directory open at fd_in (consumed), whose path relative to the root is rel. */
static int s_walk_dir(struct s_walk *w, int fd_in, const char *rel, int depth)
{
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (depth > MAX_DEPTH) {
		close(fd_in);
		return RR_ETOOBIG;
	}
	d = fdopendir(fd_in);
	if (!d) {
		rc = rr_error_from_errno(errno);
		close(fd_in);
		return rc;
	}
	while (!rc && (errno = 0, e = readdir(d))) {
		char path[4096];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", e->d_name) >=
		    (int)sizeof(path)) {
			rc = RR_ETOOBIG;
			break;
		}
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOENT)
				continue;
			rc = rr_error_from_errno(errno);
			break;
		}
		if (S_ISREG(st.st_mode)) {
			rc = s_add(w, path, &st);
		} else if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd(d), e->d_name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				rc = rr_error_from_errno(errno);
			else
				rc = s_walk_dir(w, fd, path, depth + 1);
		} else {
			if (!w->out->skipped++)
				snprintf(w->out->first_skipped, sizeof(w->out->first_skipped), "%s",
					 path);
		}
	}
	if (!rc && errno)
		rc = rr_error_from_errno(errno);
	closedir(d);
	return rc;
}

static int s_cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct rr_dir_file *)a)->path, ((const struct rr_dir_file *)b)->path);
}

/* Lists the directory open as fd, which it consumes. */
static int s_list(int fd, struct rr_dir_listing *out)
{
	struct s_walk w = { .out = out };
	int rc;

	rc = s_walk_dir(&w, fd, "", 0);
	if (rc) {
		rr_dir_listing_free(out);
		return rc;
	}
	if (out->n)
		qsort(out->files, out->n, sizeof(*out->files), s_cmp_path);
	return 0;
}

int rr_dir_list(const char *root, struct rr_dir_listing *out)
{
	int fd;

	memset(out, 0, sizeof(*out));
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return rr_error_from_errno(errno);
	return s_list(fd, out);
}

int rr_dir_list_fd(int fd, struct rr_dir_listing *out)
{
	int own;

	memset(out, 0, sizeof(*out));
	/* fdopendir takes over its descriptor and shares the read position: list through a
	 * fresh open of the same directory, so the caller's fd stays usable for openat. */
	own = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (own < 0)
		return rr_error_from_errno(errno);
	return s_list(own, out);
}

void rr_dir_listing_free(struct rr_dir_listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->files[i].path);
	free(l->files);
	memset(l, 0, sizeof(*l));
}
