// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/blamer selftests: mapping slabs. Who maps writable, that a read-only
 * mapping stays read-only and never executable, offsets and lengths,
 * mremap/munmap/madvise, fork, no io_uring fixed buffer, no userfaultfd
 * write protection, no reopening through /proc, and that mappings outlive
 * the slab.
 */
#include <setjmp.h>
#include <linux/io_uring.h>
#include <linux/userfaultfd.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "blamer_test.h"

FIXTURE(mapped) {
	int dev;
	int ro;
	struct blamer_create c;
	unsigned char *rw;
};

FIXTURE_SETUP(mapped)
{
	self->dev = bl_open(O_RDWR);
	ASSERT_LE(0, self->dev);
	ASSERT_EQ(0, bl_create(self->dev, 2 * PG, &self->c));
	self->rw = bl_map(self->c.fd, 2 * PG, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, self->rw);
	memset(self->rw, 'B', 2 * PG);
	self->ro = bl_open_slab(self->dev, self->c.id);
	ASSERT_LE(0, self->ro);
}

FIXTURE_TEARDOWN(mapped)
{
	munmap(self->rw, 2 * PG);
	close(self->ro);
	close(self->c.fd);
	close(self->dev);
}

TEST_F(mapped, reader_sees_writes)
{
	unsigned char *ro = bl_map(self->ro, 2 * PG, PROT_READ);

	ASSERT_NE(NULL, ro);
	EXPECT_EQ('B', ro[PG + 5]);
	self->rw[PG + 5] = 'x';
	EXPECT_EQ('x', ro[PG + 5]);
	munmap(ro, 2 * PG);
}

/* A read-only file maps read-only: the VFS refuses and keeps it so. */
TEST_F(mapped, readonly_file_cannot_write)
{
	unsigned char *ro;

	errno = 0;
	EXPECT_EQ(NULL, bl_map(self->ro, 2 * PG, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(NULL, bl_map(self->ro, 2 * PG, PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	ro = bl_map(self->ro, 2 * PG, PROT_READ);
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-1, mprotect(ro, 2 * PG, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ('B', ro[0]);
	munmap(ro, 2 * PG);
}

TEST_F(mapped, never_executable)
{
	unsigned char *ro = bl_map(self->ro, PG, PROT_READ);

	ASSERT_NE(NULL, ro);
	errno = 0;
	EXPECT_EQ(NULL, bl_map(self->c.fd, PG, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(NULL, bl_map(self->ro, PG, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, mprotect(self->rw, 2 * PG, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect(ro, PG, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	munmap(ro, PG);
}

/* Whether the mapping at @p shows up executable in /proc/self/maps. */
static int mapped_exec(void *p)
{
	char line[512], want[32];
	FILE *f = fopen("/proc/self/maps", "r");
	int ret = -1;

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "%lx-", (unsigned long)p);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, want, strlen(want)))
			ret = strchr(line, ' ')[3] == 'x';
	fclose(f);
	return ret;
}

/* READ_IMPLIES_EXEC does not turn a read-only map into a refused one. */
TEST_F(mapped, read_implies_exec_personality)
{
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		void *p;

		if (personality(READ_IMPLIES_EXEC) < 0)
			_exit(10);
		p = bl_map(self->ro, PG, PROT_READ);
		if (!p)
			_exit(errno);
		_exit(mapped_exec(p) == 0 ? 0 : 11);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* The offset is an offset: any page of the slab, never beyond it. */
TEST_F(mapped, offsets_and_lengths)
{
	unsigned char *p;

	p = bl_map_at(self->ro, PG, PG, PROT_READ);
	ASSERT_NE(NULL, p);
	self->rw[PG] = 's';
	EXPECT_EQ('s', p[0]);
	munmap(p, PG);
	p = bl_map_at(self->c.fd, PG, PG, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, p);
	p[1] = 't';
	EXPECT_EQ('t', self->rw[PG + 1]);
	munmap(p, PG);
	errno = 0;
	EXPECT_EQ(NULL, bl_map(self->ro, 3 * PG, PROT_READ));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, bl_map_at(self->ro, PG, 2 * PG, PROT_READ));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, bl_map_at(self->ro, 2 * PG, PG, PROT_READ));
	EXPECT_EQ(EINVAL, errno);
	if (sizeof(off_t) >= 8) {	/* a 32-bit off_t cannot say it */
		EXPECT_EQ(NULL, bl_map_at(self->ro, 1ULL << 40, PG, PROT_READ));
		EXPECT_EQ(EINVAL, errno);
	}
	p = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, self->ro, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
}

/* Shrinking, splitting and moving are fine; growing is not. */
TEST_F(mapped, mremap_munmap_mprotect)
{
	unsigned char *ro = bl_map(self->ro, 2 * PG, PROT_READ), *moved;
	void *q;

	ASSERT_NE(NULL, ro);
	/* VM_DONTEXPAND: growth is EFAULT, DONTUNMAP moves EINVAL. */
	EXPECT_EQ(MAP_FAILED, mremap(ro, 2 * PG, 3 * PG, 0));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(MAP_FAILED, mremap(ro, 2 * PG, 4 * PG, MREMAP_MAYMOVE));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(MAP_FAILED, mremap(self->rw, 2 * PG, 3 * PG,
				     MREMAP_MAYMOVE));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(MAP_FAILED, mremap(self->rw, 2 * PG, 2 * PG,
				     MREMAP_MAYMOVE | MREMAP_DONTUNMAP));
	EXPECT_EQ(EINVAL, errno);
	q = mmap(NULL, 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, q);
	moved = mremap(ro, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, q);
	ASSERT_EQ(q, moved);
	EXPECT_EQ('B', moved[PG]);
	EXPECT_EQ(0, munmap(moved, PG));	/* a split */
	EXPECT_EQ('B', moved[PG]);
	self->rw[PG] = 'y';
	EXPECT_EQ('y', moved[PG]);
	EXPECT_EQ(0, munmap(moved + PG, PG));
	EXPECT_EQ(0, mprotect(self->rw, PG, PROT_READ));
	EXPECT_EQ(0, mprotect(self->rw, PG, PROT_READ | PROT_WRITE));
	self->rw[0] = 'z';
}

/* Zapping one's own page table entries does not lose the slab. */
TEST_F(mapped, madv_dontneed_refaults_same_pages)
{
	unsigned char *ro = bl_map(self->ro, 2 * PG, PROT_READ);

	ASSERT_NE(NULL, ro);
	self->rw[PG] = 'z';
	ASSERT_EQ(0, madvise(self->rw, 2 * PG, MADV_DONTNEED));
	ASSERT_EQ(0, madvise(ro, 2 * PG, MADV_DONTNEED));
	EXPECT_EQ('z', self->rw[PG]);
	EXPECT_EQ('z', ro[PG]);
	EXPECT_EQ('B', ro[0]);
	self->rw[0] = 'w';
	EXPECT_EQ('w', ro[0]);
	munmap(ro, 2 * PG);
}

/*
 * Slab memory is ordinary memory to the kernel: get_user_pages() works
 * (process_vm_readv(), vmsplice()), and what a pipe holds stays valid
 * after the slab is released and unmapped, because pages are refcounted.
 */
TEST_F(mapped, gup_and_splice)
{
	struct iovec local, remote, iov;
	char buf[16];
	int p[2];
	ssize_t n;

	local.iov_base = buf;
	local.iov_len = sizeof(buf);
	remote.iov_base = self->rw;
	remote.iov_len = sizeof(buf);
	memcpy(self->rw, "process_vm_read", 16);
	/* Kernels without CONFIG_CROSS_MEMORY_ATTACH lack the call. */
	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	EXPECT_TRUE(n == 16 || errno != EFAULT);
	EXPECT_TRUE(n < 0 || !memcmp(buf, "process_vm_read", 16));
	ASSERT_EQ(0, pipe(p));
	memcpy(self->rw, "spliced!", 8);
	iov.iov_base = self->rw;
	iov.iov_len = PG;
	ASSERT_EQ(PG, vmsplice(p[1], &iov, 1, 0));
	ASSERT_EQ(0, bl_release(self->dev, self->c.id));
	munmap(self->rw, 2 * PG);
	self->rw = NULL;
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(8, read(p[0], buf, 8));
	EXPECT_EQ(0, memcmp(buf, "spliced!", 8));
	close(p[0]);
	close(p[1]);
}

/*
 * No long-term pin of a slab's pages for writing: an io_uring fixed
 * buffer would write them whatever the owner's mappings allow, so a ring
 * passed to another process could write an orphan after its owner died.
 * The kernel refuses it for this mapping (6.1: io_uring takes no file
 * pages but shmem's; 6.12: no long-term writable pin of a mapping that
 * tracks its writes), and takes anonymous memory, the control.
 */
TEST_F(mapped, no_io_uring_fixed_buffer)
{
	struct io_uring_params params = { 0 };
	struct iovec iov = { self->rw, PG };
	void *anon;
	int ring;

	ring = syscall(__NR_io_uring_setup, 4, &params);
	if (ring < 0)
		SKIP(return, "no io_uring here: %s", strerror(errno));
	errno = 0;
	EXPECT_EQ(-1, syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS,
			      &iov, 1));
	EXPECT_TRUE(errno == EOPNOTSUPP || errno == EFAULT)
		TH_LOG("registering the slab: %s", strerror(errno));
	anon = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	ASSERT_NE(MAP_FAILED, anon);
	iov.iov_base = anon;
	EXPECT_EQ(0, syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS,
			     &iov, 1))
		TH_LOG("registering anonymous memory: %s", strerror(errno));
	close(ring);
	munmap(anon, PG);
}

TEST_F(mapped, owner_may_upgrade_own_mapping)
{
	unsigned char *p = bl_map(self->c.fd, 2 * PG, PROT_READ);

	ASSERT_NE(NULL, p);
	EXPECT_EQ(0, mprotect(p, 2 * PG, PROT_READ | PROT_WRITE));
	p[0] = 'o';
	EXPECT_EQ('o', self->rw[0]);
	munmap(p, 2 * PG);
}

TEST_F(mapped, fork_does_not_inherit)
{
	int status;
	pid_t pid = fork();

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
	EXPECT_EQ(0, msync(self->rw, 2 * PG, MS_ASYNC));
	EXPECT_EQ('B', self->rw[0]);
}

static sigjmp_buf bus_env;

static void on_sigbus(int sig)
{
	siglongjmp(bus_env, sig);
}

/*
 * MADV_DOFORK hands a child the mapping, but a child is not the creator:
 * it reads, and its first write is a SIGBUS.
 */
TEST_F(mapped, dofork_child_reads_but_cannot_write)
{
	int status;
	pid_t pid;

	ASSERT_EQ(0, madvise(self->rw, 2 * PG, MADV_DOFORK));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (bl_peek(self->rw + 1) != 'B')
			_exit(1);
		signal(SIGBUS, on_sigbus);
		if (sigsetjmp(bus_env, 1))
			_exit(0);
		bl_poke(self->rw + 1, 'c');
		_exit(2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ('B', self->rw[1]);
	self->rw[1] = 'p';	/* the creator still writes */
	EXPECT_EQ('p', self->rw[1]);
}

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC 0x8000	/* 6.7 on */
#endif

/*
 * A userfaultfd of this process with write-protect mode on @p, asking
 * for WP_ASYNC where the kernel has it (6.7 on): 0 if the range
 * registered, -errno if refused, 1 if the kernel has no userfaultfd or
 * no write-protect mode for it (nothing to check).
 */
static int uffd_wp_register(void *p, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register r = {
		.range = { .start = (unsigned long)p, .len = len },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	int u, err = 0;

	u = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (u < 0)
		return 1;
	if (ioctl(u, UFFDIO_API, &api) ||
	    !(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
		close(u);
		return 1;
	}
	close(u);
	u = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (u < 0)
		return 1;
	api.api = UFFD_API;
	api.features = api.features & UFFD_FEATURE_WP_ASYNC;
	if (ioctl(u, UFFDIO_API, &api))
		err = 1;
	else if (ioctl(u, UFFDIO_REGISTER, &r))
		err = -errno;
	close(u);
	return err;
}

/*
 * No userfaultfd on a slab mapping. Since 6.7 write-protect mode with
 * WP_ASYNC registers any memory but VM_SPECIAL, and fork() copies the
 * page tables of a write-protect-registered mapping (vma_needs_copy())
 * without write-protecting those of a shared one, so a MADV_DOFORK child
 * would inherit the creator's writable entries and write without
 * ->page_mkwrite asking. VM_DONTEXPAND makes slab mappings VM_SPECIAL:
 * the registration is refused, for the writer's mapping and a reader's.
 * (Inheriting registrations also needs UFFD_FEATURE_EVENT_FORK, which
 * 6.12 gives only with CAP_SYS_PTRACE.) Anonymous memory, the control,
 * registers.
 */
TEST_F(mapped, no_userfaultfd_write_protect)
{
	unsigned char *ro = bl_map(self->ro, 2 * PG, PROT_READ);
	void *anon = mmap(NULL, PG, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ctl;

	ASSERT_NE(NULL, ro);
	ASSERT_NE(MAP_FAILED, anon);
	ctl = uffd_wp_register(anon, PG);
	if (ctl == 1) {
		munmap(ro, 2 * PG);
		munmap(anon, PG);
		SKIP(return, "no userfaultfd write-protect mode here");
	}
	EXPECT_EQ(0, ctl);
	EXPECT_EQ(-EINVAL, uffd_wp_register(self->rw, 2 * PG));
	EXPECT_NE(0, uffd_wp_register(ro, 2 * PG));
	munmap(ro, 2 * PG);
	munmap(anon, PG);
}

/*
 * A slab file cannot be opened again by path (/proc/self/fd/N): its
 * inode has no open, so a read-only descriptor never becomes a
 * writable one, nor a passed one a new one with its holder's rights.
 */
TEST_F(mapped, no_reopen_through_proc)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", self->ro);
	fd = open(path, O_RDWR);
	EXPECT_EQ(-1, fd);
	if (fd >= 0)
		close(fd);
	fd = open(path, O_RDONLY);
	EXPECT_EQ(-1, fd);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", self->c.fd);
	fd = open(path, O_RDONLY);
	EXPECT_EQ(-1, fd);
	if (fd >= 0)
		close(fd);
}

/* A mapping keeps its pages after the slab is released. */
TEST_F(mapped, mapping_outlives_release)
{
	unsigned char *ro = bl_map(self->ro, 2 * PG, PROT_READ), *q;
	struct blamer_create c;
	size_t i;
	int n;

	ASSERT_NE(NULL, ro);
	ASSERT_EQ(0, bl_release(self->dev, self->c.id));
	EXPECT_EQ(-ENOENT, bl_release(self->dev, self->c.id));
	EXPECT_EQ(-ENOENT, bl_open_slab(self->dev, self->c.id));
	for (n = 0; n < 8; n++) {
		ASSERT_EQ(0, bl_create(self->dev, 2 * PG, &c));
		q = bl_map(c.fd, 2 * PG, PROT_READ | PROT_WRITE);
		ASSERT_NE(NULL, q);
		memset(q, 'X', 2 * PG);
		munmap(q, 2 * PG);
		close(c.fd);
		ASSERT_EQ(0, bl_release(self->dev, c.id));
	}
	for (i = 0; i < 2 * PG; i++)
		ASSERT_EQ('B', ro[i]);
	/* The writer's own mapping too. */
	self->rw[0] = 'a';
	EXPECT_EQ('a', ro[0]);
	munmap(ro, 2 * PG);
}

/* /proc/PID/maps names the slab. */
TEST_F(mapped, maps_names_the_slab)
{
	char line[512], want[64];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	ASSERT_NE(NULL, f);
	snprintf(want, sizeof(want), "blamer:%llu",
		 (unsigned long long)self->c.id);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, want))
			found = 1;
	fclose(f);
	EXPECT_TRUE(found);
}

int main(int argc, char **argv)
{
	return bt_main(argc, argv);
}
