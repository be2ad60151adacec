/* Supervisor: PATH resolution, spawn (mask, dispositions, process group, exec errors),
 * SigCgt-targeted signalling, reaping (including orphans under a subreaper), and signal
 * names. Real processes throughout; every wait is a bounded poll on a condition. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cunit_main.h"
#include "rr/error.h"
#include "rr/supervisor.h"

#include "procfs.h"

extern char **environ;

#define S_PYTHON "/usr/bin/python3"
/* 1000 polls x 10 ms: a 10 s ceiling that only a failing test ever reaches. */
#define S_POLL_TRIES 1000

/* Installs a SIGUSR1 handler that writes "got" to argv[1], optionally renames the process
 * (argv[2] becomes its comm), announces readiness with argv[1].ready, then waits. It waits
 * on signal.set_wakeup_fd's pipe, not in time.sleep: Python runs a handler only between
 * bytecodes, so a signal that lands after the last check and before the sleep's system call
 * would wait for the whole sleep (seen under load: no "got" in 10 s). The pipe is written
 * by the C-level handler, so select returns however late the signal came, and the loop's
 * next turn runs the Python handler. */
static const char s_handler_py[] =
	"import os, select, signal, sys\n"
	"out = sys.argv[1]\n"
	"if len(sys.argv) > 2:\n"
	"    with open('/proc/self/comm', 'w') as f:\n"
	"        f.write(sys.argv[2])\n"
	"def on_usr1(signum, frame):\n"
	"    with open(out, 'w') as f:\n"
	"        f.write('got')\n"
	"r, w = os.pipe()\n"
	"os.set_blocking(w, False)\n"
	"signal.set_wakeup_fd(w)\n"
	"signal.signal(signal.SIGUSR1, on_usr1)\n"
	"open(out + '.ready', 'w').close()\n"
	"while True:\n"
	"    select.select([r], [], [])\n"
	"    os.read(r, 64)\n";

/* ---- helpers ---------------------------------------------------------------------- */

static void s_nap(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

static int s_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Polls for path to exist; 1 when it does within the ceiling. */
static int s_wait_for_file(const char *path)
{
	for (int i = 0; i < S_POLL_TRIES; i++) {
		if (s_exists(path))
			return 1;
		s_nap();
	}
	return 0;
}

/* Reads up to cap-1 bytes of path into out; -1 when it cannot be opened. */
static ssize_t s_read_small(const char *path, char *out, size_t cap)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, out, cap - 1);
	close(fd);
	out[n < 0 ? 0 : n] = '\0';
	return n;
}

static int s_file_equals(const char *path, const char *want)
{
	char buf[256];
	return s_read_small(path, buf, sizeof(buf)) >= 0 && strcmp(buf, want) == 0;
}

/* Polls for path to hold exactly want. */
static int s_wait_for_content(const char *path, const char *want)
{
	for (int i = 0; i < S_POLL_TRIES; i++) {
		if (s_file_equals(path, want))
			return 1;
		s_nap();
	}
	return 0;
}

static int s_write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	if (write(fd, data, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	close(fd);
	return chmod(path, mode); /* past the umask */
}

static int s_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void s_rm_rf(const char *dir)
{
	nftw(dir, s_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void s_mkdtemp(char *buf, size_t cap)
{
	snprintf(buf, cap, "/tmp/rr-sup-test-XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(buf));
}

static int s_waitpid(pid_t pid)
{
	int st = -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

static void s_kill_and_wait(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		s_waitpid(pid);
	}
}

/* A line of /proc/PID/status, parsed as a hex mask. 0 on success. */
static int s_status_mask(pid_t pid, const char *key, uint64_t *out)
{
	char path[64], buf[8192], *p, *end;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if (s_read_small(path, buf, sizeof(buf)) <= 0)
		return -1;
	for (p = buf; p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, key, strlen(key)) == 0) {
			errno = 0;
			*out = strtoull(p + strlen(key), &end, 16);
			return (errno || end == p + strlen(key)) ? -1 : 0;
		}
	}
	return -1;
}

/* The State letter of /proc/PID/status, or 0 when the process is gone. */
static char s_proc_state(pid_t pid)
{
	char path[64], buf[8192], *p;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if (s_read_small(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "\nState:");
	if (!p)
		return 0;
	p += strlen("\nState:");
	while (*p == ' ' || *p == '\t')
		p++;
	return *p;
}

static uint64_t s_bit(int sig)
{
	return (uint64_t)1 << (sig - 1);
}

/* Alive, not a zombie, and sig neither pending nor on its way: if sig had been sent to
 * a process that does not handle it, the process would be dead or have it pending. */
static int s_alive_without_pending(pid_t pid, int sig)
{
	uint64_t pnd = 0, shd = 0;
	char state = s_proc_state(pid);

	if (state == 0 || state == 'Z' || state == 'X')
		return 0;
	if (s_status_mask(pid, "SigPnd:", &pnd) || s_status_mask(pid, "ShdPnd:", &shd))
		return 0;
	return !((pnd | shd) & s_bit(sig));
}

static int s_spawn_argv(char *const argv[], pid_t *pid)
{
	char *path = NULL;
	int rc, exec_errno = -1;

	rc = rr_supervisor_resolve(argv[0], &path);
	if (rc)
		return rc;
	rc = rr_supervisor_spawn(path, argv, environ, pid, &exec_errno);
	free(path);
	return rc;
}

/* Spawns sh -c script [args...] and returns its wait status. */
static int s_run_sh(const char *script)
{
	char *argv[] = { "sh", "-c", (char *)script, NULL };
	pid_t pid = -1;

	if (s_spawn_argv(argv, &pid))
		return -1;
	return s_waitpid(pid);
}

/* Keeps PATH and the cwd around a test that changes them. */
struct s_env {
	char *path;
	int cwd_fd;
};

static void s_env_save(struct s_env *e)
{
	const char *p = getenv("PATH");
	e->path = p ? strdup(p) : NULL;
	e->cwd_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void s_env_restore(struct s_env *e)
{
	if (e->path)
		setenv("PATH", e->path, 1);
	else
		unsetenv("PATH");
	free(e->path);
	if (e->cwd_fd >= 0) {
		CU_ASSERT_EQUAL(fchdir(e->cwd_fd), 0);
		close(e->cwd_fd);
	}
}

/* dir/name as an executable shell script or, with exec 0, as a plain 0644 file. */
static void s_make_cmd(const char *dir, const char *name, int exec)
{
	char path[512];
	static const char script[] = "#!/bin/sh\nexit 0\n";

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CU_ASSERT_EQUAL(s_write_file(path, script, sizeof(script) - 1, exec ? 0755 : 0644), 0);
}

/* ---- resolve ---------------------------------------------------------------------- */

static void test_resolve_missing_command_is_enoent(void)
{
	char *path = (char *)"untouched";

	CU_ASSERT_EQUAL(rr_supervisor_resolve("rr-no-such-command-7f3a", &path), RR_ENOENT);
	CU_ASSERT_PTR_NULL(path);
	CU_ASSERT_EQUAL(rr_supervisor_resolve("/nonexistent-rr-dir/cmd", &path), RR_ENOENT);
	CU_ASSERT_EQUAL(rr_supervisor_resolve("", &path), RR_ENOENT);
	CU_ASSERT_EQUAL(rr_supervisor_resolve(NULL, &path), RR_EINVAL);
}

static void test_resolve_non_executable_file_is_eacces(void)
{
	char dir[64], file[128];
	char *path = NULL;

	s_mkdtemp(dir, sizeof(dir));
	s_make_cmd(dir, "plain", 0);
	snprintf(file, sizeof(file), "%s/plain", dir);

	CU_ASSERT_EQUAL(rr_supervisor_resolve(file, &path), RR_EACCES);
	CU_ASSERT_PTR_NULL(path);
	s_rm_rf(dir);
}

static void test_resolve_directory_is_eacces(void)
{
	char dir[64], sub[128];
	char *path = NULL;
	struct s_env env;

	s_mkdtemp(dir, sizeof(dir));
	CU_ASSERT_EQUAL(rr_supervisor_resolve(dir, &path), RR_EACCES);

	/* Found by PATH search too: a directory named like the command. */
	snprintf(sub, sizeof(sub), "%s/rr-cmd", dir);
	CU_ASSERT_EQUAL(mkdir(sub, 0755), 0);
	s_env_save(&env);
	setenv("PATH", dir, 1);
	CU_ASSERT_EQUAL(rr_supervisor_resolve("rr-cmd", &path), RR_EACCES);
	CU_ASSERT_PTR_NULL(path);
	s_env_restore(&env);
	s_rm_rf(dir);
}

static void test_resolve_prefers_later_executable_over_earlier_non_executable(void)
{
	char a[64], b[64], search[160], want[128];
	char *path = NULL;
	struct s_env env;

	s_mkdtemp(a, sizeof(a));
	s_mkdtemp(b, sizeof(b));
	s_make_cmd(a, "rr-cmd", 0);
	s_make_cmd(b, "rr-cmd", 1);
	snprintf(search, sizeof(search), "%s:%s", a, b);
	snprintf(want, sizeof(want), "%s/rr-cmd", b);

	s_env_save(&env);
	setenv("PATH", search, 1);
	CU_ASSERT_EQUAL(rr_supervisor_resolve("rr-cmd", &path), 0);
	CU_ASSERT_STRING_EQUAL(path ? path : "", want);
	free(path);
	path = NULL;

	/* With only the non-executable match, the answer is "permission denied". */
	setenv("PATH", a, 1);
	CU_ASSERT_EQUAL(rr_supervisor_resolve("rr-cmd", &path), RR_EACCES);
	CU_ASSERT_PTR_NULL(path);
	s_env_restore(&env);
	s_rm_rf(a);
	s_rm_rf(b);
}

static void test_resolve_takes_first_executable_match_in_path_order(void)
{
	char a[64], b[64], search[200], want[128];
	char *path = NULL;
	struct s_env env;

	s_mkdtemp(a, sizeof(a));
	s_mkdtemp(b, sizeof(b));
	s_make_cmd(a, "rr-cmd", 1);
	s_make_cmd(b, "rr-cmd", 1);
	snprintf(search, sizeof(search), "/nonexistent-rr-dir:%s:%s", a, b);
	snprintf(want, sizeof(want), "%s/rr-cmd", a);

	s_env_save(&env);
	setenv("PATH", search, 1);
	CU_ASSERT_EQUAL(rr_supervisor_resolve("rr-cmd", &path), 0);
	CU_ASSERT_STRING_EQUAL(path ? path : "", want);
	free(path);
	s_env_restore(&env);
	s_rm_rf(a);
	s_rm_rf(b);
}

static void test_resolve_empty_path_entry_means_current_directory(void)
{
	static const char *const searches[] = { ":/nonexistent-rr-dir", "/nonexistent-rr-dir:",
						"/nonexistent-rr-dir::/nonexistent-rr-2", "" };
	char dir[64];
	struct s_env env;

	s_mkdtemp(dir, sizeof(dir));
	s_make_cmd(dir, "rr-cmd", 1);
	s_env_save(&env);
	CU_ASSERT_EQUAL_FATAL(chdir(dir), 0);
	for (size_t i = 0; i < sizeof(searches) / sizeof(searches[0]); i++) {
		char *path = NULL;
		setenv("PATH", searches[i], 1);
		CU_ASSERT_EQUAL(rr_supervisor_resolve("rr-cmd", &path), 0);
		CU_ASSERT_STRING_EQUAL(path ? path : "", "./rr-cmd");
		free(path);
	}
	s_env_restore(&env);
	s_rm_rf(dir);
}

static void test_resolve_uses_default_path_when_unset(void)
{
	struct s_env env;
	char *path = NULL;

	s_env_save(&env);
	unsetenv("PATH");
	CU_ASSERT_EQUAL(rr_supervisor_resolve("sh", &path), 0);
	CU_ASSERT_PTR_NOT_NULL(path);
	if (path) {
		CU_ASSERT(strcmp(path, "/usr/local/bin/sh") == 0 ||
			  strcmp(path, "/usr/bin/sh") == 0 || strcmp(path, "/bin/sh") == 0);
	}
	free(path);
	s_env_restore(&env);
}

static void test_resolve_uses_command_with_slash_as_is(void)
{
	char dir[64];
	char *path = NULL;
	struct s_env env;

	CU_ASSERT_EQUAL(rr_supervisor_resolve("/bin/sh", &path), 0);
	CU_ASSERT_STRING_EQUAL(path ? path : "", "/bin/sh");
	free(path);
	path = NULL;

	/* A relative path is not searched for in PATH, even when PATH has the command. */
	s_mkdtemp(dir, sizeof(dir));
	s_make_cmd(dir, "rr-cmd", 1);
	s_env_save(&env);
	CU_ASSERT_EQUAL_FATAL(chdir(dir), 0);
	CU_ASSERT_EQUAL(rr_supervisor_resolve("./rr-cmd", &path), 0);
	CU_ASSERT_STRING_EQUAL(path ? path : "", "./rr-cmd");
	free(path);
	path = NULL;
	setenv("PATH", dir, 1);
	CU_ASSERT_EQUAL(rr_supervisor_resolve("sub/rr-cmd", &path), RR_ENOENT);
	s_env_restore(&env);
	s_rm_rf(dir);
}

/* ---- spawn ------------------------------------------------------------------------ */

static void test_spawn_passes_exit_code_7(void)
{
	int st = s_run_sh("exit 7");

	CU_ASSERT(WIFEXITED(st));
	CU_ASSERT_EQUAL(rr_exit_code_from_status(st), 7);
}

static void test_spawn_child_killed_by_sigkill_exits_137(void)
{
	int st = s_run_sh("kill -9 $$");

	CU_ASSERT(WIFSIGNALED(st));
	CU_ASSERT_EQUAL(rr_exit_code_from_status(st), 137);
}

static void test_spawn_passes_argv_and_envp(void)
{
	char *argv[] = { "/bin/sh", "-c", "test \"$RR_X\" = hello && test \"$1\" = 'a b' && "
					  "test -z \"$HOME\"",
			 "sh", "a b", NULL };
	char *envp[] = { "RR_X=hello", "PATH=/usr/bin:/bin", NULL };
	pid_t pid = -1;
	int exec_errno = -1;

	CU_ASSERT_EQUAL_FATAL(rr_supervisor_spawn("/bin/sh", argv, envp, &pid, &exec_errno), 0);
	CU_ASSERT_EQUAL(exec_errno, 0);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(s_waitpid(pid)), 0);
}

/* After an exec failure the child must already be reaped: the test process has no
 * other children at that point. */
static void s_assert_no_children(void)
{
	errno = 0;
	CU_ASSERT_EQUAL(waitpid(-1, NULL, WNOHANG), -1);
	CU_ASSERT_EQUAL(errno, ECHILD);
}

static void test_spawn_missing_path_reports_enoent(void)
{
	char *argv[] = { "rr-missing", NULL };
	pid_t pid = 1234;
	int exec_errno = 0;

	CU_ASSERT_EQUAL(rr_supervisor_spawn("/nonexistent-rr-dir/rr-missing", argv, environ,
					    &pid, &exec_errno),
			RR_ENOENT);
	CU_ASSERT_EQUAL(exec_errno, ENOENT);
	CU_ASSERT_EQUAL(pid, -1);
	s_assert_no_children();
}

static void test_spawn_directory_reports_eacces(void)
{
	char dir[64];
	char *argv[] = { "dir", NULL };
	pid_t pid = -1;
	int exec_errno = 0;

	s_mkdtemp(dir, sizeof(dir));
	CU_ASSERT_EQUAL(rr_supervisor_spawn(dir, argv, environ, &pid, &exec_errno), RR_EACCES);
	CU_ASSERT_EQUAL(exec_errno, EACCES);
	s_assert_no_children();
	s_rm_rf(dir);
}

static void test_spawn_garbage_executable_reports_enoexec_as_eio(void)
{
	/* No "#!" and no ELF magic: execve (unlike execvp) does not fall back to sh. */
	static const unsigned char garbage[] = { 0x7f, 'X', 'Y', 0x00, 0x01, 0xfe, 0xff, 'z' };
	char dir[64], file[128];
	char *argv[] = { "garbage", NULL };
	pid_t pid = -1;
	int exec_errno = 0;

	s_mkdtemp(dir, sizeof(dir));
	snprintf(file, sizeof(file), "%s/garbage", dir);
	CU_ASSERT_EQUAL_FATAL(s_write_file(file, garbage, sizeof(garbage), 0755), 0);

	CU_ASSERT_EQUAL(rr_supervisor_spawn(file, argv, environ, &pid, &exec_errno), RR_EIO);
	CU_ASSERT_EQUAL(exec_errno, ENOEXEC);
	s_assert_no_children();
	s_rm_rf(dir);
}

static void test_spawn_rejects_missing_arguments(void)
{
	char *argv[] = { "sh", NULL };
	char *no_args[] = { NULL };
	pid_t pid;

	CU_ASSERT_EQUAL(rr_supervisor_spawn(NULL, argv, environ, &pid, NULL), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_supervisor_spawn("/bin/sh", NULL, environ, &pid, NULL), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_supervisor_spawn("/bin/sh", no_args, environ, &pid, NULL), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_supervisor_spawn("/bin/sh", argv, environ, NULL, NULL), RR_EINVAL);
}

static void s_noop_handler(int sig)
{
	(void)sig;
}

/* The agent blocks every signal (signalfd) and may ignore some; none of it may leak. */
static void test_spawn_child_starts_with_empty_mask_and_default_dispositions(void)
{
	char *argv[] = { "sleep", "1000", NULL };
	struct sigaction ign = { 0 }, handled = { 0 }, old_pipe, old_int, old_usr2;
	sigset_t block, old_mask;
	uint64_t blk = 1, ign_mask = 1, cgt = 1;
	pid_t pid = -1;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old_mask);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &old_pipe);
	sigaction(SIGINT, &ign, &old_int);
	handled.sa_handler = s_noop_handler;
	sigaction(SIGUSR2, &handled, &old_usr2);

	CU_ASSERT_EQUAL(s_spawn_argv(argv, &pid), 0);

	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGUSR2, &old_usr2, NULL);
	if (pid <= 0)
		return;

	/* spawn returns only once execve succeeded, and sleep changes none of these. */
	CU_ASSERT_EQUAL(s_status_mask(pid, "SigBlk:", &blk), 0);
	CU_ASSERT_EQUAL(s_status_mask(pid, "SigIgn:", &ign_mask), 0);
	CU_ASSERT_EQUAL(s_status_mask(pid, "SigCgt:", &cgt), 0);
	CU_ASSERT_EQUAL(blk, 0);
	CU_ASSERT_EQUAL(ign_mask, 0);
	CU_ASSERT_EQUAL(cgt, 0);
	s_kill_and_wait(pid);
}

static void test_spawn_leaves_parent_signal_mask_unchanged(void)
{
	char *argv[] = { "sh", "-c", "exit 0", NULL };
	sigset_t block, before, after;
	pid_t pid = -1;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &before);
	sigprocmask(SIG_BLOCK, NULL, &before);

	CU_ASSERT_EQUAL(s_spawn_argv(argv, &pid), 0);
	sigprocmask(SIG_BLOCK, NULL, &after);
	for (int sig = 1; sig < NSIG; sig++) {
		if (sigismember(&before, sig) != sigismember(&after, sig))
			CU_FAIL("spawn changed the caller's signal mask");
	}
	CU_ASSERT(sigismember(&after, SIGUSR1));
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	if (pid > 0)
		s_waitpid(pid);
}

static void test_spawn_child_leads_its_own_process_group(void)
{
	char *argv[] = { "sleep", "1000", NULL };
	pid_t pid = -1;

	CU_ASSERT_EQUAL_FATAL(s_spawn_argv(argv, &pid), 0);
	CU_ASSERT_EQUAL(getpgid(pid), pid);
	CU_ASSERT_NOT_EQUAL(getpgid(pid), getpgrp());
	s_kill_and_wait(pid);
}

/* ---- handlers and targeted signals ------------------------------------------------ */

/* Spawns the Python handler script writing to out (comm renamed when comm != NULL) and
 * waits until its handler is installed. */
static pid_t s_spawn_handler(const char *out, const char *comm)
{
	char ready[256];
	char *argv[] = { S_PYTHON, "-c", (char *)s_handler_py, (char *)out, (char *)comm, NULL };
	pid_t pid = -1;
	int exec_errno;

	if (rr_supervisor_spawn(S_PYTHON, argv, environ, &pid, &exec_errno))
		return -1;
	snprintf(ready, sizeof(ready), "%s.ready", out);
	if (!s_wait_for_file(ready)) {
		s_kill_and_wait(pid);
		return -1;
	}
	return pid;
}

static void test_proc_handles_signal_sees_installed_handler(void)
{
	char dir[64], out[128];
	pid_t pid;

	s_mkdtemp(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	pid = s_spawn_handler(out, NULL);
	CU_ASSERT_FATAL(pid > 0);

	CU_ASSERT_EQUAL(rr_proc_handles_signal(pid, SIGUSR1), 1);
	CU_ASSERT_EQUAL(rr_proc_handles_signal(pid, SIGUSR2), 0);
	CU_ASSERT_EQUAL(rr_proc_handles_signal(pid, 64), 0);
	CU_ASSERT_EQUAL(rr_proc_handles_signal(pid, 0), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_proc_handles_signal(pid, 65), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_proc_handles_signal(0, SIGUSR1), RR_EINVAL);
	s_kill_and_wait(pid);
	s_rm_rf(dir);
}

static void test_proc_handles_signal_treats_zombie_as_not_handling(void)
{
	/* os._exit skips Python's finalizer, which would restore SIG_DFL; the zombie keeps
	 * the handler bit in SigCgt until it is reaped. */
	char *argv[] = { S_PYTHON, "-c",
			 "import os, signal\n"
			 "signal.signal(signal.SIGUSR1, lambda s, f: None)\n"
			 "os._exit(0)\n",
			 NULL };
	pid_t pid = -1;
	int exec_errno, i;

	CU_ASSERT_EQUAL_FATAL(rr_supervisor_spawn(S_PYTHON, argv, environ, &pid, &exec_errno), 0);
	for (i = 0; i < S_POLL_TRIES && s_proc_state(pid) != 'Z'; i++)
		s_nap();
	CU_ASSERT_EQUAL(s_proc_state(pid), 'Z');
	CU_ASSERT_EQUAL(rr_proc_handles_signal(pid, SIGUSR1), 0);

	s_waitpid(pid);
	CU_ASSERT_EQUAL(rr_proc_handles_signal(pid, SIGUSR1), RR_ENOENT);
}

static void test_signal_tree_signals_only_processes_with_handler(void)
{
	/* One group: a shell wrapper (no handler), two Python workers with a handler (one
	 * with a comm that fools a parser reading up to the first ')'), and a sleep
	 * without one. Outside the group: another worker with a handler. */
	static const char launcher[] =
		"\"$0\" -c \"$1\" \"$2/a\" & "
		"\"$0\" -c \"$1\" \"$2/b\" 'x) S 1 1 (y' & "
		"sleep 1000 & echo $! > \"$2/sleep.tmp\" && mv \"$2/sleep.tmp\" \"$2/sleep.pid\"; "
		"wait";
	char dir[64], a[128], b[128], c[128], path[160], pidbuf[32];
	char *argv[] = { "/bin/sh", "-c", (char *)launcher, S_PYTHON, (char *)s_handler_py, dir,
			 NULL };
	pid_t leader = -1, outsider = -1, sleeper = -1;
	int exec_errno;

	s_mkdtemp(dir, sizeof(dir));
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(c, sizeof(c), "%s/c", dir);

	outsider = s_spawn_handler(c, NULL);
	CU_ASSERT(outsider > 0);
	CU_ASSERT_EQUAL(rr_supervisor_spawn("/bin/sh", argv, environ, &leader, &exec_errno), 0);
	if (leader <= 0 || outsider <= 0)
		goto out;

	snprintf(path, sizeof(path), "%s.ready", a);
	CU_ASSERT(s_wait_for_file(path));
	snprintf(path, sizeof(path), "%s.ready", b);
	CU_ASSERT(s_wait_for_file(path));
	snprintf(path, sizeof(path), "%s/sleep.pid", dir);
	CU_ASSERT(s_wait_for_file(path));
	if (s_read_small(path, pidbuf, sizeof(pidbuf)) > 0)
		sleeper = (pid_t)strtol(pidbuf, NULL, 10);
	CU_ASSERT(sleeper > 0);
	if (sleeper <= 0)
		goto out;

	CU_ASSERT_EQUAL(rr_supervisor_signal_tree(leader, SIGUSR1, 0), 2);

	CU_ASSERT(s_wait_for_content(a, "got"));
	CU_ASSERT(s_wait_for_content(b, "got"));
	/* Both handlers ran, so the signals were delivered; the others have none pending. */
	CU_ASSERT(s_alive_without_pending(leader, SIGUSR1));
	CU_ASSERT(s_alive_without_pending(sleeper, SIGUSR1));
	CU_ASSERT(s_alive_without_pending(outsider, SIGUSR1));
	CU_ASSERT_FALSE(s_exists(c));

out:
	/* The whole group; the leader and the sleep by pid too, so that a broken
	 * process-group setup fails this test instead of hanging it. */
	if (leader > 0)
		kill(-leader, SIGKILL);
	if (sleeper > 0)
		kill(sleeper, SIGKILL);
	s_kill_and_wait(leader);
	s_kill_and_wait(outsider);
	s_rm_rf(dir);
}

static void test_signal_tree_returns_zero_while_no_handler_is_installed(void)
{
	char *argv[] = { "sleep", "1000", NULL };
	pid_t pid = -1;

	CU_ASSERT_EQUAL_FATAL(s_spawn_argv(argv, &pid), 0);
	CU_ASSERT_EQUAL(rr_supervisor_signal_tree(pid, SIGUSR1, 0), 0);
	CU_ASSERT(s_alive_without_pending(pid, SIGUSR1));
	CU_ASSERT_EQUAL(rr_supervisor_signal_tree(pid, 0, 0), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_supervisor_signal_tree(0, SIGUSR1, 0), RR_EINVAL);
	s_kill_and_wait(pid);
}

/* ---- the process tree: workers in sessions of their own -------------------------- */

/* A launcher the way torchrun >= 2.2 starts workers (torch/distributed/elastic/
 * multiprocessing/subprocess_handler/subprocess_handler.py: Popen(..., start_new_session=
 * True)): two workers with a SIGUSR1 handler and a sleep without one, each in a new
 * session; the launcher itself installs no SIGUSR1 handler. It writes the three pids to
 * argv[3]/pids once they are started. */
static const char s_launcher_py[] =
	"import os, subprocess, sys, time\n"
	"py, code, d = sys.argv[1], sys.argv[2], sys.argv[3]\n"
	"ws = [subprocess.Popen([py, '-c', code, d + '/w%d' % i], start_new_session=True)\n"
	"      for i in range(2)]\n"
	"s = subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
	"with open(d + '/pids.tmp', 'w') as f:\n"
	"    f.write(' '.join(str(p.pid) for p in ws + [s]))\n"
	"os.rename(d + '/pids.tmp', d + '/pids')\n"
	"while True:\n"
	"    time.sleep(3600)\n";

struct s_tree {
	char dir[64];
	pid_t launcher, w[2], sleeper;
};

/* Starts the launcher and waits until both workers have their handler. 0 on success. */
static int s_tree_start(struct s_tree *t)
{
	char path[160], buf[96];
	char *argv[] = { S_PYTHON, "-c", (char *)s_launcher_py, S_PYTHON, (char *)s_handler_py,
			 t->dir, NULL };
	int exec_errno;
	char *p;

	memset(t, 0, sizeof(*t));
	s_mkdtemp(t->dir, sizeof(t->dir));
	if (rr_supervisor_spawn(S_PYTHON, argv, environ, &t->launcher, &exec_errno))
		return -1;
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/w%d.ready", t->dir, i);
		if (!s_wait_for_file(path))
			return -1;
	}
	snprintf(path, sizeof(path), "%s/pids", t->dir);
	if (!s_wait_for_file(path) || s_read_small(path, buf, sizeof(buf)) <= 0)
		return -1;
	t->w[0] = (pid_t)strtol(buf, &p, 10);
	t->w[1] = (pid_t)strtol(p, &p, 10);
	t->sleeper = (pid_t)strtol(p, &p, 10);
	return (t->w[0] > 0 && t->w[1] > 0 && t->sleeper > 0) ? 0 : -1;
}

static void s_tree_stop(struct s_tree *t)
{
	for (int i = 0; i < 2; i++)
		if (t->w[i] > 0)
			kill(t->w[i], SIGKILL);
	if (t->sleeper > 0)
		kill(t->sleeper, SIGKILL);
	s_kill_and_wait(t->launcher);
	s_rm_rf(t->dir);
}

static int s_pid_in(const pid_t *list, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == pid)
			return 1;
	return 0;
}

static void test_descendants_lists_workers_in_new_sessions_both_ways(void)
{
	static const unsigned modes[] = { 0, RR_TREE_SCAN_PROC };
	struct s_tree t;
	pid_t list[64];
	size_t n = 0;

	CU_ASSERT_FATAL(s_tree_start(&t) == 0 || (s_tree_stop(&t), 0));
	/* the premise: the workers really left the launcher's session and group */
	CU_ASSERT_NOT_EQUAL(getsid(t.w[0]), getsid(t.launcher));
	CU_ASSERT_NOT_EQUAL(getpgid(t.w[1]), t.launcher);
	for (size_t m = 0; m < 2; m++) {
		CU_ASSERT_EQUAL(rr_supervisor_descendants(t.launcher, modes[m], list, 64, &n), 0);
		CU_ASSERT_EQUAL(n, 4);
		CU_ASSERT_EQUAL(list[0], t.launcher);
		CU_ASSERT(s_pid_in(list, n, t.w[0]));
		CU_ASSERT(s_pid_in(list, n, t.w[1]));
		CU_ASSERT(s_pid_in(list, n, t.sleeper));
		CU_ASSERT_FALSE(s_pid_in(list, n, getpid()));
	}
	/* the list is bounded by the caller's room */
	CU_ASSERT_EQUAL(rr_supervisor_descendants(t.launcher, 0, list, 2, &n), 0);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(rr_supervisor_descendants(0, 0, list, 64, &n), RR_EINVAL);
	s_tree_stop(&t);
}

static void test_signal_tree_reaches_workers_in_new_sessions_not_the_launcher(void)
{
	struct s_tree t;
	char path[160];

	CU_ASSERT_FATAL(s_tree_start(&t) == 0 || (s_tree_stop(&t), 0));
	CU_ASSERT_EQUAL(rr_supervisor_signal_tree(t.launcher, SIGUSR1, 0), 2);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/w%d", t.dir, i);
		CU_ASSERT(s_wait_for_content(path, "got"));
	}
	CU_ASSERT(s_alive_without_pending(t.launcher, SIGUSR1));
	CU_ASSERT(s_alive_without_pending(t.sleeper, SIGUSR1));
	s_tree_stop(&t);
}

static void test_signal_tree_with_proc_scan_reaches_the_same_workers(void)
{
	struct s_tree t;
	char path[160];

	CU_ASSERT_FATAL(s_tree_start(&t) == 0 || (s_tree_stop(&t), 0));
	CU_ASSERT_EQUAL(rr_supervisor_signal_tree(t.launcher, SIGUSR1, RR_TREE_SCAN_PROC), 2);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/w%d", t.dir, i);
		CU_ASSERT(s_wait_for_content(path, "got"));
	}
	CU_ASSERT(s_alive_without_pending(t.launcher, SIGUSR1));
	CU_ASSERT(s_alive_without_pending(t.sleeper, SIGUSR1));
	s_tree_stop(&t);
}

/* Gone or a zombie: killed by the signal (nobody reaps the workers but the launcher). */
static int s_wait_dead(pid_t pid)
{
	for (int i = 0; i < S_POLL_TRIES; i++) {
		char st = s_proc_state(pid);
		if (st == 0 || st == 'Z' || st == 'X')
			return 1;
		s_nap();
	}
	return 0;
}

static void test_signal_tree_all_terminates_workers_in_new_sessions(void)
{
	struct s_tree t;
	int status = 0;

	CU_ASSERT_FATAL(s_tree_start(&t) == 0 || (s_tree_stop(&t), 0));
	/* group + the three processes outside it */
	CU_ASSERT_EQUAL(rr_supervisor_signal_tree(t.launcher, SIGTERM, RR_TREE_ALL), 4);
	CU_ASSERT(s_wait_dead(t.w[0]));
	CU_ASSERT(s_wait_dead(t.w[1]));
	CU_ASSERT(s_wait_dead(t.sleeper));
	CU_ASSERT_EQUAL(waitpid(t.launcher, &status, 0), t.launcher);
	CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	t.launcher = -1;
	s_tree_stop(&t);
}

static void test_signal_tree_of_a_gone_process_signals_nobody(void)
{
	char *argv[] = { "true", NULL };
	pid_t pid = -1;

	CU_ASSERT_EQUAL_FATAL(s_spawn_argv(argv, &pid), 0);
	s_waitpid(pid);
	CU_ASSERT_EQUAL(rr_supervisor_signal_tree(pid, SIGUSR1, 0), 0);
	CU_ASSERT_EQUAL(rr_supervisor_signal_tree(pid, 0, 0), RR_EINVAL);
}

/* ---- reaping ---------------------------------------------------------------------- */

/* Polls rr_supervisor_reap until child is among the reaped; 1 when it was. */
static int s_reap_until(pid_t child, int *status, int *reaped)
{
	for (int i = 0; i < S_POLL_TRIES; i++) {
		int exited = -1;
		*reaped += rr_supervisor_reap(child, &exited, status);
		if (exited == 1)
			return 1;
		CU_ASSERT_EQUAL(exited, 0);
		s_nap();
	}
	return 0;
}

static void test_reap_returns_child_status(void)
{
	char *argv[] = { "sh", "-c", "exit 3", NULL };
	pid_t pid = -1;
	int st = -1, reaped = 0;

	CU_ASSERT_EQUAL_FATAL(s_spawn_argv(argv, &pid), 0);
	CU_ASSERT(s_reap_until(pid, &st, &reaped));
	CU_ASSERT_EQUAL(reaped, 1);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(st), 3);
	s_assert_no_children();
}

/* A stopped trainer is still running (WUNTRACED reports its stop, once): not exited, not
 * reaped; once continued, its exit is reported as usual. */
static void test_reap_takes_a_stopped_trainer_for_not_exited(void)
{
	char *argv[] = { "sh", "-c", "kill -STOP $$; exit 4", NULL };
	pid_t pid = -1;
	int st = -1, reaped = 0, exited = -1, i;

	CU_ASSERT_EQUAL_FATAL(s_spawn_argv(argv, &pid), 0);
	for (i = 0; i < S_POLL_TRIES && s_proc_state(pid) != 'T'; i++)
		s_nap();
	CU_ASSERT_EQUAL(s_proc_state(pid), 'T');
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(rr_supervisor_reap(pid, &exited, &st), 0);
		CU_ASSERT_EQUAL(exited, 0);
	}
	CU_ASSERT_EQUAL(s_proc_state(pid), 'T');
	CU_ASSERT_EQUAL(kill(pid, SIGCONT), 0);
	CU_ASSERT(s_reap_until(pid, &st, &reaped));
	CU_ASSERT_EQUAL(reaped, 1);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(st), 4);
	s_assert_no_children();
}

static void test_reap_with_no_children_returns_zero(void)
{
	int exited = -1, st = 12345;

	CU_ASSERT_EQUAL(rr_supervisor_reap(1, &exited, &st), 0);
	CU_ASSERT_EQUAL(exited, 0);
	CU_ASSERT_EQUAL(st, 12345);
}

static void test_reap_collects_orphaned_grandchild_as_subreaper(void)
{
	char dir[64], pidfile[128], pidbuf[32], script[512];
	pid_t child = -1, grandchild = -1;
	int st = -1, reaped = 0;

	s_mkdtemp(dir, sizeof(dir));
	snprintf(pidfile, sizeof(pidfile), "%s/gc.pid", dir);
	snprintf(script, sizeof(script), "sleep 1000 & echo $! > '%s'; exit 5", pidfile);
	char *argv[] = { "sh", "-c", script, NULL };

	CU_ASSERT_EQUAL_FATAL(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(s_spawn_argv(argv, &child), 0);
	if (child <= 0)
		goto out;
	CU_ASSERT(s_reap_until(child, &st, &reaped));
	CU_ASSERT_EQUAL(rr_exit_code_from_status(st), 5);

	/* The shell wrote the pid before exiting, and its orphan is ours now. */
	if (s_read_small(pidfile, pidbuf, sizeof(pidbuf)) > 0)
		grandchild = (pid_t)strtol(pidbuf, NULL, 10);
	CU_ASSERT(grandchild > 0);
	if (grandchild <= 0)
		goto out;
	CU_ASSERT_EQUAL(kill(grandchild, SIGKILL), 0);
	reaped = 0;
	CU_ASSERT(s_reap_until(grandchild, &st, &reaped));
	CU_ASSERT_EQUAL(reaped, 1);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(st), 137);
	s_assert_no_children();
out:
	prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
	s_rm_rf(dir);
}

/* ---- isolation of the trainer ----------------------------------------------------- */

static void test_spawn_child_inherits_no_fd_but_stdio(void)
{
	int sv[2] = { -1, -1 }, nul, high;
	char script[256];

	/* Neither opened with O_CLOEXEC: what a library (curl's socketpair) may leave. */
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	nul = open("/dev/null", O_RDONLY);
	CU_ASSERT_FATAL(nul >= 0);
	high = dup2(nul, 900);
	CU_ASSERT_EQUAL_FATAL(high, 900);
	snprintf(script, sizeof(script),
		 "test -e /proc/self/fd/0 && test -e /proc/self/fd/2 && "
		 "! test -e /proc/self/fd/%d && ! test -e /proc/self/fd/%d && "
		 "! test -e /proc/self/fd/%d && ! test -e /proc/self/fd/%d",
		 sv[0], sv[1], nul, high);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(s_run_sh(script)), 0);
	close(sv[0]);
	close(sv[1]);
	close(nul);
	close(high);
}

static void test_spawn_child_has_sigterm_as_parent_death_signal(void)
{
	/* PR_GET_PDEATHSIG (2) stores the signal; the exit code reports it. */
	char *argv[] = { S_PYTHON, "-c",
			 "import ctypes, sys\n"
			 "v = ctypes.c_int(-1)\n"
			 "ctypes.CDLL(None).prctl(2, ctypes.byref(v), 0, 0, 0)\n"
			 "sys.exit(v.value)\n",
			 NULL };
	pid_t pid = -1;
	int exec_errno = -1;

	CU_ASSERT_EQUAL_FATAL(rr_supervisor_spawn(S_PYTHON, argv, environ, &pid, &exec_errno), 0);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(s_waitpid(pid)), SIGTERM);
}

static void test_spawn_child_dies_with_its_parent(void)
{
	int fds[2], st = -1, reaped = 0;
	pid_t mid, child = -1;

	CU_ASSERT_EQUAL_FATAL(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
	mid = fork();
	CU_ASSERT_FATAL(mid >= 0);
	if (mid == 0) {
		/* A stand-in agent: spawns a long sleep, reports its pid, dies at once. */
		char *argv[] = { "/bin/sleep", "1000", NULL };
		pid_t c = -1;
		int e;
		close(fds[0]);
		if (rr_supervisor_spawn("/bin/sleep", argv, environ, &c, &e) != 0)
			_exit(1);
		if (write(fds[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	CU_ASSERT_EQUAL(read(fds[0], &child, sizeof(child)), (ssize_t)sizeof(child));
	close(fds[0]);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(s_waitpid(mid)), 0);
	CU_ASSERT(child > 0);
	if (child > 0) {
		/* Orphaned to us (the subreaper): it must end by the death signal. */
		CU_ASSERT(s_reap_until(child, &st, &reaped));
		CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
		if (!WIFSIGNALED(st))
			s_kill_and_wait(child);
	}
	prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
}

static void test_protect_secrets_drops_dumpable_and_core_but_child_gets_them_back(void)
{
	struct rlimit orig, now, want;
	char script[128];

	CU_ASSERT_EQUAL_FATAL(getrlimit(RLIMIT_CORE, &orig), 0);
	want = orig;
	want.rlim_cur = orig.rlim_max == RLIM_INFINITY || orig.rlim_max >= (1 << 20) ?
				(1 << 20) : orig.rlim_max;
	CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_CORE, &want), 0);

	CU_ASSERT_EQUAL(rr_supervisor_protect_secrets(), 0);
	CU_ASSERT_EQUAL(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(getrlimit(RLIMIT_CORE, &now), 0);
	CU_ASSERT_EQUAL(now.rlim_cur, 0);
	CU_ASSERT_EQUAL(now.rlim_max, orig.rlim_max);

	snprintf(script, sizeof(script), "grep -q '^Max core file size  *%llu ' /proc/self/limits",
		 (unsigned long long)want.rlim_cur);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(s_run_sh(script)), 0);
	/* execve made the (not setuid) child dumpable again: its own core dumps work. */
	{
		char *argv[] = { S_PYTHON, "-c",
				 "import ctypes, sys\n"
				 "sys.exit(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))\n",
				 NULL };
		pid_t pid = -1;
		int e;
		CU_ASSERT_EQUAL_FATAL(rr_supervisor_spawn(S_PYTHON, argv, environ, &pid, &e), 0);
		CU_ASSERT_EQUAL(rr_exit_code_from_status(s_waitpid(pid)), 1);
	}
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	setrlimit(RLIMIT_CORE, &orig);
}

/* Reads a pid written by a script; -1 when it never came. */
static pid_t s_read_pid(const char *path)
{
	char buf[32];

	if (!s_wait_for_file(path))
		return -1;
	for (int i = 0; i < S_POLL_TRIES; i++) {
		if (s_read_small(path, buf, sizeof(buf)) > 0 && strchr(buf, '\n'))
			return (pid_t)strtol(buf, NULL, 10);
		s_nap();
	}
	return -1;
}

static void test_signal_descendants_reaches_those_that_left_the_group(void)
{
	char dir[64], f1[128], f2[128], script[512];
	pid_t sh = -1, in_group, in_session;
	int st = -1, reaped = 0;

	s_mkdtemp(dir, sizeof(dir));
	snprintf(f1, sizeof(f1), "%s/group.pid", dir);
	snprintf(f2, sizeof(f2), "%s/session.pid", dir);
	snprintf(script, sizeof(script),
		 "sleep 1000 & echo $! > '%s'; setsid sleep 1001 & echo $! > '%s'; wait", f1, f2);
	char *argv[] = { "sh", "-c", script, NULL };

	CU_ASSERT_EQUAL_FATAL(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(s_spawn_argv(argv, &sh), 0);
	in_group = s_read_pid(f1);
	in_session = s_read_pid(f2);
	CU_ASSERT(in_group > 0 && in_session > 0);
	/* The session leader is in another group: only the walk of the tree finds it. Its pid
	 * is written when it is forked, maybe before setsid() has run in it: wait for that. */
	for (int i = 0; i < S_POLL_TRIES && getpgid(in_session) == sh; i++)
		s_nap();
	CU_ASSERT_NOT_EQUAL(getpgid(in_session), sh);
	CU_ASSERT_EQUAL(rr_supervisor_signal_descendants(sh, 0), 3);
	CU_ASSERT_EQUAL(rr_supervisor_signal_descendants(sh, SIGKILL), 3);
	CU_ASSERT(s_reap_until(sh, &st, &reaped));
	for (int i = 0; i < S_POLL_TRIES && rr_supervisor_signal_descendants(sh, 0) > 0; i++) {
		rr_supervisor_reap(0, NULL, NULL);
		s_nap();
	}
	rr_supervisor_reap(0, NULL, NULL);
	CU_ASSERT_EQUAL(rr_supervisor_signal_descendants(sh, 0), 0);
	CU_ASSERT_EQUAL(s_proc_state(in_group), 0);
	CU_ASSERT_EQUAL(s_proc_state(in_session), 0);
	s_assert_no_children();
	prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
	s_rm_rf(dir);
}

/* /proc/PID/stat as procfs.c reads it: a comm made to look like more fields (it may hold
 * spaces and ')') does not shift them; a process that is gone is RR_ENOENT. */
static void test_proc_stat_survives_a_comm_that_looks_like_fields(void)
{
	struct rr_proc_stat st, self;
	struct rr_proc_stat *table = NULL;
	struct rr_buf b;
	size_t n = 0, found = 0;
	int fds[2], status;
	char c;
	pid_t pid;

	CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_NAME, "x) Z 1 1 (y", 0, 0, 0);
		if (write(fds[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	CU_ASSERT_EQUAL(read(fds[0], &c, 1), 1);
	rr_buf_init(&b, RR_PROC_STAT_MAX);
	CU_ASSERT_EQUAL(rr_proc_stat_read(pid, &b, &st), 0);
	CU_ASSERT_EQUAL(st.pid, pid);
	CU_ASSERT_EQUAL(st.ppid, getpid());
	CU_ASSERT_EQUAL(st.pgrp, getpgrp());
	CU_ASSERT(st.state == 'S' || st.state == 'R');
	CU_ASSERT_EQUAL(rr_proc_stat_read(getpid(), &b, &self), 0);
	CU_ASSERT(st.start >= self.start && self.start > 0);
	CU_ASSERT_EQUAL(rr_proc_table_load(&table, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (table[i].pid == pid && table[i].ppid == getpid() && table[i].start == st.start)
			found++;
	CU_ASSERT_EQUAL(found, 1);
	free(table);
	kill(pid, SIGKILL);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT_EQUAL(rr_proc_stat_read(pid, &b, &st), RR_ENOENT);
	rr_buf_free(&b);
	close(fds[0]);
	close(fds[1]);
}

/* ---- exit status and signal names ------------------------------------------------- */

static void test_exit_code_from_status_maps_exit_and_signal(void)
{
	CU_ASSERT_EQUAL(rr_exit_code_from_status(W_EXITCODE(0, 0)), 0);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(W_EXITCODE(7, 0)), 7);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(W_EXITCODE(255, 0)), 255);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(W_EXITCODE(0, SIGTERM)), 143);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(W_EXITCODE(0, SIGKILL)), 137);
	CU_ASSERT_EQUAL(rr_exit_code_from_status(W_STOPCODE(SIGTSTP)), 128 + SIGTSTP);
}

static void test_signal_from_name_accepts_bare_prefixed_lowercase_and_numeric(void)
{
	static const char *const names[] = { "USR1", "SIGUSR1", "usr1", "sigusr1", "SigUsr1",
					     "10" };
	int sig;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		sig = -1;
		CU_ASSERT_EQUAL(rr_signal_from_name(names[i], &sig), 0);
		CU_ASSERT_EQUAL(sig, SIGUSR1);
	}
	CU_ASSERT_EQUAL(rr_signal_from_name("TERM", &sig), 0);
	CU_ASSERT_EQUAL(sig, SIGTERM);
	CU_ASSERT_EQUAL(rr_signal_from_name("1", &sig), 0);
	CU_ASSERT_EQUAL(sig, 1);
	CU_ASSERT_EQUAL(rr_signal_from_name("64", &sig), 0);
	CU_ASSERT_EQUAL(sig, 64);
}

static void test_signal_from_name_rejects_unknown_and_out_of_range(void)
{
	static const char *const bad[] = { "",	 "SIG",	 "FOO",	  "SIGFOO", "USR3", "0",
					   "65", "-1",	 "+10",	  " 10",    "10 ",  "10x",
					   "0x0a", "USR1 ", "SIGSIGUSR1",
					   "99999999999999999999999" };
	int sig = 42;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL(rr_signal_from_name(bad[i], &sig), RR_EINVAL);
	}
	CU_ASSERT_EQUAL(sig, 42);
	CU_ASSERT_EQUAL(rr_signal_from_name(NULL, &sig), RR_EINVAL);
}

/* A real-time signal has no name: the trainer's RESUME_RUN_SIGNAL says its number, which
 * rr_signal_from_name takes back. */
static void test_signal_name_of_a_real_time_signal_is_its_number(void)
{
	char want[8];
	int sig = -1;

	snprintf(want, sizeof(want), "%d", SIGRTMIN + 2);
	CU_ASSERT_STRING_EQUAL(rr_signal_name(SIGRTMIN + 2), want);
	CU_ASSERT_EQUAL(rr_signal_from_name(rr_signal_name(SIGRTMIN + 2), &sig), 0);
	CU_ASSERT_EQUAL(sig, SIGRTMIN + 2);
	snprintf(want, sizeof(want), "%d", SIGRTMAX);
	CU_ASSERT_STRING_EQUAL(rr_signal_name(SIGRTMAX), want);
	CU_ASSERT_STRING_EQUAL(rr_signal_name(32), "?"); /* glibc's own */
}

static void test_signal_name_round_trips_every_listed_signal(void)
{
	static const char *const names[] = { "HUP",  "INT",  "QUIT", "ILL",  "TRAP",   "ABRT",
					     "BUS",  "FPE",  "KILL", "USR1", "SEGV",   "USR2",
					     "PIPE", "ALRM", "TERM", "CHLD", "CONT",   "STOP",
					     "TSTP", "TTIN", "TTOU", "URG",  "XCPU",   "XFSZ",
					     "VTALRM", "PROF", "WINCH", "IO", "PWR",   "SYS" };
	char prefixed[32];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int sig = -1, sig2 = -1;
		CU_ASSERT_EQUAL(rr_signal_from_name(names[i], &sig), 0);
		CU_ASSERT(sig >= 1 && sig <= 64);
		CU_ASSERT_STRING_EQUAL(rr_signal_name(sig), names[i]);
		snprintf(prefixed, sizeof(prefixed), "SIG%s", names[i]);
		CU_ASSERT_EQUAL(rr_signal_from_name(prefixed, &sig2), 0);
		CU_ASSERT_EQUAL(sig2, sig);
	}
	CU_ASSERT_STRING_EQUAL(rr_signal_name(SIGUSR1), "USR1");
	CU_ASSERT_STRING_EQUAL(rr_signal_name(SIGKILL), "KILL");
}

static void test_signal_name_of_unknown_is_question_mark(void)
{
	CU_ASSERT_STRING_EQUAL(rr_signal_name(0), "?");
	CU_ASSERT_STRING_EQUAL(rr_signal_name(-1), "?");
	CU_ASSERT_STRING_EQUAL(rr_signal_name(65), "?");
}

#define S_TEST(fn) { #fn, fn }

static CU_TestInfo s_tests[] = {
	{ "proc_stat_survives_a_comm_that_looks_like_fields",
	  test_proc_stat_survives_a_comm_that_looks_like_fields },
	S_TEST(test_resolve_missing_command_is_enoent),
	S_TEST(test_resolve_non_executable_file_is_eacces),
	S_TEST(test_resolve_directory_is_eacces),
	S_TEST(test_resolve_prefers_later_executable_over_earlier_non_executable),
	S_TEST(test_resolve_takes_first_executable_match_in_path_order),
	S_TEST(test_resolve_empty_path_entry_means_current_directory),
	S_TEST(test_resolve_uses_default_path_when_unset),
	S_TEST(test_resolve_uses_command_with_slash_as_is),
	S_TEST(test_spawn_passes_exit_code_7),
	S_TEST(test_spawn_child_killed_by_sigkill_exits_137),
	S_TEST(test_spawn_passes_argv_and_envp),
	S_TEST(test_spawn_missing_path_reports_enoent),
	S_TEST(test_spawn_directory_reports_eacces),
	S_TEST(test_spawn_garbage_executable_reports_enoexec_as_eio),
	S_TEST(test_spawn_rejects_missing_arguments),
	S_TEST(test_spawn_child_starts_with_empty_mask_and_default_dispositions),
	S_TEST(test_spawn_leaves_parent_signal_mask_unchanged),
	S_TEST(test_spawn_child_leads_its_own_process_group),
	S_TEST(test_proc_handles_signal_sees_installed_handler),
	S_TEST(test_descendants_lists_workers_in_new_sessions_both_ways),
	S_TEST(test_signal_tree_reaches_workers_in_new_sessions_not_the_launcher),
	S_TEST(test_signal_tree_with_proc_scan_reaches_the_same_workers),
	S_TEST(test_signal_tree_all_terminates_workers_in_new_sessions),
	S_TEST(test_signal_tree_of_a_gone_process_signals_nobody),
	S_TEST(test_proc_handles_signal_treats_zombie_as_not_handling),
	S_TEST(test_signal_tree_signals_only_processes_with_handler),
	S_TEST(test_signal_tree_returns_zero_while_no_handler_is_installed),
	S_TEST(test_reap_returns_child_status),
	S_TEST(test_reap_takes_a_stopped_trainer_for_not_exited),
	S_TEST(test_reap_with_no_children_returns_zero),
	S_TEST(test_reap_collects_orphaned_grandchild_as_subreaper),
	S_TEST(test_spawn_child_inherits_no_fd_but_stdio),
	S_TEST(test_spawn_child_has_sigterm_as_parent_death_signal),
	S_TEST(test_spawn_child_dies_with_its_parent),
	S_TEST(test_protect_secrets_drops_dumpable_and_core_but_child_gets_them_back),
	S_TEST(test_signal_descendants_reaches_those_that_left_the_group),
	S_TEST(test_exit_code_from_status_maps_exit_and_signal),
	S_TEST(test_signal_from_name_accepts_bare_prefixed_lowercase_and_numeric),
	S_TEST(test_signal_from_name_rejects_unknown_and_out_of_range),
	S_TEST(test_signal_name_round_trips_every_listed_signal),
	S_TEST(test_signal_name_of_a_real_time_signal_is_its_number),
	S_TEST(test_signal_name_of_unknown_is_question_mark),
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("supervisor", s_tests)
