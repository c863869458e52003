// SPDX-License-Identifier: MIT
/*
 * reader_bench: what a snapshot of N dead dir heaps costs, against what
 * it must at least cost (a memcpy of the bytes the heaps use), and how it
 * grows with N (Documentation/performance.rst, "Reader").
 *
 * One realistic heap is written by the real library in a child that
 * then dies without closing it: 16 threads with activity stacks of depth
 * 4, 20 user-data fields, 50 log lines, 30 paths of 2 units (one 1 MiB
 * slab, about 60 KiB of it used). Its file is then copied N times under
 * the names of other (never live) pids: the used bytes written, the rest
 * of the 1 MiB a hole, which the reader never reads either way (it reads
 * up to the slab's freeptr), and which keeps 10,000 heaps at 600 MB of
 * tmpfs instead of 10 GB.
 *
 * For each N: the median CPU time of a full snapshot (BLAMER_READ_DEAD_FULL,
 * one long-lived reader reading every heap), of a snapshot and its
 * Prometheus text as a serving exporter makes them (each dead heap
 * decoded once and kept, BLAMER_READ_KEEP_DEAD, and each process's text
 * made once, blamer_prom_cache), the time of
 * `blamer export --prometheus --dead` as a command, and the memcpy of the
 * bytes used; then time(10N)/time(N). Given PYTHON SCRIPT (a python3
 * with prometheus_client and bench/prom_mp.py: reader_bench BLAMER
 * [PYTHON SCRIPT [MAX_N]], as make bench-reader runs it) the same N
 * processes' counters are collected by prometheus_client's
 * MultiProcessCollector.
 *
 * Then N = 10 ... 1,000 live heaps: N processes running with the library
 * (READER_BENCH_LIVE=N sets the top, 0 skips them), read back to back and
 * 1.1 s apart (a long-lived reader reads a watched writer's name again
 * once a second, lib/reader/alive.c).
 *
 *   reader_bench BLAMER [PYTHON PROM_MP_PY] [MAX_N]
 *
 * READER_BENCH_KEEP=1 keeps the directory of the largest N (its path is
 * printed), to profile a command on.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blamer.h"
#include "heap_format.h"
#include "heap_gen.h"
#include "stats.h"

#define FAKE_PID	2000000000	/* above any pid_max: never live */

/*
 * CPU time (user + system) of this process: on a machine whose other
 * work takes the CPUs from us (2 cores, load average 10 while this was
 * written) wall time mostly measures the waiting. Every figure of a row
 * is CPU time, the commands' and Python's included.
 */
static double now(void)
{
	return bench_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

/* The template heap's one slab file in @dir: its name in @name. */
static int find_slab(const char *dir, char *path, size_t len)
{
	char cmd[600];
	FILE *f;
	int ok;

	snprintf(cmd, sizeof(cmd), "ls %s/*.0.slab 2>/dev/null", dir);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	ok = fgets(path, (int)len, f) != NULL;
	pclose(f);
	if (!ok)
		return -1;
	path[strcspn(path, "\n")] = '\0';
	return 0;
}

/* Writes @n copies of the slab (@used bytes of it, @size in all) into @dir. */
static int copy_heaps(const char *dir, const void *slab, size_t used, size_t size, int n)
{
	char path[600];
	int i, fd;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%d-%d.0.slab", dir, FAKE_PID + i, 1000 + i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, slab, used) != (ssize_t)used || ftruncate(fd, (off_t)size)) {
			perror(path);
			return -1;
		}
		close(fd);
	}
	return 0;
}

static void rm_rf(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "reader_bench: could not remove %s\n", dir);
}

/* ---- measurements ---- */

struct result {
	int n;
	double snap, prom, cmd, copy, py, blame, dump;	/* seconds */
	double ratio;	/* copy / snapshot, the median of the rounds' */
	uint64_t used;
	int health_ok;
};

/*
 * Median time of a snapshot of @dir with one long-lived reader: a full
 * one, or with @prom what `blamer export --prometheus --dead` decodes,
 * written out as it does (to /dev/null).
 */
/*
 * The copy the reader is set against: @n blocks of @len bytes (the
 * bytes the heaps use) from @n distinct places to @n others, the least
 * any reader must spend. Timed in the same rounds as the snapshots,
 * interleaved (snapshot, copy, snapshot, copy...), so that both see the
 * same machine: the ratio is the median of the per-round ratios.
 */
struct copy_job {
	uint8_t *from, *to;
	size_t len;
	int n;
	double secs, ratio;	/* median copy time; median copy/snapshot */
};

static int copy_job_init(struct copy_job *j, const uint8_t *src, size_t len, int n)
{
	int k;

	j->from = malloc((size_t)n * len);
	j->to = malloc((size_t)n * len);
	j->len = len;
	j->n = n;
	if (!j->from || !j->to)
		return -1;
	for (k = 0; k < n; k++)
		memcpy(j->from + (size_t)k * len, src, len);
	memset(j->to, 1, (size_t)n * len);	/* faulted in, as the reader's reused buffer */
	return 0;
}

static double copy_job_run(struct copy_job *j)
{
	double t0 = now();
	int k;

	for (k = 0; k < j->n; k++)
		memcpy(j->to + (size_t)k * j->len, j->from + (size_t)k * j->len, j->len);
	__asm__ volatile("" : : "r"(j->to) : "memory");
	return now() - t0;
}

static void copy_job_free(struct copy_job *j)
{
	free(j->from);
	free(j->to);
}

static double time_snapshots(const char *dir, int n, uint64_t *used, int *ok, bool prom,
			     struct copy_job *cj, unsigned int pause_ms)
{
	double c[21], ratio[21];
	struct blamer_reader_opts o = {
		.backend = BLAMER_BACKEND_DIR, .dir = dir,
		/* prom: as `export --listen` reads (tools/blamer/cmd_export.c) */
		.flags = BLAMER_READ_DEAD_FULL |
			 (prom ? BLAMER_READ_NO_USERDATA | BLAMER_READ_NO_MODULES |
				 BLAMER_READ_NO_LOG | BLAMER_READ_NO_CHILDREN |
				 BLAMER_READ_NO_STACKS | BLAMER_READ_NO_TOTALS |
				 BLAMER_READ_KEEP_DEAD : 0),
	};
	FILE *null = fopen("/dev/null", "w");
	struct blamer_prom_cache *pc = prom ? blamer_prom_cache_new() : NULL;
	char *text = NULL;
	size_t tlen, tcap = 0;
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	double t[21];
	int rounds = n >= 10000 || pause_ms ? 5 : n >= 1000 ? 11 : 21, i;
	size_t k;
	char e[256];

	r = blamer_reader_open(&o, e, sizeof(e));
	if (!r || !null) {
		fprintf(stderr, "reader_bench: %s\n", e);
		return -1;
	}
	for (i = -1; i < rounds; i++) {	/* one warm-up */
		double t0;

		if (pause_ms)
			usleep(pause_ms * 1000u);
		t0 = now();

		if (blamer_reader_snapshot(r, &s, e, sizeof(e))) {
			fprintf(stderr, "reader_bench: %s\n", e);
			blamer_reader_close(r);
			return -1;
		}
		if (prom && !blamer_snapshot_prometheus_text_cached(s, pc, &text, &tlen, &tcap))
			fwrite(text, 1, tlen, null);
		if (i >= 0)
			t[i] = now() - t0;
		if (i >= 0 && cj) {
			c[i] = copy_job_run(cj);
			ratio[i] = c[i] / t[i];
		}
		*used = 0;
		*ok = 0;
		for (k = 0; k < s->nprocs; k++) {
			*used += s->procs[k].used;
			*ok += s->procs[k].health == BLAMER_HEALTH_OK;
		}
		blamer_snapshot_free(s);
	}
	blamer_reader_close(r);
	blamer_prom_cache_free(pc);
	free(text);
	fclose(null);
	if (cj) {
		cj->secs = bench_median(c, rounds);
		cj->ratio = bench_median(ratio, rounds);
	}
	return bench_median(t, rounds);
}

/* Median CPU time of a command (user + system), output to /dev/null. */
static double time_command(char *const *argv, int rounds)
{
	struct rusage ru;
	double t[11];
	int i, st;

	for (i = 0; i < rounds; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);

			dup2(fd, 1);
			execv(argv[0], argv);
			_exit(127);
		}
		if (pid < 0 || wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			return -1;
		t[i] = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	}
	return bench_median(t, rounds);
}

/* prometheus_client over @n processes' files: the seconds it reports. */
static double time_python(const char *py, const char *script, const char *dir, int n)
{
	char cmd[1200], line[128];
	double secs = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s %s %s %d %d %d", py, script, dir, n, GEN_PATHS, GEN_FIELDS);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		sscanf(line, "collect+generate_latest %lf", &secs);
	pclose(f);
	return secs;
}

/*
 * N live dir heaps: N processes running with the real library, each
 * with its one heap (read twice, the second read compared with the
 * first; /proc/<pid>/stat read for each), as `blamer top`, blame and dump
 * see a machine's running processes.
 */
static int bench_live(const char *blamer, const uint8_t *slab, size_t used, int max_n)
{
	char dir[64];
	int n, prev_n = 0;
	double prev = 0;

	printf("# live: N processes running with the library, their dir heaps read in full\n"
	       "# (1 s apart: a snapshot 1.1 s after the last, as a scraping exporter takes them)\n");
	printf("# %-6s %10s %10s %8s %10s %12s %12s\n", "N", "snapshot", "memcpy", "memcpy/",
	       "1 s apart", "blame", "dump --json");
	for (n = 10; n <= max_n; n *= 10) {
		char *blame[] = { (char *)blamer, "--dir", dir, "blame", NULL };
		char *dump[] = { (char *)blamer, "--dir", dir, "dump", "--json", NULL };
		double snap = 0, apart = 0, copy = 0, ratio = 0, bl = 0, du = 0;
		pid_t *pids = calloc((size_t)n, sizeof(*pids));
		int pfd[2], i, ready = 0, ok = 0;
		uint64_t u = 0;
		char c;

		snprintf(dir, sizeof(dir), "/dev/shm/blamer-rbench-live.XXXXXX");
		if (!pids || !mkdtemp(dir) || pipe(pfd))
			return -1;
		for (i = 0; i < n; i++) {
			pids[i] = fork();
			if (pids[i] == 0) {
				close(pfd[0]);
				gen_heap(BLAMER_BACKEND_DIR, dir, pfd[1]);
			}
			if (pids[i] < 0)
				break;
		}
		close(pfd[1]);
		while (ready < i && read(pfd[0], &c, 1) == 1)
			ready++;
		close(pfd[0]);
		if (ready == n) {
			struct copy_job cj;

			if (copy_job_init(&cj, slab, used, n))
				return -1;
			snap = time_snapshots(dir, n, &u, &ok, false, &cj, 0);
			apart = time_snapshots(dir, n, &u, &ok, false, NULL, 1100);
			copy = cj.secs;
			ratio = cj.ratio;
			copy_job_free(&cj);
			bl = time_command(blame, 5);
			du = time_command(dump, 5);
		}
		for (i = 0; i < n && pids[i] > 0; i++)
			kill(pids[i], SIGKILL);
		for (i = 0; i < n && pids[i] > 0; i++)
			waitpid(pids[i], NULL, 0);
		free(pids);
		rm_rf(dir);
		if (ready != n) {
			fprintf(stderr, "reader_bench: %d of %d live writers started\n", ready, n);
			return -1;
		}
		printf("  %-6d %7.2f ms %7.2f ms %6.0f %% %7.2f ms %9.1f ms %9.1f ms", n, snap * 1e3,
		       copy * 1e3, 100 * ratio, apart * 1e3, bl * 1e3, du * 1e3);
		if (prev_n)
			printf("   time(%d)/time(%d) %.1f", n, prev_n, snap / prev);
		printf("\n");
		if (ok != n)
			printf("  (!) %d of %d heaps read whole\n", ok, n);
		fflush(stdout);
		prev = snap;
		prev_n = n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *blamer = argc > 1 ? argv[1] : "blamer";
	const char *py = argc > 3 ? argv[2] : NULL, *script = argc > 3 ? argv[3] : NULL;
	int max_n = argc > 4 ? atoi(argv[4]) : 10000;
	/* live heaps are processes: 1,000 of them by default */
	int max_live = getenv("READER_BENCH_LIVE") ? atoi(getenv("READER_BENCH_LIVE")) :
		       max_n < 1000 ? max_n : 1000;
	char tmpl[64], dir[64], pydir[64], slabpath[600];
	struct result res[4];
	int nres = 0, n, st;
	uint8_t *slab;
	struct stat sb;
	size_t used;
	pid_t pid;
	int fd;

	snprintf(tmpl, sizeof(tmpl), "/dev/shm/blamer-rbench.XXXXXX");
	if (!mkdtemp(tmpl))
		return 1;
	pid = fork();
	if (pid == 0)
		gen_heap(BLAMER_BACKEND_DIR, tmpl, -1);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) ||
	    find_slab(tmpl, slabpath, sizeof(slabpath))) {
		fprintf(stderr, "reader_bench: the template heap was not written\n");
		rm_rf(tmpl);
		return 1;
	}
	fd = open(slabpath, O_RDONLY);
	if (fd < 0 || fstat(fd, &sb))
		return 1;
	slab = malloc((size_t)sb.st_size);
	if (!slab || read(fd, slab, (size_t)sb.st_size) != sb.st_size)
		return 1;
	close(fd);
	rm_rf(tmpl);
	/* the bytes the writer allocated: the slab header's freeptr */
	used = ((const struct blamer_slab_header *)slab)->freeptr;
	if (used > (size_t)sb.st_size)
		return 1;

	printf("# reader: N dead dir heaps, each one 1 MiB slab written by the library\n");
	printf("# (%d threads x depth %d, %d fields, %d log lines, %d paths x 2 units)\n",
	       GEN_THREADS, GEN_DEPTH, GEN_FIELDS, GEN_LOGS, GEN_PATHS);
	printf("# CPU time (user + system), medians; export: snapshot + Prometheus text,\n"
	       "# in a long-lived reader (lib) and as the command `blamer export --prometheus\n"
	       "# --dead` (cmd, exec included); prometheus_client: MultiProcessCollector +\n"
	       "# generate_latest over the same N processes' counters (interpreter start\n"
	       "# not included)\n");
	printf("# %-6s %10s %10s %10s %8s %10s %10s %10s %7s %7s\n", "N", "used/heap",
	       "snapshot", "memcpy", "memcpy/", "export", "export", "prom.", "py/", "py/");
	printf("# %-6s %10s %10s %10s %8s %10s %10s %10s %7s %7s\n", "", "", "", "used",
	       "snapshot", "lib", "cmd", "client", "lib", "cmd");
	for (n = 10; n <= max_n; n *= 10) {
		struct result *r = &res[nres++];
		struct copy_job cj;
		char *cmd[] = { (char *)blamer, "--dir", dir, "export", "--prometheus", "--dead",
				NULL };
		char *blame[] = { (char *)blamer, "--dir", dir, "blame", "--dead", NULL };
		char *dump[] = { (char *)blamer, "--dir", dir, "dump", "--json", NULL };

		snprintf(dir, sizeof(dir), "/dev/shm/blamer-rbench.XXXXXX");
		if (!mkdtemp(dir))
			return 1;
		r->n = n;
		if (copy_heaps(dir, slab, used, (size_t)sb.st_size, n))
			return 1;
		if (copy_job_init(&cj, slab, used, n))
			return 1;
		r->snap = time_snapshots(dir, n, &r->used, &r->health_ok, false, &cj, 0);
		/* a dead heap is kept once its files are a second old (lib/reader/dir.c) */
		sleep(2);
		r->prom = time_snapshots(dir, n, &r->used, &r->health_ok, true, NULL, 0);
		r->copy = cj.secs;
		r->ratio = cj.ratio;
		copy_job_free(&cj);
		r->cmd = time_command(cmd, n >= 10000 ? 3 : 5);
		r->blame = time_command(blame, n >= 10000 ? 3 : 5);
		r->dump = time_command(dump, n >= 10000 ? 3 : 5);
		if (getenv("READER_BENCH_KEEP") && n * 10 > max_n)
			printf("# kept %s\n", dir);	/* to profile a command on */
		else
			rm_rf(dir);
		r->py = -1;
		if (py) {
			snprintf(pydir, sizeof(pydir), "/dev/shm/blamer-rbench-py.XXXXXX");
			if (mkdtemp(pydir)) {
				r->py = time_python(py, script, pydir, n);
				rm_rf(pydir);
			}
		}
		printf("  %-6d %6.1f KiB %7.2f ms %7.2f ms %6.0f %% %7.1f ms %7.1f ms %7.1f ms %6.1fx %6.1fx\n",
		       n, (double)used / 1024, r->snap * 1e3, r->copy * 1e3,
		       100 * r->ratio, r->prom * 1e3, r->cmd * 1e3, r->py * 1e3,
		       r->py > 0 ? r->py / r->prom : 0, r->py > 0 ? r->py / r->cmd : 0);
		if (r->health_ok != n)
			printf("  (!) %d of %d heaps read whole\n", r->health_ok, n);
		fflush(stdout);
	}
	printf("# commands over the same heaps (CPU time, medians):\n");
	for (n = 0; n < nres; n++)
		printf("  %-6d blame --dead %7.1f ms, dump --json %7.1f ms\n", res[n].n,
		       res[n].blame * 1e3, res[n].dump * 1e3);
	for (n = 1; n < nres; n++)
		printf("  time(%d)/time(%d): snapshot %.1f, export lib %.1f, cmd %.1f (10 is linear)\n",
		       res[n].n, res[n - 1].n, res[n].snap / res[n - 1].snap,
		       res[n].prom / res[n - 1].prom, res[n].cmd / res[n - 1].cmd);
	if (max_live && bench_live(blamer, slab, used, max_live))
		return 1;
	free(slab);
	return 0;
}
