// SPDX-License-Identifier: MIT
/*
 * Decoders of the PROCESS record (the owner's identity as the heap
 * claims it, phase, command line, and where its data and log are) and
 * of CHILD records (children it launched and how they ended).
 */
#include <string.h>

#include "internal.h"

/* Version 3: role and instance, once their writer is done with them. */
static void decode_role(struct rd_ctx *c, const struct blamer_process *r)
{
	if (r->role_state != BLAMER_ROLE_SET)
		return;
	rd_sanitize(c->p->role, r->role, sizeof(r->role));
	rd_sanitize(c->p->instance, r->instance, sizeof(r->instance));
}

void rd_decode_process(struct rd_ctx *c, blamer_ref ref)
{
	struct blamer_process r;
	struct blamer_block b;
	size_t size = c->h->version >= 3 ? sizeof(r) : BLAMER_PROCESS_V2_SIZE;
	uint32_t i, n;

	if (c->p->have_record)
		return;		/* the first one found is the heap's */
	memset(&r, 0, sizeof(r));
	if (!rd_record(c, ref, BLAMER_REC_PROCESS, &b, &r, size) || !r.owner.data_id)
		return;
	c->p->have_record = true;
	c->pid = r.owner.pid;
	c->stamp = r.owner.create_stamp;
	c->p->rec_pid = r.owner.pid;
	c->p->phase = r.phase;
	n = r.cmdline_len < BLAMER_CMDLINE_MAX ? r.cmdline_len : BLAMER_CMDLINE_MAX;
	/* runs of printable ASCII copied as they are (a byte at a time was
	 * 2 % of a scrape), each byte between them a space (NUL: between
	 * arguments) or '?' */
	for (i = 0; i < n; i++) {
		size_t run = rd_printable_span(r.cmdline + i, n - i);
		unsigned char ch;

		memcpy(c->p->cmdline + i, r.cmdline + i, run);
		i += run;
		if (i == n)
			break;
		ch = (unsigned char)r.cmdline[i];
		c->p->cmdline[i] = ch == 0 ? ' ' : '?';
	}
	while (n && c->p->cmdline[n - 1] == ' ')
		n--;
	c->p->cmdline[n] = '\0';
	/* decoded once the list is walked (parse.c) */
	c->ud_process = r.user_data;
	c->ud_global = r.global_data;
	decode_role(c, &r);
	if (r.log && c->nlogs < 16)
		c->logs[c->nlogs++] = r.log;
}

void rd_decode_child(struct rd_ctx *c, blamer_ref ref)
{
	struct blamer_child r;
	struct blamer_block b;
	struct blamer_snap_child *sc;

	if (!rd_record(c, ref, BLAMER_REC_CHILD, &b, &r, sizeof(r)) || !rd_owner_ok(c, &r.owner))
		return;
	sc = rd_push(c, (void **)&c->p->children, &c->p->nchildren, sizeof(*sc));
	if (!sc)
		return;
	sc->pid = r.child_pid;
	sc->launch_time_ns = r.launch_time_ns;
	sc->exit_time_ns = r.exit_time_ns;
	sc->exit_status = r.exit_status;
	sc->state = r.state;
	sc->start_time_ns = r.child_start_stamp > 0 ? (uint64_t)r.child_start_stamp : 0;
}
