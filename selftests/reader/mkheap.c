// SPDX-License-Identifier: MIT
/*
 * Write fixture heaps into a dir-backend directory, for the CLI tests:
 *   mkheap DIR dead PID START SCALE     a standard heap of a dead process
 *   mkheap DIR corrupt PID START        a standard heap whose list loops
 *   mkheap DIR live SCALE               a heap for this process; prints
 *                                       the pid, then waits to be killed
 *                                       (not dumpable if $MKHEAP_NOT_DUMPABLE)
 *   mkheap DIR live-down SCALE          the same, and at each SIGUSR1 its
 *                                       counters rewritten in place at a
 *                                       scale one lower (a writer turning
 *                                       its counters back); prints "down N"
 *   mkheap DIR live-down-metrics SCALE  the same with the metrics heap
 *                                       (fx_metrics(): counter reqs, histograms
 *                                       lat and size, gauge inflight)
 *   mkheap DIR live-up                  a heap for this process with one
 *                                       path of 1 byte; prints the pid, and
 *                                       at SIGUSR1 the path's bytes rewritten
 *                                       in place to 2^64 - 1 (a jump of more
 *                                       than a uint64_t holds per second, in
 *                                       less than a second); prints "up"
 *   mkheap - device-status              the JSON of a device's status, made
 *                                       up, as blamer status --json writes it
 *                                       (the host has no device to ask)
 *   mkheap DIR end CODE|abort           a real writer (the library) that
 *                                       pushes, logs, prints its pid, then
 *                                       exit(CODE)s without blamer_close()
 *                                       or abort()s
 *   mkheap DIR empty N [BYTES [PID]]    N slab files of dead heaps that hold
 *                                       no heap: BYTES (default 0) zeros each,
 *                                       pids from PID (3000000) on
 *   mkheap DIR max PID START [PERCENT]  a dead heap as large as the reader
 *                                       reads in every dimension at once
 *                                       (PERCENT of it: 100 by default)
 *   mkheap DIR twin-units PID START     a dead heap measuring in units 1005
 *                                       and 1007, both named "orders"
 *   mkheap DIR metrics                  two real writers (a process and its
 *                                       fork child) with metrics of every
 *                                       kind (a counter whose label values
 *                                       hold UTF-8 and a control character,
 *                                       histograms with fixed and exponential
 *                                       buckets, one on a DAG path, gauges of
 *                                       the modes sum, all, mostrecent) and a
 *                                       named unit; both die without closing
 */
#include <signal.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>

#include "testsupport.h"

static volatile sig_atomic_t downs;

static void on_usr1(int sig)
{
	(void)sig;
	downs++;
}

/* @h's slabs written over the files of heap <pid>-<start> in place (no
 * truncation: a reader never sees the files shorter). */
static int rewrite_dir(struct fx_heap *h, const char *dir, int64_t pid, uint64_t start)
{
	char path[4096];
	unsigned i;

	for (i = 0; i < h->nslabs; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/%lld-%llu.%u.slab", dir, (long long)pid,
			 (unsigned long long)start, i);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || pwrite(fd, h->slab[i], h->size[i], 0) != (ssize_t)h->size[i])
			return -1;
		close(fd);
	}
	return 0;
}

/* Exits rather than write a heap no reader would take for this process. */
static uint64_t my_start(void)
{
	uint64_t st = fx_self_start_ns();

	if (!st)
		exit(1);
	return st;
}

/* live-up's heap: one path, /browser, of @bytes. */
static void up_heap(struct fx_heap *h, uint64_t bytes)
{
	static const uint64_t p[] = { FX_ROOT };

	fx_init(h, 1, FX_SLAB, getpid(), (int64_t)my_start());
	fx_process(h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/app");
	fx_node(h, FX_ROOT, "browser");
	fx_path(h, p, 1, 0, bytes);
}

/*
 * The maximal valid heap: every kind of record at the reader's bound
 * (RD_MAX_RECORDS_KIND, 65,536 of a kind), all in one heap of about
 * 200 MB: threads (1,000 of them 1,024 deep, every activity pushed from
 * inside some module), modules, a wrapped log ring, children, DAG nodes,
 * edges and paths of depth 8, process and global data of 4,096 fields
 * each and one activity record of 4,096 fields shared by the first
 * activities. @pct scales every count (the bench compares sizes).
 */
#define MX_KIND		65536u
#define MX_SLAB		(40u << 20)
/* Activity slots of 128 bytes (format 3): 125 MiB of stacks alone. */
#define MX_SLABS	6u

/* Room for @size bytes: the next slab once this one is full. */
static void mx_room(struct fx_heap *h, size_t size)
{
	struct blamer_slab_header *sh = (struct blamer_slab_header *)h->slab[h->cur];

	if (sh->freeptr + size + 64 > h->size[h->cur] && h->cur + 1 < h->nslabs)
		h->cur++;
}

static void mx_fields(struct fx_heap *h, blamer_ref ud, unsigned n)
{
	char name[32];
	unsigned i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		fx_field_u64(h, ud, name, i);
	}
}

static int mx_heap(const char *dir, int64_t pid, uint64_t start, unsigned pct)
{
	unsigned n = MX_KIND * pct / 100, deep = 1000 * pct / 100, fields = 4096 * pct / 100;
	unsigned nmods = n ? n : 1, i, k;
	blamer_ref ud, gd, ad, log, t;
	struct blamer_process *pr;
	struct fx_heap h;
	char name[64];
	int ret;

	fx_init(&h, MX_SLABS, MX_SLAB, pid, (int64_t)start);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/maximal --every-dimension");
	ud = fx_userdata(&h, BLAMER_DATA_PROCESS, fields * 32 + 64, 1);
	mx_fields(&h, ud, fields);
	gd = fx_userdata(&h, BLAMER_DATA_GLOBAL, fields * 32 + 64, 1);
	mx_fields(&h, gd, fields);
	ad = fx_userdata(&h, BLAMER_DATA_ACTIVITY, fields * 32 + 64, 0);
	mx_fields(&h, ad, fields);
	pr = fx_at(&h, fx_hh(&h)->process);
	pr->user_data = ud;
	pr->global_data = gd;
	/* modules first: activities point into them, in a scattered order */
	for (i = 0; i < n; i++) {
		mx_room(&h, sizeof(struct blamer_module));
		snprintf(name, sizeof(name), "/usr/lib/maximal/libm%u.so", i);
		fx_module(&h, name, 0x7f0000000000ull + (uint64_t)((i * 40503u) % nmods) * 0x2000);
	}
	for (i = 0; i < n; i++) {
		uint32_t slots = i < deep ? 1024 : 0;

		mx_room(&h, sizeof(struct blamer_thread) + slots * sizeof(struct blamer_activity));
		snprintf(name, sizeof(name), "t%u", i);
		t = fx_thread(&h, 100000 + i, name, slots);
		for (k = 0; k < slots; k++) {
			struct blamer_thread *th = fx_at(&h, t);

			fx_push(&h, t, BLAMER_ACTIVITY_TASK, "deep", 1000 + k, i < 16 && k < 2 ? ad : 0);
			th->stack[k].calling_address = 0x7f0000000000ull +
				(uint64_t)((i * 1024u + k) * 2654435761u % nmods) * 0x2000 + 0x10;
		}
	}
	mx_room(&h, sizeof(struct blamer_log) + n * sizeof(struct blamer_log_slot));
	log = fx_log(&h, n ? n : 1);
	pr = fx_at(&h, fx_hh(&h)->process);
	pr->log = log;
	/* wrapped: the oldest slot is not the first */
	for (i = 0; i < n + n / 3; i++)
		fx_log_msg(&h, log, "a log line of the maximal heap, in every slot of the ring");
	for (i = 0; i < n; i++) {
		mx_room(&h, sizeof(struct blamer_child));
		fx_child(&h, 200000 + i, 0, 2);
	}
	for (i = 0; i < n; i++) {
		mx_room(&h, sizeof(struct blamer_dag_node));
		snprintf(name, sizeof(name), "node%u", i);
		fx_node(&h, 0x1000 + (uint64_t)i, name);
	}
	for (i = 0; i < n; i++) {
		mx_room(&h, sizeof(struct blamer_dag_edge));
		fx_edge(&h, 0x1000 + (uint64_t)(i / 2), 0x1000 + (uint64_t)i);
	}
	for (i = 0; i < n; i++) {
		uint64_t nodes[8];

		for (k = 0; k < 8; k++)
			nodes[k] = 0x1000 + (uint64_t)((i + k * 7919u) % nmods);
		mx_room(&h, sizeof(struct blamer_dag_path));
		fx_path(&h, nodes, 8, 1000 + i, 4096);
	}
	h.cur = 0;
	ret = fx_write_dir(&h, dir, pid, start);
	fx_free(&h);
	return ret ? 1 : 0;
}

/* mkheap DIR metrics (see the top): what the JSON test checks. */
static int metrics(const char *dir)
{
	static const char *const rc[] = { "route", "code" };
	static const double bounds[] = { 0.01, 0.1, 1 };
	const struct blamer_metric_def cd = { .name = "http_requests", .help = "Requests.",
					      .kind = BLAMER_METRIC_COUNTER, .labels = rc,
					      .nlabels = 2 };
	const struct blamer_metric_def hd = { .name = "latency_seconds",
					      .kind = BLAMER_METRIC_HISTOGRAM,
					      .base = BLAMER_BASE_SECONDS, .bounds = bounds,
					      .nbounds = 3 };
	const struct blamer_metric_def ed = { .name = "size_bytes", .kind = BLAMER_METRIC_HISTOGRAM,
					      .base = BLAMER_BASE_BYTES, .schema = 0, .min_exp = 0,
					      .max_exp = 4 };
	const struct blamer_metric_def sd = { .name = "inflight", .kind = BLAMER_METRIC_GAUGE,
					      .gauge_mode = BLAMER_GAUGE_SUM };
	const struct blamer_metric_def ad = { .name = "temperature", .kind = BLAMER_METRIC_GAUGE,
					      .gauge_mode = BLAMER_GAUGE_ALL };
	const struct blamer_metric_def md = { .name = "version", .kind = BLAMER_METRIC_GAUGE,
					      .gauge_mode = BLAMER_GAUGE_MOSTRECENT };
	struct blamer_config cfg = { .backend = BLAMER_BACKEND_DIR, .dir = dir,
				     .flags = BLAMER_OPEN_NO_MODULES };
	const char *hello[2] = { "/h\xc3\xa9llo", "200" }, *odd[2] = { "/a\x1b[2Jb", "500" };
	uint64_t path[2] = { blamer_dag_id("server"), blamer_dag_id("hello") };
	uint32_t units[1] = { 1007 };
	struct blamer_series *c, *co, *h, *e, *g, *a, *m;
	struct blamer_path *p;
	pid_t pid;
	int st;

	if (blamer_init(&cfg)) {
		fprintf(stderr, "mkheap: %s\n", blamer_errmsg());
		return 1;
	}
	blamer_dag_node(NULL, path[0], 1, "server");
	blamer_dag_node(NULL, path[1], 2, "hello");
	blamer_dag_unit(NULL, 1007, "requests", BLAMER_BASE_NONE);
	p = blamer_path_get(NULL, path, 2, units, 1);
	c = blamer_metric_series(blamer_metric_define(NULL, &cd), hello, NULL, 0);
	co = blamer_metric_series(blamer_metric_define(NULL, &cd), odd, NULL, 0);
	h = blamer_metric_series(blamer_metric_define(NULL, &hd), NULL, path, 2);
	e = blamer_metric_series(blamer_metric_define(NULL, &ed), NULL, NULL, 0);
	g = blamer_metric_series(blamer_metric_define(NULL, &sd), NULL, NULL, 0);
	a = blamer_metric_series(blamer_metric_define(NULL, &ad), NULL, NULL, 0);
	m = blamer_metric_series(blamer_metric_define(NULL, &md), NULL, NULL, 0);
	if (!p || !c || !co || !h || !e || !g || !a || !m) {
		fprintf(stderr, "mkheap: %s\n", blamer_errmsg());
		return 1;
	}
	/* the parent: 3 requests, 2 observations, gauges */
	blamer_path_add(p, 0, 3);
	blamer_counter_add(c, 3);
	blamer_counter_add(co, 1);
	blamer_histogram_observe(h, 0.05);
	blamer_histogram_observe(h, 0.5);
	blamer_histogram_observe(e, 3);
	blamer_gauge_set(g, 2);
	blamer_gauge_set(a, 20.5);
	blamer_gauge_set(m, 1);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		/* the child: 2 requests, one slow, gauges of its own */
		blamer_path_add(p, 0, 2);
		blamer_counter_add(c, 2);
		blamer_histogram_observe(h, 5);
		blamer_gauge_set(g, 1);
		blamer_gauge_set(a, 21.5);
		usleep(2000);
		blamer_gauge_set(m, 2);	/* set last: the most recent */
		abort();
	}
	waitpid(pid, &st, 0);
	abort();
}

int main(int argc, char **argv)
{
	struct fx_heap h;

	if (argc >= 4 && !strcmp(argv[2], "empty")) {
		long n = atol(argv[3]), i, first = argc >= 6 ? atol(argv[5]) : 3000000;
		size_t bytes = argc >= 5 ? (size_t)atol(argv[4]) : 0;
		char path[4096], *zeros = calloc(1, bytes + 1);

		for (i = 0; i < n && zeros; i++) {
			int fd;

			snprintf(path, sizeof(path), "%s/%ld-7.0.slab", argv[1], first + i);
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
			if (fd < 0 || write(fd, zeros, bytes) != (ssize_t)bytes)
				return 1;
			close(fd);
		}
		free(zeros);
		return zeros ? 0 : 1;
	}
	if (argc >= 5 && !strcmp(argv[2], "max"))
		return mx_heap(argv[1], atoll(argv[3]), strtoull(argv[4], NULL, 0),
			       argc >= 6 ? (unsigned)atoi(argv[5]) : 100);

	if (argc >= 6 && !strcmp(argv[2], "dead")) {
		fx_standard(&h, atoll(argv[3]), atoll(argv[4]), strtoull(argv[5], NULL, 0));
		return fx_write_dir(&h, argv[1], atoll(argv[3]), strtoull(argv[4], NULL, 0)) ? 1 : 0;
	}
	/* a dead heap of fx_metrics(); "poisoned": series /a's shard holds
	 * NaN, a value no writer leaves */
	if (argc >= 5 && (!strcmp(argv[2], "dead-metrics") || !strcmp(argv[2], "poisoned"))) {
		fx_metrics(&h, atoll(argv[3]), atoll(argv[4]), 1);
		if (!strcmp(argv[2], "poisoned")) {
			/* process, 4 definitions, /a, its shard */
			blamer_ref r = fx_nth_record(&h, 6);
			double nan = __builtin_nan("");

			memcpy(fx_at(&h, r + sizeof(struct blamer_metric_shard)), &nan, sizeof(nan));
		}
		return fx_write_dir(&h, argv[1], atoll(argv[3]), strtoull(argv[4], NULL, 0)) ? 1 : 0;
	}
	if (argc >= 5 && !strcmp(argv[2], "twin-units")) {
		static const uint64_t a[] = { 1 };
		struct blamer_dag_path *pr;

		fx_init(&h, 1, FX_SLAB, atoll(argv[3]), strtoull(argv[4], NULL, 0));
		fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "twins");
		fx_unit(&h, 1005, BLAMER_BASE_NONE, "orders");
		fx_unit(&h, 1007, BLAMER_BASE_NONE, "orders");
		pr = fx_at(&h, fx_path(&h, a, 1, 0, 0));
		pr->units[0] = 1005;
		pr->values[0] = 3;
		pr->units[1] = 1007;
		pr->values[1] = 4;
		return fx_write_dir(&h, argv[1], atoll(argv[3]), strtoull(argv[4], NULL, 0)) ? 1 : 0;
	}
	if (argc >= 5 && !strcmp(argv[2], "corrupt")) {
		fx_standard(&h, atoll(argv[3]), atoll(argv[4]), 1);
		/* the 5th record points back at the 2nd */
		((struct blamer_block *)fx_at(&h, fx_nth_record(&h, 4)))->next = fx_nth_record(&h, 1);
		return fx_write_dir(&h, argv[1], atoll(argv[3]), strtoull(argv[4], NULL, 0)) ? 1 : 0;
	}
	if (argc >= 4 && !strcmp(argv[2], "live")) {
		/* a process that is not dumpable: /proc/<pid> is root's */
		if (getenv("MKHEAP_NOT_DUMPABLE"))
			prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		fx_standard(&h, getpid(), (int64_t)my_start(), strtoull(argv[3], NULL, 0));
		if (fx_write_dir(&h, argv[1], getpid(), my_start()))
			return 1;
		printf("%d\n", (int)getpid());
		fflush(stdout);
		pause();
		return 0;
	}
	if (argc >= 4 && (!strcmp(argv[2], "live-down") || !strcmp(argv[2], "live-down-metrics"))) {
		void (*make)(struct fx_heap *, int64_t, int64_t, uint64_t) =
			strcmp(argv[2], "live-down") ? fx_metrics : fx_standard;
		uint64_t scale = strtoull(argv[3], NULL, 0), seen = 0;
		struct sigaction sa = { .sa_handler = on_usr1 };
		sigset_t block, old;

		sigemptyset(&block);
		sigaddset(&block, SIGUSR1);
		sigprocmask(SIG_BLOCK, &block, &old);
		sigaction(SIGUSR1, &sa, NULL);
		make(&h, getpid(), (int64_t)my_start(), scale);
		if (fx_write_dir(&h, argv[1], getpid(), my_start()))
			return 1;
		fx_free(&h);
		printf("%d\n", (int)getpid());
		fflush(stdout);
		for (;;) {
			sigsuspend(&old);
			while (seen < (uint64_t)downs && scale > 1) {
				seen++;
				scale--;
				make(&h, getpid(), (int64_t)my_start(), scale);
				if (rewrite_dir(&h, argv[1], getpid(), my_start()))
					return 1;
				fx_free(&h);
				printf("down %llu\n", (unsigned long long)scale);
				fflush(stdout);
			}
		}
	}
	if (argc >= 3 && !strcmp(argv[2], "live-up")) {
		struct sigaction sa = { .sa_handler = on_usr1 };
		sigset_t block, old;

		sigemptyset(&block);
		sigaddset(&block, SIGUSR1);
		sigprocmask(SIG_BLOCK, &block, &old);
		sigaction(SIGUSR1, &sa, NULL);
		up_heap(&h, 1);
		if (fx_write_dir(&h, argv[1], getpid(), my_start()))
			return 1;
		fx_free(&h);
		printf("%d\n", (int)getpid());
		fflush(stdout);
		while (!downs)
			sigsuspend(&old);
		up_heap(&h, UINT64_MAX);
		if (rewrite_dir(&h, argv[1], getpid(), my_start()))
			return 1;
		fx_free(&h);
		printf("up\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	if (argc >= 4 && !strcmp(argv[2], "end")) {
		struct blamer_config cfg = { .backend = BLAMER_BACKEND_DIR, .dir = argv[1],
					     .flags = BLAMER_OPEN_NO_MODULES };
		struct blamer *b;

		if (blamer_open(&cfg, &b)) {
			fprintf(stderr, "mkheap: %s\n", blamer_errmsg());
			return 1;
		}
		blamer_push(b, BLAMER_ACTIVITY_TASK, "last-task", 0, 0);
		blamer_log(b, "about to end");
		printf("%d\n", (int)getpid());
		fflush(stdout);
		if (!strcmp(argv[3], "abort"))
			abort();
		exit(atoi(argv[3]));
	}
	if (argc >= 3 && !strcmp(argv[2], "metrics"))
		return metrics(argv[1]);
	if (argc >= 3 && !strcmp(argv[2], "device-status")) {
		struct blamer_backend_status st = {
			.backend = BLAMER_BACKEND_DEVICE, .source = "/dev/blamer",
			.user_slabs = 3, .user_orphans = 1, .user_bytes = 1 << 20,
			.device_totals = true, .slabs = 12, .orphans = 2, .bytes = 3 << 20,
			.max_slab_bytes = 64 << 20, .max_user_bytes = 256 << 20,
			.max_total_bytes = 1 << 30, .max_user_orphans = 64,
			.params = { { "max_user_orphans", "64" }, { "reader_gid", "-1" },
				    { "odd \"name\"", "tab\there\x01" } },
			.nparams = 3,
		};

		return blamer_status_write_json(&st, stdout) ? 1 : 0;
	}
	fprintf(stderr, "usage: mkheap DIR dead PID START SCALE | corrupt PID START | live SCALE"
		" | live-down[-metrics] SCALE | - device-status | DIR end CODE|abort | DIR empty N [BYTES [PID]]"
		" | DIR max PID START [PERCENT] | DIR twin-units PID START | DIR metrics\n");
	return 2;
}
