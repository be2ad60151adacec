/* The pickle scanner: torch.save's data.pkl files (optimizer state, a Lightning-style
 * dict, a scheduler, an RNG state, every dtype, protocol 4) map each storage key to its
 * dtype and element count; a pickle that would run os.system is only scanned; anything the
 * scanner does not follow is refused with a reason. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_main.h"
#include "pickle_scan.h"
#include "torch_fixture.h"

static int s_scan_file(const char *name, struct rr_pk_scan *out, char *why, size_t why_len)
{
	size_t n = 0;
	unsigned char *p = tf_load("fuzz_pickle_scan", name, &n);
	int rc;

	CU_ASSERT_PTR_NOT_NULL(p);
	if (!p)
		return RR_ENOENT;
	rc = rr_pickle_scan(p, n, out, why, why_len);
	free(p);
	return rc;
}

static size_t s_count(const struct rr_pk_scan *s, enum rr_st_dtype d, uint64_t numel)
{
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++)
		k += s->storages[i].known && s->storages[i].dtype == d && s->storages[i].numel == numel;
	return k;
}

/* Linear(4,3), LayerNorm(3), Linear(3,2) under AdamW: per parameter a step, exp_avg and
 * exp_avg_sq, all F32. */
static void test_scan_maps_adamw_state(void)
{
	struct rr_pk_scan s;
	char why[256] = "";

	CU_ASSERT_EQUAL_FATAL(s_scan_file("optimizer.pt.pkl", &s, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(s.n, 18);
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_F32, 1), 6);   /* steps */
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_F32, 12), 2);  /* 4x3 weight */
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_F32, 3), 6);   /* biases, LayerNorm */
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_F32, 6), 2);   /* 3x2 weight */
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_F32, 2), 2);
	CU_ASSERT_PTR_NOT_NULL(rr_pickle_scan_find(&s, "0"));
	CU_ASSERT_PTR_NOT_NULL(rr_pickle_scan_find(&s, "17"));
	CU_ASSERT_PTR_NULL(rr_pickle_scan_find(&s, "18"));
	rr_pickle_scan_free(&s);
}

/* state_dict, optimizer_states list, lr_schedulers, callbacks with a tensor in nested
 * dicts: the model's 6 and the optimizer's 18 storages, and the callback's scalar. */
static void test_scan_maps_a_lightning_checkpoint(void)
{
	struct rr_pk_scan s;
	char why[256] = "";

	CU_ASSERT_EQUAL_FATAL(s_scan_file("lightning.ckpt.pkl", &s, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(s.n, 6 + 18 + 1);
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_F32, 1), 6 + 1);
	rr_pickle_scan_free(&s);
}

static void test_scan_maps_every_dtype_and_shared_storage(void)
{
	struct rr_pk_scan s;
	char why[256] = "";

	CU_ASSERT_EQUAL_FATAL(s_scan_file("dtypes.pt.pkl", &s, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_BF16, 3), 1);
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_F16, 2), 1);
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_F64, 2), 1);
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_I64, 3), 1);
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_BOOL, 2), 1);
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_C64, 2), 1);
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_U8, 2), 1);  /* uint8 tensor */
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_U8, 8), 1);  /* UntypedStorage: bytes */
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_F32, 12), 1); /* two views, one storage */
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_F32, 0), 1);  /* the empty tensor */
	CU_ASSERT_EQUAL(s.n, 10);
	rr_pickle_scan_free(&s);
}

static void test_scan_reads_scheduler_rng_and_protocol_4(void)
{
	struct rr_pk_scan s;
	char why[256] = "";

	CU_ASSERT_EQUAL(s_scan_file("scheduler.pt.pkl", &s, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(s.n, 0);
	rr_pickle_scan_free(&s);
	CU_ASSERT_EQUAL(s_scan_file("rng_state.pth.pkl", &s, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(s.n, 1);
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_U8, 5056), 1); /* torch.get_rng_state() */
	rr_pickle_scan_free(&s);
	CU_ASSERT_EQUAL(s_scan_file("protocol4.pt.pkl", &s, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(s.n, 1);
	CU_ASSERT_EQUAL(s_count(&s, RR_ST_F32, 4), 1);
	rr_pickle_scan_free(&s);
}

/* {"w": os.system("touch /tmp/rr-pickle-scan-ran")} as pickle would run it on load. */
static void test_scan_never_runs_a_malicious_pickle(void)
{
	struct rr_pk_scan s;
	char why[256] = "";

	unlink("/tmp/rr-pickle-scan-ran");
	CU_ASSERT_EQUAL(s_scan_file("malicious.pkl", &s, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(s.n, 0);
	CU_ASSERT_NOT_EQUAL(access("/tmp/rr-pickle-scan-ran", F_OK), 0);
	rr_pickle_scan_free(&s);
}

static void test_scan_refuses_every_truncation(void)
{
	size_t n = 0;
	unsigned char *p = tf_load("fuzz_pickle_scan", "optimizer.pt.pkl", &n);
	struct rr_pk_scan s;
	char why[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	for (size_t k = 0; k < n; k++) {
		why[0] = '\0';
		CU_ASSERT_EQUAL(rr_pickle_scan(p, k, &s, why, sizeof(why)), RR_ECORRUPT);
		CU_ASSERT(why[0] != '\0');
		CU_ASSERT_EQUAL(s.n, 0);
	}
	free(p);
}

static void s_expect_refused(const char *pkl, size_t n, const char *why_part)
{
	struct rr_pk_scan s;
	char why[256] = "";

	CU_ASSERT_EQUAL(rr_pickle_scan((const uint8_t *)pkl, n, &s, why, sizeof(why)), RR_ECORRUPT);
	if (!strstr(why, why_part))
		fprintf(stderr, "\nreason was: %s\n", why);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, why_part));
}

#define S_PID(type, key, numel) \
	"(X\x07\0\0\0storage" "ctorch\n" type "\n" "X\x01\0\0\0" key "X\x03\0\0\0cpuK" numel "tQ"

static void test_scan_refuses_what_it_does_not_follow(void)
{
	static const char underflow[] = "\x80\x02R.";
	static const char unknown[] = "\x80\x02\xff.";
	static const char oob[] = "\x80\x05\x97.";
	static const char memo[] = "\x80\x02h\x05.";
	static const char text_pid[] = "\x80\x02P0\n.";
	static const char not_storage[] = "\x80\x02(X\x03\0\0\0abcK\x01tQ.";
	static const char path_key[] = "\x80\x02" "(X\x07\0\0\0storage" "ctorch\nFloatStorage\n"
				       "X\x04\0\0\0../x" "X\x03\0\0\0cpuK\x04tQ.";
	static const char two_values[] = "\x80\x02NN.";
	static const char memo_jump[] = "\x80\x02Nr\xff\xff\xff\x0f.";
	static const char os_storage[] = "\x80\x02" "(X\x07\0\0\0storage" "cos\nsystem\n"
					 "X\x01\0\0\0" "0X\x03\0\0\0cpuK\x04tQ.";

	s_expect_refused(underflow, sizeof(underflow) - 1, "underflow");
	s_expect_refused(unknown, sizeof(unknown) - 1, "unknown opcode 0xff");
	s_expect_refused(oob, sizeof(oob) - 1, "out-of-band");
	s_expect_refused(memo, sizeof(memo) - 1, "never set");
	s_expect_refused(text_pid, sizeof(text_pid) - 1, "text persistent id");
	s_expect_refused(not_storage, sizeof(not_storage) - 1, "not a 5-tuple");
	s_expect_refused(path_key, sizeof(path_key) - 1, "not a plain name");
	s_expect_refused(two_values, sizeof(two_values) - 1, "STOP with 2 values");
	s_expect_refused(os_storage, sizeof(os_storage) - 1, "outside torch");
	s_expect_refused(memo_jump, sizeof(memo_jump) - 1, "out of sequence"); /* no 6 GB memo */
}

/* torch._utils._rebuild_tensor_v3(UntypedStorage, 0, (n,), (1,), False, OrderedDict(), dtype)
 * as newer torch writes tensors of dtypes without a legacy Storage class. */
#define S_V3(key, nbytes, dtype)                                                        \
	"ctorch._utils\n_rebuild_tensor_v3\n(" S_PID("UntypedStorage", key, nbytes)       \
	"K\x00K\x04\x85K\x01\x85\x89" "ccollections\nOrderedDict\n)R" "ctorch\n" dtype "\n" "tR"

static void test_scan_types_untyped_storages_by_rebuild_tensor_v3(void)
{
	static const char pkl[] = "\x80\x02(" S_V3("0", "\x08", "uint16") S_V3("1", "\x0a", "float32")
		S_V3("2", "\x08", "uint16") S_V3("2", "\x08", "int16") S_V3("3", "\x08", "no_such")
		"ctorch.storage\nUntypedStorage\n" "l.";
	struct rr_pk_scan s;
	char why[256] = "";

	CU_ASSERT_EQUAL_FATAL(rr_pickle_scan((const uint8_t *)pkl, sizeof(pkl) - 1, &s, why,
					     sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(s.n, 4);
	CU_ASSERT(s.storages[0].known && s.storages[0].dtype == RR_ST_U16);
	CU_ASSERT_EQUAL(s.storages[0].numel, 4);
	CU_ASSERT(!s.storages[1].known); /* 10 bytes are not whole float32s */
	CU_ASSERT(!s.storages[2].known); /* two tensors disagree on the dtype */
	CU_ASSERT(!s.storages[3].known); /* a dtype the scanner does not know */
	rr_pickle_scan_free(&s);
}

/* Nine million NONEs would hold 216 MB of values: refused before, not after. */
static void test_scan_bounds_the_values_it_holds(void)
{
	size_t n = RR_PK_MAX_VALUES + (1u << 20);
	uint8_t *p = malloc(n + 3);
	struct rr_pk_scan s;
	char why[256] = "";

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	p[0] = 0x80;
	p[1] = 2;
	memset(p + 2, 'N', n);
	p[n + 2] = '.';
	CU_ASSERT_EQUAL(rr_pickle_scan(p, n + 3, &s, why, sizeof(why)), RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "more than"));
	free(p);
}

/* One key seen as F32 with 4 elements and as F16: not known (stored byte-exact). */
static void test_scan_marks_conflicting_uses_unknown(void)
{
	static const char pkl[] = "\x80\x02(" S_PID("FloatStorage", "0", "\x04")
		S_PID("FloatStorage", "0", "\x04") S_PID("HalfStorage", "1", "\x04")
		S_PID("FloatStorage", "1", "\x04") S_PID("QInt8Storage", "2", "\x04") "l.";
	struct rr_pk_scan s;
	char why[256] = "";

	CU_ASSERT_EQUAL_FATAL(rr_pickle_scan((const uint8_t *)pkl, sizeof(pkl) - 1, &s, why,
					     sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(s.n, 3);
	CU_ASSERT(s.storages[0].known && s.storages[0].dtype == RR_ST_F32);
	CU_ASSERT_EQUAL(s.storages[0].numel, 4);
	CU_ASSERT(!s.storages[1].known);
	CU_ASSERT(!s.storages[2].known); /* a quantized type: bytes only */
	rr_pickle_scan_free(&s);
}

static CU_TestInfo s_tests[] = {
	{ "scan_maps_adamw_state", test_scan_maps_adamw_state },
	{ "scan_maps_a_lightning_checkpoint", test_scan_maps_a_lightning_checkpoint },
	{ "scan_maps_every_dtype_and_shared_storage", test_scan_maps_every_dtype_and_shared_storage },
	{ "scan_reads_scheduler_rng_and_protocol_4", test_scan_reads_scheduler_rng_and_protocol_4 },
	{ "scan_never_runs_a_malicious_pickle", test_scan_never_runs_a_malicious_pickle },
	{ "scan_refuses_every_truncation", test_scan_refuses_every_truncation },
	{ "scan_refuses_what_it_does_not_follow", test_scan_refuses_what_it_does_not_follow },
	{ "scan_types_untyped_storages_by_rebuild_tensor_v3", test_scan_types_untyped_storages_by_rebuild_tensor_v3 },
	{ "scan_bounds_the_values_it_holds", test_scan_bounds_the_values_it_holds },
	{ "scan_marks_conflicting_uses_unknown", test_scan_marks_conflicting_uses_unknown },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("pickle_scan", s_tests)
