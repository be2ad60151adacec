/* Fuzz target: the AWS shared files are INI text a user (or a tool) wrote. Any bytes must
 * give a known code with a "line N" reason, or pairs whose section, key and value are
 * trimmed, keys lowercased; the same text with CRLF line ends must read the same; and a
 * callback's stop value must come back at once. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/aws_profile.h"
#include "rr/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                    \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "fuzz_ini: %s (%s)\n", what, #cond);   \
			__builtin_trap();                                      \
		}                                                              \
	} while (0)

#define S_STOP 4242

struct s_run {
	uint64_t hash; /* FNV-1a over every section, key and value in order */
	size_t n;
	size_t stop_at; /* 1-based pair that returns S_STOP; 0: never */
};

static int s_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static int s_trimmed(const char *s)
{
	size_t n = strlen(s);
	return n == 0 || (!s_blank(s[0]) && !s_blank(s[n - 1]));
}

static void s_mix(struct s_run *r, const char *s)
{
	for (size_t i = 0; i <= strlen(s); i++) {
		r->hash ^= (unsigned char)s[i];
		r->hash *= 1099511628211ull;
	}
}

static int s_pair(const char *section, const char *key, const char *value, void *ud)
{
	struct s_run *r = ud;

	S_CHECK(section[0] && s_trimmed(section), "section empty or not trimmed");
	S_CHECK(key[0] && s_trimmed(key), "key empty or not trimmed");
	S_CHECK(!strchr(key, '\n') && !strchr(section, '\n'), "a newline in a name");
	for (const char *k = key; *k; k++)
		S_CHECK(!(*k >= 'A' && *k <= 'Z'), "key not lowercased");
	S_CHECK(s_trimmed(value), "value not trimmed");
	S_CHECK(strlen(section) <= 4096 && strlen(key) <= 2 * 4096 + 1, "name too long");
	s_mix(r, section);
	s_mix(r, key);
	s_mix(r, value);
	r->n++;
	return r->n == r->stop_at ? S_STOP : 0;
}

static int s_parse(const char *text, size_t len, struct s_run *r, char *why, size_t cap)
{
	r->hash = 1469598103934665603ull;
	r->n = 0;
	return rr_ini_parse(text, len, s_pair, r, why, cap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct s_run a = { 0, 0, 0 }, b = { 0, 0, 0 };
	char why[256], why2[256];
	char *crlf;
	size_t n = 0;
	int rc, rc2;

	rc = s_parse(text, size, &a, why, sizeof(why));
	S_CHECK(rc == 0 || rc == RR_ECORRUPT || rc == RR_ETOOBIG, "unexpected code");
	S_CHECK(memchr(why, '\0', sizeof(why)) != NULL, "why not terminated");
	if (rc)
		S_CHECK(strncmp(why, "line ", 5) == 0 || strncmp(why, "larger than", 11) == 0,
			"a refusal without its line");
	else
		S_CHECK(why[0] == '\0', "why set on success");

	/* the same text with CRLF line ends: the same pairs, the same code and reason */
	if (!memchr(data, '\r', size) && size < (1u << 19)) {
		crlf = malloc(2 * size + 1);
		S_CHECK(crlf != NULL, "out of memory");
		for (size_t i = 0; i < size; i++) {
			if (data[i] == '\n')
				crlf[n++] = '\r';
			crlf[n++] = (char)data[i];
		}
		rc2 = s_parse(crlf, n, &b, why2, sizeof(why2));
		S_CHECK(rc2 == rc && b.n == a.n && b.hash == a.hash, "CRLF reads differently");
		S_CHECK(strcmp(why, why2) == 0, "CRLF gives another reason");
		free(crlf);
	}

	/* stopped at the last pair reported: that value, and nothing after it */
	if (a.n) {
		b.stop_at = a.n;
		rc2 = s_parse(text, size, &b, NULL, 0);
		S_CHECK(rc2 == S_STOP && b.n == a.n, "the callback's stop value was lost");
	}
	return 0;
}
