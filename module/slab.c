// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: the slab table and the lifetime of a slab.
 *
 * A slab is created live, owned by the calling process. When that process
 * dies (owner.c) its slabs become orphans, kept for postmortem reading
 * until a permitted reader releases them or lifecycle.c evicts them. The
 * owner may release its own live slabs. Releasing or evicting only
 * removes the slab from the table: files and mappings of it keep its
 * facts and pages alive.
 *
 * The table is an xarray written under blamer_lock and walked under RCU:
 * a walker takes a reference (kref_get_unless_zero) before leaving the
 * RCU section, and slabs are freed after a grace period. So listing never
 * holds blamer_lock, and never holds anything while copying to userspace.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/pid_namespace.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/time_namespace.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>

#include "blamer.h"

/* Protects the table's contents and more, see blamer.h. */
DEFINE_MUTEX(blamer_lock);
/* ID -> struct blamer_slab, IDs from 1. */
DEFINE_XARRAY_ALLOC1(blamer_slabs);

/* Under blamer_lock. */
static u32 blamer_next_id;
static unsigned long blamer_nr_slabs;
static unsigned long blamer_nr_orphans;

static void blamer_slab_free(struct kref *ref)
{
	struct blamer_slab *slab = container_of(ref, struct blamer_slab, ref);
	struct blamer_owner *owner = slab->owner;

	/* The table's reference goes only with the unlink, which unorphans. */
	WARN_ON_ONCE(slab->orphanage || !list_empty(&slab->node) ||
		     !list_empty(&slab->ns_node) ||
		     (slab->orphaned && !slab->removed));
	if (owner) {
		/* No file of it is left, so no mapping that could write. */
		mutex_lock(&blamer_lock);
		list_del(&slab->owner_node);
		blamer_owner_idle_locked(owner);
		mutex_unlock(&blamer_lock);
		blamer_owner_put(owner);
	}
	if (slab->user)
		blamer_user_put(slab->user);
	if (slab->cred)
		put_cred(slab->cred);
	if (slab->mm)
		mmdrop(slab->mm);
	iput(slab->inode);
	kfree(slab->spare);
	kfree_rcu(slab, rcu);
}

void blamer_slab_get(struct blamer_slab *slab)
{
	kref_get(&slab->ref);
}

/* May free the slab's pages and take blamer_lock: never call it held. */
void blamer_slab_put(struct blamer_slab *slab)
{
	lockdep_assert_not_held(&blamer_lock);
	kref_put(&slab->ref, blamer_slab_free);
}

/* The slab with ID @id, with a reference, or NULL. */
static struct blamer_slab *blamer_slab_lookup(u64 id)
{
	struct blamer_slab *slab;

	if (!id || id > BLAMER_ID_MAX)
		return NULL;
	rcu_read_lock();
	slab = xa_load(&blamer_slabs, id);
	if (slab && !kref_get_unless_zero(&slab->ref))
		slab = NULL;
	rcu_read_unlock();
	return slab;
}

/**
 * blamer_slab_unlink - take @slab out of the table
 * @slab: a slab in the table; blamer_lock is held
 * @out: gets @slab, with the table's reference, for the caller to put
 *	(blamer_slab_put_list()) once blamer_lock is released
 */
void blamer_slab_unlink(struct blamer_slab *slab, struct list_head *out)
{
	lockdep_assert_held(&blamer_lock);
	xa_erase(&blamer_slabs, slab->id);
	slab->removed = true;
	slab->user->slabs--;
	blamer_nr_slabs--;
	if (slab->orphaned) {
		blamer_user_unorphan_locked(slab);
		blamer_nr_orphans--;
	}
	list_add_tail(&slab->rm_node, out);
}

/* Drop the references of slabs unlinked onto @list, telling watchers. */
void blamer_slab_put_list(struct list_head *list, bool notify)
{
	struct blamer_slab *slab, *tmp;

	list_for_each_entry_safe(slab, tmp, list, rm_node) {
		list_del(&slab->rm_node);
		if (notify)
			blamer_notify(slab);
		blamer_slab_put(slab);
	}
}

/**
 * blamer_slab_orphan_mark_locked - count @slab among its account's orphans
 * @slab: a slab in the table whose owner died; blamer_lock is held
 *
 * The table's side of orphaning; which orphans then go is lifecycle.c's.
 *
 * Return: the orphanage it joined (blamer_user_orphan_locked()).
 */
struct blamer_orphanage *
blamer_slab_orphan_mark_locked(struct blamer_slab *slab)
{
	lockdep_assert_held(&blamer_lock);
	slab->orphaned = true;
	blamer_nr_orphans++;
	return blamer_user_orphan_locked(slab);
}

/**
 * blamer_slab_create - create a live slab owned by the calling process
 * @ctx: the /dev/blamer open file asked through
 * @c: the request; @c->length and @c->id are set on success
 * @filep: out: a read-write file of the new slab
 *
 * Return: 0, -EPERM if the caller did not open @ctx, -EINVAL, -EFBIG,
 * -EDQUOT, -ENOSPC or -ENOMEM as documented for BLAMER_IOC_CREATE.
 */
int blamer_slab_create(struct blamer_ctx *ctx, struct blamer_create *c,
		       struct file **filep)
{
	struct blamer_orphanage *orphanage;
	struct blamer_owner *spare;
	struct blamer_user *user;
	struct blamer_slab *slab;
	struct inode *inode;
	struct file *file;
	u64 size;
	u32 id;
	int err;

	/* The same process, and the same program: execve() ends it. */
	if (task_tgid(current) != ctx->pid || current->mm != ctx->mm ||
	    !current->mm)
		return -EPERM;
	/*
	 * A vfork() child runs in its parent's address space until it execs
	 * or exits: a slab it made would be written by the parent, under
	 * the child's name, for as long as the child lives.
	 */
	if (READ_ONCE(current->vfork_done))
		return -EPERM;
	if ((c->flags & ~BLAMER_CREATE_POPULATE) || !c->length)
		return -EINVAL;
	/* max_slab_bytes is page aligned, so rounding up cannot exceed it. */
	if (c->length > READ_ONCE(blamer_max_slab_bytes))
		return -EFBIG;
	size = PAGE_ALIGN(c->length);

	err = blamer_charge(size, &user);
	if (err)
		return err;
	/* The inode takes over the charge, also when it fails. */
	inode = blamer_slab_inode(size, user,
				  c->flags & BLAMER_CREATE_POPULATE);
	if (IS_ERR(inode))
		return PTR_ERR(inode);

	slab = kzalloc(sizeof(*slab), BLAMER_GFP);
	orphanage = kzalloc(sizeof(*orphanage), BLAMER_GFP);
	spare = kzalloc(sizeof(*spare), BLAMER_GFP);
	if (!slab || !orphanage) {
		kfree(spare);
		kfree(orphanage);
		kfree(slab);
		iput(inode);
		return -ENOMEM;
	}
	/*
	 * The creator's reference: it keeps the slab while blamer_slab_file()
	 * takes the file's own. Once published, any thread of this process
	 * may release the slab by its ID (IDs are guessable), dropping the
	 * table's reference at any moment after blamer_lock is released.
	 */
	kref_init(&slab->ref);
	slab->spare = orphanage;
	slab->inode = inode;
	slab->size = size;
	slab->file_serial = ctx->serial;
	blamer_user_get(user);
	slab->user = user;
	slab->cred = get_current_cred();
	slab->mm = current->mm;
	mmgrab(slab->mm);
	slab->create_time_ns = ktime_get_boottime_ns();
	get_task_comm(slab->comm, current->group_leader);
	INIT_LIST_HEAD(&slab->node);
	INIT_LIST_HEAD(&slab->ns_node);
	INIT_LIST_HEAD(&slab->owner_node);

	mutex_lock(&blamer_lock);
	slab->owner = blamer_owner_get_locked(&spare);
	if (!slab->owner) {
		err = -ENOMEM;
		goto unlock;
	}
	/*
	 * Reserve the ID, then publish the slab with its ID written:
	 * walkers under RCU never see a slab without one. Storing into a
	 * reserved slot allocates nothing.
	 */
	err = xa_alloc_cyclic(&blamer_slabs, &id, NULL,
			      XA_LIMIT(1, BLAMER_ID_MAX), &blamer_next_id,
			      BLAMER_GFP);
	if (err >= 0) {
		slab->id = id;
		err = xa_err(xa_store(&blamer_slabs, id, slab, BLAMER_GFP));
		if (err) {
			/* A lookup may hold it: its release must not unlink. */
			slab->removed = true;
			xa_erase(&blamer_slabs, id);
		}
	}
	if (err < 0) {
		if (err == -EBUSY)
			err = -ENOSPC;
		goto unlock;
	}
	/* Lookups may find it now, but unlinking waits for blamer_lock. */
	blamer_slab_get(slab);		/* the table's */
	list_add_tail(&slab->owner_node, &slab->owner->slabs);
	user->slabs++;
	blamer_nr_slabs++;
	mutex_unlock(&blamer_lock);
	kfree(spare);

	file = blamer_slab_file(slab, O_RDWR);
	if (IS_ERR(file))
		blamer_slab_undo(slab);
	blamer_slab_put(slab);		/* the creator's */
	if (IS_ERR(file))
		return PTR_ERR(file);
	c->length = size;
	c->id = id;
	*filep = file;
	return 0;

unlock:
	mutex_unlock(&blamer_lock);
	kfree(spare);
	blamer_slab_put(slab);
	return err;
}

/* Take a slab just created back out of the table, without an event. */
void blamer_slab_undo(struct blamer_slab *slab)
{
	LIST_HEAD(undo);

	mutex_lock(&blamer_lock);
	if (!slab->removed)
		blamer_slab_unlink(slab, &undo);
	mutex_unlock(&blamer_lock);
	blamer_slab_put_list(&undo, false);
}

/**
 * blamer_slab_open - a read-only file of a slab the caller may read
 * @o: the request
 * @filep: out: the file
 *
 * Return: 0, -EINVAL for flags, -ENOENT if there is no such slab or the
 * caller may not read it, -ENOMEM.
 */
int blamer_slab_open(struct blamer_open *o, struct file **filep)
{
	struct blamer_ident me;
	struct blamer_slab *slab;
	struct file *file;

	if (o->flags)
		return -EINVAL;
	blamer_ident_current(&me);
	slab = blamer_slab_lookup(o->id);
	if (!slab)
		return -ENOENT;
	if (!blamer_may_read(&me, slab, true)) {
		blamer_slab_put(slab);
		return -ENOENT;
	}
	file = blamer_slab_file(slab, O_RDONLY);
	blamer_slab_put(slab);
	if (IS_ERR(file))
		return PTR_ERR(file);
	*filep = file;
	return 0;
}

/**
 * struct blamer_lister - what one BLAMER_IOC_LIST needs for every entry
 * @me: the caller
 * @userns: the caller's user namespace
 * @boot_off: the caller's time namespace's boot-time offset (added
 *	modulo 2^64, as timens_add_boottime_ns() does)
 * @owner: the owner of the previous entry, with a reference (freed, its
 *	address could be a new owner's, which would get its pid), and @pid
 *	its pid for @me
 * @pid: see @owner
 * @stride: bytes per entry in userspace (blamer_list.info_size)
 * @dst: where in userspace the next entry goes
 */
struct blamer_lister {
	struct blamer_ident me;
	struct user_namespace *userns;
	u64 boot_off;
	struct blamer_owner *owner;
	pid_t pid;
	u32 stride;
	char __user *dst;
};

/*
 * The entry goes to userspace whole: every field is written below, and
 * the structure has no padding. A field added to it must be filled here.
 */
static_assert(sizeof(struct blamer_slab_info) == BLAMER_SLAB_INFO_SIZE_VER0);

/* The facts about @slab in the caller's pid, user and time namespaces. */
static void blamer_fill_info(struct blamer_lister *ls,
			     const struct blamer_slab *slab,
			     struct blamer_slab_info *info)
{
	struct blamer_owner *owner = slab->owner;
	int status;

	if (owner != ls->owner) {
		if (ls->owner)
			blamer_owner_put(ls->owner);
		blamer_owner_get(owner);
		ls->owner = owner;
		ls->pid = pid_nr_ns(owner->pid, ls->me.pidns);
	}
	info->id = slab->id;
	info->size = slab->size;
	info->file_serial = slab->file_serial;
	info->start_time_ns = owner->start_time_ns + ls->boot_off;
	info->create_time_ns = slab->create_time_ns + ls->boot_off;
	info->pid = ls->pid;
	info->flags = info->pid ? 0 : BLAMER_SLAB_PID_HIDDEN;
	info->uid = from_kuid_munged(ls->userns, slab->cred->euid);
	/*
	 * An orphan once its writers are revoked (the reaper's, which
	 * settle() waited for, but an owner may die during the walk):
	 * nothing writes what a listing calls an orphan.
	 */
	if (smp_load_acquire(&slab->sealed)) {
		/* As WEXITSTATUS(), WTERMSIG() and WCOREDUMP() decode it. */
		status = owner->exit_status;
		info->state = BLAMER_SLAB_ORPHAN;
		info->orphan_time_ns = owner->death_time_ns + ls->boot_off;
		info->flags |= BLAMER_SLAB_EXITED;
		info->exit_signal = status & 0x7f;
		info->exit_code = info->exit_signal ? 0 : (status >> 8) & 0xff;
		if (status & 0x80)
			info->flags |= BLAMER_SLAB_COREDUMP;
	} else {
		info->state = BLAMER_SLAB_LIVE;
		info->orphan_time_ns = 0;
		info->exit_signal = 0;
		info->exit_code = 0;
		if (owner->pid == ls->me.tgid && slab->mm == ls->me.mm)
			info->flags |= BLAMER_SLAB_MINE;
	}
	memcpy(info->comm, slab->comm, sizeof(info->comm));
	info->comm[sizeof(info->comm) - 1] = '\0';
}

/*
 * Write @slab's entry to userspace: the part this kernel knows with
 * 8-byte user stores, a tail beyond it zeroed. A copy_to_user() per
 * entry (or per page of entries gathered in a buffer) spent more on the
 * copy and its checks than on the entry: in the test VM, LIST of 100,000
 * slabs took 65-105 ms that way and 44-46 ms this way.
 */
static int blamer_list_put(struct blamer_lister *ls,
			   const struct blamer_slab *slab)
{
	size_t len = min_t(size_t, ls->stride, sizeof(struct blamer_slab_info));
	struct blamer_slab_info info;
	char __user *dst = ls->dst;

	blamer_fill_info(ls, slab, &info);
	if (!user_write_access_begin(dst, len))
		return -EFAULT;
	unsafe_copy_to_user(dst, (const char *)&info, len, efault);
	user_write_access_end();
	if (ls->stride > len && clear_user(dst + len, ls->stride - len))
		return -EFAULT;
	ls->dst += ls->stride;
	return 0;
efault:
	user_write_access_end();
	return -EFAULT;
}

#define BLAMER_LIST_BATCH	32

/*
 * The next slabs of the table from *@index on, at most BLAMER_LIST_BATCH,
 * each with a reference (which holds its owner and the owner's struct
 * pid), into @batch; *@index moves past the last. How many: fewer than
 * BLAMER_LIST_BATCH at the table's end. Taken under RCU alone, so that
 * walkers of the whole table (listings, a namespace's STATUS) never make
 * creators wait. One walk per batch: xas_for_each() steps along the leaf
 * nodes, where xa_for_each() descends from the root for every entry.
 * Retry entries (a node being freed) restart the walk; reserved slots
 * read as zero entries and are skipped.
 */
static u32 blamer_slab_batch(unsigned long *index, struct blamer_slab **batch)
{
	XA_STATE(xas, &blamer_slabs, *index);
	struct blamer_slab *slab;
	u32 n = 0;

	rcu_read_lock();
	xas_for_each(&xas, slab, BLAMER_ID_MAX) {
		if (xas_retry(&xas, slab))
			continue;
		if (!kref_get_unless_zero(&slab->ref))
			continue;
		batch[n++] = slab;
		if (n == BLAMER_LIST_BATCH)
			break;
	}
	rcu_read_unlock();
	if (n)
		*index = batch[n - 1]->id + 1UL;
	return n;
}

/**
 * blamer_slab_list - describe the slabs the caller may read
 * @ctx: the caller's open /dev/blamer
 * @l: the request; @l->count, @l->total and @l->events are set
 *
 * Walks the table in batches under RCU, checks and copies each batch
 * without holding anything but references: creators never wait for it.
 *
 * Return: 0, -EINVAL or -EFAULT.
 */
int blamer_slab_list(struct blamer_ctx *ctx, struct blamer_list *l)
{
	struct blamer_slab *batch[BLAMER_LIST_BATCH];
	struct blamer_lister ls = { };
	unsigned long index;
	u32 n, i, count = 0, total = 0;
	int err = 0;
	u64 events;

	if (l->flags || l->reserved ||
	    l->info_size < BLAMER_SLAB_INFO_SIZE_VER0 ||
	    l->info_size > PAGE_SIZE)
		return -EINVAL;
	blamer_owner_settle();
	/*
	 * Read before the walk: a later event still wakes poll(). Beyond
	 * max_user_watchers the listing goes on, its event count 0.
	 */
	blamer_watch(ctx, true);
	events = atomic64_read(&ctx->events);
	blamer_ident_current(&ls.me);
	ls.userns = current_user_ns();
	ls.boot_off = timens_add_boottime_ns(0);
	ls.stride = l->info_size;
	ls.dst = u64_to_user_ptr(l->slabs);

	index = min_t(u64, l->start_id, BLAMER_ID_MAX + 1UL);
	do {
		n = blamer_slab_batch(&index, batch);
		for (i = 0; i < n; i++) {
			struct blamer_slab *slab = batch[i];

			if (!err && blamer_may_read(&ls.me, slab, false)) {
				if (count < l->capacity) {
					err = blamer_list_put(&ls, slab);
					count++;
				}
				total++;
			}
			blamer_slab_put(slab);
		}
		cond_resched();
	} while (n == BLAMER_LIST_BATCH && !err);
	if (ls.owner)
		blamer_owner_put(ls.owner);
	if (err)
		return err;
	atomic64_set(&ctx->seen, events);
	l->events = events;
	l->count = count;
	l->total = total;
	return 0;
}

/**
 * blamer_slab_release - free a slab now
 * @id: the slab
 *
 * The owner releases its own live slabs; a permitted reader releases
 * orphans.
 *
 * Return: 0, -ENOENT if there is no such slab or the caller may not read
 * it, -EBUSY if it is another process's live slab.
 */
int blamer_slab_release(u64 id)
{
	struct blamer_slab *slab = blamer_slab_lookup(id);
	struct blamer_ident me;
	LIST_HEAD(gone);
	int err = 0;

	if (!slab)
		return -ENOENT;
	blamer_ident_current(&me);
	mutex_lock(&blamer_lock);
	if (slab->removed)
		err = -ENOENT;
	else if (blamer_is_owner(slab))
		blamer_slab_unlink(slab, &gone);
	else if (!blamer_may_read(&me, slab, true))
		err = -ENOENT;
	else if (!blamer_owner_dead(slab->owner))
		err = -EBUSY;
	else
		blamer_slab_unlink(slab, &gone);
	mutex_unlock(&blamer_lock);
	blamer_slab_put_list(&gone, true);
	blamer_slab_put(slab);
	return err;
}

/*
 * The account @key as pid namespace @ns sees it: only slabs whose owners
 * are visible there (made in @ns or below it), so that counts tell a
 * container nothing about the host's processes. Bytes are those of the
 * visible slabs in the table; pages of released slabs still mapped
 * somewhere are not told apart by namespace, so they are left out.
 *
 * A walk of every slab, as a listing's (blamer_slab_batch()), never
 * under blamer_lock, so that a caller asking again and again costs only
 * itself (under the lock, with 60,000 slabs, each
 * call held it 76 ms and another user's create took 157 ms on average).
 */
static void blamer_status_in_ns(kuid_t key, struct pid_namespace *ns,
				struct blamer_status *st)
{
	struct blamer_slab *batch[BLAMER_LIST_BATCH];
	unsigned long index = 0;
	u32 n, i;

	do {
		n = blamer_slab_batch(&index, batch);
		for (i = 0; i < n; i++) {
			struct blamer_slab *slab = batch[i];

			if (!READ_ONCE(slab->removed) && uid_eq(slab->user->uid, key) &&
			    pid_nr_ns(slab->owner->pid, ns)) {
				st->user_slabs++;
				st->user_bytes += slab->size;
				if (READ_ONCE(slab->orphaned))
					st->user_orphans++;
			}
			blamer_slab_put(slab);
		}
		cond_resched();
	} while (n == BLAMER_LIST_BATCH);
}

/**
 * blamer_status - the caller's account, the limits and, for callers who
 *	may read every slab, the device's usage
 * @st: zeroed by the caller
 */
void blamer_status(struct blamer_status *st)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	kuid_t key = blamer_user_key(current_cred());
	struct blamer_user *user;
	bool all = ns_capable_noaudit(&init_user_ns, CAP_SYS_PTRACE);

	blamer_owner_settle();
	if (ns != &init_pid_ns)
		blamer_status_in_ns(key, ns, st);
	mutex_lock(&blamer_lock);
	user = blamer_user_find_locked(key);
	if (user && ns == &init_pid_ns) {
		st->user_slabs = user->slabs;
		st->user_orphans = user->orphans;
		st->user_bytes = atomic64_read(&user->bytes);
	}
	if (all) {
		st->flags |= BLAMER_STATUS_DEVICE;
		st->slabs = blamer_nr_slabs;
		st->orphans = blamer_nr_orphans;
		st->bytes = blamer_total_bytes();
	}
	mutex_unlock(&blamer_lock);
	st->max_slab_bytes = READ_ONCE(blamer_max_slab_bytes);
	st->max_user_bytes = READ_ONCE(blamer_max_user_bytes);
	st->max_total_bytes = READ_ONCE(blamer_max_total_bytes);
	st->max_user_orphans = READ_ONCE(blamer_max_user_orphans);
}

/* Module exit: no file is open, so nothing else holds a slab. */
void blamer_slab_free_all(void)
{
	struct blamer_slab *slab;
	unsigned long id;
	LIST_HEAD(gone);

	mutex_lock(&blamer_lock);
	xa_for_each(&blamer_slabs, id, slab)
		blamer_slab_unlink(slab, &gone);
	mutex_unlock(&blamer_lock);
	blamer_slab_put_list(&gone, false);
	xa_destroy(&blamer_slabs);
}
