// SPDX-License-Identifier: MIT
/*
 * What a fork child's heap inherits from its parent's.
 *
 * A child's heap is new (its own records, owner and pid), made on its
 * first write. It starts with:
 *  - the definitions: DAG nodes, links and unit names the parent made
 *    (they describe the program, which the child is too). Kept as a copy
 *    in process memory when made, because the parent's heap is not the
 *    child's to read: the device backend does not even map it there.
 *  - the GLOBAL and PROCESS user data as they were at the fork, like the
 *    rest of the child's memory: copied in the parent by the prepare
 *    handler (at most 8 KiB, no allocation), written into the child's
 *    heap when it is made.
 * It does not inherit the parent's measurements (path values: readers
 * sum paths over processes, and the child did not measure them), its
 * activity stacks, threads, log, children or role: they are the
 * parent's. Documentation/library.rst, "fork()".
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "atomic.h"
#include "internal.h"

#define OWNED	(sizeof(struct blamer_block) + sizeof(struct blamer_owner))

struct bl_def {
	struct bl_def *next;
	uint32_t type, size;	/* the record's, header included */
	uint8_t payload[];	/* its bytes after the owner */
};

bool bl_inherit_def(struct blamer *b, uint32_t type, const void *rec, uint32_t size)
{
	struct bl_def *d = malloc(sizeof(*d) + size - OWNED);
	struct bl_def *head;

	if (!d)
		return false;
	d->type = type;
	d->size = size;
	memcpy(d->payload, (const uint8_t *)rec + OWNED, size - OWNED);
	head = atomic_load_explicit(&b->inherit.defs, memory_order_relaxed);
	do
		d->next = head;
	/* Release: a fork (or a thread that replays) sees it whole. */
	while (!atomic_compare_exchange_weak_explicit(&b->inherit.defs, &head, d,
						      memory_order_release, memory_order_relaxed));
	return true;
}

/* Word by word with relaxed loads: other threads may be writing. */
static uint32_t copy_fields(struct bl_heap *h, blamer_ref ref, uint8_t *dst, uint32_t room)
{
	struct blamer_userdata *u = bl_heap_get(h, ref, BLAMER_REC_USERDATA, sizeof(*u));
	uint32_t used, i;

	if (!u)
		return 0;
	/* Acquire: the claim words below used are visible. */
	used = ld_acquire(A32(&u->used));
	if (used > u->capacity || used > room)
		return 0;
	for (i = 0; i + 8 <= used; i += 8) {
		uint64_t w = ld_relaxed(A64(u->fields + i));

		memcpy(dst + i, &w, 8);
	}
	return i;
}

void bl_inherit_snapshot(struct blamer *b)
{
	struct bl_inherit *in = &b->inherit;

	/* A context without a heap keeps what it inherited itself, for its
	 * own children (it has written nothing since). */
	if (ld_acquire(A32(&b->state)) != BL_ST_READY || ld_relaxed(A32(&b->heap.corrupt)) ||
	    !in->data[0] || !in->data[1])
		return;
	/* data not made yet (bl_part()) is none to copy */
	in->data_len[0] = copy_fields(&b->heap, ld_acquire(A64(&b->parts[BL_PART_GLOBAL_DATA])),
				      in->data[0], BL_DATA_BYTES);
	in->data_len[1] = copy_fields(&b->heap, ld_acquire(A64(&b->parts[BL_PART_PROCESS_DATA])),
				      in->data[1], BL_DATA_BYTES);
	in->data_valid = true;
}

/* The published fields of a snapshot into the new record @ref, packed;
 * a string caught in the middle of a change is left empty. */
static void replay_data(struct blamer *b, enum bl_part part, const uint8_t *src, uint32_t len)
{
	struct blamer_userdata *u;
	uint32_t off = 0, out = 0;

	if (len < sizeof(struct blamer_field))
		return;	/* nothing inherited: the record is made on first use */
	u = bl_heap_get(&b->heap, bl_part(b, part), BLAMER_REC_USERDATA, sizeof(*u));
	if (!u)
		return;
	while (off + sizeof(struct blamer_field) <= len) {
		struct blamer_field f;
		uint32_t names;

		memcpy(&f, src + off, sizeof(f));
		names = sizeof(f) + ((f.name_size + 7u) & ~7u);
		if (!f.record_size || f.record_size % 8 || off + f.record_size > len)
			break;
		if (f.type != BLAMER_FIELD_END && f.type <= BLAMER_FIELD_DOUBLE && f.name_size &&
		    names <= f.record_size && out + f.record_size <= u->capacity) {
			if (f.seq & 1)
				f.value_size = 0;
			f.seq = 0;
			memcpy(u->fields + out, &f, sizeof(f));
			memcpy(u->fields + out + sizeof(f), src + off + sizeof(f),
			       f.record_size - sizeof(f));
			out += f.record_size;
		}
		off += f.record_size;
	}
	/* Release: readers and walkers see the fields below used whole. */
	st_release(A32(&u->used), out);
}

static void replay_def(struct blamer *b, const struct bl_def *d)
{
	blamer_ref ref = bl_record_alloc(b, d->type, d->size);
	uint8_t *rec;

	if (!ref) {
		bl_drop(b, BLAMER_DROP_HEAP_FULL);
		return;
	}
	rec = bl_ptr(&b->heap, ref);
	memcpy(rec + OWNED, d->payload, d->size - OWNED);
	bl_owner_set(b, (struct blamer_owner *)(rec + sizeof(struct blamer_block)));
	bl_heap_make_iterable(&b->heap, ref);
}

/* Definitions put in oldest first from a stack array of this many, else
 * from an mmap()ed one (bl_inherit_replay()). */
#define REPLAY_STACK	256u

/*
 * Made as the child's heap is, by its first write, which may be a signal
 * handler's: no malloc() (one that interrupted the program's corrupted
 * malloc's heap or hung), no lock, no stdio. The definitions are a list
 * newest first, replayed oldest first: through an array of them on the
 * stack, or mmap()ed past REPLAY_STACK.
 */
void bl_inherit_replay(struct blamer *b)
{
	struct bl_inherit *in = &b->inherit;
	struct bl_def *d, **all, *stack[REPLAY_STACK];
	size_t n = 0, i, bytes = 0;

	if (in->data_valid) {
		replay_data(b, BL_PART_GLOBAL_DATA, in->data[0], in->data_len[0]);
		replay_data(b, BL_PART_PROCESS_DATA, in->data[1], in->data_len[1]);
	}
	/* Acquire: pairs with the push: the definitions are whole. */
	for (d = atomic_load_explicit(&in->defs, memory_order_acquire); d; d = d->next)
		n++;
	if (!n)
		return;
	all = stack;
	if (n > REPLAY_STACK) {
		void *p;

		bytes = n * sizeof(*all);
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			bl_drop(b, BLAMER_DROP_HEAP_FULL);
			return;
		}
		all = p;
	}
	/* No def is pushed meanwhile: only a thread with the heap READY
	 * makes one, and this is the heap being made. */
	for (i = n, d = atomic_load_explicit(&in->defs, memory_order_acquire); d && i; d = d->next)
		all[--i] = d;
	/* Oldest first: the order the parent made them in. */
	for (; i < n; i++)
		replay_def(b, all[i]);
	if (bytes)
		munmap(all, bytes);
}

void bl_inherit_free(struct blamer *b)
{
	struct bl_def *d = atomic_exchange(&b->inherit.defs, NULL), *next;

	for (; d; d = next) {
		next = d->next;
		free(d);
	}
	free(b->inherit.data[0]);
	free(b->inherit.data[1]);
	b->inherit.data[0] = b->inherit.data[1] = NULL;
}
