/* resume-run: run a training command on preemptible machines without losing work. */
#include <stdio.h>

#include "commands.h"
#include "rr/config.h"
#include "rr/log.h"
#include "rr/report.h"
#include "rr/run.h"
#include "rr/supervisor.h"
#include "rr/version.h"


int main(int argc, char **argv)
{
	struct rr_config cfg;
	enum rr_command help_for;
	char err[512];

	if (rr_config_parse(argc, argv, &cfg, &help_for, err, sizeof(err)) != 0) {
		rr_log_init(0, RR_LOG_INFO);
		rr_error("%s", err);
		return 125;
	}
	rr_log_init(cfg.log_json, cfg.verbose ? RR_LOG_DEBUG : RR_LOG_INFO);
	if (cfg.notice_file_old_name)
		rr_warn("%s is deprecated and goes in the next release: use --drill-file "
			"(RESUME_RUN_DRILL_FILE); RESUME_RUN_NOTICE_FILE is the notice JSON the "
			"trainer reads", cfg.notice_file_old_name);
	/* Every command reads credentials; none of them may end up in a core file. (The
	 * trainer gets the original core limit back: agent/run/supervisor.c.) */
	if (rr_supervisor_protect_secrets() != 0)
		rr_warn("cannot keep the agent's memory out of core dumps");
	switch (cfg.command) {
	case RR_CMD_HELP:
		rr_config_print_help(help_for);
		return 0;
	case RR_CMD_VERSION:
		printf("resume-run %s\n", RR_VERSION);
		return 0;
	case RR_CMD_LS:
		return rr_cmd_ls(&cfg);
	case RR_CMD_RESTORE:
		return rr_cmd_restore(&cfg);
	case RR_CMD_VERIFY:
		return rr_cmd_verify(&cfg);
	case RR_CMD_GC:
		return rr_cmd_gc(&cfg);
	case RR_CMD_REPORT:
		return rr_cmd_report(&cfg);
	case RR_CMD_SIMULATE:
		return rr_cmd_simulate(&cfg);
	case RR_CMD_UNMARK:
		return rr_cmd_unmark(&cfg);
	case RR_CMD_RUN:
		break;
	}
	return rr_run(&cfg);
}
