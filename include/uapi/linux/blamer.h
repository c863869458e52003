/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * /dev/blamer: kernel-owned shared-memory slabs with trusted owner facts.
 *
 * A slab is its own file: BLAMER_IOC_CREATE returns a read-write
 * descriptor of a new slab, BLAMER_IOC_OPEN a read-only descriptor of a
 * slab the caller may read; mmap() that descriptor (offset 0 is the
 * slab's first byte). /dev/blamer itself lists slabs, opens and releases
 * them and reports events through poll().
 *
 * Every structure has fixed-size fields, 64-bit ones first, so the layout
 * is the same for 32- and 64-bit programs. The size of an ioctl's
 * structure is the size encoded in its command number (_IOC_SIZE): the
 * kernel accepts any size from the first published one (*_SIZE_VER0);
 * bytes beyond its own structure must be zero (E2BIG otherwise), fields
 * the caller did not pass read as zero, and at most the caller's size is
 * written back. Structures only ever grow at the end. Reserved fields and
 * unknown flags must be zero (EINVAL otherwise).
 */
#ifndef _UAPI_LINUX_BLAMER_H
#define _UAPI_LINUX_BLAMER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define BLAMER_COMM_LEN		16

/* Bits of blamer_create.flags */
#define BLAMER_CREATE_POPULATE	(1U << 0)	/* allocate every page now */

/**
 * struct blamer_create - ask for a new slab (BLAMER_IOC_CREATE)
 * @length: in: bytes wanted (>= 1); out: real size, rounded up to pages
 * @id: out: the slab ID, non-zero, not reused while the slab exists
 * @flags: in: 0 or BLAMER_CREATE_POPULATE; other bits are EINVAL
 * @fd: out: a read-write, close-on-exec descriptor of the slab
 *
 * The slab reads as zeroes. Its pages are allocated at the writer's first
 * touch, zeroed and charged to the memory cgroup of the task touching
 * them; above that cgroup's memory.max the fault reclaims and then
 * OOM-kills within it, as shmem does. Readers map a page nobody wrote as
 * a shared zero page and allocate nothing. With BLAMER_CREATE_POPULATE
 * every page is allocated and charged at creation instead, and a slab
 * that does not fit fails with ENOMEM.
 * The module's byte limits count the whole size from creation either
 * way. The calling process is its owner: only it maps the
 * slab writable (an inherited or passed copy of @fd gives no write access
 * and no identity), and the slab becomes an orphan when it dies.
 */
struct blamer_create {
	__u64 length;
	__u64 id;
	__u32 flags;
	__s32 fd;
};

#define BLAMER_CREATE_SIZE_VER0		24

/**
 * struct blamer_open - a read-only descriptor of a slab (BLAMER_IOC_OPEN)
 * @id: in: the slab
 * @flags: in: must be 0
 * @fd: out: a read-only, close-on-exec descriptor of the slab
 */
struct blamer_open {
	__u64 id;
	__u32 flags;
	__s32 fd;
};

#define BLAMER_OPEN_SIZE_VER0		16

/* Values of blamer_slab_info.state */
#define BLAMER_SLAB_LIVE	1	/* its creating process is alive */
#define BLAMER_SLAB_ORPHAN	2	/* its creating process died */

/* Bits of blamer_slab_info.flags */
#define BLAMER_SLAB_MINE	(1U << 0)	/* created by the calling process */
#define BLAMER_SLAB_EXITED	(1U << 1)	/* exit_code/exit_signal are valid */
#define BLAMER_SLAB_COREDUMP	(1U << 2)	/* the owner dumped core */
#define BLAMER_SLAB_PID_HIDDEN	(1U << 3)	/* owner outside caller's pid ns */

/**
 * struct blamer_slab_info - the kernel's facts about one slab
 * @id: slab ID
 * @size: real size in bytes
 * @file_serial: identifies the /dev/blamer open file the slab was created
 *	through; slabs created through one open file share it (a heap)
 * @start_time_ns: owner's process start time, in the clock and time
 *	namespace of /proc/PID/stat field 22 as the caller reads it: field
 *	22 (clock ticks) equals @start_time_ns / (1000000000 / _SC_CLK_TCK)
 * @create_time_ns: when the slab was created (CLOCK_BOOTTIME of the
 *	caller's time namespace, ns)
 * @orphan_time_ns: when the owner died (same clock), or 0
 * @pid: owner's tgid in the caller's pid namespace, 0 if not visible
 * @uid: owner's effective uid at creation, in the caller's user namespace
 * @state: BLAMER_SLAB_LIVE or BLAMER_SLAB_ORPHAN
 * @flags: BLAMER_SLAB_* bits
 * @exit_code: if BLAMER_SLAB_EXITED and @exit_signal is 0: exit status
 * @exit_signal: if BLAMER_SLAB_EXITED: the signal that killed the owner
 * @comm: owner's command name at creation, NUL-terminated
 */
struct blamer_slab_info {
	__u64 id;
	__u64 size;
	__u64 file_serial;
	__u64 start_time_ns;
	__u64 create_time_ns;
	__u64 orphan_time_ns;
	__s32 pid;
	__u32 uid;
	__u32 state;
	__u32 flags;
	__s32 exit_code;
	__u32 exit_signal;
	char comm[BLAMER_COMM_LEN];
};

#define BLAMER_SLAB_INFO_SIZE_VER0	88

/**
 * struct blamer_list - describe slabs the caller may read (BLAMER_IOC_LIST)
 * @slabs: in: user pointer to @capacity entries of @info_size bytes
 * @start_id: in: list slabs with an ID of at least this (0: all)
 * @events: out: events this descriptor has reported (see poll())
 * @info_size: in: sizeof(struct blamer_slab_info) as the caller knows it,
 *	from BLAMER_SLAB_INFO_SIZE_VER0 to 4096
 * @capacity: in: number of entries at @slabs
 * @count: out: entries written
 * @total: out: slabs visible from @start_id on (retry if above @capacity)
 * @flags: in: must be 0
 * @reserved: in: must be 0
 */
struct blamer_list {
	__u64 slabs;
	__u64 start_id;
	__u64 events;
	__u32 info_size;
	__u32 capacity;
	__u32 count;
	__u32 total;
	__u32 flags;
	__u32 reserved;
};

#define BLAMER_LIST_SIZE_VER0		48

/**
 * struct blamer_release - free a slab (BLAMER_IOC_RELEASE)
 * @id: in: the slab
 * @flags: in: must be 0
 * @reserved: in: must be 0
 */
struct blamer_release {
	__u64 id;
	__u32 flags;
	__u32 reserved;
};

#define BLAMER_RELEASE_SIZE_VER0	16

/* Bits of blamer_status.flags */
#define BLAMER_STATUS_DEVICE	(1U << 0)	/* slabs/orphans/bytes are filled */

/**
 * struct blamer_status - usage and limits (BLAMER_IOC_STATUS)
 * @user_slabs: slabs charged to the caller's user, live and orphaned
 * @user_orphans: orphans charged to the caller's user
 * @user_bytes: bytes charged to the caller's user (until pages are freed)
 * @slabs: slabs in existence, if BLAMER_STATUS_DEVICE
 * @orphans: orphans, if BLAMER_STATUS_DEVICE
 * @bytes: bytes of all slab pages not yet freed, if BLAMER_STATUS_DEVICE
 * @max_slab_bytes: module parameter max_slab_bytes
 * @max_user_bytes: module parameter max_user_bytes
 * @max_total_bytes: module parameter max_total_bytes
 * @max_user_orphans: module parameter max_user_orphans
 * @flags: BLAMER_STATUS_* bits
 * @reserved: 0
 */
struct blamer_status {
	__u64 user_slabs;
	__u64 user_orphans;
	__u64 user_bytes;
	__u64 slabs;
	__u64 orphans;
	__u64 bytes;
	__u64 max_slab_bytes;
	__u64 max_user_bytes;
	__u64 max_total_bytes;
	__u64 max_user_orphans;
	__u32 flags;
	__u32 reserved;
};

#define BLAMER_STATUS_SIZE_VER0		88

/* 0xBB is unused in Documentation/userspace-api/ioctl/ioctl-number.rst. */
#define BLAMER_IOC_MAGIC	0xBB

/**
 * define BLAMER_IOC_CREATE - create a slab owned by the calling process
 *
 * Argument: struct blamer_create. Errors: EBADF if /dev/blamer was not
 * opened for writing, EPERM if the caller is not the process (and
 * program: exec ends it) that opened it or is a vfork() child that has
 * not exec'd, EINVAL for a zero @length or
 * an unknown flag,
 * EFBIG above max_slab_bytes (any length that would overflow when
 * rounded up included), EDQUOT above the caller's user's max_user_bytes
 * and ENOSPC above max_total_bytes after evicting that user's own oldest
 * orphans, ENOMEM (for the slab's bookkeeping or, with
 * BLAMER_CREATE_POPULATE, its pages within the caller's memory cgroup),
 * EMFILE.
 */
#define BLAMER_IOC_CREATE	_IOWR(BLAMER_IOC_MAGIC, 1, struct blamer_create)

/**
 * define BLAMER_IOC_OPEN - open a slab for reading
 *
 * Argument: struct blamer_open. Errors: ENOENT if no slab has that ID or
 * the caller may not read it (the two are not told apart), EMFILE.
 */
#define BLAMER_IOC_OPEN		_IOWR(BLAMER_IOC_MAGIC, 2, struct blamer_open)

/**
 * define BLAMER_IOC_LIST - describe the slabs the caller may read
 *
 * Argument: struct blamer_list. In ID order. Marks the descriptor's
 * events as seen for poll(). Errors: EINVAL for a bad @info_size.
 */
#define BLAMER_IOC_LIST		_IOWR(BLAMER_IOC_MAGIC, 3, struct blamer_list)

/**
 * define BLAMER_IOC_RELEASE - free a slab now
 *
 * Argument: struct blamer_release. The owner may release its own live
 * slabs; a reader who may read an orphan may release it. Mappings keep
 * their pages. Errors: ENOENT if no slab has that ID or the caller may
 * not read it, EBUSY for another process's live slab.
 */
#define BLAMER_IOC_RELEASE	_IOW(BLAMER_IOC_MAGIC, 4, struct blamer_release)

/**
 * define BLAMER_IOC_STATUS - usage of the caller's user, and the limits
 *
 * Argument: struct blamer_status. Device-wide counts are filled only for
 * callers with CAP_SYS_PTRACE in the initial user namespace. In a pid
 * namespace other than the initial one, the user's counts cover only the
 * slabs whose creators that namespace sees.
 */
#define BLAMER_IOC_STATUS	_IOR(BLAMER_IOC_MAGIC, 5, struct blamer_status)

#endif /* _UAPI_LINUX_BLAMER_H */
