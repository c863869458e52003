/* SPDX-License-Identifier: MIT */
/*
 * Where heaps are: the rules the writer and the reader both take from
 * here, and nowhere else (Documentation/heap-format.rst, "Where heaps
 * are"):
 *
 *  - the backend: $BLAMER_BACKEND says device, dir or auto
 *    (blamer_backend_from_env(); what auto means differs: a writer falls
 *    back to dir when the device does not open, a reader prefers a
 *    directory it was given);
 *  - the device: BLAMER_DEVICE (blamer.h);
 *
 * and the dir backend's:
 *  - where: the directory given, else $BLAMER_DIR, else
 *    /dev/shm/blamer-<euid>; created 0700, and used only if it is a real
 *    directory (not a symlink), owned by us and writable by nobody else
 *    (a reader asks the same of a directory it reads, but for the owner,
 *    and takes only the owner's files);
 *  - names: slab <index> of the heap of process <pid> started at
 *    <start_ns> is the file "<pid>-<start_ns>.<index>.slab", decimal,
 *    nothing else;
 *  - files: a slab file is regular, owned by us, has one link and is
 *    writable by nobody else (anything else was planted);
 *  - start time: field 22 of /proc/<pid>/stat, clock ticks since boot,
 *    scaled to ns (ticks * (10^9 / CLK_TCK)); with the pid it names a
 *    process across pid reuse;
 *  - retention: a heap is dead when /proc shows no process of its pid
 *    and start time and no process holds a lock on its files (a writer
 *    share-locks each slab file while it has it mapped). Whenever a
 *    writer makes a heap there, it takes a bounded step (trim.c): the
 *    next entries of the directory are looked at, and the first time a
 *    heap is found dead its first file loses its write bits (its ctime
 *    then says when its death was noticed) and it joins a queue kept in
 *    the state file BL_TRIM_STATE; the most recently noticed are kept
 *    up to a count and a byte budget ($BLAMER_DIR_MAX_DEAD, default 64;
 *    $BLAMER_DIR_MAX_DEAD_BYTES, default 64 MiB), the others deleted,
 *    the longest dead first, a few per step.
 *
 * Functions report failure as -errno and, where a person needs to know
 * more, a one-line reason in @why (no strerror: the caller adds its own).
 */
#ifndef BLAMER_FORMAT_WHERE_H
#define BLAMER_FORMAT_WHERE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "blamer.h"


/* Longest slab file name, with its NUL. */
#define BL_SLAB_NAME_MAX	64

/* The directory to use: @dir if given, else $BLAMER_DIR, else
 * /dev/shm/blamer-<euid>. Returns @buf. */
const char *bl_slabdir_path(char *buf, size_t len, const char *dir);

/*
 * Opens the directory @path for slab files, creating it (0700) if it does
 * not exist, and checks it: a directory, not a symlink, ours, not
 * writable by group or others. An O_DIRECTORY fd, or -errno and @why.
 */
int bl_slabdir_open(const char *path, char *why, size_t whylen);

/*
 * Opens the directory @path to read heaps from (never creating it): the
 * writer's rules but for the owner, who may be another user (root reading
 * a user's heaps); @owner is set to it, and only that uid's files are
 * that directory's heaps. An O_DIRECTORY fd, or -errno and @why
 * (-ENOENT: no heap was ever made there).
 */
int bl_slabdir_open_read(const char *path, uid_t *owner, char *why, size_t whylen);

/* The name of slab @index of heap <pid>-<start_ns>; snprintf's return. */
int bl_slab_name(char *buf, size_t len, int64_t pid, uint64_t start_ns, uint32_t index);

/* Parses a slab file name: false for anything but the exact, canonical
 * form bl_slab_name() writes (no leading zeros, no sign), a pid of 0 or
 * above INT32_MAX, or an index of BLAMER_MAX_SLABS or more. */
bool bl_slab_name_parse(const char *name, int32_t *pid, uint64_t *start_ns,
			uint32_t *index);

/* Why a file (lstat/fstat of it, not following) is not one the library
 * could have made for @owner: a symlink, not regular, another owner,
 * more than one link, writable by group or others. NULL if it is one. */
const char *bl_slab_file_why(const struct stat *st, uid_t owner);
/* A file the library could have made: bl_slab_file_why(st, geteuid())
 * is NULL. */
bool bl_slab_file_ok(const struct stat *st);

/* Deletes the slab files of heap <pid>-<start_ns> in @dirfd that
 * bl_slab_file_ok() accepts (a look at each of the BLAMER_MAX_SLABS names
 * it may have: no readdir). The number removed, or -errno. */
int bl_slabdir_remove_heap(int dirfd, int64_t pid, int64_t start_ns);

/* How many dead heaps a directory keeps. */
struct bl_retention {
	uint32_t max_dead;		/* heaps */
	uint64_t max_dead_bytes;	/* bytes of their files */
};
#define BL_DEFAULT_MAX_DEAD		64u
#define BL_DEFAULT_MAX_DEAD_BYTES	(64ull << 20)

/* The limits $BLAMER_DIR_MAX_DEAD and $BLAMER_DIR_MAX_DEAD_BYTES (a
 * number of bytes, K, M or G for KiB, MiB, GiB) ask for, else the
 * defaults. 0, or -EINVAL and @why. */
int bl_retention_from_env(struct bl_retention *r, char *why, size_t whylen);

/*
 * trim.c: one step of the retention of @dirfd's dead heaps (where.h's
 * top): the next directory entries looked at, dead heaps found queued,
 * and the oldest beyond @keep deleted, each a bounded number, whatever
 * the directory holds. Only files that bl_slab_file_ok() accepts are
 * touched, and a heap whose files changed in the last second is left
 * for the next time (a writer in another pid namespace may be between
 * making its file and locking it); a time more than a second ahead does
 * not count as recent (a clock stepped back or a forged time would keep
 * a heap forever). Never waits: while another writer trims, this one
 * skips its step. Returns the number of heaps deleted, or -errno.
 */
int bl_slabdir_trim(int dirfd, const struct bl_retention *keep);
/* The file in a heap directory where trimming keeps its state (a name no
 * slab file has; readers pass over it). */
#define BL_TRIM_STATE	".blamer-trim"

/* What /proc/<pid>/stat says about a process. */
struct bl_proc_stat {
	int64_t start_ns;	/* start time, ns since boot (as in file names) */
	char state;		/* 'R', 'S', ... 'Z' (zombie), 'X' (dead) */
	long num_threads;	/* a zombie main thread's process may have more */
	char comm[64];		/* between the first '(' and the last ')', cut */
};

/*
 * Reads /proc/<pid>/stat. 0 or -errno (-EIO if it cannot be parsed).
 * Only open, read and close: usable in a fork child before it execs.
 */
int bl_proc_stat(pid_t pid, struct bl_proc_stat *st);
/* Just the start time, or -errno. */
int64_t bl_proc_start_ns(pid_t pid);

#endif /* BLAMER_FORMAT_WHERE_H */
