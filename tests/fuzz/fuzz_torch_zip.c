/* Fuzz target: a torch.save file in a checkpoint is outside data. Any bytes must be
 * refused with a one-line reason or read into entries that lie inside the file, in order,
 * without overlapping, each local header before its data and the central directory after
 * all of them; and the torch format's planner must then tile the file with pieces whose
 * tensors are whole elements. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/format.h"
#include "torch_zip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                         \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "fuzz_torch_zip: %s (%s)\n", what, #cond);  \
			__builtin_trap();                                           \
		}                                                                   \
	} while (0)

struct s_mem {
	const uint8_t *p;
	size_t n;
};

static int s_pread(void *ud, void *buf, size_t len, uint64_t off)
{
	const struct s_mem *m = ud;
	if (off > m->n || m->n - off < len)
		return RR_ECORRUPT;
	memcpy(buf, m->p + off, len);
	return 0;
}

static void s_check_why(const char *why)
{
	size_t n = strlen(why);
	S_CHECK(n > 0, "refused without a reason");
	for (size_t i = 0; i < n; i++)
		S_CHECK(why[i] != '\n', "reason is not one line");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s_mem m = { data, size };
	struct rr_format_src src = { .pread = s_pread, .ud = &m, .size = size };
	struct rr_format_plan plan = { 0 };
	struct rr_zip z;
	char why[512] = "";
	uint64_t next = 0;
	int rc = rr_zip_read(&src, &z, why, sizeof(why));

	if (rc) {
		S_CHECK(rc == RR_ECORRUPT || rc == RR_ETOOBIG || rc == RR_ENOMEM, "unexpected code");
		s_check_why(why);
		S_CHECK(z.n == 0 && z.entries == NULL, "refusal left entries behind");
	} else {
		S_CHECK(z.cd_off + z.cd_size <= size, "central directory outside the file");
		for (size_t i = 0; i < z.n; i++) {
			const struct rr_zip_entry *e = &z.entries[i];
			S_CHECK(e->local_off >= next, "entries overlap or are out of order");
			S_CHECK(e->data_off > e->local_off && e->data_off + e->csize <= e->end,
				"data outside its entry");
			S_CHECK(e->end <= z.cd_off, "an entry runs into the central directory");
			S_CHECK(e->local_crc_off + 4 <= e->data_off, "local CRC field outside the header");
			S_CHECK(e->central_crc_off >= z.cd_off &&
				e->central_crc_off + 4 <= z.cd_off + z.cd_size, "central CRC outside");
			S_CHECK(!e->desc_crc_off || (e->desc_crc_off >= e->data_off + e->csize &&
						     e->desc_crc_off + 4 <= e->end), "descriptor CRC outside");
			S_CHECK(rr_zip_find(&z, e->name) == e, "name lookup finds another entry");
			next = e->end;
		}
		rr_zip_free(&z);
	}
	/* The whole torch plug-in: pieces tile the file; tensors are whole elements. */
	why[0] = '\0';
	rc = rr_format_torch.plan(&src, &plan, why, sizeof(why));
	if (rc == 0) {
		next = 0;
		for (size_t i = 0; i < plan.n; i++) {
			const struct rr_format_piece *pc = &plan.pieces[i];
			S_CHECK(pc->offset == next, "pieces do not tile the file");
			if (pc->tensor)
				S_CHECK(pc->length * 8 % rr_st_dtype_bits(pc->dtype) == 0 && pc->length,
					"a tensor piece is not whole elements");
			next = pc->offset + pc->length;
		}
		S_CHECK(next == size, "pieces do not end at the end of the file");
	} else if (rc != RR_ENOENT) {
		s_check_why(why);
	}
	rr_format_plan_free(&plan);
	return 0;
}
