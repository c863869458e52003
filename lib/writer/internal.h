/* SPDX-License-Identifier: MIT */
/*
 * Writer internals shared by lib/writer/. Nothing here is public.
 *
 * The writer's files, each calling only files below it (no arrow up,
 * none sideways within a row):
 *
 *   process.c log.c dag.c dag_shard.c    features: the writes of each
 *   userdata.c metric.c metric_write.c   kind (blamer.h's API)
 *        |  bl_heap_for(), bl_record_new(), bl_thread_get(), ...
 *        v
 *   thread.c handle.c                    a thread's record; a handle
 *        |                               made again after fork
 *   context.c                            a context: opened, its heap
 *        |                               made, closed, forked
 *   inherit.c modules.c tls.c            what a context keeps: a fork
 *   handle_store.c                       child's start, modules, the
 *        |                               thread cache, the handles
 *   records.c                            typed records in the heap
 *        |
 *   heap.c                               the allocator
 *        |
 *   backend.c                            slabs: the device or files
 *        |                               in a directory
 *   retention.c clock_choose.c           dead heaps a directory keeps;
 *        |                               the activity clock
 *   drops.c error.c registry.c sys.c     counts of drops, messages,
 *                                        the open contexts, ids
 *
 * Below the writer: format/ (the heap's bytes, where heaps are) and
 * sys/ (/proc). The declarations that follow go the other way, bottom
 * up, so each part is declared before the parts that use it: messages
 * and the clock, retention, the backend, the allocator, handles, the
 * thread cache, and the context with the functions of the context
 * layer.
 */
#ifndef BLAMER_WRITER_INTERNAL_H
#define BLAMER_WRITER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/select.h>	/* sigset_t, without the signal header's many other names */
#include <sys/types.h>
#include <time.h>

#include "atomic.h"
#include "blamer.h"
#include "clock.h"
#include "heap_format.h"
#include "metric.h"
#include "proc.h"
#include "where.h"

/* error.c: stores a one-line message (with strerror(err) appended if err) and returns -err. */
int bl_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The errno of the calling thread's last bl_error() (EIO if none). */
int bl_last_error(void);

/* Clocks: glibc routes CLOCK_MONOTONIC/REALTIME through the vDSO (no
 * system call); bl_monotonic_ns() is in clock.h. */

static inline uint64_t bl_realtime_ns(void)
{
	return bl_clock_ns(CLOCK_REALTIME);
}

/*
 * clock_choose.c: the clock new heaps of a context use. @env is
 * $BLAMER_CLOCK (NULL or "auto": the TSC where the kernel's clocksource
 * is the TSC; "tsc": the TSC if the CPU has an invariant one, else an
 * error; "monotonic": never the TSC). 0 and *@kind set, or -EINVAL with
 * a message.
 */
int bl_clock_choose(const char *env, uint32_t *kind);

/* retention.c: the dead heaps a directory keeps, and removing a heap's
 * files (heap-format.rst, "Retention"). */
/* Deletes the slab files of heap @seq of <pid>-<start_ns> in @dirfd that
 * bl_slab_file_ok() accepts (a look at each of the BLAMER_MAX_SLABS names
 * it may have: no readdir). The number removed, or -errno. */
int bl_slabdir_remove_heap(int dirfd, int64_t pid, int64_t start_ns, uint32_t seq);
/* Whether heap @seq of <pid>-<start_ns> in @dirfd, a file the library
 * could have made, holds series an exporter folds (BLAMER_HEAP_F_FOLD):
 * removed, its counts would leave a service's totals. false if it cannot
 * be read. */
bool bl_slabdir_heap_folds(int dirfd, int64_t pid, int64_t start_ns, uint32_t seq);

/* How many dead heaps a directory keeps. */
struct bl_retention {
	uint32_t max_dead;		/* heaps */
	uint64_t max_dead_bytes;	/* bytes of their files */
};
#define BL_DEFAULT_MAX_DEAD		64u
#define BL_DEFAULT_MAX_DEAD_BYTES	(64ull << 20)

/* The limits $BLAMER_DIR_MAX_DEAD and $BLAMER_DIR_MAX_DEAD_BYTES (a
 * number of bytes, K, M or G for KiB, MiB, GiB) ask for, else the
 * defaults. 0, or -EINVAL and @why. */
int bl_retention_from_env(struct bl_retention *r, char *why, size_t whylen);

/*
 * One step of the retention of @dirfd's dead heaps (retention.c's
 * top): the next directory entries looked at, dead heaps found queued,
 * and the oldest beyond @keep deleted, each a bounded number, whatever
 * the directory holds. Only files that bl_slab_file_ok() accepts are
 * touched, and a heap whose files changed in the last second is left
 * for the next time (a writer in another pid namespace may be between
 * making its file and locking it); a time more than a second ahead does
 * not count as recent (a clock stepped back or a forged time would keep
 * a heap forever). Never waits: while another writer trims, this one
 * skips its step. Returns the number of heaps deleted, or -errno.
 */
int bl_slabdir_trim(int dirfd, const struct bl_retention *keep);
/* sys.c */
uint64_t bl_random64(void);
pid_t bl_gettid(void);
/*
 * Holds off this thread's signals while the writer makes a heap or a
 * slab (the system calls of a heap's making or growth, never the hot
 * path): a handler that forked in the middle returned, in the child,
 * into a making the fork handler had just reset (the parent's pid and
 * slab files, a NULL heap header), and one that interrupted a system
 * call there failed the heap for good (EINTR). Held, the handler runs
 * once the heap or slab is whole. Restore with bl_signals_restore().
 */
void bl_signals_hold(sigset_t *old);
void bl_signals_restore(const sigset_t *old);
/*
 * Whether this process may write a file up to @end bytes. Past
 * RLIMIT_FSIZE the kernel fails the call with EFBIG and sends SIGXFSZ,
 * whose default action ends the process (held, at bl_signals_restore()):
 * a sandboxed worker that lowered the limit died at its first counter
 * add. The writer asks first and fails the making instead.
 */
bool bl_fsize_allows(uint64_t end);
/*
 * The limit may be lowered between that question and the call (another
 * thread, prlimit --pid): with the signals held around the call, a
 * SIGXFSZ its EFBIG raised is taken back with sigtimedwait(), unless one
 * was pending before it (bl_sigxfsz_pending()), which is not ours.
 */
bool bl_sigxfsz_pending(void);
void bl_sigxfsz_take_back(bool was_pending);

/*
 * Where slabs come from (backend.c): the /dev/blamer device or files
 * in a directory. The allocator (heap.c) only sees bl_backend_slab().
 */

/* One slab as this process maps it (process-local, never shared). */
struct bl_slab_map {
	uint8_t *base;
	uint64_t size;
};

struct bl_backend {
	uint32_t kind;		/* BLAMER_BACKEND_DEVICE or _DIR */
	int devfd;		/* device: the open /dev/blamer, else -1 */
	uint32_t dev_nids;	/* device: slabs created, released by a clean close */
	uint64_t dev_ids[BLAMER_MAX_SLABS];
	int dirfd;		/* dir: the checked directory, else -1 */
	int64_t pid;		/* dir file names: <pid>-<start_ns>[-<seq>].<index>.slab */
	int64_t start_ns;
	uint32_t seq;		/* dir: which of this image's heaps (context.c); 0: its first */
	char dir[256];
	/* what the open descriptor (dirfd or devfd) was: bl_backend_fd_ok() */
	dev_t fd_dev, fd_rdev;
	ino_t fd_ino;
};

/* @requested: enum blamer_backend (AUTO honours $BLAMER_BACKEND). */
int bl_backend_open(struct bl_backend *be, int requested, const char *dir,
		    int64_t pid, int64_t start_ns);
/* A zeroed slab of at least @size bytes mapped RW; *id is its backend name. */
int bl_backend_slab(struct bl_backend *be, uint32_t index, uint64_t size,
		    struct bl_slab_map *m, uint64_t *id);
void bl_backend_unmap(struct bl_slab_map *m);
/* After fork: the mapping becomes private zero memory (old pointers stay valid). */
void bl_backend_scratch(struct bl_slab_map *m);
/* The process is exiting (dir: slab 0's modification time says when). */
void bl_backend_exiting(struct bl_backend *be);
/* Closes fds; with @remove, deletes the heap's files (dir) or releases its slabs (device). */
void bl_backend_close(struct bl_backend *be, bool remove);
/*
 * Whether the backend's descriptor is still the one it opened. A program
 * may close every descriptor after it started the library (a daemon's
 * close-all) and have the numbers given to its own files: a slab made
 * through the number then went into another directory (or through
 * another context's /dev/blamer file), and a close closed the program's
 * file. A descriptor that is not ours any more is forgotten, never used
 * or closed: the heap makes no more slabs (each failed growth counted).
 * One fstat(), off the hot path (growth, close, exit, a fork child).
 */
bool bl_backend_fd_ok(struct bl_backend *be);

/*
 * The allocator: typed records in a heap of slabs (heap.c). Internal
 * to the library, but usable by tests. The backend (backend.c) only
 * provides zeroed slabs; everything about the format lives in heap.c.
 */

struct bl_backend;

struct bl_heap {
	struct bl_slab_map slabs[BLAMER_MAX_SLABS];
	/* atomic: slabs[] entries published (release after filling one) */
	uint32_t nslabs;
	/* atomic: set once the heap is found corrupt; checked before writes */
	uint32_t corrupt;
	uint32_t max_slabs;
	uint64_t slab_size;
	uint64_t heap_id;
	struct blamer_heap_header *hh;	/* in slab 0 */
	struct bl_backend *be;
	/* atomic: the retired activity-data records any thread may take
	 * over (bl_heap_free_push()): a tag and a packed ref; 0 when empty.
	 * This process's, cleared with the heap (a fork child's is new). */
	uint64_t free_data;
	/* atomic: the same for retired thread records (thread.c) */
	uint64_t free_threads;
	/* atomic: CLOCK_MONOTONIC ns before which no slab is asked of the
	 * backend again, after it could not make one (grow()); 0: ask */
	uint64_t grow_retry_ns;
};

/*
 * Makes slab 0 of a new heap through @be and writes the heap header and
 * the list head; the records come later (records.c). 0, or the
 * backend's -errno, or -EINVAL if it gave a slab of an impossible size.
 */
int bl_heap_create(struct bl_heap *h, struct bl_backend *be, uint64_t slab_size,
		   uint32_t max_slabs, uint64_t heap_id, const struct bl_clock *clock);
/* Writes nothing: the process lost the right to (fork) or is done. */
void bl_heap_unmap(struct bl_heap *h);
/* After fork: replace the parent's mappings by private scratch memory. */
void bl_heap_drop_after_fork(struct bl_heap *h);

/* Returns a zeroed record of @size bytes (incl. header) and @type, or 0
 * with *err = ENOSPC (full), EAGAIN (another thread is growing the heap),
 * EIO (corrupt) or EINVAL. */
blamer_ref bl_heap_alloc(struct bl_heap *h, uint32_t size, uint32_t type, int *err);
/* Pointer to a valid block at @ref with type @type (0: any) and at least
 * @size bytes, or NULL. Never trusts the heap. */
void *bl_heap_get(struct bl_heap *h, blamer_ref ref, uint32_t type, uint32_t size);
/* Appends @ref to the iterable list (idempotent). False if corrupt. */
bool bl_heap_make_iterable(struct bl_heap *h, blamer_ref ref);
/* Appends @ref unless @same() finds its equal on the list: the record on
 * the list (@ref or that one); 0 if corrupt or @ref was listed before.
 * @ref must be complete: others may use it as soon as it is listed. */
blamer_ref bl_heap_append_unique(struct bl_heap *h, blamer_ref ref,
				 bool (*same)(struct bl_heap *h, blamer_ref r, const void *key),
				 const void *key);
/* CAS of the type from @from to @to; with @clear the payload is zeroed
 * while the type is BLAMER_REC_TRANSITIONING. True if this caller won. */
bool bl_heap_change_type(struct bl_heap *h, blamer_ref ref, uint32_t to, uint32_t from,
			 bool clear);
uint32_t bl_heap_type(struct bl_heap *h, blamer_ref ref);
/*
 * A lock-free stack of retired records of one type and size, @head in
 * this process's memory: who retired a record pushes it; a pop takes the
 * record over as bl_heap_change_type() with @clear would. The link is
 * the 8-byte word at offset @link of the retired record (a word no one
 * else writes but with atomic stores: a pop that lost the race may read
 * it while the record is taken over). Pop: the record, typed @type and
 * zeroed, or 0 if the stack held none that could be taken.
 */
void bl_heap_free_push(struct bl_heap *h, uint64_t *head, blamer_ref ref, uint32_t link);
blamer_ref bl_heap_free_pop(struct bl_heap *h, uint64_t *head, uint32_t type, uint32_t link);
/* Takes a retired record (~@type) over as @type, zeroed; the word at
 * @link is zeroed with an atomic store (see bl_heap_free_push()). */
bool bl_heap_take(struct bl_heap *h, blamer_ref ref, uint32_t type, uint32_t link);

/* Iteration over the list; safe while others append. Start with it = 0. */
struct bl_iter {
	blamer_ref last;
	uint64_t count;
};
blamer_ref bl_heap_next(struct bl_heap *h, struct bl_iter *it, uint32_t *type);

void bl_heap_set_corrupt(struct bl_heap *h);
uint32_t bl_heap_flags(struct bl_heap *h);
uint64_t bl_heap_used(struct bl_heap *h);

static inline void *bl_ptr(struct bl_heap *h, blamer_ref ref)
{
	return h->slabs[blamer_ref_slab(ref)].base + blamer_ref_offset(ref);
}

/*
 * Handles that outlive a fork: the one mechanism by which every handle a
 * program holds keeps working in a fork child (handle.c says how; where
 * they are kept is handle_store.c).
 */

struct blamer;
struct bl_handle;

/*
 * Finds or makes @h's record in @b's heap, which is ready: where a use
 * writes (the record, or a value's bytes) and *@ref, or NULL when it
 * cannot (it has counted why with bl_drop()). Called only when @h is
 * stale.
 */
typedef void *(*bl_remake_fn)(struct bl_handle *h, struct blamer *b, blamer_ref *ref);

struct bl_handle {
	struct blamer *b;
	bl_remake_fn remake;
	uint64_t rec;		/* atomic: where a use writes, in this process's
				 * heap; 0: stale (made before a fork) */
	uint64_t ref;		/* atomic: a second word of the kind's: a path's
				 * blamer_ref, a value's field (struct blamer_field) */
};

/* The record of a stale handle, remade; NULL (counted) if it cannot be. */
void *bl_handle_resolve(struct bl_handle *h);
/* handle.c: the record a handle made in @h (its @made word): @ref (one
 * this thread made, filled, not listed; or the one @made names) stored
 * there if none is yet, and the one there then, listed. 0 with a message
 * if the heap is corrupt. */
blamer_ref bl_handle_made(struct bl_heap *h, uint64_t *made, blamer_ref ref);

/* Publishes @rec and @ref as @h's record: ref first, then the record
 * with release, so whoever loads the record (acquire) sees ref, and the
 * record's contents its maker published before. */
static inline void bl_handle_set(struct bl_handle *h, void *rec, uint64_t ref)
{
	st_relaxed(A64(&h->ref), ref);
	st_release(A64(&h->rec), (uint64_t)(uintptr_t)rec);
}

/* A handle made now for @rec (and @ref) of @b's current heap. */
static inline void bl_handle_init(struct bl_handle *h, struct blamer *b, bl_remake_fn remake,
				  void *rec, uint64_t ref)
{
	h->b = b;
	h->remake = remake;
	bl_handle_set(h, rec, ref);
}

/* The fork handler, in the child: @h is stale. */
static inline void bl_handle_stale(struct bl_handle *h)
{
	/* Relaxed: the child has one thread now. */
	st_relaxed(A64(&h->rec), 0);
}

/* @h's record in the current heap: the hot path. */
static inline void *bl_handle_rec(struct bl_handle *h)
{
	/* Acquire: pairs with bl_handle_set(). */
	uint64_t rec = ld_acquire(A64(&h->rec));

	if (__builtin_expect(rec != 0, 1))
		return (void *)(uintptr_t)rec;
	return bl_handle_resolve(h);
}

/* The ref that goes with bl_handle_rec()'s answer (call it after). */
static inline blamer_ref bl_handle_ref(struct bl_handle *h)
{
	return ld_relaxed(A64(&h->ref));
}

/* Whether @h names a record of the current heap (no remake). */
static inline bool bl_handle_current(struct bl_handle *h)
{
	return ld_acquire(A64(&h->rec)) != 0;
}

/*
 * The writer's per-thread state (tls.c): which record this thread writes
 * in each context it uses, and which shard it adds to for each path. It
 * is found with a plain TLS access (initial-exec: no __tls_get_addr, no
 * lock), which is what keeps push, pop and path adds free of locks and
 * system calls, and async-signal-safe.
 */

struct blamer;

#define BL_SPARE_DATA	4u
#define BL_CLAIMS	4u

/* Per thread, per context: the thread's record (found without a lock). */
struct bl_tls_ent {
	struct blamer *b;
	uint64_t serial;	/* b->serial when cached: b may be a new context at an old address */
	uint32_t gen;		/* b->gen when cached: changes in a fork child */
	uint32_t nspare;
	struct blamer_thread *rec;
	blamer_ref ref;
	blamer_ref spare[BL_SPARE_DATA];	/* retired per-activity data records */
	/* The DAG and metric shards this thread claimed in b's heap, which
	 * its exit releases: the first BL_CLAIMS; nclaims past BL_CLAIMS
	 * says there were more, and the exit walks the heap for them. */
	uint32_t nclaims;
	blamer_ref claims[BL_CLAIMS];
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
	/* This thread's, never reused in the process: its series homes
	 * (metric_write.c); 0 until its first. BL_TOKEN_BUSY while a metric
	 * write to one of its shards is under way: a signal handler's write
	 * then goes elsewhere, and matches no home. */
	uint64_t token;
};

extern __thread struct bl_tls bl_tls __attribute__((tls_model("initial-exec")));

/* The measurement and metric writes start a cache line: their few
 * instructions are then fetched alike wherever the linker puts them (a
 * place 48 bytes off moved blamer_path_add()'s time by a fifth:
 * Documentation/performance.rst). */
#define BL_HOT __attribute__((aligned(64)))

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

/* Empties @t's shard cache (thread exit, fork child) and drops its token,
 * so no series' home is its own any more; claims stay. */
static inline void bl_shard_cache_clear(struct bl_tls *t)
{
	volatile uint32_t *seq = &t->shard_seq;

	++*seq;
	atomic_signal_fence(memory_order_seq_cst);
	memset(t->shard, 0, sizeof(t->shard));
	t->shard_retry = 0;
	t->token = 0;
	atomic_signal_fence(memory_order_seq_cst);
	++*seq;
}

/*
 * struct blamer: the context all writer state lives in (no other global
 * state but the registry of live contexts, the default pointer and the
 * per-thread cache, all reset by blamer_close()/blamer_reset()), and the
 * functions of the context layer (the map at the top).
 */

/* Bytes of the GLOBAL and of the PROCESS data record of a heap. */
#define BL_DATA_BYTES	4096u

/* struct blamer.state */
#define BL_ST_NONE	0u	/* no heap (after fork): made on first use */
#define BL_ST_CREATING	1u	/* some thread is making it: others get EAGAIN */
#define BL_ST_READY	2u
#define BL_ST_FAILED	3u	/* making it failed: tried again after a backoff (bl_ready()) */

/*
 * What blamer_path_get() returns: process memory, not the heap record,
 * because blamer_path_add() takes no context and its slow path needs
 * one, and because a fork child re-makes the record in its own heap
 * (handle.c) from the key kept here. One per key (ids and units) and
 * context, found by it in the context's path table (handle_store.c);
 * freed when the context closes.
 */
struct blamer_path {
	uint64_t id;		/* process-unique, never reused: the shard cache key
				 * (first: the add's hit loads only it) */
	struct bl_handle h;	/* the DAG_PATH record */
	/* atomic: the DAG_PATH record made through this handle in this
	 * process's heap, 0: none yet (zeroed in a fork child) */
	uint64_t made;
	/* the key: units past nunits are BLAMER_UNIT_NONE */
	uint32_t hash;
	uint32_t depth, nunits;
	uint64_t ids[BLAMER_DAG_MAX_DEPTH];
	uint32_t units[BLAMER_DAG_MAX_UNITS];
	struct blamer_path *_Atomic next;	/* its chain in the path table */
};

/*
 * What blamer_set_*() returns for the PROCESS and GLOBAL scopes: process
 * memory naming the field (handle.c), one per (scope, name) and context,
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
 * METRIC_DEF record (handle.c), found again by name in a fork child's
 * heap (which inherits the definition). One per name and context, on
 * b->metrics; freed with the context.
 */
struct blamer_metric {
	struct bl_handle h;	/* rec, ref: the METRIC_DEF record */
	struct blamer_metric_def_rec def;	/* as made: the key, and what a remake writes */
	uint32_t nvalues;	/* words of a series' values */
	struct bl_hist_fast fast;	/* the bucket lookup each series copies (none: NONE) */
	struct bl_hist_table *table;	/* its table (malloc()ed) */
	struct blamer_metric *next;	/* b->metrics */
};

/*
 * What blamer_metric_series() returns: process memory naming one METRIC
 * record (handle.c), one per (metric, label values, path) and context,
 * kept in the context's series table (handle_store.c). The hot paths
 * read kind, the home and a histogram's bucket lookup (first: an
 * observation reads the handle's first two cache lines), other threads
 * id and the record; the bucket layout is here too (hist.bounds points
 * at the metric's def).
 */
struct blamer_series {
	uint64_t id;		/* process-unique, never reused: the shard cache key */
	uint32_t kind;		/* BLAMER_METRIC_* */
	uint32_t nvalues;	/* words of its values */
	/* Its home thread's shard (metric_write.c): that thread's token
	 * (bl_tls.token), BL_HOME_NONE or BL_HOME_CLAIMING; written by the
	 * home thread alone once claimed, read by every writer. */
	uint64_t home;
	uint64_t *home_values;
	struct bl_hist_fast fast;	/* the bucket lookup (its table: the metric's; NONE: no histogram) */
	struct bl_handle h;	/* rec, ref: the METRIC record */
	/* atomic: the METRIC record made through this handle in this
	 * process's heap, 0: none yet (zeroed in a fork child) */
	uint64_t made;
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

/* The records of a heap made on first use (records.c: bl_part()). */
enum bl_part { BL_PART_GLOBAL_DATA, BL_PART_PROCESS_DATA, BL_PART_LOG, BL_PARTS };

/* The MODULE records of modules gone that a heap keeps, the most
 * recently unloaded (modules.c); those unloaded before are made again
 * for modules loaded since. */
#define BL_MODULES_GONE_KEPT	64u
struct bl_mod_gone {
	uint64_t heap_id;	/* of the heap they are in: another, none */
	uint32_t n;
	blamer_ref ref[BL_MODULES_GONE_KEPT];	/* oldest first */
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
	blamer_ref process;
	blamer_ref parts[BL_PARTS];	/* atomic: made on first use (bl_part()), 0: not yet */
	struct bl_path_table *_Atomic paths;	/* handles made by blamer_path_get() */
	struct bl_value_table *_Atomic values;	/* handles made by blamer_set_*() */
	struct blamer_metric *_Atomic metrics;	/* handles made by blamer_metric_define() */
	struct bl_series_table *_Atomic series;	/* handles made by blamer_metric_series() */
	struct blamer_drops *_Atomic drops;	/* the heap's DROPS record, NULL: none */
	uint64_t pending_drops[BLAMER_DROP_REASONS];	/* atomic: counted with no heap */
	uint64_t retry_ns;	/* atomic: FAILED: CLOCK_MONOTONIC_COARSE of the next try */
	uint32_t failures;	/* the makings failed in a row (by the maker only) */
	struct bl_inherit inherit;
	bool forked;		/* a fork child's context: its heap re-reads modules */
	struct bl_mod_gone mod_gone;	/* modules.c, under its lock */
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
/* Whether an open context records modules (a fork then takes their list). */
bool bl_registry_wants_modules(void);

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
 * it, then lists it: bl_heap_append_unique(), or bl_heap_make_iterable()
 * once its handle made it the one). 0 and a message on failure. */
blamer_ref bl_record_alloc(struct blamer *b, uint32_t type, uint32_t size);
/* Retires a record: data_id 0 first, then the type. */
bool bl_record_retire(struct blamer *b, blamer_ref ref, uint32_t type);
/* A USERDATA record of @scope (BLAMER_DATA_*) with @capacity bytes of fields. */
blamer_ref bl_userdata_new(struct blamer *b, uint32_t scope, uint32_t capacity);
/* The record a new heap starts with: the process record (the context is
 * not READY yet). 0 or -errno. */
int bl_process_records(struct blamer *b);
/* The record of @part, made and named in the process record on first
 * use (lock-free, async-signal-safe); 0 and a message if there is no room. */
blamer_ref bl_part(struct blamer *b, enum bl_part part);
/* Stores 0 with release in the claim of every shard (DAG and metric) of @tid in @b's heap
 * (the thread is exiting; another may take them over). */
void bl_shards_release(struct blamer *b, int64_t tid);
/* The thread whose @e it is claimed the shard at @s (records.c). */
void bl_claim_note(struct blamer *b, struct bl_tls_ent *e, const void *s);
/* Releases @e's claims, for its thread @tid, in @e->b's heap. */
void bl_claims_release(struct bl_tls_ent *e, int64_t tid);

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
/* metric.c: @key made the key of @m's series of @values (cut to the
 * room, key->cut then set) and @depth path nodes (checked by the
 * caller), with its hash. */
void bl_series_key(struct blamer_series *key, struct blamer_metric *m, const char *const *values,
		   const uint64_t *path, unsigned depth);
/* handle_store.c: the series handle of @key's metric, values and path in
 * @b, or NULL if there is none yet. */
struct blamer_series *bl_series_find(struct blamer *b, const struct blamer_series *key);
/* handle_store.c: @mine (a new series handle) put in @b's table, unless
 * a handle of its key is there first: the one in the table (@mine is then
 * the caller's to free); NULL (a message) if the table cannot be had. */
struct blamer_series *bl_series_publish(struct blamer *b, struct blamer_series *mine);
/* dag.c: @key made the key of a path (@depth ids, @nunits units: checked
 * by the caller), with its hash. */
void bl_path_key(struct blamer_path *key, const uint64_t *ids, unsigned depth,
		 const uint32_t *units, unsigned nunits);
/* handle_store.c: the path handle of @key's ids and units in @b, or
 * NULL if there is none yet. */
struct blamer_path *bl_path_find(struct blamer *b, const struct blamer_path *key);
/* handle_store.c: @mine (a new path handle) put in @b's table, unless a
 * handle of its key is there first: the one in the table (@mine is then
 * the caller's to free); NULL (a message) if the table cannot be had. */
struct blamer_path *bl_path_publish(struct blamer *b, struct blamer_path *mine);
/* handle_store.c: a fork child's: every handle of @b is stale (its
 * record is the parent's), and no series has a home thread (its shard
 * is the parent's). */
void bl_handles_forked(struct blamer *b);

/* A series' home (metric_write.c): none, or being claimed; no thread's
 * token is either, nor a busy thread's (BL_TOKEN_BUSY, bl_tls.token). */
#define BL_HOME_NONE		UINT64_MAX
#define BL_HOME_CLAIMING	(UINT64_MAX - 1)
#define BL_TOKEN_BUSY		(UINT64_MAX - 2)

/*
 * No thread's token matches a homeless series. home_values is left as it
 * was: a fork from a signal handler that interrupted the home thread's
 * write after its token compare returns, in the child, to a load of
 * home_values, which must then give memory the child may write (the
 * child's private copy of the parent's shard, bl_backend_scratch()),
 * never NULL.
 */
static inline void bl_series_homeless(struct blamer_series *s)
{
	atomic_store_explicit(A64(&s->home), BL_HOME_NONE, memory_order_relaxed);
}
/* handle_store.c: frees the handles of blamer_path_get() and blamer_set_*()
 * (process memory of the context, which is closing). */
void bl_handles_free(struct blamer *b);

/* modules.c: MODULE records for the loaded shared objects; the count. */
int bl_modules_record(struct blamer *b);
/* The modules a fork child records (modules.c): taken by the parent's
 * fork handler before its locks, staged under them, the child's (or
 * freed in the parent) after the fork. */
struct bl_mod_list;
struct bl_mod_list *bl_modules_fork_collect(void);
void bl_modules_fork_stage(struct bl_mod_list *ms);
void bl_modules_fork_done(bool child);
int bl_modules_record_forked(struct blamer *b);

/* thread.c: this thread's entry for @b, registering it on first use. */
struct bl_tls_ent *bl_thread_get(struct blamer *b);
/* Where a retired thread record on the heap's free stack keeps its link
 * (thread.c takes them, tls.c gives them at a thread's exit): data_version
 * and overflows, which its thread writes only atomically. */
#define BL_THREAD_LINK	((uint32_t)offsetof(struct blamer_thread, data_version))
_Static_assert(offsetof(struct blamer_thread, data_version) % 8 == 0 &&
	       offsetof(struct blamer_thread, overflows) == BL_THREAD_LINK + 4, "the link word");
/* Where a retired activity-data record on the heap's free stack keeps its
 * link: used and reserved, which no one writes but atomically (used) or
 * at all (reserved) while the record is live. */
#define BL_DATA_LINK	((uint32_t)offsetof(struct blamer_userdata, used))
_Static_assert(offsetof(struct blamer_userdata, used) % 8 == 0 &&
	       offsetof(struct blamer_userdata, reserved) == BL_DATA_LINK + 4, "the link word");

/* A retired activity-data record that its thread does not keep as a
 * spare: on the heap's free stack, for any thread's activity data
 * (userdata.c) to take. */
static inline void bl_activity_data_give(struct blamer *b, blamer_ref ref)
{
	bl_heap_free_push(&b->heap, &b->heap.free_data, ref, BL_DATA_LINK);
}

#endif /* BLAMER_WRITER_INTERNAL_H */
