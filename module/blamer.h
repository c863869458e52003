/* SPDX-License-Identifier: GPL-2.0 */
/*
 * blamer: kernel-owned shared-memory slabs with trusted owner facts.
 * Internal declarations shared by the files of the module:
 *
 *   main.c    module init/exit, parameters, /dev/blamer file operations
 *   ioctl.c   ioctl argument rules and dispatch
 *   slab.c    the slab table: create, open, list, release
 *   lifecycle.c  live -> orphan -> evicted: which slabs go, and when
 *   owner.c   owner processes and the exit tracepoint that ends them
 *   user.c    per-user accounts: byte and orphan counts and limits
 *   slabfs.c  a slab's pages, its inode and files, mmap and faults
 *   perm.c    who may read a slab
 *   event.c   poll(): events filtered per reader
 *
 * Objects and references:
 *   - struct blamer_slab: the kernel's facts about a slab. Referenced by
 *     the slab table (until released or evicted), by every open file of
 *     the slab (and so by every mapping) and briefly by lookups; freed
 *     after an RCU grace period, so the table can be walked under RCU.
 *   - the slab's inode holds its pages (struct blamer_buf). The slab and
 *     every slab file hold the inode; pages and their charge live until
 *     the last of them is gone.
 *   - struct blamer_owner: one creating process, found by its thread
 *     group's struct pid; referenced by the owner table while the process
 *     lives and by each of its slabs.
 *   - struct blamer_user: the account a slab is charged to; referenced by
 *     each slab and each page buffer.
 *
 * Locking: blamer_lock (a mutex) protects the slab table's contents, the
 * owner table, every list_head named "under blamer_lock" and the users'
 * slab and orphan counters. Byte counters are atomics. Dropping a slab,
 * owner or user reference may take blamer_lock or free an inode, so no
 * reference is dropped while holding it. blamer_watch_lock (event.c)
 * protects the poll watchers and is never taken with blamer_lock held.
 * The exit and exec tracepoint probes (owner.c) run with preemption
 * disabled: they read RCU-protected data, flip atomics, store the owner's
 * new address space (exec) and take an owner reference with
 * kref_get_unless_zero() (exec); no lock, no sleep.
 */
#ifndef _BLAMER_INTERNAL_H
#define _BLAMER_INTERNAL_H

#include <linux/atomic.h>
#include <linux/cred.h>
#include <linux/gfp.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/rbtree.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <linux/blamer.h>

static_assert(TASK_COMM_LEN == BLAMER_COMM_LEN);

/*
 * Every allocation of a system call is charged to the caller's memory
 * cgroup and fails quietly rather than invoking the OOM killer: the
 * caller sees -ENOMEM. (Pages allocated at first touch are not: see
 * blamer_fault() in slabfs.c.)
 */
#define BLAMER_GFP	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

/* Slab IDs: 1 .. BLAMER_ID_MAX, allocated cyclically. */
#define BLAMER_ID_MAX	((u32)INT_MAX)

/**
 * struct blamer_user - an account that slabs are charged to
 * @node: entry in the users table, under blamer_lock
 * @ref: one per slab, per page buffer charged and per watcher, plus
 *	lookups
 * @uid: the account: the creator's real uid, or the owner of its
 *	outermost non-initial user namespace
 * @bytes: bytes of pages charged and not yet freed
 * @slabs: slabs in the table charged here, under blamer_lock
 * @orphans: orphans among them, under blamer_lock
 * @orphan_list: those orphans, oldest first, under blamer_lock
 * @orphanages: the same orphans by the pid namespace they were made in,
 *	struct blamer_orphanage keyed by namespace, under blamer_lock
 * @watchers: open /dev/blamer files watching for events whose last asker
 *	was of this account (event.c), under blamer_lock
 */
struct blamer_user {
	struct hlist_node node;
	refcount_t ref;
	kuid_t uid;
	atomic64_t bytes;
	unsigned long slabs;
	unsigned long orphans;
	unsigned long watchers;
	struct list_head orphan_list;
	struct rb_root orphanages;
};

/**
 * struct blamer_orphanage - an account's orphans made in one pid namespace
 *	by one kind of creator
 * @node: entry in @user->orphanages, keyed by @ns, @elevated, @euid,
 *	@egid and @caps
 * @ns: the namespace: the owner's innermost; each orphan's owner holds
 *	its struct pid, which holds @ns, so @ns outlives the orphanage
 * @elevated: made by creators with more than the account's ids, or with
 *	capabilities (a setuid or setgid program the user ran, a service
 *	given capabilities; see user.c): not the account's to evict
 * @caps: those creators were permitted capabilities (elevated only)
 * @euid: their effective uid (elevated only, else 0)
 * @egid: their effective gid (elevated only, else 0)
 * @bytes: the orphans' sizes, summed
 * @count: how many orphans
 * @list: those orphans, oldest first (struct blamer_slab.ns_node)
 *
 * max_user_orphans applies to each orphanage, so an orphaning looks at
 * its own namespace's and kind's orphans only, however many the account
 * keeps in others: the user's own crashes never push out the postmortem
 * of a setuid program it ran, nor one elevated program's another's.
 * Made by the first orphan, freed with the last, from the spare every
 * slab carries from its creation: orphaning cannot fail.
 */
struct blamer_orphanage {
	struct rb_node node;
	struct pid_namespace *ns;
	bool elevated;
	bool caps;
	kuid_t euid;
	kgid_t egid;
	u64 bytes;
	unsigned long count;
	struct list_head list;
};

/* States of struct blamer_owner */
enum {
	BLAMER_OWNER_ALIVE,	/* in the owner table, process running */
	BLAMER_OWNER_DYING,	/* the exit probe is recording the status */
	BLAMER_OWNER_DEAD,	/* @exit_status and @death_time_ns are set */
	BLAMER_OWNER_GONE,	/* left the table alive: no slab of it exists */
};

/**
 * struct blamer_owner - a process that created slabs
 * @node: entry in the owner table (RCU) while alive
 * @dead: entry in the reaper's list once dead
 * @exec_node: entry in the reaper's list of owners that exec'd
 * @exec_queued: @exec_node is on that list
 * @ref: the owner table's reference and one per slab
 * @pid: the process's thread group (reference held)
 * @mm: the address space it runs in now, replaced at each execve():
 *	compared with a slab's (blamer_slab_writable()), never followed
 * @start_time_ns: its start time, boot-based (time namespace free)
 * @slabs: every slab of it not yet freed, in the table or released,
 *	under blamer_lock
 * @state: BLAMER_OWNER_*
 * @exit_status: wait status of the whole process once DEAD
 * @death_time_ns: when the last thread exited, boot-based, once DEAD
 * @rcu: frees it after readers of the owner table are done
 */
struct blamer_owner {
	struct hlist_node node;
	struct llist_node dead;
	struct llist_node exec_node;
	atomic_t exec_queued;
	struct kref ref;
	struct pid *pid;
	struct mm_struct *mm;
	u64 start_time_ns;
	struct list_head slabs;
	atomic_t state;
	int exit_status;
	u64 death_time_ns;
	struct rcu_head rcu;
};

/**
 * struct blamer_buf - the pages of a slab (its inode's i_private)
 * @user: the account charged for them until they are freed (all of
 *	@nr_pages, present or not: a reservation)
 * @linger: entry in the lingering list once the inode is gone while
 *	other holders keep some pages (slabfs.c)
 * @holes: some mapping was given the hole page for a page of this slab
 * @nr_pages: number of entries in @pages
 * @pages: order-0 pages, zeroed, charged to the memory cgroup of the task
 *	that allocated them; NULL until a writer first touched them
 *	(published with cmpxchg(), never changed again while the inode
 *	lives)
 */
struct blamer_buf {
	struct blamer_user *user;
	struct list_head linger;
	bool holes;
	unsigned long nr_pages;
	struct page *pages[];
};

/**
 * struct blamer_slab - one slab and the kernel's facts about it
 * @ref: see the top of this file
 * @id: slab ID, the index in the slab table
 * @size: size in bytes (whole pages)
 * @file_serial: the /dev/blamer open file it was created through
 * @owner: the creating process
 * @user: the account it is charged to
 * @cred: the creator's credentials at creation
 * @mm: the creator's address space at creation (mm_count held): only
 *	mappings in it may write, and its dumpable flag guards reading
 * @inode: holds the pages
 * @create_time_ns: creation time, boot-based
 * @comm: the creator's command name at creation
 * @node: entry in @user->orphan_list once orphaned, under blamer_lock
 * @ns_node: entry in @orphanage->list once orphaned, under blamer_lock
 * @orphanage: the orphans of @user made in the same pid namespace, while
 *	this slab is one of them, under blamer_lock
 * @spare: an orphanage for its first orphan to use, until one is used
 * @owner_node: entry in @owner->slabs until freed, under blamer_lock
 * @sealed: orphaned, and its writers revoked: a listing may call it an
 *	orphan (set once, with release semantics)
 * @orphaned: on @user->orphan_list, under blamer_lock (once set, never
 *	cleared: an evicted orphan stays one)
 * @removed: no longer in the slab table, under blamer_lock
 * @rm_node: entry in a list of slabs just removed from the table
 * @reap_node: entry in the reaper's list of slabs just orphaned
 * @rcu: frees it after table walkers are done
 */
struct blamer_slab {
	struct kref ref;
	u32 id;
	u64 size;
	u64 file_serial;
	struct blamer_owner *owner;
	struct blamer_user *user;
	const struct cred *cred;
	struct mm_struct *mm;
	struct inode *inode;
	u64 create_time_ns;
	char comm[TASK_COMM_LEN];
	struct list_head node;
	struct list_head ns_node;
	struct blamer_orphanage *orphanage;
	struct blamer_orphanage *spare;
	struct list_head owner_node;
	bool sealed;
	bool orphaned;
	bool removed;
	struct list_head rm_node;
	struct list_head reap_node;
	struct rcu_head rcu;
};

/**
 * struct blamer_ident - who asks
 * @cred: credentials
 * @pidns: pid namespace the asker sees
 * @tgid: the asker's thread group
 * @mm: the asker's address space (the program it runs; held in snapshots)
 * @live: the asker is current: capabilities are checked now (and
 *	audited where a privilege is exercised); otherwise the fields below
 *	were computed when the snapshot was taken (poll watchers)
 * @priv_all: CAP_SYS_PTRACE in the initial user namespace (snapshot)
 * @priv_own: CAP_SYS_PTRACE in its own user namespace (snapshot)
 * @group: member of the reader_gid group (snapshot)
 */
struct blamer_ident {
	const struct cred *cred;
	struct pid_namespace *pidns;
	struct pid *tgid;
	struct mm_struct *mm;
	bool live;
	bool priv_all;
	bool priv_own;
	bool group;
};

/**
 * struct blamer_ctx - an open /dev/blamer
 * @serial: identifies the open file (blamer_slab_info.file_serial)
 * @pid: the opener's thread group: only it creates slabs through this file
 * @mm: the opener's address space (mm_count held), NULL for kernel callers
 * @wq: poll() waiters
 * @events: events visible to @ident reported so far
 * @seen: @events at the last BLAMER_IOC_LIST
 * @watch: entry in the watcher list once watching, under blamer_watch_lock
 * @watching: on the watcher list, under blamer_watch_lock
 * @watch_user: the account it is counted against while watching, under
 *	blamer_watch_lock
 * @watch_mutex: one blamer_watch() at a time: its decisions (charge,
 *	list, snapshot) hold together
 * @ident: whose view events are filtered for, under blamer_watch_lock
 */
struct blamer_ctx {
	u64 serial;
	struct pid *pid;
	struct mm_struct *mm;
	wait_queue_head_t wq;
	atomic64_t events;
	atomic64_t seen;
	struct list_head watch;
	bool watching;
	struct blamer_user *watch_user;
	struct mutex watch_mutex;	/* one blamer_watch() at a time */
	struct blamer_ident ident;
};

/* main.c: module parameters (read with READ_ONCE) */
extern u64 blamer_max_slab_bytes;
extern u64 blamer_max_user_bytes;
extern u64 blamer_max_total_bytes;
extern u64 blamer_max_user_orphans;
extern u64 blamer_max_user_watchers;
extern int blamer_reader_gid;

/* slab.c */
extern struct mutex blamer_lock;
extern struct xarray blamer_slabs;
int blamer_slab_create(struct blamer_ctx *ctx, struct blamer_create *c,
		       struct file **filep);
int blamer_slab_open(struct blamer_open *o, struct file **filep);
int blamer_slab_list(struct blamer_ctx *ctx, struct blamer_list *l);
void blamer_slab_undo(struct blamer_slab *slab);
int blamer_slab_release(u64 id);
void blamer_slab_unlink(struct blamer_slab *slab, struct list_head *out);
struct blamer_orphanage *
blamer_slab_orphan_mark_locked(struct blamer_slab *slab);
void blamer_slab_put_list(struct list_head *list, bool notify);
void blamer_slab_get(struct blamer_slab *slab);
void blamer_slab_put(struct blamer_slab *slab);
void blamer_status(struct blamer_status *st);
void blamer_slab_free_all(void);

/* lifecycle.c */
void blamer_slab_orphan_locked(struct blamer_slab *slab,
			       struct list_head *evicted);
int blamer_charge(u64 size, struct blamer_user **userp);

/* owner.c */
int blamer_owner_init(void);
void blamer_owner_exit(void);
void blamer_owner_settle(void);
struct blamer_owner *blamer_owner_get_locked(struct blamer_owner **spare);
void blamer_owner_get(struct blamer_owner *owner);
void blamer_owner_put(struct blamer_owner *owner);
void blamer_owner_idle_locked(struct blamer_owner *owner);
bool blamer_owner_dead(const struct blamer_owner *owner);
bool blamer_owner_living(const struct blamer_owner *owner);
bool blamer_is_owner(const struct blamer_slab *slab);
bool blamer_slab_writable(const struct blamer_slab *slab);

/* user.c */
struct blamer_user *blamer_user_get_locked(kuid_t uid);
int blamer_user_charge_locked(struct blamer_user *user, u64 size, bool *asked,
			      bool *privileged, u64 *over);
void blamer_user_uncharge(struct blamer_user *user, u64 size);
void blamer_user_uncharge_bytes(struct blamer_user *user, u64 size);
struct blamer_user *blamer_user_find_locked(kuid_t uid);
struct blamer_orphanage *blamer_user_orphan_locked(struct blamer_slab *slab);
void blamer_user_unorphan_locked(struct blamer_slab *slab);
kuid_t blamer_user_key(const struct cred *cred);
void blamer_user_get(struct blamer_user *user);
void blamer_user_put(struct blamer_user *user);
u64 blamer_total_bytes(void);

/* slabfs.c */
int blamer_slabfs_init(void);
void blamer_slabfs_exit(void);
struct inode *blamer_slab_inode(u64 size, struct blamer_user *user,
				bool populate);
struct file *blamer_slab_file(struct blamer_slab *slab, int flags);
void blamer_slab_revoke_writers(struct blamer_slab *slab);
void blamer_linger_scan(void);

/* perm.c */
bool blamer_in_reader_group(void);
void blamer_ident_current(struct blamer_ident *id);
void blamer_ident_snapshot(struct blamer_ident *id);
void blamer_ident_release(struct blamer_ident *id);
bool blamer_may_read(const struct blamer_ident *id,
		     const struct blamer_slab *slab, bool audit);

/* event.c */
int blamer_watch(struct blamer_ctx *ctx, bool refresh);
void blamer_unwatch(struct blamer_ctx *ctx);
void blamer_notify(const struct blamer_slab *slab);

/* ioctl.c */
long blamer_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/*
 * vm_flags became read-only in 6.3, when the vm_flags_set() helper
 * arrived; module/Kbuild defines BLAMER_VM_FLAGS_SET from 6.3 on.
 */
static inline void blamer_vm_flags_set(struct vm_area_struct *vma,
				       vm_flags_t flags)
{
#ifdef BLAMER_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

#endif /* _BLAMER_INTERNAL_H */
