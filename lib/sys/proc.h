/* SPDX-License-Identifier: MIT */
/*
 * What /proc says about a process (proc.c): the system below both the
 * writer (the start time that names its heap, retention's test for a
 * dead heap) and the reader (is a heap's writer alive?). Not the format:
 * the format only says what a start time is (heap-format.rst, "Where
 * heaps are": field 22 of /proc/<pid>/stat, clock ticks since boot,
 * scaled to ns); this is the one place that reads it.
 */
#ifndef BLAMER_SYS_PROC_H
#define BLAMER_SYS_PROC_H

#include <stdint.h>
#include <sys/types.h>

/* What /proc/<pid>/stat says about a process. */
struct bl_proc_stat {
	pid_t pid;		/* as this /proc's pid namespace numbers it */
	int64_t start_ns;	/* start time, ns since boot (as in file names) */
	char state;		/* 'R', 'S', ... 'Z' (zombie), 'X' (dead) */
	long num_threads;	/* a zombie main thread's process may have more */
	char comm[64];		/* between the first '(' and the last ')', cut */
};

/*
 * Reads /proc/<pid>/stat, or /proc/self/stat for @pid 0. 0 or -errno
 * (-EIO if it cannot be parsed). Only open, read and close: usable in a
 * fork child before it execs.
 */
int bl_proc_stat(pid_t pid, struct bl_proc_stat *st);
/* Just the start time, or -errno. */
int64_t bl_proc_start_ns(pid_t pid);

#endif /* BLAMER_SYS_PROC_H */
