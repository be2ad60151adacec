/* Reading /proc (procfs.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rr/error.h"

#include "procfs.h"

int rr_procfs_read(const char *path, struct rr_buf *b)
{
	int fd, rc = 0;

	rr_buf_reset(b);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return (errno == ENOENT || errno == ESRCH) ? RR_ENOENT : rr_error_from_errno(errno);
	for (;;) {
		ssize_t n;

		rc = rr_buf_reserve(b, 4096);
		if (rc)
			goto out;
		n = read(fd, b->data + b->len, b->cap - b->len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = errno == ESRCH ? RR_ENOENT : rr_error_from_errno(errno);
			goto out;
		}
		if (n == 0)
			break;
		b->len += (size_t)n;
	}
	b->data[b->len] = '\0';
out:
	close(fd);
	return rc;
}

long rr_procfs_number(const char **p)
{
	long v = 0;
	int digits = 0;

	while (**p >= '0' && **p <= '9') {
		if (++digits > 9)
			return -1;
		v = v * 10 + (**p - '0');
		(*p)++;
	}
	return digits ? v : -1;
}

int rr_proc_stat_parse(const char *line, pid_t pid, struct rr_proc_stat *out)
{
	const char *p = strrchr(line, ')');
	long ppid, pgrp;

	/* ") S 1234 5678 ...": state (3), ppid (4), pgrp (5), ..., starttime (22). */
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return RR_EIO;
	out->pid = pid;
	out->state = p[2];
	p += 4;
	ppid = rr_procfs_number(&p);
	if (ppid < 0 || *p++ != ' ')
		return RR_EIO;
	pgrp = rr_procfs_number(&p);
	if (pgrp < 0 || *p != ' ')
		return RR_EIO;
	out->ppid = (pid_t)ppid;
	out->pgrp = (pid_t)pgrp;
	for (int field = 5; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return RR_EIO;
		p++;
	}
	if (*p < '0' || *p > '9')
		return RR_EIO;
	out->start = 0;
	for (int digits = 0; *p >= '0' && *p <= '9'; p++) {
		if (++digits > 19)
			return RR_EIO;
		out->start = out->start * 10 + (unsigned)(*p - '0');
	}
	return *p == ' ' || *p == '\n' || *p == '\0' ? 0 : RR_EIO;
}

int rr_proc_stat_read(pid_t pid, struct rr_buf *b, struct rr_proc_stat *out)
{
	char path[64];
	int rc;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	rc = rr_procfs_read(path, b);
	return rc ? rc : rr_proc_stat_parse((const char *)b->data, pid, out);
}

int rr_proc_table_load(struct rr_proc_stat **out, size_t *n_out)
{
	struct rr_proc_stat *v = NULL;
	size_t n = 0, cap = 0;
	struct rr_buf b;
	struct dirent *de;
	DIR *dir = opendir("/proc");
	int rc = 0;

	*out = NULL;
	*n_out = 0;
	if (!dir)
		return rr_error_from_errno(errno);
	rr_buf_init(&b, RR_PROC_STAT_MAX);
	while ((de = readdir(dir)) != NULL) {
		const char *name = de->d_name;
		long pid = rr_procfs_number(&name);
		struct rr_proc_stat st;

		if (pid <= 0 || *name || rr_proc_stat_read((pid_t)pid, &b, &st) != 0)
			continue; /* not a process, or gone since the readdir */
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct rr_proc_stat *nv = realloc(v, ncap * sizeof(*v));
			if (!nv) {
				rc = RR_ENOMEM;
				break;
			}
			v = nv;
			cap = ncap;
		}
		v[n++] = st;
	}
	rr_buf_free(&b);
	closedir(dir);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n_out = n;
	return 0;
}
