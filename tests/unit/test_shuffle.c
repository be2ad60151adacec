/* CUnit suite "shuffle": the byte shuffle of docs/how-it-works.md, "How checkpoints are made small"
 * (`exact`) and its inverse, on both paths (AVX2 and portable), for every width and lengths
 * around the SIMD step sizes, with buffers at every alignment. The layout is checked
 * against its definition, dst[b * n + i] == src[i * width + b], and nothing may be written
 * outside the planes. On a CPU without AVX2 both "paths" are the portable one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shuffle.h"

#include "cunit_main.h"

#define S_GUARD 64 /* canary bytes on each side of every output */
#define S_CANARY 0xa5

static const unsigned s_widths[] = { 1, 2, 4, 8 };
static const size_t s_lens[] = { 0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000003 };

#define S_NWIDTHS (sizeof(s_widths) / sizeof(s_widths[0]))
#define S_NLENS (sizeof(s_lens) / sizeof(s_lens[0]))
#define S_MAXN 1000003u

static void s_random(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed | 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		p[i] = (uint8_t)((x * 0x2545F4914F6CDD1DULL) >> 56);
	}
}

/* An output buffer with canaries around [off, off + len). */
struct s_out {
	uint8_t *mem;
	uint8_t *p;
	size_t len;
};

static void s_out_init(struct s_out *o, size_t len, size_t off)
{
	o->mem = malloc(len + 2 * S_GUARD + off);
	CU_ASSERT_FATAL(o->mem != NULL);
	memset(o->mem, S_CANARY, len + 2 * S_GUARD + off);
	o->p = o->mem + S_GUARD + off;
	o->len = len;
}

/* 1 when every canary byte is intact. */
static int s_out_guarded(const struct s_out *o)
{
	for (const uint8_t *q = o->mem; q < o->p; q++)
		if (*q != S_CANARY)
			return 0;
	for (size_t i = 0; i < S_GUARD; i++)
		if (o->p[o->len + i] != S_CANARY)
			return 0;
	return 1;
}

static void s_out_done(struct s_out *o)
{
	free(o->mem);
}

/* 1 when planes is src shuffled by width, by definition. */
static int s_is_shuffle_of(const uint8_t *src, size_t n, unsigned width, const uint8_t *planes)
{
	for (size_t i = 0; i < n; i++)
		for (unsigned b = 0; b < width; b++)
			if (planes[b * n + i] != src[i * width + b])
				return 0;
	return 1;
}

static void test_shuffle_round_trips_every_width_and_length_identically_on_both_paths(void)
{
	uint8_t *in = malloc(8 * S_MAXN + 8);
	int bad_layout = 0, bad_paths = 0, bad_back = 0, bad_guard = 0;

	CU_ASSERT_FATAL(in != NULL);
	s_random(in, 8 * S_MAXN + 8, 3);
	for (size_t wi = 0; wi < S_NWIDTHS; wi++) {
		for (size_t li = 0; li < S_NLENS; li++) {
			unsigned w = s_widths[wi];
			size_t n = s_lens[li], len = n * w;
			/* Every source and destination alignment mod 8 is met at small lengths;
			 * the 1M-element case runs at one odd offset. */
			size_t noff = n < 1000 ? 8 : 1;
			for (size_t off = 0; off < noff; off++) {
				const uint8_t *src = in + (off + 3) % 8;
				struct s_out simd, port, back_simd, back_port;
				s_out_init(&simd, len, off);
				s_out_init(&port, len, (off + 5) % 8);
				s_out_init(&back_simd, len, (off + 1) % 8);
				s_out_init(&back_port, len, (off + 2) % 8);

				rr_shuffle_force_portable(0);
				rr_shuffle(src, n, w, simd.p);
				rr_unshuffle(simd.p, n, w, back_simd.p);
				rr_shuffle_force_portable(1);
				rr_shuffle(src, n, w, port.p);
				rr_unshuffle(port.p, n, w, back_port.p);
				rr_shuffle_force_portable(0);

				bad_layout += !s_is_shuffle_of(src, n, w, port.p);
				bad_paths += memcmp(simd.p, port.p, len) != 0;
				bad_back += memcmp(back_simd.p, src, len) != 0 ||
					    memcmp(back_port.p, src, len) != 0;
				bad_guard += !s_out_guarded(&simd) + !s_out_guarded(&port) +
					     !s_out_guarded(&back_simd) + !s_out_guarded(&back_port);
				if (bad_layout + bad_paths + bad_back + bad_guard == 1)
					printf("\n  first failure: width %u, n %zu, offset %zu\n", w, n,
					       off);
				s_out_done(&simd);
				s_out_done(&port);
				s_out_done(&back_simd);
				s_out_done(&back_port);
			}
		}
	}
	CU_ASSERT_EQUAL(bad_layout, 0);
	CU_ASSERT_EQUAL(bad_paths, 0);
	CU_ASSERT_EQUAL(bad_back, 0);
	CU_ASSERT_EQUAL(bad_guard, 0);
	free(in);
}

static void test_unshuffle_puts_planes_back_in_element_order(void)
{
	/* Three 4-byte elements: planes are bytes 0, then bytes 1, ... */
	const uint8_t planes[12] = { 0x00, 0x10, 0x20, 0x01, 0x11, 0x21,
				     0x02, 0x12, 0x22, 0x03, 0x13, 0x23 };
	const uint8_t want[12] = { 0x00, 0x01, 0x02, 0x03, 0x10, 0x11,
				   0x12, 0x13, 0x20, 0x21, 0x22, 0x23 };
	uint8_t out[12], again[12];

	for (int portable = 0; portable <= 1; portable++) {
		rr_shuffle_force_portable(portable);
		rr_unshuffle(planes, 3, 4, out);
		CU_ASSERT_EQUAL(memcmp(out, want, sizeof(want)), 0);
		rr_shuffle(out, 3, 4, again);
		CU_ASSERT_EQUAL(memcmp(again, planes, sizeof(planes)), 0);
	}
	rr_shuffle_force_portable(0);
}

/* Float-like data: every position of a 32-element SIMD step holds distinct bytes, so a
 * kernel that swaps two elements or two planes inside a step cannot pass. */
static void test_shuffle_keeps_every_byte_of_a_step_in_its_place(void)
{
	const size_t n = 96;
	for (size_t wi = 1; wi < S_NWIDTHS; wi++) {
		unsigned w = s_widths[wi];
		uint8_t src[96 * 8], planes[96 * 8];
		for (size_t i = 0; i < n * w; i++)
			src[i] = (uint8_t)(i * 7 + i / 251);
		rr_shuffle(src, n, w, planes);
		CU_ASSERT(s_is_shuffle_of(src, n, w, planes));
	}
}

static void test_force_portable_selects_the_path_and_reports_it(void)
{
	const char *simd = rr_shuffle_force_portable(0);
	CU_ASSERT_STRING_EQUAL(rr_shuffle_force_portable(1), "portable");
	CU_ASSERT(!strcmp(rr_shuffle_force_portable(0), simd));
	CU_ASSERT(!strcmp(simd, "avx2") || !strcmp(simd, "portable"));
	printf(" [%s]", simd);
}

static CU_TestInfo s_tests[] = {
	{ "test_force_portable_selects_the_path_and_reports_it",
	  test_force_portable_selects_the_path_and_reports_it },
	{ "test_unshuffle_puts_planes_back_in_element_order",
	  test_unshuffle_puts_planes_back_in_element_order },
	{ "test_shuffle_keeps_every_byte_of_a_step_in_its_place",
	  test_shuffle_keeps_every_byte_of_a_step_in_its_place },
	{ "test_shuffle_round_trips_every_width_and_length_identically_on_both_paths",
	  test_shuffle_round_trips_every_width_and_length_identically_on_both_paths },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("shuffle", s_tests)
