/* The store subcommands of DESIGN §3: ls, restore, verify, gc. Each returns the process
 * exit status (0 success; verify: 1 when damage was found; 125 for errors, logged). */
#ifndef RR_COMMANDS_H
#define RR_COMMANDS_H

#include "rr/config.h"

int rr_cmd_ls(const struct rr_config *cfg);
int rr_cmd_restore(const struct rr_config *cfg);
int rr_cmd_verify(const struct rr_config *cfg);
int rr_cmd_gc(const struct rr_config *cfg);

#endif
