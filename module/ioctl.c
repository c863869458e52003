// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: the ioctls of /dev/blamer.
 *
 * A command is matched on type, number and direction; the size of its
 * structure is the size in the command (_IOC_SIZE), as PIDFD_GET_INFO
 * does, so strace, seccomp filters and fuzzers see the real argument. Any
 * size from the first published one up is accepted: a larger structure
 * must have a zero tail (copy_struct_from_user(), E2BIG otherwise, as
 * clone3() and openat2() do), a smaller one reads as zero-filled, and at
 * most the caller's size is written back, the rest of it zeroed.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/uaccess.h>

#include "blamer.h"

static int blamer_copy_in(void *karg, size_t ksize, size_t ver0,
			  void __user *uarg, size_t usize)
{
	if (usize < ver0)
		return -EINVAL;
	return copy_struct_from_user(karg, ksize, uarg, usize);
}

static int blamer_copy_out(void __user *uarg, size_t usize, const void *karg,
			   size_t ksize)
{
	size_t len = min(usize, ksize);

	if (copy_to_user(uarg, karg, len))
		return -EFAULT;
	if (usize > len && clear_user(uarg + len, usize - len))
		return -EFAULT;
	return 0;
}

/*
 * Hand @file to userspace as a new close-on-exec descriptor written to
 * *@fdp inside @karg, which is copied out first: a failed copy leaves no
 * descriptor behind. Consumes @file.
 */
static int blamer_install(struct file *file, s32 *fdp, void __user *uarg,
			  size_t usize, const void *karg, size_t ksize)
{
	int fd = get_unused_fd_flags(O_CLOEXEC);

	if (fd < 0) {
		fput(file);
		return fd;
	}
	*fdp = fd;
	if (blamer_copy_out(uarg, usize, karg, ksize)) {
		put_unused_fd(fd);
		fput(file);
		return -EFAULT;
	}
	fd_install(fd, file);
	return 0;
}

static long blamer_ioc_create(struct file *dev, void __user *uarg,
			      size_t usize)
{
	struct blamer_create c;
	struct blamer_slab *slab;
	struct file *file;
	int err;

	err = blamer_copy_in(&c, sizeof(c), BLAMER_CREATE_SIZE_VER0, uarg,
			     usize);
	if (err)
		return err;
	if (!(dev->f_mode & FMODE_WRITE))
		return -EBADF;
	err = blamer_slab_create(dev->private_data, &c, &file);
	if (err)
		return err;
	slab = file->private_data;
	blamer_slab_get(slab);
	err = blamer_install(file, &c.fd, uarg, usize, &c, sizeof(c));
	if (err)
		blamer_slab_undo(slab);
	else
		blamer_notify(slab);
	blamer_slab_put(slab);
	return err;
}

static long blamer_ioc_open(void __user *uarg, size_t usize)
{
	struct blamer_open o;
	struct file *file;
	int err;

	err = blamer_copy_in(&o, sizeof(o), BLAMER_OPEN_SIZE_VER0, uarg, usize);
	if (err)
		return err;
	err = blamer_slab_open(&o, &file);
	if (err)
		return err;
	return blamer_install(file, &o.fd, uarg, usize, &o, sizeof(o));
}

static long blamer_ioc_list(struct blamer_ctx *ctx, void __user *uarg,
			    size_t usize)
{
	struct blamer_list l;
	int err;

	err = blamer_copy_in(&l, sizeof(l), BLAMER_LIST_SIZE_VER0, uarg, usize);
	if (err)
		return err;
	err = blamer_slab_list(ctx, &l);
	if (err)
		return err;
	return blamer_copy_out(uarg, usize, &l, sizeof(l));
}

static long blamer_ioc_release(void __user *uarg, size_t usize)
{
	struct blamer_release r;
	int err;

	err = blamer_copy_in(&r, sizeof(r), BLAMER_RELEASE_SIZE_VER0, uarg,
			     usize);
	if (err)
		return err;
	if (r.flags || r.reserved)
		return -EINVAL;
	return blamer_slab_release(r.id);
}

static long blamer_ioc_status(void __user *uarg, size_t usize)
{
	struct blamer_status st = { };

	if (usize < BLAMER_STATUS_SIZE_VER0)
		return -EINVAL;
	blamer_status(&st);
	return blamer_copy_out(uarg, usize, &st, sizeof(st));
}

/* Same ioctl apart from the size bits? */
static bool blamer_cmd_is(unsigned int cmd, unsigned int ref)
{
	return _IOC_TYPE(cmd) == _IOC_TYPE(ref) &&
	       _IOC_NR(cmd) == _IOC_NR(ref) &&
	       _IOC_DIR(cmd) == _IOC_DIR(ref);
}

long blamer_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);

	/* The published layouts; a change here breaks the ABI. */
	BUILD_BUG_ON(sizeof(struct blamer_create) != BLAMER_CREATE_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct blamer_open) != BLAMER_OPEN_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct blamer_list) != BLAMER_LIST_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct blamer_release) != BLAMER_RELEASE_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct blamer_status) != BLAMER_STATUS_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct blamer_slab_info) !=
		     BLAMER_SLAB_INFO_SIZE_VER0);

	if (blamer_cmd_is(cmd, BLAMER_IOC_CREATE))
		return blamer_ioc_create(file, uarg, usize);
	if (blamer_cmd_is(cmd, BLAMER_IOC_OPEN))
		return blamer_ioc_open(uarg, usize);
	if (blamer_cmd_is(cmd, BLAMER_IOC_LIST))
		return blamer_ioc_list(file->private_data, uarg, usize);
	if (blamer_cmd_is(cmd, BLAMER_IOC_RELEASE))
		return blamer_ioc_release(uarg, usize);
	if (blamer_cmd_is(cmd, BLAMER_IOC_STATUS))
		return blamer_ioc_status(uarg, usize);
	return -ENOTTY;
}
