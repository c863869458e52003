// SPDX-License-Identifier: MIT
/*
 * fleet-worker N FIRST: a master that defines the service's metrics and
 * runs N short-lived workers one after the other, numbered FIRST ..
 * FIRST + N - 1, then ends without closing (its heap stays, dead). Worker
 * k, through handles its master made before the fork:
 *   - adds 1 to jobs_total five times and (k % 7 + 1) / 10 to
 *     work_seconds_total five times (a double: 0.1 + 0.1 + 0.1 is not 0.3);
 *   - observes (k % 5) / 4 in job_seconds (buckets 0.25, 0.5, 1);
 *   - sets queue_depth (a MAX gauge) to k;
 * and ends in one of four ways, by k % 4: exit(0) without closing,
 * blamer_close() then exit(0) (its heap is left for the exporter), abort(),
 * _exit(3). The master records each with blamer_process_exited(), which
 * must not remove a heap an exporter has yet to fold.
 *
 * fleet-worker paths N FIRST: N attribution paths (the bound on a uid's
 * bytes in the remainder).
 *
 * fleet-worker check FILE M: whether the exposition in FILE shows
 * exactly what workers 0 .. M-1 added (a line on what differs, status 1):
 * selftests/fleet/check.py's test where there is no Python (the VM). A
 * counter of doubles is the correctly rounded exact sum of each worker's
 * own sum: compared with ==, as every count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <blamer.h>

static struct blamer_series *series(const struct blamer_metric_def *d)
{
	struct blamer_series *s = blamer_metric_series(blamer_metric_define(NULL, d), NULL, NULL, 0);

	if (!s) {
		fprintf(stderr, "fleet-worker: %s\n", blamer_errmsg());
		exit(1);
	}
	return s;
}

/* The value of the sample @name{...} of @text (with le="@le" if @le;
 * its other labels aside), or NaN. */
static double sample(const char *text, const char *name, const char *le)
{
	size_t n = strlen(name);
	char line[1024], want[64];
	const char *l, *nl;

	snprintf(want, sizeof(want), "le=\"%s\"", le ? le : "");
	for (l = text; *l; l = nl + 1) {
		nl = strchr(l, '\n');
		if (!nl)
			break;
		snprintf(line, sizeof(line), "%.*s", (int)(nl - l), l);
		if (line[0] == '#' || strncmp(line, name, n) || (line[n] != '{' && line[n] != ' ') ||
		    (le && !strstr(line, want)))
			continue;
		return strtod(strrchr(line, ' ') + 1, NULL);
	}
	return __builtin_nan("");
}

static int check(const char *file, long m)
{
	struct blamer_exact_sum work = { 0 }, obs = { 0 };
	double b[4] = { 0 }, want, got;
	static char text[1 << 20];
	size_t len;
	FILE *f = fopen(file, "r");
	long k;
	int i, bad = 0;

	if (!f)
		return 2;
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[len] = '\0';
	for (k = 0; k < m; k++) {
		double v = 0, o = (double)(k % 5) / 4;

		for (i = 0; i < 5; i++)
			v += (double)(k % 7 + 1) / 10;
		blamer_exact_sum_add(&work, v);
		blamer_exact_sum_add(&obs, o);
		b[0] += o <= 0.25;
		b[1] += o <= 0.5;
		b[2] += o <= 1;
		b[3] += 1;
	}
#define WANT(name, le, value) do { want = (value); got = sample(text, name, le); \
		if (got != want) { printf("%s%s%s: %.17g, want %.17g; ", name, le ? " le=" : "", \
					  le ? le : "", got, want); bad = 1; } } while (0)
	WANT("jobs_total", NULL, 5.0 * m);
	WANT("work_seconds_total", NULL, blamer_exact_sum_value(&work));
	WANT("job_seconds_bucket", "0.25", b[0]);
	WANT("job_seconds_bucket", "0.5", b[1]);
	WANT("job_seconds_bucket", "1", b[2]);
	WANT("job_seconds_bucket", "+Inf", b[3]);
	WANT("job_seconds_count", NULL, (double)m);
	WANT("job_seconds_sum", NULL, blamer_exact_sum_value(&obs));
	WANT("queue_depth", NULL, (double)(m - 1));
#undef WANT
	if (bad)
		putchar('\n');
	return bad;
}

int main(int argc, char **argv)
{
	static const double bounds[] = { 0.25, 0.5, 1 };
	const struct blamer_metric_def jd = { .name = "jobs_total", .kind = BLAMER_METRIC_COUNTER };
	const struct blamer_metric_def wd = { .name = "work_seconds_total",
					      .kind = BLAMER_METRIC_COUNTER,
					      .base = BLAMER_BASE_SECONDS };
	const struct blamer_metric_def hd = { .name = "job_seconds", .kind = BLAMER_METRIC_HISTOGRAM,
					      .base = BLAMER_BASE_SECONDS, .bounds = bounds,
					      .nbounds = 3 };
	const struct blamer_metric_def qd = { .name = "queue_depth", .kind = BLAMER_METRIC_GAUGE,
					      .gauge_mode = BLAMER_GAUGE_MAX };
	struct blamer_series *jobs, *work, *job, *depth;
	long n, first, k;
	int i;

	if (argc == 4 && !strcmp(argv[1], "check"))
		return check(argv[2], atol(argv[3]));
	/* hold S [ROUTE]: a writer that adds 1 to jobs_total and lives S
	 * seconds; with ROUTE, its jobs_total has a label (route=ROUTE): a
	 * definition other than the workers' */
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "hold")) {
		static const char *const route[] = { "route" };
		struct blamer_metric_def rd = jd;
		const char *v[1] = { argv[argc - 1] };

		if (!blamer_default())
			return 1;
		if (argc == 4) {
			rd.labels = route;
			rd.nlabels = 1;
		}
		blamer_counter_add(blamer_metric_series(blamer_metric_define(NULL, &rd),
							argc == 4 ? v : NULL, NULL, 0), 1);
		sleep((unsigned int)atoi(argv[2]));
		return 0;
	}
	/* many N FIRST: a writer whose label_total{k} has N series, k=vFIRST
	 * .. v(FIRST+N-1), each adding 1 + (its number mod 7) (the fold's
	 * lookups, with heaps that choose many label values) */
	if (argc == 4 && !strcmp(argv[1], "many")) {
		static const char *const key[] = { "k" };
		const struct blamer_metric_def md = { .name = "label_total", .kind = BLAMER_METRIC_COUNTER,
						      .labels = key, .nlabels = 1 };
		struct blamer_metric *m;
		char v[32];
		const char *vals[1] = { v };

		if (!blamer_default() || !(m = blamer_metric_define(NULL, &md)))
			return 1;
		for (k = atol(argv[3]); k < atol(argv[3]) + atol(argv[2]); k++) {
			snprintf(v, sizeof(v), "v%ld", k);
			blamer_counter_add(blamer_metric_series(m, vals, NULL, 0), 1 + (double)(k % 7));
		}
		return 0;
	}
	/* paths N FIRST: a writer with N attribution paths of depth 2, path
	 * k = (1, k) for k = FIRST .. FIRST+N-1, each adding 1 + (k mod 7)
	 * cpu_ns (the fold's bound on a uid's bytes in the state) */
	if (argc == 4 && !strcmp(argv[1], "paths")) {
		const uint32_t unit = BLAMER_UNIT_CPU_NS;
		struct blamer *b = blamer_default();
		uint64_t ids[2] = { 1, 0 };
		struct blamer_path *p;

		for (k = atol(argv[3]); b && k < atol(argv[3]) + atol(argv[2]); k++) {
			ids[1] = 2 + (uint64_t)k;
			if (!(p = blamer_path_get(b, ids, 2, &unit, 1)))
				return 1;
			blamer_path_add(p, 0, 1 + (uint64_t)(k % 7));
		}
		return b ? 0 : 1;
	}
	if (argc != 3 || (n = atol(argv[1])) < 0 || (first = atol(argv[2])) < 0) {
		fprintf(stderr, "usage: fleet-worker N FIRST | hold SECONDS [ROUTE] | many N FIRST | paths N FIRST | check FILE M\n");
		return 2;
	}
	if (!blamer_default()) {
		fprintf(stderr, "fleet-worker: %s\n", blamer_errmsg());
		return 1;
	}
	blamer_set_role(NULL, "master", NULL);
	jobs = series(&jd);
	work = series(&wd);
	job = series(&hd);
	depth = series(&qd);
	for (k = first; k < first + n; k++) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			char inst[24];

			snprintf(inst, sizeof(inst), "%ld", k);
			blamer_set_role(NULL, "worker", inst);
			for (i = 0; i < 5; i++) {
				blamer_counter_add(jobs, 1);
				blamer_counter_add(work, (double)(k % 7 + 1) / 10);
			}
			blamer_histogram_observe(job, (double)(k % 5) / 4);
			blamer_gauge_set(depth, (double)k);
			switch (k % 4) {
			case 0:
				exit(0);
			case 1:
				blamer_reset();
				exit(0);
			case 2:
				abort();
			default:
				_exit(3);
			}
		}
		blamer_process_launched(NULL, pid);
		if (waitpid(pid, &status, 0) != pid)
			return 1;
		blamer_process_exited(NULL, pid, status);
	}
	blamer_abandon(blamer_default());
	return 0;
}
