/* Replays every file of a corpus directory through a fuzz target, so that inputs found
 * by libFuzzer stay fixed in ordinary (and sanitizer) builds without clang. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/buf.h"
#include "rr/fsutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	int n = 0;
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	DIR *d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 1;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p = rr_path_join(argv[1], e->d_name);
		struct rr_buf b;
		rr_buf_init(&b, 1u << 30);
		if (!p || rr_read_file(p, &b)) {
			fprintf(stderr, "cannot read %s\n", p ? p : e->d_name);
			return 1;
		}
		LLVMFuzzerTestOneInput(b.data ? b.data : (const uint8_t *)"", b.len);
		rr_buf_free(&b);
		free(p);
		n++;
	}
	closedir(d);
	if (n == 0) {
		fprintf(stderr, "no inputs in %s\n", argv[1]);
		return 1;
	}
	printf("%d passed, 0 failed\n", n);
	return 0;
}
