// SPDX-License-Identifier: MIT
/*
 * blamer blame: the attribution DAG summed over all processes, shown as
 * the tree of paths actually walked (a node with two parents appears
 * under both): the snapshot's inclusive tree. Each line shows inclusive
 * totals (the path and everything below it) per unit; siblings are
 * sorted largest first by one unit.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAXCOL 8

struct view {
	const struct blamer_snapshot *s;
	size_t ncol;		/* s->units shown, the first MAXCOL */
	size_t sortcol;
};

static int incl_cmp(const void *a, const void *b, void *arg)
{
	const struct blamer_snap_tree_node *x = *(const struct blamer_snap_tree_node *const *)a;
	const struct blamer_snap_tree_node *y = *(const struct blamer_snap_tree_node *const *)b;
	size_t col = *(const size_t *)arg;

	if (x->inclusive[col] != y->inclusive[col])
		return x->inclusive[col] > y->inclusive[col] ? -1 : 1;
	return blamer_path_cmp(x->nodes, x->depth, y->nodes, y->depth);
}

/* Prints the nodes of depth @d in tree[from, to) and their subtrees. */
static void print_level(const struct view *v, size_t from, size_t to, uint32_t d)
{
	const struct blamer_snap_tree_node **kids;
	const struct blamer_snapshot *s = v->s;
	size_t i, k = 0, col;

	kids = calloc(to - from + 1, sizeof(*kids));
	if (!kids)
		return;
	for (i = from; i < to; i++)
		if (s->tree[i].depth == d)
			kids[k++] = &s->tree[i];
	qsort_r(kids, k, sizeof(*kids), incl_cmp, (void *)&v->sortcol);
	for (i = 0; i < k; i++) {
		const struct blamer_snap_tree_node *e = kids[i];
		const char *name = blamer_snap_node_name(s, e->nodes[d - 1]);
		size_t at = (size_t)(e - s->tree);
		char val[32];

		for (col = 0; col < v->ncol; col++) {
			fmt_value(val, sizeof(val), s->units[col], e->inclusive[col]);
			printf("%10s ", e->inclusive[col] ? val : "-");
		}
		printf("%5u  %*s", e->nprocs, (int)(2 * (d - 1)), "");
		if (name)
			printf("%s\n", name);
		else
			printf("%#llx\n", (unsigned long long)e->nodes[d - 1]);
		print_level(v, at + 1, e->end, d + 1);
	}
	free(kids);
}

/* The column --unit names (a unit name or number), or -1. */
static int unit_column(const struct view *v, const char *unit)
{
	unsigned long want;
	size_t col;
	char *end;

	want = strtoul(unit, &end, 10);
	for (col = 0; col < v->ncol; col++) {
		const char *un = blamer_unit_name(v->s->units[col]);

		if ((un && !strcmp(un, unit)) || (!*end && v->s->units[col] == want))
			return (int)col;
	}
	return -1;
}

int cmd_blame(struct cli *c)
{
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	struct view v = { 0 };
	size_t col;
	int ret;

	if (c->nargs)
		return usage_err("blame takes no arguments");
	ret = take(c, c->dead ? BLAMER_READ_DEAD_FULL : 0, &r, &s);
	if (ret)
		return ret;
	if (c->json) {
		blamer_snapshot_write_json(s, stdout, BLAMER_JSON_NO_PROCS, NULL, 0);
		goto out;
	}
	v.s = s;
	v.ncol = s->nunits < MAXCOL ? s->nunits : MAXCOL;	/* more: not shown */
	if (c->unit) {
		int sc = unit_column(&v, c->unit);

		if (sc < 0) {
			ret = usage_err("no measurements in unit '%s' (units present: cpu_ns, bytes, count or numbers shown by `blamer blame`)",
					c->unit);
			goto out;
		}
		v.sortcol = (size_t)sc;
	}
	if (!s->ntree) {
		printf("no attribution data in %s (processes attribute with blamer_path_add())\n",
		       s->source);
		goto out;
	}
	for (col = 0; col < v.ncol; col++) {
		const char *un = blamer_unit_name(s->units[col]);
		char h[24];

		if (un)
			snprintf(h, sizeof(h), "%s", un);
		else
			snprintf(h, sizeof(h), "unit%u", s->units[col]);
		if (col == v.sortcol)
			snprintf(h + strlen(h), sizeof(h) - strlen(h), "*");
		printf("%10s ", h);
	}
	printf("%5s  %s\n", "PROCS", "PATH");
	print_level(&v, 0, s->ntree, 1);
out:
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	return ret;
}
