/* Fuzz target: multi-node part keys come from store listings (rr_parts_commit, the gc
 * sweep). Any key must be refused, or give a name without '/' and a rank that write back
 * to exactly the same key, so a listing never counts a lookalike as a part. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                        \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "fuzz_part_key: %s (%s)\n", what, #cond);  \
			__builtin_trap();                                          \
		}                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char key[RR_KEY_MAX], again[RR_KEY_MAX], name[256];
	unsigned rank = 0;

	if (size >= sizeof(key))
		return 0;
	memcpy(key, data, size);
	key[size] = '\0';
	if (!rr_key_parse_part(key, "run", name, sizeof(name), &rank))
		return 0;
	S_CHECK(name[0] && !strchr(name, '/'), "accepted an empty name or one with '/'");
	S_CHECK(rank <= 999999, "accepted a rank past six digits");
	S_CHECK(rr_key_part(again, "run", name, rank) == 0, "an accepted key does not write back");
	S_CHECK(strcmp(again, key) == 0, "an accepted key does not write back the same");
	return 0;
}
