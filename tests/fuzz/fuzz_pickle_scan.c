/* Fuzz target: data.pkl is outside data and is only scanned. Any bytes must be refused with
 * a one-line reason or give storages that are sorted, unique, with plain keys that find
 * themselves. Nothing in the input can run: the scanner has no call, import or exec path. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rr/error.h"
#include "pickle_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                           \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "fuzz_pickle_scan: %s (%s)\n", what, #cond);  \
			__builtin_trap();                                             \
		}                                                                     \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_pk_scan s;
	char why[512] = "";
	int rc = rr_pickle_scan(data, size, &s, why, sizeof(why));

	if (rc) {
		S_CHECK(rc == RR_ECORRUPT || rc == RR_ETOOBIG || rc == RR_ENOMEM, "unexpected code");
		S_CHECK(why[0] && !strchr(why, '\n'), "refused without a one-line reason");
		S_CHECK(s.n == 0 && s.storages == NULL, "refusal left storages behind");
		return 0;
	}
	for (size_t i = 0; i < s.n; i++) {
		const struct rr_pk_storage *st = &s.storages[i];
		size_t n = strlen(st->key);
		S_CHECK(n > 0 && n <= RR_PK_KEY_MAX, "key length out of bounds");
		S_CHECK(!strchr(st->key, '/') && st->key[0] != '.', "key is a path");
		S_CHECK(i == 0 || strcmp(s.storages[i - 1].key, st->key) < 0, "keys not sorted/unique");
		S_CHECK(rr_pickle_scan_find(&s, st->key) == st, "key lookup finds another");
		S_CHECK(rr_st_dtype_bits(st->dtype) >= 8, "a storage dtype below a byte");
	}
	rr_pickle_scan_free(&s);
	return 0;
}
