/* A pickle *scanner* for torch.save's data.pkl: it follows the opcodes (protocols 0-5 as
 * far as they can appear in such a file) without executing, importing or building
 * anything, and keeps only what it needs to read the persistent ids torch.save writes for
 * storages: ('storage', torch.<Type>Storage | torch.storage.UntypedStorage, key, location,
 * numel). A typed Storage class gives the dtype; an UntypedStorage counts bytes and takes its
 * dtype from the torch._utils._rebuild_tensor_v3(storage, ..., dtype) call built on it (newer
 * torch's form for dtypes without a Storage class), else it stays bytes (U8). GLOBAL and
 * REDUCE are only tracked as opaque values: nothing named in the pickle ever runs. */
#ifndef RR_PICKLE_SCAN_H
#define RR_PICKLE_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "rr/safetensors.h"

#define RR_PK_MAX_BYTES (256u << 20) /* ceiling on a data.pkl the scanner reads */
#define RR_PK_KEY_MAX 64
#define RR_PK_MAX_VALUES (8u << 20) /* stack, tuple items and memo together (24 bytes each) */

struct rr_pk_storage {
	char key[RR_PK_KEY_MAX + 1]; /* the record <archive>/data/<key> */
	int known;                   /* 1 when dtype is the element type of every use */
	enum rr_st_dtype dtype;      /* UntypedStorage: U8 (numel counts bytes) unless a
				      * _rebuild_tensor_v3 on it named the dtype */
	uint64_t numel;
};

struct rr_pk_scan {
	size_t n;
	struct rr_pk_storage *storages; /* sorted by key */
};

/* Scans len bytes of pickle. 0 and out filled (free with rr_pickle_scan_free): every
 * persistent id in it was a storage id, and out lists each storage once (one named twice
 * with different types or sizes has known = 0). RR_ECORRUPT with a one-line reason when
 * the pickle holds something the scanner does not follow (an unknown opcode, out-of-band
 * buffers, another kind of persistent id, a malformed or truncated stream, more than
 * RR_PK_MAX_VALUES values held at once), RR_ETOOBIG over RR_PK_MAX_BYTES, RR_ENOMEM. On failure out is empty. */
int rr_pickle_scan(const uint8_t *buf, size_t len, struct rr_pk_scan *out, char *why,
		   size_t why_len);
void rr_pickle_scan_free(struct rr_pk_scan *s);

/* The storage named key, or NULL. */
const struct rr_pk_storage *rr_pickle_scan_find(const struct rr_pk_scan *s, const char *key);

#endif
