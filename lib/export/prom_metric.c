// SPDX-License-Identifier: MIT
/*
 * Metric families in the exposition (what blamer_metric_define() made):
 * their names, one family per name, each sample name once in a scrape,
 * and their series written as Prometheus reads them: a counter as
 * NAME_total, a gauge as NAME, a histogram as NAME_bucket (cumulative,
 * le from the definition's bounds, +Inf last), NAME_count and NAME_sum.
 * Values are written exactly (the shortest decimal that reads back as
 * the same double). Used by the aggregate exposition (prom_fleet.c) and
 * by the per-process one (prom.c, prom_cache.c: pm_write_processes()).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "numtext.h"
#include "prom.h"

void pm_double(struct prom_out *o, double v)
{
	char b[32];

	if (v != v) {
		prom_puts(o, "NaN");
		return;
	}
	if (v == __builtin_inf() || v == -__builtin_inf()) {
		prom_puts(o, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	/* the text format's point is '.' whatever the program's LC_NUMERIC */
	ex_double_text(b, sizeof(b), v);
	prom_puts(o, b);
}

void pm_family_name(const struct blamer_snap_metric_def *d, char *buf, size_t len)
{
	size_t n = strlen(d->name);

	/* prometheus_client's rule: a counter's family ends in _total */
	if (d->kind == BLAMER_METRIC_COUNTER && !(n >= 6 && !strcmp(d->name + n - 6, "_total")))
		snprintf(buf, len, "%s_total", d->name);
	else
		snprintf(buf, len, "%s", d->name);
}

/* ---- one sample name, once ---- */

/* Keyed: the names are the heaps' (an unkeyed FNV-1a let a heap choose
 * names that share a slot, and each claim walk past all of them). */
static uint64_t hash_name(const struct pm_names *n, const char *s)
{
	return ex_mix_str(n->seed, s);
}

/* Whether @name is taken, and (if not, @take) takes it. */
static bool taken(struct pm_names *n, const char *name, bool take)
{
	size_t at, i;

	if (2 * (n->n + 1) > n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 256;
		char **v = calloc(cap, sizeof(*v));

		if (!v)
			return true;	/* out of memory: write nothing more */
		if (!n->cap)
			n->seed = ex_seed(n);
		for (i = 0; i < n->cap; i++) {
			if (!n->v[i])
				continue;
			for (at = hash_name(n, n->v[i]) & (cap - 1); v[at]; at = (at + 1) & (cap - 1))
				;
			v[at] = n->v[i];
		}
		free(n->v);
		n->v = v;
		n->cap = cap;
	}
	for (at = hash_name(n, name) & (n->cap - 1); n->v[at]; at = (at + 1) & (n->cap - 1))
		if (!strcmp(n->v[at], name))
			return true;
	if (take) {
		n->v[at] = strdup(name);
		if (!n->v[at])
			return true;
		n->n++;
	}
	return false;
}

void pm_names_free(struct pm_names *n)
{
	size_t i;

	for (i = 0; i < n->cap; i++)
		free(n->v[i]);
	free(n->v);
	memset(n, 0, sizeof(*n));
}

bool pm_claim(struct pm_names *n, const struct blamer_snap_metric_def *d)
{
	static const char *const hist[] = { "", "_bucket", "_count", "_sum" };
	char fam[96], name[112];
	size_t i, k = d->kind == BLAMER_METRIC_HISTOGRAM ? 4 : 1;

	pm_family_name(d, fam, sizeof(fam));
	for (i = 0; i < k; i++) {
		snprintf(name, sizeof(name), "%s%s", fam, hist[i]);
		if (taken(n, name, false))
			return false;
	}
	/* a counter's family is also read as its name without _total */
	if (d->kind == BLAMER_METRIC_COUNTER && taken(n, d->name, false))
		return false;
	for (i = 0; i < k; i++) {
		snprintf(name, sizeof(name), "%s%s", fam, hist[i]);
		taken(n, name, true);
	}
	if (d->kind == BLAMER_METRIC_COUNTER)
		taken(n, d->name, true);
	return true;
}

static int run_order(const void *a, const void *b)
{
	const struct pm_run *x = *(const struct pm_run *const *)a;
	const struct pm_run *y = *(const struct pm_run *const *)b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return (x > y) - (x < y);
}

bool pm_claim_runs(struct pm_names *n, struct pm_run *runs, size_t nruns)
{
	struct pm_run **by = malloc((nruns + 1) * sizeof(*by));
	size_t i;

	for (i = 0; i < nruns; i++)
		runs[i].ok = false;
	if (!by)
		return false;
	for (i = 0; i < nruns; i++)
		by[i] = &runs[i];
	if (nruns)
		qsort(by, nruns, sizeof(*by), run_order);
	for (i = 0; i < nruns; i++)
		by[i]->ok = pm_claim(n, by[i]->def);
	free(by);
	return true;
}

/* ---- families and series ---- */

void pm_family(struct prom_out *o, const struct blamer_snap_metric_def *d)
{
	static const char *const type[] = { "untyped", "counter", "gauge", "histogram" };
	char fam[96];

	pm_family_name(d, fam, sizeof(fam));
	prom_family(o, fam, type[d->kind <= 3 ? d->kind : 0], d->help ? d->help : "");
}

/* "name{labels,path,extra" (no brace closed), for one sample. */
static void head(struct prom_out *o, const char *name, const struct pm_series *x,
		 struct prom_names *nm)
{
	uint32_t i;
	bool any = false;

	prom_puts(o, name);
	prom_putc(o, '{');
	for (i = 0; i < x->def->nlabels && i < BLAMER_METRIC_LABELS_MAX; i++) {
		if (any)
			prom_putc(o, ',');
		prom_puts(o, x->def->labels[i]);	/* checked by the reader */
		prom_put(o, "=\"", 2);
		prom_escape(o, x->values[i], false);
		prom_putc(o, '"');
		any = true;
	}
	if (x->depth) {
		struct blamer_snap_path p = { .depth = x->depth };

		memcpy(p.nodes, x->nodes, x->depth * sizeof(p.nodes[0]));
		if (any)
			prom_putc(o, ',');
		prom_path_label(o, nm, x->uid, &p);
		any = true;
	}
	if (x->extra && *x->extra) {
		if (any)
			prom_putc(o, ',');
		prom_puts(o, x->extra);
	}
}

uint64_t pm_order(double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	/* negative: all bits flipped (more negative, less); else the sign set */
	return u >> 63 ? ~u : u | (1ull << 63);
}

double pm_unorder(uint64_t u)
{
	double v;

	u = u >> 63 ? u & ~(1ull << 63) : ~u;
	memcpy(&v, &u, sizeof(v));
	return v;
}

/* The text of the sample just begun at @start (name and labels) held by
 * @g: @shown, or more if it was more before. */
static uint64_t held(struct prom_out *o, struct prom_guard_proc *g, size_t start, uint64_t shown)
{
	/* a guard writes into memory, never to a FILE: the text is there */
	if (!g || o->f || o->oom)
		return shown;
	return prom_guard_clamp(g, o->p + start, o->len - start, shown);
}

static double held_double(struct prom_out *o, struct prom_guard_proc *g, size_t start,
			  double shown)
{
	if (!g || shown != shown)
		return shown;	/* NaN: no order (the reader never merges one) */
	return pm_unorder(held(o, g, start, pm_order(shown)));
}

void pm_series(struct prom_out *o, const struct pm_series *x, struct prom_names *nm)
{
	const struct blamer_snap_metric_def *d = x->def;
	struct prom_guard_proc *g = d->kind == BLAMER_METRIC_GAUGE ? NULL : x->guard;
	char fam[96], name[112];
	uint64_t cum = 0, v;
	uint32_t i;
	size_t start = o->len;

	pm_family_name(d, fam, sizeof(fam));
	if (d->kind != BLAMER_METRIC_HISTOGRAM) {
		head(o, fam, x, nm);
		prom_put(o, "} ", 2);
		pm_double(o, held_double(o, g, start, x->value));
		prom_putc(o, '\n');
		return;
	}
	/* each cumulative bucket, the count and the sum held on their own:
	 * Prometheus reads each as a counter */
	snprintf(name, sizeof(name), "%s_bucket", fam);
	for (i = 0; i < d->nbuckets; i++) {
		bool labels = d->nlabels || x->depth || (x->extra && *x->extra);

		cum += x->buckets[i];
		start = o->len;
		head(o, name, x, nm);
		prom_put(o, labels ? ",le=\"" : "le=\"", labels ? 5 : 4);
		pm_double(o, d->upper[i]);
		prom_put(o, "\"} ", 3);
		prom_u64(o, held(o, g, start, cum));
		prom_putc(o, '\n');
	}
	snprintf(name, sizeof(name), "%s_count", fam);
	start = o->len;
	head(o, name, x, nm);
	prom_put(o, "} ", 2);
	v = held(o, g, start, cum);
	prom_u64(o, v);
	prom_putc(o, '\n');
	snprintf(name, sizeof(name), "%s_sum", fam);
	start = o->len;
	head(o, name, x, nm);
	prom_put(o, "} ", 2);
	pm_double(o, held_double(o, g, start, x->value));
	prom_putc(o, '\n');
}

/* ---- per process (export --per-process) ---- */

struct pm_item {
	const struct blamer_snap_process *p;
	size_t pi;		/* its index in e->procs */
	const struct blamer_snap_metric *m;
	char fam[96];
};

static int item_cmp(const void *a, const void *b)
{
	const struct pm_item *x = a, *y = b;
	uint32_t i;
	int c = strcmp(x->fam, y->fam);

	if (c)
		return c;
	/* the processes' key order, as prom.c writes them */
	if (x->p->pid != y->p->pid)
		return x->p->pid < y->p->pid ? -1 : 1;
	if (x->p->start_time_ns != y->p->start_time_ns)
		return x->p->start_time_ns < y->p->start_time_ns ? -1 : 1;
	if (x->p->heap_key != y->p->heap_key)
		return x->p->heap_key < y->p->heap_key ? -1 : 1;
	/* one family, several metrics (a counter c, a gauge c_total) */
	if ((c = strcmp(x->m->def->name, y->m->def->name)))
		return c;
	if (x->m->def->nlabels != y->m->def->nlabels)
		return x->m->def->nlabels < y->m->def->nlabels ? -1 : 1;
	for (i = 0; i < x->m->def->nlabels && i < BLAMER_METRIC_LABELS_MAX; i++)
		if ((c = strcmp(x->m->values[i], y->m->values[i])))
			return c;
	return blamer_path_cmp(x->m->nodes, x->m->depth, y->m->nodes, y->m->depth);
}

void pm_write_processes(struct exp *e, struct prom_out *o, struct prom_guard_proc *guards)
{
	struct pm_item *v;
	struct pm_names taken_names = { 0 };
	struct pm_run *runs;
	size_t i, j, n = 0, nruns, r;
	char key[128];

	for (i = 0; i < e->nprocs; i++)
		n += e->procs[i]->nmetrics;
	v = malloc((n + 1) * sizeof(*v));
	if (!v) {
		o->oom = true;
		return;
	}
	for (i = 0, n = 0; i < e->nprocs; i++) {
		for (j = 0; j < e->procs[i]->nmetrics; j++) {
			const struct blamer_snap_metric *m = &e->procs[i]->metrics[j];

			if (!m->def || m->conflict)
				continue;
			v[n].p = e->procs[i];
			v[n].pi = i;
			v[n].m = m;
			pm_family_name(m->def, v[n].fam, sizeof(v[n].fam));
			n++;
		}
	}
	qsort(v, n, sizeof(*v), item_cmp);
	/* each family's definition: its least uid's, as the service view's
	 * (prom_fleet.c) */
	runs = malloc((n + 1) * sizeof(*runs));
	for (i = 0, nruns = 0; runs && i < n; i = j, nruns++) {
		size_t c = i;

		for (j = i; j < n && !strcmp(v[j].fam, v[i].fam); j++)
			if (v[j].p->uid < v[c].p->uid)
				c = j;
		runs[nruns] = (struct pm_run){ .def = v[c].m->def, .uid = v[c].p->uid };
	}
	if (!runs || !pm_claim_runs(&taken_names, runs, nruns)) {
		o->oom = true;
		n = 0;
	}
	for (i = 0, r = 0; i < n; i = j, r++) {
		const struct blamer_snap_metric_def *own = runs[r].def;
		bool ok = runs[r].ok;

		if (ok)
			pm_family(o, own);
		for (j = i; j < n && !strcmp(v[j].fam, v[i].fam); j++) {
			const struct blamer_snap_metric *m = v[j].m;
			const struct blamer_snap_process *p = v[j].p;
			struct pm_series x = { .def = m->def, .values = m->values, .depth = m->depth,
					       .nodes = m->nodes, .uid = p->uid, .value = m->value,
					       .buckets = m->buckets, .extra = key,
					       .guard = guards ? &guards[v[j].pi] : NULL };

			/* one metric a family: a process that defines it
			 * otherwise than its uid's others (the reader marked it
			 * a conflict) was left out above; another uid's of
			 * another kind, or another metric whose family name is
			 * the same (a counter foo's foo_total, a gauge
			 * foo_total), is left out here: its samples would be of
			 * the claimed TYPE */
			if (!ok || (j > i && item_cmp(&v[j - 1], &v[j]) == 0) ||
			    strcmp(m->def->name, own->name) || m->def->kind != own->kind)
				continue;
			snprintf(key, sizeof(key),
				 "pid=\"%" PRId32 "\",start_time_ns=\"%" PRIu64 "\",heap=\"%" PRIx64
				 "\",identity=\"%s\"", p->pid, p->start_time_ns, p->heap_key,
				 p->kernel_facts ? "kernel" : "claimed");
			pm_series(o, &x, &e->nm);
		}
	}
	pm_names_free(&taken_names);
	free(runs);
	free(v);
}
