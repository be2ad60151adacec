#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rr/codec.h"
#include "rr/cloud.h"
#include "rr/config.h"
#include "rr/error.h"
#include "rr/gc.h"
#include "rr/manifest.h"
#include "rr/pool.h"
#include "rr/supervisor.h"

#define DEFAULT_STORE "file://./.resume-run/store"
#define DEFAULT_CHECKPOINT_DIR "./.resume-run/checkpoints"

int rr_parse_int(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!s || !*s || (*s != '-' && (*s < '0' || *s > '9')))
		return RR_EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return RR_EINVAL;
	*out = v;
	return 0;
}

int rr_parse_duration_ms(const char *s, int64_t *out)
{
	static const struct { const char *suffix; int64_t ms; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "", 1000 },
	};
	char num[32];
	size_t n = 0;
	long long v;

	while (s[n] >= '0' && s[n] <= '9')
		n++;
	if (n == 0 || n >= sizeof(num))
		return RR_EINVAL;
	memcpy(num, s, n);
	num[n] = '\0';
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(s + n, units[i].suffix) != 0)
			continue;
		if (rr_parse_int(num, 0, 30LL * 86400 * 1000 / units[i].ms, &v))
			return RR_EINVAL;
		*out = v * units[i].ms;
		return 0;
	}
	return RR_EINVAL;
}

/* ---- the option table ---- */

#define S_ALL ((1u << RR_CMD_RUN) | (1u << RR_CMD_LS) | (1u << RR_CMD_RESTORE) |   \
	       (1u << RR_CMD_VERIFY) | (1u << RR_CMD_GC) | (1u << RR_CMD_REPORT) |          \
	       (1u << RR_CMD_UNMARK))
#define S_ON(cmd) (1u << (cmd))
/* every command, simulate too (it opens no store) */
#define S_ANY (S_ALL | S_ON(RR_CMD_SIMULATE))

/* Where a command's help lists an option. */
enum s_group { S_GROUP_MAIN, S_GROUP_S3, S_GROUP_GCS, S_GROUP_ENCRYPTION };

/* Sets the field an option stands for from its value (NULL for a flag). Returns 0,
 * RR_EINVAL for a value out of bounds, or 1 when parsing stops here (--help, --version). */
typedef int (*s_setter)(struct rr_config *cfg, enum rr_command cmd, const char *v);

struct s_option {
	const char *name;   /* the long option, without "--" */
	char letter;        /* its short form, or 0 */
	const char *arg;    /* what the value is, for the help; NULL: a flag without value */
	const char *env;    /* RESUME_RUN_<NAME>, read when the flag is not given; NULL: none */
	unsigned commands;  /* S_ON(RR_CMD_...) of every command that takes it */
	enum s_group group;
	s_setter set;
	const char *help;   /* the help's lines after the option column, '\n' between them */
	const char *values; /* what a bad value's message says it "must be"; NULL: a value this
			     * option takes is never refused here */
};

static int s_set_store(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->store_url = v;
	c->store_given = 1;
	return 0;
}

static int s_set_run_id(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->run_id = v;
	return 0;
}

static int s_set_checkpoint_dir(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->checkpoint_dir = v;
	c->checkpoint_dir_given = 1;
	return 0;
}

static int s_set_cloud(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return rr_cloud_parse(v, &c->cloud) ? RR_EINVAL : 0;
}

static int s_set_metadata_endpoint(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->metadata_endpoint = v;
	return 0;
}

static int s_set_poll_interval(struct rr_config *c, enum rr_command cmd, const char *v)
{
	int64_t ms;

	(void)cmd;
	if (rr_parse_duration_ms(v, &ms) || ms < 100)
		return RR_EINVAL;
	c->poll_interval_ms = ms;
	return 0;
}

static int s_set_azure_ack(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd, (void)v;
	c->azure_ack = 1;
	return 0;
}

static int s_set_notice_file(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->notice_file = v;
	return 0;
}

/* Whole seconds after SIGTERM/SIGINT to the agent. */
static int s_set_grace(struct rr_config *c, enum rr_command cmd, const char *v)
{
	long long n;

	(void)cmd;
	if (rr_parse_int(v, 0, 86400, &n))
		return RR_EINVAL;
	c->grace_ms = n * 1000;
	return 0;
}

/* How old an unreferenced chunk must be before gc (or the run's retention) deletes it; never
 * less than a persist can take (RR_GC_GRACE_MS_MIN says why). */
static int s_set_gc_grace(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	if (rr_parse_duration_ms(v, &c->gc_grace_ms) || c->gc_grace_ms < RR_GC_GRACE_MS_MIN)
		return RR_EINVAL;
	return 0;
}

static int s_set_signal(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	/* KILL and STOP can have no handler: a notice would wait forever. */
	if (rr_signal_from_name(v, &c->checkpoint_signal) || c->checkpoint_signal == SIGKILL ||
	    c->checkpoint_signal == SIGSTOP)
		return RR_EINVAL;
	return 0;
}

static int s_set_every(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->every_auto = strcmp(v, "auto") == 0;
	if (c->every_auto) {
		c->every_ms = 0;
		return 0;
	}
	return rr_parse_duration_ms(v, &c->every_ms) || c->every_ms < 1000 ? RR_EINVAL : 0;
}

/* A plain positive decimal number in (0, max], nothing else. */
static int s_parse_decimal(const char *a, double max, double *out)
{
	char *end;
	double v;

	if (!a[0] || strspn(a, "0123456789.") != strlen(a))
		return RR_EINVAL;
	errno = 0;
	v = strtod(a, &end);
	if (errno || *end || !(v > 0) || v > max)
		return RR_EINVAL;
	*out = v;
	return 0;
}

static int s_set_mtbf(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return rr_parse_duration_ms(v, &c->mtbf_ms) || c->mtbf_ms < 1000 ? RR_EINVAL : 0;
}

/* "5", "3.5" or "5%": a share of training time, above 0 and at most 100. */
static int s_set_max_overhead(struct rr_config *c, enum rr_command cmd, const char *v)
{
	char num[32];
	size_t n = strlen(v);
	double pct;

	(void)cmd;
	if (n && v[n - 1] == '%')
		n--;
	if (n == 0 || n >= sizeof(num))
		return RR_EINVAL;
	memcpy(num, v, n);
	num[n] = '\0';
	if (s_parse_decimal(num, 100, &pct))
		return RR_EINVAL;
	c->max_overhead = pct / 100.0;
	return 0;
}

static int s_set_cost(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return rr_parse_duration_ms(v, &c->sim_cost_ms) || c->sim_cost_ms < 1 ? RR_EINVAL : 0;
}

static int s_set_lead(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return rr_parse_duration_ms(v, &c->sim_lead_ms) ? RR_EINVAL : 0;
}

static int s_set_prior(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return rr_parse_duration_ms(v, &c->sim_prior_ms) || c->sim_prior_ms < 1000 ? RR_EINVAL : 0;
}

static int s_set_trace(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->sim_trace = v;
	return 0;
}

static int s_set_hours(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return s_parse_decimal(v, 1e6, &c->sim_hours);
}

static int s_set_weibull(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return s_parse_decimal(v, 10, &c->sim_weibull) || c->sim_weibull < 0.1 ? RR_EINVAL : 0;
}

static int s_set_seed(struct rr_config *c, enum rr_command cmd, const char *v)
{
	long long n;

	(void)cmd;
	if (rr_parse_int(v, 0, 0x7fffffffffffffffLL, &n))
		return RR_EINVAL;
	c->sim_seed = (unsigned long long)n;
	return 0;
}

static int s_set_commit(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return rr_commit_rule_parse(v, &c->commit) ? RR_EINVAL : 0;
}

static int s_set_preempted_exit_code(struct rr_config *c, enum rr_command cmd, const char *v)
{
	long long n;

	(void)cmd;
	if (rr_parse_int(v, 0, 255, &n))
		return RR_EINVAL;
	c->preempted_exit_code = (int)n;
	return 0;
}

static int s_set_precision(struct rr_config *c, enum rr_command cmd, const char *v)
{
	static const char *const modes[] = { "auto", "fp16", "bf16", "exact" };

	(void)cmd;
	for (unsigned i = 0; i < 4; i++)
		if (strcmp(v, modes[i]) == 0) {
			c->precision = (enum rr_precision)i;
			return 0;
		}
	return RR_EINVAL;
}

static int s_set_exact(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	if (!*v || c->n_exact_globs == RR_MAX_EXACT_GLOBS)
		return RR_EINVAL;
	c->exact_globs[c->n_exact_globs++] = v;
	return 0;
}

static int s_set_unsigned(unsigned *out, const char *v, long long min, long long max)
{
	long long n;

	if (rr_parse_int(v, min, max, &n))
		return RR_EINVAL;
	*out = (unsigned)n;
	return 0;
}

static int s_set_nnodes(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return s_set_unsigned(&c->nnodes, v, 1, RR_MAX_NODES);
}

static int s_set_node_rank(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return s_set_unsigned(&c->node_rank, v, 0, RR_MAX_NODES - 1);
}

static int s_set_keep(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return s_set_unsigned(&c->keep, v, 1, 1000000);
}

static int s_set_keep_every(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return rr_parse_duration_ms(v, &c->keep_every_ms) || c->keep_every_ms <= 0 ? RR_EINVAL
										   : 0;
}

static int s_set_keep_for(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return rr_parse_duration_ms(v, &c->keep_for_ms) || c->keep_for_ms <= 0 ? RR_EINVAL : 0;
}

static int s_set_suspect_after(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return s_set_unsigned(&c->suspect_after, v, 0, 1000);
}

static int s_set_max_restarts(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return s_set_unsigned(&c->max_restarts, v, 0, 1000000);
}

/* "pass" or "strip". */
static int s_set_trainer_env(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	if (strcmp(v, "pass") == 0)
		c->strip_trainer_env = 0;
	else if (strcmp(v, "strip") == 0)
		c->strip_trainer_env = 1;
	else
		return RR_EINVAL;
	return 0;
}

static int s_set_threads(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return s_set_unsigned(&c->threads, v, 1, 256);
}

static int s_set_zstd_level(struct rr_config *c, enum rr_command cmd, const char *v)
{
	long long n;

	(void)cmd;
	if (rr_parse_int(v, 1, 19, &n))
		return RR_EINVAL;
	c->zstd_level = (int)n;
	return 0;
}

static int s_set_metrics_file(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->metrics_file = v;
	return 0;
}

static int s_set_log_format(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	if (strcmp(v, "text") && strcmp(v, "json"))
		return RR_EINVAL;
	c->log_json = strcmp(v, "json") == 0;
	return 0;
}

static int s_set_verbose(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd, (void)v;
	c->verbose = 1;
	return 0;
}

static int s_set_help(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd, (void)v;
	c->command = RR_CMD_HELP;
	return 1;
}

static int s_set_version(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd, (void)v;
	c->command = RR_CMD_VERSION;
	return 1;
}

static int s_set_s3_addressing(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->store_opts.s3_addressing = v;
	return 0;
}

static int s_set_s3_sse(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->store_opts.s3_sse = v;
	return 0;
}

static int s_set_s3_sse_kms_key_id(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->store_opts.s3_sse_kms_key_id = v;
	return 0;
}

static int s_set_gcs_hmac(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd, (void)v;
	c->store_opts.gcs_hmac = 1;
	return 0;
}

static int s_set_encryption_key_file(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->store_opts.encryption_key_file = v;
	return 0;
}

static int s_set_checkpoint(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->checkpoint = v;
	return 0;
}

static int s_set_to(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	c->to = v;
	return 0;
}

static int s_set_json(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd, (void)v;
	c->report_json = 1;
	return 0;
}

/* A price per machine-hour: a plain positive decimal number below a million. */
static int s_parse_price(const char *a, double *out)
{
	double v;

	if (s_parse_decimal(a, 1e6, &v) || v >= 1e6)
		return RR_EINVAL;
	*out = v;
	return 0;
}

static int s_set_price_spot(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return s_parse_price(v, &c->price_spot);
}

static int s_set_price_on_demand(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	return s_parse_price(v, &c->price_on_demand);
}

/* Every option, in the order the help lists them. README's option table lists the same
 * names and environment variables (tests/unit/test_config.c compares them). */
static const struct s_option s_table[] = {
	{ "store", 0, "URL", "RESUME_RUN_STORE", S_ALL, S_GROUP_MAIN, s_set_store,
	  "file:///abs/path, file://./rel, s3://bucket/prefix,\n"
	  "gs://bucket/prefix or az://container/prefix (Azure Blob: account\n"
	  "and credentials from AZURE_STORAGE_* as the Azure CLI reads them)\n"
	  "(default " DEFAULT_STORE ": this machine's disk, said\n"
	  "loudly on a cloud)", NULL },
	{ "run-id", 0, "ID", "RESUME_RUN_ID", S_ALL, S_GROUP_MAIN, s_set_run_id,
	  "names the run inside the store (default: default)", NULL },
	{ "checkpoint-dir", 0, "DIR", "RESUME_RUN_CHECKPOINT_DIR", S_ON(RR_CMD_RUN), S_GROUP_MAIN,
	  s_set_checkpoint_dir,
	  "where the trainer writes checkpoints; only its last component\n"
	  "is created (default " DEFAULT_CHECKPOINT_DIR ")", NULL },
	{ "cloud", 0, "NAME", "RESUME_RUN_CLOUD", S_ON(RR_CMD_RUN), S_GROUP_MAIN, s_set_cloud,
	  "auto (default: detect), none, aws, gcp or azure: whose\n"
	  "preemption notices to watch",
	  "auto, none, aws, gcp or azure" },
	{ "metadata-endpoint", 0, "URL", "RESUME_RUN_METADATA_ENDPOINT", S_ON(RR_CMD_RUN),
	  S_GROUP_MAIN, s_set_metadata_endpoint,
	  "base URL of the metadata service (tests, proxies)", NULL },
	{ "poll-interval", 0, "DURATION", "RESUME_RUN_POLL_INTERVAL", S_ON(RR_CMD_RUN),
	  S_GROUP_MAIN, s_set_poll_interval,
	  "metadata poll period (default aws 2s, azure 1s; GCP\n"
	  "waits on a hanging GET instead)",
	  "a duration of at least 100ms (500ms, 2s)" },
	{ "azure-ack", 0, NULL, "RESUME_RUN_AZURE_ACK", S_ON(RR_CMD_RUN), S_GROUP_MAIN,
	  s_set_azure_ack, "approve the Azure event once the checkpoint is durable", NULL },
	{ "drill-file", 0, "PATH", "RESUME_RUN_DRILL_FILE", S_ON(RR_CMD_RUN), S_GROUP_MAIN,
	  s_set_notice_file,
	  "treat the appearance of PATH as a preemption notice (drills);\n"
	  "one there at start is a leftover, ignored until removed", NULL },
	/* The name before 0.2.0, kept for one release with a warning: RESUME_RUN_NOTICE_FILE is
	 * also the trainer's notice JSON (DESIGN.md §2), another file. After drill-file in this
	 * table, so that RESUME_RUN_DRILL_FILE wins over it. */
	{ "notice-file", 0, "PATH", "RESUME_RUN_NOTICE_FILE", S_ON(RR_CMD_RUN), S_GROUP_MAIN,
	  s_set_notice_file, "deprecated: --drill-file (RESUME_RUN_DRILL_FILE)", NULL },
	{ "grace", 0, "SECONDS", "RESUME_RUN_GRACE", S_ON(RR_CMD_RUN), S_GROUP_MAIN, s_set_grace,
	  "deadline after SIGTERM/SIGINT to the agent (default 25)",
	  "whole seconds, 0-86400" },
	{ "gc-grace", 0, "DURATION", "RESUME_RUN_GC_GRACE", S_ON(RR_CMD_RUN) | S_ON(RR_CMD_GC),
	  S_GROUP_MAIN, s_set_gc_grace,
	  "chunks no checkpoint references are deleted (by gc and the\n"
	  "run's retention) once older than this; at least 10m, longer\n"
	  "than a persist takes (default 1h)",
	  "a duration of at least 10m (e.g. 1h, 90m)" },
	{ "signal", 0, "SIG", "RESUME_RUN_SIGNAL", S_ON(RR_CMD_RUN), S_GROUP_MAIN, s_set_signal,
	  "signal asking the trainer for a checkpoint (default USR1)",
	  "a signal a handler can catch (USR1, USR2, HUP, ... or its number; not KILL or STOP)" },
	{ "every", 0, "DURATION", "RESUME_RUN_EVERY", S_ON(RR_CMD_RUN), S_GROUP_MAIN, s_set_every,
	  "also ask for a checkpoint periodically (90s, 30m, 2h), or\n"
	  "auto: as often as the run's losses and the checkpoint's\n"
	  "measured cost make worthwhile (Daly's interval)",
	  "a duration of at least 1s (90s, 30m, 2h), or auto" },
	{ "mtbf", 0, "DURATION", "RESUME_RUN_MTBF", S_ON(RR_CMD_RUN) | S_ON(RR_CMD_SIMULATE),
	  S_GROUP_MAIN, s_set_mtbf,
	  "for --every auto: the mean time between losses no notice\n"
	  "covers (default: estimated from the run's history);\n"
	  "simulate: that of the synthetic losses", "a duration of at least 1s (30m, 24h)" },
	{ "max-overhead", 0, "PCT", "RESUME_RUN_MAX_OVERHEAD",
	  S_ON(RR_CMD_RUN) | S_ON(RR_CMD_SIMULATE), S_GROUP_MAIN, s_set_max_overhead,
	  "for --every auto: the checkpoint stall takes at most PCT% of\n"
	  "training time (default 5)", "a percentage above 0 and at most 100 (5, 3.5%)" },
	/* restore takes it too: it writes the rule's pointer file (DeepSpeed's latest) */
	{ "commit", 0, "RULE", "RESUME_RUN_COMMIT", S_ON(RR_CMD_RUN) | S_ON(RR_CMD_RESTORE),
	  S_GROUP_MAIN, s_set_commit,
	  "what commits a checkpoint: auto (default: rename, plus HF's\n"
	  "trainer_state.json, DCP's .metadata, DeepSpeed's latest),\n"
	  "rename, marker:NAME or pointer:NAME",
	  "auto, rename, marker:NAME or pointer:NAME" },
	{ "precision", 0, "MODE", "RESUME_RUN_PRECISION", S_ON(RR_CMD_RUN), S_GROUP_MAIN,
	  s_set_precision,
	  "how F32 tensors of *.safetensors files are stored: auto\n"
	  "(default: scaled FP16 where that is as precise as BF16, else\n"
	  "BF16), fp16, bf16, or exact (lossless)",
	  "auto, fp16, bf16 or exact" },
	{ "exact", 0, "GLOB", "RESUME_RUN_EXACT", S_ON(RR_CMD_RUN), S_GROUP_MAIN, s_set_exact,
	  "tensors whose names match are stored bit-exact (repeatable;\n"
	  "the environment holds one GLOB)",
	  "a GLOB that is not empty, given at most 64 times" },
	{ "keep", 0, "N", "RESUME_RUN_KEEP", S_ON(RR_CMD_RUN) | S_ON(RR_CMD_GC), S_GROUP_MAIN,
	  s_set_keep, "committed checkpoints kept in the store (default 3)",
	  "1-1000000" },
	{ "keep-every", 0, "DURATION", "RESUME_RUN_KEEP_EVERY", S_ON(RR_CMD_RUN) | S_ON(RR_CMD_GC),
	  S_GROUP_MAIN, s_set_keep_every,
	  "besides the newest N, keep one checkpoint per period\n"
	  "(the oldest of each; e.g. 1h) ...", "a duration such as 30m or 1h" },
	{ "keep-for", 0, "DURATION", "RESUME_RUN_KEEP_FOR", S_ON(RR_CMD_RUN) | S_ON(RR_CMD_GC),
	  S_GROUP_MAIN, s_set_keep_for,
	  "... for this long after its commit (default: for ever);\n"
	  "the newest proven checkpoint is always kept", "a duration such as 48h (at most 720h)" },
	{ "suspect-after", 0, "N", "RESUME_RUN_SUSPECT_AFTER", S_ON(RR_CMD_RUN), S_GROUP_MAIN,
	  s_set_suspect_after,
	  "failures after resuming from one checkpoint, with no newer\n"
	  "commit, that mark it suspect: the next start takes the one\n"
	  "before (default 2; 0: never)", "0-1000" },
	{ "max-restarts", 0, "N", "RESUME_RUN_MAX_RESTARTS", S_ON(RR_CMD_RUN), S_GROUP_MAIN,
	  s_set_max_restarts, "restarts after a trainer failure (default 3)",
	  "0-1000000" },
	{ "trainer-env", 0, "pass|strip", "RESUME_RUN_TRAINER_ENV", S_ON(RR_CMD_RUN), S_GROUP_MAIN,
	  s_set_trainer_env,
	  "strip: the agent's credential variables (AWS_*KEY*,\n"
	  "AWS_SESSION_TOKEN, GOOGLE_APPLICATION_CREDENTIALS, ...)\n"
	  "are not passed to the trainer (default pass)",
	  "pass or strip" },
	{ "preempted-exit-code", 0, "N", "RESUME_RUN_PREEMPTED_EXIT_CODE", S_ON(RR_CMD_RUN),
	  S_GROUP_MAIN, s_set_preempted_exit_code,
	  "exit status when a preemption or termination notice\n"
	  "stopped the trainer, so relaunchers (Kubernetes, systemd,\n"
	  "Slurm) resume the job; 0: the trainer's own status\n"
	  "(default 75, EX_TEMPFAIL)",
	  "0-255" },
	{ "threads", 0, "N", "RESUME_RUN_THREADS", S_ALL, S_GROUP_MAIN, s_set_threads,
	  "persist/restore worker threads (default: number of cores;\n"
	  "twice that, up to 8, for a remote store)",
	  "1-256" },
	{ "zstd-level", 0, "N", "RESUME_RUN_ZSTD_LEVEL", S_ON(RR_CMD_RUN), S_GROUP_MAIN,
	  s_set_zstd_level,
	  "zstd level of plain files, 1..19 (default 3; tensors'\n"
	  "byte planes always use 1)",
	  "1-19" },
	{ "metrics-file", 0, "PATH", "RESUME_RUN_METRICS_FILE", S_ON(RR_CMD_RUN), S_GROUP_MAIN,
	  s_set_metrics_file,
	  "Prometheus text-format metrics, replaced atomically on every\n"
	  "change (node_exporter textfile collector)", NULL },
	{ "nnodes", 0, "N", "RESUME_RUN_NNODES", S_ON(RR_CMD_RUN) | S_ON(RR_CMD_RESTORE),
	  S_GROUP_MAIN, s_set_nnodes,
	  "nodes of a multi-node job, one agent each (default 1; also\n"
	  "SLURM_NNODES, NNODES)",
	  "a number of nodes, 1-4096" },
	{ "node-rank", 0, "K", "RESUME_RUN_NODE_RANK", S_ON(RR_CMD_RUN) | S_ON(RR_CMD_RESTORE),
	  S_GROUP_MAIN, s_set_node_rank,
	  "this node's rank, 0..N-1 (default 0; also SLURM_NODEID,\n"
	  "NODE_RANK)",
	  "a node rank, 0-4095" },
	{ "checkpoint", 0, "NAME", "RESUME_RUN_CHECKPOINT",
	  S_ON(RR_CMD_RESTORE) | S_ON(RR_CMD_VERIFY) | S_ON(RR_CMD_UNMARK), S_GROUP_MAIN,
	  s_set_checkpoint,
	  "this checkpoint instead of the newest committed one", NULL },
	{ "to", 0, "DIR", "RESUME_RUN_TO", S_ON(RR_CMD_RESTORE), S_GROUP_MAIN, s_set_to,
	  "where the checkpoint lands: DIR/NAME/ (required)", NULL },
	{ "cost", 0, "DURATION", "RESUME_RUN_COST", S_ON(RR_CMD_SIMULATE), S_GROUP_MAIN,
	  s_set_cost, "what a checkpoint stalls the trainer (required)", NULL },
	{ "lead", 0, "DURATION", "RESUME_RUN_LEAD", S_ON(RR_CMD_SIMULATE), S_GROUP_MAIN,
	  s_set_lead, "the lead of the trace's notices that give none\n"
	  "(default 120s, AWS's)", NULL },
	{ "trace", 0, "FILE", "RESUME_RUN_TRACE", S_ON(RR_CMD_SIMULATE), S_GROUP_MAIN,
	  s_set_trace, "replay FILE's losses and notices (\"SECONDS loss\",\n"
	  "\"SECONDS notice [LEAD]\") instead of synthetic ones", NULL },
	{ "hours", 0, "H", "RESUME_RUN_HOURS", S_ON(RR_CMD_SIMULATE), S_GROUP_MAIN, s_set_hours,
	  "how long to simulate (default 10000; with --trace: until its\n"
	  "last event)", NULL },
	{ "weibull", 0, "SHAPE", "RESUME_RUN_WEIBULL", S_ON(RR_CMD_SIMULATE), S_GROUP_MAIN,
	  s_set_weibull, "Weibull lifetimes of this shape (0.1-10) instead of\n"
	  "exponential ones (< 1: losses cluster early)", NULL },
	{ "prior", 0, "DURATION", "RESUME_RUN_PRIOR", S_ON(RR_CMD_SIMULATE), S_GROUP_MAIN,
	  s_set_prior, "what auto believes of the MTBF before any loss\n"
	  "(default 24h, the prior without a cloud)", NULL },
	{ "seed", 0, "N", "RESUME_RUN_SEED", S_ON(RR_CMD_SIMULATE), S_GROUP_MAIN, s_set_seed,
	  "the synthetic history's seed (default 1)", NULL },
	{ "json", 0, NULL, "RESUME_RUN_JSON", S_ON(RR_CMD_SIMULATE), S_GROUP_MAIN, s_set_json,
	  "print the results as JSON (with interval_s)", NULL },
	{ "json", 0, NULL, "RESUME_RUN_JSON", S_ON(RR_CMD_REPORT), S_GROUP_MAIN, s_set_json,
	  "the report as JSON for tools (shape in the README)", NULL },
	{ "price-spot", 0, "PRICE", "RESUME_RUN_PRICE_SPOT", S_ON(RR_CMD_REPORT), S_GROUP_MAIN,
	  s_set_price_spot,
	  "price of a spot machine-hour; with --price-on-demand, an\n"
	  "estimate of what the run cost against on-demand machines",
	  "a positive number below 1000000 (e.g. 0.85)" },
	{ "price-on-demand", 0, "PRICE", "RESUME_RUN_PRICE_ON_DEMAND", S_ON(RR_CMD_REPORT),
	  S_GROUP_MAIN, s_set_price_on_demand,
	  "price of an on-demand machine-hour",
	  "a positive number below 1000000 (e.g. 2.45)" },
	{ "log-format", 0, "text|json", "RESUME_RUN_LOG_FORMAT", S_ANY, S_GROUP_MAIN,
	  s_set_log_format, "log lines on stderr (default text)",
	  "text or json" },
	{ "verbose", 'v', NULL, "RESUME_RUN_VERBOSE", S_ANY, S_GROUP_MAIN, s_set_verbose,
	  "also log debug lines", NULL },
	{ "help", 'h', NULL, NULL, S_ANY, S_GROUP_MAIN, s_set_help, "this help", NULL },
	{ "version", 0, NULL, NULL, S_ANY, S_GROUP_MAIN, s_set_version, "the version", NULL },
	{ "s3-addressing", 0, "MODE", "RESUME_RUN_S3_ADDRESSING", S_ALL, S_GROUP_S3,
	  s_set_s3_addressing,
	  "auto (path-style with an endpoint URL, else virtual-hosted),\n"
	  "path or virtual", NULL },
	{ "s3-sse", 0, "MODE", "RESUME_RUN_S3_SSE", S_ALL, S_GROUP_S3, s_set_s3_sse,
	  "server-side encryption: AES256 or aws:kms", NULL },
	{ "s3-sse-kms-key-id", 0, "ID", "RESUME_RUN_S3_SSE_KMS_KEY_ID", S_ALL, S_GROUP_S3,
	  s_set_s3_sse_kms_key_id, "the KMS key for aws:kms", NULL },
	{ "gcs-hmac", 0, NULL, "RESUME_RUN_GCS_HMAC", S_ALL, S_GROUP_GCS, s_set_gcs_hmac,
	  "sign with HMAC keys (AWS_ACCESS_KEY_ID/...) instead", NULL },
	{ "encryption-key-file", 0, "FILE", "RESUME_RUN_ENCRYPTION_KEY_FILE", S_ALL,
	  S_GROUP_ENCRYPTION, s_set_encryption_key_file,
	  "seal every stored object with AES-256-GCM; FILE holds\n"
	  "a 256-bit key as 64 hex digits (keep it: without it nothing\n"
	  "restores)", NULL },
};
#define S_N_OPTIONS (sizeof(s_table) / sizeof(s_table[0]))
#define S_VAL 256 /* getopt_long's value for s_table[i] is S_VAL + i */

size_t rr_config_option_count(void)
{
	return S_N_OPTIONS;
}

int rr_config_option(size_t i, const char **name, const char **env, unsigned *commands)
{
	if (i >= S_N_OPTIONS)
		return RR_EINVAL;
	*name = s_table[i].name;
	*env = s_table[i].env;
	*commands = s_table[i].commands;
	return 0;
}

/* ---- help, generated from the table ---- */

static const char s_title_s3[] =
	"S3 stores (every command): credentials, region and endpoint as the AWS CLI finds\n"
	"them (AWS_ACCESS_KEY_ID..., AWS_PROFILE, web identity, container, instance role;\n"
	"AWS_REGION; AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL; AWS_CA_BUNDLE).\n";

static const char s_title_gcs[] =
	"GCS stores (gs://bucket/prefix): GOOGLE_APPLICATION_CREDENTIALS (a service-account\n"
	"key), else the metadata server's token; STORAGE_EMULATOR_HOST redirects requests.\n";

static const char *const s_group_title[] = {
	[S_GROUP_MAIN] = "Options (environment in brackets):\n",
	[S_GROUP_S3] = s_title_s3,
	[S_GROUP_GCS] = s_title_gcs,
	[S_GROUP_ENCRYPTION] = "Encryption (every command):\n",
};

static const char s_run_head[] =
	"usage: resume-run [OPTIONS] -- COMMAND [ARGS...]\n"
	"       resume-run ls|restore|verify|gc|report|simulate [OPTIONS]   (see CMD --help)\n"
	"\n"
	"Runs COMMAND (the trainer) under supervision. At start it restores the newest committed\n"
	"checkpoint of the run from the store; on a notice it asks the trainer for a checkpoint\n"
	"and makes it durable in the store before the deadline.\n"
	"\n";

static const char s_run_tail[] =
	"\n"
	"Signals: SIGTERM/SIGINT = a notice (checkpoint, persist, then SIGTERM to the trainer);\n"
	"a second one forwards at once. SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH are forwarded.\n"
	"Exit status: the trainer's; 128+N if it died of signal N; --preempted-exit-code (75)\n"
	"if a notice stopped it; 127 command not found; 126 not executable; 125 agent error.\n";

static const char s_ls_head[] =
	"usage: resume-run ls [--store URL] [--run-id ID]\n"
	"Lists the checkpoints of a run, newest first: name, state (committed, or why not),\n"
	"files, original and stored size, commit time. LATEST is marked with '*'.\n";

static const char s_restore_head[] =
	"usage: resume-run restore [--store URL] [--run-id ID] [--checkpoint NAME] --to DIR\n"
	"Restores the newest committed checkpoint (or NAME) into DIR/NAME/, verifying every\n"
	"chunk. Without --checkpoint, a damaged newest checkpoint falls back to an older one.\n"
	"A one-file checkpoint (a Lightning .ckpt) lands as the file DIR/NAME. --commit RULE\n"
	"(default auto) also writes the rule's pointer file: DIR/latest for DeepSpeed's\n"
	"global_stepN, DIR/NAME2 for pointer:NAME2.\n";

static const char s_verify_head[] =
	"usage: resume-run verify [--store URL] [--run-id ID] [--checkpoint NAME]\n"
	"Re-reads and re-hashes every chunk of every committed checkpoint (or of NAME).\n"
	"Exit status 0 when all are intact, 1 when any is damaged, 125 on other errors.\n";

static const char s_gc_head[] =
	"usage: resume-run gc [--store URL] [--run-id ID] [--keep N] [--gc-grace DURATION]\n"
	"                     [--keep-every DURATION [--keep-for DURATION]]\n"
	"Keeps the N newest committed checkpoints (default 3; suspect ones are not counted), the\n"
	"newest proven one, one per --keep-every period for --keep-for, and any a restore is\n"
	"reading; deletes the others, then chunks no remaining checkpoint references and older\n"
	"than --gc-grace by the store's clock (default 1h, at least 10m: chunks go up before the\n"
	"manifest that names them, so a younger one may belong to a persist still in flight on\n"
	"another machine).\n";

static const char s_simulate_head[] =
	"usage: resume-run simulate --cost DURATION --mtbf DURATION [--lead DURATION]\n"
	"                           [--trace FILE] [--hours H] [--weibull SHAPE] [--json]\n"
	"Replays losses (exponential, Weibull, or a trace file's losses and notices) against a\n"
	"trainer whose checkpoint stalls it --cost, and prints the lost work and the checkpoint\n"
	"overhead under --every auto, under fixed intervals, and under the best fixed interval\n"
	"in hindsight; and the interval --every auto --mtbf would choose (JSON: interval_s).\n";

static const char s_unmark_head[] =
	"usage: resume-run unmark [--store URL] [--run-id ID] --checkpoint NAME\n"
	"Clears the suspect mark of checkpoint NAME (set when the trainer failed repeatedly\n"
	"after resuming from it): the next start restores it again if it is the newest.\n";

static const char s_report_head[] =
	"usage: resume-run report [--store URL] [--run-id ID] [--json]\n"
	"                         [--price-spot PRICE --price-on-demand PRICE]\n"
	"What preemptions cost the run, from its ledger in the store (any machine can ask):\n"
	"machines, notices and whether each checkpoint was durable before its deadline, work\n"
	"lost, restores, restarts, bytes. --json: the same for tools (shape in the README).\n";

#define S_HELP_COLUMN 25 /* where an option's explanation starts */
#define S_HELP_WIDTH 90  /* the environment variable goes on a line of its own past this */

/* "  -v, --verbose          also log debug lines [RESUME_RUN_VERBOSE]" and its further lines. */
static void s_print_option(FILE *f, const struct s_option *o)
{
	char col[64];
	const char *line = o->help;
	int n, last = 0;

	if (o->letter)
		n = snprintf(col, sizeof(col), "  -%c, --%s%s%s", o->letter, o->name,
			     o->arg ? " " : "", o->arg ? o->arg : "");
	else
		n = snprintf(col, sizeof(col), "  --%s%s%s", o->name, o->arg ? " " : "",
			     o->arg ? o->arg : "");
	fprintf(f, "%-*s%s", S_HELP_COLUMN - 1, col, n >= S_HELP_COLUMN - 1 ? "  " : " ");
	for (;;) {
		const char *nl = strchr(line, '\n');
		int len = nl ? (int)(nl - line) : (int)strlen(line);
		fwrite(line, 1, (size_t)len, f);
		last = (line == o->help ? (n >= S_HELP_COLUMN - 1 ? n + 2 : S_HELP_COLUMN) :
					  S_HELP_COLUMN) + len;
		if (!nl)
			break;
		fprintf(f, "\n%*s", S_HELP_COLUMN, "");
		line = nl + 1;
	}
	if (o->env) {
		if (last + 3 + (int)strlen(o->env) > S_HELP_WIDTH)
			fprintf(f, "\n%*s[%s]", S_HELP_COLUMN, "", o->env);
		else
			fprintf(f, " [%s]", o->env);
	}
	fputc('\n', f);
}

/* The help of one command, from its head text and the options it takes, group by group. */
static void s_print_help(FILE *f, enum rr_command cmd)
{
	const char *head = cmd == RR_CMD_LS ? s_ls_head :
			   cmd == RR_CMD_SIMULATE ? s_simulate_head :
			   cmd == RR_CMD_REPORT ? s_report_head :
			   cmd == RR_CMD_RESTORE ? s_restore_head :
			   cmd == RR_CMD_VERIFY ? s_verify_head :
			   cmd == RR_CMD_GC ? s_gc_head :
			   cmd == RR_CMD_UNMARK ? s_unmark_head : s_run_head;

	fputs(head, f);
	for (int g = S_GROUP_MAIN; g <= S_GROUP_ENCRYPTION; g++) {
		int titled = 0;
		for (size_t i = 0; i < S_N_OPTIONS; i++) {
			if ((int)s_table[i].group != g || !(s_table[i].commands & S_ON(cmd)))
				continue;
			if (!titled)
				fputs(s_group_title[g], f);
			titled = 1;
			s_print_option(f, &s_table[i]);
		}
	}
	if (cmd == RR_CMD_RUN || cmd == RR_CMD_HELP || cmd == RR_CMD_VERSION)
		fputs(s_run_tail, f);
}

void rr_config_print_help(enum rr_command cmd)
{
	s_print_help(stdout, cmd);
}

/* ---- parsing ---- */

/* The entry for option name that command cmd takes, else any entry of that name. */
static const struct s_option *s_find(const char *name, enum rr_command cmd)
{
	const struct s_option *any = NULL;

	for (size_t i = 0; i < S_N_OPTIONS; i++) {
		if (strcmp(s_table[i].name, name) != 0)
			continue;
		if (s_table[i].commands & S_ON(cmd))
			return &s_table[i];
		any = &s_table[i];
	}
	return any;
}

/* The word that named the current option: for "--keep 0" the one before the value, for
 * "--keep=0" or "-v" the last one getopt consumed. */
static const char *s_opt_word(char **av, const char *value)
{
	return value && optind >= 2 && av[optind - 1] == value ? av[optind - 2] : av[optind - 1];
}

/* Variables read, in this order, when an option's own is not set: a multi-node job's node
 * count and rank as Slurm and torchrun recipes export them. */
static const struct {
	const char *env;
	const char *also[2];
} s_env_fallbacks[] = {
	{ "RESUME_RUN_NNODES", { "SLURM_NNODES", "NNODES" } },
	{ "RESUME_RUN_NODE_RANK", { "SLURM_NODEID", "NODE_RANK" } },
};

/* An environment variable counts when set and not empty; a flag's variable turns it on
 * unless it says 0, false, no or off. *which: the variable the value came from. */
static const char *s_option_env(const struct s_option *o, const char **which)
{
	const char *v = o->env ? getenv(o->env) : NULL;

	*which = o->env;
	for (size_t i = 0; o->env && (!v || !*v) &&
			   i < sizeof(s_env_fallbacks) / sizeof(s_env_fallbacks[0]); i++)
		if (strcmp(s_env_fallbacks[i].env, o->env) == 0)
			for (size_t k = 0; k < 2 && (!v || !*v); k++) {
				v = getenv(s_env_fallbacks[i].also[k]);
				*which = s_env_fallbacks[i].also[k];
			}
	if (!v || !*v)
		return NULL;
	if (!o->arg && (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
			!strcasecmp(v, "off")))
		return NULL;
	return v;
}

/* Whether option i, or another name of it (an entry with the same setter), was given. */
static int s_alias_given(size_t i, const unsigned char *given)
{
	for (size_t k = 0; k < S_N_OPTIONS; k++)
		if (given[k] && s_table[k].set == s_table[i].set)
			return 1;
	return 0;
}

/* Parses argv again with its subcommand, found at index at behind options meant for it,
 * moved to the front: "resume-run -v ls" as "resume-run ls -v". */
static int s_parse_moved(int argc, char **argv, int at, struct rr_config *cfg,
			 enum rr_command *help_for, char *why, size_t why_len)
{
	char **moved = malloc(((size_t)argc + 1) * sizeof(*moved));
	int rc, n = 0;

	if (!moved)
		return RR_ENOMEM;
	moved[n++] = argv[0];
	moved[n++] = argv[at];
	for (int i = 1; i < argc; i++)
		if (i != at)
			moved[n++] = argv[i];
	moved[n] = NULL;
	rc = rr_config_parse(argc, moved, cfg, help_for, why, why_len);
	free(moved);
	return rc;
}

int rr_config_parse(int argc, char **argv, struct rr_config *cfg, enum rr_command *help_for,
		    char *why, size_t why_len)
{
	static const struct { const char *name; enum rr_command cmd; } commands[] = {
		{ "ls", RR_CMD_LS }, { "restore", RR_CMD_RESTORE },
		{ "verify", RR_CMD_VERIFY }, { "gc", RR_CMD_GC }, { "report", RR_CMD_REPORT },
		{ "simulate", RR_CMD_SIMULATE },
		{ "unmark", RR_CMD_UNMARK },
	};
	/* getopt's table: one entry per name, val = S_VAL + its index in s_table (above every
	 * letter, so the two never meet) */
	struct option longopts[S_N_OPTIONS + 1];
	unsigned char given[S_N_OPTIONS];
	char shortopts[16] = "+:";
	const char *cmd_name = "resume-run";
	/* What a message begins with: the log line says "resume-run:" already, so only a
	 * subcommand's name ("gc: "). */
	char lead[16] = "";
	enum rr_command cmd = RR_CMD_RUN;
	size_t nlong = 0;
	char **av;
	int first = 1, opt, ac, rc;

	memset(cfg, 0, sizeof(*cfg));
	memset(given, 0, sizeof(given));
	cfg->command = RR_CMD_RUN;
	cfg->store_url = DEFAULT_STORE;
	cfg->run_id = "default";
	cfg->checkpoint_dir = DEFAULT_CHECKPOINT_DIR;
	cfg->cloud = RR_CLOUD_AUTO;
	cfg->grace_ms = 25000;
	cfg->checkpoint_signal = SIGUSR1;
	cfg->keep = 3;
	cfg->suspect_after = 2;
	cfg->max_restarts = 3;
	cfg->nnodes = 1;
	/* EX_TEMPFAIL: "try again later" to whatever relaunches the job (docs/how-it-works.md,
	 * "How it works"). */
	cfg->preempted_exit_code = 75;
	(void)rr_commit_rule_parse("auto", &cfg->commit);
	cfg->zstd_level = RR_ZSTD_LEVEL_DEFAULT;
	cfg->gc_grace_ms = 3600 * 1000;
	cfg->max_overhead = 0.05;
	cfg->sim_lead_ms = 120 * 1000; /* AWS's notice */
	cfg->sim_prior_ms = 24LL * 3600 * 1000;
	cfg->sim_seed = 1;

	for (size_t i = 0; i < S_N_OPTIONS; i++) {
		size_t k;
		for (k = 0; k < nlong && strcmp(longopts[k].name, s_table[i].name) != 0; k++)
			;
		if (k == nlong)
			longopts[nlong++] = (struct option){ s_table[i].name,
				s_table[i].arg ? required_argument : no_argument, NULL, S_VAL + (int)i };
		if (s_table[i].letter) {
			size_t l = strlen(shortopts);
			shortopts[l] = s_table[i].letter;
			shortopts[l + 1] = '\0';
		}
	}
	longopts[nlong] = (struct option){ NULL, 0, NULL, 0 };

	if (argc > 1) {
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (strcmp(argv[1], commands[i].name) == 0) {
				cmd = commands[i].cmd;
				cmd_name = commands[i].name;
				snprintf(lead, sizeof(lead), "%s: ", cmd_name);
				first = 2;
			}
	}
	cfg->command = cmd;
	*help_for = cmd;
	/* getopt keeps state between calls (glibc: the rest of a "-hv" cluster it stopped in).
	 * optind = 0 asks glibc and musl for a full reset, which restarts at index 1, so a
	 * subcommand's options are parsed from an argv that starts at the subcommand's name. */
	av = argv + first - 1;
	ac = argc - first + 1;
	optind = 0;
	opterr = 0;
	/* '+': stop at the first non-option, which begins the trainer command. */
	while ((opt = getopt_long(ac, av, shortopts, longopts, NULL)) != -1) {
		const char *a = optarg;
		const struct s_option *o = NULL;
		if (opt >= S_VAL && (size_t)(opt - S_VAL) < S_N_OPTIONS)
			o = s_find(s_table[opt - S_VAL].name, cmd);
		for (size_t i = 0; !o && opt > 0 && opt < 256 && i < S_N_OPTIONS; i++)
			if (s_table[i].letter == opt)
				o = &s_table[i];
		if (opt == '?' || opt == ':' || !o) {
			/* An unknown short option may sit inside a cluster ("-xv") that optind has
			 * not moved past: name the letter. ('v' and 'h' here mean "--verbose=1".) */
			char letter[3] = { '-', (char)optopt, '\0' };
			const char *bad = opt == '?' && optopt > 0 && optopt < 256 &&
					  !strchr("vh", optopt) ? letter : av[optind - 1];
			snprintf(why, why_len, "%s%s '%s' (see %s%s --help)", lead,
				 opt == ':' ? "missing value for" : "unknown option", bad,
				 first == 2 ? "resume-run " : "", cmd_name);
			return RR_EINVAL;
		}
		if (cmd == RR_CMD_GC && strcmp(o->name, "grace") == 0) {
			/* Before 0.2.0 gc's grace was --grace too: a script that still says so gets
			 * the new name rather than the run's deadline or a silent default. */
			snprintf(why, why_len,
				 "gc: --grace is the run's SIGTERM deadline; gc's age "
				 "for unreferenced chunks is --gc-grace DURATION (RESUME_RUN_GC_GRACE, "
				 "default 1h, at least 10m)");
			return RR_EINVAL;
		}
		if (!(o->commands & S_ON(cmd))) {
			snprintf(why, why_len,
				 "%soption '%s' does not apply here (see %s%s --help)",
				 lead, s_opt_word(av, a), first == 2 ? "resume-run " : "", cmd_name);
			return RR_EINVAL;
		}
		rc = o->set(cfg, cmd, a);
		if (rc == 1)
			return 0; /* --help, --version */
		if (rc) {
			snprintf(why, why_len, "%sinvalid value '%s' for %s: must be %s", lead,
				 a,
				 s_opt_word(av, a), o->values ? o->values : "see --help");
			return RR_EINVAL;
		}
		given[o - s_table] = 1;
		if (strcmp(o->name, "notice-file") == 0)
			cfg->notice_file_old_name = "--notice-file";
	}
	/* The environment stands in for each flag the command takes and was not given (nor an
	 * older name of it: an entry with the same setter). */
	for (size_t i = 0; i < S_N_OPTIONS; i++) {
		const char *v, *which;
		if (s_alias_given(i, given) || !(s_table[i].commands & S_ON(cmd)) ||
		    !(v = s_option_env(&s_table[i], &which)))
			continue;
		if (s_table[i].set(cfg, cmd, v)) {
			snprintf(why, why_len, "%s must be %s, not '%s'", which,
				 s_table[i].values ? s_table[i].values : "see --help", v);
			return RR_EINVAL;
		}
		given[i] = 1;
		if (strcmp(s_table[i].name, "notice-file") == 0)
			cfg->notice_file_old_name = s_table[i].env;
	}
	cfg->store_opts.metadata_endpoint = cfg->metadata_endpoint;
	/* A remote store's workers spend much of their time waiting on the network: twice as
	 * many as cores (at most 8, about 20 MB each) keep both the CPU and the link busy. */
	if (!cfg->threads) {
		cfg->threads = rr_pool_default_threads();
		if (strncasecmp(cfg->store_url, "file://", 7) != 0)
			cfg->threads = cfg->threads * 2 > 8 ? (cfg->threads > 8 ? cfg->threads : 8)
							    : cfg->threads * 2;
	}
	if (!rr_checkpoint_name_valid(cfg->run_id)) {
		snprintf(why, why_len,
			 "invalid run id '%s': use 1-255 characters, no '/', not "
			 "starting with '.'", cfg->run_id);
		return RR_EINVAL;
	}
	if (cfg->node_rank >= cfg->nnodes) {
		snprintf(why, why_len, "node rank %u is not below the number of nodes %u "
			 "(--node-rank K needs K < --nnodes N)", cfg->node_rank, cfg->nnodes);
		return RR_EINVAL;
	}
	if (cfg->checkpoint && !rr_checkpoint_name_valid(cfg->checkpoint)) {
		snprintf(why, why_len, "invalid checkpoint name '%s'", cfg->checkpoint);
		return RR_EINVAL;
	}
	if (cfg->command == RR_CMD_RUN) {
		if (optind >= ac) {
			snprintf(why, why_len,
				 "no command to run (usage: resume-run [OPTIONS] -- "
				 "COMMAND [ARGS...]; see resume-run --help)");
			return RR_EINVAL;
		}
		/* Without "--", a subcommand's name after options ("resume-run -v ls") is that
		 * subcommand with those options (not /bin/ls run as the trainer), and a
		 * word that is no program ("resume-run lss") a mistake, not a trainer. */
		if (strcmp(av[optind - 1], "--") != 0) {
			for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
				if (strcmp(av[optind], commands[i].name) == 0)
					return s_parse_moved(argc, argv, argc - ac + optind, cfg,
							     help_for, why, why_len);
			char *exe = NULL;
			if (rr_supervisor_resolve(av[optind], &exe) == RR_ENOENT) {
				snprintf(why, why_len,
					 "unknown command '%s' (commands: ls, restore, "
					 "verify, gc, report, simulate, unmark; a program to run goes after '--': "
					 "resume-run [OPTIONS] -- COMMAND [ARGS...])", av[optind]);
				return RR_EINVAL;
			}
			free(exe);
		}
		cfg->argv = av + optind;
		cfg->argc = ac - optind;
	} else if (optind < ac) {
		snprintf(why, why_len,
			 "%s: unexpected argument '%s' (see resume-run %s --help)",
			 cmd_name, av[optind], cmd_name);
		return RR_EINVAL;
	}
	if (cfg->command == RR_CMD_SIMULATE && (!cfg->sim_cost_ms ||
						(!cfg->mtbf_ms && !cfg->sim_trace))) {
		snprintf(why, why_len,
			 "simulate: %s is required (see resume-run simulate --help)",
			 !cfg->sim_cost_ms ? "--cost DURATION" : "--mtbf DURATION (or --trace FILE)");
		return RR_EINVAL;
	}
	if (cfg->command == RR_CMD_UNMARK && !cfg->checkpoint) {
		snprintf(why, why_len,
			 "unmark: --checkpoint NAME is required (see resume-run unmark "
			 "--help)");
		return RR_EINVAL;
	}
	if (cfg->command == RR_CMD_RESTORE && !cfg->to) {
		snprintf(why, why_len,
			 "restore: --to DIR is required (see resume-run restore --help)");
		return RR_EINVAL;
	}
	return 0;
}
