// SPDX-License-Identifier: MIT
/*
 * reader-unit, metrics: definitions, series and shards, hostile metric
 * records, conflicting definitions across processes. Built with ASan
 * and UBSan.
 */
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <float.h>
#include <math.h>
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
#include "rtest.h"

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
		/* the records, as fx_metrics() listed them: process, 4 defs,
		 * series /a, its shard, /b, lat, its shard, size, gauge */
		rreqs = fx_nth_record(&h, 1);
		rlat = fx_nth_record(&h, 2);
		ra = fx_nth_record(&h, 5);
		sa = fx_nth_record(&h, 6);
		rl = fx_nth_record(&h, 8);
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

static void set_word(struct fx_heap *h, blamer_ref at, uint64_t w)
{
	memcpy(fx_at(h, at), &w, sizeof(w));
}

static void set_double(struct fx_heap *h, blamer_ref at, double d)
{
	memcpy(fx_at(h, at), &d, sizeof(d));
}

/*
 * Values no writer leaves (metric_write.c refuses the writes that would
 * make them): the heap is corrupt, that series is left out (an exporter
 * would fold it into a service's durable total: NaN or infinite for good,
 * or a counter gone down) and the others are read.
 */
TEST(values_no_writer_leaves_are_corrupt)
{
	static const struct {
		const char *what, *bad, *label;
	} cases[] = {
		{ "a counter of NaN", "reqs", "/a" },
		{ "a counter's shard below 0", "reqs", "/a" },
		{ "a counter of +Inf", "reqs", "/a" },
		{ "a histogram's sum of -Inf", "lat", NULL },
		{ "a histogram's shard's sum of NaN", "lat", NULL },
		{ "a bucket's counts overflowing", "lat", NULL },
		{ "the buckets' total overflowing", "lat", NULL },
		{ "finite parts whose sum overflows", "reqs", "/a" },
		{ "a gauge of NaN", "inflight", NULL },
		{ "a counter of -0 (fine)", NULL, NULL },
	};
	const size_t rec = sizeof(struct blamer_metric_rec), shard = sizeof(struct blamer_metric_shard);
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct blamer_snap_process *p;
		blamer_ref ra, sa, rl, sl, rg;
		struct blamer_snapshot *s;
		struct fx_heap h;

		fx_metrics(&h, 1, 1, 1);
		/* process, 4 defs, /a, its shard, /b, lat, its shard, size,
		 * gauge: 12 records, then the list's head again */
		ASSERT_EQ(BLAMER_LIST_HEAD_REF, fx_nth_record(&h, 12));
		ra = fx_nth_record(&h, 5), sa = fx_nth_record(&h, 6), rl = fx_nth_record(&h, 8);
		sl = fx_nth_record(&h, 9), rg = fx_nth_record(&h, 11);
		switch (i) {
		case 0: set_double(&h, ra + rec, NAN); break;
		case 1: set_double(&h, sa + shard, -0.5); break;
		case 2: set_double(&h, ra + rec, INFINITY); break;
		case 3: set_double(&h, rl + rec, -INFINITY); break;
		case 4: set_double(&h, sl + shard, NAN); break;
		case 5: set_word(&h, rl + rec + 8, UINT64_MAX); break;	/* + the shard's 1 */
		case 6: set_word(&h, rl + rec + 8, UINT64_MAX - 1); break;	/* + 1, + 4 */
		case 7:
			set_double(&h, ra + rec, DBL_MAX);
			set_double(&h, sa + shard, DBL_MAX);
			break;
		case 8: set_double(&h, rg + rec, NAN); break;
		case 9: set_double(&h, ra + rec, -0.0); break;
		}
		s = read_heap(&h);
		ASSERT_NE(NULL, s);
		p = &s->procs[0];
		if (cases[i].bad) {
			EXPECT_EQ(BLAMER_HEALTH_CORRUPT, p->health) TH_LOG("%s", cases[i].what);
			EXPECT_EQ(NULL, find_series(s, cases[i].bad, cases[i].label))
				TH_LOG("%s", cases[i].what);
		} else {
			EXPECT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%s: %s", cases[i].what, p->problem);
			ASSERT_NE(NULL, find_series(s, "reqs", "/a"));
			EXPECT_EQ(0.5, find_series(s, "reqs", "/a")->value);
		}
		/* the others are read */
		ASSERT_NE(NULL, find_series(s, "reqs", "/b")) TH_LOG("%s", cases[i].what);
		EXPECT_EQ(1, find_series(s, "reqs", "/b")->value);
		EXPECT_NE(NULL, find_series(s, "size", NULL)) TH_LOG("%s", cases[i].what);
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

/*
 * Definitions of one name that differ only where series.c's table does
 * not hash (bounds, label names) are still told apart; a definition
 * given twice by one heap counts once; a tie goes to the least
 * definition (def_cmp()), whatever the order of heaps. Heaps: 1 gives
 * "lat" with bounds 0.1, 0.3 three times and "tie" {y}; 2 and 3 give
 * "lat" with 0.1, 0.2; 4 gives "tie" {x}.
 */
TEST(definitions_told_apart_counted_once_ties_to_the_least)
{
	static const double b3[2] = { 0.1, 0.3 }, b2[2] = { 0.1, 0.2 };
	const uint64_t c3[3] = { 1, 0, 0 }, c2[3] = { 1, 1, 0 };
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR, .flags = BLAMER_READ_DEAD_FULL };
	const struct blamer_snap_series *x;
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct fx_heap h[4];
	char dir[] = "/tmp/blamer-defs-XXXXXX", e[256], cmd[128];
	blamer_ref d;
	int i;

	ASSERT_NE(NULL, mkdtemp(dir));
	for (i = 0; i < 4; i++) {
		fx_init(&h[i], 1, 16384, 3999201 + i, 1 + i);
		fx_process(&h[i], BLAMER_PHASE_MAIN_LOOP, "/usr/bin/svc");
	}
	d = fx_metric_def(&h[0], "lat", BLAMER_METRIC_HISTOGRAM, 0, "", 0, b3, 2);
	fx_metric_def(&h[0], "lat", BLAMER_METRIC_HISTOGRAM, 0, "", 0, b3, 2);
	fx_metric_def(&h[0], "lat", BLAMER_METRIC_HISTOGRAM, 0, "", 0, b3, 2);
	fx_metric(&h[0], d, "", 0, 100, c3);
	d = fx_metric_def(&h[0], "tie", BLAMER_METRIC_COUNTER, 0, "y", 1, NULL, 0);
	fx_metric(&h[0], d, "/q", 3, 10, NULL);
	for (i = 1; i <= 2; i++) {
		d = fx_metric_def(&h[i], "lat", BLAMER_METRIC_HISTOGRAM, 0, "", 0, b2, 2);
		fx_metric(&h[i], d, "", 0, 2, c2);
	}
	d = fx_metric_def(&h[3], "tie", BLAMER_METRIC_COUNTER, 0, "x", 1, NULL, 0);
	fx_metric(&h[3], d, "/q", 3, 5, NULL);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, fx_write_dir(&h[i], dir, 3999201 + i, 1 + i));
	o.dir = dir;
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r) TH_LOG("%s", e);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	ASSERT_EQ(4, s->nprocs);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[i].health) TH_LOG("%s", s->procs[i].problem);
	x = find_series(s, "lat", NULL);
	ASSERT_NE(NULL, x);
	EXPECT_EQ(0.2, x->def->upper[1]);	/* two heaps' against one's, given thrice */
	EXPECT_EQ(2, x->nprocs);
	EXPECT_EQ(4, x->value);
	EXPECT_EQ(2, x->buckets[1]);
	x = find_series(s, "tie", "/q");
	ASSERT_NE(NULL, x);
	EXPECT_STREQ("x", x->def->labels[0]);	/* one heap each: the least */
	EXPECT_EQ(5, x->value);
	EXPECT_EQ(1, x->nprocs);
	EXPECT_EQ(2, s->metric_conflicts);	/* heap 1's two series */
	EXPECT_TRUE(s->procs[0].metrics[0].conflict);
	EXPECT_TRUE(s->procs[0].metrics[1].conflict);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	for (i = 0; i < 4; i++)
		fx_free(&h[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ(0, system(cmd));
}

static bool keep_all(const struct blamer_snap_process *p, void *arg)
{
	(void)p;
	(void)arg;
	return true;
}

/*
 * A name has a definition per uid: three processes of uid 1002 that
 * define "reqs" as a gauge do not outvote the two of uid 1001 that define
 * it as a counter (their series were all conflicts before); each uid's
 * series merge under its own. The per-process exposition then writes the
 * least uid's family (the counters) and leaves the gauges out, whatever
 * the number of processes or their pids. (The dir backend reads one
 * owner's files: the uids are set in the snapshot and its views made
 * again, as blamer_snapshot_filter() does.)
 */
TEST(definitions_are_chosen_per_uid)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR, .flags = BLAMER_READ_DEAD_FULL };
	const struct blamer_snap_series *x;
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct fx_heap h[5];
	char dir[] = "/tmp/blamer-uids-XXXXXX", e[256], cmd[128], *text = NULL;
	size_t len = 0, cap = 0, i, counters = 0, gauges = 0;
	blamer_ref d;

	ASSERT_NE(NULL, mkdtemp(dir));
	for (i = 0; i < 5; i++) {
		fx_init(&h[i], 1, 16384, 3999301 + i, 1 + i);
		fx_process(&h[i], BLAMER_PHASE_MAIN_LOOP, "/usr/bin/svc");
		if (i < 2)
			d = fx_metric_def(&h[i], "reqs", BLAMER_METRIC_COUNTER, 0, "route", 1, NULL, 0);
		else
			d = fx_metric_def(&h[i], "reqs", BLAMER_METRIC_GAUGE, BLAMER_GAUGE_SUM,
					  "route", 1, NULL, 0);
		fx_metric(&h[i], d, "/a", 3, 1 + (double)i, NULL);
		ASSERT_EQ(0, fx_write_dir(&h[i], dir, 3999301 + i, 1 + i));
	}
	o.dir = dir;
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r) TH_LOG("%s", e);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	ASSERT_EQ(5, s->nprocs);
	/* one owner here: the gauges (three processes) win, as before */
	EXPECT_EQ(2, s->metric_conflicts);
	for (i = 0; i < 5; i++)
		s->procs[i].uid = s->procs[i].pid < 3999303 ? 1001 : 1002;
	ASSERT_EQ(5, blamer_snapshot_filter(s, keep_all, NULL));
	EXPECT_EQ(0, s->metric_conflicts);
	ASSERT_EQ(2, s->nseries);
	for (i = 0; i < s->nseries; i++) {
		x = &s->series[i];
		if (x->uid == 1001) {
			EXPECT_EQ(BLAMER_METRIC_COUNTER, x->def->kind);
			EXPECT_EQ(1 + 2, x->value);
			EXPECT_EQ(2, x->nprocs);
			counters++;
		} else {
			EXPECT_EQ(1002, x->uid);
			EXPECT_EQ(BLAMER_METRIC_GAUGE, x->def->kind);
			EXPECT_EQ(3 + 4 + 5, x->value);
			EXPECT_EQ(3, x->nprocs);
			gauges++;
		}
	}
	EXPECT_EQ(1, counters);
	EXPECT_EQ(1, gauges);
	ASSERT_EQ(0, blamer_snapshot_prometheus_text(s, &text, &len, &cap));
	EXPECT_NE(NULL, strstr(text, "# TYPE reqs_total counter\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "reqs_total{route=\"/a\",pid=\"3999301\"")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "reqs_total{route=\"/a\",pid=\"3999302\"")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, "reqs{")) TH_LOG("%s", text);
	free(text);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	for (i = 0; i < 5; i++)
		fx_free(&h[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ(0, system(cmd));
}

/*
 * A counter "c" {x} and a gauge "c_total" are both the family c_total:
 * the exposition, per process and merged, writes the first (by name)
 * and leaves the other out (the merged one counts it as a conflict). Sorting them compared the label
 * values of the one with the other's count of labels (none here): the
 * exporter crashed, at every start once a state held them.
 */
TEST(two_metrics_of_one_family_are_a_conflict_not_a_crash)
{
	struct blamer_snapshot *s;
	struct fx_heap h[2];
	char *text = NULL;
	size_t len = 0, cap = 0, i;
	blamer_ref d;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-family-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	for (i = 0; i < 2; i++) {
		fx_init(&h[i], 1, 16384, 3999401 + i, 1 + i);
		fx_process(&h[i], BLAMER_PHASE_MAIN_LOOP, "/usr/bin/svc");
		d = fx_metric_def(&h[i], "c", BLAMER_METRIC_COUNTER, 0, "x", 1, NULL, 0);
		fx_metric(&h[i], d, "v", 2, 3, NULL);
		d = fx_metric_def(&h[i], "c_total", BLAMER_METRIC_GAUGE, BLAMER_GAUGE_SUM, NULL, 0,
				  NULL, 0);
		fx_metric(&h[i], d, "", 0, 40, NULL);
		ASSERT_EQ(0, fx_write_dir(&h[i], tmpdir, 3999401 + i, 1 + i));
	}
	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(2, s->nprocs);
	ASSERT_EQ(0, blamer_snapshot_prometheus_text(s, &text, &len, &cap));
	EXPECT_NE(NULL, strstr(text, "# TYPE c_total counter\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "c_total{x=\"v\",pid=\"3999401\"")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "c_total{x=\"v\",pid=\"3999402\"")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, "c_total{pid=")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, " 40\n")) TH_LOG("%s", text);
	ASSERT_EQ(0, blamer_fleet_prometheus_text(NULL, s, &text, &len, &cap));
	EXPECT_NE(NULL, strstr(text, "# TYPE c_total counter\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "c_total{x=\"v\",uid=")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "} 6\n")) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(text, " 80\n")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "blamer_metric_conflicts 1\n")) TH_LOG("%s", text);
	free(text);
	blamer_snapshot_free(s);
	for (i = 0; i < 2; i++)
		fx_free(&h[i]);
	rm_tmpdir();
}

/*
 * A gauge of mode ALL is a series per process, labelled pid and uid: two
 * heaps of one pid (a dead one and the live process that reused its pid)
 * were two samples of one name and labels, and Prometheus kept the first,
 * the dead one's. One is written: the live one, else the last started;
 * the others are counted as conflicts.
 */
TEST(one_series_per_pid_the_live_one)
{
	const int64_t me = getpid(), self = (int64_t)fx_self_start_ns();
	const struct { int64_t pid, start; double v; } heap[] = {
		{ me, 1, 1 }, { me, self, 2 }, { me, self + 1000000000, 3 },
		{ 3999501, 1, 10 }, { 3999501, 2, 20 },
	};
	enum { N = sizeof(heap) / sizeof(heap[0]) };
	struct blamer_snapshot *s;
	struct fx_heap h[N];
	char want[64], *text = NULL;
	size_t len = 0, cap = 0, i;
	blamer_ref d;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-onepid-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	for (i = 0; i < N; i++) {
		fx_init(&h[i], 1, 16384, heap[i].pid, heap[i].start);
		fx_process(&h[i], BLAMER_PHASE_MAIN_LOOP, "/usr/bin/svc");
		d = fx_metric_def(&h[i], "inflight", BLAMER_METRIC_GAUGE, BLAMER_GAUGE_ALL, NULL, 0,
				  NULL, 0);
		fx_metric(&h[i], d, "", 0, heap[i].v, NULL);
		ASSERT_EQ(0, fx_write_dir(&h[i], tmpdir, heap[i].pid, (uint64_t)heap[i].start));
	}
	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(N, s->nprocs);
	ASSERT_EQ(0, blamer_fleet_prometheus_text(NULL, s, &text, &len, &cap));
	snprintf(want, sizeof(want), "inflight{pid=\"%" PRId64 "\",uid=", me);
	ASSERT_NE(NULL, strstr(text, want)) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(strstr(text, want) + 1, want)) TH_LOG("%s", text);
	EXPECT_EQ(0, strncmp(strchr(strstr(text, want), '}'), "} 2\n", 4)) TH_LOG("%s", text);
	snprintf(want, sizeof(want), "inflight{pid=\"3999501\",uid=");
	ASSERT_NE(NULL, strstr(text, want)) TH_LOG("%s", text);
	EXPECT_EQ(NULL, strstr(strstr(text, want) + 1, want)) TH_LOG("%s", text);
	EXPECT_EQ(0, strncmp(strchr(strstr(text, want), '}'), "} 20\n", 5)) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "blamer_metric_conflicts 3\n")) TH_LOG("%s", text);
	free(text);
	blamer_snapshot_free(s);
	for (i = 0; i < N; i++)
		fx_free(&h[i]);
	rm_tmpdir();
}

/*
 * A role is a name any process may take: the service's process and
 * thread counts by role are per uid too. Three heaps of uid 1002 calling
 * themselves "web" added to uid 1001's one "web" process (a pool's size
 * and saturation, what an autoscaler reads). (The dir backend reads one
 * owner's files: the uids are set in the snapshot and its views made
 * again, as blamer_snapshot_filter() does.)
 */
TEST(roles_are_counted_per_uid)
{
	uint64_t counts[BLAMER_DROP_REASONS] = { 0 };
	struct blamer_snapshot *s;
	struct fx_heap h[4];
	char *text = NULL;
	size_t len = 0, cap = 0, i;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-roles-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	for (i = 0; i < 4; i++) {
		fx_init(&h[i], 1, 16384, 3999701 + (int64_t)i, 1);
		fx_process(&h[i], BLAMER_PHASE_MAIN_LOOP, "/usr/bin/svc");
		fx_drops(&h[i], "web", "", counts, BLAMER_DROP_REASONS);
		ASSERT_EQ(0, fx_write_dir(&h[i], tmpdir, 3999701 + (int64_t)i, 1));
	}
	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(4, s->nprocs);
	for (i = 0; i < 4; i++)
		s->procs[i].uid = s->procs[i].pid == 3999701 ? 1001 : 1002;
	ASSERT_EQ(4, blamer_snapshot_filter(s, keep_all, NULL));
	ASSERT_EQ(0, blamer_fleet_prometheus_text(NULL, s, &text, &len, &cap));
	EXPECT_NE(NULL, strstr(text, "blamer_processes{role=\"web\",state=\"dead\",uid=\"1001\"} 1\n"))
		TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "blamer_processes{role=\"web\",state=\"dead\",uid=\"1002\"} 3\n"))
		TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "blamer_busy_threads{role=\"web\",uid=\"1001\"} 0\n"))
		TH_LOG("%s", text);
	free(text);
	blamer_snapshot_free(s);
	for (i = 0; i < 4; i++)
		fx_free(&h[i]);
	rm_tmpdir();
}

/*
 * A definition decoded once per snapshot (def_share.c) is still each
 * heap's own: 80 heaps give "reqs" byte for byte alike (shared: one
 * decoding) and "lat" alike in kind and name but each with bounds of its
 * own (the bytes the table does not hash: every one in one chain, most
 * past the slots a lookup looks at). Each heap must show its own bounds;
 * and a long-lived reader's second snapshot, taken after the first is
 * freed, must not see the first's strings (ASan would catch a note left).
 */
TEST(definitions_shared_in_a_snapshot_are_each_heaps_own)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL | BLAMER_READ_KEEP_DEAD };
	enum { N = 80 };
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct fx_heap h;
	char dir[] = "/tmp/blamer-share-XXXXXX", e[256], cmd[128];
	size_t i, k, round;
	blamer_ref d;

	ASSERT_NE(NULL, mkdtemp(dir));
	for (i = 0; i < N; i++) {
		const double b[2] = { 0.5 + (double)i, 1000 + (double)i };
		const uint64_t c[3] = { 1, 0, 0 };

		fx_init(&h, 1, 16384, 3999401 + (int64_t)i, 1 + (int64_t)i);
		fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/svc");
		d = fx_metric_def(&h, "reqs", BLAMER_METRIC_COUNTER, 0, "route", 1, NULL, 0);
		fx_metric(&h, d, "/a", 3, 1, NULL);
		d = fx_metric_def(&h, "lat", BLAMER_METRIC_HISTOGRAM, 0, "", 0, b, 2);
		fx_metric(&h, d, "", 0, 0.25, c);
		ASSERT_EQ(0, fx_write_dir(&h, dir, 3999401 + (int64_t)i, 1 + (int64_t)i));
		fx_free(&h);
	}
	o.dir = dir;
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r) TH_LOG("%s", e);
	for (round = 0; round < 2; round++) {
		const char *help0 = NULL;

		ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
		ASSERT_EQ(N, s->nprocs);
		for (i = 0; i < N; i++) {
			const struct blamer_snap_process *p = &s->procs[i];
			double lo = 0.5 + (double)(p->pid - 3999401);

			ASSERT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("pid %d", (int)p->pid);
			ASSERT_EQ(2, p->nmetric_defs);
			for (k = 0; k < 2; k++) {
				const struct blamer_snap_metric_def *md = &p->metric_defs[k];

				if (!strcmp(md->name, "reqs")) {
					EXPECT_STREQ("help of reqs", md->help);
					EXPECT_STREQ("route", md->labels[0]);
					/* in the first round every heap is read:
					 * one decoding, its strings shared */
					if (!help0)
						help0 = md->help;
					else if (!round)
						EXPECT_EQ(help0, md->help);
				} else {
					EXPECT_STREQ("lat", md->name);
					ASSERT_EQ(3, md->nbuckets);
					EXPECT_EQ(lo, md->upper[0]) TH_LOG("pid %d", (int)p->pid);
					EXPECT_EQ(lo + 999.5, md->upper[1]);
				}
			}
			ASSERT_EQ(2, p->nmetrics);
		}
		/* "lat": one series per set of bounds, never merged */
		EXPECT_EQ(N - 1, s->metric_conflicts);
		blamer_snapshot_free(s);
	}
	blamer_reader_close(r);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ(0, system(cmd));
}

/*
 * A worker's series are most often its sibling's, in the same order: the
 * reader shares a label value with the series in the same place of the
 * heap read before when the bytes are the same, and the merge tries the
 * series that one went to first. Neither may change what is shown: heaps
 * in another order, a value that is the other's prefix or longer, a value
 * that is another's cleaned form. Each must show its own values, and the
 * merged series the sums of the equal ones.
 */
TEST(label_values_shared_with_the_heap_before_only_when_equal)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL };
	static const struct {
		const char *v;	/* route NUL code NUL */
		size_t n;
		double value;
	} heaps[][2] = {
		{ { "/a\0" "200", 7, 1 }, { "/b\0" "500", 7, 2 } },
		{ { "/b\0" "500", 7, 10 }, { "/a\0" "200", 7, 20 } },	/* swapped */
		{ { "/b\0" "500", 7, 100 }, { "/a\0" "2000", 8, 200 } },	/* longer */
		{ { "/b\0" "50", 6, 1000 }, { NULL, 0, 0 } },	/* shorter */
		{ { "/\x01\0" "200", 7, 5 }, { NULL, 0, 0 } },	/* cleaned */
		{ { "/\xef\xbf\xbd\0" "200", 9, 6 }, { NULL, 0, 0 } },	/* the clean form */
		{ { "/\x01\0" "200", 7, 7 }, { NULL, 0, 0 } },
	};
	static const struct {
		const char *route, *code;
		double value;
	} want[] = {
		{ "/a", "200", 21 }, { "/a", "2000", 200 }, { "/b", "50", 1000 },
		{ "/b", "500", 112 }, { "/\xef\xbf\xbd", "200", 18 },
	};
	enum { N = sizeof(heaps) / sizeof(heaps[0]) };
	const struct blamer_snap_process *p;
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct fx_heap h;
	char dir[] = "/tmp/blamer-like-XXXXXX", e[256], cmd[128];
	size_t i, j, k;
	blamer_ref d;

	ASSERT_NE(NULL, mkdtemp(dir));
	for (i = 0; i < N; i++) {
		fx_init(&h, 1, 16384, 3999501 + (int64_t)i, 1 + (int64_t)i);
		fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/svc");
		d = fx_metric_def(&h, "reqs", BLAMER_METRIC_COUNTER, 0, "route\0code", 2, NULL, 0);
		for (j = 0; j < 2 && heaps[i][j].v; j++)
			fx_metric(&h, d, heaps[i][j].v, heaps[i][j].n, heaps[i][j].value, NULL);
		ASSERT_EQ(0, fx_write_dir(&h, dir, 3999501 + (int64_t)i, 1 + (int64_t)i));
		fx_free(&h);
	}
	o.dir = dir;
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r) TH_LOG("%s", e);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	ASSERT_EQ(N, s->nprocs);
	for (i = 0; i < N; i++) {
		p = &s->procs[i];
		ASSERT_EQ(3999501 + (int64_t)i, p->pid);
		ASSERT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("pid %d: %s", (int)p->pid, p->problem);
		for (j = 0; j < p->nmetrics; j++) {
			const struct blamer_snap_metric *m = &p->metrics[j];
			const char *route = heaps[i][j].v, *code = route + strlen(route) + 1;

			if (route[1] == '\x01')
				route = "/\xef\xbf\xbd";
			EXPECT_STREQ(route, m->values[0]) TH_LOG("heap %zu series %zu", i, j);
			EXPECT_STREQ(code, m->values[1]) TH_LOG("heap %zu series %zu", i, j);
			EXPECT_EQ(heaps[i][j].value, m->value);
		}
	}
	/* what was shared: equal values in the same place, and only those */
	EXPECT_EQ(s->procs[1].metrics[0].values[0], s->procs[2].metrics[0].values[0]);
	EXPECT_EQ(s->procs[1].metrics[1].values[0], s->procs[2].metrics[1].values[0]);
	EXPECT_NE(s->procs[1].metrics[1].values[1], s->procs[2].metrics[1].values[1]);
	EXPECT_NE(s->procs[0].metrics[0].values[0], s->procs[1].metrics[0].values[0]);
	EXPECT_EQ(s->procs[4].metrics[0].values[0], s->procs[5].metrics[0].values[0]);
	ASSERT_EQ(sizeof(want) / sizeof(want[0]), s->nseries);
	for (k = 0; k < s->nseries; k++) {
		const struct blamer_snap_series *x = &s->series[k];

		EXPECT_STREQ(want[k].route, x->first->values[0]) TH_LOG("series %zu", k);
		EXPECT_STREQ(want[k].code, x->first->values[1]) TH_LOG("series %zu", k);
		EXPECT_EQ(want[k].value, x->value) TH_LOG("series %zu", k);
	}
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ASSERT_EQ(0, system(cmd));
}

/*
 * blamer_metric_def_cmp(): 0 for definitions whose series merge (help
 * differs: not merged on), and for each field merging depends on, a
 * definition that differs there alone compares unequal, both ways round
 * with opposite signs (the merge and the exporter's fold state both
 * order by it).
 */
TEST(definition_compare_tells_apart_what_merging_depends_on)
{
	double a_up[3] = { 0.1, 1, INFINITY }, b_up[3] = { 0.1, 2, INFINITY };
	char l0[] = "route", l1[] = "code", l2[] = "method", h1[] = "one", h2[] = "two";
	struct blamer_snap_metric_def a = {
		.name = "req_seconds", .help = h1, .kind = BLAMER_METRIC_HISTOGRAM,
		.base = BLAMER_BASE_SECONDS, .flags = 0, .nlabels = 2,
		.labels = { l0, l1 }, .layout = BLAMER_HIST_FIXED, .nbuckets = 3, .upper = a_up,
	};
	struct blamer_snap_metric_def b, c;
	int i;

	b = a;
	b.help = h2;
	ASSERT_EQ(0, blamer_metric_def_cmp(&a, &b));
	ASSERT_EQ(0, blamer_metric_def_cmp(&a, &a));
	for (i = 0; i < 8; i++) {
		c = a;
		switch (i) {
		case 0: strcpy(c.name, "req_secondz"); break;
		case 1: c.kind = BLAMER_METRIC_COUNTER; break;
		case 2: c.base = BLAMER_BASE_BYTES; break;
		case 3: c.gauge_mode = BLAMER_GAUGE_SUM; break;
		case 4: c.flags = BLAMER_METRIC_PER_PROCESS; break;
		case 5: c.labels[1] = l2; break;
		case 6: c.nlabels = 1; break;
		case 7: c.upper = b_up; break;
		}
		ASSERT_NE(0, blamer_metric_def_cmp(&a, &c)) TH_LOG("field %d", i);
		ASSERT_EQ(blamer_metric_def_cmp(&a, &c) < 0, blamer_metric_def_cmp(&c, &a) > 0)
			TH_LOG("field %d", i);
	}
	c = a;
	c.nbuckets = 2;
	ASSERT_NE(0, blamer_metric_def_cmp(&a, &c));
}

TEST_HARNESS_MAIN
