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
 *   only the user can write. Where it is, what the files are called,
 *   which are trusted and how many dead heaps are kept are the format's
 *   rules (format/where.h); here files are created O_EXCL|O_NOFOLLOW
 *   through the checked directory fd, each share-locked (flock) for as
 *   long as it is mapped: the lock says "my writer lives" even to a
 *   process that cannot see our pid (another pid namespace).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uapi/linux/blamer.h"

#include "internal.h"
#include "blamer.h"
#include "where.h"

/*
 * @fd kept above 2 (a program started with stdout closed would have
 * given the library 1, and its dup2() of a log onto 1 closed ours), and
 * what it is noted for bl_backend_fd_ok(). @fd, or -1 with errno set.
 */
static int fd_keep(struct bl_backend *be, int fd)
{
	struct stat st;
	int high;

	if (fd >= 0 && fd < 3) {
		high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		close(fd);
		fd = high;
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st)) {
		close(fd);
		return -1;
	}
	be->fd_dev = st.st_dev;
	be->fd_ino = st.st_ino;
	be->fd_rdev = st.st_rdev;
	return fd;
}

bool bl_backend_fd_ok(struct bl_backend *be)
{
	int *fd = be->kind == BLAMER_BACKEND_DEVICE ? &be->devfd : &be->dirfd;
	struct stat st;

	if (*fd < 0)
		return false;
	if (!fstat(*fd, &st) && st.st_dev == be->fd_dev && st.st_ino == be->fd_ino &&
	    st.st_rdev == be->fd_rdev)
		return true;
	*fd = -1;	/* not ours any more: forgotten, never closed */
	return false;
}

/* The error of a growth through a descriptor that is not ours any more. */
static int fd_lost(struct bl_backend *be)
{
	return bl_error(EBADF, "blamer: the %s descriptor of this heap was closed by the program "
			"(and its number maybe given to another file): no more slabs",
			be->kind == BLAMER_BACKEND_DEVICE ? BLAMER_DEVICE : "directory");
}

static int device_open(struct bl_backend *be, bool forced)
{
	be->devfd = fd_keep(be, open(BLAMER_DEVICE, O_RDWR | O_CLOEXEC));
	if (be->devfd < 0) {
		if (forced)
			return bl_error(errno, "blamer: BLAMER_BACKEND=device but %s cannot be opened",
					BLAMER_DEVICE);
		return -errno;
	}
	be->kind = BLAMER_BACKEND_DEVICE;
	snprintf(be->dir, sizeof(be->dir), "%s", "");
	return 0;
}

int bl_backend_open(struct bl_backend *be, int requested, const char *dir,
		    int64_t pid, int64_t start_ns)
{
	int fd;

	memset(be, 0, sizeof(*be));
	be->devfd = -1;
	be->dirfd = -1;
	be->pid = pid;
	be->start_ns = start_ns;
	if (requested == BLAMER_BACKEND_AUTO) {
		enum blamer_backend env;
		char why[128];

		if (blamer_backend_from_env(&env, why, sizeof(why)))
			return bl_error(EINVAL, "blamer: %s", why);
		requested = env;
	}
	switch (requested) {
	case BLAMER_BACKEND_DEVICE:
		return device_open(be, true);
	case BLAMER_BACKEND_AUTO:
		if (!device_open(be, false))
			return 0;
		/* no usable device: use the directory */
		__attribute__((fallthrough));
	case BLAMER_BACKEND_DIR: {
		struct bl_retention keep;
		char why[320];

		/* before anything is made: a bad limit is an error, not a pile */
		if (bl_retention_from_env(&keep, why, sizeof(why)))
			return bl_error(EINVAL, "blamer: %s", why);
		if (bl_slabdir_path(be->dir, sizeof(be->dir), dir)) {
			/* blamer_init() refuses a longer cfg->dir: this is $BLAMER_DIR */
			const char *d = dir && *dir ? dir : secure_getenv("BLAMER_DIR");

			return bl_error(ENAMETOOLONG,
					"blamer: directory name too long (%zu bytes, at most %zu): %.40s...",
					strlen(d), sizeof(be->dir) - 1, d);
		}
		fd = bl_slabdir_open(be->dir, why, sizeof(why));
		if (fd < 0)
			return bl_error(-fd, "blamer: %s", why);
		fd = fd_keep(be, fd);
		if (fd < 0)
			return bl_error(errno, "blamer: cannot keep the descriptor of %s", be->dir);
		be->dirfd = fd;
		be->kind = BLAMER_BACKEND_DIR;
		/* each new heap bounds the dead ones its user has left */
		bl_slabdir_trim(fd, &keep);
		return 0;
	}
	default:
		return bl_error(EINVAL, "blamer: unknown backend %d", requested);
	}
}

static int dir_slab(struct bl_backend *be, uint32_t index, uint64_t size,
		    struct bl_slab_map *m)
{
	char name[BL_SLAB_NAME_MAX];
	bool xfsz_pending, sized = false;
	struct stat st;
	sigset_t held;
	void *p;
	int fd, err;

	if (!bl_backend_fd_ok(be))
		return fd_lost(be);
	bl_slab_name(name, sizeof(name), be->pid, (uint64_t)be->start_ns, be->seq, index);
	/* O_EXCL|O_NOFOLLOW: never reuse or follow something already there. */
	fd = openat(be->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST && index == 0)
		return bl_error(EEXIST, "blamer: %s/%s exists: a live heap of this process (made "
				"by another copy of libblamer?), or something was planted",
				be->dir, name);
	if (fd < 0)
		return bl_error(errno, "blamer: cannot create %s/%s", be->dir, name);
	if (fstat(fd, &st) || !bl_slab_file_ok(&st)) {
		err = bl_error(EPERM, "blamer: %s/%s is not a private regular file", be->dir,
			       name);
		goto fail;
	}
	/* Held by the open file, which the mapping keeps after close():
	 * released when the process unmaps, execs or dies. */
	flock(fd, LOCK_SH | LOCK_NB);
	if (!bl_fsize_allows(size)) {
		err = bl_error(EFBIG, "blamer: %s/%s: a slab of %llu bytes is past RLIMIT_FSIZE",
			       be->dir, name, (unsigned long long)size);
		goto fail;
	}
	bl_signals_hold(&held);
	xfsz_pending = bl_sigxfsz_pending();
	err = ftruncate(fd, (off_t)size) ? errno : 0;
	/* Reserve the pages now: a later write to a tmpfs that filled up
	 * would be a SIGBUS in the middle of a push. */
	if (!err) {
		err = posix_fallocate(fd, 0, (off_t)size);
		sized = true;
	}
	if (err == EFBIG)	/* the limit lowered since it was asked */
		bl_sigxfsz_take_back(xfsz_pending);
	bl_signals_restore(&held);
	if (err && !sized) {
		err = bl_error(err, "blamer: cannot size %s/%s", be->dir, name);
		goto fail;
	}
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

	if (!bl_backend_fd_ok(be))
		return fd_lost(be);
	if (ioctl(be->devfd, BLAMER_IOC_CREATE, &c))
		return bl_error(errno, "blamer: %s: cannot create a slab of %" PRIu64 " bytes",
				BLAMER_DEVICE, size);
	/* The mapping keeps the slab's file open; the descriptor can go. */
	p = mmap(NULL, c.length, PROT_READ | PROT_WRITE, MAP_SHARED, c.fd, 0);
	err = errno;
	close(c.fd);
	if (p == MAP_FAILED) {
		device_release(be, c.id);
		return bl_error(err, "blamer: %s: cannot map slab %" PRIu64, BLAMER_DEVICE,
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
	if (be->kind == BLAMER_BACKEND_DEVICE)
		return device_slab(be, size, m, id);
	if (be->kind == BLAMER_BACKEND_DIR)
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

void bl_backend_exiting(struct bl_backend *be)
{
	char name[BL_SLAB_NAME_MAX];

	if (be->kind != BLAMER_BACKEND_DIR || !bl_backend_fd_ok(be))
		return;
	/* slab 0's modification time: when the process ended */
	bl_slab_name(name, sizeof(name), be->pid, (uint64_t)be->start_ns, be->seq, 0);
	utimensat(be->dirfd, name, NULL, AT_SYMLINK_NOFOLLOW);
}

void bl_backend_close(struct bl_backend *be, bool remove)
{
	/* a descriptor that is not ours any more is forgotten, not closed */
	if (be->kind)
		bl_backend_fd_ok(be);
	if (be->dirfd >= 0) {
		if (remove)
			bl_slabdir_remove_heap(be->dirfd, be->pid, be->start_ns, be->seq);
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
