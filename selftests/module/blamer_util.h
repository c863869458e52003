/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers shared by the /dev/blamer selftests and tools: every
 * ioctl wrapped to return 0 (or a descriptor) or -errno, so callers
 * compare errnos directly, and the module parameters.
 */
#ifndef BLAMER_UTIL_H
#define BLAMER_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/blamer.h>

#define PG 4096UL
#define BL_DEVICE "/dev/blamer"
#define BL_PARAMS "/sys/module/blamer/parameters/"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

/* One real load or store of a byte of a mapping (a fault if it must). */
static inline unsigned char bl_peek(const void *p)
{
	return __atomic_load_n((const unsigned char *)p, __ATOMIC_RELAXED);
}

static inline void bl_poke(void *p, unsigned char v)
{
	__atomic_store_n((unsigned char *)p, v, __ATOMIC_RELAXED);
}

static inline int bl_open(int flags)
{
	int fd = open(BL_DEVICE, flags | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Create a slab of @len bytes with @flags; c->fd is its read-write fd. */
static inline int bl_create_flags(int fd, __u64 len, __u32 flags,
				  struct blamer_create *c)
{
	memset(c, 0, sizeof(*c));
	c->length = len;
	c->flags = flags;
	c->fd = -1;
	return ioctl(fd, BLAMER_IOC_CREATE, c) ? -errno : 0;
}

/* Create a slab of @len bytes, pages at first touch. */
static inline int bl_create(int fd, __u64 len, struct blamer_create *c)
{
	return bl_create_flags(fd, len, 0, c);
}

/* A read-only descriptor of slab @id, or -errno. */
static inline int bl_open_slab(int fd, __u64 id)
{
	struct blamer_open o = { .id = id };

	return ioctl(fd, BLAMER_IOC_OPEN, &o) ? -errno : o.fd;
}

static inline int bl_status(int fd, struct blamer_status *st)
{
	memset(st, 0, sizeof(*st));
	return ioctl(fd, BLAMER_IOC_STATUS, st) ? -errno : 0;
}

static inline int bl_release(int fd, __u64 id)
{
	struct blamer_release r = { .id = id };

	return ioctl(fd, BLAMER_IOC_RELEASE, &r) ? -errno : 0;
}

/* List into a malloc'ed array (caller frees *out); returns count or -errno. */
static inline int bl_list(int fd, struct blamer_slab_info **out,
			  struct blamer_list *lp)
{
	struct blamer_slab_info *v = NULL;
	struct blamer_list l;
	__u32 cap = 64;

	*out = NULL;
	for (;;) {
		free(v);
		v = calloc(cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(&l, 0, sizeof(l));
		l.info_size = sizeof(*v);
		l.slabs = (uintptr_t)v;
		l.capacity = cap;
		if (ioctl(fd, BLAMER_IOC_LIST, &l)) {
			int e = -errno;

			free(v);
			return e;
		}
		if (l.total <= cap)
			break;
		cap = l.total * 2;
	}
	if (lp)
		*lp = l;
	*out = v;
	return (int)l.count;
}

/* The kernel's facts about slab @id as the caller sees them; 0 or -ENOENT. */
static inline int bl_find(int fd, __u64 id, struct blamer_slab_info *info)
{
	struct blamer_slab_info *v = NULL;
	int n, i, ret = -ENOENT;

	memset(info, 0, sizeof(*info));
	n = bl_list(fd, &v, NULL);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++)
		if (v[i].id == id) {
			*info = v[i];
			ret = 0;
		}
	free(v);
	return ret;
}

/* mmap of a slab descriptor from offset @off: the address or NULL, errno. */
static inline void *bl_map_at(int sfd, __u64 off, size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, sfd, (off_t)off);

	return p == MAP_FAILED ? NULL : p;
}

static inline void *bl_map(int sfd, size_t len, int prot)
{
	return bl_map_at(sfd, 0, len, prot);
}

static inline int bl_param_get(const char *name, long long *v)
{
	char path[128];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), BL_PARAMS "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ok = fscanf(f, "%lld", v) == 1;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

static inline int bl_param_set(const char *name, long long v)
{
	char path[128];
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), BL_PARAMS "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fprintf(f, "%lld\n", v) < 0)
		ret = -EIO;
	if (fclose(f))
		ret = -errno;
	return ret;
}

#endif
