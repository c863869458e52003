/* SPDX-License-Identifier: MIT */
/*
 * Reader internals shared by lib/reader/. Nothing here is public.
 *
 * The reader's one rule: heap contents are claims, never facts. A slab is
 * a byte range whose size comes from the kernel (device) or from how many
 * bytes pread() actually returned (dir); every record is copied into a
 * local variable with a bounds check before any field of it is used, so a
 * writer changing memory under us can make a copy inconsistent (caught by
 * version checks and retries) but never make us read out of bounds.
 */
#ifndef BLAMER_READER_INTERNAL_H
#define BLAMER_READER_INTERNAL_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "blamer.h"
#include "clock.h"
#include "heap_format.h"

#define RD_DEFAULT_RETRIES	10u

/*
 * What one heap may cost the reader (Documentation/reader.rst, "Limits").
 * Beyond a limit the rest is not read and the heap is reported
 * "truncated" with the limit it hit; other heaps are not affected.
 */
#define RD_DEFAULT_MAX_SLAB	(256ull << 20)	/* bytes read of one slab */
#define RD_MAX_HEAP_BYTES	(256ull << 20)	/* bytes read of one heap */
#define RD_MAX_RECORDS_KIND	65536u		/* records of one kind kept */
#define RD_MAX_FIELDS		4096u		/* fields kept of one user-data record */
/* user data shown (a record referenced twice counts twice) */
#define RD_MAX_SHOWN_FIELDS	65536u
#define RD_MAX_SHOWN_BYTES	(4u << 20)	/* their names and values */
#define RD_MAX_HEAP_UNITS	8u		/* distinct units of one heap's paths */
#define RD_MAX_SNAP_UNITS	16u		/* distinct units in the attribution view */
#define RD_MAX_SKIPPED		256u		/* skipped directory entries kept */

/* Dir backend: the first read of a slab file (its headers, and all of
 * a small heap); the rest only after the header was checked. */
#define RD_FIRST_READ		(64u << 10)
#define RD_FIRST_READ_HEADERS	4096u		/* ... when only headers are wanted */

struct rd_slab {
	uint8_t *buf;		/* live mapping (device) or private copy (dir) */
	uint8_t *again;		/* live dir heap: the same bytes read a second
				 * time, after buf (copy.c) */
	uint64_t size;		/* bytes that may be read: copied (dir) or mapped
				 * (device), and at most the slab's freeptr once
				 * rd_heap_check() has read it */
	uint64_t real_size;	/* the file's or the kernel's size of the slab */
	uint64_t map_len;	/* device: bytes mapped at buf */
	int fd;			/* live dir heap: file to re-read torn records
				 * from, else -1 */
	uint64_t id;		/* kernel slab ID or dir file index */
	uint32_t index;		/* slab_index claimed by its header */
	bool unmap;		/* buf is an mmap() of map_len bytes */
	bool owned;		/* buf was malloc()ed */
	bool copied;		/* buf is the reader's own copy (dir): nothing
				 * but a second read changes what it holds */
	bool fd_kept;		/* fd is the reader's (fd_keep.c): not closed */
};

/* One heap being read: its slabs ordered by index, and bookkeeping. */
struct rd_heap {
	struct rd_slab *slabs;	/* slabs[i] has slab_index i */
	uint32_t nslabs;
	uint32_t retries;
	uint32_t flags;		/* BLAMER_READ_*: what to decode */
	bool headers_only;
	bool check_ids;		/* slab IDs are the backend's real names */
	bool live;		/* its writer runs: a reference past the bytes
				 * read is a record appended since, not damage */
	uint16_t version;	/* the heap's format version (rd_heap_order()) */
	struct blamer_snapshot *s;	/* whose memory the decoded data takes */
	struct blamer_snap_process *p;	/* where results and problems go */
	struct rd_scratch *scratch;	/* the reader's, or NULL */
	/* the process parsed before in this snapshot, or NULL: a worker's
	 * series are most often its siblings' in the same order, and label
	 * values equal to theirs are shared, not copied (decode_metric.c) */
	const struct blamer_snap_process *like;
};

/*
 * Where a process's arrays grow while its heap is parsed: buffers the
 * reader keeps from heap to heap (memory already faulted in), copied to
 * the snapshot at their final size when the heap is done (rd_push(),
 * rd_scratch_commit()). Without them the arrays grow in the snapshot.
 */
/* Metric definitions decoded, by reference (decode_metric.c): their
 * index among the process's, or UINT32_MAX for a bad one. */
struct rd_defmap {
	blamer_ref *ref;
	uint32_t *idx;
	size_t cap, n;
	uint64_t seed;		/* secret, chosen once per reader */
};
/* Gives @m back for the next heap (emptied), or frees a large one. */
void rd_defmap_done(struct rd_defmap *m, struct rd_defmap *keep);

/*
 * Sums over processes stop at 2^64 - 1 (attrib.c's totals, the status's
 * drops): another user's heap must not wrap a total to near nothing and
 * hide this one's.
 */
static inline uint64_t rd_sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/*
 * The reader's one mix for its hash tables (decode_metric.c,
 * decode_userdata.c, attrib.c, series.c): slot = rd_mix(key ^ seed) &
 * mask, the seed a secret (rd_seed_new(), rd_ref_seed()). A heap chooses
 * what the keys are made of (references, node ids, label values): with
 * no secret it could choose keys that share a slot, and linear probing
 * would cost the square of their number. Every input bit moves every
 * output bit (MurmurHash3's finalizer).
 */
static inline uint64_t rd_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}



/* Records met, a bit per 8 bytes of each slab (record.c). */
struct rd_seen {
	uint64_t *bits[BLAMER_MAX_SLABS];
	uint32_t words[BLAMER_MAX_SLABS];	/* of bits[i] */
	uint64_t cleared;	/* bit i: bits[i] is this heap's (zeroed for it) */
};
_Static_assert(BLAMER_MAX_SLABS <= 64, "rd_seen.cleared has a bit per slab");

/* Metric definitions decoded in this snapshot, by their bytes
 * (def_share.c): a heap whose definition another heap has decoded
 * takes that decoding. */
#define RD_DEFSHARE_MAX		64u
struct rd_defshare {
	struct rd_defshare_slot *slot;
	unsigned char *keys;	/* the bytes of each definition noted */
	uint32_t n;
	uint64_t seed;		/* secret, chosen once per reader */
};
/* @r's decoding into @d if a heap of this snapshot decoded the same bytes. */
bool rd_defshare_get(struct rd_defshare *t, const struct blamer_metric_def_rec *r,
		     struct blamer_snap_metric_def *d);
/* Notes @d as the decoding of @r's bytes (if there is room). */
void rd_defshare_put(struct rd_defshare *t, const struct blamer_metric_def_rec *r,
		     const struct blamer_snap_metric_def *d);
/* Forgets every note: at the start and end of each snapshot, whose
 * strings the notes point to. */
void rd_defshare_reset(struct rd_defshare *t);
void rd_defshare_free(struct rd_defshare *t);

#define RD_SCRATCH_ARRAYS	10
struct rd_scratch {
	struct rd_grow {
		void **owner;	/* the process's array pointer, NULL: unused */
		size_t *n, elsz;
		void *buf;
		size_t cap;	/* bytes */
	} a[RD_SCRATCH_ARRAYS];
	uint32_t last;		/* a[last] grew last: most pushes are to it again */
	/* the definitions' table and its seed, from heap to heap: a
	 * getrandom() and two callocs per heap were 6 % of a scrape */
	struct rd_defmap defs;
	/* the bitmaps of the records and shards a heap's walk met, kept
	 * for the next heap (a calloc() and a free() each per heap were
	 * 4 % of a scrape) */
	struct rd_seen listed, shards;
	struct rd_defshare share;	/* this snapshot's definitions */
};
/* Frees the arrays and bitmaps (the caller frees defs and share first:
 * rd_defmap_free(), rd_defshare_free()). */
void rd_scratch_free(struct rd_scratch *sc);

/* What a snapshot holds is what the format can hold, plus a NUL. */
_Static_assert(sizeof(((struct blamer_snap_thread *)0)->name) == BLAMER_NAME_MAX + 1, "name");
_Static_assert(sizeof(((struct blamer_snap_node *)0)->name) == BLAMER_NAME_MAX + 1, "name");
_Static_assert(sizeof(((struct blamer_snap_unit_def *)0)->name) == BLAMER_NAME_MAX + 1, "name");
_Static_assert(sizeof(((struct blamer_snap_module *)0)->path) == BLAMER_PATH_MAX + 1, "path");
_Static_assert(sizeof(((struct blamer_snap_log *)0)->text) == BLAMER_LOG_MSG_MAX + 1, "text");
_Static_assert(sizeof(((struct blamer_snap_process *)0)->cmdline) == BLAMER_CMDLINE_MAX + 1,
	       "cmdline");
_Static_assert(sizeof(((struct blamer_snap_activity *)0)->label) ==
	       sizeof(((struct blamer_activity *)0)->label) + 1, "label");
_Static_assert(sizeof(((struct blamer_snap_process *)0)->role) == BLAMER_NAME_MAX + 1, "role");
_Static_assert(sizeof(((struct blamer_snap_process *)0)->instance) == BLAMER_NAME_MAX + 1, "inst");
_Static_assert(BLAMER_DROP_MAX == BLAMER_DROP_SLOTS, "drop slots");

/* A heap format version this reader reads (heap-format.rst, "Versions"). */
static inline bool rd_version_ok(uint32_t v)
{
	return v >= BLAMER_HEAP_VERSION_MIN && v <= BLAMER_HEAP_VERSION;
}

/*
 * The reader's files, each calling only those below it:
 *
 *   reader.c                  front: open, snapshot, wait, release
 *   series.c                  the service view (metrics merged, roles)
 *   attrib.c                  the attribution view
 *   parent_claim.c            dir: how dead processes ended, as their parents say
 *   pipeline.c                one heap at a time, for every backend: keep, read,
 *                             check, parse, drop
 *   dir.c  dev.c              backends (struct rd_backend_ops): list heaps, hand
 *                             back slab bytes
 *   dir_read.c                dir: reading a heap's files
 *   dir_buf.c  dir_dead.c  dir_trust.c  dir_comm.c
 *                             dir: buffer and hints, dead processes, trust
 *                             rules, comm
 *   dir_list.c                dir: the slab files, in heap order
 *   alive.c  keep.c  fd_keep.c
 *                             kept between snapshots: writers alive, dead heaps,
 *                             live heaps' files
 *   parse.c                   one heap: checks, then the record list
 *   decode_thread.c           a thread's stack (its activities' user data)
 *   decode_*.c                one decoder per record type
 *   def_share.c               metric definitions decoded once per snapshot
 *   module_index.c            the modules as a table of address ranges
 *   record.c  slabs.c         block and owner checks, arrays, strings; slab and
 *                             heap headers
 *   copy.c                    bytes out of slabs
 *   carry.c                   what a long-lived reader carries between snapshots
 *   snapshot.c                the model: processes, problems, freeing
 *   names.c metric_names.c    (alone) names of values
 *
 * scripts/check-layers holds the files to it (an exact name wins over a
 * pattern).
 */

/* slabs.c */
/* Orders raw slabs by their header's slab_index; marks problems in h->p. */
bool rd_heap_order(struct rd_heap *h, struct rd_slab *raw, uint32_t n);
/* Checks the heap header of slab 0 (into @hh) and the slab ids it names,
 * and keeps only its published slabs. False: nothing more to read. */
bool rd_heap_check(struct rd_heap *h, struct blamer_heap_header *hh);
void rd_slab_drop(struct rd_slab *s);

/* copy.c: every read of heap bytes; false if out of bounds. The copies
 * of records and counters are inline: every record decoded and every
 * counter read goes through them (a call and a call within were a tenth
 * of a series' decoding). */
/* Slab @slab if @len bytes at @off of it may be read, else NULL. */
static inline const struct rd_slab *rd_slab_holds(const struct rd_heap *h, uint32_t slab,
						  uint64_t off, size_t len)
{
	const struct rd_slab *s;

	if (slab >= h->nslabs)
		return NULL;
	s = &h->slabs[slab];
	return s->buf && off <= s->size && len <= s->size - off ? s : NULL;
}

/* @len bytes at @off of slab @slab (no record rules). */
static inline bool rd_copy_raw(const struct rd_heap *h, uint32_t slab, uint64_t off, size_t len,
			       void *dst)
{
	const struct rd_slab *s = rd_slab_holds(h, slab, off, len);

	if (!s)
		return false;
	memcpy(dst, s->buf + off, len);
	return true;
}

/* @len bytes of the record at @ref: 8-aligned, past the slab header. */
static inline bool rd_copy(const struct rd_heap *h, blamer_ref ref, size_t len, void *dst)
{
	uint32_t off = blamer_ref_offset(ref);

	if (off < sizeof(struct blamer_slab_header) || off % BLAMER_ALIGN)
		return false;
	return rd_copy_raw(h, blamer_ref_slab(ref), off, len, dst);
}

/*
 * Counters a live writer keeps adding to: @n u64 at @ref, each read with
 * one 8-byte load where the copy is aligned (a byte-wise copy could tear
 * a value, and a counter that looks smaller than before is a reset to
 * Prometheus). Bounds as rd_copy().
 */
static inline bool rd_load_u64s(const struct rd_heap *h, blamer_ref ref, size_t n, uint64_t *dst)
{
	uint32_t off = blamer_ref_offset(ref);
	const struct rd_slab *s;
	const uint8_t *src;
	size_t i;

	/* the bounds of rd_copy(), then one load per counter, not a copy
	 * and the loads */
	if (off < sizeof(struct blamer_slab_header) || off % BLAMER_ALIGN ||
	    n > SIZE_MAX / sizeof(*dst))
		return false;
	s = rd_slab_holds(h, blamer_ref_slab(ref), off, n * sizeof(*dst));
	if (!s)
		return false;
	src = s->buf + off;
	if ((uintptr_t)src % sizeof(*dst)) {
		memcpy(dst, src, n * sizeof(*dst));
		return true;	/* caller's unaligned buffer: no writer there */
	}
	for (i = 0; i < n; i++)
		dst[i] = __atomic_load_n((const uint64_t *)src + i, __ATOMIC_RELAXED);
	return true;
}
/* Live dir heap: reads @len bytes at @ref from the file again into the
 * first read (a record it caught mid-write); false if there is no file
 * or it is out of range. */
bool rd_refresh(const struct rd_heap *h, blamer_ref ref, size_t len);

/*
 * A record a writer may change while it is read (copy.c explains the
 * ordering): rd_read_stable() copies @len bytes at @ref into @first and,
 * after an acquire fence (from a dir slab's second read), into @second,
 * and retries while @settled says the two copies do not show one state
 * of the record, at most h->retries times more. @settled may change @len
 * for the next try (buffers of @cap bytes, or malloc()ed ones it grows
 * with @grow); @first and @second hold the last try's copies.
 */
struct rd_stable {
	blamer_ref ref;
	size_t len;		/* bytes to copy */
	size_t cap;		/* bytes first and second can hold */
	bool grow;		/* first and second are malloc()ed: grown as needed */
	uint8_t *first, *second;
	/* set by rd_read_stable(): the second copy, in @second or (a dir
	 * slab's) where the reader's own copy of the slab has it */
	const uint8_t *other;
	size_t seq_off;		/* rd_settled_seq(): offset of the u32 version */
	bool (*settled)(struct rd_stable *r);
	void *arg;		/* for settled() */
	bool one_source;	/* set by rd_read_stable(): both copies come from
				 * one private buffer nothing writes (no need to
				 * compare them) */
};
enum rd_read {
	RD_READ_STABLE,		/* first holds one state of the record */
	RD_READ_TORN,		/* it kept changing */
	RD_READ_BAD,		/* out of bounds */
	RD_READ_NOMEM,		/* no memory to grow the copies */
};
enum rd_read rd_read_stable(const struct rd_heap *h, struct rd_stable *r);
/*
 * Does a snapshot with @flags (BLAMER_READ_*) read any record through
 * rd_read_stable()? Logs, modules, user data and thread stacks are; the
 * rest (processes, DAG, metrics: write-once parts and counters read with
 * rd_load_u64s()) never compare two copies. Without such a record a live
 * dir heap is read once, not twice: the second read was half of the bytes
 * an exporter of the service's series copied. rd_read_stable() refuses a
 * live dir slab that has no second read, so a decoder added without
 * updating this fails loudly (corrupt), never reads a torn record.
 */
static inline bool rd_reads_stable(uint32_t flags)
{
	const uint32_t none = BLAMER_READ_NO_LOG | BLAMER_READ_NO_MODULES | BLAMER_READ_NO_USERDATA;

	return (flags & none) != none || !(flags & (BLAMER_READ_NO_STACKS | BLAMER_READ_NO_THREADS));
}
/* The copies are byte for byte the same. */
bool rd_settled_same(struct rd_stable *r);
/* ... and the u32 version at seq_off is even (no write in progress). */
bool rd_settled_seq(struct rd_stable *r);

/*
 * Records met, one bit per 8-byte offset of each slab's bytes read
 * (1/64 of them): a loop or a record reached twice is caught exactly,
 * at a cost that follows the heap's size and nothing it claims.
 */

/* User data already decoded, by reference: each record is decoded once
 * however many activities point at it (open addressing). */
struct rd_ud {
	blamer_ref ref;
	struct blamer_snap_fields f;
	uint64_t bytes;		/* names and values of f */
	bool over;		/* not decoded: the heap's budget was spent */
};
struct rd_udcache {
	struct rd_ud *v;
	size_t cap, n;
};

/* What the decoders of one heap share (parse.c sets it up). */
struct rd_ctx {
	struct rd_heap *h;
	struct blamer_snap_process *p;
	int64_t pid, stamp;	/* owner identity of the process record */
	blamer_ref ud_process, ud_global;	/* first listed USERDATA by scope */
	blamer_ref logs[16];
	unsigned nlogs;
	struct bl_clock clock;	/* the heap's activity clock */
	struct bl_clock now;	/* ours, taken after the first stamps were read */
	bool have_now;
	struct rd_seen *listed;	/* records met on the list */
	struct rd_seen *shards;	/* DAG and metric shards summed so far: each counts once */
	struct rd_udcache ud;
	uint64_t shown_fields, shown_bytes;	/* user data shown so far */
	uint32_t units[RD_MAX_HEAP_UNITS];	/* distinct units of the paths */
	uint32_t nunits;
	uint32_t named[RD_MAX_HEAP_UNITS];	/* units this heap named (DAG_UNIT) */
	uint32_t nnamed;
	struct rd_defmap defs;	/* metric definitions met */
};

/* parent_claim.c: dir backend: each dead process without kernel facts
 * gets how the parent that launched it says it ended, if one did. */
void rd_join_parent_claims(struct blamer_snapshot *s);

/* decode_drops.c: the DROPS record (version 3). */
void rd_decode_drops(struct rd_ctx *c, blamer_ref ref);

/* record.c */
/* A new secret seed for a hash table (rd_mix()): the kernel's random
 * bytes, else (no entropy yet) the clock, still not fixed. */
uint64_t rd_seed_new(void);
/* The secret seed of the tables keyed by a heap's references: the
 * reader's, chosen once and kept from heap to heap with the definitions'
 * table (c->defs.seed). */
uint64_t rd_ref_seed(struct rd_ctx *c);
/* The block header at @ref for a record of at least @min bytes, of @type
 * (0: any). False if the block is bad (reported) or of another type. */
bool rd_block(struct rd_ctx *c, blamer_ref ref, size_t min, uint32_t type,
	      struct blamer_block *b);
/* rd_block() for a record of @len bytes and @type, and the record's @len
 * bytes copied into @rec (its header is *@b: checked, where @rec's may be
 * a later copy). False as rd_block(). */
bool rd_record(struct rd_ctx *c, blamer_ref ref, uint32_t type, struct blamer_block *b,
	       void *rec, size_t len);
/* A record a chain leads to (a shard): rd_block() of any type and size,
 * and its first @len bytes in @rec if b->size >= @len (the caller checks
 * the type and size, and says what the chain is). */
bool rd_chained(struct rd_ctx *c, blamer_ref ref, struct blamer_block *b, void *rec, size_t len);
/* A per-process record's owner: valid (data_id set) and the heap's. */
bool rd_owner_ok(struct rd_ctx *c, const struct blamer_owner *o);
/* Grows an array of the process by one zeroed element (in the snapshot's
 * memory); NULL at the bound or out of memory (reported). */
void *rd_push(struct rd_ctx *c, void **arr, size_t *n, size_t elsz);
/* The arrays grown in scratch buffers, copied to the snapshot. */
void rd_scratch_commit(struct rd_heap *h);
/* A fixed char array made printable and NUL-terminated (dst has n+1). */
void rd_sanitize(char *dst, const char *src, size_t n);
/* How many of the first @n bytes of @s are printable ASCII (0x20-0x7e). */
size_t rd_printable_span(const char *s, size_t n);
/* An activity timestamp as CLOCK_MONOTONIC ns (0: unknown); call after
 * the stamp was copied, so the reader's clock pair comes after it. */
uint64_t rd_stamp_ns(struct rd_ctx *c, uint64_t stamp);
/* Readies @s's bitmap of @slab for this heap (rd_seen_add()); false
 * out of memory (reported). */
bool rd_seen_clear(struct rd_ctx *c, struct rd_seen *s, uint32_t slab);
/* Marks @ref met: 1 if it was not, 0 if it was, -1 out of memory
 * (reported). @ref must be one rd_copy() accepts. Inline: every record
 * listed and every shard is marked. */
static inline int rd_seen_add(struct rd_ctx *c, struct rd_seen *s, blamer_ref ref)
{
	uint32_t slab = blamer_ref_slab(ref);
	uint64_t bit = blamer_ref_offset(ref) / BLAMER_ALIGN, mask;

	if (slab >= c->h->nslabs || bit >= c->h->slabs[slab].size / BLAMER_ALIGN)
		return 0;	/* not a record: callers check first */
	if (!(s->cleared & (1ull << slab)) && !rd_seen_clear(c, s, slab))
		return -1;
	mask = 1ull << (bit % 64);
	if (s->bits[slab][bit / 64] & mask)
		return 0;
	s->bits[slab][bit / 64] |= mask;
	return 1;
}
void rd_seen_free(struct rd_seen *s);
/* The end of a heap's walk: with @keep, @s's small bitmaps stay for the
 * next heap (each cleared when that heap first meets its slab) and the
 * others are freed; without, all are. */
void rd_seen_done(struct rd_seen *s, bool keep);
/* A reference past the bytes read but inside the slab, in a heap whose
 * writer runs: a record appended after the read began. */
bool rd_ref_pending(const struct rd_heap *h, blamer_ref ref, size_t len);

/* decode_*.c: one decoder per record type; each copies and checks its
 * record and adds what it shows to c->p. */
void rd_decode_process(struct rd_ctx *c, blamer_ref ref);
void rd_decode_child(struct rd_ctx *c, blamer_ref ref);
void rd_decode_thread(struct rd_ctx *c, blamer_ref ref);
void rd_decode_userdata(struct rd_ctx *c, blamer_ref ref, struct blamer_snap_fields *out);
void rd_decode_module(struct rd_ctx *c, blamer_ref ref);
void rd_decode_log(struct rd_ctx *c, blamer_ref ref);
void rd_decode_node(struct rd_ctx *c, blamer_ref ref);
void rd_decode_edge(struct rd_ctx *c, blamer_ref ref);
void rd_decode_unit(struct rd_ctx *c, blamer_ref ref);
void rd_decode_path(struct rd_ctx *c, blamer_ref ref);
void rd_decode_metric_def(struct rd_ctx *c, blamer_ref ref);
void rd_decode_metric(struct rd_ctx *c, blamer_ref ref);
void rd_defmap_free(struct rd_defmap *m);
/* decode_metric.c: after the heap's arrays have their final place, each
 * series' definition (kept by index while parsing) becomes a pointer. */
void rd_metrics_link(struct blamer_snap_process *p);

/* module_index.c: p->module_spans from p->modules (in @s's memory); left
 * NULL out of memory. */
void rd_index_modules(struct blamer_snapshot *s, struct blamer_snap_process *p);

/* parse.c: one heap, its slabs ordered (rd_heap_order), into h->p. */
void rd_heap_parse(struct rd_heap *h);

/* Dir backend: how many bytes of a slab file the last snapshot read. */
struct rd_hint {
	int32_t pid;
	uint32_t idx;
	uint64_t start, bytes;
	uint32_t seq;
};

/*
 * The order of heaps throughout the reader: by pid, then start time. The
 * dir backend lists its files in it, the views show processes in it, and
 * what a long-lived reader carries is looked up in it (alive.c relies on
 * being asked in the order the files come in).
 */
static inline int rd_pid_start_cmp(int32_t pa, uint64_t sa, int32_t pb, uint64_t sb)
{
	if (pa != pb)
		return pa < pb ? -1 : 1;
	return sa < sb ? -1 : sa > sb;
}

/*
 * carry.c: what a long-lived reader carries from one snapshot to the
 * next: the last snapshot's entries (sorted, looked up) and the current
 * one's (appended), at most @max of them, of @elsz bytes each.
 */
struct rd_carry {
	void *last, *cur;
	size_t nlast, ncur, caplast, capcur;
	size_t elsz, max;
};
#define RD_CARRY(type, max_entries) ((struct rd_carry){ .elsz = sizeof(type), .max = (max_entries) })
/* Room for one more entry of the current snapshot; NULL if out of memory
 * or at max (it is not carried). */
void *rd_carry_add(struct rd_carry *c);
/* The last snapshot's entry @cmp says is @key, or NULL. */
void *rd_carry_find(const struct rd_carry *c, const void *key,
		    int (*cmp)(const void *key, const void *entry));
/* The end of a snapshot: the current entries (sorted by @sort, if not
 * NULL) become the last ones; the last ones' array is reused. */
void rd_carry_swap(struct rd_carry *c, int (*sort)(const void *, const void *));
/* Closes the descriptor at byte @fd_off of each last entry not carried
 * over (one of -1: none), and forgets those entries. */
void rd_carry_close_last(struct rd_carry *c, size_t fd_off);
void rd_carry_free(struct rd_carry *c);

/*
 * keep.c: dead heaps kept decoded for the next snapshot
 * (BLAMER_READ_KEEP_DEAD). A heap is reused only while each of its slabs
 * is the same as when it was decoded: the backend says what "the same"
 * is (dir: the file's device, inode, size, mtime and ctime; device: the
 * slab's ID, creation time and size), and the next read hint (dir).
 */
struct rd_kept_slab {
	uint64_t id, v[5];
	uint64_t hint;
};

struct rd_kept {
	int32_t pid;
	uint32_t nslabs;
	uint64_t start, heap_key;
	struct rd_kept_slab *slabs;
	struct blamer_snapshot *one;	/* the process and its unit names */
	size_t bytes;
};

/* Kept heaps (struct rd_kept) by pid, start and heap key. */
struct rd_keep {
	struct rd_carry c;
	size_t nbytes;		/* kept by the current snapshot's */
};

struct rd_kept *rd_keep_find(struct rd_keep *k, int32_t pid, uint64_t start, uint64_t heap_key);
/* Are @slabs those @e was decoded from? */
bool rd_keep_same(const struct rd_kept *e, const struct rd_kept_slab *slabs, uint32_t n);
/* @e copied into @s as @p (filled in whole), and kept for the next
 * snapshot; false out of memory (@p as it was: read the heap instead). */
bool rd_keep_reuse(struct rd_keep *k, struct rd_kept *e, struct blamer_snapshot *s,
		   struct blamer_snap_process *p);
/* Keeps @p, just decoded into @s with the unit names s->uid_unit_defs[@first_def..],
 * read from @slabs, for the next snapshot (if it fits, and was read
 * neither torn nor unreadable). */
void rd_keep_add(struct rd_keep *k, const struct blamer_snapshot *s,
		 const struct blamer_snap_process *p, size_t first_def,
		 const struct rd_kept_slab *slabs, uint32_t n);
/* The end of a snapshot: what it kept is what the next may reuse; the
 * heaps it did not see are freed. */
void rd_keep_swap(struct rd_keep *k);
void rd_keep_free(struct rd_keep *k);

/*
 * alive.c: is a dir heap's writer alive? /proc, or the pidfds a
 * long-lived reader keeps for the writers it found alive.
 */
struct rd_writer {
	int32_t pid;
	int pidfd;		/* -1: closed, or carried over */
	uint64_t start;
	uint64_t checked_ns;	/* when /proc was last read (CLOCK_MONOTONIC) */
	char comm[16];
	bool exited;		/* its pidfd polled readable */
	bool taken;		/* looked up by the current snapshot */
};

struct rd_alive {
	struct rd_carry c;	/* struct rd_writer by pid and start */
	struct pollfd *pfd;
	size_t pfdcap;
	size_t npidfds, budget;	/* held by the current snapshot's; at most */
	uint64_t fd_limit;	/* RLIMIT_NOFILE's soft limit */
	uint64_t now_ns;
	uint64_t snapshots;
	bool no_pidfd;		/* pidfd_open() refused: /proc every time */
	bool comm_once;		/* BLAMER_READ_COMM_ONCE: a watched name not read again */
};
/* The start of a snapshot: which watched writers have exited. */
void rd_alive_begin(struct rd_alive *a);
/* What /proc says of a heap's claim to be the writer @pid started at
 * @start, its files uid @owner's (alive.c, proc_check()). */
enum rd_verdict {
	RD_WRITER_DEAD,
	RD_WRITER_LIVE,
	RD_WRITER_DISPROVED_START,	/* that pid runs, started before @start */
	RD_WRITER_DISPROVED_UID,	/* it runs as no uid that made @owner's files */
};
/* Is the writer @pid started at @start alive? If so, its comm (@commlen
 * bytes at most, sanitized) is in @comm; if /proc disproves the claim,
 * why is in @why. Asked in (pid, start) order. */
enum rd_verdict rd_alive(struct rd_alive *a, int32_t pid, uint64_t start, uid_t owner,
			 char *comm, size_t commlen, char *why, size_t whylen);
/* The end of a snapshot: the pidfds of writers it did not see are closed. */
void rd_alive_end(struct rd_alive *a);
/* The pidfds rd_alive() may still open in this snapshot. */
uint64_t rd_alive_pidfds_to_come(const struct rd_alive *a);
void rd_alive_free(struct rd_alive *a);

/*
 * fd_keep.c: a long-lived reader's descriptors of live dir heaps' slab
 * files, kept open across snapshots (the trust rules they keep: there).
 * Files are taken and put in dir.c's order (rd_dfile_cmp()).
 */
struct rd_dfile;
struct rd_fdkeep {
	struct rd_carry c;	/* struct rd_kept_fd */
	size_t n, budget;	/* kept by the current snapshot; at most */
	uint64_t fd_limit;	/* RLIMIT_NOFILE's soft limit */
	uint64_t snapshots;
};
void rd_fdkeep_begin(struct rd_fdkeep *k);
/* The descriptor kept of file @f if its name is still inode f->ino of
 * device @dev (as readdir() and the directory say; ino 0: unknown), now
 * the caller's; else -1. */
int rd_fdkeep_take(struct rd_fdkeep *k, const struct rd_dfile *f, uint64_t dev);
/* Keeps @fd, opened on file @f (inode f->ino of device @dev), for the next snapshot:
 * true if kept (then the keep closes it), false if the caller still must.
 * @reserve: descriptors others of the reader may still open (pidfds). */
bool rd_fdkeep_put(struct rd_fdkeep *k, const struct rd_dfile *f, uint64_t dev, int fd,
		   uint64_t reserve);
/* The end of a snapshot: the descriptors it did not take are closed. */
void rd_fdkeep_end(struct rd_fdkeep *k);
void rd_fdkeep_free(struct rd_fdkeep *k);

/* Device backend: a slab's mapping, kept from one snapshot to the next. */
struct rd_devmap {
	uint64_t id, create_time_ns, len;
	void *addr;		/* NULL: taken by the current snapshot */
};

/*
 * pipeline.c: one heap at a time, for every backend. A backend only lists
 * heaps and hands back their slabs' bytes (struct rd_backend_ops); the
 * pipeline owns the rules every heap goes through: read in full or only
 * its headers, reuse a dead heap kept decoded, order and check the slabs,
 * parse, drop the slabs, keep what may be kept.
 */

/* One heap on its way through the pipeline, as its backend sees it. */
struct rd_walk {
	struct blamer_snapshot *s;
	struct blamer_snap_process *p;	/* the heap's process */
	uint32_t n;		/* slabs listed (more than BLAMER_MAX_SLABS:
				 * the backend reads that many) */
	bool headers_only;	/* read just the headers */
	bool keep;		/* dead and read in full: to keep decoded */
	struct rd_kept_slab ks[BLAMER_MAX_SLABS];	/* what identifies each slab */
};

/* What a backend's read() handed back. */
enum rd_got {
	RD_GOT_SLABS,		/* slabs to order and parse */
	RD_GOT_UNPARSED,	/* slabs not to parse (why is in w->p) */
	RD_GOT_NO_HEAP,		/* nothing of a heap: the process is not shown */
};

struct blamer_reader;
struct rd_backend_ops {
	/* The start of a snapshot: list the heaps; 0, or -errno and a
	 * message (nothing listed is no error). */
	int (*list)(struct blamer_reader *r, struct blamer_snapshot *s, char *err, size_t errlen);
	/* The next heap listed: its slab count (0: none left). */
	uint32_t (*next)(struct blamer_reader *r);
	/* What the backend knows of that heap's process, into w->p: pid,
	 * start, uid, heap_key, state, comm, ... */
	void (*facts)(struct blamer_reader *r, struct rd_walk *w);
	/* What identifies each slab now (w->ks), without reading it; false
	 * if it cannot say (the heap is read again). */
	bool (*identify)(struct blamer_reader *r, struct rd_walk *w);
	/* The heap was reused from w->ks: what the backend notes of it. */
	void (*reused)(struct blamer_reader *r, const struct rd_walk *w);
	/* The heap's slabs into @raw (at most BLAMER_MAX_SLABS, *@nraw),
	 * and if w->keep what identifies each into w->ks. Every slab
	 * handed back is dropped by the pipeline (rd_slab_drop()). */
	enum rd_got (*read)(struct blamer_reader *r, struct rd_walk *w, struct rd_slab *raw,
			    uint32_t *nraw);
	/* The heap was parsed and its slabs dropped (NULL: nothing to do). */
	void (*parsed)(struct blamer_reader *r, struct rd_walk *w);
	/* May the heap just read be kept decoded as w->ks says? */
	bool (*keepable)(struct blamer_reader *r, const struct rd_walk *w);
	/* The end of a snapshot, also after an error. */
	void (*end)(struct blamer_reader *r);
	int (*release)(struct blamer_reader *r, const struct blamer_snap_process *p,
		       char *err, size_t errlen);
	/* The backend's own account (NULL: it has none). */
	int (*status)(struct blamer_reader *r, struct blamer_backend_status *st,
		      char *err, size_t errlen);
	/* Frees what the backend keeps between snapshots. */
	void (*close)(struct blamer_reader *r);
	/* A dead heap is read in full only if BLAMER_READ_DEAD_FULL asks:
	 * else its headers and process record (a summary). */
	bool summarize_dead;
};
extern const struct rd_backend_ops rd_dir_ops, rd_dev_ops;

/* Every heap the backend lists into s->procs; 0 or -errno + message. */
int rd_pipeline_snapshot(struct blamer_reader *r, struct blamer_snapshot *s,
			 char *err, size_t errlen);

/* Dir backend: one snapshot's walk of the directory. A heap is a pid,
 * start time and seq (where.h: a process image's later heaps there). */
struct rd_dfile {
	int32_t pid;
	uint64_t start;
	uint32_t seq;
	uint32_t idx;
	unsigned char type;	/* readdir's d_type, DT_UNKNOWN if it does not say */
	uint64_t ino;		/* readdir's d_ino: which file the name is */
};
struct rd_dirwalk {
	struct blamer_reader *r;
	struct blamer_snapshot *s;
	int fd;			/* the directory */
	uid_t owner;		/* whose its files must be */
	uint64_t dev;		/* the directory's st_dev; 0: not known */
	struct rd_dfile *files;	/* sorted by heap and index */
	size_t nfiles, at, heap;	/* next heap's first file; this one's */
	uint64_t mtime_ns;	/* the heap's latest file modification */
	bool held;		/* some process holds its first file's lock */
};

/* Dir backend: its files, each a job (dir.c holds its ops). */
#define RD_MAX_DIR_FILES	(1u << 20)	/* slab files listed, at most */
/* dir_list.c: the slab files of d->fd, sorted by heap and index; the rest skipped. */
int rd_dir_list_files(struct rd_dirwalk *d, struct rd_dfile **out, size_t *nout,
		      char *err, size_t errlen);
int rd_dfile_cmp(const void *a, const void *b);
void rd_dfile_name(char *buf, const struct rd_dfile *f);
/* dir_trust.c: the directory opened under the writer's rules: 0 (d->fd,
 * d->owner), 1 if there is none yet, or -errno with a message. */
int rd_dir_open(struct rd_dirwalk *d, char *err, size_t errlen);
/* Why the slab file @name did not open with @err. */
const char *rd_dir_open_why(struct rd_dirwalk *d, const char *name, int err);
/* What says a slab file is the one a kept heap was decoded from. */
void rd_dir_kept_slab(struct rd_kept_slab *ks, const struct rd_dfile *f, const struct stat *st);
/* dir_buf.c: the reader's buffer, and how far each file was read last. */
bool rd_dir_buf_room(struct blamer_reader *r, size_t off, size_t len);
void rd_dir_buf_trim(struct blamer_reader *r);
size_t rd_dir_read_at(int fd, uint8_t *dst, size_t len, uint64_t off);
uint64_t rd_dir_hint_of(const struct blamer_reader *r, const struct rd_dfile *f);
void rd_dir_hint_note(struct blamer_reader *r, const struct rd_dfile *f, uint64_t bytes);
void rd_dir_hint_swap(struct blamer_reader *r);
/* dir_read.c: the backend's read() (struct rd_backend_ops). */
enum rd_got rd_dir_read(struct blamer_reader *r, struct rd_walk *w, struct rd_slab *raw,
			uint32_t *nrawp);
/* dir_dead.c: a dead process's last sign of life, a heap of another
 * boot, files quiet for a second. */
void rd_dir_last_seen(struct blamer_snap_process *p, uint64_t mtime_ns);
bool rd_dir_before_boot(struct rd_dirwalk *d, const struct rd_dfile *f);
bool rd_dir_quiet(const struct rd_kept_slab *ks, uint32_t n);
/* dir_comm.c: a dead heap's comm from its cmdline. */
void rd_comm_from_cmdline(struct blamer_snap_process *p);

/* Device backend: one snapshot's walk of the listing (r->list). */
struct rd_devwalk {
	uint32_t n, at, heap;	/* listed; next heap's first; this one's */
	uint64_t boot_ns;	/* CLOCK_BOOTTIME after LIST */
};

/* reader.c, dir.c, dev.c */
struct blamer_reader {
	const struct rd_backend_ops *ops;
	struct blamer_reader_opts opts;
	enum blamer_backend backend;
	char source[256];
	bool explicit_dir;	/* the directory was named, not the default */
	int devfd;		/* device backend */
	uint64_t generation;
	/* dir: slab copies, kept for the next heap and snapshot */
	uint8_t *buf;
	size_t bufcap;
	struct rd_pool *pool;	/* decoded data's memory, across snapshots */
	struct rd_scratch scratch;	/* arrays of the heap being parsed */
	/* device: LIST's buffer, kept at the size the last snapshot needed */
	struct blamer_slab_info *list;
	uint32_t list_cap;
	/* device: mappings (struct rd_devmap) by slab id */
	struct rd_carry maps;
	uint64_t map_bytes;	/* mapped by the current snapshot's */
	/* dir: reads (struct rd_hint) by file, sorted as its files are */
	struct rd_carry hints;
	struct rd_keep keep;	/* BLAMER_READ_KEEP_DEAD */
	struct rd_alive alive;	/* dir: writers found alive */
	struct rd_fdkeep fdkeep;	/* dir: live heaps' files kept open */
	struct rd_dirwalk dw;	/* dir: the snapshot being taken */
	struct rd_devwalk vw;	/* device: the snapshot being taken */
};

/* snapshot.c: the model */
/*
 * The memory a long-lived reader's snapshots pass on to the next: a
 * freed snapshot leaves its arena here, the next one decodes into it
 * (no page faults, no malloc). Counted: the reader and each of its
 * snapshots hold a reference, freed in any order, from any thread.
 */
struct rd_pool;
struct rd_pool *rd_pool_new(void);
void rd_pool_put(struct rd_pool *pool);
/* A new, empty snapshot (with the memory its decoded data comes from,
 * @pool's if given). */
struct blamer_snapshot *rd_snapshot_new(struct rd_pool *pool);
/* @n bytes, 8-aligned, freed with the snapshot; NULL out of memory. */
void *rd_alloc(struct blamer_snapshot *s, size_t n);
/* Appends a zeroed process to s->procs; NULL on ENOMEM. */
struct blamer_snap_process *rd_new_process(struct blamer_snapshot *s);
/* Drops the last process appended (it turned out to be no heap). */
void rd_drop_last_process(struct blamer_snapshot *s);
/* Notes a directory entry that was not read, and why. */
void rd_skip(struct blamer_snapshot *s, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Health @h if worse than p's, and the first reason given. */
void rd_problem(struct blamer_snap_process *p, enum blamer_health h,
		const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void rd_process_free(struct blamer_snap_process *p);
/* @from, a process of another snapshot, copied into @s's memory as @to:
 * false (and @to emptied) out of memory. */
bool rd_process_copy(struct blamer_snapshot *s, struct blamer_snap_process *to,
		     const struct blamer_snap_process *from);
/* Appends @uid's unit definition to s->uid_unit_defs; false out of memory. */
bool rd_add_unit_def(struct blamer_snapshot *s, uint32_t uid, const struct blamer_snap_unit_def *d);
/* decode_dag.c: s->uid_unit_defs sorted by uid and unit and cut to one per
 * (uid, unit), the least by (name, base): what blamer_snap_uid_unit_def()
 * looks up; s->unit_defs made of them, one per unit, the least of every
 * uid's: what blamer_snap_unit_def() looks up. False out of memory
 * (unit_defs left empty). */
bool rd_merge_unit_defs(struct blamer_snapshot *s);
/* The arena bytes rd_process_copy() of @p takes. */
size_t rd_process_copy_size(const struct blamer_snap_process *p);
/* The next block of @s's arena: @n bytes (a snapshot whose size is
 * known takes one block of exactly that). */
void rd_snapshot_reserve(struct blamer_snapshot *s, size_t n);
/* The bytes of @s's arena. */
size_t rd_snapshot_bytes(struct blamer_snapshot *s);
/* A one-line message into the caller's buffer (if any). */
void rd_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* attrib.c: sorts processes (leaving dead ones out for
 * BLAMER_READ_LIVE_ONLY), builds the attribution view over them (totals,
 * units, the inclusive tree), merges their nodes and unit names. */
void rd_finish_snapshot(struct blamer_snapshot *s);
/* series.c: the service view, after rd_finish_snapshot(): s->series
 * merged from the processes' metrics, s->roles (made again if made). */
void rd_service_view(struct blamer_snapshot *s);

#endif /* BLAMER_READER_INTERNAL_H */
