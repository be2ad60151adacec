/* The restored-bytes record (rr/restored.h). One line per chunk, sorted, fixed widths:
 *   "resume-run-restored 1\n"
 *   "<sha256, 64 hex> <encoding 0-3> <scale_exp> <xxh128, 32 hex>\n" ...
 * Fixed widths keep the parser a few checks per line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/fsutil.h"
#include "rr/hash.h"
#include "restored.h"

#define S_HEADER "resume-run-restored 1\n"

struct s_entry {
	char sha[RR_SHA256_HEX_LEN + 1];
	int enc, scale;
	char xxh[RR_XXH128_HEX_LEN + 1];
};

struct rr_restored {
	struct s_entry *e;
	size_t n, cap;
	int sorted;
};

struct rr_restored *rr_restored_new(void)
{
	struct rr_restored *r = calloc(1, sizeof(*r));
	if (r)
		r->sorted = 1;
	return r;
}

void rr_restored_destroy(struct rr_restored *r)
{
	if (!r)
		return;
	free(r->e);
	free(r);
}

size_t rr_restored_count(const struct rr_restored *r)
{
	return r ? r->n : 0;
}

static int s_cmp(const void *a, const void *b)
{
	const struct s_entry *x = a, *y = b;
	int c = strcmp(x->sha, y->sha);
	if (c)
		return c;
	if (x->enc != y->enc)
		return x->enc < y->enc ? -1 : 1;
	return (x->scale > y->scale) - (x->scale < y->scale);
}

static void s_sort(struct rr_restored *r)
{
	if (!r->sorted && r->n)
		qsort(r->e, r->n, sizeof(*r->e), s_cmp);
	r->sorted = 1;
}

static struct s_entry *s_find(const struct rr_restored *r, const struct s_entry *key)
{
	if (!r || !r->n)
		return NULL;
	s_sort((struct rr_restored *)r); /* logically const: only the order changes */
	return bsearch(key, r->e, r->n, sizeof(*r->e), s_cmp);
}

static int s_is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int s_key(struct s_entry *k, const char *sha256, enum rr_encoding enc, int scale_exp)
{
	if (!sha256 || strlen(sha256) != RR_SHA256_HEX_LEN || !s_is_hex(sha256, RR_SHA256_HEX_LEN) ||
	    (int)enc < 0 || (int)enc > 3 || scale_exp < -999 || scale_exp > 999)
		return RR_EINVAL;
	memcpy(k->sha, sha256, RR_SHA256_HEX_LEN + 1);
	k->enc = (int)enc;
	k->scale = scale_exp;
	return 0;
}

int rr_restored_add(struct rr_restored *r, const char *sha256, enum rr_encoding enc,
		    int scale_exp, const char *xxh128)
{
	struct s_entry k, *hit;

	if (!xxh128 || strlen(xxh128) != RR_XXH128_HEX_LEN ||
	    !s_is_hex(xxh128, RR_XXH128_HEX_LEN) || s_key(&k, sha256, enc, scale_exp))
		return RR_EINVAL;
	memcpy(k.xxh, xxh128, RR_XXH128_HEX_LEN + 1);
	hit = s_find(r, &k);
	if (hit) {
		memcpy(hit->xxh, k.xxh, sizeof(k.xxh));
		return 0;
	}
	if (r->n == r->cap) {
		size_t ncap = r->cap ? 2 * r->cap : 64;
		void *p = realloc(r->e, ncap * sizeof(*r->e));
		if (!p)
			return RR_ENOMEM;
		r->e = p;
		r->cap = ncap;
	}
	r->e[r->n++] = k;
	r->sorted = r->n < 2 || (r->sorted && s_cmp(&r->e[r->n - 2], &r->e[r->n - 1]) < 0);
	return 0;
}

const char *rr_restored_find(const struct rr_restored *r, const char *sha256,
			     enum rr_encoding enc, int scale_exp)
{
	struct s_entry k;
	const struct s_entry *hit;

	if (s_key(&k, sha256, enc, scale_exp))
		return NULL;
	hit = s_find(r, &k);
	return hit ? hit->xxh : NULL;
}

int rr_restored_to_text(const struct rr_restored *r, struct rr_buf *out)
{
	int rc = rr_buf_append(out, S_HEADER, strlen(S_HEADER));

	s_sort((struct rr_restored *)r);
	for (size_t i = 0; !rc && i < r->n; i++)
		rc = rr_buf_printf(out, "%s %d %d %s\n", r->e[i].sha, r->e[i].enc, r->e[i].scale,
				   r->e[i].xxh);
	return rc;
}

/* Parses one decimal int in [-999, 999] at *p up to the stop byte; advances past it. */
static int s_small_int(const char **p, const char *end, char stop, int *out)
{
	const char *s = *p;
	int neg = 0, v = 0, digits = 0;

	if (s < end && *s == '-') {
		neg = 1;
		s++;
	}
	while (s < end && *s >= '0' && *s <= '9' && digits < 3) {
		v = v * 10 + (*s - '0');
		s++;
		digits++;
	}
	if (!digits || s >= end || *s != stop || (digits > 1 && (*p)[neg] == '0') ||
	    (neg && v == 0))
		return RR_ECORRUPT; /* no digits, too many, leading zeros, "-0" */
	*out = neg ? -v : v;
	*p = s + 1;
	return 0;
}

int rr_restored_parse(const char *text, size_t len, struct rr_restored **out)
{
	struct rr_restored *r;
	const char *p = text, *end = text + len;
	size_t hl = strlen(S_HEADER);
	int rc = 0;

	*out = NULL;
	if (len > RR_RESTORED_MAX_BYTES)
		return RR_ETOOBIG;
	if (len < hl || memcmp(text, S_HEADER, hl) != 0)
		return RR_ECORRUPT;
	r = rr_restored_new();
	if (!r)
		return RR_ENOMEM;
	for (p += hl; !rc && p < end;) {
		char sha[RR_SHA256_HEX_LEN + 1], xxh[RR_XXH128_HEX_LEN + 1];
		int enc, scale;
		struct s_entry k;

		if ((size_t)(end - p) < RR_SHA256_HEX_LEN + 1 || p[RR_SHA256_HEX_LEN] != ' ' ||
		    !s_is_hex(p, RR_SHA256_HEX_LEN)) {
			rc = RR_ECORRUPT;
			break;
		}
		memcpy(sha, p, RR_SHA256_HEX_LEN);
		sha[RR_SHA256_HEX_LEN] = '\0';
		p += RR_SHA256_HEX_LEN + 1;
		rc = s_small_int(&p, end, ' ', &enc);
		if (!rc)
			rc = s_small_int(&p, end, ' ', &scale);
		if (rc || enc < 0 || enc > 3 || (size_t)(end - p) < RR_XXH128_HEX_LEN + 1 ||
		    p[RR_XXH128_HEX_LEN] != '\n' || !s_is_hex(p, RR_XXH128_HEX_LEN)) {
			rc = RR_ECORRUPT;
			break;
		}
		memcpy(xxh, p, RR_XXH128_HEX_LEN);
		xxh[RR_XXH128_HEX_LEN] = '\0';
		p += RR_XXH128_HEX_LEN + 1;
		/* Written sorted, without duplicates: anything else was not written by us. */
		if (s_key(&k, sha, (enum rr_encoding)enc, scale) ||
		    (r->n && s_cmp(&r->e[r->n - 1], &k) >= 0)) {
			rc = RR_ECORRUPT;
			break;
		}
		rc = rr_restored_add(r, sha, (enum rr_encoding)enc, scale, xxh);
	}
	if (rc) {
		rr_restored_destroy(r);
		return rc;
	}
	*out = r;
	return 0;
}

struct rr_restored *rr_restored_load(const char *dir)
{
	struct rr_restored *r = NULL;
	struct rr_buf b;
	char *path = rr_path_join(dir, RR_RESTORED_FILE);

	rr_buf_init(&b, RR_RESTORED_MAX_BYTES);
	if (path && rr_read_regular_file(path, &b) == 0 &&
	    rr_restored_parse(b.data ? (const char *)b.data : "", b.len, &r) != 0)
		r = NULL;
	rr_buf_free(&b);
	free(path);
	return r ? r : rr_restored_new();
}

int rr_restored_save(const struct rr_restored *r, const char *dir)
{
	struct rr_buf b;
	char *path = rr_path_join(dir, RR_RESTORED_FILE);
	int rc = path ? 0 : RR_ENOMEM;

	rr_buf_init(&b, RR_RESTORED_MAX_BYTES);
	if (!rc)
		rc = rr_restored_to_text(r, &b);
	if (!rc)
		rc = rr_write_file_durable(path, b.data, b.len, 0644);
	rr_buf_free(&b);
	free(path);
	return rc;
}
