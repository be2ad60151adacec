/* The option table (options.h) and the setters that store each option's value in struct
 * rr_config, with the bounds each value must keep. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "rr/cloud.h"
#include "rr/codec.h"
#include "rr/error.h"
#include "rr/gc.h"
#include "rr/supervisor.h"

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

/* every command that opens a store */
#define S_ALL ((1u << RR_CMD_RUN) | (1u << RR_CMD_LS) | (1u << RR_CMD_RESTORE) |   \
	       (1u << RR_CMD_VERIFY) | (1u << RR_CMD_GC) | (1u << RR_CMD_REPORT) |          \
	       (1u << RR_CMD_UNMARK))
/* every command, simulate too (it opens no store) */
#define S_ANY (S_ALL | RR_ON(RR_CMD_SIMULATE))

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

/* Only a signal that means nothing else to the trainer, its wrappers or the kernel
 * (rr_signal_unfit_for_checkpoint says why the others do not; config.c puts that in the
 * message). */
static int s_set_signal(struct rr_config *c, enum rr_command cmd, const char *v)
{
	int sig;

	(void)cmd;
	if (rr_signal_from_name(v, &sig) || rr_signal_unfit_for_checkpoint(sig))
		return RR_EINVAL;
	c->checkpoint_signal = sig;
	return 0;
}

static int s_set_every(struct rr_config *c, enum rr_command cmd, const char *v)
{
	(void)cmd;
	/* off, the default: no periodic request (a variable can say so over a deploy's). */
	if (strcmp(v, "off") == 0) {
		c->every_auto = 0;
		c->every_ms = 0;
		return 0;
	}
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
	if (strcmp(v, "off") == 0) { /* the default, said over a deploy's setting */
		c->keep_every_ms = 0;
		return 0;
	}
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
const struct rr_option rr_options[] = {
	{ "store", 0, "URL", "RESUME_RUN_STORE", S_ALL, RR_GROUP_MAIN, s_set_store,
	  "file:///abs/path, file://./rel, s3://bucket/prefix,\n"
	  "gs://bucket/prefix or az://container/prefix (Azure Blob: account\n"
	  "and credentials from AZURE_STORAGE_* as the Azure CLI reads them)\n"
	  "(default " RR_CONFIG_DEFAULT_STORE ": this machine's disk, said\n"
	  "loudly on a cloud)", NULL },
	{ "run-id", 0, "ID", "RESUME_RUN_ID", S_ALL, RR_GROUP_MAIN, s_set_run_id,
	  "names the run inside the store (default: default)", NULL },
	{ "checkpoint-dir", 0, "DIR", "RESUME_RUN_CHECKPOINT_DIR", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN,
	  s_set_checkpoint_dir,
	  "where the trainer writes checkpoints; only its last component\n"
	  "is created (default " RR_CONFIG_DEFAULT_CHECKPOINT_DIR ")", NULL },
	{ "cloud", 0, "NAME", "RESUME_RUN_CLOUD", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN, s_set_cloud,
	  "auto (default: detect), none, aws, gcp or azure: whose\n"
	  "preemption notices to watch",
	  "auto, none, aws, gcp or azure" },
	{ "metadata-endpoint", 0, "URL", "RESUME_RUN_METADATA_ENDPOINT", RR_ON(RR_CMD_RUN),
	  RR_GROUP_MAIN, s_set_metadata_endpoint,
	  "base URL of the metadata service (tests, proxies)", NULL },
	{ "poll-interval", 0, "DURATION", "RESUME_RUN_POLL_INTERVAL", RR_ON(RR_CMD_RUN),
	  RR_GROUP_MAIN, s_set_poll_interval,
	  "metadata poll period (default aws 2s, azure 1s; GCP\n"
	  "waits on a hanging GET instead)",
	  "a duration of at least 100ms (500ms, 2s)" },
	{ "azure-ack", 0, NULL, "RESUME_RUN_AZURE_ACK", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN,
	  s_set_azure_ack, "approve the Azure event once the checkpoint is durable", NULL },
	{ "drill-file", 0, "PATH", "RESUME_RUN_DRILL_FILE", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN,
	  s_set_notice_file,
	  "treat the appearance of PATH as a preemption notice (drills);\n"
	  "one there at start is a leftover, ignored until removed", NULL },
	/* The name before 0.2.0, kept for one release with a warning: RESUME_RUN_NOTICE_FILE is
	 * also the trainer's notice JSON (DESIGN.md §2), another file. After drill-file in this
	 * table, so that RESUME_RUN_DRILL_FILE wins over it. */
	{ "notice-file", 0, "PATH", "RESUME_RUN_NOTICE_FILE", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN,
	  s_set_notice_file, "deprecated: --drill-file (RESUME_RUN_DRILL_FILE)", NULL },
	{ "grace", 0, "SECONDS", "RESUME_RUN_GRACE", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN, s_set_grace,
	  "deadline after SIGTERM/SIGINT to the agent (default 25)",
	  "whole seconds, 0-86400" },
	{ "gc-grace", 0, "DURATION", "RESUME_RUN_GC_GRACE", RR_ON(RR_CMD_RUN) | RR_ON(RR_CMD_GC),
	  RR_GROUP_MAIN, s_set_gc_grace,
	  "chunks no checkpoint references are deleted (by gc and the\n"
	  "run's retention) once older than this; at least 10m, longer\n"
	  "than a persist takes (default 1h)",
	  "a duration of at least 10m (e.g. 1h, 90m)" },
	{ "signal", 0, "SIG", "RESUME_RUN_SIGNAL", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN, s_set_signal,
	  "signal asking the trainer for a checkpoint (default USR1;\n"
	  "also USR2, HUP, QUIT, ALRM, PWR, real-time ones by number)",
	  "USR1, USR2, HUP, QUIT, ALRM, PWR (or their numbers) or a real-time signal's number, "
	  "SIGRTMIN-SIGRTMAX (34-64 with glibc)" },
	{ "every", 0, "DURATION", "RESUME_RUN_EVERY", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN, s_set_every,
	  "also ask for a checkpoint periodically (90s, 30m, 2h), or\n"
	  "auto: as often as the run's losses and the checkpoint's\n"
	  "measured cost make worthwhile (Daly's interval); off\n"
	  "(default): never",
	  "a duration of at least 1s (90s, 30m, 2h), auto or off" },
	{ "mtbf", 0, "DURATION", "RESUME_RUN_MTBF", RR_ON(RR_CMD_RUN) | RR_ON(RR_CMD_SIMULATE),
	  RR_GROUP_MAIN, s_set_mtbf,
	  "for --every auto: the mean time between losses no notice\n"
	  "covers (default: estimated from the run's history);\n"
	  "simulate: that of the synthetic losses", "a duration of at least 1s (30m, 24h)" },
	{ "max-overhead", 0, "PCT", "RESUME_RUN_MAX_OVERHEAD",
	  RR_ON(RR_CMD_RUN) | RR_ON(RR_CMD_SIMULATE), RR_GROUP_MAIN, s_set_max_overhead,
	  "for --every auto: the checkpoint stall takes at most PCT% of\n"
	  "training time (default 5)", "a percentage above 0 and at most 100 (5, 3.5%)" },
	/* restore takes it too: it writes the rule's pointer file (DeepSpeed's latest) */
	{ "commit", 0, "RULE", "RESUME_RUN_COMMIT", RR_ON(RR_CMD_RUN) | RR_ON(RR_CMD_RESTORE),
	  RR_GROUP_MAIN, s_set_commit,
	  "what commits a checkpoint: auto (default: rename, plus HF's\n"
	  "trainer_state.json, DCP's .metadata, DeepSpeed's latest),\n"
	  "rename, marker:NAME or pointer:NAME",
	  "auto, rename, marker:NAME or pointer:NAME" },
	{ "precision", 0, "MODE", "RESUME_RUN_PRECISION", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN,
	  s_set_precision,
	  "how F32 tensors of *.safetensors files are stored: auto\n"
	  "(default: scaled FP16 where that is as precise as BF16, else\n"
	  "BF16), fp16, bf16, or exact (lossless)",
	  "auto, fp16, bf16 or exact" },
	{ "exact", 0, "GLOB", "RESUME_RUN_EXACT", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN, s_set_exact,
	  "tensors whose names match are stored bit-exact (repeatable;\n"
	  "the environment holds one GLOB)",
	  "a GLOB that is not empty, given at most 64 times" },
	{ "keep", 0, "N", "RESUME_RUN_KEEP", RR_ON(RR_CMD_RUN) | RR_ON(RR_CMD_GC), RR_GROUP_MAIN,
	  s_set_keep, "committed checkpoints kept in the store (default 3)",
	  "1-1000000" },
	{ "keep-every", 0, "DURATION", "RESUME_RUN_KEEP_EVERY", RR_ON(RR_CMD_RUN) | RR_ON(RR_CMD_GC),
	  RR_GROUP_MAIN, s_set_keep_every,
	  "besides the newest N, keep one checkpoint per period\n"
	  "(the oldest of each; e.g. 1h; default off) ...", "a duration such as 30m or 1h, or off" },
	{ "keep-for", 0, "DURATION", "RESUME_RUN_KEEP_FOR", RR_ON(RR_CMD_RUN) | RR_ON(RR_CMD_GC),
	  RR_GROUP_MAIN, s_set_keep_for,
	  "... for this long after its commit (default: for ever);\n"
	  "the newest proven checkpoint is always kept", "a duration such as 48h (at most 720h)" },
	{ "suspect-after", 0, "N", "RESUME_RUN_SUSPECT_AFTER", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN,
	  s_set_suspect_after,
	  "failures after resuming from one checkpoint, with no newer\n"
	  "commit, that mark it suspect: the next start takes the one\n"
	  "before (default 2; 0: never)", "0-1000" },
	{ "max-restarts", 0, "N", "RESUME_RUN_MAX_RESTARTS", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN,
	  s_set_max_restarts, "restarts after a trainer failure (default 3)",
	  "0-1000000" },
	{ "trainer-env", 0, "pass|strip", "RESUME_RUN_TRAINER_ENV", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN,
	  s_set_trainer_env,
	  "strip: the agent's credential variables (AWS_*KEY*,\n"
	  "AWS_SESSION_TOKEN, GOOGLE_APPLICATION_CREDENTIALS, ...)\n"
	  "are not passed to the trainer (default pass)",
	  "pass or strip" },
	{ "preempted-exit-code", 0, "N", "RESUME_RUN_PREEMPTED_EXIT_CODE", RR_ON(RR_CMD_RUN),
	  RR_GROUP_MAIN, s_set_preempted_exit_code,
	  "exit status when a preemption or termination notice\n"
	  "stopped the trainer, so relaunchers (Kubernetes, systemd,\n"
	  "Slurm) resume the job; 0: the trainer's own status\n"
	  "(default 75, EX_TEMPFAIL)",
	  "0-255" },
	{ "threads", 0, "N", "RESUME_RUN_THREADS", S_ALL, RR_GROUP_MAIN, s_set_threads,
	  "persist/restore worker threads (default: number of cores;\n"
	  "twice that, up to 8, for a remote store)",
	  "1-256" },
	{ "zstd-level", 0, "N", "RESUME_RUN_ZSTD_LEVEL", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN,
	  s_set_zstd_level,
	  "zstd level of plain files, 1..19 (default 3; tensors'\n"
	  "byte planes always use 1)",
	  "1-19" },
	{ "metrics-file", 0, "PATH", "RESUME_RUN_METRICS_FILE", RR_ON(RR_CMD_RUN), RR_GROUP_MAIN,
	  s_set_metrics_file,
	  "Prometheus text-format metrics, replaced atomically on every\n"
	  "change (node_exporter textfile collector)", NULL },
	{ "nnodes", 0, "N", "RESUME_RUN_NNODES", RR_ON(RR_CMD_RUN) | RR_ON(RR_CMD_RESTORE),
	  RR_GROUP_MAIN, s_set_nnodes,
	  "nodes of a multi-node job, one agent each (default 1; also\n"
	  "SLURM_NNODES, NNODES)",
	  "a number of nodes, 1-4096" },
	{ "node-rank", 0, "K", "RESUME_RUN_NODE_RANK", RR_ON(RR_CMD_RUN) | RR_ON(RR_CMD_RESTORE),
	  RR_GROUP_MAIN, s_set_node_rank,
	  "this node's rank, 0..N-1 (default 0; also SLURM_NODEID,\n"
	  "NODE_RANK, not read when N is given as 1)",
	  "a node rank, 0-4095" },
	{ "checkpoint", 0, "NAME", "RESUME_RUN_CHECKPOINT",
	  RR_ON(RR_CMD_RESTORE) | RR_ON(RR_CMD_VERIFY) | RR_ON(RR_CMD_UNMARK), RR_GROUP_MAIN,
	  s_set_checkpoint,
	  "this checkpoint instead of the newest committed one", NULL },
	{ "to", 0, "DIR", "RESUME_RUN_TO", RR_ON(RR_CMD_RESTORE), RR_GROUP_MAIN, s_set_to,
	  "where the checkpoint lands: DIR/NAME/ (required)", NULL },
	{ "cost", 0, "DURATION", "RESUME_RUN_COST", RR_ON(RR_CMD_SIMULATE), RR_GROUP_MAIN,
	  s_set_cost, "what a checkpoint stalls the trainer (required)", NULL },
	{ "lead", 0, "DURATION", "RESUME_RUN_LEAD", RR_ON(RR_CMD_SIMULATE), RR_GROUP_MAIN,
	  s_set_lead, "the lead of the trace's notices that give none\n"
	  "(default 120s, AWS's)", NULL },
	{ "trace", 0, "FILE", "RESUME_RUN_TRACE", RR_ON(RR_CMD_SIMULATE), RR_GROUP_MAIN,
	  s_set_trace, "replay FILE's losses and notices (\"SECONDS loss\",\n"
	  "\"SECONDS notice [LEAD]\") instead of synthetic ones", NULL },
	{ "hours", 0, "H", "RESUME_RUN_HOURS", RR_ON(RR_CMD_SIMULATE), RR_GROUP_MAIN, s_set_hours,
	  "how long to simulate (default 10000; with --trace: until its\n"
	  "last event)", NULL },
	{ "weibull", 0, "SHAPE", "RESUME_RUN_WEIBULL", RR_ON(RR_CMD_SIMULATE), RR_GROUP_MAIN,
	  s_set_weibull, "Weibull lifetimes of this shape (0.1-10) instead of\n"
	  "exponential ones (< 1: losses cluster early)", NULL },
	{ "prior", 0, "DURATION", "RESUME_RUN_PRIOR", RR_ON(RR_CMD_SIMULATE), RR_GROUP_MAIN,
	  s_set_prior, "what auto believes of the MTBF before any loss\n"
	  "(default 24h, the prior without a cloud)", NULL },
	{ "seed", 0, "N", "RESUME_RUN_SEED", RR_ON(RR_CMD_SIMULATE), RR_GROUP_MAIN, s_set_seed,
	  "the synthetic history's seed (default 1)", NULL },
	{ "json", 0, NULL, "RESUME_RUN_JSON", RR_ON(RR_CMD_SIMULATE), RR_GROUP_MAIN, s_set_json,
	  "print the results as JSON (with interval_s)", NULL },
	{ "json", 0, NULL, "RESUME_RUN_JSON", RR_ON(RR_CMD_REPORT), RR_GROUP_MAIN, s_set_json,
	  "the report as JSON for tools (shape in the README)", NULL },
	{ "price-spot", 0, "PRICE", "RESUME_RUN_PRICE_SPOT", RR_ON(RR_CMD_REPORT), RR_GROUP_MAIN,
	  s_set_price_spot,
	  "price of a spot machine-hour; with --price-on-demand, an\n"
	  "estimate of what the run cost against on-demand machines",
	  "a positive number below 1000000 (e.g. 0.85)" },
	{ "price-on-demand", 0, "PRICE", "RESUME_RUN_PRICE_ON_DEMAND", RR_ON(RR_CMD_REPORT),
	  RR_GROUP_MAIN, s_set_price_on_demand,
	  "price of an on-demand machine-hour",
	  "a positive number below 1000000 (e.g. 2.45)" },
	{ "log-format", 0, "text|json", "RESUME_RUN_LOG_FORMAT", S_ANY, RR_GROUP_MAIN,
	  s_set_log_format, "log lines on stderr (default text)",
	  "text or json" },
	{ "verbose", 'v', NULL, "RESUME_RUN_VERBOSE", S_ANY, RR_GROUP_MAIN, s_set_verbose,
	  "also log debug lines", NULL },
	{ "help", 'h', NULL, NULL, S_ANY, RR_GROUP_MAIN, s_set_help, "this help", NULL },
	{ "version", 0, NULL, NULL, S_ANY, RR_GROUP_MAIN, s_set_version, "the version", NULL },
	{ "s3-addressing", 0, "MODE", "RESUME_RUN_S3_ADDRESSING", S_ALL, RR_GROUP_S3,
	  s_set_s3_addressing,
	  "auto (path-style with an endpoint URL, else virtual-hosted),\n"
	  "path or virtual", NULL },
	{ "s3-sse", 0, "MODE", "RESUME_RUN_S3_SSE", S_ALL, RR_GROUP_S3, s_set_s3_sse,
	  "server-side encryption: AES256 or aws:kms", NULL },
	{ "s3-sse-kms-key-id", 0, "ID", "RESUME_RUN_S3_SSE_KMS_KEY_ID", S_ALL, RR_GROUP_S3,
	  s_set_s3_sse_kms_key_id, "the KMS key for aws:kms", NULL },
	{ "gcs-hmac", 0, NULL, "RESUME_RUN_GCS_HMAC", S_ALL, RR_GROUP_GCS, s_set_gcs_hmac,
	  "sign with HMAC keys (AWS_ACCESS_KEY_ID/...) instead", NULL },
	{ "encryption-key-file", 0, "FILE", "RESUME_RUN_ENCRYPTION_KEY_FILE", S_ALL,
	  RR_GROUP_ENCRYPTION, s_set_encryption_key_file,
	  "seal every stored object with AES-256-GCM; FILE holds\n"
	  "a 256-bit key as 64 hex digits (keep it: without it nothing\n"
	  "restores)", NULL },
};
const size_t rr_n_options = sizeof(rr_options) / sizeof(rr_options[0]);
_Static_assert(sizeof(rr_options) / sizeof(rr_options[0]) <= RR_MAX_OPTIONS,
	       "more options than RR_MAX_OPTIONS (agent/cli/options.h)");

size_t rr_config_option_count(void)
{
	return rr_n_options;
}

int rr_config_option(size_t i, const char **name, const char **env, unsigned *commands)
{
	if (i >= rr_n_options)
		return RR_EINVAL;
	*name = rr_options[i].name;
	*env = rr_options[i].env;
	*commands = rr_options[i].commands;
	return 0;
}
