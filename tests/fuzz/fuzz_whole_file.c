/* Fuzz target: a checkpoint file written in place is outside data, and whether it is whole
 * (storage/format/whole.c) decides whether it commits. Any bytes, named as a torch.save file
 * and as a safetensors file, must give one of the three answers without reading outside the
 * file; "whole" must hold what it claims: a zip whose end of central directory record, with
 * its comment, ends the file; and every safetensors file that rr_st_parse accepts (fuzzed on
 * its own by fuzz_safetensors) must be whole. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rr/format.h"
#include "rr/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                          \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "fuzz_whole_file: %s (%s)\n", what, #cond);  \
			__builtin_trap();                                            \
		}                                                                    \
	} while (0)

static int s_zip_ends_with_eocd(const uint8_t *d, size_t n)
{
	for (size_t c = 0; c <= 0xffff && c + 22 <= n; c++) {
		const uint8_t *e = d + n - 22 - c;
		if (memcmp(e, "PK\x05\x06", 4) == 0 && (size_t)(e[20] | e[21] << 8) == c)
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz_whole_file", MFD_CLOEXEC);
	enum rr_file_state a, b;
	struct rr_st_header h;

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	a = rr_format_file_state(fd, "ckpt.pt", size);
	b = rr_format_file_state(fd, "model.safetensors", size);
	close(fd);
	S_CHECK(a == RR_FILE_OTHER || a == RR_FILE_WHOLE || a == RR_FILE_CUT, "answer");
	S_CHECK(b == RR_FILE_OTHER || b == RR_FILE_WHOLE || b == RR_FILE_CUT, "answer");
	int zip = size >= 4 && memcmp(data, "PK\x03\x04", 4) == 0;
	if (size < 4)
		S_CHECK(a == RR_FILE_CUT && b == RR_FILE_CUT, "too short to be whole, not cut");
	else if (!zip)
		S_CHECK(a == RR_FILE_OTHER, "a file that is no zip, named .pt, judged");
	if (zip)
		S_CHECK(a == b, "a zip judged by its name");
	if (a == RR_FILE_WHOLE)
		S_CHECK(s_zip_ends_with_eocd(data, size), "whole without its end record last");
	if (!zip && size >= 4 && rr_st_parse(data, size, size, &h, NULL, 0) == 0) {
		S_CHECK(b == RR_FILE_WHOLE, "a valid safetensors file not whole");
		rr_st_header_free(&h);
	}
	return 0;
}
