// SPDX-License-Identifier: GPL-2.0
/*
 * blamer_fuzz: a small syzkaller-style random exerciser of /dev/blamer.
 *
 *   blamer_fuzz SECONDS [PROCS] [SEED]
 *
 * PROCS processes (default 4) each run a random mix of the calls that
 * touch the module: open/close, every ioctl with sane and hostile
 * arguments (random sizes, pointers, capacities, IDs), mmap of slab
 * files with random offsets, lengths, protections and flags, mprotect,
 * mremap, partial munmap, madvise, poll, fork (the child touches its
 * inherited address range and descriptors and exits or gets killed) and
 * exit while holding slabs. Results
 * are not checked one by one: the point is that the kernel never
 * complains (the VM runner fails the run on any BUG/WARNING/Oops) and
 * that the device still works afterwards, which the program verifies.
 * Exits 0 on success.
 */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "blamer_util.h"

#define NFD 4
#define NSFD 8
#define NMAP 16

struct fz {
	int fd[NFD];
	int sfd[NSFD];
	__u64 ids[64];
	int nids;
	struct {
		void *p;
		size_t len;
	} map[NMAP];
	unsigned int seed;
};

static __u64 rnd(struct fz *z)
{
	return ((__u64)rand_r(&z->seed) << 31) ^ (__u64)rand_r(&z->seed);
}

static __u64 pick_len(struct fz *z)
{
	static const __u64 hostile[] = {
		0, 1, PG - 1, PG, PG + 1, 2 * PG, 1 << 20, 4 << 20, 16 << 20,
		(16 << 20) + 1, ~0ULL, ~0ULL - PG + 2, 1ULL << 63, 1ULL << 32,
	};

	if (rnd(z) % 4)
		return (rnd(z) % 8 + 1) * PG - rnd(z) % 2;
	return hostile[rnd(z) % ARRAY_SIZE(hostile)];
}

/* Often one of the next IDs (they are sequential): not handed out yet. */
static __u64 pick_id(struct fz *z)
{
	__u64 max = 0;
	int i;

	if (z->nids && rnd(z) % 2)
		return z->ids[rnd(z) % z->nids];
	for (i = 0; i < z->nids; i++)
		max = z->ids[i] > max ? z->ids[i] : max;
	if (rnd(z) % 3)
		return max + 1 + rnd(z) % 4;
	return rnd(z) % 4 ? rnd(z) % 64 : rnd(z);
}

static int pick_fd(struct fz *z)
{
	int i = rnd(z) % NFD;

	if (z->fd[i] < 0)
		z->fd[i] = bl_open(rnd(z) % 3 ? O_RDWR : O_RDONLY);
	return z->fd[i];
}

static void remember(struct fz *z, __u64 id)
{
	z->ids[z->nids < 64 ? z->nids++ : (int)(rnd(z) % 64)] = id;
}

/* Keep a slab descriptor, closing the one it replaces. */
static void keep_sfd(struct fz *z, int sfd)
{
	int i = rnd(z) % NSFD;

	if (z->sfd[i] >= 0)
		close(z->sfd[i]);
	z->sfd[i] = sfd;
}

static void add_map(struct fz *z, void *p, size_t len)
{
	int i = rnd(z) % NMAP;

	if (z->map[i].p)
		munmap(z->map[i].p, z->map[i].len);
	z->map[i].p = p;
	z->map[i].len = len;
}

static void op(struct fz *z)
{
	struct blamer_slab_info info[8];
	struct blamer_create c;
	struct blamer_status st;
	struct blamer_list l;
	struct pollfd pfd;
	int fd = pick_fd(z), i = rnd(z) % NMAP, prot;
	void *p;

	switch (rnd(z) % 16) {
	case 0:
		if (!bl_create(fd, pick_len(z), &c)) {
			remember(z, c.id);
			keep_sfd(z, c.fd);
		}
		break;
	case 1:
		prot = bl_open_slab(fd, pick_id(z));
		if (prot >= 0)
			keep_sfd(z, prot);
		break;
	case 2:
		memset(&l, 0, sizeof(l));
		l.start_id = rnd(z) % 4 ? 0 : pick_id(z);
		l.info_size = rnd(z) % 4 ? sizeof(info[0]) : rnd(z) % 300;
		l.slabs = rnd(z) % 8 ? (uintptr_t)info : rnd(z);
		l.capacity = rnd(z) % 9;	/* info[] holds 8 */
		if (l.info_size > sizeof(info[0]) && l.slabs == (uintptr_t)info)
			l.capacity = 0;
		/* Sometimes with a size in the command other than ours. */
		ioctl(fd, rnd(z) % 8 ? BLAMER_IOC_LIST :
		      _IOC(_IOC_READ | _IOC_WRITE, BLAMER_IOC_MAGIC,
			   _IOC_NR(BLAMER_IOC_LIST), rnd(z) % 80), &l);
		break;
	case 3:
		bl_release(fd, pick_id(z));
		break;
	case 4:
		bl_status(fd, &st);
		ioctl(fd, rnd(z), (void *)(uintptr_t)rnd(z));
		break;
	case 5:
	case 6:
	case 7:
		prot = PROT_READ | (rnd(z) % 3 ? 0 : PROT_WRITE) |
		       (rnd(z) % 8 ? 0 : PROT_EXEC);
		{
			size_t len = (rnd(z) % 4 + 1) * PG;

			p = mmap(NULL, len, prot,
				 rnd(z) % 8 ? MAP_SHARED : MAP_PRIVATE,
				 z->sfd[rnd(z) % NSFD],
				 (off_t)((rnd(z) % 4 ? 0 : rnd(z) % 4) * PG));
			if (p != MAP_FAILED) {
				bl_peek(p);
				if (prot & PROT_WRITE)
					bl_poke(p, (unsigned char)rnd(z));
				add_map(z, p, len);
			}
		}
		break;
	case 8:
		if (z->map[i].p)
			mprotect(z->map[i].p, z->map[i].len - (rnd(z) % 2) * PG,
				 PROT_READ | (rnd(z) % 2 ? PROT_WRITE : 0));
		break;
	case 9:
		if (z->map[i].p) {
			size_t nl = (rnd(z) % 5 + 1) * PG;

			p = mremap(z->map[i].p, z->map[i].len, nl,
				   rnd(z) % 2 ? MREMAP_MAYMOVE : 0);
			if (p != MAP_FAILED) {
				z->map[i].p = p;
				z->map[i].len = nl;
			}
		}
		break;
	case 10:
		if (z->map[i].p) {
			if (rnd(z) % 2 && !munmap(z->map[i].p, PG)) {
				/* a partial unmap should never succeed */
				z->map[i].p = (char *)z->map[i].p + PG;
				z->map[i].len -= PG;
				if (!z->map[i].len)
					z->map[i].p = NULL;
			} else if (!munmap(z->map[i].p, z->map[i].len)) {
				z->map[i].p = NULL;
			}
		}
		break;
	case 11:
		if (z->map[i].p) {
			static const int adv[] = {
				MADV_DONTNEED, MADV_DOFORK, MADV_DONTFORK,
				MADV_WIPEONFORK, MADV_DODUMP, MADV_COLD,
				MADV_PAGEOUT, MADV_WILLNEED, MADV_REMOVE,
			};

			madvise(z->map[i].p, z->map[i].len,
				adv[rnd(z) % ARRAY_SIZE(adv)]);
			bl_peek(z->map[i].p);
		}
		break;
	case 12:
		pfd.fd = fd;
		pfd.events = POLLIN;
		poll(&pfd, 1, 0);
		break;
	case 13: {
		int j = rnd(z) % NFD;

		if (z->fd[j] >= 0)
			close(z->fd[j]);
		z->fd[j] = -1;
		break;
	}
	case 14: {
		pid_t pid = fork();

		if (!pid) {
			/* Inherited slab ranges are gone: probe safely. */
			for (int k = 0; k < NMAP; k++)
				if (z->map[k].p)
					msync(z->map[k].p, PG, MS_ASYNC);
			/* The parent's slab files give a child nothing. */
			p = bl_map(z->sfd[rnd(z) % NSFD], PG,
				   PROT_READ | PROT_WRITE);
			if (p)
				bl_poke(p, 1);
			if (!bl_create(pick_fd(z), PG, &c) && rnd(z) % 2)
				raise(SIGKILL);
			_exit(rnd(z) % 256);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
		break;
	}
	default:
		/* Slab and device files are not read or written. */
		if (write(fd, "x", 1) < 0 && read(fd, info, 1) < 0 &&
		    read(z->sfd[rnd(z) % NSFD], info, 1) < 0)
			break;
		break;
	}
}

static int worker(int secs, unsigned int seed)
{
	struct fz z = { .seed = seed };
	time_t end = time(NULL) + secs;
	int i;

	for (i = 0; i < NFD; i++)
		z.fd[i] = -1;
	for (i = 0; i < NSFD; i++)
		z.sfd[i] = -1;
	while (time(NULL) < end)
		for (i = 0; i < 100; i++)
			op(&z);
	/* Half the workers exit with everything open, half clean up. */
	if (seed % 2)
		for (i = 0; i < NFD; i++)
			if (z.fd[i] >= 0)
				close(z.fd[i]);
	return 0;
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 10;
	int procs = argc > 2 ? atoi(argv[2]) : 4;
	unsigned int seed = argc > 3 ? strtoul(argv[3], NULL, 0) :
				       (unsigned int)time(NULL);
	struct blamer_create c;
	int i, status, bad = 0, fd, err;
	void *p;

	printf("# blamer_fuzz: %d s, %d processes, seed %u\n", secs, procs,
	       seed);
	fflush(stdout);
	signal(SIGBUS, SIG_DFL);
	for (i = 0; i < procs; i++)
		if (!fork())
			_exit(worker(secs, seed + i));
	for (i = 0; i < procs; i++) {
		if (wait(&status) < 0)
			return 1;
		/* Workers may only die by their own hand (SIGKILL children). */
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("# worker ended with status 0x%x\n", status);
			bad++;
		}
	}
	/*
	 * The device still works. Another user's fuzzer may run beside this
	 * one (vm-module.sh runs root's and a user's at once) and fill the
	 * device's total for the moment its workers take to exit: a full
	 * device (-ENOSPC) is asked again for up to 5 s, any other error
	 * fails at once.
	 */
	fd = bl_open(O_RDWR);
	err = fd < 0 ? -errno : bl_create(fd, PG, &c);
	for (i = 0; err == -ENOSPC && i < 100; i++) {
		usleep(50000);
		err = bl_create(fd, PG, &c);
	}
	if (err) {
		printf("# device broken after fuzzing: %s\n", strerror(-err));
		return 1;
	}
	p = bl_map(c.fd, PG, PROT_READ | PROT_WRITE);
	if (!p)
		return 1;
	bl_poke(p, 1);
	close(fd);
	return bad ? 1 : 0;
}
