/* Local file helpers: durable writes (the redis recipe), bounded reads, directories. */
#ifndef RR_FSUTIL_H
#define RR_FSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rr/buf.h"

/* Writes data to path durably: a temp file beside it, write, fsync, close, rename, fsync of
 * the directory. The temp file is removed on any error, so path is either the old content
 * or the new. mode is the new file's permission bits. Returns 0 or an rr_error. */
int rr_write_file_durable(const char *path, const void *data, size_t len, mode_t mode);

/* Room rr_temp_path needs beyond dir and base. */
#define RR_TEMP_PATH_EXTRA 64

/* A temp name beside a target: "<dir>/.<base>.<tag>.<pid>.<16 hex>", the last part random,
 * so that another process with the same pid (a PID-1 agent in another container, one
 * killed before it removed its temp file) does not choose it too; an O_EXCL create that
 * still meets EEXIST takes a new name. out holds strlen(dir) + strlen(base) +
 * RR_TEMP_PATH_EXTRA bytes. */
void rr_temp_path(char *out, size_t cap, const char *dir, const char *base, const char *tag);

/* Writes all len bytes (retrying short writes and EINTR), at offset off, or at the file
 * position when off is negative. Returns 0 or an rr_error. */
int rr_pwrite_all(int fd, const void *data, size_t len, int64_t off);
int rr_write_all(int fd, const void *data, size_t len);

/* Reads up to len bytes at offset off; *got < len only at end of file. Returns 0 or an
 * rr_error. */
int rr_pread_full(int fd, void *buf, size_t len, int64_t off, size_t *got);

/* Reads a whole file into out (appending, bounded by out->max). */
int rr_read_file(const char *path, struct rr_buf *out);

/* The same for a path someone else may have put there: it must be a regular file
 * (RR_EPATH for a FIFO, device, socket or directory), and the open never blocks. */
int rr_read_regular_file(const char *path, struct rr_buf *out);

/* fsyncs the directory itself (after a rename or create inside it). */
int rr_fsync_dir(const char *dir);

/* mkdir -p with mode 0755; existing directories are fine. */
int rr_mkdir_p(const char *path);

/* The same with mode (before the umask) for the directories it creates. */
int rr_mkdir_p_mode(const char *path, mode_t mode);

/* One entry of a directory for rr_dir_each: dfd is the directory's descriptor (for the *at
 * calls), type the entry's DT_* type, DT_UNKNOWN where the filesystem does not say. Returns
 * 0 to go on, anything else to stop the walk with that value. */
typedef int (*rr_dir_entry_cb)(int dfd, const char *name, unsigned char type, void *ud);

/* The one directory-reading loop: calls cb for each entry of the directory open as fd
 * (taken over: closed on return, whatever happens), "." and ".." left out, and every name
 * starting with '.' too when skip_hidden. Returns 0, what cb stopped with, or the rr_error
 * of a failed read. */
int rr_dir_each(int fd, int skip_hidden, rr_dir_entry_cb cb, void *ud);

/* rm -rf; a missing path is fine. Does not follow symlinks. */
int rr_remove_tree(const char *path);

/* Joins a and b with one '/'; returns a malloc'd string or NULL. Caller frees. */
char *rr_path_join(const char *a, const char *b);

#endif
