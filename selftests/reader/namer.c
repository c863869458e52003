// SPDX-License-Identifier: MIT
/*
 * A writer that names things as it likes, for vm-test.sh's check that no
 * user's heap names or scales another user's numbers:
 *   namer NODE NAME UNIT UNITNAME BASE READY
 * names node blamer_dag_id(NODE) NAME, node blamer_dag_id("namer") namer,
 * and application unit UNIT UNITNAME with BASE (none, seconds or bytes);
 * a NAME or UNITNAME of "-" names nothing (paths need no names). It
 * adds 1500000000 in UNIT and 7 to a counter "namer_events" on the path
 * /namer/NODE, writes its pid to the file READY, then waits to be
 * killed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blamer.h"

static void die(const char *what)
{
	fprintf(stderr, "namer: %s: %s\n", what, blamer_errmsg());
	exit(1);
}

int main(int argc, char **argv)
{
	struct blamer_metric_def def = { .name = "namer_events", .kind = BLAMER_METRIC_COUNTER };
	struct blamer_series *events;
	struct blamer_metric *m;
	struct blamer_path *p;
	struct blamer *b;
	uint32_t unit, base;
	uint64_t path[2] = { blamer_dag_id("namer") };
	FILE *f;

	if (argc != 7) {
		fprintf(stderr, "usage: namer NODE NAME UNIT UNITNAME none|seconds|bytes READY\n");
		return 2;
	}
	unit = (uint32_t)strtoul(argv[3], NULL, 10);
	base = !strcmp(argv[5], "seconds") ? BLAMER_BASE_SECONDS :
	       !strcmp(argv[5], "bytes") ? BLAMER_BASE_BYTES : BLAMER_BASE_NONE;
	path[1] = blamer_dag_id(argv[1]);
	if (blamer_open(NULL, &b))
		die("blamer_open");
	if (blamer_dag_node(b, path[0], 1, "namer") ||
	    (strcmp(argv[2], "-") && blamer_dag_node(b, path[1], 2, argv[2])) ||
	    (strcmp(argv[4], "-") && blamer_dag_unit(b, unit, argv[4], base)))
		die("naming");
	p = blamer_path_get(b, path, 2, &unit, 1);
	m = blamer_metric_define(b, &def);
	events = m ? blamer_metric_series(m, NULL, path, 2) : NULL;
	if (!p || !events)
		die("path or series");
	blamer_path_add(p, 0, 1500000000);
	blamer_counter_add(events, 7);
	f = fopen(argv[6], "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		die("ready file");
	for (;;)
		pause();
}
