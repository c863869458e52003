// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/blamer selftests: a slab's pages. By default each page is
 * allocated at the owner's first touch; a reader maps a page nobody
 * wrote as a hole (a shared zero page) and allocates nothing. A slab
 * reads as zeroes everywhere, and first touches of the same pages racing
 * between the owner's writes and a reader's reads (two threads of one
 * process, and two processes) end with one page each: the owner's write
 * takes the hole out of the reader's mapping, so the reader sees the
 * owner's bytes. The race tests run until enough rounds did race (the
 * reader saw a hole after the owner had begun), so a run whose threads
 * never met fails instead of passing on nothing. With
 * BLAMER_CREATE_POPULATE every page is allocated at creation; other flag
 * bits are EINVAL. The byte limits count the whole size from creation
 * either way. (Memory cgroup charges: vm-module.sh.)
 */
#include "blamer_test.h"

/* 1 MiB: within the test bed's max_slab_bytes (4 MiB). */
#define NPAGES 256
#define LEN ((__u64)NPAGES * PG)
/* At least ROUNDS rounds, until RACED_ROUNDS of them raced; at most MAX_ROUNDS. */
#define ROUNDS 8
#define RACED_ROUNDS 4
#define MAX_ROUNDS 512

static const unsigned char zero_page[PG];

/* The byte the owner writes into page @i, at offset off_of(@i). */
static unsigned char val_of(unsigned long i)
{
	return (unsigned char)(i * 7 + 1) | 1;
}

static size_t off_of(unsigned long i)
{
	return (i * 37) % PG;
}

/* The number of pages of @p (@n of them) that are not all zero. */
static unsigned long nonzero_pages(const unsigned char *p, unsigned long n)
{
	unsigned long i, bad = 0;

	for (i = 0; i < n; i++)
		if (memcmp(p + i * PG, zero_page, PG))
			bad++;
	return bad;
}

static long long user_bytes(int dev)
{
	struct blamer_status st;

	return bl_status(dev, &st) ? -1 : (long long)st.user_bytes;
}

static void reads_zeroes(struct __test_metadata *_metadata, __u32 flags)
{
	struct blamer_create c;
	unsigned char *rw, *ro;
	long long before;
	int dev = bl_open(O_RDWR), sfd;

	ASSERT_LE(0, dev);
	before = user_bytes(dev);
	ASSERT_LE(0, before);
	ASSERT_EQ(0, bl_create_flags(dev, LEN - 100, flags, &c));
	EXPECT_EQ(LEN, c.length);
	/* The account is charged the whole size at creation. */
	EXPECT_EQ(before + (long long)LEN, user_bytes(dev));
	sfd = bl_open_slab(dev, c.id);
	ASSERT_LE(0, sfd);
	ro = bl_map(sfd, LEN, PROT_READ);
	ASSERT_NE(NULL, ro);
	/* A reader first, every byte, then the owner's own mapping. */
	EXPECT_EQ(0, nonzero_pages(ro, NPAGES));
	rw = bl_map(c.fd, LEN, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, rw);
	EXPECT_EQ(0, nonzero_pages(rw, NPAGES));
	/* The owner's first write replaces the hole the reader mapped. */
	rw[7 * PG + 5] = 'x';
	EXPECT_EQ('x', ro[7 * PG + 5]);
	EXPECT_EQ(1, nonzero_pages(ro, NPAGES));
	/* And a page the owner touches first is the reader's. */
	munmap(ro, LEN);
	munmap(rw, LEN);
	rw = bl_map(c.fd, LEN, PROT_READ | PROT_WRITE);
	ro = bl_map(sfd, LEN, PROT_READ);
	ASSERT_NE(NULL, rw);
	ASSERT_NE(NULL, ro);
	EXPECT_EQ('x', rw[7 * PG + 5]);
	EXPECT_EQ(1, nonzero_pages(rw, NPAGES));
	munmap(ro, LEN);
	munmap(rw, LEN);
	close(sfd);
	close(c.fd);
	EXPECT_EQ(0, bl_release(dev, c.id));
	EXPECT_EQ(before, user_bytes(dev));
	close(dev);
}

TEST(lazy_slab_reads_zeroes)
{
	reads_zeroes(_metadata, 0);
}

TEST(populated_slab_reads_zeroes)
{
	reads_zeroes(_metadata, BLAMER_CREATE_POPULATE);
}

/* Every other bit, alone or with POPULATE: EINVAL, and no slab. */
TEST(unknown_create_flags)
{
	struct blamer_status a, b;
	struct blamer_create c;
	int dev = bl_open(O_RDWR), bit;

	ASSERT_LE(0, dev);
	ASSERT_EQ(0, bl_status(dev, &a));
	for (bit = 1; bit < 32; bit++) {
		EXPECT_EQ(-EINVAL, bl_create_flags(dev, PG, 1U << bit, &c))
			TH_LOG("flag bit %d", bit);
		EXPECT_EQ(-EINVAL, bl_create_flags(dev, PG,
						   BLAMER_CREATE_POPULATE |
						   1U << bit, &c))
			TH_LOG("flag bit %d with POPULATE", bit);
	}
	EXPECT_EQ(-EINVAL, bl_create_flags(dev, 0, BLAMER_CREATE_POPULATE, &c));
	ASSERT_EQ(0, bl_status(dev, &b));
	EXPECT_EQ(a.user_slabs, b.user_slabs);
	EXPECT_EQ(a.user_bytes, b.user_bytes);
	close(dev);
}

/* ------------------------------------------------ racing first touches */

struct race {
	unsigned char *rw;
	const unsigned char *ro;
	pthread_barrier_t start;
	unsigned long seen_zero, seen_val, seen_bad;
};

static void owner_writes(unsigned char *rw)
{
	unsigned long i;

	for (i = 0; i < NPAGES; i++)
		bl_poke(rw + i * PG + off_of(i), val_of(i));
}

/*
 * Waits for the owner's first write (page 0), then reads the other pages
 * from the last down, against the owner's order: each byte is either
 * still zero or the owner's; counts which. The round raced if a page
 * still read zero: the reader ran while the owner wrote, and they met
 * on a page between.
 */
static void reader_reads(const unsigned char *ro, unsigned long *zero,
			 unsigned long *val, unsigned long *bad)
{
	unsigned long i;
	unsigned char v;

	/*
	 * Bounded: a write the reader never sees (the promise broken) is
	 * counted bad, not a hang until the VM's timeout.
	 */
	for (i = 0; bl_peek(ro + off_of(0)) != val_of(0); i++)
		if (i == 1UL << 32) {
			(*bad)++;
			return;
		}
	for (i = NPAGES - 1; i > 0; i--) {
		v = bl_peek(ro + i * PG + off_of(i));
		if (!v)
			(*zero)++;
		else if (v == val_of(i))
			(*val)++;
		else
			(*bad)++;
	}
}

/* Whether to play round @k, @raced of them so far having raced. */
static bool more_rounds(int k, int raced)
{
	return k < ROUNDS || (raced < RACED_ROUNDS && k < MAX_ROUNDS);
}

/* After both: every page holds the owner's byte, as the reader sees it. */
static unsigned long pages_without_owner_bytes(const unsigned char *ro)
{
	unsigned long i, bad = 0;

	for (i = 0; i < NPAGES; i++)
		if (bl_peek(ro + i * PG + off_of(i)) != val_of(i))
			bad++;
	return bad;
}

static void *reader_thread(void *arg)
{
	struct race *r = arg;

	pthread_barrier_wait(&r->start);
	reader_reads(r->ro, &r->seen_zero, &r->seen_val, &r->seen_bad);
	return NULL;
}

TEST(first_touch_race_threads)
{
	unsigned long zero = 0, val = 0;
	struct blamer_create c;
	struct race r;
	pthread_t t;
	int dev = bl_open(O_RDWR), sfd, k, raced = 0;

	ASSERT_LE(0, dev);
	for (k = 0; more_rounds(k, raced); k++) {
		memset(&r, 0, sizeof(r));
		ASSERT_EQ(0, bl_create(dev, LEN, &c));
		sfd = bl_open_slab(dev, c.id);
		ASSERT_LE(0, sfd);
		r.rw = bl_map(c.fd, LEN, PROT_READ | PROT_WRITE);
		r.ro = bl_map(sfd, LEN, PROT_READ);
		ASSERT_NE(NULL, r.rw);
		ASSERT_NE(NULL, r.ro);
		ASSERT_EQ(0, pthread_barrier_init(&r.start, NULL, 2));
		ASSERT_EQ(0, pthread_create(&t, NULL, reader_thread, &r));
		pthread_barrier_wait(&r.start);
		owner_writes(r.rw);
		ASSERT_EQ(0, pthread_join(t, NULL));
		pthread_barrier_destroy(&r.start);
		EXPECT_EQ(0, r.seen_bad);
		EXPECT_EQ(0, pages_without_owner_bytes(r.ro));
		zero += r.seen_zero;
		val += r.seen_val;
		raced += r.seen_zero > 0;
		munmap(r.rw, LEN);
		munmap((void *)r.ro, LEN);
		close(sfd);
		close(c.fd);
		EXPECT_EQ(0, bl_release(dev, c.id));
	}
	printf("# %d rounds of %d pages, %d raced: the reader saw %lu zero, %lu written\n",
	       k, NPAGES, raced, zero, val);
	fflush(stdout);
	EXPECT_LE(RACED_ROUNDS, raced);
	close(dev);
}

/*
 * The same between the owner and a reader process that opened the slab
 * itself. They start together on a flag in shared anonymous memory, where
 * the reader also leaves the number of holes it saw.
 */
TEST(first_touch_race_processes)
{
	int *go = mmap(NULL, PG, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct blamer_create c;
	int dev = bl_open(O_RDWR), k, status, done[2], raced = 0;
	unsigned char *rw;
	pid_t pid;
	char b;

	ASSERT_NE(MAP_FAILED, go);
	ASSERT_LE(0, dev);
	for (k = 0; more_rounds(k, raced); k++) {
		ASSERT_EQ(0, bl_create(dev, LEN, &c));
		rw = bl_map(c.fd, LEN, PROT_READ | PROT_WRITE);
		ASSERT_NE(NULL, rw);
		ASSERT_EQ(0, pipe(done));
		__atomic_store_n(&go[0], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&go[1], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&go[2], 0, __ATOMIC_RELAXED);
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			unsigned long z = 0, v = 0, bad = 0;
			int rdev = bl_open(O_RDONLY), sfd;
			const unsigned char *ro;

			sfd = rdev < 0 ? -1 : bl_open_slab(rdev, c.id);
			ro = sfd < 0 ? NULL : bl_map(sfd, LEN, PROT_READ);
			__atomic_store_n(&go[1], 1, __ATOMIC_RELEASE);
			if (!ro)
				_exit(10);
			while (!__atomic_load_n(&go[0], __ATOMIC_ACQUIRE))
				;
			reader_reads(ro, &z, &v, &bad);
			__atomic_store_n(&go[2], (int)z, __ATOMIC_RELAXED);
			if (bad)
				_exit(11);
			/* The owner is done: every page is the shared one. */
			if (read(done[0], &b, 1) != 1)
				_exit(12);
			_exit(pages_without_owner_bytes(ro) ? 13 : 0);
		}
		while (!__atomic_load_n(&go[1], __ATOMIC_ACQUIRE))
			;
		__atomic_store_n(&go[0], 1, __ATOMIC_RELEASE);
		owner_writes(rw);
		ASSERT_EQ(1, write(done[1], "d", 1));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
		raced += __atomic_load_n(&go[2], __ATOMIC_RELAXED) > 0;
		close(done[0]);
		close(done[1]);
		munmap(rw, LEN);
		close(c.fd);
		EXPECT_EQ(0, bl_release(dev, c.id));
	}
	printf("# %d rounds of %d pages, %d raced\n", k, NPAGES, raced);
	fflush(stdout);
	EXPECT_LE(RACED_ROUNDS, raced);
	munmap(go, PG);
	close(dev);
}

int main(int argc, char **argv)
{
	return bt_main(argc, argv);
}
