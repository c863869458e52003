/* SPDX-License-Identifier: MIT */
/*
 * The test-support library: what the reader's tests, the CLI's fixture
 * tool (mkheap), the fuzz corpus and the fuzzer share, built once per
 * test flavor (selftests/selftests.mk) and linked by each.
 *
 * heap.c, hand-made heaps: written straight from lib/format/heap_format.h
 * (not through the writer library), so tests can build exactly the
 * valid, torn, truncated or hostile heap they want. Usage: fx_init(),
 * then fx_process(), fx_thread()/fx_push(), ... ; fx_mem() gives
 * blamer_mem_slab views, fx_write_dir() writes dir-backend files. Records
 * are appended to the iterable list in creation order.
 *
 * judge.c, the fuzz judge: one fuzz input -> one heap read -> every
 * exporter, and each output checked against the promises its format
 * makes: valid UTF-8 and no control byte but the newlines that end lines,
 * whatever the heap holds, and in Prometheus's, every series once. Shared
 * by the libFuzzer harness (fuzz/fuzz_reader.c) and the regression replay
 * test (selftests/reader), so a crash or an unclean output found once is
 * replayed forever. Input: byte 0 picks the slab count (1..4), the rest
 * is split into that many equal slabs (the last takes the remainder).
 */
#ifndef BLAMER_TESTSUPPORT_H
#define BLAMER_TESTSUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "blamer.h"
#include "heap_format.h"

/* ---- heap.c: hand-made heaps ---- */

#define FX_MAX_SLABS 8

struct fx_heap {
	uint8_t *slab[FX_MAX_SLABS];
	size_t size[FX_MAX_SLABS];
	unsigned nslabs;
	unsigned cur;		/* slab new records go to */
	int64_t pid, stamp;
	blamer_ref tail;
};

void *fx_at(struct fx_heap *h, blamer_ref ref);
/* The record @n places after the first on the list (0: the first); the
 * dummy head when @n is the number of records (the list is circular). */
blamer_ref fx_nth_record(struct fx_heap *h, int n);
struct blamer_heap_header *fx_hh(struct fx_heap *h);
/* Activity stamps of this heap are in @kind (BLAMER_CLOCK_*), anchored at the pair. */
void fx_clock(struct fx_heap *h, uint32_t kind, uint64_t anchor_tsc,
	      uint64_t anchor_ns);
/* A heap of nslabs slabs of slab_size bytes; slab IDs are 0..n-1 (dir style). */
void fx_init(struct fx_heap *h, unsigned nslabs, size_t slab_size,
	     int64_t pid, int64_t stamp);
void fx_free(struct fx_heap *h);
/* Allocate a record of size bytes in slab h->cur and link it (if list). */
blamer_ref fx_alloc(struct fx_heap *h, uint32_t type, size_t size, int list);
blamer_ref fx_process(struct fx_heap *h, uint32_t phase, const char *cmdline);
blamer_ref fx_thread(struct fx_heap *h, int64_t tid, const char *name,
		     uint32_t slots);
void fx_push(struct fx_heap *h, blamer_ref thread, uint32_t kind,
	     const char *label, uint64_t timestamp, blamer_ref ud);
blamer_ref fx_userdata(struct fx_heap *h, uint32_t scope, uint32_t capacity,
		       int list);
void fx_field(struct fx_heap *h, blamer_ref ud, uint8_t type, const char *name,
	      const void *val, uint16_t len);
void fx_field_u64(struct fx_heap *h, blamer_ref ud, const char *n, uint64_t v);
void fx_field_str(struct fx_heap *h, blamer_ref ud, const char *n, const char *v);
blamer_ref fx_log(struct fx_heap *h, uint32_t slots);
void fx_log_msg(struct fx_heap *h, blamer_ref log, const char *text);
void fx_module(struct fx_heap *h, const char *path, uint64_t base);
/* Version 3: a role, drop counts and a DROPS record the process points at. */
blamer_ref fx_drops(struct fx_heap *h, const char *role, const char *instance,
		    const uint64_t *counts, unsigned n);
void fx_child(struct fx_heap *h, int64_t pid, int32_t status, uint32_t state);
void fx_node(struct fx_heap *h, uint64_t id, const char *name);
void fx_edge(struct fx_heap *h, uint64_t parent, uint64_t child);
/* A DAG_UNIT record: the name of application unit @unit. */
void fx_unit(struct fx_heap *h, uint32_t unit, uint32_t base, const char *name);
blamer_ref fx_path(struct fx_heap *h, const uint64_t *nodes, uint32_t depth,
		   uint64_t cpu_ns, uint64_t bytes);
/* A shard of @path pushed at the head of its chain, as a writer thread does. */
blamer_ref fx_shard(struct fx_heap *h, blamer_ref path, uint64_t claim,
		    uint64_t cpu_ns, uint64_t bytes);
/* A metric definition: @labels are nlabels NUL-terminated names back to
 * back; a histogram gets fixed @bounds (nb of them) or, with nb 0, the
 * exponential window 2^0..2^4 of schema 0. */
blamer_ref fx_metric_def(struct fx_heap *h, const char *name, uint32_t kind,
			 uint32_t mode, const char *labels, uint32_t nlabels,
			 const double *bounds, uint32_t nb);
/* The words of a series of @def. */
uint32_t fx_metric_words(struct fx_heap *h, blamer_ref def);
/* A series of @def with @values (NUL-terminated, back to back, @vlen
 * bytes) and its own words: @first (a double) then the counts. */
blamer_ref fx_metric(struct fx_heap *h, blamer_ref def, const char *values,
		     size_t vlen, double first, const uint64_t *counts);
/* A shard of series @m, pushed at the head of its chain. */
blamer_ref fx_metric_shard(struct fx_heap *h, blamer_ref m, double first,
			   const uint64_t *counts);
/*
 * A heap with metrics: a counter "reqs" {route} with two series (one in a
 * shard too), a fixed histogram "lat" (bounds 0.1, 1) with a shard, an
 * exponential one "size", a sum gauge "inflight". Values scale with
 * @scale.
 */
void fx_metrics(struct fx_heap *h, int64_t pid, int64_t stamp, uint64_t scale);
/*
 * The standard valid heap: a process "app" with two threads (one with
 * nested activities and activity user data), process and global data,
 * a module, a log, a child, DAG nodes root -> {tab, gpu}, tab -> frame,
 * and paths with CPU time and bytes; those of root/tab/frame are partly
 * in two shards (one of an exited thread), so a reader that does not sum
 * shards shows other totals. Slab 1 holds the later records.
 */
#define FX_SLAB	8192u
#define FX_ROOT	0x100ull
#define FX_TAB	0x200ull
#define FX_FRAME 0x300ull
#define FX_GPU	0x400ull

void fx_standard(struct fx_heap *h, int64_t pid, int64_t stamp,
		 uint64_t scale);
void fx_mem(struct fx_heap *h, struct blamer_mem_slab *out);
/* Write as dir-backend files <dir>/<pid>-<start>.<i>.slab; 0 or -1. */
int fx_write_dir(struct fx_heap *h, const char *dir, int64_t pid,
		 uint64_t start);
/*
 * Process @pid's start time in ns since boot, the scale of the dir
 * backend's file names (/proc/<pid>/stat field 22 in clock ticks), or 0.
 */
uint64_t fx_start_ns(pid_t pid);
uint64_t fx_self_start_ns(void);

/* ---- judge.c: the fuzz judge ---- */

/* Valid UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF) holding no C0 control or DEL except '\n'. */
bool fuzz_output_is_clean(const unsigned char *s, size_t n);
/*
 * Every sample of a Prometheus exposition names a series once: the text
 * before a sample line's last space (name and labels) is unique. Edits
 * @text (one NUL per line).
 */
bool fuzz_series_are_unique(char *text);
/*
 * Does a long-lived exporter write other than @want (the one-off text)
 * for @s, made fresh or kept from a scrape before? (Out of memory: no.)
 */
bool fuzz_cached_differs(const struct blamer_snapshot *s, const char *want,
			 size_t wlen);
/* 0 if the output of each exporter is clean, -1 if one is not. */
int fuzz_exports_are_clean(const struct blamer_snapshot *s);
/*
 * 0, or -1 if an exporter's output broke its format's promise. Byte 0:
 * bits 0-1 a count n - 1; bit 2 clear, the rest is n slabs of one heap
 * read from memory; set, n heaps of one slab, of made-up dead processes,
 * read by the dir backend from a directory of its own.
 */
int fuzz_one(const uint8_t *data, size_t size);

#endif /* BLAMER_TESTSUPPORT_H */
