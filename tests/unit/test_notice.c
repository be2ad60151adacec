/* CUnit suite "notice": the trainer's notice file (docs/trainer-contract.md, "The trainer
 * contract", RESUME_RUN_NOTICE_FILE) and the contents of a --drill-file, which is outside
 * input: anything that is not a JSON object is a plain preemption notice, a JSON object may
 * refine it, and a known field with a bad value is refused with a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/notice.h"

#include "cunit_main.h"

#define S_NOW 1700000000LL

struct s_result {
	int rc;
	struct rr_notice n;
	char why[256];
};

static struct s_result s_parse_len(const char *text, size_t len)
{
	struct s_result r;

	memset(&r, 0, sizeof(r));
	/* Garbage in the fields the parser must set, so a missed assignment shows. */
	r.n.kind = (enum rr_notice_kind)99;
	r.n.deadline_unix = -7;
	r.rc = rr_notice_parse_file(text, len, S_NOW, &r.n, r.why, sizeof(r.why));
	return r;
}

static struct s_result s_parse(const char *text)
{
	return s_parse_len(text, strlen(text));
}

static char *s_json(const struct rr_notice *n)
{
	struct rr_buf b;
	char *s;

	rr_buf_init(&b, 4096);
	CU_ASSERT_EQUAL_FATAL(rr_notice_to_json(n, &b), 0);
	s = strdup((const char *)b.data);
	rr_buf_free(&b);
	return s;
}

static void test_to_json_without_deadline_writes_null(void)
{
	struct rr_notice n = { .kind = RR_NOTICE_PREEMPT, .source = RR_SOURCE_SIGNAL,
			       .deadline_unix = 0, .received_unix = S_NOW };
	char *s = s_json(&n);

	CU_ASSERT_STRING_EQUAL(s, "{\"kind\":\"preempt\",\"source\":\"signal\",\"deadline_unix\":null,"
				  "\"received_unix\":1700000000}\n");
	free(s);
}

static void test_to_json_with_deadline_writes_the_number(void)
{
	struct rr_notice n = { .kind = RR_NOTICE_TERMINATE, .source = RR_SOURCE_AWS,
			       .deadline_unix = S_NOW + 120, .received_unix = S_NOW };
	char *s = s_json(&n);

	CU_ASSERT_STRING_EQUAL(s, "{\"kind\":\"terminate\",\"source\":\"aws\","
				  "\"deadline_unix\":1700000120,\"received_unix\":1700000000}\n");
	free(s);
}

static void test_to_json_names_every_kind_and_source(void)
{
	static const char *const kinds[] = { "preempt", "rebalance", "maintenance", "terminate" };
	static const char *const sources[] = { "aws", "gcp", "azure", "signal", "file" };
	char want[256];

	for (int k = 0; k < 4; k++) {
		for (int s = 0; s < 5; s++) {
			struct rr_notice n = { .kind = (enum rr_notice_kind)k,
					       .source = (enum rr_notice_source)s,
					       .deadline_unix = 5, .received_unix = 4 };
			char *got = s_json(&n);
			snprintf(want, sizeof(want),
				 "{\"kind\":\"%s\",\"source\":\"%s\",\"deadline_unix\":5,"
				 "\"received_unix\":4}\n",
				 kinds[k], sources[s]);
			CU_ASSERT_STRING_EQUAL(got, want);
			CU_ASSERT_STRING_EQUAL(rr_notice_kind_name(n.kind), kinds[k]);
			CU_ASSERT_STRING_EQUAL(rr_notice_source_name(n.source), sources[s]);
			free(got);
		}
	}
}

static void test_to_json_appends_to_what_is_in_the_buffer(void)
{
	struct rr_notice n = { .kind = RR_NOTICE_REBALANCE, .source = RR_SOURCE_FILE,
			       .received_unix = 1 };
	struct rr_buf b;

	rr_buf_init(&b, 4096);
	CU_ASSERT_EQUAL_FATAL(rr_buf_append(&b, "x", 1), 0);
	CU_ASSERT_EQUAL_FATAL(rr_notice_to_json(&n, &b), 0);
	CU_ASSERT_STRING_EQUAL((const char *)b.data,
			       "x{\"kind\":\"rebalance\",\"source\":\"file\",\"deadline_unix\":null,"
			       "\"received_unix\":1}\n");
	rr_buf_free(&b);
}

static void test_parse_of_an_empty_file_is_a_preemption_without_deadline(void)
{
	struct s_result r = s_parse_len("", 0);

	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.kind, RR_NOTICE_PREEMPT);
	CU_ASSERT_EQUAL(r.n.deadline_unix, 0);
	r = s_parse_len(NULL, 0);
	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.kind, RR_NOTICE_PREEMPT);
}

static void test_parse_of_text_or_other_json_is_a_plain_preemption(void)
{
	static const char *const plain[] = {
		"preempt now\n",
		"rebalance",                       /* a word, not JSON: still a plain notice */
		"{\"kind\":\"rebalance\"",         /* truncated JSON */
		"[\"rebalance\"]",                 /* JSON, but not an object */
		"\"rebalance\"",
		"42",
		"null",
		"   \n\t ",
	};

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		struct s_result r = s_parse(plain[i]);
		CU_ASSERT_EQUAL(r.rc, 0);
		CU_ASSERT_EQUAL(r.n.kind, RR_NOTICE_PREEMPT);
		CU_ASSERT_EQUAL(r.n.deadline_unix, 0);
	}
}

static void test_parse_reads_each_kind(void)
{
	static const struct {
		const char *text;
		enum rr_notice_kind kind;
	} cases[] = {
		{ "{\"kind\":\"preempt\"}", RR_NOTICE_PREEMPT },
		{ "{\"kind\":\"rebalance\"}", RR_NOTICE_REBALANCE },
		{ "{\"kind\":\"maintenance\"}", RR_NOTICE_MAINTENANCE },
		{ " {\n  \"kind\": \"terminate\"\n}\n", RR_NOTICE_TERMINATE },
		{ "{}", RR_NOTICE_PREEMPT },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct s_result r = s_parse(cases[i].text);
		CU_ASSERT_EQUAL(r.rc, 0);
		CU_ASSERT_EQUAL(r.n.kind, cases[i].kind);
		CU_ASSERT_EQUAL(r.n.deadline_unix, 0);
	}
}

static void test_parse_reads_an_absolute_deadline(void)
{
	struct s_result r = s_parse("{\"kind\":\"terminate\",\"deadline_unix\":1700000120}");

	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.kind, RR_NOTICE_TERMINATE);
	CU_ASSERT_EQUAL(r.n.deadline_unix, 1700000120);
	r = s_parse("{\"deadline_unix\":null}");
	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.deadline_unix, 0);
	r = s_parse("{\"deadline_unix\":1}");
	CU_ASSERT(r.rc == 0 && r.n.deadline_unix == 1);
	r = s_parse("{\"deadline_unix\":1e12}");
	CU_ASSERT(r.rc == 0 && r.n.deadline_unix == 1000000000000LL);
	r = s_parse("{\"deadline_unix\":1700000120.0}"); /* integral, written as a float */
	CU_ASSERT(r.rc == 0 && r.n.deadline_unix == 1700000120);
}

static void test_parse_reads_a_deadline_relative_to_now(void)
{
	struct s_result r = s_parse("{\"deadline_in\":30}");

	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.deadline_unix, S_NOW + 30);
	r = s_parse("{\"kind\":\"maintenance\",\"deadline_in\":0}");
	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.kind, RR_NOTICE_MAINTENANCE);
	CU_ASSERT_EQUAL(r.n.deadline_unix, S_NOW);
	r = s_parse("{\"deadline_in\":2592000}"); /* 30 days */
	CU_ASSERT(r.rc == 0 && r.n.deadline_unix == S_NOW + 2592000);
}

static void test_parse_prefers_the_absolute_deadline_when_both_are_given(void)
{
	struct s_result r = s_parse("{\"deadline_in\":30,\"deadline_unix\":1700000500}");

	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.deadline_unix, 1700000500);
	r = s_parse("{\"deadline_unix\":null,\"deadline_in\":30}");
	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.deadline_unix, S_NOW + 30);
}

static void test_parse_ignores_unknown_fields(void)
{
	struct s_result r = s_parse("{\"note\":\"drill #4\",\"kind\":\"rebalance\",\"nested\":"
				    "{\"a\":[1,2,{\"b\":null}]},\"Kind\":\"bogus\",\"deadline\":-5,"
				    "\"deadline_in\":10}");

	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.kind, RR_NOTICE_REBALANCE);
	CU_ASSERT_EQUAL(r.n.deadline_unix, S_NOW + 10);
}

/* JSON readers disagree on which of two same-named members counts: neither is taken. */
static void test_parse_refuses_a_member_named_twice(void)
{
	struct s_result r = s_parse("{\"kind\":\"rebalance\",\"kind\":\"terminate\"}");

	CU_ASSERT_EQUAL(r.rc, RR_EINVAL);
	CU_ASSERT_STRING_EQUAL(r.why, "\"kind\" appears twice");
	r = s_parse("{\"deadline_in\":10,\"note\":1,\"deadline_in\":20}");
	CU_ASSERT_EQUAL(r.rc, RR_EINVAL);
	CU_ASSERT_STRING_EQUAL(r.why, "\"deadline_in\" appears twice");
	r = s_parse("{\"note\":1,\"note\":2,\"kind\":\"rebalance\"}"); /* not read: fine */
	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.kind, RR_NOTICE_REBALANCE);
}

static void test_parse_refuses_a_bad_kind_with_a_reason(void)
{
	static const char *const bad[] = {
		"{\"kind\":\"reboot\"}", "{\"kind\":\"Preempt\"}", "{\"kind\":\"\"}",
		"{\"kind\":1}",          "{\"kind\":null}",        "{\"kind\":[\"preempt\"]}",
		"{\"kind\":\"preempt \"}",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct s_result r = s_parse(bad[i]);
		CU_ASSERT_EQUAL(r.rc, RR_EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(r.why, "\"kind\" must be one of"));
	}
}

static void test_parse_refuses_a_bad_deadline_with_a_reason(void)
{
	static const char *const bad_unix[] = {
		"{\"deadline_unix\":-1}",   "{\"deadline_unix\":0}",      "{\"deadline_unix\":1.5}",
		"{\"deadline_unix\":1e13}", "{\"deadline_unix\":1e400}",  "{\"deadline_unix\":\"1\"}",
		"{\"deadline_unix\":true}", "{\"deadline_unix\":[1]}",
		"{\"deadline_unix\":99999999999999999999}",
	};
	static const char *const bad_in[] = {
		"{\"deadline_in\":-1}",      "{\"deadline_in\":0.5}", "{\"deadline_in\":2592001}",
		"{\"deadline_in\":\"30\"}",  "{\"deadline_in\":null}", "{\"deadline_in\":1e400}",
		"{\"deadline_in\":-1e400}",
	};

	for (size_t i = 0; i < sizeof(bad_unix) / sizeof(bad_unix[0]); i++) {
		struct s_result r = s_parse(bad_unix[i]);
		CU_ASSERT_EQUAL(r.rc, RR_EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(r.why, "\"deadline_unix\" must be"));
	}
	for (size_t i = 0; i < sizeof(bad_in) / sizeof(bad_in[0]); i++) {
		struct s_result r = s_parse(bad_in[i]);
		CU_ASSERT_EQUAL(r.rc, RR_EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(r.why, "\"deadline_in\" must be"));
	}
}

static void test_parse_refuses_a_file_larger_than_64_kib(void)
{
	size_t len = RR_NOTICE_FILE_MAX + 1;
	char *big = malloc(len);
	struct s_result r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	memset(big, ' ', len);
	r = s_parse_len(big, len);
	CU_ASSERT_EQUAL(r.rc, RR_ETOOBIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.why, "larger than"));
	/* Exactly at the ceiling is fine: a JSON object padded with spaces. */
	memset(big, ' ', len);
	memcpy(big, "{\"kind\":\"rebalance\"}", 20);
	r = s_parse_len(big, RR_NOTICE_FILE_MAX);
	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.kind, RR_NOTICE_REBALANCE);
	free(big);
}

static void test_parse_reads_only_len_bytes(void)
{
	/* No NUL terminator after the object: a copy in a heap block of exactly len bytes,
	 * so an ASan build catches any read past it. */
	static const char text[] = "{\"kind\":\"maintenance\",\"deadline_in\":5}";
	size_t len = sizeof(text) - 1;
	char *exact = malloc(len);
	struct s_result r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(exact);
	memcpy(exact, text, len);
	r = s_parse_len(exact, len);
	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.kind, RR_NOTICE_MAINTENANCE);
	CU_ASSERT_EQUAL(r.n.deadline_unix, S_NOW + 5);
	/* A prefix of the same bytes is truncated JSON: a plain notice. */
	r = s_parse_len(exact, len - 1);
	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_EQUAL(r.n.kind, RR_NOTICE_PREEMPT);
	free(exact);
}

static void test_parsed_notice_serialises_to_what_the_trainer_reads(void)
{
	struct s_result r = s_parse("{\"kind\":\"rebalance\",\"deadline_in\":120}");
	char *s;

	CU_ASSERT_EQUAL_FATAL(r.rc, 0);
	r.n.source = RR_SOURCE_FILE;
	r.n.received_unix = S_NOW;
	s = s_json(&r.n);
	CU_ASSERT_STRING_EQUAL(s, "{\"kind\":\"rebalance\",\"source\":\"file\","
				  "\"deadline_unix\":1700000120,\"received_unix\":1700000000}\n");
	free(s);
}

static CU_TestInfo s_tests[] = {
	{ "test_to_json_without_deadline_writes_null", test_to_json_without_deadline_writes_null },
	{ "test_to_json_with_deadline_writes_the_number",
	  test_to_json_with_deadline_writes_the_number },
	{ "test_to_json_names_every_kind_and_source", test_to_json_names_every_kind_and_source },
	{ "test_to_json_appends_to_what_is_in_the_buffer",
	  test_to_json_appends_to_what_is_in_the_buffer },
	{ "test_parse_of_an_empty_file_is_a_preemption_without_deadline",
	  test_parse_of_an_empty_file_is_a_preemption_without_deadline },
	{ "test_parse_of_text_or_other_json_is_a_plain_preemption",
	  test_parse_of_text_or_other_json_is_a_plain_preemption },
	{ "test_parse_reads_each_kind", test_parse_reads_each_kind },
	{ "test_parse_reads_an_absolute_deadline", test_parse_reads_an_absolute_deadline },
	{ "test_parse_reads_a_deadline_relative_to_now",
	  test_parse_reads_a_deadline_relative_to_now },
	{ "test_parse_prefers_the_absolute_deadline_when_both_are_given",
	  test_parse_prefers_the_absolute_deadline_when_both_are_given },
	{ "test_parse_ignores_unknown_fields", test_parse_ignores_unknown_fields },
	{ "test_parse_refuses_a_member_named_twice", test_parse_refuses_a_member_named_twice },
	{ "test_parse_refuses_a_bad_kind_with_a_reason", test_parse_refuses_a_bad_kind_with_a_reason },
	{ "test_parse_refuses_a_bad_deadline_with_a_reason",
	  test_parse_refuses_a_bad_deadline_with_a_reason },
	{ "test_parse_refuses_a_file_larger_than_64_kib", test_parse_refuses_a_file_larger_than_64_kib },
	{ "test_parse_reads_only_len_bytes", test_parse_reads_only_len_bytes },
	{ "test_parsed_notice_serialises_to_what_the_trainer_reads",
	  test_parsed_notice_serialises_to_what_the_trainer_reads },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("notice", s_tests)
