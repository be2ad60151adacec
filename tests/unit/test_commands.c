/* CUnit suite "commands": the store subcommands' verdicts (agent/cli/commands.c) against a
 * real file store, with the store's reads failing or the checkpoint deleted while it is read
 * (a libc open of this test program stands in front of the C library's). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "rr/config.h"
#include "rr/error.h"
#include "rr/fsutil.h"
#include "rr/layout.h"
#include "rr/persist.h"

#include "ckpt_fixture.h"
#include "cunit_main.h"

/* While set, opening a chunk of the store fails: with EIO (a disk or network outage that
 * outlasted the retries), or, for the chunk s_retire_chunk, after deleting that chunk and
 * checkpoint s_retire_name as retention does. */
static int s_chunks_fail;
static const struct fx *s_fx;
static const char *s_retire_chunk, *s_retire_name;

/* The C library's open, found before any thread runs (a lazy lookup would race). */
static int (*s_real_open)(const char *, int, ...);

__attribute__((constructor)) static void s_find_real(void)
{
	*(void **)&s_real_open = dlsym(RTLD_NEXT, "open");
}

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (flags & O_CREAT) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	if (s_chunks_fail && strstr(path, "/chunks/")) {
		errno = EIO;
		return -1;
	}
	/* Called from the verify's threads: the chunk is taken by one of them, and nothing
	 * here asserts (CUnit is not thread-safe); the test checks what verify printed. */
	const char *retire = __atomic_load_n(&s_retire_chunk, __ATOMIC_ACQUIRE);
	if (retire && strstr(path, retire) &&
	    __atomic_compare_exchange_n(&s_retire_chunk, &retire, NULL, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		char key[RR_KEY_MAX], *dir;
		if (rr_key_manifest(key, FX_RUN, s_retire_name) == 0) {
			*strrchr(key, '/') = '\0';
			dir = fx_join(s_fx->store_dir, key);
			(void)rr_remove_tree(dir);
			free(dir);
		}
		unlink(path);
	}
	return s_real_open(path, flags, mode);
}

/* Runs `resume-run verify` on f's store: its exit status; what it printed in out. */
static int s_verify(const struct fx *f, char *out, size_t cap)
{
	char url[600], *argv[] = { "resume-run", "verify", "--store", url, "--run-id", FX_RUN,
				   NULL };
	struct rr_config cfg;
	enum rr_command help_for;
	char err[256], path[] = "/tmp/rr_verify_out_XXXXXX";
	int fd = mkstemp(path), saved = dup(STDOUT_FILENO), rc;
	ssize_t n;

	CU_ASSERT_FATAL(fd >= 0 && saved >= 0);
	snprintf(url, sizeof(url), "file://%s", f->store_dir);
	CU_ASSERT_EQUAL_FATAL(rr_config_parse(6, argv, &cfg, &help_for, err, sizeof(err)), 0);
	fflush(stdout);
	dup2(fd, STDOUT_FILENO);
	rc = rr_cmd_verify(&cfg);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	n = pread(fd, out, cap - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	return rc;
}

static void s_two_checkpoints(struct fx *f, struct rr_manifest **m1)
{
	char *d;

	fx_init(f);
	d = fx_ckpt(f, "step-1");
	fx_write_random(d, "w.bin", 3 * FX_MIB, 1, 0644);
	free(d);
	CU_ASSERT_EQUAL_FATAL(fx_persist(f, "step-1", 1000, NULL, m1, NULL), 0);
	d = fx_ckpt(f, "step-2");
	fx_write_random(d, "w.bin", 3 * FX_MIB, 2, 0644);
	free(d);
	CU_ASSERT_EQUAL_FATAL(fx_persist(f, "step-2", 2000, NULL, NULL, NULL), 0);
}

/* A store that cannot be read is not damage: "NOT VERIFIED" and 125, not "DAMAGED" and 1,
 * which monitoring reads as corruption. */
static void test_verify_calls_a_store_error_no_damage(void)
{
	struct fx f;
	struct rr_manifest *m1 = NULL;
	char out[4096];

	s_two_checkpoints(&f, &m1);
	s_chunks_fail = 1;
	CU_ASSERT_EQUAL(s_verify(&f, out, sizeof(out)), 125);
	s_chunks_fail = 0;
	CU_ASSERT_PTR_NULL(strstr(out, "DAMAGED"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "step-2: NOT VERIFIED"));
	CU_ASSERT_EQUAL(s_verify(&f, out, sizeof(out)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "step-1: ok"));
	rr_manifest_destroy(m1);
	fx_done(&f);
}

/* Retention deletes the oldest checkpoint, chunks and all, while verify reads it: said as
 * such, exit 0, not DAMAGED and 1. */
static void test_verify_of_a_checkpoint_deleted_meanwhile_is_no_damage(void)
{
	struct fx f;
	struct rr_manifest *m1 = NULL;
	char out[4096];

	s_two_checkpoints(&f, &m1);
	s_fx = &f;
	s_retire_name = "step-1";
	s_retire_chunk = fx_first_chunk(m1, "w.bin");
	CU_ASSERT_EQUAL(s_verify(&f, out, sizeof(out)), 0);
	CU_ASSERT_PTR_NULL(s_retire_chunk); /* it was read */
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "step-2: ok"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "step-1: deleted while verified"));
	CU_ASSERT_PTR_NULL(strstr(out, "DAMAGED"));
	rr_manifest_destroy(m1);
	fx_done(&f);
}

static CU_TestInfo s_tests[] = {
	{ "verify_calls_a_store_error_no_damage", test_verify_calls_a_store_error_no_damage },
	{ "verify_of_a_checkpoint_deleted_meanwhile_is_no_damage",
	  test_verify_of_a_checkpoint_deleted_meanwhile_is_no_damage },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("commands", s_tests)
