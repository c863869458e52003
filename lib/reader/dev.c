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

void rd_dev_close(struct blamer_reader *r)
{
	free(r->list);
	r->list = NULL;
	r->list_cap = 0;
	cache_swap(r);	/* nothing listed since: every mapping goes */
	rd_carry_free(&r->maps);
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
		/* kept for the next snapshot, or unmapped when this heap is done */
		raw[nraw].unmap = !cache_map(r, &in[i], m);
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

/*
 * May a dead heap's decoding be kept (BLAMER_READ_KEEP_DEAD)? Only once
 * its owner has been dead a second: every slab of it is an orphan, and
 * the module's reaper has revoked every writer (a CLONE_VM child of the
 * owner can write until then; LIST waits for the reaping of the owners
 * seen dead before it). @now is CLOCK_BOOTTIME, the clock of the slabs'
 * times; @ks gets what identifies its slabs.
 */
static bool keepable(const struct blamer_slab_info *in, uint32_t n, uint64_t now,
		     struct rd_kept_slab *ks)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (in[i].state != BLAMER_SLAB_ORPHAN || in[i].orphan_time_ns + 1000000000u > now)
			return false;
		memset(&ks[i], 0, sizeof(ks[i]));
		ks[i].id = in[i].id;
		ks[i].v[0] = in[i].size;
		ks[i].v[1] = in[i].create_time_ns;
		ks[i].v[2] = in[i].file_serial;
		ks[i].v[3] = in[i].flags;
		ks[i].v[4] = in[i].orphan_time_ns;
	}
	return true;
}

int rd_dev_snapshot(struct blamer_reader *r, struct blamer_snapshot *s,
		    char *err, size_t errlen)
{
	struct blamer_slab_info *v = NULL;
	uint32_t n = 0, i, j, k;
	uint64_t boot_ns;
	int ret;

	ret = list_slabs(r, &v, &n, err, errlen);
	if (ret)
		return ret;
	boot_ns = bl_clock_ns(CLOCK_BOOTTIME);	/* after LIST: no slab died later */
	s->generation = r->generation;
	if (n)
		qsort(v, n, sizeof(*v), info_cmp);
	for (i = 0; i < n; i = j) {
		struct blamer_snap_process *p = rd_new_process(s);
		const struct blamer_slab_info *f = &v[i];
		struct rd_kept_slab ks[BLAMER_MAX_SLABS];
		struct rd_kept *e = NULL;
		bool keep;
		size_t defs;

		for (j = i + 1; j < n && v[j].file_serial == f->file_serial; j++)
			;
		if (!p) {
			cache_swap(r);
			if (r->opts.flags & BLAMER_READ_KEEP_DEAD)
				rd_keep_swap(&r->keep);
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
		/* a dead heap's slabs no longer change: decoded once, then kept */
		keep = (r->opts.flags & BLAMER_READ_KEEP_DEAD) &&
		       !(r->opts.flags & BLAMER_READ_HEADERS_ONLY) && p->state == BLAMER_PROC_DEAD &&
		       j - i <= BLAMER_MAX_SLABS && keepable(&v[i], j - i, boot_ns, ks);
		if (keep)
			e = rd_keep_find(&r->keep, p->pid, p->start_time_ns, p->heap_key);
		if (e && rd_keep_same(e, ks, j - i) && rd_keep_reuse(&r->keep, e, s, p))
			continue;
		defs = s->nunit_defs;
		read_heap(r, s, p, &v[i], j - i > BLAMER_MAX_SLABS ? BLAMER_MAX_SLABS : j - i);
		if (keep)
			rd_keep_add(&r->keep, s, p, defs, ks, j - i);
	}
	cache_swap(r);
	if (r->opts.flags & BLAMER_READ_KEEP_DEAD)
		rd_keep_swap(&r->keep);
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
