/* The store subcommands (README, "Commands"): ls, restore, verify, gc, report. Each returns the process
 * exit status (0 success; verify: 1 when damage was found; 125 for errors, logged). */
#ifndef RR_COMMANDS_H
#define RR_COMMANDS_H

#include "rr/config.h"

int rr_cmd_ls(const struct rr_config *cfg);
int rr_cmd_restore(const struct rr_config *cfg);
int rr_cmd_verify(const struct rr_config *cfg);
int rr_cmd_gc(const struct rr_config *cfg);
/* `resume-run unmark --checkpoint NAME`: clears a suspect mark. */
int rr_cmd_unmark(const struct rr_config *cfg);

/* `resume-run report`: loads the ledger and prints (agent/cli/report_cmd.c). */
int rr_cmd_report(const struct rr_config *cfg);

#endif
