/* The trainer's process tree (docs/trainer-contract.md, "The trainer contract", "Who gets the
 * signal"): every descendant, whatever its session or process group, because torchrun >= 2.2
 * starts each worker with start_new_session=True and a signal to the trainer's group would miss
 * them. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rr/error.h"
#include "rr/log.h"
#include "rr/supervisor.h"

#include "procfs.h"

/* /proc/PID/task/TID/children is one short line in practice, but can grow with many
 * children. */
#define S_CHILDREN_MAX (256u << 10)

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
		v = rr_procfs_number(&p);
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
	struct rr_buf b;
	struct dirent *de;
	DIR *tasks;
	int rc = 0;

	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	tasks = opendir(path);
	if (!tasks)
		return errno == ENOENT ? RR_ENOENT : rr_error_from_errno(errno);
	rr_buf_init(&b, S_CHILDREN_MAX);
	while ((de = readdir(tasks)) != NULL) {
		const char *name = de->d_name;
		long tid = rr_procfs_number(&name);

		if (tid <= 0 || *name)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)pid, tid);
		rc = rr_procfs_read(path, &b);
		if (rc == RR_ENOENT) {
			rc = 0; /* a thread that just exited */
			continue;
		}
		if (rc == RR_ETOOBIG) {
			rc = 0; /* tens of thousands of children: far past RR_TREE_MAX */
			*truncated = 1;
			continue;
		}
		if (rc)
			break;
		*truncated |= s_append_pids((const char *)b.data, out, cap, n);
	}
	rr_buf_free(&b);
	closedir(tasks);
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
	struct rr_proc_stat *t = NULL;
	size_t nt = 0;
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
				rc = rr_proc_table_load(&t, &nt);
				if (rc)
					goto out;
			}
			for (size_t k = 0; k < nt && !truncated; k++) {
				if (t[k].ppid != out[i] || s_listed(out, n, t[k].pid))
					continue;
				if (n == cap)
					truncated = 1;
				else
					out[n++] = t[k].pid;
			}
		}
	}
	if (truncated)
		rr_warn("the trainer has more than %zu processes; only the first %zu are signalled",
			cap, cap);
out:
	free(t);
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
static int s_still_in_tree(const pid_t *list, size_t n, size_t i, struct rr_buf *b,
			   pid_t *pgrp)
{
	struct rr_proc_stat st;

	if (rr_proc_stat_read(list[i], b, &st) != 0)
		return 0;
	*pgrp = st.pgrp;
	return i == 0 || s_listed(list, n, st.ppid);
}

int rr_supervisor_signal_tree(pid_t root, int sig, unsigned flags)
{
	pid_t list[RR_TREE_MAX];
	int fds[RR_TREE_MAX];
	unsigned char take[RR_TREE_MAX];
	struct rr_buf b;
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
	rr_buf_init(&b, RR_PROC_STAT_MAX);
	for (size_t i = 0; i < n; i++) {
		pid_t pgrp = 0;

		take[i] = 0;
		fds[i] = rr_proc_pidfd_open(list[i]);
		if (fds[i] < 0 && errno == ESRCH)
			continue;
		if (!s_still_in_tree(list, n, i, &b, &pgrp))
			continue;
		if (flags & RR_TREE_ALL)
			take[i] = pgrp != root; /* the group gets it below, all at once */
		else
			take[i] = rr_proc_handles_signal(list[i], sig) == 1;
	}
	rr_buf_free(&b);
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
