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

/* A zstd segment of nchunks chunks; each chunk but the last holds a multiple of width
 * bytes (length / nchunks rounded down to it), the last the rest. */
static struct rr_segment s_seg_w(uint64_t offset, uint64_t length, const char *seed,
				 size_t nchunks, unsigned width)
{
	struct rr_segment sg;
	uint64_t left = length, each = nchunks ? length / nchunks / width * width : 0;

	memset(&sg, 0, sizeof(sg));
	sg.offset = offset;
	sg.length = length;
	sg.encoding = RR_ENC_ZSTD;
	sg.nchunks = nchunks;
	sg.chunks = calloc(nchunks ? nchunks : 1, sizeof(*sg.chunks));
	CU_ASSERT_FATAL(sg.chunks != NULL);
	for (size_t k = 0; k < nchunks; k++) {
		char cseed[80];
		snprintf(cseed, sizeof(cseed), "%s/%zu", seed, k);
		s_hex(cseed, sg.chunks[k].sha256);
		rr_xxh128_hex(cseed, strlen(cseed), sg.chunks[k].raw_xxh128);
		sg.chunks[k].size = k + 1 < nchunks ? each : left;
		left -= sg.chunks[k].size;
		sg.chunks[k].stored_size = sg.chunks[k].size / 2 + 1;
	}
	return sg;
}

static struct rr_segment s_seg(uint64_t offset, uint64_t length, const char *seed,
			       size_t nchunks)
{
	return s_seg_w(offset, length, seed, nchunks, 1);
}

/* Bits per element of the dtypes the tests use. */
static unsigned s_bits(const char *dtype)
{
	if (strcmp(dtype, "F4") == 0)
		return 4;
	if (strncmp(dtype, "F6_", 3) == 0)
		return 6;
	if (strcmp(dtype, "BOOL") == 0 || strcmp(dtype, "U8") == 0 || strcmp(dtype, "I8") == 0)
		return 8;
	if (strcmp(dtype, "F16") == 0 || strcmp(dtype, "BF16") == 0 || strcmp(dtype, "I16") == 0)
		return 16;
	if (strcmp(dtype, "F32") == 0 || strcmp(dtype, "I32") == 0)
		return 32;
	return 64;
}

/* A tensor segment: its length is what the shape holds, its chunks whole elements. */
static struct rr_segment s_tseg(uint64_t offset, enum rr_encoding enc, const char *name,
				const char *dtype, const uint64_t *shape, unsigned ndim,
				int scale_exp, size_t nchunks)
{
	struct rr_segment sg;
	unsigned bits = s_bits(dtype);
	uint64_t elems = 1;

	for (unsigned i = 0; i < ndim; i++)
		elems *= shape[i];
	sg = s_seg_w(offset, elems * bits / 8, name, nchunks, bits % 8 ? 1 : bits / 8);
	sg.encoding = enc;
	sg.tensor = s_strdup(name);
	snprintf(sg.dtype, sizeof(sg.dtype), "%s", dtype);
	sg.ndim = ndim;
	if (ndim) {
		sg.shape = calloc(ndim, sizeof(*sg.shape));
		CU_ASSERT_FATAL(sg.shape != NULL);
		memcpy(sg.shape, shape, ndim * sizeof(*shape));
	}
	sg.scale_exp = scale_exp;
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

#define S_DIMS(...) ((const uint64_t[]){ __VA_ARGS__ }), \
	(unsigned)(sizeof((const uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t))

/* A safetensors file as persist writes it: the header as a zstd segment, then one segment
 * per tensor, every tensor encoding and the odd dtypes (scalar, 4-bit) among them. */
static void s_tensor_file(struct rr_file_entry *fe, const char *path)
{
	uint64_t off = 0;

	memset(fe, 0, sizeof(*fe));
	fe->path = s_strdup(path);
	fe->mode = 0644;
	fe->nsegs = 7;
	fe->segs = calloc(fe->nsegs, sizeof(*fe->segs));
	CU_ASSERT_FATAL(fe->segs != NULL);
	fe->segs[0] = s_seg(0, 136, "header", 1);
	fe->segs[1] = s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "model.embed_tokens.weight", "F16",
			     S_DIMS(16, 8), 0, 2);
	fe->segs[2] = s_tseg(0, RR_ENC_BF16, "model.layers.0.self_attn.q_proj.weight", "F32",
			     S_DIMS(8, 8), 0, 1);
	fe->segs[3] = s_tseg(0, RR_ENC_FP16, "state.0.exp_avg_sq", "F32", S_DIMS(4, 4, 2), 7,
			     3);
	fe->segs[4] = s_tseg(0, RR_ENC_FP16, "state.0.exp_avg", "F32", S_DIMS(3), -112, 1);
	fe->segs[5] = s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "step", "I64", NULL, 0, 0, 1);
	fe->segs[6] = s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "q/packed.f4", "F4", S_DIMS(3, 6), 0, 2);
	for (size_t k = 0; k < fe->nsegs; k++) {
		fe->segs[k].offset = off;
		off += fe->segs[k].length;
	}
	fe->size = off;
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
			CU_ASSERT((sa->tensor == NULL) == (sb->tensor == NULL));
			if (sa->tensor && sb->tensor)
				CU_ASSERT_STRING_EQUAL(sa->tensor, sb->tensor);
			CU_ASSERT_STRING_EQUAL(sa->dtype, sb->dtype);
			CU_ASSERT_EQUAL_FATAL(sa->ndim, sb->ndim);
			CU_ASSERT((sa->shape == NULL) == (sb->shape == NULL));
			for (unsigned d = 0; d < sa->ndim; d++)
				CU_ASSERT_EQUAL(sa->shape[d], sb->shape[d]);
			CU_ASSERT_EQUAL(sa->scale_exp, sb->scale_exp);
			CU_ASSERT_EQUAL_FATAL(sa->nchunks, sb->nchunks);
			for (size_t j = 0; j < sa->nchunks; j++) {
				CU_ASSERT_STRING_EQUAL(sa->chunks[j].sha256, sb->chunks[j].sha256);
				CU_ASSERT_EQUAL(sa->chunks[j].size, sb->chunks[j].size);
				CU_ASSERT_EQUAL(sa->chunks[j].stored_size,
						sb->chunks[j].stored_size);
				CU_ASSERT_STRING_EQUAL(sa->chunks[j].raw_xxh128,
						       sb->chunks[j].raw_xxh128);
			}
		}
	}
}

/* --- writing and reading back -------------------------------------------------------- */

static void test_file_checkpoint_kind_round_trips_and_needs_its_one_file(void)
{
	struct rr_manifest *m = s_one_file("epoch=2-step=20.ckpt"), *back = NULL;
	char why[256] = "";
	char *text;

	free(m->checkpoint);
	m->checkpoint = s_strdup("epoch=2-step=20.ckpt");
	m->single_file = 1;
	text = s_to_json(m);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"kind\":\"file\""));
	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &back, why, sizeof(why)), 0);
	CU_ASSERT(back && back->single_file == 1);
	rr_manifest_destroy(back);
	back = NULL;
	free(text);

	/* the one file must carry the checkpoint's name */
	free(m->files[0].path);
	m->files[0].path = s_strdup("other.ckpt");
	text = s_to_json(m);
	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &back, why, sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "file checkpoint"));
	free(text);
	rr_manifest_destroy(m);

	/* a directory checkpoint carries no kind at all */
	m = s_sample();
	text = s_to_json(m);
	CU_ASSERT_PTR_NULL(strstr(text, "\"kind\""));
	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &back, why, sizeof(why)), 0);
	CU_ASSERT(back && back->single_file == 0);
	rr_manifest_destroy(back);
	free(text);
	rr_manifest_destroy(m);
}

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
	char raw[RR_XXH128_HEX_LEN + 1], chunk[RR_SHA256_HEX_LEN + 1], expect[1024];
	char sum[RR_SHA256_HEX_LEN + 1];
	char *text;
	size_t n;

	s_file(&m->files[0], "model.safetensors", 12345, 1, 1);
	m->files[0].segs[0].chunks[0].stored_size = 6789;
	memcpy(raw, m->files[0].segs[0].chunks[0].raw_xxh128, sizeof(raw));
	memcpy(chunk, m->files[0].segs[0].chunks[0].sha256, sizeof(chunk));
	snprintf(expect, sizeof(expect),
		 "{\"format\":\"resume-run/manifest-2\",\"run_id\":\"default\","
		 "\"checkpoint\":\"step-200\",\"host\":\"node-1\","
		 "\"committed_unix_ms\":1700000000000,\"created_unix_ms\":1700000000123,"
		 "\"files\":[{\"path\":\"model.safetensors\",\"mode\":420,\"size\":12345,"
		 "\"segments\":[{\"offset\":0,\"length\":12345,\"encoding\":\"zstd\","
		 "\"chunks\":[{\"sha256\":\"%s\",\"size\":12345,"
		 "\"stored_size\":6789,\"raw_xxh128\":\"%s\"}]}]}]}",
		 chunk, raw);
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
	CU_ASSERT(strstr(why, "x\\u000ay") != NULL);
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
	struct rr_chunk_ref *ch = &m->files[0].segs[0].chunks[0];
	char *text;

	ch->raw_xxh128[10] = 'G';
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "chunk 0: \"raw_xxh128\"");
	free(text);
	rr_xxh128_hex("x", 1, ch->raw_xxh128);
	ch->sha256[63] = '\0';
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "\"sha256\"");
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_missing_or_malformed_raw_xxh128(void)
{
	struct rr_manifest *m = s_one_file("f");
	struct rr_chunk_ref *ch = &m->files[0].segs[0].chunks[0];
	char from[64], to[128];

	snprintf(from, sizeof(from), ",\"raw_xxh128\":\"%s\"", ch->raw_xxh128);
	s_expect_edit(m, from, "", RR_ECORRUPT, "chunk 0: \"raw_xxh128\" is missing");
	s_expect_edit(m, from, ",\"raw_xxh128\":null", RR_ECORRUPT,
		      "\"raw_xxh128\" is not a string");
	/* upper case, one digit short, a sha256 in its place */
	snprintf(to, sizeof(to), ",\"raw_xxh128\":\"%.31s\"", ch->raw_xxh128);
	s_expect_edit(m, from, to, RR_ECORRUPT, "is not 32 lowercase hex digits");
	snprintf(to, sizeof(to), ",\"raw_xxh128\":\"%s\"", ch->sha256);
	s_expect_edit(m, from, to, RR_ECORRUPT, "is not 32 lowercase hex digits");
	snprintf(to, sizeof(to), ",\"raw_xxh128\":\"%sAB\"", "0123456789abcdef0123456789abcd");
	s_expect_edit(m, from, to, RR_ECORRUPT, "is not 32 lowercase hex digits");
	snprintf(to, sizeof(to), ",\"raw_xxh128\":\"%s\"", "0123456789abcdef0123456789abcdef");
	s_expect_edit(m, from, to, 0, NULL);
	snprintf(to, sizeof(to), "%s%s", from, from);
	s_expect_edit(m, from, to, RR_ECORRUPT, "\"raw_xxh128\" appears twice");
	rr_manifest_destroy(m);
}

/* --- tensor segments ---------------------------------------------------------------- */

/* A one-file manifest holding s_tensor_file. */
static struct rr_manifest *s_tensors(void)
{
	struct rr_manifest *m = s_new(1);
	s_tensor_file(&m->files[0], "model.safetensors");
	return m;
}

/* A one-file manifest whose only segment is sg (the file is sg's length). */
static struct rr_manifest *s_one_seg(struct rr_segment sg)
{
	struct rr_manifest *m = s_new(1);

	memset(&m->files[0], 0, sizeof(m->files[0]));
	m->files[0].path = s_strdup("t.safetensors");
	m->files[0].mode = 0644;
	m->files[0].size = sg.offset + sg.length;
	m->files[0].nsegs = 1;
	m->files[0].segs = calloc(1, sizeof(*m->files[0].segs));
	CU_ASSERT_FATAL(m->files[0].segs != NULL);
	m->files[0].segs[0] = sg;
	return m;
}

/* Writes m (the writer does not judge), expects the parse to fail or not, frees m. */
static void s_expect_built(struct rr_manifest *m, int want_rc, const char *want_why)
{
	char *text = s_to_json(m);
	s_expect(text, want_rc, want_why);
	free(text);
	rr_manifest_destroy(m);
}

static void test_roundtrip_tensor_segments_of_every_encoding_field_by_field(void)
{
	struct rr_manifest *m = s_tensors(), *back = NULL;
	const struct rr_segment *sg;
	char why[256] = "";
	char *text = s_to_json(m), *again;

	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &back, why, sizeof(why)), 0);
	if (!back)
		fprintf(stderr, "\n  refused: %s\n", why);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	s_assert_equal(m, back);
	CU_ASSERT_EQUAL_FATAL(back->files[0].nsegs, 7);
	sg = back->files[0].segs;
	/* the header: no tensor members at all */
	CU_ASSERT_EQUAL(sg[0].encoding, RR_ENC_ZSTD);
	CU_ASSERT_PTR_NULL(sg[0].tensor);
	CU_ASSERT_STRING_EQUAL(sg[0].dtype, "");
	CU_ASSERT_EQUAL(sg[0].ndim, 0);
	CU_ASSERT_PTR_NULL(sg[0].shape);
	CU_ASSERT_EQUAL(sg[0].scale_exp, 0);
	CU_ASSERT_EQUAL(sg[1].encoding, RR_ENC_SHUFFLE_ZSTD);
	CU_ASSERT_STRING_EQUAL(sg[1].tensor, "model.embed_tokens.weight");
	CU_ASSERT_STRING_EQUAL(sg[1].dtype, "F16");
	CU_ASSERT_EQUAL_FATAL(sg[1].ndim, 2);
	CU_ASSERT_EQUAL(sg[1].shape[0], 16);
	CU_ASSERT_EQUAL(sg[1].shape[1], 8);
	CU_ASSERT_EQUAL(sg[1].length, 256);
	CU_ASSERT_EQUAL(sg[1].nchunks, 2);
	CU_ASSERT_EQUAL(sg[2].encoding, RR_ENC_BF16);
	CU_ASSERT_STRING_EQUAL(sg[2].dtype, "F32");
	CU_ASSERT_EQUAL(sg[2].scale_exp, 0);
	CU_ASSERT_EQUAL(sg[3].encoding, RR_ENC_FP16);
	CU_ASSERT_EQUAL(sg[3].scale_exp, 7);
	CU_ASSERT_EQUAL_FATAL(sg[3].ndim, 3);
	CU_ASSERT_EQUAL(sg[3].shape[2], 2);
	CU_ASSERT_EQUAL(sg[3].chunks[2].size, 48);
	CU_ASSERT_EQUAL(sg[4].scale_exp, -112);
	/* a scalar: no dimensions, one element */
	CU_ASSERT_STRING_EQUAL(sg[5].tensor, "step");
	CU_ASSERT_EQUAL(sg[5].ndim, 0);
	CU_ASSERT_PTR_NULL(sg[5].shape);
	CU_ASSERT_EQUAL(sg[5].length, 8);
	/* 4-bit elements: 18 of them in 9 bytes, chunks at any byte */
	CU_ASSERT_STRING_EQUAL(sg[6].dtype, "F4");
	CU_ASSERT_EQUAL(sg[6].length, 9);
	CU_ASSERT_EQUAL(sg[6].chunks[0].size, 4);
	CU_ASSERT(strstr(text, "\"shape\":[]") != NULL);
	again = s_to_json(back);
	CU_ASSERT_STRING_EQUAL(text, again);
	free(again);
	free(text);
	rr_manifest_destroy(back);
	rr_manifest_destroy(m);
}

static void test_to_json_writes_tensor_members_in_documented_order(void)
{
	struct rr_manifest *m = s_one_seg(s_tseg(0, RR_ENC_FP16, "model.layers.0.weight", "F32",
						 S_DIMS(768, 768), 7, 1));
	struct rr_manifest *z = s_one_file("f");
	char expect[512];
	char *text;

	snprintf(expect, sizeof(expect),
		 "{\"offset\":0,\"length\":2359296,\"encoding\":\"fp16+shuffle+zstd\","
		 "\"tensor\":\"model.layers.0.weight\",\"dtype\":\"F32\",\"shape\":[768,768],"
		 "\"scale_exp\":7,\"chunks\":[{\"sha256\":\"%s\",\"size\":2359296,"
		 "\"stored_size\":1179649,\"raw_xxh128\":\"%s\"}]}",
		 m->files[0].segs[0].chunks[0].sha256, m->files[0].segs[0].chunks[0].raw_xxh128);
	text = s_to_json(m);
	CU_ASSERT(strstr(text, expect) != NULL);
	free(text);
	/* the other tensor encodings have no scale_exp */
	m->files[0].segs[0].encoding = RR_ENC_BF16;
	m->files[0].segs[0].scale_exp = 0;
	text = s_to_json(m);
	CU_ASSERT(strstr(text, "\"encoding\":\"bf16+shuffle+zstd\",\"tensor\":") != NULL);
	CU_ASSERT(strstr(text, "\"shape\":[768,768],\"chunks\":") != NULL);
	CU_ASSERT(strstr(text, "scale_exp") == NULL);
	s_expect(text, 0, NULL);
	free(text);
	/* and zstd segments none of the tensor members */
	text = s_to_json(z);
	CU_ASSERT(strstr(text, "\"encoding\":\"zstd\",\"chunks\":") != NULL);
	free(text);
	rr_manifest_destroy(z);
	rr_manifest_destroy(m);
}

static void test_to_json_refuses_tensor_members_json_cannot_carry(void)
{
	struct rr_manifest *m = s_tensors();
	struct rr_segment *sg = &m->files[0].segs[1];
	struct rr_buf b;
	char *name;

	rr_buf_init(&b, RR_MANIFEST_MAX_BYTES);
	/* no name to write */
	name = sg->tensor;
	sg->tensor = NULL;
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), RR_EINVAL);
	sg->tensor = name;
	/* a dimension cJSON would print as a neighbour */
	sg->shape[0] = ((uint64_t)1 << 53) - 1;
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), RR_EINVAL);
	sg->shape[0] = 16;
	/* fields that are not terminated within themselves */
	memset(sg->dtype, 'F', sizeof(sg->dtype));
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), RR_EINVAL);
	strcpy(sg->dtype, "F16");
	memset(sg->chunks[0].raw_xxh128, 'a', sizeof(sg->chunks[0].raw_xxh128));
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), RR_EINVAL);
	sg->chunks[0].raw_xxh128[RR_XXH128_HEX_LEN] = '\0';
	/* dimensions without their array */
	free(sg->shape);
	sg->shape = NULL;
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), RR_EINVAL);
	CU_ASSERT_EQUAL(b.len, 0);
	sg->ndim = 0;
	CU_ASSERT_EQUAL(rr_manifest_to_json(m, &b), 0);
	rr_buf_free(&b);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_bf16_or_fp16_on_a_dtype_other_than_f32(void)
{
	s_expect_built(s_one_seg(s_tseg(0, RR_ENC_BF16, "w", "F16", S_DIMS(4, 4), 0, 1)),
		       RR_ECORRUPT,
		       "file 0 segment 0: encoding \"bf16+shuffle+zstd\" needs dtype \"F32\", "
		       "not \"F16\"");
	s_expect_built(s_one_seg(s_tseg(0, RR_ENC_FP16, "w", "BF16", S_DIMS(4), 3, 1)),
		       RR_ECORRUPT, "encoding \"fp16+shuffle+zstd\" needs dtype \"F32\"");
	s_expect_built(s_one_seg(s_tseg(0, RR_ENC_BF16, "w", "F64", S_DIMS(4), 0, 1)),
		       RR_ECORRUPT, "not \"F64\"");
	/* lossless shuffling takes any dtype */
	s_expect_built(s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F64", S_DIMS(4), 0, 1)),
		       0, NULL);
}

static void test_parse_refuses_shape_not_matching_length(void)
{
	struct rr_manifest *m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F16",
						 S_DIMS(16, 8), 0, 2));
	m->files[0].segs[0].shape[1] = 9;
	s_expect_built(m, RR_ECORRUPT,
		       "file 0 segment 0: \"shape\" holds 288 bytes (144 elements of F16), not "
		       "the length 256");
	/* an empty tensor has no segment, so a 0 in the shape never fits */
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F16", S_DIMS(16, 8), 0, 2));
	m->files[0].segs[0].shape[0] = 0;
	s_expect_built(m, RR_ECORRUPT, "holds 0 bytes");
	/* sub-byte elements must fill whole bytes */
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F4", S_DIMS(3, 6), 0, 2));
	m->files[0].segs[0].shape[1] = 5;
	s_expect_built(m, RR_ECORRUPT, "holds 15 elements of 4 bits, not a whole number of bytes");
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F6_E3M2", S_DIMS(4), 0, 1));
	s_expect_built(m, 0, NULL);
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F6_E2M3", S_DIMS(4), 0, 1));
	m->files[0].segs[0].shape[0] = 2;
	s_expect_built(m, RR_ECORRUPT, "2 elements of 6 bits, not a whole number of bytes");
	/* a scalar is one element */
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "I32", NULL, 0, 0, 1));
	CU_ASSERT_EQUAL(m->files[0].segs[0].length, 4);
	s_expect_built(m, 0, NULL);
	/* a zero-size tensor gets no segment: its length is 0 */
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "I32", S_DIMS(0, 5), 0, 1));
	m->files[0].size = 10;
	s_expect_built(m, RR_ECORRUPT, "segment 0: \"length\" is 0");
}

static void test_parse_refuses_shape_overflow(void)
{
	struct rr_manifest *m;
	const uint64_t p32 = (uint64_t)1 << 32;

	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F32", S_DIMS(4), 0, 1));
	free(m->files[0].segs[0].shape);
	m->files[0].segs[0].shape = calloc(3, sizeof(uint64_t));
	CU_ASSERT_FATAL(m->files[0].segs[0].shape != NULL);
	m->files[0].segs[0].ndim = 3;
	m->files[0].segs[0].shape[0] = p32;
	m->files[0].segs[0].shape[1] = p32;
	m->files[0].segs[0].shape[2] = 16;
	s_expect_built(m, RR_ECORRUPT, "\"shape\" has more elements than 64 bits can count");

	/* 274177 * 67280421310721 = 2^64 + 1 wraps to one element: one F32, exactly the
	 * length, so only the overflow check stands in the way */
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F32", S_DIMS(1), 0, 1));
	free(m->files[0].segs[0].shape);
	m->files[0].segs[0].shape = calloc(2, sizeof(uint64_t));
	CU_ASSERT_FATAL(m->files[0].segs[0].shape != NULL);
	m->files[0].segs[0].ndim = 2;
	m->files[0].segs[0].shape[0] = 274177;
	m->files[0].segs[0].shape[1] = 67280421310721;
	CU_ASSERT_EQUAL(274177 * (uint64_t)67280421310721, 1);
	s_expect_built(m, RR_ECORRUPT, "more elements than 64 bits can count");

	/* elements fit, bits do not: 2^61 elements of 32 bits */
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F32", S_DIMS(4), 0, 1));
	free(m->files[0].segs[0].shape);
	m->files[0].segs[0].shape = calloc(2, sizeof(uint64_t));
	CU_ASSERT_FATAL(m->files[0].segs[0].shape != NULL);
	m->files[0].segs[0].ndim = 2;
	m->files[0].segs[0].shape[0] = (uint64_t)1 << 40;
	m->files[0].segs[0].shape[1] = (uint64_t)1 << 21;
	s_expect_built(m, RR_ECORRUPT,
		       "holds 2305843009213693952 elements of 32 bits, more bits than 64 bits");

	/* an overflow before a 0 is still an overflow (the safetensors reader's order) */
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F32", S_DIMS(4), 0, 1));
	free(m->files[0].segs[0].shape);
	m->files[0].segs[0].shape = calloc(4, sizeof(uint64_t));
	CU_ASSERT_FATAL(m->files[0].segs[0].shape != NULL);
	m->files[0].segs[0].ndim = 4;
	m->files[0].segs[0].shape[0] = p32;
	m->files[0].segs[0].shape[1] = p32;
	m->files[0].segs[0].shape[2] = 16;
	m->files[0].segs[0].shape[3] = 0;
	s_expect_built(m, RR_ECORRUPT, "more elements than 64 bits can count");
}

static void test_parse_refuses_bad_shape_entries(void)
{
	struct rr_manifest *m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F16",
						 S_DIMS(16, 8), 0, 2));
	s_expect_edit(m, "\"shape\":[16,8]", "\"shape\":[16,-8]", RR_ECORRUPT,
		      "segment 0: \"shape\"[1] is negative (-8)");
	s_expect_edit(m, "\"shape\":[16,8]", "\"shape\":[16,8.5]", RR_ECORRUPT,
		      "\"shape\"[1] is not an integer (8.5)");
	s_expect_edit(m, "\"shape\":[16,8]", "\"shape\":[\"16\",8]", RR_ECORRUPT,
		      "\"shape\"[0] is not a number");
	s_expect_edit(m, "\"shape\":[16,8]", "\"shape\":[16,1e400]", RR_ECORRUPT,
		      "\"shape\"[1] is not a finite number");
	s_expect_edit(m, "\"shape\":[16,8]", "\"shape\":[16,1e17]", RR_ECORRUPT,
		      "\"shape\"[1] is 100000000000000000, above the limit");
	s_expect_edit(m, "\"shape\":[16,8]", "\"shape\":{\"0\":128}", RR_ECORRUPT,
		      "\"shape\" is not an array");
	s_expect_edit(m, "\"shape\":[16,8]", "\"shape\":[16,8],\"shape\":[128]", RR_ECORRUPT,
		      "\"shape\" appears twice");
	/* -0 is 0 and 1e1 is 10, as for any integer */
	s_expect_edit(m, "\"shape\":[16,8]", "\"shape\":[16,8,1e0]", 0, NULL);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_shape_of_65_dimensions(void)
{
	struct rr_manifest *m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "U8", S_DIMS(4),
						 0, 1));
	struct rr_segment *sg = &m->files[0].segs[0];
	char *text;

	free(sg->shape);
	sg->shape = calloc(65, sizeof(uint64_t));
	CU_ASSERT_FATAL(sg->shape != NULL);
	for (unsigned i = 0; i < 65; i++)
		sg->shape[i] = 1;
	sg->shape[0] = 4;
	sg->ndim = 64;
	text = s_to_json(m);
	s_expect(text, 0, NULL);
	free(text);
	sg->ndim = 65;
	s_expect_built(m, RR_ECORRUPT, "\"shape\" has 65 dimensions, more than 64");
}

static void test_parse_refuses_chunk_not_whole_elements(void)
{
	struct rr_manifest *m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F32",
						 S_DIMS(64), 0, 2));
	m->files[0].segs[0].chunks[0].size += 2;
	m->files[0].segs[0].chunks[1].size -= 2;
	s_expect_built(m, RR_ECORRUPT,
		       "file 0 segment 0 chunk 0: \"size\" 130 is not a whole number of 4-byte "
		       "elements");
	m = s_one_seg(s_tseg(0, RR_ENC_BF16, "w", "F32", S_DIMS(64), 0, 2));
	m->files[0].segs[0].chunks[0].size += 4;
	m->files[0].segs[0].chunks[1].size -= 4;
	s_expect_built(m, 0, NULL);
	m = s_one_seg(s_tseg(0, RR_ENC_FP16, "w", "F32", S_DIMS(64), 0, 2));
	m->files[0].segs[0].chunks[0].size -= 1;
	m->files[0].segs[0].chunks[1].size += 1;
	s_expect_built(m, RR_ECORRUPT, "chunk 0: \"size\" 127 is not a whole number of 4-byte");
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "C64", S_DIMS(4), 0, 2));
	m->files[0].segs[0].chunks[0].size = 12;
	m->files[0].segs[0].chunks[1].size = 20;
	s_expect_built(m, RR_ECORRUPT, "chunk 0: \"size\" 12 is not a whole number of 8-byte");
	/* 4- and 6-bit elements share bytes: chunks are cut at any byte */
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F4", S_DIMS(14), 0, 2));
	CU_ASSERT_EQUAL(m->files[0].segs[0].chunks[0].size, 3);
	s_expect_built(m, 0, NULL);
}

static void test_parse_refuses_tensor_chunk_sizes_not_adding_up(void)
{
	static const enum rr_encoding encs[] = { RR_ENC_SHUFFLE_ZSTD, RR_ENC_BF16,
						 RR_ENC_FP16 };

	for (size_t i = 0; i < sizeof(encs) / sizeof(encs[0]); i++) {
		struct rr_manifest *m =
			s_one_seg(s_tseg(0, encs[i], "w", "F32", S_DIMS(64), 0, 2));
		m->files[0].segs[0].chunks[1].size -= 4;
		s_expect_built(m, RR_ECORRUPT, "chunk sizes add up to 252, not the length 256");
	}
}

static void test_parse_refuses_scale_exp_missing_out_of_range_or_misplaced(void)
{
	struct rr_manifest *m = s_one_seg(s_tseg(0, RR_ENC_FP16, "w", "F32", S_DIMS(64), 7, 1));

	s_expect_edit(m, ",\"scale_exp\":7", "", RR_ECORRUPT,
		      "segment 0: \"scale_exp\" is missing");
	s_expect_edit(m, "\"scale_exp\":7", "\"scale_exp\":113", RR_ECORRUPT,
		      "\"scale_exp\" is 113, outside [-112, 112]");
	s_expect_edit(m, "\"scale_exp\":7", "\"scale_exp\":-113", RR_ECORRUPT,
		      "\"scale_exp\" is -113, outside [-112, 112]");
	s_expect_edit(m, "\"scale_exp\":7", "\"scale_exp\":1e300", RR_ECORRUPT,
		      "outside [-112, 112]");
	s_expect_edit(m, "\"scale_exp\":7", "\"scale_exp\":7.5", RR_ECORRUPT,
		      "\"scale_exp\" is not an integer (7.5)");
	s_expect_edit(m, "\"scale_exp\":7", "\"scale_exp\":\"7\"", RR_ECORRUPT,
		      "\"scale_exp\" is not a number");
	s_expect_edit(m, "\"scale_exp\":7", "\"scale_exp\":null", RR_ECORRUPT,
		      "\"scale_exp\" is not a number");
	s_expect_edit(m, "\"scale_exp\":7", "\"scale_exp\":-1e400", RR_ECORRUPT,
		      "\"scale_exp\" is not a finite number");
	s_expect_edit(m, "\"scale_exp\":7", "\"scale_exp\":7,\"scale_exp\":8", RR_ECORRUPT,
		      "\"scale_exp\" appears twice");
	s_expect_edit(m, "\"scale_exp\":7", "\"scale_exp\":112", 0, NULL);
	s_expect_edit(m, "\"scale_exp\":7", "\"scale_exp\":-112", 0, NULL);
	s_expect_edit(m, "\"scale_exp\":7", "\"scale_exp\":-0", 0, NULL);
	rr_manifest_destroy(m);

	/* only fp16 has a scale; 0 is a scale too */
	s_expect_built(s_one_seg(s_tseg(0, RR_ENC_BF16, "w", "F32", S_DIMS(64), 3, 1)),
		       RR_ECORRUPT,
		       "\"scale_exp\" is only for \"fp16+shuffle+zstd\", not "
		       "\"bf16+shuffle+zstd\"");
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F32", S_DIMS(64), 0, 1));
	s_expect_edit(m, "\"shape\":[64]", "\"shape\":[64],\"scale_exp\":0", RR_ECORRUPT,
		      "not \"shuffle+zstd\"");
	rr_manifest_destroy(m);
}

static void test_parse_refuses_tensor_members_on_zstd_segment(void)
{
	struct rr_manifest *m = s_one_file("f");
	struct rr_segment *sg = &m->files[0].segs[0];
	uint64_t dims[1] = { 25 };
	char *text;

	/* the writer writes what the struct holds; the parser refuses each */
	sg->tensor = s_strdup("w");
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT,
		 "file 0 segment 0: \"tensor\" is only for tensor encodings, not \"zstd\"");
	free(text);
	free(sg->tensor);
	sg->tensor = NULL;
	strcpy(sg->dtype, "F32");
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "\"dtype\" is only for tensor encodings, not \"zstd\"");
	free(text);
	sg->dtype[0] = '\0';
	sg->shape = dims;
	sg->ndim = 1;
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "\"shape\" is only for tensor encodings");
	free(text);
	sg->shape = NULL;
	sg->ndim = 0;
	sg->scale_exp = -3;
	text = s_to_json(m);
	s_expect(text, RR_ECORRUPT, "\"scale_exp\" is only for tensor encodings");
	free(text);
	sg->scale_exp = 0;
	/* present is present, whatever the value */
	s_expect_edit(m, "\"encoding\":\"zstd\"", "\"encoding\":\"zstd\",\"tensor\":null",
		      RR_ECORRUPT, "\"tensor\" is only for tensor encodings");
	s_expect_edit(m, "\"encoding\":\"zstd\"", "\"encoding\":\"zstd\",\"shape\":[]",
		      RR_ECORRUPT, "\"shape\" is only for tensor encodings");
	text = s_to_json(m);
	s_expect(text, 0, NULL);
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_refuses_missing_tensor_members(void)
{
	struct rr_manifest *m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F16",
						 S_DIMS(16, 8), 0, 2));
	s_expect_edit(m, "\"tensor\":\"w\",", "", RR_ECORRUPT, "\"tensor\" is missing");
	s_expect_edit(m, "\"dtype\":\"F16\",", "", RR_ECORRUPT, "\"dtype\" is missing");
	s_expect_edit(m, "\"shape\":[16,8],", "", RR_ECORRUPT, "\"shape\" is missing");
	s_expect_edit(m, "\"tensor\":\"w\"", "\"tensor\":[\"w\"]", RR_ECORRUPT,
		      "\"tensor\" is not a string");
	s_expect_edit(m, "\"dtype\":\"F16\"", "\"dtype\":16", RR_ECORRUPT,
		      "\"dtype\" is not a string");
	s_expect_edit(m, "\"tensor\":\"w\"", "\"tensor\":\"w\",\"tensor\":\"v\"", RR_ECORRUPT,
		      "\"tensor\" appears twice");
	rr_manifest_destroy(m);
}

static void test_parse_refuses_unknown_dtype(void)
{
	struct rr_manifest *m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F16",
						 S_DIMS(16, 8), 0, 2));
	static const char *const known[] = {
		"BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3",
		"F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16",
		"I32", "U32", "F32", "C64", "F64", "I64", "U64",
	};
	static const unsigned bits[] = { 8,  4,  6,  6,  8,  8,  8,  8,  8,  8,  8,
					 16, 16, 16, 16, 32, 32, 32, 64, 64, 64, 64 };

	s_expect_edit(m, "\"dtype\":\"F16\"", "\"dtype\":\"F128\"", RR_ECORRUPT,
		      "segment 0: unknown dtype \"F128\"");
	s_expect_edit(m, "\"dtype\":\"F16\"", "\"dtype\":\"f16\"", RR_ECORRUPT,
		      "unknown dtype \"f16\"");
	s_expect_edit(m, "\"dtype\":\"F16\"", "\"dtype\":\"\"", RR_ECORRUPT,
		      "unknown dtype \"\"");
	s_expect_edit(m, "\"dtype\":\"F16\"", "\"dtype\":\"F16 \"", RR_ECORRUPT,
		      "unknown dtype");
	s_expect_edit(m, "\"dtype\":\"F16\"", "\"dtype\":\"F8_E4M3FNUZXXXXXXXXXXXXXXXX\"",
		      RR_ECORRUPT, "unknown dtype");
	rr_manifest_destroy(m);

	/* every safetensors dtype, with its width: a shape of 8 elements holds bits bytes */
	CU_ASSERT_EQUAL_FATAL(sizeof(known) / sizeof(known[0]), sizeof(bits) / sizeof(bits[0]));
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		struct rr_manifest *t = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "U8",
							 S_DIMS(8), 0, 1));
		struct rr_segment *sg = &t->files[0].segs[0];
		strcpy(sg->dtype, known[i]);
		sg->length = bits[i];
		sg->chunks[0].size = bits[i];
		t->files[0].size = bits[i];
		s_expect_built(t, 0, NULL);
	}
}

static void test_parse_refuses_empty_or_overlong_tensor_name(void)
{
	struct rr_manifest *m;
	char *name;

	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F16", S_DIMS(16, 8), 0, 2));
	s_expect_edit(m, "\"tensor\":\"w\"", "\"tensor\":\"\"", RR_ECORRUPT,
		      "segment 0: \"tensor\" \"\" must be 1..65536 bytes");
	/* cJSON would cut the name at the NUL, other readers would not */
	s_expect_edit(m, "\"tensor\":\"w\"", "\"tensor\":\"w\\u0000x\"", RR_ECORRUPT,
		      "NUL character");
	rr_manifest_destroy(m);

	name = malloc(65538);
	CU_ASSERT_FATAL(name != NULL);
	memset(name, 'n', 65537);
	name[65537] = '\0';
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, name, "F16", S_DIMS(16, 8), 0, 2));
	s_expect_built(m, RR_ECORRUPT, "\"tensor\" \"nnnn");
	name[65536] = '\0';
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, name, "F16", S_DIMS(16, 8), 0, 2));
	s_expect_built(m, 0, NULL);
	free(name);

	/* any other character: the name is matched and logged, never a path */
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "../a/./b\\c\n\"\x7f\xc3\xa9 .", "F16",
			     S_DIMS(16, 8), 0, 2));
	char *text = s_to_json(m);
	struct rr_manifest *back = NULL;
	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &back, NULL, 0), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	CU_ASSERT_STRING_EQUAL(back->files[0].segs[0].tensor, "../a/./b\\c\n\"\x7f\xc3\xa9 .");
	rr_manifest_destroy(back);
	free(text);
	rr_manifest_destroy(m);
}

static void test_parse_reason_quotes_tensor_name_and_dtype_safely(void)
{
	struct rr_manifest *m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, "w", "F16",
						 S_DIMS(16, 8), 0, 2));
	char *name;

	s_expect_edit(m, "\"dtype\":\"F16\"", "\"dtype\":\"F\\n16\"", RR_ECORRUPT,
		      "unknown dtype \"F\\u000a16\"");
	rr_manifest_destroy(m);
	/* an overlong name is shown escaped and cut short */
	name = malloc(65538);
	CU_ASSERT_FATAL(name != NULL);
	memset(name, 'n', 65537);
	name[0] = '\n';
	name[65537] = '\0';
	m = s_one_seg(s_tseg(0, RR_ENC_SHUFFLE_ZSTD, name, "F16", S_DIMS(16, 8), 0, 2));
	s_expect_built(m, RR_ECORRUPT, "\"tensor\" \"\\u000annnnnnnnnn");
	free(name);
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

/* A file's format (rr/format.h) round-trips; absent means plain; only a plain name. */
static void test_file_format_round_trips_and_is_checked(void)
{
	struct rr_manifest *m = s_one_file("optimizer.pt"), *back = NULL;
	char *text;

	CU_ASSERT(strstr(text = s_to_json(m), "\"format\":\"torch\"") == NULL);
	free(text);
	snprintf(m->files[0].format, sizeof(m->files[0].format), "torch");
	text = s_to_json(m);
	CU_ASSERT_EQUAL(rr_manifest_parse(text, strlen(text), &back, NULL, 0), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	CU_ASSERT_STRING_EQUAL(back->files[0].format, "torch");
	rr_manifest_destroy(back);
	free(text);
	s_expect_edit(m, "\"format\":\"torch\"", "\"format\":\"../x\"", RR_ECORRUPT,
		      "\"format\" is not a format name");
	s_expect_edit(m, "\"format\":\"torch\"", "\"format\":7", RR_ECORRUPT,
		      "\"format\" is not a format name");
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

	s_expect_edit(m, "manifest-2", "manifest-3", RR_ECORRUPT,
		      "format \"resume-run/manifest-3\" is neither");
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
	static const struct {
		enum rr_encoding e;
		const char *name;
	} all[] = {
		{ RR_ENC_ZSTD, "zstd" },
		{ RR_ENC_SHUFFLE_ZSTD, "shuffle+zstd" },
		{ RR_ENC_BF16, "bf16+shuffle+zstd" },
		{ RR_ENC_FP16, "fp16+shuffle+zstd" },
	};
	enum rr_encoding e = (enum rr_encoding)42;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		CU_ASSERT_STRING_EQUAL(rr_encoding_name(all[i].e), all[i].name);
		e = (enum rr_encoding)42;
		CU_ASSERT_EQUAL(rr_encoding_from_name(all[i].name, &e), 0);
		CU_ASSERT_EQUAL(e, all[i].e);
	}
	CU_ASSERT_PTR_NULL(rr_encoding_name((enum rr_encoding)4));
	CU_ASSERT_PTR_NULL(rr_encoding_name((enum rr_encoding)99));
	CU_ASSERT_NOT_EQUAL(rr_encoding_from_name("shuffle", &e), 0);
	CU_ASSERT_NOT_EQUAL(rr_encoding_from_name("fp16", &e), 0);
	CU_ASSERT_NOT_EQUAL(rr_encoding_from_name("zstd+shuffle", &e), 0);
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


/* manifest-2: a packed chunk keeps its pack offset through a round trip; an unpacked one
 * writes no "pack_offset". */
static void test_packed_chunk_round_trips_with_its_offset(void)
{
	struct rr_manifest *m = s_one_file("f"), *back = NULL;
	char *text;
	char why[256] = "";

	m->files[0].segs[0].chunks[0].packed = 1;
	m->files[0].segs[0].chunks[0].pack_offset = 4096;
	text = s_to_json(m);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"pack_offset\":4096"));
	CU_ASSERT_EQUAL_FATAL(rr_manifest_parse(text, strlen(text), &back, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(back->files[0].segs[0].chunks[0].packed, 1);
	CU_ASSERT_EQUAL(back->files[0].segs[0].chunks[0].pack_offset, 4096);
	rr_manifest_destroy(back);
	free(text);
	m->files[0].segs[0].chunks[0].packed = 0;
	text = s_to_json(m);
	CU_ASSERT_PTR_NULL(strstr(text, "pack_offset"));
	CU_ASSERT_EQUAL_FATAL(rr_manifest_parse(text, strlen(text), &back, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(back->files[0].segs[0].chunks[0].packed, 0);
	rr_manifest_destroy(back);
	free(text);
	rr_manifest_destroy(m);
}

/* A manifest-1 (the previous release's) is read; one naming a pack is not. A packed chunk
 * must lie within a pack's ceiling. */
static void test_pack_offset_is_checked(void)
{
	struct rr_manifest *m = s_one_file("f");

	s_expect_edit(m, "manifest-2", "manifest-1", 0, NULL);
	m->files[0].segs[0].chunks[0].packed = 1;
	m->files[0].segs[0].chunks[0].pack_offset = 0;
	s_expect_edit(m, "manifest-2", "manifest-1", RR_ECORRUPT,
		      "\"pack_offset\" in a manifest-1");
	m->files[0].segs[0].chunks[0].pack_offset =
		RR_PACK_MAX_BYTES - m->files[0].segs[0].chunks[0].stored_size + 1;
	s_expect_edit(m, "\"format\"", "\"format\"", RR_ECORRUPT, "ends beyond");
	s_expect_edit(m, "\"pack_offset\":", "\"pack_offset\":-", RR_ECORRUPT, "pack_offset");
	rr_manifest_destroy(m);
}

static CU_TestInfo s_tests[] = {
	{ "test_file_checkpoint_kind_round_trips_and_needs_its_one_file",
	  test_file_checkpoint_kind_round_trips_and_needs_its_one_file },
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
	{ "test_parse_refuses_missing_or_malformed_raw_xxh128",
	  test_parse_refuses_missing_or_malformed_raw_xxh128 },
	{ "test_roundtrip_tensor_segments_of_every_encoding_field_by_field",
	  test_roundtrip_tensor_segments_of_every_encoding_field_by_field },
	{ "test_to_json_writes_tensor_members_in_documented_order",
	  test_to_json_writes_tensor_members_in_documented_order },
	{ "test_to_json_refuses_tensor_members_json_cannot_carry",
	  test_to_json_refuses_tensor_members_json_cannot_carry },
	{ "test_parse_refuses_bf16_or_fp16_on_a_dtype_other_than_f32",
	  test_parse_refuses_bf16_or_fp16_on_a_dtype_other_than_f32 },
	{ "test_parse_refuses_shape_not_matching_length",
	  test_parse_refuses_shape_not_matching_length },
	{ "test_parse_refuses_shape_overflow", test_parse_refuses_shape_overflow },
	{ "test_parse_refuses_bad_shape_entries", test_parse_refuses_bad_shape_entries },
	{ "test_parse_refuses_shape_of_65_dimensions", test_parse_refuses_shape_of_65_dimensions },
	{ "test_parse_refuses_chunk_not_whole_elements",
	  test_parse_refuses_chunk_not_whole_elements },
	{ "test_parse_refuses_tensor_chunk_sizes_not_adding_up",
	  test_parse_refuses_tensor_chunk_sizes_not_adding_up },
	{ "test_parse_refuses_scale_exp_missing_out_of_range_or_misplaced",
	  test_parse_refuses_scale_exp_missing_out_of_range_or_misplaced },
	{ "test_parse_refuses_tensor_members_on_zstd_segment",
	  test_parse_refuses_tensor_members_on_zstd_segment },
	{ "test_parse_refuses_missing_tensor_members", test_parse_refuses_missing_tensor_members },
	{ "test_parse_refuses_unknown_dtype", test_parse_refuses_unknown_dtype },
	{ "test_parse_refuses_empty_or_overlong_tensor_name",
	  test_parse_refuses_empty_or_overlong_tensor_name },
	{ "test_parse_reason_quotes_tensor_name_and_dtype_safely",
	  test_parse_reason_quotes_tensor_name_and_dtype_safely },
	{ "test_parse_refuses_non_integral_negative_and_huge_sizes",
	  test_parse_refuses_non_integral_negative_and_huge_sizes },
	{ "test_parse_refuses_mode_above_07777", test_parse_refuses_mode_above_07777 },
	{ "test_parse_refuses_wrong_types", test_parse_refuses_wrong_types },
	{ "test_parse_refuses_bad_run_id_and_checkpoint",
	  test_parse_refuses_bad_run_id_and_checkpoint },
	{ "test_parse_refuses_bad_format_and_not_json", test_parse_refuses_bad_format_and_not_json },
	{ "test_packed_chunk_round_trips_with_its_offset",
	  test_packed_chunk_round_trips_with_its_offset },
	{ "test_pack_offset_is_checked", test_pack_offset_is_checked },
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
	{ "file_format_round_trips_and_is_checked", test_file_format_round_trips_and_is_checked },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("manifest", s_tests)
