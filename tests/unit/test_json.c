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

/* ---- the member getters ---- */

struct s_doc {
	cJSON *root;
	struct rr_json_obj o;
	char why[256];
	int rc; /* rr_json_open's */
};

/* Parses text and opens it with names (flags for rr_json_open); where is "doc: ". */
static void s_open(struct s_doc *d, const char *text, const char *const *names, size_t n,
		   unsigned flags)
{
	d->why[0] = '\0';
	d->root = NULL;
	CU_ASSERT_EQUAL_FATAL(rr_json_parse_object("doc", text, strlen(text), &d->root, d->why,
						   sizeof(d->why)),
			      0);
	d->rc = rr_json_open(&d->o, d->root, "doc: ", names, n, flags, d->why, sizeof(d->why));
}

static void s_close(struct s_doc *d)
{
	cJSON_Delete(d->root);
}

/* rc is RR_ECORRUPT and why is exactly want. */
#define S_REFUSED(d, rc, want)                                                          \
	do {                                                                            \
		CU_ASSERT_EQUAL((rc), RR_ECORRUPT);                                     \
		CU_ASSERT_STRING_EQUAL((d)->why, (want));                               \
	} while (0)

static const char *const s_names[] = { "s", "n", "b", "a", "o", "z" };

static void test_json_open_refuses_a_named_member_twice_and_not_others(void)
{
	struct s_doc d;

	s_open(&d, "{\"s\":\"x\",\"n\":1,\"s\":\"y\"}", RR_JSON_NAMES(s_names), 0);
	S_REFUSED(&d, d.rc, "doc: \"s\" appears twice");
	s_close(&d);
	/* The first name seen twice, in the document's order. */
	s_open(&d, "{\"n\":1,\"s\":\"x\",\"s\":\"y\",\"n\":2}", RR_JSON_NAMES(s_names), 0);
	S_REFUSED(&d, d.rc, "doc: \"s\" appears twice");
	s_close(&d);
	/* A member not read may come twice: nothing reads it. */
	s_open(&d, "{\"other\":1,\"other\":2,\"s\":\"x\"}", RR_JSON_NAMES(s_names), 0);
	CU_ASSERT_EQUAL(d.rc, 0);
	s_close(&d);
	/* Names are case-sensitive, as the getters are. */
	s_open(&d, "{\"s\":\"x\",\"S\":\"y\"}", RR_JSON_NAMES(s_names), 0);
	CU_ASSERT_EQUAL(d.rc, 0);
	s_close(&d);
}

static void test_json_open_ignores_or_refuses_unknown_members(void)
{
	struct s_doc d;

	s_open(&d, "{\"s\":\"x\",\"extra\":{\"deep\":[1]}}", RR_JSON_NAMES(s_names), 0);
	CU_ASSERT_EQUAL(d.rc, 0);
	s_close(&d);
	s_open(&d, "{\"s\":\"x\",\"ex\\ntra\":1}", RR_JSON_NAMES(s_names), RR_JSON_CLOSED);
	S_REFUSED(&d, d.rc, "doc: \"ex\\u000atra\" is not a known member");
	s_close(&d);
	s_open(&d, "{\"s\":\"x\",\"n\":1,\"b\":true}", RR_JSON_NAMES(s_names), RR_JSON_CLOSED);
	CU_ASSERT_EQUAL(d.rc, 0);
	s_close(&d);
}

static void test_json_open_refuses_what_is_not_an_object_and_too_many_names(void)
{
	static const char *many[RR_JSON_NAMES_MAX + 1];
	struct rr_json_obj o;
	char why[128] = "";
	cJSON *arr = cJSON_CreateArray();

	CU_ASSERT_PTR_NOT_NULL_FATAL(arr);
	CU_ASSERT_EQUAL(rr_json_open(&o, arr, "doc: ", RR_JSON_NAMES(s_names), 0, why,
				     sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_STRING_EQUAL(why, "doc: is not an object");
	CU_ASSERT_EQUAL(rr_json_open(&o, NULL, "", RR_JSON_NAMES(s_names), 0, why, sizeof(why)),
			RR_ECORRUPT);
	for (size_t i = 0; i < RR_JSON_NAMES_MAX + 1; i++)
		many[i] = "x";
	CU_ASSERT_EQUAL(rr_json_open(&o, arr, "", many, RR_JSON_NAMES_MAX + 1, 0, why,
				     sizeof(why)),
			RR_EINVAL);
	cJSON_Delete(arr);
}

static void test_json_get_string_and_label(void)
{
	struct s_doc d;
	const char *v = "default";

	s_open(&d, "{\"s\":\"x\",\"n\":1,\"z\":null,\"a\":\"\",\"b\":\"a\\u0001b\","
		   "\"o\":\"abcdef\"}",
	       RR_JSON_NAMES(s_names), 0);
	CU_ASSERT_EQUAL(rr_json_get_string(&d.o, "s", 0, &v), 0);
	CU_ASSERT_STRING_EQUAL(v, "x");
	S_REFUSED(&d, rr_json_get_string(&d.o, "n", 0, &v), "doc: \"n\" is not a string");
	CU_ASSERT_STRING_EQUAL(v, "x"); /* unchanged on failure */
	S_REFUSED(&d, rr_json_get_string(&d.o, "missing", 0, &v), "doc: \"missing\" is missing");
	/* Optional: absent leaves the default; null is a wrong type unless nullable. */
	v = "default";
	CU_ASSERT_EQUAL(rr_json_get_string(&d.o, "missing", RR_JSON_OPTIONAL, &v), 0);
	CU_ASSERT_STRING_EQUAL(v, "default");
	S_REFUSED(&d, rr_json_get_string(&d.o, "z", RR_JSON_OPTIONAL, &v),
		  "doc: \"z\" is not a string");
	CU_ASSERT_EQUAL(rr_json_get_string(&d.o, "z", RR_JSON_OPTIONAL | RR_JSON_NULLABLE, &v), 0);
	CU_ASSERT_STRING_EQUAL(v, "default");
	S_REFUSED(&d, rr_json_get_string(&d.o, "z", RR_JSON_NULLABLE, &v), "doc: \"z\" is missing");
	/* A label: 1..max bytes, no control character. */
	CU_ASSERT_EQUAL(rr_json_get_label(&d.o, "o", 0, 6, &v), 0);
	CU_ASSERT_STRING_EQUAL(v, "abcdef");
	S_REFUSED(&d, rr_json_get_label(&d.o, "o", 0, 5, &v),
		  "doc: \"o\" \"abcdef\" must be 1..5 bytes without control characters");
	S_REFUSED(&d, rr_json_get_label(&d.o, "a", 0, 5, &v),
		  "doc: \"a\" \"\" must be 1..5 bytes without control characters");
	S_REFUSED(&d, rr_json_get_label(&d.o, "b", 0, 5, &v),
		  "doc: \"b\" \"a\\u0001b\" must be 1..5 bytes without control characters");
	S_REFUSED(&d, rr_json_get_label(&d.o, "n", 0, 5, &v), "doc: \"n\" is not a string");
	v = "default";
	CU_ASSERT_EQUAL(rr_json_get_label(&d.o, "missing", RR_JSON_OPTIONAL, 5, &v), 0);
	CU_ASSERT_STRING_EQUAL(v, "default");
	s_close(&d);
}

static void test_json_get_uint_bounds_and_messages(void)
{
	struct s_doc d;
	uint64_t v = 99;

	s_open(&d, "{\"n\":4095,\"a\":4096,\"b\":-1,\"o\":1.5,\"s\":\"1\",\"z\":1e400,"
		   "\"x\":-0,\"y\":1e30,\"w\":9007199254740992}",
	       RR_JSON_NAMES(s_names), 0);
	CU_ASSERT_EQUAL(rr_json_get_uint(&d.o, "n", 0, 4095, &v), 0);
	CU_ASSERT_EQUAL(v, 4095);
	S_REFUSED(&d, rr_json_get_uint(&d.o, "a", 0, 4095, &v),
		  "doc: \"a\" is 4096, above the limit 4095");
	CU_ASSERT_EQUAL(v, 4095);
	S_REFUSED(&d, rr_json_get_uint(&d.o, "b", 0, 4095, &v), "doc: \"b\" is negative (-1)");
	S_REFUSED(&d, rr_json_get_uint(&d.o, "o", 0, 4095, &v), "doc: \"o\" is not an integer (1.5)");
	S_REFUSED(&d, rr_json_get_uint(&d.o, "s", 0, 4095, &v), "doc: \"s\" is not a number");
	S_REFUSED(&d, rr_json_get_uint(&d.o, "z", 0, 4095, &v), "doc: \"z\" is not a finite number");
	S_REFUSED(&d, rr_json_get_uint(&d.o, "y", 0, 4095, &v),
		  "doc: \"y\" is 1e+30, above the limit 4095");
	CU_ASSERT_EQUAL(rr_json_get_uint(&d.o, "x", 0, 4095, &v), 0); /* -0 reads as 0 */
	CU_ASSERT_EQUAL(v, 0);
	CU_ASSERT_EQUAL(rr_json_get_uint(&d.o, "w", 0, (uint64_t)1 << 53, &v), 0);
	CU_ASSERT_EQUAL(v, (uint64_t)1 << 53);
	/* Above 2^53 a double no longer holds every integer: a caller's mistake. */
	CU_ASSERT_EQUAL(rr_json_get_uint(&d.o, "w", 0, ((uint64_t)1 << 53) + 1, &v), RR_EINVAL);
	v = 7;
	CU_ASSERT_EQUAL(rr_json_get_uint(&d.o, "missing", RR_JSON_OPTIONAL, 10, &v), 0);
	CU_ASSERT_EQUAL(v, 7);
	S_REFUSED(&d, rr_json_get_uint(&d.o, "missing", 0, 10, &v), "doc: \"missing\" is missing");
	s_close(&d);
}

static void test_json_get_int_bounds_and_messages(void)
{
	struct s_doc d;
	int64_t v = 99;
	cJSON *shape;

	s_open(&d, "{\"n\":-112,\"a\":113,\"b\":-113,\"o\":7.5,\"z\":null,\"s\":[3,-1]}",
	       RR_JSON_NAMES(s_names), 0);
	CU_ASSERT_EQUAL(rr_json_get_int(&d.o, "n", 0, -112, 112, &v), 0);
	CU_ASSERT_EQUAL(v, -112);
	S_REFUSED(&d, rr_json_get_int(&d.o, "a", 0, -112, 112, &v),
		  "doc: \"a\" is 113, outside [-112, 112]");
	S_REFUSED(&d, rr_json_get_int(&d.o, "b", 0, -112, 112, &v),
		  "doc: \"b\" is -113, outside [-112, 112]");
	S_REFUSED(&d, rr_json_get_int(&d.o, "o", 0, -112, 112, &v),
		  "doc: \"o\" is not an integer (7.5)");
	/* A minimum above 0 is a range too. */
	S_REFUSED(&d, rr_json_get_int(&d.o, "n", 0, 1, 10, &v), "doc: \"n\" is -112, outside [1, 10]");
	CU_ASSERT_EQUAL(v, -112);
	S_REFUSED(&d, rr_json_get_int(&d.o, "z", 0, 0, 1, &v), "doc: \"z\" is not a number");
	v = 5;
	CU_ASSERT_EQUAL(rr_json_get_int(&d.o, "z", RR_JSON_OPTIONAL | RR_JSON_NULLABLE, 0, 1, &v),
			0);
	CU_ASSERT_EQUAL(v, 5);
	CU_ASSERT_EQUAL(rr_json_get_int(&d.o, "n", 0, -(((int64_t)1 << 53) + 1), 0, &v), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_json_get_int(&d.o, "n", 0, 5, 4, &v), RR_EINVAL);
	/* An element of an array, named by its label. */
	shape = cJSON_GetObjectItemCaseSensitive(d.root, "s");
	CU_ASSERT_EQUAL(rr_json_read_int(&d.o, cJSON_GetArrayItem(shape, 0), "\"s\"[0]", 0, 10, &v),
			0);
	CU_ASSERT_EQUAL(v, 3);
	S_REFUSED(&d, rr_json_read_int(&d.o, cJSON_GetArrayItem(shape, 1), "\"s\"[1]", 0, 10, &v),
		  "doc: \"s\"[1] is negative (-1)");
	s_close(&d);
}

static void test_json_get_bool_array_object_and_item(void)
{
	struct s_doc d;
	const cJSON *it = (const cJSON *)&d;
	size_t n = 99;
	int b = 7;

	s_open(&d, "{\"b\":false,\"n\":1,\"a\":[1,2,3],\"o\":{\"k\":1},\"z\":null}",
	       RR_JSON_NAMES(s_names), 0);
	CU_ASSERT_EQUAL(rr_json_get_bool(&d.o, "b", 0, &b), 0);
	CU_ASSERT_EQUAL(b, 0);
	S_REFUSED(&d, rr_json_get_bool(&d.o, "n", 0, &b), "doc: \"n\" is not true or false");
	CU_ASSERT_EQUAL(b, 0);
	b = 7;
	CU_ASSERT_EQUAL(rr_json_get_bool(&d.o, "missing", RR_JSON_OPTIONAL, &b), 0);
	CU_ASSERT_EQUAL(b, 7);

	CU_ASSERT_EQUAL(rr_json_get_array(&d.o, "a", 0, &it, &n), 0);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_TRUE(cJSON_IsArray(it));
	S_REFUSED(&d, rr_json_get_array(&d.o, "o", 0, &it, &n), "doc: \"o\" is not an array");
	CU_ASSERT_PTR_NULL(it);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_EQUAL(rr_json_get_array(&d.o, "missing", RR_JSON_OPTIONAL, &it, &n), 0);
	CU_ASSERT_PTR_NULL(it);
	S_REFUSED(&d, rr_json_get_array(&d.o, "missing", 0, &it, &n),
		  "doc: \"missing\" is missing");

	CU_ASSERT_EQUAL(rr_json_get_object(&d.o, "o", 0, &it), 0);
	CU_ASSERT_TRUE(cJSON_IsObject(it));
	S_REFUSED(&d, rr_json_get_object(&d.o, "a", 0, &it), "doc: \"a\" is not an object");
	CU_ASSERT_EQUAL(rr_json_get_object(&d.o, "z", RR_JSON_OPTIONAL | RR_JSON_NULLABLE, &it), 0);
	CU_ASSERT_PTR_NULL(it);

	CU_ASSERT_EQUAL(rr_json_get_item(&d.o, "z", 0, &it), 0); /* null is there */
	CU_ASSERT_TRUE(cJSON_IsNull(it));
	CU_ASSERT_TRUE(rr_json_has(&d.o, "z"));
	CU_ASSERT_FALSE(rr_json_has(&d.o, "missing"));
	s_close(&d);
}

static void test_json_parse_array_takes_one_array_only(void)
{
	char why[200];
	cJSON *j = NULL;

	CU_ASSERT_EQUAL(rr_json_parse_array("list", "[1] \n", 5, &j, why, sizeof(why)), 0);
	CU_ASSERT_TRUE(cJSON_IsArray(j));
	cJSON_Delete(j);
	CU_ASSERT_EQUAL(rr_json_parse_array("list", "{}", 2, &j, why, sizeof(why)), RR_ECORRUPT);
	CU_ASSERT_PTR_NULL(j);
	CU_ASSERT_STRING_EQUAL(why, "list is not a JSON array");
	CU_ASSERT_EQUAL(rr_json_parse_array("list", "[\"a\\u0000\"]", 11, &j, why, sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "NUL"));
}

static CU_TestInfo s_tests[] = {
	{ "json_print_is_cjson_print_byte_for_byte", test_json_print_is_cjson_print_byte_for_byte },
	{ "json_parse_reports_where_it_stopped", test_json_parse_reports_where_it_stopped },
	{ "json_parse_object_rejects_what_is_not_one_object",
	  test_json_parse_object_rejects_what_is_not_one_object },
	{ "json_parse_from_several_threads_keeps_each_answer_its_own",
	  test_json_parse_from_several_threads_keeps_each_answer_its_own },
	{ "json_open_refuses_a_named_member_twice_and_not_others",
	  test_json_open_refuses_a_named_member_twice_and_not_others },
	{ "json_open_ignores_or_refuses_unknown_members",
	  test_json_open_ignores_or_refuses_unknown_members },
	{ "json_open_refuses_what_is_not_an_object_and_too_many_names",
	  test_json_open_refuses_what_is_not_an_object_and_too_many_names },
	{ "json_get_string_and_label", test_json_get_string_and_label },
	{ "json_get_uint_bounds_and_messages", test_json_get_uint_bounds_and_messages },
	{ "json_get_int_bounds_and_messages", test_json_get_int_bounds_and_messages },
	{ "json_get_bool_array_object_and_item", test_json_get_bool_array_object_and_item },
	{ "json_parse_array_takes_one_array_only", test_json_parse_array_takes_one_array_only },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("json", s_tests)
