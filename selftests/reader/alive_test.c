// SPDX-License-Identifier: MIT
/*
 * reader-unit, is a dir heap's writer alive? (alive.c): pidfds a
 * long-lived reader keeps, a process whose main thread exited, the fd
 * budget, a dead heap's comm. Built with ASan and UBSan.
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

#include "reader/internal.h"	/* rd_reads_stable(), for a white-box test */
#include "testsupport.h"
#include "rtest.h"

/*
 * This process's descriptors whose /proc/self/fd link is @what: "[pidfd]"
 * anywhere in it, or a file under the directory @what ("/..."); and in
 * *@deleted, if asked, those of them whose file was removed since.
 */
static int count_fds(const char *what, int *deleted)
{
	DIR *d = opendir("/proc/self/fd");
	char path[300], link[4096];
	size_t wl = strlen(what);
	struct dirent *e;
	int n = 0, del = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = '\0';
		if (what[0] == '/' ? strncmp(link, what, wl) || link[wl] != '/' : !strstr(link, what))
			continue;
		n++;
		del += !!strstr(link, "(deleted)");
	}
	closedir(d);
	if (deleted)
		*deleted = del;
	return n;
}

static int count_pidfds(void)
{
	return count_fds("[pidfd]", NULL);
}

static void rename_self(int sig)
{
	(void)sig;
	prctl(PR_SET_NAME, "\x1b[2Jafter");	/* an escape sequence, to be made printable */
}

/* A child named @name that waits to be killed (SIGUSR1 renames it). */
static pid_t spawn_waiter(const char *name)
{
	int ready[2];
	pid_t pid;
	char c;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (!pid) {
		close(ready[0]);
		signal(SIGUSR1, rename_self);
		prctl(PR_SET_NAME, name);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &c, 1) != 1)
		pid = -1;
	close(ready[0]);
	return pid;
}

/* A dir heap written as @pid's, under its real start time. */
static int heap_of(pid_t pid, struct fx_heap *h)
{
	uint64_t start = fx_start_ns(pid);

	fx_standard(h, pid, (int64_t)start, 1);
	return start ? fx_write_dir(h, tmpdir, pid, start) : -1;
}

/* @pid has exited (a zombie now, not reaped). */
static void wait_exit(pid_t pid)
{
	siginfo_t si;

	waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT);
}

/* BLAMER_PROC_* of @pid's heap in a snapshot of @r, and its comm; -1: none. */
static int state_in(struct blamer_reader *r, pid_t pid, char *comm)
{
	struct blamer_snapshot *s;
	const struct blamer_snap_process *p;
	int st = -1;

	if (blamer_reader_snapshot(r, &s, NULL, 0))
		return st;
	p = by_pid(s, pid);
	if (p) {
		st = (int)p->state;
		if (comm)
			snprintf(comm, 16, "%s", p->comm);
	}
	blamer_snapshot_free(s);
	return st;
}

/*
 * A long-lived reader keeps a pidfd for a writer it found alive (from its
 * second snapshot on) instead of reading /proc each time: the writer is
 * still seen to end, as a zombie and once reaped, its pidfd is then
 * closed, and a name it gives itself shows within a second, made
 * printable.
 */
TEST(long_lived_reader_watches_its_writers)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	struct blamer_reader *r;
	struct fx_heap a;
	char comm[16];
	pid_t child;
	int base;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	child = spawn_waiter("before");
	ASSERT_LT(0, child);
	ASSERT_EQ(0, heap_of(child, &a));
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	base = count_pidfds();

	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));
	EXPECT_STREQ("before", comm);
	EXPECT_EQ(base, count_pidfds());	/* a one-shot reader keeps none */
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));
	EXPECT_EQ(base + 1, count_pidfds());
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));
	EXPECT_STREQ("before", comm);

	/* renamed: shown within a second (and a snapshot), printable */
	ASSERT_EQ(0, kill(child, SIGUSR1));
	usleep(1100 * 1000);
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));
	EXPECT_STREQ("?[2Jafter", comm);
	EXPECT_EQ(base + 1, count_pidfds());

	/* ended: dead as a zombie, its pidfd closed; dead once reaped */
	ASSERT_EQ(0, kill(child, SIGKILL));
	wait_exit(child);
	EXPECT_EQ(BLAMER_PROC_DEAD, state_in(r, child, NULL));
	EXPECT_EQ(base, count_pidfds());
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	EXPECT_EQ(BLAMER_PROC_DEAD, state_in(r, child, NULL));
	EXPECT_EQ(BLAMER_PROC_DEAD, state_in(r, child, NULL));
	EXPECT_EQ(base, count_pidfds());
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
}

/*
 * Two heaps of one live writer (where.h: a process's later heap has a
 * seq in its name): both live, both read, and one pidfd watches the
 * writer for both.
 */
TEST(two_heaps_of_one_writer_share_its_pidfd)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	char from[300], to[300];
	struct fx_heap a;
	size_t i, n;
	pid_t child;
	int base, k;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	child = spawn_waiter("two");
	ASSERT_LT(0, child);
	ASSERT_EQ(0, heap_of(child, &a));
	snprintf(from, sizeof(from), "%s/%d-%llu.0.slab", tmpdir, child,
		 (unsigned long long)fx_start_ns(child));
	snprintf(to, sizeof(to), "%s/%d-%llu-1.0.slab", tmpdir, child,
		 (unsigned long long)fx_start_ns(child));
	ASSERT_EQ(0, rename(from, to));
	fx_free(&a);
	ASSERT_EQ(0, heap_of(child, &a));
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	base = count_pidfds();
	for (k = 0; k < 3; k++) {
		ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
		for (i = n = 0; i < s->nprocs; i++) {
			EXPECT_EQ(child, s->procs[i].pid);
			EXPECT_EQ(BLAMER_PROC_LIVE, s->procs[i].state);
			EXPECT_STREQ("two", s->procs[i].comm);
			n++;
		}
		EXPECT_EQ(2, n);
		if (n == 2)
			EXPECT_NE(s->procs[0].heap_key, s->procs[1].heap_key);
		blamer_snapshot_free(s);
		EXPECT_EQ(base + (k ? 1 : 0), count_pidfds()) TH_LOG("snapshot %d", k);
	}
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
}

static void *wait_forever(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/*
 * A process whose main thread called pthread_exit() shows as a zombie in
 * /proc while its other threads still run (and write): it is alive, to a
 * one-shot reader and to a long-lived one, until its last thread ends.
 */
TEST(a_process_whose_main_thread_exited_is_alive)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct fx_heap a;
	char path[64], stat[512];
	pid_t child;
	int i;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		pthread_t t;

		if (pthread_create(&t, NULL, wait_forever, NULL))
			_exit(1);
		pthread_exit(NULL);
	}
	/* until /proc shows the main thread a zombie */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
	for (i = 0; i < 500; i++) {
		FILE *f = fopen(path, "r");
		char *rp;

		stat[0] = '\0';
		if (f) {
			if (!fgets(stat, sizeof(stat), f))
				stat[0] = '\0';
			fclose(f);
		}
		rp = strrchr(stat, ')');
		if (rp && rp[1] == ' ' && rp[2] == 'Z')
			break;
		usleep(10 * 1000);
	}
	ASSERT_LT(i, 500) TH_LOG("%s", stat);
	ASSERT_EQ(0, heap_of(child, &a));

	s = dir_snapshot(0);
	ASSERT_NE(NULL, s);
	ASSERT_NE(NULL, by_pid(s, child));
	EXPECT_EQ(BLAMER_PROC_LIVE, by_pid(s, child)->state);
	blamer_snapshot_free(s);
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, NULL));
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, NULL));	/* watched */
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, NULL));

	ASSERT_EQ(0, kill(child, SIGKILL));
	wait_exit(child);
	EXPECT_EQ(BLAMER_PROC_DEAD, state_in(r, child, NULL));
	s = dir_snapshot(0);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(BLAMER_PROC_DEAD, by_pid(s, child)->state);
	blamer_snapshot_free(s);
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
}

/* Descriptors open on a file of tmpdir, and those of them removed since. */
static int count_tmpdir_fds(int *deleted)
{
	return count_fds(tmpdir, deleted);
}

/* @p's cmdline in a snapshot of @r ("" if absent), and how many of its
 * entries the snapshot skipped. */
static void cmdline_in(struct blamer_reader *r, pid_t pid, char *cmd, size_t len,
		       size_t *skipped)
{
	const struct blamer_snap_process *p;
	struct blamer_snapshot *s;

	cmd[0] = '\0';
	*skipped = 0;
	if (blamer_reader_snapshot(r, &s, NULL, 0))
		return;
	p = by_pid(s, pid);
	if (p)
		snprintf(cmd, len, "%s", p->cmdline);
	*skipped = s->nskipped;
	blamer_snapshot_free(s);
}

/*
 * A long-lived reader keeps a live heap's files open from its second
 * snapshot on (no openat() per file per snapshot), but what it reads is
 * still what the names are: a file replaced under a name is read anew
 * and the old descriptor closed, a file made untrustworthy (group
 * writable) is skipped as a freshly opened one would be, and a released
 * heap's descriptors are closed with it.
 */
TEST(long_lived_reader_keeps_live_heap_files_open)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	char cmd[256], name[300], other[64], from[400], to[400];
	struct blamer_reader *r;
	struct fx_heap a, b;
	size_t skipped;
	int del, i;
	uint64_t start;
	pid_t child;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	child = spawn_waiter("kept");
	ASSERT_LT(0, child);
	ASSERT_EQ(0, heap_of(child, &a));	/* two slab files */
	start = fx_start_ns(child);
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);

	cmdline_in(r, child, cmd, sizeof(cmd), &skipped);
	EXPECT_STREQ("/usr/bin/app --worker 1", cmd);
	EXPECT_EQ(0, count_tmpdir_fds(&del));	/* a one-shot reader keeps none */
	for (i = 0; i < 3; i++) {
		cmdline_in(r, child, cmd, sizeof(cmd), &skipped);
		EXPECT_STREQ("/usr/bin/app --worker 1", cmd);
		EXPECT_EQ(2, count_tmpdir_fds(&del));	/* the same two, kept */
		EXPECT_EQ(0, del);
	}

	/* replaced under its names (written elsewhere, renamed over them) */
	snprintf(other, sizeof(other), "%s.other", tmpdir);
	ASSERT_EQ(0, mkdir(other, 0700));
	fx_init(&b, 2, FX_SLAB, child, (int64_t)start);
	fx_process(&b, BLAMER_PHASE_MAIN_LOOP, "/usr/bin/replaced");
	ASSERT_EQ(0, fx_write_dir(&b, other, child, start));
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "%d-%llu.%d.slab", (int)child, (unsigned long long)start,
			 i);
		snprintf(from, sizeof(from), "%s/%s", other, name);
		snprintf(to, sizeof(to), "%s/%s", tmpdir, name);
		ASSERT_EQ(0, rename(from, to));
	}
	rmdir(other);
	cmdline_in(r, child, cmd, sizeof(cmd), &skipped);
	EXPECT_STREQ("/usr/bin/replaced", cmd);
	EXPECT_EQ(2, count_tmpdir_fds(&del));	/* the new files' */
	EXPECT_EQ(0, del);			/* the old ones closed */

	/* group-writable: skipped, kept or not, and its descriptor closed */
	snprintf(to, sizeof(to), "%s/%d-%llu.0.slab", tmpdir, (int)child,
		 (unsigned long long)start);
	ASSERT_EQ(0, chmod(to, 0620));
	cmdline_in(r, child, cmd, sizeof(cmd), &skipped);
	EXPECT_EQ(1, skipped);
	EXPECT_EQ(1, count_tmpdir_fds(&del));	/* slab 1's only */
	ASSERT_EQ(0, chmod(to, 0600));
	cmdline_in(r, child, cmd, sizeof(cmd), &skipped);
	EXPECT_STREQ("/usr/bin/replaced", cmd);
	EXPECT_EQ(0, skipped);
	EXPECT_EQ(2, count_tmpdir_fds(&del));

	/* released: gone from the snapshot, nothing of it held open */
	for (i = 0; i < 2; i++) {
		snprintf(to, sizeof(to), "%s/%d-%llu.%d.slab", tmpdir, (int)child,
			 (unsigned long long)start, i);
		ASSERT_EQ(0, unlink(to));
	}
	cmdline_in(r, child, cmd, sizeof(cmd), &skipped);
	EXPECT_STREQ("", cmd);
	EXPECT_EQ(0, count_tmpdir_fds(&del));

	blamer_reader_close(r);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	rm_tmpdir();
	fx_free(&a);
	fx_free(&b);
}

/*
 * A live dir heap is read twice only for the records compared in two
 * copies (logs, modules, user data, stacks: rd_reads_stable()). A
 * snapshot that decodes none of them (an exporter's) reads it once, and
 * still reads it right: every record checked, metrics summed, the heap
 * healthy; the same heaps read with every record kind, twice, agree.
 */
TEST(a_live_heap_is_read_once_when_nothing_compares_copies)
{
	const uint32_t once = BLAMER_READ_NO_LOG | BLAMER_READ_NO_MODULES |
			      BLAMER_READ_NO_USERDATA | BLAMER_READ_NO_STACKS;
	const struct blamer_snap_series *x;
	const struct blamer_snap_process *p;
	struct blamer_snapshot *s;
	struct fx_heap a, m;
	pid_t kids[2];
	int k;

	EXPECT_FALSE(rd_reads_stable(once));
	EXPECT_FALSE(rd_reads_stable((once ^ BLAMER_READ_NO_STACKS) | BLAMER_READ_NO_THREADS));
	EXPECT_TRUE(rd_reads_stable(once ^ BLAMER_READ_NO_STACKS));
	EXPECT_TRUE(rd_reads_stable(once ^ BLAMER_READ_NO_LOG));
	EXPECT_TRUE(rd_reads_stable(once ^ BLAMER_READ_NO_MODULES));
	EXPECT_TRUE(rd_reads_stable(once ^ BLAMER_READ_NO_USERDATA));
	EXPECT_TRUE(rd_reads_stable(0));

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	kids[0] = spawn_waiter("std");
	kids[1] = spawn_waiter("metrics");
	ASSERT_LT(0, kids[0]);
	ASSERT_LT(0, kids[1]);
	ASSERT_EQ(0, heap_of(kids[0], &a));	/* logs, user data, threads */
	fx_metrics(&m, kids[1], (int64_t)fx_start_ns(kids[1]), 2);
	ASSERT_EQ(0, fx_write_dir(&m, tmpdir, kids[1], fx_start_ns(kids[1])));
	for (k = 0; k < 2; k++) {
		s = dir_snapshot(k ? 0 : once);
		ASSERT_NE(NULL, s);
		p = by_pid(s, kids[0]);
		ASSERT_NE(NULL, p);
		EXPECT_EQ(BLAMER_PROC_LIVE, p->state);
		EXPECT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%d: %s", k, p->problem);
		EXPECT_EQ(2, p->nthreads);
		EXPECT_EQ(k ? 3 : 0, p->nlogs);
		p = by_pid(s, kids[1]);
		ASSERT_NE(NULL, p);
		EXPECT_EQ(BLAMER_PROC_LIVE, p->state);
		EXPECT_EQ(BLAMER_HEALTH_OK, p->health) TH_LOG("%d: %s", k, p->problem);
		x = find_series(s, "reqs", "/a");
		ASSERT_NE(NULL, x);
		EXPECT_EQ(5, x->value);	/* 4 + the shard's 1 */
		x = find_series(s, "lat", NULL);
		ASSERT_NE(NULL, x);
		EXPECT_EQ(12, x->count);
		blamer_snapshot_free(s);
	}
	for (k = 0; k < 2; k++) {
		kill(kids[k], SIGKILL);
		waitpid(kids[k], NULL, 0);
	}
	rm_tmpdir();
	fx_free(&a);
	fx_free(&m);
}

/*
 * With BLAMER_READ_COMM_ONCE a long-lived reader does not read a watched
 * writer's name again (a caller that shows no names); without it, a
 * rename shows within a second (long_lived_reader_watches_its_writers).
 */
TEST(comm_once_reads_a_writers_name_once)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_COMM_ONCE };
	struct blamer_reader *r;
	struct fx_heap a;
	char comm[16];
	pid_t child;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	child = spawn_waiter("before");
	ASSERT_LT(0, child);
	ASSERT_EQ(0, heap_of(child, &a));
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));	/* watched */
	EXPECT_STREQ("before", comm);
	ASSERT_EQ(0, kill(child, SIGUSR1));
	usleep(1100 * 1000);
	EXPECT_EQ(BLAMER_PROC_LIVE, state_in(r, child, comm));
	EXPECT_STREQ("before", comm);
	/* still seen to end */
	ASSERT_EQ(0, kill(child, SIGKILL));
	wait_exit(child);
	EXPECT_EQ(BLAMER_PROC_DEAD, state_in(r, child, NULL));
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
}

/*
 * The pidfds a reader keeps are at most a quarter of RLIMIT_NOFILE; the
 * writers past them are looked up in /proc, and are as alive. The files
 * it keeps open never take the room of a pidfd.
 */
TEST(kept_pidfds_stay_within_a_quarter_of_the_fd_limit)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR };
	struct rlimit rl = { .rlim_cur = 40, .rlim_max = 40 };
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	struct fx_heap a[12];
	pid_t kids[12];
	int i, k, live, files, del;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	for (i = 0; i < 12; i++) {
		kids[i] = spawn_waiter("kid");
		ASSERT_LT(0, kids[i]);
		ASSERT_EQ(0, heap_of(kids[i], &a[i]));
	}
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));	/* this test's process only */
	ASSERT_EQ(0, count_pidfds());
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	for (k = 0; k < 3; k++) {
		ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
		for (live = 0, i = 0; i < 12; i++)
			live += by_pid(s, kids[i]) && by_pid(s, kids[i])->state == BLAMER_PROC_LIVE;
		EXPECT_EQ(12, live);
		blamer_snapshot_free(s);
		EXPECT_EQ(k ? 10 : 0, count_pidfds());
		/* the heaps' files kept open besides, never in the pidfds' way */
		files = count_tmpdir_fds(&del);
		EXPECT_LE(files, 10);
		EXPECT_TRUE(k ? files > 0 : !files) TH_LOG("%d files kept", files);
	}
	for (i = 0; i < 12; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	ASSERT_EQ(0, blamer_reader_snapshot(r, &s, NULL, 0));
	for (live = 0, i = 0; i < 12; i++)
		live += by_pid(s, kids[i]) && by_pid(s, kids[i])->state == BLAMER_PROC_LIVE;
	EXPECT_EQ(0, live);
	blamer_snapshot_free(s);
	EXPECT_EQ(0, count_pidfds());
	EXPECT_EQ(0, count_tmpdir_fds(&del));	/* dead: nothing kept */
	blamer_reader_close(r);
	rm_tmpdir();
	for (i = 0; i < 12; i++)
		fx_free(&a[i]);
}

/*
 * A dead dir heap's comm is the basename of its argv[0], whatever the
 * rest of the command line holds: the loop that made it once moved its
 * own end and showed "pf-t -n 3 -m de" for the command below.
 */
TEST(dead_heap_comm_is_argv0s_basename)
{
	static const struct {
		const char *cmdline, *comm;
	} cases[] = {
		{ "/tmp/x/gen-heaps -d /tmp/x/pf-t -n 3 -m dead", "gen-heaps" },
		{ "relative/dir/tool", "tool" },
		{ "plain --flag=/a/b/c", "plain" },
		{ "/usr/lib/a-very-long-program-name-indeed --x", "a-very-long-pro" },
		{ "/ends/with/slash/ -x", "" },
	};
	struct blamer_snapshot *s;
	struct fx_heap h;
	size_t i;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fx_init(&h, 1, FX_SLAB, 3999200 + (int64_t)i, 5);
		fx_process(&h, BLAMER_PHASE_MAIN_LOOP, cases[i].cmdline);
		ASSERT_EQ(0, fx_write_dir(&h, tmpdir, 3999200 + (int64_t)i, 5));
		fx_free(&h);
	}
	s = dir_snapshot(BLAMER_READ_DEAD_FULL);
	ASSERT_NE(NULL, s);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct blamer_snap_process *p = by_pid(s, 3999200 + (int32_t)i);

		ASSERT_NE(NULL, p);
		EXPECT_STREQ(cases[i].comm, p->comm) TH_LOG("%s", cases[i].cmdline);
	}
	blamer_snapshot_free(s);
	rm_tmpdir();
}

TEST_HARNESS_MAIN
