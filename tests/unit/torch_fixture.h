/* Reading the torch.save seed files of tests/fuzz/corpus (made by
 * tests/fuzz/make_torch_corpus.py with real torch) in the torch-format suites. */
#ifndef RR_TEST_TORCH_FIXTURE_H
#define RR_TEST_TORCH_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/format.h"

struct tf_mem {
	unsigned char *p;
	size_t n;
};

/* The corpus file dir/name (dir: "fuzz_torch_zip" or "fuzz_pickle_scan"), malloc'd; NULL
 * when missing. */
static inline unsigned char *tf_load(const char *dir, const char *name, size_t *len)
{
	const char *src = getenv("RR_SRC");
	char path[4096];
	unsigned char *buf = NULL;
	long n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/%s/%s", src ? src : ".", dir, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

static inline int tf_pread(void *ud, void *buf, size_t len, uint64_t off)
{
	const struct tf_mem *m = ud;
	if (off > m->n || m->n - off < len)
		return RR_ECORRUPT;
	memcpy(buf, m->p + off, len);
	return 0;
}

static inline struct rr_format_src tf_src(struct tf_mem *m)
{
	return (struct rr_format_src){ .pread = tf_pread, .ud = m, .size = m->n };
}

#endif
