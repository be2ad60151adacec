/* Opening a file below a directory held open, so that whoever can write that directory (a
 * trainer, when the agent runs as root) cannot redirect the open with a symlink, nor make
 * it block on a FIFO, nor hand over a device or another inode than the one listed. */
#ifndef RR_BENEATH_H
#define RR_BENEATH_H

#include <sys/stat.h>
#include <sys/types.h>

/* Opens rel (a '/'-separated relative path with no "." or ".." component) below the
 * directory open as dirfd, for reading, following no symlink on the way. Uses openat2
 * (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) where the kernel has it, else one openat
 * (O_NOFOLLOW | O_DIRECTORY) per directory. The open is non-blocking, so a FIFO cannot
 * stall it; the file must then be regular (RR_EPATH otherwise) and, when want is not NULL,
 * the same inode (st_dev, st_ino) as *want (RR_EPATH otherwise). O_NONBLOCK is cleared
 * before returning. On success returns 0, *fd_out is the caller's (close-on-exec) and st
 * (may be NULL) gets its fstat. RR_ENOENT when something on the way is gone. */
int rr_open_beneath(int dirfd, const char *rel, const struct stat *want, int *fd_out,
		    struct stat *st);

/* Opens the directory rel (a single name or a relative path as above) below dirfd without
 * following a symlink. Returns 0 and a close-on-exec descriptor in *fd_out, RR_EPATH when
 * something on the way is a symlink or not a directory, RR_ENOENT when it is gone. */
int rr_opendir_beneath(int dirfd, const char *rel, int *fd_out);

/* Test hook: 1 makes both functions take the openat fallback, as on a kernel without
 * openat2 (before 5.6, or behind a seccomp filter). */
void rr_beneath_force_fallback(int on);

#endif
