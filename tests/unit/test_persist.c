/* CUnit suite "persist": rr_persist_checkpoint against a real file store in a temp dir.
 * File contents are pseudo-random so stored sizes track original sizes and byte bounds
 * on new_bytes are meaningful. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rr/catalog.h"
#include "rr/clock.h"
#include "rr/error.h"
#include "rr/persist.h"
#include "rr/restore.h"

#include "ckpt_fixture.h"
#include "cunit_main.h"
#include "torch_fixture.h"

#define S_BIG (20u * FX_MIB) /* three 8 MiB segments: 8 + 8 + 4 */

/* The mixed checkpoint: nested files, an empty file, a 20 MiB file, modes 0640 and 0755. */
static void s_make_mixed(struct fx *f, const char *name)
{
	char *d = fx_ckpt(f, name);
	fx_write_random(d, "model/weights.bin", S_BIG, 1, 0644);
	fx_write_str(d, "model/sub/deep/config.json", "{\"layers\": 12}\n", 0640);
	fx_write(d, "empty.txt", "", 0, 0644);
	fx_write_str(d, "run.sh", "#!/bin/sh\necho hi\n", 0755);
	free(d);
}

static uint64_t s_mixed_bytes(void)
{
	return S_BIG + strlen("{\"layers\": 12}\n") + strlen("#!/bin/sh\necho hi\n");
}

static void test_persist_writes_manifest_every_chunk_and_stats(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL, *parsed = NULL;
	char key[RR_KEY_MAX], why[256];
	uint64_t stored = 0;
	char *json;

	fx_init(&f);
	s_make_mixed(&f, "step-1");
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-1", 1000, NULL, &m, &st), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);

	/* The manifest is under run/checkpoints/NAME/manifest.json and parses. */
	CU_ASSERT_EQUAL(rr_key_manifest(key, FX_RUN, "step-1"), 0);
	CU_ASSERT_STRING_EQUAL(key, "run/checkpoints/step-1/manifest.json");
	CU_ASSERT_TRUE(fx_exists_in(f.store_dir, key));
	json = fx_get_str(&f, key);
	CU_ASSERT_PTR_NOT_NULL_FATAL(json);
	CU_ASSERT_EQUAL_FATAL(rr_manifest_parse(json, strlen(json), &parsed, why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(parsed->checkpoint, "step-1");
	CU_ASSERT_STRING_EQUAL(parsed->run_id, FX_RUN);
	CU_ASSERT_EQUAL(parsed->committed_unix_ms, 1000);
	CU_ASSERT_EQUAL(parsed->nfiles, 4);

	/* Files, sizes and modes as on disk; the big file in 8 MiB segments. */
	CU_ASSERT_EQUAL(fx_file(parsed, "model/weights.bin")->size, S_BIG);
	CU_ASSERT_EQUAL(fx_file(parsed, "model/weights.bin")->nsegs, 3);
	CU_ASSERT_EQUAL(fx_file(parsed, "model/weights.bin")->segs[2].length, 4 * FX_MIB);
	CU_ASSERT_EQUAL(fx_file(parsed, "model/sub/deep/config.json")->mode, 0640);
	CU_ASSERT_EQUAL(fx_file(parsed, "run.sh")->mode, 0755);
	CU_ASSERT_EQUAL(fx_file(parsed, "empty.txt")->size, 0);
	CU_ASSERT_EQUAL(fx_file(parsed, "empty.txt")->nsegs, 0);

	/* Every chunk the manifest names is in the store with its stored size. */
	for (size_t i = 0; i < parsed->nfiles; i++)
		for (size_t g = 0; g < parsed->files[i].nsegs; g++)
			for (size_t k = 0; k < parsed->files[i].segs[g].nchunks; k++) {
				const struct rr_chunk_ref *r = &parsed->files[i].segs[g].chunks[k];
				uint64_t sz = 0;
				CU_ASSERT_EQUAL(rr_key_chunk(key, FX_RUN, r->sha256), 0);
				CU_ASSERT_EQUAL(rr_store_head(f.s, key, &sz), 0);
				CU_ASSERT_EQUAL(sz, r->stored_size);
				stored += r->stored_size;
			}
	CU_ASSERT_EQUAL(fx_count_chunks(&f), 5);

	CU_ASSERT_EQUAL(st.files, 4);
	CU_ASSERT_EQUAL(st.bytes, s_mixed_bytes());
	CU_ASSERT_EQUAL(st.segments, 5);
	CU_ASSERT_EQUAL(st.reused_segments, 0);
	CU_ASSERT_EQUAL(st.stored_bytes, stored);
	/* Everything was new: every chunk plus the manifest itself. */
	CU_ASSERT_EQUAL(st.new_bytes, stored + strlen(json));
	/* The returned manifest is the one stored. */
	CU_ASSERT_EQUAL(m->nfiles, parsed->nfiles);

	free(json);
	rr_manifest_destroy(parsed);
	rr_manifest_destroy(m);
	fx_done(&f);
}

static void test_persist_same_name_again_is_eexist_or_eprecond_and_changes_nothing(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	char key[RR_KEY_MAX], *before, *after;
	size_t nchunks;
	ino_t ino;

	fx_init(&f);
	s_make_mixed(&f, "step-1");
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-1", 1000, NULL, NULL, &st), 0);
	CU_ASSERT_EQUAL(rr_key_manifest(key, FX_RUN, "step-1"), 0);
	before = fx_get_str(&f, key);
	ino = fx_ino(f.store_dir, key);
	nchunks = fx_count_chunks(&f);

	/* The same content again: the store has this very checkpoint. */
	CU_ASSERT_EQUAL(fx_persist(&f, "step-1", 1000, NULL, &m, &st), RR_EEXIST);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_EQUAL(st.new_bytes, 0);

	/* Other contents now (another machine's step-1 got there first): the name is taken,
	 * and that is not success, since the store does not hold these bytes. */
	{
		char *d = fx_ckpt(&f, "step-1");
		fx_write_str(d, "run.sh", "#!/bin/sh\necho changed\n", 0755);
		free(d);
	}
	CU_ASSERT_EQUAL(fx_persist(&f, "step-1", 2000, NULL, &m, &st), RR_EPRECOND);
	CU_ASSERT_PTR_NULL(m);
	after = fx_get_str(&f, key);
	CU_ASSERT_PTR_NOT_NULL_FATAL(before);
	CU_ASSERT_PTR_NOT_NULL_FATAL(after);
	CU_ASSERT_STRING_EQUAL(before, after);
	CU_ASSERT_EQUAL(fx_ino(f.store_dir, key), ino);
	CU_ASSERT_EQUAL(fx_count_chunks(&f), nchunks);
	CU_ASSERT_EQUAL(st.new_bytes, 0);
	CU_ASSERT_FALSE(fx_exists_in(f.ckpt_dir, RR_STAGING_DIR));

	free(before);
	free(after);
	fx_done(&f);
}

/* The stored manifest of name, parsed (the caller destroys it). */
static struct rr_manifest *s_stored(struct fx *f, const char *name)
{
	struct rr_manifest *m = NULL;
	char key[RR_KEY_MAX], *json;

	if (rr_key_manifest(key, FX_RUN, name) != 0 || !(json = fx_get_str(f, key)))
		return NULL;
	if (rr_manifest_parse(json, strlen(json), &m, NULL, 0) != 0)
		m = NULL;
	free(json);
	return m;
}

static int64_t s_stored_committed(struct fx *f, const char *name)
{
	struct rr_manifest *m = s_stored(f, name);
	int64_t ms = m ? m->committed_unix_ms : -1;

	rr_manifest_destroy(m);
	return ms;
}

/* A name without a step number committed again later (Lightning's last.ckpt, a ckpt.pt that
 * os.replace() puts in place every N steps): its newest commit is the checkpoint, and a new
 * machine must resume from it, not from the first. The stored copy is replaced; an older
 * commit never replaces a newer one; the same bytes again are the store's already. */
static void test_persist_stepless_name_committed_again_replaces_its_store_copy(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_catalog *c = NULL;
	struct rr_restore_stats rs;
	char name[64], *d, *back;
	size_t len = 0;

	fx_init(&f);
	s_make_mixed(&f, "last.ckpt");
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "last.ckpt", 1000, NULL, NULL, &st), 0);
	d = fx_ckpt(&f, "last.ckpt");
	fx_write_str(d, "run.sh", "#!/bin/sh\necho second\n", 0755);
	CU_ASSERT_EQUAL(fx_persist(&f, "last.ckpt", 2000, NULL, NULL, &st), 0);
	CU_ASSERT_EQUAL(s_stored_committed(&f, "last.ckpt"), 2000);
	/* Only what changed was written (the unchanged segments taken from the first). */
	CU_ASSERT(st.new_bytes < 64 * 1024);

	/* An older commit of it (a machine behind) does not go over the newer one. */
	fx_write_str(d, "run.sh", "#!/bin/sh\necho older\n", 0755);
	CU_ASSERT_EQUAL(fx_persist(&f, "last.ckpt", 1500, NULL, NULL, &st), RR_EPRECOND);
	CU_ASSERT_EQUAL(s_stored_committed(&f, "last.ckpt"), 2000);

	/* Saved again unchanged: the store has it. */
	fx_write_str(d, "run.sh", "#!/bin/sh\necho second\n", 0755);
	CU_ASSERT_EQUAL(fx_persist(&f, "last.ckpt", 3000, NULL, NULL, &st), RR_EEXIST);
	CU_ASSERT_EQUAL(s_stored_committed(&f, "last.ckpt"), 2000);

	/* A new machine restores the second commit. */
	CU_ASSERT_EQUAL_FATAL(rr_catalog_list(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL_FATAL(rr_restore_newest(f.s, c, 1, 0, f.restore_dir, 2, name, sizeof(name),
						&rs), 0);
	CU_ASSERT_STRING_EQUAL(name, "last.ckpt");
	{
		char *path = fx_join(f.restore_dir, "last.ckpt/run.sh");
		back = (char *)fx_slurp(path, &len);
		free(path);
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	CU_ASSERT_EQUAL(len, strlen("#!/bin/sh\necho second\n"));
	CU_ASSERT(memcmp(back, "#!/bin/sh\necho second\n", len) == 0);
	free(back);
	rr_catalog_destroy(c);

	/* A one-file checkpoint replaced in place of itself (torch.save + os.replace). */
	fx_write_random(f.ckpt_dir, "ckpt.pt", 3 * FX_MIB, 7, 0644);
	CU_ASSERT_EQUAL(fx_persist(&f, "ckpt.pt", 1000, NULL, NULL, &st), 0);
	fx_write_random(f.ckpt_dir, "ckpt.pt", 3 * FX_MIB, 8, 0644);
	CU_ASSERT_EQUAL(fx_persist(&f, "ckpt.pt", 2000, NULL, NULL, &st), 0);
	CU_ASSERT_EQUAL(s_stored_committed(&f, "ckpt.pt"), 2000);

	/* A one-file torch.save checkpoint cut short (written in place and rewritten since its
	 * commit, or a save cut short): not stored over the good one, which stays. */
	{
		size_t ptlen = 0;
		unsigned char *pt = tf_load("fuzz_torch_zip", "little.pt", &ptlen);
		CU_ASSERT_PTR_NOT_NULL_FATAL(pt);
		fx_write(f.ckpt_dir, "model.pt", pt, ptlen, 0644);
		CU_ASSERT_EQUAL(fx_persist(&f, "model.pt", 1000, NULL, NULL, &st), 0);
		fx_write(f.ckpt_dir, "model.pt", pt, ptlen / 2, 0644);
		CU_ASSERT_EQUAL(fx_persist(&f, "model.pt", 2000, NULL, NULL, &st), RR_EIO);
		CU_ASSERT_EQUAL(s_stored_committed(&f, "model.pt"), 1000);
		free(pt);
	}

	/* A step-numbered name keeps its first commit (two writers of step-N). */
	s_make_mixed(&f, "step-7");
	CU_ASSERT_EQUAL(fx_persist(&f, "step-7", 1000, NULL, NULL, &st), 0);
	free(d);
	d = fx_ckpt(&f, "step-7");
	fx_write_str(d, "run.sh", "#!/bin/sh\necho other\n", 0755);
	CU_ASSERT_EQUAL(fx_persist(&f, "step-7", 2000, NULL, NULL, &st), RR_EPRECOND);
	CU_ASSERT_EQUAL(s_stored_committed(&f, "step-7"), 1000);
	free(d);
	fx_done(&f);
}

/* Every chunk of m (packs included) in the store: 1, else 0. delete_them: removes them. */
static int s_all_chunks(struct fx *f, const struct rr_manifest *m, int delete_them)
{
	int all = 1;

	for (size_t i = 0; i < m->nfiles; i++)
		for (size_t g = 0; g < m->files[i].nsegs; g++)
			for (size_t c = 0; c < m->files[i].segs[g].nchunks; c++) {
				const char *sha = m->files[i].segs[g].chunks[c].sha256;
				if (delete_them && fx_chunk_exists(f, sha))
					fx_delete_chunk(f, sha);
				all &= fx_chunk_exists(f, sha);
			}
	return all;
}

/* An empty object under a chunk's name is what a server left of an upload cut off (s3rver
 * keeps one when a notice cancels the routine persist's request): no chunk is empty, so it
 * is not taken for the chunk, which a later persist writes again. Before, it was: the new
 * checkpoint named an empty chunk, and restore found it damaged. */
static void test_persist_writes_a_chunk_the_store_holds_empty(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	const char *sha;
	char *path;
	struct stat sb;

	fx_init(&f);
	s_make_mixed(&f, "step-1");
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-1", 1000, NULL, &m, &st), 0);
	sha = fx_first_chunk(m, "run.sh");
	CU_ASSERT_PTR_NOT_NULL_FATAL(sha);
	path = fx_chunk_path(&f, sha);
	CU_ASSERT_FATAL(truncate(path, 0) == 0);
	s_make_mixed(&f, "step-2"); /* the same files */
	CU_ASSERT_EQUAL(fx_persist(&f, "step-2", 2000, NULL, NULL, &st), 0);
	CU_ASSERT_FATAL(stat(path, &sb) == 0);
	CU_ASSERT(sb.st_size > 0);
	/* The same through the start-up listing's chunk index. */
	CU_ASSERT_FATAL(truncate(path, 0) == 0);
	{
		struct rr_catalog *c = NULL;
		struct rr_persist_opts o = fx_opts();
		CU_ASSERT_EQUAL_FATAL(rr_catalog_list(f.s, FX_RUN, &c), 0);
		o.chunks = rr_chunk_index_of_catalog(c, rr_wall_ms());
		s_make_mixed(&f, "step-3");
		CU_ASSERT_EQUAL(rr_persist_checkpoint(f.s, f.ckpt_dir, "step-3", 3000, &o, NULL, &st),
				0);
		rr_chunk_index_destroy(o.chunks);
		rr_catalog_destroy(c);
	}
	CU_ASSERT_FATAL(stat(path, &sb) == 0);
	CU_ASSERT(sb.st_size > 0);
	free(path);
	rr_manifest_destroy(m);
	fx_done(&f);
}

/* A stored manifest whose chunks are gone (another machine's retention deleted them as this
 * checkpoint was persisted, or a hand did) is not a durable checkpoint: persisting the same
 * checkpoint again stores them again before it calls the name taken by the same content. */
static void test_persist_same_name_again_stores_the_chunks_the_store_lost(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;

	fx_init(&f);
	s_make_mixed(&f, "step-1");
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-1", 1000, NULL, &m, &st), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	CU_ASSERT_TRUE(s_all_chunks(&f, m, 0));
	CU_ASSERT_FALSE(s_all_chunks(&f, m, 1));
	CU_ASSERT_EQUAL(fx_count_chunks(&f), 0);

	CU_ASSERT_EQUAL(fx_persist(&f, "step-1", 1000, NULL, NULL, &st), RR_EEXIST);
	CU_ASSERT_TRUE(s_all_chunks(&f, m, 0));
	CU_ASSERT(st.new_bytes > 0);
	/* and once they are there, a third time writes nothing */
	CU_ASSERT_EQUAL(fx_persist(&f, "step-1", 1000, NULL, NULL, &st), RR_EEXIST);
	CU_ASSERT_EQUAL(st.new_bytes, 0);
	rr_manifest_destroy(m);
	fx_done(&f);
}

static void test_persist_with_previous_reuses_unchanged_segments(void)
{
	struct fx f;
	struct rr_persist_stats st1, st2;
	struct rr_manifest *m1 = NULL, *m2 = NULL;
	const size_t small = FX_MIB;
	const struct rr_file_entry *fe;
	char why[256];
	uint64_t changed_stored, bound;

	fx_init(&f);
	{
		char *d1 = fx_ckpt(&f, "step-1"), *d2 = fx_ckpt(&f, "step-2");
		fx_write_random(d1, "big.bin", S_BIG, 1, 0644);
		fx_write_random(d1, "opt.bin", small, 2, 0644);
		fx_write_str(d1, "meta.json", "{\"step\": 1}\n", 0644);
		/* step-2: the same except opt.bin */
		fx_write_random(d2, "big.bin", S_BIG, 1, 0644);
		fx_write_random(d2, "opt.bin", small, 3, 0644);
		fx_write_str(d2, "meta.json", "{\"step\": 1}\n", 0644);
		free(d1);
		free(d2);
	}
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-1", 1000, NULL, &m1, &st1), 0);
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-2", 2000, m1, &m2, &st2), 0);

	CU_ASSERT_EQUAL(st2.segments, 5);
	CU_ASSERT_EQUAL(st2.reused_segments, 4); /* big.bin's three and meta.json */
	fe = fx_file(m2, "opt.bin");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fe);
	changed_stored = fe->segs[0].chunks[0].stored_size;
	/* New bytes: the changed file's chunk plus the manifest, far below the 20 MiB that
	 * did not change. The bound allows 1/16 zstd overhead and 64 KiB of manifest. */
	bound = small + small / 16 + 64 * 1024;
	CU_ASSERT(st2.new_bytes >= changed_stored);
	CU_ASSERT(st2.new_bytes < bound);
	CU_ASSERT(st1.new_bytes > S_BIG);
	/* Reused segments point at step-1's chunks. */
	CU_ASSERT_STRING_EQUAL(fx_file(m2, "big.bin")->segs[1].chunks[0].sha256,
			       fx_file(m1, "big.bin")->segs[1].chunks[0].sha256);
	CU_ASSERT_EQUAL(fx_count_chunks(&f), 6);
	/* And the reusing checkpoint is complete on its own. */
	CU_ASSERT_EQUAL(rr_verify_checkpoint(f.s, FX_RUN, m2, 2, why, sizeof(why)), 0);

	rr_manifest_destroy(m1);
	rr_manifest_destroy(m2);
	fx_done(&f);
}

static void test_persist_identical_files_store_one_chunk(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	struct rr_persist_opts o = fx_opts();
	char *d;

	fx_init(&f);
	d = fx_ckpt(&f, "step-1");
	fx_write_random(d, "a/copy1.bin", FX_MIB, 7, 0644);
	fx_write_random(d, "b/copy2.bin", FX_MIB, 7, 0600);
	free(d);
	o.threads = 1; /* one worker: the second file sees the first's chunk */
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(f.s, f.ckpt_dir, "step-1", 1, &o, &m, &st), 0);
	CU_ASSERT_EQUAL(fx_count_chunks(&f), 1);
	CU_ASSERT_STRING_EQUAL(fx_first_chunk(m, "a/copy1.bin"), fx_first_chunk(m, "b/copy2.bin"));
	CU_ASSERT_EQUAL(st.files, 2);
	CU_ASSERT_EQUAL(st.bytes, 2 * FX_MIB);
	/* The chunk counts twice in the checkpoint but was written once. */
	CU_ASSERT_EQUAL(st.stored_bytes, 2 * fx_file(m, "a/copy1.bin")->segs[0].chunks[0].stored_size);
	CU_ASSERT(st.new_bytes < st.stored_bytes);
	rr_manifest_destroy(m);
	fx_done(&f);
}

static void test_persist_skips_symlinks(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	char *d, *l1, *l2;

	fx_init(&f);
	d = fx_ckpt(&f, "step-1");
	fx_write_str(d, "real.txt", "real\n", 0644);
	l1 = fx_join(d, "link-inside");
	l2 = fx_join(d, "link-outside");
	CU_ASSERT_EQUAL_FATAL(symlink("real.txt", l1), 0);
	CU_ASSERT_EQUAL_FATAL(symlink("/etc/passwd", l2), 0);
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-1", 1, NULL, &m, &st), 0);
	CU_ASSERT_EQUAL(st.files, 1);
	CU_ASSERT_EQUAL(m->nfiles, 1);
	CU_ASSERT_PTR_NOT_NULL(fx_file(m, "real.txt"));
	CU_ASSERT_PTR_NULL(fx_file(m, "link-inside"));
	CU_ASSERT_PTR_NULL(fx_file(m, "link-outside"));
	CU_ASSERT_EQUAL(fx_count_chunks(&f), 1);
	/* The source is untouched, links included. */
	CU_ASSERT_TRUE(fx_exists(l1));
	CU_ASSERT_TRUE(fx_exists(l2));
	rr_manifest_destroy(m);
	free(l1);
	free(l2);
	free(d);
	fx_done(&f);
}

static void test_persist_missing_directory_is_enoent(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	char names[256];

	fx_init(&f);
	CU_ASSERT_EQUAL(fx_persist(&f, "step-404", 1, NULL, &m, &st), RR_ENOENT);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_FALSE(fx_has_manifest(&f, "step-404"));
	CU_ASSERT_EQUAL(fx_count_chunks(&f), 0);
	CU_ASSERT_EQUAL(fx_dir_names(f.ckpt_dir, names, sizeof(names)), 0);
	fx_done(&f);
}

static void test_persist_canceled_before_start_writes_no_manifest(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	struct rr_persist_opts o = fx_opts();
	atomic_int cancel = 1;
	char names[256];

	fx_init(&f);
	s_make_mixed(&f, "step-1");
	o.cancel = &cancel;
	CU_ASSERT_EQUAL(rr_persist_checkpoint(f.s, f.ckpt_dir, "step-1", 1, &o, &m, &st),
			RR_ECANCELED);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_FALSE(fx_has_manifest(&f, "step-1"));
	CU_ASSERT_EQUAL(fx_dir_names(f.ckpt_dir, names, sizeof(names)), 1);
	CU_ASSERT_STRING_EQUAL(names, "step-1");
	/* A later persist of the same name is not blocked by the canceled one. */
	CU_ASSERT_EQUAL(fx_persist(&f, "step-1", 1, NULL, NULL, &st), 0);
	fx_done(&f);
}

static void test_persist_removes_staging_dir_and_leaves_source_alone(void)
{
	struct fx f;
	struct rr_persist_stats st;
	char names[256], *d, *copy;
	struct stat sb;

	fx_init(&f);
	s_make_mixed(&f, "step-1");
	/* A reference copy to compare the source with afterwards. */
	copy = fx_join(f.root, "copy");
	s_make_mixed(&f, "step-1-copy");
	d = fx_ckpt(&f, "step-1-copy");
	CU_ASSERT_EQUAL_FATAL(rename(d, copy), 0);
	free(d);

	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-1", 1, NULL, NULL, &st), 0);
	CU_ASSERT_EQUAL(fx_dir_names(f.ckpt_dir, names, sizeof(names)), 1);
	CU_ASSERT_STRING_EQUAL(names, "step-1");
	d = fx_ckpt(&f, "step-1");
	FX_ASSERT_SAME_TREE(d, copy);
	/* The staging hard links are gone: each source file has one link again. */
	{
		char *p = fx_join(d, "model/weights.bin");
		CU_ASSERT_EQUAL(stat(p, &sb), 0);
		CU_ASSERT_EQUAL(sb.st_nlink, 1);
		free(p);
	}
	free(d);
	free(copy);
	fx_done(&f);
}

/* Older versions staged hard links in <ckpt>/.resume-run-staging/<name>, removing and
 * creating it by path: a trainer that planted a symlink there had the agent delete (and link
 * into) a directory outside the checkpoint dir. Nothing is done there any more. */
static void test_persist_never_follows_a_planted_staging_symlink(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	char *outside, *link_path, names[256];

	fx_init(&f);
	s_make_mixed(&f, "step-1");
	outside = fx_join(f.root, "outside");
	fx_write_str(outside, "step-1/keep.txt", "not the trainer's\n", 0644);
	link_path = fx_join(f.ckpt_dir, RR_STAGING_DIR);
	CU_ASSERT_EQUAL_FATAL(symlink(outside, link_path), 0);

	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-1", 1, NULL, &m, &st), 0);
	CU_ASSERT_EQUAL(m->nfiles, 4);
	/* The directory behind the link is as it was: nothing deleted, nothing linked in. */
	CU_ASSERT_TRUE(fx_exists_in(outside, "step-1/keep.txt"));
	CU_ASSERT_EQUAL(fx_dir_names(outside, names, sizeof(names)), 1);
	{
		char *in = fx_join(outside, "step-1");
		CU_ASSERT_EQUAL(fx_dir_names(in, names, sizeof(names)), 1);
		CU_ASSERT_STRING_EQUAL(names, "keep.txt");
		free(in);
	}
	rr_manifest_destroy(m);
	free(link_path);
	free(outside);
	fx_done(&f);
}

/* A committed checkpoint replaced by a symlink (to a directory the trainer could not read)
 * is not persisted: what is behind the link never reaches the store. */
static void test_persist_refuses_a_checkpoint_that_became_a_symlink(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	char *secret, *link_path;

	fx_init(&f);
	secret = fx_join(f.root, "secret");
	fx_write_str(secret, "key.pem", "-----BEGIN PRIVATE KEY-----\n", 0600);
	link_path = fx_join(f.ckpt_dir, "step-1");
	CU_ASSERT_EQUAL_FATAL(symlink(secret, link_path), 0);

	CU_ASSERT_EQUAL(fx_persist(&f, "step-1", 1, NULL, &m, &st), RR_EPATH);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_FALSE(fx_has_manifest(&f, "step-1"));
	CU_ASSERT_EQUAL(fx_count_chunks(&f), 0);
	free(link_path);
	free(secret);
	fx_done(&f);
}

/* Names the reader refuses are refused by the writer: such a checkpoint could never be
 * restored, and would stop gc for good. */
static void test_persist_refuses_names_restore_would_refuse(void)
{
	static const char *const bad_files[] = { "tok\\en.json", "new\nline.txt", "tab\there",
						 "del\x7f.bin" };
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;

	fx_init(&f);
	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		char name[32], *d;
		snprintf(name, sizeof(name), "step-%zu", i + 1);
		d = fx_ckpt(&f, name);
		fx_write_str(d, "ok.txt", "fine\n", 0644);
		fx_write_str(d, bad_files[i], "refused\n", 0644);
		free(d);
		CU_ASSERT_EQUAL(fx_persist(&f, name, 1, NULL, &m, &st), RR_EPATH);
		CU_ASSERT_PTR_NULL(m);
		CU_ASSERT_FALSE(fx_has_manifest(&f, name));
	}
	/* A checkpoint name with a newline (it would forge a log line, too). */
	{
		char *d = fx_ckpt(&f, "step-9\nresume-run: error: forged");
		fx_write_str(d, "ok.txt", "fine\n", 0644);
		free(d);
		CU_ASSERT_EQUAL(fx_persist(&f, "step-9\nresume-run: error: forged", 1, NULL, &m,
					   &st), RR_EPATH);
		CU_ASSERT_PTR_NULL(m);
	}
	CU_ASSERT_EQUAL(fx_count_chunks(&f), 0);
	fx_done(&f);
}

static void test_persist_empty_checkpoint_dir_writes_empty_manifest(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	char *d;

	fx_init(&f);
	d = fx_ckpt(&f, "step-0");
	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(d), 0);
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-0", 1, NULL, &m, &st), 0);
	CU_ASSERT_EQUAL(m->nfiles, 0);
	CU_ASSERT_EQUAL(st.files, 0);
	CU_ASSERT_EQUAL(st.segments, 0);
	CU_ASSERT_TRUE(fx_has_manifest(&f, "step-0"));
	rr_manifest_destroy(m);
	free(d);
	fx_done(&f);
}

/* A store that passes everything to the file store except puts of keys containing `match`,
 * which fail with `rc` (a full disk, a lost connection). */
struct s_failing {
	struct rr_store base;
	struct rr_store *inner;
	const char *match;
	int rc;
	atomic_int chunk_lists, chunk_puts; /* listings of the chunks, chunks written (puts
					     * come from the pool's threads) */
};

static int s_failing_put(struct rr_store *s, const char *key, const void *data, size_t len,
			 const struct rr_put_opts *opts, char *etag_out)
{
	struct s_failing *fs = (struct s_failing *)s;
	if (strstr(key, fs->match))
		return fs->rc;
	if (strstr(key, "/chunks/"))
		atomic_fetch_add(&fs->chunk_puts, 1);
	return rr_store_put(fs->inner, key, data, len, opts, etag_out);
}

static int s_failing_get(struct rr_store *s, const char *key, struct rr_buf *out, char *etag)
{
	return rr_store_get(((struct s_failing *)s)->inner, key, out, etag);
}

static int s_failing_head(struct rr_store *s, const char *key, uint64_t *size_out)
{
	return rr_store_head(((struct s_failing *)s)->inner, key, size_out);
}

static int s_failing_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb, void *ud)
{
	struct s_failing *fs = (struct s_failing *)s;
	if (strstr(prefix, "/chunks/"))
		atomic_fetch_add(&fs->chunk_lists, 1);
	return rr_store_list(fs->inner, prefix, cb, ud);
}

static int s_failing_del(struct rr_store *s, const char *key)
{
	return rr_store_del(((struct s_failing *)s)->inner, key);
}

static void s_failing_destroy(struct rr_store *s)
{
	(void)s; /* on the test's stack; the inner store is the fixture's */
}

static const struct rr_store_vtable s_failing_vt = {
	.scheme = "failing", .put = s_failing_put, .get = s_failing_get,
	.head = s_failing_head, .list = s_failing_list, .del = s_failing_del,
	.destroy = s_failing_destroy,
};

/* Sets up fixture f and fs over its store, failing puts whose key holds match with
 * RR_ENOSPC ("/not-a-key/": none; the counts still run). */
static void s_failing_over(struct s_failing *fs, struct fx *f, const char *match)
{
	fx_init(f);
	*fs = (struct s_failing){ .base = { .vt = &s_failing_vt, .url = (char *)"failing://" },
				  .inner = f->s, .match = match, .rc = RR_ENOSPC };
}

/* step-1 persisted fine; step-2's persist meets a store failing puts matching `match`. The
 * error is reported, step-2 has no manifest, and step-1 stays the newest committed
 * checkpoint and restores. */
static void s_failure_keeps_previous(const char *match)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	struct rr_persist_opts o = fx_opts();
	struct s_failing fs;
	struct rr_catalog *c = NULL;
	struct rr_restore_stats rs;
	char why[512], *src, *dst, names[256];

	s_failing_over(&fs, &f, match);
	s_make_mixed(&f, "step-1");
	{
		char *d = fx_ckpt(&f, "step-2");
		fx_write_random(d, "model/weights.bin", 3 * FX_MIB, 2, 0644);
		free(d);
	}
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-1", 1000, NULL, NULL, &st), 0);
	CU_ASSERT_EQUAL(rr_persist_checkpoint(&fs.base, f.ckpt_dir, "step-2", 2000, &o, &m, &st),
			RR_ENOSPC);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_FALSE(fx_has_manifest(&f, "step-2"));
	CU_ASSERT_EQUAL(fx_dir_names(f.ckpt_dir, names, sizeof(names)), 2);
	CU_ASSERT_STRING_EQUAL(names, "step-1,step-2");

	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT_EQUAL(c->n, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rr_catalog_newest(c));
	CU_ASSERT_STRING_EQUAL(rr_catalog_newest(c)->name, "step-1");
	CU_ASSERT_EQUAL(rr_restore_checkpoint(f.s, FX_RUN, rr_catalog_newest(c)->manifest,
					      f.restore_dir, 2, &rs, why, sizeof(why)),
			0);
	src = fx_ckpt(&f, "step-1");
	dst = fx_join(f.restore_dir, "step-1");
	FX_ASSERT_SAME_TREE(src, dst);
	free(src);
	free(dst);
	rr_catalog_destroy(c);
	fx_done(&f);
}

/* With an index (the persister keeps one), a persist lists the store's chunks once; the
 * next takes that listing plus what the first wrote and relies on it: the same bytes again
 * write no chunk. It lists again after a failure, and once the listing is older than half
 * the grace, except when urgent. Without an index every persist lists. */
static void test_persist_chunk_index_spares_the_listing(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_persist_opts o = fx_opts();
	struct s_failing fs;
	char *d, name[16];
	int puts, lists, slow, renewed;
	int64_t t0;

	s_failing_over(&fs, &f, "/not-a-key/");
	for (int i = 1; i <= 7; i++) {
		snprintf(name, sizeof(name), "step-%d", i);
		if (i == 3) {
			d = fx_ckpt(&f, name);
			fx_write_random(d, "other.bin", 64 * 1024, 3, 0644);
			free(d);
		} else {
			s_make_mixed(&f, name); /* the same bytes each time */
		}
	}
	o.chunks = rr_chunk_index_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(o.chunks);

	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(&fs.base, f.ckpt_dir, "step-1", 1000, &o,
						    NULL, &st), 0);
	CU_ASSERT_EQUAL(fs.chunk_lists, 1);
	puts = fs.chunk_puts;
	CU_ASSERT(puts > 0);
	/* No previous manifest: only the index can tell that these chunks are stored. */
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(&fs.base, f.ckpt_dir, "step-2", 2000, &o,
						    NULL, &st), 0);
	CU_ASSERT_EQUAL(fs.chunk_lists, 1);
	CU_ASSERT_EQUAL(fs.chunk_puts, puts);
	/* A checkpoint already stored (the same content): no failure, the index stays. */
	CU_ASSERT_EQUAL(rr_persist_checkpoint(&fs.base, f.ckpt_dir, "step-2", 2000, &o, NULL,
					      &st), RR_EEXIST);
	CU_ASSERT_EQUAL(fs.chunk_lists, 1);

	/* A failed persist: the next one lists. */
	fs.match = "/chunks/";
	CU_ASSERT_EQUAL(rr_persist_checkpoint(&fs.base, f.ckpt_dir, "step-3", 3000, &o, NULL,
					      &st), RR_ENOSPC);
	CU_ASSERT_EQUAL(fs.chunk_lists, 1);
	fs.match = "/not-a-key/";
	t0 = rr_wall_ms();
	CU_ASSERT_EQUAL(rr_persist_checkpoint(&fs.base, f.ckpt_dir, "step-3", 3000, &o, NULL,
					      &st), 0);
	CU_ASSERT_EQUAL(fs.chunk_lists, 2);

	/* A listing older than half the grace: a routine persist lists, an urgent one not.
	 * From here the grace is 4 s, its half 2 s, and the machine's load counts: a persist
	 * slower than its margin (2 s) lists once more at its end (s_check_still_stored), and
	 * step-4 lists at its start when it starts 2 s after step-3's listing. Each is allowed
	 * only when the calls took that long (`slow`; a loaded machine under TSan did). And
	 * when chunks written more than 2 s before step-4 began had to be written again (under
	 * the sanitizers steps 1-3 take that long), once more after its manifest (this store
	 * wrapper has no del_if_old). */
	o.gc_grace_ms = 4000;
	CU_ASSERT_EQUAL(rr_persist_checkpoint(&fs.base, f.ckpt_dir, "step-4", 4000, &o, NULL,
					      &st), 0);
	slow = rr_wall_ms() - t0 > 2000;
	renewed = st.refreshed_chunks > 0;
	CU_ASSERT(fs.chunk_lists == 2 + renewed || (slow && fs.chunk_lists <= 4 + renewed));
	usleep(2100 * 1000);
	o.urgent = 1;
	puts = fs.chunk_puts;
	lists = fs.chunk_lists;
	t0 = rr_wall_ms();
	CU_ASSERT_EQUAL(rr_persist_checkpoint(&fs.base, f.ckpt_dir, "step-5", 5000, &o, NULL,
					      &st), 0);
	slow = rr_wall_ms() - t0 > 2000;
	/* Ages still count: every chunk is now older than grace minus margin (2 s), so the
	 * index's chunks are written again rather than relied on; and a store that cannot
	 * delete only what was not written since (this wrapper: no del_if_old) has them
	 * listed once more after the manifest, to find one a gc deleted meanwhile. */
	CU_ASSERT(fs.chunk_puts > puts);
	CU_ASSERT(st.refreshed_chunks > 0);
	CU_ASSERT(fs.chunk_lists == lists + 1 || (slow && fs.chunk_lists == lists + 2));
	o.urgent = 0;
	lists = fs.chunk_lists;
	t0 = rr_wall_ms();
	CU_ASSERT_EQUAL(rr_persist_checkpoint(&fs.base, f.ckpt_dir, "step-6", 6000, &o, NULL,
					      &st), 0);
	slow = rr_wall_ms() - t0 > 2000;
	renewed = st.refreshed_chunks > 0; /* step-5's writes already 2 s old: a loaded machine */
	CU_ASSERT(fs.chunk_lists == lists + 1 + renewed ||
		  (slow && fs.chunk_lists == lists + 2 + renewed));

	rr_chunk_index_destroy(o.chunks);
	o.chunks = NULL;
	lists = fs.chunk_lists;
	t0 = rr_wall_ms();
	CU_ASSERT_EQUAL(rr_persist_checkpoint(&fs.base, f.ckpt_dir, "step-7", 7000, &o, NULL,
					      &st), 0);
	slow = rr_wall_ms() - t0 > 2000;
	renewed = st.refreshed_chunks > 0;
	CU_ASSERT(fs.chunk_lists == lists + 1 + renewed ||
		  (slow && fs.chunk_lists == lists + 2 + renewed));
	fx_done(&f);
}

static void test_persist_chunk_store_failure_leaves_previous_checkpoint_newest(void)
{
	s_failure_keeps_previous("/chunks/");
}

static void test_persist_manifest_store_failure_leaves_previous_checkpoint_newest(void)
{
	s_failure_keeps_previous("/manifest.json");
}

/* A store that passes everything to the fixture's, except that just before the first put of
 * a key ending in "manifest.json" it stores `other` under that key: another writer's
 * manifest landing between this persist's check and its create-only write. */
struct s_race {
	struct rr_store base;
	struct rr_store *inner;
	const char *other;
	int fired;
};

static int s_race_put(struct rr_store *s, const char *key, const void *data, size_t len,
		      const struct rr_put_opts *opts, char *etag_out)
{
	struct s_race *r = (struct s_race *)s;
	size_t n = strlen(key);
	if (!r->fired && n > 13 && strcmp(key + n - 13, "manifest.json") == 0) {
		r->fired = 1;
		CU_ASSERT_EQUAL(rr_store_put(r->inner, key, r->other, strlen(r->other), NULL, NULL),
				0);
	}
	return rr_store_put(r->inner, key, data, len, opts, etag_out);
}

static int s_race_get(struct rr_store *s, const char *key, struct rr_buf *out, char *etag_out)
{
	return rr_store_get(((struct s_race *)s)->inner, key, out, etag_out);
}

static int s_race_head(struct rr_store *s, const char *key, uint64_t *size_out)
{
	return rr_store_head(((struct s_race *)s)->inner, key, size_out);
}

static int s_race_list(struct rr_store *s, const char *prefix, rr_store_list_cb cb, void *ud)
{
	return rr_store_list(((struct s_race *)s)->inner, prefix, cb, ud);
}

static int s_race_del(struct rr_store *s, const char *key)
{
	return rr_store_del(((struct s_race *)s)->inner, key);
}

static void s_race_destroy(struct rr_store *s)
{
	(void)s;
}

static const struct rr_store_vtable s_race_vt = {
	.scheme = "race", .put = s_race_put, .get = s_race_get, .head = s_race_head,
	.list = s_race_list, .del = s_race_del, .destroy = s_race_destroy,
};

/* Persists step-1 through a store where `other` lands first; returns persist's result. */
static int s_persist_racing(struct fx *f, const char *other)
{
	struct s_race r = { .base = { .vt = &s_race_vt, .url = (char *)"race://" },
			    .inner = f->s, .other = other };
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats st;
	int rc = rr_persist_checkpoint(&r.base, f->ckpt_dir, "step-1", 2000, &o, NULL, &st);
	CU_ASSERT_EQUAL(r.fired, 1);
	return rc;
}

static void test_persist_manifest_landing_meanwhile_is_success_only_with_same_content(void)
{
	struct fx f;
	char key[RR_KEY_MAX], *theirs, *after;

	fx_init(&f);
	s_make_mixed(&f, "step-1");
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-1", 1000, NULL, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, FX_RUN, "step-1"), 0);
	theirs = fx_get_str(&f, key);
	CU_ASSERT_PTR_NOT_NULL_FATAL(theirs);

	/* The same bytes, written by the other writer first: the store has our checkpoint. */
	CU_ASSERT_EQUAL_FATAL(rr_store_del(f.s, key), 0);
	CU_ASSERT_EQUAL(s_persist_racing(&f, theirs), RR_EEXIST);

	/* Other bytes: not success, and theirs stays. */
	CU_ASSERT_EQUAL_FATAL(rr_store_del(f.s, key), 0);
	{
		char *d = fx_ckpt(&f, "step-1");
		fx_write_str(d, "run.sh", "#!/bin/sh\necho changed\n", 0755);
		free(d);
	}
	CU_ASSERT_EQUAL(s_persist_racing(&f, theirs), RR_EPRECOND);
	after = fx_get_str(&f, key);
	CU_ASSERT_PTR_NOT_NULL_FATAL(after);
	CU_ASSERT_STRING_EQUAL(after, theirs);
	free(after);
	free(theirs);
	fx_done(&f);
}

/* A store that, at the first chunk put (phase 2 has begun: every multi-chunk segment is
 * hashed), rewrites part of a checkpoint file, as a trainer rewriting a file in place
 * after its commit would. keep_mtime puts the modification time back, so only the bytes
 * tell. */
struct s_rewriting {
	struct s_failing pass; /* match "" never: rc unused */
	const char *path;
	uint64_t offset;
	uint64_t every; /* when not 0: at offset + k * every too, up to the file's end */
	int keep_mtime, done;
};

static int s_rewriting_put(struct rr_store *s, const char *key, const void *data, size_t len,
			   const struct rr_put_opts *opts, char *etag_out)
{
	struct s_rewriting *rw = (struct s_rewriting *)s;

	if (!rw->done && strstr(key, "/chunks/")) {
		unsigned char junk[4096];
		struct stat sb;
		int fd = open(rw->path, O_WRONLY | O_CLOEXEC);
		rw->done = 1;
		memset(junk, 0x5a, sizeof(junk));
		int wrote = fd >= 0 && fstat(fd, &sb) == 0;
		uint64_t at = rw->offset;
		do {
			wrote = wrote && pwrite(fd, junk, sizeof(junk), (off_t)at) ==
						 (ssize_t)sizeof(junk);
			at += rw->every;
		} while (wrote && rw->every && at + sizeof(junk) <= (uint64_t)sb.st_size);
		if (wrote && rw->keep_mtime) {
			struct timespec ts[2] = { sb.st_atim, sb.st_mtim };
			CU_ASSERT_EQUAL(futimens(fd, ts), 0);
		}
		if (fd >= 0)
			close(fd);
	}
	return rr_store_put(rw->pass.inner, key, data, len, opts, etag_out);
}

static const struct rr_store_vtable s_rewriting_vt = {
	.scheme = "rewriting", .put = s_rewriting_put, .get = s_failing_get,
	.head = s_failing_head, .list = s_failing_list, .del = s_failing_del,
	.destroy = s_failing_destroy,
};

/* Writes a safetensors file holding one U8 tensor "w" of n bytes (stored lossless, in
 * several chunks when n is above one segment). Returns the data's offset in the file. */
static uint64_t s_write_u8_tensor(const char *dir, const char *rel, size_t n)
{
	char hdr[256];
	int len = snprintf(hdr + 8, sizeof(hdr) - 8,
			   "{\"w\":{\"dtype\":\"U8\",\"shape\":[%zu],\"data_offsets\":[0,%zu]}}",
			   n, n);
	size_t hlen = (size_t)len, total;
	unsigned char *buf;

	while (hlen % 8)
		hdr[8 + hlen++] = ' ';
	for (int i = 0; i < 8; i++)
		hdr[i] = (char)((uint64_t)hlen >> (8 * i));
	total = 8 + hlen + n;
	buf = malloc(total);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	memcpy(buf, hdr, 8 + hlen);
	for (size_t i = 0; i < n; i++)
		buf[8 + hlen + i] = (unsigned char)(i * 2654435761u >> 13);
	fx_write(dir, rel, buf, total, 0644);
	free(buf);
	return 8 + hlen;
}

/* step-1 holds one u8 tensor of n bytes (several chunks); rw rewrites it 100 bytes into each
 * of the tensor's chunks, mtime kept, while the persist runs: whichever chunk is put first,
 * the others are read after it. */
static void s_rewrite_fixture(struct fx *f, struct s_rewriting *rw, size_t n)
{
	char *d;

	fx_init(f);
	*rw = (struct s_rewriting){ .pass = { .base = { .vt = &s_rewriting_vt,
							.url = (char *)"rewriting://" },
					      .inner = f->s },
				    .keep_mtime = 1 };
	d = fx_ckpt(f, "step-1");
	rw->offset = s_write_u8_tensor(d, "model.safetensors", n) + 100;
	rw->every = RR_SEGMENT_BYTES;
	rw->path = fx_join(d, "model.safetensors");
	free(d);
}

/* A multi-chunk tensor beyond what phase 1 keeps is hashed in one read and encoded in a
 * second: bytes rewritten in between (mtime kept) would be stored under hashes of other
 * bytes, a checkpoint verify calls DAMAGED. The persist fails instead; the previous
 * checkpoint stays the newest. */
static void test_persist_fails_when_a_file_changes_between_hash_and_encode(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	struct rr_persist_opts o = fx_opts();
	struct s_rewriting rw;

	s_rewrite_fixture(&f, &rw, 2 * RR_SEGMENT_BYTES + 4096);
	o.threads = 1; /* one chunk is stored before the others are read again */
	o.reread = 1;  /* as when the tensor does not fit in what phase 1 keeps */
	CU_ASSERT_EQUAL(rr_persist_checkpoint(&rw.pass.base, f.ckpt_dir, "step-1", 1, &o, &m, &st),
			RR_EIO);
	CU_ASSERT_TRUE(rw.done);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_FALSE(fx_has_manifest(&f, "step-1"));
	free((char *)rw.path);
	fx_done(&f);
}

/* The same rewrite when phase 1 kept the tensor's bytes (the default, up to 64 MiB): they
 * are read once, so what is encoded is what was hashed. The persist succeeds, the stored
 * checkpoint verifies, and its bytes are those of the first (and only) read. */
static void test_persist_keeps_first_read_of_a_multi_chunk_tensor(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	struct rr_persist_opts o = fx_opts();
	struct s_rewriting rw;
	size_t n = 2 * RR_SEGMENT_BYTES + 4096;
	unsigned char *orig;
	char why[256];

	s_rewrite_fixture(&f, &rw, n);
	o.threads = 1;
	orig = malloc(n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(orig);
	for (size_t i = 0; i < n; i++)
		orig[i] = (unsigned char)(i * 2654435761u >> 13);
	CU_ASSERT_EQUAL(rr_persist_checkpoint(&rw.pass.base, f.ckpt_dir, "step-1", 1, &o, &m, &st),
			0);
	CU_ASSERT_TRUE(rw.done); /* the file was rewritten while the persist ran */
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	CU_ASSERT_EQUAL(rr_verify_checkpoint(f.s, FX_RUN, m, 2, why, sizeof(why)), 0);
	/* The tensor's chunks hash the original bytes, not the rewritten ones. */
	const struct rr_segment *seg = &fx_file(m, "model.safetensors")->segs[1];
	CU_ASSERT_EQUAL_FATAL(seg->nchunks, 3);
	for (size_t c = 0; c < seg->nchunks; c++) {
		char xxh[RR_XXH128_HEX_LEN + 1];
		size_t off = c * RR_SEGMENT_BYTES, len = n - off < RR_SEGMENT_BYTES ?
								 n - off : RR_SEGMENT_BYTES;
		rr_xxh128_hex(orig + off, len, xxh);
		CU_ASSERT_STRING_EQUAL(seg->chunks[c].raw_xxh128, xxh);
	}
	rr_manifest_destroy(m);
	free(orig);
	free((char *)rw.path);
	fx_done(&f);
}

/* A file written to after its commit (its size or mtime changes) fails the persist. */
static void test_persist_fails_when_a_file_grows_after_the_commit(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	struct rr_persist_opts o = fx_opts();
	struct s_rewriting rw = { .pass = { .base = { .vt = &s_rewriting_vt,
						       .url = (char *)"rewriting://" } } };
	char *d;

	fx_init(&f);
	rw.pass.inner = f.s;
	o.threads = 1; /* a.bin is stored before b.bin is read */
	d = fx_ckpt(&f, "step-1");
	fx_write_random(d, "a.bin", 1000, 1, 0644);
	fx_write_random(d, "b.bin", 1000, 2, 0644);
	rw.path = fx_join(d, "b.bin");
	rw.offset = 1000; /* appends */
	CU_ASSERT_EQUAL(rr_persist_checkpoint(&rw.pass.base, f.ckpt_dir, "step-1", 1, &o, &m, &st),
			RR_EIO);
	CU_ASSERT_TRUE(rw.done);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_FALSE(fx_has_manifest(&f, "step-1"));
	free((char *)rw.path);
	free(d);
	fx_done(&f);
}

/* More files than a persist holds open (half the descriptor limit, here 256 of 512): the
 * rest are opened again for each read, below the held checkpoint directory and checked
 * against the listing; all are stored. */
static void test_persist_of_more_files_than_it_holds_open(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_manifest *m = NULL;
	struct rlimit was, low;
	char *d, rel[32];

	CU_ASSERT_EQUAL_FATAL(getrlimit(RLIMIT_NOFILE, &was), 0);
	low = was;
	low.rlim_cur = 512;
	CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_NOFILE, &low), 0);
	fx_init(&f);
	d = fx_ckpt(&f, "step-1");
	for (int i = 0; i < 600; i++) {
		snprintf(rel, sizeof(rel), "shard/%03d.bin", i);
		fx_write_random(d, rel, 100, (uint64_t)i + 1, 0644);
	}
	CU_ASSERT_EQUAL_FATAL(fx_persist(&f, "step-1", 1, NULL, &m, &st), 0);
	CU_ASSERT_EQUAL(m->nfiles, 600);
	CU_ASSERT_EQUAL(st.bytes, 60000);
	rr_manifest_destroy(m);
	free(d);
	fx_done(&f);
	CU_ASSERT_EQUAL(setrlimit(RLIMIT_NOFILE, &was), 0);
}

/* The start-up lookup's catalog seeds the index: the first persist neither lists the
 * chunks nor writes again those the catalog listed (no previous manifest, so only the
 * index can know them). */
static void test_persist_chunk_index_of_catalog_spares_the_first_listing(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_persist_opts o = fx_opts();
	struct s_failing fs;
	struct rr_catalog *c = NULL;
	int64_t listed_ms;
	int puts;

	s_failing_over(&fs, &f, "/not-a-key/");
	s_make_mixed(&f, "step-1");
	s_make_mixed(&f, "step-2"); /* the same bytes */
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(&fs.base, f.ckpt_dir, "step-1", 1000, &o,
						    NULL, &st), 0);
	CU_ASSERT_EQUAL(fs.chunk_lists, 1);
	puts = fs.chunk_puts;
	CU_ASSERT(puts > 0);

	listed_ms = rr_wall_ms();
	CU_ASSERT_EQUAL_FATAL(rr_catalog_load(f.s, FX_RUN, &c), 0);
	CU_ASSERT(c->nchunks > 0);
	o.chunks = rr_chunk_index_of_catalog(c, listed_ms);
	rr_catalog_destroy(c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o.chunks);
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(&fs.base, f.ckpt_dir, "step-2", 2000, &o,
						    NULL, &st), 0);
	CU_ASSERT_EQUAL(fs.chunk_lists, 1);
	CU_ASSERT_EQUAL(fs.chunk_puts, puts);
	rr_chunk_index_destroy(o.chunks);
	fx_done(&f);
}

/* Long chunks go first, but a long chunk that compresses to a packable size waits, copied,
 * for its place in the packer's order: the reordering is bounded (windows of 64 MiB of
 * original bytes), so what waits at once does not grow with the checkpoint. A small file
 * first, then 24 chunks of 8 MiB that each compress to about 700 KiB. */
static void test_persist_holds_a_bounded_share_of_packable_chunks(void)
{
	struct fx f;
	struct rr_persist_stats st;
	struct rr_persist_opts o = fx_opts();
	const size_t nchunks = 24, seg = RR_SEGMENT_BYTES;
	unsigned char *b = calloc(nchunks, seg);
	uint64_t x = 88172645463325252u;
	char *d;

	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	for (size_t c = 0; c < nchunks; c++)
		for (size_t k = 0; k < (700u << 10); k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			b[c * seg + k] = (unsigned char)x;
		}
	fx_init(&f);
	d = fx_ckpt(&f, "step-1");
	fx_write(d, "a_config.json", "{\"a\": 1}", 8, 0644);
	fx_write(d, "model.bin", b, nchunks * seg, 0644);
	o.no_packs = 0;
	o.threads = 1; /* the order the chunks are taken in, and nothing else, decides */
	CU_ASSERT_EQUAL_FATAL(rr_persist_checkpoint(f.s, f.ckpt_dir, "step-1", 1, &o, NULL, &st),
			      0);
	/* Every chunk is packed (under 1 MiB stored); a window holds 8 of them, and 9 bound
	 * what one window's chunks (and one left from the window before) can hold. */
	CU_ASSERT(st.stored_bytes > nchunks * (600u << 10));
	CU_ASSERT(st.held_peak > 0);
	CU_ASSERT(st.held_peak <= 9 * (st.stored_bytes / nchunks));
	free(b);
	free(d);
	fx_done(&f);
}

static CU_TestInfo s_tests[] = {
	{ "persist_of_more_files_than_it_holds_open", test_persist_of_more_files_than_it_holds_open },
	{ "persist_manifest_landing_meanwhile_is_success_only_with_same_content",
	  test_persist_manifest_landing_meanwhile_is_success_only_with_same_content },
	{ "persist_writes_manifest_every_chunk_and_stats",
	  test_persist_writes_manifest_every_chunk_and_stats },
	{ "persist_same_name_again_is_eexist_or_eprecond_and_changes_nothing",
	  test_persist_same_name_again_is_eexist_or_eprecond_and_changes_nothing },
	{ "persist_stepless_name_committed_again_replaces_its_store_copy",
	  test_persist_stepless_name_committed_again_replaces_its_store_copy },
	{ "persist_writes_a_chunk_the_store_holds_empty",
	  test_persist_writes_a_chunk_the_store_holds_empty },
	{ "persist_same_name_again_stores_the_chunks_the_store_lost",
	  test_persist_same_name_again_stores_the_chunks_the_store_lost },
	{ "persist_with_previous_reuses_unchanged_segments",
	  test_persist_with_previous_reuses_unchanged_segments },
	{ "persist_identical_files_store_one_chunk", test_persist_identical_files_store_one_chunk },
	{ "persist_skips_symlinks", test_persist_skips_symlinks },
	{ "persist_missing_directory_is_enoent", test_persist_missing_directory_is_enoent },
	{ "persist_canceled_before_start_writes_no_manifest",
	  test_persist_canceled_before_start_writes_no_manifest },
	{ "persist_removes_staging_dir_and_leaves_source_alone",
	  test_persist_removes_staging_dir_and_leaves_source_alone },
	{ "persist_never_follows_a_planted_staging_symlink",
	  test_persist_never_follows_a_planted_staging_symlink },
	{ "persist_refuses_a_checkpoint_that_became_a_symlink",
	  test_persist_refuses_a_checkpoint_that_became_a_symlink },
	{ "persist_refuses_names_restore_would_refuse",
	  test_persist_refuses_names_restore_would_refuse },
	{ "persist_keeps_first_read_of_a_multi_chunk_tensor",
	  test_persist_keeps_first_read_of_a_multi_chunk_tensor },
	{ "persist_holds_a_bounded_share_of_packable_chunks",
	  test_persist_holds_a_bounded_share_of_packable_chunks },
	{ "persist_fails_when_a_file_changes_between_hash_and_encode",
	  test_persist_fails_when_a_file_changes_between_hash_and_encode },
	{ "persist_fails_when_a_file_grows_after_the_commit",
	  test_persist_fails_when_a_file_grows_after_the_commit },
	{ "persist_empty_checkpoint_dir_writes_empty_manifest",
	  test_persist_empty_checkpoint_dir_writes_empty_manifest },
	{ "persist_chunk_index_spares_the_listing", test_persist_chunk_index_spares_the_listing },
	{ "persist_chunk_index_of_catalog_spares_the_first_listing",
	  test_persist_chunk_index_of_catalog_spares_the_first_listing },
	{ "persist_chunk_store_failure_leaves_previous_checkpoint_newest",
	  test_persist_chunk_store_failure_leaves_previous_checkpoint_newest },
	{ "persist_manifest_store_failure_leaves_previous_checkpoint_newest",
	  test_persist_manifest_store_failure_leaves_previous_checkpoint_newest },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("persist", s_tests)
