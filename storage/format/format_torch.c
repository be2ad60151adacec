/* torch.save files (docs/how-it-works.md, "What is stored"): PyTorch's zip format read
 * strictly, its data.pkl scanned (never executed) for each storage record's dtype and element
 * count. Records become tensor pieces; the zip headers, the pickle and every record not
 * understood stay plain. On restore, the CRC-32 fields of records stored lossy are recomputed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/crc32.h"
#include "rr/error.h"
#include "rr/quote.h"
#include "rr/format.h"
#include "rr/fsutil.h"
#include "pickle_scan.h"
#include "torch_zip.h"

/* Legacy (non-zip) torch.save files begin with a pickled magic number: PROTO 2, LONG1 10
 * bytes 0x1950a86a20f9469cfc6c. */
static const uint8_t s_legacy_magic[] = { 0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc };

/* Entry names are outside text: quoted wherever a reason shows them. */
#define S_Q(name) rr_quote_str((char[RR_QUOTE_CAP]){ 0 }, (name))

static int s_has_ext(const char *path, const char *ext)
{
	size_t n = strlen(path), e = strlen(ext);
	return n > e && strcmp(path + n - e, ext) == 0;
}

static int s_claims(const char *path, const uint8_t *head, size_t head_len, uint64_t size)
{
	(void)size;
	if (head_len >= 4 && memcmp(head, "PK\x03\x04", 4) == 0)
		return 1;
	return s_has_ext(path, ".pt") || s_has_ext(path, ".pth") || s_has_ext(path, ".bin") ||
	       s_has_ext(path, ".ckpt");
}

/* The archive's prefix: the directory of its only "<prefix>/data.pkl". 0, RR_ENOENT when
 * there is none (not a torch.save archive), RR_ECORRUPT when there are several. */
static int s_prefix(const struct rr_zip *z, char *prefix, size_t cap, char *why, size_t why_len)
{
	int found = 0;

	for (size_t i = 0; i < z->n; i++) {
		const char *name = z->entries[i].name, *slash = strchr(name, '/');
		if (!slash || slash == name || strcmp(slash, "/data.pkl") != 0)
			continue;
		if (found++)
			return rr_fail(why, why_len, RR_ECORRUPT, "it has two data.pkl entries");
		if ((size_t)(slash - name) >= cap)
			return rr_fail(why, why_len, RR_ECORRUPT, "its archive name is too long");
		memcpy(prefix, name, (size_t)(slash - name));
		prefix[slash - name] = '\0';
	}
	return found ? 0 : RR_ENOENT;
}

static int s_read_entry(const struct rr_format_src *src, const struct rr_zip_entry *e,
			uint8_t **out, char *why, size_t why_len)
{
	int rc;

	*out = malloc(e->usize ? (size_t)e->usize : 1);
	if (!*out)
		return RR_ENOMEM;
	rc = src->pread(src->ud, *out, (size_t)e->usize, e->data_off);
	if (rc)
		rr_fail(why, why_len, rc, "cannot read %s", S_Q(e->name));
	return rc;
}

/* Checks what makes the records readable as tensors here: stored entries, little-endian. */
static int s_check_archive(const struct rr_format_src *src, const struct rr_zip *z,
			   const char *prefix, char *why, size_t why_len)
{
	char name[300];
	const struct rr_zip_entry *e;
	uint8_t *bo = NULL;
	int rc = 0;

	for (size_t i = 0; i < z->n; i++) {
		e = &z->entries[i];
		if (e->method != 0 || e->csize != e->usize)
			return rr_fail(why, why_len, RR_ECORRUPT, "entry %s is compressed",
				       S_Q(e->name));
	}
	snprintf(name, sizeof(name), "%s/byteorder", prefix);
	e = rr_zip_find(z, name);
	if (!e)
		return 0; /* written before torch recorded it: the writer's order, little here */
	if (e->usize > 16)
		return rr_fail(why, why_len, RR_ECORRUPT, "its byteorder record is malformed");
	rc = s_read_entry(src, e, &bo, why, why_len);
	if (!rc && !(e->usize == 6 && memcmp(bo, "little", 6) == 0))
		rc = rr_fail(why, why_len, RR_ECORRUPT, "it is a big-endian file");
	free(bo);
	return rc;
}

static int s_add_plain(struct rr_format_plan *p, uint64_t from, uint64_t to)
{
	struct rr_format_piece *last = p->n ? &p->pieces[p->n - 1] : NULL;

	if (to <= from)
		return 0;
	if (last && !last->tensor && last->offset + last->length == from) {
		last->length += to - from;
		return 0;
	}
	return rr_format_plan_add(p, from, to - from, 0, NULL, RR_ST_U8, 0, NULL);
}

static int s_plan(const struct rr_format_src *src, struct rr_format_plan *out, char *why,
		  size_t why_len)
{
	struct rr_zip z = { 0 };
	struct rr_pk_scan scan = { 0 };
	char prefix[256], dir[300];
	uint8_t *pkl = NULL, head[8] = { 0 };
	const struct rr_zip_entry *e;
	uint64_t at = 0;
	size_t dlen;
	int rc;

	rc = src->pread(src->ud, head, src->size < 8 ? (size_t)src->size : 8, 0);
	if (rc)
		return rr_fail(why, why_len, rc, "cannot read it");
	if (memcmp(head, "PK\x03\x04", 4) != 0) {
		if (src->size >= sizeof(s_legacy_magic) &&
		    memcmp(head, s_legacy_magic, sizeof(s_legacy_magic)) == 0)
			return rr_fail(why, why_len, RR_ECORRUPT, "a legacy (non-zip) torch.save "
				       "file");
		return RR_ENOENT; /* a .bin or .pt of some other kind: plain bytes, no warning */
	}
	rc = rr_zip_read(src, &z, why, why_len);
	if (!rc)
		rc = s_prefix(&z, prefix, sizeof(prefix), why, why_len);
	if (!rc)
		rc = s_check_archive(src, &z, prefix, why, why_len);
	if (rc)
		goto out;
	snprintf(dir, sizeof(dir), "%s/data.pkl", prefix);
	e = rr_zip_find(&z, dir);
	if (e->usize > RR_PK_MAX_BYTES) {
		rc = rr_fail(why, why_len, RR_ETOOBIG, "its pickle is over %u MiB",
			     RR_PK_MAX_BYTES >> 20);
		goto out;
	}
	rc = s_read_entry(src, e, &pkl, why, why_len);
	if (!rc)
		rc = rr_pickle_scan(pkl, (size_t)e->usize, &scan, why, why_len);
	if (rc)
		goto out;
	snprintf(dir, sizeof(dir), "%s/data/", prefix);
	dlen = strlen(dir);
	for (size_t i = 0; i < scan.n; i++) {
		char name[300 + RR_PK_KEY_MAX];
		snprintf(name, sizeof(name), "%s%s", dir, scan.storages[i].key);
		if (!rr_zip_find(&z, name)) {
			rc = rr_fail(why, why_len, RR_ECORRUPT, "storage %s has no record",
				     scan.storages[i].key);
			goto out;
		}
	}
	/* Pieces in file order: everything between records plain, each understood record a
	 * tensor of its storage's dtype and element count. */
	for (size_t i = 0; !rc && i < z.n; i++) {
		const struct rr_pk_storage *st = NULL;
		uint64_t bytes = 0;
		e = &z.entries[i];
		if (strncmp(e->name, dir, dlen) == 0)
			st = rr_pickle_scan_find(&scan, e->name + dlen);
		if (st && st->known &&
		    !__builtin_mul_overflow(st->numel, (uint64_t)rr_st_dtype_bits(st->dtype) / 8,
					    &bytes) && bytes == e->usize && bytes > 0) {
			rc = s_add_plain(out, at, e->data_off);
			if (!rc)
				rc = rr_format_plan_add(out, e->data_off, e->usize, 1, e->name,
							st->dtype, 1, &st->numel);
			at = e->data_off + e->usize;
		}
	}
	if (!rc)
		rc = s_add_plain(out, at, src->size);
out:
	free(pkl);
	rr_pickle_scan_free(&scan);
	rr_zip_free(&z);
	return rc;
}

/* 1 when every entry of z is one of the records torch's writer adds outside the pickle
 * (version, byteorder, serialization_id): what a torch.save that failed before its pickle
 * leaves, its writer closing the archive all the same. */
static int s_only_torch_metadata(const struct rr_zip *z)
{
	static const char *const names[] = { "version", "byteorder", "serialization_id" };

	for (size_t i = 0; i < z->n; i++) {
		const char *slash = strrchr(z->entries[i].name, '/');
		const char *base = slash ? slash + 1 : z->entries[i].name;
		int known = 0;
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			known |= strcmp(base, names[k]) == 0;
		if (!known)
			return 0;
	}
	return z->n > 0;
}

int rr_torch_complete(const struct rr_format_src *src, char *why, size_t why_len)
{
	struct rr_zip z = { 0 };
	struct rr_pk_scan scan = { 0 };
	char prefix[256], name[300 + RR_PK_KEY_MAX];
	const struct rr_zip_entry *e;
	uint8_t *pkl = NULL;
	int rc = rr_zip_read(src, &z, why, why_len);

	if (rc)
		return rc == RR_ENOMEM ? rc : 0; /* a zip this reader refuses: taken as it is */
	rc = s_prefix(&z, prefix, sizeof(prefix), why, why_len);
	if (rc == RR_ENOENT && s_only_torch_metadata(&z))
		rc = rr_fail(why, why_len, RR_ECORRUPT, "it has torch's records but no data.pkl");
	else if (rc == RR_ECORRUPT)
		rc = 0; /* two archives in one zip: not torch.save's, taken as it is */
	if (rc || !z.n)
		goto out;
	snprintf(name, sizeof(name), "%s/data.pkl", prefix);
	e = rr_zip_find(&z, name);
	if (!e || e->method != 0 || e->usize > RR_PK_MAX_BYTES)
		goto out; /* compressed (torch.jit.save) or too big to read: taken as it is */
	rc = s_read_entry(src, e, &pkl, why, why_len);
	if (!rc && rr_pickle_scan(pkl, (size_t)e->usize, &scan, why, why_len) != 0)
		goto out; /* a pickle the scanner does not follow: taken as it is, not cut */
	for (size_t i = 0; !rc && i < scan.n; i++) {
		snprintf(name, sizeof(name), "%s/data/%s", prefix, scan.storages[i].key);
		if (!rr_zip_find(&z, name))
			rc = rr_fail(why, why_len, RR_ECORRUPT, "storage %s has no record",
				     scan.storages[i].key);
	}
out:
	free(pkl);
	rr_pickle_scan_free(&scan);
	rr_zip_free(&z);
	return rc;
}

/* Writes crc little-endian at off. */
static int s_put_crc(int fd, uint64_t off, uint32_t crc)
{
	uint8_t b[4] = { (uint8_t)crc, (uint8_t)(crc >> 8), (uint8_t)(crc >> 16),
			 (uint8_t)(crc >> 24) };
	return rr_pwrite_all(fd, b, 4, (int64_t)off);
}

/* 1 when [from, to) overlaps a lossy segment of fe. Entries are asked in file order and
 * segments are in file order, so *g only moves forward: linear in both. */
static int s_touches_lossy(const struct rr_file_entry *fe, size_t *g, uint64_t from, uint64_t to)
{
	while (*g < fe->nsegs && fe->segs[*g].offset + fe->segs[*g].length <= from)
		(*g)++;
	for (size_t k = *g; k < fe->nsegs && fe->segs[k].offset < to; k++)
		if (rr_format_encoding_lossy(fe->segs[k].encoding))
			return 1;
	return 0;
}

/* The CRC of [from, to) from the chunks' CRCs, when that range is exactly one lossy
 * segment of fe (a tensor's storage, as s_plan makes it). 1 with *crc set, else 0. Asked
 * in file order, so the segment cursor (*g, and *first, the index of its first chunk) only
 * moves forward. */
static int s_crc_from_chunks(const struct rr_file_entry *fe, const uint32_t *chunk_crc,
			     size_t *g, size_t *first, uint64_t from, uint64_t to, uint32_t *crc)
{
	const struct rr_segment *seg;

	for (; chunk_crc && *g < fe->nsegs && fe->segs[*g].offset < from; (*g)++)
		*first += fe->segs[*g].nchunks;
	if (!chunk_crc || *g >= fe->nsegs)
		return 0;
	seg = &fe->segs[*g];
	if (seg->offset != from || seg->length != to - from ||
	    !rr_format_encoding_lossy(seg->encoding))
		return 0;
	*crc = 0;
	for (size_t c = 0; c < seg->nchunks; c++)
		*crc = rr_crc32_combine(*crc, chunk_crc[*first + c], seg->chunks[c].size);
	return 1;
}

static int s_finish(int fd, const struct rr_file_entry *fe, const uint32_t *chunk_crc,
		    char *why, size_t why_len)
{
	struct rr_format_src src = { .pread = rr_format_fd_pread, .ud = &fd, .size = fe->size };
	struct rr_zip z = { 0 };
	uint8_t *buf = NULL;
	size_t g = 0, cg = 0, cfirst = 0;
	int rc = 0, lossy = 0;

	for (size_t k = 0; k < fe->nsegs; k++)
		lossy |= rr_format_encoding_lossy(fe->segs[k].encoding);
	if (!lossy)
		return 0; /* byte-identical: its CRCs are right */
	rc = rr_zip_read(&src, &z, why, why_len);
	buf = malloc(1u << 20);
	if (!rc && !buf)
		rc = RR_ENOMEM;
	for (size_t i = 0; !rc && i < z.n; i++) {
		const struct rr_zip_entry *e = &z.entries[i];
		uint32_t crc = 0;
		if (!s_touches_lossy(fe, &g, e->data_off, e->data_off + e->csize))
			continue;
		/* From what restore wrote, or else read back. */
		if (!s_crc_from_chunks(fe, chunk_crc, &cg, &cfirst, e->data_off,
				       e->data_off + e->csize, &crc)) {
			for (uint64_t at = 0; !rc && at < e->csize;) {
				size_t n = e->csize - at < (1u << 20) ? (size_t)(e->csize - at)
								       : (1u << 20);
				rc = src.pread(src.ud, buf, n, e->data_off + at);
				crc = rr_crc32(crc, buf, n);
				at += n;
			}
		}
		/* Every field that held the old CRC gets the new one (a local header whose CRC
		 * lives in the data descriptor keeps its 0). */
		if (!rc)
			rc = s_put_crc(fd, e->central_crc_off, crc);
		if (!rc && e->desc_crc_off)
			rc = s_put_crc(fd, e->desc_crc_off, crc);
		if (!rc && e->local_crc == e->crc)
			rc = s_put_crc(fd, e->local_crc_off, crc);
		if (rc && why && !why[0])
			rr_fail(why, why_len, rc, "cannot rewrite the CRC-32 of %s",
				S_Q(e->name));
	}
	free(buf);
	rr_zip_free(&z);
	return rc;
}

const struct rr_format rr_format_torch = {
	.name = "torch",
	.claims = s_claims,
	.plan = s_plan,
	.finish = s_finish,
};
