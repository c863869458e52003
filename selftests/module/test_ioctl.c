// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/blamer selftests: the ioctl ABI. Creating and opening slabs,
 * listing, releasing, status and parameters, and the argument rules every
 * ioctl follows (size from the command, zero tails, flags, errors).
 */
#include "blamer_test.h"

/* A command with its size bits replaced by @size. */
static unsigned int resized(unsigned int cmd, unsigned int size)
{
	return _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size);
}

TEST(create_returns_a_slab_file)
{
	struct blamer_slab_info info;
	struct blamer_create c;
	char comm[32] = "";
	long long ticks = bt_proc_starttime(getpid());
	int fd = bl_open(O_RDWR), cfd;
	unsigned char *p;
	struct stat st;
	size_t i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd, 3 * PG - 100, &c));
	EXPECT_NE(0, c.id);
	EXPECT_EQ(3 * PG, c.length);
	ASSERT_LE(0, c.fd);
	/* A read-write, close-on-exec file whose size is the slab's. */
	EXPECT_EQ(O_RDWR, fcntl(c.fd, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(FD_CLOEXEC, fcntl(c.fd, F_GETFD) & FD_CLOEXEC);
	ASSERT_EQ(0, fstat(c.fd, &st));
	EXPECT_EQ(3 * PG, st.st_size);
	p = bl_map(c.fd, c.length, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	for (i = 0; i < c.length; i++)
		ASSERT_EQ(0, p[i]);	/* zeroed */
	for (i = 0; i < c.length; i++)
		p[i] = (unsigned char)(i * 7);
	for (i = 0; i < c.length; i++)
		ASSERT_EQ((unsigned char)(i * 7), p[i]);

	ASSERT_EQ(0, bl_find(fd, c.id, &info));
	EXPECT_EQ(c.length, info.size);
	EXPECT_EQ(BLAMER_SLAB_LIVE, info.state);
	EXPECT_TRUE(info.flags & BLAMER_SLAB_MINE);
	EXPECT_FALSE(info.flags & BLAMER_SLAB_EXITED);
	EXPECT_FALSE(info.flags & BLAMER_SLAB_PID_HIDDEN);
	EXPECT_EQ(getpid(), info.pid);
	EXPECT_EQ(geteuid(), info.uid);
	EXPECT_NE(0, info.file_serial);
	EXPECT_NE(0, info.create_time_ns);
	EXPECT_EQ(0, info.orphan_time_ns);
	/* Same clock and scale as /proc/PID/stat field 22. */
	EXPECT_EQ(ticks, bt_ns_to_ticks(info.start_time_ns));
	cfd = open("/proc/self/comm", O_RDONLY);
	ASSERT_LT(0, read(cfd, comm, sizeof(comm) - 1));
	close(cfd);
	comm[strcspn(comm, "\n")] = 0;
	EXPECT_STREQ(comm, info.comm);
	munmap(p, c.length);
	close(c.fd);
	close(fd);
}

TEST(ids_unique_and_serial_per_file)
{
	struct blamer_slab_info a, b;
	struct blamer_create c1, c2, c3;
	int fd = bl_open(O_RDWR), fd2 = bl_open(O_RDWR);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, bl_create(fd, 1, &c1));
	ASSERT_EQ(0, bl_create(fd, 1, &c2));
	ASSERT_EQ(0, bl_create(fd2, 1, &c3));
	EXPECT_NE(c1.id, c2.id);
	EXPECT_NE(c2.id, c3.id);
	ASSERT_EQ(0, bl_find(fd, c1.id, &a));
	ASSERT_EQ(0, bl_find(fd, c2.id, &b));
	EXPECT_EQ(a.file_serial, b.file_serial);
	ASSERT_EQ(0, bl_find(fd, c3.id, &b));
	EXPECT_NE(a.file_serial, b.file_serial);
	/* Ownership follows the process, not the file. */
	EXPECT_TRUE(b.flags & BLAMER_SLAB_MINE);
	close(fd);
	close(fd2);
}

TEST(hostile_lengths)
{
	struct blamer_status st;
	struct blamer_create c;
	int fd = bl_open(O_RDWR);
	unsigned char *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_status(fd, &st));
	EXPECT_EQ(-EINVAL, bl_create(fd, 0, &c));
	EXPECT_EQ(-1, c.fd);
	ASSERT_EQ(0, bl_create(fd, 1, &c));
	EXPECT_EQ(PG, c.length);
	ASSERT_EQ(0, bl_create(fd, PG + 1, &c));
	EXPECT_EQ(2 * PG, c.length);
	ASSERT_EQ(0, bl_create(fd, st.max_slab_bytes, &c));
	EXPECT_EQ(st.max_slab_bytes, c.length);
	p = bl_map(c.fd, c.length, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	p[c.length - 1] = 1;
	munmap(p, c.length);
	close(c.fd);
	ASSERT_EQ(0, bl_release(fd, c.id));
	EXPECT_EQ(-EFBIG, bl_create(fd, st.max_slab_bytes + 1, &c));
	EXPECT_EQ(-EFBIG, bl_create(fd, ~0ULL, &c));
	EXPECT_EQ(-EFBIG, bl_create(fd, ~0ULL - PG + 2, &c));
	EXPECT_EQ(-EFBIG, bl_create(fd, 1ULL << 63, &c));
	close(fd);
}

/* The magic is not PPPoX's 0xB1: PPPOEIOCDFWD (_IO(0xB1, 1)) is unknown. */
TEST(free_ioctl_magic)
{
	int fd = bl_open(O_RDWR);

	ASSERT_LE(0, fd);
	EXPECT_EQ(0xBB, _IOC_TYPE(BLAMER_IOC_CREATE));
	EXPECT_EQ(-1, ioctl(fd, _IO(0xB1, 1)));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(fd, _IOWR(0xB1, 1, struct blamer_create), NULL));
	EXPECT_EQ(ENOTTY, errno);
	close(fd);
}

/*
 * Every ioctl takes its size from the command: one byte more with a zero
 * tail is accepted, with a non-zero tail refused (E2BIG), one byte less
 * than the first published size refused (EINVAL), and nothing is written
 * beyond the size given.
 */
TEST(struct_sizes_from_the_command)
{
	static const struct {
		unsigned int cmd;
		unsigned int ver0;
		int in;
	} ioc[] = {
		{ BLAMER_IOC_CREATE, BLAMER_CREATE_SIZE_VER0, 1 },
		{ BLAMER_IOC_OPEN, BLAMER_OPEN_SIZE_VER0, 1 },
		{ BLAMER_IOC_LIST, BLAMER_LIST_SIZE_VER0, 1 },
		{ BLAMER_IOC_RELEASE, BLAMER_RELEASE_SIZE_VER0, 1 },
		{ BLAMER_IOC_STATUS, BLAMER_STATUS_SIZE_VER0, 0 },
	};
	unsigned char buf[256];
	struct blamer_create c;
	int fd = bl_open(O_RDWR), ret;
	unsigned int i, size;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd, PG, &c));
	close(c.fd);
	for (i = 0; i < ARRAY_SIZE(ioc); i++) {
		size = _IOC_SIZE(ioc[i].cmd);
		EXPECT_EQ(ioc[i].ver0, size);
		/* Valid content: a page for create, c.id for open/release. */
		memset(buf, 0, sizeof(buf));
		if (ioc[i].cmd == BLAMER_IOC_CREATE)
			((struct blamer_create *)buf)->length = PG;
		if (ioc[i].cmd == BLAMER_IOC_OPEN)
			((struct blamer_open *)buf)->id = c.id;
		if (ioc[i].cmd == BLAMER_IOC_LIST)
			((struct blamer_list *)buf)->info_size =
				sizeof(struct blamer_slab_info);
		if (ioc[i].cmd == BLAMER_IOC_RELEASE)
			((struct blamer_release *)buf)->id = ~0ULL;
		buf[size] = 0;
		buf[size + 1] = 0x5a;
		ret = ioctl(fd, resized(ioc[i].cmd, size + 1), buf);
		if (ioc[i].cmd == BLAMER_IOC_RELEASE) {
			EXPECT_EQ(-1, ret);
			EXPECT_EQ(ENOENT, errno);	/* got to the lookup */
		} else {
			EXPECT_EQ(0, ret) TH_LOG("ioctl %u: %s", i, strerror(errno));
		}
		EXPECT_EQ(0x5a, buf[size + 1]);	/* nothing written beyond */
		if (ioc[i].cmd == BLAMER_IOC_CREATE)
			close(((struct blamer_create *)buf)->fd);
		if (ioc[i].cmd == BLAMER_IOC_OPEN)
			close(((struct blamer_open *)buf)->fd);
		if (ioc[i].in) {
			buf[size] = 1;
			EXPECT_EQ(-1, ioctl(fd, resized(ioc[i].cmd, size + 1),
					    buf));
			EXPECT_EQ(E2BIG, errno) TH_LOG("ioctl %u", i);
		} else {
			/* Out only: the extra byte is zeroed, not read. */
			buf[size] = 1;
			EXPECT_EQ(0, ioctl(fd, resized(ioc[i].cmd, size + 1),
					   buf));
			EXPECT_EQ(0, buf[size]);
		}
		EXPECT_EQ(-1, ioctl(fd, resized(ioc[i].cmd, size - 1), buf));
		EXPECT_EQ(EINVAL, errno) TH_LOG("ioctl %u", i);
		EXPECT_EQ(-1, ioctl(fd, resized(ioc[i].cmd, 0), buf));
		EXPECT_EQ(EINVAL, errno);
		/* The same number with another direction is another ioctl. */
		EXPECT_EQ(-1, ioctl(fd, _IOC(_IOC_NONE, _IOC_TYPE(ioc[i].cmd),
					     _IOC_NR(ioc[i].cmd), size), buf));
		EXPECT_EQ(ENOTTY, errno);
		EXPECT_EQ(-1, ioctl(fd, ioc[i].cmd, (void *)16));
		EXPECT_EQ(EFAULT, errno);
	}
	EXPECT_EQ(-1, ioctl(fd, _IO(BLAMER_IOC_MAGIC, 99)));
	EXPECT_EQ(ENOTTY, errno);
	close(fd);
}

TEST(flags_and_reserved_must_be_zero)
{
	struct blamer_create c = { .length = PG, .flags = 1U << 1 };
	struct blamer_open o = { .flags = 1 };
	struct blamer_release r = { .flags = 1 };
	struct blamer_slab_info v[1];
	struct blamer_list l = {
		.slabs = (uintptr_t)v, .info_size = sizeof(v[0]),
		.capacity = 1, .flags = 1,
	};
	int fd = bl_open(O_RDWR);

	ASSERT_LE(0, fd);
	/* Every bit but BLAMER_CREATE_POPULATE, alone or with it. */
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	c.flags = 1U << 31;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	c.flags = ~0U;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	c.flags = BLAMER_CREATE_POPULATE | 1U << 2;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, bl_create(fd, PG, &c));
	close(c.fd);
	o.id = c.id;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_OPEN, &o));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(EINVAL, errno);
	l.flags = 0;
	l.reserved = 1;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(EINVAL, errno);
	r.id = c.id;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_RELEASE, &r));
	EXPECT_EQ(EINVAL, errno);
	r.flags = 0;
	r.reserved = 1;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_RELEASE, &r));
	EXPECT_EQ(EINVAL, errno);
	r.reserved = 0;
	EXPECT_EQ(0, ioctl(fd, BLAMER_IOC_RELEASE, &r));
	close(fd);
}

/* CREATE needs a writable descriptor and costs nothing when refused. */
TEST(create_on_readonly_descriptor)
{
	struct blamer_status before, after;
	struct blamer_create c;
	int fd = bl_open(O_RDONLY);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_status(fd, &before));
	EXPECT_EQ(-EBADF, bl_create(fd, PG, &c));
	EXPECT_EQ(-1, c.fd);
	ASSERT_EQ(0, bl_status(fd, &after));
	EXPECT_EQ(before.user_bytes, after.user_bytes);
	EXPECT_EQ(before.user_slabs, after.user_slabs);
	close(fd);
}

TEST(open_gives_a_readonly_file)
{
	struct blamer_create c;
	int fd = bl_open(O_RDWR), rfd;
	struct stat st;
	char *p, *q;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd, 2 * PG, &c));
	p = bl_map(c.fd, 2 * PG, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	p[PG] = 'o';
	rfd = bl_open_slab(fd, c.id);
	ASSERT_LE(0, rfd);
	EXPECT_EQ(O_RDONLY, fcntl(rfd, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(FD_CLOEXEC, fcntl(rfd, F_GETFD) & FD_CLOEXEC);
	ASSERT_EQ(0, fstat(rfd, &st));
	EXPECT_EQ(2 * PG, st.st_size);
	q = bl_map(rfd, 2 * PG, PROT_READ);
	ASSERT_NE(NULL, q);
	EXPECT_EQ('o', q[PG]);
	/* Slab files are not read or written like files. */
	EXPECT_EQ(-1, write(rfd, "x", 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, write(c.fd, "x", 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, read(c.fd, p, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ftruncate(c.fd, 0));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, fstat(c.fd, &st));
	EXPECT_EQ(2 * PG, st.st_size);
	EXPECT_EQ(-ENOENT, bl_open_slab(fd, 0));
	EXPECT_EQ(-ENOENT, bl_open_slab(fd, ~0ULL));
	EXPECT_EQ(-ENOENT, bl_open_slab(fd, 1ULL << 40));
	munmap(q, 2 * PG);
	munmap(p, 2 * PG);
	close(rfd);
	close(c.fd);
	close(fd);
}

TEST(status_counts_the_callers_user)
{
	struct blamer_status st, st2;
	struct blamer_create c;
	long long v;
	int fd = bl_open(O_RDWR);

	ASSERT_LE(0, fd);
	bt_clean_orphans();
	ASSERT_EQ(0, bl_status(fd, &st));
	ASSERT_EQ(0, bl_param_get("max_slab_bytes", &v));
	EXPECT_EQ(v, (long long)st.max_slab_bytes);
	ASSERT_EQ(0, bl_param_get("max_user_bytes", &v));
	EXPECT_EQ(v, (long long)st.max_user_bytes);
	ASSERT_EQ(0, bl_param_get("max_total_bytes", &v));
	EXPECT_EQ(v, (long long)st.max_total_bytes);
	ASSERT_EQ(0, bl_param_get("max_user_orphans", &v));
	EXPECT_EQ(v, (long long)st.max_user_orphans);
	ASSERT_EQ(0, bl_create(fd, 2 * PG, &c));
	ASSERT_EQ(0, bl_status(fd, &st2));
	EXPECT_EQ(st.user_slabs + 1, st2.user_slabs);
	EXPECT_EQ(st.user_bytes + 2 * PG, st2.user_bytes);
	/* Device-wide counts only for who may read every slab. */
	if (geteuid()) {
		EXPECT_FALSE(st2.flags & BLAMER_STATUS_DEVICE);
		EXPECT_EQ(0, st2.slabs);
		EXPECT_EQ(0, st2.bytes);
	} else {
		EXPECT_TRUE(st2.flags & BLAMER_STATUS_DEVICE);
		EXPECT_LE(st2.user_slabs, st2.slabs);
		EXPECT_LE(st2.user_bytes, st2.bytes);
	}
	close(c.fd);
	close(fd);
}

FIXTURE(params) {
	struct bt_params saved;
};

FIXTURE_SETUP(params)
{
	if (geteuid())
		SKIP(return, "needs root");
	bt_params_save(&self->saved);
	ASSERT_TRUE(self->saved.ok);
}

FIXTURE_TEARDOWN(params)
{
	if (BT_SKIPPED())
		return;
	EXPECT_EQ(0, bt_params_restore(&self->saved));
}

TEST_F(params, invalid_values_refused)
{
	long long v;

	if (BT_SKIPPED())
		return;
	EXPECT_EQ(-EINVAL, bl_param_set("max_slab_bytes", 0));
	EXPECT_EQ(-EINVAL, bl_param_set("max_slab_bytes", PG + 1));
	EXPECT_EQ(-EINVAL, bl_param_set("max_slab_bytes", 1LL << 40));
	EXPECT_EQ(-EINVAL, bl_param_set("max_user_bytes", 0));
	EXPECT_EQ(-EINVAL, bl_param_set("max_total_bytes", 0));
	EXPECT_EQ(-EINVAL, bl_param_set("max_user_orphans", -1));
	EXPECT_EQ(-EINVAL, bl_param_set("reader_gid", -2));
	ASSERT_EQ(0, bl_param_get("max_slab_bytes", &v));
	EXPECT_EQ(self->saved.v[0], v);
}

/* A changed limit applies to the next request. */
TEST_F(params, change_applies)
{
	struct blamer_create c;
	int fd = bl_open(O_RDWR);

	if (BT_SKIPPED())
		return;
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_param_set("max_slab_bytes", 2 * PG));
	EXPECT_EQ(-EFBIG, bl_create(fd, 2 * PG + 1, &c));
	EXPECT_EQ(0, bl_create(fd, 2 * PG, &c));
	close(c.fd);
	ASSERT_EQ(0, bl_param_set("max_slab_bytes", self->saved.v[0]));
	EXPECT_EQ(0, bl_create(fd, 2 * PG + 1, &c));
	close(c.fd);
	close(fd);
}

TEST(list_capacity_entry_size_and_paging)
{
	unsigned char big[3][BLAMER_SLAB_INFO_SIZE_VER0 + 16];
	struct blamer_slab_info v[2];
	struct blamer_create c1, c2;
	struct blamer_list l;
	int fd = bl_open(O_RDWR), i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd, PG, &c1));
	ASSERT_EQ(0, bl_create(fd, PG, &c2));
	close(c1.fd);
	close(c2.fd);
	memset(&l, 0, sizeof(l));
	l.info_size = sizeof(v[0]);
	l.slabs = (uintptr_t)v;
	ASSERT_EQ(0, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(0, l.count);
	EXPECT_LE(2, l.total);
	l.capacity = 1;
	ASSERT_EQ(0, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(1, l.count);
	/* From an ID on: the newest slab alone. */
	l.start_id = c2.id;
	l.capacity = 2;
	ASSERT_EQ(0, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(1, l.total);
	EXPECT_EQ(c2.id, v[0].id);
	l.start_id = ~0ULL;
	ASSERT_EQ(0, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(0, l.total);
	l.start_id = 0;
	/* Larger entries: the tail of each is zeroed. */
	memset(big, 0xff, sizeof(big));
	l.info_size = sizeof(big[0]);
	l.slabs = (uintptr_t)big;
	l.capacity = 3;
	ASSERT_EQ(0, ioctl(fd, BLAMER_IOC_LIST, &l));
	ASSERT_LE(2, l.count);
	for (i = 0; i < 16; i++)
		EXPECT_EQ(0, big[1][BLAMER_SLAB_INFO_SIZE_VER0 + i]);
	EXPECT_NE(0, ((struct blamer_slab_info *)big[1])->id);
	l.info_size = BLAMER_SLAB_INFO_SIZE_VER0 - 8;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(EINVAL, errno);
	l.info_size = 4097;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(EINVAL, errno);
	l.info_size = sizeof(v[0]);
	l.slabs = 16;
	l.capacity = 2;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(EFAULT, errno);
	close(fd);
}

/* ---------------------------------------------------------- concurrency */

#define THREADS 8
#define ROUNDS 40

/*
 * Rounds of each thread: ROUNDS, or $BLAMER_TEST_ROUNDS (1..ROUNDS). The
 * debug kernels' guests ask for fewer (vm-module.sh): under KASAN and
 * lockdep a round costs five to fifteen times a stock kernel's, and what
 * those kernels add (a bad access or a lock order reported the first
 * time it happens) needs no more rounds; the stock and RT kernels, where
 * the interleavings are many and cheap, run all of them.
 */
static int rounds(void)
{
	const char *s = getenv("BLAMER_TEST_ROUNDS");
	int n = s ? atoi(s) : ROUNDS;

	return n >= 1 && n <= ROUNDS ? n : ROUNDS;
}

static void *churn(void *arg)
{
	long bad = 0;
	int r, i;

	(void)arg;
	for (r = 0; r < rounds(); r++) {
		struct blamer_create c[3];
		int fd = bl_open(O_RDWR), n = r % 3 + 1, err, rfd;
		unsigned char *p;

		if (fd < 0)
			return (void *)1;
		for (i = 0; i < n; i++) {
			err = bl_create(fd, (i + 1) * PG, &c[i]);
			if (err == -EDQUOT || err == -ENOSPC) {
				n = i;
				break;
			}
			if (err)
				bad++;
		}
		for (i = 0; i < n; i++) {
			p = bl_map(c[i].fd, c[i].length, PROT_READ | PROT_WRITE);
			if (!p) {
				bad++;
				continue;
			}
			p[0] = (unsigned char)r;
			munmap(p, c[i].length);
			close(c[i].fd);
		}
		/* Read each through a reader's file, release it while mapped. */
		for (i = 0; i < n; i++) {
			rfd = bl_open_slab(fd, c[i].id);
			if (rfd < 0) {
				bad++;
				continue;
			}
			p = bl_map(rfd, c[i].length, PROT_READ);
			close(rfd);
			if (bl_release(fd, c[i].id))
				bad++;
			if (!p || p[0] != (unsigned char)r)
				bad++;
			if (p)
				munmap(p, c[i].length);
		}
		close(fd);
	}
	return (void *)bad;
}

/*
 * Listing while others create and release, from several threads: every
 * entry is whole (a slab is never seen before its ID is written), IDs
 * ascending.
 */
static void *lister(void *arg)
{
	struct blamer_slab_info *v;
	long bad = 0;
	int fd = bl_open(O_RDONLY), i, j, n;

	for (i = 0; i < rounds() && fd >= 0; i++) {
		n = bl_list(fd, &v, NULL);
		if (n < 0)
			bad++;
		for (j = 0; j < n; j++)
			if (!v[j].id || (j && v[j].id <= v[j - 1].id) ||
			    !v[j].size || v[j].size % PG)
				bad++;
		if (n >= 0)
			free(v);
	}
	if (fd < 0)
		return (void *)1;
	close(fd);
	return (void *)bad;
}

FIXTURE(concurrent) {
	int dummy;
};

FIXTURE_SETUP(concurrent)
{
}

FIXTURE_TEARDOWN(concurrent)
{
}

/* Long on debug kernels (KASAN, lockdep) under emulation. */
TEST_F_TIMEOUT(concurrent, create_list_release, 600)
{
	struct blamer_status before, after;
	pthread_t t[THREADS + 2];
	void *ret;
	int fd = bl_open(O_RDONLY), i;

	ASSERT_LE(0, fd);
	bt_clean_orphans();
	ASSERT_EQ(0, bl_status(fd, &before));
	for (i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, churn, NULL));
	for (; i < THREADS + 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, lister, NULL));
	for (i = 0; i < THREADS + 2; i++) {
		ASSERT_EQ(0, pthread_join(t[i], &ret));
		EXPECT_EQ(0, (long)ret);
	}
	ASSERT_EQ(0, bl_status(fd, &after));
	/* Everything created was released and unmapped: no charge left. */
	EXPECT_EQ(before.user_slabs, after.user_slabs);
	EXPECT_EQ(before.user_bytes, after.user_bytes);
	close(fd);
}

int main(int argc, char **argv)
{
	return bt_main(argc, argv);
}
