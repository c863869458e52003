// SPDX-License-Identifier: MIT
/*
 * The writer's per-thread state (internal.h) and a thread's end: a pthread key
 * whose destructor, when a thread that wrote exits, releases the DAG
 * shards it claimed, retires its thread record and gives its activity
 * data records (its spares, and those of activities it left pushed) to
 * the heap's free stack, in every context still open, so another thread
 * can take them over.
 * The registry tells an open context from one closed (or closed and
 * reopened at the same address) since the thread cached it.
 *
 * The cache holds BL_TLS_ENTS contexts. An entry evicted for another is
 * parked: kept whole, still this thread's, in a table in process memory,
 * and taken back when the thread writes that context again. Its record
 * is never given away while the thread lives: the thread, or the code a
 * signal handler interrupted, may still write through it (an activity
 * field's handle, a push under way, a series' home shard). The table is
 * one for all contexts, not one in each: an evicted entry may name a
 * context another thread has closed (freed memory), and its eviction
 * (maybe in a signal handler) cannot take the registry lock to ask.
 *
 * Invariants of the table (lock-free, async-signal-safe: no malloc, no
 * lock, no system call):
 *  - A slot's key is FREE, BUSY (its one owner copies the entry in or
 *    out) or full: the tid of the thread whose entry it is and the low
 *    bits of its context's serial. Only a CAS from FREE or from a full
 *    key makes a slot BUSY; only its owner stores the next key, with
 *    release, after its copy.
 *  - A thread takes back only its own entries (its tid); its exit takes
 *    the rest, under the registry lock, and retires those of contexts
 *    still open as it retires its cache's. A close frees the slots of
 *    contexts no longer open; a fork child's table starts empty.
 *  - A signal handler that interrupts its thread's park or take finds
 *    that slot BUSY, or the entry in neither place, and registers a new
 *    record: a rare leak of one record, until the context closes. A full
 *    table drops the entry as before parking (its record stays live).
 */
#include <pthread.h>
#include <string.h>

#include "atomic.h"
#include "internal.h"

__thread struct bl_tls bl_tls __attribute__((tls_model("initial-exec")));

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;

/* A few threads that each write a few contexts more than their cache
 * holds: 30 KiB of .bss, touched only by threads that park. */
#define PARK_SLOTS	256u
#define PARK_FREE	0u
#define PARK_BUSY	1u
#define PARK_FULL	2u
#define PARK_SERIAL	((1ull << 30) - 1)	/* the serial's bits in a key */

static uint64_t park_key[PARK_SLOTS];		/* atomic */
static struct bl_tls_ent park_ent[PARK_SLOTS];	/* owned by whoever made its key BUSY */

/* The key of a slot that holds the entry of thread @tid for the context
 * of serial @serial (tids are positive: never FREE or BUSY). */
static uint64_t park_full(int64_t tid, uint64_t serial)
{
	return (uint64_t)(uint32_t)tid << 32 | (serial & PARK_SERIAL) << 2 | PARK_FULL;
}

static bool park_is_full(uint64_t key)
{
	return (key & 3) == PARK_FULL;
}

/* Slot @i, seen holding @key, made BUSY for the caller. Acquire: pairs
 * with the release of the key that was stored after the last copy. */
static bool park_own(uint32_t i, uint64_t key)
{
	return ld_relaxed(A64(&park_key[i])) == key &&
	       atomic_compare_exchange_strong_explicit(A64(&park_key[i]), &key, PARK_BUSY,
						       memory_order_acquire, memory_order_relaxed);
}

/* Release: the next owner's copy comes after ours. */
static void park_set(uint32_t i, uint64_t key)
{
	st_release(A64(&park_key[i]), key);
}

bool bl_tls_park(const struct bl_tls_ent *e, int64_t tid)
{
	uint32_t i;

	/* serial 0: an entry of a heap before a fork (bl_tls_forked()) */
	if (!e->b || !e->serial || tid <= 0)
		return false;
	for (i = 0; i < PARK_SLOTS; i++)
		if (park_own(i, PARK_FREE)) {
			park_ent[i] = *e;
			park_set(i, park_full(tid, e->serial));
			return true;
		}
	return false;
}

bool bl_tls_unpark(struct blamer *b, int64_t tid, struct bl_tls_ent *out)
{
	uint64_t want = park_full(tid, b->serial);
	uint32_t i;

	if (tid <= 0)
		return false;
	for (i = 0; i < PARK_SLOTS; i++) {
		if (!park_own(i, want))
			continue;
		if (park_ent[i].b != b || park_ent[i].serial != b->serial) {
			park_set(i, want);	/* another context's serial, same low bits */
			continue;
		}
		*out = park_ent[i];
		park_set(i, PARK_FREE);
		/* Relaxed: as in ent_is_current() (thread.c). Another gen's
		 * entry is of the parent's heap (a fork from a handler that
		 * interrupted a park): not ours to keep. */
		if (out->gen == ld_relaxed(A32(&b->gen)))
			return true;
	}
	return false;
}

/* One of @tid's parked entries, whatever its context, out of the table
 * (the thread is exiting). */
static bool unpark_any(int64_t tid, struct bl_tls_ent *out)
{
	uint32_t i;

	for (i = 0; i < PARK_SLOTS && tid > 0; i++) {
		uint64_t k = ld_relaxed(A64(&park_key[i]));

		if (!park_is_full(k) || k >> 32 != (uint32_t)tid || !park_own(i, k))
			continue;
		*out = park_ent[i];
		park_set(i, PARK_FREE);
		return true;
	}
	return false;
}

/* Whether an open context's serial has the bits of a key (registry lock held). */
static bool serial_open(uint64_t bits)
{
	struct blamer *c;

	for (c = bl_registry_first(); c; c = c->next)
		if ((c->serial & PARK_SERIAL) == bits)
			return true;
	return false;
}

/*
 * Under the registry lock: frees the slots of contexts no longer open.
 * Their records were in a heap that is gone (or left for an exporter),
 * and no thread takes them back (serials are not reused). Slots parked
 * after this, by a thread whose cache still named a closed context (it
 * cannot tell), wait for the next close or the thread's exit.
 */
static void park_sweep(void)
{
	uint32_t i;

	for (i = 0; i < PARK_SLOTS; i++) {
		uint64_t k = ld_relaxed(A64(&park_key[i]));

		if (park_is_full(k) && !serial_open(k >> 2 & PARK_SERIAL) && park_own(i, k))
			park_set(i, PARK_FREE);
	}
}

void bl_tls_forked(void)
{
	uint32_t i;

	/* Relaxed: the child has one thread. Every parked entry is of a
	 * parent's heap. */
	for (i = 0; i < PARK_SLOTS; i++)
		st_relaxed(A64(&park_key[i]), PARK_FREE);
	/* This thread's cache names the parent's heaps too: serial 0 keeps
	 * its entries from being parked (or retired) for the child's. Not
	 * cleared: a fork from a signal handler returns into the code it
	 * interrupted, which may hold a pointer to an entry's record. */
	for (i = 0; i < BL_TLS_ENTS; i++)
		bl_tls.e[i].serial = 0;
}

static void retire_entry(struct bl_tls_ent *e, int64_t tid)
{
	struct blamer *b = e->b;
	uint32_t i;

	if (ld_acquire(A32(&b->state)) != BL_ST_READY || e->gen != ld_relaxed(A32(&b->gen)))
		return;
	bl_claims_release(e, tid);
	/* The data of activities still pushed, and the spares (retired
	 * already): any thread's now. */
	for (i = 0; i < b->stack_depth && i < e->rec->stack_slots &&
		    i < ld_relaxed(A32(&e->rec->depth)); i++) {
		blamer_ref ud = e->rec->stack[i].user_data;

		if (!ud)
			continue;
		st_release(A64(&e->rec->stack[i].user_data), 0);
		if (bl_record_retire(b, ud, BLAMER_REC_USERDATA))
			bl_activity_data_give(b, ud);
	}
	for (i = 0; i < e->nspare; i++)
		bl_activity_data_give(b, e->spare[i]);
	e->nspare = 0;
	if (bl_record_retire(b, e->ref, BLAMER_REC_THREAD))
		bl_heap_free_push(&b->heap, &b->heap.free_threads, e->ref, BL_THREAD_LINK);
}

/* The key's destructor: the thread is exiting. */
static void thread_exit(void *arg)
{
	struct bl_tls *t = arg;
	struct bl_tls_ent parked;
	uint32_t i;

	/* First: an add after this (a later destructor) must not reach a
	 * shard that another thread may claim once released below. */
	bl_shard_cache_clear(t);
	bl_registry_lock();
	for (i = 0; i < BL_TLS_ENTS; i++) {
		struct bl_tls_ent *e = &t->e[i];

		if (e->b && bl_registry_alive(e->b, e->serial))
			retire_entry(e, t->tid);
		memset(e, 0, sizeof(*e));
	}
	/* And those it parked: still its own until now. */
	while (unpark_any(t->tid, &parked))
		if (bl_registry_alive(parked.b, parked.serial))
			retire_entry(&parked, t->tid);
	bl_registry_unlock();
	t->key_set = false;
}

void bl_tls_forget(struct blamer *b)
{
	uint32_t i;

	for (i = 0; i < BL_TLS_ENTS; i++)
		if (bl_tls.e[i].b == b)
			memset(&bl_tls.e[i], 0, sizeof(bl_tls.e[i]));
	/* Nor the park table keep entries for it (@b left the registry). */
	bl_registry_lock();
	park_sweep();
	bl_registry_unlock();
}

static void key_init(void)
{
	pthread_key_create(&key, thread_exit);
}

void bl_tls_init(void)
{
	pthread_once(&key_once, key_init);
}

void bl_tls_arm_exit(struct bl_tls *t)
{
	if (t->key_set)
		return;
	/* Not on POSIX's async-signal-safe list, but glibc's first 32 keys
	 * are a plain store in the thread descriptor. */
	pthread_setspecific(key, t);
	t->key_set = true;
}
