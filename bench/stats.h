/* SPDX-License-Identifier: MIT */
/*
 * The benchmarks' clock and median, one copy for every program in
 * bench/ (each picks its clock: CPU time where a shared machine's other
 * work would make wall time measure waiting, CLOCK_MONOTONIC inside the
 * guest, where nothing else runs).
 */
#ifndef BLAMER_BENCH_STATS_H
#define BLAMER_BENCH_STATS_H

#include <stdlib.h>
#include <time.h>

static inline double bench_seconds(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int bench_dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts @v. */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_dbl_cmp);
	return v[n / 2];
}

#endif /* BLAMER_BENCH_STATS_H */
