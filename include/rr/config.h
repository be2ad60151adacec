/* The command line (docs/command-line.md, "Command line"): argv and the environment into a
 * struct rr_config, flags > environment > defaults; and the help generated from the same
 * option table (agent/cli/options.c). */
#ifndef RR_CONFIG_H
#define RR_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "rr/run_config.h"

/* Parses argv (and the environment) into cfg. Strings point into argv/environ. Returns 0;
 * RR_EINVAL with a one-line message in err for bad usage. For --help, cfg->command is
 * RR_CMD_HELP and help_for tells which command's help to print. */
int rr_config_parse(int argc, char **argv, struct rr_config *cfg, enum rr_command *help_for,
		    char *why, size_t why_len);

/* Test hook (only the tests call these two). The option table: option i's long name (without
 * "--"), its environment variable (NULL for --help and --version) and the commands that take
 * it (bit 1 << RR_CMD_...). Returns 0, or RR_EINVAL when i >= rr_config_option_count(). The
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
