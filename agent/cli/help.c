/* The help of each command, generated from the option table (options.h). */
#include <stdio.h>
#include <string.h>

#include "options.h"
#include "rr/config.h"

static const char s_title_s3[] =
	"S3 stores (every command): credentials, region and endpoint as the AWS CLI finds\n"
	"them (AWS_ACCESS_KEY_ID..., AWS_PROFILE, web identity, container, instance role;\n"
	"AWS_REGION; AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL; AWS_CA_BUNDLE).\n";

static const char s_title_gcs[] =
	"GCS stores (gs://bucket/prefix): GOOGLE_APPLICATION_CREDENTIALS (a service-account\n"
	"key), else the metadata server's token; STORAGE_EMULATOR_HOST redirects requests.\n";

static const char *const s_group_title[] = {
	[RR_GROUP_MAIN] = "Options (environment in brackets):\n",
	[RR_GROUP_S3] = s_title_s3,
	[RR_GROUP_GCS] = s_title_gcs,
	[RR_GROUP_ENCRYPTION] = "Encryption (every command):\n",
};

static const char s_run_head[] =
	"usage: resume-run [OPTIONS] -- COMMAND [ARGS...]\n"
	"       resume-run ls|restore|verify|gc|report|simulate [OPTIONS]   (see CMD --help)\n"
	"\n"
	"Runs COMMAND (the trainer) under supervision. At start it restores the newest committed\n"
	"checkpoint of the run from the store; on a notice it asks the trainer for a checkpoint\n"
	"and makes it durable in the store before the deadline.\n"
	"\n";

static const char s_run_tail[] =
	"\n"
	"Signals: SIGTERM/SIGINT = a notice (checkpoint, persist, then SIGTERM to the trainer);\n"
	"a second one forwards at once. SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH are forwarded.\n"
	"Exit status: the trainer's; 128+N if it died of signal N; --preempted-exit-code (75)\n"
	"if a notice stopped it; 127 command not found; 126 not executable; 125 agent error.\n";

static const char s_ls_head[] =
	"usage: resume-run ls [--store URL] [--run-id ID]\n"
	"Lists the checkpoints of a run, newest first: name, state (committed, or why not),\n"
	"files, original and stored size, commit time. LATEST is marked with '*'.\n";

static const char s_restore_head[] =
	"usage: resume-run restore [--store URL] [--run-id ID] [--checkpoint NAME] --to DIR\n"
	"Restores the newest committed checkpoint (or NAME) into DIR/NAME/, verifying every\n"
	"chunk. Without --checkpoint, a damaged newest checkpoint falls back to an older one.\n"
	"A one-file checkpoint (a Lightning .ckpt) lands as the file DIR/NAME. --commit RULE\n"
	"(default auto) also writes the rule's pointer file: DIR/latest for DeepSpeed's\n"
	"global_stepN, DIR/NAME2 for pointer:NAME2.\n";

static const char s_verify_head[] =
	"usage: resume-run verify [--store URL] [--run-id ID] [--checkpoint NAME]\n"
	"Re-reads and re-hashes every chunk of every committed checkpoint (or of NAME).\n"
	"Exit status 0 when all are intact, 1 when any is damaged, 125 on other errors.\n";

static const char s_gc_head[] =
	"usage: resume-run gc [--store URL] [--run-id ID] [--keep N] [--gc-grace DURATION]\n"
	"                     [--keep-every DURATION [--keep-for DURATION]]\n"
	"Keeps the N newest committed checkpoints (default 3; suspect ones are not counted), the\n"
	"newest proven one, one per --keep-every period for --keep-for, and any a restore is\n"
	"reading; deletes the others, then chunks no remaining checkpoint references and older\n"
	"than --gc-grace by the store's clock (default 1h, at least 10m: chunks go up before the\n"
	"manifest that names them, so a younger one may belong to a persist still in flight on\n"
	"another machine).\n";

static const char s_simulate_head[] =
	"usage: resume-run simulate --cost DURATION --mtbf DURATION [--lead DURATION]\n"
	"                           [--trace FILE] [--hours H] [--weibull SHAPE] [--json]\n"
	"Replays losses (exponential, Weibull, or a trace file's losses and notices) against a\n"
	"trainer whose checkpoint stalls it --cost, and prints the lost work and the checkpoint\n"
	"overhead under --every auto, under fixed intervals, and under the best fixed interval\n"
	"in hindsight; and the interval --every auto --mtbf would choose (JSON: interval_s).\n";

static const char s_unmark_head[] =
	"usage: resume-run unmark [--store URL] [--run-id ID] --checkpoint NAME\n"
	"Clears the suspect mark of checkpoint NAME (set when the trainer failed repeatedly\n"
	"after resuming from it): the next start restores it again if it is the newest.\n";

static const char s_report_head[] =
	"usage: resume-run report [--store URL] [--run-id ID] [--json]\n"
	"                         [--price-spot PRICE --price-on-demand PRICE]\n"
	"What preemptions cost the run, from its ledger in the store (any machine can ask):\n"
	"machines, notices and whether each checkpoint was durable before its deadline, work\n"
	"lost, restores, restarts, bytes. --json: the same for tools (shape in the README).\n";

#define S_HELP_COLUMN 25 /* where an option's explanation starts */
#define S_HELP_WIDTH 90  /* the environment variable goes on a line of its own past this */

/* "  -v, --verbose          also log debug lines [RESUME_RUN_VERBOSE]" and its further lines. */
static void s_print_option(FILE *f, const struct rr_option *o)
{
	char col[64];
	const char *line = o->help;
	int n, last = 0;

	if (o->letter)
		n = snprintf(col, sizeof(col), "  -%c, --%s%s%s", o->letter, o->name,
			     o->arg ? " " : "", o->arg ? o->arg : "");
	else
		n = snprintf(col, sizeof(col), "  --%s%s%s", o->name, o->arg ? " " : "",
			     o->arg ? o->arg : "");
	fprintf(f, "%-*s%s", S_HELP_COLUMN - 1, col, n >= S_HELP_COLUMN - 1 ? "  " : " ");
	for (;;) {
		const char *nl = strchr(line, '\n');
		int len = nl ? (int)(nl - line) : (int)strlen(line);
		fwrite(line, 1, (size_t)len, f);
		last = (line == o->help ? (n >= S_HELP_COLUMN - 1 ? n + 2 : S_HELP_COLUMN) :
					  S_HELP_COLUMN) + len;
		if (!nl)
			break;
		fprintf(f, "\n%*s", S_HELP_COLUMN, "");
		line = nl + 1;
	}
	if (o->env) {
		if (last + 3 + (int)strlen(o->env) > S_HELP_WIDTH)
			fprintf(f, "\n%*s[%s]", S_HELP_COLUMN, "", o->env);
		else
			fprintf(f, " [%s]", o->env);
	}
	fputc('\n', f);
}

/* The help of one command, from its head text and the options it takes, group by group. */
static void s_print_help(FILE *f, enum rr_command cmd)
{
	const char *head = cmd == RR_CMD_LS ? s_ls_head :
			   cmd == RR_CMD_SIMULATE ? s_simulate_head :
			   cmd == RR_CMD_REPORT ? s_report_head :
			   cmd == RR_CMD_RESTORE ? s_restore_head :
			   cmd == RR_CMD_VERIFY ? s_verify_head :
			   cmd == RR_CMD_GC ? s_gc_head :
			   cmd == RR_CMD_UNMARK ? s_unmark_head : s_run_head;

	fputs(head, f);
	for (int g = RR_GROUP_MAIN; g <= RR_GROUP_ENCRYPTION; g++) {
		int titled = 0;
		for (size_t i = 0; i < rr_n_options; i++) {
			if ((int)rr_options[i].group != g || !(rr_options[i].commands & RR_ON(cmd)))
				continue;
			if (!titled)
				fputs(s_group_title[g], f);
			titled = 1;
			s_print_option(f, &rr_options[i]);
		}
	}
	if (cmd == RR_CMD_RUN || cmd == RR_CMD_HELP || cmd == RR_CMD_VERSION)
		fputs(s_run_tail, f);
}

void rr_config_print_help(enum rr_command cmd)
{
	s_print_help(stdout, cmd);
}
