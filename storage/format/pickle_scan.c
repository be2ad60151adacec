/* The pickle scanner: a stack machine over values that are only ever copied, never
 * interpreted beyond what a storage persistent id needs (strings, small integers, global
 * names, tuples). Every opcode's operands are bounds-checked; every pop is checked against
 * the current mark, as the real unpickler does; the memo and tuple pool grow at most one
 * entry per opcode byte, so memory stays proportional to the input. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/error.h"
#include "pickle_scan.h"

enum s_kind { V_OTHER, V_NONE, V_INT, V_STR, V_GLOBAL, V_TUPLE, V_STORAGE, V_UNSET };

/* Strings are (offset, length) into the pickle; a global is two of them (module in a/b,
 * name in i); a tuple is (start, count) in the pool; a storage (what BINPERSID gave) is its
 * index in out->storages (in a). */
struct s_val {
	uint8_t kind;
	uint32_t a, b;
	int64_t i;
};

struct s_vec {
	struct s_val *v;
	size_t n, cap;
};

/* A storage named as UntypedStorage counts bytes; the tensor built on it
 * (_rebuild_tensor_v3's dtype argument) says what its elements are. */
struct s_untyped {
	uint8_t state; /* 0: a typed storage; 1: untyped, no tensor seen; 2: typed by a tensor */
	uint64_t bytes;
};

struct s_scan {
	const uint8_t *buf;
	size_t len, pos;
	struct s_vec stack, pool, memo;
	size_t *marks;
	size_t nmarks, cap_marks;
	size_t memo_count;
	struct rr_pk_scan *out;
	struct s_untyped *untyped; /* beside out->storages */
	size_t cap_out;
	size_t *hash; /* open addressing over out->storages, index + 1 */
	size_t hash_mask;
	char *why;
	size_t why_len;
};

static int s_bad(struct s_scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int s_bad(struct s_scan *s, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return rr_fail(s->why, s->why_len, RR_ECORRUPT, "pickle at byte %zu: %s", s->pos, msg);
}

static int s_push_to(struct s_scan *s, struct s_vec *v, struct s_val x)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 64;
		void *grown;
		/* One budget for stack, tuples and memo: a pickle that needs more is not one of
		 * torch.save's (over 800k tensors) or is built to exhaust memory. */
		if (s->stack.cap + s->pool.cap + s->memo.cap - v->cap + cap > RR_PK_MAX_VALUES)
			return s_bad(s, "more than %u values", RR_PK_MAX_VALUES);
		grown = realloc(v->v, cap * sizeof(*v->v));
		if (!grown)
			return RR_ENOMEM;
		v->v = grown;
		v->cap = cap;
	}
	v->v[v->n++] = x;
	return 0;
}

static int s_push(struct s_scan *s, uint8_t kind, uint32_t a, uint32_t b, int64_t i)
{
	return s_push_to(s, &s->stack, (struct s_val){ .kind = kind, .a = a, .b = b, .i = i });
}

/* Items above the current mark. */
static size_t s_avail(const struct s_scan *s)
{
	return s->stack.n - (s->nmarks ? s->marks[s->nmarks - 1] : 0);
}

static int s_need(struct s_scan *s, size_t k)
{
	return s_avail(s) < k ? s_bad(s, "stack underflow") : 0;
}

/* Operand bytes of the current opcode. */
static int s_take(struct s_scan *s, size_t n, const uint8_t **p)
{
	if (s->len - s->pos < n)
		return s_bad(s, "truncated");
	*p = s->buf + s->pos;
	s->pos += n;
	return 0;
}

static uint64_t s_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t k = n; k-- > 0;)
		v = v << 8 | p[k];
	return v;
}

/* A text line (protocol 0 operands): its offset and length, without the newline. */
static int s_line(struct s_scan *s, uint32_t *off, uint32_t *n)
{
	const uint8_t *nl = memchr(s->buf + s->pos, '\n', s->len - s->pos);

	if (!nl)
		return s_bad(s, "unterminated line");
	*off = (uint32_t)s->pos;
	*n = (uint32_t)(nl - (s->buf + s->pos));
	s->pos = (size_t)(nl - s->buf) + 1;
	return 0;
}

static int s_pop_mark(struct s_scan *s, size_t *from)
{
	if (!s->nmarks)
		return s_bad(s, "no mark to pop");
	*from = s->marks[--s->nmarks];
	return 0;
}

static int s_str_is(const struct s_scan *s, const struct s_val *v, const char *lit)
{
	size_t n = strlen(lit);
	return v->kind == V_STR && v->b == n && memcmp(s->buf + v->a, lit, n) == 0;
}

/* Storage classes torch.save names, and the safetensors dtype of their elements. */
static const struct {
	const char *name;
	enum rr_st_dtype dtype;
} s_types[] = {
	{ "FloatStorage", RR_ST_F32 },    { "DoubleStorage", RR_ST_F64 },
	{ "HalfStorage", RR_ST_F16 },     { "BFloat16Storage", RR_ST_BF16 },
	{ "LongStorage", RR_ST_I64 },     { "IntStorage", RR_ST_I32 },
	{ "ShortStorage", RR_ST_I16 },    { "CharStorage", RR_ST_I8 },
	{ "ByteStorage", RR_ST_U8 },      { "BoolStorage", RR_ST_BOOL },
	{ "ComplexFloatStorage", RR_ST_C64 }, { "UntypedStorage", RR_ST_U8 },
};

static uint64_t s_fnv(const char *k)
{
	uint64_t h = 1469598103934665603ull;
	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 1099511628211ull;
	return h;
}

static int s_grow_hash(struct s_scan *s)
{
	size_t size = (s->hash_mask + 1) * 2;
	size_t *h = calloc(size, sizeof(*h));

	if (!h)
		return RR_ENOMEM;
	for (size_t i = 0; i < s->out->n; i++) {
		size_t at = (size_t)s_fnv(s->out->storages[i].key) & (size - 1);
		while (h[at])
			at = (at + 1) & (size - 1);
		h[at] = i + 1;
	}
	free(s->hash);
	s->hash = h;
	s->hash_mask = size - 1;
	return 0;
}

static int s_record(struct s_scan *s, const char *key, int known, enum rr_st_dtype dtype,
		    uint64_t numel, int untyped, size_t *idx)
{
	struct rr_pk_storage *st;
	size_t at;
	int rc;

	if (2 * (s->out->n + 1) > s->hash_mask + 1) {
		rc = s_grow_hash(s);
		if (rc)
			return rc;
	}
	for (at = (size_t)s_fnv(key) & s->hash_mask; s->hash[at]; at = (at + 1) & s->hash_mask) {
		*idx = s->hash[at] - 1;
		st = &s->out->storages[*idx];
		if (strcmp(st->key, key) != 0)
			continue;
		/* One storage seen through two ids: fine when they agree. */
		if (untyped || s->untyped[*idx].state) {
			if (!untyped || !s->untyped[*idx].state || s->untyped[*idx].bytes != numel)
				st->known = 0;
		} else if (!known || st->dtype != dtype || st->numel != numel) {
			st->known = 0;
		}
		return 0;
	}
	if (s->out->n == s->cap_out) {
		size_t cap = s->cap_out ? 2 * s->cap_out : 32;
		void *grown = realloc(s->out->storages, cap * sizeof(*s->out->storages));
		if (!grown)
			return RR_ENOMEM;
		s->out->storages = grown;
		grown = realloc(s->untyped, cap * sizeof(*s->untyped));
		if (!grown)
			return RR_ENOMEM;
		s->untyped = grown;
		s->cap_out = cap;
	}
	st = &s->out->storages[s->out->n];
	memset(st, 0, sizeof(*st));
	memcpy(st->key, key, strlen(key) + 1);
	st->known = known;
	st->dtype = dtype;
	st->numel = numel;
	s->untyped[s->out->n] = (struct s_untyped){ .state = untyped ? 1 : 0, .bytes = numel };
	*idx = s->out->n;
	s->hash[at] = ++s->out->n;
	return 0;
}

/* BINPERSID's operand: must be a storage id; anything else torch.load would refuse too. */
static int s_persistent_id(struct s_scan *s, const struct s_val *pid, size_t *idx)
{
	const struct s_val *el;
	const char *mod, *name;
	char key[RR_PK_KEY_MAX + 1];
	uint32_t mlen, nlen;
	int known = 0;
	enum rr_st_dtype dtype = RR_ST_U8;

	if (pid->kind != V_TUPLE || pid->b != 5)
		return s_bad(s, "a persistent id that is not a 5-tuple");
	el = s->pool.v + pid->a;
	if (!s_str_is(s, &el[0], "storage"))
		return s_bad(s, "a persistent id that is not a storage");
	if (el[1].kind != V_GLOBAL || el[2].kind != V_STR || el[3].kind != V_STR ||
	    el[4].kind != V_INT || el[4].i < 0)
		return s_bad(s, "a storage id of unexpected shape");
	mod = (const char *)s->buf + el[1].a;
	mlen = el[1].b;
	name = (const char *)s->buf + ((uint64_t)el[1].i >> 32);
	nlen = (uint32_t)((uint64_t)el[1].i & 0xffffffffu);
	if (!((mlen == 5 && memcmp(mod, "torch", 5) == 0) ||
	      (mlen == 13 && memcmp(mod, "torch.storage", 13) == 0)))
		return s_bad(s, "a storage type outside torch");
	if (nlen < 7 || memcmp(name + nlen - 7, "Storage", 7) != 0)
		return s_bad(s, "a storage type that is not a Storage class");
	for (size_t t = 0; t < sizeof(s_types) / sizeof(s_types[0]); t++)
		if (strlen(s_types[t].name) == nlen && memcmp(s_types[t].name, name, nlen) == 0) {
			known = 1;
			dtype = s_types[t].dtype;
		}
	/* The key names a zip entry: keep it to what torch.save writes (decimal) and other
	 * plain names, never a path. */
	if (el[2].b == 0 || el[2].b > RR_PK_KEY_MAX ||
	    strspn((const char *)s->buf + el[2].a,
		   "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.-") < el[2].b ||
	    s->buf[el[2].a] == '.')
		return s_bad(s, "a storage key that is not a plain name");
	memcpy(key, s->buf + el[2].a, el[2].b);
	key[el[2].b] = '\0';
	return s_record(s, key, known, dtype, (uint64_t)el[4].i,
			nlen == 14 && memcmp(name, "UntypedStorage", 14) == 0, idx);
}

static int s_global_is(const struct s_scan *s, const struct s_val *v, const char *mod,
		       const char *name)
{
	size_t ml = strlen(mod), nl = strlen(name);
	return v->kind == V_GLOBAL && v->b == ml && memcmp(s->buf + v->a, mod, ml) == 0 &&
	       ((uint64_t)v->i & 0xffffffffu) == nl &&
	       memcmp(s->buf + ((uint64_t)v->i >> 32), name, nl) == 0;
}

/* Element types of tensors built on untyped storages, as torch names its dtypes. */
static const struct {
	const char *name;
	enum rr_st_dtype dtype;
} s_dtypes[] = {
	{ "float32", RR_ST_F32 },  { "float16", RR_ST_F16 },   { "bfloat16", RR_ST_BF16 },
	{ "float64", RR_ST_F64 },  { "int64", RR_ST_I64 },     { "int32", RR_ST_I32 },
	{ "int16", RR_ST_I16 },    { "int8", RR_ST_I8 },       { "uint8", RR_ST_U8 },
	{ "bool", RR_ST_BOOL },    { "complex64", RR_ST_C64 }, { "uint16", RR_ST_U16 },
	{ "uint32", RR_ST_U32 },   { "uint64", RR_ST_U64 },
	{ "float8_e4m3fn", RR_ST_F8_E4M3 }, { "float8_e5m2", RR_ST_F8_E5M2 },
};

/* REDUCE of torch._utils._rebuild_tensor_v3(storage, offset, size, stride, requires_grad,
 * hooks, dtype, ...): newer torch's form for dtypes without a legacy Storage class, on an
 * UntypedStorage. Nothing is called; the dtype argument types the storage's bytes. */
static void s_note_v3(struct s_scan *s, const struct s_val *fn, const struct s_val *args)
{
	const struct s_val *el;
	struct rr_pk_storage *st;
	struct s_untyped *u;
	enum rr_st_dtype d = RR_ST_U8;
	int found = 0;

	if (!s_global_is(s, fn, "torch._utils", "_rebuild_tensor_v3") || args->kind != V_TUPLE ||
	    args->b < 7)
		return;
	el = s->pool.v + args->a;
	if (el[0].kind != V_STORAGE || el[6].kind != V_GLOBAL)
		return;
	st = &s->out->storages[el[0].a];
	u = &s->untyped[el[0].a];
	for (size_t t = 0; t < sizeof(s_dtypes) / sizeof(s_dtypes[0]); t++)
		if (s_global_is(s, &el[6], "torch", s_dtypes[t].name)) {
			d = s_dtypes[t].dtype;
			found = 1;
		}
	if (!u->state)
		return; /* a typed storage says its own dtype */
	if (!found || (u->state == 2 && st->dtype != d) ||
	    u->bytes % (rr_st_dtype_bits(d) / 8) != 0) {
		st->known = 0;
		return;
	}
	st->dtype = d;
	st->numel = u->bytes / (rr_st_dtype_bits(d) / 8);
	u->state = 2;
}

static int s_memo_put(struct s_scan *s, uint64_t idx)
{
	struct s_val unset = { .kind = V_UNSET };
	int rc = 0;

	if (!s_avail(s))
		return s_bad(s, "memoize with an empty stack");
	/* Picklers number memo entries 0, 1, 2, ...: an index past the next one would only
	 * make the memo large, so it is refused, and the memo grows one entry per PUT. */
	if (idx > s->memo.n)
		return s_bad(s, "memo index %llu out of sequence", (unsigned long long)idx);
	if (idx == s->memo.n)
		rc = s_push_to(s, &s->memo, unset);
	if (rc)
		return rc;
	if (s->memo.v[idx].kind == V_UNSET)
		s->memo_count++;
	s->memo.v[idx] = s->stack.v[s->stack.n - 1];
	return 0;
}

static int s_memo_get(struct s_scan *s, uint64_t idx)
{
	if (idx >= s->memo.n || s->memo.v[idx].kind == V_UNSET)
		return s_bad(s, "memo index %llu was never set", (unsigned long long)idx);
	return s_push_to(s, &s->stack, s->memo.v[idx]);
}

/* Pops k items into a tuple value (in the pool) and pushes it. */
static int s_make_tuple(struct s_scan *s, size_t from)
{
	size_t k = s->stack.n - from, start = s->pool.n;
	int rc = 0;

	if (s->pool.n > UINT32_MAX - k)
		return s_bad(s, "too many tuple items");
	for (size_t i = 0; !rc && i < k; i++)
		rc = s_push_to(s, &s->pool, s->stack.v[from + i]);
	if (rc)
		return rc;
	s->stack.n = from;
	return s_push(s, V_TUPLE, (uint32_t)start, (uint32_t)k, 0);
}

/* Replaces the top n items with one opaque value. */
static int s_collapse(struct s_scan *s, size_t n)
{
	int rc = s_need(s, n);
	if (rc)
		return rc;
	s->stack.n -= n;
	return s_push(s, V_OTHER, 0, 0, 0);
}

static int s_string(struct s_scan *s, size_t lenbytes, int is_signed)
{
	const uint8_t *p = NULL;
	uint64_t n;
	int rc = s_take(s, lenbytes, &p);

	if (rc)
		return rc;
	n = s_le(p, lenbytes);
	if (is_signed && (n & 0x80000000u))
		return s_bad(s, "negative string length");
	if (n > s->len - s->pos)
		return s_bad(s, "a string runs past the end");
	rc = s_push(s, V_STR, (uint32_t)s->pos, (uint32_t)n, 0);
	s->pos += (size_t)n;
	return rc;
}

static int s_int(struct s_scan *s, size_t nbytes, int is_signed)
{
	const uint8_t *p = NULL;
	uint64_t v;
	int rc = s_take(s, nbytes, &p);

	if (rc)
		return rc;
	v = s_le(p, nbytes);
	if (is_signed && nbytes < 8 && nbytes && (v >> (8 * nbytes - 1)) & 1)
		v |= ~0ull << (8 * nbytes); /* sign-extend */
	return s_push(s, V_INT, 0, 0, (int64_t)v);
}

/* LONG1 / LONG4: integers of any length; only those that fit in 8 bytes are kept. */
static int s_long(struct s_scan *s, size_t lenbytes)
{
	const uint8_t *p = NULL;
	uint64_t n;
	int rc = s_take(s, lenbytes, &p);

	if (rc)
		return rc;
	n = s_le(p, lenbytes);
	if (lenbytes == 4 && (n & 0x80000000u))
		return s_bad(s, "negative integer length");
	if (n > s->len - s->pos)
		return s_bad(s, "an integer runs past the end");
	if (n > 8) {
		s->pos += (size_t)n;
		return s_push(s, V_OTHER, 0, 0, 0);
	}
	return s_int(s, (size_t)n, 1);
}

static int s_global_text(struct s_scan *s, int is_inst)
{
	uint32_t moff = 0, mlen = 0, noff = 0, nlen = 0;
	int rc = s_line(s, &moff, &mlen);

	if (!rc)
		rc = s_line(s, &noff, &nlen);
	if (rc)
		return rc;
	if (is_inst) {
		size_t from = 0;
		rc = s_pop_mark(s, &from);
		if (rc)
			return rc;
		s->stack.n = from;
		return s_push(s, V_OTHER, 0, 0, 0);
	}
	return s_push(s, V_GLOBAL, moff, mlen, (int64_t)((uint64_t)noff << 32 | nlen));
}

static int s_step(struct s_scan *s, uint8_t op, int *stop)
{
	const uint8_t *p = NULL;
	size_t from = 0;
	int rc = 0;

	switch (op) {
	case 0x80: /* PROTO */
		rc = s_take(s, 1, &p);
		if (!rc && p[0] > 5)
			rc = s_bad(s, "protocol %u", p[0]);
		return rc;
	case 0x95: /* FRAME: a length hint only */
		return s_take(s, 8, &p);
	case '.': /* STOP */
		if (s->nmarks || s->stack.n != 1)
			return s_bad(s, "STOP with %zu values and %zu marks", s->stack.n, s->nmarks);
		*stop = 1;
		return 0;
	case '(': /* MARK */
		if (s->nmarks == s->cap_marks) {
			size_t cap = s->cap_marks ? 2 * s->cap_marks : 64;
			void *grown = realloc(s->marks, cap * sizeof(*s->marks));
			if (!grown)
				return RR_ENOMEM;
			s->marks = grown;
			s->cap_marks = cap;
		}
		s->marks[s->nmarks++] = s->stack.n;
		return 0;
	case 'N': return s_push(s, V_NONE, 0, 0, 0);
	case 0x88: case 0x89: return s_push(s, V_OTHER, 0, 0, 0); /* NEWTRUE, NEWFALSE */
	case 'J': return s_int(s, 4, 1);      /* BININT */
	case 'K': return s_int(s, 1, 0);      /* BININT1 */
	case 'M': return s_int(s, 2, 0);      /* BININT2 */
	case 0x8a: return s_long(s, 1);       /* LONG1 */
	case 0x8b: return s_long(s, 4);       /* LONG4 */
	case 'G': /* BINFLOAT */
		rc = s_take(s, 8, &p);
		return rc ? rc : s_push(s, V_OTHER, 0, 0, 0);
	case 'X': return s_string(s, 4, 0);   /* BINUNICODE */
	case 0x8c: return s_string(s, 1, 0);  /* SHORT_BINUNICODE */
	case 0x8d: return s_string(s, 8, 0);  /* BINUNICODE8 */
	case 'T': return s_string(s, 4, 1);   /* BINSTRING */
	case 'U': return s_string(s, 1, 0);   /* SHORT_BINSTRING */
	case 'B': return s_string(s, 4, 0);   /* BINBYTES */
	case 'C': return s_string(s, 1, 0);   /* SHORT_BINBYTES */
	case 0x8e: return s_string(s, 8, 0);  /* BINBYTES8 */
	case 0x96: /* BYTEARRAY8: mutable, never part of an id */
		rc = s_string(s, 8, 0);
		if (!rc)
			s->stack.v[s->stack.n - 1].kind = V_OTHER;
		return rc;
	case 'I': case 'L': case 'F': case 'S': case 'V': { /* text INT, LONG, FLOAT, STRING, UNICODE */
		uint32_t off = 0, n = 0;
		rc = s_line(s, &off, &n);
		return rc ? rc : s_push(s, V_OTHER, 0, 0, 0);
	}
	case '}': case ']': case 0x8f: /* EMPTY_DICT, EMPTY_LIST, EMPTY_SET */
		return s_push(s, V_OTHER, 0, 0, 0);
	case ')': return s_push(s, V_TUPLE, (uint32_t)s->pool.n, 0, 0); /* EMPTY_TUPLE */
	case 't': /* TUPLE */
		rc = s_pop_mark(s, &from);
		return rc ? rc : s_make_tuple(s, from);
	case 0x85: case 0x86: case 0x87: /* TUPLE1..3 */
		rc = s_need(s, (size_t)(op - 0x84));
		return rc ? rc : s_make_tuple(s, s->stack.n - (size_t)(op - 0x84));
	case 'l': case 'd': case 0x91: /* LIST, DICT, FROZENSET */
		rc = s_pop_mark(s, &from);
		if (rc)
			return rc;
		s->stack.n = from;
		return s_push(s, V_OTHER, 0, 0, 0);
	case 'e': case 'u': case 0x90: /* APPENDS, SETITEMS, ADDITEMS */
		rc = s_pop_mark(s, &from);
		if (rc)
			return rc;
		if (op == 'u' && (s->stack.n - from) % 2)
			return s_bad(s, "SETITEMS with an odd number of items");
		s->stack.n = from;
		return s_need(s, 1); /* the container */
	case 'a': /* APPEND */
		rc = s_need(s, 2);
		if (!rc)
			s->stack.n--;
		return rc;
	case 's': /* SETITEM */
		rc = s_need(s, 3);
		if (!rc)
			s->stack.n -= 2;
		return rc;
	case 'b': /* BUILD */
		rc = s_need(s, 2);
		if (!rc)
			s->stack.n--;
		if (!rc)
			s->stack.v[s->stack.n - 1].kind = V_OTHER;
		return rc;
	case 'R': /* REDUCE: callable and arguments become an opaque value; nothing is called */
		rc = s_need(s, 2);
		if (!rc)
			s_note_v3(s, &s->stack.v[s->stack.n - 2], &s->stack.v[s->stack.n - 1]);
		return rc ? rc : s_collapse(s, 2);
	case 0x81: return s_collapse(s, 2); /* NEWOBJ */
	case 0x92: return s_collapse(s, 3); /* NEWOBJ_EX */
	case 'o': /* OBJ */
		rc = s_pop_mark(s, &from);
		if (!rc && s->stack.n - from < 1)
			rc = s_bad(s, "OBJ without a class");
		if (rc)
			return rc;
		s->stack.n = from;
		return s_push(s, V_OTHER, 0, 0, 0);
	case 'c': return s_global_text(s, 0); /* GLOBAL */
	case 'i': return s_global_text(s, 1); /* INST */
	case 0x93: { /* STACK_GLOBAL */
		struct s_val *m, *n;
		rc = s_need(s, 2);
		if (rc)
			return rc;
		m = &s->stack.v[s->stack.n - 2];
		n = &s->stack.v[s->stack.n - 1];
		if (m->kind != V_STR || n->kind != V_STR)
			return s_bad(s, "STACK_GLOBAL without two strings");
		*m = (struct s_val){ .kind = V_GLOBAL, .a = m->a, .b = m->b,
				     .i = (int64_t)((uint64_t)n->a << 32 | n->b) };
		s->stack.n--;
		return 0;
	}
	case 0x82: case 0x83: case 0x84: /* EXT1, EXT2, EXT4: a registry code, not looked up */
		rc = s_take(s, op == 0x82 ? 1 : op == 0x83 ? 2 : 4, &p);
		return rc ? rc : s_push(s, V_OTHER, 0, 0, 0);
	case 'Q': { /* BINPERSID */
		struct s_val pid;
		rc = s_need(s, 1);
		if (rc)
			return rc;
		size_t idx = 0;
		pid = s->stack.v[s->stack.n - 1];
		rc = s_persistent_id(s, &pid, &idx);
		if (!rc)
			s->stack.v[s->stack.n - 1] = (struct s_val){ .kind = V_STORAGE,
								     .a = (uint32_t)idx };
		return rc;
	}
	case 'P': return s_bad(s, "a text persistent id");
	case 0x97: case 0x98: return s_bad(s, "out-of-band buffers");
	case 'q': rc = s_take(s, 1, &p); return rc ? rc : s_memo_put(s, p[0]);      /* BINPUT */
	case 'r': rc = s_take(s, 4, &p); return rc ? rc : s_memo_put(s, s_le(p, 4)); /* LONG_BINPUT */
	case 0x94: return s_memo_put(s, s->memo_count); /* MEMOIZE */
	case 'h': rc = s_take(s, 1, &p); return rc ? rc : s_memo_get(s, p[0]);      /* BINGET */
	case 'j': rc = s_take(s, 4, &p); return rc ? rc : s_memo_get(s, s_le(p, 4)); /* LONG_BINGET */
	case 'p': case 'g': { /* PUT, GET with a decimal operand */
		uint32_t off = 0, n = 0;
		uint64_t idx = 0;
		rc = s_line(s, &off, &n);
		if (rc)
			return rc;
		if (n == 0 || n > 10 || strspn((const char *)s->buf + off, "0123456789") < n)
			return s_bad(s, "a memo index that is not a number");
		for (uint32_t k = 0; k < n; k++)
			idx = idx * 10 + (uint64_t)(s->buf[off + k] - '0');
		return op == 'p' ? s_memo_put(s, idx) : s_memo_get(s, idx);
	}
	case '2': /* DUP */
		rc = s_need(s, 1);
		return rc ? rc : s_push_to(s, &s->stack, s->stack.v[s->stack.n - 1]);
	case '0': /* POP: an empty frame pops its mark, as in CPython */
		if (s_avail(s) == 0 && s->nmarks)
			return s_pop_mark(s, &from);
		rc = s_need(s, 1);
		if (!rc)
			s->stack.n--;
		return rc;
	case '1': /* POP_MARK */
		rc = s_pop_mark(s, &from);
		if (!rc)
			s->stack.n = from;
		return rc;
	default:
		s->pos--;
		return s_bad(s, "unknown opcode 0x%02x", op);
	}
}

static int s_cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct rr_pk_storage *)a)->key, ((const struct rr_pk_storage *)b)->key);
}

int rr_pickle_scan(const uint8_t *buf, size_t len, struct rr_pk_scan *out, char *why,
		   size_t why_len)
{
	struct s_scan s = { .buf = buf, .len = len, .out = out, .why = why, .why_len = why_len };
	int rc = 0, stop = 0;

	memset(out, 0, sizeof(*out));
	if (len > RR_PK_MAX_BYTES)
		return rr_fail(why, why_len, RR_ETOOBIG, "a pickle over %u MiB",
			       RR_PK_MAX_BYTES >> 20);
	s.hash = calloc(16, sizeof(*s.hash));
	s.hash_mask = 15;
	if (!s.hash)
		return RR_ENOMEM;
	while (!rc && !stop) {
		if (s.pos >= len) {
			rc = s_bad(&s, "no STOP");
			break;
		}
		rc = s_step(&s, buf[s.pos++], &stop);
	}
	free(s.stack.v);
	free(s.pool.v);
	free(s.memo.v);
	free(s.marks);
	free(s.hash);
	free(s.untyped);
	if (rc)
		rr_pickle_scan_free(out);
	else if (out->n)
		qsort(out->storages, out->n, sizeof(*out->storages), s_cmp_key);
	return rc;
}

void rr_pickle_scan_free(struct rr_pk_scan *s)
{
	if (!s)
		return;
	free(s->storages);
	memset(s, 0, sizeof(*s));
}

const struct rr_pk_storage *rr_pickle_scan_find(const struct rr_pk_scan *s, const char *key)
{
	struct rr_pk_storage k;

	if (strlen(key) > RR_PK_KEY_MAX)
		return NULL;
	memcpy(k.key, key, strlen(key) + 1);
	return s->n ? bsearch(&k, s->storages, s->n, sizeof(*s->storages), s_cmp_key) : NULL;
}
