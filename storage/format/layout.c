#include <stdio.h>
#include <string.h>

#include "rr/error.h"
#include "rr/hash.h"
#include "rr/layout.h"

static int s_fmt_ok(int n)
{
	return n >= 0 && n < RR_KEY_MAX ? 0 : RR_EINVAL;
}

int rr_key_chunk(char *out, const char *run_id, const char *sha)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/chunks/%.2s/%s", run_id, sha, sha));
}

int rr_key_manifest(char *out, const char *run_id, const char *checkpoint)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/checkpoints/%s/manifest.json", run_id,
				 checkpoint));
}

int rr_key_part(char *out, const char *run_id, const char *checkpoint, unsigned rank)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/checkpoints/%s/parts/%u.json", run_id,
				 checkpoint, rank));
}

int rr_key_parts_prefix(char *out, const char *run_id, const char *checkpoint)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/checkpoints/%s/parts/", run_id,
				 checkpoint));
}

int rr_key_mark(char *out, const char *run_id, const char *checkpoint, const char *mark)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/checkpoints/%s/%s.json", run_id,
				 checkpoint, mark));
}

int rr_key_reader(char *out, const char *run_id, const char *checkpoint, const char *token)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/checkpoints/%s/readers/%s.json", run_id,
				 checkpoint, token));
}

int rr_key_notice(char *out, const char *run_id, int64_t unix_ms, unsigned rank)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/notices/%013lld-node%u.json", run_id,
				 (long long)unix_ms, rank));
}

int rr_key_notices_prefix(char *out, const char *run_id)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/notices/", run_id));
}

int rr_key_latest(char *out, const char *run_id)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/LATEST", run_id));
}

int rr_key_event(char *out, const char *run_id, int64_t unix_ms, const char *kind)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/events/%013lld-%s.json", run_id,
				 (long long)unix_ms, kind));
}

int rr_key_checkpoints_prefix(char *out, const char *run_id)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/checkpoints/", run_id));
}

int rr_key_chunks_prefix(char *out, const char *run_id)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/chunks/", run_id));
}

int rr_key_events_prefix(char *out, const char *run_id)
{
	return s_fmt_ok(snprintf(out, RR_KEY_MAX, "%s/events/", run_id));
}

/* Returns the rest of key after "<run_id>/<dir>", or NULL. */
static const char *s_under(const char *key, const char *run_id, const char *dir)
{
	size_t r = strlen(run_id), d = strlen(dir);
	if (strncmp(key, run_id, r) != 0 || key[r] != '/' || strncmp(key + r + 1, dir, d) != 0)
		return NULL;
	return key + r + 1 + d;
}

int rr_key_parse_manifest(const char *key, const char *run_id, char *name, size_t cap)
{
	static const char tail[] = "/manifest.json";
	const char *rest = s_under(key, run_id, "checkpoints/");
	const char *slash;
	size_t n;

	if (!rest || !(slash = strchr(rest, '/')) || strcmp(slash, tail) != 0)
		return 0;
	n = (size_t)(slash - rest);
	if (n == 0 || n >= cap)
		return 0;
	memcpy(name, rest, n);
	name[n] = '\0';
	return 1;
}

enum rr_key_mark_kind rr_key_parse_mark(const char *key, const char *run_id, char *name,
					size_t cap, char *token, size_t token_cap)
{
	static const char readers[] = "/readers/";
	const char *rest = s_under(key, run_id, "checkpoints/");
	const char *slash, *tok;
	enum rr_key_mark_kind kind = RR_KEY_NOT_MARK;
	size_t n, t = 0;

	if (!rest || !(slash = strchr(rest, '/')))
		return RR_KEY_NOT_MARK;
	if (strcmp(slash, "/suspect.json") == 0) {
		kind = RR_KEY_SUSPECT;
	} else if (strcmp(slash, "/proven.json") == 0) {
		kind = RR_KEY_PROVEN;
	} else if (strncmp(slash, readers, sizeof(readers) - 1) == 0) {
		tok = slash + sizeof(readers) - 1;
		t = strlen(tok);
		/* "<token>.json", the token plain (no further '/'), bounded. */
		if (t <= 5 || strcmp(tok + t - 5, ".json") != 0 || memchr(tok, '/', t) ||
		    t - 5 >= token_cap)
			return RR_KEY_NOT_MARK;
		t -= 5;
		memcpy(token, tok, t);
		kind = RR_KEY_READER;
	}
	n = (size_t)(slash - rest);
	if (kind == RR_KEY_NOT_MARK || n == 0 || n >= cap)
		return RR_KEY_NOT_MARK;
	memcpy(name, rest, n);
	name[n] = '\0';
	if (token_cap)
		token[t] = '\0';
	return kind;
}

const char *rr_key_parse_chunk(const char *key, const char *run_id)
{
	const char *rest = s_under(key, run_id, "chunks/");
	if (!rest || strlen(rest) != 3 + RR_SHA256_HEX_LEN || rest[2] != '/')
		return NULL;
	rest += 3;
	if (!rr_is_sha256_hex(rest) || strncmp(rest, rest - 3, 2) != 0)
		return NULL;
	return rest;
}

int rr_key_parse_part(const char *key, const char *run_id, char *name, size_t cap,
		      unsigned *rank)
{
	static const char mid[] = "/parts/";
	const char *rest = s_under(key, run_id, "checkpoints/");
	const char *slash, *digits, *end;
	unsigned long v = 0;
	size_t n;

	if (!rest || !(slash = strchr(rest, '/')) || strncmp(slash, mid, sizeof(mid) - 1) != 0)
		return 0;
	n = (size_t)(slash - rest);
	digits = slash + sizeof(mid) - 1;
	end = digits + strspn(digits, "0123456789");
	/* "0.json", "17.json": decimal without leading zeros, bounded. */
	if (n == 0 || n >= cap || end == digits || end - digits > 6 ||
	    (digits[0] == '0' && end - digits > 1) || strcmp(end, ".json") != 0)
		return 0;
	for (const char *d = digits; d < end; d++)
		v = v * 10 + (unsigned long)(*d - '0');
	memcpy(name, rest, n);
	name[n] = '\0';
	*rank = (unsigned)v;
	return 1;
}
