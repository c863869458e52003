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
 *  - The cache holds BL_TLS_ENTS contexts; an entry evicted for another
 *    is parked (tls.c), its record this thread's still, and a push, or
 *    a pop, in that context takes it back before registering anew.
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

static bool pinned(const struct bl_tls *t, uint32_t i)
{
	return (t->pins >> (4 * i)) & 0xf;
}

/* A free slot, one of an old incarnation of this context (a context
 * closed, another opened at its address), or one of a heap before a
 * fork (serial 0). */
static bool slot_free(const struct bl_tls_ent *e, struct blamer *b)
{
	return !e->b || e->b == b || !e->serial;
}

/* Slot @i pinned for the caller, if no other use of it is under way on
 * this thread (that a signal handler interrupted) and, unless @any, it
 * is free. Pinned first, then checked: a handler that took the slot in
 * between has made it another context's, or pins it still. */
static bool slot_take(struct bl_tls *t, uint32_t i, struct blamer *b, bool any)
{
	if (pinned(t, i))
		return false;
	bl_thread_pin(&t->e[i]);
	if (((t->pins >> (4 * i)) & 0xf) == 1 && (any || slot_free(&t->e[i], b)))
		return true;
	bl_thread_put(&t->e[i]);
	return false;
}

/*
 * A slot of this thread's cache for @b, emptied and pinned: a free one,
 * else the next victim round-robin that no use under way pins, parked
 * (tls.c): its record stays this thread's, with its stack, its activity
 * data spares and its shard claims, and is taken back when the thread
 * writes that context again. Neither dropped (a thread writing more than
 * BL_TLS_ENTS contexts in turn left a record per round in each heap) nor
 * given back (the thread, or the code a signal handler interrupted,
 * still wrote through it: an activity field's handle, a push under way,
 * a series' home shard). NULL if every slot is pinned (handlers nested
 * BL_TLS_ENTS deep, each in another context).
 */
static struct bl_tls_ent *slot_for(struct bl_tls *t, struct blamer *b)
{
	struct bl_tls_ent *e = NULL;
	uint32_t i;

	for (i = 0; i < BL_TLS_ENTS && !e; i++)
		if (slot_take(t, i, b, false))
			e = &t->e[i];
	for (i = 0; i < BL_TLS_ENTS && !e; i++) {
		uint32_t v = t->next_victim++ % BL_TLS_ENTS;

		if (slot_take(t, v, b, true)) {
			e = &t->e[v];
			/* A full table drops it, as before parking. */
			bl_tls_park(e, t->tid);
		}
	}
	if (e)
		memset(e, 0, sizeof(*e));
	return e;
}

/* @e (emptied) becomes @from, @b's entry. b last, after a signal fence:
 * a handler on this thread that finds the entry finds it whole. */
static void ent_install(struct bl_tls_ent *e, const struct bl_tls_ent *from, struct blamer *b)
{
	struct bl_tls_ent tmp = *from;

	tmp.b = NULL;
	*e = tmp;
	atomic_signal_fence(memory_order_seq_cst);
	e->b = b;
}

/* This thread's parked entry for @b, back in its cache and pinned; NULL
 * if none. */
static struct bl_tls_ent *thread_unpark(struct blamer *b)
{
	struct bl_tls *t = &bl_tls;
	struct bl_tls_ent back, *e;

	if (!bl_tls_unpark(b, t->tid, &back))
		return NULL;
	e = slot_for(t, b);
	if (!e) {
		bl_tls_park(&back, t->tid);	/* no slot: parked again */
		return NULL;
	}
	ent_install(e, &back, b);
	return e;
}

static struct bl_tls_ent *thread_register(struct blamer *b)
{
	struct bl_tls *t = &bl_tls;
	struct bl_tls_ent *e, fresh = { 0 };
	struct blamer_thread *rec;
	blamer_ref ref;

	e = thread_unpark(b);
	if (e)
		return e;
	e = slot_for(t, b);
	if (!e) {
		bl_error(EAGAIN, "blamer: every entry of the thread's cache is in use");
		return NULL;
	}
	ref = bl_heap_free_pop(&b->heap, &b->heap.free_threads, BLAMER_REC_THREAD,
			       BL_THREAD_LINK);
	if (!ref)
		ref = bl_record_new(b, BLAMER_REC_THREAD, thread_size(b), false);
	if (!ref) {
		bl_thread_put(e);
		return NULL;
	}
	rec = bl_ptr(&b->heap, ref);
	t->tid = bl_gettid();
	rec->tid = t->tid;
	rec->start_time_ns = bl_monotonic_ns();
	rec->stack_slots = b->stack_depth;
	prctl(PR_GET_NAME, rec->name);	/* 16 bytes, NUL-terminated */
	bl_owner_set(b, &rec->owner);
	fresh.rec = rec;
	fresh.ref = ref;
	fresh.serial = b->serial;
	fresh.gen = ld_relaxed(A32(&b->gen));
	ent_install(e, &fresh, b);
	bl_tls_arm_exit(t);
	return e;
}

/* This thread's entry for @b in its cache, pinned; NULL if none. Pinned
 * first, then checked: a handler that evicted it in between made it
 * another context's. */
static struct bl_tls_ent *thread_cached(struct blamer *b)
{
	struct bl_tls_ent *e;
	uint32_t i;

	for (i = 0; i < BL_TLS_ENTS; i++) {
		e = &bl_tls.e[i];
		if (!ent_is_current(e, b))
			continue;
		bl_thread_pin(e);
		if (ent_is_current(e, b))
			return e;
		bl_thread_put(e);
	}
	return NULL;
}

struct bl_tls_ent *bl_thread_get(struct blamer *b)
{
	struct bl_tls_ent *e = thread_cached(b);

	if (e)
		return e;
	if (!bl_ready(b))
		return NULL;
	return thread_register(b);
}

/*
 * The thread's record if @b's fast path applies: the cached entry is for
 * this very context and heap, and the heap is not corrupt. The record is
 * loaded before the entry is checked: a signal handler that evicts the
 * entry after the check leaves the record this thread's (parked), and
 * one that evicted it before fails the check.
 */
static inline struct blamer_thread *thread_rec_fast(struct blamer *b)
{
	struct bl_tls_ent *e = &bl_tls.e[0];
	struct blamer_thread *rec = e->rec;

	atomic_signal_fence(memory_order_seq_cst);
	if (__builtin_expect(b && ent_is_current(e, b) && !ld_relaxed(A32(&b->heap.corrupt)), 1))
		return rec;
	return NULL;
}

/* The thread's record the slow way (default context, first push of the
 * thread, after fork, a parked entry), or NULL with *@err set. */
static struct blamer_thread *thread_rec_slow(struct blamer **bp, int *err)
{
	struct blamer_thread *rec;
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
	/* Unpinned once loaded: the record stays this thread's if a
	 * handler evicts the entry now. */
	rec = e->rec;
	bl_thread_put(e);
	if (ld_relaxed(A32(&(*bp)->heap.corrupt))) {
		*err = -EIO;
		return NULL;
	}
	return rec;
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
	struct blamer_thread *rec;
	int err = -EIO;

	rec = thread_rec_slow(&b, &err);
	if (!rec)
		return err;
	return push_on(rec, timestamp(b), kind, label, data0, data1, caller);
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
	struct bl_tls_ent *e = bl_thread_get(b);

	st_release(A64(&a->user_data), 0);
	/* Not a live record of its type: not to give. */
	if (bl_record_retire(b, ud, BLAMER_REC_USERDATA)) {
		if (e && e->nspare < BL_SPARE_DATA)
			e->spare[e->nspare++] = ud;
		else
			bl_activity_data_give(b, ud);
	}
	if (e)
		bl_thread_put(e);
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
	struct blamer_thread *rec;
	struct bl_tls_ent *e;

	/* The default not made (or reset since the push): no stack to pop,
	 * and none is made for it (a pop after blamer_reset() inside an
	 * activity left a heap of its own behind). */
	if (!b && !(b = bl_default_peek()))
		return;
	/* Nor a thread record: a thread that has none (its push found the
	 * heap full, or it never pushed) has nothing to pop, and registering
	 * it made each such pop look for room in the heap. Its record may
	 * be parked, evicted since the push by writes to other contexts:
	 * taken back, the pop ends that push (it stayed on the stack
	 * otherwise, under every later one). */
	e = thread_cached(b);
	if (!e)
		e = thread_unpark(b);
	if (!e)
		return;
	rec = e->rec;
	bl_thread_put(e);
	if (!ld_relaxed(A32(&b->heap.corrupt)))
		pop_on(b, rec);
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
	bl_thread_put(e);
	if (strlen(name) >= sizeof(e->rec->name))
		bl_drop(b, BLAMER_DROP_NAME_CUT);
	return 0;
}
