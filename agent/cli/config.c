/* Parsing the command line: argv with getopt_long, then the environment for each option not
 * given, into a struct rr_config (flags > environment > defaults). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "options.h"
#include "rr/config.h"
#include "rr/error.h"
#include "rr/supervisor.h"

#define S_VAL 256 /* getopt_long's value for rr_options[i] is S_VAL + i */

static const struct {
	const char *name;
	enum rr_command cmd;
} s_commands[] = {
	{ "ls", RR_CMD_LS }, { "restore", RR_CMD_RESTORE },
	{ "verify", RR_CMD_VERIFY }, { "gc", RR_CMD_GC }, { "report", RR_CMD_REPORT },
	{ "simulate", RR_CMD_SIMULATE },
	{ "unmark", RR_CMD_UNMARK },
};

/* One parse, as its phases hand it on. */
struct s_parse {
	enum rr_command cmd;
	const char *cmd_name; /* "resume-run", or the subcommand's */
	/* What a message begins with: the log line says "resume-run:" already, so only a
	 * subcommand's name ("gc: "). */
	char lead[16];
	int first;  /* argv's index of the first option: 2 behind a subcommand, else 1 */
	char **av;  /* argv from the word before the first option on: getopt's argv */
	int ac;
	int rest;   /* av's index of the first word that is no option (the trainer command) */
	unsigned char given[RR_MAX_OPTIONS]; /* rr_options[i] set by a flag or the environment */
	char *why;
	size_t why_len;
};

/* The entry for option name that command cmd takes, else any entry of that name. */
static const struct rr_option *s_find(const char *name, enum rr_command cmd)
{
	const struct rr_option *any = NULL;

	for (size_t i = 0; i < rr_n_options; i++) {
		if (strcmp(rr_options[i].name, name) != 0)
			continue;
		if (rr_options[i].commands & RR_ON(cmd))
			return &rr_options[i];
		any = &rr_options[i];
	}
	return any;
}

/* The word that named the current option: for "--keep 0" the one before the value, for
 * "--keep=0" or "-v" the last one getopt consumed. */
static const char *s_opt_word(char **av, const char *value)
{
	return value && optind >= 2 && av[optind - 1] == value ? av[optind - 2] : av[optind - 1];
}

/* Variables read, in this order, when an option's own is not set: a multi-node job's node
 * count and rank as Slurm and torchrun recipes export them. */
static const struct {
	const char *env;
	const char *also[2];
} s_env_fallbacks[] = {
	{ "RESUME_RUN_NNODES", { "SLURM_NNODES", "NNODES" } },
	{ "RESUME_RUN_NODE_RANK", { "SLURM_NODEID", "NODE_RANK" } },
};

/* An environment variable counts when set and not empty; a flag's variable turns it on
 * unless it says 0, false, no or off. *which: the variable the value came from. */
static const char *s_option_env(const struct rr_option *o, const char **which)
{
	const char *v = o->env ? getenv(o->env) : NULL;

	*which = o->env;
	for (size_t i = 0; o->env && (!v || !*v) &&
			   i < sizeof(s_env_fallbacks) / sizeof(s_env_fallbacks[0]); i++)
		if (strcmp(s_env_fallbacks[i].env, o->env) == 0)
			for (size_t k = 0; k < 2 && (!v || !*v); k++) {
				v = getenv(s_env_fallbacks[i].also[k]);
				*which = s_env_fallbacks[i].also[k];
			}
	if (!v || !*v)
		return NULL;
	if (!o->arg && (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
			!strcasecmp(v, "off")))
		return NULL;
	return v;
}

/* What makes value v of option o wrong beyond what the option's values say: why a signal
 * cannot be the checkpoint signal; NULL otherwise. */
static const char *s_why_refused(const struct rr_option *o, const char *v)
{
	int sig;

	if (strcmp(o->name, "signal") != 0 || rr_signal_from_name(v, &sig) != 0)
		return NULL;
	return rr_signal_unfit_for_checkpoint(sig);
}

/* Whether option i, or another name of it (an entry with the same setter), was given. */
static int s_alias_given(size_t i, const unsigned char *given)
{
	for (size_t k = 0; k < rr_n_options; k++)
		if (given[k] && rr_options[k].set == rr_options[i].set)
			return 1;
	return 0;
}

/* Parses argv again with its subcommand, found at index at behind options meant for it,
 * moved to the front: "resume-run -v ls" as "resume-run ls -v". */
static int s_parse_moved(int argc, char **argv, int at, struct rr_config *cfg,
			 enum rr_command *help_for, char *why, size_t why_len)
{
	char **moved = malloc(((size_t)argc + 1) * sizeof(*moved));
	int rc, n = 0;

	if (!moved)
		return RR_ENOMEM;
	moved[n++] = argv[0];
	moved[n++] = argv[at];
	for (int i = 1; i < argc; i++)
		if (i != at)
			moved[n++] = argv[i];
	moved[n] = NULL;
	rc = rr_config_parse(argc, moved, cfg, help_for, why, why_len);
	free(moved);
	return rc;
}

/* Which command argv asks for: a subcommand's name right after "resume-run" ("resume-run ls
 * ..."), else the run. The options are parsed from the word after it. */
static void s_subcommand(struct s_parse *p, int argc, char **argv)
{
	p->cmd = RR_CMD_RUN;
	p->cmd_name = "resume-run";
	p->lead[0] = '\0';
	p->first = 1;
	for (size_t i = 0; argc > 1 && i < sizeof(s_commands) / sizeof(s_commands[0]); i++)
		if (strcmp(argv[1], s_commands[i].name) == 0) {
			p->cmd = s_commands[i].cmd;
			p->cmd_name = s_commands[i].name;
			snprintf(p->lead, sizeof(p->lead), "%s: ", p->cmd_name);
			p->first = 2;
		}
	p->av = argv + p->first - 1;
	p->ac = argc - p->first + 1;
}

/* getopt_long's tables from the option table: one long entry per name (an option two
 * commands take with different help is two entries of one name), and the short letters. */
static void s_getopt_tables(struct option *longopts, char *shortopts, size_t shortopts_len)
{
	size_t nlong = 0;

	snprintf(shortopts, shortopts_len, "+:");
	for (size_t i = 0; i < rr_n_options; i++) {
		size_t k;
		for (k = 0; k < nlong && strcmp(longopts[k].name, rr_options[i].name) != 0; k++)
			;
		if (k == nlong)
			longopts[nlong++] = (struct option){ rr_options[i].name,
				rr_options[i].arg ? required_argument : no_argument, NULL, S_VAL + (int)i };
		if (rr_options[i].letter) {
			size_t l = strlen(shortopts);
			shortopts[l] = rr_options[i].letter;
			shortopts[l + 1] = '\0';
		}
	}
	longopts[nlong] = (struct option){ NULL, 0, NULL, 0 };
}

/* The entry getopt_long's answer opt stands for, for the command being parsed; NULL for an
 * unknown option or a missing value. */
static const struct rr_option *s_option_of(int opt, enum rr_command cmd)
{
	const struct rr_option *o = NULL;

	if (opt >= S_VAL && (size_t)(opt - S_VAL) < rr_n_options)
		o = s_find(rr_options[opt - S_VAL].name, cmd);
	for (size_t i = 0; !o && opt > 0 && opt < 256 && i < rr_n_options; i++)
		if (rr_options[i].letter == opt)
			o = &rr_options[i];
	return o;
}

/* The flags: each one the command takes sets its field. Returns 0; 1 when a flag ends the
 * parse (--help, --version); RR_EINVAL with the message in p->why for an unknown option, a
 * missing or bad value, or an option of another command. */
static int s_flags(struct s_parse *p, struct rr_config *cfg)
{
	/* getopt's table: val = S_VAL + the index in rr_options (above every letter, so the
	 * two never meet) */
	struct option longopts[RR_MAX_OPTIONS + 1];
	char shortopts[16];
	char **av = p->av;
	int opt, rc;

	s_getopt_tables(longopts, shortopts, sizeof(shortopts));
	/* getopt keeps state between calls (glibc: the rest of a "-hv" cluster it stopped in).
	 * optind = 0 asks glibc and musl for a full reset, which restarts at index 1, so a
	 * subcommand's options are parsed from an argv that starts at the subcommand's name. */
	optind = 0;
	opterr = 0;
	/* '+': stop at the first non-option, which begins the trainer command. */
	while ((opt = getopt_long(p->ac, av, shortopts, longopts, NULL)) != -1) {
		const char *a = optarg;
		const struct rr_option *o = s_option_of(opt, p->cmd);
		if (opt == '?' || opt == ':' || !o) {
			/* An unknown short option may sit inside a cluster ("-xv") that optind has
			 * not moved past: name the letter. ('v' and 'h' here mean "--verbose=1".) */
			char letter[3] = { '-', (char)optopt, '\0' };
			const char *bad = opt == '?' && optopt > 0 && optopt < 256 &&
					  !strchr("vh", optopt) ? letter : av[optind - 1];
			snprintf(p->why, p->why_len, "%s%s '%s' (see %s%s --help)", p->lead,
				 opt == ':' ? "missing value for" : "unknown option", bad,
				 p->first == 2 ? "resume-run " : "", p->cmd_name);
			return RR_EINVAL;
		}
		if (p->cmd == RR_CMD_GC && strcmp(o->name, "grace") == 0) {
			/* Before 0.2.0 gc's grace was --grace too: a script that still says so gets
			 * the new name rather than the run's deadline or a silent default. */
			snprintf(p->why, p->why_len,
				 "gc: --grace is the run's SIGTERM deadline; gc's age "
				 "for unreferenced chunks is --gc-grace DURATION (RESUME_RUN_GC_GRACE, "
				 "default 1h, at least 10m)");
			return RR_EINVAL;
		}
		if (!(o->commands & RR_ON(p->cmd))) {
			snprintf(p->why, p->why_len,
				 "%soption '%s' does not apply here (see %s%s --help)",
				 p->lead, s_opt_word(av, a), p->first == 2 ? "resume-run " : "",
				 p->cmd_name);
			return RR_EINVAL;
		}
		rc = o->set(cfg, p->cmd, a);
		if (rc == 1)
			return 1; /* --help, --version */
		if (rc) {
			const char *because = s_why_refused(o, a);
			snprintf(p->why, p->why_len, "%sinvalid value '%s' for %s: %s%smust be %s",
				 p->lead, a, s_opt_word(av, a), because ? because : "",
				 because ? "; " : "", o->values ? o->values : "see --help");
			return RR_EINVAL;
		}
		p->given[o - rr_options] = 1;
		if (strcmp(o->name, "notice-file") == 0)
			cfg->notice_file_old_name = "--notice-file";
	}
	p->rest = optind;
	return 0;
}

/* Sets option i from the variable which, whose value is v. Returns 0, or RR_EINVAL naming
 * the variable whose value is refused. */
static int s_set_from_env(struct s_parse *p, struct rr_config *cfg, size_t i, const char *v,
			  const char *which)
{
	if (rr_options[i].set(cfg, p->cmd, v)) {
		const char *because = s_why_refused(&rr_options[i], v);
		snprintf(p->why, p->why_len, "%s must be %s, not '%s'%s%s%s", which,
			 rr_options[i].values ? rr_options[i].values : "see --help", v,
			 because ? " (" : "", because ? because : "", because ? ")" : "");
		return RR_EINVAL;
	}
	p->given[i] = 1;
	if (strcmp(rr_options[i].name, "notice-file") == 0)
		cfg->notice_file_old_name = rr_options[i].env;
	return 0;
}

/* Whether the node count was given, by --nnodes or a variable (RESUME_RUN_NNODES or a
 * launcher's). */
static int s_nnodes_given(const struct s_parse *p)
{
	for (size_t i = 0; i < rr_n_options; i++)
		if (p->given[i] && strcmp(rr_options[i].name, "nnodes") == 0)
			return 1;
	return 0;
}

/* The environment stands in for each flag the command takes and was not given (nor an older
 * name of it: an entry with the same setter), so a flag always wins over its variable.
 * Returns 0, or RR_EINVAL naming the variable whose value is refused. */
static int s_environment(struct s_parse *p, struct rr_config *cfg)
{
	const char *rank_v = NULL, *rank_which = NULL;
	size_t rank_i = 0;

	for (size_t i = 0; i < rr_n_options; i++) {
		const char *v, *which;
		if (s_alias_given(i, p->given) || !(rr_options[i].commands & RR_ON(p->cmd)) ||
		    !(v = s_option_env(&rr_options[i], &which)))
			continue;
		/* A launcher's node rank (SLURM_NODEID, NODE_RANK) waits for the node count,
		 * wherever that comes from. */
		if (strcmp(rr_options[i].name, "node-rank") == 0 && strcmp(which, rr_options[i].env)) {
			rank_i = i;
			rank_v = v;
			rank_which = which;
			continue;
		}
		if (s_set_from_env(p, cfg, i, v, which))
			return RR_EINVAL;
	}
	/* A node count given as 1 (--nnodes 1, RESUME_RUN_NNODES=1, the launcher's own) makes a
	 * single-node run, rank 0, whatever rank the launcher's environment gives this node: a
	 * one-node run inside a multi-node Slurm allocation sees SLURM_NODEID (up to N-1) and
	 * SLURM_NNODES (N). With no count given at all, a launcher's rank is still read (and a
	 * rank above 0 refused: the count is missing). */
	if (rank_v && !(s_nnodes_given(p) && cfg->nnodes == 1))
		return s_set_from_env(p, cfg, rank_i, rank_v, rank_which);
	return 0;
}

/* The run's operands: the trainer command, which must be there. Without "--", a
 * subcommand's name after options ("resume-run -v ls") is that subcommand with those options
 * (not /bin/ls run as the trainer), and a word that is no program ("resume-run lss") a
 * mistake, not a trainer. Returns 0 (or the result of parsing the subcommand), or RR_EINVAL. */
static int s_trainer_command(struct s_parse *p, int argc, char **argv, struct rr_config *cfg,
			     enum rr_command *help_for)
{
	char **av = p->av;
	char *exe = NULL;

	if (p->rest >= p->ac) {
		snprintf(p->why, p->why_len,
			 "no command to run (usage: resume-run [OPTIONS] -- "
			 "COMMAND [ARGS...]; see resume-run --help)");
		return RR_EINVAL;
	}
	if (strcmp(av[p->rest - 1], "--") != 0) {
		for (size_t i = 0; i < sizeof(s_commands) / sizeof(s_commands[0]); i++)
			if (strcmp(av[p->rest], s_commands[i].name) == 0)
				return s_parse_moved(argc, argv, argc - p->ac + p->rest, cfg,
						     help_for, p->why, p->why_len);
		if (rr_supervisor_resolve(av[p->rest], &exe) == RR_ENOENT) {
			snprintf(p->why, p->why_len,
				 "unknown command '%s' (commands: ls, restore, "
				 "verify, gc, report, simulate, unmark; a program to run goes after '--': "
				 "resume-run [OPTIONS] -- COMMAND [ARGS...])", av[p->rest]);
			return RR_EINVAL;
		}
		free(exe);
	}
	cfg->argv = av + p->rest;
	cfg->argc = p->ac - p->rest;
	return 0;
}

/* A subcommand's operands (it takes none) and the options it cannot do without. Returns 0,
 * or RR_EINVAL saying which is missing. */
static int s_subcommand_complete(const struct s_parse *p, const struct rr_config *cfg)
{
	if (p->rest < p->ac) {
		snprintf(p->why, p->why_len,
			 "%s: unexpected argument '%s' (see resume-run %s --help)",
			 p->cmd_name, p->av[p->rest], p->cmd_name);
		return RR_EINVAL;
	}
	if (cfg->command == RR_CMD_SIMULATE && (!cfg->sim_cost_ms ||
						(!cfg->mtbf_ms && !cfg->sim_trace))) {
		snprintf(p->why, p->why_len,
			 "simulate: %s is required (see resume-run simulate --help)",
			 !cfg->sim_cost_ms ? "--cost DURATION" : "--mtbf DURATION (or --trace FILE)");
		return RR_EINVAL;
	}
	if (cfg->command == RR_CMD_UNMARK && !cfg->checkpoint) {
		snprintf(p->why, p->why_len,
			 "unmark: --checkpoint NAME is required (see resume-run unmark "
			 "--help)");
		return RR_EINVAL;
	}
	if (cfg->command == RR_CMD_RESTORE && !cfg->to) {
		snprintf(p->why, p->why_len,
			 "restore: --to DIR is required (see resume-run restore --help)");
		return RR_EINVAL;
	}
	return 0;
}

int rr_config_parse(int argc, char **argv, struct rr_config *cfg, enum rr_command *help_for,
		    char *why, size_t why_len)
{
	struct s_parse p = { .why = why, .why_len = why_len };
	int rc;

	rr_config_defaults(cfg);
	s_subcommand(&p, argc, argv);
	cfg->command = p.cmd;
	*help_for = p.cmd;
	rc = s_flags(&p, cfg);
	if (rc)
		return rc == 1 ? 0 : rc; /* 1: --help or --version, nothing more to read */
	rc = s_environment(&p, cfg);
	if (rc)
		return rc;
	rc = rr_config_finish(cfg, why, why_len);
	if (rc)
		return rc;
	if (cfg->command == RR_CMD_RUN)
		return s_trainer_command(&p, argc, argv, cfg, help_for);
	return s_subcommand_complete(&p, cfg);
}
