// SPDX-License-Identifier: MIT
/*
 * Decoder of MODULE records: a loaded shared object (path, address
 * range, build ID), rewritten under its seq when it is loaded again or
 * goes away.
 */
#include <stddef.h>
#include <string.h>

#include "internal.h"

void rd_decode_module(struct rd_ctx *c, blamer_ref ref)
{
	struct blamer_module m, m2;
	struct rd_stable r = {
		.ref = ref, .len = sizeof(m), .cap = sizeof(m),
		.first = (uint8_t *)&m, .second = (uint8_t *)&m2,
		.seq_off = offsetof(struct blamer_module, seq), .settled = rd_settled_seq,
	};
	struct blamer_snap_module *sm;
	struct blamer_block b;
	enum rd_read got;

	if (!rd_block(c, ref, sizeof(m), BLAMER_REC_MODULE, &b))
		return;
	got = rd_read_stable(c->h, &r);
	if (got == RD_READ_BAD || !rd_owner_ok(c, &m.owner))
		return;
	if (got != RD_READ_STABLE) {
		c->p->torn_records++;
		return;
	}
	sm = rd_push((void **)&c->p->modules, &c->p->nmodules, sizeof(*sm), c->p);
	if (!sm)
		return;
	rd_sanitize(sm->path, m.path, m.path_len < BLAMER_PATH_MAX ? m.path_len : BLAMER_PATH_MAX);
	sm->base = m.base;
	sm->size = m.size;
	sm->loaded = m.loaded != 0;
	sm->build_id_len = m.build_id_len < BLAMER_BUILD_ID_MAX ? m.build_id_len
								   : BLAMER_BUILD_ID_MAX;
	memcpy(sm->build_id, m.build_id, sm->build_id_len);
}
