// SPDX-License-Identifier: MIT
/*
 * reader-unit, the parse of one heap: valid, versions, slabs in any
 * order, truncated, torn, hostile (list loops, huge counts, bad
 * references, strings), a writer racing the reader. Built with ASan and
 * UBSan.
 */
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "clock.h"
#include "testsupport.h"
#include "reader/internal.h"	/* the reader's own, for white-box tests */
#include "rtest.h"

static const struct blamer_snap_field *field(const struct blamer_snap_fields *f,
					     const char *name)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].name, name))
			return &f->v[i];
	return NULL;
}

TEST(valid_heap_reads_completely)
{
	struct fx_heap h;
	struct blamer_snapshot *s;
	const struct blamer_snap_process *p;
	const struct blamer_snap_field *f;

	fx_standard(&h, 4242, 777, 1);
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(1, s->nprocs);
	p = &s->procs[0];
	EXPECT_EQ(BLAMER_HEALTH_OK, p->health);
	EXPECT_STREQ("", p->problem);
	EXPECT_TRUE(p->have_record);
	EXPECT_EQ(4242, p->rec_pid);
	EXPECT_EQ(BLAMER_PHASE_MAIN_LOOP, p->phase);
	EXPECT_STREQ("/usr/bin/app --worker 1", p->cmdline);
	ASSERT_EQ(2, p->nthreads);
	EXPECT_STREQ("main", p->threads[0].name);
	ASSERT_EQ(3, p->threads[0].nacts);
	EXPECT_STREQ("main-loop", p->threads[0].acts[0].label);
	EXPECT_STREQ("cache-lock", p->threads[0].acts[2].label);
	EXPECT_EQ(BLAMER_ACTIVITY_LOCK_ACQUIRE, p->threads[0].acts[2].kind);
	f = field(&p->threads[0].acts[1].fields, "url_id");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(77, f->u);
	EXPECT_EQ(1, p->threads[1].nacts);
	f = field(&p->user_data, "requests");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(12, f->u);
	f = field(&p->user_data, "role");
	ASSERT_NE(NULL, f);
	EXPECT_STREQ("worker", (const char *)f->bytes);
	f = field(&p->global_data, "debug");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(1, f->u);
	ASSERT_EQ(1, p->nmodules);
	EXPECT_STREQ("/usr/lib/libfoo.so", p->modules[0].path);
	ASSERT_EQ(3, p->nlogs);
	EXPECT_STREQ("started", p->logs[0].text);
	EXPECT_STREQ("cache warm", p->logs[2].text);
	ASSERT_EQ(1, p->nchildren);
	EXPECT_EQ(11, p->children[0].exit_status);
	EXPECT_EQ(4, p->nnodes);
	EXPECT_EQ(3, p->nedges);
	EXPECT_EQ(4, p->npaths);
	/* 4 paths x (cpu_ns, bytes) */
	EXPECT_EQ(8, s->ntotals);
	EXPECT_STREQ("frame", blamer_snap_node_name(s, FX_FRAME));
	EXPECT_EQ(2 * FX_SLAB, p->size);
	EXPECT_GT(p->used, 2 * 64);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/* The conversion of heap stamps, on numbers worked out by hand. */
TEST(clock_conversion)
{
	const struct bl_clock mono = { BLAMER_CLOCK_MONOTONIC, 0, 0 };
	const struct bl_clock heap = { BLAMER_CLOCK_TSC, 1000000, 5000000 };
	const struct bl_clock now = { BLAMER_CLOCK_TSC, 3000000, 6000000 }; /* 0.5 ns/tick */
	struct bl_clock bad;

	EXPECT_EQ(123456789, bl_clock_to_ns(&mono, &now, 123456789));
	EXPECT_EQ(5000000, bl_clock_to_ns(&heap, &now, 1000000));	/* the anchor */
	EXPECT_EQ(6000000, bl_clock_to_ns(&heap, &now, 3000000));	/* ours */
	EXPECT_EQ(5500000, bl_clock_to_ns(&heap, &now, 2000000));
	EXPECT_EQ(6500000, bl_clock_to_ns(&heap, &now, 4000000));	/* pushed after our pair */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &now, 0));			/* never stamped */
	EXPECT_EQ(4750000, bl_clock_to_ns(&heap, &now, 500000));	/* 0.25 ms early */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &now, heap.anchor_tsc - 4000000000ull)); /* 2 s early */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &now, 1ull << 62));		/* years after ours */
	EXPECT_EQ(60006000000, bl_clock_to_ns(&heap, &now, 120003000000ull)); /* 60 s after */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &now, 120005000000ull));	/* 61 s after */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &mono, 2000000));	/* a reader without a TSC */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &heap, 2000000));	/* no interval */
	bad = now;
	bad.anchor_tsc = 500000;	/* reader's TSC before the heap's: another boot */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &bad, 2000000));
	bad = now;
	bad.anchor_tsc = 1000001;	/* 1 ms in one tick: no TSC is that slow */
	EXPECT_EQ(0, bl_clock_to_ns(&heap, &bad, 1000001));
	bad = heap;
	bad.kind = 7;
	EXPECT_EQ(0, bl_clock_to_ns(&bad, &now, 2000000));
}

/*
 * A heap stamped with this machine's TSC reads back as CLOCK_MONOTONIC:
 * an anchor taken now, an activity stamped 10 ms later, both converted by
 * the snapshot. Unknown clocks are reported, and their stamps are 0.
 */
TEST(tsc_heap_reads_as_monotonic)
{
	uint64_t anchor_tsc, anchor_ns, t0, t1;
	const struct blamer_snap_activity *a;
	struct blamer_snapshot *s;
	struct fx_heap h;
	blamer_ref th;

	if (!BL_HAVE_TSC)
		SKIP(return, "no TSC on this architecture");
	fx_init(&h, 1, FX_SLAB, 4242, 777);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "tsc-app");
	bl_clock_pair(&anchor_tsc, &anchor_ns);
	fx_clock(&h, BLAMER_CLOCK_TSC, anchor_tsc, anchor_ns);
	th = fx_thread(&h, 4242, "main", 4);
	usleep(10000);
	t0 = bl_monotonic_ns();
	fx_push(&h, th, BLAMER_ACTIVITY_TASK, "stamped", bl_tsc(), 0);
	t1 = bl_monotonic_ns();
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(1, s->nprocs);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health) TH_LOG("%s", s->procs[0].problem);
	ASSERT_EQ(1, s->procs[0].nthreads);
	ASSERT_EQ(1, s->procs[0].threads[0].nacts);
	a = &s->procs[0].threads[0].acts[0];
	EXPECT_GE(a->time_ns + 20000, t0);
	EXPECT_LE(a->time_ns, t1 + 20000);
	EXPECT_GE(a->time_ns, anchor_ns + 10000000);
	blamer_snapshot_free(s);

	fx_clock(&h, 9, anchor_tsc, anchor_ns);
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	EXPECT_NE(NULL, strstr(s->procs[0].problem, "clock"));
	ASSERT_EQ(1, s->procs[0].nthreads);
	EXPECT_EQ(0, s->procs[0].threads[0].acts[0].time_ns);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/* Format 3: role and instance, the drop counters, values and labels cut
 * by their writer and marked so; hostile role bytes are made printable. */
TEST(format_3_role_drops_and_cut_marks)
{
	uint64_t counts[BLAMER_DROP_REASONS + 2] = { 0 };
	char label[BLAMER_LABEL_MAX + 1];
	const struct blamer_snap_process *p;
	const struct blamer_snap_field *f;
	struct blamer_snapshot *s;
	struct blamer_field *raw;
	blamer_ref t, ud;
	struct fx_heap h;

	fx_init(&h, 1, FX_SLAB, 4343, 777);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "/srv/prefork");
	counts[BLAMER_DROP_STRING_CUT] = 3;
	counts[BLAMER_DROP_LABEL_CUT] = 1;
	counts[BLAMER_DROP_REASONS + 1] = 5;	/* a newer writer's reason */
	fx_drops(&h, "work\x1b[2Jer", "2", counts, BLAMER_DROP_REASONS + 2);
	ud = fx_userdata(&h, BLAMER_DATA_PROCESS, 128, 1);
	fx_field_str(&h, ud, "client", "127.0.0.");
	raw = (struct blamer_field *)((struct blamer_userdata *)fx_at(&h, ud))->fields;
	raw->value_size |= BLAMER_VALUE_CUT;
	fx_field_str(&h, ud, "whole", "yes");
	((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->user_data = ud;
	t = fx_thread(&h, 4343, "main", 2);
	memset(label, 'r', BLAMER_LABEL_MAX);
	label[BLAMER_LABEL_MAX] = 0;
	fx_push(&h, t, BLAMER_ACTIVITY_TASK, label, 1, 0);
	((struct blamer_thread *)fx_at(&h, t))->stack[0].flags = BLAMER_ACT_F_LABEL_CUT;
	fx_push(&h, t, BLAMER_ACTIVITY_TASK, "GET /a", 2, 0);
	/* past the NUL: bytes that mean nothing */
	memset(((struct blamer_thread *)fx_at(&h, t))->stack[1].label + 7, 'x', 20);
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	p = &s->procs[0];
	EXPECT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%s", p->problem);
	EXPECT_STREQ("work?[2Jer", p->role);
	EXPECT_STREQ("2", p->instance);
	EXPECT_EQ(3, p->drops[BLAMER_DROP_STRING_CUT]);
	EXPECT_EQ(1, p->drops[BLAMER_DROP_LABEL_CUT]);
	EXPECT_EQ(5, p->drops[BLAMER_DROP_REASONS + 1]);
	EXPECT_EQ(9, p->dropped);
	f = field(&p->user_data, "client");
	ASSERT_NE(NULL, f);
	EXPECT_TRUE(f->cut);
	EXPECT_EQ(8, f->len);
	f = field(&p->user_data, "whole");
	ASSERT_NE(NULL, f);
	EXPECT_FALSE(f->cut);
	ASSERT_EQ(1, p->nthreads);
	ASSERT_EQ(2, p->threads[0].nacts);
	EXPECT_TRUE(p->threads[0].acts[0].label_cut);
	EXPECT_EQ(BLAMER_LABEL_MAX, strlen(p->threads[0].acts[0].label));
	EXPECT_FALSE(p->threads[0].acts[1].label_cut);
	EXPECT_STREQ("GET /a", p->threads[0].acts[1].label);
	blamer_snapshot_free(s);
	/* a role not yet final is not shown */
	((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->role_state = BLAMER_ROLE_WRITING;
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("", s->procs[0].role);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/* A version 2 heap (fuzz/corpus/v2-standard, the standard fixture as a
 * version 2 writer made it; make fuzz-corpus leaves it alone): 64-byte activity slots with 16-byte labels, a 336-byte process
 * record, no role or drops; read as it always was. */
TEST(version_2_heaps_are_still_read)
{
	char path[4096];
	uint8_t *buf = malloc(1 << 20);
	struct blamer_mem_slab m[4];
	struct blamer_snapshot *s;
	const struct blamer_snap_process *p;
	size_t n, each, i;
	unsigned k;
	FILE *f;

	ASSERT_NE(NULL, buf);
	snprintf(path, sizeof(path), "%s/corpus/v2-standard", FUZZ_DIR);
	f = fopen(path, "rb");
	ASSERT_NE(NULL, f);
	n = fread(buf, 1, 1 << 20, f);
	fclose(f);
	ASSERT_GT(n, 1);
	k = buf[0] + 1u;	/* byte 0: the slab count - 1 (testsupport/judge.c) */
	memmove(buf, buf + 1, --n);	/* the slabs, 8-aligned */
	ASSERT_EQ(2, ((struct blamer_slab_header *)buf)->version);
	each = n / k;
	for (i = 0; i < k; i++) {
		m[i].data = buf + i * each;
		m[i].size = i + 1 == k ? n - i * each : each;
	}
	ASSERT_EQ(0, blamer_snapshot_from_memory(m, k, &s));
	p = &s->procs[0];
	EXPECT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%s", p->problem);
	EXPECT_STREQ("/usr/bin/app --worker 1", p->cmdline);
	EXPECT_STREQ("", p->role);
	EXPECT_EQ(0, p->dropped);
	ASSERT_GE(p->nthreads, 1);
	ASSERT_EQ(3, p->threads[0].nacts);
	EXPECT_STREQ("cache-lock", p->threads[0].acts[2].label);
	EXPECT_FALSE(p->threads[0].acts[2].label_cut);
	blamer_snapshot_free(s);
	free(buf);
}

TEST(other_format_versions_are_named)
{
	struct fx_heap h;
	struct blamer_snapshot *s;

	fx_standard(&h, 4242, 777, 1);
	((struct blamer_slab_header *)h.slab[0])->version = 1;
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(1, s->nprocs);
	EXPECT_EQ(BLAMER_HEALTH_UNREADABLE, s->procs[0].health);
	EXPECT_STREQ("heap format version 1 (this reader reads 2 to 3)", s->procs[0].problem);
	blamer_snapshot_free(s);
	fx_free(&h);
}

TEST(slabs_in_any_order)
{
	struct fx_heap h;
	struct blamer_mem_slab m[2], r[2];
	struct blamer_snapshot *s;

	fx_standard(&h, 1, 1, 1);
	fx_mem(&h, m);
	r[0] = m[1];
	r[1] = m[0];
	ASSERT_EQ(0, blamer_snapshot_from_memory(r, 2, &s));
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	EXPECT_EQ(4, s->procs[0].npaths);
	blamer_snapshot_free(s);
	fx_free(&h);
}

TEST(every_truncation_is_safe)
{
	struct fx_heap h;
	struct blamer_mem_slab m[2];
	size_t cut, slab;

	fx_standard(&h, 1, 1, 1);
	fx_mem(&h, m);
	for (slab = 0; slab < 2; slab++) {
		struct blamer_slab_header *sh = (void *)h.slab[slab];

		for (cut = 0; cut < FX_SLAB; cut += 8) {
			struct blamer_mem_slab t[2] = { m[0], m[1] };
			struct blamer_snapshot *s;
			uint8_t *copy = malloc(cut ? cut : 1);

			memcpy(copy, h.slab[slab], cut);
			t[slab].data = copy;
			t[slab].size = cut;
			ASSERT_EQ(0, blamer_snapshot_from_memory(t, 2, &s));
			/* cutting into used bytes can never look healthy */
			if (cut < sh->freeptr)
				EXPECT_NE(BLAMER_HEALTH_OK, s->procs[0].health);
			blamer_snapshot_free(s);
			free(copy);
		}
	}
	fx_free(&h);
}

TEST(list_loops_terminate_as_corrupt)
{
	int from, to;

	/* 4->4, 4->3, 4->1 as in Chromium's MaliciousTest, and more */
	for (from = 0; from < 6; from++) {
		for (to = 0; to <= from; to++) {
			struct fx_heap h;
			struct blamer_snapshot *s;

			fx_standard(&h, 1, 1, 1);
			((struct blamer_block *)fx_at(&h, fx_nth_record(&h, from)))->next =
				fx_nth_record(&h, to);
			s = read_heap(&h);
			ASSERT_NE(NULL, s);
			EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
			EXPECT_NE(NULL, strstr(s->procs[0].problem, "loop"));
			blamer_snapshot_free(s);
			fx_free(&h);
		}
	}
}

TEST(bad_references_are_corrupt_not_fatal)
{
	blamer_ref bad[] = {
		blamer_make_ref(7, 64),		/* no such slab */
		blamer_make_ref(0, 12),		/* inside the slab header */
		blamer_make_ref(0, 1001),	/* misaligned */
		blamer_make_ref(1, FX_SLAB - 8), /* block header past the end */
		blamer_make_ref(0, 0xfffffff8u),
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fx_heap h;
		struct blamer_snapshot *s;

		fx_standard(&h, 1, 1, 1);
		((struct blamer_block *)fx_at(&h, fx_nth_record(&h, 3)))->next = bad[i];
		s = read_heap(&h);
		ASSERT_NE(NULL, s);
		EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
		/* what came before the bad link is still there */
		EXPECT_TRUE(s->procs[0].have_record);
		EXPECT_GE(s->procs[0].nthreads, 1);
		blamer_snapshot_free(s);
		fx_free(&h);
	}
}

TEST(huge_counts_are_refused)
{
	struct fx_heap h;
	struct blamer_snapshot *s;
	struct blamer_thread *t;
	struct blamer_log *l;
	struct blamer_userdata *u;
	blamer_ref tr, lr, ur;

	fx_init(&h, 1, FX_SLAB, 5, 5);
	fx_process(&h, 1, "x");
	tr = fx_thread(&h, 5, "t", 2);
	lr = fx_log(&h, 1);
	ur = fx_userdata(&h, BLAMER_DATA_PROCESS, 64, 1);
	t = fx_at(&h, tr);
	t->stack_slots = 0xffffffffu;
	t->depth = 0xfffffff0u;
	l = fx_at(&h, lr);
	l->slot_count = 1u << 30;
	u = fx_at(&h, ur);
	u->capacity = 0xffffff00u;
	u->used = 0xffffff00u;
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	EXPECT_EQ(0, s->procs[0].nthreads);
	EXPECT_EQ(0, s->procs[0].nlogs);
	EXPECT_EQ(0, s->procs[0].user_data.n);
	blamer_snapshot_free(s);
	fx_free(&h);

	/* a zero record_size field must not loop forever */
	fx_init(&h, 1, FX_SLAB, 5, 5);
	fx_process(&h, 1, "x");
	ur = fx_userdata(&h, BLAMER_DATA_PROCESS, 64, 1);
	fx_field_u64(&h, ur, "a", 1);
	((struct blamer_field *)((struct blamer_userdata *)fx_at(&h, ur))->fields)->record_size = 0;
	((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->user_data = ur;
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	blamer_snapshot_free(s);
	fx_free(&h);

	/* path depth beyond the format's maximum */
	fx_init(&h, 1, FX_SLAB, 5, 5);
	{
		uint64_t n[1] = { 1 };
		blamer_ref pr = fx_path(&h, n, 1, 1, 1);

		((struct blamer_dag_path *)fx_at(&h, pr))->depth = 9;
	}
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	EXPECT_EQ(0, s->ntotals);
	blamer_snapshot_free(s);
	fx_free(&h);
}

TEST(torn_records_are_marked_not_shown)
{
	struct fx_heap h;
	struct blamer_snapshot *s;
	struct blamer_log *l;
	const struct blamer_snap_field *f;
	struct blamer_field *fld;
	blamer_ref ud;

	fx_standard(&h, 1, 1, 1);
	/* a log slot and a string field frozen mid-write (odd seq) */
	l = fx_at(&h, ((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->log);
	l->slots[1].seq = 3;
	ud = ((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->user_data;
	fld = (struct blamer_field *)((struct blamer_userdata *)fx_at(&h, ud))->fields;
	fld = (struct blamer_field *)((uint8_t *)fld + fld->record_size);	/* "role" */
	fld->seq = 1;
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_HEALTH_TORN, s->procs[0].health);
	EXPECT_EQ(2, s->procs[0].torn_records);
	EXPECT_EQ(2, s->procs[0].nlogs);	/* the torn one left out */
	f = field(&s->procs[0].user_data, "role");
	ASSERT_NE(NULL, f);
	EXPECT_TRUE(f->torn);
	EXPECT_EQ(NULL, f->bytes);
	f = field(&s->procs[0].user_data, "requests");
	ASSERT_NE(NULL, f);
	EXPECT_FALSE(f->torn);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/*
 * A copy whose version is newer than its data (copy.c): the bytes a first
 * pread() of a dir slab got show a module's seq already even again after
 * an update, and its path from before the update, because the copy loaded
 * them in that order; the second read and the file hold the whole new
 * state. Comparing the version alone accepted the old path; the two
 * copies differ, so the reader reads again and shows the new one.
 */
TEST(a_version_copied_after_its_data_is_not_trusted)
{
	struct blamer_snap_process p = { 0 };
	struct rd_slab raw = { 0 }, ordered[BLAMER_MAX_SLABS] = { { 0 } };
	struct rd_heap rh = { .slabs = ordered, .retries = 10, .p = &p,
			      .s = rd_snapshot_new(NULL) };
	char file[] = "/tmp/blamer-reader-test.XXXXXX";
	struct blamer_module *m;
	struct fx_heap h;
	uint8_t *early;
	int fd;

	fx_init(&h, 1, FX_SLAB, 1, 1);
	fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "t");
	fx_module(&h, "/lib/new.so", 0x1000);
	fd = mkstemp(file);
	ASSERT_GE(fd, 0);
	unlink(file);
	ASSERT_EQ(FX_SLAB, (size_t)pwrite(fd, h.slab[0], FX_SLAB, 0));
	early = malloc(FX_SLAB);
	ASSERT_NE(NULL, early);
	memcpy(early, h.slab[0], FX_SLAB);
	m = (struct blamer_module *)(early + ((uint8_t *)fx_at(&h, fx_nth_record(&h, 1)) -
					      h.slab[0]));
	ASSERT_EQ(0, memcmp(m->path, "/lib/new.so", 11));
	memcpy(m->path, "/lib/old.so", 11);	/* seq stays 2: even */
	raw.buf = early;
	raw.again = h.slab[0];	/* the second read: after the update */
	raw.size = FX_SLAB;
	raw.fd = fd;
	raw.owned = true;
	ASSERT_TRUE(rd_heap_order(&rh, &raw, 1));
	rd_heap_parse(&rh);
	ASSERT_EQ(1, p.nmodules);
	EXPECT_STREQ("/lib/new.so", p.modules[0].path);
	EXPECT_EQ(BLAMER_HEALTH_OK, p.health);
	rd_process_free(&p);
	blamer_snapshot_free(rh.s);
	rd_slab_drop(&raw);
	fx_free(&h);
}

TEST(uninitialized_and_flagged_heaps)
{
	struct fx_heap h;
	struct blamer_snapshot *s;

	fx_standard(&h, 1, 1, 1);
	fx_hh(&h)->state = BLAMER_HEAP_UNINIT;
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_EMPTY, s->procs[0].health);
	blamer_snapshot_free(s);
	fx_hh(&h)->state = 77;
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	blamer_snapshot_free(s);
	fx_hh(&h)->state = BLAMER_HEAP_READY;
	fx_hh(&h)->flags = BLAMER_HEAP_F_CORRUPT;
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	EXPECT_EQ(4, s->procs[0].npaths);	/* still read */
	blamer_snapshot_free(s);
	((struct blamer_slab_header *)h.slab[0])->magic = 0xdead;
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_EMPTY, s->procs[0].health);
	blamer_snapshot_free(s);
	/* two slabs claiming the same index */
	((struct blamer_slab_header *)h.slab[0])->magic = BLAMER_HEAP_MAGIC;
	((struct blamer_slab_header *)h.slab[1])->slab_index = 0;
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_CORRUPT, s->procs[0].health);
	blamer_snapshot_free(s);
	fx_free(&h);
}

TEST(stale_owner_records_are_skipped)
{
	struct fx_heap h;
	struct blamer_snapshot *s;
	blamer_ref t;

	fx_standard(&h, 10, 10, 1);
	h.pid = 99;	/* records made by someone else (e.g. before a fork) */
	t = fx_thread(&h, 99, "stale", 1);
	fx_push(&h, t, BLAMER_ACTIVITY_TASK, "x", 1, 0);
	s = read_heap(&h);
	EXPECT_EQ(BLAMER_HEALTH_OK, s->procs[0].health);
	EXPECT_EQ(2, s->procs[0].nthreads);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/*
 * A command line shows its arguments joined by spaces, every byte that
 * is not printable ASCII a '?' (escape sequences, DEL, UTF-8 and bytes
 * that are not), the trailing NULs gone; runs of printable bytes are
 * copied eight at a time, so the bad bytes sit at several places of a
 * word.
 */
TEST(cmdline_is_printable_whatever_its_bytes)
{
	static const char raw[] = "/usr/bin/app\0--name=\x1b[31mred\x7f\0\xc3\xa9t\xe9\0"
				  "ABCDEFGHIJKLMNOP\x01Q\0";
	struct blamer_snapshot *s;
	struct blamer_process *pr;
	struct fx_heap h;
	size_t i;

	fx_standard(&h, 1, 1, 1);
	for (i = 0; (pr = fx_at(&h, fx_nth_record(&h, (int)i)))->hdr.type != BLAMER_REC_PROCESS; i++)
		ASSERT_LT(i, 20);
	memset(pr->cmdline, 0, sizeof(pr->cmdline));
	memcpy(pr->cmdline, raw, sizeof(raw));
	pr->cmdline_len = sizeof(raw);	/* two NULs at the end */
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	EXPECT_STREQ("/usr/bin/app --name=?[31mred? ??t? ABCDEFGHIJKLMNOP?Q", s->procs[0].cmdline);
	blamer_snapshot_free(s);
	fx_free(&h);
}

TEST(hostile_strings_stay_printable)
{
	struct fx_heap h;
	struct blamer_snapshot *s;
	struct blamer_dag_node *n;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	size_t i;

	fx_standard(&h, 1, 1, 1);
	for (i = 0; (n = fx_at(&h, fx_nth_record(&h, (int)i)))->hdr.type != BLAMER_REC_DAG_NODE; i++)
		ASSERT_LT(i, 20);	/* the first DAG node */
	memcpy(n->name, "a\"b\\c\nd\x01\xff", 10);
	s = read_heap(&h);
	ASSERT_NE(NULL, s);
	f = open_memstream(&buf, &len);
	blamer_snapshot_write_json(s, f, 0, NULL, 0);
	blamer_snapshot_write_prometheus(s, f);
	fclose(f);
	for (i = 0; i < len; i++)
		ASSERT_TRUE(buf[i] == '\n' || (buf[i] >= 0x20 && buf[i] < 0x7f));
	free(buf);
	blamer_snapshot_free(s);
	fx_free(&h);
}

/*
 * A real writer thread pushing and popping on a heap in memory while the
 * reader reads it: a stack the reader accepts (not torn) must be one the
 * writer really had. Each push stamps data[0] with a growing counter, so
 * in any real state the stamps grow from the bottom up; a copy mixing two
 * states (slot 1 from after a re-push, slot 2 from before) would not.
 */
struct race {
	struct fx_heap h;
	blamer_ref t;
	volatile int stop;
};

static void *race_writer(void *arg)
{
	struct race *r = arg;
	struct blamer_thread *t = fx_at(&r->h, r->t);
	uint64_t stamp = 1;
	unsigned seed = 1;

	while (!r->stop) {
		uint32_t d = __atomic_load_n(&t->depth, __ATOMIC_RELAXED);

		seed = seed * 1103515245u + 12345u;
		if (d < 4 && (d == 0 || (seed >> 16) & 1)) {
			t->stack[d].data[0] = stamp++;
			t->stack[d].kind = BLAMER_ACTIVITY_TASK;
			__atomic_store_n(&t->depth, d + 1, __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(&t->depth, d - 1, __ATOMIC_RELEASE);
			__atomic_fetch_add(&t->data_version, 1, __ATOMIC_RELEASE);
		}
	}
	return NULL;
}

TEST(concurrent_writer_never_yields_a_mixed_stack)
{
	struct race r = { 0 };
	pthread_t th;
	int i, torn = 0, ok = 0;

	fx_init(&r.h, 1, FX_SLAB, 1, 1);
	fx_process(&r.h, 1, "race");
	r.t = fx_thread(&r.h, 1, "w", 4);
	ASSERT_EQ(0, pthread_create(&th, NULL, race_writer, &r));
	for (i = 0; i < 20000; i++) {
		struct blamer_snapshot *s = read_heap(&r.h);
		const struct blamer_snap_thread *t;
		size_t k;

		ASSERT_NE(NULL, s);
		ASSERT_EQ(1, s->procs[0].nthreads);
		t = &s->procs[0].threads[0];
		if (t->torn) {
			torn++;
		} else {
			ok++;
			for (k = 1; k < t->nacts; k++)
				ASSERT_LT(t->acts[k - 1].data[0], t->acts[k].data[0]);
		}
		blamer_snapshot_free(s);
	}
	r.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("%d consistent reads, %d marked torn", ok, torn);
	EXPECT_GT(ok, 0);
	fx_free(&r.h);
}

TEST_HARNESS_MAIN
