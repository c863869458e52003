// SPDX-License-Identifier: MIT
/*
 * libblamer writer tests, contexts and backends: open and close, the dir
 * backend's directory and files, the backend choice, the heap a context
 * starts with, the process default.
 * Each test runs in a fixture (common.h): a private directory and a
 * context the teardown closes, so a failed assert leaks neither.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "common.h"

TEST_F(ctx, open_close_dir)
{
	struct blamer_config c = t_cfg(NULL, 0, 0);
	struct blamer_heap_info info;
	char name[128];
	struct stat st;
	struct blamer *b;

	c.backend = BLAMER_BACKEND_DIR;
	c.dir = self->dir;
	ASSERT_EQ(0, t_open(self, &c, &b)) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(0, blamer_heap_info(b, &info));
	ASSERT_EQ(BLAMER_BACKEND_DIR, info.backend);
	ASSERT_EQ(getpid(), info.pid);
	snprintf(name, sizeof(name), "%s/%d-%lld.0.slab", self->dir, getpid(), (long long)info.start_ns);
	ASSERT_EQ(0, stat(name, &st));
	ASSERT_EQ(0600, st.st_mode & 0777);
	ASSERT_EQ(1u << 20, (unsigned)st.st_size);
	/* start_ns is the /proc/self/stat start time on the agreed scale */
	ASSERT_EQ(bl_proc_start_ns(getpid()), info.start_ns);
	t_close(self, b);
	ASSERT_EQ(-1, stat(name, &st));
}

TEST_F(ctx, dir_refuses_unsafe_places)
{
	struct blamer_config c = t_cfg(NULL, 0, 0);
	char p[256], q[256];
	struct blamer *b;

	c.backend = BLAMER_BACKEND_DIR;
	/* a symlink to a good directory */
	snprintf(p, sizeof(p), "%s/real", self->dir);
	snprintf(q, sizeof(q), "%s/link", self->dir);
	ASSERT_EQ(0, mkdir(p, 0700));
	ASSERT_EQ(0, symlink(p, q));
	c.dir = q;
	ASSERT_EQ(-EPERM, t_open(self, &c, &b));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "symlink"));
	/* writable by others */
	ASSERT_EQ(0, chmod(p, 0777));
	c.dir = p;
	ASSERT_EQ(-EPERM, t_open(self, &c, &b));
	ASSERT_EQ(0, chmod(p, 0700));
	/* owned by someone else (only root can arrange that) */
	if (geteuid() == 0) {
		ASSERT_EQ(0, chown(p, 4242, 4242));
		ASSERT_EQ(-EPERM, t_open(self, &c, &b));
		ASSERT_EQ(0, chown(p, 0, 0));
	}
	/* a file planted where our slab goes: a hard link, then a symlink */
	snprintf(q, sizeof(q), "%s/%d-%lld.0.slab", p, getpid(),
		 (long long)bl_proc_start_ns(getpid()));
	{
		char victim[256];
		int fd;

		snprintf(victim, sizeof(victim), "%s/victim", self->dir);
		fd = open(victim, O_CREAT | O_RDWR, 0600);
		ASSERT_GE(fd, 0);
		close(fd);
		ASSERT_EQ(0, link(victim, q));
		ASSERT_EQ(-EEXIST, t_open(self, &c, &b));
		ASSERT_EQ(0, unlink(q));
		ASSERT_EQ(0, symlink(victim, q));
		ASSERT_EQ(-EEXIST, t_open(self, &c, &b));
		ASSERT_EQ(0, unlink(q));
		/* the victim was never written */
		{
			struct stat st;

			ASSERT_EQ(0, stat(victim, &st));
			ASSERT_EQ(0, st.st_size);
		}
	}
	/* and the good directory works */
	ASSERT_EQ(0, t_open(self, &c, &b)) TH_LOG("%s", blamer_errmsg());
	t_close(self, b);
}

/*
 * The image a process becomes by execve() (pid and start time kept): run
 * with T_AFTER_EXEC set to the directory where its former image left a
 * heap, it makes its own first heap there, replacing that one, pushes
 * "after-exec" and ends without a close (the heap stays to be read).
 * Before the harness's main: a constructor.
 */
__attribute__((constructor)) static void after_exec(void)
{
	const char *dir = getenv("T_AFTER_EXEC");
	struct blamer_config c;
	struct blamer *b;

	if (!dir)
		return;
	c = t_cfg(dir, 65536, 2);
	c.backend = BLAMER_BACKEND_DIR;
	if (blamer_open(&c, &b))
		_exit(1);
	_exit(blamer_push(b, BLAMER_ACTIVITY_TASK, "after-exec", 0, 0) == 1 ? 0 : 2);
}

/*
 * One image of a chain of execve()s: run with T_EXEC_CHAIN set to
 * "<dir>:<images left>", it adds 1 to the service counter "execs_total"
 * (an exporter folds it: the heap is marked so) in a heap of its own in
 * <dir>, then, if images are left, becomes the next image of the chain.
 */
__attribute__((constructor)) static void exec_chain(void)
{
	const struct blamer_metric_def d = { .name = "execs_total",
					     .kind = BLAMER_METRIC_COUNTER };
	const char *e = getenv("T_EXEC_CHAIN"), *colon;
	char dir[200], next[240];
	struct blamer_config c;
	struct blamer *b;
	long left;

	if (!e)
		return;
	colon = strrchr(e, ':');
	if (!colon || colon - e >= (long)sizeof(dir))
		_exit(5);
	memcpy(dir, e, (size_t)(colon - e));
	dir[colon - e] = '\0';
	left = strtol(colon + 1, NULL, 10);
	c = t_cfg(dir, 65536, 2);
	c.backend = BLAMER_BACKEND_DIR;
	if (blamer_open(&c, &b))
		_exit(1);
	blamer_counter_add(blamer_metric_series(blamer_metric_define(b, &d), NULL, NULL, 0), 1);
	if (left <= 1)
		_exit(0);	/* the last image: its heap stays, as at a crash */
	snprintf(next, sizeof(next), "%s:%ld", dir, left - 1);
	setenv("T_EXEC_CHAIN", next, 1);
	execl("/proc/self/exe", "test_context", "exec-chain", (char *)NULL);
	_exit(4);
}

/* The label at the bottom of the first stack of @p that has one, or "". */
static const char *bottom_label(const struct blamer_snap_process *p)
{
	size_t i;

	for (i = 0; i < p->nthreads; i++)
		if (p->threads[i].nacts)
			return p->threads[i].acts[0].label;
	return "";
}

/* The heaps of @dir's snapshot (dead ones read in full), for @pid. */
static struct blamer_snapshot *t_snap(struct blamer_reader **r, const char *dir)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR, .dir = dir,
					.flags = BLAMER_READ_DEAD_FULL };
	struct blamer_snapshot *s = NULL;
	char e[256];

	*r = blamer_reader_open(&o, e, sizeof(e));
	if (*r && blamer_reader_snapshot(*r, &s, e, sizeof(e)))
		s = NULL;
	return s;
}

/* After execve() a process keeps its pid and start time: the heap files
 * of its former image are replaced by the new image's first heap (the
 * old heap is then gone, not dead). */
TEST_F(ctx, heap_left_before_exec_is_replaced)
{
	struct blamer_config c = t_cfg(NULL, 65536, 2);
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	char name[128];
	struct stat st;
	int status;
	pid_t pid;

	if (t_backend() != BLAMER_BACKEND_DIR)
		SKIP(return, "dir backend");
	c.backend = BLAMER_BACKEND_DIR;
	c.dir = self->dir;
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char *argv[] = { "test_context", "after-exec", NULL };
		struct blamer *b;

		if (blamer_open(&c, &b) || blamer_push(b, BLAMER_ACTIVITY_TASK, "before-exec",
						       0, 0) != 1)
			_exit(3);
		setenv("T_AFTER_EXEC", self->dir, 1);
		execv("/proc/self/exe", argv);
		_exit(4);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	s = t_snap(&r, self->dir);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(1, s->nprocs);
	ASSERT_EQ(pid, s->procs[0].pid);
	ASSERT_STREQ("after-exec", bottom_label(&s->procs[0]));
	snprintf(name, sizeof(name), "%s/%d-%llu.0.slab", self->dir, pid,
		 (unsigned long long)s->procs[0].start_time_ns);
	ASSERT_EQ(0, stat(name, &st));
	blamer_snapshot_free(s);
	blamer_reader_close(r);
}

/*
 * A heap the former image left that holds series an exporter folds is
 * not replaced: replaced, its counts would leave the service's totals (a
 * program that re-executes itself, a server's master reloading by
 * execve()). Each image takes the next seq, up to 16 kept; past them the
 * next image replaces the last (bounded: a program that execs itself
 * without end). 18 images of one counter each: 17 heaps, 17 counted.
 * Before, each image replaced the last: one heap, 1 counted.
 */
TEST_F(ctx, a_heap_to_fold_left_before_exec_is_kept)
{
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	char v[240];
	int status;
	size_t i;
	pid_t pid;

	if (t_backend() != BLAMER_BACKEND_DIR)
		SKIP(return, "dir backend");
	snprintf(v, sizeof(v), "%s:18", self->dir);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		setenv("T_EXEC_CHAIN", v, 1);
		execl("/proc/self/exe", "test_context", "exec-chain", (char *)NULL);
		_exit(4);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	s = t_snap(&r, self->dir);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(17, s->nprocs);
	for (i = 0; i < s->nprocs; i++)
		ASSERT_EQ(pid, s->procs[i].pid);
	ASSERT_EQ(1, s->nseries);
	ASSERT_EQ(17, s->series[0].value);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
}

/*
 * Every later heap of one process image in a directory is a heap of its
 * own: a second live context's, and one made after blamer_abandon()
 * (which leaves the heap as a crash would) or a blamer_close() that kept
 * its heap for an exporter to fold. The same name made again replaced
 * the earlier heap: its data were gone.
 */
TEST_F(ctx, later_heaps_of_one_process_are_their_own)
{
	struct blamer_config c = t_cfg(NULL, 65536, 2);
	const struct blamer_snap_process *pa = NULL, *pb = NULL;
	struct blamer *a, *b, *d;
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	char e[256];
	size_t i;

	if (t_backend() != BLAMER_BACKEND_DIR)
		SKIP(return, "dir backend: the device makes a heap per open file");
	c.backend = BLAMER_BACKEND_DIR;
	c.dir = self->dir;
	ASSERT_EQ(0, blamer_open(&c, &a)) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(1, blamer_push(a, BLAMER_ACTIVITY_TASK, "first", 0, 0));
	/* a second live context: a heap of its own, gone at its close */
	ASSERT_EQ(0, t_open(self, &c, &d)) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(1, blamer_push(d, BLAMER_ACTIVITY_TASK, "second", 0, 0));
	t_close(self, d);
	blamer_abandon(a);
	ASSERT_EQ(0, t_open(self, &c, &b)) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "third", 0, 0));
	s = t_snap(&r, self->dir);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(2, s->nprocs);
	for (i = 0; i < s->nprocs; i++) {
		ASSERT_EQ(getpid(), s->procs[i].pid);
		ASSERT_EQ(BLAMER_PROC_LIVE, s->procs[i].state);
		if (!strcmp(bottom_label(&s->procs[i]), "first"))
			pa = &s->procs[i];
		else if (!strcmp(bottom_label(&s->procs[i]), "third"))
			pb = &s->procs[i];
	}
	ASSERT_NE(NULL, pa);
	ASSERT_NE(NULL, pb);
	ASSERT_NE(pa->heap_key, pb->heap_key);
	ASSERT_NE(pa->heap_id, pb->heap_id);
	blamer_snapshot_free(s);
	/* a close removes its own heap's files, not the abandoned one's */
	t_close(self, b);
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, e, sizeof(e))) TH_LOG("%s", e);
	ASSERT_EQ(1, s->nprocs);
	ASSERT_STREQ("first", bottom_label(&s->procs[0]));
	blamer_snapshot_free(s);
	blamer_reader_close(r);
}

/*
 * A process that shares this one's memory without being its thread
 * (clone(CLONE_VM) without CLONE_THREAD; a vfork child before exec) and
 * makes a dir heap takes its seq from the same memory. The seqs were one
 * word keyed by pid: the other pid restarted them at 0, and so did this
 * process's next heap, named as its first again: beside a live heap that
 * was EEXIST (the open failed), over an abandoned one (its lock free, so
 * taken for a former image's) the heap was replaced and its data lost.
 */
static int clone_vm_open(void *arg)
{
	struct blamer_config *c = arg;
	struct blamer *b;

	if (blamer_open(c, &b) || blamer_push(b, BLAMER_ACTIVITY_TASK, "sharer", 0, 0) != 1)
		return 3;
	blamer_close(b);
	return 0;
}

TEST_F(ctx, a_process_sharing_memory_leaves_the_seqs_alone)
{
	static const char *const want[] = { "first", "second", "third", "fourth" };
	struct blamer_config c = t_cfg(NULL, 65536, 2);
	bool seen[4] = { false };
	struct blamer *a, *d, *b, *e;
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	size_t stack_size = 256 << 10, i, j;
	char *stack;
	int status;
	pid_t pid;

	if (t_backend() != BLAMER_BACKEND_DIR)
		SKIP(return, "dir backend: the device names no heap");
	c.backend = BLAMER_BACKEND_DIR;
	c.dir = self->dir;
	/* seq 0 abandoned (its lock gone), seq 1 live */
	ASSERT_EQ(0, blamer_open(&c, &a)) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(1, blamer_push(a, BLAMER_ACTIVITY_TASK, "first", 0, 0));
	blamer_abandon(a);
	ASSERT_EQ(0, blamer_open(&c, &d)) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(1, blamer_push(d, BLAMER_ACTIVITY_TASK, "second", 0, 0));
	stack = malloc(stack_size);
	ASSERT_NE(NULL, stack);
	pid = clone(clone_vm_open, stack + stack_size, CLONE_VM | SIGCHLD, &c);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	free(stack);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	/* this process's next heaps: neither replaces the abandoned one nor
	 * runs into the live one */
	ASSERT_EQ(0, blamer_open(&c, &b)) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(1, blamer_push(b, BLAMER_ACTIVITY_TASK, "third", 0, 0));
	ASSERT_EQ(0, blamer_open(&c, &e)) TH_LOG("%s", blamer_errmsg());
	ASSERT_EQ(1, blamer_push(e, BLAMER_ACTIVITY_TASK, "fourth", 0, 0));
	s = t_snap(&r, self->dir);
	ASSERT_NE(NULL, s);
	ASSERT_EQ(4, s->nprocs);
	for (i = 0; i < s->nprocs; i++) {
		ASSERT_EQ(getpid(), s->procs[i].pid);
		for (j = 0; j < 4; j++)
			if (!strcmp(bottom_label(&s->procs[i]), want[j]))
				seen[j] = true;
	}
	for (j = 0; j < 4; j++)
		EXPECT_TRUE(seen[j]) TH_LOG("no heap says label %zu of want[]", j);
	blamer_snapshot_free(s);
	blamer_reader_close(r);
	blamer_close(e);
	blamer_close(b);
	blamer_close(d);
}

TEST_F(ctx, backend_choice_is_explicit)
{
	struct blamer_config c = t_cfg(NULL, 0, 0);
	struct blamer *b;
	int ret;

	c.dir = self->dir;
	c.backend = BLAMER_BACKEND_AUTO;
	setenv("BLAMER_BACKEND", "carrier-pigeon", 1);
	ASSERT_EQ(-EINVAL, t_open(self, &c, &b));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "BLAMER_BACKEND"));
	setenv("BLAMER_BACKEND", "device", 1);
	ret = t_open(self, &c, &b);
	if (access("/dev/blamer", R_OK | W_OK)) {
		/* no silent fallback to dir */
		ASSERT_NE(0, ret);
		ASSERT_NE(NULL, strstr(blamer_errmsg(), "/dev/blamer"));
	} else {
		struct blamer_heap_info info;

		ASSERT_EQ(0, ret) TH_LOG("%s", blamer_errmsg());
		ASSERT_EQ(0, blamer_heap_info(b, &info));
		ASSERT_EQ(BLAMER_BACKEND_DEVICE, info.backend);
		t_close(self, b);
	}
	setenv("BLAMER_BACKEND", "dir", 1);
	ASSERT_EQ(0, t_open(self, &c, &b)) TH_LOG("%s", blamer_errmsg());
	t_close(self, b);
	unsetenv("BLAMER_BACKEND");
}

TEST_F(ctx, heap_format_after_open)
{
	struct blamer_config c;
	struct v_stats st;
	struct v_heap v;
	struct blamer *b;

	c = t_cfg(self->dir, 0, 0);
	c.flags = 0;	/* with modules */
	ASSERT_EQ(0, t_open(self, &c, &b)) TH_LOG("%s", blamer_errmsg());
	t_view(b, &v);
	ASSERT_EQ(0, v_check(&v, &st)) TH_LOG("%s", st.why);
	ASSERT_EQ(BLAMER_HEAP_READY, st.state);
	ASSERT_EQ(1, st.by_type[BLAMER_REC_PROCESS]);
	/* made on first use (test_records.c: data_and_log_made_on_first_use) */
	ASSERT_EQ(0, st.by_type[BLAMER_REC_USERDATA]);
	ASSERT_EQ(0, st.by_type[BLAMER_REC_LOG]);
	ASSERT_GE(st.by_type[BLAMER_REC_MODULE], 2);	/* the test and libc at least */
	ASSERT_EQ(getpid(), st.pid);
	ASSERT_NE(0, st.data_id);
	{
		struct blamer_process *p = bl_ptr(&b->heap, b->process);

		ASSERT_EQ(BLAMER_PHASE_LAUNCHED, p->phase);
		ASSERT_GT(p->cmdline_len, 0);
		ASSERT_NE(NULL, strstr(p->cmdline, "test_context"));
		ASSERT_EQ(0, blamer_set_phase(b, BLAMER_PHASE_MAIN_LOOP));
		ASSERT_EQ(BLAMER_PHASE_MAIN_LOOP, p->phase);
	}
	t_close(self, b);
}

/* How many entries but . and .. directory @path holds. */
static int entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/*
 * A directory name longer than the 255 bytes a context keeps: given in
 * the config it was refused, but $BLAMER_DIR was cut to its first 255
 * bytes, and the heap made in the directory those name (here the parent
 * of the one meant). Both are refused now, and 255 bytes are taken.
 */
TEST_F(ctx, a_dir_name_too_long_is_refused_never_cut)
{
	struct blamer_config c = t_cfg(NULL, 0, 0);
	char a[256], sub[300];
	struct blamer *b;
	size_t n;

	c.backend = BLAMER_BACKEND_DIR;
	n = (size_t)snprintf(a, sizeof(a), "%s/", self->dir);
	memset(a + n, 'p', sizeof(a) - 1 - n);
	a[sizeof(a) - 1] = '\0';
	snprintf(sub, sizeof(sub), "%s/sub", a);
	ASSERT_EQ(0, mkdir(a, 0700));
	ASSERT_EQ(0, mkdir(sub, 0700));
	c.dir = sub;
	ASSERT_EQ(-ENAMETOOLONG, t_open(self, &c, &b));
	ASSERT_NE(NULL, strstr(blamer_errmsg(), "too long"));
	c.dir = NULL;
	setenv("BLAMER_DIR", sub, 1);
	EXPECT_EQ(-ENAMETOOLONG, t_open(self, &c, &b)) TH_LOG("%s", blamer_errmsg());
	EXPECT_NE(NULL, strstr(blamer_errmsg(), "directory name too long (259 bytes, at most 255)"))
		TH_LOG("%s", blamer_errmsg());
	unsetenv("BLAMER_DIR");
	EXPECT_EQ(1, entries(a));	/* sub alone: no heap in the parent */
	EXPECT_EQ(0, entries(sub));
	/* 255 bytes fit */
	c.dir = a;
	ASSERT_EQ(0, t_open(self, &c, &b)) TH_LOG("%s", blamer_errmsg());
	EXPECT_LT(1, entries(a));
	t_close(self, b);
}

TEST_F(ctx, default_context_and_reset)
{
	struct blamer *d;

	setenv("BLAMER_DIR", self->dir, 1);
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
}

/*
 * A process in a pid namespace of its own that still sees its parent's
 * /proc (unshare -p without a mount namespace): getpid() is 1 there, and
 * its heap was named after the host's init (pid 1, init's start time):
 * listed live for good, and the next such job replaced it as a former
 * image's. The heap is named with the pid /proc gives.
 */
TEST_F(ctx, a_heap_is_named_by_the_pid_proc_gives)
{
	struct blamer_heap_info hi;
	struct blamer_config c;
	int p[2], status;
	int64_t named;
	pid_t pid;

	if (geteuid())
		SKIP(return, "a pid namespace needs root");
	if (t_backend() != BLAMER_BACKEND_DIR)
		SKIP(return, "dir backend: the device records the owner itself");
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		pid_t inner;
		struct blamer *b;

		if (unshare(CLONE_NEWPID))
			_exit(90);
		inner = fork();		/* pid 1 of the new namespace */
		if (!inner) {
			c = t_cfg(self->dir, 65536, 4);
			if (getpid() != 1 || blamer_open(&c, &b) || blamer_heap_info(b, &hi))
				_exit(91);
			if (write(p[1], &hi.pid, sizeof(hi.pid)) != sizeof(hi.pid))
				_exit(92);
			blamer_close(b);
			_exit(0);
		}
		if (inner < 0 || waitpid(inner, &status, 0) != inner || !WIFEXITED(status))
			_exit(93);
		/* fork() here gave its pid as this (the host's) namespace sees it */
		hi.pid = inner;
		_exit(write(p[1], &hi.pid, sizeof(hi.pid)) == sizeof(hi.pid) ?
		      WEXITSTATUS(status) : 94);
	}
	close(p[1]);
	ASSERT_EQ(sizeof(hi.pid), read(p[0], &hi.pid, sizeof(hi.pid)));
	named = hi.pid;
	ASSERT_EQ(sizeof(hi.pid), read(p[0], &hi.pid, sizeof(hi.pid)));
	close(p[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) TH_LOG("status %#x", status);
	EXPECT_EQ(hi.pid, named);
}

/* The descriptor of this process that is open on directory @dir, or -1. */
static int fd_on(const char *dir)
{
	char link[64], target[512];
	struct dirent *e;
	int fd = -1;
	ssize_t n;
	DIR *d = opendir("/proc/self/fd");

	while (d && fd < 0 && (e = readdir(d))) {
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0 && (target[n] = '\0', !strcmp(target, dir)) && atoi(e->d_name) != dirfd(d))
			fd = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return fd;
}

/*
 * A daemon closes every descriptor after it started the library, and
 * opens its own, which get the same numbers: the library made its slabs
 * through the number, in the program's directory, and its close closed
 * the program's. A descriptor that is not the library's any more is
 * forgotten: growth fails (counted), nothing is made elsewhere, and
 * nothing of the program's is closed. Dir backend.
 */
TEST_F(ctx, a_descriptor_the_program_closed_and_reused_is_left_alone)
{
	char other[] = "/tmp/blamer-other-XXXXXX", cmd[96];
	uint64_t ids[1] = { 1 };
	struct blamer_config c;
	struct blamer *b;
	int fd, mine, n;

	if (t_backend() != BLAMER_BACKEND_DIR)
		SKIP(return, "dir backend: the test finds the directory's descriptor");
	ASSERT_NE(NULL, mkdtemp(other));
	c = t_cfg(self->dir, 16384, 8);
	ASSERT_EQ(0, t_open(self, &c, &b));
	fd = fd_on(self->dir);
	ASSERT_LE(3, fd);	/* never 0..2 */
	ASSERT_EQ(0, close(fd));	/* the daemon's close-all */
	mine = open(other, O_RDONLY | O_DIRECTORY);
	ASSERT_EQ(fd, mine);		/* the program's directory, the same number */
	/* paths until the heap would grow past its first slab */
	for (n = 0; n < 2000 && blamer_path_get(b, ids, 1, NULL, 0); n++)
		ids[0]++;
	EXPECT_LT(n, 2000);
	EXPECT_EQ(0, entries(other));	/* nothing made in the program's directory */
	t_close(self, b);
	EXPECT_EQ(0, fcntl(mine, F_GETFD) < 0);	/* the program's, still open */
	close(mine);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", other);
	ASSERT_EQ(0, system(cmd));
}

TEST_HARNESS_MAIN
