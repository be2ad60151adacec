/* CUnit suite "json": strict parsing of outside JSON, and parsing from several threads at
 * once (the cloud watcher, the persister and the event loop all parse). The threaded test
 * is in the TSan step of scripts/test.sh. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "rr/error.h"
#include "rr/json.h"

#include "cunit_main.h"

#define S_THREADS 4
#define S_ROUNDS 2000

static void test_json_parse_reports_where_it_stopped(void)
{
	const char *text = "{\"a\": 1} trailing";
	const char *end = NULL;
	cJSON *j = rr_json_parse(text, strlen(text), &end);

	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT_PTR_EQUAL(end, text + 8);
	cJSON_Delete(j);

	text = "{\"a\": }";
	end = NULL;
	j = rr_json_parse(text, strlen(text), &end);
	CU_ASSERT_PTR_NULL(j);
	CU_ASSERT_PTR_EQUAL(end, text + 6);
	CU_ASSERT_PTR_NULL(rr_json_parse(text, strlen(text), NULL));
}

static void test_json_parse_object_rejects_what_is_not_one_object(void)
{
	char why[200];
	cJSON *j = NULL;

	CU_ASSERT_EQUAL(rr_json_parse_object("doc", "{\"a\":1}", 7, &j, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL(j);
	cJSON_Delete(j);
	CU_ASSERT_EQUAL(rr_json_parse_object("doc", "[1]", 3, &j, why, sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NULL(j);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a JSON object"));
	CU_ASSERT_EQUAL(rr_json_parse_object("doc", "{} {}", 5, &j, why, sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "after its JSON value (at byte 3)"));
}

struct s_worker {
	int id;
	int wrong; /* rounds whose answer was not this thread's own */
};

/* Each thread parses its own good and bad documents; the bad one breaks at a byte that
 * differs per thread, so an error position leaking from another thread's parse shows. */
static void *s_parse_main(void *arg)
{
	struct s_worker *w = arg;
	char good[64], bad[64], why[200], want[64];
	int glen = snprintf(good, sizeof(good), "{\"thread\": %d}", w->id);
	int blen = snprintf(bad, sizeof(bad), "{\"thread%*s\": %d,}", w->id * 3, "", w->id);

	snprintf(want, sizeof(want), "error near byte %d of %d", blen - 1, blen);
	for (int i = 0; i < S_ROUNDS; i++) {
		cJSON *j = NULL;
		if (rr_json_parse_object("doc", good, (size_t)glen, &j, why, sizeof(why)) != 0 ||
		    cJSON_GetObjectItem(j, "thread")->valueint != w->id)
			w->wrong++;
		cJSON_Delete(j);
		j = NULL;
		if (rr_json_parse_object("doc", bad, (size_t)blen, &j, why, sizeof(why)) !=
			    RR_ECORRUPT || !strstr(why, want))
			w->wrong++;
	}
	return NULL;
}

static void test_json_parse_from_several_threads_keeps_each_answer_its_own(void)
{
	pthread_t t[S_THREADS];
	struct s_worker w[S_THREADS];
	int started = 0;

	for (int i = 0; i < S_THREADS; i++) {
		w[i] = (struct s_worker){ .id = i + 1 };
		if (pthread_create(&t[i], NULL, s_parse_main, &w[i]) != 0)
			break;
		started++;
	}
	CU_ASSERT_EQUAL(started, S_THREADS);
	for (int i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		CU_ASSERT_EQUAL(w[i].wrong, 0);
	}
}

/* rr_json_print prints what cJSON prints, for every kind of number around the cases it
 * prints itself (integers below 10^15), nested, and leaves the tree as it found it. */
static void test_json_print_is_cjson_print_byte_for_byte(void)
{
	static const double nums[] = { 0, -0.0, 1, -1, 7, 42, 2147483647.0, 2147483648.0,
				       -2147483648.0, -2147483649.0, 1e15 - 1, -(1e15 - 1), 1e15,
				       -1e15, 9007199254740991.0, 9007199254740993.0, 1e300, 0.5,
				       -2.25, 1e-7, 3.14159, 123456789012.5, 1795683337997.0 };
	cJSON *root = cJSON_CreateObject(), *arr, *inner;
	char *want, *got, *again;

	CU_ASSERT_PTR_NOT_NULL_FATAL(root);
	cJSON_AddStringToObject(root, "s", "a \"quoted\" \\ string\n");
	arr = cJSON_AddArrayToObject(root, "n");
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(nums[i]));
		inner = cJSON_CreateObject();
		cJSON_AddNumberToObject(inner, "v", nums[i]);
		cJSON_AddItemToArray(arr, inner);
	}
	cJSON_AddItemToObject(root, "empty", cJSON_CreateArray());
	cJSON_AddNullToObject(root, "null");
	cJSON_AddTrueToObject(root, "t");
	want = cJSON_PrintUnformatted(root);
	got = rr_json_print(root);
	again = cJSON_PrintUnformatted(root); /* the tree is back as it was */
	CU_ASSERT_PTR_NOT_NULL_FATAL(want);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_STRING_EQUAL(got, want);
	CU_ASSERT_STRING_EQUAL(again, want);
	CU_ASSERT_TRUE(cJSON_IsNumber(cJSON_GetArrayItem(arr, 2)));
	CU_ASSERT_PTR_NULL(cJSON_GetArrayItem(arr, 2)->valuestring);
	free(want);
	free(got);
	free(again);
	cJSON_Delete(root);
}

static CU_TestInfo s_tests[] = {
	{ "json_print_is_cjson_print_byte_for_byte", test_json_print_is_cjson_print_byte_for_byte },
	{ "json_parse_reports_where_it_stopped", test_json_parse_reports_where_it_stopped },
	{ "json_parse_object_rejects_what_is_not_one_object",
	  test_json_parse_object_rejects_what_is_not_one_object },
	{ "json_parse_from_several_threads_keeps_each_answer_its_own",
	  test_json_parse_from_several_threads_keeps_each_answer_its_own },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("json", s_tests)
