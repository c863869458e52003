// SPDX-License-Identifier: MIT
/*
 * Nothing lost silently: every write the writer cannot record in full
 * (BLAMER_DROP_* in blamer.h) is counted by reason in the heap's DROPS
 * record, which readers show in every view. Counting is one relaxed
 * atomic add: lock-free, no system call, async-signal-safe, callable on
 * any path that drops. While the context has no heap (a fork child
 * before its first write made one, or making it failed) the counts wait
 * in process memory and go into the DROPS record of the next heap made.
 *
 * The DROPS record itself is made with the heap (records.c). The one
 * drop that no heap can count is a write to a heap found
 * corrupt: nothing writes a corrupt heap again, and its CORRUPT flag
 * says so.
 */
#include "atomic.h"
#include "internal.h"

void bl_drop(struct blamer *b, uint32_t reason)
{
	/* Acquire: pairs with the release that published the record. */
	struct blamer_drops *d;

	if (!b || reason >= BLAMER_DROP_REASONS)
		return;
	d = atomic_load_explicit(&b->drops, memory_order_acquire);
	/* Relaxed: counters; no other data hangs on them. */
	if (d && !ld_relaxed(A32(&b->heap.corrupt)))
		atomic_fetch_add_explicit(A64(&d->count[reason]), 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(A64(&b->pending_drops[reason]), 1,
					  memory_order_relaxed);
}
