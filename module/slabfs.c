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
 * cannot, whatever its mode). Pages are inserted by ->fault (which
 * allocates each at its first touch, unless BLAMER_CREATE_POPULATE
 * allocated them all at creation), and because
 * there is ->page_mkwrite the first write to each page of a shared
 * mapping asks it: it allows only mappings in the creator's address
 * space while the creator lives. So a mapping that reached another
 * address space (fork after MADV_DOFORK) never writes, and after the
 * owner's death nobody does (a CLONE_VM child that outlives it included).
 *
 * Mappings are also VM_DONTCOPY (a child does not inherit them unless
 * the mapper asks with MADV_DOFORK) and VM_DONTEXPAND (no mremap()
 * growth; mlock() leaves them alone). They are ordinary pages otherwise:
 * get_user_pages() works on them, pinned pages stay alive and charged.
 */
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pagemap.h>
#include <linux/pseudo_fs.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "blamer.h"

/* "blam", the filesystem's statfs() type. */
#define BLAMER_FS_MAGIC	0x626c616d

static struct vfsmount *blamer_mnt;

static void blamer_buf_free_pages(struct blamer_buf *buf)
{
	unsigned long i;

	for (i = 0; i < buf->nr_pages; i++)
		if (buf->pages[i])
			__free_page(buf->pages[i]);
	mem_cgroup_put(buf->memcg);
	kvfree(buf);
}

/* The pages are really freed: only now does their charge go. */
static void blamer_buf_free(struct blamer_buf *buf)
{
	struct blamer_user *user = buf->user;
	u64 size = (u64)buf->nr_pages << PAGE_SHIFT;

	blamer_buf_free_pages(buf);
	blamer_user_uncharge(user, size);
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
 * first touch (blamer_fault()), charged to the memory cgroup the caller
 * is in now.
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
	if (!populate) {
		buf->memcg = get_mem_cgroup_from_mm(current->mm);
		return buf;
	}
	for (i = 0; i < nr_pages; i++) {
		buf->pages[i] = alloc_page(BLAMER_GFP | __GFP_ZERO);
		if (!buf->pages[i]) {
			blamer_buf_free_pages(buf);
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

/*
 * Page @pgoff of @buf, allocated if this is its first touch: zeroed,
 * charged to the creator's memory cgroup whoever faults (a reader
 * faulting a hole of another process's slab is neither charged for it
 * nor a candidate for the OOM killer of its own cgroup). As shmem does
 * for a page fault, an allocation above memory.max reclaims and then
 * OOM-kills within that cgroup; a slab that must fail at creation
 * instead is made with BLAMER_CREATE_POPULATE.
 *
 * Two first touches of one page race on the cmpxchg(): the loser frees
 * its page and uses the winner's. The cmpxchg() is also the full barrier
 * blamer_slab_revoke_writers() pairs with.
 */
static struct page *blamer_buf_page(struct blamer_buf *buf, pgoff_t pgoff)
{
	struct mem_cgroup *old_memcg;
	struct page *page, *old;

	page = READ_ONCE(buf->pages[pgoff]);
	if (page)
		return page;
	old_memcg = set_active_memcg(buf->memcg);
	page = alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT | __GFP_ZERO);
	set_active_memcg(old_memcg);
	if (!page)
		return NULL;
	old = cmpxchg(&buf->pages[pgoff], NULL, page);
	if (old) {
		__free_page(page);
		return old;
	}
	return page;
}

static struct blamer_slab *blamer_vma_slab(struct vm_area_struct *vma)
{
	return vma->vm_file->private_data;
}

/*
 * A page of the slab for a mapping, allocated at its first touch. An
 * allocation failure is VM_FAULT_OOM, as for shmem: the fault is retried
 * (or the task dies, if the OOM killer chose it).
 */
static vm_fault_t blamer_fault(struct vm_fault *vmf)
{
	struct blamer_buf *buf = file_inode(vmf->vma->vm_file)->i_private;
	struct page *page;

	if (vmf->pgoff >= buf->nr_pages)
		return VM_FAULT_SIGBUS;
	page = blamer_buf_page(buf, vmf->pgoff);
	if (!page)
		return VM_FAULT_OOM;
	get_page(page);
	vmf->page = page;
	return 0;
}

/*
 * The first write to a page of a shared mapping. Checked under the page
 * lock, which the reaper takes after marking the owner dead: a fault that
 * saw the owner alive has installed its entry by then, and is zapped.
 * Returning with the page locked also skips the core's page->mapping
 * check, meant for page cache pages.
 *
 * A page that was a hole when the reaper looked is not locked by it. The
 * smp_mb() orders this task's read of buf->pages[] in blamer_fault()
 * (whether its own cmpxchg() published the page or it found another
 * task's) before the read of the owner's state here, pairing with the
 * smp_mb() in blamer_slab_revoke_writers(): either the reaper sees the
 * page (and waits for its lock), or this sees the owner dead.
 */
static vm_fault_t blamer_page_mkwrite(struct vm_fault *vmf)
{
	struct blamer_slab *slab = blamer_vma_slab(vmf->vma);

	lock_page(vmf->page);
	/* Pairs with blamer_slab_revoke_writers(): see above. */
	smp_mb();
	if (vmf->vma->vm_mm != slab->mm || !blamer_owner_living(slab->owner)) {
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
		if (current->mm != slab->mm || !blamer_is_owner(slab))
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
 * blamer_slab_revoke_writers - the owner died: no mapping writes any more
 * @slab: an orphan
 *
 * Zaps every page table entry of the slab's mappings, waits out page
 * faults that saw the owner alive (page lock, see blamer_page_mkwrite())
 * on every page present and zaps what they installed. Later write faults
 * find the owner dead. Only needed while a mapping may write: normally
 * the owner's mappings went away with its address space before it was
 * seen dead.
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
	 * The owner was marked dead before this (the exit probe's
	 * cmpxchg() and release store; the queued work orders them too).
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
	blamer_mnt = kern_mount(&blamer_fs_type);
	if (IS_ERR(blamer_mnt))
		return PTR_ERR(blamer_mnt);
	/* Slab mappings are never executable, not even implicitly. */
	blamer_mnt->mnt_flags |= MNT_NOEXEC;
	return 0;
}

/* Module exit: every slab file is closed and every slab freed. */
void blamer_slabfs_exit(void)
{
	kern_unmount(blamer_mnt);
}
