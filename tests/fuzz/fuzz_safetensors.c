/* Fuzz target: a *.safetensors file in a checkpoint is outside data. Any bytes must be
 * refused with a one-line reason, or read into a header whose tensors tile the data
 * exactly: sorted, contiguous from 0, each as long as dtype x shape says, the last ending
 * at the end of the file.
 *
 * Almost every random edit of a file changes its header length or the size its tensors
 * need, which would keep the fuzzer in front of the last checks. So each input is also
 * tried a second time "resealed": taken as the header text alone, given the 8-byte length a
 * writer would put in front, and a file size that fits the largest end offset the text
 * mentions (the data bytes themselves are never read). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rr/error.h"
#include "rr/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                           \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "fuzz_safetensors: %s (%s)\n", what, #cond);  \
			__builtin_trap();                                             \
		}                                                                     \
	} while (0)

#define S_WHY 512

static int s_utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char b = s[i];
		size_t need = b < 0x80 ? 0 : b >= 0xf0 ? 3 : b >= 0xe0 ? 2 : b >= 0xc2 ? 1 : 9;
		if (need == 9 || b > 0xf4 || n - i - 1 < need)
			return 0;
		for (size_t k = 1; k <= need; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
		i += need + 1;
	}
	return 1;
}

static void s_check_refused(int rc, const char *why)
{
	size_t n = strlen(why);

	S_CHECK(rc == RR_ECORRUPT || rc == RR_ETOOBIG || rc == RR_ENOMEM,
		"refused with an unexpected code");
	S_CHECK(n > 0 && n < S_WHY, "refused without a reason");
	for (size_t i = 0; i < n; i++)
		S_CHECK((unsigned char)why[i] >= 0x20 && why[i] != 0x7f,
			"reason is not one printable line");
	S_CHECK(s_utf8_ok((const unsigned char *)why, n), "reason is not UTF-8");
}

/* What a successful parse promises beyond "it did not crash". */
static void s_check_accepted(const struct rr_st_header *h, uint64_t file_size)
{
	uint64_t next = 0;

	S_CHECK(h->header_len <= RR_ST_MAX_HEADER, "header length over the ceiling");
	S_CHECK(h->ntensors == 0 || h->tensors, "tensors missing");
	for (size_t i = 0; i < h->ntensors; i++) {
		const struct rr_st_tensor *t = &h->tensors[i];
		uint64_t elems = 1, bits;
		size_t nlen;

		S_CHECK(t->name != NULL, "tensor without a name");
		nlen = strlen(t->name);
		S_CHECK(nlen > 0 && nlen <= (64u << 10), "name length out of bounds");
		S_CHECK(strcmp(t->name, "__metadata__") != 0, "__metadata__ read as a tensor");
		S_CHECK(s_utf8_ok((const unsigned char *)t->name, nlen), "name is not UTF-8");
		S_CHECK(rr_st_dtype_name(t->dtype) != NULL && rr_st_dtype_bits(t->dtype) > 0,
			"unknown dtype accepted");
		S_CHECK(t->ndim <= RR_ST_MAX_DIMS, "too many dimensions accepted");
		if (i > 0) {
			const struct rr_st_tensor *p = &h->tensors[i - 1];
			S_CHECK(p->begin < t->begin || (p->begin == t->begin && p->end <= t->end),
				"tensors not sorted by data_offsets");
		}
		S_CHECK(t->begin == next, "tensors not contiguous");
		S_CHECK(t->end >= t->begin, "tensor ends before it begins");
		for (unsigned d = 0; d < t->ndim; d++)
			S_CHECK(!__builtin_mul_overflow(elems, t->shape[d], &elems),
				"shape product overflow accepted");
		S_CHECK(!__builtin_mul_overflow(elems, (uint64_t)rr_st_dtype_bits(t->dtype), &bits),
			"size overflow accepted");
		S_CHECK(bits % 8 == 0, "tensor not ending on a byte boundary accepted");
		S_CHECK(t->end - t->begin == bits / 8, "size does not match dtype x shape");
		next = t->end;
	}
	S_CHECK(next + 8 + h->header_len == file_size, "tensors do not end at the end of the file");
	/* names are unique (inputs are small, so quadratic is fine) */
	for (size_t i = 0; i < h->ntensors && i < 4096; i++)
		for (size_t k = i + 1; k < h->ntensors && k < 4096; k++)
			S_CHECK(strcmp(h->tensors[i].name, h->tensors[k].name) != 0,
				"duplicate tensor name accepted");
}

static void s_run(const uint8_t *buf, size_t len, uint64_t file_size)
{
	struct rr_st_header h;
	char why[S_WHY];
	uint64_t n = 0;
	int rc, rc_size = RR_ECORRUPT;

	if (len >= 8)
		rc_size = rr_st_header_size(buf, file_size, &n);
	rc = rr_st_parse(buf, len, file_size, &h, why, sizeof(why));
	if (rc) {
		s_check_refused(rc, why);
		S_CHECK(h.ntensors == 0 && h.tensors == NULL, "refusal left tensors behind");
		if (rc_size)
			S_CHECK(rc == rc_size, "parse and header_size disagree on the prefix");
	} else {
		S_CHECK(rc_size == 0 && n == h.header_len, "header_size disagrees with parse");
		S_CHECK(why[0] == '\0', "accepted with a reason");
		s_check_accepted(&h, file_size);
	}
	rr_st_header_free(&h);
	S_CHECK(h.ntensors == 0 && h.tensors == NULL, "free left tensors behind");
}

/* The largest data_offsets end the text mentions, if it parses at all. */
static uint64_t s_max_end(const uint8_t *data, size_t size)
{
	cJSON *root = cJSON_ParseWithLength((const char *)data, size);
	const cJSON *it;
	double max = 0;

	cJSON_ArrayForEach(it, root)
	{
		const cJSON *off = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
		const cJSON *end = cJSON_GetArrayItem(off, 1);
		if (cJSON_IsNumber(end) && end->valuedouble > max && end->valuedouble < 1e15)
			max = end->valuedouble;
	}
	cJSON_Delete(root);
	return (uint64_t)max;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *sealed;

	/* as a whole file */
	s_run(data, size, size);

	/* resealed: the input is the header text */
	if (size > RR_ST_MAX_HEADER || size == 0 || data[0] != '{')
		return 0;
	sealed = malloc(size + 8);
	if (!sealed)
		return 0;
	for (int i = 0; i < 8; i++)
		sealed[i] = (uint8_t)((uint64_t)size >> (8 * i));
	memcpy(sealed + 8, data, size);
	s_run(sealed, size + 8, 8 + (uint64_t)size + s_max_end(data, size));
	free(sealed);
	return 0;
}
