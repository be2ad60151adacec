/* Fuzz target: the restored-bytes record is read back from the checkpoint directory, which
 * the trainer can write. Any bytes must be refused, or give a record that writes back as
 * exactly those bytes (the format has one spelling) and finds each of its entries. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "restored.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                        \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "fuzz_restored: %s (%s)\n", what, #cond);  \
			__builtin_trap();                                          \
		}                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_restored *r = NULL;
	struct rr_buf b;
	int rc = rr_restored_parse((const char *)data, size, &r);

	if (rc != 0) {
		S_CHECK(rc == RR_ECORRUPT || rc == RR_ETOOBIG || rc == RR_ENOMEM,
			"unexpected error code");
		S_CHECK(r == NULL, "a refused record was handed out");
		return 0;
	}
	rr_buf_init(&b, RR_RESTORED_MAX_BYTES + 1);
	S_CHECK(rr_restored_to_text(r, &b) == 0, "an accepted record does not write back");
	S_CHECK(b.len == size && memcmp(b.data, data, size) == 0,
		"an accepted record writes back other bytes");
	rr_buf_free(&b);
	rr_restored_destroy(r);
	return 0;
}
