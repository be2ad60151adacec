/* The store subcommands (README, "Commands"): ls, restore, verify, gc, report. Each returns the process
 * exit status (0 success; verify: 1 when damage was found; 125 for errors, logged). */
#ifndef RR_COMMANDS_H
#define RR_COMMANDS_H

#include "rr/config.h"

int rr_cmd_ls(const struct rr_config *cfg);
int rr_cmd_restore(const struct rr_config *cfg);
int rr_cmd_verify(const struct rr_config *cfg);
int rr_cmd_gc(const struct rr_config *cfg);

/* `resume-run report`: loads the ledger and prints (agent/cli/report_cmd.c). */
int rr_cmd_report(const struct rr_config *cfg);

/* `resume-run simulate`: the checkpoint interval over a loss history
 * (agent/cli/simulate_cmd.c). */
int rr_cmd_simulate(const struct rr_config *cfg);

#endif
