// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: owner processes and how they end.
 *
 * The owner of a slab is the process that created it, found by its thread
 * group's struct pid (which is never reused while referenced). A process
 * has one struct blamer_owner in the owner table from its first slab
 * until it dies or none of its slabs exists any more: a slab it released
 * may still be mapped writable, by it or by a process sharing its
 * address space (CLONE_VM), and its death must still revoke that.
 *
 * Death is observed with the sched_process_exit tracepoint, which every
 * exiting thread passes in do_exit() after exit_mm() and before its parent
 * can reap it: no process-exit notifier is exported to modules, while
 * tracepoint_probe_register() is, on 6.1 and 6.12 alike, with the same
 * prototype. The whole process is dead exactly when the last thread has
 * decremented signal->live; the thread that sees 0 there in the probe
 * (several may, the first one wins) records the status as wait4() will
 * report it: signal->group_exit_code under SIGNAL_GROUP_EXIT (always set
 * once live is 0 on these kernels: synchronize_group_exit() sets it for
 * the last thread), else the group leader's exit_code. A thread that
 * exits alone (SYS_exit, with or without a file table of its own) or is
 * killed by another thread's execve() leaves live above 0 and records
 * nothing, and nothing a live process does can write the record.
 *
 * The probe runs with preemption disabled for every thread exit in the
 * system, so it does the least: a read of signal->live (non-zero for
 * most thread exits), a count of owners, an RCU hash lookup, atomics,
 * and queue_work(). The reaper work then turns the owner's slabs into
 * orphans under blamer_lock, revokes writable mappings, evicts above the
 * per-user orphan limit and tells poll() watchers.
 *
 * An execve() ends the program that created the slabs, not the process:
 * the sched_process_exec tracepoint (after the new address space is in,
 * same prototype on 6.1 and 6.12) records the owner's new address space,
 * and the reaper revokes the writers of the slabs made in the old one,
 * which processes sharing it (clone(CLONE_VM) without CLONE_THREAD) keep
 * and would otherwise write on in the name of a process now running
 * another program. The slabs stay the live process's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hashtable.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <linux/workqueue.h>

#include "blamer.h"

/* Owners of existing slabs by thread group, RCU for the probe. */
static DEFINE_HASHTABLE(blamer_owners, 8);
static atomic_t blamer_nr_owners = ATOMIC_INIT(0);

/* Dead owners, and owners that exec'd, waiting for the reaper. */
static LLIST_HEAD(blamer_dead_owners);
static LLIST_HEAD(blamer_exec_owners);
static void blamer_reap(struct work_struct *work);
static DECLARE_WORK(blamer_reap_work, blamer_reap);

static struct tracepoint *blamer_exit_tp, *blamer_exec_tp;

static void blamer_owner_free(struct kref *ref)
{
	struct blamer_owner *owner = container_of(ref, struct blamer_owner,
						  ref);

	put_pid(owner->pid);
	kfree_rcu(owner, rcu);
}

void blamer_owner_get(struct blamer_owner *owner)
{
	kref_get(&owner->ref);
}

void blamer_owner_put(struct blamer_owner *owner)
{
	kref_put(&owner->ref, blamer_owner_free);
}

bool blamer_owner_dead(const struct blamer_owner *owner)
{
	return atomic_read_acquire(&owner->state) == BLAMER_OWNER_DEAD;
}

/*
 * Not yet seen dying (an owner only leaves ALIVE by dying, or with its
 * last slab).
 */
bool blamer_owner_living(const struct blamer_owner *owner)
{
	return atomic_read(&owner->state) == BLAMER_OWNER_ALIVE;
}

/*
 * Is the caller the creator of @slab: its living process, still running
 * the program that created it (an execve() since, a setuid one included,
 * makes it another program, which gets no creator's rights)?
 */
bool blamer_is_owner(const struct blamer_slab *slab)
{
	return task_tgid(current) == slab->owner->pid &&
	       current->mm == slab->mm && blamer_slab_writable(slab);
}

/*
 * May the mappings of @slab write it: its creator lives and still runs
 * the program that created it, in the address space the slab was made
 * in (@slab->mm, held, so no new one takes its address meanwhile).
 */
bool blamer_slab_writable(const struct blamer_slab *slab)
{
	return blamer_owner_living(slab->owner) &&
	       READ_ONCE(slab->owner->mm) == slab->mm;
}

/**
 * blamer_owner_get_locked - the calling process's owner record
 * @spare: a zeroed allocation to use if the process has none yet; set to
 *	NULL when used
 *
 * The caller is alive, so its record, if any, is ALIVE.
 *
 * Return: the record with a reference for the caller, or NULL if one was
 * needed and @spare was NULL.
 */
struct blamer_owner *blamer_owner_get_locked(struct blamer_owner **spare)
{
	struct pid *tgid = task_tgid(current);
	struct blamer_owner *owner;

	lockdep_assert_held(&blamer_lock);
	hash_for_each_possible(blamer_owners, owner, node, (unsigned long)tgid)
		if (owner->pid == tgid) {
			kref_get(&owner->ref);
			return owner;
		}
	owner = *spare;
	if (!owner)
		return NULL;
	*spare = NULL;
	kref_init(&owner->ref);		/* the table's */
	kref_get(&owner->ref);		/* the caller's */
	owner->pid = get_pid(tgid);
	owner->mm = current->mm;
	owner->start_time_ns = current->group_leader->start_boottime;
	INIT_LIST_HEAD(&owner->slabs);
	atomic_set(&owner->state, BLAMER_OWNER_ALIVE);
	hash_add_rcu(blamer_owners, &owner->node, (unsigned long)tgid);
	atomic_inc(&blamer_nr_owners);
	return owner;
}

/**
 * blamer_owner_idle_locked - @owner may have lost its last slab
 * @owner: an owner record
 *
 * A living owner none of whose slabs exists any more leaves the table,
 * so exits of processes that freed everything cost the probe nothing.
 * If the probe got there first, the reaper removes it instead.
 */
void blamer_owner_idle_locked(struct blamer_owner *owner)
{
	lockdep_assert_held(&blamer_lock);
	if (!list_empty(&owner->slabs))
		return;
	if (atomic_cmpxchg(&owner->state, BLAMER_OWNER_ALIVE,
			   BLAMER_OWNER_GONE) != BLAMER_OWNER_ALIVE)
		return;
	hash_del_rcu(&owner->node);
	atomic_dec(&blamer_nr_owners);
	kref_put(&owner->ref, blamer_owner_free);	/* a slab holds one */
}

/* The owner record of @p's process, if any; under rcu_read_lock(). */
static struct blamer_owner *blamer_owner_find_rcu(struct task_struct *p)
{
	struct pid *tgid = task_tgid(p);
	struct blamer_owner *owner;

	hash_for_each_possible_rcu(blamer_owners, owner, node,
				   (unsigned long)tgid)
		if (owner->pid == tgid)
			return owner;
	return NULL;
}

/*
 * sched_process_exit: @p is current, past exit_mm(), preemption disabled.
 */
static void blamer_exit_probe(void *data, struct task_struct *p)
{
	struct signal_struct *sig = p->signal;
	struct blamer_owner *owner;
	int status;

	/* Other threads still run: the process is not dead. */
	if (atomic_read(&sig->live))
		return;
	if (!atomic_read(&blamer_nr_owners))
		return;
	rcu_read_lock();
	owner = blamer_owner_find_rcu(p);
	/* Fully ordered: the reads below follow the read of live. */
	if (owner && atomic_cmpxchg(&owner->state, BLAMER_OWNER_ALIVE,
				    BLAMER_OWNER_DYING) == BLAMER_OWNER_ALIVE) {
		/* As wait_task_zombie() computes it. */
		if (READ_ONCE(sig->flags) & SIGNAL_GROUP_EXIT)
			status = READ_ONCE(sig->group_exit_code);
		else
			status = READ_ONCE(p->group_leader->exit_code);
		owner->exit_status = status;
		owner->death_time_ns = ktime_get_boottime_ns();
		atomic_set_release(&owner->state, BLAMER_OWNER_DEAD);
		llist_add(&owner->dead, &blamer_dead_owners);
		queue_work(system_unbound_wq, &blamer_reap_work);
	}
	rcu_read_unlock();
}

/*
 * sched_process_exec: @p is current, in its new address space, preemption
 * disabled. The slabs its owner made in the old one lose their writers
 * (blamer_slab_writable() from now on, blamer_reap_exec() for mappings
 * already writable).
 */
static void blamer_exec_probe(void *data, struct task_struct *p,
			      pid_t old_pid, struct linux_binprm *bprm)
{
	struct blamer_owner *owner;

	if (!atomic_read(&blamer_nr_owners))
		return;
	rcu_read_lock();
	owner = blamer_owner_find_rcu(p);
	if (owner) {
		WRITE_ONCE(owner->mm, p->mm);
		/* Once on the list; the reaper's reference. */
		if (!atomic_xchg(&owner->exec_queued, 1) &&
		    kref_get_unless_zero(&owner->ref)) {
			llist_add(&owner->exec_node, &blamer_exec_owners);
			queue_work(system_unbound_wq, &blamer_reap_work);
		}
	}
	rcu_read_unlock();
}

/*
 * One owner that exec'd: every slab of it made in another address space
 * than the one it runs in now loses its writers. On the reaper's work, so
 * never beside blamer_reap_owner() (a work item does not run twice at
 * once), whose reap_node it uses too.
 */
static void blamer_reap_exec(struct blamer_owner *owner)
{
	struct blamer_slab *slab, *tmp;
	LIST_HEAD(left);

	/*
	 * Off the list before its address space is read: a full barrier
	 * (an atomic_set() and smp_mb__after_atomic() is none), pairing
	 * with the probe's atomic_xchg(), so an exec after that read queues
	 * it again.
	 */
	atomic_xchg(&owner->exec_queued, 0);
	mutex_lock(&blamer_lock);
	list_for_each_entry(slab, &owner->slabs, owner_node) {
		if (slab->mm == READ_ONCE(owner->mm) ||
		    !kref_get_unless_zero(&slab->ref))
			continue;
		list_add_tail(&slab->reap_node, &left);
	}
	mutex_unlock(&blamer_lock);

	list_for_each_entry_safe(slab, tmp, &left, reap_node) {
		list_del(&slab->reap_node);
		blamer_slab_revoke_writers(slab);
		blamer_slab_put(slab);
	}
	blamer_owner_put(owner);
}

/*
 * One dead owner: its slabs in the table become orphans, and every slab
 * of it that still exists, released ones included, loses its writers.
 * Then the owner's table reference goes.
 */
static void blamer_reap_owner(struct blamer_owner *owner)
{
	struct blamer_slab *slab, *tmp;
	LIST_HEAD(reaped);
	LIST_HEAD(evicted);

	mutex_lock(&blamer_lock);
	hash_del_rcu(&owner->node);
	atomic_dec(&blamer_nr_owners);
	list_for_each_entry(slab, &owner->slabs, owner_node) {
		/* Being freed: its last file, and so mapping, is gone. */
		if (!kref_get_unless_zero(&slab->ref))
			continue;
		list_add_tail(&slab->reap_node, &reaped);
		if (!slab->removed)
			blamer_slab_orphan_locked(slab, &evicted);
	}
	mutex_unlock(&blamer_lock);

	/* Every writer first: an event tells of an orphan no one writes. */
	list_for_each_entry(slab, &reaped, reap_node) {
		blamer_slab_revoke_writers(slab);
		if (!slab->orphaned)
			continue;
		/* Pairs with blamer_fill_info(): the revocation, then this. */
		smp_store_release(&slab->sealed, true);
	}
	list_for_each_entry_safe(slab, tmp, &reaped, reap_node) {
		list_del(&slab->reap_node);
		/* Set under blamer_lock above, never cleared. */
		if (slab->orphaned)
			blamer_notify(slab);
		blamer_slab_put(slab);
	}
	blamer_slab_put_list(&evicted, true);
	blamer_owner_put(owner);
}

static void blamer_reap(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&blamer_dead_owners);
	struct blamer_owner *owner, *tmp;

	/* In the order they died: orphans are evicted oldest first. */
	list = llist_reverse_order(list);
	llist_for_each_entry_safe(owner, tmp, list, dead)
		blamer_reap_owner(owner);
	list = llist_del_all(&blamer_exec_owners);
	llist_for_each_entry_safe(owner, tmp, list, exec_node)
		blamer_reap_exec(owner);
}

/*
 * Finish the reaping of processes already seen dead, so that a listing
 * made after wait() returned shows their slabs as orphans with their
 * accounts and evictions up to date.
 */
void blamer_owner_settle(void)
{
	flush_work(&blamer_reap_work);
}

static void blamer_find_tps(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_process_exit"))
		blamer_exit_tp = tp;
	else if (!strcmp(tp->name, "sched_process_exec"))
		blamer_exec_tp = tp;
}

int blamer_owner_init(void)
{
	int err;

	for_each_kernel_tracepoint(blamer_find_tps, NULL);
	if (!blamer_exit_tp || !blamer_exec_tp) {
		pr_err("the sched_process_exit or _exec tracepoint is missing (CONFIG_TRACEPOINTS)\n");
		return -EOPNOTSUPP;
	}
	err = tracepoint_probe_register(blamer_exit_tp, blamer_exit_probe,
					NULL);
	if (err) {
		pr_err("cannot attach to sched_process_exit: %d\n", err);
		return err;
	}
	err = tracepoint_probe_register(blamer_exec_tp, blamer_exec_probe,
					NULL);
	if (err) {
		pr_err("cannot attach to sched_process_exec: %d\n", err);
		tracepoint_probe_unregister(blamer_exit_tp, blamer_exit_probe,
					    NULL);
		tracepoint_synchronize_unregister();
	}
	return err;
}

/*
 * After unregistering, wait for probes still running on other CPUs, then
 * for the reaper work they queued.
 */
void blamer_owner_exit(void)
{
	tracepoint_probe_unregister(blamer_exec_tp, blamer_exec_probe, NULL);
	tracepoint_probe_unregister(blamer_exit_tp, blamer_exit_probe, NULL);
	tracepoint_synchronize_unregister();
	flush_work(&blamer_reap_work);
	blamer_reap(&blamer_reap_work);
}
