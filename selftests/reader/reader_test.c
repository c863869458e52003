// SPDX-License-Identifier: MIT
/*
 * reader-unit: the reader against hand-made heaps (selftests/reader/
 * fixture.h): valid, reordered, truncated, torn, hostile (list loops,
 * huge counts, bad references), plus the dir backend (liveness, dead
 * heaps read on demand, files that are not what they claim) and replay
 * of fuzz/regressions. Built with ASan and UBSan.
 */
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "clock.h"
#include "fixture.h"
#include "fuzz_one.h"
#include "reader/internal.h"	/* the reader's own, for white-box tests */

#ifndef FUZZ_DIR
#define FUZZ_DIR "fuzz"
#endif

static struct blamer_snapshot *read_heap(struct fx_heap *h)
{
	struct blamer_mem_slab m[FX_MAX_SLABS];
	struct blamer_snapshot *s = NULL;

	fx_mem(h, m);
	if (blamer_snapshot_from_memory(m, h->nslabs, &s))
		return NULL;
	return s;
}

static const struct blamer_snap_field *field(const struct blamer_snap_fields *f,
					     const char *name)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].name, name))
			return &f->v[i];
	return NULL;
}

TEST(valid_heap_reads_completely)
{
	struct fx_heap h;
	struct blamer_snapshot *s;
	const struct blamer_snap_process *p;
	const struct blamer_snap_field *f;

	fx_standard(&h, 4242, 777, 1);
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(1, s->nprocs);
	p = &s->procs[0];
	EXPECT_EQ(BLAMER_HEALTH_OK, p->health);
	EXPECT_STREQ("", p->problem);
	EXPECT_TRUE(p->have_record);
	EXPECT_EQ(4242, p->rec_pid);
	EXPECT_EQ(BLAMER_PHASE_MAIN_LOOP, p->phase);
	EXPECT_STREQ("/usr/bin/app --worker 1", p->cmdline);
	ASSERT_EQ(2, p->nthreads);
	EXPECT_STREQ("main", p->threads[0].name);
	ASSERT_EQ(3, p->threads[0].nacts);
	EXPECT_STREQ("main-loop", p->threads[0].acts[0].label);
	EXPECT_STREQ("cache-lock", p->threads[0].acts[2].label);
	EXPECT_EQ(BLAMER_ACTIVITY_LOCK_ACQUIRE, p->threads[0].acts[2].kind);
	f = field(&p->threads[0].acts[1].fields, "url_id");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(77, f->u);
	EXPECT_EQ(1, p->threads[1].nacts);
	f = field(&p->user_data, "requests");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(12, f->u);
	f = field(&p->user_data, "role");
	ASSERT_NE(NULL, f);
	EXPECT_STREQ("worker", (const char *)f->bytes);
	f = field(&p->global_data, "debug");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(1, f->u);
	ASSERT_EQ(1, p->nmodules);
	EXPECT_STREQ("/usr/lib/libfoo.so", p->modules[0].path);
	ASSERT_EQ(3, p->nlogs);
	EXPECT_STREQ("started", p->logs[0].text);
	EXPECT_STREQ("cache warm", p->logs[2].text);
	ASSERT_EQ(1, p->nchildren);
	EXPECT_EQ(11, p->children[0].exit_status);
	EXPECT_EQ(4, p->nnodes);
	EXPECT_EQ(3, p->nedges);
	EXPECT_EQ(4, p->npaths);
	/* 4 paths x (cpu_ns, bytes) */
	EXPECT_EQ(8, s->ntotals);
	EXPECT_STREQ("frame", blamer_snap_node_name(s, FX_FRAME));
	EXPECT_EQ(2 * FX_SLAB, p->size);
	EXPECT_GT(p->used, 2 * 64);
	blamer_snapshot_free(s);
	fx_free(&h);
}

static const struct blamer_snap_series *find_series(const struct blamer_snapshot *s,
						    const char *name, const char *v0)
{
	size_t i;

	for (i = 0; i < s->nseries; i++)
		if (!strcmp(s->series[i].def->name, name) &&
		    (!v0 || !strcmp(s->series[i].first->values[0], v0)))
			return &s->series[i];
	return NULL;
}

/* Metrics as the format says: definitions, series and their shards. */
TEST(metrics_read_and_merge)
{
	struct fx_heap h;
	struct blamer_snapshot *s;
	const struct blamer_snap_process *p;
	const struct blamer_snap_series *x;

	fx_metrics(&h, 4242, 777, 2);
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	p = &s->procs[0];
	EXPECT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%s", p->problem);
	ASSERT_EQ(4, p->nmetric_defs);
	ASSERT_EQ(5, p->nmetrics);
	EXPECT_STREQ("help of reqs", p->metric_defs[0].help);
	EXPECT_STREQ("route", p->metric_defs[0].labels[0]);
	EXPECT_EQ(&p->metric_defs[0], p->metrics[0].def);
	x = find_series(s, "reqs", "/a");
	ASSERT_NE(NULL, x);
	EXPECT_EQ(5, x->value);		/* 4 + the shard's 1 */
	x = find_series(s, "reqs", "/b");
	ASSERT_NE(NULL, x);
	EXPECT_EQ(2, x->value);
	x = find_series(s, "lat", NULL);
	ASSERT_NE(NULL, x);
	EXPECT_EQ(3, x->def->nbuckets);
	EXPECT_EQ(1.0, x->def->upper[1]);
	EXPECT_EQ(4, x->buckets[0]);	/* 2 + the shard's 2 */
	EXPECT_EQ(8, x->buckets[1]);
	EXPECT_EQ(12, x->count);
	EXPECT_EQ(0.1 + 0.25, x->value);
	x = find_series(s, "size", NULL);
	ASSERT_NE(NULL, x);
	EXPECT_EQ(6, x->def->nbuckets);
	EXPECT_EQ(4.0, x->def->upper[2]);
	EXPECT_EQ(1, x->count);
	EXPECT_EQ(2, find_series(s, "inflight", NULL)->value);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/*
 * Every way a metric record can be wrong: the heap is corrupt (with the
 * record named), nothing is read out of bounds (ASan), and the other
 * series are still read.
 */
TEST(hostile_metric_records_are_corrupt_not_fatal)
{
	static const char *const cases[] = {
		"a definition of an unknown kind", "a counter with a gauge mode",
		"a name not of the charset", "a name without a NUL", "help without a NUL",
		"nine label names", "a label name twice", "a reserved label name",
		"label names without their NULs", "fixed bounds not ascending",
		"a NaN bound", "exponential buckets not the window's", "a schema of 9",
		"a series naming no definition", "a series naming a path record",
		"a series naming a definition out of the heap", "nvalues not its definition's",
		"a record too small for its values", "values missing their NULs",
		"a depth of 9", "a path and a label named path", "a shard of another series",
		"a shard chain looping", "a shard of fewer values", "a shard link out of the heap",
		"a name of the exporter's (blamer_)",
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct blamer_metric_def_rec *lat, *reqs;
		struct blamer_metric_rec *a, *l;
		const struct blamer_snap_process *p;
		struct blamer_snapshot *s;
		blamer_ref ra, rl, sa, rreqs, rlat;
		struct fx_heap h;

		fx_metrics(&h, 1, 1, 1);
		rreqs = blamer_make_ref(0, 0);
		/* the records, as fx_metrics() listed them */
		{
			blamer_ref r = ((struct blamer_block *)fx_at(&h, BLAMER_LIST_HEAD_REF))->next;
			blamer_ref found[16];
			int n = 0;

			while (r != BLAMER_LIST_HEAD_REF && n < 16) {
				found[n++] = r;
				r = ((struct blamer_block *)fx_at(&h, r))->next;
			}
			/* process, 4 defs, series /a, its shard, /b, lat, its shard, size, gauge */
			rreqs = found[1];
			rlat = found[2];
			ra = found[5];
			sa = found[6];
			rl = found[8];
		}
		reqs = fx_at(&h, rreqs);
		lat = fx_at(&h, rlat);
		a = fx_at(&h, ra);
		l = fx_at(&h, rl);
		switch (i) {
		case 0: lat->kind = 7; break;
		case 1: reqs->gauge_mode = BLAMER_GAUGE_SUM; break;
		case 2: reqs->name[1] = '-'; break;
		case 3: memset(reqs->name, 'a', sizeof(reqs->name)); break;
		case 4: memset(reqs->help, 'h', sizeof(reqs->help)); break;
		case 5: reqs->nlabels = 9; break;
		case 6: memcpy(reqs->labels, "route\0route", 12); reqs->nlabels = 2; break;
		case 7: memcpy(reqs->labels, "pid", 4); break;
		case 8: memset(reqs->labels, 'x', sizeof(reqs->labels)); break;
		case 9: lat->bounds[1] = 0.01; break;
		case 10: lat->bounds[0] = __builtin_nan(""); break;
		case 11: ((struct blamer_metric_def_rec *)fx_at(&h, a->def == rreqs ? rlat : rlat))->layout =
				 BLAMER_HIST_EXPONENTIAL; break;
		case 12: lat->layout = BLAMER_HIST_EXPONENTIAL; lat->schema = 9; break;
		case 13: a->def = 0; break;
		case 14: a->def = ra; break;
		case 15: a->def = blamer_make_ref(0, 16380); break;
		case 16: a->nvalues = 2; break;
		case 17: l->nvalues = 40; break;
		case 18: memset(a->values, 'v', sizeof(a->values)); break;
		case 19: a->depth = 9; break;
		case 20: memcpy(reqs->labels, "path", 5); a->depth = 1; a->nodes[0] = 5; break;
		case 21: ((struct blamer_metric_shard *)fx_at(&h, sa))->metric = rl; break;
		case 22: ((struct blamer_metric_shard *)fx_at(&h, sa))->next_shard = sa; break;
		case 23: ((struct blamer_metric_shard *)fx_at(&h, sa))->nvalues = 0; break;
		case 24: ((struct blamer_metric_shard *)fx_at(&h, sa))->next_shard =
				 blamer_make_ref(3, 64); break;
		case 25: memcpy(reqs->name, "blamer_x", 9); break;
		}
		s = read_heap(&h);
		ASSERT_NE(NULL, s);
		p = &s->procs[0];
		EXPECT_EQ(BLAMER_HEALTH_CORRUPT, p->health) TH_LOG("%s: %s", cases[i], p->problem);
		EXPECT_NE(0, p->problem[0]) TH_LOG("%s", cases[i]);
		/* the gauge, which nothing touched, is still read */
		ASSERT_NE(NULL, find_series(s, "inflight", NULL)) TH_LOG("%s", cases[i]);
		EXPECT_EQ(1, find_series(s, "inflight", NULL)->value);
		blamer_snapshot_free(s);
		fx_free(&h);
	}
}

/* Two processes defining a name otherwise: the definition most give wins,
 * the other's series are left out and counted, none merged wrongly. */
TEST(conflicting_definitions_are_counted_not_merged)
{
	struct fx_heap a, b, c;
	struct blamer_mem_slab m[FX_MAX_SLABS];
	struct blamer_snapshot *s;
	const struct blamer_snap_series *x;
	blamer_ref d;
	int fd;
	char dir[] = "/tmp/blamer-conflict-XXXXXX";
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR, .flags = BLAMER_READ_DEAD_FULL };
	struct blamer_reader *r;
	char e[256];

	(void)m;
	(void)fd;
	ASSERT_NE(NULL, mkdtemp(dir));
	fx_metrics(&a, 3999101, 1, 1);
	fx_metrics(&b, 3999102, 2, 2);
	/* c defines "reqs" as a gauge */
	fx_init(&c, 1, 16384, 3999103, 3);
	fx_process(&c, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/other");
	d = fx_metric_def(&c, "reqs", BLAMER_METRIC_GAUGE, BLAMER_GAUGE_MAX, "route", 1, NULL, 0);
	fx_metric(&c, d, "/a", 3, 100, NULL);
	ASSERT_EQ(0, fx_write_dir(&a, dir, 3999101, 1));
	ASSERT_EQ(0, fx_write_dir(&b, dir, 3999102, 2));
	ASSERT_EQ(0, fx_write_dir(&c, dir, 3999103, 3));
	o.dir = dir;
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r) TH_LOG("%s", e);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	ASSERT_EQ(3, s->nprocs);
	x = find_series(s, "reqs", "/a");
	ASSERT_NE(NULL, x);
	EXPECT_EQ(BLAMER_METRIC_COUNTER, x->def->kind);
	EXPECT_EQ(2.5 + 5, x->value);	/* a's and b's, not c's 100 */
	EXPECT_EQ(2, x->nprocs);
	EXPECT_EQ(1, s->metric_conflicts);
	EXPECT_TRUE(s->procs[2].metrics[0].conflict);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	fx_free(&a);
	fx_free(&b);
	fx_free(&c);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		ASSERT_EQ(0, system(cmd));
	}
}

/* Addresses as every view shows them: module+offset, else hex. */
TEST(addresses_name_their_module)
{
	struct blamer_snapshot *s;
	const struct blamer_snap_process *p;
	struct fx_heap h;
	char buf[64];

	fx_standard(&h, 4242, 777, 1);
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	p = &s->procs[0];
	EXPECT_EQ(&p->modules[0], blamer_snap_module_at(p, 0x7f0000000120ull));
	blamer_snap_addr_string(p, 0x7f0000000120ull, buf, sizeof(buf));
	EXPECT_STREQ("libfoo.so+0x120", buf);
	/* one past the module's 4 KiB, and below it: no module */
	EXPECT_EQ(NULL, blamer_snap_module_at(p, 0x7f0000001000ull));
	EXPECT_EQ(NULL, blamer_snap_module_at(p, 0x7effffffffffull));
	blamer_snap_addr_string(p, 0x7f0000001000ull, buf, sizeof(buf));
	EXPECT_STREQ("0x7f0000001000", buf);
	/* snprintf()'s contract: cut, NUL-terminated, the length it needs */
	EXPECT_EQ(15, blamer_snap_addr_string(p, 0x7f0000000120ull, buf, 8));
	EXPECT_STREQ("libfoo.", buf);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/*
 * The module table (module_spans) answers what a walk of the module list
 * answers, the last loaded module listed that holds the address, for
 * modules that overlap, nest, share a base, are unloaded, empty, or run
 * to the end of the address space: every boundary and its neighbours,
 * and random addresses, against the walk (a copy without the table).
 */
TEST(module_table_answers_as_the_walk_does)
{
	uint64_t rng = 0x9e3779b97f4a7c15ull, probes[4096];
	struct blamer_snap_process walk;
	const struct blamer_snap_process *p;
	struct blamer_snapshot *s;
	struct fx_heap h;
	size_t np = 0, i;
	int m;

	fx_init(&h, 1, 1u << 20, 77, 5);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/mods");
	for (m = 0; m < 300; m++) {
		struct blamer_module *mr;
		uint64_t base, size;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		base = 0x10000 + (rng >> 40) % 64 * 0x1000;	/* crowded: overlaps */
		size = (rng >> 20) % 5 * 0x800;			/* 0 (empty) .. 8 KiB */
		if (m % 37 == 0) {
			base = UINT64_MAX - 0xfff;		/* to the very end */
			size = 0x1000;
		} else if (m % 41 == 0) {
			size = UINT64_MAX;			/* wraps: to the end */
		}
		fx_module(&h, "/lib/libm.so", base);
		mr = fx_at(&h, h.tail);
		mr->size = size;
		mr->loaded = m % 7 != 3;
		if (np + 3 <= sizeof(probes) / sizeof(probes[0])) {
			probes[np++] = base - 1;
			probes[np++] = base;
			probes[np++] = base + size;	/* one past its end */
		}
		if (size && np + 2 <= sizeof(probes) / sizeof(probes[0])) {
			probes[np++] = base + size - 1;
			probes[np++] = base + size / 2;
		}
	}
	while (np < sizeof(probes) / sizeof(probes[0])) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		probes[np++] = 0xf000 + (rng >> 30) % 0x50000;
	}
	probes[0] = 0;
	probes[1] = UINT64_MAX;
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	p = &s->procs[0];
	ASSERT_EQ(300, p->nmodules);
	ASSERT_NE(NULL, p->module_spans);
	/* disjoint and sorted */
	for (i = 0; i < p->nmodule_spans; i++) {
		ASSERT_LE(p->module_spans[i].first, p->module_spans[i].last);
		if (i)
			ASSERT_LT(p->module_spans[i - 1].last, p->module_spans[i].first);
	}
	walk = *p;
	walk.module_spans = NULL;
	walk.nmodule_spans = 0;
	for (i = 0; i < np; i++) {
		const struct blamer_snap_module *a = blamer_snap_module_at(p, probes[i]);
		const struct blamer_snap_module *b = blamer_snap_module_at(&walk, probes[i]);

		if (a != b)
			TH_LOG("address %#llx: table says module %ld, walk %ld",
			       (unsigned long long)probes[i], a ? (long)(a - p->modules) : -1L,
			       b ? (long)(b - p->modules) : -1L);
		ASSERT_EQ(b, a);
	}
	/* a kept copy (rd_process_copy) keeps its table */
	{
		struct blamer_snapshot *t = rd_snapshot_new(NULL);
		struct blamer_snap_process *q = rd_new_process(t);

		ASSERT_TRUE(rd_process_copy(t, q, p));
		ASSERT_EQ(p->nmodule_spans, q->nmodule_spans);
		for (i = 0; i < np; i++) {
			const struct blamer_snap_module *a = blamer_snap_module_at(q, probes[i]);
			const struct blamer_snap_module *b = blamer_snap_module_at(p, probes[i]);

			ASSERT_EQ(b ? b - p->modules : -1, a ? a - q->modules : -1);
		}
		blamer_snapshot_free(t);
	}
	blamer_snapshot_free(s);
	fx_free(&h);
}

/* The conversion of heap stamps, on numbers worked out by hand. */
TEST(clock_conversion)
{
	const struct bl_clock mono = { BLAMER_CLOCK_MONOTONIC, 0, 0 };
	const struct bl_clock heap = { BLAMER_CLOCK_TSC, 1000000, 5000000 };
	const struct bl_clock now = { BLAMER_CLOCK_TSC, 3000000, 6000000 }; /* 0.5 ns/tick */
	struct bl_clock bad;

	EXPECT_EQ(123456789, bl_clock_to_ns(&mono, &now, 123456789));
	EXPECT_EQ(5000000, bl_clock_to_ns(&heap, &now, 1000000));	/* the anchor */
	EXPECT_EQ(6000000, bl_clock_to_ns(&heap, &now, 3000000));	/* ours */
	EXPECT_EQ(5500000, bl_clock_to_ns(&heap, &now, 2000000));
	EXPECT_EQ(6500000, bl_clock_to_ns(&heap, &now, 4000000));	/* pushed after our pair */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &now, 0));			/* never stamped */
	EXPECT_EQ(4750000, bl_clock_to_ns(&heap, &now, 500000));	/* 0.25 ms early */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &now, heap.anchor_tsc - 4000000000ull)); /* 2 s early */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &now, 1ull << 62));		/* years after ours */
	EXPECT_EQ(60006000000, bl_clock_to_ns(&heap, &now, 120003000000ull)); /* 60 s after */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &now, 120005000000ull));	/* 61 s after */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &mono, 2000000));	/* a reader without a TSC */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &heap, 2000000));	/* no interval */
	bad = now;
	bad.anchor_tsc = 500000;	/* reader's TSC before the heap's: another boot */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &bad, 2000000));
	bad = now;
	bad.anchor_tsc = 1000001;	/* 1 ms in one tick: no TSC is that slow */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &bad, 1000001));
	bad = heap;
	bad.kind = 7;
	EXPECT_EQ(0, bl_clock_to_ns(&bad, &now, 2000000));
}

/*
 * A heap stamped with this machine's TSC reads back as CLOCK_MONOTONIC:
 * an anchor taken now, an activity stamped 10 ms later, both converted by
 * the snapshot. Unknown clocks are reported, and their stamps are 0.
 */
TEST(tsc_heap_reads_as_monotonic)
{
	uint64_t anchor_tsc, anchor_ns, t0, t1;
	const struct blamer_snap_activity *a;
	struct blamer_snapshot *s;
	struct fx_heap h;
	blamer_ref th;

	if (!BL_HAVE_TSC)
		SKIP(return, "no TSC on this architecture");
	fx_init(&h, 1, FX_SLAB, 4242, 777);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "tsc-app");
	bl_clock_pair(&anchor_tsc, &anchor_ns);
	fx_clock(&h, BLAMER_CLOCK_TSC, anchor_tsc, anchor_ns);
	th = fx_thread(&h, 4242, "main", 4);
	usleep(10000);
	t0 = bl_monotonic_ns();
	fx_push(&h, th, BLAMER_ACTIVITY_TASK, "stamped", bl_tsc(), 0);
	t1 = bl_monotonic_ns();
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(1, s->nprocs);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health) TH_LOG("%s", s->procs[0].problem);
	ASSERT_EQ(1, s->procs[0].nthreads);
	ASSERT_EQ(1, s->procs[0].threads[0].nacts);
	a = &s->procs[0].threads[0].acts[0];
	EXPECT_GE(a->time_ns + 20000, t0);
	EXPECT_LE(a->time_ns, t1 + 20000);
	EXPECT_GE(a->time_ns, anchor_ns + 10000000);
	blamer_snapshot_free(s);

	fx_clock(&h, 9, anchor_tsc, anchor_ns);
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	EXPECT_NE(NULL, strstr(s->procs[0].problem, "clock"));
	ASSERT_EQ(1, s->procs[0].nthreads);
	EXPECT_EQ(0, s->procs[0].threads[0].acts[0].time_ns);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/* Format 3: role and instance, the drop counters, values and labels cut
 * by their writer and marked so; hostile role bytes are made printable. */
TEST(format_3_role_drops_and_cut_marks)
{
	uint64_t counts[BLAMER_DROP_REASONS + 2] = { 0 };
	char label[BLAMER_LABEL_MAX + 1];
	const struct blamer_snap_process *p;
	const struct blamer_snap_field *f;
	struct blamer_snapshot *s;
	struct blamer_field *raw;
	blamer_ref t, ud;
	struct fx_heap h;

	fx_init(&h, 1, FX_SLAB, 4343, 777);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "/srv/prefork");
	counts[BLAMER_DROP_STRING_CUT] = 3;
	counts[BLAMER_DROP_LABEL_CUT] = 1;
	counts[BLAMER_DROP_REASONS + 1] = 5;	/* a newer writer's reason */
	fx_drops(&h, "work\x1b[2Jer", "2", counts, BLAMER_DROP_REASONS + 2);
	ud = fx_userdata(&h, BLAMER_DATA_PROCESS, 128, 1);
	fx_field_str(&h, ud, "client", "127.0.0.");
	raw = (struct blamer_field *)((struct blamer_userdata *)fx_at(&h, ud))->fields;
	raw->value_size |= BLAMER_VALUE_CUT;
	fx_field_str(&h, ud, "whole", "yes");
	((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->user_data = ud;
	t = fx_thread(&h, 4343, "main", 2);
	memset(label, 'r', BLAMER_LABEL_MAX);
	label[BLAMER_LABEL_MAX] = 0;
	fx_push(&h, t, BLAMER_ACTIVITY_TASK, label, 1, 0);
	((struct blamer_thread *)fx_at(&h, t))->stack[0].flags = BLAMER_ACT_F_LABEL_CUT;
	fx_push(&h, t, BLAMER_ACTIVITY_TASK, "GET /a", 2, 0);
	/* past the NUL: bytes that mean nothing */
	memset(((struct blamer_thread *)fx_at(&h, t))->stack[1].label + 7, 'x', 20);
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	p = &s->procs[0];
	EXPECT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%s", p->problem);
	EXPECT_STREQ("work?[2Jer", p->role);
	EXPECT_STREQ("2", p->instance);
	EXPECT_EQ(3, p->drops[BLAMER_DROP_STRING_CUT]);
	EXPECT_EQ(1, p->drops[BLAMER_DROP_LABEL_CUT]);
	EXPECT_EQ(5, p->drops[BLAMER_DROP_REASONS + 1]);
	EXPECT_EQ(9, p->dropped);
	f = field(&p->user_data, "client");
	ASSERT_NE(NULL, f);
	EXPECT_TRUE(f->cut);
	EXPECT_EQ(8, f->len);
	f = field(&p->user_data, "whole");
	ASSERT_NE(NULL, f);
	EXPECT_FALSE(f->cut);
	ASSERT_EQ(1, p->nthreads);
	ASSERT_EQ(2, p->threads[0].nacts);
	EXPECT_TRUE(p->threads[0].acts[0].label_cut);
	EXPECT_EQ(BLAMER_LABEL_MAX, strlen(p->threads[0].acts[0].label));
	EXPECT_FALSE(p->threads[0].acts[1].label_cut);
	EXPECT_STREQ("GET /a", p->threads[0].acts[1].label);
	blamer_snapshot_free(s);
	/* a role not yet final is not shown */
	((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->role_state = BLAMER_ROLE_WRITING;
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("", s->procs[0].role);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/* A version 2 heap (fuzz/corpus/v2-standard, the standard fixture as a
 * version 2 writer made it; make fuzz-corpus leaves it alone): 64-byte activity slots with 16-byte labels, a 336-byte process
 * record, no role or drops; read as it always was. */
TEST(version_2_heaps_are_still_read)
{
	char path[4096];
	uint8_t *buf = malloc(1 << 20);
	struct blamer_mem_slab m[4];
	struct blamer_snapshot *s;
	const struct blamer_snap_process *p;
	size_t n, each, i;
	unsigned k;
	FILE *f;

	ASSERT_NE(NULL, buf);
	snprintf(path, sizeof(path), "%s/corpus/v2-standard", FUZZ_DIR);
	f = fopen(path, "rb");
	ASSERT_NE(NULL, f);
	n = fread(buf, 1, 1 << 20, f);
	fclose(f);
	ASSERT_GT(n, 1);
	k = buf[0] + 1u;	/* byte 0: the slab count - 1 (fuzz_one.h) */
	memmove(buf, buf + 1, --n);	/* the slabs, 8-aligned */
	ASSERT_EQ(2, ((struct blamer_slab_header *)buf)->version);
	each = n / k;
	for (i = 0; i < k; i++) {
		m[i].data = buf + i * each;
		m[i].size = i + 1 == k ? n - i * each : each;
	}
	ASSERT_EQ(0, blamer_snapshot_from_memory(m, k, &s));
	p = &s->procs[0];
	EXPECT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%s", p->problem);
	EXPECT_STREQ("/usr/bin/app --worker 1", p->cmdline);
	EXPECT_STREQ("", p->role);
	EXPECT_EQ(0, p->dropped);
	ASSERT_GE(p->nthreads, 1);
	ASSERT_EQ(3, p->threads[0].nacts);
	EXPECT_STREQ("cache-lock", p->threads[0].acts[2].label);
	EXPECT_FALSE(p->threads[0].acts[2].label_cut);
	blamer_snapshot_free(s);
	free(buf);
}

TEST(other_format_versions_are_named)
{
	struct fx_heap h;
	struct blamer_snapshot *s;

	fx_standard(&h, 4242, 777, 1);
	((struct blamer_slab_header *)h.slab[0])->version = 1;
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(1, s->nprocs);
	EXPECT_EQ(BLAMER_HEALTH_UNREADABLE, s->procs[0].health);
	EXPECT_STREQ("heap format version 1 (this reader reads 2 to 3)", s->procs[0].problem);
	blamer_snapshot_free(s);
	fx_free(&h);
}

TEST(slabs_in_any_order)
{
	struct fx_heap h;
	struct blamer_mem_slab m[2], r[2];
	struct blamer_snapshot *s;

	fx_standard(&h, 1, 1, 1);
	fx_mem(&h, m);
	r[0] = m[1];
	r[1] = m[0];
	ASSERT_EQ(0, blamer_snapshot_from_memory(r, 2, &s));
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	EXPECT_EQ(4, s->procs[0].npaths);
	blamer_snapshot_free(s);
	fx_free(&h);
}

TEST(every_truncation_is_safe)
{
	struct fx_heap h;
	struct blamer_mem_slab m[2];
	size_t cut, slab;

	fx_standard(&h, 1, 1, 1);
	fx_mem(&h, m);
	for (slab = 0; slab < 2; slab++) {
		struct blamer_slab_header *sh = (void *)h.slab[slab];

		for (cut = 0; cut < FX_SLAB; cut += 8) {
			struct blamer_mem_slab t[2] = { m[0], m[1] };
			struct blamer_snapshot *s;
			uint8_t *copy = malloc(cut ? cut : 1);

			memcpy(copy, h.slab[slab], cut);
			t[slab].data = copy;
			t[slab].size = cut;
			ASSERT_EQ(0, blamer_snapshot_from_memory(t, 2, &s));
			/* cutting into used bytes can never look healthy */
			if (cut < sh->freeptr)
				EXPECT_NE(BLAMER_HEALTH_OK, s->procs[0].health);
			blamer_snapshot_free(s);
			free(copy);
		}
	}
	fx_free(&h);
}

static blamer_ref nth_record(struct fx_heap *h, int n)
{
	blamer_ref r = ((struct blamer_block *)fx_at(h, BLAMER_LIST_HEAD_REF))->next;

	while (n-- > 0)
		r = ((struct blamer_block *)fx_at(h, r))->next;
	return r;
}

TEST(list_loops_terminate_as_corrupt)
{
	int from, to;

	/* 4->4, 4->3, 4->1 as in Chromium's MaliciousTest, and more */
	for (from = 0; from < 6; from++) {
		for (to = 0; to <= from; to++) {
			struct fx_heap h;
			struct blamer_snapshot *s;

			fx_standard(&h, 1, 1, 1);
			((struct blamer_block *)fx_at(&h, nth_record(&h, from)))->next =
				nth_record(&h, to);
			s = read_heap(&h);
			ASSERT_NE(NULL, s);
			EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
			EXPECT_NE(NULL, strstr(s->procs[0].problem, "loop"));
			blamer_snapshot_free(s);
			fx_free(&h);
		}
	}
}

TEST(bad_references_are_corrupt_not_fatal)
{
	blamer_ref bad[] = {
		blamer_make_ref(7, 64),		/* no such slab */
		blamer_make_ref(0, 12),		/* inside the slab header */
		blamer_make_ref(0, 1001),	/* misaligned */
		blamer_make_ref(1, FX_SLAB - 8), /* block header past the end */
		blamer_make_ref(0, 0xfffffff8u),
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fx_heap h;
		struct blamer_snapshot *s;

		fx_standard(&h, 1, 1, 1);
		((struct blamer_block *)fx_at(&h, nth_record(&h, 3)))->next = bad[i];
		s = read_heap(&h);
		ASSERT_NE(NULL, s);
		EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
		/* what came before the bad link is still there */
		EXPECT_TRUE(s->procs[0].have_record);
		EXPECT_GE(s->procs[0].nthreads, 1);
		blamer_snapshot_free(s);
		fx_free(&h);
	}
}

TEST(huge_counts_are_refused)
{
	struct fx_heap h;
	struct blamer_snapshot *s;
	struct blamer_thread *t;
	struct blamer_log *l;
	struct blamer_userdata *u;
	blamer_ref tr, lr, ur;

	fx_init(&h, 1, FX_SLAB, 5, 5);
	fx_process(&h, 1, "x");
	tr = fx_thread(&h, 5, "t", 2);
	lr = fx_log(&h, 1);
	ur = fx_userdata(&h, BLAMER_DATA_PROCESS, 64, 1);
	t = fx_at(&h, tr);
	t->stack_slots = 0xffffffffu;
	t->depth = 0xfffffff0u;
	l = fx_at(&h, lr);
	l->slot_count = 1u << 30;
	u = fx_at(&h, ur);
	u->capacity = 0xffffff00u;
	u->used = 0xffffff00u;
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	EXPECT_EQ(0, s->procs[0].nthreads);
	EXPECT_EQ(0, s->procs[0].nlogs);
	EXPECT_EQ(0, s->procs[0].user_data.n);
	blamer_snapshot_free(s);
	fx_free(&h);

	/* a zero record_size field must not loop forever */
	fx_init(&h, 1, FX_SLAB, 5, 5);
	fx_process(&h, 1, "x");
	ur = fx_userdata(&h, BLAMER_DATA_PROCESS, 64, 1);
	fx_field_u64(&h, ur, "a", 1);
	((struct blamer_field *)((struct blamer_userdata *)fx_at(&h, ur))->fields)->record_size = 0;
	((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->user_data = ur;
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	blamer_snapshot_free(s);
	fx_free(&h);

	/* path depth beyond the format's maximum */
	fx_init(&h, 1, FX_SLAB, 5, 5);
	{
		uint64_t n[1] = { 1 };
		blamer_ref pr = fx_path(&h, n, 1, 1, 1);

		((struct blamer_dag_path *)fx_at(&h, pr))->depth = 9;
	}
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	EXPECT_EQ(0, s->ntotals);
	blamer_snapshot_free(s);
	fx_free(&h);
}

TEST(shards_add_up_with_their_path)
{
	uint64_t ids[2] = { FX_ROOT, FX_TAB };
	struct fx_heap h;
	struct blamer_snapshot *s;
	const struct blamer_snap_path *sp;
	blamer_ref path;

	fx_init(&h, 1, FX_SLAB, 9, 9);
	fx_process(&h, 1, "x");
	path = fx_path(&h, ids, 2, 10, UINT64_MAX);
	fx_shard(&h, path, 9, 5, 2);	/* bytes wrap around, as the writer's adds */
	fx_shard(&h, path, 0, 7, 0);	/* released by an exited thread: still counts */
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	ASSERT_EQ(1, s->procs[0].npaths);
	sp = &s->procs[0].paths[0];
	ASSERT_EQ(2, sp->nvalues);
	EXPECT_EQ(BLAMER_UNIT_CPU_NS, sp->units[0]);
	EXPECT_EQ(22, sp->values[0]);
	EXPECT_EQ(1, sp->values[1]);
	ASSERT_EQ(2, s->ntotals);
	EXPECT_EQ(22, s->totals[0].value);
	EXPECT_EQ(1, s->totals[1].value);
	blamer_snapshot_free(s);
	fx_free(&h);
}

TEST(unit_names_are_checked_and_bounded)
{
	struct fx_heap h;
	struct blamer_snapshot *s;
	const struct blamer_snap_unit_def *d;
	uint32_t i;

	fx_init(&h, 1, FX_SLAB, 9, 9);
	fx_process(&h, 1, "x");
	fx_unit(&h, 1007, BLAMER_BASE_NONE, "requests");
	fx_unit(&h, 1007, BLAMER_BASE_BYTES, "again");	/* the first one wins */
	fx_unit(&h, 1008, BLAMER_BASE_SECONDS, "handling");
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	ASSERT_EQ(2, s->nunit_defs);
	d = blamer_snap_unit_def(s, 1007);
	ASSERT_NE(NULL, d);
	EXPECT_STREQ("requests", d->name);
	EXPECT_EQ(BLAMER_BASE_NONE, d->base);
	d = blamer_snap_unit_def(s, 1008);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(BLAMER_BASE_SECONDS, d->base);
	EXPECT_EQ(NULL, blamer_snap_unit_def(s, 1009));
	blamer_snapshot_free(s);

	/* names that are not metric name parts, a built-in unit, a base
	 * that does not exist: corrupt, and not shown */
	fx_unit(&h, 1010, BLAMER_BASE_NONE, "Bad-Name\x1b");
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	EXPECT_EQ(NULL, blamer_snap_unit_def(s, 1010));
	blamer_snapshot_free(s);
	fx_free(&h);

	fx_init(&h, 1, FX_SLAB, 9, 9);
	fx_process(&h, 1, "x");
	fx_unit(&h, BLAMER_UNIT_BYTES, BLAMER_BASE_NONE, "bytes");
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	EXPECT_EQ(0, s->nunit_defs);
	blamer_snapshot_free(s);
	fx_free(&h);

	fx_init(&h, 1, FX_SLAB, 9, 9);
	fx_process(&h, 1, "x");
	fx_unit(&h, 1000, 7, "nobase");
	fx_unit(&h, 1001, BLAMER_BASE_NONE, "9lives");
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	EXPECT_EQ(0, s->nunit_defs);
	blamer_snapshot_free(s);
	fx_free(&h);

	/* more names than a heap may have units: the rest left unnamed */
	fx_init(&h, 1, FX_SLAB, 9, 9);
	fx_process(&h, 1, "x");
	for (i = 0; i < 3 * RD_MAX_HEAP_UNITS; i++)
		fx_unit(&h, 1000 + i, BLAMER_BASE_NONE, "u");
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_TRUNCATED, s->procs[0].health);
	EXPECT_EQ(RD_MAX_HEAP_UNITS, s->nunit_defs);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/* A path of CPU time 10 whose chain is shard[1] (7) -> shard[0] (5), and another path. */
struct shard_heap {
	struct fx_heap h;
	blamer_ref path, other, shard[2];
};

static void shard_heap(struct shard_heap *sh)
{
	uint64_t one[1] = { FX_ROOT }, two[1] = { FX_GPU };

	fx_init(&sh->h, 1, FX_SLAB, 9, 9);
	fx_process(&sh->h, 1, "x");
	sh->path = fx_path(&sh->h, one, 1, 10, 0);
	sh->other = fx_path(&sh->h, two, 1, 0, 0);
	sh->shard[0] = fx_shard(&sh->h, sh->path, 9, 5, 0);
	sh->shard[1] = fx_shard(&sh->h, sh->path, 0, 7, 0);
}

TEST(bad_shard_chains_are_corrupt_not_fatal)
{
	static const struct {
		const char *what, *problem;
		uint64_t cpu;	/* what is summed before the bad link */
	} cases[] = {
		{ "a shard of another path", "not one of its shards", 17 },
		{ "a loop", "twice", 22 },
		{ "a link out of the heap", "bad reference", 17 },
		{ "a link to a node record", "not one of its shards", 10 },
		{ "two chains sharing a shard", "twice", 22 },
		{ "a shard without an owner", "not one of its shards", 17 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct shard_heap sh;
		struct blamer_snapshot *s;
		struct blamer_dag_shard *s0, *s1;
		const struct blamer_snap_process *p;

		shard_heap(&sh);
		s0 = fx_at(&sh.h, sh.shard[0]);
		s1 = fx_at(&sh.h, sh.shard[1]);
		switch (i) {
		case 0: s0->path = sh.other; break;
		case 1: s0->next_shard = sh.shard[1]; break;
		case 2: s1->next_shard = blamer_make_ref(5, 64); break;
		case 3:
			fx_node(&sh.h, FX_ROOT, "root");
			((struct blamer_dag_path *)fx_at(&sh.h, sh.path))->shards = sh.h.tail;
			break;
		case 4:
			((struct blamer_dag_path *)fx_at(&sh.h, sh.other))->shards = sh.shard[1];
			break;
		case 5: s0->owner.data_id = 0; break;
		}
		s = read_heap(&sh.h);
		ASSERT_NE(NULL, s);
		p = &s->procs[0];
		EXPECT_EQ(BLAMER_HEALTH_CORRUPT, p->health) TH_LOG("%s", cases[i].what);
		EXPECT_NE(NULL, strstr(p->problem, cases[i].problem))
			TH_LOG("%s: %s", cases[i].what, p->problem);
		/* both paths are still shown, with what could be read */
		ASSERT_EQ(2, p->npaths) TH_LOG("%s", cases[i].what);
		EXPECT_EQ(cases[i].cpu, p->paths[0].values[0]) TH_LOG("%s", cases[i].what);
		EXPECT_EQ(0, p->paths[1].values[0]) TH_LOG("%s", cases[i].what);
		blamer_snapshot_free(s);
		fx_free(&sh.h);
	}
}

TEST(torn_records_are_marked_not_shown)
{
	struct fx_heap h;
	struct blamer_snapshot *s;
	struct blamer_log *l;
	const struct blamer_snap_field *f;
	struct blamer_field *fld;
	blamer_ref ud;

	fx_standard(&h, 1, 1, 1);
	/* a log slot and a string field frozen mid-write (odd seq) */
	l = fx_at(&h, ((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->log);
	l->slots[1].seq = 3;
	ud = ((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->user_data;
	fld = (struct blamer_field *)((struct blamer_userdata *)fx_at(&h, ud))->fields;
	fld = (struct blamer_field *)((uint8_t *)fld + fld->record_size);	/* "role" */
	fld->seq = 1;
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_TORN, s->procs[0].health);
	EXPECT_EQ(2, s->procs[0].torn_records);
	EXPECT_EQ(2, s->procs[0].nlogs);	/* the torn one left out */
	f = field(&s->procs[0].user_data, "role");
	ASSERT_NE(NULL, f);
	EXPECT_TRUE(f->torn);
	EXPECT_EQ(NULL, f->bytes);
	f = field(&s->procs[0].user_data, "requests");
	ASSERT_NE(NULL, f);
	EXPECT_FALSE(f->torn);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/*
 * A copy whose version is newer than its data (copy.c): the bytes a first
 * pread() of a dir slab got show a module's seq already even again after
 * an update, and its path from before the update, because the copy loaded
 * them in that order; the second read and the file hold the whole new
 * state. Comparing the version alone accepted the old path; the two
 * copies differ, so the reader reads again and shows the new one.
 */
TEST(a_version_copied_after_its_data_is_not_trusted)
{
	struct blamer_snap_process p = { 0 };
	struct rd_slab raw = { 0 }, ordered[BLAMER_MAX_SLABS] = { { 0 } };
	struct rd_heap rh = { .slabs = ordered, .retries = 10, .p = &p,
			      .s = rd_snapshot_new(NULL) };
	char file[] = "/tmp/blamer-reader-test.XXXXXX";
	struct blamer_module *m;
	struct fx_heap h;
	uint8_t *early;
	int fd;

	fx_init(&h, 1, FX_SLAB, 1, 1);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "t");
	fx_module(&h, "/lib/new.so", 0x1000);
	fd = mkstemp(file);
	ASSERT_GE(fd, 0);
	unlink(file);
	ASSERT_EQ(FX_SLAB, (size_t)pwrite(fd, h.slab[0], FX_SLAB, 0));
	early = malloc(FX_SLAB);
	ASSERT_NE(NULL, early);
	memcpy(early, h.slab[0], FX_SLAB);
	m = (struct blamer_module *)(early + ((uint8_t *)fx_at(&h, nth_record(&h, 1)) -
					      h.slab[0]));
	ASSERT_EQ(0, memcmp(m->path, "/lib/new.so", 11));
	memcpy(m->path, "/lib/old.so", 11);	/* seq stays 2: even */
	raw.buf = early;
	raw.again = h.slab[0];	/* the second read: after the update */
	raw.size = FX_SLAB;
	raw.fd = fd;
	raw.owned = true;
	ASSERT_TRUE(rd_heap_order(&rh, &raw, 1));
	rd_heap_parse(&rh);
	ASSERT_EQ(1, p.nmodules);
	EXPECT_STREQ("/lib/new.so", p.modules[0].path);
	EXPECT_EQ(BLAMER_HEALTH_OK, p.health);
	rd_process_free(&p);
	blamer_snapshot_free(rh.s);
	rd_slab_drop(&raw);
	fx_free(&h);
}

TEST(uninitialized_and_flagged_heaps)
{
	struct fx_heap h;
	struct blamer_snapshot *s;

	fx_standard(&h, 1, 1, 1);
	fx_hh(&h)->state = BLAMER_HEAP_UNINIT;
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_EMPTY, s->procs[0].health);
	blamer_snapshot_free(s);
	fx_hh(&h)->state = 77;
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	blamer_snapshot_free(s);
	fx_hh(&h)->state = BLAMER_HEAP_READY;
	fx_hh(&h)->flags = BLAMER_HEAP_F_CORRUPT;
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	EXPECT_EQ(4, s->procs[0].npaths);	/* still read */
	blamer_snapshot_free(s);
	((struct blamer_slab_header *)h.slab[0])->magic = 0xdead;
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_EMPTY, s->procs[0].health);
	blamer_snapshot_free(s);
	/* two slabs claiming the same index */
	((struct blamer_slab_header *)h.slab[0])->magic = BLAMER_HEAP_MAGIC;
	((struct blamer_slab_header *)h.slab[1])->slab_index = 0;
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	blamer_snapshot_free(s);
	fx_free(&h);
}

TEST(stale_owner_records_are_skipped)
{
	struct fx_heap h;
	struct blamer_snapshot *s;
	blamer_ref t;

	fx_standard(&h, 10, 10, 1);
	h.pid = 99;	/* records made by someone else (e.g. before a fork) */
	t = fx_thread(&h, 99, "stale", 1);
	fx_push(&h, t, BLAMER_ACTIVITY_TASK, "x", 1, 0);
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	EXPECT_EQ(2, s->procs[0].nthreads);
	blamer_snapshot_free(s);
	fx_free(&h);
}

TEST(hostile_strings_stay_printable)
{
	struct fx_heap h;
	struct blamer_snapshot *s;
	struct blamer_dag_node *n;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	size_t i;

	fx_standard(&h, 1, 1, 1);
	for (i = 0; (n = fx_at(&h, nth_record(&h, (int)i)))->hdr.type != BLAMER_REC_DAG_NODE; i++)
		ASSERT_LT(i, 20);	/* the first DAG node */
	memcpy(n->name, "a\"b\\c\nd\x01\xff", 10);
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	f = open_memstream(&buf, &len);
	blamer_snapshot_write_json(s, f, 0, NULL, 0);
	blamer_snapshot_write_prometheus(s, f);
	fclose(f);
	for (i = 0; i < len; i++)
		ASSERT_TRUE(buf[i] == '\n' || (buf[i] >= 0x20 && buf[i] < 0x7f));
	free(buf);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/*
 * A real writer thread pushing and popping on a heap in memory while the
 * reader reads it: a stack the reader accepts (not torn) must be one the
 * writer really had. Each push stamps data[0] with a growing counter, so
 * in any real state the stamps grow from the bottom up; a copy mixing two
 * states (slot 1 from after a re-push, slot 2 from before) would not.
 */
struct race {
	struct fx_heap h;
	blamer_ref t;
	volatile int stop;
};

static void *race_writer(void *arg)
{
	struct race *r = arg;
	struct blamer_thread *t = fx_at(&r->h, r->t);
	uint64_t stamp = 1;
	unsigned seed = 1;

	while (!r->stop) {
		uint32_t d = __atomic_load_n(&t->depth, __ATOMIC_RELAXED);

		seed = seed * 1103515245u + 12345u;
		if (d < 4 && (d == 0 || (seed >> 16) & 1)) {
			t->stack[d].data[0] = stamp++;
			t->stack[d].kind = BLAMER_ACTIVITY_TASK;
			__atomic_store_n(&t->depth, d + 1, __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(&t->depth, d - 1, __ATOMIC_RELEASE);
			__atomic_fetch_add(&t->data_version, 1, __ATOMIC_RELEASE);
		}
	}
	return NULL;
}

TEST(concurrent_writer_never_yields_a_mixed_stack)
{
	struct race r = { 0 };
	pthread_t th;
	int i, torn = 0, ok = 0;

	fx_init(&r.h, 1, FX_SLAB, 1, 1);
	fx_process(&r.h, 1, "race");
	r.t = fx_thread(&r.h, 1, "w", 4);
	ASSERT_EQ(0, pthread_create(&th, NULL, race_writer, &r));
	for (i = 0; i < 20000; i++) {
		struct blamer_snapshot *s = read_heap(&r.h);
		const struct blamer_snap_thread *t;
		size_t k;

		ASSERT_NE(NULL, s);
		ASSERT_EQ(1, s->procs[0].nthreads);
		t = &s->procs[0].threads[0];
		if (t->torn) {
			torn++;
		} else {
			ok++;
			for (k = 1; k < t->nacts; k++)
				ASSERT_LT(t->acts[k - 1].data[0], t->acts[k].data[0]);
		}
		blamer_snapshot_free(s);
	}
	r.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("%d consistent reads, %d marked torn", ok, torn);
	EXPECT_GT(ok, 0);
	fx_free(&r.h);
}

/* ---- dir backend ---- */

static char tmpdir[64];

static struct blamer_snapshot *dir_snapshot(uint32_t flags)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR, .dir = tmpdir,
					.flags = flags, .max_slab_bytes = 1 << 20 };
	struct blamer_reader *r = blamer_reader_open(&o, NULL, 0);
	struct blamer_snapshot *s = NULL;

	if (!r)
		return NULL;
	if (blamer_reader_snapshot(r, &s, NULL, 0))
		s = NULL;
	blamer_reader_close(r);
	return s;
}

static void rm_tmpdir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		return;
}

/* Why the snapshot skipped the directory entry @name, or "". */
static const char *skipped_why(const struct blamer_snapshot *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nskipped; i++)
		if (!strcmp(s->skipped[i].name, name))
			return s->skipped[i].why;
	return "";
}

static const struct blamer_snap_process *by_pid(const struct blamer_snapshot *s, int32_t pid)
{
	size_t i;

	for (i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

/*
 * Status sums the writes every heap dropped, dead heaps included, by
 * reason, and says how many heaps dropped any, in its JSON too.
 */
TEST(status_sums_the_drops_of_every_heap)
{
	uint64_t counts[BLAMER_DROP_REASONS] = { 0 };
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	struct blamer_backend_status st;
	struct blamer_reader *r;
	struct fx_heap a, b;
	char *json = NULL;
	size_t len = 0;
	FILE *f;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	fx_init(&a, 1, FX_SLAB, 3999201, 5);
	fx_process(&a, BLAMER_PHASE_MAIN_LOOP, "/srv/a");
	counts[BLAMER_DROP_STRING_CUT] = 3;
	fx_drops(&a, "worker", "1", counts, BLAMER_DROP_REASONS);
	fx_init(&b, 1, FX_SLAB, 3999202, 6);
	fx_process(&b, BLAMER_PHASE_MAIN_LOOP, "/srv/b");
	counts[BLAMER_DROP_STRING_CUT] = 1;
	counts[BLAMER_DROP_HEAP_FULL] = 4;
	fx_drops(&b, "worker", "2", counts, BLAMER_DROP_REASONS);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999201, 5));
	ASSERT_EQ(0, fx_write_dir(&b, tmpdir, 3999202, 6));
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, blamer_reader_status(r, &st, NULL, 0));
	EXPECT_EQ(2, st.heaps);
	EXPECT_EQ(4, st.drops[BLAMER_DROP_STRING_CUT]);
	EXPECT_EQ(4, st.drops[BLAMER_DROP_HEAP_FULL]);
	EXPECT_EQ(8, st.dropped);
	EXPECT_EQ(2, st.dropping_heaps);
	f = open_memstream(&json, &len);
	ASSERT_NE(NULL, f);
	EXPECT_EQ(0, blamer_status_write_json(&st, f));
	fclose(f);
	EXPECT_NE(NULL, strstr(json, "\"dropped\":\"8\",\"drops\":{\"heap_full\":\"4\",\"string_cut\":\"4\"}"))
		TH_LOG("%s", json);
	EXPECT_NE(NULL, strstr(json, "\"dropping_heaps\":\"2\""));
	free(json);
	blamer_reader_close(r);
	fx_free(&a);
	fx_free(&b);
	rm_tmpdir();
}

TEST(dir_live_dead_and_aggregation)
{
	struct fx_heap a, b;
	struct blamer_snapshot *s;
	const struct blamer_snap_process *p;
	size_t i;
	char path[256];
	int fd;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	/* live: our own pid and start time; dead: a pid with another start */
	fx_standard(&a, getpid(), (int64_t)fx_self_start_ns(), 1);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, getpid(), fx_self_start_ns()));
	fx_standard(&b, 3999001, 5, 2);
	ASSERT_EQ(0, fx_write_dir(&b, tmpdir, 3999001, 5));
	/* junk that must be ignored or refused, never trusted */
	snprintf(path, sizeof(path), "%s/notes.txt", tmpdir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	close(fd);
	snprintf(path, sizeof(path), "%s/12-34.0.slab", tmpdir);
	ASSERT_EQ(0, mkdir(path, 0700));	/* a directory named like a slab */
	snprintf(path, sizeof(path), "%s/13-34.0.slab", tmpdir);
	ASSERT_EQ(0, symlink("/etc/passwd", path));

	s = dir_snapshot(0);
	ASSERT_NE(NULL, s);
	/* the junk is no heap: skipped, each with its reason */
	ASSERT_EQ(2, s->nprocs);
	ASSERT_EQ(3, s->nskipped);
	EXPECT_EQ(3, s->skipped_total);
	EXPECT_STREQ("not a regular file", skipped_why(s, "12-34.0.slab"));
	EXPECT_STREQ("a symlink, not followed", skipped_why(s, "13-34.0.slab"));
	EXPECT_NE(NULL, strstr(skipped_why(s, "notes.txt"), "not a slab file name"));
	p = by_pid(s, getpid());
	ASSERT_NE(NULL, p);
	EXPECT_EQ(BLAMER_PROC_LIVE, p->state);
	EXPECT_EQ(BLAMER_HEALTH_OK, p->health);
	EXPECT_EQ(4, p->npaths);
	p = by_pid(s, 3999001);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(BLAMER_PROC_DEAD, p->state);
	/* not read in full: its headers, as list has them (one summary of a
	 * dead heap for every view) */
	EXPECT_EQ(BLAMER_HEALTH_UNCHECKED, p->health);
	EXPECT_STREQ("app", p->comm);
	EXPECT_STREQ("/usr/bin/app --worker 1", p->cmdline);
	EXPECT_GT(p->used, 1000);
	EXPECT_EQ(0, p->npaths);
	EXPECT_EQ(NULL, by_pid(s, 13));
	/* only the live heap counts in the totals */
	for (i = 0; i < s->ntotals; i++)
		EXPECT_EQ(1, s->totals[i].nprocs);
	blamer_snapshot_free(s);

	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	ASSERT_NE(NULL, s);
	p = by_pid(s, 3999001);
	EXPECT_EQ(BLAMER_HEALTH_OK, p->health);
	EXPECT_STREQ("app", p->comm);	/* from the heap's argv[0] */
	EXPECT_EQ(NULL, by_pid(s, 12));
	for (i = 0; i < s->ntotals; i++) {
		const struct blamer_snap_total *t = &s->totals[i];

		EXPECT_EQ(2, t->nprocs);
		if (t->depth == 3 && t->unit == BLAMER_UNIT_CPU_NS)
			EXPECT_EQ(3 * 5000000ull, t->value);	/* scale 1 + scale 2 */
	}
	blamer_snapshot_free(s);

	s = dir_snapshot(BLAMER_READ_HEADERS_ONLY);
	ASSERT_NE(NULL, s);
	p = by_pid(s, getpid());
	EXPECT_EQ(BLAMER_HEALTH_UNCHECKED, p->health);
	EXPECT_EQ(0, p->nthreads);
	EXPECT_STREQ("/usr/bin/app --worker 1", p->cmdline);
	EXPECT_EQ(2 * FX_SLAB, p->size);
	EXPECT_GT(p->used, 1000);
	blamer_snapshot_free(s);

	/* truncated and oversized files */
	snprintf(path, sizeof(path), "%s/3999001-5.1.slab", tmpdir);
	ASSERT_EQ(0, truncate(path, 100));
	snprintf(path, sizeof(path), "%s/3999001-5.0.slab", tmpdir);
	ASSERT_EQ(0, truncate(path, 2 << 20));
	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, by_pid(s, 3999001)->health);
	blamer_snapshot_free(s);

	rm_tmpdir();
	fx_free(&a);
	fx_free(&b);
}

/*
 * A dir heap truncated and rewritten over and over while the reader reads
 * it: the reader must neither fault (no SIGBUS: pread, not mmap) nor fail,
 * only report what it saw.
 */
/*
 * The attribution view across processes: process A measured /a/b,
 * process B /a/c and /a itself. The tree holds every path and prefix in
 * path order, each with its own values and those below it in every unit
 * present, and counts the processes below a node (2 under /a, though no
 * single total has more than one).
 */
TEST(attribution_view_spans_processes)
{
	static const uint64_t ab[] = { 1, 2 }, ac[] = { 1, 3 }, a[] = { 1 }, b[] = { 2 };
	const struct blamer_snap_tree_node *t;
	const struct blamer_snap_total *tot;
	struct blamer_dag_path *pr;
	struct fx_heap ha, hb;
	struct blamer_snapshot *s;
	char text[64];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	fx_init(&ha, 1, FX_SLAB, 3999101, 5);
	fx_process(&ha, BLAMER_PHASE_MAIN_LOOP, "a");
	fx_node(&ha, 1, "a");
	fx_node(&ha, 2, "b");
	fx_path(&ha, ab, 2, 10, 0);
	ASSERT_EQ(0, fx_write_dir(&ha, tmpdir, 3999101, 5));
	fx_init(&hb, 1, FX_SLAB, 3999102, 6);
	fx_process(&hb, BLAMER_PHASE_MAIN_LOOP, "b");
	fx_path(&hb, ac, 2, 5, 7);
	pr = fx_at(&hb, fx_path(&hb, a, 1, 0, 0));
	pr->units[0] = BLAMER_UNIT_COUNT;
	pr->values[0] = 1;
	pr->units[1] = BLAMER_UNIT_NONE;
	ASSERT_EQ(0, fx_write_dir(&hb, tmpdir, 3999102, 6));

	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(3, s->nunits);
	EXPECT_EQ(BLAMER_UNIT_CPU_NS, s->units[0]);
	EXPECT_EQ(BLAMER_UNIT_BYTES, s->units[1]);
	EXPECT_EQ(BLAMER_UNIT_COUNT, s->units[2]);
	EXPECT_EQ(2, blamer_snap_unit_index(s, BLAMER_UNIT_COUNT));
	EXPECT_EQ(-1, blamer_snap_unit_index(s, 1007));
	ASSERT_EQ(3, s->ntree);
	t = &s->tree[0];	/* /a */
	EXPECT_EQ(1, t->depth);
	EXPECT_TRUE(t->walked);
	EXPECT_EQ(2, t->nprocs);
	EXPECT_EQ(3, t->end);
	EXPECT_EQ(0, t->self[0]);
	EXPECT_EQ(1, t->self[2]);
	EXPECT_EQ(15, t->inclusive[0]);
	EXPECT_EQ(7, t->inclusive[1]);
	EXPECT_EQ(1, t->inclusive[2]);
	t = &s->tree[1];	/* /a/b */
	EXPECT_EQ(0, blamer_path_cmp(t->nodes, t->depth, ab, 2));
	EXPECT_EQ(1, t->nprocs);
	EXPECT_EQ(2, t->end);
	EXPECT_EQ(10, t->self[0]);
	EXPECT_EQ(10, t->inclusive[0]);
	t = &s->tree[2];	/* /a/c */
	EXPECT_EQ(0, blamer_path_cmp(t->nodes, t->depth, ac, 2));
	EXPECT_EQ(3, t->end);
	EXPECT_EQ(7, t->self[1]);
	/* path order: a prefix first, then node by node */
	EXPECT_LT(blamer_path_cmp(a, 1, ab, 2), 0);
	EXPECT_LT(blamer_path_cmp(ab, 2, ac, 2), 0);
	EXPECT_GT(blamer_path_cmp(b, 1, ac, 2), 0);
	tot = blamer_snap_total_find(s, ac, 2, BLAMER_UNIT_BYTES);
	ASSERT_NE(NULL, tot);
	EXPECT_EQ(7, tot->value);
	EXPECT_EQ(NULL, blamer_snap_total_find(s, ac, 2, BLAMER_UNIT_COUNT));
	EXPECT_EQ(6, blamer_snap_path_string(s, ac, 2, text, sizeof(text)));
	EXPECT_STREQ("/a/0x3", text);
	EXPECT_EQ(6, blamer_snap_path_string(s, ac, 2, text, 4));	/* cut, as snprintf */
	EXPECT_STREQ("/a/", text);
	blamer_snapshot_free(s);
	fx_free(&ha);
	fx_free(&hb);
	rm_tmpdir();
}

TEST(dir_file_truncated_while_read)
{
	struct fx_heap a;
	char path[256];
	pid_t child;
	int i, st, bad = 0, seen_ok = 0;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	fx_standard(&a, 3999009, 9, 1);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999009, 9));
	snprintf(path, sizeof(path), "%s/3999009-9.0.slab", tmpdir);
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		int fd = open(path, O_WRONLY);

		/* never outlive a test that failed before it could kill us */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);

		for (;;) {
			if (ftruncate(fd, 0) || pwrite(fd, a.slab[0], 700, 0) != 700 ||
			    pwrite(fd, a.slab[0], FX_SLAB, 0) != FX_SLAB)
				_exit(1);
		}
	}
	for (i = 0; i < 2000; i++) {
		struct blamer_snapshot *s = dir_snapshot(BLAMER_READ_DEAD_FULL);

		if (!s || s->nprocs != 1) {
			bad++;
		} else {
			seen_ok += s->procs[0].health == BLAMER_HEALTH_OK;
			/* whatever it saw, it says so: never ok with missing records */
			if (s->procs[0].health == BLAMER_HEALTH_OK)
				EXPECT_EQ(4, s->procs[0].npaths);
		}
		blamer_snapshot_free(s);
	}
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	TH_LOG("%d of 2000 reads saw the whole heap", seen_ok);
	EXPECT_EQ(0, bad);
	rm_tmpdir();
	fx_free(&a);
}

/*
 * A long-lived reader reads a slab file first as far as it read it the
 * last time: a heap that grew since (a file rewritten with more records,
 * a freeptr past that hint) is still read whole, and one that shrank is
 * read as it is now.
 */
TEST(long_lived_dir_reader_follows_a_heap_that_grows_and_shrinks)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL };
	uint64_t p5[] = { FX_ROOT, 0x500ull };
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct fx_heap a, b;
	int i;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	fx_standard(&a, 3999011, 11, 1);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999011, 11));
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	ASSERT_EQ(1, s->nprocs);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	EXPECT_EQ(4, s->procs[0].npaths);
	blamer_snapshot_free(s);
	/* grown: three more paths in the second slab, past its old freeptr */
	a.cur = 1;
	for (i = 0; i < 3; i++) {
		p5[1] = 0x500ull + (uint64_t)i;
		fx_path(&a, p5, 2, 1000, 0);
	}
	a.cur = 0;
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999011, 11));
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	ASSERT_EQ(1, s->nprocs);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	EXPECT_EQ(7, s->procs[0].npaths);
	blamer_snapshot_free(s);
	/* shrunk back: the heap as it is now, nothing of the bigger one */
	fx_standard(&b, 3999011, 11, 1);
	ASSERT_EQ(0, fx_write_dir(&b, tmpdir, 3999011, 11));
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	ASSERT_EQ(1, s->nprocs);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	EXPECT_EQ(4, s->procs[0].npaths);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
	fx_free(&b);
}

/* Bytes this process has read through read()/pread() so far. */
static uint64_t bytes_read(void)
{
	char line[128];
	uint64_t n = 0;
	FILE *f = fopen("/proc/self/io", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "rchar: %" SCNu64, &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* A snapshot of @r as JSON and Prometheus text, its own times zeroed:
 * what it holds, comparable. */
static char *snapshot_json(struct blamer_reader *r, uint64_t *read)
{
	struct blamer_snapshot *s;
	uint64_t before = bytes_read();
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (blamer_reader_snapshot(r, &s, NULL, 0))
		return NULL;
	*read = bytes_read() - before;
	s->realtime_ns = s->monotonic_ns = 0;
	f = open_memstream(&text, &len);
	if (f) {
		blamer_snapshot_write_json(s, f, 0, NULL, 0);
		blamer_snapshot_write_prometheus(s, f);	/* and the unit names */
		fclose(f);
	}
	blamer_snapshot_free(s);
	return text;
}

/*
 * BLAMER_READ_KEEP_DEAD: a dead heap is read once, then its kept copy
 * shows the same (every record kind, the unit names) without a byte read,
 * until a file of it changes, and never while a writer holds its lock
 * (one in another pid namespace, which /proc does not show).
 */
TEST(long_lived_reader_keeps_dead_heaps_while_unchanged)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL };
	struct blamer_reader *fresh, *kept;
	uint64_t n, p_late[] = { FX_ROOT, 0x777 };
	char *want, *got, path[256];
	struct fx_heap a;
	int lock;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	fx_standard(&a, 3999031, 31, 2);
	fx_unit(&a, BLAMER_UNIT_APP_BASE, BLAMER_BASE_BYTES, "cache");
	((struct blamer_dag_path *)fx_at(&a, fx_path(&a, p_late, 1, 5, 6)))->units[1] =
		BLAMER_UNIT_APP_BASE;
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999031, 31));
	sleep(2);	/* its files quiet: a kept heap's files are (see dir.c) */
	fresh = blamer_reader_open(&o, NULL, 0);
	o.flags |= BLAMER_READ_KEEP_DEAD;
	kept = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, fresh);
	ASSERT_NE(NULL, kept);

	want = snapshot_json(fresh, &n);
	ASSERT_NE(NULL, want);
	EXPECT_NE(NULL, strstr(want, "blamer_app_cache_bytes_total"));
	got = snapshot_json(kept, &n);	/* read and kept */
	ASSERT_NE(NULL, got);
	EXPECT_STREQ(want, got);
	EXPECT_GT(n, 1000);
	free(got);
	got = snapshot_json(kept, &n);	/* the kept copy */
	ASSERT_NE(NULL, got);
	EXPECT_STREQ(want, got);
	EXPECT_LT(n, 1000);	/* /proc only: no slab file read */
	free(got);
	free(want);

	/* changed: read again, and the change shown */
	fx_node(&a, 0x777, "late");
	fx_edge(&a, FX_ROOT, 0x777);
	fx_path(&a, p_late, 2, 5, 6);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999031, 31));
	got = snapshot_json(kept, &n);
	ASSERT_NE(NULL, got);
	EXPECT_NE(NULL, strstr(got, "\"late\""));
	EXPECT_GT(n, 1000);
	want = snapshot_json(fresh, &n);
	ASSERT_NE(NULL, want);
	EXPECT_STREQ(want, got);
	free(got);
	free(want);

	/* a writer holds the lock: read every time, whatever its files say */
	sleep(2);
	snprintf(path, sizeof(path), "%s/3999031-31.0.slab", tmpdir);
	lock = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, lock);
	ASSERT_EQ(0, flock(lock, LOCK_SH));
	got = snapshot_json(kept, &n);
	free(got);
	got = snapshot_json(kept, &n);
	ASSERT_NE(NULL, got);
	EXPECT_GT(n, 1000);
	free(got);
	close(lock);
	got = snapshot_json(kept, &n);	/* read, now kept */
	free(got);
	got = snapshot_json(kept, &n);
	EXPECT_LT(n, 1000);
	free(got);

	/* released: gone from the next snapshot, kept copy and all */
	ASSERT_EQ(0, unlink(path));
	snprintf(path, sizeof(path), "%s/3999031-31.1.slab", tmpdir);
	ASSERT_EQ(0, unlink(path));
	got = snapshot_json(kept, &n);
	ASSERT_NE(NULL, got);
	EXPECT_EQ(NULL, strstr(got, "3999031"));
	free(got);

	blamer_reader_close(fresh);
	blamer_reader_close(kept);
	rm_tmpdir();
	fx_free(&a);
}

/* Does the cached text of the next snapshot of @r equal a fresh export's? */
static bool cached_matches(struct blamer_reader *r, struct blamer_prom_cache *c, size_t *len)
{
	char *want = NULL, *got = NULL;
	size_t wlen = 0, wcap = 0, gcap = 0;
	struct blamer_snapshot *s;
	bool same;

	if (blamer_reader_snapshot(r, &s, NULL, 0))
		return false;
	same = !blamer_snapshot_prometheus_text(s, &want, &wlen, &wcap) &&
	       !blamer_snapshot_prometheus_text_cached(s, c, &got, len, &gcap) &&
	       *len == wlen && !memcmp(want, got, wlen);
	if (!same)
		fprintf(stderr, "# fresh:\n%.*s\n# cached:\n%.*s\n", (int)wlen, want, (int)*len, got);
	free(want);
	free(got);
	blamer_snapshot_free(s);
	return same;
}

/*
 * blamer_prom_cache: scrape after scrape, the text a long-lived exporter
 * writes is the one-off export's, byte for byte, while processes keep
 * their values, change them, come and go, and while what every process's
 * text depends on changes (a unit named, two nodes of one name).
 */
TEST(prometheus_cache_writes_what_a_fresh_export_writes)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL | BLAMER_READ_KEEP_DEAD |
						 BLAMER_READ_NO_TOTALS };
	uint64_t twin[] = { FX_ROOT, 0x999 }, app[] = { FX_ROOT, FX_GPU };
	struct blamer_prom_cache *c = blamer_prom_cache_new();
	struct blamer_reader *r;
	struct fx_heap a, b, d;
	char path[256];
	size_t len;

	ASSERT_NE(NULL, c);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	fx_standard(&a, 3999041, 41, 1);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999041, 41));
	fx_standard(&b, 3999042, 42, 2);
	ASSERT_EQ(0, fx_write_dir(&b, tmpdir, 3999042, 42));
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	EXPECT_TRUE(cached_matches(r, c, &len));	/* all made */
	EXPECT_GT(len, 1000);
	EXPECT_TRUE(cached_matches(r, c, &len));	/* all kept */
	sleep(2);	/* now the reader keeps the heaps too */
	EXPECT_TRUE(cached_matches(r, c, &len));
	EXPECT_TRUE(cached_matches(r, c, &len));

	/* one process's values change */
	fx_free(&b);
	fx_standard(&b, 3999042, 42, 3);
	ASSERT_EQ(0, fx_write_dir(&b, tmpdir, 3999042, 42));
	EXPECT_TRUE(cached_matches(r, c, &len));
	EXPECT_TRUE(cached_matches(r, c, &len));

	/* a new process names another node "tab": every "tab" label changes */
	fx_standard(&d, 3999043, 43, 1);
	d.cur = 1;
	fx_node(&d, 0x999, "tab");
	fx_path(&d, twin, 2, 100, 200);
	d.cur = 0;
	ASSERT_EQ(0, fx_write_dir(&d, tmpdir, 3999043, 43));
	EXPECT_TRUE(cached_matches(r, c, &len));
	EXPECT_TRUE(cached_matches(r, c, &len));

	/* a unit gets a name: its values move to a family of their own */
	d.cur = 1;
	fx_unit(&d, BLAMER_UNIT_APP_BASE + 1, BLAMER_BASE_SECONDS, "render");
	((struct blamer_dag_path *)fx_at(&d, fx_path(&d, app, 2, 300, 400)))->units[1] =
		BLAMER_UNIT_APP_BASE + 1;
	d.cur = 0;
	ASSERT_EQ(0, fx_write_dir(&d, tmpdir, 3999043, 43));
	EXPECT_TRUE(cached_matches(r, c, &len));
	EXPECT_TRUE(cached_matches(r, c, &len));

	/* a process goes */
	snprintf(path, sizeof(path), "%s/3999041-41.0.slab", tmpdir);
	ASSERT_EQ(0, unlink(path));
	snprintf(path, sizeof(path), "%s/3999041-41.1.slab", tmpdir);
	ASSERT_EQ(0, unlink(path));
	EXPECT_TRUE(cached_matches(r, c, &len));
	EXPECT_TRUE(cached_matches(r, c, &len));

	blamer_prom_cache_free(c);
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
	fx_free(&b);
	fx_free(&d);
}

/* The value of the sample of @text whose line starts with @prefix, or -1. */
static double sample(const char *text, const char *prefix)
{
	const char *at = text;
	size_t n = strlen(prefix);

	while ((at = strstr(at, prefix))) {
		if (at == text || at[-1] == '\n')
			return strtod(strchr(at, ' ') + 1, NULL);
		at += n;
	}
	return -1;
}

/*
 * A long-lived exporter's counters never go down, whatever the heap
 * shows (prom_guard.c): a heap whose counters are rewritten lower keeps
 * its series at their highest, and the decreases are counted for it
 * (once per series each time the heap shows less than the time before,
 * not again while it stays low); a heap that grows past the floor is
 * shown as it is; a process that is gone for a scrape comes back to its
 * floor. A one-off export has no memory: it shows what the heap says.
 */
TEST(prometheus_counters_never_go_down_in_a_long_lived_exporter)
{
	static const char frame[] =
		"blamer_attribution_cpu_seconds_total{pid=\"4242\",";
	static const char dec[] = "blamer_counter_decreases_total{pid=\"4242\"";
	struct blamer_prom_cache *c = blamer_prom_cache_new();
	struct blamer_snapshot *s, *none;
	char *buf = NULL, *one = NULL, *first = NULL;
	size_t len, cap = 0, olen, ocap = 0;
	struct fx_heap h, other;
	const char *at;
	int i;

	ASSERT_NE(NULL, c);
	/* the frame path's cpu series: 5 ms per scale step */
	fx_standard(&h, 4242, 777, 5);
	s = read_heap(&h);
	ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap));
	blamer_snapshot_free(s);
	first = strndup(buf, len);
	at = strstr(first, frame);
	ASSERT_NE(NULL, at);
	ASSERT_NE(NULL, strstr(at, "path=\"/browser/tab/frame\"} 0.025000000\n"));
	EXPECT_EQ(NULL, strstr(first, "blamer_counter_decreases_total"));
	/* rewritten lower, twice (the second time the same): held, counted once */
	for (i = 0; i < 2; i++) {
		fx_free(&h);
		fx_standard(&h, 4242, 777, 3);
		s = read_heap(&h);
		ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap));
		buf[len] = '\0';
		at = strstr(buf, frame);
		ASSERT_NE(NULL, at);
		EXPECT_NE(NULL, strstr(at, "path=\"/browser/tab/frame\"} 0.025000000\n"));
		/* every counter of the heap went down: each series counted */
		EXPECT_LT(0, sample(buf, dec));
		EXPECT_NE(NULL, strstr(buf, "# TYPE blamer_counter_decreases_total counter\n"));
		/* the one-off export says what the heap says */
		ASSERT_EQ(0, blamer_snapshot_prometheus_text(s, &one, &olen, &ocap));
		one[olen] = '\0';
		EXPECT_NE(NULL, strstr(one, "path=\"/browser/tab/frame\"} 0.015000000\n"));
		EXPECT_EQ(NULL, strstr(one, "blamer_counter_decreases_total"));
		blamer_snapshot_free(s);
	}
	{
		double d = sample(buf, dec);

		/* up again, below the floor: held, no new decrease */
		fx_free(&h);
		fx_standard(&h, 4242, 777, 4);
		s = read_heap(&h);
		ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap));
		blamer_snapshot_free(s);
		buf[len] = '\0';
		EXPECT_NE(NULL, strstr(buf, "path=\"/browser/tab/frame\"} 0.025000000\n"));
		EXPECT_EQ(d, sample(buf, dec));
		/* gone for a scrape, then back lower still: the floor holds */
		fx_standard(&other, 4243, 778, 1);
		none = read_heap(&other);
		ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(none, c, &buf, &len, &cap));
		blamer_snapshot_free(none);
		fx_free(&other);
		fx_free(&h);
		fx_standard(&h, 4242, 777, 2);
		s = read_heap(&h);
		ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap));
		blamer_snapshot_free(s);
		buf[len] = '\0';
		EXPECT_NE(NULL, strstr(buf, "path=\"/browser/tab/frame\"} 0.025000000\n"));
		EXPECT_LT(d, sample(buf, dec));
	}
	/* past the floor: as the heap says */
	fx_free(&h);
	fx_standard(&h, 4242, 777, 9);
	s = read_heap(&h);
	ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap));
	blamer_snapshot_free(s);
	buf[len] = '\0';
	EXPECT_NE(NULL, strstr(buf, "path=\"/browser/tab/frame\"} 0.045000000\n"));
	/* a path comes (the series come in another order) and all go lower:
	 * each still held at its own floor, the new one as the heap says */
	{
		uint64_t mid[] = { FX_ROOT, 0x250 };

		fx_free(&h);
		fx_standard(&h, 4242, 777, 2);
		h.cur = 1;
		fx_node(&h, 0x250, "mid");
		fx_path(&h, mid, 2, 7000000, 5);
		h.cur = 0;
		s = read_heap(&h);
		ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap));
		blamer_snapshot_free(s);
		buf[len] = '\0';
		EXPECT_NE(NULL, strstr(buf, "path=\"/browser/tab/frame\"} 0.045000000\n"));
		EXPECT_NE(NULL, strstr(buf, "path=\"/browser/mid\"} 0.007000000\n"));
		EXPECT_NE(NULL, strstr(buf, "path=\"/browser/gpu\"} 0.004500000\n"));
	}
	free(buf);
	free(one);
	free(first);
	fx_free(&h);
	blamer_prom_cache_free(c);
}

TEST(dir_release_removes_dead_only)
{
	struct fx_heap a;
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	char e[256];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	fx_standard(&a, getpid(), (int64_t)fx_self_start_ns(), 1);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, getpid(), fx_self_start_ns()));
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999002, 9));
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e)));
	ASSERT_EQ(2, s->nprocs);
	EXPECT_EQ(-EBUSY, blamer_reader_release(r, by_pid(s, getpid()), e, sizeof(e)));
	EXPECT_EQ(0, blamer_reader_release(r, by_pid(s, 3999002), e, sizeof(e)));
	blamer_snapshot_free(s);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e)));
	EXPECT_EQ(1, s->nprocs);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
}

/* ---- is a dir heap's writer alive? (alive.c) ---- */

/* How many pidfds this process holds. */
static int count_pidfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	char path[300], link[64];
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		l = readlink(path, link, sizeof(link) - 1);
		if (l > 0) {
			link[l] = '\0';
			n += !!strstr(link, "[pidfd]");
		}
	}
	closedir(d);
	return n;
}

static void rename_self(int sig)
{
	(void)sig;
	prctl(PR_SET_NAME, "\x1b[2Jafter");	/* an escape sequence, to be made printable */
}

/* A child named @name that waits to be killed (SIGUSR1 renames it). */
static pid_t spawn_waiter(const char *name)
{
	int ready[2];
	pid_t pid;
	char c;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (!pid) {
		close(ready[0]);
		signal(SIGUSR1, rename_self);
		prctl(PR_SET_NAME, name);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &c, 1) != 1)
		pid = -1;
	close(ready[0]);
	return pid;
}

/* A dir heap written as @pid's, under its real start time. */
static int heap_of(pid_t pid, struct fx_heap *h)
{
	uint64_t start = fx_start_ns(pid);

	fx_standard(h, pid, (int64_t)start, 1);
	return start ? fx_write_dir(h, tmpdir, pid, start) : -1;
}

/* @pid has exited (a zombie now, not reaped). */
static void wait_exit(pid_t pid)
{
	siginfo_t si;

	waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT);
}

/* BLAMER_PROC_* of @pid's heap in a snapshot of @r, and its comm; -1: none. */
static int state_in(struct blamer_reader *r, pid_t pid, char *comm)
{
	struct blamer_snapshot *s;
	const struct blamer_snap_process *p;
	int st = -1;

	if (blamer_reader_snapshot(r, &s, NULL, 0))
		return st;
	p = by_pid(s, pid);
	if (p) {
		st = (int)p->state;
		if (comm)
			snprintf(comm, 16, "%s", p->comm);
	}
	blamer_snapshot_free(s);
	return st;
}

/*
 * A long-lived reader keeps a pidfd for a writer it found alive (from its
 * second snapshot on) instead of reading /proc each time: the writer is
 * still seen to end, as a zombie and once reaped, its pidfd is then
 * closed, and a name it gives itself shows within a second, made
 * printable.
 */
TEST(long_lived_reader_watches_its_writers)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	struct blamer_reader *r;
	struct fx_heap a;
	char comm[16];
	pid_t child;
	int base;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	child = spawn_waiter("before");
	ASSERT_LT(0, child);
	ASSERT_EQ(0, heap_of(child, &a));
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	base = count_pidfds();

	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));
	EXPECT_STREQ("before", comm);
	EXPECT_EQ(base, count_pidfds());	/* a one-shot reader keeps none */
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));
	EXPECT_EQ(base + 1, count_pidfds());
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));
	EXPECT_STREQ("before", comm);

	/* renamed: shown within a second (and a snapshot), printable */
	ASSERT_EQ(0, kill(child, SIGUSR1));
	usleep(1100 * 1000);
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));
	EXPECT_STREQ("?[2Jafter", comm);
	EXPECT_EQ(base + 1, count_pidfds());

	/* ended: dead as a zombie, its pidfd closed; dead once reaped */
	ASSERT_EQ(0, kill(child, SIGKILL));
	wait_exit(child);
	EXPECT_EQ(BLAMER_PROC_DEAD, state_in(r, child, NULL));
	EXPECT_EQ(base, count_pidfds());
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	EXPECT_EQ(BLAMER_PROC_DEAD, state_in(r, child, NULL));
	EXPECT_EQ(BLAMER_PROC_DEAD, state_in(r, child, NULL));
	EXPECT_EQ(base, count_pidfds());
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
}

static void *wait_forever(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/*
 * A process whose main thread called pthread_exit() shows as a zombie in
 * /proc while its other threads still run (and write): it is alive, to a
 * one-shot reader and to a long-lived one, until its last thread ends.
 */
TEST(a_process_whose_main_thread_exited_is_alive)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct fx_heap a;
	char path[64], stat[512];
	pid_t child;
	int i;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		pthread_t t;

		if (pthread_create(&t, NULL, wait_forever, NULL))
			_exit(1);
		pthread_exit(NULL);
	}
	/* until /proc shows the main thread a zombie */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
	for (i = 0; i < 500; i++) {
		FILE *f = fopen(path, "r");
		char *rp;

		stat[0] = '\0';
		if (f) {
			if (!fgets(stat, sizeof(stat), f))
				stat[0] = '\0';
			fclose(f);
		}
		rp = strrchr(stat, ')');
		if (rp && rp[1] == ' ' && rp[2] == 'Z')
			break;
		usleep(10 * 1000);
	}
	ASSERT_LT(i, 500) TH_LOG("%s", stat);
	ASSERT_EQ(0, heap_of(child, &a));

	s = dir_snapshot(0);
	ASSERT_NE(NULL, s);
	ASSERT_NE(NULL, by_pid(s, child));
	EXPECT_EQ(BLAMER_PROC_LIVE, by_pid(s, child)->state);
	blamer_snapshot_free(s);
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, NULL));
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, NULL));	/* watched */
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, NULL));

	ASSERT_EQ(0, kill(child, SIGKILL));
	wait_exit(child);
	EXPECT_EQ(BLAMER_PROC_DEAD, state_in(r, child, NULL));
	s = dir_snapshot(0);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_PROC_DEAD, by_pid(s, child)->state);
	blamer_snapshot_free(s);
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
}

/* Descriptors of this process open on a file of tmpdir: all of them,
 * and those whose file was removed since ("(deleted)"). */
static int count_tmpdir_fds(int *deleted)
{
	DIR *d = opendir("/proc/self/fd");
	char path[300], link[4096];
	struct dirent *e;
	int n = 0;

	*deleted = 0;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = '\0';
		if (strncmp(link, tmpdir, strlen(tmpdir)) || link[strlen(tmpdir)] != '/')
			continue;
		n++;
		*deleted += !!strstr(link, "(deleted)");
	}
	closedir(d);
	return n;
}

/* @p's cmdline in a snapshot of @r ("" if absent), and how many of its
 * entries the snapshot skipped. */
static void cmdline_in(struct blamer_reader *r, pid_t pid, char *cmd, size_t len,
		       size_t *skipped)
{
	const struct blamer_snap_process *p;
	struct blamer_snapshot *s;

	cmd[0] = '\0';
	*skipped = 0;
	if (blamer_reader_snapshot(r, &s, NULL, 0))
		return;
	p = by_pid(s, pid);
	if (p)
		snprintf(cmd, len, "%s", p->cmdline);
	*skipped = s->nskipped;
	blamer_snapshot_free(s);
}

/*
 * A long-lived reader keeps a live heap's files open from its second
 * snapshot on (no openat() per file per snapshot), but what it reads is
 * still what the names are: a file replaced under a name is read anew
 * and the old descriptor closed, a file made untrustworthy (group
 * writable) is skipped as a freshly opened one would be, and a released
 * heap's descriptors are closed with it.
 */
TEST(long_lived_reader_keeps_live_heap_files_open)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	char cmd[256], name[300], other[64], from[400], to[400];
	struct blamer_reader *r;
	struct fx_heap a, b;
	size_t skipped;
	int del, i;
	uint64_t start;
	pid_t child;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	child = spawn_waiter("kept");
	ASSERT_LT(0, child);
	ASSERT_EQ(0, heap_of(child, &a));	/* two slab files */
	start = fx_start_ns(child);
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);

	cmdline_in(r, child, cmd, sizeof(cmd), &skipped);
	EXPECT_STREQ("/usr/bin/app --worker 1", cmd);
	EXPECT_EQ(0, count_tmpdir_fds(&del));	/* a one-shot reader keeps none */
	for (i = 0; i < 3; i++) {
		cmdline_in(r, child, cmd, sizeof(cmd), &skipped);
		EXPECT_STREQ("/usr/bin/app --worker 1", cmd);
		EXPECT_EQ(2, count_tmpdir_fds(&del));	/* the same two, kept */
		EXPECT_EQ(0, del);
	}

	/* replaced under its names (written elsewhere, renamed over them) */
	snprintf(other, sizeof(other), "%s.other", tmpdir);
	ASSERT_EQ(0, mkdir(other, 0700));
	fx_init(&b, 2, FX_SLAB, child, (int64_t)start);
	fx_process(&b, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/replaced");
	ASSERT_EQ(0, fx_write_dir(&b, other, child, start));
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "%d-%llu.%d.slab", (int)child, (unsigned long long)start,
			 i);
		snprintf(from, sizeof(from), "%s/%s", other, name);
		snprintf(to, sizeof(to), "%s/%s", tmpdir, name);
		ASSERT_EQ(0, rename(from, to));
	}
	rmdir(other);
	cmdline_in(r, child, cmd, sizeof(cmd), &skipped);
	EXPECT_STREQ("/usr/bin/replaced", cmd);
	EXPECT_EQ(2, count_tmpdir_fds(&del));	/* the new files' */
	EXPECT_EQ(0, del);			/* the old ones closed */

	/* group-writable: skipped, kept or not, and its descriptor closed */
	snprintf(to, sizeof(to), "%s/%d-%llu.0.slab", tmpdir, (int)child,
		 (unsigned long long)start);
	ASSERT_EQ(0, chmod(to, 0620));
	cmdline_in(r, child, cmd, sizeof(cmd), &skipped);
	EXPECT_EQ(1, skipped);
	EXPECT_EQ(1, count_tmpdir_fds(&del));	/* slab 1's only */
	ASSERT_EQ(0, chmod(to, 0600));
	cmdline_in(r, child, cmd, sizeof(cmd), &skipped);
	EXPECT_STREQ("/usr/bin/replaced", cmd);
	EXPECT_EQ(0, skipped);
	EXPECT_EQ(2, count_tmpdir_fds(&del));

	/* released: gone from the snapshot, nothing of it held open */
	for (i = 0; i < 2; i++) {
		snprintf(to, sizeof(to), "%s/%d-%llu.%d.slab", tmpdir, (int)child,
			 (unsigned long long)start, i);
		ASSERT_EQ(0, unlink(to));
	}
	cmdline_in(r, child, cmd, sizeof(cmd), &skipped);
	EXPECT_STREQ("", cmd);
	EXPECT_EQ(0, count_tmpdir_fds(&del));

	blamer_reader_close(r);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	rm_tmpdir();
	fx_free(&a);
	fx_free(&b);
}

/*
 * A live dir heap is read twice only for the records compared in two
 * copies (logs, modules, user data, stacks: rd_reads_stable()). A
 * snapshot that decodes none of them (an exporter's) reads it once, and
 * still reads it right: every record checked, metrics summed, the heap
 * healthy; the same heaps read with every record kind, twice, agree.
 */
TEST(a_live_heap_is_read_once_when_nothing_compares_copies)
{
	const uint32_t once = BLAMER_READ_NO_LOG | BLAMER_READ_NO_MODULES |
			      BLAMER_READ_NO_USERDATA | BLAMER_READ_NO_STACKS;
	const struct blamer_snap_series *x;
	const struct blamer_snap_process *p;
	struct blamer_snapshot *s;
	struct fx_heap a, m;
	pid_t kids[2];
	int k;

	EXPECT_FALSE(rd_reads_stable(once));
	EXPECT_FALSE(rd_reads_stable((once ^ BLAMER_READ_NO_STACKS) | BLAMER_READ_NO_THREADS));
	EXPECT_TRUE(rd_reads_stable(once ^ BLAMER_READ_NO_STACKS));
	EXPECT_TRUE(rd_reads_stable(once ^ BLAMER_READ_NO_LOG));
	EXPECT_TRUE(rd_reads_stable(once ^ BLAMER_READ_NO_MODULES));
	EXPECT_TRUE(rd_reads_stable(once ^ BLAMER_READ_NO_USERDATA));
	EXPECT_TRUE(rd_reads_stable(0));

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	kids[0] = spawn_waiter("std");
	kids[1] = spawn_waiter("metrics");
	ASSERT_LT(0, kids[0]);
	ASSERT_LT(0, kids[1]);
	ASSERT_EQ(0, heap_of(kids[0], &a));	/* logs, user data, threads */
	fx_metrics(&m, kids[1], (int64_t)fx_start_ns(kids[1]), 2);
	ASSERT_EQ(0, fx_write_dir(&m, tmpdir, kids[1], fx_start_ns(kids[1])));
	for (k = 0; k < 2; k++) {
		s = dir_snapshot(k ? 0 : once);
		ASSERT_NE(NULL, s);
		p = by_pid(s, kids[0]);
		ASSERT_NE(NULL, p);
		EXPECT_EQ(BLAMER_PROC_LIVE, p->state);
		EXPECT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%d: %s", k, p->problem);
		EXPECT_EQ(2, p->nthreads);
		EXPECT_EQ(k ? 3 : 0, p->nlogs);
		p = by_pid(s, kids[1]);
		ASSERT_NE(NULL, p);
		EXPECT_EQ(BLAMER_PROC_LIVE, p->state);
		EXPECT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%d: %s", k, p->problem);
		x = find_series(s, "reqs", "/a");
		ASSERT_NE(NULL, x);
		EXPECT_EQ(5, x->value);	/* 4 + the shard's 1 */
		x = find_series(s, "lat", NULL);
		ASSERT_NE(NULL, x);
		EXPECT_EQ(12, x->count);
		blamer_snapshot_free(s);
	}
	for (k = 0; k < 2; k++) {
		kill(kids[k], SIGKILL);
		waitpid(kids[k], NULL, 0);
	}
	rm_tmpdir();
	fx_free(&a);
	fx_free(&m);
}

/*
 * With BLAMER_READ_COMM_ONCE a long-lived reader does not read a watched
 * writer's name again (a caller that shows no names); without it, a
 * rename shows within a second (long_lived_reader_watches_its_writers).
 */
TEST(comm_once_reads_a_writers_name_once)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_COMM_ONCE };
	struct blamer_reader *r;
	struct fx_heap a;
	char comm[16];
	pid_t child;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	child = spawn_waiter("before");
	ASSERT_LT(0, child);
	ASSERT_EQ(0, heap_of(child, &a));
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));	/* watched */
	EXPECT_STREQ("before", comm);
	ASSERT_EQ(0, kill(child, SIGUSR1));
	usleep(1100 * 1000);
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));
	EXPECT_STREQ("before", comm);
	/* still seen to end */
	ASSERT_EQ(0, kill(child, SIGKILL));
	wait_exit(child);
	EXPECT_EQ(BLAMER_PROC_DEAD, state_in(r, child, NULL));
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
}

/*
 * The pidfds a reader keeps are at most a quarter of RLIMIT_NOFILE; the
 * writers past them are looked up in /proc, and are as alive. The files
 * it keeps open never take the room of a pidfd.
 */
TEST(kept_pidfds_stay_within_a_quarter_of_the_fd_limit)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	struct rlimit rl = { .rlim_cur = 40, .rlim_max = 40 };
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct fx_heap a[12];
	pid_t kids[12];
	int i, k, live, files, del;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	for (i = 0; i < 12; i++) {
		kids[i] = spawn_waiter("kid");
		ASSERT_LT(0, kids[i]);
		ASSERT_EQ(0, heap_of(kids[i], &a[i]));
	}
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));	/* this test's process only */
	ASSERT_EQ(0, count_pidfds());
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	for (k = 0; k < 3; k++) {
		ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
		for (live = 0, i = 0; i < 12; i++)
			live += by_pid(s, kids[i]) && by_pid(s, kids[i])->state == BLAMER_PROC_LIVE;
		EXPECT_EQ(12, live);
		blamer_snapshot_free(s);
		EXPECT_EQ(k ? 10 : 0, count_pidfds());
		/* the heaps' files kept open besides, never in the pidfds' way */
		files = count_tmpdir_fds(&del);
		EXPECT_LE(files, 10);
		EXPECT_TRUE(k ? files > 0 : !files) TH_LOG("%d files kept", files);
	}
	for (i = 0; i < 12; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	for (live = 0, i = 0; i < 12; i++)
		live += by_pid(s, kids[i]) && by_pid(s, kids[i])->state == BLAMER_PROC_LIVE;
	EXPECT_EQ(0, live);
	blamer_snapshot_free(s);
	EXPECT_EQ(0, count_pidfds());
	EXPECT_EQ(0, count_tmpdir_fds(&del));	/* dead: nothing kept */
	blamer_reader_close(r);
	rm_tmpdir();
	for (i = 0; i < 12; i++)
		fx_free(&a[i]);
}

/*
 * A dead dir heap's comm is the basename of its argv[0], whatever the
 * rest of the command line holds: the loop that made it once moved its
 * own end and showed "pf-t -n 3 -m de" for the command below.
 */
TEST(dead_heap_comm_is_argv0s_basename)
{
	static const struct {
		const char *cmdline, *comm;
	} cases[] = {
		{ "/tmp/x/gen-heaps -d /tmp/x/pf-t -n 3 -m dead", "gen-heaps" },
		{ "relative/dir/tool", "tool" },
		{ "plain --flag=/a/b/c", "plain" },
		{ "/usr/lib/a-very-long-program-name-indeed --x", "a-very-long-pro" },
		{ "/ends/with/slash/ -x", "" },
	};
	struct blamer_snapshot *s;
	struct fx_heap h;
	size_t i;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fx_init(&h, 1, FX_SLAB, 3999200 + (int64_t)i, 5);
		fx_process(&h, BLAMER_PHASE_MAIN_LOOP, cases[i].cmdline);
		ASSERT_EQ(0, fx_write_dir(&h, tmpdir, 3999200 + (int64_t)i, 5));
		fx_free(&h);
	}
	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	ASSERT_NE(NULL, s);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct blamer_snap_process *p = by_pid(s, 3999200 + (int32_t)i);

		ASSERT_NE(NULL, p);
		EXPECT_STREQ(cases[i].comm, p->comm) TH_LOG("%s", cases[i].cmdline);
	}
	blamer_snapshot_free(s);
	rm_tmpdir();
}

/*
 * What the reader believes of a directory: a name the process gave itself
 * is made printable; a file time in the future is no evidence; a symlink
 * or a directory others can write is refused, as the writer refuses it.
 */
TEST(dir_trust_rules_of_the_reader)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL };
	struct timespec future[2] = { { .tv_nsec = UTIME_OMIT } };
	const struct blamer_snap_process *p;
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	char comm[16], path[256], link[80], e[256];
	struct fx_heap a;
	size_t i;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	ASSERT_EQ(0, prctl(PR_GET_NAME, comm));
	ASSERT_EQ(0, prctl(PR_SET_NAME, "x\033[2J\033]0;p\a\x9b"));
	fx_standard(&a, getpid(), (int64_t)fx_self_start_ns(), 1);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, getpid(), fx_self_start_ns()));
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999001, 5));
	future[1].tv_sec = time(NULL) + 365 * 86400;
	snprintf(path, sizeof(path), "%s/3999001-5.0.slab", tmpdir);
	ASSERT_EQ(0, utimensat(AT_FDCWD, path, future, 0));
	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	prctl(PR_SET_NAME, comm);
	ASSERT_NE(NULL, s);
	p = by_pid(s, getpid());
	ASSERT_NE(NULL, p);
	EXPECT_EQ(BLAMER_PROC_LIVE, p->state);
	EXPECT_STREQ("x?[2J?]0;p??", p->comm);
	p = by_pid(s, 3999001);
	ASSERT_NE(NULL, p);
	EXPECT_LE(p->last_seen_ns, s->realtime_ns);
	for (i = 0; i < s->nprocs; i++)
		EXPECT_EQ(NULL, strpbrk(s->procs[i].comm, "\033\a"));
	blamer_snapshot_free(s);

	/* a symlink to that good directory; then the directory opened to others */
	snprintf(link, sizeof(link), "%s.link", tmpdir);
	ASSERT_EQ(0, symlink(tmpdir, link));
	o.dir = link;
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(-EPERM, blamer_reader_snapshot(r, &s, e, sizeof(e)));
	EXPECT_NE(NULL, strstr(e, "is a symlink: refused")) TH_LOG("%s", e);
	blamer_reader_close(r);
	unlink(link);
	ASSERT_EQ(0, chmod(tmpdir, 0770));
	o.dir = tmpdir;
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(-EPERM, blamer_reader_snapshot(r, &s, e, sizeof(e)));
	EXPECT_NE(NULL, strstr(e, "writable by group or others")) TH_LOG("%s", e);
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
}

/* The inverse of odd @k modulo 2^64 (Newton: each step doubles the bits). */
static uint64_t inverse_of(uint64_t k)
{
	uint64_t x = k;
	int i;

	for (i = 0; i < 6; i++)
		x *= 2 - k * x;
	return x;
}

/*
 * Node IDs and paths are the heap's to choose: ones made to land in one
 * slot of the merge's hash tables (as the unkeyed hashes of the first
 * version placed them) must not make a snapshot quadratic. 4 heaps of
 * 65536 such nodes and 8192 such paths cost some 3e10 probes that way,
 * minutes; the CPU limit (a bound far above what the snapshot costs, a
 * second at most, not a measurement) turns that into a failure.
 */
TEST(colliding_node_ids_and_paths_stay_linear)
{
	const uint64_t kinv = inverse_of(0x9e3779b97f4a7c15ull), minv = inverse_of(0xff51afd7ed558ccdull);
	const uint32_t nn = 65536, np = 8192, nh = 4;
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR, .flags = BLAMER_READ_DEAD_FULL,
					.max_slab_bytes = 16 << 20 };
	struct rlimit cpu = { .rlim_cur = 30, .rlim_max = 30 };
	struct blamer_snapshot *s = NULL;
	struct blamer_reader *r;
	struct fx_heap h;
	uint32_t i, k;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	for (k = 0; k < nh; k++) {
		fx_init(&h, 1, 12 << 20, 3999200 + k, 9);
		fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "collide");
		for (i = 0; i < nn; i++)	/* id * K >> 7: j << 25, slot 0 */
			fx_node(&h, kinv * ((uint64_t)(k * nn + i + 1) << 32), "");
		for (i = 0; i < np; i++) {
			/* total_hash of depth 1, unit CPU_NS: (k * np + i + 1) << 32 */
			uint64_t want = (uint64_t)(k * np + i + 1) << 32, h1 = want ^ (want >> 33);
			uint64_t h0 = 0x9e3779b97f4a7c15ull ^ 1 ^ ((uint64_t)BLAMER_UNIT_CPU_NS << 32);
			uint64_t node = (h1 * minv) ^ h0;

			fx_path(&h, &node, 1, 1, 0);
		}
		ASSERT_EQ(0, fx_write_dir(&h, tmpdir, 3999200 + k, 9));
		fx_free(&h);
	}
	ASSERT_EQ(0, setrlimit(RLIMIT_CPU, &cpu));
	o.dir = tmpdir;
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	EXPECT_EQ(nh, s->nprocs);
	EXPECT_EQ(nh * nn, s->nnodes);
	for (i = 1; i < s->nnodes; i++)
		ASSERT_LT(s->nodes[i - 1].id, s->nodes[i].id);
	EXPECT_EQ(2 * nh * np, s->ntotals);	/* CPU_NS and BYTES of each */
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	rm_tmpdir();
}

TEST(missing_dir_is_empty_and_device_error_says_load)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.dir = "/nonexistent/blamer" };
	struct blamer_reader *r = blamer_reader_open(&o, NULL, 0);
	struct blamer_snapshot *s;
	char e[256];

	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	EXPECT_EQ(0, s->nprocs);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	o.backend = BLAMER_BACKEND_DEVICE;
	o.device = "/nonexistent/blamer-dev";
	EXPECT_EQ(NULL, blamer_reader_open(&o, e, sizeof(e)));
	EXPECT_NE(NULL, strstr(e, "blamer load"));
}

/*
 * Every file in fuzz/regressions and fuzz/corpus, through the fuzz path:
 * how many, or -1 if an exporter's output for one of them was not clean.
 */
static int replay_dir(const char *dir)
{
	char path[4096];
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0, bad = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		uint8_t *buf;
		FILE *f;
		long len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		buf = malloc(len > 0 ? (size_t)len : 1);
		if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len) {
			if (fuzz_one(buf, (size_t)len)) {
				fprintf(stderr, "# %s: output not clean\n", path);
				bad++;
			}
			n++;
		}
		free(buf);
		fclose(f);
	}
	closedir(d);
	return bad ? -1 : n;
}

/* The fuzz harness's judge of exporter output rejects what it must. */
TEST(fuzz_output_checker_rejects_unclean_text)
{
	static const char *const bad[] = {
		"\x1b]52;c;aGk=\a", "a\rb", "\x7f", "\xff", "\x80", "\xc0\x80",
		"\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\t",
	};
	static const char good[] = "a\n\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbd\n";
	size_t i;

	EXPECT_TRUE(fuzz_output_is_clean((const unsigned char *)good, strlen(good)));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_FALSE(fuzz_output_is_clean((const unsigned char *)bad[i], strlen(bad[i])))
			TH_LOG("accepted bad[%zu]", i);
}

TEST(fuzz_series_checker_rejects_a_series_twice)
{
	char twice[] = "# HELP m x\nm{a=\"1\"} 1\nm{a=\"2\"} 1\nm{a=\"1\"} 2\n";
	char once[] = "# HELP m x\n# TYPE m counter\nm{a=\"1\"} 1\nm{a=\"2\"} 1\nn 3\n";

	EXPECT_FALSE(fuzz_series_are_unique(twice));
	EXPECT_TRUE(fuzz_series_are_unique(once));
}

TEST(fuzz_regressions_replay)
{
	EXPECT_GE(replay_dir(FUZZ_DIR "/regressions"), 0);
	EXPECT_GT(replay_dir(FUZZ_DIR "/corpus"), 0);
}

TEST_HARNESS_MAIN
