// SPDX-License-Identifier: MIT
/*
 * Prometheus text exposition (format 0.0.4) of a snapshot, for a scrape
 * of `blamer export --listen` or node_exporter's textfile collector.
 *
 * The counter model (Documentation/reader.rst, "Prometheus"): every
 * series belongs to one process, keyed by pid, start_time_ns (the
 * PID-reuse guard), heap (the heap key) and identity (kernel fact or
 * heap claim), labels that never change for as long as the heap exists,
 * live or dead. Counters are a process's own
 * sums, which only grow while it runs and stay as they were once it died,
 * until its heap is released; then the series ends (which PromQL's
 * rate()/increase() handle), and a new worker is a new series. So no
 * counter ever goes down: `sum without(pid, start_time_ns, heap,
 * identity)` is the machine's total. What may change (comm) is on
 * blamer_process_info only.
 *
 * Every string from outside goes through escape() (label values and HELP
 * text: valid UTF-8, no control characters, \\ \" \n escaped), node
 * names first through make_element() too (percent-encoding that keeps
 * distinct node paths distinct labels). Every series is written once: paths are
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
 * The exposition is made in memory and written with one fwrite(): a
 * scrape of 1,000 processes is some 70,000 lines, and per-character
 * stdio calls would cost more than the snapshot.
 */
struct out {
	char *p;
	size_t len, cap;
	bool oom;
	FILE *f;	/* if set, written out in OUT_CHUNK pieces: memory stays flat */
};

#define OUT_CHUNK	(256u << 10)

static bool out_room(struct out *o, size_t n)
{
	size_t cap;
	char *np;

	if (o->len + n <= o->cap)
		return true;
	if (o->f && o->len) {
		if (fwrite(o->p, 1, o->len, o->f) != o->len)
			o->oom = true;	/* ferror() says which */
		o->len = 0;
		if (n <= o->cap)
			return !o->oom;
	}
	if (o->oom)
		return false;
	for (cap = o->cap ? o->cap : o->f ? OUT_CHUNK : 65536; cap < o->len + n; cap *= 2)
		;
	np = realloc(o->p, cap);
	if (!np) {
		o->oom = true;
		return false;
	}
	o->p = np;
	o->cap = cap;
	return true;
}

static void put(struct out *o, const void *s, size_t n)
{
	if (out_room(o, n)) {
		memcpy(o->p + o->len, s, n);
		o->len += n;
	}
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void putc_(struct out *o, char c)
{
	if (out_room(o, 1))
		o->p[o->len++] = c;
}

static void put_u64(struct out *o, uint64_t v)
{
	char b[20];
	size_t i = sizeof(b);

	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(o, b + i, sizeof(b) - i);
}

/* Nanoseconds as seconds, exactly: "S.NNNNNNNNN". */
static void put_ns(struct out *o, uint64_t v)
{
	char b[9];
	uint64_t f = v % 1000000000u;
	int i;

	put_u64(o, v / 1000000000u);
	for (i = 8; i >= 0; i--, f /= 10)
		b[i] = (char)('0' + f % 10);
	putc_(o, '.');
	put(o, b, sizeof(b));
}

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

/* Bytes every escaper copies as they are: printable ASCII but \\ and ". */
static bool plain(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != '\\' && c != '"';
}

/*
 * The one escaper of label values: the exposition format's \\, \" and
 * \n; any other control character and every byte that is not valid UTF-8
 * becomes U+FFFD, so the exposition stays valid UTF-8 (Prometheus rejects
 * the whole scrape otherwise) and prints safely on a terminal. @help: HELP
 * text, where " stays as it is.
 */
static void escape(struct out *o, const char *str, bool help)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t cp;
	size_t n;

	while (*s) {
		for (n = 0; plain(s[n]); n++)
			;
		put(o, s, n);
		s += n;
		if (!*s)
			break;
		n = utf8_seq(s, &cp);
		if (*s == '\\' || (*s == '"' && !help)) {
			putc_(o, '\\');
			putc_(o, (char)*s);
		} else if (*s == '"') {
			putc_(o, '"');
		} else if (*s == '\n') {
			puts_(o, "\\n");
		} else if (!n || is_control(cp)) {
			puts_(o, "\xef\xbf\xbd");
		} else {
			put(o, s, n);
		}
		s += n ? n : 1;
	}
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	puts_(o, "# HELP ");
	puts_(o, name);
	putc_(o, ' ');
	escape(o, help, true);
	puts_(o, "\n# TYPE ");
	puts_(o, name);
	putc_(o, ' ');
	puts_(o, type);
	putc_(o, '\n');
}

/* Labels "l1="v1",..." (no braces). */
static void labels(struct out *o, const struct label *l, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (i)
			putc_(o, ',');
		puts_(o, l[i].name);
		put(o, "=\"", 2);
		escape(o, l[i].value, false);
		putc_(o, '"');
	}
}

static void sample_u64(struct out *o, const char *name, const struct label *l, size_t n,
		       uint64_t v)
{
	puts_(o, name);
	if (n) {
		putc_(o, '{');
		labels(o, l, n);
		putc_(o, '}');
	}
	putc_(o, ' ');
	put_u64(o, v);
	putc_(o, '\n');
}

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
	struct out o;
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
	puts_(&e->o, name);
	putc_(&e->o, '{');
	puts_(&e->o, e->keys[i]);
}

/* One gauge per process: @value(p), skipping those @skip(p) says to. */
static void per_process(struct exp *e, const char *name, const char *help,
			uint64_t (*value)(const struct blamer_snap_process *p),
			bool (*skip)(const struct blamer_snap_process *p))
{
	size_t i;

	family(&e->o, name, "gauge", help);
	for (i = 0; i < e->nprocs; i++) {
		if (skip && skip(e->procs[i]))
			continue;
		proc_sample(e, name, i);
		put(&e->o, "} ", 2);
		put_u64(&e->o, value(e->procs[i]));
		putc_(&e->o, '\n');
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

	family(&e->o, name, "gauge",
	       "1 per heap, with its comm; identity=\"kernel\": pid, start time and comm are the kernel's word, \"claimed\": the heap's own.");
	for (i = 0; i < e->nprocs; i++) {
		struct label l[1] = { { "comm", e->procs[i]->comm } };

		proc_sample(e, name, i);
		putc_(&e->o, ',');
		labels(&e->o, l, 1);
		put(&e->o, "} 1\n", 4);
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
	for (i = 0; i < nd; i++)
		defs[i] = &s->unit_defs[i];
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

/* Enough for one element: 32 bytes each percent-encoded, "@0x" and an id. */
#define ELEM_MAX (3 * 32 + 24)

/*
 * The snapshot's nodes as path elements, each made once: whether
 * another node has the same name, and its element when made.
 */
struct names {
	const struct blamer_snapshot *s;
	bool *shared;		/* by index of s->nodes */
	uint32_t *off;		/* by index: where its element is in pool, +1; 0: not yet */
	struct out pool;	/* the elements made, NUL-terminated */
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
	nm->off = calloc(s->nnodes + 1, sizeof(*nm->off));
	if (!v || !nm->shared || !nm->off) {
		free(v);
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

static void names_free(struct names *nm)
{
	free(nm->shared);
	free(nm->off);
	free(nm->pool.p);
}

/* The index of node @id in s->nodes (sorted by id), or SIZE_MAX. */
static size_t node_find(const struct blamer_snapshot *s, uint64_t id)
{
	size_t lo = 0, hi = s->nnodes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->nodes[mid].id == id)
			return mid;
		if (s->nodes[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

/*
 * A named node's path element into @o (ELEM_MAX bytes): its name,
 * percent-encoded so that '/' separates elements only ('%', '/' and '@'
 * in a name become %25, %2F and %40, as do control characters and bytes
 * that are not valid UTF-8), a leading "0x" written %30x (so a name never
 * looks like an unnamed node), then "@0x<id>" if another node has the
 * same name. A node without a name is "0x<id>". So distinct paths of ids
 * give distinct labels. Returns the length.
 */
static size_t make_element(char *o, const struct blamer_snap_node *n, bool shared)
{
	const unsigned char *s = (const unsigned char *)n->name;
	char *start = o;
	uint32_t cp;
	size_t len;

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
	if (shared)
		o += sprintf(o, "@0x%" PRIx64, n->id);
	return (size_t)(o - start);
}

/* path="/e/e/..." (escaped as every label value). */
static void path_label(struct out *o, struct names *nm, const struct blamer_snap_path *p)
{
	char id[24];
	uint32_t i;

	put(o, "path=\"", 6);
	for (i = 0; i < p->depth && i < BLAMER_SNAP_MAX_DEPTH; i++) {
		size_t k = node_find(nm->s, p->nodes[i]);

		putc_(o, '/');
		if (k == SIZE_MAX || !nm->s->nodes[k].name[0]) {
			put(o, id, (size_t)snprintf(id, sizeof(id), "0x%" PRIx64, p->nodes[i]));
			continue;
		}
		if (!nm->off[k] && nm->pool.len < UINT32_MAX - ELEM_MAX &&
		    out_room(&nm->pool, ELEM_MAX + 1)) {
			char *at = nm->pool.p + nm->pool.len;
			size_t n = make_element(at, &nm->s->nodes[k], nm->shared[k]);

			at[n] = '\0';
			nm->off[k] = (uint32_t)nm->pool.len + 1;
			nm->pool.len += n + 1;
		}
		if (nm->off[k]) {
			escape(o, nm->pool.p + nm->off[k] - 1, false);	/* may hold " or \ */
		} else {
			char tmp[ELEM_MAX + 1];

			tmp[make_element(tmp, &nm->s->nodes[k], nm->shared[k])] = '\0';
			escape(o, tmp, false);
		}
	}
	putc_(o, '"');
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
static int attribution(struct exp *e)
{
	struct names nm = { 0 };
	struct named *nv;
	struct entry *v;
	size_t *at, *end, i, j, k, n = 0, nn = 0, nfam = NFIXED, f;
	char help[160];
	int ret = -ENOMEM;

	for (i = 0; i < e->nprocs; i++)
		for (j = 0; j < e->procs[i]->npaths; j++)
			n += e->procs[i]->paths[j].nvalues;
	nv = named_units(e->s, &nn, &nfam);
	v = malloc((n + 1) * sizeof(*v));
	at = malloc((e->nprocs + 1) * sizeof(*at));
	end = malloc((e->nprocs + 1) * sizeof(*end));
	if (!nv || !v || !at || !end || !names_init(&nm, e->s))
		goto out;
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
					family(&e->o, fam, "counter",
					       d ? help : fixed_families[f].help);
				}
				proc_sample(e, fam, i);
				putc_(&e->o, ',');
				path_label(&e->o, &nm, &paths[x->path]);
				if (f >= FAM_VALUE) {
					put(&e->o, ",unit=\"", 7);
					put_u64(&e->o, x->unit);
					putc_(&e->o, '"');
				}
				put(&e->o, "} ", 2);
				if (x->ns)
					put_ns(&e->o, sum);
				else
					put_u64(&e->o, sum);
				putc_(&e->o, '\n');
			}
		}
	}
	ret = 0;
out:
	names_free(&nm);
	free(nv);
	free(v);
	free(at);
	free(end);
	return ret;
}

static int write_all(const struct blamer_snapshot *s, struct out *o)
{
	struct label state[1] = { { "state", "live" } };
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
	family(&e.o, "blamer_heaps", "gauge", "Heaps visible to the reader, by owner state.");
	sample_u64(&e.o, "blamer_heaps", state, 1, live);
	state[0].value = "dead";
	sample_u64(&e.o, "blamer_heaps", state, 1, dead);
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
	struct out o = { .p = *buf, .cap = *cap };
	int ret = write_all(s, &o);

	*buf = o.p;
	*cap = o.cap;
	*len = ret ? 0 : o.len;
	return ret;
}

int blamer_snapshot_write_prometheus(const struct blamer_snapshot *s, FILE *f)
{
	struct out o = { .f = f };
	int ret = write_all(s, &o);

	if (!ret && o.len && fwrite(o.p, 1, o.len, f) != o.len)
		ret = -EIO;
	if (ferror(f))
		ret = -EIO;
	free(o.p);
	return ret;
}
