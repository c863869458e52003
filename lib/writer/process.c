// SPDX-License-Identifier: MIT
/*
 * What an application says about its process: its phase, the children
 * it launched and how they ended, and (on demand) its loaded modules.
 * The process record itself is made with the heap (records.c). A child
 * is named by pid and start time, so its record survives PID reuse.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic.h"
#include "internal.h"

int blamer_modules_refresh(struct blamer *b)
{
	int err;

	if (!bl_heap_for(&b, &err))
		return err;
	return bl_modules_record(b);
}

/* The process record of *@bp's heap (made if need be), or NULL with *@err. */
static struct blamer_process *process_rec(struct blamer **bp, int *err)
{
	struct blamer_process *p;
	struct bl_heap *h = bl_heap_for(bp, err);

	if (!h)
		return NULL;
	p = bl_heap_get(h, (*bp)->process, BLAMER_REC_PROCESS, sizeof(*p));
	if (!p)
		*err = bl_error(EIO, "blamer: process record lost");
	return p;
}

int blamer_set_phase(struct blamer *b, uint32_t phase)
{
	struct blamer_process *p;
	int err;

	p = process_rec(&b, &err);
	if (!p)
		return err;
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
	int err;

	if (!bl_heap_for(&b, &err))
		return err;
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
		if (c && c->child_pid == pid &&
		    ld_acquire(A32(&c->state)) == BLAMER_CHILD_RUNNING &&
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
	 * postmortem wants to read (`blamer release` frees it later). Nor
	 * a heap holding series an exporter folds: it is left, closed, for
	 * the exporter (removed, its counts would leave the service's
	 * totals). Its first heap only (seq 0): a later one (made after it
	 * abandoned or closed one) is left to the retention limits. */
	if (b->be.kind == BLAMER_BACKEND_DIR && found->child_start_stamp > 0 &&
	    WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0 && bl_backend_fd_ok(&b->be) &&
	    !bl_slabdir_heap_folds(b->be.dirfd, pid, found->child_start_stamp, 0))
		removed = bl_slabdir_remove_heap(b->be.dirfd, pid, found->child_start_stamp, 0);
	return removed < 0 ? 0 : removed;
}

/* 1..31 printable ASCII bytes (a label of every view and exporter). */
static bool role_name_ok(const char *s, bool may_be_empty)
{
	size_t i;

	if (!s || !*s)
		return may_be_empty;
	for (i = 0; s[i]; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return i < BLAMER_NAME_MAX;
}

int blamer_set_role(struct blamer *b, const char *role, const char *instance)
{
	struct blamer_process *p;
	uint32_t st = BLAMER_ROLE_NONE;
	int err;

	if (!role_name_ok(role, false) || !role_name_ok(instance, true))
		return bl_error(EINVAL, "blamer: a role of 1..%u and an instance of 0..%u "
				"printable ASCII bytes", BLAMER_NAME_MAX - 1, BLAMER_NAME_MAX - 1);
	if (!instance)
		instance = "";
	p = process_rec(&b, &err);
	if (!p)
		return err;
	/* Once per heap: whoever moves NONE -> WRITING writes both names,
	 * then SET with release (readers show them only then). */
	if (atomic_compare_exchange_strong_explicit(A32(&p->role_state), &st, BLAMER_ROLE_WRITING,
						    memory_order_acquire, memory_order_acquire)) {
		strncpy(p->role, role, sizeof(p->role) - 1);
		strncpy(p->instance, instance, sizeof(p->instance) - 1);
		st_release(A32(&p->role_state), BLAMER_ROLE_SET);
		return 0;
	}
	if (st != BLAMER_ROLE_SET)
		return bl_error(EAGAIN, "blamer: another thread is setting the role");
	if (!strncmp(p->role, role, sizeof(p->role)) &&
	    !strncmp(p->instance, instance, sizeof(p->instance)))
		return 0;
	return bl_error(EEXIST, "blamer: this heap's role is already %.31s/%.31s", p->role,
			p->instance);
}
