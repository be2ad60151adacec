/* Multi-node checkpoints: parts, the commit by whichever agent sees the last part, one
 * node's view for restore, and the sweep of parts no commit names (see rr/parts.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr/clock.h"
#include "rr/error.h"
#include "rr/layout.h"
#include "rr/log.h"
#include "rr/parts.h"
#include "rr/persist.h"

struct s_seen {
	const char *run_id;
	const char *name;
	unsigned nnodes;
	unsigned char *have; /* nnodes flags */
	unsigned count;
	int bad_rank;        /* a part of rank >= nnodes was listed: another --nnodes */
	unsigned bad;
};

static int s_on_part(const struct rr_store_entry *e, void *ud)
{
	struct s_seen *w = ud;
	char name[256];
	unsigned rank;

	if (!rr_key_parse_part(e->key, w->run_id, name, sizeof(name), &rank) ||
	    strcmp(name, w->name) != 0)
		return 0;
	if (rank >= w->nnodes) {
		w->bad_rank = 1;
		w->bad = rank;
	} else if (!w->have[rank]) {
		w->have[rank] = 1;
		w->count++;
	}
	return 0;
}

/* Lists the parts of name in the store into w (w->have: w->nnodes flags, the caller's). */
static int s_list_parts(struct rr_store *s, struct s_seen *w)
{
	char key[RR_KEY_MAX];
	int rc = rr_key_parts_prefix(key, w->run_id, w->name);

	return rc ? rc : rr_store_list(s, key, s_on_part, w);
}

/* Reads part rank of name; its own checks (parse, names) make a foreign object an error. */
static int s_load_part(struct rr_store *s, const char *run_id, const char *name,
		       unsigned rank, struct rr_manifest **out)
{
	char key[RR_KEY_MAX], why[200] = "";
	struct rr_buf b;
	int rc;

	rr_buf_init(&b, RR_MANIFEST_MAX_BYTES);
	rc = rr_key_part(key, run_id, name, rank);
	if (!rc)
		rc = rr_store_get(s, key, &b, NULL);
	if (rc) {
		rr_error("part %u of %s cannot be read: %s", rank, name, rr_store_strerror(rc));
		goto out;
	}
	rc = rr_manifest_parse((const char *)b.data, b.len, out, why, sizeof(why));
	if (rc) {
		rr_error("part %u of %s is damaged: %s", rank, name, why);
		goto out;
	}
	if (strcmp((*out)->checkpoint, name) != 0 || strcmp((*out)->run_id, run_id) != 0) {
		rr_error("part %u of %s names another checkpoint (%s/%s)", rank, name,
			 (*out)->run_id, (*out)->checkpoint);
		rr_manifest_destroy(*out);
		*out = NULL;
		rc = RR_EINVAL;
	}
out:
	rr_buf_free(&b);
	return rc;
}

/* Moves every file of part (rank) into m under RR_PART_DIR<rank>/; part keeps none. */
static int s_take_files(struct rr_manifest *m, struct rr_manifest *part, unsigned rank)
{
	struct rr_file_entry *grown;
	char **paths;
	int rc = 0;

	if (!part->nfiles)
		return 0;
	grown = realloc(m->files, (m->nfiles + part->nfiles) * sizeof(*grown));
	if (!grown)
		return RR_ENOMEM;
	m->files = grown;
	/* Every new path first, so that a failure leaves each file with one owner. */
	paths = calloc(part->nfiles, sizeof(*paths));
	for (size_t f = 0; paths && f < part->nfiles && !rc; f++) {
		size_t n = strlen(RR_PART_DIR) + 12 + strlen(part->files[f].path);
		paths[f] = malloc(n);
		if (!paths[f])
			rc = RR_ENOMEM;
		else
			snprintf(paths[f], n, "%s%u/%s", RR_PART_DIR, rank, part->files[f].path);
	}
	if (!paths || rc) {
		for (size_t f = 0; paths && f < part->nfiles; f++)
			free(paths[f]);
		free(paths);
		return RR_ENOMEM;
	}
	for (size_t f = 0; f < part->nfiles; f++) {
		free(part->files[f].path);
		part->files[f].path = paths[f];
		m->files[m->nfiles++] = part->files[f];
	}
	free(paths);
	free(part->files);
	part->files = NULL;
	part->nfiles = 0;
	return 0;
}

/* The commit manifest the N parts make. */
static int s_build_commit(struct rr_store *s, const char *run_id, const char *name,
			  unsigned nnodes, const char *host, struct rr_manifest **out)
{
	struct rr_manifest *m = calloc(1, sizeof(*m)), *part = NULL;
	int rc = 0;

	if (!m)
		return RR_ENOMEM;
	m->run_id = strdup(run_id);
	m->checkpoint = strdup(name);
	m->host = host ? strdup(host) : NULL;
	if (!m->run_id || !m->checkpoint || (host && !m->host))
		rc = RR_ENOMEM;
	for (unsigned r = 0; !rc && r < nnodes; r++) {
		rc = s_load_part(s, run_id, name, r, &part);
		/* Nodes' trainers commit a step at slightly different times: the last one's
		 * is when the whole checkpoint existed. */
		if (!rc && part->committed_unix_ms > m->committed_unix_ms)
			m->committed_unix_ms = part->committed_unix_ms;
		if (!rc)
			rc = s_take_files(m, part, r);
		rr_manifest_destroy(part);
		part = NULL;
	}
	m->created_unix_ms = rr_wall_ms();
	if (rc) {
		rr_manifest_destroy(m);
		m = NULL;
	}
	*out = m;
	return rc;
}

/* The store holds a commit manifest of name already: the same content is this commit. */
static int s_settle_existing(struct rr_store *s, const char *key, const char *name,
			     const struct rr_manifest *ours, struct rr_manifest **theirs)
{
	char why[200] = "";
	struct rr_buf b;
	int rc;

	rr_buf_init(&b, RR_MANIFEST_MAX_BYTES);
	rc = rr_store_get(s, key, &b, NULL);
	if (!rc)
		rc = rr_manifest_parse((const char *)b.data, b.len, theirs, why, sizeof(why));
	rr_buf_free(&b);
	if (rc) {
		rr_error("%s is committed in the store but its manifest cannot be read (%s); "
			 "not written over it", name, why[0] ? why : rr_store_strerror(rc));
		return RR_EPRECOND;
	}
	rc = rr_persist_compare_existing(ours, *theirs);
	return rc == RR_EEXIST ? 0 : rc;
}

int rr_parts_commit(struct rr_store *s, const char *run_id, const char *name, unsigned nnodes,
		    const char *host, struct rr_manifest **commit_out)
{
	struct s_seen w = { .run_id = run_id, .name = name, .nnodes = nnodes };
	struct rr_manifest *ours = NULL, *theirs = NULL;
	char key[RR_KEY_MAX];
	struct rr_buf json;
	int rc;

	rr_buf_init(&json, RR_MANIFEST_MAX_BYTES);
	if (commit_out)
		*commit_out = NULL;
	w.have = calloc(nnodes ? nnodes : 1, 1);
	if (!w.have)
		return RR_ENOMEM;
	rc = s_list_parts(s, &w);
	if (rc)
		goto out;
	if (w.bad_rank) {
		rr_error("%s has a part of node %u in the store but this job has %u nodes: the "
			 "store was written with another --nnodes", name, w.bad, nnodes);
		rc = RR_EINVAL;
		goto out;
	}
	if (w.count < nnodes) {
		rr_debug("%s: %u of %u parts in the store; the last node's agent commits it", name,
			 w.count, nnodes);
		rc = RR_PARTS_NOT_YET;
		goto out;
	}
	rc = s_build_commit(s, run_id, name, nnodes, host, &ours);
	if (!rc)
		rc = rr_manifest_to_json(ours, &json);
	if (!rc)
		rc = rr_key_manifest(key, run_id, name);
	if (rc)
		goto out;
	/* Create-only: of two agents that both saw the last part, one writes it and the other
	 * finds the same content, which is its commit too. */
	rc = rr_store_put(s, key, json.data, json.len, &(struct rr_put_opts){ .if_none_match = 1 },
			  NULL);
	if (rc == RR_EEXIST)
		rc = s_settle_existing(s, key, name, ours, &theirs);
	else if (!rc)
		rr_info("%s committed: all %u parts are in the store", name, nnodes);
	if (!rc && commit_out) {
		*commit_out = ours;
		ours = NULL;
	}
out:
	free(w.have);
	rr_buf_free(&json);
	rr_manifest_destroy(ours);
	rr_manifest_destroy(theirs);
	return rc;
}

/* The rank a path of a commit manifest belongs to, and where its own path starts; -1 for
 * a path outside every part. */
static long s_path_rank(const char *path, const char **rest)
{
	const char *d = path + strlen(RR_PART_DIR), *end;
	long v = 0;

	if (strncmp(path, RR_PART_DIR, strlen(RR_PART_DIR)) != 0)
		return -1;
	end = d + strspn(d, "0123456789");
	if (end == d || end - d > 6 || *end != '/' || !end[1])
		return -1;
	for (const char *p = d; p < end; p++)
		v = v * 10 + (*p - '0');
	*rest = end + 1;
	return v;
}

/* The commit names no file of a node whose checkpoint had none (an empty part): the parts it
 * was made of, which the store keeps as long as its manifest (retention deletes the manifest
 * first; the sweep only parts no commit names), say how many nodes wrote it. Returns 0 when
 * they are nnodes, RR_EINVAL with the reason in why, or the store's error. all_named: the
 * commit names files of every rank below nnodes, so only a part of a rank beyond them (an
 * empty part of a larger job) tells of another --nnodes; parts missing are then no reason
 * to refuse a checkpoint whose files say enough. */
static int s_check_parts(struct rr_store *s, const char *run_id, const char *name,
			 unsigned nnodes, int all_named, char *why, size_t why_len)
{
	struct s_seen w = { .run_id = run_id, .name = name, .nnodes = nnodes };
	int rc;

	w.have = calloc(nnodes, 1);
	if (!w.have)
		return RR_ENOMEM;
	rc = s_list_parts(s, &w);
	if (rc)
		snprintf(why, why_len, "the parts of checkpoint %s cannot be listed: %s", name,
			 rr_store_strerror(rc));
	else if (w.bad_rank || (!all_named && w.count != nnodes)) {
		snprintf(why, why_len, "checkpoint %s was written by a job of %u nodes%s; this "
			 "agent runs with --nnodes %u", name, w.bad_rank ? w.bad + 1 : w.count,
			 w.bad_rank ? " (or more)" : "", nnodes);
		rc = RR_EINVAL;
	}
	free(w.have);
	return rc;
}

int rr_parts_view(struct rr_store *s, const char *run_id, struct rr_manifest *m,
		  unsigned nnodes, unsigned rank, char *why, size_t why_len)
{
	unsigned char *have = calloc(nnodes + 1, 1);
	unsigned distinct = 0, outside = 0;
	long max_rank = -1;
	size_t keep = 0;
	int rc = 0;

	if (!have)
		return RR_ENOMEM;
	for (size_t f = 0; f < m->nfiles; f++) {
		const char *rest;
		long r = s_path_rank(m->files[f].path, &rest);
		if (r < 0) {
			outside++;
			continue;
		}
		if (r > max_rank)
			max_rank = r;
		if (r < (long)nnodes && !have[r]) {
			have[r] = 1;
			distinct++;
		}
	}
	if (nnodes == 1) {
		if (m->nfiles && !outside) {
			snprintf(why, why_len, "checkpoint %s was written by a %ld-node job (or more); "
				 "this agent runs with --nnodes 1", m->checkpoint, max_rank + 1);
			rc = RR_EINVAL;
		}
		goto out;
	}
	if (outside || max_rank >= (long)nnodes) {
		if (outside == m->nfiles)
			snprintf(why, why_len, "checkpoint %s was written by a single-node job; this "
				 "agent runs with --nnodes %u", m->checkpoint, nnodes);
		else
			snprintf(why, why_len, "checkpoint %s was written by a job of %ld nodes; "
				 "this agent runs with --nnodes %u", m->checkpoint, max_rank + 1,
				 nnodes);
		rc = RR_EINVAL;
		goto out;
	}
	rc = s_check_parts(s, run_id, m->checkpoint, nnodes, distinct == nnodes, why, why_len);
	if (rc)
		goto out;
	/* Keep node rank's files (paths shortened), free the others. */
	struct rr_manifest *drop = calloc(1, sizeof(*drop));
	if (drop)
		drop->files = calloc(m->nfiles ? m->nfiles : 1, sizeof(*drop->files));
	if (!drop || !drop->files) {
		free(drop);
		rc = RR_ENOMEM;
		goto out;
	}
	for (size_t f = 0; f < m->nfiles; f++) {
		struct rr_file_entry fe = m->files[f];
		const char *rest;
		if (s_path_rank(fe.path, &rest) == (long)rank) {
			memmove(fe.path, rest, strlen(rest) + 1);
			m->files[keep++] = fe;
		} else {
			drop->files[drop->nfiles++] = fe;
		}
	}
	m->nfiles = keep;
	rr_manifest_destroy(drop);
out:
	free(have);
	return rc;
}

int rr_parts_catalog_view(struct rr_store *s, struct rr_catalog *c, unsigned nnodes,
			  unsigned rank)
{
	char why[300];

	for (size_t i = 0; i < c->n; i++) {
		struct rr_catalog_entry *e = &c->entries[i];
		if (!e->committed || !e->manifest)
			continue;
		int rc = rr_parts_view(s, c->run_id, e->manifest, nnodes, rank, why, sizeof(why));
		if (rc) {
			rr_error("%s", why);
			return rc;
		}
	}
	return 0;
}

struct s_sweep {
	const char *run_id;
	char (*committed)[256]; /* names with a manifest.json */
	size_t ncommitted, cap_c;
	struct s_part_key {
		char *key;
		char name[256];
		int64_t mtime_ms;
	} *parts;
	size_t nparts, cap_p;
};

static int s_on_key(const struct rr_store_entry *e, void *ud)
{
	struct s_sweep *w = ud;
	char name[256];
	unsigned rank;

	if (rr_key_parse_manifest(e->key, w->run_id, name, sizeof(name))) {
		if (w->ncommitted == w->cap_c) {
			size_t n = w->cap_c ? w->cap_c * 2 : 16;
			void *p = realloc(w->committed, n * sizeof(*w->committed));
			if (!p)
				return RR_ENOMEM;
			w->committed = p;
			w->cap_c = n;
		}
		memcpy(w->committed[w->ncommitted++], name, sizeof(name));
	} else if (rr_key_parse_part(e->key, w->run_id, name, sizeof(name), &rank)) {
		if (w->nparts == w->cap_p) {
			size_t n = w->cap_p ? w->cap_p * 2 : 16;
			void *p = realloc(w->parts, n * sizeof(*w->parts));
			if (!p)
				return RR_ENOMEM;
			w->parts = p;
			w->cap_p = n;
		}
		struct s_part_key *pk = &w->parts[w->nparts];
		pk->key = strdup(e->key);
		if (!pk->key)
			return RR_ENOMEM;
		memcpy(pk->name, name, sizeof(name));
		pk->mtime_ms = e->mtime_unix_ms;
		w->nparts++;
	}
	return 0;
}

int rr_parts_sweep(struct rr_store *s, const char *run_id, int64_t grace_ms, size_t *deleted)
{
	struct s_sweep w = { .run_id = run_id };
	char key[RR_KEY_MAX];
	const char **doomed = NULL;
	size_t ndoomed = 0;
	int64_t now;
	int rc;

	if (deleted)
		*deleted = 0;
	rc = rr_key_checkpoints_prefix(key, run_id);
	if (!rc)
		rc = rr_store_list(s, key, s_on_key, &w);
	if (rc || !w.nparts)
		goto out;
	/* The store's clock, which the listing's times are in (its answer just told it), as
	 * retention ages chunks: this machine's may be hours off. */
	now = rr_store_now_ms(s);
	doomed = calloc(w.nparts, sizeof(*doomed));
	if (!doomed) {
		rc = RR_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < w.nparts; i++) {
		int committed = 0, young = 0;
		for (size_t k = 0; k < w.ncommitted && !committed; k++)
			committed = strcmp(w.committed[k], w.parts[i].name) == 0;
		/* A checkpoint is as young as its youngest part: its last node may be about to
		 * commit it. */
		for (size_t k = 0; k < w.nparts && !young; k++)
			young = strcmp(w.parts[k].name, w.parts[i].name) == 0 &&
				now - w.parts[k].mtime_ms < grace_ms;
		if (!committed && !young)
			doomed[ndoomed++] = w.parts[i].key;
	}
	if (ndoomed) {
		rc = rr_store_del_many(s, doomed, ndoomed);
		if (!rc) {
			rr_info("retention: deleted %zu parts of checkpoints no commit names",
				ndoomed);
			if (deleted)
				*deleted = ndoomed;
		}
	}
out:
	for (size_t i = 0; i < w.nparts; i++)
		free(w.parts[i].key);
	free(w.parts);
	free(w.committed);
	free(doomed);
	return rc;
}

/* Whether name is among the n committed names. */
static int s_committed(const struct s_sweep *w, const char *name)
{
	for (size_t k = 0; k < w->ncommitted; k++)
		if (strcmp(w->committed[k], name) == 0)
			return 1;
	return 0;
}

static int s_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rr_parts_pending(struct rr_store *s, const char *run_id, struct rr_parts_pending *out)
{
	struct s_sweep w = { .run_id = run_id };
	char key[RR_KEY_MAX];
	int rc;

	memset(out, 0, sizeof(*out));
	rc = rr_key_checkpoints_prefix(key, run_id);
	if (!rc)
		rc = rr_store_list(s, key, s_on_key, &w);
	if (!rc && w.nparts) {
		out->parts = calloc(w.nparts, sizeof(*out->parts));
		out->keys = calloc(w.nparts, sizeof(*out->keys));
		if (!out->parts || !out->keys)
			rc = RR_ENOMEM;
	}
	for (size_t i = 0; !rc && i < w.nparts; i++) {
		unsigned rank;
		char name[256];
		if (s_committed(&w, w.parts[i].name) ||
		    !rr_key_parse_part(w.parts[i].key, run_id, name, sizeof(name), &rank))
			continue;
		rc = s_load_part(s, run_id, name, rank, &out->parts[out->n]);
		if (rc == RR_ENOENT) { /* swept (or committed and retired) since the listing */
			rc = 0;
			continue;
		}
		if (!rc) {
			out->keys[out->n++] = w.parts[i].key;
			w.parts[i].key = NULL;
		}
	}
	if (!rc && out->n)
		qsort(out->keys, out->n, sizeof(*out->keys), s_cmp_str);
	for (size_t i = 0; i < w.nparts; i++)
		free(w.parts[i].key);
	free(w.parts);
	free(w.committed);
	if (rc)
		rr_parts_pending_free(out);
	return rc;
}

int rr_parts_pending_has(const struct rr_parts_pending *p, const char *key)
{
	return p->n && bsearch(&key, p->keys, p->n, sizeof(*p->keys), s_cmp_str) != NULL;
}

void rr_parts_pending_free(struct rr_parts_pending *p)
{
	for (size_t i = 0; i < p->n; i++) {
		rr_manifest_destroy(p->parts[i]);
		free(p->keys[i]);
	}
	free(p->parts);
	free(p->keys);
	memset(p, 0, sizeof(*p));
}
