#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rr/ckpt_order.h"
#include "rr/clock.h"
#include "rr/error.h"
#include "events.h"
#include "rr/gc.h"
#include "rr/layout.h"
#include "rr/log.h"
#include "rr/marks.h"
#include "persister.h"
#include "rr/parts.h"
#include "rr/progress.h"

#define MAX_RESULTS 64

struct s_event {
	char kind[32];
	cJSON *fields;
	struct s_event *next;
};

struct s_slot {
	int have;
	char name[256];
	int64_t ms;
};

struct rr_persister {
	struct rr_persister_config cfg;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_cond_t idle; /* broadcast when running drops to 0 (rr_persister_drop waits) */
	int efd;
	int stop;

	/* Queued checkpoints: a notice's, which nothing replaces and which goes first, and the
	 * newest routine one (the newest wins). */
	struct s_slot urgent, routine;

	/* running checkpoint */
	int running;
	char running_name[256];
	int64_t running_ms;
	atomic_int cancel;
	char cancel_why[300]; /* why the running persist is set aside, for its log line */
	/* The store's cancel flag: set with cancel, but only while the persist proper runs
	 * (chunks and manifest), so that LATEST and the ledger event of a checkpoint already
	 * committed still go out; cleared when the persist returns. */
	int persisting;
	atomic_int store_cancel;
	/* Retention: due once at start (a machine catches up on what an earlier one left);
	 * retaining while it runs (a notice's checkpoint or leaving stops it); leaving: the
	 * agent is on its way out, and starts no more of it. */
	int retention_due, retaining, leaving;

	/* newest checkpoint known to be in the store, and its manifest for reuse */
	char done[256];
	int64_t done_ms;
	char warned[256]; /* the far-future name already warned about */
	char dropped[256]; /* the last submission warned about as not newer */
	int done_elsewhere; /* done is the store's newest as found at start, not persisted here */
	/* Only this thread reads, replaces and frees previous while it runs (a persist uses it
	 * throughout); rr_persister_rewind leaves its manifest in rewound, taken over here
	 * before the next piece of work. */
	struct rr_manifest *previous;
	struct rr_manifest *rewound;
	int rewind_pending;
	int previous_checked; /* its directory was compared with it (rr_persist_late_files) */
	struct rr_throughput throughput; /* learned from each persist (agent/run/throughput.c) */
	struct rr_chunk_index *chunks;   /* the store's chunks, so not every persist lists them */

	struct s_event *events, **events_tail;
	struct rr_persist_result results[MAX_RESULTS];
	size_t nresults;
};

static void s_notify(struct rr_persister *p)
{
	uint64_t one = 1;
	ssize_t n = write(p->efd, &one, sizeof(one));
	(void)n;
}

static int s_newer(const char *a, int64_t a_ms, const char *b, int64_t b_ms)
{
	return rr_checkpoint_later(a, a_ms, b, b_ms);
}

/* name, committed at ms, comes after what is persisted. done from the store (restored, or
 * the store's newest at start) has its writer's commit time, another machine's clock: a
 * commit here of that same name without a step number is after it whatever the clocks say
 * (the run loop saw it committed after the restore). Called with the lock held. */
static int s_after_done(const struct rr_persister *p, const char *name, int64_t ms)
{
	uint64_t step;

	return s_newer(name, ms, p->done, p->done_ms) ||
	       (p->done_elsewhere && strcmp(name, p->done) == 0 && !rr_checkpoint_step(name, &step));
}

/* A commit that is later than the newest persisted checkpoint but sorts before it by name:
 * that one has a far-future name (a stray "step-9999999999"). It is persisted all the same,
 * by commit time; the warning, once per such name, says what the store will make of it,
 * since LATEST and restore order by step number. Called with the lock held. */
static void s_warn_outranked(struct rr_persister *p, const char *name, int64_t ms)
{
	if (!p->done[0] || rr_checkpoint_compare(name, ms, p->done, p->done_ms) >= 0 ||
	    strcmp(p->warned, p->done) == 0)
		return;
	snprintf(p->warned, sizeof(p->warned), "%s", p->done);
	rr_warn("checkpoint %s sorts after %s, which was committed later: persisting "
		"checkpoints by commit time in this run; but LATEST and restore order by step "
		"number, so a new machine would resume from %s until it is removed from the "
		"store (checkpoints/%s/)", p->done, name, p->done, p->done);
}

/* Points LATEST at name unless it already points at something newer. LATEST is only a
 * hint (restore lists checkpoints), so a failure here is logged, not fatal. */
static void s_update_latest(struct rr_persister *p, const struct rr_manifest *m)
{
	struct rr_store *s = p->cfg.store;
	char key[RR_KEY_MAX], etag[RR_ETAG_MAX], cur[256];
	struct rr_buf b, json;
	int rc = 0;

	rr_buf_init(&b, 64 * 1024);
	rr_buf_init(&json, 64 * 1024);
	if (rr_key_latest(key, p->cfg.run_id) != 0)
		goto out;
	for (int tries = 0; tries < 8; tries++) {
		struct rr_put_opts opts = { 0 };
		rr_buf_reset(&b);
		rr_buf_reset(&json);
		rc = rr_store_get(s, key, &b, etag);
		if (rc == RR_ENOENT) {
			opts.if_none_match = 1;
		} else if (rc) {
			break;
		} else {
			opts.if_match = etag;
			if (rr_latest_parse((const char *)b.data, b.len, cur, sizeof(cur)) == 0 &&
			    strcmp(cur, m->checkpoint) != 0) {
				/* Compare with the commit time of what LATEST names. */
				char mkey[RR_KEY_MAX];
				struct rr_buf mb;
				struct rr_manifest *other = NULL;
				int64_t other_ms = 0;
				rr_buf_init(&mb, RR_MANIFEST_MAX_BYTES);
				if (rr_key_manifest(mkey, p->cfg.run_id, cur) == 0 &&
				    rr_store_get(s, mkey, &mb, NULL) == 0 &&
				    rr_manifest_parse((const char *)mb.data, mb.len, &other, NULL, 0) == 0)
					other_ms = other->committed_unix_ms;
				rr_manifest_destroy(other);
				rr_buf_free(&mb);
				if (rr_checkpoint_compare(m->checkpoint, m->committed_unix_ms, cur,
							  other_ms) < 0) {
					rr_info("LATEST stays at %s, which is newer than %s", cur,
						m->checkpoint);
					rc = 0;
					goto out;
				}
			}
		}
		rc = rr_latest_to_json(m->checkpoint, rr_wall_ms(), m->host, &json);
		if (!rc)
			rc = rr_store_put(s, key, json.data, json.len, &opts, NULL);
		if (rc != RR_EPRECOND && rc != RR_EEXIST)
			break;
	}
out:
	if (rc)
		rr_warn("could not update LATEST to %s: %s (restore finds it by listing)",
			m->checkpoint, rr_store_strerror(rc));
	rr_buf_free(&b);
	rr_buf_free(&json);
}

static void s_log_persisted(const struct rr_manifest *m, const struct rr_persist_stats *st)
{
	char b1[16], b2[16], b3[16];

	rr_info("persisted %s: %llu files, %s -> %s stored, %s new, %llu of %llu segments "
		"unchanged, %.2f s",
		m->checkpoint, (unsigned long long)st->files, rr_format_bytes(st->bytes, b1),
		rr_format_bytes(st->stored_bytes, b2), rr_format_bytes(st->new_bytes, b3),
		(unsigned long long)st->reused_segments, (unsigned long long)st->segments,
		(double)st->elapsed_ms / 1000.0);
	if (st->refreshed_chunks)
		rr_info("%s: %llu chunks already stored were written again to renew their age "
			"for retention's grace period", m->checkpoint,
			(unsigned long long)st->refreshed_chunks);
	if (st->tensors[RR_ENC_SHUFFLE_ZSTD] + st->tensors[RR_ENC_BF16] + st->tensors[RR_ENC_FP16])
		rr_info("%s tensors: %llu fp16, %llu bf16, %llu exact", m->checkpoint,
			(unsigned long long)st->tensors[RR_ENC_FP16],
			(unsigned long long)st->tensors[RR_ENC_BF16],
			(unsigned long long)st->tensors[RR_ENC_SHUFFLE_ZSTD]);
}

/* Applies --keep when it is due (after a persist, and once at start). It steps aside like a
 * routine persist: a notice's checkpoint, or the agent leaving, ends its store requests, and
 * what it did not get to waits for its next run, here or on the next machine (it deletes
 * manifests before the chunks only they named, so nothing is left that a later run cannot
 * collect). after: the checkpoint it follows, or NULL at start. */
static void s_retention(struct rr_persister *p, const char *after)
{
	const char *why = NULL;
	struct rr_gc_stats gs;
	char b1[16], when[300];
	int rc = 0;

	snprintf(when, sizeof(when), "%s%s", after ? "after " : "at start", after ? after : "");
	pthread_mutex_lock(&p->lock);
	if (p->cancel || p->leaving || p->urgent.have)
		why = p->leaving ? "the agent is leaving" : "a notice's checkpoint is waiting";
	else
		p->retaining = 1;
	pthread_mutex_unlock(&p->lock);
	if (why) {
		rr_info("retention %s left for later: %s", when, why);
		return;
	}
	if (rr_gc_due(p->cfg.store, p->cfg.run_id, p->cfg.keep))
		rc = rr_gc_run_policy(p->cfg.store, p->cfg.run_id,
				      &(struct rr_gc_policy){ .keep = p->cfg.keep,
							      .keep_every_ms = p->cfg.keep_every_ms,
							      .keep_for_ms = p->cfg.keep_for_ms,
							      .grace_ms = p->cfg.gc_grace_ms },
				      &gs);
	else
		memset(&gs, 0, sizeof(gs));
	pthread_mutex_lock(&p->lock);
	p->retaining = 0;
	p->store_cancel = 0;
	if (rc == 0)
		p->retention_due = 0;
	pthread_mutex_unlock(&p->lock);
	if (rc == RR_ECANCELED)
		rr_info("retention %s stopped: %s; its next run finishes it", when, p->cancel_why);
	else if (rc)
		rr_warn("retention %s did not complete (%s); it runs again after the next "
			"checkpoint", when, rr_store_strerror(rc));
	else if (gs.checkpoints_deleted || gs.chunks_deleted)
		rr_info("retention %s: deleted %zu checkpoints and %zu chunks (%s)", when,
			gs.checkpoints_deleted, gs.chunks_deleted,
			rr_format_bytes(gs.bytes_freed, b1));
}

/* What follows a persist once its manifest is written: LATEST, the ledger, retention. The
 * checkpoint is already committed (and reported) by then. */
static void s_after_persist(struct rr_persister *p, struct rr_manifest *m,
			    const struct rr_manifest *latest, const struct rr_persist_stats *st,
			    int urgent, int64_t committed_ms, int64_t durable_ms)
{
	cJSON *ev = cJSON_CreateObject();

	if (latest)
		s_update_latest(p, latest);
	if (ev) {
		cJSON_AddStringToObject(ev, "checkpoint", m->checkpoint);
		cJSON_AddNumberToObject(ev, "files", (double)st->files);
		cJSON_AddNumberToObject(ev, "bytes", (double)st->bytes);
		cJSON_AddNumberToObject(ev, "stored_bytes", (double)st->stored_bytes);
		cJSON_AddNumberToObject(ev, "new_bytes", (double)st->new_bytes);
		cJSON_AddNumberToObject(ev, "segments", (double)st->segments);
		cJSON_AddNumberToObject(ev, "unchanged_segments", (double)st->reused_segments);
		cJSON_AddNumberToObject(ev, "tensors_fp16", (double)st->tensors[RR_ENC_FP16]);
		cJSON_AddNumberToObject(ev, "tensors_bf16", (double)st->tensors[RR_ENC_BF16]);
		cJSON_AddNumberToObject(ev, "tensors_exact", (double)st->tensors[RR_ENC_SHUFFLE_ZSTD]);
		cJSON_AddNumberToObject(ev, "elapsed_ms", (double)st->elapsed_ms);
		cJSON_AddBoolToObject(ev, "urgent", urgent);
		cJSON_AddNumberToObject(ev, "committed_unix_ms", (double)committed_ms);
		cJSON_AddNumberToObject(ev, "durable_unix_ms", (double)durable_ms);
		rr_metrics_observe(p->cfg.metrics, "checkpoint", ev);
		if (rr_event_record(p->cfg.store, p->cfg.run_id, "checkpoint", ev) != 0)
			rr_warn("could not record the checkpoint event of %s", m->checkpoint);
		rr_metrics_flush(p->cfg.metrics);
	}
	s_retention(p, m->checkpoint);
}

/* Files the trainer closed in the last persisted checkpoint after it was persisted are not
 * in the store's copy: named once, when the next checkpoint comes (unless that is the same
 * name committed again, which holds them) or the agent leaves. */
static void s_check_late(struct rr_persister *p, const char *next)
{
	if (p->previous && !p->previous_checked &&
	    (!next || strcmp(next, p->previous->checkpoint) != 0))
		rr_persist_late_files(p->cfg.checkpoint_dir, p->previous);
	p->previous_checked = 1;
}

static void s_run_checkpoint(struct rr_persister *p, const char *name, int64_t ms, int urgent)
{
	struct rr_persist_opts opts = {
		.run_id = p->cfg.run_id, .host = rr_hostname(), .zstd_level = p->cfg.zstd_level,
		.threads = p->cfg.threads, .previous = p->previous, .cancel = &p->cancel,
		.precision = p->cfg.precision, .exact_globs = p->cfg.exact_globs,
		.n_exact_globs = p->cfg.n_exact_globs, .gc_grace_ms = p->cfg.gc_grace_ms,
		.urgent = urgent, .nnodes = p->cfg.nnodes, .node_rank = p->cfg.node_rank,
		.chunks = p->chunks,
		.settle_ms = p->cfg.commit && rr_commit_in_place(p->cfg.commit, p->cfg.checkpoint_dir,
								 name) ? RR_PERSIST_SETTLE_MS : 0,
	};
	struct rr_manifest *commit = NULL;
	struct rr_persist_result r = { .urgent = urgent, .committed_ms = ms };

	if (p->previous && strcmp(p->previous->checkpoint, name) == 0)
		opts.supersedes_ms = p->previous->committed_unix_ms;
	struct rr_manifest *m = NULL, *written;

	snprintf(r.name, sizeof(r.name), "%s", name);
	if (!urgent) /* a notice's persist spends nothing on it: the next one, or the exit, does */
		s_check_late(p, name);
	rr_info("persisting %s%s", name, urgent ? " (notice: ahead of everything else)" : "");
	pthread_mutex_lock(&p->lock);
	p->persisting = 1;
	p->store_cancel = p->cancel;
	pthread_mutex_unlock(&p->lock);
	r.rc = rr_persist_checkpoint(p->cfg.store, p->cfg.checkpoint_dir, name, ms, &opts, &m,
				     &r.stats);
	int64_t durable_ms = rr_wall_ms(); /* the manifest is written: the ledger's durable time */
	pthread_mutex_lock(&p->lock);
	p->persisting = 0;
	p->store_cancel = 0;
	pthread_mutex_unlock(&p->lock);
	if (r.rc == 0)
		s_log_persisted(m, &r.stats);
	else if (r.rc == RR_EEXIST)
		rr_info("%s is already in the store; not written again", name);
	else if (r.rc == RR_ECANCELED)
		rr_info("persist of %s set aside: %s", name, p->cancel_why);
	else if (r.rc == RR_ENOENT)
		rr_warn("%s disappeared before it could be persisted", name);
	else if (r.rc == RR_EPATH)
		; /* refused, with its one warning, by the persist itself */
	else
		rr_error("persist of %s failed (%s); the store's previous checkpoint stays the "
			 "newest", name, rr_strerror(r.rc));

	/* Multi-node: this node's part is stored; the checkpoint is committed when a commit
	 * manifest names every part, written by whichever agent sees the last one
	 * (rr/parts.h). The agent that sees them all and cannot write it reports the persist
	 * failed: the checkpoint is not durable, whatever its parts are. */
	if (p->cfg.nnodes > 1 && (r.rc == 0 || r.rc == RR_EEXIST)) {
		int crc = rr_parts_commit(p->cfg.store, p->cfg.run_id, name, p->cfg.nnodes,
					  rr_hostname(), &commit);
		if (crc == RR_PARTS_NOT_YET) {
			rr_info("part %u of %s is stored; the last node's agent commits it",
				p->cfg.node_rank, name);
		} else if (crc) {
			rr_error("%s could not be committed (%s); the store's previous checkpoint "
				 "stays the newest", name, rr_strerror(crc));
			r.rc = crc;
		}
	}

	/* The manifest is written: the checkpoint is committed. Report it now, before LATEST,
	 * the ledger and retention, which a notice's deadline need not wait for. */
	written = m;
	pthread_mutex_lock(&p->lock);
	if ((r.rc == 0 || r.rc == RR_EEXIST) &&
	    (s_after_done(p, name, ms) || (urgent && p->done_elsewhere))) {
		snprintf(p->done, sizeof(p->done), "%s", name);
		p->done_ms = ms;
		p->done_elsewhere = 0;
		if (m) {
			rr_manifest_destroy(p->previous);
			p->previous = m; /* only this thread frees it, so written stays valid */
			p->previous_checked = 0;
			m = NULL;
		}
	}
	if (r.rc == 0)
		rr_throughput_observe(&p->throughput, name, r.stats.bytes, r.stats.stored_bytes,
				      r.stats.new_bytes, r.stats.elapsed_ms, durable_ms);
	if (p->nresults < MAX_RESULTS)
		p->results[p->nresults++] = r;
	/* A failed persist is over for submissions: the event loop, told of it now, may submit
	 * the same checkpoint again (cut at a deadline since lifted) while this thread still
	 * winds down. */
	if (r.rc != 0 && r.rc != RR_EEXIST)
		p->running_name[0] = '\0';
	pthread_mutex_unlock(&p->lock);
	s_notify(p);

	if (r.rc == RR_EEXIST && commit)
		s_update_latest(p, commit);
	if (r.rc == 0)
		s_after_persist(p, written, p->cfg.nnodes > 1 ? commit : written, &r.stats,
				urgent, ms, durable_ms);
	rr_manifest_destroy(commit);
	pthread_mutex_lock(&p->lock);
	p->running = 0;
	p->cancel = 0;
	pthread_cond_broadcast(&p->idle);
	pthread_mutex_unlock(&p->lock);
	rr_manifest_destroy(m);
	s_notify(p); /* busy() changed */
}

/* A "proven" event carries its mark: checkpoints/<name>/proven.json is written with it
 * (rr/marks.h), here, so the event loop never waits on the store for it. */
static void s_write_mark(struct rr_persister *p, const struct s_event *e)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(e->fields, "checkpoint");
	const cJSON *by = cJSON_GetObjectItemCaseSensitive(e->fields, "committed_after");
	int rc;

	if (strcmp(e->kind, "proven") != 0 || !cJSON_IsString(name) || !cJSON_IsString(by))
		return;
	rc = rr_mark_proven(p->cfg.store, p->cfg.run_id, name->valuestring, by->valuestring,
			    rr_hostname());
	if (rc)
		rr_warn("could not mark %s proven in the store: %s", name->valuestring,
			rr_store_strerror(rc));
	else
		rr_info("checkpoint %s is proven (the trainer resumed from it and committed %s)",
			name->valuestring, by->valuestring);
}

static void *s_thread(void *arg)
{
	struct rr_persister *p = arg;

	rr_metrics_flush(p->cfg.metrics); /* the file exists from the start, zeros and all */
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && !p->urgent.have && !p->routine.have && !p->events &&
		       !(p->retention_due && !p->leaving))
			pthread_cond_wait(&p->wake, &p->lock);
		if (p->stop)
			break;
		if (p->rewind_pending) {
			rr_manifest_destroy(p->previous);
			p->previous = p->rewound;
			p->previous_checked = 0;
			p->rewound = NULL;
			p->rewind_pending = 0;
		}
		if (!p->urgent.have && !p->routine.have && !p->events) {
			/* Idle with retention due: a machine catches up on what earlier ones
			 * left, in the background (the trainer is already running). */
			p->running = 1;
			p->running_name[0] = '\0';
			pthread_mutex_unlock(&p->lock);
			s_retention(p, NULL);
			pthread_mutex_lock(&p->lock);
			p->retention_due = 0; /* once: failures wait for the next checkpoint */
			p->running = 0;
			p->cancel = 0;
			pthread_cond_broadcast(&p->idle);
			s_notify(p);
			continue;
		}
		/* A notice's checkpoint goes first; otherwise ledger events, then checkpoints. */
		if (p->routine.have && !p->urgent.have && !p->events &&
		    !s_after_done(p, p->routine.name, p->routine.ms)) {
			p->routine.have = 0; /* the notice's, persisted meanwhile, is newer */
			continue;
		}
		if (p->urgent.have || (p->routine.have && !p->events)) {
			struct s_slot *q = p->urgent.have ? &p->urgent : &p->routine;
			char name[256];
			int64_t ms = q->ms;
			int urgent = q == &p->urgent;
			memcpy(name, q->name, sizeof(name));
			q->have = 0;
			p->running = 1;
			memcpy(p->running_name, name, sizeof(name));
			p->running_ms = ms;
			pthread_mutex_unlock(&p->lock);
			s_run_checkpoint(p, name, ms, urgent);
			pthread_mutex_lock(&p->lock);
		} else {
			struct s_event *e = p->events;
			p->events = e->next;
			if (!p->events)
				p->events_tail = &p->events;
			p->running = 1;
			p->running_name[0] = '\0';
			pthread_mutex_unlock(&p->lock);
			s_write_mark(p, e);
			if (rr_event_record(p->cfg.store, p->cfg.run_id, e->kind, e->fields) != 0)
				rr_warn("could not record a %s event in the store", e->kind);
			free(e);
			rr_metrics_flush(p->cfg.metrics);
			pthread_mutex_lock(&p->lock);
			p->running = 0;
			pthread_cond_broadcast(&p->idle);
			s_notify(p);
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int rr_persister_new(const struct rr_persister_config *cfg, struct rr_manifest *baseline,
		     struct rr_persister **out)
{
	struct rr_persister *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p) {
		rr_manifest_destroy(baseline);
		rr_chunk_index_destroy(cfg->chunks);
		return RR_ENOMEM;
	}
	p->cfg = *cfg;
	p->retention_due = 1;
	p->events_tail = &p->events;
	p->previous = baseline;
	/* NULL (out of memory): every persist lists. */
	p->chunks = cfg->chunks ? cfg->chunks : rr_chunk_index_new();
	rr_throughput_init(&p->throughput, cfg->store_url);
	if (baseline) {
		uint64_t bytes = 0;
		for (size_t i = 0; i < baseline->nfiles; i++)
			bytes += baseline->files[i].size;
		snprintf(p->done, sizeof(p->done), "%s", baseline->checkpoint);
		p->done_ms = baseline->committed_unix_ms;
		p->done_elsewhere = 1;
		rr_throughput_baseline(&p->throughput, baseline->checkpoint, bytes);
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->idle, NULL);
	/* The flag that sets a persist aside also ends its store requests in flight: an upload
	 * crawling over a degraded link must not hold a notice's checkpoint back for the
	 * minutes (or hours) it would take to finish. */
	rr_store_set_cancel(cfg->store, &p->store_cancel);
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->efd < 0 || pthread_create(&p->thread, NULL, s_thread, p) != 0) {
		rr_store_set_cancel(cfg->store, NULL);
		if (p->efd >= 0)
			close(p->efd);
		rr_manifest_destroy(p->previous);
		rr_chunk_index_destroy(p->chunks);
		free(p);
		return RR_EIO;
	}
	*out = p;
	return 0;
}

static void s_slot_set(struct s_slot *q, const char *name, int64_t ms)
{
	snprintf(q->name, sizeof(q->name), "%s", name);
	q->ms = ms;
	q->have = 1;
}

void rr_persister_submit(struct rr_persister *p, const char *name, int64_t ms, int urgent)
{
	pthread_mutex_lock(&p->lock);
	if (p->running && strcmp(name, p->running_name) == 0 &&
	    !s_newer(name, ms, p->running_name, p->running_ms)) {
		rr_debug("%s is persisting already", name);
		goto out;
	}
	/* A notice's checkpoint is the newest the agent's loop knows of: persisted even when the
	 * store's newest, from another machine (whose clock may have been ahead), sorts after it;
	 * never when this agent persisted a newer one itself. */
	if ((!urgent || !p->done_elsewhere) &&
	    (!s_after_done(p, name, ms) ||
	     (p->running && !s_newer(name, ms, p->running_name, p->running_ms)))) {
		if (strcmp(name, p->done) != 0 && strcmp(name, p->dropped) != 0) {
			snprintf(p->dropped, sizeof(p->dropped), "%s", name);
			rr_warn("checkpoint %s is not persisted: %s, persisted or persisting, is newer "
				"by its name or commit time (a machine whose clock was ahead committed "
				"it?); name checkpoints by their step (step-N) to order them by it",
				name, p->running ? p->running_name : p->done);
		} else {
			rr_debug("%s is not newer than what is persisted or persisting; skipped", name);
		}
		goto out;
	}
	s_warn_outranked(p, name, ms);
	if (urgent) {
		if (p->routine.have && strcmp(name, p->routine.name) == 0)
			p->routine.have = 0; /* queued already: now a notice waits for it */
		if (!p->urgent.have || s_newer(name, ms, p->urgent.name, p->urgent.ms))
			s_slot_set(&p->urgent, name, ms);
	} else if (p->routine.have && strcmp(name, p->routine.name) != 0 &&
		   rr_checkpoint_compare(name, ms, p->routine.name, p->routine.ms) < 0) {
		/* Committed later but sorting before the queued one by its step number (Lightning's
		 * last.ckpt right after epoch=E-step=S.ckpt): the queued one is what a new machine
		 * restores, so it stays. */
		rr_info("%s is not persisted: %s, queued, has the greater step number (what a new "
			"machine restores)", name, p->routine.name);
	} else if (!p->routine.have || s_newer(name, ms, p->routine.name, p->routine.ms)) {
		if (p->routine.have)
			rr_info("%s replaces %s in the persist queue (the newest wins)", name,
				p->routine.name);
		s_slot_set(&p->routine, name, ms);
	}
	if (urgent && p->running && p->running_name[0] && strcmp(name, p->running_name) != 0 &&
	    rr_checkpoint_compare(name, ms, p->running_name, p->running_ms) < 0) {
		/* Sorting before the one in progress by its step number (Lightning's last.ckpt
		 * answering the notice right after a routine epoch=E-step=S.ckpt): that one is
		 * what a new machine restores, so it goes on, and the notice's follows. */
		rr_info("%s goes on before the notice's %s: it has the greater step number (what a "
			"new machine restores)", p->running_name, name);
	} else if (urgent && p->running && (p->running_name[0] || p->retaining)) {
		/* The older persist in progress steps aside. */
		snprintf(p->cancel_why, sizeof(p->cancel_why), "a notice's checkpoint (%s) goes "
			 "first", name);
		p->cancel = 1;
		p->store_cancel = p->persisting || p->retaining;
	} else if (p->running && !p->running_name[0] && p->retaining) {
		/* The catching-up retention at start steps aside for any checkpoint (it runs
		 * again after its persist). */
		snprintf(p->cancel_why, sizeof(p->cancel_why), "checkpoint %s goes first", name);
		p->cancel = 1;
		p->store_cancel = 1;
	}
	pthread_cond_signal(&p->wake);
out:
	pthread_mutex_unlock(&p->lock);
}

void rr_persister_rewind(struct rr_persister *p, const char *name, int64_t committed_ms,
			 struct rr_manifest *m)
{
	pthread_mutex_lock(&p->lock);
	snprintf(p->done, sizeof(p->done), "%s", name);
	p->done_ms = committed_ms;
	p->done_elsewhere = name[0] != '\0'; /* the store's, with its writer's commit time */
	if (m) {
		rr_manifest_destroy(p->rewound); /* an earlier rewind not taken over yet */
		p->rewound = m;
		p->rewind_pending = 1;
	}
	pthread_mutex_unlock(&p->lock);
}

void rr_persister_drop(struct rr_persister *p, const char *name)
{
	pthread_mutex_lock(&p->lock);
	if (p->urgent.have && strcmp(p->urgent.name, name) == 0)
		p->urgent.have = 0;
	if (p->routine.have && strcmp(p->routine.name, name) == 0)
		p->routine.have = 0;
	if (p->running && strcmp(p->running_name, name) == 0) {
		snprintf(p->cancel_why, sizeof(p->cancel_why), "%s is suspect", name);
		p->cancel = 1;
		/* Its persist proper and the retention after it end their requests at once; a
		 * manifest already written still gets its LATEST and ledger event (quick). */
		p->store_cancel = p->persisting || p->retaining;
		while (p->running && strcmp(p->running_name, name) == 0)
			pthread_cond_wait(&p->idle, &p->lock);
	}
	pthread_mutex_unlock(&p->lock);
}

void rr_persister_record(struct rr_persister *p, const char *kind, cJSON *fields)
{
	struct s_event *e = calloc(1, sizeof(*e));
	if (!e) {
		cJSON_Delete(fields);
		return;
	}
	snprintf(e->kind, sizeof(e->kind), "%s", kind);
	e->fields = fields;
	rr_metrics_observe(p->cfg.metrics, kind, fields);
	pthread_mutex_lock(&p->lock);
	*p->events_tail = e;
	p->events_tail = &e->next;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

int rr_persister_fd(const struct rr_persister *p)
{
	return p->efd;
}

size_t rr_persister_collect(struct rr_persister *p, struct rr_persist_result *out, size_t max)
{
	uint64_t v;
	size_t n;
	ssize_t r = read(p->efd, &v, sizeof(v));
	(void)r;
	pthread_mutex_lock(&p->lock);
	n = p->nresults < max ? p->nresults : max;
	memcpy(out, p->results, n * sizeof(*out));
	memmove(p->results, p->results + n, (p->nresults - n) * sizeof(*out));
	p->nresults -= n;
	pthread_mutex_unlock(&p->lock);
	return n;
}

int rr_persister_busy(struct rr_persister *p)
{
	int busy;
	pthread_mutex_lock(&p->lock);
	busy = p->running || p->urgent.have || p->routine.have || p->events != NULL;
	pthread_mutex_unlock(&p->lock);
	return busy;
}

void rr_persister_throughput(struct rr_persister *p, struct rr_throughput *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->throughput;
	pthread_mutex_unlock(&p->lock);
}

void rr_persister_cancel(struct rr_persister *p, const char *why)
{
	pthread_mutex_lock(&p->lock);
	p->urgent.have = 0;
	p->routine.have = 0;
	/* Only a checkpoint clears the flag when it ends; set during a ledger event, it
	 * would cancel the next checkpoint submitted instead. */
	if (p->running && (p->running_name[0] || p->retaining)) {
		snprintf(p->cancel_why, sizeof(p->cancel_why), "%s", why);
		p->cancel = 1;
		p->store_cancel = p->persisting || p->retaining;
	}
	pthread_mutex_unlock(&p->lock);
}

void rr_persister_leaving(struct rr_persister *p)
{
	pthread_mutex_lock(&p->lock);
	p->leaving = 1;
	if (p->retaining) {
		snprintf(p->cancel_why, sizeof(p->cancel_why), "the agent is leaving");
		p->cancel = 1;
		p->store_cancel = 1;
	}
	pthread_mutex_unlock(&p->lock);
}

void rr_persister_destroy(struct rr_persister *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	rr_store_set_cancel(p->cfg.store, NULL);
	while (p->events) {
		struct s_event *e = p->events;
		p->events = e->next;
		cJSON_Delete(e->fields);
		free(e);
	}
	close(p->efd);
	s_check_late(p, NULL); /* the thread is gone: what it persisted last is this thread's now */
	rr_manifest_destroy(p->previous);
	rr_manifest_destroy(p->rewound);
	rr_chunk_index_destroy(p->chunks);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->idle);
	free(p);
}

