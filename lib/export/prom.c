// SPDX-License-Identifier: MIT
/*
 * Prometheus text exposition (format 0.0.4) of a snapshot, for a scrape
 * of `blamer export --listen` or node_exporter's textfile collector.
 *
 * The counter model (Documentation/reader.rst, "Prometheus"): every
 * series belongs to one process, keyed by pid, start_time_ns (the
 * PID-reuse guard), heap (the heap key) and identity (kernel fact or
 * heap claim), labels that never change for as long as the heap exists,
 * live or dead. Counters are a process's own sums, which only grow while
 * it runs and stay as they were once it died, until its heap is
 * released; then the series ends (which rate() and increase() handle),
 * and a new worker is a new series. So no counter ever goes down: `sum
 * without(pid, start_time_ns, heap, identity)` is the machine's total.
 * What may change (comm) is on blamer_process_info only.
 *
 * Every series is written once: a process's paths are merged by (path,
 * unit), a heap key two heaps claim is written once, and path labels
 * (prom_path.c) are unambiguous. Every string from outside goes through
 * prom_escape() (prom_text.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

/* ---- processes ---- */

static int key_cmp(const struct blamer_snap_process *x, const struct blamer_snap_process *y)
{
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start_time_ns != y->start_time_ns)
		return x->start_time_ns < y->start_time_ns ? -1 : 1;
	return (x->heap_key > y->heap_key) - (x->heap_key < y->heap_key);
}

static int proc_ptr_cmp(const void *a, const void *b)
{
	return key_cmp(*(const struct blamer_snap_process *const *)a,
		       *(const struct blamer_snap_process *const *)b);
}

/*
 * The processes to export, in key order, each key once: two heaps that
 * claim the same key (a crafted directory) would make duplicate series,
 * which Prometheus rejects; the first is kept. NULL if out of memory.
 */
static const struct blamer_snap_process **export_procs(const struct blamer_snapshot *s,
						       size_t *n)
{
	const struct blamer_snap_process **v = malloc((s->nprocs + 1) * sizeof(*v));
	size_t i, k = 0;

	if (!v)
		return NULL;
	for (i = 0; i < s->nprocs; i++)
		v[i] = &s->procs[i];
	qsort(v, s->nprocs, sizeof(*v), proc_ptr_cmp);
	for (i = 0; i < s->nprocs; i++)
		if (!k || key_cmp(v[k - 1], v[i]))
			v[k++] = v[i];
	*n = k;
	return v;
}

/*
 * What writing needs of the snapshot: the processes in key order and
 * each one's key labels, made once (pid, start_time_ns, heap, identity:
 * digits, hex and two words, nothing to escape). identity says whose word
 * pid, uid, start time and comm are: "kernel" (device backend) or
 * "claimed" (dir backend: the heap's file name and its own record, which
 * any process of the user could have written). It is on every series so
 * that no query shows a claim as a fact, and it never changes for a heap.
 */
struct exp {
	struct prom_out o;
	const struct blamer_snapshot *s;
	const struct blamer_snap_process **procs;
	size_t nprocs;
	char (*keys)[112];	/* 97 at most */
};

static void make_keys(struct exp *e)
{
	size_t i;

	for (i = 0; i < e->nprocs; i++)
		snprintf(e->keys[i], sizeof(e->keys[i]),
			 "pid=\"%" PRId32 "\",start_time_ns=\"%" PRIu64 "\",heap=\"%" PRIx64
			 "\",identity=\"%s\"", e->procs[i]->pid, e->procs[i]->start_time_ns,
			 e->procs[i]->heap_key, e->procs[i]->kernel_facts ? "kernel" : "claimed");
}

/* "name{KEY" of process @i; the caller adds labels, "} " and the value. */
static void proc_sample(struct exp *e, const char *name, size_t i)
{
	prom_puts(&e->o, name);
	prom_putc(&e->o, '{');
	prom_puts(&e->o, e->keys[i]);
}

/* One gauge per process: @value(p), skipping those @skip(p) says to. */
static void per_process(struct exp *e, const char *name, const char *help,
			uint64_t (*value)(const struct blamer_snap_process *p),
			bool (*skip)(const struct blamer_snap_process *p))
{
	size_t i;

	prom_family(&e->o, name, "gauge", help);
	for (i = 0; i < e->nprocs; i++) {
		if (skip && skip(e->procs[i]))
			continue;
		proc_sample(e, name, i);
		prom_put(&e->o, "} ", 2);
		prom_u64(&e->o, value(e->procs[i]));
		prom_putc(&e->o, '\n');
	}
}

static uint64_t p_size(const struct blamer_snap_process *p) { return p->size; }
static uint64_t p_used(const struct blamer_snap_process *p) { return p->used; }
static uint64_t p_live(const struct blamer_snap_process *p) { return p->state == BLAMER_PROC_LIVE; }
static uint64_t p_phase(const struct blamer_snap_process *p) { return p->phase; }
static uint64_t p_threads(const struct blamer_snap_process *p) { return p->nthreads; }
static uint64_t p_signal(const struct blamer_snap_process *p) { return p->exit_signal; }
static bool p_not_exited(const struct blamer_snap_process *p) { return !p->exited; }

/* What a heap that was not read says nothing about: no values to give. */
static bool p_not_read(const struct blamer_snap_process *p)
{
	return p->health == BLAMER_HEALTH_UNCHECKED || p->health == BLAMER_HEALTH_EMPTY ||
	       p->health == BLAMER_HEALTH_UNREADABLE;
}

static bool p_no_record(const struct blamer_snap_process *p)
{
	return !p->have_record || p_not_read(p);
}

static uint64_t p_corrupt(const struct blamer_snap_process *p)
{
	return p->health == BLAMER_HEALTH_CORRUPT || p->health == BLAMER_HEALTH_UNREADABLE;
}

/* blamer_process_info: what may change about a process (comm), kept off
 * the counters' labels. */
static void process_info(struct exp *e)
{
	const char *name = "blamer_process_info";
	size_t i;

	prom_family(&e->o, name, "gauge",
	       "1 per heap, with its comm; identity=\"kernel\": pid, start time and comm are the kernel's word, \"claimed\": the heap's own.");
	for (i = 0; i < e->nprocs; i++) {
		struct prom_label l[1] = { { "comm", e->procs[i]->comm } };

		proc_sample(e, name, i);
		prom_putc(&e->o, ',');
		prom_labels(&e->o, l, 1);
		prom_put(&e->o, "} 1\n", 4);
	}
}
/* ---- attribution ---- */

/* The fixed families, by unit; unnamed application units share the last
 * one with a unit label, named ones get families of their own. */
static const struct {
	const char *name, *help;
} fixed_families[] = {
	{ "blamer_attribution_cpu_seconds_total",
	  "CPU time a process attributed to a DAG path." },
	{ "blamer_attribution_bytes_total", "Bytes a process attributed to a DAG path." },
	{ "blamer_attribution_count_total", "Events a process counted on a DAG path." },
	{ "blamer_attribution_value_total",
	  "Measurements of an unnamed application unit a process attributed to a DAG path." },
};
#define NFIXED (sizeof(fixed_families) / sizeof(fixed_families[0]))
#define FAM_VALUE (NFIXED - 1)

/* A named unit: its family name and index. */
struct named {
	const struct blamer_snap_unit_def *def;
	char fam[80];
	size_t fam_index;
};

static int def_cmp(const void *a, const void *b)
{
	const struct blamer_snap_unit_def *x = *(const struct blamer_snap_unit_def *const *)a;
	const struct blamer_snap_unit_def *y = *(const struct blamer_snap_unit_def *const *)b;
	int c;

	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	c = strcmp(x->name, y->name);
	return c ? c : (x->base > y->base) - (x->base < y->base);
}

/* A metric name part, as the reader checks it: the family name is made
 * of it, and no escaper applies to names (a snapshot made by hand may
 * hold anything). */
static bool name_ok(const char *n)
{
	size_t i;

	for (i = 0; n[i]; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || n[i] == '_' ||
		      (i && n[i] >= '0' && n[i] <= '9')) || i >= 32)
			return false;
	return i > 0;
}

static int named_fam_cmp(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = strcmp(x->fam, y->fam);

	return c ? c : (x->def->unit > y->def->unit) - (x->def->unit < y->def->unit);
}

static int named_unit_cmp(const void *a, const void *b)
{
	const struct named *x = a, *y = b;

	return (x->def->unit > y->def->unit) - (x->def->unit < y->def->unit);
}

/*
 * The named units of the snapshot, one per unit (blamer_snap_unit_def()'s
 * choice: the least definition), sorted by unit, with family indexes from
 * NFIXED on: units whose family names are equal share one prom_family(their
 * unit label tells them apart). *nfam gets the number of families.
 */
static struct named *named_units(const struct blamer_snapshot *s, size_t *n, size_t *nfam)
{
	static const char *const suffix[] = { "_total", "_seconds_total", "_bytes_total" };
	const struct blamer_snap_unit_def **defs;
	struct named *v;
	size_t i, k = 0, nd = s->nunit_defs;

	defs = malloc((nd + 1) * sizeof(*defs));
	v = malloc((nd + 1) * sizeof(*v));
	if (!defs || !v) {
		free(defs);
		free(v);
		return NULL;
	}
	for (i = k = 0; i < nd; i++)
		if (name_ok(s->unit_defs[i].name) && s->unit_defs[i].unit >= BLAMER_UNIT_APP_BASE &&
		    s->unit_defs[i].base <= BLAMER_BASE_BYTES)
			defs[k++] = &s->unit_defs[i];
	nd = k;
	k = 0;
	qsort(defs, nd, sizeof(*defs), def_cmp);
	for (i = 0; i < nd; i++) {
		if (k && v[k - 1].def->unit == defs[i]->unit)
			continue;
		v[k].def = defs[i];
		snprintf(v[k].fam, sizeof(v[k].fam), "blamer_app_%s%s", defs[i]->name,
			 suffix[defs[i]->base]);
		k++;
	}
	free(defs);
	qsort(v, k, sizeof(*v), named_fam_cmp);
	*nfam = NFIXED;
	for (i = 0; i < k; i++) {
		if (i && strcmp(v[i - 1].fam, v[i].fam))
			++*nfam;
		v[i].fam_index = *nfam;
	}
	if (k)
		++*nfam;
	qsort(v, k, sizeof(*v), named_unit_cmp);
	*n = k;
	return v;
}

static const struct named *named_find(const struct named *v, size_t n, uint32_t unit)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].def->unit == unit)
			return &v[mid];
		if (v[mid].def->unit < unit)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* One (path, unit) value of a process: values[k] of its paths[path],
 * its family and whether it is in nanoseconds (exported as seconds).
 * 16 bytes: a hostile heap can hold half a million of them. */
struct entry {
	uint32_t path;
	uint32_t fam;
	uint32_t unit;
	uint8_t k;
	bool ns;
};

static int entry_cmp(const struct blamer_snap_path *paths, const struct entry *x,
		     const struct entry *y)
{
	const struct blamer_snap_path *a = &paths[x->path], *b = &paths[y->path];
	int c;

	if (x->fam != y->fam)
		return x->fam < y->fam ? -1 : 1;
	c = blamer_path_cmp(a->nodes, a->depth, b->nodes, b->depth);
	if (c)
		return c;
	return (x->unit > y->unit) - (x->unit < y->unit);
}

/* Heapsort of one process's entries: in place, so sorting half a million
 * costs no second array (qsort() may take one as big). */
static void sift(const struct blamer_snap_path *paths, struct entry *v, size_t i, size_t n)
{
	for (;;) {
		size_t c = 2 * i + 1;
		struct entry t;

		if (c >= n)
			return;
		if (c + 1 < n && entry_cmp(paths, &v[c], &v[c + 1]) < 0)
			c++;
		if (entry_cmp(paths, &v[i], &v[c]) >= 0)
			return;
		t = v[i];
		v[i] = v[c];
		v[c] = t;
		i = c;
	}
}

static void sort_entries(const struct blamer_snap_path *paths, struct entry *v, size_t n)
{
	struct entry t;
	size_t i;

	for (i = n / 2; i-- > 0; )
		sift(paths, v, i, n);
	for (i = n; i-- > 1; ) {
		t = v[0];
		v[0] = v[i];
		v[i] = t;
		sift(paths, v, 0, i);
	}
}

static size_t unit_family(const struct named *nv, size_t nn, uint32_t unit, bool *ns)
{
	const struct named *d;

	*ns = false;
	switch (unit) {
	case BLAMER_UNIT_CPU_NS:
		*ns = true;
		return 0;
	case BLAMER_UNIT_BYTES:
		return 1;
	case BLAMER_UNIT_COUNT:
		return 2;
	}
	d = named_find(nv, nn, unit);
	if (!d)
		return FAM_VALUE;
	*ns = d->def->base == BLAMER_BASE_SECONDS;
	return d->fam_index;
}

/*
 * Every (process, path, unit) counter, family by family. Each process's
 * values are sorted by (family, path, unit) once, with equal ones merged
 * (one series, their sum, as the attribution view adds them); then each
 * family takes its run from every process in turn.
 */
/*
 * The path labels of one scrape, each made once: a path has a series in
 * each of its units' families. By process and path index; off is where
 * its label is in pool, +1 (0: not made yet).
 */
struct labels {
	struct prom_names nm;
	struct prom_out pool;
	size_t *base;			/* by process: its first path's index */
	struct { uint32_t off, len; } *at;
};

static void path_label(struct exp *e, struct labels *lb, size_t proc, uint32_t path)
{
	const struct blamer_snap_path *p = &e->procs[proc]->paths[path];
	size_t i = lb->base[proc] + path, start = lb->pool.len;

	if (!lb->at[i].off && start < UINT32_MAX / 2) {
		prom_path_label(&lb->pool, &lb->nm, p);
		if (!lb->pool.oom) {
			lb->at[i].off = (uint32_t)start + 1;
			lb->at[i].len = (uint32_t)(lb->pool.len - start);
		}
	}
	if (lb->at[i].off)
		prom_put(&e->o, lb->pool.p + lb->at[i].off - 1, lb->at[i].len);
	else
		prom_path_label(&e->o, &lb->nm, p);	/* out of memory for the cache */
}

static int attribution(struct exp *e)
{
	struct labels lb;
	struct named *nv;
	struct entry *v;
	size_t *at, *end, i, j, k, n = 0, np = 0, nn = 0, nfam = NFIXED, f;
	char help[160];
	int ret = -ENOMEM;

	memset(&lb, 0, sizeof(lb));
	for (i = 0; i < e->nprocs; i++) {
		np += e->procs[i]->npaths;
		for (j = 0; j < e->procs[i]->npaths; j++)
			n += e->procs[i]->paths[j].nvalues;
	}
	nv = named_units(e->s, &nn, &nfam);
	v = malloc((n + 1) * sizeof(*v));
	at = malloc((e->nprocs + 1) * sizeof(*at));
	end = malloc((e->nprocs + 1) * sizeof(*end));
	lb.base = malloc((e->nprocs + 1) * sizeof(*lb.base));
	lb.at = calloc(np + 1, sizeof(*lb.at));
	if (!nv || !v || !at || !end || !lb.base || !lb.at || !prom_names_init(&lb.nm, e->s))
		goto out;
	for (i = 0, np = 0; i < e->nprocs; i++) {
		lb.base[i] = np;
		np += e->procs[i]->npaths;
	}
	for (i = 0, n = 0; i < e->nprocs; i++) {
		const struct blamer_snap_process *p = e->procs[i];
		size_t first = n;

		for (j = 0; j < p->npaths; j++) {
			for (k = 0; k < p->paths[j].nvalues && k < BLAMER_SNAP_MAX_UNITS; k++) {
				struct entry *x = &v[n++];

				x->path = (uint32_t)j;
				x->unit = p->paths[j].units[k];
				x->k = (uint8_t)k;
				x->fam = (uint32_t)unit_family(nv, nn, x->unit, &x->ns);
			}
		}
		sort_entries(p->paths, v + first, n - first);
		at[i] = first;
		end[i] = n;
	}
	for (f = 0; f < nfam; f++) {
		bool any = false;

		for (i = 0; i < e->nprocs; i++) {
			const struct blamer_snap_path *paths = e->procs[i]->paths;

			while (at[i] < end[i] && v[at[i]].fam == f) {
				const struct entry *x = &v[at[i]];
				const struct named *d = f < NFIXED ? NULL : named_find(nv, nn, x->unit);
				const char *fam = d ? d->fam : fixed_families[f].name;
				uint64_t sum = 0;

				/* equal (path, unit) of one process: one series,
				 * the sum, as the attribution view adds them */
				do {
					sum += paths[v[at[i]].path].values[v[at[i]].k];
				} while (++at[i] < end[i] && !entry_cmp(paths, x, &v[at[i]]));

				if (!any) {
					any = true;
					if (d)
						snprintf(help, sizeof(help),
							 "Application unit %s (%s) a process attributed to a DAG path.",
							 d->def->name,
							 d->def->base == BLAMER_BASE_SECONDS ? "seconds" :
							 d->def->base == BLAMER_BASE_BYTES ? "bytes" :
							 "a count");
					prom_family(&e->o, fam, "counter",
					       d ? help : fixed_families[f].help);
				}
				proc_sample(e, fam, i);
				prom_putc(&e->o, ',');
				path_label(e, &lb, i, x->path);
				if (f >= FAM_VALUE) {
					prom_put(&e->o, ",unit=\"", 7);
					prom_u64(&e->o, x->unit);
					prom_putc(&e->o, '"');
				}
				prom_put(&e->o, "} ", 2);
				if (x->ns)
					prom_ns(&e->o, sum);
				else
					prom_u64(&e->o, sum);
				prom_putc(&e->o, '\n');
			}
		}
	}
	ret = 0;
out:
	prom_names_free(&lb.nm);
	free(lb.pool.p);
	free(lb.base);
	free(lb.at);
	free(nv);
	free(v);
	free(at);
	free(end);
	return ret;
}

static int write_all(const struct blamer_snapshot *s, struct prom_out *o)
{
	struct prom_label state[1] = { { "state", "live" } };
	struct exp e = { .s = s, .o = *o };
	size_t i, live = 0, dead = 0;
	int ret = -ENOMEM;

	e.procs = export_procs(s, &e.nprocs);
	e.keys = malloc((e.nprocs + 1) * sizeof(*e.keys));
	if (!e.procs || !e.keys)
		goto out;
	make_keys(&e);
	for (i = 0; i < e.nprocs; i++) {
		if (e.procs[i]->state == BLAMER_PROC_LIVE)
			live++;
		else
			dead++;
	}
	prom_family(&e.o, "blamer_heaps", "gauge", "Heaps visible to the reader, by owner state.");
	prom_sample_u64(&e.o, "blamer_heaps", state, 1, live);
	state[0].value = "dead";
	prom_sample_u64(&e.o, "blamer_heaps", state, 1, dead);
	process_info(&e);
	per_process(&e, "blamer_heap_size_bytes", "Bytes of all slabs of a heap.", p_size, NULL);
	per_process(&e, "blamer_heap_used_bytes", "Bytes allocated in a heap's slabs.", p_used,
		    NULL);
	per_process(&e, "blamer_process_live", "1 if the heap's owner is running, 0 if dead.",
		    p_live, NULL);
	per_process(&e, "blamer_heap_corrupt",
		    "1 if the reader found the heap corrupt or unreadable.", p_corrupt, NULL);
	per_process(&e, "blamer_process_phase", "Process phase (see blamer(1)), as the heap says.",
		    p_phase, p_no_record);
	per_process(&e, "blamer_process_threads", "Threads with an activity tracker.",
		    p_threads, p_not_read);
	per_process(&e, "blamer_process_exit_signal",
		    "Signal that killed a dead process (0: exited normally).",
		    p_signal, p_not_exited);
	ret = attribution(&e);
	if (!ret && e.o.oom)
		ret = -ENOMEM;
out:
	*o = e.o;
	free(e.keys);
	free(e.procs);
	return ret;
}

int blamer_snapshot_prometheus_text(const struct blamer_snapshot *s, char **buf, size_t *len,
				    size_t *cap)
{
	struct prom_out o = { .p = *buf, .cap = *cap };
	int ret = write_all(s, &o);

	*buf = o.p;
	*cap = o.cap;
	*len = ret ? 0 : o.len;
	return ret;
}

int blamer_snapshot_write_prometheus(const struct blamer_snapshot *s, FILE *f)
{
	struct prom_out o = { .f = f };
	int ret = write_all(s, &o);

	if (!ret && o.len && fwrite(o.p, 1, o.len, f) != o.len)
		ret = -EIO;
	if (ferror(f))
		ret = -EIO;
	free(o.p);
	return ret;
}
