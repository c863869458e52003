// SPDX-License-Identifier: MIT
/*
 * reader-unit, attribution: modules and addresses, DAG shards and
 * units, the attribution view across processes, colliding ids. Built
 * with ASan and UBSan.
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

#include "testsupport.h"
#include "reader/internal.h"	/* the reader's own, for white-box tests */
#include "rtest.h"

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

/*
 * Every heap of a service names the same units: a snapshot's unit_defs
 * hold one per unit, in unit order, whatever the number of heaps naming
 * it (each lookup is a binary search, not a walk of 8 names per heap:
 * a fold looks up every path value of a dead heap), and the one kept is
 * the least by (name, base) whatever heap gave it. So again when the
 * heaps come from the kept copies of a second snapshot, and after a
 * filter.
 */
static void check_merged_unit_defs(struct __test_metadata *_metadata,
				   const struct blamer_snapshot *s, uint32_t nh)
{
	const struct blamer_snap_unit_def *d;
	char name[16];
	uint32_t j;
	size_t i;

	ASSERT_EQ(7 + nh, s->nunit_defs);	/* 1000..1006, and 2000 + k of each */
	for (i = 1; i < s->nunit_defs; i++)
		ASSERT_LT(s->unit_defs[i - 1].unit, s->unit_defs[i].unit);
	for (j = 0; j < 6; j++) {
		d = blamer_snap_unit_def(s, 1000 + j);
		ASSERT_NE(NULL, d);
		EXPECT_EQ(&s->unit_defs[j], d);
		EXPECT_STREQ("a_least", d->name);
		EXPECT_EQ(BLAMER_BASE_BYTES, d->base);
	}
	d = blamer_snap_unit_def(s, 1006);	/* one name, three bases: the least */
	ASSERT_NE(NULL, d);
	EXPECT_STREQ("same", d->name);
	EXPECT_EQ(BLAMER_BASE_NONE, d->base);
	for (j = 0; j < nh; j++) {
		d = blamer_snap_unit_def(s, 2000 + j);
		ASSERT_NE(NULL, d);
		snprintf(name, sizeof(name), "own_%u", j);
		EXPECT_STREQ(name, d->name);
	}
	EXPECT_EQ(NULL, blamer_snap_unit_def(s, 999));
	EXPECT_EQ(NULL, blamer_snap_unit_def(s, 1007));
	EXPECT_EQ(NULL, blamer_snap_unit_def(s, 2000 + nh));
}

static bool keep_odd(const struct blamer_snap_process *p, void *arg)
{
	(void)arg;
	return p->pid & 1;
}

TEST(unit_names_merge_to_one_per_unit)
{
	const uint32_t nh = 3 * RD_MAX_HEAP_UNITS;
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL | BLAMER_READ_KEEP_DEAD,
					.max_slab_bytes = 1 << 20 };
	struct blamer_snapshot *s = NULL;
	struct blamer_reader *r;
	struct fx_heap h;
	char name[16];
	uint32_t j, k;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	for (k = 0; k < nh; k++) {
		fx_init(&h, 1, FX_SLAB, 3999400 + k, 5);
		fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "units");
		/* unit 1000 + j: one heap in the middle gives the least name,
		 * the others names after it, with every base */
		for (j = 0; j < 6; j++) {
			bool least = k == (j * 5 + 7) % nh;

			snprintf(name, sizeof(name), least ? "a_least" : "b_%u", k);
			fx_unit(&h, 1000 + j, least ? BLAMER_BASE_BYTES : k % 3, name);
		}
		fx_unit(&h, 1006, (k + 1) % 3, "same");
		snprintf(name, sizeof(name), "own_%u", k);
		fx_unit(&h, 2000 + k, BLAMER_BASE_NONE, name);
		ASSERT_EQ(0, fx_write_dir(&h, tmpdir, 3999400 + k, 5));
		fx_free(&h);
	}
	o.dir = tmpdir;
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	EXPECT_EQ(nh, s->nprocs);
	check_merged_unit_defs(_metadata, s, nh);
	blamer_snapshot_free(s);
	/* the second snapshot reuses the kept heaps and their names */
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	EXPECT_EQ(nh, s->nprocs);
	check_merged_unit_defs(_metadata, s, nh);
	/* a filter makes the views again: the names stay merged */
	EXPECT_EQ(nh / 2, blamer_snapshot_filter(s, keep_odd, NULL));
	check_merged_unit_defs(_metadata, s, nh);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	rm_tmpdir();
}

/* A snapshot made by hand may name a unit more than once (in unit
 * order): the least of its entries. */
TEST(unit_def_lookup_of_a_hand_made_list)
{
	struct blamer_snap_unit_def defs[] = {
		{ 1001, BLAMER_BASE_NONE, "z" },
		{ 1007, BLAMER_BASE_BYTES, "zzz" },
		{ 1007, BLAMER_BASE_BYTES, "requests" },
		{ 1007, BLAMER_BASE_NONE, "requests" },
		{ 1007, BLAMER_BASE_NONE, "zz" },
		{ 1009, BLAMER_BASE_SECONDS, "x" },
	};
	struct blamer_snapshot s;
	uint32_t u;

	memset(&s, 0, sizeof(s));
	EXPECT_EQ(NULL, blamer_snap_unit_def(&s, 1007));
	s.unit_defs = defs;
	s.nunit_defs = sizeof(defs) / sizeof(defs[0]);
	EXPECT_EQ(&defs[3], blamer_snap_unit_def(&s, 1007));
	EXPECT_EQ(&defs[0], blamer_snap_unit_def(&s, 1001));
	EXPECT_EQ(&defs[5], blamer_snap_unit_def(&s, 1009));
	for (u = 995; u < 1012; u++)
		if (u != 1001 && u != 1007 && u != 1009)
			EXPECT_EQ(NULL, blamer_snap_unit_def(&s, u));
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

/*
 * A total over processes (and a subtree's) stops at 2^64 - 1: two heaps'
 * values on one path adding past it, as another user's heap could make
 * them, wrapped the total to near nothing and hid the other's value.
 */
TEST(totals_stop_at_the_top)
{
	static const uint64_t a[] = { 1 }, ab[] = { 1, 2 };
	const struct blamer_snap_total *tot;
	struct blamer_snapshot *s;
	struct fx_heap h;
	uint32_t k;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	for (k = 0; k < 2; k++) {
		fx_init(&h, 1, FX_SLAB, 3999111 + k, 5);
		fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "big");
		/* 7e9 and 2^64 - 7e9 + 1: 1 if wrapped */
		fx_path(&h, ab, 2, k ? UINT64_MAX - 7000000000ull + 2 : 7000000000ull, 0);
		fx_path(&h, a, 1, 5, 0);
		ASSERT_EQ(0, fx_write_dir(&h, tmpdir, 3999111 + k, 5));
		fx_free(&h);
	}
	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	ASSERT_NE(NULL, s);
	tot = blamer_snap_total_find(s, ab, 2, BLAMER_UNIT_CPU_NS);
	ASSERT_NE(NULL, tot);
	EXPECT_EQ(UINT64_MAX, tot->value);
	ASSERT_EQ(2, s->ntree);
	EXPECT_EQ(10, s->tree[0].self[0]);
	EXPECT_EQ(UINT64_MAX, s->tree[0].inclusive[0]);	/* /a: 10 more */
	EXPECT_EQ(UINT64_MAX, s->tree[1].inclusive[0]);
	blamer_snapshot_free(s);
	rm_tmpdir();
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

/*
 * The attribution view holds 16 units, those most processes measure in.
 * Other processes measuring in 16 units of their own, two processes
 * each, leave a process's unit 2000 out of the view (units_left_out),
 * and only out of the view: its own path keeps the value, it is not
 * marked truncated, and the service and per-process exports (and so the
 * fold) have it. The view's limit rewrote every process's paths: the
 * value was gone from every export, and the fold lost it for good.
 */
TEST(units_left_out_of_the_view_stay_the_processes)
{
	const uint64_t node = 0x1;
	struct blamer_snap_process *victim = NULL;
	struct blamer_dag_path *p;
	struct blamer_snapshot *s;
	struct fx_heap h[17];
	char *text = NULL;
	size_t len = 0, cap = 0, i;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-units-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	for (i = 0; i < 17; i++) {
		fx_init(&h[i], 1, FX_SLAB, 3999600 + (int64_t)i, 1);
		fx_process(&h[i], BLAMER_PHASE_MAIN_LOOP, "svc");
		p = fx_at(&h[i], fx_path(&h[i], &node, 1, 0, 0));
		if (!i) {	/* the victim */
			p->units[0] = 2000;
			p->values[0] = 42;
			p->units[1] = BLAMER_UNIT_NONE;
		} else {
			p->units[0] = 1001 + 2 * (uint32_t)(i % 8);
			p->units[1] = p->units[0] + 1;
			p->values[0] = p->values[1] = 1;
		}
		ASSERT_EQ(0, fx_write_dir(&h[i], tmpdir, 3999600 + (int64_t)i, 1));
	}
	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(17, s->nprocs);
	EXPECT_EQ(1, s->units_left_out);
	EXPECT_EQ(16, s->nunits);
	for (i = 0; i < s->ntotals; i++)
		EXPECT_NE(2000, s->totals[i].unit);
	for (i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == 3999600)
			victim = &s->procs[i];
	ASSERT_NE(NULL, victim);
	EXPECT_NE(BLAMER_HEALTH_TRUNCATED, victim->health) TH_LOG("%s", victim->problem);
	ASSERT_EQ(1, victim->npaths);
	ASSERT_EQ(1, victim->paths[0].nvalues);
	EXPECT_EQ(2000, victim->paths[0].units[0]);
	EXPECT_EQ(42, victim->paths[0].values[0]);
	ASSERT_EQ(0, blamer_fleet_prometheus_text(NULL, s, &text, &len, &cap));
	EXPECT_NE(NULL, strstr(text, "unit=\"2000\"")) TH_LOG("%s", text);
	ASSERT_EQ(0, blamer_snapshot_prometheus_text(s, &text, &len, &cap));
	EXPECT_NE(NULL, strstr(text, "unit=\"2000\"")) TH_LOG("%s", text);
	free(text);
	blamer_snapshot_free(s);
	for (i = 0; i < 17; i++)
		fx_free(&h[i]);
	rm_tmpdir();
}

TEST_HARNESS_MAIN
