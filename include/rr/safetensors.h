/* A strict reader of safetensors headers (the safetensors format (huggingface/safetensors
 * README, "Format")). Anything it refuses is stored byte-exact by the caller; nothing is
 * lost. */
#ifndef RR_SAFETENSORS_H
#define RR_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define RR_ST_MAX_HEADER 100000000u /* the reference reader's MAX_HEADER_SIZE */
#define RR_ST_MAX_DIMS 64

enum rr_st_dtype {
	RR_ST_BOOL, RR_ST_U8, RR_ST_I8, RR_ST_F8_E5M2, RR_ST_F8_E4M3, RR_ST_F8_E8M0,
	RR_ST_F8_E4M3FNUZ, RR_ST_F8_E5M2FNUZ, RR_ST_I16, RR_ST_U16, RR_ST_F16, RR_ST_BF16,
	RR_ST_I32, RR_ST_U32, RR_ST_F32, RR_ST_C64, RR_ST_F64, RR_ST_I64, RR_ST_U64,
	RR_ST_F4, RR_ST_F6_E2M3, RR_ST_F6_E3M2,
};

struct rr_st_tensor {
	char *name;              /* malloc'd, NUL-terminated UTF-8 */
	enum rr_st_dtype dtype;
	unsigned ndim;
	uint64_t shape[RR_ST_MAX_DIMS];
	uint64_t begin, end;     /* data_offsets: relative to the start of the data buffer */
};

struct rr_st_header {
	uint64_t header_len;        /* N: the JSON header's length; data starts at 8 + N */
	size_t ntensors;
	struct rr_st_tensor *tensors; /* sorted by begin (file order) */
};

/* Parses the first 8 + N bytes of a safetensors file (buf, len: at least those bytes;
 * more is fine) given the whole file's size. Enforces every rule of the safetensors format
 * (huggingface/safetensors README, "Format"):
 * 8-byte prefix, N <= RR_ST_MAX_HEADER, 8 + N within the file, valid UTF-8 JSON object
 * starting with '{' (trailing spaces allowed), no duplicate keys, "__metadata__" a
 * string->string map, each tensor {dtype, shape, data_offsets} with a known dtype, offsets
 * sorted and contiguous from 0 with end >= begin, prod(shape) * bits computed with overflow
 * checks and a whole number of bytes equal to end - begin, and the last end + 8 + N equal
 * to the file size (no trailing bytes). Returns 0 and fills out (free it with
 * rr_st_header_free), or RR_ECORRUPT / RR_ETOOBIG / RR_ENOMEM with a one-line reason in why.
 * To learn how many bytes to read first: rr_st_header_size(). */
int rr_st_parse(const uint8_t *buf, size_t len, uint64_t file_size, struct rr_st_header *out,
		char *why, size_t why_len);
void rr_st_header_free(struct rr_st_header *h);

/* From the first 8 bytes: N, or RR_ECORRUPT/RR_ETOOBIG (via the return) when the prefix
 * cannot be a safetensors header of a file of file_size bytes. */
int rr_st_header_size(const uint8_t first8[8], uint64_t file_size, uint64_t *n_out);

/* "F32" for RR_ST_F32 etc.; bits per element (4, 6, 8, 16, 32, 64). */
const char *rr_st_dtype_name(enum rr_st_dtype d);
unsigned rr_st_dtype_bits(enum rr_st_dtype d);
int rr_st_dtype_from_name(const char *name, enum rr_st_dtype *out);

#endif
