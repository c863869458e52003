// SPDX-License-Identifier: MIT
/*
 * Metrics: definitions (METRIC_DEF) and series (METRIC), found or made;
 * the writes are metric_write.c.
 *
 * A definition is made once per heap and name, like a DAG node: written
 * whole, then listed by bl_heap_append_unique(), whose walk from the head
 * finds an equal one another thread listed first (ours then stays off
 * the list). It is kept for fork children (inherit.c): a worker's heap
 * starts with its master's definitions. A series record is made once per
 * (definition, label values, path) and heap, by its handle (the one
 * handle of its key in the context: series_make()), and is not
 * inherited: a child's series start at zero, made by the first write
 * through a handle made before the fork (handle.c).
 *
 * Handles are process memory: a metric handle per name (b->metrics), a
 * series handle per key in the context's series table (handle_store.c),
 * so asking again for the same series costs a hash lookup, not a walk.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "internal.h"

#define OWNED	(sizeof(struct blamer_block) + sizeof(struct blamer_owner))

/* ---- definitions ---- */

static int bad(const char *why)
{
	return bl_error(EINVAL, "blamer: bad metric definition: %s", why);
}

/* The label names of @d into @r (each NUL-terminated): 0 or -EINVAL. */
static int def_labels(const struct blamer_metric_def *d, struct blamer_metric_def_rec *r)
{
	size_t at = 0, n, i, j;

	if (d->nlabels > BLAMER_METRIC_LABELS_MAX)
		return bad("more than 8 labels");
	if (d->nlabels && !d->labels)
		return bad("nlabels without labels");
	for (i = 0; i < d->nlabels; i++) {
		const char *l = d->labels[i];

		if (!l || !bl_metric_name_ok(l, BLAMER_METRIC_LABEL_NAMES_MAX, false))
			return bad("a label name is not [a-zA-Z_][a-zA-Z0-9_]*");
		if (bl_label_reserved(l, false))
			return bad("a label name is the exporter's own (le, quantile, pid, uid, start_time_ns, heap, identity, __*)");
		for (j = 0; j < i; j++)
			if (!strcmp(l, d->labels[j]))
				return bad("a label name given twice");
		n = strlen(l) + 1;
		if (at + n > sizeof(r->labels))
			return bad("label names longer than 127 bytes in all");
		memcpy(r->labels + at, l, n);
		at += n;
	}
	r->nlabels = d->nlabels;
	return 0;
}

/* The buckets of histogram @d into @r: 0 or -EINVAL. */
static int def_buckets(const struct blamer_metric_def *d, struct blamer_metric_def_rec *r)
{
	struct bl_hist h = { 0 };

	if (d->nbounds) {
		if (d->nbounds > BLAMER_METRIC_BOUNDS_MAX || !d->bounds)
			return bad("a histogram has 1..32 bounds");
		memcpy(r->bounds, d->bounds, d->nbounds * sizeof(double));
		h.layout = BLAMER_HIST_FIXED;
		h.nbuckets = d->nbounds + 1;
		h.bounds = r->bounds;
	} else {
		h.layout = BLAMER_HIST_EXPONENTIAL;
		h.schema = d->schema;
		h.min_exp = d->min_exp;
		h.max_exp = d->max_exp;
		h.nbuckets = bl_hist_exp_buckets(d->schema, d->min_exp, d->max_exp);
		if (!h.nbuckets)
			return bad("exponential buckets need schema -4..8, -1022 < min_exp < max_exp < 1023 (multiples of 2^-schema when it is negative) and at most 256 buckets");
		r->schema = d->schema;
		r->min_exp = d->min_exp;
		r->max_exp = d->max_exp;
	}
	if (!bl_hist_ok(&h))
		return bad("histogram bounds must be finite and ascending");
	r->layout = h.layout;
	r->nbuckets = h.nbuckets;
	return 0;
}

/* @d as a record's payload (zero-filled, so equal definitions are equal
 * bytes): 0 or -EINVAL with a message. */
static int def_record(const struct blamer_metric_def *d, struct blamer_metric_def_rec *r)
{
	size_t i;
	int err;

	memset(r, 0, sizeof(*r));
	if (!d)
		return bad("no definition");
	if (!d->name || !bl_metric_name_ok(d->name, BLAMER_METRIC_NAME_MAX, true))
		return bad("the name is not [a-zA-Z_:][a-zA-Z0-9_:]* of 1..63 bytes");
	if (!strncmp(d->name, "blamer_", 7))
		return bad("names starting with blamer_ are the exporter's own");
	if (d->help && strlen(d->help) > BLAMER_METRIC_HELP_MAX)
		return bad("help text longer than 127 bytes");
	if (d->kind < BLAMER_METRIC_COUNTER || d->kind > BLAMER_METRIC_HISTOGRAM)
		return bad("kind is not BLAMER_METRIC_COUNTER, _GAUGE or _HISTOGRAM");
	if (d->base > BLAMER_BASE_BYTES)
		return bad("base is not BLAMER_BASE_*");
	if (d->flags & ~BLAMER_METRIC_PER_PROCESS)
		return bad("unknown flags");
	for (i = 0; i < sizeof(d->reserved) / sizeof(d->reserved[0]); i++)
		if (d->reserved[i])
			return bad("reserved members are not 0");
	if (d->kind == BLAMER_METRIC_GAUGE) {
		r->gauge_mode = d->gauge_mode ? d->gauge_mode : BLAMER_GAUGE_ALL;
		if (r->gauge_mode > BLAMER_GAUGE_LIVEMOSTRECENT)
			return bad("gauge_mode is not BLAMER_GAUGE_*");
	} else if (d->gauge_mode) {
		return bad("gauge_mode is for gauges");
	}
	if (d->kind != BLAMER_METRIC_HISTOGRAM && (d->nbounds || d->bounds || d->schema ||
						   d->min_exp || d->max_exp))
		return bad("buckets are for histograms");
	r->kind = d->kind;
	r->base = d->base;
	r->flags = d->flags;
	strcpy(r->name, d->name);
	if (d->help)
		strcpy(r->help, d->help);
	err = def_labels(d, r);
	if (!err && d->kind == BLAMER_METRIC_HISTOGRAM)
		err = def_buckets(d, r);
	return err;
}

/* The words of a series of @r. */
static uint32_t def_nvalues(const struct blamer_metric_def_rec *r)
{
	return r->kind == BLAMER_METRIC_HISTOGRAM ? 1 + r->nbuckets : 1;
}

static bool def_same_name(struct bl_heap *h, blamer_ref ref, const void *key)
{
	const struct blamer_metric_def_rec *r = bl_heap_get(h, ref, BLAMER_REC_METRIC_DEF,
							    sizeof(*r));

	/* Acquire: pairs with bl_owner_set(): the record is complete. */
	return r && ld_acquire(A32(&r->owner.data_id)) &&
	       !strncmp(r->name, key, sizeof(r->name));
}

/* The definition record of @want's name in @b's heap, found or made;
 * 0 with a message if it cannot be had or is defined otherwise. */
static blamer_ref def_find_or_make(struct blamer *b, const struct blamer_metric_def_rec *want)
{
	struct bl_heap *h = &b->heap;
	struct bl_iter it = { 0 };
	struct blamer_metric_def_rec *r;
	blamer_ref ref, got;
	uint32_t t;

	while ((ref = bl_heap_next(h, &it, &t)))
		if (t == BLAMER_REC_METRIC_DEF && def_same_name(h, ref, want->name))
			goto found;
	ref = bl_record_alloc(b, BLAMER_REC_METRIC_DEF, sizeof(*r));
	if (!ref)
		return 0;
	r = bl_ptr(h, ref);
	memcpy((uint8_t *)r + OWNED, (const uint8_t *)want + OWNED, sizeof(*r) - OWNED);
	bl_owner_set(b, &r->owner);
	got = bl_heap_append_unique(h, ref, def_same_name, want->name);
	if (!got) {
		bl_error(EIO, "blamer: the heap is corrupt");
		return 0;
	}
	if (got == ref) {
		if (!bl_inherit_def(b, BLAMER_REC_METRIC_DEF, r, sizeof(*r))) {
			bl_error(ENOMEM, "blamer: no memory to keep a metric for fork children");
			return 0;
		}
		return ref;
	}
	ref = got;	/* another thread listed it first */
found:
	r = bl_ptr(h, ref);
	if (memcmp((uint8_t *)r + OWNED, (const uint8_t *)want + OWNED, sizeof(*r) - OWNED)) {
		bl_error(EEXIST, "blamer: metric %s is already defined otherwise in this heap",
			 want->name);
		return 0;
	}
	return ref;
}

/* handle.c: a metric handle in a fork child, its definition found there. */
static void *def_remake(struct bl_handle *hd, struct blamer *b, blamer_ref *ref)
{
	struct blamer_metric *m = (struct blamer_metric *)((char *)hd -
							   offsetof(struct blamer_metric, h));

	*ref = def_find_or_make(b, &m->def);
	if (!*ref)
		bl_drop(b, BLAMER_DROP_HEAP_FULL);
	return *ref ? bl_ptr(&b->heap, *ref) : NULL;
}

struct blamer_metric *blamer_metric_define(struct blamer *b, const struct blamer_metric_def *d)
{
	struct blamer_metric *m, *head, *seen = NULL, *mine;
	blamer_ref ref;

	b = bl_ctx(b);
	if (!b)
		return NULL;
	mine = calloc(1, sizeof(*mine));
	if (!mine) {
		bl_error(ENOMEM, "blamer: no memory for a metric handle");
		return NULL;
	}
	if (def_record(d, &mine->def) || !bl_ready(b))
		goto fail;
	/* a name has one handle per context: the one made first */
	head = atomic_load_explicit(&b->metrics, memory_order_acquire);
	for (m = head; m; m = m->next) {
		if (strcmp(m->def.name, mine->def.name))
			continue;
		if (memcmp((uint8_t *)&m->def + OWNED, (uint8_t *)&mine->def + OWNED,
			   sizeof(m->def) - OWNED)) {
			bl_error(EEXIST, "blamer: metric %s is already defined otherwise",
				 mine->def.name);
			goto fail;
		}
		free(mine);
		return bl_handle_rec(&m->h) ? m : NULL;
	}
	ref = def_find_or_make(b, &mine->def);
	if (!ref)
		goto fail;
	mine->nvalues = def_nvalues(&mine->def);
	if (mine->def.kind == BLAMER_METRIC_HISTOGRAM) {
		struct bl_hist h = { .layout = mine->def.layout, .nbuckets = mine->def.nbuckets,
				     .schema = mine->def.schema, .min_exp = mine->def.min_exp,
				     .max_exp = mine->def.max_exp, .bounds = mine->def.bounds };

		mine->table = malloc(sizeof(*mine->table) +
				     bl_hist_fast_cells(&h) * sizeof(mine->table->cell[0]));
		if (!mine->table) {
			bl_error(ENOMEM, "blamer: no memory for a histogram's buckets");
			goto fail;
		}
		/* the series copy the lookup (blamer_metric_series()) */
		bl_hist_fast_init(&mine->fast, mine->table, &h);
	} else {
		bl_hist_fast_none(&mine->fast);	/* an observation takes its lookup too */
	}
	bl_handle_init(&mine->h, b, def_remake, bl_ptr(&b->heap, ref), ref);
	for (;;) {
		mine->next = head;
		seen = head;
		/* Release: whoever loads the new head sees the handle whole. */
		if (atomic_compare_exchange_weak_explicit(&b->metrics, &head, mine,
							  memory_order_release,
							  memory_order_acquire))
			return mine;
		/* another thread pushed handles meanwhile: one of ours? */
		for (m = head; m != seen; m = m->next) {
			if (!strcmp(m->def.name, mine->def.name)) {
				free(mine->table);
				free(mine);
				return m;	/* the same record: the heap made it once */
			}
		}
	}
fail:
	if (mine)
		free(mine->table);
	free(mine);
	return NULL;
}

/* ---- series ---- */

/* A METRIC record of @s's key (its metric's definition @def) in @b's
 * heap, filled, not listed; 0 with a message if the heap has no room. */
static blamer_ref series_record(struct blamer *b, const struct blamer_series *s, blamer_ref def)
{
	struct blamer_metric_rec *r;
	blamer_ref ref = bl_record_alloc(b, BLAMER_REC_METRIC,
					 sizeof(*r) + s->nvalues * sizeof(uint64_t));

	if (!ref)
		return 0;
	r = bl_ptr(&b->heap, ref);
	r->def = def;
	r->flags = s->cut;
	r->depth = s->depth;
	memcpy(r->nodes, s->nodes, sizeof(r->nodes));
	memcpy(r->values, s->values, sizeof(r->values));
	r->nvalues = s->nvalues;
	bl_owner_set(b, &r->owner);
	return ref;
}

/*
 * The series record of @s in @b's heap (its metric's definition @def),
 * made once per handle and heap (bl_handle_made()): no walk of the heap
 * (the walk made the n-th new series cost n records: 0.78 ms each at
 * 16,000). 0 with a message if it cannot be had.
 */
static blamer_ref series_make(struct blamer *b, struct blamer_series *s, blamer_ref def)
{
	/* Acquire: the record another thread made is whole. */
	blamer_ref ref = ld_acquire(A64(&s->made));

	if (!ref)
		ref = series_record(b, s, def);
	return ref ? bl_handle_made(&b->heap, &s->made, ref) : 0;
}

/* An exporter folds this metric's series when their process dies (the
 * per-process ones, and the LIVE* gauges, end with it instead). */
static bool folded(const struct blamer_metric_def_rec *d)
{
	if (d->flags & BLAMER_METRIC_PER_PROCESS)
		return false;
	switch (d->gauge_mode) {
	case BLAMER_GAUGE_ALL: case BLAMER_GAUGE_LIVEALL: case BLAMER_GAUGE_LIVEMIN:
	case BLAMER_GAUGE_LIVEMAX: case BLAMER_GAUGE_LIVESUM: case BLAMER_GAUGE_LIVEMOSTRECENT:
		return false;
	}
	return true;
}

/* handle.c: a series handle made current: its metric's definition (made
 * again first, in a fork child), then its record. */
static void *series_remake(struct bl_handle *hd, struct blamer *b, blamer_ref *ref)
{
	struct blamer_series *s = (struct blamer_series *)((char *)hd -
							   offsetof(struct blamer_series, h));

	*ref = 0;
	if (!bl_handle_rec(&s->m->h))
		return NULL;	/* counted there */
	*ref = series_make(b, s, bl_handle_ref(&s->m->h));
	if (!*ref)
		return NULL;	/* counted where the record could not be had */
	/* Relaxed: the flag is a hint for whoever ends the heap, which a
	 * thread of this process does after this store (or a parent, after
	 * our exit). */
	if (folded(&s->m->def) && !(ld_relaxed(A32(&b->heap.hh->flags)) & BLAMER_HEAP_F_FOLD))
		atomic_fetch_or_explicit(A32(&b->heap.hh->flags), BLAMER_HEAP_F_FOLD,
					 memory_order_relaxed);
	return bl_ptr(&b->heap, *ref);
}

/* FNV-1a over the key's bytes. */
static uint32_t key_hash(const struct blamer_series *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const uint8_t *p;
	size_t i;

#define MIX(ptr, n) \
	for (p = (const uint8_t *)(ptr), i = 0; i < (n); i++) \
		h = (h ^ p[i]) * 0x100000001b3ull
	MIX(&s->m, sizeof(s->m));
	MIX(&s->depth, sizeof(s->depth));
	MIX(s->nodes, s->depth * sizeof(s->nodes[0]));
	MIX(s->values, s->vlen);
#undef MIX
	return (uint32_t)(h ^ (h >> 32));
}

/* @values of @m into @s: each NUL-terminated, cut to the room. */
static void key_values(struct blamer_series *s, const struct blamer_metric *m,
		       const char *const *values)
{
	uint32_t n = m->def.nlabels, i, at = 0;
	/* room for the text of the values, a NUL after each kept apart */
	size_t room = sizeof(s->values) - n;

	for (i = 0; i < n; i++) {
		size_t len = strlen(values[i]);

		if (len > room) {
			len = room;
			s->cut = BLAMER_METRIC_F_CUT;
		}
		memcpy(s->values + at, values[i], len);
		at += (uint32_t)len + 1;	/* the NUL: calloc()'s zero */
		room -= len;
	}
	s->vlen = at;
}

void bl_series_key(struct blamer_series *key, struct blamer_metric *m, const char *const *values,
		   const uint64_t *path, unsigned depth)
{
	memset(key, 0, sizeof(*key));
	key->m = m;
	key->kind = m->def.kind;
	key->nvalues = m->nvalues;
	key->stamped = m->def.gauge_mode == BLAMER_GAUGE_MOSTRECENT ||
		       m->def.gauge_mode == BLAMER_GAUGE_LIVEMOSTRECENT;
	key->depth = depth;
	if (depth)
		memcpy(key->nodes, path, depth * sizeof(path[0]));
	key_values(key, m, values);
	if (key->kind == BLAMER_METRIC_HISTOGRAM) {
		key->hist.layout = m->def.layout;
		key->hist.nbuckets = m->def.nbuckets;
		key->hist.schema = m->def.schema;
		key->hist.min_exp = m->def.min_exp;
		key->hist.max_exp = m->def.max_exp;
		key->hist.bounds = m->def.bounds;
	}
	key->fast = m->fast;
	key->hash = key_hash(key);
}

/*
 * A new series: its record first, then its handle, as a path's
 * (blamer_path_get()), so that a series the heap has no room for leaves
 * no handle (a label value per request would keep one each, some 600
 * bytes, for nothing). The handle is stale until its first use lists
 * the record (series_remake()); a handle another thread put in first is
 * the one, and our record stays off the list.
 */
static struct blamer_series *series_new(struct blamer *b, const struct blamer_series *key)
{
	struct blamer_series *mine, *s;

	if (!bl_handle_rec(&key->m->h))
		return NULL;	/* counted there */
	mine = malloc(sizeof(*mine));
	if (!mine) {
		bl_drop(b, BLAMER_DROP_HEAP_FULL);
		bl_error(ENOMEM, "blamer: no memory for a series handle");
		return NULL;
	}
	*mine = *key;
	mine->id = bl_handle_id();
	mine->home_values = NULL;
	bl_series_homeless(mine);
	mine->made = series_record(b, mine, bl_handle_ref(&key->m->h));
	if (!mine->made) {
		free(mine);	/* counted where the record could not be had */
		/* another thread may have made it with the last bytes since
		 * we looked: its handle, else NULL (ENOSPC) */
		return bl_series_find(b, key);
	}
	bl_handle_init(&mine->h, b, series_remake, NULL, 0);
	s = bl_series_publish(b, mine);
	if (s != mine)
		free(mine);	/* another thread's went in first: ours stays off the list */
	if (!s)
		bl_drop(b, BLAMER_DROP_HEAP_FULL);	/* no memory, as for the handle */
	return s;
}

struct blamer_series *blamer_metric_series(struct blamer_metric *m, const char *const *values,
					   const uint64_t *path, unsigned depth)
{
	struct blamer_series key;
	struct blamer_series *s;
	struct blamer *b;
	uint32_t i;

	if (!m) {
		bl_error(EINVAL, "blamer: no metric");
		return NULL;
	}
	b = m->h.b;
	if (depth > BLAMER_DAG_MAX_DEPTH || (depth && !path) ||
	    (m->def.nlabels && !values)) {
		bl_error(EINVAL, "blamer: a series has one value per label and a path of 0..%u nodes",
			 BLAMER_DAG_MAX_DEPTH);
		return NULL;
	}
	for (i = 0; i < m->def.nlabels; i++)
		if (!values[i]) {
			bl_error(EINVAL, "blamer: label value %u of %s is NULL", i, m->def.name);
			return NULL;
		}
	if (depth) {
		const char *l = m->def.labels;

		for (i = 0; i < m->def.nlabels; l += strlen(l) + 1, i++)
			if (!strcmp(l, "path")) {
				bl_error(EINVAL, "blamer: %s has a label named path: its series cannot have a DAG path too",
					 m->def.name);
				return NULL;
			}
	}
	bl_series_key(&key, m, values, path, depth);
	if (!bl_ready(b))
		return NULL;
	s = bl_series_find(b, &key);
	if (!s)
		s = series_new(b, &key);
	if (!s)
		return NULL;
	if (key.cut)
		bl_drop(b, BLAMER_DROP_LABEL_VALUES_CUT);
	/* made current now, so that an error shows here, not as drops */
	if (!bl_handle_rec(&s->h))
		return NULL;
	return s;
}
