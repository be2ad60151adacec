#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/manifest.h"
#include "rr/buf.h"
#include "packer.h"

/* A slot's state: its chunk not done yet, done with bytes to pack, done without. */
enum { S_PENDING = 0, S_HELD, S_SKIPPED };

/* Spare pack buffers kept: enough for every worker's pack in flight on this machine. */
#define S_SPARE 4

/* A pack as the packer keeps it. Slots are placed in it under the lock, but their bytes are
 * copied outside it, so that one worker's copy does not hold up the others: a closed pack is
 * handed out by whoever finishes its last copy. */
struct s_pack {
	struct rr_pack pk; /* first: the rr_pack handed out is this allocation */
	size_t copying;    /* slots placed in it whose bytes are not copied yet */
	int closed;        /* no more slots go in */
	struct s_pack *next_lost; /* on rr_packer's lost list */
};

/* A slot's copy into its pack, planned under the lock and made outside it. */
struct s_copy {
	struct s_pack *to;
	uint64_t at;
	const unsigned char *from;
	unsigned char *owned; /* a held copy, freed once copied */
	size_t len;
};

/* The copies of one put. */
struct s_copies {
	struct s_copy *c;
	size_t n, cap;
};

struct rr_packer {
	pthread_mutex_t lock;
	size_t nslots, next; /* next: the first slot not yet placed in order */
	size_t before, after;
	unsigned char *state;
	unsigned char **held; /* per slot: its bytes while it waits for its turn */
	size_t *len;
	uint64_t *key;
	struct s_pack *open;  /* the pack being filled */
	size_t open_cap;      /* room in open->slots and open->offsets */
	/* Buffers of packs already stored, for the next packs: their pages are touched
	 * already (a fresh buffer costs a page fault and zeroing per page). */
	unsigned char *spare[S_SPARE];
	unsigned nspare;
	/* Closed packs that could not be handed out (no memory for the list): freed with the
	 * packer, the put that lost one having failed. */
	struct s_pack *lost;
	size_t held_bytes, held_peak; /* bytes of held copies: now, and the most at once */
};

struct rr_packer *rr_packer_new(size_t nslots, size_t before, size_t after)
{
	struct rr_packer *p = calloc(1, sizeof(*p));
	size_t n = nslots ? nslots : 1;

	if (!p)
		return NULL;
	p->nslots = nslots;
	p->before = before;
	p->after = after;
	p->state = calloc(n, 1);
	p->held = calloc(n, sizeof(*p->held));
	p->len = calloc(n, sizeof(*p->len));
	p->key = calloc(n, sizeof(*p->key));
	pthread_mutex_init(&p->lock, NULL);
	if (!p->state || !p->held || !p->len || !p->key) {
		rr_packer_destroy(p);
		return NULL;
	}
	return p;
}

void rr_pack_free(struct rr_pack *pk)
{
	if (!pk)
		return;
	rr_buf_big_free(pk->buf, pk->cap);
	free(pk->slots);
	free(pk->offsets);
	free(pk);
}

void rr_packer_destroy(struct rr_packer *p)
{
	if (!p)
		return;
	for (size_t i = 0; p->held && i < p->nslots; i++)
		free(p->held[i]);
	for (unsigned i = 0; i < p->nspare; i++)
		rr_buf_big_free(p->spare[i], p->before + RR_PACK_MAX_BYTES + p->after);
	free(p->held);
	free(p->state);
	free(p->len);
	free(p->key);
	rr_pack_free(p->open ? &p->open->pk : NULL);
	while (p->lost) {
		struct s_pack *sp = p->lost;
		p->lost = sp->next_lost;
		rr_pack_free(&sp->pk);
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int rr_pack_boundary(uint64_t key, size_t len)
{
	/* Probability len / target, from the hash's top 32 bits: boundaries fall on
	 * content, about RR_PACK_TARGET_BYTES of stored bytes apart whatever the chunk
	 * sizes. */
	if (len >= RR_PACK_TARGET_BYTES)
		return 1;
	return (key >> 32) < (((uint64_t)len << 32) / RR_PACK_TARGET_BYTES);
}

/* Hands out pack sp (appends it to *out) when it is closed and its bytes are all in. */
static int s_hand_out(struct rr_packer *p, struct s_pack *sp, struct rr_pack ***out,
		      size_t *nout)
{
	struct rr_pack **grown;

	if (!sp->closed || sp->copying)
		return 0;
	grown = realloc(*out, (*nout + 1) * sizeof(**out));
	if (!grown) {
		sp->next_lost = p->lost;
		p->lost = sp;
		return RR_ENOMEM;
	}
	*out = grown;
	grown[(*nout)++] = &sp->pk;
	return 0;
}

static int s_close_open(struct rr_packer *p, struct rr_pack ***out, size_t *nout)
{
	struct s_pack *sp = p->open;

	p->open = NULL;
	p->open_cap = 0;
	sp->closed = 1;
	return s_hand_out(p, sp, out, nout);
}

static int s_open_new(struct rr_packer *p)
{
	struct s_pack *sp = calloc(1, sizeof(*sp));

	if (!sp)
		return RR_ENOMEM;
	sp->pk.before = p->before;
	/* Allocated at its ceiling: (huge) pages never written are not resident. */
	sp->pk.cap = p->before + RR_PACK_MAX_BYTES + p->after;
	sp->pk.buf = p->nspare ? p->spare[--p->nspare] : rr_buf_big_alloc(sp->pk.cap);
	if (!sp->pk.buf) {
		free(sp);
		return RR_ENOMEM;
	}
	p->open = sp;
	return 0;
}

/* Places slot's bytes (data, or its held copy when data is NULL) at the end of the open pack
 * and plans their copy there. */
static int s_append(struct rr_packer *p, size_t slot, const unsigned char *data,
		    struct s_copies *cs)
{
	struct rr_pack *pk = &p->open->pk;

	if (pk->n == p->open_cap) {
		size_t cap = p->open_cap ? 2 * p->open_cap : 16;
		size_t *s = realloc(pk->slots, cap * sizeof(*s));
		if (s)
			pk->slots = s;
		uint64_t *o = realloc(pk->offsets, cap * sizeof(*o));
		if (o)
			pk->offsets = o;
		if (!s || !o)
			return RR_ENOMEM;
		p->open_cap = cap;
	}
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? 2 * cs->cap : 8;
		struct s_copy *c = realloc(cs->c, cap * sizeof(*c));
		if (!c)
			return RR_ENOMEM;
		cs->c = c;
		cs->cap = cap;
	}
	cs->c[cs->n++] = (struct s_copy){ .to = p->open, .at = pk->len,
					  .from = data ? data : p->held[slot],
					  .owned = p->held[slot], .len = p->len[slot] };
	if (p->held[slot])
		p->held_bytes -= p->len[slot];
	p->open->copying++;
	p->held[slot] = NULL;
	pk->slots[pk->n] = slot;
	pk->offsets[pk->n++] = pk->len;
	pk->len += p->len[slot];
	return 0;
}

/* Places every done slot that is next in order. data: the bytes of the slot just put when
 * it is the next (they are not held then). Called with the lock held. */
static int s_advance(struct rr_packer *p, const unsigned char *data, struct s_copies *cs,
		     struct rr_pack ***out, size_t *nout)
{
	int rc = 0;

	for (; !rc && p->next < p->nslots && p->state[p->next] != S_PENDING;
	     p->next++, data = NULL) {
		size_t s = p->next;
		if (p->state[s] == S_SKIPPED)
			continue;
		if (p->open && p->open->pk.len + p->len[s] > RR_PACK_MAX_BYTES)
			rc = s_close_open(p, out, nout);
		if (!rc && !p->open)
			rc = s_open_new(p);
		if (!rc)
			rc = s_append(p, s, data, cs);
		if (!rc && rr_pack_boundary(p->key[s], p->len[s]))
			rc = s_close_open(p, out, nout);
	}
	/* Every slot placed: the last pack closes too, to be stored by this worker while the
	 * others finish, not after them. */
	if (!rc && p->next == p->nslots && p->open)
		rc = s_close_open(p, out, nout);
	return rc;
}

int rr_packer_put(struct rr_packer *p, size_t slot, const unsigned char *data, size_t len,
		  uint64_t key, struct rr_pack ***out, size_t *nout)
{
	struct s_copies cs = { 0 };
	unsigned char *copy = NULL;
	int rc;

	if (slot >= p->nslots || (data && (len == 0 || len > RR_PACK_MAX_BYTES)))
		return RR_EINVAL;
	pthread_mutex_lock(&p->lock);
	if (p->state[slot] != S_PENDING) {
		pthread_mutex_unlock(&p->lock);
		return RR_EINVAL;
	}
	/* Out of order: a copy waits for its turn. Next in order: packed from data now. */
	if (data && slot != p->next) {
		pthread_mutex_unlock(&p->lock); /* copied outside the lock */
		copy = malloc(len);
		if (!copy)
			return RR_ENOMEM;
		memcpy(copy, data, len);
		pthread_mutex_lock(&p->lock);
		if (p->state[slot] != S_PENDING) { /* put twice, meanwhile */
			pthread_mutex_unlock(&p->lock);
			free(copy);
			return RR_EINVAL;
		}
	}
	p->state[slot] = data ? S_HELD : S_SKIPPED;
	p->held[slot] = copy;
	if (copy && (p->held_bytes += len) > p->held_peak)
		p->held_peak = p->held_bytes;
	p->len[slot] = len;
	p->key[slot] = key;
	rc = s_advance(p, copy ? NULL : data, &cs, out, nout);
	pthread_mutex_unlock(&p->lock);

	/* The bytes, outside the lock; then the packs whose last copy this was go out. */
	for (size_t k = 0; k < cs.n; k++) {
		memcpy(cs.c[k].to->pk.buf + cs.c[k].to->pk.before + cs.c[k].at, cs.c[k].from,
		       cs.c[k].len);
		free(cs.c[k].owned);
	}
	if (cs.n) {
		pthread_mutex_lock(&p->lock);
		for (size_t k = 0; k < cs.n; k++) {
			int rc2;
			cs.c[k].to->copying--;
			rc2 = s_hand_out(p, cs.c[k].to, out, nout);
			if (!rc)
				rc = rc2;
		}
		pthread_mutex_unlock(&p->lock);
	}
	free(cs.c);
	return rc;
}

void rr_packer_recycle(struct rr_packer *p, struct rr_pack *pk)
{
	if (!pk)
		return;
	pthread_mutex_lock(&p->lock);
	if (pk->cap == p->before + RR_PACK_MAX_BYTES + p->after && p->nspare < S_SPARE) {
		p->spare[p->nspare++] = pk->buf;
		pk->buf = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	rr_pack_free(pk);
}

size_t rr_packer_held_peak(struct rr_packer *p)
{
	size_t peak;

	pthread_mutex_lock(&p->lock);
	peak = p->held_peak;
	pthread_mutex_unlock(&p->lock);
	return peak;
}

struct rr_pack *rr_packer_finish(struct rr_packer *p)
{
	struct s_pack *sp;

	pthread_mutex_lock(&p->lock);
	sp = p->open;
	p->open = NULL;
	p->open_cap = 0;
	pthread_mutex_unlock(&p->lock);
	return sp ? &sp->pk : NULL; /* every put has returned: its copies are in */
}
