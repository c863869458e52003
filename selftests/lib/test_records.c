// SPDX-License-Identifier: MIT
/*
 * libblamer writer tests, records: modules, the activity stack, its labels
 * and timestamps, typed user data, the log.
 * Each test runs in a fixture (common.h): a private directory and a
 * context the teardown closes, so a failed assert leaks neither.
 */
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "common.h"

TEST_F(ctx, modules_have_build_ids)
{
	struct blamer_config c;
	struct bl_iter it = { 0 };
	bool libc = false;
	blamer_ref ref;
	struct blamer *b;
	uint32_t t;
	int n;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	n = blamer_modules_refresh(b);
	ASSERT_GE(n, 1);
	/* refreshing again neither duplicates nor loses records */
	ASSERT_EQ(n, blamer_modules_refresh(b));
	while ((ref = bl_heap_next(&b->heap, &it, &t))) {
		struct blamer_module *m = bl_ptr(&b->heap, ref);

		if (t != BLAMER_REC_MODULE)
			continue;
		ASSERT_EQ(1, m->loaded);
		ASSERT_GT(m->size, 0);
		ASSERT_EQ(0, m->seq % 2);
		if (strstr(m->path, "libc.so")) {
			libc = true;
			ASSERT_EQ(20, m->build_id_len);	/* Debian builds use SHA-1 ids */
		}
	}
	/* a static test binary has no libc.so */
	if (!libc)
		TH_LOG("no libc.so loaded (static binary?)");
	t_close(self, b);
}

/* The MODULE records of @b's heap: loaded, and gone. */
static void count_modules(struct blamer *b, uint32_t *loaded, uint32_t *gone)
{
	struct bl_iter it = { 0 };
	blamer_ref ref;
	uint32_t t;

	*loaded = *gone = 0;
	while ((ref = bl_heap_next(&b->heap, &it, &t))) {
		struct blamer_module *m = bl_ptr(&b->heap, ref);

		if (t == BLAMER_REC_MODULE)
			(*(m->loaded ? loaded : gone))++;
	}
}

/*
 * A program that dlopen()s and dlclose()s at new addresses: each refresh
 * finds its modules at addresses no record has. The heap keeps the
 * records of the BL_MODULES_GONE_KEPT modules unloaded last, and makes
 * older ones again for the new: their number stays, where it grew by a
 * record a module a cycle until the heap was full. (Each record is moved
 * to an address of its own here, as a dlclose() and a dlopen() would.)
 */
TEST_F(ctx, modules_gone_are_kept_up_to_a_count)
{
	uint32_t loaded, gone, n, cycle;
	struct blamer_config c;
	struct blamer *b;
	uint64_t used = 0;

	c = t_cfg(self->dir, 0, 0);
	c.flags = 0;	/* modules */
	ASSERT_EQ(0, t_open(self, &c, &b));
	count_modules(b, &n, &gone);
	ASSERT_LE(1, n);
	ASSERT_EQ(0, gone);
	for (cycle = 0; cycle < 3 * BL_MODULES_GONE_KEPT; cycle++) {
		struct bl_iter it = { 0 };
		blamer_ref ref;
		uint32_t t;

		while ((ref = bl_heap_next(&b->heap, &it, &t))) {
			struct blamer_module *m = bl_ptr(&b->heap, ref);

			if (t == BLAMER_REC_MODULE && m->loaded)
				m->base += 1ull << 44;
		}
		ASSERT_EQ((int)n, blamer_modules_refresh(b));
		count_modules(b, &loaded, &gone);
		ASSERT_EQ(n, loaded);
		ASSERT_EQ((cycle + 1) * n < BL_MODULES_GONE_KEPT ? (cycle + 1) * n
								  : BL_MODULES_GONE_KEPT, gone);
		if (cycle == 2 * BL_MODULES_GONE_KEPT)
			used = bl_heap_used(&b->heap);
	}
	EXPECT_EQ(used, bl_heap_used(&b->heap));
	t_close(self, b);
}

TEST_F(ctx, activity_stack)
{
	struct blamer_config c;
	struct blamer_thread *t;
	struct bl_tls_ent *e;
	struct blamer *b;
	int i;

	c = t_cfg(self->dir, 0, 0);
	c.stack_depth = 4;
	ASSERT_EQ(0, t_open(self, &c, &b));
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "a-very-long-label-cut", 7, 8));
	e = bl_thread_get(b);
	ASSERT_NE(NULL, e);
	t = e->rec;
	ASSERT_EQ(gettid(), t->tid);
	ASSERT_EQ(4, t->stack_slots);
	ASSERT_EQ(1, t->depth);
	ASSERT_EQ(BLAMER_ACTIVITY_TASK, t->stack[0].kind);
	ASSERT_EQ(7, t->stack[0].data[0]);
	ASSERT_EQ(8, t->stack[0].data[1]);
	ASSERT_EQ(0, memcmp(t->stack[0].label, "a-very-long-labe", 16));
	ASSERT_NE(0, t->stack[0].timestamp);	/* its meaning: activity_timestamps */
	ASSERT_NE(0, t->stack[0].calling_address);
	for (i = 2; i <= 6; i++)
		ASSERT_EQ(i, blamer_push(b, BLAMER_ACTIVITY_LOCK_ACQUIRE, "lock", i, 0));
	ASSERT_EQ(6, t->depth);
	ASSERT_EQ(2, t->overflows);	/* counted, not lost silently */
	ASSERT_EQ(4, t->stack[3].data[0]);
	for (i = 0; i < 6; i++)
		blamer_pop(b);
	ASSERT_EQ(0, t->depth);
	ASSERT_EQ(6, t->data_version);
	blamer_pop(b);	/* unbalanced: ignored */
	ASSERT_EQ(0, t->depth);
	ASSERT_EQ(0, blamer_thread_set_name(b, "worker-1"));
	ASSERT_STREQ("worker-1", t->name);
	t_close(self, b);
}

/*
 * Labels: every length from 0 to 20 at every offset around a page
 * boundary (the last byte before an unmapped page included) must come
 * out NUL-padded and cut at 16 bytes, as strncpy would copy it, and the
 * copy must never read past the terminating NUL.
 */

TEST_F(ctx, activity_label_every_length_and_offset)
{
	struct blamer_config c;
	struct blamer_thread *t;
	struct blamer *b;
	long pg = sysconf(_SC_PAGESIZE);
	char *mem;
	int len, off;

	c = t_cfg(self->dir, 0, 0);
	c.stack_depth = 4;
	ASSERT_EQ(0, t_open(self, &c, &b));
	/* Two pages, the second made inaccessible: a read past the end of
	 * the first page would fault. */
	mem = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_EQ(0, mprotect(mem + pg, pg, PROT_NONE));
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, NULL, 0, 0));
	t = bl_thread_get(b)->rec;
	ASSERT_EQ(0, t->stack[0].label[0]);
	ASSERT_EQ(0, t->stack[0].flags);
	blamer_pop(b);
	for (len = 0; len <= BLAMER_LABEL_MAX + 8; len++) {
		for (off = pg - 100; off <= pg - len - 1; off++) {
			char *s = mem + off;
			int i, kept = len < (int)BLAMER_LABEL_MAX ? len : (int)BLAMER_LABEL_MAX;

			memset(mem + pg - 104, 'x', 104);	/* garbage after the NUL */
			for (i = 0; i < len; i++)
				s[i] = (char)('a' + (i + off) % 26);
			s[len] = '\0';
			ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, s, 0, 0));
			/* the label, then a NUL unless it fills the slot; cut
			 * and marked past 80 bytes */
			ASSERT_EQ(0, memcmp(t->stack[0].label, s, kept))
				TH_LOG("length %d at page offset %d", len, off);
			if (kept < (int)BLAMER_LABEL_MAX)
				ASSERT_EQ(0, t->stack[0].label[kept]);
			ASSERT_EQ(len > (int)BLAMER_LABEL_MAX ? BLAMER_ACT_F_LABEL_CUT : 0,
				  t->stack[0].flags);
			blamer_pop(b);
		}
	}
	munmap(mem, 2 * pg);
	t_close(self, b);
}

static struct blamer_field *field(struct blamer_userdata *u, const char *name)
{
	uint32_t off = 0;

	while (off + 8 <= u->used) {
		struct blamer_field *f = (void *)(u->fields + off);

		if (!f->type)
			break;
		if (f->name_size == strlen(name) && !memcmp(f + 1, name, f->name_size))
			return f;
		off += f->record_size;
	}
	return NULL;
}

static void *fval(struct blamer_field *f)
{
	return (uint8_t *)(f + 1) + ((f->name_size + 7) & ~7u);
}

/* A heap stamp as CLOCK_MONOTONIC ns, the way a reader converts it. */

static uint64_t stamp_ns(struct blamer *b, uint64_t stamp)
{
	const struct blamer_heap_header *hh = b->heap.hh;
	struct bl_clock heap = { hh->clock, hh->clock_anchor_tsc, hh->clock_anchor_ns };
	struct bl_clock now;

	bl_clock_start(&now, BLAMER_CLOCK_TSC);
	return bl_clock_to_ns(&heap, &now, stamp);
}

/* What BLAMER_CLOCK=auto must choose, found independently of clock.c:
 * the kernel's clocksource and its "nonstop_tsc" CPU flag. */

static uint32_t expected_auto_clock(void)
{
	char line[4096], cs[16] = "";
	bool nonstop = false;
	FILE *f;

	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (f) {
		if (!fgets(cs, sizeof(cs), f))
			cs[0] = 0;
		fclose(f);
	}
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5) && strstr(line, " nonstop_tsc"))
			nonstop = true;
	if (f)
		fclose(f);
	return !strcmp(cs, "tsc\n") && nonstop ? BLAMER_CLOCK_TSC : BLAMER_CLOCK_MONOTONIC;
}

/*
 * Activity timestamps, in every clock this machine allows: each stamp,
 * converted as a reader does, lies between CLOCK_MONOTONIC reads taken
 * around its push, and two pushes 20 ms apart convert 20 ms apart (a rate
 * or unit mistake is off by far more than the tolerance). A bad
 * BLAMER_CLOCK is an error, and so is "tsc" where there is none.
 */

TEST_F(ctx, activity_timestamps)
{
	static const char *const clocks[] = { "monotonic", "tsc", "auto", NULL };
	const uint64_t slack = 20000;	/* ns: the anchor pairs' brackets */
	struct blamer_config c;
	struct blamer *none;
	int i;

	c = t_cfg(self->dir, 0, 0);
	setenv("BLAMER_CLOCK", "sundial", 1);
	ASSERT_EQ(-EINVAL, t_open(self, &c, &none));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "BLAMER_CLOCK"));
	for (i = 0; clocks[i]; i++) {
		uint64_t t0, t1, t2, ns0, ns1;
		struct blamer_thread *t;
		struct blamer *b;
		int ret;

		setenv("BLAMER_CLOCK", clocks[i], 1);
		ret = t_open(self, &c, &b);
		unsetenv("BLAMER_CLOCK");
		if (ret && !strcmp(clocks[i], "tsc") &&
		    expected_auto_clock() == BLAMER_CLOCK_MONOTONIC) {
			ASSERT_EQ(-EINVAL, ret);
			ASSERT_NE(NULL, strstr(blamer_errmsg(), "invariant TSC"));
			TH_LOG("no invariant TSC here: the TSC clock is not tested");
			continue;
		}
		ASSERT_EQ(0, ret) TH_LOG("BLAMER_CLOCK=%s: %s", clocks[i], blamer_errmsg());
		ASSERT_EQ(i == 0 ? BLAMER_CLOCK_MONOTONIC :
			  i == 1 ? BLAMER_CLOCK_TSC : expected_auto_clock(), b->heap.hh->clock);
		if (b->heap.hh->clock == BLAMER_CLOCK_TSC)
			ASSERT_NE(0, b->heap.hh->clock_anchor_tsc);
		t0 = bl_monotonic_ns();
		ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "first", 0, 0));
		t1 = bl_monotonic_ns();
		usleep(20000);
		ASSERT_EQ(2, blamer_push(b, BLAMER_ACTIVITY_TASK, "second", 0, 0));
		t2 = bl_monotonic_ns();
		t = bl_thread_get(b)->rec;
		ns0 = stamp_ns(b, t->stack[0].timestamp);
		ns1 = stamp_ns(b, t->stack[1].timestamp);
		TH_LOG("%s: push %llu ns after t0, second %llu ns later", clocks[i],
		       (unsigned long long)(ns0 - t0), (unsigned long long)(ns1 - ns0));
		ASSERT_GE(ns0 + slack, t0);
		ASSERT_LE(ns0, t1 + slack);
		ASSERT_GE(ns1 + slack, t1 + 20000000);
		ASSERT_LE(ns1, t2 + slack);
		t_close(self, b);
	}
}

TEST_F(ctx, user_data_all_types)
{
	struct blamer_config c;
	struct blamer_userdata *u, *g;
	struct blamer_value *h, *s;
	struct blamer_field *f;
	static const char ext[] = "external";
	struct blamer *b;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	u = bl_ptr(&b->heap, bl_part(b, BL_PART_PROCESS_DATA));
	g = bl_ptr(&b->heap, bl_part(b, BL_PART_GLOBAL_DATA));
	ASSERT_EQ(BLAMER_DATA_PROCESS, u->scope);
	ASSERT_EQ(BLAMER_DATA_GLOBAL, g->scope);
	ASSERT_NE(NULL, blamer_set_bool(b, BLAMER_DATA_PROCESS, "ok", true));
	ASSERT_NE(NULL, blamer_set_char(b, BLAMER_DATA_PROCESS, "grade", 'A'));
	ASSERT_NE(NULL, blamer_set_int(b, BLAMER_DATA_PROCESS, "temp", -40));
	h = blamer_set_uint(b, BLAMER_DATA_PROCESS, "requests", 10);
	ASSERT_NE(NULL, h);
	ASSERT_NE(NULL, blamer_set_double(b, BLAMER_DATA_PROCESS, "load", 0.5));
	s = blamer_set_string(b, BLAMER_DATA_PROCESS, "state", "starting");
	ASSERT_NE(NULL, s);
	ASSERT_NE(NULL, blamer_set_raw(b, BLAMER_DATA_PROCESS, "blob", "\x01\x02\x03", 3));
	ASSERT_NE(NULL, blamer_set_string_ref(b, BLAMER_DATA_PROCESS, "ext", ext, 8));
	ASSERT_NE(NULL, blamer_set_raw_ref(b, BLAMER_DATA_PROCESS, "extraw", ext, 3));
	ASSERT_NE(NULL, blamer_set_string(b, BLAMER_DATA_GLOBAL, "version", "1.2.3"));

	f = field(u, "ok");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(BLAMER_FIELD_BOOL, f->type);
	ASSERT_EQ(1, *(uint8_t *)fval(f));
	ASSERT_EQ('A', *(char *)fval(field(u, "grade")));
	ASSERT_EQ(-40, *(int64_t *)fval(field(u, "temp")));
	ASSERT_EQ(0.5, *(double *)fval(field(u, "load")));
	f = field(u, "state");
	ASSERT_EQ(BLAMER_FIELD_STRING, f->type);
	ASSERT_EQ(8, f->value_size);
	ASSERT_EQ(0, memcmp(fval(f), "starting", 8));
	ASSERT_EQ(0, f->seq % 2);
	f = field(u, "ext");
	ASSERT_EQ(BLAMER_FIELD_STRING_REF, f->type);
	ASSERT_EQ((uintptr_t)ext, ((uint64_t *)fval(f))[0]);
	ASSERT_EQ(8, ((uint64_t *)fval(f))[1]);
	ASSERT_EQ(3, field(u, "blob")->value_size);
	ASSERT_NE(NULL, field(g, "version"));
	ASSERT_EQ(NULL, field(g, "state"));

	/* overwrite in place: same field, no new space */
	{
		uint32_t used = u->used;

		ASSERT_EQ(h, blamer_set_uint(b, BLAMER_DATA_PROCESS, "requests", 11));
		ASSERT_EQ(s, blamer_set_string(b, BLAMER_DATA_PROCESS, "state", "running"));
		ASSERT_EQ(used, u->used);
	}
	ASSERT_EQ(11, *(uint64_t *)fval(field(u, "requests")));
	f = field(u, "state");
	ASSERT_EQ(7, f->value_size);
	ASSERT_EQ(0, memcmp(fval(f), "running", 7));
	ASSERT_EQ(2, f->seq);
	/* longer than the first value: cut to the capacity (8), marked */
	blamer_value_string(s, "shutting-down");
	ASSERT_EQ(8 | BLAMER_VALUE_CUT, f->value_size);
	blamer_value_string(s, "stopped");
	ASSERT_EQ(7, f->value_size);
	/* handles */
	blamer_value_uint(h, 100);
	blamer_value_add(h, 5);
	ASSERT_EQ(105, *(uint64_t *)fval(field(u, "requests")));
	blamer_value_int(h, -1);	/* wrong type: no-op */
	ASSERT_EQ(105, *(uint64_t *)fval(field(u, "requests")));
	/* type clash and bad names are errors */
	ASSERT_EQ(NULL, blamer_set_int(b, BLAMER_DATA_PROCESS, "requests", 1));
	ASSERT_EQ(NULL, blamer_set_int(b, BLAMER_DATA_PROCESS, "", 1));
	ASSERT_EQ(NULL, blamer_set_int(b, 99, "x", 1));
	/* no activity: no activity data */
	ASSERT_EQ(NULL, blamer_set_int(b, BLAMER_DATA_ACTIVITY, "x", 1));
	/* filling the record ends in an error, not an overflow */
	{
		char name[32];
		int i;

		for (i = 0; i < 1000; i++) {
			snprintf(name, sizeof(name), "filler-%d", i);
			if (!blamer_set_uint(b, BLAMER_DATA_PROCESS, name, i))
				break;
		}
		ASSERT_LT(i, 1000);
		ASSERT_LE(u->used, u->capacity);
	}
	t_close(self, b);
}

/* A crafted or damaged record: sets fail with a message, write nothing. */
TEST_F(ctx, user_data_refuses_a_bad_header)
{
	struct blamer_config c;
	struct blamer_userdata *u;
	struct blamer_field *f;
	struct blamer *b;
	uint32_t used;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	ASSERT_NE(NULL, blamer_set_int(b, BLAMER_DATA_PROCESS, "a", 1));
	u = bl_ptr(&b->heap, b->parts[BL_PART_PROCESS_DATA]);
	used = u->used;
	/* used past a header nobody claimed */
	u->used = used + 24;
	ASSERT_EQ(NULL, blamer_set_int(b, BLAMER_DATA_PROCESS, "b", 2));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "corrupt")) TH_LOG("%s", blamer_errmsg());
	/* a field running past the capacity */
	u->used = used;
	f = (void *)(u->fields + used);
	f->name_size = 1;
	f->record_size = 0xfff8;
	ASSERT_EQ(NULL, blamer_set_int(b, BLAMER_DATA_PROCESS, "b", 2));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "corrupt")) TH_LOG("%s", blamer_errmsg());
	/* used past the capacity */
	f->record_size = 0;
	f->name_size = 0;
	u->used = u->capacity + 8;
	ASSERT_EQ(NULL, blamer_set_int(b, BLAMER_DATA_PROCESS, "b", 2));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "capacity")) TH_LOG("%s", blamer_errmsg());
	/* repaired: sets work again, the first field kept its value */
	u->used = used;
	ASSERT_NE(NULL, blamer_set_int(b, BLAMER_DATA_PROCESS, "b", 2));
	ASSERT_EQ(1, *(int64_t *)fval(field(u, "a")));
	t_close(self, b);
}

TEST_F(ctx, activity_data_reused)
{
	struct blamer_config c;
	struct blamer_thread *t;
	struct blamer_userdata *u;
	blamer_ref first;
	struct v_stats st;
	struct v_heap v;
	struct blamer *b;
	int i;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "req", 0, 0));
	ASSERT_NE(NULL, blamer_set_string(b, BLAMER_DATA_ACTIVITY, "url", "/a"));
	t = bl_thread_get(b)->rec;
	first = t->stack[0].user_data;
	ASSERT_NE(0, first);
	u = bl_ptr(&b->heap, first);
	ASSERT_EQ(BLAMER_DATA_ACTIVITY, u->scope);
	ASSERT_NE(NULL, field(u, "url"));
	blamer_pop(b);
	ASSERT_EQ(BLAMER_RETIRED(BLAMER_REC_USERDATA), u->hdr.type);
	ASSERT_EQ(0, u->owner.data_id);
	for (i = 0; i < 100; i++) {
		ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "req", i, 0));
		ASSERT_NE(NULL, blamer_set_uint(b, BLAMER_DATA_ACTIVITY, "n", i));
		ASSERT_EQ(first, t->stack[0].user_data);	/* the same record, reused */
		ASSERT_EQ(NULL, field(u, "url"));		/* and zeroed */
		blamer_pop(b);
	}
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(1, st.retired[BLAMER_REC_USERDATA]);
	t_close(self, b);
}

/*
 * Activities with data nested deeper than the thread keeps spares
 * (BL_SPARE_DATA): the records past the spares are given to the heap's
 * free stack and taken from it again. Before, each round made as many
 * new records as it nested past the spares, and a 2-slab heap was full
 * after some 1,000 rounds of 6.
 */
TEST_F(ctx, activity_data_nested_past_the_spares)
{
	struct blamer_config c;
	struct v_stats st;
	struct v_heap v;
	struct blamer *b;
	uint64_t used = 0;
	int r, d;

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	for (r = 0; r < 300; r++) {
		for (d = 0; d < 10; d++) {
			ASSERT_EQ(d + 1, blamer_push(b, BLAMER_ACTIVITY_TASK, "lvl", d, 0));
			ASSERT_NE(NULL, blamer_set_int(b, BLAMER_DATA_ACTIVITY, "d", r * 10 + d))
				TH_LOG("round %d depth %d: %s", r, d, blamer_errmsg());
		}
		for (d = 0; d < 10; d++)
			blamer_pop(b);
		if (r == 1)
			used = bl_heap_used(&b->heap);
	}
	/* no record made after the second round */
	ASSERT_EQ(used, bl_heap_used(&b->heap));
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(10, st.retired[BLAMER_REC_USERDATA]);
	t_close(self, b);
}

TEST_F(ctx, log_ring_wraps)
{
	struct blamer_config c;
	struct blamer_log *log;
	struct blamer *b;
	uint32_t i;

	c = t_cfg(self->dir, 0, 0);
	c.log_slots = 8;
	ASSERT_EQ(0, t_open(self, &c, &b));
	log = bl_ptr(&b->heap, bl_part(b, BL_PART_LOG));
	ASSERT_EQ(8, log->slot_count);
	for (i = 0; i < 20; i++)
		ASSERT_EQ(0, blamer_log(b, "message %u %s", i, i == 19 ? "last" : ""));
	ASSERT_EQ(20, log->head);
	for (i = 12; i < 20; i++) {
		struct blamer_log_slot *s = &log->slots[i % 8];
		char want[64];

		snprintf(want, sizeof(want), "message %u %s", i, i == 19 ? "last" : "");
		ASSERT_EQ(i, s->number);
		ASSERT_EQ(2 * i + 2, s->seq);
		ASSERT_STREQ(want, s->text);
		ASSERT_EQ(strlen(want), s->len);
	}
	/* long messages are cut, not overflowed */
	{
		char big[400];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		ASSERT_EQ(0, blamer_log(b, "%s", big));
		ASSERT_EQ(BLAMER_LOG_MSG_MAX, log->slots[20 % 8].len);
	}
	t_close(self, b);
}

/* The process of this test as a reader shows it (one snapshot). */
static const struct blamer_snap_process *own_proc(const struct blamer_snapshot *s)
{
	size_t i;

	for (i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == getpid())
			return &s->procs[i];
	return NULL;
}

static struct blamer *signal_ctx;
static int signal_logged = -1;

static void log_from_handler(int sig)
{
	(void)sig;
	signal_logged = blamer_log(signal_ctx, "from a handler");
}

/*
 * A heap starts with its process record and drop counters only: the
 * process's and the application's data and the log (17 KB by default)
 * are made on first use, so a heap that never writes them is two pages
 * that readers copy, not six. A reader shows such a heap whole (no data, no
 * log, nothing wrong), and each record once it is made, first made in a
 * signal handler too. Before, all three were made with the heap.
 */
TEST_F(ctx, data_and_log_made_on_first_use)
{
	struct blamer_reader_opts o = { .backend = t_backend(), .dir = self->dir };
	const struct blamer_snap_process *sp;
	struct blamer_slab_header *sh;
	struct blamer_snapshot *s;
	struct blamer_process *p;
	struct blamer_reader *r;
	struct blamer_config c;
	struct sigaction sa = { .sa_handler = log_from_handler }, old;
	struct v_stats st;
	struct v_heap v;
	struct blamer *b;
	char e[256];

	c = t_cfg(self->dir, 0, 0);
	ASSERT_EQ(0, t_open(self, &c, &b));
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(0, st.by_type[BLAMER_REC_USERDATA]);
	ASSERT_EQ(0, st.by_type[BLAMER_REC_LOG]);
	p = bl_ptr(&b->heap, b->process);
	ASSERT_EQ(0, p->user_data);
	ASSERT_EQ(0, p->global_data);
	ASSERT_EQ(0, p->log);
	/* the headers, then the thread's first 4 KiB allocation chunk
	 * (heap.c), which holds both records; the three made with the heap
	 * took 17 KB more */
	sh = (struct blamer_slab_header *)b->heap.slabs[0].base;
	ASSERT_LE(sh->freeptr, BLAMER_SLAB0_FIRST_RECORD + 4096)
		TH_LOG("a new heap uses %u bytes", sh->freeptr);

	r = blamer_reader_open(&o, e, sizeof(e));
	ASSERT_NE(NULL, r) TH_LOG("%s", e);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	sp = own_proc(s);
	ASSERT_NE(NULL, sp);
	ASSERT_EQ(BLAMER_HEALTH_OK, sp->health) TH_LOG("%s", sp->problem);
	ASSERT_EQ(0, sp->nlogs);
	ASSERT_EQ(0, sp->user_data.n);
	ASSERT_EQ(0, sp->global_data.n);
	blamer_snapshot_free(s);

	/* the log's first message, from a signal handler */
	signal_ctx = b;
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, &old));
	ASSERT_EQ(0, raise(SIGUSR1));
	ASSERT_EQ(0, sigaction(SIGUSR1, &old, NULL));
	ASSERT_EQ(0, signal_logged);
	ASSERT_EQ(0, blamer_log(b, "then from the test"));
	ASSERT_NE(NULL, blamer_set_int(b, BLAMER_DATA_GLOBAL, "g", 7));
	ASSERT_NE(NULL, blamer_set_int(b, BLAMER_DATA_PROCESS, "q", 8));
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(2, st.by_type[BLAMER_REC_USERDATA]);
	ASSERT_EQ(1, st.by_type[BLAMER_REC_LOG]);
	ASSERT_EQ(b->parts[BL_PART_LOG], p->log);
	ASSERT_EQ(b->parts[BL_PART_GLOBAL_DATA], p->global_data);
	ASSERT_EQ(b->parts[BL_PART_PROCESS_DATA], p->user_data);

	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	sp = own_proc(s);
	ASSERT_NE(NULL, sp);
	ASSERT_EQ(BLAMER_HEALTH_OK, sp->health) TH_LOG("%s", sp->problem);
	ASSERT_EQ(2, sp->nlogs);
	ASSERT_STREQ("from a handler", sp->logs[0].text);
	ASSERT_STREQ("then from the test", sp->logs[1].text);
	ASSERT_EQ(1, sp->global_data.n);
	ASSERT_EQ(7, sp->global_data.v[0].i);
	ASSERT_EQ(1, sp->user_data.n);
	ASSERT_EQ(8, sp->user_data.v[0].i);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	t_close(self, b);
}

TEST_HARNESS_MAIN
