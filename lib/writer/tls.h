/* SPDX-License-Identifier: MIT */
/*
 * The writer's per-thread state (tls.c): which record this thread writes
 * in each context it uses, and which shard it adds to for each path. It
 * is found with a plain TLS access (initial-exec: no __tls_get_addr, no
 * lock), which is what keeps push, pop and path adds free of locks and
 * system calls, and async-signal-safe.
 */
#ifndef BLAMER_WRITER_TLS_H
#define BLAMER_WRITER_TLS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "heap_format.h"

struct blamer;

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
	bool key_set;		/* the exit destructor will run for this thread */
	bool making_heap;	/* this thread is making a context's heap (bl_ready()) */
	bool in_write;		/* a metric write to a shard is under way (metric_write.c):
				 * a signal handler's write goes elsewhere */
};

extern __thread struct bl_tls bl_tls __attribute__((tls_model("initial-exec")));

/* Makes the key whose destructor gives back what a thread held (once). */
void bl_tls_init(void);
/* Arms that destructor for the calling thread (first registration). */
void bl_tls_arm_exit(struct bl_tls *t);
/* The context is closing: this thread's cache must not point at it. */
void bl_tls_forget(struct blamer *b);

/*
 * The slot cache is only this thread's, but a signal handler may run on
 * the thread between any two instructions and add, or fill a slot, too.
 * shard_seq is a sequence count (odd while a slot is rewritten): a reader
 * that saw it even and unchanged around its loads has a consistent
 * (path_id, values) pair, and a handler never rewrites a slot in the
 * middle of another rewrite. Signal fences keep the compiler from moving
 * the loads and stores across the count.
 */
static inline uint32_t bl_slot_read_begin(struct bl_tls *t)
{
	uint32_t seq = *(volatile uint32_t *)&t->shard_seq;

	atomic_signal_fence(memory_order_acquire);
	return seq;
}

static inline bool bl_slot_read_retry(struct bl_tls *t, uint32_t seq)
{
	atomic_signal_fence(memory_order_acquire);
	return (seq & 1) || *(volatile uint32_t *)&t->shard_seq != seq;
}

static inline void bl_slot_fill(struct bl_tls *t, struct bl_shard_slot *s, uint64_t id,
				uint64_t *values)
{
	volatile uint32_t *seq = &t->shard_seq;

	if (*seq & 1)
		return;		/* we interrupted a rewrite: leave it be */
	++*seq;
	atomic_signal_fence(memory_order_seq_cst);
	s->path_id = id;
	s->values = values;
	atomic_signal_fence(memory_order_seq_cst);
	++*seq;
}

/* Empties @t's shard cache (thread exit, fork child); claims stay. */
static inline void bl_shard_cache_clear(struct bl_tls *t)
{
	volatile uint32_t *seq = &t->shard_seq;

	++*seq;
	atomic_signal_fence(memory_order_seq_cst);
	memset(t->shard, 0, sizeof(t->shard));
	t->shard_retry = 0;
	atomic_signal_fence(memory_order_seq_cst);
	++*seq;
}

#endif /* BLAMER_WRITER_TLS_H */
