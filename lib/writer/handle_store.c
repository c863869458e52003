// SPDX-License-Identifier: MIT
/*
 * Where handles live: the path and the series handles (tables, below),
 * the value handles of blamer_set_*() and the metric handles (a list,
 * metric.c): where the fork handler finds
 * every one to make it stale (handle.c), and frees them with their
 * context. Paths and series share one id space (bl_handle_id()): the key
 * of a thread's shard cache.
 *
 * Value handles are found by (scope, name, type) in a per-context table,
 * so every set of a name returns the same handle and a program that sets
 * a name a million times makes one. The table and the handles are
 * lock-free and allocation is mmap(), not malloc(): blamer_set_*() is
 * async-signal-safe. A handle is never freed before its context closes;
 * there is one per name (at most a few hundred fit the 4 KiB of each
 * scope's record), so the table has room for every name a heap and its
 * fork children's heaps can hold.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "atomic.h"
#include "internal.h"

#define VALUE_SLOTS	1024u		/* a power of two */
#define CHUNK_BYTES	(64u * 1024u)

struct chunk {
	struct chunk *next;
	uint32_t used;		/* atomic: bytes handed out of mem[] */
	uint32_t size;		/* bytes of mem[] */
	uint8_t mem[];
};

struct bl_value_table {
	struct blamer_value *_Atomic slot[VALUE_SLOTS];
	struct chunk *_Atomic chunks;	/* newest first */
};

static void *map_zeroed(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static struct bl_value_table *table_of(struct blamer *b)
{
	/* Acquire: pairs with the release CAS below: the table is zeroed. */
	struct bl_value_table *t = atomic_load_explicit(&b->values, memory_order_acquire), *mine;

	if (t)
		return t;
	mine = map_zeroed(sizeof(*mine));
	if (!mine)
		return NULL;
	if (atomic_compare_exchange_strong_explicit(&b->values, &t, mine, memory_order_acq_rel,
						    memory_order_acquire))
		return mine;
	munmap(mine, sizeof(*mine));
	return t;
}

/* @n zeroed bytes (8-aligned) that live as long as @t. */
static void *arena_alloc(struct bl_value_table *t, uint32_t n)
{
	struct chunk *c, *mine;

	n = (n + 7) & ~7u;
	if (n > CHUNK_BYTES - sizeof(*c))
		return NULL;
	for (;;) {
		c = atomic_load_explicit(&t->chunks, memory_order_acquire);
		if (c) {
			uint32_t u = ld_relaxed(A32(&c->used));

			while (u + n <= c->size)
				if (atomic_compare_exchange_weak_explicit(A32(&c->used), &u, u + n,
									  memory_order_relaxed,
									  memory_order_relaxed))
					return c->mem + u;
		}
		mine = map_zeroed(CHUNK_BYTES);
		if (!mine)
			return NULL;
		mine->size = CHUNK_BYTES - sizeof(*mine);
		mine->next = c;
		/* Release: the next chunk's header is seen whole. */
		if (!atomic_compare_exchange_strong_explicit(&t->chunks, &c, mine,
							     memory_order_release,
							     memory_order_relaxed))
			munmap(mine, CHUNK_BYTES);
	}
}

/* The key: a name has one type per heap, but a fork child's heap may
 * give a name its parent never published (made while the parent forked)
 * another type. */
static bool value_is(const struct blamer_value *v, uint32_t scope, const char *name, size_t nlen,
		     uint8_t type)
{
	return v->scope == scope && v->type == type && v->name_len == nlen &&
	       !memcmp(v->name, name, nlen);
}

struct blamer_value *bl_value_handle(struct blamer *b, uint32_t scope, const char *name,
				     size_t nlen, uint32_t hash, uint8_t type, uint16_t cap,
				     bl_remake_fn remake, void *field, void *value)
{
	struct bl_value_table *t = table_of(b);
	struct blamer_value *v, *mine = NULL;
	uint32_t i, at;

	if (!t)
		goto full;
	for (i = 0; i < VALUE_SLOTS; i++) {
		at = (hash + scope * 0x9e3779b9u + i) & (VALUE_SLOTS - 1);
		/* Acquire: pairs with the release CAS that put the handle
		 * there: its key is complete. */
		v = atomic_load_explicit(&t->slot[at], memory_order_acquire);
		if (!v) {
			if (!mine) {
				mine = arena_alloc(t, (uint32_t)(sizeof(*mine) + nlen + 1));
				if (!mine)
					goto full;
				mine->scope = scope;
				mine->type = type;
				mine->name_len = (uint8_t)nlen;
				mine->cap = cap;
				memcpy(mine->name, name, nlen);
				bl_handle_init(&mine->h, b, remake, value,
					       (uint64_t)(uintptr_t)field);
			}
			if (atomic_compare_exchange_strong_explicit(&t->slot[at], &v, mine,
								    memory_order_release,
								    memory_order_acquire))
				return mine;
			/* someone filled it first: look at theirs */
		}
		if (value_is(v, scope, name, nlen, type))
			return v;	/* mine, if made, stays unused in the arena */
	}
full:
	bl_drop(b, BLAMER_DROP_HEAP_FULL);
	bl_error(ENOSPC, "blamer: no room for the handle of %.*s", (int)nlen, name);
	return NULL;
}

/* Handle ids: never reused, so a thread's shard cache needs no invalidation. */
static uint64_t handle_ids;	/* atomic: the last id handed out */

uint64_t bl_handle_id(void)
{
	/* Relaxed: an id only needs to be unique. */
	return atomic_fetch_add_explicit(A64(&handle_ids), 1, memory_order_relaxed) + 1;
}

/*
 * Series handles, by key: a chain per bucket, each pushed with a CAS.
 * A program may have many series (one per label set), so the table does
 * not fill up; a chain is walked only to find a series again
 * (blamer_metric_series(), not the writes). A series' handle goes in
 * once its record is made (metric.c), as a path's.
 */
#define SERIES_BUCKETS	4096u		/* a power of two */

struct bl_series_table {
	struct blamer_series *_Atomic chain[SERIES_BUCKETS];
};

static bool series_is(const struct blamer_series *a, const struct blamer_series *k)
{
	return a->hash == k->hash && a->m == k->m && a->depth == k->depth &&
	       a->vlen == k->vlen && !memcmp(a->nodes, k->nodes, sizeof(a->nodes)) &&
	       !memcmp(a->values, k->values, a->vlen);
}

static struct bl_series_table *series_table(struct blamer *b)
{
	struct bl_series_table *t = atomic_load_explicit(&b->series, memory_order_acquire), *mine;

	if (t)
		return t;
	mine = calloc(1, sizeof(*mine));
	if (!mine)
		return NULL;
	/* Acq_rel: the table is seen zeroed; on failure, the winner's. */
	if (atomic_compare_exchange_strong_explicit(&b->series, &t, mine, memory_order_acq_rel,
						    memory_order_acquire))
		return mine;
	free(mine);
	return t;
}

/*
 * Path handles, by key, the same way: a program may get thousands of
 * paths, and asks for them again (the Python binding's ctx.path() does
 * at every call): a walk of every handle, after one of the heap, made
 * the 16,000th path cost 0.7 ms, to make or to find again. A path's
 * handle goes in once its record is made (dag.c): a key the heap has no
 * room for leaves no handle behind.
 */
#define PATH_BUCKETS	4096u		/* a power of two */

struct bl_path_table {
	struct blamer_path *_Atomic chain[PATH_BUCKETS];
};

static bool path_is(const struct blamer_path *a, const struct blamer_path *k)
{
	return a->hash == k->hash && a->depth == k->depth &&
	       !memcmp(a->ids, k->ids, a->depth * sizeof(a->ids[0])) &&
	       !memcmp(a->units, k->units, sizeof(a->units));
}

static struct bl_path_table *path_table(struct blamer *b)
{
	struct bl_path_table *t = atomic_load_explicit(&b->paths, memory_order_acquire), *mine;

	if (t)
		return t;
	mine = calloc(1, sizeof(*mine));
	if (!mine)
		return NULL;
	/* Acq_rel: the table is seen zeroed; on failure, the winner's. */
	if (atomic_compare_exchange_strong_explicit(&b->paths, &t, mine, memory_order_acq_rel,
						    memory_order_acquire))
		return mine;
	free(mine);
	return t;
}

struct blamer_path *bl_path_find(struct blamer *b, const struct blamer_path *key)
{
	/* Acquire: pairs with the release CAS below: handles found are whole. */
	struct bl_path_table *t = atomic_load_explicit(&b->paths, memory_order_acquire);
	struct blamer_path *q;

	if (!t)
		return NULL;
	q = atomic_load_explicit(&t->chain[key->hash & (PATH_BUCKETS - 1)], memory_order_acquire);
	for (; q; q = atomic_load_explicit(&q->next, memory_order_relaxed))
		if (path_is(q, key))
			return q;
	return NULL;
}

struct blamer_path *bl_path_publish(struct blamer *b, struct blamer_path *mine)
{
	struct bl_path_table *t = path_table(b);
	struct blamer_path *_Atomic *chain, *head, *seen = NULL, *q;

	if (!t) {
		bl_error(ENOMEM, "blamer: no memory for the path table");
		return NULL;
	}
	chain = &t->chain[mine->hash & (PATH_BUCKETS - 1)];
	head = atomic_load_explicit(chain, memory_order_acquire);
	for (;;) {
		for (q = head; q != seen; q = atomic_load_explicit(&q->next, memory_order_relaxed))
			if (path_is(q, mine))
				return q;
		atomic_store_explicit(&mine->next, head, memory_order_relaxed);
		seen = head;
		if (atomic_compare_exchange_weak_explicit(chain, &head, mine, memory_order_release,
							  memory_order_acquire))
			return mine;
	}
}

struct blamer_series *bl_series_find(struct blamer *b, const struct blamer_series *key)
{
	/* Acquire: pairs with the release CAS below: handles found are whole. */
	struct bl_series_table *t = atomic_load_explicit(&b->series, memory_order_acquire);
	struct blamer_series *s;

	if (!t)
		return NULL;
	s = atomic_load_explicit(&t->chain[key->hash & (SERIES_BUCKETS - 1)], memory_order_acquire);
	for (; s; s = atomic_load_explicit(&s->next, memory_order_relaxed))
		if (series_is(s, key))
			return s;
	return NULL;
}

struct blamer_series *bl_series_publish(struct blamer *b, struct blamer_series *mine)
{
	struct bl_series_table *t = series_table(b);
	struct blamer_series *_Atomic *chain, *head, *seen = NULL, *s;

	if (!t) {
		bl_error(ENOMEM, "blamer: no memory for the series table");
		return NULL;
	}
	chain = &t->chain[mine->hash & (SERIES_BUCKETS - 1)];
	head = atomic_load_explicit(chain, memory_order_acquire);
	for (;;) {
		for (s = head; s != seen; s = atomic_load_explicit(&s->next, memory_order_relaxed))
			if (series_is(s, mine))
				return s;
		atomic_store_explicit(&mine->next, head, memory_order_relaxed);
		seen = head;
		if (atomic_compare_exchange_weak_explicit(chain, &head, mine, memory_order_release,
							  memory_order_acquire))
			return mine;
	}
}

void bl_handles_forked(struct blamer *b)
{
	/* Relaxed: the fork child has one thread, in its fork handler. */
	struct bl_path_table *pt = atomic_load_explicit(&b->paths, memory_order_relaxed);
	struct bl_value_table *t = atomic_load_explicit(&b->values, memory_order_relaxed);
	struct blamer_metric *m = atomic_load_explicit(&b->metrics, memory_order_relaxed);
	struct bl_series_table *st = atomic_load_explicit(&b->series, memory_order_relaxed);
	uint32_t i;

	for (i = 0; pt && i < PATH_BUCKETS; i++) {
		struct blamer_path *q = atomic_load_explicit(&pt->chain[i], memory_order_relaxed);

		for (; q; q = atomic_load_explicit(&q->next, memory_order_relaxed)) {
			bl_handle_stale(&q->h);
			st_relaxed(A64(&q->made), 0);	/* the parent's heap's */
		}
	}
	for (i = 0; t && i < VALUE_SLOTS; i++) {
		struct blamer_value *v = atomic_load_explicit(&t->slot[i], memory_order_relaxed);

		if (v)
			bl_handle_stale(&v->h);
	}
	for (; m; m = m->next)
		bl_handle_stale(&m->h);
	for (i = 0; st && i < SERIES_BUCKETS; i++) {
		struct blamer_series *s = atomic_load_explicit(&st->chain[i], memory_order_relaxed);

		for (; s; s = atomic_load_explicit(&s->next, memory_order_relaxed)) {
			bl_handle_stale(&s->h);
			st_relaxed(A64(&s->made), 0);	/* the parent's heap's */
			bl_series_homeless(s);
		}
	}
}

void bl_handles_free(struct blamer *b)
{
	struct bl_path_table *pt = atomic_exchange(&b->paths, NULL);
	struct bl_value_table *t = atomic_exchange(&b->values, NULL);
	struct blamer_metric *m = atomic_exchange(&b->metrics, NULL), *mn;
	struct bl_series_table *st = atomic_exchange(&b->series, NULL);
	struct chunk *c, *cn;
	uint32_t i;

	for (i = 0; pt && i < PATH_BUCKETS; i++) {
		struct blamer_path *q = atomic_load(&pt->chain[i]), *qn;

		for (; q; q = qn) {
			qn = atomic_load(&q->next);
			free(q);
		}
	}
	free(pt);
	for (; m; m = mn) {
		mn = m->next;
		free(m->table);
		free(m);
	}
	for (i = 0; st && i < SERIES_BUCKETS; i++) {
		struct blamer_series *s = atomic_load(&st->chain[i]), *sn;

		for (; s; s = sn) {
			sn = atomic_load(&s->next);
			free(s);
		}
	}
	free(st);
	if (!t)
		return;
	for (c = t->chunks; c; c = cn) {
		cn = c->next;
		munmap(c, CHUNK_BYTES);
	}
	munmap(t, sizeof(*t));
}
