/* Fuzz target: LATEST comes from the store and names the checkpoint to restore. Any bytes
 * must be refused, or give a valid checkpoint name that writes back and reads again the
 * same, and that is refused (not cut) when the caller's buffer is too small. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                      \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_latest: %s (%s)\n", what, #cond);  \
			__builtin_trap();                                        \
		}                                                                \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[256], again[256], small[8];
	struct rr_buf b;
	int rc;

	rc = rr_latest_parse((const char *)data, size, name, sizeof(name));
	if (rc != 0) {
		S_CHECK(rc == RR_ECORRUPT || rc == RR_ETOOBIG || rc == RR_ENOMEM,
			"unexpected error code");
		S_CHECK(name[0] == '\0', "a refused LATEST left a name behind");
		return 0;
	}
	S_CHECK(rr_checkpoint_name_valid(name), "accepted a bad checkpoint name");

	rr_buf_init(&b, 1u << 20);
	rc = rr_latest_to_json(name, 1700000000000, "host", &b);
	S_CHECK(rc == 0, "an accepted name does not write back");
	rc = rr_latest_parse((const char *)b.data, b.len, again, sizeof(again));
	S_CHECK(rc == 0 && strcmp(name, again) == 0, "LATEST does not read back the same");
	rr_buf_free(&b);

	rc = rr_latest_parse((const char *)data, size, small, sizeof(small));
	if (strlen(name) < sizeof(small))
		S_CHECK(rc == 0 && strcmp(small, name) == 0, "a short name was refused");
	else
		S_CHECK(rc == RR_ETOOBIG, "a long name was not refused as too big");
	return 0;
}
