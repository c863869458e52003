// SPDX-License-Identifier: MIT
/*
 * The process record (identity, command line, phase) and the records a
 * parent keeps about its children. Identity survives PID reuse: a record
 * is (pid, start time), and data_id is set last so a half-made record
 * never passes for a valid one.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic.h"
#include "context.h"

#define PROCESS_DATA_BYTES	4096u
#define GLOBAL_DATA_BYTES	4096u

static void read_cmdline(struct blamer_process *p)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	n = read(fd, p->cmdline, sizeof(p->cmdline));
	close(fd);
	if (n > 0)
		p->cmdline_len = (uint32_t)n;
}

int bl_process_create(struct blamer *b)
{
	struct bl_heap *h = &b->heap;
	struct blamer_process *p;
	struct blamer_log *log;
	blamer_ref ref;
	int err = 0;

	/* Made directly with the allocator: bl_record_new would call
	 * bl_ready(), and the heap is not READY for others yet. */
	ref = bl_heap_alloc(h, sizeof(*p), BLAMER_REC_PROCESS, &err);
	if (!ref)
		return bl_error(err, "blamer: cannot allocate the process record");
	p = bl_ptr(h, ref);
	read_cmdline(p);
	/* Relaxed: published with the record (owner release, list append). */
	st_relaxed(A32(&p->phase), BLAMER_PHASE_LAUNCHED);
	b->process = ref;
	b->global_data = bl_userdata_new(b, BLAMER_DATA_GLOBAL, GLOBAL_DATA_BYTES);
	b->process_data = bl_userdata_new(b, BLAMER_DATA_PROCESS, PROCESS_DATA_BYTES);
	b->log = bl_heap_alloc(h, sizeof(*log) + b->log_slots * sizeof(struct blamer_log_slot),
			       BLAMER_REC_LOG, &err);
	if (!b->global_data || !b->process_data || !b->log)
		return bl_error(ENOSPC, "blamer: slab too small for the process records");
	log = bl_ptr(h, b->log);
	log->slot_count = b->log_slots;
	bl_owner_set(b, &log->owner);
	bl_heap_make_iterable(h, b->log);
	p->user_data = b->process_data;
	p->global_data = b->global_data;
	p->log = b->log;
	bl_owner_set(b, &p->owner);
	if (!bl_heap_make_iterable(h, ref))
		return bl_error(EIO, "blamer: the new heap is corrupt");
	/* Release: a reader that finds the process ref finds it complete. */
	st_release(A64(&h->hh->process), ref);
	return 0;
}

int blamer_set_phase(struct blamer *b, uint32_t phase)
{
	struct blamer_process *p;
	struct bl_heap *h;
	int err;

	h = bl_heap_for(&b, &err);
	if (!h)
		return err;
	p = bl_heap_get(h, b->process, BLAMER_REC_PROCESS, sizeof(*p));
	if (!p)
		return bl_error(EIO, "blamer: process record lost");
	/* Release: a phase is one word; nothing else to publish, but readers
	 * load it with acquire so keep the pair. */
	st_release(A32(&p->phase), phase);
	return 0;
}

int blamer_process_launched(struct blamer *b, pid_t pid)
{
	struct blamer_child *c;
	int64_t stamp;
	blamer_ref ref;

	b = bl_ctx(b);
	if (!b)
		return -ENODEV;
	if (pid <= 0)
		return bl_error(EINVAL, "blamer: bad pid %d", (int)pid);
	/* The child exists (or is a zombie) until we reap it: its start time
	 * is readable now and identifies it for blamer_process_exited(). */
	stamp = bl_proc_start_ns(pid);
	ref = bl_record_new(b, BLAMER_REC_CHILD, sizeof(*c), true);
	if (!ref)
		return -ENOSPC;
	c = bl_ptr(&b->heap, ref);
	c->child_pid = pid;
	c->child_start_stamp = stamp > 0 ? stamp : 0;
	c->launch_time_ns = bl_realtime_ns();
	/* Relaxed: published by bl_owner_set()'s release just below. */
	st_relaxed(A32(&c->state), BLAMER_CHILD_RUNNING);
	bl_owner_set(b, &c->owner);
	return 0;
}

int blamer_process_exited(struct blamer *b, pid_t pid, int wait_status)
{
	struct blamer_child *c, *found = NULL;
	struct bl_iter it = { 0 };
	struct bl_heap *h;
	int err;
	blamer_ref ref;
	uint32_t type;
	int removed = 0;

	h = bl_heap_for(&b, &err);
	if (!h)
		return err;
	/* The most recent running record of this pid: the latest launch. */
	while ((ref = bl_heap_next(h, &it, &type))) {
		if (type != BLAMER_REC_CHILD)
			continue;
		c = bl_heap_get(h, ref, BLAMER_REC_CHILD, sizeof(*c));
		if (c && c->child_pid == pid && ld_acquire(A32(&c->state)) == BLAMER_CHILD_RUNNING &&
		    ld_acquire(A32(&c->owner.data_id)))
			found = c;
	}
	if (!found)
		return bl_error(ESRCH, "blamer: no launch record for pid %d", (int)pid);
	found->exit_status = wait_status;
	found->exit_time_ns = bl_realtime_ns();
	/* Release: readers that see "exited" see status and time. */
	st_release(A32(&found->state), BLAMER_CHILD_EXITED);
	/* Dir backend: the child's heap files are ours to clean up, but only
	 * the files of that very process (pid AND start time): a reused pid
	 * with another start time is another process. And only after a
	 * clean exit: the heap of a child that crashed or failed is what a
	 * postmortem wants to read (`blamer release` frees it later). */
	if (b->be.kind == BLAMER_BACKEND_DIR && found->child_start_stamp > 0 &&
	    WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0)
		removed = bl_slabdir_remove_heap(b->be.dirfd, pid, found->child_start_stamp);
	return removed < 0 ? 0 : removed;
}
