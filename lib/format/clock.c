// SPDX-License-Identifier: MIT
/*
 * Converting activity timestamps (clock.h): a TSC reading becomes
 * CLOCK_MONOTONIC ns by linear interpolation between the heap's anchor
 * pair and one the reader took after reading the stamp. Using the
 * reader's own pair as the second point needs no calibration from the
 * writer and no writer upkeep: the rate comes from the whole interval,
 * and both ends are exact to within their bracket.
 *
 * Every input is a claim of the heap: nonsense (a reader before the
 * anchor, a rate no TSC has, a stamp far outside the interval) gives 0,
 * "unknown", never undefined arithmetic.
 */
#include "clock.h"

/* TSC rates from 1 MHz to 1 THz, in ns per tick. */
#define MIN_NS_PER_TICK	1e-3
#define MAX_NS_PER_TICK	1e3
/* A stamp is believed from a little before the anchor (TSCs of two CPUs
 * are a few ticks apart) to a while after the reader's pair (activities
 * pushed while the reader went through the heap's other records). */
#define EARLIEST_NS	1e9
#define LATEST_NS	60e9

uint64_t bl_clock_to_ns(const struct bl_clock *heap, const struct bl_clock *now,
			uint64_t stamp)
{
	double ns_per_tick, offset;
	int64_t ticks;

	if (heap->kind == BLAMER_CLOCK_MONOTONIC)
		return stamp;
	if (heap->kind != BLAMER_CLOCK_TSC || !stamp)
		return 0;
	if (now->anchor_tsc <= heap->anchor_tsc || now->anchor_ns <= heap->anchor_ns)
		return 0;	/* another boot or machine, or a bad anchor */
	ns_per_tick = (double)(now->anchor_ns - heap->anchor_ns) /
		      (double)(now->anchor_tsc - heap->anchor_tsc);
	if (!(ns_per_tick >= MIN_NS_PER_TICK && ns_per_tick <= MAX_NS_PER_TICK))
		return 0;
	/* Two's complement difference: a stamp a little before the anchor
	 * (TSCs of two CPUs a few ticks apart) is a small negative offset. */
	ticks = (int64_t)(stamp - heap->anchor_tsc);
	offset = (double)ticks * ns_per_tick;
	if (offset < -EARLIEST_NS ||
	    offset > (double)(now->anchor_ns - heap->anchor_ns) + LATEST_NS)
		return 0;
	if (offset < 0 && (uint64_t)-offset >= heap->anchor_ns)
		return 0;
	return heap->anchor_ns + (uint64_t)(int64_t)offset;
}
