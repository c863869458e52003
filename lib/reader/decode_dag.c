// SPDX-License-Identifier: MIT
/*
 * Decoders of the attribution DAG: DAG_NODE (an id and its name),
 * DAG_EDGE (a parent link) and DAG_PATH (a path walked and its values:
 * its own plus those of every DAG_SHARD on its chain, each shard counted
 * once; shards have no decoder of their own).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void rd_decode_node(struct rd_ctx *c, blamer_ref ref)
{
	struct blamer_dag_node r;
	struct blamer_block b;
	struct blamer_snap_node *sn;

	if (!rd_record(c, ref, BLAMER_REC_DAG_NODE, &b, &r, sizeof(r)) || !rd_owner_ok(c, &r.owner))
		return;
	sn = rd_push(c, (void **)&c->p->nodes, &c->p->nnodes, sizeof(*sn));
	if (!sn)
		return;
	sn->id = r.id;
	sn->type = r.node_type;
	rd_sanitize(sn->name, r.name, BLAMER_NAME_MAX);
}

void rd_decode_edge(struct rd_ctx *c, blamer_ref ref)
{
	struct blamer_dag_edge r;
	struct blamer_block b;
	struct blamer_snap_edge *se;

	if (!rd_record(c, ref, BLAMER_REC_DAG_EDGE, &b, &r, sizeof(r)) || !rd_owner_ok(c, &r.owner))
		return;
	se = rd_push(c, (void **)&c->p->edges, &c->p->nedges, sizeof(*se));
	if (!se)
		return;
	se->parent = r.parent_id;
	se->child = r.child_id;
}

/*
 * Adds to @sum the values of the shards on the chain from @ref of the
 * path at @path (unsigned, wrapping like the writer's adds). A shard is
 * on one chain, once; one met twice (a loop, or chains that merge), one
 * that is not a shard of this path, or a bad link is corruption: the
 * walk stops there and the sum keeps what came before.
 */
static void add_shards(struct rd_ctx *c, blamer_ref path, blamer_ref ref, uint64_t *sum)
{
	for (; ref; ) {
		struct blamer_dag_shard s;
		uint64_t v[BLAMER_DAG_MAX_UNITS];
		struct blamer_block b;
		uint32_t i;
		int fresh;

		if (!rd_chained(c, ref, &b, &s, sizeof(s)))
			return;
		fresh = rd_seen_add(c, c->shards, ref);
		if (fresh <= 0) {
			if (fresh == 0)
				rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
					   "path at %#llx: shard %#llx is on a chain twice",
					   (unsigned long long)path, (unsigned long long)ref);
			return;
		}
		if (b.type != BLAMER_REC_DAG_SHARD || b.size < sizeof(s) || !rd_owner_ok(c, &s.owner) ||
		    s.path != path) {
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
				   "path at %#llx: %#llx is not one of its shards",
				   (unsigned long long)path, (unsigned long long)ref);
			return;
		}
		if (!rd_load_u64s(c->h, ref + offsetof(struct blamer_dag_shard, values),
				  BLAMER_DAG_MAX_UNITS, v))
			return;
		for (i = 0; i < BLAMER_DAG_MAX_UNITS; i++)
			sum[i] += v[i];
		ref = s.next_shard;
	}
}

/*
 * Whether the paths of this heap may use @unit: every distinct unit is a
 * column of the attribution view (its cost is per unit times per path),
 * so one heap brings at most RD_MAX_HEAP_UNITS; values in more are left
 * out and the heap is truncated.
 */
static bool heap_unit(struct rd_ctx *c, uint32_t unit)
{
	uint32_t i;

	for (i = 0; i < c->nunits; i++)
		if (c->units[i] == unit)
			return true;
	if (c->nunits < RD_MAX_HEAP_UNITS) {
		c->units[c->nunits++] = unit;
		return true;
	}
	rd_problem(c->p, BLAMER_HEALTH_TRUNCATED,
		   "paths in more than %u units: unit %u left out", RD_MAX_HEAP_UNITS, unit);
	return false;
}

void rd_decode_path(struct rd_ctx *c, blamer_ref ref)
{
	uint64_t sum[BLAMER_DAG_MAX_UNITS];
	struct blamer_dag_path r;
	struct blamer_block b;
	struct blamer_snap_path *sp;
	uint32_t i;

	if (!rd_record(c, ref, BLAMER_REC_DAG_PATH, &b, &r, sizeof(r)) || !rd_owner_ok(c, &r.owner))
		return;
	if (r.depth == 0 || r.depth > BLAMER_DAG_MAX_DEPTH) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "path at %#llx: depth %u",
			   (unsigned long long)ref, r.depth);
		return;
	}
	if (!rd_load_u64s(c->h, ref + offsetof(struct blamer_dag_path, values),
			  BLAMER_DAG_MAX_UNITS, sum))
		return;
	add_shards(c, ref, r.shards, sum);
	sp = rd_push(c, (void **)&c->p->paths, &c->p->npaths, sizeof(*sp));
	if (!sp)
		return;
	sp->depth = r.depth;
	memcpy(sp->nodes, r.nodes, r.depth * sizeof(r.nodes[0]));
	for (i = 0; i < BLAMER_DAG_MAX_UNITS; i++) {
		if (r.units[i] == BLAMER_UNIT_NONE && sum[i] == 0)
			continue;
		if (!heap_unit(c, r.units[i]))
			continue;
		sp->units[sp->nvalues] = r.units[i];
		sp->values[sp->nvalues++] = sum[i];
	}
}

/* A unit name as the format allows it: 1..31 of [a-z0-9_], no leading
 * digit, NUL-padded (so it can be a part of a Prometheus metric name). */
static bool unit_name_ok(const char *n)
{
	size_t i;

	for (i = 0; i < BLAMER_NAME_MAX && n[i]; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || n[i] == '_' ||
		      (i && n[i] >= '0' && n[i] <= '9')))
			return false;
	return i > 0 && i < BLAMER_NAME_MAX;
}

/*
 * A DAG_UNIT: the name of one application unit, added to the snapshot's
 * unit_defs. A heap names at most the RD_MAX_HEAP_UNITS units its paths
 * may use, each once (the first record of a unit wins; racing threads
 * may write two equal ones), so names cost no more than the units they
 * name.
 */
void rd_decode_unit(struct rd_ctx *c, blamer_ref ref)
{
	struct blamer_snapshot *s = c->h->s;
	struct blamer_snap_unit_def def;
	struct blamer_dag_unit r;
	struct blamer_block b;
	uint32_t i;

	if (!rd_record(c, ref, BLAMER_REC_DAG_UNIT, &b, &r, sizeof(r)) || !rd_owner_ok(c, &r.owner))
		return;
	if (r.unit < BLAMER_UNIT_APP_BASE || r.base > BLAMER_BASE_BYTES ||
	    !unit_name_ok(r.name)) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "unit record at %#llx: bad unit, base or name",
			   (unsigned long long)ref);
		return;
	}
	for (i = 0; i < c->nnamed; i++)
		if (c->named[i] == r.unit)
			return;
	if (c->nnamed >= RD_MAX_HEAP_UNITS) {
		rd_problem(c->p, BLAMER_HEALTH_TRUNCATED,
			   "more than %u unit names: unit %u left unnamed", RD_MAX_HEAP_UNITS,
			   r.unit);
		return;
	}
	def.unit = r.unit;
	def.base = r.base;
	memcpy(def.name, r.name, BLAMER_NAME_MAX);
	def.name[BLAMER_NAME_MAX] = '\0';
	if (!rd_add_unit_def(s, c->p->uid, &def)) {
		rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
		return;
	}
	c->named[c->nnamed++] = r.unit;
}

static int def_cmp(const struct blamer_snap_unit_def *x, const struct blamer_snap_unit_def *y)
{
	int c = strcmp(x->name, y->name);

	return c ? c : (x->base > y->base) - (x->base < y->base);
}

/* By unit, then (name, base): the first of a unit is the one that wins. */
static int def_order(const void *a, const void *b)
{
	const struct blamer_snap_unit_def *x = a, *y = b;

	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	return def_cmp(x, y);
}

/* By uid, then as def_order(): the first of a (uid, unit) is its winner. */
static int uid_def_order(const void *a, const void *b)
{
	const struct blamer_snap_uid_unit_def *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return def_order(&x->def, &y->def);
}

/*
 * The heaps' names, one per (uid, unit): thousands of heaps name the same
 * few units, and every path value of a dead heap the fold looks at looks
 * its unit up. Each uid's own, so that no user's heap renames another's
 * unit or changes its base (the scale of its values). uid_unit_defs is
 * sorted in place and cut to the winners (the array keeps its capacity,
 * which is at least what rd_add_unit_def() reckons from the count).
 * unit_defs, over every uid, is made of them: a unit whose uids' names
 * or bases differ has none there (any heap may name any unit number, so
 * the views merging every process show it by number and unscaled).
 */
bool rd_merge_unit_defs(struct blamer_snapshot *s)
{
	struct blamer_snap_unit_def *all;
	size_t i, j, k = 0;

	free(s->unit_defs);
	s->unit_defs = NULL;
	s->nunit_defs = 0;
	if (!s->nuid_unit_defs)
		return true;
	qsort(s->uid_unit_defs, s->nuid_unit_defs, sizeof(*s->uid_unit_defs), uid_def_order);
	for (i = 0; i < s->nuid_unit_defs; i++)
		if (!k || s->uid_unit_defs[k - 1].uid != s->uid_unit_defs[i].uid ||
		    s->uid_unit_defs[k - 1].def.unit != s->uid_unit_defs[i].def.unit)
			s->uid_unit_defs[k++] = s->uid_unit_defs[i];
	s->nuid_unit_defs = k;
	all = malloc(k * sizeof(*all));
	if (!all)
		return false;
	for (i = 0; i < k; i++)
		all[i] = s->uid_unit_defs[i].def;
	qsort(all, k, sizeof(*all), def_order);
	for (i = 0, k = 0; i < s->nuid_unit_defs; i = j) {
		for (j = i + 1; j < s->nuid_unit_defs && all[j].unit == all[i].unit; j++)
			;
		/* sorted by (name, base): the uids agree if the last is the first */
		if (!def_cmp(&all[i], &all[j - 1]))
			all[k++] = all[i];
	}
	s->unit_defs = all;
	s->nunit_defs = k;
	return true;
}

/* A binary search: unit_defs are in unit order (one per unit as the
 * reader makes them; of several, as a snapshot made by hand may hold,
 * the least). */
const struct blamer_snap_unit_def *blamer_snap_unit_def(const struct blamer_snapshot *s,
							uint32_t unit)
{
	const struct blamer_snap_unit_def *best = NULL;
	size_t lo = 0, hi = s->nunit_defs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->unit_defs[mid].unit < unit)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < s->nunit_defs && s->unit_defs[lo].unit == unit; lo++)
		if (!best || def_cmp(&s->unit_defs[lo], best) < 0)
			best = &s->unit_defs[lo];
	return best;
}

/* A binary search of uid_unit_defs (by uid, then unit; one each). */
const struct blamer_snap_unit_def *blamer_snap_uid_unit_def(const struct blamer_snapshot *s,
							    uint32_t uid, uint32_t unit)
{
	size_t lo = 0, hi;

	if (!(s->flags & BLAMER_SNAP_UID_NAMES))
		return blamer_snap_unit_def(s, unit);
	hi = s->nuid_unit_defs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct blamer_snap_uid_unit_def *x = &s->uid_unit_defs[mid];

		if (x->uid == uid && x->def.unit == unit)
			return &x->def;
		if (x->uid < uid || (x->uid == uid && x->def.unit < unit))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
