/* Fuzz target: manifest.json comes from the store, which restore does not trust. Any bytes
 * must be refused with a one-line reason, or read into a manifest that writes back and
 * reads again to the same thing, byte for byte.
 *
 * Random edits almost always break the sha256 checksum, which would keep the fuzzer in
 * front of every other check. So each input that is a JSON object is also tried a second
 * time "resealed": its checksum recomputed the way a writer would. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/hash.h"
#include "rr/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                        \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "fuzz_manifest: %s (%s)\n", what, #cond);  \
			__builtin_trap();                                          \
		}                                                                  \
	} while (0)

static int s_equal(const struct rr_manifest *a, const struct rr_manifest *b)
{
	if (strcmp(a->run_id, b->run_id) || strcmp(a->checkpoint, b->checkpoint) ||
	    (!a->host != !b->host) || (a->host && strcmp(a->host, b->host)) ||
	    a->committed_unix_ms != b->committed_unix_ms ||
	    a->created_unix_ms != b->created_unix_ms || a->nfiles != b->nfiles)
		return 0;
	for (size_t i = 0; i < a->nfiles; i++) {
		const struct rr_file_entry *fa = &a->files[i], *fb = &b->files[i];
		if (strcmp(fa->path, fb->path) || fa->mode != fb->mode || fa->size != fb->size ||
		    fa->nsegs != fb->nsegs)
			return 0;
		for (size_t k = 0; k < fa->nsegs; k++) {
			const struct rr_segment *sa = &fa->segs[k], *sb = &fb->segs[k];
			if (sa->offset != sb->offset || sa->length != sb->length ||
			    sa->encoding != sb->encoding || (!sa->tensor != !sb->tensor) ||
			    (sa->tensor && strcmp(sa->tensor, sb->tensor)) ||
			    strcmp(sa->dtype, sb->dtype) || sa->ndim != sb->ndim ||
			    (!sa->shape != !sb->shape) || sa->scale_exp != sb->scale_exp ||
			    sa->nchunks != sb->nchunks)
				return 0;
			for (unsigned d = 0; d < sa->ndim; d++)
				if (sa->shape[d] != sb->shape[d])
					return 0;
			for (size_t j = 0; j < sa->nchunks; j++) {
				const struct rr_chunk_ref *ca = &sa->chunks[j], *cb = &sb->chunks[j];
				if (strcmp(ca->sha256, cb->sha256) || ca->size != cb->size ||
				    ca->stored_size != cb->stored_size ||
				    strcmp(ca->raw_xxh128, cb->raw_xxh128))
					return 0;
			}
		}
	}
	return 1;
}

/* Bits per element of a safetensors dtype, 0 when unknown: the fuzzer's own copy, so that
 * a slip in the parser's table shows up as a disagreement. */
static unsigned s_dtype_bits(const char *d)
{
	static const char *const names[] = {
		"BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3",
		"F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16",
		"I32", "U32", "F32", "C64", "F64", "I64", "U64",
	};
	static const unsigned bits[] = { 8,  4,  6,  6,  8,  8,  8,  8,  8,  8,  8,
					 16, 16, 16, 16, 32, 32, 32, 64, 64, 64, 64 };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(d, names[i]) == 0)
			return bits[i];
	return 0;
}

/* What an accepted tensor segment promises: a name, a known dtype (F32 under bf16/fp16),
 * a shape whose bits (counted without overflow) are the length, whole-element chunks, a
 * scale only for fp16 and within its range. Returns the element width for chunks. */
static unsigned s_check_tensor(const struct rr_segment *sg)
{
	unsigned __int128 bits_total;
	unsigned bits;

	if (sg->encoding == RR_ENC_ZSTD) {
		S_CHECK(!sg->tensor && sg->dtype[0] == '\0' && sg->ndim == 0 && !sg->shape &&
				sg->scale_exp == 0,
			"accepted tensor members on a zstd segment");
		return 1;
	}
	S_CHECK(sg->encoding == RR_ENC_SHUFFLE_ZSTD || sg->encoding == RR_ENC_BF16 ||
			sg->encoding == RR_ENC_FP16,
		"accepted an unknown encoding");
	S_CHECK(sg->tensor && sg->tensor[0] && strlen(sg->tensor) <= 65536,
		"accepted a bad tensor name");
	S_CHECK(memchr(sg->dtype, '\0', sizeof(sg->dtype)) != NULL, "dtype not terminated");
	bits = s_dtype_bits(sg->dtype);
	S_CHECK(bits != 0, "accepted an unknown dtype");
	if (sg->encoding != RR_ENC_SHUFFLE_ZSTD)
		S_CHECK(strcmp(sg->dtype, "F32") == 0, "accepted bf16/fp16 on a non-F32 dtype");
	S_CHECK(sg->ndim <= 64 && (sg->ndim == 0) == (sg->shape == NULL),
		"accepted a bad shape array");
	/* 128 bits hold any product that fits 64 bits times one more factor, so an overflow
	 * of 64 bits is seen step by step */
	bits_total = 1;
	for (unsigned d = 0; d < sg->ndim; d++) {
		bits_total *= sg->shape[d];
		S_CHECK(bits_total <= UINT64_MAX, "accepted a shape that overflows 64 bits");
	}
	bits_total *= bits;
	S_CHECK(bits_total <= UINT64_MAX, "accepted a shape whose bits overflow 64 bits");
	S_CHECK(bits_total % 8 == 0 && bits_total / 8 == sg->length,
		"accepted a shape that does not hold the length");
	if (sg->encoding == RR_ENC_FP16)
		S_CHECK(sg->scale_exp >= -112 && sg->scale_exp <= 112,
			"accepted a scale_exp out of range");
	else
		S_CHECK(sg->scale_exp == 0, "accepted a scale_exp outside fp16");
	return bits % 8 ? 1 : bits / 8;
}

/* What a successful parse promises beyond "it did not crash". */
static void s_check_accepted(const struct rr_manifest *m)
{
	S_CHECK(rr_checkpoint_name_valid(m->checkpoint), "accepted a bad checkpoint name");
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct rr_file_entry *fe = &m->files[i];
		uint64_t next = 0;
		S_CHECK(rr_path_is_safe(fe->path), "accepted an unsafe path");
		S_CHECK(fe->mode <= 07777, "accepted a bad mode");
		for (size_t k = 0; k < fe->nsegs; k++) {
			const struct rr_segment *sg = &fe->segs[k];
			unsigned width = s_check_tensor(sg);
			uint64_t sum = 0;
			S_CHECK(sg->offset == next && sg->length > 0,
				"accepted non-contiguous segments");
			S_CHECK(sg->nchunks > 0, "accepted a segment without chunks");
			for (size_t j = 0; j < sg->nchunks; j++) {
				const struct rr_chunk_ref *ch = &sg->chunks[j];
				S_CHECK(rr_is_sha256_hex(ch->sha256) &&
						rr_is_xxh128_hex(ch->raw_xxh128),
					"accepted a bad chunk digest");
				S_CHECK(ch->size > 0 && ch->size <= RR_CHUNK_MAX_RAW &&
						ch->stored_size > 0,
					"accepted a bad chunk size");
				S_CHECK(ch->size % width == 0,
					"accepted a chunk of partial elements");
				sum += ch->size;
			}
			S_CHECK(sum == sg->length, "accepted chunks not adding up to the length");
			next += sg->length;
		}
		S_CHECK(next == fe->size, "accepted segments not covering the file");
	}
}

/* Members the struct cannot show were not ignored: in accepted text, a "zstd" segment has
 * no tensor member, and only an fp16 segment has "scale_exp". */
static int s_has(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key) != NULL;
}

static void s_check_text(const char *text, size_t len)
{
	const cJSON *files, *fe, *segs, *sg, *enc;
	char *copy = malloc(len + 1);
	cJSON *root;

	if (!copy)
		return;
	memcpy(copy, text, len);
	copy[len] = '\0'; /* cJSON has read past unterminated buffers */
	root = cJSON_ParseWithLength(copy, len);
	free(copy);
	S_CHECK(root != NULL, "accepted text cJSON cannot read");
	files = cJSON_GetObjectItemCaseSensitive(root, "files");
	cJSON_ArrayForEach(fe, files)
	{
		segs = cJSON_GetObjectItemCaseSensitive(fe, "segments");
		cJSON_ArrayForEach(sg, segs)
		{
			enc = cJSON_GetObjectItemCaseSensitive(sg, "encoding");
			S_CHECK(cJSON_IsString(enc), "accepted a segment without encoding");
			if (strcmp(enc->valuestring, "fp16+shuffle+zstd") != 0)
				S_CHECK(!s_has(sg, "scale_exp"), "accepted scale_exp outside fp16");
			if (strcmp(enc->valuestring, "zstd") == 0)
				S_CHECK(!s_has(sg, "tensor") && !s_has(sg, "dtype") &&
						!s_has(sg, "shape"),
					"accepted tensor members on a zstd segment");
		}
	}
	cJSON_Delete(root);
}

static void s_check_round_trip(const struct rr_manifest *m)
{
	struct rr_buf a, b;
	struct rr_manifest *again = NULL;
	char why[256] = "";
	int rc;

	rr_buf_init(&a, (size_t)RR_MANIFEST_MAX_BYTES * 2);
	rr_buf_init(&b, (size_t)RR_MANIFEST_MAX_BYTES * 2);
	rc = rr_manifest_to_json(m, &a);
	S_CHECK(rc == 0, "an accepted manifest does not write back");
	rc = rr_manifest_parse((const char *)a.data, a.len, &again, why, sizeof(why));
	if (rc)
		fprintf(stderr, "fuzz_manifest: re-read refused: %s\n", why);
	S_CHECK(rc == 0, "a written manifest does not read back");
	S_CHECK(s_equal(m, again), "the manifest read back differs");
	S_CHECK(rr_manifest_total_size(m) == rr_manifest_total_size(again), "totals differ");
	S_CHECK(rr_manifest_total_stored(m) == rr_manifest_total_stored(again), "totals differ");
	rc = rr_manifest_to_json(again, &b);
	S_CHECK(rc == 0 && a.len == b.len && memcmp(a.data, b.data, a.len) == 0,
		"writing is not deterministic");
	rr_manifest_destroy(again);
	rr_buf_free(&b);
	rr_buf_free(&a);
}

static void s_try(const char *text, size_t len)
{
	struct rr_manifest *m = NULL;
	char why[256];
	int rc;

	memset(why, 'x', sizeof(why));
	why[sizeof(why) - 1] = '\0';
	rc = rr_manifest_parse(text, len, &m, why, sizeof(why));
	if (rc == 0) {
		S_CHECK(m != NULL, "success without a manifest");
		s_check_accepted(m);
		s_check_text(text, len);
		s_check_round_trip(m);
		rr_manifest_destroy(m);
		return;
	}
	S_CHECK(m == NULL, "failure left a manifest behind");
	S_CHECK(rc == RR_ECORRUPT || rc == RR_EPATH || rc == RR_ETOOBIG || rc == RR_ENOMEM,
		"unexpected error code");
	S_CHECK(why[0] != '\0' && why[0] != 'x' && strchr(why, '\n') == NULL,
		"the reason is missing or not one line");
}

/* The input with its checksum recomputed, or NULL when it is not a JSON object. */
static char *s_reseal(const uint8_t *data, size_t size)
{
	char sum[RR_SHA256_HEX_LEN + 1];
	char *copy, *body, *out = NULL;
	cJSON *root;

	copy = malloc(size + 1);
	if (!copy)
		return NULL;
	memcpy(copy, data, size);
	copy[size] = '\0';
	root = cJSON_ParseWithLength(copy, size);
	free(copy);
	if (!cJSON_IsObject(root))
		goto out;
	cJSON_Delete(cJSON_DetachItemFromObjectCaseSensitive(root, "checksum"));
	body = cJSON_PrintUnformatted(root);
	if (!body)
		goto out;
	rr_sha256_hex(body, strlen(body), sum);
	free(body);
	if (cJSON_AddStringToObject(root, "checksum", sum))
		out = cJSON_PrintUnformatted(root);
out:
	cJSON_Delete(root);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *sealed;

	s_try((const char *)data, size);
	sealed = s_reseal(data, size);
	if (sealed) {
		s_try(sealed, strlen(sealed));
		free(sealed);
	}
	return 0;
}
