// SPDX-License-Identifier: MIT
/*
 * prefork_bench: what a pre-fork server pays, for the before/after
 * comparison of bench/prefork-compare (Documentation/performance.rst,
 * "Fork"). Only the public API, so that the same source builds against
 * an older library.
 *
 * Prints "name ns" lines, medians of interleaved rounds:
 *   clock              clock_gettime(CLOCK_MONOTONIC), the machine's yardstick
 *   push_pop           blamer_push() + blamer_pop(), a 5-byte label
 *   push_pop_route     the same with a 20-byte label ("GET /static/logo.png")
 *   path_add           blamer_path_add() on a path handle (the shard hit)
 *   value_add          blamer_value_add() on a PROCESS handle
 *   fork_plain         fork() + the child's _exit(0) + waitpid(), no context open
 *   fork_ctx           the same with a context open, handles made, an activity pushed
 *   fork_ctx_write     fork_ctx and the child's first push (its heap made then)
 *
 * Dir backend in a private directory unless BLAMER_BACKEND says otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blamer.h>

#define REPS	9

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct ctx {
	struct blamer *b;
	struct blamer_path *p;
	struct blamer_value *v;
};

typedef void (*op_fn)(long n, struct ctx *c);

static void op_clock(long n, struct ctx *c)
{
	struct timespec ts;
	long i;

	(void)c;
	for (i = 0; i < n; i++)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	__asm__ volatile("" : : "r"(&ts) : "memory");
}

static void op_push_pop(long n, struct ctx *c)
{
	long i;

	for (i = 0; i < n; i++) {
		blamer_push(c->b, BLAMER_ACTIVITY_TASK, "bench", (uint64_t)i, 0);
		blamer_pop(c->b);
	}
}

static void op_push_pop_route(long n, struct ctx *c)
{
	long i;

	for (i = 0; i < n; i++) {
		blamer_push(c->b, BLAMER_ACTIVITY_TASK, "GET /static/logo.png", (uint64_t)i, 0);
		blamer_pop(c->b);
	}
}

static void op_path_add(long n, struct ctx *c)
{
	long i;

	for (i = 0; i < n; i++)
		blamer_path_add(c->p, 0, 1);
}

static void op_value_add(long n, struct ctx *c)
{
	long i;

	for (i = 0; i < n; i++)
		blamer_value_add(c->v, 1);
}

static void forks(long n, struct ctx *c, int write)
{
	long i;

	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			if (write)
				blamer_push(c->b, BLAMER_ACTIVITY_TASK, "child", 0, 0);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
}

static void op_fork(long n, struct ctx *c)
{
	forks(n, c, 0);
}

static void op_fork_write(long n, struct ctx *c)
{
	forks(n, c, 1);
}

static double run(op_fn fn, struct ctx *c, long n)
{
	double t0;

	t0 = now_ns();
	fn(n, c);
	return (now_ns() - t0) / n;
}

static int open_ctx(struct ctx *c)
{
	uint64_t ids[2] = { blamer_dag_id("bench"), blamer_dag_id("route") };
	uint32_t units[1] = { BLAMER_UNIT_COUNT };

	if (blamer_open(NULL, &c->b))
		return -1;
	c->p = blamer_path_get(c->b, ids, 2, units, 1);
	c->v = blamer_set_uint(c->b, BLAMER_DATA_PROCESS, "served", 0);
	blamer_push(c->b, BLAMER_ACTIVITY_TASK, "main loop", 0, 0);
	return c->p && c->v ? 0 : -1;
}

int main(void)
{
	static const struct {
		const char *name;
		op_fn fn;
		long n;
	} hot[] = {
		{ "clock", op_clock, 2000000 },
		{ "push_pop", op_push_pop, 2000000 },
		{ "push_pop_route", op_push_pop_route, 2000000 },
		{ "path_add", op_path_add, 10000000 },
		{ "value_add", op_value_add, 10000000 },
	};
	enum { NHOT = sizeof(hot) / sizeof(hot[0]) };
	double v[NHOT][REPS], fp[REPS], fc[REPS], fw[REPS];
	char dir[] = "/tmp/prefork-bench.XXXXXX";
	struct ctx c = { 0 };
	int r, i;

	if (!getenv("BLAMER_BACKEND")) {
		if (!mkdtemp(dir))
			return 1;
		setenv("BLAMER_DIR", dir, 1);
		setenv("BLAMER_BACKEND", "dir", 1);
	}
	if (open_ctx(&c)) {
		fprintf(stderr, "prefork_bench: %s\n", blamer_errmsg());
		return 1;
	}
	for (i = 0; i < NHOT; i++)
		hot[i].fn(hot[i].n / 10, &c);	/* warm */
	for (r = 0; r < REPS; r++)
		for (i = 0; i < NHOT; i++)
			v[i][r] = run(hot[i].fn, &c, hot[i].n);
	for (r = 0; r < REPS; r++) {
		fc[r] = run(op_fork, &c, 200);
		fw[r] = run(op_fork_write, &c, 200);
		blamer_close(c.b);
		c.b = NULL;
		fp[r] = run(op_fork, &c, 200);
		if (open_ctx(&c))
			return 1;
	}
	for (i = 0; i < NHOT; i++) {
		qsort(v[i], REPS, sizeof(double), cmp_double);
		printf("%s %.2f\n", hot[i].name, v[i][REPS / 2]);
	}
	qsort(fp, REPS, sizeof(double), cmp_double);
	qsort(fc, REPS, sizeof(double), cmp_double);
	qsort(fw, REPS, sizeof(double), cmp_double);
	printf("fork_plain %.0f\nfork_ctx %.0f\nfork_ctx_write %.0f\n", fp[REPS / 2], fc[REPS / 2],
	       fw[REPS / 2]);
	blamer_close(c.b);
	if (dir[sizeof(dir) - 7] != 'X') {
		char cmd[64];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			return 1;
	}
	return 0;
}
