// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: mapping slabs.
 *
 * The offset names the slab (ID << PAGE_SHIFT); a mapping starts at the
 * slab's first page and may not be longer than the slab. Only the owning
 * open file maps writable; every other permitted reader gets a mapping
 * whose VM_MAYWRITE is cleared, so mprotect() cannot make it writable.
 * Every mapping is:
 *  - VM_DONTEXPAND: mremap() cannot grow it;
 *  - unsplittable (->may_split): no partial munmap/mprotect/mremap;
 *  - VM_DONTCOPY: a child does not inherit it across fork(), and VM_IO
 *    makes that permanent (MADV_DOFORK refuses VM_IO mappings); VM_IO
 *    also keeps get_user_pages() (process_vm_readv, /proc/PID/mem, ptrace
 *    peeks) and core dumps away from slab memory;
 *  - never executable.
 * The pages are inserted with vm_insert_pages(), which takes a reference
 * on each page, and each VMA holds a reference on the page array, so a
 * mapping outlives the slab safely (and ->fault can always hand the same
 * page back after MADV_DONTNEED).
 */
#include <linux/fs.h>
#include <linux/mm.h>

#include "blamer.h"

static void blamer_vm_open(struct vm_area_struct *vma)
{
	struct blamer_buf *buf = vma->vm_private_data;

	kref_get(&buf->ref);
}

static void blamer_vm_close(struct vm_area_struct *vma)
{
	blamer_buf_put(vma->vm_private_data);
}

static int blamer_vm_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

/*
 * Every page is inserted at mmap time; a fault only happens after the
 * process zapped its own page table entries (MADV_DONTNEED). Hand the
 * same page back, so the mapping keeps showing the slab, not SIGBUS.
 */
static vm_fault_t blamer_vm_fault(struct vm_fault *vmf)
{
	struct blamer_buf *buf = vmf->vma->vm_private_data;
	unsigned long i = vmf->pgoff - vmf->vma->vm_pgoff;

	if (i >= buf->nr_pages)
		return VM_FAULT_SIGBUS;
	vmf->page = buf->pages[i];
	get_page(vmf->page);
	return 0;
}

static const struct vm_operations_struct blamer_vm_ops = {
	.open = blamer_vm_open,
	.close = blamer_vm_close,
	.may_split = blamer_vm_may_split,
	.fault = blamer_vm_fault,
};

/**
 * blamer_mmap - map a slab
 * @file: an open /dev/blamer
 * @vma: the new mapping; vm_pgoff is the slab ID
 *
 * Return: 0, -EINVAL for a private mapping or one longer than the slab,
 * -ENXIO for an offset that names no slab, -EACCES if the caller may not
 * read the slab, -EPERM for a writable mapping by a non-owner or any
 * executable mapping.
 */
int blamer_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct blamer_ctx *ctx = file->private_data;
	unsigned long nr_pages = vma_pages(vma);
	struct blamer_slab *slab = NULL;
	struct blamer_buf *buf;
	bool owner;
	int err;

	/* do_mmap() drops VM_SHARED for read-only fds; VM_MAYSHARE stays. */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;

	mutex_lock(&blamer_lock);
	if (vma->vm_pgoff && vma->vm_pgoff <= BLAMER_ID_MAX)
		slab = xa_load(&blamer_slabs, vma->vm_pgoff);
	if (!slab) {
		err = -ENXIO;
		goto unlock;
	}
	if (nr_pages > slab->size >> PAGE_SHIFT) {
		err = -EINVAL;
		goto unlock;
	}
	owner = slab->ctx == ctx;
	if (!owner && !blamer_may_read(slab)) {
		err = -EACCES;
		goto unlock;
	}
	if (!owner && (vma->vm_flags & VM_WRITE)) {
		err = -EPERM;
		goto unlock;
	}
	buf = slab->buf;
	kref_get(&buf->ref);
	mutex_unlock(&blamer_lock);

	blamer_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTCOPY | VM_IO);
	blamer_vm_flags_clear(vma, VM_MAYEXEC | (owner ? 0 : VM_MAYWRITE));
	err = vm_insert_pages(vma, vma->vm_start, buf->pages, &nr_pages);
	if (err) {
		/* Inserted pages are zapped by the caller's unmap. */
		blamer_buf_put(buf);
		return err;
	}
	vma->vm_private_data = buf;
	vma->vm_ops = &blamer_vm_ops;
	return 0;

unlock:
	mutex_unlock(&blamer_lock);
	return err;
}
