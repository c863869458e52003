/* SPDX-License-Identifier: MIT */
/*
 * The benchmarks' realistic heap, written by the real library: 16
 * threads with activity stacks of depth 4, 20 user-data fields, 50 log
 * lines, 30 paths of 2 units, in one 1 MiB slab (about 53 KiB of it
 * used). gen_heap() runs in a child and never returns: the heap's
 * process then dies with its threads mid-stack (a dead heap, as after a
 * crash) or, live, writes one byte to @ready and waits to be killed.
 */
#ifndef BENCH_HEAP_GEN_H
#define BENCH_HEAP_GEN_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "blamer.h"

#define GEN_THREADS	16
#define GEN_DEPTH	4
#define GEN_FIELDS	20
#define GEN_LOGS	50
#define GEN_PATHS	30

static pthread_barrier_t gen_all_pushed;

static void *gen_worker(void *arg)
{
	static const char *const labels[GEN_DEPTH] = { "request", "parse", "lookup", "io" };
	struct blamer *b = arg;
	int d;

	for (d = 0; d < GEN_DEPTH; d++)
		blamer_push(b, BLAMER_ACTIVITY_TASK, labels[d], (uint64_t)d, 0);
	pthread_barrier_wait(&gen_all_pushed);	/* stacks full when the process dies */
	for (;;)
		pause();
	return NULL;
}

/* @backend: BLAMER_BACKEND_DIR (in @dir) or _DEVICE; @ready < 0: die. */
static void __attribute__((noreturn)) gen_heap(int backend, const char *dir, int ready)
{
	struct blamer_config cfg = { .backend = backend, .dir = dir, .max_slabs = 1,
				     .flags = BLAMER_OPEN_NO_MODULES };
	static const uint32_t units[] = { BLAMER_UNIT_CPU_NS, BLAMER_UNIT_BYTES };
	pthread_t t[GEN_THREADS];
	char name[32];
	struct blamer *b;
	int i;

	if (blamer_open(&cfg, &b)) {
		fprintf(stderr, "bench: %s\n", blamer_errmsg());
		_exit(1);
	}
	blamer_set_phase(b, BLAMER_PHASE_MAIN_LOOP);
	for (i = 0; i < GEN_FIELDS; i++) {
		snprintf(name, sizeof(name), "field_%02d", i);
		if (i % 2)
			blamer_set_uint(b, BLAMER_DATA_PROCESS, name, (uint64_t)i * 1000);
		else
			blamer_set_string(b, BLAMER_DATA_PROCESS, name, "a value of some length");
	}
	for (i = 0; i < GEN_LOGS; i++)
		blamer_log(b, "request %d served in %d us", i, i * 37);
	for (i = 0; i < GEN_PATHS; i++) {
		uint64_t ids[3];
		struct blamer_path *p;

		snprintf(name, sizeof(name), "handler_%d", i % 6);
		ids[0] = blamer_dag_id("server");
		ids[1] = blamer_dag_id(name);
		snprintf(name, sizeof(name), "step_%d", i);
		ids[2] = blamer_dag_id(name);
		blamer_dag_node(b, ids[2], 1, name);
		p = blamer_path_get(b, ids, 3, units, 2);
		if (p) {
			blamer_path_add(p, 0, 1000u * (unsigned)i);
			blamer_path_add(p, 1, 64u * (unsigned)i);
		}
	}
	pthread_barrier_init(&gen_all_pushed, NULL, GEN_THREADS + 1);
	for (i = 0; i < GEN_THREADS; i++)
		pthread_create(&t[i], NULL, gen_worker, b);
	pthread_barrier_wait(&gen_all_pushed);
	if (ready < 0)
		_exit(0);	/* dead: the heap stays, as after a crash */
	if (write(ready, "", 1) != 1)
		_exit(1);
	for (;;)
		pause();	/* live until killed */
}

#endif /* BENCH_HEAP_GEN_H */
