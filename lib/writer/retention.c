// SPDX-License-Identifier: MIT
/*
 * The writer's retention of dead heaps in a directory
 * (Documentation/heap-format.rst, "Retention"), at a cost per heap
 * creation that does not grow with the heaps there. A heap is dead when
 * /proc shows no process of its pid and start time and no process holds
 * a lock on its files (a writer share-locks each slab file while it has
 * it mapped; a process we cannot see in /proc may still live, in a
 * container sharing the directory: JDK-8286030); the most recently noticed dead heaps are kept up to a
 * count and a byte budget ($BLAMER_DIR_MAX_DEAD, default 64;
 * $BLAMER_DIR_MAX_DEAD_BYTES, default 64 MiB), the others deleted, the
 * longest dead first, a few per step. Only files that bl_slab_file_ok()
 * accepts (format/where.h: what the library could have made) are
 * touched.
 *
 * Every writer that makes a heap trims, and a trim used to look at every
 * heap of the directory: making 10,000 heaps in one directory took 13
 * minutes where 1,000 took 7 s. Now each trim does a bounded step of the
 * work, and what the steps need to know is kept in the directory, in the
 * state file BL_TRIM_STATE (under an exclusive flock: one trim at a time;
 * a writer that finds it taken does not wait, it skips its step):
 *
 *  - a sweep: the next TRIM_SWEEP entries of the directory from a
 *    cursor (a directory offset, which the file system keeps stable),
 *    wrapping at the end. A heap found dead there (as before: no process
 *    of its pid and start time in /proc, no lock on its first file, its
 *    files quiet for a second) gets its first file's write bits taken
 *    off (its ctime: when its death was noticed) and joins
 *  - a queue of the dead heaps in the order their deaths were noticed,
 *    with their bytes and which slab files they have; the oldest beyond
 *    $BLAMER_DIR_MAX_DEAD heaps or $BLAMER_DIR_MAX_DEAD_BYTES bytes are
 *    deleted, TRIM_EVICT of them per step (files last to first, so a
 *    step cut short leaves no slab without its first);
 *  - a check of TRIM_VERIFY queued heaps per step, round robin: one
 *    released meanwhile (blamer release) leaves the queue and stops
 *    counting against the limits.
 *
 * A heap marked dead before the queue existed (the state file was made
 * at its epoch; a heap noticed since is marked later) is taken into it
 * when the sweep passes it, in the order of the marks within one step.
 * The state file is the writer's own word like the heaps: a state file
 * that does not check out is started afresh, never trusted further.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "clock.h"
#include "heap_format.h"
#include "proc.h"
#include "where.h"
#include "internal.h"

#define TRIM_SWEEP	64u	/* directory entries looked at per step */
#define TRIM_EVICT	16u	/* dead heaps deleted per step, at most */
#define TRIM_VERIFY	16u	/* queued heaps checked per step */
#define TRIM_COMPACT	4096u	/* entries popped before the queue moves down */
#define TRIM_MAX_QUEUE	(1ull << 22)

/* "BLRTRIM2": entries with a seq; a state of "BLRTRIM1" (an older
 * writer's, or one of an older writer beside us) is started afresh */
#define TRIM_MAGIC	0x324d495254524c42ull

struct trim_hdr {
	uint64_t magic;
	uint64_t epoch_ns;	/* CLOCK_REALTIME_COARSE when the queue began */
	uint64_t cursor;	/* directory offset the sweep goes on from */
	uint64_t vcursor;	/* queue entry the check goes on from */
	uint64_t head, tail;	/* the queue: entries [head, tail) */
	uint64_t count, bytes;	/* of its heaps still there */
	uint64_t check;
};

struct trim_entry {
	int32_t pid;		/* 0: left the queue (released) */
	uint32_t first;		/* its lowest slab index */
	uint64_t start;
	uint64_t bytes;
	uint64_t slabs;		/* bit i: slab file i was there */
	uint32_t seq;		/* which of the process's heaps (where.h) */
	uint32_t pad;
};

/* A dead heap found by this step. */
struct found {
	struct trim_entry e;
	uint64_t noticed_ns;
	int fd;			/* its first file, locked: marked when queued */
	mode_t mode;
};

static uint64_t mix(uint64_t h, uint64_t x)
{
	h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

static uint64_t hdr_check(const struct trim_hdr *h)
{
	uint64_t c = mix(h->magic, h->epoch_ns);

	c = mix(c, h->cursor);
	c = mix(c, h->vcursor);
	c = mix(c, h->head);
	c = mix(c, h->tail);
	c = mix(c, h->count);
	return mix(c, h->bytes);
}

static off_t entry_off(uint64_t i)
{
	return (off_t)(sizeof(struct trim_hdr) + i * sizeof(struct trim_entry));
}

static bool read_entry(int fd, uint64_t i, struct trim_entry *e)
{
	return pread(fd, e, sizeof(*e), entry_off(i)) == (ssize_t)sizeof(*e);
}

/* (Past RLIMIT_FSIZE, not written: bl_fsize_allows().) */
static bool write_entry(int fd, uint64_t i, const struct trim_entry *e)
{
	return bl_fsize_allows((uint64_t)entry_off(i + 1)) &&
	       pwrite(fd, e, sizeof(*e), entry_off(i)) == (ssize_t)sizeof(*e);
}

/* The state, or a fresh one if it does not check out. */
static void load(int fd, struct trim_hdr *h)
{
	struct timespec now;
	struct stat st;

	if (pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h) && h->magic == TRIM_MAGIC &&
	    h->check == hdr_check(h) && h->head <= h->tail &&
	    h->tail - h->head <= TRIM_MAX_QUEUE && h->count <= h->tail - h->head &&
	    !fstat(fd, &st) && (uint64_t)st.st_size >= (uint64_t)entry_off(h->tail))
		return;
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	memset(h, 0, sizeof(*h));
	h->magic = TRIM_MAGIC;
	h->epoch_ns = bl_ts_ns(&now);
}

static void store(int fd, struct trim_hdr *h)
{
	h->check = hdr_check(h);
	if (!bl_fsize_allows(sizeof(*h)) || pwrite(fd, h, sizeof(*h), 0) != (ssize_t)sizeof(*h))
		h->magic = 0;
}

/*
 * The slab files of heap @e there are from its first on (a bit each),
 * and their bytes: up to the first index missing (a writer makes them in
 * order; a file past a gap is found by a later sweep as a heap of its
 * own and goes the same way).
 */
static uint64_t heap_slabs(int dirfd, const struct trim_entry *e, uint64_t *bytes)
{
	char name[BL_SLAB_NAME_MAX];
	uint64_t mask = 0;
	struct stat st;
	uint32_t i;

	*bytes = 0;
	for (i = e->first; i < BLAMER_MAX_SLABS; i++) {
		bl_slab_name(name, sizeof(name), e->pid, e->start, e->seq, i);
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
			break;
		if (!bl_slab_file_ok(&st))
			continue;
		mask |= 1ull << i;
		*bytes += (uint64_t)st.st_size;
	}
	return mask;
}

/* Deletes what is left of queued heap @e: last file first. */
static void remove_entry(int dirfd, const struct trim_entry *e)
{
	char name[BL_SLAB_NAME_MAX];
	struct stat st;
	uint32_t i;

	for (i = BLAMER_MAX_SLABS; i-- > 0;) {
		if (!(e->slabs & (1ull << i)))
			continue;
		bl_slab_name(name, sizeof(name), e->pid, e->start, e->seq, i);
		if (!fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && bl_slab_file_ok(&st))
			unlinkat(dirfd, name, 0);
	}
}

/* Is queued heap @e still there (its first file)? */
static bool entry_there(int dirfd, const struct trim_entry *e)
{
	char name[BL_SLAB_NAME_MAX];
	struct stat st;

	bl_slab_name(name, sizeof(name), e->pid, e->start, e->seq, e->first);
	return !fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && bl_slab_file_ok(&st);
}

static int64_t ns_since(const struct timespec *t, uint64_t now)
{
	return (int64_t)(now - bl_ts_ns(t));
}

/*
 * The directory entry @name as the first file of a heap dead and not
 * queued yet: into @f (its first file open and locked). False for
 * anything else: not a slab file of ours, a slab whose heap has a first
 * file elsewhere, queued already, quiet for less than a second, alive.
 */
static bool dead_one(int dirfd, const char *name, const struct trim_hdr *h, uint64_t now,
		     struct found *f)
{
	char first[BL_SLAB_NAME_MAX];
	struct bl_proc_stat ps;
	struct stat st;
	int32_t pid;
	uint64_t start;
	uint32_t seq, idx, i;
	int fd;

	if (!bl_slab_name_parse(name, &pid, &start, &seq, &idx))
		return false;
	/* a lower slab file is its heap's first (one look: slab 0 is there
	 * but for a heap cut short) */
	for (i = 0; i < idx; i++) {
		bl_slab_name(first, sizeof(first), pid, start, seq, i);
		if (!fstatat(dirfd, first, &st, AT_SYMLINK_NOFOLLOW))
			return false;
	}
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) || !bl_slab_file_ok(&st))
		return false;
	/* marked since the queue began: in it (a mark before: maybe not) */
	if (!(st.st_mode & 0222) && bl_ts_ns(&st.st_ctim) >= h->epoch_ns)
		return false;
	/* written within the last second: its writer may be between making
	 * it and locking it; more than a second ahead is no youth (a clock
	 * stepped back, or a forged time, must not keep a heap forever) */
	if (ns_since(&st.st_mtim, now) < 1000000000 && ns_since(&st.st_mtim, now) > -1000000000)
		return false;
	if (!bl_proc_stat(pid, &ps) && (uint64_t)ps.start_ns == start && ps.state != 'Z' &&
	    ps.state != 'X')
		return false;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) || fstat(fd, &st) || !bl_slab_file_ok(&st)) {
		close(fd);	/* locked: a writer still has it (another pid namespace) */
		return false;
	}
	f->e = (struct trim_entry){ .pid = pid, .first = idx, .start = start, .seq = seq };
	f->noticed_ns = st.st_mode & 0222 ? now : bl_ts_ns(&st.st_ctim);
	f->fd = fd;
	f->mode = st.st_mode;
	return true;
}

static int found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->noticed_ns != y->noticed_ns)
		return x->noticed_ns < y->noticed_ns ? -1 : 1;
	if (x->e.start != y->e.start)
		return x->e.start < y->e.start ? -1 : 1;
	return x->e.seq < y->e.seq ? -1 : x->e.seq > y->e.seq;
}

/* The sweep's step: dead heaps of the next TRIM_SWEEP entries queued.
 * getdents64() into a small buffer: readdir()'s 32 KiB would make the
 * kernel list hundreds of entries of a big directory for 64 looked at. */
static void sweep(int dirfd, int sfd, struct trim_hdr *h, uint64_t now)
{
	union {
		char b[TRIM_SWEEP * 48];
		struct dirent64 align;
	} buf;
	struct found f[TRIM_SWEEP];
	uint32_t n = 0, seen = 0, i;
	uint64_t next = h->cursor;
	ssize_t got, at;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (h->cursor && lseek(fd, (off_t)h->cursor, SEEK_SET) < 0)
		next = 0;	/* a cursor the directory does not know: from the start */
	got = at = 0;
	while (next == h->cursor || seen) {
		struct dirent64 *de;

		if (at >= got) {
			got = getdents64(fd, buf.b, sizeof(buf.b));
			at = 0;
			if (got <= 0)
				break;	/* the end (or an error): from the start next time */
		}
		de = (struct dirent64 *)(buf.b + at);
		if (de->d_reclen == 0 || at + de->d_reclen > got) {
			got = 0;
			break;
		}
		at += de->d_reclen;
		next = (uint64_t)de->d_off;
		if (dead_one(dirfd, de->d_name, h, now, &f[n]))
			n++;
		if (++seen == TRIM_SWEEP)
			break;
	}
	/* on from the last entry looked at; after the end, from the start */
	h->cursor = seen == TRIM_SWEEP ? next : 0;
	close(fd);
	/* noticed in this order (a heap marked before the queue: its mark);
	 * sorted by insertion, not qsort(), whose glibc malloc()s past 1 KiB
	 * (16 of them): this runs as a fork child's first write makes its
	 * heap, which may be a signal handler's */
	for (i = 1; i < n; i++) {
		struct found x = f[i];
		uint32_t j;

		for (j = i; j > 0 && found_cmp(&f[j - 1], &x) > 0; j--)
			f[j] = f[j - 1];
		f[j] = x;
	}
	for (i = 0; i < n; i++) {
		f[i].e.slabs = heap_slabs(dirfd, &f[i].e, &f[i].e.bytes);
		if (h->tail - h->head < TRIM_MAX_QUEUE && write_entry(sfd, h->tail, &f[i].e)) {
			h->tail++;
			h->count++;
			h->bytes += f[i].e.bytes;
			/* queued: marked, which sets its ctime past the epoch */
			fchmod(f[i].fd, f[i].mode & 0555);
		}
		close(f[i].fd);
	}
}

/* Heaps released meanwhile leave the queue: TRIM_VERIFY checked a step. */
static void verify(int dirfd, int sfd, struct trim_hdr *h)
{
	struct trim_entry e;
	uint32_t k;

	if (h->vcursor < h->head || h->vcursor >= h->tail)
		h->vcursor = h->head;
	for (k = 0; k < TRIM_VERIFY && h->vcursor < h->tail; k++, h->vcursor++) {
		if (!read_entry(sfd, h->vcursor, &e) || !e.pid || entry_there(dirfd, &e))
			continue;
		e.pid = 0;
		if (write_entry(sfd, h->vcursor, &e)) {
			h->count--;
			h->bytes -= e.bytes < h->bytes ? e.bytes : h->bytes;
		}
	}
}

/*
 * Is queued heap @e still dead? Asked again before it is deleted: the
 * queue is a file of the directory, which only its user can write, but a
 * heap is never deleted on a file's word alone. If so, its first file is
 * held locked in *@fd while the heap goes.
 */
static bool still_dead(int dirfd, const struct trim_entry *e, int *fd)
{
	char name[BL_SLAB_NAME_MAX];
	struct bl_proc_stat ps;
	struct stat st;

	*fd = -1;
	if (!bl_proc_stat(e->pid, &ps) && (uint64_t)ps.start_ns == e->start && ps.state != 'Z' &&
	    ps.state != 'X')
		return false;
	bl_slab_name(name, sizeof(name), e->pid, e->start, e->seq, e->first);
	*fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (*fd < 0)
		return true;	/* gone already: nothing of it is locked */
	if (!flock(*fd, LOCK_EX | LOCK_NB) && !fstat(*fd, &st) && bl_slab_file_ok(&st))
		return true;
	close(*fd);
	*fd = -1;
	return false;
}

/* The oldest beyond the limits deleted, TRIM_EVICT at most; the count. */
static int evict(int dirfd, int sfd, struct trim_hdr *h, const struct bl_retention *keep)
{
	struct trim_entry e;
	uint32_t popped = 0;
	int removed = 0, fd;

	while ((h->count > keep->max_dead || h->bytes > keep->max_dead_bytes) &&
	       h->head < h->tail && removed < (int)TRIM_EVICT && popped < 4 * TRIM_EVICT) {
		popped++;
		if (!read_entry(sfd, h->head, &e)) {
			h->magic = 0;	/* cut short: start afresh */
			break;
		}
		h->head++;
		if (!e.pid)
			continue;	/* released meanwhile: counted out already */
		h->count--;
		h->bytes -= e.bytes < h->bytes ? e.bytes : h->bytes;
		if (!still_dead(dirfd, &e, &fd))
			continue;	/* not dead (a queue written by another hand): kept, unqueued */
		remove_entry(dirfd, &e);
		if (fd >= 0)
			close(fd);
		removed++;
	}
	return removed;
}

/* Once the popped entries outnumber those queued: the queue moved down
 * (each entry moves once per as many popped: constant work per step). */
static void compact(int sfd, struct trim_hdr *h)
{
	struct trim_entry buf[256];
	uint64_t n = h->tail - h->head, done = 0;

	if (h->head < TRIM_COMPACT || h->head < n)
		return;
	while (done < n) {
		size_t k = n - done < 256 ? (size_t)(n - done) : 256;
		ssize_t len = (ssize_t)(k * sizeof(buf[0]));

		if (pread(sfd, buf, (size_t)len, entry_off(h->head + done)) != len ||
		    !bl_fsize_allows((uint64_t)entry_off(done + k)) ||
		    pwrite(sfd, buf, (size_t)len, entry_off(done)) != len) {
			h->magic = 0;
			return;
		}
		done += k;
	}
	h->vcursor = h->vcursor >= h->head ? h->vcursor - h->head : 0;
	h->head = 0;
	h->tail = n;
	if (ftruncate(sfd, entry_off(n)))
		h->magic = 0;
}

int bl_slabdir_trim(int dirfd, const struct bl_retention *keep)
{
	struct trim_hdr h;
	struct stat st;
	uint64_t now;
	int sfd, removed;

	sfd = openat(dirfd, BL_TRIM_STATE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (sfd < 0)
		return -errno;
	/* one trim at a time, and never a wait: busy, this step is skipped */
	if (fstat(sfd, &st) || !bl_slab_file_ok(&st) || flock(sfd, LOCK_EX | LOCK_NB)) {
		close(sfd);
		return 0;
	}
	now = bl_clock_ns(CLOCK_REALTIME);
	load(sfd, &h);
	sweep(dirfd, sfd, &h, now);
	verify(dirfd, sfd, &h);
	removed = evict(dirfd, sfd, &h, keep);
	compact(sfd, &h);
	if (h.magic)
		store(sfd, &h);
	if (!h.magic && ftruncate(sfd, 0)) {
		/* a failed write, and no way to say so: load() finds the
		 * state does not check out and starts afresh */
	}
	close(sfd);
	return removed;
}

int bl_slabdir_remove_heap(int dirfd, int64_t pid, int64_t start_ns, uint32_t seq)
{
	char name[BL_SLAB_NAME_MAX];
	struct stat st;
	int removed = 0;
	uint32_t i;

	/* each name a heap's slab can have, last first (a removal cut
	 * short leaves no slab without its first): a cost that does not
	 * grow with the directory, where a readdir of it did */
	for (i = BLAMER_MAX_SLABS; i-- > 0;) {
		bl_slab_name(name, sizeof(name), pid, (uint64_t)start_ns, seq, i);
		/* only what the library could have made */
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) || !bl_slab_file_ok(&st))
			continue;
		if (!unlinkat(dirfd, name, 0))
			removed++;
	}
	return removed;
}

bool bl_slabdir_heap_folds(int dirfd, int64_t pid, int64_t start_ns, uint32_t seq)
{
	struct blamer_heap_header hh;
	char name[BL_SLAB_NAME_MAX];
	struct stat st;
	bool folds = false;
	int fd;

	bl_slab_name(name, sizeof(name), pid, (uint64_t)start_ns, seq, 0);
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	/* only a file the library could have made says anything */
	if (!fstat(fd, &st) && bl_slab_file_ok(&st) &&
	    pread(fd, &hh, sizeof(hh), BLAMER_HEAP_HEADER_OFFSET) == (ssize_t)sizeof(hh))
		folds = hh.flags & BLAMER_HEAP_F_FOLD;
	close(fd);
	return folds;
}

static int env_u64(const char *name, uint64_t max, bool suffix, uint64_t *out,
		   char *why, size_t whylen)
{
	const char *e = secure_getenv(name), *p;
	uint64_t v = 0, mul = 1;

	if (!e || !*e)
		return 0;
	for (p = e; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			goto bad;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == e)
		goto bad;
	if (suffix && *p) {
		mul = *p == 'K' ? 1ull << 10 : *p == 'M' ? 1ull << 20 : *p == 'G' ? 1ull << 30 : 0;
		p++;
	}
	if (*p || !mul || v > max / mul)
		goto bad;
	*out = v * mul;
	return 0;
bad:
	snprintf(why, whylen, "%s=%s: give a number%s up to %llu", name, e,
		 suffix ? " of bytes (K, M or G for KiB, MiB, GiB)" : "", (unsigned long long)max);
	return -EINVAL;
}

int bl_retention_from_env(struct bl_retention *r, char *why, size_t whylen)
{
	uint64_t n = BL_DEFAULT_MAX_DEAD;

	r->max_dead_bytes = BL_DEFAULT_MAX_DEAD_BYTES;
	if (env_u64("BLAMER_DIR_MAX_DEAD", 1u << 20, false, &n, why, whylen) ||
	    env_u64("BLAMER_DIR_MAX_DEAD_BYTES", 1ull << 50, true, &r->max_dead_bytes, why,
		    whylen))
		return -EINVAL;
	r->max_dead = (uint32_t)n;
	return 0;
}
