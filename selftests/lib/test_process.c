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
#include <signal.h>
#include <sys/prctl.h>
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

TEST_HARNESS_MAIN
