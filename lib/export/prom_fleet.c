// SPDX-License-Identifier: MIT
/*
 * The aggregate exposition (`blamer export`'s default): one series per
 * metric, label set, path and uid, over every process of the snapshot
 * (live, and dead but not folded yet) plus the fleet's remainder of the
 * folded ones (fleet.c). Its number of series follows the label sets a
 * service has, not the number of workers that came and went; a counter
 * in it is exact (blamer_exact_sum_*(): the same value however its parts
 * moved from live processes to the remainder), so it only ever grows.
 *
 *   blamer_heaps{state}                     heaps of the snapshot (not folded)
 *   blamer_processes{role,state}            processes by role
 *   blamer_threads{role}, blamer_busy_threads{role}
 *                                           threads of live processes, and those
 *                                           inside an activity (saturation)
 *   blamer_folded_heaps_total               heaps folded into the remainder, ever
 *   blamer_fold_errors_total                folds that could not be made durable
 *   blamer_fold_held_heaps                  dead heaps the last fold held back (bounds)
 *   blamer_fold_lost_total{uid}             dead heaps' parts of series the fold
 *                                           threw away: their sum would not fit
 *   blamer_metric_conflicts                 series left out: defined otherwise,
 *                                           or their sum does not fit
 *   blamer_dropped_total{reason,uid}        writes not recorded in full
 *   blamer_attribution_*{path,[unit],uid}   the DAG paths' measurements
 *   NAME...{labels,[path],uid}              the programs' metrics; a series per
 *                                           process (pid, uid) for ALL and LIVEALL
 *                                           gauges and PER_PROCESS metrics
 *   blamer_counter_decreases_total          times a counter series showed lower
 *
 * A long-lived exporter's fleet holds every counter sample of the
 * service's series (attribution, drops, metric counters, a histogram's
 * buckets, count and sum) at the highest it wrote (prom_guard.c, keyed by
 * the sample's text): honest heaps never make one go down (folds are
 * exact), a heap that rewrites its own counters lower, or one released
 * unfolded, would; the guard holds the series and counts the decrease.
 * Series of one process (pid label) are not held: they leave with it.
 *
 * A counter or histogram whose sum does not fit (past the largest
 * double, a count past 2^64 - 1), over the processes (the reader's
 * s->overflows) or with the remainder added, is left out and counted
 * with the conflicts: shown, it would be +Inf, or wrapped (lower); and
 * its remainder alone would be a part shown as the whole. So is, for
 * good, one whose remainder lost a part (fleet.c, fold_metric()): what
 * it holds is no longer the total.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "prom.h"

/* ---- the metrics ---- */

struct agg {
	const struct blamer_snap_metric_def *def;	/* written with */
	uint32_t uid;
	char *const *values;
	uint32_t depth;
	const uint64_t *nodes;
	const struct blamer_snap_process *proc;	/* a series per process */
	const struct blamer_snap_series *live;	/* the snapshot's part, or NULL */
	const struct fl_series *rem;		/* the remainder's, or NULL */
	bool over;		/* the snapshot's part does not fit: left out */
	char fam[96];
};

/* @a is the snapshot's series @x (@over: one whose sum does not fit,
 * left out). */
static void agg_of(struct agg *a, const struct blamer_snap_series *x, bool over)
{
	*a = (struct agg){ .def = x->def, .uid = x->uid, .values = x->first->values,
			   .depth = x->first->depth, .nodes = x->first->nodes, .proc = x->proc,
			   .live = over ? NULL : x, .over = over };
	pm_family_name(x->def, a->fam, sizeof(a->fam));
}

/* @x and @y in series order, but for the start times of their processes */
static int agg_key_cmp(const struct agg *x, const struct agg *y)
{
	uint32_t i;
	int c = strcmp(x->fam, y->fam);

	if (c)
		return c;
	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	/* one family, several metrics (a counter c, a gauge c_total):
	 * their label values are not alike */
	if ((c = strcmp(x->def->name, y->def->name)))
		return c;
	if (x->def->kind != y->def->kind)
		return x->def->kind < y->def->kind ? -1 : 1;
	if (x->def->nlabels != y->def->nlabels)
		return x->def->nlabels < y->def->nlabels ? -1 : 1;
	for (i = 0; i < x->def->nlabels && i < BLAMER_METRIC_LABELS_MAX; i++)
		if ((c = strcmp(x->values[i], y->values[i])))
			return c;
	c = blamer_path_cmp(x->nodes, x->depth, y->nodes, y->depth);
	if (c || x->proc == y->proc)
		return c;
	if (!x->proc || !y->proc)
		return !x->proc ? -1 : 1;
	return (x->proc->pid > y->proc->pid) - (x->proc->pid < y->proc->pid);
}

static int agg_cmp(const void *a, const void *b)
{
	const struct agg *x = a, *y = b;
	int c = agg_key_cmp(x, y);

	if (c || x->proc == y->proc)
		return c;
	return (x->proc->start_time_ns > y->proc->start_time_ns) -
	       (x->proc->start_time_ns < y->proc->start_time_ns);
}

/*
 * A series of each process is labelled with its pid and uid, not its
 * start time: two processes of one pid (a dead heap and the live process
 * that reused its pid, or a heap that claims one) would be two samples
 * of one name and labels, of which Prometheus keeps one, not always the
 * live one. They sort together (agg_cmp()); of v[@j] and those after it
 * alike but for the start, the one written is the live one, else the
 * last started. Its index; *@end is past the last of them.
 */
static size_t agg_pick(const struct agg *v, size_t j, size_t n, size_t *end)
{
	size_t k, best = j;

	for (k = j + 1; v[j].proc && k < n && !agg_key_cmp(&v[j], &v[k]); k++) {
		bool live = v[k].proc->state == BLAMER_PROC_LIVE;

		if (live || v[best].proc->state != BLAMER_PROC_LIVE)
			best = k;	/* later started (ties: sorted by start) */
	}
	*end = k;
	return best;
}

/* The snapshot's definition of @name for @uid (the reader's choice), or
 * NULL. */
static const struct blamer_snap_metric_def *live_def(const struct blamer_snapshot *s,
						     const char *name, uint32_t uid)
{
	size_t lo = 0, hi = s->nseries;

	/* series are ordered by name, then uid */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct blamer_snap_series *x = &s->series[mid];
		int c = strcmp(x->def->name, name);

		if (!c)
			c = (x->uid > uid) - (x->uid < uid);
		if (!c)
			return x->def;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Adds @src's exact partials to @e. */
static void exact_add(struct blamer_exact_sum *e, const double *src, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		blamer_exact_sum_add(e, src[i]);
}

/* The value of @x: its parts combined as the reader merges processes.
 * False if a counter's or a histogram's sum does not fit (finite parts
 * whose sum is not): not a value to show. */
static bool agg_value(const struct agg *x, double *out)
{
	const struct blamer_snap_metric_def *d = x->def;
	struct blamer_exact_sum e;
	double v;

	memset(&e, 0, sizeof(e));
	if (d->kind != BLAMER_METRIC_GAUGE || d->gauge_mode == BLAMER_GAUGE_SUM ||
	    d->gauge_mode == BLAMER_GAUGE_LIVESUM) {
		if (x->live) {
			if (d->kind == BLAMER_METRIC_GAUGE && !x->live->nexact)
				blamer_exact_sum_add(&e, x->live->value);
			exact_add(&e, x->live->exact, x->live->nexact);
		}
		if (x->rem)
			exact_add(&e, x->rem->exact, x->rem->nexact);
		*out = blamer_exact_sum_value(&e);
		return d->kind == BLAMER_METRIC_GAUGE || !e.has_special;
	}
	if (!x->rem || x->rem->value != x->rem->value) {
		*out = x->live ? x->live->value : x->rem ? x->rem->value : 0;
		return true;
	}
	if (!x->live) {
		*out = x->rem->value;
		return true;
	}
	v = x->live->value;
	switch (d->gauge_mode) {
	case BLAMER_GAUGE_MIN:
		v = x->rem->value < v ? x->rem->value : v;
		break;
	case BLAMER_GAUGE_MAX:
		v = x->rem->value > v ? x->rem->value : v;
		break;
	case BLAMER_GAUGE_MOSTRECENT:
		v = x->rem->stamp > x->live->stamp_ns ? x->rem->value : v;
		break;
	}
	*out = v;
	return true;
}

/* @x's buckets, the snapshot's and the remainder's, into @sum; false if
 * one, or their count, does not fit 64 bits (it would wrap: lower). */
static bool agg_buckets(const struct agg *x, uint64_t *sum)
{
	uint64_t count = 0;
	uint32_t k;
	bool over = false;

	for (k = 0; k < x->def->nbuckets; k++) {
		over |= __builtin_add_overflow(x->live ? x->live->buckets[k] : 0,
					       x->rem ? x->rem->buckets[k] : 0, &sum[k]);
		over |= __builtin_add_overflow(count, sum[k], &count);
	}
	return !over;
}

/* The metrics: the snapshot's series and the remainder's, joined. */
static void write_metrics(struct blamer_fleet *f, const struct blamer_snapshot *s,
			  struct exp *e, struct prom_out *o, size_t *conflicts)
{
	size_t nrem = f ? f->nseries : 0, i, j, next, n = 0, nlive, nruns, r;
	struct pm_names names = { 0 };
	struct pm_run *runs;
	struct agg *v = malloc((s->nseries + s->noverflows + nrem + 1) * sizeof(*v));
	uint64_t *sum = NULL;
	char extra[64];

	if (!v) {
		o->oom = true;
		return;
	}
	for (i = 0; i < s->nseries; i++)
		agg_of(&v[n++], &s->series[i], false);
	/* those that do not fit, so that their remainder joins them, left
	 * out with them, never shown alone */
	for (i = 0; i < s->noverflows; i++)
		agg_of(&v[n++], &s->overflows[i], true);
	qsort(v, n, sizeof(*v), agg_cmp);
	/* the remainder's: into the snapshot's series (sorted: the first
	 * nlive), or after them */
	for (i = 0, nlive = n; i < nrem; i++) {
		const struct fl_series *r = &f->series[i];
		const struct blamer_snap_metric_def *d = &f->defs[r->def];
		const struct blamer_snap_metric_def *ld = live_def(s, d->name, r->uid);
		struct agg key = { .def = d, .uid = r->uid, .values = r->values, .depth = r->depth,
				   .nodes = r->nodes, .rem = r }, *hit;

		if (ld && blamer_metric_def_cmp(ld, d)) {
			(*conflicts)++;	/* the processes now define it otherwise */
			continue;
		}
		pm_family_name(d, key.fam, sizeof(key.fam));
		hit = nlive ? bsearch(&key, v, nlive, sizeof(*v), agg_cmp) : NULL;
		if (hit) {
			hit->rem = r;
			continue;
		}
		if (ld)
			key.def = ld;	/* the same but for help: the live one's */
		v[n++] = key;
	}
	qsort(v, n, sizeof(*v), agg_cmp);
	/* each family's first series is its least uid's */
	runs = malloc((n + 1) * sizeof(*runs));
	for (i = 0, nruns = 0; runs && i < n; i = j, nruns++) {
		for (j = i; j < n && !strcmp(v[j].fam, v[i].fam); j++)
			;
		runs[nruns] = (struct pm_run){ .def = v[i].def, .uid = v[i].uid };
	}
	if (!runs || !pm_claim_runs(&names, runs, nruns)) {
		o->oom = true;
		n = 0;
	}
	for (i = 0, r = 0; i < n; i = j, r++) {
		bool ok = runs[r].ok;

		if (ok)
			pm_family(o, v[i].def);
		else
			(*conflicts)++;
		for (j = i; j < n && !strcmp(v[j].fam, v[i].fam); j = next) {
			const struct agg *x = &v[agg_pick(v, j, n, &next)];
			struct pm_series ps = { .def = x->def, .values = x->values, .depth = x->depth,
						.nodes = x->nodes, .uid = x->uid, .extra = extra,
						.guard = f && !x->proc ? &f->guard : NULL };

			if (!ok)
				continue;
			*conflicts += next - j - 1;	/* of one pid, but x */
			/* A family is claimed by its least uid's metric (a
			 * system service's before a login user's, and one
			 * user's processes cannot take it from another by
			 * number). Other uids' series of that metric join it
			 * whatever their labels or buckets (each uid's own
			 * definition); a series of another kind, or of another
			 * name (a counter foo's foo_total, a gauge foo_total),
			 * would be samples of the wrong TYPE: left out. */
			if (x->def->kind != v[i].def->kind || strcmp(x->def->name, v[i].def->name)) {
				(*conflicts)++;
				continue;
			}
			/* a sum that does not fit, over the processes or with
			 * the remainder, or a remainder that lost a part that
			 * did not fit: left out, not +Inf, wrapped or a part
			 * shown as the whole (lower) */
			if (x->over || (x->rem && x->rem->lost) || !agg_value(x, &ps.value)) {
				(*conflicts)++;
				continue;
			}
			if (x->def->kind == BLAMER_METRIC_HISTOGRAM) {
				free(sum);
				sum = calloc(x->def->nbuckets, sizeof(*sum));
				if (!sum) {
					o->oom = true;
					break;
				}
				if (!agg_buckets(x, sum)) {
					(*conflicts)++;
					continue;
				}
				ps.buckets = sum;
			}
			if (x->proc)
				snprintf(extra, sizeof(extra), "pid=\"%" PRId32 "\",uid=\"%" PRIu32 "\"",
					 x->proc->pid, x->uid);
			else
				snprintf(extra, sizeof(extra), "uid=\"%" PRIu32 "\"", x->uid);
			pm_series(o, &ps, &e->nm);
		}
	}
	free(sum);
	pm_names_free(&names);
	free(runs);
	free(v);
}

/* ---- the attribution paths and the drops ---- */

/* @shown, the value of the sample whose name and labels were written
 * from @start on, held at its highest by the fleet's guard */
static uint64_t hold(struct blamer_fleet *f, struct prom_out *o, size_t start, uint64_t shown)
{
	if (!f || o->f || o->oom)
		return shown;
	return prom_guard_clamp(&f->guard, o->p + start, o->len - start, shown);
}

/* One (path, unit) value of a process or of the remainder: the path's
 * nodes are theirs (not copied: a depth-8 path would be 64 bytes more
 * per value, and a heap may hold a million values). */
struct attr {
	const uint64_t *nodes;
	uint64_t value;
	uint32_t fam, uid, unit, depth;
	bool ns;
};

static int attr_cmp(const void *a, const void *b)
{
	const struct attr *x = a, *y = b;
	int c;

	if (x->fam != y->fam)
		return x->fam < y->fam ? -1 : 1;
	c = blamer_path_cmp(x->nodes, x->depth, y->nodes, y->depth);
	if (c)
		return c;
	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	return (x->uid > y->uid) - (x->uid < y->uid);
}

static void write_attribution(struct blamer_fleet *f, struct exp *e, struct prom_out *o)
{
	size_t n = f ? f->npaths : 0, i, j, k;
	struct attr *v;

	for (i = 0; i < e->nprocs; i++)
		for (j = 0; j < e->procs[i]->npaths; j++)
			n += e->procs[i]->paths[j].nvalues;
	v = malloc((n + 1) * sizeof(*v));
	if (!v) {
		o->oom = true;
		return;
	}
	n = 0;
	for (i = 0; i < e->nprocs; i++) {
		const struct blamer_snap_process *p = e->procs[i];

		for (j = 0; j < p->npaths; j++) {
			const struct blamer_snap_path *sp = &p->paths[j];

			for (k = 0; k < sp->nvalues && k < BLAMER_SNAP_MAX_UNITS; k++) {
				struct attr *a = &v[n++];

				a->uid = p->uid;
				a->unit = sp->units[k];
				a->depth = sp->depth;
				a->nodes = sp->nodes;
				a->value = sp->values[k];
				a->fam = (uint32_t)prom_unit_family(e, a->uid, a->unit, &a->ns);
			}
		}
	}
	for (i = 0; f && i < f->npaths; i++) {
		struct attr *a = &v[n++];

		a->uid = f->paths[i].uid;
		a->unit = f->paths[i].unit;
		a->depth = f->paths[i].depth;
		a->nodes = f->paths[i].nodes;
		a->value = f->paths[i].value;
		a->fam = (uint32_t)prom_unit_family(e, a->uid, a->unit, &a->ns);
	}
	qsort(v, n, sizeof(*v), attr_cmp);
	for (i = 0; i < n; i = j) {
		struct blamer_snap_path p = { .depth = v[i].depth };
		uint64_t total = 0;
		size_t start = o->len;

		/* equal keys summed (modulo 2^64, as the writers add) */
		for (j = i; j < n && !attr_cmp(&v[i], &v[j]); j++)
			total += v[j].value;
		if (!i || v[i - 1].fam != v[i].fam)
			prom_attr_family(e, v[i].fam, v[i].uid, v[i].unit, o);
		memcpy(p.nodes, v[i].nodes, v[i].depth * sizeof(p.nodes[0]));
		prom_puts(o, prom_fam_name(e, v[i].fam, v[i].uid, v[i].unit));
		prom_putc(o, '{');
		prom_path_label(o, &e->nm, v[i].uid, &p);
		if (prom_fam_has_unit(v[i].fam)) {
			prom_put(o, ",unit=\"", 7);
			prom_u64(o, v[i].unit);
			prom_putc(o, '"');
		}
		prom_put(o, ",uid=\"", 6);
		prom_u64(o, v[i].uid);
		prom_put(o, "\"} ", 3);
		total = hold(f, o, start, total);
		if (v[i].ns)
			prom_ns(o, total);
		else
			prom_u64(o, total);
		prom_putc(o, '\n');
	}
	free(v);
}

struct drop {
	uint32_t reason, uid;
	uint64_t value;
};

static int drop_cmp(const void *a, const void *b)
{
	const struct drop *x = a, *y = b;

	if (x->reason != y->reason)
		return x->reason < y->reason ? -1 : 1;
	return (x->uid > y->uid) - (x->uid < y->uid);
}

static int lost_cmp(const void *a, const void *b)
{
	const struct fl_series *const *x = a, *const *y = b;

	return ((*x)->uid > (*y)->uid) - ((*x)->uid < (*y)->uid);
}

/* The remainder's lost parts by uid (fleet.c, fold_metric()): in the
 * state, so they only grow, across restarts too. */
static void write_lost(struct blamer_fleet *f, struct prom_out *o)
{
	size_t n = 0, i, j;
	const struct fl_series **v = malloc(((f ? f->nseries : 0) + 1) * sizeof(*v));

	if (!v) {
		o->oom = true;
		return;
	}
	for (i = 0; f && i < f->nseries; i++)
		if (f->series[i].lost)
			v[n++] = &f->series[i];
	qsort(v, n, sizeof(*v), lost_cmp);
	prom_family(o, "blamer_fold_lost_total", "counter",
		    "Parts of dead heaps' counter and histogram series the fold threw away, by uid: their sum with the rest would not fit (past the largest double, a count past 2^64 - 1); each such series is left out for good (blamer_metric_conflicts).");
	for (i = 0; i < n; i = j) {
		uint64_t total = 0;
		size_t start = o->len;

		for (j = i; j < n && v[j]->uid == v[i]->uid; j++)
			total += v[j]->lost;
		prom_put(o, "blamer_fold_lost_total{uid=\"", 28);
		prom_u64(o, v[i]->uid);
		prom_put(o, "\"} ", 3);
		prom_u64(o, hold(f, o, start, total));
		prom_putc(o, '\n');
	}
	free(v);
}

static void write_drops(struct blamer_fleet *f, struct exp *e, struct prom_out *o)
{
	size_t n = (f ? f->ndrops : 0) + e->nprocs * BLAMER_DROP_MAX, i, j, k = 0;
	struct drop *v = malloc((n + 1) * sizeof(*v));
	char other[16];

	if (!v) {
		o->oom = true;
		return;
	}
	for (i = 0; i < e->nprocs; i++)
		for (j = 0; j < BLAMER_DROP_MAX; j++)
			if (e->procs[i]->drops[j])
				v[k++] = (struct drop){ (uint32_t)j, e->procs[i]->uid,
							e->procs[i]->drops[j] };
	for (i = 0; f && i < f->ndrops; i++)
		v[k++] = (struct drop){ f->drops[i].reason, f->drops[i].uid, f->drops[i].value };
	qsort(v, k, sizeof(*v), drop_cmp);
	prom_family(o, "blamer_dropped_total", "counter",
		    "Writes processes could not record in full, by reason and uid (a series once its first is counted).");
	for (i = 0; i < k; i = j) {
		const char *name = blamer_drop_reason_name(v[i].reason);
		uint64_t total = 0;
		size_t start = o->len;

		for (j = i; j < k && !drop_cmp(&v[i], &v[j]); j++)
			total = fl_sat_add(total, v[j].value);
		if (!name) {
			snprintf(other, sizeof(other), "%u", v[i].reason);	/* a newer writer's */
			name = other;
		}
		prom_put(o, "blamer_dropped_total{reason=\"", 29);
		prom_puts(o, name);
		prom_put(o, "\",uid=\"", 7);
		prom_u64(o, v[i].uid);
		prom_put(o, "\"} ", 3);
		prom_u64(o, hold(f, o, start, total));
		prom_putc(o, '\n');
	}
	free(v);
}

/* ---- the processes ---- */

/* A role of one uid: the processes of that uid that took it. */
struct uid_role {
	const char *role;
	uint32_t uid;
	uint32_t live, dead, threads, busy;
};

static int uid_role_cmp(const void *a, const void *b)
{
	const struct uid_role *x = a, *y = b;
	int c = strcmp(x->role, y->role);

	return c ? c : (x->uid > y->uid) - (x->uid < y->uid);
}

/*
 * Processes and threads by role and uid: a role is any name a process
 * gives itself, so summed over uids (as the snapshot's roles are)
 * another user's processes calling themselves "web" added to this user's
 * pool and its saturation (3 processes of 50 busy threads each made
 * another uid's 1 process and 2 busy threads 4 and 152).
 */
static void write_roles(const struct blamer_snapshot *s, struct prom_out *o)
{
	struct prom_label l[3] = { { "role", NULL }, { "state", NULL }, { "uid", NULL } };
	struct uid_role *v = calloc(s->nprocs + 1, sizeof(*v));
	size_t i, j, n = 0;
	char uid[16];

	if (!v) {
		o->oom = true;
		return;
	}
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];
		bool live = p->state == BLAMER_PROC_LIVE;

		v[n++] = (struct uid_role){ .role = p->role, .uid = p->uid, .live = live,
					    .dead = !live,
					    .threads = live ? (uint32_t)p->nthreads : 0,
					    .busy = live ? p->busy_threads : 0 };
	}
	qsort(v, n, sizeof(*v), uid_role_cmp);
	/* one entry per (role, uid), summed */
	for (i = 0, j = 0; i < n; i++) {
		if (j && !uid_role_cmp(&v[j - 1], &v[i])) {
			v[j - 1].live += v[i].live;
			v[j - 1].dead += v[i].dead;
			v[j - 1].threads += v[i].threads;
			v[j - 1].busy += v[i].busy;
		} else {
			v[j++] = v[i];
		}
	}
	n = j;
	l[2].value = uid;
	prom_family(o, "blamer_processes", "gauge",
		    "Processes by role (blamer_set_role(); \"\" none), state and uid, not folded.");
	for (i = 0; i < n; i++) {
		snprintf(uid, sizeof(uid), "%" PRIu32, v[i].uid);
		l[0].value = v[i].role;
		l[1].value = "live";
		prom_sample_u64(o, "blamer_processes", l, 3, v[i].live);
		l[1].value = "dead";
		prom_sample_u64(o, "blamer_processes", l, 3, v[i].dead);
	}
	/* role and uid: the state's place taken by the uid */
	l[1] = l[2];
	prom_family(o, "blamer_threads", "gauge", "Threads of live processes, by role and uid.");
	for (i = 0; i < n; i++) {
		snprintf(uid, sizeof(uid), "%" PRIu32, v[i].uid);
		l[0].value = v[i].role;
		prom_sample_u64(o, "blamer_threads", l, 2, v[i].threads);
	}
	prom_family(o, "blamer_busy_threads", "gauge",
		    "Threads of live processes inside an activity (busy), by role and uid: saturation.");
	for (i = 0; i < n; i++) {
		snprintf(uid, sizeof(uid), "%" PRIu32, v[i].uid);
		l[0].value = v[i].role;
		prom_sample_u64(o, "blamer_busy_threads", l, 2, v[i].busy);
	}
	free(v);
}

/* By uid and unit, then the least (name, base) first. */
static int uid_unit_cmp(const void *a, const void *b)
{
	const struct blamer_snap_uid_unit_def *x = a, *y = b;
	int c;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->def.unit != y->def.unit)
		return x->def.unit < y->def.unit ? -1 : 1;
	c = strcmp(x->def.name, y->def.name);
	return c ? c : (x->def.base > y->def.base) - (x->def.base < y->def.base);
}

/*
 * @s's names per uid: its own (reader-made), or, for a snapshot made by
 * hand without them, its nodes and unit_defs for each uid of its
 * processes and of the remainder's names. Into *@nodes and *@units
 * (malloc()ed, unsorted; the remainder's room left at the front); false
 * out of memory.
 */
static bool snap_names(const struct blamer_fleet *f, const struct blamer_snapshot *s,
		       struct blamer_snap_uid_node **nodes, size_t *nn,
		       struct blamer_snap_uid_unit_def **units, size_t *nu)
{
	uint32_t *uids = NULL;
	size_t nuids = 0, i, k, fn = f ? f->nnodes : 0, fu = f ? f->nunits : 0;

	if (s->flags & BLAMER_SNAP_UID_NAMES) {
		*nodes = malloc((fn + s->nuid_nodes + 1) * sizeof(**nodes));
		*units = malloc((fu + s->nuid_unit_defs + 1) * sizeof(**units));
		if (!*nodes || !*units)
			return false;
		if (s->nuid_nodes)
			memcpy(*nodes + fn, s->uid_nodes, s->nuid_nodes * sizeof(**nodes));
		if (s->nuid_unit_defs)
			memcpy(*units + fu, s->uid_unit_defs,
			       s->nuid_unit_defs * sizeof(**units));
		*nn = fn + s->nuid_nodes;
		*nu = fu + s->nuid_unit_defs;
		return true;
	}
	uids = malloc((s->nprocs + fn + fu + 1) * sizeof(*uids));
	if (!uids)
		return false;
	for (i = 0; i < s->nprocs; i++)
		uids[nuids++] = s->procs[i].uid;
	for (i = 0; i < fn; i++)
		uids[nuids++] = f->nodes[i].uid;
	for (i = 0; i < fu; i++)
		uids[nuids++] = f->units[i].uid;
	qsort(uids, nuids, sizeof(*uids), fl_u32_cmp);
	for (i = 0, k = 0; i < nuids; i++)
		if (!k || uids[k - 1] != uids[i])
			uids[k++] = uids[i];
	nuids = k;
	*nodes = malloc((fn + nuids * s->nnodes + 1) * sizeof(**nodes));
	*units = malloc((fu + nuids * s->nunit_defs + 1) * sizeof(**units));
	if (!*nodes || !*units) {
		free(uids);
		return false;
	}
	*nn = fn;
	*nu = fu;
	for (k = 0; k < nuids; k++) {
		for (i = 0; i < s->nnodes; i++)
			(*nodes)[(*nn)++] = (struct blamer_snap_uid_node){ uids[k], s->nodes[i] };
		for (i = 0; i < s->nunit_defs; i++)
			(*units)[(*nu)++] = (struct blamer_snap_uid_unit_def){ uids[k],
									       s->unit_defs[i] };
	}
	free(uids);
	return true;
}

/* The exposition into @o (memory, or a FILE as it is made). */
static int fleet_write(struct blamer_fleet *f, const struct blamer_snapshot *s, struct prom_out *o)
{
	struct blamer_snapshot view = *s;
	struct blamer_snap_uid_node *nodes = NULL;
	struct blamer_snap_uid_unit_def *units = NULL;
	size_t conflicts = s->metric_conflicts + (f ? f->conflicts : 0);
	size_t nn = 0, nu = 0, i, k;
	struct exp e;
	int ret = -ENOMEM;

	/* Each uid's names: the remainder's, so its series keep their labels
	 * when no process left names them (a node: the remainder's name
	 * wins; a unit: the least, as the snapshot's own), then the
	 * snapshot's. Another uid's names never serve a uid. */
	if (!snap_names(f, s, &nodes, &nn, &units, &nu))
		goto out_view;
	if (f && f->nnodes)
		memcpy(nodes, f->nodes, f->nnodes * sizeof(*nodes));
	if (f && f->nunits)
		memcpy(units, f->units, f->nunits * sizeof(*units));
	/* stable for the nodes: the remainder's (first) wins an equal key */
	for (i = 0; i < nn; i++)
		nodes[i].node.type = (uint32_t)i;	/* (type is not shown) */
	qsort(nodes, nn, sizeof(*nodes), fl_uid_node_cmp);
	for (i = 0, k = 0; i < nn; i++) {
		if (k && !fl_uid_node_cmp(&nodes[k - 1], &nodes[i])) {
			if (nodes[i].node.type < nodes[k - 1].node.type)
				nodes[k - 1] = nodes[i];
			continue;
		}
		nodes[k++] = nodes[i];
	}
	nn = k;
	qsort(units, nu, sizeof(*units), uid_unit_cmp);
	for (i = 0, k = 0; i < nu; i++)
		if (!k || units[k - 1].uid != units[i].uid ||
		    units[k - 1].def.unit != units[i].def.unit)
			units[k++] = units[i];
	nu = k;
	view.uid_nodes = nodes;
	view.nuid_nodes = nn;
	view.uid_unit_defs = units;
	view.nuid_unit_defs = nu;
	view.flags |= BLAMER_SNAP_UID_NAMES;
	if (!prom_exp_init(&e, &view))
		goto out;
	/* the guard sees the text in memory only: a FILE's export is a
	 * one-off's, with nothing to hold */
	if (f && !o->f)
		prom_guard_begin(&f->guard, f->seed);
	prom_write_heaps(&e, o);
	write_roles(s, o);
	prom_family(o, "blamer_folded_heaps_total", "counter",
		    "Dead heaps folded into the exporter's remainder (their values stay in the series).");
	prom_sample_u64(o, "blamer_folded_heaps_total", NULL, 0, f ? f->folded : 0);
	prom_family(o, "blamer_fold_errors_total", "counter",
		    "Folds that could not be made durable (the heaps stay, counted, until the next).");
	prom_sample_u64(o, "blamer_fold_errors_total", NULL, 0, f ? f->fold_errors : 0);
	prom_family(o, "blamer_fold_held_heaps", "gauge",
		    "Dead heaps the last fold held back: their uid's part of the remainder would pass $BLAMER_FOLD_MAX_SERIES or $BLAMER_FOLD_MAX_BYTES (counted while they are there).");
	prom_sample_u64(o, "blamer_fold_held_heaps", NULL, 0, f ? f->held : 0);
	write_lost(f, o);
	write_drops(f, &e, o);
	write_attribution(f, &e, o);
	write_metrics(f, s, &e, o, &conflicts);
	prom_family(o, "blamer_metric_conflicts", "gauge",
		    "Series left out: their heap defines their metric otherwise, their family's names are taken, or their sum does not fit (a counter past the largest double, a histogram's count past 2^64 - 1).");
	prom_sample_u64(o, "blamer_metric_conflicts", NULL, 0, conflicts);
	/* what the counters were becomes the guard's memory (those not
	 * written now kept too: a series that comes back keeps its floor) */
	if (f && !o->f)
		prom_guard_end(&f->guard);
	/* as the per-process exposition: only once there is one (its name,
	 * the per-process family's, is one promtool's lint frowns on) */
	if (f && f->guard.decreases) {
		prom_family(o, PROM_DECREASES_FAMILY, "counter",
			    "Times the service's counter series showed lower than the time before (a heap turned one back, or left unfolded): each held at its highest, never a reset.");
		prom_sample_u64(o, PROM_DECREASES_FAMILY, NULL, 0, f->guard.decreases);
	}
	ret = o->oom ? -ENOMEM : 0;
out:
	prom_exp_free(&e);
out_view:
	free(nodes);
	free(units);
	return ret;
}

int blamer_fleet_prometheus_text(struct blamer_fleet *f, const struct blamer_snapshot *s,
				 char **buf, size_t *len, size_t *cap)
{
	struct prom_out o = { .p = *buf, .cap = *cap };
	int ret = fleet_write(f, s, &o);

	*buf = o.p;
	*cap = o.cap;
	*len = ret ? 0 : o.len;
	return ret;
}

int blamer_fleet_write_prometheus(struct blamer_fleet *f, const struct blamer_snapshot *s,
				  FILE *out)
{
	struct prom_out o = { .f = out };
	int ret = fleet_write(f, s, &o);

	if (!ret && o.len && fwrite(o.p, 1, o.len, out) != o.len)
		ret = -EIO;
	if (ferror(out))
		ret = -EIO;
	free(o.p);
	return ret;
}
