// SPDX-License-Identifier: MIT
/*
 * Decoder of the DROPS record (heap format version 3): the writes its
 * writer could not record in full, by reason. The counts are plain
 * numbers that only grow: each is taken as copied (a torn copy shows a
 * count a moment older, never a wrong one); the first valid record of
 * the heap's owner is the heap's.
 */
#include <string.h>

#include "internal.h"

static const char *const reason_names[BLAMER_DROP_REASONS] = {
	[BLAMER_DROP_HEAP_FULL] = "heap_full",
	[BLAMER_DROP_STRING_CUT] = "string_cut",
	[BLAMER_DROP_LABEL_CUT] = "label_cut",
	[BLAMER_DROP_NAME_CUT] = "name_cut",
	[BLAMER_DROP_LOG_CUT] = "log_cut",
	[BLAMER_DROP_STACK_OVERFLOW] = "stack_overflow",
	[BLAMER_DROP_BUSY] = "busy",
	[BLAMER_DROP_NO_HEAP] = "no_heap",
	[BLAMER_DROP_BAD_HANDLE] = "bad_handle",
	[BLAMER_DROP_LABEL_VALUES_CUT] = "label_values_cut",
	[BLAMER_DROP_BAD_VALUE] = "bad_value",
};

const char *blamer_drop_reason_name(uint32_t reason)
{
	return reason < BLAMER_DROP_REASONS ? reason_names[reason] : NULL;
}

void rd_decode_drops(struct rd_ctx *c, blamer_ref ref)
{
	struct blamer_drops r;
	struct blamer_block b;
	uint32_t i;

	if (c->p->dropped || !rd_record(c, ref, BLAMER_REC_DROPS, &b, &r, sizeof(r)) ||
	    !rd_owner_ok(c, &r.owner))
		return;
	for (i = 0; i < BLAMER_DROP_SLOTS; i++) {
		c->p->drops[i] = r.count[i];
		/* saturating: a hostile heap cannot wrap the sum */
		c->p->dropped = rd_sat_add(c->p->dropped, r.count[i]);
	}
}
