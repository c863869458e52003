/* SPDX-License-Identifier: MIT */
/*
 * struct blamer: the context all writer state lives in (no other global
 * state but the registry of live contexts, the default pointer and the
 * per-thread cache, all reset by blamer_close()/blamer_reset()), and the
 * functions of the writer's lower half, which its features call:
 *
 *   process.c thread.c userdata.c log.c dag.c dag_shard.c   features
 *        |  bl_heap_for(), bl_record_new(), ...
 *        v
 *   context.c  ->  registry.c tls.c modules.c records.c      contexts
 *        |
 *        v
 *   heap.c (allocator)  backend.c (slabs)  error.c sys.c clock_choose.c
 *
 * Arrows point down only: nothing below the features calls one.
 */
#ifndef BLAMER_CONTEXT_H
#define BLAMER_CONTEXT_H

#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>

#include "backend.h"
#include "clock.h"
#include "blamer.h"
#include "handle.h"
#include "heap.h"
#include "metric.h"
#include "tls.h"
#include "writer.h"

/* Bytes of the GLOBAL and of the PROCESS data record of a heap. */
#define BL_DATA_BYTES	4096u

/* struct blamer.state */
#define BL_ST_NONE	0u	/* no heap (after fork): made on first use */
#define BL_ST_CREATING	1u	/* some thread is making it: others get EAGAIN */
#define BL_ST_READY	2u
#define BL_ST_FAILED	3u	/* making it failed: stay quiet and cheap */

/*
 * What blamer_path_get() returns: process memory, not the heap record,
 * because blamer_path_add() takes no context and its slow path needs
 * one, and because a fork child re-makes the record in its own heap
 * (handle.h) from the key kept here. Made once per path record; freed
 * when the context closes.
 */
struct blamer_path {
	uint64_t id;		/* process-unique, never reused: the shard cache key
				 * (first: the add's hit loads only it) */
	struct bl_handle h;	/* the DAG_PATH record */
	uint32_t depth, nunits;
	uint64_t ids[BLAMER_DAG_MAX_DEPTH];
	uint32_t units[BLAMER_DAG_MAX_UNITS];
	struct blamer_path *next;	/* b->paths */
};

/*
 * What blamer_set_*() returns for the PROCESS and GLOBAL scopes: process
 * memory naming the field (handle.h), one per (scope, name) and context,
 * kept in the context's value table (userdata.c). ACTIVITY handles are
 * the field's address with bit 0 set instead: an activity's data lives
 * and dies with it, and a fork child has none of its parent's.
 */
struct blamer_value {
	struct bl_handle h;	/* rec: the field's value, ref: the field */
	uint32_t scope;
	uint8_t type;
	uint8_t name_len;
	uint16_t cap;		/* value capacity asked when made */
	char name[];		/* name_len bytes, NUL-terminated */
};

/*
 * What blamer_metric_define() returns: process memory naming a
 * METRIC_DEF record (handle.h), found again by name in a fork child's
 * heap (which inherits the definition). One per name and context, on
 * b->metrics; freed with the context.
 */
struct blamer_metric {
	struct bl_handle h;	/* rec, ref: the METRIC_DEF record */
	struct blamer_metric_def_rec def;	/* as made: the key, and what a remake writes */
	uint32_t nvalues;	/* words of a series' values */
	struct bl_hist_fast fast;	/* histograms: the bucket lookup each series copies */
	struct bl_hist_table *table;	/* its table (malloc()ed) */
	struct blamer_metric *next;	/* b->metrics */
};

/*
 * What blamer_metric_series() returns: process memory naming one METRIC
 * record (handle.h), one per (metric, label values, path) and context,
 * kept in the context's series table (handle_store.c). The hot paths
 * read id, kind, a histogram's bucket lookup (first: an observation
 * reads the handle's first cache line) and the record; the bucket layout
 * is here too (hist.bounds points at the metric's def).
 */
struct blamer_series {
	uint64_t id;		/* process-unique, never reused: the shard cache key */
	uint32_t kind;		/* BLAMER_METRIC_* */
	uint32_t nvalues;	/* words of its values */
	struct bl_hist_fast fast;	/* histograms: the bucket lookup (its table: the metric's) */
	struct bl_handle h;	/* rec, ref: the METRIC record */
	bool stamped;		/* a mostrecent gauge: sets store the time */
	struct bl_hist hist;	/* histograms: the buckets */
	struct blamer_metric *m;
	/* the key */
	uint32_t hash;
	uint32_t depth;
	uint64_t nodes[BLAMER_DAG_MAX_DEPTH];
	uint32_t vlen;		/* bytes of values, NULs included */
	uint32_t cut;		/* BLAMER_METRIC_F_CUT if they were cut */
	char values[BLAMER_METRIC_VALUE_BYTES];
	struct blamer_series *_Atomic next;	/* its chain in the series table */
};

/* What a fork child's heap starts with (inherit.c). */
struct bl_def;
struct bl_inherit {
	struct bl_def *_Atomic defs;	/* DAG nodes, links, unit names: newest first */
	uint8_t *data[2];	/* GLOBAL, PROCESS data at the last fork: fields[0..len) */
	uint32_t data_len[2];
	bool data_valid;
};

struct blamer {
	uint64_t serial;
	uint32_t gen;		/* atomic: bumped in the child after fork (thread caches) */
	uint32_t state;		/* atomic: BL_ST_* */
	int requested_backend;
	uint32_t max_slabs, stack_depth, log_slots, flags;
	uint32_t clock;		/* BLAMER_CLOCK_* of activity timestamps */
	uint64_t slab_size;
	char dir[256];
	struct bl_backend be;
	struct bl_heap heap;
	int64_t pid, start_ns;
	uint32_t data_id;
	blamer_ref process, global_data, process_data, log;
	struct blamer_path *_Atomic paths;	/* handles made by blamer_path_get() */
	struct bl_value_table *_Atomic values;	/* handles made by blamer_set_*() */
	struct blamer_metric *_Atomic metrics;	/* handles made by blamer_metric_define() */
	struct bl_series_table *_Atomic series;	/* handles made by blamer_metric_series() */
	struct blamer_drops *_Atomic drops;	/* the heap's DROPS record, NULL: none */
	uint64_t pending_drops[BLAMER_DROP_REASONS];	/* atomic: counted with no heap */
	struct bl_inherit inherit;
	bool forked;		/* a fork child's context: its heap re-reads modules */
	struct blamer *next;	/* registry */
};



/* context.c */
/* The context for @b (NULL: the default), or NULL if there is none. */
struct blamer *bl_ctx(struct blamer *b);
/* The default context if there is one, without making it. */
struct blamer *bl_default_peek(void);
/* The heap, made now if needed (after fork); NULL with a message if not. */
struct bl_heap *bl_ready(struct blamer *b);
/* The entry of most API calls: *@bp becomes the context (NULL: the
 * default) and its heap is returned, made now if needed; NULL with *@err
 * set to -ENODEV (no context) or -EAGAIN (no heap to write) otherwise. */
struct bl_heap *bl_heap_for(struct blamer **bp, int *err);

/* registry.c: the open contexts (lock held for first/alive). */
uint64_t bl_registry_serial(void);
void bl_registry_add(struct blamer *b);
void bl_registry_remove(struct blamer *b);
void bl_registry_lock(void);
void bl_registry_unlock(void);
struct blamer *bl_registry_first(void);	/* then ->next */
bool bl_registry_alive(struct blamer *b, uint64_t serial);

/*
 * records.c: records in @b's heap, which the caller got ready (bl_ready(),
 * bl_heap_for()); a corrupt heap is never written.
 */
/* Fills an owner field; data_id last (release). */
void bl_owner_set(struct blamer *b, struct blamer_owner *o);
/* Allocates a zeroed, typed, listed record; reuses a retired one of the
 * same type and size if @reuse. 0 and a message on failure. */
blamer_ref bl_record_new(struct blamer *b, uint32_t type, uint32_t size, bool reuse);
/* Allocates a zeroed, typed record not yet on the list (the caller fills
 * it, then lists it: bl_heap_append_unique()). 0 and a message on failure. */
blamer_ref bl_record_alloc(struct blamer *b, uint32_t type, uint32_t size);
/* Retires a record: data_id 0 first, then the type. */
void bl_record_retire(struct blamer *b, blamer_ref ref, uint32_t type);
/* A USERDATA record of @scope (BLAMER_DATA_*) with @capacity bytes of fields. */
blamer_ref bl_userdata_new(struct blamer *b, uint32_t scope, uint32_t capacity);
/* The records a new heap starts with: the process record, its global and
 * process data and the log (the context is not READY yet). 0 or -errno. */
int bl_process_records(struct blamer *b);
/* Stores 0 with release in the claim of every shard (DAG and metric) of @tid in @b's heap
 * (the thread is exiting; another may take them over). */
void bl_shards_release(struct blamer *b, int64_t tid);

/* records.c: the DROPS record of a new heap (before READY). 0 or -errno. */
int bl_drops_record(struct blamer *b);
/* drops.c: counts a write of @b not recorded in full (BLAMER_DROP_*),
 * lock-free and async-signal-safe; in process memory while there is no
 * heap, added to the heap's DROPS record when it is made. */
void bl_drop(struct blamer *b, uint32_t reason);

/* inherit.c: what a fork child's heap starts with. */
/* Records a definition (DAG node, edge, unit: @rec's bytes after the
 * owner) for the heaps of fork children. False if out of memory. */
bool bl_inherit_def(struct blamer *b, uint32_t type, const void *rec, uint32_t size);
/* Before fork, in the parent: the process and global data as they are. */
void bl_inherit_snapshot(struct blamer *b);
/* A fork child's new heap, before READY: writes what it inherits. */
void bl_inherit_replay(struct blamer *b);
void bl_inherit_free(struct blamer *b);

/* handle_store.c: the handle of field @name (@nlen bytes, hash @hash) of
 * @scope, made for field @field (its value at @value) of the current heap
 * if there is none yet; NULL (counted) if there is no room for it. */
struct blamer_value *bl_value_handle(struct blamer *b, uint32_t scope, const char *name,
				     size_t nlen, uint32_t hash, uint8_t type, uint16_t cap,
				     bl_remake_fn remake, void *field, void *value);
/* handle_store.c: a new handle's process-unique id (paths, series: the
 * key of a thread's shard cache), never 0, never reused. */
uint64_t bl_handle_id(void);
/* handle_store.c: the series handle of @key's metric, values and path in
 * @b, found, or made from @key (copied, stale: made current by its first
 * use) if there is none yet; NULL (counted) out of memory. */
struct blamer_series *bl_series_handle(struct blamer *b, const struct blamer_series *key,
				       bl_remake_fn remake);
/* handle_store.c: a fork child's: every handle of @b is stale (its
 * record is the parent's). */
void bl_handles_forked(struct blamer *b);
/* handle_store.c: frees the handles of blamer_path_get() and blamer_set_*()
 * (process memory of the context, which is closing). */
void bl_handles_free(struct blamer *b);

/* modules.c: MODULE records for the loaded shared objects; the count. */
int bl_modules_record(struct blamer *b);

/* thread.c: this thread's entry for @b, registering it on first use. */
struct bl_tls_ent *bl_thread_get(struct blamer *b);

#endif /* BLAMER_CONTEXT_H */
