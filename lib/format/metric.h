/* SPDX-License-Identifier: MIT */
/*
 * What the writer and the reader agree on about metrics beyond the bytes
 * (heap_format.h): which names and labels are valid, where a histogram's
 * buckets end (both sides must put a value in the same bucket the reader
 * says it ends at), and how doubles are summed exactly.
 *
 * Exact sums: a counter is a double per thread shard, and a reader adds
 * the shards of many processes, then a long-lived exporter moves a dead
 * process's part into a remainder. Floating-point addition is not
 * associative, so adding the same numbers in another order (a fold moves
 * one out of the live sum into the remainder) can give a result one unit
 * in the last place lower: Prometheus reads that as a counter reset and
 * rate() counts the whole counter again. So every sum of doubles here is
 * exact: a list of non-overlapping partials whose sum is exactly the sum
 * of the numbers added (Shewchuk's algorithm, as Python's math.fsum),
 * rounded once, correctly. Correct rounding is monotonic: a sum of
 * numbers that each only grow never shows a lower value, whatever the
 * order they were added in.
 */
#ifndef BLAMER_METRIC_H
#define BLAMER_METRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A name as the format allows: [a-zA-Z_:][a-zA-Z0-9_:]* of 1..max bytes
 * (metric names; with @colon false, label names: no ':'). */
bool bl_metric_name_ok(const char *s, size_t max, bool colon);
/* A label name the exporter writes itself (le, quantile, pid, uid, ...),
 * or one starting with "__" (Prometheus' own), so an application's may
 * not be it; path only if the series has a DAG path. */
bool bl_label_reserved(const char *name, bool path);

/* A histogram's buckets (from a METRIC_DEF), for bl_hist_*(). */
struct bl_hist {
	uint32_t layout;	/* BLAMER_HIST_FIXED or _EXPONENTIAL */
	uint32_t nbuckets;	/* +Inf included */
	int32_t schema, min_exp, max_exp;
	const double *bounds;	/* fixed: nbuckets - 1, ascending, finite */
};

/* Buckets of an exponential layout (the one below the window and +Inf
 * included), or 0 if the layout is not one the format allows. */
uint32_t bl_hist_exp_buckets(int32_t schema, int32_t min_exp, int32_t max_exp);
/* @h is a layout the format allows (bounds ascending and finite, counts
 * in range, the exponential window consistent with nbuckets). */
bool bl_hist_ok(const struct bl_hist *h);
/* The upper bound ("le") of bucket @i: +Inf for the last. */
double bl_hist_upper(const struct bl_hist *h, uint32_t i);
/* The bucket of @v (not NaN): the first whose upper bound is >= v. */
uint32_t bl_hist_index(const struct bl_hist *h, double v);

/* Exact sums: blamer_exact_sum_*() (blamer.h), implemented here. */
#include "blamer.h"
#define BL_FSUM_PARTIALS	BLAMER_EXACT_PARTIALS

#endif /* BLAMER_METRIC_H */
