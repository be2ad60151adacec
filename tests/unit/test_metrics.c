/* CUnit suite "metrics": the Prometheus text of a known state, byte for byte; deadlines
 * met and missed as the ledger events arrive; the file replaced atomically (a reader of
 * the old file keeps a whole old text, no temp file is left, unchanged numbers are not
 * rewritten). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/fsutil.h"
#include "rr/log.h"
#include "metrics.h"

#include "cunit_main.h"

static void s_observe(struct rr_metrics *m, const char *kind, const char *json)
{
	cJSON *f = cJSON_Parse(json);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	rr_metrics_observe(m, kind, f);
	cJSON_Delete(f);
}

static char *s_render(struct rr_metrics *m)
{
	struct rr_buf b;
	rr_buf_init(&b, 1 << 20);
	CU_ASSERT_EQUAL_FATAL(rr_metrics_render(m, &b), 0);
	return (char *)b.data;
}

/* The value of one series ("name{labels}") in an exposition text; -1 when absent. */
static double s_value(const char *text, const char *series)
{
	size_t n = strlen(series);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

static const char s_expected[] =
	"# HELP resume_run_build_info Always 1; the version label says which resume-run this is.\n"
	"# TYPE resume_run_build_info gauge\n"
	"resume_run_build_info{version=\"1.2.3\"} 1\n"
	"# HELP resume_run_notices_total Preemption, termination and maintenance notices, by kind and source.\n"
	"# TYPE resume_run_notices_total counter\n"
	"resume_run_notices_total{kind=\"preempt\",source=\"aws\"} 1\n"
	"# HELP resume_run_checkpoints_persisted_total Checkpoints made durable in the store, by what asked for them.\n"
	"# TYPE resume_run_checkpoints_persisted_total counter\n"
	"resume_run_checkpoints_persisted_total{trigger=\"notice\"} 1\n"
	"resume_run_checkpoints_persisted_total{trigger=\"routine\"} 1\n"
	"# HELP resume_run_last_durable_checkpoint_timestamp_seconds When the newest checkpoint became durable (seconds since the epoch).\n"
	"# TYPE resume_run_last_durable_checkpoint_timestamp_seconds gauge\n"
	"resume_run_last_durable_checkpoint_timestamp_seconds 1700000100.000\n"
	"# HELP resume_run_persist_duration_seconds Time to make one checkpoint durable in the store.\n"
	"# TYPE resume_run_persist_duration_seconds histogram\n"
	"resume_run_persist_duration_seconds_bucket{le=\"0.5\"} 0\n"
	"resume_run_persist_duration_seconds_bucket{le=\"1\"} 0\n"
	"resume_run_persist_duration_seconds_bucket{le=\"2\"} 1\n"
	"resume_run_persist_duration_seconds_bucket{le=\"5\"} 1\n"
	"resume_run_persist_duration_seconds_bucket{le=\"10\"} 1\n"
	"resume_run_persist_duration_seconds_bucket{le=\"30\"} 1\n"
	"resume_run_persist_duration_seconds_bucket{le=\"60\"} 2\n"
	"resume_run_persist_duration_seconds_bucket{le=\"120\"} 2\n"
	"resume_run_persist_duration_seconds_bucket{le=\"300\"} 2\n"
	"resume_run_persist_duration_seconds_bucket{le=\"600\"} 2\n"
	"resume_run_persist_duration_seconds_bucket{le=\"+Inf\"} 2\n"
	"resume_run_persist_duration_seconds_sum 46.500\n"
	"resume_run_persist_duration_seconds_count 2\n"
	"# HELP resume_run_checkpointed_bytes_total Bytes of the checkpoints persisted, as the trainer wrote them.\n"
	"# TYPE resume_run_checkpointed_bytes_total counter\n"
	"resume_run_checkpointed_bytes_total 3000\n"
	"# HELP resume_run_stored_bytes_total Bytes those checkpoints take in the store, compressed.\n"
	"# TYPE resume_run_stored_bytes_total counter\n"
	"resume_run_stored_bytes_total 1200\n"
	"# HELP resume_run_uploaded_bytes_total Bytes sent to the store (new chunks only).\n"
	"# TYPE resume_run_uploaded_bytes_total counter\n"
	"resume_run_uploaded_bytes_total 400\n"
	"# HELP resume_run_last_checkpoint_bytes Size of the newest persisted checkpoint, as the trainer wrote it.\n"
	"# TYPE resume_run_last_checkpoint_bytes gauge\n"
	"resume_run_last_checkpoint_bytes 2000\n"
	"# HELP resume_run_deadlines_met_total Notices whose checkpoint was durable before the deadline.\n"
	"# TYPE resume_run_deadlines_met_total counter\n"
	"resume_run_deadlines_met_total 1\n"
	"# HELP resume_run_deadline_misses_total Notices whose checkpoint was not durable by the deadline.\n"
	"# TYPE resume_run_deadline_misses_total counter\n"
	"resume_run_deadline_misses_total 0\n"
	"# HELP resume_run_last_notice_to_durable_seconds From the newest answered notice to its checkpoint being durable.\n"
	"# TYPE resume_run_last_notice_to_durable_seconds gauge\n"
	"resume_run_last_notice_to_durable_seconds 20.000\n"
	"# HELP resume_run_restores_total Checkpoints restored from the store at start.\n"
	"# TYPE resume_run_restores_total counter\n"
	"resume_run_restores_total 1\n"
	"# HELP resume_run_restored_bytes_total Bytes of the checkpoints restored.\n"
	"# TYPE resume_run_restored_bytes_total counter\n"
	"resume_run_restored_bytes_total 5000\n"
	"# HELP resume_run_last_restore_duration_seconds Time the newest restore took.\n"
	"# TYPE resume_run_last_restore_duration_seconds gauge\n"
	"resume_run_last_restore_duration_seconds 2.500\n"
	"# HELP resume_run_restarts_total Restarts of the trainer after it failed.\n"
	"# TYPE resume_run_restarts_total counter\n"
	"resume_run_restarts_total 1\n";

/* A restore; an AWS notice at T (deadline T+120 s) answered by a checkpoint committed at
 * T+5 s and durable at T+20 s (1.5 s to persist); a routine checkpoint (45 s); a restart. */
static void s_known_state(struct rr_metrics *m)
{
	s_observe(m, "restore", "{\"bytes\":5000,\"elapsed_ms\":2500}");
	s_observe(m, "notice", "{\"notice\":\"preempt\",\"source\":\"aws\",\"received_unix\":1700000000,"
			       "\"received_unix_ms\":1700000000000,\"deadline_unix\":1700000120}");
	s_observe(m, "checkpoint", "{\"urgent\":true,\"committed_unix_ms\":1700000005000,"
				   "\"durable_unix_ms\":1700000020000,\"elapsed_ms\":1500,"
				   "\"bytes\":1000,\"stored_bytes\":400,\"new_bytes\":300}");
	s_observe(m, "checkpoint", "{\"urgent\":false,\"committed_unix_ms\":1700000050000,"
				   "\"durable_unix_ms\":1700000100000,\"elapsed_ms\":45000,"
				   "\"bytes\":2000,\"stored_bytes\":800,\"new_bytes\":100}");
	s_observe(m, "restart", "{\"exit_status\":1,\"attempt\":1}");
	s_observe(m, "start", "{}"); /* not counted */
}

static void test_metrics_text_is_exact_for_a_known_state(void)
{
	struct rr_metrics *m;
	char *text;

	CU_ASSERT_EQUAL_FATAL(rr_metrics_new(NULL, "1.2.3", &m), 0);
	s_known_state(m);
	text = s_render(m);
	CU_ASSERT_STRING_EQUAL(text, s_expected);
	if (strcmp(text, s_expected) != 0)
		fprintf(stderr, "\n--- got:\n%s", text);
	free(text);
	rr_metrics_destroy(m);
}

static void test_metrics_before_any_event_has_zeros_and_no_timestamps(void)
{
	struct rr_metrics *m;
	char *text;

	CU_ASSERT_EQUAL_FATAL(rr_metrics_new(NULL, "1.2.3", &m), 0);
	text = s_render(m);
	CU_ASSERT_EQUAL(s_value(text, "resume_run_checkpoints_persisted_total{trigger=\"notice\"}"), 0);
	CU_ASSERT_EQUAL(s_value(text, "resume_run_persist_duration_seconds_count"), 0);
	CU_ASSERT_EQUAL(s_value(text, "resume_run_restarts_total"), 0);
	/* No checkpoint yet: no timestamp at all, rather than 1970. */
	CU_ASSERT_PTR_NULL(strstr(text, "resume_run_last_durable_checkpoint_timestamp_seconds"));
	CU_ASSERT_PTR_NULL(strstr(text, "resume_run_last_restore_duration_seconds"));
	free(text);
	rr_metrics_destroy(m);
}

static void test_metrics_label_values_are_escaped(void)
{
	struct rr_metrics *m;
	char *text;

	CU_ASSERT_EQUAL_FATAL(rr_metrics_new(NULL, "1.0 \"x\"\\\n", &m), 0);
	s_observe(m, "notice", "{\"notice\":\"pre\\\"empt\",\"source\":\"a\\\\b\"}");
	text = s_render(m);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "resume_run_build_info{version=\"1.0 \\\"x\\\"\\\\\\n\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "{kind=\"pre\\\"empt\",source=\"a\\\\b\"} 1\n"));
	free(text);
	rr_metrics_destroy(m);
}

static void test_metrics_count_a_checkpoint_durable_after_the_deadline_as_missed(void)
{
	struct rr_metrics *m;
	char *text;

	CU_ASSERT_EQUAL_FATAL(rr_metrics_new(NULL, "1", &m), 0);
	s_observe(m, "notice", "{\"notice\":\"preempt\",\"source\":\"gcp\","
			       "\"received_unix_ms\":1700000000000,\"deadline_unix\":1700000030}");
	/* Committed before the notice and not urgent: a routine one; it answers nothing. */
	s_observe(m, "checkpoint", "{\"urgent\":false,\"committed_unix_ms\":1699999990000,"
				   "\"durable_unix_ms\":1700000010000,\"elapsed_ms\":100}");
	s_observe(m, "checkpoint", "{\"urgent\":true,\"committed_unix_ms\":1700000010000,"
				   "\"durable_unix_ms\":1700000031000,\"elapsed_ms\":100}");
	text = s_render(m);
	CU_ASSERT_EQUAL(s_value(text, "resume_run_deadline_misses_total"), 1);
	CU_ASSERT_EQUAL(s_value(text, "resume_run_deadlines_met_total"), 0);
	CU_ASSERT_EQUAL(s_value(text, "resume_run_last_notice_to_durable_seconds"), 31);
	free(text);
	rr_metrics_destroy(m);
}

static void test_metrics_finish_counts_a_deadline_passed_with_nothing_durable(void)
{
	struct rr_metrics *m;
	char *text;

	CU_ASSERT_EQUAL_FATAL(rr_metrics_new(NULL, "1", &m), 0);
	s_observe(m, "notice", "{\"notice\":\"terminate\",\"source\":\"signal\","
			       "\"received_unix_ms\":1700000000000,\"deadline_unix\":1700000025}");
	rr_metrics_finish(m, 1700000020000LL); /* leaving before the deadline: not a miss */
	text = s_render(m);
	CU_ASSERT_EQUAL(s_value(text, "resume_run_deadline_misses_total"), 0);
	free(text);
	rr_metrics_finish(m, 1700000026000LL);
	rr_metrics_finish(m, 1700000027000LL); /* counted once */
	text = s_render(m);
	CU_ASSERT_EQUAL(s_value(text, "resume_run_deadline_misses_total"), 1);
	CU_ASSERT_PTR_NULL(strstr(text, "resume_run_last_notice_to_durable_seconds"));
	free(text);
	rr_metrics_destroy(m);
}

static char *s_read(const char *path)
{
	struct rr_buf b;
	rr_buf_init(&b, 1 << 20);
	CU_ASSERT_EQUAL_FATAL(rr_read_file(path, &b), 0);
	return (char *)b.data;
}

static size_t s_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void test_metrics_file_is_replaced_atomically(void)
{
	char dir[] = "/tmp/rr_metrics_XXXXXX", path[64], old_text[64 * 1024];
	struct rr_metrics *m;
	struct stat st1, st2;
	char *text, *rendered;
	FILE *old;
	size_t got;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/resume_run.prom", dir);
	CU_ASSERT_EQUAL_FATAL(rr_metrics_new(path, "1.2.3", &m), 0);
	CU_ASSERT_EQUAL(rr_metrics_flush(m), 0); /* the first flush writes the zeros */
	text = s_read(path);
	rendered = s_render(m);
	CU_ASSERT_STRING_EQUAL(text, rendered);
	free(text);
	free(rendered);
	CU_ASSERT_EQUAL_FATAL(stat(path, &st1), 0);
	old = fopen(path, "r"); /* a scraper in the middle of reading */
	CU_ASSERT_PTR_NOT_NULL_FATAL(old);

	s_known_state(m);
	CU_ASSERT_EQUAL(rr_metrics_flush(m), 0);
	text = s_read(path);
	CU_ASSERT_STRING_EQUAL(text, s_expected);
	free(text);
	CU_ASSERT_EQUAL_FATAL(stat(path, &st2), 0);
	CU_ASSERT_NOT_EQUAL(st1.st_ino, st2.st_ino); /* a new file renamed over the old */
	got = fread(old_text, 1, sizeof(old_text) - 1, old);
	old_text[got] = '\0';
	fclose(old);
	CU_ASSERT_EQUAL(s_value(old_text, "resume_run_restarts_total"), 0); /* whole and old */
	CU_ASSERT_PTR_NOT_NULL(strstr(old_text, "resume_run_restarts_total 0\n"));
	CU_ASSERT_EQUAL(s_entries(dir), 1); /* no temp file left beside it */

	/* Nothing changed: not rewritten. */
	CU_ASSERT_EQUAL(rr_metrics_flush(m), 0);
	CU_ASSERT_EQUAL_FATAL(stat(path, &st1), 0);
	CU_ASSERT_EQUAL(st1.st_ino, st2.st_ino);
	rr_metrics_destroy(m);

	/* A directory that does not exist: an error, nothing written, the agent goes on. */
	rr_log_init(0, RR_LOG_ERROR); /* its warning is expected */
	snprintf(path, sizeof(path), "%s/missing/resume_run.prom", dir);
	CU_ASSERT_EQUAL_FATAL(rr_metrics_new(path, "1", &m), 0);
	CU_ASSERT_NOT_EQUAL(rr_metrics_flush(m), 0);
	rr_metrics_destroy(m);
	CU_ASSERT_EQUAL(rr_remove_tree(dir), 0);
}

static void test_metrics_null_is_a_no_op(void)
{
	rr_metrics_observe(NULL, "notice", NULL);
	rr_metrics_finish(NULL, 1);
	CU_ASSERT_EQUAL(rr_metrics_flush(NULL), 0);
	rr_metrics_destroy(NULL);
}

/* --every: the interval, its inputs and the stall, from "interval" events; absent before. */
static void test_metrics_interval_gauges_and_stall_counter(void)
{
	struct rr_metrics *m;
	char *text;

	CU_ASSERT_EQUAL_FATAL(rr_metrics_new(NULL, "1.0", &m), 0);
	text = s_render(m);
	CU_ASSERT_PTR_NULL(strstr(text, "resume_run_checkpoint_interval_seconds"));
	free(text);
	s_observe(m, "interval", "{\"mode\":\"auto\",\"interval_ms\":5680,\"cost_ms\":1000,"
		  "\"mtbf_ms\":20000}");
	s_observe(m, "interval", "{\"mode\":\"auto\",\"interval_ms\":2697,\"cost_ms\":200,"
		  "\"mtbf_ms\":20000,\"stall_ms\":203}");
	s_observe(m, "interval", "{\"mode\":\"auto\",\"interval_ms\":2697,\"cost_ms\":200,"
		  "\"mtbf_ms\":20000,\"stall_ms\":197}");
	text = s_render(m);
	CU_ASSERT_DOUBLE_EQUAL(s_value(text, "resume_run_checkpoint_interval_seconds"), 2.697, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(s_value(text, "resume_run_checkpoint_cost_seconds"), 0.2, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(s_value(text, "resume_run_uncovered_mtbf_seconds"), 20, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(s_value(text, "resume_run_checkpoint_stall_seconds_total"), 0.4,
			       1e-9);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "# TYPE resume_run_checkpoint_stall_seconds_total "
					    "counter\n"));
	free(text);
	rr_metrics_destroy(m);
	/* a fixed interval: no MTBF */
	CU_ASSERT_EQUAL_FATAL(rr_metrics_new(NULL, "1.0", &m), 0);
	s_observe(m, "interval", "{\"mode\":\"fixed\",\"interval_ms\":90000,\"stall_ms\":2000,"
		  "\"cost_ms\":2000}");
	text = s_render(m);
	CU_ASSERT_DOUBLE_EQUAL(s_value(text, "resume_run_checkpoint_interval_seconds"), 90, 1e-9);
	CU_ASSERT_PTR_NULL(strstr(text, "resume_run_uncovered_mtbf_seconds"));
	free(text);
	rr_metrics_destroy(m);
}

static CU_TestInfo s_tests[] = {
	{ "metrics_interval_gauges_and_stall_counter",
	  test_metrics_interval_gauges_and_stall_counter },
	{ "metrics_text_is_exact_for_a_known_state", test_metrics_text_is_exact_for_a_known_state },
	{ "metrics_before_any_event_has_zeros_and_no_timestamps",
	  test_metrics_before_any_event_has_zeros_and_no_timestamps },
	{ "metrics_label_values_are_escaped", test_metrics_label_values_are_escaped },
	{ "metrics_count_a_checkpoint_durable_after_the_deadline_as_missed",
	  test_metrics_count_a_checkpoint_durable_after_the_deadline_as_missed },
	{ "metrics_finish_counts_a_deadline_passed_with_nothing_durable",
	  test_metrics_finish_counts_a_deadline_passed_with_nothing_durable },
	{ "metrics_file_is_replaced_atomically", test_metrics_file_is_replaced_atomically },
	{ "metrics_null_is_a_no_op", test_metrics_null_is_a_no_op },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("metrics", s_tests)
