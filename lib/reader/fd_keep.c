// SPDX-License-Identifier: MIT
/*
 * A long-lived reader's descriptors of live dir heaps' slab files, kept
 * open from one snapshot to the next. An exporter scraped every few
 * seconds reads the same live heaps each time; without this, every read
 * of a file paid an openat() (a path walk and a new open file) and a
 * close() around the pread()s that are the point. With 1,000 workers
 * those two were a fifth of a scrape.
 *
 * What a kept descriptor may not change is which file is read, and what
 * is trusted of it:
 *  - A descriptor is kept with the inode it was opened on, and is used
 *    again only if the name, as this snapshot's readdir() lists it, is
 *    still that inode (d_ino; the directory is one file system, so the
 *    inode names the file). A heap released (the name gone) or replaced
 *    (the name now another file) is read, if at all, through a fresh
 *    openat(); the old descriptor is closed then (a name gone: at the end
 *    of the snapshot, which did not take it). The directory, opened
 *    again for each snapshot, must be on the same file system (st_dev)
 *    as the kept file was.
 *  - The caller still fstat()s the descriptor every time and applies the
 *    same trust rules as to a file it just opened (owner, type, mode,
 *    links: bl_slab_file_why()), and treats a file with no link left as
 *    vanished, as openat() would have failed on it.
 *  - Only live heaps' files are kept (a dead heap's bytes do not change,
 *    and a serving reader keeps them decoded instead: keep.c).
 *  - As the pidfds of alive.c: from the second snapshot on (a one-shot
 *    reader keeps nothing), at most a quarter of RLIMIT_NOFILE's soft
 *    limit, and none once the descriptor table is half full. A pidfd
 *    spares more (a /proc read) than a kept file (an openat()), so the
 *    pidfds the reader may still open count as taken: kept files never
 *    make the table look half full to alive.c.
 */
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

/* One kept file: by heap (pid, start, seq) and slab index, as dir.c
 * lists them. */
struct rd_kept_fd {
	int32_t pid;
	uint32_t idx;
	uint64_t start;
	uint64_t dev, ino;
	uint32_t seq;
	int fd;			/* -1: taken by the current snapshot */
};

#define RD_FDKEEP_MAX	(1u << 20)

static int kept_cmp(const void *key, const void *entry)
{
	const struct rd_kept_fd *k = key, *e = entry;
	int c = rd_pid_start_cmp(k->pid, k->start, e->pid, e->start);

	if (c)
		return c;
	if (k->seq != e->seq)
		return k->seq < e->seq ? -1 : 1;
	return k->idx < e->idx ? -1 : k->idx > e->idx;
}

void rd_fdkeep_begin(struct rd_fdkeep *k)
{
	struct rlimit rl;

	if (!k->c.elsz)
		k->c = RD_CARRY(struct rd_kept_fd, RD_FDKEEP_MAX);
	k->n = 0;
	k->budget = 0;
	if (k->snapshots && !getrlimit(RLIMIT_NOFILE, &rl)) {
		k->fd_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
		k->budget = k->fd_limit / 4 < RD_FDKEEP_MAX ? k->fd_limit / 4 : RD_FDKEEP_MAX;
	}
}

int rd_fdkeep_take(struct rd_fdkeep *k, const struct rd_dfile *f, uint64_t dev)
{
	struct rd_kept_fd key = { .pid = f->pid, .idx = f->idx, .start = f->start, .seq = f->seq };
	struct rd_kept_fd *e;
	uint64_t ino = f->ino;
	int fd;

	e = rd_carry_find(&k->c, &key, kept_cmp);
	if (!e || e->fd < 0)
		return -1;
	fd = e->fd;
	e->fd = -1;
	/* the name is another file now (or readdir did not say), or the
	 * directory another file system's: not this */
	if (!ino || e->ino != ino || e->dev != dev) {
		close(fd);
		return -1;
	}
	return fd;
}

bool rd_fdkeep_put(struct rd_fdkeep *k, const struct rd_dfile *f, uint64_t dev, int fd,
		   uint64_t reserve)
{
	uint64_t ino = f->ino;
	struct rd_kept_fd *e;

	/* the lowest free descriptor this high: the table is half full, or
	 * would be once the pidfds still to come are open */
	if (!ino || k->n >= k->budget || (uint64_t)fd + reserve >= k->fd_limit / 2)
		return false;
	e = rd_carry_add(&k->c);
	if (!e)
		return false;
	*e = (struct rd_kept_fd){ .pid = f->pid, .idx = f->idx, .start = f->start, .seq = f->seq,
				  .dev = dev, .ino = ino, .fd = fd };
	k->n++;
	return true;
}

/* The last snapshot's descriptors it did not take. */
static void close_last(struct rd_carry *c)
{
	rd_carry_close_last(c, offsetof(struct rd_kept_fd, fd));
}

void rd_fdkeep_end(struct rd_fdkeep *k)
{
	close_last(&k->c);
	/* put in the order dir.c reads files, which is kept_cmp()'s */
	rd_carry_swap(&k->c, NULL);
	k->snapshots++;
}

void rd_fdkeep_free(struct rd_fdkeep *k)
{
	close_last(&k->c);
	rd_carry_swap(&k->c, NULL);
	close_last(&k->c);
	rd_carry_free(&k->c);
	k->n = k->budget = 0;
	k->snapshots = 0;
}
