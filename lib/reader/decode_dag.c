// SPDX-License-Identifier: MIT
/*
 * Decoders of the attribution DAG: DAG_NODE (an id and its name),
 * DAG_EDGE (a parent link) and DAG_PATH (a path walked and its values:
 * its own plus those of every DAG_SHARD on its chain, each shard counted
 * once; shards have no decoder of their own).
 */
#include <stddef.h>
#include <string.h>

#include "internal.h"

void rd_decode_node(struct rd_ctx *c, blamer_ref ref)
{
	struct blamer_dag_node r;
	struct blamer_block b;
	struct blamer_snap_node *sn;

	if (!rd_block(c, ref, sizeof(r), BLAMER_REC_DAG_NODE, &b) ||
	    !rd_copy(c->h, ref, sizeof(r), &r) || !rd_owner_ok(c, &r.owner))
		return;
	sn = rd_push((void **)&c->p->nodes, &c->p->nnodes, sizeof(*sn), c->p);
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

	if (!rd_block(c, ref, sizeof(r), BLAMER_REC_DAG_EDGE, &b) ||
	    !rd_copy(c->h, ref, sizeof(r), &r) || !rd_owner_ok(c, &r.owner))
		return;
	se = rd_push((void **)&c->p->edges, &c->p->nedges, sizeof(*se), c->p);
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
		int fresh = rd_refset_add(&c->shards, ref);
		uint32_t i;

		if (fresh <= 0) {
			if (fresh < 0)
				rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			else
				rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
					   "path at %#llx: shard %#llx is on a chain twice",
					   (unsigned long long)path, (unsigned long long)ref);
			return;
		}
		if (!rd_block(c, ref, sizeof(b), 0, &b))
			return;
		if (b.type != BLAMER_REC_DAG_SHARD || b.size < sizeof(s) ||
		    !rd_copy(c->h, ref, sizeof(s), &s) || !rd_owner_ok(c, &s.owner) ||
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

void rd_decode_path(struct rd_ctx *c, blamer_ref ref)
{
	uint64_t sum[BLAMER_DAG_MAX_UNITS];
	struct blamer_dag_path r;
	struct blamer_block b;
	struct blamer_snap_path *sp;
	uint32_t i;

	if (!rd_block(c, ref, sizeof(r), BLAMER_REC_DAG_PATH, &b) ||
	    !rd_copy(c->h, ref, sizeof(r), &r) || !rd_owner_ok(c, &r.owner))
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
	sp = rd_push((void **)&c->p->paths, &c->p->npaths, sizeof(*sp), c->p);
	if (!sp)
		return;
	sp->depth = r.depth;
	memcpy(sp->nodes, r.nodes, r.depth * sizeof(r.nodes[0]));
	for (i = 0; i < BLAMER_DAG_MAX_UNITS; i++) {
		if (r.units[i] == BLAMER_UNIT_NONE && sum[i] == 0)
			continue;
		sp->units[sp->nvalues] = r.units[i];
		sp->values[sp->nvalues++] = sum[i];
	}
}
