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

/* Opens cfg's store for a command that reads it: a file:// directory that does not exist is
 * an error, never created. Returns 0, or logs and returns 125. */
int rr_cmd_open_store(const struct rr_config *cfg, struct rr_store **s);
/* 0 when the store holds cfg's run; else logs which runs it holds and returns 125. */
int rr_cmd_check_run(const struct rr_config *cfg, struct rr_store *s);

/* `resume-run report`: loads the ledger and prints (agent/cli/report_cmd.c). */
int rr_cmd_report(const struct rr_config *cfg);

/* `resume-run simulate`: the checkpoint interval over a loss history
 * (agent/cli/simulate_cmd.c). */
int rr_cmd_simulate(const struct rr_config *cfg);

#endif
