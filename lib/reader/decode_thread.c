// SPDX-License-Identifier: MIT
/*
 * Decoder of THREAD records: a thread's activity stack. The thread pushes
 * by filling slot[depth] and then storing depth + 1 (release), pops by
 * storing depth - 1 and then data_version + 1, so the header and the
 * slots below depth, copied twice and the same both times, are one state
 * of the stack (copy.c). Each activity's own data is decoded with it.
 * With BLAMER_READ_NO_STACKS only the header is read (the thread is
 * counted and named, its stack left out).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct th_read {
	uint32_t max_slots;	/* that fit in the record's block */
	uint32_t bad_slots;	/* a header claimed more: this many */
	size_t slot;		/* bytes of an activity slot (the heap's version) */
};

/* Activities shown: the depth, within the slots. */
static uint32_t shown(const struct blamer_thread *t)
{
	return t->depth < t->stack_slots ? t->depth : t->stack_slots;
}

/* Bytes of one activity slot in a heap of @version. */
static size_t slot_size(uint32_t version)
{
	return version >= 3 ? sizeof(struct blamer_activity) : sizeof(struct blamer_activity_v2);
}

static size_t stack_bytes(const struct blamer_thread *t, size_t slot)
{
	return sizeof(*t) + (size_t)shown(t) * slot;
}

/* Slot @a of a heap of @version as a version 3 slot (a version 2 label
 * has 16 bytes, NUL-padded, and no flags). */
static void slot_get(struct blamer_activity *a, const uint8_t *src, uint32_t version)
{
	struct blamer_activity_v2 o;

	if (version >= 3) {
		memcpy(a, src, sizeof(*a));
		return;
	}
	memcpy(&o, src, sizeof(o));
	memset(a, 0, sizeof(*a));
	a->timestamp = o.timestamp;
	a->calling_address = o.calling_address;
	a->data[0] = o.data[0];
	a->data[1] = o.data[1];
	a->user_data = o.user_data;
	a->kind = o.kind;
	memcpy(a->label, o.label, sizeof(o.label));
}

/* The two copies match and cover the slots the copied header shows; else
 * read again as far as the newer header shows. */
static bool th_settled(struct rd_stable *r)
{
	struct th_read *tr = r->arg;
	struct blamer_thread t;

	memcpy(&t, r->first, sizeof(t));
	if (rd_settled_same(r) && stack_bytes(&t, tr->slot) == r->len)
		return true;
	memcpy(&t, r->other, sizeof(t));
	if (t.stack_slots > tr->max_slots) {
		tr->bad_slots = t.stack_slots;
		return true;
	}
	r->len = stack_bytes(&t, tr->slot);
	return false;
}

/* A thread of the process, from its header. */
static struct blamer_snap_thread *add_thread(struct rd_ctx *c, const struct blamer_thread *t)
{
	struct blamer_snap_thread *st;

	st = rd_push(c, (void **)&c->p->threads, &c->p->nthreads, sizeof(*st));
	if (!st)
		return NULL;
	st->tid = t->tid;
	st->start_time_ns = t->start_time_ns;
	rd_sanitize(st->name, t->name, BLAMER_NAME_MAX);
	st->depth = t->depth;
	st->stack_slots = t->stack_slots;
	st->overflows = t->overflows;
	return st;
}

void rd_decode_thread(struct rd_ctx *c, blamer_ref ref)
{
	struct th_read tr = { 0 };
	struct rd_stable r = { .ref = ref, .grow = true, .settled = th_settled, .arg = &tr };
	enum rd_read got = RD_READ_BAD;
	const uint8_t *acts;
	struct blamer_snap_thread *st;
	struct blamer_thread t;
	struct blamer_block b;
	uint32_t n, i;

	if (!rd_record(c, ref, BLAMER_REC_THREAD, &b, &t, sizeof(t)) || !rd_owner_ok(c, &t.owner))
		return;
	tr.slot = slot_size(c->h->version);
	tr.max_slots = (b.size - sizeof(t)) / tr.slot;
	if (c->h->flags & BLAMER_READ_NO_STACKS) {
		add_thread(c, &t);
		return;
	}
	if (t.stack_slots > tr.max_slots) {
		tr.bad_slots = t.stack_slots;
	} else {
		r.len = stack_bytes(&t, tr.slot);
		got = rd_read_stable(c->h, &r);
	}
	if (tr.bad_slots) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
			   "thread at %#llx: %u stack slots in a %u-byte record",
			   (unsigned long long)ref, tr.bad_slots, b.size);
		goto out;
	}
	if (got == RD_READ_NOMEM) {
		rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
		goto out;
	}
	/* The header of the stack read, or the newest of one that kept
	 * changing (a copy out of bounds: the first header). */
	if (got == RD_READ_STABLE)
		memcpy(&t, r.first, sizeof(t));
	else if (got == RD_READ_TORN)
		memcpy(&t, r.other, sizeof(t));
	st = add_thread(c, &t);
	if (!st)
		goto out;
	if (got != RD_READ_STABLE) {
		st->torn = true;
		c->p->torn_records++;
		goto out;
	}
	n = shown(&t);
	st->acts = rd_alloc(c->h->s, (n ? n : 1) * sizeof(*st->acts));
	if (!st->acts) {
		rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
		goto out;
	}
	st->nacts = n;
	acts = r.first + sizeof(t);
	for (i = 0; i < n; i++) {
		struct blamer_snap_activity *sa = &st->acts[i];
		struct blamer_activity a;

		slot_get(&a, acts + i * tr.slot, c->h->version);
		memset(sa, 0, sizeof(*sa));
		sa->time_ns = rd_stamp_ns(c, a.timestamp);
		sa->calling_address = a.calling_address;
		sa->data[0] = a.data[0];
		sa->data[1] = a.data[1];
		sa->kind = a.kind;
		/* stops at a NUL: the bytes past it mean nothing */
		rd_sanitize(sa->label, a.label, sizeof(a.label));
		sa->label_cut = (a.flags & BLAMER_ACT_F_LABEL_CUT) != 0;
		if (a.user_data)
			rd_decode_userdata(c, a.user_data, &sa->fields);
	}
out:
	free(r.first);
	free(r.second);
}
