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
			    sa->encoding != sb->encoding || strcmp(sa->raw_sha256, sb->raw_sha256) ||
			    sa->nchunks != sb->nchunks)
				return 0;
			for (size_t j = 0; j < sa->nchunks; j++) {
				const struct rr_chunk_ref *ca = &sa->chunks[j], *cb = &sb->chunks[j];
				if (strcmp(ca->sha256, cb->sha256) || ca->size != cb->size ||
				    ca->stored_size != cb->stored_size)
					return 0;
			}
		}
	}
	return 1;
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
			S_CHECK(fe->segs[k].offset == next && fe->segs[k].length > 0,
				"accepted non-contiguous segments");
			next += fe->segs[k].length;
		}
		S_CHECK(next == fe->size, "accepted segments not covering the file");
	}
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
