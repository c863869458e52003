// SPDX-License-Identifier: MIT
/*
 * Dir backend, the read buffer and the read hints: copies go into one
 * buffer the reader keeps for the next heap and snapshot, by pread()
 * (a file truncated or replaced under us gives a short read, never a
 * SIGBUS); a long-lived reader notes how far it read each file, to read
 * as far at once the next time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "where.h"

/* a buffer bigger than this is not kept for the next heap */
#define RD_KEEP_BUF		(4u << 20)

/* Room for @len bytes at @off of the reader's buffer. */
bool rd_dir_buf_room(struct blamer_reader *r, size_t off, size_t len)
{
	size_t need = off + len, cap;
	uint8_t *nb;

	if (need <= r->bufcap && r->buf)
		return true;
	cap = r->bufcap ? r->bufcap : RD_FIRST_READ;
	while (cap < need)
		cap *= 2;
	/* page-aligned: pread() copies into it from page-aligned page
	 * cache, and a destination off a cache line costs the copy */
	nb = aligned_alloc(4096, cap);
	if (!nb)
		return false;
	if (r->buf)
		memcpy(nb, r->buf, r->bufcap);	/* what is read of the slab at @off too */
	free(r->buf);
	r->buf = nb;
	r->bufcap = cap;
	return true;
}

/* After a heap: a big heap's copy is not kept while the others are read. */
void rd_dir_buf_trim(struct blamer_reader *r)
{
	if (r->bufcap > RD_KEEP_BUF) {
		free(r->buf);
		r->buf = NULL;
		r->bufcap = 0;
	}
}

/* pread() until @len bytes or the end of the file; the bytes read. */
size_t rd_dir_read_at(int fd, uint8_t *dst, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t got;

	while (done < len) {
		got = pread(fd, dst + done, len - done, (off_t)(off + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;	/* truncated under us: keep what we have */
		done += (size_t)got;
	}
	return done;
}

static int hint_cmp(const void *key, const void *entry)
{
	const struct rd_hint *h = entry;
	struct rd_dfile k = { .pid = h->pid, .start = h->start, .seq = h->seq, .idx = h->idx };

	return rd_dfile_cmp(key, &k);
}

/*
 * A long-lived reader reads a slab file first as far as the last
 * snapshot read it: a dead heap's bytes exactly (they do not change), a
 * live one's to the end of that page (a heap that grew past it costs a
 * second pread() of what is new; a page more for every heap every time
 * was a quarter of the bytes an exporter copied). A first snapshot, and
 * a file not read last time, start with RD_FIRST_READ. Either way the header is
 * checked before anything more is read, and what is read past the
 * freeptr is not kept: the hint only spares a second pread() or copying
 * bytes no record is in.
 */
uint64_t rd_dir_hint_of(const struct blamer_reader *r, const struct rd_dfile *f)
{
	const struct rd_hint *h = rd_carry_find(&r->hints, f, hint_cmp);

	return h ? h->bytes : 0;
}

void rd_dir_hint_note(struct blamer_reader *r, const struct rd_dfile *f, uint64_t bytes)
{
	struct rd_hint *h;

	if (!r->hints.elsz)
		r->hints = RD_CARRY(struct rd_hint, RD_MAX_DIR_FILES);
	h = rd_carry_add(&r->hints);
	if (h)	/* else no hint next time: RD_FIRST_READ */
		*h = (struct rd_hint){ .pid = f->pid, .idx = f->idx, .start = f->start,
				       .seq = f->seq, .bytes = bytes };
}

/* The end of a snapshot: its reads are the hints of the next (files are
 * read in rd_dfile_cmp() order: the notes come sorted). */
void rd_dir_hint_swap(struct blamer_reader *r)
{
	rd_carry_swap(&r->hints, NULL);
}
