/* Checkpoint-directory watcher: inotify on one directory, reporting commits by the rule of
 * --commit (docs/trainer-contract.md, "The trainer contract", "Committing a checkpoint"):
 * renames into final names, a marker file closed inside a directory (one more watch per
 * directory), a pointer file naming one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rr/clock.h"
#include "rr/commit_rule.h"
#include "rr/error.h"
#include "rr/format.h"
#include "rr/fsutil.h"
#include "rr/log.h"
#include "rr/manifest.h"
#include "rr/quote.h"
#include "watcher.h"

/* IN_CREATE: directories to watch inside for a marker (or to warn about under rename);
 * IN_CLOSE_WRITE: the pointer file, or a checkpoint file, written in place; IN_MOVED_FROM,
 * IN_DELETE: a file written in place that goes away was a staging name. */
#define S_WATCH_MASK (IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_DELETE | \
		      IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
/* Inside a directory that is not committed yet: its marker closed or renamed into place.
 * IN_MOVE_SELF: the directory was renamed, so the name kept for it is stale. */
#define S_SUB_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
/* The pointer file holds one name (DeepSpeed writes the tag, no newline). */
#define S_POINTER_MAX 512
#define S_WARN_MAX 10
/* Room for several events per read; one full-length name always fits. */
#define S_EVENT_BUF (16 * (sizeof(struct inotify_event) + NAME_MAX + 1))

struct s_sub;

/* How often a directory that could not be watched for its marker is looked at. */
#define S_RESCAN_MS 1000
/* A checkpoint file first closed whole in place commits once it has stayed under its name
 * this long: a trainer that saves to a staging name (torch.save to "ckpt_new.pt", then
 * os.replace onto "ckpt.pt") moves it away at once, and that name is no checkpoint. */
#define S_IN_PLACE_SETTLE_MS 500

struct rr_watcher {
	char *dir;
	int ifd;   /* inotify instance, lives as long as the watcher */
	int wd;    /* watch on dir; -1 while the directory is lost */
	int lost;  /* the directory was deleted or moved away and is not watched yet */
	int stopped; /* rr_watcher_stop: no watches, events only drained */
	char *warned[S_WARN_MAX]; /* names already warned about as created directly */
	size_t n_warned;
	char *refused[S_WARN_MAX]; /* committed names already refused as unrestorable */
	size_t n_refused;
	struct rr_commit_rule rule;
	struct s_sub *subs; /* directories watched for their marker */
	size_t nsubs, cap_subs;
	/* A directory could not be watched for its marker (the kernel's inotify watches used
	 * up): the directory is scanned again by then (monotonic ms; 0: none due). */
	int64_t rescan_at;
	int unwatched_warned;
	/* Names reported so far and the commit time each was reported with: a scan reports a
	 * name it has seen with that time, not the directory's ctime now, which a file created
	 * or removed inside it since moves (an older checkpoint then sorted as the newest). A
	 * name is forgotten when it leaves the directory (its event, or a scan that does not
	 * find it), so a long run holds the names the directory holds, not every one it saw. */
	struct s_known_name *known;
	size_t nknown, cap_known;
	/* Names of checkpoint files closed whole in place: due (monotonic ms) while the first
	 * such close settles, 0 once the name is known to stay (it did, or was saved again
	 * under it): its later closes commit at once. */
	struct s_in_place {
		char *name;
		int64_t due;
	} *in_place;
	size_t nin_place, cap_in_place;
};

struct s_known_name {
	char *name;
	int64_t ms;
	int seen; /* reported by the scan under way */
};

struct s_sub {
	int wd;
	char *name;
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

/* The caller's callback behind the refusal check: every way a commit is found (rename,
 * marker, pointer, scan) reports through it. */
struct s_report {
	struct rr_watcher *w;
	rr_watcher_cb cb;
	void *ud;
	int scan; /* reports of a scan, not of events */
};

/* The commit time to report for name: a scan's, of a name reported before, is the time it
 * was reported with then; an event's is its own, remembered for the scans to come. */
static int64_t s_known_ms(struct rr_watcher *w, const char *name, int64_t ms, int scan)
{
	struct s_known_name *k;

	for (size_t i = 0; i < w->nknown; i++)
		if (strcmp(w->known[i].name, name) == 0) {
			w->known[i].seen |= scan;
			if (scan)
				return w->known[i].ms;
			w->known[i].ms = ms;
			return ms;
		}
	if (w->nknown == w->cap_known) {
		size_t cap = w->cap_known ? 2 * w->cap_known : 64;
		k = realloc(w->known, cap * sizeof(*k));
		if (!k)
			return ms; /* not remembered: as before */
		w->known = k;
		w->cap_known = cap;
	}
	if ((w->known[w->nknown].name = strdup(name)) != NULL) {
		w->known[w->nknown].ms = ms;
		w->known[w->nknown++].seen = scan;
	}
	return ms;
}

/* Forgets the names that left the directory: the one named, or (name NULL) those the scan
 * just made did not report. */
static void s_known_forget(struct rr_watcher *w, const char *name)
{
	for (size_t i = 0; i < w->nknown;) {
		struct s_known_name *k = &w->known[i];
		if (name ? strcmp(k->name, name) != 0 : k->seen) {
			i++;
			continue;
		}
		free(k->name);
		*k = w->known[--w->nknown];
	}
}

static void s_sub_remove(struct rr_watcher *w, int wd);

static void s_report(const char *name, int64_t committed_unix_ms, void *arg)
{
	struct s_report *r = arg;

	/* Committed, however it was found (its marker, the pointer naming it, a scan): a
	 * watch inside it for a marker has nothing left to wait for. DeepSpeed keeps every
	 * global_stepN, and each held a watch for as long as it stayed. */
	for (size_t i = 0; i < r->w->nsubs; i++)
		if (strcmp(r->w->subs[i].name, name) == 0) {
			s_sub_remove(r->w, r->w->subs[i].wd);
			break;
		}

	if (!s_refused(r->w, name))
		r->cb(name, s_known_ms(r->w, name, committed_unix_ms, r->scan), r->ud);
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

static void s_sub_drop_at(struct rr_watcher *w, size_t i)
{
	free(w->subs[i].name);
	w->subs[i] = w->subs[--w->nsubs];
}

static struct s_sub *s_sub_find(struct rr_watcher *w, int wd)
{
	for (size_t i = 0; i < w->nsubs; i++)
		if (w->subs[i].wd == wd)
			return &w->subs[i];
	return NULL;
}

/* Stops watching inside a directory (committed, gone or renamed). */
static void s_sub_remove(struct rr_watcher *w, int wd)
{
	for (size_t i = 0; i < w->nsubs; i++)
		if (w->subs[i].wd == wd) {
			inotify_rm_watch(w->ifd, wd);
			s_sub_drop_at(w, i);
			return;
		}
}

static void s_subs_clear(struct rr_watcher *w)
{
	while (w->nsubs)
		s_sub_drop_at(w, w->nsubs - 1);
}

static int s_sub_add(struct rr_watcher *w, const char *name);

/* Watches directory name for its marker (s_sub_add). One that cannot be watched (ENOSPC:
 * fs.inotify.max_user_watches reached) is not an error that ends a scan or loses the
 * checkpoint: its marker is looked for by a scan of the checkpoint directory every
 * S_RESCAN_MS instead, said once. The caller checks for the marker either way. */
static int s_watch_for_marker(struct rr_watcher *w, const char *name)
{
	int rc = s_sub_add(w, name);

	if (!rc || rc == RR_ENOMEM || rc == RR_ETOOBIG)
		return rc;
	if (!w->unwatched_warned) {
		w->unwatched_warned = 1;
		rr_warn("cannot watch %s/%s for its commit (%s; the kernel's inotify watches may "
			"be used up: raise sysctl fs.inotify.max_user_watches): the checkpoint "
			"directory is looked at every second instead", w->dir, name,
			rr_strerror(rc));
	}
	if (!w->rescan_at)
		w->rescan_at = rr_mono_ms() + S_RESCAN_MS;
	return 0;
}

/* Watches directory name for its marker. inotify returns the same wd for a path already
 * watched, so a name seen twice (event and rescan) holds one entry. */
static int s_sub_add(struct rr_watcher *w, const char *name)
{
	char path[PATH_MAX];
	struct s_sub *old;
	int wd;

	if (snprintf(path, sizeof(path), "%s/%s", w->dir, name) >= (int)sizeof(path))
		return RR_ETOOBIG;
	wd = inotify_add_watch(w->ifd, path, S_SUB_MASK);
	if (wd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : rr_error_from_errno(errno);
	old = s_sub_find(w, wd);
	if (old) {
		if (strcmp(old->name, name) != 0) {
			char *n = strdup(name);
			if (!n)
				return RR_ENOMEM;
			free(old->name);
			old->name = n;
		}
		return 0;
	}
	if (w->nsubs == w->cap_subs) {
		size_t cap = w->cap_subs ? w->cap_subs * 2 : 16;
		struct s_sub *a = realloc(w->subs, cap * sizeof(*a));
		if (!a)
			return RR_ENOMEM;
		w->subs = a;
		w->cap_subs = cap;
	}
	w->subs[w->nsubs].name = strdup(name);
	if (!w->subs[w->nsubs].name)
		return RR_ENOMEM;
	w->subs[w->nsubs++].wd = wd;
	return 0;
}

/* The commit time of a marker inside directory name: its ctime (set when it was last
 * written or renamed into place). 1 when present, 0 when not. */
static int s_marker_time(int dirfd, const char *name, const char *marker, int64_t *ms)
{
	char rel[NAME_MAX * 2 + 2];
	struct stat st;

	snprintf(rel, sizeof(rel), "%s/%s", name, marker);
	if (fstatat(dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
		return 0;
	*ms = s_ctime_ms(&st);
	return 1;
}

/* 1 with the time when directory name holds a marker of the rule. */
static int s_has_marker(const struct rr_watcher *w, int dirfd, const char *name, int64_t *ms)
{
	if (w->rule.kind == RR_COMMIT_MARKER)
		return s_marker_time(dirfd, name, w->rule.name, ms);
	if (w->rule.kind == RR_COMMIT_AUTO)
		return s_marker_time(dirfd, name, RR_COMMIT_HF_MARKER, ms) ||
		       s_marker_time(dirfd, name, RR_COMMIT_DCP_MARKER, ms) ||
		       (rr_commit_is_marker(&w->rule, name, RR_COMMIT_DS_DIR_MARKER) &&
			s_marker_time(dirfd, name, RR_COMMIT_DS_DIR_MARKER, ms));
	return 0;
}

/* Reads the pointer file: the directory name it holds, whitespace trimmed, checked as a
 * checkpoint name. 1 with target filled, 0 when absent or not a usable name. */
static int s_read_pointer(int dirfd, const char *pointer, char *target, size_t cap,
			  int64_t *ms)
{
	char buf[S_POINTER_MAX + 1];
	struct stat st;
	ssize_t n;
	size_t len;
	int fd = openat(dirfd, pointer, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || (size_t)n > S_POINTER_MAX)
		return 0;
	len = (size_t)n;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' ||
		       buf[len - 1] == '\t'))
		len--;
	buf[len] = '\0';
	if (len >= cap || !rr_checkpoint_name_valid(buf) || rr_commit_is_temp_name(buf))
		return 0;
	memcpy(target, buf, len + 1);
	*ms = s_ctime_ms(&st);
	return 1;
}

/* The pointer file was written: reports the directory it names, if it is one. */
static int s_pointer_commit(struct rr_watcher *w, int dirfd, const char *pointer,
			    rr_watcher_cb cb, void *ud)
{
	char target[NAME_MAX + 1];
	struct stat st;
	int64_t ms;

	if (!s_read_pointer(dirfd, pointer, target, sizeof(target), &ms)) {
		rr_warn("%s/%s does not name a checkpoint directory; ignored", w->dir, pointer);
		return 0;
	}
	if (fstatat(dirfd, target, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
		rr_warn("%s/%s names %s, which is not a directory there; ignored", w->dir,
			pointer, target);
		return 0;
	}
	cb(target, ms, ud);
	return 0;
}

/* 1 when directory name holds a torch.distributed.checkpoint shard (*.distcp): such a
 * directory is written in place and committed by its .metadata only. */
static int s_has_distcp(int dirfd, const char *name)
{
	struct dirent *de;
	DIR *d;
	int found = 0;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while (!found && (de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		found = n > 7 && strcmp(de->d_name + n - 7, ".distcp") == 0;
	}
	closedir(d);
	return found;
}

/* The watched directory was lost: the watches inside it go too (a rescan adds them). */
static void s_subs_forget(struct rr_watcher *w)
{
	for (size_t i = 0; i < w->nsubs; i++)
		inotify_rm_watch(w->ifd, w->subs[i].wd);
	s_subs_clear(w);
}

void rr_watcher_set_rule(struct rr_watcher *w, const struct rr_commit_rule *rule)
{
	w->rule = *rule;
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
	w->rule.kind = RR_COMMIT_RENAME;
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

/* One entry found by a scan: reported when committed by the rule. */
static int s_scan_entry(struct rr_watcher *w, int fd, const char *name, const char *pointed,
			int64_t pointer_ms, rr_watcher_cb cb, void *ud)
{
	struct stat st;
	int64_t ms;

	if (rr_commit_is_temp_name(name))
		return 0;
	/* d_type is not reliable on every filesystem, so always stat. */
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : rr_error_from_errno(errno);
	if (S_ISREG(st.st_mode)) {
		if (!rr_commit_scan_takes_file(&w->rule, name))
			return 0;
		if (rr_format_file_state_at(fd, name) == RR_FILE_CUT) {
			char q[RR_QUOTE_CAP];
			rr_warn("%s in %s is not whole (a save cut short?): not taken as a checkpoint",
				rr_quote_str(q, name), w->dir);
			return 0;
		}
		cb(name, s_ctime_ms(&st), ud);
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (s_has_marker(w, fd, name, &ms)) {
		cb(name, ms, ud);
		return 0;
	}
	if (pointed && strcmp(pointed, name) == 0) {
		cb(name, pointer_ms, ud);
		return 0;
	}
	/* Under auto, a pointer file (DeepSpeed's `latest`) says the directories beside it are
	 * written in place under their tags: one it does not name may be half-written (the
	 * trainer died saving it), and is not taken for a renamed one. */
	if (rr_commit_scan_takes_dir(&w->rule, name) &&
	    !(w->rule.kind == RR_COMMIT_AUTO && (pointed || s_has_distcp(fd, name)))) {
		cb(name, s_ctime_ms(&st), ud);
		return 0;
	}
	if (rr_commit_has_markers(&w->rule)) {
		int rc = s_watch_for_marker(w, name); /* its marker may still come */
		if (rc)
			return rc;
		if (s_has_marker(w, fd, name, &ms)) /* it came meanwhile */
			cb(name, ms, ud);
	}
	return 0;
}

struct s_scan {
	struct rr_watcher *w;
	const char *pointed; /* the name the pointer file holds, or NULL */
	int64_t pointer_ms;
	rr_watcher_cb cb;
	void *ud;
};

static int s_scan_one(int dfd, const char *name, unsigned char type, void *ud)
{
	struct s_scan *sc = ud;

	(void)type;
	return s_scan_entry(sc->w, dfd, name, sc->pointed, sc->pointer_ms, sc->cb, sc->ud);
}

int rr_watcher_scan(struct rr_watcher *w, rr_watcher_cb user_cb, void *user_ud)
{
	struct s_report rep = { w, user_cb, user_ud, 1 };
	char pointed[NAME_MAX + 1] = "";
	struct s_scan sc = { w, NULL, 0, s_report, &rep };
	int fd, rc;

	if (!w || !user_cb)
		return RR_EINVAL;
	fd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return rr_error_from_errno(errno);
	if (w->rule.kind == RR_COMMIT_POINTER || w->rule.kind == RR_COMMIT_AUTO) {
		const char *p = w->rule.kind == RR_COMMIT_POINTER ? w->rule.name
								  : RR_COMMIT_DS_POINTER;
		if (s_read_pointer(fd, p, pointed, sizeof(pointed), &sc.pointer_ms) && pointed[0])
			sc.pointed = pointed;
	}
	for (size_t i = 0; i < w->nknown; i++)
		w->known[i].seen = 0;
	rc = rr_dir_each(fd, 0, s_scan_one, &sc);
	if (!rc)
		s_known_forget(w, NULL);
	return rc;
}

/* Warns about a directory made under a final name, once per name, for S_WARN_MAX names. */
static void s_warn_direct_create(struct rr_watcher *w, const char *name, int file)
{
	if (w->n_warned >= S_WARN_MAX)
		return;
	for (size_t i = 0; i < w->n_warned; i++)
		if (w->warned[i] && strcmp(w->warned[i], name) == 0)
			return;
	/* Counted even if strdup fails: the limit still holds, only the dedup is lost. */
	char q[RR_QUOTE_CAP];
	w->warned[w->n_warned++] = strdup(name);
	rr_warn("%s in %s was %s instead of renamed from a dot-name, so it will not be "
		"persisted: write a checkpoint under a name starting with '.' and rename it when "
		"complete%s (see the trainer contract)%s",
		rr_quote_str(q, name), w->dir, file ? "written in place" : "created directly",
		file ? " (torch.save to '.ckpt.pt.tmp', then os.replace)" : "",
		w->n_warned == S_WARN_MAX ? "; further such names are not logged" : "");
}

/* Opens the watched directory for a batch of events (closed by the caller). 0 with *dirfd
 * set, 1 when it is gone (its IN_DELETE_SELF or IN_MOVE_SELF follows), or an rr_error. */
static int s_dirfd(struct rr_watcher *w, int *dirfd)
{
	if (*dirfd >= 0)
		return 0;
	*dirfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*dirfd < 0)
		return errno == ENOENT ? 1 : rr_error_from_errno(errno);
	return 0;
}

/* Something was renamed into name: a checkpoint when the rule takes renames (a directory
 * or a regular file); under a marker rule a directory moved in is watched for its marker. */
static int s_on_moved_in(struct rr_watcher *w, int dirfd, const char *name, rr_watcher_cb cb,
			 void *ud)
{
	struct stat st;
	int64_t ms;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : rr_error_from_errno(errno); /* gone already */
	if (S_ISREG(st.st_mode) && rr_commit_is_pointer(&w->rule, name))
		return s_pointer_commit(w, dirfd, name, cb, ud);
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return 0;
	if (rr_commit_takes_renames(&w->rule)) {
		cb(name, s_ctime_ms(&st), ud);
		return 0;
	}
	if (S_ISDIR(st.st_mode) && rr_commit_has_markers(&w->rule)) {
		int rc = s_watch_for_marker(w, name);
		if (!rc && s_has_marker(w, dirfd, name, &ms))
			cb(name, ms, ud);
		return rc;
	}
	return 0;
}

static struct s_in_place *s_in_place_find(struct rr_watcher *w, const char *name)
{
	for (size_t i = 0; i < w->nin_place; i++)
		if (strcmp(w->in_place[i].name, name) == 0)
			return &w->in_place[i];
	return NULL;
}

static void s_in_place_drop(struct rr_watcher *w, struct s_in_place *e)
{
	free(e->name);
	*e = w->in_place[--w->nin_place];
}

/* name moved away or deleted: a first close still settling was a staging name's; a name
 * that had settled is forgotten (a new file under it settles afresh). */
static void s_in_place_gone(struct rr_watcher *w, const char *name)
{
	struct s_in_place *e = s_in_place_find(w, name);

	if (e)
		s_in_place_drop(w, e);
}

/* A checkpoint-like file written under its final name and closed (nanoGPT's
 * torch.save(checkpoint, "ckpt.pt"), safetensors' save_file): under auto, committed when its
 * own format finds it whole (rr_format_file_state), so a save cut short (the trainer killed
 * mid-write, whose close comes all the same) commits nothing. A name's first such close
 * commits once the file has stayed S_IN_PLACE_SETTLE_MS (a staging name is moved away at
 * once), or at its second close; its later closes commit at once. A file of no such format
 * (a legacy pickle) is never committed: said once, or a run that saves only so stores
 * nothing, silently. */
static int s_on_closed_in_place(struct rr_watcher *w, int dirfd, const char *name,
				rr_watcher_cb cb, void *ud)
{
	enum rr_file_state state;
	struct s_in_place *e;
	struct stat st;

	if (!rr_commit_takes_renames(&w->rule) || !rr_commit_file_looks_like_checkpoint(name))
		return 0;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
		return 0; /* moved away or deleted already: a staging name, or gone */
	state = w->rule.kind == RR_COMMIT_AUTO ? rr_format_file_state_at(dirfd, name)
					       : RR_FILE_OTHER;
	if (state == RR_FILE_OTHER) {
		s_warn_direct_create(w, name, 1);
		return 0;
	}
	if (state == RR_FILE_CUT) {
		rr_debug("%s closed in %s, not whole (rewritten meanwhile, or cut short): not a "
			 "commit", name, w->dir);
		return 0;
	}
	e = s_in_place_find(w, name);
	if (e) {
		e->due = 0; /* settled, or saved again under it: no staging name */
		cb(name, s_ctime_ms(&st), ud);
		return 0;
	}
	if (w->nin_place == w->cap_in_place) {
		size_t cap = w->cap_in_place ? 2 * w->cap_in_place : 8;
		struct s_in_place *n = realloc(w->in_place, cap * sizeof(*n));
		if (!n)
			return RR_ENOMEM;
		w->in_place = n;
		w->cap_in_place = cap;
	}
	w->in_place[w->nin_place].name = strdup(name);
	if (!w->in_place[w->nin_place].name)
		return RR_ENOMEM;
	w->in_place[w->nin_place++].due = rr_mono_ms() + S_IN_PLACE_SETTLE_MS;
	return 0;
}

/* First closes in place that have settled (all of them: flush, the trainer has exited) are
 * committed, each as the file is now: still there and whole. One being written again just
 * then waits for that save's close (or another settle time). */
static int s_in_place_settle(struct rr_watcher *w, int flush, rr_watcher_cb cb, void *ud)
{
	int64_t now = rr_mono_ms();
	int dirfd = -1, rc = 0;

	for (size_t i = 0; i < w->nin_place;) {
		struct s_in_place *e = &w->in_place[i];
		struct stat st;
		enum rr_file_state state = RR_FILE_OTHER;
		if (!e->due || (!flush && e->due > now)) {
			i++;
			continue;
		}
		if (dirfd < 0 && (rc = s_dirfd(w, &dirfd)) != 0) {
			s_in_place_drop(w, e); /* the directory is gone: nothing of it to commit */
			continue;
		}
		if (fstatat(dirfd, e->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			state = rr_format_file_state_at(dirfd, e->name);
		if (state == RR_FILE_WHOLE) {
			e->due = 0;
			cb(e->name, s_ctime_ms(&st), ud);
		} else if (state == RR_FILE_CUT && !flush) {
			e->due = now + S_IN_PLACE_SETTLE_MS;
		} else {
			s_in_place_drop(w, e);
			continue;
		}
		i++;
	}
	if (dirfd >= 0)
		close(dirfd);
	return rc > 0 ? 0 : rc;
}

/* A directory was made under a final name: under a marker rule its marker is awaited;
 * under rename alone this is the classic mistake, worth a warning. */
static int s_on_dir_created(struct rr_watcher *w, int dirfd, const char *name,
			    rr_watcher_cb cb, void *ud)
{
	int64_t ms;
	int rc;

	if (w->rule.kind == RR_COMMIT_RENAME) {
		s_warn_direct_create(w, name, 0);
		return 0;
	}
	if (!rr_commit_has_markers(&w->rule))
		return 0; /* pointer: it commits when the pointer names it */
	rc = s_watch_for_marker(w, name);
	/* Files may have landed before the watch was added: a marker already there is the
	 * commit (the agent is far behind the trainer if so). */
	if (!rc && s_has_marker(w, dirfd, name, &ms))
		cb(name, ms, ud);
	return rc;
}

/* An event inside a watched directory: its marker closed or moved into place. */
static int s_on_sub_event(struct rr_watcher *w, struct s_sub *sub,
			  const struct inotify_event *ev, const char *name, int *dirfd,
			  rr_watcher_cb cb, void *ud)
{
	char dname[NAME_MAX + 1];
	int64_t ms;
	int rc;

	if (ev->mask & IN_IGNORED) {
		s_sub_drop_at(w, (size_t)(sub - w->subs)); /* deleted: the kernel dropped it */
		return 0;
	}
	if (ev->mask & IN_MOVE_SELF) {
		s_sub_remove(w, sub->wd); /* renamed: a rename in is seen on the parent */
		return 0;
	}
	if (!name || !(ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) || (ev->mask & IN_ISDIR) ||
	    !rr_commit_is_marker(&w->rule, sub->name, name))
		return 0;
	rc = s_dirfd(w, dirfd);
	if (rc)
		return rc > 0 ? 0 : rc;
	snprintf(dname, sizeof(dname), "%s", sub->name);
	if (!s_marker_time(*dirfd, dname, name, &ms))
		return 0;
	cb(dname, ms, ud); /* which gives up the watch: nothing more to wait for in it */
	return 0;
}

/* Handles one event; sets *need_scan after an overflow. Returns 0 or an rr_error. */
static int s_handle(struct rr_watcher *w, const struct inotify_event *ev, const char *name,
		    int *dirfd, rr_watcher_cb cb, void *ud, int *need_scan)
{
	int rc;

	if (ev->mask & IN_Q_OVERFLOW) {
		*need_scan = 1;
		return 0;
	}
	if (ev->wd != w->wd || w->lost) {
		struct s_sub *sub = s_sub_find(w, ev->wd);
		return sub ? s_on_sub_event(w, sub, ev, name, dirfd, cb, ud) : 0;
	}
	if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
		s_detach(w);
		return 0;
	}
	if (name && (ev->mask & (IN_MOVED_FROM | IN_DELETE))) {
		s_in_place_gone(w, name);
		s_known_forget(w, name);
		return 0;
	}
	if (!name || rr_commit_is_temp_name(name))
		return 0;
	if (!(ev->mask & (IN_MOVED_TO | IN_CLOSE_WRITE)) &&
	    !((ev->mask & IN_CREATE) && (ev->mask & IN_ISDIR)))
		return 0;
	rc = s_dirfd(w, dirfd);
	if (rc)
		return rc > 0 ? 0 : rc;
	if (ev->mask & IN_MOVED_TO) {
		s_in_place_gone(w, name); /* the rename commits it */
		return s_on_moved_in(w, *dirfd, name, cb, ud);
	}
	if ((ev->mask & IN_CLOSE_WRITE) && rr_commit_is_pointer(&w->rule, name))
		return s_pointer_commit(w, *dirfd, name, cb, ud);
	if (ev->mask & IN_CLOSE_WRITE)
		return s_on_closed_in_place(w, *dirfd, name, cb, ud);
	return s_on_dir_created(w, *dirfd, name, cb, ud);
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

static int s_process(struct rr_watcher *w, rr_watcher_cb user_cb, void *user_ud, int flush)
{
	struct s_report rep = { w, user_cb, user_ud, 0 };
	rr_watcher_cb cb = s_report;
	void *ud = &rep;
	int need_scan = 0, dirfd = -1;
	int rc;

	if (!w || !user_cb)
		return RR_EINVAL;
	rc = s_drain(w, &dirfd, cb, ud, &need_scan);
	if (dirfd >= 0)
		close(dirfd);
	if (w->stopped)
		return rc; /* what was drained belongs to removed watches */
	{
		int prc = s_in_place_settle(w, flush, cb, ud);
		if (!rc)
			rc = prc;
	}
	if (w->lost) {
		int arc;
		s_subs_forget(w);
		arc = s_attach(w);
		if (arc)
			return arc; /* still lost: the next call tries again */
		rr_warn("checkpoint directory %s was deleted or moved away; recreated it if "
			"missing and watching it again", w->dir);
		need_scan = 1;
	}
	if (w->rescan_at && rr_mono_ms() >= w->rescan_at) {
		w->rescan_at = 0; /* set again by the scan while a directory stays unwatched */
		need_scan = 1;
	}
	if (need_scan) {
		int src = rr_watcher_scan(w, user_cb, user_ud);
		if (!rc)
			rc = src;
	}
	return rc;
}

int rr_watcher_process(struct rr_watcher *w, rr_watcher_cb cb, void *ud)
{
	return s_process(w, cb, ud, 0);
}

int rr_watcher_flush(struct rr_watcher *w, rr_watcher_cb cb, void *ud)
{
	return s_process(w, cb, ud, 1);
}

int64_t rr_watcher_next_at(const struct rr_watcher *w)
{
	int64_t at = w ? w->rescan_at : 0;

	for (size_t i = 0; w && i < w->nin_place; i++)
		if (w->in_place[i].due && (!at || w->in_place[i].due < at))
			at = w->in_place[i].due;
	return at;
}

int rr_watcher_stop(struct rr_watcher *w, rr_watcher_cb cb, void *ud)
{
	int rc;

	if (!w || w->stopped)
		return 0;
	rc = rr_watcher_flush(w, cb, ud);
	s_subs_forget(w);
	if (w->wd >= 0)
		inotify_rm_watch(w->ifd, w->wd);
	w->wd = -1;
	w->lost = 0;
	w->stopped = 1;
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
	s_subs_clear(w);
	free(w->subs);
	for (size_t i = 0; i < w->nknown; i++)
		free(w->known[i].name);
	free(w->known);
	for (size_t i = 0; i < w->nin_place; i++)
		free(w->in_place[i].name);
	free(w->in_place);
	free(w->dir);
	free(w);
}

/* In the child of rr_watcher_destroy_detached: closes every descriptor but a and b (only
 * system calls: the parent has threads). */
static void s_close_all_but(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;
	int ranges[3][2] = { { 0, lo - 1 }, { lo + 1, hi - 1 }, { hi + 1, -1 } };

	for (int i = 0; i < 3; i++) {
		unsigned from = (unsigned)ranges[i][0];
		unsigned to = ranges[i][1] < 0 ? ~0U : (unsigned)ranges[i][1];
		if (ranges[i][1] >= 0 && ranges[i][1] < ranges[i][0])
			continue;
#ifdef SYS_close_range
		if (syscall(SYS_close_range, from, to, 0) == 0)
			continue;
#endif
		for (unsigned fd = from; fd <= to && fd < 4096; fd++)
			close((int)fd);
	}
}

void rr_watcher_destroy_detached(struct rr_watcher *w)
{
	int sync[2];
	pid_t pid;
	char c;

	if (!w)
		return;
	if (w->ifd >= 0 && pipe2(sync, O_CLOEXEC) == 0) {
		pid = fork();
		if (pid == 0) {
			s_close_all_but(w->ifd, sync[0]);
			/* End of file once the parent has closed its copy: ours is then the last. */
			while (read(sync[0], &c, 1) < 0 && errno == EINTR)
				;
			close(w->ifd);
			_exit(0);
		}
		close(sync[0]);
		if (pid > 0) {
			close(w->ifd);
			w->ifd = -1;
		}
		close(sync[1]);
	}
	rr_watcher_destroy(w);
}
