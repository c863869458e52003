// SPDX-License-Identifier: MIT
/*
 * Parse one heap (its slabs already ordered) into a blamer_snap_process:
 * the heap header (slabs.c), the process record it points to, then the
 * record list, each record handed to the decoder of its type
 * (decode_*.c), and last what the list only points to: the process and
 * global data, the log.
 *
 * Every access goes through copy.c, which bounds-checks the reference
 * against the trusted slab size and copies into a local. Walks are
 * bounded (a bit per 8 bytes of heap marks the records met on the list,
 * counts capped by what fits in the slab). Records that keep changing
 * under us are retried h->retries times, then counted as torn and left
 * out. Anything invalid marks the heap corrupt with the first reason;
 * what can still be read is kept. Kinds the caller does not want
 * (BLAMER_READ_NO_*) are not decoded at all.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A listed USERDATA record: the first of each scope the process record
 * did not name is taken as the process's or the application's data. */
static void note_userdata(struct rd_ctx *c, blamer_ref ref)
{
	struct blamer_userdata u;

	if (!rd_copy(c->h, ref, sizeof(u), &u))
		return;
	if (u.scope == BLAMER_DATA_PROCESS && !c->ud_process)
		c->ud_process = ref;
	else if (u.scope == BLAMER_DATA_GLOBAL && !c->ud_global)
		c->ud_global = ref;
}

/* A listed LOG record: decoded after the walk, with the process's. */
static void note_log(struct rd_ctx *c, blamer_ref ref)
{
	if (c->nlogs < 16)
		c->logs[c->nlogs++] = ref;
}

/*
 * The decoder of each record type, and the flag that turns it off. DAG
 * shards are summed through their path's chain; types not here
 * (retired, being re-typed, or newer than this reader) are skipped.
 */
static const struct {
	void (*decode)(struct rd_ctx *c, blamer_ref ref);
	uint32_t unless;
} decoders[] = {
	[BLAMER_REC_PROCESS] = { rd_decode_process, 0 },
	[BLAMER_REC_THREAD] = { rd_decode_thread, BLAMER_READ_NO_THREADS },
	[BLAMER_REC_USERDATA] = { note_userdata, BLAMER_READ_NO_USERDATA },
	[BLAMER_REC_MODULE] = { rd_decode_module, BLAMER_READ_NO_MODULES },
	[BLAMER_REC_LOG] = { note_log, BLAMER_READ_NO_LOG },
	[BLAMER_REC_DAG_NODE] = { rd_decode_node, BLAMER_READ_NO_DAG },
	[BLAMER_REC_DAG_EDGE] = { rd_decode_edge, BLAMER_READ_NO_DAG },
	[BLAMER_REC_DAG_PATH] = { rd_decode_path, BLAMER_READ_NO_DAG },
	[BLAMER_REC_CHILD] = { rd_decode_child, BLAMER_READ_NO_CHILDREN },
	[BLAMER_REC_DAG_UNIT] = { rd_decode_unit, BLAMER_READ_NO_DAG },
	[BLAMER_REC_DROPS] = { rd_decode_drops, 0 },
	[BLAMER_REC_METRIC_DEF] = { rd_decode_metric_def, BLAMER_READ_NO_METRICS },
	[BLAMER_REC_METRIC] = { rd_decode_metric, BLAMER_READ_NO_METRICS },
};

static void walk_list(struct rd_ctx *c, const struct blamer_heap_header *hh)
{
	struct blamer_block b;
	blamer_ref ref = hh->list_head;
	uint32_t flags = c->h->flags;

	if (!ref)
		return;
	if (!rd_copy(c->h, ref, sizeof(b), &b) || b.cookie != BLAMER_BLOCK_QUEUE) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "list head %#llx is not a queue block",
			   (unsigned long long)ref);
		return;
	}
	if (rd_seen_add(c, c->listed, ref) < 0)
		return;
	/* circular through the dummy head; next == 0: the end (mid-append).
	 * Every record is met once: a loop, or two links to one record, is
	 * caught by the bits, so the walk costs at most the heap's size. */
	for (ref = b.next; ref && ref != hh->list_head; ref = b.next) {
		int r;

		if (!rd_block(c, ref, sizeof(b), 0, &b))
			break;
		r = rd_seen_add(c, c->listed, ref);
		if (r < 0)
			break;
		if (r == 0) {
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "record list loops at %#llx",
				   (unsigned long long)ref);
			break;
		}
		if (b.type < sizeof(decoders) / sizeof(decoders[0]) && decoders[b.type].decode &&
		    !(decoders[b.type].unless & flags))
			decoders[b.type].decode(c, ref);
	}
}

static int log_cmp(const void *a, const void *b)
{
	const struct blamer_snap_log *x = a, *y = b;

	return x->number < y->number ? -1 : x->number > y->number;
}

static void parse(struct rd_heap *h);

void rd_heap_parse(struct rd_heap *h)
{
	parse(h);
	rd_scratch_commit(h);
	if (h->p->nmodules)
		rd_index_modules(h->s, h->p);
	rd_metrics_link(h->p);
}

static void parse(struct rd_heap *h)
{
	struct blamer_heap_header hh;
	struct blamer_snap_process *p = h->p;
	struct rd_seen own[2] = { 0 };
	struct rd_ctx c = { .h = h, .p = p, .listed = &own[0], .shards = &own[1] };
	uint32_t i;

	if (h->scratch) {	/* the last heap's table and bitmaps, empty */
		c.defs = h->scratch->defs;
		memset(&h->scratch->defs, 0, sizeof(h->scratch->defs));
		/* used where they are: each heap clears the words it uses */
		c.listed = &h->scratch->listed;
		c.shards = &h->scratch->shards;
	}
	if (!rd_heap_check(h, &hh))
		goto out;
	c.clock.kind = hh.clock;
	c.clock.anchor_tsc = hh.clock_anchor_tsc;
	c.clock.anchor_ns = hh.clock_anchor_ns;
	if (hh.process)
		rd_decode_process(&c, hh.process);
	if (h->headers_only) {
		if (!p->problem[0])
			p->health = BLAMER_HEALTH_UNCHECKED;
		goto out;
	}
	walk_list(&c, &hh);
	if (!(h->flags & BLAMER_READ_NO_USERDATA)) {
		rd_decode_userdata(&c, c.ud_process, &p->user_data);
		rd_decode_userdata(&c, c.ud_global, &p->global_data);
	}
	for (i = 0; i < c.nlogs && !(h->flags & BLAMER_READ_NO_LOG); i++) {
		bool dup = false;
		uint32_t j;

		for (j = 0; j < i; j++)
			dup |= c.logs[j] == c.logs[i];
		if (!dup)
			rd_decode_log(&c, c.logs[i]);
	}
	free(c.ud.v);
	/* a ring that has not wrapped is in order already: sorted only if not */
	for (i = 1; i < p->nlogs && log_cmp(&p->logs[i - 1], &p->logs[i]) <= 0; i++)
		;
	if (i < p->nlogs)
		qsort(p->logs, p->nlogs, sizeof(*p->logs), log_cmp);
	if (p->torn_records)
		rd_problem(p, BLAMER_HEALTH_TORN, "%u records kept changing while read",
			   p->torn_records);
out:
	rd_seen_done(c.listed, !!h->scratch);
	rd_seen_done(c.shards, !!h->scratch);
	rd_defmap_done(&c.defs, h->scratch ? &h->scratch->defs : NULL);
}
