// SPDX-License-Identifier: MIT
/*
 * dev_reader_bench: the reader on the device backend, in the VM with the
 * module loaded (bench/vm-bench.sh; Documentation/performance.rst,
 * "Module"). N processes write the realistic heap of bench/heap_gen.h
 * through /dev/blamer (one 1 MiB slab each, about 53 KiB used); half of
 * them then die (their slabs are orphans: dead heaps), half keep running
 * (live heaps). One long-lived reader then takes snapshots of them all:
 *
 * - pages touched: the reader's resident shared pages (statm) after its
 *   first snapshot, against the pages below the heaps' freeptrs and the
 *   pages mapped. The module inserts a page per fault, and the reader
 *   keeps its mappings for the next snapshot, so what is resident is
 *   exactly what it read.
 * - a one-shot reader (open, snapshot, close: OPEN, mmap and a fault per
 *   page read, as a command pays) against the long-lived reader's next
 *   snapshot (mappings kept), interleaved; and against a memcpy of the
 *   bytes used.
 *
 * Wall time; under TCG only the ratios mean something.
 *
 *   dev_reader_bench [N]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blamer.h"
#include "heap_gen.h"
#include "stats.h"

#define ROUNDS	11

static double now(void)
{
	return bench_seconds(CLOCK_MONOTONIC);
}

/* Resident pages of file and shared memory mappings (statm's third field). */
static long shared_pages(void)
{
	long size, res, shared = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f && fscanf(f, "%ld %ld %ld", &size, &res, &shared) != 3)
		shared = -1;
	if (f)
		fclose(f);
	return shared;
}

static int snap(struct blamer_reader *r, uint64_t *used, uint64_t *size, int *live, int *ok,
		int *n)
{
	struct blamer_snapshot *s;
	char e[256];
	size_t k;

	if (blamer_reader_snapshot(r, &s, e, sizeof(e))) {
		fprintf(stderr, "dev_reader_bench: %s\n", e);
		return -1;
	}
	*used = *size = 0;
	*live = *ok = 0;
	for (k = 0; k < s->nprocs; k++) {
		const struct blamer_snap_process *p = &s->procs[k];

		/* pages below each freeptr: what a reader must touch */
		*used += (p->used + 4095) / 4096;
		*size += p->size / 4096;
		*live += p->state == BLAMER_PROC_LIVE;
		*ok += p->health == BLAMER_HEALTH_OK;
	}
	*n = (int)s->nprocs;
	blamer_snapshot_free(s);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100, i, ready = 0, pfd[2], live, ok, procs, st;
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DEVICE,
					.flags = BLAMER_READ_DEAD_FULL };
	double t0, t[ROUNDS], cold[ROUNDS], ratio[ROUNDS], copy[ROUNDS];
	uint64_t used, size;
	pid_t *pids = calloc((size_t)n, sizeof(*pids));
	long before, after, after2;
	struct blamer_reader *r;
	uint8_t *from, *to;
	char e[256], c;

	if (!pids || pipe(pfd))
		return 1;
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(pfd[0]);
			gen_heap(BLAMER_BACKEND_DEVICE, NULL, i % 2 ? pfd[1] : -1);
		}
		if (pids[i] < 0)
			return 1;
		if (i % 2 == 0 && (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) ||
				   WEXITSTATUS(st))) {
			fprintf(stderr, "dev_reader_bench: a writer failed\n");
			return 1;
		}
	}
	close(pfd[1]);
	while (ready < n / 2 && read(pfd[0], &c, 1) == 1)
		ready++;
	/* the reader's code faulted in first: its text pages are shared
	 * file pages too, and would count as pages read */
	r = blamer_reader_open(&o, e, sizeof(e));
	if (r && snap(r, &used, &size, &live, &ok, &procs) == 0)
		blamer_reader_close(r);
	r = blamer_reader_open(&o, e, sizeof(e));
	if (!r || ready != n / 2) {
		fprintf(stderr, "dev_reader_bench: %s\n", r ? "writers did not start" : e);
		return 1;
	}
	before = shared_pages();
	if (snap(r, &used, &size, &live, &ok, &procs))
		return 1;
	after = shared_pages();
	/* interleaved: a one-shot reader (open, snapshot, close: OPEN, mmap,
	 * a fault per page read, munmap) and the long-lived one's next
	 * snapshot, the median of the per-round ratios */
	for (i = 0; i < ROUNDS; i++) {
		struct blamer_reader *once;

		t0 = now();
		once = blamer_reader_open(&o, e, sizeof(e));
		if (!once || snap(once, &used, &size, &live, &ok, &procs))
			return 1;
		blamer_reader_close(once);
		cold[i] = now() - t0;
		t0 = now();
		if (snap(r, &used, &size, &live, &ok, &procs))
			return 1;
		t[i] = now() - t0;
		ratio[i] = cold[i] / t[i];
	}
	after2 = shared_pages();
	/* the least a reader must spend: a copy of the pages used, from
	 * as many places */
	from = malloc(used * 4096);
	to = malloc(used * 4096);
	if (!from || !to)
		return 1;
	memset(from, 2, used * 4096);
	memset(to, 1, used * 4096);
	for (i = 0; i < ROUNDS; i++) {
		t0 = now();
		memcpy(to, from, used * 4096);
		copy[i] = now() - t0;
		__asm__ volatile("" : : "r"(to) : "memory");
	}
	qsort(t, ROUNDS, sizeof(t[0]), bench_dbl_cmp);
	qsort(copy, ROUNDS, sizeof(copy[0]), bench_dbl_cmp);
	printf("# the reader on /dev/blamer: %d heaps (%d live, %d read whole), one 1 MiB slab each\n",
	       procs, live, ok);
	printf("  pages mapped %llu, below the freeptrs %llu, touched by the first snapshot %ld"
	       " (%.1f %% of those mapped), by the next %d: %ld more\n",
	       (unsigned long long)size, (unsigned long long)used, after - before,
	       100.0 * (double)(after - before) / (double)size, ROUNDS, after2 - after);
	qsort(cold, ROUNDS, sizeof(cold[0]), bench_dbl_cmp);
	qsort(ratio, ROUNDS, sizeof(ratio[0]), bench_dbl_cmp);
	printf("  one-shot reader %.2f ms, long-lived (mappings kept) %.2f ms: %.1fx (median"
	       " ratio); memcpy of the pages used %.2f ms: %.0f %% of a kept snapshot\n",
	       cold[ROUNDS / 2] * 1e3, t[ROUNDS / 2] * 1e3, ratio[ROUNDS / 2],
	       copy[ROUNDS / 2] * 1e3, 100 * copy[ROUNDS / 2] / t[ROUNDS / 2]);
	blamer_reader_close(r);
	printf("  after close: %ld of them still resident\n", shared_pages() - before);
	for (i = 1; i < n; i += 2)
		kill(pids[i], SIGKILL);
	for (i = 1; i < n; i += 2)
		waitpid(pids[i], NULL, 0);
	return 0;
}
