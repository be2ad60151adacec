/* CUnit suite "precision": what each --precision does to F32 tensors, end to end through
 * persist and restore into a real file store, for safetensors and torch.save files (README,
 * "How checkpoints are made small"). A tensor whose values are all integers (Adam's step,
 * position ids, counters) and a tensor of at most 256 elements come back bit for bit under
 * every precision; other F32 tensors are rounded as asked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/crc32.h"
#include "rr/error.h"
#include "rr/format.h"
#include "rr/persist.h"
#include "rr/restore.h"

#include "ckpt_fixture.h"
#include "cunit_main.h"
#include "torch_fixture.h"
#include "torch_zip.h"

#define S_NAME "step-1"

static const enum rr_precision s_lossy[] = { RR_PRECISION_AUTO, RR_PRECISION_FP16,
					     RR_PRECISION_BF16 };
static const char *const s_lossy_name[] = { "auto", "fp16", "bf16" };
#define S_NLOSSY (sizeof(s_lossy) / sizeof(s_lossy[0]))

/* One tensor of a safetensors file: dtype "F32" or "F64", ndim 0 (a scalar) or 1. */
struct s_tensor {
	const char *name, *dtype;
	unsigned ndim;
	size_t n;
	const void *data; /* n elements of dtype */
};

static size_t s_bytes(const struct s_tensor *t)
{
	return t->n * (strcmp(t->dtype, "F64") == 0 ? 8 : 4);
}

/* Writes dir/rel as a safetensors file of these tensors, in this order. */
static void s_write_st(const char *dir, const char *rel, const struct s_tensor *t, size_t nt)
{
	struct rr_buf h;
	unsigned char *file;
	size_t at = 0, hlen;
	char one[512];

	rr_buf_init(&h, 1 << 20);
	CU_ASSERT_EQUAL_FATAL(rr_buf_append(&h, "{", 1), 0);
	for (size_t i = 0; i < nt; i++) {
		char shape[32] = "";
		if (t[i].ndim)
			snprintf(shape, sizeof(shape), "%zu", t[i].n);
		snprintf(one, sizeof(one),
			 "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%zu,%zu]}",
			 i ? "," : "", t[i].name, t[i].dtype, shape, at, at + s_bytes(&t[i]));
		CU_ASSERT_EQUAL_FATAL(rr_buf_append(&h, one, strlen(one)), 0);
		at += s_bytes(&t[i]);
	}
	CU_ASSERT_EQUAL_FATAL(rr_buf_append(&h, "}", 1), 0);
	while (h.len % 8)
		CU_ASSERT_EQUAL_FATAL(rr_buf_append(&h, " ", 1), 0);
	hlen = h.len;
	file = malloc(8 + hlen + at);
	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	for (int i = 0; i < 8; i++)
		file[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
	memcpy(file + 8, h.data, hlen);
	at = 8 + hlen;
	for (size_t i = 0; i < nt; i++) {
		memcpy(file + at, t[i].data, s_bytes(&t[i]));
		at += s_bytes(&t[i]);
	}
	fx_write(dir, rel, file, at, 0644);
	free(file);
	rr_buf_free(&h);
}

/* Persists checkpoint S_NAME of f under precision p, restores it and returns the restored
 * bytes of rel (malloc'd, *len its size); *ps gets the persist's counts. */
static unsigned char *s_round_trip(struct fx *f, enum rr_precision p, const char *rel,
				   size_t *len, struct rr_persist_stats *ps)
{
	struct rr_persist_opts o = fx_opts();
	struct rr_restore_stats rs;
	struct rr_manifest *m = NULL;
	unsigned char *back;
	char why[512], *d, *path;

	o.precision = p;
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(f->s, f->ckpt_dir, S_NAME, 1000, &o, &m, ps),
			      0);
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f->s, FX_RUN, m, f->restore_dir, 2, &rs, why,
						    sizeof(why)), 0);
	d = fx_join(f->restore_dir, S_NAME);
	path = fx_join(d, rel);
	back = fx_slurp(path, len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	free(path);
	free(d);
	rr_manifest_destroy(m);
	return back;
}

static uint64_t s_lossy_count(const struct rr_persist_stats *ps)
{
	return ps->tensors[RR_ENC_FP16] + ps->tensors[RR_ENC_BF16];
}

/* Writes the tensors as S_NAME/model.safetensors, round-trips them under each lossy
 * precision and checks: tensor i comes back bit for bit when exact[i], and the number of
 * tensors stored lossy is the number of the others. */
static void s_check_st(const struct s_tensor *t, size_t nt, const int *exact)
{
	uint64_t want_lossy = 0;

	for (size_t i = 0; i < nt; i++)
		want_lossy += !exact[i] && strcmp(t[i].dtype, "F32") == 0;
	for (size_t p = 0; p < S_NLOSSY; p++) {
		struct fx f;
		struct rr_persist_stats ps;
		unsigned char *orig, *back;
		size_t olen = 0, blen = 0, at;
		char *d, *path;

		fx_init(&f);
		d = fx_ckpt(&f, S_NAME);
		s_write_st(d, "model.safetensors", t, nt);
		path = fx_join(d, "model.safetensors");
		orig = fx_slurp(path, &olen);
		CU_ASSERT_PTR_NOT_NULL_FATAL(orig);
		back = s_round_trip(&f, s_lossy[p], "model.safetensors", &blen, &ps);
		CU_ASSERT_EQUAL_FATAL(blen, olen);
		at = olen;
		for (size_t i = nt; i-- > 0;)
			at -= s_bytes(&t[i]);
		for (size_t i = 0; i < nt; i++) {
			int same = memcmp(orig + at, back + at, s_bytes(&t[i])) == 0;
			if (exact[i] && !same)
				fprintf(stderr, "\n  --precision %s: tensor %s changed\n",
					s_lossy_name[p], t[i].name);
			CU_ASSERT(!exact[i] || same);
			at += s_bytes(&t[i]);
		}
		CU_ASSERT_EQUAL(s_lossy_count(&ps), want_lossy);
		free(orig);
		free(back);
		free(path);
		free(d);
		fx_done(&f);
	}
}

/* n values of a trained weight: none an integer. */
static float *s_weights(size_t n, uint32_t seed)
{
	float *w = malloc(n * sizeof(*w));
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		w[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 0.04f + 0.0001f;
	}
	return w;
}

/* Adam's step past 2048 (FP16 makes 4097 4096), position ids, counters past F32's 2^24
 * and F64 values: every one comes back bit for bit under auto, fp16 and bf16; the weight
 * beside them is still rounded. */
/* Two writers of one name whose F32 tensors differ by a power of two (a constant buffer, a
 * gradient under another loss scale): scaled FP16 stores x and 2x as the very same bytes
 * (scale 2^k and 2^(k-1)), so the same chunks. The second persist is told the name holds
 * other content, not that the store has its checkpoint (its values would come back halved). */
static void test_a_tensor_twice_as_large_is_other_content_under_the_same_name(void)
{
	enum { N = 4096 };
	static float x[N], twice[N];
	struct fx f;
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats ps;
	char *d;

	for (int i = 0; i < N; i++) {
		x[i] = 0.001f * (float)((i * 37) % 1000 - 500) + 0.0001f;
		twice[i] = 2.0f * x[i];
	}
	fx_init(&f);
	o.precision = RR_PRECISION_AUTO;
	d = fx_ckpt(&f, S_NAME);
	s_write_st(d, "model.safetensors", &(struct s_tensor){ "w", "F32", 1, N, x }, 1);
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(f.s, f.ckpt_dir, S_NAME, 1000, &o, NULL, &ps),
			      0);
	CU_ASSERT_EQUAL(ps.tensors[RR_ENC_FP16], 1);
	s_write_st(d, "model.safetensors", &(struct s_tensor){ "w", "F32", 1, N, twice }, 1);
	CU_ASSERT_EQUAL(rr_persist_checkpoint(f.s, f.ckpt_dir, S_NAME, 2000, &o, NULL, &ps),
			RR_EPRECOND);
	free(d);
	fx_done(&f);
}

static void test_integer_valued_f32_tensors_come_back_exact_under_every_precision(void)
{
	float step = 4097.0f, big[1000], *pos = malloc(2100 * sizeof(*pos));
	double f64[300];
	float *w = s_weights(4096, 1);

	CU_ASSERT_PTR_NOT_NULL_FATAL(pos);
	for (size_t i = 0; i < 2100; i++)
		pos[i] = (float)(2000 + i); /* arange(2000, 4100) */
	for (size_t i = 0; i < 1000; i++) /* counters: large, negative, zero, 2^24 + 2, 1e10 */
		big[i] = i % 4 == 0 ? 16777218.0f : i % 4 == 1 ? -(float)(3 * i + 1)
			 : i % 4 == 2 ? 1e10f : 0.0f;
	for (size_t i = 0; i < 300; i++)
		f64[i] = 4097.5 + (double)i / 3.0;
	const struct s_tensor t[] = {
		{ "optimizer.state.0.step", "F32", 0, 1, &step },
		{ "position_ids", "F32", 1, 2100, pos },
		{ "counters", "F32", 1, 1000, big },
		{ "weight", "F32", 1, 4096, w },
		{ "f64", "F64", 1, 300, f64 },
	};
	const int exact[] = { 1, 1, 1, 0, 1 };
	s_check_st(t, 5, exact);
	free(pos);
	free(w);
}

/* A scalar, an EMA decay BF16 would make 1.0 and a tensor of 256 elements are never
 * rounded; one of 257 is. */
static void test_tensors_of_at_most_256_elements_come_back_exact_under_every_precision(void)
{
	float temp = 0.07f, decay[2] = { 0.9999f, 0.999f };
	float *w256 = s_weights(256, 2), *w257 = s_weights(257, 3);
	const struct s_tensor t[] = {
		{ "logit_scale", "F32", 0, 1, &temp },
		{ "ema_decay", "F32", 1, 2, decay },
		{ "alibi_slopes", "F32", 1, 256, w256 },
		{ "ln.weight", "F32", 1, 257, w257 },
	};
	const int exact[] = { 1, 1, 1, 0 };
	s_check_st(t, 4, exact);
	free(w256);
	free(w257);
}

/* "All values integer" is the test: one fraction among integers and the tensor is rounded;
 * integers beside Inf and the canonical NaN are still integer-valued. */
static void test_one_fraction_makes_an_integer_tensor_roundable(void)
{
	float *mostly = malloc(4096 * sizeof(float)), *mask = malloc(4096 * sizeof(float));
	uint32_t qnan = 0x7fc00000u;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mostly);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mask);
	for (size_t i = 0; i < 4096; i++) {
		mostly[i] = (float)(i * 3);
		mask[i] = i % 3 == 0 ? -INFINITY : (float)(4096 + i);
	}
	mostly[4095] = 0.5f;
	memcpy(&mask[7], &qnan, 4);
	const struct s_tensor t[] = {
		{ "mostly_integers", "F32", 1, 4096, mostly },
		{ "mask", "F32", 1, 4096, mask },
	};
	const int exact[] = { 0, 1 };
	s_check_st(t, 2, exact);
	free(mostly);
	free(mask);
}

/* A tensor of several chunks (10 MB: two 8 MiB segments' worth) is integer-valued only when
 * every chunk is: all integers stay exact, one fraction in its last chunk rounds it. */
static void test_integer_check_covers_every_chunk_of_a_big_tensor(void)
{
	size_t n = 2500000;
	float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	for (size_t i = 0; i < n; i++)
		a[i] = b[i] = (float)(i % 50000);
	b[n - 1] = 1.25f;
	const struct s_tensor t[] = {
		{ "token_counts", "F32", 1, n, a },
		{ "almost", "F32", 1, n, b },
	};
	const int exact[] = { 1, 0 };
	s_check_st(t, 2, exact);
	free(a);
	free(b);
}

/* Every entry of the zip in buf holds the CRC-32 its central directory records. */
static void s_check_crcs(unsigned char *buf, size_t len)
{
	struct tf_mem mem = { buf, len };
	struct rr_format_src src = tf_src(&mem);
	struct rr_zip z = { 0 };
	char why[256];

	CU_ASSERT_EQUAL_FATAL(rr_zip_read(&src, &z, why, sizeof(why)), 0);
	for (size_t i = 0; i < z.n; i++)
		CU_ASSERT_EQUAL(rr_crc32(0, buf + z.entries[i].data_off, z.entries[i].usize),
				z.entries[i].crc);
	rr_zip_free(&z);
}

/* torch.save: Adam's state_dict after a run past step 4096 (tests/fuzz/make_torch_corpus.py,
 * adam_step.pt). Records 0 and 3 are the two params' F32 `step` scalars (4097), 6 is
 * arange(2000, 4100) as F32, 7 an EMA decay of two elements, 4 and 5 the bias moments (32
 * elements): bit for bit under every precision. 1 and 2, the weight's moments (1024
 * elements), are rounded. The restored file is a valid zip (CRCs recomputed). */
static void test_torch_save_steps_positions_and_small_records_come_back_exact(void)
{
	static const char *const exact[] = { "0", "3", "4", "5", "6", "7" };
	size_t olen = 0;
	unsigned char *orig = tf_load("fuzz_torch_zip", "adam_step.pt", &olen);
	struct tf_mem mem = { orig, olen };
	struct rr_format_src src = tf_src(&mem);
	struct rr_format_plan plan = { 0 };
	char why[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(orig);
	CU_ASSERT_EQUAL_FATAL(rr_format_torch.plan(&src, &plan, why, sizeof(why)), 0);
	for (size_t p = 0; p < S_NLOSSY; p++) {
		struct fx f;
		struct rr_persist_stats ps;
		unsigned char *back;
		size_t blen = 0, found = 0;
		char *d;

		fx_init(&f);
		d = fx_ckpt(&f, S_NAME);
		fx_write(d, "optimizer.pt", orig, olen, 0644);
		back = s_round_trip(&f, s_lossy[p], "optimizer.pt", &blen, &ps);
		CU_ASSERT_EQUAL_FATAL(blen, olen);
		for (size_t i = 0; i < plan.n; i++) {
			const struct rr_format_piece *pc = &plan.pieces[i];
			for (size_t e = 0; pc->tensor && e < sizeof(exact) / sizeof(exact[0]); e++) {
				char name[64];
				snprintf(name, sizeof(name), "archive/data/%s", exact[e]);
				if (strcmp(pc->name, name) != 0)
					continue;
				found++;
				if (memcmp(orig + pc->offset, back + pc->offset, pc->length) != 0)
					fprintf(stderr, "\n  --precision %s: record %s changed\n",
						s_lossy_name[p], name);
				CU_ASSERT_EQUAL(memcmp(orig + pc->offset, back + pc->offset,
						       pc->length), 0);
			}
		}
		CU_ASSERT_EQUAL(found, 6);
		CU_ASSERT_EQUAL(s_lossy_count(&ps), 2);
		s_check_crcs(back, blen);
		free(back);
		free(d);
		fx_done(&f);
	}
	rr_format_plan_free(&plan);
	free(orig);
}

static CU_TestInfo s_tests[] = {
	{ "a_tensor_twice_as_large_is_other_content_under_the_same_name",
	  test_a_tensor_twice_as_large_is_other_content_under_the_same_name },
	{ "integer_valued_f32_tensors_come_back_exact_under_every_precision",
	  test_integer_valued_f32_tensors_come_back_exact_under_every_precision },
	{ "tensors_of_at_most_256_elements_come_back_exact_under_every_precision",
	  test_tensors_of_at_most_256_elements_come_back_exact_under_every_precision },
	{ "one_fraction_makes_an_integer_tensor_roundable",
	  test_one_fraction_makes_an_integer_tensor_roundable },
	{ "integer_check_covers_every_chunk_of_a_big_tensor",
	  test_integer_check_covers_every_chunk_of_a_big_tensor },
	{ "torch_save_steps_positions_and_small_records_come_back_exact",
	  test_torch_save_steps_positions_and_small_records_come_back_exact },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("precision", s_tests)
