// SPDX-License-Identifier: GPL-2.0
/*
 * blamer_slabctl: a tiny driver for the shell-level module tests
 * (vm-module.sh), where processes of different users must cooperate.
 *
 *   blamer_slabctl hold LEN      create a slab filled with 'B', print its
 *                                ID, keep it live until killed
 *   blamer_slabctl mapheld LEN   the same, but close the descriptor and
 *                                keep only the mapping
 *   blamer_slabctl orphans N     create N one-page slabs, print their IDs,
 *                                exit (they become orphans)
 *   blamer_slabctl create LEN    create one slab, print "ok", exit
 *   blamer_slabctl map ID        map slab ID read-only, check the 'B' fill
 *   blamer_slabctl release ID    release orphan ID
 *   blamer_slabctl count         print the number of slabs (status ioctl)
 *
 * Prints "ok" or the errno name; exits 0 on success, 1 otherwise.
 */
#include <signal.h>

#include "blamer_util.h"

static int fail(const char *what, int err)
{
	printf("%s\n", strerrorname_np(err) ? strerrorname_np(err) : "?");
	fprintf(stderr, "blamer_slabctl: %s: %s\n", what, strerror(err));
	return 1;
}

static int hold(uint64_t len, int keep_fd)
{
	struct blamer_create c;
	int fd = bl_open(O_RDWR), err;
	void *p;

	if (fd < 0)
		return fail("open", errno);
	err = bl_create(fd, len, &c);
	if (err)
		return fail("create", -err);
	p = bl_map(fd, c.mmap_offset, c.length, PROT_READ | PROT_WRITE);
	if (!p)
		return fail("mmap", errno);
	memset(p, 'B', c.length);
	if (!keep_fd)
		close(fd);
	printf("%llu\n", (unsigned long long)c.id);
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	unsigned long long arg;
	struct blamer_status st;
	struct blamer_create c;
	int fd, err, i;
	char *p;

	if (argc == 2 && !strcmp(argv[1], "count")) {
		fd = bl_open(O_RDONLY);
		if (fd < 0 || (err = bl_status(fd, &st)))
			return fail("status", fd < 0 ? errno : -err);
		printf("%llu\n", (unsigned long long)st.slabs);
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: blamer_slabctl hold|mapheld|orphans|create|map|release ARG | count\n");
		return 2;
	}
	arg = strtoull(argv[2], NULL, 0);
	if (!strcmp(argv[1], "hold"))
		return hold(arg, 1);
	if (!strcmp(argv[1], "mapheld"))
		return hold(arg, 0);
	fd = bl_open(O_RDONLY);
	if (fd < 0)
		return fail("open", errno);
	if (!strcmp(argv[1], "create")) {
		close(fd);
		fd = bl_open(O_RDWR);
		err = bl_create(fd, arg, &c);
		if (err)
			return fail("create", -err);
		printf("ok\n");
		return 0;
	}
	if (!strcmp(argv[1], "orphans")) {
		close(fd);
		fd = bl_open(O_RDWR);
		for (i = 0; i < (int)arg; i++) {
			err = bl_create(fd, PG, &c);
			if (err)
				return fail("create", -err);
			printf("%llu\n", (unsigned long long)c.id);
		}
		return 0;
	}
	if (!strcmp(argv[1], "map")) {
		p = bl_map(fd, arg * PG, PG, PROT_READ);
		if (!p)
			return fail("mmap", errno);
		if (p[0] != 'B' || p[PG - 1] != 'B') {
			printf("BADDATA\n");
			return 1;
		}
		printf("ok\n");
		return 0;
	}
	if (!strcmp(argv[1], "release")) {
		err = bl_release(fd, arg);
		if (err)
			return fail("release", -err);
		printf("ok\n");
		return 0;
	}
	fprintf(stderr, "blamer_slabctl: unknown command '%s'\n", argv[1]);
	return 2;
}
