/* SPDX-License-Identifier: MIT */
/*
 * The CLI's one clock for deadlines and intervals (top's refresh, the
 * endpoint's per-request limit, export --interval): CLOCK_MONOTONIC in
 * milliseconds, so a change of the wall clock moves none of them.
 */
#ifndef BLAMER_TOOL_MONO_H
#define BLAMER_TOOL_MONO_H

#include <stdint.h>
#include <time.h>

static inline int64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

#endif /* BLAMER_TOOL_MONO_H */
