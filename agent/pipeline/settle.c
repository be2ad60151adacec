/* Files written into a checkpoint after its commit (rr/persist.h). A trainer that writes
 * a directory in place and commits it with a marker may still close files in it afterwards
 * (transformers 4.3x: rng_state.pth 0.2 s after trainer_state.json): before reading such a
 * checkpoint the persist waits for it to be quiet, and what comes later still is named
 * (rr_persist_late_files) instead of vanishing from the stored copy without a word. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dirwalk.h"
#include "rr/clock.h"
#include "rr/fsutil.h"
#include "rr/log.h"
#include "rr/persist.h"
#include "rr/quote.h"

#define S_NAP_MS 100       /* a cancel is seen within this */
#define S_LATE_NAMES_MAX 10

static int64_t s_mtime_ms(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

unsigned rr_persist_settle(const char *ckpt_dir, const char *name, int64_t committed_unix_ms,
			   int64_t settle_ms, int64_t max_ms, const atomic_int *cancel)
{
	char *dir = rr_path_join(ckpt_dir, name);
	int64_t give_up = committed_unix_ms + max_ms, start = rr_wall_ms();
	unsigned after = 0;

	while (dir && !(cancel && atomic_load(cancel))) {
		struct rr_dir_listing l = { 0 };
		int64_t newest = committed_unix_ms, now;
		if (rr_dir_list(dir, &l) != 0)
			break; /* gone, or not a directory: the persist says so */
		after = 0;
		for (size_t i = 0; i < l.n; i++) {
			int64_t t = s_mtime_ms(&l.files[i].st);
			after += t > committed_unix_ms;
			if (t > newest)
				newest = t;
		}
		rr_dir_listing_free(&l);
		now = rr_wall_ms();
		if (now >= newest + settle_ms || now >= give_up)
			break;
		int64_t nap = newest + settle_ms - now;
		if (nap > S_NAP_MS)
			nap = S_NAP_MS;
		nanosleep(&(struct timespec){ 0, (long)nap * 1000000L }, NULL);
	}
	free(dir);
	if (after)
		rr_info("%s: %u file%s written after its commit; waited %.1f s for it to be quiet, "
			"so they are persisted with it", name, after, after == 1 ? "" : "s",
			(double)(rr_wall_ms() - start) / 1000.0);
	return after;
}

/* The entry of m for path, or NULL. */
static const struct rr_file_entry *s_entry(const struct rr_manifest *m, const char *path)
{
	for (size_t i = 0; i < m->nfiles; i++)
		if (strcmp(m->files[i].path, path) == 0)
			return &m->files[i];
	return NULL;
}

unsigned rr_persist_late_files(const char *ckpt_dir, const struct rr_manifest *m)
{
	struct rr_dir_listing l = { 0 };
	char *path = rr_path_join(ckpt_dir, m->checkpoint);
	char q[RR_QUOTE_CAP], q2[RR_QUOTE_CAP];
	struct stat st;
	unsigned late = 0;

	if (!path)
		return 0;
	if (m->single_file) {
		/* A one-file checkpoint: only the file itself can change. */
		if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && m->nfiles == 1 &&
		    (uint64_t)st.st_size != m->files[0].size) {
			rr_warn("checkpoint %s was written again after it was persisted; the store "
				"holds it as it was at its commit", rr_quote_str(q, m->checkpoint));
			late = 1;
		}
		free(path);
		return late;
	}
	if (rr_dir_list(path, &l) != 0) {
		free(path);
		return 0; /* deleted since: nothing to compare */
	}
	for (size_t i = 0; i < l.n; i++) {
		const struct rr_file_entry *fe = s_entry(m, l.files[i].path);
		if (fe && fe->size == l.files[i].size)
			continue;
		if (++late <= S_LATE_NAMES_MAX)
			rr_warn("checkpoint %s: %s was %s after the checkpoint was persisted, and "
				"the store's copy %s; the trainer must write every file before the "
				"commit (its marker last, or rename the finished directory)",
				rr_quote_str(q, m->checkpoint), rr_quote_str(q2, l.files[i].path),
				fe ? "written again" : "written",
				fe ? "holds it as it was" : "does not hold it");
	}
	if (late > S_LATE_NAMES_MAX)
		rr_warn("checkpoint %s: %u more files written after it was persisted",
			rr_quote_str(q, m->checkpoint), late - S_LATE_NAMES_MAX);
	rr_dir_listing_free(&l);
	free(path);
	return late;
}
