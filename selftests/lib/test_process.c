// SPDX-License-Identifier: MIT
/*
 * libblamer writer tests, processes: a forked child gets its own heap, a
 * parent cleans up only its own child's files (PID reuse), a writer
 * killed while another process reads.
 * Each test runs in a fixture (common.h): a private directory and a
 * context the teardown closes, so a failed assert leaks neither.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
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

TEST_F(ctx, forked_child_gets_own_heap)
{
	struct blamer_config c;
	struct blamer_heap_info pinfo;
	struct blamer_thread *t;
	uint8_t *before;
	struct blamer *b;
	int status, pipefd[2];
	pid_t pid;

	c = t_cfg(self->dir, 65536, 4);
	ASSERT_EQ(0, t_open(self, &c, &b));
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

		/* a stale pointer writes to scratch, not the parent */
		t->depth = 77;
		/* handles from before the fork write to the child's own heap,
		 * made by their first use */
		blamer_value_uint(h, 999);
		blamer_path_add(path, 0, 1000);
		ok &= blamer_push(b, BLAMER_ACTIVITY_TASK, "child", 2, 0) == 1;
		blamer_path_add(path, 0, 1000);
		/* the child's handle of the path is the one made before */
		mine = blamer_path_get(b, ids, 1, NULL, 0);
		ok &= mine == path;
		blamer_path_add(mine, 0, 7);
		t_view(b, &v);
		ok &= mine && v_path_values(&v, mine->h.ref, sum, &nshards, why) == 0 &&
		      sum[0] == 2007 && nshards == 1;
		ok &= blamer_set_uint(b, BLAMER_DATA_PROCESS, "v", 2) == h;
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
		ASSERT_EQ(0, v_path_values(&v, path->h.ref, sum, &nshards, why)) TH_LOG("%s", why);
		ASSERT_EQ(7, sum[0]);
	}
	/* and the child's heap is valid and its own */
	{
		struct v_stats st;
		struct v_heap v;
		int64_t cstart;

		ASSERT_EQ(sizeof(cstart), read(pipefd[0], &cstart, sizeof(cstart)));
		ASSERT_EQ(0, t_load(self->dir, pid, cstart, &v));
		ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
		ASSERT_EQ(pid, st.pid);
		ASSERT_NE(pinfo.heap_id, ((struct blamer_slab_header *)v.slab[0])->heap_id);
		ASSERT_EQ(1, st.by_type[BLAMER_REC_THREAD]);
		v_unload(&v);
	}
	free(before);
	t_close(self, b);
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

TEST_F(ctx, child_exit_cleans_up_only_that_process)
{
	struct blamer_config c;
	struct blamer_child *rec = NULL;
	struct bl_iter it = { 0 };
	char prefix[64], path[256];
	int64_t stamp;
	blamer_ref ref;
	struct blamer *b;
	uint32_t type;
	int status, fd;
	pid_t pid;

	c = t_cfg(self->dir, 0, 0);
	c.backend = BLAMER_BACKEND_DIR;
	ASSERT_EQ(0, t_open(self, &c, &b));
	pid = child_with_heap(self->dir, 0);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(0, blamer_process_launched(b, pid));
	/* the child is a zombie until reaped: its stamp is still readable */
	while (waitid(P_PID, pid, NULL, WEXITED | WNOWAIT) && errno == EINTR)
		;
	stamp = bl_proc_start_ns(pid);
	ASSERT_GT(stamp, 0);
	/* PID reuse: files of an older and a newer process with the same pid */
	snprintf(path, sizeof(path), "%s/%d-%lld.0.slab", self->dir, pid, (long long)(stamp - 10000000));
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	ASSERT_GE(fd, 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/%d-%lld.0.slab", self->dir, pid, (long long)(stamp + 10000000));
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	ASSERT_GE(fd, 0);
	close(fd);
	snprintf(prefix, sizeof(prefix), "%d-", pid);
	ASSERT_EQ(3, count_files(self->dir, prefix));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(1, blamer_process_exited(b, pid, status));	/* one slab removed */
	ASSERT_EQ(2, count_files(self->dir, prefix));		/* the other two stay */
	snprintf(prefix, sizeof(prefix), "%d-%lld[.]", pid, (long long)stamp);
	ASSERT_EQ(0, count_files(self->dir, prefix));
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
	pid = child_with_heap(self->dir, 3);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(0, blamer_process_launched(b, pid));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, blamer_process_exited(b, pid, status));
	snprintf(prefix, sizeof(prefix), "%d-", pid);
	ASSERT_EQ(1, count_files(self->dir, prefix));
	t_close(self, b);
}

/*
 * A writer is SIGKILLed while it updates its heap as fast as it can and
 * another process validates the heap over and over: every snapshot, and
 * the heap left behind, must be well formed.
 */

TEST_F(ctx, writer_killed_mid_update)
{
	int pipefd[2], i, status;
	int64_t start = 0;
	pid_t pid;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct blamer_config c = t_cfg(self->dir, 65536, 8);
		struct blamer_heap_info info;
		struct blamer *b;
		uint64_t n = 0;

		/* A failed assertion must not leave this loop running. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (t_open(self, &c, &b) || blamer_heap_info(b, &info))
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

		ASSERT_EQ(0, t_load(self->dir, pid, start, &v));
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

		ASSERT_EQ(0, v_load_dir(self->dir, pid, start, &v));
		ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
		ASSERT_EQ(BLAMER_HEAP_READY, st.state);	/* not DELETED: it died */
		ASSERT_EQ(0, st.flags & BLAMER_HEAP_F_CORRUPT);
		ASSERT_GE(st.by_type[BLAMER_REC_DAG_PATH], 1);
		v_unload(&v);
	}
}

static const struct blamer_snap_field *snap_field(const struct blamer_snap_fields *f,
						  const char *name)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].name, name))
			return &f->v[i];
	return NULL;
}

/*
 * A fork child's heap starts with the parent's definitions (nodes, links,
 * unit names) and its GLOBAL and PROCESS data as at the fork, plus its
 * own modules; not the parent's role, measurements, stacks or log.
 * Handles of each kind made before the fork write there.
 */
TEST_F(ctx, fork_child_heap_inherits_definitions_and_data)
{
	uint64_t root = blamer_dag_id("root"), leaf = blamer_dag_id("leaf"), ids[2];
	uint32_t units[1] = { 1001 };
	struct blamer_config c;
	struct blamer_path *p;
	struct blamer_value *count, *name;
	struct blamer *b;
	int status;
	pid_t pid;

	c = t_cfg(self->dir, 65536, 4);
	c.flags = 0;	/* modules too */
	ASSERT_EQ(0, t_open(self, &c, &b));
	ASSERT_EQ(0, blamer_set_role(b, "master", NULL));
	ASSERT_EQ(0, blamer_dag_node(b, root, 1, "root"));
	ASSERT_EQ(0, blamer_dag_node(b, leaf, 2, "leaf"));
	ASSERT_EQ(0, blamer_dag_link(b, root, leaf));
	ASSERT_EQ(0, blamer_dag_unit(b, 1001, "jobs", BLAMER_BASE_NONE));
	ASSERT_NE(NULL, blamer_set_string(b, BLAMER_DATA_GLOBAL, "version", "2.5"));
	count = blamer_set_uint(b, BLAMER_DATA_PROCESS, "count", 5);
	name = blamer_reserve_string(b, BLAMER_DATA_PROCESS, "name", 40);
	ASSERT_NE(NULL, count);
	ASSERT_NE(NULL, name);
	ids[0] = root;
	ids[1] = leaf;
	p = blamer_path_get(b, ids, 2, units, 1);
	ASSERT_NE(NULL, p);
	blamer_path_add(p, 0, 100);	/* the parent's: not inherited */
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "parent's", 0, 0));
	ASSERT_EQ(0, blamer_log(b, "parent's"));

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		const struct blamer_snap_process *q;
		const struct blamer_snap_field *f;
		struct blamer_snapshot *s;
		int ok = 1;

		/* the first write makes the child's heap, with its role */
		ok &= blamer_set_role(b, "worker", "7") == 0;
		ok &= blamer_set_role(b, "worker", "7") == 0;
		ok &= blamer_set_role(b, "worker", "8") == -EEXIST;
		blamer_value_add(count, 2);
		blamer_value_string(name, "a name of 25 bytes, whole");
		blamer_path_add(p, 0, 1);
		blamer_path_add(p, 0, 2);
		s = t_own_snapshot(b);
		ok &= s && s->nprocs == 1;
		if (!ok)
			_exit(10);
		q = &s->procs[0];
		ok &= q->health == BLAMER_HEALTH_OK && q->rec_pid == getpid();
		ok &= !strcmp(q->role, "worker") && !strcmp(q->instance, "7");
		ok &= !strcmp(blamer_snap_node_name(s, root) ?: "", "root") &&
		      !strcmp(blamer_snap_node_name(s, leaf) ?: "", "leaf");
		ok &= q->nedges == 1 && q->edges[0].parent == root && q->edges[0].child == leaf;
		ok &= blamer_snap_unit_def(s, 1001) &&
		      !strcmp(blamer_snap_unit_def(s, 1001)->name, "jobs");
		f = snap_field(&q->global_data, "version");
		ok &= f && f->bytes && !strcmp((char *)f->bytes, "2.5");
		f = snap_field(&q->user_data, "count");
		ok &= f && f->u == 7;	/* 5 inherited, 2 added in the child */
		f = snap_field(&q->user_data, "name");
		ok &= f && f->bytes && !strcmp((char *)f->bytes, "a name of 25 bytes, whole") &&
		      !f->cut;
		ok &= q->npaths == 1 && q->paths[0].values[0] == 3;	/* not the parent's 100 */
		/* no parent's stack or log (the adds registered this thread) */
		ok &= q->nthreads == 1 && q->threads[0].nacts == 0 && q->nlogs == 0;
		ok &= q->nmodules > 0;
		ok &= q->dropped == 0;
		if (!ok)
			fprintf(stderr, "# child: role %s/%s nodes %zu edges %zu paths %zu mods %zu "
				"threads %zu logs %zu dropped %llu\n", q->role, q->instance, q->nnodes,
				q->nedges, q->npaths, q->nmodules, q->nthreads, q->nlogs,
				(unsigned long long)q->dropped);
		blamer_snapshot_free(s);
		blamer_abandon(b);
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	t_close(self, b);
}

/* Every write not recorded in full is counted, by reason, and marked. */
TEST_F(ctx, drops_are_counted_by_reason)
{
	char label[BLAMER_LABEL_MAX + 20], name[48], msg[200];
	const struct blamer_snap_process *q;
	const struct blamer_snap_field *f;
	struct blamer_snapshot *s;
	struct blamer_config c;
	struct blamer_value *v;
	struct blamer *b;
	uint64_t ids[1] = { 1 }, n;

	c = t_cfg(self->dir, 65536, 1);
	c.stack_depth = 2;
	ASSERT_EQ(0, t_open(self, &c, &b));
	v = blamer_set_string(b, BLAMER_DATA_PROCESS, "s", "ab");
	ASSERT_NE(NULL, v);
	blamer_value_string(v, "abcdef");	/* fits: "ab" made room for 8 */
	blamer_value_string(v, "abcdefghijk");	/* cut to 8 */
	ASSERT_EQ(v, blamer_set_string(b, BLAMER_DATA_PROCESS, "s", "0123456789"));	/* again */
	memset(label, 'L', sizeof(label) - 1);
	label[sizeof(label) - 1] = 0;
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, label, 0, 0));
	ASSERT_EQ(2, blamer_push(b, BLAMER_ACTIVITY_TASK, "ok", 0, 0));
	ASSERT_EQ(3, blamer_push(b, BLAMER_ACTIVITY_TASK, "over", 0, 0));	/* overflow */
	blamer_pop(b);
	blamer_pop(b);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	ASSERT_EQ(0, blamer_thread_set_name(b, name));
	memset(msg, 'm', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = 0;
	ASSERT_EQ(0, blamer_log(b, "%s", msg));
	blamer_value_int(v, 1);		/* a string's handle: wrong type */
	/* fill the heap: paths until no room */
	for (n = 0; n < 1000 && blamer_path_get(b, ids, 1, NULL, 0); n++)
		ids[0]++;
	ASSERT_LT(n, 1000);
	s = t_own_snapshot(b);
	ASSERT_NE(NULL, s);
	q = &s->procs[0];
	EXPECT_EQ(2, q->drops[BLAMER_DROP_STRING_CUT]);
	EXPECT_EQ(1, q->drops[BLAMER_DROP_LABEL_CUT]);
	EXPECT_EQ(1, q->drops[BLAMER_DROP_STACK_OVERFLOW]);
	EXPECT_EQ(1, q->drops[BLAMER_DROP_NAME_CUT]);
	EXPECT_EQ(1, q->drops[BLAMER_DROP_LOG_CUT]);
	EXPECT_EQ(1, q->drops[BLAMER_DROP_BAD_HANDLE]);
	EXPECT_EQ(1, q->drops[BLAMER_DROP_HEAP_FULL]);
	EXPECT_EQ(8, q->dropped);
	EXPECT_STREQ("string_cut", blamer_drop_reason_name(BLAMER_DROP_STRING_CUT));
	EXPECT_EQ(NULL, blamer_drop_reason_name(BLAMER_DROP_REASONS));
	f = snap_field(&q->user_data, "s");
	ASSERT_NE(NULL, f);
	EXPECT_TRUE(f->cut);
	EXPECT_STREQ("01234567", (char *)f->bytes);
	ASSERT_EQ(1, q->nthreads);
	ASSERT_EQ(1, q->threads[0].nacts);
	EXPECT_TRUE(q->threads[0].acts[0].label_cut);
	EXPECT_EQ(BLAMER_LABEL_MAX, strlen(q->threads[0].acts[0].label));
	blamer_snapshot_free(s);
	t_close(self, b);
}

/*
 * posix_spawn() (vfork or clone(CLONE_VM) underneath: no fork handler
 * runs) and vfork() share the parent's memory until exec or _exit: the
 * parent's context, caches and heap are as they were, and it goes on.
 */
TEST_F(ctx, posix_spawn_and_vfork_leave_the_parent_alone)
{
	char *argv[] = { "true", NULL };
	uint64_t ids[1] = { 9 }, sum[BLAMER_DAG_MAX_UNITS], nshards;
	struct blamer_config c;
	struct blamer_path *p;
	struct v_stats st;
	struct v_heap v;
	struct blamer *b;
	uint32_t gen;
	int status;
	char why[64];
	pid_t pid;

	c = t_cfg(self->dir, 65536, 4);
	ASSERT_EQ(0, t_open(self, &c, &b));
	p = blamer_path_get(b, ids, 1, NULL, 0);
	ASSERT_NE(NULL, p);
	blamer_path_add(p, 0, 1);
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "spawning", 0, 0));
	gen = b->gen;
	ASSERT_EQ(0, posix_spawnp(&pid, "true", NULL, NULL, argv, NULL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	pid = vfork();
	if (pid == 0)
		_exit(0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(gen, b->gen);
	blamer_path_add(p, 0, 2);
	blamer_pop(b);
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(0, v_path_values(&v, p->h.ref, sum, &nshards, why)) TH_LOG("%s", why);
	ASSERT_EQ(3, sum[0]);
	t_close(self, b);
}

/*
 * fork() from a signal handler that interrupted a write which was making
 * the heap: a fork child's first write (its lazy heap) or a write that
 * grows the heap by a slab. The grandchild returned into that making
 * with its context reset by the fork handler: it finished the heap of
 * its parent (the parent's pid, slab files it had mapped shared), a
 * grown slab with a NULL heap header, or a heap that failed for good.
 * Every grandchild must have a heap of its own that its writes reach,
 * and the child's heap must be untouched by it.
 */
static struct blamer *mk_b;
static volatile sig_atomic_t mk_g, mk_n, mk_alarms;
static pid_t mk_pids[3];

/* Forks at the 1st alarm (most likely in the making of the heap), at
 * one found growing the heap by a slab, and at the 120th. */
static void mk_fork_on_alarm(int sig)
{
	struct blamer_heap_header *hh = mk_b->heap.hh;
	int n = mk_alarms++;
	pid_t pid;

	(void)sig;
	if (mk_g || mk_n == 3 ||
	    (n != 0 && n != 120 && !(hh && __atomic_load_n(&hh->grow_claim, __ATOMIC_RELAXED))))
		return;
	pid = fork();
	if (pid == 0)
		mk_g = 1;
	else if (pid > 0)
		mk_pids[mk_n++] = pid;
}

/* The grandchild, back from the handler: its own heap, its own adds. */
static int mk_grandchild(void)
{
	uint64_t id = 7777, sum[BLAMER_DAG_MAX_UNITS], nshards;
	struct blamer_heap_info info;
	struct blamer_path *p;
	struct v_stats st;
	struct v_heap v;
	char why[64];

	if (blamer_heap_info(mk_b, &info) || info.pid != getpid())
		return 2;
	p = blamer_path_get(mk_b, &id, 1, NULL, 0);
	if (!p)
		return 3;
	blamer_path_add(p, 0, 5);
	t_view(mk_b, &v);
	if (v_check(&v, &st) || st.pid != getpid())
		return 4;
	if (v_path_values(&v, p->h.ref, sum, &nshards, why) || sum[0] != 5)
		return 5;
	return 0;
}

/* The child: its first write makes its heap, then it writes until the
 * heap is full, a slab at a time, under a fast timer that forks. 0, or
 * 11 if its own heap is not whole and its own, or 20 + a grandchild's
 * mk_grandchild() code (40 + its signal). Before the fix: 11 (the
 * grandchild took the child's heap name first: EEXIST, no heap at all,
 * or EINTR read /proc/<pid>/stat: the heap failed), 22 (the grandchild
 * had finished its parent's heap as its own) or 21 (UBSan: the
 * grandchild's interrupted path_get() turned a ref into NULL + offset). */
static int mk_child(void)
{
	struct itimerval it = { { 0, 40 }, { 0, 40 } };
	struct blamer_path *p;
	struct v_stats st;
	struct v_heap v;
	uint64_t id;
	int i, status, ret = 0;

	setitimer(ITIMER_REAL, &it, NULL);
	for (id = 1; id < 100000 && !mk_g; id++) {
		p = blamer_path_get(mk_b, &id, 1, NULL, 0);
		if (!p && mk_b->heap.hh && (bl_heap_flags(&mk_b->heap) & BLAMER_HEAP_F_FULL))
			break;
		if (p)
			blamer_path_add(p, 0, 1);
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	if (mk_g)
		return mk_grandchild();
	for (i = 0; i < mk_n; i++) {
		if (waitpid(mk_pids[i], &status, 0) != mk_pids[i])
			return 10;
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			ret = WIFEXITED(status) ? 20 + WEXITSTATUS(status) : 40 + WTERMSIG(status);
	}
	t_view(mk_b, &v);
	if (v_check(&v, &st) || st.pid != getpid())
		return 11;
	return ret;
}

TEST_F(ctx, fork_in_a_signal_handler_while_a_write_makes_the_heap)
{
	struct sigaction sa = { .sa_handler = mk_fork_on_alarm };
	struct blamer_config c;
	int round, status, forks = 0;
	pid_t pid;

	/*
	 * The dir backend only: the making this tests is the library's,
	 * whatever gives it slabs, and on the device in a guest under TCG
	 * (the vm-lib suites) a 40 us timer's signals left the child no
	 * time to fill its 64 slabs within the harness's 30 s.
	 */
	if (t_backend() != BLAMER_BACKEND_DIR)
		SKIP(return, "dir backend: a 40 us timer starves a guest under TCG");
	c = t_cfg(self->dir, 16384, BLAMER_MAX_SLABS);
	ASSERT_EQ(0, t_open(self, &c, &mk_b));
	ASSERT_EQ(1, blamer_push(mk_b, BLAMER_ACTIVITY_TASK, "parent", 0, 0));
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	for (round = 0; round < 12; round++) {
		pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			int ret = mk_child();

			/* a child's forks, for the parent to count */
			_exit(mk_g || ret ? ret : 100 + mk_n);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status)) TH_LOG("round %d: signal %d", round,
						     WTERMSIG(status));
		ASSERT_LE(100, WEXITSTATUS(status)) TH_LOG("round %d: %d", round,
							   WEXITSTATUS(status));
		forks += WEXITSTATUS(status) - 100;
	}
	signal(SIGALRM, SIG_DFL);
	ASSERT_LT(0, forks);
}

/* A thread inside dl_iterate_phdr() most of the time: through
 * blamer_modules_refresh() and directly with a slow callback. */
static volatile int loader_stop;

static int slow_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info, (void)size, (void)arg;
	usleep(50);
	return 0;
}

static void *loader_busy(void *arg)
{
	while (!loader_stop) {
		blamer_modules_refresh(arg);
		dl_iterate_phdr(slow_module, NULL);
	}
	return NULL;
}

/*
 * A fork child's first write makes its heap, with its modules. Were they
 * read with dl_iterate_phdr() in the child, a fork while another thread
 * was inside it (glibc does not hold the loader's lock across fork)
 * would leave the child that lock taken, and the write would hang for
 * good: the parent's list as at the fork is recorded instead
 * (lib/writer/modules.c). Each child has 10 s.
 */
TEST_F(ctx, fork_child_first_write_while_parent_thread_walks_modules)
{
	struct blamer_config c;
	struct blamer *b;
	pthread_t th;
	int i, hung = 0, failed = 0;

	c = t_cfg(self->dir, 65536, 4);
	c.flags &= ~BLAMER_OPEN_NO_MODULES;
	ASSERT_EQ(0, t_open(self, &c, &b));
	loader_stop = 0;
	ASSERT_EQ(0, pthread_create(&th, NULL, loader_busy, b));
	for (i = 0; i < 20; i++) {
		int status;
		pid_t pid;

		usleep(300);
		pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			alarm(10);
			_exit(blamer_push(b, BLAMER_ACTIVITY_TASK, "child", 0, 0) == 1 ? 0 : 1);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		hung += WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
		failed += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	loader_stop = 1;
	pthread_join(th, NULL);
	EXPECT_EQ(0, hung);
	EXPECT_EQ(0, failed);
	t_close(self, b);
}

/*
 * A fork child's first write that cannot make its heap (no descriptor
 * free, for a moment) is dropped and counted; the making is tried again
 * after a short backoff, and the heap then made shows the drops counted
 * without one (BLAMER_DROP_NO_HEAP) and takes the writes after.
 */
TEST_F(ctx, fork_child_makes_its_heap_after_a_failure)
{
	struct blamer_metric_def d = { .name = "adds", .kind = BLAMER_METRIC_COUNTER };
	struct blamer_series *cs;
	struct blamer_config c;
	struct blamer *b;
	int status;
	pid_t pid;

	c = t_cfg(self->dir, 65536, 4);
	ASSERT_EQ(0, t_open(self, &c, &b));
	cs = blamer_metric_series(blamer_metric_define(b, &d), NULL, NULL, 0);
	ASSERT_NE(NULL, cs);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rlimit old, low = { 0, 0 };
		const struct blamer_snap_process *q;
		struct blamer_snapshot *s;
		struct blamer_heap_info hi;
		int i, ok = 1, tries = 0;

		ok &= getrlimit(RLIMIT_NOFILE, &old) == 0;
		low.rlim_max = old.rlim_max;
		ok &= setrlimit(RLIMIT_NOFILE, &low) == 0;
		ok &= blamer_push(b, BLAMER_ACTIVITY_TASK, "first", 0, 0) < 0;
		blamer_counter_add(cs, 1);	/* dropped: no_heap */
		ok &= blamer_heap_info(b, &hi) != 0;
		ok &= setrlimit(RLIMIT_NOFILE, &old) == 0;
		/* the backoff is 10 ms: tried again within 3 s */
		while (blamer_heap_info(b, &hi) && tries++ < 300)
			usleep(10000);
		ok &= tries <= 300;
		for (i = 0; i < 10; i++)
			blamer_counter_add(cs, 1);
		s = ok ? t_own_snapshot(b) : NULL;
		q = s && s->nprocs == 1 ? &s->procs[0] : NULL;
		ok &= q && q->rec_pid == getpid() && q->drops[BLAMER_DROP_NO_HEAP] >= 1 &&
		      q->nmetrics == 1 && q->metrics[0].value == 10;
		if (!ok)
			fprintf(stderr, "# child: tries %d no_heap %llu metrics %zu value %g: %s\n",
				tries, q ? (unsigned long long)q->drops[BLAMER_DROP_NO_HEAP] : 0,
				q ? q->nmetrics : 0, q && q->nmetrics ? q->metrics[0].value : -1,
				blamer_errmsg());
		blamer_snapshot_free(s);
		blamer_abandon(b);
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	t_close(self, b);
}

/*
 * The malloc()s and free()s a sanitizer's allocator sees (ASan, TSan:
 * __sanitizer_install_malloc_and_free_hooks()); without one, not
 * counted (the static build of the VM suites: skipped there).
 */
int __sanitizer_install_malloc_and_free_hooks(void (*)(const volatile void *, size_t),
					      void (*)(const volatile void *))
	__attribute__((weak));
static volatile int allocs_counting, allocs;

static void count_malloc(const volatile void *p, size_t n)
{
	(void)p, (void)n;
	if (allocs_counting)
		allocs++;
}

static void count_free(const volatile void *p)
{
	(void)p;
	if (allocs_counting)
		allocs++;
}

static struct blamer_series *sig_series;

static void add_on_signal(int sig)
{
	(void)sig;
	blamer_counter_add(sig_series, 1);
}

/*
 * A fork child's heap is made by its first write, which may be a signal
 * handler's (counter_add is async-signal-safe): nothing on that path may
 * malloc() (an interrupted malloc() of the program's was heap
 * corruption, or a hang). Made here with modules and more inherited
 * definitions than the replay keeps on its stack.
 */
TEST_F(ctx, fork_child_first_write_in_a_handler_allocates_nothing)
{
	struct blamer_metric_def d = { .name = "sigadds", .kind = BLAMER_METRIC_COUNTER };
	struct sigaction sa = { .sa_handler = add_on_signal };
	struct blamer_config c;
	struct blamer *b;
	char name[32];
	int i, status;
	pid_t pid;

	if (!__sanitizer_install_malloc_and_free_hooks)
		SKIP(return, "no sanitizer's allocator to count the malloc()s");
	c = t_cfg(self->dir, 1 << 20, 4);
	c.flags = 0;	/* modules too */
	ASSERT_EQ(0, t_open(self, &c, &b));
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "node %d", i);
		ASSERT_EQ(0, blamer_dag_node(b, blamer_dag_id(name), 0, name));
	}
	ASSERT_NE(NULL, blamer_set_int(b, BLAMER_DATA_GLOBAL, "g", 3));
	sig_series = blamer_metric_series(blamer_metric_define(b, &d), NULL, NULL, 0);
	ASSERT_NE(NULL, sig_series);
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	__sanitizer_install_malloc_and_free_hooks(count_malloc, count_free);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		const struct blamer_snap_process *q;
		struct blamer_snapshot *s;
		int made, n;

		allocs = 0;
		allocs_counting = 1;
		raise(SIGUSR1);
		allocs_counting = 0;
		n = allocs;
		made = ld_acquire(A32(&b->state)) == BL_ST_READY;
		s = made ? t_own_snapshot(b) : NULL;
		q = s && s->nprocs == 1 ? &s->procs[0] : NULL;
		if (n || !q || q->nmodules == 0 || q->nnodes < 300 || q->nmetrics < 1 ||
		    q->dropped)
			fprintf(stderr, "# child: %d allocations, heap %s, modules %zu nodes %zu "
				"metrics %zu dropped %llu\n", n, made ? "made" : "not made",
				q ? q->nmodules : 0, q ? q->nnodes : 0, q ? q->nmetrics : 0,
				q ? (unsigned long long)q->dropped : 0);
		n = n || !q || q->nmodules == 0 || q->nnodes < 300 || q->nmetrics < 1 ||
		    q->dropped;
		blamer_snapshot_free(s);
		blamer_abandon(b);
		_exit(n);
	}
	signal(SIGUSR1, SIG_DFL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	t_close(self, b);
}

/*
 * prctl() as the library calls it (a thread's first write asks the
 * kernel for its name), but when told: SIGUSR1 raised there, so that it
 * is delivered at the call's return, where a signal pending during the
 * system call would be.
 */
static volatile sig_atomic_t signal_at_get_name;
static struct blamer *handler_ctx;

int prctl(int op, ...)
{
	unsigned long a[4];
	va_list ap;
	long ret;
	int i;

	va_start(ap, op);
	for (i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	ret = syscall(SYS_prctl, op, a[0], a[1], a[2], a[3]);
	if (op == PR_GET_NAME && signal_at_get_name) {
		signal_at_get_name = 0;
		raise(SIGUSR1);
	}
	return (int)ret;
}

static void write_in_handler(int sig)
{
	(void)sig;
	blamer_push(handler_ctx, BLAMER_ACTIVITY_TASK, "handler", 0, 0);
	blamer_pop(handler_ctx);
}

/*
 * With write_in_handler() on SIGUSR1, 20 threads of @fn on @b, one at a
 * time, each gone before the next: the threads @b's heap shows then, or
 * -1 if a step failed.
 */
static int threads_shown_after(struct blamer *b, void *(*fn)(void *))
{
	struct sigaction sa = { .sa_handler = write_in_handler }, old;
	struct blamer_snapshot *s;
	bool ok = true;
	pthread_t t;
	int i, n;

	handler_ctx = b;
	if (sigaction(SIGUSR1, &sa, &old))
		return -1;
	for (i = 0; ok && i < 20; i++)
		ok = !pthread_create(&t, NULL, fn, b) && !pthread_join(t, NULL);
	signal_at_get_name = 0;
	if (sigaction(SIGUSR1, &old, NULL) || !ok)
		return -1;
	s = t_own_snapshot(b);
	if (!s)
		return -1;
	n = (int)s->procs[0].nthreads;
	blamer_snapshot_free(s);
	return n;
}

static void *first_write(void *arg)
{
	signal_at_get_name = 1;
	blamer_push(arg, BLAMER_ACTIVITY_TASK, "work", 0, 0);
	blamer_pop(arg);
	return NULL;
}

/*
 * A signal handler that writes while its thread registers (its first
 * write) must use the record being made, not register one of its own:
 * that one was never retired, so 20 threads, one at a time, each gone,
 * left 20 records shown as live threads, and a thread churning service
 * with a timer grew its heap without bound.
 */
TEST_F(ctx, a_handler_writing_while_its_thread_registers_leaves_no_record)
{
	struct blamer_config c;
	struct blamer *b;

	c = t_cfg(self->dir, 65536, 4);
	ASSERT_EQ(0, t_open(self, &c, &b));
	EXPECT_EQ(0, threads_shown_after(b, first_write));
	t_close(self, b);
}

/*
 * A key of the test's, made after the library's, so that its destructor
 * runs after the library's in each round: it asks for every round glibc
 * gives (PTHREAD_DESTRUCTOR_ITERATIONS) and in the last raises SIGUSR1,
 * whose handler writes, as a timer's signal may arrive when the
 * thread's own destructors are done.
 */
static pthread_key_t late_key;
static __thread int late_rounds;

static void late_destructor(void *v)
{
	if (++late_rounds < PTHREAD_DESTRUCTOR_ITERATIONS)
		pthread_setspecific(late_key, v);
	else
		raise(SIGUSR1);
}

static void *write_then_exit(void *arg)
{
	blamer_push(arg, BLAMER_ACTIVITY_TASK, "work", 0, 0);
	blamer_pop(arg);
	pthread_setspecific(late_key, arg);
	return NULL;
}

/*
 * A handler writing after the thread's exit destructor registered a
 * record no destructor retired (glibc gives a key's destructor a few
 * rounds, and holds the signals only at the very end): 20 threads left
 * 20 records. The destructor leaves the thread's signals held.
 */
TEST_F(ctx, a_handler_writing_as_its_thread_exits_leaves_no_record)
{
	struct blamer_config c;
	struct blamer *b;

	c = t_cfg(self->dir, 65536, 4);
	ASSERT_EQ(0, t_open(self, &c, &b));
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "main", 0, 0));	/* the library's key */
	ASSERT_EQ(0, pthread_key_create(&late_key, late_destructor));
	EXPECT_EQ(1, threads_shown_after(b, write_then_exit));	/* this one's */
	pthread_key_delete(late_key);
	blamer_pop(b);
	t_close(self, b);
}

/*
 * A worker that lowered RLIMIT_FSIZE below a slab (a sandbox) gets an
 * error from the slab's making, not SIGXFSZ: the kernel sends it with
 * EFBIG, and its default action (delivered when the writer let its
 * signals go) killed the process at blamer_open() or at a fork child's
 * first counter add. Dir backend: the device's slabs are no files.
 */
TEST_F(ctx, a_file_size_limit_fails_the_making_and_kills_nothing)
{
	struct blamer_config c;
	struct blamer *b, *mine;
	int status;
	pid_t pid;

	if (t_backend() != BLAMER_BACKEND_DIR)
		SKIP(return, "dir backend: the device's slabs are not files");
	c = t_cfg(self->dir, 1 << 20, 4);
	ASSERT_EQ(0, t_open(self, &c, &b));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rlimit rl = { 65536, 65536 };
		int ok;

		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(90);
		/* a context of its own: refused */
		ok = blamer_open(&c, &mine) == -EFBIG;
		/* the inherited one's heap, made at the child's first write */
		ok &= blamer_push(b, BLAMER_ACTIVITY_TASK, "child", 0, 0) < 0;
		_exit(ok ? 0 : 91);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status)) TH_LOG("killed by signal %d", WTERMSIG(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	t_close(self, b);
}

TEST_HARNESS_MAIN
