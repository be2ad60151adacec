#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rr/clock.h"
#include "rr/codec.h"
#include "rr/dirwalk.h"
#include "rr/error.h"
#include "rr/fsutil.h"
#include "rr/layout.h"
#include "rr/log.h"
#include "rr/persist.h"
#include "rr/pool.h"
#include "rr/progress.h"

struct s_task {
	size_t file;
	size_t seg;
};

struct s_worker {
	struct rr_codec *codec;
	unsigned char *raw;
	struct rr_buf stored;
};

/* Segments of the previous manifest, sorted by original-bytes hash, for reuse. */
struct s_reuse {
	size_t n;
	const struct rr_segment **segs;
};

struct s_job {
	struct rr_store *store;
	const struct rr_persist_opts *opts;
	const char *root; /* directory the files are read from */
	struct rr_manifest *m;
	struct s_task *tasks;
	struct s_worker *workers;
	struct s_reuse reuse;
	struct rr_progress *progress;
	atomic_uint_fast64_t new_bytes, reused;
	pthread_mutex_t why_lock;
	char why[512];
};

static int s_cmp_reuse(const void *a, const void *b)
{
	const struct rr_segment *x = *(const struct rr_segment *const *)a;
	const struct rr_segment *y = *(const struct rr_segment *const *)b;
	return strcmp(x->raw_sha256, y->raw_sha256);
}

static int s_reuse_init(struct s_reuse *r, const struct rr_manifest *prev)
{
	size_t n = 0;
	memset(r, 0, sizeof(*r));
	if (!prev)
		return 0;
	for (size_t f = 0; f < prev->nfiles; f++)
		n += prev->files[f].nsegs;
	if (!n)
		return 0;
	r->segs = malloc(n * sizeof(*r->segs));
	if (!r->segs)
		return RR_ENOMEM;
	for (size_t f = 0; f < prev->nfiles; f++)
		for (size_t g = 0; g < prev->files[f].nsegs; g++)
			r->segs[r->n++] = &prev->files[f].segs[g];
	qsort(r->segs, r->n, sizeof(*r->segs), s_cmp_reuse);
	return 0;
}

static const struct rr_segment *s_reuse_find(const struct s_reuse *r, const struct rr_segment *seg)
{
	const struct rr_segment *key = seg, **hit;
	if (!r->n)
		return NULL;
	hit = bsearch(&key, r->segs, r->n, sizeof(*r->segs), s_cmp_reuse);
	if (!hit || (*hit)->length != seg->length || (*hit)->encoding != seg->encoding)
		return NULL;
	return *hit;
}

static void s_fail(struct s_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Keeps the first failure's reason: the one worth a log line. */
static void s_fail(struct s_job *j, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&j->why_lock);
	if (!j->why[0]) {
		va_start(ap, fmt);
		vsnprintf(j->why, sizeof(j->why), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&j->why_lock);
}

static int s_read_segment(struct s_job *j, const struct rr_file_entry *fe,
			  const struct rr_segment *seg, unsigned char *raw)
{
	char path[4096 + 256];
	size_t got = 0;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", j->root, fe->path);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		rc = rr_error_from_errno(errno);
		s_fail(j, "cannot open %s: %s", fe->path, strerror(errno));
		return rc;
	}
	rc = rr_pread_full(fd, raw, seg->length, (int64_t)seg->offset, &got);
	if (rc)
		s_fail(j, "cannot read %s: %s", fe->path, rr_strerror(rc));
	else if (got < seg->length)
		s_fail(j, "cannot read %s: file shrank while being read", fe->path);
	if (!rc && got < seg->length)
		rc = RR_EIO;
	close(fd);
	return rc;
}

static int s_do_task(size_t t, unsigned worker, void *ud)
{
	struct s_job *j = ud;
	struct s_worker *w = &j->workers[worker];
	const struct rr_file_entry *fe = &j->m->files[j->tasks[t].file];
	struct rr_segment *seg = &fe->segs[j->tasks[t].seg];
	const struct rr_segment *old;
	struct rr_chunk_ref *ref;
	char key[RR_KEY_MAX];
	int rc;

	rc = s_read_segment(j, fe, seg, w->raw);
	if (rc)
		return rc;
	rr_sha256_hex(w->raw, seg->length, seg->raw_sha256);

	/* Unchanged since the previous checkpoint: reuse its chunks, once the store confirms
	 * they are still there (another machine's gc may have removed them). */
	old = s_reuse_find(&j->reuse, seg);
	for (size_t k = 0; old && k < old->nchunks; k++)
		if (rr_key_chunk(key, j->opts->run_id, old->chunks[k].sha256) != 0 ||
		    rr_store_head(j->store, key, NULL) != 0)
			old = NULL;
	if (old) {
		seg->chunks = malloc(old->nchunks * sizeof(*seg->chunks));
		if (!seg->chunks)
			return RR_ENOMEM;
		memcpy(seg->chunks, old->chunks, old->nchunks * sizeof(*seg->chunks));
		seg->nchunks = old->nchunks;
		atomic_fetch_add(&j->reused, 1);
		rr_progress_add(j->progress, seg->length);
		return 0;
	}

	seg->chunks = calloc(1, sizeof(*seg->chunks));
	if (!seg->chunks)
		return RR_ENOMEM;
	seg->nchunks = 1;
	ref = &seg->chunks[0];
	rc = rr_codec_encode(w->codec, seg->encoding, w->raw, seg->length, &w->stored);
	if (rc) {
		s_fail(j, "cannot compress %s: %s", fe->path, rr_strerror(rc));
		return rc;
	}
	rr_sha256_hex(w->stored.data, w->stored.len, ref->sha256);
	ref->size = seg->length;
	ref->stored_size = w->stored.len;
	rc = rr_key_chunk(key, j->opts->run_id, ref->sha256);
	if (rc)
		return rc;
	/* Content-addressed: a chunk already in the store is not written again. */
	rc = rr_store_head(j->store, key, NULL);
	if (rc == RR_ENOENT) {
		rc = rr_store_put(j->store, key, w->stored.data, w->stored.len, NULL, NULL);
		if (rc) {
			s_fail(j, "cannot store a chunk of %s: %s", fe->path, rr_strerror(rc));
			return rc;
		}
		atomic_fetch_add(&j->new_bytes, w->stored.len);
	} else if (rc) {
		s_fail(j, "cannot check the store for a chunk of %s: %s", fe->path,
		       rr_strerror(rc));
		return rc;
	}
	rr_progress_add(j->progress, seg->length);
	return 0;
}

/* Hard-links every file of src into staging so the trainer may delete src meanwhile. */
static int s_snapshot(const char *src, const char *staging, const struct rr_dir_listing *l)
{
	int rc = rr_remove_tree(staging);
	if (rc)
		return rc;
	rc = rr_mkdir_p(staging);
	for (size_t i = 0; !rc && i < l->n; i++) {
		char *from = rr_path_join(src, l->files[i].path);
		char *to = rr_path_join(staging, l->files[i].path);
		char *slash = to ? strrchr(to, '/') : NULL;
		if (!from || !to) {
			rc = RR_ENOMEM;
		} else {
			*slash = '\0';
			rc = rr_mkdir_p(to);
			*slash = '/';
			if (!rc && link(from, to) != 0)
				rc = rr_error_from_errno(errno);
		}
		free(from);
		free(to);
	}
	return rc;
}

static int s_build_manifest(struct s_job *j, const char *name, int64_t committed_ms,
			    const struct rr_dir_listing *l, size_t *ntasks)
{
	struct rr_manifest *m = calloc(1, sizeof(*m));
	size_t nt = 0;

	j->m = m;
	if (!m)
		return RR_ENOMEM;
	m->run_id = strdup(j->opts->run_id);
	m->checkpoint = strdup(name);
	m->host = j->opts->host ? strdup(j->opts->host) : NULL;
	m->committed_unix_ms = committed_ms;
	m->files = calloc(l->n ? l->n : 1, sizeof(*m->files));
	if (!m->run_id || !m->checkpoint || !m->files || (j->opts->host && !m->host))
		return RR_ENOMEM;
	for (size_t i = 0; i < l->n; i++) {
		struct rr_file_entry *fe = &m->files[m->nfiles++];
		fe->path = strdup(l->files[i].path);
		fe->mode = l->files[i].mode;
		fe->size = l->files[i].size;
		fe->nsegs = (size_t)((fe->size + RR_SEGMENT_BYTES - 1) / RR_SEGMENT_BYTES);
		fe->segs = calloc(fe->nsegs ? fe->nsegs : 1, sizeof(*fe->segs));
		if (!fe->path || !fe->segs)
			return RR_ENOMEM;
		for (size_t g = 0; g < fe->nsegs; g++) {
			uint64_t off = (uint64_t)g * RR_SEGMENT_BYTES;
			fe->segs[g].offset = off;
			fe->segs[g].length = fe->size - off < RR_SEGMENT_BYTES ?
						     fe->size - off : RR_SEGMENT_BYTES;
			fe->segs[g].encoding = RR_ENC_ZSTD;
		}
		nt += fe->nsegs;
	}
	j->tasks = calloc(nt ? nt : 1, sizeof(*j->tasks));
	if (!j->tasks)
		return RR_ENOMEM;
	nt = 0;
	for (size_t f = 0; f < m->nfiles; f++)
		for (size_t g = 0; g < m->files[f].nsegs; g++)
			j->tasks[nt++] = (struct s_task){ f, g };
	*ntasks = nt;
	return 0;
}

int rr_persist_checkpoint(struct rr_store *s, const char *ckpt_dir, const char *name,
			  int64_t committed_ms, const struct rr_persist_opts *opts,
			  struct rr_manifest **manifest_out, struct rr_persist_stats *stats)
{
	struct s_job j = { .store = s, .opts = opts, .why_lock = PTHREAD_MUTEX_INITIALIZER };
	struct rr_dir_listing l = { 0 };
	char key[RR_KEY_MAX], what[300];
	char *src = NULL, *staging_root = NULL, *staging = NULL;
	unsigned threads = opts->threads ? opts->threads : 1;
	struct rr_buf json;
	int64_t t0 = rr_mono_ms();
	size_t ntasks = 0;
	int rc;

	rr_buf_init(&json, RR_MANIFEST_MAX_BYTES);
	memset(stats, 0, sizeof(*stats));
	if (manifest_out)
		*manifest_out = NULL;

	rc = rr_key_manifest(key, opts->run_id, name);
	if (rc)
		goto out;
	rc = rr_store_head(s, key, NULL);
	if (rc == 0) {
		rc = RR_EEXIST;
		goto out;
	}
	if (rc != RR_ENOENT)
		goto out;

	src = rr_path_join(ckpt_dir, name);
	staging_root = rr_path_join(ckpt_dir, RR_STAGING_DIR);
	staging = staging_root ? rr_path_join(staging_root, name) : NULL;
	if (!src || !staging) {
		rc = RR_ENOMEM;
		goto out;
	}
	rc = rr_dir_list(src, &l);
	if (rc)
		goto out;
	if (l.skipped)
		rr_warn("%s: %zu entries that are not regular files (e.g. %s) are not persisted",
			name, l.skipped, l.first_skipped);
	j.root = staging;
	if (s_snapshot(src, staging, &l) != 0) {
		/* Another filesystem or no links allowed: read in place instead. */
		rr_remove_tree(staging);
		j.root = src;
	}

	rc = s_build_manifest(&j, name, committed_ms, &l, &ntasks);
	if (!rc)
		rc = s_reuse_init(&j.reuse, opts->previous);
	if (rc)
		goto out;
	if (threads > ntasks && ntasks)
		threads = (unsigned)ntasks;
	j.workers = calloc(threads, sizeof(*j.workers));
	if (!j.workers) {
		rc = RR_ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < threads; i++) {
		j.workers[i].codec = rr_codec_new(opts->zstd_level);
		j.workers[i].raw = malloc(RR_SEGMENT_BYTES);
		rr_buf_init(&j.workers[i].stored, 2 * RR_SEGMENT_BYTES);
		if (!j.workers[i].codec || !j.workers[i].raw) {
			rc = RR_ENOMEM;
			goto out;
		}
	}
	snprintf(what, sizeof(what), "persist %s", name);
	j.progress = rr_progress_new(what, rr_manifest_total_size(j.m));
	rc = rr_pool_run(threads, ntasks, s_do_task, &j, opts->cancel);
	rr_progress_destroy(j.progress);
	if (rc) {
		if (j.why[0])
			rr_error("persist of %s failed: %s", name, j.why);
		goto out;
	}

	j.m->created_unix_ms = rr_wall_ms();
	rc = rr_manifest_to_json(j.m, &json);
	if (!rc)
		rc = rr_store_put(s, key, json.data, json.len,
				  &(struct rr_put_opts){ .if_none_match = 1 }, NULL);
	if (rc)
		goto out;

	stats->files = j.m->nfiles;
	stats->bytes = rr_manifest_total_size(j.m);
	stats->stored_bytes = rr_manifest_total_stored(j.m);
	stats->new_bytes = atomic_load(&j.new_bytes) + json.len;
	stats->segments = ntasks;
	stats->reused_segments = atomic_load(&j.reused);
	if (manifest_out) {
		*manifest_out = j.m;
		j.m = NULL;
	}
out:
	stats->elapsed_ms = rr_mono_ms() - t0;
	if (staging) {
		rr_remove_tree(staging);
		rmdir(staging_root); /* only when empty */
	}
	for (unsigned i = 0; j.workers && i < threads; i++) {
		rr_codec_destroy(j.workers[i].codec);
		free(j.workers[i].raw);
		rr_buf_free(&j.workers[i].stored);
	}
	free(j.workers);
	free(j.tasks);
	free(j.reuse.segs);
	rr_manifest_destroy(j.m);
	rr_dir_listing_free(&l);
	rr_buf_free(&json);
	free(src);
	free(staging);
	free(staging_root);
	return rc;
}
