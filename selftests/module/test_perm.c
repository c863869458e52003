// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/blamer selftests: who may read a slab, and what others learn.
 * The ptrace-like rule for live slabs and orphans alike (setuid and
 * setgid creators, non-dumpable ones, creators with capabilities, the
 * reader group, readers in a user namespace of their own), pid and time
 * namespaces, and no oracles: open, release, list, status and poll tell
 * a caller nothing about slabs it may not read.
 */
#include <linux/aio_abi.h>
#include <poll.h>

#include "blamer_test.h"

#define U1 1000
#define U2 1001

struct as {
	int uid;
	int gid;
};

static int open_as(struct as who, __u64 id)
{
	return bt_run_as(who.uid, who.gid, bt_child_open, &id);
}

static int release_as(struct as who, __u64 id)
{
	return bt_run_as(who.uid, who.gid, bt_child_release, &id);
}

static int lists_as(struct as who, __u64 id)
{
	return bt_run_as(who.uid, who.gid, bt_child_lists, &id);
}

static const struct as user1 = { U1, U1 }, user2 = { U2, U2 },
	user1_gid2 = { U1, U2 };

FIXTURE(root) {
	struct bt_params saved;
};

FIXTURE_SETUP(root)
{
	if (geteuid())
		SKIP(return, "needs root");
	bt_params_save(&self->saved);
	ASSERT_TRUE(self->saved.ok);
}

FIXTURE_TEARDOWN(root)
{
	if (BT_SKIPPED())
		return;
	EXPECT_EQ(0, bt_params_restore(&self->saved));
}

TEST_F(root, same_ids_for_live_slabs_and_orphans)
{
	struct bt_holder h;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bt_holder_start(&h, PG, U1, U1, 0, 0, NULL));
	for (int orphan = 0; orphan < 2; orphan++) {
		EXPECT_EQ(0, open_as(user1, h.id));
		EXPECT_EQ(0, lists_as(user1, h.id));
		EXPECT_EQ(ENOENT, open_as(user2, h.id));
		EXPECT_EQ(1, lists_as(user2, h.id));
		EXPECT_EQ(ENOENT, open_as(user1_gid2, h.id));
		EXPECT_EQ(ENOENT, release_as(user2, h.id));
		EXPECT_EQ(0, bt_try_open(h.id));	/* CAP_SYS_PTRACE */
		/* The reader group opens every visible slab. */
		ASSERT_EQ(0, bl_param_set("reader_gid", U2));
		EXPECT_EQ(0, open_as(user2, h.id));
		ASSERT_EQ(0, bl_param_set("reader_gid", -1));
		EXPECT_EQ(ENOENT, open_as(user2, h.id));
		if (!orphan) {
			EXPECT_EQ(EBUSY, release_as(user1, h.id));
			bt_holder_finish(&h);
		}
	}
	EXPECT_EQ(0, release_as(user1, h.id));
	EXPECT_EQ(ENOENT, release_as(user1, h.id));

	/* Root's slab is closed to users, live or orphaned. */
	ASSERT_EQ(0, bt_holder_start(&h, PG, -1, -1, 0, 0, NULL));
	EXPECT_EQ(ENOENT, open_as(user1, h.id));
	bt_holder_finish(&h);
	EXPECT_EQ(ENOENT, open_as(user1, h.id));
	EXPECT_EQ(ENOENT, release_as(user1, h.id));
	EXPECT_EQ(0, release_as((struct as){ -1, -1 }, h.id));
}

/* A copy of blamer_slabctl owned by root:@gid with @mode, or NULL. */
static char *setid_copy(const char *ctl, int gid, mode_t mode)
{
	static char path[64];
	char cmd[256];

	snprintf(path, sizeof(path), "/tmp/blamer-setid-%d", getpid());
	snprintf(cmd, sizeof(cmd), "cp %s %s && chown 0:%d %s && chmod %o %s",
		 ctl, path, gid, path, mode, path);
	return system(cmd) ? NULL : path;
}

/* Run @prog hold 4096 as @who; its pid, and the slab ID in *@id. */
static pid_t spawn_holder(const char *prog, struct as who, __u64 *id)
{
	char out[64] = "";
	int p[2];
	ssize_t n;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		close(p[0]);
		dup2(p[1], 1);
		if (bt_become(who.uid, who.gid))
			_exit(100);
		execl(prog, "blamer_slabctl", "hold", "4096", (char *)NULL);
		_exit(101);
	}
	close(p[1]);
	n = read(p[0], out, sizeof(out) - 1);
	close(p[0]);
	out[n > 0 ? n : 0] = 0;
	*id = strtoull(out, NULL, 10);
	return pid;
}

static int kill_as(void *arg)
{
	return kill(*(pid_t *)arg, SIGKILL) ? errno : 0;
}

/*
 * A setuid-root (then a setgid) program run by uid 1000 writes a secret.
 * uid 1000 may kill it, but may read its slab neither while it lives nor
 * once it is an orphan, nor release it.
 */
TEST_F(root, setuid_and_setgid_creators)
{
	static const struct {
		int gid;
		mode_t mode;
		unsigned int euid;
	} kind[] = {
		{ 0, 04755, 0 },	/* setuid root */
		{ U2, 02755, U1 },	/* setgid 1001 */
	};
	const char *ctl = bt_slabctl();
	struct blamer_slab_info info;
	int fd = bl_open(O_RDONLY);
	__u64 id;
	char *prog;
	pid_t pid;

	if (BT_SKIPPED())
		return;
	if (!ctl)
		SKIP(return, "blamer_slabctl not found (BLAMER_SLABCTL)");
	ASSERT_LE(0, fd);
	for (int k = 0; k < 2; k++) {
		prog = setid_copy(ctl, kind[k].gid, kind[k].mode);
		ASSERT_NE(NULL, prog);
		pid = spawn_holder(prog, user1, &id);
		ASSERT_LT(0, pid);
		ASSERT_NE(0, id);
		ASSERT_EQ(0, bl_find(fd, id, &info));
		EXPECT_EQ(kind[k].euid, info.uid);
		EXPECT_EQ(ENOENT, open_as(user1, id)) TH_LOG("kind %d", k);
		EXPECT_EQ(1, lists_as(user1, id));
		EXPECT_EQ(0, bt_run_as(U1, U1, kill_as, &pid));
		ASSERT_EQ(pid, waitpid(pid, NULL, 0));
		ASSERT_EQ(0, bl_find(fd, id, &info));
		EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
		EXPECT_EQ(ENOENT, open_as(user1, id)) TH_LOG("kind %d", k);
		EXPECT_EQ(1, lists_as(user1, id));
		EXPECT_EQ(ENOENT, release_as(user1, id));
		EXPECT_EQ(0, bt_try_open(id));
		EXPECT_EQ(0, bl_release(fd, id));
		unlink(prog);
	}
	close(fd);
}

/* The first line @prog prints when run as @who with @a1 @a2. */
static void run_prog_as(const char *prog, struct as who, const char *a1,
			const char *a2, char *out, size_t len)
{
	ssize_t n;
	int p[2];
	pid_t pid;

	out[0] = 0;
	if (pipe(p))
		return;
	pid = fork();
	if (!pid) {
		close(p[0]);
		dup2(p[1], 1);
		if (bt_become(who.uid, who.gid))
			_exit(100);
		execl(prog, "blamer_slabctl", a1, a2, (char *)NULL);
		_exit(101);
	}
	close(p[1]);
	n = pid > 0 ? read(p[0], out, len - 1) : 0;
	close(p[0]);
	out[n > 0 ? n : 0] = 0;
	out[strcspn(out, "\n")] = 0;
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/*
 * A setuid-root program run by uid 1000 makes a slab as euid 0, drops
 * every id to 1000 and execs a plain program: the same process, now
 * uid 1000 through and through. Creating the slab took root, so reading
 * it still does: the new program is not its creator. The control: the
 * same steps without the setuid bit read it (same ids, dumpable).
 */
TEST_F(root, setuid_creator_that_dropped_ids_and_exec_d)
{
	const char *ctl = bt_slabctl();
	char out[64], *prog;

	if (BT_SKIPPED())
		return;
	if (!ctl)
		SKIP(return, "blamer_slabctl not found (BLAMER_SLABCTL)");
	prog = setid_copy(ctl, 0, 04755);
	ASSERT_NE(NULL, prog);
	run_prog_as(prog, user1, "dropexec", ctl, out, sizeof(out));
	EXPECT_STREQ("ENOENT", out);
	run_prog_as(ctl, user1, "dropexec", ctl, out, sizeof(out));
	EXPECT_STREQ("ok", out);
	unlink(prog);
	bt_clean_orphans();
}

static void not_dumpable(void)
{
	prctl(PR_SET_DUMPABLE, 0);
}

/* A process that made itself non-dumpable is closed to its own uid. */
TEST_F(root, non_dumpable_creator)
{
	struct bt_holder h;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bt_holder_start(&h, PG, U1, U1, 0, 0, not_dumpable));
	EXPECT_EQ(ENOENT, open_as(user1, h.id));
	EXPECT_EQ(0, bt_try_open(h.id));
	bt_holder_finish(&h);
	EXPECT_EQ(ENOENT, open_as(user1, h.id));
	EXPECT_EQ(0, release_as((struct as){ -1, -1 }, h.id));
}

/* A reader of uid 1000 in a user namespace of its own (a sandbox). */
static int open_in_own_userns(void *arg)
{
	if (unshare(CLONE_NEWUSER))
		return 90;
	return bt_child_open(arg);
}

TEST_F(root, capabilities_and_user_namespaces)
{
	struct bt_holder h;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bt_holder_start(&h, PG, -1, -1, 0, 0, bt_keep_a_capability));
	for (int orphan = 0; orphan < 2; orphan++) {
		EXPECT_EQ(ENOENT, open_as(user1, h.id));
		EXPECT_EQ(ENOENT, release_as(user1, h.id));
		EXPECT_EQ(0, bt_try_open(h.id));	/* CAP_SYS_PTRACE */
		if (!orphan)
			bt_holder_finish(&h);
	}
	EXPECT_EQ(0, release_as((struct as){ -1, -1 }, h.id));

	/* A plain creator: open to its uid, not to its uid's sandbox. */
	ASSERT_EQ(0, bt_holder_start(&h, PG, U1, U1, 0, 0, NULL));
	EXPECT_EQ(0, open_as(user1, h.id));
	EXPECT_EQ(ENOENT, bt_run_as(U1, U1, open_in_own_userns, &h.id));
	bt_holder_finish(&h);
	EXPECT_EQ(ENOENT, bt_run_as(U1, U1, open_in_own_userns, &h.id));
	EXPECT_EQ(0, release_as(user1, h.id));
}

/* In a new pid namespace: run @fn there as @who; its status. */
static int in_pidns(struct as who, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork(), inner;

	if (pid < 0)
		return -1;
	if (!pid) {
		if (unshare(CLONE_NEWPID))
			_exit(120);
		inner = fork();
		if (inner < 0)
			_exit(121);
		if (!inner) {
			if (bt_become(who.uid, who.gid))
				_exit(122);
			_exit(fn(arg));
		}
		if (waitpid(inner, &status, 0) != inner || !WIFEXITED(status))
			_exit(123);
		_exit(WEXITSTATUS(status));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* uid 1000 inside: the outside slab does not exist for it. */
static int pidns_user(void *arg)
{
	__u64 outside = *(__u64 *)arg;
	struct blamer_slab_info info;
	struct blamer_create c;
	int fd = bl_open(O_RDWR);

	if (getpid() != 1)
		return 10;
	if (fd < 0 || bl_create(fd, PG, &c))
		return 11;
	if (bl_find(fd, c.id, &info) || info.pid != 1 ||
	    (info.flags & BLAMER_SLAB_PID_HIDDEN))
		return 12;
	if (bl_find(fd, outside, &info) != -ENOENT)
		return 13;
	if (bl_open_slab(fd, outside) != -ENOENT)
		return 14;
	return 0;
}

/* root inside: privileged in the initial namespace, it sees all. */
static int pidns_root(void *arg)
{
	__u64 outside = *(__u64 *)arg;
	struct blamer_slab_info info;
	int fd = bl_open(O_RDONLY), sfd;

	if (fd < 0 || bl_find(fd, outside, &info))
		return 20;
	if (info.pid != 0 || !(info.flags & BLAMER_SLAB_PID_HIDDEN))
		return 21;
	sfd = bl_open_slab(fd, outside);
	if (sfd < 0)
		return 22;
	return 0;
}

TEST_F(root, pid_namespace_visibility)
{
	struct bt_holder h;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bt_holder_start(&h, PG, U1, U1, 0, 0, NULL));
	EXPECT_EQ(0, in_pidns(user1, pidns_user, &h.id));
	EXPECT_EQ(0, in_pidns((struct as){ -1, -1 }, pidns_root, &h.id));
	bt_holder_finish(&h);
	EXPECT_EQ(0, in_pidns(user1, pidns_user, &h.id));	/* orphan */
}

#define TIMENS_OFFSET_S 1000

/* Inside a time namespace: times agree with /proc/self/stat there. */
static int timens_child(void *arg)
{
	struct blamer_slab_info info;
	struct blamer_create c;
	int fd = bl_open(O_RDWR), p = *(int *)arg;

	if (fd < 0 || bl_create(fd, PG, &c) || bl_find(fd, c.id, &info))
		return 30;
	if (bt_proc_starttime(getpid()) != bt_ns_to_ticks(info.start_time_ns))
		return 31;
	if (write(p, &info, sizeof(info)) != sizeof(info))
		return 32;
	return 0;
}

TEST_F(root, time_namespace_start_times)
{
	struct blamer_slab_info in, out;
	int status, p[2], fd = bl_open(O_RDONLY), tfd;
	pid_t pid;

	if (BT_SKIPPED())
		return;
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (unshare(CLONE_NEWTIME))
			_exit(40);
		tfd = open("/proc/self/timens_offsets", O_WRONLY);
		if (tfd < 0 || dprintf(tfd, "boottime %d 0\n",
				       TIMENS_OFFSET_S) < 0)
			_exit(41);
		close(tfd);
		_exit(bt_run_as(-1, -1, timens_child, &p[1]));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(sizeof(in), read(p[0], &in, sizeof(in)));
	ASSERT_EQ(0, bl_find(fd, in.id, &out));
	EXPECT_EQ(TIMENS_OFFSET_S * 1000000000ULL,
		  in.start_time_ns - out.start_time_ns);
	EXPECT_EQ(TIMENS_OFFSET_S * 1000000000ULL,
		  in.create_time_ns - out.create_time_ns);
	EXPECT_EQ(0, bl_release(fd, in.id));
	close(fd);
}

/* ---------------------------------------------------------- no oracles */

static int map_passed(void *arg)
{
	int sfd = *(int *)arg;

	/* Permission comes first: the size of the slab is not told either. */
	if (bl_map(sfd, PG, PROT_READ) || errno != EACCES)
		return 1;
	if (bl_map(sfd, 64 * PG, PROT_READ) || errno != EACCES)
		return 2;
	if (bl_map_at(sfd, 63 * PG, PG, PROT_READ) || errno != EACCES)
		return 3;
	return 0;
}

/*
 * A read-only descriptor root opened, handed to a user who may not read
 * the slab: mapping is refused, whatever range it asks for.
 */
TEST_F(root, passed_readonly_descriptor_gives_nothing)
{
	struct bt_holder h;
	int sfd, dev = bl_open(O_RDONLY);

	if (BT_SKIPPED())
		return;
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, bt_holder_start(&h, 2 * PG, U1, U1, 0, 0, NULL));
	sfd = bl_open_slab(dev, h.id);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(0, bt_run_as(U2, U2, map_passed, &sfd));
	/* uid 1000 may read it: its first mapping succeeds. */
	EXPECT_EQ(1, bt_run_as(U1, U1, map_passed, &sfd));
	bt_holder_finish(&h);
	close(sfd);
	close(dev);
}

struct scan {
	__u64 hi;
	int fd;
};

/*
 * Every ID the caller can open is one it lists, and every other ID, in
 * existence or not, answers open and release the same: ENOENT.
 */
static int scan_ids(void *arg)
{
	__u64 hi = *(__u64 *)arg, id;
	struct blamer_slab_info info;
	int fd = bl_open(O_RDONLY), sfd, err;

	if (fd < 0)
		return 50;
	for (id = 1; id <= hi; id++) {
		sfd = bl_open_slab(fd, id);
		if (sfd >= 0) {
			close(sfd);
			if (bl_find(fd, id, &info))
				return 51;
			continue;
		}
		if (sfd != -ENOENT)
			return 52;
		if (!bl_find(fd, id, &info))
			return 53;
		err = bl_release(fd, id);
		if (err != -ENOENT)
			return 54;
	}
	return 0;
}

TEST(scanning_ids_reveals_nothing)
{
	struct blamer_create c;
	struct bt_holder h;
	int fd = bl_open(O_RDWR);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd, PG, &c));
	close(c.fd);
	/* Slabs of another user exist, live and orphaned, when root. */
	if (!geteuid()) {
		ASSERT_NE(0, bt_orphan(PG, U1, U1));
		ASSERT_EQ(0, bt_holder_start(&h, 2 * PG, U1, U1, 0, 0, NULL));
		EXPECT_EQ(0, bt_run_as(U2, U2, scan_ids, &c.id));
		bt_holder_finish(&h);
	}
	EXPECT_EQ(0, bt_run_as(-1, -1, scan_ids, &c.id));
	close(fd);
}

/* Another user's slabs show neither in one's counts nor as totals. */
TEST_F(root, status_is_per_user)
{
	struct blamer_status a, b;
	struct bt_holder h;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bt_status_as(user2.uid, user2.gid, &a));
	EXPECT_FALSE(a.flags & BLAMER_STATUS_DEVICE);
	EXPECT_EQ(0, a.slabs);
	EXPECT_EQ(0, a.bytes);
	ASSERT_EQ(0, bt_holder_start(&h, 3 * PG, U1, U1, 0, 0, NULL));
	ASSERT_NE(0, bt_orphan(2 * PG, U1, U1));
	ASSERT_EQ(0, bt_status_as(user2.uid, user2.gid, &b));
	EXPECT_EQ(a.user_slabs, b.user_slabs);
	EXPECT_EQ(a.user_orphans, b.user_orphans);
	EXPECT_EQ(a.user_bytes, b.user_bytes);
	EXPECT_EQ(0, b.slabs);
	bt_holder_finish(&h);
}

/* poll(): 1 if woken with POLLIN within @ms, 0 if not, -1 on error. */
static int polled(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, ms);

	return n < 0 ? -1 : n > 0 && (p.revents & POLLIN);
}

static int list_clears(int fd)
{
	struct blamer_slab_info *v;
	int n = bl_list(fd, &v, NULL);

	if (n >= 0)
		free(v);
	return n;
}

/* Events: creation, orphaning and release wake a poller until it lists. */
TEST(poll_wakeups)
{
	struct blamer_create c;
	struct bt_holder h;
	int fd = bl_open(O_RDONLY), dev = bl_open(O_RDWR), status;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, dev);
	ASSERT_LE(0, list_clears(fd));
	EXPECT_EQ(0, polled(fd, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* A descriptor of its own: an inherited one cannot create. */
		int own = bl_open(O_RDWR);

		usleep(200000);
		_exit(own < 0 || bl_create(own, PG, &c) ? 1 : 0);
	}
	EXPECT_EQ(1, polled(fd, 5000));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(1, polled(fd, 0));	/* pending until listed */
	ASSERT_LE(0, list_clears(fd));
	EXPECT_EQ(0, polled(fd, 0));
	/* The child died: its slab was orphaned, an event. */
	ASSERT_EQ(0, bt_holder_start(&h, PG, -1, -1, 0, 0, NULL));
	ASSERT_LE(0, list_clears(fd));
	bt_holder_finish(&h);
	EXPECT_EQ(1, polled(fd, 2000));
	ASSERT_LE(0, list_clears(fd));
	EXPECT_EQ(0, bl_release(fd, h.id));
	EXPECT_EQ(1, polled(fd, 2000));
	ASSERT_LE(0, list_clears(fd));
	EXPECT_EQ(0, polled(fd, 100));
	close(dev);
	close(fd);
}

/* A watcher as @arg's uid; exits 1 if woken within 1.5 s, 0 if not. */
static int watcher(void *arg)
{
	int *p = arg, fd = bl_open(O_RDONLY);

	if (fd < 0 || list_clears(fd) < 0)
		return 70;
	if (write(p[1], "r", 1) != 1)
		return 71;
	return polled(fd, 1500) == 1;
}

/* Run a watcher as @who while a process as @creator creates a slab. */
static int woken(struct as who, struct as creator)
{
	int p[2], status;
	char b;
	pid_t w;

	if (pipe(p))
		return -1;
	w = fork();
	if (!w)
		_exit(bt_run_as(who.uid, who.gid, watcher, p));
	if (read(p[0], &b, 1) != 1)
		return -1;
	bt_orphan(PG, creator.uid, creator.gid);
	close(p[0]);
	close(p[1]);
	if (waitpid(w, &status, 0) != w || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Nobody is woken by slabs it cannot read; any user cannot wake all. */
TEST_F(root, poll_is_filtered)
{
	if (BT_SKIPPED())
		return;
	EXPECT_EQ(0, woken(user2, user1));
	EXPECT_EQ(1, woken(user1, user1));
	EXPECT_EQ(1, woken((struct as){ -1, -1 }, user1));
	EXPECT_EQ(0, woken(user1, (struct as){ -1, -1 }));
}

/*
 * Watchers of @arg's uid: 6 descriptors list (and so watch, up to
 * max_user_watchers), a slab is made; which of them poll() wakes, then,
 * once the first is closed, whether the 5th is woken by the next slab.
 * Exit status: bit i set if descriptor i was woken, bit 6 for the 5th's
 * second chance; 127 on trouble.
 */
static int six_watchers(void *arg)
{
	struct blamer_create c;
	int fd[6], dev, i, woke = 0;

	(void)arg;
	dev = bl_open(O_RDWR);
	for (i = 0; i < 6; i++) {
		fd[i] = bl_open(O_RDONLY);
		/* a listing works beyond the bound too */
		if (fd[i] < 0 || list_clears(fd[i]) < 0)
			return 127;
	}
	if (dev < 0 || bl_create(dev, PG, &c))
		return 127;
	for (i = 0; i < 6; i++)
		woke |= (polled(fd[i], i < 4 ? 2000 : 300) == 1) << i;
	close(fd[0]);
	/* the 5th's poll() now makes it a watcher: the next event wakes it */
	if (polled(fd[4], 0) < 0 || list_clears(fd[4]) < 0 || bl_create(dev, PG, &c))
		return 127;
	woke |= (polled(fd[4], 2000) == 1) << 6;
	return woke;
}

/*
 * Every event is checked against every watcher (in creators' ioctls and
 * the reaper every death waits for): an account has at most
 * max_user_watchers, so no user's descriptors slow the others'. One
 * beyond lists as any other and is never woken, until one of the
 * account's closes; CAP_SYS_RESOURCE is not bound.
 */
TEST_F(root, watchers_per_user_are_bounded)
{
	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_watchers", 4));
	/* 0-3 woken, 4 and 5 not; 4 woken once 0 is closed */
	EXPECT_EQ(0x4f, bt_run_as(U1, U1, six_watchers, NULL));
	/* another user's bound is its own */
	EXPECT_EQ(0x4f, bt_run_as(U2, U2, six_watchers, NULL));
	/* root (CAP_SYS_RESOURCE) is not bound */
	EXPECT_EQ(0x7f, bt_run_as(-1, -1, six_watchers, NULL));
	bt_clean_orphans();
}

/*
 * A polled descriptor that reaches another asker is seen anew: root
 * polls, then drops to uid 1001; a slab only root could read must not
 * wake it, nor show in the event count its next listing returns.
 */
TEST_F(root, a_poller_that_drops_privileges_learns_nothing)
{
	struct blamer_list l = { .info_size = sizeof(struct blamer_slab_info) };
	int fd, p[2], status;
	char b;
	pid_t pid;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		fd = bl_open(O_RDONLY);
		if (fd < 0 || polled(fd, 0) != 0 || bt_become(U2, U2) ||
		    write(p[1], "d", 1) != 1)
			_exit(70);
		/* woken: 1; then the count a listing gives, at most 100 */
		b = (char)polled(fd, 1500);
		if (ioctl(fd, BLAMER_IOC_LIST, &l))
			_exit(71);
		_exit(b * 100 + (int)(l.events < 100 ? l.events : 99));
	}
	ASSERT_EQ(1, read(p[0], &b, 1));
	bt_orphan(PG, U1, U1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(p[0]);
	close(p[1]);
	bt_clean_orphans();
}

/* A short wait of @n steps, for the two sides of a race to meet. */
static void spin(int n)
{
	while (n-- > 0)
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* A listing with nothing around it: bl_list() allocates, which moves the race. */
static void list_bare(int fd)
{
	static struct blamer_slab_info v[16];
	struct blamer_list l = { .slabs = (uintptr_t)v, .info_size = sizeof(v[0]),
				 .capacity = 16 };

	ioctl(fd, BLAMER_IOC_LIST, &l);
}

/* Shared by the two users of shared_descriptor_race(). */
struct race_board {
	int shot, done, target, quit, delay;
};

/*
 * Two users poll and list one descriptor at once: uid 1001, at its bound
 * already, polls it (refused: it stops watching) while uid 1000, whose
 * watcher it is, lists it again. Whichever is last, the descriptor is
 * counted against the account it watches for: never watching and counted
 * nowhere, which let two users hold any number of watchers (201 at a
 * bound of 1). Returns the shots where it was, -1 on trouble.
 */
static int shared_descriptor_race(int shots)
{
	struct race_board *bd = mmap(NULL, PG, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int fd[8], i, status, escaped = -1;
	pid_t b, a;

	if (bd == MAP_FAILED)
		return -1;
	for (i = 0; i < 8; i++)
		fd[i] = bl_open(O_RDWR);
	b = fork();
	if (!b) {
		int own, last = 0;

		if (bt_become(U2, U2))
			_exit(1);
		own = bl_open(O_RDONLY);
		polled(own, 0);			/* uid 1001: 1 of 1 */
		while (!__atomic_load_n(&bd->quit, __ATOMIC_ACQUIRE)) {
			if (__atomic_load_n(&bd->shot, __ATOMIC_ACQUIRE) == last)
				continue;
			last = bd->shot;
			spin(bd->delay);
			polled(fd[bd->target], 0);
			__atomic_store_n(&bd->done, last, __ATOMIC_RELEASE);
		}
		_exit(0);
	}
	a = fork();
	if (!a) {
		int dev, got = 0, n;
		unsigned int seed = 1;

		struct timespec t0, now;

		if (bt_become(U1, U1))
			_exit(255);
		dev = bl_open(O_RDWR);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		/* at most 10 s: a debug kernel makes a shot slow */
		for (n = 0; n < shots && got < 250; n++) {
			struct blamer_create c;
			int probe, rp, rt, t = got % 8;	/* the next once one escaped */

			if (!clock_gettime(CLOCK_MONOTONIC, &now) && now.tv_sec - t0.tv_sec >= 10)
				break;
			bd->target = t;
			list_bare(fd[t]);		/* uid 1000: 1 of 1 */
			bd->delay = (int)(rand_r(&seed) % 4000);
			__atomic_add_fetch(&bd->shot, 1, __ATOMIC_RELEASE);
			spin((int)(rand_r(&seed) % 4000));
			list_bare(fd[t]);
			while (__atomic_load_n(&bd->done, __ATOMIC_ACQUIRE) != bd->shot)
				;
			/* counted iff uid 1000 has none: both woken, it had none */
			probe = bl_open(O_RDONLY);
			polled(probe, 0);
			if (probe < 0 || bl_create(dev, PG, &c))
				_exit(254);
			rp = polled(probe, 0);
			rt = polled(fd[t], 0);
			bl_release(dev, c.id);
			close(c.fd);
			close(probe);
			got += rp == 1 && rt == 1;
		}
		_exit(got);
	}
	for (i = 0; i < 8; i++)
		close(fd[i]);
	if (waitpid(a, &status, 0) == a && WIFEXITED(status))
		escaped = WEXITSTATUS(status);
	__atomic_store_n(&bd->quit, 1, __ATOMIC_RELEASE);
	waitpid(b, NULL, 0);
	munmap(bd, PG);
	return escaped;
}

TEST_F(root, a_descriptor_two_users_share_is_counted_once)
{
	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_watchers", 1));
	EXPECT_EQ(0, shared_descriptor_race(4000));
	bt_clean_orphans();
}

static int cred_fd, cred_go[2], cred_done[2];

/* The other thread: polls cred_fd when told; writes 1 if woken. */
static void *cred_poller(void *arg)
{
	char c, r;

	(void)arg;
	while (read(cred_go[0], &c, 1) == 1 && c == 'p') {
		r = (char)polled(cred_fd, 2000);
		if (write(cred_done[1], &r, 1) != 1)
			break;
	}
	return NULL;
}

/*
 * A process's threads with credentials alike are one asker: glibc's
 * setresuid() with a second thread running gives each its own copy, and
 * a reader that lists in one thread and polls in the other lost every
 * event between the two (the count was reset at each switch). Exit
 * status: how many of 3 creates woke the other thread.
 */
static int threads_own_creds(void *arg)
{
	struct blamer_create c;
	int dev, round, woke = 0;
	pthread_t t;
	char r;

	(void)arg;
	if (pipe(cred_go) || pipe(cred_done) || pthread_create(&t, NULL, cred_poller, NULL))
		return 100;
	if (bt_become(U1, U1))		/* now, with the thread running */
		return 101;
	cred_fd = bl_open(O_RDONLY);
	dev = bl_open(O_RDWR);
	for (round = 0; round < 3; round++) {
		if (list_clears(cred_fd) < 0 || bl_create(dev, PG, &c) ||
		    write(cred_go[1], "p", 1) != 1 || read(cred_done[0], &r, 1) != 1)
			return 102;
		woke += r == 1;
	}
	if (write(cred_go[1], "q", 1) != 1 || pthread_join(t, NULL))
		return 103;
	return woke;
}

TEST_F(root, threads_with_credentials_alike_are_one_asker)
{
	if (BT_SKIPPED())
		return;
	EXPECT_EQ(3, bt_run_as(-1, -1, threads_own_creds, NULL));
	bt_clean_orphans();
}

/* @line as both the uid and the gid map of @pid's user namespace. */
static int map_line(pid_t pid, const char *line)
{
	static const char *const which[] = { "uid_map", "gid_map" };
	char path[64];
	int i;

	for (i = 0; i < 2; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/%s", pid, which[i]);
		f = fopen(path, "w");
		if (!f)
			return -1;
		fputs(line, f);
		if (fclose(f))
			return -1;
	}
	return 0;
}

/* Map ids 0..@count-1 of @pid's user namespace to @outer... of its parent's. */
static int map_ids(pid_t pid, int outer, int count)
{
	char line[48];

	snprintf(line, sizeof(line), "0 %d %d\n", outer, count);
	return map_line(pid, line);
}

/*
 * In a child: a user namespace of its own (made as uid 1000, so uid 1000
 * owns it), whose ids 0..@count-1 the parent maps to @outer... (map_ids);
 * then root in it, with every capability there and none outside, and
 * dumpable (changing ids made it not). Returns 0 in the child, the
 * child's pid in the parent, -1 on trouble.
 */
static pid_t userns_child(int outer, int count)
{
	int up[2], down[2];
	char b = 0;
	pid_t pid;

	if (pipe(up) || pipe(down))
		return -1;
	pid = fork();
	if (pid == 0) {
		if ((geteuid() == 0 && bt_become(U1, U1)) || unshare(CLONE_NEWUSER) ||
		    write(up[1], "u", 1) != 1 || read(down[0], &b, 1) != 1 || b != 'g' ||
		    setresgid(0, 0, 0) || setresuid(0, 0, 0) || prctl(PR_SET_DUMPABLE, 1))
			_exit(90);
	} else if (pid > 0) {
		if (read(up[0], &b, 1) != 1 || map_ids(pid, outer, count) ||
		    write(down[1], "g", 1) != 1)
			pid = -1;
	}
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	return pid;
}

/* A creator: once @go says so, one slab, then exit (an orphan). */
static void create_when_told(int go)
{
	struct blamer_create cr;
	char b;
	int dev;

	if (read(go, &b, 1) != 1)
		_exit(72);
	dev = bl_open(O_RDWR);
	_exit(dev < 0 || bl_create(dev, PG, &cr) ? 73 : 0);
}

/*
 * A watcher is root in a user namespace of its own (host uids 100000...);
 * a creator is root in a user namespace nested in the watcher's
 * (@nested) or in a sibling of it (host uids 200000...). Returns what the
 * watcher saw: 1 woken, 0 not; -1 on trouble.
 */
static int woken_across_namespaces(bool nested)
{
	int ready[2], go[2], seen[2];
	char b = 0, r = 0;
	pid_t top, other = 0;

	if (pipe(ready) || pipe(go) || pipe(seen))
		return -1;
	top = userns_child(100000, 65536);
	if (top == 0) {
		/*
		 * The watcher's namespace: a watcher in it, and if nested,
		 * the creator's namespace inside it.
		 */
		pid_t w = fork(), c = 0;

		if (w == 0) {
			int fd = bl_open(O_RDONLY);

			if (fd < 0 || list_clears(fd) < 0 || write(ready[1], "r", 1) != 1)
				_exit(70);
			r = (char)('0' + polled(fd, 3000));
			_exit(write(seen[1], &r, 1) == 1 ? 0 : 71);
		}
		if (nested)
			c = userns_child(1, 1000);
		if (c == 0 && nested)
			create_when_told(go[0]);
		_exit(w < 0 || c < 0 || waitpid(w, NULL, 0) != w ||
		      (nested && waitpid(c, NULL, 0) != c) ? 74 : 0);
	}
	if (top > 0 && !nested) {
		/* The sibling: a namespace of its own whose child creates. */
		other = userns_child(200000, 65536);
		if (other == 0) {
			pid_t c = userns_child(1, 1000);

			if (c == 0)
				create_when_told(go[0]);
			_exit(c < 0 || waitpid(c, NULL, 0) != c ? 74 : 0);
		}
	}
	/* only the children write these: if they all die, reads see EOF */
	close(ready[1]);
	close(seen[1]);
	close(go[0]);
	if (top < 0 || other < 0 || read(ready[0], &b, 1) != 1 || write(go[1], "g", 1) != 1 ||
	    read(seen[0], &r, 1) != 1)
		r = -1;
	close(go[1]);
	if (top > 0)
		waitpid(top, NULL, 0);
	if (other > 0)
		waitpid(other, NULL, 0);
	close(ready[0]);
	close(seen[0]);
	bt_clean_orphans();
	return r < 0 ? -1 : r - '0';
}

/*
 * A poll watcher's capabilities count only in its own user namespace
 * and the namespaces nested in it: root in a namespace of its own is
 * woken by a slab of a creator in a namespace below (its ids are not the
 * watcher's), not by one in a sibling namespace.
 */
TEST_F(root, poll_follows_user_namespace_nesting)
{
	if (BT_SKIPPED())
		return;
	EXPECT_EQ(1, woken_across_namespaces(true));
	EXPECT_EQ(0, woken_across_namespaces(false));
}

/*
 * A container as root's runtimes make one: a user namespace root made
 * (its owner is 0, as every such container's), ids 0..65535 mapped to
 * @base... (@base -1: only its uid 1000, to 100000: no root of its own),
 * running @fn as its uid 1000 (dumpable); @fn's result is the child's
 * exit status. The child's pid, or -1.
 */
static pid_t root_container(int base, int (*fn)(void *), void *arg)
{
	int up[2], down[2];
	char b = 0;
	pid_t pid;

	if (pipe(up) || pipe(down))
		return -1;
	pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWUSER) || write(up[1], "u", 1) != 1 ||
		    read(down[0], &b, 1) != 1 || b != 'g' || bt_become(U1, U1))
			_exit(90);
		_exit(fn(arg));
	}
	if (pid > 0 && read(up[0], &b, 1) != 1)
		pid = -1;
	if (pid > 0 && (base >= 0 ? map_ids(pid, base, 65536) : map_line(pid, "1000 100000 1\n")))
		pid = -1;
	if (pid > 0 && write(down[1], "g", 1) != 1)
		pid = -1;
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	return pid;
}

/*
 * Polls 2 descriptors (this account's bound), says so on @arg's first
 * pipe, waits for a word on the second.
 */
static int hold_two_watchers(void *arg)
{
	int *p = arg, a = bl_open(O_RDONLY), b = bl_open(O_RDONLY);
	char c;

	if (a < 0 || b < 0 || polled(a, 0) < 0 || polled(b, 0) < 0 || write(p[1], "h", 1) != 1)
		return 70;
	return read(p[2], &c, 1) == 1 ? 0 : 71;
}

/*
 * A container of @base (root_container()) running @fn(@hold): its pid
 * once @fn says on hold[1] that it holds what it takes, -1 if not.
 * hold[0..1] are made here; a word on hold[3] tells it to go.
 */
static pid_t hog_start_with(int base, int (*fn)(void *), int hold[4])
{
	pid_t hog;
	char c;

	if (pipe(hold))
		return -1;
	hog = root_container(base, fn, hold);
	close(hold[1]);		/* a hog that fails: EOF, not a hang */
	if (hog > 0 && read(hold[0], &c, 1) != 1)
		hog = -1;
	close(hold[0]);
	return hog;
}

/* A container of @base holding two watchers (this account's bound). */
static pid_t hog_start(int base, int hold[4])
{
	return hog_start_with(base, hold_two_watchers, hold);
}

/* Tells @hog to go; its exit status, -1 if it did not end well. */
static int hog_end(pid_t hog, int hold[4])
{
	int status;

	if (write(hold[3], "q", 1) != 1 || waitpid(hog, &status, 0) != hog || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Exit status 1 if a descriptor polled here is woken by a slab made here. */
static int woken_by_own_create(void *arg)
{
	struct blamer_create c;
	int fd = bl_open(O_RDONLY), dev = bl_open(O_RDWR);

	(void)arg;
	if (fd < 0 || dev < 0 || polled(fd, 0) < 0 || bl_create(dev, PG, &c))
		return 70;
	return polled(fd, 2000) == 1;
}

/*
 * Root becomes a service that dropped CAP_SYS_RESOURCE: 0, or an exit
 * status that says what failed.
 */
static int drop_sys_resource(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return 72;
	d[0].effective &= ~(1u << CAP_SYS_RESOURCE);
	d[0].permitted &= ~(1u << CAP_SYS_RESOURCE);
	return syscall(SYS_capset, &h, d) ? 73 : 0;
}

static int woken_without_sys_resource(void *arg)
{
	int err = drop_sys_resource();

	return err ? err : woken_by_own_create(arg);
}

/*
 * Containers that root's runtimes make share an owner, root: counted as
 * its account, one container's 2 watchers (the bound here) left every
 * other container, and root's services without CAP_SYS_RESOURCE, never
 * woken. Each counts as the uid its root maps to; a user's own
 * namespaces stay the user's (test watchers_per_user_are_bounded).
 */
TEST_F(root, containers_do_not_share_roots_watchers)
{
	int hold[4], status;
	pid_t hog, other;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_watchers", 2));
	ASSERT_EQ(0, pipe(hold + 2));
	hog = hog_start(100000, hold);
	ASSERT_LT(0, hog);
	other = root_container(200000, woken_by_own_create, NULL);
	ASSERT_LT(0, other);
	ASSERT_EQ(other, waitpid(other, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) TH_LOG("status %#x", status);
	EXPECT_EQ(1, bt_run_as(-1, -1, woken_without_sys_resource, NULL));
	EXPECT_EQ(0, hog_end(hog, hold));
	/* one with no root of its own counts as its user (kuid 100000) */
	hog = hog_start(-1, hold);
	ASSERT_LT(0, hog);
	EXPECT_EQ(1, bt_run_as(-1, -1, woken_without_sys_resource, NULL));
	EXPECT_EQ(0, hog_end(hog, hold));
	close(hold[2]);
	close(hold[3]);
	bt_clean_orphans();
}

/*
 * Makes slabs of a page until its account is full (EDQUOT, one at least),
 * says so on @arg's first pipe, waits for a word on the second.
 */
static int fill_the_account(void *arg)
{
	struct blamer_create c;
	int *p = arg, dev = bl_open(O_RDWR), n = 0, err;
	char b;

	if (dev < 0)
		return 70;
	while (!(err = bl_create(dev, PG, &c)))
		n++;
	if (err != -EDQUOT || !n || write(p[1], "h", 1) != 1)
		return 71;
	return read(p[2], &b, 1) == 1 ? 0 : 72;
}

/* Exit status 0 if a slab of a page could be made, else its errno. */
static int makes_a_slab(void *arg)
{
	struct blamer_create c;
	int dev = bl_open(O_RDWR);

	(void)arg;
	return dev < 0 ? -dev : -bl_create(dev, PG, &c);
}

static int makes_a_slab_without_sys_resource(void *arg)
{
	int err = drop_sys_resource();

	return err ? err : makes_a_slab(arg);
}

/*
 * The bytes too: every container root's runtimes make was charged to
 * root's account, so one that filled max_user_bytes locked every other
 * container, and root's services without CAP_SYS_RESOURCE, out of the
 * device (EDQUOT at their first page). Each is the account of the uid its
 * root maps to, one with no root of its own its user's.
 */
TEST_F(root, containers_do_not_share_roots_bytes)
{
	int hold[4], status;
	pid_t hog, other;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_bytes", 4 * PG));
	ASSERT_EQ(0, pipe(hold + 2));
	hog = hog_start_with(100000, fill_the_account, hold);
	ASSERT_LT(0, hog);
	other = root_container(200000, makes_a_slab, NULL);
	ASSERT_LT(0, other);
	ASSERT_EQ(other, waitpid(other, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) TH_LOG("status %#x", status);
	EXPECT_EQ(0, bt_run_as(-1, -1, makes_a_slab_without_sys_resource, NULL));
	EXPECT_EQ(0, hog_end(hog, hold));
	bt_clean_orphans();
	/* one with no root of its own is its user's (kuid 100000): full */
	hog = hog_start_with(-1, fill_the_account, hold);
	ASSERT_LT(0, hog);
	EXPECT_EQ(0, bt_run_as(-1, -1, makes_a_slab_without_sys_resource, NULL));
	other = root_container(-1, makes_a_slab, NULL);
	ASSERT_LT(0, other);
	ASSERT_EQ(other, waitpid(other, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == EDQUOT)
		TH_LOG("status %#x", status);
	EXPECT_EQ(0, hog_end(hog, hold));
	close(hold[2]);
	close(hold[3]);
	bt_clean_orphans();
}

/* Makes slabs of a page until refused: how many (at most 100). */
static int pages_until_refused(void)
{
	struct blamer_create c;
	int dev = bl_open(O_RDWR), n = 0;

	if (dev < 0)
		return 0;
	while (n < 100 && !bl_create(dev, PG, &c))
		n++;
	return n;	/* the process keeps them while it lives */
}

/*
 * Subordinate uid @i of N (mapped to 100000 + @i): pages until refused,
 * said on @p[1] once made; held until a word on @p[2]. Exit status: how
 * many.
 */
static int subuid_pages(int i, const int *p)
{
	char b;
	int n;

	if (setresgid(i, i, i) || setresuid(i, i, i))
		return 201;
	n = pages_until_refused();
	return write(p[1], "p", 1) == 1 && read(p[2], &b, 1) == 1 ? n : 202;
}

/*
 * In N, made by uid 1000: 8 subordinate uids, all holding their pages
 * at once (an orphan would be evicted by the next); the sum.
 */
static int in_own_namespace(void)
{
	int p[4], i, n = 0, status;
	pid_t kid[8];
	char b;

	if (pipe(p) || pipe(p + 2))
		return 210;
	for (i = 0; i < 8; i++) {
		kid[i] = fork();
		if (!kid[i])
			_exit(subuid_pages(i, p));
	}
	for (i = 0; i < 8; i++)
		if (kid[i] < 0 || read(p[0], &b, 1) != 1)
			return 211;
	for (i = 0; i < 8; i++)
		if (write(p[3], "q", 1) != 1)
			return 212;
	for (i = 0; i < 8; i++) {
		if (waitpid(kid[i], &status, 0) != kid[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) > 100)
			return 213;
		n += WEXITSTATUS(status);
	}
	return n;
}

/*
 * In R, root to root: uid 1000 makes N, whose ids 0..7 root in R maps
 * to her subordinate uids 100000... (a map N's parent must write).
 */
static int in_root_to_root(void)
{
	int up[2], down[2], status;
	pid_t user;
	char b = 0;

	if (pipe(up) || pipe(down))
		return 220;
	user = fork();
	if (!user)
		_exit(bt_become(U1, U1) || unshare(CLONE_NEWUSER) || write(up[1], "n", 1) != 1 ||
		      read(down[0], &b, 1) != 1 ? 221 : in_own_namespace());
	if (user < 0 || read(up[0], &b, 1) != 1 || map_ids(user, 100000, 8) ||
	    write(down[1], "g", 1) != 1 || waitpid(user, &status, 0) != user ||
	    !WIFEXITED(status))
		return 222;
	return WEXITSTATUS(status);
}

/*
 * In a namespace root made that maps root to root (PrivateUsers=full),
 * uid 1000 makes one of her own mapping 8 of her subordinate uids
 * (100000...): each of them, in a process of its own, makes pages until
 * refused. They are all her account's: 4 pages in all. Looking at the
 * outermost namespace alone, which decides nothing, counted each
 * subordinate uid as its own account: 8 x 4 pages.
 */
TEST_F(root, subordinate_uids_in_a_root_to_root_namespace_are_their_users)
{
	int up[2], down[2], status;
	pid_t outer;
	char b = 0;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_bytes", 4 * PG));
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	outer = fork();
	ASSERT_LE(0, outer);
	if (!outer)	/* R, root to root, mapped by this test */
		_exit(unshare(CLONE_NEWUSER) || write(up[1], "r", 1) != 1 ||
		      read(down[0], &b, 1) != 1 ? 200 : in_root_to_root());
	ASSERT_EQ(1, read(up[0], &b, 1));
	ASSERT_EQ(0, map_line(outer, "0 0 4294967295\n"));
	ASSERT_EQ(1, write(down[1], "g", 1));
	ASSERT_EQ(outer, waitpid(outer, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(4, WEXITSTATUS(status));
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	bt_clean_orphans();
}

/*
 * As uid 1000 in the reader group: a watcher, then (after @arg's pipe
 * says the group was revoked and root made a slab) whether it was woken
 * (100) and the events its next listing reports.
 */
static int revoked_reader(void *arg)
{
	struct blamer_list l = { .info_size = sizeof(struct blamer_slab_info) };
	int *p = arg, fd = bl_open(O_RDONLY), woke;
	char c;

	if (fd < 0 || list_clears(fd) < 0 || write(p[1], "r", 1) != 1 || read(p[2], &c, 1) != 1)
		return 90;
	woke = polled(fd, 1000) == 1;
	if (ioctl(fd, BLAMER_IOC_LIST, &l))
		return 91;
	return woke * 100 + (int)(l.events < 99 ? l.events : 99);
}

/*
 * A watcher's snapshot kept the reader group it was in: revoked (the
 * parameter set to -1), its poll() still woke for every user's slabs and
 * its next listing kept the count.
 */
TEST_F(root, a_revoked_reader_group_wakes_no_more)
{
	int p[4], status;
	pid_t w;
	char c;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, pipe(p + 2));
	ASSERT_EQ(0, bl_param_set("reader_gid", U1));
	w = fork();
	ASSERT_LE(0, w);
	if (!w)
		_exit(bt_run_as(U1, U1, revoked_reader, p));
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1));
	ASSERT_EQ(0, bl_param_set("reader_gid", -1));
	bt_orphan(PG, -1, -1);		/* root's: the group may not read it now */
	EXPECT_EQ(1, write(p[3], "g", 1));
	ASSERT_EQ(w, waitpid(w, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(p[0]);
	close(p[2]);
	close(p[3]);
	bt_clean_orphans();
}

#define AIO_PENDING 6000

static aio_context_t aio;
static int aio_contend, aio_quit;

/*
 * Holds the aio context's lock (io_cancel() of nothing, over thousands
 * of pending polls) while told: a poll's wakeup must then complete it
 * from a kernel worker (aio_poll_complete_work()).
 */
static void *aio_contender(void *arg)
{
	struct iocb none = { 0 };
	struct io_event ev;

	(void)arg;
	while (!__atomic_load_n(&aio_quit, __ATOMIC_ACQUIRE))
		if (__atomic_load_n(&aio_contend, __ATOMIC_ACQUIRE))
			syscall(SYS_io_cancel, aio, &none, &ev);
		else
			usleep(100);
	return NULL;
}

static int aio_poll(int fd, __u64 data)
{
	struct iocb cb = { .aio_lio_opcode = IOCB_CMD_POLL, .aio_fildes = (__u32)fd,
			   .aio_buf = POLLIN, .aio_data = data }, *p = &cb;

	return syscall(SYS_io_submit, aio, 1, &p) == 1 ? 0 : -1;
}

/* Whether the poll of @data completed within @ms. */
static int aio_done(__u64 data, int ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	struct io_event ev[64];
	long n, i;
	int done = 0;

	while ((n = syscall(SYS_io_getevents, aio, 1, 64, ev, &t)) > 0) {
		for (i = 0; i < n; i++)
			done |= ev[i].data == data;
		t.tv_sec = 0;
		t.tv_nsec = 20 * 1000000L;
	}
	return done;
}

/*
 * As uid 1000: an aio poll of a watcher, then a slab of its own (an
 * event it counts), with the context's lock held meanwhile so that the
 * poll is completed by a kernel worker, 20 times. Exit status: how many
 * polls stayed pending (the worker polled as an asker, with the kernel's
 * credentials: the count reset, and the descriptor watching as root).
 */
static int aio_polls(void *arg)
{
	int p[2], fd = bl_open(O_RDONLY), dev = bl_open(O_RDWR), i, pending = 0;
	pthread_t t;

	(void)arg;
	if (fd < 0 || dev < 0 || pipe(p) || syscall(SYS_io_setup, AIO_PENDING + 64, &aio))
		return 200;
	for (i = 0; i < AIO_PENDING; i++)
		if (aio_poll(p[0], 1000000 + i))
			return 201;
	if (pthread_create(&t, NULL, aio_contender, NULL))
		return 202;
	for (i = 0; i < 20; i++) {
		struct blamer_create c;

		list_bare(fd);
		if (aio_poll(fd, i))
			return 203;
		__atomic_store_n(&aio_contend, 1, __ATOMIC_RELEASE);
		usleep(2000);
		if (bl_create(dev, PG, &c))
			return 204;
		bl_release(dev, c.id);
		close(c.fd);
		usleep(20000);
		__atomic_store_n(&aio_contend, 0, __ATOMIC_RELEASE);
		pending += !aio_done(i, 500);
	}
	__atomic_store_n(&aio_quit, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	return pending;
}

/*
 * aio's IOCB_CMD_POLL completes a poll whose wakeup found its context
 * busy from a kernel worker, whose credentials are the kernel's: a poll
 * there took a snapshot as root, and the user's descriptor then counted
 * every user's events, against root's account (no bound: the worker has
 * CAP_SYS_RESOURCE). A kernel thread now only reports the last asker's.
 */
TEST_F(root, aio_poll_completion_is_nobodys_asker)
{
	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_watchers", 1));
	EXPECT_EQ(0, bt_run_as(U1, U1, aio_polls, NULL));
	bt_clean_orphans();
}

int main(int argc, char **argv)
{
	return bt_main(argc, argv);
}
