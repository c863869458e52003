// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/blamer selftests: exit facts. A slab becomes an orphan exactly
 * when its creating process dies, with the status wait() reports; no
 * thread of a live process can end it early or write that record.
 */
#include <dirent.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <linux/close_range.h>

#include "blamer_test.h"

TEST(exit_code_recorded)
{
	struct blamer_slab_info info;
	struct bt_holder h;
	int status;

	ASSERT_EQ(0, bt_holder_start(&h, PG, -1, -1, 42, 0, NULL));
	ASSERT_EQ(0, bt_facts(h.id, &info));
	EXPECT_EQ(BLAMER_SLAB_LIVE, info.state);
	EXPECT_FALSE(info.flags & BLAMER_SLAB_EXITED);
	status = bt_holder_finish(&h);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(42, WEXITSTATUS(status));
	ASSERT_EQ(0, bt_facts(h.id, &info));
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
	EXPECT_TRUE(info.flags & BLAMER_SLAB_EXITED);
	EXPECT_EQ(42, info.exit_code);
	EXPECT_EQ(0, info.exit_signal);
	EXPECT_EQ(h.pid, info.pid);	/* the number is kept */
	EXPECT_LE(info.create_time_ns, info.orphan_time_ns);
}

TEST(sigkill_recorded)
{
	struct blamer_slab_info info;
	struct bt_holder h;
	int status, fd = bl_open(O_RDONLY), rfd;
	unsigned char *ro;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bt_holder_start(&h, 2 * PG, -1, -1, 0, 0, NULL));
	rfd = bl_open_slab(fd, h.id);
	ASSERT_LE(0, rfd);
	ro = bl_map(rfd, 2 * PG, PROT_READ);
	ASSERT_NE(NULL, ro);
	status = bt_holder_kill(&h, SIGKILL);
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(0, bl_find(fd, h.id, &info));
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
	EXPECT_EQ(SIGKILL, info.exit_signal);
	EXPECT_EQ(0, info.exit_code);
	EXPECT_FALSE(info.flags & BLAMER_SLAB_COREDUMP);
	EXPECT_EQ('B', ro[2 * PG - 1]);	/* contents intact */
	EXPECT_EQ(0, bl_release(fd, h.id));
	EXPECT_EQ('B', ro[0]);
	munmap(ro, 2 * PG);
	close(rfd);
	close(fd);
}

/* The status says core, and a core file was really written. */
TEST(signal_with_core_dump)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	char dir[] = "/tmp/blamer-core-XXXXXX", cwd[256], path[512];
	struct blamer_slab_info info;
	struct bt_holder h;
	struct dirent *de;
	struct stat st;
	int status, cores = 0;
	DIR *d;

	ASSERT_NE(NULL, getcwd(cwd, sizeof(cwd)));
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, chdir(dir));
	if (setrlimit(RLIMIT_CORE, &rl))
		SKIP(return, "cannot raise RLIMIT_CORE");
	ASSERT_EQ(0, bt_holder_start(&h, PG, -1, -1, 0, SIGSEGV, NULL));
	status = bt_holder_finish(&h);
	ASSERT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(SIGSEGV, WTERMSIG(status));
	EXPECT_TRUE(WCOREDUMP(status)) TH_LOG("core_pattern or limits prevent dumps");
	ASSERT_EQ(0, bt_facts(h.id, &info));
	EXPECT_EQ(SIGSEGV, info.exit_signal);
	EXPECT_TRUE(info.flags & BLAMER_SLAB_COREDUMP);
	d = opendir(".");
	ASSERT_NE(NULL, d);
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "core", 4))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!stat(path, &st) && st.st_size > 0)
			cores++;
		unlink(path);
	}
	closedir(d);
	EXPECT_EQ(1, cores);
	ASSERT_EQ(0, chdir(cwd));
	rmdir(dir);
}

static void *exit_from_thread(void *arg)
{
	exit((int)(long)arg);
}

/* exit() only once the main thread is gone: a libc race otherwise. */
static void *exit_after_main(void *arg)
{
	pthread_join(*(pthread_t *)arg, NULL);
	exit(0);
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/*
 * exit() from a secondary thread ends the group with that code; a main
 * thread that leaves with pthread_exit() while another thread later
 * calls exit(0) ends it with 0.
 */
TEST(exit_code_from_threads)
{
	struct blamer_slab_info info;
	int up[2], status, round;
	__u64 id;
	pid_t pid;

	for (round = 0; round < 2; round++) {
		ASSERT_EQ(0, pipe(up));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			static pthread_t main_thread;
			struct blamer_create c;
			int cfd = bl_open(O_RDWR);
			pthread_t t;

			if (cfd < 0 || bl_create(cfd, PG, &c))
				_exit(1);
			if (write(up[1], &c.id, sizeof(c.id)) != sizeof(c.id))
				_exit(1);
			if (round == 0) {
				pthread_create(&t, NULL, sleeper, NULL);
				pthread_create(&t, NULL, exit_from_thread,
					       (void *)5L);
				pause();
			}
			main_thread = pthread_self();
			pthread_create(&t, NULL, exit_after_main, &main_thread);
			pthread_exit(NULL);
		}
		close(up[1]);
		ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
		close(up[0]);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status))
			TH_LOG("round %d: wait status 0x%x", round, status);
		ASSERT_EQ(0, bt_facts(id, &info));
		EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
		EXPECT_TRUE(info.flags & BLAMER_SLAB_EXITED);
		EXPECT_EQ(0, info.exit_signal);
		EXPECT_EQ(WEXITSTATUS(status), info.exit_code);
		EXPECT_EQ(round ? 0 : 5, info.exit_code);
	}
}

/*
 * The attack on the old ->flush rule: a thread with a file table of its
 * own (unshare(CLONE_FILES), close_range(CLOSE_RANGE_UNSHARE), or
 * clone(CLONE_THREAD) without CLONE_FILES) closes it and exits with its
 * own code while the process lives on.
 * The slab must stay live with no status, and the process's later death
 * by SIGSEGV must be what is recorded.
 */
enum { UNSHARE_FILES, CLOSE_RANGE, CLONE_OWN_FILES, SHARED_FILES };

static void *lone_thread_exit(void *arg)
{
	long how = (long)arg;

	if (how == UNSHARE_FILES && unshare(CLONE_FILES))
		_exit(30);
	if (how == CLOSE_RANGE &&
	    syscall(SYS_close_range, 0, ~0U, CLOSE_RANGE_UNSHARE))
		_exit(31);
	syscall(SYS_exit, 5);
	return NULL;
}

/* glibc's clone() ends the thread with SYS_exit(return value). */
static int lone_clone_fn(void *arg)
{
	(void)arg;
	return 5;
}

/*
 * A thread made with clone(CLONE_THREAD) but without CLONE_FILES: its
 * file table is a copy from birth. Waits until it is gone (the kernel
 * clears *tid at its exit, CLONE_CHILD_CLEARTID).
 */
static int lone_clone(void)
{
	static long stack[8192];
	static pid_t tid = -1;
	int i;

	if (clone(lone_clone_fn, (char *)stack + sizeof(stack),
		  CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD |
		  CLONE_SYSVSEM | CLONE_CHILD_CLEARTID,
		  NULL, NULL, NULL, &tid) < 0)
		return -1;
	for (i = 0; __atomic_load_n(&tid, __ATOMIC_ACQUIRE) && i < 5000; i++)
		usleep(1000);
	return __atomic_load_n(&tid, __ATOMIC_ACQUIRE) ? -1 : 0;
}

FIXTURE(lone_thread) {
	int dummy;
};

FIXTURE_VARIANT(lone_thread) {
	long how;
};

FIXTURE_VARIANT_ADD(lone_thread, unshare_files) {
	.how = UNSHARE_FILES,
};

FIXTURE_VARIANT_ADD(lone_thread, close_range_unshare) {
	.how = CLOSE_RANGE,
};

FIXTURE_VARIANT_ADD(lone_thread, clone_thread_own_files) {
	.how = CLONE_OWN_FILES,
};

FIXTURE_VARIANT_ADD(lone_thread, shared_files) {
	.how = SHARED_FILES,
};

FIXTURE_SETUP(lone_thread)
{
}

FIXTURE_TEARDOWN(lone_thread)
{
}

TEST_F(lone_thread, cannot_forge_exit)
{
	struct blamer_slab_info info;
	int up[2], down[2], status;
	__u64 id;
	pid_t pid;
	char b;

	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct blamer_create c;
		int cfd = bl_open(O_RDWR);
		pthread_t t;

		if (cfd < 0 || bl_create(cfd, PG, &c))
			_exit(1);
		if (variant->how == CLONE_OWN_FILES) {
			if (lone_clone())
				_exit(32);
		} else {
			pthread_create(&t, NULL, lone_thread_exit,
				       (void *)variant->how);
			pthread_join(t, NULL);
		}
		if (write(up[1], &c.id, sizeof(c.id)) != sizeof(c.id))
			_exit(1);
		if (read(down[0], &b, 1) != 1)
			_exit(1);
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
		_exit(2);
	}
	ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
	/* The thread is gone; the process is not. */
	ASSERT_EQ(0, bt_facts(id, &info));
	EXPECT_EQ(BLAMER_SLAB_LIVE, info.state);
	EXPECT_FALSE(info.flags & BLAMER_SLAB_EXITED);
	EXPECT_EQ(0, info.exit_code);
	ASSERT_EQ(1, write(down[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(SIGSEGV, WTERMSIG(status));
	ASSERT_EQ(0, bt_facts(id, &info));
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
	EXPECT_TRUE(info.flags & BLAMER_SLAB_EXITED);
	EXPECT_EQ(SIGSEGV, info.exit_signal);
	EXPECT_EQ(0, info.exit_code);
	EXPECT_EQ(!!WCOREDUMP(status),
		  !!(info.flags & BLAMER_SLAB_COREDUMP));
}

static int runs_sh(pid_t pid)
{
	char path[64], comm[32] = "";
	int fd, n;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	return n > 0 && !strncmp(comm, "sh\n", 3);
}

static void *exec_shell(void *arg)
{
	execl("/bin/sh", "sh", "-c", (const char *)arg, (char *)NULL);
	_exit(40);
}

/*
 * A thread other than the leader runs execve(): every other thread,
 * the leader included, is killed, yet the process lives on under the
 * same pid. Nothing is recorded until the new program exits.
 */
TEST(exec_from_a_thread_is_not_an_exit)
{
	struct blamer_slab_info info;
	int up[2], status;
	__u64 id;
	pid_t pid;

	if (access("/bin/sh", X_OK))
		SKIP(return, "no /bin/sh");
	ASSERT_EQ(0, pipe(up));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct blamer_create c;
		int cfd = bl_open(O_RDWR);
		pthread_t t;

		if (cfd < 0 || bl_create(cfd, PG, &c))
			_exit(1);
		if (write(up[1], &c.id, sizeof(c.id)) != sizeof(c.id))
			_exit(1);
		close(up[1]);
		pthread_create(&t, NULL, exec_shell, "sleep 1; exit 9");
		pause();
		_exit(3);
	}
	close(up[1]);
	ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
	close(up[0]);
	/* Once the process runs the shell, the exec is done. */
	for (status = 0; status < 200 && !runs_sh(pid); status++)
		usleep(10000);
	EXPECT_TRUE(runs_sh(pid));
	ASSERT_EQ(0, bt_facts(id, &info));
	EXPECT_EQ(BLAMER_SLAB_LIVE, info.state);
	EXPECT_FALSE(info.flags & BLAMER_SLAB_EXITED);
	EXPECT_EQ(pid, info.pid);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(9, WEXITSTATUS(status));
	ASSERT_EQ(0, bt_facts(id, &info));
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
	EXPECT_EQ(9, info.exit_code);
}

/*
 * Closing every descriptor and mapping does not end a slab: its process
 * does, whenever it exits.
 */
TEST(closing_everything_is_not_an_exit)
{
	struct blamer_slab_info info;
	int up[2], down[2], status;
	__u64 id;
	pid_t pid;
	char b;

	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct blamer_create c;
		int cfd = bl_open(O_RDWR);
		void *p;

		if (cfd < 0 || bl_create(cfd, PG, &c))
			_exit(1);
		p = bl_map(c.fd, PG, PROT_READ | PROT_WRITE);
		if (!p)
			_exit(1);
		munmap(p, PG);
		close(c.fd);
		close(cfd);
		if (write(up[1], &c.id, sizeof(c.id)) != sizeof(c.id))
			_exit(1);
		if (read(down[0], &b, 1) != 1)
			_exit(1);
		_exit(7);
	}
	ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
	ASSERT_EQ(0, bt_facts(id, &info));
	EXPECT_EQ(BLAMER_SLAB_LIVE, info.state);
	ASSERT_EQ(1, write(down[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, bt_facts(id, &info));
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
	EXPECT_EQ(7, info.exit_code);
}

/*
 * A child that inherited the descriptors does not keep the slab alive:
 * the creator's death orphans it at once, with the creator's status.
 */
TEST(child_holding_descriptors_does_not_keep_it_live)
{
	struct blamer_slab_info info;
	int up[2], down[2], status;
	__u64 id;
	pid_t pid;

	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct blamer_create c;
		int cfd = bl_open(O_RDWR);
		char b;

		if (cfd < 0 || bl_create(cfd, PG, &c))
			_exit(1);
		if (!fork()) {
			/* Keeps cfd and c.fd until told to go. */
			close(up[1]);
			if (read(down[0], &b, 1) < 0)
				_exit(1);
			_exit(0);
		}
		if (write(up[1], &c.id, sizeof(c.id)) != sizeof(c.id))
			_exit(1);
		_exit(3);
	}
	close(up[1]);
	ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, bt_facts(id, &info));
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
	EXPECT_TRUE(info.flags & BLAMER_SLAB_EXITED);
	EXPECT_EQ(3, info.exit_code);
	ASSERT_EQ(1, write(down[1], "x", 1));
	close(down[1]);
	close(up[0]);
}

/* Start time and pid survive the death, for the PID-reuse check. */
TEST(facts_kept_after_death)
{
	struct blamer_slab_info live, dead;
	struct bt_holder h;
	long long ticks;

	ASSERT_EQ(0, bt_holder_start(&h, PG, -1, -1, 0, 0, NULL));
	ticks = bt_proc_starttime(h.pid);
	ASSERT_LE(0, ticks);
	ASSERT_EQ(0, bt_facts(h.id, &live));
	EXPECT_EQ(ticks, bt_ns_to_ticks(live.start_time_ns));
	bt_holder_finish(&h);
	ASSERT_EQ(0, bt_facts(h.id, &dead));
	EXPECT_EQ(live.start_time_ns, dead.start_time_ns);
	EXPECT_EQ(live.create_time_ns, dead.create_time_ns);
	EXPECT_EQ(h.pid, dead.pid);
	EXPECT_STREQ(live.comm, dead.comm);
	EXPECT_EQ(live.file_serial, dead.file_serial);
}

int main(int argc, char **argv)
{
	return bt_main(argc, argv);
}
