// SPDX-License-Identifier: MIT
/*
 * A heap's slabs, before any record is read: putting them in the order
 * their headers claim (one slab 0 of a version this reader reads, one
 * heap id, no index twice, a prefix without holes), then the heap header
 * of slab 0 (state, flags, clock, slab count) and the slab ids it names
 * against the backend's own. Only what passes is walked, and of each slab
 * only what its writer allocated: the bytes below its freeptr (a claim,
 * so capped by the slab's real size). That is all a reader touches, on
 * either backend.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

void rd_slab_drop(struct rd_slab *s)
{
	if (s->unmap && s->buf)
		munmap(s->buf, s->map_len);
	else if (s->owned)
		free(s->buf);
	if (s->fd >= 0 && !s->fd_kept)
		close(s->fd);
	s->buf = NULL;
	s->fd = -1;
	s->unmap = s->owned = s->fd_kept = false;
}

bool rd_heap_order(struct rd_heap *h, struct rd_slab *raw, uint32_t n)
{
	struct blamer_slab_header sh;
	uint64_t heap_id = 0;
	bool have0 = false;
	uint32_t i, other_version = 0;

	h->nslabs = 0;
	for (i = 0; i < n; i++) {
		if (raw[i].size < sizeof(struct blamer_slab_header) || !raw[i].buf)
			continue;
		memcpy(&sh, raw[i].buf, sizeof(sh));
		if (sh.magic == BLAMER_HEAP_MAGIC && sh.slab_index == 0 &&
		    rd_version_ok(sh.version) && !have0) {
			have0 = true;
			heap_id = sh.heap_id;
			h->p->heap_id = heap_id;
			h->version = sh.version;
		} else if (sh.magic == BLAMER_HEAP_MAGIC && sh.slab_index == 0) {
			other_version = sh.version;
		}
	}
	if (!have0 && other_version) {
		rd_problem(h->p, BLAMER_HEALTH_UNREADABLE,
			   "heap format version %u (this reader reads %u to %u)", other_version,
			   BLAMER_HEAP_VERSION_MIN, BLAMER_HEAP_VERSION);
		return false;
	}
	if (!have0) {
		rd_problem(h->p, BLAMER_HEALTH_EMPTY, "no initialized slab 0");
		return false;
	}
	for (i = 0; i < n; i++) {
		if (raw[i].size < sizeof(struct blamer_slab_header) || !raw[i].buf)
			continue;
		memcpy(&sh, raw[i].buf, sizeof(sh));
		if (sh.magic == 0 && sh.heap_id == 0)
			continue;	/* created, not yet initialized: being added */
		if (sh.magic != BLAMER_HEAP_MAGIC || sh.version != h->version ||
		    sh.header_size != sizeof(struct blamer_slab_header) || sh.slab_index >= BLAMER_MAX_SLABS ||
		    sh.heap_id != heap_id) {
			rd_problem(h->p, BLAMER_HEALTH_CORRUPT,
				   "slab %llu: bad slab header (magic %#x, index %u)",
				   (unsigned long long)raw[i].id, sh.magic, sh.slab_index);
			continue;
		}
		if (sh.slab_index >= n) {
			rd_problem(h->p, BLAMER_HEALTH_CORRUPT,
				   "slab %llu claims index %u of %u",
				   (unsigned long long)raw[i].id, sh.slab_index, n);
			continue;
		}
		if (h->slabs[sh.slab_index].buf) {
			rd_problem(h->p, BLAMER_HEALTH_CORRUPT, "two slabs claim index %u",
				   sh.slab_index);
			continue;
		}
		h->slabs[sh.slab_index] = raw[i];
		h->slabs[sh.slab_index].index = sh.slab_index;
	}
	/* usable slabs: the prefix without holes */
	for (i = 0; i < n && h->slabs[i].buf; i++)
		;
	h->nslabs = i;
	return true;
}

/* The bytes of slab @i its writer allocated, as far as they can be read. */
static void bound_slab(struct rd_heap *h, uint32_t i, uint64_t *used)
{
	struct rd_slab *s = &h->slabs[i];
	uint64_t real = s->real_size ? s->real_size : s->size;
	uint64_t first = i ? sizeof(struct blamer_slab_header) : BLAMER_SLAB0_FIRST_RECORD;
	struct blamer_slab_header sh;
	uint64_t end;

	if (!rd_copy_raw(h, i, 0, sizeof(sh), &sh))
		return;
	end = sh.freeptr;
	if (end > real) {
		rd_problem(h->p, BLAMER_HEALTH_CORRUPT, "slab %u: freeptr %llu past its %llu bytes",
			   i, (unsigned long long)end, (unsigned long long)real);
		end = real;
	}
	*used += end;
	if (end < first) {
		rd_problem(h->p, BLAMER_HEALTH_CORRUPT, "slab %u: freeptr %llu inside its header",
			   i, (unsigned long long)end);
		end = first;
	}
	if (end < s->size)
		s->size = end;
}

bool rd_heap_check(struct rd_heap *h, struct blamer_heap_header *hh)
{
	struct blamer_snap_process *p = h->p;
	uint32_t i, nvalid;
	uint64_t used = 0;

	for (i = 0; i < h->nslabs; i++)
		bound_slab(h, i, &used);
	p->used = used;
	if (!rd_copy_raw(h, 0, BLAMER_HEAP_HEADER_OFFSET, sizeof(*hh), hh)) {
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "slab 0 too small for the heap header");
		return false;
	}
	p->heap_state = hh->state;
	p->heap_flags = hh->flags;
	p->heap_create_time_ns = hh->create_time_ns;
	/* exit() as a dir writer's exit handler recorded it: the heap's
	 * claim, taken only where the kernel has no facts, for an owner
	 * that is gone */
	if ((hh->exit & BLAMER_EXIT_CALLED) && !p->kernel_facts && p->state == BLAMER_PROC_DEAD) {
		p->exited = true;
		p->exit_code = BLAMER_EXIT_STATUS(hh->exit);
		p->exit_signal = 0;
	}
	if (hh->state == BLAMER_HEAP_UNINIT) {
		rd_problem(p, BLAMER_HEALTH_EMPTY, "heap not initialized yet");
		return false;
	}
	if (hh->state != BLAMER_HEAP_READY && hh->state != BLAMER_HEAP_DELETED) {
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "unknown heap state %u", hh->state);
		return false;
	}
	if (hh->flags & BLAMER_HEAP_F_CORRUPT)
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "the writer marked the heap corrupt");
	if (hh->clock != BLAMER_CLOCK_MONOTONIC && hh->clock != BLAMER_CLOCK_TSC)
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "unknown activity clock %u", hh->clock);
	if (hh->max_slabs > BLAMER_MAX_SLABS || hh->slab_count > hh->max_slabs) {
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "slab count %u / max %u out of range",
			   hh->slab_count, hh->max_slabs);
		hh->slab_count = 1;
	}
	if (hh->slab_count > h->nslabs)
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "heap claims %u slabs, %u readable",
			   hh->slab_count, h->nslabs);
	/* only published slabs may be referenced */
	nvalid = hh->slab_count < h->nslabs ? hh->slab_count : h->nslabs;
	if (nvalid == 0)
		nvalid = 1;
	for (i = 0; i < nvalid && h->check_ids; i++) {
		if (hh->slab_ids[i] != h->slabs[i].id) {
			rd_problem(p, BLAMER_HEALTH_CORRUPT,
				   "slab %u is %llu, the heap names %llu", i,
				   (unsigned long long)h->slabs[i].id,
				   (unsigned long long)hh->slab_ids[i]);
			break;
		}
	}
	h->nslabs = nvalid;
	return true;
}
