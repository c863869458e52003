// SPDX-License-Identifier: MIT
/*
 * How a dir heap ends and how long it stays: exit() with contexts open
 * is recorded (status in the heap header, time in slab 0's modification
 * time) and read back as the heap's claim; _exit(), a crash or
 * blamer_abandon() record nothing; dead heaps beyond the retention
 * limits are deleted when a writer makes a heap, the longest dead first,
 * never one whose writer lives (in /proc, or holding its lock), never
 * one younger than a second, never anything but our plain files.
 * The dir backend is this file's subject: it runs on it even in the VM.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "common.h"

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum ending { END_EXIT, END_RETURN_AFTER_CLOSE, END_UNDERSCORE_EXIT, END_ABORT, END_ABANDON };

/* A child that opens a dir context, pushes, logs, then ends as told.
 * Its pid, or -1. */
static pid_t child(const char *dir, enum ending how, int code)
{
	pid_t pid = fork();
	struct blamer_config c = t_cfg(dir, 65536, 2);
	struct blamer *b;

	if (pid)
		return pid;
	c.backend = BLAMER_BACKEND_DIR;
	if (blamer_open(&c, &b))
		_exit(100);
	blamer_push(b, BLAMER_ACTIVITY_TASK, "ending", 0, 0);
	blamer_log(b, "about to end");
	switch (how) {
	case END_EXIT:
		exit(code);
	case END_RETURN_AFTER_CLOSE:
		blamer_close(b);
		exit(code);
	case END_UNDERSCORE_EXIT:
		_exit(code);
	case END_ABORT:
		signal(SIGABRT, SIG_DFL);
		abort();
	case END_ABANDON:
		blamer_abandon(b);
		exit(code);
	}
	_exit(101);
}

/* The process @pid of a snapshot of @dir (dead heaps read in full), or NULL. */
static struct blamer_snapshot *read_dir(const char *dir, uint32_t flags)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR, .dir = dir,
					.flags = flags };
	struct blamer_snapshot *s = NULL;
	struct blamer_reader *r = blamer_reader_open(&o, NULL, 0);

	if (r && blamer_reader_snapshot(r, &s, NULL, 0))
		s = NULL;
	blamer_reader_close(r);
	return s;
}

static const struct blamer_snap_process *find(const struct blamer_snapshot *s, pid_t pid)
{
	size_t i;

	for (i = 0; s && i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

TEST_F(ctx, exit_is_recorded_in_the_dir_heap)
{
	static const struct {
		enum ending how;
		int code;
		bool kept, exited;
	} cases[] = {
		{ END_EXIT, 7, true, true },
		{ END_EXIT, 0, true, true },
		{ END_EXIT, 256 + 3, true, true },	/* wait() sees 3 */
		{ END_RETURN_AFTER_CLOSE, 0, false, false },
		{ END_UNDERSCORE_EXIT, 5, true, false },
		{ END_ABORT, 0, true, false },
		{ END_ABANDON, 4, true, false },
	};
	uint32_t flags[2] = { BLAMER_READ_DEAD_FULL, BLAMER_READ_HEADERS_ONLY };
	size_t i, f;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t t0 = realtime_ns(), t1;
		pid_t pid = child(self->dir, cases[i].how, cases[i].code);
		int st;

		ASSERT_GT(pid, 0);
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		ASSERT_NE(100, WIFEXITED(st) ? WEXITSTATUS(st) : 0);
		t1 = realtime_ns();
		/* both the full read and the header read see how it ended */
		for (f = 0; f < 2; f++) {
			struct blamer_snapshot *s = read_dir(self->dir, flags[f]);
			const struct blamer_snap_process *p = find(s, pid);

			ASSERT_NE(NULL, s);
			ASSERT_EQ(cases[i].kept, p != NULL) TH_LOG("case %zu", i);
			if (p) {
				ASSERT_EQ(BLAMER_PROC_DEAD, p->state);
				ASSERT_FALSE(p->kernel_facts);
				ASSERT_EQ(cases[i].exited, p->exited) TH_LOG("case %zu", i);
				if (p->exited)
					ASSERT_EQ(cases[i].code & 0xff, p->exit_code);
				/* the end, or the last sign of life, lies in between */
				ASSERT_GE(p->last_seen_ns + 10000000, t0) TH_LOG("case %zu", i);
				ASSERT_LE(p->last_seen_ns, t1) TH_LOG("case %zu", i);
			}
			blamer_snapshot_free(s);
		}
	}
}

/* ---- retention ---- */

/* A made-up dead heap: one 4 KiB slab file of pid @pid (no such
 * process: above the kernel's PID_MAX_LIMIT) whose death was noticed
 * (write bits off, so its ctime is now) and last changed @age_s ago. */
static int plant(const char *dir, int pid, int age_s)
{
	struct timespec t[2];
	char name[256];
	int fd;

	snprintf(name, sizeof(name), "%s/%d-1000.0.slab", dir, pid);
	fd = open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0 || ftruncate(fd, 4096))
		return -1;
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= age_s;
	t[1] = t[0];
	if (futimens(fd, t) || fchmod(fd, 0400))
		return -1;
	close(fd);
	usleep(20000);	/* ctimes apart: the order of noticing */
	return 0;
}

static bool planted(const char *dir, int pid)
{
	char name[256];
	struct stat st;

	snprintf(name, sizeof(name), "%s/%d-1000.0.slab", dir, pid);
	return lstat(name, &st) == 0;
}

/* Opens and closes a dir context in @dir: a writer making a heap there. */
static int touch_dir(FIXTURE_DATA(ctx) *self, const char *dir)
{
	struct blamer_config c = t_cfg(dir, 65536, 2);
	struct blamer *b;
	int ret;

	c.backend = BLAMER_BACKEND_DIR;
	ret = t_open(self, &c, &b);
	if (!ret)
		t_close(self, b);
	return ret;
}

TEST_F(ctx, dead_heaps_beyond_the_count_go_longest_dead_first)
{
	int i;

	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, plant(self->dir, 5000000 + i, 10));
	setenv("BLAMER_DIR_MAX_DEAD", "3", 1);
	i = touch_dir(self, self->dir);
	unsetenv("BLAMER_DIR_MAX_DEAD");
	ASSERT_EQ(0, i) TH_LOG("%s", blamer_errmsg());
	/* noticed first, gone first */
	ASSERT_FALSE(planted(self->dir, 5000000));
	ASSERT_FALSE(planted(self->dir, 5000001));
	for (i = 2; i < 5; i++)
		ASSERT_TRUE(planted(self->dir, 5000000 + i));
}

TEST_F(ctx, dead_heaps_beyond_the_bytes_go_too)
{
	int i;

	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, plant(self->dir, 5000000 + i, 10));
	setenv("BLAMER_DIR_MAX_DEAD_BYTES", "8K", 1);
	i = touch_dir(self, self->dir);
	unsetenv("BLAMER_DIR_MAX_DEAD_BYTES");
	ASSERT_EQ(0, i) TH_LOG("%s", blamer_errmsg());
	ASSERT_FALSE(planted(self->dir, 5000000));
	ASSERT_FALSE(planted(self->dir, 5000001));
	ASSERT_TRUE(planted(self->dir, 5000002));
	ASSERT_TRUE(planted(self->dir, 5000003));
}

/* A file time in the future (a clock stepped back, or a writer's
 * futimens()) is no youth: such heaps would escape retention forever. */
TEST_F(ctx, a_time_in_the_future_does_not_escape_retention)
{
	int i, left = 0;

	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, plant(self->dir, 5000000 + i, -365 * 86400));
	setenv("BLAMER_DIR_MAX_DEAD", "1", 1);
	i = touch_dir(self, self->dir);
	unsetenv("BLAMER_DIR_MAX_DEAD");
	ASSERT_EQ(0, i) TH_LOG("%s", blamer_errmsg());
	for (i = 0; i < 3; i++)
		left += planted(self->dir, 5000000 + i);
	ASSERT_EQ(1, left);
	ASSERT_TRUE(planted(self->dir, 5000002));	/* noticed last, kept */
}

TEST_F(ctx, retention_spares_the_living_the_young_and_the_foreign)
{
	char name[256], other[256];
	struct stat st;
	int fd, i;

	/* a "dead" pid whose file a live process (we) holds locked, as a
	 * writer in another pid namespace would */
	ASSERT_EQ(0, plant(self->dir, 5000000, 10));
	snprintf(name, sizeof(name), "%s/5000000-1000.0.slab", self->dir);
	fd = open(name, O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, flock(fd, LOCK_SH));
	/* a dead heap younger than a second */
	ASSERT_EQ(0, plant(self->dir, 5000001, 0));
	/* a dead heap never noticed before: noticed (write bits off), kept */
	snprintf(other, sizeof(other), "%s/5000002-1000.0.slab", self->dir);
	i = open(other, O_CREAT | O_RDWR, 0600);
	ASSERT_GE(i, 0);
	close(i);
	{
		struct timespec t[2] = { { time(NULL) - 60, 0 }, { time(NULL) - 60, 0 } };

		ASSERT_EQ(0, utimensat(AT_FDCWD, other, t, 0));
	}
	/* what is not ours in form: a symlink and a hard-linked file */
	snprintf(name, sizeof(name), "%s/5000003-1000.0.slab", self->dir);
	ASSERT_EQ(0, symlink("/etc/passwd", name));
	snprintf(name, sizeof(name), "%s/5000004-1000.0.slab", self->dir);
	ASSERT_EQ(0, link(other, name));
	setenv("BLAMER_DIR_MAX_DEAD", "0", 1);
	i = touch_dir(self, self->dir);
	unsetenv("BLAMER_DIR_MAX_DEAD");
	ASSERT_EQ(0, i) TH_LOG("%s", blamer_errmsg());
	ASSERT_TRUE(planted(self->dir, 5000000));	/* locked: alive */
	ASSERT_TRUE(planted(self->dir, 5000001));	/* young */
	ASSERT_TRUE(planted(self->dir, 5000003));	/* not a file of ours */
	ASSERT_TRUE(planted(self->dir, 5000004));
	ASSERT_TRUE(planted(self->dir, 5000002));	/* linked twice: not ours either */
	close(fd);
	/* the lock gone, the link gone: a dead heap of ours, now deleted */
	snprintf(name, sizeof(name), "%s/5000004-1000.0.slab", self->dir);
	ASSERT_EQ(0, unlink(name));
	setenv("BLAMER_DIR_MAX_DEAD", "0", 1);
	i = touch_dir(self, self->dir);
	unsetenv("BLAMER_DIR_MAX_DEAD");
	ASSERT_EQ(0, i);
	ASSERT_FALSE(planted(self->dir, 5000000));
	ASSERT_FALSE(planted(self->dir, 5000002));
	ASSERT_NE(0, lstat(name, &st));
}

TEST_F(ctx, a_found_dead_heap_is_marked_once)
{
	char name[256];
	struct stat a, b;
	int fd;

	snprintf(name, sizeof(name), "%s/5000000-1000.0.slab", self->dir);
	fd = open(name, O_CREAT | O_RDWR, 0600);
	ASSERT_GE(fd, 0);
	close(fd);
	{
		struct timespec t[2] = { { time(NULL) - 60, 0 }, { time(NULL) - 60, 0 } };

		ASSERT_EQ(0, utimensat(AT_FDCWD, name, t, 0));
	}
	ASSERT_EQ(0, touch_dir(self, self->dir));
	ASSERT_EQ(0, stat(name, &a));
	ASSERT_EQ(0400, a.st_mode & 0777);	/* noticed: write bits off */
	ASSERT_LT(a.st_mtime, time(NULL) - 30);	/* its last life unchanged */
	usleep(20000);
	ASSERT_EQ(0, touch_dir(self, self->dir));
	ASSERT_EQ(0, stat(name, &b));
	ASSERT_EQ(a.st_ctim.tv_sec, b.st_ctim.tv_sec);	/* noticed once */
	ASSERT_EQ(a.st_ctim.tv_nsec, b.st_ctim.tv_nsec);
}

/* How many heaps of @n planted from pid @first on are left, and how
 * many of those are marked dead (write bits off). */
static int left_marked(const char *dir, int first, int n, int *marked)
{
	char name[256];
	struct stat st;
	int i, left = 0;

	*marked = 0;
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s/%d-1000.0.slab", dir, first + i);
		if (lstat(name, &st))
			continue;
		left++;
		*marked += !(st.st_mode & 0222);
	}
	return left;
}

/*
 * How many dead heaps the next test plants: 10,000, or
 * $BLAMER_TEST_DEAD_HEAPS (1,000 to 10,000). The vm-lib suites of the
 * debug kernels ask for 1,000: the test is the dir backend's (files on
 * tmpfs, no module), and its system calls on tmpfs under KASAN and
 * lockdep in TCG made it 232 of vm-lib-6.12-debug's 290 s. 1,000 is
 * still 15 times the 64 entries a step may look at, so a step that
 * looked at all of them fails it just the same; the host and the stock
 * kernels plant 10,000.
 */
static int dead_heaps(void)
{
	const char *e = getenv("BLAMER_TEST_DEAD_HEAPS");
	char *end;
	long n;

	if (!e)
		return 10000;
	n = strtol(e, &end, 10);
	if (*e == '\0' || *end != '\0' || n < 1000 || n > 10000) {
		fprintf(stderr, "BLAMER_TEST_DEAD_HEAPS: want 1000 to 10000, got '%s'\n", e);
		exit(2);
	}
	return (int)n;
}

/*
 * A writer's cost does not grow with the dead heaps of its directory:
 * making a heap next to 10,000 dead ones looks at a bounded part of the
 * directory (finds at most 64 of them dead, deletes at most 16), where
 * it used to look at, mark and sort every one (13 minutes to make 10,000
 * heaps). The retention promise still holds, a step at a time: the
 * directory comes down to $BLAMER_DIR_MAX_DEAD, the longest dead first,
 * and what the steps share (.blamer-trim) is no heap to a reader.
 */
TEST_F_TIMEOUT(ctx, making_a_heap_looks_at_a_bounded_part_of_the_directory, 300)
{
	const int n = dead_heaps(), keep = 100;
	struct blamer_snapshot *s;
	char name[256];
	struct timespec t[2];
	int i, marked, left, steps;

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= 10;
	t[1] = t[0];
	for (i = 0; i < n; i++) {
		int fd;

		/* dead (no such pid), never noticed: write bits on */
		snprintf(name, sizeof(name), "%s/%d-1000.0.slab", self->dir, 5000000 + i);
		fd = open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, futimens(fd, t));
		close(fd);
	}
	setenv("BLAMER_DIR_MAX_DEAD", "100", 1);
	ASSERT_EQ(0, touch_dir(self, self->dir)) TH_LOG("%s", blamer_errmsg());
	left = left_marked(self->dir, 5000000, n, &marked);
	TH_LOG("one heap made next to %d dead ones: %d found dead, %d deleted", n,
	       marked + (n - left), n - left);
	ASSERT_LE(marked + (n - left), 64);
	ASSERT_LE(n - left, 16);
	/* step by step, down to the limit: 16 deleted a step at most */
	for (steps = 1; steps < 2000 && left > keep; steps++) {
		ASSERT_EQ(0, touch_dir(self, self->dir));
		if (steps % 100 == 0 || steps >= (n - keep) / 16)
			left = left_marked(self->dir, 5000000, n, &marked);
	}
	unsetenv("BLAMER_DIR_MAX_DEAD");
	TH_LOG("down to %d after %d heaps made", left, steps);
	ASSERT_EQ(keep, left);
	ASSERT_EQ(keep, marked);
	/* the reader passes over the state the steps keep */
	s = read_dir(self->dir, BLAMER_READ_HEADERS_ONLY);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(0, s->skipped_total);
	EXPECT_EQ(keep, s->empty_files);	/* the heaps planted hold nothing */
	blamer_snapshot_free(s);
}

TEST_F(ctx, bad_retention_limits_are_refused)
{
	static const char *const bad[][2] = {
		{ "BLAMER_DIR_MAX_DEAD", "lots" },
		{ "BLAMER_DIR_MAX_DEAD", "-1" },
		{ "BLAMER_DIR_MAX_DEAD", "99999999999" },
		{ "BLAMER_DIR_MAX_DEAD_BYTES", "8T" },
		{ "BLAMER_DIR_MAX_DEAD_BYTES", "12MB" },
		{ "BLAMER_DIR_MAX_DEAD_BYTES", "K" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret;

		setenv(bad[i][0], bad[i][1], 1);
		ret = touch_dir(self, self->dir);
		unsetenv(bad[i][0]);
		ASSERT_EQ(-EINVAL, ret) TH_LOG("%s=%s", bad[i][0], bad[i][1]);
		ASSERT_NE(NULL, strstr(blamer_errmsg(), bad[i][0]));
	}
	setenv("BLAMER_DIR_MAX_DEAD_BYTES", "16M", 1);
	ASSERT_EQ(0, touch_dir(self, self->dir));
	unsetenv("BLAMER_DIR_MAX_DEAD_BYTES");
}

TEST_HARNESS_MAIN
