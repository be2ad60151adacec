/* The trainer's supervisor, after tini and git's run-command: spawn with everything built
 * before fork, exec errors sent back through a close-on-exec pipe, reaping of every
 * zombie, and delivery of the checkpoint signal only to processes that handle it. */
#ifndef RR_SUPERVISOR_H
#define RR_SUPERVISOR_H

#include <sys/types.h>

/* Finds cmd the way execvp would (PATH search unless cmd contains '/').
 * Returns 0 and a malloc'd path in *path_out (caller frees); RR_ENOENT when no such
 * command exists; RR_EACCES when it exists but cannot be executed (directory, no x bit). */
int rr_supervisor_resolve(const char *cmd, char **path_out);

/* Forks and execs path with argv/envp. The child gets an empty signal mask, default
 * dispositions for every signal but those the agent was started with ignored (they stay
 * ignored, as tini leaves them; not SIGINT, SIGQUIT, SIGTERM or SIGCHLD), and its own
 * process group (pgid == pid); its
 * stdin/stdout/stderr are the agent's own and every other fd is closed. When stdin is a
 * terminal whose foreground group is the caller's, the child's group becomes its foreground
 * group (as a shell's job; rr_supervisor_reap gives it back), and the caller ignores
 * SIGTTOU meanwhile. It gets SIGTERM
 * when the agent dies (PR_SET_PDEATHSIG; not when the agent is PID 1) and the core-file
 * limit the agent started with. Call from the main thread: the death signal comes when
 * the thread that forked ends. Returns 0 with *pid_out set, or, when exec
 * failed in the child (the child is reaped here), RR_ENOENT / RR_EACCES / RR_EIO with the
 * child's errno in *exec_errno. */
int rr_supervisor_spawn(const char *path, char *const argv[], char *const envp[],
			pid_t *pid_out, int *exec_errno);

/* 1 when process pid has a handler installed for sig (the SigCgt mask in
 * /proc/PID/status), 0 when not, RR_ENOENT when the process is gone. */
int rr_proc_handles_signal(pid_t pid, int sig);

/* A pidfd pins a process so that a pid recycled between a check and the kill cannot be
 * signalled by mistake: the fd (close it), or -1 when unavailable (old kernel, seccomp). */
int rr_proc_pidfd_open(pid_t pid);
/* Sends sig through pidfd when it is >= 0, else with kill(pid). 0 or -1 with errno. */
int rr_proc_send(pid_t pid, int pidfd, int sig);

/* Makes the agent's memory (credentials, tokens) unreachable: not dumpable (no core file,
 * no ptrace or /proc/PID/mem by the same user) and a core-file soft limit of 0. The
 * trainer spawned afterwards gets the original limit back. 0 or the first error. */
int rr_supervisor_protect_secrets(void);

/* Sends sig to every living descendant of the calling process (as a subreaper, the
 * trainer's orphans are among them, whatever group or session they moved to; as PID 1,
 * only those that lead group pgid or carry the trainer's environment, RESUME_RUN_ATTEMPT,
 * and their own descendants: another orphan of the container is not the trainer's), and first
 * to process group pgid as a whole when one of them is in it (pgid <= 0: none). sig 0
 * only counts. Returns how many living descendants there were, or an RR_E... error. */
int rr_supervisor_signal_descendants(pid_t pgid, int sig);

/* rr_supervisor_descendants / rr_supervisor_signal_tree flags. */
#define RR_TREE_SCAN_PROC 1u /* find children by a /proc scan on PPid, not the children files */
#define RR_TREE_ALL 2u       /* signal every process of the tree, not only those with a handler */
/* At most this many processes of a tree are signalled (the trainer counts). */
#define RR_TREE_MAX 4096

/* Lists root and all its descendants, whatever their session or process group, breadth
 * first, root first: children through /proc/PID/task/TID/children where the kernel has
 * them, else (or with RR_TREE_SCAN_PROC) through one scan of /proc for PPid. At most cap
 * pids go to out (a warning is logged when there are more); *n_out says how many.
 * Returns 0, RR_ENOENT when root is gone, RR_EINVAL, RR_ENOMEM or RR_EIO. */
int rr_supervisor_descendants(pid_t root, unsigned flags, pid_t *out, size_t cap,
			      size_t *n_out);

/* Sends sig to root and every descendant (docs/trainer-contract.md, "The trainer contract",
 * "Who gets the signal") that has a handler for it (SigCgt), and to no other; with RR_TREE_ALL
 * (the final SIGTERM) to root's process group (root leads it) and every descendant outside that
 * group, each once. The tree is listed before any signal is sent, so workers of a launcher that
 * dies of it are still reached. Returns how many processes (the group counting as one) were
 * signalled (0 when none has a handler yet, or root is gone) or a negative RR_E… code. */
int rr_supervisor_signal_tree(pid_t root, int sig, unsigned flags);

/* Reaps every exited child without blocking (a PID 1 must reap orphans too). When child
 * is among them, sets *exited = 1 and its wait status in *status, and gives the terminal
 * back to the caller's group if child's group held it; when child died of SIGINT holding
 * it (Ctrl-C), raises SIGINT at the caller, as the keyboard would have. A child stopped by
 * SIGTSTP, SIGTTIN or SIGTTOU stops the caller's group with the same signal (unless the
 * kernel will not stop it: PID 1, an orphaned group) and, once continued, gets the terminal
 * again when the caller's group holds it, and SIGCONT. Returns how many processes were
 * reaped (a stopped child is not). */
int rr_supervisor_reap(pid_t child, int *exited, int *status);

/* A wait status as a shell would report it: the exit code, or 128+N for signal N. */
int rr_exit_code_from_status(int status);

/* Parses a signal name ("USR1", "SIGUSR1", "10") into its number; RR_EINVAL if unknown. */
int rr_signal_from_name(const char *name, int *sig_out);
/* "USR1" for SIGUSR1 (without the SIG prefix), the number ("40") for a real-time signal;
 * "?" when unknown. */
const char *rr_signal_name(int sig);
/* Why sig cannot ask the trainer for a checkpoint (a phrase about it: "it cannot be
 * caught"), or NULL when it can: USR1, USR2, HUP, QUIT, ALRM, PWR, and the real-time
 * signals from SIGRTMIN (the C library keeps those below for itself) to SIGRTMAX. */
const char *rr_signal_unfit_for_checkpoint(int sig);

#endif
