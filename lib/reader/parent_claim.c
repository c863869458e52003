// SPDX-License-Identifier: MIT
/*
 * One postmortem story on the dir backend. A crashed child's own heap
 * cannot say how it ended (no exit handler ran, and the dir backend has
 * no kernel to ask), but a parent that reaped it may have said so with
 * blamer_process_exited(): a CHILD record in the parent's heap, naming
 * the child by pid and start time. This joins the two: a dead process
 * without kernel facts gets the wait status its parent recorded, marked
 * as the parent's claim (blamer_snap_process.parent_claim). The device
 * backend has the kernel's fact instead, which wins: it is never
 * joined. A parent is only a heap of the same user's directory, so this
 * is one claim about another, never more than either heap says.
 *
 * Cost: one sorted array of the exited children of every heap, and a
 * binary search per dead process: bounded by the records read.
 */
#include <stdlib.h>

#include "internal.h"

struct claim {
	int64_t pid;
	uint64_t start;
	int32_t parent, status;
	uint64_t when;
};

static int claim_cmp(const void *a, const void *b)
{
	const struct claim *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* the latest exit last: it is the one kept */
	return (x->when > y->when) - (x->when < y->when);
}

void rd_join_parent_claims(struct blamer_snapshot *s)
{
	struct claim *v, key;
	size_t i, j, n = 0, lo, hi;

	for (i = 0; i < s->nprocs; i++)
		n += s->procs[i].nchildren;
	if (!n)
		return;
	v = malloc(n * sizeof(*v));
	if (!v)
		return;		/* a claim is extra: none rather than a failed snapshot */
	for (i = 0, n = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];

		for (j = 0; j < p->nchildren; j++) {
			const struct blamer_snap_child *c = &p->children[j];

			/* a launch without the child's start time could be any
			 * process that had its pid */
			if (c->state != BLAMER_CHILD_EXITED || !c->start_time_ns)
				continue;
			v[n++] = (struct claim){ c->pid, c->start_time_ns, p->pid, c->exit_status,
						 c->exit_time_ns };
		}
	}
	qsort(v, n, sizeof(*v), claim_cmp);
	for (i = 0; i < s->nprocs && n; i++) {
		struct blamer_snap_process *p = &s->procs[i];

		if (p->state != BLAMER_PROC_DEAD || p->kernel_facts || !p->start_time_ns)
			continue;
		key = (struct claim){ .pid = p->pid, .start = p->start_time_ns, .when = UINT64_MAX };
		/* the last claim of (pid, start): the one before the first
		 * claim past @key */
		for (lo = 0, hi = n; lo < hi;) {
			size_t mid = lo + (hi - lo) / 2;

			if (claim_cmp(&v[mid], &key) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		j = lo - 1;	/* lo == 0: wraps, and fails the test below */
		if (j < n && v[j].pid == p->pid && v[j].start == p->start_time_ns) {
			p->parent_claim = true;
			p->parent_pid = v[j].parent;
			p->parent_wait_status = v[j].status;
			p->parent_exit_time_ns = v[j].when;
		}
	}
	free(v);
}
