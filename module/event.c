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
 * of the events only root could see.
 *
 * Every event is checked against every watcher, under one lock, in the
 * creating process's ioctl or in the reaper that every death waits for.
 * So the watchers of one account (blamer_user_key(): the real uid, or
 * the owner of the outermost user namespace) are at most
 * max_user_watchers (CAP_SYS_RESOURCE may exceed it): 80,000 of one
 * user's had made another user's create and release take 14 ms, and the
 * reaper, and with it every LIST, as long. A descriptor beyond it lists
 * as any other, with an event count of 0, and poll() never wakes it.
 *
 * Descriptors that never list or poll (writers) cost events nothing.
 */
#include <linux/capability.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>

#include "blamer.h"

/* Watching descriptors, under blamer_watch_lock. */
static LIST_HEAD(blamer_watchers);
static DEFINE_MUTEX(blamer_watch_lock);

/* Is @id the calling task as it was snapshot: the same asker? */
static bool blamer_ident_is_current(const struct blamer_ident *id)
{
	return id->cred == current_cred() &&
	       id->pidns == task_active_pid_ns(current) &&
	       id->tgid == task_tgid(current) && id->mm == current->mm;
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
	bool same, counted;
	int err = 0;

	mutex_lock(&blamer_watch_lock);
	same = ctx->watching && blamer_ident_is_current(&ctx->ident);
	counted = ctx->watch_user && uid_eq(ctx->watch_user->uid, key);
	mutex_unlock(&blamer_watch_lock);
	if (same && !refresh)
		return 0;
	if (!counted)
		user = blamer_watcher_charge(key);

	mutex_lock(&blamer_watch_lock);
	if (!counted && !user) {
		blamer_stop_watching(ctx, &old, &drop);
		err = -EDQUOT;
	} else {
		if (user) {
			/* another account's, or a racing call's: one stays */
			drop = ctx->watch_user;
			ctx->watch_user = user;
		}
		/* another asker: forget what was counted for the last */
		if (!blamer_ident_is_current(&ctx->ident)) {
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
	return err;
}

/* @ctx is being released. */
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
