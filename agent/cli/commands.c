#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rr/catalog.h"
#include "commands.h"
#include "rr/error.h"
#include "rr/gc.h"
#include "rr/layout.h"
#include "rr/log.h"
#include "rr/marks.h"
#include "rr/progress.h"
#include "rr/commit_rule.h"
#include "rr/parts.h"
#include "rr/restore.h"
#include "rr/runs.h"

#define EXIT_ERROR 125

int rr_cmd_open_store(const struct rr_config *cfg, struct rr_store **s)
{
	struct rr_store_opts o = cfg->store_opts;
	int rc;

	o.existing = 1; /* reading a store creates none */
	rc = rr_store_open(cfg->store_url, &o, s);
	if (rc)
		rr_error("cannot open store %s: %s", cfg->store_url, rr_store_strerror(rc));
	return rc ? EXIT_ERROR : 0;
}

int rr_cmd_check_run(const struct rr_config *cfg, struct rr_store *s)
{
	char runs[1024];
	int rc = rr_runs_exists(s, cfg->run_id);

	if (rc == 1)
		return 0;
	if (!rc)
		rc = rr_runs_list(s, runs, sizeof(runs));
	if (rc)
		rr_error("cannot list the runs of %s: %s", cfg->store_url, rr_store_strerror(rc));
	else if (runs[0])
		rr_error("no run '%s' in %s; runs there: %s", cfg->run_id,
			 cfg->store_url, runs);
	else
		rr_error("no run '%s' in %s, which holds no runs: check --store", cfg->run_id,
			 cfg->store_url);
	return EXIT_ERROR;
}

/* Opens the store and reads the run's catalog; logs and returns 125 on failure, a run the
 * store does not hold included. */
static int s_open(const struct rr_config *cfg, struct rr_store **s, struct rr_catalog **c)
{
	int rc = rr_cmd_open_store(cfg, s);

	if (rc)
		return rc;
	rc = rr_catalog_load(*s, cfg->run_id, c);
	if (rc) {
		rr_error("cannot read run '%s' in %s: %s", cfg->run_id, cfg->store_url,
			 rr_store_strerror(rc));
		rr_store_destroy(*s);
		return EXIT_ERROR;
	}
	if ((*c)->n == 0 && rr_cmd_check_run(cfg, *s)) {
		rr_catalog_destroy(*c);
		rr_store_destroy(*s);
		return EXIT_ERROR;
	}
	return 0;
}

/* STATE in `ls`: committed, suspect (restore passes it over), proven (retention keeps the
 * newest such), or INCOMPLETE. */
static const char *s_state(const struct rr_catalog_entry *e)
{
	if (!e->committed)
		return "INCOMPLETE";
	if (rr_catalog_is_suspect(e))
		return "SUSPECT";
	return e->proven ? "proven" : "committed";
}

int rr_cmd_ls(const struct rr_config *cfg)
{
	struct rr_store *s;
	struct rr_catalog *c;

	if (s_open(cfg, &s, &c))
		return EXIT_ERROR;
	if (c->n == 0)
		printf("no checkpoints of run '%s' in %s\n", cfg->run_id, cfg->store_url);
	else
		printf("  %-24s %-10s %6s %10s %10s  %s\n", "CHECKPOINT", "STATE", "FILES", "SIZE",
		       "STORED", "COMMITTED (UTC)");
	for (size_t i = 0; i < c->n; i++) {
		const struct rr_catalog_entry *e = &c->entries[i];
		const struct rr_manifest *m = e->manifest;
		char b1[16] = "-", b2[16] = "-", when[32] = "-";
		if (m) {
			time_t t = (time_t)(m->committed_unix_ms / 1000);
			struct tm tm;
			rr_format_bytes(rr_manifest_total_size(m), b1);
			rr_format_bytes(rr_manifest_total_stored(m), b2);
			if (gmtime_r(&t, &tm))
				strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		}
		printf("%c %-24s %-10s %6zu %10s %10s  %s%s%s\n",
		       strcmp(e->name, c->latest) == 0 ? '*' : ' ', e->name, s_state(e),
		       m ? m->nfiles : 0, b1, b2, when, e->committed ? "" : "  ",
		       e->committed ? "" : e->problem);
		if (rr_catalog_is_suspect(e))
			printf("    suspect: %s (marked%s%s)\n", e->suspect->why,
			       e->suspect->host[0] ? " on " : "", e->suspect->host);
	}
	rr_catalog_destroy(c);
	rr_store_destroy(s);
	return 0;
}

int rr_cmd_restore(const struct rr_config *cfg)
{
	struct rr_store *s;
	struct rr_catalog *c;
	struct rr_restore_stats st;
	char name[256], why[512], b1[16];
	int rc;

	if (s_open(cfg, &s, &c))
		return EXIT_ERROR;
	if (cfg->checkpoint) {
		const struct rr_catalog_entry *e = rr_catalog_find(c, cfg->checkpoint);
		if (!e || !e->committed) {
			rr_error("checkpoint %s of run '%s' %s%s", cfg->checkpoint, cfg->run_id,
				 e ? "is not usable: " : "is not in the store", e ? e->problem : "");
			rc = RR_ENOENT;
			goto out;
		}
		snprintf(name, sizeof(name), "%s", e->name);
		/* This node's own part (a store of another --nnodes is refused). */
		rc = rr_parts_view(s, cfg->run_id, e->manifest, cfg->nnodes, cfg->node_rank, why,
				   sizeof(why));
		if (rc) {
			rr_error("%s", why);
			goto out;
		}
		if (rr_catalog_is_suspect(e))
			rr_warn("checkpoint %s is marked suspect (%s); restoring it as asked",
				e->name, e->suspect->why);
		rc = rr_restore_leased(s, cfg->run_id, e->manifest, cfg->to, cfg->threads, &st,
				       why, sizeof(why));
		if (rc)
			rr_error("restore of %s failed: %s", name, why);
	} else {
		rc = rr_restore_newest(s, c, cfg->nnodes, cfg->node_rank, cfg->to, cfg->threads,
				       name, sizeof(name), &st);
		if (rc == RR_ENOENT)
			rr_error("no committed checkpoint of run '%s' in %s", cfg->run_id,
				 cfg->store_url);
	}
	if (!rc)
		rr_info("restored %s into %s/%s: %llu files, %s%s", name, cfg->to, name,
			(unsigned long long)st.files, rr_format_bytes(st.bytes, b1),
			st.already_present ? " (already there and identical)" : "");
	if (!rc) {
		const char *pointer = NULL;
		rc = rr_commit_write_pointer(&cfg->commit, cfg->to, name, &pointer);
		if (rc)
			rr_error("cannot write the pointer file naming %s: %s", name,
				 rr_strerror(rc));
		else if (pointer)
			rr_info("wrote %s/%s naming %s", cfg->to, pointer, name);
	}
out:
	rr_catalog_destroy(c);
	rr_store_destroy(s);
	return rc ? EXIT_ERROR : 0;
}

/* 1 when checkpoint name's manifest is no longer in the store (retention deleted it while
 * verify read it), 0 when it is there or the store cannot say. */
static int s_deleted_meanwhile(struct rr_store *s, const char *run_id, const char *name)
{
	char key[RR_KEY_MAX];
	uint64_t size;

	return rr_key_manifest(key, run_id, name) == 0 &&
	       rr_store_head(s, key, &size) == RR_ENOENT;
}

int rr_cmd_verify(const struct rr_config *cfg)
{
	struct rr_store *s;
	struct rr_catalog *c;
	int damaged = 0, checked = 0, unverified = 0;

	if (s_open(cfg, &s, &c))
		return EXIT_ERROR;
	for (size_t i = 0; i < c->n; i++) {
		const struct rr_catalog_entry *e = &c->entries[i];
		char why[512];
		if (cfg->checkpoint && strcmp(e->name, cfg->checkpoint) != 0)
			continue;
		checked++;
		if (!e->committed) {
			printf("%s: INCOMPLETE (%s)\n", e->name, e->problem);
			damaged++;
			continue;
		}
		int rc = rr_verify_checkpoint(s, cfg->run_id, e->manifest, cfg->threads, why,
					      sizeof(why));
		if (rc == 0) {
			printf("%s: ok\n", e->name);
		} else if (rc == RR_ECORRUPT && s_deleted_meanwhile(s, cfg->run_id, e->name)) {
			/* Retention (this run's agent, a gc) took it while it was read: its
			 * chunks went with it, which is no damage. */
			printf("%s: deleted while verified (retention)\n", e->name);
		} else if (rc == RR_ECORRUPT) {
			printf("%s: DAMAGED (%s)\n", e->name, why);
			damaged++;
		} else {
			/* The store could not answer (after its retries), or refused: nothing
			 * is known about the checkpoint's bytes. */
			printf("%s: NOT VERIFIED (%s)\n", e->name, why);
			rr_error("cannot verify %s: %s", e->name, why);
			unverified++;
			if (rc == RR_ECANCELED)
				break;
		}
	}
	if (cfg->checkpoint && !checked) {
		rr_error("checkpoint %s is not in the store", cfg->checkpoint);
		damaged = -1;
	} else if (!checked) {
		/* Nothing verified is not "all intact". */
		rr_error("run '%s' in %s has no checkpoints to verify", cfg->run_id,
			 cfg->store_url);
		damaged = -1;
	}
	rr_catalog_destroy(c);
	rr_store_destroy(s);
	/* Damage found is said whatever else happened; else a checkpoint that could not be
	 * read is an error, not "all intact". */
	return damaged < 0 ? EXIT_ERROR : damaged ? 1 : unverified ? EXIT_ERROR : 0;
}

int rr_cmd_gc(const struct rr_config *cfg)
{
	struct rr_store *s;
	struct rr_gc_stats st;
	char b1[16];
	int rc;

	if (rr_cmd_open_store(cfg, &s))
		return EXIT_ERROR;
	if (rr_cmd_check_run(cfg, s)) {
		rr_store_destroy(s);
		return EXIT_ERROR;
	}
	rc = rr_gc_run_policy(s, cfg->run_id,
			      &(struct rr_gc_policy){ .keep = cfg->keep,
						      .keep_every_ms = cfg->keep_every_ms,
						      .keep_for_ms = cfg->keep_for_ms,
						      .grace_ms = cfg->gc_grace_ms },
			      &st);
	if (rc)
		rr_error("gc of run '%s' failed: %s", cfg->run_id, rr_store_strerror(rc));
	else
		rr_info("gc: deleted %zu checkpoints and %zu chunks (%s); %zu unreferenced chunks "
			"are younger than the grace period", st.checkpoints_deleted,
			st.chunks_deleted, rr_format_bytes(st.bytes_freed, b1), st.chunks_young);
	rr_store_destroy(s);
	return rc ? EXIT_ERROR : 0;
}

int rr_cmd_unmark(const struct rr_config *cfg)
{
	struct rr_store *s;
	struct rr_catalog *c;
	const struct rr_catalog_entry *e;
	int rc;

	if (s_open(cfg, &s, &c))
		return EXIT_ERROR;
	e = rr_catalog_find(c, cfg->checkpoint);
	if (!e || !e->suspect) {
		rr_error("checkpoint %s of run '%s' %s", cfg->checkpoint, cfg->run_id,
			 e ? "has no suspect mark" : "is not in the store");
		rc = RR_ENOENT;
	} else {
		rc = rr_mark_clear_suspect(s, cfg->run_id, cfg->checkpoint);
		if (rc)
			rr_error("cannot clear the suspect mark of %s: %s", cfg->checkpoint,
				 rr_store_strerror(rc));
		else
			rr_info("cleared the suspect mark of %s (it was: %s)", cfg->checkpoint,
				e->suspect->why);
	}
	rr_catalog_destroy(c);
	rr_store_destroy(s);
	return rc ? EXIT_ERROR : 0;
}
