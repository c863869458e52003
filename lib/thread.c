// SPDX-License-Identifier: MIT
/*
 * Per-thread activity stacks.
 *
 * Invariants:
 *  - Only the owning thread writes its record (push, pop, name); readers
 *    copy it and check depth and data_version before and after.
 *  - push: fill stack[depth] (if depth < stack_slots), then store
 *    depth + 1 with release. pop: store depth - 1 with release, then
 *    data_version + 1 with release. A reader that copied a slot while the
 *    thread popped and pushed again sees data_version change.
 *  - The record is found through a __thread cache (initial-exec TLS: a
 *    plain memory access, no __tls_get_addr, no lock), so push and pop are
 *    async-signal-safe: no lock, no malloc, no system call. A handler
 *    that pushes and pops leaves depth as it found it; a handler that
 *    interrupts the middle of a push may leave that one slot mixed, never
 *    an invalid depth.
 *  - The first push of a thread registers it: a retired thread record of
 *    the same size is taken over by changing its type (whoever wins the
 *    CAS), else a new one is allocated (lock-free). The thread-exit
 *    destructor retires the record by changing its type back, after it
 *    released the DAG shards the thread claimed (dag_shard.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/prctl.h>

#include "atomic.h"
#include "context.h"

__thread struct bl_tls bl_tls __attribute__((tls_model("initial-exec")));

static uint32_t thread_size(struct blamer *b)
{
	return sizeof(struct blamer_thread) + b->stack_depth * sizeof(struct blamer_activity);
}

static struct bl_tls_ent *thread_register(struct blamer *b)
{
	struct bl_tls *t = &bl_tls;
	struct bl_tls_ent *e = NULL;
	struct blamer_thread *rec;
	blamer_ref ref;
	uint32_t i;

	/* A slot for this context: a free one, one of an old incarnation of
	 * this context (fork), or else the next victim round-robin. */
	for (i = 0; i < BL_TLS_ENTS && !e; i++)
		if (!t->e[i].b || t->e[i].b == b)
			e = &t->e[i];
	if (!e)
		e = &t->e[t->next_victim++ % BL_TLS_ENTS];
	memset(e, 0, sizeof(*e));
	ref = bl_record_new(b, BLAMER_REC_THREAD, thread_size(b), true);
	if (!ref)
		return NULL;
	rec = bl_ptr(&b->heap, ref);
	t->tid = bl_gettid();
	rec->tid = t->tid;
	rec->start_time_ns = bl_monotonic_ns();
	rec->stack_slots = b->stack_depth;
	prctl(PR_GET_NAME, rec->name);	/* 16 bytes, NUL-terminated */
	bl_owner_set(b, &rec->owner);
	e->rec = rec;
	e->ref = ref;
	e->serial = b->serial;
	e->gen = ld_relaxed(A32(&b->gen));
	e->b = b;
	if (!t->key_set) {
		/* Not on POSIX's async-signal-safe list, but glibc's first 32
		 * keys are a plain store in the thread descriptor. */
		pthread_setspecific(bl_thread_key, t);
		t->key_set = true;
	}
	return e;
}

struct bl_tls_ent *bl_thread_get(struct blamer *b)
{
	struct bl_tls *t = &bl_tls;
	uint32_t i;

	for (i = 0; i < BL_TLS_ENTS; i++) {
		struct bl_tls_ent *e = &t->e[i];

		/* gen is only written by the fork child while it is the sole
		 * thread: relaxed is enough. */
		if (e->b == b && e->serial == b->serial && e->gen == ld_relaxed(A32(&b->gen)))
			return e;
	}
	if (!bl_ready(b))
		return NULL;
	return thread_register(b);
}

/* The hot path: the thread's record for @b, normally the first entry. */
static inline struct bl_tls_ent *thread_fast(struct blamer *b)
{
	struct bl_tls_ent *e = &bl_tls.e[0];

	if (__builtin_expect(e->b == b && e->serial == b->serial &&
			     e->gen == ld_relaxed(A32(&b->gen)), 1))
		return e;
	return bl_thread_get(b);
}

static void retire_entry(struct bl_tls_ent *e, int64_t tid)
{
	struct blamer *b = e->b;
	uint32_t i;

	if (ld_acquire(A32(&b->state)) != BL_ST_READY || e->gen != ld_relaxed(A32(&b->gen)))
		return;
	if (e->claimed_shards)
		bl_shards_release(b, tid);
	for (i = 0; i < e->nspare; i++)
		bl_record_retire(b, e->spare[i], BLAMER_REC_USERDATA);
	bl_record_retire(b, e->ref, BLAMER_REC_THREAD);
}

/* pthread key destructor: the thread is exiting. */
void bl_thread_exit(void *arg)
{
	struct bl_tls *t = arg;
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
	bl_registry_unlock();
	t->key_set = false;
}

/* The context is closing: this thread's cache must not point at it. */
void bl_tls_forget(struct blamer *b)
{
	uint32_t i;

	for (i = 0; i < BL_TLS_ENTS; i++)
		if (bl_tls.e[i].b == b)
			memset(&bl_tls.e[i], 0, sizeof(bl_tls.e[i]));
}

int blamer_push(struct blamer *b, uint32_t kind, const char *label, uint64_t data0,
		uint64_t data1)
{
	void *caller = __builtin_return_address(0);
	struct bl_tls_ent *e;
	struct blamer_thread *t;
	uint32_t d;

	if (!b && !(b = blamer_default()))
		return -ENODEV;
	e = thread_fast(b);
	if (!e)
		return -bl_last_error();	/* ENOSPC, EAGAIN, EIO... */
	if (ld_relaxed(A32(&b->heap.corrupt)))
		return -EIO;
	t = e->rec;
	/* Relaxed: this thread is the only writer of depth. */
	d = ld_relaxed(A32(&t->depth));
	if (d < t->stack_slots) {
		struct blamer_activity *a = &t->stack[d];
		union {
			char c[16];
			uint64_t q[2];
		} l = { .q = { 0, 0 } };
		uint32_t i;

		/* Labels are short: a byte loop into a register pair beats
		 * three library calls (strnlen, memset, memcpy). */
		for (i = 0; label && i < sizeof(l.c) && label[i]; i++)
			l.c[i] = label[i];
		a->time_ns = bl_monotonic_ns();
		a->calling_address = (uint64_t)(uintptr_t)caller;
		a->data[0] = data0;
		a->data[1] = data1;
		a->user_data = 0;
		a->kind = kind;
		memcpy(a->label, l.c, sizeof(l.c));	/* constant size: two stores */
	} else {
		/* Not recorded, but counted: a reader shows "N more". */
		st_relaxed(A32(&t->overflows), ld_relaxed(A32(&t->overflows)) + 1);
	}
	/* Release: a reader that sees the new depth sees the slot. */
	st_release(A32(&t->depth), d + 1);
	return (int)(d + 1);
}

void blamer_pop(struct blamer *b)
{
	struct bl_tls_ent *e;
	struct blamer_thread *t;
	uint32_t d;

	if (!b && !(b = blamer_default()))
		return;
	e = thread_fast(b);
	if (!e || ld_relaxed(A32(&b->heap.corrupt)))
		return;
	t = e->rec;
	d = ld_relaxed(A32(&t->depth));
	if (!d)
		return;	/* unbalanced pop: nothing to undo */
	if (d <= t->stack_slots && t->stack[d - 1].user_data) {
		blamer_ref ud = t->stack[d - 1].user_data;

		/* The activity's data ends with it: retire it, and keep it for
		 * this thread's next activity data (no list scan then). */
		st_release(A64(&t->stack[d - 1].user_data), 0);
		bl_record_retire(b, ud, BLAMER_REC_USERDATA);
		if (e->nspare < BL_SPARE_DATA)
			e->spare[e->nspare++] = ud;
	}
	/* Release: readers see the shorter stack only after its contents. */
	st_release(A32(&t->depth), d - 1);
	/* Release: tells a reader that copied slot d - 1 that it may have
	 * changed under it. */
	st_release(A32(&t->data_version), ld_relaxed(A32(&t->data_version)) + 1);
}

int blamer_thread_set_name(struct blamer *b, const char *name)
{
	struct bl_tls_ent *e;

	b = bl_ctx(b);
	if (!b)
		return -ENODEV;
	e = bl_thread_get(b);
	if (!e)
		return -bl_last_error();
	/* A name is a debugging aid: a reader may see it half-written. */
	memset(e->rec->name, 0, sizeof(e->rec->name));
	strncpy(e->rec->name, name, sizeof(e->rec->name) - 1);
	return 0;
}
