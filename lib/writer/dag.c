// SPDX-License-Identifier: MIT
/*
 * The attribution DAG: nodes (id, type, name), parent links (one EDGE
 * record per link, so a node may have several parents), and paths from
 * the root as actually walked, each with up to 8 measurements (added in
 * dag_shard.c), and the names of application units. Ids are the
 * application's, the same in every process (blamer_dag_id() hashes a
 * stable name), so a reader can merge heaps.
 * Finding an existing node, link or unit walks the list (setup cost, not
 * hot path: a program has few). Such a record is made once per heap,
 * without locks: it is written whole, then listed by
 * bl_heap_append_unique(), whose walk from the head looks at every
 * record appended before ours can go in; the loser of a race leaves its
 * copy off the list and uses the winner. A path (a program may have
 * thousands, and ask for them again) is found by its handle's key in the
 * context's table and made through it, without a walk (path_make()).
 * Readers still merge by id across processes (each heap has its own
 * records).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "internal.h"

uint64_t blamer_dag_id(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a 64 offset basis */

	for (; name && *name; name++) {
		h ^= (uint8_t)*name;
		h *= 0x100000001b3ull;		/* FNV-1a 64 prime */
	}
	return h;
}

/* What makes two records of a type the same one. */
struct dag_key {
	uint32_t type, size;
	bool (*match)(const void *rec, const void *key);
	const void *key;
};

/* A live (published) record of the key's type that @match says is it. */
static bool dag_same(struct bl_heap *h, blamer_ref ref, const void *k)
{
	const struct dag_key *d = k;
	const struct blamer_block *r = bl_heap_get(h, ref, d->type, d->size);

	/* Acquire: pairs with bl_owner_set(), so the record is complete. */
	return r && ld_acquire(A32(&((struct blamer_owner *)(r + 1))->data_id)) &&
	       d->match(r, d->key);
}

/* The first live record equal to @k, or 0. */
static blamer_ref find(struct bl_heap *h, const struct dag_key *k)
{
	struct bl_iter it = { 0 };
	blamer_ref ref;
	uint32_t t;

	while ((ref = bl_heap_next(h, &it, &t)))
		if (t == k->type && dag_same(h, ref, k))
			return ref;
	return 0;
}

/* Lists the filled record @ref: it, or the equal record another thread
 * listed first (ours then stays off the list); 0 if the heap is corrupt. */
static blamer_ref list_once(struct bl_heap *h, blamer_ref ref, const struct dag_key *k)
{
	blamer_ref got = bl_heap_append_unique(h, ref, dag_same, k);

	if (!got)
		bl_error(EIO, "blamer: the heap is corrupt");
	return got;
}

/* Lists definition @ref (a node or link) once; the one that did is kept
 * for the heaps of fork children. 0 or -errno. */
static int listed(struct blamer *b, struct bl_heap *h, blamer_ref ref, const struct dag_key *k)
{
	const struct blamer_block *r = bl_ptr(h, ref);
	blamer_ref got = list_once(h, ref, k);

	if (!got)
		return -EIO;
	if (got == ref && !bl_inherit_def(b, k->type, r, k->size))
		return bl_error(ENOMEM, "blamer: no memory to keep a definition for fork children");
	return 0;
}

static bool node_match(const void *rec, const void *key)
{
	return ((const struct blamer_dag_node *)rec)->id == *(const uint64_t *)key;
}

int blamer_dag_node(struct blamer *b, uint64_t id, uint32_t node_type, const char *name)
{
	struct dag_key k = { BLAMER_REC_DAG_NODE, sizeof(struct blamer_dag_node), node_match, &id };
	struct blamer_dag_node *n;
	struct bl_heap *h;
	int err;
	blamer_ref ref;

	h = bl_heap_for(&b, &err);
	if (!h)
		return err;
	if (find(h, &k))
		return 0;
	ref = bl_record_alloc(b, BLAMER_REC_DAG_NODE, sizeof(*n));
	if (!ref)
		return -ENOSPC;
	n = bl_ptr(h, ref);
	n->id = id;
	n->node_type = node_type;
	if (name) {
		strncpy(n->name, name, sizeof(n->name) - 1);
		if (strlen(name) >= sizeof(n->name))
			bl_drop(b, BLAMER_DROP_NAME_CUT);
	}
	bl_owner_set(b, &n->owner);
	return listed(b, h, ref, &k);
}

static bool edge_match(const void *rec, const void *key)
{
	const struct blamer_dag_edge *e = rec;
	const uint64_t *k = key;

	return e->parent_id == k[0] && e->child_id == k[1];
}

int blamer_dag_link(struct blamer *b, uint64_t parent_id, uint64_t child_id)
{
	uint64_t key[2] = { parent_id, child_id };
	struct dag_key k = { BLAMER_REC_DAG_EDGE, sizeof(struct blamer_dag_edge), edge_match, key };
	struct blamer_dag_edge *e;
	struct bl_heap *h;
	int err;
	blamer_ref ref;

	h = bl_heap_for(&b, &err);
	if (!h)
		return err;
	if (parent_id == child_id)
		return bl_error(EINVAL, "blamer: a node cannot be its own parent");
	if (find(h, &k))
		return 0;
	ref = bl_record_alloc(b, BLAMER_REC_DAG_EDGE, sizeof(*e));
	if (!ref)
		return -ENOSPC;
	e = bl_ptr(h, ref);
	e->parent_id = parent_id;
	e->child_id = child_id;
	bl_owner_set(b, &e->owner);
	return listed(b, h, ref, &k);
}

static bool unit_match(const void *rec, const void *key)
{
	return ((const struct blamer_dag_unit *)rec)->unit == *(const uint32_t *)key;
}

/* What the format allows of a unit name (readers check it again). */
static bool unit_name_ok(const char *n)
{
	size_t i;

	for (i = 0; n[i]; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || n[i] == '_' ||
		      (i && n[i] >= '0' && n[i] <= '9')))
			return false;
	return i > 0 && i < BLAMER_NAME_MAX;
}

/* The unit record @ref names @unit as asked: 0, else -EEXIST. */
static int unit_same_name(struct bl_heap *h, blamer_ref ref, uint32_t unit, const char *name,
			  uint32_t base)
{
	const struct blamer_dag_unit *u = bl_ptr(h, ref);

	if (u->base == base && !strncmp(u->name, name, sizeof(u->name)))
		return 0;
	return bl_error(EEXIST, "blamer: unit %u is already named %.*s", unit,
			(int)sizeof(u->name), u->name);
}

int blamer_dag_unit(struct blamer *b, uint32_t unit, const char *name, uint32_t base)
{
	struct dag_key k = { BLAMER_REC_DAG_UNIT, sizeof(struct blamer_dag_unit), unit_match, &unit };
	struct blamer_dag_unit *u;
	struct bl_heap *h;
	int err;
	blamer_ref ref, got;

	h = bl_heap_for(&b, &err);
	if (!h)
		return err;
	if (unit < BLAMER_UNIT_APP_BASE || base > BLAMER_BASE_BYTES || !name ||
	    !unit_name_ok(name))
		return bl_error(EINVAL, "blamer: a unit >= %u, a base BLAMER_BASE_*, and a name of "
				"1..%u of [a-z0-9_] not starting with a digit",
				BLAMER_UNIT_APP_BASE, BLAMER_NAME_MAX - 1);
	ref = find(h, &k);
	if (ref)
		return unit_same_name(h, ref, unit, name, base);
	ref = bl_record_alloc(b, BLAMER_REC_DAG_UNIT, sizeof(*u));
	if (!ref)
		return -ENOSPC;
	u = bl_ptr(h, ref);
	u->unit = unit;
	u->base = base;
	strncpy(u->name, name, sizeof(u->name) - 1);
	bl_owner_set(b, &u->owner);
	got = list_once(h, ref, &k);
	if (!got)
		return -EIO;
	if (got == ref && !bl_inherit_def(b, BLAMER_REC_DAG_UNIT, u, sizeof(*u)))
		return bl_error(ENOMEM, "blamer: no memory to keep unit %u for fork children", unit);
	/* another thread named it first: as we asked, or not */
	return got == ref ? 0 : unit_same_name(h, got, unit, name, base);
}

/* FNV-1a over a path's key (handle_store.c's table). */
static uint32_t path_hash(const struct blamer_path *k)
{
	const uint8_t *p = (const uint8_t *)k->ids;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < k->depth * sizeof(k->ids[0]); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	p = (const uint8_t *)k->units;
	for (i = 0; i < sizeof(k->units); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return (uint32_t)(h ^ (h >> 32) ^ k->depth);
}

void bl_path_key(struct blamer_path *key, const uint64_t *ids, unsigned depth,
		 const uint32_t *units, unsigned nunits)
{
	memset(key, 0, sizeof(*key));	/* units past nunits: BLAMER_UNIT_NONE */
	key->depth = depth;
	key->nunits = nunits;
	memcpy(key->ids, ids, depth * sizeof(uint64_t));
	if (nunits)
		memcpy(key->units, units, nunits * sizeof(uint32_t));
	key->hash = path_hash(key);
}

/* A DAG_PATH record of @q's key in @b's heap, filled, not listed; 0 with
 * a message if the heap has no room. */
static blamer_ref path_record(struct blamer *b, const struct blamer_path *q)
{
	struct blamer_dag_path *p;
	blamer_ref ref = bl_record_alloc(b, BLAMER_REC_DAG_PATH, sizeof(*p));

	if (!ref)
		return 0;
	p = bl_ptr(&b->heap, ref);
	p->depth = q->depth;
	memcpy(p->nodes, q->ids, q->depth * sizeof(uint64_t));
	memcpy(p->units, q->units, sizeof(p->units));
	bl_owner_set(b, &p->owner);
	return ref;
}

/* The path record of @q in @b's ready heap, made once per handle and
 * heap (bl_handle_made()): in a fork child, where every handle is stale
 * at once. 0 with a message if it cannot be had. */
static blamer_ref path_make(struct blamer *b, struct blamer_path *q)
{
	/* Acquire: the record another thread made is whole. */
	blamer_ref ref = ld_acquire(A64(&q->made));

	if (!ref)
		ref = path_record(b, q);
	return ref ? bl_handle_made(&b->heap, &q->made, ref) : 0;
}

/* handle.c: a path handle made current: its record, made at its first
 * use and again in a fork child. */
static void *path_remake(struct bl_handle *h, struct blamer *b, blamer_ref *ref)
{
	struct blamer_path *q = (struct blamer_path *)((char *)h - offsetof(struct blamer_path, h));

	/* A failure was counted where the record could not be had. */
	*ref = path_make(b, q);
	return *ref ? bl_ptr(&b->heap, *ref) : NULL;
}

/*
 * @q, its record current (made again first in a fork child) and listed:
 * by the thread that made it, right after it put the handle in the
 * table, or, if that thread has not yet (or never will), by us (a plain
 * load when it is listed). NULL with a message if it cannot be.
 */
static struct blamer_path *path_listed(struct blamer *b, struct blamer_path *q)
{
	const struct blamer_block *rec = bl_handle_rec(&q->h);

	if (!rec)
		return NULL;
	if (!ld_acquire(A64(&rec->next)) &&
	    !bl_heap_make_iterable(&b->heap, bl_handle_ref(&q->h))) {
		bl_error(EIO, "blamer: the heap is corrupt");
		return NULL;
	}
	return q;
}

struct blamer_path *blamer_path_get(struct blamer *b, const uint64_t *ids, unsigned depth,
				    const uint32_t *units, unsigned nunits)
{
	struct blamer_path key, *q, *mine;

	b = bl_ctx(b);
	if (!b)
		return NULL;
	if (!depth || depth > BLAMER_DAG_MAX_DEPTH || nunits > BLAMER_DAG_MAX_UNITS ||
	    !ids || (nunits && !units)) {
		bl_error(EINVAL, "blamer: a path has 1..%u nodes and at most %u units",
			 BLAMER_DAG_MAX_DEPTH, BLAMER_DAG_MAX_UNITS);
		return NULL;
	}
	if (!bl_ready(b))
		return NULL;
	bl_path_key(&key, ids, depth, units, nunits);
	q = bl_path_find(b, &key);
	if (q)
		return path_listed(b, q);
	/* A new path: its record first, then its handle, so that a path the
	 * heap has no room for leaves no handle (a key per request would
	 * keep one each, for nothing). */
	mine = malloc(sizeof(*mine));
	if (!mine) {
		bl_error(ENOMEM, "blamer: no memory for a path handle");
		return NULL;
	}
	*mine = key;
	mine->id = bl_handle_id();
	mine->made = path_record(b, mine);
	if (!mine->made) {
		free(mine);
		/* another thread may have made it with the last bytes since
		 * we looked: its handle, else NULL (ENOSPC, counted) */
		q = bl_path_find(b, &key);
		return q ? path_listed(b, q) : NULL;
	}
	bl_handle_init(&mine->h, b, path_remake, bl_ptr(&b->heap, mine->made), mine->made);
	q = bl_path_publish(b, mine);
	if (q != mine)
		free(mine);	/* another thread's went in first: ours stays off the list */
	return q ? path_listed(b, q) : NULL;
}
