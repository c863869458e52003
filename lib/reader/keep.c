// SPDX-License-Identifier: MIT
/*
 * Dead heaps kept decoded from one snapshot to the next, for a long-lived
 * reader (BLAMER_READ_KEEP_DEAD: `blamer top`, `export --listen` and
 * `--interval`). A dead heap's bytes do not change: nothing writes them
 * once their owner has died (the kernel revokes a dead owner's writable
 * mappings; a dir heap's writer is gone, and every write would show in its
 * files' times). So the reader decodes it once, keeps a copy of what it
 * decoded, and hands a copy of that to every later snapshot for as long as
 * the backend says its slabs are the same ones (dir: each file's device,
 * inode, size, modification and change times; device: each slab's ID,
 * size, creation and death times and flags), instead of reading and
 * checking it again.
 *
 * Each kept heap is a snapshot of its own holding one process and the
 * unit names its heap gave, in one block of exactly its size, so it is
 * freed at once when the heap goes. What is kept is a copy of what the
 * last snapshot decoded of its dead heaps, so it costs at most that
 * snapshot's memory again; RD_KEEP_MAX more bounds it (heaps beyond it
 * are read again each time).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define RD_KEEP_MAX	(1ull << 30)

static int kept_cmp(const void *a, const void *b)
{
	const struct rd_kept *x = a, *y = b;
	int c = rd_pid_start_cmp(x->pid, x->start, y->pid, y->start);

	return c ? c : (x->heap_key > y->heap_key) - (x->heap_key < y->heap_key);
}

static void kept_free(struct rd_kept *e)
{
	blamer_snapshot_free(e->one);
	free(e->slabs);
	e->one = NULL;
	e->slabs = NULL;
}

struct rd_kept *rd_keep_find(struct rd_keep *k, int32_t pid, uint64_t start, uint64_t heap_key)
{
	struct rd_kept key = { .pid = pid, .start = start, .heap_key = heap_key };
	struct rd_kept *e = rd_carry_find(&k->c, &key, kept_cmp);

	return e && e->one ? e : NULL;
}

bool rd_keep_same(const struct rd_kept *e, const struct rd_kept_slab *slabs, uint32_t n)
{
	return e->nslabs == n && !memcmp(e->slabs, slabs, n * sizeof(*slabs));
}

/* Room for one more entry in the current snapshot's list. */
static struct rd_kept *next_slot(struct rd_keep *k)
{
	if (!k->c.elsz)
		k->c = RD_CARRY(struct rd_kept, SIZE_MAX);
	return rd_carry_add(&k->c);
}

bool rd_keep_reuse(struct rd_keep *k, struct rd_kept *e, struct blamer_snapshot *s,
		   struct blamer_snap_process *p)
{
	const struct blamer_snapshot *one = e->one;
	struct blamer_snap_process facts = *p;
	size_t i, defs = s->nuid_unit_defs;
	struct rd_kept *slot;

	if (!rd_process_copy(s, p, &one->procs[0]))
		goto fail;
	for (i = 0; i < one->nuid_unit_defs; i++) {
		if (!rd_add_unit_def(s, one->uid_unit_defs[i].uid, &one->uid_unit_defs[i].def)) {
			s->nuid_unit_defs = defs;
			rd_process_free(p);
			goto fail;
		}
	}
	/* it moves on to the current list: kept as long as it is seen */
	slot = next_slot(k);
	if (slot) {
		*slot = *e;
		k->nbytes += e->bytes;
		e->one = NULL;
		e->slabs = NULL;
	}
	return true;
fail:
	*p = facts;	/* out of memory: the caller reads the heap instead */
	return false;
}

void rd_keep_add(struct rd_keep *k, const struct blamer_snapshot *s,
		 const struct blamer_snap_process *p, size_t first_def,
		 const struct rd_kept_slab *slabs, uint32_t n)
{
	struct blamer_snap_process *q;
	struct rd_kept e = { .pid = p->pid, .start = p->start_time_ns,
			     .heap_key = p->heap_key, .nslabs = n };
	struct rd_kept *slot;
	size_t i;

	/* a heap read torn or unreadable is read again, not kept as such */
	if (k->nbytes >= RD_KEEP_MAX || p->health == BLAMER_HEALTH_TORN ||
	    p->health == BLAMER_HEALTH_UNREADABLE)
		return;
	e.one = rd_snapshot_new(NULL);
	e.slabs = malloc((n ? n : 1) * sizeof(*slabs));
	if (e.one)
		rd_snapshot_reserve(e.one, rd_process_copy_size(p));	/* one block, no slack */
	q = e.one ? rd_new_process(e.one) : NULL;
	if (!q || !e.slabs || !rd_process_copy(e.one, q, p))
		goto fail;
	memcpy(e.slabs, slabs, n * sizeof(*slabs));
	for (i = first_def; i < s->nuid_unit_defs; i++)
		if (!rd_add_unit_def(e.one, s->uid_unit_defs[i].uid, &s->uid_unit_defs[i].def))
			goto fail;
	e.bytes = rd_snapshot_bytes(e.one) + sizeof(*q) + n * sizeof(*slabs);
	if (k->nbytes + e.bytes > RD_KEEP_MAX || !(slot = next_slot(k)))
		goto fail;
	*slot = e;
	k->nbytes += e.bytes;
	return;
fail:
	kept_free(&e);
}

void rd_keep_swap(struct rd_keep *k)
{
	struct rd_kept *last = k->c.last;
	size_t i;

	for (i = 0; i < k->c.nlast; i++)
		kept_free(&last[i]);	/* not seen this time: released or changed */
	rd_carry_swap(&k->c, kept_cmp);
	k->nbytes = 0;
}

void rd_keep_free(struct rd_keep *k)
{
	struct rd_kept *last = k->c.last, *cur = k->c.cur;
	size_t i;

	for (i = 0; i < k->c.nlast; i++)
		kept_free(&last[i]);
	for (i = 0; i < k->c.ncur; i++)
		kept_free(&cur[i]);
	rd_carry_free(&k->c);
	k->nbytes = 0;
}
