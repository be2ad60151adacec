/* CUnit suite "packer": small chunks put back in order and cut into packs at boundaries
 * chosen by content and capped in size. Every expectation is computed from the inputs:
 * which slots land in which pack, at which offsets, with which bytes. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/manifest.h"
#include "packer.h"

#include "cunit_main.h"

#define S_N 200

struct s_run {
	struct rr_pack **packs;
	size_t n;
};

static uint64_t s_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Chunk i of a sequence: its length, key and bytes (a function of seed and i). */
static size_t s_len(uint64_t seed, size_t i)
{
	uint64_t x = seed * 1000003u + i + 1;
	return 1 + (size_t)(s_rand(&x) % (256u << 10));
}

static uint64_t s_key(uint64_t seed, size_t i)
{
	uint64_t x = (seed + 77) * 7919u + i * 104729u + 1;
	s_rand(&x);
	return s_rand(&x);
}

static unsigned char *s_bytes(uint64_t seed, size_t i, size_t len)
{
	unsigned char *b = malloc(len);
	for (size_t k = 0; b && k < len; k++)
		b[k] = (unsigned char)(seed * 31 + i * 7 + k);
	return b;
}

static void s_collect(struct s_run *r, struct rr_pack **got, size_t n)
{
	if (!n) {
		free(got);
		return;
	}
	r->packs = realloc(r->packs, (r->n + n) * sizeof(*r->packs));
	CU_ASSERT_FATAL(r->packs != NULL);
	memcpy(r->packs + r->n, got, n * sizeof(*got));
	r->n += n;
	free(got);
}

/* Packs slots 0..n-1 of a sequence (seeds[i] is chunk i's seed; skip[i]: not packed), put
 * in the order `order` gives. */
static void s_pack(struct s_run *r, const uint64_t *seeds, const int *skip, const size_t *order,
		   size_t n)
{
	struct rr_packer *p = rr_packer_new(n, 16, 16);
	struct rr_pack *last;

	memset(r, 0, sizeof(*r));
	CU_ASSERT_FATAL(p != NULL);
	for (size_t k = 0; k < n; k++) {
		size_t i = order ? order[k] : k;
		struct rr_pack **got = NULL;
		size_t ngot = 0, len = s_len(seeds[i], i);
		unsigned char *b = s_bytes(seeds[i], i, len);
		int skipped = skip && skip[i];
		CU_ASSERT_EQUAL(rr_packer_put(p, i, skipped ? NULL : b, len, s_key(seeds[i], i),
					      &got, &ngot), 0);
		s_collect(r, got, ngot);
		free(b);
	}
	last = rr_packer_finish(p);
	CU_ASSERT_PTR_NULL(last); /* the last put closed the last pack */
	rr_pack_free(last);
	rr_packer_destroy(p);
}

static void s_free(struct s_run *r)
{
	for (size_t k = 0; k < r->n; k++)
		rr_pack_free(r->packs[k]);
	free(r->packs);
}

/* Every slot not skipped is in exactly one pack, in slot order, at consecutive offsets,
 * with its own bytes; packs respect the cap; each pack but the last ends on a boundary or
 * would have outgrown the cap with the next slot. */
static void s_check(const struct s_run *r, const uint64_t *seeds, const int *skip, size_t n)
{
	size_t next = 0;

	for (size_t k = 0; k < r->n; k++) {
		const struct rr_pack *pk = r->packs[k];
		uint64_t at = 0;
		CU_ASSERT(pk->n > 0);
		CU_ASSERT(pk->len <= RR_PACK_MAX_BYTES);
		CU_ASSERT_EQUAL(pk->before, 16);
		for (size_t m = 0; m < pk->n; m++) {
			size_t i = pk->slots[m], len = s_len(seeds[i], i);
			unsigned char *b = s_bytes(seeds[i], i, len);
			while (next < n && skip && skip[next])
				next++;
			CU_ASSERT_EQUAL(i, next);
			next++;
			CU_ASSERT_EQUAL(pk->offsets[m], at);
			CU_ASSERT(memcmp(pk->buf + pk->before + at, b, len) == 0);
			at += len;
			free(b);
			if (m + 1 < pk->n)
				CU_ASSERT_FALSE(rr_pack_boundary(s_key(seeds[i], i), len));
		}
		CU_ASSERT_EQUAL(at, pk->len);
	}
	while (next < n && skip && skip[next])
		next++;
	CU_ASSERT_EQUAL(next, n);
}

static int s_same_pack(const struct rr_pack *a, const struct rr_pack *b)
{
	return a->n == b->n && a->len == b->len &&
	       memcmp(a->buf + a->before, b->buf + b->before, a->len) == 0;
}

static void test_in_order_chunks_fill_packs_in_order(void)
{
	uint64_t seeds[S_N];
	struct s_run r;

	for (size_t i = 0; i < S_N; i++)
		seeds[i] = 1;
	s_pack(&r, seeds, NULL, NULL, S_N);
	CU_ASSERT(r.n >= 2); /* 200 chunks of ~128 KiB: ~25 MiB, more than one pack */
	CU_ASSERT(r.n < S_N / 4);
	s_check(&r, seeds, NULL, S_N);
	s_free(&r);
}

static void test_completion_order_does_not_change_the_packs(void)
{
	uint64_t seeds[S_N], x = 99;
	size_t order[S_N];
	struct s_run a, b;

	for (size_t i = 0; i < S_N; i++) {
		seeds[i] = 2;
		order[i] = i;
	}
	for (size_t i = S_N - 1; i > 0; i--) { /* a shuffle: chunks finish in any order */
		size_t j = (size_t)(s_rand(&x) % (i + 1)), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	s_pack(&a, seeds, NULL, NULL, S_N);
	s_pack(&b, seeds, NULL, order, S_N);
	CU_ASSERT_EQUAL_FATAL(a.n, b.n);
	for (size_t k = 0; k < a.n; k++)
		CU_ASSERT_TRUE(s_same_pack(a.packs[k], b.packs[k]));
	s_check(&b, seeds, NULL, S_N);
	s_free(&a);
	s_free(&b);
}

/* Several threads putting at once, as the persist's workers do: the packs are those of one
 * thread putting in order (the bytes are copied outside the packer's lock, and a pack goes out
 * only once every copy into it is done). */
struct s_shared {
	struct rr_packer *p;
	const uint64_t *seeds;
	const int *skip;
	atomic_size_t next;
	pthread_mutex_t lock;
	struct s_run run;
	uint64_t seen[S_N]; /* per pack's first slot: its bytes' hash when it was handed out */
	int failed;
};

static uint64_t s_fnv(const struct rr_pack *pk)
{
	uint64_t h = 1469598103934665603u;
	for (size_t k = 0; k < pk->len; k++)
		h = (h ^ pk->buf[pk->before + k]) * 1099511628211u;
	return h;
}

static void *s_putter(void *arg)
{
	struct s_shared *sh = arg;
	size_t i;

	while ((i = atomic_fetch_add(&sh->next, 1)) < S_N) {
		struct rr_pack **got = NULL;
		size_t ngot = 0, len = s_len(sh->seeds[i], i);
		unsigned char *b = s_bytes(sh->seeds[i], i, len);
		int rc = rr_packer_put(sh->p, i, sh->skip[i] ? NULL : b, len, s_key(sh->seeds[i], i),
				       &got, &ngot);
		if (b) /* the copy is the packer's now: scribbling on ours must not show */
			memset(b, 0xee, len);
		free(b);
		pthread_mutex_lock(&sh->lock);
		sh->failed |= rc != 0;
		for (size_t k = 0; k < ngot; k++) /* as the persist stores it: at once */
			sh->seen[got[k]->slots[0]] = s_fnv(got[k]);
		if (ngot) {
			sh->run.packs = realloc(sh->run.packs, (sh->run.n + ngot) * sizeof(*got));
			memcpy(sh->run.packs + sh->run.n, got, ngot * sizeof(*got));
			sh->run.n += ngot;
		}
		pthread_mutex_unlock(&sh->lock);
		free(got);
	}
	return NULL;
}

static int s_by_first_slot(const void *a, const void *b)
{
	size_t x = (*(struct rr_pack *const *)a)->slots[0];
	size_t y = (*(struct rr_pack *const *)b)->slots[0];
	return (x > y) - (x < y);
}

static void test_threads_putting_at_once_make_the_same_packs(void)
{
	uint64_t seeds[S_N];
	int skip[S_N];
	struct s_run one;
	struct s_shared sh = { .seeds = seeds, .skip = skip };
	pthread_t t[4];
	struct rr_pack *last;

	for (size_t i = 0; i < S_N; i++) {
		seeds[i] = 6;
		skip[i] = i % 7 == 3; /* as big chunks stored on their own are */
	}
	s_pack(&one, seeds, skip, NULL, S_N);
	for (int round = 0; round < 20; round++) {
		sh.p = rr_packer_new(S_N, 16, 16);
		CU_ASSERT_FATAL(sh.p != NULL);
		atomic_init(&sh.next, 0);
		pthread_mutex_init(&sh.lock, NULL);
		memset(&sh.run, 0, sizeof(sh.run));
		for (int k = 0; k < 4; k++)
			CU_ASSERT_FATAL(pthread_create(&t[k], NULL, s_putter, &sh) == 0);
		for (int k = 0; k < 4; k++)
			pthread_join(t[k], NULL);
		CU_ASSERT_FALSE(sh.failed);
		last = rr_packer_finish(sh.p);
		CU_ASSERT_PTR_NULL(last); /* the last pack went out with the last put */
		rr_pack_free(last);
		qsort(sh.run.packs, sh.run.n, sizeof(*sh.run.packs), s_by_first_slot);
		CU_ASSERT_EQUAL_FATAL(sh.run.n, one.n);
		for (size_t k = 0; k < one.n; k++) {
			CU_ASSERT_TRUE(s_same_pack(one.packs[k], sh.run.packs[k]));
			CU_ASSERT_EQUAL(sh.seen[one.packs[k]->slots[0]], s_fnv(one.packs[k]));
		}
		s_check(&sh.run, seeds, skip, S_N);
		s_free(&sh.run);
		rr_packer_destroy(sh.p);
		pthread_mutex_destroy(&sh.lock);
	}
	s_free(&one);
}

static void test_skipped_slots_are_left_out(void)
{
	uint64_t seeds[S_N];
	int skip[S_N];
	struct s_run r;
	size_t packed = 0;

	for (size_t i = 0; i < S_N; i++) {
		seeds[i] = 3;
		skip[i] = i % 3 == 0;
	}
	s_pack(&r, seeds, skip, NULL, S_N);
	s_check(&r, seeds, skip, S_N);
	for (size_t k = 0; k < r.n; k++)
		packed += r.packs[k]->n;
	CU_ASSERT_EQUAL(packed, S_N - (S_N + 2) / 3);
	s_free(&r);
}

/* One chunk changed in the middle: the packs before it are the same, and so are the packs
 * after the first boundary that follows it. */
static void test_one_changed_chunk_changes_only_nearby_packs(void)
{
	uint64_t s1[S_N], s2[S_N];
	struct s_run a, b;
	size_t same_before = 0, same_after = 0;

	for (size_t i = 0; i < S_N; i++)
		s1[i] = s2[i] = 4;
	s2[S_N / 2] = 5;
	s_pack(&a, s1, NULL, NULL, S_N);
	s_pack(&b, s2, NULL, NULL, S_N);
	s_check(&b, s2, NULL, S_N);
	while (same_before < a.n && same_before < b.n &&
	       s_same_pack(a.packs[same_before], b.packs[same_before]))
		same_before++;
	while (same_after < a.n && same_after < b.n &&
	       s_same_pack(a.packs[a.n - 1 - same_after], b.packs[b.n - 1 - same_after]))
		same_after++;
	CU_ASSERT(same_before >= 1);
	CU_ASSERT(same_after >= 1);
	/* At most two packs differ: the one holding the change and, when the cap moved a
	 * boundary, the next. */
	CU_ASSERT(a.n - same_before - same_after <= 2);
	CU_ASSERT(same_before + same_after < a.n); /* the change is somewhere */
	s_free(&a);
	s_free(&b);
}

static void test_packs_are_cut_at_the_cap_without_boundaries(void)
{
	struct rr_packer *p = rr_packer_new(30, 0, 0);
	struct rr_pack **got = NULL, *last;
	size_t ngot = 0, len = 900u << 10;
	unsigned char *b = calloc(1, len);

	CU_ASSERT_FATAL(p && b);
	for (size_t i = 0; i < 30; i++) /* the largest key: never a boundary at this size */
		CU_ASSERT_EQUAL(rr_packer_put(p, i, b, len, UINT64_MAX, &got, &ngot), 0);
	/* 9 x 900 KiB fit in 8 MiB, a 10th would not; the last put closes the last 3 */
	CU_ASSERT_EQUAL_FATAL(ngot, 4);
	for (size_t k = 0; k < ngot; k++) {
		CU_ASSERT_EQUAL(got[k]->n, k < 3 ? 9 : 3);
		CU_ASSERT_EQUAL(got[k]->len, got[k]->n * len);
		CU_ASSERT_EQUAL(got[k]->slots[0], 9 * k);
		rr_pack_free(got[k]);
	}
	free(got);
	last = rr_packer_finish(p);
	CU_ASSERT_PTR_NULL(last);
	rr_packer_destroy(p);
	free(b);
}

static void test_boundary_probability_follows_size(void)
{
	CU_ASSERT_TRUE(rr_pack_boundary(UINT64_MAX, RR_PACK_TARGET_BYTES));
	CU_ASSERT_TRUE(rr_pack_boundary(0, 1));
	CU_ASSERT_FALSE(rr_pack_boundary(UINT64_MAX, 1));
	/* Half the target: keys below the middle end a pack, keys above do not. */
	CU_ASSERT_TRUE(rr_pack_boundary((uint64_t)0x7fffffff << 32, RR_PACK_TARGET_BYTES / 2));
	CU_ASSERT_FALSE(rr_pack_boundary((uint64_t)0x80000000 << 32, RR_PACK_TARGET_BYTES / 2));
}

static void test_bad_puts_are_refused(void)
{
	struct rr_packer *p = rr_packer_new(2, 0, 0);
	struct rr_pack **got = NULL;
	size_t ngot = 0;
	unsigned char b[4] = { 1, 2, 3, 4 };

	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_EQUAL(rr_packer_put(p, 2, b, 4, 0, &got, &ngot), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_packer_put(p, 0, b, 0, 0, &got, &ngot), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_packer_put(p, 0, b, RR_PACK_MAX_BYTES + 1, 0, &got, &ngot), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_packer_put(p, 1, b, 4, UINT64_MAX, &got, &ngot), 0);
	CU_ASSERT_EQUAL(rr_packer_put(p, 1, b, 4, UINT64_MAX, &got, &ngot), RR_EINVAL);
	CU_ASSERT_EQUAL(ngot, 0);
	rr_packer_destroy(p); /* slot 1 still held, slot 0 never put: freed, no leak */
	free(got);
}

static CU_TestInfo s_tests[] = {
	{ "test_in_order_chunks_fill_packs_in_order", test_in_order_chunks_fill_packs_in_order },
	{ "test_completion_order_does_not_change_the_packs",
	  test_completion_order_does_not_change_the_packs },
	{ "test_threads_putting_at_once_make_the_same_packs",
	  test_threads_putting_at_once_make_the_same_packs },
	{ "test_skipped_slots_are_left_out", test_skipped_slots_are_left_out },
	{ "test_one_changed_chunk_changes_only_nearby_packs",
	  test_one_changed_chunk_changes_only_nearby_packs },
	{ "test_packs_are_cut_at_the_cap_without_boundaries",
	  test_packs_are_cut_at_the_cap_without_boundaries },
	{ "test_boundary_probability_follows_size", test_boundary_probability_follows_size },
	{ "test_bad_puts_are_refused", test_bad_puts_are_refused },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("packer", s_tests)
