// SPDX-License-Identifier: MIT
/*
 * Is the writer of a dir heap alive? A dir heap is named by its writer's
 * pid and start time; the writer is alive while /proc/<pid>/stat shows
 * that start time and the process has not exited. A process has exited
 * when its last thread has: a main thread that called pthread_exit() is
 * a zombie ('Z') while its other threads still run and write, so a
 * zombie with threads left is alive.
 *
 * That /proc read is what a live heap costs most besides its bytes (the
 * kernel sums the times and faults of every thread of the process to
 * print it). So a long-lived reader, from its second snapshot on, keeps a
 * pidfd for each writer it found alive. A pidfd names one process, not a
 * pid that can be reused, and polls readable once that process has
 * exited (the same "last thread gone" as above): one poll() over all of
 * them per snapshot tells which writers ended, and a writer that did not
 * is alive without a /proc read. Its name (comm, which a process may
 * change) is read again, with the /proc check, once a second.
 *
 * The pidfd is opened before /proc is read: if /proc then shows the
 * heap's start time, the pidfd is of that process (had the process the
 * pidfd names exited before the read, a later process with its pid would
 * show another start time, or the next poll() says it exited).
 *
 * At most a quarter of RLIMIT_NOFILE's soft limit is spent on pidfds,
 * and none once the process's descriptor table is half full; writers past
 * that, and kernels without pidfd_open() (before 5.3, or a seccomp filter
 * that refuses it), are looked up in /proc every time.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "clock.h"
#include "internal.h"
#include "where.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434	/* the same number on every architecture */
#endif

/* comm (and the /proc check) is read again after this long */
#define RD_ALIVE_RECHECK_NS	1000000000ull
#define RD_MAX_WRITERS		(1u << 20)

struct rd_writer_key {
	int32_t pid;
	uint64_t start;
};

static int writer_cmp(const void *key, const void *entry)
{
	const struct rd_writer_key *k = key;
	const struct rd_writer *w = entry;

	if (k->pid != w->pid)
		return k->pid < w->pid ? -1 : 1;
	return k->start < w->start ? -1 : k->start > w->start;
}

/*
 * /proc's word on @pid: alive with start time @start (and its comm into
 * @comm, sanitized), or not.
 */
static bool proc_alive(int32_t pid, uint64_t start, char *comm, size_t commlen)
{
	struct bl_proc_stat st;

	if (bl_proc_stat(pid, &st) || (uint64_t)st.start_ns != start)
		return false;
	if (st.state == 'X' || (st.state == 'Z' && st.num_threads <= 1))
		return false;	/* exited: its heap is dead */
	/* a process names itself (prctl, the file it runs): printable only */
	rd_sanitize(comm, st.comm, strnlen(st.comm, commlen - 1));
	return true;
}

/* No such pid (most dead heaps): one signal-0 probe says so for less
 * than a path lookup in /proc. EPERM means it exists. */
static bool pid_exists(int32_t pid)
{
	return pid > 0 && !(kill(pid, 0) && errno == ESRCH);
}

static int open_pidfd(struct rd_alive *a, int32_t pid)
{
	long fd;

	if (a->no_pidfd || a->npidfds >= a->budget)
		return -1;
	fd = syscall(SYS_pidfd_open, (pid_t)pid, 0u);
	if (fd < 0 && (errno == ENOSYS || errno == EPERM || errno == EINVAL))
		a->no_pidfd = true;	/* not on this kernel: /proc every time */
	if (fd >= 0 && (uint64_t)fd >= a->fd_limit / 2) {
		/* the lowest free descriptor is this high: the process's
		 * table is half full, leave the rest to it */
		close((int)fd);
		a->budget = a->npidfds;
		return -1;
	}
	return fd < 0 ? -1 : (int)fd;
}

void rd_alive_begin(struct rd_alive *a)
{
	struct rd_writer *last = a->c.last;
	struct rlimit rl;
	size_t i, n = 0;

	if (!a->c.elsz)
		a->c = RD_CARRY(struct rd_writer, RD_MAX_WRITERS);
	a->now_ns = bl_monotonic_ns();
	a->npidfds = 0;
	a->budget = 0;
	if (a->snapshots && !getrlimit(RLIMIT_NOFILE, &rl)) {
		a->fd_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
		a->budget = a->fd_limit / 4 < RD_MAX_WRITERS ? a->fd_limit / 4 : RD_MAX_WRITERS;
	}

	if (a->pfdcap < a->c.nlast) {
		struct pollfd *nv = realloc(a->pfd, a->c.nlast * sizeof(*nv));

		if (!nv)
			goto unknown;
		a->pfd = nv;
		a->pfdcap = a->c.nlast;
	}
	for (i = 0; i < a->c.nlast; i++)
		if (last[i].pidfd >= 0)
			a->pfd[n++] = (struct pollfd){ .fd = last[i].pidfd, .events = POLLIN };
	if (!n)
		return;
	/* Zero timeout: each pidfd is asked, none waited for. */
	if (poll(a->pfd, n, 0) < 0)
		goto unknown;
	for (i = 0, n = 0; i < a->c.nlast; i++)
		if (last[i].pidfd >= 0)
			last[i].exited = a->pfd[n++].revents != 0;
	return;
unknown:
	/* no answer from poll(): ask /proc about each of them */
	for (i = 0; i < a->c.nlast; i++)
		last[i].checked_ns = a->now_ns - RD_ALIVE_RECHECK_NS;
}

bool rd_alive(struct rd_alive *a, int32_t pid, uint64_t start, char *comm, size_t commlen)
{
	struct rd_writer_key key = { .pid = pid, .start = start };
	struct rd_writer *w = rd_carry_find(&a->c, &key, writer_cmp), *nw;
	int pidfd = -1;

	if (w && !w->taken) {
		w->taken = true;
		if (w->exited)
			return false;	/* its pidfd is closed at the end */
		pidfd = w->pidfd;
		w->pidfd = -1;	/* now ours, whatever follows */
		if (pidfd >= 0 && a->npidfds >= a->budget) {
			close(pidfd);	/* the limit was lowered */
			pidfd = -1;
		}
		if (pidfd >= 0 && a->now_ns - w->checked_ns < RD_ALIVE_RECHECK_NS) {
			nw = rd_carry_add(&a->c);
			if (!nw) {
				close(pidfd);
				pidfd = -1;
				goto proc;
			}
			*nw = *w;
			nw->pidfd = pidfd;
			nw->taken = false;
			a->npidfds++;
			memcpy(comm, w->comm, commlen < sizeof(w->comm) ? commlen : sizeof(w->comm));
			comm[commlen - 1] = '\0';
			return true;
		}
	}
proc:
	if (!pid_exists(pid)) {
		if (pidfd >= 0)
			close(pidfd);
		return false;
	}
	if (pidfd < 0)
		pidfd = open_pidfd(a, pid);	/* before /proc is read (see the top) */
	if (!proc_alive(pid, start, comm, commlen)) {
		if (pidfd >= 0)
			close(pidfd);
		return false;
	}
	if (pidfd < 0)
		return true;	/* not watched: /proc again next time */
	nw = rd_carry_add(&a->c);
	if (!nw) {
		close(pidfd);
		return true;
	}
	/* Writers first seen in one snapshot are checked again in different
	 * ones: each first at its own moment of the second (a hash of its
	 * pid), then once a second. */
	*nw = (struct rd_writer){ .pid = pid, .start = start, .pidfd = pidfd,
				  .checked_ns = a->now_ns };
	if (!w)
		nw->checked_ns -= (uint32_t)pid * 2654435761u % RD_ALIVE_RECHECK_NS;
	memcpy(nw->comm, comm, commlen < sizeof(nw->comm) ? commlen : sizeof(nw->comm));
	nw->comm[sizeof(nw->comm) - 1] = '\0';
	a->npidfds++;
	return true;
}

/* The pidfds of @c's last entries that were not carried over. */
static void close_last(struct rd_carry *c)
{
	struct rd_writer *last = c->last;
	size_t i;

	for (i = 0; i < c->nlast; i++)
		if (last[i].pidfd >= 0)
			close(last[i].pidfd);
	c->nlast = 0;
}

void rd_alive_end(struct rd_alive *a)
{
	close_last(&a->c);
	/* heaps come in file name order (pid, start): cur is sorted */
	rd_carry_swap(&a->c, NULL);
	a->snapshots++;
}

void rd_alive_free(struct rd_alive *a)
{
	close_last(&a->c);
	rd_carry_swap(&a->c, NULL);
	close_last(&a->c);
	rd_carry_free(&a->c);
	free(a->pfd);
	memset(a, 0, sizeof(*a));
}
