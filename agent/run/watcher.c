/* Checkpoint-directory watcher: inotify on one directory, reporting renames into final names
 * (README, "The trainer contract", "Committing a checkpoint"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rr/error.h"
#include "rr/fsutil.h"
#include "rr/log.h"
#include "rr/manifest.h"
#include "rr/quote.h"
#include "watcher.h"

/* IN_CREATE is watched only to warn about directories made directly under a final name. */
#define S_WATCH_MASK (IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
#define S_WARN_MAX 10
/* Room for several events per read; one full-length name always fits. */
#define S_EVENT_BUF (16 * (sizeof(struct inotify_event) + NAME_MAX + 1))

struct rr_watcher {
	char *dir;
	int ifd;   /* inotify instance, lives as long as the watcher */
	int wd;    /* watch on dir; -1 while the directory is lost */
	int lost;  /* the directory was deleted or moved away and is not watched yet */
	char *warned[S_WARN_MAX]; /* names already warned about as created directly */
	size_t n_warned;
	char *refused[S_WARN_MAX]; /* committed names already refused as unrestorable */
	size_t n_refused;
};

/* 1 when a committed name is one restore would refuse (rr_checkpoint_name_valid: control
 * characters such as a newline, over 255 bytes): it is never reported, so it is never
 * persisted nor declared durable. Warned once per name, for S_WARN_MAX names. */
static int s_refused(struct rr_watcher *w, const char *name)
{
	char q[RR_QUOTE_CAP];

	if (rr_checkpoint_name_valid(name))
		return 0;
	for (size_t i = 0; i < w->n_refused; i++)
		if (w->refused[i] && strcmp(w->refused[i], name) == 0)
			return 1;
	if (w->n_refused >= S_WARN_MAX)
		return 1;
	w->refused[w->n_refused++] = strdup(name);
	rr_warn("checkpoint %s is not persisted: restore refuses such a name (control "
		"characters, or longer than 255 bytes); rename it%s", rr_quote_str(q, name),
		w->n_refused == S_WARN_MAX ? "; further such names are not logged" : "");
	return 1;
}

/* mkdir -p with mode 0755. Kept local: it needs nothing more than this. */
static int s_mkdir_p(const char *path)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(tmp))
		return RR_ETOOBIG;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1;; p++) {
		char c = *p;
		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return rr_error_from_errno(errno);
		if (c == '\0')
			return 0;
		*p = c;
	}
}

static int64_t s_ctime_ms(const struct stat *st)
{
	return (int64_t)st->st_ctim.tv_sec * 1000 + st->st_ctim.tv_nsec / 1000000;
}

/* Creates the directory if needed and watches it. No descriptor of the directory is kept
 * open between calls: an open one would hold its dentry, and the kernel sends
 * IN_DELETE_SELF only once the last reference is gone, so a deletion would go unseen. */
static int s_attach(struct rr_watcher *w)
{
	int rc = s_mkdir_p(w->dir);
	if (rc)
		return rc;
	w->wd = inotify_add_watch(w->ifd, w->dir, S_WATCH_MASK);
	if (w->wd < 0) {
		int e = errno;
		if (e == ENOSPC)
			rr_error("cannot watch %s: the inotify watch limit is reached (raise the "
				 "sysctl fs.inotify.max_user_watches)", w->dir);
		return e == ENOSPC ? RR_EIO : rr_error_from_errno(e);
	}
	w->lost = 0;
	return 0;
}

static void s_detach(struct rr_watcher *w)
{
	/* Removing the watch queues an IN_IGNORED for the old wd; it is skipped because
	 * inotify does not reuse a wd soon (the ids are allocated cyclically). */
	if (w->wd >= 0)
		inotify_rm_watch(w->ifd, w->wd);
	w->wd = -1;
	w->lost = 1;
}

int rr_watcher_new(const char *dir, struct rr_watcher **out)
{
	struct rr_watcher *w = NULL;
	int rc;

	if (out)
		*out = NULL;
	if (!dir || !*dir || !out)
		return RR_EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return RR_ENOMEM;
	w->wd = -1;
	w->ifd = -1;
	w->dir = strdup(dir);
	if (!w->dir) {
		rc = RR_ENOMEM;
		goto out;
	}
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->ifd < 0) {
		int e = errno;
		if (e == EMFILE)
			rr_error("cannot watch %s: the inotify instance limit is reached (raise the "
				 "sysctl fs.inotify.max_user_instances)", dir);
		rc = e == EMFILE ? RR_EIO : rr_error_from_errno(e);
		goto out;
	}
	rc = s_attach(w);
	if (rc)
		goto out;
	*out = w;
	w = NULL;
out:
	rr_watcher_destroy(w);
	return rc;
}

int rr_watcher_fd(const struct rr_watcher *w)
{
	return w->ifd;
}

struct s_scan {
	struct rr_watcher *w;
	rr_watcher_cb cb;
	void *ud;
};

/* One entry of the checkpoint directory: a committed checkpoint is a directory. */
static int s_scan_entry(int dfd, const char *name, unsigned char type, void *ud)
{
	struct s_scan *sc = ud;
	struct stat st;

	(void)type; /* d_type is not reliable on every filesystem, so always stat. */
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : rr_error_from_errno(errno);
	if (S_ISDIR(st.st_mode) && !s_refused(sc->w, name))
		sc->cb(name, s_ctime_ms(&st), sc->ud);
	return 0;
}

int rr_watcher_scan(struct rr_watcher *w, rr_watcher_cb cb, void *ud)
{
	struct s_scan sc = { w, cb, ud };
	int fd;

	if (!w || !cb)
		return RR_EINVAL;
	fd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return rr_error_from_errno(errno);
	return rr_dir_each(fd, 1, s_scan_entry, &sc);
}

/* Warns about a directory made under a final name, once per name, for S_WARN_MAX names. */
static void s_warn_direct_create(struct rr_watcher *w, const char *name)
{
	if (w->n_warned >= S_WARN_MAX)
		return;
	for (size_t i = 0; i < w->n_warned; i++)
		if (w->warned[i] && strcmp(w->warned[i], name) == 0)
			return;
	/* Counted even if strdup fails: the limit still holds, only the dedup is lost. */
	char q[RR_QUOTE_CAP];
	w->warned[w->n_warned++] = strdup(name);
	rr_warn("%s in %s was created directly instead of renamed from a dot-name, so it will not "
		"be persisted: write a checkpoint under a name starting with '.' and rename it "
		"when complete (see the trainer contract)%s",
		rr_quote_str(q, name), w->dir,
		w->n_warned == S_WARN_MAX ? "; further such directories are not logged" : "");
}

/* Reports a directory renamed into a final name. *dirfd is opened on first use and closed
 * by the caller at the end of the batch. Returns 0 or an rr_error. */
static int s_report_commit(struct rr_watcher *w, int *dirfd, const char *name,
			   rr_watcher_cb cb, void *ud)
{
	struct stat st;

	if (*dirfd < 0) {
		*dirfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (*dirfd < 0) /* gone: its IN_DELETE_SELF or IN_MOVE_SELF follows */
			return errno == ENOENT ? 0 : rr_error_from_errno(errno);
	}
	if (fstatat(*dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : rr_error_from_errno(errno); /* gone already */
	if (S_ISDIR(st.st_mode) && !s_refused(w, name))
		cb(name, s_ctime_ms(&st), ud);
	return 0;
}

/* Handles one event; sets *need_scan after an overflow. Returns 0 or an rr_error. */
static int s_handle(struct rr_watcher *w, const struct inotify_event *ev, const char *name,
		    int *dirfd, rr_watcher_cb cb, void *ud, int *need_scan)
{
	if (ev->mask & IN_Q_OVERFLOW) {
		*need_scan = 1;
		return 0;
	}
	if (w->lost || ev->wd != w->wd)
		return 0; /* a watch we dropped: the old directory's events are not ours */
	if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
		s_detach(w);
		return 0;
	}
	if (!name || name[0] == '.' || !(ev->mask & IN_ISDIR))
		return 0;
	if (ev->mask & IN_MOVED_TO)
		return s_report_commit(w, dirfd, name, cb, ud);
	if (ev->mask & IN_CREATE)
		s_warn_direct_create(w, name);
	return 0;
}

/* Reads events until the queue is empty. Returns 0 or an rr_error (the first one met; the
 * queue is still drained after an error in handling one event). */
static int s_drain(struct rr_watcher *w, int *dirfd, rr_watcher_cb cb, void *ud,
		   int *need_scan)
{
	union {
		struct inotify_event ev; /* for alignment, as inotify(7) asks */
		char bytes[S_EVENT_BUF];
	} buf;
	int first_err = 0;

	for (;;) {
		ssize_t n = read(w->ifd, buf.bytes, sizeof(buf.bytes));
		size_t off = 0;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return first_err;
			return rr_error_from_errno(errno);
		}
		if (n == 0)
			return first_err;
		while (off < (size_t)n) {
			struct inotify_event ev;
			const char *name = NULL;
			size_t left = (size_t)n - off;
			int rc;

			/* The kernel never splits events, but trust no length blindly. */
			if (left < sizeof(ev))
				return RR_EIO;
			memcpy(&ev, buf.bytes + off, sizeof(ev));
			if (ev.len > left - sizeof(ev))
				return RR_EIO;
			if (ev.len > 0) {
				name = buf.bytes + off + sizeof(ev);
				if (!memchr(name, '\0', ev.len))
					return RR_EIO;
				if (!*name)
					name = NULL;
			}
			off += sizeof(ev) + ev.len;
			rc = s_handle(w, &ev, name, dirfd, cb, ud, need_scan);
			if (rc && !first_err)
				first_err = rc;
		}
	}
}

int rr_watcher_process(struct rr_watcher *w, rr_watcher_cb cb, void *ud)
{
	int need_scan = 0, dirfd = -1;
	int rc;

	if (!w || !cb)
		return RR_EINVAL;
	rc = s_drain(w, &dirfd, cb, ud, &need_scan);
	if (dirfd >= 0)
		close(dirfd);
	if (w->lost) {
		int arc = s_attach(w);
		if (arc)
			return arc; /* still lost: the next call tries again */
		rr_warn("checkpoint directory %s was deleted or moved away; recreated it if "
			"missing and watching it again", w->dir);
		need_scan = 1;
	}
	if (need_scan) {
		int src = rr_watcher_scan(w, cb, ud);
		if (!rc)
			rc = src;
	}
	return rc;
}

void rr_watcher_destroy(struct rr_watcher *w)
{
	if (!w)
		return;
	if (w->ifd >= 0)
		close(w->ifd); /* drops the watch too */
	for (size_t i = 0; i < w->n_warned; i++)
		free(w->warned[i]);
	for (size_t i = 0; i < w->n_refused; i++)
		free(w->refused[i]);
	free(w->dir);
	free(w);
}
