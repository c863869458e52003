// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: who may read a slab.
 *
 * ptrace_may_access() is not exported to modules, so this is our own rule,
 * modelled on __ptrace_may_access() (PTRACE_MODE_READ_FSCREDS) but without
 * the dumpable check and without LSM hooks (Yama's ptrace_scope does not
 * apply). The owner's credentials are those it had when it created the
 * slab.
 *
 *  - the owner's own thread group may read its live slabs;
 *  - while the owner process lives: the caller's fsuid must equal the
 *    owner's uid, euid and suid, and its fsgid the owner's gid, egid and
 *    sgid, as ptrace requires;
 *  - once the owner process is gone, or the slab is an orphan: the caller's
 *    fsuid equal to the owner's uid or euid is enough;
 *  - always: CAP_SYS_PTRACE in the owner's user namespace, or membership in
 *    the group named by the reader_gid module parameter.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/uidgid.h>

#include "blamer.h"

static bool blamer_same_ids(const struct cred *reader,
			    const struct cred *owner)
{
	return uid_eq(reader->fsuid, owner->euid) &&
	       uid_eq(reader->fsuid, owner->suid) &&
	       uid_eq(reader->fsuid, owner->uid) &&
	       gid_eq(reader->fsgid, owner->egid) &&
	       gid_eq(reader->fsgid, owner->sgid) &&
	       gid_eq(reader->fsgid, owner->gid);
}

static bool blamer_same_user(const struct cred *reader,
			     const struct cred *owner)
{
	return uid_eq(reader->fsuid, owner->uid) ||
	       uid_eq(reader->fsuid, owner->euid);
}

static bool blamer_reader_group(void)
{
	int gid = READ_ONCE(blamer_reader_gid);
	kgid_t kgid;

	if (gid < 0)
		return false;
	kgid = make_kgid(&init_user_ns, gid);
	return gid_valid(kgid) && in_group_p(kgid);
}

/**
 * blamer_may_read - may the current task map @slab read-only?
 * @slab: the slab; blamer_lock is held
 *
 * Return: true if permitted.
 */
bool blamer_may_read(const struct blamer_slab *slab)
{
	const struct cred *reader = current_cred();
	const struct cred *owner = slab->cred;
	bool owner_alive = slab->ctx && pid_has_task(slab->pid, PIDTYPE_TGID);

	lockdep_assert_held(&blamer_lock);
	if (task_tgid(current) == slab->pid && owner_alive)
		return true;
	if (owner_alive ? blamer_same_ids(reader, owner) :
			  blamer_same_user(reader, owner))
		return true;
	if (ns_capable_noaudit(owner->user_ns, CAP_SYS_PTRACE))
		return true;
	return blamer_reader_group();
}
