// SPDX-License-Identifier: MIT
/* /proc/<pid>/stat read (proc.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

int bl_proc_stat(pid_t pid, struct bl_proc_stat *st)
{
	char path[64], buf[1024], *lp, *rp, *f;
	long hz = sysconf(_SC_CLK_TCK);
	unsigned long long ticks;
	size_t l;
	ssize_t n;
	int fd, field;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/stat");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* field 1, the pid as this /proc's pid namespace numbers it */
	for (st->pid = 0, f = buf; *f >= '0' && *f <= '9' && st->pid < 1 << 22; f++)
		st->pid = st->pid * 10 + (*f - '0');
	if (f == buf || *f != ' ')
		return -EIO;
	/* The comm field may hold spaces and parentheses: it ends at the
	 * last ')'. */
	lp = strchr(buf, '(');
	rp = strrchr(buf, ')');
	if (!lp || !rp || rp < lp || rp[1] != ' ' || !rp[2])
		return -EIO;
	l = (size_t)(rp - lp - 1);
	if (l >= sizeof(st->comm))
		l = sizeof(st->comm) - 1;
	memcpy(st->comm, lp + 1, l);
	st->comm[l] = '\0';
	/* after ") " comes field 3 (state); each step moves one field on */
	f = rp + 2;
	st->state = *f;
	for (field = 3; field < 22 && f; field++) {
		if (field == 20)
			st->num_threads = strtol(f, NULL, 10);
		f = strchr(f, ' ');
		if (f)
			f++;
	}
	/* digits by hand, not sscanf(): a fork child's first write reads
	 * its start time here, maybe in a signal handler */
	if (!f || *f < '0' || *f > '9' || hz <= 0)
		return -EIO;
	for (ticks = 0; *f >= '0' && *f <= '9'; f++)
		ticks = ticks * 10 + (unsigned long long)(*f - '0');
	st->start_ns = (int64_t)(ticks * (1000000000ull / (unsigned long long)hz));
	return 0;
}

int64_t bl_proc_start_ns(pid_t pid)
{
	struct bl_proc_stat st;
	int ret = bl_proc_stat(pid, &st);

	return ret ? ret : st.start_ns;
}
