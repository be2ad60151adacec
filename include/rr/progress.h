/* Progress of a long persist or restore: a live line on a terminal, otherwise a line every
 * 10 s with bytes, MB/s and time left. Quiet for operations that finish within 2 s.
 * Thread-safe: workers call rr_progress_add concurrently. */
#ifndef RR_PROGRESS_H
#define RR_PROGRESS_H

#include <stdint.h>

struct rr_progress;

/* what: e.g. "persist step-200"; total: bytes expected. Returns NULL when out of memory
 * (callers may pass NULL to the other functions, which then do nothing). */
struct rr_progress *rr_progress_new(const char *what, uint64_t total);
void rr_progress_add(struct rr_progress *p, uint64_t bytes);
/* Ends a live line (if one was shown) and frees p; NULL is fine. */
void rr_progress_destroy(struct rr_progress *p);

/* For tests: how long an operation stays quiet, and the period of non-terminal lines. */
void rr_progress_set_intervals(int64_t quiet_ms, int64_t line_every_ms);

/* Formats bytes as "12.3 MB" into out (at least 16 bytes). Returns out. */
const char *rr_format_bytes(uint64_t bytes, char *out);

/* Formats seconds as "850 ms", "2.70 s", "12.4 s", "3 min 20 s", "2 h 05 min" or
 * "3 d 04 h" into out (at least 24 bytes). Returns out. */
const char *rr_format_seconds(double s, char *out);

#endif
