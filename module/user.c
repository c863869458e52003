// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: accounts and quotas.
 *
 * Every slab is charged to an account (blamer_user_key()): the creator's
 * real uid (the uid the kernel charges processes and pipe buffers to, so
 * a setuid program charges whoever ran it), or, for a creator inside a
 * user namespace other than the initial one, the owner of the outermost
 * such namespace, so subordinate uids cannot multiply a user's quota;
 * but a namespace root made, as container managers do, counts as the uid
 * its root maps to.
 *
 * An account is charged for a slab's bytes from creation until its pages
 * are freed: released or evicted slabs still count while any file or
 * mapping holds them, and so does a page that something else still holds
 * (a pipe that vmsplice() filled, a get_user_pages() pin) once the slab's
 * last file is gone (slabfs.c). It also counts its slabs and its
 * orphans. Limits: max_user_bytes per account and max_total_bytes for
 * all accounts, both exceeded only with CAP_SYS_RESOURCE (initial user
 * namespace), so no user can lock root out; max_user_orphans per account,
 * pid namespace and kind of creator (blamer_orphan_kind()). This file
 * only counts and says no: what a create over a limit evicts, and which
 * orphans go, is lifecycle.c's.
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
 * blamer_user_key - the account of a process with credentials @cred
 * @cred: its credentials
 *
 * Its user's: the real uid, or in a user namespace the owner of the
 * outermost one (subordinate uids of a user's own namespaces multiply
 * nothing), except in a namespace root made, as container managers do,
 * whose owner is root for every container: there, the uid its root maps
 * to, so that one container cannot use up the bytes, orphans and
 * watchers of all the others and of root. A namespace root made whose
 * root is unmapped, or is root (systemd's PrivateUsers=), is no
 * container's and decides nothing: the chain is walked outwards, and the
 * outermost namespace that decides wins, else the real uid. (Looking at
 * the outermost alone made a user's own namespace inside a root-to-root
 * one count each of her subordinate uids apart.)
 *
 * Return: a uid of the initial user namespace.
 */
kuid_t blamer_user_key(const struct cred *cred)
{
	struct user_namespace *ns;
	kuid_t key = cred->uid, root;

	for (ns = cred->user_ns; ns != &init_user_ns; ns = ns->parent) {
		if (!uid_eq(ns->owner, GLOBAL_ROOT_UID)) {
			key = ns->owner;
			continue;
		}
		root = make_kuid(ns, 0);
		if (uid_valid(root) && !uid_eq(root, GLOBAL_ROOT_UID))
			key = root;
	}
	return key;
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
struct blamer_user *blamer_user_get_locked(kuid_t uid)
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
	user->orphanages = RB_ROOT;
	hash_add(blamer_users, &user->node, __kuid_val(uid));
	return user;
}

/*
 * The kind of creator @c an orphan had, into @o. Elevated: a creator of
 * the initial user namespace whose ids were not all its real uid's and
 * gid's (a setuid or setgid program), or that was permitted capabilities
 * (a service given some, a program with file capabilities; not counted
 * for uid 0, whose processes have them all). The account (the real uid)
 * did not make what such a creator held and cannot read it, so it may
 * not evict it either: elevated orphans evict only those of the same
 * effective ids and capabilities or not. Everything else is the
 * account's own, a process that made itself non-dumpable included (it
 * chose so itself: a kind any process could take would let it push out
 * the orphans of that kind), and one in a user namespace below (owned by
 * the account).
 */
static void blamer_orphan_kind(const struct cred *c, struct blamer_orphanage *o)
{
	bool ids = uid_eq(c->euid, c->uid) && uid_eq(c->suid, c->uid) &&
		   uid_eq(c->fsuid, c->uid) && gid_eq(c->egid, c->gid) &&
		   gid_eq(c->sgid, c->gid) && gid_eq(c->fsgid, c->gid);
	bool caps = !uid_eq(c->uid, GLOBAL_ROOT_UID) &&
		    !cap_isclear(c->cap_permitted);

	o->elevated = c->user_ns == &init_user_ns && (!ids || caps);
	o->caps = o->elevated && caps;
	o->euid = o->elevated ? c->euid : GLOBAL_ROOT_UID;
	o->egid = o->elevated ? c->egid : GLOBAL_ROOT_GID;
}

static int blamer_cmp_ulong(unsigned long x, unsigned long y)
{
	return x < y ? -1 : x > y;
}

/* Orphanages by namespace and kind: the order only has to be total. */
static int blamer_orphanage_cmp(struct rb_node *a, const struct rb_node *b)
{
	const struct blamer_orphanage *p = rb_entry(a, struct blamer_orphanage, node);
	const struct blamer_orphanage *q = rb_entry(b, struct blamer_orphanage, node);

	if (p->ns != q->ns)
		return blamer_cmp_ulong((uintptr_t)p->ns, (uintptr_t)q->ns);
	if (p->elevated != q->elevated)
		return blamer_cmp_ulong(p->elevated, q->elevated);
	if (!uid_eq(p->euid, q->euid))
		return blamer_cmp_ulong(__kuid_val(p->euid), __kuid_val(q->euid));
	if (!gid_eq(p->egid, q->egid))
		return blamer_cmp_ulong(__kgid_val(p->egid), __kgid_val(q->egid));
	return blamer_cmp_ulong(p->caps, q->caps);
}

#ifdef BLAMER_DEBUG
/*
 * Debug kernels only (module/Kbuild): every orphan of @user is on both of
 * its lists exactly once, each orphanage's count is its list's length,
 * and the account's count is theirs. Walks at most one entry more than
 * the account counts, so a corrupted list cannot hang it. O(orphans) per
 * orphaning and release, which is why production builds leave it out.
 */
static void blamer_user_check_locked(struct blamer_user *user)
{
	unsigned long n = 0, sum = 0, bound = user->orphans + 1;
	struct blamer_orphanage *o, *tmp;
	struct blamer_slab *slab;

	lockdep_assert_held(&blamer_lock);
	list_for_each_entry(slab, &user->orphan_list, node) {
		if (WARN_ONCE(++n > bound || !slab->orphaned || slab->removed ||
			      slab->user != user || !slab->orphanage ||
			      list_empty(&slab->ns_node),
			      "blamer: orphan %u of uid %u out of place (%lu of %lu)\n",
			      slab->id, __kuid_val(user->uid), n, user->orphans))
			return;
	}
	WARN_ONCE(n != user->orphans, "blamer: uid %u lists %lu orphans, counts %lu\n",
		  __kuid_val(user->uid), n, user->orphans);
	rbtree_postorder_for_each_entry_safe(o, tmp, &user->orphanages, node) {
		u64 bytes = 0;

		n = 0;
		list_for_each_entry(slab, &o->list, ns_node) {
			if (WARN_ONCE(++n > bound || slab->orphanage != o,
				      "blamer: orphan %u in the wrong orphanage\n",
				      slab->id))
				return;
			bytes += slab->size;
		}
		WARN_ONCE(!n || n != o->count || bytes != o->bytes,
			  "blamer: an orphanage of uid %u lists %lu (%llu bytes), counts %lu (%llu)\n",
			  __kuid_val(user->uid), n, bytes, o->count, o->bytes);
		sum += n;
	}
	WARN_ONCE(sum != user->orphans, "blamer: uid %u has %lu orphans by namespace, %lu in all\n",
		  __kuid_val(user->uid), sum, user->orphans);
}
#else
static void blamer_user_check_locked(struct blamer_user *user)
{
}
#endif

/**
 * blamer_user_orphan_locked - count @slab among its account's orphans
 * @slab: a slab in the table whose owner died; blamer_lock is held
 *
 * Return: the orphanage it joined: the account's orphans made in the
 * same pid namespace by the same kind of creator, itself the newest.
 */
struct blamer_orphanage *blamer_user_orphan_locked(struct blamer_slab *slab)
{
	struct blamer_orphanage *o = slab->spare;
	struct blamer_user *user = slab->user;
	struct rb_node *old;

	lockdep_assert_held(&blamer_lock);
	o->ns = ns_of_pid(slab->owner->pid);
	blamer_orphan_kind(slab->cred, o);
	old = rb_find_add(&o->node, &user->orphanages, blamer_orphanage_cmp);
	if (old) {
		o = rb_entry(old, struct blamer_orphanage, node);
	} else {
		INIT_LIST_HEAD(&o->list);
		o->count = 0;
		o->bytes = 0;
		slab->spare = NULL;
	}
	list_add_tail(&slab->ns_node, &o->list);
	o->count++;
	o->bytes += slab->size;
	slab->orphanage = o;
	list_add_tail(&slab->node, &user->orphan_list);
	user->orphans++;
	blamer_user_check_locked(user);
	return o;
}

/**
 * blamer_user_unorphan_locked - @slab leaves its account's orphans
 * @slab: an orphan leaving the table; blamer_lock is held
 *
 * Its orphanage goes with its last orphan: when no slab is on its list
 * any more, which is what decides, not the count (the eviction limit's
 * figure): whatever the count says, no slab on the list can reach a
 * freed orphanage. A count that disagrees with the list is a bug, and
 * warns.
 */
void blamer_user_unorphan_locked(struct blamer_slab *slab)
{
	struct blamer_orphanage *o = slab->orphanage;
	struct blamer_user *user = slab->user;

	lockdep_assert_held(&blamer_lock);
	list_del_init(&slab->node);
	user->orphans--;
	slab->orphanage = NULL;
	if (WARN_ON_ONCE(!o || list_empty(&slab->ns_node)))
		return;
	list_del_init(&slab->ns_node);
	o->count--;
	o->bytes -= slab->size;
	WARN_ON_ONCE((o->count == 0) != list_empty(&o->list));
	if (list_empty(&o->list)) {
		rb_erase(&o->node, &user->orphanages);
		kfree(o);
	}
	blamer_user_check_locked(user);
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
		/* Its slabs held it: each orphanage went with its last. */
		WARN_ON_ONCE(user->orphans || !RB_EMPTY_ROOT(&user->orphanages));
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
 * blamer_user_charge_locked - charge @size bytes to @user within its limits
 * @user: the account; blamer_lock is held
 * @size: bytes, at most max_slab_bytes
 * @asked: whether @privileged was asked of the caller already (in/out)
 * @privileged: the caller has CAP_SYS_RESOURCE, once asked (in/out); it
 *	is asked only when a limit is in the way, so only then audited
 * @over: out, on failure: the bytes above the nearer-broken limit
 *
 * Return: 0, -EDQUOT above max_user_bytes, -ENOSPC above max_total_bytes.
 */
int blamer_user_charge_locked(struct blamer_user *user, u64 size, bool *asked,
			      bool *privileged, u64 *over)
{
	u64 over_user, over_total;

	lockdep_assert_held(&blamer_lock);
	over_user = blamer_excess(atomic64_read(&user->bytes), size,
				  READ_ONCE(blamer_max_user_bytes));
	over_total = blamer_excess(atomic64_read(&blamer_bytes), size,
				   READ_ONCE(blamer_max_total_bytes));
	if ((over_user || over_total) && !*asked) {
		*privileged = capable(CAP_SYS_RESOURCE);
		*asked = true;
	}
	if (*privileged || (!over_user && !over_total)) {
		atomic64_add(size, &user->bytes);
		atomic64_add(size, &blamer_bytes);
		return 0;
	}
	*over = max(over_user, over_total);
	return over_user ? -EDQUOT : -ENOSPC;
}

/* @size bytes of pages charged with blamer_user_charge_locked() were freed. */
void blamer_user_uncharge_bytes(struct blamer_user *user, u64 size)
{
	atomic64_sub(size, &user->bytes);
	atomic64_sub(size, &blamer_bytes);
}

/* All the pages charged with blamer_user_charge_locked() were freed. */
void blamer_user_uncharge(struct blamer_user *user, u64 size)
{
	blamer_user_uncharge_bytes(user, size);
	blamer_user_put(user);
}
