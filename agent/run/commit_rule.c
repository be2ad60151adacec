/* What commits a checkpoint (docs/trainer-contract.md, "The trainer contract", "Committing a
 * checkpoint"). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rr/ckpt_order.h"
#include "rr/commit_rule.h"
#include "rr/error.h"
#include "rr/fsutil.h"

int rr_commit_rule_parse(const char *text, struct rr_commit_rule *out)
{
	const char *name = NULL;
	size_t len;

	memset(out, 0, sizeof(*out));
	if (!text)
		return RR_EINVAL;
	if (strcmp(text, "auto") == 0) {
		out->kind = RR_COMMIT_AUTO;
		return 0;
	}
	if (strcmp(text, "rename") == 0) {
		out->kind = RR_COMMIT_RENAME;
		return 0;
	}
	if (strncmp(text, "marker:", 7) == 0) {
		out->kind = RR_COMMIT_MARKER;
		name = text + 7;
	} else if (strncmp(text, "pointer:", 8) == 0) {
		out->kind = RR_COMMIT_POINTER;
		name = text + 8;
	} else {
		return RR_EINVAL;
	}
	len = strlen(name);
	if (len == 0 || len >= sizeof(out->name) || strchr(name, '/') ||
	    strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return RR_EINVAL;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return RR_EINVAL;
	memcpy(out->name, name, len + 1);
	return 0;
}

static int s_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

int rr_commit_is_temp_name(const char *name)
{
	static const char *const suffixes[] = { ".tmp", ".temp", ".part", ".partial", "~" };

	if (!name[0] || name[0] == '.')
		return 1;
	/* tempfile.mkstemp() names are "tmp" + 8 random characters; fsspec's transactions
	 * (Lightning's atomic save) write there before the move. Also transformers' former
	 * tmp-checkpoint-N staging directories. */
	if (strncmp(name, "tmp", 3) == 0)
		return 1;
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (s_ends_with(name, suffixes[i]))
			return 1;
	return 0;
}

int rr_commit_takes_renames(const struct rr_commit_rule *r)
{
	return r->kind == RR_COMMIT_AUTO || r->kind == RR_COMMIT_RENAME;
}

int rr_commit_is_marker(const struct rr_commit_rule *r, const char *dir, const char *name)
{
	if (r->kind == RR_COMMIT_MARKER)
		return strcmp(name, r->name) == 0;
	if (r->kind == RR_COMMIT_AUTO)
		return strcmp(name, RR_COMMIT_HF_MARKER) == 0 ||
		       strcmp(name, RR_COMMIT_DCP_MARKER) == 0 ||
		       (strcmp(name, RR_COMMIT_DS_DIR_MARKER) == 0 && s_ends_with(dir, ".ckpt"));
	return 0;
}

int rr_commit_is_pointer(const struct rr_commit_rule *r, const char *name)
{
	if (r->kind == RR_COMMIT_POINTER)
		return strcmp(name, r->name) == 0;
	if (r->kind == RR_COMMIT_AUTO)
		return strcmp(name, RR_COMMIT_DS_POINTER) == 0;
	return 0;
}

int rr_commit_has_markers(const struct rr_commit_rule *r)
{
	return r->kind == RR_COMMIT_AUTO || r->kind == RR_COMMIT_MARKER;
}

/* prefix followed by at least one digit and nothing else */
static int s_prefix_number(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	const char *p = name + n;

	if (strncmp(name, prefix, n) != 0 || !*p)
		return 0;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}

int rr_commit_scan_takes_dir(const struct rr_commit_rule *r, const char *name)
{
	if (r->kind == RR_COMMIT_RENAME)
		return 1;
	if (r->kind != RR_COMMIT_AUTO)
		return 0;
	/* checkpoint-N (HF), global_stepN (DeepSpeed) and *.ckpt (Lightning's DeepSpeed
	 * strategy) are written in place: only their marker or pointer commits them. */
	return !s_prefix_number(name, "checkpoint-") && !s_prefix_number(name, "global_step") &&
	       !s_ends_with(name, ".ckpt");
}

int rr_commit_file_looks_like_checkpoint(const char *name)
{
	static const char *const exts[] = { ".ckpt", ".pt", ".pth", ".bin", ".safetensors",
					    ".tar" };
	uint64_t step;

	if (rr_commit_is_temp_name(name))
		return 0;
	if (rr_checkpoint_step(name, &step))
		return 1;
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
		if (s_ends_with(name, exts[i]))
			return 1;
	return 0;
}

int rr_commit_scan_takes_file(const struct rr_commit_rule *r, const char *name)
{
	if (!rr_commit_takes_renames(r) || rr_commit_is_pointer(r, name) ||
	    rr_commit_is_temp_name(name))
		return 0;
	return r->kind == RR_COMMIT_RENAME || rr_commit_file_looks_like_checkpoint(name);
}

/* 1 when dir/name holds a regular file of that name (not followed through a symlink). */
static int s_holds(const char *dir, const char *name, const char *file)
{
	char *a = rr_path_join(dir, name), *b = a ? rr_path_join(a, file) : NULL;
	struct stat st;
	int holds = b && lstat(b, &st) == 0 && S_ISREG(st.st_mode);

	free(a);
	free(b);
	return holds;
}

int rr_commit_in_place(const struct rr_commit_rule *r, const char *dir, const char *name)
{
	char *path = rr_path_join(dir, name);
	struct stat st;
	int is_dir = path && lstat(path, &st) == 0 && S_ISDIR(st.st_mode);

	free(path);
	if (!is_dir || r->kind == RR_COMMIT_RENAME)
		return 0;
	if (r->kind != RR_COMMIT_AUTO)
		return 1;
	return !rr_commit_scan_takes_dir(r, name) || s_holds(dir, name, RR_COMMIT_HF_MARKER) ||
	       s_holds(dir, name, RR_COMMIT_DCP_MARKER) ||
	       (rr_commit_is_marker(r, name, RR_COMMIT_DS_DIR_MARKER) &&
		s_holds(dir, name, RR_COMMIT_DS_DIR_MARKER));
}

const char *rr_commit_pointer_for(const struct rr_commit_rule *r, const char *name)
{
	if (r->kind == RR_COMMIT_POINTER)
		return r->name;
	if (r->kind == RR_COMMIT_AUTO && s_prefix_number(name, "global_step"))
		return RR_COMMIT_DS_POINTER;
	return NULL;
}

int rr_commit_write_pointer(const struct rr_commit_rule *r, const char *dir, const char *name,
			    const char **pointer_out)
{
	const char *pointer = rr_commit_pointer_for(r, name);
	char *path;
	int rc;

	if (pointer_out)
		*pointer_out = NULL;
	if (!pointer)
		return 0;
	path = rr_path_join(dir, pointer);
	if (!path)
		return RR_ENOMEM;
	/* DeepSpeed writes the bare tag, no newline; so does this. */
	rc = rr_write_file_durable(path, name, strlen(name), 0644);
	free(path);
	if (!rc && pointer_out)
		*pointer_out = pointer;
	return rc;
}
