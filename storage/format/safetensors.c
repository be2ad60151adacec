/* A strict reader of safetensors headers (the safetensors format (huggingface/safetensors
 * README, "Format"), after huggingface's SafeTensors::read_metadata and
 * Metadata::validate). A file it refuses is stored byte-exact, so refusing is always safe
 * and accepting must never be wrong.
 *
 * cJSON builds the tree, but it is lenient where the format is not: it keeps duplicate
 * keys, reads numbers into doubles (so 2^53 + 1 silently becomes 2^53), accepts leading
 * zeros, raw control characters and any byte <= 0x20 as whitespace, and cuts strings at
 * "\u0000". So the header text is first checked here, byte by byte (s_scan): UTF-8, every
 * token, every escape and every number, and the nesting depth. cJSON then only ever sees
 * text in which each number is a plain unsigned integer a double holds exactly, and each
 * string decodes to NUL-free UTF-8. Duplicate keys are found after parsing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rr/error.h"
#include "rr/json.h"
#include "rr/quote.h"
#include "rr/safetensors.h"

#define S_PREFIX 8
#define S_INT_MAX ((uint64_t)1 << 53) /* largest integer every JSON reader holds exactly */
#define S_MAX_DEPTH 3                 /* header { tensor { shape [ */
#define S_MAX_NAME (64u << 10)        /* bytes of a tensor name */
#define S_MAX_TENSORS (1u << 20)      /* bounds our array: ~550 bytes a tensor */
#define S_SHAPE_CAP (8 * 22 + 32)
#define S_METADATA "__metadata__"

static const struct {
	const char *name;
	unsigned bits;
} s_dtypes[] = {
	[RR_ST_BOOL] = { "BOOL", 8 },
	[RR_ST_U8] = { "U8", 8 },
	[RR_ST_I8] = { "I8", 8 },
	[RR_ST_F8_E5M2] = { "F8_E5M2", 8 },
	[RR_ST_F8_E4M3] = { "F8_E4M3", 8 },
	[RR_ST_F8_E8M0] = { "F8_E8M0", 8 },
	[RR_ST_F8_E4M3FNUZ] = { "F8_E4M3FNUZ", 8 },
	[RR_ST_F8_E5M2FNUZ] = { "F8_E5M2FNUZ", 8 },
	[RR_ST_I16] = { "I16", 16 },
	[RR_ST_U16] = { "U16", 16 },
	[RR_ST_F16] = { "F16", 16 },
	[RR_ST_BF16] = { "BF16", 16 },
	[RR_ST_I32] = { "I32", 32 },
	[RR_ST_U32] = { "U32", 32 },
	[RR_ST_F32] = { "F32", 32 },
	[RR_ST_C64] = { "C64", 64 },
	[RR_ST_F64] = { "F64", 64 },
	[RR_ST_I64] = { "I64", 64 },
	[RR_ST_U64] = { "U64", 64 },
	[RR_ST_F4] = { "F4", 4 },
	[RR_ST_F6_E2M3] = { "F6_E2M3", 6 },
	[RR_ST_F6_E3M2] = { "F6_E3M2", 6 },
};
#define S_NDTYPES (sizeof(s_dtypes) / sizeof(s_dtypes[0]))

const char *rr_st_dtype_name(enum rr_st_dtype d)
{
	return (unsigned)d < S_NDTYPES ? s_dtypes[d].name : NULL;
}

unsigned rr_st_dtype_bits(enum rr_st_dtype d)
{
	return (unsigned)d < S_NDTYPES ? s_dtypes[d].bits : 0;
}

int rr_st_dtype_from_name(const char *name, enum rr_st_dtype *out)
{
	if (!name)
		return RR_EINVAL;
	for (size_t i = 0; i < S_NDTYPES; i++) {
		if (strcmp(name, s_dtypes[i].name) == 0) {
			*out = (enum rr_st_dtype)i;
			return 0;
		}
	}
	return RR_EINVAL;
}

/* --- reasons ----------------------------------------------------------------------------- */

struct s_ctx {
	char *why;
	size_t why_len;
};

__attribute__((format(printf, 3, 4))) static int s_fail(struct s_ctx *c, int rc,
							 const char *fmt, ...)
{
	va_list ap;

	if (c->why && c->why_len) {
		va_start(ap, fmt);
		int n = vsnprintf(c->why, c->why_len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n >= c->why_len) {
			/* cut: do not leave half a UTF-8 character at the end */
			size_t end = c->why_len - 1, k = end;
			while (k > 0 && ((unsigned char)c->why[k - 1] & 0xc0) == 0x80)
				k--;
			if (k > 0 && ((unsigned char)c->why[k - 1] & 0xc0) == 0xc0) {
				unsigned char lead = (unsigned char)c->why[k - 1];
				size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
				if (end - (k - 1) < need)
					end = k - 1;
			}
			c->why[end] = '\0';
		}
	}
	return rc;
}

/* --- the 8-byte prefix -------------------------------------------------------------------- */

static uint64_t s_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static int s_header_size(struct s_ctx *c, const uint8_t first8[8], uint64_t file_size,
			 uint64_t *n_out)
{
	uint64_t n;

	if (file_size < S_PREFIX)
		return s_fail(c, RR_ECORRUPT,
			      "file of %llu bytes is too small for the 8-byte header length",
			      (unsigned long long)file_size);
	n = s_le64(first8);
	if (n > RR_ST_MAX_HEADER)
		return s_fail(c, RR_ETOOBIG, "header length %llu exceeds the limit of %u bytes",
			      (unsigned long long)n, RR_ST_MAX_HEADER);
	if (n > file_size - S_PREFIX)
		return s_fail(c, RR_ECORRUPT,
			      "header length %llu runs past the end of the file (%llu bytes)",
			      (unsigned long long)n, (unsigned long long)file_size);
	*n_out = n;
	return 0;
}

int rr_st_header_size(const uint8_t first8[8], uint64_t file_size, uint64_t *n_out)
{
	struct s_ctx c = { NULL, 0 };

	return s_header_size(&c, first8, file_size, n_out);
}

/* --- the header text, byte by byte ------------------------------------------------------- */

/* Returns the offset of the first byte that is not part of well-formed UTF-8 (as Rust's
 * str::from_utf8 and Python's strict decoder define it: no overlong forms, no surrogates,
 * nothing past U+10FFFF), or len when all of it is. */
static size_t s_utf8_bad_at(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char b = s[i];
		size_t need;
		unsigned char lo = 0x80, hi = 0xbf;

		if (b < 0x80) {
			i++;
			continue;
		}
		if (b >= 0xc2 && b <= 0xdf) {
			need = 1;
		} else if (b >= 0xe0 && b <= 0xef) {
			need = 2;
			if (b == 0xe0)
				lo = 0xa0; /* overlong */
			else if (b == 0xed)
				hi = 0x9f; /* UTF-16 surrogates */
		} else if (b >= 0xf0 && b <= 0xf4) {
			need = 3;
			if (b == 0xf0)
				lo = 0x90; /* overlong */
			else if (b == 0xf4)
				hi = 0x8f; /* past U+10FFFF */
		} else {
			return i;
		}
		if (len - i - 1 < need)
			return i;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return i;
		for (size_t k = 2; k <= need; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
		i += need + 1;
	}
	return len;
}

static int s_is_ws(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static int s_hex4(const unsigned char *p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		unsigned char ch = p[i];
		v <<= 4;
		if (ch >= '0' && ch <= '9')
			v |= (unsigned)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v |= (unsigned)(ch - 'a' + 10);
		else if (ch >= 'A' && ch <= 'F')
			v |= (unsigned)(ch - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* A string token starting at t[*pos] == '"'; on success *pos is just past its closing
 * quote. Refuses what JSON refuses (raw control characters, unknown escapes, unpaired
 * surrogates) and also "\u0000", which cJSON would turn into the end of the C string. */
static int s_scan_string(struct s_ctx *c, const unsigned char *t, size_t len, size_t *pos)
{
	size_t start = *pos, i = *pos + 1;

	while (i < len) {
		unsigned char ch = t[i];
		unsigned u, lo;

		if (ch == '"') {
			*pos = i + 1;
			return 0;
		}
		if (ch < 0x20)
			return s_fail(c, RR_ECORRUPT,
				      "header byte %zu: raw control character 0x%02x in a string", i,
				      ch);
		if (ch != '\\') {
			i++;
			continue;
		}
		if (i + 1 >= len)
			break;
		ch = t[i + 1];
		if (ch != 'u') {
			if (!strchr("\"\\/bfnrt", ch) || ch == '\0')
				return s_fail(c, RR_ECORRUPT,
					      "header byte %zu: invalid escape \"\\%c\" in a string",
					      i, ch >= 0x20 && ch < 0x7f ? ch : '?');
			i += 2;
			continue;
		}
		if (len - i < 6 || s_hex4(t + i + 2, &u))
			return s_fail(c, RR_ECORRUPT,
				      "header byte %zu: \"\\u\" needs four hex digits", i);
		if (u == 0)
			return s_fail(c, RR_ECORRUPT,
				      "header byte %zu: \"\\u0000\" (NUL) in a string", i);
		if (u >= 0xdc00 && u <= 0xdfff)
			return s_fail(c, RR_ECORRUPT,
				      "header byte %zu: unpaired UTF-16 surrogate \\u%04x", i, u);
		if (u >= 0xd800 && u <= 0xdbff) {
			if (len - i < 12 || t[i + 6] != '\\' || t[i + 7] != 'u' ||
			    s_hex4(t + i + 8, &lo) || lo < 0xdc00 || lo > 0xdfff)
				return s_fail(c, RR_ECORRUPT,
					      "header byte %zu: unpaired UTF-16 surrogate \\u%04x", i,
					      u);
			i += 12;
		} else {
			i += 6;
		}
	}
	return s_fail(c, RR_ECORRUPT, "header byte %zu: string never ends", start);
}

/* A number token starting at t[*pos]; on success *pos is just past it. Shapes and offsets
 * are unsigned integers, and there is nowhere else a number may appear, so every number
 * must be one, written plainly and no larger than 2^53. */
static int s_scan_number(struct s_ctx *c, const unsigned char *t, size_t len, size_t *pos)
{
	char q[RR_QUOTE_CAP];
	size_t start = *pos, end = start, ndig;
	uint64_t v = 0;

	while (end < len && (strchr("0123456789+-.eE", t[end]) && t[end] != '\0'))
		end++;
	rr_quote(q, (const char *)t + start, end - start);
	if (t[start] == '-')
		return s_fail(c, RR_ECORRUPT,
			      "header byte %zu: number %s is negative; shapes and offsets are "
			      "unsigned integers",
			      start, q);
	for (size_t i = start; i < end; i++) {
		if (t[i] == 'e' || t[i] == 'E')
			return s_fail(c, RR_ECORRUPT,
				      "header byte %zu: number %s is in exponent form; shapes and "
				      "offsets are plain integers",
				      start, q);
	}
	for (size_t i = start; i < end; i++) {
		if (t[i] == '.')
			return s_fail(c, RR_ECORRUPT,
				      "header byte %zu: number %s has a fraction; shapes and "
				      "offsets are integers",
				      start, q);
	}
	for (size_t i = start; i < end; i++) {
		if (t[i] < '0' || t[i] > '9')
			return s_fail(c, RR_ECORRUPT, "header byte %zu: malformed number %s",
				      start, q);
	}
	ndig = end - start;
	if (ndig > 1 && t[start] == '0')
		return s_fail(c, RR_ECORRUPT, "header byte %zu: number %s has a leading zero",
			      start, q);
	if (ndig > 16)
		goto too_big; /* 2^53 has 16 digits */
	for (size_t i = start; i < end; i++)
		v = v * 10 + (uint64_t)(t[i] - '0');
	if (v > S_INT_MAX)
		goto too_big;
	*pos = end;
	return 0;
too_big:
	return s_fail(c, RR_ECORRUPT,
		      "header byte %zu: number %s is above 2^53, where JSON numbers stop being "
		      "exact",
		      start, q);
}

/* Checks every token of the header text t[0..len) (already UTF-8, starting with '{') and
 * finds where the top-level object ends (*json_end). Structure (colons, commas, keys) is
 * left to cJSON. */
static int s_scan(struct s_ctx *c, const unsigned char *t, size_t len, size_t *json_end)
{
	size_t i = 0;
	unsigned depth = 0;
	int rc;

	while (i < len) {
		unsigned char ch = t[i];

		if (s_is_ws(ch)) {
			i++;
			continue;
		}
		switch (ch) {
		case '{':
		case '[':
			if (++depth > S_MAX_DEPTH)
				return s_fail(c, RR_ECORRUPT,
					      "header byte %zu: nested deeper than a safetensors "
					      "header can be (%d levels)",
					      i, S_MAX_DEPTH);
			i++;
			break;
		case '}':
		case ']':
			if (depth == 0)
				return s_fail(c, RR_ECORRUPT, "header byte %zu: unbalanced '%c'",
					      i, ch);
			i++;
			if (--depth == 0) {
				*json_end = i;
				return 0;
			}
			break;
		case ':':
		case ',':
			i++;
			break;
		case '"':
			rc = s_scan_string(c, t, len, &i);
			if (rc)
				return rc;
			break;
		case 't':
		case 'f':
		case 'n': {
			const char *lit = ch == 't' ? "true" : ch == 'f' ? "false" : "null";
			size_t n = strlen(lit);
			if (len - i < n || memcmp(t + i, lit, n) != 0)
				return s_fail(c, RR_ECORRUPT,
					      "header byte %zu: invalid literal (expected %s)", i,
					      lit);
			i += n;
			break;
		}
		default:
			if (ch == '-' || (ch >= '0' && ch <= '9')) {
				rc = s_scan_number(c, t, len, &i);
				if (rc)
					return rc;
				break;
			}
			if (ch >= 0x20 && ch < 0x7f)
				return s_fail(c, RR_ECORRUPT,
					      "header byte %zu: unexpected character '%c'", i, ch);
			return s_fail(c, RR_ECORRUPT, "header byte %zu: unexpected byte 0x%02x",
				      i, ch);
		}
	}
	return s_fail(c, RR_ECORRUPT, "header JSON object is not closed (truncated?)");
}

/* --- the parsed tree --------------------------------------------------------------------- */

static int s_strptrcmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Finds a key that appears twice in obj (n members). JSON leaves duplicates undefined:
 * cJSON keeps the first, serde_json and Python the last, so a file with one must not be
 * read at all. */
static int s_check_unique(struct s_ctx *c, const cJSON *obj, size_t n, const char *where)
{
	const char **keys;
	const cJSON *it;
	size_t k = 0;
	char q[RR_QUOTE_CAP];
	int rc = 0;

	if (n < 2)
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return s_fail(c, RR_ENOMEM, "out of memory checking %s for duplicate keys", where);
	cJSON_ArrayForEach(it, obj)
	{
		if (k < n)
			keys[k++] = it->string ? it->string : "";
	}
	qsort(keys, k, sizeof(*keys), s_strptrcmp);
	for (size_t i = 1; i < k; i++) {
		if (strcmp(keys[i - 1], keys[i]) == 0) {
			rc = s_fail(c, RR_ECORRUPT, "%s: key %s appears twice", where,
				    rr_quote_str(q, keys[i]));
			break;
		}
	}
	free(keys);
	return rc;
}

static const char *s_kind(const cJSON *item)
{
	return cJSON_IsObject(item)   ? "an object" :
	       cJSON_IsArray(item)    ? "an array" :
	       cJSON_IsString(item)   ? "a string" :
	       cJSON_IsNumber(item)   ? "a number" :
	       cJSON_IsNull(item)     ? "null" :
					"a boolean";
}

static int s_check_metadata(struct s_ctx *c, const cJSON *meta)
{
	const cJSON *it;
	size_t n = 0;
	char q[RR_QUOTE_CAP];

	if (!cJSON_IsObject(meta))
		return s_fail(c, RR_ECORRUPT,
			      "\"__metadata__\" is not an object of strings (it is %s)",
			      s_kind(meta));
	cJSON_ArrayForEach(it, meta)
	{
		if (!cJSON_IsString(it) || !it->valuestring)
			return s_fail(c, RR_ECORRUPT,
				      "\"__metadata__\": the value of %s is not a string",
				      rr_quote_str(q, it->string ? it->string : ""));
		n++;
	}
	return s_check_unique(c, meta, n, "\"__metadata__\"");
}

/* A cJSON number known (from s_scan) to be written as a plain integer <= 2^53. */
static int s_get_u64(const cJSON *item, uint64_t *out)
{
	double d;

	if (!cJSON_IsNumber(item))
		return -1;
	d = item->valuedouble;
	if (!(d >= 0 && d <= (double)S_INT_MAX) || (double)(uint64_t)d != d)
		return -1;
	*out = (uint64_t)d;
	return 0;
}

static int s_read_tensor(struct s_ctx *c, const cJSON *entry, struct rr_st_tensor *t)
{
	const cJSON *it, *dtype = NULL, *shape = NULL, *offsets = NULL;
	char q[RR_QUOTE_CAP], q2[RR_QUOTE_CAP];
	int ndim;
	const char *name = t->name;

	if (!cJSON_IsObject(entry))
		return s_fail(c, RR_ECORRUPT, "tensor %s: entry is %s, not an object",
			      rr_quote_str(q, name), s_kind(entry));
	cJSON_ArrayForEach(it, entry)
	{
		const cJSON **slot;
		const char *key = it->string ? it->string : "";

		if (strcmp(key, "dtype") == 0)
			slot = &dtype;
		else if (strcmp(key, "shape") == 0)
			slot = &shape;
		else if (strcmp(key, "data_offsets") == 0)
			slot = &offsets;
		else
			return s_fail(c, RR_ECORRUPT, "tensor %s: unknown member %s",
				      rr_quote_str(q, name), rr_quote_str(q2, key));
		if (*slot)
			return s_fail(c, RR_ECORRUPT, "tensor %s: member \"%s\" appears twice",
				      rr_quote_str(q, name), key);
		*slot = it;
	}
	if (!dtype || !shape || !offsets)
		return s_fail(c, RR_ECORRUPT, "tensor %s: missing \"%s\"", rr_quote_str(q, name),
			      !dtype ? "dtype" : !shape ? "shape" : "data_offsets");

	if (!cJSON_IsString(dtype) || !dtype->valuestring)
		return s_fail(c, RR_ECORRUPT, "tensor %s: dtype is %s, not a string",
			      rr_quote_str(q, name), s_kind(dtype));
	if (rr_st_dtype_from_name(dtype->valuestring, &t->dtype))
		return s_fail(c, RR_ECORRUPT, "tensor %s: unknown dtype %s", rr_quote_str(q, name),
			      rr_quote_str(q2, dtype->valuestring));

	if (!cJSON_IsArray(shape))
		return s_fail(c, RR_ECORRUPT, "tensor %s: shape is %s, not an array",
			      rr_quote_str(q, name), s_kind(shape));
	ndim = cJSON_GetArraySize(shape);
	if (ndim < 0 || ndim > RR_ST_MAX_DIMS)
		return s_fail(c, RR_ECORRUPT, "tensor %s: %d dimensions, more than %d",
			      rr_quote_str(q, name), ndim, RR_ST_MAX_DIMS);
	t->ndim = (unsigned)ndim;
	ndim = 0;
	cJSON_ArrayForEach(it, shape)
	{
		if (s_get_u64(it, &t->shape[ndim]))
			return s_fail(c, RR_ECORRUPT,
				      "tensor %s: shape entry %d is %s, not an unsigned integer",
				      rr_quote_str(q, name), ndim, s_kind(it));
		ndim++;
	}

	if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2)
		return s_fail(c, RR_ECORRUPT,
			      "tensor %s: data_offsets is not an array of two integers",
			      rr_quote_str(q, name));
	if (s_get_u64(offsets->child, &t->begin) || s_get_u64(offsets->child->next, &t->end))
		return s_fail(c, RR_ECORRUPT,
			      "tensor %s: data_offsets is not an array of two unsigned integers",
			      rr_quote_str(q, name));
	return 0;
}

/* The byte size of t, from its shape and dtype, with every product checked (like the
 * reference, which folds the shape left to right and fails on the first overflow). */
static int s_tensor_bytes(struct s_ctx *c, const struct rr_st_tensor *t, uint64_t *out)
{
	char q[RR_QUOTE_CAP];
	uint64_t elems = 1, bits;

	for (unsigned d = 0; d < t->ndim; d++) {
		if (__builtin_mul_overflow(elems, t->shape[d], &elems))
			return s_fail(c, RR_ECORRUPT,
				      "tensor %s: the element count of its shape overflows 64 bits",
				      rr_quote_str(q, t->name));
	}
	if (__builtin_mul_overflow(elems, (uint64_t)rr_st_dtype_bits(t->dtype), &bits))
		return s_fail(c, RR_ECORRUPT, "tensor %s: its size in bits overflows 64 bits",
			      rr_quote_str(q, t->name));
	if (bits % 8)
		return s_fail(c, RR_ECORRUPT,
			      "tensor %s: %llu elements of %s (%u bits) do not end on a byte "
			      "boundary",
			      rr_quote_str(q, t->name), (unsigned long long)elems,
			      rr_st_dtype_name(t->dtype), rr_st_dtype_bits(t->dtype));
	*out = bits / 8;
	return 0;
}

/* "[2, 3]", at most the first 8 dimensions ("[1, 1, ... 64 dims]" beyond). */
static const char *s_shape_str(char dst[S_SHAPE_CAP], const struct rr_st_tensor *t)
{
	size_t o = 0;

	dst[o++] = '[';
	for (unsigned d = 0; d < t->ndim; d++) {
		if (d == 8) {
			o += (size_t)snprintf(dst + o, S_SHAPE_CAP - o, ", ... %u dims", t->ndim);
			break;
		}
		o += (size_t)snprintf(dst + o, S_SHAPE_CAP - o, "%s%llu", d ? ", " : "",
				      (unsigned long long)t->shape[d]);
	}
	snprintf(dst + o, S_SHAPE_CAP - o, "]");
	return dst;
}

/* File order: by data_offsets, as the reference sorts them. Only empty tensors can tie
 * in a valid file; their names (unique by then) make the order deterministic. */
static int s_tensor_cmp(const void *a, const void *b)
{
	const struct rr_st_tensor *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The reference's validate(): each tensor starts where the previous one ended (the first
 * at 0), and holds exactly the bytes its dtype and shape need. Returns the data length. */
static int s_check_layout(struct s_ctx *c, const struct rr_st_header *h, uint64_t *data_len)
{
	char q[RR_QUOTE_CAP], shape[S_SHAPE_CAP];
	uint64_t next = 0;
	int rc;

	for (size_t i = 0; i < h->ntensors; i++) {
		const struct rr_st_tensor *t = &h->tensors[i];
		uint64_t need = 0;

		if (t->end < t->begin)
			return s_fail(c, RR_ECORRUPT,
				      "tensor %s: data_offsets [%llu, %llu] end before they begin",
				      rr_quote_str(q, t->name), (unsigned long long)t->begin,
				      (unsigned long long)t->end);
		if (t->begin > next)
			return s_fail(c, RR_ECORRUPT,
				      "tensor %s: data_offsets [%llu, %llu] leave a gap: the "
				      "data before it ends at %llu",
				      rr_quote_str(q, t->name), (unsigned long long)t->begin,
				      (unsigned long long)t->end, (unsigned long long)next);
		if (t->begin < next)
			return s_fail(c, RR_ECORRUPT,
				      "tensor %s: data_offsets [%llu, %llu] overlap the data "
				      "before it, which ends at %llu",
				      rr_quote_str(q, t->name), (unsigned long long)t->begin,
				      (unsigned long long)t->end, (unsigned long long)next);
		rc = s_tensor_bytes(c, t, &need);
		if (rc)
			return rc;
		if (t->end - t->begin != need)
			return s_fail(c, RR_ECORRUPT,
				      "tensor %s: %s %s needs %llu bytes, its data_offsets give "
				      "%llu",
				      rr_quote_str(q, t->name), rr_st_dtype_name(t->dtype),
				      s_shape_str(shape, t), (unsigned long long)need,
				      (unsigned long long)(t->end - t->begin));
		next = t->end;
	}
	*data_len = next;
	return 0;
}

static int s_read_tree(struct s_ctx *c, const cJSON *root, struct rr_st_header *h)
{
	const cJSON *it, *meta = NULL;
	const char **names = NULL;
	char q[RR_QUOTE_CAP];
	size_t members = 0, k = 0;
	int rc = 0;

	if (!cJSON_IsObject(root))
		return s_fail(c, RR_ECORRUPT, "header is not a JSON object");
	cJSON_ArrayForEach(it, root)
	{
		if (it->string && strcmp(it->string, S_METADATA) == 0)
			continue;
		if (++members > S_MAX_TENSORS)
			return s_fail(c, RR_ETOOBIG, "header lists more than %u tensors",
				      S_MAX_TENSORS);
	}
	if (members) {
		h->tensors = calloc(members, sizeof(*h->tensors));
		if (!h->tensors)
			return s_fail(c, RR_ENOMEM, "out of memory for %zu tensors", members);
	}

	cJSON_ArrayForEach(it, root)
	{
		const char *name = it->string ? it->string : "";
		size_t nlen = strlen(name);
		struct rr_st_tensor *t;

		if (strcmp(name, S_METADATA) == 0) {
			if (meta)
				return s_fail(c, RR_ECORRUPT,
					      "header: key \"__metadata__\" appears twice");
			meta = it;
			rc = s_check_metadata(c, it);
			if (rc)
				return rc;
			continue;
		}
		if (nlen == 0)
			return s_fail(c, RR_ECORRUPT, "a tensor has an empty name");
		if (nlen > S_MAX_NAME)
			return s_fail(c, RR_ECORRUPT, "tensor name %s is %zu bytes, over %u",
				      rr_quote_str(q, name), nlen, S_MAX_NAME);
		t = &h->tensors[h->ntensors];
		t->name = malloc(nlen + 1);
		if (!t->name)
			return s_fail(c, RR_ENOMEM, "out of memory for a tensor name");
		memcpy(t->name, name, nlen + 1);
		h->ntensors++;
		rc = s_read_tensor(c, it, t);
		if (rc)
			return rc;
	}

	if (h->ntensors > 1) {
		names = malloc(h->ntensors * sizeof(*names));
		if (!names)
			return s_fail(c, RR_ENOMEM, "out of memory checking tensor names");
		for (k = 0; k < h->ntensors; k++)
			names[k] = h->tensors[k].name;
		qsort(names, h->ntensors, sizeof(*names), s_strptrcmp);
		for (k = 1; k < h->ntensors; k++) {
			if (strcmp(names[k - 1], names[k]) == 0) {
				rc = s_fail(c, RR_ECORRUPT, "header: tensor name %s appears twice",
					    rr_quote_str(q, names[k]));
				break;
			}
		}
		free(names);
		if (rc)
			return rc;
		qsort(h->tensors, h->ntensors, sizeof(*h->tensors), s_tensor_cmp);
	}
	return 0;
}

/* --- entry point ------------------------------------------------------------------------- */

void rr_st_header_free(struct rr_st_header *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->ntensors; i++)
		free(h->tensors[i].name);
	free(h->tensors);
	memset(h, 0, sizeof(*h));
}

int rr_st_parse(const uint8_t *buf, size_t len, uint64_t file_size, struct rr_st_header *out,
		char *why, size_t why_len)
{
	struct s_ctx c = { why, why_len };
	const unsigned char *text;
	const char *parse_end = NULL;
	cJSON *root = NULL;
	uint64_t n = 0, data_len = 0;
	size_t bad, json_end = 0;
	int rc;

	if (why && why_len)
		why[0] = '\0';
	if (!out)
		return s_fail(&c, RR_EINVAL, "no header to fill");
	memset(out, 0, sizeof(*out));
	if (!buf && len)
		return s_fail(&c, RR_EINVAL, "no buffer");
	if (file_size >= S_PREFIX && len < S_PREFIX)
		return s_fail(&c, RR_EINVAL, "given %zu bytes, fewer than the 8-byte prefix", len);
	rc = s_header_size(&c, buf, file_size, &n);
	if (rc)
		return rc;
	if (len - S_PREFIX < n)
		return s_fail(&c, RR_EINVAL, "given %zu bytes of a %llu-byte header", len - S_PREFIX,
			      (unsigned long long)n);
	out->header_len = n;
	text = buf + S_PREFIX;

	bad = s_utf8_bad_at(text, (size_t)n);
	if (bad < n) {
		rc = s_fail(&c, RR_ECORRUPT, "header is not UTF-8: byte %zu (0x%02x) is invalid",
			    bad, text[bad]);
		goto out;
	}
	if (n == 0 || text[0] != '{') {
		rc = n == 0 ? s_fail(&c, RR_ECORRUPT, "header is empty")
			    : s_fail(&c, RR_ECORRUPT, "header does not start with '{'");
		goto out;
	}
	rc = s_scan(&c, text, (size_t)n, &json_end);
	if (rc)
		goto out;
	for (size_t i = json_end; i < n; i++) {
		if (text[i] != ' ') {
			rc = s_fail(&c, RR_ECORRUPT,
				    "header byte %zu: 0x%02x after the JSON object, where only "
				    "spaces (0x20) may pad it",
				    i, text[i]);
			goto out;
		}
	}
	root = rr_json_parse((const char *)text, json_end, &parse_end);
	if (!root) {
		/* s_scan leaves structure to cJSON; a failure here is bad structure (or, rarely,
		 * cJSON running out of memory, which it does not tell apart). */
		size_t at = parse_end && parse_end >= (const char *)text ?
				    (size_t)(parse_end - (const char *)text) :
				    0;
		rc = s_fail(&c, RR_ECORRUPT, "header is not valid JSON (near byte %zu)", at);
		goto out;
	}
	if (parse_end != (const char *)text + json_end) {
		rc = s_fail(&c, RR_ECORRUPT, "header is not one JSON object");
		goto out;
	}
	rc = s_read_tree(&c, root, out);
	if (rc)
		goto out;
	rc = s_check_layout(&c, out, &data_len);
	if (rc)
		goto out;
	if (data_len != file_size - S_PREFIX - n) {
		rc = s_fail(&c, RR_ECORRUPT,
			    "tensors cover %llu bytes but the file has %llu after the header%s",
			    (unsigned long long)data_len,
			    (unsigned long long)(file_size - S_PREFIX - n),
			    data_len < file_size - S_PREFIX - n ? " (trailing bytes)" :
								  " (truncated)");
		goto out;
	}
out:
	cJSON_Delete(root);
	if (rc) {
		rr_st_header_free(out);
		out->header_len = 0;
	}
	return rc;
}
