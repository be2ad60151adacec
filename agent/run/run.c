#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cadence.h"
#include "rr/catalog.h"
#include "rr/ckpt_order.h"
#include "rr/clock.h"
#include "rr/cloud.h"
#include "rr/error.h"
#include "rr/format.h"
#include "events.h"
#include "rr/fsutil.h"
#include "history.h"
#include "rr/layout.h"
#include "rr/log.h"
#include "rr/marks.h"
#include "metrics.h"
#include "rr/notice.h"
#include "persister.h"
#include "recovery.h"
#include "fanout.h"
#include "rr/parts.h"
#include "throughput.h"
#include "rr/progress.h"
#include "rr/restore.h"
#include "rr/run.h"
#include "rr/supervisor.h"
#include "rr/version.h"
#include "watcher.h"

#define EXIT_AGENT_ERROR 125
#define NOTICE_FILE_NAME ".resume-run-notice.json"
/* Which run last used the checkpoint directory: its checkpoints are that run's. */
#define OWNER_FILE_NAME ".resume-run-run-id"
#define HANDLER_RETRY_MS 100
#define NOTICE_FILE_POLL_MS 200
#define FANOUT_LAST_LOOK_MS 5000 /* the store's listing of notices as the trainer exits 0 */
#define NOTICE_FILE_SETTLE_MS 500 /* a drill file not a whole JSON notice, before it counts */
#define RESTART_BACKOFF_MAX_MS 30000
#define LEFTOVER_GRACE_MS 2000 /* SIGTERM to SIGKILL for the trainer's leftovers at exit */
#define LEFTOVER_POLL_MS 20
/* Leaving, retention (--keep after the last checkpoint, or an earlier machine's catching up)
 * gets this long; what it did not get to waits for the next machine or `resume-run gc`. */
#define RETENTION_AT_EXIT_MS 3000
/* The store's requests end at the notice's deadline too (rr_store_set_deadline), so a
 * persist can fail a few milliseconds before the loop sees the deadline pass. */
#define DEADLINE_SLACK_MS 100
/* A persist cut at the deadline may fail this long before its result is collected. */
#define CUT_RESULT_MS 1000
/* A failure this close to the deadline may be its cut: the store's requests end at it, and
 * their retries where one could not finish before it (backoff at most 15 s, storage/net/
 * retry.c). */
#define CUT_NEAR_MS 20000
/* The exit event's write, after everything else: bounded, as the machine may be going. */
#define EXIT_EVENT_MS 3000
/* The start-up restore's lease is given back within this much of the store's time; a slow
 * store's delete does not hold the trainer up (a lease left behind expires). */
#define LEASE_RELEASE_MS 2000
/* The least a cloud's preemption leaves, counted from when the agent saw it: one already due
 * (Azure's event first seen Started, its NotBefore blank; an AWS time past because the
 * agent looked late) still gets GCP's and Azure's window for its checkpoint, and its
 * deadline is not "passed" on arrival, which took a machine about to go for one that
 * outlived the notice (the trainer's 0 then stood, and nothing relaunched the job). */
#define CLOUD_NOTICE_MIN_MS 30000

extern char **environ;

/* Where the trainer's life stands. TRAINING: running (or being started); RESTART_WAIT: it
 * failed and restart_at says when it starts again; FINISHING: no further attempt, the loop
 * only drains the persists (bounded by the notice's deadline) and leaves. */
enum s_phase { S_TRAINING, S_RESTART_WAIT, S_FINISHING };

/* Where the current notice stands: the four combinations of "a notice is active" and "its
 * checkpoint is durable". HANDLED: the last notice is over and its checkpoint was durable
 * (a precaution done, or a durable notice withdrawn); the deadline check at the end still
 * counts it as durable. */
enum s_notice_state { S_CALM, S_NOTICE, S_DURABLE, S_HANDLED };

struct s_run {
	const struct rr_config *cfg;
	struct rr_store *store;
	struct rr_watcher *watcher;
	struct rr_persister *persister;
	struct rr_http *http;          /* the metadata services' client */
	struct rr_cloud_watch *cloud;
	/* What the watch identified, kept when it stops (the exit event comes after that). */
	struct rr_cloud_identity id;
	int id_known;
	struct rr_fanout *fanout;      /* --nnodes > 1: notices to and from the other nodes */
	struct rr_metrics *metrics;    /* --metrics-file; NULL: none */
	cJSON *restore_event;          /* written once the instance identity is known */
	const char *restore_event_kind; /* "restore", or "start" for a fresh start */
	int64_t restore_event_by;      /* monotonic ms: written by then whatever happens */
	int64_t started_wall_ms;
	char ckpt_dir[PATH_MAX];
	char notice_path[PATH_MAX];
	char *exe;
	int sfd;

	/* trainer */
	pid_t child;
	pid_t pgid;         /* the trainer's process group, kept after the trainer is reaped */
	int child_exited, child_status;
	unsigned attempt, restarts;
	enum s_phase phase;
	int64_t restart_at; /* monotonic ms, in S_RESTART_WAIT */
	int64_t finishing_since; /* monotonic ms, in S_FINISHING */
	int retention_stopped;   /* leaving: retention was told to stop (rr_persister_leaving) */

	char restored[256]; /* what the start-up restore put back, "" when nothing */
	/* The restored copy's commit time as the checkpoint directory's clock gives it (its
	 * ctime, or its pointer's, when the restore ended): a commit of that name reported at or
	 * before it is the copy itself, a later one the trainer's. */
	int64_t restored_ms;
	int64_t restored_committed_ms; /* its manifest's commit time (the store's writer's clock) */
	char other_run[256]; /* the run the checkpoint directory was last used by, when not this */
	int dir_owned;       /* the directory's owner file names this run already */
	/* Checkpoints the start-up restore passed over as suspect: a local copy of one of them
	 * (this machine's, or a shared directory's) is set aside by the start-up scan, not
	 * resumed from again. */
	char (*passed)[256];
	size_t npassed;
	/* newest checkpoint committed in the checkpoint directory */
	char newest[256];
	int64_t newest_ms;
	int scanned; /* the start-up scan is done: commits are ordered by commit time too */
	int same_name_warned; /* a name committed again was said once */
	char persisted[256]; /* the last checkpoint a persist found or made durable in the store */
	int64_t persisted_ms; /* its commit (a name without a step number may be committed again) */

	/* notice */
	enum s_notice_state nstate;
	struct rr_notice notice;
	int64_t notice_mono;        /* when it arrived */
	int64_t deadline_mono;      /* 0: none */
	int64_t asked_wall_ms;      /* when the trainer was signalled (0: not yet) */
	int64_t asked_mono;
	int ask_pending, ask_warned;
	char notice_ckpt[256];      /* the checkpoint written for it */
	int64_t notice_ckpt_ms;     /* its commit */
	int notice_retaken;         /* a second commit took notice_ckpt's place (only once) */
	int terminate_after;        /* SIGTERM/SIGINT notice: SIGTERM the trainer when durable */
	int term_forwarded;
	int notice_file_seen;
	int64_t notice_file_unsettled; /* since when the drill file, not a whole notice, is unchanged */
	off_t notice_file_size;
	struct timespec notice_file_mtime;
	int outlived;               /* a going notice's deadline passed with the trainer running */
	char outlived_newest[256];  /* the newest commit then: a 0 with nothing newer is a leave */
	int64_t outlived_newest_ms;
	struct rr_notice early_notice; /* a precaution that came during the start-up restore */
	int has_early_notice;
	/* The newest checkpoint, when its persist failed while a notice's deadline bounded the
	 * store's requests: persisted once more when the deadline no longer does (s_lift_deadline). */
	char cut[256];
	int64_t cut_ms;
	char cut_retried[256];        /* the last one persisted again: once each */
	int64_t cut_retried_ms;
	int64_t deadline_lifted_mono; /* when the notice's deadline last stopped bounding them */
	int store_checked;          /* s_warn_local_store has looked at the cloud */
	int watch_stopped;          /* s_stop_watching ran */

	/* suspect and proven checkpoints (agent/run/recovery.h) */
	struct rr_recovery rec;
	int suspect_due;            /* mark rec.from suspect before the next attempt */
	int suspect_code;           /* the exit status that made it due */

	int64_t next_every;         /* monotonic ms; 0: off */
	struct rr_cadence *cadence; /* --every: how often (NULL: off) */
	struct rr_history *history; /* --every auto: the run's past losses, being read */
	int cloud_noted;            /* the cadence was told which cloud this is */
	int exit_code;              /* the status to leave with, once decided (s_decide) */
	int exit_decided;
	int preempted;              /* a preemption/termination notice ended the run */
};

static const char *s_phase_name(enum s_phase p)
{
	return p == S_TRAINING ? "training" : p == S_RESTART_WAIT ? "restart-wait" : "finishing";
}

static const char *s_notice_state_name(enum s_notice_state n)
{
	return n == S_CALM ? "calm" : n == S_NOTICE ? "notice" : n == S_DURABLE ? "durable" :
									      "handled";
}

/* The one place the loop's state changes: the phase, the notice's progress, or both (pass
 * the current value for the one that stays). Leaving for good is one-way: nothing follows
 * S_FINISHING. */
static void s_transition(struct s_run *r, enum s_phase phase, enum s_notice_state nstate)
{
	if (r->phase == S_FINISHING)
		phase = S_FINISHING;
	else if (phase == S_FINISHING)
		r->finishing_since = rr_mono_ms();
	if (phase != S_RESTART_WAIT)
		r->restart_at = 0;
	if (phase != r->phase || nstate != r->nstate)
		rr_debug("state: %s/%s -> %s/%s", s_phase_name(r->phase),
			 s_notice_state_name(r->nstate), s_phase_name(phase),
			 s_notice_state_name(nstate));
	r->phase = phase;
	r->nstate = nstate;
}

/* The status the agent leaves with (unless a notice makes it --preempted-exit-code): the first
 * one decided stands, a finished trainer's 0 too, which exit_code alone cannot tell from none. */
static void s_decide(struct s_run *r, int code)
{
	if (r->exit_decided)
		return;
	r->exit_code = code;
	r->exit_decided = 1;
}

static int s_notice_active(const struct s_run *r)
{
	return r->nstate == S_NOTICE || r->nstate == S_DURABLE;
}

static int s_notice_durable(const struct s_run *r)
{
	return r->nstate == S_DURABLE || r->nstate == S_HANDLED;
}

/* Persists the newest checkpoint once more when its persist was cut by a notice's deadline
 * that no longer bounds the store's requests (the machine outlived it, or the notice is
 * over): a routine persist in flight at the deadline fails there, and were it the trainer's
 * last checkpoint, nothing would persist it again. */
/* The same commit: a name without a step number may be committed again, each commit its own
 * checkpoint (rr_checkpoint_later). */
static int s_same_commit(const char *a, int64_t a_ms, const char *b, int64_t b_ms)
{
	return strcmp(a, b) == 0 && a_ms == b_ms;
}

static void s_persist_cut_again(struct s_run *r)
{
	if (!r->cut[0] || !s_same_commit(r->cut, r->cut_ms, r->newest, r->newest_ms)) {
		r->cut[0] = '\0';
		return;
	}
	rr_info("persisting %s again: its persist was cut at the notice's deadline, which no "
		"longer bounds the store's requests", r->cut);
	snprintf(r->cut_retried, sizeof(r->cut_retried), "%s", r->cut);
	r->cut_retried_ms = r->cut_ms;
	r->cut[0] = '\0';
	rr_persister_submit(r->persister, r->newest, r->newest_ms, 0);
}

/* The notice's deadline no longer bounds the store's requests. */
static void s_lift_deadline(struct s_run *r)
{
	r->deadline_mono = 0;
	rr_store_set_deadline(r->store, 0);
	r->deadline_lifted_mono = rr_mono_ms();
	s_persist_cut_again(r);
}

/* The notice is over: withdrawn, replaced, done (a precaution), or outlived (its deadline
 * passed with the machine still here). Its deadline no longer bounds the store's requests:
 * the checkpoints that follow are persisted as usual. After SIGTERM/SIGINT the agent is
 * leaving, and the signal's own deadline stays. */
static void s_notice_over(struct s_run *r)
{
	s_transition(r, r->phase, s_notice_durable(r) ? S_HANDLED : S_CALM);
	if (!r->terminate_after)
		s_lift_deadline(r);
}

static void s_log_step(const struct s_run *r, const char *what)
{
	int64_t now = rr_mono_ms();
	if (r->deadline_mono)
		rr_info("%s: %.1f s after the notice, %.1f s before the deadline", what,
			(double)(now - r->notice_mono) / 1000.0,
			(double)(r->deadline_mono - now) / 1000.0);
	else
		rr_info("%s: %.1f s after the notice", what, (double)(now - r->notice_mono) / 1000.0);
}

/* ---- the trainer's environment and launch ---- */

static int s_setenv(char **env, size_t *n, const char *name, const char *value)
{
	size_t len = strlen(name) + strlen(value) + 2;
	char *kv = malloc(len);
	if (!kv)
		return RR_ENOMEM;
	snprintf(kv, len, "%s=%s", name, value);
	env[(*n)++] = kv;
	return 0;
}

/* What --trainer-env strip keeps from the trainer: the variables that hold (or lead straight
 * to) the credentials the agent uses for its store (docs/command-line.md, "Command line" lists
 * them). */
static const char *const s_credential_vars[] = {
	"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=",
	"AWS_SECURITY_TOKEN=", "AWS_CONTAINER_AUTHORIZATION_TOKEN=",
	"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI=", "AWS_WEB_IDENTITY_TOKEN_FILE=", "AWS_ROLE_ARN=",
	"GOOGLE_APPLICATION_CREDENTIALS=", "RESUME_RUN_ENCRYPTION_KEY_FILE=",
};

/* The agent's environment minus RESUME_RUN_* trainer variables, plus ours
 * (docs/trainer-contract.md, "The trainer contract"). Built before fork: the child only calls
 * execve. */
static char **s_build_env(const struct s_run *r)
{
	static const char *const ours[] = { "RESUME_RUN_CHECKPOINT_DIR=", "RESUME_RUN_RESTORE_DIR=",
					    "RESUME_RUN_SIGNAL=", "RESUME_RUN_NOTICE_FILE=",
					    "RESUME_RUN_ID=", "RESUME_RUN_ATTEMPT=" };
	size_t count = 0, n = 0;
	char **env, num[32], restore[PATH_MAX + 256];
	int rc = 0;

	while (environ[count])
		count++;
	env = calloc(count + 8, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < count && !rc; i++) {
		int skip = 0;
		for (size_t k = 0; k < sizeof(ours) / sizeof(ours[0]); k++)
			skip |= strncmp(environ[i], ours[k], strlen(ours[k])) == 0;
		if (r->cfg->strip_trainer_env)
			for (size_t k = 0; k < sizeof(s_credential_vars) / sizeof(s_credential_vars[0]); k++)
				skip |= strncmp(environ[i], s_credential_vars[k],
						strlen(s_credential_vars[k])) == 0;
		if (!skip && !(env[n++] = strdup(environ[i])))
			rc = RR_ENOMEM;
	}
	snprintf(num, sizeof(num), "%u", r->attempt);
	if (!rc)
		rc = s_setenv(env, &n, "RESUME_RUN_CHECKPOINT_DIR", r->ckpt_dir);
	if (!rc)
		rc = s_setenv(env, &n, "RESUME_RUN_SIGNAL", rr_signal_name(r->cfg->checkpoint_signal));
	if (!rc)
		rc = s_setenv(env, &n, "RESUME_RUN_NOTICE_FILE", r->notice_path);
	if (!rc)
		rc = s_setenv(env, &n, "RESUME_RUN_ID", r->cfg->run_id);
	if (!rc)
		rc = s_setenv(env, &n, "RESUME_RUN_ATTEMPT", num);
	if (!rc && r->newest[0]) {
		snprintf(restore, sizeof(restore), "%s/%s", r->ckpt_dir, r->newest);
		rc = s_setenv(env, &n, "RESUME_RUN_RESTORE_DIR", restore);
	}
	if (rc) {
		for (size_t i = 0; i < n; i++)
			free(env[i]);
		free(env);
		return NULL;
	}
	return env;
}

/* Returns 0, or the exit status to leave with when the command cannot run. */
static int s_launch(struct s_run *r)
{
	char **env = s_build_env(r);
	int exec_errno = 0, rc;

	if (!env) {
		rr_error("out of memory building the trainer's environment");
		return EXIT_AGENT_ERROR;
	}
	rc = rr_supervisor_spawn(r->exe, r->cfg->argv, env, &r->child, &exec_errno);
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
	if (rc) {
		/* No trainer: not the -1 spawn leaves, which every "r->child" test takes for a
		 * running one (the last attempt's exit taken again, kill(-1, ...)). */
		r->child = 0;
		r->child_exited = 0;
		rr_error("cannot run '%s': %s", r->cfg->argv[0], strerror(exec_errno));
		return rc == RR_ENOENT ? 127 : 126;
	}
	r->child_exited = 0;
	r->pgid = r->child;
	rr_recovery_launch(&r->rec, r->newest, r->newest_ms);
	rr_info("started %s (pid %d, attempt %u)%s%s", r->cfg->argv[0], (int)r->child, r->attempt,
		r->newest[0] ? ", resuming from " : "", r->newest);
	return 0;
}

/* ---- the trainer's leftovers ---- */

/* Background processes of a trainer that has exited (its group, and orphans that left it:
 * as a subreaper they are all our descendants) would otherwise outlive it: into the next
 * attempt, which then finds a stale worker holding the GPU, or past the agent. */
static void s_signal_leftovers(struct s_run *r, int sig)
{
	int n = rr_supervisor_signal_descendants(r->pgid, sig);

	if (n > 0)
		rr_info("%d process%s of the trainer still running; sent SIG%s", n,
			n == 1 ? "" : "es", rr_signal_name(sig));
	else if (n < 0)
		rr_warn("cannot look for the trainer's leftover processes: %s", rr_strerror(n));
}

/* SIGKILL, again for any forked meanwhile, until none is left (reaping them) or bound_ms
 * passed: a process stuck in the kernel (D state) ends with no signal, and the agent must
 * not wait on it forever. */
static void s_kill_leftovers(struct s_run *r, int64_t bound_ms)
{
	int64_t until = rr_mono_ms() + bound_ms;

	s_signal_leftovers(r, SIGKILL);
	do {
		rr_supervisor_reap(0, NULL, NULL);
		if (rr_supervisor_signal_descendants(r->pgid, 0) <= 0)
			return;
		(void)rr_supervisor_signal_descendants(r->pgid, SIGKILL);
		poll(NULL, 0, LEFTOVER_POLL_MS);
	} while (rr_mono_ms() < until);
}

/* At the agent's exit: SIGTERM, a short grace reaping them, then SIGKILL. */
static void s_end_leftovers(struct s_run *r)
{
	int64_t until;

	if (rr_supervisor_signal_descendants(r->pgid, 0) <= 0)
		return;
	s_signal_leftovers(r, SIGTERM);
	until = rr_mono_ms() + LEFTOVER_GRACE_MS;
	for (;;) {
		rr_supervisor_reap(0, NULL, NULL);
		if (rr_supervisor_signal_descendants(r->pgid, 0) <= 0)
			return;
		if (rr_mono_ms() >= until)
			break;
		poll(NULL, 0, LEFTOVER_POLL_MS);
	}
	s_kill_leftovers(r, LEFTOVER_GRACE_MS);
}

/* ---- notices ---- */

static void s_ask_checkpoint(struct s_run *r)
{
	int n;

	if (!r->child || r->child_exited)
		return;
	n = rr_supervisor_signal_tree(r->child, r->cfg->checkpoint_signal, 0);
	if (n > 0) {
		r->ask_pending = 0;
		r->asked_wall_ms = rr_wall_ms();
		r->asked_mono = rr_mono_ms();
		rr_cadence_asked(r->cadence, r->asked_mono, s_notice_active(r));
		if (s_notice_active(r))
			s_log_step(r, "asked the trainer for a checkpoint");
		else
			rr_info("asked the trainer for a checkpoint (SIG%s to %d process%s)",
				rr_signal_name(r->cfg->checkpoint_signal), n, n == 1 ? "" : "es");
		return;
	}
	r->ask_pending = 1;
	if (!r->ask_warned) {
		rr_warn("no trainer process handles SIG%s yet; the checkpoint request waits until "
			"one does", rr_signal_name(r->cfg->checkpoint_signal));
		r->ask_warned = 1;
	}
}

static void s_forward_term(struct s_run *r, const char *why)
{
	if (r->term_forwarded || !r->child || r->child_exited)
		return;
	rr_info("%s; sending SIGTERM to the trainer", why);
	/* The whole process group, wrappers and workers alike, and the workers a launcher
	 * started in sessions of their own (torchrun). */
	if (rr_supervisor_signal_tree(r->child, SIGTERM, RR_TREE_ALL) < 0 && r->child > 0)
		kill(-r->child, SIGTERM);
	r->term_forwarded = 1;
}

/* Adds where the run is ("instance": cloud, id, type, zone, lifecycle) to a ledger event. */
static void s_add_instance(struct s_run *r, cJSON *ev)
{
	const struct rr_cloud_identity *id = &r->id;
	cJSON *o;

	if (r->cloud)
		r->id_known = rr_cloud_watch_identity(r->cloud, &r->id);
	if (!ev || !r->id_known)
		return;
	o = cJSON_AddObjectToObject(ev, "instance");
	if (!o)
		return;
	cJSON_AddStringToObject(o, "cloud", id->cloud);
	cJSON_AddStringToObject(o, "instance_id", id->instance_id);
	cJSON_AddStringToObject(o, "instance_type", id->instance_type);
	cJSON_AddStringToObject(o, "zone", id->zone);
	cJSON_AddStringToObject(o, "lifecycle", id->lifecycle);
}

/* Stops the cloud watch, keeping the identity it found for the exit event. */
static void s_stop_cloud(struct s_run *r)
{
	if (r->cloud)
		r->id_known = rr_cloud_watch_identity(r->cloud, &r->id);
	rr_cloud_watch_stop(r->cloud);
	r->cloud = NULL;
}

/* The restore event waits (in the loop, never holding the trainer up) until the watcher has
 * the instance identity, or 10 s. */
static void s_flush_restore_event(struct s_run *r, int now)
{
	if (!r->restore_event || !(now || rr_cloud_watch_settled(r->cloud) ||
				   rr_mono_ms() >= r->restore_event_by))
		return;
	s_add_instance(r, r->restore_event);
	rr_persister_record(r->persister, r->restore_event_kind, r->restore_event);
	r->restore_event = NULL;
}

/* Whether the checkpoint the notice asks for can be durable in time, from the recent
 * persist rate (agent/run/throughput.c): the operator learns at once what a miss would cost.
 * Returns 1 with *t and *e filled, 0 when there is nothing to estimate with. */
static int s_log_deadline_estimate(struct s_run *r, int64_t left_ms, struct rr_throughput *t,
				   struct rr_deadline_estimate *e)
{
	char line[1024];

	if (!r->persister)
		return 0;
	rr_persister_throughput(r->persister, t);
	rr_throughput_estimate(t, left_ms, e);
	rr_throughput_describe(t, e, rr_wall_ms(), line, sizeof(line));
	if (e->fits)
		rr_info("notice: %s", line);
	else
		rr_warn("notice: %s", line);
	return 1;
}

/* How long the notice leaves. A cloud's deadline is a time on its own clock (AWS's
 * instance-action "time", Azure's NotBefore): it is judged by the store's clock, which the
 * store's answers tell (rr_store_now_ms), so a machine whose clock is off still sees the
 * 120 s AWS gives, not 120 s less its error. The others are relative already. */
/* How much a notice changes the plan: the machine going beats a precaution. */
static int s_severity(enum rr_notice_kind k)
{
	return k == RR_NOTICE_PREEMPT || k == RR_NOTICE_TERMINATE ? 2 : 1;
}

static int64_t s_notice_left_ms(struct s_run *r, const struct rr_notice *n)
{
	int64_t left = (n->deadline_unix - n->received_unix) * 1000;

	if (n->deadline_unix && (n->source == RR_SOURCE_AWS || n->source == RR_SOURCE_AZURE) &&
	    rr_store_clock_known(r->store))
		left = n->deadline_unix * 1000 - rr_store_now_ms(r->store);
	if (n->deadline_unix && s_severity(n->kind) == 2 && left < CLOUD_NOTICE_MIN_MS &&
	    (n->source == RR_SOURCE_AWS || n->source == RR_SOURCE_GCP ||
	     n->source == RR_SOURCE_AZURE)) {
		rr_info("notice: its deadline is %lld s away as seen; taken as %d s from now",
			(long long)(left / 1000), CLOUD_NOTICE_MIN_MS / 1000);
		left = CLOUD_NOTICE_MIN_MS;
	}
	return left;
}

/* The active notice says this machine is going (a preemption or termination), rather than
 * being a precaution that training goes on after. */
static int s_notice_going(const struct s_run *r)
{
	return s_notice_active(r) && s_severity(r->notice.kind) == 2;
}

/* The deadline is this machine's: a signal's grace, or a notice of its own, not one another
 * node of the job announced (that machine is going, not this one). */
static int s_deadline_is_ours(const struct s_run *r)
{
	return r->terminate_after || r->notice.source != RR_SOURCE_NODE;
}

/* The newest checkpoint is in the store: restored from it, or persisted since. */
static int s_newest_durable(const struct s_run *r)
{
	return r->newest[0] &&
	       ((strcmp(r->newest, r->restored) == 0 && r->newest_ms <= r->restored_ms) ||
		(strcmp(r->newest, r->persisted) == 0 && r->newest_ms <= r->persisted_ms));
}

/* A going notice is outlived: the machine is still here past its deadline, and the trainer
 * runs. Its exit 0 will stand once it has committed again (it trained on); one with nothing
 * newer than now left for the notice (s_on_child_exit). */
static void s_outlive(struct s_run *r)
{
	r->outlived = 1;
	snprintf(r->outlived_newest, sizeof(r->outlived_newest), "%s", r->newest);
	r->outlived_newest_ms = r->newest_ms;
}

/* The notice's checkpoint (notice_ckpt) is durable: a precaution is done, and a cloud that
 * waits for it hears so. */
static void s_notice_made_durable(struct s_run *r)
{
	char what[300];

	s_transition(r, r->phase, S_DURABLE);
	snprintf(what, sizeof(what), "checkpoint %s is durable in the store", r->notice_ckpt);
	s_log_step(r, what);
	if (r->notice.source == RR_SOURCE_AWS || r->notice.source == RR_SOURCE_GCP ||
	    r->notice.source == RR_SOURCE_AZURE)
		rr_cloud_watch_durable(r->cloud, r->notice.seq);
	if (s_severity(r->notice.kind) == 1 && !r->terminate_after) {
		/* A precaution (rebalance, maintenance), from wherever it came: done; training
		 * goes on and the next notice is handled afresh. */
		unlink(r->notice_path);
		s_notice_over(r);
		rr_info("%s notice handled; training goes on", rr_notice_kind_name(r->notice.kind));
	} else if (!r->terminate_after && r->phase != S_FINISHING && !r->deadline_mono &&
		   r->deadline_lifted_mono >= r->notice_mono) {
		/* Durable only after its deadline, which was lifted with this machine still here
		 * (s_check_deadline): the machine outlived the notice, as it does when it is
		 * durable in time; left standing, it would pause --every, make the trainer's own
		 * exit 75 and hide every later notice. */
		rr_warn("the %s notice's checkpoint is durable, after its deadline, and this machine "
			"is still here: the notice is over, and the trainer's own exit status will "
			"stand", rr_notice_kind_name(r->notice.kind));
		s_outlive(r);
		unlink(r->notice_path);
		r->ask_pending = 0;
		s_notice_over(r);
	}
}

/* Told that this machine is going while a failed trainer waits to be restarted: it is not
 * started again (the next machine resumes from the store). What this one leaves behind is the
 * newest checkpoint: the agent waits until it is durable, persisting it ahead of everything
 * else if it is not yet, and leaves with the preempted status. */
static void s_set_suspect_aside(struct s_run *r, int restore_before);

/* With the trainer gone, its newest checkpoint is what the next machine resumes from: the
 * notice's, persisted ahead of everything else unless it is durable already. */
static void s_notice_takes_newest(struct s_run *r)
{
	snprintf(r->notice_ckpt, sizeof(r->notice_ckpt), "%s", r->newest);
	r->notice_ckpt_ms = r->newest_ms;
	if (!s_newest_durable(r))
		rr_persister_submit(r->persister, r->newest, r->newest_ms, 1);
	else if (s_notice_active(r))
		s_notice_made_durable(r);
}

static void s_going_between_attempts(struct s_run *r)
{
	char suspect[256] = "";

	rr_info("the trainer is not restarted: this machine is going");
	/* Failed often enough from its checkpoint to mark it: marked as when giving up, so the
	 * next machine starts from the one before. */
	if (r->suspect_due) {
		snprintf(suspect, sizeof(suspect), "%s", r->rec.from);
		s_set_suspect_aside(r, 0);
	}
	r->preempted = 1;
	s_decide(r, rr_exit_code_from_status(r->child_status)); /* the failed attempt's */
	s_transition(r, S_FINISHING, r->nstate);
	if (!r->newest[0])
		return;
	if (strcmp(r->newest, suspect) == 0) {
		/* Persisted now it would be the store's newest, unmarked (the mark found it not
		 * there), and the next machine would resume from it and fail again. */
		rr_warn("the newest checkpoint %s is suspect: not persisted for the notice; the "
			"store's newest stays %s", suspect, r->persisted[0] ? r->persisted
							   : r->restored[0] ? r->restored : "none");
		return;
	}
	s_notice_takes_newest(r);
}

/* This machine's own preemption while another node's notice is active (a zone-wide
 * reclaim): the checkpoint under way answers both, and from now on the deadline is this
 * machine's: it bounds the store's requests and the final upload (s_deadline_is_ours). */
static void s_own_notice_too(struct s_run *r, const struct rr_notice *n)
{
	int64_t left_ms = s_notice_left_ms(r, n);

	rr_info("notice: %s from %s while another node's is active: this machine is going too%s",
		rr_notice_kind_name(n->kind), rr_notice_source_name(n->source),
		n->deadline_unix ? ", by its own deadline" : "");
	r->notice.kind = n->kind;
	r->notice.source = n->source;
	r->notice.seq = n->seq;
	r->notice.deadline_unix = n->deadline_unix;
	r->deadline_mono = n->deadline_unix ? rr_mono_ms() + left_ms : 0;
	rr_store_set_deadline(r->store, r->deadline_mono);
	if (s_notice_durable(r) && (n->source == RR_SOURCE_AWS || n->source == RR_SOURCE_GCP ||
				    n->source == RR_SOURCE_AZURE))
		rr_cloud_watch_durable(r->cloud, r->notice.seq);
}

static void s_start_notice(struct s_run *r, const struct rr_notice *n)
{
	int64_t left_ms;
	struct rr_buf json;
	struct rr_throughput tp;
	struct rr_deadline_estimate est;
	int estimated = 0;
	cJSON *ev;

	if (s_notice_active(r) && r->notice.source == RR_SOURCE_NODE &&
	    n->source != RR_SOURCE_NODE && s_severity(n->kind) == 2 && !r->terminate_after) {
		s_own_notice_too(r, n);
		return;
	}
	if (s_notice_active(r)) {
		rr_info("another notice (%s from %s) while one is active; carrying on",
			rr_notice_kind_name(n->kind), rr_notice_source_name(n->source));
		return;
	}
	s_transition(r, r->phase, S_NOTICE);
	r->notice = *n;
	/* Multi-node: the other nodes' agents take this notice from the store (a notice that
	 * came from them is not written back). */
	if (n->source != RR_SOURCE_NODE)
		rr_fanout_announce(r->fanout, n);
	r->notice_mono = rr_mono_ms();
	left_ms = s_notice_left_ms(r, n);
	if (r->terminate_after && r->deadline_mono && r->deadline_mono > r->notice_mono &&
	    (!n->deadline_unix || r->deadline_mono - r->notice_mono < left_ms)) {
		/* After SIGTERM/SIGINT its --grace stays the limit: a later notice's longer
		 * deadline (a spot interruption's 2 min) would outlast the pod's or the unit's
		 * own grace, which ends in SIGKILL. */
		left_ms = r->deadline_mono - r->notice_mono;
	} else {
		r->deadline_mono = n->deadline_unix ? r->notice_mono + left_ms : 0;
	}
	/* The store stops retrying where a retry could not finish before the deadline: this
	 * machine's. Another node's is that machine's: this one stays, and its part of the
	 * notice's checkpoint must get there for the checkpoint to be committed at all. */
	rr_store_set_deadline(r->store, s_deadline_is_ours(r) ? r->deadline_mono : 0);
	r->notice_ckpt[0] = '\0';
	r->notice_retaken = 0;
	r->asked_wall_ms = 0;
	r->ask_warned = 0;
	if (n->deadline_unix)
		rr_info("notice: %s from %s, deadline in %lld s", rr_notice_kind_name(n->kind),
			rr_notice_source_name(n->source), (long long)(left_ms / 1000));
	if (n->deadline_unix)
		estimated = s_log_deadline_estimate(r, left_ms, &tp, &est);
	else
		rr_info("notice: %s from %s, no deadline", rr_notice_kind_name(n->kind),
			rr_notice_source_name(n->source));

	rr_buf_init(&json, 4096);
	if (rr_notice_to_json(n, &json) != 0 ||
	    rr_write_file_durable(r->notice_path, json.data, json.len, 0644) != 0)
		rr_warn("could not write the notice file %s", r->notice_path);
	rr_buf_free(&json);

	ev = cJSON_CreateObject();
	if (ev) {
		cJSON_AddStringToObject(ev, "notice", rr_notice_kind_name(n->kind));
		cJSON_AddStringToObject(ev, "source", rr_notice_source_name(n->source));
		if (n->deadline_unix)
			cJSON_AddNumberToObject(ev, "deadline_unix", (double)n->deadline_unix);
		else
			cJSON_AddNullToObject(ev, "deadline_unix");
		cJSON_AddNumberToObject(ev, "received_unix", (double)n->received_unix);
		/* The event is written behind the notice's own checkpoint: the report measures
		 * from here, not from the event's time. */
		cJSON_AddNumberToObject(ev, "received_unix_ms", (double)rr_wall_ms());
		if (estimated) {
			/* The prediction beside the outcome (the checkpoint event's durable
			 * time), so a report can tell how good the estimates are. */
			cJSON_AddNumberToObject(ev, "throughput_bps", tp.bps);
			cJSON_AddNumberToObject(ev, "expected_bytes", (double)est.expect_bytes);
			cJSON_AddNumberToObject(ev, "expected_new_bytes", (double)est.expect_work);
			cJSON_AddNumberToObject(ev, "expected_persist_ms", (double)est.need_ms);
			cJSON_AddBoolToObject(ev, "expected_to_fit", est.fits);
		}
		s_add_instance(r, ev);
		rr_persister_record(r->persister, "notice", ev);
	}
	if (r->phase == S_RESTART_WAIT && s_severity(n->kind) == 2)
		s_going_between_attempts(r);
	else if (r->phase == S_RESTART_WAIT)
		rr_info("the trainer is asked for a checkpoint once it is restarted");
	else
		s_ask_checkpoint(r);
}

/* The default store is a directory on this machine (file://./.resume-run/store): on a cloud's
 * machine, its checkpoints go down with the machine and a replacement starts from scratch. Said
 * once the cloud is known, and again at each of the cloud's notices. A warning and not a
 * refusal: detection runs beside training, which does not wait for it, and a machine that is
 * stopped rather than deleted keeps its disk (docs/command-line.md, "Command line"). An
 * explicit file:// store is the user's choice, said nothing about. */
static void s_warn_local_store(struct s_run *r, const struct rr_notice *n)
{
	enum rr_cloud c = rr_cloud_watch_cloud(r->cloud);

	if (r->cfg->store_given)
		return;
	if (n) {
		if (n->source == RR_SOURCE_AWS || n->source == RR_SOURCE_GCP ||
		    n->source == RR_SOURCE_AZURE)
			rr_warn("this notice's checkpoint goes to this machine's disk (%s, the "
				"default store): it is lost with the machine", r->cfg->store_url);
		return;
	}
	if (r->store_checked || c == RR_CLOUD_AUTO)
		return;
	r->store_checked = 1;
	if (c == RR_CLOUD_AWS || c == RR_CLOUD_GCP || c == RR_CLOUD_AZURE)
		rr_warn("the store is this machine's disk (%s, the default) on %s: its checkpoints "
			"are lost with the machine, and a replacement starts from scratch; give "
			"--store s3://, gs:// or az:// (or --store file:///PATH on a disk that "
			"outlives the machine)", r->cfg->store_url, rr_cloud_name(c));
}

static void s_on_cloud_notice(struct s_run *r, const struct rr_notice *n)
{
	s_warn_local_store(r, n);
	if (s_notice_active(r) && s_severity(n->kind) > s_severity(r->notice.kind)) {
		/* e.g. an AWS rebalance recommendation, then the interruption notice itself:
		 * the new one replaces it, with its deadline and a fresh checkpoint. */
		rr_info("%s from %s replaces the active %s notice", rr_notice_kind_name(n->kind),
			rr_notice_source_name(n->source), rr_notice_kind_name(r->notice.kind));
		s_notice_over(r);
	}
	s_start_notice(r, n);
}

static void s_end_notice(struct s_run *r)
{
	unlink(r->notice_path);
	s_notice_over(r);
	r->ask_pending = 0;
	rr_info("notice withdrawn");
}

/* The notice's deadline passed and this machine still trains: the race the deadline bounded
 * is over, and the store's requests are no longer held to it. A precaution that missed it is
 * simply over. A preemption whose checkpoint is durable and whose trainer carries on past it
 * is outlived (the machine was not taken), so the trainer's own exit status stands again.
 * One whose checkpoint is not durable yet stays (its persist goes on): a trainer that stops
 * for it now still leaves with --preempted-exit-code. */
static void s_check_deadline(struct s_run *r, int64_t now)
{
	const char *kind = rr_notice_kind_name(r->notice.kind);

	if (!s_notice_active(r) || !r->deadline_mono || now < r->deadline_mono ||
	    r->terminate_after ||
	    (r->phase == S_FINISHING && s_severity(r->notice.kind) == 2))
		return;
	if (s_severity(r->notice.kind) == 2 && !s_notice_durable(r)) {
		rr_warn("the %s notice's deadline passed before its checkpoint was durable, and "
			"this machine is still here: its persist goes on without the deadline", kind);
		s_lift_deadline(r);
		return;
	}
	if (s_severity(r->notice.kind) == 1)
		rr_warn("the %s notice's deadline passed before its checkpoint was durable; %s"
			"checkpoints are persisted as usual", kind,
			r->phase == S_FINISHING ? "" : "training goes on, ");
	else
		rr_warn("the %s notice's deadline passed and the trainer is still running; the "
			"notice is over: checkpoints are persisted as usual, and the trainer's own "
			"exit status will stand", kind);
	if (s_severity(r->notice.kind) == 2)
		s_outlive(r);
	unlink(r->notice_path);
	r->ask_pending = 0;
	s_notice_over(r);
}

/* 1 when b, spaces aside, is one {...} (with rr_notice_parse_file's 0: a notice). */
static int s_whole_json(const struct rr_buf *b)
{
	size_t i = 0, j = b->len;

	while (i < j && isspace(b->data[i]))
		i++;
	while (j > i && isspace(b->data[j - 1]))
		j--;
	return j - i >= 2 && b->data[i] == '{' && b->data[j - 1] == '}';
}

/* 1 while the drill file, not yet a whole notice, has been unchanged (size and mtime st)
 * for less than NOTICE_FILE_SETTLE_MS: its writer may be between creating and writing it. */
static int s_notice_file_unsettled(struct s_run *r, const struct stat *st)
{
	int64_t now = rr_mono_ms();

	if (!r->notice_file_unsettled || st->st_size != r->notice_file_size ||
	    st->st_mtim.tv_sec != r->notice_file_mtime.tv_sec ||
	    st->st_mtim.tv_nsec != r->notice_file_mtime.tv_nsec) {
		r->notice_file_unsettled = now;
		r->notice_file_size = st->st_size;
		r->notice_file_mtime = st->st_mtim;
	}
	return now - r->notice_file_unsettled < NOTICE_FILE_SETTLE_MS;
}

static void s_check_notice_file(struct s_run *r)
{
	struct stat st;
	int present = stat(r->cfg->notice_file, &st) == 0;

	if (present && !r->notice_file_seen) {
		struct rr_notice n = { .source = RR_SOURCE_FILE, .received_unix = rr_wall_ms() / 1000 };
		struct rr_buf b;
		char why[160] = "";
		int rc = S_ISREG(st.st_mode) ? 0 : RR_EPATH;
		rr_buf_init(&b, RR_NOTICE_FILE_MAX);
		if (!rc)
			rc = rr_read_regular_file(r->cfg->notice_file, &b);
		if (rc == RR_EPATH) {
			/* A FIFO would block the event loop in open(); a device is no drill. Once,
			 * until it is gone. */
			rr_buf_free(&b);
			r->notice_file_seen = 1;
			rr_warn("drill file %s is not a regular file; ignored until it is removed",
				r->cfg->notice_file);
			return;
		}
		if (rc == 0)
			rc = rr_notice_parse_file((const char *)(b.data ? b.data : (unsigned char *)""),
						  b.len, n.received_unix, &n, why, sizeof(why));
		/* A writer's `>` creates the file before it writes it: what is not a whole JSON
		 * notice (empty, plain text, JSON cut short or refused) is taken, as a `touch`
		 * drill or a preemption, only once it has been there NOTICE_FILE_SETTLE_MS, or
		 * a rebalance written in two steps would preempt. */
		if ((rc || !s_whole_json(&b)) && s_notice_file_unsettled(r, &st)) {
			rr_buf_free(&b);
			return;
		}
		rr_buf_free(&b);
		r->notice_file_unsettled = 0;
		r->notice_file_seen = 1;
		if (rc) {
			rr_warn("drill file %s: %s; treating it as a preemption notice",
				r->cfg->notice_file, why[0] ? why : rr_strerror(rc));
			n.kind = RR_NOTICE_PREEMPT;
			n.deadline_unix = 0;
		}
		s_start_notice(r, &n);
	} else if (!present && r->notice_file_unsettled) {
		r->notice_file_unsettled = 0; /* created and removed again before it settled */
	} else if (!present && r->notice_file_seen) {
		r->notice_file_seen = 0;
		if (s_notice_active(r) && r->notice.source == RR_SOURCE_FILE)
			s_end_notice(r);
	}
}

/* ---- --every: the periodic checkpoint (agent/run/cadence.c says when) ---- */

static void s_cadence_record(void *persister, const char *kind, cJSON *fields)
{
	rr_persister_record(persister, kind, fields);
}

/* With --every: the cadence, and for --every auto without --mtbf the read of the run's past
 * losses. Returns 0 or an rr_error. */
static int s_cadence_start(struct s_run *r)
{
	const struct rr_config *cfg = r->cfg;
	struct rr_cadence_opts o = {
		.every_ms = cfg->every_ms, .every_auto = cfg->every_auto, .mtbf_ms = cfg->mtbf_ms,
		.max_overhead = cfg->max_overhead, .grace_ms = cfg->grace_ms,
		.nnodes = cfg->nnodes, .start_mono_ms = rr_mono_ms(), .start_wall_ms = rr_wall_ms(),
	};
	struct rr_cadence_io io = { .record = s_cadence_record, .ud = r->persister };
	int rc;

	if (!cfg->every_ms && !cfg->every_auto)
		return 0;
	rc = rr_cadence_new(&o, &io, &r->cadence);
	if (!rc && cfg->every_auto && !cfg->mtbf_ms)
		rc = rr_history_start(cfg->store_url, &cfg->store_opts, cfg->run_id,
				      r->started_wall_ms, cfg->nnodes, &r->history);
	if (!rc)
		r->next_every = rr_cadence_next(r->cadence, rr_wall_ms());
	return rc;
}

/* What the cadence learns as the loop goes: the history once read, the cloud once known;
 * then when to ask next. */
static void s_cadence_tick(struct s_run *r)
{
	struct rr_history_summary h;
	struct rr_cloud_identity id;

	if (!r->cadence)
		return;
	if (rr_history_poll(r->history, &h))
		rr_cadence_set_history(r->cadence, &h);
	if (!r->cloud_noted && rr_cloud_watch_settled(r->cloud)) {
		r->cloud_noted = 1;
		rr_cadence_set_cloud(r->cadence,
				     rr_cloud_watch_identity(r->cloud, &id) ? id.cloud : "");
	}
	r->next_every = rr_cadence_next(r->cadence, rr_wall_ms());
}

/* A persist's size, changed share and rate: the notice-lead rule's inputs. */
static void s_cadence_persisted(struct s_run *r, const struct rr_persist_result *res)
{
	struct rr_throughput tp;

	if (!r->cadence || res->rc != 0)
		return;
	rr_persister_throughput(r->persister, &tp);
	rr_cadence_persisted(r->cadence, res->name, res->committed_ms, &res->stats, tp.bps);
}

/* A notice file already there when the agent starts announces nothing now: it is an
 * earlier drill's (README says to touch it) or one a scheduler left, and taking it as a
 * notice would preempt every start, a relaunch loop under systemd's Restart=on-failure. It
 * counts as seen, so the next notice is its removal and creation again (DESIGN §3). */
static void s_notice_file_at_start(struct s_run *r)
{
	struct stat st;

	/* Not a regular file: s_check_notice_file refuses it with a warning of its own. */
	if (!r->cfg->notice_file || stat(r->cfg->notice_file, &st) != 0 || !S_ISREG(st.st_mode))
		return;
	r->notice_file_seen = 1;
	rr_warn("drill file %s already exists at start: not a notice (left from an earlier "
		"drill?); it is ignored until removed, and creating it again announces one",
		r->cfg->notice_file);
}

/* ---- checkpoints ---- */

static void s_move_aside(struct s_run *r, const char *name);

/* 1 when name is a checkpoint the start-up restore passed over as suspect, now set aside: by
 * name, as s_restore_before does (a copy restored here has the restore's time, not the
 * commit's, so times cannot tell it from a later commit of the name; setting that aside
 * costs the steps since the one before, resuming from the suspect one costs the run). */
static int s_set_aside_if_passed_over(struct s_run *r, const char *name)
{
	for (size_t i = 0; i < r->npassed; i++)
		if (strcmp(r->passed[i], name) == 0) {
			s_move_aside(r, name);
			return 1;
		}
	return 0;
}

/* Moves checkpoint name out of the trainer's sight, to .NAME.TAG-<ms> (a dot-name is never a
 * checkpoint; nothing is deleted): 0 with its new path in to, ENOENT when it is gone
 * already, or another errno. */
static int s_rename_aside(const struct s_run *r, const char *name, const char *tag, char *to,
			  size_t cap)
{
	char from[PATH_MAX];

	snprintf(from, sizeof(from), "%s/%s", r->ckpt_dir, name);
	snprintf(to, cap, "%s/.%s.%s-%lld", r->ckpt_dir, name, tag, (long long)rr_wall_ms());
	return rename(from, to) == 0 ? 0 : errno;
}

/* A checkpoint another run left in the checkpoint directory (the same directory given to a
 * new --run-id): not this run's to resume from or to store under its name, which a "fresh
 * start" would have done. */
static void s_move_aside_other_run(struct s_run *r, const char *name)
{
	char to[PATH_MAX], tag[300];
	int err;

	snprintf(tag, sizeof(tag), "run-%s", r->other_run);
	err = s_rename_aside(r, name, tag, to, sizeof(to));
	if (!err)
		rr_warn("checkpoint %s in the checkpoint directory is run '%s''s, not '%s''s: moved "
			"aside to %s, not resumed from or stored", name, r->other_run,
			r->cfg->run_id, to);
	else if (err != ENOENT)
		rr_warn("cannot move run '%s''s checkpoint %s aside (%s); the trainer may still "
			"find it", r->other_run, name, strerror(err));
}

/* Reads which run last used the checkpoint directory (OWNER_FILE_NAME) into
 * r->other_run when it is another one. No file (a directory from before 0.2.0, or a new
 * one): its checkpoints are taken as this run's, as before. */
static void s_read_dir_owner(struct s_run *r)
{
	char path[PATH_MAX], buf[256];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", r->ckpt_dir, OWNER_FILE_NAME);
	f = fopen(path, "re");
	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x21 || buf[i] == '/' || buf[i] == 0x7f)
			return; /* not a run id: not trusted to say anything */
	if (n && strcmp(buf, r->cfg->run_id) != 0)
		snprintf(r->other_run, sizeof(r->other_run), "%s", buf);
	r->dir_owned = n && !r->other_run[0];
}

static void s_write_dir_owner(struct s_run *r)
{
	char path[PATH_MAX];

	if (r->dir_owned)
		return; /* no write (and fsync) at every start */
	snprintf(path, sizeof(path), "%s/%s", r->ckpt_dir, OWNER_FILE_NAME);
	if (rr_write_file_durable(path, r->cfg->run_id, strlen(r->cfg->run_id), 0644) != 0)
		rr_warn("could not write %s: a later start cannot tell this run's checkpoints "
			"from another's", path);
}

static void s_on_commit(const char *name, int64_t ms, void *ud)
{
	struct s_run *r = ud;
	int urgent = 0;
	/* The restored copy itself, in the store already: the start-up scan finding it, or the
	 * rename of a restore between attempts (the trainer down), not the trainer's commit. */
	int restored_copy = r->restored[0] && strcmp(name, r->restored) == 0 &&
			    ms <= r->restored_ms;

	if (r->scanned && restored_copy) {
		rr_debug("checkpoint %s (just restored) is in the checkpoint directory", name);
		return;
	}
	if (!r->scanned && s_set_aside_if_passed_over(r, name))
		return;
	if (!r->scanned && r->other_run[0] && strcmp(name, r->restored) != 0) {
		s_move_aside_other_run(r, name);
		return;
	}

	/* At start-up the newest by name is what the trainer resumes from
	 * (docs/trainer-contract.md, "The trainer contract"); once it runs, what it commits
	 * last is newest, whatever its name, so a stray far-future name cannot hide every later
	 * commit, the notice's included (the persister warns). */
	int again = strcmp(name, r->newest) == 0 && ms > r->newest_ms;
	if (r->newest[0] &&
	    (r->scanned ? !rr_checkpoint_later(name, ms, r->newest, r->newest_ms) ||
				  (again && r->cfg->nnodes > 1)
			: rr_checkpoint_compare(name, ms, r->newest, r->newest_ms) <= 0)) {
		if (r->scanned && again && !r->same_name_warned) {
			/* The store keeps a step-numbered name's first commit, and a multi-node
			 * checkpoint's (its parts are committed once): the newer state would never
			 * reach a new machine, silently. Said once. */
			r->same_name_warned = 1;
			rr_warn("checkpoint %s committed again under the same name: the store keeps "
				"the first commit of a %s, so this one is not persisted and a new "
				"machine would resume from the first; commit each checkpoint under a "
				"new name (step-N, as the trainer contract says)", name,
				r->cfg->nnodes > 1 ? "name in a multi-node run"
						   : "step-numbered name");
		}
		rr_debug("checkpoint %s committed (not newer than %s)", name, r->newest);
		return;
	}
	snprintf(r->newest, sizeof(r->newest), "%s", name);
	r->newest_ms = ms;
	rr_cadence_committed(r->cadence, name, ms, rr_mono_ms());
	/* The first commit after the trainer was asked answers the notice (ctime is coarse:
	 * allow 20 ms). It may be a save that was under way when the signal came, the trainer's
	 * real answer coming next: the second commit takes its place, once. Later ones follow
	 * it and never set it aside, or a trainer that commits faster than a persist takes
	 * would leave the notice with nothing durable. One that sorts before it (Lightning's
	 * last.ckpt right after epoch=E-step=S.ckpt) does not: a new machine restores by step
	 * number. */
	if (s_notice_active(r) && r->notice_ckpt[0] && !s_notice_durable(r) &&
	    !r->notice_retaken &&
	    (strcmp(name, r->notice_ckpt) == 0 ||
	     rr_checkpoint_compare(name, ms, r->notice_ckpt, r->notice_ckpt_ms) > 0)) {
		rr_info("checkpoint %s committed after %s: the notice takes it as the trainer's "
			"answer (%s may have been a save under way when it was asked)", name,
			r->notice_ckpt, r->notice_ckpt);
		snprintf(r->notice_ckpt, sizeof(r->notice_ckpt), "%s", name);
		r->notice_ckpt_ms = ms;
		r->notice_retaken = 1;
		urgent = 1;
	} else if (s_notice_active(r) && r->notice_ckpt[0] && !s_notice_durable(r)) {
		rr_info("checkpoint %s committed while the notice's %s is persisting; it follows "
			"once %s is durable", name, r->notice_ckpt, r->notice_ckpt);
	} else if (s_notice_active(r) && r->asked_wall_ms && !r->notice_ckpt[0] &&
		   ms >= r->asked_wall_ms - 20) {
		snprintf(r->notice_ckpt, sizeof(r->notice_ckpt), "%s", name);
		r->notice_ckpt_ms = ms;
		urgent = 1;
		char what[300];
		snprintf(what, sizeof(what), "checkpoint %s committed by the trainer (%.1f s after "
			 "asking)", name, (double)(rr_mono_ms() - r->asked_mono) / 1000.0);
		s_log_step(r, what);
	} else if (restored_copy) {
		rr_debug("checkpoint %s (just restored) is in the checkpoint directory", name);
	} else if (!r->scanned) {
		rr_info("checkpoint %s found in the checkpoint directory", name);
	} else {
		rr_info("checkpoint %s committed", name);
	}
	if (r->scanned && r->child)
		rr_recovery_commit(&r->rec, name, ms);
	if (!restored_copy)
		rr_persister_submit(r->persister, name, ms, urgent);
}

/* A failed persist of the newest checkpoint with the notice's deadline bounding the store's
 * requests, or just lifted (its result may come after): persisted again once it is lifted
 * (s_persist_cut_again), at once if it already is; the notice's own checkpoint too (the
 * machine outlived the deadline: nothing else would persist it, as a trainer that answered
 * commits no more). 1 when it will be persisted again. */
static int s_note_cut(struct s_run *r, const struct rr_persist_result *res)
{
	int bounded = r->deadline_mono != 0;
	int just_lifted = r->deadline_lifted_mono &&
			  rr_mono_ms() - r->deadline_lifted_mono <= CUT_RESULT_MS;

	if (res->rc == 0 || res->rc == RR_EEXIST ||
	    !s_same_commit(res->name, res->committed_ms, r->newest, r->newest_ms) ||
	    s_same_commit(res->name, res->committed_ms, r->cut_retried, r->cut_retried_ms) ||
	    (!bounded && !just_lifted) ||
	    (r->phase == S_FINISHING && (s_notice_going(r) || r->terminate_after)))
		return 0;
	snprintf(r->cut, sizeof(r->cut), "%s", res->name);
	r->cut_ms = res->committed_ms;
	if (!bounded)
		s_persist_cut_again(r);
	return 1;
}

static void s_on_persisted(struct s_run *r, const struct rr_persist_result *res)
{
	int again;

	s_cadence_persisted(r, res);
	again = s_note_cut(r, res);
	if (res->rc == 0 || res->rc == RR_EEXIST) {
		snprintf(r->persisted, sizeof(r->persisted), "%s", res->name);
		r->persisted_ms = res->committed_ms;
	}
	if (s_notice_active(r) && !s_notice_durable(r) && r->notice_ckpt[0] &&
	    !s_same_commit(res->name, res->committed_ms, r->notice_ckpt, r->notice_ckpt_ms) &&
	    s_same_commit(res->name, res->committed_ms, r->newest, r->newest_ms) &&
	    (res->rc == 0 || res->rc == RR_EEXIST)) {
		/* A commit after the notice's checkpoint (which is after the ask) is durable
		 * first, the notice's own having failed or being still under way: it answers the
		 * notice, or nothing ever would once the notice's is passed over as not the
		 * newest. */
		rr_info("checkpoint %s, committed after the notice's %s, answers the notice",
			res->name, r->notice_ckpt);
		snprintf(r->notice_ckpt, sizeof(r->notice_ckpt), "%s", res->name);
		r->notice_ckpt_ms = res->committed_ms;
	}
	if (!s_notice_active(r) ||
	    !s_same_commit(res->name, res->committed_ms, r->notice_ckpt, r->notice_ckpt_ms) ||
	    s_notice_durable(r))
		return;
	if (res->rc == 0 || res->rc == RR_EEXIST) {
		s_notice_made_durable(r);
	} else if (!s_same_commit(res->name, res->committed_ms, r->newest, r->newest_ms)) {
		/* It failed, and a newer commit followed it: that one answers the notice now. */
		rr_warn("the notice's checkpoint %s was not persisted; the notice takes the newer "
			"%s", res->name, r->newest);
		snprintf(r->notice_ckpt, sizeof(r->notice_ckpt), "%s", r->newest);
		r->notice_ckpt_ms = r->newest_ms;
		rr_persister_submit(r->persister, r->newest, r->newest_ms, 1);
		return;
	} else if (!again) {
		r->notice_ckpt[0] = '\0'; /* the trainer's next commit answers it */
	}
	if (r->terminate_after)
		s_forward_term(r, res->rc == 0 || res->rc == RR_EEXIST ?
					  "checkpoint durable" : "persist failed");
}

/* ---- suspect and proven checkpoints ---- */

/* A framework that finds its checkpoint through a pointer file (DeepSpeed's `latest`) gets it
 * back beside the restored directory (docs/trainer-contract.md, "The trainer contract",
 * "Order"). Returns the pointer file's name, or NULL when the rule has none. */
static const char *s_write_pointer(struct s_run *r, const char *name)
{
	const char *pointer = NULL;
	int rc = rr_commit_write_pointer(&r->cfg->commit, r->ckpt_dir, name, &pointer);

	if (rc)
		rr_warn("cannot write the pointer file naming the restored %s: %s", name,
			rr_strerror(rc));
	else if (pointer)
		rr_info("wrote %s naming %s", pointer, name);
	return rc ? NULL : pointer;
}

static int64_t s_entry_ctime_ms(const struct s_run *r, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	if (!name || snprintf(path, sizeof(path), "%s/%s", r->ckpt_dir, name) >= (int)sizeof(path) ||
	    lstat(path, &st) != 0)
		return 0;
	return (int64_t)st.st_ctim.tv_sec * 1000 + st.st_ctim.tv_nsec / 1000000;
}

/* name was just restored into the checkpoint directory (its manifest committed at
 * committed_ms), its pointer file written: what tells its copy from the trainer's commits. */
static void s_note_restored(struct s_run *r, const char *name, int64_t committed_ms)
{
	const char *pointer = s_write_pointer(r, name);
	int64_t a = s_entry_ctime_ms(r, name), b = s_entry_ctime_ms(r, pointer);

	snprintf(r->restored, sizeof(r->restored), "%s", name);
	r->restored_committed_ms = committed_ms;
	r->restored_ms = a > b ? a : b;
	if (!r->restored_ms)
		r->restored_ms = rr_wall_ms(); /* gone already: no commit of it can be its copy */
}

/* A checkpoint the trainer resumed from is proven once a newer one it committed is
 * durable: the persister writes the mark with the ledger event (rr/marks.h). */
static void s_note_proven(struct s_run *r, const struct rr_persist_result *res)
{
	cJSON *ev;

	if ((res->rc != 0 && res->rc != RR_EEXIST) ||
	    !rr_recovery_durable(&r->rec, res->name, res->committed_ms))
		return;
	/* The same name committed again replaced the commit resumed from in the store: there
	 * is nothing left of it to mark, and the mark would name the new one, never resumed
	 * from. */
	if (strcmp(res->name, r->rec.from) == 0)
		return;
	ev = cJSON_CreateObject();
	if (!ev)
		return;
	cJSON_AddStringToObject(ev, "checkpoint", r->rec.from);
	cJSON_AddStringToObject(ev, "committed_after", res->name);
	rr_persister_record(r->persister, "proven", ev);
}

/* The commit time recorded in name's manifest in the store: what a suspect mark names. */
static int s_stored_committed_ms(struct s_run *r, const char *name, int64_t *out)
{
	struct rr_manifest *m = NULL;
	char key[RR_KEY_MAX], why[200];
	struct rr_buf b;
	int rc = rr_key_manifest(key, r->cfg->run_id, name);

	rr_buf_init(&b, RR_MANIFEST_MAX_BYTES);
	if (!rc)
		rc = rr_store_get(r->store, key, &b, NULL);
	if (!rc)
		rc = rr_manifest_parse((const char *)b.data, b.len, &m, why, sizeof(why));
	if (!rc)
		*out = m->committed_unix_ms;
	rr_manifest_destroy(m);
	rr_buf_free(&b);
	return rc;
}

/* The store's commit of the suspect name (committed at stored_ms) is the one the failing
 * attempts resumed from. A step-numbered name has one commit; one without may hold an
 * earlier commit while the later one the trainer failed from never got there (its persist
 * cut short by the mark): that earlier one is not suspect. */
static int s_stored_is_from(const struct s_run *r, int64_t stored_ms)
{
	uint64_t step;

	if (rr_checkpoint_step(r->rec.from, &step))
		return 1;
	/* Its persist made it the store's copy, or found the very same content there (saved
	 * again unchanged: the store keeps its first commit time). */
	if (strcmp(r->rec.from, r->persisted) == 0 && r->rec.from_ms == r->persisted_ms)
		return 1;
	if (strcmp(r->rec.from, r->restored) == 0 && r->rec.from_ms <= r->restored_ms)
		return stored_ms == r->restored_committed_ms;
	return stored_ms == r->rec.from_ms;
}

/* The suspect checkpoint leaves the trainer's sight: a dot-name is never a checkpoint. */
static void s_move_aside(struct s_run *r, const char *name)
{
	char to[PATH_MAX];
	int err = s_rename_aside(r, name, "suspect", to, sizeof(to));

	if (!err)
		rr_info("moved the suspect %s aside to %s", name, to);
	else if (err != ENOENT)
		rr_warn("cannot move the suspect %s aside (%s); the trainer may still find it",
			name, strerror(err));
}

/* Puts the newest checkpoint in the store that is not suspect where the trainer starts
 * from, instead of suspect x; instead receives its name ("" when none is left: a fresh
 * start). same_name: the store's x is an earlier commit than the suspect one, and may take
 * its place (the restore sets the local one aside). Returns 0, or the error that leaves
 * the trainer to start from x again. */
static int s_restore_before(struct s_run *r, const char *x, int same_name, char *instead,
			    size_t cap)
{
	struct rr_catalog *c = NULL;
	struct rr_restore_stats st;
	const struct rr_catalog_entry *e;
	int rc = rr_catalog_list(r->store, r->cfg->run_id, &c);

	instead[0] = '\0';
	if (!rc)
		rc = rr_restore_newest(r->store, c, r->cfg->nnodes, r->cfg->node_rank, r->ckpt_dir,
				       r->cfg->threads, instead, cap, &st);
	if (rc == RR_ENOENT) {
		instead[0] = '\0';
		rc = 0;
	}
	if (rc || (strcmp(instead, x) == 0 && !same_name)) {
		rr_catalog_destroy(c);
		return rc ? rc : RR_EEXIST;
	}
	if (strcmp(instead, x) != 0)
		s_move_aside(r, x);
	snprintf(r->newest, sizeof(r->newest), "%s", instead);
	r->restored[0] = '\0';
	r->newest_ms = 0;
	e = instead[0] ? rr_catalog_find(c, instead) : NULL;
	if (e && e->manifest) {
		struct rr_manifest *m = e->manifest;
		((struct rr_catalog_entry *)e)->manifest = NULL; /* taken over by the persister */
		s_note_restored(r, instead, m->committed_unix_ms);
		r->newest_ms = r->restored_ms;
		rr_persister_rewind(r->persister, instead, m->committed_unix_ms, m);
	} else {
		rr_persister_rewind(r->persister, "", 0, NULL);
	}
	rr_catalog_destroy(c);
	return 0;
}

/* The newest checkpoint here is one file that its own format finds cut short (the trainer
 * died rewriting it in place, the disk filled up): not what was committed. */
static int s_newest_cut(const struct s_run *r)
{
	char path[PATH_MAX];

	return r->newest[0] &&
	       snprintf(path, sizeof(path), "%s/%s", r->ckpt_dir, r->newest) < (int)sizeof(path) &&
	       rr_format_file_state_at(AT_FDCWD, path) == RR_FILE_CUT;
}

/* Before a restart: a newest checkpoint cut short here is replaced by the store's newest (the
 * last commit of it that got there, the local one set aside), so the trainer does not fail on
 * it again; the attempts that failed on it say nothing of the checkpoint, so nothing is
 * marked suspect for them. */
static void s_replace_cut_newest(struct s_run *r)
{
	char x[256], instead[256];

	if (!s_newest_cut(r))
		return;
	snprintf(x, sizeof(x), "%s", r->newest);
	rr_warn("checkpoint %s here is not whole (a save cut short when the trainer stopped): "
		"the store's newest takes its place", x);
	r->suspect_due = 0;
	if (s_restore_before(r, x, 1, instead, sizeof(instead)) != 0)
		rr_error("cannot put the store's checkpoint in place of %s; restarting from it", x);
	else if (instead[0])
		rr_info("restarting the trainer from the store's %s", instead);
	else
		rr_warn("no checkpoint in the store in place of %s: the trainer starts afresh", x);
}

/* The trainer failed suspect_after times after resuming from rec.from with nothing newer: that
 * checkpoint is marked suspect in the store (docs/how-it-works.md, "Suspect and proven
 * checkpoints") and, when the trainer starts again here (restore_before), the one before takes
 * its place. Runs while the trainer is down: the restart waits for it. */
static void s_set_suspect_aside(struct s_run *r, int restore_before)
{
	struct rr_suspect m = { .failures = r->rec.failures, .exit_status = r->suspect_code };
	char x[256], instead[256] = "";
	int rc, marked, other, placed = 0;
	cJSON *ev;

	r->suspect_due = 0;
	snprintf(x, sizeof(x), "%s", r->rec.from);
	/* Its persist, if one is under way, must not commit it after the mark looked for it. */
	rr_persister_drop(r->persister, x);
	snprintf(m.host, sizeof(m.host), "%s", rr_hostname());
	snprintf(m.why, sizeof(m.why), "the trainer failed %u times after resuming from it, "
		 "last with exit status %d", r->rec.failures, r->suspect_code);
	rc = s_stored_committed_ms(r, x, &m.for_committed_ms);
	other = !rc && !s_stored_is_from(r, m.for_committed_ms);
	if (!rc && !other)
		rc = rr_mark_suspect(r->store, r->cfg->run_id, x, &m);
	marked = rc == 0 && !other;
	if (marked)
		rr_warn("checkpoint %s marked suspect: %s", x, m.why);
	else if (other)
		rr_warn("checkpoint %s is suspect (%s); the store holds an earlier commit of it, "
			"which is not marked and takes its place", x, m.why);
	else if (rc == RR_ENOENT)
		rr_warn("checkpoint %s is suspect (%s) but not in the store: nothing to mark", x,
			m.why);
	else
		rr_error("cannot mark checkpoint %s suspect in the store (%s): %s", x,
			 rr_store_strerror(rc), m.why);
	if (restore_before && (marked || other || rc == RR_ENOENT)) {
		rc = s_restore_before(r, x, other, instead, sizeof(instead));
		placed = rc == 0;
		if (placed && strcmp(instead, x) == 0)
			rr_warn("restarting the trainer from the store's earlier commit of %s", x);
		else if (placed && instead[0])
			rr_warn("restarting the trainer from %s, the checkpoint before suspect %s",
				instead, x);
		else if (placed)
			rr_warn("no checkpoint before suspect %s: the trainer starts afresh", x);
		else
			rr_error("cannot put the checkpoint before %s in its place (%s); restarting "
				 "from %s", x, rc == RR_EEXIST ? "none other in the store"
							   : rr_store_strerror(rc), x);
	}
	ev = cJSON_CreateObject();
	if (!ev)
		return;
	cJSON_AddStringToObject(ev, "checkpoint", x);
	cJSON_AddNumberToObject(ev, "failures", (double)r->rec.failures);
	cJSON_AddNumberToObject(ev, "exit_status", r->suspect_code);
	cJSON_AddBoolToObject(ev, "marked", marked);
	if (placed)
		cJSON_AddStringToObject(ev, "restored_instead", instead);
	rr_persister_record(r->persister, "suspect", ev);
}

/* ---- signals and the trainer's exit ---- */

/* A multi-node job's trainer that exits 0 may have left for a notice another node got: its
 * ranks agree on a notice (resume_run.agree) faster than the store's listing, once a second,
 * brings it here. One listing more before the run is called finished, or this node would
 * exit 0 (done) while the job was preempted. */
static void s_last_look_for_notices(struct s_run *r)
{
	struct rr_notice n;

	if (rr_fanout_poll_now(r->fanout, FANOUT_LAST_LOOK_MS) != 0) {
		rr_warn("could not look for the other nodes' notices before leaving");
		return;
	}
	if (rr_fanout_next(r->fanout, &n)) {
		rr_info("notice from another node of the job (the trainer has already left)");
		s_on_cloud_notice(r, &n);
	}
}

static void s_on_child_exit(struct s_run *r)
{
	int code = rr_exit_code_from_status(r->child_status);
	int going;

	/* A checkpoint file it closed whole in place just before exiting commits now, as its
	 * attempt's (nothing can move it away any more), not after its settle time. */
	if (rr_watcher_flush(r->watcher, s_on_commit, r) != 0)
		rr_warn("checkpoint watcher error; rescanning");

	if (WIFSIGNALED(r->child_status))
		rr_info("trainer was killed by SIG%s (exit status %d)",
			rr_signal_name(WTERMSIG(r->child_status)), code);
	else
		rr_info("trainer exited with status %d", code);
	r->child = 0;
	r->child_exited = 0; /* taken: the next loop pass does not take it again */
	r->ask_pending = 0;
	if (code == 0 && r->fanout && !s_notice_active(r))
		s_last_look_for_notices(r);
	/* The notice stopped it only while the notice stands: a trainer that outlived a
	 * preemption's deadline, or trained on after a precaution, ends with its own status. */
	going = s_notice_going(r);
	if (code == 0 || going || r->terminate_after) {
		s_transition(r, S_FINISHING, r->nstate);
		s_decide(r, code);
		/* Whatever the trainer's own status, the work is not done. */
		r->preempted = going || r->terminate_after;
		/* It left at the notice with no commit answering it: it read the notice file
		 * and exited, its last commit made just before the request, or before the
		 * notice itself (the example trainer checks should_exit() after every commit). */
		if (going && !r->notice_ckpt[0] && !s_notice_durable(r) && r->newest[0]) {
			rr_info("the trainer left with no checkpoint answering the notice: its last, "
				"%s, is the notice's", r->newest);
			s_notice_takes_newest(r);
		}
		if (!r->preempted && r->outlived && code == 0 &&
		    s_same_commit(r->newest, r->newest_ms, r->outlived_newest,
				  r->outlived_newest_ms)) {
			/* It left for the notice as it was told, however long it took (a save
			 * past the deadline, an evaluation after train() returned): its 0 is not a
			 * finished run, and the job must run on from the store's newest. */
			rr_info("the trainer exited 0 after outliving the notice with nothing committed "
				"since: taken as leaving for the notice");
			r->preempted = 1;
		} else if (!r->preempted && r->outlived && code == 0) {
			rr_info("the trainer finished after outliving the notice");
		}
		return;
	}
	if (rr_recovery_failed(&r->rec, code)) {
		r->suspect_due = 1;
		r->suspect_code = code;
	}
	if (r->restarts >= r->cfg->max_restarts) {
		if (r->cfg->max_restarts)
			rr_error("trainer failed %u times; giving up", r->restarts + 1);
		if (r->suspect_due && !s_newest_cut(r))
			s_set_suspect_aside(r, 0); /* the next machine starts from the one before */
		s_transition(r, S_FINISHING, r->nstate);
		s_decide(r, code);
		return;
	}
	/* What the failed attempt left running goes now; what still runs at the restart is
	 * killed then. */
	s_signal_leftovers(r, SIGTERM);
	r->restarts++;
	r->attempt++;
	int64_t delay = 1000LL << (r->restarts - 1 < 5 ? r->restarts - 1 : 5);
	if (delay > RESTART_BACKOFF_MAX_MS)
		delay = RESTART_BACKOFF_MAX_MS;
	s_transition(r, S_RESTART_WAIT, r->nstate);
	r->restart_at = rr_mono_ms() + delay;
	rr_info("restarting the trainer in %.0f s (restart %u of %u)%s%s", (double)delay / 1000.0,
		r->restarts, r->cfg->max_restarts, r->newest[0] ? " from " : "", r->newest);
	cJSON *ev = cJSON_CreateObject();
	if (ev) {
		cJSON_AddNumberToObject(ev, "exit_status", code);
		cJSON_AddNumberToObject(ev, "attempt", r->attempt);
		if (r->newest[0])
			cJSON_AddStringToObject(ev, "checkpoint", r->newest);
		rr_persister_record(r->persister, "restart", ev);
	}
}

/* SIGTERM/SIGINT's deadline, now + --grace, unless one comes sooner already; the store's
 * requests end there too. */
static void s_bound_by_grace(struct s_run *r, int deadline_ours)
{
	int64_t by = rr_mono_ms() + r->cfg->grace_ms;

	/* Another node's deadline (s_deadline_is_ours), even one past, is that machine's: this
	 * one's grace replaces it. */
	if (!deadline_ours || !r->deadline_mono || r->deadline_mono > by)
		r->deadline_mono = by;
	rr_store_set_deadline(r->store, r->deadline_mono);
}

static void s_on_signal(struct s_run *r, int sig)
{
	if (sig == SIGCHLD) {
		int exited = 0, status = 0;
		rr_supervisor_reap(r->child, &exited, &status);
		if (exited && r->child) {
			r->child_exited = 1;
			r->child_status = status;
		}
		return;
	}
	if (sig == SIGTERM || sig == SIGINT) {
		/* A trainer that finished (exit 0) before the signal came, both read in one batch
		 * (the signal first: signalfd gives lower numbers first): its exit is seen first,
		 * after the commits it made, as when they come in that order. One the signal
		 * itself ended (Ctrl-C to the terminal's foreground group) was stopped by it. */
		if (r->child && !r->child_exited) {
			int exited = 0, status = 0;
			rr_supervisor_reap(r->child, &exited, &status);
			if (exited) {
				r->child_exited = 1;
				r->child_status = status;
			}
		}
		if (r->child && r->child_exited && WIFEXITED(r->child_status) &&
		    WEXITSTATUS(r->child_status) == 0) {
			if (rr_watcher_process(r->watcher, s_on_commit, r) != 0)
				rr_warn("checkpoint watcher error; rescanning");
			s_on_child_exit(r);
		}
		if (!r->child) {
			/* No trainer running (waiting to restart, or leaving): leave. A status
			 * already decided stands: a finished trainer's 0 is not lost to a `docker
			 * stop` during its last upload. */
			rr_info("SIG%s with no trainer running: leaving", rr_signal_name(sig));
			/* Waiting to restart a failed trainer: its status is the one to leave
			 * with (--preempted-exit-code 0: "the trainer's own"), decided as the
			 * machine is found going. */
			if (r->phase != S_RESTART_WAIT)
				s_decide(r, 128 + sig);
		}
		if (!r->child && r->phase == S_FINISHING) {
			/* The uploads still running are bounded by the grace as a notice's are; a
			 * second signal stops waiting for them. */
			if (r->terminate_after)
				rr_persister_cancel(r->persister, "told again to leave");
			else
				s_bound_by_grace(r, s_deadline_is_ours(r));
			r->terminate_after = 1;
			return;
		}
		if (r->terminate_after) {
			rr_info("SIG%s again: no more waiting, forwarding it to the trainer",
				rr_signal_name(sig));
			if (rr_supervisor_signal_tree(r->child, sig, RR_TREE_ALL) < 0 && r->child > 0)
				kill(-r->child, sig);
			r->term_forwarded = 1;
			return;
		}
		struct rr_notice n = { .kind = RR_NOTICE_TERMINATE, .source = RR_SOURCE_SIGNAL };
		n.received_unix = rr_wall_ms() / 1000;
		n.deadline_unix = n.received_unix + r->cfg->grace_ms / 1000;
		int ours = s_deadline_is_ours(r);
		r->terminate_after = 1;
		if (s_notice_active(r)) {
			/* Already checkpointing for another notice: SIGTERM once that is durable.
			 * Either way --grace bounds what still uploads (a later save after a
			 * durable one too): the launcher's SIGKILL follows it. */
			s_bound_by_grace(r, ours);
			if (s_notice_durable(r))
				s_forward_term(r, "checkpoint already durable");
			if (r->phase == S_RESTART_WAIT)
				s_going_between_attempts(r);
			return;
		}
		s_start_notice(r, &n); /* waiting to restart: the trainer is not restarted */
		return;
	}
	if (r->child <= 0 || r->child_exited)
		return;
	if (sig == r->cfg->checkpoint_signal) {
		/* `kill -USR1` to the agent, Slurm's --signal=B:USR1: a checkpoint request, sent
		 * where the agent's own go (processes with a handler), not to a wrapper (sh -c,
		 * torchrun) that would die of it. */
		rr_info("SIG%s: asking the trainer for a checkpoint", rr_signal_name(sig));
		s_ask_checkpoint(r);
		return;
	}
	kill(r->child, sig);
}

static void s_collect_results(struct s_run *r)
{
	struct rr_persist_result res[8];
	size_t k;
	while ((k = rr_persister_collect(r->persister, res, 8)) > 0)
		for (size_t i = 0; i < k; i++) {
			s_note_proven(r, &res[i]);
			s_on_persisted(r, &res[i]);
		}
}

static int64_t s_min_timeout(int64_t cur, int64_t at, int64_t now)
{
	int64_t t = at > now ? at - now : 0;
	return cur < 0 || t < cur ? t : cur;
}

static void s_deadline_missed(void)
{
	rr_warn("deadline passed with the persist unfinished; the store keeps its previous "
		"checkpoint");
}

/* Leaving, with the trainer and every process it left gone: nothing more can commit, so
 * the watches go now, while the last persist runs, rather than at the exit, where closing
 * the watcher would wait for the kernel to retire them (rr_watcher_stop). With a leftover
 * still running they stay: it may yet commit. */
static void s_stop_watching(struct s_run *r)
{
	r->watch_stopped = 1;
	if (rr_supervisor_signal_descendants(r->pgid, 0) != 0)
		return;
	if (rr_watcher_stop(r->watcher, s_on_commit, r) != 0)
		rr_warn("checkpoint watcher error while leaving");
}

/* While finishing: stops the retention once the persists at exit have had their time, and
 * says whether the loop is done (1): no persist left, or the notice's deadline passed with
 * one unfinished, which is then cancelled. */
static int s_finished(struct s_run *r, int64_t now)
{
	if (r->phase != S_FINISHING)
		return 0;
	if (!r->retention_stopped && now >= r->finishing_since + RETENTION_AT_EXIT_MS) {
		rr_persister_leaving(r->persister);
		r->retention_stopped = 1;
	}
	if (!rr_persister_busy(r->persister)) {
		s_collect_results(r); /* the last ones may have arrived since the poll */
		/* One of them cut by a precaution's deadline (a rebalance as the trainer
		 * finished) is persisted again, at once if the deadline is past, or once it is
		 * (s_check_deadline): waited for only where the deadline can have cut it, not
		 * for any failure under a maintenance deadline days away. */
		if (rr_persister_busy(r->persister) ||
		    (r->cut[0] && r->deadline_mono && r->deadline_mono - now <= CUT_NEAR_MS &&
		     s_notice_active(r) && !s_notice_going(r) && !r->terminate_after))
			return 0;
		/* Ended by the deadline's end of its requests: the same miss as below. */
		if (r->deadline_mono && !s_notice_durable(r) &&
		    rr_mono_ms() >= r->deadline_mono - DEADLINE_SLACK_MS)
			s_deadline_missed();
		return 1;
	}
	/* The deadline cuts what still uploads only where the machine is going: a signal's
	 * grace (a second one, or SIGKILL, follows it), or a preemption whose checkpoint is not
	 * durable yet. A precaution's deadline cuts nothing (s_check_deadline ends it). */
	if (r->deadline_mono && now >= r->deadline_mono && s_deadline_is_ours(r) &&
	    (r->terminate_after || (s_notice_going(r) && !s_notice_durable(r)))) {
		s_deadline_missed();
		rr_persister_cancel(r->persister, r->terminate_after ? "the signal's grace ran out"
								      : "the notice's deadline passed");
		return 1;
	}
	return 0;
}

/* How long poll may sleep: until the first timer due (the loop's only clock), at most a
 * minute; -1: no timer, only events wake it. */
static int s_poll_timeout(const struct s_run *r, int64_t now)
{
	int64_t timeout = -1;

	if (r->restore_event)
		timeout = s_min_timeout(timeout, r->restore_event_by, now);
	if (r->phase == S_FINISHING && !r->retention_stopped)
		timeout = s_min_timeout(timeout, r->finishing_since + RETENTION_AT_EXIT_MS, now);
	if (r->cfg->notice_file)
		timeout = s_min_timeout(timeout, now + NOTICE_FILE_POLL_MS, now);
	if (r->ask_pending)
		timeout = s_min_timeout(timeout, now + HANDLER_RETRY_MS, now);
	if (r->next_every)
		timeout = s_min_timeout(timeout, r->next_every, now);
	if (r->phase == S_RESTART_WAIT)
		timeout = s_min_timeout(timeout, r->restart_at, now);
	if (rr_watcher_next_at(r->watcher))
		timeout = s_min_timeout(timeout, rr_watcher_next_at(r->watcher), now);
	/* Woken at the deadline (once: past it, nothing waits for it). */
	if (r->deadline_mono > now && (s_notice_active(r) || r->terminate_after ||
				       r->phase == S_FINISHING))
		timeout = s_min_timeout(timeout, r->deadline_mono, now);
	return (int)(timeout < 0 ? -1 : timeout > 60000 ? 60000 : timeout);
}

/* What poll woke for: signals, commits, persist results, notices (the cloud's, then the
 * other nodes'), and last the trainer's exit, so that a commit just before it counts. */
static void s_on_events(struct s_run *r, const struct pollfd *fds)
{
	if (fds[0].revents & POLLIN) {
		struct signalfd_siginfo si;
		while (read(r->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			s_on_signal(r, (int)si.ssi_signo);
	}
	/* Commits before exits: a trainer that commits and exits at once is seen in order. */
	if (rr_watcher_process(r->watcher, s_on_commit, r) != 0)
		rr_warn("checkpoint watcher error; rescanning");
	if (fds[2].revents & POLLIN)
		s_collect_results(r);
	if (fds[3].revents & POLLIN) {
		struct rr_notice cn;
		while (rr_cloud_watch_next(r->cloud, &cn))
			s_on_cloud_notice(r, &cn);
	}
	s_warn_local_store(r, NULL);
	if (fds[4].revents & POLLIN) {
		struct rr_notice nn;
		while (rr_fanout_next(r->fanout, &nn)) {
			rr_info("notice from another node of the job");
			s_on_cloud_notice(r, &nn);
		}
	}
	if (r->child && r->child_exited)
		s_on_child_exit(r);
	if (r->phase == S_FINISHING && !r->child && !r->watch_stopped)
		s_stop_watching(r);
}

/* The timers due at now: the drill file, a checkpoint request to retry or due by --every,
 * the deadline, and the restart after a failure. */
static void s_on_timers(struct s_run *r, int64_t now)
{
	if (r->cfg->notice_file)
		s_check_notice_file(r);
	if (r->ask_pending)
		s_ask_checkpoint(r);
	if (r->next_every && now >= r->next_every) {
		/* Paused only while this machine is going (the trainer was asked, and leaves): a
		 * precaution changes nothing, and one that never gets its checkpoint (a request the
		 * trainer dropped, a persist that failed) must not end the periodic ones for the
		 * rest of the run; their commit answers it. */
		if (!s_notice_going(r) && !r->terminate_after)
			s_ask_checkpoint(r);
		rr_cadence_fired(r->cadence, now);
		r->next_every = rr_cadence_next(r->cadence, rr_wall_ms());
	}
	if (r->terminate_after && r->deadline_mono && now >= r->deadline_mono)
		s_forward_term(r, "deadline reached before the checkpoint was durable");
	s_check_deadline(r, now);
	if (r->phase == S_RESTART_WAIT && now >= r->restart_at) {
		s_transition(r, S_TRAINING, r->nstate);
		s_kill_leftovers(r, LEFTOVER_GRACE_MS);
		s_replace_cut_newest(r);
		if (r->suspect_due)
			s_set_suspect_aside(r, 1);
		int rc = s_launch(r);
		if (rc) {
			s_transition(r, S_FINISHING, r->nstate);
			s_decide(r, rc);
		} else if (s_notice_active(r) && !r->notice_ckpt[0]) {
			/* A precaution that came while the trainer was down, or that the failed
			 * attempt never answered: the new one is asked once it has a handler. */
			s_ask_checkpoint(r);
		}
	}
}

/* The event loop, tini's shape: wait (poll, its timeout the next timer), handle what came,
 * run the timers due, until the trainer is gone and the last persist is done. Returns the
 * process's exit status. */
static int s_loop(struct s_run *r)
{
	struct pollfd fds[5] = {
		{ .fd = r->sfd, .events = POLLIN },
		{ .fd = rr_watcher_fd(r->watcher), .events = POLLIN },
		{ .fd = rr_persister_fd(r->persister), .events = POLLIN },
		{ .fd = rr_cloud_watch_fd(r->cloud), .events = POLLIN }, /* -1: ignored */
		{ .fd = rr_fanout_fd(r->fanout), .events = POLLIN },      /* -1: ignored */
	};

	for (;;) {
		int64_t now = rr_mono_ms();

		s_cadence_tick(r);
		s_flush_restore_event(r, r->phase == S_FINISHING);
		if (s_finished(r, now))
			break;
		if (poll(fds, 5, s_poll_timeout(r, now)) < 0 && errno != EINTR) {
			rr_error("poll: %s", strerror(errno));
			return EXIT_AGENT_ERROR;
		}
		s_on_events(r, fds);
		s_on_timers(r, rr_mono_ms());
	}
	/* A finished trainer's 0 stands through SIGTERM or a preemption only with its newest
	 * checkpoint durable: one whose upload the grace or the deadline cut is on a disk about
	 * to go, and the job must run again from the store's newest to make it again. */
	if (!r->preempted && (r->terminate_after || s_notice_going(r)) && r->exit_code == 0 &&
	    r->newest[0] && !s_newest_durable(r)) {
		rr_error("checkpoint %s was not made durable before leaving (a notice, or a signal, "
			 "came while it uploaded); the store's newest stays %s: leaving as preempted, "
			 "so that the job runs again from it", r->newest,
			 r->persisted[0] ? r->persisted : r->restored[0] ? r->restored : "none");
		r->preempted = 1;
	}
	/* So that Kubernetes, systemd, docker and Slurm relaunch the job (docs/how-it-works.md,
	 * "How it works" step 6). */
	if (r->preempted && r->cfg->preempted_exit_code) {
		rr_info("leaving with status %d: stopped by a notice (trainer's own status %d)",
			r->cfg->preempted_exit_code, r->exit_code);
		return r->cfg->preempted_exit_code;
	}
	return r->exit_code;
}

/* ---- start-up ---- */

/* The suspect checkpoints the restore's walk read (those newer than what it restored). */
static void s_note_passed_over(struct s_run *r, const struct rr_catalog *c)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct rr_catalog_entry *e = &c->entries[i];
		char(*grown)[256];

		if (!e->opened || !rr_catalog_is_suspect(e))
			continue;
		grown = realloc(r->passed, (r->npassed + 1) * sizeof(*r->passed));
		if (!grown)
			return; /* out of memory: a local copy may be resumed from, as before */
		r->passed = grown;
		snprintf(r->passed[r->npassed++], sizeof(r->passed[0]), "%s", e->name);
	}
}

/* *chunks: the store's chunks as this lookup listed them, for the first persist. */
static int s_restore_at_start(struct s_run *r, struct rr_manifest **baseline,
			      struct rr_chunk_index **chunks)
{
	struct rr_catalog *c = NULL;
	struct rr_restore_stats st;
	char name[256], lease[RR_READER_TOKEN_MAX] = "";
	int64_t listed_mono = rr_mono_ms();
	int rc;

	*baseline = NULL;
	rc = rr_catalog_list(r->store, r->cfg->run_id, &c);
	if (r->store->stopped) {
		/* Stopped by a signal (the caller says so): manifests it could not read are
		 * not worth a warning each. */
		rr_catalog_destroy(c);
		return EXIT_AGENT_ERROR;
	} else if (rc) {
		rr_error("cannot read run '%s' in store %s: %s", r->cfg->run_id, r->store->url,
			 rr_store_strerror(rc));
		return EXIT_AGENT_ERROR;
	}
	/* When the listing began, by the store's clock (its answers just told it), which the
	 * chunks' ages are in. */
	*chunks = rr_chunk_index_of_catalog(c, rr_store_now_ms(r->store) -
						   (rr_mono_ms() - listed_mono));
	if (c->n == 0) {
		rr_info("no checkpoint of run '%s' in %s: fresh start", r->cfg->run_id,
			r->store->url);
		rr_catalog_destroy(c);
		/* The ledger says when this machine began even before its first checkpoint. */
		r->restore_event = cJSON_CreateObject();
		if (r->restore_event) {
			cJSON_AddNumberToObject(r->restore_event, "started_unix_ms",
						(double)r->started_wall_ms);
			r->restore_event_kind = "start";
			r->restore_event_by = rr_mono_ms() + 10000;
		}
		return 0;
	}
	rc = rr_restore_newest_leased(r->store, c, r->cfg->nnodes, r->cfg->node_rank, r->ckpt_dir,
				      r->cfg->threads, name, sizeof(name), &st, lease);
	s_note_passed_over(r, c);
	if (!rc && lease[0]) {
		/* No notice bounds the store yet, nor does anything else use it. */
		rr_store_set_deadline(r->store, rr_mono_ms() + LEASE_RELEASE_MS);
		rr_reader_end(r->store, r->cfg->run_id, name, lease);
		rr_store_set_deadline(r->store, 0);
	}
	if (rc && r->store->stopped) {
		rr_catalog_destroy(c);
		return EXIT_AGENT_ERROR;
	} else if (rc == RR_ECORRUPT && r->cfg->nnodes > 1) {
		/* Said already: the damaged checkpoint is marked for every node, relaunch. */
		rr_catalog_destroy(c);
		return EXIT_AGENT_ERROR;
	} else if (rc == RR_ENOENT) {
		rr_error("no checkpoint of run '%s' is left to restore: those in the store are "
			 "marked suspect or not committed (`resume-run ls` shows which; `resume-run "
			 "unmark --checkpoint NAME` clears a suspect mark); not starting from scratch "
			 "over them (use another --run-id for a fresh start)", r->cfg->run_id);
		rr_catalog_destroy(c);
		return EXIT_AGENT_ERROR;
	} else if (rc) {
		rr_error("no checkpoint of run '%s' could be restored (%s); not starting from "
			 "scratch over them (use another --run-id for a fresh start)",
			 r->cfg->run_id, rr_strerror(rc));
		rr_catalog_destroy(c);
		return EXIT_AGENT_ERROR;
	}
	char b1[16], b2[16], b3[16], shared[80] = "";
	{
		const struct rr_catalog_entry *e = rr_catalog_find(c, name);
		s_note_restored(r, name, e && e->manifest ? e->manifest->committed_unix_ms : 0);
	}
	if (st.unused_bytes)
		snprintf(shared, sizeof(shared), ", %s of it other checkpoints' data in shared "
			 "packs", rr_format_bytes(st.unused_bytes, b3));
	if (st.already_present)
		rr_info("checkpoint %s is already here and identical; nothing copied", name);
	else
		rr_info("restored %s: %llu files, %s (%s read from the store%s, %llu files already "
			"here) in %.2f s",
			name, (unsigned long long)st.files, rr_format_bytes(st.bytes, b1),
			rr_format_bytes(st.downloaded_bytes, b2), shared,
			(unsigned long long)st.kept_files, (double)st.elapsed_ms / 1000.0);
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->entries[i].name, name) == 0) {
			*baseline = c->entries[i].manifest; /* taken over by the persister */
			c->entries[i].manifest = NULL;
		}
	cJSON *ev = cJSON_CreateObject();
	if (ev) {
		cJSON_AddStringToObject(ev, "checkpoint", name);
		cJSON_AddNumberToObject(ev, "bytes", (double)st.bytes);
		cJSON_AddNumberToObject(ev, "downloaded_bytes", (double)st.downloaded_bytes);
		cJSON_AddNumberToObject(ev, "unused_bytes", (double)st.unused_bytes);
		cJSON_AddNumberToObject(ev, "elapsed_ms", (double)st.elapsed_ms);
		cJSON_AddBoolToObject(ev, "already_present", st.already_present);
		cJSON_AddNumberToObject(ev, "fallbacks", (double)st.fallbacks);
		if (st.suspects)
			cJSON_AddStringToObject(ev, "passed_over_suspect", st.suspect);
		cJSON_AddNumberToObject(ev, "started_unix_ms", (double)r->started_wall_ms);
		r->restore_event = ev; /* recorded from the loop, with the instance identity */
		r->restore_event_kind = "restore";
		r->restore_event_by = rr_mono_ms() + 10000;
	}
	rr_catalog_destroy(c);
	return 0;
}

/* Signals during the start-up restore, which runs on this thread: a thread of its own reads
 * the signalfd meanwhile, and SIGINT/SIGTERM cancel the store, so a long restore ends at
 * Ctrl-C or `docker stop` instead of running to its end and starting the trainer anyway. */
struct s_restore_guard {
	struct s_run *r;
	int stop[2];
	pthread_t tid;
	int running;
	volatile int sig; /* the SIGINT/SIGTERM that stopped the restore, or 0 */
	/* A cloud's notice during the restore: a preemption stops it (going); a precaution
	 * waits for the trainer (pending). Read by the main thread after the join. */
	struct rr_notice going, pending;
	int has_going, has_pending;
};

/* A cloud's notices read during the restore (the guard's thread). */
static void s_guard_notices(struct s_restore_guard *g)
{
	struct rr_notice n;

	while (rr_cloud_watch_next(g->r->cloud, &n)) {
		if (s_severity(n.kind) == 2 && !g->has_going && !g->sig) {
			g->going = n;
			g->has_going = 1;
			rr_info("notice: %s from %s during the restore: stopping it; the trainer "
				"will not be started", rr_notice_kind_name(n.kind),
				rr_notice_source_name(n.source));
			rr_store_cancel(g->r->store);
		} else if (s_severity(n.kind) == 1 && !g->has_pending) {
			g->pending = n;
			g->has_pending = 1;
			rr_info("notice: %s from %s during the restore: the trainer is asked once "
				"it runs", rr_notice_kind_name(n.kind), rr_notice_source_name(n.source));
		}
	}
}

static void *s_guard_main(void *arg)
{
	struct s_restore_guard *g = arg;
	struct pollfd fds[3] = { { .fd = g->r->sfd, .events = POLLIN },
				 { .fd = g->stop[0], .events = POLLIN },
				 { .fd = rr_cloud_watch_fd(g->r->cloud), .events = POLLIN } };

	for (;;) {
		struct signalfd_siginfo si;

		if (poll(fds, 3, -1) < 0 && errno != EINTR)
			break;
		if (fds[1].revents)
			break;
		if (fds[2].revents & POLLIN)
			s_guard_notices(g);
		while (read(g->r->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			int sig = (int)si.ssi_signo;
			if ((sig == SIGINT || sig == SIGTERM) && !g->sig) {
				g->sig = sig;
				rr_info("SIG%s during the restore: stopping it; the trainer will not "
					"be started", rr_signal_name(sig));
				rr_store_cancel(g->r->store);
			} else if (sig == SIGCHLD) {
				rr_supervisor_reap(0, NULL, NULL); /* as PID 1: orphans from before us */
			}
		}
	}
	return NULL;
}

static int s_guard_start(struct s_restore_guard *g, struct s_run *r)
{
	memset(g, 0, sizeof(*g));
	g->r = r;
	if (pipe2(g->stop, O_CLOEXEC) != 0)
		return rr_error_from_errno(errno);
	if (pthread_create(&g->tid, NULL, s_guard_main, g) != 0) {
		close(g->stop[0]);
		close(g->stop[1]);
		return RR_ENOMEM;
	}
	g->running = 1;
	return 0;
}

/* Returns the signal that stopped the restore, or 0. */
static int s_guard_stop(struct s_restore_guard *g)
{
	if (!g->running)
		return 0;
	while (write(g->stop[1], "x", 1) < 0 && errno == EINTR)
		;
	pthread_join(g->tid, NULL);
	close(g->stop[0]);
	close(g->stop[1]);
	g->running = 0;
	return g->sig;
}

/* The start-up restore with signals watched. 0 when the trainer may start; when signal N
 * stopped it, --preempted-exit-code (128+N with 0): a spot machine reclaimed while it
 * downloads has work left, like one told to go while it waits to restart a failed trainer
 * (whatever the restore got to, nothing half-restored stays: the final name only ever holds
 * a complete checkpoint, see agent/pipeline/restore.c); EXIT_AGENT_ERROR when it failed (said
 * in the log). */
static int s_restore_watched(struct s_run *r, struct rr_manifest **baseline,
			     struct rr_chunk_index **chunks)
{
	struct s_restore_guard g;
	int failed, sig, rc;

	*baseline = NULL;
	*chunks = NULL;
	rc = s_guard_start(&g, r);
	if (rc) {
		rr_error("cannot watch signals during the restore: %s", rr_strerror(rc));
		return EXIT_AGENT_ERROR;
	}
	failed = s_restore_at_start(r, baseline, chunks) != 0;
	sig = s_guard_stop(&g);
	if (g.has_pending) {
		r->early_notice = g.pending;
		r->has_early_notice = 1;
	}
	if (g.has_going && !sig) {
		/* This machine is going: the next one restores; nothing here is newer than the
		 * store's (this one only restored from it). */
		int code = r->cfg->preempted_exit_code ? r->cfg->preempted_exit_code : 128 + SIGTERM;
		rr_manifest_destroy(*baseline);
		*baseline = NULL;
		rr_chunk_index_destroy(*chunks);
		*chunks = NULL;
		r->preempted = 1;
		rr_info("leaving with status %d: the %s notice came before the trainer started",
			code, rr_notice_kind_name(g.going.kind));
		return code;
	}
	if (sig || failed) {
		rr_manifest_destroy(*baseline);
		*baseline = NULL;
		rr_chunk_index_destroy(*chunks);
		*chunks = NULL;
	}
	if (sig) {
		int code = r->cfg->preempted_exit_code ? r->cfg->preempted_exit_code : 128 + sig;
		r->preempted = 1;
		rr_info("leaving with status %d on SIG%s before the trainer started", code,
			rr_signal_name(sig));
		return code;
	}
	return failed ? EXIT_AGENT_ERROR : 0;
}

/* Blocks every signal the loop handles (it reads them from a signalfd, tini-style: no
 * handlers). Synchronous faults stay unblocked. */
static int s_signals_setup(void)
{
	sigset_t set;
	sigfillset(&set);
	for (int s = 0, sync_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP,
					SIGSYS, SIGTTIN, SIGTTOU, SIGTSTP, SIGKILL, SIGSTOP };
	     s < (int)(sizeof(sync_sigs) / sizeof(sync_sigs[0])); s++)
		sigdelset(&set, sync_sigs[s]);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	sigdelset(&set, SIGPIPE);
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* The ledger's last word from this machine: how it ended (DESIGN §4), so that `report` tells
 * a machine that finished, was preempted, failed or was killed from one lost without a word
 * (no exit event). Written directly after the persister has stopped, so that nothing follows
 * it. code: the agent's exit status; "error" when the agent could not start or run the
 * trainer, "preempted" also when a signal ended it before the trainer started. */
static void s_record_exit(struct s_run *r, int code)
{
	int signaled = r->pgid && WIFSIGNALED(r->child_status); /* it ran, and its last end */
	const char *how = r->preempted ? "preempted" : code == 0 ? "finished" :
			  !r->persister || code == EXIT_AGENT_ERROR ? "error" :
			  signaled ? "killed" : "failed";
	cJSON *ev = cJSON_CreateObject();

	if (!ev)
		return;
	cJSON_AddStringToObject(ev, "how", how);
	cJSON_AddNumberToObject(ev, "exit_status", code);
	cJSON_AddNumberToObject(ev, "trainer_status", r->exit_code);
	if (signaled)
		cJSON_AddStringToObject(ev, "signal", rr_signal_name(WTERMSIG(r->child_status)));
	cJSON_AddNumberToObject(ev, "restarts", r->restarts);
	if (r->newest[0])
		cJSON_AddStringToObject(ev, "checkpoint", r->newest);
	cJSON_AddNumberToObject(ev, "started_unix_ms", (double)r->started_wall_ms);
	s_add_instance(r, ev);
	/* A notice's deadline may have passed (the store then sends nothing): the machine is
	 * still here, and this is the last request. */
	rr_store_set_deadline(r->store, rr_mono_ms() + EXIT_EVENT_MS);
	if (rr_event_record(r->store, r->cfg->run_id, "exit", ev) != 0)
		rr_warn("could not record how this machine's run ended in the ledger");
}

/* Makes the checkpoint directory and puts its absolute path in out. The default one
 * (./.resume-run/checkpoints) is made with its parent; one given is made only as its last
 * component, under a parent that exists, so that a mistyped path (the agent may run as root)
 * creates no tree of directories. Returns 0, or -1 with the reason logged. */
static int s_make_checkpoint_dir(const struct rr_config *cfg, char out[PATH_MAX])
{
	const char *dir = cfg->checkpoint_dir;
	struct stat st;
	int rc = 0;

	if (!cfg->checkpoint_dir_given)
		rc = rr_mkdir_p(dir);
	else if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		rc = -1;
	if (rc && errno == ENOENT && cfg->checkpoint_dir_given) {
		char parent[PATH_MAX];
		size_t n = strlen(dir);
		while (n > 1 && dir[n - 1] == '/')
			n--;
		while (n > 0 && dir[n - 1] != '/')
			n--;
		if (n == 0)
			snprintf(parent, sizeof(parent), ".");
		else /* "/x" has the parent "/", "a/b/x" has "a/b" */
			snprintf(parent, sizeof(parent), "%.*s", n > 1 ? (int)n - 1 : 1, dir);
		rr_error("cannot create the checkpoint directory %s: its parent %s does not exist "
			 "(only the last component is made: create the parent first)", dir, parent);
		return -1;
	}
	if (!rc && !realpath(dir, out))
		rc = -1;
	if (!rc && (stat(out, &st) != 0 || !S_ISDIR(st.st_mode))) {
		errno = ENOTDIR;
		rc = -1;
	}
	if (rc)
		rr_error("cannot create the checkpoint directory %s: %s", dir, strerror(errno));
	return rc;
}

/* What the run needs before the restore: signals taken as events, the trainer's orphans
 * adopted, the checkpoint directory, the store, the watch for cloud notices (a thread of
 * its own from now on) and the metrics file. Returns 0, or -1 after logging why not. */
static int s_setup(struct s_run *r)
{
	const struct rr_config *cfg = r->cfg;
	struct rr_cloud_opts co;
	int rc;

	/* Threads created from here on (the persister's) inherit the blocked mask. */
	r->sfd = s_signals_setup();
	if (r->sfd < 0) {
		rr_error("cannot set up signal handling: %s", strerror(errno));
		return -1;
	}
	if (getpid() != 1)
		prctl(PR_SET_CHILD_SUBREAPER, 1); /* orphans of the trainer come to us */

	if (s_make_checkpoint_dir(cfg, r->ckpt_dir) != 0)
		return -1;
	snprintf(r->notice_path, sizeof(r->notice_path), "%s/%s", r->ckpt_dir, NOTICE_FILE_NAME);
	unlink(r->notice_path); /* a stale one from a previous machine's run */

	rc = rr_store_open(cfg->store_url, &cfg->store_opts, &r->store);
	if (rc) {
		rr_error("cannot open store %s: %s", cfg->store_url,
			 rr_store_strerror(rc));
		return -1;
	}
	/* Cloud notices: detection and polling on a thread of their own, from now on. */
	co = (struct rr_cloud_opts){ .endpoint = cfg->metadata_endpoint,
				     .poll_interval_ms = cfg->poll_interval_ms,
				     .azure_ack = cfg->azure_ack };
	if (cfg->cloud != RR_CLOUD_NONE) {
		rc = rr_http_new(&(struct rr_http_opts){ .connect_timeout_ms = 1000 }, &r->http);
		co.http = r->http;
		if (!rc)
			rc = rr_cloud_watch_start(cfg->cloud, &co, &r->cloud);
		if (rc) {
			rr_error("cannot start watching for cloud notices: %s", rr_strerror(rc));
			return -1;
		}
	}
	if (cfg->metrics_file && rr_metrics_new(cfg->metrics_file, RR_VERSION, &r->metrics) != 0) {
		rr_error("cannot set up the metrics file %s: out of memory", cfg->metrics_file);
		return -1;
	}
	return 0;
}

/* After the restore: the persister (baseline: the restored checkpoint's manifest, chunks:
 * the store's chunks as the restore listed them), the watch on the checkpoint directory,
 * the other nodes' notices, what the directory holds already, and the --every cadence.
 * Returns 0, or -1 after logging why not. */
static int s_start_watching(struct s_run *r, struct rr_manifest *baseline,
			    struct rr_chunk_index *chunks)
{
	const struct rr_config *cfg = r->cfg;
	struct rr_persister_config pc;
	int rc;

	pc = (struct rr_persister_config){
		.store = r->store, .run_id = cfg->run_id, .checkpoint_dir = r->ckpt_dir,
		.keep = cfg->keep, .keep_every_ms = cfg->keep_every_ms,
		.keep_for_ms = cfg->keep_for_ms, .threads = cfg->threads,
		.zstd_level = cfg->zstd_level,
		.gc_grace_ms = cfg->gc_grace_ms, .precision = cfg->precision,
		.exact_globs = cfg->exact_globs, .n_exact_globs = cfg->n_exact_globs,
		.metrics = r->metrics, .store_url = cfg->store_url,
		.nnodes = cfg->nnodes, .node_rank = cfg->node_rank, .chunks = chunks,
		.commit = &cfg->commit,
	};
	rc = rr_persister_new(&pc, baseline, &r->persister);
	if (!rc)
		rc = rr_watcher_new(r->ckpt_dir, &r->watcher);
	if (!rc && cfg->nnodes > 1)
		rc = rr_fanout_start(r->store, cfg->run_id, cfg->node_rank, r->started_wall_ms,
				     &r->fanout);
	if (rc) {
		rr_error("cannot start: %s", rr_strerror(rc));
		return -1;
	}
	/* Checkpoints already here: the newest is what the trainer resumes from, and is
	 * persisted if the store does not have it yet. */
	rr_watcher_set_rule(r->watcher, &r->cfg->commit);
	s_read_dir_owner(r);
	rr_watcher_scan(r->watcher, s_on_commit, r);
	r->scanned = 1;
	s_write_dir_owner(r);
	rc = s_cadence_start(r);
	if (rc) {
		rr_error("cannot start: %s", rr_strerror(rc));
		return -1;
	}
	return 0;
}

/* Leaving with status code: the trainer's leftovers ended, the last events recorded (the
 * restore's, the exit's), and everything the run opened closed. */
static void s_teardown(struct s_run *r, int code)
{
	rr_history_stop(r->history);
	s_end_leftovers(r);
	if (r->restore_event && r->persister)
		s_flush_restore_event(r, 1);
	cJSON_Delete(r->restore_event);
	s_stop_cloud(r); /* the exit event below uses r->id */
	rr_fanout_stop(r->fanout); /* writes a notice still queued: the others need it */
	rr_http_destroy(r->http);
	if (r->persister && rr_persister_busy(r->persister) && code != EXIT_AGENT_ERROR)
		rr_warn("leaving with a persist unfinished");
	rr_persister_destroy(r->persister);
	rr_cadence_destroy(r->cadence);
	if (r->store) {
		s_record_exit(r, code);
		r->persister = NULL;
	}
	rr_metrics_finish(r->metrics, rr_wall_ms());
	rr_metrics_flush(r->metrics);
	rr_metrics_destroy(r->metrics);
	rr_watcher_destroy_detached(r->watcher);
	rr_store_destroy(r->store);
	if (r->notice_path[0])
		unlink(r->notice_path);
	if (r->sfd >= 0)
		close(r->sfd);
	free(r->exe);
	free(r->passed);
}

int rr_run(const struct rr_config *cfg)
{
	struct s_run r = { .cfg = cfg, .sfd = -1, .started_wall_ms = rr_wall_ms(),
			   .rec = { .suspect_after = cfg->suspect_after } };
	struct rr_manifest *baseline = NULL;
	struct rr_chunk_index *chunks = NULL;
	int rc, code = EXIT_AGENT_ERROR;

	rc = rr_supervisor_resolve(cfg->argv[0], &r.exe);
	if (rc) {
		rr_error("cannot run '%s': %s", cfg->argv[0],
			 rc == RR_ENOENT ? "command not found" : "permission denied");
		return rc == RR_ENOENT ? 127 : 126;
	}
	/* Before the restore, which may take minutes: a drill file created meanwhile is one. */
	s_notice_file_at_start(&r);
	if (s_setup(&r) != 0)
		goto out;
	rc = s_restore_watched(&r, &baseline, &chunks);
	if (rc) {
		code = rc;
		goto out;
	}
	if (s_start_watching(&r, baseline, chunks) != 0)
		goto out;
	code = s_launch(&r);
	if (code == 0 && r.has_early_notice)
		s_on_cloud_notice(&r, &r.early_notice); /* a precaution seen during the restore */
	if (code == 0)
		code = s_loop(&r);
out:
	s_teardown(&r, code);
	return code;
}
