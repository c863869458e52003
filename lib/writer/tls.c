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
 */
#include <pthread.h>
#include <string.h>

#include "atomic.h"
#include "internal.h"

__thread struct bl_tls bl_tls __attribute__((tls_model("initial-exec")));

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;

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
	sigset_t held;
	uint32_t i;

	/* First: an add after this (a later destructor) must not reach a
	 * shard that another thread may claim once released below. */
	bl_shard_cache_clear(t);
	/* Held from here to the thread's end: a handler writing in the
	 * middle would register a record the loop below then forgets
	 * (thread.c, thread_register()), and one writing after it a record
	 * no destructor retires (glibc runs a key's destructor again only
	 * for a few rounds, and holds the signals only at the very end).
	 * The thread is going: its signals go to the others. */
	bl_signals_hold(&held);
	bl_registry_lock();
	for (i = 0; i < BL_TLS_ENTS; i++) {
		struct bl_tls_ent *e = &t->e[i];

		if (e->b && bl_registry_alive(e->b, e->serial))
			retire_entry(e, t->tid);
		memset(e, 0, sizeof(*e));
	}
	bl_registry_unlock();
	t->key_set = false;
}

void bl_tls_forget(struct blamer *b)
{
	uint32_t i;

	for (i = 0; i < BL_TLS_ENTS; i++)
		if (bl_tls.e[i].b == b)
			memset(&bl_tls.e[i], 0, sizeof(bl_tls.e[i]));
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
