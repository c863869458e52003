// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/blamer selftests: ownership follows the creating process. A
 * descriptor inherited across fork() or exec, or passed over a socket,
 * gives neither write access nor the creator's identity; the creator may
 * release its own live slabs; after its death, or its exec, nobody
 * writes its slabs, and whoever drops the last reference to its files
 * adds nothing.
 */
#include <setjmp.h>
#include <sys/socket.h>

#include "blamer_test.h"

/* What another process can do with the creator's descriptors. */
static int probe_fds(int dev, int sfd, __u64 id)
{
	struct blamer_create c;
	int err;

	if (bl_map(sfd, PG, PROT_READ | PROT_WRITE) || errno != EPERM)
		return 10;
	/* Not even read-only: the writable file is the creator's. */
	if (bl_map(sfd, PG, PROT_READ) || errno != EPERM)
		return 11;
	/* No identity: it cannot create through the creator's file. */
	if (bl_create(dev, PG, &c) != -EPERM)
		return 12;
	/* Nor release the creator's live slab. */
	err = bl_release(dev, id);
	if (err != -EBUSY && err != -ENOENT)
		return 13;
	return 0;
}

struct inherit_arg {
	int dev;
	int sfd;
	__u64 id;
};

static int inherited_child(void *arg)
{
	struct inherit_arg *a = arg;

	return probe_fds(a->dev, a->sfd, a->id);
}

/* A forked child, even one that keeps root's uid, gets nothing. */
TEST(inherited_descriptors_give_nothing)
{
	struct blamer_slab_info info;
	struct blamer_create c;
	struct inherit_arg a;
	int dev = bl_open(O_RDWR);
	char *p;

	ASSERT_LE(0, dev);
	ASSERT_EQ(0, bl_create(dev, PG, &c));
	p = bl_map(c.fd, PG, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	p[0] = 'c';
	a.dev = dev;
	a.sfd = c.fd;
	a.id = c.id;
	EXPECT_EQ(0, bt_run_as(-1, -1, inherited_child, &a));
	if (!geteuid())	/* a worker that dropped to nobody */
		EXPECT_EQ(0, bt_run_as(65534, 65534, inherited_child, &a));
	EXPECT_EQ('c', p[0]);
	ASSERT_EQ(0, bt_facts(c.id, &info));
	EXPECT_EQ(getpid(), info.pid);	/* the facts name the creator */
	EXPECT_EQ(BLAMER_SLAB_LIVE, info.state);
	munmap(p, PG);
	close(c.fd);
	close(dev);
}

static int send_fds(int sock, int *fds, int n)
{
	char cbuf[CMSG_SPACE(2 * sizeof(int))] = { 0 }, b = 'f';
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = CMSG_SPACE(n * sizeof(int)),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fds(int sock, int *fds, int n)
{
	char cbuf[CMSG_SPACE(2 * sizeof(int))], b;
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;

	if (recvmsg(sock, &m, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&m);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(fds, CMSG_DATA(cm), n * sizeof(int));
	return 0;
}

/*
 * A process that existed before the slab (not a child of its creator)
 * receives its descriptors over a Unix socket: still nothing.
 */
TEST(passed_descriptors_give_nothing)
{
	struct blamer_create c;
	int sv[2], dev, status, fds[2];
	__u64 id;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(sv[0]);
		if (!geteuid() && bt_become(65534, 65534))
			_exit(20);
		if (read(sv[1], &id, sizeof(id)) != sizeof(id) ||
		    recv_fds(sv[1], fds, 2))
			_exit(21);
		_exit(probe_fds(fds[0], fds[1], id));
	}
	close(sv[1]);
	dev = bl_open(O_RDWR);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, bl_create(dev, PG, &c));
	fds[0] = dev;
	fds[1] = c.fd;
	ASSERT_EQ(sizeof(c.id), write(sv[0], &c.id, sizeof(c.id)));
	ASSERT_EQ(0, send_fds(sv[0], fds, 2));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(c.fd);
	close(dev);
	close(sv[0]);
}

/*
 * Have the Unix garbage collector free the socket cycles nobody holds:
 * it runs when a socket is released while descriptors are in flight
 * (from this task on 6.1, from a workqueue on 6.12).
 */
static void unix_gc_run(void)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv))
		return;
	close(sv[0]);
	close(sv[1]);
	usleep(200000);
}

/*
 * The creator leaves its descriptors in flight, in a socket that holds
 * itself, and exits. It is dead: the slab is an orphan with its status
 * at once, although its files live on. They are released later by the
 * Unix garbage collector, in another task's context (a kworker, or this
 * process): nothing about that task may become a fact of the slab, and
 * the pages go (and stop being charged) then.
 */
TEST(descriptors_in_flight_at_exit)
{
	struct blamer_slab_info before, after;
	struct blamer_status st0, st;
	int up[2], status, fd = bl_open(O_RDONLY), i;
	__u64 id;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_status(fd, &st0));
	ASSERT_EQ(0, pipe(up));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct blamer_create c;
		int dev = bl_open(O_RDWR), sv[2], fds[2];

		if (dev < 0 || bl_create(dev, PG, &c) ||
		    socketpair(AF_UNIX, SOCK_DGRAM, 0, sv))
			_exit(1);
		fds[0] = dev;
		fds[1] = c.fd;
		if (send_fds(sv[0], fds, 2) || send_fds(sv[0], sv, 2))
			_exit(1);
		close(dev);
		close(c.fd);
		close(sv[0]);
		close(sv[1]);
		if (write(up[1], &c.id, sizeof(c.id)) != sizeof(c.id))
			_exit(1);
		_exit(6);
	}
	close(up[1]);
	ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
	close(up[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(6, WEXITSTATUS(status));
	ASSERT_EQ(0, bt_facts(id, &before));
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, before.state);
	EXPECT_TRUE(before.flags & BLAMER_SLAB_EXITED);
	EXPECT_EQ(6, before.exit_code);
	EXPECT_EQ(pid, before.pid);
	unix_gc_run();
	ASSERT_EQ(0, bt_facts(id, &after));
	EXPECT_EQ(0, memcmp(&before, &after, sizeof(before)));
	EXPECT_EQ(0, bl_release(fd, id));
	/*
	 * The collector really dropped the files: the pages are freed. The
	 * last fput() may be deferred to a work queue: allow 10 s.
	 */
	for (i = 0; i < 50; i++) {
		ASSERT_EQ(0, bl_status(fd, &st));
		if (st.user_bytes == st0.user_bytes)
			break;
		unix_gc_run();
	}
	EXPECT_EQ(st0.user_bytes, st.user_bytes);
	close(fd);
}

/* Read the one line a helper prints. */
static void read_line(int fd, char *buf, size_t len)
{
	ssize_t n = read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

/*
 * execve() ends the program that created the slabs: the new program in
 * the same process, handed the descriptors, can neither map the slab
 * writable nor create through the old /dev/blamer file.
 */
TEST(exec_ends_write_access)
{
	const char *ctl = bt_slabctl();
	char arg[16], out[64];
	int up[2], dev, status;
	struct blamer_create c;
	pid_t pid;

	if (!ctl)
		SKIP(return, "blamer_slabctl not found (BLAMER_SLABCTL)");
	for (int round = 0; round < 2; round++) {
		ASSERT_EQ(0, pipe(up));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			dev = bl_open(O_RDWR);
			if (dev < 0 || bl_create(dev, PG, &c))
				_exit(1);
			/* Keep both across exec. */
			fcntl(dev, F_SETFD, 0);
			fcntl(c.fd, F_SETFD, 0);
			dup2(up[1], 1);
			snprintf(arg, sizeof(arg), "%d", round ? dev : c.fd);
			execl(ctl, "blamer_slabctl", round ? "createfd" : "mapfd",
			      arg, (char *)NULL);
			_exit(2);
		}
		close(up[1]);
		read_line(up[0], out, sizeof(out));
		close(up[0]);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_STREQ("EPERM", out) TH_LOG("round %d", round);
	}
}

/* The creator frees its own live slab; others may not. */
TEST(creator_releases_its_live_slab)
{
	struct blamer_slab_info info;
	struct blamer_status st, st2;
	struct bt_holder h;
	struct blamer_create c;
	int dev = bl_open(O_RDWR);
	char *p;

	ASSERT_LE(0, dev);
	bt_clean_orphans();
	ASSERT_EQ(0, bl_status(dev, &st));
	ASSERT_EQ(0, bl_create(dev, 2 * PG, &c));
	p = bl_map(c.fd, 2 * PG, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(0, bl_release(dev, c.id));
	EXPECT_EQ(-ENOENT, bt_facts(c.id, &info));
	p[0] = 'k';	/* the mapping still writes its pages */
	EXPECT_EQ('k', p[0]);
	/* Charged until the pages go: munmap and close. */
	ASSERT_EQ(0, bl_status(dev, &st2));
	EXPECT_EQ(st.user_bytes + 2 * PG, st2.user_bytes);
	EXPECT_EQ(st.user_slabs, st2.user_slabs);
	munmap(p, 2 * PG);
	close(c.fd);
	ASSERT_EQ(0, bl_status(dev, &st2));
	EXPECT_EQ(st.user_bytes, st2.user_bytes);

	/* Another process of the same user: the slab is busy, not its own. */
	ASSERT_EQ(0, bt_holder_start(&h, PG, -1, -1, 0, 0, NULL));
	EXPECT_EQ(-EBUSY, bl_release(dev, h.id));
	bt_holder_finish(&h);
	EXPECT_EQ(0, bl_release(dev, h.id));	/* an orphan now */
	close(dev);
}

/* A child creates through a descriptor of its own: its own slab. */
TEST(child_creates_its_own)
{
	struct blamer_slab_info info;
	int up[2], status;
	__u64 id;
	pid_t pid;

	ASSERT_EQ(0, pipe(up));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct blamer_create c;
		int dev = bl_open(O_RDWR);

		if (dev < 0 || bl_create(dev, PG, &c))
			_exit(1);
		if (write(up[1], &c.id, sizeof(c.id)) != sizeof(c.id))
			_exit(1);
		_exit(4);
	}
	ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, bt_facts(id, &info));
	EXPECT_EQ(pid, info.pid);
	EXPECT_EQ(4, info.exit_code);
	close(up[0]);
	close(up[1]);
}

/* --------------------------- a CLONE_VM child outliving the creator */

static sigjmp_buf bus_env;
static char *shared_map;
static size_t poke_off;
static int go_pipe[2], result_pipe[2];

static void on_sigbus(int sig)
{
	siglongjmp(bus_env, sig);
}

/* Runs in the creator's address space; writes after the creator died. */
static int vm_child(void *arg)
{
	char b, r;

	(void)arg;
	if (read(go_pipe[0], &b, 1) != 1)
		_exit(1);
	signal(SIGBUS, on_sigbus);
	if (sigsetjmp(bus_env, 1)) {
		r = 'S';
	} else {
		bl_poke(shared_map + poke_off, 'w');
		r = 'W';
	}
	if (write(result_pipe[1], &r, 1) != 1)
		_exit(1);
	_exit(0);
}

/* fork_creator()'s creator execs this instead of releasing, if set. */
static const char *creator_exec;

/*
 * Forks the creator: it makes a slab of @pages pages, maps it writable
 * at shared_map (and writes its first page if @touch), starts @fn in a
 * clone(CLONE_VM) process sharing that mapping, sends the slab's ID on
 * @up and waits to be killed. If @rel is a descriptor, it first waits
 * for a byte on it, releases the slab (keeping its mapping) and sends
 * a byte on @up; or, if creator_exec is set, execs that program with
 * the argument "hold" and "4096" (its output on @up). Returns its pid,
 * or -1.
 */
static pid_t fork_creator(size_t pages, bool touch, int (*fn)(void *), int up,
			  int rel)
{
	static long stack[8192];
	struct blamer_create c;
	pid_t creator = fork();
	int dev;
	char b;

	if (creator)
		return creator;
	dev = bl_open(O_RDWR);
	if (dev < 0 || bl_create(dev, pages * PG, &c))
		_exit(1);
	shared_map = bl_map(c.fd, pages * PG, PROT_READ | PROT_WRITE);
	if (!shared_map)
		_exit(1);
	if (touch)
		shared_map[0] = 'c';
	if (clone(fn, (char *)stack + sizeof(stack), CLONE_VM | SIGCHLD, NULL) < 0)
		_exit(1);
	if (write(up, &c.id, sizeof(c.id)) != sizeof(c.id))
		_exit(1);
	if (rel >= 0 && creator_exec) {
		if (read(rel, &b, 1) != 1 || dup2(up, 1) != 1)
			_exit(1);
		execl(creator_exec, "blamer_slabctl", "hold", "4096", (char *)NULL);
		_exit(1);
	}
	if (rel >= 0 && (read(rel, &b, 1) != 1 || bl_release(dev, c.id) ||
			 write(up, "r", 1) != 1))
		_exit(1);
	for (;;)
		pause();
}

/*
 * The creator shares its address space with a process that is not one
 * of its threads (clone(CLONE_VM), as vfork() does) and is killed. The
 * slab is an orphan: that process may still read it, but no longer
 * write, even through the creator's own writable mapping: neither a page
 * the creator wrote (@off 0) nor one nobody touched yet, which the write
 * fault allocates (@off PG).
 *
 * With @released, the creator releases the slab before it dies, keeping
 * its writable mapping: the slab has left the table, but the death still
 * revokes its writers (it once left the owner record untracked, and the
 * CLONE_VM process kept writing), and a reader that opened the slab
 * before the release sees nothing written after the death.
 */
static void no_writes_after_death(struct __test_metadata *_metadata,
				  size_t off, bool released)
{
	int up[2], rel[2], status, dev = bl_open(O_RDONLY), sfd = -1;
	struct blamer_slab_info info;
	pid_t creator, child;
	char r = 0, *ro = NULL;
	__u64 id;

	ASSERT_LE(0, dev);
	poke_off = off;
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(rel));
	ASSERT_EQ(0, pipe(go_pipe));
	ASSERT_EQ(0, pipe(result_pipe));
	creator = fork_creator(2, true, vm_child, up[1], released ? rel[0] : -1);
	ASSERT_LE(0, creator);
	ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
	if (released) {
		sfd = bl_open_slab(dev, id);
		ASSERT_LE(0, sfd);
		ro = bl_map(sfd, PG, PROT_READ);
		ASSERT_NE(NULL, ro);
		ASSERT_EQ(1, write(rel[1], "r", 1));
		ASSERT_EQ(1, read(up[0], &r, 1));
		EXPECT_EQ(-ENOENT, bl_open_slab(dev, id));
	}
	kill(creator, SIGKILL);
	ASSERT_EQ(creator, waitpid(creator, &status, 0));
	/* A listing after the death: the reaper is done. */
	if (released) {
		EXPECT_EQ(-ENOENT, bt_facts(id, &info));
	} else {
		ASSERT_EQ(0, bt_facts(id, &info));
		EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
		EXPECT_EQ(SIGKILL, info.exit_signal);
	}
	ASSERT_EQ(1, write(go_pipe[1], "g", 1));
	ASSERT_EQ(1, read(result_pipe[0], &r, 1));
	EXPECT_EQ('S', r);	/* SIGBUS, not a write */
	if (ro)
		EXPECT_EQ('c', bl_peek(ro));
	child = waitpid(-1, &status, 0);
	EXPECT_LT(0, child);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	if (ro)
		munmap(ro, PG);
	if (sfd >= 0)
		close(sfd);
	close(dev);
	close(up[0]);
	close(up[1]);
	close(rel[0]);
	close(rel[1]);
	close(go_pipe[0]);
	close(go_pipe[1]);
	close(result_pipe[0]);
	close(result_pipe[1]);
}

TEST(no_writes_after_the_creator_died)
{
	no_writes_after_death(_metadata, 0, false);
}

TEST(no_writes_to_a_hole_after_the_creator_died)
{
	no_writes_after_death(_metadata, PG, false);
}

TEST(no_writes_to_a_released_slab_after_the_creator_died)
{
	no_writes_after_death(_metadata, 0, true);
}

/*
 * The creator execs while a clone(CLONE_VM) process keeps the address
 * space the slab was made in: that process would write on in the name of
 * a process now running another program (as a vfork() child's parent
 * would). The exec revokes those writers, as a death does, neither a page
 * the creator wrote nor a hole being writable; the slab stays the living
 * process's, and the new program creates and writes a slab of its own.
 */
TEST(no_writes_after_the_creator_exec_d)
{
	int up[2], rel[2], status, got, dev = bl_open(O_RDONLY);
	struct blamer_slab_info info;
	char r = 0, out[64];
	pid_t creator;
	__u64 id;

	creator_exec = bt_slabctl();
	if (!creator_exec)
		SKIP(return, "blamer_slabctl not found (BLAMER_SLABCTL)");
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(rel));
	for (int hole = 0; hole < 2; hole++) {
		ASSERT_EQ(0, pipe(go_pipe));
		ASSERT_EQ(0, pipe(result_pipe));
		poke_off = hole ? PG : 0;
		creator = fork_creator(2, true, vm_child, up[1], rel[0]);
		ASSERT_LE(0, creator);
		ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
		ASSERT_EQ(1, write(rel[1], "x", 1));
		/* the new program's slab: made and written, so its ID printed */
		got = read(up[0], out, sizeof(out) - 1);
		ASSERT_LT(0, got);
		out[got] = 0;
		EXPECT_LT(0, atoi(out)) TH_LOG("the new program said '%s'", out);
		/* a listing: the reaper is done with the exec */
		ASSERT_EQ(0, bt_facts(id, &info));
		EXPECT_EQ(BLAMER_SLAB_LIVE, info.state);
		ASSERT_EQ(1, write(go_pipe[1], "g", 1));
		ASSERT_EQ(1, read(result_pipe[0], &r, 1));
		EXPECT_EQ('S', r) TH_LOG("offset %zu", poke_off);
		kill(creator, SIGKILL);
		ASSERT_EQ(creator, waitpid(creator, &status, 0));
		EXPECT_LT(0, waitpid(-1, &status, 0));	/* the CLONE_VM one */
		close(go_pipe[0]);
		close(go_pipe[1]);
		close(result_pipe[0]);
		close(result_pipe[1]);
	}
	creator_exec = NULL;
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	bt_clean_orphans();
	close(dev);
	close(up[0]);
	close(up[1]);
	close(rel[0]);
	close(rel[1]);
}

#define NSEAL 256

/* The CLONE_VM process: writes until a write is refused (SIGBUS kills it). */
static int seal_writer(void *arg)
{
	unsigned long *ctr = arg;

	signal(SIGBUS, SIG_DFL);
	signal(SIGSEGV, SIG_DFL);
	for (;;)
		__atomic_store_n(ctr, __atomic_load_n(ctr, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
	return 0;
}

/*
 * An owner of NSEAL slabs, the last of which a clone(CLONE_VM) process
 * writes without pause; sends that slab's ID on @up, exits when @die
 * says so. The reaper revokes the slabs' writers one by one, the last
 * one last.
 */
static void seal_owner(int up, int die)
{
	static long stack[8192];
	unsigned long *last = NULL;
	struct blamer_create c;
	int dev = bl_open(O_RDWR), i;
	char b;

	for (i = 0; i < NSEAL; i++) {
		if (dev < 0 || bl_create(dev, PG, &c))
			_exit(80);
		last = bl_map(c.fd, PG, PROT_READ | PROT_WRITE);
		if (!last)
			_exit(81);
		__atomic_store_n(last, 1, __ATOMIC_RELAXED);
		close(c.fd);
	}
	if (clone(seal_writer, (char *)stack + sizeof(stack), CLONE_VM | SIGCHLD, last) < 0 ||
	    write(up, &c.id, sizeof(c.id)) != sizeof(c.id))
		_exit(82);
	if (read(die, &b, 1) < 0)
		_exit(83);
	_exit(0);
}

/*
 * "Once a listing shows the orphan, nothing writes it": a listing that
 * began before the owner died and reaches its slab after is not the
 * reaper's (which revokes the writers) to wait for. Listings race the
 * death of an owner whose last slab a CLONE_VM process writes: when
 * one first shows that slab as an orphan, its counter must stand still.
 */
TEST(a_listed_orphan_is_never_written)
{
	int round, orphans = 0, dev = bl_open(O_RDONLY);
	struct blamer_slab_info info;

	ASSERT_LE(0, dev);
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	for (round = 0; round < 10; round++) {
		unsigned long *ro, c1, c2;
		int up[2], die[2], sfd, tries;
		pid_t owner;
		__u64 id;

		ASSERT_EQ(0, pipe(up));
		ASSERT_EQ(0, pipe(die));
		owner = fork();
		ASSERT_LE(0, owner);
		if (!owner) {
			close(up[0]);
			close(die[1]);
			seal_owner(up[1], die[0]);
		}
		close(up[1]);
		close(die[0]);
		ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
		sfd = bl_open_slab(dev, id);
		ASSERT_LE(0, sfd);
		ro = bl_map(sfd, PG, PROT_READ);
		ASSERT_NE(NULL, ro);
		close(sfd);
		close(die[1]);		/* the owner exits */
		for (tries = 0; tries < 100000; tries++)
			if (!bl_find(dev, id, &info) && info.state == BLAMER_SLAB_ORPHAN)
				break;
		ASSERT_EQ(BLAMER_SLAB_ORPHAN, info.state);
		c1 = __atomic_load_n(ro, __ATOMIC_RELAXED);
		usleep(20000);
		c2 = __atomic_load_n(ro, __ATOMIC_RELAXED);
		EXPECT_EQ(c1, c2) TH_LOG("round %d: listed as an orphan, then written %lu times",
					 round, c2 - c1);
		orphans++;
		munmap(ro, PG);
		close(up[0]);
		while (waitpid(-1, NULL, 0) > 0)	/* the owner, its CLONE_VM child */
			;
		bt_clean_orphans();
	}
	EXPECT_EQ(10, orphans);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	close(dev);
}

/*
 * A vfork() child runs in its parent's address space: a slab it made
 * would be written by the parent, in the child's name, while the child
 * lives on after exec. It cannot create one (its own /dev/blamer
 * descriptor or not); after its exec the new program can.
 */
TEST(vfork_child_cannot_create)
{
	static int err_create, err_open;	/* the child writes them */
	const char *ctl = bt_slabctl();
	struct blamer_create c;
	int status, up[2];
	char out[64];
	pid_t pid;

	__atomic_store_n(&err_create, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&err_open, 1, __ATOMIC_RELAXED);
	pid = vfork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int dev = open(BL_DEVICE, O_RDWR | O_CLOEXEC), e = 0;

		__atomic_store_n(&err_open, dev < 0 ? errno : 0,
				 __ATOMIC_RELAXED);
		if (dev >= 0) {
			memset(&c, 0, sizeof(c));
			c.length = PG;
			if (ioctl(dev, BLAMER_IOC_CREATE, &c))
				e = errno;
			__atomic_store_n(&err_create, e, __ATOMIC_RELAXED);
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, __atomic_load_n(&err_open, __ATOMIC_RELAXED));
	EXPECT_EQ(EPERM, __atomic_load_n(&err_create, __ATOMIC_RELAXED));

	if (!ctl)
		SKIP(return, "blamer_slabctl not found (BLAMER_SLABCTL)");
	ASSERT_EQ(0, pipe(up));
	pid = vfork();
	ASSERT_LE(0, pid);
	if (!pid) {
		dup2(up[1], 1);
		execl(ctl, "blamer_slabctl", "create", "4096", (char *)NULL);
		_exit(2);
	}
	close(up[1]);
	read_line(up[0], out, sizeof(out));
	close(up[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_STREQ("ok", out);
}

/*
 * The same while the clone(CLONE_VM) process is busy faulting in holes
 * through the creator's mapping as the creator dies (killed when a
 * sixteenth of the pages are written): pages published
 * while the reaper revokes the writers. Once the orphan is listed (the
 * reaper is done), no page is writable any more, neither one it wrote
 * while the creator lived, nor one it published during the revocation,
 * nor a hole.
 */
#define RACE_PAGES 1024
/* In memory, not registers: siglongjmp() comes back from a SIGBUS. */
static size_t race_idx;
static int race_bus, race_wrote, mid_pipe[2];

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static int vm_sweeper(void *arg)
{
	int wrote;
	char b;

	(void)arg;
	signal(SIGBUS, on_sigbus);
	if (read(go_pipe[0], &b, 1) != 1)
		_exit(1);
	for (STORE(race_idx, 0); LOAD(race_idx) < RACE_PAGES;
	     STORE(race_idx, LOAD(race_idx) + 1)) {
		if (sigsetjmp(bus_env, 1)) {
			STORE(race_bus, LOAD(race_bus) + 1);
			continue;
		}
		/* A sixteenth in: the parent kills the creator now. */
		if (LOAD(race_idx) == RACE_PAGES / 16 &&
		    write(mid_pipe[1], "m", 1) != 1)
			_exit(1);
		bl_poke(shared_map + LOAD(race_idx) * PG, 'w');
	}
	/* The parent saw the orphan: try every page again. */
	if (read(go_pipe[0], &b, 1) != 1)
		_exit(1);
	for (STORE(race_idx, 0); LOAD(race_idx) < RACE_PAGES;
	     STORE(race_idx, LOAD(race_idx) + 1)) {
		if (sigsetjmp(bus_env, 1))
			continue;
		bl_poke(shared_map + LOAD(race_idx) * PG, 'v');
		STORE(race_wrote, LOAD(race_wrote) + 1);
	}
	wrote = LOAD(race_wrote);
	b = wrote > 100 ? 100 : wrote;
	if (write(result_pipe[1], &b, 1) != 1)
		_exit(1);
	wrote = LOAD(race_bus);
	if (write(result_pipe[1], &wrote, sizeof(wrote)) != sizeof(wrote))
		_exit(1);
	_exit(0);
}

TEST(no_writes_after_the_creator_died_faulting_holes)
{
	struct blamer_slab_info info;
	int up[2], status;
	__u64 id;
	pid_t creator, child;
	char wrote = -1;
	int bus = -1;

	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(go_pipe));
	ASSERT_EQ(0, pipe(result_pipe));
	ASSERT_EQ(0, pipe(mid_pipe));
	creator = fork_creator(RACE_PAGES, false, vm_sweeper, up[1], -1);
	ASSERT_LE(0, creator);
	ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
	/* The sweep starts, and the creator dies during it. */
	ASSERT_EQ(1, write(go_pipe[1], "g", 1));
	ASSERT_EQ(1, read(mid_pipe[0], &wrote, 1));
	kill(creator, SIGKILL);
	ASSERT_EQ(creator, waitpid(creator, &status, 0));
	ASSERT_EQ(0, bt_facts(id, &info));
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
	ASSERT_EQ(1, write(go_pipe[1], "g", 1));
	ASSERT_EQ(1, read(result_pipe[0], &wrote, 1));
	ASSERT_EQ(sizeof(bus), read(result_pipe[0], &bus, sizeof(bus)));
	EXPECT_EQ(0, wrote);
	printf("# of %d first writes around the death, %d wrote and %d failed (SIGBUS)\n",
	       RACE_PAGES, RACE_PAGES - bus, bus);
	fflush(stdout);
	child = waitpid(-1, &status, 0);
	EXPECT_LT(0, child);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	close(up[0]);
	close(up[1]);
	close(go_pipe[0]);
	close(go_pipe[1]);
	close(result_pipe[0]);
	close(result_pipe[1]);
	close(mid_pipe[0]);
	close(mid_pipe[1]);
}

int main(int argc, char **argv)
{
	return bt_main(argc, argv);
}
