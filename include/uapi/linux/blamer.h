/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * /dev/blamer: kernel-owned shared-memory slabs with trusted owner facts.
 *
 * Every structure here has fixed-size fields only, so the layout is the
 * same for 32- and 64-bit userspace and no compat translation is needed.
 * Every ioctl argument starts with a @size field: userspace sets it to
 * sizeof() of the structure it was compiled with, and the kernel accepts
 * any size between the first published one (the *_SIZE_VER0 constants)
 * and its own, zero-filling or checking the tail as copy_struct_from_user
 * does. Structures only ever grow at the end.
 */
#ifndef _UAPI_LINUX_BLAMER_H
#define _UAPI_LINUX_BLAMER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define BLAMER_DEVICE_PATH	"/dev/blamer"
#define BLAMER_ABI_VERSION	1
#define BLAMER_COMM_LEN		16

/**
 * struct blamer_create - ask the kernel for a new slab (BLAMER_IOC_CREATE)
 * @size: in: sizeof(struct blamer_create) as userspace knows it
 * @flags: in: must be 0
 * @length: in: bytes wanted (>= 1); out: real size, rounded up to pages
 * @id: out: the slab ID, non-zero, never reused while the slab exists
 * @mmap_offset: out: the offset to pass to mmap() to map this slab
 *
 * The slab is zeroed and owned by the open file the ioctl was issued on.
 * Only that file may map it writable, with mmap(MAP_SHARED) at
 * @mmap_offset (ID << page shift, always below 2^31). The kernel records
 * the creating process as the owner: its tgid, start time, credentials
 * and command name.
 */
struct blamer_create {
	__u32 size;
	__u32 flags;
	__u64 length;
	__u64 id;
	__u64 mmap_offset;
};

#define BLAMER_CREATE_SIZE_VER0	32

/* Values of blamer_slab_info.state */
#define BLAMER_SLAB_LIVE	1	/* the owning file is still open */
#define BLAMER_SLAB_ORPHAN	2	/* the owner is gone, kept for postmortem */

/* Bits of blamer_slab_info.flags */
#define BLAMER_SLAB_MINE	(1U << 0)	/* owned by the caller's open file */
#define BLAMER_SLAB_EXITED	(1U << 1)	/* exit_code/exit_signal are valid */
#define BLAMER_SLAB_COREDUMP	(1U << 2)	/* the owner dumped core */
#define BLAMER_SLAB_PID_GONE	(1U << 3)	/* owner not visible in caller's pidns */

/**
 * struct blamer_slab_info - the kernel's facts about one slab
 * @id: slab ID
 * @size: real size in bytes
 * @mmap_offset: offset to pass to mmap() to map it (read-only for non-owners)
 * @owner_serial: identifies the owning open file; slabs created through
 *	the same open file share it, so it groups the slabs of one heap
 * @start_time_ns: owner's process start time (boot-based clock, ns), the
 *	PID-reuse guard; /proc/PID/stat field 22 (clock ticks) equals
 *	@start_time_ns / (1000000000 / sysconf(_SC_CLK_TCK)), truncated,
 *	outside time namespaces
 * @create_time_ns: when the slab was created (CLOCK_BOOTTIME, ns)
 * @orphan_time_ns: when it became an orphan (CLOCK_BOOTTIME, ns), or 0
 * @pid: owner tgid as seen in the caller's pid namespace, 0 if not visible
 * @uid: owner's effective uid (at creation) in the caller's user
 *	namespace, the overflow uid if not mapped
 * @state: BLAMER_SLAB_LIVE or BLAMER_SLAB_ORPHAN
 * @flags: BLAMER_SLAB_* bits; BLAMER_SLAB_EXITED is set when the owner
 *	was seen exiting (its descriptor closed by exit), and then
 *	@exit_code/@exit_signal and BLAMER_SLAB_COREDUMP describe how
 * @exit_code: exit code if BLAMER_SLAB_EXITED and @exit_signal is 0
 * @exit_signal: signal that killed the owner, if BLAMER_SLAB_EXITED
 * @comm: owner's command name at creation, NUL-terminated
 *
 * Userspace may pass a larger or smaller entry size in
 * blamer_list.info_size (at least BLAMER_SLAB_INFO_SIZE_VER0): the kernel
 * writes what both know and zeroes the rest of each entry.
 */
struct blamer_slab_info {
	__u64 id;
	__u64 size;
	__u64 mmap_offset;
	__u64 owner_serial;
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

#define BLAMER_SLAB_INFO_SIZE_VER0	96

/**
 * struct blamer_list - list the slabs the caller may read (BLAMER_IOC_LIST)
 * @size: in: sizeof(struct blamer_list) as userspace knows it
 * @info_size: in: sizeof(struct blamer_slab_info) as userspace knows it
 * @slabs: in: user pointer to an array of @capacity entries
 * @capacity: in: number of entries at @slabs
 * @count: out: number of entries written
 * @total: out: number of visible slabs (may exceed @capacity; retry)
 * @flags: in: must be 0
 * @generation: out: the device's event generation at the time of the
 *	listing; it also becomes the caller's "seen" mark for poll()
 */
struct blamer_list {
	__u32 size;
	__u32 info_size;
	__u64 slabs;
	__u32 capacity;
	__u32 count;
	__u32 total;
	__u32 flags;
	__u64 generation;
};

#define BLAMER_LIST_SIZE_VER0	40

/**
 * struct blamer_release - free an orphaned slab (BLAMER_IOC_RELEASE)
 * @size: in: sizeof(struct blamer_release)
 * @flags: in: must be 0
 * @id: in: the slab to release
 *
 * Only orphans can be released, and only by a reader that may map them.
 * Existing mappings keep their pages: they read the last contents.
 */
struct blamer_release {
	__u32 size;
	__u32 flags;
	__u64 id;
};

#define BLAMER_RELEASE_SIZE_VER0	16

/**
 * struct blamer_status - device-wide usage and limits (BLAMER_IOC_STATUS)
 * @size: in: sizeof(struct blamer_status)
 * @abi_version: out: BLAMER_ABI_VERSION of the running module
 * @slabs: out: slabs in existence (live and orphaned)
 * @orphans: out: orphaned slabs
 * @bytes: out: bytes held by all slabs
 * @max_slab_bytes: out: module parameter max_slab_bytes
 * @max_owner_bytes: out: module parameter max_owner_bytes
 * @max_total_bytes: out: module parameter max_total_bytes
 * @max_orphans: out: module parameter max_orphans
 * @generation: out: current event generation
 */
struct blamer_status {
	__u32 size;
	__u32 abi_version;
	__u64 slabs;
	__u64 orphans;
	__u64 bytes;
	__u64 max_slab_bytes;
	__u64 max_owner_bytes;
	__u64 max_total_bytes;
	__u64 max_orphans;
	__u64 generation;
};

#define BLAMER_STATUS_SIZE_VER0	72

#define BLAMER_IOC_MAGIC	0xB1

/*
 * The kernel matches ioctl numbers on magic, number and direction only, so
 * a program built against a larger (newer) structure keeps working with
 * an older module, and vice versa, within the rules of the @size field.
 * Every ioctl fails with EFAULT for a bad pointer, EINVAL for a @size
 * below the *_SIZE_VER0 constant or above 4096 or for non-zero @flags,
 * E2BIG when @size is larger than the kernel's structure and the extra
 * bytes are not zero, and ENOTTY for an unknown command.
 */

/**
 * define BLAMER_IOC_CREATE - create a slab owned by this open file
 *
 * Argument: struct blamer_create. Errors: EINVAL for a zero @length,
 * EFBIG for a @length above max_slab_bytes (including any value that
 * would overflow when rounded up), EDQUOT when the caller's user would
 * own more than max_owner_bytes of live slabs, ENOSPC when all slabs
 * together would exceed max_total_bytes or no ID is free, ENOMEM when
 * memory (or the caller's memory cgroup) is exhausted.
 */
#define BLAMER_IOC_CREATE	_IOWR(BLAMER_IOC_MAGIC, 1, struct blamer_create)

/**
 * define BLAMER_IOC_LIST - describe the slabs the caller may read
 *
 * Argument: struct blamer_list. Lists the caller's own live slabs and
 * every slab it may map read-only, in ID order. Errors: EINVAL for an
 * @info_size below BLAMER_SLAB_INFO_SIZE_VER0 or above 4096, ENOMEM.
 * Also marks the current event generation as seen for poll().
 */
#define BLAMER_IOC_LIST		_IOWR(BLAMER_IOC_MAGIC, 2, struct blamer_list)

/**
 * define BLAMER_IOC_RELEASE - free an orphaned slab
 *
 * Argument: struct blamer_release. Errors: ENOENT if no slab has that ID,
 * EACCES if the caller may not read it, EBUSY if it is still live.
 */
#define BLAMER_IOC_RELEASE	_IOW(BLAMER_IOC_MAGIC, 3, struct blamer_release)

/**
 * define BLAMER_IOC_STATUS - usage and limits of the whole device
 *
 * Argument: struct blamer_status. Never fails but for the common errors.
 */
#define BLAMER_IOC_STATUS	_IOWR(BLAMER_IOC_MAGIC, 4, struct blamer_status)

#endif /* _UAPI_LINUX_BLAMER_H */
