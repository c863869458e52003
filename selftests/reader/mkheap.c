// SPDX-License-Identifier: MIT
/*
 * Write fixture heaps into a dir-backend directory, for the CLI tests:
 *   mkheap DIR dead PID START SCALE     a standard heap of a dead process
 *   mkheap DIR corrupt PID START        a standard heap whose list loops
 *   mkheap DIR live SCALE               a heap for this process; prints
 *                                       the pid, then waits to be killed
 *   mkheap - device-status              the JSON of a device's status, made
 *                                       up, as blamer status --json writes it
 *                                       (the host has no device to ask)
 *   mkheap DIR end CODE|abort           a real writer (the library) that
 *                                       pushes, logs, prints its pid, then
 *                                       exit(CODE)s without blamer_close()
 *                                       or abort()s
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
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

/* Exits rather than write a heap no reader would take for this process. */
static uint64_t my_start(void)
{
	uint64_t st = fx_self_start_ns();

	if (!st)
		exit(1);
	return st;
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

	if (argc >= 6 && !strcmp(argv[2], "dead")) {
		fx_standard(&h, atoll(argv[3]), atoll(argv[4]), strtoull(argv[5], NULL, 0));
		return fx_write_dir(&h, argv[1], atoll(argv[3]), strtoull(argv[4], NULL, 0)) ? 1 : 0;
	}
	if (argc >= 5 && !strcmp(argv[2], "corrupt")) {
		fx_standard(&h, atoll(argv[3]), atoll(argv[4]), 1);
		/* the 5th record points back at the 2nd */
		{
			blamer_ref r = ((struct blamer_block *)fx_at(&h, BLAMER_LIST_HEAD_REF))->next;
			blamer_ref second;
			int i;

			r = ((struct blamer_block *)fx_at(&h, r))->next;
			second = r;
			for (i = 0; i < 3; i++)
				r = ((struct blamer_block *)fx_at(&h, r))->next;
			((struct blamer_block *)fx_at(&h, r))->next = second;
		}
		return fx_write_dir(&h, argv[1], atoll(argv[3]), strtoull(argv[4], NULL, 0)) ? 1 : 0;
	}
	if (argc >= 4 && !strcmp(argv[2], "live")) {
		fx_standard(&h, getpid(), (int64_t)my_start(), strtoull(argv[3], NULL, 0));
		if (fx_write_dir(&h, argv[1], getpid(), my_start()))
			return 1;
		printf("%d\n", (int)getpid());
		fflush(stdout);
		pause();
		return 0;
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
		" | - device-status | DIR end CODE|abort | DIR metrics\n");
	return 2;
}
