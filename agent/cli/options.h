/* The option table (options.c): every option of every command, in the order the help lists
 * them. The parser (config.c) and the help (help.c) both read it, so an option is written
 * once. */
#ifndef RR_CLI_OPTIONS_H
#define RR_CLI_OPTIONS_H

#include <stddef.h>

#include "rr/config.h"

/* The bit of a command in rr_option.commands. */
#define RR_ON(cmd) (1u << (cmd))

/* Where a command's help lists an option. */
enum rr_group { RR_GROUP_MAIN, RR_GROUP_S3, RR_GROUP_GCS, RR_GROUP_ENCRYPTION };

/* Sets the field an option stands for from its value (NULL for a flag). Returns 0,
 * RR_EINVAL for a value out of bounds, or 1 when parsing stops here (--help, --version). */
typedef int (*rr_option_setter)(struct rr_config *cfg, enum rr_command cmd, const char *v);

struct rr_option {
	const char *name;   /* the long option, without "--" */
	char letter;        /* its short form, or 0 */
	const char *arg;    /* what the value is, for the help; NULL: a flag without value */
	const char *env;    /* RESUME_RUN_<NAME>, read when the flag is not given; NULL: none */
	unsigned commands;  /* RR_ON(RR_CMD_...) of every command that takes it */
	enum rr_group group;
	rr_option_setter set;
	const char *help;   /* the help's lines after the option column, '\n' between them */
	const char *values; /* what a bad value's message says it "must be"; NULL: a value this
			     * option takes is never refused here */
};

/* At most this many entries (options.c checks), so the parser's per-option arrays need no
 * allocation. */
#define RR_MAX_OPTIONS 96

extern const struct rr_option rr_options[];
extern const size_t rr_n_options;

#endif
