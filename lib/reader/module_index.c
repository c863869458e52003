// SPDX-License-Identifier: MIT
/*
 * A process's module list as a sorted table of address ranges
 * (blamer_snap_process.module_spans), so that blamer_snap_module_at()
 * finds the module holding an address with one binary search instead of
 * a walk over every module: a dump of a heap with 65,536 modules and two
 * million activities asked that 2 million times (over a minute).
 *
 * The answer is the one the walk gave: the last module listed, loaded,
 * whose range holds the address (a library mapped again later wins over
 * the stale record). Ranges may overlap in any way a heap likes, so the
 * table is made by a sweep over the ranges' boundaries: between two
 * consecutive boundaries one module wins, the latest listed of those
 * covering it (a max-heap of the covering modules by index, ranges
 * that ended dropped lazily). At most two spans per module; O(m log m).
 */
#include <stdlib.h>

#include "internal.h"

struct range {
	uint64_t first, last;	/* inclusive: a range may end at 2^64 - 1 */
	uint32_t module;
};

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A max-heap of range indexes by module index (the later listed on top). */
struct cover {
	uint32_t *v;
	size_t n;
	const struct range *r;
};

static void cover_push(struct cover *c, uint32_t i)
{
	size_t at = c->n++;

	while (at && c->r[c->v[(at - 1) / 2]].module < c->r[i].module) {
		c->v[at] = c->v[(at - 1) / 2];
		at = (at - 1) / 2;
	}
	c->v[at] = i;
}

static void cover_pop(struct cover *c)
{
	uint32_t last = c->v[--c->n];
	size_t at = 0, kid;

	for (; (kid = 2 * at + 1) < c->n; at = kid) {
		if (kid + 1 < c->n && c->r[c->v[kid + 1]].module > c->r[c->v[kid]].module)
			kid++;
		if (c->r[c->v[kid]].module <= c->r[last].module)
			break;
		c->v[at] = c->v[kid];
	}
	if (c->n)
		c->v[at] = last;
}

void rd_index_modules(struct blamer_snapshot *s, struct blamer_snap_process *p)
{
	struct blamer_snap_module_span *spans = NULL;
	struct range *r = NULL;
	uint64_t *bounds = NULL;
	struct cover c = { 0 };
	size_t i, k, nr = 0, nb = 0, ns = 0, next = 0;

	p->module_spans = NULL;
	p->nmodule_spans = 0;
	r = malloc((p->nmodules ? p->nmodules : 1) * sizeof(*r));
	bounds = malloc((p->nmodules ? p->nmodules : 1) * 2 * sizeof(*bounds));
	c.v = malloc((p->nmodules ? p->nmodules : 1) * sizeof(*c.v));
	spans = rd_alloc(s, (p->nmodules ? p->nmodules : 1) * 2 * sizeof(*spans));
	if (!r || !bounds || !c.v || !spans)
		goto out;	/* blamer_snap_module_at() walks the list */
	for (i = 0; i < p->nmodules; i++) {
		const struct blamer_snap_module *m = &p->modules[i];

		if (!m->loaded || !m->size)
			continue;
		r[nr].first = m->base;
		r[nr].last = m->size - 1 > UINT64_MAX - m->base ? UINT64_MAX : m->base + m->size - 1;
		r[nr].module = (uint32_t)i;
		bounds[nb++] = r[nr].first;
		if (r[nr].last != UINT64_MAX)
			bounds[nb++] = r[nr].last + 1;
		nr++;
	}
	qsort(r, nr, sizeof(*r), range_cmp);
	qsort(bounds, nb, sizeof(*bounds), u64_cmp);
	for (i = 0, k = 0; i < nb; i++)
		if (!k || bounds[k - 1] != bounds[i])
			bounds[k++] = bounds[i];
	nb = k;
	c.r = r;
	/* between bounds[i] and the next boundary the same ranges cover */
	for (i = 0; i < nb; i++) {
		uint64_t at = bounds[i], end = i + 1 < nb ? bounds[i + 1] - 1 : UINT64_MAX;
		uint32_t m;

		while (next < nr && r[next].first <= at)
			cover_push(&c, (uint32_t)next++);
		while (c.n && r[c.v[0]].last < at)
			cover_pop(&c);
		if (!c.n)
			continue;
		m = r[c.v[0]].module;
		if (ns && spans[ns - 1].module == m && spans[ns - 1].last + 1 == at)
			spans[ns - 1].last = end;
		else
			spans[ns++] = (struct blamer_snap_module_span){ .first = at, .last = end,
									.module = m };
	}
	p->module_spans = spans;
	p->nmodule_spans = ns;
out:
	free(r);
	free(bounds);
	free(c.v);
}
