/* AWS shared files: the INI dialect as the SDKs read it (trimming, lowercased keys,
 * comments, sub-properties, continuations, CRLF), refusals that name the line but never
 * echo it, and the profile loader's files, section names and precedence. Each profile test
 * runs in its own temporary HOME with the AWS_* variables cleared, and puts the
 * environment back afterwards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_main.h"
#include "rr/aws_profile.h"
#include "rr/error.h"
#include "rr/fsutil.h"

/* --- INI helpers --------------------------------------------------------------------- */

#define S_MAX_PAIRS 16

struct s_pairs {
	size_t n;
	char text[S_MAX_PAIRS][256]; /* "section|key|value" */
	int stop_at;                 /* 1-based pair that returns 77; 0: never */
};

static int s_pair(const char *section, const char *key, const char *value, void *ud)
{
	struct s_pairs *p = ud;

	CU_ASSERT_FATAL(p->n < S_MAX_PAIRS);
	snprintf(p->text[p->n], sizeof(p->text[0]), "%s|%s|%s", section, key, value);
	p->n++;
	return (int)p->n == p->stop_at ? 77 : 0;
}

static int s_ini(const char *text, struct s_pairs *p, char *why, size_t cap)
{
	memset(p, 0, sizeof(*p));
	return rr_ini_parse(text, strlen(text), s_pair, p, why, cap);
}

/* --- profile fixture ----------------------------------------------------------------- */

static const char *const s_vars[] = { "HOME", "AWS_PROFILE", "AWS_CONFIG_FILE",
				      "AWS_SHARED_CREDENTIALS_FILE" };
#define S_NVARS (sizeof(s_vars) / sizeof(s_vars[0]))

static char *s_saved[S_NVARS];
static char s_dir[64];

/* A fresh HOME with nothing in it and no AWS_* variables. */
static void s_setup(void)
{
	for (size_t i = 0; i < S_NVARS; i++) {
		const char *v = getenv(s_vars[i]);
		s_saved[i] = v ? strdup(v) : NULL;
		unsetenv(s_vars[i]);
	}
	snprintf(s_dir, sizeof(s_dir), "/tmp/rr_test_aws_profile.XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(s_dir) != NULL);
	setenv("HOME", s_dir, 1);
}

static void s_teardown(void)
{
	for (size_t i = 0; i < S_NVARS; i++) {
		if (s_saved[i])
			setenv(s_vars[i], s_saved[i], 1);
		else
			unsetenv(s_vars[i]);
		free(s_saved[i]);
		s_saved[i] = NULL;
	}
	CU_ASSERT(rr_remove_tree(s_dir) == 0);
}

/* Writes text to HOME-relative rel (e.g. ".aws/config"); returns the full path. */
static char *s_write(const char *rel, const char *text)
{
	char *path = rr_path_join(s_dir, rel), *slash;
	FILE *f;

	CU_ASSERT_FATAL(path != NULL);
	slash = strrchr(path, '/');
	*slash = '\0';
	CU_ASSERT_FATAL(rr_mkdir_p(path) == 0);
	*slash = '/';
	f = fopen(path, "wb");
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT(fwrite(text, 1, strlen(text), f) == strlen(text));
	CU_ASSERT(fclose(f) == 0);
	return path;
}

static void s_write_default(const char *rel, const char *text)
{
	free(s_write(rel, text));
}

static const char *s_get(const struct rr_aws_profile *p, const char *key)
{
	const char *v = rr_aws_profile_get(p, key);
	return v ? v : "(null)";
}

/* --- INI ----------------------------------------------------------------------------- */

static void test_ini_trims_section_key_and_value(void)
{
	struct s_pairs p;

	CU_ASSERT_EQUAL(s_ini("[  default ]\n\tregion   =   us-west-2  \n", &p, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(p.n, 1);
	CU_ASSERT_STRING_EQUAL(p.text[0], "default|region|us-west-2");
}

static void test_ini_lowercases_keys_but_not_values_or_sections(void)
{
	struct s_pairs p;

	CU_ASSERT_EQUAL(s_ini("[Profile Dev]\nAWS_Access_Key_ID = AKIAMixedCase\n", &p, NULL, 0),
			0);
	CU_ASSERT_EQUAL_FATAL(p.n, 1);
	CU_ASSERT_STRING_EQUAL(p.text[0], "Profile Dev|aws_access_key_id|AKIAMixedCase");
}

static void test_ini_skips_comments_and_blank_lines(void)
{
	const char *text = "# top comment\n"
			   "; another\n"
			   "\n"
			   "[default]\n"
			   "   # indented comment\n"
			   "a = 1\n"
			   "\t\n"
			   "; between\n"
			   "b = x # not a comment inside a value\n";
	struct s_pairs p;

	CU_ASSERT_EQUAL(s_ini(text, &p, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(p.n, 2);
	CU_ASSERT_STRING_EQUAL(p.text[0], "default|a|1");
	CU_ASSERT_STRING_EQUAL(p.text[1], "default|b|x # not a comment inside a value");
}

static void test_ini_reports_sub_properties_as_parent_dot_sub(void)
{
	const char *text = "[profile dev]\n"
			   "s3 =\n"
			   "  addressing_style = path\n"
			   "  # a comment among them\n"
			   "  Max_Concurrent_Requests = 20\n"
			   "region = eu-west-1\n";
	struct s_pairs p;

	CU_ASSERT_EQUAL(s_ini(text, &p, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(p.n, 3);
	CU_ASSERT_STRING_EQUAL(p.text[0], "profile dev|s3.addressing_style|path");
	CU_ASSERT_STRING_EQUAL(p.text[1], "profile dev|s3.max_concurrent_requests|20");
	CU_ASSERT_STRING_EQUAL(p.text[2], "profile dev|region|eu-west-1");
}

static void test_ini_empty_value_without_sub_properties_is_empty(void)
{
	struct s_pairs p;

	CU_ASSERT_EQUAL(s_ini("[default]\naws_session_token =\nregion=x", &p, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(p.n, 2);
	CU_ASSERT_STRING_EQUAL(p.text[0], "default|aws_session_token|");
	CU_ASSERT_STRING_EQUAL(p.text[1], "default|region|x");
}

static void test_ini_joins_continuation_lines_with_newline(void)
{
	struct s_pairs p;

	CU_ASSERT_EQUAL(s_ini("[default]\nca = first\n   second  \n\tthird\nb = 2\n", &p, NULL,
			      0),
			0);
	CU_ASSERT_EQUAL_FATAL(p.n, 2);
	CU_ASSERT_STRING_EQUAL(p.text[0], "default|ca|first\nsecond\nthird");
	CU_ASSERT_STRING_EQUAL(p.text[1], "default|b|2");
}

static void test_ini_tolerates_crlf_and_a_byte_order_mark(void)
{
	struct s_pairs p;

	CU_ASSERT_EQUAL(s_ini("\xef\xbb\xbf[default]\r\nregion = us-east-1\r\n\r\ns3 =\r\n"
			      "  addressing_style = virtual\r\n",
			      &p, NULL, 0),
			0);
	CU_ASSERT_EQUAL_FATAL(p.n, 2);
	CU_ASSERT_STRING_EQUAL(p.text[0], "default|region|us-east-1");
	CU_ASSERT_STRING_EQUAL(p.text[1], "default|s3.addressing_style|virtual");
}

static void test_ini_reads_only_len_bytes(void)
{
	const char text[] = "[default]\nregion = us-east-1XXXX";
	struct s_pairs p;

	memset(&p, 0, sizeof(p));
	CU_ASSERT_EQUAL(rr_ini_parse(text, sizeof(text) - 1 - 4, s_pair, &p, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(p.n, 1);
	CU_ASSERT_STRING_EQUAL(p.text[0], "default|region|us-east-1");
}

static void test_ini_refuses_malformed_line_naming_it_without_its_text(void)
{
	char why[128];
	struct s_pairs p;

	CU_ASSERT_EQUAL(s_ini("[default]\n# fine\naws_secret_access_key wJalrXUtnFEMI\n", &p,
			      why, sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 3: "));
	CU_ASSERT_PTR_NULL(strstr(why, "wJalr"));
	CU_ASSERT_EQUAL(p.n, 0);
}

static void test_ini_refuses_property_before_any_section(void)
{
	char why[128];
	struct s_pairs p;

	CU_ASSERT_EQUAL(s_ini("region = us-east-1\n[default]\n", &p, why, sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 1: "));
}

static void test_ini_refuses_bad_section_headers(void)
{
	static const char *const bad[] = { "[default\n", "[]\n", "[  ]\n", "[a] b\n" };
	struct s_pairs p;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(s_ini(bad[i], &p, NULL, 0), RR_ECORRUPT);
	CU_ASSERT_EQUAL(s_ini("[a] # comment\nk=v\n[b];c\nk=w\n", &p, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(p.n, 2);
	CU_ASSERT_STRING_EQUAL(p.text[0], "a|k|v");
	CU_ASSERT_STRING_EQUAL(p.text[1], "b|k|w");
}

static void test_ini_refuses_sub_property_without_equals(void)
{
	char why[128];
	struct s_pairs p;

	CU_ASSERT_EQUAL(s_ini("[default]\ns3 =\n  addressing_style\n", &p, why, sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 3: "));
}

static void test_ini_refuses_line_over_4096_bytes(void)
{
	char *text = malloc(4200);
	char why[128];
	struct s_pairs p;

	CU_ASSERT_FATAL(text != NULL);
	/* "k = " plus 4092 bytes is 4096: accepted, also with a CR after it */
	snprintf(text, 4200, "[default]\nk = %0*d\r\n", 4092, 0);
	CU_ASSERT_EQUAL(s_ini(text, &p, why, sizeof(why)), 0);
	snprintf(text, 4200, "[default]\nk = %0*d\n", 4093, 0);
	CU_ASSERT_EQUAL(s_ini(text, &p, why, sizeof(why)), RR_ETOOBIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 2: "));
	free(text);
}

static void test_ini_refuses_nul_byte(void)
{
	const char text[] = "[default]\nregion = us\0east-1\n";
	char why[128];
	struct s_pairs p;

	memset(&p, 0, sizeof(p));
	CU_ASSERT_EQUAL(rr_ini_parse(text, sizeof(text) - 1, s_pair, &p, why, sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 2: "));
}

static void test_ini_refuses_text_over_the_ceiling(void)
{
	size_t n = (size_t)RR_AWS_PROFILE_MAX_FILE + 1;
	char *text = malloc(n);
	struct s_pairs p;

	CU_ASSERT_FATAL(text != NULL);
	memset(text, '\n', n);
	memset(&p, 0, sizeof(p));
	CU_ASSERT_EQUAL(rr_ini_parse(text, n, s_pair, &p, NULL, 0), RR_ETOOBIG);
	CU_ASSERT_EQUAL(rr_ini_parse(text, n - 1, s_pair, &p, NULL, 0), 0);
	free(text);
}

static void test_ini_returns_the_callbacks_stop_value(void)
{
	struct s_pairs p;

	memset(&p, 0, sizeof(p));
	p.stop_at = 2;
	CU_ASSERT_EQUAL(rr_ini_parse("[a]\nx=1\ny=2\nz=3\n", 16, s_pair, &p, NULL, 0), 77);
	CU_ASSERT_EQUAL(p.n, 2);
}

/* --- profiles ------------------------------------------------------------------------ */

static void test_profile_credentials_file_wins_over_config(void)
{
	struct rr_aws_profile *p;

	s_setup();
	s_write_default(".aws/credentials", "[default]\naws_access_key_id = FROM_CREDENTIALS\n");
	s_write_default(".aws/config", "[default]\naws_access_key_id = FROM_CONFIG\n"
				       "region = us-east-2\n");
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load(NULL, &p, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(rr_aws_profile_name(p), "default");
	CU_ASSERT_STRING_EQUAL(s_get(p, "aws_access_key_id"), "FROM_CREDENTIALS");
	CU_ASSERT_STRING_EQUAL(s_get(p, "region"), "us-east-2");
	rr_aws_profile_free(p);
	s_teardown();
}

static void test_profile_sections_are_named_per_file(void)
{
	struct rr_aws_profile *p;

	s_setup();
	/* [profile dev] in credentials and [dev] in config are other profiles' sections */
	s_write_default(".aws/credentials", "[profile dev]\nwrong1 = x\n[dev]\nkey_id = K\n");
	s_write_default(".aws/config", "[dev]\nwrong2 = y\n[profile dev]\nregion = ap-south-1\n");
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load("dev", &p, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(rr_aws_profile_name(p), "dev");
	CU_ASSERT_STRING_EQUAL(s_get(p, "key_id"), "K");
	CU_ASSERT_STRING_EQUAL(s_get(p, "region"), "ap-south-1");
	CU_ASSERT_PTR_NULL(rr_aws_profile_get(p, "wrong1"));
	CU_ASSERT_PTR_NULL(rr_aws_profile_get(p, "wrong2"));
	rr_aws_profile_free(p);
	s_teardown();
}

static void test_profile_default_accepts_profile_default_in_config(void)
{
	struct rr_aws_profile *p;

	s_setup();
	s_write_default(".aws/config", "[profile default]\nregion = eu-north-1\n"
				       "output = json\n"
				       "[default]\nregion = us-east-1\ncli_pager = less\n");
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load(NULL, &p, NULL, 0), 0);
	/* both are read; [profile default] wins where they disagree */
	CU_ASSERT_STRING_EQUAL(s_get(p, "region"), "eu-north-1");
	CU_ASSERT_STRING_EQUAL(s_get(p, "output"), "json");
	CU_ASSERT_STRING_EQUAL(s_get(p, "cli_pager"), "less");
	rr_aws_profile_free(p);
	s_teardown();
}

static void test_profile_aws_profile_selects_the_profile(void)
{
	struct rr_aws_profile *p;

	s_setup();
	s_write_default(".aws/credentials", "[default]\nk = d\n[team]\nk = t\n");
	setenv("AWS_PROFILE", "team", 1);
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load(NULL, &p, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(rr_aws_profile_name(p), "team");
	CU_ASSERT_STRING_EQUAL(s_get(p, "k"), "t");
	rr_aws_profile_free(p);
	/* an explicit name wins over AWS_PROFILE */
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load("default", &p, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(s_get(p, "k"), "d");
	rr_aws_profile_free(p);
	s_teardown();
}

static void test_profile_named_but_missing_is_enoent(void)
{
	struct rr_aws_profile *p = (struct rr_aws_profile *)1;
	char why[256];

	s_setup();
	s_write_default(".aws/credentials", "[default]\nk = d\n");
	CU_ASSERT_EQUAL(rr_aws_profile_load("prod", &p, why, sizeof(why)), RR_ENOENT);
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"prod\""));
	setenv("AWS_PROFILE", "staging", 1);
	CU_ASSERT_EQUAL(rr_aws_profile_load(NULL, &p, why, sizeof(why)), RR_ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"staging\""));
	s_teardown();
}

static void test_profile_default_named_explicitly_must_exist(void)
{
	struct rr_aws_profile *p;

	s_setup();
	setenv("AWS_PROFILE", "default", 1);
	CU_ASSERT_EQUAL(rr_aws_profile_load(NULL, &p, NULL, 0), RR_ENOENT);
	s_teardown();
}

static void test_profile_no_files_at_all_is_an_empty_default(void)
{
	struct rr_aws_profile *p;

	s_setup();
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load(NULL, &p, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(rr_aws_profile_name(p), "default");
	CU_ASSERT_PTR_NULL(rr_aws_profile_get(p, "aws_access_key_id"));
	rr_aws_profile_free(p);
	unsetenv("HOME"); /* nowhere to look at all */
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load(NULL, &p, NULL, 0), 0);
	rr_aws_profile_free(p);
	s_teardown();
}

static void test_profile_default_missing_from_existing_files_is_empty(void)
{
	struct rr_aws_profile *p;

	s_setup();
	s_write_default(".aws/credentials", "[other]\nk = o\n");
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load(NULL, &p, NULL, 0), 0);
	CU_ASSERT_PTR_NULL(rr_aws_profile_get(p, "k"));
	rr_aws_profile_free(p);
	s_teardown();
}

static void test_profile_files_named_by_environment(void)
{
	struct rr_aws_profile *p;
	char *creds, *conf;

	s_setup();
	/* files in ~/.aws must be ignored once the variables name others */
	s_write_default(".aws/credentials", "[default]\nk = home\n");
	creds = s_write("elsewhere/creds", "[default]\nk = env\n");
	conf = s_write("elsewhere/conf", "[default]\nregion = env-region\n");
	setenv("AWS_SHARED_CREDENTIALS_FILE", creds, 1);
	setenv("AWS_CONFIG_FILE", conf, 1);
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load(NULL, &p, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(s_get(p, "k"), "env");
	CU_ASSERT_STRING_EQUAL(s_get(p, "region"), "env-region");
	rr_aws_profile_free(p);
	/* "~/" is the home directory */
	setenv("AWS_SHARED_CREDENTIALS_FILE", "~/elsewhere/creds", 1);
	unsetenv("AWS_CONFIG_FILE");
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load(NULL, &p, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(s_get(p, "k"), "env");
	rr_aws_profile_free(p);
	free(creds);
	free(conf);
	s_teardown();
}

static void test_profile_keys_are_found_without_regard_to_case(void)
{
	struct rr_aws_profile *p;

	s_setup();
	s_write_default(".aws/credentials", "[default]\nAWS_Secret_Access_Key = Sec/Ret+Key\n");
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load(NULL, &p, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(s_get(p, "aws_secret_access_key"), "Sec/Ret+Key");
	CU_ASSERT_STRING_EQUAL(s_get(p, "AWS_SECRET_ACCESS_KEY"), "Sec/Ret+Key");
	rr_aws_profile_free(p);
	s_teardown();
}

static void test_profile_keeps_sub_properties(void)
{
	struct rr_aws_profile *p;

	s_setup();
	s_write_default(".aws/config", "[profile dev]\ns3 =\n  addressing_style = path\n"
				       "  endpoint_url = http://127.0.0.1:4568\n");
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load("dev", &p, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(s_get(p, "s3.addressing_style"), "path");
	CU_ASSERT_STRING_EQUAL(s_get(p, "s3.endpoint_url"), "http://127.0.0.1:4568");
	rr_aws_profile_free(p);
	s_teardown();
}

static void test_profile_later_value_in_same_section_wins(void)
{
	struct rr_aws_profile *p;

	s_setup();
	s_write_default(".aws/credentials", "[default]\nk = 1\n[other]\nk = x\n[default]\nK = 2\n");
	CU_ASSERT_EQUAL_FATAL(rr_aws_profile_load(NULL, &p, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(s_get(p, "k"), "2");
	rr_aws_profile_free(p);
	s_teardown();
}

static void test_profile_malformed_file_names_path_and_line(void)
{
	struct rr_aws_profile *p = (struct rr_aws_profile *)1;
	char why[512], *path;

	s_setup();
	path = s_write(".aws/config", "[default]\nregion = x\n\nthis is not ini\n");
	CU_ASSERT_EQUAL(rr_aws_profile_load(NULL, &p, why, sizeof(why)), RR_ECORRUPT);
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, path));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 4: "));
	free(path);
	s_teardown();
}

static void test_profile_refuses_file_over_the_ceiling(void)
{
	struct rr_aws_profile *p;
	char why[512], *big;

	s_setup();
	big = malloc((size_t)RR_AWS_PROFILE_MAX_FILE + 2);
	CU_ASSERT_FATAL(big != NULL);
	memset(big, '\n', (size_t)RR_AWS_PROFILE_MAX_FILE + 1);
	big[RR_AWS_PROFILE_MAX_FILE + 1] = '\0';
	s_write_default(".aws/credentials", big);
	CU_ASSERT_EQUAL(rr_aws_profile_load(NULL, &p, why, sizeof(why)), RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "larger than"));
	free(big);
	s_teardown();
}

static void test_profile_unreadable_path_is_eio(void)
{
	struct rr_aws_profile *p;
	char why[512];

	s_setup();
	CU_ASSERT_FATAL(rr_mkdir_p(s_dir) == 0);
	setenv("AWS_CONFIG_FILE", s_dir, 1); /* a directory */
	CU_ASSERT_EQUAL(rr_aws_profile_load(NULL, &p, why, sizeof(why)), RR_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, s_dir));
	s_teardown();
}

static void test_profile_free_and_lookups_accept_null(void)
{
	rr_aws_profile_free(NULL);
	CU_ASSERT_PTR_NULL(rr_aws_profile_get(NULL, "k"));
}

static CU_TestInfo s_tests[] = {
	{ "test_ini_trims_section_key_and_value", test_ini_trims_section_key_and_value },
	{ "test_ini_lowercases_keys_but_not_values_or_sections",
	  test_ini_lowercases_keys_but_not_values_or_sections },
	{ "test_ini_skips_comments_and_blank_lines", test_ini_skips_comments_and_blank_lines },
	{ "test_ini_reports_sub_properties_as_parent_dot_sub",
	  test_ini_reports_sub_properties_as_parent_dot_sub },
	{ "test_ini_empty_value_without_sub_properties_is_empty",
	  test_ini_empty_value_without_sub_properties_is_empty },
	{ "test_ini_joins_continuation_lines_with_newline",
	  test_ini_joins_continuation_lines_with_newline },
	{ "test_ini_tolerates_crlf_and_a_byte_order_mark",
	  test_ini_tolerates_crlf_and_a_byte_order_mark },
	{ "test_ini_reads_only_len_bytes", test_ini_reads_only_len_bytes },
	{ "test_ini_refuses_malformed_line_naming_it_without_its_text",
	  test_ini_refuses_malformed_line_naming_it_without_its_text },
	{ "test_ini_refuses_property_before_any_section",
	  test_ini_refuses_property_before_any_section },
	{ "test_ini_refuses_bad_section_headers", test_ini_refuses_bad_section_headers },
	{ "test_ini_refuses_sub_property_without_equals",
	  test_ini_refuses_sub_property_without_equals },
	{ "test_ini_refuses_line_over_4096_bytes", test_ini_refuses_line_over_4096_bytes },
	{ "test_ini_refuses_nul_byte", test_ini_refuses_nul_byte },
	{ "test_ini_refuses_text_over_the_ceiling", test_ini_refuses_text_over_the_ceiling },
	{ "test_ini_returns_the_callbacks_stop_value", test_ini_returns_the_callbacks_stop_value },
	{ "test_profile_credentials_file_wins_over_config",
	  test_profile_credentials_file_wins_over_config },
	{ "test_profile_sections_are_named_per_file", test_profile_sections_are_named_per_file },
	{ "test_profile_default_accepts_profile_default_in_config",
	  test_profile_default_accepts_profile_default_in_config },
	{ "test_profile_aws_profile_selects_the_profile",
	  test_profile_aws_profile_selects_the_profile },
	{ "test_profile_named_but_missing_is_enoent", test_profile_named_but_missing_is_enoent },
	{ "test_profile_default_named_explicitly_must_exist",
	  test_profile_default_named_explicitly_must_exist },
	{ "test_profile_no_files_at_all_is_an_empty_default",
	  test_profile_no_files_at_all_is_an_empty_default },
	{ "test_profile_default_missing_from_existing_files_is_empty",
	  test_profile_default_missing_from_existing_files_is_empty },
	{ "test_profile_files_named_by_environment", test_profile_files_named_by_environment },
	{ "test_profile_keys_are_found_without_regard_to_case",
	  test_profile_keys_are_found_without_regard_to_case },
	{ "test_profile_keeps_sub_properties", test_profile_keeps_sub_properties },
	{ "test_profile_later_value_in_same_section_wins",
	  test_profile_later_value_in_same_section_wins },
	{ "test_profile_malformed_file_names_path_and_line",
	  test_profile_malformed_file_names_path_and_line },
	{ "test_profile_refuses_file_over_the_ceiling", test_profile_refuses_file_over_the_ceiling },
	{ "test_profile_unreadable_path_is_eio", test_profile_unreadable_path_is_eio },
	{ "test_profile_free_and_lookups_accept_null", test_profile_free_and_lookups_accept_null },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("aws_profile", s_tests)
