// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: the ioctls.
 *
 * Every argument structure starts with a __u32 size. The kernel accepts
 * any size from the first published one (*_SIZE_VER0) up to a page:
 * fields it does not know must be zero (copy_struct_from_user), fields
 * userspace does not know are not written back. The ioctl number is
 * matched on type, number and direction only, since its size bits change
 * when a structure grows.
 */
#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "blamer.h"

static int blamer_copy_in(void *karg, size_t ksize, size_t ver0,
			  void __user *uarg, u32 *usize)
{
	u32 size;
	int err;

	if (get_user(size, (u32 __user *)uarg))
		return -EFAULT;
	if (size < ver0 || size > PAGE_SIZE)
		return -EINVAL;
	err = copy_struct_from_user(karg, ksize, uarg, size);
	if (err)
		return err;
	*usize = size;
	return 0;
}

static int blamer_copy_out(void __user *uarg, const void *karg, size_t ksize,
			   u32 usize)
{
	if (copy_to_user(uarg, karg, min_t(size_t, ksize, usize)))
		return -EFAULT;
	return 0;
}

static long blamer_ioc_create(struct blamer_ctx *ctx, void __user *uarg)
{
	struct blamer_create c;
	u32 usize, id;
	u64 size;
	int err;

	err = blamer_copy_in(&c, sizeof(c), BLAMER_CREATE_SIZE_VER0, uarg,
			     &usize);
	if (err)
		return err;
	if (c.flags)
		return -EINVAL;
	err = blamer_slab_create(ctx, c.length, &id, &size);
	if (err)
		return err;
	c.length = size;
	c.id = id;
	c.mmap_offset = (u64)id << PAGE_SHIFT;
	err = blamer_copy_out(uarg, &c, sizeof(c), usize);
	if (err)
		blamer_slab_undo(ctx, id);
	return err;
}

/* Write @n infos to userspace entries of @stride bytes each. */
static int blamer_copy_infos(u64 uptr, const struct blamer_slab_info *info,
			     u32 n, u32 stride)
{
	size_t len = min_t(size_t, stride, sizeof(*info));
	u32 i;

	for (i = 0; i < n; i++) {
		char __user *dst = u64_to_user_ptr(uptr + (u64)i * stride);

		if (copy_to_user(dst, &info[i], len))
			return -EFAULT;
		if (stride > len && clear_user(dst + len, stride - len))
			return -EFAULT;
	}
	return 0;
}

static long blamer_ioc_list(struct blamer_ctx *ctx, void __user *uarg)
{
	struct blamer_slab_info *info = NULL;
	struct blamer_slab *slab;
	struct blamer_list l;
	unsigned long id;
	u32 usize, n = 0, total = 0, cap;
	u64 gen;
	int err;

	err = blamer_copy_in(&l, sizeof(l), BLAMER_LIST_SIZE_VER0, uarg,
			     &usize);
	if (err)
		return err;
	if (l.flags || l.info_size < BLAMER_SLAB_INFO_SIZE_VER0 ||
	    l.info_size > PAGE_SIZE)
		return -EINVAL;

	mutex_lock(&blamer_lock);
	/* Read before the walk, so that a later event still wakes poll. */
	gen = blamer_generation();
	/* Never allocate more than there are slabs, whatever capacity says. */
	xa_for_each(&blamer_slabs, id, slab)
		total++;
	cap = min(l.capacity, total);
	if (cap) {
		info = kvcalloc(cap, sizeof(*info), GFP_KERNEL);
		if (!info) {
			mutex_unlock(&blamer_lock);
			return -ENOMEM;
		}
	}
	total = 0;
	xa_for_each(&blamer_slabs, id, slab) {
		if (slab->ctx != ctx && !blamer_may_read(slab))
			continue;
		if (n < cap)
			blamer_slab_fill_info(slab, ctx, &info[n++]);
		total++;
	}
	mutex_unlock(&blamer_lock);

	err = blamer_copy_infos(l.slabs, info, n, l.info_size);
	kvfree(info);
	if (err)
		return err;
	l.count = n;
	l.total = total;
	l.generation = gen;
	err = blamer_copy_out(uarg, &l, sizeof(l), usize);
	if (err)
		return err;
	WRITE_ONCE(ctx->seen_generation, gen);
	return 0;
}

static long blamer_ioc_release(void __user *uarg)
{
	struct blamer_release r;
	u32 usize;
	int err;

	err = blamer_copy_in(&r, sizeof(r), BLAMER_RELEASE_SIZE_VER0, uarg,
			     &usize);
	if (err)
		return err;
	if (r.flags)
		return -EINVAL;
	return blamer_slab_release(r.id);
}

static long blamer_ioc_status(void __user *uarg)
{
	struct blamer_status st;
	u32 usize;
	int err;

	err = blamer_copy_in(&st, sizeof(st), BLAMER_STATUS_SIZE_VER0, uarg,
			     &usize);
	if (err)
		return err;
	blamer_status(&st);
	return blamer_copy_out(uarg, &st, sizeof(st), usize);
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
	struct blamer_ctx *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;

	/* The published layouts; a change here breaks the ABI. */
	BUILD_BUG_ON(sizeof(struct blamer_create) != BLAMER_CREATE_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct blamer_list) != BLAMER_LIST_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct blamer_release) != BLAMER_RELEASE_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct blamer_status) != BLAMER_STATUS_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct blamer_slab_info) !=
		     BLAMER_SLAB_INFO_SIZE_VER0);

	if (blamer_cmd_is(cmd, BLAMER_IOC_CREATE))
		return blamer_ioc_create(ctx, uarg);
	if (blamer_cmd_is(cmd, BLAMER_IOC_LIST))
		return blamer_ioc_list(ctx, uarg);
	if (blamer_cmd_is(cmd, BLAMER_IOC_RELEASE))
		return blamer_ioc_release(uarg);
	if (blamer_cmd_is(cmd, BLAMER_IOC_STATUS))
		return blamer_ioc_status(uarg);
	return -ENOTTY;
}
