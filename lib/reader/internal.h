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
#include <sys/types.h>

#include "blamer.h"
#include "clock.h"
#include "heap_format.h"

#define RD_DEFAULT_RETRIES	10u
#define RD_DEFAULT_MAX_SLAB	(256ull << 20)
/* Upper bounds on what one heap may make us allocate. */
#define RD_MAX_RECORDS_KIND	65536u
#define RD_MAX_FIELDS		4096u

struct rd_slab {
	uint8_t *buf;		/* live mapping (device) or private copy (dir) */
	uint64_t size;		/* trusted size: kernel's, or bytes read */
	uint64_t real_size;	/* dir: file size when only headers were read */
	int fd;			/* dir: file to re-read torn records from, else -1 */
	uint64_t id;		/* kernel slab ID or dir file index */
	uint32_t index;		/* slab_index claimed by its header */
	bool unmap;		/* buf is an mmap() of size bytes */
	bool owned;		/* buf was malloc()ed */
};

/* One heap being read: its slabs ordered by index, and bookkeeping. */
struct rd_heap {
	struct rd_slab *slabs;	/* slabs[i] has slab_index i */
	uint32_t nslabs;
	uint32_t retries;
	bool headers_only;
	bool check_ids;		/* slab IDs are the backend's real names */
	struct blamer_snap_process *p;	/* where results and problems go */
};

/* What a snapshot holds is what the format can hold, plus a NUL. */
_Static_assert(sizeof(((struct blamer_snap_thread *)0)->name) == BLAMER_NAME_MAX + 1, "name");
_Static_assert(sizeof(((struct blamer_snap_node *)0)->name) == BLAMER_NAME_MAX + 1, "name");
_Static_assert(sizeof(((struct blamer_snap_module *)0)->path) == BLAMER_PATH_MAX + 1, "path");
_Static_assert(sizeof(((struct blamer_snap_log *)0)->text) == BLAMER_LOG_MSG_MAX + 1, "text");
_Static_assert(sizeof(((struct blamer_snap_process *)0)->cmdline) == BLAMER_CMDLINE_MAX + 1,
	       "cmdline");
_Static_assert(sizeof(((struct blamer_snap_activity *)0)->label) ==
	       sizeof(((struct blamer_activity *)0)->label) + 1, "label");

/*
 * The reader's files, each calling only those below it:
 *
 *   reader.c                  front: open, snapshot, wait, release
 *   dir.c  dev.c  attrib.c    backends; the attribution view
 *   parse.c                   one heap: checks, then the record list
 *   decode_*.c                one decoder per record type
 *   record.c                  block and owner checks, arrays, strings
 *   copy.c  slabs.c           bytes out of slabs; slab and heap headers
 *   snapshot.c                the model: processes, problems, freeing
 *   names.c                   (alone) names of values
 */

/* slabs.c */
/* Orders raw slabs by their header's slab_index; marks problems in h->p. */
bool rd_heap_order(struct rd_heap *h, struct rd_slab *raw, uint32_t n);
/* Checks the heap header of slab 0 (into @hh) and the slab ids it names,
 * and keeps only its published slabs. False: nothing more to read. */
bool rd_heap_check(struct rd_heap *h, struct blamer_heap_header *hh);
void rd_slab_drop(struct rd_slab *s);

/* copy.c: every read of heap bytes; false if out of bounds. */
/* @len bytes at @off of slab @slab (no record rules). */
bool rd_copy_raw(const struct rd_heap *h, uint32_t slab, uint64_t off, size_t len, void *dst);
/* @len bytes of the record at @ref: 8-aligned, past the slab header. */
bool rd_copy(const struct rd_heap *h, blamer_ref ref, size_t len, void *dst);
/* @n counters at @ref, each loaded whole. */
bool rd_load_u64s(const struct rd_heap *h, blamer_ref ref, size_t n, uint64_t *dst);

/*
 * A record a writer may change while it is read (copy.c explains the
 * ordering): rd_read_stable() copies @len bytes at @ref into @first and,
 * after an acquire fence (and a fresh read of a dir slab), into @second,
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
	size_t seq_off;		/* rd_settled_seq(): offset of the u32 version */
	bool (*settled)(struct rd_stable *r);
	void *arg;		/* for settled() */
};
enum rd_read {
	RD_READ_STABLE,		/* first holds one state of the record */
	RD_READ_TORN,		/* it kept changing */
	RD_READ_BAD,		/* out of bounds */
	RD_READ_NOMEM,		/* no memory to grow the copies */
};
enum rd_read rd_read_stable(const struct rd_heap *h, struct rd_stable *r);
/* The copies are byte for byte the same. */
bool rd_settled_same(struct rd_stable *r);
/* ... and the u32 version at seq_off is even (no write in progress). */
bool rd_settled_seq(struct rd_stable *r);

/* A set of references (open addressing). */
struct rd_refset {
	uint64_t *v;
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
	struct rd_refset shards;	/* DAG shards summed so far: each counts once */
};

/* record.c */
/* The block header at @ref for a record of at least @min bytes, of @type
 * (0: any). False if the block is bad (reported) or of another type. */
bool rd_block(struct rd_ctx *c, blamer_ref ref, size_t min, uint32_t type,
	      struct blamer_block *b);
/* A per-process record's owner: valid (data_id set) and the heap's. */
bool rd_owner_ok(struct rd_ctx *c, const struct blamer_owner *o);
/* Grows a snapshot array by one zeroed element; NULL at the bound or out
 * of memory (reported). */
void *rd_push(void **arr, size_t *n, size_t elsz, struct blamer_snap_process *p);
/* A fixed char array made printable and NUL-terminated (dst has n+1). */
void rd_sanitize(char *dst, const char *src, size_t n);
/* An activity timestamp as CLOCK_MONOTONIC ns (0: unknown); call after
 * the stamp was copied, so the reader's clock pair comes after it. */
uint64_t rd_stamp_ns(struct rd_ctx *c, uint64_t stamp);
/* 1 added, 0 already there, -1 out of memory. */
int rd_refset_add(struct rd_refset *s, uint64_t ref);

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
void rd_decode_path(struct rd_ctx *c, blamer_ref ref);

/* parse.c: one heap, its slabs ordered (rd_heap_order), into h->p. */
void rd_heap_parse(struct rd_heap *h);

/* reader.c, dir.c, dev.c: fill s->procs; 0 or -errno + message. */
struct blamer_reader {
	struct blamer_reader_opts opts;
	enum blamer_backend backend;
	char source[256];
	int devfd;		/* device backend */
	uid_t dir_owner;	/* dir backend: whose heaps the directory holds */
	uint64_t generation;
};
int rd_dir_snapshot(struct blamer_reader *r, struct blamer_snapshot *s,
		    char *err, size_t errlen);
int rd_dir_release(struct blamer_reader *r, const struct blamer_snap_process *p,
		   char *err, size_t errlen);
int rd_dev_snapshot(struct blamer_reader *r, struct blamer_snapshot *s,
		    char *err, size_t errlen);
int rd_dev_release(struct blamer_reader *r, const struct blamer_snap_process *p,
		   char *err, size_t errlen);
int rd_dev_status(struct blamer_reader *r, struct blamer_backend_status *st,
		  char *err, size_t errlen);

/* snapshot.c: the model */
/* Appends a zeroed process to s->procs; NULL on ENOMEM. */
struct blamer_snap_process *rd_new_process(struct blamer_snapshot *s);
/* Health @h if worse than p's, and the first reason given. */
void rd_problem(struct blamer_snap_process *p, enum blamer_health h,
		const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void rd_fields_free(struct blamer_snap_fields *f);
void rd_process_free(struct blamer_snap_process *p);
/* A one-line message into the caller's buffer (if any). */
void rd_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* attrib.c: sorts processes, builds the attribution view over them
 * (totals, units, the inclusive tree), merges their nodes. */
void rd_finish_snapshot(struct blamer_snapshot *s);

#endif /* BLAMER_READER_INTERNAL_H */
