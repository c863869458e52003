// SPDX-License-Identifier: MIT
/*
 * Decoder of LOG records: the ring of recent messages. Each slot is
 * rewritten under its own seq by whichever writer claimed it; a slot is
 * shown if it was written (seq even and not 0) and not yet overwritten
 * by a message a whole ring later. parse.c sorts them by number.
 */
#include "internal.h"

void rd_decode_log(struct rd_ctx *c, blamer_ref ref)
{
	struct blamer_log l;
	struct blamer_block b;
	uint32_t i, nslots;

	if (!rd_record(c, ref, BLAMER_REC_LOG, &b, &l, sizeof(l)) || !rd_owner_ok(c, &l.owner))
		return;
	nslots = (b.size - sizeof(l)) / sizeof(struct blamer_log_slot);
	if (l.slot_count > nslots) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "log at %#llx: %u slots in %u bytes",
			   (unsigned long long)ref, l.slot_count, b.size);
		return;
	}
	for (i = 0; i < l.slot_count; i++) {
		struct blamer_log_slot s, s2;
		struct rd_stable r = {
			.ref = ref + sizeof(l) + (uint64_t)i * sizeof(s),
			.len = sizeof(s), .cap = sizeof(s),
			.first = (uint8_t *)&s, .second = (uint8_t *)&s2,
			.seq_off = 0, .settled = rd_settled_seq,
		};
		struct blamer_snap_log *sl;
		enum rd_read got = rd_read_stable(c->h, &r);

		if (got == RD_READ_BAD)
			return;
		if (got != RD_READ_STABLE) {
			c->p->torn_records++;
			continue;
		}
		/* never written, or overwritten since head moved on */
		if (!s.seq || s.number >= l.head || l.head - s.number > l.slot_count)
			continue;
		sl = rd_push(c, (void **)&c->p->logs, &c->p->nlogs, sizeof(*sl));
		if (!sl)
			return;
		sl->number = s.number;
		sl->time_ns = s.time_ns;
		rd_sanitize(sl->text, s.text, s.len < BLAMER_LOG_MSG_MAX ? s.len : BLAMER_LOG_MSG_MAX);
	}
}
