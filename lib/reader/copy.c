// SPDX-License-Identifier: MIT
/*
 * Every byte the reader takes from a heap comes through here: copies
 * bounds-checked against the trusted slab size and 8-byte counters loaded
 * whole (rd_copy(), rd_load_u64s(): inline, in internal.h), and the one
 * way to copy a record its writer may be changing, rd_read_stable().
 *
 * Why rd_read_stable() copies a record twice instead of reading its
 * version word, copying, and reading the version again: a version read
 * in the same memcpy() (or, for a dir slab, the same pread()) as the data
 * is not ordered before the data. Neither glibc's memcpy() nor the
 * kernel's copy to user promises an order of its loads (glibc loads the
 * last vectors of a large copy before the first: a module record's path
 * before its seq), and on a weakly ordered CPU (arm64, POWER) loads of
 * different addresses are reordered anyway. So the version in a copy may
 * be newer than the data copied with it: version N+2 with data torn by
 * update N+1 passes a "version even and unchanged" test. (The reader did
 * exactly that until this helper replaced its four loops.)
 *
 * What is ordered is the second copy after the first: an acquire fence
 * between them. A live dir heap is read from its files twice, the second
 * time after the first read ended (dir.c; only if a record this snapshot
 * decodes is read here: rd_reads_stable()): the first copy comes from the
 * first read, the second from the second (compared in place: the
 * reader's own memory, which nothing else writes), and only a record that
 * differs costs more (a fresh pread() of it into each, in that order). A
 * dead heap's writer is gone: its one copy is the record.
 *
 * A writer makes its version odd, then issues a release fence,
 * then writes the data, then stores the version even with release; a
 * thread stack writes the slot, then the depth with release. If the first
 * copy saw any byte of an update, it read a store that follows the
 * writer's release, so the second copy, after our acquire fence, sees
 * the version odd or changed, or the update's bytes: the copies differ.
 * If the two copies are byte for byte the same and the version is even,
 * the first copy is one state of the record. This is the seqlock read of
 * Linux's read_seqcount_retry() with the data itself as the second
 * version word; it is the message-passing pattern with a barrier on each
 * side, which x86, arm64 and POWER all forbid to be observed reordered.
 * (A plain memcpy() of memory another process writes is a data race in
 * C11's terms; like the kernel's seqlock readers, the reader relies on
 * the hardware's guarantees, and never on a copy before checking it.)
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* @len bytes at @off of slab @slab, from its second read if it has one
 * (rd_copy_raw(): the first). */
static bool copy_second(const struct rd_heap *h, uint32_t slab, uint64_t off, size_t len,
			void *dst)
{
	const struct rd_slab *s = rd_slab_holds(h, slab, off, len);

	if (!s)
		return false;
	memcpy(dst, (s->again ? s->again : s->buf) + off, len);
	return true;
}

bool rd_ref_pending(const struct rd_heap *h, blamer_ref ref, size_t len)
{
	uint32_t slab = blamer_ref_slab(ref);
	uint64_t end = (uint64_t)blamer_ref_offset(ref) + len;
	const struct rd_slab *s;

	if (!h->live || slab >= h->nslabs)
		return false;
	s = &h->slabs[slab];
	return end > s->size && end <= s->real_size;
}

/*
 * Re-fetch a range of a dir slab from its file into its first read (and
 * with @second into its second). Device slabs are live mappings and dead
 * dir heaps have no file kept (nothing to do). A short read (file
 * truncated) keeps the old bytes: never a fault.
 */
static bool refresh(const struct rd_heap *h, blamer_ref ref, size_t len, bool second)
{
	uint32_t slab = blamer_ref_slab(ref), off = blamer_ref_offset(ref);
	const struct rd_slab *s;

	if (slab >= h->nslabs)
		return false;
	s = &h->slabs[slab];
	if (s->fd < 0 || off > s->size || len > s->size - off || (second && !s->again))
		return false;
	return pread(s->fd, (second ? s->again : s->buf) + off, len, off) > 0;
}

bool rd_refresh(const struct rd_heap *h, blamer_ref ref, size_t len)
{
	return refresh(h, ref, len, false);
}

/*
 * Where the second copy of @len bytes at @ref already lies in the
 * reader's own memory: a dir slab's private copies (its second read, or
 * for a dead heap its only one). NULL for a device slab's live mapping,
 * whose second copy must be taken. Bounds as rd_copy().
 */
static const uint8_t *private_copy(const struct rd_heap *h, blamer_ref ref, size_t len)
{
	uint32_t off = blamer_ref_offset(ref);
	const struct rd_slab *s = rd_slab_holds(h, blamer_ref_slab(ref), off, len);

	if (!s || !s->copied)
		return NULL;
	return (s->again ? s->again : s->buf) + off;
}

enum rd_read rd_read_stable(const struct rd_heap *h, struct rd_stable *r)
{
	uint32_t attempt, slab = blamer_ref_slab(r->ref);
	bool priv = slab < h->nslabs && h->slabs[slab].copied;

	/* A private copy read once (a dead dir heap): nothing can change it
	 * between the two copies, so comparing them is no test. A live one
	 * read once (rd_reads_stable() said no record needs this) has no
	 * second copy to compare with: refused, never taken as settled. */
	if (priv && h->live && !h->slabs[slab].again)
		return RD_READ_BAD;
	r->one_source = priv && !h->slabs[slab].again;

	for (attempt = 0; attempt <= h->retries; attempt++) {
		if (r->len > r->cap) {
			uint8_t *a, *b = NULL;

			if (!r->grow)
				return RD_READ_BAD;
			a = realloc(r->first, r->len);
			if (a)
				r->first = a;
			if (!priv) {	/* a private second copy is read in place */
				b = realloc(r->second, r->len);
				if (b)
					r->second = b;
			}
			if (!a || (!priv && !b))
				return RD_READ_NOMEM;
			r->cap = r->len;
		}
		if (attempt)
			refresh(h, r->ref, r->len, false);
		if (!rd_copy(h, r->ref, r->len, r->first))
			return RD_READ_BAD;
		/* Acquire: the second copy's loads come after the first's
		 * (see the top of this file). */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (attempt)
			refresh(h, r->ref, r->len, true);
		if (priv) {
			/* the second read's bytes, taken after the first
			 * read ended: compared where they are */
			r->other = private_copy(h, r->ref, r->len);
			if (!r->other)
				return RD_READ_BAD;
		} else {
			if (!copy_second(h, slab, blamer_ref_offset(r->ref), r->len, r->second))
				return RD_READ_BAD;
			r->other = r->second;
		}
		if (r->settled(r))
			return RD_READ_STABLE;
	}
	return RD_READ_TORN;
}

bool rd_settled_same(struct rd_stable *r)
{
	return r->one_source || !memcmp(r->first, r->other, r->len);
}

bool rd_settled_seq(struct rd_stable *r)
{
	uint32_t seq;

	memcpy(&seq, r->first + r->seq_off, sizeof(seq));
	return !(seq & 1) && rd_settled_same(r);
}
