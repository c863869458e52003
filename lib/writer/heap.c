// SPDX-License-Identifier: MIT
/*
 * The lock-free allocator: typed records in a heap of slabs.
 *
 * Invariants (Documentation/heap-format.rst is the normative text):
 *  - Records are addressed by blamer_ref (slab << 32 | offset), never by
 *    pointer; every ref this file turns into a pointer is validated
 *    against the slabs this process mapped, because the shared memory may
 *    have been scribbled on (another process of the same user in the dir
 *    backend, or our own bug).
 *  - Memory is only ever handed out by a CAS on a slab's freeptr and is
 *    never given back: a record is retired by changing its type, and who
 *    changes a retired type to a live one owns the record.
 *  - Allocation happens in the last published slab (small records from a
 *    per-thread 4 KiB chunk claimed there, see tlab_alloc). When it is full, one
 *    thread wins a CAS on heap_header.grow_claim, asks the backend for a
 *    slab, fills the slab header, stores slab_ids[n] and then publishes
 *    slab_count = n + 1 with release; concurrent growers see the claim
 *    and fail with EAGAIN instead of waiting (writers never block, and a
 *    signal handler interrupting the grower must not spin on it).
 *  - Records are published to readers by appending them to the iterable
 *    list (Michael-Scott queue, append only, with a helping CAS on the
 *    tail hint). The list is circular through the dummy head block: the
 *    last record's next is BLAMER_LIST_HEAD_REF, next == 0 means "not on
 *    the list".
 *  - Once corruption is seen, this process never writes the heap again
 *    (the local flag is checked before every allocation and list append).
 */
#include <errno.h>
#include <string.h>

#include "atomic.h"
#include "internal.h"

#define BLOCK_SIZE	((uint32_t)sizeof(struct blamer_block))

void bl_heap_set_corrupt(struct bl_heap *h)
{
	/* Relaxed: a flag, not a publication; every writer re-checks it. */
	st_relaxed(A32(&h->corrupt), 1);
	if (h->hh)
		atomic_fetch_or_explicit(A32(&h->hh->flags), BLAMER_HEAP_F_CORRUPT,
					 memory_order_relaxed);
}

static bool is_corrupt(struct bl_heap *h)
{
	return ld_relaxed(A32(&h->corrupt)) != 0;
}

uint32_t bl_heap_flags(struct bl_heap *h)
{
	uint32_t f = h->hh ? ld_relaxed(A32(&h->hh->flags)) : 0;

	if (is_corrupt(h))
		f |= BLAMER_HEAP_F_CORRUPT;
	return f;
}

static void init_slab_header(struct bl_heap *h, struct bl_slab_map *m, uint32_t index,
			     uint32_t freeptr)
{
	struct blamer_slab_header *sh = (void *)m->base;

	sh->magic = BLAMER_HEAP_MAGIC;
	sh->version = BLAMER_HEAP_VERSION;
	sh->header_size = sizeof(*sh);
	sh->slab_index = index;
	sh->slab_size = m->size;
	sh->heap_id = h->heap_id;
	/* Relaxed: the slab is published to everyone (this process and
	 * readers) by the release store of slab_count that follows. */
	st_relaxed(A32(&sh->freeptr), freeptr);
}

int bl_heap_create(struct bl_heap *h, struct bl_backend *be, uint64_t slab_size,
		   uint32_t max_slabs, uint64_t heap_id, const struct bl_clock *clock)
{
	struct blamer_heap_header *hh;
	struct blamer_block *head;
	struct bl_slab_map m;
	uint64_t id;
	int ret;

	memset(h, 0, sizeof(*h));
	h->be = be;
	h->slab_size = slab_size;
	h->max_slabs = max_slabs;
	h->heap_id = heap_id;
	ret = bl_backend_slab(be, 0, slab_size, &m, &id);
	if (ret)
		return ret;
	if (m.size < BLAMER_MIN_SLAB_SIZE || m.size > BLAMER_MAX_SLAB_SIZE) {
		bl_backend_unmap(&m);
		return -EINVAL;
	}
	h->slabs[0] = m;
	init_slab_header(h, &m, 0, BLAMER_SLAB0_FIRST_RECORD);
	hh = (void *)(m.base + BLAMER_HEAP_HEADER_OFFSET);
	hh->max_slabs = max_slabs;
	hh->create_time_ns = bl_realtime_ns();
	hh->list_head = BLAMER_LIST_HEAD_REF;
	hh->backend = be->kind;
	hh->clock = clock->kind;
	hh->clock_anchor_tsc = clock->anchor_tsc;
	hh->clock_anchor_ns = clock->anchor_ns;
	hh->slab_ids[0] = id;
	head = (void *)(m.base + BLAMER_LIST_HEAD_OFFSET);
	head->size = BLOCK_SIZE;
	head->cookie = BLAMER_BLOCK_QUEUE;
	/* The empty list: the head points at itself. */
	st_relaxed(A64(&head->next), BLAMER_LIST_HEAD_REF);
	st_relaxed(A64(&hh->list_tail), BLAMER_LIST_HEAD_REF);
	st_relaxed(A32(&hh->slab_count), 1);
	h->hh = hh;
	st_relaxed(A32(&h->nslabs), 1);
	/* Release: a reader that sees READY (acquire) sees every header
	 * field above. */
	st_release(A32(&hh->state), BLAMER_HEAP_READY);
	return 0;
}

void bl_heap_unmap(struct bl_heap *h)
{
	uint32_t i, n = ld_acquire(A32(&h->nslabs));

	for (i = 0; i < n; i++)
		bl_backend_unmap(&h->slabs[i]);
	st_relaxed(A32(&h->nslabs), 0);
	h->hh = NULL;
}

void bl_heap_drop_after_fork(struct bl_heap *h)
{
	uint32_t i, n = ld_relaxed(A32(&h->nslabs));

	for (i = 0; i < n; i++)
		bl_backend_scratch(&h->slabs[i]);
}

/* Validates @ref as a block start inside a mapped slab; NULL if not. */
static struct blamer_block *block_at(struct bl_heap *h, blamer_ref ref, bool head_ok)
{
	uint32_t s = blamer_ref_slab(ref), off = blamer_ref_offset(ref);
	/* Acquire pairs with the release in grow(): slabs[s] is filled. */
	uint32_t n = ld_acquire(A32(&h->nslabs));
	struct blamer_block *b;
	uint64_t size;

	if (s >= n || off % BLAMER_ALIGN)
		return NULL;
	size = h->slabs[s].size;
	if (ref == BLAMER_LIST_HEAD_REF) {
		if (!head_ok)
			return NULL;
	} else if (off < (s ? sizeof(struct blamer_slab_header) : BLAMER_SLAB0_FIRST_RECORD)) {
		return NULL;
	}
	if ((uint64_t)off + BLOCK_SIZE > size)
		return NULL;
	b = (void *)(h->slabs[s].base + off);
	if (b->size < BLOCK_SIZE || b->size % BLAMER_ALIGN || (uint64_t)off + b->size > size)
		return NULL;
	if (b->cookie != (ref == BLAMER_LIST_HEAD_REF ? BLAMER_BLOCK_QUEUE : BLAMER_BLOCK_COOKIE))
		return NULL;
	return b;
}

void *bl_heap_get(struct bl_heap *h, blamer_ref ref, uint32_t type, uint32_t size)
{
	struct blamer_block *b = block_at(h, ref, false);

	if (!b || b->size < size)
		return NULL;
	/* Acquire: pairs with the release of the type in alloc/change_type,
	 * so the caller sees the record as its owner left it. */
	if (type && ld_acquire(A32(&b->type)) != type)
		return NULL;
	return b;
}

uint32_t bl_heap_type(struct bl_heap *h, blamer_ref ref)
{
	struct blamer_block *b = block_at(h, ref, false);

	return b ? ld_acquire(A32(&b->type)) : 0;
}

/* After the backend could not make a slab (no space or memory in its
 * file system, a limit), it is not asked again for this long: every
 * allocation that found the heap full asked it again, a file made,
 * sized and removed each time (4 system calls at every push of a thread
 * without a record). Space may come back: the heap grows again then. */
#define GROW_RETRY_NS	1000000000ull

/*
 * Adds slab @n (the caller saw n slabs, the last one full). Returns 0 when
 * the caller should retry (a slab was added, by us or by another thread),
 * -EAGAIN if another thread is adding one, -ENOSPC if the heap may not or
 * cannot grow (or could not lately: GROW_RETRY_NS).
 */
static int grow(struct bl_heap *h, uint32_t n)
{
	struct bl_slab_map m;
	uint32_t zero = 0;
	uint64_t id, retry;

	if (n >= h->max_slabs || n >= BLAMER_MAX_SLABS) {
		atomic_fetch_or_explicit(A32(&h->hh->flags), BLAMER_HEAP_F_FULL,
					 memory_order_relaxed);
		return -ENOSPC;
	}
	/* Relaxed: a hint; the clock (vDSO) is read only after a failure. */
	retry = ld_relaxed(A64(&h->grow_retry_ns));
	if (retry && bl_monotonic_ns() < retry)
		return -ENOSPC;
	/* Acquire on success: whoever released the claim before us had
	 * finished publishing its slab, so the re-check below is exact. */
	if (!atomic_compare_exchange_strong_explicit(A32(&h->hh->grow_claim), &zero, n + 1,
						     memory_order_acquire, memory_order_relaxed))
		return -EAGAIN;
	if (ld_acquire(A32(&h->nslabs)) != n) {
		st_release(A32(&h->hh->grow_claim), 0);
		return 0;
	}
	/* Signals held while the slab is made (bl_signals_hold()): a
	 * handler's fork in the middle left the child growing a heap its
	 * fork handler had reset (h->hh NULL), the slab mapped shared with
	 * the parent. Held here, after the claim: a claim that fails makes
	 * no system call. The hold is the slab's system calls' company. */
	sigset_t held;
	int ret;

	bl_signals_hold(&held);
	ret = bl_backend_slab(h->be, n, h->slab_size, &m, &id);
	if (ret || m.size < BLAMER_MIN_SLAB_SIZE || m.size > BLAMER_MAX_SLAB_SIZE) {
		if (m.base && m.size)
			bl_backend_unmap(&m);
		st_relaxed(A64(&h->grow_retry_ns), bl_monotonic_ns() + GROW_RETRY_NS);
		atomic_fetch_or_explicit(A32(&h->hh->flags), BLAMER_HEAP_F_FULL,
					 memory_order_relaxed);
		st_release(A32(&h->hh->grow_claim), 0);
		bl_signals_restore(&held);
		return -ENOSPC;
	}
	init_slab_header(h, &m, n, sizeof(struct blamer_slab_header));
	h->slabs[n] = m;
	h->hh->slab_ids[n] = id;
	/* Release: readers (and our own threads, through nslabs) that see
	 * the new count see slab_ids[n], the slab header and slabs[n]. */
	st_release(A32(&h->hh->slab_count), n + 1);
	st_release(A32(&h->nslabs), n + 1);
	st_release(A32(&h->hh->grow_claim), 0);
	bl_signals_restore(&held);
	return 0;
}

/*
 * Claims @size fresh bytes at the end of the last slab (growing the heap
 * when it is full): *slab and *off on success, else *err.
 */
static bool claim(struct bl_heap *h, uint32_t size, uint32_t *slab, uint32_t *off, int *err,
		  bool grow_ok)
{
	uint32_t tries;

	/* Bounded: each round either claims, fails, or sees a new slab. */
	for (tries = 0; tries <= BLAMER_MAX_SLABS + 1; tries++) {
		uint32_t n = ld_acquire(A32(&h->nslabs));
		struct bl_slab_map *m;
		struct blamer_slab_header *sh;
		uint32_t free, first;
		int ret;

		if (is_corrupt(h) || n == 0) {
			*err = EIO;
			return false;
		}
		m = &h->slabs[n - 1];
		sh = (void *)m->base;
		first = n > 1 ? sizeof(*sh) : BLAMER_SLAB0_FIRST_RECORD;
		/* Relaxed: freeptr publishes nothing. The bytes it hands out
		 * are zero since the slab was made, and the CAS gives this
		 * thread exclusive ownership of them; a record becomes
		 * visible to others only through make_iterable (release). */
		free = ld_relaxed(A32(&sh->freeptr));
		for (;;) {
			if (free < first || free > m->size || free % BLAMER_ALIGN) {
				bl_heap_set_corrupt(h);
				*err = EIO;
				return false;
			}
			if ((uint64_t)free + size > m->size)
				break;
			if (atomic_compare_exchange_weak_explicit(A32(&sh->freeptr), &free,
								  free + size,
								  memory_order_relaxed,
								  memory_order_relaxed)) {
				*slab = n - 1;
				*off = free;
				return true;
			}
		}
		if (!grow_ok) {
			*err = ENOSPC;
			return false;
		}
		ret = grow(h, n);
		if (ret) {
			*err = -ret;
			return false;
		}
	}
	*err = EAGAIN;
	return false;
}

/*
 * Thread-local allocation buffers: small records are carved out of a
 * 4 KiB chunk the thread claimed from freeptr with one CAS, so the common
 * allocation has no atomic operation and threads do not fight over the
 * freeptr cache line. The chunk's unused rest is zero memory that no list
 * points to (readers never walk slabs linearly). busy keeps a signal
 * handler that allocates while the thread is inside this code off the
 * buffer (it takes the shared path instead), so the bump stays
 * async-signal-safe without an atomic.
 */
#define TLAB_CHUNK	4096u
#define TLAB_MAX_RECORD	512u

struct bl_tlab {
	struct bl_heap *h;
	uint64_t heap_id;	/* with h: a new heap at the same address differs */
	uint32_t slab, cur, end;
	volatile uint32_t busy;
};

static __thread struct bl_tlab tlab __attribute__((tls_model("initial-exec")));

static bool tlab_alloc(struct bl_heap *h, uint32_t size, uint32_t *slab, uint32_t *off)
{
	struct bl_tlab *t = &tlab;
	bool ok = false;
	int err;

	if (t->busy)
		return false;
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (t->h != h || t->heap_id != h->heap_id || t->cur + size > t->end) {
		uint32_t s, o;

		/* Only whole chunks, and never a reason to grow: a slab's
		 * last < 4 KiB is left to per-record claims, so the heap grows
		 * (and is full) exactly when a record does not fit. */
		if (claim(h, TLAB_CHUNK, &s, &o, &err, false)) {
			t->h = h;
			t->heap_id = h->heap_id;
			t->slab = s;
			t->cur = o;
			t->end = o + TLAB_CHUNK;
		}
	}
	if (t->h == h && t->heap_id == h->heap_id && t->cur + size <= t->end) {
		*slab = t->slab;
		*off = t->cur;
		t->cur += size;
		ok = true;
	}
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
	return ok;
}

blamer_ref bl_heap_alloc(struct bl_heap *h, uint32_t size, uint32_t type, int *err)
{
	struct blamer_block *b;
	uint32_t slab, off;

	size = (size + BLAMER_ALIGN - 1) & ~(BLAMER_ALIGN - 1);
	if (size < BLOCK_SIZE || size > h->slab_size - BLAMER_SLAB0_FIRST_RECORD ||
	    type == 0 || type == BLAMER_REC_TRANSITIONING) {
		*err = EINVAL;
		return 0;
	}
	if (is_corrupt(h)) {
		*err = EIO;
		return 0;
	}
	if (!(size <= TLAB_MAX_RECORD && tlab_alloc(h, size, &slab, &off)) &&
	    !claim(h, size, &slab, &off, err, true))
		return 0;
	b = (void *)(h->slabs[slab].base + off);
	/* Never-used memory must be zero; anything else means someone
	 * wrote where they had no record. */
	if (b->size || b->cookie || ld_relaxed(A32(&b->type)) || ld_relaxed(A64(&b->next))) {
		bl_heap_set_corrupt(h);
		*err = EIO;
		return 0;
	}
	b->size = size;
	b->cookie = BLAMER_BLOCK_COOKIE;
	/* Release: whoever acquires the type sees size and cookie. */
	st_release(A32(&b->type), type);
	return blamer_make_ref(slab, off);
}

bool bl_heap_make_iterable(struct bl_heap *h, blamer_ref ref)
{
	struct blamer_block *b = block_at(h, ref, false);
	blamer_ref zero = 0, tail;
	uint64_t rounds;

	if (!b || is_corrupt(h))
		return false;
	/* Claim "being appended" by moving next from 0 to the end marker; a
	 * second call for the same record loses here and returns (so a
	 * record is never appended twice). Relaxed: nothing is published
	 * through this store, the append CAS below does that. */
	if (!atomic_compare_exchange_strong_explicit(A64(&b->next), &zero, BLAMER_LIST_HEAD_REF,
						     memory_order_relaxed, memory_order_relaxed))
		return true;
	tail = ld_acquire(A64(&h->hh->list_tail));
	/* A well-formed list has fewer records than the heap has bytes / 24;
	 * more rounds than that means a cycle somebody wrote into the list. */
	for (rounds = 0; rounds < (uint64_t)h->max_slabs * (h->slab_size / BLOCK_SIZE) + 2;
	     rounds++) {
		struct blamer_block *t = block_at(h, tail, true);
		blamer_ref next = BLAMER_LIST_HEAD_REF;

		if (!t)
			break;
		/* Acq_rel on success: release publishes our record (its header
		 * and contents) to anyone who follows the link with acquire;
		 * acquire on failure so we can follow the link we found. */
		if (atomic_compare_exchange_strong_explicit(A64(&t->next), &next, ref,
							    memory_order_acq_rel,
							    memory_order_acquire)) {
			/* Move the tail hint; if this fails somebody already
			 * helped us, which is the same result. */
			atomic_compare_exchange_strong_explicit(A64(&h->hh->list_tail), &tail,
								ref, memory_order_release,
								memory_order_relaxed);
			return true;
		}
		if (next == 0)
			break;	/* a listed record with next 0: not ours to fix */
		/* Help: another appender linked a record but has not (or, if it
		 * died, never will) move the tail; do it for them. */
		if (!atomic_compare_exchange_strong_explicit(A64(&h->hh->list_tail), &tail, next,
							     memory_order_acq_rel,
							     memory_order_acquire))
			continue;	/* tail now holds the newer value */
		tail = next;
	}
	bl_heap_set_corrupt(h);
	return false;
}

/*
 * Appends @ref unless the list holds a record @same() says is its equal;
 * returns the one that is on the list then (@ref, or the equal, and @ref
 * stays off the list, invisible). One walk from the head does both: the
 * append is a CAS on the next of the record the walk found last, so one
 * that another thread appended meanwhile makes the CAS fail and is
 * looked at before ours can go in. The caller writes the whole record
 * before: it is complete when it is seen. 0 if the heap is corrupt, or
 * if @ref was listed (or is being listed) already.
 */
blamer_ref bl_heap_append_unique(struct bl_heap *h, blamer_ref ref,
				 bool (*same)(struct bl_heap *h, blamer_ref r, const void *key),
				 const void *key)
{
	struct blamer_block *b = block_at(h, ref, false), *t;
	blamer_ref cur = BLAMER_LIST_HEAD_REF, next, zero = 0;
	uint64_t rounds;

	if (!b || is_corrupt(h))
		return 0;
	/* As in bl_heap_make_iterable(): ours is being appended. */
	if (!atomic_compare_exchange_strong_explicit(A64(&b->next), &zero, BLAMER_LIST_HEAD_REF,
						     memory_order_relaxed, memory_order_relaxed))
		return 0;
	for (rounds = 0; rounds < (uint64_t)h->max_slabs * (h->slab_size / BLOCK_SIZE) + 2;
	     rounds++) {
		t = block_at(h, cur, true);
		if (!t)
			break;
		/* Acquire: pairs with the appender's release CAS. */
		next = ld_acquire(A64(&t->next));
		if (next == BLAMER_LIST_HEAD_REF) {
			/* Acq_rel as in bl_heap_make_iterable(); on failure
			 * next is what was appended: look at it. */
			if (atomic_compare_exchange_strong_explicit(A64(&t->next), &next, ref,
								    memory_order_acq_rel,
								    memory_order_acquire)) {
				/* The tail hint lags or is ours to move; appenders
				 * that start from a lagging one walk on from it. */
				atomic_compare_exchange_strong_explicit(A64(&h->hh->list_tail),
									&cur, ref,
									memory_order_release,
									memory_order_relaxed);
				return ref;
			}
		}
		if (next == 0 || next == BLAMER_LIST_HEAD_REF || !block_at(h, next, false))
			break;	/* a listed record mid-append, or a bad link */
		if (same(h, next, key)) {
			/* Ours never goes in: undo the claim, so nothing says
			 * it is on its way to the list. */
			st_relaxed(A64(&b->next), 0);
			return next;
		}
		cur = next;
	}
	bl_heap_set_corrupt(h);
	return 0;
}

bool bl_heap_change_type(struct bl_heap *h, blamer_ref ref, uint32_t to, uint32_t from,
			 bool clear)
{
	struct blamer_block *b = block_at(h, ref, false);
	uint32_t expect = from;

	if (!b || is_corrupt(h))
		return false;
	if (!clear)
		/* Acq_rel: acquire to own what the previous owner wrote,
		 * release to publish what we wrote before retiring. */
		return atomic_compare_exchange_strong_explicit(A32(&b->type), &expect, to,
							       memory_order_acq_rel,
							       memory_order_relaxed);
	/* TRANSITIONING tells readers and other re-typers to keep out while
	 * the payload is zeroed; acquire so the zeroing comes after any
	 * write of the previous owner. */
	if (!atomic_compare_exchange_strong_explicit(A32(&b->type), &expect,
						     BLAMER_REC_TRANSITIONING,
						     memory_order_acquire, memory_order_relaxed))
		return false;
	memset((uint8_t *)b + BLOCK_SIZE, 0, b->size - BLOCK_SIZE);
	/* Release: the new type is seen only with the zeroed payload. */
	st_release(A32(&b->type), to);
	return true;
}

bool bl_heap_take(struct bl_heap *h, blamer_ref ref, uint32_t type, uint32_t link)
{
	struct blamer_block *b = block_at(h, ref, false);
	uint32_t expect = BLAMER_RETIRED(type);

	if (!b || is_corrupt(h) || link < BLOCK_SIZE || link % 8 || (uint64_t)link + 8 > b->size)
		return false;
	/* As bl_heap_change_type() with clear, but for the link word: a
	 * pop that read the stack's head before this record left it may be
	 * loading it (atomically) right now. */
	if (!atomic_compare_exchange_strong_explicit(A32(&b->type), &expect,
						     BLAMER_REC_TRANSITIONING,
						     memory_order_acquire, memory_order_relaxed))
		return false;
	memset((uint8_t *)b + BLOCK_SIZE, 0, link - BLOCK_SIZE);
	st_relaxed(A64((uint8_t *)b + link), 0);
	memset((uint8_t *)b + link + 8, 0, b->size - link - 8);
	/* Release: the new type is seen only with the zeroed payload. */
	st_release(A32(&b->type), type);
	return true;
}

/*
 * The free stacks' words: a ref packed in 33 bits (6 of slab, 27 of
 * offset / 8: slabs are at most 1 GiB), and above it a tag that every
 * change of the head moves on, so a pop that read the head, then slept
 * while the record was popped, used and pushed again, fails its CAS
 * rather than install the link it read before (ABA). 0 is the empty
 * stack: no record is at offset 0 of slab 0.
 */
#define FREE_IDX_BITS	33u
#define FREE_IDX_MASK	((1ull << FREE_IDX_BITS) - 1)
#define FREE_OFF_BITS	27u
_Static_assert(BLAMER_MAX_SLABS <= 1u << (FREE_IDX_BITS - FREE_OFF_BITS), "slab bits");
_Static_assert(BLAMER_MAX_SLAB_SIZE / 8 <= 1u << FREE_OFF_BITS, "offset bits");

static uint64_t free_pack(blamer_ref ref)
{
	return (uint64_t)blamer_ref_slab(ref) << FREE_OFF_BITS | blamer_ref_offset(ref) / 8;
}

static blamer_ref free_unpack(uint64_t w)
{
	w &= FREE_IDX_MASK;
	return blamer_make_ref((uint32_t)(w >> FREE_OFF_BITS),
			       (uint32_t)(w & ((1u << FREE_OFF_BITS) - 1)) * 8);
}

static uint64_t free_word(uint64_t old, uint64_t idx)
{
	return ((old >> FREE_IDX_BITS) + 1) << FREE_IDX_BITS | (idx & FREE_IDX_MASK);
}

void bl_heap_free_push(struct bl_heap *h, uint64_t *head, blamer_ref ref, uint32_t link)
{
	struct blamer_block *b = block_at(h, ref, false);
	uint64_t old;

	if (!b || is_corrupt(h) || link < BLOCK_SIZE || link % 8 || (uint64_t)link + 8 > b->size)
		return;
	old = ld_relaxed(A64(head));
	do
		st_relaxed(A64((uint8_t *)b + link), old & FREE_IDX_MASK);
	/* Release: a pop that loads the new head (acquire) sees the link,
	 * and the retirement before it. */
	while (!atomic_compare_exchange_weak_explicit(A64(head), &old, free_word(old, free_pack(ref)),
						      memory_order_release, memory_order_relaxed));
}

blamer_ref bl_heap_free_pop(struct bl_heap *h, uint64_t *head, uint32_t type, uint32_t link)
{
	/* Bounded: a stack that keeps handing out records that cannot be
	 * taken (scribbled on) is given up for a fresh allocation. */
	uint32_t failed = 0;

	while (failed < 8 && !is_corrupt(h)) {
		uint64_t old = ld_acquire(A64(head)), next;
		struct blamer_block *b;
		blamer_ref ref;

		if (!(old & FREE_IDX_MASK))
			return 0;
		ref = free_unpack(old);
		b = block_at(h, ref, false);
		/* A bad ref (the heap written by someone else): the stack
		 * is dropped whole, its records stay retired. */
		next = b && (uint64_t)link + 8 <= b->size ? ld_relaxed(A64((uint8_t *)b + link)) : 0;
		/* Acquire: the record's retirement comes before our take. */
		if (!atomic_compare_exchange_weak_explicit(A64(head), &old, free_word(old, next),
							   memory_order_acquire,
							   memory_order_relaxed))
			continue;
		if (b && bl_heap_take(h, ref, type, link))
			return ref;
		failed++;
	}
	return 0;
}

blamer_ref bl_heap_next(struct bl_heap *h, struct bl_iter *it, uint32_t *type)
{
	blamer_ref cur = it->last ? it->last : BLAMER_LIST_HEAD_REF;
	struct blamer_block *b = block_at(h, cur, true);
	blamer_ref next;

	if (!b)
		return 0;
	/* Acquire: pairs with the appender's release CAS, so the record's
	 * header (and the contents it wrote before appending) are visible. */
	next = ld_acquire(A64(&b->next));
	if (next == BLAMER_LIST_HEAD_REF || next == 0)
		return 0;	/* end (0 would be a record mid-append) */
	b = block_at(h, next, false);
	if (!b || ++it->count > (uint64_t)h->max_slabs * (h->slab_size / BLOCK_SIZE)) {
		bl_heap_set_corrupt(h);
		return 0;
	}
	it->last = next;
	if (type)
		*type = ld_acquire(A32(&b->type));
	return next;
}

uint64_t bl_heap_used(struct bl_heap *h)
{
	uint32_t i, n = ld_acquire(A32(&h->nslabs));
	uint64_t used = 0;

	for (i = 0; i < n; i++)
		used += ld_relaxed(A32(&((struct blamer_slab_header *)h->slabs[i].base)->freeptr));
	return used;
}
