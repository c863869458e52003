// SPDX-License-Identifier: MIT
/*
 * module_bench: what /dev/blamer itself costs, run as root in the VM
 * with the module loaded (bench/vm-bench.sh; Documentation/performance.rst,
 * "Module"). Static, the uapi header only.
 *
 * 1. Creating and mapping a slab (BLAMER_IOC_CREATE, mmap, close; then
 *    munmap and BLAMER_IOC_RELEASE) against the same with an anonymous
 *    file (memfd_create, ftruncate, mmap, close; munmap), for three
 *    sizes, each with no page touched and with every page written once.
 *    Two kinds of slab: the default, whose pages are allocated at first
 *    touch as a memfd's are, and BLAMER_CREATE_POPULATE, whose pages are
 *    all allocated and zeroed at creation. Interleaved rounds, the median
 *    of the per-round ratios to the memfd.
 * 2. BLAMER_IOC_LIST with N = 1,000, 10,000 and 100,000 live slabs (one
 *    page each, created by this process): the median time of one LIST
 *    of them all, time(10N)/time(N), and what creating them cost per
 *    slab at each step (a cost per create growing with N is a scan).
 * 3. Holes: a reader reading every page of an untouched 1 MiB slab (each
 *    maps the shared hole page, allocating nothing) against reading the
 *    same pages once written; and the writer's first write of every
 *    page after a reader mapped them as holes (each takes the hole out
 *    of the reader's mapping) against a first write nobody read before.
 * 4. Orphaning beside the account's orphans in other pid namespaces: a
 *    process with 1,500 slabs killed, its namespace at max_user_orphans
 *    (64 here) so that each orphaning evicts, timed from the kill to a
 *    LIST that shows the result (LIST waits for the reaper); with no
 *    other orphans, then beside 6,000 kept in namespaces of their own
 *    (64 each, as many namespaces as that takes). The ratio is 1 when an
 *    orphaning looks at its own namespace's orphans only.
 *
 * Wall time (CLOCK_MONOTONIC) in a guest with nothing else running;
 * under TCG the absolute figures are emulated time, the ratios of one
 * boot are the meaningful part.
 *
 *   module_bench [MAX_SLABS]     in the guest
 *   module_bench --list N        only part 2 (also with a module that
 *                                knows no BLAMER_CREATE_POPULATE)
 *   module_bench --orphans [BURST [BESIDE]]  only part 4
 *   module_bench --machine       the host's syscall and memcpy, to compare
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/blamer.h>

#include "blamer.h"
#include "stats.h"

#define ROUNDS	11

static int dev;

static double now(void)
{
	return bench_seconds(CLOCK_MONOTONIC);
}

static void die(const char *what)
{
	fprintf(stderr, "module_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void touch(volatile uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += 4096)
		p[i] = 1;
}

static void slab_once(size_t len, int touched, uint32_t flags)
{
	struct blamer_create c = { .length = len, .flags = flags };
	struct blamer_release r = { 0 };
	void *p;

	if (ioctl(dev, BLAMER_IOC_CREATE, &c))
		die("BLAMER_IOC_CREATE");
	p = mmap(NULL, c.length, PROT_READ | PROT_WRITE, MAP_SHARED, c.fd, 0);
	if (p == MAP_FAILED)
		die("mmap of a slab");
	close(c.fd);
	if (touched)
		touch(p, c.length);
	munmap(p, c.length);
	r.id = c.id;
	if (ioctl(dev, BLAMER_IOC_RELEASE, &r))
		die("BLAMER_IOC_RELEASE");
}

static void memfd_once(size_t len, int touched)
{
	int fd = memfd_create("bench", MFD_CLOEXEC);
	void *p;

	if (fd < 0 || ftruncate(fd, (off_t)len))
		die("memfd_create");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap of a memfd");
	close(fd);
	if (touched)
		touch(p, len);
	munmap(p, len);
}

static void create_vs_memfd(void)
{
	static const size_t sizes[] = { 4096, 64 << 10, 1 << 20 };
	size_t s;
	int touched;

	printf("# create + map a slab vs memfd_create + ftruncate + mmap (then unmap, release);\n"
	       "# lazy: pages at first touch (the default), populate: BLAMER_CREATE_POPULATE\n");
	printf("# %-9s %-9s %11s %11s %11s %8s %8s\n", "size", "pages", "lazy", "populate",
	       "memfd", "lazy/", "popul./");
	printf("# %-9s %-9s %11s %11s %11s %8s %8s\n", "", "", "", "", "", "memfd", "memfd");
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (touched = 0; touched < 2; touched++) {
			double a[ROUNDS], p[ROUNDS], b[ROUNDS], ra[ROUNDS], rp[ROUNDS];
			int k, i, iters = sizes[s] >= (1 << 20) ? 20 : 100;

			slab_once(sizes[s], touched, 0);	/* warm-up */
			slab_once(sizes[s], touched, BLAMER_CREATE_POPULATE);
			memfd_once(sizes[s], touched);
			for (k = 0; k < ROUNDS; k++) {
				double t0 = now();

				for (i = 0; i < iters; i++)
					slab_once(sizes[s], touched, 0);
				a[k] = (now() - t0) / iters;
				t0 = now();
				for (i = 0; i < iters; i++)
					slab_once(sizes[s], touched, BLAMER_CREATE_POPULATE);
				p[k] = (now() - t0) / iters;
				t0 = now();
				for (i = 0; i < iters; i++)
					memfd_once(sizes[s], touched);
				b[k] = (now() - t0) / iters;
				ra[k] = a[k] / b[k];
				rp[k] = p[k] / b[k];
			}
			printf("  %4zu KiB  %-9s %8.1f us %8.1f us %8.1f us %7.2fx %7.2fx\n",
			       sizes[s] >> 10, touched ? "written" : "untouched",
			       bench_median(a, ROUNDS) * 1e6, bench_median(p, ROUNDS) * 1e6,
			       bench_median(b, ROUNDS) * 1e6, bench_median(ra, ROUNDS),
			       bench_median(rp, ROUNDS));
			fflush(stdout);
		}
	}
}

static void read_pages(const volatile uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += 4096)
		(void)p[i];
}

/* A slab of @len bytes mapped writable at *@w and read-only at *@r. */
static uint64_t two_maps(size_t len, uint8_t **w, uint8_t **r)
{
	struct blamer_create c = { .length = len };
	struct blamer_open o = { 0 };

	if (ioctl(dev, BLAMER_IOC_CREATE, &c))
		die("BLAMER_IOC_CREATE");
	o.id = c.id;
	if (ioctl(dev, BLAMER_IOC_OPEN, &o))
		die("BLAMER_IOC_OPEN");
	*w = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, c.fd, 0);
	*r = mmap(NULL, len, PROT_READ, MAP_SHARED, o.fd, 0);
	if (*w == MAP_FAILED || *r == MAP_FAILED)
		die("mmap of a slab");
	close(c.fd);
	close(o.fd);
	return c.id;
}

static void drop_maps(uint64_t id, size_t len, uint8_t *w, uint8_t *r)
{
	struct blamer_release rel = { .id = id };

	munmap(w, len);
	munmap(r, len);
	if (ioctl(dev, BLAMER_IOC_RELEASE, &rel))
		die("BLAMER_IOC_RELEASE");
}

static void holes(void)
{
	const size_t len = 1 << 20;
	double hr[ROUNDS], pr[ROUNDS], zw[ROUNDS], fw[ROUNDS];
	double rr[ROUNDS], rw[ROUNDS], t0;
	uint8_t *w, *r;
	uint64_t id;
	int k;

	printf("# holes, 1 MiB slabs: a reader's read of every page nobody wrote (the hole\n"
	       "# page) vs of every page once written; the writer's first write of every\n"
	       "# page after a reader mapped them as holes vs with no reader before\n");
	for (k = 0; k < ROUNDS; k++) {
		id = two_maps(len, &w, &r);
		t0 = now();
		read_pages(r, len);
		hr[k] = now() - t0;
		t0 = now();
		touch(w, len);
		zw[k] = now() - t0;
		drop_maps(id, len, w, r);

		id = two_maps(len, &w, &r);
		t0 = now();
		touch(w, len);
		fw[k] = now() - t0;
		t0 = now();
		read_pages(r, len);
		pr[k] = now() - t0;
		drop_maps(id, len, w, r);
		rr[k] = hr[k] / pr[k];
		rw[k] = zw[k] / fw[k];
	}
	printf("  reader: holes %8.1f us, written pages %8.1f us, holes/written %5.2fx\n",
	       bench_median(hr, ROUNDS) * 1e6, bench_median(pr, ROUNDS) * 1e6,
	       bench_median(rr, ROUNDS));
	printf("  writer: after a reader's holes %8.1f us, first write alone %8.1f us, "
	       "ratio %5.2fx\n", bench_median(zw, ROUNDS) * 1e6,
	       bench_median(fw, ROUNDS) * 1e6, bench_median(rw, ROUNDS));
	fflush(stdout);
}

/* The median time of one LIST of every slab into @buf (room for @cap). */
static double time_list(struct blamer_slab_info *buf, uint32_t cap, uint32_t want)
{
	double t[ROUNDS];
	int k;

	for (k = 0; k < ROUNDS; k++) {
		struct blamer_list l = { .info_size = sizeof(*buf), .capacity = cap,
					 .slabs = (uint64_t)(uintptr_t)buf };
		double t0 = now();

		if (ioctl(dev, BLAMER_IOC_LIST, &l))
			die("BLAMER_IOC_LIST");
		t[k] = now() - t0;
		if (l.total < want || l.count != l.total) {
			fprintf(stderr, "module_bench: LIST gave %u of %u slabs\n", l.count, want);
			exit(1);
		}
	}
	return bench_median(t, ROUNDS);
}

static void list_scaling(uint32_t max)
{
	struct blamer_slab_info *buf = calloc(max + 64, sizeof(*buf));
	uint64_t *ids = calloc(max, sizeof(*ids));
	double prev = 0, t0, create;
	uint32_t n = 0, step, have;

	if (!buf || !ids)
		die("calloc");
	memset(buf, 1, (size_t)(max + 64) * sizeof(*buf));	/* faulted in before timing */
	printf("# BLAMER_IOC_LIST of N live slabs of one page (sizeof info %zu bytes)\n",
	       sizeof(*buf));
	printf("# %-7s %12s %14s %16s\n", "N", "LIST", "time(N)/", "create per slab");
	printf("# %-7s %12s %14s %16s\n", "", "", "time(N/10)", "(the last N-N/10)");
	for (step = 1000; step <= max; step *= 10) {
		double t;

		t0 = now();
		for (have = n; n < step; n++) {
			struct blamer_create c = { .length = 4096 };

			if (ioctl(dev, BLAMER_IOC_CREATE, &c))
				die("BLAMER_IOC_CREATE (raise max_user_bytes, max_total_bytes?)");
			close(c.fd);	/* the slab stays: this process owns it */
			ids[n] = c.id;
		}
		create = (now() - t0) / (n - have);
		t = time_list(buf, max + 64, n);
		printf("  %-7u %9.2f ms ", n, t * 1e3);
		if (prev > 0)
			printf("%14.1f", t / prev);
		else
			printf("%14s", "");
		printf(" %13.1f us\n", create * 1e6);
		fflush(stdout);
		prev = t;
	}
	/* The same table, the same moment: LIST of the last 1,000, 10,000
	 * and 100,000 slabs (start_id), interleaved, medians of the ratios.
	 * What grows with the table itself (memory the walk misses in)
	 * is the same for all three. */
	if (n >= 10000) {
		double r1[ROUNDS], r2[ROUNDS], tl[3][ROUNDS];
		uint32_t part[3] = { n / 100, n / 10, n }, k, q;

		for (k = 0; k < ROUNDS; k++) {
			for (q = 0; q < 3; q++) {
				struct blamer_list l = { .info_size = sizeof(*buf),
							 .capacity = max + 64,
							 .slabs = (uint64_t)(uintptr_t)buf,
							 .start_id = ids[n - part[q]] };

				t0 = now();
				if (ioctl(dev, BLAMER_IOC_LIST, &l) || l.count < part[q])
					die("BLAMER_IOC_LIST from an id");
				tl[q][k] = now() - t0;
			}
			r1[k] = tl[1][k] / tl[0][k];
			r2[k] = tl[2][k] / tl[1][k];
		}
		printf("# the same %u slabs listed from an id on (interleaved): the last %u %.2f ms,"
		       " %u %.2f ms, all %.2f ms; time(10N)/time(N) %.1f and %.1f\n", n, part[0],
		       bench_median(tl[0], ROUNDS) * 1e3, part[1], bench_median(tl[1], ROUNDS) * 1e3,
		       bench_median(tl[2], ROUNDS) * 1e3, bench_median(r1, ROUNDS), bench_median(r2, ROUNDS));
	}
	/* released, not left as orphans for what runs next */
	for (have = 0; have < n; have++) {
		struct blamer_release r = { .id = ids[have] };

		if (ioctl(dev, BLAMER_IOC_RELEASE, &r))
			die("BLAMER_IOC_RELEASE");
	}
	free(ids);
	free(buf);
}

#define ORPHANS_KEEP	64
#define ORPHANS_PARAM	"/sys/module/blamer/parameters/max_user_orphans"

static void param_read(const char *path, char *val, int len)
{
	FILE *f = fopen(path, "r");

	if (!f || !fgets(val, len, f) || fclose(f))
		die(path);
}

static void param_write(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(val, f) < 0 || fclose(f))
		die(path);
}

/* In a child: @n slabs of one page, owned by it, then @ready told.
 * Its own open of the device: the parent's creates for the parent. */
static void make_slabs(int n, int ready)
{
	int i, fd = open(BLAMER_DEVICE, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		_exit(1);
	for (i = 0; i < n; i++) {
		struct blamer_create c = { .length = 4096 };

		if (ioctl(fd, BLAMER_IOC_CREATE, &c))
			_exit(1);
		close(c.fd);
	}
	if (write(ready, "", 1) != 1)
		_exit(1);
}

/* A child with @n slabs, killed; seconds until a LIST shows it reaped. */
static double orphan_burst(int n, struct blamer_slab_info *buf, uint32_t cap)
{
	struct blamer_list l = { .info_size = sizeof(*buf), .capacity = cap,
				 .slabs = (uint64_t)(uintptr_t)buf };
	int p[2], status;
	double t0;
	pid_t pid;
	char c;

	if (pipe(p))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		make_slabs(n, p[1]);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		die("the burst's child");
	t0 = now();
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (ioctl(dev, BLAMER_IOC_LIST, &l))
		die("BLAMER_IOC_LIST");
	t0 = now() - t0;
	close(p[0]);
	return t0;
}

/* @n orphans made in a pid namespace of their own. */
static void orphans_in_a_namespace(int n)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (!pid) {
		int p[2];
		pid_t inner;

		if (unshare(CLONE_NEWPID) || pipe(p))
			_exit(1);
		inner = fork();
		if (inner < 0)
			_exit(1);
		if (!inner) {
			make_slabs(n, p[1]);
			_exit(0);
		}
		_exit(waitpid(inner, &status, 0) == inner && WIFEXITED(status) &&
		      !WEXITSTATUS(status) ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		die("orphans in a pid namespace (unshare, create)");
}

/* Release every slab listed: the bench's own orphans, before and after
 * (the guest runs nothing else that makes slabs). */
static void release_all(struct blamer_slab_info *buf, uint32_t cap)
{
	struct blamer_list l = { .info_size = sizeof(*buf), .capacity = cap,
				 .slabs = (uint64_t)(uintptr_t)buf };
	uint32_t i;

	if (ioctl(dev, BLAMER_IOC_LIST, &l))
		die("BLAMER_IOC_LIST");
	for (i = 0; i < l.count; i++) {
		struct blamer_release r = { .id = buf[i].id };

		if (ioctl(dev, BLAMER_IOC_RELEASE, &r) && errno != ENOENT)
			die("BLAMER_IOC_RELEASE");
	}
}

static void orphan_bursts(int burst, int beside)
{
	uint32_t cap = beside + burst + 1024;
	struct blamer_slab_info *buf = calloc(cap, sizeof(*buf));
	int k, spaces = beside / ORPHANS_KEEP;
	char keep[16], was[32];
	double alone[5], near[5];

	if (!buf)
		die("calloc");
	memset(buf, 1, (size_t)cap * sizeof(*buf));
	release_all(buf, cap);
	param_read(ORPHANS_PARAM, was, sizeof(was));
	snprintf(keep, sizeof(keep), "%d", ORPHANS_KEEP);
	param_write(ORPHANS_PARAM, keep);
	orphan_burst(ORPHANS_KEEP, buf, cap);	/* this namespace at its limit */
	for (k = 0; k < 5; k++)
		alone[k] = orphan_burst(burst, buf, cap);
	for (k = 0; k < spaces; k++)
		orphans_in_a_namespace(ORPHANS_KEEP);
	for (k = 0; k < 5; k++)
		near[k] = orphan_burst(burst, buf, cap);
	printf("# %d slabs orphaned (and as many evicted) in one namespace at %d orphans\n",
	       burst, ORPHANS_KEEP);
	printf("  alone %8.1f ms, beside %d orphans in %d other namespaces %8.1f ms, "
	       "ratio %5.2fx\n", bench_median(alone, 5) * 1e3, spaces * ORPHANS_KEEP, spaces,
	       bench_median(near, 5) * 1e3, bench_median(near, 5) / bench_median(alone, 5));
	fflush(stdout);
	release_all(buf, cap);
	param_write(ORPHANS_PARAM, was);	/* for what runs next */
	free(buf);
}

/*
 * The machine's own speed, to set the figures above against: one
 * getppid() system call and a 64 KiB memcpy, which the same static
 * program also measures on the host (module_bench --machine), where no
 * module runs. Under TCG the guest's kernel code runs many times slower
 * than the host's; this says how many.
 */
static void machine(const char *where)
{
	static uint8_t a[64 << 10], b[64 << 10];
	double t[ROUNDS], m[ROUNDS], t0;
	int k, i;

	for (k = 0; k < ROUNDS; k++) {
		t0 = now();
		for (i = 0; i < 20000; i++)
			if (syscall(SYS_getppid) < 0)
				die("getppid");
		t[k] = (now() - t0) / 20000;
		t0 = now();
		for (i = 0; i < 2000; i++) {
			memcpy(b, a, sizeof(a));
			__asm__ volatile("" : : "r"(b) : "memory");
		}
		m[k] = (now() - t0) / 2000;
	}
	printf("# machine (%s): one getppid() %.3f us, memcpy of 64 KiB %.2f us\n", where,
	       bench_median(t, ROUNDS) * 1e6, bench_median(m, ROUNDS) * 1e6);
}

int main(int argc, char **argv)
{
	uint32_t max = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 100000;
	bool orphans = argc > 1 && !strcmp(argv[1], "--orphans");
	int burst = orphans && argc > 2 ? atoi(argv[2]) : 1500;
	int beside = orphans && argc > 3 ? atoi(argv[3]) : 6000;

	if (argc > 1 && !strcmp(argv[1], "--machine")) {
		machine("host");
		return 0;
	}
	if (burst < 1 || burst > 100000 || beside < 0 || beside > 100000) {
		fprintf(stderr, "module_bench: --orphans BURST BESIDE: 1..100000, 0..100000\n");
		return 2;
	}
	dev = open(BLAMER_DEVICE, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		die(BLAMER_DEVICE);
	if (argc > 2 && !strcmp(argv[1], "--list")) {
		list_scaling((uint32_t)strtoul(argv[2], NULL, 10));
		close(dev);
		return 0;
	}
	if (orphans) {
		orphan_bursts(burst, beside);
		close(dev);
		return 0;
	}
	machine("guest");
	create_vs_memfd();
	holes();
	list_scaling(max);
	orphan_bursts(burst, beside);
	close(dev);
	return 0;
}
