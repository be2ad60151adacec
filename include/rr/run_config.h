/* What one invocation is asked to do (docs/command-line.md, "Command line"): the settings the
 * command line (agent/cli) hands to the run and the store commands, their defaults, and the
 * checks that need more than one of them. */
#ifndef RR_RUN_CONFIG_H
#define RR_RUN_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "rr/cloud.h"
#include "rr/codec.h"
#include "rr/commit_rule.h"
#include "rr/store.h"

#define RR_CONFIG_DEFAULT_STORE "file://./.resume-run/store"
#define RR_CONFIG_DEFAULT_CHECKPOINT_DIR "./.resume-run/checkpoints"
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
	int every_auto;           /* --every auto (docs/performance.md) */
	int64_t mtbf_ms;          /* --mtbf: 0: estimated from the run's history */
	double max_overhead;      /* --max-overhead as a fraction of training time */
	struct rr_commit_rule commit; /* --commit (docs/trainer-contract.md) */
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

/* Fills cfg with what applies when neither a flag nor the environment says otherwise (the
 * defaults the help states). */
void rr_config_defaults(struct rr_config *cfg);

/* Completes cfg once flags and environment are in: the values that follow from others (the
 * worker threads from the store's kind, the store's metadata endpoint), then the checks that
 * no single option can make (a valid run id, --node-rank below --nnodes, a valid checkpoint
 * name). Returns 0, or RR_EINVAL with a one-line message in why. */
int rr_config_finish(struct rr_config *cfg, char *why, size_t why_len);

#endif
