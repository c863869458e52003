// SPDX-License-Identifier: MIT
/*
 * hello-blamer: the writer API in one small program.
 *
 *   cc -o hello-blamer hello-blamer.c $(pkg-config --cflags --libs blamer)
 *   ./hello-blamer            # then, while it sleeps: blamer top / blamer dump
 *
 * It describes itself (phase, version, a request counter), works through
 * a few "requests" as activities with per-activity data, attributes their
 * CPU time to a path of the attribution DAG, and starts one child process
 * the way a parent should (launched / exited).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blamer.h>

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	uint64_t path_ids[2] = { blamer_dag_id("hello"), blamer_dag_id("hello/requests") };
	uint32_t units[2] = { BLAMER_UNIT_CPU_NS, BLAMER_UNIT_COUNT };
	struct blamer_value *served;
	struct blamer_path *path;
	int i, status, seconds = argc > 1 ? atoi(argv[1]) : 2;
	pid_t child;

	/* The process-default context (NULL everywhere): device if
	 * /dev/blamer opens, else files in /dev/shm/blamer-<uid>/. */
	if (blamer_init(NULL)) {
		fprintf(stderr, "hello-blamer: %s\n", blamer_errmsg());
		return 1;
	}
	blamer_set_string(NULL, BLAMER_DATA_GLOBAL, "version", "1.0.0");
	served = blamer_set_uint(NULL, BLAMER_DATA_PROCESS, "requests_served", 0);
	blamer_thread_set_name(NULL, "main");

	/* The attribution DAG: hello -> hello/requests, and a path with two
	 * measurements (CPU time and a count). */
	blamer_dag_node(NULL, path_ids[0], 1, "hello");
	blamer_dag_node(NULL, path_ids[1], 2, "hello/requests");
	blamer_dag_link(NULL, path_ids[0], path_ids[1]);
	path = blamer_path_get(NULL, path_ids, 2, units, 2);

	blamer_set_phase(NULL, BLAMER_PHASE_MAIN_LOOP);
	for (i = 0; i < 5; i++) {
		uint64_t t0 = cpu_ns();

		blamer_push(NULL, BLAMER_ACTIVITY_TASK, "request", i, 0);
		blamer_set_int(NULL, BLAMER_DATA_ACTIVITY, "request_id", 1000 + i);
		blamer_set_string(NULL, BLAMER_DATA_ACTIVITY, "url", "/index.html");
		usleep(200000 * seconds / 2);	/* "work": visible in blamer top */
		blamer_pop(NULL);
		blamer_value_add(served, 1);
		blamer_path_add(path, 0, cpu_ns() - t0);
		blamer_path_add(path, 1, 1);
		blamer_log(NULL, "served request %d", i);
	}

	child = fork();
	if (child == 0) {
		/* The child gets a heap of its own on first use. */
		blamer_push(NULL, BLAMER_ACTIVITY_TASK, "child-work", 0, 0);
		usleep(100000);
		_exit(0);
	}
	if (child > 0) {
		blamer_process_launched(NULL, child);
		blamer_push(NULL, BLAMER_ACTIVITY_PROCESS_WAIT, "waitpid", (uint64_t)child, 0);
		waitpid(child, &status, 0);
		blamer_pop(NULL);
		blamer_process_exited(NULL, child, status);
	}
	blamer_set_phase(NULL, BLAMER_PHASE_SHUTTING_DOWN);
	blamer_reset();	/* a clean exit: marks the heap deleted */
	return 0;
}
