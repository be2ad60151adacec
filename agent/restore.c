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
#include "rr/pool.h"
#include "rr/progress.h"
#include "rr/restore.h"

/* One chunk: the unit of work. */
struct s_task {
	size_t file, seg, chunk;
	uint64_t offset; /* where its original bytes go in the file */
};

struct s_worker {
	struct rr_codec *codec;
	struct rr_buf stored;
	unsigned char *raw;
	size_t raw_cap;
};

struct s_job {
	struct rr_store *store;
	const char *run_id;
	const struct rr_manifest *m;
	const char *root;      /* where files are written; NULL to only verify */
	unsigned char *kept;   /* per file: 1 when linked from the existing local copy */
	struct s_task *tasks;
	size_t ntasks;
	struct s_worker *workers;
	struct rr_progress *progress;
	atomic_uint_fast64_t downloaded;
	struct rr_reason why;
};

/* 1 when the encoding gives back the original bytes, so their hash can be checked. */
static int s_lossless(enum rr_encoding e)
{
	return e == RR_ENC_ZSTD || e == RR_ENC_SHUFFLE_ZSTD;
}

/* Fetches, checks and decodes one chunk into w->raw (ref->size bytes). */
static int s_fetch_chunk(struct s_job *j, struct s_worker *w, const struct rr_file_entry *fe,
			 const struct rr_segment *seg, const struct rr_chunk_ref *ref)
{
	struct rr_chunk_form form = rr_chunk_form_of(seg);
	char key[RR_KEY_MAX], sha[RR_SHA256_HEX_LEN + 1], xxh[RR_XXH128_HEX_LEN + 1];
	int rc;

	if (ref->size > w->raw_cap) {
		unsigned char *p = realloc(w->raw, ref->size);
		if (!p)
			return RR_ENOMEM;
		w->raw = p;
		w->raw_cap = ref->size;
	}
	rr_buf_reset(&w->stored);
	/* A chunk bigger than its manifest says is damaged; the bound also lets a remote
	 * store fetch a small chunk in one plain request. */
	w->stored.max = ref->stored_size;
	rc = rr_key_chunk(key, j->run_id, ref->sha256);
	if (!rc)
		rc = rr_store_get(j->store, key, &w->stored, NULL);
	if (rc == RR_ETOOBIG)
		rr_reason_set(&j->why, "chunk %s of %s is bigger than the %llu bytes its manifest "
			      "says", ref->sha256, fe->path, (unsigned long long)ref->stored_size);
	else if (rc)
		rr_reason_set(&j->why, "chunk %s of %s cannot be read: %s", ref->sha256, fe->path,
			      rr_store_strerror(rc));
	if (rc)
		return rc == RR_ENOENT || rc == RR_ETOOBIG ? RR_ECORRUPT : rc;
	atomic_fetch_add(&j->downloaded, w->stored.len);
	rr_sha256_hex(w->stored.data, w->stored.len, sha);
	if (strcmp(sha, ref->sha256) != 0) {
		rr_reason_set(&j->why, "chunk %s of %s does not match its sha256", ref->sha256, fe->path);
		return RR_ECORRUPT;
	}
	rc = rr_codec_decode(w->codec, &form, w->stored.data, w->stored.len, w->raw, ref->size);
	if (rc) {
		rr_reason_set(&j->why, "chunk %s of %s does not decode", ref->sha256, fe->path);
		return RR_ECORRUPT;
	}
	if (s_lossless(seg->encoding)) {
		rr_xxh128_hex(w->raw, ref->size, xxh);
		if (strcmp(xxh, ref->raw_xxh128) != 0) {
			rr_reason_set(&j->why, "chunk %s of %s decodes to other bytes than were stored",
			       ref->sha256, fe->path);
			return RR_ECORRUPT;
		}
	}
	return 0;
}

static int s_do_task(size_t t, unsigned worker, void *ud)
{
	struct s_job *j = ud;
	const struct s_task *task = &j->tasks[t];
	struct s_worker *w = &j->workers[worker];
	const struct rr_file_entry *fe = &j->m->files[task->file];
	const struct rr_segment *seg = &fe->segs[task->seg];
	const struct rr_chunk_ref *ref = &seg->chunks[task->chunk];
	char path[8192];
	int fd, rc;

	if (j->kept && j->kept[task->file])
		return 0;
	rc = s_fetch_chunk(j, w, fe, seg, ref);
	if (rc || !j->root)
		goto done;
	snprintf(path, sizeof(path), "%s/%s", j->root, fe->path);
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = rr_error_from_errno(errno);
		rr_reason_set(&j->why, "cannot open %s: %s", path, strerror(errno));
		goto done;
	}
	rc = rr_pwrite_all(fd, w->raw, ref->size, (int64_t)task->offset);
	if (rc)
		rr_reason_set(&j->why, "cannot write %s: %s", path, rr_strerror(rc));
	close(fd);
done:
	if (!rc)
		rr_progress_add(j->progress, ref->size);
	return rc;
}

/* 1 when the local file at path holds exactly the original bytes of fe (size, permission
 * bits, every chunk's original-bytes hash). A file restored from lossy chunks holds the
 * rounded values instead, so it does not match and is restored again. */
static int s_local_identical(const char *path, const struct rr_file_entry *fe)
{
	struct stat st;
	unsigned char *buf = NULL;
	int fd, same = 0;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != fe->size ||
	    (st.st_mode & 0777) != (fe->mode & 0777))
		goto out;
	buf = malloc(RR_CHUNK_MAX_RAW);
	same = buf != NULL;
	for (size_t g = 0; same && g < fe->nsegs; g++) {
		const struct rr_segment *seg = &fe->segs[g];
		uint64_t at = seg->offset;
		for (size_t c = 0; same && c < seg->nchunks; c++) {
			const struct rr_chunk_ref *ref = &seg->chunks[c];
			char xxh[RR_XXH128_HEX_LEN + 1];
			size_t got = 0;
			if (rr_pread_full(fd, buf, ref->size, (int64_t)at, &got) != 0)
				got = 0;
			rr_xxh128_hex(buf, got, xxh);
			same = got == ref->size && strcmp(xxh, ref->raw_xxh128) == 0;
			at += ref->size;
		}
	}
out:
	free(buf);
	close(fd);
	return same;
}

static int s_cmp_listed(const void *key, const void *elem)
{
	return strcmp(key, ((const struct rr_dir_file *)elem)->path);
}

/* Writes root/rel into path and creates every directory on the way to it. Paths were
 * checked by the manifest parser, and root is a fresh directory of ours. */
static int s_make_parent(const char *root, const char *rel, char *path, size_t cap)
{
	char *slash;
	int rc;

	if (snprintf(path, cap, "%s/%s", root, rel) >= (int)cap)
		return RR_ETOOBIG;
	slash = strrchr(path, '/');
	*slash = '\0';
	rc = rr_mkdir_p(path);
	*slash = '/';
	return rc;
}

/* Creates the empty file at its final size; O_NOFOLLOW and O_EXCL keep anything else
 * from redirecting the write. */
static int s_create_file(const char *root, const char *rel, uint64_t size)
{
	char path[8192];
	int fd, rc = s_make_parent(root, rel, path, sizeof(path));

	if (rc)
		return rc;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return rr_error_from_errno(errno);
	if (ftruncate(fd, (off_t)size) != 0)
		rc = rr_error_from_errno(errno);
	close(fd);
	return rc;
}

static int s_finish_file(const char *root, const struct rr_file_entry *fe)
{
	char path[8192];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", root, fe->path);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return rr_error_from_errno(errno);
	/* Permission bits only: never setuid, setgid or sticky from a store. */
	if (fchmod(fd, fe->mode & 0777) != 0 || fsync(fd) != 0)
		rc = rr_error_from_errno(errno);
	close(fd);
	return rc;
}

static int s_job_init(struct s_job *j, unsigned *threads)
{
	size_t nt = 0;
	for (size_t f = 0; f < j->m->nfiles; f++)
		for (size_t g = 0; g < j->m->files[f].nsegs; g++)
			nt += j->m->files[f].segs[g].nchunks;
	j->tasks = calloc(nt ? nt : 1, sizeof(*j->tasks));
	if (!j->tasks)
		return RR_ENOMEM;
	for (size_t f = 0; f < j->m->nfiles; f++)
		for (size_t g = 0; g < j->m->files[f].nsegs; g++) {
			const struct rr_segment *seg = &j->m->files[f].segs[g];
			uint64_t at = seg->offset;
			for (size_t c = 0; c < seg->nchunks; c++) {
				j->tasks[j->ntasks++] = (struct s_task){ f, g, c, at };
				at += seg->chunks[c].size;
			}
		}
	if (*threads < 1)
		*threads = 1;
	if (*threads > j->ntasks && j->ntasks)
		*threads = (unsigned)j->ntasks;
	j->workers = calloc(*threads, sizeof(*j->workers));
	if (!j->workers)
		return RR_ENOMEM;
	for (unsigned i = 0; i < *threads; i++) {
		j->workers[i].codec = rr_codec_new(RR_ZSTD_LEVEL_DEFAULT);
		rr_buf_init(&j->workers[i].stored, 2 * RR_CHUNK_MAX_RAW);
		if (!j->workers[i].codec)
			return RR_ENOMEM;
	}
	return 0;
}

static void s_job_free(struct s_job *j, unsigned threads)
{
	for (unsigned i = 0; j->workers && i < threads; i++) {
		rr_codec_destroy(j->workers[i].codec);
		rr_buf_free(&j->workers[i].stored);
		free(j->workers[i].raw);
	}
	free(j->workers);
	free(j->tasks);
	free(j->kept);
}

int rr_verify_checkpoint(struct rr_store *s, const char *run_id, const struct rr_manifest *m,
			 unsigned threads, char *why, size_t why_len)
{
	struct s_job j = { .store = s, .run_id = run_id, .m = m,
			   .why = RR_REASON_INIT };
	char what[300];
	int rc = s_job_init(&j, &threads);

	if (!rc) {
		snprintf(what, sizeof(what), "verify %s", m->checkpoint);
		j.progress = rr_progress_new(what, rr_manifest_total_size(m));
		rc = rr_pool_run(threads, j.ntasks, s_do_task, &j, NULL);
		rr_progress_destroy(j.progress);
	}
	if (why && why_len)
		snprintf(why, why_len, "%s", j.why.text[0] ? j.why.text : rr_strerror(rc));
	s_job_free(&j, threads);
	return rc;
}

/* 1 when dir holds exactly the files of m, each identical. */
static int s_dir_identical(const char *dir, const struct rr_manifest *m)
{
	struct rr_dir_listing l;
	int same;

	if (rr_dir_list(dir, &l) != 0)
		return 0;
	same = l.n == m->nfiles && l.skipped == 0;
	for (size_t f = 0; same && f < m->nfiles; f++) {
		char *p = rr_path_join(dir, m->files[f].path);
		same = p && s_local_identical(p, &m->files[f]);
		free(p);
	}
	rr_dir_listing_free(&l);
	return same;
}

int rr_restore_checkpoint(struct rr_store *s, const char *run_id, const struct rr_manifest *m,
			  const char *parent, unsigned threads, struct rr_restore_stats *stats,
			  char *why, size_t why_len)
{
	struct s_job j = { .store = s, .run_id = run_id, .m = m,
			   .why = RR_REASON_INIT };
	struct rr_dir_listing local = { 0 };
	char tmp_name[300], what[300];
	char *final = NULL, *tmp = NULL;
	struct stat st;
	int64_t t0 = rr_mono_ms();
	int exists, rc;

	memset(stats, 0, sizeof(*stats));
	stats->files = m->nfiles;
	stats->bytes = rr_manifest_total_size(m);
	snprintf(tmp_name, sizeof(tmp_name), ".%s.restoring", m->checkpoint);
	final = rr_path_join(parent, m->checkpoint);
	tmp = rr_path_join(parent, tmp_name);
	if (!final || !tmp) {
		rc = RR_ENOMEM;
		goto out;
	}
	rc = rr_mkdir_p(parent);
	if (rc)
		goto out;
	exists = lstat(final, &st) == 0;
	if (exists && m->single_file && S_ISREG(st.st_mode) && m->nfiles == 1 &&
	    s_local_identical(final, &m->files[0])) {
		stats->already_present = 1;
		stats->kept_files = 1;
		goto out;
	}
	if (exists && !m->single_file && S_ISDIR(st.st_mode) && s_dir_identical(final, m)) {
		stats->already_present = 1;
		stats->kept_files = m->nfiles;
		goto out;
	}

	rc = rr_remove_tree(tmp);
	if (!rc)
		rc = rr_mkdir_p(tmp);
	if (!rc)
		rc = s_job_init(&j, &threads);
	if (!rc && !(j.kept = calloc(m->nfiles ? m->nfiles : 1, 1)))
		rc = RR_ENOMEM;
	/* Files to keep are taken only from a real directory, and only those its listing
	 * (which follows no symlink) shows: a link to a file reached through a symlink would
	 * put an inode from outside the target into the checkpoint. */
	if (!rc && exists && !m->single_file && S_ISDIR(st.st_mode) &&
	    rr_dir_list(final, &local) != 0)
		memset(&local, 0, sizeof(local));
	for (size_t f = 0; !rc && f < m->nfiles; f++) {
		const struct rr_file_entry *fe = &m->files[f];
		int listed = local.n && bsearch(fe->path, local.files, local.n,
						sizeof(*local.files), s_cmp_listed);
		char *have = listed ? rr_path_join(final, fe->path) : NULL;
		char to[8192];
		/* Same bytes already on disk: a link instead of a download (if linking fails,
		 * e.g. across filesystems, the download it is). */
		if (have && s_local_identical(have, fe) &&
		    s_make_parent(tmp, fe->path, to, sizeof(to)) == 0 && link(have, to) == 0) {
			j.kept[f] = 1;
			stats->kept_files++;
		} else {
			rc = s_create_file(tmp, fe->path, fe->size);
		}
		if (rc)
			rr_reason_set(&j.why, "cannot create %s in %s: %s", fe->path, tmp,
				 rr_strerror(rc));
		free(have);
	}
	if (rc)
		goto out;

	j.root = tmp;
	snprintf(what, sizeof(what), "restore %s", m->checkpoint);
	j.progress = rr_progress_new(what, stats->bytes);
	rc = rr_pool_run(threads, j.ntasks, s_do_task, &j, NULL);
	rr_progress_destroy(j.progress);
	for (size_t f = 0; !rc && f < m->nfiles; f++)
		if (!j.kept[f])
			rc = s_finish_file(tmp, &m->files[f]);
	if (!rc)
		rc = rr_fsync_dir(tmp);
	if (rc)
		goto out;
	if (exists) {
		/* Only the name in a fixed buffer (it fits: names are at most 255 bytes); a
		 * fixed buffer for the whole path truncated long parents to some other path. */
		char aside_name[300], *aside;
		snprintf(aside_name, sizeof(aside_name), ".%s.local-%lld", m->checkpoint,
			 (long long)rr_wall_ms());
		aside = rr_path_join(parent, aside_name);
		if (!aside) {
			rc = RR_ENOMEM;
			goto out;
		}
		if (rename(final, aside) != 0) {
			rc = rr_error_from_errno(errno);
			free(aside);
			goto out;
		}
		rr_warn("%s existed locally with other contents; moved aside to %s", final, aside);
		free(aside);
	}
	if (m->single_file) {
		/* A one-file checkpoint goes back as that file, where the framework looks
		 * (Lightning's .ckpt); the staging directory only held it. */
		char *inner = rr_path_join(tmp, m->files[0].path);
		if (!inner) {
			rc = RR_ENOMEM;
			goto out;
		}
		if (rename(inner, final) != 0)
			rc = rr_error_from_errno(errno);
		free(inner);
		if (rc)
			goto out;
		rr_remove_tree(tmp);
	} else if (rename(tmp, final) != 0) {
		rc = rr_error_from_errno(errno);
		goto out;
	}
	rc = rr_fsync_dir(parent);
out:
	if (rc && tmp)
		rr_remove_tree(tmp);
	stats->downloaded_bytes = atomic_load(&j.downloaded);
	stats->elapsed_ms = rr_mono_ms() - t0;
	if (why && why_len)
		snprintf(why, why_len, "%s", j.why.text[0] ? j.why.text : rr_strerror(rc));
	s_job_free(&j, threads);
	rr_dir_listing_free(&local);
	free(final);
	free(tmp);
	return rc;
}

int rr_restore_newest(struct rr_store *s, const char *run_id, const struct rr_catalog *c,
		      const char *parent, unsigned threads, char *name_out, size_t cap,
		      struct rr_restore_stats *stats)
{
	const char *damaged = NULL;
	int rc = RR_ENOENT;

	/* Manifests that cannot be read have no place in the order: name them all first. */
	for (size_t i = 0; i < c->n; i++)
		if (!c->entries[i].manifest)
			rr_warn("checkpoint %s is not usable: %s", c->entries[i].name,
				c->entries[i].problem);
	for (size_t i = 0; i < c->n; i++) {
		const struct rr_catalog_entry *e = &c->entries[i];
		char why[512];

		if (!e->committed) {
			if (e->manifest)
				rr_warn("checkpoint %s is not usable: %s", e->name, e->problem);
			continue;
		}
		if (damaged)
			rr_warn("falling back from damaged checkpoint %s to %s", damaged, e->name);
		rc = rr_restore_checkpoint(s, run_id, e->manifest, parent, threads, stats, why,
					   sizeof(why));
		if (rc == 0) {
			snprintf(name_out, cap, "%s", e->name);
			return 0;
		}
		if (rc != RR_ECORRUPT) {
			rr_error("restore of %s failed: %s", e->name, why);
			return rc;
		}
		rr_error("checkpoint %s is DAMAGED: %s", e->name, why);
		damaged = e->name;
	}
	if (damaged)
		rr_error("no undamaged checkpoint left to fall back to after %s", damaged);
	return rc;
}
