// SPDX-License-Identifier: MIT
/*
 * libblamer writer tests: contexts, backends, records, fork, PID reuse,
 * corrupt and full heaps, a writer killed while another process reads.
 * Concurrency tests are in test_concurrency.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "common.h"

static int count_files(const char *dir, const char *prefix)
{
	char cmd[512];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c '^%s' || true", dir, prefix);
	f = popen(cmd, "r");
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

TEST(open_close_dir)
{
	struct blamer_config c = t_cfg(NULL, 0, 0);
	struct blamer_heap_info info;
	char dir[64], name[128];
	struct stat st;
	struct blamer *b;

	t_mkdir(dir, sizeof(dir));
	c.backend = BLAMER_BACKEND_DIR;
	c.dir = dir;
	ASSERT_EQ(0, blamer_open(&c, &b)) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(0, blamer_heap_info(b, &info));
	ASSERT_EQ(BLAMER_BACKEND_DIR, info.backend);
	ASSERT_EQ(getpid(), info.pid);
	snprintf(name, sizeof(name), "%s/%d-%lld.0.slab", dir, getpid(), (long long)info.start_ns);
	ASSERT_EQ(0, stat(name, &st));
	ASSERT_EQ(0600, st.st_mode & 0777);
	ASSERT_EQ(1u << 20, (unsigned)st.st_size);
	/* start_ns is the /proc/self/stat start time on the agreed scale */
	ASSERT_EQ(bl_proc_start_ns(getpid()), info.start_ns);
	blamer_close(b);
	ASSERT_EQ(-1, stat(name, &st));
	t_rmdir(dir);
}

TEST(dir_refuses_unsafe_places)
{
	struct blamer_config c = t_cfg(NULL, 0, 0);
	char dir[64], p[256], q[256];
	struct blamer *b;

	t_mkdir(dir, sizeof(dir));
	c.backend = BLAMER_BACKEND_DIR;
	/* a symlink to a good directory */
	snprintf(p, sizeof(p), "%s/real", dir);
	snprintf(q, sizeof(q), "%s/link", dir);
	ASSERT_EQ(0, mkdir(p, 0700));
	ASSERT_EQ(0, symlink(p, q));
	c.dir = q;
	ASSERT_EQ(-EPERM, blamer_open(&c, &b));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "symlink"));
	/* writable by others */
	ASSERT_EQ(0, chmod(p, 0777));
	c.dir = p;
	ASSERT_EQ(-EPERM, blamer_open(&c, &b));
	ASSERT_EQ(0, chmod(p, 0700));
	/* owned by someone else (only root can arrange that) */
	if (geteuid() == 0) {
		ASSERT_EQ(0, chown(p, 4242, 4242));
		ASSERT_EQ(-EPERM, blamer_open(&c, &b));
		ASSERT_EQ(0, chown(p, 0, 0));
	}
	/* a file planted where our slab goes: a hard link, then a symlink */
	snprintf(q, sizeof(q), "%s/%d-%lld.0.slab", p, getpid(),
		 (long long)bl_proc_start_ns(getpid()));
	{
		char victim[256];
		int fd;

		snprintf(victim, sizeof(victim), "%s/victim", dir);
		fd = open(victim, O_CREAT | O_RDWR, 0600);
		ASSERT_GE(fd, 0);
		close(fd);
		ASSERT_EQ(0, link(victim, q));
		ASSERT_EQ(-EEXIST, blamer_open(&c, &b));
		ASSERT_EQ(0, unlink(q));
		ASSERT_EQ(0, symlink(victim, q));
		ASSERT_EQ(-EEXIST, blamer_open(&c, &b));
		ASSERT_EQ(0, unlink(q));
		/* the victim was never written */
		{
			struct stat st;

			ASSERT_EQ(0, stat(victim, &st));
			ASSERT_EQ(0, st.st_size);
		}
	}
	/* and the good directory works */
	ASSERT_EQ(0, blamer_open(&c, &b)) TH_LOG("%s", blamer_errmsg());
	blamer_close(b);
	t_rmdir(dir);
}

/* After execve() a process keeps its pid and start time: the heap files
 * of its former image are replaced, those of a live context are not. */
TEST(heap_left_before_exec_is_replaced)
{
	struct blamer_config c = t_cfg(NULL, 65536, 2);
	struct blamer *a, *b, *d;
	char dir[64];

	t_mkdir(dir, sizeof(dir));
	c.backend = BLAMER_BACKEND_DIR;
	c.dir = dir;
	ASSERT_EQ(0, blamer_open(&c, &a));
	/* a live context of ours is there: a second one is refused */
	ASSERT_EQ(-EEXIST, blamer_open(&c, &d));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "already has a heap"));
	blamer_abandon(a);	/* as if the image that made it exec'd */
	ASSERT_EQ(0, blamer_open(&c, &b)) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "after-exec", 0, 0));
	blamer_close(b);
	t_rmdir(dir);
}

TEST(backend_choice_is_explicit)
{
	struct blamer_config c = t_cfg(NULL, 0, 0);
	char dir[64];
	struct blamer *b;
	int ret;

	t_mkdir(dir, sizeof(dir));
	c.dir = dir;
	c.backend = BLAMER_BACKEND_AUTO;
	setenv("BLAMER_BACKEND", "carrier-pigeon", 1);
	ASSERT_EQ(-EINVAL, blamer_open(&c, &b));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "BLAMER_BACKEND"));
	setenv("BLAMER_BACKEND", "device", 1);
	ret = blamer_open(&c, &b);
	if (access("/dev/blamer", R_OK | W_OK)) {
		/* no silent fallback to dir */
		ASSERT_NE(0, ret);
		ASSERT_NE(NULL, strstr(blamer_errmsg(), "/dev/blamer"));
	} else {
		struct blamer_heap_info info;

		ASSERT_EQ(0, ret) TH_LOG("%s", blamer_errmsg());
		ASSERT_EQ(0, blamer_heap_info(b, &info));
		ASSERT_EQ(BLAMER_BACKEND_DEVICE, info.backend);
		blamer_close(b);
	}
	setenv("BLAMER_BACKEND", "dir", 1);
	ASSERT_EQ(0, blamer_open(&c, &b)) TH_LOG("%s", blamer_errmsg());
	blamer_close(b);
	unsetenv("BLAMER_BACKEND");
	t_rmdir(dir);
}

TEST(heap_format_after_open)
{
	struct blamer_config c;
	struct v_stats st;
	struct v_heap v;
	char dir[64];
	struct blamer *b;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	c.flags = 0;	/* with modules */
	ASSERT_EQ(0, blamer_open(&c, &b)) TH_LOG("%s", blamer_errmsg());
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(BLAMER_HEAP_READY, st.state);
	ASSERT_EQ(1, st.by_type[BLAMER_REC_PROCESS]);
	ASSERT_EQ(2, st.by_type[BLAMER_REC_USERDATA]);
	ASSERT_EQ(1, st.by_type[BLAMER_REC_LOG]);
	ASSERT_GE(st.by_type[BLAMER_REC_MODULE], 2);	/* the test and libc at least */
	ASSERT_EQ(getpid(), st.pid);
	ASSERT_NE(0, st.data_id);
	{
		struct blamer_process *p = bl_ptr(&b->heap, b->process);

		ASSERT_EQ(BLAMER_PHASE_LAUNCHED, p->phase);
		ASSERT_GT(p->cmdline_len, 0);
		ASSERT_NE(NULL, strstr(p->cmdline, "test_lib"));
		ASSERT_EQ(0, blamer_set_phase(b, BLAMER_PHASE_MAIN_LOOP));
		ASSERT_EQ(BLAMER_PHASE_MAIN_LOOP, p->phase);
	}
	blamer_close(b);
	t_rmdir(dir);
}

TEST(modules_have_build_ids)
{
	struct blamer_config c;
	struct bl_iter it = { 0 };
	bool libc = false;
	blamer_ref ref;
	char dir[64];
	struct blamer *b;
	uint32_t t;
	int n;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	ASSERT_EQ(0, blamer_open(&c, &b));
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
	blamer_close(b);
	t_rmdir(dir);
}

TEST(activity_stack)
{
	struct blamer_config c;
	struct blamer_thread *t;
	struct bl_tls_ent *e;
	char dir[64];
	struct blamer *b;
	int i;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	c.stack_depth = 4;
	ASSERT_EQ(0, blamer_open(&c, &b));
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
	blamer_close(b);
	t_rmdir(dir);
}

/*
 * Labels: every length from 0 to 20 at every offset around a page
 * boundary (the last byte before an unmapped page included) must come
 * out NUL-padded and cut at 16 bytes, as strncpy would copy it, and the
 * copy must never read past the terminating NUL.
 */
TEST(activity_label_every_length_and_offset)
{
	struct blamer_config c;
	struct blamer_thread *t;
	char dir[64], want[16];
	struct blamer *b;
	long pg = sysconf(_SC_PAGESIZE);
	char *mem;
	int len, off;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	c.stack_depth = 4;
	ASSERT_EQ(0, blamer_open(&c, &b));
	/* Two pages, the second made inaccessible: a read past the end of
	 * the first page would fault. */
	mem = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_EQ(0, mprotect(mem + pg, pg, PROT_NONE));
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, NULL, 0, 0));
	t = bl_thread_get(b)->rec;
	ASSERT_EQ(0, memcmp(t->stack[0].label, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16));
	blamer_pop(b);
	for (len = 0; len <= 20; len++) {
		for (off = pg - 40; off <= pg - len - 1; off++) {
			char *s = mem + off;
			int i;

			memset(mem + pg - 48, 'x', 48);	/* garbage after the NUL */
			for (i = 0; i < len; i++)
				s[i] = (char)('a' + (i + off) % 26);
			s[len] = '\0';
			memset(want, 0, sizeof(want));
			memcpy(want, s, len < 16 ? len : 16);
			ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, s, 0, 0));
			ASSERT_EQ(0, memcmp(t->stack[0].label, want, 16))
				TH_LOG("length %d at page offset %d", len, off);
			blamer_pop(b);
		}
	}
	munmap(mem, 2 * pg);
	blamer_close(b);
	t_rmdir(dir);
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
TEST(activity_timestamps)
{
	static const char *const clocks[] = { "monotonic", "tsc", "auto", NULL };
	const uint64_t slack = 20000;	/* ns: the anchor pairs' brackets */
	struct blamer_config c;
	struct blamer *none;
	char dir[64];
	int i;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	setenv("BLAMER_CLOCK", "sundial", 1);
	ASSERT_EQ(-EINVAL, blamer_open(&c, &none));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "BLAMER_CLOCK"));
	for (i = 0; clocks[i]; i++) {
		uint64_t t0, t1, t2, ns0, ns1;
		struct blamer_thread *t;
		struct blamer *b;
		int ret;

		setenv("BLAMER_CLOCK", clocks[i], 1);
		ret = blamer_open(&c, &b);
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
		blamer_close(b);
	}
	t_rmdir(dir);
}

TEST(user_data_all_types)
{
	struct blamer_config c;
	struct blamer_userdata *u, *g;
	struct blamer_value *h, *s;
	struct blamer_field *f;
	static const char ext[] = "external";
	char dir[64];
	struct blamer *b;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	ASSERT_EQ(0, blamer_open(&c, &b));
	u = bl_ptr(&b->heap, b->process_data);
	g = bl_ptr(&b->heap, b->global_data);
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
	/* longer than the first value: cut to the capacity (8) */
	blamer_value_string(s, "shutting-down");
	ASSERT_EQ(8, f->value_size);
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
	blamer_close(b);
	t_rmdir(dir);
}

TEST(activity_data_reused)
{
	struct blamer_config c;
	struct blamer_thread *t;
	struct blamer_userdata *u;
	blamer_ref first;
	struct v_stats st;
	struct v_heap v;
	char dir[64];
	struct blamer *b;
	int i;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	ASSERT_EQ(0, blamer_open(&c, &b));
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
	blamer_close(b);
	t_rmdir(dir);
}

TEST(log_ring_wraps)
{
	struct blamer_config c;
	struct blamer_log *log;
	char dir[64];
	struct blamer *b;
	uint32_t i;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	c.log_slots = 8;
	ASSERT_EQ(0, blamer_open(&c, &b));
	log = bl_ptr(&b->heap, b->log);
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
	blamer_close(b);
	t_rmdir(dir);
}

TEST(dag_nodes_links_paths)
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
	char dir[64], why[64];
	struct blamer *b;

	/* FNV-1a 64 test vectors */
	ASSERT_EQ(0xcbf29ce484222325ull, blamer_dag_id(""));
	ASSERT_EQ(0xaf63dc4c8601ec8cull, blamer_dag_id("a"));
	ASSERT_EQ(0x85944171f73967e8ull, blamer_dag_id("foobar"));
	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	ASSERT_EQ(0, blamer_open(&c, &b));
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
	rec = p->rec;
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
	ASSERT_EQ(0, v_path_values(&v, p->ref, sum, &nshards, why)) TH_LOG("%s", why);
	ASSERT_EQ(1, nshards);
	ASSERT_EQ(1234, sum[0]);
	ASSERT_EQ(4096, sum[1]);
	ASSERT_EQ(0, rec->values[0]);
	blamer_close(b);
	t_rmdir(dir);
}

/*
 * What blamer shows for path @ids in @unit: the reader run on the
 * context's own mappings. 0 if the heap reads healthy and has the path.
 */
static int reader_total(struct blamer *b, const uint64_t *ids, uint32_t depth, uint32_t unit,
			uint64_t *total)
{
	struct blamer_mem_slab m[BLAMER_MAX_SLABS];
	struct blamer_snapshot *s;
	uint32_t i, n = b->heap.nslabs;
	int ret = -1;

	for (i = 0; i < n; i++) {
		m[i].data = b->heap.slabs[i].base;
		m[i].size = b->heap.slabs[i].size;
	}
	if (blamer_snapshot_from_memory(m, n, &s))
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

TEST(path_add_totals_through_the_reader)
{
	uint64_t ids[2] = { blamer_dag_id("app"), blamer_dag_id("parse") }, total, claimed;
	uint32_t units[2] = { BLAMER_UNIT_CPU_NS, BLAMER_UNIT_COUNT };
	struct blamer_config c;
	struct blamer_path *p;
	char dir[64];
	struct blamer *b;
	int i;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	ASSERT_EQ(0, blamer_open(&c, &b));
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
	ASSERT_EQ(0, p->rec->values[0]);
	blamer_close(b);
	t_rmdir(dir);
}

/* More paths than cache slots: slots are lost and the shards found again. */
TEST(path_add_beyond_the_cache_is_exact)
{
	enum { NPATHS = 3 * BL_SHARD_SLOTS + 5, ROUNDS = 50 };
	uint64_t ids[2] = { blamer_dag_id("root"), 0 }, total, claimed;
	uint32_t unit = BLAMER_UNIT_BYTES;
	struct blamer_path *p[NPATHS];
	struct blamer_config c;
	char dir[64];
	struct blamer *b;
	int i, round;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	ASSERT_EQ(0, blamer_open(&c, &b));
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
	blamer_close(b);
	t_rmdir(dir);
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

TEST(exited_threads_leave_shards_for_the_next)
{
	uint64_t ids[2] = { blamer_dag_id("root"), 0 }, total, claimed;
	uint32_t unit = BLAMER_UNIT_COUNT;
	struct adder a = { .n = 1000 };
	pthread_barrier_t hold;
	struct blamer_config c;
	pthread_t th[2];
	char dir[64];
	struct blamer *b;
	int i;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	ASSERT_EQ(0, blamer_open(&c, &b));
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
	blamer_close(b);
	t_rmdir(dir);
}

TEST(full_heap_adds_to_the_path_record)
{
	uint64_t ids[1] = { blamer_dag_id("root") }, total, claimed;
	uint32_t unit = BLAMER_UNIT_COUNT;
	struct adder a = { .n = 1000 };
	struct blamer_config c;
	struct blamer_path *p;
	pthread_t th;
	char dir[64];
	struct blamer *b;
	int i, err = 0;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 16384, 2);
	ASSERT_EQ(0, blamer_open(&c, &b));
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
	ASSERT_EQ(100 + 1000 * 3, p->rec->values[0]);
	ASSERT_EQ(0, reader_total(b, ids, 1, unit, &total));
	ASSERT_EQ(100 + 1000 * 3, total);
	blamer_close(b);
	t_rmdir(dir);
}

TEST(default_context_and_reset)
{
	char dir[64];
	struct blamer *d;

	t_mkdir(dir, sizeof(dir));
	setenv("BLAMER_DIR", dir, 1);
	if (t_backend() == BLAMER_BACKEND_DIR)
		setenv("BLAMER_BACKEND", "dir", 1);
	ASSERT_GE(blamer_push(NULL, BLAMER_ACTIVITY_GENERIC, "x", 0, 0), 1);
	d = blamer_default();
	ASSERT_NE(NULL, d);
	ASSERT_EQ(-EBUSY, blamer_init(NULL));
	ASSERT_NE(NULL, blamer_set_int(NULL, BLAMER_DATA_PROCESS, "x", 1));
	ASSERT_EQ(0, blamer_log(NULL, "hi"));
	blamer_pop(NULL);
	blamer_reset();
	/* after reset a fresh default is made; its thread cache is new */
	ASSERT_EQ(1, blamer_push(NULL, BLAMER_ACTIVITY_GENERIC, "y", 0, 0));
	blamer_reset();
	ASSERT_EQ(0, blamer_init(NULL));
	blamer_reset();
	unsetenv("BLAMER_DIR");
	unsetenv("BLAMER_BACKEND");
	t_rmdir(dir);
}

static void *push_in_thread(void *b)
{
	return (void *)(intptr_t)blamer_push(b, BLAMER_ACTIVITY_TASK, "t", 0, 0);
}

TEST(full_heap)
{
	struct blamer_config c;
	struct blamer_heap_info info;
	char dir[64];
	struct blamer *b;
	int err = 0, n = 0;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 16384, 2);
	ASSERT_EQ(0, blamer_open(&c, &b));
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
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "allocate"));
	blamer_close(b);
	t_rmdir(dir);
}

/* Per-thread chunks never make the heap grow early or waste a slab. */
TEST(small_slabs_fill_up)
{
	struct blamer_config c;
	struct blamer_heap_info info;
	char dir[64];
	struct blamer *b;
	uint64_t used0;
	int err = 0, n = 0;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 16384, 4);
	ASSERT_EQ(0, blamer_open(&c, &b)) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(0, blamer_heap_info(b, &info));
	used0 = info.bytes_used + (uint64_t)(4 - info.slab_count) * 64;
	while (bl_heap_alloc(&b->heap, 64, T_REC_TEST, &err))
		n++;
	ASSERT_EQ(ENOSPC, err);
	ASSERT_EQ(0, blamer_heap_info(b, &info));
	ASSERT_EQ(4, info.slab_count);
	/* every byte was handed out (but rounding slack): slab tails too */
	ASSERT_GE((uint64_t)n * 64, 4 * 16384 - used0 - 4 * 64);
	blamer_close(b);
	t_rmdir(dir);
}

TEST(corrupt_heap_is_not_written)
{
	struct blamer_config c;
	struct blamer_slab_header *sh;
	struct blamer_heap_info info;
	char dir[64];
	struct blamer *b;
	uint8_t *copy;
	int err = 0;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 65536, 4);
	ASSERT_EQ(0, blamer_open(&c, &b));
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
	blamer_close(b);
	t_rmdir(dir);
}

TEST(list_loop_is_corrupt)
{
	struct blamer_config c;
	struct bl_iter it = { 0 };
	struct blamer_block *blk;
	blamer_ref r1, r2;
	char dir[64];
	struct blamer *b;
	int err = 0, n = 0;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 65536, 1);
	ASSERT_EQ(0, blamer_open(&c, &b));
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
	blamer_close(b);
	t_rmdir(dir);
}

TEST(forked_child_gets_own_heap)
{
	struct blamer_config c;
	struct blamer_heap_info pinfo;
	struct blamer_thread *t;
	uint8_t *before;
	char dir[64];
	struct blamer *b;
	int status, pipefd[2];
	pid_t pid;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 65536, 4);
	ASSERT_EQ(0, blamer_open(&c, &b));
	ASSERT_EQ(0, blamer_heap_info(b, &pinfo));
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "parent", 1, 0));
	struct blamer_value *h = blamer_set_uint(b, BLAMER_DATA_PROCESS, "v", 1);
	uint64_t ids[1] = { 42 }, sum[BLAMER_DAG_MAX_UNITS], nshards;
	struct blamer_path *path = blamer_path_get(b, ids, 1, NULL, 0);
	char why[64];

	ASSERT_NE(NULL, path);
	blamer_path_add(path, 0, 3);	/* this thread's shard, in its cache */

	t = bl_thread_get(b)->rec;
	before = malloc(b->heap.slabs[0].size);
	ASSERT_NE(NULL, before);
	memcpy(before, b->heap.slabs[0].base, b->heap.slabs[0].size);
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct blamer_heap_info info;
		int ok = 1;

		struct blamer_path *mine;
		struct v_heap v;

		/* stale handles and pointers write to scratch, not the parent */
		blamer_value_uint(h, 999);
		blamer_path_add(path, 0, 1000);
		t->depth = 77;
		/* the child's first use makes its own heap */
		ok &= blamer_push(b, BLAMER_ACTIVITY_TASK, "child", 2, 0) == 1;
		blamer_path_add(path, 0, 1000);
		/* where a new handle adds to the child's own path */
		mine = blamer_path_get(b, ids, 1, NULL, 0);
		ok &= mine && mine != path;
		blamer_path_add(mine, 0, 7);
		t_view(b, &v);
		ok &= mine && v_path_values(&v, mine->ref, sum, &nshards, why) == 0 &&
		      sum[0] == 7 && nshards == 1;
		ok &= blamer_set_uint(b, BLAMER_DATA_PROCESS, "v", 2) != NULL;
		ok &= blamer_heap_info(b, &info) == 0;
		ok &= info.pid == getpid() && info.heap_id != pinfo.heap_id;
		ok &= blamer_log(b, "child") == 0;
		ok &= write(pipefd[1], &info.start_ns, 8) == 8;
		blamer_abandon(b);	/* keep the files for the parent to check */
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	/* the parent's heap is byte for byte what it was */
	ASSERT_EQ(0, memcmp(before, b->heap.slabs[0].base, b->heap.slabs[0].size));
	ASSERT_EQ(1, t->depth);
	{
		struct v_heap v;

		blamer_path_add(path, 0, 4);
		t_view(b, &v);
		ASSERT_EQ(0, v_path_values(&v, path->ref, sum, &nshards, why)) TH_LOG("%s", why);
		ASSERT_EQ(7, sum[0]);
	}
	/* and the child's heap is valid and its own */
	{
		struct v_stats st;
		struct v_heap v;
		int64_t cstart;

		ASSERT_EQ(sizeof(cstart), read(pipefd[0], &cstart, sizeof(cstart)));
		ASSERT_EQ(0, t_load(dir, pid, cstart, &v));
		ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
		ASSERT_EQ(pid, st.pid);
		ASSERT_NE(pinfo.heap_id, ((struct blamer_slab_header *)v.slab[0])->heap_id);
		ASSERT_EQ(1, st.by_type[BLAMER_REC_THREAD]);
		v_unload(&v);
	}
	free(before);
	blamer_close(b);
	t_rmdir(dir);
}

/* Runs @fn in a child that opens its own heap in @dir and abandons it. */
static pid_t child_with_heap(const char *dir, int exit_code)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct blamer_config c = t_cfg(dir, 65536, 2);
		struct blamer *b;

		c.backend = BLAMER_BACKEND_DIR;
		if (blamer_open(&c, &b))
			_exit(99);
		blamer_push(b, BLAMER_ACTIVITY_TASK, "child", 0, 0);
		blamer_abandon(b);
		_exit(exit_code);
	}
	return pid;
}

TEST(child_exit_cleans_up_only_that_process)
{
	struct blamer_config c;
	struct blamer_child *rec = NULL;
	struct bl_iter it = { 0 };
	char dir[64], prefix[64], path[256];
	int64_t stamp;
	blamer_ref ref;
	struct blamer *b;
	uint32_t type;
	int status, fd;
	pid_t pid;

	t_mkdir(dir, sizeof(dir));
	c = t_cfg(dir, 0, 0);
	c.backend = BLAMER_BACKEND_DIR;
	ASSERT_EQ(0, blamer_open(&c, &b));
	pid = child_with_heap(dir, 0);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(0, blamer_process_launched(b, pid));
	/* the child is a zombie until reaped: its stamp is still readable */
	while (waitid(P_PID, pid, NULL, WEXITED | WNOWAIT) && errno == EINTR)
		;
	stamp = bl_proc_start_ns(pid);
	ASSERT_GT(stamp, 0);
	/* PID reuse: files of an older and a newer process with the same pid */
	snprintf(path, sizeof(path), "%s/%d-%lld.0.slab", dir, pid, (long long)(stamp - 10000000));
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	ASSERT_GE(fd, 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/%d-%lld.0.slab", dir, pid, (long long)(stamp + 10000000));
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	ASSERT_GE(fd, 0);
	close(fd);
	snprintf(prefix, sizeof(prefix), "%d-", pid);
	ASSERT_EQ(3, count_files(dir, prefix));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(1, blamer_process_exited(b, pid, status));	/* one slab removed */
	ASSERT_EQ(2, count_files(dir, prefix));		/* the other two stay */
	snprintf(prefix, sizeof(prefix), "%d-%lld[.]", pid, (long long)stamp);
	ASSERT_EQ(0, count_files(dir, prefix));
	while ((ref = bl_heap_next(&b->heap, &it, &type)))
		if (type == BLAMER_REC_CHILD)
			rec = bl_ptr(&b->heap, ref);
	ASSERT_NE(NULL, rec);
	ASSERT_EQ(pid, rec->child_pid);
	ASSERT_EQ(stamp, rec->child_start_stamp);
	ASSERT_EQ(2, rec->state);
	ASSERT_TRUE(WIFEXITED(rec->exit_status));
	ASSERT_EQ(0, WEXITSTATUS(rec->exit_status));
	ASSERT_NE(0, rec->exit_time_ns);
	/* unknown pids are an error */
	ASSERT_EQ(-ESRCH, blamer_process_exited(b, pid, 0));
	/* a child that failed keeps its heap for postmortem */
	pid = child_with_heap(dir, 3);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(0, blamer_process_launched(b, pid));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, blamer_process_exited(b, pid, status));
	snprintf(prefix, sizeof(prefix), "%d-", pid);
	ASSERT_EQ(1, count_files(dir, prefix));
	blamer_close(b);
	t_rmdir(dir);
}

/*
 * A writer is SIGKILLed while it updates its heap as fast as it can and
 * another process validates the heap over and over: every snapshot, and
 * the heap left behind, must be well formed.
 */
TEST(writer_killed_mid_update)
{
	char dir[64];
	int pipefd[2], i, status;
	int64_t start = 0;
	pid_t pid;

	t_mkdir(dir, sizeof(dir));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct blamer_config c = t_cfg(dir, 65536, 8);
		struct blamer_heap_info info;
		struct blamer *b;
		uint64_t n = 0;

		if (blamer_open(&c, &b) || blamer_heap_info(b, &info))
			_exit(99);
		for (;; n++) {
			char s[32];

			blamer_push(b, BLAMER_ACTIVITY_TASK, "work", n, 0);
			snprintf(s, sizeof(s), "item-%llu", (unsigned long long)n);
			blamer_set_string(b, BLAMER_DATA_ACTIVITY, "item", s);
			blamer_set_uint(b, BLAMER_DATA_PROCESS, "n", n);
			if (n % 64 == 0)
				blamer_log(b, "at %llu", (unsigned long long)n);
			if (n % 512 == 0) {
				uint64_t ids[2] = { 1, n % 1000 + 2 };

				blamer_path_add(blamer_path_get(b, ids, 2, NULL, 0), 0, 1);
			}
			blamer_pop(b);
			/* the reader starts once every kind of record exists */
			if (n == 0 && write(pipefd[1], &info.start_ns, 8) != 8)
				_exit(98);
		}
	}
	close(pipefd[1]);
	ASSERT_EQ(sizeof(start), read(pipefd[0], &start, sizeof(start)));
	close(pipefd[0]);
	for (i = 0; i < 100; i++) {
		struct v_stats st;
		struct v_heap v;

		ASSERT_EQ(0, t_load(dir, pid, start, &v));
		ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("round %d: %s", i, st.why);
		ASSERT_EQ(pid, st.pid);
		ASSERT_EQ(1, st.by_type[BLAMER_REC_PROCESS]);
		v_unload(&v);
	}
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	if (t_backend() == BLAMER_BACKEND_DIR) {
		struct v_stats st;
		struct v_heap v;

		ASSERT_EQ(0, v_load_dir(dir, pid, start, &v));
		ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
		ASSERT_EQ(BLAMER_HEAP_READY, st.state);	/* not DELETED: it died */
		ASSERT_EQ(0, st.flags & BLAMER_HEAP_F_CORRUPT);
		ASSERT_GE(st.by_type[BLAMER_REC_DAG_PATH], 1);
		v_unload(&v);
	}
	t_rmdir(dir);
}

TEST_HARNESS_MAIN
