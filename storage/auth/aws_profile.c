/* The AWS shared config and credentials files (include/rr/aws_profile.h).
 *
 * The INI dialect is the one the AWS SDKs specify and botocore reads: "[section]",
 * "key = value", whole-line comments, and indented lines that continue the property above
 * them. An indented line under a property with a value continues that value (joined with
 * "\n"); under a property without a value it is a sub-property ("s3 =" then
 * "  addressing_style = path" gives "s3.addressing_style"). Comment and blank lines do not
 * end a property, so a comment may sit among its sub-properties. Inline comments are not
 * stripped from values (botocore keeps them, and a secret may hold '#' or ';').
 *
 * The files hold secrets, so a reason in `why` names a file and a line, never its text, and
 * every buffer that held a value is wiped before it is freed. */
#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h> /* OPENSSL_cleanse */

#include "rr/aws_profile.h"
#include "rr/buf.h"
#include "rr/error.h"
#include "rr/fsutil.h"
#include "rr/quote.h"

#define S_LINE_MAX 4096   /* bytes of one line, its newline not counted */
#define S_MAX_KEYS 1024   /* in one profile; real ones have a few dozen */
#define S_RANK_CONFIG_DEFAULT 1 /* [default] in the config file */
#define S_RANK_CONFIG 2         /* [profile name] in the config file */
#define S_RANK_CREDENTIALS 3    /* [name] in the credentials file wins over both */

/* --- the INI reader ------------------------------------------------------------------ */

/* A growing value that wipes what it leaves behind (values may be secrets). */
struct s_val {
	char *p;
	size_t len, cap;
};

struct s_ini {
	rr_ini_cb cb;
	void *ud;
	char *why;
	size_t why_cap;
	unsigned line;
	int have_section;
	char section[S_LINE_MAX + 1];
	/* the property the next indented line belongs to */
	enum { S_NONE, S_VALUE, S_PARENT } prop;
	char key[S_LINE_MAX + 1];
	struct s_val value; /* S_VALUE: not yet reported, continuation lines may follow */
	char subkey[2 * S_LINE_MAX + 2];
};

__attribute__((format(printf, 3, 4))) static int s_fail(struct s_ini *x, int rc,
						     const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	if (x->why && x->why_cap) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		snprintf(x->why, x->why_cap, "line %u: %s", x->line, msg);
	}
	return rc;
}

static void s_val_wipe(struct s_val *v)
{
	if (v->p) {
		OPENSSL_cleanse(v->p, v->cap);
		free(v->p);
	}
	memset(v, 0, sizeof(*v));
}

static int s_val_append(struct s_val *v, const char *s, size_t n)
{
	if (n > RR_AWS_PROFILE_MAX_FILE - v->len)
		return RR_ETOOBIG; /* cannot happen for text within the ceiling */
	if (v->len + n + 1 > v->cap) {
		size_t cap = v->cap ? v->cap * 2 : S_LINE_MAX + 1;
		char *p;

		while (cap < v->len + n + 1)
			cap *= 2;
		p = malloc(cap);
		if (!p)
			return RR_ENOMEM;
		if (v->p) {
			memcpy(p, v->p, v->len);
			OPENSSL_cleanse(v->p, v->cap);
			free(v->p);
		}
		v->p = p;
		v->cap = cap;
	}
	memcpy(v->p + v->len, s, n);
	v->len += n;
	v->p[v->len] = '\0';
	return 0;
}

static int s_is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Trims blanks (and a CR left by CRLF) at both ends of s[0..*n); returns the new start. */
static const char *s_trim(const char *s, size_t *n)
{
	while (*n && (s_is_blank(s[0]) || s[0] == '\r')) {
		s++;
		(*n)--;
	}
	while (*n && (s_is_blank(s[*n - 1]) || s[*n - 1] == '\r'))
		(*n)--;
	return s;
}

/* Reports the pending property, if any. */
static int s_flush(struct s_ini *x)
{
	int rc = 0;

	if (x->prop == S_VALUE)
		rc = x->cb(x->section, x->key, x->value.p ? x->value.p : "", x->ud);
	if (x->value.p) {
		OPENSSL_cleanse(x->value.p, x->value.len);
		x->value.len = 0;
		x->value.p[0] = '\0';
	}
	x->prop = S_NONE;
	return rc;
}

static int s_section(struct s_ini *x, const char *s, size_t n)
{
	const char *end = memchr(s, ']', n), *rest;
	size_t len, rest_len;

	if (!end)
		return s_fail(x, RR_ECORRUPT, "a section header without ']'");
	/* after ']' only blanks or a comment */
	rest = end + 1;
	rest_len = n - (size_t)(rest - s);
	rest = s_trim(rest, &rest_len);
	if (rest_len && rest[0] != '#' && rest[0] != ';')
		return s_fail(x, RR_ECORRUPT, "text after a section header");
	len = (size_t)(end - s - 1);
	s = s_trim(s + 1, &len);
	if (!len)
		return s_fail(x, RR_ECORRUPT, "an empty section name");
	memcpy(x->section, s, len);
	x->section[len] = '\0';
	x->have_section = 1;
	return 0;
}

/* Splits "key = value" into a trimmed, lowercased key (copied to key) and a trimmed value. */
static int s_split(struct s_ini *x, const char *s, size_t n, char *key, const char **value,
		   size_t *value_len)
{
	const char *eq = memchr(s, '=', n), *k;
	size_t klen;

	if (!eq)
		return s_fail(x, RR_ECORRUPT, "not a [section], key = value, or comment");
	klen = (size_t)(eq - s);
	k = s_trim(s, &klen);
	if (!klen)
		return s_fail(x, RR_ECORRUPT, "a property without a name");
	for (size_t i = 0; i < klen; i++)
		key[i] = (char)tolower((unsigned char)k[i]);
	key[klen] = '\0';
	*value_len = n - (size_t)(eq + 1 - s);
	*value = s_trim(eq + 1, value_len);
	return 0;
}

/* An indented line under a property: more of its value, or one of its sub-properties. */
static int s_continuation(struct s_ini *x, const char *s, size_t n)
{
	const char *value;
	size_t value_len, klen = strlen(x->key);
	int rc;

	if (x->prop == S_VALUE && x->value.len) {
		rc = s_val_append(&x->value, "\n", 1);
		return rc ? rc : s_val_append(&x->value, s, n);
	}
	x->prop = S_PARENT; /* "key =" with nothing after it: it holds sub-properties */
	memcpy(x->subkey, x->key, klen);
	x->subkey[klen] = '.';
	rc = s_split(x, s, n, x->subkey + klen + 1, &value, &value_len);
	if (rc)
		return rc == RR_ECORRUPT ? s_fail(x, rc, "a sub-property needs key = value") : rc;
	rc = s_val_append(&x->value, value, value_len);
	if (rc)
		return rc;
	rc = x->cb(x->section, x->subkey, x->value.p, x->ud);
	OPENSSL_cleanse(x->value.p, x->value.len);
	x->value.len = 0;
	return rc;
}

static int s_property(struct s_ini *x, const char *s, size_t n)
{
	const char *value;
	size_t value_len;
	int rc;

	if (!x->have_section)
		return s_fail(x, RR_ECORRUPT, "a property before any [section]");
	rc = s_split(x, s, n, x->key, &value, &value_len);
	if (!rc)
		rc = s_val_append(&x->value, value, value_len);
	if (!rc)
		x->prop = S_VALUE;
	return rc;
}

static int s_line(struct s_ini *x, const char *s, size_t n)
{
	int indented = n && s_is_blank(s[0]);
	int rc;

	s = s_trim(s, &n);
	if (!n || s[0] == '#' || s[0] == ';')
		return 0;
	if (indented && x->prop != S_NONE)
		return s_continuation(x, s, n);
	rc = s_flush(x);
	if (rc)
		return rc;
	if (s[0] == '[')
		return s_section(x, s, n);
	return s_property(x, s, n);
}

int rr_ini_parse(const char *text, size_t len, rr_ini_cb cb, void *ud, char *why,
		 size_t why_len)
{
	struct s_ini *x;
	size_t pos = 0;
	int rc = 0;

	if (why && why_len)
		why[0] = '\0';
	if ((!text && len) || !cb)
		return RR_EINVAL;
	if (len > RR_AWS_PROFILE_MAX_FILE) {
		if (why && why_len)
			snprintf(why, why_len, "larger than %u bytes",
				 RR_AWS_PROFILE_MAX_FILE);
		return RR_ETOOBIG;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return RR_ENOMEM;
	x->cb = cb;
	x->ud = ud;
	x->why = why;
	x->why_cap = why_len;
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		pos = 3; /* a UTF-8 byte order mark from a Windows editor */
	while (pos < len && !rc) {
		const char *s = text + pos, *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos;

		pos += n + (nl ? 1 : 0);
		x->line++;
		if (memchr(s, '\0', n))
			rc = s_fail(x, RR_ECORRUPT, "a NUL byte");
		else if (n - (n && s[n - 1] == '\r') > S_LINE_MAX)
			rc = s_fail(x, RR_ETOOBIG, "longer than %d bytes", S_LINE_MAX);
		else
			rc = s_line(x, s, n);
	}
	if (!rc)
		rc = s_flush(x);
	s_val_wipe(&x->value);
	OPENSSL_cleanse(x, sizeof(*x));
	free(x);
	return rc;
}

/* --- the profile --------------------------------------------------------------------- */

struct s_kv {
	char *key;
	char *value;
	int rank;
};

struct rr_aws_profile {
	char *name;
	struct s_kv *kv;
	size_t n, cap;
};

/* What a file's callback needs: which sections belong to the profile, and in what rank. */
struct s_load {
	struct rr_aws_profile *p;
	int config; /* the config file (else the credentials file) */
	int found;  /* a section of the profile was seen */
};

static void s_free_str(char *s)
{
	if (s) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
}

static int s_set(struct rr_aws_profile *p, const char *key, const char *value, int rank)
{
	struct s_kv *kv;
	char *v;

	for (size_t i = 0; i < p->n; i++) {
		if (strcmp(p->kv[i].key, key) != 0)
			continue;
		if (rank < p->kv[i].rank)
			return 0;
		v = strdup(value);
		if (!v)
			return RR_ENOMEM;
		s_free_str(p->kv[i].value);
		p->kv[i].value = v;
		p->kv[i].rank = rank;
		return 0;
	}
	if (p->n == S_MAX_KEYS)
		return RR_ETOOBIG;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		kv = realloc(p->kv, cap * sizeof(*kv));
		if (!kv)
			return RR_ENOMEM;
		p->kv = kv;
		p->cap = cap;
	}
	kv = &p->kv[p->n];
	kv->key = strdup(key);
	kv->value = strdup(value);
	if (!kv->key || !kv->value) {
		free(kv->key);
		s_free_str(kv->value);
		return RR_ENOMEM;
	}
	kv->rank = rank;
	p->n++;
	return 0;
}

/* The rank of a section for the profile, 0 when it is not the profile's. */
static int s_rank(const struct s_load *l, const char *section)
{
	const char *name = l->p->name;
	size_t n;

	if (!l->config)
		return strcmp(section, name) == 0 ? S_RANK_CREDENTIALS : 0;
	if (strcmp(name, "default") == 0 && strcmp(section, "default") == 0)
		return S_RANK_CONFIG_DEFAULT;
	if (strncmp(section, "profile", 7) != 0 || !s_is_blank(section[7]))
		return 0;
	section += 7;
	n = strlen(section);
	section = s_trim(section, &n);
	return n == strlen(name) && memcmp(section, name, n) == 0 ? S_RANK_CONFIG : 0;
}

static int s_load_pair(const char *section, const char *key, const char *value, void *ud)
{
	struct s_load *l = ud;
	int rank = s_rank(l, section);

	if (!rank)
		return 0;
	l->found = 1;
	return s_set(l->p, key, value, rank);
}

/* The file an environment variable names ("~/" expanded), else ~/.aws/<file>; NULL with
 * *rc 0 when there is none to look at (no HOME). Caller frees. */
static char *s_path(const char *env, const char *file, int *rc)
{
	const char *v = getenv(env), *home = getenv("HOME");
	char *p = NULL;

	*rc = 0;
	if (v && v[0]) {
		if (v[0] != '~' || (v[1] && v[1] != '/'))
			p = strdup(v);
		else if (home && home[0])
			p = rr_path_join(home, v[1] ? v + 2 : "");
		else
			return NULL;
	} else if (home && home[0]) {
		char rel[32];
		snprintf(rel, sizeof(rel), ".aws/%s", file);
		p = rr_path_join(home, rel);
	} else {
		return NULL;
	}
	if (!p)
		*rc = RR_ENOMEM;
	return p;
}

static int s_load_file(struct s_load *l, const char *path, char *why, size_t why_len)
{
	char reason[192];
	struct rr_buf b;
	int rc;

	rr_buf_init(&b, RR_AWS_PROFILE_MAX_FILE);
	rc = rr_read_file(path, &b);
	if (rc == RR_ENOENT) {
		rc = 0; /* a missing file is no error */
		goto out;
	}
	if (rc == RR_ETOOBIG) {
		snprintf(why, why_len, "%s: larger than %u bytes", path,
			 RR_AWS_PROFILE_MAX_FILE);
		rc = RR_ECORRUPT;
		goto out;
	}
	if (rc) {
		snprintf(why, why_len, "%s: %s", path, rr_strerror(rc));
		rc = rc == RR_ENOMEM ? rc : RR_EIO;
		goto out;
	}
	reason[0] = '\0';
	rc = rr_ini_parse((const char *)b.data, b.len, s_load_pair, l, reason, sizeof(reason));
	if (rc == RR_ETOOBIG && !reason[0])
		snprintf(reason, sizeof(reason), "more than %d keys in the profile", S_MAX_KEYS);
	if (rc == RR_ENOMEM)
		snprintf(why, why_len, "%s: out of memory", path);
	else if (rc)
		snprintf(why, why_len, "%s: %s", path, reason);
	if (rc == RR_ETOOBIG)
		rc = RR_ECORRUPT;
out:
	if (b.data)
		OPENSSL_cleanse(b.data, b.cap);
	rr_buf_free(&b);
	return rc;
}

int rr_aws_profile_load(const char *name, struct rr_aws_profile **out, char *why,
			size_t why_len)
{
	static const struct {
		const char *env, *file;
		int config;
	} files[] = {
		{ "AWS_CONFIG_FILE", "config", 1 },
		{ "AWS_SHARED_CREDENTIALS_FILE", "credentials", 0 },
	};
	char scratch[8], q[RR_QUOTE_CAP], *paths[2] = { NULL, NULL };
	struct rr_aws_profile *p;
	struct s_load l;
	int explicit = 1, rc = 0, found = 0;

	if (!why || !why_len) {
		why = scratch;
		why_len = sizeof(scratch);
	}
	why[0] = '\0';
	if (!out)
		return RR_EINVAL;
	*out = NULL;
	if (!name) {
		name = getenv("AWS_PROFILE");
		if (!name || !name[0]) {
			name = "default";
			explicit = 0;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->name = strdup(name))) {
		free(p);
		snprintf(why, why_len, "out of memory");
		return RR_ENOMEM;
	}
	for (size_t i = 0; i < 2 && !rc; i++) {
		paths[i] = s_path(files[i].env, files[i].file, &rc);
		if (!paths[i])
			continue;
		l = (struct s_load){ p, files[i].config, 0 };
		rc = s_load_file(&l, paths[i], why, why_len);
		found |= l.found;
	}
	if (rc == RR_ENOMEM && !why[0])
		snprintf(why, why_len, "out of memory");
	if (!rc && !found && explicit) {
		snprintf(why, why_len, "profile %s is in neither %s nor %s", rr_quote_str(q,
			 name),
			 paths[1] ? paths[1] : "(no credentials file)",
			 paths[0] ? paths[0] : "(no config file)");
		rc = RR_ENOENT;
	}
	free(paths[0]);
	free(paths[1]);
	if (rc) {
		rr_aws_profile_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

const char *rr_aws_profile_get(const struct rr_aws_profile *p, const char *key)
{
	if (!p || !key)
		return NULL;
	for (size_t i = 0; i < p->n; i++)
		if (strcasecmp(p->kv[i].key, key) == 0)
			return p->kv[i].value;
	return NULL;
}

const char *rr_aws_profile_name(const struct rr_aws_profile *p)
{
	return p ? p->name : NULL;
}

void rr_aws_profile_free(struct rr_aws_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		s_free_str(p->kv[i].key);
		s_free_str(p->kv[i].value);
	}
	free(p->kv);
	free(p->name);
	free(p);
}
