// SPDX-License-Identifier: MIT
/*
 * What a snapshot adds to the processes the backends read: the
 * cross-process attribution totals (one per path and unit, summed over
 * processes) and the DAG nodes merged by id.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int total_cmp(const void *a, const void *b)
{
	const struct blamer_snap_total *x = a, *y = b;
	uint32_t i, d = x->depth < y->depth ? x->depth : y->depth;

	for (i = 0; i < d; i++)
		if (x->nodes[i] != y->nodes[i])
			return x->nodes[i] < y->nodes[i] ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->unit < y->unit ? -1 : x->unit > y->unit;
}

/* for sorting: equal (path, unit) runs ordered by process index */
static int total_cmp_sort(const void *a, const void *b)
{
	const struct blamer_snap_total *x = a, *y = b;
	int c = total_cmp(a, b);

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

void rd_finish_snapshot(struct blamer_snapshot *s)
{
	size_t i, j, k, n = 0, nn = 0;
	struct blamer_snap_total *t;
	struct blamer_snap_node *nodes;

	/* views list processes by pid (then start time: a reused pid's old heap first) */
	if (s->nprocs > 1)
		qsort(s->procs, s->nprocs, sizeof(*s->procs), proc_cmp);

	for (i = 0; i < s->nprocs; i++) {
		for (j = 0; j < s->procs[i].npaths; j++)
			n += s->procs[i].paths[j].nvalues;
		nn += s->procs[i].nnodes;
	}
	t = calloc(n ? n : 1, sizeof(*t));
	nodes = calloc(nn ? nn : 1, sizeof(*nodes));
	if (!t || !nodes) {
		free(t);
		free(nodes);
		return;		/* totals stay empty: the per-process data remains */
	}
	n = 0;
	nn = 0;
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
		if (p->nnodes)
			memcpy(nodes + nn, p->nodes, p->nnodes * sizeof(*nodes));
		nn += p->nnodes;
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
	qsort(nodes, nn, sizeof(*nodes), node_cmp);
	for (i = 0, k = 0; i < nn; i++)
		if (k == 0 || nodes[k - 1].id != nodes[i].id)
			nodes[k++] = nodes[i];
	s->nodes = nodes;
	s->nnodes = k;
}
