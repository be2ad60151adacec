/* Fuzz target: /proc/PID/stat lines. The kernel writes them, but field 2 (comm) is the
 * process's own choice, so a trainer can put spaces, ')' and digits there. Any bytes must
 * be refused with RR_EIO or give fields that sit after the line's last ')'. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                          \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "fuzz_proc_stat: %s (%s)\n", what, #cond);   \
			__builtin_trap();                                            \
		}                                                                    \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_proc_stat st;
	char *line = malloc(size + 1);
	const char *close;
	int rc;

	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	rc = rr_proc_stat_parse(line, 42, &st);
	S_CHECK(rc == 0 || rc == RR_EIO, "unexpected error code");
	if (rc == 0) {
		close = strrchr(line, ')');
		S_CHECK(close != NULL, "accepted a line without ')'");
		S_CHECK(st.state == close[2], "the state is not the field after the last ')'");
		S_CHECK(st.pid == 42 && st.ppid >= 0 && st.pgrp >= 0, "ids out of range");
	}
	free(line);
	return 0;
}
