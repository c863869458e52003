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
 * is alive without a /proc/<pid>/stat read. Its name (comm, which a
 * process may change) is read again once a second, from /proc/<pid>/comm
 * (no thread to sum), unless the caller shows no names
 * (BLAMER_READ_COMM_ONCE): that open, read and close per writer were a
 * quarter of an exporter's scrape of 1,000 live workers.
 *
 * The pidfd is opened before /proc is read: if /proc then shows the
 * heap's start time, the pidfd is of that process (had the process the
 * pidfd names exited before the read, a later process with its pid would
 * show another start time, or the next poll() says it exited).
 *
 * A claim /proc contradicts is disproved, not alive (proc_check()): a
 * process of that pid started before the heap's claimed start runs
 * still, or the process of that pid and start runs as no uid that could
 * have made the heap's files.
 *
 * At most a quarter of RLIMIT_NOFILE's soft limit is spent on pidfds,
 * and none once the process's descriptor table is half full; writers past
 * that, and kernels without pidfd_open() (before 5.3, or a seccomp filter
 * that refuses it), are looked up in /proc every time.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "clock.h"
#include "internal.h"
#include "proc.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434	/* the same number on every architecture */
#endif

/* a watched writer's comm is read again after this long */
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

	return rd_pid_start_cmp(k->pid, k->start, w->pid, w->start);
}

/* The real, effective, saved and file system uids of @pid (the Uid:
 * line of /proc/<pid>/status): 0, or -1 if they cannot be read. */
static int proc_uids(int32_t pid, uid_t ids[4])
{
	char path[32], buf[4096], *line;
	unsigned long v[4];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	line = strstr(buf, "\nUid:");
	if (!line || sscanf(line + 5, "%lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) != 4)
		return -1;
	for (n = 0; n < 4; n++)
		ids[n] = (uid_t)v[n];
	return 0;
}

/*
 * Could a process that runs as @ids have made a file of uid @owner? Yes
 * if @owner is one of its uids, or root (root may make a heap and then
 * drop to another user for good: its files stay root's).
 */
static bool uid_fits(uid_t owner, const uid_t ids[4])
{
	return !owner || owner == ids[0] || owner == ids[1] || owner == ids[2] || owner == ids[3];
}

/*
 * /proc's word on the claim of a heap named <@pid>-<@start> whose files
 * are uid @owner's: its writer alive (its comm into @comm, sanitized),
 * dead, or the claim disproved, why in @why:
 *  - /proc/<pid> shows a process that started before @start and runs
 *    still: no other process had that pid at @start (the caller checks
 *    that the heap was made in this boot);
 *  - the process of that pid and start runs, but with no uid that could
 *    have made a file of @owner's.
 * A pid reused since, by a process started later, says nothing (the
 * heap's writer may have ended before): dead.
 */
static enum rd_verdict proc_check(int32_t pid, uint64_t start, uid_t owner, char *comm,
				  size_t commlen, char *why, size_t whylen)
{
	struct bl_proc_stat st;
	char path[32];
	struct stat ps;
	uid_t ids[4];

	if (bl_proc_stat(pid, &st))
		return RD_WRITER_DEAD;
	/* a process (even a zombie, or a thread: /proc has tids too) holds
	 * its pid from its start on */
	if ((uint64_t)st.start_ns < start) {
		snprintf(why, whylen,
			 "pid %d has run since %.2fs after boot, before the claimed start at %.2fs",
			 (int)pid, (double)st.start_ns / 1e9, (double)start / 1e9);
		return RD_WRITER_DISPROVED_START;
	}
	if ((uint64_t)st.start_ns != start)
		return RD_WRITER_DEAD;
	if (st.state == 'X' || (st.state == 'Z' && st.num_threads <= 1))
		return RD_WRITER_DEAD;	/* exited: its heap is dead */
	/* The owner of /proc/<pid> is the process's euid (root when it is
	 * not dumpable): one stat() in the common case, its status only
	 * when that is not the files' owner. */
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (owner && (stat(path, &ps) || ps.st_uid != owner) && !proc_uids(pid, ids) &&
	    !uid_fits(owner, ids)) {
		struct bl_proc_stat again;

		/* still the process whose start the heap names (not a pid
		 * reused between the two reads)? */
		if (bl_proc_stat(pid, &again) || again.start_ns != st.start_ns)
			return RD_WRITER_DEAD;
		snprintf(why, whylen, "pid %d runs as uid %u, which cannot have made a file of uid %u",
			 (int)pid, (unsigned)ids[1], (unsigned)owner);
		return RD_WRITER_DISPROVED_UID;
	}
	/* a process names itself (prctl, the file it runs): printable only */
	rd_sanitize(comm, st.comm, strnlen(st.comm, commlen - 1));
	return RD_WRITER_LIVE;
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
	/* no answer from poll(): each is asked on its own (renamed()) */
	for (i = 0; i < a->c.nlast; i++)
		last[i].checked_ns = a->now_ns - RD_ALIVE_RECHECK_NS;
}

/*
 * A watched writer's name again, from /proc/<pid>/comm: its pidfd says it
 * is the same process, so no start time to check and no thread to sum
 * (the old name stays if that file cannot be read). False if the writer
 * exited meanwhile: asked after the read, so a name read is its own.
 */
static bool renamed(int32_t pid, int pidfd, char comm[16])
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	char path[32], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n > 0 && buf[n - 1] == '\n')
			n--;
		if (n > 0)
			rd_sanitize(comm, buf, (size_t)n < 15 ? (size_t)n : 15);
	}
	return poll(&p, 1, 0) <= 0;
}

/* @w, watched through @pidfd, carried to the current snapshot (else its
 * pidfd is closed): false if out of memory. */
static bool watch(struct rd_alive *a, const struct rd_writer *w, int pidfd)
{
	struct rd_writer *nw = rd_carry_add(&a->c);

	if (!nw) {
		close(pidfd);
		return false;
	}
	*nw = *w;
	nw->pidfd = pidfd;
	nw->exited = nw->taken = false;
	a->npidfds++;
	return true;
}

enum rd_verdict rd_alive(struct rd_alive *a, int32_t pid, uint64_t start, uid_t owner,
			 char *comm, size_t commlen, char *why, size_t whylen)
{
	struct rd_writer_key key = { .pid = pid, .start = start };
	struct rd_writer *w = rd_carry_find(&a->c, &key, writer_cmp), nw;
	const struct rd_writer *just = a->c.ncur ? (const struct rd_writer *)a->c.cur + a->c.ncur - 1
						 : NULL;
	enum rd_verdict v;
	int pidfd = -1;

	/* another heap of the writer asked for last (a process's heaps come
	 * one after another: where.h, seq), found live and watched: the
	 * same answer, without a second pidfd */
	if (just && just->pid == pid && just->start == start) {
		snprintf(comm, commlen, "%s", just->comm);
		return RD_WRITER_LIVE;
	}
	if (w && !w->taken) {
		w->taken = true;
		if (w->exited)
			return RD_WRITER_DEAD;	/* its pidfd is closed at the end */
		pidfd = w->pidfd;
		w->pidfd = -1;	/* now ours, whatever follows */
		if (a->npidfds >= a->budget) {
			close(pidfd);	/* the limit was lowered: /proc below */
			pidfd = -1;
		} else {
			if (!a->comm_once && a->now_ns - w->checked_ns >= RD_ALIVE_RECHECK_NS) {
				if (!renamed(pid, pidfd, w->comm)) {
					close(pidfd);
					return RD_WRITER_DEAD;
				}
				w->checked_ns = a->now_ns;
			}
			if (watch(a, w, pidfd)) {
				snprintf(comm, commlen, "%s", w->comm);
				return RD_WRITER_LIVE;
			}
			pidfd = -1;	/* out of memory: /proc below */
		}
	}
	if (!pid_exists(pid)) {
		if (pidfd >= 0)
			close(pidfd);
		return RD_WRITER_DEAD;
	}
	if (pidfd < 0)
		pidfd = open_pidfd(a, pid);	/* before /proc is read (see the top) */
	v = proc_check(pid, start, owner, comm, commlen, why, whylen);
	if (v != RD_WRITER_LIVE) {
		if (pidfd >= 0)
			close(pidfd);
		return v;
	}
	if (pidfd < 0)
		return RD_WRITER_LIVE;	/* not watched: /proc again next time */
	/* Writers first seen in one snapshot have their names read again in
	 * different ones: each first at its own moment of the second (a hash
	 * of its pid), then once a second. */
	nw = (struct rd_writer){ .pid = pid, .start = start,
				 .checked_ns = a->now_ns - (uint32_t)pid * 2654435761u %
						       RD_ALIVE_RECHECK_NS };
	snprintf(nw.comm, sizeof(nw.comm), "%s", comm);
	watch(a, &nw, pidfd);
	return RD_WRITER_LIVE;
}

/* The pidfds of the last snapshot's writers that were not carried over. */
static void close_last(struct rd_carry *c)
{
	rd_carry_close_last(c, offsetof(struct rd_writer, pidfd));
}

uint64_t rd_alive_pidfds_to_come(const struct rd_alive *a)
{
	return a->no_pidfd || a->npidfds >= a->budget ? 0 : a->budget - a->npidfds;
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
