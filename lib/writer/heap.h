/* SPDX-License-Identifier: MIT */
/*
 * The allocator: typed records in a heap of slabs (heap.c). Internal
 * to the library, but usable by tests. The backend (backend.c) only
 * provides zeroed slabs; everything about the format lives in heap.c.
 */
#ifndef BLAMER_HEAP_H
#define BLAMER_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "heap_format.h"

struct bl_backend;

/* One slab as this process maps it (process-local, never shared). */
struct bl_slab_map {
	uint8_t *base;
	uint64_t size;
};

struct bl_heap {
	struct bl_slab_map slabs[BLAMER_MAX_SLABS];
	/* atomic: slabs[] entries published (release after filling one) */
	uint32_t nslabs;
	/* atomic: set once the heap is found corrupt; checked before writes */
	uint32_t corrupt;
	uint32_t max_slabs;
	uint64_t slab_size;
	uint64_t heap_id;
	struct blamer_heap_header *hh;	/* in slab 0 */
	struct bl_backend *be;
};

/*
 * Makes slab 0 of a new heap through @be and writes the heap header and
 * the list head; the records come later (records.c). 0, or the
 * backend's -errno, or -EINVAL if it gave a slab of an impossible size.
 */
int bl_heap_create(struct bl_heap *h, struct bl_backend *be, uint64_t slab_size,
		   uint32_t max_slabs, uint64_t heap_id, const struct bl_clock *clock);
/* Writes nothing: the process lost the right to (fork) or is done. */
void bl_heap_unmap(struct bl_heap *h);
/* After fork: replace the parent's mappings by private scratch memory. */
void bl_heap_drop_after_fork(struct bl_heap *h);

/* Returns a zeroed record of @size bytes (incl. header) and @type, or 0
 * with *err = ENOSPC (full), EAGAIN (another thread is growing the heap),
 * EIO (corrupt) or EINVAL. */
blamer_ref bl_heap_alloc(struct bl_heap *h, uint32_t size, uint32_t type, int *err);
/* Pointer to a valid block at @ref with type @type (0: any) and at least
 * @size bytes, or NULL. Never trusts the heap. */
void *bl_heap_get(struct bl_heap *h, blamer_ref ref, uint32_t type, uint32_t size);
/* Appends @ref to the iterable list (idempotent). False if corrupt. */
bool bl_heap_make_iterable(struct bl_heap *h, blamer_ref ref);
/* Appends @ref unless @same() finds its equal on the list: the record on
 * the list (@ref or that one); 0 if corrupt or @ref was listed before.
 * @ref must be complete: others may use it as soon as it is listed. */
blamer_ref bl_heap_append_unique(struct bl_heap *h, blamer_ref ref,
				 bool (*same)(struct bl_heap *h, blamer_ref r, const void *key),
				 const void *key);
/* CAS of the type from @from to @to; with @clear the payload is zeroed
 * while the type is BLAMER_REC_TRANSITIONING. True if this caller won. */
bool bl_heap_change_type(struct bl_heap *h, blamer_ref ref, uint32_t to, uint32_t from,
			 bool clear);
uint32_t bl_heap_type(struct bl_heap *h, blamer_ref ref);

/* Iteration over the list; safe while others append. Start with it = 0. */
struct bl_iter {
	blamer_ref last;
	uint64_t count;
};
blamer_ref bl_heap_next(struct bl_heap *h, struct bl_iter *it, uint32_t *type);

void bl_heap_set_corrupt(struct bl_heap *h);
uint32_t bl_heap_flags(struct bl_heap *h);
uint64_t bl_heap_used(struct bl_heap *h);

static inline void *bl_ptr(struct bl_heap *h, blamer_ref ref)
{
	return h->slabs[blamer_ref_slab(ref)].base + blamer_ref_offset(ref);
}

#endif /* BLAMER_HEAP_H */
