// SPDX-License-Identifier: MIT
/*
 * Dir backend: heaps are files `<pid>-<start_ns>.<index>.slab` in one
 * directory (dir_list.c), read under the writer's trust rules
 * (dir_trust.c) into a buffer the reader keeps (dir_buf.c, dir_read.c).
 * This file is the backend's ops (struct rd_backend_ops): the listing,
 * what is known of each heap's process, what identifies its files, and
 * release. Whatever fails is skipped and noted in the snapshot with the
 * reason.
 *
 * A dead heap's end: the exit its writer recorded (slabs.c takes the
 * status from the header; slab 0's modification time is the moment), or
 * else the latest sign of life its files and records show (dir_dead.c).
 *
 * Cost: a heap is live iff its writer is (alive.c: /proc/<pid>/stat
 * shows the same start time; a long-lived reader keeps pidfds instead).
 * Dead heaps are summarized from their names (and an fstatat() of each
 * file) unless BLAMER_READ_DEAD_FULL asks for them, and
 * BLAMER_READ_HEADERS_ONLY reads just the headers of every heap: a
 * snapshot costs O(live data) plus a readdir, not O(dead history).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "internal.h"
#include "where.h"

static void dir_close(struct blamer_reader *r)
{
	rd_carry_free(&r->hints);
	rd_alive_free(&r->alive);
	rd_fdkeep_free(&r->fdkeep);
}

/* After the parse: a dead heap's end, its comm, and the buffer's size. */
static void dir_parsed(struct blamer_reader *r, struct rd_walk *w)
{
	struct blamer_snap_process *p = w->p;

	if (p->state == BLAMER_PROC_DEAD)
		rd_dir_last_seen(p, r->dw.mtime_ns);
	rd_dir_buf_trim(r);
	if (!p->comm[0] && p->cmdline[0])
		rd_comm_from_cmdline(p);
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
		rd_dfile_name(name, &f[i]);
		if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) ||
		    bl_slab_file_why(&st, d->owner))
			return false;
		rd_dir_kept_slab(&w->ks[i], &f[i], &st);
	}
	return true;
}

/* A kept heap reused: its files will be read as far as they were. */
static void dir_reused(struct blamer_reader *r, const struct rd_walk *w)
{
	const struct rd_dfile *f = &r->dw.files[r->dw.heap];
	uint32_t i;

	for (i = 0; i < w->n; i++)
		rd_dir_hint_note(r, &f[i], w->ks[i].hint);
}

/* Kept only if no writer holds its lock, every file was read and all
 * are quiet. */
static bool dir_keepable(struct blamer_reader *r, const struct rd_walk *w)
{
	return !r->dw.held && w->p->nslabs == w->n && rd_dir_quiet(w->ks, w->n);
}

static int dir_list(struct blamer_reader *r, struct blamer_snapshot *s, char *err, size_t errlen)
{
	struct rd_dirwalk *d = &r->dw;
	struct stat st;
	int ret;

	*d = (struct rd_dirwalk){ .r = r, .s = s, .fd = -1 };
	ret = rd_dir_open(d, err, errlen);
	if (ret < 0)
		return ret;
	if (!ret) {	/* else no process has made a heap yet: none listed */
		if (!fstat(d->fd, &st))
			d->dev = (uint64_t)st.st_dev;	/* kept files must be on it */
		ret = rd_dir_list_files(d, &d->files, &d->nfiles, err, errlen);
		if (ret) {
			close(d->fd);
			d->fd = -1;
			return ret;
		}
	}
	r->alive.comm_once = r->opts.flags & BLAMER_READ_COMM_ONCE;
	rd_alive_begin(&r->alive);
	rd_fdkeep_begin(&r->fdkeep);
	return 0;
}

/* The files of one heap: the same pid and start time. */
static uint32_t dir_next(struct blamer_reader *r)
{
	struct rd_dirwalk *d = &r->dw;
	size_t j;

	d->heap = d->at;
	for (j = d->at; j < d->nfiles && d->files[j].pid == d->files[d->heap].pid &&
	     d->files[j].start == d->files[d->heap].start &&
	     d->files[j].seq == d->files[d->heap].seq; j++)
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
	/* two heaps of one process (where.h: seqs) are two keys */
	p->heap_key = bl_dir_heap_key(f->pid, f->start, f->seq);
	v = rd_alive(&r->alive, f->pid, f->start, d->owner, comm, sizeof(comm),
		     p->disproved_why, sizeof(p->disproved_why));
	if (v == RD_WRITER_DISPROVED_START && rd_dir_before_boot(d, f))
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
	rd_fdkeep_end(&r->fdkeep);
	rd_dir_hint_swap(r);
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
	uint32_t i, seq;
	int ret;

	/* which of the process's heaps: its key says (dir_facts()); none
	 * (a process made by hand, as before seqs): the first */
	seq = 0;
	if (p->heap_key && !bl_dir_heap_seq(p->heap_key, p->pid, p->start_time_ns, &seq)) {
		rd_err(err, errlen, "heap key %#llx is no dir heap's of pid %d",
		       (unsigned long long)p->heap_key, (int)p->pid);
		return -EINVAL;
	}
	ret = rd_dir_open(&d, err, errlen);
	if (ret)
		return ret > 0 ? 0 : ret;
	for (i = 0; i < p->nslabs && i < BLAMER_MAX_SLABS; i++) {
		bl_slab_name(name, sizeof(name), p->pid, p->start_time_ns, seq,
			     (uint32_t)p->slab_ids[i]);
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
	.read = rd_dir_read,
	.parsed = dir_parsed,
	.keepable = dir_keepable,
	.end = dir_end,
	.release = dir_release,
	.close = dir_close,
	.summarize_dead = true,
};
