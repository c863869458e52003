// SPDX-License-Identifier: MIT
/*
 * One heap at a time, for every backend: the rules each heap goes
 * through are here once, so a rule added for one backend holds for all
 * of them (the dir backend's and the device's loops once each had their
 * own copy of this, and a rule added to one was missed in the other).
 *
 * A backend (struct rd_backend_ops: dir.c, dev.c) lists heaps, says what
 * it knows of each one's process, and hands back its slabs' bytes; it
 * never orders, checks or parses them, and never keeps a decoded heap.
 * For each heap listed:
 *
 *   facts -> read in full? -> reuse a kept decoding? -> read -> order and
 *   check the slabs -> parse -> drop the slabs -> keep the decoding?
 *
 * The walk goes one way: reader.c calls the pipeline, the pipeline calls
 * the backend's ops and, below them, keep.c, slabs.c and parse.c.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

/*
 * A dead heap kept from the last snapshot, into w->p, if its slabs are
 * still the ones it was decoded from (the backend says what identifies
 * them, without reading them). What the backend says of the process now
 * (whether /proc disproves its claim) is now's, not the kept one's.
 */
static bool reuse_kept(struct blamer_reader *r, struct rd_walk *w)
{
	struct blamer_snap_process *p = w->p;
	bool disproved = p->disproved;
	char why[sizeof(p->disproved_why)];
	struct rd_kept *e;
	uint32_t i;

	e = rd_keep_find(&r->keep, p->pid, p->start_time_ns, p->heap_key);
	if (!e || e->nslabs != w->n || !r->ops->identify(r, w))
		return false;
	/* the backend's note of how far it read is the kept one's */
	for (i = 0; i < w->n; i++)
		w->ks[i].hint = e->slabs[i].hint;
	memcpy(why, p->disproved_why, sizeof(why));
	if (!rd_keep_same(e, w->ks, w->n) || !rd_keep_reuse(&r->keep, e, w->s, p))
		return false;
	p->disproved = disproved;
	memcpy(p->disproved_why, why, sizeof(why));
	if (r->ops->reused)
		r->ops->reused(r, w);
	return true;
}

/* The heap's slabs, from its backend, ordered, checked and parsed into
 * w->p; false if they held nothing of a heap (w->p is not shown). */
static bool read_and_parse(struct blamer_reader *r, struct rd_walk *w)
{
	struct rd_slab raw[BLAMER_MAX_SLABS], ordered[BLAMER_MAX_SLABS];
	struct rd_heap h = { 0 };
	enum rd_got got;
	uint32_t i, nraw = 0;

	memset(ordered, 0, sizeof(ordered));
	got = r->ops->read(r, w, raw, &nraw);
	h.slabs = ordered;
	h.retries = r->opts.max_retries;
	h.flags = r->opts.flags;
	h.headers_only = w->headers_only;
	h.check_ids = true;
	h.live = w->p->state == BLAMER_PROC_LIVE;
	h.s = w->s;
	h.p = w->p;
	h.scratch = &r->scratch;
	h.like = w->s->nprocs >= 2 ? &w->s->procs[w->s->nprocs - 2] : NULL;
	if (got == RD_GOT_SLABS && nraw && rd_heap_order(&h, raw, nraw))
		rd_heap_parse(&h);
	for (i = 0; i < nraw; i++)
		rd_slab_drop(&raw[i]);
	if (got == RD_GOT_NO_HEAP)
		return false;
	if (r->ops->parsed)
		r->ops->parsed(r, w);
	return true;
}

int rd_pipeline_snapshot(struct blamer_reader *r, struct blamer_snapshot *s,
			 char *err, size_t errlen)
{
	const struct rd_backend_ops *ops = r->ops;
	uint32_t flags = r->opts.flags;
	struct rd_walk w;
	int ret;

	ret = ops->list(r, s, err, errlen);
	if (ret)
		return ret;	/* nothing listed: what was kept stays */
	rd_defshare_reset(&r->scratch.share);
	while ((w.n = ops->next(r))) {
		bool live, full;
		size_t defs;

		w.s = s;
		w.p = rd_new_process(s);
		if (!w.p) {
			rd_err(err, errlen, "out of memory");
			ret = -ENOMEM;
			break;
		}
		ops->facts(r, &w);
		live = w.p->state == BLAMER_PROC_LIVE;
		/* A dead heap not read in full gets what list gets (its headers
		 * and process record: name, how it ended, sizes), so it looks
		 * the same in every view; its records stay unchecked. */
		full = !(flags & BLAMER_READ_HEADERS_ONLY) &&
		       (live || !ops->summarize_dead || (flags & BLAMER_READ_DEAD_FULL));
		w.headers_only = !full;
		/* a dead heap's slabs no longer change: decoded once, then kept */
		w.keep = full && !live && (flags & BLAMER_READ_KEEP_DEAD) &&
			 w.n <= BLAMER_MAX_SLABS;
		if (w.keep && reuse_kept(r, &w))
			continue;
		defs = s->nuid_unit_defs;
		if (!read_and_parse(r, &w)) {
			rd_drop_last_process(s);
			continue;
		}
		if (w.keep && ops->keepable(r, &w))
			rd_keep_add(&r->keep, s, w.p, defs, w.ks, w.n);
	}
	ops->end(r);
	rd_defshare_reset(&r->scratch.share);	/* its notes point into @s */
	if (flags & BLAMER_READ_KEEP_DEAD)
		rd_keep_swap(&r->keep);
	return ret;
}
