/* Manifest and LATEST (docs/how-it-works.md, "What is stored"). Both are read from the store, which
 * restore trusts no more than the network it came over: every parse below has a size
 * ceiling, checks every number before converting it from cJSON's double, and says in one
 * line what it refused. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rr/error.h"
#include "rr/json.h"
#include "rr/fp16.h" /* RR_FP16_SCALE_MIN/MAX: the scales the encoder may choose */
#include "rr/manifest.h"
#include "rr/quote.h"
#include "rr/safetensors.h"

#define S_INT_MAX ((uint64_t)1 << 53) /* largest integer a JSON double holds exactly */
#define S_MAX_FILES 1000000u
#define S_MAX_CHUNKS 1000000u
#define S_MAX_STORED ((uint64_t)RR_CHUNK_MAX_RAW * 2) /* zstd never grows data this much */
#define S_MAX_MODE 07777u
#define S_LABEL_MAX 255  /* run_id, host */
#define S_PATH_MAX 4096
#define S_LATEST_MAX_BYTES (64u << 10)
#define S_TENSOR_NAME_MAX 65536
#define S_MAX_DIMS 64    /* as the safetensors reader (RR_ST_MAX_DIMS) */
#define S_WHERE_CAP 96

struct s_ctx {
	char *why;
	size_t why_len;
	size_t nchunks; /* chunk references seen so far, against S_MAX_CHUNKS */
	int version;    /* 1 or 2: packs only in 2 */
};

static int s_has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

/* cJSON keeps numbers as doubles and prints them with "%1.15g", falling back to "%1.17g"
 * only when the short form misses by more than its relative epsilon. So a few integers
 * in [2^52, 2^53] print as a neighbour (2^53 - 1 comes out as 9.00719925474099e+15).
 * Both the writer and the reader refuse such values, so that what is read is what was
 * written and the checksum (taken over cJSON's printing) is stable. */
static int s_prints_exactly(double d)
{
	char buf[64];
	cJSON item;

	if (d < 1e15)
		return 1; /* at most 15 digits: "%1.15g" is exact */
	memset(&item, 0, sizeof(item));
	item.type = cJSON_Number;
	item.valuedouble = d;
	item.valueint = INT_MAX; /* what cJSON_CreateNumber stores for large values */
	if (!cJSON_PrintPreallocated(&item, buf, (int)sizeof(buf), 0))
		return 0;
	return strtod(buf, NULL) == d;
}

static int s_uint_writable(uint64_t v)
{
	return v <= S_INT_MAX && s_prints_exactly((double)v);
}

/* The manifest's getters: rr_json's, and every number checked to print back exactly. */
static int s_exact(const struct rr_json_obj *o, const char *label, uint64_t v)
{
	if (!s_prints_exactly((double)v))
		return rr_fail(o->why, o->why_len, RR_ECORRUPT,
			       "%s%s (%.0f) cannot be written back exactly", o->where, label,
			       (double)v);
	return 0;
}

static int s_get_uint(const struct rr_json_obj *o, const char *key, uint64_t max,
		      uint64_t *out)
{
	char label[32];
	int rc = rr_json_get_uint(o, key, 0, max, out);

	if (rc)
		return rc;
	snprintf(label, sizeof(label), "\"%s\"", key);
	return s_exact(o, label, *out);
}

/* An element of an array, label naming it: "\"shape\"[2]". */
static int s_read_uint(const struct rr_json_obj *o, const cJSON *it, const char *label,
		       uint64_t max, uint64_t *out)
{
	int64_t v = 0;
	int rc = rr_json_read_int(o, it, label, 0, (int64_t)max, &v);

	if (rc)
		return rc;
	*out = (uint64_t)v;
	return s_exact(o, label, *out);
}

/* A digest of ndigits lowercase hex digits (64 for sha256, 32 for XXH3-128) into out,
 * which holds ndigits + 1 bytes. */
static int s_get_hex(const struct rr_json_obj *o, const char *key, size_t ndigits, char *out)
{
	char q[RR_QUOTE_CAP];
	const char *s = "";
	int rc = rr_json_get_string(o, key, 0, &s);

	if (rc)
		return rc;
	if (ndigits == RR_SHA256_HEX_LEN ? !rr_is_sha256_hex(s) : !rr_is_xxh128_hex(s))
		return rr_fail(o->why, o->why_len, RR_ECORRUPT,
			       "%s\"%s\" %s is not %zu lowercase hex digits", o->where, key,
			       rr_quote_str(q, s), ndigits);
	memcpy(out, s, ndigits + 1);
	return 0;
}

/* 1..255 bytes, no control characters: names that go into log lines. */
static int s_get_label(const struct rr_json_obj *o, const char *key, unsigned flags,
		       char **out)
{
	const char *s = NULL;
	int rc = rr_json_get_label(o, key, flags, S_LABEL_MAX, &s);

	if (rc || !s)
		return rc;
	*out = strdup(s);
	return *out ? 0 : RR_ENOMEM;
}

/* The checksum covers the manifest exactly as cJSON prints it without "checksum", so any
 * member, known or not, and any value the parser read differently are covered. */
static int s_verify_checksum(struct s_ctx *c, cJSON *root)
{
	char q[RR_QUOTE_CAP], got[RR_SHA256_HEX_LEN + 1];
	cJSON *sum;
	char *body = NULL;
	int rc;

	sum = cJSON_DetachItemFromObjectCaseSensitive(root, "checksum");
	if (!sum)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT, "checksum is missing");
	if (!cJSON_IsString(sum) || !sum->valuestring) {
		rc = rr_fail(c->why, c->why_len, RR_ECORRUPT, "checksum is not a string");
		goto out;
	}
	if (!rr_is_sha256_hex(sum->valuestring)) {
		rc = rr_fail(c->why, c->why_len, RR_ECORRUPT,
			     "checksum %s is not 64 lowercase hex digits",
			     rr_quote_str(q, sum->valuestring));
		goto out;
	}
	body = rr_json_print(root);
	if (!body) {
		rc = RR_ENOMEM;
		goto out;
	}
	rr_sha256_hex(body, strlen(body), got);
	if (strcmp(got, sum->valuestring) != 0) {
		rc = rr_fail(c->why, c->why_len, RR_ECORRUPT,
			     "checksum mismatch: manifest says %.12s..., its content hashes to "
			     "%.12s...",
			     sum->valuestring, got);
		goto out;
	}
	rc = 0;
out:
	free(body);
	cJSON_Delete(sum);
	return rc;
}

static int s_parse_chunk(struct s_ctx *c, const cJSON *j, const char *where,
			 struct rr_chunk_ref *ch)
{
	static const char *const keys[] = { "sha256", "size", "stored_size", "raw_xxh128",
					    "pack_offset" };
	struct rr_json_obj o;
	int rc;

	rc = rr_json_open(&o, j, where, RR_JSON_NAMES(keys), 0, c->why, c->why_len);
	if (!rc)
		rc = s_get_hex(&o, "sha256", RR_SHA256_HEX_LEN, ch->sha256);
	if (!rc)
		rc = s_get_uint(&o, "size", RR_CHUNK_MAX_RAW, &ch->size);
	if (!rc)
		rc = s_get_uint(&o, "stored_size", S_MAX_STORED, &ch->stored_size);
	if (!rc)
		rc = s_get_hex(&o, "raw_xxh128", RR_XXH128_HEX_LEN, ch->raw_xxh128);
	if (!rc && rr_json_has(&o, "pack_offset")) {
		if (c->version < 2)
			return rr_fail(c->why, c->why_len, RR_ECORRUPT,
				       "%s\"pack_offset\" in a manifest-1", where);
		ch->packed = 1;
		rc = s_get_uint(&o, "pack_offset", RR_PACK_MAX_BYTES, &ch->pack_offset);
		/* The slice lies inside a pack of bounded size. */
		if (!rc && ch->pack_offset + ch->stored_size > RR_PACK_MAX_BYTES)
			return rr_fail(c->why, c->why_len, RR_ECORRUPT,
				       "%sthe packed chunk ends beyond %u bytes", where,
				       RR_PACK_MAX_BYTES);
	}
	if (rc)
		return rc;
	if (ch->size == 0)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT, "%s\"size\" is 0", where);
	if (ch->stored_size == 0)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT, "%s\"stored_size\" is 0", where);
	return 0;
}

/* Bits per element of a safetensors dtype name (the safetensors reader's table), 0 when
 * unknown. */
static unsigned s_dtype_bits(const char *name)
{
	enum rr_st_dtype d;

	return rr_st_dtype_from_name(name, &d) ? 0 : rr_st_dtype_bits(d);
}

static const char *const s_tensor_keys[] = { "tensor", "dtype", "shape", "scale_exp" };

/* Reads what a tensor segment says about its tensor, and checks that the shape holds
 * exactly the segment's bytes. Sets *width to the element width, in bytes, that chunks
 * are cut at (1 for 4- and 6-bit dtypes, whose elements share bytes). What it allocates
 * is in sg already, for rr_manifest_destroy to free on any failure. */
static int s_parse_tensor(struct s_ctx *c, const struct rr_json_obj *o,
			  struct rr_segment *sg, unsigned *width)
{
	const char *where = o->where;
	char q[RR_QUOTE_CAP], label[32];
	const cJSON *shape, *it;
	const char *name = "", *dtype = "";
	uint64_t elems = 1;
	unsigned bits;
	size_t n, i = 0;
	int rc;

	rc = rr_json_get_string(o, "tensor", 0, &name);
	if (rc)
		return rc;
	/* any other byte is fine: the name is matched, logged quoted, never a path */
	n = strnlen(name, (size_t)S_TENSOR_NAME_MAX + 1);
	if (n == 0 || n > S_TENSOR_NAME_MAX)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "%s\"tensor\" %s must be 1..%d bytes", where, rr_quote_str(q, name),
			       S_TENSOR_NAME_MAX);
	sg->tensor = strdup(name);
	if (!sg->tensor)
		return RR_ENOMEM;

	rc = rr_json_get_string(o, "dtype", 0, &dtype);
	if (rc)
		return rc;
	bits = s_dtype_bits(dtype);
	if (!bits)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT, "%sunknown dtype %s", where,
			       rr_quote_str(q, dtype));
	memcpy(sg->dtype, dtype, strlen(dtype) + 1); /* a known dtype name: it fits */
	if ((sg->encoding == RR_ENC_BF16 || sg->encoding == RR_ENC_FP16) &&
	    strcmp(dtype, "F32") != 0)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "%sencoding \"%s\" needs dtype \"F32\", not %s", where,
			       rr_encoding_name(sg->encoding), rr_quote_str(q, dtype));

	rc = rr_json_get_array(o, "shape", 0, &shape, &n);
	if (rc)
		return rc;
	if (n > S_MAX_DIMS)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "%s\"shape\" has %zu dimensions, more than %d", where, n,
			       S_MAX_DIMS);
	if (n) {
		sg->shape = calloc(n, sizeof(*sg->shape));
		if (!sg->shape)
			return RR_ENOMEM;
		sg->ndim = (unsigned)n;
	}
	cJSON_ArrayForEach(it, shape)
	{
		if (i >= n)
			break;
		snprintf(label, sizeof(label), "\"shape\"[%zu]", i);
		rc = s_read_uint(o, it, label, S_INT_MAX, &sg->shape[i]);
		if (rc)
			return rc;
		/* checked in order, as the safetensors reader does: a later 0 does not
		 * excuse an overflow */
		if (sg->shape[i] && elems > UINT64_MAX / sg->shape[i])
			return rr_fail(c->why, c->why_len, RR_ECORRUPT,
				       "%s\"shape\" has more elements than 64 bits can count",
				       where);
		elems *= sg->shape[i];
		i++;
	}
	if (elems > UINT64_MAX / bits)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "%s\"shape\" holds %llu elements of %u bits, more bits than 64 bits "
			       "can count",
			       where, (unsigned long long)elems, bits);
	if (elems * bits % 8 != 0)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "%s\"shape\" holds %llu elements of %u bits, not a whole number of "
			       "bytes",
			       where, (unsigned long long)elems, bits);
	if (elems * bits / 8 != sg->length)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "%s\"shape\" holds %llu bytes (%llu elements of %s), not the length "
			       "%llu",
			       where, (unsigned long long)(elems * bits / 8),
			       (unsigned long long)elems, sg->dtype,
			       (unsigned long long)sg->length);

	if (sg->encoding == RR_ENC_FP16) {
		int64_t e = 0;
		rc = rr_json_get_int(o, "scale_exp", 0, RR_FP16_SCALE_MIN, RR_FP16_SCALE_MAX, &e);
		if (rc)
			return rc;
		sg->scale_exp = (int)e;
	} else if (rr_json_has(o, "scale_exp")) {
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "%s\"scale_exp\" is only for \"%s\", not \"%s\"", where,
			       rr_encoding_name(RR_ENC_FP16), rr_encoding_name(sg->encoding));
	}
	*width = bits % 8 ? 1 : bits / 8;
	return 0;
}

static int s_parse_segment(struct s_ctx *c, const cJSON *j, size_t fi, size_t si,
			   uint64_t expect_offset, uint64_t file_size, struct rr_segment *sg)
{
	static const char *const keys[] = { "offset", "length",	   "encoding", "tensor",
					    "dtype",  "shape",	   "scale_exp", "chunks" };
	char where[S_WHERE_CAP], cwhere[S_WHERE_CAP], q[RR_QUOTE_CAP];
	const cJSON *chunks, *it;
	const char *enc = "";
	struct rr_json_obj o;
	uint64_t sum = 0;
	unsigned width = 1;
	size_t n, k = 0;
	int rc;

	snprintf(where, sizeof(where), "file %zu segment %zu: ", fi, si);
	rc = rr_json_open(&o, j, where, RR_JSON_NAMES(keys), 0, c->why, c->why_len);
	if (!rc)
		rc = s_get_uint(&o, "offset", S_INT_MAX, &sg->offset);
	if (!rc)
		rc = s_get_uint(&o, "length", S_INT_MAX, &sg->length);
	if (rc)
		return rc;
	if (sg->offset > expect_offset)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "%soffset %llu leaves a gap (expected %llu)", where,
			       (unsigned long long)sg->offset, (unsigned long long)expect_offset);
	if (sg->offset < expect_offset)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "%soffset %llu overlaps the previous segment (expected %llu)", where,
			       (unsigned long long)sg->offset, (unsigned long long)expect_offset);
	if (sg->length == 0)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT, "%s\"length\" is 0", where);
	/* both at most 2^53: the sum cannot wrap */
	if (sg->offset + sg->length > file_size)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "%sends at %llu, past the file size %llu", where,
			       (unsigned long long)(sg->offset + sg->length),
			       (unsigned long long)file_size);

	rc = rr_json_get_string(&o, "encoding", 0, &enc);
	if (rc)
		return rc;
	if (rr_encoding_from_name(enc, &sg->encoding) != 0)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT, "%sunknown encoding %s", where,
			       rr_quote_str(q, enc));
	if (sg->encoding != RR_ENC_ZSTD) {
		rc = s_parse_tensor(c, &o, sg, &width);
		if (rc)
			return rc;
	} else {
		for (size_t t = 0; t < sizeof(s_tensor_keys) / sizeof(s_tensor_keys[0]); t++) {
			if (rr_json_has(&o, s_tensor_keys[t]))
				return rr_fail(c->why, c->why_len, RR_ECORRUPT,
					       "%s\"%s\" is only for tensor encodings, not \"%s\"",
					       where, s_tensor_keys[t], enc);
		}
	}
	rc = rr_json_get_array(&o, "chunks", 0, &chunks, &n);
	if (rc)
		return rc;
	if (n == 0)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT, "%shas no chunks", where);
	if (n > S_MAX_CHUNKS - c->nchunks)
		return rr_fail(c->why, c->why_len, RR_ETOOBIG, "manifest names more than %u chunks",
			       S_MAX_CHUNKS);
	c->nchunks += n;
	sg->chunks = calloc(n, sizeof(*sg->chunks));
	if (!sg->chunks)
		return RR_ENOMEM;
	sg->nchunks = n;
	cJSON_ArrayForEach(it, chunks)
	{
		if (k >= n)
			break;
		snprintf(cwhere, sizeof(cwhere), "file %zu segment %zu chunk %zu: ", fi, si, k);
		rc = s_parse_chunk(c, it, cwhere, &sg->chunks[k]);
		if (rc)
			return rc;
		/* tensor chunks are decoded (and restored) element by element */
		if (sg->chunks[k].size % width != 0)
			return rr_fail(c->why, c->why_len, RR_ECORRUPT,
				       "%s\"size\" %llu is not a whole number of %u-byte elements",
				       cwhere, (unsigned long long)sg->chunks[k].size, width);
		/* each size is at most 2^26 and there are at most 10^6: no wrap, but say so */
		if (sg->chunks[k].size > UINT64_MAX - sum)
			return rr_fail(c->why, c->why_len, RR_ECORRUPT, "%schunk sizes overflow",
				       where);
		sum += sg->chunks[k].size;
		k++;
	}
	if (sum != sg->length)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "%schunk sizes add up to %llu, not the length %llu", where,
			       (unsigned long long)sum, (unsigned long long)sg->length);
	return 0;
}

static int s_parse_file(struct s_ctx *c, const cJSON *j, size_t fi, struct rr_file_entry *fe)
{
	static const char *const keys[] = { "path", "mode", "size", "segments", "format" };
	char where[S_WHERE_CAP], q[RR_QUOTE_CAP];
	const cJSON *segs, *it, *fmt;
	const char *path = "";
	struct rr_json_obj o;
	uint64_t mode = 0, next = 0;
	size_t n, k = 0;
	int rc;

	snprintf(where, sizeof(where), "file %zu: ", fi);
	rc = rr_json_open(&o, j, where, RR_JSON_NAMES(keys), 0, c->why, c->why_len);
	if (!rc)
		rc = rr_json_get_string(&o, "path", 0, &path);
	if (rc)
		return rc;
	if (!rr_path_is_safe(path))
		return rr_fail(c->why, c->why_len, RR_EPATH,
			       "%spath %s leaves the checkpoint directory", where,
			       rr_quote_str(q, path));
	fe->path = strdup(path);
	if (!fe->path)
		return RR_ENOMEM;
	rc = s_get_uint(&o, "mode", S_MAX_MODE, &mode);
	if (!rc)
		rc = s_get_uint(&o, "size", S_INT_MAX, &fe->size);
	if (!rc)
		rc = rr_json_get_array(&o, "segments", 0, &segs, &n);
	if (rc)
		return rc;
	fe->mode = (uint32_t)mode;
	/* Optional: absent in manifests of plain files and of older versions. */
	rr_json_get_item(&o, "format", RR_JSON_OPTIONAL, &fmt);
	if (fmt) {
		size_t fl = cJSON_IsString(fmt) ? strlen(fmt->valuestring) : 0;
		if (fl == 0 || fl >= sizeof(fe->format) ||
		    strspn(fmt->valuestring, "abcdefghijklmnopqrstuvwxyz0123456789_") != fl)
			return rr_fail(c->why, c->why_len, RR_ECORRUPT,
				       "%s\"format\" is not a format name", where);
		memcpy(fe->format, fmt->valuestring, fl + 1);
	}
	if (fe->size == 0 && n != 0)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT, "%sis empty but has %zu segments",
			       where, n);
	if (fe->size != 0 && n == 0)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT, "%shas %llu bytes but no segments",
			       where, (unsigned long long)fe->size);
	/* every segment holds a chunk: bound the allocation before making it */
	if (n > S_MAX_CHUNKS - c->nchunks)
		return rr_fail(c->why, c->why_len, RR_ETOOBIG, "manifest names more than %u chunks",
			       S_MAX_CHUNKS);
	if (n) {
		fe->segs = calloc(n, sizeof(*fe->segs));
		if (!fe->segs)
			return RR_ENOMEM;
		fe->nsegs = n;
	}
	cJSON_ArrayForEach(it, segs)
	{
		if (k >= n)
			break;
		rc = s_parse_segment(c, it, fi, k, next, fe->size, &fe->segs[k]);
		if (rc)
			return rc;
		next = fe->segs[k].offset + fe->segs[k].length;
		k++;
	}
	if (next != fe->size)
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "%ssegments cover %llu of its %llu bytes", where,
			       (unsigned long long)next, (unsigned long long)fe->size);
	return 0;
}

struct s_path_ref {
	const char *path;
	size_t index;
};

/* Orders paths component by component ('/' below every other byte), so that a path
 * sorts right before the paths inside it as a directory: "a" < "a/b" < "a-b". */
static int s_path_cmp(const void *pa, const void *pb)
{
	const unsigned char *a = (const unsigned char *)((const struct s_path_ref *)pa)->path;
	const unsigned char *b = (const unsigned char *)((const struct s_path_ref *)pb)->path;

	for (;; a++, b++) {
		int ca = *a == '/' ? 1 : *a == 0 ? 0 : *a + 1;
		int cb = *b == '/' ? 1 : *b == 0 ? 0 : *b + 1;
		if (ca != cb)
			return ca < cb ? -1 : 1;
		if (ca == 0)
			break;
	}
	/* equal paths: keep the report stable (the later file is the duplicate) */
	size_t ia = ((const struct s_path_ref *)pa)->index;
	size_t ib = ((const struct s_path_ref *)pb)->index;
	return ia < ib ? -1 : ia > ib;
}

/* Refuses a path named twice, and a file that is also a directory of another file's path:
 * restore could only satisfy one of them. In the order above, if p is a directory of some
 * path, it is one of the path right after p, so neighbours are all we compare. */
static int s_check_paths(struct s_ctx *c, const struct rr_manifest *m)
{
	char q1[RR_QUOTE_CAP], q2[RR_QUOTE_CAP];
	struct s_path_ref *refs;
	int rc = 0;

	if (m->nfiles < 2)
		return 0;
	refs = calloc(m->nfiles, sizeof(*refs));
	if (!refs)
		return RR_ENOMEM;
	for (size_t i = 0; i < m->nfiles; i++) {
		refs[i].path = m->files[i].path;
		refs[i].index = i;
	}
	qsort(refs, m->nfiles, sizeof(*refs), s_path_cmp);
	for (size_t i = 1; i < m->nfiles; i++) {
		const char *a = refs[i - 1].path, *b = refs[i].path;
		size_t na = strlen(a);
		if (strcmp(a, b) == 0) {
			rc = rr_fail(c->why, c->why_len, RR_ECORRUPT,
				     "file %zu: path %s is also file %zu's", refs[i].index,
				     rr_quote_str(q1, b), refs[i - 1].index);
			break;
		}
		if (strncmp(a, b, na) == 0 && b[na] == '/') {
			rc = rr_fail(c->why, c->why_len, RR_ECORRUPT,
				     "file %zu: path %s is inside file %zu's path %s, which is "
				     "not a directory",
				     refs[i].index, rr_quote_str(q1, b), refs[i - 1].index,
				     rr_quote_str(q2, a));
			break;
		}
	}
	free(refs);
	return rc;
}

/* The format (which sets c->version) and the checksum over the whole document. */
static int s_parse_format(struct s_ctx *c, const struct rr_json_obj *o, cJSON *root)
{
	const char *fmt = "";
	char q[RR_QUOTE_CAP];
	int rc;

	rc = rr_json_get_string(o, "format", 0, &fmt);
	if (rc)
		return rc;
	if (strcmp(fmt, RR_MANIFEST_FORMAT) == 0) {
		c->version = 2;
	} else if (strcmp(fmt, RR_MANIFEST_FORMAT_V1) == 0) {
		c->version = 1;
	} else {
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "format %s is neither \"%s\" nor \"%s\"", rr_quote_str(q, fmt),
			       RR_MANIFEST_FORMAT, RR_MANIFEST_FORMAT_V1);
	}
	return s_verify_checksum(c, root);
}

/* Whose checkpoint it is: run_id, checkpoint, host (optional), the two times. */
static int s_parse_identity(struct s_ctx *c, const struct rr_json_obj *o,
			    struct rr_manifest *m)
{
	const char *name = "";
	char q[RR_QUOTE_CAP];
	uint64_t t = 0;
	int rc;

	rc = s_get_label(o, "run_id", 0, &m->run_id);
	if (!rc)
		rc = rr_json_get_string(o, "checkpoint", 0, &name);
	if (rc)
		return rc;
	if (!rr_checkpoint_name_valid(name))
		return rr_fail(c->why, c->why_len, RR_ECORRUPT, "checkpoint name %s is not valid",
			       rr_quote_str(q, name));
	m->checkpoint = strdup(name);
	if (!m->checkpoint)
		return RR_ENOMEM;
	rc = s_get_label(o, "host", RR_JSON_OPTIONAL | RR_JSON_NULLABLE, &m->host);
	if (!rc)
		rc = s_get_uint(o, "committed_unix_ms", S_INT_MAX, &t);
	if (rc)
		return rc;
	m->committed_unix_ms = (int64_t)t;
	rc = s_get_uint(o, "created_unix_ms", S_INT_MAX, &t);
	if (rc)
		return rc;
	m->created_unix_ms = (int64_t)t;
	return 0;
}

/* The files, each with its segments, then the paths against each other. */
static int s_parse_files(struct s_ctx *c, const struct rr_json_obj *o, struct rr_manifest *m)
{
	const cJSON *files, *it;
	size_t n, i = 0;
	int rc;

	rc = rr_json_get_array(o, "files", 0, &files, &n);
	if (rc)
		return rc;
	if (n > S_MAX_FILES)
		return rr_fail(c->why, c->why_len, RR_ETOOBIG,
			       "manifest names %zu files, more than %u", n, S_MAX_FILES);
	if (n) {
		m->files = calloc(n, sizeof(*m->files));
		if (!m->files)
			return RR_ENOMEM;
		m->nfiles = n;
	}
	cJSON_ArrayForEach(it, files)
	{
		if (i >= n)
			break;
		rc = s_parse_file(c, it, i, &m->files[i]);
		if (rc)
			return rc;
		i++;
	}
	return s_check_paths(c, m);
}

/* "kind" (optional): "dir", or "file" for a one-file checkpoint, whose only file has the
 * checkpoint's own name. */
static int s_parse_kind(struct s_ctx *c, const struct rr_json_obj *o, struct rr_manifest *m)
{
	const char *kind = "dir";
	char q[RR_QUOTE_CAP];
	int rc;

	rc = rr_json_get_string(o, "kind", RR_JSON_OPTIONAL, &kind);
	if (rc)
		return rc;
	if (strcmp(kind, "file") == 0) {
		if (m->nfiles != 1 || strcmp(m->files[0].path, m->checkpoint) != 0)
			return rr_fail(c->why, c->why_len, RR_ECORRUPT,
				       "a file checkpoint must hold exactly "
				       "one file named like the checkpoint");
		m->single_file = 1;
	} else if (strcmp(kind, "dir") != 0) {
		return rr_fail(c->why, c->why_len, RR_ECORRUPT,
			       "kind %s is neither \"file\" nor \"dir\"", rr_quote_str(q, kind));
	}
	return 0;
}

/* Members not named in the manifest's objects are ignored, not refused: a change that an
 * older agent must not read past comes with a new "format", and the checksum covers every
 * member, read or not. */
int rr_manifest_parse(const char *text, size_t len, struct rr_manifest **out, char *why,
		      size_t why_len)
{
	static const char *const keys[] = { "format",	  "run_id",	     "checkpoint",
					    "host",	  "committed_unix_ms", "created_unix_ms",
					    "files",	  "checksum",	     "kind" };
	struct s_ctx c = { why, why_len, 0, 0 };
	struct rr_manifest *m = NULL;
	struct rr_json_obj o;
	cJSON *root = NULL;
	int rc;

	if (why && why_len)
		why[0] = '\0';
	if (!out || (!text && len))
		return rr_fail(c.why, c.why_len, RR_EINVAL, "no manifest given");
	*out = NULL;
	if (len > RR_MANIFEST_MAX_BYTES)
		return rr_fail(c.why, c.why_len, RR_ETOOBIG,
			       "manifest is %zu bytes, above the ceiling of %u", len,
			       RR_MANIFEST_MAX_BYTES);
	rc = rr_json_parse_object("manifest", text ? text : "", len, &root, c.why, c.why_len);
	if (!rc)
		rc = rr_json_open(&o, root, "", RR_JSON_NAMES(keys), 0, c.why, c.why_len);
	if (!rc)
		rc = s_parse_format(&c, &o, root);
	if (rc)
		goto out;
	m = calloc(1, sizeof(*m));
	if (!m) {
		rc = RR_ENOMEM;
		goto out;
	}
	rc = s_parse_identity(&c, &o, m);
	if (!rc)
		rc = s_parse_files(&c, &o, m);
	if (!rc)
		rc = s_parse_kind(&c, &o, m);
	if (rc)
		goto out;
	*out = m;
	m = NULL;
out:
	if (rc == RR_ENOMEM)
		rr_fail(c.why, c.why_len, rc, "out of memory reading the manifest");
	rr_manifest_destroy(m);
	cJSON_Delete(root);
	return rc;
}

void rr_manifest_destroy(struct rr_manifest *m)
{
	if (!m)
		return;
	for (size_t i = 0; m->files && i < m->nfiles; i++) {
		struct rr_file_entry *fe = &m->files[i];
		for (size_t k = 0; fe->segs && k < fe->nsegs; k++) {
			free(fe->segs[k].chunks);
			free(fe->segs[k].tensor);
			free(fe->segs[k].shape);
		}
		free(fe->segs);
		free(fe->path);
	}
	free(m->files);
	free(m->run_id);
	free(m->checkpoint);
	free(m->host);
	free(m);
}

/* --- writing ------------------------------------------------------------------------- */

static int s_add_uint(cJSON *obj, const char *key, uint64_t v)
{
	if (!s_uint_writable(v))
		return RR_EINVAL;
	return cJSON_AddNumberToObject(obj, key, (double)v) ? 0 : RR_ENOMEM;
}

static int s_add_string(cJSON *obj, const char *key, const char *v)
{
	if (!v)
		return RR_EINVAL;
	return cJSON_AddStringToObject(obj, key, v) ? 0 : RR_ENOMEM;
}

/* A string held in a fixed field of cap bytes (hex digests, dtype). */
static int s_add_field(cJSON *obj, const char *key, const char *v, size_t cap)
{
	/* the writer does not judge content (tests build bad manifests with it), but it must
	 * not read past the field */
	if (!memchr(v, '\0', cap))
		return RR_EINVAL;
	return s_add_string(obj, key, v);
}

static int s_add_int64(cJSON *obj, const char *key, int64_t v)
{
	return v < 0 ? RR_EINVAL : s_add_uint(obj, key, (uint64_t)v);
}

/* Adds a new empty array or object under key into *out, owned by obj. */
static int s_add_container(cJSON *parent, const char *key, int array, cJSON **out)
{
	*out = array ? cJSON_CreateArray() : cJSON_CreateObject();
	if (!*out)
		return RR_ENOMEM;
	if (key ? !cJSON_AddItemToObject(parent, key, *out)
		: !cJSON_AddItemToArray(parent, *out)) {
		cJSON_Delete(*out);
		*out = NULL;
		return RR_ENOMEM;
	}
	return 0;
}

/* A tensor encoding's members are written; so are any a zstd segment carries anyway (the
 * parser refuses those), so that what is written is what the struct says. */
static int s_build_tensor(cJSON *o, const struct rr_segment *sg)
{
	int tensor = sg->encoding != RR_ENC_ZSTD;
	cJSON *shape = NULL, *dim;
	int rc = 0;

	if (sg->ndim && !sg->shape)
		return RR_EINVAL;
	if (tensor || sg->tensor)
		rc = s_add_string(o, "tensor", sg->tensor);
	if (!rc && (tensor || sg->dtype[0]))
		rc = s_add_field(o, "dtype", sg->dtype, sizeof(sg->dtype));
	if (!rc && (tensor || sg->ndim))
		rc = s_add_container(o, "shape", 1, &shape);
	for (unsigned i = 0; !rc && i < sg->ndim; i++) {
		if (!s_uint_writable(sg->shape[i])) {
			rc = RR_EINVAL;
			break;
		}
		dim = cJSON_CreateNumber((double)sg->shape[i]);
		if (!dim || !cJSON_AddItemToArray(shape, dim)) {
			cJSON_Delete(dim);
			rc = RR_ENOMEM;
		}
	}
	/* an int always prints exactly */
	if (!rc && (sg->encoding == RR_ENC_FP16 || sg->scale_exp != 0))
		rc = cJSON_AddNumberToObject(o, "scale_exp", sg->scale_exp) ? 0 : RR_ENOMEM;
	return rc;
}

static int s_build_segment(cJSON *arr, const struct rr_segment *sg)
{
	cJSON *o, *chunks, *co;
	const char *enc = rr_encoding_name(sg->encoding);
	int rc;

	if (!enc || (sg->nchunks && !sg->chunks))
		return RR_EINVAL;
	rc = s_add_container(arr, NULL, 0, &o);
	if (!rc)
		rc = s_add_uint(o, "offset", sg->offset);
	if (!rc)
		rc = s_add_uint(o, "length", sg->length);
	if (!rc)
		rc = s_add_string(o, "encoding", enc);
	if (!rc)
		rc = s_build_tensor(o, sg);
	if (!rc)
		rc = s_add_container(o, "chunks", 1, &chunks);
	for (size_t k = 0; !rc && k < sg->nchunks; k++) {
		const struct rr_chunk_ref *ch = &sg->chunks[k];
		rc = s_add_container(chunks, NULL, 0, &co);
		if (!rc)
			rc = s_add_field(co, "sha256", ch->sha256, sizeof(ch->sha256));
		if (!rc)
			rc = s_add_uint(co, "size", ch->size);
		if (!rc)
			rc = s_add_uint(co, "stored_size", ch->stored_size);
		if (!rc)
			rc = s_add_field(co, "raw_xxh128", ch->raw_xxh128, sizeof(ch->raw_xxh128));
		if (!rc && ch->packed)
			rc = s_add_uint(co, "pack_offset", ch->pack_offset);
	}
	return rc;
}

static int s_build_file(cJSON *arr, const struct rr_file_entry *fe)
{
	cJSON *o, *segs;
	int rc;

	if (fe->mode > S_MAX_MODE || (fe->nsegs && !fe->segs))
		return RR_EINVAL;
	rc = s_add_container(arr, NULL, 0, &o);
	if (!rc)
		rc = s_add_string(o, "path", fe->path);
	if (!rc)
		rc = s_add_uint(o, "mode", fe->mode);
	if (!rc)
		rc = s_add_uint(o, "size", fe->size);
	if (!rc && fe->format[0])
		rc = s_add_string(o, "format", fe->format);
	if (!rc)
		rc = s_add_container(o, "segments", 1, &segs);
	for (size_t k = 0; !rc && k < fe->nsegs; k++)
		rc = s_build_segment(segs, &fe->segs[k]);
	return rc;
}

static int s_append_line(struct rr_buf *out, const char *text)
{
	size_t n = strlen(text);
	int rc = rr_buf_reserve(out, n + 1);
	if (rc)
		return rc;
	rr_buf_append(out, text, n);
	return rr_buf_append(out, "\n", 1);
}

/* Appends body with its checksum as the last member, and a newline: what cJSON prints once
 * "checksum" is added to the object body was printed from (one print instead of two). */
static int s_append_with_checksum(struct rr_buf *out, const char *body)
{
	char sum[RR_SHA256_HEX_LEN + 1];
	size_t n = strlen(body);
	int rc;

	if (n < 2 || body[n - 1] != '}')
		return RR_EINVAL;
	rr_sha256_hex(body, n, sum);
	rc = rr_buf_reserve(out, n + sizeof(",\"checksum\":\"\"}\n") + RR_SHA256_HEX_LEN);
	if (!rc)
		rc = rr_buf_append(out, body, n - 1);
	if (!rc)
		rc = rr_buf_append(out, ",\"checksum\":\"", strlen(",\"checksum\":\""));
	if (!rc)
		rc = rr_buf_append(out, sum, RR_SHA256_HEX_LEN);
	if (!rc)
		rc = rr_buf_append(out, "\"}\n", 3);
	return rc;
}

int rr_manifest_to_json(const struct rr_manifest *m, struct rr_buf *out)
{
	char *body = NULL;
	cJSON *root = NULL, *files;
	int rc;

	if (!m || !out || (m->nfiles && !m->files))
		return RR_EINVAL;
	if (m->nfiles > S_MAX_FILES)
		return RR_ETOOBIG;
	root = cJSON_CreateObject();
	if (!root)
		return RR_ENOMEM;
	rc = s_add_string(root, "format", RR_MANIFEST_FORMAT);
	if (!rc)
		rc = s_add_string(root, "run_id", m->run_id);
	if (!rc)
		rc = s_add_string(root, "checkpoint", m->checkpoint);
	if (!rc && m->host)
		rc = s_add_string(root, "host", m->host);
	if (!rc)
		rc = s_add_int64(root, "committed_unix_ms", m->committed_unix_ms);
	if (!rc)
		rc = s_add_int64(root, "created_unix_ms", m->created_unix_ms);
	if (!rc && m->single_file)
		rc = s_add_string(root, "kind", "file");
	if (!rc)
		rc = s_add_container(root, "files", 1, &files);
	for (size_t i = 0; !rc && i < m->nfiles; i++)
		rc = s_build_file(files, &m->files[i]);
	if (rc)
		goto out;
	body = rr_json_print(root);
	rc = body ? s_append_with_checksum(out, body) : RR_ENOMEM;
out:
	free(body);
	cJSON_Delete(root);
	return rc;
}

static uint64_t s_add_sat(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

uint64_t rr_manifest_total_size(const struct rr_manifest *m)
{
	uint64_t total = 0;
	for (size_t i = 0; m && m->files && i < m->nfiles; i++)
		total = s_add_sat(total, m->files[i].size);
	return total;
}

uint64_t rr_manifest_total_stored(const struct rr_manifest *m)
{
	uint64_t total = 0;
	for (size_t i = 0; m && m->files && i < m->nfiles; i++) {
		const struct rr_file_entry *fe = &m->files[i];
		for (size_t k = 0; fe->segs && k < fe->nsegs; k++) {
			const struct rr_segment *sg = &fe->segs[k];
			for (size_t j = 0; sg->chunks && j < sg->nchunks; j++)
				total = s_add_sat(total, sg->chunks[j].stored_size);
		}
	}
	return total;
}

/* --- names --------------------------------------------------------------------------- */

int rr_path_is_safe(const char *path)
{
	const char *comp, *p;

	if (!path || path[0] == '\0' || path[0] == '/' || strnlen(path, S_PATH_MAX + 1) > S_PATH_MAX)
		return 0;
	for (comp = p = path;; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '/' || ch == '\0') {
			size_t n = (size_t)(p - comp);
			if (n == 0 || (n == 1 && comp[0] == '.') ||
			    (n == 2 && comp[0] == '.' && comp[1] == '.'))
				return 0;
			if (ch == '\0')
				return 1;
			comp = p + 1;
		} else if (ch == '\\' || ch < 0x20 || ch == 0x7f) {
			return 0;
		}
	}
}

int rr_checkpoint_name_valid(const char *name)
{
	size_t n;

	if (!name)
		return 0;
	n = strnlen(name, 256);
	if (n == 0 || n > 255 || name[0] == '.' || strchr(name, '/'))
		return 0;
	return !s_has_control(name);
}

static const char *const s_encoding_names[] = {
	[RR_ENC_ZSTD] = "zstd",
	[RR_ENC_SHUFFLE_ZSTD] = "shuffle+zstd",
	[RR_ENC_BF16] = "bf16+shuffle+zstd",
	[RR_ENC_FP16] = "fp16+shuffle+zstd",
};

const char *rr_encoding_name(enum rr_encoding e)
{
	size_t i = (size_t)e;
	return i < sizeof(s_encoding_names) / sizeof(s_encoding_names[0]) ? s_encoding_names[i]
									   : NULL;
}

int rr_encoding_from_name(const char *name, enum rr_encoding *out)
{
	for (size_t i = 0; name && i < sizeof(s_encoding_names) / sizeof(s_encoding_names[0]);
	     i++) {
		if (s_encoding_names[i] && strcmp(name, s_encoding_names[i]) == 0) {
			if (out)
				*out = (enum rr_encoding)i;
			return 0;
		}
	}
	return RR_EINVAL;
}

/* --- LATEST -------------------------------------------------------------------------- */

int rr_latest_to_json(const char *checkpoint, int64_t updated_unix_ms, const char *host,
		      struct rr_buf *out)
{
	char *text = NULL;
	cJSON *root;
	int rc;

	if (!out || !rr_checkpoint_name_valid(checkpoint))
		return RR_EINVAL;
	root = cJSON_CreateObject();
	if (!root)
		return RR_ENOMEM;
	rc = s_add_string(root, "checkpoint", checkpoint);
	if (!rc)
		rc = s_add_int64(root, "updated_unix_ms", updated_unix_ms);
	if (!rc && host)
		rc = s_add_string(root, "host", host);
	if (rc)
		goto out;
	text = cJSON_PrintUnformatted(root);
	if (!text) {
		rc = RR_ENOMEM;
		goto out;
	}
	/* what we write must be readable back */
	if (strlen(text) + 1 > S_LATEST_MAX_BYTES) {
		rc = RR_ETOOBIG;
		goto out;
	}
	rc = s_append_line(out, text);
out:
	free(text);
	cJSON_Delete(root);
	return rc;
}

/* Only "checkpoint" is read; the other members written ("updated_unix_ms", "host") are for
 * people and are ignored, as any a newer agent adds. */
int rr_latest_parse(const char *text, size_t len, char *name_out, size_t name_cap)
{
	static const char *const keys[] = { "checkpoint" };
	struct rr_json_obj o;
	cJSON *root = NULL;
	const char *name = "";
	size_t n;
	int rc;

	if (!name_out || (!text && len))
		return RR_EINVAL;
	if (name_cap)
		name_out[0] = '\0';
	if (len > S_LATEST_MAX_BYTES)
		return RR_ETOOBIG;
	rc = rr_json_parse_object("LATEST", text ? text : "", len, &root, NULL, 0);
	if (!rc)
		rc = rr_json_open(&o, root, "", RR_JSON_NAMES(keys), 0, NULL, 0);
	if (!rc)
		rc = rr_json_get_string(&o, "checkpoint", 0, &name);
	if (rc)
		goto out;
	if (!rr_checkpoint_name_valid(name)) {
		rc = RR_ECORRUPT;
		goto out;
	}
	n = strlen(name);
	if (n >= name_cap) {
		rc = RR_ETOOBIG;
		goto out;
	}
	memcpy(name_out, name, n + 1);
out:
	cJSON_Delete(root);
	return rc;
}
