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

/* Every command opens the store, so every command takes these. */
#define S_STORE_HELP                                                                          \
	"S3 stores (every command): credentials, region and endpoint as the AWS CLI finds\n" \
	"them (AWS_ACCESS_KEY_ID..., AWS_PROFILE, web identity, container, instance role;\n" \
	"AWS_REGION; AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL; AWS_CA_BUNDLE).\n"              \
	"  --s3-addressing MODE   auto (path-style with an endpoint URL, else virtual-hosted),\n" \
	"                         path or virtual [RESUME_RUN_S3_ADDRESSING]\n"             \
	"  --s3-sse MODE          server-side encryption: AES256 or aws:kms\n"             \
	"                         [RESUME_RUN_S3_SSE]\n"                                    \
	"  --s3-sse-kms-key-id ID the KMS key for aws:kms [RESUME_RUN_S3_SSE_KMS_KEY_ID]\n" \
	"GCS stores (gs://bucket/prefix): GOOGLE_APPLICATION_CREDENTIALS (a service-account\n" \
	"key), else the metadata server's token; STORAGE_EMULATOR_HOST redirects requests.\n" \
	"  --gcs-hmac             sign with HMAC keys (AWS_ACCESS_KEY_ID/...) instead\n" \
	"Encryption (every command):\n"                                                   \
	"  --encryption-key-file FILE  seal every stored object with AES-256-GCM; FILE holds\n" \
	"                         a 256-bit key as 64 hex digits (keep it: without it nothing\n" \
	"                         restores) [RESUME_RUN_ENCRYPTION_KEY_FILE]\n"

static const char s_run_help[] =
	"usage: resume-run [OPTIONS] -- COMMAND [ARGS...]\n"
	"       resume-run ls|restore|verify|gc|report [OPTIONS]   (see resume-run CMD --help)\n"
	"\n"
	"Runs COMMAND (the trainer) under supervision. At start it restores the newest committed\n"
	"checkpoint of the run from the store; on a notice it asks the trainer for a checkpoint\n"
	"and makes it durable in the store before the deadline.\n"
	"\n"
	"Options (environment in brackets):\n"
	"  --store URL            file:///abs/path, file://./rel, s3://bucket/prefix or\n"
	"                         gs://bucket/prefix\n"
	"                         [RESUME_RUN_STORE] (default " DEFAULT_STORE ")\n"
	"  --run-id ID            names the run inside the store [RESUME_RUN_ID] (default)\n"
	"  --checkpoint-dir DIR   where the trainer writes checkpoints\n"
	"                         [RESUME_RUN_CHECKPOINT_DIR] (default " DEFAULT_CHECKPOINT_DIR ")\n"
	"  --cloud NAME           auto (default: detect), none, aws, gcp or azure: whose\n"
	"                         preemption notices to watch [RESUME_RUN_CLOUD]\n"
	"  --metadata-endpoint URL  base URL of the metadata service (tests, proxies)\n"
	"                         [RESUME_RUN_METADATA_ENDPOINT]\n"
	"  --poll-interval DURATION  metadata poll period (default aws 2s, azure 1s; GCP\n"
	"                         waits on a hanging GET instead)\n"
	"  --azure-ack            approve the Azure event once the checkpoint is durable\n"
	"  --notice-file PATH     treat the appearance of PATH as a preemption notice (drills)\n"
	"  --grace SECONDS        deadline after SIGTERM/SIGINT to the agent (default 25)\n"
	"  --signal SIG           signal asking the trainer for a checkpoint (default USR1)\n"
	"  --every DURATION       also ask for a checkpoint periodically (90s, 30m, 2h)\n"
	"  --commit RULE          what commits a checkpoint: auto (default: rename, plus HF's\n"
	"                         trainer_state.json, DCP's .metadata, DeepSpeed's latest),\n"
	"                         rename, marker:NAME or pointer:NAME [RESUME_RUN_COMMIT]\n"
	"  --precision MODE       how F32 tensors of *.safetensors files are stored: auto\n"
	"                         (default: scaled FP16 where that is as precise as BF16, else\n"
	"                         BF16), fp16, bf16, or exact (lossless)\n"
	"  --exact GLOB           tensors whose names match are stored bit-exact (repeatable)\n"
	"  --keep N               committed checkpoints kept in the store (default 3)\n"
	"  --max-restarts N       restarts after a trainer failure (default 3)\n"
	"  --trainer-env pass|strip  strip: the agent's credential variables (AWS_*KEY*,\n"
	"                         AWS_SESSION_TOKEN, GOOGLE_APPLICATION_CREDENTIALS, ...)\n"
	"                         are not passed to the trainer (default pass)\n"
	"                         [RESUME_RUN_TRAINER_ENV]\n"
	"  --preempted-exit-code N  exit status when a preemption or termination notice\n"
	"                         stopped the trainer, so relaunchers (Kubernetes, systemd,\n"
	"                         Slurm) resume the job; 0: the trainer's own status\n"
	"                         [RESUME_RUN_PREEMPTED_EXIT_CODE] (default 75, EX_TEMPFAIL)\n"
	"  --threads N            persist/restore worker threads (default: number of cores;\n"
	"                         twice that, up to 8, for a remote store)\n"
	"  --metrics-file PATH    Prometheus text-format metrics, replaced atomically on every\n"
	"                         change (node_exporter textfile collector) [RESUME_RUN_METRICS_FILE]\n"
	"  --nnodes N             nodes of a multi-node job, one agent each (default 1)\n"
	"                         [RESUME_RUN_NNODES, SLURM_NNODES, NNODES]\n"
	"  --node-rank K          this node's rank, 0..N-1 (default 0)\n"
	"                         [RESUME_RUN_NODE_RANK, SLURM_NODEID, NODE_RANK]\n"
	"  --log-format text|json log lines on stderr (default text)\n"
	"  -v, --verbose          also log debug lines\n"
	"  -h, --help             this help;  --version  the version\n"
	S_STORE_HELP
	"\n"
	"Signals: SIGTERM/SIGINT = a notice (checkpoint, persist, then SIGTERM to the trainer);\n"
	"a second one forwards at once. SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH are forwarded.\n"
	"Exit status: the trainer's; 128+N if it died of signal N; --preempted-exit-code (75)\n"
	"if a notice stopped it; 127 command not found; 126 not executable; 125 agent error.\n";

static const char s_ls_help[] =
	"usage: resume-run ls [--store URL] [--run-id ID]\n"
	"Lists the checkpoints of a run, newest first: name, state (committed, or why not),\n"
	"files, original and stored size, commit time. LATEST is marked with '*'.\n" S_STORE_HELP;

static const char s_restore_help[] =
	"usage: resume-run restore [--store URL] [--run-id ID] [--checkpoint NAME] --to DIR\n"
	"Restores the newest committed checkpoint (or NAME) into DIR/NAME/, verifying every\n"
	"chunk. Without --checkpoint, a damaged newest checkpoint falls back to an older one.\n"
	"A one-file checkpoint (a Lightning .ckpt) lands as the file DIR/NAME. --commit RULE\n"
	"(default auto) also writes the rule's pointer file: DIR/latest for DeepSpeed's\n"
	"global_stepN, DIR/NAME2 for pointer:NAME2.\n"
	S_STORE_HELP;

static const char s_verify_help[] =
	"usage: resume-run verify [--store URL] [--run-id ID] [--checkpoint NAME]\n"
	"Re-reads and re-hashes every chunk of every committed checkpoint (or of NAME).\n"
	"Exit status 0 when all are intact, 1 when any is damaged, 125 on other errors.\n"
	S_STORE_HELP;

static const char s_gc_help[] =
	"usage: resume-run gc [--store URL] [--run-id ID] [--keep N] [--grace DURATION]\n"
	"Keeps the N newest committed checkpoints (default 3), deletes older ones, then deletes\n"
	"chunks no remaining checkpoint references and older than --grace (default 1h; chunks\n"
	"younger than that may belong to an upload still in flight).\n" S_STORE_HELP;

static const char s_report_help[] =
	"usage: resume-run report [--store URL] [--run-id ID] [--json]\n"
	"                         [--price-spot PRICE --price-on-demand PRICE]\n"
	"What preemptions cost the run, from its ledger in the store (any machine can ask):\n"
	"machines, notices and whether each checkpoint was durable before its deadline, work\n"
	"lost, restores, restarts, bytes. --json: the same for tools (shape in the README).\n"
	"  --price-spot PRICE       price of a spot machine-hour \\ both: an estimate of what\n"
	"  --price-on-demand PRICE  price of an on-demand one   / the run cost vs on-demand\n"
	S_STORE_HELP;

void rr_config_print_help(enum rr_command cmd)
{
	const char *text = cmd == RR_CMD_LS ? s_ls_help :
			   cmd == RR_CMD_REPORT ? s_report_help :
			   cmd == RR_CMD_RESTORE ? s_restore_help :
			   cmd == RR_CMD_VERIFY ? s_verify_help :
			   cmd == RR_CMD_GC ? s_gc_help : s_run_help;
	fputs(text, stdout);
}

enum {
	OPT_STORE = 256, OPT_RUN_ID, OPT_CKPT_DIR, OPT_NOTICE_FILE, OPT_GRACE, OPT_SIGNAL,
	OPT_EVERY, OPT_KEEP, OPT_MAX_RESTARTS, OPT_THREADS, OPT_LOG_FORMAT, OPT_CHECKPOINT,
	OPT_TO, OPT_VERSION, OPT_ZSTD_LEVEL, OPT_PRECISION, OPT_EXACT, OPT_S3_ADDRESSING,
	OPT_S3_SSE, OPT_S3_SSE_KMS_KEY_ID, OPT_CLOUD, OPT_METADATA_ENDPOINT, OPT_POLL_INTERVAL,
	OPT_AZURE_ACK, OPT_GCS_HMAC, OPT_TRAINER_ENV,
	OPT_ENCRYPTION_KEY_FILE, OPT_JSON, OPT_PRICE_SPOT, OPT_PRICE_ON_DEMAND,
	OPT_METRICS_FILE,
	OPT_PREEMPTED_EXIT_CODE,
	OPT_COMMIT,
	OPT_NNODES,
	OPT_NODE_RANK,
};

static const struct option s_options[] = {
	{ "store", required_argument, NULL, OPT_STORE },
	{ "run-id", required_argument, NULL, OPT_RUN_ID },
	{ "checkpoint-dir", required_argument, NULL, OPT_CKPT_DIR },
	{ "notice-file", required_argument, NULL, OPT_NOTICE_FILE },
	{ "grace", required_argument, NULL, OPT_GRACE },
	{ "signal", required_argument, NULL, OPT_SIGNAL },
	{ "every", required_argument, NULL, OPT_EVERY },
	{ "commit", required_argument, NULL, OPT_COMMIT },
	{ "keep", required_argument, NULL, OPT_KEEP },
	{ "max-restarts", required_argument, NULL, OPT_MAX_RESTARTS },
	{ "trainer-env", required_argument, NULL, OPT_TRAINER_ENV },
	{ "preempted-exit-code", required_argument, NULL, OPT_PREEMPTED_EXIT_CODE },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "zstd-level", required_argument, NULL, OPT_ZSTD_LEVEL },
	{ "precision", required_argument, NULL, OPT_PRECISION },
	{ "exact", required_argument, NULL, OPT_EXACT },
	{ "log-format", required_argument, NULL, OPT_LOG_FORMAT },
	{ "cloud", required_argument, NULL, OPT_CLOUD },
	{ "metadata-endpoint", required_argument, NULL, OPT_METADATA_ENDPOINT },
	{ "poll-interval", required_argument, NULL, OPT_POLL_INTERVAL },
	{ "azure-ack", no_argument, NULL, OPT_AZURE_ACK },
	{ "s3-addressing", required_argument, NULL, OPT_S3_ADDRESSING },
	{ "gcs-hmac", no_argument, NULL, OPT_GCS_HMAC },
	{ "s3-sse", required_argument, NULL, OPT_S3_SSE },
	{ "s3-sse-kms-key-id", required_argument, NULL, OPT_S3_SSE_KMS_KEY_ID },
	{ "encryption-key-file", required_argument, NULL, OPT_ENCRYPTION_KEY_FILE },
	{ "checkpoint", required_argument, NULL, OPT_CHECKPOINT },
	{ "to", required_argument, NULL, OPT_TO },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "price-spot", required_argument, NULL, OPT_PRICE_SPOT },
	{ "price-on-demand", required_argument, NULL, OPT_PRICE_ON_DEMAND },
	{ "metrics-file", required_argument, NULL, OPT_METRICS_FILE },
	{ "nnodes", required_argument, NULL, OPT_NNODES },
	{ "node-rank", required_argument, NULL, OPT_NODE_RANK },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* Which options each command takes (the rest are refused with a clear line). */
static int s_allowed(enum rr_command cmd, int opt)
{
	switch (opt) {
	case OPT_STORE: case OPT_RUN_ID: case OPT_LOG_FORMAT: case OPT_THREADS: case 'v':
	case 'h': case OPT_VERSION: case OPT_S3_ADDRESSING: case OPT_S3_SSE:
	case OPT_S3_SSE_KMS_KEY_ID: case OPT_GCS_HMAC:
	case OPT_ENCRYPTION_KEY_FILE:
		return 1;
	case OPT_CHECKPOINT:
		return cmd == RR_CMD_RESTORE || cmd == RR_CMD_VERIFY;
	case OPT_TO:
		return cmd == RR_CMD_RESTORE;
	case OPT_NNODES: case OPT_NODE_RANK:
		return cmd == RR_CMD_RUN || cmd == RR_CMD_RESTORE;
	case OPT_JSON: case OPT_PRICE_SPOT: case OPT_PRICE_ON_DEMAND:
		return cmd == RR_CMD_REPORT;
	case OPT_COMMIT: /* restore writes the rule's pointer file (DeepSpeed's latest) */
		return cmd == RR_CMD_RUN || cmd == RR_CMD_RESTORE;
	case OPT_KEEP:
		return cmd == RR_CMD_RUN || cmd == RR_CMD_GC;
	case OPT_GRACE:
		return cmd == RR_CMD_RUN || cmd == RR_CMD_GC;
	default:
		return cmd == RR_CMD_RUN;
	}
}

/* The word that named the current option: for "--keep 0" the one before the value, for
 * "--keep=0" or "-v" the last one getopt consumed. */
static const char *s_opt_word(char **av, const char *value)
{
	return value && optind >= 2 && av[optind - 1] == value ? av[optind - 2] : av[optind - 1];
}

/* A price per machine-hour: a plain positive decimal number below a million. */
static int s_parse_price(const char *a, double *out)
{
	char *end;
	double v;

	if (!a[0] || strspn(a, "0123456789.") != strlen(a))
		return RR_EINVAL;
	errno = 0;
	v = strtod(a, &end);
	if (errno || *end || !(v > 0) || v >= 1e6)
		return RR_EINVAL;
	*out = v;
	return 0;
}

static const char *s_getenv(const char *name, const char *fallback)
{
	const char *v = getenv(name);
	return v && *v ? v : fallback;
}

/* The first of the variables named that is set (multi-node: the agent's own, then
 * Slurm's, then the generic ones torchrun recipes export), or NULL. */
static const char *s_getenv_first(const char *const *names, size_t n, const char **which)
{
	for (size_t i = 0; i < n; i++) {
		const char *v = s_getenv(names[i], NULL);
		if (v) {
			*which = names[i];
			return v;
		}
	}
	return NULL;
}

/* --nnodes / --node-rank from the environment; a flag given later overrides. */
static int s_nodes_from_env(struct rr_config *cfg, char *err, size_t err_len)
{
	static const char *const nn[] = { "RESUME_RUN_NNODES", "SLURM_NNODES", "NNODES" };
	static const char *const nr[] = { "RESUME_RUN_NODE_RANK", "SLURM_NODEID", "NODE_RANK" };
	const char *which = NULL, *v;
	long long x;

	cfg->nnodes = 1;
	v = s_getenv_first(nn, 3, &which);
	if (v) {
		if (rr_parse_int(v, 1, RR_MAX_NODES, &x)) {
			snprintf(err, err_len, "%s must be a number of nodes, 1-%d", which,
				 RR_MAX_NODES);
			return RR_EINVAL;
		}
		cfg->nnodes = (unsigned)x;
	}
	v = s_getenv_first(nr, 3, &which);
	if (v) {
		if (rr_parse_int(v, 0, RR_MAX_NODES - 1, &x)) {
			snprintf(err, err_len, "%s must be a node rank, 0-%d", which,
				 RR_MAX_NODES - 1);
			return RR_EINVAL;
		}
		cfg->node_rank = (unsigned)x;
	}
	return 0;
}

/* --trainer-env: "pass" (0) or "strip" (1). */
static int s_trainer_env(const char *v, int *strip)
{
	if (strcmp(v, "pass") == 0)
		*strip = 0;
	else if (strcmp(v, "strip") == 0)
		*strip = 1;
	else
		return RR_EINVAL;
	return 0;
}

int rr_config_parse(int argc, char **argv, struct rr_config *cfg, enum rr_command *help_for,
		    char *err, size_t err_len)
{
	static const struct { const char *name; enum rr_command cmd; } commands[] = {
		{ "ls", RR_CMD_LS }, { "restore", RR_CMD_RESTORE },
		{ "verify", RR_CMD_VERIFY }, { "gc", RR_CMD_GC }, { "report", RR_CMD_REPORT },
	};
	const char *cmd_name = "resume-run";
	char **av;
	long long v;
	int first = 1, opt, ac, threads_given = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->command = RR_CMD_RUN;
	cfg->store_url = s_getenv("RESUME_RUN_STORE", DEFAULT_STORE);
	cfg->run_id = s_getenv("RESUME_RUN_ID", "default");
	cfg->store_opts.s3_addressing = s_getenv("RESUME_RUN_S3_ADDRESSING", NULL);
	cfg->store_opts.s3_sse = s_getenv("RESUME_RUN_S3_SSE", NULL);
	cfg->store_opts.s3_sse_kms_key_id = s_getenv("RESUME_RUN_S3_SSE_KMS_KEY_ID", NULL);
	cfg->store_opts.gcs_hmac = s_getenv("RESUME_RUN_GCS_HMAC", NULL) != NULL;
	cfg->store_opts.encryption_key_file = s_getenv("RESUME_RUN_ENCRYPTION_KEY_FILE", NULL);
	cfg->checkpoint_dir = s_getenv("RESUME_RUN_CHECKPOINT_DIR", DEFAULT_CHECKPOINT_DIR);
	cfg->grace_ms = 25000;
	if (rr_cloud_parse(s_getenv("RESUME_RUN_CLOUD", "auto"), &cfg->cloud)) {
		snprintf(err, err_len, "RESUME_RUN_CLOUD must be auto, none, aws, gcp or azure");
		return RR_EINVAL;
	}
	cfg->metadata_endpoint = s_getenv("RESUME_RUN_METADATA_ENDPOINT", NULL);
	cfg->metrics_file = s_getenv("RESUME_RUN_METRICS_FILE", NULL);
	cfg->checkpoint_signal = 10; /* SIGUSR1 */
	if (rr_commit_rule_parse(s_getenv("RESUME_RUN_COMMIT", "auto"), &cfg->commit)) {
		snprintf(err, err_len, "RESUME_RUN_COMMIT must be auto, rename, marker:NAME or "
			 "pointer:NAME");
		return RR_EINVAL;
	}
	cfg->keep = 3;
	cfg->max_restarts = 3;
	if (s_trainer_env(s_getenv("RESUME_RUN_TRAINER_ENV", "pass"), &cfg->strip_trainer_env)) {
		snprintf(err, err_len, "RESUME_RUN_TRAINER_ENV must be pass or strip");
		return RR_EINVAL;
	}
	/* EX_TEMPFAIL: "try again later" to whatever relaunches the job (DESIGN §1 step 6). */
	cfg->preempted_exit_code = 75;
	{
		const char *pe = s_getenv("RESUME_RUN_PREEMPTED_EXIT_CODE", NULL);
		if (pe && rr_parse_int(pe, 0, 255, &v)) {
			snprintf(err, err_len, "RESUME_RUN_PREEMPTED_EXIT_CODE must be 0-255, not '%s'",
				 pe);
			return RR_EINVAL;
		}
		if (pe)
			cfg->preempted_exit_code = (int)v;
	}
	if (s_nodes_from_env(cfg, err, err_len))
		return RR_EINVAL;
	cfg->threads = rr_pool_default_threads();
	cfg->zstd_level = RR_ZSTD_LEVEL_DEFAULT;
	cfg->gc_grace_ms = -1;
	*help_for = RR_CMD_RUN;

	if (argc > 1) {
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (strcmp(argv[1], commands[i].name) == 0) {
				cfg->command = commands[i].cmd;
				cmd_name = commands[i].name;
				first = 2;
			}
	}
	*help_for = cfg->command;
	/* getopt keeps state between calls (glibc: the rest of a "-hv" cluster it stopped in).
	 * optind = 0 asks glibc and musl for a full reset, which restarts at index 1, so a
	 * subcommand's options are parsed from an argv that starts at the subcommand's name. */
	av = argv + first - 1;
	ac = argc - first + 1;
	optind = 0;
	opterr = 0;
	/* '+': stop at the first non-option, which begins the trainer command. */
	while ((opt = getopt_long(ac, av, "+:vh", s_options, NULL)) != -1) {
		const char *a = optarg;
		if (opt == '?' || opt == ':') {
			/* An unknown short option may sit inside a cluster ("-xv") that optind has
			 * not moved past: name the letter. ('v' and 'h' here mean "--verbose=1".) */
			char letter[3] = { '-', (char)optopt, '\0' };
			const char *bad = opt == '?' && optopt > 0 && optopt < 256 &&
					  !strchr("vh", optopt) ? letter : av[optind - 1];
			snprintf(err, err_len, "%s: %s '%s' (see %s%s --help)", cmd_name,
				 opt == ':' ? "missing value for" : "unknown option", bad,
				 first == 2 ? "resume-run " : "", cmd_name);
			return RR_EINVAL;
		}
		if (!s_allowed(cfg->command, opt)) {
			snprintf(err, err_len, "%s: option '%s' does not apply here (see %s%s --help)",
				 cmd_name, s_opt_word(av, a), first == 2 ? "resume-run " : "", cmd_name);
			return RR_EINVAL;
		}
		switch (opt) {
		case OPT_STORE: cfg->store_url = a; break;
		case OPT_S3_ADDRESSING: cfg->store_opts.s3_addressing = a; break;
		case OPT_CLOUD:
			if (rr_cloud_parse(a, &cfg->cloud))
				goto bad_value;
			break;
		case OPT_METADATA_ENDPOINT: cfg->metadata_endpoint = a; break;
		case OPT_POLL_INTERVAL: {
			int64_t ms;
			if (rr_parse_duration_ms(a, &ms) || ms < 100)
				goto bad_value;
			cfg->poll_interval_ms = ms;
			break;
		}
		case OPT_AZURE_ACK: cfg->azure_ack = 1; break;
		case OPT_GCS_HMAC: cfg->store_opts.gcs_hmac = 1; break;
		case OPT_S3_SSE: cfg->store_opts.s3_sse = a; break;
		case OPT_S3_SSE_KMS_KEY_ID: cfg->store_opts.s3_sse_kms_key_id = a; break;
		case OPT_ENCRYPTION_KEY_FILE: cfg->store_opts.encryption_key_file = a; break;
		case OPT_RUN_ID: cfg->run_id = a; break;
		case OPT_CKPT_DIR: cfg->checkpoint_dir = a; break;
		case OPT_NOTICE_FILE: cfg->notice_file = a; break;
		case OPT_CHECKPOINT: cfg->checkpoint = a; break;
		case OPT_TO: cfg->to = a; break;
		case OPT_JSON: cfg->report_json = 1; break;
		case OPT_METRICS_FILE: cfg->metrics_file = a; break;
		case OPT_NNODES:
			if (rr_parse_int(a, 1, RR_MAX_NODES, &v))
				goto bad_value;
			cfg->nnodes = (unsigned)v;
			break;
		case OPT_NODE_RANK:
			if (rr_parse_int(a, 0, RR_MAX_NODES - 1, &v))
				goto bad_value;
			cfg->node_rank = (unsigned)v;
			break;
		case OPT_PRICE_SPOT:
			if (s_parse_price(a, &cfg->price_spot))
				goto bad_value;
			break;
		case OPT_PRICE_ON_DEMAND:
			if (s_parse_price(a, &cfg->price_on_demand))
				goto bad_value;
			break;
		case 'v': cfg->verbose = 1; break;
		case 'h': cfg->command = RR_CMD_HELP; return 0;
		case OPT_VERSION: cfg->command = RR_CMD_VERSION; return 0;
		case OPT_GRACE:
			if (*help_for == RR_CMD_GC) {
				if (rr_parse_duration_ms(a, &cfg->gc_grace_ms))
					goto bad_value;
			} else {
				if (rr_parse_int(a, 0, 86400, &v))
					goto bad_value;
				cfg->grace_ms = v * 1000;
			}
			break;
		case OPT_SIGNAL:
			/* KILL and STOP can have no handler: a notice would wait forever. */
			if (rr_signal_from_name(a, &cfg->checkpoint_signal) ||
			    cfg->checkpoint_signal == SIGKILL || cfg->checkpoint_signal == SIGSTOP)
				goto bad_value;
			break;
		case OPT_COMMIT:
			if (rr_commit_rule_parse(a, &cfg->commit))
				goto bad_value;
			break;
		case OPT_EVERY:
			if (rr_parse_duration_ms(a, &cfg->every_ms) || cfg->every_ms < 1000)
				goto bad_value;
			break;
		case OPT_KEEP:
			if (rr_parse_int(a, 1, 1000000, &v))
				goto bad_value;
			cfg->keep = (unsigned)v;
			break;
		case OPT_MAX_RESTARTS:
			if (rr_parse_int(a, 0, 1000000, &v))
				goto bad_value;
			cfg->max_restarts = (unsigned)v;
			break;
		case OPT_TRAINER_ENV:
			if (s_trainer_env(a, &cfg->strip_trainer_env))
				goto bad_value;
			break;
		case OPT_PREEMPTED_EXIT_CODE:
			if (rr_parse_int(a, 0, 255, &v))
				goto bad_value;
			cfg->preempted_exit_code = (int)v;
			break;
		case OPT_THREADS:
			if (rr_parse_int(a, 1, 256, &v))
				goto bad_value;
			cfg->threads = (unsigned)v;
			threads_given = 1;
			break;
		case OPT_ZSTD_LEVEL:
			if (rr_parse_int(a, 1, 19, &v))
				goto bad_value;
			cfg->zstd_level = (int)v;
			break;
		case OPT_PRECISION: {
			static const char *const modes[] = { "auto", "fp16", "bf16", "exact" };
			unsigned i;
			for (i = 0; i < 4 && strcmp(a, modes[i]) != 0; i++)
				;
			if (i == 4)
				goto bad_value;
			cfg->precision = (enum rr_precision)i;
			break;
		}
		case OPT_EXACT:
			if (!*a || cfg->n_exact_globs == RR_MAX_EXACT_GLOBS)
				goto bad_value;
			cfg->exact_globs[cfg->n_exact_globs++] = a;
			break;
		case OPT_LOG_FORMAT:
			if (strcmp(a, "text") && strcmp(a, "json"))
				goto bad_value;
			cfg->log_json = strcmp(a, "json") == 0;
			break;
		}
		continue;
bad_value:
		snprintf(err, err_len, "%s: invalid value '%s' for %s (see %s%s --help)", cmd_name,
			 a, s_opt_word(av, a), first == 2 ? "resume-run " : "", cmd_name);
		return RR_EINVAL;
	}
	if (cfg->gc_grace_ms < 0)
		cfg->gc_grace_ms = 3600 * 1000;
	cfg->store_opts.metadata_endpoint = cfg->metadata_endpoint;
	/* A remote store's workers spend much of their time waiting on the network: twice as
	 * many as cores (at most 8, about 20 MB each) keep both the CPU and the link busy. */
	if (!threads_given && strncasecmp(cfg->store_url, "file://", 7) != 0)
		cfg->threads = cfg->threads * 2 > 8 ? (cfg->threads > 8 ? cfg->threads : 8)
						    : cfg->threads * 2;
	if (!rr_checkpoint_name_valid(cfg->run_id)) {
		snprintf(err, err_len, "invalid run id '%s': use 1-255 characters, no '/', not "
			 "starting with '.'", cfg->run_id);
		return RR_EINVAL;
	}
	if (cfg->node_rank >= cfg->nnodes) {
		snprintf(err, err_len, "node rank %u is not below the number of nodes %u "
			 "(--node-rank K needs K < --nnodes N)", cfg->node_rank, cfg->nnodes);
		return RR_EINVAL;
	}
	if (cfg->checkpoint && !rr_checkpoint_name_valid(cfg->checkpoint)) {
		snprintf(err, err_len, "invalid checkpoint name '%s'", cfg->checkpoint);
		return RR_EINVAL;
	}
	if (cfg->command == RR_CMD_RUN) {
		if (optind >= ac) {
			snprintf(err, err_len, "no command to run (usage: resume-run [OPTIONS] -- "
				 "COMMAND [ARGS...]; see resume-run --help)");
			return RR_EINVAL;
		}
		cfg->argv = av + optind;
		cfg->argc = ac - optind;
	} else if (optind < ac) {
		snprintf(err, err_len, "%s: unexpected argument '%s' (see resume-run %s --help)",
			 cmd_name, av[optind], cmd_name);
		return RR_EINVAL;
	}
	if (cfg->command == RR_CMD_RESTORE && !cfg->to) {
		snprintf(err, err_len, "restore: --to DIR is required (see resume-run restore --help)");
		return RR_EINVAL;
	}
	return 0;
}
