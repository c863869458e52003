// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/blamer selftests: quotas. Slabs are charged to their creator's
 * user until their pages are really freed, orphans and pages a pipe
 * holds included; a user's own oldest orphans make room for it, never
 * another user's, nor those of elevated creators it ran (a setuid
 * program's), and a container's (another pid namespace) never its
 * host's; no user can lock root out, nor escape its quota through
 * subordinate uids; status counts only what the caller's namespace sees.
 */
#include <sys/uio.h>

#include "blamer_test.h"

#define U1 1000
#define U2 1001

/* The status of @uid's account. */
static struct blamer_status status_of(int uid)
{
	struct blamer_status st = { .flags = ~0U };

	if (bt_status_as(uid, uid, &st))
		st.flags = ~0U;
	return st;
}

static int exists(__u64 id)
{
	struct blamer_slab_info info;

	return bt_facts(id, &info) == 0;
}

FIXTURE(quota) {
	struct bt_params saved;
	int dev;
};

FIXTURE_SETUP(quota)
{
	if (geteuid())
		SKIP(return, "needs root");
	bt_params_save(&self->saved);
	ASSERT_TRUE(self->saved.ok);
	bt_clean_orphans();
	self->dev = bl_open(O_RDWR);
	ASSERT_LE(0, self->dev);
}

FIXTURE_TEARDOWN(quota)
{
	if (BT_SKIPPED())
		return;
	EXPECT_EQ(0, bt_params_restore(&self->saved));
	bt_clean_orphans();
	close(self->dev);
}

/* An orphan stays charged to its creator, in bytes and in count. */
TEST_F(quota, orphans_stay_charged)
{
	struct blamer_status a, b, c;
	struct bt_holder h;

	if (BT_SKIPPED())
		return;
	a = status_of(U1);
	ASSERT_NE(~0U, a.flags);
	ASSERT_EQ(0, bt_holder_start(&h, 4 * PG, U1, U1, 0, 0, NULL));
	b = status_of(U1);
	EXPECT_EQ(a.user_bytes + 4 * PG, b.user_bytes);
	EXPECT_EQ(a.user_slabs + 1, b.user_slabs);
	bt_holder_finish(&h);
	c = status_of(U1);
	EXPECT_EQ(b.user_bytes, c.user_bytes);
	EXPECT_EQ(b.user_slabs, c.user_slabs);
	EXPECT_EQ(a.user_orphans + 1, c.user_orphans);
	ASSERT_EQ(0, bl_release(self->dev, h.id));
	c = status_of(U1);
	EXPECT_EQ(a.user_bytes, c.user_bytes);
	EXPECT_EQ(a.user_orphans, c.user_orphans);
}

/*
 * The attack on global retention: uid 1000 makes many orphans. Above its
 * own limit its own oldest go; uid 1001's orphan stays.
 */
TEST_F(quota, orphan_limit_evicts_own_oldest_only)
{
	__u64 victim, ids[10];
	struct blamer_status st;
	int i;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_orphans", 4));
	victim = bt_orphan(PG, U2, U2);
	ASSERT_NE(0, victim);
	for (i = 0; i < 10; i++) {
		ids[i] = bt_orphan(PG, U1, U1);
		ASSERT_NE(0, ids[i]);
	}
	EXPECT_EQ(1, exists(victim));
	for (i = 0; i < 10; i++)
		EXPECT_EQ(i >= 6, exists(ids[i])) TH_LOG("orphan %d", i);
	st = status_of(U1);
	EXPECT_EQ(4, st.user_orphans);
	st = status_of(U2);
	EXPECT_EQ(1, st.user_orphans);
}

/* Over its byte quota, a create evicts the creator's own oldest orphans. */
TEST_F(quota, create_evicts_own_oldest_orphans)
{
	__u64 a, b, other;
	struct blamer_status st;

	if (BT_SKIPPED())
		return;
	st = status_of(U1);
	ASSERT_EQ(0, st.user_slabs);
	ASSERT_EQ(0, bl_param_set("max_user_bytes", 8 * PG));
	a = bt_orphan(4 * PG, U1, U1);
	b = bt_orphan(4 * PG, U1, U1);
	other = bt_orphan(8 * PG, U2, U2);
	ASSERT_NE(0, a);
	ASSERT_NE(0, b);
	ASSERT_NE(0, other);
	ASSERT_NE(0, bt_orphan(2 * PG, U1, U1));
	EXPECT_EQ(0, exists(a));
	EXPECT_EQ(1, exists(b));
	EXPECT_EQ(1, exists(other));
	st = status_of(U1);
	EXPECT_EQ(6 * PG, st.user_bytes);
}

static void not_dumpable(void)
{
	prctl(PR_SET_DUMPABLE, 0);
}

/* A setgid-1001 program run by uid 1000 (from root: no ids given). */
static void setgid_u2(void)
{
	if (setgroups(0, NULL) || setresgid(U1, U2, U2) || setresuid(U1, U1, U1) ||
	    prctl(PR_SET_DUMPABLE, 1))
		_exit(99);
}

/* An orphan of @len bytes whose creator ran @prepare first; its ID or 0. */
static __u64 orphan_of(size_t len, int uid, int gid, void (*prepare)(void))
{
	struct bt_holder h;

	if (bt_holder_start(&h, len, uid, gid, 0, 0, prepare))
		return 0;
	bt_holder_finish(&h);
	return h.id;
}

/*
 * Orphans of elevated creators charged to uid 1000 (one keeping a
 * capability, a setgid program's) are not uid 1000's to evict: neither
 * its own orphans above max_user_orphans (plain or non-dumpable: a kind
 * any process can take would push them out) nor its creates above
 * max_user_bytes push them out, and a create that cannot fit evicts
 * nothing. They push out their own kind only, and above half of
 * max_user_bytes, so they never lock uid 1000 out.
 */
TEST_F(quota, elevated_orphans_are_not_their_users_to_evict)
{
	__u64 cap[3], sg, big, ids[6];
	int i;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_orphans", 2));
	cap[0] = orphan_of(2 * PG, -1, -1, bt_keep_a_capability);
	sg = orphan_of(PG, -1, -1, setgid_u2);
	ASSERT_NE(0, cap[0]);
	ASSERT_NE(0, sg);
	for (i = 0; i < 6; i++) {
		ids[i] = orphan_of(PG, U1, U1, i % 2 ? not_dumpable : NULL);
		ASSERT_NE(0, ids[i]);
	}
	EXPECT_EQ(1, exists(cap[0]));
	EXPECT_EQ(1, exists(sg));
	for (i = 0; i < 6; i++)
		EXPECT_EQ(i >= 4, exists(ids[i])) TH_LOG("orphan %d", i);
	/* 2 + 1 + 1 + 1 pages: a 5-page create evicts the two of its own */
	ASSERT_EQ(0, bl_param_set("max_user_bytes", 8 * PG));
	big = orphan_of(5 * PG, U1, U1, NULL);
	ASSERT_NE(0, big);
	EXPECT_EQ(0, exists(ids[4]));
	EXPECT_EQ(0, exists(ids[5]));
	/* 6 more do not fit even without its own 5: none evicted */
	EXPECT_EQ(0, orphan_of(6 * PG, U1, U1, NULL));
	EXPECT_EQ(1, exists(big));
	EXPECT_EQ(1, exists(cap[0]));
	EXPECT_EQ(1, exists(sg));
	/* its own kind, above half of 8 pages: the oldest goes, not sg */
	ASSERT_EQ(0, bl_release(self->dev, big));
	ASSERT_EQ(0, bl_param_set("max_user_orphans", 8));
	cap[1] = orphan_of(2 * PG, -1, -1, bt_keep_a_capability);
	ASSERT_NE(0, cap[1]);
	EXPECT_EQ(1, exists(cap[0]));
	cap[2] = orphan_of(2 * PG, -1, -1, bt_keep_a_capability);
	ASSERT_NE(0, cap[2]);
	EXPECT_EQ(0, exists(cap[0]));
	EXPECT_EQ(1, exists(cap[1]));
	EXPECT_EQ(1, exists(cap[2]));
	EXPECT_EQ(1, exists(sg));
}

/*
 * Nobody fills the device for everyone: a user is capped below the total
 * (its own orphans recycle), other users still create, and root (with
 * CAP_SYS_RESOURCE) is never locked out even when the total is reached.
 */
TEST_F(quota, no_lockout)
{
	struct blamer_create c;
	struct bt_holder h1, h2;
	int round;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_bytes", 16 * PG));
	ASSERT_EQ(0, bl_param_set("max_total_bytes", 32 * PG));
	/* uid 1000, rounds of 4 x 4 pages that become orphans. */
	for (round = 0; round < 4; round++)
		for (int k = 0; k < 4; k++)
			ASSERT_NE(0, bt_orphan(4 * PG, U1, U1));
	EXPECT_EQ(16 * PG, status_of(U1).user_bytes);
	ASSERT_EQ(0, bt_holder_start(&h2, 16 * PG, U2, U2, 0, 0, NULL));
	/* The total is reached; root still creates. */
	EXPECT_EQ(0, bl_create(self->dev, 4 * PG, &c));
	close(c.fd);
	/* uid 1000 over the total recycles its own orphans, not others'. */
	ASSERT_EQ(0, bt_holder_start(&h1, 4 * PG, U1, U1, 0, 0, NULL));
	bt_holder_finish(&h1);
	EXPECT_EQ(1, exists(h2.id));
	bt_holder_finish(&h2);
}

static int fill_and_hold(void *arg)
{
	int *report = arg;
	struct blamer_create c;
	int dev = bl_open(O_RDWR), rfd, i, err;
	void *maps[8];

	if (dev < 0)
		return 70;
	/* Map through a reader's file, release, close: bytes stay. */
	for (i = 0; i < 4; i++) {
		if (bl_create(dev, 4 * PG, &c))
			return 71;
		rfd = bl_open_slab(dev, c.id);
		maps[i] = bl_map(rfd, 4 * PG, PROT_READ);
		if (rfd < 0 || !maps[i])
			return 72;
		close(rfd);
		close(c.fd);
		if (bl_release(dev, c.id))
			return 73;
	}
	err = bl_create(dev, 4 * PG, &c);
	if (write(report[1], &err, sizeof(err)) != sizeof(err))
		return 74;
	/* Unmapped, the pages are freed and the quota is back. */
	munmap(maps[0], 4 * PG);
	err = bl_create(dev, 4 * PG, &c);
	if (write(report[1], &err, sizeof(err)) != sizeof(err))
		return 75;
	if (!err) {
		close(c.fd);
		bl_release(dev, c.id);
	}
	return 0;
}

/*
 * The attack on the byte limits: map a slab, release it, keep only the
 * mapping. The pages stay charged until they are freed.
 */
TEST_F(quota, charged_until_pages_are_freed)
{
	int report[2], first, second;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_bytes", 16 * PG));
	ASSERT_EQ(0, pipe(report));
	EXPECT_EQ(0, bt_run_as(U1, U1, fill_and_hold, report));
	ASSERT_EQ(sizeof(first), read(report[0], &first, sizeof(first)));
	ASSERT_EQ(sizeof(second), read(report[0], &second, sizeof(second)));
	EXPECT_EQ(-EDQUOT, first);
	EXPECT_EQ(0, second);
	EXPECT_EQ(0, status_of(U1).user_bytes);	/* all freed at exit */
	close(report[0]);
	close(report[1]);
}

/*
 * A user with subordinate uids: a process of uid 1000 in a user
 * namespace of its own, as uid 0 there (uid 100000 outside). Its slabs
 * are charged to uid 1000, so they count against uid 1000's quota.
 */
TEST_F(quota, user_namespace_charges_its_owner)
{
	struct blamer_slab_info info;
	int up[2], down[2], status;
	struct blamer_create c;
	char path[64], b;
	__u64 id;
	pid_t pid;
	FILE *f;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_bytes", 8 * PG));
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int dev;

		if (bt_become(U1, U1) || unshare(CLONE_NEWUSER))
			_exit(80);
		if (write(up[1], "u", 1) != 1 || read(down[0], &b, 1) != 1)
			_exit(81);
		if (setresgid(0, 0, 0) || setresuid(0, 0, 0))
			_exit(82);
		dev = bl_open(O_RDWR);
		if (dev < 0 || bl_create(dev, 8 * PG, &c))
			_exit(83);
		if (write(up[1], &c.id, sizeof(c.id)) != sizeof(c.id))
			_exit(84);
		if (read(down[0], &b, 1) != 1)
			_exit(85);
		_exit(0);
	}
	ASSERT_EQ(1, read(up[0], &b, 1));
	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "0 100000 65536\n");
	ASSERT_EQ(0, fclose(f));
	snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "0 100000 65536\n");
	ASSERT_EQ(0, fclose(f));
	ASSERT_EQ(1, write(down[1], "g", 1));
	ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
	ASSERT_EQ(0, bl_find(self->dev, id, &info));
	EXPECT_EQ(100000, info.uid);
	EXPECT_EQ(8 * PG, status_of(U1).user_bytes);
	/* uid 1000 itself is now at its quota. */
	EXPECT_EQ(0, bt_orphan(PG, U1, U1));
	ASSERT_EQ(1, write(down[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * Run @fn(@arg) as pid 1 of a new pid namespace (as root, in the
 * initial user namespace: a rootful container); its exit status.
 */
static int in_container(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		pid_t inner;

		if (unshare(CLONE_NEWPID))
			_exit(90);
		inner = fork();
		if (inner < 0)
			_exit(91);
		if (!inner)
			_exit(fn(arg));
		if (waitpid(inner, &status, 0) != inner || !WIFEXITED(status))
			_exit(92);
		_exit(WEXITSTATUS(status));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

#define CONTAINER_ORPHANS 5

/* Make CONTAINER_ORPHANS orphans, their IDs to the pipe in @arg. */
static int make_orphans(void *arg)
{
	int out = *(int *)arg;
	__u64 id;

	for (int i = 0; i < CONTAINER_ORPHANS; i++) {
		id = bt_orphan(PG, -1, -1);
		if (!id || write(out, &id, sizeof(id)) != sizeof(id))
			return 1;
	}
	return 0;
}

/*
 * The account of root is shared by the host and a rootful container
 * (same uid, another pid namespace). Orphans are kept per namespace: the
 * container's pile up to the limit of its own, evicting its oldest, and
 * never the host's orphan, which was older than all of them.
 */
TEST_F(quota, container_orphans_never_evict_the_host)
{
	__u64 host, ids[CONTAINER_ORPHANS];
	int p[2], i;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_orphans", 2));
	host = bt_orphan(PG, -1, -1);
	ASSERT_NE(0, host);
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, in_container(make_orphans, &p[1]));
	ASSERT_EQ(sizeof(ids), read(p[0], ids, sizeof(ids)));
	EXPECT_EQ(1, exists(host));
	for (i = 0; i < CONTAINER_ORPHANS; i++)
		EXPECT_EQ(i >= CONTAINER_ORPHANS - 2, exists(ids[i]))
			TH_LOG("container orphan %d", i);
	/* And the host's own limit counts only the host's orphans. */
	ASSERT_NE(0, bt_orphan(PG, -1, -1));
	EXPECT_EQ(1, exists(host));
	ASSERT_NE(0, bt_orphan(PG, -1, -1));
	EXPECT_EQ(0, exists(host));
	EXPECT_EQ(1, exists(ids[CONTAINER_ORPHANS - 1]));
	close(p[0]);
	close(p[1]);
}

/*
 * A namespace's orphans are its own list, made by its first orphan and
 * gone with its last: at a limit of 0 each orphan goes at its owner's
 * death (its list made and freed at once), and a limit lowered at run
 * time evicts the whole excess at the next death.
 */
TEST_F(quota, orphan_limit_zero_and_lowered)
{
	__u64 ids[5];
	int i;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_orphans", 0));
	ids[0] = bt_orphan(PG, U1, U1);
	ASSERT_NE(0, ids[0]);
	EXPECT_EQ(0, exists(ids[0]));
	EXPECT_EQ(0, status_of(U1).user_orphans);
	ASSERT_EQ(0, bl_param_set("max_user_orphans", 4));
	for (i = 0; i < 4; i++) {
		ids[i] = bt_orphan(PG, U1, U1);
		ASSERT_NE(0, ids[i]);
	}
	EXPECT_EQ(4, status_of(U1).user_orphans);
	ASSERT_EQ(0, bl_param_set("max_user_orphans", 1));
	ids[4] = bt_orphan(PG, U1, U1);
	ASSERT_NE(0, ids[4]);
	for (i = 0; i < 5; i++)
		EXPECT_EQ(i == 4, exists(ids[i])) TH_LOG("orphan %d", i);
	EXPECT_EQ(1, status_of(U1).user_orphans);
}

/*
 * Containers come and go: each new pid namespace's orphans are counted
 * from zero (none left over from a namespace that died before, which
 * may have had the same address), and the host's orphan stays.
 */
TEST_F(quota, each_new_container_counts_its_orphans_afresh)
{
	__u64 host, ids[CONTAINER_ORPHANS];
	int p[2], round, i;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_orphans", 2));
	host = bt_orphan(PG, -1, -1);
	ASSERT_NE(0, host);
	ASSERT_EQ(0, pipe(p));
	for (round = 0; round < 4; round++) {
		ASSERT_EQ(0, in_container(make_orphans, &p[1]));
		ASSERT_EQ(sizeof(ids), read(p[0], ids, sizeof(ids)));
		for (i = 0; i < CONTAINER_ORPHANS; i++) {
			EXPECT_EQ(i >= CONTAINER_ORPHANS - 2, exists(ids[i]))
				TH_LOG("round %d, orphan %d", round, i);
			/* the first round's are left to the container's end */
			if (round && i >= CONTAINER_ORPHANS - 2)
				EXPECT_EQ(0, bl_release(self->dev, ids[i]));
		}
	}
	EXPECT_EQ(1, exists(host));
	close(p[0]);
	close(p[1]);
}

/*
 * The byte limit of uid 1000, whose slabs in a container of its own
 * (user and pid namespaces) are charged to it too: over the limit, a
 * create in the container evicts the container's orphans, not the
 * host's older one; a create on the host may evict the container's.
 */
static int container_create(void *arg)
{
	int *p = arg, dev = bl_open(O_RDWR), err;
	struct blamer_create c;
	__u64 own;

	if (dev < 0)
		return 60;
	own = bt_orphan(4 * PG, -1, -1);
	if (!own || write(p[1], &own, sizeof(own)) != sizeof(own))
		return 61;
	/* 4 pages of the host's, 4 of its own: 2 more need room. */
	err = bl_create(dev, 2 * PG, &c);
	if (write(p[1], &err, sizeof(err)) != sizeof(err))
		return 62;
	return 0;
}

static int user_container(void *arg)
{
	int status;
	pid_t inner;

	if (unshare(CLONE_NEWUSER | CLONE_NEWPID))
		return 50;
	inner = fork();
	if (inner < 0)
		return 51;
	if (!inner)
		_exit(container_create(arg));
	if (waitpid(inner, &status, 0) != inner || !WIFEXITED(status))
		return 52;
	return WEXITSTATUS(status);
}

TEST_F(quota, container_byte_eviction_stays_inside)
{
	__u64 host, own;
	int p[2], err;

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, status_of(U1).user_slabs);
	ASSERT_EQ(0, bl_param_set("max_user_bytes", 8 * PG));
	host = bt_orphan(4 * PG, U1, U1);
	ASSERT_NE(0, host);
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, bt_run_as(U1, U1, user_container, p));
	ASSERT_EQ(sizeof(own), read(p[0], &own, sizeof(own)));
	ASSERT_EQ(sizeof(err), read(p[0], &err, sizeof(err)));
	EXPECT_EQ(0, err);
	EXPECT_EQ(1, exists(host));
	EXPECT_EQ(0, exists(own));
	/* The host, over its limit, may evict what the container left. */
	ASSERT_NE(0, bt_orphan(8 * PG, U1, U1));
	EXPECT_EQ(0, exists(host));
	close(p[0]);
	close(p[1]);
}

/* In the container: make a slab and an orphan, report the status. */
static int container_status(void *arg)
{
	int out = *(int *)arg, dev = bl_open(O_RDWR);
	struct blamer_create c;
	struct blamer_status st;

	if (dev < 0 || bl_create(dev, 2 * PG, &c) || !bt_orphan(PG, -1, -1) ||
	    bl_status(dev, &st))
		return 70;
	return write(out, &st, sizeof(st)) == sizeof(st) ? 0 : 71;
}

/*
 * Status in a container counts what the container sees: its own slab and
 * orphan, not the host's live slab and orphan of the same account (an
 * oracle about processes outside it). The host sees them all.
 */
TEST_F(quota, status_in_a_pid_namespace_counts_what_it_sees)
{
	struct blamer_status st, host;
	struct bt_holder h;
	int p[2];

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bt_holder_start(&h, 3 * PG, -1, -1, 0, 0, NULL));
	ASSERT_NE(0, bt_orphan(5 * PG, -1, -1));
	ASSERT_EQ(0, bl_status(self->dev, &host));
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, in_container(container_status, &p[1]));
	ASSERT_EQ(sizeof(st), read(p[0], &st, sizeof(st)));
	EXPECT_EQ(2, st.user_slabs);
	EXPECT_EQ(1, st.user_orphans);
	EXPECT_EQ(3 * PG, st.user_bytes);
	EXPECT_LE(2, host.user_slabs);
	EXPECT_LE(1, host.user_orphans);
	bt_holder_finish(&h);
	close(p[0]);
	close(p[1]);
}

/*
 * The pages a pipe holds (vmsplice()) after the slab is released and
 * unmapped stay charged until the pipe lets go: uid 1000 at its limit
 * cannot create more by parking pages in a pipe. Once the pipe is
 * closed, the create succeeds.
 */
static int fill_pipe_and_create(void *arg)
{
	int *report = arg, p[2], dev = bl_open(O_RDWR), results[3];
	struct blamer_create c, c2;
	struct iovec iov;
	char *m;

	if (dev < 0 || pipe(p) || bl_create(dev, 4 * PG, &c))
		return 40;
	m = bl_map(c.fd, 4 * PG, PROT_READ | PROT_WRITE);
	if (!m)
		return 41;
	memset(m, 'p', 4 * PG);
	iov.iov_base = m;
	iov.iov_len = 4 * PG;
	if (vmsplice(p[1], &iov, 1, 0) != 4 * PG)
		return 42;
	if (bl_release(dev, c.id) || munmap(m, 4 * PG) || close(c.fd))
		return 43;
	results[0] = bl_create(dev, 4 * PG, &c2);
	close(p[0]);
	close(p[1]);
	results[1] = bl_create(dev, 4 * PG, &c2);
	results[2] = results[1] ? 0 : bl_release(dev, c2.id);
	if (!results[1])
		close(c2.fd);
	return write(report[1], results, sizeof(results)) ==
	       sizeof(results) ? 0 : 44;
}

TEST_F(quota, pages_a_pipe_holds_stay_charged)
{
	int report[2], results[3];

	if (BT_SKIPPED())
		return;
	ASSERT_EQ(0, bl_param_set("max_user_bytes", 4 * PG));
	ASSERT_EQ(0, pipe(report));
	EXPECT_EQ(0, bt_run_as(U1, U1, fill_pipe_and_create, report));
	ASSERT_EQ(sizeof(results), read(report[0], results, sizeof(results)));
	EXPECT_EQ(-EDQUOT, results[0]);
	EXPECT_EQ(0, results[1]);
	EXPECT_EQ(0, results[2]);
	EXPECT_EQ(0, status_of(U1).user_bytes);
	close(report[0]);
	close(report[1]);
}

int main(int argc, char **argv)
{
	return bt_main(argc, argv);
}
