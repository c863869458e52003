// SPDX-License-Identifier: MIT
/*
 * prom-worker READY: one worker of the small instrumented application
 * the prometheus-server suite runs. Through the real library (the dir
 * backend, as $BLAMER_BACKEND/$BLAMER_DIR say) it names two units,
 * "requests" (a count) and "handling" (seconds), and every 20 ms serves
 * one "request" on path /app/request: +1 request, +1 ms of handling,
 * +512 bytes. It creates READY once its heap and path exist, and runs
 * until SIGTERM (a clean exit: its heap goes) or SIGKILL (its heap stays,
 * dead, with its last values).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "blamer.h"

#define UNIT_REQUESTS	(BLAMER_UNIT_APP_BASE + 7)
#define UNIT_HANDLING	(BLAMER_UNIT_APP_BASE + 8)

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int fail(const char *what)
{
	fprintf(stderr, "prom-worker: %s: %s\n", what, blamer_errmsg());
	return 1;
}

int main(int argc, char **argv)
{
	const uint32_t units[] = { UNIT_REQUESTS, UNIT_HANDLING, BLAMER_UNIT_BYTES };
	const struct timespec tick = { 0, 20 * 1000 * 1000 };
	uint64_t ids[2] = { blamer_dag_id("app"), blamer_dag_id("request") };
	struct blamer_path *p;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: prom-worker READY_FILE\n");
		return 2;
	}
	signal(SIGTERM, on_term);
	if (blamer_dag_node(NULL, ids[0], 0, "app") || blamer_dag_node(NULL, ids[1], 0, "request") ||
	    blamer_dag_link(NULL, ids[0], ids[1]))
		return fail("dag");
	if (blamer_dag_unit(NULL, UNIT_REQUESTS, "requests", BLAMER_BASE_NONE) ||
	    blamer_dag_unit(NULL, UNIT_HANDLING, "handling", BLAMER_BASE_SECONDS))
		return fail("unit");
	/* naming a unit again the same way is fine, another way is not */
	if (blamer_dag_unit(NULL, UNIT_REQUESTS, "requests", BLAMER_BASE_NONE) ||
	    blamer_dag_unit(NULL, UNIT_REQUESTS, "other", BLAMER_BASE_NONE) != -EEXIST)
		return fail("unit again");
	p = blamer_path_get(NULL, ids, 2, units, 3);
	if (!p)
		return fail("path");
	f = fopen(argv[1], "w");
	if (!f || fclose(f))
		return 1;
	while (!stop) {
		blamer_path_add(p, 0, 1);
		blamer_path_add(p, 1, 1000 * 1000);
		blamer_path_add(p, 2, 512);
		nanosleep(&tick, NULL);
	}
	blamer_close(blamer_default());
	return 0;
}
