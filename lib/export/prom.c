// SPDX-License-Identifier: MIT
/*
 * Prometheus text exposition (format 0.0.4) of a snapshot, for a scrape
 * of `blamer export --listen` or node_exporter's textfile collector.
 *
 * The counter model (Documentation/reader.rst, "Prometheus"): every
 * series belongs to one process, keyed by pid, start_time_ns (the
 * PID-reuse guard) and heap (the heap key), labels that never change for
 * as long as the heap exists, live or dead. Counters are a process's own
 * sums, which only grow while it runs and stay as they were once it died,
 * until its heap is released; then the series ends (which PromQL's
 * rate()/increase() handle), and a new worker is a new series. So no
 * counter ever goes down: `sum without(pid, start_time_ns, heap)` is the
 * machine's total. What may change (comm, whether the identity is the
 * kernel's word or the heap's claim) is on blamer_process_info only.
 *
 * Every string from outside goes through one of three escapers here:
 * label_value() (valid UTF-8, no control characters, \\ \" \n escaped),
 * help_text() and path_element() (percent-encoding that keeps distinct
 * node paths distinct labels). Every series is written once: paths are
 * merged per process by (path, unit), and a node name that two node ids
 * share is told apart by its id.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blamer.h"

struct label {
	const char *name;
	const char *value;
};

/*
 * The length of the valid UTF-8 sequence at @s (1..4), or 0: overlong
 * forms, surrogates and code points past U+10FFFF are invalid. @cp gets
 * the code point.
 */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp)
{
	size_t n, i;
	uint32_t c = s[0];

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		c &= 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		c &= 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		c &= 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/*
 * The one escaper of label values: the exposition format's \\, \" and
 * \n; any other control character and every byte that is not valid UTF-8
 * becomes U+FFFD, so the exposition stays valid UTF-8 (Prometheus rejects
 * the whole scrape otherwise) and prints safely on a terminal.
 */
static void label_value(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t cp;
	size_t n;

	while (*s) {
		n = utf8_seq(s, &cp);
		if (*s == '\\' || *s == '"') {
			fputc('\\', f);
			fputc(*s, f);
		} else if (*s == '\n') {
			fputs("\\n", f);
		} else if (!n || is_control(cp)) {
			fputs("\xef\xbf\xbd", f);
		} else {
			fwrite(s, 1, n, f);
		}
		s += n ? n : 1;
	}
}

/* HELP text: \\ and \n escaped, the rest as label_value() makes it. */
static void help_text(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t cp;
	size_t n;

	while (*s) {
		n = utf8_seq(s, &cp);
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (!n || is_control(cp))
			fputs("\xef\xbf\xbd", f);
		else
			fwrite(s, 1, n, f);
		s += n ? n : 1;
	}
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s ", name);
	help_text(f, help);
	fprintf(f, "\n# TYPE %s %s\n", name, type);
}

/* "name{l1="v1",...} " (no braces without labels); the value follows. */
static void sample(FILE *f, const char *name, const struct label *l, size_t n)
{
	size_t i;

	fputs(name, f);
	for (i = 0; i < n; i++) {
		fprintf(f, "%c%s=\"", i ? ',' : '{', l[i].name);
		label_value(f, l[i].value);
		fputc('"', f);
	}
	fputs(n ? "} " : " ", f);
}

static void sample_u64(FILE *f, const char *name, const struct label *l, size_t n, uint64_t v)
{
	sample(f, name, l, n);
	fprintf(f, "%" PRIu64 "\n", v);
}

/* ---- processes ---- */

#define PROC_KEYS 3	/* pid, start_time_ns, heap: a process's series' key */

/* A process's labels, in bufs that live as long as @l is used; room for
 * two more after the key. */
struct proc_labels {
	char pid[16], start[24], heap[20];
	struct label l[PROC_KEYS + 2];
};

static struct label *proc_labels(struct proc_labels *pl, const struct blamer_snap_process *p)
{
	snprintf(pl->pid, sizeof(pl->pid), "%" PRId32, p->pid);
	snprintf(pl->start, sizeof(pl->start), "%" PRIu64, p->start_time_ns);
	snprintf(pl->heap, sizeof(pl->heap), "%" PRIx64, p->heap_key);
	pl->l[0] = (struct label){ "pid", pl->pid };
	pl->l[1] = (struct label){ "start_time_ns", pl->start };
	pl->l[2] = (struct label){ "heap", pl->heap };
	return pl->l;
}

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

struct exp {
	FILE *f;
	const struct blamer_snapshot *s;
	const struct blamer_snap_process **procs;
	size_t nprocs;
};

/* One gauge per process: @value(p), skipping those @skip(p) says to. */
static void per_process(struct exp *e, const char *name, const char *help,
			uint64_t (*value)(const struct blamer_snap_process *p),
			bool (*skip)(const struct blamer_snap_process *p))
{
	struct proc_labels pl;
	size_t i;

	family(e->f, name, "gauge", help);
	for (i = 0; i < e->nprocs; i++)
		if (!skip || !skip(e->procs[i]))
			sample_u64(e->f, name, proc_labels(&pl, e->procs[i]), PROC_KEYS,
				   value(e->procs[i]));
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
	return p->health == BLAMER_HEALTH_SUMMARY || p->health == BLAMER_HEALTH_EMPTY ||
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

/*
 * blamer_process_info: what may change about a process or is only
 * claimed, so it is kept off the counters' labels. identity says whose
 * word pid, uid, start time and comm are: "kernel" (device backend) or
 * "claimed" (dir backend: the heap's file name and its own record, which
 * any process of the user could have written).
 */
static void process_info(struct exp *e)
{
	const char *name = "blamer_process_info";
	struct proc_labels pl;
	size_t i;

	family(e->f, name, "gauge",
	       "1 per heap: its comm, and whether its identity is the kernel's word (identity=\"kernel\") or the heap's claim (identity=\"claimed\").");
	for (i = 0; i < e->nprocs; i++) {
		const struct blamer_snap_process *p = e->procs[i];
		struct label *l = proc_labels(&pl, p);

		l[PROC_KEYS] = (struct label){ "comm", p->comm };
		l[PROC_KEYS + 1] = (struct label){ "identity", p->kernel_facts ? "kernel" : "claimed" };
		sample_u64(e->f, name, l, PROC_KEYS + 2, 1);
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
 * NFIXED on: units whose family names are equal share one family (their
 * unit label tells them apart). *nfam gets the number of families.
 */
static struct named *named_units(const struct blamer_snap_process *const *procs,
				 size_t nprocs, size_t *n, size_t *nfam)
{
	static const char *const suffix[] = { "_total", "_seconds_total", "_bytes_total" };
	const struct blamer_snap_unit_def **defs;
	struct named *v;
	size_t i, j, k = 0, nd = 0;

	for (i = 0; i < nprocs; i++)
		nd += procs[i]->nunit_defs;
	defs = malloc((nd + 1) * sizeof(*defs));
	v = malloc((nd + 1) * sizeof(*v));
	if (!defs || !v) {
		free(defs);
		free(v);
		return NULL;
	}
	for (i = 0, nd = 0; i < nprocs; i++)
		for (j = 0; j < procs[i]->nunit_defs; j++)
			defs[nd++] = &procs[i]->unit_defs[j];
	qsort(defs, nd, sizeof(*defs), def_cmp);
	for (i = 0; i < nd; i++) {
		if (k && v[k - 1].def->unit == defs[i]->unit)
			continue;
		v[k].def = defs[i];
		snprintf(v[k].fam, sizeof(v[k].fam), "blamer_app_%s%s", defs[i]->name,
			 suffix[defs[i]->base <= BLAMER_BASE_BYTES ? defs[i]->base : 0]);
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

/* One (process, path, unit) value, its family and whether it is in
 * nanoseconds (exported as seconds). */
struct entry {
	size_t fam;
	size_t proc;
	const struct blamer_snap_path *path;
	uint32_t unit;
	bool ns;
	uint64_t value;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c;

	if (x->fam != y->fam)
		return x->fam < y->fam ? -1 : 1;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	c = blamer_path_cmp(x->path->nodes, x->path->depth, y->path->nodes, y->path->depth);
	if (c)
		return c;
	return (x->unit > y->unit) - (x->unit < y->unit);
}

/* Names of the snapshot's nodes, and whether another node has the same. */
struct names {
	const struct blamer_snapshot *s;
	bool *shared;		/* by index of s->nodes */
};

static int node_name_cmp(const void *a, const void *b)
{
	const struct blamer_snap_node *x = *(const struct blamer_snap_node *const *)a;
	const struct blamer_snap_node *y = *(const struct blamer_snap_node *const *)b;

	return strcmp(x->name, y->name);
}

static bool names_init(struct names *nm, const struct blamer_snapshot *s)
{
	const struct blamer_snap_node **v = malloc((s->nnodes + 1) * sizeof(*v));
	size_t i;

	nm->s = s;
	nm->shared = calloc(s->nnodes + 1, sizeof(*nm->shared));
	if (!v || !nm->shared) {
		free(v);
		free(nm->shared);
		return false;
	}
	for (i = 0; i < s->nnodes; i++)
		v[i] = &s->nodes[i];
	qsort(v, s->nnodes, sizeof(*v), node_name_cmp);
	for (i = 1; i < s->nnodes; i++)
		if (v[i]->name[0] && !strcmp(v[i - 1]->name, v[i]->name))
			nm->shared[v[i - 1] - s->nodes] = nm->shared[v[i] - s->nodes] = true;
	free(v);
	return true;
}

/* The node of @id in s->nodes (sorted by id), or NULL. */
static const struct blamer_snap_node *node_find(const struct blamer_snapshot *s, uint64_t id)
{
	size_t lo = 0, hi = s->nnodes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->nodes[mid].id == id)
			return &s->nodes[mid];
		if (s->nodes[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Enough for 8 elements of 32 bytes each percent-encoded plus an id. */
#define PATH_LABEL_MAX (BLAMER_SNAP_MAX_DEPTH * (3 * 32 + 24) + 1)

/*
 * One path element, appended at @o: a node's name, percent-encoded so
 * that '/' separates elements only ('%', '/' and '@' in a name become
 * %25, %2F and %40, as do control characters and bytes that are not
 * valid UTF-8), a leading "0x" written %30x (so a name never looks like
 * an unnamed node), then "@0x<id>" if another node has the same name; a
 * node without a name is "0x<id>". Distinct id paths give distinct
 * labels.
 */
static char *path_element(char *o, const struct names *nm, uint64_t id)
{
	const struct blamer_snap_node *n = node_find(nm->s, id);
	const unsigned char *s;
	uint32_t cp;
	size_t len;

	*o++ = '/';
	if (!n || !n->name[0])
		return o + sprintf(o, "0x%" PRIx64, id);
	s = (const unsigned char *)n->name;
	if (s[0] == '0' && s[1] == 'x') {
		o += sprintf(o, "%%30");
		s++;
	}
	while (*s) {
		len = utf8_seq(s, &cp);
		if (len && !is_control(cp) && *s != '%' && *s != '/' && *s != '@') {
			memcpy(o, s, len);
			o += len;
			s += len;
		} else {
			for (len = len ? len : 1; len; len--, s++)
				o += sprintf(o, "%%%02X", *s);
		}
	}
	if (nm->shared[n - nm->s->nodes])
		o += sprintf(o, "@0x%" PRIx64, id);
	return o;
}

static void path_label(char *buf, const struct names *nm, const struct blamer_snap_path *p)
{
	char *o = buf;
	uint32_t i;

	for (i = 0; i < p->depth && i < BLAMER_SNAP_MAX_DEPTH; i++)
		o = path_element(o, nm, p->nodes[i]);
	*o = '\0';
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

static void value(FILE *f, bool ns, uint64_t v)
{
	if (ns)
		fprintf(f, "%" PRIu64 ".%09" PRIu64 "\n", v / 1000000000u, v % 1000000000u);
	else
		fprintf(f, "%" PRIu64 "\n", v);
}

static int attribution(struct exp *e)
{
	struct names nm = { 0 };
	struct named *nv;
	struct entry *v;
	size_t i, j, k, n = 0, nn = 0, nfam = NFIXED;
	char path[PATH_LABEL_MAX], unit[16], help[160];
	int ret = -ENOMEM;

	for (i = 0; i < e->nprocs; i++)
		for (j = 0; j < e->procs[i]->npaths; j++)
			n += e->procs[i]->paths[j].nvalues;
	nv = named_units(e->procs, e->nprocs, &nn, &nfam);
	v = malloc((n + 1) * sizeof(*v));
	if (!nv || !v || !names_init(&nm, e->s))
		goto out;
	for (i = 0, n = 0; i < e->nprocs; i++) {
		const struct blamer_snap_process *p = e->procs[i];

		for (j = 0; j < p->npaths; j++) {
			for (k = 0; k < p->paths[j].nvalues && k < BLAMER_SNAP_MAX_UNITS; k++) {
				struct entry *x = &v[n++];

				x->proc = i;
				x->path = &p->paths[j];
				x->unit = p->paths[j].units[k];
				x->value = p->paths[j].values[k];
				x->fam = unit_family(nv, nn, x->unit, &x->ns);
			}
		}
	}
	qsort(v, n, sizeof(*v), entry_cmp);
	for (i = 0; i < n; i = j) {
		const char *fam;
		struct proc_labels pl;
		struct label *l;
		uint64_t sum = v[i].value;
		const struct named *d = NULL;

		/* equal (process, path, unit): one series, the sum (as the
		 * attribution view adds them) */
		for (j = i + 1; j < n && !entry_cmp(&v[i], &v[j]); j++)
			sum += v[j].value;
		if (v[i].fam < NFIXED) {
			fam = fixed_families[v[i].fam].name;
		} else {
			d = named_find(nv, nn, v[i].unit);
			fam = d->fam;
		}
		if (!i || v[i - 1].fam != v[i].fam) {
			if (d) {
				snprintf(help, sizeof(help),
					 "Application unit %s (%s) a process attributed to a DAG path.",
					 d->def->name,
					 d->def->base == BLAMER_BASE_SECONDS ? "seconds" :
					 d->def->base == BLAMER_BASE_BYTES ? "bytes" : "a count");
				family(e->f, fam, "counter", help);
			} else {
				family(e->f, fam, "counter", fixed_families[v[i].fam].help);
			}
		}
		l = proc_labels(&pl, e->procs[v[i].proc]);
		path_label(path, &nm, v[i].path);
		snprintf(unit, sizeof(unit), "%" PRIu32, v[i].unit);
		l[PROC_KEYS] = (struct label){ "path", path };
		l[PROC_KEYS + 1] = (struct label){ "unit", unit };
		sample(e->f, fam, l, PROC_KEYS + (v[i].fam >= FAM_VALUE ? 2 : 1));
		value(e->f, v[i].ns, sum);
	}
	ret = 0;
out:
	free(nm.shared);
	free(nv);
	free(v);
	return ret;
}

int blamer_snapshot_write_prometheus(const struct blamer_snapshot *s, FILE *f)
{
	struct label state[1] = { { "state", "live" } };
	struct exp e = { .f = f, .s = s };
	size_t i, live = 0, dead = 0;
	int ret;

	e.procs = export_procs(s, &e.nprocs);
	if (!e.procs)
		return -ENOMEM;
	for (i = 0; i < e.nprocs; i++) {
		if (e.procs[i]->state == BLAMER_PROC_LIVE)
			live++;
		else
			dead++;
	}
	family(f, "blamer_heaps", "gauge", "Heaps visible to the reader, by owner state.");
	sample_u64(f, "blamer_heaps", state, 1, live);
	state[0].value = "dead";
	sample_u64(f, "blamer_heaps", state, 1, dead);
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
	free(e.procs);
	if (ret)
		return ret;
	return ferror(f) ? -EIO : 0;
}
