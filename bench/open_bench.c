// SPDX-License-Identifier: MIT
/*
 * open_bench: what blamer_open() (and blamer_close()) cost a writer on
 * the dir backend next to N dead heaps, N = 100 and 10,000 (or the Ns
 * given): each round a new process (fork, as a service starts a worker)
 * opens a context in the directory, closes it and exits; its CPU time
 * (user + system, from wait4()) and wall time are taken, rounds of the
 * two directories interleaved, medians of 11. The dead heaps are one
 * empty slab file each (nothing of them is read: what costs is looking
 * at them), kept by BLAMER_DIR_MAX_DEAD past N; before the rounds the
 * directories are trimmed until every one of them is found dead (a
 * steady state: what a writer pays once the pile is there). It also says
 * how many dead heaps the first heap made next to them looked at.
 *
 *   open_bench [N...]
 *   open_bench --pile N     the wall time to make N dead heaps in one
 *                           directory, one process after another (each
 *                           opens a context and _exit()s without closing
 *                           it), the dead kept (BLAMER_DIR_MAX_DEAD)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "blamer.h"
#include "stats.h"

#define ROUNDS	11

static char dirs[8][64];

/* One writer's life in @dir: open, close, exit. CPU and wall seconds. */
static int one_open(const char *dir, double *cpu, double *wall)
{
	double t0 = bench_seconds(CLOCK_MONOTONIC);
	struct rusage ru;
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		struct blamer_config c = { .backend = BLAMER_BACKEND_DIR, .dir = dir,
					   .slab_size = 65536, .max_slabs = 2,
					   .flags = BLAMER_OPEN_NO_MODULES };
		struct blamer *b;

		if (blamer_open(&c, &b))
			_exit(1);
		blamer_close(b);
		_exit(0);
	}
	if (pid < 0 || wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	*wall = bench_seconds(CLOCK_MONOTONIC) - t0;
	*cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	return 0;
}

/* Dead heaps in @dir: 0 of them found dead (write bits off) so far. */
static long found_dead(const char *dir, long *all)
{
	char path[512];
	struct dirent *de;
	struct stat st;
	long n = 0;
	DIR *d = opendir(dir);

	*all = 0;
	while (d && (de = readdir(d))) {
		if (!strstr(de->d_name, ".slab"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st))
			continue;
		++*all;
		n += !(st.st_mode & 0222);
	}
	if (d)
		closedir(d);
	return n;
}

static void rm_dir(const char *dir)
{
	char path[512];
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* N writers, one after another, each leaving its heap dead. */
static int pile(long n)
{
	char dir[64] = "/dev/shm/blamer-opile.XXXXXX";
	double t0, t1;
	long i;

	if (!mkdtemp(dir))
		return 1;
	t0 = bench_seconds(CLOCK_MONOTONIC);
	for (i = 0; i < n; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			struct blamer_config c = { .backend = BLAMER_BACKEND_DIR, .dir = dir,
						   .slab_size = 65536, .max_slabs = 2,
						   .flags = BLAMER_OPEN_NO_MODULES };
			struct blamer *b;

			_exit(blamer_open(&c, &b) ? 1 : 0);	/* dead, not closed */
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
		if (i + 1 == n / 10 || i + 1 == n) {
			t1 = bench_seconds(CLOCK_MONOTONIC);
			printf("%ld dead heaps made in %.1f s (%.2f ms each)\n", i + 1, t1 - t0,
			       (t1 - t0) * 1e3 / (double)(i + 1));
			fflush(stdout);
		}
	}
	rm_dir(dir);
	return 0;
}

int main(int argc, char **argv)
{
	long ns[8] = { 100, 10000 }, all;
	int nn = 2, i, k, r;
	double cpu[8][ROUNDS], wall[8][ROUNDS];
	struct timespec old[2];

	if (argc > 2 && !strcmp(argv[1], "--pile")) {
		setenv("BLAMER_DIR_MAX_DEAD", "1000000", 1);
		setenv("BLAMER_DIR_MAX_DEAD_BYTES", "16G", 1);
		printf("# load average: ");
		fflush(stdout);
		if (system("cut -d' ' -f1-3 /proc/loadavg")) {
		}
		return pile(atol(argv[2]));
	}
	if (argc > 1) {
		for (nn = 0; nn + 1 < argc && nn < 8; nn++)
			ns[nn] = atol(argv[nn + 1]);
	}
	setenv("BLAMER_DIR_MAX_DEAD", "1000000", 1);
	setenv("BLAMER_DIR_MAX_DEAD_BYTES", "1G", 1);
	clock_gettime(CLOCK_REALTIME, &old[0]);
	old[0].tv_sec -= 60;
	old[1] = old[0];
	printf("# load average: ");
	fflush(stdout);
	if (system("cut -d' ' -f1-3 /proc/loadavg")) {
	}
	for (i = 0; i < nn; i++) {
		int steps = 0;
		double c1, w1;

		snprintf(dirs[i], sizeof(dirs[i]), "/dev/shm/blamer-obench.XXXXXX");
		if (!mkdtemp(dirs[i]))
			return 1;
		for (k = 0; k < ns[i]; k++) {
			char path[512];
			int fd;

			snprintf(path, sizeof(path), "%s/%ld-1000.0.slab", dirs[i], 5000000L + k);
			fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
			if (fd < 0 || futimens(fd, old))
				return 1;
			close(fd);
		}
		if (one_open(dirs[i], &c1, &w1))
			return 1;
		printf("# %ld dead heaps: the first heap made next to them found %ld dead (%.1f ms of CPU)\n",
		       ns[i], found_dead(dirs[i], &all), c1 * 1e3);
		while (found_dead(dirs[i], &all) < ns[i] && steps++ < 100000)
			if (one_open(dirs[i], &c1, &w1))
				return 1;
		printf("# %ld dead heaps: all found dead after %d more\n", ns[i], steps);
	}
	for (r = 0; r < ROUNDS; r++)
		for (i = 0; i < nn; i++)
			if (one_open(dirs[i], &cpu[i][r], &wall[i][r]))
				return 1;
	printf("dead heaps   open+close CPU   wall     (median of %d, a process each)\n", ROUNDS);
	for (i = 0; i < nn; i++) {
		double c = bench_median(cpu[i], ROUNDS), w = bench_median(wall[i], ROUNDS);

		printf("%10ld   %9.3f ms   %7.3f ms\n", ns[i], c * 1e3, w * 1e3);
	}
	for (i = 0; i < nn; i++)
		rm_dir(dirs[i]);
	return 0;
}
