/* Fuzz target: a suspect mark comes from the store (any machine of the run, of any version,
 * wrote it) and decides which checkpoint restore passes over. Any bytes must be refused, or
 * give bounded fields: strings NUL-terminated within their arrays, numbers in range. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rr/error.h"
#include "rr/marks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                          \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "fuzz_suspect_mark: %s (%s)\n", what, #cond); \
			__builtin_trap();                                            \
		}                                                                    \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_suspect m;
	char why[200];
	int rc = rr_suspect_parse((const char *)data, size, &m, why, sizeof(why));

	if (rc != 0) {
		S_CHECK(rc == RR_ECORRUPT || rc == RR_ENOMEM, "unexpected error code");
		S_CHECK(memchr(why, '\0', sizeof(why)) != NULL, "reason not terminated");
		return 0;
	}
	S_CHECK(size <= RR_MARK_MAX_BYTES, "accepted a mark past the ceiling");
	S_CHECK(memchr(m.host, '\0', sizeof(m.host)) && memchr(m.why, '\0', sizeof(m.why)),
		"a string ran past its array");
	S_CHECK(m.for_committed_ms >= 0 && m.unix_ms >= 0 && m.failures >= 0 &&
			m.exit_status >= -1 && m.exit_status <= 255,
		"a number out of range");
	return 0;
}
