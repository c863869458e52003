// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: a slab's pages, its inode and its files.
 *
 * Each slab has an inode of a small internal filesystem (as secretmem and
 * dma-buf have) that holds its pages; BLAMER_IOC_CREATE and
 * BLAMER_IOC_OPEN hand out files of it. So:
 *  - a file of a slab reads like a file: fstat() gives its size, offset 0
 *    of mmap() is its first byte, a mapping may start at any page of it;
 *  - a read-only file cannot map writable, by the VFS's own rules
 *    (PROT_WRITE is EACCES and VM_MAYWRITE is cleared, so mprotect()
 *    cannot add it);
 *  - the mount is noexec: PROT_EXEC is refused by the VFS and
 *    READ_IMPLIES_EXEC does not add it;
 *  - every mapping holds a file and so the inode and its pages: releasing
 *    or evicting a slab never frees mapped memory, and the pages stay
 *    charged to their account until they are really freed;
 *  - every mapping of a slab hangs off its inode's i_mapping, so the
 *    writers' page table entries can be zapped when the owner dies.
 *
 * Write access: a writable file is only handed to the creator, and only
 * the creator's address space may map it (an inherited or passed copy
 * cannot, whatever its mode). Pages are inserted by ->fault, and because
 * there is ->page_mkwrite the first write to each page of a shared
 * mapping asks it: it allows only mappings in the creator's address
 * space while the creator lives. So a mapping that reached another
 * address space (fork after MADV_DOFORK) never writes, and after the
 * owner's death nobody does (a CLONE_VM child that outlives it included).
 *
 * Who pays for a page: only a mapping that may write the slab (in the
 * creator's address space, while the creator lives) allocates one, at
 * its first touch (unless BLAMER_CREATE_POPULATE allocated them all at
 * creation), charged to the memory cgroup of the task touching it: the
 * creator, or a process sharing its address space. Every other mapping,
 * a reader's above all, finds a page that was never written as a hole
 * and maps one shared zeroed page, blamer_hole, which nothing writes. So
 * a reader never allocates, never waits on anyone's memory cgroup and
 * never gets VM_FAULT_OOM for someone else's memory: an orphan whose
 * creator's cgroup is at memory.max, with nothing left in it to kill,
 * reads as it is. When the creator later writes a page that readers
 * mapped as a hole, it takes the hole page out of their page tables
 * (blamer_buf_fill()), and their next read faults the real page in.
 *
 * Pages outlive their slab where something else holds them (a pipe that
 * vmsplice() filled, a get_user_pages() pin): when the slab's last file
 * goes, such pages linger, still charged to their account, until the
 * holder lets go (blamer_linger_scan()).
 *
 * Mappings are also VM_DONTCOPY (a child does not inherit them unless
 * the mapper asks with MADV_DOFORK) and VM_DONTEXPAND (no mremap()
 * growth; mlock() leaves them alone). They are ordinary pages otherwise:
 * get_user_pages() works on them, pinned pages stay alive and charged.
 */
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pagemap.h>
#include <linux/pseudo_fs.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "blamer.h"

/* "blam", the filesystem's statfs() type. */
#define BLAMER_FS_MAGIC	0x626c616d

static struct vfsmount *blamer_mnt;

/* What every mapping but a writer's maps for a page never written. */
static struct page *blamer_hole;

/*
 * Buffers whose slab is gone but some of whose pages another holder
 * still has, under blamer_linger_lock; rescanned every second.
 */
static LIST_HEAD(blamer_lingering);
static DEFINE_SPINLOCK(blamer_linger_lock);
static void blamer_linger_work_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(blamer_linger_work, blamer_linger_work_fn);

/*
 * Free the pages of @buf that nobody else holds, or all of them if @all
 * (module exit: our references go, the holders' stay), and uncharge them
 * and the holes. The pages left move to the front of @buf->pages, whose
 * offsets mean nothing any more (no mapping is left), so a rescan costs
 * what is still held. Return: the pages left.
 *
 * Our reference is the last one when the count is 1: no mapping is left
 * (mappings hold the inode), and a holder that could take another one
 * holds one already. A speculative reference taken meanwhile (a pfn
 * walker's) only delays the real free to its put_page().
 */
static unsigned long blamer_buf_release_pages(struct blamer_buf *buf,
					      bool all)
{
	unsigned long i, kept = 0;
	struct page *page;

	for (i = 0; i < buf->nr_pages; i++) {
		page = buf->pages[i];
		buf->pages[i] = NULL;
		if (page && !all && page_ref_count(page) > 1)
			buf->pages[kept++] = page;
		else if (page)
			__free_page(page);
	}
	blamer_user_uncharge_bytes(buf->user,
				   (u64)(buf->nr_pages - kept) << PAGE_SHIFT);
	buf->nr_pages = kept;
	return kept;
}

/* Rescan the lingering buffers: the work, and a create above a limit. */
void blamer_linger_scan(void)
{
	struct blamer_buf *buf, *tmp;
	LIST_HEAD(done);
	LIST_HEAD(scan);

	spin_lock(&blamer_linger_lock);
	list_splice_init(&blamer_lingering, &scan);
	spin_unlock(&blamer_linger_lock);
	list_for_each_entry_safe(buf, tmp, &scan, linger) {
		if (!blamer_buf_release_pages(buf, false))
			list_move(&buf->linger, &done);
	}
	spin_lock(&blamer_linger_lock);
	list_splice(&scan, &blamer_lingering);
	if (!list_empty(&blamer_lingering))
		mod_delayed_work(system_unbound_wq, &blamer_linger_work, HZ);
	spin_unlock(&blamer_linger_lock);
	list_for_each_entry_safe(buf, tmp, &done, linger) {
		blamer_user_put(buf->user);
		kvfree(buf);
	}
}

static void blamer_linger_work_fn(struct work_struct *work)
{
	blamer_linger_scan();
}

/*
 * The slab's last file is gone: free its pages, uncharging each as it
 * really goes. Pages someone else still holds linger (see above).
 */
static void blamer_buf_free(struct blamer_buf *buf)
{
	if (!blamer_buf_release_pages(buf, false)) {
		blamer_user_put(buf->user);
		kvfree(buf);
		return;
	}
	spin_lock(&blamer_linger_lock);
	list_add_tail(&buf->linger, &blamer_lingering);
	mod_delayed_work(system_unbound_wq, &blamer_linger_work, HZ);
	spin_unlock(&blamer_linger_lock);
}

static void blamer_evict_inode(struct inode *inode)
{
	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
	if (inode->i_private)
		blamer_buf_free(inode->i_private);
}

static const struct super_operations blamer_sops = {
	.statfs = simple_statfs,
	.evict_inode = blamer_evict_inode,
};

/*
 * The array of a slab's pages, and with @populate every page:
 * order-0, zeroed (no stale data reaches userspace), charged to the
 * caller's memory cgroup, failing quietly rather than invoking the OOM
 * killer: the caller sees -ENOMEM. Without @populate the pages come at
 * first touch (blamer_fault()).
 */
static struct blamer_buf *blamer_buf_alloc(unsigned long nr_pages,
					   struct blamer_user *user,
					   bool populate)
{
	struct blamer_buf *buf;
	unsigned long i;

	buf = kvzalloc(struct_size(buf, pages, nr_pages), BLAMER_GFP);
	if (!buf)
		return NULL;
	buf->user = user;
	buf->nr_pages = nr_pages;
	INIT_LIST_HEAD(&buf->linger);
	for (i = 0; populate && i < nr_pages; i++) {
		buf->pages[i] = alloc_page(BLAMER_GFP | __GFP_ZERO);
		if (!buf->pages[i]) {
			while (i--)
				__free_page(buf->pages[i]);
			kvfree(buf);
			return NULL;
		}
	}
	return buf;
}

/**
 * blamer_slab_inode - an inode holding @size bytes of zeroed pages
 * @size: whole pages
 * @user: the account charged for them by blamer_user_charge(); the
 *	inode takes over the charge and its reference, also on failure
 * @populate: allocate every page now rather than at first touch
 *
 * Return: the inode or an ERR_PTR.
 */
struct inode *blamer_slab_inode(u64 size, struct blamer_user *user,
				bool populate)
{
	struct blamer_buf *buf;
	struct inode *inode;

	buf = blamer_buf_alloc(size >> PAGE_SHIFT, user, populate);
	if (!buf) {
		blamer_user_uncharge(user, size);
		return ERR_PTR(-ENOMEM);
	}
	inode = alloc_anon_inode(blamer_mnt->mnt_sb);
	if (IS_ERR(inode)) {
		blamer_buf_free(buf);
		return inode;
	}
	inode->i_private = buf;
	inode->i_size = size;
	return inode;
}

static struct blamer_slab *blamer_vma_slab(struct vm_area_struct *vma)
{
	return vma->vm_file->private_data;
}

/*
 * May a fault through @vma give the slab a page? Only a mapping that may
 * write it: in the creator's address space, writable, while the creator
 * lives (what blamer_page_mkwrite() allows). Anyone else maps a hole.
 */
static bool blamer_may_fill(struct vm_area_struct *vma,
			    const struct blamer_slab *slab)
{
	return vma->vm_mm == slab->mm && (vma->vm_flags & VM_MAYWRITE) &&
	       blamer_slab_writable(slab);
}

/*
 * Page @pgoff of @buf for a writer, allocated at its first touch:
 * zeroed, charged to the memory cgroup of the task touching it (the
 * creator or a process sharing its address space). As shmem does for a
 * page fault, an allocation above memory.max reclaims and then OOM-kills
 * within that cgroup, which holds the writer itself; a slab that must
 * fail at creation instead is made with BLAMER_CREATE_POPULATE.
 *
 * Two first touches of one page race on the cmpxchg(): the loser frees
 * its page and uses the winner's. The cmpxchg() is also the full barrier
 * blamer_slab_revoke_writers() and blamer_hole_fault() pair with. The
 * winner takes the hole page out of every mapping of this offset if a
 * reader ever mapped a hole of @buf: either it sees @buf->holes set, or
 * that reader sees the new page. The hole page's lock waits out a reader
 * between those two reads and its page table entry (the core keeps the
 * page locked until the entry is in), so the zap comes after it.
 */
static struct page *blamer_buf_fill(struct blamer_buf *buf,
				    struct address_space *mapping,
				    pgoff_t pgoff)
{
	struct page *page, *old;

	page = alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT | __GFP_ZERO);
	if (!page)
		return NULL;
	old = cmpxchg(&buf->pages[pgoff], NULL, page);
	if (old) {
		__free_page(page);
		return old;
	}
	if (READ_ONCE(buf->holes)) {
		lock_page(blamer_hole);
		unlock_page(blamer_hole);
		unmap_mapping_pages(mapping, pgoff, 1, false);
	}
	return page;
}

/*
 * A page never written, for a mapping that may not fill it: the shared
 * hole page, read-only to everyone, returned locked (see
 * blamer_buf_fill()). A page published meanwhile is mapped instead.
 */
static vm_fault_t blamer_hole_fault(struct vm_fault *vmf,
				    struct blamer_buf *buf)
{
	struct page *page;

	lock_page(blamer_hole);
	WRITE_ONCE(buf->holes, true);
	/* Pairs with the cmpxchg() in blamer_buf_fill(). */
	smp_mb();
	page = READ_ONCE(buf->pages[vmf->pgoff]);
	if (page) {
		unlock_page(blamer_hole);
		get_page(page);
		vmf->page = page;
		return 0;
	}
	get_page(blamer_hole);
	vmf->page = blamer_hole;
	return VM_FAULT_LOCKED;
}

/*
 * A page of the slab for a mapping. A writer's first touch allocates it;
 * failing that is VM_FAULT_OOM, as for shmem: the fault is retried (or
 * the task dies, if the OOM killer chose it). Nobody else allocates, so
 * nobody else can get VM_FAULT_OOM here.
 */
static vm_fault_t blamer_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct inode *inode = file_inode(vma->vm_file);
	struct blamer_buf *buf = inode->i_private;
	struct page *page;

	if (vmf->pgoff >= buf->nr_pages)
		return VM_FAULT_SIGBUS;
	page = READ_ONCE(buf->pages[vmf->pgoff]);
	if (!page) {
		if (!blamer_may_fill(vma, blamer_vma_slab(vma)))
			return blamer_hole_fault(vmf, buf);
		page = blamer_buf_fill(buf, inode->i_mapping, vmf->pgoff);
		if (!page)
			return VM_FAULT_OOM;
	}
	get_page(page);
	vmf->page = page;
	return 0;
}

/*
 * The first write to a page of a shared mapping. Checked under the page
 * lock, which the reaper takes after the owner was marked dead or its
 * exec recorded: a fault that saw the slab writable has installed its
 * entry by then, and is zapped.
 * Returning with the page locked also skips the core's page->mapping
 * check, meant for page cache pages.
 *
 * A page that was a hole when the reaper looked is not locked by it. The
 * smp_mb() orders this task's read of buf->pages[] in blamer_fault()
 * (whether its own cmpxchg() published the page or it found another
 * task's) before the read of the owner's state here, pairing with the
 * smp_mb() in blamer_slab_revoke_writers(): either the reaper sees the
 * page (and waits for its lock), or this sees the owner dead or
 * elsewhere.
 */
static vm_fault_t blamer_page_mkwrite(struct vm_fault *vmf)
{
	struct blamer_slab *slab = blamer_vma_slab(vmf->vma);

	/* Only a mapping that may not write was given the hole. */
	if (vmf->page == blamer_hole)
		return VM_FAULT_SIGBUS;
	lock_page(vmf->page);
	/* Pairs with blamer_slab_revoke_writers(): see above. */
	smp_mb();
	if (vmf->vma->vm_mm != slab->mm || !blamer_slab_writable(slab)) {
		unlock_page(vmf->page);
		return VM_FAULT_SIGBUS;
	}
	return VM_FAULT_LOCKED;
}

static const struct vm_operations_struct blamer_vm_ops = {
	.fault = blamer_fault,
	.page_mkwrite = blamer_page_mkwrite,
};

/**
 * blamer_slab_mmap - map a slab
 * @file: a file of the slab
 * @vma: the new mapping
 *
 * Return: 0, -EPERM for a writable file mapped by anyone but its live
 * creator, -EACCES for a read-only file if the caller may not read the
 * slab, -EINVAL for a private mapping or one beyond the slab's end.
 */
static int blamer_slab_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct blamer_slab *slab = file->private_data;
	unsigned long nr = slab->size >> PAGE_SHIFT;
	struct blamer_ident me;

	if (file->f_mode & FMODE_WRITE) {
		if (!blamer_is_owner(slab))
			return -EPERM;
	} else {
		blamer_ident_current(&me);
		if (!blamer_may_read(&me, slab, true))
			return -EACCES;
	}
	/* do_mmap() drops VM_SHARED for read-only files; VM_MAYSHARE stays. */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_pgoff >= nr || vma_pages(vma) > nr - vma->vm_pgoff)
		return -EINVAL;
	blamer_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTCOPY);
	vma->vm_ops = &blamer_vm_ops;
	return 0;
}

static int blamer_slab_file_release(struct inode *inode, struct file *file)
{
	blamer_slab_put(file->private_data);
	return 0;
}

static const struct file_operations blamer_slab_fops = {
	.owner = THIS_MODULE,
	.mmap = blamer_slab_mmap,
	.release = blamer_slab_file_release,
	.llseek = noop_llseek,
};

/**
 * blamer_slab_file - a new file of @slab
 * @slab: the slab; the file takes a reference
 * @flags: O_RDWR (for its creator) or O_RDONLY
 *
 * Return: the file or an ERR_PTR.
 */
struct file *blamer_slab_file(struct blamer_slab *slab, int flags)
{
	char name[24];
	struct file *file;

	snprintf(name, sizeof(name), "blamer:%u", slab->id);
	/*
	 * The file's f_op pins the module until __fput() drops it; the
	 * caller's /dev/blamer file pins it now, so this cannot fail.
	 */
	__module_get(THIS_MODULE);
	ihold(slab->inode);
	file = alloc_file_pseudo(slab->inode, blamer_mnt, name, flags,
				 &blamer_slab_fops);
	if (IS_ERR(file)) {
		iput(slab->inode);
		module_put(THIS_MODULE);
		return file;
	}
	blamer_slab_get(slab);
	file->private_data = slab;
	return file;
}

/**
 * blamer_slab_revoke_writers - the owner died or exec'd: no mapping
 *	writes any more
 * @slab: an orphan, or a slab made in an address space its owner left
 *
 * Zaps every page table entry of the slab's mappings, waits out page
 * faults that saw the slab writable (page lock, see
 * blamer_page_mkwrite()) on every page present and zaps what they
 * installed. Later write faults find the owner dead or elsewhere
 * (blamer_slab_writable()). Only needed while a mapping may write:
 * normally the owner's mappings went away with its address space before
 * it was seen dead or exec'd.
 */
void blamer_slab_revoke_writers(struct blamer_slab *slab)
{
	struct address_space *mapping = slab->inode->i_mapping;
	struct blamer_buf *buf = slab->inode->i_private;
	struct page *page;
	unsigned long i;

	if (!mapping_writably_mapped(mapping))
		return;
	unmap_mapping_range(mapping, 0, 0, 1);
	/*
	 * The owner was marked dead, or its new address space recorded,
	 * before this (the probes' stores; the queued work orders them).
	 * A hole may get its page from a fault at any moment. This
	 * smp_mb() orders the mark before the reads of pages[] below and
	 * pairs with the one in blamer_page_mkwrite() (the publisher's
	 * cmpxchg() is a full barrier as well): a page read here as NULL
	 * was published after this read, so its write fault sees the
	 * owner dead and fails; a page published before is read here and
	 * its lock waited for.
	 */
	smp_mb();
	for (i = 0; i < buf->nr_pages; i++) {
		page = READ_ONCE(buf->pages[i]);
		if (!page)
			continue;
		lock_page(page);
		unlock_page(page);
	}
	unmap_mapping_range(mapping, 0, 0, 1);
}

static int blamer_init_fs_context(struct fs_context *fc)
{
	struct pseudo_fs_context *ctx = init_pseudo(fc, BLAMER_FS_MAGIC);

	if (!ctx)
		return -ENOMEM;
	ctx->ops = &blamer_sops;
	return 0;
}

static struct file_system_type blamer_fs_type = {
	.name = "blamer",
	.init_fs_context = blamer_init_fs_context,
	.kill_sb = kill_anon_super,
};

int blamer_slabfs_init(void)
{
	blamer_hole = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!blamer_hole)
		return -ENOMEM;
	blamer_mnt = kern_mount(&blamer_fs_type);
	if (IS_ERR(blamer_mnt)) {
		__free_page(blamer_hole);
		return PTR_ERR(blamer_mnt);
	}
	/* Slab mappings are never executable, not even implicitly. */
	blamer_mnt->mnt_flags |= MNT_NOEXEC;
	return 0;
}

/*
 * Module exit: every slab file is closed and every slab freed. Pages that
 * other holders still have lose our references and their charge (the
 * accounts go with the module); the holders free them.
 */
void blamer_slabfs_exit(void)
{
	struct blamer_buf *buf, *tmp;

	kern_unmount(blamer_mnt);
	cancel_delayed_work_sync(&blamer_linger_work);
	list_for_each_entry_safe(buf, tmp, &blamer_lingering, linger) {
		list_del(&buf->linger);
		blamer_buf_release_pages(buf, true);
		blamer_user_put(buf->user);
		kvfree(buf);
	}
	__free_page(blamer_hole);
}
