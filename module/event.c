// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: events for poll().
 *
 * A slab's creation, orphaning and removal (release or eviction) is an
 * event. An open /dev/blamer becomes a watcher at its first
 * BLAMER_IOC_LIST or poll(); from then on it counts, and is woken for,
 * only the events about slabs it may read. Its view is a snapshot of the
 * caller's credentials, pid namespace and privileges taken at its last
 * BLAMER_IOC_LIST (or first poll()), because events happen in other
 * processes' context; the snapshot can only see less than a live check
 * would, never more. So poll() tells nobody about slabs it cannot list,
 * and a user cannot wake other users' readers at will. A descriptor
 * that reaches another asker (passed, inherited, or its process changed
 * its credentials or ran another program) is seen anew at that asker's
 * first poll(), and what it counted for the one before is forgotten: a
 * root process that polled, then dropped its privileges, learns nothing
 * of the events only root could see. Threads of one process with
 * credentials alike (glibc's setresuid() gives each thread its own copy)
 * are one asker.
 *
 * Every event is checked against every watcher, under one lock, in the
 * creating process's ioctl or in the reaper that every death waits for.
 * So the watchers of one account (blamer_user_key()) are at most
 * max_user_watchers (CAP_SYS_RESOURCE may exceed it): 80,000 of one
 * user's had made another user's create and release take 14 ms, and the
 * reaper, and with it every LIST, as long. A descriptor beyond it lists
 * as any other, with an event count of 0, and poll() does not wake it;
 * each poll() or LIST asks again (a poll() that sleeps is not woken when
 * a watcher of the account closes: the next one is counted).
 *
 * Descriptors that never list or poll (writers) cost events nothing.
 */
#include <linux/capability.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/user_namespace.h>

#include "blamer.h"

/* Watching descriptors, under blamer_watch_lock. */
static LIST_HEAD(blamer_watchers);
static DEFINE_MUTEX(blamer_watch_lock);

/*
 * The calling task is in @id's process, program and pid namespace, and
 * the reader group (the parameter may change) is to it what it was:
 * all of a snapshot but its credentials.
 */
static bool blamer_same_place(const struct blamer_ident *id)
{
	return id->group == blamer_in_reader_group() &&
	       id->pidns == task_active_pid_ns(current) &&
	       id->tgid == task_tgid(current) && id->mm == current->mm;
}

/* Is @id the calling task as it was snapshot, to the pointer? */
static bool blamer_ident_is_current(const struct blamer_ident *id)
{
	return id->cred == current_cred() && blamer_same_place(id);
}

static bool blamer_same_groups(const struct group_info *a, const struct group_info *b)
{
	int i;

	if (a == b)
		return true;
	if (a->ngroups != b->ngroups)
		return false;
	for (i = 0; i < a->ngroups; i++)
		if (!gid_eq(a->gid[i], b->gid[i]))
			return false;
	return true;
}

/*
 * Would the caller see what @id saw: the same process, program and pid
 * namespace, and credentials alike in all blamer_may_read() judges a
 * snapshot by (ids, groups, capabilities, user namespace)?
 */
static bool blamer_same_view(const struct blamer_ident *id)
{
	const struct cred *a = id->cred, *b = current_cred();

	if (!a || !blamer_same_place(id))
		return false;
	return a == b ||
	       (uid_eq(a->uid, b->uid) && uid_eq(a->euid, b->euid) &&
		uid_eq(a->suid, b->suid) && uid_eq(a->fsuid, b->fsuid) &&
		gid_eq(a->gid, b->gid) && gid_eq(a->egid, b->egid) &&
		gid_eq(a->sgid, b->sgid) && gid_eq(a->fsgid, b->fsgid) &&
		blamer_same_groups(a->group_info, b->group_info) &&
		a->user_ns == b->user_ns &&
		cap_issubset(a->cap_effective, b->cap_effective) &&
		cap_issubset(b->cap_effective, a->cap_effective) &&
		cap_issubset(a->cap_permitted, b->cap_permitted) &&
		cap_issubset(b->cap_permitted, a->cap_permitted));
}

/*
 * Count a watcher against account @key: the account's reference, or NULL
 * out of memory or if it has max_user_watchers already and the caller
 * lacks CAP_SYS_RESOURCE (asked only then, so only then audited).
 */
static struct blamer_user *blamer_watcher_charge(kuid_t key)
{
	struct blamer_user *user;
	bool ok = false;

	mutex_lock(&blamer_lock);
	user = blamer_user_get_locked(key);
	if (user) {
		ok = user->watchers < READ_ONCE(blamer_max_user_watchers) ||
		     capable(CAP_SYS_RESOURCE);
		if (ok)
			user->watchers++;
	}
	mutex_unlock(&blamer_lock);
	if (user && !ok) {
		blamer_user_put(user);
		user = NULL;
	}
	return user;
}

static void blamer_watcher_uncharge(struct blamer_user *user)
{
	mutex_lock(&blamer_lock);
	user->watchers--;
	mutex_unlock(&blamer_lock);
	blamer_user_put(user);
}

/* Off the watcher list, forgetting its asker; under blamer_watch_lock. */
static void blamer_stop_watching(struct blamer_ctx *ctx,
				 struct blamer_ident *old,
				 struct blamer_user **drop)
{
	if (ctx->watching)
		list_del(&ctx->watch);
	ctx->watching = false;
	*drop = ctx->watch_user;
	ctx->watch_user = NULL;
	*old = ctx->ident;
	memset(&ctx->ident, 0, sizeof(ctx->ident));
	atomic64_set(&ctx->events, 0);
	atomic64_set(&ctx->seen, 0);
}

/**
 * blamer_watch - make @ctx a watcher with the caller's view
 * @ctx: an open /dev/blamer
 * @refresh: take a new snapshot even if the caller is the asker it has
 *
 * Return: 0, or -EDQUOT if the caller's account has max_user_watchers
 * watching already (or out of memory): @ctx then watches nothing.
 */
int blamer_watch(struct blamer_ctx *ctx, bool refresh)
{
	kuid_t key = blamer_user_key(current_cred());
	struct blamer_user *user = NULL, *drop = NULL;
	struct blamer_ident old = { };
	bool counted;
	int err = 0;

	/* aio's poll completion work: a kernel thread, nobody's asker */
	if (current->flags & PF_KTHREAD)
		return -EPERM;

	/*
	 * One call at a time per descriptor: another asker's refused call
	 * between this one's look and its change unlisted the descriptor
	 * and uncharged its account, and this one listed it again, counted
	 * nowhere (a reviewer's two uids held 201 watchers at a bound of 1).
	 */
	mutex_lock(&ctx->watch_mutex);
	mutex_lock(&blamer_watch_lock);
	if (ctx->watching && !refresh && blamer_ident_is_current(&ctx->ident)) {
		mutex_unlock(&blamer_watch_lock);
		goto out;
	}
	counted = ctx->watch_user && uid_eq(ctx->watch_user->uid, key);
	mutex_unlock(&blamer_watch_lock);
	if (!counted) {
		user = blamer_watcher_charge(key);
		if (!user)
			err = -EDQUOT;
	}

	mutex_lock(&blamer_watch_lock);
	if (err) {
		blamer_stop_watching(ctx, &old, &drop);
	} else {
		if (user) {
			drop = ctx->watch_user;
			ctx->watch_user = user;
		}
		/* another asker: forget what was counted for the last */
		if (!blamer_same_view(&ctx->ident)) {
			atomic64_set(&ctx->events, 0);
			atomic64_set(&ctx->seen, 0);
		}
		old = ctx->ident;
		blamer_ident_snapshot(&ctx->ident);
		if (!ctx->watching) {
			list_add_tail(&ctx->watch, &blamer_watchers);
			ctx->watching = true;
		}
	}
	mutex_unlock(&blamer_watch_lock);
	blamer_ident_release(&old);
	if (drop)
		blamer_watcher_uncharge(drop);
out:
	mutex_unlock(&ctx->watch_mutex);
	return err;
}

/* @ctx is being released: no other call runs on it. */
void blamer_unwatch(struct blamer_ctx *ctx)
{
	struct blamer_user *drop = NULL;
	struct blamer_ident old = { };

	mutex_lock(&blamer_watch_lock);
	blamer_stop_watching(ctx, &old, &drop);
	mutex_unlock(&blamer_watch_lock);
	blamer_ident_release(&old);
	if (drop)
		blamer_watcher_uncharge(drop);
}

/**
 * blamer_notify - something happened to @slab
 * @slab: created, orphaned or removed; the caller holds a reference
 */
void blamer_notify(const struct blamer_slab *slab)
{
	struct blamer_ctx *ctx;

	lockdep_assert_not_held(&blamer_lock);
	mutex_lock(&blamer_watch_lock);
	list_for_each_entry(ctx, &blamer_watchers, watch) {
		if (!blamer_may_read(&ctx->ident, slab, false))
			continue;
		atomic64_inc(&ctx->events);
		wake_up_interruptible_poll(&ctx->wq, EPOLLIN | EPOLLRDNORM);
	}
	mutex_unlock(&blamer_watch_lock);
}
