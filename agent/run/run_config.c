/* The settings the command line hands over (include/rr/run_config.h): their defaults, and what
 * follows from them once flags and environment are in. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "rr/codec.h"
#include "rr/error.h"
#include "rr/manifest.h"
#include "rr/pool.h"
#include "rr/run_config.h"

void rr_config_defaults(struct rr_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->command = RR_CMD_RUN;
	cfg->store_url = RR_CONFIG_DEFAULT_STORE;
	cfg->run_id = "default";
	cfg->checkpoint_dir = RR_CONFIG_DEFAULT_CHECKPOINT_DIR;
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
}

int rr_config_finish(struct rr_config *cfg, char *why, size_t why_len)
{
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
	if (cfg->keep_for_ms && !cfg->keep_every_ms) {
		/* Alone it would keep nothing more than --keep N, silently. */
		snprintf(why, why_len, "--keep-for (RESUME_RUN_KEEP_FOR) says how long the "
			 "checkpoints kept by --keep-every stay: give --keep-every DURATION too");
		return RR_EINVAL;
	}
	return 0;
}
