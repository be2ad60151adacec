/* Tests for the checkpoint-directory watcher. Negative cases ("X is not reported") commit a
 * sentinel after X and wait for it: inotify keeps events in order, so anything X would
 * report arrives before the sentinel. No sleeps, no timing thresholds; each wait for an
 * event is bounded (poll, 2 s) so a broken watcher fails instead of hanging. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rr/clock.h"
#include "rr/commit_rule.h"
#include "watcher.h"
#include "cunit_main.h"
#include "torch_fixture.h"

#define S_REC_MAX 64
#define S_WAIT_MS 2000

struct s_rec {
	char names[S_REC_MAX][NAME_MAX + 1];
	int64_t ms[S_REC_MAX];
	int n; /* calls, even past S_REC_MAX */
};

static void s_record(const char *name, int64_t ms, void *ud)
{
	struct s_rec *r = ud;
	if (r->n < S_REC_MAX) {
		snprintf(r->names[r->n], sizeof(r->names[r->n]), "%s", name);
		r->ms[r->n] = ms;
	}
	r->n++;
}

static int s_count(const struct s_rec *r, const char *name)
{
	int c = 0;
	for (int i = 0; i < r->n && i < S_REC_MAX; i++)
		c += strcmp(r->names[i], name) == 0;
	return c;
}

static int s_index(const struct s_rec *r, const char *name)
{
	for (int i = 0; i < r->n && i < S_REC_MAX; i++)
		if (strcmp(r->names[i], name) == 0)
			return i;
	return -1;
}

/* A fresh temp root and the checkpoint dir inside it (not created: the watcher does). */
struct s_env {
	char root[64];
	char dir[128];
};

static void s_env_init(struct s_env *e)
{
	snprintf(e->root, sizeof(e->root), "/tmp/rr-watcher-XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(e->root) != NULL);
	snprintf(e->dir, sizeof(e->dir), "%s/ckpt", e->root);
}

static int s_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int s_rm_rf(const char *path)
{
	return nftw(path, s_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The usual start of a test: a fresh temp root, a watcher on <root>/ckpt (which the
 * watcher creates) and an empty record of its callbacks; s_fx_end undoes it. */
struct s_fx {
	char root[64];
	char dir[128];
	struct rr_watcher *w;
	struct s_rec r;
};

static void s_fx_start(struct s_fx *f)
{
	struct s_env e;

	s_env_init(&e);
	memcpy(f->root, e.root, sizeof(f->root));
	memcpy(f->dir, e.dir, sizeof(f->dir));
	f->r.n = 0;
	CU_ASSERT_FATAL(rr_watcher_new(f->dir, &f->w) == 0);
}

static void s_fx_end(struct s_fx *f)
{
	rr_watcher_destroy(f->w);
	s_rm_rf(f->root);
}

static void s_path(char *out, size_t cap, const char *dir, const char *name)
{
	int n = snprintf(out, cap, "%s/%s", dir, name);
	CU_ASSERT_FATAL(n > 0 && (size_t)n < cap);
}

static void s_mkdir(const char *dir, const char *name)
{
	char p[PATH_MAX];
	s_path(p, sizeof(p), dir, name);
	CU_ASSERT_FATAL(mkdir(p, 0755) == 0);
}

static void s_write(const char *dir, const char *name, const char *content)
{
	char p[PATH_MAX];
	s_path(p, sizeof(p), dir, name);
	FILE *f = fopen(p, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(content, f);
	CU_ASSERT_FATAL(fclose(f) == 0);
}

static void s_rename(const char *dir, const char *from, const char *to)
{
	char a[PATH_MAX], b[PATH_MAX];
	s_path(a, sizeof(a), dir, from);
	s_path(b, sizeof(b), dir, to);
	CU_ASSERT_FATAL(rename(a, b) == 0);
}

/* The trainer's side of the contract: write under ".name.tmp", then rename to name. */
static void s_commit(const char *dir, const char *name)
{
	char tmp[NAME_MAX + 1], sub[PATH_MAX];
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	s_mkdir(dir, tmp);
	s_path(sub, sizeof(sub), dir, tmp);
	s_write(sub, "model.safetensors", "weights");
	s_rename(dir, tmp, name);
}

static int64_t s_ctime_ms(const char *dir, const char *name)
{
	char p[PATH_MAX];
	struct stat st;
	s_path(p, sizeof(p), dir, name);
	CU_ASSERT_FATAL(lstat(p, &st) == 0);
	return (int64_t)st.st_ctim.tv_sec * 1000 + st.st_ctim.tv_nsec / 1000000;
}

/* Processes events until name has been reported; fails if 2 s pass without an event. */
static void s_pump_until(struct rr_watcher *w, struct s_rec *r, const char *name)
{
	struct pollfd pfd = { .fd = rr_watcher_fd(w), .events = POLLIN };

	for (int i = 0; i < 1000 && s_index(r, name) < 0; i++) {
		int n = poll(&pfd, 1, S_WAIT_MS);
		if (n < 0 && errno == EINTR)
			continue;
		CU_ASSERT_FATAL(n == 1);
		CU_ASSERT_FATAL(rr_watcher_process(w, s_record, r) == 0);
	}
	CU_ASSERT_FATAL(s_index(r, name) >= 0);
}

/* Commits a sentinel and waits for it, so every earlier event has been processed. */
static void s_sync(struct rr_watcher *w, struct s_rec *r, const char *dir)
{
	s_commit(dir, "sentinel");
	s_pump_until(w, r, "sentinel");
}

/* Sends stderr (where rr_log writes) to a file for the duration of a test. */
struct s_capture {
	int saved;
	char path[64];
};

static void s_capture_begin(struct s_capture *c)
{
	int fd;
	snprintf(c->path, sizeof(c->path), "/tmp/rr-watcher-log-XXXXXX");
	fd = mkstemp(c->path);
	CU_ASSERT_FATAL(fd >= 0);
	c->saved = dup(STDERR_FILENO);
	CU_ASSERT_FATAL(c->saved >= 0);
	CU_ASSERT_FATAL(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
	close(fd);
}

/* Restores stderr; returns the captured text (malloc'd, caller frees). */
static char *s_capture_end(struct s_capture *c)
{
	char *text = calloc(1, 65536);
	FILE *f;
	CU_ASSERT_FATAL(dup2(c->saved, STDERR_FILENO) == STDERR_FILENO);
	close(c->saved);
	CU_ASSERT_FATAL(text != NULL);
	f = fopen(c->path, "r");
	CU_ASSERT_FATAL(f != NULL);
	size_t n = fread(text, 1, 65535, f);
	(void)n;
	fclose(f);
	unlink(c->path);
	return text;
}

static int s_count_substr(const char *hay, const char *needle)
{
	int c = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		c++;
	return c;
}

static int s_count_lines(const char *text)
{
	return s_count_substr(text, "\n");
}

static void test_new_creates_missing_directory_with_parents(void)
{
	struct s_env e;
	struct rr_watcher *w = NULL;
	char deep[PATH_MAX];
	struct stat st;

	s_env_init(&e);
	s_path(deep, sizeof(deep), e.root, "a/b/ckpt");
	CU_ASSERT_FATAL(rr_watcher_new(deep, &w) == 0);
	CU_ASSERT_PTR_NOT_NULL(w);
	CU_ASSERT(stat(deep, &st) == 0 && S_ISDIR(st.st_mode));
	CU_ASSERT(rr_watcher_fd(w) >= 0);
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

static void test_new_rejects_a_path_that_is_a_file(void)
{
	struct s_env e;
	struct rr_watcher *w = (struct rr_watcher *)&e; /* must be reset to NULL */

	s_env_init(&e);
	s_write(e.root, "ckpt", "not a directory");
	CU_ASSERT(rr_watcher_new(e.dir, &w) < 0);
	CU_ASSERT_PTR_NULL(w);
	CU_ASSERT(rr_watcher_new(NULL, &w) < 0);
	CU_ASSERT(rr_watcher_new("", &w) < 0);
	s_rm_rf(e.root);
}

static void test_destroy_accepts_null(void)
{
	RR_ASSERT_RETURNS(rr_watcher_destroy(NULL));
}

/* Neither by a commit (the sentinel committed after it is all that is reported) nor by a
 * scan (which finds the sentinel again) is anything else in f's directory reported. */
static void s_expect_only_sentinel(struct s_fx *f)
{
	s_sync(f->w, &f->r, f->dir);
	CU_ASSERT(f->r.n == 1);
	CU_ASSERT_STRING_EQUAL(f->r.names[0], "sentinel");
	CU_ASSERT(rr_watcher_scan(f->w, s_record, &f->r) == 0);
	CU_ASSERT(f->r.n == 2);
	CU_ASSERT(s_count(&f->r, "sentinel") == 2);
}

/* The child that closes the inotify descriptor keeps nothing else: a pipe whose write end
 * only the test held sees its end once the test closes it (the agent's output pipe must
 * end when the agent exits), and the child goes away by itself. */
static void test_destroy_detached_keeps_no_other_descriptor(void)
{
	struct s_env e;
	struct rr_watcher *w;
	int p[2], status = 0;
	char c;

	s_env_init(&e);
	CU_ASSERT_FATAL(pipe(p) == 0);
	CU_ASSERT_FATAL(rr_watcher_new(e.dir, &w) == 0);
	rr_watcher_destroy_detached(w);
	close(p[1]);
	struct pollfd pfd = { .fd = p[0], .events = POLLIN };
	CU_ASSERT(poll(&pfd, 1, S_WAIT_MS) == 1);
	CU_ASSERT(read(p[0], &c, 1) == 0);
	close(p[0]);
	/* The child exits on its own once it has closed the descriptor. */
	pid_t pid = waitpid(-1, &status, 0);
	CU_ASSERT(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	RR_ASSERT_RETURNS(rr_watcher_destroy_detached(NULL));
	s_rm_rf(e.root);
}

static void test_process_with_nothing_pending_returns_at_once(void)
{
	struct s_fx f;

	s_fx_start(&f);
	CU_ASSERT(rr_watcher_process(f.w, s_record, &f.r) == 0);
	CU_ASSERT(f.r.n == 0);
	s_fx_end(&f);
}

static void test_rename_from_dot_dir_is_a_commit(void)
{
	struct s_fx f;

	s_fx_start(&f);
	s_mkdir(f.dir, ".step-1.tmp");
	s_rename(f.dir, ".step-1.tmp", "step-1");
	s_pump_until(f.w, &f.r, "step-1");
	CU_ASSERT_STRING_EQUAL(f.r.names[0], "step-1");
	CU_ASSERT(f.r.ms[0] == s_ctime_ms(f.dir, "step-1"));
	s_sync(f.w, &f.r, f.dir);
	CU_ASSERT(s_count(&f.r, "step-1") == 1);
	CU_ASSERT(f.r.n == 2);
	s_fx_end(&f);
}

static void test_dot_directories_are_never_reported(void)
{
	struct s_fx f;
	char sub[PATH_MAX];

	s_fx_start(&f);
	s_mkdir(f.dir, ".tmp");
	s_path(sub, sizeof(sub), f.dir, ".tmp");
	s_write(sub, "a.safetensors", "a");
	s_write(sub, "b.json", "{}");
	s_mkdir(sub, "nested");
	s_rename(f.dir, ".tmp", ".tmp2"); /* dot to dot: still not committed */
	s_expect_only_sentinel(&f);
	s_fx_end(&f);
}

/* A committed name restore would refuse (here a newline, which would also forge a log
 * line) is never reported, by a commit or by a scan: it is never persisted. */
static void test_names_restore_refuses_are_never_reported(void)
{
	struct s_fx f;

	s_fx_start(&f);
	s_commit(f.dir, "step-1\nresume-run: error: forged");
	s_commit(f.dir, "step-2\x1b[31m");
	s_expect_only_sentinel(&f);
	s_fx_end(&f);
}

static void test_scan_reports_existing_checkpoints_only(void)
{
	struct s_env e;
	struct rr_watcher *w;
	struct s_rec r = { .n = 0 };
	char p[PATH_MAX];

	s_env_init(&e);
	CU_ASSERT_FATAL(mkdir(e.dir, 0755) == 0);
	s_commit(e.dir, "step-1");
	s_commit(e.dir, "step-2");
	s_mkdir(e.dir, ".step-3.tmp");
	s_write(e.dir, "notes.txt", "a regular file");
	s_write(e.dir, ".hidden", "a dot file");
	s_path(p, sizeof(p), e.dir, "link-to-step-1");
	CU_ASSERT_FATAL(symlink("step-1", p) == 0);
	s_path(p, sizeof(p), e.dir, "dangling");
	CU_ASSERT_FATAL(symlink("missing", p) == 0);
	s_path(p, sizeof(p), e.dir, "fifo");
	CU_ASSERT_FATAL(mkfifo(p, 0600) == 0);

	CU_ASSERT_FATAL(rr_watcher_new(e.dir, &w) == 0);
	CU_ASSERT(rr_watcher_scan(w, s_record, &r) == 0);
	/* a regular file may be a one-file checkpoint (docs/trainer-contract.md, "The trainer
	 * contract"); links and fifos never */
	CU_ASSERT(r.n == 3);
	CU_ASSERT(s_count(&r, "notes.txt") == 1);
	CU_ASSERT(s_count(&r, "step-1") == 1);
	CU_ASSERT(s_count(&r, "step-2") == 1);
	CU_ASSERT(s_index(&r, "step-1") >= 0 &&
		  r.ms[s_index(&r, "step-1")] == s_ctime_ms(e.dir, "step-1"));
	CU_ASSERT(s_index(&r, "step-2") >= 0 &&
		  r.ms[s_index(&r, "step-2")] == s_ctime_ms(e.dir, "step-2"));

	/* A scan is a snapshot: repeating it reports the same set again. */
	CU_ASSERT(rr_watcher_scan(w, s_record, &r) == 0);
	CU_ASSERT(r.n == 6);
	CU_ASSERT(s_count(&r, "step-1") == 2);
	CU_ASSERT(s_count(&r, "step-2") == 2);
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

static void test_scan_of_an_empty_directory_reports_nothing(void)
{
	struct s_fx f;

	s_fx_start(&f);
	CU_ASSERT(rr_watcher_scan(f.w, s_record, &f.r) == 0);
	CU_ASSERT(f.r.n == 0);
	CU_ASSERT(rr_watcher_scan(f.w, NULL, &f.r) < 0);
	s_fx_end(&f);
}

static void test_scan_sees_commits_made_after_the_watcher_started(void)
{
	struct s_fx f;

	s_fx_start(&f);
	s_commit(f.dir, "step-10");
	s_mkdir(f.dir, ".step-11.tmp");
	CU_ASSERT(rr_watcher_scan(f.w, s_record, &f.r) == 0);
	CU_ASSERT(f.r.n == 1);
	CU_ASSERT_STRING_EQUAL(f.r.names[0], "step-10");
	s_fx_end(&f);
}

static void test_five_commits_in_a_row_are_all_reported_in_order(void)
{
	struct s_fx f;
	static const char *const names[] = { "step-1", "step-2", "step-3", "step-4", "step-5" };

	s_fx_start(&f);
	for (int i = 0; i < 5; i++)
		s_commit(f.dir, names[i]);
	s_pump_until(f.w, &f.r, "step-5");
	CU_ASSERT_FATAL(f.r.n == 5);
	for (int i = 0; i < 5; i++) {
		CU_ASSERT_STRING_EQUAL(f.r.names[i], names[i]);
		CU_ASSERT(f.r.ms[i] == s_ctime_ms(f.dir, names[i]));
	}
	s_fx_end(&f);
}

static void test_final_name_renamed_to_another_final_name_is_a_commit(void)
{
	struct s_fx f;

	s_fx_start(&f);
	s_commit(f.dir, "step-1");
	s_pump_until(f.w, &f.r, "step-1");
	s_rename(f.dir, "step-1", "best");
	s_pump_until(f.w, &f.r, "best");
	CU_ASSERT(f.r.n == 2);
	CU_ASSERT_STRING_EQUAL(f.r.names[1], "best");
	s_fx_end(&f);
}

static void test_directory_moved_in_from_elsewhere_is_a_commit(void)
{
	struct s_fx f;
	char from[PATH_MAX], to[PATH_MAX];

	s_fx_start(&f);
	s_mkdir(f.root, "staging");
	s_path(from, sizeof(from), f.root, "staging");
	s_path(to, sizeof(to), f.dir, "step-7");
	CU_ASSERT_FATAL(rename(from, to) == 0);
	s_pump_until(f.w, &f.r, "step-7");
	CU_ASSERT(f.r.n == 1);
	s_fx_end(&f);
}

static void test_file_renamed_to_a_final_name_is_a_one_file_checkpoint(void)
{
	struct s_fx f;

	s_fx_start(&f);
	s_write(f.dir, ".model.bin.tmp", "bytes");
	s_write(f.dir, "written-in-place.pt", "bytes"); /* not renamed: not a commit */
	s_rename(f.dir, ".model.bin.tmp", "model.bin");
	s_sync(f.w, &f.r, f.dir);
	CU_ASSERT(f.r.n == 2);
	CU_ASSERT(s_count(&f.r, "model.bin") == 1);
	CU_ASSERT(s_count(&f.r, "written-in-place.pt") == 0);
	s_fx_end(&f);
}

/* Writes len bytes of data to dir/name in place (one open, one close, as torch.save does). */
static void s_write_bytes(const char *dir, const char *name, const void *data, size_t len)
{
	char p[PATH_MAX];
	FILE *f;

	s_path(p, sizeof(p), dir, name);
	f = fopen(p, "wb");
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_FATAL(fwrite(data, 1, len, f) == len);
	CU_ASSERT_FATAL(fclose(f) == 0);
}

/* A tiny safetensors file: one F32 tensor of 2 values (8-byte prefix, JSON header, data). */
static size_t s_safetensors(unsigned char *out)
{
	static const char hdr[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
	uint64_t n = sizeof(hdr) - 1;

	for (int i = 0; i < 8; i++)
		out[i] = (unsigned char)(n >> (8 * i));
	memcpy(out + 8, hdr, n);
	memset(out + 8 + n, 0x3f, 8);
	return 8 + n + 8;
}

/* Lets a file closed whole in place settle under its name, then processes what is due. */
static void s_settle(struct rr_watcher *w, struct s_rec *r)
{
	usleep(700 * 1000);
	CU_ASSERT_FATAL(rr_watcher_process(w, s_record, r) == 0);
}

/* nanoGPT saves torch.save(checkpoint, "ckpt.pt") in place; safetensors' save_file writes in
 * place too. Under auto such a file commits when it is whole by its own format (a zip whose
 * end record ends the file, compressed entries and all, as torch.jit.save writes them) and
 * has stayed under its name for a moment: a staging name moved away at once (torch.save to
 * ckpt_new.pt, then os.replace) is none. One cut short (the trainer killed mid-write: its
 * close comes all the same) commits nothing and warns nothing; a scan does not take a cut
 * one either. When the trainer has exited (flush) a whole one commits at once. Before, an
 * in-place file never committed. */
static void test_whole_file_written_in_place_commits_a_cut_one_does_not(void)
{
	struct s_fx f;
	struct s_capture c;
	unsigned char st[256];
	size_t len = 0, dlen = 0, stlen = s_safetensors(st);
	unsigned char *pt = tf_load("fuzz_torch_zip", "little.pt", &len);
	unsigned char *deflated = tf_load("fuzz_torch_zip", "deflated.pt", &dlen);
	char *log;
	struct s_rec r = { .n = 0 };
	struct rr_commit_rule rule;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pt);
	CU_ASSERT_PTR_NOT_NULL_FATAL(deflated);
	s_fx_start(&f);
	CU_ASSERT_FATAL(rr_commit_rule_parse("auto", &rule) == 0);
	rr_watcher_set_rule(f.w, &rule);
	s_capture_begin(&c);
	s_write_bytes(f.dir, "cut.pt", pt, len / 2);
	s_write_bytes(f.dir, "cut.safetensors", st, stlen - 4);
	s_write_bytes(f.dir, "ckpt.pt", pt, len);
	s_write_bytes(f.dir, "model.safetensors", st, stlen);
	s_write_bytes(f.dir, "scripted.pt", deflated, dlen);
	s_write_bytes(f.dir, "ckpt_new.pt", pt, len);
	s_rename(f.dir, "ckpt_new.pt", "ckpt2.pt");
	s_sync(f.w, &f.r, f.dir);
	CU_ASSERT(s_count(&f.r, "ckpt.pt") == 0); /* not yet: settling */
	CU_ASSERT(s_count(&f.r, "ckpt2.pt") == 1); /* renamed in: at once */
	s_settle(f.w, &f.r);
	log = s_capture_end(&c);
	CU_ASSERT(s_count(&f.r, "ckpt.pt") == 1);
	CU_ASSERT(s_index(&f.r, "ckpt.pt") >= 0 &&
		  f.r.ms[s_index(&f.r, "ckpt.pt")] == s_ctime_ms(f.dir, "ckpt.pt"));
	CU_ASSERT(s_count(&f.r, "model.safetensors") == 1);
	CU_ASSERT(s_count(&f.r, "scripted.pt") == 1);
	CU_ASSERT(s_count(&f.r, "ckpt_new.pt") == 0);
	CU_ASSERT(s_count(&f.r, "ckpt2.pt") == 1);
	CU_ASSERT(s_count(&f.r, "cut.pt") == 0);
	CU_ASSERT(s_count(&f.r, "cut.safetensors") == 0);
	CU_ASSERT(s_count_substr(log, "written in place") == 0);
	free(log);

	/* A second save before the first settled: the name stays, both commit at once. */
	s_capture_begin(&c);
	s_write_bytes(f.dir, "fast.pt", pt, len);
	usleep(50 * 1000); /* the event queued (two alike in a row are one for inotify) */
	CU_ASSERT_FATAL(rr_watcher_process(f.w, s_record, &f.r) == 0);
	CU_ASSERT(s_count(&f.r, "fast.pt") == 0);
	s_write_bytes(f.dir, "fast.pt", pt, len);
	usleep(50 * 1000);
	CU_ASSERT_FATAL(rr_watcher_process(f.w, s_record, &f.r) == 0);
	CU_ASSERT(s_count(&f.r, "fast.pt") == 1);
	/* Any number of names at once (a trainer saving a file per shard). */
	for (int i = 0; i < 20; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "shard_%02d.pt", i);
		s_write_bytes(f.dir, nm, pt, len);
	}
	usleep(50 * 1000);
	CU_ASSERT_FATAL(rr_watcher_process(f.w, s_record, &f.r) == 0);
	s_settle(f.w, &f.r);
	free(s_capture_end(&c));
	CU_ASSERT(s_count(&f.r, "shard_00.pt") == 1 && s_count(&f.r, "shard_19.pt") == 1);

	/* Saved again in place: committed again; the trainer gone, at once. */
	usleep(20000);
	s_write_bytes(f.dir, "ckpt.pt", pt, len);
	usleep(50 * 1000); /* the event queued */
	CU_ASSERT_FATAL(rr_watcher_flush(f.w, s_record, &f.r) == 0);
	CU_ASSERT(s_count(&f.r, "ckpt.pt") == 2);

	/* At start-up, a cut one is not taken (said), a whole one is. */
	s_capture_begin(&c);
	CU_ASSERT(rr_watcher_scan(f.w, s_record, &r) == 0);
	log = s_capture_end(&c);
	CU_ASSERT(s_count(&r, "ckpt.pt") == 1);
	CU_ASSERT(s_count(&r, "model.safetensors") == 1);
	CU_ASSERT(s_count(&r, "scripted.pt") == 1);
	CU_ASSERT(s_count(&r, "cut.pt") == 0);
	CU_ASSERT(s_count(&r, "cut.safetensors") == 0);
	CU_ASSERT(s_count_substr(log, "is not whole") == 2);
	free(log);
	free(pt);
	free(deflated);
	s_fx_end(&f);
}

/* A file closed whole in place, settling, when the checkpoint directory's path goes away
 * (its parent renamed): nothing of it can be committed, and the loop must not be woken
 * for it again and again (its due time in the past made the poll timeout 0: a spin). */
static void test_a_settling_file_goes_with_its_directory(void)
{
	struct s_fx f;
	struct rr_commit_rule rule;
	char moved[160];
	size_t len = 0;
	unsigned char *pt = tf_load("fuzz_torch_zip", "little.pt", &len);
	int64_t at;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pt);
	s_fx_start(&f);
	CU_ASSERT_FATAL(rr_commit_rule_parse("auto", &rule) == 0);
	rr_watcher_set_rule(f.w, &rule);
	s_write_bytes(f.dir, "ckpt.pt", pt, len);
	usleep(50 * 1000);
	CU_ASSERT_FATAL(rr_watcher_process(f.w, s_record, &f.r) == 0);
	CU_ASSERT(rr_watcher_next_at(f.w) > 0); /* settling */
	snprintf(moved, sizeof(moved), "%s.moved", f.root);
	CU_ASSERT_FATAL(rename(f.root, moved) == 0);
	usleep(600 * 1000);
	rr_watcher_process(f.w, s_record, &f.r); /* may say the directory is lost */
	at = rr_watcher_next_at(f.w);
	CU_ASSERT(at == 0 || at > rr_mono_ms());
	CU_ASSERT(s_count(&f.r, "ckpt.pt") == 0);
	CU_ASSERT_FATAL(rename(moved, f.root) == 0);
	free(pt);
	s_fx_end(&f);
}

static void test_commit_that_vanished_before_processing_is_skipped(void)
{
	struct s_fx f;
	char p[PATH_MAX];

	s_fx_start(&f);
	s_mkdir(f.dir, ".step-1.tmp");
	s_rename(f.dir, ".step-1.tmp", "step-1");
	s_path(p, sizeof(p), f.dir, "step-1");
	CU_ASSERT_FATAL(rmdir(p) == 0);
	s_sync(f.w, &f.r, f.dir);
	CU_ASSERT(f.r.n == 1);
	CU_ASSERT(s_count(&f.r, "step-1") == 0);
	s_fx_end(&f);
}

static void test_directory_created_directly_with_final_name_is_not_reported(void)
{
	struct s_fx f;
	struct s_capture c;
	char *log;

	s_fx_start(&f);
	s_capture_begin(&c);
	s_mkdir(f.dir, "step-1");
	s_sync(f.w, &f.r, f.dir);
	log = s_capture_end(&c);
	CU_ASSERT(f.r.n == 1);
	CU_ASSERT(s_count(&f.r, "step-1") == 0);
	CU_ASSERT(s_count_lines(log) == 1);
	CU_ASSERT(s_count_substr(log, "\"step-1\" in ") == 1);
	free(log);
	s_fx_end(&f);
}

static void test_direct_create_warns_once_per_name_and_for_at_most_ten_names(void)
{
	struct s_fx f;
	struct s_capture c;
	char name[32], p[PATH_MAX];
	char *log;

	s_fx_start(&f);
	s_capture_begin(&c);
	/* The same name three times (mkdir, rmdir, mkdir...), then 12 more names. */
	for (int i = 0; i < 3; i++) {
		s_mkdir(f.dir, "step-0");
		s_path(p, sizeof(p), f.dir, "step-0");
		if (i < 2)
			CU_ASSERT_FATAL(rmdir(p) == 0);
	}
	for (int i = 1; i <= 12; i++) {
		snprintf(name, sizeof(name), "step-%d", i);
		s_mkdir(f.dir, name);
	}
	s_sync(f.w, &f.r, f.dir);
	log = s_capture_end(&c);
	CU_ASSERT(f.r.n == 1);
	CU_ASSERT(s_count_lines(log) == 10);
	CU_ASSERT(s_count_substr(log, "created directly") == 10);
	CU_ASSERT(s_count_substr(log, "\"step-0\" in ") == 1);
	CU_ASSERT(s_count_substr(log, "\"step-9\" in ") == 1);
	CU_ASSERT(s_count_substr(log, "/step-10 was") == 0);
	CU_ASSERT(s_count_substr(log, "further such names are not logged") == 1);
	free(log);
	s_fx_end(&f);
}

/* A checkpoint-like file written under its final name (nanoGPT's torch.save(ckpt.pt) in
 * place) is never committed, and is said once: a run that only saves so stored nothing,
 * silently. Other files written there (a log) say nothing; one renamed in commits. */
static void test_a_checkpoint_file_written_in_place_is_warned_once(void)
{
	struct s_fx f;
	struct s_capture c;
	char *log;

	s_fx_start(&f);
	s_capture_begin(&c);
	s_write(f.dir, "ckpt.pt", "one");
	s_write(f.dir, "ckpt.pt", "two");
	s_write(f.dir, "train.log", "not a checkpoint");
	s_sync(f.w, &f.r, f.dir);
	log = s_capture_end(&c);
	CU_ASSERT(f.r.n == 1); /* the sentinel only */
	CU_ASSERT(s_count_substr(log, "\"ckpt.pt\" in ") == 1);
	CU_ASSERT(s_count_substr(log, "written in place") == 1);
	CU_ASSERT(s_count_substr(log, "train.log") == 0);
	free(log);
	s_write(f.dir, ".ckpt.pt.tmp", "three");
	s_rename(f.dir, ".ckpt.pt.tmp", "ckpt.pt");
	s_pump_until(f.w, &f.r, "ckpt.pt");
	s_fx_end(&f);
}

static void test_watcher_survives_the_directory_being_deleted(void)
{
	struct s_fx f;
	struct pollfd pfd;
	struct s_capture c;
	struct stat st;
	char *log;

	s_fx_start(&f);
	s_commit(f.dir, "step-1");
	s_pump_until(f.w, &f.r, "step-1");
	CU_ASSERT_FATAL(s_rm_rf(f.dir) == 0);

	s_capture_begin(&c);
	pfd = (struct pollfd){ .fd = rr_watcher_fd(f.w), .events = POLLIN };
	CU_ASSERT_FATAL(poll(&pfd, 1, S_WAIT_MS) == 1);
	CU_ASSERT(rr_watcher_process(f.w, s_record, &f.r) == 0);
	log = s_capture_end(&c);
	CU_ASSERT(stat(f.dir, &st) == 0 && S_ISDIR(st.st_mode));
	CU_ASSERT(s_count_lines(log) == 1);
	CU_ASSERT(s_count_substr(log, "recreated") == 1);
	CU_ASSERT(f.r.n == 1); /* the rescan of the new, empty directory found nothing */
	free(log);

	s_commit(f.dir, "step-2");
	s_pump_until(f.w, &f.r, "step-2");
	CU_ASSERT(f.r.n == 2);
	s_fx_end(&f);
}

static void test_watcher_rescans_a_directory_recreated_by_the_trainer(void)
{
	struct s_fx f;
	struct s_capture c;
	char *log;

	s_fx_start(&f);
	CU_ASSERT_FATAL(s_rm_rf(f.dir) == 0);
	/* The trainer recreates the directory and commits before the agent looks: the
	 * commit happened in a directory that was not watched yet, so the rescan finds it. */
	CU_ASSERT_FATAL(mkdir(f.dir, 0755) == 0);
	s_commit(f.dir, "step-3");
	s_capture_begin(&c);
	s_pump_until(f.w, &f.r, "step-3");
	log = s_capture_end(&c);
	CU_ASSERT(s_count_substr(log, "recreated") == 1);
	free(log);
	s_commit(f.dir, "step-4");
	s_pump_until(f.w, &f.r, "step-4");
	CU_ASSERT(s_count(&f.r, "step-3") == 1);
	CU_ASSERT(s_count(&f.r, "step-4") == 1);
	s_fx_end(&f);
}

static void test_watcher_follows_the_path_when_the_directory_is_moved_away(void)
{
	struct s_fx f;
	struct s_capture c;
	struct pollfd pfd;
	char old[PATH_MAX];
	char *log;

	s_fx_start(&f);
	s_path(old, sizeof(old), f.root, "ckpt.old");
	CU_ASSERT_FATAL(rename(f.dir, old) == 0);
	s_capture_begin(&c);
	pfd = (struct pollfd){ .fd = rr_watcher_fd(f.w), .events = POLLIN };
	CU_ASSERT_FATAL(poll(&pfd, 1, S_WAIT_MS) == 1);
	CU_ASSERT(rr_watcher_process(f.w, s_record, &f.r) == 0);
	log = s_capture_end(&c);
	CU_ASSERT(s_count_substr(log, "recreated") == 1);
	free(log);
	/* A commit in the moved-away directory is no longer ours; one at the path is. */
	s_commit(old, "step-old");
	s_commit(f.dir, "step-new");
	s_pump_until(f.w, &f.r, "step-new");
	CU_ASSERT(f.r.n == 1);
	CU_ASSERT(s_count(&f.r, "step-old") == 0);
	s_fx_end(&f);
}

static long s_read_long(const char *path)
{
	char buf[32] = { 0 };
	FILE *f = fopen(path, "r");
	long v = -1;
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	fclose(f);
	return v;
}

static void test_queue_overflow_falls_back_to_a_full_scan(void)
{
	struct s_env e;
	struct rr_watcher *w;
	struct s_rec r = { .n = 0 };
	struct pollfd pfd;
	static const char limit_path[] = "/proc/sys/fs/inotify/max_queued_events";
	long max = s_read_long(limit_path), system_max = max;
	FILE *f;

	CU_ASSERT_FATAL(max > 0);
	/* Overflowing the queue takes max+1 events. An instance takes the limit when it is
	 * created, so a very large system limit is lowered only around rr_watcher_new (root),
	 * never skipped: this test must not pass without overflowing. */
	if (max > (1L << 17)) {
		f = fopen(limit_path, "w");
		if (!f || fprintf(f, "16384\n") < 0 || fclose(f) != 0) {
			fprintf(stderr, "inotify limit %ld is too large to overflow and cannot be "
					"lowered here (needs root)\n", max);
			CU_FAIL_FATAL("queue overflow not exercised");
		}
		max = 16384;
	}
	s_env_init(&e);
	int rc = rr_watcher_new(e.dir, &w);
	if (system_max != max) {
		f = fopen(limit_path, "w");
		CU_ASSERT_FATAL(f && fprintf(f, "%ld\n", system_max) > 0 && fclose(f) == 0);
	}
	CU_ASSERT_FATAL(rc == 0);
	/* Each rename queues one IN_MOVED_TO (distinct cookies keep them from merging). */
	s_write(e.dir, ".a", "");
	for (long i = 0; i <= max; i++)
		s_rename(e.dir, i % 2 ? ".b" : ".a", i % 2 ? ".a" : ".b");
	/* The queue is full: these events are dropped, only a scan can see the commit. A
	 * directory made directly is reported by a scan but never by events, so seeing it
	 * proves the scan ran. */
	s_commit(e.dir, "step-1");
	s_mkdir(e.dir, "made-directly");
	pfd = (struct pollfd){ .fd = rr_watcher_fd(w), .events = POLLIN };
	CU_ASSERT_FATAL(poll(&pfd, 1, S_WAIT_MS) == 1);
	CU_ASSERT(rr_watcher_process(w, s_record, &r) == 0);
	CU_ASSERT(r.n == 2);
	CU_ASSERT(s_count(&r, "step-1") == 1);
	CU_ASSERT(s_count(&r, "made-directly") == 1);
	CU_ASSERT(s_index(&r, "step-1") >= 0 &&
		  r.ms[s_index(&r, "step-1")] == s_ctime_ms(e.dir, "step-1"));
	/* Afterwards events flow again. */
	s_commit(e.dir, "step-2");
	s_pump_until(w, &r, "step-2");
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

/* ---- commit rules (docs/trainer-contract.md, "The trainer contract" table): auto,
 * marker:NAME, pointer:NAME ------------- */

/* Like s_sync, with a sentinel name of its own so one test can sync twice. */
static void s_sync_as(struct rr_watcher *w, struct s_rec *r, const char *dir, const char *name)
{
	s_commit(dir, name);
	s_pump_until(w, r, name);
}

static struct rr_watcher *s_new_with(const char *dir, const char *rule_text)
{
	struct rr_commit_rule rule;
	struct rr_watcher *w = NULL;

	CU_ASSERT_FATAL(rr_commit_rule_parse(rule_text, &rule) == 0);
	CU_ASSERT_FATAL(rr_watcher_new(dir, &w) == 0);
	rr_watcher_set_rule(w, &rule);
	return w;
}

static void s_mkdir_at(const char *dir, const char *name, const char *sub)
{
	char p[PATH_MAX];
	s_path(p, sizeof(p), dir, name);
	s_mkdir(p, sub);
}

static void s_write_in(const char *dir, const char *name, const char *file, const char *text)
{
	char p[PATH_MAX];
	s_path(p, sizeof(p), dir, name);
	s_write(p, file, text);
}

/* The inotify watches the watcher holds (the kernel lists each in the descriptor's fdinfo). */
static int s_watches(struct rr_watcher *w)
{
	char path[64], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", rr_watcher_fd(w));
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof(line), f))
		n += strncmp(line, "inotify wd:", 11) == 0;
	fclose(f);
	return n;
}

/* HF Trainer (transformers Trainer._save_checkpoint): checkpoint-N made in place, weights,
 * optimizer, scheduler, rng state, then trainer_state.json last. */
static void test_auto_commits_an_hf_directory_when_trainer_state_is_closed(void)
{
	struct s_env e;
	struct rr_watcher *w;
	struct s_rec r = { .n = 0 };
	char d[PATH_MAX];

	s_env_init(&e);
	w = s_new_with(e.dir, "auto");
	s_mkdir(e.dir, "checkpoint-500");
	s_write_in(e.dir, "checkpoint-500", "model.safetensors", "w");
	s_write_in(e.dir, "checkpoint-500", "optimizer.pt", "o");
	s_write_in(e.dir, "checkpoint-500", "scheduler.pt", "s");
	s_write_in(e.dir, "checkpoint-500", "rng_state.pth", "r");
	s_sync_as(w, &r, e.dir, "sentinel-1");
	CU_ASSERT(s_count(&r, "checkpoint-500") == 0); /* no marker yet */
	s_write_in(e.dir, "checkpoint-500", "trainer_state.json", "{}");
	s_pump_until(w, &r, "checkpoint-500");
	s_path(d, sizeof(d), e.dir, "checkpoint-500");
	CU_ASSERT(r.ms[s_index(&r, "checkpoint-500")] == s_ctime_ms(d, "trainer_state.json"));
	CU_ASSERT_EQUAL(s_watches(w), 1); /* committed: its watch is given up */
	/* a crash mid-write: the next directory never gets its marker, in events or scans */
	s_mkdir(e.dir, "checkpoint-1000");
	s_write_in(e.dir, "checkpoint-1000", "model.safetensors", "half");
	r.n = 0;
	s_sync_as(w, &r, e.dir, "sentinel-2");
	CU_ASSERT(s_count(&r, "checkpoint-1000") == 0);
	r.n = 0;
	CU_ASSERT(rr_watcher_scan(w, s_record, &r) == 0);
	CU_ASSERT(s_count(&r, "checkpoint-1000") == 0);
	CU_ASSERT(s_count(&r, "checkpoint-500") == 1);
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

static int s_scan_count(const char *dir, const char *name);

/* DeepSpeed (DeepSpeedEngine.save_checkpoint): global_stepN/ in place, then `latest`
 * rewritten in place to name it. */
static void test_auto_commits_a_deepspeed_directory_when_latest_names_it(void)
{
	struct s_env e;
	struct rr_watcher *w, *w2;
	struct s_rec r = { .n = 0 };

	s_env_init(&e);
	w = s_new_with(e.dir, "auto");
	s_mkdir(e.dir, "global_step10");
	s_write_in(e.dir, "global_step10", "mp_rank_00_model_states.pt", "m");
	s_write(e.dir, "zero_to_fp32.py", "# copied in place, never a checkpoint");
	s_sync_as(w, &r, e.dir, "sentinel-3");
	CU_ASSERT(s_count(&r, "global_step10") == 0);
	s_write(e.dir, "latest", "global_step10");
	s_pump_until(w, &r, "global_step10");
	CU_ASSERT(r.ms[s_index(&r, "global_step10")] == s_ctime_ms(e.dir, "latest"));
	/* committed: no watch left inside it, only the directory's own (DeepSpeed keeps every
	 * global_stepN: one watch each counted against the kernel's limit for as long as it
	 * stayed) */
	CU_ASSERT_EQUAL(s_watches(w), 1);
	/* crash mid-write of global_step20: latest still names global_step10 */
	s_mkdir(e.dir, "global_step20");
	s_write_in(e.dir, "global_step20", "mp_rank_00_model_states.pt", "half");
	s_write(e.dir, "junk-pointer-target", "x");
	r.n = 0;
	w2 = s_new_with(e.dir, "auto");
	CU_ASSERT(rr_watcher_scan(w2, s_record, &r) == 0);
	CU_ASSERT(s_count(&r, "global_step10") == 1);
	CU_ASSERT(s_count(&r, "global_step20") == 0);
	CU_ASSERT(s_count(&r, "latest") == 0);
	CU_ASSERT(s_count(&r, "zero_to_fp32.py") == 0);
	CU_ASSERT(s_count(&r, "junk-pointer-target") == 0);
	/* global_step10 only: beside `latest` the sentinel, a directory with no marker, is
	 * not taken by a scan (it may be a tag half-written in place) */
	CU_ASSERT(r.n == 1);
	rr_watcher_destroy(w2);
	/* A tag of the trainer's own (save_checkpoint(dir, tag="step-20")) crashed mid-write:
	 * beside `latest` it is a DeepSpeed tag written in place, not a renamed directory. */
	s_mkdir(e.dir, "step-20");
	s_write_in(e.dir, "step-20", "mp_rank_00_model_states.pt", "half");
	CU_ASSERT(s_scan_count(e.dir, "step-20") == 0);
	CU_ASSERT(s_scan_count(e.dir, "global_step10") == 1);
	/* a pointer naming something that is not a directory commits nothing */
	r.n = 0;
	s_write(e.dir, "latest", "junk-pointer-target\n");
	s_write(e.dir, "latest", "../escape");
	s_sync_as(w, &r, e.dir, "sentinel-4");
	CU_ASSERT(r.n == 1);
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

/* How many times a fresh watcher's start-up scan (rule auto) reports name. */
static int s_scan_count(const char *dir, const char *name)
{
	struct rr_watcher *w = s_new_with(dir, "auto");
	struct s_rec r = { .n = 0 };
	int n;

	CU_ASSERT(rr_watcher_scan(w, s_record, &r) == 0);
	n = s_count(&r, name);
	rr_watcher_destroy(w);
	return n;
}

/* Lightning's DeepSpeed strategy (DeepSpeedStrategy.save_checkpoint ->
 * engine.save_checkpoint(filepath, tag="checkpoint")): epoch=E-step=S.ckpt/ made in place,
 * checkpoint/ and its shards, then `latest` naming the tag, then zero_to_fp32.py. Never
 * committed before (no marker). HF Trainer with DeepSpeed writes the same `latest` into
 * checkpoint-N before trainer_state.json: that directory still waits for its own marker. */
static void test_auto_commits_a_lightning_deepspeed_directory_when_latest_lands(void)
{
	struct s_env e;
	struct rr_watcher *w;
	struct s_rec r = { .n = 0 };
	char d[PATH_MAX];

	s_env_init(&e);
	w = s_new_with(e.dir, "auto");
	s_mkdir(e.dir, "epoch=0-step=20.ckpt");
	s_path(d, sizeof(d), e.dir, "epoch=0-step=20.ckpt");
	s_mkdir(d, "checkpoint");
	s_write_in(d, "checkpoint", "mp_rank_00_model_states.pt", "m");
	s_write_in(d, "checkpoint", "zero_pp_rank_0_mp_rank_00_optim_states.pt", "o");
	s_sync_as(w, &r, e.dir, "sentinel-ld1");
	CU_ASSERT(s_count(&r, "epoch=0-step=20.ckpt") == 0);
	/* nor does a scan take it (a crash mid-write, then a restart on the same disk) */
	CU_ASSERT(s_scan_count(e.dir, "epoch=0-step=20.ckpt") == 0);
	s_write(d, "latest", "checkpoint");
	s_pump_until(w, &r, "epoch=0-step=20.ckpt");
	CU_ASSERT(r.ms[s_index(&r, "epoch=0-step=20.ckpt")] == s_ctime_ms(d, "latest"));
	CU_ASSERT(s_scan_count(e.dir, "epoch=0-step=20.ckpt") == 1);

	s_mkdir(e.dir, "checkpoint-500");
	s_path(d, sizeof(d), e.dir, "checkpoint-500");
	s_mkdir(d, "global_step500");
	s_write_in(d, "global_step500", "mp_rank_00_model_states.pt", "m");
	s_write(d, "latest", "global_step500");
	r.n = 0;
	s_sync_as(w, &r, e.dir, "sentinel-ld2");
	CU_ASSERT(s_count(&r, "checkpoint-500") == 0);
	s_write(d, "trainer_state.json", "{}");
	s_pump_until(w, &r, "checkpoint-500");
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

/* torch.distributed.checkpoint (FileSystemWriter): *.distcp shards, then .metadata
 * (written to .metadata.tmp and renamed in recent torch). */
static void test_auto_commits_a_dcp_directory_when_metadata_lands(void)
{
	struct s_env e;
	struct rr_watcher *w;
	struct s_rec r = { .n = 0 };
	char d[PATH_MAX];

	s_env_init(&e);
	w = s_new_with(e.dir, "auto");
	s_mkdir(e.dir, "step-30");
	s_write_in(e.dir, "step-30", "__0_0.distcp", "a");
	s_write_in(e.dir, "step-30", "__1_0.distcp", "b");
	s_sync_as(w, &r, e.dir, "sentinel-5");
	CU_ASSERT(s_count(&r, "step-30") == 0);
	/* a fresh scan does not take it by rename either: it holds shards, no .metadata */
	CU_ASSERT(s_scan_count(e.dir, "step-30") == 0);
	s_write_in(e.dir, "step-30", ".metadata.tmp", "meta");
	s_path(d, sizeof(d), e.dir, "step-30");
	s_rename(d, ".metadata.tmp", ".metadata");
	s_pump_until(w, &r, "step-30");
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

/* Lightning (ModelCheckpoint -> lightning.fabric.utilities.cloud_io._atomic_save): an
 * fsspec transaction writes tempfile.mkstemp()'s "tmpXXXXXXXX" and moves it onto
 * epoch=E-step=S.ckpt; with TMPDIR on the checkpoint dir the temp file sits beside it. */
static void test_auto_commits_a_lightning_file_moved_from_a_tmp_name(void)
{
	struct s_env e;
	struct rr_watcher *w;
	struct s_rec r = { .n = 0 };

	s_env_init(&e);
	w = s_new_with(e.dir, "auto");
	s_write(e.dir, "tmpa1b2c3d4", "torch zip bytes");
	s_write(e.dir, "other.ckpt.tmp", "x");
	s_sync_as(w, &r, e.dir, "sentinel-6");
	CU_ASSERT(r.n == 1); /* the sentinel only */
	s_rename(e.dir, "tmpa1b2c3d4", "epoch=0-step=10.ckpt");
	s_pump_until(w, &r, "epoch=0-step=10.ckpt");
	r.n = 0;
	CU_ASSERT(rr_watcher_scan(w, s_record, &r) == 0);
	CU_ASSERT(s_count(&r, "epoch=0-step=10.ckpt") == 1);
	CU_ASSERT(s_count(&r, "other.ckpt.tmp") == 0);
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

static void test_custom_marker_and_pointer_rules(void)
{
	struct s_env e;
	struct rr_watcher *w;
	struct s_rec r = { .n = 0 };

	s_env_init(&e);
	w = s_new_with(e.dir, "marker:DONE");
	s_mkdir(e.dir, "run-a");
	s_write_in(e.dir, "run-a", "trainer_state.json", "{}"); /* not this rule's marker */
	s_mkdir_at(e.dir, "run-a", "sub");
	s_commit(e.dir, "renamed"); /* renames do not commit under marker: */
	s_write_in(e.dir, "renamed", "DONE", ""); /* ... but its marker does */
	s_pump_until(w, &r, "renamed");
	CU_ASSERT(s_count(&r, "run-a") == 0);
	s_write_in(e.dir, "run-a", "DONE", "");
	s_pump_until(w, &r, "run-a");
	rr_watcher_destroy(w);

	r.n = 0;
	w = s_new_with(e.dir, "pointer:CURRENT");
	s_write(e.dir, "latest", "run-a"); /* not this rule's pointer */
	s_mkdir(e.dir, "run-b");
	s_write(e.dir, "CURRENT", "run-b\n");
	s_pump_until(w, &r, "run-b");
	CU_ASSERT(r.n == 1);
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

static void test_rename_rule_ignores_markers(void)
{
	struct s_env e;
	struct rr_watcher *w;
	struct s_rec r = { .n = 0 };

	s_env_init(&e);
	w = s_new_with(e.dir, "rename");
	s_mkdir(e.dir, "checkpoint-1");
	s_write_in(e.dir, "checkpoint-1", "trainer_state.json", "{}");
	s_write(e.dir, "latest", "checkpoint-1");
	s_sync_as(w, &r, e.dir, "sentinel-7");
	CU_ASSERT(r.n == 1);
	CU_ASSERT(s_count(&r, "checkpoint-1") == 0);
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

/* Stopped, the watcher reports what was queued before, then nothing: no watch is left (on
 * the directory nor inside one waiting for its marker), so later commits queue no event
 * at all, and what is left to read (the removed watches' IN_IGNORED) drains. */
static void test_stop_reports_what_is_queued_then_watches_nothing(void)
{
	struct s_env e;
	struct rr_watcher *w;
	struct s_rec r = { .n = 0 };
	struct pollfd pfd;
	int i;

	s_env_init(&e);
	w = s_new_with(e.dir, "marker:DONE");
	s_mkdir(e.dir, "run-a"); /* watched for its marker from now on */
	s_mkdir(e.dir, "run-b");
	s_write_in(e.dir, "run-b", "DONE", "");
	s_pump_until(w, &r, "run-b");
	s_mkdir(e.dir, "run-c");
	s_write_in(e.dir, "run-c", "DONE", ""); /* queued, not processed yet */
	CU_ASSERT_EQUAL(rr_watcher_stop(w, s_record, &r), 0);
	CU_ASSERT_EQUAL(s_count(&r, "run-c"), 1);
	pfd = (struct pollfd){ .fd = rr_watcher_fd(w), .events = POLLIN };
	for (i = 0; i < 100 && poll(&pfd, 1, 0) == 1; i++)
		CU_ASSERT_EQUAL_FATAL(rr_watcher_process(w, s_record, &r), 0);
	CU_ASSERT_EQUAL(poll(&pfd, 1, 0), 0);
	s_write_in(e.dir, "run-a", "DONE", "");
	s_mkdir(e.dir, "run-d");
	s_write_in(e.dir, "run-d", "DONE", "");
	s_commit(e.dir, "step-1");
	CU_ASSERT_EQUAL(poll(&pfd, 1, 0), 0); /* inotify queues an event before the call returns */
	CU_ASSERT_EQUAL(rr_watcher_process(w, s_record, &r), 0);
	CU_ASSERT_EQUAL(r.n, 2);
	CU_ASSERT_EQUAL(rr_watcher_stop(w, s_record, &r), 0);
	CU_ASSERT_EQUAL(rr_watcher_stop(NULL, s_record, &r), 0);
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

/* A rescan (after the event queue overflowed) reports a checkpoint seen before with the
 * commit time it had then, not its directory's ctime now: a file removed from an older
 * checkpoint moved that forward, and it was taken for a commit newer than the newest. */
static void test_rescan_keeps_the_commit_time_of_a_name_seen_before(void)
{
	struct s_env e;
	struct rr_watcher *w;
	struct s_rec r = { .n = 0 };
	char d[PATH_MAX];
	int64_t first;

	s_env_init(&e);
	w = s_new_with(e.dir, "rename");
	s_commit(e.dir, "step-400");
	s_pump_until(w, &r, "step-400");
	first = r.ms[s_index(&r, "step-400")];
	poll(NULL, 0, 20);
	s_path(d, sizeof(d), e.dir, "step-400");
	s_write(d, "notes.txt", "x"); /* the directory's ctime moves */
	CU_ASSERT(s_ctime_ms(e.dir, "step-400") > first);
	r.n = 0;
	CU_ASSERT(rr_watcher_scan(w, s_record, &r) == 0);
	CU_ASSERT_FATAL(s_index(&r, "step-400") >= 0);
	CU_ASSERT_EQUAL(r.ms[s_index(&r, "step-400")], first);
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

/* Commits step-400, then removes it (HF's save_total_limit rotating it away) and makes a
 * step-400 directly (under rename, never reported by events); returns the commit time of
 * the first. A later scan must report the second with its own time. */
static int64_t s_commit_remove_remake(struct rr_watcher *w, struct s_rec *r, const char *dir,
				      int process_between)
{
	char d[PATH_MAX];
	int64_t first;

	s_commit(dir, "step-400");
	s_pump_until(w, r, "step-400");
	first = r->ms[s_index(r, "step-400")];
	s_path(d, sizeof(d), dir, "step-400");
	s_rm_rf(d);
	if (process_between)
		s_sync_as(w, r, dir, "step-401"); /* the removal's event is handled by then */
	else
		CU_ASSERT(rr_watcher_scan(w, s_record, r) == 0); /* it does not find step-400 */
	poll(NULL, 0, 20);
	s_mkdir(dir, "step-400");
	CU_ASSERT(s_ctime_ms(dir, "step-400") > first);
	return first;
}

/* A name that leaves the directory is forgotten: a long run holds the names the directory
 * holds (it held every name ever committed, 48 bytes each, a growth the long-run test
 * measured), and a new checkpoint under an old name is not given the old one's time. */
static void test_a_name_removed_is_forgotten(void)
{
	for (int process_between = 1; process_between >= 0; process_between--) {
		struct s_env e;
		struct rr_watcher *w;
		struct s_rec r = { .n = 0 };
		int64_t first;

		s_env_init(&e);
		w = s_new_with(e.dir, "rename");
		first = s_commit_remove_remake(w, &r, e.dir, process_between);
		r.n = 0; /* the removal's event still queued when !process_between */
		CU_ASSERT(rr_watcher_scan(w, s_record, &r) == 0);
		CU_ASSERT_FATAL(s_index(&r, "step-400") >= 0);
		CU_ASSERT(r.ms[s_index(&r, "step-400")] != first);
		CU_ASSERT_EQUAL(r.ms[s_index(&r, "step-400")], s_ctime_ms(e.dir, "step-400"));
		rr_watcher_destroy(w);
		s_rm_rf(e.root);
	}
}

/* While set, watching a directory whose path holds "/checkpoint-" fails as when the
 * kernel's inotify watches are used up (fs.inotify.max_user_watches). */
static int s_watches_used_up;
static int (*s_real_add_watch)(int, const char *, uint32_t);

__attribute__((constructor)) static void s_find_real(void)
{
	*(void **)&s_real_add_watch = dlsym(RTLD_NEXT, "inotify_add_watch");
}

int inotify_add_watch(int fd, const char *path, uint32_t mask)
{
	if (s_watches_used_up && strstr(path, "/checkpoint-")) {
		errno = ENOSPC;
		return -1;
	}
	return s_real_add_watch(fd, path, mask);
}

/* HF checkpoints when no directory can be watched for its marker: the start-up scan goes on
 * past one that cannot (it stopped there, and the complete ones after it in the listing were
 * never persisted), and one committed later is found by a scan about every second (it was
 * never found: no event comes from a directory not watched). */
static void test_auto_finds_markers_when_no_watch_is_left(void)
{
	struct s_env e;
	struct rr_watcher *w;
	struct s_rec r = { .n = 0 };
	char name[64];

	s_env_init(&e);
	w = s_new_with(e.dir, "auto");
	s_watches_used_up = 1;
	for (int i = 1; i <= 20; i++) {
		snprintf(name, sizeof(name), "checkpoint-%d", i * 100);
		s_mkdir(e.dir, name);
		if (i != 7) /* one written in place, its marker not there yet */
			s_write_in(e.dir, name, "trainer_state.json", "{}");
	}
	CU_ASSERT(rr_watcher_scan(w, s_record, &r) == 0);
	CU_ASSERT_EQUAL(r.n, 19);
	CU_ASSERT(s_count(&r, "checkpoint-700") == 0);
	CU_ASSERT(s_count(&r, "checkpoint-2000") == 1);
	r.n = 0;
	s_write_in(e.dir, "checkpoint-700", "trainer_state.json", "{}");
	s_mkdir(e.dir, "checkpoint-2100");
	s_write_in(e.dir, "checkpoint-2100", "trainer_state.json", "{}");
	for (int64_t until = rr_mono_ms() + 5000;
	     rr_mono_ms() < until && (s_index(&r, "checkpoint-700") < 0 ||
				      s_index(&r, "checkpoint-2100") < 0);) {
		poll(NULL, 0, 100);
		CU_ASSERT(rr_watcher_process(w, s_record, &r) == 0);
	}
	CU_ASSERT(s_index(&r, "checkpoint-700") >= 0);
	CU_ASSERT(s_index(&r, "checkpoint-2100") >= 0);
	s_watches_used_up = 0;
	rr_watcher_destroy(w);
	s_rm_rf(e.root);
}

static CU_TestInfo s_tests[] = {
	{ "rescan_keeps_the_commit_time_of_a_name_seen_before",
	  test_rescan_keeps_the_commit_time_of_a_name_seen_before },
	{ "a_name_removed_is_forgotten", test_a_name_removed_is_forgotten },
	{ "auto_finds_markers_when_no_watch_is_left",
	  test_auto_finds_markers_when_no_watch_is_left },
	{ "test_auto_commits_an_hf_directory_when_trainer_state_is_closed",
	  test_auto_commits_an_hf_directory_when_trainer_state_is_closed },
	{ "test_auto_commits_a_deepspeed_directory_when_latest_names_it",
	  test_auto_commits_a_deepspeed_directory_when_latest_names_it },
	{ "test_auto_commits_a_lightning_deepspeed_directory_when_latest_lands",
	  test_auto_commits_a_lightning_deepspeed_directory_when_latest_lands },
	{ "test_auto_commits_a_dcp_directory_when_metadata_lands",
	  test_auto_commits_a_dcp_directory_when_metadata_lands },
	{ "test_auto_commits_a_lightning_file_moved_from_a_tmp_name",
	  test_auto_commits_a_lightning_file_moved_from_a_tmp_name },
	{ "test_custom_marker_and_pointer_rules", test_custom_marker_and_pointer_rules },
	{ "test_rename_rule_ignores_markers", test_rename_rule_ignores_markers },
	{ "test_stop_reports_what_is_queued_then_watches_nothing",
	  test_stop_reports_what_is_queued_then_watches_nothing },
	{ "test_new_creates_missing_directory_with_parents",
	  test_new_creates_missing_directory_with_parents },
	{ "test_new_rejects_a_path_that_is_a_file", test_new_rejects_a_path_that_is_a_file },
	{ "test_destroy_accepts_null", test_destroy_accepts_null },
	{ "test_destroy_detached_keeps_no_other_descriptor",
	  test_destroy_detached_keeps_no_other_descriptor },
	{ "test_process_with_nothing_pending_returns_at_once",
	  test_process_with_nothing_pending_returns_at_once },
	{ "test_rename_from_dot_dir_is_a_commit", test_rename_from_dot_dir_is_a_commit },
	{ "test_dot_directories_are_never_reported", test_dot_directories_are_never_reported },
	{ "test_names_restore_refuses_are_never_reported",
	  test_names_restore_refuses_are_never_reported },
	{ "test_scan_reports_existing_checkpoints_only",
	  test_scan_reports_existing_checkpoints_only },
	{ "test_scan_of_an_empty_directory_reports_nothing",
	  test_scan_of_an_empty_directory_reports_nothing },
	{ "test_scan_sees_commits_made_after_the_watcher_started",
	  test_scan_sees_commits_made_after_the_watcher_started },
	{ "test_five_commits_in_a_row_are_all_reported_in_order",
	  test_five_commits_in_a_row_are_all_reported_in_order },
	{ "test_final_name_renamed_to_another_final_name_is_a_commit",
	  test_final_name_renamed_to_another_final_name_is_a_commit },
	{ "test_directory_moved_in_from_elsewhere_is_a_commit",
	  test_directory_moved_in_from_elsewhere_is_a_commit },
	{ "test_whole_file_written_in_place_commits_a_cut_one_does_not",
	  test_whole_file_written_in_place_commits_a_cut_one_does_not },
	{ "test_a_settling_file_goes_with_its_directory",
	  test_a_settling_file_goes_with_its_directory },
	{ "test_file_renamed_to_a_final_name_is_a_one_file_checkpoint",
	  test_file_renamed_to_a_final_name_is_a_one_file_checkpoint },
	{ "test_commit_that_vanished_before_processing_is_skipped",
	  test_commit_that_vanished_before_processing_is_skipped },
	{ "test_directory_created_directly_with_final_name_is_not_reported",
	  test_directory_created_directly_with_final_name_is_not_reported },
	{ "test_a_checkpoint_file_written_in_place_is_warned_once",
	  test_a_checkpoint_file_written_in_place_is_warned_once },
	{ "test_direct_create_warns_once_per_name_and_for_at_most_ten_names",
	  test_direct_create_warns_once_per_name_and_for_at_most_ten_names },
	{ "test_watcher_survives_the_directory_being_deleted",
	  test_watcher_survives_the_directory_being_deleted },
	{ "test_watcher_rescans_a_directory_recreated_by_the_trainer",
	  test_watcher_rescans_a_directory_recreated_by_the_trainer },
	{ "test_watcher_follows_the_path_when_the_directory_is_moved_away",
	  test_watcher_follows_the_path_when_the_directory_is_moved_away },
	{ "test_queue_overflow_falls_back_to_a_full_scan",
	  test_queue_overflow_falls_back_to_a_full_scan },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("watcher", s_tests)
