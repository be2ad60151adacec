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

int rr_json_parse_object(const char *what, const char *text, size_t len, cJSON **out,
			 char *why, size_t cap)
{
	const char *end = NULL;
	char *copy;
	size_t pos;

	*out = NULL;
	if (!text)
		text = "";
	pos = s_find_nul(text, len);
	if (pos != len)
		return rr_fail(why, cap, RR_ECORRUPT, "%s contains a NUL character (at byte %zu)",
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
		return rr_fail(why, cap, RR_ECORRUPT, "%s is not valid JSON (error near byte %zu "
			      "of %zu)", what, pos, len);
	if (pos != len) {
		cJSON_Delete(*out);
		*out = NULL;
		return rr_fail(why, cap, RR_ECORRUPT, "%s has data after its JSON value (at byte "
			      "%zu)", what, pos);
	}
	if (!cJSON_IsObject(*out)) {
		cJSON_Delete(*out);
		*out = NULL;
		return rr_fail(why, cap, RR_ECORRUPT, "%s is not a JSON object", what);
	}
	return 0;
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
