/* Is a checkpoint file whole? A file written in place under its final name (torch.save to
 * "ckpt.pt", safetensors' save_file) has no rename to say it is finished: its own format says
 * so instead.
 * - A zip (torch.save, torch.jit.save) is whole when its end of central directory record,
 *   the last thing a zip writer writes, ends exactly at the end of the file (APPNOTE.TXT
 *   4.3.16: signature, fixed fields, then the comment) and closes the file's own central
 *   directory right before it (through the ZIP64 records, 4.3.14-15); a torch archive, which
 *   torch's writer closes even when the save failed, also needs its pickle and a record for
 *   every storage the pickle names (rr_torch_complete).
 * - A safetensors file is whole when the data its header describes ends the file (its
 *   offsets only: a dtype this reader does not know yet leaves it whole).
 * - An empty or too short file with such a name is cut: torch.save truncates before it
 *   pickles.
 * A save cut short (the trainer killed mid-write, the disk full) fails these; what a format
 * reader refuses for other reasons (compressed zip entries, byte order) is still whole here. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "rr/error.h"
#include "rr/format.h"
#include "rr/fsutil.h"
#include "rr/json.h"
#include "torch_zip.h"

#define S_EOCD_LEN 22u
#define S_EOCD_SEARCH (S_EOCD_LEN + 0xffffu) /* the record and the longest comment */

static int s_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Names of the formats checked here: torch.save's and Lightning's, safetensors. */
static int s_checked_name(const char *name)
{
	static const char *const exts[] = { ".pt", ".pth", ".ckpt", ".bin", ".safetensors" };

	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
		if (s_ends_with(name, exts[i]))
			return 1;
	return 0;
}

static uint64_t s_le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* The end record at eocd (an offset in the file, its bytes in rec) closes this file's own
 * central directory: the directory lies right before the end records (the ZIP64 ones, when a
 * locator stands before the classic record, as torch.save always writes them) and starts
 * with a central header. A record that a tensor's bytes happen to hold (a zip saved inside a
 * checkpoint, the save cut right after it) names offsets that do not. */
static int s_closes_directory(int fd, uint64_t eocd, const unsigned char *rec)
{
	uint64_t cd_size = s_le(rec + 12, 4), cd_off = s_le(rec + 16, 4), end = eocd;
	unsigned char b[56];
	size_t got = 0;

	if (eocd >= 20 && rr_pread_full(fd, b, 20, (int64_t)(eocd - 20), &got) == 0 &&
	    got == 20 && memcmp(b, "PK\x06\x07", 4) == 0) {
		/* The ZIP64 end record where the locator says, ending where the locator begins. */
		uint64_t z = s_le(b + 8, 8);
		if (z > eocd - 20 || eocd - 20 - z < 56 ||
		    rr_pread_full(fd, b, 56, (int64_t)z, &got) != 0 || got != 56 ||
		    memcmp(b, "PK\x06\x06", 4) != 0 || s_le(b + 4, 8) + 12 != eocd - 20 - z)
			return 0;
		cd_size = s_le(b + 40, 8);
		cd_off = s_le(b + 48, 8);
		end = z;
	}
	if (cd_off > end || end - cd_off != cd_size)
		return 0;
	if (cd_size == 0)
		return 1; /* an empty archive */
	return rr_pread_full(fd, b, 4, (int64_t)cd_off, &got) == 0 && got == 4 &&
	       memcmp(b, "PK\x01\x02", 4) == 0;
}

static enum rr_file_state s_zip(int fd, uint64_t size)
{
	size_t len = size < S_EOCD_SEARCH ? (size_t)size : S_EOCD_SEARCH, got = 0;
	unsigned char *buf = malloc(S_EOCD_SEARCH);
	enum rr_file_state state = RR_FILE_CUT;

	if (!buf)
		return RR_FILE_OTHER; /* cannot tell: not called cut */
	if (len < S_EOCD_LEN || rr_pread_full(fd, buf, len, (int64_t)(size - len), &got) != 0 ||
	    got != len)
		goto out;
	/* From the end back: the record whose comment length brings it to the file's end. */
	for (size_t p = len - S_EOCD_LEN + 1; p-- > 0;) {
		if (memcmp(buf + p, "PK\x05\x06", 4) != 0)
			continue;
		size_t comment = (size_t)buf[p + 20] | (size_t)buf[p + 21] << 8;
		if (p + S_EOCD_LEN + comment != len)
			continue;
		if (s_closes_directory(fd, size - len + p, buf + p))
			state = RR_FILE_WHOLE;
		break;
	}
	if (state == RR_FILE_WHOLE) {
		/* Closed, but a torch.save interrupted while pickling or writing its records is
		 * closed too: its pickle and every record it names must be there. */
		struct rr_format_src src = { .pread = rr_format_fd_pread, .ud = &fd, .size = size };
		char why[200];
		int rc = rr_torch_complete(&src, why, sizeof(why));
		if (rc == RR_ECORRUPT)
			state = RR_FILE_CUT;
		else if (rc && rc != RR_ENOENT && rc != RR_ETOOBIG)
			state = RR_FILE_OTHER; /* cannot tell */
	}
out:
	free(buf);
	return state;
}

/* A safetensors file is whole when the data its header describes ends the file: 8 + N + the
 * largest end offset is its size. Only the offsets are read, so that a dtype this reader does
 * not know yet (a new FP8 or FP4 kind) leaves a whole file whole. */
static enum rr_file_state s_safetensors(int fd, uint64_t size)
{
	uint8_t first8[8];
	uint64_t n = 0, end = 0;
	size_t got = 0;
	enum rr_file_state state = RR_FILE_CUT;
	cJSON *h = NULL, *t;
	char *text;
	int rc;

	if (size < 8 || rr_pread_full(fd, first8, 8, 0, &got) != 0 || got != 8)
		return RR_FILE_CUT;
	rc = rr_st_header_size(first8, size, &n);
	if (rc == RR_ETOOBIG)
		return RR_FILE_OTHER; /* a header bigger than this reader takes: cannot tell */
	if (rc)
		return RR_FILE_CUT;
	text = malloc(n ? n : 1);
	if (!text)
		return RR_FILE_OTHER;
	if (rr_pread_full(fd, text, n, 8, &got) != 0) {
		state = RR_FILE_OTHER; /* cannot read it: cannot tell, not called cut */
		goto out;
	}
	if (got != n)
		goto out; /* shorter than its header says now: being written again, cut */
	if (rr_json_parse_object("safetensors header", text, n, &h, NULL, 0) != 0)
		h = NULL;
	for (t = h && cJSON_IsObject(h) ? h->child : NULL; t; t = t->next) {
		const cJSON *off = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
		const cJSON *e = cJSON_IsArray(off) ? cJSON_GetArrayItem(off, 1) : NULL;
		if (t->string && strcmp(t->string, "__metadata__") == 0)
			continue;
		if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > (double)size)
			goto out;
		if ((uint64_t)e->valuedouble > end)
			end = (uint64_t)e->valuedouble;
	}
	if (h && cJSON_IsObject(h) && 8 + n + end == size)
		state = RR_FILE_WHOLE;
out:
	cJSON_Delete(h);
	free(text);
	return state;
}

enum rr_file_state rr_format_file_state_at(int dirfd, const char *name)
{
	enum rr_file_state state = RR_FILE_OTHER;
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return RR_FILE_OTHER;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		state = rr_format_file_state(fd, name, (uint64_t)st.st_size);
	close(fd);
	return state;
}

enum rr_file_state rr_format_file_state(int fd, const char *name, uint64_t size)
{
	unsigned char head[4];
	size_t got = 0;

	/* Empty, or too short for any format it checks: torch.save truncates the file before
	 * it pickles, so a save killed then leaves this. */
	if (size < 4 && s_checked_name(name))
		return RR_FILE_CUT;
	if (size >= 4 && rr_pread_full(fd, head, 4, 0, &got) == 0 && got == 4 &&
	    memcmp(head, "PK\x03\x04", 4) == 0)
		return s_zip(fd, size);
	if (s_ends_with(name, ".safetensors"))
		return s_safetensors(fd, size);
	return RR_FILE_OTHER;
}
