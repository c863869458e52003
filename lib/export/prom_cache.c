// SPDX-License-Identifier: MIT
/*
 * A long-lived exporter's cache (blamer_prom_cache): each process's text
 * from the scrape before, reused while the process shows the same and
 * the scrape writes the same families and labels; the exposition made
 * from those texts, family by family. Same bytes as a one-off export
 * (prom.c), at the cost of what changed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hash.h"
#include "prom.h"

/*
 * What a scrape wrote for one process, kept for the next: its text, and
 * where each family's samples are in it (gauges first, then attribution
 * families), with the unit of its first attribution value in each (which
 * names a shared family's HELP). Reused while the process shows the same
 * (its fingerprint) and the scrape writes the same families and labels
 * (the cache's context).
 */
struct span {
	uint32_t off, len, unit;
};

struct written {
	struct prom_key key;
	uint64_t print;		/* fingerprint of what it shows */
	char *text;
	struct span *spans;	/* NGAUGES + nfam */
};

struct blamer_prom_cache {
	uint64_t seed;
	uint64_t context;	/* of the last scrape: families, units, node names */
	size_t nfam;
	struct written *v;
	size_t n;
	/* what making one process's text takes, kept from process to process */
	struct prom_out scratch;	/* its text */
	struct prom_out labels;		/* its path labels */
	struct entry *values;		/* its values, sorted */
	size_t nvalues;			/* room at values */
	struct prom_guard guard;	/* every series held at its highest */
	struct prom_guard mguard;	/* and every metric's (not cached) */
};


/* Everything of @p a scrape writes (keyed by the cache's secret seed:
 * no heap can aim for another process's fingerprint). */
static uint64_t fingerprint(uint64_t seed, const struct blamer_snap_process *p)
{
	uint64_t h = seed;
	size_t j, k;

	h = ex_mix(h, (uint64_t)(uint32_t)p->pid);
	h = ex_mix(h, p->start_time_ns);
	h = ex_mix(h, p->heap_key);
	h = ex_mix(h, p->kernel_facts);
	h = ex_mix_str(h, p->comm);
	h = ex_mix_str(h, p->role);
	h = ex_mix_str(h, p->instance);
	for (j = 0; j < BLAMER_DROP_MAX; j++)
		h = ex_mix(h, p->drops[j]);
	h = ex_mix(h, p->state);
	h = ex_mix(h, p->size);
	h = ex_mix(h, p->used);
	h = ex_mix(h, p->health);
	h = ex_mix(h, p->have_record);
	h = ex_mix(h, p->phase);
	h = ex_mix(h, p->nthreads);
	h = ex_mix(h, p->exited);
	h = ex_mix(h, p->exit_signal);
	h = ex_mix(h, p->disproved);
	h = ex_mix(h, p->npaths);
	for (j = 0; j < p->npaths; j++) {
		const struct blamer_snap_path *q = &p->paths[j];

		h = ex_mix(h, q->depth);
		for (k = 0; k < q->depth && k < BLAMER_SNAP_MAX_DEPTH; k++)
			h = ex_mix(h, q->nodes[k]);
		h = ex_mix(h, q->nvalues);
		for (k = 0; k < q->nvalues && k < BLAMER_SNAP_MAX_UNITS; k++) {
			h = ex_mix(h, q->units[k]);
			h = ex_mix(h, q->values[k]);
		}
	}
	return h;
}

/* What every process's text depends on beyond the process: the families
 * and the path elements of the snapshot's named nodes. */
static uint64_t context(uint64_t seed, const struct exp *e)
{
	uint64_t h = ex_mix(seed, e->nfam);
	size_t i;

	for (i = 0; i < e->nn; i++) {
		h = ex_mix(h, e->nv[i].uid);
		h = ex_mix(h, e->nv[i].def->unit);
		h = ex_mix(h, e->nv[i].def->base);
		h = ex_mix(h, e->nv[i].fam_index);
		h = ex_mix_str(h, e->nv[i].fam);
	}
	h = ex_mix(h, e->nm.n);
	for (i = 0; i < e->nm.n; i++) {
		h = ex_mix(h, e->nm.v[i].uid);
		h = ex_mix(h, e->nm.v[i].node.id);
		h = ex_mix(h, e->nm.shared[i]);
		h = ex_mix_str(h, e->nm.v[i].node.name);
	}
	return h;
}

static void written_free(struct written *x)
{
	free(x->text);
	free(x->spans);
	x->text = NULL;
	x->spans = NULL;
}

struct blamer_prom_cache *blamer_prom_cache_new(void)
{
	struct blamer_prom_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->seed = ex_seed(c);
	return c;
}

void blamer_prom_cache_free(struct blamer_prom_cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		written_free(&c->v[i]);
	free(c->v);
	free(c->scratch.p);
	free(c->labels.p);
	free(c->values);
	prom_guard_free(&c->guard);
	prom_guard_free(&c->mguard);
	free(c);
}

/* @p's text, made now into @x: its samples family by family, each
 * counter held up by @g. */
static bool write_one(struct blamer_prom_cache *c, struct exp *e,
		      const struct blamer_snap_process *p, struct written *x,
		      struct prom_guard_proc *g)
{
	struct prom_out *o = &c->scratch;
	size_t g_, f, nspans = NGAUGES + e->nfam, nv = prom_nvalues(p) + 1;
	struct pw w = { 0 };
	bool ok = false;

	/* a failure last time is not this one's: try again */
	o->len = 0;
	o->oom = false;
	c->labels.len = 0;
	c->labels.oom = false;
	if (nv > c->nvalues) {
		struct entry *v = realloc(c->values, nv * sizeof(*v));

		if (!v)
			return false;
		c->values = v;
		c->nvalues = nv;
	}
	x->spans = calloc(nspans, sizeof(*x->spans));
	if (!x->spans || !prom_pw_init(e, &w, p, c->values, &c->labels))
		goto out;
	w.guard = g;
	prom_guard_begin(g, c->seed);
	for (g_ = 0; g_ < NGAUGES; g_++) {
		x->spans[g_].off = (uint32_t)o->len;
		prom_write_gauge(&w, g_, o);
		x->spans[g_].len = (uint32_t)(o->len - x->spans[g_].off);
	}
	for (f = 0; f < e->nfam; f++) {
		struct span *sp = &x->spans[NGAUGES + f];

		sp->off = (uint32_t)o->len;
		if (w.at < w.n && w.v[w.at].fam == f)
			sp->unit = w.v[w.at].unit;
		prom_write_attr(e, &w, f, o);
		sp->len = (uint32_t)(o->len - sp->off);
	}
	if (!prom_guard_end(g))
		goto out;	/* a series not remembered: made again next time */
	/* one process's text fits the spans' 32 bits: the reader's limits */
	if (o->oom || o->len >= UINT32_MAX)
		goto out;
	x->text = malloc(o->len + 1);
	if (!x->text)
		goto out;
	memcpy(x->text, o->p, o->len);
	ok = true;
out:
	prom_pw_free(&w);
	if (!ok)
		written_free(x);
	return ok;
}

/*
 * The exposition from each process's text: kept from the last scrape
 * where the process shows the same, made now where not; then family by
 * family, each process's part of it.
 */
static int write_cached(struct blamer_prom_cache *c, const struct blamer_snapshot *s,
			struct prom_out *o)
{
	struct prom_guard_proc *gv = NULL, *mgv = NULL;
	struct written *nv = NULL;
	size_t i, j = 0, gj = 0, ngv = 0, g, f, k;
	struct timespec now;
	uint64_t ctx;
	struct exp e;
	int ret = -ENOMEM;

	if (!prom_exp_init(&e, s))
		goto out;
	ctx = context(c->seed, &e);
	if (ctx != c->context || e.nfam != c->nfam) {
		for (i = 0; i < c->n; i++)	/* other families or labels: all made anew */
			written_free(&c->v[i]);
		c->n = 0;
		c->context = ctx;
		c->nfam = e.nfam;
	}
	nv = calloc(e.nprocs + 1, sizeof(*nv));
	gv = calloc(e.nprocs + 1, sizeof(*gv));
	if (!nv || !gv)
		goto out;
	for (i = 0; i < e.nprocs; i++) {
		const struct blamer_snap_process *p = e.procs[i];
		struct written *x = &nv[i];
		struct prom_guard_proc *old;
		int cmp = 1;

		/* both in key order: the last scrape's entry for p, if any */
		x->key = prom_key_of(p);
		while (j < c->n && (cmp = prom_key_cmp(&x->key, &c->v[j].key)) > 0)
			j++;
		/* what its series were: taken over (the old slot keeps the key) */
		old = prom_guard_find(&c->guard, &x->key, &gj);
		gv[i].key = x->key;
		ngv = i + 1;
		if (old) {
			gv[i] = *old;
			old->v = old->fresh = NULL;
			old->n = old->capv = old->nnew = old->capnew = 0;
		}
		x->print = fingerprint(c->seed, p);
		/* the same text as last time holds the same values, so the
		 * same floors: nothing for the guard to see */
		if (!cmp && c->v[j].text && c->v[j].print == x->print) {
			x->text = c->v[j].text;
			x->spans = c->v[j].spans;
			c->v[j].text = NULL;
			c->v[j].spans = NULL;
		} else if (!write_one(c, &e, p, x, &gv[i])) {
			goto out;
		}
	}
	prom_write_heaps(&e, o);
	for (g = 0; g < NGAUGES; g++) {
		prom_gauge_family(o, g);
		for (i = 0; i < e.nprocs; i++)
			prom_put(o, nv[i].text + nv[i].spans[g].off, nv[i].spans[g].len);
	}
	for (f = 0; f < e.nfam; f++) {
		k = NGAUGES + f;
		for (i = 0; i < e.nprocs && !nv[i].spans[k].len; i++)
			;
		if (i == e.nprocs)
			continue;
		prom_attr_family(&e, f, e.procs[i]->uid, nv[i].spans[k].unit, o);
		for (; i < e.nprocs; i++)
			prom_put(o, nv[i].text + nv[i].spans[k].off, nv[i].spans[k].len);
	}
	/* the metrics each process wrote, not cached, each process's
	 * counters held by a memory of their own */
	mgv = calloc(e.nprocs + 1, sizeof(*mgv));
	if (!mgv)
		goto out;
	for (i = 0, gj = 0; i < e.nprocs; i++) {
		struct prom_guard_proc *old;

		mgv[i].key = nv[i].key;
		old = prom_guard_find(&c->mguard, &mgv[i].key, &gj);
		if (old) {
			mgv[i] = *old;
			old->v = old->fresh = NULL;
			old->n = old->capv = old->nnew = old->capnew = 0;
		}
		prom_guard_begin(&mgv[i], c->seed);
	}
	pm_write_processes(&e, o, mgv);
	for (i = 0; i < e.nprocs; i++)
		prom_guard_end(&mgv[i]);	/* out of memory: the last floors stay */
	/* the processes whose heaps showed a counter going down, if any */
	for (i = 0; i < e.nprocs && !gv[i].decreases && !mgv[i].decreases; i++)
		;
	if (i < e.nprocs) {
		prom_family(o, PROM_DECREASES_FAMILY, "counter", PROM_DECREASES_HELP);
		for (; i < e.nprocs; i++)
			if (gv[i].decreases || mgv[i].decreases)
				prom_write_decreases(e.procs[i], gv[i].decreases + mgv[i].decreases, o);
	}
	ret = o->oom ? -ENOMEM : 0;
out:
	if (gv) {
		/* what the processes written remember (all of them: one that
		 * failed keeps what it had), with the absent ones' for a while */
		clock_gettime(CLOCK_MONOTONIC, &now);
		prom_guard_swap(&c->guard, gv, ngv,
				(uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
		if (mgv)
			prom_guard_swap(&c->mguard, mgv, e.nprocs,
					(uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
	}
	for (i = 0; i < c->n; i++)
		written_free(&c->v[i]);
	free(c->v);
	c->v = nv;
	c->n = nv ? e.nprocs : 0;
	if (ret) {
		/* nothing half made is kept */
		for (i = 0; i < c->n; i++)
			written_free(&c->v[i]);
		c->n = 0;
	}
	prom_exp_free(&e);
	return ret;
}

int blamer_snapshot_prometheus_text_cached(const struct blamer_snapshot *s,
					   struct blamer_prom_cache *c, char **buf, size_t *len,
					   size_t *cap)
{
	struct prom_out o = { .p = *buf, .cap = *cap };
	int ret = c ? write_cached(c, s, &o) : prom_write_all(s, &o);

	*buf = o.p;
	*cap = o.cap;
	*len = ret ? 0 : o.len;
	return ret;
}
