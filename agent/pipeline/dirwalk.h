/* Lists the regular files of a directory tree, without following symlinks. */
#ifndef RR_DIRWALK_H
#define RR_DIRWALK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

struct rr_dir_file {
	char *path;    /* relative to the root, '/'-separated; malloc'd */
	mode_t mode;   /* permission bits */
	uint64_t size;
	struct stat st; /* as listed (lstat): which inode, and its mtime, to check reads against */
};

struct rr_dir_listing {
	size_t n;
	struct rr_dir_file *files; /* sorted by path */
	size_t skipped;            /* symlinks, sockets, devices... not listed */
	char first_skipped[256];   /* the first of them, for a log line */
};

/* Fills out with every regular file under root (at most 64 levels deep). Returns 0 or an
 * rr_error (RR_ENOENT when root is missing). Free with rr_dir_listing_free. */
int rr_dir_list(const char *root, struct rr_dir_listing *out);

/* The same for the directory open as fd (not consumed; the caller keeps it). Nothing under
 * it is reached through a symlink. */
int rr_dir_list_fd(int fd, struct rr_dir_listing *out);
void rr_dir_listing_free(struct rr_dir_listing *l);

#endif
