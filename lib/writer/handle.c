// SPDX-License-Identifier: MIT
/*
 * Handles that outlive a fork: the one mechanism by which every handle a
 * program holds (a path, a value, and whatever later kind of handle
 * names a record) keeps working in a fork child.
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
 *
 * Here: a stale handle's record made again in the fork child's heap.
 * Where handles live is handle_store.c.
 */
#include <errno.h>

#include "atomic.h"
#include "internal.h"

void *bl_handle_resolve(struct bl_handle *h)
{
	struct blamer *b = h->b;
	blamer_ref ref = 0;
	void *rec;

	/* The child's heap, made now if this is its first write. */
	if (!bl_ready(b)) {
		bl_drop(b, bl_last_error() == EAGAIN ? BLAMER_DROP_BUSY : BLAMER_DROP_NO_HEAP);
		return NULL;
	}
	rec = h->remake(h, b, &ref);
	if (!rec)
		return NULL;
	/* Every thread that remakes it stores these same two values. */
	bl_handle_set(h, rec, ref);
	return rec;
}

/*
 * A record made once per handle and heap (a series', a path's): the
 * handle is the one of its key in the context, so the heap holds no
 * record of the key but one made through it, and no walk of the heap
 * looks for one. Threads that find the handle stale at once each make a
 * record; the first to store its own in @made wins, the others' stay off
 * the list (their bytes, once). Each lists the winner: the first to
 * claim it appends it and a later call returns at once, so a winner
 * stopped between its store and its append does not keep it unlisted.
 */
blamer_ref bl_handle_made(struct bl_heap *h, uint64_t *made, blamer_ref ref)
{
	blamer_ref won = 0;

	/* Acq_rel: ours is published whole; on failure, the winner is seen
	 * whole (@ref may be it already: a caller that loaded it) */
	if (atomic_compare_exchange_strong_explicit(A64(made), &won, ref, memory_order_acq_rel,
						    memory_order_acquire))
		won = ref;
	if (!bl_heap_make_iterable(h, won)) {
		bl_error(EIO, "blamer: the heap is corrupt");
		return 0;
	}
	return won;
}
