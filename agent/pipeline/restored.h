/* What a restore wrote where the manifest's hashes cannot say it: a chunk stored lossy
 * (FP16/BF16) comes back as rounded values, whose bytes no manifest hash describes. The
 * record maps such a chunk (its sha256 and how it decodes) to the xxh128 of the bytes the
 * restore wrote, so the next start on the same directory recognises them and copies
 * nothing. Kept as <checkpoint-dir>/.resume-run-restored (a dot-name: never a checkpoint).
 * It is only ever trusted to say "these local bytes are what a restore wrote": a forged
 * record can make the agent keep a local file, which whoever can write that directory
 * could change anyway. */
#ifndef RR_RESTORED_H
#define RR_RESTORED_H

#include <stddef.h>

#include "rr/manifest.h"

#define RR_RESTORED_FILE ".resume-run-restored"
#define RR_RESTORED_MAX_BYTES (16u << 20) /* ceiling on the record read back */

struct rr_restored;

/* An empty record. NULL when out of memory. */
struct rr_restored *rr_restored_new(void);
void rr_restored_destroy(struct rr_restored *r);

/* Parses a record. Anything but the exact format written by rr_restored_to_text is
 * refused (RR_ECORRUPT), as is more than RR_RESTORED_MAX_BYTES (RR_ETOOBIG). On success
 * *out is the caller's. */
int rr_restored_parse(const char *text, size_t len, struct rr_restored **out);

/* Reads <dir>/.resume-run-restored. A missing, unreadable or malformed record (or one that
 * is not a regular file) gives an empty one: it only ever saves a download. */
struct rr_restored *rr_restored_load(const char *dir);

/* Adds (or replaces) the decoded-bytes hash of one chunk. Returns 0 or RR_ENOMEM. */
int rr_restored_add(struct rr_restored *r, const char *sha256, enum rr_encoding enc,
		    int scale_exp, const char *xxh128);

/* The decoded-bytes xxh128 recorded for that chunk, or NULL. */
const char *rr_restored_find(const struct rr_restored *r, const char *sha256,
			     enum rr_encoding enc, int scale_exp);

size_t rr_restored_count(const struct rr_restored *r);

/* Appends the record's text to out. */
int rr_restored_to_text(const struct rr_restored *r, struct rr_buf *out);

/* Writes the record durably as <dir>/.resume-run-restored. */
int rr_restored_save(const struct rr_restored *r, const char *dir);

#endif
