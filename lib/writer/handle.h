/* SPDX-License-Identifier: MIT */
/*
 * Handles that outlive a fork (handle.c, handle_store.c): the one
 * mechanism by which every handle a program holds (a path, a value, and
 * whatever later kind of handle names a record) keeps working in a fork
 * child.
 *
 * A handle is process memory, so the child inherits it; the heap record
 * it points at is the parent's, which the child must never write (its
 * mapping is scratch memory in the child). So a handle carries what it
 * needs to find or make its record again (its key: path ids and units,
 * a field's scope, name and type...), and every handle of a context is
 * kept where the fork handler finds it (handle_store.c): in the child,
 * before anything else runs, it makes each one *stale* by clearing its
 * record (bl_handles_forked()). A stale handle's first use re-makes its
 * record in the child's own heap (made then, if it was not yet) through
 * its kind's remake().
 *
 * The use is lock-free and makes no system call: one acquire load of the
 * record, which is all a current handle costs (no generation to compare:
 * the fork handler did the work, once, instead of every use). Any number
 * of threads may find a handle stale at once: each remakes, and they all
 * get the same record, because remake() is a find-or-make that makes a
 * record once per key and heap (what dag.c and userdata.c already
 * guarantee). So record and ref need no lock: every thread that remakes
 * stores the same two values, ref first, then the record with release.
 */
#ifndef BLAMER_WRITER_HANDLE_H
#define BLAMER_WRITER_HANDLE_H

#include <stdbool.h>
#include <stdint.h>

#include "atomic.h"
#include "heap_format.h"

struct blamer;
struct bl_handle;

/*
 * Finds or makes @h's record in @b's heap, which is ready: where a use
 * writes (the record, or a value's bytes) and *@ref, or NULL when it
 * cannot (it has counted why with bl_drop()). Called only when @h is
 * stale.
 */
typedef void *(*bl_remake_fn)(struct bl_handle *h, struct blamer *b, blamer_ref *ref);

struct bl_handle {
	struct blamer *b;
	bl_remake_fn remake;
	uint64_t rec;		/* atomic: where a use writes, in this process's
				 * heap; 0: stale (made before a fork) */
	uint64_t ref;		/* atomic: a second word of the kind's: a path's
				 * blamer_ref, a value's field (struct blamer_field) */
};

/* The record of a stale handle, remade; NULL (counted) if it cannot be. */
void *bl_handle_resolve(struct bl_handle *h);

/* Publishes @rec and @ref as @h's record: ref first, then the record
 * with release, so whoever loads the record (acquire) sees ref, and the
 * record's contents its maker published before. */
static inline void bl_handle_set(struct bl_handle *h, void *rec, uint64_t ref)
{
	st_relaxed(A64(&h->ref), ref);
	st_release(A64(&h->rec), (uint64_t)(uintptr_t)rec);
}

/* A handle made now for @rec (and @ref) of @b's current heap. */
static inline void bl_handle_init(struct bl_handle *h, struct blamer *b, bl_remake_fn remake,
				  void *rec, uint64_t ref)
{
	h->b = b;
	h->remake = remake;
	bl_handle_set(h, rec, ref);
}

/* The fork handler, in the child: @h is stale. */
static inline void bl_handle_stale(struct bl_handle *h)
{
	/* Relaxed: the child has one thread now. */
	st_relaxed(A64(&h->rec), 0);
}

/* @h's record in the current heap: the hot path. */
static inline void *bl_handle_rec(struct bl_handle *h)
{
	/* Acquire: pairs with bl_handle_set(). */
	uint64_t rec = ld_acquire(A64(&h->rec));

	if (__builtin_expect(rec != 0, 1))
		return (void *)(uintptr_t)rec;
	return bl_handle_resolve(h);
}

/* The ref that goes with bl_handle_rec()'s answer (call it after). */
static inline blamer_ref bl_handle_ref(struct bl_handle *h)
{
	return ld_relaxed(A64(&h->ref));
}

/* Whether @h names a record of the current heap (no remake). */
static inline bool bl_handle_current(struct bl_handle *h)
{
	return ld_acquire(A64(&h->rec)) != 0;
}

#endif /* BLAMER_WRITER_HANDLE_H */
