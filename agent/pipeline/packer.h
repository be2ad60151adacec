/* Packs (docs/how-it-works.md, "What is stored" "packs"): consecutive small chunks of one
 * persist share one stored object of at most RR_PACK_MAX_BYTES, so a checkpoint of many small
 * tensors is a few objects, not hundreds of requests.  Chunks are encoded on a pool, out of
 * order; the packer puts them back in their order (slots 0..n-1, the persist's chunk order) and
 * cuts packs at boundaries chosen by content: a chunk ends its pack with a probability
 * proportional to its stored size, decided by its original bytes' hash. The same run of chunks
 * therefore makes the same packs wherever it sits, and a changed chunk changes only the pack it
 * falls in (and at most the next, when the size cap moves a boundary), not every later one. */
#ifndef RR_PACKER_H
#define RR_PACKER_H

#include <stddef.h>
#include <stdint.h>

/* Target size of a pack: boundaries fall about this many stored bytes apart. */
#define RR_PACK_TARGET_BYTES (4u << 20)

/* One closed pack: its bytes (with room for in-place sealing around them) and the slots
 * it holds with their offsets. */
struct rr_pack {
	unsigned char *buf; /* `before` bytes of room, len bytes of data, then `after` room */
	size_t cap;         /* of buf (rr_buf_big_alloc) */
	size_t before, len;
	size_t n;
	size_t *slots;
	uint64_t *offsets;
};

struct rr_packer;

/* A packer for nslots chunks; packs leave before/after bytes of room around their data. */
struct rr_packer *rr_packer_new(size_t nslots, size_t before, size_t after);
void rr_packer_destroy(struct rr_packer *p);

/* Slot's chunk is done: data (len bytes, copied before this returns) to be packed, or data NULL for a chunk
 * that is not packed (stored on its own, reused, skipped). key is a hash of the chunk's
 * original bytes (its first 64 bits), which decides the boundaries. Thread-safe. Packs
 * closed by this call are appended to *out (a malloc'd array of *nout entries, the
 * caller's to free with rr_pack_free each and free()). Returns 0 or RR_ENOMEM/RR_EINVAL. */
int rr_packer_put(struct rr_packer *p, size_t slot, const unsigned char *data, size_t len,
		  uint64_t key, struct rr_pack ***out, size_t *nout);

/* The most bytes held at once in copies of chunks done before their turn. */
size_t rr_packer_held_peak(struct rr_packer *p);

/* The open pack (NULL if none), the caller's to free; only once every put has returned (a put
 * copies into the open pack after it lets go of the lock). After a put of every slot it is
 * NULL: the put that placed the last slot closed the last pack. */
struct rr_pack *rr_packer_finish(struct rr_packer *p);

void rr_pack_free(struct rr_pack *pk);

/* rr_pack_free, keeping pk's buffer for the packer's next packs. pk may be NULL. */
void rr_packer_recycle(struct rr_packer *p, struct rr_pack *pk);

/* 1 when a chunk of len stored bytes whose hash starts with key ends its pack. */
int rr_pack_boundary(uint64_t key, size_t len);

#endif
