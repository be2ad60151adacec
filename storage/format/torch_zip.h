/* A strict reader of the zip archives torch.save writes (PyTorch's zip format). What torch
 * (1.13, as Debian ships it) writes: every entry stored (method 0), flags 0x0808 (UTF-8
 * names, sizes and CRC-32 in a data descriptor "PK\7\8" crc32 size32 size32 after the data;
 * the local header's CRC and sizes are 0): "<archive>/data.pkl", the records
 * "<archive>/data/<key>" padded by an "FB" extra field to start on 64 bytes,
 * "<archive>/version" (newer torch adds "<archive>/byteorder", ".data/..."; the archive name
 * is the file's stem when saved to a path), and always a ZIP64 end record and locator
 * before the classic end record. Other writers (python's zipfile) put CRCs in local headers
 * and sizes in ZIP64 extra fields. The reader reads only the end records, the central
 * directory and each local header and descriptor: every length and offset is checked against
 * the file and against the others before it is used. */
#ifndef RR_TORCH_ZIP_H
#define RR_TORCH_ZIP_H

#include <stddef.h>
#include <stdint.h>

#include "rr/format.h"

#define RR_ZIP_MAX_ENTRIES (1u << 20)
#define RR_ZIP_MAX_CD (256u << 20) /* central directory bytes */

struct rr_zip_entry {
	char *name;              /* malloc'd, NUL-terminated (no NUL inside) */
	uint16_t flags, method;
	uint32_t crc;            /* CRC-32 the central directory records */
	uint64_t csize, usize;   /* compressed and uncompressed sizes */
	uint64_t local_off;      /* its local header */
	uint64_t data_off;       /* its first data byte */
	uint64_t end;            /* one past its data and data descriptor */
	uint64_t central_crc_off;   /* where the CRC-32 fields are */
	uint64_t local_crc_off;
	uint64_t desc_crc_off;      /* 0 when it has no data descriptor */
	uint32_t local_crc;      /* the local header's CRC-32 field (0 with a descriptor) */
};

struct rr_zip {
	size_t n;
	struct rr_zip_entry *entries; /* in file order */
	size_t *by_name;              /* entry indices sorted by name */
	uint64_t cd_off, cd_size;
};

/* Reads the archive through src. 0 and out filled (free with rr_zip_free), or
 * RR_ECORRUPT / RR_ETOOBIG with a one-line reason, RR_ENOMEM, or src's read error. On
 * failure out is empty. */
int rr_zip_read(const struct rr_format_src *src, struct rr_zip *out, char *why, size_t why_len);
void rr_zip_free(struct rr_zip *z);

/* Whether a torch.save archive is complete: 0 when its pickle is there and every storage
 * the pickle names has a record, whatever the planner would refuse in it (byte order,
 * compressed entries); a zip this reader refuses, a compressed pickle (torch.jit.save's), one
 * the scanner does not follow, or several archives in one zip are taken as they are (0).
 * RR_ECORRUPT with a reason when a storage has no record, or when the zip holds only the
 * records torch's writer adds as it closes (a save that failed before its pickle);
 * RR_ENOENT when it is no torch.save archive (torch.package's, torch.export's, another
 * zip); RR_ENOMEM or src's read error. */
int rr_torch_complete(const struct rr_format_src *src, char *why, size_t why_len);

/* The entry named name, or NULL. */
const struct rr_zip_entry *rr_zip_find(const struct rr_zip *z, const char *name);

#endif
