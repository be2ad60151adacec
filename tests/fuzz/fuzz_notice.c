/* Fuzz target: the contents of a --drill-file are outside input. */
#include <stddef.h>
#include <stdint.h>

#include "rr/notice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_notice n = { 0 };
	char why[128];
	struct rr_buf out;

	if (rr_notice_parse_file((const char *)data, size, 1700000000, &n, why, sizeof(why)) == 0) {
		rr_buf_init(&out, 4096);
		if (rr_notice_to_json(&n, &out) != 0)
			__builtin_trap();
		rr_buf_free(&out);
	}
	return 0;
}
