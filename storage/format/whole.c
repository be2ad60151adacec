/* Is a checkpoint file whole? A file written in place under its final name (torch.save to
 * "ckpt.pt", safetensors' save_file) has no rename to say it is finished: its own format
 * says so instead. A zip (torch.save, torch.jit.save) is whole when its end of central
 * directory record, the last thing a zip writer writes, ends exactly at the end of the file
 * (APPNOTE.TXT 4.3.16: signature, fixed fields, then the comment); a safetensors file when
 * its header, parsed with every rule of the format, accounts for every byte (rr_st_parse). A
 * save cut short (the trainer killed mid-write, the disk full) fails these; what a format
 * reader refuses for other reasons (compressed zip entries) is still whole here. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rr/error.h"
#include "rr/format.h"
#include "rr/fsutil.h"

#define S_EOCD_LEN 22u
#define S_EOCD_SEARCH (S_EOCD_LEN + 0xffffu) /* the record and the longest comment */

static int s_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
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
		if (p + S_EOCD_LEN + comment == len) {
			state = RR_FILE_WHOLE;
			break;
		}
	}
out:
	free(buf);
	return state;
}

static enum rr_file_state s_safetensors(int fd, uint64_t size)
{
	uint8_t first8[8];
	uint64_t n = 0;
	size_t got = 0;
	struct rr_st_header h;
	char why[160];
	int rc;

	if (size < 8 || rr_pread_full(fd, first8, 8, 0, &got) != 0 || got != 8 ||
	    rr_st_header_size(first8, size, &n) != 0)
		return RR_FILE_CUT;
	uint8_t *buf = malloc(8 + n);
	if (!buf)
		return RR_FILE_OTHER; /* cannot tell: not called cut */
	rc = rr_pread_full(fd, buf, 8 + n, 0, &got);
	if (!rc && got == 8 + n)
		rc = rr_st_parse(buf, 8 + n, size, &h, why, sizeof(why));
	else
		rc = RR_ECORRUPT;
	if (!rc)
		rr_st_header_free(&h);
	free(buf);
	return rc == 0 ? RR_FILE_WHOLE : rc == RR_ENOMEM ? RR_FILE_OTHER : RR_FILE_CUT;
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

	if (size >= 4 && rr_pread_full(fd, head, 4, 0, &got) == 0 && got == 4 &&
	    memcmp(head, "PK\x03\x04", 4) == 0)
		return s_zip(fd, size);
	if (s_ends_with(name, ".safetensors"))
		return s_safetensors(fd, size);
	return RR_FILE_OTHER;
}
