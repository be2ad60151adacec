/* safetensors headers: files from the project's writer (and through it, from torch) are
 * read, in file order; every rule of the safetensors format (huggingface/safetensors
 * README, "Format") broken on its own is refused with a one-line reason that names what was
 * wrong. A refused file is stored byte-exact, so the reader errs on refusing. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "rr/error.h"
#include "rr/safetensors.h"

#define S_WHY 512

/* --- headers written by scripts/resume_run.py (save_safetensors_raw, save_safetensors,
 * save_state_dict), copied byte for byte with their data lengths ---------------------- */

/* valid_all_dtypes.safetensors: 1360-byte header, 106 data bytes */
static const char s_py_all_dtypes[] =
	"{\"d.i64\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]},\"g.f64\":{\"dt"
	"ype\":\"F64\",\"shape\":[1],\"data_offsets\":[16,24]},\"h.c64\":{\"dtype\":\"C64\","
	"\"shape\":[1],\"data_offsets\":[24,32]},\"m.u64\":{\"dtype\":\"U64\",\"shape\":[1],"
	"\"data_offsets\":[32,40]},\"a.f32\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offset"
	"s\":[40,56]},\"k.i32\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[56,60]},\""
	"l.u32\":{\"dtype\":\"U32\",\"shape\":[1],\"data_offsets\":[60,64]},\"b.f16\":{\"dtyp"
	"e\":\"F16\",\"shape\":[3],\"data_offsets\":[64,70]},\"c.bf16\":{\"dtype\":\"BF16\","
	"\"shape\":[1,2],\"data_offsets\":[70,74]},\"i.i16\":{\"dtype\":\"I16\",\"shape\":[2]"
	",\"data_offsets\":[74,78]},\"j.u16\":{\"dtype\":\"U16\",\"shape\":[1],\"data_offsets"
	"\":[78,80]},\"e.u8\":{\"dtype\":\"U8\",\"shape\":[5],\"data_offsets\":[80,85]},\"f.b"
	"ool\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[85,88]},\"n.i8\":{\"dtype"
	"\":\"I8\",\"shape\":[2],\"data_offsets\":[88,90]},\"o.e5m2\":{\"dtype\":\"F8_E5M2\","
	"\"shape\":[2],\"data_offsets\":[90,92]},\"p.e4m3\":{\"dtype\":\"F8_E4M3\",\"shape\":"
	"[2],\"data_offsets\":[92,94]},\"q.e8m0\":{\"dtype\":\"F8_E8M0\",\"shape\":[1],\"data"
	"_offsets\":[94,95]},\"r.e4m3fnuz\":{\"dtype\":\"F8_E4M3FNUZ\",\"shape\":[1],\"data_o"
	"ffsets\":[95,96]},\"s.e5m2fnuz\":{\"dtype\":\"F8_E5M2FNUZ\",\"shape\":[1],\"data_off"
	"sets\":[96,97]},\"u.f6a\":{\"dtype\":\"F6_E2M3\",\"shape\":[4],\"data_offsets\":[97,"
	"100]},\"v.f6b\":{\"dtype\":\"F6_E3M2\",\"shape\":[4],\"data_offsets\":[100,103]},\"t"
	".f4\":{\"dtype\":\"F4\",\"shape\":[2,3],\"data_offsets\":[103,106]}}    ";
#define S_PY_ALL_DTYPES_DATA 106u

/* valid_scalar.safetensors: 112-byte header, 12 data bytes */
static const char s_py_scalar[] =
	"{\"scalar\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]},\"v\":{\"dtype\""
	":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}";
#define S_PY_SCALAR_DATA 12u

/* valid_empty_tensors.safetensors: 176-byte header, 3 data bytes */
static const char s_py_empty[] =
	"{\"empty2\":{\"dtype\":\"I64\",\"shape\":[4,0],\"data_offsets\":[0,0]},\"empty\":{\""
	"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},\"x\":{\"dtype\":\"U8\",\"shap"
	"e\":[3],\"data_offsets\":[0,3]}}      ";
#define S_PY_EMPTY_DATA 3u

/* valid_metadata.safetensors: 128-byte header, 2 data bytes */
static const char s_py_metadata[] =
	"{\"__metadata__\":{\"format\":\"pt\",\"step\":\"1200\",\"note\":\"h\303\251llo \\\"q"
	"uoted\\\"\\n\"},\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}} ";
#define S_PY_METADATA_DATA 2u

/* valid_torch_tensors.safetensors: 168-byte header, 14 data bytes */
static const char s_py_torch_tensors[] =
	"{\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},\"h\":{\"dtype\":\"F1"
	"6\",\"shape\":[2,2],\"data_offsets\":[4,12]},\"b\":{\"dtype\":\"BOOL\",\"shape\":[2]"
	",\"data_offsets\":[12,14]}}   ";
#define S_PY_TORCH_TENSORS_DATA 14u

/* valid_torch_model.safetensors: 736-byte header, 48 data bytes */
static const char s_py_torch_model[] =
	"{\"__metadata__\":{\"format\":\"pt\",\"resume_run.structure\":\"{\\\"version\\\":1,"
	"\\\"tree\\\":{\\\"dict\\\":[[\\\"0.weight\\\",{\\\"tensor\\\":\\\"0.weight\\\"}],[\\"
	"\"0.bias\\\",{\\\"tensor\\\":\\\"0.bias\\\"}],[\\\"1.weight\\\",{\\\"tensor\\\":\\\""
	"1.weight\\\"}],[\\\"1.bias\\\",{\\\"tensor\\\":\\\"1.bias\\\"}]],\\\"ordered\\\":tru"
	"e,\\\"attrs\\\":{\\\"_metadata\\\":{\\\"dict\\\":[[\\\"\\\",{\\\"dict\\\":[[\\\"vers"
	"ion\\\",1]],\\\"ordered\\\":false}],[\\\"0\\\",{\\\"dict\\\":[[\\\"version\\\",1]],"
	"\\\"ordered\\\":false}],[\\\"1\\\",{\\\"dict\\\":[[\\\"version\\\",1]],\\\"ordered\\"
	"\":false}]],\\\"ordered\\\":true}}}}\"},\"0.bias\":{\"dtype\":\"F32\",\"shape\":[2],"
	"\"data_offsets\":[0,8]},\"0.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offse"
	"ts\":[8,32]},\"1.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[32,40]},"
	"\"1.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[40,48]}}     ";
#define S_PY_TORCH_MODEL_DATA 48u


/* --- helpers ------------------------------------------------------------------------- */

/* Test JSON is written with ' for " to stay readable. */
static char *s_json(const char *tmpl)
{
	char *s = strdup(tmpl);
	CU_ASSERT_FATAL(s != NULL);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	return s;
}

static void s_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Parses an 8-byte prefix + text (len bytes) as a file with data_len bytes of data. */
static int s_parse_bytes(const char *text, size_t len, uint64_t data_len, struct rr_st_header *h,
			 char *why)
{
	uint8_t *buf = malloc(len + 8);
	int rc;

	CU_ASSERT_FATAL(buf != NULL);
	s_put_le64(buf, len);
	memcpy(buf + 8, text, len);
	rc = rr_st_parse(buf, len + 8, 8 + (uint64_t)len + data_len, h, why, S_WHY);
	free(buf); /* the header must not point into the buffer */
	return rc;
}

static int s_one_line(const char *why)
{
	for (const char *p = why; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

/* Asserts that the file is refused with RR_ECORRUPT and a reason containing `want`. */
static void s_refused_bytes(const char *text, size_t len, uint64_t data_len, const char *want)
{
	struct rr_st_header h;
	char why[S_WHY];
	int rc = s_parse_bytes(text, len, data_len, &h, why);

	CU_ASSERT_EQUAL(rc, RR_ECORRUPT);
	CU_ASSERT(s_one_line(why));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, want));
	if (!strstr(why, want))
		fprintf(stderr, "\n  reason \"%s\" lacks \"%s\"\n", why, want);
	CU_ASSERT_EQUAL(h.ntensors, 0);
	CU_ASSERT_PTR_NULL(h.tensors);
	rr_st_header_free(&h);
}

static void s_refused(const char *tmpl, uint64_t data_len, const char *want)
{
	char *text = s_json(tmpl);
	s_refused_bytes(text, strlen(text), data_len, want);
	free(text);
}

static void s_accepted_bytes(const char *text, size_t len, uint64_t data_len,
			     struct rr_st_header *h)
{
	char why[S_WHY];
	int rc = s_parse_bytes(text, len, data_len, h, why);

	CU_ASSERT_EQUAL(rc, 0);
	if (rc)
		fprintf(stderr, "\n  refused: %s\n", why);
	CU_ASSERT_EQUAL(why[0], '\0');
	CU_ASSERT_EQUAL(h->header_len, len);
}

static void s_accepted(const char *tmpl, uint64_t data_len, struct rr_st_header *h)
{
	char *text = s_json(tmpl);
	s_accepted_bytes(text, strlen(text), data_len, h);
	free(text);
}

static const struct rr_st_tensor *s_find(const struct rr_st_header *h, const char *name)
{
	for (size_t i = 0; i < h->ntensors; i++)
		if (strcmp(h->tensors[i].name, name) == 0)
			return &h->tensors[i];
	return NULL;
}

/* Sorted, contiguous from 0, ending at data_len. */
static void s_assert_tiles(const struct rr_st_header *h, uint64_t data_len)
{
	uint64_t next = 0;
	for (size_t i = 0; i < h->ntensors; i++) {
		CU_ASSERT_EQUAL(h->tensors[i].begin, next);
		CU_ASSERT(h->tensors[i].end >= h->tensors[i].begin);
		next = h->tensors[i].end;
	}
	CU_ASSERT_EQUAL(next, data_len);
}

#define S_LIT(s) s, sizeof(s) - 1

/* --- files from the project's writer --------------------------------------------------- */

static void test_st_accepts_python_file_with_every_dtype(void)
{
	struct rr_st_header h;
	const struct rr_st_tensor *t;

	s_accepted_bytes(S_LIT(s_py_all_dtypes), S_PY_ALL_DTYPES_DATA, &h);
	CU_ASSERT_EQUAL_FATAL(h.ntensors, 22);
	s_assert_tiles(&h, S_PY_ALL_DTYPES_DATA);
	/* the writer lays out by descending element size: I64 first, F4 last */
	CU_ASSERT_STRING_EQUAL(h.tensors[0].name, "d.i64");
	CU_ASSERT_EQUAL(h.tensors[0].dtype, RR_ST_I64);
	CU_ASSERT_STRING_EQUAL(h.tensors[21].name, "t.f4");
	CU_ASSERT_EQUAL(h.tensors[21].dtype, RR_ST_F4);
	t = s_find(&h, "a.f32");
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(t->dtype, RR_ST_F32);
	CU_ASSERT_EQUAL(t->ndim, 2);
	CU_ASSERT_EQUAL(t->shape[0], 2);
	CU_ASSERT_EQUAL(t->shape[1], 2);
	CU_ASSERT_EQUAL(t->end - t->begin, 16);
	t = s_find(&h, "r.e4m3fnuz");
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(t->dtype, RR_ST_F8_E4M3FNUZ);
	t = s_find(&h, "u.f6a");
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(t->dtype, RR_ST_F6_E2M3);
	CU_ASSERT_EQUAL(t->end - t->begin, 3);
	rr_st_header_free(&h);
	CU_ASSERT_EQUAL(h.ntensors, 0);
	CU_ASSERT_PTR_NULL(h.tensors);
}

static void test_st_accepts_python_zero_rank_tensor(void)
{
	struct rr_st_header h;
	const struct rr_st_tensor *t;

	s_accepted_bytes(S_LIT(s_py_scalar), S_PY_SCALAR_DATA, &h);
	CU_ASSERT_EQUAL_FATAL(h.ntensors, 2);
	t = s_find(&h, "scalar");
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(t->ndim, 0);
	CU_ASSERT_EQUAL(t->dtype, RR_ST_F64);
	CU_ASSERT_EQUAL(t->end - t->begin, 8); /* shape [] is one element */
	rr_st_header_free(&h);
}

static void test_st_accepts_python_empty_tensors(void)
{
	struct rr_st_header h;

	s_accepted_bytes(S_LIT(s_py_empty), S_PY_EMPTY_DATA, &h);
	CU_ASSERT_EQUAL_FATAL(h.ntensors, 3);
	s_assert_tiles(&h, 3);
	/* both empty tensors sit at 0, before "x"; ties are broken by name */
	CU_ASSERT_STRING_EQUAL(h.tensors[0].name, "empty");
	CU_ASSERT_STRING_EQUAL(h.tensors[1].name, "empty2");
	CU_ASSERT_EQUAL(h.tensors[1].shape[1], 0);
	CU_ASSERT_STRING_EQUAL(h.tensors[2].name, "x");
	rr_st_header_free(&h);
}

static void test_st_accepts_python_metadata_without_listing_it(void)
{
	struct rr_st_header h;

	s_accepted_bytes(S_LIT(s_py_metadata), S_PY_METADATA_DATA, &h);
	CU_ASSERT_EQUAL_FATAL(h.ntensors, 1);
	CU_ASSERT_STRING_EQUAL(h.tensors[0].name, "w");
	CU_ASSERT_PTR_NULL(s_find(&h, "__metadata__"));
	rr_st_header_free(&h);
}

static void test_st_accepts_torch_written_files(void)
{
	struct rr_st_header h;
	const struct rr_st_tensor *t;

	s_accepted_bytes(S_LIT(s_py_torch_tensors), S_PY_TORCH_TENSORS_DATA, &h);
	CU_ASSERT_EQUAL_FATAL(h.ntensors, 3);
	t = s_find(&h, "b");
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(t->dtype, RR_ST_BOOL);
	rr_st_header_free(&h);

	s_accepted_bytes(S_LIT(s_py_torch_model), S_PY_TORCH_MODEL_DATA, &h);
	CU_ASSERT_EQUAL_FATAL(h.ntensors, 4);
	s_assert_tiles(&h, S_PY_TORCH_MODEL_DATA);
	t = s_find(&h, "0.weight");
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(t->ndim, 2);
	CU_ASSERT_EQUAL(t->shape[0], 2);
	CU_ASSERT_EQUAL(t->shape[1], 3);
	rr_st_header_free(&h);
}

static void test_st_accepts_many_tensors(void)
{
	enum { N = 5000 };
	struct rr_st_header h;
	size_t cap = (size_t)N * 96 + 16, o = 0;
	char *text = malloc(cap);

	CU_ASSERT_FATAL(text != NULL);
	/* written in reverse offset order, so the reader has to sort */
	o += (size_t)snprintf(text + o, cap - o, "{");
	for (int i = N - 1; i >= 0; i--)
		o += (size_t)snprintf(text + o, cap - o,
				      "%s\"layer.%04d\":{\"dtype\":\"F16\",\"shape\":[%d,2],"
				      "\"data_offsets\":[%d,%d]}",
				      i == N - 1 ? "" : ",", i, 1, 4 * i, 4 * i + 4);
	o += (size_t)snprintf(text + o, cap - o, "}");
	while (o % 8)
		text[o++] = ' ';
	s_accepted_bytes(text, o, 4 * N, &h);
	CU_ASSERT_EQUAL_FATAL(h.ntensors, N);
	s_assert_tiles(&h, 4 * N);
	CU_ASSERT_STRING_EQUAL(h.tensors[0].name, "layer.0000");
	CU_ASSERT_STRING_EQUAL(h.tensors[N - 1].name, "layer.4999");
	rr_st_header_free(&h);
	free(text);
}

static void test_st_accepts_header_padded_with_spaces(void)
{
	struct rr_st_header h;
	static const char *forms[] = {
		"{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]}}",
		"{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]}}       ",
		("{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]}}                            "
		 "                                                                               "),
		"{ 'a' :\n\t{ 'dtype' : 'U8',\r\n 'shape' : [ 1 ] , 'data_offsets' : [ 0 , 1 ] } }  ",
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		s_accepted(forms[i], 1, &h);
		CU_ASSERT_EQUAL(h.ntensors, 1);
		rr_st_header_free(&h);
	}
}

static void test_st_accepts_no_tensors(void)
{
	struct rr_st_header h;

	s_accepted("{}", 0, &h);
	CU_ASSERT_EQUAL(h.ntensors, 0);
	CU_ASSERT_PTR_NULL(h.tensors);
	rr_st_header_free(&h);
	s_accepted("{'__metadata__':{}}      ", 0, &h);
	CU_ASSERT_EQUAL(h.ntensors, 0);
	rr_st_header_free(&h);
	s_accepted("{'__metadata__':{'a':'b','c':''},'e':{'dtype':'F32','shape':[0],"
		   "'data_offsets':[0,0]}}",
		   0, &h);
	CU_ASSERT_EQUAL(h.ntensors, 1);
	rr_st_header_free(&h);
}

/* --- order ---------------------------------------------------------------------------- */

static void test_st_sorts_tensors_given_out_of_order(void)
{
	struct rr_st_header h;

	s_accepted("{'c':{'dtype':'U8','shape':[2],'data_offsets':[6,8]},"
		   "'b':{'dtype':'U8','shape':[2],'data_offsets':[4,6]},"
		   "'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]}}",
		   8, &h);
	CU_ASSERT_EQUAL_FATAL(h.ntensors, 3);
	CU_ASSERT_STRING_EQUAL(h.tensors[0].name, "a");
	CU_ASSERT_STRING_EQUAL(h.tensors[1].name, "b");
	CU_ASSERT_STRING_EQUAL(h.tensors[2].name, "c");
	s_assert_tiles(&h, 8);
	rr_st_header_free(&h);
}

static void test_st_accepts_empty_tensors_sharing_an_offset(void)
{
	struct rr_st_header h;

	/* the reference sorts by (begin, end): [4,4] [4,4] [4,5] each start where the last
	 * one ended */
	s_accepted("{'z':{'dtype':'U8','shape':[1],'data_offsets':[4,5]},"
		   "'e2':{'dtype':'U8','shape':[3,0],'data_offsets':[4,4]},"
		   "'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]},"
		   "'e1':{'dtype':'F32','shape':[0],'data_offsets':[4,4]}}",
		   5, &h);
	CU_ASSERT_EQUAL_FATAL(h.ntensors, 4);
	CU_ASSERT_STRING_EQUAL(h.tensors[0].name, "a");
	CU_ASSERT_STRING_EQUAL(h.tensors[1].name, "e1");
	CU_ASSERT_STRING_EQUAL(h.tensors[2].name, "e2");
	CU_ASSERT_STRING_EQUAL(h.tensors[3].name, "z");
	rr_st_header_free(&h);
}

/* --- the prefix ----------------------------------------------------------------------- */

static void test_st_refuses_file_smaller_than_8_bytes(void)
{
	uint8_t buf[8] = { 0 };
	struct rr_st_header h;
	char why[S_WHY];
	uint64_t n = 99;

	for (size_t len = 0; len < 8; len++) {
		CU_ASSERT_EQUAL(rr_st_parse(buf, len, len, &h, why, sizeof(why)), RR_ECORRUPT);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, "too small"));
		CU_ASSERT_EQUAL(rr_st_header_size(buf, len, &n), RR_ECORRUPT);
	}
	CU_ASSERT_EQUAL(rr_st_parse(NULL, 0, 0, &h, why, sizeof(why)), RR_ECORRUPT);
	CU_ASSERT_EQUAL(n, 99);
}

static void test_st_header_size_reads_little_endian_length(void)
{
	uint8_t p[8];
	uint64_t n = 0;

	s_put_le64(p, 0x0102030405ull);
	CU_ASSERT_EQUAL(rr_st_header_size(p, 8 + 0x0102030405ull, &n), RR_ETOOBIG);
	s_put_le64(p, 0x01020304ull); /* 16909060 */
	CU_ASSERT_EQUAL(rr_st_header_size(p, 8 + 0x01020304ull, &n), 0);
	CU_ASSERT_EQUAL(n, 0x01020304ull);
	s_put_le64(p, RR_ST_MAX_HEADER);
	CU_ASSERT_EQUAL(rr_st_header_size(p, (uint64_t)1 << 40, &n), 0);
	CU_ASSERT_EQUAL(n, RR_ST_MAX_HEADER);
	s_put_le64(p, 0);
	CU_ASSERT_EQUAL(rr_st_header_size(p, 8, &n), 0);
	CU_ASSERT_EQUAL(n, 0);
}

static void test_st_refuses_100mb_header_length_without_reading_it(void)
{
	uint8_t p[8];
	struct rr_st_header h;
	char why[S_WHY];
	uint64_t n = 0;
	const uint64_t big = 100ull << 20; /* 100 MiB > RR_ST_MAX_HEADER */

	/* only the 8-byte prefix is handed over: reading (or allocating) the header would
	 * show up under ASan */
	s_put_le64(p, big);
	CU_ASSERT_EQUAL(rr_st_header_size(p, (uint64_t)1 << 40, &n), RR_ETOOBIG);
	CU_ASSERT_EQUAL(rr_st_parse(p, sizeof(p), (uint64_t)1 << 40, &h, why, sizeof(why)),
			RR_ETOOBIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "exceeds"));
	CU_ASSERT(s_one_line(why));
	s_put_le64(p, RR_ST_MAX_HEADER + 1ull);
	CU_ASSERT_EQUAL(rr_st_header_size(p, (uint64_t)1 << 40, &n), RR_ETOOBIG);
	s_put_le64(p, UINT64_MAX);
	CU_ASSERT_EQUAL(rr_st_header_size(p, UINT64_MAX, &n), RR_ETOOBIG);
	CU_ASSERT_EQUAL(rr_st_parse(p, sizeof(p), UINT64_MAX, &h, why, sizeof(why)),
			RR_ETOOBIG);
}

static void test_st_refuses_header_length_beyond_file(void)
{
	uint8_t p[8];
	struct rr_st_header h;
	char why[S_WHY];
	uint64_t n = 0;

	s_put_le64(p, RR_ST_MAX_HEADER); /* within the ceiling ... */
	CU_ASSERT_EQUAL(rr_st_header_size(p, 8 + (uint64_t)RR_ST_MAX_HEADER - 1, &n),
			RR_ECORRUPT); /* ... but one byte more than the file holds */
	CU_ASSERT_EQUAL(rr_st_parse(p, sizeof(p), 8 + (uint64_t)RR_ST_MAX_HEADER - 1, &h, why,
				    sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "past the end of the file"));
	s_put_le64(p, 1);
	CU_ASSERT_EQUAL(rr_st_header_size(p, 8, &n), RR_ECORRUPT);
}

static void test_st_refuses_caller_buffer_shorter_than_header(void)
{
	uint8_t buf[8 + 10] = { 0 };
	struct rr_st_header h;
	char why[S_WHY];

	s_put_le64(buf, 50);
	memcpy(buf + 8, "{\"a\":{\"dt", 10);
	CU_ASSERT_EQUAL(rr_st_parse(buf, sizeof(buf), 100, &h, why, sizeof(why)), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_st_parse(buf, 4, 100, &h, why, sizeof(why)), RR_EINVAL);
	CU_ASSERT_EQUAL(h.ntensors, 0);
}

/* --- the header text ------------------------------------------------------------------ */

static void test_st_refuses_header_not_starting_with_brace(void)
{
	s_refused("[{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]}}]", 1,
		  "does not start with '{'");
	s_refused(" {'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]}}", 1,
		  "does not start with '{'");
	s_refused_bytes(S_LIT("\xef\xbb\xbf{}"), 0, "does not start with '{'"); /* BOM */
	s_refused_bytes("", 0, 0, "header is empty");
	s_refused("'{}'", 0, "does not start with '{'");
}

static void test_st_refuses_invalid_utf8(void)
{
	s_refused_bytes(S_LIT("{\"a\xff\":{}}"), 0, "not UTF-8");
	s_refused_bytes(S_LIT("{\"a\xc0\xaf\":{}}"), 0, "not UTF-8");     /* overlong '/' */
	s_refused_bytes(S_LIT("{\"a\xe0\x80\xaf\":{}}"), 0, "not UTF-8"); /* overlong */
	s_refused_bytes(S_LIT("{\"a\xed\xa0\x80\":{}}"), 0, "not UTF-8"); /* U+D800 */
	s_refused_bytes(S_LIT("{\"a\xf4\x90\x80\x80\":{}}"), 0, "not UTF-8"); /* > U+10FFFF */
	s_refused_bytes(S_LIT("{\"a\xe2\x82\":{}}"), 0, "not UTF-8");     /* truncated */
	s_refused_bytes(S_LIT("{\"a\x80\":{}}"), 0, "not UTF-8");         /* lone continuation */
	s_refused_bytes(S_LIT("{}  \xc3"), 0, "not UTF-8");                /* in the padding */
}

static void test_st_refuses_padding_other_than_spaces(void)
{
	s_refused_bytes(S_LIT("{}\n"), 0, "only spaces (0x20)");
	s_refused_bytes(S_LIT("{}\t"), 0, "only spaces (0x20)");
	s_refused_bytes("{}\0\0", 4, 0, "only spaces (0x20)");
	s_refused_bytes(S_LIT("{} x"), 0, "only spaces (0x20)");
	s_refused_bytes(S_LIT("{}{}"), 0, "only spaces (0x20)");
}

static void test_st_refuses_invalid_json(void)
{
	s_refused("{'a' {'dtype':'U8','shape':[1],'data_offsets':[0,1]}}", 1, "not valid JSON");
	s_refused("{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]},}", 1, "not valid JSON");
	s_refused("{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]]}", 1, "not valid JSON");
	s_refused("{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]}", 1, "not closed");
	s_refused("{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]},'b':nul}", 1,
		  "invalid literal");
	s_refused("{'a':{'dtype':'U8','shape':[NaN],'data_offsets':[0,1]}}", 1,
		  "unexpected character 'N'");
	s_refused("{'a':{'dtype':'U8','shape':[Infinity],'data_offsets':[0,1]}}", 1,
		  "unexpected character 'I'");
	s_refused("{'a':{'dtype':'U8','shape':[1],'data_offsets':[0,1]}, 'b'}", 1,
		  "not valid JSON");
	s_refused_bytes(S_LIT("{\"a\":\x01{}}"), 0, "unexpected byte 0x01");
	s_refused("{'a", 0, "never ends");
}

static void test_st_refuses_deep_nesting(void)
{
	s_refused("{'a':{'dtype':'U8','shape':[[1]],'data_offsets':[0,1]}}", 1,
		  "nested deeper");
	s_refused("{'a':[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]}", 0, "nested deeper");
}

/* --- numbers -------------------------------------------------------------------------- */

static void test_st_refuses_numbers_above_2p53(void)
{
	s_refused("{'a':{'dtype':'U8','shape':[0],'data_offsets':[9007199254740993,"
		  "9007199254740993]}}",
		  0, "number \"9007199254740993\" is above 2^53");
	s_refused("{'a':{'dtype':'U8','shape':[9007199254740993,0],'data_offsets':[0,0]}}", 0,
		  "above 2^53");
	s_refused("{'a':{'dtype':'U8','shape':[18446744073709551616,0],'data_offsets':[0,0]}}",
		  0, "above 2^53");
	s_refused("{'a':{'dtype':'U8','shape':[99999999999999999999999999999999999999999999999,"
		  "0],'data_offsets':[0,0]}}",
		  0, "above 2^53");
}

static void test_st_accepts_number_exactly_2p53(void)
{
	struct rr_st_header h;

	s_accepted("{'z':{'dtype':'U8','shape':[9007199254740992,0],'data_offsets':[0,0]}}", 0,
		   &h);
	CU_ASSERT_EQUAL_FATAL(h.ntensors, 1);
	CU_ASSERT_EQUAL(h.tensors[0].shape[0], (uint64_t)1 << 53);
	rr_st_header_free(&h);
}

static void test_st_refuses_negative_fractional_and_exponent_numbers(void)
{
	s_refused("{'a':{'dtype':'F32','shape':[-2],'data_offsets':[0,8]}}", 8, "is negative");
	s_refused("{'a':{'dtype':'F32','shape':[-0],'data_offsets':[0,0]}}", 0, "is negative");
	s_refused("{'a':{'dtype':'F32','shape':[2.0],'data_offsets':[0,8]}}", 8,
		  "has a fraction");
	s_refused("{'a':{'dtype':'F32','shape':[2],'data_offsets':[0,8.5]}}", 8,
		  "has a fraction");
	s_refused("{'a':{'dtype':'F32','shape':[2e0],'data_offsets':[0,8]}}", 8,
		  "exponent form");
	s_refused("{'a':{'dtype':'F32','shape':[2],'data_offsets':[0,8E+0]}}", 8,
		  "exponent form");
	s_refused("{'a':{'dtype':'F32','shape':[02],'data_offsets':[0,8]}}", 8,
		  "leading zero");
}

/* --- keys and names ------------------------------------------------------------------- */

static void test_st_refuses_duplicate_tensor_name(void)
{
	s_refused("{'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]},"
		  "'a':{'dtype':'F32','shape':[1],'data_offsets':[4,8]}}",
		  8, "tensor name \"a\" appears twice");
	/* the same key written differently is still the same key */
	s_refused("{'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]},"
		  "'\\u0061':{'dtype':'F32','shape':[1],'data_offsets':[4,8]}}",
		  8, "tensor name \"a\" appears twice");
}

static void test_st_refuses_duplicate_member_in_tensor_entry(void)
{
	s_refused("{'a':{'dtype':'F32','dtype':'U8','shape':[2],'data_offsets':[0,8]}}", 8,
		  "member \"dtype\" appears twice");
	s_refused("{'a':{'dtype':'F32','shape':[2],'data_offsets':[0,8],'shape':[2]}}", 8,
		  "member \"shape\" appears twice");
}

static void test_st_refuses_duplicate_metadata(void)
{
	s_refused("{'__metadata__':{'k':'v'},'__metadata__':{'k':'w'}}", 0,
		  "\"__metadata__\" appears twice");
	s_refused("{'__metadata__':{'k':'v','k':'w'}}", 0, "key \"k\" appears twice");
}

static void test_st_refuses_nul_in_names(void)
{
	s_refused("{'a\\u0000b':{'dtype':'F32','shape':[2],'data_offsets':[0,8]}}", 8,
		  "\\u0000\" (NUL)");
	s_refused_bytes(S_LIT("{\"a\0b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}"),
			8, "raw control character 0x00");
	s_refused("{'__metadata__':{'k':'\\u0000'}}", 0, "(NUL)");
}

static void test_st_refuses_raw_control_characters_and_bad_escapes(void)
{
	struct rr_st_header h;

	s_refused_bytes(S_LIT("{\"a\nb\":{}}"), 0, "raw control character 0x0a");
	s_refused("{'a\\x41':{}}", 0, "invalid escape");
	s_refused("{'a\\u12':{}}", 0, "four hex digits");
	s_refused("{'a\\ud800':{}}", 0, "unpaired UTF-16 surrogate \\ud800");
	s_refused("{'a\\ud800\\u0041':{}}", 0, "unpaired UTF-16 surrogate");
	s_refused("{'a\\udc00':{}}", 0, "unpaired UTF-16 surrogate \\udc00");
	/* a proper pair, and the other escapes, are fine */
	s_accepted("{'\\ud83d\\ude00\\n\\t\\/\\'\\\\':{'dtype':'U8','shape':[1],"
		   "'data_offsets':[0,1]}}",
		   1, &h);
	CU_ASSERT_EQUAL_FATAL(h.ntensors, 1);
	CU_ASSERT_STRING_EQUAL(h.tensors[0].name, "\xf0\x9f\x98\x80\n\t/\"\\");
	rr_st_header_free(&h);
}

static void test_st_refuses_empty_and_oversized_names(void)
{
	struct rr_st_header h;
	const size_t max = 64u << 10;
	char *text = malloc(max + 128);
	size_t o;

	s_refused("{'':{'dtype':'F32','shape':[2],'data_offsets':[0,8]}}", 8, "empty name");
	CU_ASSERT_FATAL(text != NULL);
	for (int extra = 0; extra <= 1; extra++) {
		o = 0;
		text[o++] = '{';
		text[o++] = '"';
		memset(text + o, 'n', max + (size_t)extra);
		o += max + (size_t)extra;
		o += (size_t)sprintf(text + o,
				     "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}");
		if (extra) {
			s_refused_bytes(text, o, 1, "is 65537 bytes, over 65536");
		} else {
			s_accepted_bytes(text, o, 1, &h);
			CU_ASSERT_EQUAL(h.ntensors, 1);
			rr_st_header_free(&h);
		}
	}
	free(text);
}

/* --- entries -------------------------------------------------------------------------- */

static void test_st_refuses_unknown_dtype(void)
{
	s_refused("{'a':{'dtype':'F128','shape':[1],'data_offsets':[0,16]}}", 16,
		  "unknown dtype \"F128\"");
	s_refused("{'a':{'dtype':'f32','shape':[2],'data_offsets':[0,8]}}", 8,
		  "unknown dtype \"f32\"");
	s_refused("{'a':{'dtype':'','shape':[2],'data_offsets':[0,8]}}", 8, "unknown dtype");
	s_refused("{'a':{'dtype':32,'shape':[2],'data_offsets':[0,8]}}", 8,
		  "dtype is a number, not a string");
}

static void test_st_refuses_entries_that_do_not_fit_the_schema(void)
{
	s_refused("{'a':[0,8]}", 8, "entry is an array, not an object");
	s_refused("{'a':'F32'}", 8, "entry is a string, not an object");
	s_refused("{'a':{'shape':[2],'data_offsets':[0,8]}}", 8, "missing \"dtype\"");
	s_refused("{'a':{'dtype':'F32','data_offsets':[0,8]}}", 8, "missing \"shape\"");
	s_refused("{'a':{'dtype':'F32','shape':[2]}}", 8, "missing \"data_offsets\"");
	s_refused("{'a':{'dtype':'F32','shape':[2],'data_offsets':[0,8],'extra':'x'}}", 8,
		  "unknown member \"extra\"");
	s_refused("{'a':{'dtype':'F32','shape':2,'data_offsets':[0,8]}}", 8,
		  "shape is a number, not an array");
	s_refused("{'a':{'dtype':'F32','shape':['2'],'data_offsets':[0,8]}}", 8,
		  "shape entry 0 is a string");
	s_refused("{'a':{'dtype':'F32','shape':[2],'data_offsets':[0,8,8]}}", 8,
		  "data_offsets is not an array of two");
	s_refused("{'a':{'dtype':'F32','shape':[2],'data_offsets':[0]}}", 8,
		  "data_offsets is not an array of two");
	s_refused("{'a':{'dtype':'F32','shape':[2],'data_offsets':{'0':8}}}", 8,
		  "data_offsets is not an array of two");
	s_refused("{'a':{'dtype':'F32','shape':[2],'data_offsets':[0,null]}}", 8,
		  "data_offsets is not an array of two unsigned integers");
}

static void test_st_refuses_metadata_that_is_not_strings(void)
{
	s_refused("{'__metadata__':{'step':5}}", 0, "the value of \"step\" is not a string");
	s_refused("{'__metadata__':{'k':{'x':'y'}}}", 0, "the value of \"k\" is not a string");
	s_refused("{'__metadata__':{'k':true}}", 0, "is not a string");
	s_refused("{'__metadata__':['a']}", 0, "not an object of strings (it is an array)");
	s_refused("{'__metadata__':null}", 0, "(it is null)");
	s_refused("{'__metadata__':'x'}", 0, "(it is a string)");
}

static void test_st_refuses_more_than_64_dims(void)
{
	struct rr_st_header h;
	char text[1024];

	for (int ndim = 64; ndim <= 65; ndim++) {
		size_t o = (size_t)sprintf(text, "{'d':{'dtype':'U8','shape':[");
		for (int i = 0; i < ndim; i++)
			o += (size_t)sprintf(text + o, "%s1", i ? "," : "");
		sprintf(text + o, "],'data_offsets':[0,1]}}");
		if (ndim == 64) {
			s_accepted(text, 1, &h);
			CU_ASSERT_EQUAL_FATAL(h.ntensors, 1);
			CU_ASSERT_EQUAL(h.tensors[0].ndim, 64);
			rr_st_header_free(&h);
		} else {
			s_refused(text, 1, "65 dimensions, more than 64");
		}
	}
}

/* --- layout --------------------------------------------------------------------------- */

static void test_st_refuses_gap_between_tensors(void)
{
	s_refused("{'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]},"
		  "'b':{'dtype':'F32','shape':[1],'data_offsets':[8,12]}}",
		  12, "tensor \"b\": data_offsets [8, 12] leave a gap");
}

static void test_st_refuses_first_tensor_not_at_offset_zero(void)
{
	s_refused("{'a':{'dtype':'F32','shape':[1],'data_offsets':[4,8]}}", 8,
		  "tensor \"a\": data_offsets [4, 8] leave a gap: the data before it ends at 0");
}

static void test_st_refuses_overlapping_tensors(void)
{
	s_refused("{'a':{'dtype':'F32','shape':[2],'data_offsets':[0,8]},"
		  "'b':{'dtype':'F32','shape':[1],'data_offsets':[4,8]}}",
		  8, "tensor \"b\": data_offsets [4, 8] overlap");
	/* two tensors over the same bytes */
	s_refused("{'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]},"
		  "'b':{'dtype':'F32','shape':[1],'data_offsets':[0,4]}}",
		  4, "overlap");
}

static void test_st_refuses_offsets_ending_before_they_begin(void)
{
	s_refused("{'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]},"
		  "'b':{'dtype':'F32','shape':[1],'data_offsets':[8,4]}}",
		  8, "tensor \"b\": data_offsets [8, 4] end before they begin");
}

static void test_st_refuses_shape_product_overflow(void)
{
	s_refused("{'a':{'dtype':'F32','shape':[4294967296,4294967296],'data_offsets':[0,8]}}",
		  8, "element count of its shape overflows");
	s_refused("{'a':{'dtype':'F64','shape':[4294967296,536870912],'data_offsets':[0,8]}}",
		  8, "size in bits overflows");
	/* like the reference, the product is folded left to right: a later 0 does not undo
	 * an overflow */
	s_refused("{'a':{'dtype':'U8','shape':[4294967296,4294967296,0],'data_offsets':[0,0]}}",
		  0, "overflows");
}

static void test_st_refuses_size_mismatch(void)
{
	s_refused("{'a':{'dtype':'F32','shape':[3],'data_offsets':[0,8]}}", 8,
		  "tensor \"a\": F32 [3] needs 12 bytes, its data_offsets give 8");
	s_refused("{'a':{'dtype':'BF16','shape':[],'data_offsets':[0,0]}}", 0,
		  "needs 2 bytes, its data_offsets give 0");
}

static void test_st_refuses_trailing_bytes(void)
{
	s_refused("{'a':{'dtype':'F32','shape':[2],'data_offsets':[0,8]}}", 9,
		  "tensors cover 8 bytes but the file has 9 after the header (trailing bytes)");
	s_refused("{}", 1, "trailing bytes");
}

static void test_st_refuses_missing_data_bytes(void)
{
	s_refused("{'a':{'dtype':'F32','shape':[2],'data_offsets':[0,8]}}", 7,
		  "tensors cover 8 bytes but the file has 7 after the header (truncated)");
}

static void test_st_refuses_sub_byte_tensor_not_ending_on_a_byte(void)
{
	s_refused("{'q':{'dtype':'F4','shape':[3],'data_offsets':[0,2]}}", 2,
		  "3 elements of F4 (4 bits) do not end on a byte boundary");
	s_refused("{'q':{'dtype':'F4','shape':[],'data_offsets':[0,1]}}", 1,
		  "do not end on a byte boundary");
	s_refused("{'q':{'dtype':'F6_E2M3','shape':[3],'data_offsets':[0,3]}}", 3,
		  "3 elements of F6_E2M3 (6 bits)");
	s_refused("{'q':{'dtype':'F6_E3M2','shape':[2,3],'data_offsets':[0,5]}}", 5,
		  "6 elements of F6_E3M2 (6 bits)");
}

static void test_st_accepts_sub_byte_tensor_ending_on_a_byte(void)
{
	struct rr_st_header h;

	s_accepted("{'q':{'dtype':'F4','shape':[3,2],'data_offsets':[0,3]},"
		   "'r':{'dtype':'F6_E3M2','shape':[4],'data_offsets':[3,6]},"
		   "'s':{'dtype':'F4','shape':[0],'data_offsets':[6,6]}}",
		   6, &h);
	CU_ASSERT_EQUAL_FATAL(h.ntensors, 3);
	CU_ASSERT_EQUAL(h.tensors[0].dtype, RR_ST_F4);
	CU_ASSERT_EQUAL(h.tensors[1].dtype, RR_ST_F6_E3M2);
	rr_st_header_free(&h);
}

/* --- reasons -------------------------------------------------------------------------- */

static void test_st_reason_is_one_quoted_truncated_line(void)
{
	struct rr_st_header h;
	char why[S_WHY], small[24];
	char *text = malloc(4096);
	size_t o = 0;
	int rc;

	CU_ASSERT_FATAL(text != NULL);
	/* a name with a newline, a quote, a C1 control and U+2028, then 200 more bytes */
	o += (size_t)sprintf(text, "{\"evil\\n\\\"name\\u0085\\u2028");
	memset(text + o, 'x', 200);
	o += 200;
	o += (size_t)sprintf(text + o, "\":{\"dtype\":\"F99\",\"shape\":[],\"data_offsets\":[0,4]}}");
	rc = s_parse_bytes(text, o, 4, &h, why);
	CU_ASSERT_EQUAL(rc, RR_ECORRUPT);
	CU_ASSERT(s_one_line(why));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "tensor \"evil\\u000a\\\"name\\u0085\\u2028xxx"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "xxx\"...: unknown dtype \"F99\""));
	CU_ASSERT(strlen(why) < 160);

	/* a reason cut short by a small buffer does not end in half a character */
	o = (size_t)sprintf(text, "{\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\":"
				  "{\"dtype\":\"X\",\"shape\":[],\"data_offsets\":[0,0]}}");
	{
		uint8_t *buf = malloc(o + 8);
		CU_ASSERT_FATAL(buf != NULL);
		s_put_le64(buf, o);
		memcpy(buf + 8, text, o);
		for (size_t len = 1; len <= sizeof(small); len++) {
			rc = rr_st_parse(buf, o + 8, o + 8, &h, small, len);
			CU_ASSERT_EQUAL(rc, RR_ECORRUPT);
			size_t n = strlen(small);
			CU_ASSERT(n < len);
			/* the last byte is ASCII or ends a complete é */
			if (n > 0)
				CU_ASSERT((unsigned char)small[n - 1] < 0x80 ||
					  (unsigned char)small[n - 1] == 0xa9);
		}
		free(buf);
	}
	/* and no reason at all is fine too */
	CU_ASSERT_EQUAL(s_parse_bytes(S_LIT("[]"), 0, &h, why), RR_ECORRUPT);
	{
		uint8_t p[8];
		s_put_le64(p, 0);
		CU_ASSERT_EQUAL(rr_st_parse(p, 8, 8, &h, NULL, 0), RR_ECORRUPT);
	}
	free(text);
}

/* --- the rest of the API ---------------------------------------------------------------- */

static void test_st_dtype_table_matches_protocols(void)
{
	static const struct {
		const char *name;
		unsigned bits;
		enum rr_st_dtype d;
	} want[] = {
		{ "BOOL", 8, RR_ST_BOOL },
		{ "F4", 4, RR_ST_F4 },
		{ "F6_E2M3", 6, RR_ST_F6_E2M3 },
		{ "F6_E3M2", 6, RR_ST_F6_E3M2 },
		{ "U8", 8, RR_ST_U8 },
		{ "I8", 8, RR_ST_I8 },
		{ "F8_E5M2", 8, RR_ST_F8_E5M2 },
		{ "F8_E4M3", 8, RR_ST_F8_E4M3 },
		{ "F8_E8M0", 8, RR_ST_F8_E8M0 },
		{ "F8_E4M3FNUZ", 8, RR_ST_F8_E4M3FNUZ },
		{ "F8_E5M2FNUZ", 8, RR_ST_F8_E5M2FNUZ },
		{ "I16", 16, RR_ST_I16 },
		{ "U16", 16, RR_ST_U16 },
		{ "F16", 16, RR_ST_F16 },
		{ "BF16", 16, RR_ST_BF16 },
		{ "I32", 32, RR_ST_I32 },
		{ "U32", 32, RR_ST_U32 },
		{ "F32", 32, RR_ST_F32 },
		{ "C64", 64, RR_ST_C64 },
		{ "F64", 64, RR_ST_F64 },
		{ "I64", 64, RR_ST_I64 },
		{ "U64", 64, RR_ST_U64 },
	};
	enum rr_st_dtype d;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		CU_ASSERT_STRING_EQUAL(rr_st_dtype_name(want[i].d), want[i].name);
		CU_ASSERT_EQUAL(rr_st_dtype_bits(want[i].d), want[i].bits);
		CU_ASSERT_EQUAL(rr_st_dtype_from_name(want[i].name, &d), 0);
		CU_ASSERT_EQUAL(d, want[i].d);
	}
	CU_ASSERT_NOT_EQUAL(rr_st_dtype_from_name("F8_E4M3FN", &d), 0);
	CU_ASSERT_NOT_EQUAL(rr_st_dtype_from_name("bf16", &d), 0);
	CU_ASSERT_NOT_EQUAL(rr_st_dtype_from_name("", &d), 0);
	CU_ASSERT_PTR_NULL(rr_st_dtype_name((enum rr_st_dtype)99));
	CU_ASSERT_EQUAL(rr_st_dtype_bits((enum rr_st_dtype)99), 0);
}

static void test_st_free_accepts_zeroed_and_null_headers(void)
{
	struct rr_st_header h;

	memset(&h, 0, sizeof(h));
	rr_st_header_free(&h);
	rr_st_header_free(NULL);
	CU_ASSERT_EQUAL(h.ntensors, 0);
}

/* Every seed of the fuzz corpus is named for what the reader must do with it. */
static void test_st_corpus_seeds_match_their_names(void)
{
	const char *src = getenv("RR_SRC");
	char dir[4096], path[4608];
	DIR *d;
	struct dirent *e;
	int seen_valid = 0, seen_bad = 0;

	snprintf(dir, sizeof(dir), "%s%stests/fuzz/corpus/fuzz_safetensors", src ? src : "",
		 src ? "/" : "");
	d = opendir(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((e = readdir(d))) {
		int valid = strncmp(e->d_name, "valid_", 6) == 0;
		int bad = strncmp(e->d_name, "bad_", 4) == 0;
		struct rr_st_header h;
		char why[S_WHY];
		uint8_t *buf;
		long size;
		FILE *f;
		int rc;

		if (!valid && !bad)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "rb");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		rewind(f);
		buf = malloc((size_t)size + 1);
		CU_ASSERT_FATAL(buf != NULL);
		CU_ASSERT_EQUAL_FATAL(fread(buf, 1, (size_t)size, f), (size_t)size);
		fclose(f);
		rc = rr_st_parse(buf, (size_t)size, (uint64_t)size, &h, why, sizeof(why));
		if (valid ? rc != 0 : rc == 0)
			fprintf(stderr, "\n  %s: rc %d %s\n", e->d_name, rc, why);
		CU_ASSERT(valid ? rc == 0 : rc != 0);
		if (bad)
			CU_ASSERT(why[0] != '\0' && s_one_line(why));
		rr_st_header_free(&h);
		free(buf);
		seen_valid += valid;
		seen_bad += bad;
	}
	closedir(d);
	CU_ASSERT(seen_valid >= 10);
	CU_ASSERT(seen_bad >= 30);
}

static CU_TestInfo s_tests[] = {
	{ "test_st_accepts_python_file_with_every_dtype",
	  test_st_accepts_python_file_with_every_dtype },
	{ "test_st_accepts_python_zero_rank_tensor", test_st_accepts_python_zero_rank_tensor },
	{ "test_st_accepts_python_empty_tensors", test_st_accepts_python_empty_tensors },
	{ "test_st_accepts_python_metadata_without_listing_it",
	  test_st_accepts_python_metadata_without_listing_it },
	{ "test_st_accepts_torch_written_files", test_st_accepts_torch_written_files },
	{ "test_st_accepts_many_tensors", test_st_accepts_many_tensors },
	{ "test_st_accepts_header_padded_with_spaces", test_st_accepts_header_padded_with_spaces },
	{ "test_st_accepts_no_tensors", test_st_accepts_no_tensors },
	{ "test_st_sorts_tensors_given_out_of_order", test_st_sorts_tensors_given_out_of_order },
	{ "test_st_accepts_empty_tensors_sharing_an_offset",
	  test_st_accepts_empty_tensors_sharing_an_offset },
	{ "test_st_refuses_file_smaller_than_8_bytes", test_st_refuses_file_smaller_than_8_bytes },
	{ "test_st_header_size_reads_little_endian_length",
	  test_st_header_size_reads_little_endian_length },
	{ "test_st_refuses_100mb_header_length_without_reading_it",
	  test_st_refuses_100mb_header_length_without_reading_it },
	{ "test_st_refuses_header_length_beyond_file", test_st_refuses_header_length_beyond_file },
	{ "test_st_refuses_caller_buffer_shorter_than_header",
	  test_st_refuses_caller_buffer_shorter_than_header },
	{ "test_st_refuses_header_not_starting_with_brace",
	  test_st_refuses_header_not_starting_with_brace },
	{ "test_st_refuses_invalid_utf8", test_st_refuses_invalid_utf8 },
	{ "test_st_refuses_padding_other_than_spaces", test_st_refuses_padding_other_than_spaces },
	{ "test_st_refuses_invalid_json", test_st_refuses_invalid_json },
	{ "test_st_refuses_deep_nesting", test_st_refuses_deep_nesting },
	{ "test_st_refuses_numbers_above_2p53", test_st_refuses_numbers_above_2p53 },
	{ "test_st_accepts_number_exactly_2p53", test_st_accepts_number_exactly_2p53 },
	{ "test_st_refuses_negative_fractional_and_exponent_numbers",
	  test_st_refuses_negative_fractional_and_exponent_numbers },
	{ "test_st_refuses_duplicate_tensor_name", test_st_refuses_duplicate_tensor_name },
	{ "test_st_refuses_duplicate_member_in_tensor_entry",
	  test_st_refuses_duplicate_member_in_tensor_entry },
	{ "test_st_refuses_duplicate_metadata", test_st_refuses_duplicate_metadata },
	{ "test_st_refuses_nul_in_names", test_st_refuses_nul_in_names },
	{ "test_st_refuses_raw_control_characters_and_bad_escapes",
	  test_st_refuses_raw_control_characters_and_bad_escapes },
	{ "test_st_refuses_empty_and_oversized_names", test_st_refuses_empty_and_oversized_names },
	{ "test_st_refuses_unknown_dtype", test_st_refuses_unknown_dtype },
	{ "test_st_refuses_entries_that_do_not_fit_the_schema",
	  test_st_refuses_entries_that_do_not_fit_the_schema },
	{ "test_st_refuses_metadata_that_is_not_strings",
	  test_st_refuses_metadata_that_is_not_strings },
	{ "test_st_refuses_more_than_64_dims", test_st_refuses_more_than_64_dims },
	{ "test_st_refuses_gap_between_tensors", test_st_refuses_gap_between_tensors },
	{ "test_st_refuses_first_tensor_not_at_offset_zero",
	  test_st_refuses_first_tensor_not_at_offset_zero },
	{ "test_st_refuses_overlapping_tensors", test_st_refuses_overlapping_tensors },
	{ "test_st_refuses_offsets_ending_before_they_begin",
	  test_st_refuses_offsets_ending_before_they_begin },
	{ "test_st_refuses_shape_product_overflow", test_st_refuses_shape_product_overflow },
	{ "test_st_refuses_size_mismatch", test_st_refuses_size_mismatch },
	{ "test_st_refuses_trailing_bytes", test_st_refuses_trailing_bytes },
	{ "test_st_refuses_missing_data_bytes", test_st_refuses_missing_data_bytes },
	{ "test_st_refuses_sub_byte_tensor_not_ending_on_a_byte",
	  test_st_refuses_sub_byte_tensor_not_ending_on_a_byte },
	{ "test_st_accepts_sub_byte_tensor_ending_on_a_byte",
	  test_st_accepts_sub_byte_tensor_ending_on_a_byte },
	{ "test_st_reason_is_one_quoted_truncated_line",
	  test_st_reason_is_one_quoted_truncated_line },
	{ "test_st_dtype_table_matches_protocols", test_st_dtype_table_matches_protocols },
	{ "test_st_free_accepts_zeroed_and_null_headers",
	  test_st_free_accepts_zeroed_and_null_headers },
	{ "test_st_corpus_seeds_match_their_names", test_st_corpus_seeds_match_their_names },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("safetensors", s_tests)
