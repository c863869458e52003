// SPDX-License-Identifier: MIT
/*
 * Dir backend: heaps are files `<pid>-<start_ns>.<index>.slab` in one
 * directory (the rules are format/where.h's; Documentation/reader.rst
 * says how they are read). Nothing in the directory is trusted: names
 * are parsed strictly, files must be regular and at most
 * max_slab_bytes, and a slab is copied into private memory
 * with pread() -- a file truncated or replaced while we read it gives a
 * short read, never a SIGBUS.
 *
 * A dead heap's end: the exit its writer recorded (slabs.c takes the
 * status from the header; slab 0's modification time is the moment), or
 * else the latest sign of life its files and records show.
 *
 * Cost: a heap is live iff /proc/<pid>/stat shows the same start time.
 * Dead heaps are summarized from their file names alone (no open) unless
 * BLAMER_READ_DEAD_FULL asks for them, and BLAMER_READ_HEADERS_ONLY reads
 * just the headers of every heap: a snapshot costs O(live data) plus a
 * readdir, not O(dead history).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "internal.h"
#include "where.h"

#define RD_MAX_DIR_FILES	(1u << 20)

struct dfile {
	int32_t pid;
	uint64_t start;
	uint32_t idx;
};

/* "<pid>-<start_ns>.<index>.slab", nothing else */
static bool parse_name(const char *name, struct dfile *f)
{
	return bl_slab_name_parse(name, &f->pid, &f->start, &f->idx);
}

static int dfile_cmp(const void *a, const void *b)
{
	const struct dfile *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Start time (ns since boot) and comm of a live pid; false if gone or a zombie. */
static bool proc_start(int32_t pid, uint64_t *start, char *comm, size_t commlen)
{
	struct bl_proc_stat st;

	if (bl_proc_stat(pid, &st) || st.state == 'Z' || st.state == 'X')
		return false;	/* gone, or a zombie: it has exited, its heap is dead */
	*start = (uint64_t)st.start_ns;
	/* a process names itself (prctl, the file it runs): printable only */
	rd_sanitize(comm, st.comm, strnlen(st.comm, commlen - 1));
	return true;
}

/* The file of slab @idx of heap <pid>-<start> in @dir. */
static void slab_path(char *buf, size_t len, const char *dir, int32_t pid,
		      uint64_t start, uint64_t idx)
{
	char name[BL_SLAB_NAME_MAX];

	bl_slab_name(name, sizeof(name), pid, start, (uint32_t)idx);
	snprintf(buf, len, "%s/%s", dir, name);
}

/*
 * Read one slab file into private memory. headers_only: just enough of
 * slab 0 for the heap header and the process record. Returns false and
 * reports on failure (the heap is then unreadable or corrupt).
 */
static bool read_slab(struct blamer_reader *r, struct blamer_snap_process *p,
		      const char *path, uint32_t idx, bool headers_only, struct rd_slab *s,
		      uint64_t *mtime_ns)
{
	struct stat st;
	uint64_t want;
	ssize_t got;
	size_t done = 0;
	int fd;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->id = idx;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)	/* removed since readdir: released */
			rd_problem(p, BLAMER_HEALTH_CORRUPT, "slab %u vanished while read", idx);
		else
			rd_problem(p, BLAMER_HEALTH_UNREADABLE, "%s: %s", path, strerror(errno));
		return false;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "%s: not a regular file", path);
		close(fd);
		return false;
	}
	if (st.st_uid != r->dir_owner) {
		/* only the directory's owner can have made it: never read */
		rd_problem(p, BLAMER_HEALTH_CORRUPT,
			   "%s: owned by uid %u, not by the directory's owner (uid %u): planted",
			   path, (unsigned)st.st_uid, (unsigned)r->dir_owner);
		close(fd);
		return false;
	}
	p->uid = st.st_uid;
	/* a writer's pages are first written, or its exit recorded, by now */
	if ((uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec > *mtime_ns)
		*mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
	if ((uint64_t)st.st_size > r->opts.max_slab_bytes) {
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "%s: %lld bytes, over the %llu limit",
			   path, (long long)st.st_size,
			   (unsigned long long)r->opts.max_slab_bytes);
		close(fd);
		return false;
	}
	p->size += (uint64_t)st.st_size;
	s->real_size = (uint64_t)st.st_size;
	want = (uint64_t)st.st_size;
	if (headers_only) {
		struct blamer_slab_header sh;
		struct blamer_heap_header hh;
		uint64_t need = sizeof(sh) + (idx == 0 ? sizeof(hh) : 0);

		/* grow to cover the process record if slab 0 holds it */
		if (idx == 0 && pread(fd, &hh, sizeof(hh), sizeof(sh)) == (ssize_t)sizeof(hh) &&
		    blamer_ref_slab(hh.process) == 0 && blamer_ref_offset(hh.process) < (1u << 20))
			need = blamer_ref_offset(hh.process) + sizeof(struct blamer_process);
		if (need < want)
			want = need;
	}
	s->buf = malloc(want ? want : 1);
	if (!s->buf) {
		rd_problem(p, BLAMER_HEALTH_UNREADABLE, "out of memory for %s", path);
		close(fd);
		return false;
	}
	s->owned = true;
	while (done < want) {
		got = pread(fd, s->buf + done, want - done, (off_t)done);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;	/* truncated under us: keep what we have */
		done += (size_t)got;
	}
	s->size = done;	/* the only size we trust */
	if (headers_only)
		close(fd);
	else
		s->fd = fd;	/* kept to re-read torn records */
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
	struct timespec rt, mono;
	uint64_t t = 0, m = 0, off, now;
	size_t i, j;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	now = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
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
	off = ((uint64_t)rt.tv_sec - (uint64_t)mono.tv_sec) * 1000000000u +
	      (uint64_t)rt.tv_nsec - (uint64_t)mono.tv_nsec;
	/* a monotonic time past now is another boot's: no evidence */
	if (m && m + off > t && m <= (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec)
		t = m + off;
	p->last_seen_ns = t;
}

static void read_heap(struct blamer_reader *r, struct blamer_snap_process *p,
		      const struct dfile *f, uint32_t n, bool headers_only)
{
	struct rd_slab raw[BLAMER_MAX_SLABS], ordered[BLAMER_MAX_SLABS];
	struct rd_heap h = { 0 };
	char path[4096];
	uint64_t mtime = 0;
	uint32_t i, nraw = 0;

	memset(ordered, 0, sizeof(ordered));
	for (i = 0; i < n; i++) {
		slab_path(path, sizeof(path), r->source, f[i].pid, f[i].start, f[i].idx);
		if (read_slab(r, p, path, f[i].idx, headers_only, &raw[nraw], &mtime))
			nraw++;
	}
	h.slabs = ordered;
	h.retries = r->opts.max_retries;
	h.headers_only = headers_only;
	h.check_ids = true;
	h.p = p;
	if (rd_heap_order(&h, raw, nraw))
		rd_heap_parse(&h);
	for (i = 0; i < nraw; i++)
		rd_slab_drop(&raw[i]);
	if (p->state == BLAMER_PROC_DEAD)
		last_seen(p, mtime);
}

int rd_dir_snapshot(struct blamer_reader *r, struct blamer_snapshot *s,
		    char *err, size_t errlen)
{
	struct dfile *files = NULL, f;
	size_t n = 0, cap = 0, i, j;
	struct dirent *de;
	char why[512];
	int fd, ret;
	DIR *d;

	/* the writer's rules (format/where.h): a place it never writes to
	 * holds no heaps, whatever files are there */
	fd = bl_slabdir_open_read(r->source, &r->dir_owner, why, sizeof(why));
	if (fd == -ENOENT)
		return 0;	/* no process has made a heap yet */
	if (fd < 0) {
		if (fd == -EPERM)
			rd_err(err, errlen, "%s", why);
		else
			rd_err(err, errlen, "%s: %s%s", r->source, strerror(-fd),
			       fd == -EACCES ? " (heaps of other users are not readable)" : "");
		return fd;
	}
	d = fdopendir(fd);
	if (!d) {
		ret = -errno;
		close(fd);
		rd_err(err, errlen, "%s: %s", r->source, strerror(-ret));
		return ret;
	}
	while ((de = readdir(d))) {
		if (!parse_name(de->d_name, &f))
			continue;	/* not ours: ignored, never parsed */
		if (n == cap) {
			struct dfile *nf;

			if (cap >= RD_MAX_DIR_FILES)
				break;
			cap = cap ? cap * 2 : 64;
			nf = realloc(files, cap * sizeof(*nf));
			if (!nf) {
				free(files);
				closedir(d);
				rd_err(err, errlen, "out of memory");
				return -ENOMEM;
			}
			files = nf;
		}
		files[n++] = f;
	}
	closedir(d);
	if (n)
		qsort(files, n, sizeof(*files), dfile_cmp);
	for (i = 0; i < n; i = j) {
		struct blamer_snap_process *p;
		uint64_t live_start = 0;
		char comm[64] = "";
		bool live, full;
		uint32_t k;

		for (j = i + 1; j < n && files[j].pid == files[i].pid &&
		     files[j].start == files[i].start; j++)
			;
		if (j - i > BLAMER_MAX_SLABS)
			j = i + BLAMER_MAX_SLABS;	/* impossible by parse_name; be safe */
		p = rd_new_process(s);
		if (!p) {
			free(files);
			rd_err(err, errlen, "out of memory");
			return -ENOMEM;
		}
		p->pid = files[i].pid;
		p->start_time_ns = files[i].start;
		p->uid = r->dir_owner;
		p->heap_key = ((uint64_t)(uint32_t)files[i].pid << 32) ^ files[i].start;
		live = proc_start(files[i].pid, &live_start, comm, sizeof(comm)) &&
		       live_start == files[i].start;
		p->state = live ? BLAMER_PROC_LIVE : BLAMER_PROC_DEAD;
		if (live) {
			comm[sizeof(p->comm) - 1] = '\0';	/* comm is at most 15 chars */
			memcpy(p->comm, comm, sizeof(p->comm));
		}
		p->nslabs = (uint32_t)(j - i);
		for (k = 0; k < p->nslabs; k++)
			p->slab_ids[k] = files[i + k].idx;
		full = live || (r->opts.flags & BLAMER_READ_DEAD_FULL);
		if (r->opts.flags & BLAMER_READ_HEADERS_ONLY)
			read_heap(r, p, &files[i], p->nslabs, true);
		else if (full)
			read_heap(r, p, &files[i], p->nslabs, false);
		else
			p->health = BLAMER_HEALTH_SUMMARY;	/* dead: names only */
		if (!p->comm[0] && p->cmdline[0]) {
			/* dead: the heap's argv[0] basename stands in for comm */
			const char *a = p->cmdline, *sp = strchr(a, ' '), *sl;
			const char *end = sp ? sp : a + strlen(a);
			size_t l;

			/* the last '/' of argv[0] only, not of what follows */
			for (sl = a; sl < end; sl++)
				if (*sl == '/')
					a = sl + 1;
			l = (size_t)(end - a);
			if (l > 15)
				l = 15;
			memcpy(p->comm, a, l);
			p->comm[l] = '\0';
		}
	}
	free(files);
	return 0;
}

int rd_dir_release(struct blamer_reader *r, const struct blamer_snap_process *p,
		   char *err, size_t errlen)
{
	char path[4096];
	uint32_t i;
	int ret = 0;

	for (i = 0; i < p->nslabs && i < BLAMER_MAX_SLABS; i++) {
		slab_path(path, sizeof(path), r->source, p->pid, p->start_time_ns,
			  p->slab_ids[i]);
		if (unlink(path) && errno != ENOENT) {
			ret = -errno;
			rd_err(err, errlen, "cannot remove %s: %s", path, strerror(errno));
		}
	}
	return ret;
}
