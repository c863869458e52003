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

/*
 * The writer's bucket lookup: bl_hist_index()'s answer for every value,
 * without a loop that branches on the value: fixed bounds by a binary
 * search that compiles to conditional moves, exponential buckets in
 * O(1) from the double's exponent and the top ten bits of its mantissa
 * (a table of which threshold comes first in each 1/1024 of [1, 2): the
 * thresholds 2^(j/2^schema) are more than 1/1024 apart, so at most one
 * lies in a cell, and one comparison settles it). Made once per
 * histogram (bl_hist_fast_init()).
 */
struct bl_hist_fast {
	uint32_t layout, last;	/* BLAMER_HIST_*, nbuckets - 1 */
	const double *bounds;	/* fixed: last of them */
	int32_t schema, k_lo, n;	/* exponential: 2^schema per power of two */
	double lo, hi;		/* 2^min_exp, 2^max_exp */
	double thr[257];	/* schema >= 0: 2^(j/n) for j = 0..n */
	uint16_t cell[1024];	/* schema >= 0: the first j with thr[j] >= 1 + c/1024 */
};
void bl_hist_fast_init(struct bl_hist_fast *f, const struct bl_hist *h);

static inline uint32_t bl_hist_fast_index(const struct bl_hist_fast *f, double v)
{
	uint64_t bits;
	int32_t e, k;

	if (f->layout == BLAMER_HIST_FIXED) {
		const double *base = f->bounds;
		uint32_t len = f->last;

		/* the first bound >= v (lower_bound), none: +Inf */
		while (len > 1) {
			uint32_t half = len / 2;

			base = base[half - 1] < v ? base + half : base;
			len -= half;
		}
		return (uint32_t)(base - f->bounds) + (len && base[0] < v);
	}
	if (!(v > f->lo))
		return 0;
	if (v > f->hi)
		return f->last;
	__builtin_memcpy(&bits, &v, sizeof(bits));
	e = (int32_t)((bits >> 52) & 0x7ff) - 1023;
	if (f->schema >= 0) {
		uint32_t j = f->cell[(bits >> 42) & 1023];
		uint64_t gb = (bits & ((1ull << 52) - 1)) | (1023ull << 52);
		double g;

		__builtin_memcpy(&g, &gb, sizeof(g));
		j += g > f->thr[j];
		k = e * f->n + (int32_t)j;
	} else {
		int32_t sh = -f->schema;

		/* ceil(log2(v) / 2^sh): exact for a power of two, else floor + 1 */
		k = (bits & ((1ull << 52) - 1)) ? (e >> sh) + 1 : -((-e) >> sh);
	}
	k -= f->k_lo;
	return k < 1 ? 1 : (uint32_t)k >= f->last ? f->last - 1 : (uint32_t)k;
}

/* Exact sums: blamer_exact_sum_*() (blamer.h), implemented here. */
#include "blamer.h"
#define BL_FSUM_PARTIALS	BLAMER_EXACT_PARTIALS

#endif /* BLAMER_METRIC_H */
