// SPDX-License-Identifier: MIT
/*
 * blamer blame: the attribution DAG summed over all processes, shown as
 * the tree of paths actually walked (a node with two parents appears
 * under both). Each line shows inclusive totals (the path and everything
 * below it) per unit; siblings are sorted largest first by one unit.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAXCOL 8

struct entry {
	uint32_t depth;
	uint64_t nodes[BLAMER_SNAP_MAX_DEPTH];
	uint64_t incl[MAXCOL];
	uint32_t procs;
};

static int key_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	uint32_t i, d = x->depth < y->depth ? x->depth : y->depth;

	for (i = 0; i < d; i++)
		if (x->nodes[i] != y->nodes[i])
			return x->nodes[i] < y->nodes[i] ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static bool is_prefix(const struct entry *p, const struct entry *e)
{
	return p->depth < e->depth &&
	       !memcmp(p->nodes, e->nodes, p->depth * sizeof(p->nodes[0]));
}

struct tree {
	const struct blamer_snapshot *s;
	struct entry *e;
	size_t n;
	uint32_t units[MAXCOL];
	int ncol, sortcol;
};

static int incl_cmp(const void *a, const void *b, void *arg)
{
	const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
	int col = *(const int *)arg;

	if (x->incl[col] != y->incl[col])
		return x->incl[col] > y->incl[col] ? -1 : 1;
	return key_cmp(x, y);
}

/* Print the children of entries [from, to) at depth d, then recurse. */
static void print_level(struct tree *t, size_t from, size_t to, uint32_t d)
{
	struct entry **kids;
	size_t i, k = 0;
	int col;

	kids = calloc(to - from + 1, sizeof(*kids));
	if (!kids)
		return;
	for (i = from; i < to; i++)
		if (t->e[i].depth == d)
			kids[k++] = &t->e[i];
	qsort_r(kids, k, sizeof(*kids), incl_cmp, &t->sortcol);
	for (i = 0; i < k; i++) {
		struct entry *e = kids[i];
		const char *name = blamer_snap_node_name(t->s, e->nodes[d - 1]);
		size_t j = (size_t)(e - t->e) + 1, end = j;
		char v[32];

		for (col = 0; col < t->ncol; col++) {
			fmt_value(v, sizeof(v), t->units[col], e->incl[col]);
			printf("%10s ", e->incl[col] ? v : "-");
		}
		printf("%5u  %*s", e->procs, (int)(2 * (d - 1)), "");
		if (name)
			printf("%s\n", name);
		else
			printf("%#llx\n", (unsigned long long)e->nodes[d - 1]);
		while (end < t->n && is_prefix(e, &t->e[end]))
			end++;
		print_level(t, j, end, d + 1);
	}
	free(kids);
}

int cmd_blame(struct cli *c)
{
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	struct tree t = { 0 };
	size_t i, k, cap = 0;
	int ret, col;

	if (c->nargs)
		return usage_err("blame takes no arguments");
	ret = take(c, c->dead ? BLAMER_READ_DEAD_FULL : 0, &r, &s);
	if (ret)
		return ret;
	t.s = s;
	if (c->json) {
		blamer_snapshot_write_json(s, stdout, BLAMER_JSON_NO_PROCS, NULL, 0);
		goto out;
	}
	for (i = 0; i < s->ntotals; i++)
		cap += s->totals[i].depth;
	t.e = calloc(cap + 1, sizeof(*t.e));
	if (!t.e) {
		ret = err("out of memory");
		goto out;
	}
	/* columns: units in numeric order (cpu_ns, bytes, count, app units) */
	for (i = 0; i < s->ntotals; i++) {
		uint32_t u = s->totals[i].unit;
		int pos;

		for (col = 0; col < t.ncol && t.units[col] != u; col++)
			;
		if (col < t.ncol || t.ncol == MAXCOL)
			continue;
		for (pos = t.ncol; pos > 0 && t.units[pos - 1] > u; pos--)
			t.units[pos] = t.units[pos - 1];
		t.units[pos] = u;
		t.ncol++;
	}
	t.sortcol = 0;
	if (c->unit) {
		char *end;
		unsigned long want = strtoul(c->unit, &end, 10);

		for (col = 0; col < t.ncol; col++) {
			const char *un = blamer_unit_name(t.units[col]);

			if ((un && !strcmp(un, c->unit)) || (!*end && t.units[col] == want))
				break;
		}
		if (col == t.ncol) {
			ret = usage_err("no measurements in unit '%s' (units present: cpu_ns, bytes, count or numbers shown by `blamer blame`)",
					c->unit);
			goto out;
		}
		t.sortcol = col;
	}
	/* every prefix of every path is a tree entry */
	for (i = 0; i < s->ntotals; i++) {
		uint32_t d;

		for (d = 1; d <= s->totals[i].depth; d++) {
			t.e[t.n].depth = d;
			memcpy(t.e[t.n].nodes, s->totals[i].nodes, d * sizeof(uint64_t));
			t.n++;
		}
	}
	qsort(t.e, t.n, sizeof(*t.e), key_cmp);
	for (i = 0, k = 0; i < t.n; i++)
		if (k == 0 || key_cmp(&t.e[k - 1], &t.e[i]))
			t.e[k++] = t.e[i];
	t.n = k;
	for (i = 0; i < s->ntotals; i++) {
		const struct blamer_snap_total *tt = &s->totals[i];
		uint32_t d;

		for (col = 0; col < t.ncol && t.units[col] != tt->unit; col++)
			;
		if (col == t.ncol)
			continue;	/* more than MAXCOL units: not shown */
		for (d = 1; d <= tt->depth; d++) {
			struct entry key = { .depth = d }, *e;

			memcpy(key.nodes, tt->nodes, d * sizeof(uint64_t));
			e = bsearch(&key, t.e, t.n, sizeof(*t.e), key_cmp);
			if (!e)
				continue;
			e->incl[col] += tt->value;
			if (tt->nprocs > e->procs)
				e->procs = tt->nprocs;
		}
	}
	if (!t.n) {
		printf("no attribution data in %s (processes attribute with blamer_path_add())\n",
		       s->source);
		goto out;
	}
	for (col = 0; col < t.ncol; col++) {
		const char *un = blamer_unit_name(t.units[col]);
		char h[24];

		if (un)
			snprintf(h, sizeof(h), "%s", un);
		else
			snprintf(h, sizeof(h), "unit%u", t.units[col]);
		if (col == t.sortcol)
			snprintf(h + strlen(h), sizeof(h) - strlen(h), "*");
		printf("%10s ", h);
	}
	printf("%5s  %s\n", "PROCS", "PATH");
	print_level(&t, 0, t.n, 1);
out:
	free(t.e);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	return ret;
}
