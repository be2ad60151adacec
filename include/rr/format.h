/* File formats of the persist pipeline (docs/how-it-works.md, "What is stored"). A format turns
 * one file into pieces: tensor records (dtype, element count) that are encoded element-wise,
 * and plain byte ranges stored byte-exact. On restore its finish hook repairs what lossy
 * records change (the zip CRCs of a torch.save file). persist and restore know formats only
 * through this table; a file no format understands is plain bytes. */
#ifndef RR_FORMAT_H
#define RR_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "rr/manifest.h"
#include "rr/safetensors.h"

#define RR_FORMAT_NAME_MAX 16

/* Where a format reads a file from: a file descriptor or (tests, fuzzing) memory. */
struct rr_format_src {
	/* Reads exactly len bytes at off; 0, or RR_ECORRUPT when they are not all there. */
	int (*pread)(void *ud, void *buf, size_t len, uint64_t off);
	void *ud;
	uint64_t size;
};

struct rr_format_piece {
	uint64_t offset, length;
	int tensor;              /* 1: elements of dtype; 0: plain bytes */
	char *name;              /* tensor: malloc'd name (safetensors name, zip entry name) */
	enum rr_st_dtype dtype;  /* tensor: element type */
	unsigned ndim;
	uint64_t *shape;         /* tensor: ndim entries, malloc'd (NULL when ndim is 0) */
};

/* A file cut into pieces, in file order, tiling it from 0 to its size. */
struct rr_format_plan {
	size_t n, cap;
	struct rr_format_piece *pieces;
};

struct rr_format {
	const char *name; /* as in the manifest's "format"; "" for plain */
	/* 1 when the file is this format's to plan (by name or first bytes), else 0. */
	int (*claims)(const char *path, const uint8_t *head, size_t head_len, uint64_t size);
	/* Plans a claimed file. 0, or a negative code and a one-line reason in why: then the
	 * file is stored byte-exact, with a warning unless the code is RR_ENOENT (the file is
	 * not this format's after all, as a .bin of some other kind). */
	int (*plan)(const struct rr_format_src *src, struct rr_format_plan *out, char *why,
		    size_t why_len);
	/* After restore wrote every segment of fe into fd (opened read-write): makes the
	 * file whole again where lossy segments changed bytes. chunk_crc, when not NULL, holds
	 * the CRC-32 (rr/crc32.h) of the bytes written for each chunk of fe's lossy segments
	 * (indexed by chunk, the segments' chunks in order; other entries unset), so the hook
	 * need not read them back. NULL when nothing to do. */
	int (*finish)(int fd, const struct rr_file_entry *fe, const uint32_t *chunk_crc,
		      char *why, size_t why_len);
};

extern const struct rr_format rr_format_plain;
extern const struct rr_format rr_format_safetensors;
extern const struct rr_format rr_format_torch;

/* The format that claims the file (path relative to the checkpoint, its first head_len
 * bytes, its size): safetensors, torch, else plain. Never NULL. */
const struct rr_format *rr_format_for(const char *path, const uint8_t *head, size_t head_len,
				      uint64_t size);

/* The format named in a manifest ("" or NULL: plain), or NULL when unknown. */
const struct rr_format *rr_format_by_name(const char *name);

/* Plans the file open as fd (rel: its path in the checkpoint; the caller keeps fd) with
 * the format that claims it; on refusal falls back to one plain piece list and returns the refusing format in
 * *refused (else NULL) with the reason in why. *used is the format whose plan out holds.
 * Returns 0 or an rr_error (cannot read, out of memory). Free out with
 * rr_format_plan_free. */
int rr_format_plan_fd(int fd, const char *rel, uint64_t size,
			struct rr_format_plan *out, const struct rr_format **used,
			const struct rr_format **refused, char *why, size_t why_len);

/* Appends a piece (name and shape are copied). 0 or RR_ENOMEM. */
int rr_format_plan_add(struct rr_format_plan *p, uint64_t offset, uint64_t length, int tensor,
		       const char *name, enum rr_st_dtype dtype, unsigned ndim,
		       const uint64_t *shape);
void rr_format_plan_free(struct rr_format_plan *p);

/* 1 when the encoding changes bytes (bf16, fp16), else 0. */
int rr_format_encoding_lossy(enum rr_encoding e);

/* Whether a checkpoint file (open as fd, named name, of size bytes) is whole by its own
 * format, with no rename to say so (storage/format/whole.c): a zip whose end records close
 * its own central directory (torch.save's with its pickle and every record it names), a
 * safetensors file whose header accounts for every byte; RR_FILE_CUT when it claims to be
 * one of them and is not, or is too short for any (a save cut short), else RR_FILE_OTHER (a
 * format it cannot check). */
enum rr_file_state { RR_FILE_OTHER, RR_FILE_WHOLE, RR_FILE_CUT };
enum rr_file_state rr_format_file_state(int fd, const char *name, uint64_t size);
/* The same for the regular file name beneath dirfd (AT_FDCWD: a path), not followed through a
 * symlink; RR_FILE_OTHER when it cannot be opened or is no regular file. */
enum rr_file_state rr_format_file_state_at(int dirfd, const char *name);

/* A source reading from a file descriptor (ud is a pointer to the int fd). */
int rr_format_fd_pread(void *ud, void *buf, size_t len, uint64_t off);

#endif
