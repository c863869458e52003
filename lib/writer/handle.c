// SPDX-License-Identifier: MIT
/*
 * Handles that outlive a fork (handle.h): a stale handle's record made
 * again in the fork child's heap. Where handles live is handle_store.c.
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
