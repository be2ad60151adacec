/* Strict JSON-object parsing for outside data (see include/rr/json.h). */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rr/error.h"
#include "rr/json.h"
#include "rr/quote.h"

/* Offset of the first NUL character in the JSON text, raw or escaped as \u0000, or len.
 * cJSON would cut the string there ("a\u0000/../b" reads as "a") where other readers
 * keep it whole, and the two must not disagree about a name. A backslash starts an
 * escape when an even number of backslashes precede it. */
static size_t s_find_nul(const char *text, size_t len)
{
	const char *raw = memchr(text, '\0', len), *p = text;
	size_t limit = raw ? (size_t)(raw - text) : len;

	while ((p = memmem(p, limit - (size_t)(p - text), "\\u0000", 6)) != NULL) {
		size_t run = 0;
		while (p - run > text && p[-1 - (ptrdiff_t)run] == '\\')
			run++;
		if (run % 2 == 0)
			return (size_t)(p - text);
		p++;
	}
	return limit;
}

cJSON *rr_json_parse(const char *text, size_t len, const char **end)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	const char *stop = NULL;
	cJSON *j;

	pthread_mutex_lock(&lock);
	j = cJSON_ParseWithLengthOpts(text, len, &stop, 0);
	pthread_mutex_unlock(&lock);
	if (end)
		*end = stop;
	return j;
}

/* rr_json_parse_object and rr_json_parse_array: one value of type is_type (named type in
 * the reason). */
static int s_parse_strict(const char *what, const char *text, size_t len,
			  cJSON_bool (*is_type)(const cJSON *), const char *type, cJSON **out,
			  char *why, size_t why_len)
{
	const char *end = NULL;
	char *copy;
	size_t pos;

	*out = NULL;
	if (!text)
		text = "";
	pos = s_find_nul(text, len);
	if (pos != len)
		return rr_fail(why, why_len, RR_ECORRUPT,
			       "%s contains a NUL character (at byte %zu)",
			      what, pos);
	/* A terminated private copy: cJSON has read past unterminated buffers before
	 * (CVE-2023-53154), and outside bytes deserve no such chance. */
	copy = malloc(len + 1);
	if (!copy)
		return RR_ENOMEM;
	if (len)
		memcpy(copy, text, len);
	copy[len] = '\0';
	*out = rr_json_parse(copy, len, &end);
	pos = end && end >= copy && end <= copy + len ? (size_t)(end - copy) : len;
	if (*out) {
		while (pos < len && strchr(" \t\r\n", copy[pos]))
			pos++;
	}
	explicit_bzero(copy, len); /* the text may hold a secret (a service-account key) */
	free(copy);
	if (!*out)
		return rr_fail(why, why_len, RR_ECORRUPT,
			       "%s is not valid JSON (error near byte %zu "
			      "of %zu)", what, pos, len);
	if (pos != len) {
		cJSON_Delete(*out);
		*out = NULL;
		return rr_fail(why, why_len, RR_ECORRUPT,
			       "%s has data after its JSON value (at byte "
			      "%zu)", what, pos);
	}
	if (!is_type(*out)) {
		cJSON_Delete(*out);
		*out = NULL;
		return rr_fail(why, why_len, RR_ECORRUPT, "%s is not a JSON %s", what, type);
	}
	return 0;
}

int rr_json_parse_object(const char *what, const char *text, size_t len, cJSON **out,
			 char *why, size_t why_len)
{
	return s_parse_strict(what, text, len, cJSON_IsObject, "object", out, why, why_len);
}

int rr_json_parse_array(const char *what, const char *text, size_t len, cJSON **out,
			char *why, size_t why_len)
{
	return s_parse_strict(what, text, len, cJSON_IsArray, "array", out, why, why_len);
}

static void s_wipe(cJSON *j)
{
	for (; j; j = j->next) {
		if (j->valuestring)
			explicit_bzero(j->valuestring, strlen(j->valuestring));
		s_wipe(j->child); /* cJSON limits nesting to 1000 levels */
	}
}

void rr_json_wipe_delete(cJSON *j)
{
	if (!j)
		return;
	s_wipe(j);
	cJSON_Delete(j);
}

/* 1 for a number printed as plain decimal digits by every cJSON version. Not -0: "%1.15g"
 * prints "-0", a version that prints ints with "%d" prints "0". */
static int s_plain_int(const cJSON *j)
{
	double d = j->valuedouble;

	return cJSON_IsNumber(j) && d > -1e15 && d < 1e15 && d == (double)(long long)d &&
	       !(d == 0 && signbit(d));
}

static size_t s_count_ints(const cJSON *j)
{
	size_t n = 0;

	for (; j; j = j->next)
		n += (size_t)s_plain_int(j) + s_count_ints(j->child);
	return n;
}

/* Writes v in decimal and a NUL at out; returns the byte after the NUL. */
static char *s_decimal(long long v, char *out)
{
	char tmp[24];
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	size_t n = 0;

	do
		tmp[n++] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*out++ = '-';
	while (n)
		*out++ = tmp[--n];
	*out++ = '\0';
	return out;
}

/* Turns the plain-int numbers below j (at most *left of them) into raw text written at
 * *text, recording each node at *nodes for rr_json_print to turn back. */
static void s_to_raw(cJSON *j, cJSON ***nodes, char **text, size_t *left)
{
	for (; j; j = j->next) {
		s_to_raw(j->child, nodes, text, left);
		if (!*left || !s_plain_int(j))
			continue;
		j->valuestring = *text;
		*text = s_decimal((long long)j->valuedouble, *text);
		j->type = (j->type & ~0xFF) | cJSON_Raw;
		*(*nodes)++ = j;
		(*left)--;
	}
}

char *rr_json_print(cJSON *j)
{
	size_t n = s_count_ints(j), left = n;
	cJSON **nodes = n ? malloc(n * sizeof(*nodes)) : NULL, **at = nodes;
	char *digits = n ? malloc(n * 24) : NULL, *text = digits, *out;

	if (n && (!nodes || !digits)) {
		free(nodes);
		free(digits);
		return cJSON_PrintUnformatted(j);
	}
	s_to_raw(j, &at, &text, &left);
	out = cJSON_PrintUnformatted(j);
	for (size_t i = 0; i < (size_t)(at - nodes); i++) {
		nodes[i]->type = (nodes[i]->type & ~0xFF) | cJSON_Number;
		nodes[i]->valuestring = NULL;
	}
	free(nodes);
	free(digits);
	return out;
}

/* ---- reading an object's members ---- */

/* The biggest integer a double holds with all those below it: 2^53. */
#define S_EXACT_MAX 9007199254740992LL
#define S_LABEL_CAP 80 /* "\"<key>\"": our own member names, all short */

int rr_json_open(struct rr_json_obj *o, const cJSON *j, const char *where,
		 const char *const *names, size_t nnames, unsigned flags, char *why,
		 size_t why_len)
{
	unsigned char seen[RR_JSON_NAMES_MAX] = { 0 };
	char q[RR_QUOTE_CAP];
	const cJSON *it;

	*o = (struct rr_json_obj){ j, where, why, why_len };
	if (nnames > RR_JSON_NAMES_MAX)
		return RR_EINVAL;
	if (!cJSON_IsObject(j))
		return rr_fail(why, why_len, RR_ECORRUPT, "%sis not an object", where);
	cJSON_ArrayForEach(it, j)
	{
		size_t k = 0;
		if (!it->string)
			continue;
		while (k < nnames && strcmp(it->string, names[k]) != 0)
			k++;
		if (k == nnames && (flags & RR_JSON_CLOSED))
			return rr_fail(why, why_len, RR_ECORRUPT, "%s%s is not a known member",
				       where, rr_quote_str(q, it->string));
		if (k < nnames && seen[k]++)
			return rr_fail(why, why_len, RR_ECORRUPT, "%s\"%s\" appears twice", where,
				       names[k]);
	}
	return 0;
}

int rr_json_has(const struct rr_json_obj *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o->j, key) != NULL;
}

int rr_json_get_item(const struct rr_json_obj *o, const char *key, unsigned flags,
		     const cJSON **out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o->j, key);

	*out = NULL;
	if (it && cJSON_IsNull(it) && (flags & RR_JSON_NULLABLE))
		it = NULL;
	if (!it)
		return flags & RR_JSON_OPTIONAL ? 0
						: rr_fail(o->why, o->why_len, RR_ECORRUPT,
							  "%s\"%s\" is missing", o->where, key);
	*out = it;
	return 0;
}

/* The member when it is there and of the type is_type says; *out NULL when it is absent
 * and optional. */
static int s_typed(const struct rr_json_obj *o, const char *key, unsigned flags,
		   cJSON_bool (*is_type)(const cJSON *), const char *type, const cJSON **out)
{
	int rc = rr_json_get_item(o, key, flags, out);

	if (rc || !*out || is_type(*out))
		return rc;
	*out = NULL;
	return rr_fail(o->why, o->why_len, RR_ECORRUPT, "%s\"%s\" is not %s", o->where, key, type);
}

int rr_json_get_string(const struct rr_json_obj *o, const char *key, unsigned flags,
		       const char **out)
{
	const cJSON *it;
	int rc = s_typed(o, key, flags, cJSON_IsString, "a string", &it);

	if (rc || !it)
		return rc;
	if (!it->valuestring)
		return rr_fail(o->why, o->why_len, RR_ECORRUPT, "%s\"%s\" is not a string",
			       o->where, key);
	*out = it->valuestring;
	return 0;
}

static int s_has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

int rr_json_get_label(const struct rr_json_obj *o, const char *key, unsigned flags,
		      size_t max, const char **out)
{
	char q[RR_QUOTE_CAP];
	const char *s = NULL;
	size_t n;
	int rc = rr_json_get_string(o, key, flags, &s);

	if (rc || !s)
		return rc;
	n = strnlen(s, max + 1);
	if (n == 0 || n > max || s_has_control(s))
		return rr_fail(o->why, o->why_len, RR_ECORRUPT,
			       "%s\"%s\" %s must be 1..%zu bytes without control characters",
			       o->where, key, rr_quote_str(q, s), max);
	*out = s;
	return 0;
}

int rr_json_read_int(const struct rr_json_obj *o, const cJSON *it, const char *label,
		     int64_t min, int64_t max, int64_t *out)
{
	double d;

	if (min < -S_EXACT_MAX || max > S_EXACT_MAX || min > max)
		return RR_EINVAL;
	if (!cJSON_IsNumber(it))
		return rr_fail(o->why, o->why_len, RR_ECORRUPT, "%s%s is not a number", o->where,
			       label);
	d = it->valuedouble;
	if (!isfinite(d))
		return rr_fail(o->why, o->why_len, RR_ECORRUPT, "%s%s is not a finite number",
			       o->where, label);
	if (min == 0 && d < 0)
		return rr_fail(o->why, o->why_len, RR_ECORRUPT, "%s%s is negative (%.17g)",
			       o->where, label, d);
	if (min == 0 && d > (double)max)
		return rr_fail(o->why, o->why_len, RR_ECORRUPT,
			       "%s%s is %.*g, above the limit %lld", o->where, label,
			       d < 1e21 ? 21 : 6, d, (long long)max);
	if (d < (double)min || d > (double)max)
		return rr_fail(o->why, o->why_len, RR_ECORRUPT, "%s%s is %.17g, outside [%lld, %lld]",
			       o->where, label, d, (long long)min, (long long)max);
	/* min <= d <= max, both within 2^53: the conversion is defined */
	if ((double)(int64_t)d != d)
		return rr_fail(o->why, o->why_len, RR_ECORRUPT, "%s%s is not an integer (%.17g)",
			       o->where, label, d);
	*out = (int64_t)d; /* -0 reads as 0 */
	return 0;
}

/* rr_json_read_int on member key. */
static int s_member_int(const struct rr_json_obj *o, const char *key, const cJSON *it,
			int64_t min, int64_t max, int64_t *out)
{
	char label[S_LABEL_CAP];

	snprintf(label, sizeof(label), "\"%s\"", key);
	return rr_json_read_int(o, it, label, min, max, out);
}

int rr_json_get_int(const struct rr_json_obj *o, const char *key, unsigned flags,
		    int64_t min, int64_t max, int64_t *out)
{
	const cJSON *it;
	int rc = rr_json_get_item(o, key, flags, &it);

	return rc || !it ? rc : s_member_int(o, key, it, min, max, out);
}

int rr_json_get_uint(const struct rr_json_obj *o, const char *key, unsigned flags,
		     uint64_t max, uint64_t *out)
{
	const cJSON *it;
	int64_t v = 0;
	int rc = rr_json_get_item(o, key, flags, &it);

	if (rc || !it)
		return rc;
	if (max > (uint64_t)S_EXACT_MAX)
		return RR_EINVAL;
	rc = s_member_int(o, key, it, 0, (int64_t)max, &v);
	if (!rc)
		*out = (uint64_t)v;
	return rc;
}

int rr_json_get_bool(const struct rr_json_obj *o, const char *key, unsigned flags, int *out)
{
	const cJSON *it;
	int rc = s_typed(o, key, flags, cJSON_IsBool, "true or false", &it);

	if (!rc && it)
		*out = cJSON_IsTrue(it) ? 1 : 0;
	return rc;
}

int rr_json_get_array(const struct rr_json_obj *o, const char *key, unsigned flags,
		      const cJSON **out, size_t *n)
{
	int rc = s_typed(o, key, flags, cJSON_IsArray, "an array", out);

	*n = *out ? (size_t)cJSON_GetArraySize(*out) : 0;
	return rc;
}

int rr_json_get_object(const struct rr_json_obj *o, const char *key, unsigned flags,
		       const cJSON **out)
{
	return s_typed(o, key, flags, cJSON_IsObject, "an object", out);
}
