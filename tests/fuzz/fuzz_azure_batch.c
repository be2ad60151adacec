/* Fuzz target: a Blob Batch answer comes from the network. Its first line names the
 * boundary (as the Content-Type header would), the rest is the body. Whatever the bytes,
 * only sub-requests the answer names get a status, every status is an HTTP one, and every
 * error code is NUL-terminated within its field. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "azure_batch.h"
#include "rr/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                        \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "fuzz_azure_batch: %s (%s)\n", what, #cond); \
			__builtin_trap();                                          \
		}                                                                  \
	} while (0)

#define S_N 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	char ctype[128], boundary[RR_AZURE_BOUNDARY_MAX + 1];
	char code[S_N][64];
	int status[S_N], n;
	size_t hlen = nl ? (size_t)(nl - data) : 0;

	if (!nl || hlen >= sizeof(ctype))
		return 0;
	memcpy(ctype, data, hlen);
	ctype[hlen] = '\0';
	if (rr_azure_batch_boundary(ctype, boundary, sizeof(boundary)) != 0)
		snprintf(boundary, sizeof(boundary), "b");
	S_CHECK(strlen(boundary) <= RR_AZURE_BOUNDARY_MAX, "a boundary longer than RFC 2046's");
	memset(status, 0, sizeof(status));
	memset(code, 0x7f, sizeof(code));
	for (int i = 0; i < S_N; i++)
		code[i][0] = '\0';
	n = rr_azure_batch_parse(nl + 1, size - hlen - 1, boundary, status, code, S_N);
	S_CHECK(n == RR_ECORRUPT || (n >= 0 && n <= S_N), "a count beyond the sub-requests");
	for (int i = 0; i < S_N; i++) {
		S_CHECK(status[i] == 0 || (status[i] >= 100 && status[i] <= 599), "a bad status");
		S_CHECK(memchr(code[i], '\0', sizeof(code[i])), "an unterminated error code");
		S_CHECK(status[i] != 0 || code[i][0] == '\0', "a code without a status");
	}
	return 0;
}
