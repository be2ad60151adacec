/* CUnit suite "commit_rule": parsing --commit and the names it recognises (README,
 * "The trainer contract", "Committing a checkpoint"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rr/commit_rule.h"
#include "rr/error.h"

#include "cunit_main.h"

static void test_parse_accepts_the_four_forms(void)
{
	struct rr_commit_rule r;

	CU_ASSERT(rr_commit_rule_parse("auto", &r) == 0 && r.kind == RR_COMMIT_AUTO);
	CU_ASSERT(rr_commit_rule_parse("rename", &r) == 0 && r.kind == RR_COMMIT_RENAME);
	CU_ASSERT(rr_commit_rule_parse("marker:trainer_state.json", &r) == 0 &&
		  r.kind == RR_COMMIT_MARKER && strcmp(r.name, "trainer_state.json") == 0);
	CU_ASSERT(rr_commit_rule_parse("pointer:latest", &r) == 0 &&
		  r.kind == RR_COMMIT_POINTER && strcmp(r.name, "latest") == 0);
	CU_ASSERT(rr_commit_rule_parse("marker:.metadata", &r) == 0);
}

static void test_parse_rejects_bad_rules_and_names(void)
{
	static const char *const bad[] = { "", "Auto", "marker", "marker:", "pointer:",
					   "marker:a/b", "pointer:..", "marker:.", "renamed",
					   "marker:a\nb" };
	struct rr_commit_rule r;
	char long_name[300];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(rr_commit_rule_parse(bad[i], &r), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_commit_rule_parse(NULL, &r), RR_EINVAL);
	memset(long_name, 'x', sizeof(long_name));
	memcpy(long_name, "marker:", 7);
	long_name[sizeof(long_name) - 1] = '\0';
	CU_ASSERT_EQUAL(rr_commit_rule_parse(long_name, &r), RR_EINVAL);
}

static void test_temporary_names_are_never_checkpoints(void)
{
	static const char *const temp[] = { ".step-1.tmp", ".hidden", "tmpa1b2c3d4", "tmp_x",
					    "tmp-checkpoint-500", "model.ckpt.tmp", "a.temp",
					    "a.part", "a.partial", "a~", "" };
	static const char *const final[] = { "step-1", "checkpoint-500", "global_step3",
					     "epoch=0-step=10.ckpt", "last.ckpt", "atmp",
					     "model.pt" };

	for (size_t i = 0; i < sizeof(temp) / sizeof(temp[0]); i++)
		CU_ASSERT_EQUAL(rr_commit_is_temp_name(temp[i]), 1);
	for (size_t i = 0; i < sizeof(final) / sizeof(final[0]); i++)
		CU_ASSERT_EQUAL(rr_commit_is_temp_name(final[i]), 0);
}

static void test_auto_knows_the_framework_markers_and_pointer(void)
{
	struct rr_commit_rule a, m, p, r;

	rr_commit_rule_parse("auto", &a);
	rr_commit_rule_parse("marker:DONE", &m);
	rr_commit_rule_parse("pointer:CURRENT", &p);
	rr_commit_rule_parse("rename", &r);
	CU_ASSERT(rr_commit_is_marker(&a, "checkpoint-5", "trainer_state.json"));
	CU_ASSERT(rr_commit_is_marker(&a, "step-5", ".metadata"));
	CU_ASSERT(!rr_commit_is_marker(&a, "step-5", "DONE"));
	CU_ASSERT(rr_commit_is_marker(&m, "step-5", "DONE"));
	CU_ASSERT(!rr_commit_is_marker(&m, "step-5", "trainer_state.json"));
	CU_ASSERT(!rr_commit_is_marker(&r, "step-5", "trainer_state.json"));
	/* `latest` marks a Lightning DeepSpeed *.ckpt directory only: in HF's checkpoint-N it
	 * comes before trainer_state.json */
	CU_ASSERT(rr_commit_is_marker(&a, "epoch=0-step=20.ckpt", "latest"));
	CU_ASSERT(!rr_commit_is_marker(&a, "checkpoint-500", "latest"));
	CU_ASSERT(!rr_commit_is_marker(&a, "global_step10", "latest"));
	CU_ASSERT(!rr_commit_is_marker(&m, "epoch=0-step=20.ckpt", "latest"));
	CU_ASSERT(rr_commit_is_pointer(&a, "latest"));
	CU_ASSERT(rr_commit_is_pointer(&p, "CURRENT") && !rr_commit_is_pointer(&p, "latest"));
	CU_ASSERT(!rr_commit_is_pointer(&r, "latest"));
	CU_ASSERT(rr_commit_takes_renames(&a) && rr_commit_takes_renames(&r));
	CU_ASSERT(!rr_commit_takes_renames(&m) && !rr_commit_takes_renames(&p));
}

static void test_scan_and_restore_treat_framework_names_by_their_rule(void)
{
	struct rr_commit_rule a, p, r;

	rr_commit_rule_parse("auto", &a);
	rr_commit_rule_parse("pointer:CURRENT", &p);
	rr_commit_rule_parse("rename", &r);
	CU_ASSERT(!rr_commit_scan_takes_dir(&a, "checkpoint-500"));
	CU_ASSERT(!rr_commit_scan_takes_dir(&a, "global_step7"));
	CU_ASSERT(rr_commit_scan_takes_dir(&a, "step-7"));
	CU_ASSERT(rr_commit_scan_takes_dir(&r, "checkpoint-500"));
	CU_ASSERT(!rr_commit_scan_takes_dir(&p, "step-7"));
	CU_ASSERT_STRING_EQUAL(rr_commit_pointer_for(&a, "global_step7"), "latest");
	CU_ASSERT_PTR_NULL(rr_commit_pointer_for(&a, "checkpoint-500"));
	CU_ASSERT_PTR_NULL(rr_commit_pointer_for(&a, "global_step"));
	CU_ASSERT_STRING_EQUAL(rr_commit_pointer_for(&p, "anything"), "CURRENT");
	CU_ASSERT_PTR_NULL(rr_commit_pointer_for(&r, "global_step7"));
}

static void test_scan_takes_only_checkpoint_looking_files_under_auto(void)
{
	struct rr_commit_rule a, r, m;

	rr_commit_rule_parse("auto", &a);
	rr_commit_rule_parse("rename", &r);
	rr_commit_rule_parse("marker:DONE", &m);
	CU_ASSERT(rr_commit_scan_takes_file(&a, "epoch=2-step=20.ckpt"));
	CU_ASSERT(rr_commit_scan_takes_file(&a, "model.pt"));
	CU_ASSERT(rr_commit_scan_takes_file(&a, "weights.safetensors"));
	CU_ASSERT(rr_commit_scan_takes_file(&a, "step-7"));
	CU_ASSERT(!rr_commit_scan_takes_file(&a, "zero_to_fp32.py"));
	CU_ASSERT(!rr_commit_scan_takes_file(&a, "latest"));
	CU_ASSERT(!rr_commit_scan_takes_file(&a, "tmpa1b2c3d4"));
	CU_ASSERT(!rr_commit_scan_takes_file(&a, "model.pt.tmp"));
	CU_ASSERT(rr_commit_scan_takes_file(&r, "zero_to_fp32.py"));
	CU_ASSERT(!rr_commit_scan_takes_file(&m, "model.pt"));
}

/* What was written in place (files may follow its commit) and what a rename brought whole. */
static void test_in_place_is_a_directory_committed_by_marker_or_pointer(void)
{
	char dir[] = "/tmp/rr_commit_XXXXXX", p[256];
	struct rr_commit_rule r;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/checkpoint-5", dir);
	CU_ASSERT_EQUAL_FATAL(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/step-7", dir);
	CU_ASSERT_EQUAL_FATAL(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/dcp", dir);
	CU_ASSERT_EQUAL_FATAL(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/dcp/.metadata", dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(p, "w"));
	fclose(f);
	snprintf(p, sizeof(p), "%s/epoch=1-step=9.ckpt", dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(p, "w"));
	fclose(f);

	CU_ASSERT_EQUAL_FATAL(rr_commit_rule_parse("auto", &r), 0);
	CU_ASSERT_EQUAL(rr_commit_in_place(&r, dir, "checkpoint-5"), 1); /* HF's name */
	CU_ASSERT_EQUAL(rr_commit_in_place(&r, dir, "dcp"), 1);          /* holds a marker */
	CU_ASSERT_EQUAL(rr_commit_in_place(&r, dir, "step-7"), 0);       /* renamed whole */
	CU_ASSERT_EQUAL(rr_commit_in_place(&r, dir, "epoch=1-step=9.ckpt"), 0); /* a file */
	CU_ASSERT_EQUAL(rr_commit_in_place(&r, dir, "missing"), 0);
	CU_ASSERT_EQUAL_FATAL(rr_commit_rule_parse("rename", &r), 0);
	CU_ASSERT_EQUAL(rr_commit_in_place(&r, dir, "checkpoint-5"), 0);
	CU_ASSERT_EQUAL_FATAL(rr_commit_rule_parse("marker:done", &r), 0);
	CU_ASSERT_EQUAL(rr_commit_in_place(&r, dir, "step-7"), 1);
	CU_ASSERT_EQUAL_FATAL(rr_commit_rule_parse("pointer:latest", &r), 0);
	CU_ASSERT_EQUAL(rr_commit_in_place(&r, dir, "step-7"), 1);

	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	CU_ASSERT_EQUAL(system(p), 0);
}

static CU_TestInfo s_tests[] = {
	{ "in_place_is_a_directory_committed_by_marker_or_pointer",
	  test_in_place_is_a_directory_committed_by_marker_or_pointer },
	{ "test_scan_takes_only_checkpoint_looking_files_under_auto",
	  test_scan_takes_only_checkpoint_looking_files_under_auto },
	{ "test_parse_accepts_the_four_forms", test_parse_accepts_the_four_forms },
	{ "test_parse_rejects_bad_rules_and_names", test_parse_rejects_bad_rules_and_names },
	{ "test_temporary_names_are_never_checkpoints",
	  test_temporary_names_are_never_checkpoints },
	{ "test_auto_knows_the_framework_markers_and_pointer",
	  test_auto_knows_the_framework_markers_and_pointer },
	{ "test_scan_and_restore_treat_framework_names_by_their_rule",
	  test_scan_and_restore_treat_framework_names_by_their_rule },
	CU_TEST_INFO_NULL,
};
RR_CUNIT_MAIN("commit_rule", s_tests)
