/* Shared fixture for the persist/restore/catalog/gc/persister suites: a temp directory
 * holding a file store, a checkpoint directory and a restore target; helpers to write files
 * with given bytes and modes, to compare trees (bytes and permission bits) and to poke at
 * chunks in the store. Everything is static inline so each suite takes what it uses. */
#ifndef RR_CKPT_FIXTURE_H
#define RR_CKPT_FIXTURE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "rr/buf.h"
#include "rr/codec.h"
#include "dirwalk.h"
#include "rr/error.h"
#include "rr/fsutil.h"
#include "rr/layout.h"
#include "rr/log.h"
#include "rr/manifest.h"
#include "rr/persist.h"
#include "rr/store.h"

#define FX_RUN "run"
#define FX_MIB (1024u * 1024u)

/* A directory name inside the checkpoint directory that persist must neither create nor
 * follow when a trainer plants a symlink under it (a name the agent once used for its own
 * staging; the agent stages nothing there now). */
#define RR_STAGING_DIR ".resume-run-staging"

struct fx {
	char *root;        /* mkdtemp */
	char *store_dir;   /* <root>/store: the file store's root */
	char *ckpt_dir;    /* <root>/ckpts: the trainer's checkpoint directory */
	char *restore_dir; /* <root>/restore: where restores go (not created) */
	struct rr_store *s;
};

static inline char *fx_join(const char *a, const char *b)
{
	char *p = rr_path_join(a, b);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	return p;
}

static inline void fx_init(struct fx *f)
{
	char tmpl[] = "/tmp/rr_ckpt_XXXXXX";

	/* Errors only: the suites provoke warnings (damage, fallbacks) on purpose. */
	rr_log_init(0, RR_LOG_ERROR);
	memset(f, 0, sizeof(*f));
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmpl));
	f->root = strdup(tmpl);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f->root);
	f->store_dir = fx_join(f->root, "store");
	f->ckpt_dir = fx_join(f->root, "ckpts");
	f->restore_dir = fx_join(f->root, "restore");
	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(f->ckpt_dir), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_file_new(f->store_dir, &f->s), 0);
}

static inline void fx_done(struct fx *f)
{
	rr_store_destroy(f->s);
	CU_ASSERT_EQUAL(rr_remove_tree(f->root), 0);
	free(f->root);
	free(f->store_dir);
	free(f->ckpt_dir);
	free(f->restore_dir);
	memset(f, 0, sizeof(*f));
}

/* Writes dir/rel (parents created) with exactly these bytes and permission bits. */
static inline void fx_write(const char *dir, const char *rel, const void *data, size_t len,
			    mode_t mode)
{
	char *path = fx_join(dir, rel);
	char *slash = strrchr(path, '/');
	const unsigned char *p = data;
	int fd;

	*slash = '\0';
	CU_ASSERT_EQUAL_FATAL(rr_mkdir_p(path), 0);
	*slash = '/';
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	while (len) {
		ssize_t n = write(fd, p, len);
		CU_ASSERT_FATAL(n > 0);
		p += n;
		len -= (size_t)n;
	}
	CU_ASSERT_EQUAL_FATAL(fchmod(fd, mode), 0);
	close(fd);
	free(path);
}

static inline void fx_write_str(const char *dir, const char *rel, const char *s, mode_t mode)
{
	fx_write(dir, rel, s, strlen(s), mode);
}

/* size pseudo-random (incompressible) bytes from seed: the same seed, the same bytes, so
 * stored sizes are about the original sizes and different seeds never share a chunk. */
static inline void fx_write_random(const char *dir, const char *rel, size_t size,
				   uint64_t seed, mode_t mode)
{
	unsigned char *buf = malloc(size ? size : 1);
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	for (size_t i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (unsigned char)(x >> 24);
	}
	fx_write(dir, rel, buf, size, mode);
	free(buf);
}

/* dir/<name>, malloc'd. */
static inline char *fx_ckpt(const struct fx *f, const char *name)
{
	return fx_join(f->ckpt_dir, name);
}

static inline int fx_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static inline int fx_exists_in(const char *dir, const char *rel)
{
	char *p = fx_join(dir, rel);
	int ok = fx_exists(p);
	free(p);
	return ok;
}

static inline ino_t fx_ino(const char *dir, const char *rel)
{
	struct stat st;
	char *p = fx_join(dir, rel);
	CU_ASSERT_EQUAL_FATAL(lstat(p, &st), 0);
	free(p);
	return st.st_ino;
}

static inline mode_t fx_mode(const char *dir, const char *rel)
{
	struct stat st;
	char *p = fx_join(dir, rel);
	CU_ASSERT_EQUAL_FATAL(lstat(p, &st), 0);
	free(p);
	return st.st_mode & 07777;
}

/* Reads a whole local file into a malloc'd buffer (*len its size); NULL if unreadable. */
static inline unsigned char *fx_slurp(const char *path, size_t *len)
{
	struct rr_buf b;
	rr_buf_init(&b, (size_t)1 << 30);
	if (rr_read_file(path, &b) != 0) {
		rr_buf_free(&b);
		return NULL;
	}
	*len = b.len;
	if (!b.data)
		return calloc(1, 1);
	return b.data;
}

/* 0 when trees a and b hold the same regular files (paths, bytes, permission bits) and
 * nothing else; otherwise non-zero and a reason in why. */
static inline int fx_tree_diff(const char *a, const char *b, char *why, size_t cap)
{
	struct rr_dir_listing la, lb;
	int diff = 0;

	why[0] = '\0';
	if (rr_dir_list(a, &la) != 0) {
		snprintf(why, cap, "cannot list %s", a);
		return 1;
	}
	if (rr_dir_list(b, &lb) != 0) {
		rr_dir_listing_free(&la);
		snprintf(why, cap, "cannot list %s", b);
		return 1;
	}
	if (la.n != lb.n || la.skipped != lb.skipped) {
		snprintf(why, cap, "%zu files (%zu skipped) vs %zu (%zu skipped)", la.n, la.skipped,
			 lb.n, lb.skipped);
		diff = 1;
	}
	for (size_t i = 0; !diff && i < la.n; i++) {
		char *pa, *pb;
		unsigned char *da, *db;
		size_t na = 0, nb = 0;

		if (strcmp(la.files[i].path, lb.files[i].path) != 0) {
			snprintf(why, cap, "%s vs %s", la.files[i].path, lb.files[i].path);
			diff = 1;
			break;
		}
		if (la.files[i].mode != lb.files[i].mode) {
			snprintf(why, cap, "%s: mode %04o vs %04o", la.files[i].path,
				 (unsigned)la.files[i].mode, (unsigned)lb.files[i].mode);
			diff = 1;
			break;
		}
		pa = fx_join(a, la.files[i].path);
		pb = fx_join(b, lb.files[i].path);
		da = fx_slurp(pa, &na);
		db = fx_slurp(pb, &nb);
		if (!da || !db || na != nb || (na && memcmp(da, db, na) != 0)) {
			snprintf(why, cap, "%s: contents differ", la.files[i].path);
			diff = 1;
		}
		free(da);
		free(db);
		free(pa);
		free(pb);
	}
	rr_dir_listing_free(&la);
	rr_dir_listing_free(&lb);
	return diff;
}

#define FX_ASSERT_SAME_TREE(a, b)                                         \
	do {                                                              \
		char fx_why_[512];                                        \
		int fx_d_ = fx_tree_diff((a), (b), fx_why_, sizeof(fx_why_)); \
		if (fx_d_)                                                \
			fprintf(stderr, "\n  tree diff: %s\n", fx_why_);  \
		CU_ASSERT_EQUAL(fx_d_, 0);                                \
	} while (0)

/* Names in dir (not "." or ".."), sorted, joined by ',' into out; the count is returned.
 * -1 when dir cannot be opened. */
static inline int fx_dir_names(const char *dir, char *out, size_t cap)
{
	struct dirent **list = NULL;
	int n = scandir(dir, &list, NULL, alphasort), k = 0;
	size_t used = 0;

	out[0] = '\0';
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		const char *nm = list[i]->d_name;
		if (strcmp(nm, ".") != 0 && strcmp(nm, "..") != 0) {
			int w = snprintf(out + used, cap - used, "%s%s", k ? "," : "", nm);
			if (w > 0 && (size_t)w < cap - used)
				used += (size_t)w;
			k++;
		}
		free(list[i]);
	}
	free(list);
	return k;
}

/* Regular files anywhere under dir (not following symlinks); 0 when dir is missing. */
static inline size_t fx_count_files(const char *dir)
{
	struct rr_dir_listing l;
	size_t n;
	if (rr_dir_list(dir, &l) != 0)
		return 0;
	n = l.n;
	rr_dir_listing_free(&l);
	return n;
}

/* Chunk files of FX_RUN in the store. */
static inline size_t fx_count_chunks(const struct fx *f)
{
	char *d = fx_join(f->store_dir, FX_RUN "/chunks");
	size_t n = fx_count_files(d);
	free(d);
	return n;
}

static inline struct rr_persist_opts fx_opts(void)
{
	/* One object per chunk, so that the suites can count and find chunks; packs have
	 * their own tests (test_packer.c, and .no_packs = 0 where a test needs them). */
	return (struct rr_persist_opts){ .run_id = FX_RUN, .host = "test-host",
					 .zstd_level = RR_ZSTD_LEVEL_DEFAULT, .threads = 2,
					 .no_packs = 1 };
}

/* Persists ckpts/<name> with default options (and previous); the manifest goes to *m when m
 * is non-NULL. Returns persist's result. */
static inline int fx_persist(struct fx *f, const char *name, int64_t committed_ms,
			     const struct rr_manifest *previous, struct rr_manifest **m,
			     struct rr_persist_stats *st)
{
	struct rr_persist_opts o = fx_opts();
	struct rr_persist_stats local;
	o.previous = previous;
	return rr_persist_checkpoint(f->s, f->ckpt_dir, name, committed_ms, &o, m,
				     st ? st : &local);
}

/* Local path of a chunk in the store (malloc'd). */
static inline char *fx_chunk_path(const struct fx *f, const char *sha)
{
	char key[RR_KEY_MAX];
	CU_ASSERT_EQUAL_FATAL(rr_key_chunk(key, FX_RUN, sha), 0);
	return fx_join(f->store_dir, key);
}

static inline int fx_chunk_exists(const struct fx *f, const char *sha)
{
	char *p = fx_chunk_path(f, sha);
	int ok = fx_exists(p);
	free(p);
	return ok;
}

/* The entry of path in m, or NULL. */
static inline const struct rr_file_entry *fx_file(const struct rr_manifest *m, const char *path)
{
	for (size_t i = 0; m && i < m->nfiles; i++)
		if (strcmp(m->files[i].path, path) == 0)
			return &m->files[i];
	return NULL;
}

/* The first chunk of path's first segment in m (the file must have one). */
static inline const char *fx_first_chunk(const struct rr_manifest *m, const char *path)
{
	const struct rr_file_entry *fe = fx_file(m, path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fe);
	CU_ASSERT_FATAL(fe->nsegs > 0 && fe->segs[0].nchunks > 0);
	return fe->segs[0].chunks[0].sha256;
}

/* Flips one byte in the middle of a chunk file in the store. */
static inline void fx_corrupt_chunk(const struct fx *f, const char *sha)
{
	char *p = fx_chunk_path(f, sha);
	struct stat st;
	unsigned char c;
	int fd = open(p, O_RDWR | O_CLOEXEC);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(fstat(fd, &st), 0);
	CU_ASSERT_FATAL(st.st_size > 0);
	CU_ASSERT_EQUAL_FATAL(pread(fd, &c, 1, st.st_size / 2), 1);
	c ^= 0x5a;
	CU_ASSERT_EQUAL_FATAL(pwrite(fd, &c, 1, st.st_size / 2), 1);
	close(fd);
	free(p);
}

static inline void fx_delete_chunk(const struct fx *f, const char *sha)
{
	char *p = fx_chunk_path(f, sha);
	CU_ASSERT_EQUAL_FATAL(unlink(p), 0);
	free(p);
}

static inline int fx_has_manifest(struct fx *f, const char *name)
{
	char key[RR_KEY_MAX];
	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, FX_RUN, name), 0);
	return rr_store_head(f->s, key, NULL) == 0;
}

/* Puts raw bytes as the manifest of name (garbage, or another checkpoint's manifest). */
static inline void fx_put_manifest_bytes(struct fx *f, const char *name, const void *data,
					 size_t len)
{
	char key[RR_KEY_MAX];
	CU_ASSERT_EQUAL_FATAL(rr_key_manifest(key, FX_RUN, name), 0);
	CU_ASSERT_EQUAL_FATAL(rr_store_put(f->s, key, data, len, NULL, NULL), 0);
}

/* Reads key into a NUL-terminated malloc'd string; NULL when absent. */
static inline char *fx_get_str(struct fx *f, const char *key)
{
	struct rr_buf b;
	char *s;
	rr_buf_init(&b, RR_MANIFEST_MAX_BYTES);
	if (rr_store_get(f->s, key, &b, NULL) != 0) {
		rr_buf_free(&b);
		return NULL;
	}
	s = b.data ? (char *)b.data : strdup("");
	return s;
}

#endif
