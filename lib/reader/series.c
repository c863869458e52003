// SPDX-License-Identifier: MIT
/*
 * The service view of a snapshot: each metric's series merged over the
 * processes (live and dead), per uid, and the processes by role.
 *
 * One definition per name and uid: the one most of that uid's processes
 * give (then the least, so every reader picks the same whatever order
 * heaps come in); a process whose heap defines the name otherwise is left
 * out of the merge and counted (a counter summed with a gauge, or
 * histograms with other buckets, would be wrong numbers). Per uid, so
 * that another user's processes, however many, never outvote a user's
 * own definition and make its series a conflict (two services of two
 * users that name a metric alike, by accident or not). Help text does
 * not count: it is shown, not merged.
 *
 * Series are merged by (name, uid, label values, path): counters and
 * histogram sums exactly (lib/format/metric.h), bucket counts as
 * integers, gauges by their mode. Gauges of ALL and LIVEALL, and metrics
 * flagged PER_PROCESS, stay a series per process. Keys are hashed with a
 * secret seed: a heap chooses its label values.
 *
 * A counter's or a histogram's merge that does not fit its type (a sum
 * past the largest double, a count past 2^64 - 1) is left out of the
 * series, into s->overflows: each heap is checked alone (decode_metric.c),
 * but heaps of one user, each valid, can add up past either, and the
 * series would show +Inf (for good, once a fold kept it) or a count that
 * wrapped, lower than before: a reset to Prometheus.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "metric.h"

/* @x into @h (rd_mix()). */
static uint64_t mix(uint64_t h, uint64_t x)
{
	return rd_mix(h ^ x);
}

static uint64_t mix_str(uint64_t h, const char *s)
{
	size_t n = strlen(s), i;
	uint64_t w;

	/* whole words, then the tail's bytes (a copy of a size chosen per
	 * word was a call to memcpy() for each) */
	h = mix(h, n);
	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, sizeof(w));
		h = mix(h, w);
	}
	if (i < n) {
		for (w = 0; i < n; i++)
			w = w << 8 | (unsigned char)s[i];
		h = mix(h, w);
	}
	return h;
}

/* ---- one definition per name ---- */

static int sgn(int64_t x)
{
	return (x > 0) - (x < 0);
}

int blamer_metric_def_cmp(const struct blamer_snap_metric_def *x,
			  const struct blamer_snap_metric_def *y)
{
	uint32_t i;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->kind != y->kind)
		return sgn((int64_t)x->kind - y->kind);
	if (x->base != y->base)
		return sgn((int64_t)x->base - y->base);
	if (x->gauge_mode != y->gauge_mode)
		return sgn((int64_t)x->gauge_mode - y->gauge_mode);
	if (x->flags != y->flags)
		return sgn((int64_t)x->flags - y->flags);
	if (x->nlabels != y->nlabels)
		return sgn((int64_t)x->nlabels - y->nlabels);
	for (i = 0; i < x->nlabels; i++)
		if ((c = strcmp(x->labels[i], y->labels[i])))
			return c;
	if (x->nbuckets != y->nbuckets)
		return sgn((int64_t)x->nbuckets - y->nbuckets);
	for (i = 0; i < x->nbuckets; i++)
		if (x->upper[i] != y->upper[i])
			return x->upper[i] < y->upper[i] ? -1 : 1;
	return 0;
}

/* A hash of what blamer_metric_def_cmp() compares but labels and
 * bounds: equal definitions hash alike, and the few of one name that
 * differ only there are told apart by blamer_metric_def_cmp() (hashing
 * every bound of every process's histograms cost more than the compares
 * it spares). */
static uint64_t def_hash(uint64_t seed, const struct blamer_snap_metric_def *d)
{
	uint64_t h = mix_str(seed, d->name);

	h = mix(h, (uint64_t)d->kind << 32 | d->base);
	h = mix(h, (uint64_t)d->gauge_mode << 32 | d->flags);
	return mix(h, (uint64_t)d->nlabels << 32 | d->nbuckets);
}

/*
 * The distinct definitions of a snapshot (equal by
 * blamer_metric_def_cmp(), per uid), each with the processes that give
 * it, and for each process's definitions which one it is: a definition
 * is compared with the others once per process, not once per series
 * (1,000 workers of 13 series were 13,000 searches and compares of
 * names, labels and bounds per scrape).
 */
struct def_class {
	const struct blamer_snap_metric_def *def;	/* the last process's */
	size_t procs;		/* processes that give it (each once) */
	size_t last;		/* the last of them + 1 */
	size_t was;		/* its index before the sort */
	uint32_t uid;		/* of its processes */
	const struct blamer_snap_metric_def *win;	/* its name and uid's winner */
};

struct defs {
	struct def_class *c;
	size_t n;
	uint32_t *slot;		/* class + 1, 0 free */
	size_t mask;
	uint32_t *of;		/* class of each process's definition j: of[at[i] + j] */
	size_t *at;
	uint64_t seed;
};

static void defs_free(struct defs *ds)
{
	free(ds->c);
	free(ds->slot);
	free(ds->of);
	free(ds->at);
}

/* By name, uid, then the rest of the definition: each (name, uid)'s
 * definitions in a run. */
static int class_cmp(const void *a, const void *b)
{
	const struct def_class *x = a, *y = b;
	int c = strcmp(x->def->name, y->def->name);

	if (c)
		return c;
	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return blamer_metric_def_cmp(x->def, y->def);
}

/*
 * Each (name, uid)'s definition: the one most of the uid's processes
 * give, the least of those (blamer_metric_def_cmp()) if several are;
 * its last process's copy (help is shown from it, as before this table).
 * False out of memory.
 */
static bool choose_defs(const struct blamer_snapshot *s, struct defs *ds, uint64_t seed)
{
	size_t i, j, n = 0, cap = 64, at, k, best;
	uint32_t *renum;

	memset(ds, 0, sizeof(*ds));
	ds->seed = seed;
	for (i = 0; i < s->nprocs; i++)
		n += s->procs[i].nmetric_defs;
	while (cap < 2 * n)
		cap *= 2;
	ds->c = malloc((n + 1) * sizeof(*ds->c));
	ds->slot = calloc(cap, sizeof(*ds->slot));
	ds->of = malloc((n + 1) * sizeof(*ds->of));
	ds->at = malloc((s->nprocs + 1) * sizeof(*ds->at));
	if (!ds->c || !ds->slot || !ds->of || !ds->at)
		return false;
	ds->mask = cap - 1;
	for (i = 0, n = 0; i < s->nprocs; i++) {
		uint32_t uid = s->procs[i].uid;

		ds->at[i] = n;
		for (j = 0; j < s->procs[i].nmetric_defs; j++, n++) {
			const struct blamer_snap_metric_def *d = &s->procs[i].metric_defs[j];
			struct def_class *x = NULL;

			for (at = mix(def_hash(seed, d), uid) & ds->mask; ds->slot[at];
			     at = (at + 1) & ds->mask) {
				x = &ds->c[ds->slot[at] - 1];
				if (x->uid == uid && !blamer_metric_def_cmp(x->def, d))
					break;
				x = NULL;
			}
			if (!x) {
				x = &ds->c[ds->n];
				*x = (struct def_class){ .def = d, .uid = uid };
				ds->slot[at] = (uint32_t)++ds->n;
			}
			/* a process counts once per definition (a hostile heap
			 * may hold one twice) */
			if (x->last != i + 1) {
				x->procs++;
				x->last = i + 1;
				x->def = d;
			}
			ds->of[n] = (uint32_t)(x - ds->c);
		}
	}
	/* the classes in class_cmp() order: each (name, uid)'s run */
	for (k = 0; k < ds->n; k++)
		ds->c[k].was = k;
	if (ds->n)
		qsort(ds->c, ds->n, sizeof(*ds->c), class_cmp);
	renum = malloc((ds->n + 1) * sizeof(*renum));
	if (!renum)
		return false;
	for (k = 0; k < ds->n; k = j) {
		best = k;
		for (j = k + 1; j < ds->n && ds->c[j].uid == ds->c[k].uid &&
		     !strcmp(ds->c[j].def->name, ds->c[k].def->name); j++)
			if (ds->c[j].procs > ds->c[best].procs)
				best = j;	/* the first (least) of the most used */
		for (i = k; i < j; i++)
			ds->c[i].win = ds->c[best].def;
	}
	for (k = 0; k < ds->n; k++)
		renum[ds->c[k].was] = (uint32_t)k;
	for (i = 0; i < n; i++)
		ds->of[i] = renum[ds->of[i]];
	free(renum);
	/* the table's slots name classes before the sort: not used again */
	free(ds->slot);
	ds->slot = NULL;
	return true;
}

/* The winner of @m's name (for @p's uid) if @m's definition is it, else
 * NULL (a conflict: another definition of the name won). */
static const struct blamer_snap_metric_def *winner_for(const struct defs *ds, size_t proc,
						       const struct blamer_snap_process *p,
						       const struct blamer_snap_metric *m)
{
	const struct def_class *x;
	size_t j;

	/* rd_metrics_link(): a series' definition is one of its process's */
	if (m->def < p->metric_defs || m->def >= p->metric_defs + p->nmetric_defs)
		return NULL;
	j = (size_t)(m->def - p->metric_defs);
	x = &ds->c[ds->of[ds->at[proc] + j]];
	return x->win == x->def ? x->win : NULL;
}

/* ---- merging ---- */

/* A series of its own for each process: ALL and LIVEALL gauges, and
 * PER_PROCESS metrics. */
static bool per_process(const struct blamer_snap_metric_def *d)
{
	return (d->flags & BLAMER_METRIC_PER_PROCESS) ||
	       (d->kind == BLAMER_METRIC_GAUGE &&
		(d->gauge_mode == BLAMER_GAUGE_ALL || d->gauge_mode == BLAMER_GAUGE_LIVEALL));
}

static bool live_only(const struct blamer_snap_metric_def *d)
{
	switch (d->gauge_mode) {
	case BLAMER_GAUGE_LIVEALL:
	case BLAMER_GAUGE_LIVEMIN:
	case BLAMER_GAUGE_LIVEMAX:
	case BLAMER_GAUGE_LIVESUM:
	case BLAMER_GAUGE_LIVEMOSTRECENT:
		return d->kind == BLAMER_METRIC_GAUGE;
	}
	return false;
}

struct acc {
	struct blamer_exact_sum sum;
	uint64_t *buckets;
	bool over;		/* a bucket, the count or the sum does not fit */
};

struct merge {
	struct blamer_snap_series *v;
	struct acc *acc;
	size_t n, cap;
	uint32_t *slot;		/* series index + 1, 0 free */
	size_t mask;
	uint64_t seed;
};

static uint64_t key_hash(const struct merge *mg, const struct blamer_snap_metric_def *d,
			 uint32_t uid, const struct blamer_snap_metric *m,
			 const struct blamer_snap_process *proc)
{
	/* the name's one definition (the winner) by address, as same_key()
	 * compares it */
	uint64_t h = mix(mg->seed, (uint64_t)(uintptr_t)d);
	uint32_t i;

	h = mix(h, uid);
	for (i = 0; i < d->nlabels; i++)
		h = mix_str(h, m->values[i]);
	h = mix(h, m->depth);
	for (i = 0; i < m->depth && i < BLAMER_SNAP_MAX_DEPTH; i++)
		h = mix(h, m->nodes[i]);
	return mix(h, (uint64_t)(uintptr_t)proc);
}

static bool same_key(const struct blamer_snap_series *x, const struct blamer_snap_metric_def *d,
		     uint32_t uid, const struct blamer_snap_metric *m,
		     const struct blamer_snap_process *proc)
{
	uint32_t i;

	if (x->def != d || x->uid != uid || x->proc != proc || x->first->depth != m->depth ||
	    memcmp(x->first->nodes, m->nodes, m->depth * sizeof(m->nodes[0])))
		return false;
	for (i = 0; i < d->nlabels; i++)
		if (x->first->values[i] != m->values[i] && strcmp(x->first->values[i], m->values[i]))
			return false;
	return true;
}

static bool merge_grow(struct merge *mg)
{
	size_t cap = mg->cap ? mg->cap * 2 : 64, mask = 2 * cap - 1, i, at;
	struct blamer_snap_series *v = realloc(mg->v, cap * sizeof(*v));
	struct acc *acc;
	uint32_t *slot;

	if (!v)
		return false;
	mg->v = v;
	acc = realloc(mg->acc, cap * sizeof(*acc));
	if (!acc)
		return false;
	mg->acc = acc;
	slot = calloc(mask + 1, sizeof(*slot));
	if (!slot)
		return false;
	for (i = 0; i < mg->n; i++) {
		const struct blamer_snap_series *x = &mg->v[i];

		for (at = key_hash(mg, x->def, x->uid, x->first, x->proc) & mask; slot[at];
		     at = (at + 1) & mask)
			;
		slot[at] = (uint32_t)i + 1;
	}
	free(mg->slot);
	mg->slot = slot;
	mg->mask = mask;
	mg->cap = cap;
	return true;
}

/* The series of (@d, @uid, @m's values and path, @proc), made if new. */
static struct blamer_snap_series *series_of(struct merge *mg, struct blamer_snapshot *s,
					    const struct blamer_snap_metric_def *d, uint32_t uid,
					    const struct blamer_snap_metric *m,
					    const struct blamer_snap_process *proc)
{
	struct blamer_snap_series *x;
	size_t at;

	if (mg->n == mg->cap && !merge_grow(mg))
		return NULL;
	for (at = key_hash(mg, d, uid, m, proc) & mg->mask; mg->slot[at]; at = (at + 1) & mg->mask) {
		x = &mg->v[mg->slot[at] - 1];
		if (same_key(x, d, uid, m, proc))
			return x;
	}
	x = &mg->v[mg->n];
	memset(x, 0, sizeof(*x));
	x->def = d;
	x->first = m;
	x->proc = proc;
	x->uid = uid;
	memset(&mg->acc[mg->n].sum, 0, sizeof(mg->acc[mg->n].sum));
	mg->acc[mg->n].buckets = NULL;
	mg->acc[mg->n].over = false;
	if (d->kind == BLAMER_METRIC_HISTOGRAM) {
		x->buckets = rd_alloc(s, d->nbuckets * sizeof(uint64_t));
		if (!x->buckets)
			return NULL;
		memset(x->buckets, 0, d->nbuckets * sizeof(uint64_t));
	}
	mg->slot[at] = (uint32_t)++mg->n;
	return x;
}

/* @m of a process (@live) into its series. */
static void merge_one(struct blamer_snap_series *x, struct acc *a,
		      const struct blamer_snap_metric *m, bool live)
{
	const struct blamer_snap_metric_def *d = x->def;
	bool first = !x->nprocs;
	uint32_t i;

	x->nprocs++;
	x->nlive += live;
	if (d->kind == BLAMER_METRIC_HISTOGRAM) {
		/* (a process's count fits, so a bucket that does not fit
		 * makes the count not fit too; both are checked all the same) */
		for (i = 0; i < d->nbuckets; i++)
			a->over |= __builtin_add_overflow(x->buckets[i], m->buckets[i],
							  &x->buckets[i]);
		a->over |= __builtin_add_overflow(x->count, m->count, &x->count);
	}
	if (d->kind != BLAMER_METRIC_GAUGE) {
		/* a counter, a histogram's sum: exactly */
		for (i = 0; i < m->nexact; i++)
			blamer_exact_sum_add(&a->sum, m->exact[i]);
		return;
	}
	switch (d->gauge_mode) {
	case BLAMER_GAUGE_MIN:
	case BLAMER_GAUGE_LIVEMIN:
		if (first || m->value < x->value)
			x->value = m->value;
		break;
	case BLAMER_GAUGE_MAX:
	case BLAMER_GAUGE_LIVEMAX:
		if (first || m->value > x->value)
			x->value = m->value;
		break;
	case BLAMER_GAUGE_MOSTRECENT:
	case BLAMER_GAUGE_LIVEMOSTRECENT:
		if (first || m->stamp_ns > x->stamp_ns) {
			x->value = m->value;
			x->stamp_ns = m->stamp_ns;
		}
		break;
	case BLAMER_GAUGE_ALL:
	case BLAMER_GAUGE_LIVEALL:
		x->value = m->value;	/* a series of one process */
		break;
	default:	/* SUM, LIVESUM */
		blamer_exact_sum_add(&a->sum, m->value);
		break;
	}
}

static int series_cmp(const void *a, const void *b)
{
	const struct blamer_snap_series *x = a, *y = b;
	uint32_t i;
	int c = strcmp(x->def->name, y->def->name);

	if (c)
		return c;
	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	for (i = 0; i < x->def->nlabels; i++)
		if ((c = strcmp(x->first->values[i], y->first->values[i])))
			return c;
	c = blamer_path_cmp(x->first->nodes, x->first->depth, y->first->nodes, y->first->depth);
	if (c)
		return c;
	if (x->proc == y->proc)
		return 0;
	if (!x->proc || !y->proc)
		return !x->proc ? -1 : 1;
	c = rd_pid_start_cmp(x->proc->pid, x->proc->start_time_ns, y->proc->pid,
			     y->proc->start_time_ns);
	return c ? c : sgn((int64_t)(x->proc->heap_key > y->proc->heap_key) -
			   (int64_t)(x->proc->heap_key < y->proc->heap_key));
}

/* A series' sum, made final: its value and exact partials; a counter's
 * or a histogram's that does not fit is marked (a->over), its values
 * dropped. */
static bool finish(struct blamer_snapshot *s, struct blamer_snap_series *x, struct acc *a)
{
	const struct blamer_snap_metric_def *d = x->def;
	double *e;

	/* finite parts whose exact sum is not (decode_metric.c refuses a
	 * part that is not finite) */
	if (d->kind != BLAMER_METRIC_GAUGE && a->sum.has_special)
		a->over = true;
	if (a->over) {
		x->value = 0;
		x->count = 0;
		x->buckets = NULL;	/* wrapped: shown to nobody */
		return true;
	}
	if (d->kind == BLAMER_METRIC_GAUGE &&
	    !(d->gauge_mode == BLAMER_GAUGE_SUM || d->gauge_mode == BLAMER_GAUGE_LIVESUM))
		return true;	/* a value of one process, chosen */
	x->value = blamer_exact_sum_value(&a->sum);
	x->nexact = a->sum.has_special ? 1 : a->sum.n;
	if (!x->nexact)
		return true;
	e = rd_alloc(s, x->nexact * sizeof(*e));
	if (!e)
		return false;
	if (a->sum.has_special)
		e[0] = a->sum.special;
	else
		memcpy(e, a->sum.p, x->nexact * sizeof(*e));
	x->exact = e;
	return true;
}

/* The series of @mg that do not fit out of it, into s->overflows (in
 * series' order, as what remains); false out of memory. */
static bool split_overflows(struct blamer_snapshot *s, struct merge *mg)
{
	size_t i, k, n = 0;

	for (i = 0; i < mg->n; i++)
		n += mg->acc[i].over;
	if (!n)
		return true;
	s->overflows = malloc(n * sizeof(*s->overflows));
	if (!s->overflows)
		return false;
	for (i = 0, k = 0; i < mg->n; i++) {
		if (mg->acc[i].over)
			s->overflows[s->noverflows++] = mg->v[i];
		else
			mg->v[k++] = mg->v[i];
	}
	mg->n = k;
	qsort(s->overflows, s->noverflows, sizeof(*s->overflows), series_cmp);
	return true;
}

/* s->series from every process's metrics; false out of memory (then
 * none). */
static bool merge_series(struct blamer_snapshot *s)
{
	struct merge mg = { .seed = rd_seed_new() };
	/* hint[j]: the series (index + 1) the process before's j-th metric
	 * went to; its siblings' metrics most often go to the same, found
	 * with one compare instead of a hash of every label */
	uint32_t *hint = NULL;
	size_t nhint = 0;
	struct defs ds;
	size_t i, j;
	bool ok = true;

	s->metric_conflicts = 0;
	if (!choose_defs(s, &ds, mg.seed)) {
		defs_free(&ds);
		return false;
	}
	for (i = 0; ok && i < s->nprocs; i++) {
		struct blamer_snap_process *p = &s->procs[i];
		bool live = p->state == BLAMER_PROC_LIVE;

		if (p->nmetrics > nhint) {
			uint32_t *nh = realloc(hint, p->nmetrics * sizeof(*nh));

			if (!nh) {
				ok = false;
				break;
			}
			memset(nh + nhint, 0, (p->nmetrics - nhint) * sizeof(*nh));
			hint = nh;
			nhint = p->nmetrics;
		}
		for (j = 0; ok && j < p->nmetrics; j++) {
			struct blamer_snap_metric *m = &p->metrics[j];
			const struct blamer_snap_process *proc;
			const struct blamer_snap_metric_def *d;
			struct blamer_snap_series *x;

			if (!m->def)
				continue;
			d = winner_for(&ds, i, p, m);
			m->conflict = !d;
			if (m->conflict) {
				s->metric_conflicts++;
				continue;
			}
			if (!live && live_only(d))
				continue;	/* a LIVE* gauge leaves with its process */
			proc = per_process(d) ? p : NULL;
			x = hint[j] ? &mg.v[hint[j] - 1] : NULL;
			if (!x || !same_key(x, d, p->uid, m, proc))
				x = series_of(&mg, s, d, p->uid, m, proc);
			if (!x) {
				ok = false;
				break;
			}
			hint[j] = (uint32_t)(x - mg.v) + 1;
			merge_one(x, &mg.acc[x - mg.v], m, live);
		}
	}
	for (i = 0; ok && i < mg.n; i++)
		ok = finish(s, &mg.v[i], &mg.acc[i]);
	ok = ok && split_overflows(s, &mg);
	defs_free(&ds);
	free(hint);
	free(mg.slot);
	free(mg.acc);
	if (!ok) {
		free(mg.v);
		return false;
	}
	if (mg.n)
		qsort(mg.v, mg.n, sizeof(*mg.v), series_cmp);
	s->series = mg.v;
	s->nseries = mg.n;
	return true;
}

/* ---- roles ---- */

static int role_cmp(const void *a, const void *b)
{
	return strcmp(((const struct blamer_snap_role *)a)->role,
		      ((const struct blamer_snap_role *)b)->role);
}

/* A process's role as a role's name (snprintf() of it, twice per
 * process, was 2 % of a scrape of 1,000 workers). */
static void role_copy(char dst[sizeof(((struct blamer_snap_role *)0)->role)],
		      const char src[sizeof(((struct blamer_snap_process *)0)->role)])
{
	_Static_assert(sizeof(((struct blamer_snap_role *)0)->role) ==
		       sizeof(((struct blamer_snap_process *)0)->role), "one role size");
	size_t n = strnlen(src, sizeof(((struct blamer_snap_role *)0)->role) - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static bool make_roles(struct blamer_snapshot *s)
{
	struct blamer_snap_role *r = calloc(s->nprocs + 1, sizeof(*r)), key;
	size_t i, j, n = 0;

	if (!r)
		return false;
	for (i = 0; i < s->nprocs; i++) {
		struct blamer_snap_process *p = &s->procs[i];

		p->busy_threads = 0;
		for (j = 0; j < p->nthreads; j++)
			p->busy_threads += p->threads[j].depth > 0;
		role_copy(r[n++].role, p->role);
	}
	/* distinct roles (counts still 0), then their processes */
	if (n)
		qsort(r, n, sizeof(*r), role_cmp);
	for (i = 0, j = 0; i < n; i++)
		if (!j || strcmp(r[j - 1].role, r[i].role))
			r[j++] = r[i];
	n = j;
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];
		struct blamer_snap_role *x;

		role_copy(key.role, p->role);
		x = bsearch(&key, r, n, sizeof(*r), role_cmp);
		if (!x)
			continue;
		if (p->state == BLAMER_PROC_LIVE) {
			x->live++;
			x->threads += (uint32_t)p->nthreads;
			x->busy += p->busy_threads;
		} else {
			x->dead++;
		}
	}
	s->roles = r;
	s->nroles = n;
	return true;
}

void rd_service_view(struct blamer_snapshot *s)
{
	free(s->series);
	free(s->overflows);
	free(s->roles);
	s->series = NULL;
	s->overflows = NULL;
	s->roles = NULL;
	s->nseries = s->noverflows = s->nroles = 0;
	/* Out of memory: what could not be made stays empty. */
	if (!(s->flags & BLAMER_READ_NO_METRICS))
		merge_series(s);
	make_roles(s);
}

double blamer_histogram_quantile(const struct blamer_snap_metric_def *def,
				 const uint64_t *buckets, double q)
{
	double total = 0, cum = 0, prev = 0, rank, start = 0;
	uint32_t b;

	if (!def || def->kind != BLAMER_METRIC_HISTOGRAM || !buckets || def->nbuckets < 2 ||
	    !(q >= 0 && q <= 1))
		return NAN;
	for (b = 0; b < def->nbuckets; b++)
		total += (double)buckets[b];
	if (total == 0)
		return NAN;
	rank = q * total;
	/* the first finite bucket whose cumulative count reaches the rank */
	for (b = 0; b + 1 < def->nbuckets; b++) {
		prev = cum;
		cum += (double)buckets[b];
		if (cum >= rank)
			break;
	}
	if (b + 1 == def->nbuckets)
		return def->upper[b - 1];	/* in +Inf: the highest bound */
	if (b == 0 && def->upper[0] <= 0)
		return def->upper[0];
	if (b > 0)
		start = def->upper[b - 1];
	rank -= prev;
	if (cum == prev)
		return start;	/* q 0, leading buckets empty */
	return start + (def->upper[b] - start) * (rank / (cum - prev));
}
