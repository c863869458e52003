/* SPDX-License-Identifier: GPL-2.0 */
/*
 * blamer: kernel-owned shared-memory slabs with trusted owner facts.
 * Internal declarations shared by the files of the module.
 *
 * Locking: one mutex, blamer_lock, protects the slab table (an xarray
 * indexed by slab ID), the orphan list, every byte and slab counter and the
 * per-user usage list. The page array of a slab (struct blamer_buf) is not
 * protected by it: it is reference counted and immutable once created, so
 * a mapping can keep it alive after the slab is gone. blamer_lock is taken
 * under mmap_lock (from ->mmap), so nothing may touch user memory while
 * holding it.
 */
#ifndef _BLAMER_INTERNAL_H
#define _BLAMER_INTERNAL_H

#include <linux/cred.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <linux/blamer.h>

/*
 * Slab IDs select the slab in mmap(): offset = ID << PAGE_SHIFT. Keeping
 * the offset below 2^31 lets 32-bit userspace pass it as a plain off_t.
 */
#define BLAMER_ID_MAX	((u32)(INT_MAX >> PAGE_SHIFT))

/**
 * struct blamer_buf - the pages of one slab
 * @ref: one reference held by the slab, one by every VMA mapping it
 * @nr_pages: number of entries in @pages
 * @pages: order-0 pages, zeroed, charged to the creator's memory cgroup
 */
struct blamer_buf {
	struct kref ref;
	unsigned long nr_pages;
	struct page *pages[];
};

/**
 * struct blamer_user - live bytes per user, for the max_owner_bytes quota
 * @node: entry in blamer_users
 * @uid: the user (creator's effective uid)
 * @bytes: bytes of live slabs this user created
 * @slabs: live slabs this user created; the entry goes away at zero
 */
struct blamer_user {
	struct list_head node;
	kuid_t uid;
	u64 bytes;
	unsigned long slabs;
};

/**
 * struct blamer_ctx - per open file of /dev/blamer
 * @serial: identifies the file in listings (owner_serial)
 * @slabs: live slabs created through this file
 * @seen_generation: event generation at the caller's last BLAMER_IOC_LIST
 */
struct blamer_ctx {
	u64 serial;
	struct list_head slabs;
	u64 seen_generation;
};

/**
 * struct blamer_slab - one slab and the kernel's facts about it
 * @id: slab ID, the index in blamer_slabs
 * @size: real size in bytes (whole pages)
 * @serial: the owning file's serial, kept after orphaning
 * @buf: the pages, shared with every mapping
 * @ctx: the owning open file while live, NULL once orphaned
 * @node: entry in @ctx->slabs while live, in blamer_orphans once orphaned
 * @user: per-user usage entry charged while live
 * @pid: owner's thread group (reference held)
 * @cred: owner's credentials at creation (reference held)
 * @start_time_ns: owner's process start time, boot-based
 * @create_time_ns: creation time, boot-based
 * @orphan_time_ns: time it became an orphan, boot-based, or 0
 * @exit_status: owner's wait status (as waitpid reports it), if @exited
 * @exited: the owner was seen exiting and @exit_status is valid
 * @comm: owner's command name at creation
 */
struct blamer_slab {
	u32 id;
	u64 size;
	u64 serial;
	struct blamer_buf *buf;
	struct blamer_ctx *ctx;
	struct list_head node;
	struct blamer_user *user;
	struct pid *pid;
	const struct cred *cred;
	u64 start_time_ns;
	u64 create_time_ns;
	u64 orphan_time_ns;
	int exit_status;
	bool exited;
	char comm[TASK_COMM_LEN];
};

/* main.c: module parameters (read with READ_ONCE) */
extern u64 blamer_max_slab_bytes;
extern u64 blamer_max_owner_bytes;
extern u64 blamer_max_total_bytes;
extern u64 blamer_max_orphans;
extern int blamer_reader_gid;

/* slab.c */
extern struct mutex blamer_lock;
extern struct xarray blamer_slabs;
extern wait_queue_head_t blamer_wq;

u64 blamer_generation(void);
void blamer_status(struct blamer_status *st);
int blamer_slab_create(struct blamer_ctx *ctx, u64 length, u32 *idp,
		       u64 *sizep);
void blamer_slab_undo(struct blamer_ctx *ctx, u32 id);
void blamer_ctx_exiting(struct blamer_ctx *ctx);
void blamer_ctx_orphan(struct blamer_ctx *ctx);
int blamer_slab_release(u64 id);
void blamer_slab_fill_info(const struct blamer_slab *slab,
			   const struct blamer_ctx *ctx,
			   struct blamer_slab_info *info);
void blamer_free_all(void);
void blamer_buf_put(struct blamer_buf *buf);

/* perm.c */
bool blamer_may_read(const struct blamer_slab *slab);

/* mmap.c */
int blamer_mmap(struct file *file, struct vm_area_struct *vma);

/* ioctl.c */
long blamer_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* proc.c */
int blamer_proc_init(void);
void blamer_proc_exit(void);

/*
 * vm_flags became read-only in 6.3; the vm_flags_set()/vm_flags_clear()
 * helpers arrived with that change. Some vendor 6.1 trees have them too,
 * so Kbuild probes the headers for them (BLAMER_HAVE_VM_FLAGS_SET) rather
 * than trusting the version number.
 */
static inline void blamer_vm_flags_set(struct vm_area_struct *vma,
				       vm_flags_t flags)
{
#ifdef BLAMER_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

static inline void blamer_vm_flags_clear(struct vm_area_struct *vma,
					 vm_flags_t flags)
{
#ifdef BLAMER_HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

#endif /* _BLAMER_INTERNAL_H */
