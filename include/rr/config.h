/* Command line and environment (README, "Command line"): flags > environment > defaults. */
#ifndef RR_CONFIG_H
#define RR_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "rr/cloud.h"
#include "rr/codec.h"
#include "rr/commit_rule.h"
#include "rr/store.h"

#define RR_MAX_EXACT_GLOBS 64
#define RR_MAX_NODES 4096 /* --nnodes at most */

enum rr_command { RR_CMD_RUN, RR_CMD_LS, RR_CMD_RESTORE, RR_CMD_VERIFY, RR_CMD_GC,
		  RR_CMD_HELP, RR_CMD_VERSION, RR_CMD_REPORT,
		  RR_CMD_SIMULATE, RR_CMD_UNMARK };

struct rr_config {
	enum rr_command command;
	const char *store_url;
	int store_given;          /* --store or RESUME_RUN_STORE, not the default */
	struct rr_store_opts store_opts; /* --s3-addressing, --s3-sse, --s3-sse-kms-key-id */
	const char *run_id;
	const char *checkpoint_dir;
	int checkpoint_dir_given; /* --checkpoint-dir or its variable, not the default */
	const char *notice_file;  /* --drill-file: NULL: none */
	/* The name before 0.2.0 the drill file came from (--notice-file or
	 * RESUME_RUN_NOTICE_FILE, which is also the trainer's notice JSON), for a deprecation
	 * warning; NULL: none. */
	const char *notice_file_old_name;
	enum rr_cloud cloud;      /* whose notices to watch */
	const char *metadata_endpoint; /* NULL: the cloud's own */
	int64_t poll_interval_ms;  /* 0: the provider's default */
	int azure_ack;
	int64_t grace_ms;
	int checkpoint_signal;
	int64_t every_ms;         /* 0: off (or auto) */
	int every_auto;           /* --every auto (README, "How often to checkpoint") */
	int64_t mtbf_ms;          /* --mtbf: 0: estimated from the run's history */
	double max_overhead;      /* --max-overhead as a fraction of training time */
	struct rr_commit_rule commit; /* --commit (README, "The trainer contract") */
	unsigned keep;
	int64_t keep_every_ms, keep_for_ms; /* --keep-every, --keep-for; 0: off, for ever */
	unsigned max_restarts;
	unsigned suspect_after;   /* failures after resuming from one checkpoint that mark it
				   * suspect (0: never) */
	int strip_trainer_env;    /* --trainer-env strip: the agent's credentials stay out */
	int preempted_exit_code;  /* status when a notice stopped the trainer; 0: its own */
	int log_json;
	int verbose;
	unsigned threads;
	int zstd_level;
	enum rr_precision precision;
	const char *exact_globs[RR_MAX_EXACT_GLOBS]; /* --exact: tensors stored bit-exact */
	unsigned n_exact_globs;
	/* subcommands */
	const char *checkpoint;   /* --checkpoint NAME */
	const char *to;           /* restore --to DIR */
	int64_t gc_grace_ms;
	int report_json;          /* report --json, simulate --json */
	double price_spot, price_on_demand; /* report: per machine-hour, 0: not given */
	const char *metrics_file; /* run: Prometheus text file, NULL: none */
	unsigned nnodes;          /* --nnodes (1: a single-node job, the store as always) */
	unsigned node_rank;       /* --node-rank, below nnodes */
	/* simulate (also --mtbf, --max-overhead, --json) */
	int64_t sim_cost_ms;      /* --cost */
	int64_t sim_lead_ms;      /* --lead */
	int64_t sim_prior_ms;     /* --prior */
	const char *sim_trace;    /* --trace FILE, NULL: synthetic */
	double sim_hours;         /* --hours */
	double sim_weibull;       /* --weibull SHAPE, 0: exponential */
	unsigned long long sim_seed; /* --seed */
	/* the trainer command (run): argv[0..argc-1], NULL-terminated */
	char **argv;
	int argc;
};

/* Parses argv (and the environment) into cfg. Strings point into argv/environ. Returns 0;
 * RR_EINVAL with a one-line message in err for bad usage. For --help, cfg->command is
 * RR_CMD_HELP and help_for tells which command's help to print. */
int rr_config_parse(int argc, char **argv, struct rr_config *cfg, enum rr_command *help_for,
		    char *err, size_t err_len);

/* The option table, for tools and tests: option i's long name (without "--"), its
 * environment variable (NULL for --help and --version) and the commands that take it (bit
 * 1 << RR_CMD_...). Returns 0, or RR_EINVAL when i >= rr_config_option_count(). The
 * strings are static. */
size_t rr_config_option_count(void);
int rr_config_option(size_t i, const char **name, const char **env, unsigned *commands);

/* Prints the help of one command to stdout, generated from the option table. */
void rr_config_print_help(enum rr_command cmd);

/* "90s", "30m", "2h", "1500ms", or plain seconds → milliseconds (at most 30 days).
 * Returns 0 or RR_EINVAL. */
int rr_parse_duration_ms(const char *s, int64_t *out);

/* A decimal integer in [min, max], nothing else. Returns 0 or RR_EINVAL. */
int rr_parse_int(const char *s, long long min, long long max, long long *out);

#endif
