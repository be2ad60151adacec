/* A strict zip reader for torch.save archives. Anything outside what a single-disk,
 * unencrypted archive with consistent records may hold is refused with a reason; the
 * caller then stores the file byte-exact. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "rr/quote.h"
#include "torch_zip.h"

#define S_SIG_LOCAL 0x04034b50u
#define S_SIG_CENTRAL 0x02014b50u
#define S_SIG_EOCD 0x06054b50u
#define S_SIG_EOCD64 0x06064b50u
#define S_SIG_LOC64 0x07064b50u
#define S_SIG_DESC 0x08074b50u
#define S_EOCD_LEN 22u
#define S_LOC64_LEN 20u
#define S_EOCD64_MIN 56u
#define S_CENTRAL_LEN 46u
#define S_LOCAL_LEN 30u

/* Entry names are outside text: quoted wherever a reason shows them. */
#define S_Q(name) rr_quote_str((char[RR_QUOTE_CAP]){ 0 }, (name))

static uint16_t s_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t s_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t s_u64(const uint8_t *p)
{
	return (uint64_t)s_u32(p) | (uint64_t)s_u32(p + 4) << 32;
}

static int s_bad(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int s_bad(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = rr_vfail(why, why_len, RR_ECORRUPT, fmt, ap);
	va_end(ap);
	return rc;
}

/* The end of central directory record: the last signature whose comment ends the file. */
static int s_find_eocd(const struct rr_format_src *src, uint64_t *at, uint8_t rec[S_EOCD_LEN],
		       char *why, size_t why_len)
{
	uint64_t span = src->size < S_EOCD_LEN + 65535u ? src->size : S_EOCD_LEN + 65535u;
	uint8_t *tail;
	int rc;

	if (src->size < S_EOCD_LEN)
		return s_bad(why, why_len, "too short for a zip archive");
	tail = malloc((size_t)span);
	if (!tail)
		return RR_ENOMEM;
	rc = src->pread(src->ud, tail, (size_t)span, src->size - span);
	if (rc) {
		free(tail);
		return rr_fail(why, why_len, rc, "cannot read its end");
	}
	rc = s_bad(why, why_len, "no end of central directory record");
	for (uint64_t i = span - S_EOCD_LEN + 1; i-- > 0;) {
		if (s_u32(tail + i) == S_SIG_EOCD && i + S_EOCD_LEN + s_u16(tail + i + 20) == span) {
			*at = src->size - span + i;
			memcpy(rec, tail + i, S_EOCD_LEN);
			rc = 0;
			break;
		}
	}
	free(tail);
	return rc;
}

/* Where the central directory is and how many entries it has, from the end records
 * (ZIP64 when present). end_of_cd: where the directory must end. */
static int s_read_end(const struct rr_format_src *src, uint64_t *cd_off, uint64_t *cd_size,
		      uint64_t *count, char *why, size_t why_len)
{
	uint8_t e[S_EOCD_LEN] = { 0 }, loc[S_LOC64_LEN] = { 0 }, e64[S_EOCD64_MIN] = { 0 };
	uint64_t eocd = 0, end_of_cd, off64;
	int rc = s_find_eocd(src, &eocd, e, why, why_len);

	if (rc)
		return rc;
	if (s_u16(e + 4) != 0 || s_u16(e + 6) != 0 || s_u16(e + 8) != s_u16(e + 10))
		return s_bad(why, why_len, "a multi-disk archive");
	*count = s_u16(e + 10);
	*cd_size = s_u32(e + 12);
	*cd_off = s_u32(e + 16);
	end_of_cd = eocd;
	if (eocd >= S_LOC64_LEN) {
		rc = src->pread(src->ud, loc, S_LOC64_LEN, eocd - S_LOC64_LEN);
		if (rc)
			return rr_fail(why, why_len, rc, "cannot read its end");
	}
	if (eocd < S_LOC64_LEN || s_u32(loc) != S_SIG_LOC64) {
		if (*count == 0xffff || *cd_size == 0xffffffffu || *cd_off == 0xffffffffu)
			return s_bad(why, why_len, "ZIP64 values without a ZIP64 locator");
		goto check;
	}
	/* ZIP64: the locator points at the ZIP64 end record, which must sit right before it. */
	off64 = s_u64(loc + 8);
	if (s_u32(loc + 4) != 0 || s_u32(loc + 16) != 1)
		return s_bad(why, why_len, "a multi-disk ZIP64 archive");
	if (off64 > eocd - S_LOC64_LEN || eocd - S_LOC64_LEN - off64 < S_EOCD64_MIN)
		return s_bad(why, why_len, "the ZIP64 end record is out of place");
	rc = src->pread(src->ud, e64, S_EOCD64_MIN, off64);
	if (rc)
		return rr_fail(why, why_len, rc, "cannot read its ZIP64 end record");
	if (s_u32(e64) != S_SIG_EOCD64 || s_u64(e64 + 4) != eocd - S_LOC64_LEN - off64 - 12)
		return s_bad(why, why_len, "the ZIP64 end record is malformed");
	if (s_u32(e64 + 16) != 0 || s_u32(e64 + 20) != 0 || s_u64(e64 + 24) != s_u64(e64 + 32))
		return s_bad(why, why_len, "a multi-disk ZIP64 archive");
	/* The 32-bit fields either agree or say "see ZIP64". */
	if ((*count != 0xffff && *count != s_u64(e64 + 32)) ||
	    (*cd_size != 0xffffffffu && *cd_size != s_u64(e64 + 40)) ||
	    (*cd_off != 0xffffffffu && *cd_off != s_u64(e64 + 48)))
		return s_bad(why, why_len, "the end records disagree");
	*count = s_u64(e64 + 32);
	*cd_size = s_u64(e64 + 40);
	*cd_off = s_u64(e64 + 48);
	end_of_cd = off64;
check:
	if (*cd_off > end_of_cd || end_of_cd - *cd_off != *cd_size)
		return s_bad(why, why_len, "the central directory does not end where the end "
			     "records begin");
	if (*count > RR_ZIP_MAX_ENTRIES)
		return rr_fail(why, why_len, RR_ETOOBIG, "more than %u entries", RR_ZIP_MAX_ENTRIES);
	if (*cd_size > RR_ZIP_MAX_CD)
		return rr_fail(why, why_len, RR_ETOOBIG, "a central directory over %u MiB",
			       RR_ZIP_MAX_CD >> 20);
	if (*cd_size / S_CENTRAL_LEN < *count)
		return s_bad(why, why_len, "the central directory is too small for its entries");
	return 0;
}

/* The ZIP64 extended information of an extra field: the values that are 0xFFFFFFFF in the
 * fixed part follow, in this order. */
static int s_zip64_extra(const uint8_t *x, size_t xlen, struct rr_zip_entry *e, int need_u,
			 int need_c, int need_off, int need_disk, int *zip64)
{
	*zip64 = 0;
	for (size_t i = 0; i < xlen;) {
		uint16_t id, len;
		const uint8_t *v;
		size_t k = 0, want;

		if (xlen - i < 4)
			return -1;
		id = s_u16(x + i);
		len = s_u16(x + i + 2);
		if (xlen - i - 4 < len)
			return -1;
		v = x + i + 4;
		i += 4u + len;
		if (id != 0x0001)
			continue;
		if (*zip64)
			return -1; /* twice */
		*zip64 = 1;
		want = 8u * (size_t)(need_u + need_c + need_off) + 4u * (size_t)need_disk;
		if (len < want)
			return -1;
		if (need_u)
			e->usize = s_u64(v + k), k += 8;
		if (need_c)
			e->csize = s_u64(v + k), k += 8;
		if (need_off)
			e->local_off = s_u64(v + k), k += 8;
		if (need_disk && s_u32(v + k) != 0)
			return -1;
	}
	return need_u || need_c || need_off || need_disk ? (*zip64 ? 0 : -1) : 0;
}

static int s_parse_central(const uint8_t *cd, size_t cd_len, size_t *pos, uint64_t cd_off,
			   struct rr_zip_entry *e, int *zip64, char *why, size_t why_len)
{
	const uint8_t *p = cd + *pos;
	uint16_t nlen, xlen, clen, disk;
	uint32_t c32, u32, o32;

	if (cd_len - *pos < S_CENTRAL_LEN || s_u32(p) != S_SIG_CENTRAL)
		return s_bad(why, why_len, "central directory entry at +%zu is malformed", *pos);
	e->flags = s_u16(p + 8);
	e->method = s_u16(p + 10);
	e->crc = s_u32(p + 16);
	c32 = s_u32(p + 20);
	u32 = s_u32(p + 24);
	nlen = s_u16(p + 28);
	xlen = s_u16(p + 30);
	clen = s_u16(p + 32);
	disk = s_u16(p + 34);
	o32 = s_u32(p + 42);
	if (cd_len - *pos - S_CENTRAL_LEN < (size_t)nlen + xlen + clen)
		return s_bad(why, why_len, "central directory entry at +%zu overruns it", *pos);
	if (nlen == 0 || memchr(p + S_CENTRAL_LEN, 0, nlen))
		return s_bad(why, why_len, "an entry name is empty or holds a NUL byte");
	if (e->flags & 0x41)
		return s_bad(why, why_len, "an encrypted entry");
	e->csize = c32;
	e->usize = u32;
	e->local_off = o32;
	if (s_zip64_extra(p + S_CENTRAL_LEN + nlen, xlen, e, u32 == 0xffffffffu,
			  c32 == 0xffffffffu, o32 == 0xffffffffu, disk == 0xffff, zip64) != 0)
		return s_bad(why, why_len, "an entry's ZIP64 extra field is malformed");
	if (disk != 0 && disk != 0xffff)
		return s_bad(why, why_len, "an entry on another disk");
	e->name = malloc((size_t)nlen + 1);
	if (!e->name)
		return RR_ENOMEM;
	memcpy(e->name, p + S_CENTRAL_LEN, nlen);
	e->name[nlen] = '\0';
	e->central_crc_off = cd_off + *pos + 16;
	*pos += S_CENTRAL_LEN + (size_t)nlen + xlen + clen;
	return 0;
}

/* Checks an entry's local header and data descriptor against its central record. */
static int s_check_local(const struct rr_format_src *src, struct rr_zip_entry *e, int zip64,
			 uint64_t limit, char *why, size_t why_len)
{
	uint8_t h[S_LOCAL_LEN], d[24];
	size_t nlen = strlen(e->name);
	char *name = NULL;
	uint64_t at;
	int rc;

	if (e->local_off > limit || limit - e->local_off < S_LOCAL_LEN + nlen)
		return s_bad(why, why_len, "entry %s starts outside the archive", S_Q(e->name));
	rc = src->pread(src->ud, h, S_LOCAL_LEN, e->local_off);
	if (rc)
		return rr_fail(why, why_len, rc, "cannot read a local header");
	if (s_u32(h) != S_SIG_LOCAL || s_u16(h + 6) != e->flags || s_u16(h + 8) != e->method ||
	    s_u16(h + 26) != nlen)
		return s_bad(why, why_len, "entry %s: its local header disagrees with the "
			     "central directory", S_Q(e->name));
	name = malloc(nlen);
	if (!name)
		return RR_ENOMEM;
	rc = src->pread(src->ud, name, nlen, e->local_off + S_LOCAL_LEN);
	if (!rc && memcmp(name, e->name, nlen) != 0)
		rc = s_bad(why, why_len, "entry %s: its local header names another",
			   S_Q(e->name));
	free(name);
	if (rc)
		return rc;
	e->local_crc = s_u32(h + 14);
	e->local_crc_off = e->local_off + 14;
	e->data_off = e->local_off + S_LOCAL_LEN + nlen + s_u16(h + 28);
	if (e->data_off > limit || limit - e->data_off < e->csize)
		return s_bad(why, why_len, "entry %s: its data runs past the central directory",
			     S_Q(e->name));
	at = e->data_off + e->csize;
	if (!(e->flags & 0x08)) {
		if (e->local_crc != e->crc)
			return s_bad(why, why_len, "entry %s: local and central CRC-32 differ",
				     S_Q(e->name));
		e->end = at;
		return 0;
	}
	/* A data descriptor: [signature] crc, sizes (8 bytes each under ZIP64). */
	memset(d, 0, sizeof(d));
	rc = src->pread(src->ud, d, limit - at < sizeof(d) ? (size_t)(limit - at) : sizeof(d), at);
	if (rc)
		return rr_fail(why, why_len, rc, "cannot read a data descriptor");
	/* 8-byte sizes are expected under ZIP64, but writers differ: take the form that fits. */
	for (int form = 0; form < 2; form++) {
		int wide = form == 0 ? zip64 : !zip64;
		size_t sig = s_u32(d) == S_SIG_DESC ? 4 : 0;
		size_t len = sig + (wide ? 20 : 12);
		const uint8_t *q = d + sig;
		int sizes_ok = wide ? s_u64(q + 4) == e->csize && s_u64(q + 12) == e->usize
				    : s_u32(q + 4) == e->csize && s_u32(q + 8) == e->usize;
		if (limit - at >= len && s_u32(q) == e->crc && sizes_ok) {
			e->desc_crc_off = at + sig;
			e->end = at + len;
			return 0;
		}
	}
	return s_bad(why, why_len, "entry %s: its data descriptor disagrees with the central "
		     "directory", S_Q(e->name));
}

static int s_cmp_off(const void *a, const void *b)
{
	const struct rr_zip_entry *x = a, *y = b;
	return x->local_off < y->local_off ? -1 : x->local_off > y->local_off;
}

static int s_cmp_name(const void *a, const void *b, void *ud)
{
	const struct rr_zip *z = ud;
	return strcmp(z->entries[*(const size_t *)a].name, z->entries[*(const size_t *)b].name);
}

/* by_name, and no name twice. */
static int s_index(struct rr_zip *z, char *why, size_t why_len)
{
	z->by_name = malloc((z->n ? z->n : 1) * sizeof(*z->by_name));
	if (!z->by_name)
		return RR_ENOMEM;
	for (size_t i = 0; i < z->n; i++)
		z->by_name[i] = i;
	qsort_r(z->by_name, z->n, sizeof(*z->by_name), s_cmp_name, z);
	for (size_t i = 1; i < z->n; i++)
		if (strcmp(z->entries[z->by_name[i - 1]].name, z->entries[z->by_name[i]].name) == 0)
			return s_bad(why, why_len, "entry %s appears twice",
				     S_Q(z->entries[z->by_name[i]].name));
	return 0;
}

int rr_zip_read(const struct rr_format_src *src, struct rr_zip *out, char *why, size_t why_len)
{
	uint64_t count = 0, cd_off = 0, cd_size = 0;
	uint8_t *cd = NULL;
	size_t pos = 0;
	int rc, *zip64 = NULL;

	memset(out, 0, sizeof(*out));
	rc = s_read_end(src, &cd_off, &cd_size, &count, why, why_len);
	if (rc)
		return rc;
	cd = malloc(cd_size ? (size_t)cd_size : 1);
	out->entries = calloc(count ? (size_t)count : 1, sizeof(*out->entries));
	zip64 = calloc(count ? (size_t)count : 1, sizeof(*zip64));
	if (!cd || !out->entries || !zip64) {
		rc = RR_ENOMEM;
		goto out;
	}
	rc = src->pread(src->ud, cd, (size_t)cd_size, cd_off);
	if (rc) {
		rr_fail(why, why_len, rc, "cannot read its central directory");
		goto out;
	}
	for (uint64_t i = 0; !rc && i < count; i++) {
		rc = s_parse_central(cd, (size_t)cd_size, &pos, cd_off, &out->entries[i], &zip64[i],
				     why, why_len);
		if (!rc)
			out->n++;
	}
	if (!rc && pos != cd_size)
		rc = s_bad(why, why_len, "the central directory has bytes after its last entry");
	for (size_t i = 0; !rc && i < out->n; i++)
		rc = s_check_local(src, &out->entries[i], zip64[i], cd_off, why, why_len);
	if (rc)
		goto out;
	qsort(out->entries, out->n, sizeof(*out->entries), s_cmp_off);
	for (size_t i = 1; !rc && i < out->n; i++)
		if (out->entries[i - 1].end > out->entries[i].local_off)
			rc = s_bad(why, why_len, "entries %s and %s overlap",
				   S_Q(out->entries[i - 1].name), S_Q(out->entries[i].name));
	if (!rc)
		rc = s_index(out, why, why_len);
	out->cd_off = cd_off;
	out->cd_size = cd_size;
out:
	free(cd);
	free(zip64);
	if (rc)
		rr_zip_free(out);
	return rc;
}

void rr_zip_free(struct rr_zip *z)
{
	if (!z)
		return;
	for (size_t i = 0; i < z->n; i++)
		free(z->entries[i].name);
	free(z->entries);
	free(z->by_name);
	memset(z, 0, sizeof(*z));
}

const struct rr_zip_entry *rr_zip_find(const struct rr_zip *z, const char *name)
{
	size_t lo = 0, hi = z->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(z->entries[z->by_name[mid]].name, name);
		if (c == 0)
			return &z->entries[z->by_name[mid]];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
