// SPDX-License-Identifier: GPL-2.0
/*
 * Selftests for /dev/blamer (module/): every promise of
 * Documentation/userspace-api.rst, positive and negative. Runs as root and
 * as an unprivileged user; tests that need root (changing module
 * parameters, switching uids, pid namespaces, /proc/blamer) skip otherwise.
 * The module must be loaded, ideally with small limits, e.g.
 *   insmod blamer.ko max_slab_bytes=4194304 max_owner_bytes=16777216 \
 *	max_total_bytes=67108864 max_orphans=32
 */
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "blamer_util.h"
#include "kselftest_harness.h"

/* ---------------------------------------------------------------- helpers */

/* Run @fn in a child with the given ids (root only); its exit status. */
static int run_as(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		if (setgroups(0, NULL) || setresgid(gid, gid, gid) ||
		    setresuid(uid, uid, uid))
			_exit(100);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Try to map slab @id read-only from a fresh fd: 0 or errno. */
static int try_map_ro(uint64_t id)
{
	int fd = bl_open(O_RDONLY), err = 0;
	void *p;

	if (fd < 0)
		return errno;
	p = bl_map(fd, id * PG, PG, PROT_READ);
	if (!p)
		err = errno;
	else if (*(volatile char *)p != 'B')
		err = 99;
	if (p)
		munmap(p, PG);
	close(fd);
	return err;
}

static int child_map(void *arg)
{
	return try_map_ro(*(uint64_t *)arg);
}

static int child_release(void *arg)
{
	int fd = bl_open(O_RDONLY), err;

	err = bl_release(fd, *(uint64_t *)arg);
	close(fd);
	return -err;
}

static int child_list_sees(void *arg)
{
	struct blamer_slab_info info;
	int fd = bl_open(O_RDONLY), err;

	err = bl_find(fd, *(uint64_t *)arg, &info);
	close(fd);
	return err == 0 ? 0 : 1;
}

/* A pipe-synchronised slab owner running in a child process. */
struct holder {
	pid_t pid;
	uint64_t id;
	int go;		/* write end: tells the child to finish */
};

/*
 * Fork a child (optionally as @uid/@gid when != -1) that creates a slab of
 * @len bytes filled with 'B', reports its ID and waits for a byte on the
 * pipe; then it exits with @code (or dies from signal @sig if non-zero).
 */
static int holder_start(struct holder *h, size_t len, int uid, int gid,
			int code, int sig)
{
	int up[2], down[2];
	pid_t pid;

	if (pipe(up) || pipe(down))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		struct blamer_create c;
		char b;
		void *p;
		int fd;

		close(up[0]);
		close(down[1]);
		if (gid >= 0 && (setgroups(0, NULL) || setresgid(gid, gid, gid)))
			_exit(100);
		if (uid >= 0 && setresuid(uid, uid, uid))
			_exit(100);
		fd = bl_open(O_RDWR);
		if (fd < 0 || bl_create(fd, len, &c))
			_exit(101);
		p = bl_map(fd, c.mmap_offset, c.length, PROT_READ | PROT_WRITE);
		if (!p)
			_exit(102);
		memset(p, 'B', c.length);
		if (write(up[1], &c.id, sizeof(c.id)) != sizeof(c.id))
			_exit(103);
		if (read(down[0], &b, 1) < 0)
			_exit(104);
		if (sig)
			kill(getpid(), sig);
		_exit(code);
	}
	close(up[1]);
	close(down[0]);
	h->pid = pid;
	h->go = down[1];
	if (read(up[0], &h->id, sizeof(h->id)) != sizeof(h->id)) {
		close(up[0]);
		return -1;
	}
	close(up[0]);
	return 0;
}

/* Let the holder finish; returns its wait status. */
static int holder_finish(struct holder *h)
{
	int status = -1;

	if (write(h->go, "x", 1) != 1)
		return -1;
	close(h->go);
	waitpid(h->pid, &status, 0);
	return status;
}

static long long proc_starttime_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	int i, fd, n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	p += 2;
	/* p is at field 3; field 22 is 19 fields further. */
	for (i = 0; i < 19; i++) {
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
	}
	sscanf(p, "%llu", &v);
	return (long long)v;
}

/* ------------------------------------------------------------- creation */

TEST(create_map_write_read)
{
	struct blamer_slab_info info;
	struct blamer_create c;
	char comm[32] = "";
	long long ticks = proc_starttime_ticks(getpid());
	int fd = bl_open(O_RDWR), cfd;
	unsigned char *p;
	size_t i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd, 3 * PG, &c));
	EXPECT_NE(0, c.id);
	EXPECT_EQ(3 * PG, c.length);
	EXPECT_EQ(c.id * PG, c.mmap_offset);
	p = bl_map(fd, c.mmap_offset, c.length, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	for (i = 0; i < c.length; i++)
		ASSERT_EQ(0, p[i]);	/* zeroed */
	for (i = 0; i < c.length; i++)
		p[i] = (unsigned char)(i * 7);
	for (i = 0; i < c.length; i++)
		ASSERT_EQ((unsigned char)(i * 7), p[i]);

	ASSERT_EQ(0, bl_find(fd, c.id, &info));
	EXPECT_EQ(c.length, info.size);
	EXPECT_EQ(c.mmap_offset, info.mmap_offset);
	EXPECT_EQ(BLAMER_SLAB_LIVE, info.state);
	EXPECT_TRUE(info.flags & BLAMER_SLAB_MINE);
	EXPECT_FALSE(info.flags & BLAMER_SLAB_EXITED);
	EXPECT_EQ(getpid(), info.pid);
	EXPECT_EQ(geteuid(), info.uid);
	EXPECT_NE(0, info.owner_serial);
	EXPECT_NE(0, info.create_time_ns);
	EXPECT_EQ(0, info.orphan_time_ns);
	/* Same clock and scale as /proc/PID/stat field 22. */
	EXPECT_EQ(ticks, (long long)(info.start_time_ns /
				     (1000000000ULL / sysconf(_SC_CLK_TCK))));
	cfd = open("/proc/self/comm", O_RDONLY);
	ASSERT_LT(0, read(cfd, comm, sizeof(comm) - 1));
	close(cfd);
	comm[strcspn(comm, "\n")] = 0;
	EXPECT_STREQ(comm, info.comm);
	munmap(p, c.length);
	close(fd);
}

TEST(ids_unique_and_serial_shared)
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
	EXPECT_EQ(a.owner_serial, b.owner_serial);
	ASSERT_EQ(0, bl_find(fd, c3.id, &b));
	EXPECT_NE(a.owner_serial, b.owner_serial);
	EXPECT_FALSE(b.flags & BLAMER_SLAB_MINE);	/* other file's slab */
	close(fd);
	close(fd2);
}

TEST(hostile_sizes)
{
	struct blamer_status st;
	struct blamer_create c;
	int fd = bl_open(O_RDWR);
	unsigned char *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_status(fd, &st));
	EXPECT_EQ(-EINVAL, bl_create(fd, 0, &c));
	ASSERT_EQ(0, bl_create(fd, 1, &c));
	EXPECT_EQ(PG, c.length);
	ASSERT_EQ(0, bl_create(fd, PG + 1, &c));
	EXPECT_EQ(2 * PG, c.length);
	ASSERT_EQ(0, bl_create(fd, st.max_slab_bytes, &c));
	EXPECT_EQ(st.max_slab_bytes, c.length);
	p = bl_map(fd, c.mmap_offset, c.length, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	p[c.length - 1] = 1;
	munmap(p, c.length);
	EXPECT_EQ(-EFBIG, bl_create(fd, st.max_slab_bytes + 1, &c));
	EXPECT_EQ(-EFBIG, bl_create(fd, ~0ULL, &c));
	EXPECT_EQ(-EFBIG, bl_create(fd, ~0ULL - PG + 2, &c));
	EXPECT_EQ(-EFBIG, bl_create(fd, 1ULL << 63, &c));
	close(fd);
}

TEST(struct_size_rules)
{
	struct {
		struct blamer_create c;
		uint64_t extra;
	} big;
	struct blamer_create c;
	struct blamer_status st;
	int fd = bl_open(O_RDWR);

	ASSERT_LE(0, fd);
	memset(&c, 0, sizeof(c));
	c.size = BLAMER_CREATE_SIZE_VER0 - 8;
	c.length = PG;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	c.size = 4097;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	c.size = sizeof(c);
	c.flags = 1;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	/* A newer, larger structure: zero tail accepted, non-zero refused. */
	memset(&big, 0, sizeof(big));
	big.c.size = sizeof(big);
	big.c.length = PG;
	EXPECT_EQ(0, ioctl(fd, BLAMER_IOC_CREATE, &big));
	EXPECT_NE(0, big.c.id);
	big.extra = 1;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_CREATE, &big));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(-1, ioctl(fd, _IO(BLAMER_IOC_MAGIC, 99)));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_CREATE, (void *)16));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(0, bl_status(fd, &st));
	EXPECT_EQ(BLAMER_ABI_VERSION, st.abi_version);
	close(fd);
}

TEST(status_and_params)
{
	struct blamer_status st, st2;
	struct blamer_create c;
	long long v;
	int fd = bl_open(O_RDWR);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_status(fd, &st));
	ASSERT_EQ(0, bl_param_get("max_slab_bytes", &v));
	EXPECT_EQ(v, (long long)st.max_slab_bytes);
	ASSERT_EQ(0, bl_param_get("max_owner_bytes", &v));
	EXPECT_EQ(v, (long long)st.max_owner_bytes);
	ASSERT_EQ(0, bl_param_get("max_total_bytes", &v));
	EXPECT_EQ(v, (long long)st.max_total_bytes);
	ASSERT_EQ(0, bl_param_get("max_orphans", &v));
	EXPECT_EQ(v, (long long)st.max_orphans);
	ASSERT_EQ(0, bl_create(fd, 2 * PG, &c));
	ASSERT_EQ(0, bl_status(fd, &st2));
	EXPECT_EQ(st.slabs + 1, st2.slabs);
	EXPECT_EQ(st.bytes + 2 * PG, st2.bytes);
	EXPECT_LT(st.generation, st2.generation);
	close(fd);
}

TEST(param_validation)
{
	long long old, v;

	if (geteuid())
		SKIP(return, "needs root");
	ASSERT_EQ(0, bl_param_get("max_slab_bytes", &old));
	EXPECT_EQ(-EINVAL, bl_param_set("max_slab_bytes", 0));
	EXPECT_EQ(-EINVAL, bl_param_set("max_slab_bytes", PG + 1));
	EXPECT_EQ(-EINVAL, bl_param_set("max_slab_bytes", 1LL << 40));
	EXPECT_EQ(-EINVAL, bl_param_set("max_total_bytes", 0));
	EXPECT_EQ(-EINVAL, bl_param_set("max_orphans", -1));
	EXPECT_EQ(-EINVAL, bl_param_set("reader_gid", -2));
	ASSERT_EQ(0, bl_param_get("max_slab_bytes", &v));
	EXPECT_EQ(old, v);
	ASSERT_EQ(0, bl_param_set("max_slab_bytes", old));
}

/* A changed limit applies to the next request. */
TEST(param_change_applies)
{
	struct blamer_create c;
	long long old;
	int fd = bl_open(O_RDWR);

	if (geteuid())
		SKIP(return, "needs root");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_param_get("max_slab_bytes", &old));
	ASSERT_EQ(0, bl_param_set("max_slab_bytes", 2 * PG));
	EXPECT_EQ(-EFBIG, bl_create(fd, 2 * PG + 1, &c));
	EXPECT_EQ(0, bl_create(fd, 2 * PG, &c));
	ASSERT_EQ(0, bl_param_set("max_slab_bytes", old));
	EXPECT_EQ(0, bl_create(fd, 2 * PG + 1, &c));
	close(fd);
}

/* ---------------------------------------------------------------- quotas */

TEST(owner_quota_exhaustion_and_recovery)
{
	struct blamer_create c;
	struct blamer_status st;
	uint64_t ids[64];
	int fd = bl_open(O_RDWR), fd2, n = 0, err, i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_status(fd, &st));
	ASSERT_LT(st.max_owner_bytes, st.max_total_bytes - st.bytes);
	while (n < 64 && !(err = bl_create(fd, st.max_slab_bytes, &c)))
		ids[n++] = c.id;
	EXPECT_EQ(-EDQUOT, err);
	EXPECT_LE(n * st.max_slab_bytes, st.max_owner_bytes);
	EXPECT_GT((n + 1) * st.max_slab_bytes, st.max_owner_bytes);
	/* Another file of the same user shares the quota. */
	fd2 = bl_open(O_RDWR);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-EDQUOT, bl_create(fd2, st.max_slab_bytes, &c));
	/* Orphans do not count against the owner: recovery after close. */
	close(fd);
	ASSERT_EQ(0, bl_create(fd2, st.max_slab_bytes, &c));
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, bl_release(fd2, ids[i]));
	close(fd2);
}

TEST(total_quota)
{
	struct blamer_status st;
	struct blamer_create c;
	long long old;
	int fd = bl_open(O_RDWR);

	if (geteuid())
		SKIP(return, "needs root");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_param_get("max_total_bytes", &old));
	ASSERT_EQ(0, bl_status(fd, &st));
	ASSERT_EQ(0, bl_param_set("max_total_bytes", st.bytes + 2 * PG));
	EXPECT_EQ(0, bl_create(fd, PG, &c));
	EXPECT_EQ(-ENOSPC, bl_create(fd, 2 * PG, &c));
	EXPECT_EQ(0, bl_create(fd, PG, &c));
	EXPECT_EQ(-ENOSPC, bl_create(fd, PG, &c));
	close(fd);
	/* Orphans still count; release them to recover. */
	fd = bl_open(O_RDWR);
	EXPECT_EQ(-ENOSPC, bl_create(fd, PG, &c));
	ASSERT_EQ(0, bl_param_set("max_total_bytes", old));
	EXPECT_EQ(0, bl_create(fd, PG, &c));
	close(fd);
}

/* ----------------------------------------------------------- mapping rules */

FIXTURE(mapped) {
	int owner;
	int reader;
	struct blamer_create c;
	unsigned char *rw;
};

FIXTURE_SETUP(mapped)
{
	self->owner = bl_open(O_RDWR);
	ASSERT_LE(0, self->owner);
	self->reader = bl_open(O_RDWR);
	ASSERT_LE(0, self->reader);
	ASSERT_EQ(0, bl_create(self->owner, 2 * PG, &self->c));
	self->rw = bl_map(self->owner, self->c.mmap_offset, 2 * PG,
			  PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, self->rw);
	memset(self->rw, 'B', 2 * PG);
}

FIXTURE_TEARDOWN(mapped)
{
	munmap(self->rw, 2 * PG);
	close(self->owner);
	close(self->reader);
}

TEST_F(mapped, reader_sees_writes)
{
	unsigned char *ro = bl_map(self->reader, self->c.mmap_offset, 2 * PG,
				   PROT_READ);

	ASSERT_NE(NULL, ro);
	EXPECT_EQ('B', ro[PG + 5]);
	self->rw[PG + 5] = 'x';
	EXPECT_EQ('x', ro[PG + 5]);
	munmap(ro, 2 * PG);
}

TEST_F(mapped, reader_cannot_map_writable)
{
	errno = 0;
	EXPECT_EQ(NULL, bl_map(self->reader, self->c.mmap_offset, 2 * PG,
			       PROT_READ | PROT_WRITE));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(NULL, bl_map(self->reader, self->c.mmap_offset, 2 * PG,
			       PROT_WRITE));
	EXPECT_EQ(EPERM, errno);
}

TEST_F(mapped, reader_cannot_mprotect_writable)
{
	unsigned char *ro = bl_map(self->reader, self->c.mmap_offset, 2 * PG,
				   PROT_READ);

	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-1, mprotect(ro, 2 * PG, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect(ro, 2 * PG, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ('B', ro[0]);
	munmap(ro, 2 * PG);
}

TEST_F(mapped, readonly_fd_reader)
{
	int fd = bl_open(O_RDONLY);
	unsigned char *ro;

	ASSERT_LE(0, fd);
	EXPECT_EQ(NULL, bl_map(fd, self->c.mmap_offset, 2 * PG,
			       PROT_READ | PROT_WRITE));
	ro = bl_map(fd, self->c.mmap_offset, 2 * PG, PROT_READ);
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-1, mprotect(ro, 2 * PG, PROT_READ | PROT_WRITE));
	EXPECT_EQ('B', ro[1]);
	munmap(ro, 2 * PG);
	close(fd);
}

TEST_F(mapped, no_growth_no_split)
{
	unsigned char *ro = bl_map(self->reader, self->c.mmap_offset, 2 * PG,
				   PROT_READ);
	void *q, *moved;

	ASSERT_NE(NULL, ro);
	/* mremap can neither grow in place, nor grow by moving ... */
	EXPECT_EQ(MAP_FAILED, mremap(ro, 2 * PG, 3 * PG, 0));
	EXPECT_EQ(MAP_FAILED, mremap(ro, 2 * PG, 4 * PG, MREMAP_MAYMOVE));
	EXPECT_EQ(MAP_FAILED, mremap(self->rw, 2 * PG, 3 * PG,
				     MREMAP_MAYMOVE));
	/* ... nor shrink (a split); partial munmap/mprotect split too. */
	EXPECT_EQ(MAP_FAILED, mremap(ro, 2 * PG, PG, 0));
	EXPECT_EQ(-1, munmap(ro + PG, PG));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, mprotect(self->rw, PG, PROT_READ));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ('B', ro[PG]);
	/* Moving the whole mapping is fine and keeps the contents. */
	q = mmap(NULL, 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, q);
	moved = mremap(ro, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, q);
	ASSERT_EQ(q, moved);
	EXPECT_EQ('B', ((unsigned char *)moved)[PG]);
	EXPECT_EQ(0, munmap(moved, 2 * PG));
}

TEST_F(mapped, bad_offsets_and_lengths)
{
	unsigned char *p;

	errno = 0;
	EXPECT_EQ(NULL, bl_map(self->reader, self->c.mmap_offset, 3 * PG,
			       PROT_READ));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, bl_map(self->owner, self->c.mmap_offset, 3 * PG,
			       PROT_READ | PROT_WRITE));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, bl_map(self->reader, 0, PG, PROT_READ));
	EXPECT_EQ(ENXIO, errno);
	EXPECT_EQ(NULL, bl_map(self->reader, self->c.mmap_offset + PG, PG,
			       PROT_READ));
	EXPECT_TRUE(errno == ENXIO || errno == EACCES || errno == EINVAL);
	EXPECT_EQ(NULL, bl_map(self->reader, (uint64_t)0x7ffff * PG, PG,
			       PROT_READ));
	EXPECT_EQ(ENXIO, errno);
	EXPECT_EQ(NULL, bl_map(self->reader, 1ULL << 40, PG, PROT_READ));
	EXPECT_EQ(ENXIO, errno);
	/* Private and executable mappings are refused. */
	p = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, self->reader,
		 self->c.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, bl_map(self->owner, self->c.mmap_offset, PG,
			       PROT_READ | PROT_EXEC));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, mprotect(self->rw, 2 * PG, PROT_READ | PROT_EXEC));
	/* A shorter mapping from the start is allowed. */
	p = bl_map(self->reader, self->c.mmap_offset, PG, PROT_READ);
	ASSERT_NE(NULL, p);
	EXPECT_EQ('B', p[0]);
	munmap(p, PG);
}

TEST_F(mapped, no_dontunmap_move)
{
	void *p = mremap(self->rw, 2 * PG, 2 * PG,
			 MREMAP_MAYMOVE | MREMAP_DONTUNMAP);

	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ('B', self->rw[0]);
}

/* Zapping one's own page table entries does not lose the slab. */
TEST_F(mapped, madv_dontneed_refaults_same_pages)
{
	unsigned char *ro = bl_map(self->reader, self->c.mmap_offset, 2 * PG,
				   PROT_READ);

	ASSERT_NE(NULL, ro);
	self->rw[PG] = 'z';
	ASSERT_EQ(0, madvise(self->rw, 2 * PG, MADV_DONTNEED));
	ASSERT_EQ(0, madvise(ro, 2 * PG, MADV_DONTNEED));
	EXPECT_EQ('z', self->rw[PG]);
	EXPECT_EQ('z', ro[PG]);
	EXPECT_EQ('B', ro[0]);
	self->rw[0] = 'w';	/* write fault on a shared mapping */
	EXPECT_EQ('w', ro[0]);
	munmap(ro, 2 * PG);
}

/* Slab memory works as a syscall buffer but is closed to GUP users. */
TEST_F(mapped, syscall_buffers_but_no_gup)
{
	struct iovec local, remote;
	char buf[16];
	int p[2];

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(8, write(p[1], self->rw, 8));		/* copy_from_user */
	ASSERT_EQ(8, read(p[0], self->rw + PG, 8));	/* copy_to_user */
	EXPECT_EQ(0, memcmp(self->rw, self->rw + PG, 8));
	close(p[0]);
	close(p[1]);
	local.iov_base = buf;
	local.iov_len = sizeof(buf);
	remote.iov_base = self->rw;
	remote.iov_len = sizeof(buf);
	EXPECT_EQ(-1, process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(mapped, owner_may_upgrade_own_mapping)
{
	unsigned char *p = bl_map(self->owner, self->c.mmap_offset, 2 * PG,
				  PROT_READ);

	ASSERT_NE(NULL, p);
	EXPECT_EQ(0, mprotect(p, 2 * PG, PROT_READ | PROT_WRITE));
	p[0] = 'o';
	EXPECT_EQ('o', self->rw[0]);
	munmap(p, 2 * PG);
}

TEST_F(mapped, fork_does_not_inherit)
{
	int status;
	pid_t pid;

	EXPECT_EQ(-1, madvise(self->rw, 2 * PG, MADV_DOFORK));
	EXPECT_EQ(EINVAL, errno);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* msync on an unmapped range fails with ENOMEM. */
		if (msync(self->rw, 2 * PG, MS_ASYNC) == 0)
			_exit(1);
		_exit(errno == ENOMEM ? 0 : 2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* The parent still has it. */
	EXPECT_EQ(0, msync(self->rw, 2 * PG, MS_ASYNC));
	EXPECT_EQ('B', self->rw[0]);
}

/* ------------------------------------------------ orphans and exit status */

TEST(sigkill_orphan_read_release_read)
{
	struct blamer_slab_info info;
	struct holder h;
	int fd = bl_open(O_RDWR), status;
	unsigned char *ro;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, holder_start(&h, 2 * PG, -1, -1, 0, 0));
	ro = bl_map(fd, h.id * PG, 2 * PG, PROT_READ);
	ASSERT_NE(NULL, ro);
	ASSERT_EQ(0, bl_find(fd, h.id, &info));
	EXPECT_EQ(BLAMER_SLAB_LIVE, info.state);
	EXPECT_EQ(h.pid, info.pid);
	ASSERT_EQ(0, kill(h.pid, SIGKILL));
	ASSERT_EQ(h.pid, waitpid(h.pid, &status, 0));
	close(h.go);
	EXPECT_TRUE(WIFSIGNALED(status));

	ASSERT_EQ(0, bl_find(fd, h.id, &info));
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
	EXPECT_TRUE(info.flags & BLAMER_SLAB_EXITED);
	EXPECT_EQ(SIGKILL, info.exit_signal);
	EXPECT_EQ(0, info.exit_code);
	EXPECT_FALSE(info.flags & BLAMER_SLAB_COREDUMP);
	EXPECT_LE(info.create_time_ns, info.orphan_time_ns);
	EXPECT_EQ(h.pid, info.pid);	/* the number is kept */
	EXPECT_EQ('B', ro[2 * PG - 1]);
	EXPECT_EQ(-ENOENT, bl_release(fd, 0));
	EXPECT_EQ(0, bl_release(fd, h.id));
	EXPECT_EQ(-ENOENT, bl_find(fd, h.id, &info));
	EXPECT_EQ(-ENOENT, bl_release(fd, h.id));
	/*
	 * The old mapping still reads the last contents, even after new
	 * slabs were allocated and written: its pages were not reused.
	 */
	for (int i = 0; i < 8; i++) {
		struct blamer_create c;
		unsigned char *q;

		ASSERT_EQ(0, bl_create(fd, 2 * PG, &c));
		q = bl_map(fd, c.mmap_offset, 2 * PG, PROT_READ | PROT_WRITE);
		ASSERT_NE(NULL, q);
		memset(q, 'X', 2 * PG);
		munmap(q, 2 * PG);
	}
	for (size_t i = 0; i < 2 * PG; i++)
		ASSERT_EQ('B', ro[i]);
	EXPECT_EQ(0, munmap(ro, 2 * PG));
	close(fd);
}

TEST(exit_code_recorded)
{
	struct blamer_slab_info info;
	struct holder h;
	int fd = bl_open(O_RDWR), status;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, holder_start(&h, PG, -1, -1, 42, 0));
	EXPECT_EQ(-EBUSY, bl_release(fd, h.id));	/* live */
	status = holder_finish(&h);
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(42, WEXITSTATUS(status));
	ASSERT_EQ(0, bl_find(fd, h.id, &info));
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
	EXPECT_TRUE(info.flags & BLAMER_SLAB_EXITED);
	EXPECT_EQ(42, info.exit_code);
	EXPECT_EQ(0, info.exit_signal);
	EXPECT_EQ(0, bl_release(fd, h.id));
	close(fd);
}

TEST(signal_with_core_dump)
{
	struct blamer_slab_info info;
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	char dir[] = "/tmp/blamer-core-XXXXXX", cwd[256];
	struct holder h;
	int fd = bl_open(O_RDWR), status;

	ASSERT_LE(0, fd);
	ASSERT_NE(NULL, getcwd(cwd, sizeof(cwd)));
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, chdir(dir));
	if (setrlimit(RLIMIT_CORE, &rl))
		SKIP(return, "cannot raise RLIMIT_CORE");
	ASSERT_EQ(0, holder_start(&h, PG, -1, -1, 0, SIGSEGV));
	status = holder_finish(&h);
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(SIGSEGV, WTERMSIG(status));
	ASSERT_EQ(0, bl_find(fd, h.id, &info));
	EXPECT_EQ(SIGSEGV, info.exit_signal);
	EXPECT_EQ(!!WCOREDUMP(status),
		  !!(info.flags & BLAMER_SLAB_COREDUMP));
	EXPECT_EQ(0, bl_release(fd, h.id));
	unlink("core");
	{
		char path[300];

		snprintf(path, sizeof(path), "core.%d", h.pid);
		unlink(path);
	}
	ASSERT_EQ(0, chdir(cwd));
	rmdir(dir);
	close(fd);
}

static void *exit_from_thread(void *arg)
{
	exit((int)(long)arg);
}

/*
 * Exits only once the main thread is gone: exit() racing with the main
 * thread's own pthread_exit() unwinding is a libc race, not what the test
 * is about, and it made the child die of a signal now and then.
 */
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
 * A multi-threaded owner: exit() from a secondary thread ends the group
 * with that code; a main thread that leaves with pthread_exit() while
 * another thread later calls exit(0) ends it with 0.
 */
TEST(exit_code_from_threads)
{
	struct blamer_slab_info info;
	int up[2], fd = bl_open(O_RDWR), status, round;
	uint64_t id;
	pid_t pid;

	ASSERT_LE(0, fd);
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
		ASSERT_EQ(0, bl_find(fd, id, &info));
		EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
		EXPECT_TRUE(info.flags & BLAMER_SLAB_EXITED);
		EXPECT_EQ(0, info.exit_signal);
		EXPECT_EQ(WEXITSTATUS(status), info.exit_code);
		EXPECT_EQ(round ? 0 : 5, info.exit_code);
		EXPECT_EQ(0, bl_release(fd, id));
	}
	close(fd);
}

/* The descriptor is closed early; the mapping keeps the file until exit. */
TEST(exit_recorded_through_last_mapping)
{
	struct blamer_slab_info info;
	int up[2], fd = bl_open(O_RDWR), status;
	uint64_t id;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(up));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct blamer_create c;
		int cfd = bl_open(O_RDWR);

		if (cfd < 0 || bl_create(cfd, PG, &c) ||
		    !bl_map(cfd, c.mmap_offset, PG, PROT_READ | PROT_WRITE))
			_exit(1);
		close(cfd);
		if (write(up[1], &c.id, sizeof(c.id)) != sizeof(c.id))
			_exit(1);
		_exit(7);
	}
	close(up[1]);
	ASSERT_EQ(sizeof(id), read(up[0], &id, sizeof(id)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, bl_find(fd, id, &info));
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
	EXPECT_TRUE(info.flags & BLAMER_SLAB_EXITED);
	EXPECT_EQ(7, info.exit_code);
	EXPECT_EQ(0, bl_release(fd, id));
	close(fd);
}

/* A descriptor shared with a child keeps the slab live past the owner. */
TEST(shared_fd_outlives_owner)
{
	struct blamer_slab_info info;
	int up[2], down[2], fd = bl_open(O_RDWR), status;
	uint64_t id;
	pid_t pid, grandchild;

	ASSERT_LE(0, fd);
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
		grandchild = fork();
		if (grandchild == 0) {
			/* Keeps cfd open until told to go. */
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
	ASSERT_EQ(0, bl_find(fd, id, &info));
	EXPECT_EQ(BLAMER_SLAB_LIVE, info.state);
	EXPECT_TRUE(info.flags & BLAMER_SLAB_EXITED);
	EXPECT_EQ(3, info.exit_code);
	EXPECT_EQ(-EBUSY, bl_release(fd, id));
	ASSERT_EQ(1, write(down[1], "x", 1));
	/* The grandchild is reparented; poll until its release orphans it. */
	for (int i = 0; i < 200; i++) {
		ASSERT_EQ(0, bl_find(fd, id, &info));
		if (info.state == BLAMER_SLAB_ORPHAN)
			break;
		usleep(10000);
	}
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
	EXPECT_EQ(3, info.exit_code);
	EXPECT_EQ(0, bl_release(fd, id));
	close(fd);
}

TEST(close_without_exit_is_orphan_without_status)
{
	struct blamer_slab_info info;
	struct blamer_create c;
	int fd = bl_open(O_RDWR), fd2 = bl_open(O_RDWR);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd2, PG, &c));
	close(fd2);
	ASSERT_EQ(0, bl_find(fd, c.id, &info));
	EXPECT_EQ(BLAMER_SLAB_ORPHAN, info.state);
	EXPECT_FALSE(info.flags & BLAMER_SLAB_EXITED);
	EXPECT_FALSE(info.flags & BLAMER_SLAB_MINE);
	EXPECT_EQ(0, bl_release(fd, c.id));
	close(fd);
}

TEST(eviction_under_retention_limit)
{
	struct blamer_slab_info info;
	struct blamer_create c[4];
	unsigned char *p, *ro;
	long long old;
	int fd = bl_open(O_RDWR), fd2, i;

	if (geteuid())
		SKIP(return, "needs root");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_param_get("max_orphans", &old));
	ASSERT_EQ(0, bl_param_set("max_orphans", 2));
	fd2 = bl_open(O_RDWR);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, bl_create(fd2, PG, &c[i]));
	p = bl_map(fd2, c[0].mmap_offset, PG, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	p[0] = 'e';
	/* The mapping holds the file: unmap later through a reader's map. */
	ro = bl_map(fd, c[0].mmap_offset, PG, PROT_READ);
	ASSERT_NE(NULL, ro);
	munmap(p, PG);
	close(fd2);
	EXPECT_EQ(-ENOENT, bl_find(fd, c[0].id, &info));
	EXPECT_EQ('e', ro[0]);	/* evicted while mapped: still readable */
	munmap(ro, PG);
	EXPECT_EQ(-ENOENT, bl_find(fd, c[1].id, &info));
	EXPECT_EQ(0, bl_find(fd, c[2].id, &info));
	EXPECT_EQ(0, bl_find(fd, c[3].id, &info));
	ASSERT_EQ(0, bl_param_set("max_orphans", 0));
	fd2 = bl_open(O_RDWR);
	ASSERT_EQ(0, bl_create(fd2, PG, &c[0]));
	close(fd2);	/* an orphan beyond a zero limit goes at once */
	EXPECT_EQ(-ENOENT, bl_find(fd, c[0].id, &info));
	EXPECT_EQ(-ENOENT, bl_find(fd, c[3].id, &info));
	ASSERT_EQ(0, bl_param_set("max_orphans", old));
	close(fd);
}

/* ------------------------------------------------------------ permissions */

TEST(cross_user_rules)
{
	struct holder h;
	long long oldgid;
	int fd = bl_open(O_RDWR);

	if (geteuid())
		SKIP(return, "needs root");
	ASSERT_LE(0, fd);
	/* A live slab of uid 1000. */
	ASSERT_EQ(0, holder_start(&h, PG, 1000, 1000, 0, 0));
	EXPECT_EQ(0, run_as(1000, 1000, child_map, &h.id));	/* same ids */
	EXPECT_EQ(EACCES, run_as(1001, 1001, child_map, &h.id));
	EXPECT_EQ(EACCES, run_as(1000, 1001, child_map, &h.id)); /* gid */
	EXPECT_EQ(1, run_as(1001, 1001, child_list_sees, &h.id));
	EXPECT_EQ(0, run_as(1000, 1000, child_list_sees, &h.id));
	EXPECT_EQ(EACCES, run_as(1001, 1001, child_release, &h.id));
	EXPECT_EQ(0, try_map_ro(h.id));		/* root: CAP_SYS_PTRACE */
	/* The reader group parameter opens it to uid 1001's group. */
	ASSERT_EQ(0, bl_param_get("reader_gid", &oldgid));
	ASSERT_EQ(0, bl_param_set("reader_gid", 1001));
	EXPECT_EQ(0, run_as(1001, 1001, child_map, &h.id));
	ASSERT_EQ(0, bl_param_set("reader_gid", oldgid));
	EXPECT_EQ(EACCES, run_as(1001, 1001, child_map, &h.id));

	/* Orphaned: the owner's uid is enough, other uids still refused. */
	holder_finish(&h);
	EXPECT_EQ(0, run_as(1000, 1001, child_map, &h.id));
	EXPECT_EQ(EACCES, run_as(1001, 1001, child_map, &h.id));
	EXPECT_EQ(EACCES, run_as(1001, 1001, child_release, &h.id));
	EXPECT_EQ(0, run_as(1000, 1000, child_release, &h.id));
	EXPECT_EQ(ENOENT, run_as(1000, 1000, child_release, &h.id));

	/* Root's slab is closed to unprivileged users, live or orphaned. */
	ASSERT_EQ(0, holder_start(&h, PG, -1, -1, 0, 0));
	EXPECT_EQ(EACCES, run_as(1000, 1000, child_map, &h.id));
	holder_finish(&h);
	EXPECT_EQ(EACCES, run_as(1000, 1000, child_map, &h.id));
	EXPECT_EQ(EACCES, run_as(1000, 1000, child_release, &h.id));
	EXPECT_EQ(0, bl_release(fd, h.id));
	close(fd);
}

static int ns_child(void *arg)
{
	struct blamer_slab_info info;
	struct blamer_create c;
	uint64_t parent_id = *(uint64_t *)arg;
	int fd = bl_open(O_RDWR);

	if (getpid() != 1)
		return 10;
	if (fd < 0 || bl_create(fd, PG, &c))
		return 11;
	if (bl_find(fd, c.id, &info) || info.pid != 1)
		return 12;
	if (bl_find(fd, parent_id, &info))
		return 13;
	if (info.pid != 0 || !(info.flags & BLAMER_SLAB_PID_GONE))
		return 14;
	return 0;
}

TEST(pid_namespace_translation)
{
	struct blamer_create c;
	int fd = bl_open(O_RDWR), status;
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd, PG, &c));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		pid_t inner;

		if (unshare(CLONE_NEWPID))
			_exit(20);
		inner = fork();
		if (inner < 0)
			_exit(21);
		if (!inner)
			_exit(ns_child(&c.id));
		if (waitpid(inner, &status, 0) != inner || !WIFEXITED(status))
			_exit(22);
		_exit(WEXITSTATUS(status));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(fd);
}

/* -------------------------------------------------------------- listing */

TEST(list_capacity_and_entry_size)
{
	struct blamer_slab_info v[2][2];
	struct blamer_create c;
	struct blamer_list l;
	unsigned char big[3][BLAMER_SLAB_INFO_SIZE_VER0 + 16];
	int fd = bl_open(O_RDWR), i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd, PG, &c));
	ASSERT_EQ(0, bl_create(fd, PG, &c));
	memset(&l, 0, sizeof(l));
	l.size = sizeof(l);
	l.info_size = sizeof(v[0][0]);
	l.slabs = (uintptr_t)v;
	l.capacity = 0;
	ASSERT_EQ(0, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(0, l.count);
	EXPECT_LE(2, l.total);
	l.capacity = 1;
	ASSERT_EQ(0, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(1, l.count);
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
	l.info_size = sizeof(v[0][0]);
	l.flags = 1;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(EINVAL, errno);
	l.flags = 0;
	l.slabs = 16;
	l.capacity = 2;
	EXPECT_EQ(-1, ioctl(fd, BLAMER_IOC_LIST, &l));
	EXPECT_EQ(EFAULT, errno);
	close(fd);
}

TEST(proc_listing)
{
	struct blamer_create c;
	char buf[65536], want[64];
	int fd = bl_open(O_RDWR), pfd;
	ssize_t n, len = 0;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_create(fd, PG, &c));
	pfd = open("/proc/blamer", O_RDONLY);
	if (geteuid()) {
		EXPECT_EQ(-1, pfd);
		EXPECT_EQ(EACCES, errno);
		close(fd);
		return;
	}
	ASSERT_LE(0, pfd);
	while ((n = read(pfd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	buf[len] = 0;
	close(pfd);
	snprintf(want, sizeof(want), "\n%llu 4096 live ",
		 (unsigned long long)c.id);
	EXPECT_NE(NULL, strstr(buf, want));
	EXPECT_NE(NULL, strstr(buf, "# slabs "));
	close(fd);
}

/* A hostile command name cannot forge lines or fields in /proc/blamer. */
static int read_proc_has(const char *needle)
{
	static char buf[65536];
	ssize_t n, len = 0;
	int pfd = open("/proc/blamer", O_RDONLY);

	if (pfd < 0)
		return 0;
	while ((n = read(pfd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	buf[len] = 0;
	close(pfd);
	return strstr(buf, needle) != NULL;
}

TEST(proc_listing_escapes_comm)
{
	struct holder h;
	int status;
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root");
	/* The holder inherits the name set in this throwaway child. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int found;

		prctl(PR_SET_NAME, "a b\nc\\d");
		if (holder_start(&h, PG, -1, -1, 0, 0))
			_exit(1);
		found = read_proc_has(" a\\040b\\012c\\134d ");
		holder_finish(&h);
		_exit(found ? 0 : 2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* --------------------------------------------------------------- events */

TEST(poll_wakeups)
{
	struct pollfd pfd;
	struct blamer_slab_info *v;
	struct blamer_create c;
	int fd = bl_open(O_RDONLY), fd2 = bl_open(O_RDWR), status, n;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, fd2);
	pfd.fd = fd;
	pfd.events = POLLIN;
	n = bl_list(fd, &v, NULL);
	ASSERT_LE(0, n);
	free(v);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	/* A creation elsewhere wakes a sleeping poller. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		usleep(200000);
		_exit(bl_create(fd2, PG, &c) ? 1 : 0);
	}
	EXPECT_EQ(1, poll(&pfd, 1, 5000));
	EXPECT_TRUE(pfd.revents & POLLIN);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Still pending until listed; listing clears it. */
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	n = bl_list(fd, &v, NULL);
	free(v);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	/* Orphaning is an event too. */
	close(fd2);
	EXPECT_EQ(1, poll(&pfd, 1, 1000));
	n = bl_list(fd, &v, NULL);
	free(v);
	EXPECT_EQ(0, poll(&pfd, 1, 100));
	close(fd);
}

/* ---------------------------------------------------------- concurrency */

#define THREADS 8
#define ROUNDS 100

static void *churn(void *arg)
{
	long bad = 0;
	int r, i;

	(void)arg;
	for (r = 0; r < ROUNDS; r++) {
		struct blamer_create c[3];
		int fd = bl_open(O_RDWR), n = r % 3 + 1, err;
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
			p = bl_map(fd, c[i].mmap_offset, c[i].length,
				   PROT_READ | PROT_WRITE);
			if (!p) {
				bad++;
				continue;
			}
			p[0] = (unsigned char)r;
			munmap(p, c[i].length);
		}
		close(fd);
		/*
		 * Map each orphan, release it while mapped, read the mapping.
		 * Another thread's orphans may have evicted ours (ENXIO,
		 * ENOENT): eviction is part of the race being tested.
		 */
		fd = bl_open(O_RDONLY);
		for (i = 0; i < n; i++) {
			p = bl_map(fd, c[i].mmap_offset, c[i].length, PROT_READ);
			if (!p && errno != ENXIO)
				bad++;
			err = bl_release(fd, c[i].id);
			if (err && err != -ENOENT)
				bad++;
			if (p) {
				if (p[0] != (unsigned char)r)
					bad++;
				munmap(p, c[i].length);
			}
		}
		close(fd);
	}
	return (void *)bad;
}

/*
 * The harness's default 30 s is too short for this test on the debug
 * kernels (KASAN and lockdep under TCG, about 8 times slower than Debian's
 * kernels; over 30 s on a loaded host): a fixture lets it have its own.
 */
FIXTURE(concurrency) {};
FIXTURE_SETUP(concurrency) {}
FIXTURE_TEARDOWN(concurrency) {}

TEST_F_TIMEOUT(concurrency, threads_create_release, 300)
{
	struct blamer_status before, after;
	pthread_t t[THREADS];
	void *ret;
	int fd = bl_open(O_RDONLY), i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, bl_status(fd, &before));
	for (i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, churn, NULL));
	for (i = 0; i < THREADS; i++) {
		ASSERT_EQ(0, pthread_join(t[i], &ret));
		EXPECT_EQ(0, (long)ret);
	}
	ASSERT_EQ(0, bl_status(fd, &after));
	/* Everything created was released or evicted. */
	EXPECT_GE(before.slabs, after.slabs);
	close(fd);
}

TEST_HARNESS_MAIN
