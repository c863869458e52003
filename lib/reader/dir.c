// SPDX-License-Identifier: MIT
/*
 * Dir backend: heaps are files `<pid>-<start_ns>.<index>.slab` in one
 * directory. The rules are the writer's own, from format/where.h, and
 * the reader applies them exactly: the directory is opened without
 * following a symlink and must be a directory of the expected owner that
 * nobody else may write; everything in it is reached through that
 * descriptor (openat, O_NOFOLLOW), so a symlink anywhere that matters is
 * refused, never followed; a slab file must be regular, of the same
 * owner, singly linked, writable by nobody else and named canonically.
 * Whatever fails is skipped and noted in the snapshot with the reason.
 *
 * Reading: a slab's first bytes are read (its headers, and all of a
 * small heap), the header is checked, and only then the rest, up to the
 * slab's freeptr: the bytes its writer allocated, never the file's
 * claimed size. A file with far fewer blocks allocated than that (a
 * sparse file) is read only as far as its blocks go, and the heap is
 * truncated. Copies go into one buffer the reader keeps for the next heap
 * and snapshot. pread() into private memory: a file truncated or
 * replaced under us gives a short read, never a SIGBUS.
 *
 * A dead heap's end: the exit its writer recorded (slabs.c takes the
 * status from the header; slab 0's modification time is the moment), or
 * else the latest sign of life its files and records show.
 *
 * Cost: a heap is live iff its writer is (alive.c: /proc/<pid>/stat
 * shows the same start time; a long-lived reader keeps pidfds instead).
 * Dead heaps are summarized from their names (and an fstatat() of each
 * file) unless BLAMER_READ_DEAD_FULL asks for them, and
 * BLAMER_READ_HEADERS_ONLY reads just the headers of every heap: a
 * snapshot costs O(live data) plus a readdir, not O(dead history).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "internal.h"
#include "where.h"

#define RD_MAX_DIR_FILES	(1u << 20)
/* a buffer bigger than this is not kept for the next heap */
#define RD_KEEP_BUF		(4u << 20)

static int dfile_cmp(const void *a, const void *b)
{
	const struct rd_dfile *x = a, *y = b;
	int c = rd_pid_start_cmp(x->pid, x->start, y->pid, y->start);

	return c ? c : x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void dfile_name(char *buf, const struct rd_dfile *f)
{
	bl_slab_name(buf, BL_SLAB_NAME_MAX, f->pid, f->start, f->idx);
}

/*
 * Opens the directory under the writer's rules. The owner expected is
 * the caller's euid (a directory another user made first is squatting);
 * root may read a directory it named explicitly (--dir, $BLAMER_DIR) of
 * another owner, whose files must then all be that owner's. 0 (fd in
 * d->fd), 1 if there is no directory yet, or -errno with a message.
 */
static int open_dir(struct rd_dirwalk *d, char *err, size_t errlen)
{
	uid_t me = geteuid();
	char why[512];
	int fd;

	fd = bl_slabdir_open_read(d->r->source, &d->owner, why, sizeof(why));
	if (fd >= 0 && d->owner != me && !(me == 0 && d->r->explicit_dir)) {
		close(fd);
		snprintf(why, sizeof(why),
			 "%s is owned by uid %u, not by uid %u: refused (another user may have made it; remove it)",
			 d->r->source, (unsigned)d->owner, (unsigned)me);
		fd = -EPERM;
	}
	if (fd == -ENOENT)
		return 1;	/* no process has made a heap yet */
	if (fd < 0) {
		if (fd == -EACCES)
			rd_err(err, errlen, "%s: %s (heaps of other users are not readable)",
			       why, strerror(-fd));
		else if (fd == -EPERM)
			rd_err(err, errlen, "%s", why);
		else
			rd_err(err, errlen, "%s: %s", why, strerror(-fd));
		return fd;
	}
	d->fd = fd;
	return 0;
}

/* The slab files of the directory, sorted by heap and index; the rest skipped. */
static int list_files(struct rd_dirwalk *d, struct rd_dfile **out, size_t *nout, char *err, size_t errlen)
{
	struct rd_dfile *files = NULL, f;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *dh;
	int fd;

	fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dh = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dh) {
		rd_err(err, errlen, "%s: %s", d->r->source, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((de = readdir(dh))) {
		/* the writers' retention state (format/trim.c): theirs, no heap */
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, BL_TRIM_STATE))
			continue;
		if (!bl_slab_name_parse(de->d_name, &f.pid, &f.start, &f.idx)) {
			rd_skip(d->s, de->d_name, "not a slab file name (<pid>-<start_ns>.<index>.slab)");
			continue;
		}
		f.type = de->d_type;
		if (f.type == DT_LNK) {
			rd_skip(d->s, de->d_name, "a symlink, not followed");
			continue;
		}
		if (f.type != DT_REG && f.type != DT_UNKNOWN) {
			rd_skip(d->s, de->d_name, "not a regular file");
			continue;
		}
		if (n == cap) {
			struct rd_dfile *nf;

			if (cap >= RD_MAX_DIR_FILES) {
				rd_skip(d->s, de->d_name, "more than %u slab files", RD_MAX_DIR_FILES);
				continue;
			}
			cap = cap ? cap * 2 : 64;
			nf = realloc(files, cap * sizeof(*nf));
			if (!nf) {
				free(files);
				closedir(dh);
				rd_err(err, errlen, "out of memory");
				return -ENOMEM;
			}
			files = nf;
		}
		files[n++] = f;
	}
	closedir(dh);
	if (n)
		qsort(files, n, sizeof(*files), dfile_cmp);
	*out = files;
	*nout = n;
	return 0;
}

/* Room for @len bytes at @off of the reader's buffer. */
static bool buf_room(struct blamer_reader *r, size_t off, size_t len)
{
	size_t need = off + len, cap;
	uint8_t *nb;

	if (need <= r->bufcap && r->buf)
		return true;
	cap = r->bufcap ? r->bufcap : RD_FIRST_READ;
	while (cap < need)
		cap *= 2;
	nb = realloc(r->buf, cap);
	if (!nb)
		return false;
	r->buf = nb;
	r->bufcap = cap;
	return true;
}

/* pread() until @len bytes or the end of the file; the bytes read. */
static size_t read_at(int fd, uint8_t *dst, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t got;

	while (done < len) {
		got = pread(fd, dst + done, len - done, (off_t)(off + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;	/* truncated under us: keep what we have */
		done += (size_t)got;
	}
	return done;
}

/*
 * How many bytes of a slab to read, from its first @got bytes at @b:
 * none more unless the slab header is one this reader reads; then up to
 * the header's freeptr, within the file, the reader's limits and, for a
 * sparse file, the blocks it really has.
 */
static uint64_t slab_want(struct rd_dirwalk *d, struct blamer_snap_process *p, const struct stat *st,
			  const uint8_t *b, size_t got, uint32_t idx, bool headers_only,
			  uint64_t heap_read)
{
	struct blamer_slab_header sh;
	uint64_t want, have;

	if (got < sizeof(sh))
		return got;
	memcpy(&sh, b, sizeof(sh));
	if (sh.magic != BLAMER_HEAP_MAGIC || !rd_version_ok(sh.version) ||
	    sh.header_size != sizeof(sh))
		return got;	/* rd_heap_order() says what is wrong */
	want = sh.freeptr < (uint64_t)st->st_size ? sh.freeptr : (uint64_t)st->st_size;
	if (headers_only) {
		struct blamer_heap_header hh;
		uint64_t need = sizeof(sh);

		/* slab 0: the heap header, and the process record if it is here */
		if (idx == 0 && got >= BLAMER_HEAP_HEADER_OFFSET + sizeof(hh)) {
			memcpy(&hh, b + BLAMER_HEAP_HEADER_OFFSET, sizeof(hh));
			need = BLAMER_HEAP_HEADER_OFFSET + sizeof(hh);
			if (blamer_ref_slab(hh.process) == 0 &&
			    blamer_ref_offset(hh.process) < RD_FIRST_READ)
				need = blamer_ref_offset(hh.process) + sizeof(struct blamer_process);
		}
		return want < need ? want : need;
	}
	if (want > d->r->opts.max_slab_bytes) {
		rd_problem(p, BLAMER_HEALTH_TRUNCATED,
			   "slab %u: %llu bytes used, over the %llu read of one slab", idx,
			   (unsigned long long)want, (unsigned long long)d->r->opts.max_slab_bytes);
		want = d->r->opts.max_slab_bytes;
	}
	if (heap_read + want > RD_MAX_HEAP_BYTES) {
		rd_problem(p, BLAMER_HEALTH_TRUNCATED, "heap over the %llu bytes read of one heap",
			   (unsigned long long)RD_MAX_HEAP_BYTES);
		want = heap_read < RD_MAX_HEAP_BYTES ? RD_MAX_HEAP_BYTES - heap_read : 0;
	}
	/* The writer allocates its files' blocks (posix_fallocate); a file
	 * whose blocks fall far short of what it claims is sparse, and its
	 * holes would only be read as zeros. */
	have = (uint64_t)st->st_blocks * 512;
	if (have + RD_FIRST_READ < want) {
		rd_problem(p, BLAMER_HEALTH_TRUNCATED,
			   "slab %u: %llu bytes used but only %llu allocated (a sparse file)", idx,
			   (unsigned long long)want, (unsigned long long)have);
		want = (have + 4095) & ~4095ull;
	}
	return want > got ? want : got;
}

static int hint_cmp(const void *key, const void *entry)
{
	const struct rd_hint *h = entry;
	struct rd_dfile k = { .pid = h->pid, .start = h->start, .idx = h->idx };

	return dfile_cmp(key, &k);
}

/*
 * A long-lived reader reads a slab file first as far as the last
 * snapshot read it: a dead heap's bytes exactly (they do not change), a
 * live one's and a page to grow into. A first snapshot, and a file not
 * read last time, start with RD_FIRST_READ. Either way the header is
 * checked before anything more is read, and what is read past the
 * freeptr is not kept: the hint only spares a second pread() or copying
 * bytes no record is in.
 */
static uint64_t hint_of(const struct blamer_reader *r, const struct rd_dfile *f)
{
	const struct rd_hint *h = rd_carry_find(&r->hints, f, hint_cmp);

	return h ? h->bytes : 0;
}

static void hint_note(struct blamer_reader *r, const struct rd_dfile *f, uint64_t bytes)
{
	struct rd_hint *h;

	if (!r->hints.elsz)
		r->hints = RD_CARRY(struct rd_hint, RD_MAX_DIR_FILES);
	h = rd_carry_add(&r->hints);
	if (h)	/* else no hint next time: RD_FIRST_READ */
		*h = (struct rd_hint){ .pid = f->pid, .idx = f->idx, .start = f->start,
				       .bytes = bytes };
}

/* The end of a snapshot: its reads are the hints of the next (files are
 * read in dfile_cmp() order: the notes come sorted). */
static void hint_swap(struct blamer_reader *r)
{
	rd_carry_swap(&r->hints, NULL);
}

static void dir_close(struct blamer_reader *r)
{
	rd_carry_free(&r->hints);
	rd_alive_free(&r->alive);
}

/* Why the slab file @name did not open with @err: the trust rule it
 * breaks if it breaks one, else the error. */
static const char *open_why(struct rd_dirwalk *d, const char *name, int err)
{
	const char *why = NULL;
	struct stat st;

	if (!fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW))
		why = bl_slab_file_why(&st, d->owner);
	return why ? why : strerror(err);
}

/* What says a slab file is the one a kept heap was decoded from. */
static void kept_slab(struct rd_kept_slab *ks, const struct rd_dfile *f, const struct stat *st)
{
	memset(ks, 0, sizeof(*ks));
	ks->id = f->idx;
	ks->v[0] = (uint64_t)st->st_dev;
	ks->v[1] = (uint64_t)st->st_ino;
	ks->v[2] = (uint64_t)st->st_size;
	ks->v[3] = bl_ts_ns(&st->st_mtim);
	ks->v[4] = bl_ts_ns(&st->st_ctim);
}

/* One heap's read: where its copies go in the reader's buffer. */
struct heap_read {
	struct rd_dirwalk *d;
	struct rd_walk *w;	/* the heap: its process, what to read */
	size_t off;		/* the buffer's next free byte */
	uint64_t bytes;		/* read of the heap so far */
};

/*
 * Reads one slab file into the reader's buffer at hr->off (which it
 * advances). @ks gets what identifies the file (kept_slab()); the first
 * file of a heap to keep is checked for a writer holding its lock
 * (d->held). False if the file is not read (skipped or gone; said why).
 */
static bool read_slab(struct heap_read *hr, const struct rd_dfile *f, bool first_file,
		      struct rd_slab *s, struct rd_kept_slab *ks)
{
	struct rd_dirwalk *d = hr->d;
	struct blamer_snap_process *p = hr->w->p;
	bool headers_only = hr->w->headers_only;
	size_t *off = &hr->off;
	struct blamer_reader *r = d->r;
	char name[BL_SLAB_NAME_MAX];
	const char *why;
	struct stat st;
	uint64_t first, want;
	size_t got;
	int fd;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->id = f->idx;
	dfile_name(name, f);
	fd = openat(d->fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ELOOP)
			rd_skip(d->s, name, "a symlink, not followed");
		else if (errno == ENOENT)	/* removed since readdir: released */
			rd_problem(p, BLAMER_HEALTH_CORRUPT, "slab %u vanished while read", f->idx);
		else	/* say why: mostly a file that is not ours (not readable) */
			rd_skip(d->s, name, "%s", open_why(d, name, errno));
		return false;
	}
	if (fstat(fd, &st)) {
		rd_problem(p, BLAMER_HEALTH_UNREADABLE, "%s: %s", name, strerror(errno));
		close(fd);
		return false;
	}
	why = bl_slab_file_why(&st, d->owner);
	if (why) {
		rd_skip(d->s, name, "%s", why);
		close(fd);
		return false;
	}
	kept_slab(ks, f, &st);
	/* Kept for later snapshots only if no writer holds its lock: one in
	 * another pid namespace, that /proc does not show, still writes. */
	if (first_file && hr->w->keep) {
		if (!flock(fd, LOCK_EX | LOCK_NB))
			flock(fd, LOCK_UN);
		else
			d->held = true;
	}
	/* a writer's pages are first written, or its exit recorded, by now */
	if (bl_ts_ns(&st.st_mtim) > d->mtime_ns)
		d->mtime_ns = bl_ts_ns(&st.st_mtim);
	p->size += (uint64_t)st.st_size;
	s->real_size = (uint64_t)st.st_size;
	first = headers_only ? RD_FIRST_READ_HEADERS : RD_FIRST_READ;
	if (!headers_only) {
		uint64_t hint = hint_of(r, f);

		if (hint >= sizeof(struct blamer_slab_header))
			first = p->state == BLAMER_PROC_LIVE ? (hint + 8191) & ~4095ull : hint;
	}
	if (first > (uint64_t)st.st_size)
		first = (uint64_t)st.st_size;
	if (!buf_room(r, *off, first)) {
		rd_problem(p, BLAMER_HEALTH_UNREADABLE, "out of memory for %s", name);
		close(fd);
		return false;
	}
	got = read_at(fd, r->buf + *off, first, 0);
	want = slab_want(d, p, &st, r->buf + *off, got, f->idx, headers_only, hr->bytes);
	if (want > got) {
		if (!buf_room(r, *off, want)) {
			rd_problem(p, BLAMER_HEALTH_UNREADABLE, "out of memory for %s", name);
			close(fd);
			return false;
		}
		if (got == first)
			got += read_at(fd, r->buf + *off + got, want - got, got);
	}
	if (got > want)
		got = want;
	if (!headers_only) {
		struct blamer_slab_header sh;
		uint64_t used = got;

		/* what the writer allocated of what was read, for next time
		 * (a claim: at worst the next first read is a bad guess) */
		if (got >= sizeof(sh)) {
			memcpy(&sh, r->buf + *off, sizeof(sh));
			if (sh.freeptr < used)
				used = sh.freeptr;
		}
		hint_note(r, f, used);
		ks->hint = used;
	}
	/* buf is set once every slab of the heap is in (the buffer may move) */
	s->buf = (uint8_t *)(uintptr_t)*off;
	s->size = got;	/* the only size we trust */
	s->copied = true;
	*off += (got + 7) & ~(size_t)7;
	if (headers_only || p->state != BLAMER_PROC_LIVE)
		close(fd);	/* no writer: nothing will change */
	else
		s->fd = fd;	/* kept for the second read and torn records */
	return true;
}

/* @t if it is later than @best but not past @now: the future is no evidence. */
static uint64_t later(uint64_t best, uint64_t t, uint64_t now)
{
	return t > best && t <= now ? t : best;
}

/*
 * The latest sign of life of a dead process: its files' modification
 * times (the exit, if recorded), its heap's creation, log messages,
 * children, activity pushes and thread starts (CLOCK_MONOTONIC, taken to
 * CLOCK_REALTIME at today's offset: a clock step since makes it off).
 */
static void last_seen(struct blamer_snap_process *p, uint64_t mtime_ns)
{
	uint64_t t = 0, m = 0, now = bl_clock_ns(CLOCK_REALTIME);
	uint64_t mono = bl_clock_ns(CLOCK_MONOTONIC);
	size_t i, j;

	/* a file's times and the heap's are its writer's to set: a time past
	 * now is a lie or another clock's, and not believed */
	if (p->exited && mtime_ns > now) {
		/* the moment of its exit is the lie: what else it shows came
		 * before, and would be shown as that moment */
		p->last_seen_ns = 0;
		return;
	}
	t = later(t, mtime_ns, now);
	t = later(t, p->heap_create_time_ns, now);
	for (i = 0; i < p->nlogs; i++)
		t = later(t, p->logs[i].time_ns, now);
	for (i = 0; i < p->nchildren; i++) {
		t = later(t, p->children[i].launch_time_ns, now);
		t = later(t, p->children[i].exit_time_ns, now);
	}
	for (i = 0; i < p->nthreads; i++) {
		if (p->threads[i].start_time_ns > m)
			m = p->threads[i].start_time_ns;
		for (j = 0; j < p->threads[i].nacts; j++)
			if (p->threads[i].acts[j].time_ns > m)
				m = p->threads[i].acts[j].time_ns;
	}
	/* a monotonic time past now is another boot's: no evidence */
	if (m && m + (now - mono) > t && m <= mono)
		t = m + (now - mono);
	p->last_seen_ns = t;
}

/* The first bytes of a slab file: the heap's magic, or nothing of a heap. */
static bool has_magic(const struct rd_slab *s)
{
	uint32_t magic;

	if (s->size < sizeof(magic))
		return false;
	memcpy(&magic, s->buf, sizeof(magic));
	return magic == BLAMER_HEAP_MAGIC;
}

/*
 * A dead heap's comm: the basename of its argv[0], as the heap claims
 * it (the cmdline holds argv joined by spaces), cut to 15 characters.
 */
static void comm_from_cmdline(struct blamer_snap_process *p)
{
	const char *a = p->cmdline, *end = strchr(a, ' '), *sl;
	size_t l;

	if (!end)
		end = a + strlen(a);
	for (sl = a; sl < end; sl++)
		if (*sl == '/')
			a = sl + 1;
	l = (size_t)(end - a);
	if (l > sizeof(p->comm) - 2)
		l = sizeof(p->comm) - 2;
	memcpy(p->comm, a, l);
	p->comm[l] = '\0';
}

/*
 * Reads the files of the heap at d->heap into @raw. No heap if none of
 * the files read holds anything of one (empty, shorter than the magic, or
 * not starting with it): those are counted in the snapshot, not shown (a
 * directory of 100,000 empty files would be 100,000 processes), and so
 * is a heap every file of which was skipped.
 */
static enum rd_got dir_read(struct blamer_reader *r, struct rd_walk *w, struct rd_slab *raw,
			    uint32_t *nrawp)
{
	struct rd_dirwalk *d = &r->dw;
	const struct rd_dfile *f = &d->files[d->heap];
	struct blamer_snap_process *p = w->p;
	struct heap_read hr = { .d = d, .w = w };
	size_t again[BLAMER_MAX_SLABS];
	enum rd_got got = RD_GOT_SLABS;
	uint32_t i, nraw = 0;
	bool any = false;

	d->mtime_ns = 0;
	d->held = false;
	p->nslabs = 0;
	for (i = 0; i < w->n; i++) {
		if (!read_slab(&hr, &f[i], i == 0, &raw[nraw], &w->ks[nraw]))
			continue;
		hr.bytes += raw[nraw].size;
		p->slab_ids[p->nslabs++] = f[i].idx;
		nraw++;
	}
	*nrawp = nraw;
	/* A live heap is read a second time, after the first read ended:
	 * the second copy of every record (copy.c). */
	for (i = 0; i < nraw; i++) {
		size_t n;

		again[i] = SIZE_MAX;
		if (raw[i].fd < 0)
			continue;
		if (!buf_room(r, hr.off, raw[i].size)) {
			/* one copy of a live heap is no proof of any record */
			rd_problem(p, BLAMER_HEALTH_UNREADABLE, "out of memory for slab %llu",
				   (unsigned long long)raw[i].id);
			got = RD_GOT_UNPARSED;
			continue;
		}
		n = read_at(raw[i].fd, r->buf + hr.off, raw[i].size, 0);
		if (n < raw[i].size)
			raw[i].size = n;	/* truncated under us: what both have */
		again[i] = hr.off;
		hr.off += (n + 7) & ~(size_t)7;
	}
	for (i = 0; i < nraw; i++) {
		raw[i].buf = r->buf + (uintptr_t)raw[i].buf;
		if (again[i] != SIZE_MAX)
			raw[i].again = r->buf + again[i];
		any |= has_magic(&raw[i]);
	}
	if (nraw && !any) {
		d->s->empty_files += nraw;
		p->nslabs = 0;
		return RD_GOT_NO_HEAP;
	}
	return p->nslabs ? got : RD_GOT_NO_HEAP;	/* every file skipped */
}

/* After the parse: a dead heap's end, its comm, and the buffer's size. */
static void dir_parsed(struct blamer_reader *r, struct rd_walk *w)
{
	struct blamer_snap_process *p = w->p;

	if (p->state == BLAMER_PROC_DEAD)
		last_seen(p, r->dw.mtime_ns);
	if (r->bufcap > RD_KEEP_BUF) {
		/* a big heap's copy is not kept while the others are read */
		free(r->buf);
		r->buf = NULL;
		r->bufcap = 0;
	}
	if (!p->comm[0] && p->cmdline[0])
		comm_from_cmdline(p);
}

/*
 * Was heap @f made before this boot? Its first file's ctime (which only
 * the kernel sets) is older than the boot: its pid and start time are
 * another boot's, and /proc of this one neither proves nor disproves them
 * (a directory kept across reboots: /dev/shm is not).
 */
static bool before_boot(struct rd_dirwalk *d, const struct rd_dfile *f)
{
	uint64_t boot = bl_clock_ns(CLOCK_REALTIME) - bl_clock_ns(CLOCK_BOOTTIME);
	char name[BL_SLAB_NAME_MAX];
	struct stat st;

	dfile_name(name, f);
	return !fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) && bl_ts_ns(&st.st_ctim) < boot;
}

/*
 * Have the files not changed for a second? File times are coarse (a
 * clock tick): a file written again within the tick it was read in could
 * look unchanged, so a heap is kept only once its files are quiet (a
 * time in the future is not quiet either).
 */
static bool quiet(const struct rd_kept_slab *ks, uint32_t n)
{
	uint64_t t = bl_clock_ns(CLOCK_REALTIME);
	uint32_t i;

	for (i = 0; i < n; i++)
		if (ks[i].v[3] + 1000000000u > t || ks[i].v[4] + 1000000000u > t)
			return false;
	return true;
}

/*
 * What says the heap's files are the ones a kept heap was decoded from:
 * same device, inode, size and times, and still files the reader trusts;
 * a stat() each, no read.
 */
static bool dir_identify(struct blamer_reader *r, struct rd_walk *w)
{
	struct rd_dirwalk *d = &r->dw;
	const struct rd_dfile *f = &d->files[d->heap];
	char name[BL_SLAB_NAME_MAX];
	struct stat st;
	uint32_t i;

	for (i = 0; i < w->n; i++) {
		dfile_name(name, &f[i]);
		if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) ||
		    bl_slab_file_why(&st, d->owner))
			return false;
		kept_slab(&w->ks[i], &f[i], &st);
	}
	return true;
}

/* A kept heap reused: its files will be read as far as they were. */
static void dir_reused(struct blamer_reader *r, const struct rd_walk *w)
{
	const struct rd_dfile *f = &r->dw.files[r->dw.heap];
	uint32_t i;

	for (i = 0; i < w->n; i++)
		hint_note(r, &f[i], w->ks[i].hint);
}

/* Kept only if no writer holds its lock, every file was read and all
 * are quiet. */
static bool dir_keepable(struct blamer_reader *r, const struct rd_walk *w)
{
	return !r->dw.held && w->p->nslabs == w->n && quiet(w->ks, w->n);
}

static int dir_list(struct blamer_reader *r, struct blamer_snapshot *s, char *err, size_t errlen)
{
	struct rd_dirwalk *d = &r->dw;
	int ret;

	*d = (struct rd_dirwalk){ .r = r, .s = s, .fd = -1 };
	ret = open_dir(d, err, errlen);
	if (ret < 0)
		return ret;
	if (!ret) {	/* else no process has made a heap yet: none listed */
		ret = list_files(d, &d->files, &d->nfiles, err, errlen);
		if (ret) {
			close(d->fd);
			d->fd = -1;
			return ret;
		}
	}
	rd_alive_begin(&r->alive);
	return 0;
}

/* The files of one heap: the same pid and start time. */
static uint32_t dir_next(struct blamer_reader *r)
{
	struct rd_dirwalk *d = &r->dw;
	size_t j;

	d->heap = d->at;
	for (j = d->at; j < d->nfiles && d->files[j].pid == d->files[d->heap].pid &&
	     d->files[j].start == d->files[d->heap].start; j++)
		;
	d->at = j;
	return (uint32_t)(j - d->heap);	/* <= BLAMER_MAX_SLABS: indexes are unique */
}

/* The heap's name, and what /proc says of its writer. */
static void dir_facts(struct blamer_reader *r, struct rd_walk *w)
{
	struct rd_dirwalk *d = &r->dw;
	const struct rd_dfile *f = &d->files[d->heap];
	struct blamer_snap_process *p = w->p;
	enum rd_verdict v;
	char comm[64] = "";
	bool live;

	p->pid = f->pid;
	p->start_time_ns = f->start;
	p->uid = d->owner;
	p->heap_key = ((uint64_t)(uint32_t)f->pid << 32) ^ f->start;
	v = rd_alive(&r->alive, f->pid, f->start, d->owner, comm, sizeof(comm),
		     p->disproved_why, sizeof(p->disproved_why));
	if (v == RD_WRITER_DISPROVED_START && before_boot(d, f))
		v = RD_WRITER_DEAD;	/* another boot's pid and start time */
	live = v == RD_WRITER_LIVE;
	/* a claim /proc contradicts is no process of ours: dead, and
	 * nothing of /proc's (comm) is shown as its */
	p->disproved = v == RD_WRITER_DISPROVED_START || v == RD_WRITER_DISPROVED_UID;
	if (!p->disproved)
		p->disproved_why[0] = '\0';
	p->state = live ? BLAMER_PROC_LIVE : BLAMER_PROC_DEAD;
	if (live) {
		comm[sizeof(p->comm) - 1] = '\0';	/* comm is at most 15 chars */
		memcpy(p->comm, comm, sizeof(p->comm));
	}
}

static void dir_end(struct blamer_reader *r)
{
	struct rd_dirwalk *d = &r->dw;

	rd_alive_end(&r->alive);
	hint_swap(r);
	free(d->files);
	if (d->fd >= 0)
		close(d->fd);
	*d = (struct rd_dirwalk){ .fd = -1 };
}

static int dir_release(struct blamer_reader *r, const struct blamer_snap_process *p,
		       char *err, size_t errlen)
{
	struct rd_dirwalk d = { .r = r, .fd = -1 };
	char name[BL_SLAB_NAME_MAX];
	const char *why;
	struct stat st;
	uint32_t i;
	int ret;

	ret = open_dir(&d, err, errlen);
	if (ret)
		return ret > 0 ? 0 : ret;
	for (i = 0; i < p->nslabs && i < BLAMER_MAX_SLABS; i++) {
		bl_slab_name(name, sizeof(name), p->pid, p->start_time_ns, (uint32_t)p->slab_ids[i]);
		if (fstatat(d.fd, name, &st, AT_SYMLINK_NOFOLLOW)) {
			if (errno == ENOENT)
				continue;	/* released meanwhile */
			ret = -errno;
			rd_err(err, errlen, "cannot release %s/%s: %s", r->source, name,
			       strerror(errno));
			continue;
		}
		/* only what a reader would read: never a planted link or file */
		why = bl_slab_file_why(&st, d.owner);
		if (why) {
			ret = -EPERM;
			rd_err(err, errlen, "not releasing %s/%s: %s", r->source, name, why);
			continue;
		}
		if (unlinkat(d.fd, name, 0) && errno != ENOENT) {
			ret = -errno;
			rd_err(err, errlen, "cannot remove %s/%s: %s", r->source, name,
			       strerror(errno));
		}
	}
	close(d.fd);
	return ret;
}

const struct rd_backend_ops rd_dir_ops = {
	.list = dir_list,
	.next = dir_next,
	.facts = dir_facts,
	.identify = dir_identify,
	.reused = dir_reused,
	.read = dir_read,
	.parsed = dir_parsed,
	.keepable = dir_keepable,
	.end = dir_end,
	.release = dir_release,
	.close = dir_close,
	.summarize_dead = true,
};
