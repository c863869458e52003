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
 *  - The first push of a thread registers it: a retired thread record
 *    (all of a context's are of one size) is popped from the heap's free
 *    stack and taken over by changing its type, else a new one is
 *    allocated (lock-free; no walk of the heap either way). The
 *    thread-exit destructor retires the record by changing its type back
 *    and pushes it on that stack, after it released the DAG shards the
 *    thread claimed (dag_shard.c). A pop never registers: a thread
 *    without a record has nothing to pop.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>

#include "atomic.h"
#include "internal.h"

static uint32_t thread_size(struct blamer *b)
{
	return sizeof(struct blamer_thread) + b->stack_depth * sizeof(struct blamer_activity);
}

/* @e caches this thread's record of context @b as it is now: the same
 * context (not a new one at an old address), not forked since. */
static inline bool ent_is_current(const struct bl_tls_ent *e, struct blamer *b)
{
	/* gen is only written by the fork child while it is the sole
	 * thread: relaxed is enough. */
	return e->b == b && e->serial == b->serial && e->gen == ld_relaxed(A32(&b->gen));
}

/* thread_register() with this thread's signals held. */
static struct bl_tls_ent *register_held(struct blamer *b)
{
	struct bl_tls *t = &bl_tls;
	struct bl_tls_ent *e = NULL;
	struct blamer_thread *rec;
	blamer_ref ref;
	uint32_t i;

	/* a handler that ran before the signals were held may have
	 * registered this thread already */
	for (i = 0; i < BL_TLS_ENTS; i++)
		if (ent_is_current(&t->e[i], b))
			return &t->e[i];

	/* A slot for this context: a free one, one of an old incarnation of
	 * this context (fork), or else the next victim round-robin, dropped
	 * as it is: its record stays live, with its stack (library.rst,
	 * "Activities"). Giving it back while this thread lives gave away
	 * what the thread, or the code a signal handler interrupted, was
	 * still writing: an activity field's handle, a push under way, a
	 * series' home shard (a review, 2026-12-05). */
	for (i = 0; i < BL_TLS_ENTS && !e; i++)
		if (!t->e[i].b || t->e[i].b == b)
			e = &t->e[i];
	if (!e)
		e = &t->e[t->next_victim++ % BL_TLS_ENTS];
	memset(e, 0, sizeof(*e));
	ref = bl_heap_free_pop(&b->heap, &b->heap.free_threads, BLAMER_REC_THREAD,
			       BL_THREAD_LINK);
	if (!ref)
		ref = bl_record_new(b, BLAMER_REC_THREAD, thread_size(b), false);
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
	bl_tls_arm_exit(t);
	return e;
}

/*
 * Signals held while a thread registers (bl_signals_hold(): the system
 * calls of a first write, never the hot path). A handler that wrote this
 * context in the middle (a signal pending during the prctl() above is
 * delivered at its return) found the slot cleared, registered a record
 * of its own there, and the interrupted registration then wrote its own
 * over it: never retired, a record per such signal, and threads long
 * gone shown live (100 threads, one at a time: 101 records).
 */
static struct bl_tls_ent *thread_register(struct blamer *b)
{
	struct bl_tls_ent *e;
	sigset_t held;

	bl_signals_hold(&held);
	e = register_held(b);
	bl_signals_restore(&held);
	return e;
}

struct bl_tls_ent *bl_thread_get(struct blamer *b)
{
	uint32_t i;

	for (i = 0; i < BL_TLS_ENTS; i++)
		if (ent_is_current(&bl_tls.e[i], b))
			return &bl_tls.e[i];
	if (!bl_ready(b))
		return NULL;
	return thread_register(b);
}

/* The hot path: the thread's record for @b, normally the first entry. */
static inline struct bl_tls_ent *thread_fast(struct blamer *b)
{
	struct bl_tls_ent *e = &bl_tls.e[0];

	if (__builtin_expect(ent_is_current(e, b), 1))
		return e;
	return bl_thread_get(b);
}

/* The thread's record if @b's fast path applies: the cached entry is for
 * this very context and heap, and the heap is not corrupt. */
static inline struct blamer_thread *thread_rec_fast(struct blamer *b)
{
	struct bl_tls_ent *e = &bl_tls.e[0];

	if (__builtin_expect(b && ent_is_current(e, b) && !ld_relaxed(A32(&b->heap.corrupt)), 1))
		return e->rec;
	return NULL;
}

/* The thread's record the slow way (default context, first push of the
 * thread, after fork), or NULL with *@err set. */
static struct bl_tls_ent *thread_entry_slow(struct blamer **bp, int *err)
{
	struct bl_tls_ent *e;

	if (!*bp && !(*bp = blamer_default())) {
		*err = -ENODEV;
		return NULL;
	}
	e = bl_thread_get(*bp);
	if (!e) {
		*err = -bl_last_error();	/* ENOSPC, EAGAIN, EIO... */
		return NULL;
	}
	if (ld_relaxed(A32(&(*bp)->heap.corrupt))) {
		*err = -EIO;
		return NULL;
	}
	return e;
}

/*
 * The rare ends of a push, out of line and reached by tail calls, so
 * that the fast path stays a leaf that saves no register: a push past
 * the slots (not recorded, but counted: a reader shows "N more", and the
 * heap's drop record says so too), and a label that filled its slot
 * (cut, marked and counted if the caller's was longer).
 */
/* The context whose record @t is: this thread's cache knows (the rare
 * paths below look it up rather than the fast path carrying it). */
static struct blamer *ctx_of(struct blamer_thread *t)
{
	uint32_t i;

	for (i = 0; i < BL_TLS_ENTS; i++)
		if (bl_tls.e[i].rec == t)
			return bl_tls.e[i].b;
	return NULL;
}

static __attribute__((noinline, cold)) int push_overflow(struct blamer_thread *t, uint32_t d)
{
	st_relaxed(A32(&t->overflows), ld_relaxed(A32(&t->overflows)) + 1);
	bl_drop(ctx_of(t), BLAMER_DROP_STACK_OVERFLOW);
	/* Release: as in push_on(). */
	st_release(A32(&t->depth), d + 1);
	return (int)(d + 1);
}

static __attribute__((noinline)) int push_full_label(struct blamer_thread *t, uint32_t d,
						      const char *label)
{
	uint32_t flags = 0;

	if (label[BLAMER_LABEL_MAX]) {
		flags = BLAMER_ACT_F_LABEL_CUT;
		bl_drop(ctx_of(t), BLAMER_DROP_LABEL_CUT);
	}
	t->stack[d].flags = flags;
	st_release(A32(&t->depth), d + 1);
	return (int)(d + 1);
}

static inline int push_on(struct blamer_thread *t, uint64_t stamp, uint32_t kind,
			  const char *label, uint64_t data0, uint64_t data1, void *caller)
{
	/* Relaxed: this thread is the only writer of depth. */
	uint32_t d = ld_relaxed(A32(&t->depth)), i = 0;
	struct blamer_activity *a;

	if (__builtin_expect(d >= t->stack_slots, 0))
		return push_overflow(t, d);
	a = &t->stack[d];
	a->timestamp = stamp;
	a->calling_address = (uint64_t)(uintptr_t)caller;
	a->data[0] = data0;
	a->data[1] = data1;
	a->user_data = 0;
	a->kind = kind;
	/* A byte loop straight into the slot, then one NUL: the bytes past
	 * it mean nothing (heap-format.rst), so the 80 bytes are not
	 * cleared first. (Gathering the bytes in a local and storing it
	 * whole costs a failed store-to-load forward; strncpy costs a
	 * call.) */
	if (label)
		for (; i < BLAMER_LABEL_MAX && label[i]; i++)
			a->label[i] = label[i];
	if (__builtin_expect(i == BLAMER_LABEL_MAX, 0))
		return push_full_label(t, d, label);
	a->label[i] = '\0';
	a->flags = 0;
	/* Release: a reader that sees the new depth sees the slot. */
	st_release(A32(&t->depth), d + 1);
	return (int)(d + 1);
}

/* The activity clock of @b's heap (clock.h). */
static inline uint64_t timestamp(const struct blamer *b)
{
	if (BL_HAVE_TSC && b->clock == BLAMER_CLOCK_TSC)
		return bl_tsc();
	return bl_monotonic_ns();
}

/* A heap stamped with the vDSO clock: its read is a call. */
static __attribute__((noinline)) int push_monotonic(struct blamer_thread *t, uint32_t kind,
						    const char *label, uint64_t data0,
						    uint64_t data1, void *caller)
{
	return push_on(t, bl_monotonic_ns(), kind, label, data0, data1, caller);
}

/* The default context, a thread's first push, after fork. */
static __attribute__((noinline)) int push_slow(struct blamer *b, uint32_t kind,
					       const char *label, uint64_t data0,
					       uint64_t data1, void *caller)
{
	struct bl_tls_ent *e;
	int err;

	e = thread_entry_slow(&b, &err);
	if (!e)
		return err;
	return push_on(e->rec, timestamp(b), kind, label, data0, data1, caller);
}

/*
 * The fast path is a leaf: the TSC is read inline, and whatever needs a
 * call is reached by a tail call, so no register is saved on the way.
 */
int blamer_push(struct blamer *b, uint32_t kind, const char *label, uint64_t data0,
		uint64_t data1)
{
	void *caller = __builtin_return_address(0);
	struct blamer_thread *t = thread_rec_fast(b);

	if (__builtin_expect(!t, 0))
		return push_slow(b, kind, label, data0, data1, caller);
	if (!BL_HAVE_TSC || b->clock != BLAMER_CLOCK_TSC)
		return push_monotonic(t, kind, label, data0, data1, caller);
	return push_on(t, bl_tsc(), kind, label, data0, data1, caller);
}

/* An activity with data ends: retire its data record, and keep it for
 * this thread's next activity data, or past BL_SPARE_DATA spares give it
 * to any thread's (the heap's free stack: no list scan either way). */
static __attribute__((noinline)) void pop_data(struct blamer *b, struct blamer_activity *a)
{
	blamer_ref ud = a->user_data;
	struct bl_tls_ent *e = thread_fast(b);

	st_release(A64(&a->user_data), 0);
	if (!bl_record_retire(b, ud, BLAMER_REC_USERDATA))
		return;		/* not a live record of its type: not to give */
	if (e && e->nspare < BL_SPARE_DATA)
		e->spare[e->nspare++] = ud;
	else
		bl_activity_data_give(b, ud);
}

static inline void pop_on(struct blamer *b, struct blamer_thread *t)
{
	uint32_t d = ld_relaxed(A32(&t->depth));

	if (!d)
		return;	/* unbalanced pop: nothing to undo */
	if (d <= t->stack_slots && t->stack[d - 1].user_data)
		pop_data(b, &t->stack[d - 1]);
	/* Release: readers see the shorter stack only after its contents. */
	st_release(A32(&t->depth), d - 1);
	/* Release: tells a reader that copied slot d - 1 that it may have
	 * changed under it. */
	st_release(A32(&t->data_version), ld_relaxed(A32(&t->data_version)) + 1);
}

static __attribute__((noinline)) void pop_slow(struct blamer *b)
{
	uint32_t i;

	/* The default not made (or reset since the push): no stack to pop,
	 * and none is made for it (a pop after blamer_reset() inside an
	 * activity left a heap of its own behind). */
	if (!b && !(b = bl_default_peek()))
		return;
	/* Nor a thread record: a thread that has none (its push found the
	 * heap full, or it never pushed) has nothing to pop, and registering
	 * it made each such pop look for room in the heap. */
	for (i = 0; i < BL_TLS_ENTS; i++)
		if (ent_is_current(&bl_tls.e[i], b)) {
			if (!ld_relaxed(A32(&b->heap.corrupt)))
				pop_on(b, bl_tls.e[i].rec);
			return;
		}
}

void blamer_pop(struct blamer *b)
{
	struct blamer_thread *t = thread_rec_fast(b);

	if (!t)
		pop_slow(b);
	else
		pop_on(b, t);
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
	if (strlen(name) >= sizeof(e->rec->name))
		bl_drop(b, BLAMER_DROP_NAME_CUT);
	return 0;
}
