// SPDX-License-Identifier: GPL-2.0
/*
 * blamer_slabctl: a tiny driver for module tests where processes of
 * different users, setuid programs or execve() must take part
 * (vm-module.sh and the test_*.c programs).
 *
 *   blamer_slabctl hold LEN      create a slab filled with 'B', print its
 *                                ID, keep it live until killed
 *   blamer_slabctl holdlazy LEN  the same, but touch no page until
 *                                SIGUSR1, then fill it and print "written"
 *   blamer_slabctl holdpop LEN   hold a BLAMER_CREATE_POPULATE slab,
 *                                untouched
 *   blamer_slabctl readall ID    map slab ID read-only, read every page
 *                                (each all zeroes or all 'B'), print "ok",
 *                                keep the mapping until killed
 *   blamer_slabctl mapheld LEN   the same, but close every descriptor and
 *                                keep only the mapping
 *   blamer_slabctl keep LEN      the same, but keep neither descriptors nor
 *                                mapping: a live slab without files
 *   blamer_slabctl orphans N     create N one-page slabs, print their IDs,
 *                                exit (they become orphans)
 *   blamer_slabctl splicehold LEN  create a slab filled with 'S', vmsplice()
 *                                its pages into a pipe, release, unmap and
 *                                close it, print "held"; on SIGUSR1 read
 *                                the pipe back, print "ok" if every byte
 *                                is still 'S', and exit
 *   blamer_slabctl touch LEN N   create a slab of LEN bytes, fill its first
 *                                N bytes with 'B' (pages at first touch:
 *                                the rest is never allocated), print its
 *                                ID, exit (an orphan)
 *   blamer_slabctl create LEN    create one slab, print "ok", exit
 *   blamer_slabctl createpop LEN the same with BLAMER_CREATE_POPULATE
 *   blamer_slabctl map ID        map slab ID read-only, check the 'B' fill
 *   blamer_slabctl dropexec PROG create a slab filled with 'B', drop every
 *                                id to the real uid and gid (as a setuid
 *                                program does before it runs another),
 *                                then exec PROG map ID: whether the new
 *                                program may read what the old one made
 *   blamer_slabctl release ID    release slab ID
 *   blamer_slabctl count         print the number of slabs: all of them
 *                                for root, else the caller's user's
 *   blamer_slabctl mine 0        print the number of listed slabs that are
 *                                the caller's own (BLAMER_SLAB_MINE)
 *   blamer_slabctl mapfd FD      map the inherited slab descriptor FD
 *                                read-write
 *   blamer_slabctl createfd FD   create a slab through the inherited
 *                                /dev/blamer descriptor FD
 *   blamer_slabctl readcost N    what reading one slab costs a reader:
 *                                creates N one-page slabs, then times,
 *                                best of 11 interleaved rounds, per slab:
 *                                open + mmap +
 *                                touch + munmap + close, against mmap +
 *                                touch + munmap of a file already open
 *                                (the old offset-per-ID ABI's cost), and
 *                                one listing of all N; prints the ratio
 *
 * Prints "ok" or the errno name; exits 0 on success, 1 otherwise.
 */
#include <signal.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include "blamer_util.h"

static int fail(const char *what, int err)
{
	const char *name = strerrorname_np(err);

	printf("%s\n", name ? name : "?");
	fprintf(stderr, "blamer_slabctl: %s: %s\n", what, strerror(err));
	return 1;
}

enum { KEEP_ALL, KEEP_MAP, KEEP_NOTHING, KEEP_LAZY, KEEP_POPULATED };

static int got_usr1;

static void on_usr1(int sig)
{
	__atomic_store_n(&got_usr1, 1, __ATOMIC_RELAXED);
}

/* Untouched until SIGUSR1, then written. */
static void hold_lazy(void *p, __u64 len, __u64 id)
{
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	signal(SIGUSR1, on_usr1);
	printf("%llu\n", (unsigned long long)id);
	fflush(stdout);
	while (!__atomic_load_n(&got_usr1, __ATOMIC_RELAXED))
		sigsuspend(&old);
	memset(p, 'B', len);
	printf("written\n");
	fflush(stdout);
	for (;;)
		pause();
}

static int hold(__u64 len, int keep)
{
	struct blamer_create c;
	int fd = bl_open(O_RDWR), err;
	void *p;

	if (fd < 0)
		return fail("open", -fd);
	err = bl_create_flags(fd, len, keep == KEEP_POPULATED ?
			      BLAMER_CREATE_POPULATE : 0, &c);
	if (err)
		return fail("create", -err);
	p = bl_map(c.fd, c.length, PROT_READ | PROT_WRITE);
	if (!p)
		return fail("mmap", errno);
	if (keep == KEEP_LAZY)
		hold_lazy(p, c.length, c.id);
	if (keep != KEEP_POPULATED)
		memset(p, 'B', c.length);
	if (keep == KEEP_MAP || keep == KEEP_NOTHING) {
		close(c.fd);
		close(fd);
	}
	if (keep == KEEP_NOTHING)
		munmap(p, c.length);
	printf("%llu\n", (unsigned long long)c.id);
	fflush(stdout);
	for (;;)
		pause();
}

static int map_id(int fd, __u64 id)
{
	int sfd = bl_open_slab(fd, id);
	char *p;

	if (sfd < 0)
		return fail("open slab", -sfd);
	p = bl_map(sfd, PG, PROT_READ);
	if (!p)
		return fail("mmap", errno);
	if (p[0] != 'B' || p[PG - 1] != 'B') {
		printf("BADDATA\n");
		return 1;
	}
	printf("ok\n");
	return 0;
}

/* Every page of slab @id read: each all zeroes or all 'B'. Then held. */
static int read_all(int fd, __u64 id)
{
	int sfd = bl_open_slab(fd, id);
	unsigned long i, j;
	struct stat sb;
	char *p;

	if (sfd < 0)
		return fail("open slab", -sfd);
	if (fstat(sfd, &sb))
		return fail("fstat", errno);
	p = bl_map(sfd, sb.st_size, PROT_READ);
	if (!p)
		return fail("mmap", errno);
	for (i = 0; i < (unsigned long)sb.st_size; i += PG)
		for (j = 0; j < PG; j++)
			if (p[i + j] != p[i] || (p[i] && p[i] != 'B')) {
				printf("BADDATA\n");
				return 1;
			}
	printf("ok\n");
	fflush(stdout);
	for (;;)
		pause();
}

static int splice_hold(__u64 len)
{
	sigset_t block, old;
	struct blamer_create c;
	struct iovec iov;
	int fd = bl_open(O_RDWR), p[2], err;
	size_t got = 0;
	ssize_t n;
	char buf[4096];
	char *m;

	if (fd < 0)
		return fail("open", -fd);
	err = bl_create(fd, len, &c);
	if (err)
		return fail("create", -err);
	m = bl_map(c.fd, c.length, PROT_READ | PROT_WRITE);
	if (!m || pipe(p))
		return fail("mmap or pipe", errno);
	fcntl(p[1], F_SETPIPE_SZ, (int)c.length);
	memset(m, 'S', c.length);
	iov.iov_base = m;
	iov.iov_len = c.length;
	if (vmsplice(p[1], &iov, 1, 0) != (ssize_t)c.length)
		return fail("vmsplice", errno);
	err = bl_release(fd, c.id);
	if (err)
		return fail("release", -err);
	munmap(m, c.length);
	close(c.fd);
	close(fd);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	signal(SIGUSR1, on_usr1);
	printf("held\n");
	fflush(stdout);
	while (!__atomic_load_n(&got_usr1, __ATOMIC_RELAXED))
		sigsuspend(&old);
	close(p[1]);
	while ((n = read(p[0], buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != 'S') {
				printf("BADDATA\n");
				return 1;
			}
		got += n;
	}
	printf(got == c.length ? "ok\n" : "SHORT\n");
	return got == c.length ? 0 : 1;
}

static int touch(__u64 len, __u64 n)
{
	struct blamer_create c;
	int fd = bl_open(O_RDWR), err;
	void *p;

	if (fd < 0)
		return fail("open", -fd);
	err = bl_create(fd, len, &c);
	if (err)
		return fail("create", -err);
	p = bl_map(c.fd, c.length, PROT_READ | PROT_WRITE);
	if (!p)
		return fail("mmap", errno);
	memset(p, 'B', n < c.length ? n : c.length);
	printf("%llu\n", (unsigned long long)c.id);
	return 0;
}

static int drop_exec(const char *prog)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	struct blamer_create c;
	int fd = bl_open(O_RDWR), err;
	char id[32];
	void *p;

	if (fd < 0)
		return fail("open", -fd);
	err = bl_create(fd, PG, &c);
	if (err)
		return fail("create", -err);
	p = bl_map(c.fd, PG, PROT_READ | PROT_WRITE);
	if (!p)
		return fail("mmap", errno);
	memset(p, 'B', PG);
	snprintf(id, sizeof(id), "%llu", (unsigned long long)c.id);
	if (setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return fail("drop ids", errno);
	fflush(stdout);
	execl(prog, "blamer_slabctl", "map", id, (char *)NULL);
	return fail("exec", errno);
}

static int mine(void)
{
	struct blamer_slab_info *v;
	int fd = bl_open(O_RDONLY), n, i, k = 0;

	if (fd < 0)
		return fail("open", -fd);
	n = bl_list(fd, &v, NULL);
	if (n < 0)
		return fail("list", -n);
	for (i = 0; i < n; i++)
		k += !!(v[i].flags & BLAMER_SLAB_MINE);
	free(v);
	printf("%d\n", k);
	return 0;
}

static int count(void)
{
	struct blamer_status st;
	int fd = bl_open(O_RDONLY), err;

	if (fd < 0)
		return fail("open", -fd);
	err = bl_status(fd, &st);
	if (err)
		return fail("status", -err);
	printf("%llu\n", (unsigned long long)(st.flags & BLAMER_STATUS_DEVICE ?
					      st.slabs : st.user_slabs));
	return 0;
}

static int create(int fd, __u64 len, int n, int print_ids, __u32 flags)
{
	struct blamer_create c;
	int i, err;

	for (i = 0; i < n; i++) {
		err = bl_create_flags(fd, len, flags, &c);
		if (err)
			return fail("create", -err);
		if (print_ids)
			printf("%llu\n", (unsigned long long)c.id);
	}
	if (!print_ids)
		printf("ok\n");
	return 0;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long open_map_close(int dev, struct blamer_create *c, int n)
{
	long long t0 = now_ns();
	int i, sfd;
	char *p;

	for (i = 0; i < n; i++) {
		sfd = bl_open_slab(dev, c[i].id);
		p = bl_map(sfd, PG, PROT_READ);
		if (sfd < 0 || !p)
			return -1;
		close(sfd);
		bl_peek(p);
		munmap(p, PG);
	}
	return now_ns() - t0;
}

static long long map_open_file(int dev, struct blamer_create *c, int n)
{
	long long t0 = now_ns();
	char *p;
	int i;

	for (i = 0; i < n; i++) {
		p = bl_map(c[i].fd, PG, PROT_READ);
		if (!p)
			return -1;
		bl_peek(p);
		munmap(p, PG);
	}
	return now_ns() - t0;
}

static long long list_all(int dev, struct blamer_create *c, int n)
{
	struct blamer_slab_info *v;
	long long t0 = now_ns();
	int got = bl_list(dev, &v, NULL);

	if (got < n)
		return -1;
	free(v);
	return now_ns() - t0;
}

static int readcost(int n)
{
	struct blamer_create *c = calloc(n, sizeof(*c));
	long long a, b, l, t;
	int dev = bl_open(O_RDWR), i, r, err;

	if (!c || dev < 0)
		return fail("setup", ENOMEM);
	for (i = 0; i < n; i++) {
		err = bl_create(dev, PG, &c[i]);
		if (err)
			return fail("create", -err);
	}
	a = -1;
	b = -1;
	l = -1;
	/* Interleaved, so that a noisy moment hits every variant alike. */
	for (r = 0; r < 11; r++) {
		t = open_map_close(dev, c, n);
		if (t < 0)
			return fail("measure", EIO);
		a = a < 0 || t < a ? t : a;
		t = map_open_file(dev, c, n);
		if (t < 0)
			return fail("measure", EIO);
		b = b < 0 || t < b ? t : b;
		t = list_all(dev, c, n);
		if (t < 0)
			return fail("measure", EIO);
		l = l < 0 || t < l ? t : l;
	}
	a /= n;
	b /= n;
	l /= n;
	printf("%d slabs, ns per slab: open+mmap+touch+munmap+close %lld, ", n, a);
	printf("mmap+touch+munmap of an open file %lld (ratio %.2f), ", b,
	       (double)a / b);
	printf("listing %lld\n", l);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long arg;
	int fd;
	void *p;

	if (argc == 2 && !strcmp(argv[1], "count"))
		return count();
	if (argc == 4 && !strcmp(argv[1], "touch"))
		return touch(strtoull(argv[2], NULL, 0),
			     strtoull(argv[3], NULL, 0));
	if (argc != 3) {
		fprintf(stderr, "usage: blamer_slabctl COMMAND ARG | count (see the source)\n");
		return 2;
	}
	if (!strcmp(argv[1], "dropexec"))
		return drop_exec(argv[2]);
	if (!strcmp(argv[1], "mine"))
		return mine();
	arg = strtoull(argv[2], NULL, 0);
	if (!strcmp(argv[1], "hold"))
		return hold(arg, KEEP_ALL);
	if (!strcmp(argv[1], "mapheld"))
		return hold(arg, KEEP_MAP);
	if (!strcmp(argv[1], "keep"))
		return hold(arg, KEEP_NOTHING);
	if (!strcmp(argv[1], "holdlazy"))
		return hold(arg, KEEP_LAZY);
	if (!strcmp(argv[1], "holdpop"))
		return hold(arg, KEEP_POPULATED);
	if (!strcmp(argv[1], "splicehold"))
		return splice_hold(arg);
	if (!strcmp(argv[1], "mapfd")) {
		p = bl_map((int)arg, PG, PROT_READ | PROT_WRITE);
		if (!p)
			return fail("mmap", errno);
		printf("ok\n");
		return 0;
	}
	if (!strcmp(argv[1], "createfd"))
		return create((int)arg, PG, 1, 0, 0);
	if (!strcmp(argv[1], "readcost"))
		return readcost((int)arg);
	fd = bl_open(O_RDWR);
	if (fd < 0)
		fd = bl_open(O_RDONLY);
	if (fd < 0)
		return fail("open", -fd);
	if (!strcmp(argv[1], "create"))
		return create(fd, arg, 1, 0, 0);
	if (!strcmp(argv[1], "createpop"))
		return create(fd, arg, 1, 0, BLAMER_CREATE_POPULATE);
	if (!strcmp(argv[1], "orphans"))
		return create(fd, PG, (int)arg, 1, 0);
	if (!strcmp(argv[1], "readall"))
		return read_all(fd, arg);
	if (!strcmp(argv[1], "map"))
		return map_id(fd, arg);
	if (!strcmp(argv[1], "release")) {
		int err = bl_release(fd, arg);

		if (err)
			return fail("release", -err);
		printf("ok\n");
		return 0;
	}
	fprintf(stderr, "blamer_slabctl: unknown command '%s'\n", argv[1]);
	return 2;
}
