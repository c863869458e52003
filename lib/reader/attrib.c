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

/* for sorting: equal (path, unit) runs ordered by process index */
static int total_cmp_sort(const void *a, const void *b)
{
	const struct blamer_snap_total *x = a, *y = b;
	int c = total_cmp(x, y);

	if (c)
		return c;
	return x->nprocs < y->nprocs ? -1 : x->nprocs > y->nprocs;
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

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start_time_ns != y->start_time_ns)
		return x->start_time_ns < y->start_time_ns ? -1 : 1;
	return x->heap_key < y->heap_key ? -1 : x->heap_key > y->heap_key;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int tree_cmp(const void *a, const void *b)
{
	const struct blamer_snap_tree_node *x = a, *y = b;

	return blamer_path_cmp(x->nodes, x->depth, y->nodes, y->depth);
}

/* A tree node and one process that measured at it or below. */
struct node_proc {
	size_t node;
	size_t proc;
};

static int node_proc_cmp(const void *a, const void *b)
{
	const struct node_proc *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->proc < y->proc ? -1 : x->proc > y->proc;
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

/* Totals, one per (path, unit), summed over processes. */
static bool make_totals(struct blamer_snapshot *s)
{
	struct blamer_snap_total *t;
	size_t i, j, k, n = 0;

	for (i = 0; i < s->nprocs; i++)
		for (j = 0; j < s->procs[i].npaths; j++)
			n += s->procs[i].paths[j].nvalues;
	t = calloc(n ? n : 1, sizeof(*t));
	if (!t)
		return false;
	n = 0;
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];

		for (j = 0; j < p->npaths; j++) {
			for (k = 0; k < p->paths[j].nvalues; k++) {
				t[n].depth = p->paths[j].depth;
				memcpy(t[n].nodes, p->paths[j].nodes, sizeof(t[n].nodes));
				t[n].unit = p->paths[j].units[k];
				t[n].value = p->paths[j].values[k];
				t[n].nprocs = (uint32_t)i;	/* temporarily: process index */
				n++;
			}
		}
	}
	qsort(t, n, sizeof(*t), total_cmp_sort);
	/* merge equal (path, unit); count distinct processes (sorted within run) */
	for (i = 0, k = 0; i < n; k++) {
		struct blamer_snap_total m = t[i];
		uint32_t last = t[i].nprocs;

		m.nprocs = 1;
		for (j = i + 1; j < n && total_cmp(&t[j], &m) == 0; j++) {
			m.value += t[j].value;
			if (t[j].nprocs != last)
				m.nprocs++;
			last = t[j].nprocs;
		}
		t[k] = m;
		i = j;
	}
	s->totals = t;
	s->ntotals = k;
	return true;
}

/* The units present, in numeric order. */
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

/* Each node's processes: those with a path at it or below it. */
static bool count_procs(struct blamer_snapshot *s)
{
	struct node_proc *np;
	size_t i, j, n = 0, k;
	uint32_t d;

	for (i = 0; i < s->nprocs; i++)
		for (j = 0; j < s->procs[i].npaths; j++)
			if (s->procs[i].paths[j].nvalues)
				n += s->procs[i].paths[j].depth;
	np = calloc(n ? n : 1, sizeof(*np));
	if (!np)
		return false;
	n = 0;
	for (i = 0; i < s->nprocs; i++) {
		for (j = 0; j < s->procs[i].npaths; j++) {
			const struct blamer_snap_path *p = &s->procs[i].paths[j];

			for (d = 1; p->nvalues && d <= p->depth; d++) {
				np[n].node = tree_find(s, p->nodes, d);
				np[n++].proc = i;
			}
		}
	}
	qsort(np, n, sizeof(*np), node_proc_cmp);
	for (k = 0; k < n; k++)
		if (np[k].node < s->ntree &&
		    (!k || np[k].node != np[k - 1].node || np[k].proc != np[k - 1].proc))
			s->tree[np[k].node].nprocs++;
	free(np);
	return true;
}

/* The inclusive tree: every path of a total and every prefix of one. */
static bool make_tree(struct blamer_snapshot *s)
{
	struct blamer_snap_tree_node *tree;
	size_t i, n = 0, k, top, *open;
	uint64_t *values;
	uint32_t d;

	for (i = 0; i < s->ntotals; i++)
		n += s->totals[i].depth;
	/* the nodes, then their values: one block, freed with s->tree */
	tree = calloc(1, (n ? n : 1) * (sizeof(*tree) + 2 * s->nunits * sizeof(uint64_t)));
	open = calloc(BLAMER_SNAP_MAX_DEPTH + 1, sizeof(*open));
	if (!tree || !open) {
		free(tree);
		free(open);
		return false;
	}
	n = 0;
	for (i = 0; i < s->ntotals; i++) {
		for (d = 1; d <= s->totals[i].depth; d++) {
			tree[n].depth = d;
			memcpy(tree[n].nodes, s->totals[i].nodes, d * sizeof(tree[n].nodes[0]));
			n++;
		}
	}
	qsort(tree, n, sizeof(*tree), tree_cmp);
	for (i = 0, k = 0; i < n; i++)
		if (!k || tree_cmp(&tree[k - 1], &tree[i]))
			tree[k++] = tree[i];
	s->tree = tree;
	s->ntree = k;
	values = (uint64_t *)(tree + n);
	for (i = 0; i < k; i++) {
		tree[i].self = values + 2 * i * s->nunits;
		tree[i].inclusive = values + (2 * i + 1) * s->nunits;
	}
	/* each total adds to its path's own values and to every prefix's
	 * inclusive ones */
	for (i = 0; i < s->ntotals; i++) {
		const struct blamer_snap_total *t = &s->totals[i];
		size_t u = 0;

		while (s->units[u] != t->unit)
			u++;
		for (d = 1; d <= t->depth; d++) {
			size_t at = tree_find(s, t->nodes, d);

			((uint64_t *)tree[at].inclusive)[u] += t->value;
			if (d == t->depth) {
				((uint64_t *)tree[at].self)[u] += t->value;
				tree[at].walked = true;
			}
		}
	}
	/* a subtree ends where the next node is not below it: a stack of
	 * the open ancestors, one per depth */
	for (i = 0, top = 0; i <= k; i++) {
		while (top && (i == k || tree[i].depth <= tree[open[top - 1]].depth ||
			       memcmp(tree[i].nodes, tree[open[top - 1]].nodes,
				      tree[open[top - 1]].depth * sizeof(tree[i].nodes[0]))))
			tree[open[--top]].end = i;
		if (i < k)
			open[top++] = i;
	}
	free(open);
	return count_procs(s);
}

/* Nodes of every process, merged by id (a named one wins). */
static bool merge_nodes(struct blamer_snapshot *s)
{
	struct blamer_snap_node *nodes;
	size_t i, k, nn = 0;

	for (i = 0; i < s->nprocs; i++)
		nn += s->procs[i].nnodes;
	nodes = calloc(nn ? nn : 1, sizeof(*nodes));
	if (!nodes)
		return false;
	nn = 0;
	for (i = 0; i < s->nprocs; i++) {
		if (s->procs[i].nnodes)
			memcpy(nodes + nn, s->procs[i].nodes, s->procs[i].nnodes * sizeof(*nodes));
		nn += s->procs[i].nnodes;
	}
	qsort(nodes, nn, sizeof(*nodes), node_cmp);
	for (i = 0, k = 0; i < nn; i++)
		if (k == 0 || nodes[k - 1].id != nodes[i].id)
			nodes[k++] = nodes[i];
	s->nodes = nodes;
	s->nnodes = k;
	return true;
}

void rd_finish_snapshot(struct blamer_snapshot *s)
{
	/* views list processes by pid (then start time: a reused pid's old heap first) */
	if (s->nprocs > 1)
		qsort(s->procs, s->nprocs, sizeof(*s->procs), proc_cmp);
	/* Out of memory: what could not be made stays empty; the
	 * per-process data remains. */
	if (make_totals(s) && make_units(s))
		make_tree(s);
	merge_nodes(s);
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
	size_t lo = 0, hi = s->nnodes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->nodes[mid].id == id)
			return s->nodes[mid].name[0] ? s->nodes[mid].name : NULL;
		if (s->nodes[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int blamer_snap_path_string(const struct blamer_snapshot *s, const uint64_t *nodes,
			    uint32_t depth, char *buf, size_t len)
{
	size_t at = 0;
	uint32_t i;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < depth; i++) {
		const char *n = blamer_snap_node_name(s, nodes[i]);
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
