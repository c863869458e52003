// SPDX-License-Identifier: MIT
/*
 * Records: the floor every writer feature stands on. A record is made
 * (fresh, or a retired one of the same type and size taken over),
 * stamped with its owner (data_id last, with release, so a half-made
 * record never passes for a valid one) and retired; the records a heap
 * starts with (process, drops) are made here when the heap is, the
 * process's data and log when first used (bl_part()). Nothing here
 * makes a context or a heap: callers hold a context whose heap is ready
 * (bl_ready(), bl_heap_for()).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>

#include "atomic.h"
#include "internal.h"


void bl_owner_set(struct blamer *b, struct blamer_owner *o)
{
	o->pid = b->pid;
	o->create_stamp = b->start_ns;
	/* Release, last: a reader that sees the id sees pid and stamp (and
	 * whatever the record's maker wrote before calling this). */
	st_release(A32(&o->data_id), b->data_id);
}

blamer_ref bl_record_alloc(struct blamer *b, uint32_t type, uint32_t size)
{
	struct bl_heap *h = &b->heap;
	blamer_ref ref;
	int err = 0;

	if (ld_relaxed(A32(&h->corrupt))) {
		bl_error(EIO, "blamer: the heap is corrupt");
		return 0;
	}
	size = (size + 7) & ~7u;
	ref = bl_heap_alloc(h, size, type, &err);
	if (!ref) {
		/* Whatever the caller wanted to record is lost: counted. */
		if (err == ENOSPC || err == EAGAIN)
			bl_drop(b, err == ENOSPC ? BLAMER_DROP_HEAP_FULL : BLAMER_DROP_BUSY);
		uint32_t n = ld_acquire(A32(&h->nslabs));

		if (err == ENOSPC && (n >= h->max_slabs || n >= BLAMER_MAX_SLABS))
			bl_error(err, "blamer: the heap is full (%u slabs of %llu bytes): no room for a record of %u bytes (slab_size and max_slabs give more)",
				 n, (unsigned long long)h->slab_size, size);
		else if (err == ENOSPC)
			bl_error(err, "blamer: the heap cannot grow (%u of max_slabs %u slabs of %llu bytes: the backend made no more lately, out of space or memory?): no room for a record of %u bytes",
				 n, h->max_slabs, (unsigned long long)h->slab_size, size);
		else
			bl_error(err, "blamer: cannot allocate a record of %u bytes", size);
	}
	return ref;
}

blamer_ref bl_record_new(struct blamer *b, uint32_t type, uint32_t size, bool reuse)
{
	struct bl_heap *h = &b->heap;
	struct bl_iter it = { 0 };
	blamer_ref ref;
	uint32_t t;

	if (ld_relaxed(A32(&h->corrupt))) {
		bl_error(EIO, "blamer: the heap is corrupt");
		return 0;
	}
	size = (size + 7) & ~7u;
	if (reuse) {
		/* The first to change a retired record's type owns it. */
		while ((ref = bl_heap_next(h, &it, &t)))
			if (t == BLAMER_RETIRED(type) &&
			    ((struct blamer_block *)bl_ptr(h, ref))->size == size &&
			    bl_heap_change_type(h, ref, type, t, true))
				return ref;
	}
	ref = bl_record_alloc(b, type, size);
	if (!ref)
		return 0;
	if (!bl_heap_make_iterable(h, ref)) {
		bl_error(EIO, "blamer: the heap is corrupt");
		return 0;
	}
	return ref;
}

bool bl_record_retire(struct blamer *b, blamer_ref ref, uint32_t type)
{
	struct bl_heap *h = &b->heap;
	struct blamer_block *blk = bl_heap_get(h, ref, type, sizeof(struct blamer_block) +
					       sizeof(struct blamer_owner));

	if (!blk || ld_relaxed(A32(&h->corrupt)))
		return false;	/* a corrupt heap is not written */
	/* Release: readers that still see the old id saw consistent data;
	 * those that see 0 skip the record. */
	st_release(A32(&((struct blamer_owner *)(blk + 1))->data_id), 0);
	return bl_heap_change_type(h, ref, BLAMER_RETIRED(type), type, false);
}

blamer_ref bl_userdata_new(struct blamer *b, uint32_t scope, uint32_t capacity)
{
	struct blamer_userdata *u;
	blamer_ref ref;
	int err = 0;

	ref = bl_heap_alloc(&b->heap, sizeof(*u) + capacity, BLAMER_REC_USERDATA, &err);
	if (!ref) {
		if (err == ENOSPC || err == EAGAIN)
			bl_drop(b, err == ENOSPC ? BLAMER_DROP_HEAP_FULL : BLAMER_DROP_BUSY);
		return 0;
	}
	u = bl_ptr(&b->heap, ref);
	u->scope = scope;
	u->capacity = capacity;
	bl_owner_set(b, &u->owner);
	if (!bl_heap_make_iterable(&b->heap, ref))
		return 0;
	return ref;
}

static void read_cmdline(struct blamer_process *p)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	n = read(fd, p->cmdline, sizeof(p->cmdline));
	close(fd);
	if (n > 0)
		p->cmdline_len = (uint32_t)n;
}

int bl_process_records(struct blamer *b)
{
	struct bl_heap *h = &b->heap;
	struct blamer_process *p;
	blamer_ref ref;
	int err = 0;

	/* Made directly with the allocator, not with bl_record_new(): the
	 * context is not READY yet, and a new heap has nothing to reuse. */
	ref = bl_heap_alloc(h, sizeof(*p), BLAMER_REC_PROCESS, &err);
	if (!ref)
		return bl_error(err, "blamer: cannot allocate the process record");
	p = bl_ptr(h, ref);
	read_cmdline(p);
	/* Relaxed: published with the record (owner release, list append). */
	st_relaxed(A32(&p->phase), BLAMER_PHASE_LAUNCHED);
	b->process = ref;
	bl_owner_set(b, &p->owner);
	if (!bl_heap_make_iterable(h, ref))
		return bl_error(EIO, "blamer: the new heap is corrupt");
	/* Release: a reader that finds the process ref finds it complete. */
	st_release(A64(&h->hh->process), ref);
	return 0;
}

/* A new LOG record of the context's log_slots, listed; 0 if none. */
static blamer_ref log_new(struct blamer *b)
{
	struct blamer_log *log;
	blamer_ref ref;

	ref = bl_record_alloc(b, BLAMER_REC_LOG,
			      sizeof(*log) + b->log_slots * sizeof(struct blamer_log_slot));
	if (!ref)
		return 0;
	log = bl_ptr(&b->heap, ref);
	log->slot_count = b->log_slots;
	bl_owner_set(b, &log->owner);
	if (!bl_heap_make_iterable(&b->heap, ref)) {
		bl_error(EIO, "blamer: the heap is corrupt");
		return 0;
	}
	return ref;
}

/*
 * The process's or the application's data, or the log: 17 KB of a heap
 * that most processes never write (a worker that only counts). Made on
 * first use, not with the heap, so an idle or metrics-only heap is the
 * size of what it holds: fewer pages touched by its process, fewer bytes
 * copied by every reader of it.
 *
 * Lock-free, for threads and signal handlers alike: each maker lists a
 * whole record of its own (owner set: a reader that meets it on the
 * list shows it at once, as it does a record the process record does
 * not name yet), then CASes it into the context's slot. The first CAS
 * wins; a loser retires its record (it wrote nothing in it) and uses the
 * winner's. The winner then names it in the process record. What is
 * written after the CAS is never lost: the record was listed before it.
 * A fork child's slots are 0 (context.c): its heap makes its own.
 */
blamer_ref bl_part(struct blamer *b, enum bl_part part)
{
	static const struct {
		uint32_t type, scope;
		size_t named;	/* where the process record names it */
	} parts[] = {
		[BL_PART_GLOBAL_DATA] = { BLAMER_REC_USERDATA, BLAMER_DATA_GLOBAL,
					  offsetof(struct blamer_process, global_data) },
		[BL_PART_PROCESS_DATA] = { BLAMER_REC_USERDATA, BLAMER_DATA_PROCESS,
					   offsetof(struct blamer_process, user_data) },
		[BL_PART_LOG] = { BLAMER_REC_LOG, 0, offsetof(struct blamer_process, log) },
	};
	blamer_ref *slot = &b->parts[part], ref = ld_acquire(A64(slot)), won = 0;
	struct blamer_process *p;

	if (ref)
		return ref;
	if (parts[part].type == BLAMER_REC_LOG) {
		ref = log_new(b);
	} else {
		ref = bl_userdata_new(b, parts[part].scope, BL_DATA_BYTES);
		if (!ref)
			bl_error(ENOSPC, "blamer: no room for the %s data",
				 part == BL_PART_GLOBAL_DATA ? "global" : "process");
	}
	if (!ref)
		return 0;
	/* Acq_rel: the winner's record is whole for whoever loads the slot
	 * (the acquire above); a loser takes the winner's. */
	if (!atomic_compare_exchange_strong_explicit(A64(slot), &won, ref, memory_order_acq_rel,
						     memory_order_acquire)) {
		bl_record_retire(b, ref, parts[part].type);
		return won;
	}
	p = bl_heap_get(&b->heap, b->process, BLAMER_REC_PROCESS, sizeof(*p));
	if (p)	/* Release: a reader following it finds the record whole. */
		st_release(A64((uint8_t *)p + parts[part].named), ref);
	return ref;
}

int bl_drops_record(struct blamer *b)
{
	struct bl_heap *h = &b->heap;
	struct blamer_process *p;
	struct blamer_drops *d;
	blamer_ref ref;
	uint32_t i;
	int err = 0;

	ref = bl_heap_alloc(h, sizeof(*d), BLAMER_REC_DROPS, &err);
	if (!ref)
		return bl_error(err, "blamer: cannot allocate the drop counters");
	d = bl_ptr(h, ref);
	for (i = 0; i < BLAMER_DROP_REASONS; i++)
		d->count[i] = atomic_exchange_explicit(A64(&b->pending_drops[i]), 0,
						       memory_order_relaxed);
	bl_owner_set(b, &d->owner);
	if (!bl_heap_make_iterable(h, ref))
		return bl_error(EIO, "blamer: the new heap is corrupt");
	p = bl_heap_get(h, b->process, BLAMER_REC_PROCESS, sizeof(*p));
	if (p)
		st_release(A64(&p->drops), ref);
	/* Release: a counting thread that finds it finds it whole. */
	atomic_store_explicit(&b->drops, d, memory_order_release);
	/* What other threads counted while we made it. */
	for (i = 0; i < BLAMER_DROP_REASONS; i++)
		atomic_fetch_add_explicit(A64(&d->count[i]),
					  atomic_exchange_explicit(A64(&b->pending_drops[i]), 0,
								   memory_order_relaxed),
					  memory_order_relaxed);
	return 0;
}

static uint64_t *claim_of(struct bl_heap *h, blamer_ref ref, uint32_t type);

void bl_shards_release(struct blamer *b, int64_t tid)
{
	struct bl_heap *h = &b->heap;
	struct bl_iter it = { 0 };
	blamer_ref ref;
	uint32_t type;

	if (ld_relaxed(A32(&h->corrupt)))
		return;		/* a corrupt heap is not written */
	while ((ref = bl_heap_next(h, &it, &type))) {
		/* DAG and metric shards: the same claim protocol */
		uint64_t *claim = claim_of(h, ref, type);

		/* Release: our adds come before those of the next claimer. */
		if (claim && ld_relaxed(A64(claim)) == (uint64_t)tid)
			st_release(A64(claim), 0);
	}
}

void bl_claim_note(struct blamer *b, struct bl_tls_ent *e, const void *s)
{
	struct bl_heap *h = &b->heap;
	uint32_t i, n = ld_acquire(A32(&h->nslabs));
	blamer_ref ref = 0;

	for (i = 0; i < e->nclaims && i < BL_CLAIMS; i++)
		if (bl_ptr(h, e->claims[i]) == s)
			return;
	if (e->nclaims >= BL_CLAIMS) {
		e->nclaims = BL_CLAIMS + 1;	/* more than noted: the exit walks */
		return;
	}
	for (i = 0; i < n && !ref; i++)
		if ((const uint8_t *)s >= h->slabs[i].base &&
		    (const uint8_t *)s < h->slabs[i].base + h->slabs[i].size)
			ref = blamer_make_ref(i, (uint32_t)((const uint8_t *)s - h->slabs[i].base));
	if (!ref) {
		e->nclaims = BL_CLAIMS + 1;
		return;
	}
	e->claims[e->nclaims] = ref;
	/* Signal fence: a handler on this thread that notes a claim too
	 * sees the ref before the count. */
	atomic_signal_fence(memory_order_seq_cst);
	e->nclaims++;
}

/* The claim word of the DAG or metric shard at @ref; NULL if neither. */
static uint64_t *claim_of(struct bl_heap *h, blamer_ref ref, uint32_t type)
{
	if (type == BLAMER_REC_DAG_SHARD) {
		struct blamer_dag_shard *s = bl_heap_get(h, ref, type, sizeof(*s));

		return s ? &s->claim : NULL;
	}
	if (type == BLAMER_REC_METRIC_SHARD) {
		struct blamer_metric_shard *s = bl_heap_get(h, ref, type, sizeof(*s));

		return s ? &s->claim : NULL;
	}
	return NULL;
}

/*
 * A thread's exit (or its cache entry's eviction) releases the shards it
 * noted, not every shard of the heap: a walk of the whole heap, under the
 * registry lock, made each short-lived thread cost as much as the heap
 * held records (2.1 ms at 100,000). Only one that noted more than
 * BL_CLAIMS walks.
 */
void bl_claims_release(struct bl_tls_ent *e, int64_t tid)
{
	struct bl_heap *h = &e->b->heap;
	uint32_t i;

	if (e->nclaims > BL_CLAIMS) {
		bl_shards_release(e->b, tid);
	} else if (!ld_relaxed(A32(&h->corrupt))) {
		for (i = 0; i < e->nclaims; i++) {
			uint64_t *claim = claim_of(h, e->claims[i], bl_heap_type(h, e->claims[i]));

			/* Release: our adds come before those of the next claimer. */
			if (claim && ld_relaxed(A64(claim)) == (uint64_t)tid)
				st_release(A64(claim), 0);
		}
	}
	e->nclaims = 0;
}
