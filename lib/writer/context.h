/* SPDX-License-Identifier: MIT */
/*
 * struct blamer: the context all writer state lives in (no other global
 * state but the registry of live contexts, the default pointer and the
 * per-thread cache, all reset by blamer_close()/blamer_reset()).
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
#include "writer.h"

/* struct blamer.state */
#define BL_ST_NONE	0u	/* no heap (after fork): made on first use */
#define BL_ST_CREATING	1u	/* some thread is making it: others get EAGAIN */
#define BL_ST_READY	2u
#define BL_ST_FAILED	3u	/* making it failed: stay quiet and cheap */

#define BL_SPARE_DATA	4u

/* Per thread, per context: the thread's record (found without a lock). */
struct bl_tls_ent {
	struct blamer *b;
	uint64_t serial;	/* b->serial when cached: b may be a new context at an old address */
	uint32_t gen;		/* b->gen when cached: changes in a fork child */
	uint32_t nspare;
	struct blamer_thread *rec;
	blamer_ref ref;
	blamer_ref spare[BL_SPARE_DATA];	/* retired per-activity data records */
	bool claimed_shards;	/* this thread claimed DAG shards in b's heap */
};

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

/*
 * A thread's shard cache: direct-mapped by blamer_path.id, so no slot is
 * ever valid for another path, context or process (ids are not reused).
 * values == NULL: no shard could be had, add to the path record itself.
 */
struct bl_shard_slot {
	uint64_t path_id;	/* 0: empty */
	uint64_t *values;	/* this thread's shard of that path */
};

#define BL_TLS_ENTS	4u
#define BL_SHARD_SLOTS	16u	/* a power of two */
struct bl_tls {
	struct bl_tls_ent e[BL_TLS_ENTS];
	struct bl_shard_slot shard[BL_SHARD_SLOTS];
	uint32_t shard_seq;	/* odd while this thread rewrites a slot */
	uint32_t shard_retry;	/* adds through empty slots (values NULL) until a retry */
	int64_t tid;		/* this thread's, set when it registers: its shard claim */
	uint32_t next_victim;
	bool key_set;
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

/* The context for @b (NULL: the default), or NULL if there is none. */
struct blamer *bl_ctx(struct blamer *b);
/* The heap, made now if needed (after fork); NULL with a message if not. */
struct bl_heap *bl_ready(struct blamer *b);
/* The entry of most API calls: *@bp becomes the context (NULL: the
 * default) and its heap is returned, made now if needed; NULL with *@err
 * set to -ENODEV (no context) or -EAGAIN (no heap to write) otherwise. */
struct bl_heap *bl_heap_for(struct blamer **bp, int *err);
/* Fills an owner field; data_id last (release). */
void bl_owner_set(struct blamer *b, struct blamer_owner *o);
/* Allocates a zeroed, typed, listed record; reuses a retired one of the
 * same type and size if @reuse. 0 and a message on failure. */
blamer_ref bl_record_new(struct blamer *b, uint32_t type, uint32_t size, bool reuse);
/* Retires a record: data_id 0 first, then the type. */
void bl_record_retire(struct blamer *b, blamer_ref ref, uint32_t type);

/* context.c: process-wide lock for the registry (not used on hot paths) */
void bl_registry_lock(void);
void bl_registry_unlock(void);
bool bl_registry_alive(struct blamer *b, uint64_t serial);

/* thread.c */
struct bl_tls_ent *bl_thread_get(struct blamer *b);
void bl_thread_exit(void *arg);
void bl_tls_forget(struct blamer *b);
extern __thread struct bl_tls bl_tls __attribute__((tls_model("initial-exec")));
extern pthread_key_t bl_thread_key;

/* dag.c: frees the handles of blamer_path_get() (the context is closing). */
void bl_paths_free(struct blamer *b);

/* dag_shard.c */
/* Stores 0 with release in the claim of every shard of @tid in @b's heap. */
void bl_shards_release(struct blamer *b, int64_t tid);
/* Empties @t's shard cache (thread exit, fork child); claims stay. */
void bl_shard_cache_clear(struct bl_tls *t);

/* process.c: the process record and its companions, at heap creation */
int bl_process_create(struct blamer *b);

/* userdata.c */
blamer_ref bl_userdata_new(struct blamer *b, uint32_t scope, uint32_t capacity);

#endif /* BLAMER_CONTEXT_H */
