#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rr/beneath.h"
#include "rr/buf.h"
#include "rr/catalog.h"
#include "rr/clock.h"
#include "rr/codec.h"
#include "dirwalk.h"
#include "rr/error.h"
#include "rr/format.h"
#include "rr/fp16.h"
#include "rr/fsutil.h"
#include "rr/layout.h"
#include "rr/marks.h"
#include "rr/log.h"
#include "packer.h"
#include "rr/persist.h"
#include "rr/pool.h"
#include "rr/ckpt_order.h"
#include "rr/progress.h"
#include "rr/quote.h"

/* Files of one checkpoint are held open for the whole persist, so that the trainer deleting
 * it meanwhile cannot pull them away: up to half the process's descriptor limit, within
 * these bounds. Past that, a file is opened again for each read (below the same held
 * directory, checked to be the same inode). */
#define S_HELD_MIN 64
#define S_HELD_MAX 65536
#include "rr/store_sealed.h"

/* How a segment is to be stored, before its data is seen: S_F32 is an F32 tensor whose
 * form --precision and its values decide (rr_codec_f32_encoding). */
enum s_policy { S_PLAIN, S_EXACT, S_F32 };

/* Phase 1 keeps up to this many bytes of what it read for phase 2 (a tensor of several chunks
 * is read once instead of twice when it fits); the rest is read again. It bounds what a
 * persist adds to the agent's memory: the 4 GB bench stays under 300 MB. */
#define RR_PERSIST_KEEP_BYTES ((size_t)64 << 20)

/* One chunk of one segment: the unit of work in both phases. */
struct s_task {
	size_t file, seg, chunk;
	uint64_t offset; /* in the file */
	size_t length;
};

struct s_seg_plan {
	enum s_policy policy;
	size_t first_task;
	int reused;
};

struct s_worker {
	struct rr_codec *codec;
	unsigned char *raw;
	struct rr_buf stored;
};

/* Segments of the previous manifest, sorted by their first chunk's original-bytes hash. */
struct s_reuse {
	size_t n;
	const struct rr_segment **segs;
};

/* A chunk the store held when this persist listed it, and when it was last written. */
struct s_stored {
	char sha[RR_SHA256_HEX_LEN + 1]; /* first: the sort and search key */
	int64_t mtime_ms;
};

/* The chunks the store already holds, listed at the start of a persist (on S3 one request
 * per 1000 keys instead of a HEAD per chunk) or taken from an earlier persist's listing
 * (struct rr_chunk_index), sorted for lookups.
 *
 * Deduplicating against a chunk another writer (or an earlier checkpoint) stored is safe
 * only while no gc deletes it before our manifest names it. gc deletes a chunk that no
 * manifest it read names, and only once its mtime is older than the grace period (default
 * 1 h). So a stored chunk counts as present only if it is younger than the grace minus a
 * margin (fresh_after); an older one is written again, which renews its mtime (a PUT of the
 * same content-addressed bytes: nothing else changes). A persist that writes its manifest
 * within the margin (a check in rr_persist_checkpoint makes sure) then names only chunks
 * that no gc could have found old enough; gc's own re-listing of manifests (gc.c) covers a
 * manifest that lands during its run. The margin is half the grace for routine persists and
 * S_URGENT_MARGIN_MS for a notice's, so that a notice's checkpoint, racing its deadline,
 * re-uploads nothing the routine ones renewed recently. Why a re-PUT and not a claim object
 * or a server-side copy: the store interface has put/get/list/del on every backend, a claim
 * would need every gc to read every writer's claims (and still race), and the cost is
 * bounded: an unchanged chunk (a frozen layer) is uploaded again at most once per grace/2,
 * by whichever writer next needs it. */
#define S_URGENT_MARGIN_MS (10 * 60 * 1000) /* far beyond any cloud's notice window */
struct s_known {
	struct s_stored *sha;
	size_t n, cap;
	int64_t fresh_after; /* wall ms: chunks written before it are written again */
	int64_t margin_ms;   /* time the persist may take from start_ms to its manifest */
	int64_t start_ms;    /* wall ms the ages are judged from: the persist's start, just
			      * before its listing (or its reuse of an earlier one) */
	/* Chunks this persist has claimed to write (a hash table: identical segments within one
	 * checkpoint are written once). */
	pthread_mutex_t lock;
	char (*claimed)[RR_SHA256_HEX_LEN + 1];
	size_t mask;
};

struct s_job {
	struct rr_store *store;
	const struct rr_persist_opts *opts;
	int root_fd;                 /* the checkpoint directory, opened without following links */
	const struct rr_dir_listing *l; /* what was listed: paths, inodes, sizes, mtimes */
	int *held;                   /* per file: its descriptor, or -1 to open it per read */
	struct rr_manifest *m;
	struct s_seg_plan **plans;   /* per file, per segment */
	size_t nplans;
	struct s_task *tasks;
	size_t ntasks;
	struct rr_f32_stats *stats;  /* per task, for lossy-policy segments */
	size_t *first;               /* phase 1: chunks of segments of several chunks */
	size_t nfirst;
	unsigned char **kept;        /* per task: phase 1's bytes kept for phase 2, or NULL */
	atomic_size_t kept_bytes;    /* their total, at most RR_PERSIST_KEEP_BYTES */
	size_t *todo;                /* phase 2: chunks whose segment is not (known to be) reused */
	size_t ntodo;
	size_t *turn;                /* the order the workers take a phase's chunks in */
	struct s_worker *workers;
	size_t raw_cap;              /* each worker's raw buffer: the longest task's bytes */
	struct s_reuse reuse;
	struct s_known known;
	int dry; /* the store has a manifest of this name: compare with it, write nothing */
	struct rr_progress *progress;
	struct rr_packer *packer;    /* phase 2: small chunks into packs, slot = todo index */
	atomic_uint_fast64_t new_bytes;
	atomic_uint_fast64_t refreshed;
	char (*theirs_sha)[RR_SHA256_HEX_LEN + 1]; /* dry: the stored manifest's chunks, sorted */
	size_t ntheirs_sha;
	atomic_size_t repaired;      /* dry: chunks the stored manifest names, stored again */
	struct rr_reason why;
};

static int s_on_known_chunk(const struct rr_store_entry *e, void *ud)
{
	struct s_known *k = ud;
	const char *name = strrchr(e->key, '/');
	void *grown;

	name = name ? name + 1 : e->key;
	if (strlen(name) != RR_SHA256_HEX_LEN)
		return 0; /* not a chunk (a temp file of another writer, say) */
	if (e->size == 0)
		return 0; /* no chunk is empty: what a server left of an upload cut off (s3rver
			   * keeps one), written again when needed */
	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 1024;
		grown = realloc(k->sha, k->cap * sizeof(*k->sha));
		if (!grown)
			return RR_ENOMEM;
		k->sha = grown;
	}
	memcpy(k->sha[k->n].sha, name, RR_SHA256_HEX_LEN + 1);
	k->sha[k->n++].mtime_ms = e->mtime_unix_ms;
	return 0;
}

static int s_cmp_sha(const void *a, const void *b)
{
	return memcmp(a, b, RR_SHA256_HEX_LEN);
}

/* Lists the run's chunks into k, sorted. */
static int s_known_list(struct rr_store *s, const char *run_id, struct s_known *k)
{
	char key[RR_KEY_MAX];
	int rc = rr_key_chunks_prefix(key, run_id);

	if (!rc)
		rc = rr_store_list(s, key, s_on_known_chunk, k);
	if (!rc && k->n)
		qsort(k->sha, k->n, sizeof(*k->sha), s_cmp_sha);
	return rc;
}

/* The run's chunks as persists saw them (persist.h): a listing, plus what persists wrote
 * since. Relying on an older listing is as safe as on a fresh one because a chunk's age is
 * judged at this persist's start (struct s_known): one that was in the listing and is
 * younger than fresh_after cannot have met a gc since, which deletes only chunks older than
 * the grace. What the listing misses (another writer's uploads since) is uploaded again. */
struct rr_chunk_index {
	struct s_stored *sha; /* sorted */
	size_t n;
	int64_t listed_ms; /* 0: nothing listed yet, or forgotten after a failure */
};

struct rr_chunk_index *rr_chunk_index_new(void)
{
	return calloc(1, sizeof(struct rr_chunk_index));
}

struct rr_chunk_index *rr_chunk_index_of_catalog(const struct rr_catalog *c, int64_t listed_ms)
{
	struct rr_chunk_index *x = rr_chunk_index_new();

	if (!x || !(x->sha = malloc((c->nchunks ? c->nchunks : 1) * sizeof(*x->sha)))) {
		free(x);
		return NULL;
	}
	/* The catalog's chunks are sorted by their hex name too; an empty one is no chunk
	 * (s_on_known_chunk). */
	for (size_t i = 0; i < c->nchunks; i++) {
		if (!c->chunks[i].size)
			continue;
		memcpy(x->sha[x->n].sha, c->chunks[i].sha256, sizeof(x->sha[x->n].sha));
		x->sha[x->n++].mtime_ms = c->chunks[i].mtime_unix_ms;
	}
	x->listed_ms = listed_ms;
	return x;
}

void rr_chunk_index_destroy(struct rr_chunk_index *x)
{
	if (x) {
		free(x->sha);
		free(x);
	}
}

static void s_index_forget(struct rr_chunk_index *x)
{
	free(x->sha);
	x->sha = NULL;
	x->n = 0;
	x->listed_ms = 0;
}

/* The store's chunks for this persist, into k: from opts->chunks while its listing is
 * younger than half the grace (an urgent persist takes it at any age: its deadline should
 * not pay for a listing), else listed, and the listing kept in opts->chunks for the next.
 * gc_grace_ms 0: no gc runs, every stored chunk is relied on. */
static int s_known_load(struct rr_store *s, const struct rr_persist_opts *o, struct s_known *k)
{
	struct rr_chunk_index *x = o->chunks;
	int64_t grace = o->gc_grace_ms;
	int rc = 0;

	/* The store's clock: chunk ages are its listing's, judged as another machine's gc
	 * judges them (gc.c), however far this machine's clock is off. */
	k->start_ms = rr_store_now_ms(s);
	k->margin_ms = grace / 2;
	if (o->urgent && k->margin_ms > S_URGENT_MARGIN_MS)
		k->margin_ms = S_URGENT_MARGIN_MS;
	k->fresh_after = grace > 0 ? k->start_ms - (grace - k->margin_ms) : INT64_MIN;
	if (x && x->listed_ms &&
	    (o->urgent || grace <= 0 || k->start_ms - x->listed_ms < grace / 2)) {
		k->sha = malloc((x->n ? x->n : 1) * sizeof(*k->sha));
		if (!k->sha)
			return RR_ENOMEM;
		if (x->n)
			memcpy(k->sha, x->sha, x->n * sizeof(*k->sha));
		k->n = k->cap = x->n;
		return 0;
	}
	rc = s_known_list(s, o->run_id, k);
	if (x) {
		s_index_forget(x);
		x->sha = !rc ? malloc((k->n ? k->n : 1) * sizeof(*x->sha)) : NULL;
		if (x->sha) {
			if (k->n)
				memcpy(x->sha, k->sha, k->n * sizeof(*x->sha));
			x->n = k->n;
			x->listed_ms = k->start_ms;
		}
	}
	return rc;
}

/* After a persist that succeeded: the chunks it wrote (claimed, so written, and stored
 * meanwhile) join opts->chunks, aged from its start (no later than their real mtime, so
 * never judged younger than they are). Out of memory: the index is forgotten and the
 * next persist lists. */
static void s_index_add_written(struct rr_chunk_index *x, const struct s_known *k)
{
	size_t add = 0, n = x->n;
	struct s_stored *grown;

	if (!x->listed_ms || !k->claimed)
		return;
	for (size_t i = 0; i <= k->mask; i++)
		add += k->claimed[i][0] != '\0';
	grown = realloc(x->sha, (n + add ? n + add : 1) * sizeof(*x->sha));
	if (!grown) {
		s_index_forget(x);
		return;
	}
	x->sha = grown;
	for (size_t i = 0; i <= k->mask; i++) {
		struct s_stored *e;

		if (!k->claimed[i][0])
			continue;
		e = n ? bsearch(k->claimed[i], x->sha, n, sizeof(*x->sha), s_cmp_sha) : NULL;
		if (!e) {
			e = &x->sha[x->n++];
			memcpy(e->sha, k->claimed[i], RR_SHA256_HEX_LEN + 1);
			e->mtime_ms = INT64_MIN;
		}
		if (e->mtime_ms < k->start_ms)
			e->mtime_ms = k->start_ms; /* written again: younger now */
	}
	if (x->n > n)
		qsort(x->sha, x->n, sizeof(*x->sha), s_cmp_sha);
}

/* 1 when the store holds sha, written recently enough to rely on (see struct s_known). */
static int s_known_has(const struct s_known *k, const char *sha)
{
	const struct s_stored *e = k->n ? bsearch(sha, k->sha, k->n, sizeof(*k->sha), s_cmp_sha)
					: NULL;
	return e && e->mtime_ms >= k->fresh_after;
}

/* 1 when the store holds sha, however old. */
static int s_known_stored(const struct s_known *k, const char *sha)
{
	return k->n && bsearch(sha, k->sha, k->n, sizeof(*k->sha), s_cmp_sha) != NULL;
}

/* Room to claim up to n chunks. */
static int s_claims_init(struct s_known *k, size_t n)
{
	size_t size = 16;

	while (size < 2 * n)
		size *= 2;
	k->claimed = calloc(size, sizeof(*k->claimed));
	k->mask = size - 1;
	pthread_mutex_init(&k->lock, NULL);
	return k->claimed ? 0 : RR_ENOMEM;
}

/* 1 when the caller is the first to claim sha and must write it, 0 when it is already in
 * the store or claimed by another worker of this persist. */
static int s_claim(struct s_known *k, const char *sha)
{
	char head[17];
	size_t i;
	int mine = 0;

	if (s_known_has(k, sha))
		return 0;
	memcpy(head, sha, 16); /* the first 64 bits of a SHA-256 are hash enough */
	head[16] = '\0';
	i = (size_t)strtoull(head, NULL, 16);
	pthread_mutex_lock(&k->lock);
	for (i &= k->mask;; i = (i + 1) & k->mask) {
		if (!k->claimed[i][0]) {
			memcpy(k->claimed[i], sha, RR_SHA256_HEX_LEN + 1);
			mine = 1;
			break;
		}
		if (memcmp(k->claimed[i], sha, RR_SHA256_HEX_LEN) == 0)
			break;
	}
	pthread_mutex_unlock(&k->lock);
	return mine;
}

/* ---- reading the checkpoint: held descriptors, checked against the listing ---- */

/* Why an open below the checkpoint failed, for the persist's one error line. */
static int s_open_failed(struct s_job *j, size_t f, int rc)
{
	char q[RR_QUOTE_CAP];

	rr_quote_str(q, j->l->files[f].path);
	if (rc == RR_EPATH)
		rr_reason_set(&j->why, "%s is no longer the regular file that was listed (a "
			      "symlink, FIFO, device or other file took its place)", q);
	else if (rc == RR_ENOENT)
		rr_reason_set(&j->why, "%s disappeared while being persisted", q);
	else
		rr_reason_set(&j->why, "cannot open %s: %s", q, rr_strerror(rc));
	return rc;
}

/* The descriptor to read file f from: the held one, or (*owned = 1) a fresh one. */
static int s_file_fd(struct s_job *j, size_t f, int *fd, int *owned)
{
	int rc;

	*owned = 0;
	*fd = j->held[f];
	if (*fd >= 0)
		return 0;
	rc = rr_open_beneath(j->root_fd, j->l->files[f].path, &j->l->files[f].st, fd, NULL);
	if (rc)
		return s_open_failed(j, f, rc);
	*owned = 1;
	return 0;
}

/* A file rewritten after it was listed would be stored as a mix of old and new bytes (or
 * with hashes of bytes other than those encoded), so a change of size or modification
 * time fails the persist instead. */
static int s_unchanged(struct s_job *j, size_t f, int fd)
{
	const struct stat *was = &j->l->files[f].st;
	char q[RR_QUOTE_CAP];
	struct stat st;

	if (fstat(fd, &st) != 0) {
		rr_reason_set(&j->why, "cannot stat %s: %s", rr_quote_str(q, j->l->files[f].path),
			      strerror(errno));
		return rr_error_from_errno(errno);
	}
	if (st.st_size == was->st_size && st.st_mtim.tv_sec == was->st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == was->st_mtim.tv_nsec)
		return 0;
	rr_reason_set(&j->why, "%s changed while being persisted (its size or modification time "
		      "is not what it was at the commit)", rr_quote_str(q, j->l->files[f].path));
	return RR_EIO;
}

/* Opens every listed file once: each must still be the regular file listed. Descriptors
 * beyond S_HELD_MAX, or once the process runs short of them, are not held. */
static int s_hold_files(struct s_job *j)
{
	struct rlimit rl;
	size_t cap = S_HELD_MIN;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rlim_t half = rl.rlim_cur == RLIM_INFINITY ? S_HELD_MAX : rl.rlim_cur / 2;
		cap = half < S_HELD_MIN ? S_HELD_MIN : half > S_HELD_MAX ? S_HELD_MAX : (size_t)half;
	}
	j->held = malloc((j->l->n ? j->l->n : 1) * sizeof(*j->held));
	if (!j->held)
		return RR_ENOMEM;
	for (size_t f = 0; f < j->l->n; f++)
		j->held[f] = -1;
	for (size_t f = 0; f < j->l->n && f < cap; f++) {
		int rc = rr_open_beneath(j->root_fd, j->l->files[f].path, &j->l->files[f].st,
					 &j->held[f], NULL);
		if (rc == RR_EIO && (errno == EMFILE || errno == ENFILE))
			break; /* read these by opening them again */
		if (rc)
			return s_open_failed(j, f, rc);
	}
	return 0;
}

/* ---- planning: which segments and chunks, stored how ---- */

/* A file its format's strict reader refuses is stored byte-exact; say so once per path for
 * the life of the process, not at every checkpoint. */
static void s_warn_refused_once(const char *path, const char *format, const char *why)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char *warned[64];
	static unsigned n;
	int seen = 0;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < n && !seen; i++)
		seen = strcmp(warned[i], path) == 0;
	if (!seen && n < 64)
		warned[n++] = strdup(path);
	pthread_mutex_unlock(&lock);
	if (!seen) {
		char q[RR_QUOTE_CAP];
		rr_warn("%s is not a valid %s file (%s); it is stored byte-exact",
			rr_quote_str(q, path), format, why);
	}
}

static enum s_policy s_tensor_policy(const struct rr_persist_opts *o, const char *name,
				     enum rr_st_dtype dtype)
{
	for (unsigned i = 0; i < o->n_exact_globs; i++)
		if (fnmatch(o->exact_globs[i], name, 0) == 0)
			return S_EXACT;
	/* Other dtypes are stored lossless. */
	return dtype != RR_ST_F32 || o->precision == RR_PRECISION_EXACT ? S_EXACT : S_F32;
}

/* Appends a segment covering [offset, offset+length) of fe. */
static int s_add_segment(struct rr_file_entry *fe, struct s_seg_plan *plans, size_t *cap,
			 uint64_t offset, uint64_t length, enum s_policy policy)
{
	if (fe->nsegs == *cap)
		return RR_ENOMEM; /* capacity was computed beforehand */
	struct rr_segment *seg = &fe->segs[fe->nsegs];
	memset(seg, 0, sizeof(*seg));
	seg->offset = offset;
	seg->length = length;
	seg->encoding = policy == S_PLAIN ? RR_ENC_ZSTD : RR_ENC_SHUFFLE_ZSTD;
	plans[fe->nsegs].policy = policy;
	fe->nsegs++;
	return 0;
}

static int s_set_tensor(struct rr_segment *seg, const struct rr_format_piece *t)
{
	seg->tensor = strdup(t->name);
	snprintf(seg->dtype, sizeof(seg->dtype), "%s", rr_st_dtype_name(t->dtype));
	seg->ndim = t->ndim;
	if (t->ndim) {
		seg->shape = malloc(t->ndim * sizeof(*seg->shape));
		if (seg->shape)
			memcpy(seg->shape, t->shape, t->ndim * sizeof(*seg->shape));
	}
	return !seg->tensor || (t->ndim && !seg->shape) ? RR_ENOMEM : 0;
}

/* Plain bytes in segments of at most RR_SEGMENT_BYTES. */
static int s_plan_plain(struct rr_file_entry *fe, struct s_seg_plan *plans, size_t *cap,
			uint64_t from, uint64_t to)
{
	int rc = 0;
	for (uint64_t off = from; !rc && off < to; off += RR_SEGMENT_BYTES)
		rc = s_add_segment(fe, plans, cap, off,
				   to - off < RR_SEGMENT_BYTES ? to - off : RR_SEGMENT_BYTES, S_PLAIN);
	return rc;
}

static int s_plan_file(struct s_job *j, size_t f)
{
	struct rr_file_entry *fe = &j->m->files[f];
	struct rr_format_plan plan = { 0 };
	const struct rr_format *used, *refused;
	char why[256] = "";
	size_t cap = 1;
	int fd, owned, rc;

	rc = s_file_fd(j, f, &fd, &owned);
	if (rc)
		return rc;
	rc = rr_format_plan_fd(fd, fe->path, fe->size, &plan, &used, &refused, why,
			       sizeof(why));
	/* The plan rests on the bytes read: they must be those of the listed file. */
	if (!rc)
		rc = s_unchanged(j, f, fd);
	if (owned)
		close(fd);
	if (rc) {
		if (!j->why.text[0])
			rr_reason_set(&j->why, "cannot read %s: %s", fe->path, why);
		goto out;
	}
	if (refused)
		s_warn_refused_once(fe->path, refused->name, why);
	snprintf(fe->format, sizeof(fe->format), "%s", used->name);
	for (size_t i = 0; i < plan.n; i++)
		cap += plan.pieces[i].tensor ? 1 : (size_t)(plan.pieces[i].length / RR_SEGMENT_BYTES) + 1;
	fe->segs = calloc(cap, sizeof(*fe->segs));
	j->plans[f] = calloc(cap, sizeof(**j->plans));
	if (!fe->segs || !j->plans[f]) {
		rc = RR_ENOMEM;
		goto out;
	}
	for (size_t i = 0; !rc && i < plan.n; i++) {
		const struct rr_format_piece *pc = &plan.pieces[i];
		if (!pc->tensor) {
			rc = s_plan_plain(fe, j->plans[f], &cap, pc->offset, pc->offset + pc->length);
			continue;
		}
		rc = s_add_segment(fe, j->plans[f], &cap, pc->offset, pc->length,
				   s_tensor_policy(j->opts, pc->name, pc->dtype));
		if (!rc)
			rc = s_set_tensor(&fe->segs[fe->nsegs - 1], pc);
	}
out:
	rr_format_plan_free(&plan);
	return rc;
}

/* Cuts every segment into chunks (whole elements, at most RR_SEGMENT_BYTES) and lists the
 * tasks, file by file, segment by segment. A segment of one chunk (most tensors, every plain
 * segment) is read once: hashed, analysed and encoded in phase 2. A segment of several
 * chunks needs all of them hashed (and, for lossy forms, its scale known) before any is
 * encoded, so phase 1 reads those first. */
static int s_plan_chunks(struct s_job *j)
{
	size_t nt = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t f = 0; f < j->m->nfiles; f++) {
			struct rr_file_entry *fe = &j->m->files[f];
			for (size_t g = 0; g < fe->nsegs; g++) {
				struct rr_segment *seg = &fe->segs[g];
				size_t k = (size_t)((seg->length + RR_SEGMENT_BYTES - 1) / RR_SEGMENT_BYTES);
				if (pass == 0) {
					nt += k;
					continue;
				}
				seg->chunks = calloc(k, sizeof(*seg->chunks));
				if (!seg->chunks)
					return RR_ENOMEM;
				seg->nchunks = k;
				j->plans[f][g].first_task = j->ntasks;
				for (size_t c = 0; c < k; c++) {
					uint64_t at = (uint64_t)c * RR_SEGMENT_BYTES;
					uint64_t len = seg->length - at;
					if (k > 1)
						j->first[j->nfirst++] = j->ntasks;
					j->tasks[j->ntasks++] = (struct s_task){
						.file = f, .seg = g, .chunk = c, .offset = seg->offset + at,
						.length = len < RR_SEGMENT_BYTES ? (size_t)len : RR_SEGMENT_BYTES,
					};
				}
			}
		}
		if (pass == 0) {
			j->tasks = calloc(nt ? nt : 1, sizeof(*j->tasks));
			j->stats = calloc(nt ? nt : 1, sizeof(*j->stats));
			j->first = calloc(nt ? nt : 1, sizeof(*j->first));
			j->todo = calloc(nt ? nt : 1, sizeof(*j->todo));
			j->turn = calloc(nt ? nt : 1, sizeof(*j->turn));
			j->kept = calloc(nt ? nt : 1, sizeof(*j->kept));
			if (!j->tasks || !j->stats || !j->first || !j->todo || !j->turn || !j->kept)
				return RR_ENOMEM;
		}
	}
	return 0;
}

static int s_build_manifest(struct s_job *j, const char *name, int64_t committed_ms,
			    const struct rr_dir_listing *l)
{
	struct rr_manifest *m = calloc(1, sizeof(*m));
	int rc = 0;

	j->m = m;
	if (!m)
		return RR_ENOMEM;
	m->run_id = strdup(j->opts->run_id);
	m->checkpoint = strdup(name);
	m->host = j->opts->host ? strdup(j->opts->host) : NULL;
	m->committed_unix_ms = committed_ms;
	m->files = calloc(l->n ? l->n : 1, sizeof(*m->files));
	j->plans = calloc(l->n ? l->n : 1, sizeof(*j->plans));
	j->nplans = l->n;
	if (!m->run_id || !m->checkpoint || !m->files || !j->plans ||
	    (j->opts->host && !m->host))
		return RR_ENOMEM;
	for (size_t i = 0; !rc && i < l->n; i++) {
		struct rr_file_entry *fe = &m->files[m->nfiles++];
		fe->path = strdup(l->files[i].path);
		fe->mode = l->files[i].mode;
		fe->size = l->files[i].size;
		rc = fe->path ? s_plan_file(j, i) : RR_ENOMEM;
	}
	return rc ? rc : s_plan_chunks(j);
}

/* ---- phase 1: hash every chunk's original bytes; statistics of F32 tensors ---- */

static int s_read_chunk(struct s_job *j, const struct s_task *t, unsigned char *raw)
{
	const struct rr_file_entry *fe = &j->m->files[t->file];
	char q[RR_QUOTE_CAP];
	size_t got = 0;
	int fd, owned, rc;

	rc = s_file_fd(j, t->file, &fd, &owned);
	if (rc)
		return rc;
	rc = rr_pread_full(fd, raw, t->length, (int64_t)t->offset, &got);
	if (rc)
		rr_reason_set(&j->why, "cannot read %s: %s", rr_quote_str(q, fe->path),
			      rr_strerror(rc));
	else if (got < t->length)
		rr_reason_set(&j->why, "cannot read %s: file shrank while being read",
			      rr_quote_str(q, fe->path));
	if (!rc && got < t->length)
		rc = RR_EIO;
	/* After the read: what was read is what was there when the file was listed. */
	if (!rc)
		rc = s_unchanged(j, t->file, fd);
	if (owned)
		close(fd);
	return rc;
}

/* Records the chunk's original-bytes hash and, for lossy-policy segments, its statistics. */
static void s_hash_and_stats(struct s_job *j, size_t t, const unsigned char *raw)
{
	const struct s_task *task = &j->tasks[t];
	struct rr_segment *seg = &j->m->files[task->file].segs[task->seg];
	enum s_policy p = j->plans[task->file][task->seg].policy;

	rr_xxh128_hex(raw, task->length, seg->chunks[task->chunk].raw_xxh128);
	seg->chunks[task->chunk].size = task->length;
	rr_f32_stats_init(&j->stats[t]);
	if (p == S_F32)
		rr_f32_stats_update(&j->stats[t], raw, task->length / 4);
}

/* Phase 1's bytes of task t, kept for phase 2 when the budget allows (a buffer of the task's
 * length), else the worker's buffer. Keeping them saves phase 2 a second read and hash. */
static unsigned char *s_keep(struct s_job *j, size_t t, unsigned char *worker_raw)
{
	size_t len = j->tasks[t].length;
	unsigned char *p;

	if (j->opts->reread)
		return worker_raw;
	if (atomic_fetch_add(&j->kept_bytes, len) + len > RR_PERSIST_KEEP_BYTES ||
	    !(p = rr_buf_big_alloc(len))) {
		atomic_fetch_sub(&j->kept_bytes, len);
		return worker_raw;
	}
	j->kept[t] = p;
	return p;
}

static void s_unkeep(struct s_job *j, size_t t)
{
	if (!j->kept[t])
		return;
	rr_buf_big_free(j->kept[t], j->tasks[t].length);
	j->kept[t] = NULL;
	atomic_fetch_sub(&j->kept_bytes, j->tasks[t].length);
}

static int s_analyse(size_t k, unsigned worker, void *ud)
{
	struct s_job *j = ud;
	size_t t = j->first[j->turn[k]];
	unsigned char *raw = s_keep(j, t, j->workers[worker].raw);
	int rc = s_read_chunk(j, &j->tasks[t], raw);
	if (!rc)
		s_hash_and_stats(j, t, raw);
	return rc;
}

/* ---- between the phases: each tensor's encoding; unchanged segments ---- */

static void s_choose_encoding(struct s_job *j, size_t f, size_t g)
{
	struct rr_segment *seg = &j->m->files[f].segs[g];
	const struct s_seg_plan *plan = &j->plans[f][g];
	struct rr_f32_stats st;

	if (plan->policy != S_F32)
		return;
	rr_f32_stats_init(&st);
	for (size_t c = 0; c < seg->nchunks; c++)
		rr_f32_stats_merge(&st, &j->stats[plan->first_task + c]);
	seg->encoding = rr_codec_f32_encoding(j->opts->precision, &st, seg->length / 4,
					      &seg->scale_exp);
}

static int s_cmp_reuse(const void *a, const void *b)
{
	const struct rr_segment *x = *(const struct rr_segment *const *)a;
	const struct rr_segment *y = *(const struct rr_segment *const *)b;
	return strcmp(x->chunks[0].raw_xxh128, y->chunks[0].raw_xxh128);
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
			if (prev->files[f].segs[g].nchunks)
				r->segs[r->n++] = &prev->files[f].segs[g];
	qsort(r->segs, r->n, sizeof(*r->segs), s_cmp_reuse);
	return 0;
}

/* 1 when old holds exactly what seg would be stored as. */
static int s_same_segment(const struct rr_segment *old, const struct rr_segment *seg)
{
	if (old->length != seg->length || old->nchunks != seg->nchunks ||
	    old->encoding != seg->encoding || old->scale_exp != seg->scale_exp ||
	    strcmp(old->dtype, seg->dtype) != 0)
		return 0;
	for (size_t c = 0; c < seg->nchunks; c++)
		if (old->chunks[c].size != seg->chunks[c].size ||
		    strcmp(old->chunks[c].raw_xxh128, seg->chunks[c].raw_xxh128) != 0)
			return 0;
	return 1;
}

/* The previous checkpoint's segment with the same bytes stored the same way, if the store
 * still has its chunks (another machine's gc may have removed them). */
static const struct rr_segment *s_reuse_find(struct s_job *j, const struct rr_segment *seg)
{
	const struct s_reuse *r = &j->reuse;
	size_t lo = 0, hi = r->n;

	while (lo < hi) { /* first entry whose key is not below seg's */
		size_t mid = (lo + hi) / 2;
		if (strcmp(r->segs[mid]->chunks[0].raw_xxh128, seg->chunks[0].raw_xxh128) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < r->n && !strcmp(r->segs[lo]->chunks[0].raw_xxh128, seg->chunks[0].raw_xxh128);
	     lo++) {
		const struct rr_segment *old = r->segs[lo];
		int present = s_same_segment(old, seg);
		/* Comparing with a manifest already stored (dry): its chunks need only be there
		 * (that manifest names them, so no gc takes them); one that is gone is encoded
		 * and stored again, or the checkpoint would be called durable without it. */
		for (size_t c = 0; present && c < old->nchunks; c++)
			present = j->dry ? s_known_stored(&j->known, old->chunks[c].sha256)
					 : s_known_has(&j->known, old->chunks[c].sha256);
		if (present)
			return old;
	}
	return NULL;
}

/* Once every chunk of segment (f, g) is hashed: chooses its encoding and, when the previous
 * checkpoint stored the same bytes the same way, takes its chunks. Returns 1 when reused. */
static int s_settle(struct s_job *j, size_t f, size_t g)
{
	struct rr_segment *seg = &j->m->files[f].segs[g];
	const struct rr_segment *old;

	s_choose_encoding(j, f, g);
	old = s_reuse_find(j, seg);
	if (!old)
		return 0;
	/* Unchanged since the previous checkpoint: not encoded, not written. */
	memcpy(seg->chunks, old->chunks, old->nchunks * sizeof(*seg->chunks));
	j->plans[f][g].reused = 1;
	rr_progress_add(j->progress, seg->length);
	return 1;
}

/* After phase 1: settles the segments of several chunks; lists what phase 2 encodes. */
static void s_between_phases(struct s_job *j)
{
	for (size_t f = 0; f < j->m->nfiles; f++) {
		struct rr_file_entry *fe = &j->m->files[f];
		for (size_t g = 0; g < fe->nsegs; g++) {
			if (fe->segs[g].nchunks > 1 && s_settle(j, f, g)) {
				for (size_t c = 0; c < fe->segs[g].nchunks; c++)
					s_unkeep(j, j->plans[f][g].first_task + c);
				continue;
			}
			for (size_t c = 0; c < fe->segs[g].nchunks; c++)
				j->todo[j->ntodo++] = j->plans[f][g].first_task + c;
		}
	}
}

static void s_count(const struct s_job *j, struct rr_persist_stats *st)
{
	for (size_t f = 0; f < j->m->nfiles; f++)
		for (size_t g = 0; g < j->m->files[f].nsegs; g++) {
			const struct rr_segment *seg = &j->m->files[f].segs[g];
			st->segments++;
			st->reused_segments += (uint64_t)j->plans[f][g].reused;
			if (seg->tensor)
				st->tensors[seg->encoding]++;
		}
}

/* ---- phase 2: encode, hash, store ---- */

/* Whether this persist writes chunk sha: one it claims first (identical chunks are written
 * once). Compared with a manifest already stored (dry), only one the store lacks: that
 * manifest names it, so it was lost (another machine's retention, a hand) and is repaired. */
static int s_writes(struct s_job *j, const char *sha)
{
	if (j->dry && (s_known_stored(&j->known, sha) ||
		       !bsearch(sha, j->theirs_sha, j->ntheirs_sha, sizeof(*j->theirs_sha), s_cmp_sha)))
		return 0;
	if (!s_claim(&j->known, sha))
		return 0;
	if (j->dry)
		atomic_fetch_add(&j->repaired, 1);
	return 1;
}

/* Stores one closed pack (unless the store has it) and points its chunks at it. */
static int s_store_pack(struct s_job *j, struct rr_pack *pk)
{
	char sha[RR_SHA256_HEX_LEN + 1], key[RR_KEY_MAX];
	unsigned char *data = pk->buf + pk->before;
	int rc = rr_store_chunk_address(j->store, data, pk->len, sha);

	for (size_t k = 0; !rc && k < pk->n; k++) {
		const struct s_task *t = &j->tasks[j->todo[pk->slots[k]]];
		struct rr_chunk_ref *ref = &j->m->files[t->file].segs[t->seg].chunks[t->chunk];
		memcpy(ref->sha256, sha, sizeof(sha));
		ref->pack_offset = pk->offsets[k];
	}
	if (!rc)
		rc = rr_key_chunk(key, j->opts->run_id, sha);
	if (rc || !s_writes(j, sha))
		return rc;
	rc = rr_store_put_scratch(j->store, key, data, pk->len,
				  &(struct rr_put_opts){ .sha256_hex = sha }, NULL);
	if (rc) {
		rr_reason_set(&j->why, "cannot store a pack of %zu chunks: %s", pk->n,
			      rr_store_strerror(rc));
		return rc;
	}
	atomic_fetch_add(&j->new_bytes, pk->len);
	if (s_known_stored(&j->known, sha))
		atomic_fetch_add(&j->refreshed, 1);
	return 0;
}

/* Hands todo slot i to the packer (stored bytes to pack, or NULL) and stores the packs
 * that closes. */
static int s_to_packer(struct s_job *j, size_t i, const unsigned char *stored, size_t len,
		       const char *raw_xxh128)
{
	struct rr_pack **closed = NULL;
	size_t nclosed = 0;
	char head[17] = "0";
	int rc;

	if (raw_xxh128)
		memcpy(head, raw_xxh128, 16);
	head[16] = '\0';
	rc = rr_packer_put(j->packer, i, stored, len, strtoull(head, NULL, 16), &closed,
			   &nclosed);
	for (size_t k = 0; k < nclosed; k++) {
		if (!rc)
			rc = s_store_pack(j, closed[k]);
		rr_packer_recycle(j->packer, closed[k]);
	}
	free(closed);
	return rc;
}

static int s_encode(size_t k, unsigned worker, void *ud)
{
	struct s_job *j = ud;
	size_t i = j->turn[k]; /* the chunk's slot in todo (and the packer) */
	const struct s_task *t = &j->tasks[j->todo[i]];
	struct s_worker *w = &j->workers[worker];
	const struct rr_file_entry *fe = &j->m->files[t->file];
	struct rr_segment *seg = &fe->segs[t->seg];
	struct rr_chunk_ref *ref = &seg->chunks[t->chunk];
	struct rr_chunk_form form = rr_chunk_form_of(seg);
	char key[RR_KEY_MAX];
	const unsigned char *raw = j->kept[j->todo[i]];
	int rc = raw ? 0 : s_read_chunk(j, t, w->raw);

	if (rc)
		return rc;
	if (seg->nchunks == 1) {
		raw = w->raw;
		s_hash_and_stats(j, j->todo[i], raw);
		if (s_settle(j, t->file, t->seg))
			return s_to_packer(j, i, NULL, 0, NULL);
		form = rr_chunk_form_of(seg);
	} else if (!raw) {
		/* Hashed in phase 1, read again now: the bytes encoded must be the bytes hashed,
		 * or restore and verify would call the checkpoint damaged. */
		char xxh[RR_XXH128_HEX_LEN + 1], q[RR_QUOTE_CAP];
		raw = w->raw;
		rr_xxh128_hex(raw, t->length, xxh);
		if (strcmp(xxh, ref->raw_xxh128) != 0) {
			rr_reason_set(&j->why, "%s changed while being persisted (its bytes differ "
				      "between two reads)", rr_quote_str(q, fe->path));
			return RR_EIO;
		}
	}
	/* Room around the stored bytes lets an encrypting store seal them in place. */
	size_t before = rr_store_scratch_before(j->store);
	rc = rr_codec_encode_framed(w->codec, &form, raw, t->length, before,
				    RR_STORE_SCRATCH_AFTER, &w->stored);
	s_unkeep(j, j->todo[i]);
	if (rc) {
		char q[RR_QUOTE_CAP];
		rr_reason_set(&j->why, "cannot encode %s: %s", rr_quote_str(q, fe->path),
			      rr_strerror(rc));
		return rc;
	}
	unsigned char *stored = w->stored.data + before;
	size_t stored_len = w->stored.len - before;
	if (!j->opts->no_packs && stored_len < RR_PACK_SMALL_BYTES) {
		/* Small: it goes into a pack, stored when the pack closes. */
		ref->stored_size = stored_len;
		ref->packed = 1;
		rc = s_to_packer(j, i, stored, stored_len, ref->raw_xxh128);
		if (!rc)
			rr_progress_add(j->progress, t->length);
		return rc;
	}
	/* The SHA-256 of the stored bytes, or with encryption a keyed hash of them. */
	rc = rr_store_chunk_address(j->store, stored, stored_len, ref->sha256);
	ref->stored_size = stored_len;
	if (!rc)
		rc = rr_key_chunk(key, j->opts->run_id, ref->sha256);
	if (rc)
		return rc;
	/* Content-addressed: a chunk already in the store is not written again. */
	if (s_writes(j, ref->sha256)) {
		struct rr_put_opts po = { .sha256_hex = ref->sha256 };
		rc = rr_store_put_scratch(j->store, key, stored, stored_len, &po, NULL);
		if (rc) {
			char q[RR_QUOTE_CAP];
			rr_reason_set(&j->why, "cannot store a chunk of %s: %s",
				      rr_quote_str(q, fe->path), rr_store_strerror(rc));
			return rc;
		}
		atomic_fetch_add(&j->new_bytes, stored_len);
		if (s_known_stored(&j->known, ref->sha256))
			atomic_fetch_add(&j->refreshed, 1);
	}
	rr_progress_add(j->progress, t->length);
	return s_to_packer(j, i, NULL, 0, NULL);
}

/* How many chunks the manifest names that the store, listed now, lacks (*missing). */
static int s_count_missing(struct s_job *j, size_t *missing)
{
	struct s_known now = { 0 };
	int rc = s_known_list(j->store, j->opts->run_id, &now);

	*missing = 0;
	for (size_t f = 0; !rc && f < j->m->nfiles; f++) {
		const struct rr_file_entry *fe = &j->m->files[f];
		for (size_t g = 0; g < fe->nsegs; g++)
			for (size_t c = 0; c < fe->segs[g].nchunks; c++)
				*missing += !s_known_stored(&now, fe->segs[g].chunks[c].sha256);
	}
	free(now.sha);
	return rc;
}

/* A persist that took longer than its margin since it started (and listed the chunks, or
 * took an earlier listing) may name chunks that a gc (of another machine) has since found
 * old and unreferenced: list them again and refuse to write a manifest that names a
 * missing one. Faster persists need no check (struct s_known says why). */
static int s_check_still_stored(struct s_job *j)
{
	size_t missing = 0;
	int rc;

	if (j->opts->gc_grace_ms <= 0 ||
	    rr_store_now_ms(j->store) - j->known.start_ms <= j->known.margin_ms)
		return 0;
	rc = s_count_missing(j, &missing);
	if (!rc && missing) {
		rr_error("persist of %s: %zu chunk(s) were deleted while it was persisted (another "
			 "machine's retention); no manifest written, the next checkpoint stores them "
			 "again", j->m->checkpoint, missing);
		rc = RR_EPRECOND;
	}
	return rc;
}

/* After the manifest, 1 when a chunk it names is missing (the caller stores it again). Two
 * cases ask: a chunk this persist wrote again to renew it may still be deleted by a gc
 * elsewhere that listed it as old and unreferenced before, and the manifests before this one
 * landed (gc.c, s_delete_chunks_batched), which a store that deletes only what was not
 * written since (rr_store_has_del_if_old) rules out; and a persist that outlasted its margin
 * relied on chunks it did not write, which such a gc may delete after the persist's last
 * look (s_check_still_stored) and before its manifest, on any store. */
static int s_chunk_lost_after_manifest(struct s_job *j)
{
	size_t missing = 0;
	int renewed = atomic_load(&j->refreshed) && !rr_store_has_del_if_old(j->store);
	int outlasted = rr_store_now_ms(j->store) - j->known.start_ms > j->known.margin_ms;

	if (j->opts->gc_grace_ms <= 0 || (!renewed && !outlasted))
		return 0;
	return s_count_missing(j, &missing) == 0 && missing > 0;
}

/* Reads and checks the manifest at key (another writer's, or this one's from before). */
static int s_load_manifest(struct rr_store *s, const char *key, const char *name,
			   struct rr_manifest **out, char *etag_out)
{
	struct rr_buf b;
	char why[200] = "";
	int rc;

	rr_buf_init(&b, RR_MANIFEST_MAX_BYTES);
	rc = rr_store_get(s, key, &b, etag_out);
	if (!rc)
		rc = rr_manifest_parse((const char *)b.data, b.len, out, why, sizeof(why));
	if (rc && rc != RR_ENOENT)
		rr_error("%s is in the store but its manifest cannot be read (%s); not written "
			 "over it", name, why[0] ? why : rr_store_strerror(rc));
	rr_buf_free(&b);
	return rc;
}

/* The store holds *theirs under this name: when a suspect mark was made for that very manifest,
 * this commit replaces it (docs/how-it-works.md, "Suspect and proven checkpoints"): *theirs is
 * dropped and *replace set. Returns 0 or the store's error. */
static int s_replaces_suspect(struct rr_store *s, const char *run_id,
			      struct rr_manifest **theirs, int *replace)
{
	struct rr_suspect sus;
	int rc = rr_mark_read_suspect(s, run_id, (*theirs)->checkpoint, &sus);

	if (rc == RR_ENOENT || rc == RR_ECORRUPT)
		return 0;
	if (rc)
		return rc;
	if (sus.for_committed_ms != (*theirs)->committed_unix_ms)
		return 0;
	rr_info("%s is in the store marked suspect (%s): this commit replaces it",
		(*theirs)->checkpoint, sus.why);
	rr_manifest_destroy(*theirs);
	*theirs = NULL;
	*replace = 1;
	return 0;
}

/* The replaced checkpoint's marks are not the new one's. A failure leaves a suspect mark
 * that names the old manifest, which applies to nothing (rr_catalog_is_suspect). */
static void s_clear_replaced_marks(struct rr_store *s, const char *run_id, const char *name)
{
	char key[RR_KEY_MAX];

	(void)rr_mark_clear_suspect(s, run_id, name);
	if (rr_key_mark(key, run_id, name, "proven") == 0)
		(void)rr_store_del(s, key);
}

/* 1 when two manifests hold the same files with the same bytes stored the same way (who
 * wrote them and when may differ). */
static int s_same_content(const struct rr_manifest *a, const struct rr_manifest *b)
{
	if (a->nfiles != b->nfiles)
		return 0;
	for (size_t f = 0; f < a->nfiles; f++) {
		const struct rr_file_entry *x = &a->files[f], *y = NULL;
		for (size_t k = 0; k < b->nfiles && !y; k++)
			if (strcmp(b->files[k].path, x->path) == 0)
				y = &b->files[k];
		if (!y || x->size != y->size || x->mode != y->mode || x->nsegs != y->nsegs)
			return 0;
		for (size_t g = 0; g < x->nsegs; g++) {
			const struct rr_segment *sx = &x->segs[g], *sy = &y->segs[g];
			/* The original bytes' hashes and the scale too: scaled FP16 stores x and
			 * 2x (a scale of 2^k and 2^(k-1)) as the very same bytes. */
			if (sx->offset != sy->offset || sx->length != sy->length ||
			    sx->encoding != sy->encoding || sx->nchunks != sy->nchunks ||
			    sx->scale_exp != sy->scale_exp || strcmp(sx->dtype, sy->dtype) != 0)
				return 0;
			for (size_t c = 0; c < sx->nchunks; c++)
				if (strcmp(sx->chunks[c].sha256, sy->chunks[c].sha256) != 0 ||
				    sx->chunks[c].packed != sy->chunks[c].packed ||
				    sx->chunks[c].pack_offset != sy->chunks[c].pack_offset ||
				    sx->chunks[c].size != sy->chunks[c].size ||
				    strcmp(sx->chunks[c].raw_xxh128, sy->chunks[c].raw_xxh128) != 0)
					return 0;
		}
	}
	return 1;
}

/* The store holds a manifest of this name already: RR_EEXIST (success: the store has this
 * very checkpoint) when it holds what this persist would have written, else RR_EPRECOND,
 * so that no one is told a checkpoint is durable when the store holds another writer's
 * (two machines at once both committing step-N from different states). */
int rr_persist_compare_existing(const struct rr_manifest *ours,
				const struct rr_manifest *theirs)
{
	uint64_t step;

	if (s_same_content(ours, theirs))
		return RR_EEXIST;
	if (!rr_checkpoint_step(ours->checkpoint, &step) &&
	    theirs->committed_unix_ms >= ours->committed_unix_ms) {
		rr_warn("%s: the store holds a later commit of it (by %s): this older one is not "
			"stored", ours->checkpoint, theirs->host ? theirs->host : "another machine");
		return RR_EPRECOND;
	}
	rr_error("%s is already in the store with other content (written by %s): this "
		 "machine's %s is not stored; the next checkpoint is", ours->checkpoint,
		 theirs->host ? theirs->host : "another machine", ours->checkpoint);
	return RR_EPRECOND;
}

/* A name without a step number committed again after the commit the store holds (a
 * `last.ckpt`, a `ckpt.pt` that os.replace() put in place again): its newest commit is the
 * checkpoint, so this persist replaces the stored one (compare-and-swap on the version read).
 * A step-numbered name keeps its first commit (two writers of step-N: the first stays); so
 * does a multi-node part, whose commit manifest names the parts once. */
static int s_recommit(const struct rr_persist_opts *o, const char *name, int64_t committed_ms,
		      const struct rr_manifest *theirs)
{
	uint64_t step;

	return o->nnodes <= 1 && theirs && !rr_checkpoint_step(name, &step) &&
	       (committed_ms > theirs->committed_unix_ms ||
		(o->supersedes_ms && theirs->committed_unix_ms == o->supersedes_ms));
}

static int s_workers_new(struct s_job *j, unsigned threads)
{
	/* As big as this checkpoint's longest chunk, not RR_SEGMENT_BYTES: a small checkpoint
	 * then pays for no 2 MiB huge page zeroed on its first byte (rr_buf_big_alloc). */
	j->raw_cap = 1;
	for (size_t t = 0; t < j->ntasks; t++)
		if (j->tasks[t].length > j->raw_cap)
			j->raw_cap = j->tasks[t].length;
	j->workers = calloc(threads, sizeof(*j->workers));
	if (!j->workers)
		return RR_ENOMEM;
	for (unsigned i = 0; i < threads; i++) {
		j->workers[i].codec = rr_codec_new(j->opts->zstd_level);
		j->workers[i].raw = rr_buf_big_alloc(j->raw_cap);
		rr_buf_init(&j->workers[i].stored, 2 * RR_SEGMENT_BYTES);
		if (!j->workers[i].codec || !j->workers[i].raw)
			return RR_ENOMEM;
	}
	return 0;
}

static void s_job_free(struct s_job *j, unsigned threads)
{
	for (unsigned i = 0; j->workers && i < threads; i++) {
		rr_codec_destroy(j->workers[i].codec);
		rr_buf_big_free(j->workers[i].raw, j->raw_cap);
		rr_buf_free(&j->workers[i].stored);
	}
	free(j->workers);
	for (size_t f = 0; j->held && j->l && f < j->l->n; f++)
		if (j->held[f] >= 0)
			close(j->held[f]);
	free(j->held);
	if (j->root_fd >= 0)
		close(j->root_fd);
	free(j->known.sha);
	free(j->theirs_sha);
	if (j->known.claimed) {
		free(j->known.claimed);
		pthread_mutex_destroy(&j->known.lock);
	}
	for (size_t f = 0; j->plans && f < j->nplans; f++)
		free(j->plans[f]);
	free(j->plans);
	free(j->tasks);
	free(j->stats);
	free(j->first);
	for (size_t t = 0; j->kept && t < j->ntasks; t++)
		s_unkeep(j, t);
	free(j->kept);
	free(j->todo);
	free(j->turn);
	free(j->reuse.segs);
	rr_packer_destroy(j->packer);
	rr_manifest_destroy(j->m);
}

/* Refuses, with one warning, a checkpoint that restore would refuse: a name or a file path
 * outside the manifest's rules (rr_checkpoint_name_valid, rr_path_is_safe). Persisting it
 * would declare durable what can never be restored. */
static int s_names_ok(const char *name, const struct rr_dir_listing *l)
{
	char q1[RR_QUOTE_CAP], q2[RR_QUOTE_CAP];

	if (!rr_checkpoint_name_valid(name)) {
		rr_warn("checkpoint %s is not persisted: restore refuses such a name (a dot first, "
			"a '/', or a control character)", rr_quote_str(q1, name));
		return RR_EPATH;
	}
	for (size_t i = 0; i < l->n; i++)
		if (!rr_path_is_safe(l->files[i].path)) {
			rr_warn("checkpoint %s is not persisted: restore refuses the name of its file "
				"%s (a backslash or a control character)", rr_quote_str(q1, name),
				rr_quote_str(q2, l->files[i].path));
			return RR_EPATH;
		}
	return 0;
}

/* Lists <ckpt_dir>/<name> through descriptors: the checkpoint itself must be a directory
 * reached without a symlink, and nothing below it is reached through one. A regular file
 * there is a one-file checkpoint (Lightning's .ckpt, a renamed torch.save file): listed
 * under its own name, read below the checkpoint dir itself (*single = 1). */
static int s_open_checkpoint(const char *ckpt_dir, const char *name, int *root_fd,
			     struct rr_dir_listing *l, int *single)
{
	char q[RR_QUOTE_CAP];
	struct stat st;
	int parent, rc;

	*single = 0;
	parent = open(ckpt_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parent < 0)
		return rr_error_from_errno(errno);
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		l->files = calloc(1, sizeof(*l->files));
		if (!l->files || !(l->files[0].path = strdup(name))) {
			close(parent);
			return RR_ENOMEM;
		}
		l->n = 1;
		l->files[0].mode = st.st_mode & 07777;
		l->files[0].size = (uint64_t)st.st_size;
		l->files[0].st = st;
		*root_fd = parent;
		*single = 1;
		return 0;
	}
	rc = rr_opendir_beneath(parent, name, root_fd);
	close(parent);
	if (rc == RR_EPATH)
		rr_warn("checkpoint %s is not persisted: it is no longer a directory (a symlink "
			"or a file took its place after the commit)", rr_quote_str(q, name));
	if (!rc)
		rc = rr_dir_list_fd(*root_fd, l);
	return rc;
}

/* After the encoding, before the manifest: every listed file is still there. A framework
 * that deletes an older checkpoint (HF Trainer's save_total_limit rotation) while it is
 * persisted may have removed files before the listing saw them, and the rest by now: the
 * checkpoint would be stored without them, and restore would bring back a partial one. */
static int s_files_still_there(struct s_job *j, const char *name)
{
	char q[RR_QUOTE_CAP], q2[RR_QUOTE_CAP];
	struct stat st;

	if (j->m->single_file)
		return 0; /* its one file's size and time are checked as it is read */
	for (size_t f = 0; f < j->l->n; f++) {
		if (fstatat(j->root_fd, j->l->files[f].path, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
		    errno != ENOENT)
			continue;
		rr_reason_set(&j->why, "%s was deleted while being persisted (%s is gone: a "
			      "framework's rotation of old checkpoints?)", rr_quote_str(q, name),
			      rr_quote_str(q2, j->l->files[f].path));
		return RR_ENOENT;
	}
	return 0;
}

/* The reader's own check on what is about to be stored: a manifest the parser refuses
 * would be a checkpoint that is "durable" and never restorable. */
static int s_reader_accepts(const struct rr_buf *json, const char *name)
{
	struct rr_manifest *back = NULL;
	char why[256], q[RR_QUOTE_CAP];
	int rc = rr_manifest_parse((const char *)json->data, json->len, &back, why, sizeof(why));

	rr_manifest_destroy(back);
	if (rc) {
		rr_warn("checkpoint %s is not persisted: its manifest would not be readable (%s)",
			rr_quote_str(q, name), why);
		return RR_EPATH;
	}
	return 0;
}

/* Where the checkpoint's manifest goes (key) and what that name holds already: *theirs, a
 * manifest stored under it before (another writer's, or this machine's before a restart),
 * and its version tag (etag); *replace when that one is suspect and this persist replaces
 * it. */
static int s_find_existing(struct rr_store *s, const struct rr_persist_opts *opts,
			   const char *name, char *key, struct rr_manifest **theirs, int *replace,
			   char *etag)
{
	int rc;

	/* Multi-node: this node's files are one part; the commit manifest is rr_parts_commit's. */
	if (opts->nnodes > 1)
		rc = rr_key_part(key, opts->run_id, name, opts->node_rank);
	else
		rc = rr_key_manifest(key, opts->run_id, name);
	if (rc)
		return rc;
	rc = s_load_manifest(s, key, name, theirs, etag);
	if (rc == RR_ENOENT)
		rc = 0;
	if (!rc && *theirs && opts->nnodes <= 1)
		rc = s_replaces_suspect(s, opts->run_id, theirs, replace);
	return rc;
}

/* The chunks (and packs) a stored manifest names, sorted, for s_writes. */
static int s_theirs_chunks(struct s_job *j, const struct rr_manifest *theirs)
{
	size_t n = 0;

	for (size_t f = 0; f < theirs->nfiles; f++)
		for (size_t g = 0; g < theirs->files[f].nsegs; g++)
			n += theirs->files[f].segs[g].nchunks;
	j->theirs_sha = malloc((n ? n : 1) * sizeof(*j->theirs_sha));
	if (!j->theirs_sha)
		return RR_ENOMEM;
	for (size_t f = 0; f < theirs->nfiles; f++)
		for (size_t g = 0; g < theirs->files[f].nsegs; g++)
			for (size_t c = 0; c < theirs->files[f].segs[g].nchunks; c++)
				memcpy(j->theirs_sha[j->ntheirs_sha++],
				       theirs->files[f].segs[g].chunks[c].sha256, RR_SHA256_HEX_LEN + 1);
	qsort(j->theirs_sha, j->ntheirs_sha, sizeof(*j->theirs_sha), s_cmp_sha);
	return 0;
}

/* A one-file checkpoint that its own format finds cut short (a zip without its end record, a
 * safetensors file its header does not account for) is not persisted: written in place, it
 * was rewritten since its commit (the next save under way), or the save was cut short; stored
 * byte-exact it would replace a good copy with one no loader reads. */
static int s_refuse_cut(struct s_job *j, const char *name)
{
	char q[RR_QUOTE_CAP];
	int fd, owned, rc = s_file_fd(j, 0, &fd, &owned);

	if (rc)
		return rc;
	if (rr_format_file_state(fd, name, j->l->files[0].size) == RR_FILE_CUT) {
		rr_reason_set(&j->why, "%s is not whole (rewritten since its commit, or a save cut "
			      "short): not stored", rr_quote_str(q, name));
		rc = RR_EIO;
	}
	if (owned)
		close(fd);
	return rc;
}

/* Everything the workers need before the first byte is read: the checkpoint opened and
 * listed (l, which the job points at), its files held open, the manifest to fill, what may
 * be reused from theirs or the previous checkpoint, the chunks the store holds, and the
 * workers. A failure the job explained is logged here. */
static int s_prepare(struct s_job *j, const char *ckpt_dir, const char *name,
		     int64_t committed_ms, struct rr_manifest *theirs, int dry, unsigned threads,
		     struct rr_dir_listing *l)
{
	char q[RR_QUOTE_CAP];
	int single = 0, rc;

	rc = s_open_checkpoint(ckpt_dir, name, &j->root_fd, l, &single);
	if (rc)
		return rc;
	j->l = l;
	if (l->skipped) {
		char q2[RR_QUOTE_CAP];
		rr_warn("%s: %zu entries that are not regular files (e.g. %s) are not persisted",
			rr_quote_str(q, name), l->skipped, rr_quote_str(q2, l->first_skipped));
	}
	rc = s_names_ok(name, l);
	if (!rc)
		rc = s_hold_files(j);
	if (!rc)
		rc = s_build_manifest(j, name, committed_ms, l);
	if (!rc)
		j->m->single_file = single;
	if (!rc && single)
		rc = s_refuse_cut(j, name);
	if (!rc)
		rc = s_reuse_init(&j->reuse, theirs ? theirs : j->opts->previous);
	j->dry = dry;
	if (!rc && dry)
		rc = s_theirs_chunks(j, theirs);
	if (!rc)
		rc = s_known_load(j->store, j->opts, &j->known);
	if (!rc)
		rc = s_claims_init(&j->known, j->ntasks);
	if (!rc)
		rc = s_workers_new(j, threads);
	if (rc && j->why.text[0])
		rr_error("persist of %s failed: %s", rr_quote_str(q, name), j->why.text);
	return rc;
}

/* Phase 2 reorders within windows of this many original bytes (see s_order_turns). */
#define S_TURN_WINDOW_BYTES (64u << 20)

struct s_turn {
	size_t window, len, i;
};

static int s_longest_first(const void *a, const void *b)
{
	const struct s_turn *x = a, *y = b;
	if (x->window != y->window)
		return x->window < y->window ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? 1 : -1;
	return (x->i > y->i) - (x->i < y->i);
}

/* j->turn for a phase over the n tasks task_of[0..n-1], in windows of consecutive tasks of
 * `window` original bytes: in each, the tasks of `from` bytes or more first, longest first,
 * then the others in their order. The pool hands tasks out in turn, so the long ones do not
 * come last to keep one worker busy while the other waits. The short ones stay in order, the
 * order the packer places them in: a chunk done before its place comes is copied to wait
 * (a long one may compress to a packed size too), and the window bounds what waits so. */
static int s_order_turns(struct s_job *j, const size_t *task_of, size_t n, size_t from,
			 uint64_t window)
{
	struct s_turn *t = calloc(n ? n : 1, sizeof(*t));
	uint64_t in_window = 0;
	size_t w = 0;

	if (!t)
		return RR_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t len = j->tasks[task_of[i]].length;
		t[i] = (struct s_turn){ .window = w, .len = len >= from ? len : 0, .i = i };
		in_window += len;
		if (in_window >= window) {
			w++;
			in_window = 0;
		}
	}
	qsort(t, n, sizeof(*t), s_longest_first);
	for (size_t i = 0; i < n; i++)
		j->turn[i] = t[i].i;
	free(t);
	return 0;
}

/* The two pools: every file analysed (hashed, its tensors planned), then every segment
 * encoded and stored in packs (the last one by the worker that placed the last chunk in it).
 * A cancel (the caller logs it) is RR_ECANCELED; another failure the job explained is
 * logged here. */
static int s_encode_all(struct s_job *j, const char *name, unsigned threads)
{
	char what[300], q[RR_QUOTE_CAP];
	const atomic_int *cancel = j->opts->cancel;
	int rc;

	snprintf(what, sizeof(what), "persist %s", rr_quote_str(q, name));
	j->progress = rr_progress_new(what, rr_manifest_total_size(j->m));
	rc = s_order_turns(j, j->first, j->nfirst, 0, UINT64_MAX);
	if (!rc)
		rc = rr_pool_run(threads, j->nfirst, s_analyse, j, cancel);
	if (!rc) {
		s_between_phases(j);
		rc = s_order_turns(j, j->todo, j->ntodo, RR_SEGMENT_BYTES / 2,
				   S_TURN_WINDOW_BYTES);
	}
	if (!rc) {
		j->packer = rr_packer_new(j->ntodo, rr_store_scratch_before(j->store),
					  RR_STORE_SCRATCH_AFTER);
		rc = j->packer ? rr_pool_run(threads, j->ntodo, s_encode, j, cancel) : RR_ENOMEM;
		/* The pool looks for a cancel between chunks only: one during the last chunks
		 * (and the last pack) still counts. */
		if (!rc && cancel && atomic_load(cancel))
			rc = RR_ECANCELED;
	}
	rr_progress_destroy(j->progress);
	if (rc && j->why.text[0] && rc != RR_ECANCELED) /* set aside: the caller says so */
		rr_error("persist of %s failed: %s", rr_quote_str(q, name), j->why.text);
	return rc;
}

/* Stores the manifest under key, create-only, once every chunk it names is known to be
 * there: the step that makes the checkpoint durable. A suspect one it replaces is deleted
 * first; an earlier commit of the name it replaces (if_match: its version tag) is written
 * over in one step, so the name never holds nothing. When another writer's manifest landed
 * meanwhile, the result is the comparison with it (loaded into *theirs), unless this one is
 * a later commit of the name, which takes its place in turn. */
static int s_write_manifest(struct s_job *j, const char *key, const char *name, int replace,
			    const char *if_match, struct rr_buf *json, struct rr_manifest **theirs)
{
	char etag[RR_ETAG_MAX];
	struct rr_store *s = j->store;
	int rc;

	rc = s_check_still_stored(j);
	if (rc)
		return rc;
	j->m->created_unix_ms = rr_wall_ms();
	rc = rr_manifest_to_json(j->m, json);
	if (rc == RR_ETOOBIG) {
		size_t segs = 0;
		for (size_t f = 0; f < j->m->nfiles; f++)
			segs += j->m->files[f].nsegs;
		rr_error("checkpoint %s cannot be persisted: its manifest would be over %u MiB "
			 "(%zu files, %zu tensors and other segments): too many tensors for one "
			 "checkpoint (docs/limitations.md)", name,
			 (unsigned)(RR_MANIFEST_MAX_BYTES >> 20), j->m->nfiles, segs);
	}
	if (!rc)
		rc = s_reader_accepts(json, name);
	/* The suspect one goes first (create-only below): until the new one is written the
	 * name holds nothing, and restore takes the checkpoint before, as it did. */
	if (!rc && replace)
		rc = rr_store_del(s, key);
	for (int tries = 0; !rc; tries++) {
		rc = rr_store_put(s, key, json->data, json->len,
				  &(struct rr_put_opts){ .if_none_match = !if_match,
							 .if_match = if_match }, NULL);
		if (rc != RR_EEXIST && rc != RR_EPRECOND && (rc != RR_ENOENT || !if_match))
			break;
		/* Another manifest of the name landed meanwhile (or the one replaced is gone). */
		rr_manifest_destroy(*theirs);
		*theirs = NULL;
		rc = s_load_manifest(s, key, name, theirs, etag);
		if (rc == RR_ENOENT && tries < 3) {
			if_match = NULL; /* gone: created afresh */
			rc = 0;
		} else if (rc) {
			rc = RR_EPRECOND;
		} else if (tries < 3 && s_recommit(j->opts, name, j->m->committed_unix_ms, *theirs) &&
			   !s_same_content(j->m, *theirs)) {
			if_match = etag; /* an earlier commit still: this one replaces it */
		} else {
			rc = rr_persist_compare_existing(j->m, *theirs);
		}
	}
	if (!rc && (replace || if_match))
		s_clear_replaced_marks(s, j->opts->run_id, name);
	return rc;
}

/* What the persist did, for the caller's log line and metrics. */
static void s_fill_stats(struct s_job *j, const struct rr_buf *json,
			 struct rr_persist_stats *stats)
{
	stats->files = j->m->nfiles;
	stats->bytes = rr_manifest_total_size(j->m);
	stats->stored_bytes = rr_manifest_total_stored(j->m);
	stats->new_bytes = atomic_load(&j->new_bytes) + json->len;
	stats->refreshed_chunks = atomic_load(&j->refreshed);
	stats->held_peak = j->packer ? rr_packer_held_peak(j->packer) : 0;
	s_count(j, stats);
}

/* The manifest just written names a chunk a gc elsewhere deleted after this persist wrote it
 * again: persisting the same checkpoint once more, against a fresh listing, stores the
 * chunks the store lost (s_writes) and finds the manifest there. stats: the first persist's,
 * plus the bytes stored again. */
static int s_repair(struct rr_store *s, const char *ckpt_dir, const char *name,
		    int64_t committed_ms, const struct rr_persist_opts *opts,
		    struct rr_persist_stats *stats)
{
	struct rr_persist_opts again = *opts;
	struct rr_persist_stats st;
	char q[RR_QUOTE_CAP];
	int rc;

	rr_warn("%s: a chunk it wrote again was deleted right after by another machine's "
		"retention; storing it again", rr_quote_str(q, name));
	again.chunks = NULL; /* list the store's chunks afresh */
	again.settle_ms = 0;
	rc = rr_persist_checkpoint(s, ckpt_dir, name, committed_ms, &again, NULL, &st);
	stats->new_bytes += st.new_bytes;
	stats->elapsed_ms += st.elapsed_ms;
	if (rc == RR_EEXIST)
		return 0; /* the manifest is there, and now every chunk it names */
	rr_error("persist of %s: the chunks lost to another machine's retention could not be "
		 "stored again: %s", rr_quote_str(q, name), rr_store_strerror(rc));
	return rc ? rc : RR_EIO;
}

int rr_persist_checkpoint(struct rr_store *s, const char *ckpt_dir, const char *name,
			  int64_t committed_ms, const struct rr_persist_opts *opts,
			  struct rr_manifest **manifest_out, struct rr_persist_stats *stats)
{
	struct s_job j = { .store = s, .opts = opts, .why = RR_REASON_INIT, .root_fd = -1 };
	struct rr_dir_listing l = { 0 };
	char key[RR_KEY_MAX];
	unsigned threads = opts->threads ? opts->threads : 1;
	struct rr_buf json;
	struct rr_manifest *theirs = NULL;
	char etag[RR_ETAG_MAX] = "";
	int64_t t0 = rr_mono_ms();
	int replace = 0, recommit = 0, lost = 0, rc;

	rr_buf_init(&json, RR_MANIFEST_MAX_BYTES);
	memset(stats, 0, sizeof(*stats));
	if (manifest_out)
		*manifest_out = NULL;

	rc = s_names_ok(name, &l);
	if (!rc)
		rc = s_find_existing(s, opts, name, key, &theirs, &replace, etag);
	if (rc)
		goto out;
	recommit = s_recommit(opts, name, committed_ms, theirs);
	if (opts->settle_ms > 0) {
		rr_persist_settle(ckpt_dir, name, committed_ms, opts->settle_ms,
				  opts->urgent ? RR_PERSIST_SETTLE_URGENT_MAX_MS
					       : RR_PERSIST_SETTLE_MAX_MS, opts->cancel);
		t0 = rr_mono_ms(); /* the wait is no part of the link's throughput (logged itself) */
	}
	rc = s_prepare(&j, ckpt_dir, name, committed_ms, theirs, theirs && !recommit, threads, &l);
	if (!rc)
		rc = s_encode_all(&j, name, threads);
	if (!rc && (rc = s_files_still_there(&j, name)) != 0)
		rr_debug("persist of %s: %s", name, j.why.text); /* the caller says it is gone */
	if (rc)
		goto out;
	if (recommit && s_same_content(j.m, theirs)) {
		rc = RR_EEXIST; /* saved again unchanged: the store has it */
		goto out;
	}
	if (theirs && !recommit) {
		/* Encoded and hashed only: identical segments were taken from it, the chunks it
		 * names that the store had lost were stored again. */
		rc = rr_persist_compare_existing(j.m, theirs);
		stats->new_bytes = atomic_load(&j.new_bytes);
		if (atomic_load(&j.repaired)) {
			char q[RR_QUOTE_CAP];
			rr_warn("%s: the store had lost %zu chunk(s) its stored manifest names (another "
				"machine's retention, or a hand); stored again", rr_quote_str(q, name),
				atomic_load(&j.repaired));
		}
		goto out;
	}
	rc = s_write_manifest(&j, key, name, replace, recommit ? etag : NULL, &json, &theirs);
	if (rc)
		goto out;
	if (recommit) {
		char q[RR_QUOTE_CAP];
		rr_info("%s was committed again: its store copy is this commit now (the one before "
			"was committed %.1f s earlier)", rr_quote_str(q, name),
			(double)(committed_ms - (theirs ? theirs->committed_unix_ms : committed_ms)) /
				1000.0);
	}

	if (opts->chunks)
		s_index_add_written(opts->chunks, &j.known);
	s_fill_stats(&j, &json, stats);
	lost = s_chunk_lost_after_manifest(&j);
	if (manifest_out) {
		*manifest_out = j.m;
		j.m = NULL;
	}
out:
	/* Maybe a chunk it relied on is gone; or one is (lost: the index, which it just told
	 * of this persist's chunks, names it as stored, whether or not the repair can). */
	if (((rc && rc != RR_EEXIST) || lost) && opts->chunks)
		s_index_forget(opts->chunks);
	stats->elapsed_ms = rr_mono_ms() - t0;
	s_job_free(&j, threads);
	rr_manifest_destroy(theirs);
	rr_dir_listing_free(&l);
	rr_buf_free(&json);
	if (lost && (rc = s_repair(s, ckpt_dir, name, committed_ms, opts, stats)) != 0 &&
	    manifest_out) {
		rr_manifest_destroy(*manifest_out);
		*manifest_out = NULL;
	}
	return rc;
}
