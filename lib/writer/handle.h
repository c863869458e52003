/* SPDX-License-Identifier: MIT */
/*
 * Handles that outlive a fork (handle.c): the one mechanism by which
 * every handle a program holds (a path, a value, and whatever later kind
 * of handle names a record) keeps working in a fork child.
 *
 * A handle is process memory, so the child inherits it; the heap record
 * it points at is the parent's, which the child must never write (its
 * mapping is scratch memory in the child). So a handle carries what it
 * needs to find or make its record again (its key: path ids and units,
 * a field's scope, name and type...) and the generation of the context
 * its record belongs to: the process's fork generation, which changes in
 * a fork child only (every context's heap is new there); a handle whose
 * generation is not the process's is stale,
 * and its first use re-makes its record in the child's own heap (made
 * then, if it was not yet) through its kind's remake().
 *
 * The use is lock-free and makes no system call: an acquire load of the
 * handle's generation, a load of the process's, then the record. Any
 * number of threads may find a handle stale at once: each remakes, and
 * they all get the same record, because remake() is a find-or-make that
 * makes a record once per key and heap (what dag.c and userdata.c
 * already guarantee). So the record and ref need no lock: every writer
 * of one generation stores the same values, before the generation
 * (release).
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
	uint32_t gen;		/* atomic: the generation rec and ref belong to */
	uint32_t reserved;
	uint64_t rec;		/* atomic: where a use writes, in that generation's heap */
	uint64_t ref;		/* atomic: a second word of the kind's: a path's
				 * blamer_ref, a value's field (struct blamer_field) */
};

/* The record of a stale handle, remade; NULL (counted) if it cannot be. */
void *bl_handle_resolve(struct bl_handle *h);

/*
 * The process's fork generation: bumped by the fork handler in the child
 * (context.c), read by every handle use. One word for the process, not
 * one per context, so a handle's check is one load, not two dependent
 * ones (handle, context, generation).
 */
extern uint32_t bl_fork_gen __attribute__((visibility("hidden")));

static inline uint32_t bl_fork_gen_now(void)
{
	/* Relaxed: only a fork child writes it, while it is the sole thread. */
	return ld_relaxed(A32(&bl_fork_gen));
}

/* A handle made now for record @rec at @ref of @b's current heap. */
static inline void bl_handle_init(struct bl_handle *h, struct blamer *b, bl_remake_fn remake,
				  void *rec, blamer_ref ref)
{
	h->b = b;
	h->remake = remake;
	st_relaxed(A64(&h->rec), (uint64_t)(uintptr_t)rec);
	st_relaxed(A64(&h->ref), ref);
	/* Release: whoever loads this generation (acquire) sees rec and ref. */
	st_release(A32(&h->gen), bl_fork_gen_now());
}

/* @h's record in the current heap: the hot path. */
static inline void *bl_handle_rec(struct bl_handle *h)
{
	/* Acquire: pairs with the release of gen in bl_handle_resolve(),
	 * so rec is the one stored for this generation. */
	uint32_t g = ld_acquire(A32(&h->gen));

	if (__builtin_expect(g == bl_fork_gen_now(), 1))
		return (void *)(uintptr_t)ld_relaxed(A64(&h->rec));
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
	return ld_acquire(A32(&h->gen)) == bl_fork_gen_now();
}

#endif /* BLAMER_WRITER_HANDLE_H */
