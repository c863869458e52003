/* SPDX-License-Identifier: MIT */
/*
 * The on-memory format of a blamer heap, shared by the writer and the
 * reader. Documentation/heap-format.rst is the normative description;
 * this header is its C spelling. Every field has a fixed size and a fixed
 * offset (checked by static asserts), so a 32-bit reader sees the same
 * layout as a 64-bit writer. All integers are little-endian host order
 * (the heap never leaves the machine that wrote it).
 *
 * Invariants:
 *  - A heap is the slabs of one owner: slab 0 holds the heap header, the
 *    others only a slab header. Slabs are contiguous byte ranges whose
 *    size (a multiple of 4096) the kernel (device backend) or the file
 *    size (dir backend) decides; the reader trusts only that size.
 *  - Records are addressed by blamer_ref: (slab index << 32) | byte offset
 *    within that slab. 0 is the null reference (offset 0 of slab 0 is the
 *    slab header, never a record). Never a pointer.
 *  - Every record starts with a struct blamer_block header. Memory is
 *    never freed: a record is retired by changing its type (CAS), and
 *    whoever CASes a retired type to a live one owns it.
 *  - Writers publish with release stores; the reader loads with acquire
 *    and re-validates everything: a writer may be hostile or dead
 *    mid-update.
 */
#ifndef BLAMER_HEAP_FORMAT_H
#define BLAMER_HEAP_FORMAT_H

#include <stdint.h>
#include <stddef.h>

/*
 * The values a heap stores that readers show (phases, activity kinds,
 * data scopes, field types, units, heap states and flags, child states,
 * backends) have their one name in the public header; the asserts at the
 * end of this file pin the numbers the format stores.
 */
#include "blamer.h"

#define BLAMER_HEAP_MAGIC	0x524d4c42u	/* "BLMR" */
#define BLAMER_HEAP_VERSION	3u	/* 2: activity timestamps in the heap's clock;
					 * 3: 128-byte activities with 80-byte labels,
					 * cut marks, role and instance, DROPS record */
#define BLAMER_HEAP_VERSION_MIN	2u	/* the oldest a reader still reads */
#define BLAMER_ALIGN		8u
#define BLAMER_MAX_SLABS	64u

typedef uint64_t blamer_ref;

static inline uint32_t blamer_ref_slab(blamer_ref r) { return (uint32_t)(r >> 32); }
static inline uint32_t blamer_ref_offset(blamer_ref r) { return (uint32_t)r; }
static inline blamer_ref blamer_make_ref(uint32_t slab, uint32_t off)
{
	return ((uint64_t)slab << 32) | off;
}

/* Every slab starts with this (64 bytes). */
struct blamer_slab_header {
	uint32_t magic;		/* BLAMER_HEAP_MAGIC */
	uint16_t version;	/* BLAMER_HEAP_VERSION */
	uint16_t header_size;	/* sizeof(struct blamer_slab_header) */
	uint32_t slab_index;	/* position of this slab in its heap */
	uint32_t reserved0;
	uint64_t slab_size;	/* as the writer saw it; reader trusts its own */
	uint64_t heap_id;	/* random, the same in every slab of the heap */
	uint32_t freeptr;	/* atomic: next free byte offset in this slab */
	uint32_t reserved1;
	uint64_t reserved2[3];
};

/*
 * Follows the slab header in slab 0 only. slab_ids[i] is the backend's
 * name for slab i (the kernel slab ID, or the file index in the dir
 * backend); it is written before slab_count is incremented with release.
 */
struct blamer_heap_header {
	uint32_t state;		/* atomic: BLAMER_HEAP_UNINIT, _READY (header
				 * complete), _DELETED (closed on a clean exit) */
	uint32_t flags;		/* atomic: BLAMER_HEAP_F_*, set with atomic OR */
	uint32_t slab_count;	/* atomic: slabs published */
	uint32_t max_slabs;	/* <= BLAMER_MAX_SLABS */
	uint64_t create_time_ns;	/* CLOCK_REALTIME at heap creation */
	blamer_ref list_head;	/* dummy block heading the iterable list */
	blamer_ref list_tail;	/* atomic: last block on the list (a hint) */
	blamer_ref process;	/* atomic: the process record, once made */
	uint32_t grow_claim;	/* atomic: writer-private growth lock, 0 = none */
	uint32_t backend;	/* BLAMER_BACKEND_DEVICE or _DIR: who made the slabs */
	uint32_t clock;		/* BLAMER_CLOCK_*: unit of blamer_activity.timestamp */
	uint32_t exit;		/* atomic: 0, or BLAMER_EXIT_CALLED | status (below) */
	uint64_t clock_anchor_tsc;	/* BLAMER_CLOCK_TSC: a TSC reading ... */
	uint64_t clock_anchor_ns;	/* ... and CLOCK_MONOTONIC at that instant */
	uint64_t slab_ids[BLAMER_MAX_SLABS];
};

/*
 * blamer_heap_header.clock. MONOTONIC: activity timestamps are
 * CLOCK_MONOTONIC nanoseconds. TSC: they are raw x86 time-stamp counter
 * readings (half the cost of the vDSO clock, which reads the same
 * counter and then scales it), taken only where the kernel itself uses
 * the TSC as its clocksource, so it is invariant and synchronised across
 * CPUs. A reader converts a reading to CLOCK_MONOTONIC by interpolating
 * between the heap's anchor pair and a pair of its own taken later:
 * exact at both ends, in between off by the drift between the TSC and
 * CLOCK_MONOTONIC (NTP slew, parts per million). Both clocks only mean
 * something during the boot that wrote them.
 */
#define BLAMER_CLOCK_MONOTONIC	0u
#define BLAMER_CLOCK_TSC	1u

/*
 * blamer_heap_header.exit: a dir-backend writer's exit handler stores
 * BLAMER_EXIT_CALLED | (status & 0xff) with release when the process
 * calls exit() or returns from main, then sets slab 0's file modification
 * time to that moment. 0: still running, or ended without running exit
 * handlers (a signal, _exit(), a crash). Device writers leave it 0: the
 * kernel records how the process ended.
 */
#define BLAMER_EXIT_CALLED	(1u << 8)
#define BLAMER_EXIT_STATUS(x)	((int32_t)((x) & 0xffu))

/*
 * Fixed places in slab 0: the slab header, the heap header right after it,
 * then the list's dummy head block (cookie BLAMER_BLOCK_QUEUE, type 0,
 * size sizeof(struct blamer_block)). The list is circular through the
 * dummy: the last record's next is BLAMER_LIST_HEAD_REF; next == 0 means
 * "not on the list". Records of slab 0 start at BLAMER_SLAB0_FIRST_RECORD,
 * records of other slabs at sizeof(struct blamer_slab_header).
 */
#define BLAMER_HEAP_HEADER_OFFSET	64u
#define BLAMER_LIST_HEAD_OFFSET		(64u + 592u)
#define BLAMER_LIST_HEAD_REF		((blamer_ref)BLAMER_LIST_HEAD_OFFSET)
#define BLAMER_SLAB0_FIRST_RECORD	(BLAMER_LIST_HEAD_OFFSET + 24u)
#define BLAMER_MIN_SLAB_SIZE		4096u
#define BLAMER_MAX_SLAB_SIZE		(1u << 30)

/* Block header: starts every record (24 bytes). */
#define BLAMER_BLOCK_COOKIE	0xC8799269u
#define BLAMER_BLOCK_QUEUE	0x51554555u	/* the list's dummy head */

struct blamer_block {
	uint32_t size;		/* whole record incl. this header, multiple of 8 */
	uint32_t cookie;	/* BLAMER_BLOCK_COOKIE (or _QUEUE) */
	uint32_t type;		/* atomic: BLAMER_REC_* ; ~type = retired */
	uint32_t reserved;
	blamer_ref next;	/* atomic: next record on the iterable list */
};

/* Record types. A retired record of type T has type BLAMER_RETIRED(T). */
#define BLAMER_REC_TRANSITIONING	0x0000ffffu	/* being re-typed and zeroed */
#define BLAMER_REC_PROCESS	1u
#define BLAMER_REC_THREAD	2u
#define BLAMER_REC_USERDATA	3u
#define BLAMER_REC_MODULE	4u
#define BLAMER_REC_LOG		5u
#define BLAMER_REC_DAG_NODE	6u
#define BLAMER_REC_DAG_EDGE	7u
#define BLAMER_REC_DAG_PATH	8u
#define BLAMER_REC_CHILD	9u	/* a child process launched/exited */
#define BLAMER_REC_DAG_SHARD	10u	/* one thread's part of a path's values */
#define BLAMER_REC_DAG_UNIT	11u	/* an application unit's name and base unit */
#define BLAMER_REC_DROPS	12u	/* writes not recorded in full, by reason (v3) */
#define BLAMER_REC_METRIC_DEF	13u	/* a metric: name, kind, labels, buckets (v3) */
#define BLAMER_REC_METRIC	14u	/* one series of a metric and its values (v3) */
#define BLAMER_REC_METRIC_SHARD	15u	/* one thread's part of a series' values (v3) */
#define BLAMER_RETIRED(t)	(~(uint32_t)(t))

/*
 * Identity of the process owning a record; first field of every
 * per-process record. data_id is written last (release): a reader that
 * sees data_id == 0 treats the record as not yet (or no longer) valid.
 */
struct blamer_owner {
	uint32_t data_id;	/* atomic: non-zero random id, set last */
	uint32_t reserved;
	int64_t pid;
	int64_t create_stamp;	/* process start time, ns since boot */
};

#define BLAMER_CMDLINE_MAX	256u
#define BLAMER_NAME_MAX		32u

struct blamer_process {
	struct blamer_block hdr;
	struct blamer_owner owner;
	uint32_t phase;		/* atomic: BLAMER_PHASE_* */
	uint32_t cmdline_len;	/* bytes used in cmdline */
	blamer_ref user_data;	/* BLAMER_REC_USERDATA for the process scope */
	blamer_ref global_data;	/* BLAMER_REC_USERDATA for the global scope */
	blamer_ref log;		/* BLAMER_REC_LOG */
	char cmdline[BLAMER_CMDLINE_MAX]; /* argv joined by NUL */
	/* version 3 (a version 2 record ends here, 336 bytes) */
	uint32_t role_state;	/* atomic: BLAMER_ROLE_*; role and instance
				 * are final once it is SET (release) */
	uint32_t reserved2;
	char role[BLAMER_NAME_MAX];	/* "worker", NUL-padded */
	char instance[BLAMER_NAME_MAX];	/* "2", NUL-padded */
	blamer_ref drops;	/* the DROPS record, 0: none */
};

/* blamer_process.role_state */
#define BLAMER_ROLE_NONE	0u
#define BLAMER_ROLE_WRITING	1u	/* being written: not shown */
#define BLAMER_ROLE_SET		2u
#define BLAMER_PROCESS_V2_SIZE	336u

/*
 * One slot of a thread's activity stack (128 bytes; 64 in version 2,
 * whose label had 16 bytes, NUL-padded, and whose flags were 0). The
 * label is NUL-terminated when shorter than its 80 bytes; the bytes past
 * its NUL mean nothing (a push does not clear them: it writes the label
 * and one NUL). An 80-byte label has no NUL: it filled the slot, and
 * BLAMER_ACT_F_LABEL_CUT says whether the caller's was longer.
 */
#define BLAMER_LABEL_MAX	80u
#define BLAMER_LABEL_MAX_V2	16u
#define BLAMER_ACT_F_LABEL_CUT	(1u << 0)	/* the caller's label was longer */

struct blamer_activity {
	uint64_t timestamp;	/* at push, in the heap's clock (BLAMER_CLOCK_*) */
	uint64_t calling_address; /* return address of the push */
	uint64_t data[2];	/* kind-specific: lock address, pid, id, ... */
	blamer_ref user_data;	/* per-activity USERDATA, or 0 */
	uint32_t kind;		/* BLAMER_ACTIVITY_* */
	uint32_t flags;		/* BLAMER_ACT_F_* (version 2: reserved, 0) */
	char label[BLAMER_LABEL_MAX];	/* short static description */
};

/* A version 2 slot: what a reader of old heaps steps by. */
struct blamer_activity_v2 {
	uint64_t timestamp;
	uint64_t calling_address;
	uint64_t data[2];
	blamer_ref user_data;
	uint32_t kind;
	uint32_t reserved;
	char label[BLAMER_LABEL_MAX_V2];
};

/*
 * Per-thread activity stack. The owning thread is the only writer.
 * push: fill stack[depth] (if depth < stack_slots), then store depth+1
 * with release. pop: store depth-1 with release, then increment
 * data_version with release. A reader copies header and slots, then
 * re-reads data_version and depth; a change means a torn read: retry.
 */
struct blamer_thread {
	struct blamer_block hdr;
	struct blamer_owner owner;
	int64_t tid;
	uint64_t start_time_ns;	/* CLOCK_MONOTONIC at registration */
	uint32_t stack_slots;	/* slots following this header */
	uint32_t depth;		/* atomic: may exceed stack_slots */
	uint32_t data_version;	/* atomic: incremented by every pop */
	uint32_t overflows;	/* pushes dropped because the stack was full */
	char name[BLAMER_NAME_MAX];
	struct blamer_activity stack[];
};

/*
 * User data: a record holding a sequence of fields in fields[0..used),
 * each struct blamer_field + name (name_size bytes, padded to 8) + value
 * area (record_size - 8 - padded name, a multiple of 8, 8-aligned). A
 * field of type BLAMER_FIELD_END (0) is being created: with a valid
 * record_size, step over it (its other header bytes mean nothing yet);
 * with record_size 0 the sequence ends. The writer claims a field by a
 * CAS of its 8-byte header from 0 and publishes it by storing the whole
 * header again, with release; used is moved past a claim after it, so
 * it may lag a claim for a moment. Each name occurs once.
 * Values of 8 bytes or less (BOOL, CHAR: 1 byte; SIGNED, UNSIGNED,
 * DOUBLE: 8 bytes) are written with one atomic store of that size.
 * Other values (STRING, RAW, *_REF) are written under the field's seq:
 * the writer CASes seq from even to odd, stores value_size = 0, writes
 * the bytes, stores value_size = n, then seq + 1 (even) with release. A
 * reader loads seq (acquire; odd: retry), copies, re-loads seq: a
 * different value means a torn copy (retry). Field types are
 * BLAMER_FIELD_*; the value of a *_REF field is a u64 address and a u64
 * size.
 */

struct blamer_field {
	uint8_t type;		/* atomic: BLAMER_FIELD_*; set last on creation */
	uint8_t name_size;
	uint16_t value_size;	/* atomic: bytes, | BLAMER_VALUE_CUT (version 3) */
	uint16_t record_size;	/* header + padded name + value area */
	uint16_t seq;		/* atomic: odd while a multi-byte value changes */
};

/*
 * Version 3: a STRING or RAW value cut to its field's capacity has bit 15
 * of value_size set, stored with the size (value areas are less than
 * 32 KiB). Version 2 heaps never set it.
 */
#define BLAMER_VALUE_CUT	0x8000u
#define BLAMER_VALUE_SIZE(vs)	((vs) & 0x7fffu)
#define BLAMER_VALUE_AREA_MAX	0x7ff0u	/* a value area's largest size */

struct blamer_userdata {
	struct blamer_block hdr;
	struct blamer_owner owner;
	uint32_t scope;		/* BLAMER_DATA_* */
	uint32_t capacity;	/* bytes of fields[] */
	uint32_t used;		/* atomic: bytes of fields[] in use */
	uint32_t reserved;
	uint8_t fields[];
};

/*
 * A loaded shared object. Updated under a seqlock: seq is odd while the
 * writer changes the record; a reader retries while it is odd or changed.
 */
#define BLAMER_PATH_MAX		256u
#define BLAMER_BUILD_ID_MAX	32u

struct blamer_module {
	struct blamer_block hdr;
	struct blamer_owner owner;
	uint32_t seq;		/* atomic */
	uint32_t loaded;	/* 1 loaded, 0 unloaded */
	uint64_t base;
	uint64_t size;
	uint32_t build_id_len;
	uint32_t path_len;
	uint8_t build_id[BLAMER_BUILD_ID_MAX];
	char path[BLAMER_PATH_MAX];
};

/*
 * Bounded ring of recent log messages. A writer claims slot
 * (atomic fetch_add(&head, 1) % slot_count), sets its seq to odd, writes,
 * sets seq to even (release). The reader shows slots whose seq is even
 * and stable, ordered by their sequence number.
 */
#define BLAMER_LOG_MSG_MAX	120u

struct blamer_log_slot {
	uint32_t seq;		/* atomic */
	uint32_t len;
	uint64_t time_ns;	/* CLOCK_REALTIME */
	uint64_t number;	/* message number (head value claimed) */
	char text[BLAMER_LOG_MSG_MAX];
};

struct blamer_log {
	struct blamer_block hdr;
	struct blamer_owner owner;
	uint64_t head;		/* atomic: messages ever written */
	uint32_t slot_count;
	uint32_t reserved;
	struct blamer_log_slot slots[];
};

/* A child process the owner launched (and, once reaped, how it ended). */
struct blamer_child {
	struct blamer_block hdr;
	struct blamer_owner owner;
	int64_t child_pid;
	int64_t child_start_stamp;	/* child's start time, ns since boot, 0 if unknown */
	uint64_t launch_time_ns;	/* CLOCK_REALTIME */
	uint64_t exit_time_ns;	/* CLOCK_REALTIME, 0 while running */
	int32_t exit_status;	/* wait status as from waitpid() */
	uint32_t state;		/* atomic: BLAMER_CHILD_RUNNING, _EXITED */
};

/*
 * Attribution DAG. Node IDs are 64-bit and the same in every process
 * (derived by the application, e.g. a hash of a stable name). A node may
 * have several parents: each parent link is one DAG_EDGE record. A path
 * is the list of node IDs from the root to a node as actually walked;
 * measurements are attached to paths. A path's value of unit i is its own
 * values[i] plus values[i] of every shard on its chain (unsigned, modulo
 * 2^64): each writing thread adds to a shard of its own, so adds are
 * single-writer and threads never share the cache line; values[] of the
 * path itself takes atomic fetch_adds when no shard could be had.
 */
#define BLAMER_DAG_MAX_DEPTH	8u
#define BLAMER_DAG_MAX_UNITS	8u

struct blamer_dag_node {
	struct blamer_block hdr;
	struct blamer_owner owner;
	uint64_t id;
	uint32_t node_type;
	uint32_t reserved;
	char name[BLAMER_NAME_MAX];
};

struct blamer_dag_edge {
	struct blamer_block hdr;
	struct blamer_owner owner;
	uint64_t parent_id;
	uint64_t child_id;
};

struct blamer_dag_path {
	struct blamer_block hdr;
	struct blamer_owner owner;
	uint32_t depth;		/* node IDs used in nodes[] */
	uint32_t reserved;
	uint64_t nodes[BLAMER_DAG_MAX_DEPTH];	/* root first */
	uint32_t units[BLAMER_DAG_MAX_UNITS];	/* BLAMER_UNIT_* of each value */
	uint64_t values[BLAMER_DAG_MAX_UNITS];	/* atomic fetch_add */
	blamer_ref shards;	/* atomic: newest DAG_SHARD of this path, 0 if none */
};

/*
 * A thread's share of one path's values. Made by the first add of a
 * thread to the path, then pushed at the head of the path's chain with a
 * release CAS of path.shards (next_shard, path and owner are written
 * before and never change). Shards are never retired, unlinked or
 * zeroed: a path's sum only grows. claim says which thread adds to
 * values[] (the only writer); its exit stores 0 with release, and a later
 * thread takes the shard over with a CAS 0 -> its id (acquire).
 */
struct blamer_dag_shard {
	struct blamer_block hdr;
	struct blamer_owner owner;
	blamer_ref path;	/* the DAG_PATH record this shard adds to */
	blamer_ref next_shard;	/* older shard of the same path, 0: the last */
	uint64_t claim;		/* atomic: 0 free, else the writing thread's tid */
	uint64_t values[BLAMER_DAG_MAX_UNITS];	/* single writer: the claimer */
};

/*
 * The name an application gives one of its units (>= BLAMER_UNIT_APP_BASE)
 * and the base unit its values are in, for exporters: name is
 * [a-z_][a-z0-9_]* (a Prometheus metric name part), NUL-padded. Added in
 * version 2 as a new record type: older readers skip it.
 */
struct blamer_dag_unit {
	struct blamer_block hdr;
	struct blamer_owner owner;
	uint32_t unit;		/* >= BLAMER_UNIT_APP_BASE */
	uint32_t base;		/* BLAMER_BASE_* */
	char name[BLAMER_NAME_MAX];
};

/*
 * Writes the writer could not record in full, counted by reason
 * (version 3; BLAMER_DROP_* in blamer.h name the reasons). One per heap,
 * made with the process record, which points at it. Each count only
 * grows (relaxed atomic adds). Counts of reasons past
 * BLAMER_DROP_REASONS are reserved and 0.
 */
#define BLAMER_DROP_SLOTS	16u

struct blamer_drops {
	struct blamer_block hdr;
	struct blamer_owner owner;
	uint64_t count[BLAMER_DROP_SLOTS];	/* atomic */
};

/*
 * Metrics (version 3). A METRIC_DEF says what a metric is, once per heap
 * (a fork child's heap gets its parent's, as DAG definitions); a METRIC
 * is one series of it (label values, an optional DAG path) with its
 * values; METRIC_SHARDs hold each writing thread's part of a counter or
 * histogram, chained from the series like DAG_SHARDs from a path.
 *
 * Values are nvalues u64 words: a counter or gauge has one, a double
 * (IEEE-754 binary64 bits); a histogram 1 + nbuckets: the sum of the
 * observations (a double), then each bucket's count (not cumulative,
 * the last bucket +Inf). A series' value is its own words plus its
 * shards' (doubles added as doubles, counts as integers). Gauges have no
 * shards: one word every thread sets or adds to, and for the mostrecent
 * modes the CLOCK_REALTIME of the last set in stamp.
 */
#define BLAMER_METRIC_NAME_BYTES	64u	/* name, NUL-padded */
#define BLAMER_METRIC_HELP_BYTES	128u	/* help text, NUL-padded */
#define BLAMER_METRIC_LABEL_BYTES	128u	/* label names, each NUL-terminated */
#define BLAMER_METRIC_VALUE_BYTES	256u	/* label values, each NUL-terminated */
#define BLAMER_METRIC_F_CUT		(1u << 0)	/* METRIC.flags: values were cut */
#define BLAMER_HIST_NONE		0u

struct blamer_metric_def_rec {
	struct blamer_block hdr;
	struct blamer_owner owner;
	uint32_t kind;		/* BLAMER_METRIC_* */
	uint32_t base;		/* BLAMER_BASE_* */
	uint32_t gauge_mode;	/* BLAMER_GAUGE_* (gauges), else 0 */
	uint32_t flags;		/* BLAMER_METRIC_PER_PROCESS */
	uint32_t nlabels;	/* label names in labels[] */
	uint32_t layout;	/* histograms: BLAMER_HIST_*, else NONE */
	uint32_t nbuckets;	/* histograms: buckets, +Inf included */
	int32_t schema;		/* exponential: bucket k ends at 2^(k * 2^-schema) */
	int32_t min_exp, max_exp;	/* exponential: the window 2^min_exp .. 2^max_exp */
	uint64_t reserved;
	char name[BLAMER_METRIC_NAME_BYTES];
	char help[BLAMER_METRIC_HELP_BYTES];
	char labels[BLAMER_METRIC_LABEL_BYTES];
	double bounds[BLAMER_METRIC_BOUNDS_MAX];	/* fixed: nbuckets - 1 used */
};

struct blamer_metric_rec {
	struct blamer_block hdr;
	struct blamer_owner owner;
	blamer_ref def;		/* the METRIC_DEF, in this heap */
	uint32_t flags;		/* BLAMER_METRIC_F_* */
	uint32_t depth;		/* DAG path: node ids used in nodes[] (0: none) */
	uint64_t nodes[BLAMER_DAG_MAX_DEPTH];
	char values[BLAMER_METRIC_VALUE_BYTES];	/* one per label, each NUL-terminated */
	blamer_ref shards;	/* atomic: newest METRIC_SHARD, 0 if none */
	uint64_t stamp;		/* atomic: mostrecent gauges: CLOCK_REALTIME of the last set */
	uint32_t nvalues;	/* words of value[] */
	uint32_t reserved;
	uint64_t value[];	/* atomic: the values no shard took */
};

struct blamer_metric_shard {
	struct blamer_block hdr;
	struct blamer_owner owner;
	blamer_ref metric;	/* the METRIC this shard adds to */
	blamer_ref next_shard;	/* older shard of the same series, 0: the last */
	uint64_t claim;		/* atomic: 0 free, else the writing thread's tid */
	uint32_t nvalues;	/* the series' */
	uint32_t reserved;
	uint64_t value[];	/* single writer: the claimer */
};

#define BLAMER_FORMAT_ASSERT(t, n) \
	_Static_assert(sizeof(struct t) == (n), "layout of struct " #t)

BLAMER_FORMAT_ASSERT(blamer_slab_header, 64);
BLAMER_FORMAT_ASSERT(blamer_block, 24);
BLAMER_FORMAT_ASSERT(blamer_owner, 24);
BLAMER_FORMAT_ASSERT(blamer_activity, 128);
BLAMER_FORMAT_ASSERT(blamer_activity_v2, 64);
BLAMER_FORMAT_ASSERT(blamer_drops, 176);
BLAMER_FORMAT_ASSERT(blamer_field, 8);
BLAMER_FORMAT_ASSERT(blamer_log_slot, 144);
BLAMER_FORMAT_ASSERT(blamer_heap_header, 592);
BLAMER_FORMAT_ASSERT(blamer_process, 416);
_Static_assert(offsetof(struct blamer_process, role_state) == BLAMER_PROCESS_V2_SIZE, "v2 end");
BLAMER_FORMAT_ASSERT(blamer_thread, 112);
BLAMER_FORMAT_ASSERT(blamer_userdata, 64);
BLAMER_FORMAT_ASSERT(blamer_module, 368);
BLAMER_FORMAT_ASSERT(blamer_log, 64);
BLAMER_FORMAT_ASSERT(blamer_child, 88);
BLAMER_FORMAT_ASSERT(blamer_dag_node, 96);
BLAMER_FORMAT_ASSERT(blamer_dag_edge, 64);
BLAMER_FORMAT_ASSERT(blamer_dag_path, 224);
BLAMER_FORMAT_ASSERT(blamer_dag_shard, 136);
BLAMER_FORMAT_ASSERT(blamer_dag_unit, 88);
BLAMER_FORMAT_ASSERT(blamer_metric_def_rec, 672);
BLAMER_FORMAT_ASSERT(blamer_metric_rec, 408);
BLAMER_FORMAT_ASSERT(blamer_metric_shard, 80);

/* The numbers of the public values the format stores (see the top). */
#define BLAMER_VALUE_ASSERT(name, v) _Static_assert((name) == (v), "value of " #name)

BLAMER_VALUE_ASSERT(BLAMER_BACKEND_DEVICE, 1);
BLAMER_VALUE_ASSERT(BLAMER_BACKEND_DIR, 2);
BLAMER_VALUE_ASSERT(BLAMER_HEAP_UNINIT, 0);
BLAMER_VALUE_ASSERT(BLAMER_HEAP_READY, 1);
BLAMER_VALUE_ASSERT(BLAMER_HEAP_DELETED, 2);
BLAMER_VALUE_ASSERT(BLAMER_HEAP_F_CORRUPT, 1);
BLAMER_VALUE_ASSERT(BLAMER_HEAP_F_FULL, 2);
BLAMER_VALUE_ASSERT(BLAMER_HEAP_F_FOLD, 4);
BLAMER_VALUE_ASSERT(BLAMER_PHASE_UNKNOWN, 0);
BLAMER_VALUE_ASSERT(BLAMER_PHASE_LAUNCHED, 1);
BLAMER_VALUE_ASSERT(BLAMER_PHASE_MAIN_LOOP, 2);
BLAMER_VALUE_ASSERT(BLAMER_PHASE_SHUTTING_DOWN, 3);
BLAMER_VALUE_ASSERT(BLAMER_PHASE_EXITED_CLEANLY, 4);
BLAMER_VALUE_ASSERT(BLAMER_PHASE_APP_BASE, 1000);
BLAMER_VALUE_ASSERT(BLAMER_ACTIVITY_TASK, 1);
BLAMER_VALUE_ASSERT(BLAMER_ACTIVITY_LOCK_ACQUIRE, 2);
BLAMER_VALUE_ASSERT(BLAMER_ACTIVITY_EVENT_WAIT, 3);
BLAMER_VALUE_ASSERT(BLAMER_ACTIVITY_THREAD_JOIN, 4);
BLAMER_VALUE_ASSERT(BLAMER_ACTIVITY_PROCESS_WAIT, 5);
BLAMER_VALUE_ASSERT(BLAMER_ACTIVITY_GENERIC, 6);
BLAMER_VALUE_ASSERT(BLAMER_DATA_GLOBAL, 1);
BLAMER_VALUE_ASSERT(BLAMER_DATA_PROCESS, 2);
BLAMER_VALUE_ASSERT(BLAMER_DATA_ACTIVITY, 3);
BLAMER_VALUE_ASSERT(BLAMER_FIELD_END, 0);
BLAMER_VALUE_ASSERT(BLAMER_FIELD_RAW, 1);
BLAMER_VALUE_ASSERT(BLAMER_FIELD_RAW_REF, 2);
BLAMER_VALUE_ASSERT(BLAMER_FIELD_STRING, 3);
BLAMER_VALUE_ASSERT(BLAMER_FIELD_STRING_REF, 4);
BLAMER_VALUE_ASSERT(BLAMER_FIELD_CHAR, 5);
BLAMER_VALUE_ASSERT(BLAMER_FIELD_BOOL, 6);
BLAMER_VALUE_ASSERT(BLAMER_FIELD_SIGNED, 7);
BLAMER_VALUE_ASSERT(BLAMER_FIELD_UNSIGNED, 8);
BLAMER_VALUE_ASSERT(BLAMER_FIELD_DOUBLE, 9);
BLAMER_VALUE_ASSERT(BLAMER_UNIT_NONE, 0);
BLAMER_VALUE_ASSERT(BLAMER_UNIT_CPU_NS, 1);
BLAMER_VALUE_ASSERT(BLAMER_UNIT_BYTES, 2);
BLAMER_VALUE_ASSERT(BLAMER_UNIT_COUNT, 3);
BLAMER_VALUE_ASSERT(BLAMER_UNIT_APP_BASE, 1000);
BLAMER_VALUE_ASSERT(BLAMER_BASE_NONE, 0);
BLAMER_VALUE_ASSERT(BLAMER_BASE_SECONDS, 1);
BLAMER_VALUE_ASSERT(BLAMER_BASE_BYTES, 2);
BLAMER_VALUE_ASSERT(BLAMER_CHILD_RUNNING, 1);
BLAMER_VALUE_ASSERT(BLAMER_CHILD_EXITED, 2);
BLAMER_VALUE_ASSERT(BLAMER_DROP_HEAP_FULL, 0);
BLAMER_VALUE_ASSERT(BLAMER_DROP_STRING_CUT, 1);
BLAMER_VALUE_ASSERT(BLAMER_DROP_LABEL_CUT, 2);
BLAMER_VALUE_ASSERT(BLAMER_DROP_NAME_CUT, 3);
BLAMER_VALUE_ASSERT(BLAMER_DROP_LOG_CUT, 4);
BLAMER_VALUE_ASSERT(BLAMER_DROP_STACK_OVERFLOW, 5);
BLAMER_VALUE_ASSERT(BLAMER_DROP_BUSY, 6);
BLAMER_VALUE_ASSERT(BLAMER_DROP_NO_HEAP, 7);
BLAMER_VALUE_ASSERT(BLAMER_DROP_BAD_HANDLE, 8);
BLAMER_VALUE_ASSERT(BLAMER_DROP_LABEL_VALUES_CUT, 9);
BLAMER_VALUE_ASSERT(BLAMER_DROP_BAD_VALUE, 10);
BLAMER_VALUE_ASSERT(BLAMER_DROP_REASONS, 11);
BLAMER_VALUE_ASSERT(BLAMER_METRIC_COUNTER, 1);
BLAMER_VALUE_ASSERT(BLAMER_METRIC_GAUGE, 2);
BLAMER_VALUE_ASSERT(BLAMER_METRIC_HISTOGRAM, 3);
BLAMER_VALUE_ASSERT(BLAMER_GAUGE_ALL, 1);
BLAMER_VALUE_ASSERT(BLAMER_GAUGE_LIVEALL, 2);
BLAMER_VALUE_ASSERT(BLAMER_GAUGE_MIN, 3);
BLAMER_VALUE_ASSERT(BLAMER_GAUGE_LIVEMIN, 4);
BLAMER_VALUE_ASSERT(BLAMER_GAUGE_MAX, 5);
BLAMER_VALUE_ASSERT(BLAMER_GAUGE_LIVEMAX, 6);
BLAMER_VALUE_ASSERT(BLAMER_GAUGE_SUM, 7);
BLAMER_VALUE_ASSERT(BLAMER_GAUGE_LIVESUM, 8);
BLAMER_VALUE_ASSERT(BLAMER_GAUGE_MOSTRECENT, 9);
BLAMER_VALUE_ASSERT(BLAMER_GAUGE_LIVEMOSTRECENT, 10);
BLAMER_VALUE_ASSERT(BLAMER_METRIC_PER_PROCESS, 1);
BLAMER_VALUE_ASSERT(BLAMER_HIST_FIXED, 1);
BLAMER_VALUE_ASSERT(BLAMER_HIST_EXPONENTIAL, 2);
/* What the format holds of a metric is what the API allows, plus NULs. */
BLAMER_VALUE_ASSERT(BLAMER_METRIC_NAME_BYTES, BLAMER_METRIC_NAME_MAX + 1);
BLAMER_VALUE_ASSERT(BLAMER_METRIC_HELP_BYTES, BLAMER_METRIC_HELP_MAX + 1);
BLAMER_VALUE_ASSERT(BLAMER_METRIC_LABEL_BYTES, BLAMER_METRIC_LABEL_NAMES_MAX + 1);
BLAMER_VALUE_ASSERT(BLAMER_METRIC_VALUE_BYTES, BLAMER_METRIC_VALUES_MAX + 1);
_Static_assert(BLAMER_DROP_REASONS <= BLAMER_DROP_SLOTS, "drop slots");
/* What a snapshot holds of a path is what the format can hold. */
BLAMER_VALUE_ASSERT(BLAMER_SNAP_MAX_DEPTH, BLAMER_DAG_MAX_DEPTH);
BLAMER_VALUE_ASSERT(BLAMER_SNAP_MAX_UNITS, BLAMER_DAG_MAX_UNITS);

#endif /* BLAMER_HEAP_FORMAT_H */
