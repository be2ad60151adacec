#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "rr/beneath.h"
#include "rr/clock.h"
#include "rr/codec.h"
#include "rr/crc32.h"
#include "dirwalk.h"
#include "rr/error.h"
#include "rr/format.h"
#include "rr/fsutil.h"
#include "rr/layout.h"
#include "rr/log.h"
#include "rr/pool.h"
#include "rr/progress.h"
#include "rr/quote.h"
#include "rr/parts.h"
#include "rr/marks.h"
#include "rr/restore.h"
#include "restored.h"
#include "rr/store_sealed.h"

/* One chunk: the unit of work. */
struct s_task {
	size_t file, seg, chunk;
	uint64_t offset; /* where its original bytes go in the file */
};

struct s_worker {
	struct rr_codec *codec;
	struct rr_buf stored; /* the object fetched: one chunk, or a pack */
	unsigned char *raw;
	size_t raw_cap;
};

struct s_job {
	struct rr_store *store;
	const char *run_id;
	const struct rr_manifest *m;
	const char *root;      /* where files are written; NULL to only verify */
	unsigned char *kept;   /* per file: 1 when linked from the existing local copy */
	const struct rr_restored *rec; /* what earlier restores wrote for lossy chunks */
	/* per task: xxh128 of what the restore wrote where that is not the original bytes (a
	 * lossy chunk; a plain one a format's finish changed), "" elsewhere */
	char (*decoded)[RR_XXH128_HEX_LEN + 1];
	struct s_task *tasks;
	size_t ntasks;
	size_t *file_first; /* per file: its first task (a file's tasks are consecutive) */
	/* Per task: the CRC-32 of a lossy chunk's bytes, where the file's format has a finish
	 * hook (crc_files[file]: a torch.save zip), computed while they are in the cache
	 * (rr/format.h). */
	uint32_t *crc;
	unsigned char *crc_files;
	/* The unit of work: one stored object, a chunk or a pack (fetched once for all the
	 * chunks this manifest takes from it). groups[g] is order[first .. first + n). */
	size_t *order;
	struct s_group {
		size_t first, n;
		uint64_t bytes; /* the original bytes its chunks restore */
		int packed;
	} *groups;
	size_t ngroups;
	struct s_worker *workers;
	struct rr_progress *progress;
	atomic_uint_fast64_t downloaded;
	atomic_uint_fast64_t unused; /* of downloaded: parts of packs this checkpoint skips */
	struct rr_reason why;
};

/* 1 when the encoding gives back the original bytes, so their hash can be checked. */
static int s_lossless(enum rr_encoding e)
{
	return e == RR_ENC_ZSTD || e == RR_ENC_SHUFFLE_ZSTD;
}

/* Fetches the object ref names (a chunk, or the whole pack it lies in) into w->stored
 * and checks its address. */
static int s_get_object(struct s_job *j, struct s_worker *w, const struct rr_file_entry *fe,
			const struct rr_chunk_ref *ref)
{
	char key[RR_KEY_MAX], sha[RR_SHA256_HEX_LEN + 1];
	int rc;

	rr_buf_reset(&w->stored);
	/* A chunk bigger than its manifest says is damaged; the bound also lets a remote
	 * store fetch a small chunk in one plain request. A pack is bounded by its ceiling. */
	w->stored.max = ref->packed ? RR_PACK_MAX_BYTES : ref->stored_size;
	rc = rr_key_chunk(key, j->run_id, ref->sha256);
	if (!rc)
		rc = rr_store_get(j->store, key, &w->stored, NULL);
	if (rc == RR_ETOOBIG)
		rr_reason_set(&j->why, "chunk %s of %s is bigger than the %llu bytes its manifest "
			      "says", ref->sha256, fe->path, (unsigned long long)w->stored.max);
	else if (rc)
		rr_reason_set(&j->why, "chunk %s of %s cannot be read: %s", ref->sha256, fe->path,
			      rr_store_strerror(rc));
	if (rc)
		/* RR_EKEY here: the manifest opened with this key, so the chunk was altered. */
		return rc == RR_ENOENT || rc == RR_ETOOBIG || rc == RR_EKEY ? RR_ECORRUPT : rc;
	atomic_fetch_add(&j->downloaded, w->stored.len);
	if (rr_store_chunk_address(j->store, w->stored.data, w->stored.len, sha) != 0 ||
	    strcmp(sha, ref->sha256) != 0) {
		rr_reason_set(&j->why, "chunk %s of %s does not match its sha256", ref->sha256, fe->path);
		return RR_ECORRUPT;
	}
	return 0;
}

/* Decodes ref's stored bytes, taken from the object in w->stored, into w->raw (ref->size
 * bytes) and checks them. */
static int s_decode_chunk(struct s_job *j, struct s_worker *w, const struct rr_file_entry *fe,
			  const struct rr_segment *seg, const struct rr_chunk_ref *ref)
{
	struct rr_chunk_form form = rr_chunk_form_of(seg);
	char xxh[RR_XXH128_HEX_LEN + 1];
	uint64_t at = ref->packed ? ref->pack_offset : 0;
	int rc;

	if (ref->size > w->raw_cap) {
		unsigned char *p = realloc(w->raw, ref->size);
		if (!p)
			return RR_ENOMEM;
		w->raw = p;
		w->raw_cap = ref->size;
	}
	if (at > w->stored.len || ref->stored_size > w->stored.len - at) {
		rr_reason_set(&j->why, "chunk %s of %s is shorter than its manifest says",
			      ref->sha256, fe->path);
		return RR_ECORRUPT;
	}
	rc = rr_codec_decode(w->codec, &form, w->stored.data + at, ref->stored_size, w->raw,
			     ref->size);
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

/* Decodes task t from the object in w->stored and writes it into its file. */
static int s_place_chunk(struct s_job *j, size_t t, struct s_worker *w)
{
	const struct s_task *task = &j->tasks[t];
	const struct rr_file_entry *fe = &j->m->files[task->file];
	const struct rr_segment *seg = &fe->segs[task->seg];
	const struct rr_chunk_ref *ref = &seg->chunks[task->chunk];
	char path[8192];
	int fd, rc;

	rc = s_decode_chunk(j, w, fe, seg, ref);
	if (rc || !j->root)
		goto done;
	/* Rounded values no manifest hash describes: remembered for the next start. */
	if (j->decoded && !s_lossless(seg->encoding))
		rr_xxh128_hex(w->raw, ref->size, j->decoded[t]);
	if (!s_lossless(seg->encoding) && j->crc_files[task->file])
		j->crc[t] = rr_crc32(0, w->raw, ref->size);
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
	/* Starts writing the chunk out to the disk now, without waiting for it: the disk
	 * works while the next chunks are fetched and decoded, and the file's fsync at the
	 * end finds little left to write. A hint: an error is the fsync's to report. */
	else
		(void)sync_file_range(fd, (off_t)task->offset, (off_t)ref->size,
				      SYNC_FILE_RANGE_WRITE);
	close(fd);
done:
	if (!rc)
		rr_progress_add(j->progress, ref->size);
	return rc;
}

/* A pack is fetched whole (its address covers all of it) while this checkpoint may take
 * only some of its segments: the unchanged ones of an older checkpoint, packed with
 * segments that have changed since. Counts the rest, so that "read from the store" can say
 * why it exceeds what the checkpoint stores. members: the group's tasks, by pack offset. */
static void s_count_unused(struct s_job *j, const size_t *members, size_t n, size_t len)
{
	uint64_t used = 0, at = UINT64_MAX;

	for (size_t k = 0; k < n; k++) {
		const struct s_task *t = &j->tasks[members[k]];
		const struct rr_chunk_ref *ref =
			&j->m->files[t->file].segs[t->seg].chunks[t->chunk];
		if (ref->pack_offset != at) /* the same slice twice (identical segments): once */
			used += ref->stored_size;
		at = ref->pack_offset;
	}
	if (len > used)
		atomic_fetch_add(&j->unused, len - used);
}

/* One object: fetched once, every chunk this manifest takes from it placed. */
static int s_do_task(size_t g, unsigned worker, void *ud)
{
	struct s_job *j = ud;
	struct s_worker *w = &j->workers[worker];
	const size_t *members = j->order + j->groups[g].first;
	size_t n = j->groups[g].n, wanted = 0;
	const struct s_task *first = &j->tasks[members[0]];
	const struct rr_file_entry *fe = &j->m->files[first->file];
	int rc;

	for (size_t k = 0; k < n; k++)
		wanted += !(j->kept && j->kept[j->tasks[members[k]].file]);
	if (!wanted)
		return 0;
	rc = s_get_object(j, w, fe, &fe->segs[first->seg].chunks[first->chunk]);
	if (!rc && fe->segs[first->seg].chunks[first->chunk].packed)
		s_count_unused(j, members, n, w->stored.len);
	for (size_t k = 0; !rc && k < n; k++)
		if (!(j->kept && j->kept[j->tasks[members[k]].file]))
			rc = s_place_chunk(j, members[k], w);
	return rc;
}

/* The name a lossy chunk has in the restore record: its object's sha256, or for a packed
 * chunk (several share one object) the sha256 of "<pack sha256>@<offset>". */
static const char *s_record_key(const struct rr_chunk_ref *ref,
				char out[RR_SHA256_HEX_LEN + 1])
{
	char slice[RR_SHA256_HEX_LEN + 32];
	int n;

	if (!ref->packed)
		return ref->sha256;
	n = snprintf(slice, sizeof(slice), "%s@%llu", ref->sha256,
		     (unsigned long long)ref->pack_offset);
	rr_sha256_hex(slice, (size_t)n, out);
	return out;
}

/* 1 when the local file open as fd holds exactly the bytes a restore of fe gives (size,
 * permission bits, every chunk's hash): the original bytes' hash, or the hash of what an
 * earlier restore wrote, as its record (rec) remembers: a lossy chunk's rounded values, or
 * a plain chunk a format's finish changed (a torch.save zip's CRC fields). */
static int s_local_identical(int fd, const struct rr_file_entry *fe,
			     const struct rr_restored *rec)
{
	struct stat st;
	unsigned char *buf = NULL;
	int same = 0;

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
			if (!same && got == ref->size) {
				char rk[RR_SHA256_HEX_LEN + 1];
				const char *was = rr_restored_find(rec, s_record_key(ref, rk),
								   seg->encoding, seg->scale_exp);
				same = was && strcmp(xxh, was) == 0;
			}
			at += ref->size;
		}
	}
out:
	free(buf);
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

/* 1 when dir is on tmpfs (or ramfs): memory, where reserving a file's blocks means
 * allocating and zeroing every page of it before the chunks overwrite them (a quarter of
 * a restore's CPU time into /dev/shm), and where nothing fragments. */
static int s_in_memory(const char *dir)
{
	struct statfs fs;

	return statfs(dir, &fs) == 0 &&
	       (fs.f_type == (__fsword_t)TMPFS_MAGIC || fs.f_type == (__fsword_t)RAMFS_MAGIC);
}

/* In memory, the whole restore must fit in what the file system has free (checked once
 * its files are created, still before anything is downloaded). */
static int s_fits_in_memory(const char *dir, uint64_t need, struct rr_reason *why)
{
	struct statvfs vfs;
	uint64_t have;

	if (statvfs(dir, &vfs) != 0)
		return rr_error_from_errno(errno);
	have = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	if (need <= have)
		return 0;
	rr_reason_set(why, "cannot restore into %s: %s (%llu bytes needed, %llu free)", dir,
		      rr_strerror(RR_ENOSPC), (unsigned long long)need, (unsigned long long)have);
	return RR_ENOSPC;
}

/* Creates the empty file at its final size; O_NOFOLLOW and O_EXCL keep anything else
 * from redirecting the write. */
static int s_create_file(const char *root, const char *rel, uint64_t size, int reserve)
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
	/* Blocks reserved up front: workers pwrite chunks in any order without fragmenting
	 * the file, and a disk too small fails here, before anything is downloaded. Where
	 * the file system cannot (EOPNOTSUPP), the sparse file is written as it is. */
	if (!rc && size > 0 && reserve) {
		int err = posix_fallocate(fd, 0, (off_t)size);
		if (err && err != EOPNOTSUPP && err != EINVAL)
			rc = rr_error_from_errno(err);
	}
	close(fd);
	return rc;
}

static int s_finish_file(const char *root, const struct rr_file_entry *fe,
			 const uint32_t *chunk_crc)
{
	const struct rr_format *fmt = rr_format_by_name(fe->format);
	char path[8192], why[256] = "";
	int fd, rc = 0;

	if (!fmt) {
		rr_error("%s: format \"%s\" is unknown to this version", fe->path, fe->format);
		return RR_ECORRUPT;
	}
	snprintf(path, sizeof(path), "%s/%s", root, fe->path);
	fd = open(path, (fmt->finish ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return rr_error_from_errno(errno);
	/* The format repairs what lossy records changed (a torch.save zip's CRCs). */
	if (fmt->finish)
		rc = fmt->finish(fd, fe, chunk_crc, why, sizeof(why));
	if (rc)
		rr_error("%s: %s", fe->path, why);
	/* Permission bits only: never setuid, setgid or sticky from a store. */
	else if (fchmod(fd, fe->mode & 0777) != 0 || fsync(fd) != 0)
		rc = rr_error_from_errno(errno);
	close(fd);
	return rc;
}

static const struct rr_chunk_ref *s_ref_of(const struct s_job *j, size_t t)
{
	const struct s_task *task = &j->tasks[t];
	return &j->m->files[task->file].segs[task->seg].chunks[task->chunk];
}

static const struct s_job *s_sorting; /* qsort has no context argument */

/* Chunks on their own first, in file order; then packed chunks by pack and offset. */
static int s_cmp_order(const void *pa, const void *pb)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	const struct rr_chunk_ref *x = s_ref_of(s_sorting, a), *y = s_ref_of(s_sorting, b);
	int c;

	if (x->packed != y->packed)
		return x->packed - y->packed;
	if (x->packed && (c = strcmp(x->sha256, y->sha256)) != 0)
		return c;
	if (x->packed && x->pack_offset != y->pack_offset)
		return x->pack_offset < y->pack_offset ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* Chunks on their own before packs, each kind biggest first; of as many bytes, in the order
 * grouped. */
static int s_cmp_group_size(const void *pa, const void *pb)
{
	const struct s_group *a = pa, *b = pb;

	if (a->packed != b->packed)
		return a->packed - b->packed;
	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	return (a->first > b->first) - (a->first < b->first);
}

/* Groups the tasks by the object they are read from, so that a pack is fetched once. The
 * workers take the chunks on their own first and then the packs, each kind biggest first,
 * so that a big one taken last does not keep one core busy while the other waits (a
 * checkpoint is a few dozen such objects of up to 8 MiB; the hf set of bench_speed.sh:
 * 84 -> 76 ms, perf stat -r 15 of each binary). */
static int s_group_tasks(struct s_job *j)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

	j->order = malloc((j->ntasks ? j->ntasks : 1) * sizeof(*j->order));
	j->groups = malloc((j->ntasks ? j->ntasks : 1) * sizeof(*j->groups));
	if (!j->order || !j->groups)
		return RR_ENOMEM;
	for (size_t t = 0; t < j->ntasks; t++)
		j->order[t] = t;
	pthread_mutex_lock(&lock);
	s_sorting = j;
	qsort(j->order, j->ntasks, sizeof(*j->order), s_cmp_order);
	pthread_mutex_unlock(&lock);
	for (size_t k = 0; k < j->ntasks; k++) {
		const struct rr_chunk_ref *r = s_ref_of(j, j->order[k]);
		const struct rr_chunk_ref *prev = k ? s_ref_of(j, j->order[k - 1]) : NULL;
		if (prev && r->packed && prev->packed && strcmp(r->sha256, prev->sha256) == 0) {
			j->groups[j->ngroups - 1].n++;
			j->groups[j->ngroups - 1].bytes += r->size;
			continue;
		}
		j->groups[j->ngroups++] = (struct s_group){ .first = k, .n = 1, .bytes = r->size,
							    .packed = r->packed };
	}
	qsort(j->groups, j->ngroups, sizeof(*j->groups), s_cmp_group_size);
	return 0;
}

static int s_job_init(struct s_job *j, unsigned *threads)
{
	size_t nt = 0;
	int rc;

	for (size_t f = 0; f < j->m->nfiles; f++)
		for (size_t g = 0; g < j->m->files[f].nsegs; g++)
			nt += j->m->files[f].segs[g].nchunks;
	j->tasks = calloc(nt ? nt : 1, sizeof(*j->tasks));
	j->crc = calloc(nt ? nt : 1, sizeof(*j->crc));
	j->file_first = calloc(j->m->nfiles ? j->m->nfiles : 1, sizeof(*j->file_first));
	j->crc_files = calloc(j->m->nfiles ? j->m->nfiles : 1, 1);
	if (!j->tasks || !j->crc || !j->file_first || !j->crc_files)
		return RR_ENOMEM;
	for (size_t f = 0; f < j->m->nfiles; f++) {
		const struct rr_format *fmt = rr_format_by_name(j->m->files[f].format);
		j->crc_files[f] = fmt && fmt->finish;
		j->file_first[f] = j->ntasks;
		for (size_t g = 0; g < j->m->files[f].nsegs; g++) {
			const struct rr_segment *seg = &j->m->files[f].segs[g];
			uint64_t at = seg->offset;
			for (size_t c = 0; c < seg->nchunks; c++) {
				j->tasks[j->ntasks++] = (struct s_task){ f, g, c, at };
				at += seg->chunks[c].size;
			}
		}
	}
	rc = s_group_tasks(j);
	if (rc)
		return rc;
	if (*threads < 1)
		*threads = 1;
	if (*threads > j->ngroups && j->ngroups)
		*threads = (unsigned)j->ngroups;
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
	free(j->crc);
	free(j->crc_files);
	free(j->file_first);
	free(j->order);
	free(j->groups);
	free(j->kept);
	free(j->decoded);
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
		rc = rr_pool_run(threads, j.ngroups, s_do_task, &j, NULL);
		rr_progress_destroy(j.progress);
	}
	if (why && why_len)
		snprintf(why, why_len, "%s", j.why.text[0] ? j.why.text : rr_strerror(rc));
	s_job_free(&j, threads);
	return rc;
}

/* Opens the local copy <parent>/<name> without following a symlink to it or in it, and
 * lists it. Returns 0 with *fd_out and *l the caller's, or an rr_error (no local copy to
 * compare with: a symlink, a file, nothing). */
static int s_open_local(const char *parent, const char *name, int *fd_out,
			struct rr_dir_listing *l)
{
	int pfd, rc;

	memset(l, 0, sizeof(*l));
	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return rr_error_from_errno(errno);
	rc = rr_opendir_beneath(pfd, name, fd_out);
	close(pfd);
	if (!rc && (rc = rr_dir_list_fd(*fd_out, l)) != 0) {
		close(*fd_out);
		*fd_out = -1;
	}
	return rc;
}

/* The local file rel, opened below dirfd only if its listing shows it and it is still
 * that regular file (no symlink on the way, no FIFO); -1 otherwise. */
static int s_local_fd(int dirfd, const struct rr_dir_listing *l, const char *rel)
{
	const struct rr_dir_file *e;
	int fd;

	if (dirfd < 0 || !l->n)
		return -1;
	e = bsearch(rel, l->files, l->n, sizeof(*l->files), s_cmp_listed);
	if (!e || rr_open_beneath(dirfd, rel, &e->st, &fd, NULL) != 0)
		return -1;
	return fd;
}

/* Hard-links the very inode open as fd to path: never a name that may have changed since
 * the file was checked. Through /proc (any user), else AT_EMPTY_PATH (needs
 * CAP_DAC_READ_SEARCH). */
static int s_link_fd(int fd, const char *path)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0)
		return 0;
	return rr_error_from_errno(errno);
}

/* 1 when the directory open as dirfd (listed as l) holds exactly the files of m, each
 * identical. */
static int s_dir_identical(int dirfd, const struct rr_dir_listing *l,
			   const struct rr_manifest *m, const struct rr_restored *rec)
{
	int same = dirfd >= 0 && l->n == m->nfiles && l->skipped == 0;

	for (size_t f = 0; same && f < m->nfiles; f++) {
		int fd = s_local_fd(dirfd, l, m->files[f].path);
		same = fd >= 0 && s_local_identical(fd, &m->files[f], rec);
		if (fd >= 0)
			close(fd);
	}
	return same;
}

/* Remembers the bytes this restore left for each lossy chunk, and each plain chunk a
 * format's finish changed: written now, or kept from the local copy (whose bytes the old
 * record vouched for). Only saves a download at the next start, so a failure is a
 * warning. */
static void s_save_record(const struct s_job *j, const char *parent)
{
	struct rr_restored *now = rr_restored_new();
	size_t lossy = 0;
	int rc = now ? 0 : RR_ENOMEM;

	for (size_t t = 0; !rc && t < j->ntasks; t++) {
		const struct s_task *task = &j->tasks[t];
		const struct rr_segment *seg = &j->m->files[task->file].segs[task->seg];
		const struct rr_chunk_ref *ref = &seg->chunks[task->chunk];
		const char *xxh = j->decoded[t];
		char rk[RR_SHA256_HEX_LEN + 1];
		if (s_lossless(seg->encoding) && !j->crc_files[task->file])
			continue;
		lossy += !s_lossless(seg->encoding);
		if (!xxh[0])
			xxh = rr_restored_find(j->rec, s_record_key(ref, rk), seg->encoding,
					       seg->scale_exp);
		if (xxh)
			rc = rr_restored_add(now, s_record_key(ref, rk), seg->encoding,
					     seg->scale_exp, xxh);
	}
	if (!rc && (lossy || rr_restored_count(j->rec)))
		rc = rr_restored_save(now, parent);
	if (rc)
		rr_warn("could not record what the restore wrote in %s/%s (%s); the next start "
			"downloads the lossy tensors again", parent, RR_RESTORED_FILE,
			rr_strerror(rc));
	rr_restored_destroy(now);
}

/* Where one checkpoint lands: its final name under parent, the staging directory beside it,
 * and what is already there (a copy whose identical files are linked, not fetched). */
struct s_target {
	const char *parent;
	char *final, *tmp, *aside;
	int exists;                   /* something is at final */
	struct stat st;               /* its lstat */
	int local_fd;                 /* the local copy's directory, -1: none usable */
	struct rr_dir_listing local;
	int lock_fd;                  /* parent, locked for this restore; -1 */
};

/* One restore at a time into a parent: another's staging directory (its name is fixed) is
 * neither removed by this one nor renamed into place half-written. A second agent or a
 * `resume-run restore` beside the agent waits here, unless the store is stopped. */
static int s_lock_parent(struct s_target *t, atomic_int *stopped)
{
	int said = 0;

	t->lock_fd = open(t->parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->lock_fd < 0)
		return rr_error_from_errno(errno);
	while (flock(t->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			/* A file system without locks on directories (NFS takes flock as a POSIX
			 * lock, which needs a file open for writing): restored unlocked, as before. */
			rr_debug("cannot lock %s (%s); restoring without the lock", t->parent,
				 strerror(errno));
			return 0;
		}
		if (atomic_load(stopped))
			return RR_ECANCELED;
		if (!said++)
			rr_info("waiting for another restore into %s to finish", t->parent);
		poll(NULL, 0, 20);
	}
	return 0;
}

/* A copy a restore set aside and never removed (it was killed between its two renames): kept,
 * never deleted here (it may hold the user's only copy of some file), but said, or such copies
 * pile up unseen. Under the parent's lock, so no restore is between its renames now. */
static void s_say_left_aside(const struct s_target *t, const char *name)
{
	char prefix[300], q[RR_QUOTE_CAP];
	struct dirent *e;
	DIR *d;

	snprintf(prefix, sizeof(prefix), ".%s.local-", name);
	d = opendir(t->parent);
	while (d && (e = readdir(d)))
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			rr_warn("%s/%s is a copy of %s set aside by a restore that was interrupted; it "
				"is kept (remove it once nothing in it is needed)", t->parent,
				e->d_name, rr_quote_str(q, name));
	if (d)
		closedir(d);
}

static int s_target_open(struct s_target *t, const char *parent, const struct rr_manifest *m,
			 atomic_int *stopped)
{
	char tmp_name[300];
	int rc;

	memset(t, 0, sizeof(*t));
	t->parent = parent;
	t->local_fd = -1;
	t->lock_fd = -1;
	snprintf(tmp_name, sizeof(tmp_name), ".%s.restoring", m->checkpoint);
	t->final = rr_path_join(parent, m->checkpoint);
	t->tmp = rr_path_join(parent, tmp_name);
	if (!t->final || !t->tmp)
		return RR_ENOMEM;
	rc = rr_mkdir_p(parent);
	if (!rc)
		rc = s_lock_parent(t, stopped);
	if (!rc)
		t->exists = lstat(t->final, &t->st) == 0;
	if (!rc)
		s_say_left_aside(t, m->checkpoint);
	return rc;
}

static void s_target_close(struct s_target *t)
{
	rr_dir_listing_free(&t->local);
	if (t->local_fd >= 0)
		close(t->local_fd);
	if (t->lock_fd >= 0)
		close(t->lock_fd); /* and with it the lock */
	free(t->final);
	free(t->tmp);
	free(t->aside);
}

/* 1 when the checkpoint is already at its final name, identical (nothing to do). */
static int s_already_present(struct s_target *t, const struct rr_manifest *m,
			     const struct rr_restored *rec, struct rr_restore_stats *stats)
{
	if (t->exists && m->single_file && S_ISREG(t->st.st_mode) && m->nfiles == 1) {
		/* A one-file checkpoint already in place: opened as the regular file it is. */
		int fd = open(t->final, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat fst;
		int same = fd >= 0 && fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) &&
			   s_local_identical(fd, &m->files[0], rec);
		if (fd >= 0)
			close(fd);
		if (same) {
			stats->already_present = 1;
			stats->kept_files = 1;
			return 1;
		}
	}
	/* Files to keep are taken only from a real directory, and only those its listing
	 * (which follows no symlink) shows, opened below it as the inode listed: a link to a
	 * file reached through a symlink would put an inode from outside the target into the
	 * checkpoint. */
	if (t->exists && !m->single_file && S_ISDIR(t->st.st_mode) &&
	    s_open_local(t->parent, m->checkpoint, &t->local_fd, &t->local) != 0)
		t->local_fd = -1;
	if (!m->single_file && s_dir_identical(t->local_fd, &t->local, m, rec)) {
		stats->already_present = 1;
		stats->kept_files = m->nfiles;
		return 1;
	}
	return 0;
}

/* Builds the staging directory: every file created at its size, or linked from the local
 * copy when identical; then checks that what is left to fetch fits (tmpfs). */
static int s_stage(struct s_target *t, struct s_job *j, unsigned *threads,
		   struct rr_restore_stats *stats)
{
	const struct rr_manifest *m = j->m;
	char q[RR_QUOTE_CAP];
	uint64_t need = 0;
	int rc, in_memory;

	rc = rr_remove_tree(t->tmp);
	if (!rc)
		rc = rr_mkdir_p(t->tmp);
	if (!rc)
		rc = s_job_init(j, threads);
	if (!rc && !(j->kept = calloc(m->nfiles ? m->nfiles : 1, 1)))
		rc = RR_ENOMEM;
	if (!rc && !(j->decoded = calloc(j->ntasks ? j->ntasks : 1, sizeof(*j->decoded))))
		rc = RR_ENOMEM;
	in_memory = !rc && s_in_memory(t->tmp);
	for (size_t f = 0; !rc && f < m->nfiles; f++) {
		const struct rr_file_entry *fe = &m->files[f];
		if (j->store->stopped) {
			rc = RR_ECANCELED;
			break;
		}
		int have = s_local_fd(t->local_fd, &t->local, fe->path);
		char to[8192];
		/* Same bytes already on disk: a link instead of a download (if linking fails,
		 * e.g. across filesystems, the download it is). */
		if (have >= 0 && s_local_identical(have, fe, j->rec) &&
		    s_make_parent(t->tmp, fe->path, to, sizeof(to)) == 0 && s_link_fd(have, to) == 0) {
			j->kept[f] = 1;
			stats->kept_files++;
		} else {
			rc = s_create_file(t->tmp, fe->path, fe->size, !in_memory);
			need += fe->size;
		}
		if (rc)
			rr_reason_set(&j->why, "cannot create %s in %s: %s",
				      rr_quote_str(q, fe->path), t->tmp, rr_strerror(rc));
		if (have >= 0)
			close(have);
	}
	if (!rc && in_memory)
		rc = s_fits_in_memory(t->tmp, need, &j->why);
	return rc;
}

/* Fetches and decodes every chunk into the staging directory on the pool, then completes
 * and syncs its files. A cancelled store stops the chunks not yet started. */
/* A file a format's finish changed (j->crc_files: a torch.save zip whose lossy records'
 * CRC fields it rewrote): the plain chunks whose bytes are no longer the original's get the
 * hash of what is there now in j->decoded, for the restore record, so that the next start
 * recognises them (s_local_identical). Those chunks are the zip's headers and directory,
 * read back once here; a chunk that cannot be read is simply not recorded. */
static void s_note_finished(struct s_job *j, const char *root, size_t f)
{
	const struct rr_file_entry *fe = &j->m->files[f];
	size_t end = f + 1 < j->m->nfiles ? j->file_first[f + 1] : j->ntasks;
	unsigned char *buf = NULL;
	char path[8192];
	int fd;

	int lossy = 0;

	for (size_t g = 0; g < fe->nsegs && !lossy; g++)
		lossy = !s_lossless(fe->segs[g].encoding);
	if (!j->decoded || !j->crc_files[f] || !lossy)
		return; /* finish changed nothing */
	snprintf(path, sizeof(path), "%s/%s", root, fe->path);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	for (size_t t = j->file_first[f]; t < end; t++) {
		const struct rr_segment *seg = &fe->segs[j->tasks[t].seg];
		const struct rr_chunk_ref *ref = &seg->chunks[j->tasks[t].chunk];
		char xxh[RR_XXH128_HEX_LEN + 1];
		size_t got = 0;

		if (!s_lossless(seg->encoding))
			continue;
		if (!buf && !(buf = malloc(RR_CHUNK_MAX_RAW)))
			break;
		if (rr_pread_full(fd, buf, ref->size, (int64_t)j->tasks[t].offset, &got) != 0 ||
		    got != ref->size)
			continue;
		rr_xxh128_hex(buf, got, xxh);
		if (strcmp(xxh, ref->raw_xxh128) != 0)
			memcpy(j->decoded[t], xxh, sizeof(xxh));
	}
	free(buf);
	close(fd);
}

static int s_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Syncs root and every directory below it that m's files are in: a file's name lives in
 * its directory (fsync(2)), and a name linked from the local copy is as new as a file
 * written. */
static int s_sync_dirs(const char *root, const struct rr_manifest *m)
{
	char **dirs = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	for (size_t f = 0; !rc && f < m->nfiles; f++) {
		const char *rel = m->files[f].path;
		for (const char *c = strchr(rel, '/'); !rc && c; c = strchr(c + 1, '/')) {
			if (n == cap) {
				char **grown = realloc(dirs, (cap = cap ? 2 * cap : 16) * sizeof(*dirs));
				if (!grown) {
					rc = RR_ENOMEM;
					break;
				}
				dirs = grown;
			}
			if (!(dirs[n] = strndup(rel, (size_t)(c - rel))))
				rc = RR_ENOMEM;
			else
				n++;
		}
	}
	if (n)
		qsort(dirs, n, sizeof(*dirs), s_cmp_str);
	for (size_t i = 0; !rc && i < n; i++) {
		char *path;
		if (i > 0 && strcmp(dirs[i], dirs[i - 1]) == 0)
			continue;
		path = rr_path_join(root, dirs[i]);
		rc = path ? rr_fsync_dir(path) : RR_ENOMEM;
		free(path);
	}
	for (size_t i = 0; i < n; i++)
		free(dirs[i]);
	free(dirs);
	return rc ? rc : rr_fsync_dir(root);
}

static int s_fetch(struct s_target *t, struct s_job *j, unsigned threads,
		   struct rr_restore_stats *stats)
{
	const struct rr_manifest *m = j->m;
	char what[300];
	int rc;

	j->root = t->tmp;
	snprintf(what, sizeof(what), "restore %s", m->checkpoint);
	j->progress = rr_progress_new(what, stats->bytes);
	rc = rr_pool_run(threads, j->ngroups, s_do_task, j, &j->store->stopped);
	if (!rc && j->store->stopped)
		rc = RR_ECANCELED;
	rr_progress_destroy(j->progress);
	for (size_t f = 0; !rc && f < m->nfiles; f++)
		if (!j->kept[f]) {
			rc = s_finish_file(t->tmp, &m->files[f], j->crc + j->file_first[f]);
			if (!rc)
				s_note_finished(j, t->tmp, f);
		}
	if (!rc)
		rc = s_sync_dirs(t->tmp, m);
	return rc;
}

/* Puts the staged checkpoint under its final name. What was there is set aside first, so
 * that a crash in between leaves one of the two under the name, and removed after. */
static int s_swap_into_place(struct s_target *t, const struct rr_manifest *m)
{
	char q[RR_QUOTE_CAP];
	int rc = 0;

	if (t->exists) {
		/* Only the name in a fixed buffer (it fits: names are at most 255 bytes). */
		char aside_name[300];
		snprintf(aside_name, sizeof(aside_name), ".%s.local-%lld", m->checkpoint,
			 (long long)rr_wall_ms());
		t->aside = rr_path_join(t->parent, aside_name);
		if (!t->aside)
			return RR_ENOMEM;
		if (rename(t->final, t->aside) != 0)
			return rr_error_from_errno(errno);
	}
	if (m->single_file) {
		/* A one-file checkpoint goes back as that file, where the framework looks
		 * (Lightning's .ckpt); the staging directory only held it. */
		char *inner = rr_path_join(t->tmp, m->files[0].path);
		if (!inner)
			rc = RR_ENOMEM;
		else if (rename(inner, t->final) != 0)
			rc = rr_error_from_errno(errno);
		free(inner);
	} else if (rename(t->tmp, t->final) != 0) {
		rc = rr_error_from_errno(errno);
	}
	if (rc) {
		if (t->aside && rename(t->aside, t->final) != 0)
			rr_warn("%s existed locally with other contents and is now at %s", t->final,
				t->aside);
		return rc;
	}
	if (m->single_file)
		rr_remove_tree(t->tmp);
	rc = rr_fsync_dir(t->parent);
	if (t->aside && rc) {
		/* Not known to be on disk: after a crash the name may still be the old copy's,
		 * whose other files are only in the copy set aside. */
		rr_warn("%s existed locally with other contents; the old copy is kept at %s (the "
			"directory could not be synced: %s)", t->final, t->aside, rr_strerror(rc));
	} else if (t->aside) {
		/* The store's copy is in place: the old one was set aside only so that a crash
		 * before that left one of them under the name. (Its files that matched were
		 * linked into the new copy, which keeps them.) */
		int drc = rr_remove_tree(t->aside);
		if (drc)
			rr_warn("%s existed locally with other contents; the old copy is left at %s "
				"(%s)", t->final, t->aside, rr_strerror(drc));
		else
			rr_info("checkpoint %s existed locally with other contents; replaced by the "
				"store's copy", rr_quote_str(q, m->checkpoint));
	}
	return rc;
}

int rr_restore_checkpoint(struct rr_store *s, const char *run_id, const struct rr_manifest *m,
			  const char *parent, unsigned threads, struct rr_restore_stats *stats,
			  char *why, size_t why_len)
{
	struct s_job j = { .store = s, .run_id = run_id, .m = m, .why = RR_REASON_INIT };
	struct rr_restored *rec = NULL;
	struct s_target t;
	int64_t t0 = rr_mono_ms();
	int rc;

	memset(stats, 0, sizeof(*stats));
	stats->files = m->nfiles;
	stats->bytes = rr_manifest_total_size(m);
	rc = s_target_open(&t, parent, m, &s->stopped);
	if (!rc && !(rec = rr_restored_load(parent)))
		rc = RR_ENOMEM;
	j.rec = rec;
	if (rc || s_already_present(&t, m, rec, stats))
		goto out;
	rc = s_stage(&t, &j, &threads, stats);
	if (!rc)
		rc = s_fetch(&t, &j, threads, stats);
	if (!rc)
		rc = s_swap_into_place(&t, m);
	if (!rc)
		s_save_record(&j, parent);
out:
	if (rc && t.tmp)
		rr_remove_tree(t.tmp);
	stats->downloaded_bytes = atomic_load(&j.downloaded);
	stats->unused_bytes = atomic_load(&j.unused);
	stats->elapsed_ms = rr_mono_ms() - t0;
	if (why && why_len)
		snprintf(why, why_len, "%s", j.why.text[0] ? j.why.text : rr_strerror(rc));
	s_job_free(&j, threads);
	rr_restored_destroy(rec);
	s_target_close(&t);
	return rc;
}

/* rr_restore_checkpoint under a lease; keep (RR_READER_TOKEN_MAX bytes) non-NULL: the lease
 * is kept on success and its token left there, else given back here. */
static int s_restore_leased(struct rr_store *s, const char *run_id, const struct rr_manifest *m,
			    const char *parent, unsigned threads, struct rr_restore_stats *stats,
			    char *why, size_t why_len, char *keep)
{
	char token[RR_READER_TOKEN_MAX] = "";
	int rc = rr_reader_begin(s, run_id, m->checkpoint, token);

	if (rc) {
		/* Reading goes on without one: only another machine's retention could race it. */
		rr_warn("cannot take a restore lease on %s (%s); restoring it anyway",
			m->checkpoint, rr_store_strerror(rc));
		token[0] = '\0';
	}
	rc = rr_restore_checkpoint(s, run_id, m, parent, threads, stats, why, why_len);
	if (rc || !keep)
		rr_reader_end(s, run_id, m->checkpoint, token);
	else
		memcpy(keep, token, sizeof(token));
	return rc;
}

int rr_restore_leased(struct rr_store *s, const char *run_id, const struct rr_manifest *m,
		      const char *parent, unsigned threads, struct rr_restore_stats *stats,
		      char *why, size_t why_len)
{
	return s_restore_leased(s, run_id, m, parent, threads, stats, why, why_len, NULL);
}

int rr_restore_newest(struct rr_store *s, struct rr_catalog *c, unsigned nnodes, unsigned rank,
		      const char *parent, unsigned threads, char *name_out, size_t cap,
		      struct rr_restore_stats *stats)
{
	return rr_restore_newest_leased(s, c, nnodes, rank, parent, threads, name_out, cap, stats,
					NULL);
}

static void s_pass_over(const char *name, const struct rr_suspect *m)
{
	rr_warn("checkpoint %s is marked suspect (%s%s%s); passing it over for the one before "
		"(resume-run unmark --checkpoint %s clears the mark)", name, m->why,
		m->host[0] ? ", on " : "", m->host, name);
}

/* Marks e suspect for what was found damaged in it (m->why): 0 or the store's error. */
static int s_mark_damaged(struct rr_store *s, const char *run_id,
			  const struct rr_catalog_entry *e, struct rr_suspect *m)
{
	m->for_committed_ms = e->manifest->committed_unix_ms;
	m->exit_status = -1;
	if (gethostname(m->host, sizeof(m->host) - 1) != 0)
		m->host[0] = '\0';
	return rr_mark_suspect(s, run_id, e->name, m);
}

/* Single node: e was found damaged and the restore falls back. e is marked suspect, so that
 * retention does not count it among the checkpoints it keeps (it would delete the one
 * restored instead, the only good one left with --keep 1), the next start passes it over
 * without reading it again, and the trainer may commit its name again. */
static void s_damaged_fall_back(struct rr_store *s, struct rr_catalog *c,
				const struct rr_catalog_entry *e, const char *why)
{
	struct rr_suspect m = { 0 };
	int rc;

	snprintf(m.why, sizeof(m.why), "found damaged by a restore: %s", why);
	rc = s_mark_damaged(s, c->run_id, e, &m);
	if (!rc)
		rc = rr_catalog_set_suspect(c, e->name, &m);
	if (rc)
		rr_warn("checkpoint %s cannot be marked suspect (%s): retention may count it among "
			"the checkpoints it keeps", e->name, rr_store_strerror(rc));
}

/* Multi-node: node rank found its part of e damaged. Falling back alone would resume the nodes
 * from different steps, each from its own shards, so e is marked suspect for every node (each
 * passes it over from its next start) and this start fails. Returns RR_ECORRUPT. */
static int s_damaged_for_every_node(struct rr_store *s, const char *run_id,
				    const struct rr_catalog_entry *e, unsigned nnodes,
				    unsigned rank, const char *why)
{
	struct rr_suspect m = { 0 };
	int rc;

	snprintf(m.why, sizeof(m.why), "node %u of %u found its part damaged: %s", rank, nnodes,
		 why);
	rc = s_mark_damaged(s, run_id, e, &m);
	if (rc)
		rr_error("checkpoint %s cannot be marked suspect for every node (%s), and no node "
			 "may fall back alone: this start fails, and the next one finds the damage "
			 "again", e->name, rr_store_strerror(rc));
	else
		rr_error("checkpoint %s is marked suspect for every node: relaunch the job, and every "
			 "node will restore the checkpoint before it (no node falls back alone: the "
			 "nodes would resume from different steps)", e->name);
	return RR_ECORRUPT;
}

/* Multi-node: 1 when another node marked e suspect since the catalog was listed (it found its
 * part damaged while this node read its own), with the mark in *m; 0; or the store's error. */
static int s_marked_since(struct rr_store *s, const char *run_id,
			  const struct rr_catalog_entry *e, struct rr_suspect *m)
{
	int rc = rr_mark_read_suspect(s, run_id, e->name, m);

	if (rc == RR_ENOENT || rc == RR_ECORRUPT) /* unreadable: none, as for the catalog */
		return 0;
	return rc ? rc : m->for_committed_ms == e->manifest->committed_unix_ms;
}

int rr_restore_newest_leased(struct rr_store *s, struct rr_catalog *c, unsigned nnodes,
			     unsigned rank, const char *parent, unsigned threads, char *name_out,
			     size_t cap, struct rr_restore_stats *stats, char *lease)
{
	const struct rr_catalog_entry *e;
	const char *damaged = NULL;
	unsigned fallbacks = 0, suspects = 0;
	char suspect[256] = "";
	size_t pos = 0;
	int rc = RR_ENOENT, walk;

	/* Newest first, reading manifests only as far as the walk goes: a store of many
	 * checkpoints costs a replacement machine no more than one of a few. */
	while ((walk = rr_catalog_next(c, s, &pos, &e)) == 0 && e) {
		struct rr_suspect late;
		char why[512];

		if (!e->committed) {
			rr_warn("checkpoint %s is not usable: %s", e->name, e->problem);
			continue;
		}
		if (rr_catalog_is_suspect(e)) {
			s_pass_over(e->name, e->suspect);
			if (!suspects++)
				snprintf(suspect, sizeof(suspect), "%s", e->name);
			continue;
		}
		/* Each node restores its own part; a store of another --nnodes is refused. */
		rc = rr_parts_view(s, c->run_id, e->manifest, nnodes, rank, why, sizeof(why));
		if (rc) {
			rr_error("%s", why);
			return rc;
		}
		if (damaged)
			rr_warn("falling back from damaged checkpoint %s to %s", damaged, e->name);
		rc = s_restore_leased(s, c->run_id, e->manifest, parent, threads, stats, why,
				      sizeof(why), lease);
		/* Every node honours a mark another node made meanwhile, as if listed. */
		if (rc == 0 && nnodes > 1 && (rc = s_marked_since(s, c->run_id, e, &late)) != 0) {
			if (lease)
				rr_reader_end(s, c->run_id, e->name, lease);
			if (rc < 0) {
				rr_error("cannot read the suspect mark of %s: %s", e->name,
					 rr_store_strerror(rc));
				return rc;
			}
			s_pass_over(e->name, &late);
			/* Its copy restored here is passed over as a listed one is (run.c sets
			 * such copies aside at start-up): the catalog now tells of the mark. */
			rc = rr_catalog_set_suspect(c, e->name, &late);
			if (rc)
				return rc;
			if (!suspects++)
				snprintf(suspect, sizeof(suspect), "%s", e->name);
			rc = RR_ENOENT;
			continue;
		}
		if (rc == 0) {
			snprintf(name_out, cap, "%s", e->name);
			stats->fallbacks = fallbacks;
			stats->suspects = suspects;
			snprintf(stats->suspect, sizeof(stats->suspect), "%s", suspect);
			return 0;
		}
		if (rc != RR_ECORRUPT || s->stopped) {
			if (s->stopped)
				return RR_ECANCELED;
			rr_error("restore of %s failed: %s", e->name, why);
			return rc;
		}
		rr_error("checkpoint %s is DAMAGED: %s", e->name, why);
		if (nnodes > 1)
			return s_damaged_for_every_node(s, c->run_id, e, nnodes, rank, why);
		s_damaged_fall_back(s, c, e, why);
		damaged = e->name;
		fallbacks++;
	}
	if (walk) {
		rr_error("cannot read the checkpoints of run '%s': %s", c->run_id,
			 rr_store_strerror(walk));
		return walk;
	}
	if (damaged)
		rr_error("no undamaged checkpoint left to fall back to after %s", damaged);
	return rc;
}
