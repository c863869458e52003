/* SPDX-License-Identifier: MIT */
/*
 * Activity timestamps. An activity push reads a clock, and on x86 the
 * vDSO's CLOCK_MONOTONIC is a TSC read plus a seqlock loop and a scaling:
 * about twice the cost of the TSC read alone. Where the kernel itself
 * trusts the TSC (it is its clocksource: invariant and synchronised
 * across CPUs), a heap stores raw TSC readings plus one anchor pair
 * (TSC, CLOCK_MONOTONIC) taken at heap creation, and the reader converts
 * (heap_format.h, BLAMER_CLOCK_*). Elsewhere timestamps stay
 * CLOCK_MONOTONIC nanoseconds. Shared by the writer and the reader;
 * which clock a writer uses is its choice (writer/clock_choose.c).
 */
#ifndef BLAMER_CLOCK_H
#define BLAMER_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "heap_format.h"

#if defined(__x86_64__) || defined(__i386__)
#define BL_HAVE_TSC 1
static inline uint64_t bl_tsc(void)
{
	/* Not serialising (no lfence): a timestamp may be taken a few
	 * instructions early or late, which no reader can tell. */
	return __builtin_ia32_rdtsc();
}
#else
#define BL_HAVE_TSC 0
static inline uint64_t bl_tsc(void)
{
	return 0;
}
#endif

/* A time in nanoseconds (modulo 2^64: a time before 1970 wraps). */
static inline uint64_t bl_ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* Clock @clk now, in nanoseconds. */
static inline uint64_t bl_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return bl_ts_ns(&ts);
}

/* CLOCK_MONOTONIC through the vDSO (no system call). */
static inline uint64_t bl_monotonic_ns(void)
{
	return bl_clock_ns(CLOCK_MONOTONIC);
}

/* What a heap's activity timestamps are. */
struct bl_clock {
	uint32_t kind;		/* BLAMER_CLOCK_* */
	uint64_t anchor_tsc;	/* TSC: a reading ... */
	uint64_t anchor_ns;	/* ... and CLOCK_MONOTONIC at the same instant */
};

/*
 * A (TSC, CLOCK_MONOTONIC) pair taken as close together as this machine
 * allows: the TSC read bracketed by two clock reads, the tightest of a
 * few tries, the clock taken as the midpoint. Its error is half the
 * bracket, tens of nanoseconds.
 */
static inline void bl_clock_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	int i;

	for (i = 0; i < 5; i++) {
		uint64_t t0 = bl_monotonic_ns();
		uint64_t c = bl_tsc();
		uint64_t t1 = bl_monotonic_ns();

		if (t1 - t0 < best) {
			best = t1 - t0;
			*tsc = c;
			*ns = t0 + (t1 - t0) / 2;
		}
	}
}

/* @c in clock @kind as of now: for the TSC, a fresh anchor pair (a new
 * heap's, or a reader's second point). */
static inline void bl_clock_start(struct bl_clock *c, uint32_t kind)
{
	c->kind = kind;
	c->anchor_tsc = c->anchor_ns = 0;
	if (kind == BLAMER_CLOCK_TSC)
		bl_clock_pair(&c->anchor_tsc, &c->anchor_ns);
}

/*
 * clock.c: @stamp, a reading of the heap clock @heap, as CLOCK_MONOTONIC
 * ns, interpolated between the heap's anchor and @now, a pair the reader
 * took after reading the stamp (the rule of heap-format.rst, "Activity
 * clock"). 0 if it cannot be converted (unknown clock, anchors that do
 * not make sense, a reader on another machine).
 */
uint64_t bl_clock_to_ns(const struct bl_clock *heap, const struct bl_clock *now,
			uint64_t stamp);

#endif /* BLAMER_CLOCK_H */
