/* Reading /proc: a whole file, one process's stat line, the process table. Shared by the
 * trainer's process tree (proctree.c) and the leftover sweep (supervisor.c). */
#ifndef RR_PROCFS_H
#define RR_PROCFS_H

#include <stddef.h>
#include <sys/types.h>

#include "rr/buf.h"

/* Reads a whole /proc file into b (reset first), NUL-terminated. RR_ENOENT when the
 * process is gone, RR_ENOMEM past b's limit. */
int rr_procfs_read(const char *path, struct rr_buf *b);

/* Parses a decimal pid-sized number (at most 9 digits) at *p, advancing it; -1 when there
 * is none or it is too long. */
long rr_procfs_number(const char **p);

/* One process as /proc/PID/stat gives it. start is clock ticks since boot: with the pid,
 * an identity no later process can share. */
struct rr_proc_stat {
	pid_t pid, ppid, pgrp;
	unsigned long long start;
	char state; /* R, S, D, Z, X, ... */
};

/* The ceiling for rr_proc_stat_read's scratch buffer: a stat line is a few hundred bytes,
 * and rr_procfs_read asks for 4 KiB more room than it holds before each read. */
#define RR_PROC_STAT_MAX (64u << 10)

/* Parses a stat line (NUL-terminated) of process pid into *out: 0, or RR_EIO when
 * malformed. comm (field 2) is the process's to choose and may hold spaces and ')': the
 * fields are counted from the last ')'. */
int rr_proc_stat_parse(const char *line, pid_t pid, struct rr_proc_stat *out);
/* Reads and parses pid's stat line, with b as scratch. RR_ENOENT when gone. */
int rr_proc_stat_read(pid_t pid, struct rr_buf *b, struct rr_proc_stat *out);

/* Every process in /proc, in *out (the caller frees it); those that exit during the walk
 * are left out. */
int rr_proc_table_load(struct rr_proc_stat **out, size_t *n_out);

#endif
