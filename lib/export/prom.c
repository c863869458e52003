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
 * What may change (comm), and what a process names itself once (role,
 * instance), are on blamer_process_info only: join on the key for them.
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

struct prom_key prom_key_of(const struct blamer_snap_process *p)
{
	return (struct prom_key){ .pid = p->pid, .start = p->start_time_ns, .heap = p->heap_key };
}

int prom_key_cmp(const struct prom_key *x, const struct prom_key *y)
{
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->heap > y->heap) - (x->heap < y->heap);
}

static int key_cmp(const struct blamer_snap_process *x, const struct blamer_snap_process *y)
{
	struct prom_key kx = prom_key_of(x), ky = prom_key_of(y);

	return prom_key_cmp(&kx, &ky);
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

static uint64_t p_disproved(const struct blamer_snap_process *p) { return p->disproved; }
static bool p_not_disproved(const struct blamer_snap_process *p) { return !p->disproved; }

static uint64_t p_corrupt(const struct blamer_snap_process *p)
{
	return p->health == BLAMER_HEALTH_CORRUPT || p->health == BLAMER_HEALTH_UNREADABLE;
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


static int def_cmp(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->def->unit != y->def->unit)
		return x->def->unit < y->def->unit ? -1 : 1;
	c = strcmp(x->def->name, y->def->name);
	return c ? c : (x->def->base > y->def->base) - (x->def->base < y->def->base);
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

	return c ? c : def_cmp(a, b);
}

static int named_unit_cmp(const void *a, const void *b)
{
	const struct named *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return (x->def->unit > y->def->unit) - (x->def->unit < y->def->unit);
}

static bool def_ok(const struct blamer_snap_unit_def *d)
{
	return name_ok(d->name) && d->unit >= BLAMER_UNIT_APP_BASE && d->base <= BLAMER_BASE_BYTES;
}

/*
 * The named units of the snapshot, one per (uid, unit): each uid's own
 * (blamer_snap_uid_unit_def()'s choice), so that no user's heap names
 * another's unit or changes its base (a snapshot without per-uid names:
 * one per unit, blamer_snap_unit_def()'s, as uid 0's for every uid).
 * Sorted by uid, then unit, with family indexes from NFIXED on: units
 * whose family names are equal share one prom_family (their unit and uid
 * labels tell them apart). *nfam gets the number of families.
 */
static struct named *named_units(const struct blamer_snapshot *s, bool per_uid, size_t *n,
				 size_t *nfam)
{
	static const char *const suffix[] = { "_total", "_seconds_total", "_bytes_total" };
	size_t nd = per_uid ? s->nuid_unit_defs : s->nunit_defs, i, k = 0;
	struct named *v = malloc((nd + 1) * sizeof(*v));

	if (!v)
		return NULL;
	for (i = 0; i < nd; i++) {
		const struct blamer_snap_unit_def *d = per_uid ? &s->uid_unit_defs[i].def :
								 &s->unit_defs[i];

		if (def_ok(d))
			v[k++] = (struct named){ .def = d,
						 .uid = per_uid ? s->uid_unit_defs[i].uid : 0 };
	}
	nd = k;
	qsort(v, nd, sizeof(*v), def_cmp);
	for (i = 0, k = 0; i < nd; i++) {
		if (k && v[k - 1].uid == v[i].uid && v[k - 1].def->unit == v[i].def->unit)
			continue;	/* the least of a (uid, unit) */
		v[k] = v[i];
		snprintf(v[k].fam, sizeof(v[k].fam), "blamer_app_%s%s", v[i].def->name,
			 suffix[v[i].def->base]);
		k++;
	}
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

static const struct named *named_find(const struct exp *e, uint32_t uid, uint32_t unit)
{
	size_t lo = 0, hi = e->nn;

	if (!e->per_uid)
		uid = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct named *x = &e->nv[mid];

		if (x->uid == uid && x->def->unit == unit)
			return x;
		if (x->uid < uid || (x->uid == uid && x->def->unit < unit))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}


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

static size_t unit_family(const struct exp *e, uint32_t uid, uint32_t unit, bool *ns)
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
	d = named_find(e, uid, unit);
	if (!d)
		return FAM_VALUE;
	*ns = d->def->base == BLAMER_BASE_SECONDS;
	return d->fam_index;
}

size_t prom_unit_family(const struct exp *e, uint32_t uid, uint32_t unit, bool *ns)
{
	return unit_family(e, uid, unit, ns);
}

bool prom_fam_has_unit(size_t f)
{
	return f >= FAM_VALUE;
}

const char *prom_fam_name(const struct exp *e, size_t f, uint32_t uid, uint32_t unit)
{
	const struct named *d = f < NFIXED ? NULL : named_find(e, uid, unit);

	return d ? d->fam : fixed_families[f < NFIXED ? f : FAM_VALUE].name;
}





static void info_samples(struct pw *w, struct prom_out *o, const char *name);
static void drop_samples(struct pw *w, struct prom_out *o, const char *name);

/* The per-process families (gauges, unless @type says otherwise) every
 * process has a sample in (unless @skip says not), in output order,
 * after blamer_heaps; @write writes a family's samples itself. */
static const struct gauge {
	const char *name, *help;
	uint64_t (*value)(const struct blamer_snap_process *p);
	bool (*skip)(const struct blamer_snap_process *p);
	void (*write)(struct pw *w, struct prom_out *o, const char *name);
	const char *type;
} gauges[] = {
	/* what may change about a process (comm), kept off the counters' labels */
	{ "blamer_process_info",
	  "1 per heap, with its comm, role and instance; identity=\"kernel\": pid, start time and comm are the kernel's word, \"claimed\": the heap's own.",
	  NULL, NULL, info_samples, NULL },
	{ "blamer_heap_size_bytes", "Bytes of all slabs of a heap.", p_size, NULL, NULL, NULL },
	{ "blamer_heap_used_bytes", "Bytes allocated in a heap's slabs.", p_used, NULL, NULL, NULL },
	{ "blamer_process_live", "1 if the heap's owner is running, 0 if dead.", p_live, NULL,
	  NULL, NULL },
	{ "blamer_heap_corrupt", "1 if the reader found the heap corrupt or unreadable.",
	  p_corrupt, NULL, NULL, NULL },
	{ "blamer_process_phase", "Process phase (see blamer(1)), as the heap says.", p_phase,
	  p_no_record, NULL, NULL },
	{ "blamer_process_threads", "Threads with an activity tracker.", p_threads, p_not_read,
	  NULL, NULL },
	{ "blamer_process_exit_signal", "Signal that killed a dead process (0: exited normally).",
	  p_signal, p_not_exited, NULL, NULL },
	{ "blamer_dropped_total",
	  "Writes a process could not record in full, by reason (a series once its first is counted).",
	  NULL, NULL, drop_samples, "counter" },
	{ "blamer_process_disproved",
	  "1 for a heap whose claim /proc contradicts (dir backend: that pid runs since before its claimed start, or as a uid that cannot have made its files): not the process it names.",
	  p_disproved, p_not_disproved, NULL, NULL },
};
_Static_assert(sizeof(gauges) / sizeof(gauges[0]) == NGAUGES, "gauges");

void prom_gauge_family(struct prom_out *o, size_t g)
{
	prom_family(o, gauges[g].name, gauges[g].type ? gauges[g].type : "gauge", gauges[g].help);
}

bool prom_exp_init(struct exp *e, const struct blamer_snapshot *s)
{
	memset(e, 0, sizeof(*e));
	e->s = s;
	e->nfam = NFIXED;
	e->procs = export_procs(s, &e->nprocs);
	e->per_uid = s->flags & BLAMER_SNAP_UID_NAMES;
	e->nv = named_units(s, e->per_uid, &e->nn, &e->nfam);
	return e->procs && e->nv && prom_names_init(&e->nm, s);
}

void prom_exp_free(struct exp *e)
{
	prom_names_free(&e->nm);
	free(e->nv);
	free(e->procs);
}

/* How many values @p has: the entries prom_pw_init() needs room for. */
size_t prom_nvalues(const struct blamer_snap_process *p)
{
	size_t j, n = 0;

	for (j = 0; j < p->npaths; j++)
		n += p->paths[j].nvalues < BLAMER_SNAP_MAX_UNITS ? p->paths[j].nvalues :
								     BLAMER_SNAP_MAX_UNITS;
	return n;
}

void prom_key_labels(const struct blamer_snap_process *p, char *buf, size_t len)
{
	snprintf(buf, len,
		 "pid=\"%" PRId32 "\",start_time_ns=\"%" PRIu64 "\",heap=\"%" PRIx64
		 "\",identity=\"%s\"", p->pid, p->start_time_ns, p->heap_key,
		 p->kernel_facts ? "kernel" : "claimed");
}

/*
 * @w for @p: its key, its values in @v (room for prom_nvalues(p)) sorted by
 * (family, path, unit), and room for its labels; false out of memory.
 */

bool prom_pw_init(struct exp *e, struct pw *w, const struct blamer_snap_process *p,
		    struct entry *v, struct prom_out *pool)
{
	size_t j, k;

	w->p = p;
	w->v = v;
	w->n = w->at = 0;
	w->pool = pool;
	prom_key_labels(p, w->key, sizeof(w->key));
	for (j = 0; j < p->npaths; j++) {
		for (k = 0; k < p->paths[j].nvalues && k < BLAMER_SNAP_MAX_UNITS; k++) {
			struct entry *x = &v[w->n++];

			x->path = (uint32_t)j;
			x->unit = p->paths[j].units[k];
			x->k = (uint8_t)k;
			x->fam = (uint32_t)unit_family(e, p->uid, x->unit, &x->ns);
		}
	}
	sort_entries(p->paths, v, w->n);
	w->lab = calloc(p->npaths + 1, sizeof(*w->lab));
	return w->lab != NULL;
}

void prom_pw_free(struct pw *w)
{
	free(w->lab);
	w->lab = NULL;
}

/* "name{KEY" of @w; the caller adds labels, "} " and the value. */
static void proc_sample(struct prom_out *o, const char *name, const struct pw *w)
{
	prom_puts(o, name);
	prom_putc(o, '{');
	prom_puts(o, w->key);
}

static void path_label(struct exp *e, struct pw *w, struct prom_out *o, uint32_t path)
{
	const struct blamer_snap_path *p = &w->p->paths[path];
	size_t start = w->pool->len;

	if (!w->lab[path].off && start < UINT32_MAX / 2) {
		prom_path_label(w->pool, &e->nm, w->p->uid, p);
		if (!w->pool->oom) {
			w->lab[path].off = (uint32_t)start + 1;
			w->lab[path].len = (uint32_t)(w->pool->len - start);
		}
	}
	if (w->lab[path].off)
		prom_put(o, w->pool->p + w->lab[path].off - 1, w->lab[path].len);
	else
		prom_path_label(o, &e->nm, w->p->uid, p);	/* out of memory for the labels */
}

static void info_samples(struct pw *w, struct prom_out *o, const char *name)
{
	struct prom_label l[3] = { { "comm", w->p->comm }, { "role", w->p->role },
				   { "instance", w->p->instance } };

	proc_sample(o, name, w);
	prom_putc(o, ',');
	prom_labels(o, l, 3);
	prom_put(o, "} 1\n", 4);
}

static void drop_samples(struct pw *w, struct prom_out *o, const char *name)
{
	uint32_t i;

	for (i = 0; i < BLAMER_DROP_MAX; i++) {
		const char *n = blamer_drop_reason_name(i);
		char other[16];

		if (!w->p->drops[i])
			continue;
		if (!n) {
			snprintf(other, sizeof(other), "%u", i);	/* a newer writer's */
			n = other;
		}
		proc_sample(o, name, w);
		prom_put(o, ",reason=\"", 9);
		prom_puts(o, n);
		prom_put(o, "\"} ", 3);
		prom_u64(o, w->p->drops[i]);
		prom_putc(o, '\n');
	}
}

/* @w's samples of family @g, if it has any. */
void prom_write_gauge(struct pw *w, size_t g, struct prom_out *o)
{
	const struct gauge *ga = &gauges[g];

	if (ga->write) {
		ga->write(w, o, ga->name);
	} else if (!ga->skip || !ga->skip(w->p)) {
		proc_sample(o, ga->name, w);
		prom_put(o, "} ", 2);
		prom_u64(o, ga->value(w->p));
		prom_putc(o, '\n');
	}
}

/* The HELP and TYPE of attribution family @f, whose first value is in @unit. */
void prom_attr_family(struct exp *e, size_t f, uint32_t uid, uint32_t unit, struct prom_out *o)
{
	const struct named *d = f < NFIXED ? NULL : named_find(e, uid, unit);
	char help[160];

	if (!d) {
		prom_family(o, fixed_families[f].name, "counter", fixed_families[f].help);
		return;
	}
	snprintf(help, sizeof(help), "Application unit %s (%s) a process attributed to a DAG path.",
		 d->def->name, d->def->base == BLAMER_BASE_SECONDS ? "seconds" :
			       d->def->base == BLAMER_BASE_BYTES ? "bytes" : "a count");
	prom_family(o, d->fam, "counter", help);
}

/*
 * @w's series of attribution family @f: its values of the family, equal
 * (path, unit) ones merged (one series, their sum, as the attribution
 * view adds them).
 */
void prom_write_attr(struct exp *e, struct pw *w, size_t f, struct prom_out *o)
{
	const struct blamer_snap_path *paths = w->p->paths;

	while (w->at < w->n && w->v[w->at].fam == f) {
		const struct entry *x = &w->v[w->at];
		const struct named *d = f < NFIXED ? NULL : named_find(e, w->p->uid, x->unit);
		uint64_t sum = 0;

		size_t start = o->len;

		do {
			sum += paths[w->v[w->at].path].values[w->v[w->at].k];
		} while (++w->at < w->n && !entry_cmp(paths, x, &w->v[w->at]));
		proc_sample(o, d ? d->fam : fixed_families[f].name, w);
		prom_putc(o, ',');
		path_label(e, w, o, x->path);
		if (f >= FAM_VALUE) {
			prom_put(o, ",unit=\"", 7);
			prom_u64(o, x->unit);
			prom_putc(o, '"');
		}
		prom_put(o, "} ", 2);
		/* held at the highest it was (the series is its text: a guard
		 * writes into memory, never to a FILE, so the text is there) */
		if (w->guard && !o->f && !o->oom)
			sum = prom_guard_clamp(w->guard, o->p + start, o->len - start, sum);
		if (x->ns)
			prom_ns(o, sum);
		else
			prom_u64(o, sum);
		prom_putc(o, '\n');
	}
}

void prom_write_decreases(const struct blamer_snap_process *p, uint64_t n, struct prom_out *o)
{
	char key[112];

	prom_key_labels(p, key, sizeof(key));
	prom_puts(o, PROM_DECREASES_FAMILY "{");
	prom_puts(o, key);
	prom_put(o, "} ", 2);
	prom_u64(o, n);
	prom_putc(o, '\n');
}

void prom_write_heaps(struct exp *e, struct prom_out *o)
{
	struct prom_label state[1] = { { "state", "live" } };
	size_t i, live = 0, corrupt = 0;

	for (i = 0; i < e->nprocs; i++) {
		live += e->procs[i]->state == BLAMER_PROC_LIVE;
		corrupt += p_corrupt(e->procs[i]);
	}
	prom_family(o, "blamer_heaps", "gauge", "Heaps visible to the reader, by owner state.");
	prom_sample_u64(o, "blamer_heaps", state, 1, live);
	state[0].value = "dead";
	prom_sample_u64(o, "blamer_heaps", state, 1, e->nprocs - live);
	/* what was left out of the series (a bad record, a value no writer
	 * leaves) says so in one number, in either mode */
	prom_family(o, "blamer_corrupt_heaps", "gauge",
		    "Heaps of blamer_heaps the reader found corrupt or unreadable: what it could not trust is left out of the series.");
	prom_sample_u64(o, "blamer_corrupt_heaps", NULL, 0, corrupt);
	/* files that hold no heap: one sample for all of them, not a
	 * process's series each */
	prom_family(o, "blamer_empty_files", "gauge",
		    "Slab files of the directory that hold no heap (empty, or without a heap's first bytes), not read as processes.");
	prom_sample_u64(o, "blamer_empty_files", NULL, 0, e->s->empty_files);
}

/*
 * The exposition family by family, each taking every process's samples
 * in turn: what a one-off export writes, straight into @o (which may
 * write out as it goes: memory stays flat).
 */
int prom_write_all(const struct blamer_snapshot *s, struct prom_out *o)
{
	struct prom_out pool = { 0 };
	struct entry *v = NULL;
	struct pw *w = NULL;
	size_t i, g, f, n = 0;
	struct exp e;
	int ret = -ENOMEM;

	if (!prom_exp_init(&e, s))
		goto out;
	for (i = 0; i < e.nprocs; i++)
		n += prom_nvalues(e.procs[i]);
	v = malloc((n + 1) * sizeof(*v));
	w = calloc(e.nprocs + 1, sizeof(*w));
	if (!v || !w)
		goto out;
	for (i = 0, n = 0; i < e.nprocs; i++) {
		if (!prom_pw_init(&e, &w[i], e.procs[i], v + n, &pool))
			goto out;
		n += w[i].n;
	}
	prom_write_heaps(&e, o);
	for (g = 0; g < NGAUGES; g++) {
		prom_gauge_family(o, g);
		for (i = 0; i < e.nprocs; i++)
			prom_write_gauge(&w[i], g, o);
	}
	for (f = 0; f < e.nfam; f++) {
		bool any = false;

		for (i = 0; i < e.nprocs; i++) {
			if (w[i].at >= w[i].n || w[i].v[w[i].at].fam != f)
				continue;
			if (!any) {
				any = true;
				prom_attr_family(&e, f, w[i].p->uid, w[i].v[w[i].at].unit, o);
			}
			prom_write_attr(&e, &w[i], f, o);
		}
	}
	pm_write_processes(&e, o, NULL);	/* the metrics each process wrote */
	ret = o->oom ? -ENOMEM : 0;
out:
	for (i = 0; w && i < e.nprocs; i++)
		prom_pw_free(&w[i]);
	free(w);
	free(v);
	free(pool.p);
	prom_exp_free(&e);
	return ret;
}

int blamer_snapshot_prometheus_text(const struct blamer_snapshot *s, char **buf, size_t *len,
				    size_t *cap)
{
	struct prom_out o = { .p = *buf, .cap = *cap };
	int ret = prom_write_all(s, &o);

	*buf = o.p;
	*cap = o.cap;
	*len = ret ? 0 : o.len;
	return ret;
}

int blamer_snapshot_write_prometheus(const struct blamer_snapshot *s, FILE *f)
{
	struct prom_out o = { .f = f };
	int ret = prom_write_all(s, &o);

	if (!ret && o.len && fwrite(o.p, 1, o.len, f) != o.len)
		ret = -EIO;
	if (ferror(f))
		ret = -EIO;
	free(o.p);
	return ret;
}
