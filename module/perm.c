// SPDX-License-Identifier: GPL-2.0
/*
 * blamer: who may read a slab.
 *
 * ptrace_may_access() is not exported to modules, so this is
 * __ptrace_may_access() (PTRACE_MODE_READ_FSCREDS) restated against the
 * creator as it was when it created the slab, for live slabs and orphans
 * alike:
 *
 *  1. the creating process itself may read its slabs, while it runs the
 *     program that created them (the same address space): after an
 *     execve() it is another program and the rules below apply to it, so
 *     privilege held at creation (a setuid creator that then dropped its
 *     ids and exec'd) is needed for every later read;
 *  2. a slab whose creator is not visible in the reader's pid namespace
 *     is readable only with CAP_SYS_PTRACE in the initial user namespace;
 *  3. members of the reader_gid group may read every visible slab;
 *  4. otherwise the reader's fsuid must equal the creator's uid, euid and
 *     suid and its fsgid the creator's gid, egid and sgid, and the reader
 *     be in the creator's user namespace with every capability the
 *     creator was permitted in its effective set (the capability rule
 *     of cap_ptrace_access_check(), which commoncap applies whatever
 *     other LSMs are loaded: a service given ambient capabilities, or a
 *     sandbox in a user namespace of its own, is not open to every
 *     process of its uid); or it needs CAP_SYS_PTRACE in the creator's
 *     user namespace;
 *  5. and if the creator's address space is not dumpable (it ran a setuid
 *     or setgid program, changed its ids, or said PR_SET_DUMPABLE 0; for
 *     an orphan, as it was when the process died), the reader needs
 *     CAP_SYS_PTRACE in that address space's user namespace.
 *
 * LSM and Yama ptrace policies are not applied. Capabilities exercised to
 * open, map or release a slab are audited; those merely filtering a
 * listing are not, as /proc does for its listings.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/sched/coredump.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>

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

/* The reader holds every capability the creator had, in its namespace. */
static bool blamer_caps_cover(const struct cred *reader,
			      const struct cred *owner)
{
	return reader->user_ns == owner->user_ns &&
	       cap_issubset(owner->cap_permitted, reader->cap_effective);
}

bool blamer_in_reader_group(void)
{
	int gid = READ_ONCE(blamer_reader_gid);
	kgid_t kgid;

	if (gid < 0)
		return false;
	kgid = make_kgid(&init_user_ns, gid);
	return gid_valid(kgid) && in_group_p(kgid);
}

/* Is @ns @ancestor or below it? */
static bool blamer_userns_within(const struct user_namespace *ns,
				 const struct user_namespace *ancestor)
{
	while (ns->level > ancestor->level)
		ns = ns->parent;
	return ns == ancestor;
}

/*
 * cap_capable()'s ownership rule on saved credentials: the owner of a
 * user namespace made in @cred's has every capability in it and below.
 */
static bool blamer_owns_userns(const struct cred *cred,
			       const struct user_namespace *ns)
{
	for (; ns->level > cred->user_ns->level; ns = ns->parent)
		if (ns->parent == cred->user_ns && uid_eq(ns->owner, cred->euid))
			return true;
	return false;
}

static bool blamer_capable(const struct blamer_ident *id,
			   struct user_namespace *ns, bool audit)
{
	if (id->live)
		return audit ? ns_capable(ns, CAP_SYS_PTRACE) :
			       ns_capable_noaudit(ns, CAP_SYS_PTRACE);
	/* A subset of what cap_capable() would allow: never more. */
	return id->priv_all ||
	       (id->priv_own && blamer_userns_within(ns, id->cred->user_ns)) ||
	       blamer_owns_userns(id->cred, ns);
}

static bool blamer_group(const struct blamer_ident *id)
{
	return id->live ? blamer_in_reader_group() : id->group;
}

/**
 * blamer_may_read - may @id read @slab?
 * @id: the asker
 * @slab: the slab
 * @audit: the answer is acted on (open, map, release): audit capability
 *	checks
 *
 * Return: true if permitted.
 */
bool blamer_may_read(const struct blamer_ident *id,
		     const struct blamer_slab *slab, bool audit)
{
	const struct cred *owner = slab->cred;
	bool ids, dumpable;

	if (id->tgid == slab->owner->pid && id->mm == slab->mm)
		return true;
	if (!pid_nr_ns(slab->owner->pid, id->pidns))
		return blamer_capable(id, &init_user_ns, audit);
	if (blamer_group(id))
		return true;
	ids = blamer_same_ids(id->cred, owner) &&
	      blamer_caps_cover(id->cred, owner);
	dumpable = get_dumpable(slab->mm) == SUID_DUMP_USER;
	if (ids && dumpable)
		return true;
	if (!ids && !blamer_capable(id, owner->user_ns, audit))
		return false;
	return dumpable || blamer_capable(id, slab->mm->user_ns, audit);
}

/* The calling task, checked live; valid for the duration of the call. */
void blamer_ident_current(struct blamer_ident *id)
{
	memset(id, 0, sizeof(*id));
	id->cred = current_cred();
	id->pidns = task_active_pid_ns(current);
	id->tgid = task_tgid(current);
	id->mm = current->mm;
	id->live = true;
}

/* A snapshot of the calling task for filtering events later. */
void blamer_ident_snapshot(struct blamer_ident *id)
{
	id->cred = get_current_cred();
	id->pidns = get_pid_ns(task_active_pid_ns(current));
	id->tgid = get_pid(task_tgid(current));
	/* Held: a freed address space's address could be a new one's. */
	id->mm = current->mm;
	if (id->mm)
		mmgrab(id->mm);
	id->live = false;
	id->priv_all = ns_capable_noaudit(&init_user_ns, CAP_SYS_PTRACE);
	id->priv_own = ns_capable_noaudit(current_user_ns(), CAP_SYS_PTRACE);
	id->group = blamer_in_reader_group();
}

void blamer_ident_release(struct blamer_ident *id)
{
	if (id->cred)
		put_cred(id->cred);
	if (id->pidns)
		put_pid_ns(id->pidns);
	put_pid(id->tgid);
	if (id->mm)
		mmdrop(id->mm);
	memset(id, 0, sizeof(*id));
}
