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
/* Marks beside a checkpoint's manifest (README, "Suspect and proven checkpoints"):
 * checkpoints/<name>/suspect.json, checkpoints/<name>/proven.json, and a restore's lease
 * while it reads one, checkpoints/<name>/readers/<token>.json. */
int rr_key_mark(char *out, const char *run_id, const char *checkpoint, const char *mark);
int rr_key_reader(char *out, const char *run_id, const char *checkpoint, const char *token);
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
enum rr_key_mark_kind { RR_KEY_NOT_MARK, RR_KEY_SUSPECT, RR_KEY_PROVEN, RR_KEY_READER };
/* For a mark's key (rr_key_mark, rr_key_reader), copies <name> into name (cap bytes) and a
 * reader's <token> into token (token_cap bytes; "" for the others) and returns its kind;
 * RR_KEY_NOT_MARK for any other key. */
enum rr_key_mark_kind rr_key_parse_mark(const char *key, const char *run_id, char *name,
					size_t cap, char *token, size_t token_cap);
/* For a key under "<run>/chunks/xx/<sha>", returns a pointer to <sha> inside key, else NULL. */
const char *rr_key_parse_chunk(const char *key, const char *run_id);

#endif
