// SPDX-License-Identifier: MIT
/* Clocks, process start times and random ids for the writer. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "writer.h"

/*
 * Field 22 of /proc/PID/stat, in clock ticks since boot, scaled to ns the
 * way CONVENTIONS.md fixes for dir file names. The comm field may hold
 * spaces and parentheses: parse after the last ')'. Only open/read/close,
 * so it is usable after fork and in a signal handler.
 */
int64_t bl_proc_start_ns(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ticks;
	long hz = sysconf(_SC_CLK_TCK);
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	/* p is at the space before field 3 (state); each step moves one field on */
	p++;
	for (field = 3; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &ticks) != 1 || hz <= 0)
		return -EIO;
	return (int64_t)(ticks * (1000000000ull / (unsigned long long)hz));
}

uint64_t bl_random64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = bl_monotonic_ns() * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32;
	return v;
}

pid_t bl_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}
