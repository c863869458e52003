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

/* parse.c */
void rd_heap_parse(struct rd_heap *h);
/* Orders raw slabs by their header's slab_index; marks problems in h->p. */
bool rd_heap_order(struct rd_heap *h, struct rd_slab *raw, uint32_t n);
void rd_slab_drop(struct rd_slab *s);

/* dir.c / dev.c: fill s->procs; 0 or -errno + message. */
struct blamer_reader {
	struct blamer_reader_opts opts;
	enum blamer_backend backend;
	char source[256];
	int devfd;		/* device backend */
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

/* totals.c: sorts processes, sums totals over them, merges their nodes. */
void rd_finish_snapshot(struct blamer_snapshot *s);

#endif /* BLAMER_READER_INTERNAL_H */
