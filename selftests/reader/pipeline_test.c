// SPDX-License-Identifier: MIT
/*
 * reader-unit, the per-heap pipeline (lib/reader/pipeline.c) driven by a
 * backend of the test's own: a third backend is a set of ops and nothing
 * else, and the rules every heap goes through hold whatever the backend
 * (a dead heap summarized or read in full, a kept decoding reused only
 * while its slabs are the same and the backend lets it be kept, a listing
 * with nothing of a heap not shown, a failed listing ending no snapshot).
 * Built with ASan and UBSan.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"

#include "testsupport.h"
#include "reader/internal.h"	/* the reader's own, for white-box tests */
#include "rtest.h"

#define NHEAPS 3

/* The test's backend: heaps in memory, and what the pipeline asked of it. */
static struct {
	struct fx_heap heap[NHEAPS];
	bool dead[NHEAPS];
	bool no_heap[NHEAPS];	/* read() says: nothing of a heap */
	uint64_t version[NHEAPS];	/* what identify() says of its slabs */
	unsigned nheaps, at, cur;
	int list_ret;
	bool keepable;
	/* counted */
	unsigned reads[NHEAPS], identifies, ends;
	bool headers_only[NHEAPS];
} mem;

static int mem_list(struct blamer_reader *r, struct blamer_snapshot *s, char *err, size_t errlen)
{
	if (mem.list_ret)
		snprintf(err, errlen, "listing failed");
	mem.at = 0;
	return mem.list_ret;
}

static uint32_t mem_next(struct blamer_reader *r)
{
	if (mem.at >= mem.nheaps)
		return 0;
	mem.cur = mem.at++;
	return mem.heap[mem.cur].nslabs;
}

static void mem_facts(struct blamer_reader *r, struct rd_walk *w)
{
	w->p->pid = 100 + (int32_t)mem.cur;
	w->p->start_time_ns = 1000 + mem.cur;
	w->p->heap_key = mem.cur + 1;
	w->p->state = mem.dead[mem.cur] ? BLAMER_PROC_DEAD : BLAMER_PROC_LIVE;
}

static void mem_ids(struct rd_walk *w)
{
	uint32_t i;

	for (i = 0; i < w->n; i++)
		w->ks[i] = (struct rd_kept_slab){ .id = i, .v = { mem.version[mem.cur] } };
}

static bool mem_identify(struct blamer_reader *r, struct rd_walk *w)
{
	mem.identifies++;
	mem_ids(w);
	return true;
}

static enum rd_got mem_read(struct blamer_reader *r, struct rd_walk *w, struct rd_slab *raw,
			    uint32_t *nraw)
{
	struct fx_heap *h = &mem.heap[mem.cur];
	uint32_t i;

	mem.reads[mem.cur]++;
	mem.headers_only[mem.cur] = w->headers_only;
	for (i = 0; i < h->nslabs; i++) {
		memset(&raw[i], 0, sizeof(raw[i]));
		raw[i].buf = h->slab[i];
		raw[i].size = raw[i].real_size = h->size[i];
		raw[i].fd = -1;
		raw[i].id = i;
	}
	*nraw = h->nslabs;
	w->p->nslabs = h->nslabs;
	if (w->keep)
		mem_ids(w);
	return mem.no_heap[mem.cur] ? RD_GOT_NO_HEAP : RD_GOT_SLABS;
}

static bool mem_keepable(struct blamer_reader *r, const struct rd_walk *w)
{
	return mem.keepable;
}

static void mem_end(struct blamer_reader *r)
{
	mem.ends++;
}

static void mem_close(struct blamer_reader *r)
{
}

static struct rd_backend_ops mem_ops = {
	.list = mem_list,
	.next = mem_next,
	.facts = mem_facts,
	.identify = mem_identify,
	.read = mem_read,
	.keepable = mem_keepable,
	.end = mem_end,
	.close = mem_close,
};

static struct blamer_reader *mem_reader(uint32_t flags)
{
	struct blamer_reader *r = calloc(1, sizeof(*r));
	unsigned i;

	memset(&mem, 0, sizeof(mem));
	for (i = 0; i < NHEAPS; i++)
		fx_standard(&mem.heap[i], 100 + i, 1000 + i, 1);
	mem.nheaps = NHEAPS;
	mem.keepable = true;
	if (r) {
		r->ops = &mem_ops;
		r->opts.flags = flags;
		r->opts.max_retries = RD_DEFAULT_RETRIES;
		r->opts.max_slab_bytes = RD_DEFAULT_MAX_SLAB;
		r->devfd = -1;
	}
	return r;
}

static void mem_reader_free(struct blamer_reader *r)
{
	unsigned i;

	rd_keep_free(&r->keep);
	rd_scratch_free(&r->scratch);
	free(r);
	for (i = 0; i < NHEAPS; i++)
		fx_free(&mem.heap[i]);
}

/* One snapshot through the pipeline: its processes, or NULL; *@ret its answer. */
static struct blamer_snapshot *snap(struct blamer_reader *r, int *ret)
{
	struct blamer_snapshot *s = rd_snapshot_new(NULL);
	char err[128] = "";

	if (!s)
		return NULL;
	*ret = rd_pipeline_snapshot(r, s, err, sizeof(err));
	return s;
}

static size_t threads_of(const struct blamer_snapshot *s, int32_t pid)
{
	const struct blamer_snap_process *p = by_pid(s, pid);

	return p ? p->nthreads : (size_t)-1;
}

/* Every heap the backend lists is read and parsed whole, live or dead
 * (BLAMER_READ_DEAD_FULL), and shown with what the backend says of it. */
TEST(every_heap_listed_is_read_through_the_ops)
{
	struct blamer_reader *r = mem_reader(BLAMER_READ_DEAD_FULL);
	struct blamer_snapshot *s;
	int ret = -1;
	unsigned i;

	ASSERT_NE(NULL, r);
	mem.dead[1] = true;
	s = snap(r, &ret);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(0, ret);
	ASSERT_EQ(NHEAPS, s->nprocs);
	for (i = 0; i < NHEAPS; i++) {
		const struct blamer_snap_process *p = by_pid(s, 100 + (int32_t)i);

		ASSERT_NE(NULL, p);
		EXPECT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%u: %s", i, p->problem);
		EXPECT_EQ(2u, p->nthreads);
		EXPECT_EQ(1u, mem.reads[i]);
		EXPECT_FALSE(mem.headers_only[i]);
		EXPECT_EQ(i == 1 ? BLAMER_PROC_DEAD : BLAMER_PROC_LIVE, p->state);
	}
	EXPECT_EQ(1u, mem.ends);
	blamer_snapshot_free(s);
	mem_reader_free(r);
}

/* A backend that summarizes dead heaps gets them to read as headers only,
 * unless BLAMER_READ_DEAD_FULL; one that does not, in full. */
TEST(dead_heaps_are_summarized_as_the_backend_says)
{
	static const uint32_t flags[] = { 0, BLAMER_READ_DEAD_FULL };
	unsigned f, summarize;

	for (summarize = 0; summarize < 2; summarize++) {
		for (f = 0; f < 2; f++) {
			struct blamer_reader *r = mem_reader(flags[f]);
			struct blamer_snapshot *s;
			int ret = -1;

			ASSERT_NE(NULL, r);
			mem_ops.summarize_dead = summarize;
			mem.dead[0] = true;
			s = snap(r, &ret);
			ASSERT_NE(NULL, s);
			EXPECT_EQ(0, ret);
			EXPECT_EQ(summarize && !flags[f], mem.headers_only[0]);
			EXPECT_FALSE(mem.headers_only[1]);	/* a live heap: in full */
			EXPECT_EQ(summarize && !flags[f] ? 0u : 2u, threads_of(s, 100));
			blamer_snapshot_free(s);
			mem_reader_free(r);
		}
	}
	mem_ops.summarize_dead = false;
}

/* A dead heap's decoding is kept (BLAMER_READ_KEEP_DEAD) and reused
 * without a read while the backend identifies its slabs as the same; read
 * again once it does not; never kept where the backend says no. */
TEST(a_kept_dead_heap_is_reused_only_while_its_slabs_are_the_same)
{
	struct blamer_reader *r = mem_reader(BLAMER_READ_DEAD_FULL | BLAMER_READ_KEEP_DEAD);
	struct blamer_snapshot *s;
	int ret = -1;

	ASSERT_NE(NULL, r);
	mem.dead[1] = true;
	s = snap(r, &ret);
	EXPECT_EQ(0, ret);
	blamer_snapshot_free(s);
	EXPECT_EQ(1u, mem.reads[1]);
	EXPECT_EQ(0u, mem.identifies);	/* nothing kept yet to compare with */

	s = snap(r, &ret);	/* reused: identified, not read */
	ASSERT_NE(NULL, s);
	EXPECT_EQ(1u, mem.reads[1]);
	EXPECT_EQ(2u, mem.reads[0]);	/* a live heap is read every time */
	EXPECT_EQ(1u, mem.identifies);
	EXPECT_EQ(2u, threads_of(s, 101));
	EXPECT_EQ(BLAMER_PROC_DEAD, by_pid(s, 101)->state);
	blamer_snapshot_free(s);

	mem.version[1] = 2;	/* its slabs changed: read again */
	s = snap(r, &ret);
	EXPECT_EQ(2u, mem.reads[1]);
	EXPECT_EQ(2u, threads_of(s, 101));
	blamer_snapshot_free(s);

	mem.keepable = false;	/* changed again, and the backend says no: */
	mem.version[1] = 3;	/* read each time, never kept */
	s = snap(r, &ret);
	blamer_snapshot_free(s);
	EXPECT_EQ(3u, mem.reads[1]);
	s = snap(r, &ret);
	blamer_snapshot_free(s);
	EXPECT_EQ(4u, mem.reads[1]);
	EXPECT_EQ(2u, threads_of(s = snap(r, &ret), 101));
	blamer_snapshot_free(s);
	EXPECT_EQ(5u, mem.reads[1]);
	mem_reader_free(r);
}

/* Slabs with nothing of a heap are no process; a listing that failed is
 * the snapshot's error, and ends no snapshot (what was kept stays). */
TEST(no_heap_is_not_shown_and_a_failed_listing_ends_nothing)
{
	struct blamer_reader *r = mem_reader(BLAMER_READ_DEAD_FULL | BLAMER_READ_KEEP_DEAD);
	struct blamer_snapshot *s;
	int ret = -1;

	ASSERT_NE(NULL, r);
	mem.no_heap[2] = true;
	mem.dead[1] = true;
	s = snap(r, &ret);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(0, ret);
	EXPECT_EQ(2u, s->nprocs);
	EXPECT_EQ(NULL, by_pid(s, 102));
	blamer_snapshot_free(s);

	mem.list_ret = -EIO;
	s = snap(r, &ret);
	EXPECT_EQ(-EIO, ret);
	EXPECT_EQ(0u, s->nprocs);
	EXPECT_EQ(1u, mem.ends);	/* only the first snapshot's */
	blamer_snapshot_free(s);

	mem.list_ret = 0;
	s = snap(r, &ret);	/* the dead heap kept before the failure: reused */
	EXPECT_EQ(1u, mem.reads[1]);
	EXPECT_EQ(2u, threads_of(s, 101));
	blamer_snapshot_free(s);
	mem_reader_free(r);
}

TEST_HARNESS_MAIN
