// SPDX-License-Identifier: MIT
/*
 * The log: a bounded ring of recent messages in the LOG record.
 * A writer claims message number n = fetch_add(head, 1) and slot
 * n % slot_count; it stores seq = 2n + 1 (odd: being written), writes
 * time, number, text and length, then stores seq = 2n + 2 with release.
 * Readers show slots whose seq is even, non-zero and unchanged across
 * their copy, in order of number. Two writers a whole ring apart may
 * meet in one slot; the reader then sees seq change and skips it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "atomic.h"
#include "internal.h"

int blamer_log(struct blamer *b, const char *fmt, ...)
{
	char text[BLAMER_LOG_MSG_MAX + 1];
	struct blamer_log_slot *s;
	struct blamer_log *log;
	struct bl_heap *h;
	blamer_ref ref;
	int err;
	uint64_t n;
	va_list ap;
	int len;

	h = bl_heap_for(&b, &err);
	if (!h)
		return err;
	ref = bl_part(b, BL_PART_LOG);	/* made by the first message */
	if (!ref)
		return -bl_last_error();
	log = bl_heap_get(h, ref, BLAMER_REC_LOG, sizeof(*log));
	if (!log || !log->slot_count ||
	    log->hdr.size < sizeof(*log) + (uint64_t)log->slot_count * sizeof(*s))
		return bl_error(EIO, "blamer: log record lost");
	va_start(ap, fmt);
	len = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (len < 0)
		return bl_error(EINVAL, "blamer: bad log format");
	if ((size_t)len > BLAMER_LOG_MSG_MAX) {
		len = BLAMER_LOG_MSG_MAX;
		bl_drop(b, BLAMER_DROP_LOG_CUT);
	}
	/* Relaxed: the claim only hands out numbers; the slot's seq does
	 * the publishing. */
	n = atomic_fetch_add_explicit(A64(&log->head), 1, memory_order_relaxed);
	s = &log->slots[n % log->slot_count];
	st_relaxed(A32(&s->seq), (uint32_t)(2 * n + 1));
	/* Release fence: the odd seq is visible before any new byte. */
	atomic_thread_fence(memory_order_release);
	s->time_ns = bl_realtime_ns();
	s->number = n;
	memcpy(s->text, text, (size_t)len);
	memset(s->text + len, 0, BLAMER_LOG_MSG_MAX - (size_t)len);
	s->len = (uint32_t)len;
	/* Release: the message is complete when seq is even again. */
	st_release(A32(&s->seq), (uint32_t)(2 * n + 2));
	return 0;
}
