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
 *    nothing else; each later dir heap of one process image (a second
 *    context's, or one made after it abandoned, or closed and kept, an
 *    earlier one), counted over all its directories, is
 *    "<pid>-<start_ns>-<seq>.<index>.slab", seq 1, 2, ...: a heap is
 *    never named as one its own image made before (writer/context.c);
 *  - files: a slab file is regular, owned by us, has one link and is
 *    writable by nobody else (anything else was planted);
 *  - start time: field 22 of /proc/<pid>/stat, clock ticks since boot,
 *    scaled to ns (ticks * (10^9 / CLK_TCK)); with the pid it names a
 *    process across pid reuse (read by lib/sys/proc.c);
 *  - dead heaps: writers delete them beyond a limit (the writer's
 *    retention policy, lib/writer/retention.c) and keep their state in
 *    the file BL_TRIM_STATE, which readers pass over; a heap whose first
 *    file has lost its write bits was found dead (its ctime: when).
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

/* The directory to use, into @buf: @dir if given, else $BLAMER_DIR, else
 * /dev/shm/blamer-<euid>. 0, or -ENAMETOOLONG (and @buf "") if the name
 * does not fit in @len: never a part of it. */
int bl_slabdir_path(char *buf, size_t len, const char *dir);

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

/* The name of slab @index of heap @seq of <pid>-<start_ns> (seq 0: the
 * image's first there, no seq in the name); snprintf's return. */
int bl_slab_name(char *buf, size_t len, int64_t pid, uint64_t start_ns, uint32_t seq,
		 uint32_t index);

/* Parses a slab file name: false for anything but the exact, canonical
 * form bl_slab_name() writes (no leading zeros, no sign, no seq 0 written
 * out), a pid of 0 or above INT32_MAX, a seq above UINT32_MAX, or an
 * index of BLAMER_MAX_SLABS or more. */
bool bl_slab_name_parse(const char *name, int32_t *pid, uint64_t *start_ns, uint32_t *seq,
			uint32_t *index);

/*
 * A dir heap's key (blamer_snap_process.heap_key): its pid, start time
 * and seq mixed, the same as before seqs for seq 0. Two heaps of one
 * process have two keys, and the seq comes back from the key, given the
 * pid and start time (bl_dir_heap_seq(): false if @key is no such
 * key): what blamer_reader_release() names the files by.
 */
static inline uint64_t bl_dir_heap_key(int32_t pid, uint64_t start_ns, uint32_t seq)
{
	return ((uint64_t)(uint32_t)pid << 32 ^ start_ns) ^ (uint64_t)seq << 32;
}

static inline bool bl_dir_heap_seq(uint64_t key, int32_t pid, uint64_t start_ns, uint32_t *seq)
{
	uint64_t x = key ^ bl_dir_heap_key(pid, start_ns, 0);

	*seq = (uint32_t)(x >> 32);
	return !(uint32_t)x;
}

/* Why a file (lstat/fstat of it, not following) is not one the library
 * could have made for @owner: a symlink, not regular, another owner,
 * more than one link, writable by group or others. NULL if it is one. */
const char *bl_slab_file_why(const struct stat *st, uid_t owner);
/* A file the library could have made: bl_slab_file_why(st, geteuid())
 * is NULL. */
bool bl_slab_file_ok(const struct stat *st);

/* The file in a heap directory where the writers' retention keeps its
 * state (a name no slab file has; readers pass over it). */
#define BL_TRIM_STATE	".blamer-trim"

#endif /* BLAMER_FORMAT_WHERE_H */
