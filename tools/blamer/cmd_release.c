// SPDX-License-Identifier: MIT
/*
 * blamer release: free the heaps of dead processes, named by pid or by
 * kernel slab ID, or all of them (--all).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "term.h"

/* A kernel slab ID and the process whose it is. */
struct slab_ref {
	uint64_t id;
	size_t proc;
};

static int slab_ref_cmp(const void *a, const void *b)
{
	const struct slab_ref *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->proc < y->proc ? -1 : x->proc > y->proc;
}

/* Every slab ID of the device's processes, sorted (none on the dir
 * backend, whose slab IDs are file indexes): 0, or -1 out of memory. */
static int slab_table(const struct blamer_snapshot *s, struct slab_ref **out, size_t *n)
{
	size_t i, k = 0;
	uint32_t j;

	*n = 0;
	for (i = 0; i < s->nprocs && s->backend == BLAMER_BACKEND_DEVICE; i++)
		k += s->procs[i].nslabs < 64 ? s->procs[i].nslabs : 64;
	*out = malloc((k ? k : 1) * sizeof(**out));
	if (!*out)
		return -1;
	for (i = 0; i < s->nprocs && s->backend == BLAMER_BACKEND_DEVICE; i++)
		for (j = 0; j < s->procs[i].nslabs && j < 64; j++)
			(*out)[(*n)++] = (struct slab_ref){ .id = s->procs[i].slab_ids[j], .proc = i };
	qsort(*out, *n, sizeof(**out), slab_ref_cmp);
	return 0;
}

/* The first entry of @ids with ID @v, or where it would be. */
static size_t slab_first(const struct slab_ref *ids, size_t n, uint64_t v)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ids[mid].id < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* blamer release ID|PID... | --all: an argument names a dead pid or a slab ID */
int cmd_release(struct cli *c)
{
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	bool all = c->seen & OPT_ALL;
	struct slab_ref *ids = NULL;
	size_t i, n = 0, nids = 0;
	bool *pick = NULL;
	int a, ret;

	if (!all && !c->nargs)
		return usage_err("release needs PIDs or slab IDs of dead processes, or --all (see `blamer postmortem`)");
	if (all && c->nargs)
		return usage_err("give either --all or PIDs/IDs to release, not both");
	ret = take(c, BLAMER_READ_HEADERS_ONLY, &r, &s);
	if (ret)
		return ret;
	pick = calloc(s->nprocs + 1, sizeof(*pick));
	if (!pick || slab_table(s, &ids, &nids)) {
		ret = err("out of memory");
		goto out;
	}
	for (a = 0; a < c->nargs; a++) {
		unsigned long long v;
		bool found = false;

		if (!parse_number(c->args[a], ULLONG_MAX, &v)) {
			ret = usage_err("'%s' is not a PID or slab ID", c->args[a]);
			goto out;
		}
		/* the processes of pid v, then those with a slab v (device) */
		for (i = v <= INT32_MAX ? proc_first(s, (int32_t)v) : s->nprocs;
		     i < s->nprocs && (unsigned long long)s->procs[i].pid == v; i++) {
			if (s->procs[i].state != BLAMER_PROC_DEAD)
				continue;	/* a live pid; maybe a dead one reused it */
			found = true;
			pick[i] = true;
		}
		for (i = slab_first(ids, nids, v); i < nids && ids[i].id == v; i++) {
			const struct blamer_snap_process *p = &s->procs[ids[i].proc];

			if (p->state != BLAMER_PROC_DEAD && (unsigned long long)p->pid == v)
				continue;
			found = true;
			pick[ids[i].proc] = true;
		}
		if (!found) {
			i = v <= INT32_MAX ? proc_first(s, (int32_t)v) : s->nprocs;
			if (i < s->nprocs && (unsigned long long)s->procs[i].pid == v)
				ret = err("pid %llu is still running: only dead processes can be released", v);
			else
				ret = err("no dead process or slab %llu in %s (see `blamer postmortem`)",
					  v, s->source);
			goto out;
		}
	}
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];
		char e[512];

		if (!(all ? p->state == BLAMER_PROC_DEAD : pick[i]))
			continue;
		if (blamer_reader_release(r, p, e, sizeof(e))) {
			ret = err("%s", e);
			continue;
		}
		n++;
		tty_printf(stdout, "released pid %d (%s)%s: %u slab%s\n", p->pid, proc_comm(p),
			   proc_tag(p), p->nslabs, p->nslabs == 1 ? "" : "s");
	}
	if (all && !n && !ret && s->nprocs)
		tty_printf(stdout, "no dead processes in %s\n", s->source);
out:
	free(pick);
	free(ids);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	return ret;
}
