// SPDX-License-Identifier: MIT
/*
 * libblamer writer tests, the heap's limits: full heaps, small slabs, a
 * corrupt heap is never written again, a list that loops; appending a
 * record only if its equal is not listed.
 * Each test runs in a fixture (common.h): a private directory and a
 * context the teardown closes, so a failed assert leaks neither.
 */
#include <errno.h>
#include <pthread.h>

#include "kselftest_harness.h"
#include "common.h"

static void *push_in_thread(void *b)
{
	return (void *)(intptr_t)blamer_push(b, BLAMER_ACTIVITY_TASK, "t", 0, 0);
}

static void *pop_in_thread(void *b)
{
	blamer_pop(b);
	blamer_pop(b);
	return NULL;
}

/* A test record whose key is its first payload word. */
static uint64_t *key_of(struct bl_heap *h, blamer_ref r)
{
	struct blamer_block *rec = bl_heap_get(h, r, T_REC_TEST, sizeof(*rec) + 8);

	return rec ? (uint64_t *)(rec + 1) : NULL;
}

static bool same_key(struct bl_heap *h, blamer_ref r, const void *key)
{
	const uint64_t *k = key_of(h, r);

	return k && *k == *(const uint64_t *)key;
}

static blamer_ref keyed(struct bl_heap *h, uint64_t key)
{
	int err = 0;
	blamer_ref r = bl_heap_alloc(h, 32, T_REC_TEST, &err);

	if (r)
		*key_of(h, r) = key;
	return r;
}

/* Listed records of type T_REC_TEST with @key. */
static int listed(struct bl_heap *h, uint64_t key, blamer_ref *last)
{
	struct bl_iter it = { 0 };
	blamer_ref r;
	uint32_t t;
	int n = 0;

	while ((r = bl_heap_next(h, &it, &t)))
		if (t == T_REC_TEST && same_key(h, r, &key)) {
			n++;
			*last = r;
		}
	return n;
}

TEST_F(ctx, append_unique_keeps_the_first)
{
	uint64_t k7 = 7, k8 = 8;
	struct blamer_config c;
	blamer_ref r1, r2, r3, got = 0;
	struct blamer *b;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	r1 = keyed(&b->heap, 7);
	r2 = keyed(&b->heap, 7);
	r3 = keyed(&b->heap, 8);
	ASSERT_NE(0, r1);
	ASSERT_NE(0, r2);
	ASSERT_NE(0, r3);
	ASSERT_EQ(r1, bl_heap_append_unique(&b->heap, r1, same_key, &k7));
	/* an equal one is listed: the first is returned, the second stays off */
	ASSERT_EQ(r1, bl_heap_append_unique(&b->heap, r2, same_key, &k7));
	ASSERT_EQ(1, listed(&b->heap, 7, &got));
	ASSERT_EQ(r1, got);
	ASSERT_EQ(r3, bl_heap_append_unique(&b->heap, r3, same_key, &k8));
	ASSERT_EQ(1, listed(&b->heap, 8, &got));
	ASSERT_EQ(r3, got);
	/* a record is listed once: appending it again changes nothing */
	ASSERT_EQ(0, bl_heap_append_unique(&b->heap, r3, same_key, &k8));
	ASSERT_EQ(1, listed(&b->heap, 8, &got));
	ASSERT_FALSE(bl_heap_flags(&b->heap) & BLAMER_HEAP_F_CORRUPT);
	/* and records appended after still go in */
	ASSERT_NE(NULL, blamer_set_int(b, BLAMER_DATA_GLOBAL, "after", 1));
	t_close(self, b);
}

TEST_F(ctx, full_heap)
{
	struct blamer_config c;
	struct blamer_heap_info info;
	struct blamer *b;
	int err = 0, n = 0;

	c = t_cfg(self->dir, 16384, 2);
	ASSERT_EQ(0, t_open(self, &c, &b));
	while (bl_heap_alloc(&b->heap, 512, T_REC_TEST, &err))
		n++;
	ASSERT_EQ(ENOSPC, err);
	ASSERT_GT(n, 10);
	while (bl_heap_alloc(&b->heap, 24, T_REC_TEST, &err))
		n++;
	ASSERT_EQ(ENOSPC, err);
	ASSERT_EQ(0, blamer_heap_info(b, &info));
	ASSERT_EQ(2, info.slab_count);
	ASSERT_TRUE(info.flags & BLAMER_HEAP_F_FULL);
	ASSERT_FALSE(info.flags & BLAMER_HEAP_F_CORRUPT);
	/* users get errors, not crashes; a new thread cannot register */
	{
		pthread_t th;
		void *ret;

		ASSERT_EQ(0, pthread_create(&th, NULL, push_in_thread, b));
		ASSERT_EQ(0, pthread_join(th, &ret));
		ASSERT_EQ(-ENOSPC, (int)(intptr_t)ret);
	}
	ASSERT_EQ(NULL, blamer_path_get(b, (uint64_t[]){ 1 }, 1, NULL, 0));
	ASSERT_EQ(-ENOSPC, blamer_dag_node(b, 1, 1, "n"));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "the heap is full"));
	t_close(self, b);
}

/*
 * A thread with no record that pops makes none: it has nothing to pop.
 * Before, each pop registered the thread (on a full heap: a search for
 * room at every pop).
 */
TEST_F(ctx, pop_makes_no_thread_record)
{
	struct blamer_config c;
	struct v_stats st;
	struct v_heap v;
	struct blamer *b;
	pthread_t th;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	ASSERT_NE(NULL, blamer_set_int(b, BLAMER_DATA_PROCESS, "ready", 1));
	ASSERT_EQ(0, pthread_create(&th, NULL, pop_in_thread, b));
	ASSERT_EQ(0, pthread_join(th, NULL));
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(0, st.by_type[BLAMER_REC_THREAD] + st.retired[BLAMER_REC_THREAD]);
	t_close(self, b);
}

/*
 * A backend that could not make a slab is not asked again at once (every
 * allocation of a full heap did: on a full tmpfs, 4 system calls at every
 * push of a thread without a record), but after GROW_RETRY_NS it is, and
 * the heap grows when it can. The failure: the directory's fd taken away.
 */
TEST_F(ctx, failed_growth_is_retried_later_not_at_once)
{
	struct blamer_config c;
	struct blamer *b;
	int err = 0, dirfd;

	if (t_backend() != BLAMER_BACKEND_DIR)
		SKIP(return, "the dir backend's directory is taken away");
	c = t_cfg(self->dir, 16384, 4);
	ASSERT_EQ(0, t_open(self, &c, &b));
	dirfd = b->be.dirfd;
	b->be.dirfd = -1;
	while (bl_heap_alloc(&b->heap, 512, T_REC_TEST, &err))
		;
	ASSERT_EQ(ENOSPC, err);
	ASSERT_EQ(1, b->heap.nslabs);
	ASSERT_EQ(0, bl_record_alloc(b, T_REC_TEST, 512));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "cannot grow (1 of max_slabs 4 slabs"))
		TH_LOG("%s", blamer_errmsg());
	/* the directory back: not asked again yet */
	b->be.dirfd = dirfd;
	ASSERT_EQ(0, bl_heap_alloc(&b->heap, 512, T_REC_TEST, &err));
	ASSERT_EQ(ENOSPC, err);
	ASSERT_EQ(1, b->heap.nslabs);
	/* later: asked, and the heap grows */
	ASSERT_NE(0, b->heap.grow_retry_ns);
	b->heap.grow_retry_ns = 1;
	ASSERT_NE(0, bl_heap_alloc(&b->heap, 512, T_REC_TEST, &err));
	ASSERT_EQ(2, b->heap.nslabs);
	t_close(self, b);
}

/* Per-thread chunks never make the heap grow early or waste a slab. */

TEST_F(ctx, small_slabs_fill_up)
{
	struct blamer_config c;
	struct blamer_heap_info info;
	struct blamer *b;
	uint64_t used0;
	int err = 0, n = 0;

	c = t_cfg(self->dir, 16384, 4);
	ASSERT_EQ(0, t_open(self, &c, &b)) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(0, blamer_heap_info(b, &info));
	used0 = info.bytes_used + (uint64_t)(4 - info.slab_count) * 64;
	while (bl_heap_alloc(&b->heap, 64, T_REC_TEST, &err))
		n++;
	ASSERT_EQ(ENOSPC, err);
	ASSERT_EQ(0, blamer_heap_info(b, &info));
	ASSERT_EQ(4, info.slab_count);
	/* every byte was handed out (but rounding slack): slab tails too */
	ASSERT_GE((uint64_t)n * 64, 4 * 16384 - used0 - 4 * 64);
	t_close(self, b);
}

TEST_F(ctx, corrupt_heap_is_not_written)
{
	struct blamer_config c;
	struct blamer_slab_header *sh;
	struct blamer_heap_info info;
	struct blamer *b;
	uint8_t *copy;
	int err = 0;

	c = t_cfg(self->dir, 65536, 4);
	ASSERT_EQ(0, t_open(self, &c, &b));
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "t", 0, 0));
	blamer_pop(b);
	/* somebody scribbles over the next record to be handed out (a large
	 * one: small ones come from the thread's buffer) */
	sh = (void *)b->heap.slabs[0].base;
	b->heap.slabs[0].base[sh->freeptr + 4] = 0x55;
	ASSERT_EQ(0, bl_heap_alloc(&b->heap, 1024, T_REC_TEST, &err));
	ASSERT_EQ(EIO, err);
	ASSERT_EQ(0, blamer_heap_info(b, &info));
	ASSERT_TRUE(info.flags & BLAMER_HEAP_F_CORRUPT);
	/* from now on nothing is written */
	copy = malloc(b->heap.slabs[0].size);
	ASSERT_NE(NULL, copy);
	memcpy(copy, b->heap.slabs[0].base, b->heap.slabs[0].size);
	ASSERT_EQ(-EIO, blamer_push(b, BLAMER_ACTIVITY_TASK, "t", 0, 0));
	blamer_pop(b);
	ASSERT_EQ(NULL, blamer_set_int(b, BLAMER_DATA_PROCESS, "x", 1));
	ASSERT_NE(0, blamer_dag_node(b, 5, 1, "n"));
	ASSERT_EQ(0, memcmp(copy, b->heap.slabs[0].base, b->heap.slabs[0].size));
	free(copy);
	t_close(self, b);
}

TEST_F(ctx, list_loop_is_corrupt)
{
	struct blamer_config c;
	struct bl_iter it = { 0 };
	struct blamer_block *blk;
	blamer_ref r1, r2;
	struct blamer *b;
	int err = 0, n = 0;

	c = t_cfg(self->dir, 65536, 1);
	ASSERT_EQ(0, t_open(self, &c, &b));
	r1 = bl_heap_alloc(&b->heap, 64, T_REC_TEST, &err);
	r2 = bl_heap_alloc(&b->heap, 64, T_REC_TEST, &err);
	ASSERT_TRUE(bl_heap_make_iterable(&b->heap, r1));
	ASSERT_TRUE(bl_heap_make_iterable(&b->heap, r2));
	ASSERT_TRUE(bl_heap_make_iterable(&b->heap, r2));	/* idempotent */
	/* r2 -> r1: a loop */
	blk = bl_ptr(&b->heap, r2);
	blk->next = r1;
	while (bl_heap_next(&b->heap, &it, NULL))
		ASSERT_LT(++n, 1000000);
	ASSERT_TRUE(bl_heap_flags(&b->heap) & BLAMER_HEAP_F_CORRUPT);
	/* a bad ref on the list ends the walk and marks corruption too */
	t_close(self, b);
}

TEST_HARNESS_MAIN
