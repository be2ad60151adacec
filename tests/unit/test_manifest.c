/* Manifest and LATEST: what is written reads back the same, and what restore must not
 * trust (bad checksums, escaping paths, inconsistent segments, odd numbers) is refused
 * with a reason that names it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cunit_main.h"
#include "rr/buf.h"
#include "rr/error.h"
#include "rr/hash.h"
#include "rr/manifest.h"

/* --- helpers ------------------------------------------------------------------------- */

static char *s_strdup(const char *s)
{
	char *d = strdup(s);
	CU_ASSERT_FATAL(d != NULL);
	return d;
}

static void s_hex(const char *seed, char out[RR_SHA256_HEX_LEN + 1])
{
	rr_sha256_hex(seed, strlen(seed), out);
}

static struct rr_segment s_seg(uint64_t offset, uint64_t length, const char *seed,
			       size_t nchunks)
{
	struct rr_segment sg;
	uint64_t left = length;

	memset(&sg, 0, sizeof(sg));
	sg.offset = offset;
	sg.length = length;
	sg.encoding = RR_ENC_ZSTD;
	s_hex(seed, sg.raw_sha256);
	sg.nchunks = nchunks;
	sg.chunks = calloc(nchunks, sizeof(*sg.chunks));
	CU_ASSERT_FATAL(sg.chunks != NULL);
	for (size_t k = 0; k < nchunks; k++) {
		char cseed[64];
		snprintf(cseed, sizeof(cseed), "%s/%zu", seed, k);
		s_hex(cseed, sg.chunks[k].sha256);
		sg.chunks[k].size = k + 1 < nchunks ? length / nchunks : left;
		left -= sg.chunks[k].size;
		sg.chunks[k].stored_size = sg.chunks[k].size / 2 + 1;
	}
	return sg;
}

/* One file of size bytes, split in nsegs segments of (nearly) equal length. */
static void s_file(struct rr_file_entry *fe, const char *path, uint64_t size, size_t nsegs,
		   size_t chunks_per_seg)
{
	uint64_t off = 0;

	memset(fe, 0, sizeof(*fe));
	fe->path = s_strdup(path);
	fe->mode = 0644;
	fe->size = size;
	fe->nsegs = nsegs;
	if (!nsegs)
		return;
	fe->segs = calloc(nsegs, sizeof(*fe->segs));
	CU_ASSERT_FATAL(fe->segs != NULL);
	for (size_t k = 0; k < nsegs; k++) {
		uint64_t len = k + 1 < nsegs ? size / nsegs : size - off;
		char seed[64];
		snprintf(seed, sizeof(seed), "%s#%zu", path, k);
		fe->segs[k] = s_seg(off, len, seed, chunks_per_seg);
		off += len;
	}
}

static struct rr_manifest *s_new(size_t nfiles)
{
	struct rr_manifest *m = calloc(1, sizeof(*m));
	CU_ASSERT_FATAL(m != NULL);
	m->run_id = s_strdup("default");
	m->checkpoint = s_strdup("step-200");
	m->host = s_strdup("node-1");
	m->committed_unix_ms = 1700000000000;
	m->created_unix_ms = 1700000000123;
	m->nfiles = nfiles;
	if (nfiles) {
		m->files = calloc(nfiles, sizeof(*m->files));
		CU_ASSERT_FATAL(m->files != NULL);
	}
	return m;
}

/* model (3 segments, several chunks), a nested file, and an empty one */
static struct rr_manifest *s_sample(void)
{
	struct rr_manifest *m = s_new(3);
	s_file(&m->files[0], "model.safetensors", 25000000, 3, 3);
	s_file(&m->files[1], "optim/state.bin", 12345, 1, 1);
	s_file(&m->files[2], "empty.txt", 0, 0, 0);
	m->files[1].mode = 0600;
	return m;
}

static struct rr_manifest *s_one_file(const char *path)
{
	struct rr_manifest *m = s_new(1);
	s_file(&m->files[0], path, 100, 1, 1);
	return m;
}

static char *s_to_json(const struct rr_manifest *m)
{
	struct rr_buf b;
	char *s;

	rr_buf_init(&b, RR_MANIFEST_MAX_BYTES);
	CU_ASSERT_FATAL(rr_manifest_to_json(m, &b) == 0);
	s = s_strdup((const char *)b.data);
	rr_buf_free(&b);
	return s;
}

/* Recomputes the checksum of edited manifest text the way a reader checks it (cJSON's
 * compact printing without the member) and writes it over the old one, keeping the text
 * otherwise as it is, so tests can build manifests whose only fault is the one under test. */
static char *s_reseal(const char *text)
{
	char sum[RR_SHA256_HEX_LEN + 1];
	cJSON *root = cJSON_Parse(text);
	char *body, *out, *at;

	CU_ASSERT_FATAL(root != NULL);
	cJSON_Delete(cJSON_DetachItemFromObjectCaseSensitive(root, "checksum"));
	body = cJSON_PrintUnformatted(root);
	CU_ASSERT_FATAL(body != NULL);
	rr_sha256_hex(body, strlen(body), sum);
	free(body);
	cJSON_Delete(root);
	out = s_strdup(text);
	at = strstr(out, "\"checksum\":\"");
	CU_ASSERT_FATAL(at != NULL && strlen(at) >= 12 + RR_SHA256_HEX_LEN);
	memcpy(at + 12, sum, RR_SHA256_HEX_LEN);
	return out;
}

/* text with the first occurrence of from replaced by to */
static char *s_replace(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	size_t n = strlen(text) - strlen(from) + strlen(to);
	char *out;

	CU_ASSERT_FATAL(at != NULL);
	out = malloc(n + 1);
	CU_ASSERT_FATAL(out != NULL);
	memcpy(out, text, (size_t)(at - text));
	strcpy(out + (at - text), to);
	strcat(out, at + strlen(from));
	return out;
}

/* Parses text and checks the result code and that the reason holds want (if given). */
static void s_expect(const char *text, int want_rc, const char *want_why)
{
	struct rr_manifest *m = (struct rr_manifest *)1;
	char why[512] = "untouched";
	int rc = rr_manifest_parse(text, strlen(text), &m, why, sizeof(why));

	CU_ASSERT_EQUAL(rc, want_rc);
	if (rc != want_rc)
		fprintf(stderr, "\n  got %d (%s) for %.200s\n", rc, why, text);
	if (want_rc) {
		CU_ASSERT_PTR_NULL(m);
		CU_ASSERT(strchr(why, '\n') == NULL);
		CU_ASSERT(why[0] != '\0');
		if (want_why && !strstr(why, want_why)) {
			fprintf(stderr, "\n  reason \"%s\" lacks \"%s\"\n", why, want_why);
			CU_FAIL("reason does not name the problem");
		}
	} else {
		CU_ASSERT_PTR_NOT_NULL(m);
	}
	if (rc == 0)
		rr_manifest_destroy(m);
}

/* sample manifest, with from->to replaced in its text and the checksum recomputed */
static void s_expect_edit(const struct rr_manifest *m, const char *from, const char *to,
			  int want_rc, const char *want_why)
{
	char *text = s_to_json(m);
	char *edited = s_replace(text, from, to);
	char *sealed = s_reseal(edited);
	s_expect(sealed, want_rc, want_why);
	free(sealed);
	free(edited);
	free(text);
}

static void s_expect_path(const char *path, int want_rc)
{
	struct rr_manifest *m = s_one_file(path);
	char *text = s_to_json(m);
	s_expect(text, want_rc, want_rc == RR_EPATH ? "leaves the checkpoint directory" : NULL);
	free(text);
	rr_manifest_destroy(m);
}

static void s_assert_equal(const struct rr_manifest *a, const struct rr_manifest *b)
{
	CU_ASSERT_STRING_EQUAL(a->run_id, b->run_id);
	CU_ASSERT_STRING_EQUAL(a->checkpoint, b->checkpoint);
	CU_ASSERT((a->host == NULL) == (b->host == NULL));
	if (a->host && b->host)
		CU_ASSERT_STRING_EQUAL(a->host, b->host);
	CU_ASSERT_EQUAL(a->committed_unix_ms, b->committed_unix_ms);
	CU_ASSERT_EQUAL(a->created_unix_ms, b->created_unix_ms);
	CU_ASSERT_EQUAL_FATAL(a->nfiles, b->nfiles);
	for (size_t i = 0; i < a->nfiles; i++) {
		const struct rr_file_entry *fa = &a->files[i], *fb = &b->files[i];
		CU_ASSERT_STRING_EQUAL(fa->path, fb->path);
		CU_ASSERT_EQUAL(fa->mode, fb->mode);
		CU_ASSERT_EQUAL(fa->size, fb->size);
		CU_ASSERT_EQUAL_FATAL(fa->nsegs, fb->nsegs);
		for (size_t k = 0; k < fa->nsegs; k++) {
			const struct rr_segment *sa = &fa->segs[k], *sb = &fb->segs[k];
			CU_ASSERT_EQUAL(sa->offset, sb->offset);
			CU_ASSERT_EQUAL(sa->length, sb->length);
			CU_ASSERT_EQUAL(sa->encoding, sb->encoding);
			CU_ASSERT_STRING_EQUAL(sa->raw_sha256, sb->raw_sha256);
			CU_ASSERT_EQUAL_FATAL(sa->nchunks, sb->nchunks);
			for (size_t j = 0; j < sa->nchunks; j++) {
				CU_ASSERT_STRING_EQUAL(sa->chunks[j].sha256, sb->chunks[j].sha256);
				CU_ASSERT_EQUAL(sa->chunks[j].size, sb->chunks[j].size);
				CU_ASSERT_EQUAL(sa->chunks[j].stored_size,
						sb->chunks[j].stored_size);
			}
		}
	}
}

/* --- writing and reading back -------------------------------------------------------- */

static void test_roundtrip_multi_file_multi_segment_is_equal_field_by_field(void)
{
	struct rr_manifest *m = s_sample(), *back = NULL;
	char why[256] = "";
	char *text = s_to_json(m);

	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &back, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	s_assert_equal(m, back);
	CU_ASSERT_EQUAL(back->files[0].nsegs, 3);
	CU_ASSERT_EQUAL(back->files[0].segs[2].nchunks, 3);
	CU_ASSERT_EQUAL(back->files[1].mode, 0600);
	/* writing what was read gives the same bytes */
	char *again = s_to_json(back);
	CU_ASSERT_STRING_EQUAL(text, again);
	free(again);
	free(text);
	rr_manifest_destroy(back);
	rr_manifest_destroy(m);
}

static void test_to_json_writes_documented_shape_with_checksum_last(void)
{
	struct rr_manifest *m = s_new(1);
	char raw[RR_SHA256_HEX_LEN + 1], chunk[RR_SHA256_HEX_LEN + 1], expect[1024];
	char sum[RR_SHA256_HEX_LEN + 1];
	char *text;
	size_t n;

	s_file(&m->files[0], "model.safetensors", 12345, 1, 1);
	m->files[0].segs[0].chunks[0].stored_size = 6789;
	memcpy(raw, m->files[0].segs[0].raw_sha256, sizeof(raw));
	memcpy(chunk, m->files[0].segs[0].chunks[0].sha256, sizeof(chunk));
	snprintf(expect, sizeof(expect),
		 "{\"format\":\"resume-run/manifest-1\",\"run_id\":\"default\","
		 "\"checkpoint\":\"step-200\",\"host\":\"node-1\","
		 "\"committed_unix_ms\":1700000000000,\"created_unix_ms\":1700000000123,"
		 "\"files\":[{\"path\":\"model.safetensors\",\"mode\":420,\"size\":12345,"
		 "\"segments\":[{\"offset\":0,\"length\":12345,\"encoding\":\"zstd\","
		 "\"raw_sha256\":\"%s\",\"chunks\":[{\"sha256\":\"%s\",\"size\":12345,"
		 "\"stored_size\":6789}]}]}]}",
		 raw, chunk);
	rr_sha256_hex(expect, strlen(expect), sum);
	/* the checksum member goes last, over the text without it */
	n = strlen(expect);
	snprintf(expect + n - 1, sizeof(expect) - n + 1, ",\"checksum\":\"%s\"}\n", sum);
	text = s_to_json(m);
	CU_ASSERT_STRING_EQUAL(text, expect);
	free(text);

	/* no host: the member is left out */
	free(m->host);
	m->host = NULL;
	text = s_to_json(m);
	CU_ASSERT(strstr(text, "\"host\"") == NULL);
	struct rr_manifest *back = NULL;
	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &back, NULL, 0), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	CU_ASSERT_PTR_NULL(back->host);
	rr_manifest_destroy(back);
	free(text);
	rr_manifest_destroy(m);
}

static void test_to_json_appends_to_buffer(void)
{
	struct rr_manifest *m = s_sample();
	struct rr_buf b;

	rr_buf_init(&b, RR_MANIFEST_MAX_BYTES);
	CU_ASSERT_EQUAL(rr_buf_append(&b, "x", 1), 0);
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), 0);
	CU_ASSERT_EQUAL(b.data[0], 'x');
	CU_ASSERT_EQUAL(b.data[1], '{');
	CU_ASSERT_EQUAL(b.data[b.len - 1], '\n');
	rr_buf_free(&b);

	/* a buffer whose ceiling is too small is left unchanged */
	rr_buf_init(&b, 100);
	CU_ASSERT_EQUAL(rr_buf_append(&b, "x", 1), 0);
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), RR_ETOOBIG);
	CU_ASSERT_EQUAL(b.len, 1);
	rr_buf_free(&b);
	rr_manifest_destroy(m);
}

static void test_to_json_refuses_numbers_json_cannot_carry_exactly(void)
{
	struct rr_manifest *m = s_one_file("f");
	struct rr_buf b;

	rr_buf_init(&b, RR_MANIFEST_MAX_BYTES);
	m->created_unix_ms = -1;
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), RR_EINVAL);
	m->created_unix_ms = 0;
	/* 2^53 - 1 is a double, but cJSON prints it as 9.00719925474099e+15 */
	m->files[0].size = ((uint64_t)1 << 53) - 1;
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), RR_EINVAL);
	m->files[0].size = (uint64_t)1 << 60;
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), RR_EINVAL);
	m->files[0].size = 100;
	m->files[0].mode = 0100644;
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), RR_EINVAL);
	m->files[0].mode = 0644;
	free(m->run_id);
	m->run_id = NULL;
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), RR_EINVAL);
	CU_ASSERT_EQUAL(b.len, 0);
	rr_buf_free(&b);
	rr_manifest_destroy(m);
}

static void test_roundtrip_keeps_large_exact_integers(void)
{
	struct rr_manifest *m = s_new(1), *back = NULL;
	uint64_t big = ((uint64_t)1 << 52) + 1; /* prints exactly (via %1.17g) */
	char *text;

	s_file(&m->files[0], "huge.bin", big, 1, 1);
	/* one chunk cannot hold that much; the parser says so, the writer does not judge */
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "above the limit");
	free(text);
	rr_manifest_destroy(m);

	m = s_new(0);
	m->committed_unix_ms = (int64_t)big;
	m->created_unix_ms = 1000000000000001;
	text = s_to_json(m);
	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &back, NULL, 0), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	CU_ASSERT_EQUAL(back->committed_unix_ms, (int64_t)big);
	CU_ASSERT_EQUAL(back->created_unix_ms, 1000000000000001);
	rr_manifest_destroy(back);
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_accepts_pretty_printed_manifest(void)
{
	struct rr_manifest *m = s_sample(), *back = NULL;
	char *text = s_to_json(m);
	cJSON *root = cJSON_Parse(text);
	char *pretty = cJSON_Print(root);

	CU_ASSERT_FATAL(pretty != NULL);
	CU_ASSERT_EQUAL(rr_manifest_parse(pretty, strlen(pretty), &back, NULL, 0), 0);
	if (back)
		s_assert_equal(m, back);
	rr_manifest_destroy(back);
	free(pretty);
	cJSON_Delete(root);
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_accepts_zero_size_file(void)
{
	struct rr_manifest *m = s_new(1), *back = NULL;
	char *text;

	s_file(&m->files[0], "empty", 0, 0, 0);
	text = s_to_json(m);
	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &back, NULL, 0), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	CU_ASSERT_EQUAL(back->files[0].size, 0);
	CU_ASSERT_EQUAL(back->files[0].nsegs, 0);
	CU_ASSERT_PTR_NULL(back->files[0].segs);
	rr_manifest_destroy(back);
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_accepts_manifest_without_files(void)
{
	struct rr_manifest *m = s_new(0);
	char *text = s_to_json(m);
	s_expect(text, 0, NULL);
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_ignores_unknown_members_but_checksum_covers_them(void)
{
	struct rr_manifest *m = s_sample();
	char *text = s_to_json(m);
	char *edited = s_replace(text, "\"files\":[{", "\"future\":{\"x\":[1,2.5]},\"files\":[{\"tensors\":[],");
	char *sealed = s_reseal(edited);

	s_expect(sealed, 0, NULL);
	/* changing the unknown member after sealing is noticed */
	char *tampered = s_replace(sealed, "2.5", "3.5");
	s_expect(tampered, RR_ECORRUPT, "checksum");
	free(tampered);
	free(sealed);
	free(edited);
	free(text);
	rr_manifest_destroy(m);
}

/* --- checksum ------------------------------------------------------------------------ */

static void test_parse_refuses_one_edited_byte_with_checksum_mismatch(void)
{
	struct rr_manifest *m = s_sample();
	char *text = s_to_json(m);
	char *edited;

	edited = s_replace(text, "node-1", "node-2");
	s_expect(edited, RR_ECORRUPT, "checksum mismatch");
	free(edited);
	edited = s_replace(text, "\"size\":12345", "\"size\":12346");
	s_expect(edited, RR_ECORRUPT, "checksum");
	free(edited);
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_missing_or_malformed_checksum(void)
{
	struct rr_manifest *m = s_one_file("f");
	char *text = s_to_json(m);
	char *at = strstr(text, ",\"checksum\":\"");
	char *edited;

	CU_ASSERT_FATAL(at != NULL);
	edited = s_strdup(text);
	strcpy(edited + (at - text), "}");
	s_expect(edited, RR_ECORRUPT, "checksum is missing");
	free(edited);
	edited = s_replace(text, "\"checksum\":\"", "\"checksum\":\"X");
	s_expect(edited, RR_ECORRUPT, "checksum");
	free(edited);
	edited = s_replace(text, "\"checksum\":\"", "\"checksum\":7,\"x\":\"");
	s_expect(edited, RR_ECORRUPT, "checksum is not a string");
	free(edited);
	/* upper-case hex is not the canonical form */
	char upper[RR_SHA256_HEX_LEN + 1];
	memcpy(upper, at + 13, RR_SHA256_HEX_LEN);
	upper[RR_SHA256_HEX_LEN] = '\0';
	for (char *p = upper; *p; p++)
		if (*p >= 'a' && *p <= 'f')
			*p = (char)(*p - 'a' + 'A');
	char lower[RR_SHA256_HEX_LEN + 1];
	memcpy(lower, at + 13, RR_SHA256_HEX_LEN);
	lower[RR_SHA256_HEX_LEN] = '\0';
	if (strcmp(upper, lower) != 0) {
		edited = s_replace(text, lower, upper);
		s_expect(edited, RR_ECORRUPT, "hex");
		free(edited);
	}
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_duplicate_member(void)
{
	struct rr_manifest *m = s_one_file("f");
	s_expect_edit(m, "\"path\":\"f\"", "\"path\":\"f\",\"path\":\"../x\"", RR_ECORRUPT,
		      "\"path\" appears twice");
	s_expect_edit(m, "\"run_id\":\"default\"", "\"run_id\":\"default\",\"run_id\":\"x\"",
		      RR_ECORRUPT, "appears twice");
	rr_manifest_destroy(m);
}

/* --- paths --------------------------------------------------------------------------- */

static void test_parse_refuses_dotdot_path(void)
{
	/* the writer does not check paths, so this manifest carries a valid checksum */
	struct rr_manifest *m = s_one_file("../evil");
	char *text = s_to_json(m);
	s_expect(text, RR_EPATH, "file 0: path \"../evil\" leaves the checkpoint directory");
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_unsafe_paths(void)
{
	s_expect_path("/etc/passwd", RR_EPATH);
	s_expect_path("a/../b", RR_EPATH);
	s_expect_path("a/..", RR_EPATH);
	s_expect_path("a//b", RR_EPATH);
	s_expect_path("./a", RR_EPATH);
	s_expect_path("a/./b", RR_EPATH);
	s_expect_path("a/", RR_EPATH);
	s_expect_path("a\\..\\b", RR_EPATH);
	s_expect_path("a\nb", RR_EPATH);
	s_expect_path("a\x7f", RR_EPATH);
	s_expect_path("", RR_EPATH);
	s_expect_path("..", RR_EPATH);
	s_expect_path("...", 0);
	s_expect_path("a/.b/c..d", 0);
}

static void test_parse_reason_escapes_control_characters(void)
{
	struct rr_manifest *m = s_one_file("x\ny");
	struct rr_manifest *out = NULL;
	char why[256];
	char *text = s_to_json(m);

	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &out, why, sizeof(why)), RR_EPATH);
	CU_ASSERT(strchr(why, '\n') == NULL);
	CU_ASSERT(strstr(why, "x\\x0ay") != NULL);
	/* a tiny reason buffer is cut, not overrun */
	char small[8];
	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &out, small, sizeof(small)),
			RR_EPATH);
	CU_ASSERT_EQUAL(strlen(small), sizeof(small) - 1);
	free(text);
	rr_manifest_destroy(m);
}

static void test_path_is_safe_cases(void)
{
	char long_path[4200];

	CU_ASSERT(rr_path_is_safe("a"));
	CU_ASSERT(rr_path_is_safe("a/b/c.safetensors"));
	CU_ASSERT(rr_path_is_safe("..a/b.."));
	CU_ASSERT(rr_path_is_safe("caf\xc3\xa9"));
	CU_ASSERT(!rr_path_is_safe(NULL));
	CU_ASSERT(!rr_path_is_safe(""));
	CU_ASSERT(!rr_path_is_safe("/a"));
	CU_ASSERT(!rr_path_is_safe("a/../b"));
	CU_ASSERT(!rr_path_is_safe(".."));
	CU_ASSERT(!rr_path_is_safe("../x"));
	CU_ASSERT(!rr_path_is_safe("."));
	CU_ASSERT(!rr_path_is_safe("./a"));
	CU_ASSERT(!rr_path_is_safe("a/."));
	CU_ASSERT(!rr_path_is_safe("a//b"));
	CU_ASSERT(!rr_path_is_safe("a/"));
	CU_ASSERT(!rr_path_is_safe("a\\b"));
	CU_ASSERT(!rr_path_is_safe("a\tb"));
	CU_ASSERT(!rr_path_is_safe("a\x1f"));
	memset(long_path, 'a', sizeof(long_path));
	long_path[4096] = '\0';
	CU_ASSERT(rr_path_is_safe(long_path));
	long_path[4096] = 'a';
	long_path[4097] = '\0';
	CU_ASSERT(!rr_path_is_safe(long_path));
}

static void test_parse_refuses_duplicate_path(void)
{
	struct rr_manifest *m = s_new(3);
	char *text;

	s_file(&m->files[0], "a", 10, 1, 1);
	s_file(&m->files[1], "b", 10, 1, 1);
	s_file(&m->files[2], "a", 20, 1, 1);
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "file 2: path \"a\" is also file 0's");
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_file_that_is_also_a_directory(void)
{
	struct rr_manifest *m = s_new(3);
	char *text;

	/* "a-b" sorts between "a" and "a/b" byte-wise; the check must still see them */
	s_file(&m->files[0], "a/b", 10, 1, 1);
	s_file(&m->files[1], "a-b", 10, 1, 1);
	s_file(&m->files[2], "a", 10, 1, 1);
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "is inside file 2's path \"a\"");
	free(text);
	rr_manifest_destroy(m);

	m = s_new(2);
	s_file(&m->files[0], "x/y", 10, 1, 1);
	s_file(&m->files[1], "x/y/z/w", 10, 1, 1);
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "not a directory");
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_accepts_names_sharing_a_prefix(void)
{
	struct rr_manifest *m = s_new(5);
	char *text;

	s_file(&m->files[0], "a", 10, 1, 1);
	s_file(&m->files[1], "ab", 10, 1, 1);
	s_file(&m->files[2], "a-b/c", 10, 1, 1);
	s_file(&m->files[3], "b/a", 10, 1, 1);
	s_file(&m->files[4], "b/a.1", 10, 1, 1);
	text = s_to_json(m);
	s_expect(text, 0, NULL);
	free(text);
	rr_manifest_destroy(m);
}

/* --- segments and chunks ------------------------------------------------------------- */

static void test_parse_refuses_gap_between_segments(void)
{
	struct rr_manifest *m = s_new(1);
	char *text;

	s_file(&m->files[0], "f", 300, 3, 1);
	m->files[0].segs[1].offset += 1;
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "file 0 segment 1: offset 101 leaves a gap (expected 100)");
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_overlapping_segments(void)
{
	struct rr_manifest *m = s_new(1);
	char *text;

	s_file(&m->files[0], "f", 300, 3, 1);
	m->files[0].segs[2].offset -= 1;
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "file 0 segment 2: offset 199 overlaps");
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_first_segment_not_at_zero(void)
{
	struct rr_manifest *m = s_new(1);
	char *text;

	s_file(&m->files[0], "f", 300, 1, 1);
	m->files[0].segs[0].offset = 1;
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "segment 0: offset 1 leaves a gap (expected 0)");
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_segments_not_covering_the_file(void)
{
	struct rr_manifest *m = s_new(1);
	char *text;

	s_file(&m->files[0], "f", 300, 3, 1);
	m->files[0].size = 301;
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "segments cover 300 of its 301 bytes");
	free(text);
	m->files[0].size = 299;
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "past the file size 299");
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_zero_length_segment(void)
{
	struct rr_manifest *m = s_new(1);
	s_file(&m->files[0], "f", 300, 1, 1);
	s_expect_edit(m, "\"length\":300", "\"length\":0", RR_ECORRUPT, "\"length\" is 0");
	rr_manifest_destroy(m);
}

static void test_parse_refuses_empty_file_with_segments_and_full_file_without(void)
{
	struct rr_manifest *m = s_new(1);
	char *text;

	s_file(&m->files[0], "f", 300, 1, 1);
	m->files[0].size = 0;
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "is empty but has 1 segments");
	free(text);
	rr_manifest_destroy(m);

	m = s_new(1);
	s_file(&m->files[0], "f", 0, 0, 0);
	m->files[0].size = 5;
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "has 5 bytes but no segments");
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_chunk_sizes_not_adding_up(void)
{
	struct rr_manifest *m = s_new(1);
	char *text;

	s_file(&m->files[0], "f", 300, 1, 3);
	m->files[0].segs[0].chunks[1].size += 1;
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "chunk sizes add up to 301, not the length 300");
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_segment_without_chunks(void)
{
	struct rr_manifest *m = s_new(1);
	char *text;

	s_file(&m->files[0], "f", 300, 1, 1);
	m->files[0].segs[0].nchunks = 0;
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "has no chunks");
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_chunk_size_limits(void)
{
	struct rr_manifest *m = s_new(1);
	char *text, big[32];

	s_file(&m->files[0], "f", 300, 1, 1);
	m->files[0].segs[0].chunks[0].stored_size = 777;
	s_expect_edit(m, "\"size\":300,\"stored", "\"size\":0,\"stored", RR_ECORRUPT,
		      "chunk 0: \"size\" is 0");
	s_expect_edit(m, "\"stored_size\":777", "\"stored_size\":0", RR_ECORRUPT,
		      "\"stored_size\" is 0");
	snprintf(big, sizeof(big), "\"stored_size\":%llu",
		 (unsigned long long)RR_CHUNK_MAX_RAW * 2 + 1);
	s_expect_edit(m, "\"stored_size\":777", big, RR_ECORRUPT, "above the limit");
	rr_manifest_destroy(m);

	m = s_new(1);
	s_file(&m->files[0], "f", (uint64_t)RR_CHUNK_MAX_RAW + 1, 1, 1);
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "chunk 0: \"size\" is 67108865, above the limit 67108864");
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_unknown_encoding_naming_it(void)
{
	struct rr_manifest *m = s_one_file("f");
	s_expect_edit(m, "\"encoding\":\"zstd\"", "\"encoding\":\"lz4\"", RR_ECORRUPT,
		      "unknown encoding \"lz4\"");
	s_expect_edit(m, "\"encoding\":\"zstd\"", "\"encoding\":3", RR_ECORRUPT,
		      "\"encoding\" is not a string");
	rr_manifest_destroy(m);
}

static void test_parse_refuses_bad_hex(void)
{
	struct rr_manifest *m = s_one_file("f");
	char *text;

	m->files[0].segs[0].raw_sha256[10] = 'G';
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "\"raw_sha256\"");
	free(text);
	s_hex("x", m->files[0].segs[0].raw_sha256);
	m->files[0].segs[0].chunks[0].sha256[63] = '\0';
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "\"sha256\"");
	free(text);
	rr_manifest_destroy(m);
}

/* --- numbers ------------------------------------------------------------------------- */

static void test_parse_refuses_non_integral_negative_and_huge_sizes(void)
{
	struct rr_manifest *m = s_new(1);
	s_file(&m->files[0], "f", 4321, 1, 1);

	s_expect_edit(m, "\"size\":4321,\"segments\"", "\"size\":4321.5,\"segments\"",
		      RR_ECORRUPT, "not an integer");
	s_expect_edit(m, "\"size\":4321,\"segments\"", "\"size\":-4321,\"segments\"",
		      RR_ECORRUPT, "negative");
	s_expect_edit(m, "\"size\":4321,\"segments\"",
		      "\"size\":1152921504606846976,\"segments\"", RR_ECORRUPT,
		      "\"size\" is 1152921504606846976, above the limit 9007199254740992");
	s_expect_edit(m, "\"size\":4321,\"segments\"", "\"size\":1e400,\"segments\"",
		      RR_ECORRUPT, "not a finite number");
	s_expect_edit(m, "\"size\":4321,\"segments\"", "\"size\":1e300,\"segments\"",
		      RR_ECORRUPT, "\"size\" is 1e+300, above");
	s_expect_edit(m, "\"size\":4321,\"segments\"", "\"size\":\"4321\",\"segments\"",
		      RR_ECORRUPT, "\"size\" is not a number");
	s_expect_edit(m, "\"size\":4321,\"segments\"", "\"size\":true,\"segments\"",
		      RR_ECORRUPT, "\"size\" is not a number");
	s_expect_edit(m, "\"size\":4321,\"segments\"", "\"segments\"", RR_ECORRUPT,
		      "file 0: \"size\" is missing");
	/* below 2^53 but printed inexactly by cJSON: would not read back the same */
	s_expect_edit(m, "\"size\":4321,\"segments\"", "\"size\":9007199254740991,\"segments\"",
		      RR_ECORRUPT, "cannot be written back exactly");
	s_expect_edit(m, "\"offset\":0", "\"offset\":-0.5", RR_ECORRUPT, "negative");
	s_expect_edit(m, "\"committed_unix_ms\":1700000000000", "\"committed_unix_ms\":-1",
		      RR_ECORRUPT, "\"committed_unix_ms\" is negative");
	s_expect_edit(m, "\"created_unix_ms\":1700000000123", "\"created_unix_ms\":1e20",
		      RR_ECORRUPT, "\"created_unix_ms\" is 100000000000000000000, above the limit");
	/* -0 is zero */
	s_expect_edit(m, "\"offset\":0", "\"offset\":-0", 0, NULL);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_mode_above_07777(void)
{
	struct rr_manifest *m = s_one_file("f");
	s_expect_edit(m, "\"mode\":420", "\"mode\":33188", RR_ECORRUPT,
		      "\"mode\" is 33188, above the limit 4095");
	s_expect_edit(m, "\"mode\":420", "\"mode\":4095", 0, NULL);
	rr_manifest_destroy(m);
}

/* --- shape and names ----------------------------------------------------------------- */

static void test_parse_refuses_wrong_types(void)
{
	struct rr_manifest *m = s_one_file("f");
	s_expect_edit(m, "\"files\":[", "\"files\":5,\"later\":[", RR_ECORRUPT,
		      "\"files\" is not an array");
	s_expect_edit(m, "\"path\":\"f\"", "\"path\":1", RR_ECORRUPT, "\"path\" is not a string");
	s_expect_edit(m, "\"files\":[{", "\"files\":[7,{", RR_ECORRUPT, "file 0: is not an object");
	s_expect_edit(m, "\"segments\":[", "\"segments\":[null,", RR_ECORRUPT,
		      "segment 0: is not an object");
	s_expect_edit(m, "\"chunks\":[", "\"chunks\":[\"x\",", RR_ECORRUPT,
		      "chunk 0: is not an object");
	s_expect_edit(m, "\"chunks\":[", "\"chunks\":5,\"x\":[", RR_ECORRUPT,
		      "\"chunks\" is not an array");
	s_expect_edit(m, "\"host\":\"node-1\"", "\"host\":5", RR_ECORRUPT,
		      "\"host\" is not a string");
	s_expect_edit(m, "\"host\":\"node-1\"", "\"host\":null", 0, NULL);
	s_expect_edit(m, "\"run_id\":\"default\",", "", RR_ECORRUPT, "\"run_id\" is missing");
	rr_manifest_destroy(m);
}

static void test_parse_refuses_bad_run_id_and_checkpoint(void)
{
	struct rr_manifest *m = s_one_file("f");
	char long_id[300];

	s_expect_edit(m, "\"run_id\":\"default\"", "\"run_id\":\"\"", RR_ECORRUPT, "run_id");
	s_expect_edit(m, "\"run_id\":\"default\"", "\"run_id\":\"a\\u0001b\"", RR_ECORRUPT,
		      "control characters");
	snprintf(long_id, sizeof(long_id), "\"run_id\":\"%0256d\"", 0);
	s_expect_edit(m, "\"run_id\":\"default\"", long_id, RR_ECORRUPT, "run_id");
	s_expect_edit(m, "\"checkpoint\":\"step-200\"", "\"checkpoint\":\"../x\"", RR_ECORRUPT,
		      "checkpoint name \"../x\" is not valid");
	s_expect_edit(m, "\"checkpoint\":\"step-200\"", "\"checkpoint\":\".hidden\"",
		      RR_ECORRUPT, "checkpoint name");
	rr_manifest_destroy(m);
}

static void test_parse_refuses_bad_format_and_not_json(void)
{
	struct rr_manifest *m = s_one_file("f");
	char *text = s_to_json(m);
	char *t;

	s_expect_edit(m, "manifest-1", "manifest-2", RR_ECORRUPT,
		      "format \"resume-run/manifest-2\" is not");
	s_expect("", RR_ECORRUPT, "not valid JSON");
	s_expect("[1,2]", RR_ECORRUPT, "not a JSON object");
	s_expect("{\"format\":\"resume-run/manifest-1\"", RR_ECORRUPT, "not valid JSON");
	s_expect("{}", RR_ECORRUPT, "\"format\" is missing");
	/* truncated in the middle */
	t = s_strdup(text);
	t[strlen(t) / 2] = '\0';
	s_expect(t, RR_ECORRUPT, "not valid JSON");
	free(t);
	/* garbage after the object */
	t = s_replace(text, "\n", "\n{}");
	s_expect(t, RR_ECORRUPT, "data after its JSON value");
	free(t);
	/* trailing whitespace is fine */
	t = s_replace(text, "\n", " \r\n\t\n");
	s_expect(t, 0, NULL);
	free(t);
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_deep_nesting(void)
{
	size_t depth = 5000;
	char *t = malloc(2 * depth + 64);
	size_t n = 0;

	CU_ASSERT_FATAL(t != NULL);
	n += (size_t)sprintf(t, "{\"x\":");
	for (size_t i = 0; i < depth; i++)
		t[n++] = '[';
	for (size_t i = 0; i < depth; i++)
		t[n++] = ']';
	strcpy(t + n, "}");
	s_expect(t, RR_ECORRUPT, "not valid JSON");
	free(t);
}

static void test_parse_refuses_nul_characters(void)
{
	struct rr_manifest *m = s_one_file("f"), *out = NULL;
	char *text = s_to_json(m);
	size_t n = strlen(text);
	char *t = malloc(n + 4);

	CU_ASSERT_FATAL(t != NULL);
	memcpy(t, text, n);
	memcpy(t + n, "\0{}", 3);
	CU_ASSERT_EQUAL(rr_manifest_parse(t, n + 3, &out, NULL, 0), RR_ECORRUPT);
	CU_ASSERT_EQUAL(rr_manifest_parse(t, n, &out, NULL, 0), 0);
	rr_manifest_destroy(out);
	free(t);
	free(text);

	/* cJSON would read "f\u0000/../x" as "f"; other readers would not */
	s_expect_edit(m, "\"path\":\"f\"", "\"path\":\"f\\u0000/../x\"", RR_ECORRUPT,
		      "NUL character");
	s_expect_edit(m, "\"run_id\":\"default\"", "\"run_id\":\"\\\\\\u0000\"", RR_ECORRUPT,
		      "NUL character");
	/* an escaped backslash followed by the text u0000 is no NUL */
	s_expect_edit(m, "\"run_id\":\"default\"", "\"run_id\":\"\\\\u0000\"", 0, NULL);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_too_large_input(void)
{
	size_t n = (size_t)RR_MANIFEST_MAX_BYTES + 1;
	char *big = malloc(n);
	struct rr_manifest *out = NULL;
	char why[256];

	CU_ASSERT_FATAL(big != NULL);
	memset(big, ' ', n);
	CU_ASSERT_EQUAL(rr_manifest_parse(big, n, &out, why, sizeof(why)), RR_ETOOBIG);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT(strstr(why, "ceiling") != NULL);
	free(big);
}

/* a resealed manifest whose one segment array / files array has count+1 empty entries */
static char *s_many(const char *from, const char *prefix, size_t count)
{
	struct rr_manifest *m = s_one_file("f");
	char *text = s_to_json(m);
	char *list = malloc(strlen(prefix) + 3 * count + 8);
	char *edited, *sealed;
	size_t n;

	CU_ASSERT_FATAL(list != NULL);
	n = (size_t)sprintf(list, "%s", prefix);
	for (size_t i = 0; i < count; i++) {
		memcpy(list + n, "{},", 3);
		n += 3;
	}
	list[n] = '\0';
	edited = s_replace(text, from, list);
	sealed = s_reseal(edited);
	free(edited);
	free(list);
	free(text);
	rr_manifest_destroy(m);
	return sealed;
}

static void test_parse_refuses_more_than_a_million_files_or_chunks(void)
{
	char *t = s_many("\"files\":[", "\"files\":[", 1000000);
	s_expect(t, RR_ETOOBIG, "more than 1000000");
	free(t);
	t = s_many("\"chunks\":[", "\"chunks\":[", 1000000);
	s_expect(t, RR_ETOOBIG, "more than 1000000 chunks");
	free(t);
	t = s_many("\"segments\":[", "\"segments\":[", 1000000);
	s_expect(t, RR_ETOOBIG, "more than 1000000 chunks");
	free(t);
}

static void test_parse_refuses_bad_arguments(void)
{
	struct rr_manifest *out = NULL;
	CU_ASSERT_EQUAL(rr_manifest_parse("{}", 2, NULL, NULL, 0), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_manifest_parse(NULL, 5, &out, NULL, 0), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_manifest_parse(NULL, 0, &out, NULL, 0), RR_ECORRUPT);
	rr_manifest_destroy(NULL);
}

static void test_totals_count_sizes_and_every_chunk_reference(void)
{
	struct rr_manifest *m = s_sample();
	uint64_t stored = 0;

	for (size_t i = 0; i < m->nfiles; i++)
		for (size_t k = 0; k < m->files[i].nsegs; k++)
			for (size_t j = 0; j < m->files[i].segs[k].nchunks; j++)
				stored += m->files[i].segs[k].chunks[j].stored_size;
	CU_ASSERT_EQUAL(rr_manifest_total_size(m), 25000000 + 12345);
	CU_ASSERT_EQUAL(rr_manifest_total_stored(m), stored);
	CU_ASSERT_EQUAL(rr_manifest_total_size(NULL), 0);
	CU_ASSERT_EQUAL(rr_manifest_total_stored(NULL), 0);
	rr_manifest_destroy(m);
}

static void test_checkpoint_name_valid_cases(void)
{
	char name[300];

	CU_ASSERT(rr_checkpoint_name_valid("step-200"));
	CU_ASSERT(rr_checkpoint_name_valid("a..b"));
	CU_ASSERT(rr_checkpoint_name_valid("20240101T000000Z_epoch 3"));
	CU_ASSERT(!rr_checkpoint_name_valid(NULL));
	CU_ASSERT(!rr_checkpoint_name_valid(""));
	CU_ASSERT(!rr_checkpoint_name_valid("."));
	CU_ASSERT(!rr_checkpoint_name_valid(".."));
	CU_ASSERT(!rr_checkpoint_name_valid(".hidden"));
	CU_ASSERT(!rr_checkpoint_name_valid("../x"));
	CU_ASSERT(!rr_checkpoint_name_valid("a/b"));
	CU_ASSERT(!rr_checkpoint_name_valid("a\nb"));
	CU_ASSERT(!rr_checkpoint_name_valid("a\x7f"));
	memset(name, 'n', sizeof(name));
	name[255] = '\0';
	CU_ASSERT(rr_checkpoint_name_valid(name));
	name[255] = 'n';
	name[256] = '\0';
	CU_ASSERT(!rr_checkpoint_name_valid(name));
}

static void test_encoding_names_round_trip(void)
{
	enum rr_encoding e = (enum rr_encoding)42;
	CU_ASSERT_STRING_EQUAL(rr_encoding_name(RR_ENC_ZSTD), "zstd");
	CU_ASSERT_EQUAL(rr_encoding_from_name("zstd", &e), 0);
	CU_ASSERT_EQUAL(e, RR_ENC_ZSTD);
	CU_ASSERT_PTR_NULL(rr_encoding_name((enum rr_encoding)99));
	CU_ASSERT_NOT_EQUAL(rr_encoding_from_name("ZSTD", &e), 0);
	CU_ASSERT_NOT_EQUAL(rr_encoding_from_name("", &e), 0);
	CU_ASSERT_NOT_EQUAL(rr_encoding_from_name(NULL, &e), 0);
}

/* --- LATEST -------------------------------------------------------------------------- */

static void test_latest_round_trip(void)
{
	struct rr_buf b;
	char name[256];

	rr_buf_init(&b, 1 << 16);
	CU_ASSERT_EQUAL(rr_latest_to_json("step-200", 1700000000000, "node-1", &b), 0);
	CU_ASSERT_STRING_EQUAL((const char *)b.data,
			       "{\"checkpoint\":\"step-200\",\"updated_unix_ms\":1700000000000,"
			       "\"host\":\"node-1\"}\n");
	CU_ASSERT_EQUAL(rr_latest_parse((const char *)b.data, b.len, name, sizeof(name)), 0);
	CU_ASSERT_STRING_EQUAL(name, "step-200");
	rr_buf_reset(&b);
	CU_ASSERT_EQUAL(rr_latest_to_json("s", 5, NULL, &b), 0);
	CU_ASSERT_STRING_EQUAL((const char *)b.data, "{\"checkpoint\":\"s\",\"updated_unix_ms\":5}\n");
	CU_ASSERT_EQUAL(rr_latest_parse((const char *)b.data, b.len, name, sizeof(name)), 0);
	CU_ASSERT_STRING_EQUAL(name, "s");
	/* the writer refuses what nobody could read back */
	CU_ASSERT_EQUAL(rr_latest_to_json("../x", 5, NULL, &b), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_latest_to_json("s", -5, NULL, &b), RR_EINVAL);
	rr_buf_free(&b);
}

static void test_latest_refuses_bad_names(void)
{
	static const char *const bad[] = {
		"{\"checkpoint\":\"../x\"}",
		"{\"checkpoint\":\".hidden\"}",
		"{\"checkpoint\":\"a/b\"}",
		"{\"checkpoint\":\"\"}",
		"{\"checkpoint\":\"a\\nb\"}",
		"{\"checkpoint\":5}",
		"{\"updated_unix_ms\":5}",
		"{\"checkpoint\":\"a\",\"checkpoint\":\"b\"}",
		"[\"checkpoint\"]",
		"{\"checkpoint\":\"a\"",
		"{\"checkpoint\":\"a\"} x",
		"",
	};
	char name[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		strcpy(name, "unchanged");
		CU_ASSERT_EQUAL(rr_latest_parse(bad[i], strlen(bad[i]), name, sizeof(name)),
				RR_ECORRUPT);
		CU_ASSERT_STRING_EQUAL(name, "");
	}
	/* other members are a hint's business, not ours */
	const char *ok = "{\"checkpoint\":\"c\",\"updated_unix_ms\":\"soon\",\"x\":[]}";
	CU_ASSERT_EQUAL(rr_latest_parse(ok, strlen(ok), name, sizeof(name)), 0);
	CU_ASSERT_STRING_EQUAL(name, "c");
}

static void test_latest_name_that_does_not_fit_is_too_big(void)
{
	const char *t = "{\"checkpoint\":\"step-200\"}";
	char name[9];

	CU_ASSERT_EQUAL(rr_latest_parse(t, strlen(t), name, 8), RR_ETOOBIG);
	CU_ASSERT_EQUAL(rr_latest_parse(t, strlen(t), name, 9), 0);
	CU_ASSERT_STRING_EQUAL(name, "step-200");
	CU_ASSERT_EQUAL(rr_latest_parse(t, strlen(t), name, 0), RR_ETOOBIG);
	CU_ASSERT_EQUAL(rr_latest_parse(t, strlen(t), NULL, 9), RR_EINVAL);
}

static void test_latest_refuses_input_above_64k(void)
{
	size_t n = (64u << 10) + 1;
	char *t = malloc(n);
	char name[256];

	CU_ASSERT_FATAL(t != NULL);
	memset(t, ' ', n);
	memcpy(t, "{\"checkpoint\":\"a\"}", 18);
	CU_ASSERT_EQUAL(rr_latest_parse(t, n, name, sizeof(name)), RR_ETOOBIG);
	CU_ASSERT_EQUAL(rr_latest_parse(t, n - 1, name, sizeof(name)), 0);
	free(t);
}

static CU_TestInfo s_tests[] = {
	{ "test_roundtrip_multi_file_multi_segment_is_equal_field_by_field",
	  test_roundtrip_multi_file_multi_segment_is_equal_field_by_field },
	{ "test_to_json_writes_documented_shape_with_checksum_last",
	  test_to_json_writes_documented_shape_with_checksum_last },
	{ "test_to_json_appends_to_buffer", test_to_json_appends_to_buffer },
	{ "test_to_json_refuses_numbers_json_cannot_carry_exactly",
	  test_to_json_refuses_numbers_json_cannot_carry_exactly },
	{ "test_roundtrip_keeps_large_exact_integers", test_roundtrip_keeps_large_exact_integers },
	{ "test_parse_accepts_pretty_printed_manifest", test_parse_accepts_pretty_printed_manifest },
	{ "test_parse_accepts_zero_size_file", test_parse_accepts_zero_size_file },
	{ "test_parse_accepts_manifest_without_files", test_parse_accepts_manifest_without_files },
	{ "test_parse_ignores_unknown_members_but_checksum_covers_them",
	  test_parse_ignores_unknown_members_but_checksum_covers_them },
	{ "test_parse_refuses_one_edited_byte_with_checksum_mismatch",
	  test_parse_refuses_one_edited_byte_with_checksum_mismatch },
	{ "test_parse_refuses_missing_or_malformed_checksum",
	  test_parse_refuses_missing_or_malformed_checksum },
	{ "test_parse_refuses_duplicate_member", test_parse_refuses_duplicate_member },
	{ "test_parse_refuses_dotdot_path", test_parse_refuses_dotdot_path },
	{ "test_parse_refuses_unsafe_paths", test_parse_refuses_unsafe_paths },
	{ "test_parse_reason_escapes_control_characters",
	  test_parse_reason_escapes_control_characters },
	{ "test_path_is_safe_cases", test_path_is_safe_cases },
	{ "test_parse_refuses_duplicate_path", test_parse_refuses_duplicate_path },
	{ "test_parse_refuses_file_that_is_also_a_directory",
	  test_parse_refuses_file_that_is_also_a_directory },
	{ "test_parse_accepts_names_sharing_a_prefix", test_parse_accepts_names_sharing_a_prefix },
	{ "test_parse_refuses_gap_between_segments", test_parse_refuses_gap_between_segments },
	{ "test_parse_refuses_overlapping_segments", test_parse_refuses_overlapping_segments },
	{ "test_parse_refuses_first_segment_not_at_zero",
	  test_parse_refuses_first_segment_not_at_zero },
	{ "test_parse_refuses_segments_not_covering_the_file",
	  test_parse_refuses_segments_not_covering_the_file },
	{ "test_parse_refuses_zero_length_segment", test_parse_refuses_zero_length_segment },
	{ "test_parse_refuses_empty_file_with_segments_and_full_file_without",
	  test_parse_refuses_empty_file_with_segments_and_full_file_without },
	{ "test_parse_refuses_chunk_sizes_not_adding_up",
	  test_parse_refuses_chunk_sizes_not_adding_up },
	{ "test_parse_refuses_segment_without_chunks", test_parse_refuses_segment_without_chunks },
	{ "test_parse_refuses_chunk_size_limits", test_parse_refuses_chunk_size_limits },
	{ "test_parse_refuses_unknown_encoding_naming_it",
	  test_parse_refuses_unknown_encoding_naming_it },
	{ "test_parse_refuses_bad_hex", test_parse_refuses_bad_hex },
	{ "test_parse_refuses_non_integral_negative_and_huge_sizes",
	  test_parse_refuses_non_integral_negative_and_huge_sizes },
	{ "test_parse_refuses_mode_above_07777", test_parse_refuses_mode_above_07777 },
	{ "test_parse_refuses_wrong_types", test_parse_refuses_wrong_types },
	{ "test_parse_refuses_bad_run_id_and_checkpoint",
	  test_parse_refuses_bad_run_id_and_checkpoint },
	{ "test_parse_refuses_bad_format_and_not_json", test_parse_refuses_bad_format_and_not_json },
	{ "test_parse_refuses_deep_nesting", test_parse_refuses_deep_nesting },
	{ "test_parse_refuses_nul_characters", test_parse_refuses_nul_characters },
	{ "test_parse_refuses_too_large_input", test_parse_refuses_too_large_input },
	{ "test_parse_refuses_more_than_a_million_files_or_chunks",
	  test_parse_refuses_more_than_a_million_files_or_chunks },
	{ "test_parse_refuses_bad_arguments", test_parse_refuses_bad_arguments },
	{ "test_totals_count_sizes_and_every_chunk_reference",
	  test_totals_count_sizes_and_every_chunk_reference },
	{ "test_checkpoint_name_valid_cases", test_checkpoint_name_valid_cases },
	{ "test_encoding_names_round_trip", test_encoding_names_round_trip },
	{ "test_latest_round_trip", test_latest_round_trip },
	{ "test_latest_refuses_bad_names", test_latest_refuses_bad_names },
	{ "test_latest_name_that_does_not_fit_is_too_big",
	  test_latest_name_that_does_not_fit_is_too_big },
	{ "test_latest_refuses_input_above_64k", test_latest_refuses_input_above_64k },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("manifest", s_tests)
