// SPDX-License-Identifier: MIT
/*
 * Measurements: blamer_path_add() through per-thread shards.
 *
 * A path's value is its record's values[] plus the values[] of every
 * shard on its chain; readers sum them (Documentation/heap-format.rst).
 * Each thread adds to a shard of its own, so the common add is one
 * unlocked add to a cache line no other thread writes, instead of a
 * lock xadd on a line every adding thread fights over.
 *
 * Invariants:
 *  - A shard has one writer: the thread whose tid is in its claim. A
 *    thread claims a free shard of the path (CAS 0 -> tid, acquire) or
 *    makes one, and releases its shards when it exits (store 0, release),
 *    so the next claimer's adds come after the last one's.
 *  - Shards are pushed at the head of their path's chain (release CAS)
 *    and are never unlinked, retired or zeroed: the sum only grows, and
 *    a chain walk has no ABA to fear. There are at most as many shards
 *    of a path as threads that added to it at the same time.
 *  - The thread finds its shard through a small direct-mapped cache in
 *    its TLS (struct bl_tls.shard), keyed by the handle's process-unique
 *    id. A signal handler may add on the same thread at any point, so
 *    the cache is read and written under a per-thread sequence count.
 *  - When no shard can be had (heap full or corrupt, no thread record),
 *    the add goes to the path record's own values[] with an atomic add,
 *    as before shards existed: nothing is lost. A handle from before a
 *    fork first has its record made again in the child's heap
 *    (handle.c); if even that fails, the add is counted as dropped.
 */
#include <string.h>

#include "atomic.h"
#include "internal.h"

#if defined(__SANITIZE_THREAD__)
#define BL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BL_TSAN 1
#endif
#endif

/* Adds through slots without a shard before the thread tries again. */
#define SHARD_RETRY	65536u

/*
 * The add to this thread's own shard. Nobody else writes it, so it needs
 * no lock prefix, only to be one instruction: a signal handler that adds
 * on the same thread runs between two instructions, never inside one, so
 * neither add is lost; and an aligned 8-byte store is never torn, so a
 * reader on another CPU sees the old or the new value. A C "+=" may
 * become load, add, store (a handler in between would lose its add) and
 * is a data race on memory a reader loads; hence the asm. Elsewhere, and
 * under TSan (which cannot see into asm and would report the readers), a
 * relaxed atomic add does the same at the price of a lock or LL/SC loop.
 */
static inline void shard_add(uint64_t *v, uint64_t value)
{
#if defined(__x86_64__) && !defined(BL_TSAN)
	__asm__ volatile("addq %1, %0" : "+m"(*v) : "er"(value));
#else
	atomic_fetch_add_explicit(A64(v), value, memory_order_relaxed);
#endif
}

/* No shard: the path record's own values[], shared by every thread. */
static void shared_add(struct blamer_dag_path *rec, unsigned unit, uint64_t value)
{
	/* Relaxed: measurements are counters; no other data hangs on them. */
	atomic_fetch_add_explicit(A64(&rec->values[unit]), value, memory_order_relaxed);
}

/*
 * A walk along a path's shard chain. Every shard is validated (type,
 * size, and that it belongs to this path) and the walk is bounded by how
 * many shards the heap could hold: a bad link or a loop is corruption
 * (someone else wrote into the heap), never a crash or a hang.
 */
struct shard_walk {
	struct bl_heap *h;
	blamer_ref path, next;
	uint64_t left;
};

static void walk_start(struct shard_walk *w, struct blamer_path *p,
		       struct blamer_dag_path *rec)
{
	w->h = &p->h.b->heap;
	w->path = bl_handle_ref(&p->h);
	/* Acquire: pairs with the release CAS that pushed the newest shard;
	 * it and every older one are seen whole. */
	w->next = ld_acquire(A64(&rec->shards));
	w->left = (uint64_t)w->h->max_slabs * w->h->slab_size / sizeof(struct blamer_dag_shard);
}

static struct blamer_dag_shard *walk_next(struct shard_walk *w)
{
	struct blamer_dag_shard *s;

	if (!w->next)
		return NULL;
	s = bl_heap_get(w->h, w->next, BLAMER_REC_DAG_SHARD, sizeof(*s));
	if (!s || s->path != w->path || !w->left--) {
		bl_heap_set_corrupt(w->h);
		return NULL;
	}
	w->next = s->next_shard;
	return s;
}

/* The shard of @p this thread already holds (another slot lost it). */
static struct blamer_dag_shard *shard_mine(struct blamer_path *p, struct blamer_dag_path *rec,
					   int64_t tid)
{
	struct blamer_dag_shard *s;
	struct shard_walk w;

	/* Relaxed: only a thread with this tid stores it there, and a dead
	 * thread whose tid the kernel reused has finished its adds. */
	for (walk_start(&w, p, rec); (s = walk_next(&w));)
		if (ld_relaxed(A64(&s->claim)) == (uint64_t)tid)
			return s;
	return NULL;
}

/* A shard of @p that an exited thread released, claimed for this one. */
static struct blamer_dag_shard *shard_claim(struct blamer_path *p, struct blamer_dag_path *rec,
					    int64_t tid)
{
	struct blamer_dag_shard *s;
	struct shard_walk w;

	for (walk_start(&w, p, rec); (s = walk_next(&w));) {
		uint64_t free = 0;

		/* Acquire: pairs with the release of the claim at the last
		 * claimer's exit, so its adds come before ours. */
		if (!ld_relaxed(A64(&s->claim)) &&
		    atomic_compare_exchange_strong_explicit(A64(&s->claim), &free, (uint64_t)tid,
							    memory_order_acquire,
							    memory_order_relaxed))
			return s;
	}
	return NULL;
}

/* A new shard of @p, claimed by this thread and pushed on the chain. */
static struct blamer_dag_shard *shard_new(struct blamer_path *p, struct blamer_dag_path *rec,
					  int64_t tid)
{
	struct blamer *b = p->h.b;
	struct blamer_dag_shard *s;
	blamer_ref ref, head;

	ref = bl_record_new(b, BLAMER_REC_DAG_SHARD, sizeof(*s), false);
	if (!ref)
		return NULL;
	s = bl_ptr(&b->heap, ref);
	s->path = bl_handle_ref(&p->h);
	/* Relaxed: published with the record by the push below. */
	st_relaxed(A64(&s->claim), (uint64_t)tid);
	bl_owner_set(b, &s->owner);
	head = ld_relaxed(A64(&rec->shards));
	do
		s->next_shard = head;
	/* Release: whoever loads the new head (acquire) sees the shard whole. */
	while (!atomic_compare_exchange_weak_explicit(A64(&rec->shards), &head, ref,
						      memory_order_release, memory_order_relaxed));
	return s;
}

/* This thread's shard of @p (record @rec of the current heap), found,
 * claimed or made; NULL if none can be had. */
static uint64_t *shard_values(struct blamer_path *p, struct blamer_dag_path *rec)
{
	struct blamer *b = p->h.b;
	struct blamer_dag_shard *s;
	struct bl_tls_ent *e;
	int64_t tid;

	/* Registered, the thread's exit releases what it claims. */
	e = bl_thread_get(b);
	if (!e || ld_relaxed(A32(&b->heap.corrupt)))
		return NULL;
	tid = bl_tls.tid;
	s = shard_mine(p, rec, tid);
	if (!s)
		s = shard_claim(p, rec, tid);
	if (!s)
		s = shard_new(p, rec, tid);
	if (!s)
		return NULL;
	bl_claim_note(b, e, s);
	return s->values;
}

/* Out of line: the hit path then saves no registers. */
__attribute__((noinline))
static void path_add_slow(struct blamer_path *p, unsigned unit, uint64_t value)
{
	struct bl_tls *t = &bl_tls;
	struct bl_shard_slot *s = &t->shard[p->id & (BL_SHARD_SLOTS - 1)];
	uint32_t seq = bl_slot_read_begin(t);
	bool none = s->path_id == p->id && !s->values;
	/* The record in this process's heap, made again if the handle is
	 * from before a fork (handle.c); NULL: lost, and counted. */
	struct blamer_dag_path *rec = bl_handle_rec(&p->h);
	uint64_t *values;

	if (!rec)
		return;
	/* This thread found no shard for @p lately: do not search again at
	 * every add, only once in a while (the heap may have room again). */
	if (!bl_slot_read_retry(t, seq) && none && t->shard_retry) {
		t->shard_retry--;
		shared_add(rec, unit, value);
		return;
	}
	values = shard_values(p, rec);
	if (!values)
		t->shard_retry = SHARD_RETRY;
	bl_slot_fill(t, s, p->id, values);
	if (values)
		shard_add(&values[unit], value);
	else
		shared_add(rec, unit, value);
}

/* The hit: a slot lookup and one add to the thread's own shard. */
BL_HOT void blamer_path_add(struct blamer_path *p, unsigned unit_index, uint64_t value)
{
	struct bl_tls *t = &bl_tls;
	struct bl_shard_slot *s;
	uint64_t *values;
	uint32_t seq;

	if (!p || unit_index >= BLAMER_DAG_MAX_UNITS)
		return;
	s = &t->shard[p->id & (BL_SHARD_SLOTS - 1)];
	seq = bl_slot_read_begin(t);
	values = s->values;
	if (__builtin_expect(s->path_id == p->id && values && !bl_slot_read_retry(t, seq), 1))
		shard_add(&values[unit_index], value);
	else
		path_add_slow(p, unit_index, value);
}

