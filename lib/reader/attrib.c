// SPDX-License-Identifier: MIT
/*
 * The attribution view: what a snapshot adds to the processes the
 * backends read. The DAG paths every process measured are summed into
 * totals (one per path and unit) and into the inclusive tree (every path
 * walked and every prefix of one, each with its own values and those of
 * everything below it, in every unit present), and the DAG nodes are
 * merged by id. Every view (blame, top, JSON, Prometheus) is a function
 * of these, so they agree on what a path is worth and in which order
 * paths come (blamer_path_cmp()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int blamer_path_cmp(const uint64_t *a, uint32_t adepth, const uint64_t *b, uint32_t bdepth)
{
	uint32_t i, d = adepth < bdepth ? adepth : bdepth;

	for (i = 0; i < d; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return adepth < bdepth ? -1 : adepth > bdepth;
}

static int total_cmp(const struct blamer_snap_total *x, const struct blamer_snap_total *y)
{
	int c = blamer_path_cmp(x->nodes, x->depth, y->nodes, y->depth);

	if (c)
		return c;
	return x->unit < y->unit ? -1 : x->unit > y->unit;
}

static int node_cmp_id(const void *a, const void *b)
{
	const struct blamer_snap_node *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/* @s->nodes' entry of @id (by id, as the reader makes them), or NULL. */
static struct blamer_snap_node *node_of(const struct blamer_snapshot *s, uint64_t id)
{
	struct blamer_snap_node key = { .id = id };

	/* (bsearch() of a NULL array, even of 0 entries, is undefined) */
	return s->nnodes ? bsearch(&key, s->nodes, s->nnodes, sizeof(key), node_cmp_id) : NULL;
}

static int node_cmp(const void *a, const void *b)
{
	const struct blamer_snap_node *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	/* named before unnamed, so the first of a run is the best */
	return (x->name[0] == 0) - (y->name[0] == 0);
}

static int proc_cmp(const void *a, const void *b)
{
	const struct blamer_snap_process *x = a, *y = b;
	int c = rd_pid_start_cmp(x->pid, x->start_time_ns, y->pid, y->start_time_ns);

	return c ? c : x->heap_key < y->heap_key ? -1 : x->heap_key > y->heap_key;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The units of the attribution view (limit_units()). */
struct unit_keep {
	uint32_t unit[RD_MAX_SNAP_UNITS];	/* in unit order */
	size_t n;
	bool all;	/* no more units than the view holds: every one */
};

static bool unit_kept(const struct unit_keep *k, uint32_t unit)
{
	return k->all || bsearch(&unit, k->unit, k->n, sizeof(k->unit[0]), u32_cmp);
}

/* Whether path @sp has a value in a unit of the view. */
static bool path_kept(const struct unit_keep *k, const struct blamer_snap_path *sp)
{
	uint32_t v;

	for (v = 0; v < sp->nvalues; v++)
		if (unit_kept(k, sp->units[v]))
			return true;
	return false;
}

static int total_sort_cmp(const void *a, const void *b)
{
	return total_cmp(a, b);
}

/*
 * The hash tables below are keyed by node IDs, which a heap chooses: an
 * unkeyed hash lets a hostile heap put every key in one slot and make
 * the merge quadratic. So each table mixes its keys with a secret seed
 * of its own (rd_mix(), rd_seed_new(): no key choice without the seed).
 */

/* A (path, unit)'s place in the table of make_totals(). */
static uint64_t total_hash(uint64_t seed, const uint64_t *nodes, uint32_t depth, uint32_t unit)
{
	uint64_t h = rd_mix(seed ^ depth ^ ((uint64_t)unit << 32));
	uint32_t i;

	for (i = 0; i < depth; i++)
		h = rd_mix(h ^ nodes[i]);
	return h;
}

/* The index of the tree node for the first @depth nodes of @nodes. */
static size_t tree_find(const struct blamer_snapshot *s, const uint64_t *nodes, uint32_t depth)
{
	size_t lo = 0, hi = s->ntree;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = blamer_path_cmp(s->tree[mid].nodes, s->tree[mid].depth, nodes, depth);

		if (!c)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;	/* not reached: every prefix is in the tree */
}

/*
 * Totals, one per (path, unit), summed over processes. Many processes
 * measure the same few paths: each value is added to its (path, unit)'s
 * total through a hash table of the distinct ones (grown as they come,
 * so its memory follows what is distinct, not what is measured), and
 * only those are sorted. Processes are visited in order, so a total
 * counts a process when the last one it counted was another.
 */
struct totals {
	struct blamer_snap_total *t;
	uint32_t *last;		/* per total: the last process it counted */
	uint32_t *slot;		/* total index + 1, 0 = free */
	size_t n, cap, mask;
	uint64_t seed;
};

static bool totals_grow(struct totals *tt)
{
	size_t cap = tt->cap ? tt->cap * 2 : 64, mask = 2 * cap - 1, i, at;
	struct blamer_snap_total *t = realloc(tt->t, cap * sizeof(*t));
	uint32_t *last, *slot;

	if (t)
		tt->t = t;
	last = realloc(tt->last, cap * sizeof(*last));
	if (last)
		tt->last = last;
	slot = calloc(mask + 1, sizeof(*slot));
	if (!t || !last || !slot) {
		free(slot);
		return false;
	}
	for (i = 0; i < tt->n; i++) {
		for (at = total_hash(tt->seed, tt->t[i].nodes, tt->t[i].depth, tt->t[i].unit) & mask;
		     slot[at]; at = (at + 1) & mask)
			;
		slot[at] = (uint32_t)i + 1;
	}
	free(tt->slot);
	tt->slot = slot;
	tt->mask = mask;
	tt->cap = cap;
	return true;
}

static bool make_totals(struct blamer_snapshot *s, const struct unit_keep *keep)
{
	struct totals tt = { .seed = rd_seed_new() };
	struct blamer_snap_total *x;
	size_t i, j, k, at;
	bool ok = totals_grow(&tt);

	for (i = 0; ok && i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];

		for (j = 0; ok && j < p->npaths; j++) {
			const struct blamer_snap_path *pa = &p->paths[j];

			for (k = 0; k < pa->nvalues; k++) {
				if (!unit_kept(keep, pa->units[k]))
					continue;
				/* room for one more, before looking */
				if (tt.n == tt.cap && !(ok = totals_grow(&tt)))
					break;
				for (at = total_hash(tt.seed, pa->nodes, pa->depth, pa->units[k]) & tt.mask;
				     tt.slot[at]; at = (at + 1) & tt.mask) {
					x = &tt.t[tt.slot[at] - 1];
					if (x->unit == pa->units[k] &&
					    !blamer_path_cmp(x->nodes, x->depth, pa->nodes, pa->depth))
						break;
				}
				if (!tt.slot[at]) {
					x = &tt.t[tt.n];
					memset(x, 0, sizeof(*x));
					x->depth = pa->depth;
					memcpy(x->nodes, pa->nodes, pa->depth * sizeof(x->nodes[0]));
					x->unit = pa->units[k];
					tt.last[tt.n] = (uint32_t)i;
					x->nprocs = 1;
					tt.slot[at] = (uint32_t)++tt.n;
				} else if (tt.last[tt.slot[at] - 1] != (uint32_t)i) {
					tt.last[tt.slot[at] - 1] = (uint32_t)i;
					x->nprocs++;
				}
				x->value = rd_sat_add(x->value, pa->values[k]);
			}
		}
	}
	free(tt.slot);
	free(tt.last);
	if (!ok) {
		free(tt.t);
		return false;
	}
	qsort(tt.t, tt.n, sizeof(*tt.t), total_sort_cmp);
	s->totals = tt.t;
	s->ntotals = tt.n;
	return true;
}

static bool make_units(struct blamer_snapshot *s)
{
	uint32_t *u = calloc(s->ntotals ? s->ntotals : 1, sizeof(*u));
	size_t i, n = 0;

	if (!u)
		return false;
	for (i = 0; i < s->ntotals; i++)
		u[n++] = s->totals[i].unit;
	qsort(u, n, sizeof(*u), u32_cmp);
	for (i = 0, s->nunits = 0; i < n; i++)
		if (!s->nunits || u[s->nunits - 1] != u[i])
			u[s->nunits++] = u[i];
	s->units = u;
	return true;
}

/*
 * Each node's processes: those with a path at it or below it, counted
 * once per node (the node remembers the last process it counted). A
 * path's own node is found once, then its ancestors through their parent
 * links, up to the first one this process already counted (whose own
 * ancestors it counted then): one lookup per path, not one per prefix.
 */
static bool count_procs(struct blamer_snapshot *s, const struct unit_keep *keep)
{
	size_t n = s->ntree ? s->ntree : 1;
	uint32_t *last = malloc(n * sizeof(*last));
	size_t *parent = malloc(n * sizeof(*parent));
	size_t i, j, at;

	if (!last || !parent) {
		free(last);
		free(parent);
		return false;
	}
	for (i = 0; i < s->ntree; i++) {
		last[i] = UINT32_MAX;
		parent[i] = SIZE_MAX;
	}
	/* the children of i start at i + 1 and follow each other's subtrees */
	for (i = 0; i < s->ntree; i++)
		for (j = i + 1; j < s->tree[i].end; j = s->tree[j].end)
			parent[j] = i;
	for (i = 0; i < s->nprocs; i++) {
		for (j = 0; j < s->procs[i].npaths; j++) {
			const struct blamer_snap_path *p = &s->procs[i].paths[j];

			if (!p->depth || !path_kept(keep, p))
				continue;
			for (at = tree_find(s, p->nodes, p->depth);
			     at < s->ntree && last[at] != (uint32_t)i; at = parent[at]) {
				last[at] = (uint32_t)i;
				s->tree[at].nprocs++;
			}
		}
	}
	free(last);
	free(parent);
	return true;
}

/* How many leading nodes two paths share. */
static uint32_t common(const struct blamer_snap_total *a, const struct blamer_snap_total *b)
{
	uint32_t i, d = a->depth < b->depth ? a->depth : b->depth;

	for (i = 0; i < d && a->nodes[i] == b->nodes[i]; i++)
		;
	return i;
}

/*
 * The inclusive tree: every path of a total and every prefix of one, in
 * path order. The totals are in that order already, so the nodes come
 * out of one pass: each new path adds its prefixes below what it shares
 * with the path before it. Values live in the snapshot's memory: self
 * only where a process measured exactly that path (the rest share a row
 * of zeros), and inclusive summed bottom up, shared with the only child
 * where a node has nothing of its own (a chain costs one row, not one
 * per node).
 */
static bool make_tree(struct blamer_snapshot *s, const struct unit_keep *keep)
{
	struct blamer_snap_tree_node *tree;
	const struct blamer_snap_total *prev = NULL;
	size_t i, j, n = 0, top, *open, u;
	size_t row = s->nunits * sizeof(uint64_t);
	uint64_t *zero;
	uint32_t d;

	for (i = 0; i < s->ntotals; i++) {
		if (prev && !blamer_path_cmp(prev->nodes, prev->depth, s->totals[i].nodes,
					     s->totals[i].depth))
			continue;
		n += s->totals[i].depth - (prev ? common(prev, &s->totals[i]) : 0);
		prev = &s->totals[i];
	}
	tree = calloc(n ? n : 1, sizeof(*tree));
	open = calloc(BLAMER_SNAP_MAX_DEPTH + 1, sizeof(*open));
	zero = rd_alloc(s, row + 8);
	if (!tree || !open || !zero) {
		free(tree);
		free(open);
		return false;
	}
	memset(zero, 0, row + 8);
	for (i = 0, n = 0, prev = NULL; i < s->ntotals; i++) {
		const struct blamer_snap_total *t = &s->totals[i];

		if (prev && !blamer_path_cmp(prev->nodes, prev->depth, t->nodes, t->depth))
			continue;
		for (d = prev ? common(prev, t) + 1 : 1; d <= t->depth; d++, n++) {
			tree[n].depth = d;
			memcpy(tree[n].nodes, t->nodes, d * sizeof(tree[n].nodes[0]));
			tree[n].self = zero;
			tree[n].inclusive = zero;
		}
		prev = t;
	}
	s->tree = tree;
	s->ntree = n;
	/* a subtree ends where the next node is not below it: a stack of
	 * the open ancestors, one per depth */
	for (i = 0, top = 0; i <= n; i++) {
		while (top && (i == n || tree[i].depth <= tree[open[top - 1]].depth ||
			       memcmp(tree[i].nodes, tree[open[top - 1]].nodes,
				      tree[open[top - 1]].depth * sizeof(tree[i].nodes[0]))))
			tree[open[--top]].end = i;
		if (i < n)
			open[top++] = i;
	}
	free(open);
	/* self: totals and nodes are in one order, so one pass finds them */
	for (i = 0, j = 0; i < s->ntotals; i++) {
		const struct blamer_snap_total *t = &s->totals[i];
		uint64_t *self;

		while (blamer_path_cmp(tree[j].nodes, tree[j].depth, t->nodes, t->depth) < 0)
			j++;
		if (tree[j].self == zero) {
			self = rd_alloc(s, row + 8);
			if (!self)
				return false;
			memset(self, 0, row);
			tree[j].self = self;
			tree[j].walked = true;
		}
		for (u = 0; s->units[u] != t->unit; u++)
			;
		((uint64_t *)tree[j].self)[u] = rd_sat_add(tree[j].self[u], t->value);
	}
	/* inclusive, children before parents */
	for (i = n; i-- > 0; ) {
		size_t nkids = 0, only = 0;
		uint64_t *incl;

		for (j = i + 1; j < tree[i].end; j = tree[j].end, nkids++)
			only = j;
		if (!tree[i].walked && nkids == 1) {
			tree[i].inclusive = tree[only].inclusive;
			continue;
		}
		incl = rd_alloc(s, row + 8);
		if (!incl)
			return false;
		memcpy(incl, tree[i].self, row);
		for (j = i + 1; j < tree[i].end; j = tree[j].end)
			for (u = 0; u < s->nunits; u++)
				incl[u] = rd_sat_add(incl[u], tree[j].inclusive[u]);
		tree[i].inclusive = incl;
	}
	return count_procs(s, keep);
}

/* A node as merged: whose (@uid, if merged per uid) and which. */
struct node_at {
	const struct blamer_snap_node *n;
	uint32_t uid;
};

static int uid_node_cmp(const void *a, const void *b)
{
	const struct blamer_snap_uid_node *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return (x->node.id > y->node.id) - (x->node.id < y->node.id);
}

/*
 * Nodes of every process, merged by id, or (@by_uid) by uid and id (a
 * named one wins, else the first). Thousands of processes name the same
 * few nodes: each is looked up in a hash table of the distinct ones
 * (grown as they come), and only those are copied out (*@out, *@n,
 * unsorted; NULL and false out of memory).
 */
static bool node_table(const struct blamer_snapshot *s, bool by_uid, struct node_at **out,
		       size_t *nout)
{
	struct node_at *slot = NULL, *ns, *v;
	size_t i, j, k, n = 0, mask = 0, at;
	uint64_t seed = rd_seed_new();

	for (i = 0; i < s->nprocs; i++) {
		uint32_t uid = by_uid ? s->procs[i].uid : 0;
		uint64_t key_uid = rd_mix(seed ^ uid);

		for (j = 0; j < s->procs[i].nnodes; j++) {
			const struct blamer_snap_node *x = &s->procs[i].nodes[j];

			if (2 * (n + 1) > mask) {	/* grow: at most half full */
				size_t nmask = mask ? mask * 2 + 1 : 63;

				ns = calloc(nmask + 1, sizeof(*ns));
				if (!ns) {
					free(slot);
					return false;
				}
				for (k = 0; mask && k <= mask; k++) {
					if (!slot[k].n)
						continue;
					for (at = rd_mix(slot[k].n->id ^ rd_mix(seed ^ slot[k].uid)) &
						  nmask;
					     ns[at].n; at = (at + 1) & nmask)
						;
					ns[at] = slot[k];
				}
				free(slot);
				slot = ns;
				mask = nmask;
			}
			for (at = rd_mix(x->id ^ key_uid) & mask;
			     slot[at].n && (slot[at].n->id != x->id || slot[at].uid != uid);
			     at = (at + 1) & mask)
				;
			if (!slot[at].n)
				n++;
			if (!slot[at].n || (!slot[at].n->name[0] && x->name[0]))
				slot[at] = (struct node_at){ x, uid };
		}
	}
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v) {
		free(slot);
		return false;
	}
	for (k = 0, i = 0; mask && k <= mask; k++)
		if (slot[k].n)
			v[i++] = slot[k];
	free(slot);
	*out = v;
	*nout = n;
	return true;
}

/*
 * s->uid_nodes, each uid's own, and s->nodes, over every uid, made of
 * them: one per id, named only if every uid that names it gives it the
 * same name. A node id is a public hash any heap may name: a name the
 * uids disagree on is no one's, so the views merging every process show
 * the id, and no user's heap renames another's node there (whoever came
 * first or sorted least won before). False out of memory.
 */
static bool merge_nodes(struct blamer_snapshot *s)
{
	struct blamer_snap_node *nodes;
	struct blamer_snap_uid_node *un;
	struct node_at *v;
	size_t i, j, k, n;

	if (!node_table(s, true, &v, &n))
		return false;
	un = calloc(n ? n : 1, sizeof(*un));
	nodes = calloc(n ? n : 1, sizeof(*nodes));
	for (i = 0; un && nodes && i < n; i++) {
		un[i].uid = v[i].uid;
		un[i].node = *v[i].n;
		nodes[i] = *v[i].n;
	}
	free(v);
	if (!un || !nodes) {
		free(un);
		free(nodes);
		return false;
	}
	qsort(un, n, sizeof(*un), uid_node_cmp);
	s->uid_nodes = un;
	s->nuid_nodes = n;
	/* by id, the named first: a run's first is its name, if all agree */
	qsort(nodes, n, sizeof(*nodes), node_cmp);
	for (i = 0, k = 0; i < n; i = j) {
		nodes[k] = nodes[i];
		for (j = i + 1; j < n && nodes[j].id == nodes[i].id; j++)
			if (nodes[j].name[0] && strcmp(nodes[j].name, nodes[i].name))
				nodes[k].name[0] = '\0';
		k++;
	}
	s->nodes = nodes;
	s->nnodes = k;
	return true;
}

/* A unit and how many processes measure in it. */
struct unit_use {
	uint32_t unit;
	uint32_t procs;
};

static int use_by_unit(const void *a, const void *b)
{
	const struct unit_use *x = a, *y = b;

	return x->unit < y->unit ? -1 : x->unit > y->unit;
}

/* most processes first, then the smaller unit number (the standard ones) */
static int use_by_procs(const void *a, const void *b)
{
	const struct unit_use *x = a, *y = b;

	if (x->procs != y->procs)
		return x->procs > y->procs ? -1 : 1;
	return use_by_unit(a, b);
}

/*
 * Every unit is a column of the tree (its values are units x nodes), so
 * the view (totals, units, tree) has at most RD_MAX_SNAP_UNITS: those
 * most processes measure in (one heap brings at most RD_MAX_HEAP_UNITS,
 * decode_dag.c). The others are left out of the view alone, counted in
 * units_left_out: each process's own paths keep every unit, for its own
 * view, the per-process and service series and the fold. (Rewriting the
 * processes' paths let other users' processes, measuring in 16 units of
 * their own, take a process's values out of every export and out of what
 * the fold kept of it for good.)
 */
static void limit_units(struct blamer_snapshot *s, struct unit_keep *keep)
{
	uint32_t seen[RD_MAX_SNAP_UNITS];
	struct unit_use *use;
	size_t i, j, k, n = 0, nuse, nseen = 0;

	keep->all = true;
	/* the common case first: few distinct units, nothing to leave out */
	for (i = 0; i < s->nprocs && nseen <= RD_MAX_SNAP_UNITS; i++) {
		for (j = 0; j < s->procs[i].npaths && nseen <= RD_MAX_SNAP_UNITS; j++) {
			const struct blamer_snap_path *sp = &s->procs[i].paths[j];

			for (k = 0; k < sp->nvalues && nseen <= RD_MAX_SNAP_UNITS; k++) {
				size_t m;

				for (m = 0; m < nseen && seen[m] != sp->units[k]; m++)
					;
				if (m < nseen)
					continue;
				if (nseen == RD_MAX_SNAP_UNITS)
					nseen++;	/* one more than the view holds */
				else
					seen[nseen++] = sp->units[k];
			}
		}
	}
	if (nseen <= RD_MAX_SNAP_UNITS)
		return;
	for (i = 0; i < s->nprocs; i++)
		for (j = 0; j < s->procs[i].npaths; j++)
			n += s->procs[i].paths[j].nvalues;
	use = calloc(n, sizeof(*use));
	/* out of memory: the view holds the first units seen */
	if (!use) {
		memcpy(keep->unit, seen, sizeof(seen));
		keep->n = RD_MAX_SNAP_UNITS;
		keep->all = false;
		qsort(keep->unit, keep->n, sizeof(keep->unit[0]), u32_cmp);
		s->units_left_out = 1;
		return;
	}
	/* (unit, 1) once per process and unit, then summed per unit */
	for (i = 0, n = 0; i < s->nprocs; i++) {
		size_t first = n;

		for (j = 0; j < s->procs[i].npaths; j++) {
			const struct blamer_snap_path *sp = &s->procs[i].paths[j];

			for (k = 0; k < sp->nvalues; k++) {
				size_t m;

				for (m = first; m < n && use[m].unit != sp->units[k]; m++)
					;
				if (m == n)
					use[n++] = (struct unit_use){ sp->units[k], 1 };
			}
		}
	}
	qsort(use, n, sizeof(*use), use_by_unit);
	for (i = 0, nuse = 0; i < n; i++) {
		if (nuse && use[nuse - 1].unit == use[i].unit)
			use[nuse - 1].procs++;
		else
			use[nuse++] = use[i];
	}
	if (nuse > RD_MAX_SNAP_UNITS) {
		qsort(use, nuse, sizeof(*use), use_by_procs);
		for (i = 0; i < RD_MAX_SNAP_UNITS; i++)
			keep->unit[i] = use[i].unit;
		keep->n = RD_MAX_SNAP_UNITS;
		keep->all = false;
		qsort(keep->unit, keep->n, sizeof(keep->unit[0]), u32_cmp);
		s->units_left_out = nuse - RD_MAX_SNAP_UNITS;
	}
	free(use);
}

/*
 * The names over every uid are those every uid with a say gives alike:
 * merge_nodes() and rd_merge_unit_defs() hear the uids that name a node
 * or unit; a uid whose processes walk the node or measure in the unit
 * without naming it (paths need no names) has a say too, and says no
 * name. Otherwise one user's heap naming a node or unit that only
 * another user uses would name, and scale, that user's numbers in the
 * views that sum every process. The per-uid names are made already.
 */
static void silence_unsaid_names(struct blamer_snapshot *s)
{
	bool *drop;
	size_t i, j, k;
	uint32_t d;

	/* one uid (the dir backend, a user's own reader): its names are the
	 * only ones, so every name over every uid is its: nothing to do, and
	 * no walk of every path's nodes */
	for (i = 1; i < s->nprocs && s->procs[i].uid == s->procs[0].uid; i++)
		;
	if (i >= s->nprocs)
		return;
	drop = calloc(s->nunit_defs + 1, sizeof(*drop));
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];

		for (j = 0; j < p->npaths; j++) {
			const struct blamer_snap_path *sp = &p->paths[j];

			for (d = 0; d < sp->depth; d++) {
				struct blamer_snap_node *n = node_of(s, sp->nodes[d]);

				if (n && n->name[0] &&
				    !blamer_snap_uid_node_name(s, p->uid, sp->nodes[d]))
					n->name[0] = '\0';
			}
			for (d = 0; drop && d < sp->nvalues; d++) {
				const struct blamer_snap_unit_def *u =
					blamer_snap_unit_def(s, sp->units[d]);

				if (u && !blamer_snap_uid_unit_def(s, p->uid, sp->units[d]))
					drop[u - s->unit_defs] = true;
			}
		}
	}
	/* out of memory: no unit is named over every uid */
	for (i = 0, k = 0; i < s->nunit_defs; i++)
		if (drop && !drop[i])
			s->unit_defs[k++] = s->unit_defs[i];
	s->nunit_defs = k;
	free(drop);
}

void rd_finish_snapshot(struct blamer_snapshot *s)
{
	/* views list processes by pid (then start time: a reused pid's old heap first) */
	size_t i;

	if (s->flags & BLAMER_READ_LIVE_ONLY) {
		size_t k = 0;

		for (i = 0; i < s->nprocs; i++) {
			if (s->procs[i].state == BLAMER_PROC_LIVE)
				s->procs[k++] = s->procs[i];
			else
				rd_process_free(&s->procs[i]);
		}
		s->nprocs = k;
	}
	/* the backends read in that order already, mostly: sort only if not */
	for (i = 1; i < s->nprocs && proc_cmp(&s->procs[i - 1], &s->procs[i]) <= 0; i++)
		;
	if (i < s->nprocs)
		qsort(s->procs, s->nprocs, sizeof(*s->procs), proc_cmp);
	/* Out of memory: what could not be made stays empty; the
	 * per-process data remains. */
	s->units_left_out = 0;
	if (!(s->flags & BLAMER_READ_NO_TOTALS)) {
		struct unit_keep keep;

		limit_units(s, &keep);
		if (make_totals(s, &keep) && make_units(s))
			make_tree(s, &keep);
	}
	/* the per-uid names are there to look up (empty out of memory:
	 * then no uid's name is another's) */
	free(s->uid_nodes);
	s->uid_nodes = NULL;
	s->nuid_nodes = 0;
	merge_nodes(s);
	rd_merge_unit_defs(s);
	s->flags |= BLAMER_SNAP_UID_NAMES;
	silence_unsaid_names(s);
}

const struct blamer_snap_total *blamer_snap_total_find(const struct blamer_snapshot *s,
							const uint64_t *nodes, uint32_t depth,
							uint32_t unit)
{
	struct blamer_snap_total key = { .depth = depth, .unit = unit };
	size_t lo = 0, hi = s->ntotals;

	if (depth > BLAMER_SNAP_MAX_DEPTH)
		return NULL;
	memcpy(key.nodes, nodes, depth * sizeof(key.nodes[0]));
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = total_cmp(&s->totals[mid], &key);

		if (!c)
			return &s->totals[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int blamer_snap_unit_index(const struct blamer_snapshot *s, uint32_t unit)
{
	size_t i;

	for (i = 0; i < s->nunits; i++)
		if (s->units[i] == unit)
			return (int)i;
	return -1;
}

const char *blamer_snap_node_name(const struct blamer_snapshot *s, uint64_t id)
{
	const struct blamer_snap_node *n = node_of(s, id);

	return n && n->name[0] ? n->name : NULL;
}

const char *blamer_snap_uid_node_name(const struct blamer_snapshot *s, uint32_t uid,
				      uint64_t id)
{
	size_t lo = 0, hi;

	if (!(s->flags & BLAMER_SNAP_UID_NAMES))
		return blamer_snap_node_name(s, id);
	hi = s->nuid_nodes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct blamer_snap_uid_node *x = &s->uid_nodes[mid];

		if (x->uid == uid && x->node.id == id)
			return x->node.name[0] ? x->node.name : NULL;
		if (x->uid < uid || (x->uid == uid && x->node.id < id))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A path as text, its names @uid's (every uid's: UINT64_MAX). */
static int path_string(const struct blamer_snapshot *s, uint64_t uid, const uint64_t *nodes,
		       uint32_t depth, char *buf, size_t len)
{
	size_t at = 0;
	uint32_t i;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < depth; i++) {
		const char *n = uid == UINT64_MAX ? blamer_snap_node_name(s, nodes[i]) :
				blamer_snap_uid_node_name(s, (uint32_t)uid, nodes[i]);
		char *to = at < len ? buf + at : NULL;
		size_t room = at < len ? len - at : 0;
		int w = n ? snprintf(to, room, "/%s", n)
			  : snprintf(to, room, "/0x%llx", (unsigned long long)nodes[i]);

		if (w < 0)
			return -1;
		at += (size_t)w;
	}
	return (int)at;
}

int blamer_snap_path_string(const struct blamer_snapshot *s, const uint64_t *nodes,
			    uint32_t depth, char *buf, size_t len)
{
	return path_string(s, UINT64_MAX, nodes, depth, buf, len);
}

int blamer_snap_uid_path_string(const struct blamer_snapshot *s, uint32_t uid,
				const uint64_t *nodes, uint32_t depth, char *buf, size_t len)
{
	return path_string(s, uid, nodes, depth, buf, len);
}
