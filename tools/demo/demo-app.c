// SPDX-License-Identifier: MIT
/*
 * demo-app: a small multi-process application instrumented with libblamer,
 * for `make demo` and the VM reader tests.
 *
 *   demo-app [--workers N] [--crash I] [--iterations K] [--ready FILE] [--busy]
 *
 * The parent forks N workers and records them as children. Each worker
 * opens its own heap, names its thread, and runs K requests: nested
 * activities (request > parse | render) whose CPU time and bytes are
 * attributed to DAG paths app/worker-I/parse|render, with per-request
 * user data and log lines. Worker I == --crash dereferences NULL in the
 * middle of a render (SIGSEGV). The others then wait, idle, in an
 * "idle-wait" activity. When every worker is done (or dead) the parent
 * writes "PARENT W1 W2 ..." to --ready FILE and waits for SIGTERM, which
 * it passes on to the workers before exiting cleanly. With --busy the
 * workers keep serving requests until SIGTERM instead of idling (tests
 * read their heaps while they change).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "blamer.h"

static volatile sig_atomic_t stop;
static int busy;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Busy work whose cost is measured and attributed. */
static uint64_t burn(unsigned rounds)
{
	volatile uint64_t x = 1;
	unsigned i;

	for (i = 0; i < rounds * 10000u; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static void die(const char *what)
{
	fprintf(stderr, "demo-app: %s: %s\n", what, blamer_errmsg());
	exit(1);
}

static int worker(int idx, int crash, int iterations, int done_fd)
{
	static const uint32_t units[] = { BLAMER_UNIT_CPU_NS, BLAMER_UNIT_BYTES };
	struct blamer *b;
	struct blamer_path *parse, *render;
	uint64_t app = blamer_dag_id("app"), me, p_id = blamer_dag_id("parse"),
		 r_id = blamer_dag_id("render");
	uint64_t ids[3];
	char name[32];
	int it;

	if (blamer_open(NULL, &b))
		die("worker: blamer_open");
	snprintf(name, sizeof(name), "worker-%d", idx);
	me = blamer_dag_id(name);
	blamer_thread_set_name(b, name);
	blamer_set_phase(b, BLAMER_PHASE_LAUNCHED);
	blamer_set_string(b, BLAMER_DATA_PROCESS, "role", "worker");
	blamer_set_int(b, BLAMER_DATA_PROCESS, "index", idx);
	blamer_dag_node(b, app, 1, "app");
	blamer_dag_node(b, me, 2, name);
	blamer_dag_node(b, p_id, 3, "parse");
	blamer_dag_node(b, r_id, 3, "render");
	blamer_dag_link(b, app, me);
	blamer_dag_link(b, me, p_id);
	blamer_dag_link(b, me, r_id);
	ids[0] = app;
	ids[1] = me;
	ids[2] = p_id;
	parse = blamer_path_get(b, ids, 3, units, 2);
	ids[2] = r_id;
	render = blamer_path_get(b, ids, 3, units, 2);
	if (!parse || !render)
		die("worker: blamer_path_get");
	blamer_set_phase(b, BLAMER_PHASE_MAIN_LOOP);
	blamer_log(b, "%s started", name);
	for (it = 0; it < iterations || (busy && !stop); it++) {
		struct blamer_value *served;
		uint64_t t0;

		blamer_push(b, BLAMER_ACTIVITY_TASK, "request", (uint64_t)it, 0);
		blamer_set_int(b, BLAMER_DATA_ACTIVITY, "request_id", 1000 * idx + it);
		blamer_push(b, BLAMER_ACTIVITY_TASK, "parse", 0, 0);
		t0 = cpu_ns();
		burn(20 + 10 * (unsigned)idx);
		blamer_path_add(parse, 0, cpu_ns() - t0);
		blamer_path_add(parse, 1, 512u * (unsigned)(idx + 1));
		blamer_pop(b);
		blamer_push(b, BLAMER_ACTIVITY_TASK, "render", 0, 0);
		t0 = cpu_ns();
		burn(40);
		blamer_path_add(render, 0, cpu_ns() - t0);
		blamer_path_add(render, 1, 4096);
		if (idx == crash && it == iterations / 2) {
			blamer_log(b, "%s: rendering request %d with a bad pointer", name, it);
			*(volatile int *)(uintptr_t)0 = 1;	/* SIGSEGV, on purpose */
		}
		blamer_pop(b);
		blamer_pop(b);
		served = blamer_set_uint(b, BLAMER_DATA_PROCESS, "requests_served", 0);
		blamer_value_uint(served, (uint64_t)it + 1);
		if (busy && it == iterations - 1 && write(done_fd, "d", 1) != 1)
			return 1;
	}
	blamer_log(b, "%s finished %d requests", name, iterations);
	blamer_push(b, BLAMER_ACTIVITY_EVENT_WAIT, "idle-wait", 0, 0);
	if (!busy && write(done_fd, "d", 1) != 1)
		return 1;
	while (!stop)
		pause();
	blamer_pop(b);
	blamer_set_phase(b, BLAMER_PHASE_SHUTTING_DOWN);
	blamer_log(b, "%s stopping on SIGTERM", name);
	blamer_close(b);
	return 0;
}

int main(int argc, char **argv)
{
	int workers = 3, crash = -1, iterations = 20, i, fds[2], done = 0, alive;
	const char *ready = NULL;
	pid_t pids[16];
	struct blamer *b;
	struct sigaction sa;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--workers") && i + 1 < argc)
			workers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--crash") && i + 1 < argc)
			crash = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
			iterations = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--ready") && i + 1 < argc)
			ready = argv[++i];
		else if (!strcmp(argv[i], "--busy"))
			busy = 1;
		else {
			fprintf(stderr, "usage: demo-app [--workers N] [--crash I] [--iterations K] [--ready FILE] [--busy]\n");
			return 2;
		}
	}
	if (workers < 1 || workers > 16 || iterations < 2) {
		fprintf(stderr, "demo-app: 1..16 workers and at least 2 iterations\n");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (pipe(fds))
		return 1;
	if (blamer_open(NULL, &b))
		die("blamer_open");
	blamer_thread_set_name(b, "supervisor");
	blamer_set_phase(b, BLAMER_PHASE_LAUNCHED);
	blamer_dag_node(b, blamer_dag_id("app"), 1, "app");
	blamer_set_int(b, BLAMER_DATA_PROCESS, "workers", workers);
	blamer_log(b, "supervisor starting %d workers", workers);
	for (i = 0; i < workers; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork");
		if (pids[i] == 0) {
			close(fds[0]);
			_exit(worker(i, crash, iterations, fds[1]));
		}
		blamer_process_launched(b, pids[i]);
	}
	close(fds[1]);
	blamer_set_phase(b, BLAMER_PHASE_MAIN_LOOP);
	blamer_push(b, BLAMER_ACTIVITY_PROCESS_WAIT, "wait-workers", 0, 0);
	/* done when every worker reported or died */
	for (alive = workers; done + (workers - alive) < workers;) {
		char c;
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p > 0) {
			blamer_process_exited(b, p, st);
			blamer_log(b, "worker pid %d ended (status %#x)", (int)p, st);
			alive--;
			continue;
		}
		if (crash >= 0 && crash < workers && done == workers - 1 && alive == workers) {
			usleep(10000);	/* the crasher has not been reaped yet */
			continue;
		}
		if (read(fds[0], &c, 1) == 1)
			done++;
		else if (errno != EINTR)
			break;
	}
	blamer_pop(b);
	if (ready) {
		FILE *f = fopen(ready, "w");

		if (f) {
			fprintf(f, "%d", (int)getpid());
			for (i = 0; i < workers; i++)
				fprintf(f, " %d", (int)pids[i]);
			fputc('\n', f);
			fclose(f);
		}
	}
	blamer_push(b, BLAMER_ACTIVITY_EVENT_WAIT, "serve", 0, 0);
	while (!stop)
		pause();
	blamer_pop(b);
	blamer_set_phase(b, BLAMER_PHASE_SHUTTING_DOWN);
	for (i = 0; i < workers; i++)
		kill(pids[i], SIGTERM);
	for (;;) {
		int st;
		pid_t p = wait(&st);

		if (p < 0)
			break;
		blamer_process_exited(b, p, st);
	}
	blamer_close(b);
	return 0;
}
