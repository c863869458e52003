// SPDX-License-Identifier: MIT
/*
 * Slab backends.
 *
 * device: /dev/blamer hands out zeroed slabs whose size, id and owner the
 *   kernel records (include/uapi/linux/blamer.h). Each slab comes as a
 *   descriptor of its own, mapped and closed at once (the mapping keeps
 *   it). One /dev/blamer open file per heap: the kernel groups a heap's
 *   slabs by that file. The slabs live until the process exits (then the
 *   kernel keeps them as orphans) or a clean close releases them.
 * dir: where the module is not loaded, one file per slab in a directory
 *   only the user can write: $BLAMER_DIR or /dev/shm/blamer-<uid>/, files
 *   <pid>-<start_ns>.<index>.slab. The lessons of hsperfdata: the
 *   directory must be ours, a real directory (not a symlink) and not
 *   writable by others; files are created O_EXCL|O_NOFOLLOW through the
 *   checked directory fd and must be regular, ours and singly linked.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uapi/linux/blamer.h"

#include "backend.h"
#include "blamer.h"
#include "writer.h"

static int check_dir_fd(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st))
		return bl_error(errno, "blamer: stat %s", path);
	if (!S_ISDIR(st.st_mode))
		return bl_error(ENOTDIR, "blamer: %s", path);
	if (st.st_uid != geteuid())
		return bl_error(EPERM, "blamer: %s is owned by uid %u, not by us (uid %u)",
				path, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return bl_error(EPERM, "blamer: %s is writable by group or others (mode %03o)",
				path, (unsigned)(st.st_mode & 0777));
	return 0;
}

int bl_dir_open(const char *dir, char *path, size_t pathlen)
{
	int fd, ret;

	if (!dir || !*dir)
		dir = getenv("BLAMER_DIR");
	if (dir && *dir)
		snprintf(path, pathlen, "%s", dir);
	else
		snprintf(path, pathlen, "/dev/shm/blamer-%u", (unsigned)geteuid());
	/* 0700: our heaps are nobody else's business (readers of other
	 * users need the device backend and its permission checks). */
	if (mkdir(path, 0700) && errno != EEXIST)
		return bl_error(errno, "blamer: cannot create %s", path);
	/* O_NOFOLLOW: a symlink planted at the path is refused, not followed. */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		struct stat st;
		int err = errno;

		if (!lstat(path, &st) && S_ISLNK(st.st_mode))
			return bl_error(EPERM, "blamer: %s is a symlink: refused", path);
		return bl_error(err, "blamer: cannot open directory %s", path);
	}
	ret = check_dir_fd(fd, path);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

#define BL_DEVICE "/dev/blamer"

static int device_open(struct bl_backend *be, bool forced)
{
	be->devfd = open(BL_DEVICE, O_RDWR | O_CLOEXEC);
	if (be->devfd < 0) {
		if (forced)
			return bl_error(errno, "blamer: BLAMER_BACKEND=device but %s cannot be opened",
					BL_DEVICE);
		return -errno;
	}
	be->kind = BLAMER_BACKEND_ID_DEVICE;
	snprintf(be->dir, sizeof(be->dir), "%s", "");
	return 0;
}

int bl_backend_open(struct bl_backend *be, int requested, const char *dir,
		    int64_t pid, int64_t start_ns)
{
	const char *env;
	int fd;

	memset(be, 0, sizeof(*be));
	be->devfd = -1;
	be->dirfd = -1;
	be->pid = pid;
	be->start_ns = start_ns;
	if (requested == BL_BACKEND_AUTO) {
		env = getenv("BLAMER_BACKEND");
		if (!env || !*env || !strcmp(env, "auto"))
			requested = BL_BACKEND_AUTO;
		else if (!strcmp(env, "device"))
			requested = BL_BACKEND_DEVICE;
		else if (!strcmp(env, "dir"))
			requested = BL_BACKEND_DIR;
		else
			return bl_error(EINVAL, "blamer: BLAMER_BACKEND=%s: use device, dir or auto",
					env);
	}
	switch (requested) {
	case BL_BACKEND_DEVICE:
		return device_open(be, true);
	case BL_BACKEND_AUTO:
		if (!device_open(be, false))
			return 0;
		/* no usable device: use the directory */
		__attribute__((fallthrough));
	case BL_BACKEND_DIR:
		fd = bl_dir_open(dir, be->dir, sizeof(be->dir));
		if (fd < 0)
			return fd;
		be->dirfd = fd;
		be->kind = BLAMER_BACKEND_ID_DIR;
		return 0;
	default:
		return bl_error(EINVAL, "blamer: unknown backend %d", requested);
	}
}

static int slab_name(char *buf, size_t len, int64_t pid, int64_t start_ns, uint32_t index)
{
	return snprintf(buf, len, "%" PRId64 "-%" PRId64 ".%u.slab", pid, start_ns, index);
}

static int dir_slab(struct bl_backend *be, uint32_t index, uint64_t size,
		    struct bl_slab_map *m)
{
	char name[96];
	struct stat st;
	void *p;
	int fd, err;

	slab_name(name, sizeof(name), be->pid, be->start_ns, index);
	/* O_EXCL|O_NOFOLLOW: never reuse or follow something already there. */
	fd = openat(be->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST && index == 0)
		return bl_error(EEXIST, "blamer: %s/%s exists: this process already has a heap "
				"there, or something was planted", be->dir, name);
	if (fd < 0)
		return bl_error(errno, "blamer: cannot create %s/%s", be->dir, name);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_nlink != 1) {
		err = bl_error(EPERM, "blamer: %s/%s is not a private regular file", be->dir,
			       name);
		goto fail;
	}
	if (ftruncate(fd, (off_t)size)) {
		err = bl_error(errno, "blamer: cannot size %s/%s", be->dir, name);
		goto fail;
	}
	/* Reserve the pages now: a later write to a tmpfs that filled up
	 * would be a SIGBUS in the middle of a push. */
	err = posix_fallocate(fd, 0, (off_t)size);
	if (err && err != EOPNOTSUPP && err != EINVAL) {
		err = bl_error(err, "blamer: cannot allocate %s/%s", be->dir, name);
		goto fail;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (p == MAP_FAILED) {
		err = bl_error(errno, "blamer: cannot map %s/%s", be->dir, name);
		goto fail;
	}
	close(fd);
	m->base = p;
	m->size = size;
	return 0;
fail:
	unlinkat(be->dirfd, name, 0);
	close(fd);
	return err;
}

static void device_release(struct bl_backend *be, uint64_t id)
{
	struct blamer_release r = { .id = id };

	/* Best effort: what is not released goes when the process exits. */
	(void)ioctl(be->devfd, BLAMER_IOC_RELEASE, &r);
}

static int device_slab(struct bl_backend *be, uint64_t size, struct bl_slab_map *m,
		       uint64_t *id)
{
	struct blamer_create c = { .length = size };
	void *p;
	int err;

	if (ioctl(be->devfd, BLAMER_IOC_CREATE, &c))
		return bl_error(errno, "blamer: %s: cannot create a slab of %" PRIu64 " bytes",
				BL_DEVICE, size);
	/* The mapping keeps the slab's file open; the descriptor can go. */
	p = mmap(NULL, c.length, PROT_READ | PROT_WRITE, MAP_SHARED, c.fd, 0);
	err = errno;
	close(c.fd);
	if (p == MAP_FAILED) {
		device_release(be, c.id);
		return bl_error(err, "blamer: %s: cannot map slab %" PRIu64, BL_DEVICE,
				(uint64_t)c.id);
	}
	if (be->dev_nids < BLAMER_MAX_SLABS)
		be->dev_ids[be->dev_nids++] = c.id;
	m->base = p;
	m->size = c.length;
	*id = c.id;
	return 0;
}

int bl_backend_slab(struct bl_backend *be, uint32_t index, uint64_t size,
		    struct bl_slab_map *m, uint64_t *id)
{
	m->base = NULL;
	m->size = 0;
	*id = index;
	if (be->kind == BLAMER_BACKEND_ID_DEVICE)
		return device_slab(be, size, m, id);
	if (be->kind == BLAMER_BACKEND_ID_DIR)
		return dir_slab(be, index, size, m);
	return -EINVAL;
}

void bl_backend_unmap(struct bl_slab_map *m)
{
	if (m->base)
		munmap(m->base, m->size);
	m->base = NULL;
	m->size = 0;
}

void bl_backend_scratch(struct bl_slab_map *m)
{
	/* MAP_FIXED replaces the inherited shared mapping (dir backend) or
	 * fills the hole VM_DONTCOPY left (device backend) without writing
	 * anything to the parent's slab; if it fails, unmap instead: a stale
	 * handle then faults rather than write into the parent's heap. */
	if (m->base && mmap(m->base, m->size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		munmap(m->base, m->size);
}

int bl_dir_remove_heap(int dirfd, int64_t pid, int64_t start_ns)
{
	char prefix[64], *end;
	struct dirent *de;
	struct stat st;
	int fd, removed = 0;
	size_t plen;
	DIR *d;

	plen = snprintf(prefix, sizeof(prefix), "%" PRId64 "-%" PRId64 ".", pid, start_ns);
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, plen))
			continue;
		/* exactly <prefix><digits>.slab */
		strtoul(de->d_name + plen, &end, 10);
		if (end == de->d_name + plen || strcmp(end, ".slab"))
			continue;
		/* only what the library could have made: plain, ours, one link */
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1)
			continue;
		if (!unlinkat(dirfd, de->d_name, 0))
			removed++;
	}
	closedir(d);
	return removed;
}

void bl_backend_close(struct bl_backend *be, bool remove, uint32_t nslabs)
{
	(void)nslabs;
	if (be->dirfd >= 0) {
		if (remove)
			bl_dir_remove_heap(be->dirfd, be->pid, be->start_ns);
		close(be->dirfd);
	}
	if (be->devfd >= 0) {
		if (remove)
			while (be->dev_nids)
				device_release(be, be->dev_ids[--be->dev_nids]);
		close(be->devfd);
	}
	be->dirfd = -1;
	be->devfd = -1;
	be->dev_nids = 0;
}
