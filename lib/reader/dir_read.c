// SPDX-License-Identifier: MIT
/*
 * Dir backend, reading a heap: a slab's first bytes are read (its
 * headers, and all of a small heap), the header is checked, and only then
 * the rest, up to the slab's freeptr: the bytes its writer allocated,
 * never the file's claimed size. A file with far fewer blocks allocated
 * than that (a sparse file) is read only as far as its blocks go, and the
 * heap is truncated. A live heap is read twice (copy.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "internal.h"
#include "where.h"

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

/* One heap's read: where its copies go in the reader's buffer. */
struct heap_read {
	struct rd_dirwalk *d;
	struct rd_walk *w;	/* the heap: its process, what to read */
	size_t off;		/* the buffer's next free byte */
	uint64_t bytes;		/* read of the heap so far */
};

/*
 * Reads one slab file into the reader's buffer at hr->off (which it
 * advances). @ks gets what identifies the file (rd_dir_kept_slab()); the first
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
	rd_dfile_name(name, f);
	/* the file this name still is, if the last snapshot kept it open
	 * (fd_keep.c); checked below as if it had just been opened */
	fd = d->dev ? rd_fdkeep_take(&r->fdkeep, f, d->dev) : -1;
	if (fd < 0)
		fd = openat(d->fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ELOOP)
			rd_skip(d->s, name, "a symlink, not followed");
		else if (errno == ENOENT)	/* removed since readdir: released */
			rd_problem(p, BLAMER_HEALTH_CORRUPT, "slab %u vanished while read", f->idx);
		else	/* say why: mostly a file that is not ours (not readable) */
			rd_skip(d->s, name, "%s", rd_dir_open_why(d, name, errno));
		return false;
	}
	if (fstat(fd, &st)) {
		rd_problem(p, BLAMER_HEALTH_UNREADABLE, "%s: %s", name, strerror(errno));
		close(fd);
		return false;
	}
	if (!st.st_nlink) {
		/* removed since readdir() (a kept descriptor's file, or one
		 * unlinked since it was opened): as if openat() had not found it */
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "slab %u vanished while read", f->idx);
		close(fd);
		return false;
	}
	why = bl_slab_file_why(&st, d->owner);
	if (why) {
		rd_skip(d->s, name, "%s", why);
		close(fd);
		return false;
	}
	rd_dir_kept_slab(ks, f, &st);
	/* A writer holds its first file's lock while it lives: one in
	 * another pid namespace, that /proc does not show, still writes.
	 * Such a heap is not kept for later snapshots, and if /proc called
	 * it dead, /proc is disproved: an export counts it while it is
	 * there, and never folds nor releases it (a fold once unlinked a
	 * container's writer's heap mid-run and lost its later counts). */
	if (first_file && (hr->w->keep || p->state == BLAMER_PROC_DEAD)) {
		if (!flock(fd, LOCK_EX | LOCK_NB)) {
			flock(fd, LOCK_UN);
		} else {
			d->held = true;
			if (p->state == BLAMER_PROC_DEAD && !p->disproved) {
				p->disproved = true;
				snprintf(p->disproved_why, sizeof(p->disproved_why),
					 "pid %d is not running here, yet a writer holds its heap's lock (another pid namespace?)",
					 (int)p->pid);
			}
		}
	}
	/* a writer's pages are first written, or its exit recorded, by now */
	if (bl_ts_ns(&st.st_mtim) > d->mtime_ns)
		d->mtime_ns = bl_ts_ns(&st.st_mtim);
	p->size += (uint64_t)st.st_size;
	s->real_size = (uint64_t)st.st_size;
	first = headers_only ? RD_FIRST_READ_HEADERS : RD_FIRST_READ;
	if (!headers_only) {
		uint64_t hint = rd_dir_hint_of(r, f);

		if (hint >= sizeof(struct blamer_slab_header))
			first = p->state == BLAMER_PROC_LIVE ? (hint + 4095) & ~4095ull : hint;
	}
	if (first > (uint64_t)st.st_size)
		first = (uint64_t)st.st_size;
	if (!rd_dir_buf_room(r, *off, first)) {
		rd_problem(p, BLAMER_HEALTH_UNREADABLE, "out of memory for %s", name);
		close(fd);
		return false;
	}
	got = rd_dir_read_at(fd, r->buf + *off, first, 0);
	want = slab_want(d, p, &st, r->buf + *off, got, f->idx, headers_only, hr->bytes);
	if (want > got) {
		if (!rd_dir_buf_room(r, *off, want)) {
			rd_problem(p, BLAMER_HEALTH_UNREADABLE, "out of memory for %s", name);
			close(fd);
			return false;
		}
		if (got == first)
			got += rd_dir_read_at(fd, r->buf + *off + got, want - got, got);
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
		rd_dir_hint_note(r, f, used);
		ks->hint = used;
	}
	/* buf is set once every slab of the heap is in (the buffer may move) */
	s->buf = (uint8_t *)(uintptr_t)*off;
	s->size = got;	/* the only size we trust */
	s->copied = true;
	*off += (got + 7) & ~(size_t)7;
	if (headers_only || p->state != BLAMER_PROC_LIVE) {
		close(fd);	/* no writer: nothing will change */
		return true;
	}
	s->fd = fd;	/* kept for the second read and torn records */
	/* and, the same file (st_ino, which readdir() named), for the next
	 * snapshot's read */
	s->fd_kept = d->dev && (uint64_t)st.st_dev == d->dev && (uint64_t)st.st_ino == f->ino &&
		     rd_fdkeep_put(&r->fdkeep, f, d->dev, fd, rd_alive_pidfds_to_come(&r->alive));
	return true;
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
 * Reads the files of the heap at d->heap into @raw. No heap if none of
 * the files read holds anything of one (empty, shorter than the magic, or
 * not starting with it): those are counted in the snapshot, not shown (a
 * directory of 100,000 empty files would be 100,000 processes), and so
 * is a heap every file of which was skipped.
 */
enum rd_got rd_dir_read(struct blamer_reader *r, struct rd_walk *w, struct rd_slab *raw,
			uint32_t *nrawp)
{
	struct rd_dirwalk *d = &r->dw;
	const struct rd_dfile *f = &d->files[d->heap];
	struct blamer_snap_process *p = w->p;
	struct heap_read hr = { .d = d, .w = w };
	size_t again[BLAMER_MAX_SLABS];
	enum rd_got got = RD_GOT_SLABS;
	uint32_t i, nraw = 0;
	bool any = false, second;

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
	 * the second copy of every record (copy.c), if a record this
	 * snapshot decodes is compared with it. */
	second = rd_reads_stable(r->opts.flags);
	for (i = 0; i < nraw; i++) {
		size_t n;

		again[i] = SIZE_MAX;
		if (raw[i].fd < 0 || !second)
			continue;
		if (!rd_dir_buf_room(r, hr.off, raw[i].size)) {
			/* one copy of a live heap is no proof of any record */
			rd_problem(p, BLAMER_HEALTH_UNREADABLE, "out of memory for slab %llu",
				   (unsigned long long)raw[i].id);
			got = RD_GOT_UNPARSED;
			continue;
		}
		n = rd_dir_read_at(raw[i].fd, r->buf + hr.off, raw[i].size, 0);
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
		/* A live writer that made its files within the second and has
		 * not written its header yet: a heap being made (the next
		 * snapshot shows it), not files without a heap. Files that
		 * stay empty a second are counted, a live writer's too. */
		if (p->state != BLAMER_PROC_LIVE || rd_dir_quiet(w->ks, nraw))
			d->s->empty_files += nraw;
		p->nslabs = 0;
		return RD_GOT_NO_HEAP;
	}
	return p->nslabs ? got : RD_GOT_NO_HEAP;	/* every file skipped */
}
