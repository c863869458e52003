// SPDX-License-Identifier: MIT
/*
 * writer-bench SECONDS: push/pop/path_add as fast as possible on one
 * thread for SECONDS and print "ops_per_sec N". reader-scale runs it alone
 * and while blamer reads its heap in a loop, to show that reading does
 * not slow the writer (the reader takes no lock and writes nothing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "blamer.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const uint32_t units[] = { BLAMER_UNIT_COUNT };
	double secs = argc > 1 ? atof(argv[1]) : 1.0, t0, t;
	uint64_t ids[2] = { blamer_dag_id("bench"), blamer_dag_id("loop") }, ops = 0;
	struct blamer_path *p;
	struct blamer *b;
	int i;

	if (blamer_open(NULL, &b)) {
		fprintf(stderr, "writer-bench: %s\n", blamer_errmsg());
		return 1;
	}
	blamer_dag_node(b, ids[0], 1, "bench");
	blamer_dag_node(b, ids[1], 2, "loop");
	p = blamer_path_get(b, ids, 2, units, 1);
	if (!p)
		return 1;
	printf("ready\n");
	fflush(stdout);
	t0 = now();
	do {
		for (i = 0; i < 10000; i++) {
			blamer_push(b, BLAMER_ACTIVITY_TASK, "outer", 0, 0);
			blamer_push(b, BLAMER_ACTIVITY_TASK, "inner", (uint64_t)i, 0);
			blamer_path_add(p, 0, 1);
			blamer_pop(b);
			blamer_pop(b);
		}
		ops += 10000;
		t = now();
	} while (t - t0 < secs);
	printf("ops_per_sec %.0f\n", (double)ops / (t - t0));
	blamer_close(b);
	return 0;
}
