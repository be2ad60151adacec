/* The trainer's process tree (README, "The trainer contract", "Who gets the signal"): every
 * descendant, whatever
 * its session or process group, because torchrun >= 2.2 starts each worker with
 * start_new_session=True and a signal to the trainer's group would miss them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rr/error.h"
#include "rr/log.h"
#include "rr/supervisor.h"

/* /proc/PID/stat and /proc/PID/task/TID/children are one short line each in practice;
 * children can grow with many children, so it gets more room. */
#define S_STAT_MAX 4096
#define S_CHILDREN_MAX (256u << 10)

/* Reads a small /proc file into buf (NUL-terminated). Returns the length or a negative
 * RR_E… code; RR_ENOENT when the process is gone. */
static ssize_t s_read_small(const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return (errno == ENOENT || errno == ESRCH) ? RR_ENOENT : rr_error_from_errno(errno);
	while (len + 1 < cap) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return errno == ESRCH ? RR_ENOENT : rr_error_from_errno(errno);
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

/* Parses one decimal number at *p (advancing it); -1 when there is none or it is too big. */
static long s_number(const char **p)
{
	long v = 0;
	int digits = 0;

	while (**p >= '0' && **p <= '9') {
		if (++digits > 9)
			return -1;
		v = v * 10 + (**p - '0');
		(*p)++;
	}
	return digits ? v : -1;
}

/* Parent and process group of pid from /proc/PID/stat (pgrp may be NULL). comm (field 2)
 * may hold spaces and ')', so the fields are counted from the last ')'. */
static int s_stat_ids(pid_t pid, pid_t *ppid, pid_t *pgrp)
{
	char path[64], buf[S_STAT_MAX];
	const char *p;
	long v;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	n = s_read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	p = strrchr(buf, ')');
	/* ") S 1234 5678": state (3), ppid (4), pgrp (5) */
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return RR_EIO;
	p += 4;
	v = s_number(&p);
	if (v < 0)
		return RR_EIO;
	*ppid = (pid_t)v;
	if (!pgrp)
		return 0;
	if (*p++ != ' ')
		return RR_EIO;
	v = s_number(&p);
	if (v < 0)
		return RR_EIO;
	*pgrp = (pid_t)v;
	return 0;
}

static int s_parent(pid_t pid, pid_t *ppid)
{
	return s_stat_ids(pid, ppid, NULL);
}

static int s_listed(const pid_t *list, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == pid)
			return 1;
	return 0;
}

/* Appends the pids of a space-separated list to out (skipping those already there). 1 when
 * some did not fit, else 0. */
static int s_append_pids(const char *text, pid_t *out, size_t cap, size_t *n)
{
	const char *p = text;

	for (;;) {
		long v;
		while (*p == ' ' || *p == '\n')
			p++;
		v = s_number(&p);
		if (v <= 0)
			return 0;
		if (s_listed(out, *n, (pid_t)v))
			continue;
		if (*n == cap)
			return 1;
		out[(*n)++] = (pid_t)v;
	}
}

/* Children of pid through /proc/PID/task/TID/children (a child belongs to the thread that
 * forked it, so every thread is read). RR_ENOENT when pid is gone. */
static int s_children_files(pid_t pid, pid_t *out, size_t cap, size_t *n, int *truncated)
{
	char path[96];
	char *buf = NULL;
	struct dirent *de;
	DIR *tasks;
	int rc = 0;

	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	tasks = opendir(path);
	if (!tasks)
		return errno == ENOENT ? RR_ENOENT : rr_error_from_errno(errno);
	buf = malloc(S_CHILDREN_MAX);
	if (!buf) {
		rc = RR_ENOMEM;
		goto out;
	}
	while ((de = readdir(tasks)) != NULL) {
		const char *name = de->d_name;
		long tid = s_number(&name);
		ssize_t len;

		if (tid <= 0 || *name)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)pid, tid);
		len = s_read_small(path, buf, S_CHILDREN_MAX);
		if (len == RR_ENOENT)
			continue; /* a thread that just exited */
		if (len < 0) {
			rc = (int)len;
			goto out;
		}
		*truncated |= s_append_pids(buf, out, cap, n);
	}
out:
	free(buf);
	closedir(tasks);
	return rc;
}

/* The whole process table as (pid, ppid) pairs, for kernels without children files. */
struct s_table {
	pid_t *pid, *ppid;
	size_t n, cap;
};

static int s_table_load(struct s_table *t)
{
	struct dirent *de;
	DIR *dir = opendir("/proc");
	int rc = 0;

	if (!dir)
		return rr_error_from_errno(errno);
	while ((de = readdir(dir)) != NULL) {
		const char *name = de->d_name;
		long v = s_number(&name);
		pid_t ppid;

		if (v <= 0 || *name || s_parent((pid_t)v, &ppid) != 0)
			continue; /* not a process, or gone since the readdir */
		if (t->n == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 256;
			pid_t *a = realloc(t->pid, cap * sizeof(*a));
			if (a)
				t->pid = a;
			pid_t *b = a ? realloc(t->ppid, cap * sizeof(*b)) : NULL;
			if (!b) {
				rc = RR_ENOMEM;
				break;
			}
			t->ppid = b;
			t->cap = cap;
		}
		t->pid[t->n] = (pid_t)v;
		t->ppid[t->n] = ppid;
		t->n++;
	}
	closedir(dir);
	return rc;
}

/* 1 when this kernel has /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN). */
static int s_have_children_files(void)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)getpid(),
		 (long)getpid());
	return access(path, R_OK) == 0;
}

int rr_supervisor_descendants(pid_t root, unsigned flags, pid_t *out, size_t cap, size_t *n_out)
{
	struct s_table t = { 0 };
	size_t n = 0;
	int rc = 0, scan, loaded = 0, truncated = 0;

	if (n_out)
		*n_out = 0;
	if (root <= 0 || !out || cap == 0 || !n_out)
		return RR_EINVAL;
	if (kill(root, 0) != 0 && errno == ESRCH)
		return RR_ENOENT;
	scan = (flags & RR_TREE_SCAN_PROC) || !s_have_children_files();
	out[n++] = root;
	/* Breadth first: out doubles as the queue, so each process is visited once. */
	for (size_t i = 0; i < n && !truncated; i++) {
		if (!scan) {
			rc = s_children_files(out[i], out, cap, &n, &truncated);
			if (rc == RR_ENOENT) {
				rc = 0; /* exited while we walked: its children went to a reaper */
				continue;
			}
			if (rc)
				goto out;
		} else {
			if (!loaded) {
				loaded = 1;
				rc = s_table_load(&t);
				if (rc)
					goto out;
			}
			for (size_t k = 0; k < t.n && !truncated; k++) {
				if (t.ppid[k] != out[i] || s_listed(out, n, t.pid[k]))
					continue;
				if (n == cap)
					truncated = 1;
				else
					out[n++] = t.pid[k];
			}
		}
	}
	if (truncated)
		rr_warn("the trainer has more than %zu processes; only the first %zu are signalled",
			cap, cap);
out:
	free(t.pid);
	free(t.ppid);
	*n_out = n;
	return rc;
}

int rr_proc_pidfd_open(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

int rr_proc_send(pid_t pid, int pidfd, int sig)
{
#ifdef SYS_pidfd_send_signal
	if (pidfd >= 0)
		return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
#endif
	(void)pidfd;
	return kill(pid, sig);
}

/* Still the process the walk found: the root itself, or a child of a process in the
 * tree (checked after the pidfd is open, so it stays true until the signal). *pgrp is
 * its process group. */
static int s_still_in_tree(const pid_t *list, size_t n, size_t i, pid_t *pgrp)
{
	pid_t ppid;

	if (s_stat_ids(list[i], &ppid, pgrp) != 0)
		return 0;
	return i == 0 || s_listed(list, n, ppid);
}

int rr_supervisor_signal_tree(pid_t root, int sig, unsigned flags)
{
	pid_t list[RR_TREE_MAX];
	int fds[RR_TREE_MAX];
	unsigned char take[RR_TREE_MAX];
	size_t n = 0;
	int count = 0, rc;

	if (root <= 0 || sig < 1 || sig > 64)
		return RR_EINVAL;
	/* The whole list first: once a launcher dies its workers are reparented and a walk
	 * that signals as it goes would lose them. */
	rc = rr_supervisor_descendants(root, flags, list, RR_TREE_MAX, &n);
	if (rc == RR_ENOENT)
		return 0;
	if (rc)
		return rc;
	/* Then pin every process and decide who gets it, still before any signal: a worker's
	 * parent that dies of the signal would make it look like a stranger afterwards. */
	for (size_t i = 0; i < n; i++) {
		pid_t pgrp = 0;

		take[i] = 0;
		fds[i] = rr_proc_pidfd_open(list[i]);
		if (fds[i] < 0 && errno == ESRCH)
			continue;
		if (!s_still_in_tree(list, n, i, &pgrp))
			continue;
		if (flags & RR_TREE_ALL)
			take[i] = pgrp != root; /* the group gets it below, all at once */
		else
			take[i] = rr_proc_handles_signal(list[i], sig) == 1;
	}
	if (flags & RR_TREE_ALL) {
		/* The trainer's own group at once, as a shell would; then only those that left
		 * it, so no process gets the signal twice. */
		if (kill(-root, sig) == 0)
			count++;
	}
	for (size_t i = 0; i < n; i++) {
		if (take[i]) {
			if (rr_proc_send(list[i], fds[i], sig) == 0) {
				rr_debug("sent signal %d to pid %ld", sig, (long)list[i]);
				count++;
			} else if (errno != ESRCH) {
				rr_warn("cannot send signal %d to pid %ld: %s", sig, (long)list[i],
					strerror(errno));
			}
		}
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return count;
}
