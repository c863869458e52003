// SPDX-License-Identifier: MIT
/*
 * blamer benchmarks: the median cost of each writer operation and its
 * ratio to baselines measured in the same run (clock_gettime, a Unix
 * datagram socket, an LTTng-UST tracepoint pair, glibc malloc).
 *
 *   bench [--quick] [--lttng-only | --metrics | --hot]
 *
 * --hot runs each metric write and its baseline HOT_CALLS times in a row,
 * untimed and silent, for bench/hot-model (which traces one call of each
 * under gdb and feeds the instructions to llvm-mca).
 *
 * Every figure is the median of REPS runs of ITERS operations each (the
 * loop overhead is included and is the same for every operation). The
 * PASS/FAIL marks compare against the targets in
 * Documentation/performance.rst; they are information, the benchmark
 * always exits 0 unless it cannot run.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "blamer.h"
#include "writer/internal.h"

#ifdef BENCH_LTTNG
#include "bench_tp.h"
#endif

#define REPS 11

static volatile uint64_t sink;
static int quick;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

typedef void (*op_fn)(uint64_t iters, void *arg);

/* Median ns per operation over REPS runs (after one warm-up run). */
static double measure(op_fn fn, void *arg, uint64_t iters)
{
	double v[REPS];
	int r;

	if (quick)
		iters /= 10;
	fn(iters / 10 + 1, arg);
	for (r = 0; r < REPS; r++) {
		double t0 = now_ns();

		fn(iters, arg);
		v[r] = (now_ns() - t0) / iters;
	}
	qsort(v, REPS, sizeof(v[0]), cmp_double);
	return v[REPS / 2];
}

/* ---- operations ---- */

/*
 * A and B run alternately, REPS times each, so that both see the same
 * machine (this matters on a shared VM whose load changes by the
 * second). *a and *b get the medians, the result is the median of the
 * per-round ratios B/A.
 */
static double compare(op_fn fa, void *aa, uint64_t na, op_fn fb, void *ab, uint64_t nb,
		      double *a, double *b)
{
	double va[REPS], vb[REPS], ratio[REPS];
	int r;

	if (quick) {
		na /= 10;
		nb /= 10;
	}
	fa(na / 10 + 1, aa);
	fb(nb / 10 + 1, ab);
	for (r = 0; r < REPS; r++) {
		double t0 = now_ns();

		fa(na, aa);
		va[r] = (now_ns() - t0) / na;
		t0 = now_ns();
		fb(nb, ab);
		vb[r] = (now_ns() - t0) / nb;
		ratio[r] = vb[r] / va[r];
	}
	qsort(va, REPS, sizeof(va[0]), cmp_double);
	qsort(vb, REPS, sizeof(vb[0]), cmp_double);
	qsort(ratio, REPS, sizeof(ratio[0]), cmp_double);
	*a = va[REPS / 2];
	*b = vb[REPS / 2];
	return ratio[REPS / 2];
}

/*
 * The metric rows: @fb against @fa in ROUNDS short rounds, each timing
 * @fa, then @fb, then @fa again, the ratio taken against the mean of the
 * two @fa runs around it. A round is a few milliseconds, so a change in
 * the machine's speed (another tenant, the clock) mostly falls between
 * rounds instead of between the two sides of one, as it can in
 * compare()'s rounds of 20 million; and the median of 101 ratios is
 * steadier than that of 11. *@a and *@b: the median ns of each.
 */
#define ROUNDS 101

static double compare_rounds(op_fn fa, void *aa, op_fn fb, void *ab, uint64_t n, double *a,
			     double *b)
{
	static double va[ROUNDS], vb[ROUNDS], ratio[ROUNDS];
	int r;

	if (quick)
		n /= 10;
	fa(n, aa);
	fb(n, ab);
	for (r = 0; r < ROUNDS; r++) {
		double t0 = now_ns(), t1, t2, t3;

		fa(n, aa);
		t1 = now_ns();
		fb(n, ab);
		t2 = now_ns();
		fa(n, aa);
		t3 = now_ns();
		va[r] = (t1 - t0 + t3 - t2) / 2 / n;
		vb[r] = (t2 - t1) / n;
		ratio[r] = vb[r] / va[r];
	}
	qsort(va, ROUNDS, sizeof(va[0]), cmp_double);
	qsort(vb, ROUNDS, sizeof(vb[0]), cmp_double);
	qsort(ratio, ROUNDS, sizeof(ratio[0]), cmp_double);
	*a = va[ROUNDS / 2];
	*b = vb[ROUNDS / 2];
	return ratio[ROUNDS / 2];
}

static void op_clock(uint64_t n, void *arg)
{
	struct timespec ts;
	uint64_t s = 0;

	(void)arg;
	while (n--) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s += ts.tv_nsec;
	}
	sink = s;
}

/* The hardware floor of an atomic add: lock xadd on a private word. */
static void op_raw_xadd(uint64_t n, void *arg)
{
	uint64_t *w = arg;

	while (n--)
		__atomic_fetch_add(w, 1, __ATOMIC_RELAXED);
}

#if defined(__x86_64__) || defined(__i386__)
/* The clock's own floor: the vDSO clock is a TSC read plus arithmetic. */
static void op_rdtsc(uint64_t n, void *arg)
{
	uint64_t s = 0;

	(void)arg;
	while (n--)
		s += __rdtsc();
	sink = s;
}
#endif

/*
 * The floor of any push+pop with a timestamp: one read of the heap's
 * clock (the TSC or the vDSO clock, clock.h), the stores
 * that fill a slot and the release stores of depth and version, with no
 * library around them. Comparing push+pop with this tells the cost of the
 * library from the cost of the work itself on this machine.
 */
struct floor_stack {
	uint32_t depth, version, clock;	/* clock: the bench heap's BLAMER_CLOCK_* */
	struct blamer_activity slot[4];
};

__attribute__((noinline)) static void floor_push(struct floor_stack *t, const char *label,
						 uint64_t d0)
{
	uint32_t d = __atomic_load_n(&t->depth, __ATOMIC_RELAXED);
	struct blamer_activity *a = &t->slot[d & 3];

	a->timestamp = t->clock == BLAMER_CLOCK_TSC ? bl_tsc() : bl_monotonic_ns();
	a->calling_address = (uint64_t)(uintptr_t)__builtin_return_address(0);
	a->data[0] = d0;
	a->data[1] = 0;
	a->user_data = 0;
	a->kind = BLAMER_ACTIVITY_TASK;
	strncpy(a->label, label, sizeof(a->label));
	__atomic_store_n(&t->depth, d + 1, __ATOMIC_RELEASE);
}

__attribute__((noinline)) static void floor_pop(struct floor_stack *t)
{
	uint32_t d = __atomic_load_n(&t->depth, __ATOMIC_RELAXED);

	__atomic_store_n(&t->depth, d - 1, __ATOMIC_RELEASE);
	__atomic_store_n(&t->version, t->version + 1, __ATOMIC_RELEASE);
}

static void op_push_pop_floor(uint64_t n, void *arg)
{
	struct floor_stack *t = arg;

	while (n--) {
		floor_push(t, "bench", n);
		floor_pop(t);
	}
}

static void op_push_pop(uint64_t n, void *arg)
{
	struct blamer *b = arg;

	while (n--) {
		blamer_push(b, BLAMER_ACTIVITY_TASK, "bench", n, 0);
		blamer_pop(b);
	}
}

static void op_value_set(uint64_t n, void *arg)
{
	struct blamer_value *v = arg;

	while (n--)
		blamer_value_uint(v, n);
}

static void op_value_add(uint64_t n, void *arg)
{
	struct blamer_value *v = arg;

	while (n--)
		blamer_value_add(v, 1);
}

static void op_path_add(uint64_t n, void *arg)
{
	struct blamer_path *p = arg;

	while (n--)
		blamer_path_add(p, 0, 1);
}

/* Metrics: the writes, each against blamer_path_add() in the same run. */
static void op_counter_add(uint64_t n, void *arg)
{
	struct blamer_series *s = arg;

	while (n--)
		blamer_counter_add(s, 1);
}

/* Latencies that walk the buckets (0.1 ms to 0.6 s), from a table: the
 * loop adds nothing of its own to what an observation costs. */
static double latencies[64];

static void op_observe(uint64_t n, void *arg)
{
	struct blamer_series *s = arg;

	while (n--)
		blamer_histogram_observe(s, latencies[n & 63]);
}

static void op_gauge_set(uint64_t n, void *arg)
{
	struct blamer_series *s = arg;

	while (n--)
		blamer_gauge_set(s, (double)n);
}

/* The series the metric rows write: counter, fixed and exponential
 * histograms, gauges (sum mode, and mostrecent: a clock read per set). */
struct metric_bench {
	struct blamer_series *counter, *fixed, *expo, *gauge, *recent;
};

static int metric_setup(struct blamer *b, struct metric_bench *m)
{
	static const double bounds[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
					  0.025, 0.05, 0.1, 0.25, 1 };
	const struct blamer_metric_def cd = { .name = "bench_requests", .kind = BLAMER_METRIC_COUNTER };
	const struct blamer_metric_def fd = { .name = "bench_seconds", .kind = BLAMER_METRIC_HISTOGRAM,
					      .bounds = bounds, .nbounds = 12 };
	const struct blamer_metric_def ed = { .name = "bench_exp_seconds",
					      .kind = BLAMER_METRIC_HISTOGRAM, .schema = 3,
					      .min_exp = -16, .max_exp = 4 };
	const struct blamer_metric_def gd = { .name = "bench_inflight", .kind = BLAMER_METRIC_GAUGE,
					      .gauge_mode = BLAMER_GAUGE_SUM };
	const struct blamer_metric_def rd = { .name = "bench_recent", .kind = BLAMER_METRIC_GAUGE,
					      .gauge_mode = BLAMER_GAUGE_MOSTRECENT };

	double v = 0.0001;
	int i;

	for (i = 0; i < 64; i++, v = v < 0.5 ? v * 1.7 : 0.0001)
		latencies[(i * 37) & 63] = v;	/* shuffled: no pattern to predict */
	m->counter = blamer_metric_series(blamer_metric_define(b, &cd), NULL, NULL, 0);
	m->fixed = blamer_metric_series(blamer_metric_define(b, &fd), NULL, NULL, 0);
	m->expo = blamer_metric_series(blamer_metric_define(b, &ed), NULL, NULL, 0);
	m->gauge = blamer_metric_series(blamer_metric_define(b, &gd), NULL, NULL, 0);
	m->recent = blamer_metric_series(blamer_metric_define(b, &rd), NULL, NULL, 0);
	return m->counter && m->fixed && m->expo && m->gauge && m->recent ? 0 : -1;
}

/*
 * Two threads doing @op n/2 times each on the same target at once; a
 * run's time (as measure() and compare() take it) is the wall time of
 * both, so ns per operation is wall time over all operations.
 */
struct pair_job {
	op_fn op;
	void *arg;
	uint64_t n;
	pthread_barrier_t *go;
};

static void *pair_worker(void *p)
{
	struct pair_job *j = p;

	pthread_barrier_wait(j->go);
	j->op(j->n, j->arg);
	return NULL;
}

static void run_pair(op_fn op, void *arg, uint64_t n)
{
	pthread_barrier_t go;
	struct pair_job j = { op, arg, n / 2, &go };
	pthread_t th[2];
	int t;

	pthread_barrier_init(&go, NULL, 2);
	for (t = 0; t < 2; t++)
		pthread_create(&th[t], NULL, pair_worker, &j);
	for (t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&go);
}

/* The multi-writer floor: two cores' lock xadd on one word bounce its line. */
static void op_pair_xadd(uint64_t n, void *arg)
{
	run_pair(op_raw_xadd, arg, n);
}

static void op_pair_path_add(uint64_t n, void *arg)
{
	run_pair(op_path_add, arg, n);
}

static void op_set_by_name(uint64_t n, void *arg)
{
	struct blamer *b = arg;

	while (n--)
		blamer_set_uint(b, BLAMER_DATA_PROCESS, "bench.by_name", n);
}

static void op_log(uint64_t n, void *arg)
{
	struct blamer *b = arg;

	while (n--)
		blamer_log(b, "bench message %llu", (unsigned long long)n);
}

/* The same record over a Unix datagram socket: send, and the receiver's
 * recv (what it costs to get the record to another process). */
static void op_unix_dgram(uint64_t n, void *arg)
{
	int *sv = arg;
	struct blamer_activity a = { .kind = BLAMER_ACTIVITY_TASK };
	struct blamer_activity in;

	memcpy(a.label, "bench", 6);
	while (n--) {
		a.timestamp = n;
		if (send(sv[0], &a, sizeof(a), 0) != sizeof(a) ||
		    recv(sv[1], &in, sizeof(in), 0) != sizeof(in))
			abort();
	}
}

/*
 * The same record sent to another process, as a collector would receive
 * it: the receiver is a forked process draining the socket; a round ends
 * when it has acknowledged the last record (so the time covers delivery,
 * not just queueing into the socket buffer).
 */
#define DGRAM_END UINT64_MAX
#define DGRAM_BYE (UINT64_MAX - 1)

static void dgram_receiver(int fd)
{
	struct blamer_activity in;
	char ack = 1;

	for (;;) {
		ssize_t n = recv(fd, &in, sizeof(in), 0);

		/* (a datagram socket sees no end of file: the sender says bye) */
		if (n <= 0 || in.timestamp == DGRAM_BYE)
			_exit(0);
		if (in.timestamp == DGRAM_END && send(fd, &ack, 1, 0) != 1)
			_exit(1);
	}
}

static void op_unix_dgram_proc(uint64_t n, void *arg)
{
	int *sv = arg;
	struct blamer_activity a = { .kind = BLAMER_ACTIVITY_TASK };
	char ack;

	memcpy(a.label, "bench", 6);
	while (n--) {
		a.timestamp = n;
		if (send(sv[0], &a, sizeof(a), 0) != sizeof(a))
			abort();
	}
	a.timestamp = DGRAM_END;
	if (send(sv[0], &a, sizeof(a), 0) != sizeof(a) || recv(sv[0], &ack, 1, 0) != 1)
		abort();
}

#ifdef BENCH_LTTNG
static void op_tracepoint_pair(uint64_t n, void *arg)
{
	(void)arg;
	while (n--) {
		tracepoint(blamer_bench, enter, n, 0, "bench");
		tracepoint(blamer_bench, exit, 0);
	}
}
#endif

/* ---- allocation throughput ---- */

#define ALLOC_SIZE 64

struct alloc_job {
	struct bl_heap *h;
	uint64_t n;
	int kind;	/* 0 blamer, 1 malloc, 2 calloc */
	void **keep;
	pthread_barrier_t *go;
	double t0, t1;
	int failed;
};

static void *alloc_worker(void *p)
{
	struct alloc_job *j = p;
	uint64_t i;
	int err;

	/* Steady state for malloc too: this thread's arena already holds the
	 * pages (the heap's slabs were made and prefaulted at open). */
	if (j->kind) {
		for (i = 0; i < j->n; i++)
			j->keep[i] = malloc(ALLOC_SIZE);
		for (i = 0; i < j->n; i++)
			free(j->keep[i]);
	}
	pthread_barrier_wait(j->go);
	j->t0 = now_ns();
	for (i = 0; i < j->n; i++) {
		void *q;

		if (j->kind == 0) {
			blamer_ref r = bl_heap_alloc(j->h, ALLOC_SIZE, 15, &err);

			if (!r && err == EAGAIN) {
				i--;
				continue;
			}
			if (!r) {
				j->failed = 1;
				break;
			}
			continue;
		}
		q = j->kind == 1 ? malloc(ALLOC_SIZE) : calloc(1, ALLOC_SIZE);
		if (!q) {
			j->failed = 1;
			break;
		}
		j->keep[i] = q;
	}
	j->t1 = now_ns();
	return NULL;
}

/* ns per allocation (wall time from the first thread's start to the last
 * one's end, over all allocations) of one steady-state run. */
static double alloc_once(int kind, int threads, uint64_t per_thread)
{
	struct blamer_config c = { .slab_size = 64u << 20, .max_slabs = 4,
				   .flags = BLAMER_OPEN_NO_MODULES };
	struct alloc_job jobs[8];
	pthread_barrier_t go;
	pthread_t th[8];
	struct blamer *b = NULL;
	double t0 = 1e300, t1 = 0;
	int t;

	if (kind == 0 && blamer_open(&c, &b)) {
		fprintf(stderr, "bench: %s\n", blamer_errmsg());
		exit(1);
	}
	pthread_barrier_init(&go, NULL, threads);
	for (t = 0; t < threads; t++) {
		jobs[t] = (struct alloc_job){ .h = b ? &b->heap : NULL, .n = per_thread,
					      .kind = kind, .go = &go };
		if (kind)
			jobs[t].keep = calloc(per_thread, sizeof(void *));
		pthread_create(&th[t], NULL, alloc_worker, &jobs[t]);
	}
	for (t = 0; t < threads; t++) {
		uint64_t i;

		pthread_join(th[t], NULL);
		if (jobs[t].failed) {
			fprintf(stderr, "bench: allocation failed (kind %d)\n", kind);
			exit(1);
		}
		if (jobs[t].t0 < t0)
			t0 = jobs[t].t0;
		if (jobs[t].t1 > t1)
			t1 = jobs[t].t1;
		if (kind) {
			for (i = 0; i < per_thread; i++)
				free(jobs[t].keep[i]);
			free(jobs[t].keep);
		}
	}
	pthread_barrier_destroy(&go);
	if (b)
		blamer_close(b);
	return (t1 - t0) / (per_thread * threads);
}

/* Interleaved rounds of kinds @ka and @kb; medians and median ratio b/a. */
static double alloc_compare(int ka, int kb, int threads, double *a, double *b)
{
	double va[7], vb[7], ratio[7];
	uint64_t n = quick ? 40000 : 400000;
	int r;

	for (r = 0; r < 7; r++) {
		va[r] = alloc_once(ka, threads, n);
		vb[r] = alloc_once(kb, threads, n);
		ratio[r] = vb[r] / va[r];
	}
	qsort(va, 7, sizeof(va[0]), cmp_double);
	qsort(vb, 7, sizeof(vb[0]), cmp_double);
	qsort(ratio, 7, sizeof(ratio[0]), cmp_double);
	*a = va[3];
	*b = vb[3];
	return ratio[3];
}

/*
 * A second context whose heap stamps activities with CLOCK_MONOTONIC, to
 * show what the TSC saves. Its own directory: the dir backend keeps one
 * heap per process per directory. NULL if it cannot be made.
 */
static char monotonic_dir[] = "/tmp/blamer-bench.XXXXXX";

static struct blamer *open_monotonic(void)
{
	struct blamer_config c = { .flags = BLAMER_OPEN_NO_MODULES, .dir = monotonic_dir };
	struct blamer *b;

	if (!mkdtemp(monotonic_dir))
		return NULL;
	setenv("BLAMER_CLOCK", "monotonic", 1);
	if (blamer_open(&c, &b))
		b = NULL;
	unsetenv("BLAMER_CLOCK");
	if (!b)
		rmdir(monotonic_dir);
	return b;
}

static void close_monotonic(struct blamer *b)
{
	blamer_close(b);	/* removes its files */
	rmdir(monotonic_dir);
}

/*
 * push+pop on the monotonic context, measured in a thread of its own: a
 * thread's fast path is the first context it pushed to, and the main
 * thread's is the bench's TSC context.
 */
struct monotonic_run {
	struct blamer *b;
	double ratio, pp;
};

static void *monotonic_thread(void *arg)
{
	struct monotonic_run *m = arg;
	double clk;

	m->ratio = compare(op_clock, NULL, 2000000, op_push_pop, m->b, 2000000, &clk, &m->pp);
	return NULL;
}

/*
 * What a new series or path costs as a heap fills: a fresh context makes
 * BENCH_GROWTH of them (a series of one counter: ask for the handle, add
 * 1, the add makes the record; a path of depth 2: blamer_path_get(), add
 * 1), timed over the first 1,024 and over the last half. Flat means the
 * ratio stays near 1; a walk of the heap (and, for paths, of every
 * handle) per new one made it grow with their number: 30x for series,
 * 11x for paths at 16,384. NAN if it cannot run.
 */
#define BENCH_GROWTH	16384

static bool grow_one(struct blamer *b, struct blamer_metric *m, int i)
{
	uint32_t unit = BLAMER_UNIT_COUNT;

	if (m) {
		struct blamer_series *s;
		const char *vv[1];
		char v[24];

		snprintf(v, sizeof(v), "/route/%d", i);
		vv[0] = v;
		s = blamer_metric_series(m, vv, NULL, 0);
		if (s)
			blamer_counter_add(s, 1);
		return s != NULL;
	} else {
		uint64_t ids[2] = { blamer_dag_id("bench-growth"), (uint64_t)i + 1 };
		struct blamer_path *p = blamer_path_get(b, ids, 2, &unit, 1);

		if (p)
			blamer_path_add(p, 0, 1);
		return p != NULL;
	}
}

static double growth_cost(bool series, double *first, double *late)
{
	static const char *const l[] = { "route" };
	const struct blamer_metric_def d = { .name = "bench_routes", .kind = BLAMER_METRIC_COUNTER,
					     .labels = l, .nlabels = 1 };
	char dir[] = "/tmp/blamer-bench-growth-XXXXXX";
	struct blamer_config c = { .flags = BLAMER_OPEN_NO_MODULES, .slab_size = 1u << 20,
				   .dir = dir };
	struct blamer_metric *m = NULL;
	struct blamer *b;
	double t0, t1 = 0, t2;
	int i;
	bool ok = true;

	if (!mkdtemp(dir))
		return NAN;
	if (blamer_open(&c, &b)) {
		rmdir(dir);
		return NAN;
	}
	if (series)
		ok = (m = blamer_metric_define(b, &d)) != NULL;
	t0 = now_ns();
	for (i = 0; ok && i < BENCH_GROWTH; i++) {
		if (i == BENCH_GROWTH / 2)
			t1 = now_ns();
		if (i == 1024)
			*first = (now_ns() - t0) / 1024;
		ok = grow_one(b, m, i);
	}
	t2 = now_ns();
	blamer_close(b);	/* removes its files */
	rmdir(dir);
	if (!ok)
		return NAN;
	*late = (t2 - t1) / (BENCH_GROWTH / 2);
	return *late / *first;
}

/* One line: name, median ns, and (if @vs) the median ratio against @vs. */
static void row(const char *name, double ns, const char *vs, double ratio, const char *target,
		int pass)
{
	printf("%-42s %9.2f ns", name, ns);
	if (vs)
		printf("  %8.3fx %-18s", ratio, vs);
	else
		printf("  %9s %-18s", "", "");
	if (target)
		printf(" %s%s", target, pass < 0 ? "" : pass ? "  PASS" : "  FAIL");
	printf("\n");
}

/* The CPU's model name (/proc/cpuinfo), for the header: the ratios of
 * the metric rows depend on it (Documentation/performance.rst). */
static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(buf, len, "unknown CPU");
	while (f && fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (v && !strncmp(line, "model name", 10)) {
			v += strspn(v + 1, " \t") + 1;
			v[strcspn(v, "\n")] = '\0';
			snprintf(buf, len, "%s", v);
			break;
		}
	}
	if (f)
		fclose(f);
}

/* For bench/hot-model: each op's calls in a row (the model traces one
 * of the last of each, when the state is warm), in the model's order. */
#define HOT_CALLS 4096
static int hot_calls(struct blamer *b, struct blamer_path *p)
{
	struct metric_bench m;

	if (metric_setup(b, &m)) {
		fprintf(stderr, "bench: %s\n", blamer_errmsg());
		return 1;
	}
	op_path_add(HOT_CALLS, p);
	op_counter_add(HOT_CALLS, m.counter);
	op_observe(HOT_CALLS, m.fixed);
	op_observe(HOT_CALLS, m.expo);
	return 0;
}

/* blamer_path_add() against the hardware's floor, then the metric
 * writes against blamer_path_add() (bench --metrics runs these alone). */
static int path_rows(struct blamer *b, struct blamer_path *p, uint64_t *word)
{
	struct metric_bench m;
	double x, y, r;

	r = compare(op_raw_xadd, word, 20000000, op_path_add, p, 20000000, &x, &y);
	row("measurement add (blamer_path_add)", y, "lock xadd", r, "< 10 ns", y < 10);
	if (metric_setup(b, &m)) {
		fprintf(stderr, "bench: %s\n", blamer_errmsg());
		return 1;
	}
	r = compare_rounds(op_path_add, p, op_counter_add, m.counter, 500000, &x, &y);
	row("counter add (blamer_counter_add)", y, "path_add", r, "<= 1.5x", r <= 1.5);
	r = compare_rounds(op_path_add, p, op_observe, m.fixed, 500000, &x, &y);
	row("histogram observe, 12 bounds", y, "path_add", r, "<= 1.5x", r <= 1.5);
	r = compare_rounds(op_path_add, p, op_observe, m.expo, 500000, &x, &y);
	row("histogram observe, exponential (162)", y, "path_add", r, "<= 1.5x", r <= 1.5);
	r = compare_rounds(op_path_add, p, op_gauge_set, m.gauge, 500000, &x, &y);
	row("gauge set (blamer_gauge_set)", y, "path_add", r, "<= 1.5x", r <= 1.5);
	r = compare_rounds(op_path_add, p, op_gauge_set, m.recent, 100000, &x, &y);
	row("  gauge set, mostrecent (a clock read)", y, "path_add", r, "(the clock)", -1);
	r = growth_cost(true, &x, &y);
	if (r == r) {
		row("new series, the first 1,024", x, NULL, 0, NULL, -1);
		row("new series, 8,193rd to 16,384th", y, "first 1,024", r, "flat", -1);
	}
	r = growth_cost(false, &x, &y);
	if (r == r) {
		row("new path, the first 1,024", x, NULL, 0, NULL, -1);
		row("new path, 8,193rd to 16,384th", y, "first 1,024", r, "flat", -1);
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t ids[3] = { blamer_dag_id("bench"), blamer_dag_id("bench/a"),
			    blamer_dag_id("bench/a/b") };
	uint32_t units[1] = { BLAMER_UNIT_COUNT };
	struct blamer_heap_info info;
	struct blamer_config c = { .flags = BLAMER_OPEN_NO_MODULES };
	static uint64_t word;
	struct blamer_value *v;
	struct blamer_path *p;
	double clk, pp, x, y, r;
	struct blamer *b;
	int lttng_only = 0, metrics_only = 0, hot = 0, i, sv[2];
	char cpu[128];

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--lttng-only"))
			lttng_only = 1;
		else if (!strcmp(argv[i], "--metrics"))
			metrics_only = 1;	/* the metric rows and their baseline */
		else if (!strcmp(argv[i], "--hot"))
			hot = 1;
		else {
			fprintf(stderr, "usage: bench [--quick] [--lttng-only | --metrics | --hot]\n");
			return 2;
		}
	}
	if (blamer_open(&c, &b)) {
		fprintf(stderr, "bench: %s\n", blamer_errmsg());
		return 1;
	}
	blamer_heap_info(b, &info);
	v = blamer_set_uint(b, BLAMER_DATA_PROCESS, "bench.value", 0);
	p = blamer_path_get(b, ids, 3, units, 1);
	if (!v || !p) {
		fprintf(stderr, "bench: %s\n", blamer_errmsg());
		return 1;
	}
	if (hot) {
		i = hot_calls(b, p);
		blamer_close(b);
		return i;
	}
	cpu_model(cpu, sizeof(cpu));
	printf("# blamer bench: backend %s, activity clock %s, %ld CPUs (%s), medians of %d interleaved rounds (metric rows: %d bracketed)%s\n",
	       info.backend == 1 ? "device" : "dir",
	       b->clock == BLAMER_CLOCK_TSC ? "tsc" : "monotonic",
	       sysconf(_SC_NPROCESSORS_ONLN), cpu, REPS, ROUNDS, quick ? " (quick)" : "");
	printf("%-42s %12s  %9s %-18s %s\n", "operation", "median", "ratio", "against", "target");
	if (metrics_only) {
		i = path_rows(b, p, &word);
		blamer_close(b);
		return i;
	}
	r = compare(op_clock, NULL, 2000000, op_push_pop, b, 2000000, &clk, &pp);
	row("clock_gettime(CLOCK_MONOTONIC)", clk, NULL, 0, "(baseline)", -1);
	row("activity push+pop (with timestamp)", pp, "clock_gettime", r, "<= 1.5x", r <= 1.5);
	{
		static struct floor_stack fs;
		double fl, pp2;
		struct blamer *bm;

		fs.clock = b->clock;
		r = compare(op_clock, NULL, 2000000, op_push_pop_floor, &fs, 2000000, &clk, &fl);
		row("  floor: bare clock read + slot stores", fl, "clock_gettime", r,
		    "(no library)", -1);
		r = compare(op_push_pop_floor, &fs, 2000000, op_push_pop, b, 2000000, &fl, &pp2);
		row("  push+pop vs that floor", pp2, "floor", r, NULL, -1);
#if defined(__x86_64__) || defined(__i386__)
		r = compare(op_clock, NULL, 2000000, op_rdtsc, NULL, 2000000, &clk, &fl);
		row("  rdtsc alone (the clock's floor)", fl, "clock_gettime", r, NULL, -1);
#endif
		bm = open_monotonic();
		if (bm && b->clock == BLAMER_CLOCK_TSC) {
			struct monotonic_run m = { .b = bm };
			pthread_t th;

			if (!pthread_create(&th, NULL, monotonic_thread, &m) &&
			    !pthread_join(th, NULL))
				row("  push+pop, BLAMER_CLOCK=monotonic", m.pp, "clock_gettime",
				    m.ratio, NULL, -1);
		}
		if (bm)
			close_monotonic(bm);
	}
#ifdef BENCH_LTTNG
	if (lttng_only) {
		/* A snapshot (flight recorder) session: events go to the ring
		 * buffer only, LTTng's cheapest enabled mode. */
		r = compare(op_tracepoint_pair, NULL, 200000, op_push_pop, b, 200000, &x, &y);
		row("LTTng-UST tracepoint pair (ENABLED)", x, NULL, 0, NULL, -1);
		row("  push+pop vs tracepoint pair", y, "tracepoint pair", r, "< 1x", r < 1);
		blamer_close(b);
		return 0;
	}
#else
	if (lttng_only) {
		printf("# LTTng-UST: not built in\n");
		return 0;
	}
#endif
	r = compare(op_raw_xadd, &word, 20000000, op_value_set, v, 20000000, &x, &y);
	row("user-data set (handle)", y, NULL, 0, "< 10 ns", y < 10);
	r = compare(op_raw_xadd, &word, 20000000, op_value_add, v, 20000000, &x, &y);
	row("raw lock xadd, private word", x, NULL, 0, "(baseline: hardware floor)", -1);
	/* Not a target (user-data *set* is): a counter all threads share. */
	row("user-data atomic add (handle)", y, "lock xadd", r, "(shared counter)", -1);
	if (path_rows(b, p, &word))
		return 1;
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
		r = compare(op_pair_xadd, &word, 20000000, op_pair_path_add, p, 20000000, &x, &y);
		row("2 threads, lock xadd on one word", x, NULL, 0,
		    "(baseline: wall time / add)", -1);
		row("2 threads, blamer_path_add, one path", y, "shared xadd", r, "< 1x", r < 1);
	}
	row("user-data set by name (lookup)", measure(op_set_by_name, b, 2000000), NULL, 0, NULL,
	    -1);
	row("log message (blamer_log, vsnprintf)", measure(op_log, b, 500000), NULL, 0, NULL, -1);
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv)) {
		perror("bench: socketpair");
		return 1;
	}
	r = compare(op_unix_dgram, sv, 200000, op_push_pop, b, 2000000, &x, &y);
	row("Unix datagram 64 B, send+recv, 1 thread", x, NULL, 0, "(lower bound)", -1);
	row("  push+pop vs that", y, "datagram", r, NULL, -1);
	close(sv[0]);
	close(sv[1]);
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv)) {
		perror("bench: socketpair");
		return 1;
	}
	{
		pid_t rx = fork();

		if (rx < 0) {
			perror("bench: fork");
			return 1;
		}
		if (rx == 0) {
			close(sv[0]);
			dgram_receiver(sv[1]);
		}
		close(sv[1]);
		struct blamer_activity bye = { .timestamp = DGRAM_BYE };

		r = compare(op_unix_dgram_proc, sv, 200000, op_push_pop, b, 2000000, &x, &y);
		if (send(sv[0], &bye, sizeof(bye), 0) != sizeof(bye))
			kill(rx, SIGKILL);
		close(sv[0]);
		waitpid(rx, NULL, 0);
	}
	row("Unix datagram 64 B to a reader process", x, NULL, 0, "(a collector's view)", -1);
	row("  push+pop vs 1 datagram to a process", y, "datagram", r, "<= 0.02x", r <= 0.02);
	row("  push+pop vs 2 datagrams (enter+exit)", y, "2 datagrams", r / 2, "<= 0.02x",
	    r / 2 <= 0.02);
#ifdef BENCH_LTTNG
	r = compare(op_tracepoint_pair, NULL, 2000000, op_push_pop, b, 2000000, &x, &y);
	row("LTTng-UST tracepoint pair (no session)", x, NULL, 0, "(disabled: a branch)", -1);
	row("  push+pop vs disabled tracepoints", y, "tracepoint pair", r, NULL, -1);
#endif
	/* The allocation runs make heaps of their own: in the dir backend a
	 * process has one heap (file names are per process). */
	blamer_close(b);
	{
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		int nt = cpus >= 2 ? 2 : 1;

		r = alloc_compare(1, 2, 1, &x, &y);
		row("malloc(64), 1 thread", x, NULL, 0, "(baseline)", -1);
		row("calloc(1, 64), 1 thread", y, "malloc", r, NULL, -1);
		r = alloc_compare(1, 0, 1, &x, &y);
		row("heap alloc 64 B (zeroed), 1 thread", y, "malloc", r, "<= 1x", r <= 1);
		r = alloc_compare(1, 0, nt, &x, &y);
		row(nt == 2 ? "malloc(64), 2 threads" : "malloc(64), 1 CPU only", x, NULL, 0,
		    "(baseline: wall time / allocation)", -1);
		row(nt == 2 ? "heap alloc 64 B, 2 threads" : "heap alloc 64 B, 1 CPU only", y,
		    "malloc", r, "<= 1x", r <= 1);
	}
	return 0;
}
