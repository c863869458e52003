// SPDX-License-Identifier: MIT
/*
 * Device backend: BLAMER_IOC_LIST gives the kernel's facts about every
 * slab we may read; slabs created through one open file (file_serial)
 * form a heap. Each is opened read-only (BLAMER_IOC_OPEN), mapped for the
 * duration of the snapshot and its descriptor closed at once. The kernel
 * keeps mapped pages alive whatever the owner does, so reading a mapping
 * never faults; the contents are still untrusted (parse.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <linux/blamer.h>

#include "internal.h"

#define RD_MAX_LIST	(1u << 20)
#define SYS_MODULE_PARAMS	"/sys/module/blamer/parameters"

static int info_cmp(const void *a, const void *b)
{
	const struct blamer_slab_info *x = a, *y = b;

	if (x->file_serial != y->file_serial)
		return x->file_serial < y->file_serial ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* LIST until the buffer is big enough (slabs may appear between calls). */
static int list_slabs(struct blamer_reader *r, struct blamer_slab_info **out,
		      uint32_t *count, char *err, size_t errlen)
{
	struct blamer_slab_info *v = NULL;
	uint32_t cap = 64;
	int tries;

	for (tries = 0; tries < 8; tries++) {
		struct blamer_list l;
		struct blamer_slab_info *nv = realloc(v, cap * sizeof(*v));

		if (!nv) {
			free(v);
			rd_err(err, errlen, "out of memory");
			return -ENOMEM;
		}
		v = nv;
		memset(&l, 0, sizeof(l));
		l.info_size = sizeof(*v);
		l.slabs = (uint64_t)(uintptr_t)v;
		l.capacity = cap;
		if (ioctl(r->devfd, BLAMER_IOC_LIST, &l)) {
			int e = errno;

			free(v);
			rd_err(err, errlen, "%s: listing slabs failed: %s", r->source, strerror(e));
			return -e;
		}
		if (l.total <= l.capacity) {
			*out = v;
			*count = l.count < cap ? l.count : cap;
			r->generation = l.events;
			return 0;
		}
		if (l.total > RD_MAX_LIST)
			break;
		cap = l.total + 16;
	}
	free(v);
	rd_err(err, errlen, "%s: too many slabs to list", r->source);
	return -E2BIG;
}

static void read_heap(struct blamer_reader *r, struct blamer_snapshot *s,
		      struct blamer_snap_process *p, const struct blamer_slab_info *in, uint32_t n)
{
	struct rd_slab raw[BLAMER_MAX_SLABS], ordered[BLAMER_MAX_SLABS];
	struct rd_heap h = { 0 };
	uint32_t i, nraw = 0;

	memset(ordered, 0, sizeof(ordered));
	for (i = 0; i < n; i++) {
		struct blamer_open o = { .id = in[i].id };
		void *m = MAP_FAILED;
		int e;

		if (!ioctl(r->devfd, BLAMER_IOC_OPEN, &o)) {
			m = mmap(NULL, in[i].size, PROT_READ, MAP_SHARED, o.fd, 0);
			e = errno;
			close(o.fd);
		} else {
			e = errno;
		}
		if (m == MAP_FAILED) {
			/* ENOENT: released since the listing, or not ours to read. */
			rd_problem(p, BLAMER_HEALTH_UNREADABLE, "mapping slab %llu: %s%s",
				   (unsigned long long)in[i].id, strerror(e),
				   e == ENOENT || e == EACCES ?
				   " (gone, or not permitted to read this process)" : "");
			continue;
		}
		memset(&raw[nraw], 0, sizeof(raw[nraw]));
		raw[nraw].buf = m;
		raw[nraw].size = in[i].size;
		raw[nraw].real_size = in[i].size;
		raw[nraw].map_len = in[i].size;
		raw[nraw].fd = -1;
		raw[nraw].id = in[i].id;
		raw[nraw].unmap = true;
		nraw++;
	}
	h.slabs = ordered;
	h.retries = r->opts.max_retries;
	h.flags = r->opts.flags;
	h.headers_only = (r->opts.flags & BLAMER_READ_HEADERS_ONLY) != 0;
	h.check_ids = true;
	h.live = p->state == BLAMER_PROC_LIVE;
	h.s = s;
	h.p = p;
	h.scratch = &r->scratch;
	if (nraw && rd_heap_order(&h, raw, nraw))
		rd_heap_parse(&h);
	for (i = 0; i < nraw; i++)
		rd_slab_drop(&raw[i]);
}

int rd_dev_snapshot(struct blamer_reader *r, struct blamer_snapshot *s,
		    char *err, size_t errlen)
{
	struct blamer_slab_info *v = NULL;
	uint32_t n = 0, i, j, k;
	int ret;

	ret = list_slabs(r, &v, &n, err, errlen);
	if (ret)
		return ret;
	s->generation = r->generation;
	if (n)
		qsort(v, n, sizeof(*v), info_cmp);
	for (i = 0; i < n; i = j) {
		struct blamer_snap_process *p = rd_new_process(s);
		const struct blamer_slab_info *f = &v[i];

		for (j = i + 1; j < n && v[j].file_serial == f->file_serial; j++)
			;
		if (!p) {
			free(v);
			rd_err(err, errlen, "out of memory");
			return -ENOMEM;
		}
		p->kernel_facts = true;
		p->pid = f->pid;
		p->uid = f->uid;
		memcpy(p->comm, f->comm, sizeof(f->comm));
		p->comm[16] = '\0';
		for (k = 0; p->comm[k]; k++)
			if ((unsigned char)p->comm[k] < 0x20 || (unsigned char)p->comm[k] >= 0x7f)
				p->comm[k] = '?';
		p->start_time_ns = f->start_time_ns;
		p->create_time_ns = f->create_time_ns;
		p->heap_key = f->file_serial;
		p->state = BLAMER_PROC_LIVE;
		for (k = i; k < j; k++) {
			/* the group is one owner: any orphan slab means it is gone */
			if (v[k].state == BLAMER_SLAB_ORPHAN) {
				p->state = BLAMER_PROC_DEAD;
				p->orphan_time_ns = v[k].orphan_time_ns;
			}
			if (v[k].flags & BLAMER_SLAB_EXITED) {
				p->exited = true;
				p->exit_code = v[k].exit_code;
				p->exit_signal = v[k].exit_signal;
			}
			if (v[k].flags & BLAMER_SLAB_COREDUMP)
				p->coredump = true;
			if (p->nslabs < BLAMER_MAX_SLABS)
				p->slab_ids[p->nslabs++] = v[k].id;
			p->size += v[k].size;
		}
		if (j - i > BLAMER_MAX_SLABS)
			rd_problem(p, BLAMER_HEALTH_CORRUPT, "%u slabs, at most %u are read",
				   j - i, BLAMER_MAX_SLABS);
		read_heap(r, s, p, &v[i], j - i > BLAMER_MAX_SLABS ? BLAMER_MAX_SLABS : j - i);
	}
	free(v);
	return 0;
}

int rd_dev_release(struct blamer_reader *r, const struct blamer_snap_process *p,
		   char *err, size_t errlen)
{
	uint32_t i;
	int ret = 0;

	for (i = 0; i < p->nslabs && i < BLAMER_MAX_SLABS; i++) {
		struct blamer_release rel = { .id = p->slab_ids[i] };

		if (ioctl(r->devfd, BLAMER_IOC_RELEASE, &rel) && errno != ENOENT) {
			ret = -errno;
			rd_err(err, errlen, "releasing slab %llu of pid %d: %s%s",
			       (unsigned long long)rel.id, p->pid, strerror(errno),
			       errno == EBUSY ? " (its process is still running)" : "");
		}
	}
	return ret;
}

/* The caller's account, the limits, and its parameters from sysfs. */
int rd_dev_status(struct blamer_reader *r, struct blamer_backend_status *st,
		  char *err, size_t errlen)
{
	struct blamer_status ks = { 0 };
	struct dirent *de;
	DIR *d;

	if (ioctl(r->devfd, BLAMER_IOC_STATUS, &ks)) {
		int e = errno;

		rd_err(err, errlen, "%s: status failed: %s", r->source, strerror(e));
		return -e;
	}
	st->user_slabs = ks.user_slabs;
	st->user_orphans = ks.user_orphans;
	st->user_bytes = ks.user_bytes;
	/* Device-wide counts only for those who may read every slab. */
	st->device_totals = ks.flags & BLAMER_STATUS_DEVICE;
	st->slabs = ks.slabs;
	st->orphans = ks.orphans;
	st->bytes = ks.bytes;
	st->max_slab_bytes = ks.max_slab_bytes;
	st->max_user_bytes = ks.max_user_bytes;
	st->max_total_bytes = ks.max_total_bytes;
	st->max_user_orphans = ks.max_user_orphans;
	d = opendir(SYS_MODULE_PARAMS);
	if (!d)
		return 0;
	while ((de = readdir(d)) && st->nparams < sizeof(st->params) / sizeof(st->params[0])) {
		char path[512], *val = st->params[st->nparams].value;
		size_t vlen = sizeof(st->params[0].value);
		ssize_t n;
		int fd;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(st->params[0].name))
			continue;
		snprintf(path, sizeof(path), SYS_MODULE_PARAMS "/%s", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, val, vlen - 1);
		close(fd);
		val[n > 0 ? n : 0] = '\0';
		val[strcspn(val, "\n")] = '\0';
		/* fits: checked above */
		memcpy(st->params[st->nparams].name, de->d_name, strlen(de->d_name) + 1);
		st->nparams++;
	}
	closedir(d);
	return 0;
}
