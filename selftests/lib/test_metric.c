// SPDX-License-Identifier: MIT
/*
 * libblamer writer tests, metrics: definitions checked and made once,
 * series found again by key, counters and histograms exact through
 * per-thread shards (as the reader sums them), gauges by mode, buckets
 * where the reader says they end, exact sums, fork, drops, a signal
 * handler writing the series its thread writes, a fork from such a
 * handler, a full heap, a series' home thread.
 * Each test runs in a fixture (common.h).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "common.h"

/* The merged series of metric @name whose first label value is @v0 (or
 * any, NULL), or NULL. */
static const struct blamer_snap_series *series(const struct blamer_snapshot *s,
					       const char *name, const char *v0)
{
	size_t i;

	for (i = 0; i < s->nseries; i++)
		if (!strcmp(s->series[i].def->name, name) &&
		    (!v0 || (s->series[i].def->nlabels && !strcmp(s->series[i].first->values[0], v0))))
			return &s->series[i];
	return NULL;
}

static uint64_t drops(struct blamer *b, uint32_t reason)
{
	struct blamer_drops *d = atomic_load(&b->drops);

	return d ? __atomic_load_n(&d->count[reason], __ATOMIC_RELAXED) : 0;
}

static const char *const route_code[] = { "route", "code" };

TEST_F(ctx, definitions_are_checked_and_made_once)
{
	static const char *const reserved[] = { "pid" }, *const twice[] = { "a", "a" };
	static const char *const bad_label[] = { "1x" }, *const under[] = { "__x" };
	double up[3] = { 1, 2, 3 }, down[2] = { 2, 1 }, nan[1] = { NAN };
	struct blamer_metric_def d = { .name = "http_requests", .help = "Requests served.",
				       .kind = BLAMER_METRIC_COUNTER, .labels = route_code,
				       .nlabels = 2 };
	struct blamer_metric *m, *m2;
	struct blamer_config c;
	struct blamer_snapshot *s;
	struct blamer *b;
	struct v_stats st;
	struct v_heap v;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	m = blamer_metric_define(b, &d);
	ASSERT_NE(NULL, m) TH_LOG("%s", blamer_errmsg());
	m2 = blamer_metric_define(b, &d);
	ASSERT_EQ(m, m2);	/* one handle per name */
	/* the same name otherwise: refused */
	d.kind = BLAMER_METRIC_GAUGE;
	ASSERT_EQ(NULL, blamer_metric_define(b, &d));
	ASSERT_EQ(EEXIST, blamer_errno());	/* a NULL return says why */
	d.kind = BLAMER_METRIC_COUNTER;
	d.help = "Other help.";
	ASSERT_EQ(NULL, blamer_metric_define(b, &d));
	d.help = "Requests served.";
#define BAD(field, value) do { struct blamer_metric_def x = d; x.field = value; \
		ASSERT_EQ(NULL, blamer_metric_define(b, &x)) TH_LOG(#field); } while (0)
	BAD(name, "blamer_x");
	BAD(name, "1abc");
	BAD(name, "a-b");
	BAD(name, "");
	BAD(name, "a234567890123456789012345678901234567890123456789012345678901234");
	BAD(kind, 0);
	BAD(kind, 4);
	BAD(base, 3);
	BAD(flags, 2);
	BAD(gauge_mode, BLAMER_GAUGE_SUM);	/* a counter */
	BAD(labels, reserved);
	BAD(labels, twice);
	BAD(labels, bad_label);
	BAD(labels, under);
	BAD(nlabels, 9);
	BAD(nbounds, 3);			/* bounds: histograms only */
	BAD(reserved[2], 1);
	d.labels = NULL;
	d.nlabels = 0;
	d.kind = BLAMER_METRIC_HISTOGRAM;
	d.name = "latency";
	BAD(bounds, down);
	d.nbounds = 2;
	BAD(bounds, down);
	d.nbounds = 1;
	BAD(bounds, nan);
	d.nbounds = 33;
	BAD(bounds, up);
	d.nbounds = 0;
	BAD(schema, 9);
	BAD(schema, -5);
	d.schema = 3;
	d.min_exp = -10;
	BAD(max_exp, 30);			/* 2 + 40 * 8 buckets: too many */
	BAD(max_exp, -10);
	d.max_exp = 20;				/* 242 */
	ASSERT_NE(NULL, blamer_metric_define(b, &d)) TH_LOG("%s", blamer_errmsg());
	d.name = "coarse";
	d.schema = -2;				/* 4 powers of two a bucket */
	d.min_exp = -6;
	BAD(max_exp, 12);			/* -6: not a multiple of 4 */
	d.min_exp = -8;
	BAD(max_exp, 10);			/* not a multiple of 4 */
	d.max_exp = 12;
	ASSERT_NE(NULL, blamer_metric_define(b, &d));
	d.name = "fixed";
	d.schema = d.min_exp = d.max_exp = 0;
	d.bounds = up;
	d.nbounds = 3;
	ASSERT_NE(NULL, blamer_metric_define(b, &d));
	d.name = "g";
	d.kind = BLAMER_METRIC_GAUGE;
	d.bounds = NULL;
	d.nbounds = 0;
	BAD(gauge_mode, 11);
#undef BAD
	ASSERT_NE(NULL, blamer_metric_define(b, &d));	/* mode 0: ALL */
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(5, st.by_type[BLAMER_REC_METRIC_DEF]);
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(BLAMER_HEALTH_OK, s->procs[0].health) TH_LOG("%s", s->procs[0].problem);
	ASSERT_EQ(5, s->procs[0].nmetric_defs);
	ASSERT_STREQ("http_requests", s->procs[0].metric_defs[0].name);
	ASSERT_STREQ("Requests served.", s->procs[0].metric_defs[0].help);
	ASSERT_EQ(2, s->procs[0].metric_defs[0].nlabels);
	ASSERT_STREQ("code", s->procs[0].metric_defs[0].labels[1]);
	ASSERT_EQ(242, s->procs[0].metric_defs[1].nbuckets);
	ASSERT_EQ(2 + 20 / 4, s->procs[0].metric_defs[2].nbuckets);
	ASSERT_EQ(4, s->procs[0].metric_defs[3].nbuckets);
	ASSERT_EQ(BLAMER_GAUGE_ALL, s->procs[0].metric_defs[4].gauge_mode);
	blamer_snapshot_free(s);
	t_close(self, b);
}

TEST_F(ctx, series_are_found_again_and_cut_values_marked)
{
	struct blamer_metric_def d = { .name = "reqs", .kind = BLAMER_METRIC_COUNTER,
				       .labels = route_code, .nlabels = 2 };
	static const char *const pathl[] = { "path" };
	uint64_t path[2] = { blamer_dag_id("server"), blamer_dag_id("hello") };
	const char *v[2] = { "/hello", "200" }, *w[2] = { "/hello", "500" };
	char long_value[400];
	const char *lv[2] = { long_value, "x" };
	struct blamer_series *s1, *s2, *s3, *s4;
	const struct blamer_snap_series *x;
	struct blamer_snapshot *s;
	struct blamer_metric *m, *pm;
	struct blamer_config c;
	struct blamer *b;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	m = blamer_metric_define(b, &d);
	ASSERT_NE(NULL, m);
	s1 = blamer_metric_series(m, v, NULL, 0);
	ASSERT_NE(NULL, s1) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(s1, blamer_metric_series(m, v, NULL, 0));
	s2 = blamer_metric_series(m, w, NULL, 0);
	ASSERT_NE(s1, s2);
	s3 = blamer_metric_series(m, v, path, 2);
	ASSERT_NE(s1, s3);
	ASSERT_EQ(s3, blamer_metric_series(m, v, path, 2));
	ASSERT_EQ(NULL, blamer_metric_series(m, NULL, NULL, 0));
	ASSERT_EQ(NULL, blamer_metric_series(m, v, path, 9));
	ASSERT_EQ(NULL, blamer_metric_series(m, v, NULL, 2));
	ASSERT_EQ(NULL, blamer_metric_series(NULL, v, NULL, 0));
	memset(long_value, 'a', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = '\0';
	ASSERT_EQ(0, drops(b, BLAMER_DROP_LABEL_VALUES_CUT));
	s4 = blamer_metric_series(m, lv, NULL, 0);
	ASSERT_NE(NULL, s4);
	ASSERT_EQ(1, drops(b, BLAMER_DROP_LABEL_VALUES_CUT));
	/* a label named path and a DAG path: two labels of one name */
	d.name = "p";
	d.labels = pathl;
	d.nlabels = 1;
	pm = blamer_metric_define(b, &d);
	ASSERT_NE(NULL, pm);
	ASSERT_NE(NULL, blamer_metric_series(pm, pathl, NULL, 0));
	ASSERT_EQ(NULL, blamer_metric_series(pm, pathl, path, 2));
	blamer_counter_add(s1, 2);
	blamer_counter_add(s2, 3);
	blamer_counter_add(s3, 4);
	blamer_counter_add(s4, 5);
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(BLAMER_HEALTH_OK, s->procs[0].health) TH_LOG("%s", s->procs[0].problem);
	ASSERT_EQ(5, s->procs[0].nmetrics);
	x = series(s, "reqs", "/hello");
	ASSERT_NE(NULL, x);
	ASSERT_EQ(0, x->first->depth);	/* no path sorts first */
	ASSERT_STREQ("200", x->first->values[1]);
	ASSERT_EQ(2, x->value);
	ASSERT_EQ(2, x[1].first->depth);	/* the same values with a path */
	ASSERT_EQ(4, x[1].value);
	ASSERT_STREQ("500", x[2].first->values[1]);
	ASSERT_EQ(3, x[2].value);
	x = series(s, "reqs", NULL);
	for (; x < s->series + s->nseries && !x->first->cut; x++)
		;
	ASSERT_LT(x, s->series + s->nseries);
	ASSERT_TRUE(x->first->cut);
	/* the room: 255 bytes with a NUL after each of the two */
	ASSERT_EQ(254, strlen(x->first->values[0]));
	ASSERT_STREQ("", x->first->values[1]);
	ASSERT_EQ(5, x->value);
	blamer_snapshot_free(s);
	t_close(self, b);
}

struct adder {
	struct blamer_series *c, *h;
	int n;
};

static void *add_many(void *arg)
{
	struct adder *a = arg;
	int i;

	for (i = 0; i < a->n; i++) {
		blamer_counter_add(a->c, 1);
		blamer_counter_add(a->c, 0.5);
		blamer_histogram_observe(a->h, (i % 10) * 0.25);
	}
	return NULL;
}

TEST_F(ctx, counters_and_histograms_are_exact_through_shards)
{
	double bounds[3] = { 0.5, 1, 2 };
	struct blamer_metric_def cd = { .name = "work_total", .kind = BLAMER_METRIC_COUNTER };
	struct blamer_metric_def hd = { .name = "work_seconds", .kind = BLAMER_METRIC_HISTOGRAM,
					.base = BLAMER_BASE_SECONDS, .bounds = bounds,
					.nbounds = 3 };
	struct adder a;
	pthread_t t[4];
	const struct blamer_snap_series *xc, *xh;
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct blamer *b;
	struct v_stats st;
	struct v_heap v;
	int i;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	a.c = blamer_metric_series(blamer_metric_define(b, &cd), NULL, NULL, 0);
	a.h = blamer_metric_series(blamer_metric_define(b, &hd), NULL, NULL, 0);
	ASSERT_NE(NULL, a.c);
	ASSERT_NE(NULL, a.h);
	a.n = 20000;
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, add_many, &a));
	add_many(&a);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	/* a shard per thread that wrote, two series: at most 10 */
	ASSERT_LE(st.by_type[BLAMER_REC_METRIC_SHARD], 10);
	ASSERT_GE(st.by_type[BLAMER_REC_METRIC_SHARD], 2);
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(BLAMER_HEALTH_OK, s->procs[0].health) TH_LOG("%s", s->procs[0].problem);
	xc = series(s, "work_total", NULL);
	xh = series(s, "work_seconds", NULL);
	ASSERT_NE(NULL, xc);
	ASSERT_NE(NULL, xh);
	ASSERT_EQ(5 * 20000 * 1.5, xc->value);
	ASSERT_EQ(5 * 20000, xh->count);
	/* 0, 0.25, 0.5 | 0.75, 1 | 1.25 .. 2 | 2.25: 3, 2, 4, 1 of every 10 */
	ASSERT_EQ(3 * 10000, xh->buckets[0]);
	ASSERT_EQ(2 * 10000, xh->buckets[1]);
	ASSERT_EQ(4 * 10000, xh->buckets[2]);
	ASSERT_EQ(1 * 10000, xh->buckets[3]);
	ASSERT_EQ(5 * 2000 * (0 + 0.25 + 0.5 + 0.75 + 1 + 1.25 + 1.5 + 1.75 + 2 + 2.25),
		  xh->value);
	/* p50: rank 50000 of 100000, in (0.5, 1] after 30000: 0.5 + 0.5 * 20000/20000 */
	ASSERT_EQ(1.0, blamer_histogram_quantile(xh->def, xh->buckets, 0.5));
	ASSERT_EQ(2.0, blamer_histogram_quantile(xh->def, xh->buckets, 0.99));	/* +Inf: the bound below */
	ASSERT_EQ(0.25, blamer_histogram_quantile(xh->def, xh->buckets, 0.15));	/* from 0 */
	ASSERT_TRUE(isnan(blamer_histogram_quantile(xh->def, xh->buckets, 1.5)));
	blamer_snapshot_free(s);
	t_close(self, b);
}

/* Every value lands in the bucket whose bound the reader shows: above
 * the one below, at most its own. */
TEST_F(ctx, buckets_end_where_the_reader_says)
{
	static const struct { int32_t schema, lo, hi; } lay[] = {
		{ 0, -3, 10 }, { 3, -10, 20 }, { 8, 0, 1 }, { -2, -8, 16 }, { -4, -32, 32 },
		{ 5, -4, 3 }, { 1, -1000, -990 },
	};
	double bounds[4] = { -1, 0, 0.001, 1e6 };
	struct blamer_metric_def d = { .kind = BLAMER_METRIC_HISTOGRAM };
	struct blamer_series *sr[8];
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct blamer *b;
	char names[8][8];
	size_t i, k, j;
	unsigned seed = 1;

	c = t_cfg(self->dir, 4u << 20, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	for (i = 0; i < 8; i++) {
		snprintf(names[i], sizeof(names[i]), "h%zu", i);
		d.name = names[i];
		if (i < 7) {
			d.schema = lay[i].schema;
			d.min_exp = lay[i].lo;
			d.max_exp = lay[i].hi;
		} else {
			d.schema = d.min_exp = d.max_exp = 0;
			d.bounds = bounds;
			d.nbounds = 4;
		}
		sr[i] = blamer_metric_series(blamer_metric_define(b, &d), NULL, NULL, 0);
		ASSERT_NE(NULL, sr[i]) TH_LOG("%zu: %s", i, blamer_errmsg());
	}
	for (i = 0; i < 8; i++) {
		struct bl_hist *h = &sr[i]->hist;

		for (k = 0; k < 20000; k++) {
			/* random magnitudes around the window, exact bounds, their neighbours */
			double v;
			uint32_t at;

			seed = seed * 1103515245 + 12345;
			if (k < 3 * h->nbuckets) {
				v = bl_hist_upper(h, (uint32_t)(k / 3) % h->nbuckets);
				if (k % 3 == 1)
					v = nextafter(v, -INFINITY);
				else if (k % 3 == 2)
					v = nextafter(v, INFINITY);
			} else {
				v = ldexp((double)(seed % 100000) / 100000.0 + 0.5,
					  (int)(seed >> 16) % 80 - 40 +
					  (i < 7 ? (lay[i].lo + lay[i].hi) / 2 : 0));
				if (seed & 0x100000)
					v = -v;
			}
			if (isnan(v))
				continue;
			at = bl_hist_index(h, v);
			/* the writer's lookup, the same bucket */
			ASSERT_EQ(at, bl_hist_fast_index(&sr[i]->fast, v)) TH_LOG("%zu: %a", i, v);
			ASSERT_LT(at, h->nbuckets);
			ASSERT_TRUE(v <= bl_hist_upper(h, at)) TH_LOG("%zu: %a in %u", i, v, at);
			if (at) {
				ASSERT_TRUE(v > bl_hist_upper(h, at - 1)) TH_LOG("%zu: %a in %u", i, v, at);
			}
		}
		blamer_histogram_observe(sr[i], 0);
		blamer_histogram_observe(sr[i], -5);
		blamer_histogram_observe(sr[i], DBL_MAX);	/* the +Inf bucket */
		blamer_histogram_observe(sr[i], INFINITY);	/* refused */
	}
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(BLAMER_HEALTH_OK, s->procs[0].health) TH_LOG("%s", s->procs[0].problem);
	for (i = 0; i < s->nseries; i++) {
		const struct blamer_snap_series *x = &s->series[i];

		/* the reader's bounds are the writer's */
		for (j = 0; j < x->def->nbuckets; j++)
			ASSERT_EQ(bl_hist_upper(&sr[x->def->name[1] - '0']->hist, (uint32_t)j),
				  x->def->upper[j]);
		ASSERT_EQ(3, x->count);
		ASSERT_EQ(DBL_MAX, x->value);	/* DBL_MAX - 5, rounded */
		ASSERT_EQ(1, x->buckets[x->def->nbuckets - 1]);
		/* 0 and -5: at or below 2^min_exp (fixed: -5 <= -1, 0 <= 0) */
		ASSERT_EQ(x->def->layout == BLAMER_HIST_EXPONENTIAL ? 2 : 1, x->buckets[0]);
	}
	blamer_snapshot_free(s);
	t_close(self, b);
}

/* The layout of @f, with POS and EXP as one value each. */
static uint32_t fast_layout(const struct bl_hist_fast *f)
{
	if (bl_hist_fast_pos(f))
		return BL_HIST_FAST_POS;
	return bl_hist_fast_exp(f) ? BL_HIST_FAST_EXP : f->mode;
}

/* @v's bucket by the writer's hot lookup: the reader's when it takes the
 * value, and it takes every value in range of a POS or EXP layout, never
 * another layout's. */
static void hot_matches(struct __test_metadata *_metadata, const struct bl_hist *h,
			const struct bl_hist_fast *f, double v)
{
	uint64_t bits, bucket = UINT64_MAX;
	uint32_t at = bl_hist_index(h, v);
	bool hot;

	memcpy(&bits, &v, sizeof(bits));
	hot = bl_hist_hot(f, bits, &bucket);
	if (hot) {
		ASSERT_EQ(at, bucket) TH_LOG("layout %u: %a", f->mode, v);
	}
	if (!bl_hist_fast_pos(f) && !bl_hist_fast_exp(f)) {
		ASSERT_FALSE(hot) TH_LOG("layout %u: %a", f->mode, v);
	}
	/* in range: not below the first bound or window, not in +Inf's,
	 * no sign bit (-0.0 goes the long way) */
	if (fast_layout(f) == BL_HIST_FAST_POS && !signbit(v) && v >= bl_hist_upper(h, 0) &&
	    at < h->nbuckets - 1) {
		ASSERT_TRUE(hot) TH_LOG("%a", v);
	}
	if (fast_layout(f) == BL_HIST_FAST_EXP && at && at < h->nbuckets - 1) {
		ASSERT_TRUE(hot) TH_LOG("%a", v);
	}
}

/* The writer's O(1) lookups against the reader's search, for layouts
 * that test their corners: bounds closer than a cell (more compares), one
 * bound, 32, the whole range of doubles, -0.0, denormals, a last bound
 * next to +Inf; every exponential schema; values at, next to and between
 * every bound, the special ones, and random bits. @mode (unless NONE):
 * the layout (fast_layout()) the bounds must get. */
static void fast_matches(struct __test_metadata *_metadata, const struct bl_hist *h,
			 unsigned *seed, uint32_t mode)
{
	struct bl_hist_table *t;
	struct bl_hist_fast f;
	static const double special[] = { 0.0, -0.0, INFINITY, -INFINITY, 0x1p-1074, -0x1p-1074,
					  0x1p-1022, -0x1p-1022, DBL_MAX, -DBL_MAX, 1.0, -1.0 };
	uint32_t i, k;

	ASSERT_LE(bl_hist_fast_cells(h), BL_HIST_CELLS);
	t = malloc(sizeof(*t) + bl_hist_fast_cells(h) * sizeof(t->cell[0]));
	ASSERT_NE(NULL, t);
	bl_hist_fast_init(&f, t, h);
	if (mode != BL_HIST_FAST_NONE)
		ASSERT_EQ(mode, fast_layout(&f));
	for (i = 0; i < h->nbuckets; i++) {
		double u = bl_hist_upper(h, i), w[3] = { u, nextafter(u, -INFINITY),
							 nextafter(u, INFINITY) };

		/* braced: an ASSERT is two statements */
		for (k = 0; k < 3; k++) {
			ASSERT_EQ(bl_hist_index(h, w[k]), bl_hist_fast_index(&f, w[k]))
				TH_LOG("layout %u schema %d: %a", h->layout, h->schema, w[k]);
			hot_matches(_metadata, h, &f, w[k]);
		}
		if (i + 2 < h->nbuckets) {
			double mid = u / 2 + bl_hist_upper(h, i + 1) / 2;

			ASSERT_EQ(bl_hist_index(h, mid), bl_hist_fast_index(&f, mid));
			hot_matches(_metadata, h, &f, mid);
		}
	}
	for (i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
		ASSERT_EQ(bl_hist_index(h, special[i]), bl_hist_fast_index(&f, special[i]))
			TH_LOG("%a", special[i]);
		hot_matches(_metadata, h, &f, special[i]);
	}
	/* the writer's in-range compare sends NaN and the infinities the
	 * long way (where they are refused), whatever the layout */
	for (i = 0; i < 4; i++) {
		static const uint64_t odd[4] = { 0x7ff0000000000000ull, 0xfff0000000000000ull,
						 0x7ff8000000000001ull, 0xffffffffffffffffull };
		uint64_t bucket;

		ASSERT_FALSE(bl_hist_hot(&f, odd[i], &bucket)) TH_LOG("%#llx", (unsigned long long)odd[i]);
	}
	for (k = 0; k < 200000; k++) {
		uint64_t bits;
		double v;

		*seed = *seed * 1103515245 + 12345;
		bits = (uint64_t)*seed << 32;
		*seed = *seed * 1103515245 + 12345;
		bits |= *seed;
		if (k & 1) {
			v = ldexp(1.0 + (double)(bits & 0xfffff) / 0x100000,
				  (int)((bits >> 20) % 120) - 60);
			v = bits >> 63 ? -v : v;
		} else {
			memcpy(&v, &bits, sizeof(v));
		}
		if (isnan(v))
			continue;
		ASSERT_EQ(bl_hist_index(h, v), bl_hist_fast_index(&f, v)) TH_LOG("%a", v);
		hot_matches(_metadata, h, &f, v);
	}
	free(t);
}

TEST(fast_bucket_lookup_is_the_readers)
{
	static const double b1[] = { 1 }, b2[] = { -0.0, 1e-300 }, b3[] = { -DBL_MAX, DBL_MAX },
			    b4[] = { 1.0, 0x1.0000000000001p0, 0x1.0000000000002p0, 2 },
			    b5[] = { -0x1p-1074, 0x1p-1074, 0x1p-1022 },
			    b6[] = { 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1,
				     2.5, 5, 7.5, 10 },
			    b7[] = { -1, 0, 0.001, 1e6 },
			    /* POS with the last bound a binade from +Inf: a
			     * negative value's cell, and +Inf's, are 2 past
			     * the last's; past that binade: not POS */
			    b8[] = { 1e300, 0x1.fffffffffffffp1022 }, b9[] = { 0, 0x1p-1074, 1 },
			    b10[] = { 1e300, 0x1p1023 };
	static const struct { const double *b; uint32_t n, mode; } fixed[] = {
		{ b1, 1, BL_HIST_FAST_POS }, { b2, 2, BL_HIST_FAST_POS },
		{ b3, 2, BL_HIST_FAST_FIXED }, { b4, 4, BL_HIST_FAST_FIXED_MORE },
		{ b5, 3, BL_HIST_FAST_NONE }, { b6, 14, BL_HIST_FAST_POS },
		{ b7, 4, BL_HIST_FAST_NONE }, { b8, 2, BL_HIST_FAST_POS },
		{ b9, 3, BL_HIST_FAST_NONE }, { b10, 2, BL_HIST_FAST_FIXED },
	};
	double b32[32];
	struct bl_hist h;
	unsigned seed = 3;
	int32_t schema, lo;
	uint32_t i;

	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		h = (struct bl_hist){ .layout = BLAMER_HIST_FIXED, .nbuckets = fixed[i].n + 1,
				      .bounds = fixed[i].b };
		ASSERT_TRUE(bl_hist_ok(&h));
		fast_matches(_metadata, &h, &seed, fixed[i].mode);
	}
	for (i = 0; i < 32; i++)
		b32[i] = ldexp(1.0 + i % 3, (int)i * 7 - 100);
	h = (struct bl_hist){ .layout = BLAMER_HIST_FIXED, .nbuckets = 33, .bounds = b32 };
	ASSERT_TRUE(bl_hist_ok(&h));
	fast_matches(_metadata, &h, &seed, BL_HIST_FAST_NONE);
	for (schema = -4; schema <= 8; schema++)
		for (lo = -1021; lo < 1000; lo += 397) {
			int32_t w = schema < 0 ? 1 << -schema : 1, a = lo - (lo % w + w) % w + w;
			int32_t span = schema > 0 ? 256 >> schema : 16 * w;

			h = (struct bl_hist){ .layout = BLAMER_HIST_EXPONENTIAL, .schema = schema,
					      .min_exp = a, .max_exp = a + span };
			h.nbuckets = bl_hist_exp_buckets(schema, h.min_exp, h.max_exp);
			if (!h.nbuckets)
				continue;
			fast_matches(_metadata, &h, &seed,
				     schema < 0 ? BL_HIST_FAST_EXP_WIDE : BL_HIST_FAST_EXP);
		}
	/* a series that is no histogram: every value the long way (refused) */
	{
		struct bl_hist_fast none;
		uint64_t bits, bucket;

		bl_hist_fast_none(&none);
		for (i = 0; i < 200000; i++) {
			seed = seed * 1103515245 + 12345;
			bits = (uint64_t)seed << 32 | (seed >> 7);
			ASSERT_FALSE(bl_hist_hot(&none, i < 4096 ? (uint64_t)i << 52 : bits, &bucket));
		}
	}
}

/* Exact sums: the same numbers in any order give the same bits. */
TEST(exact_sums_do_not_depend_on_order)
{
	double v[64], r0 = 0;
	struct blamer_exact_sum f;
	unsigned seed = 7;
	int round, i, j;

	memset(&f, 0, sizeof(f));
	blamer_exact_sum_add(&f, 1e-16);
	blamer_exact_sum_add(&f, 1);
	blamer_exact_sum_add(&f, 1e16);
	ASSERT_EQ(10000000000000002.0, blamer_exact_sum_value(&f));	/* math.fsum's */
	memset(&f, 0, sizeof(f));
	for (i = 0; i < 10; i++)
		blamer_exact_sum_add(&f, 0.1);
	ASSERT_EQ(1.0, blamer_exact_sum_value(&f));	/* a plain loop gives 0.9999999999999999 */
	for (i = 0; i < 64; i++) {
		seed = seed * 1103515245 + 12345;
		v[i] = ldexp((double)(seed % 1000003), (int)(seed >> 20) % 100 - 50);
	}
	for (round = 0; round < 200; round++) {
		memset(&f, 0, sizeof(f));
		for (i = 0; i < 64; i++) {
			seed = seed * 1103515245 + 12345;
			j = (int)(seed >> 8) % (64 - i) + i;
			double t = v[i];

			v[i] = v[j];
			v[j] = t;
			blamer_exact_sum_add(&f, v[i]);
		}
		ASSERT_LE(f.n, BL_FSUM_PARTIALS);
		if (!round)
			r0 = blamer_exact_sum_value(&f);
		ASSERT_EQ(r0, blamer_exact_sum_value(&f));
	}
	blamer_exact_sum_add(&f, INFINITY);
	ASSERT_EQ(INFINITY, blamer_exact_sum_value(&f));
}

TEST_F(ctx, gauges_set_add_and_stamp)
{
	struct blamer_metric_def d = { .name = "temp", .kind = BLAMER_METRIC_GAUGE,
				       .gauge_mode = BLAMER_GAUGE_MOSTRECENT };
	struct blamer_metric_def e = { .name = "inflight", .kind = BLAMER_METRIC_GAUGE,
				       .gauge_mode = BLAMER_GAUGE_LIVESUM };
	struct blamer_series *g, *h;
	const struct blamer_snap_series *x;
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct blamer *b;
	uint64_t before;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	g = blamer_metric_series(blamer_metric_define(b, &d), NULL, NULL, 0);
	h = blamer_metric_series(blamer_metric_define(b, &e), NULL, NULL, 0);
	ASSERT_NE(NULL, g);
	ASSERT_NE(NULL, h);
	before = bl_realtime_ns();
	blamer_gauge_set(g, 21.5);
	blamer_gauge_add(g, -1.5);
	blamer_gauge_add(h, 3);
	blamer_gauge_add(h, -1);
	blamer_gauge_set(h, NAN);	/* dropped */
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	x = series(s, "temp", NULL);
	ASSERT_NE(NULL, x);
	ASSERT_EQ(20, x->value);
	ASSERT_GE(x->stamp_ns, before);
	ASSERT_LE(x->stamp_ns, bl_realtime_ns());
	x = series(s, "inflight", NULL);
	ASSERT_NE(NULL, x);
	ASSERT_EQ(2, x->value);
	ASSERT_EQ(0, x->stamp_ns);
	ASSERT_EQ(1, drops(b, BLAMER_DROP_BAD_VALUE));
	blamer_snapshot_free(s);
	t_close(self, b);
}

TEST_F(ctx, bad_writes_are_counted)
{
	static const double bounds[] = { 1, 2 };
	struct blamer_metric_def cd = { .name = "c", .kind = BLAMER_METRIC_COUNTER };
	struct blamer_metric_def gd = { .name = "g", .kind = BLAMER_METRIC_GAUGE };
	struct blamer_metric_def hd = { .name = "h", .kind = BLAMER_METRIC_HISTOGRAM,
					.bounds = bounds, .nbounds = 2 };
	struct blamer_series *sc, *sg, *sh;
	const struct blamer_snap_series *x;
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct blamer *b;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	sc = blamer_metric_series(blamer_metric_define(b, &cd), NULL, NULL, 0);
	sg = blamer_metric_series(blamer_metric_define(b, &gd), NULL, NULL, 0);
	sh = blamer_metric_series(blamer_metric_define(b, &hd), NULL, NULL, 0);
	ASSERT_NE(NULL, sc);
	ASSERT_NE(NULL, sg);
	ASSERT_NE(NULL, sh);
	blamer_counter_add(sc, 1);
	blamer_counter_add(sc, -1);	/* a counter never goes down */
	blamer_counter_add(sc, NAN);
	/* infinities: a service's durable sum would stay infinite */
	blamer_counter_add(sc, INFINITY);
	blamer_histogram_observe(sh, INFINITY);
	blamer_histogram_observe(sh, -INFINITY);
	blamer_histogram_observe(sh, NAN);
	blamer_histogram_observe(sh, 1e300);	/* finite: taken */
	blamer_histogram_observe(sh, -2);
	blamer_gauge_set(sc, 5);	/* another kind */
	blamer_histogram_observe(sc, 5);
	blamer_counter_add(sg, 1);
	blamer_counter_add(NULL, 1);	/* nothing to count it in: ignored */
	ASSERT_EQ(6, drops(b, BLAMER_DROP_BAD_VALUE));
	ASSERT_EQ(3, drops(b, BLAMER_DROP_BAD_HANDLE));
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	ASSERT_EQ(1, series(s, "c", NULL)->value);
	ASSERT_EQ(0, series(s, "g", NULL)->value);
	x = series(s, "h", NULL);
	ASSERT_NE(NULL, x);
	ASSERT_EQ(2, x->count);
	ASSERT_EQ(1e300 - 2, x->value);
	ASSERT_EQ(6, s->procs[0].drops[BLAMER_DROP_BAD_VALUE]);
	blamer_snapshot_free(s);
	t_close(self, b);
}

/*
 * A sum that an add would take past the largest double: the add is
 * refused and counted (bad_value), the series keeps its last sum, and
 * the heap stays one a reader reads whole. Each add alone was finite,
 * so only the sum can tell; before, it stored +Inf (or -Inf) and the
 * reader took the heap for corrupt. In the thread's shard first, then,
 * the heap full, in the series record's own words (the shared path).
 */
static void overflow_writes(struct blamer_series *sc, struct blamer_series *sh,
			    struct blamer_series *sn, struct blamer_series *sg)
{
	blamer_counter_add(sc, 1e308);
	blamer_counter_add(sc, 1e308);		/* refused */
	blamer_counter_add(sc, 1);		/* taken: 1e308 + 1 is 1e308 */
	blamer_histogram_observe(sh, 1e308);	/* the +Inf bucket */
	blamer_histogram_observe(sh, 1e308);	/* refused: no bucket counts it */
	blamer_histogram_observe(sn, -1e308);	/* below the first bound */
	blamer_histogram_observe(sn, -1e308);	/* refused: -Inf */
	blamer_gauge_add(sg, INFINITY);		/* a gauge may be infinite */
	blamer_gauge_add(sg, -INFINITY);	/* refused: NaN */
}

static void overflow_check(struct __test_metadata *_metadata, struct blamer *b, const char *k,
			   uint64_t drops_then)
{
	const struct blamer_snap_series *x;
	struct blamer_snapshot *s = t_own_snapshot(b);

	ASSERT_NE(NULL, s);
	ASSERT_EQ(BLAMER_HEALTH_OK, s->procs[0].health) TH_LOG("%s", s->procs[0].problem);
	ASSERT_EQ(drops_then + 4, drops(b, BLAMER_DROP_BAD_VALUE));
	ASSERT_EQ(drops_then + 4, s->procs[0].drops[BLAMER_DROP_BAD_VALUE]);
	ASSERT_EQ(1e308, series(s, "c", k)->value);
	x = series(s, "h", k);
	ASSERT_NE(NULL, x);
	ASSERT_EQ(1, x->count);
	ASSERT_EQ(1, x->buckets[2]);
	ASSERT_EQ(1e308, x->value);
	x = series(s, "n", k);
	ASSERT_NE(NULL, x);
	ASSERT_EQ(1, x->count);
	ASSERT_EQ(1, x->buckets[0]);
	ASSERT_EQ(-1e308, x->value);
	ASSERT_EQ(INFINITY, series(s, "g", k)->value);
	blamer_snapshot_free(s);
}

TEST_F(ctx, sums_past_the_largest_double_are_refused_and_counted)
{
	static const double bounds[] = { 1, 2 };
	struct blamer_metric_def cd = { .name = "c", .kind = BLAMER_METRIC_COUNTER };
	struct blamer_metric_def hd = { .name = "h", .kind = BLAMER_METRIC_HISTOGRAM,
					.bounds = bounds, .nbounds = 2 };
	struct blamer_metric_def nd = { .name = "n", .kind = BLAMER_METRIC_HISTOGRAM,
					.bounds = bounds, .nbounds = 2 };
	struct blamer_metric_def gd = { .name = "g", .kind = BLAMER_METRIC_GAUGE,
					.gauge_mode = BLAMER_GAUGE_SUM };
	struct blamer_series *sc[2], *sh[2], *sn[2], *sg[2];
	struct blamer_config c;
	struct blamer *b;
	char name[2][2] = { "a", "b" };
	const char *const label = "k";
	int i, err = 0;

	c = t_cfg(self->dir, 65536, 1);
	ASSERT_EQ(0, t_open(self, &c, &b));
	for (i = 0; i < 2; i++) {
		const char *v = name[i];

		cd.labels = hd.labels = nd.labels = gd.labels = &label;
		cd.nlabels = hd.nlabels = nd.nlabels = gd.nlabels = 1;
		sc[i] = blamer_metric_series(blamer_metric_define(b, &cd), &v, NULL, 0);
		sh[i] = blamer_metric_series(blamer_metric_define(b, &hd), &v, NULL, 0);
		sn[i] = blamer_metric_series(blamer_metric_define(b, &nd), &v, NULL, 0);
		sg[i] = blamer_metric_series(blamer_metric_define(b, &gd), &v, NULL, 0);
		ASSERT_NE(NULL, sc[i]);
		ASSERT_NE(NULL, sh[i]);
		ASSERT_NE(NULL, sn[i]);
		ASSERT_NE(NULL, sg[i]);
	}
	/* series "a": through the thread's shards */
	overflow_writes(sc[0], sh[0], sn[0], sg[0]);
	overflow_check(_metadata, b, "a", 0);
	/* series "b": no room for a shard, the record's own words */
	while (bl_heap_alloc(&b->heap, 24, T_REC_TEST, &err))
		;
	overflow_writes(sc[1], sh[1], sn[1], sg[1]);
	overflow_check(_metadata, b, "b", 4);
	t_close(self, b);
}

/*
 * A series is asked for with a new label value per request on a heap
 * with no room left: each fails (ENOSPC, counted as heap_full) and
 * leaves no handle behind in the process (its handle goes in the table
 * only once its record is made); the series made before is found, the
 * same, and still written.
 */
TEST_F(ctx, series_the_heap_has_no_room_for_leave_no_handles)
{
	struct blamer_metric_def cd = { .name = "hits", .kind = BLAMER_METRIC_COUNTER,
					.labels = (const char *[]){ "user" }, .nlabels = 1 };
	struct blamer_series key, *first;
	struct blamer_metric *m;
	struct blamer_snapshot *s;
	struct blamer_config c;
	uint64_t full;
	char user[32];
	const char *v[1] = { user };
	struct blamer *b;
	int i, err = 0;

	c = t_cfg(self->dir, 16384, 2);
	ASSERT_EQ(0, t_open(self, &c, &b));
	m = blamer_metric_define(b, &cd);
	ASSERT_NE(NULL, m);
	strcpy(user, "u0");
	first = blamer_metric_series(m, v, NULL, 0);
	ASSERT_NE(NULL, first);
	while (bl_heap_alloc(&b->heap, 512, T_REC_TEST, &err))
		;
	while (bl_heap_alloc(&b->heap, 24, T_REC_TEST, &err))
		;
	ASSERT_EQ(ENOSPC, err);
	full = drops(b, BLAMER_DROP_HEAP_FULL);
	for (i = 1; i <= 20000; i++) {
		snprintf(user, sizeof(user), "u%d", i);
		ASSERT_EQ(NULL, blamer_metric_series(m, v, NULL, 0));
		ASSERT_EQ(ENOSPC, blamer_errno());
		bl_series_key(&key, m, v, NULL, 0);
		ASSERT_EQ(NULL, bl_series_find(b, &key)) TH_LOG("a handle left for %s", user);
	}
	EXPECT_EQ(full + 20000, drops(b, BLAMER_DROP_HEAP_FULL));
	strcpy(user, "u0");
	bl_series_key(&key, m, v, NULL, 0);
	ASSERT_EQ(first, bl_series_find(b, &key));
	ASSERT_EQ(first, blamer_metric_series(m, v, NULL, 0));
	blamer_counter_add(first, 3);	/* the record's own words: no room for a shard */
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(3.0, series(s, "hits", "u0")->value);
	blamer_snapshot_free(s);
	t_close(self, b);
}

static struct blamer_series *sig_series;

static void on_usr1(int sig)
{
	(void)sig;
	blamer_counter_add(sig_series, 1);
	blamer_histogram_observe(sig_series + 0, 0);	/* another kind: counted, harmless */
}

/* A signal handler that adds to the series its thread is adding to, at
 * any instruction: no add lost. */
TEST_F(ctx, signal_handler_adds_are_not_lost)
{
	struct blamer_metric_def cd = { .name = "c", .kind = BLAMER_METRIC_COUNTER };
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	struct blamer *b;
	uint64_t adds = 0, sigs;
	int i;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	sig_series = blamer_metric_series(blamer_metric_define(b, &cd), NULL, NULL, 0);
	ASSERT_NE(NULL, sig_series);
	blamer_counter_add(sig_series, 2);	/* the shard is made outside the handler */
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	for (i = 0; i < 3000000; i++, adds++)
		blamer_counter_add(sig_series, 2);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGALRM, SIG_DFL);
	sigs = drops(b, BLAMER_DROP_BAD_HANDLE);	/* one per handler run */
	ASSERT_GT(sigs, 0);
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(2.0 * (adds + 1) + (double)sigs, series(s, "c", NULL)->value);
	blamer_snapshot_free(s);
	t_close(self, b);
}

/* The same away from home: the series' home thread has exited, so the
 * loop's writes and the handler's go through the thread's shard cache
 * (write_away()); the handler observes into the histogram the loop is
 * observing into too. */
static struct blamer_series *away_c, *away_h;
static volatile sig_atomic_t away_sigs;

static void on_alarm_away(int sig)
{
	(void)sig;
	blamer_counter_add(away_c, 1);
	blamer_histogram_observe(away_h, 0.25);
	away_sigs++;
}

static void *claim_homes(void *arg)
{
	(void)arg;
	blamer_counter_add(away_c, 2);
	blamer_histogram_observe(away_h, 0.5);
	return NULL;
}

TEST_F(ctx, signal_handler_writes_away_from_home_are_not_lost)
{
	struct blamer_metric_def cd = { .name = "c", .kind = BLAMER_METRIC_COUNTER };
	static const double bounds[] = { 0.3, 1 };
	struct blamer_metric_def hd = { .name = "h", .kind = BLAMER_METRIC_HISTOGRAM,
					.bounds = bounds, .nbounds = 2 };
	struct sigaction sa = { .sa_handler = on_alarm_away };
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	const struct blamer_snap_series *h;
	struct blamer_snapshot *s;
	struct blamer_config c;
	uint64_t adds = 2;	/* the home thread's and this one's first */
	struct blamer *b;
	pthread_t t;
	int i;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	away_c = blamer_metric_series(blamer_metric_define(b, &cd), NULL, NULL, 0);
	away_h = blamer_metric_series(blamer_metric_define(b, &hd), NULL, NULL, 0);
	ASSERT_NE(NULL, away_c);
	ASSERT_NE(NULL, away_h);
	ASSERT_EQ(0, pthread_create(&t, NULL, claim_homes, NULL));
	ASSERT_EQ(0, pthread_join(t, NULL));
	blamer_counter_add(away_c, 2);	/* this thread's shards, outside the handler */
	blamer_histogram_observe(away_h, 0.5);
	away_sigs = 0;
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	for (i = 0; i < 2000000; i++, adds++) {
		blamer_counter_add(away_c, 2);
		blamer_histogram_observe(away_h, 0.5);
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGALRM, SIG_DFL);
	ASSERT_GT(away_sigs, 0);
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(2.0 * adds + away_sigs, series(s, "c", NULL)->value);
	h = series(s, "h", NULL);
	ASSERT_NE(NULL, h);
	ASSERT_EQ(adds + away_sigs, h->count);
	ASSERT_EQ(0.5 * adds + 0.25 * away_sigs, h->value);	/* the sum */
	ASSERT_EQ(away_sigs, h->buckets[0]);
	ASSERT_EQ(adds, h->buckets[1]);
	blamer_snapshot_free(s);
	t_close(self, b);
}

/*
 * fork() from a signal handler that interrupted a write: the child
 * returns into the write its parent's thread was making, with the
 * parent's shard already chosen (a series' or a path's). It must land in
 * the child's scratch copy of the mapping, never in the parent's heap;
 * the child's own writes after it make its own series and path, from
 * zero; the parent's sums stay exact.
 */
static struct blamer_series *fork_c, *fork_h;
static struct blamer_path *fork_p;
#define FORKS 40
static volatile sig_atomic_t fork_child, fork_n;
static pid_t fork_pids[FORKS];

static void fork_on_alarm(int sig)
{
	pid_t pid;

	(void)sig;
	if (fork_child || fork_n == FORKS)
		return;
	pid = fork();
	if (pid == 0)
		fork_child = 1;
	else if (pid > 0)
		fork_pids[fork_n++] = pid;
}

/* The child, back from the handler: its own adds and observations. */
static int forked_child_checks(struct blamer *b)
{
	struct blamer_snapshot *s;
	const struct blamer_snap_series *c, *h;
	int i, ok;

	for (i = 0; i < 10; i++) {
		blamer_counter_add(fork_c, 1);
		blamer_histogram_observe(fork_h, 0.5);
		blamer_path_add(fork_p, 0, 1);
	}
	s = t_own_snapshot(b);
	c = s ? series(s, "fc", NULL) : NULL;
	h = s ? series(s, "fh", NULL) : NULL;
	/* the interrupted write went to scratch memory, or (begun after
	 * the fork's handlers) to the child's own heap: one more at most */
	ok = c && (c->value == 10 || c->value == 12) && h && (h->count == 10 || h->count == 11);
	ok &= s && s->procs[0].npaths == 1 && (s->procs[0].paths[0].values[0] == 10 ||
						s->procs[0].paths[0].values[0] == 13);
	blamer_snapshot_free(s);
	blamer_abandon(b);
	return ok;
}

TEST_F(ctx, fork_in_a_signal_handler_mid_write)
{
	struct blamer_metric_def cd = { .name = "fc", .kind = BLAMER_METRIC_COUNTER };
	double bounds[2] = { 1, 10 };
	struct blamer_metric_def hd = { .name = "fh", .kind = BLAMER_METRIC_HISTOGRAM,
					.bounds = bounds, .nbounds = 2 };
	struct sigaction sa = { .sa_handler = fork_on_alarm };
	struct itimerval it = { { 0, 500 }, { 0, 500 } };
	const uint64_t node = blamer_dag_id("fork");
	const uint32_t unit = BLAMER_UNIT_BYTES;
	const struct blamer_snap_series *h;
	struct blamer_snapshot *s;
	struct blamer_config c;
	uint64_t adds = 0;
	struct blamer *b;
	int i, status;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	fork_c = blamer_metric_series(blamer_metric_define(b, &cd), NULL, NULL, 0);
	fork_h = blamer_metric_series(blamer_metric_define(b, &hd), NULL, NULL, 0);
	ASSERT_EQ(0, blamer_dag_node(b, node, 1, "fork"));
	fork_p = blamer_path_get(b, &node, 1, &unit, 1);
	ASSERT_NE(NULL, fork_c);
	ASSERT_NE(NULL, fork_h);
	ASSERT_NE(NULL, fork_p);
	blamer_counter_add(fork_c, 2);	/* the shards are made before any fork */
	blamer_histogram_observe(fork_h, 5);
	blamer_path_add(fork_p, 0, 3);
	adds = 1;
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	while (fork_n < FORKS) {
		for (i = 0; i < 1000 && !fork_child; i++, adds++) {
			blamer_counter_add(fork_c, 2);
			blamer_histogram_observe(fork_h, 5);
			blamer_path_add(fork_p, 0, 3);
		}
		if (fork_child)
			_exit(forked_child_checks(b) ? 0 : 1);
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGALRM, SIG_DFL);
	for (i = 0; i < fork_n; i++) {
		ASSERT_EQ(fork_pids[i], waitpid(fork_pids[i], &status, 0));
		EXPECT_EQ(0, status) TH_LOG("child %d of %d", i, (int)fork_n);
	}
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(2.0 * adds, series(s, "fc", NULL)->value);
	h = series(s, "fh", NULL);
	ASSERT_EQ(adds, h->count);
	ASSERT_EQ(5.0 * adds, h->value);
	ASSERT_EQ(adds, h->buckets[1]);
	ASSERT_EQ(1, s->procs[0].npaths);
	ASSERT_EQ(3 * adds, s->procs[0].paths[0].values[0]);
	blamer_snapshot_free(s);
	t_close(self, b);
}

/* A full heap: no shard to be had, the series' own words take the adds. */
TEST_F(ctx, full_heap_adds_to_the_series_record)
{
	struct blamer_metric_def cd = { .name = "c", .kind = BLAMER_METRIC_COUNTER };
	double bounds[1] = { 1 };
	struct blamer_metric_def hd = { .name = "h", .kind = BLAMER_METRIC_HISTOGRAM,
					.bounds = bounds, .nbounds = 1 };
	struct blamer_series *sc, *sh;
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct blamer *b;
	int err = 0, i;

	c = t_cfg(self->dir, 65536, 1);
	ASSERT_EQ(0, t_open(self, &c, &b));
	sc = blamer_metric_series(blamer_metric_define(b, &cd), NULL, NULL, 0);
	sh = blamer_metric_series(blamer_metric_define(b, &hd), NULL, NULL, 0);
	ASSERT_NE(NULL, sc);
	ASSERT_NE(NULL, sh);
	while (bl_heap_alloc(&b->heap, 24, T_REC_TEST, &err))
		;
	for (i = 0; i < 1000; i++) {
		blamer_counter_add(sc, 0.5);
		blamer_histogram_observe(sh, i < 10 ? 0.5 : 5);
	}
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(500, series(s, "c", NULL)->value);
	ASSERT_EQ(1000, series(s, "h", NULL)->count);
	ASSERT_EQ(10, series(s, "h", NULL)->buckets[0]);
	ASSERT_EQ(0.5 * 10 + 5 * 990, series(s, "h", NULL)->value);
	blamer_snapshot_free(s);
	t_close(self, b);
}

static void *exit_after_adds(void *arg)
{
	blamer_counter_add(arg, 1);
	return NULL;
}

/* A thread's exit frees its shard for the next: shards follow the
 * threads writing at once, not every thread ever. */
TEST_F(ctx, exited_threads_leave_shards_for_the_next)
{
	struct blamer_metric_def cd = { .name = "c", .kind = BLAMER_METRIC_COUNTER };
	struct blamer_series *sc;
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct v_stats st;
	struct v_heap v;
	struct blamer *b;
	pthread_t t;
	int i;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	sc = blamer_metric_series(blamer_metric_define(b, &cd), NULL, NULL, 0);
	ASSERT_NE(NULL, sc);
	for (i = 0; i < 50; i++) {
		ASSERT_EQ(0, pthread_create(&t, NULL, exit_after_adds, sc));
		pthread_join(t, NULL);
	}
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(1, st.by_type[BLAMER_REC_METRIC_SHARD]);
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(50, series(s, "c", NULL)->value);
	blamer_snapshot_free(s);
	t_close(self, b);
}

/* Two adds; non-NULL if the series' home became this thread's. */
static void *write_twice(void *arg)
{
	struct blamer_series *sc = arg;
	bool mine;

	blamer_counter_add(sc, 1);
	mine = __atomic_load_n(&sc->home, __ATOMIC_RELAXED) == bl_tls.token;
	blamer_counter_add(sc, 1);
	return mine ? arg : NULL;
}

static void *home_and_exit(void *arg)
{
	blamer_counter_add(arg, 4);
	return NULL;
}

/*
 * A series' first writer is its home (the handle keeps its shard); other
 * threads write through their slots; a home that exited is nobody's (its
 * token is never handed out again) and the shard it released is taken
 * by the next thread; a fork child's handles have no home until the
 * child writes. Exact sums throughout.
 */
TEST_F(ctx, the_first_writer_is_the_series_home)
{
	struct blamer_metric_def cd = { .name = "c", .kind = BLAMER_METRIC_COUNTER };
	struct blamer_metric_def dd = { .name = "d", .kind = BLAMER_METRIC_COUNTER };
	struct blamer_series *sc, *sd;
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct v_stats st;
	struct v_heap v;
	struct blamer *b;
	uint64_t dead;
	void *other;
	pthread_t t;
	int status;
	pid_t pid;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	sc = blamer_metric_series(blamer_metric_define(b, &cd), NULL, NULL, 0);
	sd = blamer_metric_series(blamer_metric_define(b, &dd), NULL, NULL, 0);
	ASSERT_NE(NULL, sc);
	ASSERT_NE(NULL, sd);
	ASSERT_EQ(BL_HOME_NONE, sc->home);
	blamer_counter_add(sc, 1);
	ASSERT_NE(0, bl_tls.token);
	ASSERT_EQ(bl_tls.token, sc->home);
	ASSERT_EQ(0, pthread_create(&t, NULL, write_twice, sc));
	ASSERT_EQ(0, pthread_join(t, &other));
	ASSERT_EQ(NULL, other);
	ASSERT_EQ(bl_tls.token, sc->home);

	ASSERT_EQ(0, pthread_create(&t, NULL, home_and_exit, sd));
	ASSERT_EQ(0, pthread_join(t, NULL));
	dead = sd->home;
	ASSERT_NE(BL_HOME_NONE, dead);
	ASSERT_NE(bl_tls.token, dead);
	blamer_counter_add(sd, 2);
	ASSERT_EQ(dead, sd->home);	/* still the dead thread's: nobody's */
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	/* c: main's and the thread's; d: the dead home's, taken over */
	ASSERT_EQ(3, st.by_type[BLAMER_REC_METRIC_SHARD]);

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int ok = sc->home == BL_HOME_NONE && sd->home == BL_HOME_NONE;

		blamer_counter_add(sc, 5);
		ok &= sc->home == bl_tls.token && bl_tls.token != 0;
		s = t_own_snapshot(b);
		ok &= s && series(s, "c", NULL) && series(s, "c", NULL)->value == 5;
		blamer_snapshot_free(s);
		blamer_abandon(b);
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	blamer_counter_add(sc, 1);
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(4, series(s, "c", NULL)->value);
	ASSERT_EQ(6, series(s, "d", NULL)->value);
	blamer_snapshot_free(s);
	t_close(self, b);
}

/* A fork child's heap has its parent's definitions before it defines
 * anything; a series handle made before the fork writes the child's
 * own series, from zero; the parent's is untouched. */
TEST_F(ctx, fork_child_inherits_definitions_not_values)
{
	struct blamer_metric_def cd = { .name = "reqs", .kind = BLAMER_METRIC_COUNTER,
					.labels = route_code, .nlabels = 2 };
	double bounds[2] = { 1, 10 };
	struct blamer_metric_def hd = { .name = "lat", .kind = BLAMER_METRIC_HISTOGRAM,
					.bounds = bounds, .nbounds = 2 };
	const char *v[2] = { "/", "200" };
	struct blamer_series *sc, *sh;
	struct blamer_metric *mc;
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct blamer *b;
	int status;
	pid_t pid;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	mc = blamer_metric_define(b, &cd);
	sc = blamer_metric_series(mc, v, NULL, 0);
	sh = blamer_metric_series(blamer_metric_define(b, &hd), NULL, NULL, 0);
	ASSERT_NE(NULL, sc);
	ASSERT_NE(NULL, sh);
	blamer_counter_add(sc, 100);
	blamer_histogram_observe(sh, 5);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		const char *w[2] = { "/", "404" };
		int ok = 1;

		blamer_counter_add(sc, 1);	/* makes the child's heap */
		s = t_own_snapshot(b);
		/* the definitions were there before anything defined them */
		ok &= s && s->procs[0].nmetric_defs == 2 && s->procs[0].health == BLAMER_HEALTH_OK;
		ok &= s && series(s, "reqs", "/") && series(s, "reqs", "/")->value == 1;
		ok &= s && !series(s, "lat", NULL);	/* not written yet: not made */
		blamer_snapshot_free(s);
		blamer_histogram_observe(sh, 0.5);
		ok &= blamer_metric_define(b, &cd) == mc;
		ok &= blamer_metric_series(mc, w, NULL, 0) != NULL;
		s = t_own_snapshot(b);
		ok &= s && series(s, "lat", NULL) && series(s, "lat", NULL)->count == 1 &&
		      series(s, "lat", NULL)->buckets[0] == 1;
		ok &= s && s->procs[0].nmetric_defs == 2 && s->procs[0].nmetrics == 3;
		ok &= s && s->procs[0].dropped == 0;
		blamer_snapshot_free(s);
		blamer_abandon(b);
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(100, series(s, "reqs", "/")->value);
	ASSERT_EQ(1, series(s, "lat", NULL)->count);
	blamer_snapshot_free(s);
	t_close(self, b);
}

/* A clean close keeps a heap whose series an exporter folds (marked
 * closed), and removes one without (as before). */
TEST_F(ctx, clean_close_keeps_a_heap_to_fold)
{
	struct blamer_metric_def cd = { .name = "c", .kind = BLAMER_METRIC_COUNTER };
	struct blamer_metric_def ld = { .name = "l", .kind = BLAMER_METRIC_GAUGE,
					.gauge_mode = BLAMER_GAUGE_LIVESUM };
	struct blamer_reader_opts o = { .backend = t_backend(), .dir = self->dir };
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct blamer_config c;
	struct blamer *b;
	char e[256];
	int status;
	pid_t pid;

	if (t_backend() != BLAMER_BACKEND_DIR)
		SKIP(return, "the device keeps a closed heap's slabs until the process exits");
	c = t_cfg(self->dir, 0, 0);
	/* in children: heaps of processes that ended, to read in full */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int ok = blamer_open(&c, &b) == 0;
		struct blamer_series *x = ok ? blamer_metric_series(blamer_metric_define(b, &cd),
								     NULL, NULL, 0) : NULL;

		blamer_counter_add(x, 3);
		blamer_close(b);
		_exit(ok && x ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* a LIVE* gauge ends with its process: nothing to fold */
		int ok = blamer_open(&c, &b) == 0;
		struct blamer_series *x = ok ? blamer_metric_series(blamer_metric_define(b, &ld),
								     NULL, NULL, 0) : NULL;

		blamer_gauge_set(x, 1);
		blamer_close(b);
		_exit(ok && x ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	o.flags = BLAMER_READ_DEAD_FULL;
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r) TH_LOG("%s", e);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	ASSERT_EQ(1, s->nprocs);
	ASSERT_EQ(BLAMER_PROC_DEAD, s->procs[0].state);
	ASSERT_EQ(BLAMER_HEAP_DELETED, s->procs[0].heap_state);
	ASSERT_EQ(BLAMER_PHASE_EXITED_CLEANLY, s->procs[0].phase);
	ASSERT_EQ(1, s->nseries);
	ASSERT_EQ(3, s->series[0].value);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
}

/*
 * One process's heaps one after another in a directory (closed and kept
 * for the fold, abandoned, alive at its death): three heaps, each read
 * and folded once, so the service's counter is their sum, and each
 * released. The same name made again had replaced each with the next:
 * the service counted the last alone.
 */
TEST_F(ctx, a_process_heaps_one_after_another_fold_as_one_service)
{
	struct blamer_metric_def cd = { .name = "jobs_total", .kind = BLAMER_METRIC_COUNTER };
	char state[] = "/tmp/blamer-fold-XXXXXX", path[64], want[64], name[128];
	struct blamer_snapshot *s;
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR, .dir = self->dir,
					.flags = BLAMER_READ_DEAD_FULL };
	struct blamer_fleet *f;
	struct blamer_reader *r;
	struct blamer_config c;
	size_t i, len = 0, cap = 0;
	char e[256], *text = NULL;
	int status, n;
	pid_t pid;

	if (t_backend() != BLAMER_BACKEND_DIR)
		SKIP(return, "dir backend: the device makes a heap per open file");
	c = t_cfg(self->dir, 0, 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		static const double adds[] = { 1, 2, 4 };
		struct blamer *b;
		int k;

		for (k = 0; k < 3; k++) {
			if (blamer_open(&c, &b))
				_exit(1);
			blamer_counter_add(blamer_metric_series(blamer_metric_define(b, &cd),
								NULL, NULL, 0), adds[k]);
			if (k == 0)
				blamer_close(b);	/* kept: it holds a folded series */
			else if (k == 1)
				blamer_abandon(b);
		}
		_exit(0);	/* the last one alive at the end */
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r) TH_LOG("%s", e);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	ASSERT_EQ(3, s->nprocs);
	for (i = 0; i < s->nprocs; i++) {
		ASSERT_EQ(pid, s->procs[i].pid);
		ASSERT_EQ(BLAMER_PROC_DEAD, s->procs[i].state);
		if (i)
			ASSERT_NE(s->procs[i - 1].heap_key, s->procs[i].heap_key);
	}
	ASSERT_EQ(1, s->nseries);
	ASSERT_EQ(7, s->series[0].value);
	ASSERT_NE(NULL, mkdtemp(state));
	snprintf(path, sizeof(path), "%s/state", state);
	f = blamer_fleet_open(path, e, sizeof(e));
	ASSERT_NE(NULL, f) TH_LOG("%s", e);
	n = blamer_fleet_fold(f, r, s, 0, e, sizeof(e));
	ASSERT_EQ(3, n) TH_LOG("%s", e);
	ASSERT_EQ(0, blamer_fleet_prometheus_text(f, s, &text, &len, &cap));
	snprintf(want, sizeof(want), "\njobs_total{uid=\"%u\"} 7\n", (unsigned)getuid());
	ASSERT_NE(NULL, strstr(text, want)) TH_LOG("%s", text);
	free(text);
	blamer_fleet_close(f);
	blamer_snapshot_free(s);
	/* all three released: no slab file of the child's left */
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	ASSERT_EQ(0, s->nprocs);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	snprintf(name, sizeof(name), "rm -rf '%s'", state);
	ASSERT_EQ(0, system(name));
}

TEST_HARNESS_MAIN
