// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: the slab table and the lifetime of a slab.
 *
 * A slab is created live, owned by the open file that asked for it. When
 * that file is released its slabs become orphans, kept for postmortem
 * reading until a permitted reader releases them or the retention limit
 * (max_orphans) evicts the oldest. The pages live in a reference-counted
 * struct blamer_buf: freeing a slab only drops the slab's reference, so a
 * mapping keeps reading the last contents, never freed memory.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/pid_namespace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>

#include "blamer.h"

/* Protects the slab table and everything below, see blamer.h. */
DEFINE_MUTEX(blamer_lock);
/* The slab table: ID -> struct blamer_slab, IDs from 1. */
DEFINE_XARRAY_ALLOC1(blamer_slabs);
/* poll() waiters, woken on every event. */
DECLARE_WAIT_QUEUE_HEAD(blamer_wq);

/* All below are protected by blamer_lock. */
static LIST_HEAD(blamer_orphans);	/* oldest first */
static LIST_HEAD(blamer_users);
static u32 blamer_next_id;
static u64 blamer_nr_slabs;
static u64 blamer_nr_orphans;
static u64 blamer_bytes;		/* live, orphaned and reserved */

/* Bumped on every create, orphaning and removal; read locklessly by poll. */
static atomic64_t blamer_gen = ATOMIC64_INIT(0);

u64 blamer_generation(void)
{
	return atomic64_read(&blamer_gen);
}

static void blamer_event(void)
{
	atomic64_inc(&blamer_gen);
	wake_up_interruptible_all(&blamer_wq);
}

void blamer_status(struct blamer_status *st)
{
	mutex_lock(&blamer_lock);
	st->slabs = blamer_nr_slabs;
	st->orphans = blamer_nr_orphans;
	st->bytes = blamer_bytes;
	mutex_unlock(&blamer_lock);
	st->abi_version = BLAMER_ABI_VERSION;
	st->max_slab_bytes = READ_ONCE(blamer_max_slab_bytes);
	st->max_owner_bytes = READ_ONCE(blamer_max_owner_bytes);
	st->max_total_bytes = READ_ONCE(blamer_max_total_bytes);
	st->max_orphans = READ_ONCE(blamer_max_orphans);
	st->generation = blamer_generation();
}

static void blamer_buf_free(struct kref *ref)
{
	struct blamer_buf *buf = container_of(ref, struct blamer_buf, ref);
	unsigned long i;

	for (i = 0; i < buf->nr_pages; i++)
		if (buf->pages[i])
			__free_page(buf->pages[i]);
	kvfree(buf);
}

void blamer_buf_put(struct blamer_buf *buf)
{
	kref_put(&buf->ref, blamer_buf_free);
}

/*
 * Order-0 pages, zeroed (no stale data reaches userspace), charged to the
 * caller's memory cgroup, failing quietly rather than invoking the OOM
 * killer or warning: the caller sees -ENOMEM.
 */
static struct blamer_buf *blamer_buf_alloc(unsigned long nr_pages)
{
	const gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_NOWARN |
			  __GFP_RETRY_MAYFAIL;
	struct blamer_buf *buf;
	unsigned long i;

	buf = kvzalloc(struct_size(buf, pages, nr_pages), gfp);
	if (!buf)
		return NULL;
	kref_init(&buf->ref);
	buf->nr_pages = nr_pages;
	for (i = 0; i < nr_pages; i++) {
		buf->pages[i] = alloc_page(gfp | __GFP_ZERO);
		if (!buf->pages[i]) {
			blamer_buf_put(buf);
			return NULL;
		}
	}
	return buf;
}

static struct blamer_user *blamer_user_get(kuid_t uid)
{
	struct blamer_user *user;

	lockdep_assert_held(&blamer_lock);
	list_for_each_entry(user, &blamer_users, node)
		if (uid_eq(user->uid, uid))
			return user;
	user = kzalloc(sizeof(*user), GFP_KERNEL_ACCOUNT);
	if (!user)
		return NULL;
	user->uid = uid;
	list_add(&user->node, &blamer_users);
	return user;
}

/* Drop one slab's (or one reservation's) charge from @user. */
static void blamer_user_uncharge(struct blamer_user *user, u64 size)
{
	lockdep_assert_held(&blamer_lock);
	user->bytes -= size;
	if (--user->slabs == 0) {
		list_del(&user->node);
		kfree(user);
	}
}

/*
 * Reserve @size bytes for the calling user before allocating, so that an
 * over-quota request fails without touching the page allocator.
 */
static int blamer_reserve(u64 size, struct blamer_user **out)
{
	struct blamer_user *user;
	int err = 0;

	mutex_lock(&blamer_lock);
	user = blamer_user_get(current_euid());
	if (!user) {
		err = -ENOMEM;
		goto out;
	}
	if (user->bytes + size > READ_ONCE(blamer_max_owner_bytes))
		err = -EDQUOT;
	else if (blamer_bytes + size > READ_ONCE(blamer_max_total_bytes))
		err = -ENOSPC;
	if (err) {
		if (!user->slabs) {
			list_del(&user->node);
			kfree(user);
		}
		goto out;
	}
	user->bytes += size;
	user->slabs++;
	blamer_bytes += size;
	*out = user;
out:
	mutex_unlock(&blamer_lock);
	return err;
}

static void blamer_unreserve(struct blamer_user *user, u64 size)
{
	lockdep_assert_held(&blamer_lock);
	blamer_user_uncharge(user, size);
	blamer_bytes -= size;
}

static void blamer_slab_free(struct blamer_slab *slab)
{
	put_pid(slab->pid);
	put_cred(slab->cred);
	blamer_buf_put(slab->buf);
	kfree(slab);
}

/**
 * blamer_slab_create - create a live slab owned by @ctx
 * @ctx: the open file that will own it
 * @length: bytes asked for, rounded up to whole pages
 * @idp: out: the new slab's ID
 * @sizep: out: its real size
 *
 * Return: 0, -EINVAL for a zero length, -EFBIG above max_slab_bytes,
 * -EDQUOT above the user's max_owner_bytes, -ENOSPC above max_total_bytes,
 * -ENOMEM when pages or an ID cannot be had.
 */
int blamer_slab_create(struct blamer_ctx *ctx, u64 length, u32 *idp,
		       u64 *sizep)
{
	struct blamer_user *user;
	struct blamer_slab *slab;
	struct task_struct *leader = current->group_leader;
	u64 size;
	u32 id;
	int err;

	if (!length)
		return -EINVAL;
	/* max_slab_bytes is page aligned, so rounding up cannot exceed it. */
	if (length > READ_ONCE(blamer_max_slab_bytes))
		return -EFBIG;
	size = PAGE_ALIGN(length);

	err = blamer_reserve(size, &user);
	if (err)
		return err;

	err = -ENOMEM;
	slab = kzalloc(sizeof(*slab), GFP_KERNEL_ACCOUNT);
	if (!slab)
		goto unreserve;
	slab->buf = blamer_buf_alloc(size >> PAGE_SHIFT);
	if (!slab->buf)
		goto free_slab;
	slab->size = size;
	slab->serial = ctx->serial;
	slab->user = user;
	slab->pid = get_task_pid(current, PIDTYPE_TGID);
	slab->cred = get_current_cred();
	slab->start_time_ns = leader->start_boottime;
	slab->create_time_ns = ktime_get_boottime_ns();
	get_task_comm(slab->comm, leader);

	mutex_lock(&blamer_lock);
	err = xa_alloc_cyclic(&blamer_slabs, &id, slab,
			      XA_LIMIT(1, BLAMER_ID_MAX), &blamer_next_id,
			      GFP_KERNEL_ACCOUNT);
	if (err < 0) {
		if (err == -EBUSY)
			err = -ENOSPC;
		blamer_unreserve(user, size);
		mutex_unlock(&blamer_lock);
		slab->user = NULL;
		blamer_slab_free(slab);
		return err;
	}
	slab->id = id;
	slab->ctx = ctx;
	list_add_tail(&slab->node, &ctx->slabs);
	blamer_nr_slabs++;
	mutex_unlock(&blamer_lock);
	blamer_event();
	*idp = id;
	*sizep = size;
	return 0;

free_slab:
	kfree(slab);
unreserve:
	mutex_lock(&blamer_lock);
	blamer_unreserve(user, size);
	mutex_unlock(&blamer_lock);
	return err;
}

/* Remove a slab from the table and free it; the caller holds blamer_lock. */
static void blamer_slab_remove(struct blamer_slab *slab)
{
	lockdep_assert_held(&blamer_lock);
	xa_erase(&blamer_slabs, slab->id);
	list_del(&slab->node);
	blamer_nr_slabs--;
	blamer_bytes -= slab->size;
	if (slab->ctx)
		blamer_user_uncharge(slab->user, slab->size);
	else
		blamer_nr_orphans--;
	blamer_slab_free(slab);
}

/**
 * blamer_slab_undo - destroy a slab just created by @ctx
 * @ctx: its owner
 * @id: the slab, looked up again: it may only be gone if @ctx was released
 *
 * Used when the new ID cannot be reported to userspace.
 */
void blamer_slab_undo(struct blamer_ctx *ctx, u32 id)
{
	struct blamer_slab *slab;

	mutex_lock(&blamer_lock);
	slab = xa_load(&blamer_slabs, id);
	if (slab && slab->ctx == ctx)
		blamer_slab_remove(slab);
	mutex_unlock(&blamer_lock);
	blamer_event();
}

/*
 * How the calling task ends, as waitpid() would report it: a group exit
 * (exit_group(), a fatal signal, a core dump) records the status in
 * signal->group_exit_code; otherwise the last thread's own exit_code is it.
 * Only meaningful while the caller has PF_EXITING set.
 */
static int blamer_exit_status(void)
{
	struct signal_struct *sig = current->signal;

	if (READ_ONCE(sig->flags) & SIGNAL_GROUP_EXIT)
		return READ_ONCE(sig->group_exit_code);
	return READ_ONCE(current->exit_code);
}

/* Record the exit status on @ctx's slabs owned by the exiting caller. */
static void blamer_record_exit(struct blamer_ctx *ctx)
{
	struct pid *tgid = task_tgid(current);
	struct blamer_slab *slab;
	int status = blamer_exit_status();

	lockdep_assert_held(&blamer_lock);
	list_for_each_entry(slab, &ctx->slabs, node) {
		if (slab->pid != tgid || slab->exited)
			continue;
		slab->exit_status = status;
		slab->exited = true;
	}
}

/**
 * blamer_ctx_exiting - the task closing @ctx is exiting: record how
 * @ctx: the open file being flushed
 *
 * Called from ->flush when PF_EXITING is set: exit_files() closes the
 * descriptors of an exiting process after its exit code is known. There is
 * no exit notifier for modules; this is the hook that remains.
 */
void blamer_ctx_exiting(struct blamer_ctx *ctx)
{
	mutex_lock(&blamer_lock);
	blamer_record_exit(ctx);
	mutex_unlock(&blamer_lock);
}

/* Evict the oldest orphans above the retention limit. */
static bool blamer_evict(void)
{
	struct blamer_slab *slab;
	bool evicted = false;

	lockdep_assert_held(&blamer_lock);
	while (blamer_nr_orphans > READ_ONCE(blamer_max_orphans)) {
		slab = list_first_entry(&blamer_orphans, struct blamer_slab,
					node);
		blamer_slab_remove(slab);
		evicted = true;
	}
	return evicted;
}

/**
 * blamer_ctx_orphan - the owning file is released: orphan its slabs
 * @ctx: the file being released
 *
 * The final fput of an exiting owner runs from its task work, still with
 * PF_EXITING set: record the exit status then too (the descriptor may have
 * been closed earlier while a mapping kept the file open).
 */
void blamer_ctx_orphan(struct blamer_ctx *ctx)
{
	struct blamer_slab *slab, *tmp;
	bool changed = false;
	u64 now = ktime_get_boottime_ns();

	mutex_lock(&blamer_lock);
	if (current->flags & PF_EXITING)
		blamer_record_exit(ctx);
	list_for_each_entry_safe(slab, tmp, &ctx->slabs, node) {
		blamer_user_uncharge(slab->user, slab->size);
		slab->user = NULL;
		slab->ctx = NULL;
		slab->orphan_time_ns = now;
		list_move_tail(&slab->node, &blamer_orphans);
		blamer_nr_orphans++;
		changed = true;
	}
	blamer_evict();
	mutex_unlock(&blamer_lock);
	if (changed)
		blamer_event();
}

/**
 * blamer_slab_release - free an orphan on behalf of a permitted reader
 * @id: the slab
 *
 * Return: 0, -ENOENT if there is no such slab, -EACCES if the caller may
 * not read it, -EBUSY if it is still live.
 */
int blamer_slab_release(u64 id)
{
	struct blamer_slab *slab = NULL;
	int err = 0;

	mutex_lock(&blamer_lock);
	if (id && id <= BLAMER_ID_MAX)
		slab = xa_load(&blamer_slabs, id);
	if (!slab)
		err = -ENOENT;
	else if (!blamer_may_read(slab))
		err = -EACCES;
	else if (slab->ctx)
		err = -EBUSY;
	else
		blamer_slab_remove(slab);
	mutex_unlock(&blamer_lock);
	if (!err)
		blamer_event();
	return err;
}

/**
 * blamer_slab_fill_info - describe @slab to the caller
 * @slab: the slab; blamer_lock is held
 * @ctx: the caller's open file, to set BLAMER_SLAB_MINE
 * @info: zeroed by the caller
 *
 * Pids and uids are translated into the caller's namespaces.
 */
void blamer_slab_fill_info(const struct blamer_slab *slab,
			   const struct blamer_ctx *ctx,
			   struct blamer_slab_info *info)
{
	int status = slab->exit_status;

	lockdep_assert_held(&blamer_lock);
	info->id = slab->id;
	info->size = slab->size;
	info->mmap_offset = (u64)slab->id << PAGE_SHIFT;
	info->owner_serial = slab->serial;
	info->start_time_ns = slab->start_time_ns;
	info->create_time_ns = slab->create_time_ns;
	info->orphan_time_ns = slab->orphan_time_ns;
	info->pid = pid_nr_ns(slab->pid, task_active_pid_ns(current));
	info->uid = from_kuid_munged(current_user_ns(), slab->cred->euid);
	info->state = slab->ctx ? BLAMER_SLAB_LIVE : BLAMER_SLAB_ORPHAN;
	if (slab->ctx && slab->ctx == ctx)
		info->flags |= BLAMER_SLAB_MINE;
	if (!info->pid)
		info->flags |= BLAMER_SLAB_PID_GONE;
	if (slab->exited) {
		info->flags |= BLAMER_SLAB_EXITED;
		info->exit_signal = status & 0x7f;
		if (info->exit_signal)
			info->exit_code = 0;
		else
			info->exit_code = (status >> 8) & 0xff;
		if (status & 0x80)
			info->flags |= BLAMER_SLAB_COREDUMP;
	}
	memcpy(info->comm, slab->comm, sizeof(info->comm));
	info->comm[sizeof(info->comm) - 1] = '\0';
}

/* Module exit: no file is open any more, so every slab is an orphan. */
void blamer_free_all(void)
{
	struct blamer_slab *slab;
	unsigned long id;

	mutex_lock(&blamer_lock);
	xa_for_each(&blamer_slabs, id, slab)
		blamer_slab_remove(slab);
	mutex_unlock(&blamer_lock);
	xa_destroy(&blamer_slabs);
}
