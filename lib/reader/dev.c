// SPDX-License-Identifier: MIT
/*
 * Device backend: BLAMER_IOC_LIST gives the kernel's facts about every
 * slab we may read; slabs created through one open file (file_serial)
 * form a heap. Each is opened read-only (BLAMER_IOC_OPEN), mapped and its
 * descriptor closed at once. The kernel keeps mapped pages alive whatever
 * the owner does, so reading a mapping never faults; the contents are
 * still untrusted (parse.c).
 *
 * Cost: only the pages below a slab's freeptr are read (slabs.c), and a
 * mapping's pages come in one fault each as they are read, so a snapshot
 * touches the used pages and no others. The mappings are kept from one
 * snapshot to the next (a long-lived reader: top, export --interval), by
 * slab id and creation time: a slab listed again is read through the same
 * mapping, with its pages already faulted in, and no ioctl, mmap or
 * munmap; a slab no longer listed is unmapped at the end of the snapshot
 * that misses it, and every mapping when the reader closes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <linux/blamer.h>

#include "internal.h"

#define RD_MAX_LIST	(1u << 20)
/*
 * Mappings kept between snapshots, at most: well below vm.max_map_count
 * (65530 by default), which the application's own mappings share, and a
 * small part of a 32-bit address space. Slabs past either are mapped
 * for their heap's read only, as before.
 */
#define RD_CACHE_MAPS	16384u
#define RD_CACHE_BYTES	(sizeof(void *) > 4 ? 64ull << 30 : 256ull << 20)
#define SYS_MODULE_PARAMS	"/sys/module/blamer/parameters"

static int info_cmp(const void *a, const void *b)
{
	const struct blamer_slab_info *x = a, *y = b;

	if (x->file_serial != y->file_serial)
		return x->file_serial < y->file_serial ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * LIST until the buffer is big enough (slabs may appear between calls).
 * The buffer is the reader's, kept for the next snapshot at the size the
 * last one needed: a long-lived reader lists once per snapshot, where
 * starting small would walk the kernel's table twice (once to learn the
 * total).
 */
static int list_slabs(struct blamer_reader *r, struct blamer_slab_info **out,
		      uint32_t *count, char *err, size_t errlen)
{
	struct blamer_slab_info *v = r->list;
	uint32_t cap = r->list_cap ? r->list_cap : 64;
	int tries;

	for (tries = 0; tries < 8; tries++) {
		struct blamer_list l;

		if (cap > r->list_cap) {
			struct blamer_slab_info *nv = realloc(v, cap * sizeof(*v));

			if (!nv) {
				rd_err(err, errlen, "out of memory");
				return -ENOMEM;
			}
			r->list = v = nv;
			r->list_cap = cap;
		}
		memset(&l, 0, sizeof(l));
		l.info_size = sizeof(*v);
		l.slabs = (uint64_t)(uintptr_t)v;
		l.capacity = cap;
		if (ioctl(r->devfd, BLAMER_IOC_LIST, &l)) {
			int e = errno;

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
		cap = l.total + l.total / 16 + 16;	/* room for a few more */
	}
	rd_err(err, errlen, "%s: too many slabs to list", r->source);
	return -E2BIG;
}

static int devmap_find_cmp(const void *key, const void *entry)
{
	uint64_t id = *(const uint64_t *)key, e = ((const struct rd_devmap *)entry)->id;

	return id < e ? -1 : id > e;
}

static int devmap_cmp(const void *a, const void *b)
{
	return devmap_find_cmp(&((const struct rd_devmap *)a)->id, b);
}

/* The cached mapping of slab @in, moved to the snapshot's new cache. */
static void *cached_map(struct blamer_reader *r, const struct blamer_slab_info *in)
{
	struct rd_devmap *m = rd_carry_find(&r->maps, &in->id, devmap_find_cmp);
	void *p;

	/* an id names one slab while it exists: the time and size say it
	 * is still that one */
	if (!m || !m->addr || m->create_time_ns != in->create_time_ns || m->len != in->size)
		return NULL;
	p = m->addr;
	m->addr = NULL;	/* carried over, not unmapped */
	return p;
}

/* Keeps the mapping for the next snapshot; false: no room (unmap it). */
static bool cache_map(struct blamer_reader *r, const struct blamer_slab_info *in, void *addr)
{
	struct rd_devmap *m;

	if (!r->maps.elsz)
		r->maps = RD_CARRY(struct rd_devmap, RD_CACHE_MAPS);
	if (in->size > RD_CACHE_BYTES - r->map_bytes || !(m = rd_carry_add(&r->maps)))
		return false;
	r->map_bytes += in->size;
	*m = (struct rd_devmap){ .id = in->id, .create_time_ns = in->create_time_ns,
				 .len = in->size, .addr = addr };
	return true;
}

/* The end of a snapshot: mappings of slabs it did not list go, the rest
 * are the cache (by id) for the next one. */
static void cache_swap(struct blamer_reader *r)
{
	struct rd_devmap *m = r->maps.last;
	size_t i;

	for (i = 0; i < r->maps.nlast; i++)
		if (m[i].addr)
			munmap(m[i].addr, m[i].len);
	rd_carry_swap(&r->maps, devmap_cmp);
	r->map_bytes = 0;
}

static void dev_close(struct blamer_reader *r)
{
	free(r->list);
	r->list = NULL;
	r->list_cap = 0;
	cache_swap(r);	/* nothing listed since: every mapping goes */
	rd_carry_free(&r->maps);
}

/* What says a slab is the one a kept heap was decoded from: the
 * kernel's facts of it, from the listing (w->n <= BLAMER_MAX_SLABS). */
static bool dev_identify(struct blamer_reader *r, struct rd_walk *w)
{
	const struct blamer_slab_info *in = &r->list[r->vw.heap];
	uint32_t i;

	for (i = 0; i < w->n; i++) {
		memset(&w->ks[i], 0, sizeof(w->ks[i]));
		w->ks[i].id = in[i].id;
		w->ks[i].v[0] = in[i].size;
		w->ks[i].v[1] = in[i].create_time_ns;
		w->ks[i].v[2] = in[i].file_serial;
		w->ks[i].v[3] = in[i].flags;
		w->ks[i].v[4] = in[i].orphan_time_ns;
	}
	return true;
}

/* Maps the heap's slabs (the first BLAMER_MAX_SLABS of them). */
static enum rd_got dev_read(struct blamer_reader *r, struct rd_walk *w, struct rd_slab *raw,
			    uint32_t *nraw)
{
	const struct blamer_slab_info *in = &r->list[r->vw.heap];
	uint32_t i, n = w->n > BLAMER_MAX_SLABS ? BLAMER_MAX_SLABS : w->n;

	for (i = 0; i < n; i++) {
		struct blamer_open o = { .id = in[i].id };
		struct rd_slab *s = &raw[*nraw];
		void *m = cached_map(r, &in[i]);
		int e = 0;

		if (!m && !ioctl(r->devfd, BLAMER_IOC_OPEN, &o)) {
			m = mmap(NULL, in[i].size, PROT_READ, MAP_SHARED, o.fd, 0);
			e = errno;
			close(o.fd);
		} else if (!m) {
			e = errno;
			m = MAP_FAILED;
		}
		if (m == MAP_FAILED) {
			/* ENOENT: released since the listing, or not ours to read. */
			rd_problem(w->p, BLAMER_HEALTH_UNREADABLE, "mapping slab %llu: %s%s",
				   (unsigned long long)in[i].id, strerror(e),
				   e == ENOENT || e == EACCES ?
				   " (gone, or not permitted to read this process)" : "");
			continue;
		}
		memset(s, 0, sizeof(*s));
		s->buf = m;
		s->size = in[i].size;
		s->real_size = in[i].size;
		s->map_len = in[i].size;
		s->fd = -1;
		s->id = in[i].id;
		/* kept for the next snapshot, or unmapped when this heap is done */
		s->unmap = !cache_map(r, &in[i], m);
		(*nraw)++;
	}
	if (w->keep)
		dev_identify(r, w);
	return RD_GOT_SLABS;
}

/*
 * May a dead heap's decoding be kept (BLAMER_READ_KEEP_DEAD)? Only once
 * its owner has been dead a second: every slab of it is an orphan, and
 * the module's reaper has revoked every writer (a CLONE_VM child of the
 * owner can write until then; LIST waits for the reaping of the owners
 * seen dead before it). The slabs' times are CLOCK_BOOTTIME's, read
 * after LIST.
 */
static bool dev_keepable(struct blamer_reader *r, const struct rd_walk *w)
{
	const struct blamer_slab_info *in = &r->list[r->vw.heap];
	uint32_t i;

	for (i = 0; i < w->n; i++)
		if (in[i].state != BLAMER_SLAB_ORPHAN ||
		    in[i].orphan_time_ns + 1000000000u > r->vw.boot_ns)
			return false;
	return true;
}

static int dev_list(struct blamer_reader *r, struct blamer_snapshot *s, char *err, size_t errlen)
{
	struct blamer_slab_info *v = NULL;
	uint32_t n = 0;
	int ret;

	r->vw = (struct rd_devwalk){ 0 };
	ret = list_slabs(r, &v, &n, err, errlen);
	if (ret)
		return ret;
	r->vw.boot_ns = bl_clock_ns(CLOCK_BOOTTIME);	/* after LIST: no slab died later */
	r->vw.n = n;
	s->generation = r->generation;
	if (n)
		qsort(v, n, sizeof(*v), info_cmp);
	return 0;
}

/* Slabs created through one open file (file_serial) are one heap. */
static uint32_t dev_next(struct blamer_reader *r)
{
	struct rd_devwalk *vw = &r->vw;
	uint32_t j;

	vw->heap = vw->at;
	for (j = vw->at; j < vw->n && r->list[j].file_serial == r->list[vw->heap].file_serial; j++)
		;
	vw->at = j;
	return j - vw->heap;
}

/* The kernel's facts of the heap's owner. */
static void dev_facts(struct blamer_reader *r, struct rd_walk *w)
{
	const struct blamer_slab_info *f = &r->list[r->vw.heap];
	struct blamer_snap_process *p = w->p;
	uint32_t k;

	p->kernel_facts = true;
	p->pid = f->pid;
	p->uid = f->uid;
	rd_sanitize(p->comm, f->comm, sizeof(f->comm));
	p->start_time_ns = f->start_time_ns;
	p->create_time_ns = f->create_time_ns;
	p->heap_key = f->file_serial;
	p->state = BLAMER_PROC_LIVE;
	for (k = 0; k < w->n; k++) {
		/* the group is one owner: any orphan slab means it is gone */
		if (f[k].state == BLAMER_SLAB_ORPHAN) {
			p->state = BLAMER_PROC_DEAD;
			p->orphan_time_ns = f[k].orphan_time_ns;
		}
		if (f[k].flags & BLAMER_SLAB_EXITED) {
			p->exited = true;
			p->exit_code = f[k].exit_code;
			p->exit_signal = f[k].exit_signal;
		}
		if (f[k].flags & BLAMER_SLAB_COREDUMP)
			p->coredump = true;
		if (p->nslabs < BLAMER_MAX_SLABS)
			p->slab_ids[p->nslabs++] = f[k].id;
		p->size += f[k].size;
	}
	if (w->n > BLAMER_MAX_SLABS)
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "%u slabs, at most %u are read",
			   w->n, BLAMER_MAX_SLABS);
}

static void dev_end(struct blamer_reader *r)
{
	cache_swap(r);
}

static int dev_release(struct blamer_reader *r, const struct blamer_snap_process *p,
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
static int dev_status(struct blamer_reader *r, struct blamer_backend_status *st,
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

const struct rd_backend_ops rd_dev_ops = {
	.list = dev_list,
	.next = dev_next,
	.facts = dev_facts,
	.identify = dev_identify,
	.read = dev_read,
	.keepable = dev_keepable,
	.end = dev_end,
	.release = dev_release,
	.status = dev_status,
	.close = dev_close,
};
