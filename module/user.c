// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: accounts and quotas.
 *
 * Every slab is charged to an account: the creator's real uid (the uid
 * the kernel charges processes and pipe buffers to, so a setuid program
 * charges whoever ran it), or, for a creator inside a user namespace
 * other than the initial one, the owner of the outermost such namespace,
 * so subordinate uids cannot multiply a user's quota.
 *
 * An account is charged for a slab's bytes from creation until its pages
 * are freed: released or evicted slabs still count while any file or
 * mapping holds them, and so does a page that something else still holds
 * (a pipe that vmsplice() filled, a get_user_pages() pin) once the slab's
 * last file is gone (slabfs.c). It also counts its slabs and its
 * orphans. Limits:
 *  - max_user_bytes per account and max_total_bytes for all accounts,
 *    both exceeded only with CAP_SYS_RESOURCE (initial user namespace),
 *    so no user can lock root out;
 *  - max_user_orphans per account and pid namespace.
 * A create above a byte limit first evicts the account's own oldest
 * orphans among those its pid namespace sees (its own and those of the
 * namespaces below it); an orphaning above max_user_orphans evicts the
 * oldest the account made in the same pid namespace (slab.c). Nothing
 * evicts another account's orphans, and a container (a pid namespace of
 * its own, the same uid, as a rootful container's root is) never evicts
 * its host's.
 */
#include <linux/capability.h>
#include <linux/hashtable.h>
#include <linux/pid_namespace.h>
#include <linux/slab.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>

#include "blamer.h"

/* Accounts by uid, under blamer_lock. */
static DEFINE_HASHTABLE(blamer_users, 6);
/* Bytes charged to all accounts. */
static atomic64_t blamer_bytes = ATOMIC64_INIT(0);

u64 blamer_total_bytes(void)
{
	return atomic64_read(&blamer_bytes);
}

/**
 * blamer_user_key - the account of a creator with credentials @cred
 * @cred: the creator's credentials
 *
 * Return: a uid of the initial user namespace.
 */
kuid_t blamer_user_key(const struct cred *cred)
{
	const struct user_namespace *ns = cred->user_ns;

	if (ns == &init_user_ns)
		return cred->uid;
	while (ns->parent != &init_user_ns)
		ns = ns->parent;
	return ns->owner;
}

struct blamer_user *blamer_user_find_locked(kuid_t uid)
{
	struct blamer_user *user;

	lockdep_assert_held(&blamer_lock);
	hash_for_each_possible(blamer_users, user, node, __kuid_val(uid))
		if (uid_eq(user->uid, uid))
			return user;
	return NULL;
}

/* The account of @uid with a reference, created if needed; or NULL. */
static struct blamer_user *blamer_user_get_locked(kuid_t uid)
{
	struct blamer_user *user = blamer_user_find_locked(uid);

	if (user) {
		refcount_inc(&user->ref);
		return user;
	}
	user = kzalloc(sizeof(*user), BLAMER_GFP);
	if (!user)
		return NULL;
	refcount_set(&user->ref, 1);
	user->uid = uid;
	atomic64_set(&user->bytes, 0);
	INIT_LIST_HEAD(&user->orphan_list);
	hash_add(blamer_users, &user->node, __kuid_val(uid));
	return user;
}

void blamer_user_get(struct blamer_user *user)
{
	refcount_inc(&user->ref);
}

/* The last reference goes with the last slab and the last page buffer. */
void blamer_user_put(struct blamer_user *user)
{
	lockdep_assert_not_held(&blamer_lock);
	if (refcount_dec_and_mutex_lock(&user->ref, &blamer_lock)) {
		hash_del(&user->node);
		mutex_unlock(&blamer_lock);
		kfree(user);
	}
}

/* How far @used + @size is above @limit, or 0. */
static u64 blamer_excess(u64 used, u64 size, u64 limit)
{
	return used + size > limit ? used + size - limit : 0;
}

/**
 * blamer_user_charge - charge @size bytes to the caller's account
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
int blamer_user_charge(u64 size, struct blamer_user **userp)
{
	kuid_t uid = blamer_user_key(current_cred());
	struct pid_namespace *ns = task_active_pid_ns(current);
	bool privileged = false, asked = false, settled = false;
	struct blamer_user *user;
	LIST_HEAD(evicted);

	for (;;) {
		u64 over_user, over_total;
		int err;

		mutex_lock(&blamer_lock);
		user = blamer_user_get_locked(uid);
		if (!user) {
			mutex_unlock(&blamer_lock);
			return -ENOMEM;
		}
		over_user = blamer_excess(atomic64_read(&user->bytes), size,
					  READ_ONCE(blamer_max_user_bytes));
		over_total = blamer_excess(atomic64_read(&blamer_bytes), size,
					   READ_ONCE(blamer_max_total_bytes));
		if ((over_user || over_total) && !asked) {
			privileged = capable(CAP_SYS_RESOURCE);
			asked = true;
		}
		if (privileged || (!over_user && !over_total)) {
			atomic64_add(size, &user->bytes);
			atomic64_add(size, &blamer_bytes);
			mutex_unlock(&blamer_lock);
			*userp = user;
			return 0;
		}
		err = over_user ? -EDQUOT : -ENOSPC;
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
		if (!blamer_evict_locked(user, ns, max(over_user, over_total),
					 &evicted)) {
			mutex_unlock(&blamer_lock);
			blamer_user_put(user);
			return err;
		}
		mutex_unlock(&blamer_lock);
		blamer_user_put(user);
		blamer_slab_put_list(&evicted, true);
	}
}

/* @size bytes of pages charged with blamer_user_charge() were freed. */
void blamer_user_uncharge_bytes(struct blamer_user *user, u64 size)
{
	atomic64_sub(size, &user->bytes);
	atomic64_sub(size, &blamer_bytes);
}

/* All the pages charged with blamer_user_charge() were freed. */
void blamer_user_uncharge(struct blamer_user *user, u64 size)
{
	blamer_user_uncharge_bytes(user, size);
	blamer_user_put(user);
}
