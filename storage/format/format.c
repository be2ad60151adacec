/* The format table and what every format shares: plans, reading, choosing. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rr/error.h"
#include "rr/format.h"
#include "rr/fsutil.h"

/* Probed in order; plain claims everything and comes last. */
static const struct rr_format *const s_formats[] = {
	&rr_format_safetensors,
	&rr_format_torch,
	&rr_format_plain,
};
#define S_NFORMATS (sizeof(s_formats) / sizeof(s_formats[0]))

/* Enough for the zip and safetensors signatures. */
#define S_HEAD 8

const struct rr_format *rr_format_for(const char *path, const uint8_t *head, size_t head_len,
				      uint64_t size)
{
	for (size_t i = 0; i < S_NFORMATS; i++)
		if (s_formats[i]->claims(path, head, head_len, size))
			return s_formats[i];
	return &rr_format_plain;
}

const struct rr_format *rr_format_by_name(const char *name)
{
	if (!name || !name[0])
		return &rr_format_plain;
	for (size_t i = 0; i < S_NFORMATS; i++)
		if (strcmp(s_formats[i]->name, name) == 0)
			return s_formats[i];
	return NULL;
}

int rr_format_encoding_lossy(enum rr_encoding e)
{
	return e == RR_ENC_BF16 || e == RR_ENC_FP16;
}

int rr_format_fd_pread(void *ud, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	int rc;

	if (off > INT64_MAX)
		return RR_ECORRUPT;
	rc = rr_pread_full(*(int *)ud, buf, len, (int64_t)off, &got);
	if (!rc && got < len)
		rc = RR_ECORRUPT;
	return rc;
}

int rr_format_plan_add(struct rr_format_plan *p, uint64_t offset, uint64_t length, int tensor,
		       const char *name, enum rr_st_dtype dtype, unsigned ndim,
		       const uint64_t *shape)
{
	struct rr_format_piece *pc;

	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		void *grown = realloc(p->pieces, cap * sizeof(*p->pieces));
		if (!grown)
			return RR_ENOMEM;
		p->pieces = grown;
		p->cap = cap;
	}
	pc = &p->pieces[p->n];
	memset(pc, 0, sizeof(*pc));
	pc->offset = offset;
	pc->length = length;
	pc->tensor = tensor;
	if (tensor) {
		pc->dtype = dtype;
		pc->ndim = ndim;
		pc->name = strdup(name ? name : "");
		if (ndim)
			pc->shape = malloc(ndim * sizeof(*pc->shape));
		if (!pc->name || (ndim && !pc->shape)) {
			free(pc->name);
			free(pc->shape);
			return RR_ENOMEM;
		}
		if (ndim)
			memcpy(pc->shape, shape, ndim * sizeof(*pc->shape));
	}
	p->n++;
	return 0;
}

void rr_format_plan_free(struct rr_format_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->pieces[i].name);
		free(p->pieces[i].shape);
	}
	free(p->pieces);
	memset(p, 0, sizeof(*p));
}

int rr_format_plan_fd(int fd, const char *rel, uint64_t size,
			struct rr_format_plan *out, const struct rr_format **used,
			const struct rr_format **refused, char *why, size_t why_len)
{
	uint8_t head[S_HEAD];
	size_t got = 0;
	const struct rr_format *f;
	struct rr_format_src src;
	int rc;

	memset(out, 0, sizeof(*out));
	*used = &rr_format_plain;
	*refused = NULL;
	rc = rr_pread_full(fd, head, sizeof(head), 0, &got);
	if (rc) {
		rr_fail(why, why_len, rc, "cannot read it: %s", rr_strerror(rc));
		goto out;
	}
	f = rr_format_for(rel, head, got < size ? got : (size_t)size, size);
	src = (struct rr_format_src){ .pread = rr_format_fd_pread, .ud = &fd, .size = size };
	rc = f->plan(&src, out, why, why_len);
	if (rc == 0) {
		*used = f;
		goto out;
	}
	rr_format_plan_free(out);
	if (rc == RR_ENOMEM || rc == RR_EIO)
		goto out;
	/* Not understood: the file is stored byte-exact, which is always right. RR_ENOENT:
	 * not this format's file after all (a .bin of another kind), no warning due. */
	if (rc != RR_ENOENT)
		*refused = f;
	if (why && why_len && rc == RR_ENOENT)
		why[0] = '\0';
	rc = rr_format_plain.plan(&src, out, NULL, 0);
out:
	return rc;
}
