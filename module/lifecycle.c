// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: a slab's life after its creation, in one place.
 *
 *   live      owned by the process that created it (slab.c)
 *   orphan    its owner died (owner.c saw it and calls
 *             blamer_slab_orphan_locked()): kept for postmortem reading
 *   evicted   taken out of the table to make room: by an orphaning above
 *             max_user_orphans (the oldest the account made in the same
 *             pid namespace by the same kind of creator, user.c), or of
 *             an elevated creator above half of max_user_bytes; or by a
 *             create above a byte limit (blamer_charge(): the account's
 *             own oldest orphans, not elevated, in what the creator's pid
 *             namespace sees, and only if they make room enough)
 *   released  by a reader or the owner (slab.c)
 *
 * Nothing evicts another account's orphans, a container (a pid
 * namespace of its own, the same uid, as a rootful container's root is)
 * never evicts its host's, and a user never evicts the postmortem of a
 * setuid program it ran (charged to it, closed to it): by its own
 * processes' deaths, nor by its creates; such orphans take at most half
 * of the user's byte limit per kind, so they never lock it out. user.c
 * counts and says no; owner.c sees deaths; the table's bookkeeping is
 * slab.c's. The one call back is blamer_charge() asking owner.c to
 * finish reaping (blamer_owner_settle()) before it evicts: a process that
 * just died may have orphans to give.
 * Every function here runs under blamer_lock or takes it, as the callers
 * did before; nothing new is locked.
 */
#include <linux/pid_namespace.h>
#include <linux/sched.h>

#include "blamer.h"

/* May a create of @ns evict @victim to make room? */
static bool blamer_evictable(const struct blamer_slab *victim,
			     struct pid_namespace *ns)
{
	return pid_nr_ns(victim->owner->pid, ns) && !victim->orphanage->elevated;
}

/**
 * blamer_evict_locked - evict @user's oldest orphans a create may take
 * @user: the account; blamer_lock is held
 * @ns: only orphans whose owner is visible in this pid namespace (made
 *	in it or below it: a container never evicts its host's), and not
 *	an elevated creator's (user.c: not the account's to evict)
 * @bytes: evict until at least this many bytes of orphans were evicted,
 *	if that many can be; else none (a create that fails anyway takes
 *	no postmortem with it)
 * @out: gets the evicted slabs (see blamer_slab_unlink())
 *
 * Return: the bytes evicted, 0 if they could not make room.
 */
static u64 blamer_evict_locked(struct blamer_user *user,
			       struct pid_namespace *ns, u64 bytes,
			       struct list_head *out)
{
	struct blamer_slab *victim, *tmp;
	u64 evicted = 0;

	lockdep_assert_held(&blamer_lock);
	list_for_each_entry(victim, &user->orphan_list, node)
		if (evicted < bytes && blamer_evictable(victim, ns))
			evicted += victim->size;
	if (evicted < bytes)
		return 0;
	evicted = 0;
	list_for_each_entry_safe(victim, tmp, &user->orphan_list, node) {
		if (evicted >= bytes)
			break;
		if (!blamer_evictable(victim, ns))
			continue;
		evicted += victim->size;
		blamer_slab_unlink(victim, out);
	}
	return evicted;
}

/**
 * blamer_slab_orphan_locked - @slab's owner died
 * @slab: a slab in the table of a dead owner; blamer_lock is held
 * @evicted: gets orphans evicted above the account's limit
 *
 * Each pid namespace keeps up to max_user_orphans of the account's
 * orphans made in it, evicting its own oldest: the orphans of a
 * container (another pid namespace, the same uid) never push out the
 * host's, nor the host's a container's; and as many again of each kind
 * of elevated creator (user.c), which only each other push out, and only
 * up to half of max_user_bytes, beyond which their oldest go (the newest
 * stays), so that orphans the user cannot evict never lock it out. Only
 * the slab's orphanage is looked at, however many orphans the account
 * has in others.
 */
void blamer_slab_orphan_locked(struct blamer_slab *slab,
			       struct list_head *evicted)
{
	struct blamer_orphanage *o = blamer_slab_orphan_mark_locked(slab);
	u64 keep = READ_ONCE(blamer_max_user_orphans);
	unsigned long n;

	lockdep_assert_held(&blamer_lock);
	/*
	 * Counted first, and never past the list: the last orphan to go
	 * frees @o (blamer_user_unorphan_locked()).
	 */
	for (n = o->count > keep ? o->count - keep : 0; n; n--) {
		bool last = list_is_singular(&o->list);

		blamer_slab_unlink(list_first_entry(&o->list, struct blamer_slab,
						    ns_node), evicted);
		if (last)
			return;		/* @o went with it */
	}
	if (!o->elevated)
		return;
	while (o->bytes > READ_ONCE(blamer_max_user_bytes) / 2 &&
	       !list_is_singular(&o->list))
		blamer_slab_unlink(list_first_entry(&o->list, struct blamer_slab,
						    ns_node), evicted);
}

/**
 * blamer_charge - charge @size bytes to the caller's account, making room
 * @size: bytes, at most max_slab_bytes
 * @userp: out: the account, with a reference that goes with the charge
 *
 * Above a limit, finishes reaping processes that just died (their slabs
 * become orphans), then evicts the account's own oldest orphans and
 * retries; their pages uncharge when nothing maps them any more.
 *
 * Return: 0, -EDQUOT above max_user_bytes, -ENOSPC above
 * max_total_bytes, -ENOMEM.
 */
int blamer_charge(u64 size, struct blamer_user **userp)
{
	kuid_t uid = blamer_user_key(current_cred());
	struct pid_namespace *ns = task_active_pid_ns(current);
	bool privileged = false, asked = false, settled = false;
	struct blamer_user *user;
	LIST_HEAD(evicted);

	for (;;) {
		u64 over = 0;
		int err;

		mutex_lock(&blamer_lock);
		user = blamer_user_get_locked(uid);
		if (!user) {
			mutex_unlock(&blamer_lock);
			return -ENOMEM;
		}
		err = blamer_user_charge_locked(user, size, &asked, &privileged, &over);
		if (!err) {
			mutex_unlock(&blamer_lock);
			*userp = user;
			return 0;
		}
		if (!settled) {
			/*
			 * Processes that just died may have orphans to give,
			 * and pages other holders kept may be free by now.
			 */
			mutex_unlock(&blamer_lock);
			blamer_user_put(user);
			blamer_owner_settle();
			blamer_linger_scan();
			settled = true;
			continue;
		}
		if (!blamer_evict_locked(user, ns, over, &evicted)) {
			mutex_unlock(&blamer_lock);
			blamer_user_put(user);
			return err;
		}
		mutex_unlock(&blamer_lock);
		blamer_user_put(user);
		blamer_slab_put_list(&evicted, true);
	}
}
