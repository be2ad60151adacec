/* Where things live in the store (README, "What is stored"), under "<run-id>/". */
#ifndef RR_LAYOUT_H
#define RR_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define RR_KEY_MAX 1024

/* Each writes a key into out (RR_KEY_MAX bytes) and returns 0, or RR_EINVAL if it would
 * not fit. */
int rr_key_chunk(char *out, const char *run_id, const char *sha256_hex);
int rr_key_manifest(char *out, const char *run_id, const char *checkpoint);
int rr_key_latest(char *out, const char *run_id);
/* Multi-node (README, "What is stored"): node rank's part of a checkpoint, and where a
 * node's notice goes. */
int rr_key_part(char *out, const char *run_id, const char *checkpoint, unsigned rank);
int rr_key_parts_prefix(char *out, const char *run_id, const char *checkpoint);
int rr_key_notice(char *out, const char *run_id, int64_t unix_ms, unsigned rank);
int rr_key_notices_prefix(char *out, const char *run_id);
int rr_key_event(char *out, const char *run_id, int64_t unix_ms, const char *kind);
/* Prefixes for listing. */
int rr_key_checkpoints_prefix(char *out, const char *run_id);
int rr_key_chunks_prefix(char *out, const char *run_id);
int rr_key_events_prefix(char *out, const char *run_id);

/* For a key under "<run>/checkpoints/<name>/manifest.json", copies <name> into name (cap
 * bytes) and returns 1; returns 0 for any other key. */
int rr_key_parse_manifest(const char *key, const char *run_id, char *name, size_t cap);
/* For a key "<run>/checkpoints/<name>/parts/<rank>.json", copies <name> into name (cap
 * bytes), sets *rank and returns 1; returns 0 for any other key. */
int rr_key_parse_part(const char *key, const char *run_id, char *name, size_t cap,
		      unsigned *rank);
/* For a key under "<run>/chunks/xx/<sha>", returns a pointer to <sha> inside key, else NULL. */
const char *rr_key_parse_chunk(const char *key, const char *run_id);

#endif
