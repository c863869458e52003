/* SPDX-License-Identifier: MIT */
/* Writer internals shared by the sources in lib/writer/. Not public. */
#ifndef BLAMER_WRITER_H
#define BLAMER_WRITER_H

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

/* sys.c */
uint64_t bl_random64(void);
pid_t bl_gettid(void);

#endif /* BLAMER_WRITER_H */
