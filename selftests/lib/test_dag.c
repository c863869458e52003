// SPDX-License-Identifier: MIT
/*
 * libblamer writer tests, the attribution DAG: nodes, links, paths and their
 * measurements through per-thread shards, as the reader sums them.
 * Each test runs in a fixture (common.h): a private directory and a
 * context the teardown closes, so a failed assert leaks neither.
 */
#include <errno.h>
#include <pthread.h>

#include "kselftest_harness.h"
#include "common.h"

TEST_F(ctx, dag_nodes_links_paths)
{
	uint64_t ids[3] = { blamer_dag_id("browser"), blamer_dag_id("tab:1"),
			    blamer_dag_id("frame:7") };
	uint32_t units[2] = { BLAMER_UNIT_CPU_NS, BLAMER_UNIT_BYTES };
	struct blamer_config c;
	struct blamer_path *p, *q;
	struct blamer_dag_path *rec;
	uint64_t sum[BLAMER_DAG_MAX_UNITS], nshards;
	struct v_stats st;
	struct v_heap v;
	char why[64];
	struct blamer *b;

	/* FNV-1a 64 test vectors */
	ASSERT_EQ(0xcbf29ce484222325ull, blamer_dag_id(""));
	ASSERT_EQ(0xaf63dc4c8601ec8cull, blamer_dag_id("a"));
	ASSERT_EQ(0x85944171f73967e8ull, blamer_dag_id("foobar"));
	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	ASSERT_EQ(0, blamer_dag_node(b, ids[0], 1, "browser"));
	ASSERT_EQ(0, blamer_dag_node(b, ids[1], 2, "tab:1"));
	ASSERT_EQ(0, blamer_dag_node(b, ids[2], 3, "frame:7"));
	ASSERT_EQ(0, blamer_dag_node(b, ids[2], 3, "frame:7"));	/* found, not duplicated */
	ASSERT_EQ(0, blamer_dag_link(b, ids[0], ids[1]));
	ASSERT_EQ(0, blamer_dag_link(b, ids[1], ids[2]));
	ASSERT_EQ(0, blamer_dag_link(b, ids[0], ids[2]));	/* a second parent */
	ASSERT_EQ(0, blamer_dag_link(b, ids[0], ids[2]));
	ASSERT_EQ(-EINVAL, blamer_dag_link(b, ids[0], ids[0]));
	p = blamer_path_get(b, ids, 3, units, 2);
	ASSERT_NE(NULL, p);
	q = blamer_path_get(b, ids, 3, units, 2);
	ASSERT_EQ(p, q);
	q = blamer_path_get(b, ids, 2, units, 2);	/* another path */
	ASSERT_NE(p, q);
	ASSERT_EQ(NULL, blamer_path_get(b, ids, 0, units, 2));
	ASSERT_EQ(NULL, blamer_path_get(b, ids, 9, units, 2));
	blamer_path_add(p, 0, 1000);
	blamer_path_add(p, 0, 234);
	blamer_path_add(p, 1, 4096);
	blamer_path_add(p, 8, 1);	/* out of range: ignored */
	rec = (struct blamer_dag_path *)(uintptr_t)p->h.rec;
	ASSERT_EQ(3, rec->depth);
	ASSERT_EQ(ids[2], rec->nodes[2]);
	ASSERT_EQ(BLAMER_UNIT_BYTES, rec->units[1]);
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(3, st.by_type[BLAMER_REC_DAG_NODE]);
	ASSERT_EQ(3, st.by_type[BLAMER_REC_DAG_EDGE]);
	ASSERT_EQ(2, st.by_type[BLAMER_REC_DAG_PATH]);
	/* one thread added: one shard holds it all */
	ASSERT_EQ(1, st.by_type[BLAMER_REC_DAG_SHARD]);
	ASSERT_EQ(0, v_path_values(&v, p->h.ref, sum, &nshards, why)) TH_LOG("%s", why);
	ASSERT_EQ(1, nshards);
	ASSERT_EQ(1234, sum[0]);
	ASSERT_EQ(4096, sum[1]);
	ASSERT_EQ(0, rec->values[0]);
	t_close(self, b);
}

/*
 * What blamer shows for path @ids in @unit: the reader run on the
 * context's own mappings. 0 if the heap reads healthy and has the path.
 */

static int reader_total(struct blamer *b, const uint64_t *ids, uint32_t depth, uint32_t unit,
			uint64_t *total)
{
	struct blamer_snapshot *s = t_own_snapshot(b);
	int ret = -1;
	uint32_t i;

	if (!s)
		return -1;
	for (i = 0; i < s->ntotals && s->procs[0].health == BLAMER_HEALTH_OK; i++) {
		const struct blamer_snap_total *t = &s->totals[i];

		if (t->depth == depth && !memcmp(t->nodes, ids, depth * sizeof(*ids)) &&
		    t->unit == unit) {
			*total = t->value;
			ret = 0;
		}
	}
	blamer_snapshot_free(s);
	return ret;
}

/* Shard records in @b's heap, live (type DAG_SHARD), and how many are claimed. */

static uint64_t count_shards(struct blamer *b, uint64_t *claimed)
{
	struct bl_iter it = { 0 };
	uint64_t n = 0;
	blamer_ref r;
	uint32_t t;

	*claimed = 0;
	while ((r = bl_heap_next(&b->heap, &it, &t))) {
		struct blamer_dag_shard *sh;

		if (t != BLAMER_REC_DAG_SHARD)
			continue;
		sh = bl_heap_get(&b->heap, r, t, sizeof(*sh));
		n++;
		*claimed += sh && __atomic_load_n(&sh->claim, __ATOMIC_ACQUIRE) != 0;
	}
	return n;
}

TEST_F(ctx, path_add_totals_through_the_reader)
{
	uint64_t ids[2] = { blamer_dag_id("app"), blamer_dag_id("parse") }, total, claimed;
	uint32_t units[2] = { BLAMER_UNIT_CPU_NS, BLAMER_UNIT_COUNT };
	struct blamer_config c;
	struct blamer_path *p;
	struct blamer *b;
	int i;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	p = blamer_path_get(b, ids, 2, units, 2);
	ASSERT_NE(NULL, p);
	for (i = 0; i < 1000; i++) {
		blamer_path_add(p, 0, i);
		blamer_path_add(p, 1, 1);
	}
	ASSERT_EQ(0, reader_total(b, ids, 2, BLAMER_UNIT_CPU_NS, &total));
	ASSERT_EQ(999 * 1000 / 2, total);
	ASSERT_EQ(0, reader_total(b, ids, 2, BLAMER_UNIT_COUNT, &total));
	ASSERT_EQ(1000, total);
	/* all of it in this thread's shard, claimed while the thread lives */
	ASSERT_EQ(1, count_shards(b, &claimed));
	ASSERT_EQ(1, claimed);
	ASSERT_EQ(0, ((struct blamer_dag_path *)(uintptr_t)p->h.rec)->values[0]);
	t_close(self, b);
}

/* Unit names: checked, made once, read back by the reader. */
TEST_F(ctx, dag_unit_names)
{
	const struct blamer_snap_unit_def *d;
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct blamer *b;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	ASSERT_EQ(0, blamer_dag_unit(b, 1007, "requests", BLAMER_BASE_NONE));
	ASSERT_EQ(0, blamer_dag_unit(b, 1007, "requests", BLAMER_BASE_NONE));	/* found */
	ASSERT_EQ(-EEXIST, blamer_dag_unit(b, 1007, "requests", BLAMER_BASE_BYTES));
	ASSERT_EQ(-EEXIST, blamer_dag_unit(b, 1007, "other", BLAMER_BASE_NONE));
	ASSERT_EQ(0, blamer_dag_unit(b, 1008, "handling_ns_2", BLAMER_BASE_SECONDS));
	ASSERT_EQ(-EINVAL, blamer_dag_unit(b, BLAMER_UNIT_BYTES, "bytes", BLAMER_BASE_BYTES));
	ASSERT_EQ(-EINVAL, blamer_dag_unit(b, 1009, "Requests", BLAMER_BASE_NONE));
	ASSERT_EQ(-EINVAL, blamer_dag_unit(b, 1009, "9lives", BLAMER_BASE_NONE));
	ASSERT_EQ(-EINVAL, blamer_dag_unit(b, 1009, "a/b", BLAMER_BASE_NONE));
	ASSERT_EQ(-EINVAL, blamer_dag_unit(b, 1009, "", BLAMER_BASE_NONE));
	ASSERT_EQ(-EINVAL, blamer_dag_unit(b, 1009, NULL, BLAMER_BASE_NONE));
	ASSERT_EQ(-EINVAL, blamer_dag_unit(b, 1009, "x", 3));
	ASSERT_EQ(-EINVAL, blamer_dag_unit(b, 1009, "a_name_of_thirty_two_characters_", 0));
	ASSERT_EQ(0, blamer_dag_unit(b, 1009, "a_name_of_thirty_one_characters", 0));
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	EXPECT_EQ(3, s->nunit_defs);	/* each once */
	d = blamer_snap_unit_def(s, 1008);
	ASSERT_NE(NULL, d);
	EXPECT_STREQ("handling_ns_2", d->name);
	EXPECT_EQ(BLAMER_BASE_SECONDS, d->base);
	blamer_snapshot_free(s);
	t_close(self, b);
}

/* More paths than cache slots: slots are lost and the shards found again. */

TEST_F(ctx, path_add_beyond_the_cache_is_exact)
{
	enum { NPATHS = 3 * BL_SHARD_SLOTS + 5, ROUNDS = 50 };
	uint64_t ids[2] = { blamer_dag_id("root"), 0 }, total, claimed;
	uint32_t unit = BLAMER_UNIT_BYTES;
	struct blamer_path *p[NPATHS];
	struct blamer_config c;
	struct blamer *b;
	int i, round;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	for (i = 0; i < NPATHS; i++) {
		ids[1] = i + 1;
		p[i] = blamer_path_get(b, ids, 2, &unit, 1);
		ASSERT_NE(NULL, p[i]);
	}
	for (round = 0; round < ROUNDS; round++)
		for (i = 0; i < NPATHS; i++)
			blamer_path_add(p[i], 0, i + 1);
	for (i = 0; i < NPATHS; i++) {
		ids[1] = i + 1;
		ASSERT_EQ(0, reader_total(b, ids, 2, unit, &total)) TH_LOG("path %d", i);
		ASSERT_EQ((uint64_t)ROUNDS * (i + 1), total) TH_LOG("path %d", i);
	}
	/* one thread, one shard per path, however often its slot was lost */
	ASSERT_EQ(NPATHS, count_shards(b, &claimed));
	t_close(self, b);
}

struct adder {
	struct blamer_path *p[2];
	int n;
	pthread_barrier_t *hold;	/* if set: stay alive until all have added */
};

static void *add_then_exit(void *arg)
{
	struct adder *a = arg;
	int i;

	for (i = 0; i < a->n; i++) {
		blamer_path_add(a->p[0], 0, 1);
		blamer_path_add(a->p[1], 0, 2);
	}
	if (a->hold)
		pthread_barrier_wait(a->hold);
	return NULL;
}

TEST_F(ctx, exited_threads_leave_shards_for_the_next)
{
	uint64_t ids[2] = { blamer_dag_id("root"), 0 }, total, claimed;
	uint32_t unit = BLAMER_UNIT_COUNT;
	struct adder a = { .n = 1000 };
	pthread_barrier_t hold;
	struct blamer_config c;
	pthread_t th[2];
	struct blamer *b;
	int i;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	for (i = 0; i < 2; i++) {
		ids[1] = i + 1;
		a.p[i] = blamer_path_get(b, ids, 2, &unit, 1);
		ASSERT_NE(NULL, a.p[i]);
	}
	ASSERT_EQ(0, pthread_create(&th[0], NULL, add_then_exit, &a));
	ASSERT_EQ(0, pthread_join(th[0], NULL));
	ASSERT_EQ(2, count_shards(b, &claimed));
	ASSERT_EQ(0, claimed);	/* released at exit */
	/* the next thread takes them over: no new shard */
	ASSERT_EQ(0, pthread_create(&th[0], NULL, add_then_exit, &a));
	ASSERT_EQ(0, pthread_join(th[0], NULL));
	ASSERT_EQ(2, count_shards(b, &claimed));
	ASSERT_EQ(0, claimed);
	/* two at a time need two per path, and no more */
	pthread_barrier_init(&hold, NULL, 2);
	a.hold = &hold;
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, add_then_exit, &a));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	pthread_barrier_destroy(&hold);
	ASSERT_EQ(4, count_shards(b, &claimed));
	ASSERT_EQ(0, claimed);
	ids[1] = 1;
	ASSERT_EQ(0, reader_total(b, ids, 2, unit, &total));
	ASSERT_EQ(4000, total);
	ids[1] = 2;
	ASSERT_EQ(0, reader_total(b, ids, 2, unit, &total));
	ASSERT_EQ(8000, total);
	t_close(self, b);
}

TEST_F(ctx, full_heap_adds_to_the_path_record)
{
	uint64_t ids[1] = { blamer_dag_id("root") }, total, claimed;
	uint32_t unit = BLAMER_UNIT_COUNT;
	struct adder a = { .n = 1000 };
	struct blamer_config c;
	struct blamer_path *p;
	pthread_t th;
	struct blamer *b;
	int i, err = 0;

	c = t_cfg(self->dir, 16384, 2);
	ASSERT_EQ(0, t_open(self, &c, &b));
	p = blamer_path_get(b, ids, 1, &unit, 1);
	ASSERT_NE(NULL, p);
	a.p[0] = a.p[1] = p;
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "registered", 0, 0));
	blamer_pop(b);
	while (bl_heap_alloc(&b->heap, 512, T_REC_TEST, &err))
		;
	while (bl_heap_alloc(&b->heap, 24, T_REC_TEST, &err))
		;
	ASSERT_EQ(ENOSPC, err);
	/* a registered thread with no room for a shard */
	for (i = 0; i < 100; i++)
		blamer_path_add(p, 0, 1);
	/* a thread with no room for its thread record either */
	ASSERT_EQ(0, pthread_create(&th, NULL, add_then_exit, &a));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, count_shards(b, &claimed));
	ASSERT_EQ(100 + 1000 * 3, ((struct blamer_dag_path *)(uintptr_t)p->h.rec)->values[0]);
	ASSERT_EQ(0, reader_total(b, ids, 1, unit, &total));
	ASSERT_EQ(100 + 1000 * 3, total);
	/* a new path has no room: the error says the heap is full, and how full */
	ids[0] = blamer_dag_id("another");
	ASSERT_EQ(NULL, blamer_path_get(b, ids, 1, &unit, 1));
	ASSERT_EQ(ENOSPC, blamer_errno());
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "the heap is full (2 slabs of 16384 bytes)"))
		TH_LOG("%s", blamer_errmsg());
	t_close(self, b);
}

/*
 * A path is asked for with a new key per request (a user id in a node
 * id) on a heap with no room left: each get fails, and leaves no handle
 * behind in the process (a path's handle goes in its table only once its
 * record is made: 20,000 of them would be some 4 MB for nothing).
 */
TEST_F(ctx, paths_the_heap_has_no_room_for_leave_no_handles)
{
	uint64_t ids[2] = { blamer_dag_id("users") };
	uint32_t unit = BLAMER_UNIT_COUNT;
	struct blamer_path key;
	struct blamer_config c;
	struct blamer *b;
	int i, err = 0;

	c = t_cfg(self->dir, 16384, 2);
	ASSERT_EQ(0, t_open(self, &c, &b));
	ids[1] = 1;
	ASSERT_NE(NULL, blamer_path_get(b, ids, 2, &unit, 1));
	while (bl_heap_alloc(&b->heap, 512, T_REC_TEST, &err))
		;
	while (bl_heap_alloc(&b->heap, 24, T_REC_TEST, &err))
		;
	ASSERT_EQ(ENOSPC, err);
	for (i = 0; i < 20000; i++) {
		ids[1] = 1000 + (uint64_t)i;
		ASSERT_EQ(NULL, blamer_path_get(b, ids, 2, &unit, 1));
		ASSERT_EQ(ENOSPC, blamer_errno());
		bl_path_key(&key, ids, 2, &unit, 1);
		ASSERT_EQ(NULL, bl_path_find(b, &key)) TH_LOG("a handle left for key %d", i);
	}
	/* the one made before is found, the same */
	ids[1] = 1;
	bl_path_key(&key, ids, 2, &unit, 1);
	ASSERT_NE(NULL, bl_path_find(b, &key));
	EXPECT_EQ(bl_path_find(b, &key), blamer_path_get(b, ids, 2, &unit, 1));
	t_close(self, b);
}

TEST_HARNESS_MAIN
