// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: kernel-owned shared-memory slabs with trusted owner facts.
 *
 * Module init and exit, the module parameters and the file operations of
 * the misc device /dev/blamer. See Documentation/userspace-api.rst and
 * Documentation/admin-guide.rst.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "blamer.h"
#include "plant.h"

u64 blamer_max_slab_bytes = 16ULL << 20;
u64 blamer_max_user_bytes = 64ULL << 20;
u64 blamer_max_total_bytes = 256ULL << 20;
u64 blamer_max_user_orphans = 64;
u64 blamer_max_user_watchers = 64;
int blamer_reader_gid = -1;

/**
 * struct blamer_param - a u64 module parameter with its valid range
 * @val: the value
 * @min: smallest accepted value
 * @max: largest accepted value
 * @pages: the value must be a multiple of PAGE_SIZE
 */
struct blamer_param {
	u64 *val;
	u64 min;
	u64 max;
	bool pages;
};

static int blamer_param_set(const char *val, const struct kernel_param *kp)
{
	const struct blamer_param *p = kp->arg;
	u64 v;
	int err;

	err = kstrtou64(val, 0, &v);
	if (err)
		return err;
	if (v < p->min || v > p->max || (p->pages && !PAGE_ALIGNED(v)))
		return -EINVAL;
	WRITE_ONCE(*p->val, v);
	return 0;
}

static int blamer_param_get(char *buffer, const struct kernel_param *kp)
{
	const struct blamer_param *p = kp->arg;

	return scnprintf(buffer, PAGE_SIZE, "%llu\n", READ_ONCE(*p->val));
}

static const struct kernel_param_ops blamer_param_ops = {
	.set = blamer_param_set,
	.get = blamer_param_get,
};

static struct blamer_param blamer_param_max_slab_bytes = {
	.val = &blamer_max_slab_bytes, .min = PAGE_SIZE, .max = 1ULL << 30,
	.pages = true,
};
module_param_cb(max_slab_bytes, &blamer_param_ops,
		&blamer_param_max_slab_bytes, 0644);
MODULE_PARM_DESC(max_slab_bytes,
		 "Largest slab in bytes, a multiple of the page size (default 16 MiB, at most 1 GiB)");

static struct blamer_param blamer_param_max_user_bytes = {
	.val = &blamer_max_user_bytes, .min = PAGE_SIZE, .max = 1ULL << 40,
};
module_param_cb(max_user_bytes, &blamer_param_ops,
		&blamer_param_max_user_bytes, 0644);
MODULE_PARM_DESC(max_user_bytes,
		 "Bytes of slab pages, live and orphaned, charged to one user (default 64 MiB)");

static struct blamer_param blamer_param_max_total_bytes = {
	.val = &blamer_max_total_bytes, .min = PAGE_SIZE, .max = 1ULL << 40,
};
module_param_cb(max_total_bytes, &blamer_param_ops,
		&blamer_param_max_total_bytes, 0644);
MODULE_PARM_DESC(max_total_bytes,
		 "Bytes of slab pages of all users (default 256 MiB)");

static struct blamer_param blamer_param_max_user_orphans = {
	.val = &blamer_max_user_orphans, .min = 0, .max = 1 << 20,
};
module_param_cb(max_user_orphans, &blamer_param_ops,
		&blamer_param_max_user_orphans, 0644);
MODULE_PARM_DESC(max_user_orphans,
		 "Orphans kept per user; above it the user's oldest are evicted (default 64)");

static struct blamer_param blamer_param_max_user_watchers = {
	.val = &blamer_max_user_watchers, .min = 1, .max = 1 << 20,
};
module_param_cb(max_user_watchers, &blamer_param_ops,
		&blamer_param_max_user_watchers, 0644);
MODULE_PARM_DESC(max_user_watchers,
		 "Open /dev/blamer files of one user that poll() wakes; more list but are not woken (default 64)");

static int blamer_gid_set(const char *val, const struct kernel_param *kp)
{
	int gid, err;

	err = kstrtoint(val, 0, &gid);
	if (err)
		return err;
	if (gid < -1)
		return -EINVAL;
	WRITE_ONCE(blamer_reader_gid, gid);
	return 0;
}

static int blamer_gid_get(char *buffer, const struct kernel_param *kp)
{
	return scnprintf(buffer, PAGE_SIZE, "%d\n",
			 READ_ONCE(blamer_reader_gid));
}

static const struct kernel_param_ops blamer_gid_ops = {
	.set = blamer_gid_set,
	.get = blamer_gid_get,
};
module_param_cb(reader_gid, &blamer_gid_ops, NULL, 0644);
MODULE_PARM_DESC(reader_gid,
		 "Members of this group (initial user namespace) may read every slab; -1 disables (default)");

static atomic64_t blamer_serial = ATOMIC64_INIT(0);

/*
 * The opener's process and address space are recorded: only they create
 * slabs through this file (an inherited or passed descriptor, or one kept
 * across execve(), gives no identity). Anyone may list, open and release
 * through it, with their own rights.
 */
static int blamer_open(struct inode *inode, struct file *file)
{
	struct blamer_ctx *ctx;

	ctx = kzalloc(sizeof(*ctx), BLAMER_GFP);
	if (!ctx)
		return -ENOMEM;
	ctx->serial = atomic64_inc_return(&blamer_serial);
	ctx->pid = get_pid(task_tgid(current));
	ctx->mm = current->mm;
	if (ctx->mm)
		mmgrab(ctx->mm);
	init_waitqueue_head(&ctx->wq);
	INIT_LIST_HEAD(&ctx->watch);
	mutex_init(&ctx->watch_mutex);
	file->private_data = ctx;
	blamer_plant_open();
	return nonseekable_open(inode, file);
}

/* Closing a descriptor changes nothing about slabs: they follow processes. */
static int blamer_release(struct inode *inode, struct file *file)
{
	struct blamer_ctx *ctx = file->private_data;

	blamer_unwatch(ctx);
	mutex_destroy(&ctx->watch_mutex);
	put_pid(ctx->pid);
	if (ctx->mm)
		mmdrop(ctx->mm);
	kfree(ctx);
	blamer_plant_release(ctx);
	return 0;
}

static __poll_t blamer_poll(struct file *file, poll_table *wait)
{
	struct blamer_ctx *ctx = file->private_data;

	/*
	 * Beyond max_user_watchers it watches nothing: not woken. A kernel
	 * thread (aio's IOCB_CMD_POLL completion work) is nobody's asker: it
	 * reports what the last asker's view counted, and changes nothing.
	 */
	if (!(current->flags & PF_KTHREAD))
		blamer_watch(ctx, false);
	poll_wait(file, &ctx->wq, wait);
	if (atomic64_read(&ctx->events) != atomic64_read(&ctx->seen))
		return EPOLLIN | EPOLLRDNORM;
	return 0;
}

static const struct file_operations blamer_fops = {
	.owner = THIS_MODULE,
	.open = blamer_open,
	.release = blamer_release,
	.poll = blamer_poll,
	.unlocked_ioctl = blamer_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/*
 * No .mode: devtmpfs creates the node root-only (0600) and the system's
 * udev rule decides who may use the device (the shipped one: root:blamer
 * 0660, see Documentation/admin-guide.rst). Per-slab access is perm.c's.
 */
static struct miscdevice blamer_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "blamer",
	.fops = &blamer_fops,
};

static int __init blamer_init(void)
{
	int err;

	err = blamer_slabfs_init();
	if (err)
		return err;
	err = blamer_owner_init();
	if (err)
		goto slabfs;
	err = misc_register(&blamer_misc);
	if (err)
		goto owner;
	return 0;

owner:
	blamer_owner_exit();
slabfs:
	blamer_slabfs_exit();
	return err;
}

/*
 * Open files and mappings pin the module, so only slabs without files
 * remain: live ones of processes that closed everything, and orphans.
 */
static void __exit blamer_exit(void)
{
	misc_deregister(&blamer_misc);
	blamer_owner_exit();
	blamer_slab_free_all();
	blamer_slabfs_exit();
}

module_init(blamer_init);
module_exit(blamer_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Kernel-owned shared-memory slabs with trusted owner facts");
