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
#include "rr/fsutil.h"

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

static int s_walk_dir(struct s_walk *w, int fd_in, const char *rel, int depth);

/* One directory being walked: its path relative to the root, and how deep it is. */
struct s_level {
	struct s_walk *w;
	const char *rel;
	int depth;
};

/* One entry: a regular file is listed, a directory walked, anything else counted as
 * skipped. */
static int s_walk_entry(int dfd, const char *name, unsigned char type, void *ud)
{
	struct s_level *l = ud;
	struct s_walk *w = l->w;
	char path[4096];
	struct stat st;

	(void)type;
	if (snprintf(path, sizeof(path), "%s%s%s", l->rel, *l->rel ? "/" : "", name) >=
	    (int)sizeof(path))
		return RR_ETOOBIG;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : rr_error_from_errno(errno);
	if (S_ISREG(st.st_mode))
		return s_add(w, path, &st);
	if (S_ISDIR(st.st_mode)) {
		int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		return fd < 0 ? rr_error_from_errno(errno) : s_walk_dir(w, fd, path, l->depth + 1);
	}
	if (!w->out->skipped++)
		snprintf(w->out->first_skipped, sizeof(w->out->first_skipped), "%s", path);
	return 0;
}

/* Walks the directory open at fd_in (consumed), whose path relative to the root is rel. */
static int s_walk_dir(struct s_walk *w, int fd_in, const char *rel, int depth)
{
	struct s_level l = { w, rel, depth };

	if (depth > MAX_DEPTH) {
		close(fd_in);
		return RR_ETOOBIG;
	}
	return rr_dir_each(fd_in, 0, s_walk_entry, &l);
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
