// SPDX-License-Identifier: MIT
/*
 * Handles that outlive a fork (handle.h): a stale handle's record made
 * again in the fork child's heap. Where handles live is handle_store.c.
 */
#include <errno.h>

#include "atomic.h"
#include "context.h"

void *bl_handle_resolve(struct bl_handle *h)
{
	struct blamer *b = h->b;
	uint32_t gen = bl_fork_gen_now();
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
	/* Relaxed, then release on gen: every thread that remakes in this
	 * generation stores these same two values (handle.h). */
	st_relaxed(A64(&h->rec), (uint64_t)(uintptr_t)rec);
	st_relaxed(A64(&h->ref), ref);
	st_release(A32(&h->gen), gen);
	return rec;
}
