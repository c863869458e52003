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
 * and a user cannot wake other users' readers at will.
 *
 * Descriptors that never list or poll (writers) cost events nothing.
 */
#include <linux/poll.h>

#include "blamer.h"

/* Watching descriptors, under blamer_watch_lock. */
static LIST_HEAD(blamer_watchers);
static DEFINE_MUTEX(blamer_watch_lock);

/**
 * blamer_watch - make @ctx a watcher with the caller's view
 * @ctx: an open /dev/blamer
 * @refresh: take a new snapshot even if it already watches
 */
void blamer_watch(struct blamer_ctx *ctx, bool refresh)
{
	struct blamer_ident old = { };

	mutex_lock(&blamer_watch_lock);
	if (ctx->watching && !refresh) {
		mutex_unlock(&blamer_watch_lock);
		return;
	}
	old = ctx->ident;
	blamer_ident_snapshot(&ctx->ident);
	if (!ctx->watching) {
		list_add_tail(&ctx->watch, &blamer_watchers);
		ctx->watching = true;
	}
	mutex_unlock(&blamer_watch_lock);
	blamer_ident_release(&old);
}

/* @ctx is being released. */
void blamer_unwatch(struct blamer_ctx *ctx)
{
	mutex_lock(&blamer_watch_lock);
	if (ctx->watching)
		list_del(&ctx->watch);
	ctx->watching = false;
	mutex_unlock(&blamer_watch_lock);
	blamer_ident_release(&ctx->ident);
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
