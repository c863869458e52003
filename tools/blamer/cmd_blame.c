// SPDX-License-Identifier: MIT
/*
 * blamer blame [PID...]: the attribution DAG summed over all processes
 * (or those given), live and dead (--live-only: the live ones), shown
 * as the tree of paths actually walked (a node with two parents appears
 * under both): the snapshot's inclusive tree. Each line shows inclusive
 * totals (the path and everything below it) per unit; siblings are
 * sorted largest first by one unit. Then each process's share (--by
 * role: each role's), the sum of its own paths' values, then the
 * programs' metrics merged over the processes (metrics.c).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "term.h"

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
			fmt_value(s, ALL_UIDS, val, sizeof(val), s->units[col], e->inclusive[col]);
			printf("%10s ", e->inclusive[col] ? val : "-");
		}
		printf("%5u  %*s", e->nprocs, (int)(2 * (d - 1)), "");
		if (name)
			tty_printf(stdout, "%s\n", name);
		else
			printf("%#llx\n", (unsigned long long)e->nodes[d - 1]);
		print_level(v, at + 1, e->end, d + 1);
	}
	free(kids);
}

/* The column --unit names (its label, name or number), -1 if none, -2
 * if several (units the users name alike: only its number tells). */
static int unit_column(const struct view *v, const char *unit)
{
	size_t col;
	int found = -1;

	for (col = 0; col < v->ncol; col++)
		if (unit_is(v->s, ALL_UIDS, v->s->units[col], unit))
			found = found == -1 ? (int)col : -2;
	return found;
}

static void print_header(const struct view *v, const char *what)
{
	size_t col;

	for (col = 0; col < v->ncol; col++) {
		char h[40];

		unit_label(v->s, ALL_UIDS, v->s->units[col], h, sizeof(h) - 1);
		if (col == v->sortcol)
			strcat(h, "*");
		printf("%10s ", h);
	}
	printf("%s\n", what);
}

/* One process's share: its paths' values summed per unit. */
struct share {
	const struct blamer_snap_process *p;
	uint64_t v[MAXCOL];
};

static int share_cmp(const void *a, const void *b, void *arg)
{
	const struct share *x = a, *y = b;
	size_t col = *(const size_t *)arg;

	if (x->v[col] != y->v[col])
		return x->v[col] > y->v[col] ? -1 : 1;
	return x->p->pid < y->p->pid ? -1 : x->p->pid > y->p->pid;
}

/* Each role's share of the totals (--by role), largest first. */
static void print_role_shares(const struct view *v)
{
	const struct blamer_snapshot *s = v->s;
	struct share *sh = calloc(s->nroles + 1, sizeof(*sh));
	uint32_t *procs = calloc(s->nroles + 1, sizeof(*procs));
	size_t i, j, k, r, col;

	if (!sh || !procs)
		goto out;
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];

		for (r = 0; r < s->nroles && strcmp(s->roles[r].role, p->role); r++)
			;
		if (r == s->nroles)
			continue;
		sh[r].p = p;	/* one of the role's, for the sort's ties */
		procs[r] += p->npaths > 0;
		for (j = 0; j < p->npaths; j++)
			for (k = 0; k < p->paths[j].nvalues; k++)
				for (col = 0; col < v->ncol; col++)
					if (s->units[col] == p->paths[j].units[k])
						sh[r].v[col] += p->paths[j].values[k];
	}
	putchar('\n');
	print_header(v, "PROCS  ROLE");
	for (r = 0; r < s->nroles; r++) {
		char val[32];

		if (!procs[r])
			continue;
		for (col = 0; col < v->ncol; col++) {
			fmt_value(s, ALL_UIDS, val, sizeof(val), s->units[col], sh[r].v[col]);
			printf("%10s ", sh[r].v[col] ? val : "-");
		}
		tty_printf(stdout, "%5u  %s\n", procs[r], s->roles[r].role[0] ? s->roles[r].role : "-");
	}
out:
	free(sh);
	free(procs);
}

/* Each process's share of the totals, largest first. */
static void print_shares(const struct view *v)
{
	const struct blamer_snapshot *s = v->s;
	struct share *sh = calloc(s->nprocs + 1, sizeof(*sh));
	size_t i, j, k, n = 0, col;

	if (!sh)
		return;
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];

		sh[n].p = p;
		for (j = 0; j < p->npaths; j++)
			for (k = 0; k < p->paths[j].nvalues; k++)
				for (col = 0; col < v->ncol; col++)
					if (s->units[col] == p->paths[j].units[k])
						sh[n].v[col] += p->paths[j].values[k];
		n += p->npaths > 0;
	}
	qsort_r(sh, n, sizeof(*sh), share_cmp, (void *)&v->sortcol);
	putchar('\n');
	print_header(v, "    PID  IDENTITY COMM             ROLE");
	for (i = 0; i < n; i++) {
		char val[32], role[72];

		for (col = 0; col < v->ncol; col++) {
			fmt_value(s, ALL_UIDS, val, sizeof(val), s->units[col], sh[i].v[col]);
			printf("%10s ", sh[i].v[col] ? val : "-");
		}
		tty_printf(stdout, "%7d  %-8s %-16s %s\n", sh[i].p->pid, proc_identity(sh[i].p),
			   proc_comm(sh[i].p), proc_role(sh[i].p, role, sizeof(role)));
	}
	free(sh);
}

/* Processes of more than one user: each merged series says whose. */
static bool uids_differ(const struct blamer_snapshot *s)
{
	size_t i;

	for (i = 1; i < s->nprocs; i++)
		if (s->procs[i].uid != s->procs[0].uid)
			return true;
	return false;
}

int cmd_blame(struct cli *c)
{
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	struct view v = { 0 };
	int32_t *pids = NULL;
	size_t npids;
	int ret;

	/* dead processes count, on both backends (--live-only: not) */
	ret = take(c, READ_FOR_BLAME | BLAMER_READ_DEAD_FULL |
		   (c->live_only ? BLAMER_READ_LIVE_ONLY : 0), &r, &s);
	if (ret)
		return ret;
	ret = parse_pids(c, s, &pids, &npids);
	if (ret)
		goto out;
	if (npids)
		blamer_snapshot_select(s, pids, npids);
	if (c->json) {
		blamer_snapshot_write_json(s, stdout, BLAMER_JSON_NO_PROCS, NULL, 0);
		goto out;
	}
	v.s = s;
	v.ncol = s->nunits < MAXCOL ? s->nunits : MAXCOL;	/* more: not shown */
	if (c->unit) {
		int sc = unit_column(&v, c->unit);

		if (sc == -2) {
			ret = usage_err("several units are named '%s': give the number (`blamer dump` shows each process's)",
					c->unit);
			goto out;
		}
		if (sc < 0) {
			ret = usage_err("no measurements in unit '%s' (units present: cpu, bytes, count or numbers shown by `blamer blame`)",
					c->unit);
			goto out;
		}
		v.sortcol = (size_t)sc;
	}
	if (!s->ntree && !s->nseries && !s->noverflows) {
		if (s->nprocs)
			tty_printf(stdout, "no attribution data or metrics in %s (processes attribute with blamer_path_add() and blamer_metric_series())\n",
				   s->source);
		goto out;
	}
	if (s->ntree) {
		print_header(&v, "PROCS  PATH");
		print_level(&v, 0, s->ntree, 1);
		if (c->by_role)
			print_role_shares(&v);
		else
			print_shares(&v);
	}
	if (s->nseries || s->noverflows) {	/* (the overflows: counted) */
		if (s->ntree)
			putchar('\n');
		print_series(stdout, s, uids_differ(s), true);
	}
out:
	free(pids);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	return ret;
}
