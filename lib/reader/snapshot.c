// SPDX-License-Identifier: MIT
/*
 * The snapshot model as the backends and the parser fill it in: adding a
 * process, noting what was wrong with its heap (the worst health wins,
 * the first reason is kept), directory entries that were skipped,
 * one-line errors for the caller, and freeing it all.
 *
 * Decoded data (user-data fields, their names and values, activity
 * stacks, each process's arrays at their final size, the tree's values)
 * comes from one arena per snapshot: a few large blocks instead of a malloc() per
 * string, freed at once. It is also what lets a record referenced many
 * times be decoded once: every reference shows the same memory. A
 * long-lived reader's snapshots hand their blocks on to the next one
 * through the reader's pool: memory already faulted in, where a fresh
 * malloc() of megabytes would fault every page again (the cost that
 * dominated repeated snapshots of many heaps). At most RD_POOL_KEEP bytes
 * are handed on (10,000 of the benchmark's heaps decode to about 220 MB): one
 * hostile snapshot does not stay for the reader's life.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHUNK_MIN	(16u << 10)
#define CHUNK_MAX	(1u << 20)
#define RD_POOL_KEEP	(256u << 20)

struct rd_chunk {
	struct rd_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct rd_pool {
	_Atomic(struct rd_chunk *) spare;	/* the last freed snapshot's blocks */
	atomic_uint refs;
};

/* The public snapshot and what only the reader sees of it. */
struct rd_snapshot {
	struct blamer_snapshot pub;
	struct rd_chunk *chunks;	/* newest first */
	struct rd_chunk *reuse;		/* the pool's blocks not used yet */
	struct rd_pool *pool;
	size_t next_cap;
};

static void free_chunks(struct rd_chunk *c)
{
	struct rd_chunk *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
}

struct rd_pool *rd_pool_new(void)
{
	struct rd_pool *pool = calloc(1, sizeof(*pool));

	if (pool)
		atomic_init(&pool->refs, 1);
	return pool;
}

void rd_pool_put(struct rd_pool *pool)
{
	if (pool && atomic_fetch_sub(&pool->refs, 1) == 1) {
		free_chunks(atomic_load(&pool->spare));
		free(pool);
	}
}

/* A block of the pool's with room for @n bytes, taken off the list. */
static struct rd_chunk *reuse(struct rd_snapshot *rs, size_t n)
{
	struct rd_chunk **at, *c;

	for (at = &rs->reuse; (c = *at); at = &c->next) {
		if (c->cap >= n) {
			*at = c->next;
			c->used = 0;
			return c;
		}
	}
	return NULL;
}

static struct rd_snapshot *priv(struct blamer_snapshot *s)
{
	return (struct rd_snapshot *)((char *)s - offsetof(struct rd_snapshot, pub));
}

struct blamer_snapshot *rd_snapshot_new(struct rd_pool *pool)
{
	struct rd_snapshot *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->next_cap = CHUNK_MIN;
	if (pool) {
		atomic_fetch_add(&pool->refs, 1);
		rs->pool = pool;
		rs->reuse = atomic_exchange(&pool->spare, NULL);
	}
	return &rs->pub;
}

void *rd_alloc(struct blamer_snapshot *s, size_t n)
{
	struct rd_snapshot *rs = priv(s);
	struct rd_chunk *c = rs->chunks;
	size_t cap;
	void *p;

	n = (n + 7) & ~(size_t)7;
	if (!n)
		n = 8;
	if (!c || c->cap - c->used < n) {
		/* big requests get a chunk of their own, behind the current one */
		cap = n > rs->next_cap / 4 ? n : rs->next_cap;
		c = reuse(rs, n);
		if (c) {
			c->next = rs->chunks;	/* a block of its size: current */
			rs->chunks = c;
			goto take;
		}
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		if (cap == n && rs->chunks) {
			c->next = rs->chunks->next;
			rs->chunks->next = c;
		} else {
			c->next = rs->chunks;
			rs->chunks = c;
			if (rs->next_cap < CHUNK_MAX)
				rs->next_cap *= 2;
		}
	}
take:
	p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

void rd_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

struct blamer_snap_process *rd_new_process(struct blamer_snapshot *s)
{
	struct blamer_snap_process *np;

	if ((s->nprocs & (s->nprocs - 1)) == 0) {
		np = realloc(s->procs, (s->nprocs ? s->nprocs * 2 : 1) * sizeof(*np));
		if (!np)
			return NULL;
		s->procs = np;
	}
	np = &s->procs[s->nprocs++];
	memset(np, 0, sizeof(*np));
	return np;
}

void rd_drop_last_process(struct blamer_snapshot *s)
{
	if (!s->nprocs)
		return;
	rd_process_free(&s->procs[--s->nprocs]);
}

void rd_skip(struct blamer_snapshot *s, const char *name, const char *fmt, ...)
{
	struct blamer_snap_skipped *k;
	va_list ap;
	size_t i;

	s->skipped_total++;
	if (s->nskipped >= RD_MAX_SKIPPED)
		return;
	if (!s->skipped) {
		s->skipped = calloc(RD_MAX_SKIPPED, sizeof(*s->skipped));
		if (!s->skipped)
			return;
	}
	k = &s->skipped[s->nskipped++];
	/* a file name is anyone's text: printable ASCII only */
	for (i = 0; i < sizeof(k->name) - 1 && name[i]; i++)
		k->name[i] = name[i] < 0x20 || name[i] >= 0x7f ? '?' : name[i];
	k->name[i] = '\0';
	va_start(ap, fmt);
	vsnprintf(k->why, sizeof(k->why), fmt, ap);
	va_end(ap);
}

static int severity(enum blamer_health h)
{
	switch (h) {
	case BLAMER_HEALTH_OK: return 0;
	case BLAMER_HEALTH_UNCHECKED: return 1;
	case BLAMER_HEALTH_EMPTY: return 2;
	case BLAMER_HEALTH_TORN: return 3;
	case BLAMER_HEALTH_TRUNCATED: return 4;
	case BLAMER_HEALTH_CORRUPT: return 5;
	case BLAMER_HEALTH_UNREADABLE: return 6;
	}
	return 6;
}

void rd_problem(struct blamer_snap_process *p, enum blamer_health h,
		const char *fmt, ...)
{
	va_list ap;

	if (severity(h) > severity(p->health))
		p->health = h;
	if (p->problem[0] || !fmt)
		return;
	va_start(ap, fmt);
	vsnprintf(p->problem, sizeof(p->problem), fmt, ap);
	va_end(ap);
}

/*
 * Appends @d, @uid's, to s->uid_unit_defs: capacity 8, then doubled at
 * each power of two (rd_merge_unit_defs() may cut the count, never the
 * capacity). False out of memory.
 */
bool rd_add_unit_def(struct blamer_snapshot *s, uint32_t uid, const struct blamer_snap_unit_def *d)
{
	struct blamer_snap_uid_unit_def *nd;
	size_t n = s->nuid_unit_defs;

	if (!n || (n >= 8 && !(n & (n - 1)))) {
		nd = realloc(s->uid_unit_defs, (n ? 2 * n : 8) * sizeof(*nd));
		if (!nd)
			return false;
		s->uid_unit_defs = nd;
	}
	s->uid_unit_defs[s->nuid_unit_defs].uid = uid;
	s->uid_unit_defs[s->nuid_unit_defs++].def = *d;
	return true;
}

/* Where rd_process_copy() puts things: @s's arena, or (s NULL) nowhere,
 * counting what it would take. */
struct copier {
	struct blamer_snapshot *s;
	size_t need;
	bool oom;
};

/* A copy of @n elements of @elsz at @src (NULL stays NULL). */
static void *dup_array(struct copier *c, const void *src, size_t n, size_t elsz)
{
	size_t len = (n ? n : 1) * elsz;
	void *d;

	if (!src)
		return NULL;
	if (!c->s) {
		c->need += (len + 7) & ~(size_t)7;	/* as rd_alloc() rounds */
		return (void *)src;
	}
	d = rd_alloc(c->s, len);
	if (!d) {
		c->oom = true;
		return NULL;
	}
	memcpy(d, src, n * elsz);
	return d;
}

/* @f's fields, their names and values, made the copier's. */
static void dup_fields(struct copier *c, struct blamer_snap_fields *f)
{
	size_t i;

	f->v = dup_array(c, f->v, f->n, sizeof(*f->v));
	for (i = 0; f->v && i < f->n; i++) {
		struct blamer_snap_field *x = &f->v[i];

		if (x->name)
			x->name = dup_array(c, x->name, strlen(x->name) + 1, 1);
		if (x->bytes)	/* RAW and STRING: len bytes and a NUL */
			x->bytes = dup_array(c, x->bytes, x->len + 1, 1);
	}
}

/* A string and its NUL (NULL stays NULL). */
static char *dup_str(struct copier *c, const char *str)
{
	return str ? dup_array(c, str, strlen(str) + 1, 1) : NULL;
}

/* @from's metric definitions and series, made the copier's: each series
 * names the copy of its definition. */
static void dup_metrics(struct copier *c, struct blamer_snap_process *to,
			const struct blamer_snap_process *from)
{
	size_t i, k;

	to->metric_defs = dup_array(c, from->metric_defs, from->nmetric_defs,
				    sizeof(*to->metric_defs));
	for (i = 0; to->metric_defs && i < to->nmetric_defs; i++) {
		struct blamer_snap_metric_def *d = &to->metric_defs[i];

		d->help = dup_str(c, d->help);
		for (k = 0; k < d->nlabels && k < BLAMER_METRIC_LABELS_MAX; k++)
			d->labels[k] = dup_str(c, d->labels[k]);
		d->upper = dup_array(c, d->upper, d->nbuckets, sizeof(*d->upper));
	}
	to->metrics = dup_array(c, from->metrics, from->nmetrics, sizeof(*to->metrics));
	for (i = 0; to->metrics && i < to->nmetrics; i++) {
		struct blamer_snap_metric *m = &to->metrics[i];
		const struct blamer_snap_metric_def *d = m->def;

		for (k = 0; d && k < d->nlabels && k < BLAMER_METRIC_LABELS_MAX; k++)
			m->values[k] = dup_str(c, m->values[k]);
		m->exact = dup_array(c, m->exact, m->nexact, sizeof(*m->exact));
		m->buckets = dup_array(c, m->buckets, d ? d->nbuckets : 0, sizeof(*m->buckets));
		/* the copy's definition; a dry run (no snapshot) keeps @from's */
		if (d && c->s && to->metric_defs)
			m->def = to->metric_defs + (d - from->metric_defs);
	}
}

static void copy_process(struct copier *c, struct blamer_snap_process *to,
			 const struct blamer_snap_process *from)
{
	size_t i;

	*to = *from;
	dup_fields(c, &to->user_data);
	dup_fields(c, &to->global_data);
	to->threads = dup_array(c, from->threads, from->nthreads, sizeof(*to->threads));
	for (i = 0; to->threads && i < to->nthreads; i++) {
		struct blamer_snap_thread *t = &to->threads[i];
		size_t j;

		t->acts = dup_array(c, t->acts, t->nacts, sizeof(*t->acts));
		for (j = 0; t->acts && j < t->nacts; j++)
			dup_fields(c, &t->acts[j].fields);
	}
	to->modules = dup_array(c, from->modules, from->nmodules, sizeof(*to->modules));
	to->logs = dup_array(c, from->logs, from->nlogs, sizeof(*to->logs));
	to->children = dup_array(c, from->children, from->nchildren, sizeof(*to->children));
	to->nodes = dup_array(c, from->nodes, from->nnodes, sizeof(*to->nodes));
	to->edges = dup_array(c, from->edges, from->nedges, sizeof(*to->edges));
	to->paths = dup_array(c, from->paths, from->npaths, sizeof(*to->paths));
	to->module_spans = dup_array(c, from->module_spans, from->nmodule_spans,
				     sizeof(*to->module_spans));
	dup_metrics(c, to, from);
}

bool rd_process_copy(struct blamer_snapshot *s, struct blamer_snap_process *to,
		     const struct blamer_snap_process *from)
{
	struct copier c = { .s = s };

	copy_process(&c, to, from);
	if (c.oom)
		rd_process_free(to);
	return !c.oom;
}

size_t rd_process_copy_size(const struct blamer_snap_process *p)
{
	struct blamer_snap_process scratch;
	struct copier c = { 0 };

	/* a dry run: nested arrays are read where they are */
	copy_process(&c, &scratch, p);
	return c.need;
}

void rd_snapshot_reserve(struct blamer_snapshot *s, size_t n)
{
	if (n)
		priv(s)->next_cap = n;
}

size_t rd_snapshot_bytes(struct blamer_snapshot *s)
{
	struct rd_chunk *c;
	size_t n = 0;

	for (c = priv(s)->chunks; c; c = c->next)
		n += c->cap;
	return n;
}

/* Everything a process holds is the arena's (rd_push() grows its arrays
 * there): nothing of its own to free. */
void rd_process_free(struct blamer_snap_process *p)
{
	memset(p, 0, sizeof(*p));
}

void blamer_snapshot_free(struct blamer_snapshot *s)
{
	struct rd_snapshot *rs;
	struct rd_chunk *c;
	size_t i;

	if (!s)
		return;
	rs = priv(s);
	for (i = 0; i < s->nprocs; i++)
		rd_process_free(&s->procs[i]);
	free(s->procs);
	free(s->totals);
	free(s->units);
	free(s->tree);
	free(s->nodes);
	free(s->skipped);
	free(s->unit_defs);
	free(s->uid_unit_defs);
	free(s->uid_nodes);
	free(s->series);
	free(s->overflows);
	free(s->roles);
	/* the blocks go to the pool for the next snapshot (any there
	 * before are freed: one snapshot's worth is kept) */
	if (rs->pool) {
		size_t kept = 0;

		for (c = rs->chunks; c && c->next; c = c->next)
			kept += c->cap;
		if (c) {
			kept += c->cap;
			c->next = rs->reuse;
		} else {
			rs->chunks = rs->reuse;
		}
		for (c = rs->reuse; c; c = c->next)
			kept += c->cap;
		if (kept > RD_POOL_KEEP) {
			free_chunks(rs->chunks);
			rs->chunks = NULL;
		}
		free_chunks(atomic_exchange(&rs->pool->spare, rs->chunks));
		rd_pool_put(rs->pool);
	} else {
		free_chunks(rs->chunks);
		free_chunks(rs->reuse);
	}
	free(rs);
}
