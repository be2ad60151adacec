/* The trainer's supervisor: spawn (after git's run-command), reaping (after tini), and delivery
 * of the checkpoint signal only to the processes of the trainer's group that installed a
 * handler for it (docs/trainer-contract.md, "The trainer contract", "Who gets the signal"). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/hash.h"
#include "rr/log.h"
#include "rr/supervisor.h"

#include "procfs.h"

extern char **environ;

#define S_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define S_MAX_SIGNAL 64
/* /proc/PID/status can carry up to 65536 supplementary groups (~720 KiB): the ceiling is
 * far above anything the kernel writes. */
#define S_STATUS_MAX (2u << 20)

/* ---- resolve ---------------------------------------------------------------------- */

/* 0 when path is something execve could run, RR_ENOENT when it does not exist,
 * RR_EACCES when it exists but is not an executable regular file. */
static int s_check_executable(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		if (errno == EACCES || errno == EPERM)
			return RR_EACCES;
		return RR_ENOENT;
	}
	/* execve refuses directories and other non-regular files with EACCES. */
	if (!S_ISREG(st.st_mode))
		return RR_EACCES;
	/* AT_EACCESS: execve checks the effective ids, not the real ones. */
	if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) < 0)
		return RR_EACCES;
	return 0;
}

int rr_supervisor_resolve(const char *cmd, char **path_out)
{
	const char *path, *p, *end;
	size_t cmd_len;
	int seen_eacces = 0;

	if (!cmd || !path_out)
		return RR_EINVAL;
	*path_out = NULL;
	if (!*cmd)
		return RR_ENOENT;

	if (strchr(cmd, '/')) {
		int rc = s_check_executable(cmd);
		if (rc)
			return rc;
		*path_out = strdup(cmd);
		return *path_out ? 0 : RR_ENOMEM;
	}

	path = getenv("PATH");
	if (!path)
		path = S_DEFAULT_PATH;
	cmd_len = strlen(cmd);

	for (p = path;; p = end + 1) {
		size_t dir_len;
		char *cand;
		int rc;

		end = strchrnul(p, ':');
		dir_len = (size_t)(end - p);
		if (dir_len == 0) {
			/* An empty entry is the current directory, as in execvp. */
			p = ".";
			dir_len = 1;
		}
		if (dir_len > SIZE_MAX - cmd_len - 2)
			return RR_ETOOBIG;
		cand = malloc(dir_len + 1 + cmd_len + 1);
		if (!cand)
			return RR_ENOMEM;
		memcpy(cand, p, dir_len);
		cand[dir_len] = '/';
		memcpy(cand + dir_len + 1, cmd, cmd_len + 1);

		rc = s_check_executable(cand);
		if (rc == 0) {
			*path_out = cand;
			return 0;
		}
		free(cand);
		/* Like execvp: remember a match we may not run, but keep looking for a later
		 * one we may. */
		if (rc == RR_EACCES)
			seen_eacces = 1;
		if (*end == '\0')
			break;
	}
	return seen_eacces ? RR_EACCES : RR_ENOENT;
}

/* ---- spawn ------------------------------------------------------------------------ */

static int s_exec_error(int e)
{
	switch (e) {
	case ENOENT:
	case ENOTDIR:
		return RR_ENOENT;
	case EACCES:
	case EPERM:
		return RR_EACCES;
	}
	return RR_EIO;
}

/* The core-file limit the agent started with, which the trainer gets back (the agent's own
 * is 0 once rr_supervisor_protect_secrets ran). */
static struct rlimit s_core_limit;
static int s_core_limit_saved;

int rr_supervisor_protect_secrets(void)
{
	struct rlimit none;
	int rc = 0;

	/* Non-dumpable: no core file, no ptrace or /proc/PID/mem, environ or fd reads by
	 * other processes of the same user (the trainer among them). execve gives a normal
	 * (not setuid) trainer its dumpable flag back, so its own core dumps still work. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		rc = rr_error_from_errno(errno);
	/* A second call must not take our own 0 for the limit the trainer gets back. */
	if (s_core_limit_saved || getrlimit(RLIMIT_CORE, &s_core_limit) == 0) {
		s_core_limit_saved = 1;
		/* Only the soft limit: the hard one stays, so the child can raise its soft
		 * limit back before exec without privilege. */
		none = s_core_limit;
		none.rlim_cur = 0;
		if (setrlimit(RLIMIT_CORE, &none) != 0 && !rc)
			rc = rr_error_from_errno(errno);
	} else if (!rc) {
		rc = rr_error_from_errno(errno);
	}
	return rc;
}

/* ---- the terminal ------------------------------------------------------------- */

/* A trainer started from a terminal gets it, as a shell's foreground job does (tini does the
 * same): its process group becomes the terminal's foreground group, so that it can read
 * stdin (input(), pdb, a login prompt) instead of being stopped by SIGTTIN, and the
 * keyboard's signals (Ctrl-C, Ctrl-Z) reach it. Only when the agent's own group holds the
 * terminal: never taken from a shell that runs the agent in the background (tini does not
 * check). No terminal (a container's PID 1, a service, a batch job): nothing changes. */
static struct {
	pid_t pgid;     /* the trainer's group that was given the terminal; 0: none */
	int ttou_saved; /* SIGTTOU is ignored, its disposition saved in ttou_old */
	struct sigaction ttou_old;
} s_tty;

/* 1 when the terminal on stdin (the caller's controlling terminal) has pgrp in the
 * foreground; 0 too when stdin is no terminal (ENOTTY) or not this session's. */
static int s_tty_foreground_is(pid_t pgrp)
{
	pid_t fg = tcgetpgrp(STDIN_FILENO);

	return fg > 0 && fg == pgrp;
}

/* While the trainer's group holds the terminal the agent's is a background group: its log
 * lines on the terminal (under `stty tostop`) and its own tcsetpgrp, taking the terminal
 * back, would stop it with SIGTTOU. Ignored until then. */
static void s_ttou_ignore(void)
{
	struct sigaction ign;

	if (s_tty.ttou_saved)
		return;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	if (sigaction(SIGTTOU, &ign, &s_tty.ttou_old) == 0)
		s_tty.ttou_saved = 1;
}

static void s_ttou_restore(void)
{
	if (!s_tty.ttou_saved)
		return;
	(void)sigaction(SIGTTOU, &s_tty.ttou_old, NULL);
	s_tty.ttou_saved = 0;
}

/* Gives the terminal to the trainer's group pgid; the agent's own group holds it. */
static void s_tty_give(pid_t pgid)
{
	s_ttou_ignore();
	if (tcsetpgrp(STDIN_FILENO, pgid) == 0)
		s_tty.pgid = pgid;
	else
		s_ttou_restore();
}

/* Takes the terminal back for the agent's group from the trainer's group pgid, when that
 * still holds it (not from whoever took it meanwhile: a shell, after the agent stopped).
 * Returns 1 when pgid held it. Errors (a terminal hung up) are ignored: nothing to give
 * back then. */
static int s_tty_take_back(pid_t pgid)
{
	int held = 0;

	if (!s_tty.pgid || s_tty.pgid != pgid)
		return 0;
	/* A group whose processes are all gone is still the terminal's foreground group,
	 * under its number, until another one is set. */
	if (s_tty_foreground_is(pgid)) {
		held = 1;
		(void)tcsetpgrp(STDIN_FILENO, getpgrp()); /* SIGTTOU is ignored */
	}
	s_tty.pgid = 0;
	s_ttou_restore();
	return held;
}

/* Signals the agent was started with ignored (nohup's SIGHUP): the trainer gets them
 * ignored too, as tini and dumb-init leave them, or the SIGHUP the agent passes on would
 * kill a `nohup`ed trainer. Noted before main, before the agent changes any disposition
 * of its own (SIGPIPE). Not passed on ignored: SIGCHLD (children would vanish unwaited),
 * SIGTERM (how the agent stops the trainer), SIGINT and SIGQUIT (a non-interactive shell
 * ignores them for every job it puts in the background: Ctrl-C and a second SIGINT to the
 * agent must still reach the trainer). */
static sigset_t s_inherited_ignored;

__attribute__((constructor)) static void s_note_inherited_ignored(void)
{
	sigemptyset(&s_inherited_ignored);
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD || sig == SIGTERM ||
		    sig == SIGINT || sig == SIGQUIT)
			continue;
		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			sigaddset(&s_inherited_ignored, sig);
	}
}

/* The most of a process's environment read to tell whose it is (ARG_MAX-sized, 2 MiB, in
 * all but odd cases is far more than an environment holds). */
#define RR_PROC_ENVIRON_MAX (2u << 20)

/* What the child needs, all prepared before fork. */
struct s_child_ctx {
	const char *path;
	char *const *argv;
	char *const *envp;
	int err_fd;
	struct sigaction dfl, ign;
	sigset_t ignored;     /* s_inherited_ignored */
	sigset_t empty;
	pid_t parent;         /* the agent's pid, to catch its death before PDEATHSIG was set */
	int take_tty;         /* make the child's group the terminal's foreground group */
	int death_signal;     /* 0: none (the agent is PID 1) */
	unsigned max_fd;      /* for the close loop where close_range is missing */
};

/* Closes every fd from lo to hi (inclusive). close_range (Linux 5.9) when there is one,
 * else one close per number: both async-signal-safe. */
static void s_close_fds(unsigned lo, unsigned hi, unsigned max_fd)
{
	if (lo > hi)
		return;
#ifdef SYS_close_range
	if (syscall(SYS_close_range, lo, hi, 0) == 0)
		return;
#endif
	if (hi > max_fd)
		hi = max_fd;
	for (unsigned fd = lo; fd <= hi; fd++)
		(void)close((int)fd);
}

/* Runs in the forked child: async-signal-safe calls only. Never returns. */
static void __attribute__((noreturn)) s_child(const struct s_child_ctx *c)
{
	int sig, e;

	/* Every signal is still blocked (see the parent), so no inherited handler can run
	 * here before it is reset: to the default, or ignored as the agent found it. */
	for (sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		/* glibc refuses its internal real-time signals with EINVAL; that is fine. */
		(void)sigaction(sig, sigismember(&c->ignored, sig) == 1 ? &c->ign : &c->dfl, NULL);
	}
	/* Cannot fail for a fresh child of ours; the parent does the same to close the race. */
	(void)setpgid(0, 0);
	/* The new group is a background one now: its tcsetpgrp passes only because SIGTTOU
	 * is blocked (the kernel treats blocked as ignored here), as every signal still is.
	 * In the child, so that the trainer holds the terminal before it runs. An error
	 * (ENOTTY, ENXIO, a terminal hung up) leaves it without, as before. */
	if (c->take_tty)
		(void)tcsetpgrp(STDIN_FILENO, getpid());
	/* The belt to every O_CLOEXEC/SOCK_CLOEXEC: whatever another thread of the agent
	 * opened without it (a library's socket, a socketpair) does not reach the trainer.
	 * 0-2 stay; so does the error pipe until execve closes it. */
	if (c->err_fd > 2) {
		s_close_fds(3, (unsigned)c->err_fd - 1, c->max_fd);
		s_close_fds((unsigned)c->err_fd + 1, ~0U, c->max_fd);
	} else {
		s_close_fds(3, ~0U, c->max_fd);
	}
	if (s_core_limit_saved)
		(void)setrlimit(RLIMIT_CORE, &s_core_limit);
	if (c->death_signal) {
		/* An agent that dies (even by SIGKILL) takes the trainer with it instead of
		 * leaving it training unsupervised. The signal comes when the forking thread
		 * ends: spawn runs on the agent's main thread, which lives as long as the
		 * agent. If the agent died before the prctl, the signal will never come:
		 * getppid() then names whoever adopted us. */
		(void)prctl(PR_SET_PDEATHSIG, c->death_signal, 0, 0, 0);
		if (getppid() != c->parent)
			_exit(128 + c->death_signal);
	}
	/* The agent blocks everything for its signalfd; the trainer must not inherit it.
	 * Unblocked last, so a death signal that came early is delivered right here. */
	(void)sigprocmask(SIG_SETMASK, &c->empty, NULL);

	execve(c->path, c->argv, c->envp);

	e = errno;
	while (write(c->err_fd, &e, sizeof(e)) < 0 && errno == EINTR)
		;
	_exit(127);
}

int rr_supervisor_spawn(const char *path, char *const argv[], char *const envp[],
			pid_t *pid_out, int *exec_errno)
{
	struct s_child_ctx c;
	struct rlimit nofile;
	sigset_t all, old;
	int fds[2] = { -1, -1 };
	int child_errno = 0;
	size_t got = 0;
	pid_t pid;

	if (exec_errno)
		*exec_errno = 0;
	if (pid_out)
		*pid_out = -1;
	if (!path || !argv || !argv[0] || !pid_out)
		return RR_EINVAL;
	if (!envp)
		envp = environ;

	/* Everything the child touches is ready before fork. */
	memset(&c, 0, sizeof(c));
	c.path = path;
	c.argv = argv;
	c.envp = envp;
	c.dfl.sa_handler = SIG_DFL;
	sigemptyset(&c.dfl.sa_mask);
	c.ign.sa_handler = SIG_IGN;
	sigemptyset(&c.ign.sa_mask);
	c.ignored = s_inherited_ignored;
	sigemptyset(&c.empty);
	sigfillset(&all);
	c.parent = getpid();
	/* SIGTERM, not SIGKILL: the trainer (or its launcher, e.g. torchrun, which passes it
	 * on to its workers; SIGKILL would orphan them) can still write a checkpoint that
	 * the next agent on this disk persists. As PID 1 the agent's death ends the whole
	 * container, so nothing to do there. */
	c.death_signal = c.parent == 1 ? 0 : SIGTERM;
	c.max_fd = 65535;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
	    nofile.rlim_cur < 1048576)
		c.max_fd = nofile.rlim_cur ? (unsigned)nofile.rlim_cur - 1 : 0;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		if (exec_errno)
			*exec_errno = errno;
		return rr_error_from_errno(errno);
	}
	c.err_fd = fds[1];
	if (s_tty.pgid) /* a trainer before this one that was never reaped here */
		(void)s_tty_take_back(s_tty.pgid);
	c.take_tty = s_tty_foreground_is(getpgrp());
	if (c.take_tty)
		s_ttou_ignore();

	/* Block every signal across fork so no handler of ours runs in the child before
	 * it has reset the dispositions (git's run-command does the same). */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		s_child(&c);
	}
	if (pid < 0) {
		int e = errno;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close(fds[0]);
		close(fds[1]);
		if (c.take_tty)
			s_ttou_restore();
		if (exec_errno)
			*exec_errno = e;
		return rr_error_from_errno(e);
	}
	if (c.take_tty)
		s_tty.pgid = pid; /* by the child's tcsetpgrp; checked when taken back */
	/* EACCES: the child has already exec'd (and so already ran its own setpgid);
	 * ESRCH: it is already gone. Both are the child's race to win. */
	(void)setpgid(pid, pid);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(fds[1]);

	/* EOF means the close-on-exec pipe closed: execve succeeded. A read error (cannot
	 * happen on our own pipe) counts as success too: a child that did fail exits 127
	 * and is reaped like any other. */
	while (got < sizeof(child_errno)) {
		ssize_t n = read(fds[0], (char *)&child_errno + got, sizeof(child_errno) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);

	if (got == 0) {
		*pid_out = pid;
		return 0;
	}

	/* The child failed before or in execve and is exiting with 127: collect it so it
	 * does not linger as a zombie the caller never heard of. */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	(void)s_tty_take_back(pid);
	if (got < sizeof(child_errno))
		child_errno = EIO; /* a torn report; cannot happen with a pipe, be safe */
	if (exec_errno)
		*exec_errno = child_errno;
	return s_exec_error(child_errno);
}

/* ---- /proc ------------------------------------------------------------------------ */

/* Finds "key" at the start of a line of text and returns what follows it, past blanks;
 * NULL when absent. */
static const char *s_status_field(const char *text, const char *key)
{
	size_t key_len = strlen(key);
	const char *line = text;

	while (line && *line) {
		if (strncmp(line, key, key_len) == 0) {
			const char *v = line + key_len;
			while (*v == ' ' || *v == '\t')
				v++;
			return v;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return NULL;
}

/* Tests bit sig-1 of a hex mask such as SigCgt's "0000000000014a02", whatever its
 * width. 1 or 0; RR_EIO when the field is not a hex mask. */
static int s_mask_has_signal(const char *v, int sig)
{
	size_t ndigits = 0, bit = (size_t)(sig - 1), idx;
	int d;

	while (rr_hex_digit(v[ndigits]) >= 0)
		ndigits++;
	if (ndigits == 0 || (v[ndigits] != '\n' && v[ndigits] != '\0'))
		return RR_EIO;
	idx = bit / 4; /* hex digit counted from the right */
	if (idx >= ndigits)
		return 0;
	d = rr_hex_digit(v[ndigits - 1 - idx]);
	return (d >> (bit % 4)) & 1;
}

static int s_proc_handles_signal(pid_t pid, int sig, struct rr_buf *b)
{
	char path[64];
	const char *v;
	int rc;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	rc = rr_procfs_read(path, b);
	if (rc)
		return rc;
	/* A zombie keeps its SigCgt until reaped, but nothing will ever run a handler. */
	v = s_status_field((const char *)b->data, "State:");
	if (v && (*v == 'Z' || *v == 'X'))
		return 0;
	v = s_status_field((const char *)b->data, "SigCgt:");
	if (!v)
		return RR_EIO;
	return s_mask_has_signal(v, sig);
}

int rr_proc_handles_signal(pid_t pid, int sig)
{
	struct rr_buf b;
	int rc;

	if (pid <= 0 || sig < 1 || sig > S_MAX_SIGNAL)
		return RR_EINVAL;
	rr_buf_init(&b, S_STATUS_MAX);
	rc = s_proc_handles_signal(pid, sig, &b);
	rr_buf_free(&b);
	return rc;
}

/* ---- leftovers ------------------------------------------------------------------- */

/* 1 when process pid's environment holds what the agent gives the trainer
 * (RESUME_RUN_ATTEMPT), or cannot be read: the trainer's, or one of its processes. 0 when
 * it holds none (a process the agent did not start), or it is gone. b: scratch. */
static int s_carries_trainer_env(pid_t pid, struct rr_buf *b)
{
	static const char marker[] = "RESUME_RUN_ATTEMPT=";
	char path[64];
	int rc;

	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	rc = rr_procfs_read(path, b);
	if (rc == RR_ENOENT)
		return 0;
	if (rc)
		return 1;
	for (size_t at = 0; at < b->len; at += strlen((const char *)b->data + at) + 1)
		if (strncmp((const char *)b->data + at, marker, sizeof(marker) - 1) == 0)
			return 1;
	return 0;
}

int rr_supervisor_signal_descendants(pid_t pgid, int sig)
{
	struct rr_proc_stat *v;
	unsigned char *mine;
	struct rr_buf b;
	size_t n, i, k;
	pid_t self = getpid();
	int changed = 1, count = 0, group_alive = 0, rc;

	if (sig < 0 || sig > S_MAX_SIGNAL)
		return RR_EINVAL;
	/* No child at all (none running, none unreaped; __WALL: whatever signal it would send
	 * at its exit): no descendant either, since they are found through their parents
	 * below, and no need to read every process's stat (milliseconds on a busy machine, at
	 * every exit). */
	siginfo_t si;
	if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) != 0 && errno == ECHILD)
		return 0;
	rc = rr_proc_table_load(&v, &n);
	if (rc)
		return rc;
	mine = calloc(n ? n : 1, 1);
	if (!mine) {
		free(v);
		return RR_ENOMEM;
	}
	rr_buf_init(&b, RR_PROC_ENVIRON_MAX);
	/* The parent links form a tree rooted at us; as a subreaper (or PID 1) every orphan
	 * of the trainer hangs below us too, whatever session or group it moved to. As PID 1
	 * so does any other orphan of the container (`kubectl exec -- sh -c 'cmd &'`): there a
	 * child of ours is the trainer's when it leads the trainer's group or carries its
	 * environment. */
	while (changed) {
		changed = 0;
		for (i = 0; i < n; i++) {
			if (mine[i])
				continue;
			if (v[i].ppid == self) {
				if (self != 1 || v[i].pid == pgid ||
				    s_carries_trainer_env(v[i].pid, &b))
					mine[i] = changed = 1;
				continue;
			}
			for (k = 0; k < n; k++)
				if (mine[k] && v[k].pid == v[i].ppid) {
					mine[i] = changed = 1;
					break;
				}
		}
	}
	for (i = 0; i < n; i++)
		if (mine[i] && v[i].state != 'Z' && v[i].state != 'X' && pgid > 0 &&
		    v[i].pgrp == pgid)
			group_alive = 1;
	/* The group in one call first, so a member forking right now cannot slip past. Only
	 * while a descendant of ours is in it: an empty group's number may be anyone's. */
	if (group_alive && sig)
		(void)kill(-pgid, sig);
	for (i = 0; i < n; i++) {
		struct rr_proc_stat now;
		int pidfd;

		if (!mine[i] || v[i].state == 'Z' || v[i].state == 'X')
			continue;
		count++;
		if (!sig)
			continue;
		pidfd = rr_proc_pidfd_open(v[i].pid);
		if (pidfd < 0 && errno == ESRCH)
			continue;
		/* Still the process we listed (same start time), now pinned by the pidfd: its
		 * number was not handed to a stranger in between. (Its parent may have
		 * changed: the group signal above can make it our orphan.) */
		if (rr_proc_stat_read(v[i].pid, &b, &now) == 0 && now.start == v[i].start &&
		    now.state != 'Z' && now.state != 'X')
			(void)rr_proc_send(v[i].pid, pidfd, sig);
		if (pidfd >= 0)
			close(pidfd);
	}
	rr_buf_free(&b);
	free(mine);
	free(v);
	return count;
}

/* ---- reaping and exit status ------------------------------------------------------ */

/* Stops the agent's own process group with sig, as the keyboard stops a shell's job: 1 once
 * it was stopped and continued (the shell's fg or bg), 0 when it was not stopped at all (PID
 * 1, which the kernel does not stop; a group with no shell above it, an orphaned one, which
 * the kernel does not stop for SIGTSTP, SIGTTIN or SIGTTOU). */
static int s_stop_own_group(int sig)
{
	sigset_t cont, old, pending;
	int continued;

	if (getpid() == 1)
		return 0;
	/* SIGCONT blocked, so that it stays pending (a stop signal discards an earlier one):
	 * pending afterwards, it says the agent was stopped and continued. */
	sigemptyset(&cont);
	sigaddset(&cont, SIGCONT);
	pthread_sigmask(SIG_BLOCK, &cont, &old);
	(void)kill(0, sig); /* this thread takes the stop before kill returns */
	continued = sigpending(&pending) == 0 && sigismember(&pending, SIGCONT);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return continued;
}

/* The trainer (group pgid) was stopped by sig. A job-control stop (Ctrl-Z's SIGTSTP, or
 * SIGTTIN/SIGTTOU: it used the terminal from the background) stops the agent's own group
 * too, as the shell's job it is: the shell takes the terminal back and says "Stopped"; its
 * fg or bg continues the agent, which gives the terminal to the trainer again when the
 * agent's group holds it, and continues the trainer. Otherwise the trainer would wait,
 * stopped and unseen, for ever. */
static void s_on_trainer_stopped(pid_t pgid, int sig)
{
	int held;

	if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU) {
		/* SIGSTOP: someone (a debugger, an operator) means it; SIGCONT ends it. */
		rr_info("trainer stopped by SIG%s; it waits for SIGCONT", rr_signal_name(sig));
		return;
	}
	held = s_tty_take_back(pgid);
	/* SIGTTIN/SIGTTOU while the terminal is the agent's to give (a shell's fg gave it to
	 * the agent's group, not the trainer's): no need to stop anything. */
	if ((sig == SIGTSTP || !s_tty_foreground_is(getpgrp())) && !s_stop_own_group(sig)) {
		/* Nobody above to stop to: Ctrl-Z does nothing, as it does to a PID 1 or an
		 * orphaned group's own processes. A stop for the terminal would come back. */
		if (!held || sig != SIGTSTP) {
			rr_warn("trainer stopped by SIG%s%s; SIGCONT to it resumes it",
				rr_signal_name(sig), sig == SIGTSTP ? "" :
				" (it used the terminal, which another process group holds)");
			return;
		}
		rr_info("Ctrl-Z: no shell with job control above the agent to stop to; the "
			"trainer goes on");
	}
	if (s_tty_foreground_is(getpgrp())) {
		s_tty_give(pgid);
		if (s_tty.pgid != pgid) {
			rr_warn("trainer stopped by SIG%s, and the terminal cannot be given "
				"back to it; SIGCONT to it resumes it", rr_signal_name(sig));
			return;
		}
	}
	(void)kill(-pgid, SIGCONT);
}

/* The trainer (group pgid) ended with wait status st: the terminal goes back to the agent's
 * group, and a trainer that Ctrl-C's SIGINT killed while it held the terminal ends the run
 * as Ctrl-C would have, had it reached the agent: the signal is raised at the agent (as
 * bash does for a foreground job killed by SIGINT), not taken for a failure to restart. */
static void s_on_trainer_gone(pid_t pgid, int st)
{
	if (s_tty_take_back(pgid) && WIFSIGNALED(st) && WTERMSIG(st) == SIGINT) {
		rr_info("the trainer held the terminal and died of SIGINT (Ctrl-C): leaving as "
			"after SIGINT to the agent");
		(void)kill(getpid(), SIGINT);
	}
}

int rr_supervisor_reap(pid_t child, int *exited, int *status)
{
	/* The trainer's stops too (each is reported once); other processes' stops are
	 * passed over. */
	int flags = WNOHANG | (child > 0 ? WUNTRACED : 0);
	int count = 0;

	if (exited)
		*exited = 0;
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, flags);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: nothing left to wait for */
		}
		if (pid == 0)
			break;
		if (WIFSTOPPED(st)) {
			if (pid == child)
				s_on_trainer_stopped(child, WSTOPSIG(st));
			continue;
		}
		count++;
		if (pid == child) {
			if (exited)
				*exited = 1;
			if (status)
				*status = st;
			s_on_trainer_gone(child, st);
		} else if (s_tty.pgid && pid == s_tty.pgid) {
			(void)s_tty_take_back(pid); /* the trainer, reaped as a leftover */
		}
	}
	return count;
}

int rr_exit_code_from_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	if (WIFSTOPPED(status))
		return 128 + WSTOPSIG(status); /* what a shell reports for a stopped job */
	return 255;
}

/* ---- signal names ----------------------------------------------------------------- */

static const struct {
	const char *name;
	int sig;
} s_signals[] = {
	{ "HUP", SIGHUP },	 { "INT", SIGINT },	  { "QUIT", SIGQUIT },
	{ "ILL", SIGILL },	 { "TRAP", SIGTRAP },	  { "ABRT", SIGABRT },
	{ "BUS", SIGBUS },	 { "FPE", SIGFPE },	  { "KILL", SIGKILL },
	{ "USR1", SIGUSR1 },	 { "SEGV", SIGSEGV },	  { "USR2", SIGUSR2 },
	{ "PIPE", SIGPIPE },	 { "ALRM", SIGALRM },	  { "TERM", SIGTERM },
	{ "CHLD", SIGCHLD },	 { "CONT", SIGCONT },	  { "STOP", SIGSTOP },
	{ "TSTP", SIGTSTP },	 { "TTIN", SIGTTIN },	  { "TTOU", SIGTTOU },
	{ "URG", SIGURG },	 { "XCPU", SIGXCPU },	  { "XFSZ", SIGXFSZ },
	{ "VTALRM", SIGVTALRM }, { "PROF", SIGPROF },	  { "WINCH", SIGWINCH },
	{ "IO", SIGIO },	 { "PWR", SIGPWR },	  { "SYS", SIGSYS },
};

/* ASCII-only, so the answer does not depend on the locale (Turkish 'i'). */
static int s_ascii_casecmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		int ca = (unsigned char)*a, cb = (unsigned char)*b;
		if (ca >= 'a' && ca <= 'z')
			ca -= 'a' - 'A';
		if (cb >= 'a' && cb <= 'z')
			cb -= 'a' - 'A';
		if (ca != cb || ca == 0)
			return ca - cb;
	}
}

int rr_signal_from_name(const char *name, int *sig_out)
{
	size_t i;

	if (!name || !sig_out || !*name)
		return RR_EINVAL;
	if (name[0] >= '0' && name[0] <= '9') {
		char *end;
		long v;

		errno = 0;
		v = strtol(name, &end, 10);
		if (errno || *end != '\0' || v < 1 || v > S_MAX_SIGNAL)
			return RR_EINVAL;
		*sig_out = (int)v;
		return 0;
	}
	if ((name[0] == 'S' || name[0] == 's') && (name[1] == 'I' || name[1] == 'i') &&
	    (name[2] == 'G' || name[2] == 'g'))
		name += 3;
	for (i = 0; i < sizeof(s_signals) / sizeof(s_signals[0]); i++) {
		if (s_ascii_casecmp(name, s_signals[i].name) == 0) {
			*sig_out = s_signals[i].sig;
			return 0;
		}
	}
	return RR_EINVAL;
}

/* The numbers' names, for the signals without one (the real-time ones): what the trainer
 * gets in RESUME_RUN_SIGNAL, and what rr_signal_from_name takes back. */
static const char *const s_numbers[S_MAX_SIGNAL + 1] = {
	"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15",
	"16", "17", "18", "19", "20", "21", "22", "23", "24", "25", "26", "27", "28", "29",
	"30", "31", "32", "33", "34", "35", "36", "37", "38", "39", "40", "41", "42", "43",
	"44", "45", "46", "47", "48", "49", "50", "51", "52", "53", "54", "55", "56", "57",
	"58", "59", "60", "61", "62", "63", "64"
};

const char *rr_signal_name(int sig)
{
	size_t i;

	for (i = 0; i < sizeof(s_signals) / sizeof(s_signals[0]); i++) {
		if (s_signals[i].sig == sig)
			return s_signals[i].name;
	}
	if (sig >= SIGRTMIN && sig <= SIGRTMAX && sig <= S_MAX_SIGNAL)
		return s_numbers[sig];
	return "?";
}

const char *rr_signal_unfit_for_checkpoint(int sig)
{
	switch (sig) {
	case SIGUSR1:
	case SIGUSR2:
	case SIGHUP:
	case SIGQUIT:
	case SIGALRM:
	case SIGPWR:
		return NULL;
	case SIGKILL:
	case SIGSTOP:
		return "it cannot be caught";
	case SIGTERM:
		return "it is the signal that stops the trainer after a notice's checkpoint";
	case SIGINT:
		return "it is Ctrl-C's, and every Python process catches it "
		       "(KeyboardInterrupt): wrappers would take the request and die of it";
	case SIGCHLD:
		return "the kernel sends it whenever a child process ends";
	case SIGCONT:
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU:
		return "it is a job-control signal (stop and continue)";
	case SIGWINCH:
		return "a terminal sends it at every window resize";
	case SIGSEGV:
	case SIGBUS:
	case SIGFPE:
	case SIGILL:
	case SIGTRAP:
	case SIGABRT:
	case SIGSYS:
		return "it reports a fault, and crash handlers (Python's faulthandler) catch "
		       "it";
	case SIGPIPE:
	case SIGURG:
	case SIGIO:
	case SIGXCPU:
	case SIGXFSZ:
		return "the kernel sends it on its own (a broken pipe, a socket or I/O event, "
		       "a resource limit)";
	case SIGVTALRM:
	case SIGPROF:
		return "interval timers and profilers use it";
	}
	/* SIGRTMIN, not 32: the C library keeps the first real-time signals for itself
	 * (glibc 32 and 33, for its threads and timers). */
	if (sig >= SIGRTMIN && sig <= SIGRTMAX && sig <= S_MAX_SIGNAL)
		return NULL;
	if (sig > 31 && sig < SIGRTMIN)
		return "the C library keeps it for itself (real-time signals start at "
		       "SIGRTMIN)";
	return "it is no signal for a checkpoint request";
}
