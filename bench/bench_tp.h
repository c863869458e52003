/* SPDX-License-Identifier: MIT */
/*
 * A tiny LTTng-UST tracepoint provider for bench/: an "enter" and an
 * "exit" event, carrying what an activity push carries (two words of
 * data and a label), to compare a tracepoint pair with push + pop.
 */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER blamer_bench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./bench_tp.h"

#if !defined(BLAMER_BENCH_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define BLAMER_BENCH_TP_H

#include <lttng/tracepoint.h>

TRACEPOINT_EVENT(blamer_bench, enter,
	TP_ARGS(uint64_t, d0, uint64_t, d1, const char *, label),
	TP_FIELDS(
		ctf_integer(uint64_t, d0, d0)
		ctf_integer(uint64_t, d1, d1)
		ctf_string(label, label)
	)
)

TRACEPOINT_EVENT(blamer_bench, exit,
	TP_ARGS(int, depth),
	TP_FIELDS(
		ctf_integer(int, depth, depth)
	)
)

#endif /* BLAMER_BENCH_TP_H */

#include <lttng/tracepoint-event.h>
