/* CUnit suite "restore": rr_restore_checkpoint, rr_verify_checkpoint and rr_restore_newest
 * against a real file store in a temp dir. Damage is made by flipping or deleting chunk
 * files in the store directly. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rr/catalog.h"
#include "rr/error.h"
#include "rr/gc.h"
#include "rr/log.h"
#include "rr/marks.h"
#include "rr/persist.h"
#include "rr/restore.h"

#include "ckpt_fixture.h"
#include "cunit_main.h"
#include "torch_fixture.h"

#define S_THREADS 2

/* Fault injection for the last step of a restore: while set, a rename out of a staging
 * directory (".NAME.restoring/") fails with EIO, as one can on a failing disk. This rename
 * takes the C library's place in the whole test program (the code under test is linked in
 * statically); every other call goes on to the C library's. */
static int s_fail_staged_rename;

/* A restore in a child process, paused at its last step (the staging directory's rename
 * into place) until the parent writes a byte to s_pause_in or a second has passed; it
 * writes one to s_pause_out when it gets there. */
static int s_pause_at_swap, s_pause_in = -1, s_pause_out = -1;

/* The C library's functions behind the stand-ins below, found before any thread runs (a
 * lazy lookup from the pool's threads would race). */
static int (*s_real_rename)(const char *, const char *);
static int (*s_real_fsync)(int);
static ssize_t (*s_real_pwrite)(int, const void *, size_t, off_t);

__attribute__((constructor)) static void s_find_real(void)
{
	*(void **)&s_real_rename = dlsym(RTLD_NEXT, "rename");
	*(void **)&s_real_fsync = dlsym(RTLD_NEXT, "fsync");
	*(void **)&s_real_pwrite = dlsym(RTLD_NEXT, "pwrite");
}

int rename(const char *from, const char *to)
{

	if (s_fail_staged_rename && strstr(from, ".restoring/")) {
		errno = EIO;
		return -1;
	}
	if (s_pause_at_swap && strstr(from, ".restoring") && !strstr(from, ".restoring/")) {
		struct pollfd pfd = { .fd = s_pause_in, .events = POLLIN };
		char c;
		s_pause_at_swap = 0;
		if (write(s_pause_out, "x", 1) != 1 ||
		    (poll(&pfd, 1, 1000) == 1 && read(s_pause_in, &c, 1) != 1))
			_exit(3);
	}
	return s_real_rename(from, to);
}

/* Every directory synced is noted (its path, from /proc/self/fd); one whose path is
 * s_fail_sync_of fails with EIO while that directory also holds an entry starting with
 * s_fail_sync_when (the old copy set aside: the sync after the swap). */
static pthread_mutex_t s_sync_lock = PTHREAD_MUTEX_INITIALIZER;
static char s_synced[128][512];
static int s_nsynced;
static const char *s_fail_sync_of, *s_fail_sync_when;

static int s_holds_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	while (d && !found && (e = readdir(d)))
		found = strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	if (d)
		closedir(d);
	return found;
}

int fsync(int fd)
{
	char link[64], path[512];
	struct stat st;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
	    (n = readlink(link, path, sizeof(path) - 1)) > 0) {
		path[n] = '\0';
		pthread_mutex_lock(&s_sync_lock);
		if (s_nsynced < 128)
			snprintf(s_synced[s_nsynced++], sizeof(s_synced[0]), "%s", path);
		pthread_mutex_unlock(&s_sync_lock);
		if (s_fail_sync_of && strcmp(path, s_fail_sync_of) == 0 &&
		    s_holds_prefix(path, s_fail_sync_when)) {
			errno = EIO;
			return -1;
		}
	}
	return s_real_fsync(fd);
}

static int s_was_synced(const char *dir, const char *rel)
{
	char want[512];
	int found = 0;

	snprintf(want, sizeof(want), "%s/%s", dir, rel);
	pthread_mutex_lock(&s_sync_lock);
	for (int i = 0; i < s_nsynced && !found; i++)
		found = strcmp(s_synced[i], want) == 0;
	pthread_mutex_unlock(&s_sync_lock);
	if (!found)
		fprintf(stderr, "\n  %s was never synced\n", want);
	return found;
}

/* A checkpoint with nested files, an empty file, a multi-segment file and several modes;
 * seed makes its big file differ from other checkpoints'. */
static void s_make(struct fx *f, const char *name, uint64_t seed)
{
	char *d = fx_ckpt(f, name);
	fx_write_random(d, "model/weights.bin", 9 * FX_MIB, seed, 0644);
	fx_write_random(d, "optim/state.bin", 100 * 1024, seed + 1000, 0600);
	fx_write_str(d, "model/sub/config.json", "{\"layers\": 12}\n", 0640);
	fx_write(d, "empty.txt", "", 0, 0644);
	fx_write_str(d, "bin/run.sh", "#!/bin/sh\necho hi\n", 0755);
	free(d);
}

static struct rr_manifest *s_make_and_persist(struct fx *f, const char *name, uint64_t seed,
					      int64_t ms)
{
	struct rr_manifest *m = NULL;
	struct rr_persist_stats st;
	s_make(f, name, seed);
	CU_ASSERT_EQUAL_FATAL(fx_persist(f, name, ms, NULL, &m, &st), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	return m;
}

static void s_assert_names(const char *dir, const char *want)
{
	char names[1024];
	fx_dir_names(dir, names, sizeof(names));
	if (strcmp(names, want) != 0)
		fprintf(stderr, "\n  %s holds [%s], expected [%s]\n", dir, names, want);
	CU_ASSERT_STRING_EQUAL(names, want);
}

static void test_restore_round_trip_is_byte_identical_with_modes(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	char why[512], *src, *dst;

	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st,
						    why, sizeof(why)),
			      0);
	src = fx_ckpt(&f, "step-1");
	dst = fx_join(f.restore_dir, "step-1");
	FX_ASSERT_SAME_TREE(src, dst);
	CU_ASSERT_EQUAL(fx_mode(dst, "model/sub/config.json"), 0640);
	CU_ASSERT_EQUAL(fx_mode(dst, "bin/run.sh"), 0755);
	CU_ASSERT_EQUAL(fx_mode(dst, "optim/state.bin"), 0600);
	CU_ASSERT_EQUAL(st.files, 5);
	CU_ASSERT_EQUAL(st.bytes, rr_manifest_total_size(m));
	CU_ASSERT_EQUAL(st.downloaded_bytes, rr_manifest_total_stored(m));
	CU_ASSERT_EQUAL(st.kept_files, 0);
	CU_ASSERT_EQUAL(st.already_present, 0);
	s_assert_names(f.restore_dir, "step-1");
	free(src);
	free(dst);
	rr_manifest_destroy(m);
	fx_done(&f);
}

static void test_restore_drops_setuid_setgid_and_sticky_bits(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m = NULL;
	char why[512], *d, *dst;

	fx_init(&f);
	d = fx_ckpt(&f, "step-1");
	fx_write_str(d, "suid", "#!/bin/sh\n", 0755);
	fx_write_str(d, "sgid", "#!/bin/sh\n#g\n", 0750);
	fx_write_str(d, "sticky", "t\n", 0644);
	{
		char *p1 = fx_join(d, "suid"), *p2 = fx_join(d, "sgid"), *p3 = fx_join(d, "sticky");
		CU_ASSERT_EQUAL_FATAL(chmod(p1, 04755), 0);
		CU_ASSERT_EQUAL_FATAL(chmod(p2, 02750), 0);
		CU_ASSERT_EQUAL_FATAL(chmod(p3, 01644), 0);
		free(p1);
		free(p2);
		free(p3);
	}
	CU_ASSERT_EQUAL_FATAL(fx_mode(d, "suid"), 04755);
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-1", 1, NULL, &m, NULL), 0);
	CU_ASSERT_EQUAL(fx_file(m, "suid")->mode, 04755); /* recorded as found */
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st,
						    why, sizeof(why)),
			      0);
	dst = fx_join(f.restore_dir, "step-1");
	CU_ASSERT_EQUAL(fx_mode(dst, "suid"), 0755);
	CU_ASSERT_EQUAL(fx_mode(dst, "sgid"), 0750);
	CU_ASSERT_EQUAL(fx_mode(dst, "sticky"), 0644);
	free(dst);
	free(d);
	rr_manifest_destroy(m);
	fx_done(&f);
}

/* Inode numbers of every file of m under dir. */
static void s_inodes(const char *dir, const struct rr_manifest *m, ino_t *out)
{
	for (size_t i = 0; i < m->nfiles; i++)
		out[i] = fx_ino(dir, m->files[i].path);
}

static void test_restore_into_identical_dir_rewrites_nothing(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	ino_t before[8], after[8], dir_ino;
	char why[512], *dst;

	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	CU_ASSERT_FATAL(m->nfiles <= 8);
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st,
						    why, sizeof(why)),
			      0);
	dst = fx_join(f.restore_dir, "step-1");
	s_inodes(dst, m, before);
	dir_ino = fx_ino(f.restore_dir, "step-1");

	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st, why,
					      sizeof(why)),
			0);
	CU_ASSERT_EQUAL(st.already_present, 1);
	CU_ASSERT_EQUAL(st.kept_files, m->nfiles);
	CU_ASSERT_EQUAL(st.downloaded_bytes, 0);
	s_inodes(dst, m, after);
	CU_ASSERT_EQUAL(memcmp(before, after, m->nfiles * sizeof(ino_t)), 0);
	CU_ASSERT_EQUAL(fx_ino(f.restore_dir, "step-1"), dir_ino);
	s_assert_names(f.restore_dir, "step-1");
	free(dst);
	rr_manifest_destroy(m);
	fx_done(&f);
}

/* The one entry of dir whose name starts with prefix, malloc'd; NULL unless exactly one. */
static char *s_find_one(const char *dir, const char *prefix)
{
	char names[1024], *tok, *save = NULL, *hit = NULL;
	int n = 0;
	fx_dir_names(dir, names, sizeof(names));
	for (tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (strncmp(tok, prefix, strlen(prefix)) == 0) {
			n++;
			free(hit);
			hit = strdup(tok);
		}
	if (n != 1) {
		free(hit);
		return NULL;
	}
	return hit;
}

static void test_restore_over_changed_dir_keeps_identical_files_and_removes_old_copy(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	ino_t before[8], after[8];
	char why[512], *src, *dst;
	size_t changed = 0;

	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	CU_ASSERT_FATAL(m->nfiles <= 8);
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st,
						    why, sizeof(why)),
			      0);
	dst = fx_join(f.restore_dir, "step-1");
	src = fx_ckpt(&f, "step-1");
	s_inodes(dst, m, before);
	/* Someone edits one file in place (same inode, other bytes). */
	fx_write_str(dst, "model/sub/config.json", "{\"layers\": 13}\n", 0640);
	for (size_t i = 0; i < m->nfiles; i++)
		if (strcmp(m->files[i].path, "model/sub/config.json") == 0)
			changed = i;

	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st,
						    why, sizeof(why)),
			      0);
	CU_ASSERT_EQUAL(st.already_present, 0);
	CU_ASSERT_EQUAL(st.kept_files, m->nfiles - 1);
	FX_ASSERT_SAME_TREE(src, dst);
	s_inodes(dst, m, after);
	for (size_t i = 0; i < m->nfiles; i++) {
		if (i == changed) {
			CU_ASSERT_NOT_EQUAL(after[i], before[i]);
		} else {
			CU_ASSERT_EQUAL(after[i], before[i]); /* linked, not rewritten */
		}
	}
	/* The old directory went aside only until the new one was in place: no
	 * ".step-1.local-<ms>" copy is left to pile up at every start. */
	CU_ASSERT_EQUAL(fx_dir_names(f.restore_dir, why, sizeof(why)), 1);
	CU_ASSERT_STRING_EQUAL(why, "step-1");
	free(src);
	free(dst);
	rr_manifest_destroy(m);
	fx_done(&f);
}

/* A deep restore parent (paths may be up to PATH_MAX): the old directory still goes aside
 * into the parent under its ".NAME.local-<ms>" name, not to a truncated path elsewhere,
 * and is removed from there once the new copy is in place. */
static void test_restore_moves_old_dir_aside_within_a_long_parent_path(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	char comp1[201], comp2[121], why[512], *mid, *parent, *dst;

	fx_init(&f);
	memset(comp1, 'p', sizeof(comp1) - 1);
	comp1[sizeof(comp1) - 1] = '\0';
	memset(comp2, 'q', sizeof(comp2) - 1);
	comp2[sizeof(comp2) - 1] = '\0';
	mid = fx_join(f.root, comp1);
	parent = fx_join(mid, comp2);
	CU_ASSERT_FATAL(strlen(parent) > 300);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, parent, S_THREADS, &st, why,
						    sizeof(why)),
			      0);
	dst = fx_join(parent, "step-1");
	fx_write_str(dst, "bin/run.sh", "#!/bin/sh\necho local edit\n", 0755);
	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m, parent, S_THREADS, &st, why,
					      sizeof(why)),
			0);
	CU_ASSERT_EQUAL(fx_dir_names(parent, why, sizeof(why)), 1);
	CU_ASSERT_STRING_EQUAL(why, "step-1");
	/* Nothing was moved out of the parent. */
	CU_ASSERT_EQUAL(fx_dir_names(mid, why, sizeof(why)), 1);
	free(dst);
	free(parent);
	free(mid);
	rr_manifest_destroy(m);
	fx_done(&f);
}

/* Makes <root>/outside: a copy of step-1 restored elsewhere, whose inodes must not end up
 * in the restored checkpoint. Returns its path (malloc'd). */
static char *s_outside_copy(struct fx *f, const struct rr_manifest *m)
{
	struct rr_restore_stats st;
	char why[512], *tmp_parent = fx_join(f->root, "elsewhere"), *from, *to;

	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f->s, FX_RUN, m, tmp_parent, S_THREADS, &st,
						    why, sizeof(why)),
			      0);
	from = fx_join(tmp_parent, "step-1");
	to = fx_join(f->root, "outside");
	CU_ASSERT_EQUAL_FATAL(rename(from, to), 0);
	free(from);
	free(tmp_parent);
	return to;
}

static void test_restore_over_symlink_to_identical_dir_writes_real_files(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	char why[512], *outside, *dst, *src;
	struct stat sb;

	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	outside = s_outside_copy(&f, m);
	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(f.restore_dir), 0);
	dst = fx_join(f.restore_dir, "step-1");
	CU_ASSERT_EQUAL_FATAL(symlink(outside, dst), 0);

	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st, why,
					      sizeof(why)),
			0);
	CU_ASSERT_EQUAL(lstat(dst, &sb), 0);
	CU_ASSERT_TRUE(S_ISDIR(sb.st_mode));
	src = fx_ckpt(&f, "step-1");
	FX_ASSERT_SAME_TREE(src, dst);
	/* Nothing of the restored checkpoint shares an inode with the files outside. */
	for (size_t i = 0; i < m->nfiles; i++)
		CU_ASSERT_NOT_EQUAL(fx_ino(dst, m->files[i].path), fx_ino(outside, m->files[i].path));
	CU_ASSERT_EQUAL(st.kept_files, 0);
	/* The symlink itself went aside and was removed; what it pointed to is untouched. */
	FX_ASSERT_SAME_TREE(src, outside);
	CU_ASSERT_PTR_NULL(s_find_one(f.restore_dir, ".step-1.local-"));
	free(src);
	free(dst);
	free(outside);
	rr_manifest_destroy(m);
	fx_done(&f);
}

static void test_restore_does_not_link_files_reached_through_a_local_symlink(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	char why[512], *outside, *dst, *src, *model, *target;

	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	outside = s_outside_copy(&f, m);
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st,
						    why, sizeof(why)),
			      0);
	/* Locally, model/ was replaced by a symlink to an identical directory elsewhere. */
	dst = fx_join(f.restore_dir, "step-1");
	model = fx_join(dst, "model");
	target = fx_join(outside, "model");
	CU_ASSERT_EQUAL_FATAL(rr_remove_tree(model), 0);
	CU_ASSERT_EQUAL_FATAL(symlink(target, model), 0);

	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st, why,
					      sizeof(why)),
			0);
	src = fx_ckpt(&f, "step-1");
	FX_ASSERT_SAME_TREE(src, dst);
	CU_ASSERT_NOT_EQUAL(fx_ino(dst, "model/weights.bin"), fx_ino(outside, "model/weights.bin"));
	CU_ASSERT_NOT_EQUAL(fx_ino(dst, "model/sub/config.json"),
			    fx_ino(outside, "model/sub/config.json"));
	/* The files that were real local files are still kept. */
	CU_ASSERT_EQUAL(st.kept_files, m->nfiles - 2);
	free(src);
	free(target);
	free(model);
	free(dst);
	free(outside);
	rr_manifest_destroy(m);
	fx_done(&f);
}

static void test_restore_corrupt_chunk_is_ecorrupt_and_leaves_nothing(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	char why[512], sha[RR_SHA256_HEX_LEN + 1];

	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	snprintf(sha, sizeof(sha), "%s", fx_first_chunk(m, "optim/state.bin"));
	fx_corrupt_chunk(&f, sha);
	fx_write_str(f.restore_dir, "other.txt", "was here before\n", 0644);

	why[0] = '\0';
	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st, why,
					      sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, sha));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "optim/state.bin"));
	s_assert_names(f.restore_dir, "other.txt");
	rr_manifest_destroy(m);
	fx_done(&f);
}

static void test_restore_corrupt_chunk_leaves_existing_local_dir_untouched(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	char why[512], *dst, *copy;

	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st,
						    why, sizeof(why)),
			      0);
	dst = fx_join(f.restore_dir, "step-1");
	fx_write_str(dst, "bin/run.sh", "#!/bin/sh\necho local edit\n", 0755);
	/* A reference copy of the edited dir, outside the restore parent. */
	copy = fx_join(f.root, "copy");
	s_make(&f, "copy-src", 1);
	{
		char *cs = fx_ckpt(&f, "copy-src");
		fx_write_str(cs, "bin/run.sh", "#!/bin/sh\necho local edit\n", 0755);
		CU_ASSERT_EQUAL_FATAL(rename(cs, copy), 0);
		free(cs);
	}
	/* The chunk restore must fetch: the one of the file that differs locally (identical
	 * files are kept from the local directory, never read from the store). */
	fx_corrupt_chunk(&f, fx_first_chunk(m, "bin/run.sh"));

	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st, why,
					      sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "bin/run.sh"));
	s_assert_names(f.restore_dir, "step-1");
	FX_ASSERT_SAME_TREE(dst, copy);
	free(copy);
	free(dst);
	rr_manifest_destroy(m);
	fx_done(&f);
}

static void test_restore_missing_chunk_is_ecorrupt(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	char why[512], sha[RR_SHA256_HEX_LEN + 1];

	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	/* The second segment of the big file. */
	snprintf(sha, sizeof(sha), "%s", fx_file(m, "model/weights.bin")->segs[1].chunks[0].sha256);
	fx_delete_chunk(&f, sha);
	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st, why,
					      sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, sha));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "model/weights.bin"));
	s_assert_names(f.restore_dir, "");
	rr_manifest_destroy(m);
	fx_done(&f);
}

static void test_verify_accepts_intact_and_rejects_corrupt_checkpoint(void)
{
	struct fx f;
	struct rr_manifest *m;
	char why[512], sha[RR_SHA256_HEX_LEN + 1];

	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	CU_ASSERT_EQUAL(rr_verify_checkpoint(f.s, FX_RUN, m, S_THREADS, why, sizeof(why)), 0);
	snprintf(sha, sizeof(sha), "%s", fx_first_chunk(m, "bin/run.sh"));
	fx_corrupt_chunk(&f, sha);
	CU_ASSERT_EQUAL(rr_verify_checkpoint(f.s, FX_RUN, m, S_THREADS, why, sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, sha));
	fx_delete_chunk(&f, sha);
	CU_ASSERT_EQUAL(rr_verify_checkpoint(f.s, FX_RUN, m, S_THREADS, why, sizeof(why)),
			RR_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, sha));
	/* Verify writes nothing locally. */
	CU_ASSERT_FALSE(fx_exists(f.restore_dir));
	rr_manifest_destroy(m);
	fx_done(&f);
}

static void test_restore_newest_falls_back_to_older_when_newest_is_damaged(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m1, *m2;
	struct rr_catalog *c = NULL;
	char name[256] = "", *src, *dst;

	fx_init(&f);
	m1 = s_make_and_persist(&f, "step-1", 1, 1000);
	m2 = s_make_and_persist(&f, "step-2", 2, 2000);
	fx_corrupt_chunk(&f, fx_first_chunk(m2, "model/weights.bin"));
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	/* A flipped byte is not visible to the catalog: step-2 still looks committed. */
	CU_ASSERT_STRING_EQUAL(rr_catalog_newest(c)->name, "step-2");

	CU_ASSERT_EQUAL(rr_restore_newest(f.s, c, 1, 0, f.restore_dir, S_THREADS, name,
					  sizeof(name), &st),
			0);
	CU_ASSERT_STRING_EQUAL(name, "step-1");
	CU_ASSERT_EQUAL(st.fallbacks, 1); /* the ledger's restore event says so */
	src = fx_ckpt(&f, "step-1");
	dst = fx_join(f.restore_dir, "step-1");
	FX_ASSERT_SAME_TREE(src, dst);
	s_assert_names(f.restore_dir, "step-1");
	free(src);
	free(dst);
	rr_catalog_destroy(c);

	/* The damaged one is marked suspect in the store: retention keeping one checkpoint
	 * keeps the one restored (it deleted it, the damaged one counting as the newest), and
	 * the next start passes step-2 over without reading it again. */
	{
		struct rr_suspect mark;
		struct rr_gc_stats gs;
		CU_ASSERT_EQUAL(rr_mark_read_suspect(f.s, FX_RUN, "step-2", &mark), 0);
		CU_ASSERT_EQUAL(mark.for_committed_ms, m2->committed_unix_ms);
		CU_ASSERT_PTR_NOT_NULL(strstr(mark.why, "damaged"));
		CU_ASSERT_EQUAL(rr_gc_run(f.s, FX_RUN, 1, 0, &gs), 0);
		CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
		CU_ASSERT_PTR_NOT_NULL(rr_catalog_find(c, "step-1"));
		CU_ASSERT(rr_catalog_find(c, "step-1") && rr_catalog_find(c, "step-1")->committed);
		rr_catalog_destroy(c);
	}
	rr_manifest_destroy(m1);
	rr_manifest_destroy(m2);
	fx_done(&f);
}

static void test_restore_newest_skips_incomplete_checkpoint(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m1, *m2;
	struct rr_catalog *c = NULL;
	char name[256] = "";

	fx_init(&f);
	m1 = s_make_and_persist(&f, "step-1", 1, 1000);
	m2 = s_make_and_persist(&f, "step-2", 2, 2000);
	fx_delete_chunk(&f, fx_first_chunk(m2, "optim/state.bin"));
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(rr_restore_newest(f.s, c, 1, 0, f.restore_dir, S_THREADS, name,
					  sizeof(name), &st),
			0);
	CU_ASSERT_STRING_EQUAL(name, "step-1");
	s_assert_names(f.restore_dir, "step-1");
	rr_catalog_destroy(c);
	rr_manifest_destroy(m1);
	rr_manifest_destroy(m2);
	fx_done(&f);
}

static void test_restore_newest_with_every_checkpoint_damaged_fails(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m1, *m2;
	struct rr_catalog *c = NULL;
	char name[256] = "untouched";

	fx_init(&f);
	m1 = s_make_and_persist(&f, "step-1", 1, 1000);
	m2 = s_make_and_persist(&f, "step-2", 2, 2000);
	fx_corrupt_chunk(&f, fx_first_chunk(m1, "model/weights.bin"));
	fx_corrupt_chunk(&f, fx_first_chunk(m2, "model/weights.bin"));
	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(f.restore_dir), 0);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(rr_restore_newest(f.s, c, 1, 0, f.restore_dir, S_THREADS, name,
					  sizeof(name), &st),
			RR_ECORRUPT);
	CU_ASSERT_STRING_EQUAL(name, "untouched");
	s_assert_names(f.restore_dir, "");
	rr_catalog_destroy(c);
	rr_manifest_destroy(m1);
	rr_manifest_destroy(m2);
	fx_done(&f);
}

static void test_restore_newest_of_empty_run_is_enoent(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_catalog *c = NULL;
	char name[256] = "";

	fx_init(&f);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(rr_restore_newest(f.s, c, 1, 0, f.restore_dir, S_THREADS, name,
					  sizeof(name), &st),
			RR_ENOENT);
	CU_ASSERT_STRING_EQUAL(name, "");
	rr_catalog_destroy(c);
	fx_done(&f);
}

/* A store in front of the fixture's file store that cancels itself at its Nth get, the way
 * the agent's signal thread cancels a restore in flight. */
struct s_cancel_store {
	struct rr_store base;
	struct rr_store *inner;
	int gets, cancel_at;
};

static int s_cs_put(struct rr_store *s, const char *key, const void *data, size_t len,
		    const struct rr_put_opts *opts, char *etag_out)
{
	struct s_cancel_store *c = (struct s_cancel_store *)s;
	return c->inner->vt->put(c->inner, key, data, len, opts, etag_out);
}

static int s_cs_get(struct rr_store *s, const char *key, struct rr_buf *out, char *etag_out)
{
	struct s_cancel_store *c = (struct s_cancel_store *)s;
	int rc = c->inner->vt->get(c->inner, key, out, etag_out);
	if (__atomic_add_fetch(&c->gets, 1, __ATOMIC_SEQ_CST) == c->cancel_at)
		rr_store_cancel(s);
	return rc;
}

static int s_cs_head(struct rr_store *s, const char *key, uint64_t *size_out)
{
	struct s_cancel_store *c = (struct s_cancel_store *)s;
	return c->inner->vt->head(c->inner, key, size_out);
}

static int s_cs_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb, void *ud)
{
	struct s_cancel_store *c = (struct s_cancel_store *)s;
	return c->inner->vt->list(c->inner, prefix, cb, ud);
}

static int s_cs_del(struct rr_store *s, const char *key)
{
	struct s_cancel_store *c = (struct s_cancel_store *)s;
	return c->inner->vt->del(c->inner, key);
}

static void s_cs_destroy(struct rr_store *s)
{
	(void)s;
}

static const struct rr_store_vtable s_cancel_vt = {
	.scheme = "test", .put = s_cs_put, .get = s_cs_get, .head = s_cs_head,
	.list = s_cs_list, .del = s_cs_del, .destroy = s_cs_destroy,
};

static void test_restore_cancelled_midway_is_ecanceled_and_leaves_nothing(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct s_cancel_store cs = { .base = { .vt = &s_cancel_vt }, .cancel_at = 2 };
	struct rr_manifest *m;
	size_t chunks = 0;
	char why[512];

	fx_init(&f);
	cs.inner = f.s;
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	for (size_t i = 0; i < m->nfiles; i++)
		for (size_t g = 0; g < m->files[i].nsegs; g++)
			chunks += m->files[i].segs[g].nchunks;
	CU_ASSERT_FATAL(chunks > 4);
	fx_write_str(f.restore_dir, "other.txt", "was here before\n", 0644);
	/* One worker, so the count of chunks fetched after the cancel is exact. */
	CU_ASSERT_EQUAL(rr_restore_checkpoint(&cs.base, FX_RUN, m, f.restore_dir, 1, &st, why,
					      sizeof(why)),
			RR_ECANCELED);
	CU_ASSERT_EQUAL(cs.gets, 2);
	s_assert_names(f.restore_dir, "other.txt");
	rr_manifest_destroy(m);
	fx_done(&f);
}

/* Writes a safetensors file holding one F32 tensor "w" of n values that FP16 rounds. */
static void s_write_f32_tensor(const char *dir, const char *rel, size_t n)
{
	char hdr[256];
	int len = snprintf(hdr + 8, sizeof(hdr) - 8,
			   "{\"w\":{\"dtype\":\"F32\",\"shape\":[%zu],\"data_offsets\":[0,%zu]}}",
			   n, 4 * n);
	size_t hlen = (size_t)len;
	unsigned char *buf;

	while (hlen % 8)
		hdr[8 + hlen++] = ' ';
	for (int i = 0; i < 8; i++)
		hdr[i] = (char)((uint64_t)hlen >> (8 * i));
	buf = malloc(8 + hlen + 4 * n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	memcpy(buf, hdr, 8 + hlen);
	for (size_t i = 0; i < n; i++) {
		float v = 0.001f * (float)i + 0.123456789f;
		memcpy(buf + 8 + hlen + 4 * i, &v, 4);
	}
	fx_write(dir, rel, buf, 8 + hlen + 4 * n, 0644);
	free(buf);
}

/* A checkpoint restored from lossy (FP16) chunks holds rounded values no manifest hash
 * describes. The restore remembers what it wrote, so a second start on the same directory
 * finds it identical: nothing downloaded, nothing set aside. */
static void test_restore_of_lossy_checkpoint_again_copies_nothing(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_persist_stats ps;
	struct rr_persist_opts o = fx_opts();
	struct rr_manifest *m = NULL;
	char why[512], names[256], *d;

	fx_init(&f);
	d = fx_ckpt(&f, "step-1");
	s_write_f32_tensor(d, "model.safetensors", 300000);
	fx_write_str(d, "meta.json", "{\"step\": 1}\n", 0644);
	free(d);
	o.precision = RR_PRECISION_FP16;
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(f.s, f.ckpt_dir, "step-1", 1000, &o, &m, &ps),
			      0);
	CU_ASSERT_EQUAL_FATAL(ps.tensors[RR_ENC_FP16], 1);

	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st,
						    why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(st.already_present, 0);
	CU_ASSERT(st.downloaded_bytes > 0);
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st,
						    why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(st.already_present, 1);
	CU_ASSERT_EQUAL(st.downloaded_bytes, 0);
	CU_ASSERT_EQUAL(fx_dir_names(f.restore_dir, names, sizeof(names)), 2);
	CU_ASSERT_STRING_EQUAL(names, ".resume-run-restored,step-1");

	/* The rounded bytes changed locally: restored again, and still no copy left aside. */
	d = fx_join(f.restore_dir, "step-1");
	{
		char *p = fx_join(d, "model.safetensors");
		int fd = open(p, O_WRONLY | O_CLOEXEC);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_EQUAL(pwrite(fd, "\xff\xff\xff\xff", 4, 200), 4);
		close(fd);
		free(p);
	}
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st,
						    why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(st.already_present, 0);
	CU_ASSERT_EQUAL(st.kept_files, 1); /* meta.json */
	CU_ASSERT_EQUAL(fx_dir_names(f.restore_dir, names, sizeof(names)), 2);
	CU_ASSERT_STRING_EQUAL(names, ".resume-run-restored,step-1");
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st,
						    why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(st.already_present, 1);
	free(d);
	rr_manifest_destroy(m);
	fx_done(&f);
}

/* Restores m into the fixture's restore directory twice: the first downloads, the second
 * finds the same bytes there (the restore record vouching for what no manifest hash
 * describes) and copies nothing. */
static void s_restore_twice_second_copies_nothing(struct fx *f, const struct rr_manifest *m)
{
	struct rr_restore_stats st;
	char why[512];

	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f->s, FX_RUN, m, f->restore_dir, S_THREADS, &st,
						    why, sizeof(why)), 0);
	CU_ASSERT(st.downloaded_bytes > 0);
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f->s, FX_RUN, m, f->restore_dir, S_THREADS, &st,
						    why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(st.already_present, 1);
	CU_ASSERT_EQUAL(st.downloaded_bytes, 0);
}

/* The same for a torch.save zip whose F32 records were stored lossy: the restore rewrote the
 * CRC fields of those records in the zip's headers (plain chunks), and remembers those
 * chunks too, so a second start copies nothing; it downloaded the whole file every time. */
static void test_restore_of_lossy_torch_file_again_copies_nothing(void)
{
	struct fx f;
	struct rr_persist_stats ps;
	struct rr_persist_opts o = fx_opts();
	struct rr_manifest *m = NULL;
	unsigned char *pt;
	size_t len = 0;
	char *d;

	pt = tf_load("fuzz_torch_zip", "adam_step.pt", &len); /* real torch: two F32 moments */
	CU_ASSERT_PTR_NOT_NULL_FATAL(pt);
	fx_init(&f);
	d = fx_ckpt(&f, "step-1");
	fx_write(d, "optimizer.pt", pt, len, 0644);
	free(d);
	free(pt);
	o.precision = RR_PRECISION_FP16;
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(f.s, f.ckpt_dir, "step-1", 1000, &o, &m, &ps),
			      0);
	CU_ASSERT_FATAL(ps.tensors[RR_ENC_FP16] > 0);

	s_restore_twice_second_copies_nothing(&f, m);
	rr_manifest_destroy(m);
	fx_done(&f);
}

static void test_restore_newest_cancelled_does_not_fall_back(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct s_cancel_store cs = { .base = { .vt = &s_cancel_vt }, .cancel_at = 1 };
	struct rr_manifest *m1, *m2;
	struct rr_catalog *c = NULL;
	char name[256] = "";

	fx_init(&f);
	cs.inner = f.s;
	m1 = s_make_and_persist(&f, "step-1", 1, 1000);
	m2 = s_make_and_persist(&f, "step-2", 2, 2000);
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(rr_restore_newest(&cs.base, c, 1, 0, f.restore_dir, 1, name,
					  sizeof(name), &st),
			RR_ECANCELED);
	CU_ASSERT_STRING_EQUAL(name, "");
	CU_ASSERT_EQUAL(cs.gets, 1);
	s_assert_names(f.restore_dir, "");
	rr_catalog_destroy(c);
	rr_manifest_destroy(m1);
	rr_manifest_destroy(m2);
	fx_done(&f);
}


/* Packs: a checkpoint of many small files persisted with packs restores byte-identical,
 * and each stored object (pack) is fetched once, however many chunks it holds. */
static void test_restore_fetches_each_pack_once(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_persist_stats ps;
	struct rr_persist_opts o = fx_opts();
	struct s_cancel_store cs = { .base = { .vt = &s_cancel_vt }, .cancel_at = -1 };
	struct rr_manifest *m = NULL;
	char why[512], *d, *restored;
	char objects[64][RR_SHA256_HEX_LEN + 1];
	size_t nobj = 0, chunks = 0, packed = 0;

	fx_init(&f);
	cs.inner = f.s;
	o.no_packs = 0;
	d = fx_ckpt(&f, "step-1");
	for (int i = 0; i < 40; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "shard/part-%02d.bin", i);
		fx_write_random(d, rel, 1000 + 997 * (size_t)i, (uint64_t)i + 7, 0644);
	}
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(f.s, f.ckpt_dir, "step-1", 1, &o, &m, &ps), 0);
	for (size_t i = 0; i < m->nfiles; i++)
		for (size_t g = 0; g < m->files[i].nsegs; g++)
			for (size_t c = 0; c < m->files[i].segs[g].nchunks; c++) {
				const struct rr_chunk_ref *r = &m->files[i].segs[g].chunks[c];
				size_t k = 0;
				chunks++;
				packed += (size_t)r->packed;
				while (k < nobj && strcmp(objects[k], r->sha256) != 0)
					k++;
				if (k == nobj && nobj < 64)
					memcpy(objects[nobj++], r->sha256, sizeof(objects[0]));
			}
	CU_ASSERT_EQUAL(chunks, 40);
	CU_ASSERT_EQUAL(packed, 40);
	CU_ASSERT(nobj < chunks);
	CU_ASSERT_EQUAL(fx_count_chunks(&f), nobj);
	CU_ASSERT_EQUAL(rr_restore_checkpoint(&cs.base, FX_RUN, m, f.restore_dir, 2, &st, why,
					      sizeof(why)),
			0);
	CU_ASSERT_EQUAL(cs.gets, (int)nobj);
	restored = fx_join(f.restore_dir, "step-1");
	CU_ASSERT_EQUAL(fx_tree_diff(d, restored, why, sizeof(why)), 0);
	free(restored);
	free(d);
	rr_manifest_destroy(m);
	fx_done(&f);
}


/* The same with packs: several lossy tensors share one stored object, and the record
 * tells their rounded bytes apart (each by its pack and offset), so the second restore
 * still finds the directory identical. */
static void test_restore_of_lossy_packed_checkpoint_again_copies_nothing(void)
{
	struct fx f;
	struct rr_persist_stats ps;
	struct rr_persist_opts o = fx_opts();
	struct rr_manifest *m = NULL;
	char *d;

	fx_init(&f);
	d = fx_ckpt(&f, "step-1");
	s_write_f32_tensor(d, "a.safetensors", 3000);
	s_write_f32_tensor(d, "b.safetensors", 4000);
	s_write_f32_tensor(d, "c.safetensors", 5000);
	free(d);
	o.precision = RR_PRECISION_FP16;
	o.no_packs = 0;
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(f.s, f.ckpt_dir, "step-1", 1000, &o, &m, &ps),
			      0);
	CU_ASSERT_EQUAL_FATAL(ps.tensors[RR_ENC_FP16], 3);
	CU_ASSERT_EQUAL_FATAL(fx_count_chunks(&f), 1); /* headers and tensors: one pack */
	s_restore_twice_second_copies_nothing(&f, m);
	rr_manifest_destroy(m);
	fx_done(&f);
}

/* A one-file checkpoint (Lightning's .ckpt) over a local file with other contents: that file
 * is moved aside first, and goes back under its name when the store's copy cannot be put
 * there, instead of staying under ".NAME.local-<ms>" where the trainer never looks. */
static void test_restore_of_one_file_puts_the_local_file_back_when_its_last_rename_fails(void)
{
	static const char mine[] = "the user's own\n";
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m = NULL;
	unsigned char *got, *want;
	size_t got_len = 0, want_len = 0;
	char why[512], *local, *src;

	fx_init(&f);
	fx_write_random(f.ckpt_dir, "epoch=0-step=1.ckpt", 100 * 1024, 7, 0644);
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "epoch=0-step=1.ckpt", 1000, NULL, &m, NULL), 0);
	CU_ASSERT_FATAL(m->single_file);
	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(f.restore_dir), 0);
	fx_write_str(f.restore_dir, "epoch=0-step=1.ckpt", mine, 0600);
	local = fx_join(f.restore_dir, "epoch=0-step=1.ckpt");
	src = fx_join(f.ckpt_dir, "epoch=0-step=1.ckpt");

	s_fail_staged_rename = 1;
	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st, why,
					      sizeof(why)), RR_EIO);
	s_fail_staged_rename = 0;
	s_assert_names(f.restore_dir, "epoch=0-step=1.ckpt");
	got = fx_slurp(local, &got_len);
	CU_ASSERT(got && got_len == strlen(mine) && memcmp(got, mine, got_len) == 0);
	free(got);

	/* The rename working again, the store's copy replaces it. */
	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st, why,
					      sizeof(why)), 0);
	s_assert_names(f.restore_dir, "epoch=0-step=1.ckpt");
	got = fx_slurp(local, &got_len);
	want = fx_slurp(src, &want_len);
	CU_ASSERT(got && want && got_len == want_len && memcmp(got, want, got_len) == 0);
	free(got);
	free(want);
	free(local);
	free(src);
	rr_manifest_destroy(m);
	fx_done(&f);
}

/* The directories inside the staging directory are synced before it takes the final name:
 * a file's name lives in its own directory, and a crash after the rename must not lose it
 * (fsync(2)); a file linked from the local copy is a new name there too. */
static void test_restore_syncs_every_staged_directory_before_the_swap(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	char why[512];

	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	s_nsynced = 0;
	CU_ASSERT_EQUAL_FATAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st,
						    why, sizeof(why)),
			      0);
	CU_ASSERT(s_was_synced(f.restore_dir, ".step-1.restoring"));
	CU_ASSERT(s_was_synced(f.restore_dir, ".step-1.restoring/bin"));
	CU_ASSERT(s_was_synced(f.restore_dir, ".step-1.restoring/model/sub"));
	CU_ASSERT(s_was_synced(f.restore_dir, ".step-1.restoring/optim"));
	rr_manifest_destroy(m);
	fx_done(&f);
}

/* The sync of the parent after the swap fails: the store's copy may not be under the name
 * after a crash, so the local copy set aside (with a file the store's copy lacks) is kept,
 * not deleted. */
static void test_restore_keeps_the_old_copy_when_the_sync_after_the_swap_fails(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	char why[512], *local, names[1024], *aside;

	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	local = fx_join(f.restore_dir, "step-1");
	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(local), 0);
	fx_write_str(local, "notes.txt", "mine\n", 0644);

	s_fail_sync_of = f.restore_dir;
	s_fail_sync_when = ".step-1.local-";
	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st, why,
					      sizeof(why)), RR_EIO);
	s_fail_sync_of = NULL;
	CU_ASSERT_EQUAL(fx_dir_names(f.restore_dir, names, sizeof(names)), 2);
	aside = strchr(names, ',');
	CU_ASSERT_FATAL(aside != NULL && strncmp(names, ".step-1.local-", 14) == 0);
	*aside = '\0';
	CU_ASSERT_STRING_EQUAL(aside + 1, "step-1");
	aside = fx_join(f.restore_dir, names);
	CU_ASSERT(fx_exists_in(aside, "notes.txt"));
	free(aside);
	free(local);
	rr_manifest_destroy(m);
	fx_done(&f);
}

/* A copy a killed restore left set aside (between its two renames) is kept, and said at the
 * next restore into that directory instead of piling up unseen. */
static void test_restore_says_a_copy_an_interrupted_restore_left_aside(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	char why[512], *aside, path[] = "/tmp/rr_restore_err_XXXXXX", said[4096];
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	ssize_t n;

	CU_ASSERT_FATAL(fd >= 0 && saved >= 0);
	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	aside = fx_join(f.restore_dir, ".step-1.local-1795781397602");
	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(aside), 0);
	fx_write_str(aside, "notes.txt", "mine\n", 0644);
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	rr_log_init(0, RR_LOG_WARN); /* the fixture keeps errors only */
	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, S_THREADS, &st, why,
					      sizeof(why)), 0);
	rr_log_init(0, RR_LOG_ERROR);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, said, sizeof(said) - 1, 0);
	said[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	CU_ASSERT_PTR_NOT_NULL(strstr(said, ".step-1.local-1795781397602 is a copy of"));
	CU_ASSERT(fx_exists_in(aside, "notes.txt")); /* kept */
	free(aside);
	rr_manifest_destroy(m);
	fx_done(&f);
}

/* Set while the parent's restore runs: its first write of a chunk lets the paused child
 * finish and checks what the child then left under the final name. */
static struct {
	int armed, go, child;
	const char *final_file;
	unsigned char *want;
	size_t want_len;
	int child_status, final_ok;
} s_race;

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{

	if (__atomic_exchange_n(&s_race.armed, 0, __ATOMIC_SEQ_CST)) {
		size_t got_len = 0;
		unsigned char *got;
		if (write(s_race.go, "g", 1) != 1 || waitpid(s_race.child, &s_race.child_status, 0) < 0)
			s_race.child_status = -1;
		s_race.child = 0;
		got = fx_slurp(s_race.final_file, &got_len);
		s_race.final_ok = got && got_len == s_race.want_len &&
				  memcmp(got, s_race.want, got_len) == 0;
		free(got);
	}
	return s_real_pwrite(fd, buf, len, off);
}

/* Two restores of one checkpoint into one directory at once (a second agent, a manual
 * `resume-run restore` beside the agent's): the second waits for the first, and finds the
 * checkpoint in place; it never takes the first's staging directory from under it, which
 * put the second's files, created but not yet written, under the final name. */
static void test_two_restores_into_one_directory_at_once_leave_the_checkpoint_whole(void)
{
	struct fx f;
	struct rr_restore_stats st;
	struct rr_manifest *m;
	char why[512], *src, *dst;
	int to_child[2], from_child[2];
	char c;

	fx_init(&f);
	m = s_make_and_persist(&f, "step-1", 1, 1000);
	src = fx_ckpt(&f, "step-1");
	dst = fx_join(f.restore_dir, "step-1");
	CU_ASSERT_EQUAL_FATAL(pipe(to_child), 0);
	CU_ASSERT_EQUAL_FATAL(pipe(from_child), 0);
	s_race.child = fork();
	CU_ASSERT_FATAL(s_race.child >= 0);
	if (s_race.child == 0) {
		s_pause_at_swap = 1;
		s_pause_in = to_child[0];
		s_pause_out = from_child[1];
		_exit(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, 1, &st, why,
					    sizeof(why)) == 0 ? 0 : 1);
	}
	/* The child's staging directory is complete; it waits at the rename. */
	CU_ASSERT_EQUAL_FATAL(read(from_child[0], &c, 1), 1);
	s_race.go = to_child[1];
	s_race.final_file = fx_join(dst, "model/weights.bin");
	{
		char *w = fx_join(src, "model/weights.bin");
		s_race.want = fx_slurp(w, &s_race.want_len);
		free(w);
	}
	s_race.final_ok = 1;
	s_race.armed = 1;
	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, m, f.restore_dir, 1, &st, why,
					      sizeof(why)), 0);
	s_race.armed = 0;
	if (s_race.child > 0 && waitpid(s_race.child, &s_race.child_status, 0) < 0)
		s_race.child_status = -1;
	CU_ASSERT(WIFEXITED(s_race.child_status) && WEXITSTATUS(s_race.child_status) == 0);
	CU_ASSERT(s_race.final_ok); /* what the first left under the name was whole */
	FX_ASSERT_SAME_TREE(src, dst);
	s_assert_names(f.restore_dir, "step-1");
	close(to_child[0]);
	close(to_child[1]);
	close(from_child[0]);
	close(from_child[1]);
	free((void *)s_race.final_file);
	free(s_race.want);
	free(src);
	free(dst);
	rr_manifest_destroy(m);
	fx_done(&f);
}

static CU_TestInfo s_tests[] = {
	{ "restore_says_a_copy_an_interrupted_restore_left_aside",
	  test_restore_says_a_copy_an_interrupted_restore_left_aside },
	{ "restore_syncs_every_staged_directory_before_the_swap",
	  test_restore_syncs_every_staged_directory_before_the_swap },
	{ "restore_keeps_the_old_copy_when_the_sync_after_the_swap_fails",
	  test_restore_keeps_the_old_copy_when_the_sync_after_the_swap_fails },
	{ "two_restores_into_one_directory_at_once_leave_the_checkpoint_whole",
	  test_two_restores_into_one_directory_at_once_leave_the_checkpoint_whole },
	{ "restore_of_one_file_puts_the_local_file_back_when_its_last_rename_fails",
	  test_restore_of_one_file_puts_the_local_file_back_when_its_last_rename_fails },
	{ "test_restore_of_lossy_packed_checkpoint_again_copies_nothing",
	  test_restore_of_lossy_packed_checkpoint_again_copies_nothing },
	{ "test_restore_fetches_each_pack_once", test_restore_fetches_each_pack_once },
	{ "restore_of_lossy_checkpoint_again_copies_nothing",
	  test_restore_of_lossy_checkpoint_again_copies_nothing },
	{ "restore_of_lossy_torch_file_again_copies_nothing",
	  test_restore_of_lossy_torch_file_again_copies_nothing },
	{ "restore_round_trip_is_byte_identical_with_modes",
	  test_restore_round_trip_is_byte_identical_with_modes },
	{ "restore_drops_setuid_setgid_and_sticky_bits",
	  test_restore_drops_setuid_setgid_and_sticky_bits },
	{ "restore_into_identical_dir_rewrites_nothing",
	  test_restore_into_identical_dir_rewrites_nothing },
	{ "restore_over_changed_dir_keeps_identical_files_and_removes_old_copy",
	  test_restore_over_changed_dir_keeps_identical_files_and_removes_old_copy },
	{ "restore_moves_old_dir_aside_within_a_long_parent_path",
	  test_restore_moves_old_dir_aside_within_a_long_parent_path },
	{ "restore_over_symlink_to_identical_dir_writes_real_files",
	  test_restore_over_symlink_to_identical_dir_writes_real_files },
	{ "restore_does_not_link_files_reached_through_a_local_symlink",
	  test_restore_does_not_link_files_reached_through_a_local_symlink },
	{ "restore_corrupt_chunk_is_ecorrupt_and_leaves_nothing",
	  test_restore_corrupt_chunk_is_ecorrupt_and_leaves_nothing },
	{ "restore_corrupt_chunk_leaves_existing_local_dir_untouched",
	  test_restore_corrupt_chunk_leaves_existing_local_dir_untouched },
	{ "restore_missing_chunk_is_ecorrupt", test_restore_missing_chunk_is_ecorrupt },
	{ "verify_accepts_intact_and_rejects_corrupt_checkpoint",
	  test_verify_accepts_intact_and_rejects_corrupt_checkpoint },
	{ "restore_newest_falls_back_to_older_when_newest_is_damaged",
	  test_restore_newest_falls_back_to_older_when_newest_is_damaged },
	{ "restore_newest_skips_incomplete_checkpoint",
	  test_restore_newest_skips_incomplete_checkpoint },
	{ "restore_newest_with_every_checkpoint_damaged_fails",
	  test_restore_newest_with_every_checkpoint_damaged_fails },
	{ "restore_newest_of_empty_run_is_enoent", test_restore_newest_of_empty_run_is_enoent },
	{ "restore_cancelled_midway_is_ecanceled_and_leaves_nothing",
	  test_restore_cancelled_midway_is_ecanceled_and_leaves_nothing },
	{ "restore_newest_cancelled_does_not_fall_back",
	  test_restore_newest_cancelled_does_not_fall_back },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("restore", s_tests)
