/* The manifest of one checkpoint (docs/how-it-works.md, "What is stored"): which files it holds
 * and, for each, the byte ranges ("segments") of the original file, how each was encoded, and
 * the chunks that hold the encoded bytes. It is JSON so any tool can read it, and it carries
 * its own checksum: the sha256 of the manifest serialised compactly (cJSON_PrintUnformatted)
 * without its "checksum" member. */
#ifndef RR_MANIFEST_H
#define RR_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "rr/buf.h"
#include "rr/hash.h"

#define RR_MANIFEST_FORMAT "resume-run/manifest-2"    /* written; adds packs */
#define RR_MANIFEST_FORMAT_V1 "resume-run/manifest-1" /* still read: no packs */
#define RR_MANIFEST_MAX_BYTES (64u << 20)   /* ceiling on manifest.json */
#define RR_CHUNK_MAX_RAW (64u << 20)        /* ceiling on one chunk's decoded bytes */

/* How a segment's bytes are stored. Tensor forms cut the segment into chunks of whole
 * elements; each chunk's stored bytes are one zstd frame per byte plane, concatenated (so
 * they decode with one ZSTD_decompress call into the shuffled planes). */
enum rr_encoding {
	RR_ENC_ZSTD = 0,     /* "zstd": the original bytes, zstd-compressed */
	RR_ENC_SHUFFLE_ZSTD, /* "shuffle+zstd": lossless; bytes shuffled by element width */
	RR_ENC_BF16,         /* "bf16+shuffle+zstd": F32 rounded to BF16 (RNE) */
	RR_ENC_FP16,         /* "fp16+shuffle+zstd": F32 times 2^scale_exp rounded to FP16 (RNE) */
};

#define RR_XXH128_HEX_LEN 32

struct rr_chunk_ref {
	char sha256[RR_SHA256_HEX_LEN + 1]; /* of the stored bytes: the chunk's key */
	uint64_t size;        /* original bytes it gives back */
	uint64_t stored_size; /* bytes in the store */
	char raw_xxh128[RR_XXH128_HEX_LEN + 1]; /* XXH3-128 of the original bytes it covers:
						 * finds unchanged data without encoding it, and
						 * checks lossless decoding on restore */
	/* A packed chunk (manifest-2) is the byte range [pack_offset, pack_offset +
	 * stored_size) of the stored object named by sha256, a pack of several small chunks
	 * (at most RR_PACK_MAX_BYTES). Otherwise the object is the chunk itself. */
	int packed;
	uint64_t pack_offset;
};

#define RR_PACK_MAX_BYTES (8u << 20)   /* a pack's stored bytes, at most */
#define RR_PACK_SMALL_BYTES (1u << 20) /* chunks stored in fewer bytes than this are packed */

struct rr_segment {
	uint64_t offset;  /* where it starts in the original file */
	uint64_t length;  /* original bytes it covers */
	enum rr_encoding encoding;
	/* Tensor segments (every encoding but RR_ENC_ZSTD) also carry: */
	char *tensor;     /* the tensor's name; malloc'd; NULL for other segments */
	char dtype[16];   /* safetensors dtype name ("F32", ...); "" for other segments */
	unsigned ndim;
	uint64_t *shape;  /* ndim entries, malloc'd (NULL when ndim is 0) */
	int scale_exp;    /* RR_ENC_FP16: the power of two applied before rounding; else 0 */
	size_t nchunks;
	struct rr_chunk_ref *chunks; /* malloc'd; consecutive, sizes adding up to length */
};

struct rr_file_entry {
	char *path;     /* relative, '/'-separated, checked by rr_path_is_safe; malloc'd */
	uint32_t mode;  /* permission bits (07777 at most) */
	uint64_t size;
	char format[16]; /* the format that planned it ("safetensors", "torch"); "" for plain
			  * bytes. Restore runs that format's finish hook (rr/format.h). */
	size_t nsegs;
	struct rr_segment *segs; /* malloc'd; contiguous from 0 to size, in order */
};

struct rr_manifest {
	char *run_id;       /* malloc'd */
	char *checkpoint;   /* the checkpoint's directory name; malloc'd */
	char *host;         /* machine that wrote it; malloc'd, may be NULL */
	int64_t committed_unix_ms; /* when the trainer committed it (orders checkpoints) */
	int64_t created_unix_ms;   /* when the manifest was written */
	int single_file;    /* "kind":"file": a one-file checkpoint (docs/trainer-contract.md);
			     * its only file is named like the checkpoint and is restored as
			     * that file */
	size_t nfiles;
	struct rr_file_entry *files; /* malloc'd */
};

/* Serialises m (appending to out) with its checksum. Returns 0 or an rr_error. */
int rr_manifest_to_json(const struct rr_manifest *m, struct rr_buf *out);

/* Parses and checks a manifest: format, checksum, names, every path (rr_path_is_safe, no
 * duplicates), modes, sizes (at most 2^53), segments contiguous and covering each file,
 * chunk sizes adding up, hex digests, and for tensor segments: a known dtype (F32 for
 * bf16/fp16), shape x element size equal to the length (overflow-checked), chunk sizes in
 * whole elements, scale_exp within [-112, 112] for fp16. On success *out is the caller's to destroy.
 * On failure returns RR_ECORRUPT (or RR_EPATH for an unsafe path, RR_ETOOBIG, RR_ENOMEM)
 * and writes a one-line reason to why (if non-NULL). */
int rr_manifest_parse(const char *text, size_t len, struct rr_manifest **out, char *why,
		      size_t why_len);

/* Frees m and everything it owns; NULL is fine. */
void rr_manifest_destroy(struct rr_manifest *m);

/* Total original bytes and stored bytes of every chunk reference (duplicates counted). */
uint64_t rr_manifest_total_size(const struct rr_manifest *m);
uint64_t rr_manifest_total_stored(const struct rr_manifest *m);

/* 1 when path is a safe relative path: non-empty, at most 4096 bytes, no leading '/', no
 * empty, "." or ".." component, no backslash or control character. Else 0. */
int rr_path_is_safe(const char *path);

/* 1 when name can be a checkpoint directory name: 1..255 bytes, no '/', no control
 * characters, does not start with '.'. Else 0. */
int rr_checkpoint_name_valid(const char *name);

/* Encoding names as they appear in the manifest ("zstd", "shuffle+zstd",
 * "bf16+shuffle+zstd", "fp16+shuffle+zstd"); NULL for unknown. */
const char *rr_encoding_name(enum rr_encoding e);
/* The reverse: sets *out for one of those names. Returns 0, or RR_EINVAL (*out unchanged)
 * for any other string. Nothing to free. */
int rr_encoding_from_name(const char *name, enum rr_encoding *out);

/* LATEST: {"checkpoint":"<name>","updated_unix_ms":N,"host":"..."} */
int rr_latest_to_json(const char *checkpoint, int64_t updated_unix_ms, const char *host,
		      struct rr_buf *out);
/* Parses LATEST; copies the checkpoint name (validated) into name_out. RR_ECORRUPT if bad. */
int rr_latest_parse(const char *text, size_t len, char *name_out, size_t name_cap);

#endif
