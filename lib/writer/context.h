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
#include "heap.h"
#include "tls.h"
#include "writer.h"

/* struct blamer.state */
#define BL_ST_NONE	0u	/* no heap (after fork): made on first use */
#define BL_ST_CREATING	1u	/* some thread is making it: others get EAGAIN */
#define BL_ST_READY	2u
#define BL_ST_FAILED	3u	/* making it failed: stay quiet and cheap */

/*
 * What blamer_path_get() returns: process memory, not the heap record,
 * because blamer_path_add() takes no context and its slow path needs
 * one. Made once per path record and context incarnation (a fork child
 * makes new ones); freed when the context closes.
 */
struct blamer_path {
	uint64_t id;		/* process-unique, never reused: the shard cache key */
	struct blamer *b;
	uint32_t gen;		/* b->gen when made: older means a fork, rec is scratch */
	struct blamer_dag_path *rec;
	blamer_ref ref;
	struct blamer_path *next;	/* b->paths */
};

struct blamer {
	uint64_t serial;
	uint32_t gen;		/* atomic: bumped in the child after fork */
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
	struct blamer *next;	/* registry */
};

/* context.c */
/* The context for @b (NULL: the default), or NULL if there is none. */
struct blamer *bl_ctx(struct blamer *b);
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
/* Stores 0 with release in the claim of every shard of @tid in @b's heap
 * (the thread is exiting; another may take them over). */
void bl_shards_release(struct blamer *b, int64_t tid);

/* modules.c: MODULE records for the loaded shared objects; the count. */
int bl_modules_record(struct blamer *b);

/* thread.c: this thread's entry for @b, registering it on first use. */
struct bl_tls_ent *bl_thread_get(struct blamer *b);

#endif /* BLAMER_CONTEXT_H */
