/* SPDX-License-Identifier: MIT */
/* Writer internals shared by the sources in lib/writer/. Not public. */
#ifndef BLAMER_WRITER_H
#define BLAMER_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Stores a one-line message (with strerror(err) appended if err) and returns -err. */
int bl_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The errno of the calling thread's last bl_error() (EIO if none). */
int bl_last_error(void);

/* Clocks: glibc routes CLOCK_MONOTONIC/REALTIME through the vDSO (no
 * system call); bl_monotonic_ns() is in clock.h. */
#include <time.h>
#include "clock.h"
#include "proc.h"
#include "where.h"

static inline uint64_t bl_realtime_ns(void)
{
	return bl_clock_ns(CLOCK_REALTIME);
}

/*
 * clock_choose.c: the clock new heaps of a context use. @env is
 * $BLAMER_CLOCK (NULL or "auto": the TSC where the kernel's clocksource
 * is the TSC; "tsc": the TSC if the CPU has an invariant one, else an
 * error; "monotonic": never the TSC). 0 and *@kind set, or -EINVAL with
 * a message.
 */
int bl_clock_choose(const char *env, uint32_t *kind);

/* retention.c: the dead heaps a directory keeps, and removing a heap's
 * files (heap-format.rst, "Retention"). */
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
 * One step of the retention of @dirfd's dead heaps (retention.c's
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
/* sys.c */
uint64_t bl_random64(void);
pid_t bl_gettid(void);

#endif /* BLAMER_WRITER_H */
