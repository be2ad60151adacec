/* CUnit suite "config": durations, bounded integers, and the command line
 * (docs/command-line.md): flags > environment > defaults, per-subcommand options, the
 * trainer's argv.
 *
 * rr_config_parse is called many times in one process, so it must reset getopt's global
 * state itself (it does, with optind = 0); the tests therefore never touch optind, and one
 * test checks that a parse stopped halfway through an option cluster leaves nothing behind.
 * Every test starts from an environment without the RESUME_RUN_* variables. */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/codec.h"
#include "rr/config.h"
#include "rr/error.h"
#include "rr/pool.h"

#include "cunit_main.h"

/* A NULL-terminated argv from string literals (getopt_long with '+' never permutes it). */
#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })

struct s_parsed {
	struct rr_config cfg;
	enum rr_command help_for;
	char err[512];
	int rc;
};

/* Unsets every option's variable (the table names them all). */
static void s_clear_env(void)
{
	for (size_t i = 0; i < rr_config_option_count(); i++) {
		const char *name, *env;
		unsigned cmds;
		CU_ASSERT_EQUAL_FATAL(rr_config_option(i, &name, &env, &cmds), 0);
		if (env)
			unsetenv(env);
	}
	/* the fallbacks of --nnodes / --node-rank (Slurm's, torchrun recipes') */
	unsetenv("SLURM_NNODES");
	unsetenv("SLURM_NODEID");
	unsetenv("NNODES");
	unsetenv("NODE_RANK");
}

static struct s_parsed s_parse(char **argv)
{
	struct s_parsed p;
	int argc = 0;

	while (argv[argc])
		argc++;
	memset(&p, 0, sizeof(p));
	p.help_for = (enum rr_command)-1;
	p.rc = rr_config_parse(argc, argv, &p.cfg, &p.help_for, p.err, sizeof(p.err));
	return p;
}

static int s_has(const char *hay, const char *needle)
{
	return strstr(hay, needle) != NULL;
}

static int64_t s_dur(const char *s)
{
	int64_t v = -12345;
	CU_ASSERT_EQUAL(rr_parse_duration_ms(s, &v), 0);
	return v;
}

static void s_dur_bad(const char *s)
{
	int64_t v = -12345;
	CU_ASSERT_EQUAL(rr_parse_duration_ms(s, &v), RR_EINVAL);
	CU_ASSERT_EQUAL(v, -12345); /* untouched on failure */
}

static void test_duration_accepts_each_unit(void)
{
	CU_ASSERT_EQUAL(s_dur("90s"), 90000);
	CU_ASSERT_EQUAL(s_dur("30m"), 30LL * 60 * 1000);
	CU_ASSERT_EQUAL(s_dur("2h"), 2LL * 3600 * 1000);
	CU_ASSERT_EQUAL(s_dur("1500ms"), 1500);
	CU_ASSERT_EQUAL(s_dur("45"), 45000); /* plain number: seconds */
	CU_ASSERT_EQUAL(s_dur("0s"), 0);
	CU_ASSERT_EQUAL(s_dur("0"), 0);
	CU_ASSERT_EQUAL(s_dur("007s"), 7000);
}

static void test_duration_of_exactly_30_days_is_accepted_in_every_unit(void)
{
	const int64_t days30 = 30LL * 86400 * 1000;

	CU_ASSERT_EQUAL(s_dur("720h"), days30);
	CU_ASSERT_EQUAL(s_dur("43200m"), days30);
	CU_ASSERT_EQUAL(s_dur("2592000s"), days30);
	CU_ASSERT_EQUAL(s_dur("2592000"), days30);
	CU_ASSERT_EQUAL(s_dur("2592000000ms"), days30);
}

static void test_duration_refuses_junk(void)
{
	static const char *const bad[] = {
		"",    "5x",  "-1",   "1.5h", "h",    "ms",  "s5",  " 5s", "5s ", "5S",
		"5H",  "5sec", "+5",  "5hh",  "5 s",  "0x10", "5d", "1e3", "5\n",  "5m5s",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		s_dur_bad(bad[i]);
}

static void test_duration_refuses_overflow_and_more_than_30_days(void)
{
	s_dur_bad("721h");
	s_dur_bad("43201m");
	s_dur_bad("2592001s");
	s_dur_bad("2592001");
	s_dur_bad("2592000001ms");
	s_dur_bad("99999999999h");             /* would overflow int64 once multiplied */
	s_dur_bad("9223372036854775807ms");    /* INT64_MAX, but > 30 days */
	s_dur_bad("9223372036854775808s");     /* strtoll overflow */
	s_dur_bad("99999999999999999999999999999999999999s"); /* longer than any number */
}

static void test_int_accepts_values_at_both_bounds(void)
{
	long long v = -1;

	CU_ASSERT(rr_parse_int("0", 0, 10, &v) == 0 && v == 0);
	CU_ASSERT(rr_parse_int("10", 0, 10, &v) == 0 && v == 10);
	CU_ASSERT(rr_parse_int("-5", -5, 5, &v) == 0 && v == -5);
	CU_ASSERT(rr_parse_int("007", 0, 10, &v) == 0 && v == 7); /* decimal, not octal */
	CU_ASSERT(rr_parse_int("9223372036854775807", 0, 9223372036854775807LL, &v) == 0 &&
		  v == 9223372036854775807LL);
}

static void test_int_refuses_out_of_range_and_junk(void)
{
	static const char *const bad[] = {
		"11", "-1", "", " 1", "1 ", "+1", "1e1", "0x1", "1.0", "-", "abc", "1a", "\t1",
	};
	long long v = 42;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(rr_parse_int(bad[i], 0, 10, &v), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_parse_int(NULL, 0, 10, &v), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_parse_int("9223372036854775808", 0, 9223372036854775807LL, &v),
			RR_EINVAL);
	CU_ASSERT_EQUAL(rr_parse_int("-9223372036854775809", -9223372036854775807LL - 1, 0, &v),
			RR_EINVAL);
	CU_ASSERT_EQUAL(v, 42); /* untouched on failure */
}

static void test_parse_without_flags_or_environment_uses_the_defaults(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--", "python", "train.py"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.command, RR_CMD_RUN);
	CU_ASSERT_STRING_EQUAL(p.cfg.store_url, "file://./.resume-run/store");
	CU_ASSERT_STRING_EQUAL(p.cfg.run_id, "default");
	CU_ASSERT_STRING_EQUAL(p.cfg.checkpoint_dir, "./.resume-run/checkpoints");
	CU_ASSERT_PTR_NULL(p.cfg.notice_file);
	CU_ASSERT_EQUAL(p.cfg.grace_ms, 25000);
	CU_ASSERT_EQUAL(p.cfg.checkpoint_signal, SIGUSR1);
	CU_ASSERT_EQUAL(p.cfg.every_ms, 0);
	CU_ASSERT_EQUAL(p.cfg.keep, 3);
	CU_ASSERT_EQUAL(p.cfg.max_restarts, 3);
	CU_ASSERT_EQUAL(p.cfg.log_json, 0);
	CU_ASSERT_EQUAL(p.cfg.verbose, 0);
	CU_ASSERT_EQUAL(p.cfg.threads, rr_pool_default_threads());
	CU_ASSERT_EQUAL(p.cfg.zstd_level, RR_ZSTD_LEVEL_DEFAULT);
	CU_ASSERT_PTR_NULL(p.cfg.checkpoint);
	CU_ASSERT_PTR_NULL(p.cfg.to);
	CU_ASSERT_EQUAL(p.help_for, RR_CMD_RUN);
}

static void test_parse_takes_store_run_id_and_checkpoint_dir_from_the_environment(void)
{
	struct s_parsed p;

	s_clear_env();
	setenv("RESUME_RUN_STORE", "file:///srv/store", 1);
	setenv("RESUME_RUN_ID", "exp-7", 1);
	setenv("RESUME_RUN_CHECKPOINT_DIR", "/scratch/ckpt", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.store_url, "file:///srv/store");
	CU_ASSERT_STRING_EQUAL(p.cfg.run_id, "exp-7");
	CU_ASSERT_STRING_EQUAL(p.cfg.checkpoint_dir, "/scratch/ckpt");

	/* The subcommands read the same variables. */
	p = s_parse(ARGV("resume-run", "ls"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.store_url, "file:///srv/store");
	CU_ASSERT_STRING_EQUAL(p.cfg.run_id, "exp-7");
	s_clear_env();
}

static void test_parse_treats_empty_environment_variables_as_unset(void)
{
	struct s_parsed p;

	s_clear_env();
	setenv("RESUME_RUN_STORE", "", 1);
	setenv("RESUME_RUN_ID", "", 1);
	setenv("RESUME_RUN_CHECKPOINT_DIR", "", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.store_url, "file://./.resume-run/store");
	CU_ASSERT_STRING_EQUAL(p.cfg.run_id, "default");
	CU_ASSERT_STRING_EQUAL(p.cfg.checkpoint_dir, "./.resume-run/checkpoints");
	s_clear_env();
}

static void test_parse_flags_override_the_environment(void)
{
	struct s_parsed p;

	s_clear_env();
	setenv("RESUME_RUN_STORE", "file:///env/store", 1);
	setenv("RESUME_RUN_ID", "from-env", 1);
	setenv("RESUME_RUN_CHECKPOINT_DIR", "/env/ckpt", 1);
	p = s_parse(ARGV("resume-run", "--store", "file:///flag/store", "--run-id=from-flag",
			 "--checkpoint-dir", "/flag/ckpt", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.store_url, "file:///flag/store");
	CU_ASSERT_STRING_EQUAL(p.cfg.run_id, "from-flag");
	CU_ASSERT_STRING_EQUAL(p.cfg.checkpoint_dir, "/flag/ckpt");

	p = s_parse(ARGV("resume-run", "gc", "--run-id", "flag-gc"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.run_id, "flag-gc");
	CU_ASSERT_STRING_EQUAL(p.cfg.store_url, "file:///env/store");
	s_clear_env();
}

static void test_parse_gives_everything_after_double_dash_to_the_trainer(void)
{
	char **argv = ARGV("resume-run", "--keep", "5", "--", "python", "train.py", "--keep",
			   "9", "--", "-v");
	struct s_parsed p;

	s_clear_env();
	p = s_parse(argv);
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.keep, 5);
	CU_ASSERT_EQUAL(p.cfg.verbose, 0);
	CU_ASSERT_EQUAL_FATAL(p.cfg.argc, 6);
	CU_ASSERT_PTR_EQUAL(p.cfg.argv, argv + 4); /* points into argv, not a copy */
	CU_ASSERT_STRING_EQUAL(p.cfg.argv[0], "python");
	CU_ASSERT_STRING_EQUAL(p.cfg.argv[2], "--keep");
	CU_ASSERT_STRING_EQUAL(p.cfg.argv[4], "--");
	CU_ASSERT_STRING_EQUAL(p.cfg.argv[5], "-v");
	CU_ASSERT_PTR_NULL(p.cfg.argv[p.cfg.argc]);
}

static void test_parse_trainer_command_without_double_dash_starts_at_first_non_option(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "-v", "python", "-u", "--store", "x"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.verbose, 1);
	CU_ASSERT_STRING_EQUAL(p.cfg.store_url, "file://./.resume-run/store");
	CU_ASSERT_EQUAL_FATAL(p.cfg.argc, 4);
	CU_ASSERT_STRING_EQUAL(p.cfg.argv[0], "python");
	CU_ASSERT_STRING_EQUAL(p.cfg.argv[3], "x");
}

static void test_parse_without_a_trainer_command_is_an_error(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "no command to run"));
	p = s_parse(ARGV("resume-run", "--"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "no command to run"));
	p = s_parse(ARGV("resume-run", "--keep", "2", "-v"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "no command to run"));
}

static void test_parse_report_takes_json_and_prices_and_refuses_them_elsewhere(void)
{
	struct s_parsed p;

	s_clear_env();
	unsetenv("RESUME_RUN_METRICS_FILE");
	p = s_parse(ARGV("resume-run", "report", "--json", "--price-spot", "0.45",
			 "--price-on-demand=1.006", "--run-id", "r1"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.command, RR_CMD_REPORT);
	CU_ASSERT_EQUAL(p.cfg.report_json, 1);
	CU_ASSERT_DOUBLE_EQUAL(p.cfg.price_spot, 0.45, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(p.cfg.price_on_demand, 1.006, 1e-12);
	CU_ASSERT_STRING_EQUAL(p.cfg.run_id, "r1");

	p = s_parse(ARGV("resume-run", "report"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.report_json, 0);
	CU_ASSERT_EQUAL(p.cfg.price_spot, 0);

	const char *bad[] = { "0", "-1", "abc", "1e3", "", "1000000", "nan", "0x10" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = s_parse(ARGV("resume-run", "report", "--price-spot", (char *)bad[i]));
		CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
		CU_ASSERT(s_has(p.err, "invalid value"));
	}
	p = s_parse(ARGV("resume-run", "--json", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "does not apply here"));
	p = s_parse(ARGV("resume-run", "report", "--metrics-file", "/tmp/x.prom"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "does not apply here"));
}

static void test_parse_metrics_file_from_flag_or_environment(void)
{
	struct s_parsed p;

	s_clear_env();
	unsetenv("RESUME_RUN_METRICS_FILE");
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_PTR_NULL(p.cfg.metrics_file);
	setenv("RESUME_RUN_METRICS_FILE", "/var/lib/node_exporter/rr.prom", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_STRING_EQUAL(p.cfg.metrics_file, "/var/lib/node_exporter/rr.prom");
	p = s_parse(ARGV("resume-run", "--metrics-file", "/tmp/flag.prom", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.metrics_file, "/tmp/flag.prom");
	unsetenv("RESUME_RUN_METRICS_FILE");
}

static void test_parse_unknown_option_error_names_the_option(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--bogus", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "unknown option '--bogus'"));
	CU_ASSERT(s_has(p.err, "resume-run --help"));

	p = s_parse(ARGV("resume-run", "ls", "--frobnicate=1"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "ls: unknown option '--frobnicate=1'"));
	CU_ASSERT(s_has(p.err, "resume-run ls --help"));

	p = s_parse(ARGV("resume-run", "-x", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "unknown option '-x'"));

	/* Inside a cluster, the bad letter is named, not the word before the cluster. */
	p = s_parse(ARGV("resume-run", "-xv", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "unknown option '-x'"));
	p = s_parse(ARGV("resume-run", "--verbose", "-xv", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "unknown option '-x'"));
	p = s_parse(ARGV("resume-run", "ls", "-vx"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "ls: unknown option '-x'"));

	/* A flag that takes no value, given one. */
	p = s_parse(ARGV("resume-run", "--verbose=1", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "'--verbose=1'"));
}

static void test_parse_option_without_its_value_is_named(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--store"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "missing value for '--store'"));
	p = s_parse(ARGV("resume-run", "restore", "--to"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "restore: missing value for '--to'"));
}

static void test_parse_refuses_options_that_do_not_apply_to_the_subcommand(void)
{
	const struct {
		char **argv;
		const char *opt;
	} cases[] = {
		{ ARGV("resume-run", "ls", "--notice-file", "x"), "'--notice-file'" },
		{ ARGV("resume-run", "ls", "--keep", "2"), "'--keep'" },
		{ ARGV("resume-run", "ls", "--grace", "5s"), "'--grace'" },
		{ ARGV("resume-run", "ls", "--checkpoint", "step-1"), "'--checkpoint'" },
		{ ARGV("resume-run", "verify", "--to", "/tmp/x"), "'--to'" },
		{ ARGV("resume-run", "gc", "--checkpoint", "step-1"), "'--checkpoint'" },
		{ ARGV("resume-run", "gc", "--every", "90s"), "'--every'" },
		{ ARGV("resume-run", "restore", "--to", "d", "--signal", "USR2"), "'--signal'" },
		{ ARGV("resume-run", "restore", "--to", "d", "--checkpoint-dir", "c"),
		  "'--checkpoint-dir'" },
		{ ARGV("resume-run", "--to", "d", "--", "train"), "'--to'" },
		{ ARGV("resume-run", "--checkpoint", "step-1", "--", "train"), "'--checkpoint'" },
	};

	s_clear_env();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct s_parsed p = s_parse(cases[i].argv);
		CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
		CU_ASSERT(s_has(p.err, "does not apply here"));
		CU_ASSERT(s_has(p.err, cases[i].opt));
	}
}

static void test_parse_subcommands_take_the_options_they_document(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "ls", "--store", "file:///s", "--run-id", "r1", "-v",
			 "--log-format", "json", "--threads", "2"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.command, RR_CMD_LS);
	CU_ASSERT_STRING_EQUAL(p.cfg.store_url, "file:///s");
	CU_ASSERT_STRING_EQUAL(p.cfg.run_id, "r1");
	CU_ASSERT_EQUAL(p.cfg.verbose, 1);
	CU_ASSERT_EQUAL(p.cfg.log_json, 1);
	CU_ASSERT_EQUAL(p.cfg.threads, 2);
	CU_ASSERT_EQUAL(p.cfg.argc, 0);
	CU_ASSERT_PTR_NULL(p.cfg.argv);

	p = s_parse(ARGV("resume-run", "verify", "--checkpoint", "step-9"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.command, RR_CMD_VERIFY);
	CU_ASSERT_STRING_EQUAL(p.cfg.checkpoint, "step-9");

	p = s_parse(ARGV("resume-run", "gc", "--keep", "1"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.command, RR_CMD_GC);
	CU_ASSERT_EQUAL(p.cfg.keep, 1);
}

static void test_parse_subcommand_refuses_positional_arguments(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "ls", "extra"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "unexpected argument 'extra'"));
	p = s_parse(ARGV("resume-run", "gc", "--", "x"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "unexpected argument 'x'"));
	p = s_parse(ARGV("resume-run", "ls", "--"));
	CU_ASSERT_EQUAL(p.rc, 0);
}

static void test_parse_restore_without_to_is_refused(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "restore"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "--to DIR is required"));
	p = s_parse(ARGV("resume-run", "restore", "--checkpoint", "step-3"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);

	p = s_parse(ARGV("resume-run", "restore", "--to", "/tmp/out", "--checkpoint", "step-3"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.command, RR_CMD_RESTORE);
	CU_ASSERT_STRING_EQUAL(p.cfg.to, "/tmp/out");
	CU_ASSERT_STRING_EQUAL(p.cfg.checkpoint, "step-3");
}

static void test_parse_refuses_an_invalid_checkpoint_name(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "restore", "--to", "d", "--checkpoint", "../x"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "invalid checkpoint name '../x'"));
	p = s_parse(ARGV("resume-run", "verify", "--checkpoint", ".step-1.tmp"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
}

static void test_parse_gc_grace_is_its_own_duration_of_at_least_ten_minutes(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "gc", "--gc-grace", "10m"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.command, RR_CMD_GC);
	CU_ASSERT_EQUAL(p.cfg.gc_grace_ms, 10 * 60 * 1000);
	CU_ASSERT_EQUAL(p.cfg.grace_ms, 25000); /* the run's grace is another setting */

	p = s_parse(ARGV("resume-run", "gc", "--gc-grace=2h"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.gc_grace_ms, 2LL * 3600 * 1000);

	p = s_parse(ARGV("resume-run", "gc"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.gc_grace_ms, 3600 * 1000); /* default 1h */

	/* Below what a persist can take: a gc would delete chunks of a persist in flight. */
	p = s_parse(ARGV("resume-run", "gc", "--gc-grace", "0s"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "gc: invalid value '0s' for --gc-grace: must be a duration of at "
			       "least 10m"));
	p = s_parse(ARGV("resume-run", "gc", "--gc-grace", "599s"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "gc", "--gc-grace", "5x"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);

	/* The run's retention deletes chunks too: the same option, the same floor. */
	p = s_parse(ARGV("resume-run", "--gc-grace", "2h", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.gc_grace_ms, 2LL * 3600 * 1000);
	p = s_parse(ARGV("resume-run", "--gc-grace", "25s", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
}

/* gc's grace was --grace / RESUME_RUN_GRACE before 0.2.0, the same name as the run's SIGTERM
 * deadline: deploy files set RESUME_RUN_GRACE=25, and a gc started from them deleted chunks
 * 25 s old. gc now ignores the variable and refuses the flag, naming the new one. */
static void test_parse_gc_refuses_grace_and_ignores_the_runs_variable(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "gc", "--grace", "2h"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "gc: --grace is the run's SIGTERM deadline; gc's age for "
			       "unreferenced chunks is --gc-grace DURATION"));
	setenv("RESUME_RUN_GRACE", "25", 1);
	p = s_parse(ARGV("resume-run", "gc"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.gc_grace_ms, 3600 * 1000);
	setenv("RESUME_RUN_GC_GRACE", "90m", 1);
	p = s_parse(ARGV("resume-run", "gc"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.gc_grace_ms, 90 * 60 * 1000);
	setenv("RESUME_RUN_GC_GRACE", "25s", 1);
	p = s_parse(ARGV("resume-run", "gc"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "RESUME_RUN_GC_GRACE must be a duration of at least 10m"));
	s_clear_env();
}

/* Every value an option refuses is answered with what it must be, and with one prefix only
 * (the log line adds "resume-run: error: "). */
static void test_parse_invalid_values_say_what_they_must_be(void)
{
	static const char *const cmds[] = { NULL, "ls", "restore", "verify", "gc", "report" };
	static const int ids[] = { RR_CMD_RUN, RR_CMD_LS, RR_CMD_RESTORE, RR_CMD_VERIFY,
				   RR_CMD_GC, RR_CMD_REPORT };

	s_clear_env();
	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++)
		for (size_t i = 0; i < rr_config_option_count(); i++) {
			const char *name, *env;
			char flag[80], *argv[8];
			unsigned cmds_of;
			int n = 0;
			struct s_parsed p;
			rr_config_option(i, &name, &env, &cmds_of);
			if (!(cmds_of & (1u << ids[c])) || !strcmp(name, "help") ||
			    !strcmp(name, "version") || !strcmp(name, "verbose") ||
			    !strcmp(name, "azure-ack") || !strcmp(name, "gcs-hmac") ||
			    !strcmp(name, "json"))
				continue; /* flags without a value */
			snprintf(flag, sizeof(flag), "--%s", name);
			argv[n++] = "resume-run";
			if (cmds[c])
				argv[n++] = (char *)cmds[c];
			argv[n++] = flag;
			argv[n++] = "-1x\x01";
			if (!cmds[c]) {
				argv[n++] = "--";
				argv[n++] = "train";
			}
			argv[n] = NULL;
			p = s_parse(argv);
			if (p.rc == 0 || !s_has(p.err, "invalid value '"))
				continue; /* any string is taken (or checked after parsing) */
			if (!s_has(p.err, "must be ") || s_has(p.err, "resume-run: ") ||
			    s_has(p.err, "see --help"))
				fprintf(stderr, "%s %s: %s\n", cmds[c] ? cmds[c] : "run", flag, p.err);
			CU_ASSERT(s_has(p.err, "must be ") && !s_has(p.err, "see --help"));
			CU_ASSERT(!s_has(p.err, "resume-run: "));
			CU_ASSERT(cmds[c] ? strncmp(p.err, cmds[c], strlen(cmds[c])) == 0
					  : strncmp(p.err, "invalid value", 13) == 0);
		}
}

static void test_parse_run_grace_is_whole_seconds(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--grace", "10", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.grace_ms, 10000);
	p = s_parse(ARGV("resume-run", "--grace", "0", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.grace_ms, 0);
	p = s_parse(ARGV("resume-run", "--grace", "10s", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "--grace", "86401", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
}

static void test_parse_refuses_keep_zero(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--keep", "0", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "invalid value '0' for --keep"));
	p = s_parse(ARGV("resume-run", "gc", "--keep=0"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "invalid value '0' for --keep=0"));
	p = s_parse(ARGV("resume-run", "gc", "--keep", "-1"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "gc", "--keep", "two"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
}

static void test_parse_max_restarts_may_be_zero(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--max-restarts", "0", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.max_restarts, 0);
	p = s_parse(ARGV("resume-run", "--max-restarts", "-1", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
}

static void test_parse_refuses_an_invalid_run_id(void)
{
	static const char *const bad[] = { "../x", ".hidden", "a/b", "..", ".", "", "x\ny" };
	struct s_parsed p;

	s_clear_env();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "resume-run", "--run-id", (char *)bad[i], "--", "train", NULL };
		p = s_parse(argv);
		CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
		CU_ASSERT(s_has(p.err, "invalid run id"));
	}
	/* From the environment too, and for subcommands. */
	setenv("RESUME_RUN_ID", "../other-run", 1);
	p = s_parse(ARGV("resume-run", "ls"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "invalid run id '../other-run'"));
	s_clear_env();

	p = s_parse(ARGV("resume-run", "--run-id", "run.v2_a-b", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, 0);
}

static void test_parse_signal_by_name_with_or_without_sig_or_by_number(void)
{
	static const struct {
		const char *arg;
		int sig;
	} good[] = {
		{ "USR2", SIGUSR2 }, { "12", SIGUSR2 }, { "usr1", SIGUSR1 }, { "SigHup", SIGHUP },
		{ "SIGUSR2", SIGUSR2 }, { "QUIT", SIGQUIT }, { "SIGALRM", SIGALRM },
		{ "PWR", SIGPWR },
	};
	static const char *const bad[] = { "SIGFOO", "0", "65", "-1", "", "USR", "SIG", "KILL", "9", "STOP" };
	struct s_parsed p;
	char rt[2][8];

	s_clear_env();
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char *argv[] = { "resume-run", "--signal", (char *)good[i].arg, "--", "t", NULL };
		p = s_parse(argv);
		CU_ASSERT_EQUAL(p.rc, 0);
		CU_ASSERT_EQUAL(p.cfg.checkpoint_signal, good[i].sig);
	}
	/* The real-time signals the C library leaves to programs, by number. */
	snprintf(rt[0], sizeof(rt[0]), "%d", SIGRTMIN);
	snprintf(rt[1], sizeof(rt[1]), "%d", SIGRTMAX);
	for (size_t i = 0; i < 2; i++) {
		char *argv[] = { "resume-run", "--signal", rt[i], "--", "t", NULL };
		p = s_parse(argv);
		CU_ASSERT_EQUAL(p.rc, 0);
		CU_ASSERT_EQUAL(p.cfg.checkpoint_signal, i ? SIGRTMAX : SIGRTMIN);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "resume-run", "--signal", (char *)bad[i], "--", "t", NULL };
		p = s_parse(argv);
		CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
		CU_ASSERT(s_has(p.err, "for --signal"));
	}
}

/* A checkpoint signal that already means something else (the final SIGTERM, Ctrl-C's
 * SIGINT, a child's end, job control, a fault, a window resize, the C library's own
 * real-time signals) is refused, from the flag and the variable, saying why. */
static void test_parse_signal_refuses_one_that_means_something_else(void)
{
	static const struct {
		const char *arg;
		const char *why;
	} bad[] = {
		{ "TERM", "stops the trainer after a notice" },
		{ "15", "stops the trainer after a notice" },
		{ "SIGINT", "Ctrl-C" },
		{ "CHLD", "child process ends" },
		{ "CONT", "job-control" },
		{ "TSTP", "job-control" },
		{ "TTIN", "job-control" },
		{ "TTOU", "job-control" },
		{ "STOP", "cannot be caught" },
		{ "KILL", "cannot be caught" },
		{ "WINCH", "window resize" },
		{ "SEGV", "fault" },
		{ "PIPE", "kernel sends it" },
		{ "PROF", "profilers" },
		{ "32", "C library keeps it" },
		{ "33", "C library keeps it" },
	};
	struct s_parsed p;
	char below[8];

	s_clear_env();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "resume-run", "--signal", (char *)bad[i].arg, "--", "t", NULL };
		p = s_parse(argv);
		CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
		CU_ASSERT(s_has(p.err, "for --signal: "));
		CU_ASSERT(s_has(p.err, bad[i].why));
		CU_ASSERT(s_has(p.err, "must be USR1, USR2"));
		if (p.rc != RR_EINVAL || !s_has(p.err, bad[i].why))
			fprintf(stderr, "--signal %s: %s\n", bad[i].arg, p.err);
	}
	snprintf(below, sizeof(below), "%d", SIGRTMIN - 1);
	p = s_parse(ARGV("resume-run", "--signal", below, "--", "t"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	setenv("RESUME_RUN_SIGNAL", "TERM", 1);
	p = s_parse(ARGV("resume-run", "--", "t"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "RESUME_RUN_SIGNAL must be USR1"));
	CU_ASSERT(s_has(p.err, "not 'TERM' (it is the signal that stops the trainer"));
	s_clear_env();
}

/* off, the default the docs name, is a value too, from the flag and the variable (a
 * container's or a unit's environment turns a deploy's periodic checkpoints off with it). */
static void test_parse_every_off_means_no_periodic_checkpoints(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--every", "off", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.every_ms, 0);
	CU_ASSERT_EQUAL(p.cfg.every_auto, 0);
	setenv("RESUME_RUN_EVERY", "off", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.every_ms, 0);
	CU_ASSERT_EQUAL(p.cfg.every_auto, 0);
	/* the flag wins over the variable, both ways */
	p = s_parse(ARGV("resume-run", "--every", "30m", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.every_ms, 30LL * 60 * 1000);
	setenv("RESUME_RUN_EVERY", "auto", 1);
	p = s_parse(ARGV("resume-run", "--every", "off", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.every_ms, 0);
	CU_ASSERT_EQUAL(p.cfg.every_auto, 0);
	s_clear_env();
}

/* --keep-every's default is off, as the docs say; saying so is accepted too. */
static void test_parse_keep_every_off_keeps_no_periodic_checkpoints(void)
{
	struct s_parsed p;

	s_clear_env();
	setenv("RESUME_RUN_KEEP_EVERY", "1h", 1);
	p = s_parse(ARGV("resume-run", "--keep-every", "off", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.keep_every_ms, 0);
	setenv("RESUME_RUN_KEEP_EVERY", "off", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.keep_every_ms, 0);
	s_clear_env();
}

/* --keep-for only bounds what --keep-every keeps: alone it kept nothing beyond --keep N,
 * and gc exited 0. Refused, by flag or variable. */
static void test_parse_keep_for_without_keep_every_is_refused(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "gc", "--keep-for", "1h"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "give --keep-every DURATION too"));
	setenv("RESUME_RUN_KEEP_FOR", "48h", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "gc", "--keep-every", "1h"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.keep_for_ms, 48LL * 3600 * 1000);
	s_clear_env();
}

static void test_parse_every_below_one_second_is_refused(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--every", "999ms", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "invalid value '999ms' for --every"));
	p = s_parse(ARGV("resume-run", "--every", "0", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "--every", "1000ms", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.every_ms, 1000);
	p = s_parse(ARGV("resume-run", "--every", "90s", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.every_ms, 90000);
	p = s_parse(ARGV("resume-run", "--every", "30m", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.every_ms, 30LL * 60 * 1000);
}

/* The drill file is --drill-file (RESUME_RUN_DRILL_FILE): RESUME_RUN_NOTICE_FILE is the
 * notice JSON the trainer reads (DESIGN.md §2), another file. The old names still work for
 * a release, and say so (notice_file_old_name: main.c warns); the new ones win. */
static void test_drill_file_and_its_old_names(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--drill-file", "/tmp/d", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.notice_file, "/tmp/d");
	CU_ASSERT_PTR_NULL(p.cfg.notice_file_old_name);

	setenv("RESUME_RUN_DRILL_FILE", "/env/d", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.notice_file, "/env/d");
	CU_ASSERT_PTR_NULL(p.cfg.notice_file_old_name);

	/* both variables: the new one, and no warning */
	setenv("RESUME_RUN_NOTICE_FILE", "/env/old", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.notice_file, "/env/d");
	CU_ASSERT_PTR_NULL(p.cfg.notice_file_old_name);

	/* the old variable alone: used, with its name for the warning */
	unsetenv("RESUME_RUN_DRILL_FILE");
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.notice_file, "/env/old");
	CU_ASSERT_STRING_EQUAL(p.cfg.notice_file_old_name, "RESUME_RUN_NOTICE_FILE");

	/* a flag of either name wins over both variables */
	setenv("RESUME_RUN_DRILL_FILE", "/env/d", 1);
	p = s_parse(ARGV("resume-run", "--drill-file", "/tmp/d", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.notice_file, "/tmp/d");
	CU_ASSERT_PTR_NULL(p.cfg.notice_file_old_name);
	p = s_parse(ARGV("resume-run", "--notice-file", "/tmp/old", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.notice_file, "/tmp/old");
	CU_ASSERT_STRING_EQUAL(p.cfg.notice_file_old_name, "--notice-file");
	s_clear_env();
}

static void test_parse_run_options_set_their_fields(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--drill-file", "/tmp/notice", "--threads", "8",
			 "--zstd-level", "19", "--log-format=json", "--keep", "7", "--verbose",
			 "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.notice_file, "/tmp/notice");
	CU_ASSERT_EQUAL(p.cfg.threads, 8);
	CU_ASSERT_EQUAL(p.cfg.zstd_level, 19);
	CU_ASSERT_EQUAL(p.cfg.log_json, 1);
	CU_ASSERT_EQUAL(p.cfg.keep, 7);
	CU_ASSERT_EQUAL(p.cfg.verbose, 1);

	p = s_parse(ARGV("resume-run", "--log-format", "xml", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "--threads", "0", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "--zstd-level", "20", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
}

static void test_parse_help_sets_the_help_command_and_which_help(void)
{
	const struct {
		char **argv;
		enum rr_command help_for;
	} cases[] = {
		{ ARGV("resume-run", "--help"), RR_CMD_RUN },
		{ ARGV("resume-run", "-h"), RR_CMD_RUN },
		{ ARGV("resume-run", "--store", "file:///s", "-h", "--bogus"), RR_CMD_RUN },
		{ ARGV("resume-run", "ls", "--help"), RR_CMD_LS },
		{ ARGV("resume-run", "restore", "--help"), RR_CMD_RESTORE }, /* no --to needed */
		{ ARGV("resume-run", "verify", "-h"), RR_CMD_VERIFY },
		{ ARGV("resume-run", "gc", "--help"), RR_CMD_GC },
	};

	s_clear_env();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct s_parsed p = s_parse(cases[i].argv);
		CU_ASSERT_EQUAL(p.rc, 0);
		CU_ASSERT_EQUAL(p.cfg.command, RR_CMD_HELP);
		CU_ASSERT_EQUAL(p.help_for, cases[i].help_for);
	}
}

static void test_parse_version_sets_the_version_command(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--version"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.command, RR_CMD_VERSION);
}

static void test_parse_can_be_called_again_after_stopping_inside_an_option_cluster(void)
{
	struct s_parsed p;

	s_clear_env();
	/* Returns at 'h' with "v" still pending in getopt's state... */
	p = s_parse(ARGV("resume-run", "-hv"));
	CU_ASSERT_EQUAL(p.cfg.command, RR_CMD_HELP);
	/* ...which must not leak into the next parse (as -v, or by skipping the "--"). */
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.verbose, 0);
	CU_ASSERT_EQUAL_FATAL(p.cfg.argc, 1);
	CU_ASSERT_STRING_EQUAL(p.cfg.argv[0], "train");

	p = s_parse(ARGV("resume-run", "-xv", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "ls"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.verbose, 0);

	/* A subcommand parse, then a run parse, then a subcommand again. */
	p = s_parse(ARGV("resume-run", "gc", "--keep", "4"));
	CU_ASSERT(p.rc == 0 && p.cfg.keep == 4);
	p = s_parse(ARGV("resume-run", "--keep", "5", "--", "train"));
	CU_ASSERT(p.rc == 0 && p.cfg.keep == 5 && p.cfg.argc == 1);
	p = s_parse(ARGV("resume-run", "restore", "--to", "d"));
	CU_ASSERT(p.rc == 0 && p.cfg.command == RR_CMD_RESTORE);
}

static void test_parse_trainer_env_takes_pass_or_strip_from_flag_or_environment(void)
{
	struct s_parsed p;

	s_clear_env();
	unsetenv("RESUME_RUN_TRAINER_ENV");
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.strip_trainer_env, 0); /* pass by default */
	p = s_parse(ARGV("resume-run", "--trainer-env", "strip", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.strip_trainer_env, 1);
	setenv("RESUME_RUN_TRAINER_ENV", "strip", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.strip_trainer_env, 1);
	/* The flag wins over the variable. */
	p = s_parse(ARGV("resume-run", "--trainer-env=pass", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.strip_trainer_env, 0);
	setenv("RESUME_RUN_TRAINER_ENV", "hide", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "RESUME_RUN_TRAINER_ENV"));
	unsetenv("RESUME_RUN_TRAINER_ENV");
	p = s_parse(ARGV("resume-run", "--trainer-env", "none", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "'none'"));
	/* Only the run command starts a trainer. */
	p = s_parse(ARGV("resume-run", "ls", "--trainer-env", "strip"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
}

/* RESUME_RUN_<OPTION>, upper case, '-' -> '_' (--run-id: RESUME_RUN_ID, the name the
 * trainer contract already used). */
static void test_every_option_but_help_and_version_has_its_environment_variable(void)
{
	size_t n = rr_config_option_count();

	CU_ASSERT(n > 30);
	for (size_t i = 0; i < n; i++) {
		const char *name, *env;
		char want[128];
		unsigned cmds;
		size_t k;

		CU_ASSERT_EQUAL_FATAL(rr_config_option(i, &name, &env, &cmds), 0);
		CU_ASSERT(cmds != 0);
		if (strcmp(name, "help") == 0 || strcmp(name, "version") == 0) {
			CU_ASSERT_PTR_NULL(env);
			continue;
		}
		CU_ASSERT_PTR_NOT_NULL_FATAL(env);
		k = (size_t)snprintf(want, sizeof(want), "RESUME_RUN_%s",
				     strcmp(name, "run-id") == 0 ? "id" : name);
		for (size_t j = 0; j < k; j++)
			want[j] = want[j] == '-' ? '_' : (char)toupper((unsigned char)want[j]);
		if (strcmp(env, want) != 0)
			fprintf(stderr, "--%s: variable %s, expected %s\n", name, env, want);
		CU_ASSERT_STRING_EQUAL(env, want);
	}
	CU_ASSERT_EQUAL(rr_config_option(n, &(const char *){ NULL }, &(const char *){ NULL },
					 &(unsigned){ 0 }), RR_EINVAL);
}

/* Options that had no variable before the table: each is read when its flag is absent. */
static void test_parse_takes_every_run_option_from_the_environment(void)
{
	struct s_parsed p;

	s_clear_env();
	setenv("RESUME_RUN_GRACE", "40", 1);
	setenv("RESUME_RUN_SIGNAL", "USR2", 1);
	setenv("RESUME_RUN_EVERY", "30m", 1);
	setenv("RESUME_RUN_PRECISION", "bf16", 1);
	setenv("RESUME_RUN_EXACT", "*.norm", 1);
	setenv("RESUME_RUN_KEEP", "5", 1);
	setenv("RESUME_RUN_MAX_RESTARTS", "0", 1);
	setenv("RESUME_RUN_THREADS", "3", 1);
	setenv("RESUME_RUN_ZSTD_LEVEL", "9", 1);
	setenv("RESUME_RUN_POLL_INTERVAL", "500ms", 1);
	setenv("RESUME_RUN_AZURE_ACK", "1", 1);
	setenv("RESUME_RUN_VERBOSE", "yes", 1);
	setenv("RESUME_RUN_LOG_FORMAT", "json", 1);
	setenv("RESUME_RUN_DRILL_FILE", "/run/notice", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.grace_ms, 40000);
	CU_ASSERT_EQUAL(p.cfg.checkpoint_signal, SIGUSR2);
	CU_ASSERT_EQUAL(p.cfg.every_ms, 30 * 60 * 1000);
	CU_ASSERT_EQUAL(p.cfg.precision, RR_PRECISION_BF16);
	CU_ASSERT_EQUAL_FATAL(p.cfg.n_exact_globs, 1);
	CU_ASSERT_STRING_EQUAL(p.cfg.exact_globs[0], "*.norm");
	CU_ASSERT_EQUAL(p.cfg.keep, 5);
	CU_ASSERT_EQUAL(p.cfg.max_restarts, 0);
	CU_ASSERT_EQUAL(p.cfg.threads, 3);
	CU_ASSERT_EQUAL(p.cfg.zstd_level, 9);
	CU_ASSERT_EQUAL(p.cfg.poll_interval_ms, 500);
	CU_ASSERT_EQUAL(p.cfg.azure_ack, 1);
	CU_ASSERT_EQUAL(p.cfg.verbose, 1);
	CU_ASSERT_EQUAL(p.cfg.log_json, 1);
	CU_ASSERT_STRING_EQUAL(p.cfg.notice_file, "/run/notice");

	/* A flag replaces its variable, a repeatable one too. */
	p = s_parse(ARGV("resume-run", "--exact", "a.*", "--exact", "b.*", "--keep", "2", "--",
			 "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL_FATAL(p.cfg.n_exact_globs, 2);
	CU_ASSERT_STRING_EQUAL(p.cfg.exact_globs[0], "a.*");
	CU_ASSERT_STRING_EQUAL(p.cfg.exact_globs[1], "b.*");
	CU_ASSERT_EQUAL(p.cfg.keep, 2);

	/* A flag's variable saying no leaves it off. */
	setenv("RESUME_RUN_VERBOSE", "0", 1);
	setenv("RESUME_RUN_AZURE_ACK", "off", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.verbose, 0);
	CU_ASSERT_EQUAL(p.cfg.azure_ack, 0);

	/* The variables are checked like the flags and named when wrong. */
	setenv("RESUME_RUN_KEEP", "0", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "RESUME_RUN_KEEP"));

	/* gc reads RESUME_RUN_GC_GRACE, never the run's RESUME_RUN_GRACE; ls takes neither
	 * and ignores both variables. */
	setenv("RESUME_RUN_KEEP", "4", 1);
	setenv("RESUME_RUN_GRACE", "2h", 1);
	setenv("RESUME_RUN_GC_GRACE", "2h", 1);
	p = s_parse(ARGV("resume-run", "gc"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.gc_grace_ms, 2 * 3600 * 1000);
	CU_ASSERT_EQUAL(p.cfg.keep, 4);
	p = s_parse(ARGV("resume-run", "ls"));
	CU_ASSERT_EQUAL(p.rc, 0);
	s_clear_env();
}

static void test_parse_subcommand_options_from_the_environment(void)
{
	struct s_parsed p;

	s_clear_env();
	setenv("RESUME_RUN_TO", "/restored", 1);
	setenv("RESUME_RUN_CHECKPOINT", "step-100", 1);
	p = s_parse(ARGV("resume-run", "restore"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.to, "/restored");
	CU_ASSERT_STRING_EQUAL(p.cfg.checkpoint, "step-100");
	setenv("RESUME_RUN_JSON", "true", 1);
	setenv("RESUME_RUN_PRICE_SPOT", "0.5", 1);
	setenv("RESUME_RUN_PRICE_ON_DEMAND", "2", 1);
	p = s_parse(ARGV("resume-run", "report"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.report_json, 1);
	CU_ASSERT_DOUBLE_EQUAL(p.cfg.price_spot, 0.5, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(p.cfg.price_on_demand, 2.0, 1e-9);
	s_clear_env();
}

/* Reads a whole file or a command's output into a malloc'd string (NULL on failure). */
static char *s_slurp(FILE *f)
{
	size_t cap = 1 << 16, n = 0, r;
	char *b = malloc(cap + 1);

	while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			char *nb = realloc(b, cap * 2 + 1);
			if (!nb) {
				free(b);
				return NULL;
			}
			b = nb;
			cap *= 2;
		}
	}
	if (b)
		b[n] = '\0';
	return b;
}

/* The option table of docs/command-line.md names every option of the table with its
 * variable, on one row, and nothing the table does not have. */
static void test_readme_option_table_matches_the_option_table(void)
{
	const char *src = getenv("RR_SRC");
	char path[4096], *readme, *sec;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(src);
	snprintf(path, sizeof(path), "%s/docs/command-line.md", src);
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	readme = s_slurp(f);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(readme);
	sec = strstr(readme, "\n| option (env) |");
	CU_ASSERT_PTR_NOT_NULL_FATAL(sec);

	/* every table option with a variable: a row whose first cell has both */
	for (size_t i = 0; i < rr_config_option_count(); i++) {
		const char *name, *env;
		char flag[80], var[80];
		unsigned cmds;
		int found = 0;

		CU_ASSERT_EQUAL_FATAL(rr_config_option(i, &name, &env, &cmds), 0);
		if (!env)
			continue;
		snprintf(flag, sizeof(flag), "--%s ", name);
		snprintf(var, sizeof(var), "(`%s`)", env);
		for (char *row = strstr(sec, "\n| `"); row; row = strstr(row + 1, "\n| `")) {
			char cell[512], *bar = strstr(row + 3, " | ");
			size_t len = bar ? (size_t)(bar - row) : 0;
			if (!bar || len >= sizeof(cell))
				continue;
			memcpy(cell, row, len);
			cell[len] = '\0';
			/* "--name ARG`" or "--name`": the name ends at a space or a backquote */
			char *at = strstr(cell, flag);
			if (!at) {
				char bare[80];
				snprintf(bare, sizeof(bare), "--%s`", name);
				at = strstr(cell, bare);
			}
			if (at && strstr(cell, var))
				found = 1;
		}
		if (!found)
			fprintf(stderr, "docs/command-line.md's option table has no row for --%s (%s)\n", name, env);
		CU_ASSERT(found);
	}

	/* every option the table names: one the parser knows */
	for (char *row = strstr(sec, "\n| `"); row; row = strstr(row + 1, "\n| `")) {
		char *bar = strstr(row + 3, " | ");
		for (char *d = strstr(row, "--"); d && bar && d < bar; d = strstr(d + 2, "--")) {
			char name[64];
			size_t k = 0;
			int known = 0;
			for (d += 2; k + 1 < sizeof(name) && (islower((unsigned char)d[k]) ||
							     isdigit((unsigned char)d[k]) ||
							     d[k] == '-');
			     k++)
				name[k] = d[k];
			name[k] = '\0';
			for (size_t i = 0; i < rr_config_option_count() && !known; i++) {
				const char *n, *env;
				unsigned cmds;
				rr_config_option(i, &n, &env, &cmds);
				known = strcmp(n, name) == 0;
			}
			if (!known)
				fprintf(stderr, "docs/command-line.md's option table names --%s, which is no option\n",
					name);
			CU_ASSERT(known);
		}
	}
	free(readme);
}

/* Whether command cmd takes option name. */
static int s_taken(const char *name, int cmd)
{
	for (size_t i = 0; i < rr_config_option_count(); i++) {
		const char *n, *env;
		unsigned cmds;
		rr_config_option(i, &n, &env, &cmds);
		if (strcmp(n, name) == 0 && (cmds & (1u << cmd)))
			return 1;
	}
	return 0;
}

/* `resume-run [CMD] --help` lists every option the command takes, with its variable. */
static void test_help_lists_every_option_a_command_takes_with_its_variable(void)
{
	static const struct { const char *argv; int cmd; } helps[] = {
		{ "--help", RR_CMD_RUN }, { "ls --help", RR_CMD_LS },
		{ "restore --help", RR_CMD_RESTORE }, { "verify --help", RR_CMD_VERIFY },
		{ "gc --help", RR_CMD_GC }, { "report --help", RR_CMD_REPORT },
		{ "simulate --help", RR_CMD_SIMULATE },
	};
	const char *bin = getenv("RR_BIN");

	CU_ASSERT_PTR_NOT_NULL_FATAL(bin);
	for (size_t h = 0; h < sizeof(helps) / sizeof(helps[0]); h++) {
		char cmdline[4200], *out;
		FILE *f;

		snprintf(cmdline, sizeof(cmdline), "'%s' %s", bin, helps[h].argv);
		f = popen(cmdline, "r");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		out = s_slurp(f);
		CU_ASSERT_EQUAL(pclose(f), 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(out);
		for (size_t i = 0; i < rr_config_option_count(); i++) {
			const char *name, *env;
			char flag[80], var[80];
			unsigned cmds;
			rr_config_option(i, &name, &env, &cmds);
			snprintf(flag, sizeof(flag), "--%s", name);
			snprintf(var, sizeof(var), "[%s]", env ? env : "");
			if (!s_taken(name, helps[h].cmd)) {
				/* not taken: not offered either */
				char spaced[84];
				snprintf(spaced, sizeof(spaced), "  --%s ", name);
				CU_ASSERT_PTR_NULL(strstr(out, spaced));
				continue;
			}
			CU_ASSERT_PTR_NOT_NULL(strstr(out, flag));
			if (env)
				CU_ASSERT_PTR_NOT_NULL(strstr(out, var));
		}
		free(out);
	}
}

static void test_parse_preempted_exit_code_flag_env_default(void)
{
	struct s_parsed p;

	s_clear_env();
	unsetenv("RESUME_RUN_PREEMPTED_EXIT_CODE");
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.preempted_exit_code, 75); /* EX_TEMPFAIL */
	p = s_parse(ARGV("resume-run", "--preempted-exit-code", "0", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.preempted_exit_code, 0);
	setenv("RESUME_RUN_PREEMPTED_EXIT_CODE", "99", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.preempted_exit_code, 99);
	p = s_parse(ARGV("resume-run", "--preempted-exit-code=42", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.preempted_exit_code, 42); /* the flag beats the environment */
	setenv("RESUME_RUN_PREEMPTED_EXIT_CODE", "256", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "RESUME_RUN_PREEMPTED_EXIT_CODE") && s_has(p.err, "'256'"));
	unsetenv("RESUME_RUN_PREEMPTED_EXIT_CODE");
	p = s_parse(ARGV("resume-run", "--preempted-exit-code", "-1", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "--preempted-exit-code", "75x", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	/* a run option: the subcommands refuse it */
	p = s_parse(ARGV("resume-run", "ls", "--preempted-exit-code", "1"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
}

static void test_commit_rule_defaults_to_auto_and_comes_from_flag_or_environment(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.commit.kind, RR_COMMIT_AUTO);
	setenv("RESUME_RUN_COMMIT", "pointer:latest", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT(p.cfg.commit.kind == RR_COMMIT_POINTER &&
		  strcmp(p.cfg.commit.name, "latest") == 0);
	p = s_parse(ARGV("resume-run", "--commit", "marker:DONE", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT(p.cfg.commit.kind == RR_COMMIT_MARKER && strcmp(p.cfg.commit.name, "DONE") == 0);
	p = s_parse(ARGV("resume-run", "restore", "--commit", "rename", "--to", "/x"));
	CU_ASSERT_EQUAL(p.rc, 0);
	p = s_parse(ARGV("resume-run", "--commit", "marker:a/b", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "invalid value 'marker:a/b' for --commit"));
	p = s_parse(ARGV("resume-run", "ls", "--commit", "rename"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	setenv("RESUME_RUN_COMMIT", "sometimes", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "RESUME_RUN_COMMIT"));
	s_clear_env();
}

static void test_parse_nodes_default_to_one_node_rank_zero(void)
{
	s_clear_env();
	struct s_parsed p = s_parse(ARGV("resume-run", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.nnodes, 1);
	CU_ASSERT_EQUAL(p.cfg.node_rank, 0);
}

static void test_parse_nodes_precedence_flag_then_agent_then_slurm_then_generic(void)
{
	s_clear_env();
	setenv("NNODES", "8", 1);
	setenv("NODE_RANK", "7", 1);
	struct s_parsed p = s_parse(ARGV("resume-run", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.nnodes, 8);
	CU_ASSERT_EQUAL(p.cfg.node_rank, 7);
	setenv("SLURM_NNODES", "6", 1);
	setenv("SLURM_NODEID", "5", 1);
	p = s_parse(ARGV("resume-run", "--", "true"));
	CU_ASSERT_EQUAL(p.cfg.nnodes, 6);
	CU_ASSERT_EQUAL(p.cfg.node_rank, 5);
	setenv("RESUME_RUN_NNODES", "4", 1);
	setenv("RESUME_RUN_NODE_RANK", "3", 1);
	p = s_parse(ARGV("resume-run", "--", "true"));
	CU_ASSERT_EQUAL(p.cfg.nnodes, 4);
	CU_ASSERT_EQUAL(p.cfg.node_rank, 3);
	p = s_parse(ARGV("resume-run", "--nnodes", "2", "--node-rank", "1", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.nnodes, 2);
	CU_ASSERT_EQUAL(p.cfg.node_rank, 1);
	s_clear_env();
}

static void test_parse_node_rank_must_be_below_nnodes(void)
{
	s_clear_env();
	struct s_parsed p = s_parse(ARGV("resume-run", "--nnodes", "2", "--node-rank", "2",
					 "--", "true"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "node rank 2"));
	setenv("SLURM_NODEID", "1", 1);
	p = s_parse(ARGV("resume-run", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "--nnodes", "0", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	setenv("SLURM_NNODES", "x", 1);
	p = s_parse(ARGV("resume-run", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "SLURM_NNODES"));
	/* a flag replaces its variables: they are not read at all */
	p = s_parse(ARGV("resume-run", "--nnodes", "2", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, 0);
	s_clear_env();
	p = s_parse(ARGV("resume-run", "ls", "--nnodes", "2"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "restore", "--to", "/tmp/x", "--nnodes", "2",
			 "--node-rank", "1"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.node_rank, 1);
}

/* A node count given as 1 makes a single-node run, rank 0: the launcher's rank (SLURM_NODEID,
 * NODE_RANK: a one-node run inside a multi-node Slurm allocation sees its node's) is not read.
 * A count above 1 reads it (srun resume-run --nnodes $SLURM_NNODES); the agent's own rank
 * variable and --node-rank are never passed over. */
static void test_parse_single_node_run_ignores_the_launchers_rank(void)
{
	struct s_parsed p;

	s_clear_env();
	setenv("SLURM_NODEID", "1", 1);
	p = s_parse(ARGV("resume-run", "--nnodes", "1", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.nnodes, 1);
	CU_ASSERT_EQUAL(p.cfg.node_rank, 0);
	setenv("SLURM_NNODES", "4", 1);
	setenv("SLURM_NODEID", "2", 1);
	p = s_parse(ARGV("resume-run", "--nnodes", "1", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.nnodes, 1);
	CU_ASSERT_EQUAL(p.cfg.node_rank, 0);
	p = s_parse(ARGV("resume-run", "restore", "--to", "/tmp/x", "--nnodes", "1"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.node_rank, 0);
	/* not read at all: a value it would refuse does not matter */
	setenv("SLURM_NODEID", "x", 1);
	p = s_parse(ARGV("resume-run", "--nnodes", "1", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, 0);
	s_clear_env();
	setenv("RESUME_RUN_NNODES", "1", 1);
	setenv("NODE_RANK", "3", 1);
	p = s_parse(ARGV("resume-run", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.node_rank, 0);
	s_clear_env();
	setenv("SLURM_NNODES", "1", 1);
	setenv("SLURM_NODEID", "0", 1);
	p = s_parse(ARGV("resume-run", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.nnodes, 1);
	CU_ASSERT_EQUAL(p.cfg.node_rank, 0);
	/* more than one node: the launcher's rank */
	setenv("SLURM_NNODES", "4", 1);
	setenv("SLURM_NODEID", "3", 1);
	p = s_parse(ARGV("resume-run", "--nnodes", "4", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.node_rank, 3);
	/* an explicit rank with one node is still a mistake */
	s_clear_env();
	p = s_parse(ARGV("resume-run", "--nnodes", "1", "--node-rank", "1", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	setenv("RESUME_RUN_NODE_RANK", "1", 1);
	p = s_parse(ARGV("resume-run", "--nnodes", "1", "--", "true"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "node rank 1"));
	s_clear_env();
}

/* --every auto, --mtbf, --max-overhead (docs/performance.md, "How often to checkpoint"). */
static void test_parse_every_auto_mtbf_and_max_overhead(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "--every", "auto", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.every_auto, 1);
	CU_ASSERT_EQUAL(p.cfg.every_ms, 0);
	CU_ASSERT_EQUAL(p.cfg.mtbf_ms, 0);
	CU_ASSERT_DOUBLE_EQUAL(p.cfg.max_overhead, 0.05, 1e-12);
	p = s_parse(ARGV("resume-run", "--every", "auto", "--mtbf", "20s", "--max-overhead",
			 "3.5", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.mtbf_ms, 20000);
	CU_ASSERT_DOUBLE_EQUAL(p.cfg.max_overhead, 0.035, 1e-12);
	p = s_parse(ARGV("resume-run", "--max-overhead", "10%", "--", "train"));
	CU_ASSERT_DOUBLE_EQUAL(p.cfg.max_overhead, 0.10, 1e-12);
	static const char *const bad_pct[] = { "0", "101", "-5", "x", "%", "5%%", "1e1", "" };
	for (size_t i = 0; i < sizeof(bad_pct) / sizeof(bad_pct[0]); i++) {
		p = s_parse(ARGV("resume-run", "--max-overhead", (char *)bad_pct[i], "--", "train"));
		CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	}
	p = s_parse(ARGV("resume-run", "--mtbf", "500ms", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "--every", "automatic", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	/* a later fixed --every replaces auto */
	p = s_parse(ARGV("resume-run", "--every", "auto", "--every", "90s", "--", "train"));
	CU_ASSERT_EQUAL(p.cfg.every_auto, 0);
	CU_ASSERT_EQUAL(p.cfg.every_ms, 90000);
	/* from the environment */
	setenv("RESUME_RUN_EVERY", "auto", 1);
	setenv("RESUME_RUN_MTBF", "6h", 1);
	setenv("RESUME_RUN_MAX_OVERHEAD", "2", 1);
	p = s_parse(ARGV("resume-run", "--", "train"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.every_auto, 1);
	CU_ASSERT_EQUAL(p.cfg.mtbf_ms, 6 * 3600 * 1000LL);
	CU_ASSERT_DOUBLE_EQUAL(p.cfg.max_overhead, 0.02, 1e-12);
	s_clear_env();
}

static void test_parse_simulate(void)
{
	struct s_parsed p;

	s_clear_env();
	p = s_parse(ARGV("resume-run", "simulate", "--cost", "5m", "--mtbf", "24h"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.cfg.command, RR_CMD_SIMULATE);
	CU_ASSERT_EQUAL(p.cfg.sim_cost_ms, 300000);
	CU_ASSERT_EQUAL(p.cfg.mtbf_ms, 86400000);
	CU_ASSERT_EQUAL(p.cfg.sim_lead_ms, 120000);
	CU_ASSERT_EQUAL(p.cfg.sim_prior_ms, 86400000);
	CU_ASSERT_EQUAL(p.cfg.sim_seed, 1);
	CU_ASSERT_PTR_NULL(p.cfg.sim_trace);
	p = s_parse(ARGV("resume-run", "simulate", "--cost", "200ms", "--trace", "t.txt",
			 "--lead", "30s", "--hours", "12.5", "--weibull", "0.7", "--prior", "6h",
			 "--seed", "42", "--json", "--max-overhead", "10"));
	CU_ASSERT_EQUAL_FATAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.cfg.sim_trace, "t.txt");
	CU_ASSERT_EQUAL(p.cfg.sim_lead_ms, 30000);
	CU_ASSERT_DOUBLE_EQUAL(p.cfg.sim_hours, 12.5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(p.cfg.sim_weibull, 0.7, 1e-12);
	CU_ASSERT_EQUAL(p.cfg.sim_prior_ms, 6 * 3600 * 1000LL);
	CU_ASSERT_EQUAL(p.cfg.sim_seed, 42);
	CU_ASSERT_EQUAL(p.cfg.report_json, 1);
	CU_ASSERT_DOUBLE_EQUAL(p.cfg.max_overhead, 0.10, 1e-12);
	/* what is required, and said so */
	p = s_parse(ARGV("resume-run", "simulate", "--mtbf", "24h"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "simulate: --cost DURATION is required"));
	p = s_parse(ARGV("resume-run", "simulate", "--cost", "5m"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "--mtbf DURATION (or --trace FILE) is required"));
	p = s_parse(ARGV("resume-run", "simulate", "--cost", "5m", "--mtbf", "1h", "--weibull",
			 "0.05"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	/* simulate opens no store: no --store; run takes no --cost */
	p = s_parse(ARGV("resume-run", "simulate", "--cost", "5m", "--mtbf", "1h", "--store",
			 "file:///x"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	CU_ASSERT(s_has(p.err, "does not apply here"));
	p = s_parse(ARGV("resume-run", "--cost", "5m", "--", "train"));
	CU_ASSERT_EQUAL(p.rc, RR_EINVAL);
	p = s_parse(ARGV("resume-run", "simulate", "--help"));
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_EQUAL(p.help_for, RR_CMD_SIMULATE);
}

static CU_TestInfo s_tests[] = {
	{ "parse_every_auto_mtbf_and_max_overhead", test_parse_every_auto_mtbf_and_max_overhead },
	{ "parse_simulate", test_parse_simulate },
	{ "test_commit_rule_defaults_to_auto_and_comes_from_flag_or_environment",
	  test_commit_rule_defaults_to_auto_and_comes_from_flag_or_environment },
	{ "test_parse_preempted_exit_code_flag_env_default",
	  test_parse_preempted_exit_code_flag_env_default },
	{ "test_every_option_but_help_and_version_has_its_environment_variable",
	  test_every_option_but_help_and_version_has_its_environment_variable },
	{ "test_parse_takes_every_run_option_from_the_environment",
	  test_parse_takes_every_run_option_from_the_environment },
	{ "test_parse_subcommand_options_from_the_environment",
	  test_parse_subcommand_options_from_the_environment },
	{ "test_readme_option_table_matches_the_option_table",
	  test_readme_option_table_matches_the_option_table },
	{ "test_help_lists_every_option_a_command_takes_with_its_variable",
	  test_help_lists_every_option_a_command_takes_with_its_variable },
	{ "test_duration_accepts_each_unit", test_duration_accepts_each_unit },
	{ "test_duration_of_exactly_30_days_is_accepted_in_every_unit",
	  test_duration_of_exactly_30_days_is_accepted_in_every_unit },
	{ "test_duration_refuses_junk", test_duration_refuses_junk },
	{ "test_duration_refuses_overflow_and_more_than_30_days",
	  test_duration_refuses_overflow_and_more_than_30_days },
	{ "test_int_accepts_values_at_both_bounds", test_int_accepts_values_at_both_bounds },
	{ "test_int_refuses_out_of_range_and_junk", test_int_refuses_out_of_range_and_junk },
	{ "test_parse_without_flags_or_environment_uses_the_defaults",
	  test_parse_without_flags_or_environment_uses_the_defaults },
	{ "test_parse_takes_store_run_id_and_checkpoint_dir_from_the_environment",
	  test_parse_takes_store_run_id_and_checkpoint_dir_from_the_environment },
	{ "test_parse_treats_empty_environment_variables_as_unset",
	  test_parse_treats_empty_environment_variables_as_unset },
	{ "test_parse_flags_override_the_environment", test_parse_flags_override_the_environment },
	{ "test_parse_gives_everything_after_double_dash_to_the_trainer",
	  test_parse_gives_everything_after_double_dash_to_the_trainer },
	{ "test_parse_trainer_command_without_double_dash_starts_at_first_non_option",
	  test_parse_trainer_command_without_double_dash_starts_at_first_non_option },
	{ "test_parse_without_a_trainer_command_is_an_error",
	  test_parse_without_a_trainer_command_is_an_error },
	{ "test_parse_unknown_option_error_names_the_option",
	  test_parse_unknown_option_error_names_the_option },
	{ "test_parse_option_without_its_value_is_named",
	  test_parse_option_without_its_value_is_named },
	{ "test_parse_refuses_options_that_do_not_apply_to_the_subcommand",
	  test_parse_refuses_options_that_do_not_apply_to_the_subcommand },
	{ "test_parse_subcommands_take_the_options_they_document",
	  test_parse_subcommands_take_the_options_they_document },
	{ "test_parse_subcommand_refuses_positional_arguments",
	  test_parse_subcommand_refuses_positional_arguments },
	{ "test_parse_restore_without_to_is_refused", test_parse_restore_without_to_is_refused },
	{ "test_parse_refuses_an_invalid_checkpoint_name",
	  test_parse_refuses_an_invalid_checkpoint_name },
	{ "test_parse_gc_grace_is_its_own_duration_of_at_least_ten_minutes",
	  test_parse_gc_grace_is_its_own_duration_of_at_least_ten_minutes },
	{ "test_parse_gc_refuses_grace_and_ignores_the_runs_variable",
	  test_parse_gc_refuses_grace_and_ignores_the_runs_variable },
	{ "test_parse_invalid_values_say_what_they_must_be",
	  test_parse_invalid_values_say_what_they_must_be },
	{ "test_parse_run_grace_is_whole_seconds", test_parse_run_grace_is_whole_seconds },
	{ "test_parse_refuses_keep_zero", test_parse_refuses_keep_zero },
	{ "test_parse_max_restarts_may_be_zero", test_parse_max_restarts_may_be_zero },
	{ "test_parse_refuses_an_invalid_run_id", test_parse_refuses_an_invalid_run_id },
	{ "test_parse_signal_by_name_with_or_without_sig_or_by_number",
	  test_parse_signal_by_name_with_or_without_sig_or_by_number },
	{ "test_parse_signal_refuses_one_that_means_something_else",
	  test_parse_signal_refuses_one_that_means_something_else },
	{ "test_parse_every_off_means_no_periodic_checkpoints",
	  test_parse_every_off_means_no_periodic_checkpoints },
	{ "test_parse_keep_every_off_keeps_no_periodic_checkpoints",
	  test_parse_keep_every_off_keeps_no_periodic_checkpoints },
	{ "parse_keep_for_without_keep_every_is_refused",
	  test_parse_keep_for_without_keep_every_is_refused },
	{ "test_parse_every_below_one_second_is_refused",
	  test_parse_every_below_one_second_is_refused },
	{ "test_parse_run_options_set_their_fields", test_parse_run_options_set_their_fields },
	{ "test_drill_file_and_its_old_names", test_drill_file_and_its_old_names },
	{ "test_parse_help_sets_the_help_command_and_which_help",
	  test_parse_help_sets_the_help_command_and_which_help },
	{ "test_parse_version_sets_the_version_command",
	  test_parse_version_sets_the_version_command },
	{ "test_parse_can_be_called_again_after_stopping_inside_an_option_cluster",
	  test_parse_can_be_called_again_after_stopping_inside_an_option_cluster },
	{ "test_parse_trainer_env_takes_pass_or_strip_from_flag_or_environment",
	  test_parse_trainer_env_takes_pass_or_strip_from_flag_or_environment },
	{ "parse_report_takes_json_and_prices_and_refuses_them_elsewhere",
	  test_parse_report_takes_json_and_prices_and_refuses_them_elsewhere },
	{ "parse_metrics_file_from_flag_or_environment",
	  test_parse_metrics_file_from_flag_or_environment },
	{ "parse_nodes_default_to_one_node_rank_zero",
	  test_parse_nodes_default_to_one_node_rank_zero },
	{ "parse_nodes_precedence_flag_then_agent_then_slurm_then_generic",
	  test_parse_nodes_precedence_flag_then_agent_then_slurm_then_generic },
	{ "parse_node_rank_must_be_below_nnodes", test_parse_node_rank_must_be_below_nnodes },
	{ "parse_single_node_run_ignores_the_launchers_rank",
	  test_parse_single_node_run_ignores_the_launchers_rank },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("config", s_tests)
