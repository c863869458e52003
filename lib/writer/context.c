// SPDX-License-Identifier: MIT
/*
 * Contexts: open/close, the process default, fork, and the way every
 * writer call gets its context and heap (bl_ctx(), bl_ready(),
 * bl_heap_for()).
 *
 * A context owns one heap. Its state word makes heap creation lock-free
 * for callers: whoever moves NONE -> CREATING makes the heap, everybody
 * else gets EAGAIN until READY (writers never wait, not even in the fork
 * child where the heap is made lazily). Open contexts are in the
 * registry (registry.c). When the process calls exit() with contexts
 * still open, their dir heaps say so (the device backend has the
 * kernel's word instead).
 *
 * Layering: the features (process.c, thread.c, userdata.c, log.c, dag.c,
 * dag_shard.c) call down into this file, and this file never calls a
 * feature: what closing, forking or a thread's exit must undo lives with
 * the state it undoes (records.c, tls.c, the path handles below), and
 * open records the loaded modules through modules.c, below the features.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "internal.h"

static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;
static struct blamer *_Atomic default_ctx;
static bool default_failed;		/* under default_lock */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint32_t image_seqs;	/* the seqs of dir heaps: seq_take() */

/* The parent, before fork: what the child's heap will inherit of the
 * data (inherit.c). */
static void atfork_prepare(void)
{
	/* before our locks: the loader's lock is never waited for under
	 * them; and only if a context records modules (a fork of a process
	 * whose contexts do not, or that has none open, walks no list) */
	struct bl_mod_list *mods = bl_registry_wants_modules() ? bl_modules_fork_collect() : NULL;
	struct blamer *b;

	pthread_mutex_lock(&default_lock);
	bl_registry_lock();
	bl_modules_fork_stage(mods);
	for (b = bl_registry_first(); b; b = b->next)
		bl_inherit_snapshot(b);
}

static void atfork_parent(void)
{
	bl_modules_fork_done(false);
	bl_registry_unlock();
	pthread_mutex_unlock(&default_lock);
}

/*
 * The child must never write the parent's records: every mapping of a
 * parent heap becomes private scratch memory (so a stale pointer stays
 * harmless), the inherited fds are closed (an inherited /dev/blamer fd is
 * the parent's open file: it could map the parent's slabs writable), and
 * the next use makes the child's own heap (lazily: a child that only
 * execs pays for none of it). Every handle made before the fork is made
 * stale: its next use re-makes its record in the child's heap (handle.c);
 * gen changes, so every thread cache (only this thread exists now)
 * re-registers. The thread's shard cache is emptied: its slots point at
 * shards of the parent's heap (scratch memory now). Drops counted
 * without a heap were the parent's.
 */
static void atfork_child(void)
{
	struct blamer *b;
	uint32_t i;

	bl_shard_cache_clear(&bl_tls);
	bl_modules_fork_done(true);

	/* Relaxed throughout: the child has one thread, and the registry
	 * lock (taken in prepare) orders us after every other user. */
	for (b = bl_registry_first(); b; b = b->next) {
		/* The heap is kept as it was, its slabs scratch now, until
		 * the child's heap is made over it (bl_heap_create() clears
		 * it): a fork from a signal handler returns, in the child,
		 * into the call the handler interrupted, which may be about
		 * to turn a ref into a pointer (a record just allocated).
		 * Cleared, that pointer was NULL plus an offset (a fault);
		 * kept, it is in scratch memory like any stale pointer. A
		 * slab it would add fails: the backend is closed below. */
		if (ld_relaxed(A32(&b->state)) != BL_ST_NONE)
			bl_heap_drop_after_fork(&b->heap);
		bl_backend_close(&b->be, false);
		b->process = 0;
		for (i = 0; i < BL_PARTS; i++)
			st_relaxed(A64(&b->parts[i]), 0);
		atomic_store_explicit(&b->drops, NULL, memory_order_relaxed);
		for (i = 0; i < BLAMER_DROP_REASONS; i++)
			st_relaxed(A64(&b->pending_drops[i]), 0);
		st_relaxed(A64(&b->retry_ns), 0);
		b->failures = 0;
		b->forked = true;
		bl_handles_forked(b);
		st_relaxed(A32(&b->gen), ld_relaxed(A32(&b->gen)) + 1);
		st_relaxed(A32(&b->state), BL_ST_NONE);
	}
	/* the child's own heaps: a fork child starts its seqs at 0 (its
	 * memory is its own now, no process shares it yet) */
	st_relaxed(A32(&image_seqs), 0);
	bl_registry_unlock();
	pthread_mutex_unlock(&default_lock);
}

/*
 * exit() or a return from main with contexts still open: each dir heap
 * records the status and, through its file, the time (heap-format.rst,
 * "Heap header"), so a clean end does not look like a crash. Nothing is
 * unmapped or closed: other threads may still write until the process
 * is gone, and the heap stays for readers like an orphan of the device
 * (bounded by the retention rule, retention.c). A heap found corrupt
 * is left alone.
 */
static void at_exit(int status, void *arg)
{
	struct blamer *b;

	(void)arg;
	bl_registry_lock();
	for (b = bl_registry_first(); b; b = b->next) {
		if (ld_acquire(A32(&b->state)) != BL_ST_READY || b->be.kind != BLAMER_BACKEND_DIR ||
		    ld_relaxed(A32(&b->heap.corrupt)))
			continue;
		st_release(A32(&b->heap.hh->exit), BLAMER_EXIT_CALLED | ((uint32_t)status & 0xff));
		bl_backend_exiting(&b->be);
	}
	bl_registry_unlock();
}

static void init_once(void)
{
	bl_tls_init();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
#ifdef __GLIBC__
	/* on_exit(), not atexit(): the status is what is worth recording
	 * (without glibc, no exit is recorded: a crash and an exit look alike) */
	on_exit(at_exit, NULL);
#endif
}

/*
 * The seqs of this process image's dir heaps (where.h: a heap after the
 * first is "<pid>-<start_ns>-<seq>.<index>.slab"): the next one. Each
 * dir heap the image makes takes the next, in whatever directory, so no
 * heap is ever named as one the image made before: a heap it abandoned
 * (blamer_abandon()) or closed and kept for an exporter to fold stays,
 * where the same name made again had replaced it. A fork child starts at
 * 0 (atfork_child()), as does a new image after execve() (this is memory,
 * which execve() does not keep): so a name taken already is never this
 * image's, but the former image's or a live writer's (below).
 *
 * One counter for the memory, not per pid: a process that shares it
 * without being a thread of ours (clone(CLONE_VM), a vfork child that
 * calls the library before exec) takes its seqs from it too, so its
 * heaps (named after its own pid) may start past 0, and ours never
 * restart. A counter keyed by the pid that took last was restarted by
 * such a process, and then by ours: our next heap was named as our first
 * again, EEXIST beside a live one, and an abandoned one (its lock free)
 * was taken for a former image's and replaced, its data lost. Atomic, no
 * lock: the lazy heap of a fork child is made from any write, a signal
 * handler's too. (image_seqs, above: atfork_child() resets it.)
 */

/* The former images' heaps an image keeps for the fold (make_heap()). */
#define BL_FORMER_FOLD_HEAPS	16u

/* The next seq of this image into *@seq; false if all 2^32 were taken. */
static bool seq_take(uint32_t *seq)
{
	/* Relaxed: a seq only needs to be unique. */
	uint32_t old = ld_relaxed(A32(&image_seqs));

	do {
		if (old == UINT32_MAX)
			return false;
		*seq = old;
	} while (!atomic_compare_exchange_weak_explicit(A32(&image_seqs), &old, old + 1,
							memory_order_relaxed, memory_order_relaxed));
	return true;
}

/* @seq made no heap: taken back, unless a later one was taken meanwhile
 * (a gap in the seqs is no matter). So a failed open (a file planted
 * under the name) fails again the same way, not under the next name. */
static void seq_untake(uint32_t seq)
{
	uint32_t taken = seq + 1;

	atomic_compare_exchange_strong_explicit(A32(&image_seqs), &taken, seq,
						memory_order_relaxed, memory_order_relaxed);
}

/*
 * Slab 0 of b's name is there, which this image never made (its seq is
 * new to it): the heap of the image this process was before execve(),
 * ours to replace, unless a writer has it mapped still (the lock every
 * writer holds on its slab files): a live heap of this process, made by
 * another copy of the library in it, which is refused.
 */
static bool former_image_heap(struct blamer *b)
{
	char name[BL_SLAB_NAME_MAX];
	bool unlocked;
	int fd;

	bl_slab_name(name, sizeof(name), b->pid, (uint64_t)b->start_ns, b->be.seq, 0);
	fd = openat(b->be.dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	unlocked = !flock(fd, LOCK_EX | LOCK_NB);
	close(fd);
	return unlocked;
}

static int make_heap(struct blamer *b)
{
	struct bl_proc_stat me;
	struct bl_clock clock;
	int ret;

	/*
	 * The pid and start time that name the heap are the ones /proc gives:
	 * a process in a pid namespace of its own that still sees its
	 * parent's /proc (unshare -p without a new mount) took getpid()'s
	 * number there, 1, with pid 1's start time: every such job named its
	 * heap after the host's init, listed live for good, and the next one
	 * replaced the last one's postmortem as a former image's.
	 */
	ret = bl_proc_stat(0, &me);
	if (ret)
		return bl_error(-ret, "blamer: cannot read /proc/self/stat");
	b->pid = me.pid;
	b->start_ns = me.start_ns;
	ret = bl_backend_open(&b->be, b->requested_backend, b->dir[0] ? b->dir : NULL,
			      b->pid, b->start_ns);
	if (ret)
		return ret;
	if (b->be.kind == BLAMER_BACKEND_DIR && !seq_take(&b->be.seq)) {
		bl_backend_close(&b->be, false);
		return bl_error(EMFILE, "blamer: this process made 2^32 heaps");
	}
	/* A fresh anchor per heap: a fork child's heap is new. */
	bl_clock_start(&clock, b->clock);
	ret = bl_heap_create(&b->heap, &b->be, b->slab_size, b->max_slabs, bl_random64(),
			     &clock);
	while (ret == -EEXIST && b->be.kind == BLAMER_BACKEND_DIR && former_image_heap(b)) {
		/* Files named after this very process (pid, start time and
		 * a seq this image never took): left by the program this
		 * process was before execve(). One holding series an
		 * exporter folds is kept for the fold (the process's heap
		 * like any other, folded once it ends; replaced, its counts
		 * would leave the service's totals), this image taking the
		 * next seq, up to BL_FORMER_FOLD_HEAPS of them: a program
		 * that execs itself without end reuses the last. Any other
		 * is ours to replace; only plain singly-linked files of ours
		 * are removed, so a planted link still makes us fail. */
		if (b->be.seq < BL_FORMER_FOLD_HEAPS &&
		    bl_slabdir_heap_folds(b->be.dirfd, b->pid, b->start_ns, b->be.seq) &&
		    seq_take(&b->be.seq)) {
			ret = bl_heap_create(&b->heap, &b->be, b->slab_size, b->max_slabs,
					     bl_random64(), &clock);
			continue;
		}
		bl_slabdir_remove_heap(b->be.dirfd, b->pid, b->start_ns, b->be.seq);
		ret = bl_heap_create(&b->heap, &b->be, b->slab_size, b->max_slabs,
				     bl_random64(), &clock);
		break;
	}
	if (ret) {
		/* Nothing of ours to remove: a file already there (EEXIST) is
		 * somebody else's, and a failed create removed its own file. */
		if (b->be.kind == BLAMER_BACKEND_DIR)
			seq_untake(b->be.seq);
		bl_backend_close(&b->be, false);
		return ret == -EINVAL ? bl_error(EINVAL, "blamer: backend gave a slab of bad size")
				      : ret;
	}
	do
		b->data_id = (uint32_t)bl_random64();
	while (!b->data_id);
	ret = bl_process_records(b);
	if (!ret)
		ret = bl_drops_record(b);
	if (ret) {
		bl_heap_unmap(&b->heap);
		bl_backend_close(&b->be, true);
		return ret;
	}
	if (b->forked) {
		/* A fork child's heap: what it inherits, and its modules (the
		 * parent's as at the fork, not dl_iterate_phdr()'s: modules.c;
		 * a reader symbolizes each process from its own heap). */
		bl_inherit_replay(b);
		if (!(b->flags & BLAMER_OPEN_NO_MODULES))
			bl_modules_record_forked(b);
	}
	return 0;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

/*
 * Another thread is making the heap (a fork child's first writes, from
 * several threads at once): wait for it, a bounded time, rather than
 * drop the write. Not if this very thread is the maker (its signals are
 * held while it makes, bl_signals_hold(); a handler that ran anyway would
 * wait for itself): that write is dropped, and counted by the caller. The
 * state after the wait.
 */
static uint32_t wait_made(struct blamer *b, uint32_t st)
{
	uint32_t i;

	if (bl_tls.making_heap)
		return st;
	for (i = 0; st == BL_ST_CREATING && i < 200000; i++) {
		if (i < 64)
			cpu_relax();
		else
			sched_yield();	/* the maker makes system calls: let it run */
		st = ld_acquire(A32(&b->state));
	}
	return st;
}

/*
 * A fork child whose making of its heap failed (out of descriptors or
 * memory for a moment, a full /dev/shm) tries again: at its first write
 * BL_RETRY_FIRST_NS after, then after twice as long each time it fails
 * again, up to BL_RETRY_MAX_NS. Failing for good at the first failure
 * lost every later write of the child, and the drops counted meanwhile
 * with it: they wait for the next heap made (drops.c), which never was.
 * The clock is CLOCK_MONOTONIC_COARSE, read in the vDSO: a failed
 * context's writes between tries make no system call.
 */
#define BL_RETRY_FIRST_NS	10000000ull		/* 10 ms */
#define BL_RETRY_MAX_NS		1000000000ull		/* 1 s */

static uint64_t coarse_ns(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &t))
		return 0;
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The maker's making failed: when to try again. */
static void retry_later(struct blamer *b)
{
	uint32_t shift = b->failures < 30 ? b->failures : 30;
	uint64_t wait = BL_RETRY_FIRST_NS << shift;

	b->failures++;
	if (wait > BL_RETRY_MAX_NS)
		wait = BL_RETRY_MAX_NS;
	/* Relaxed: published by the release of FAILED. */
	st_relaxed(A64(&b->retry_ns), coarse_ns() + wait);
}

struct bl_heap *bl_ready(struct blamer *b)
{
	/* Acquire: pairs with the release below, so READY implies a fully
	 * built heap and context fields. */
	uint32_t st = ld_acquire(A32(&b->state));

	if (__builtin_expect(st != BL_ST_READY, 0)) {
		/* FAILED: tried again once its backoff is over (above);
		 * until then its writes make no system call. */
		if (st == BL_ST_NONE ||
		    (st == BL_ST_FAILED && coarse_ns() >= ld_relaxed(A64(&b->retry_ns)))) {
			sigset_t held;

			/* Signals held from before the claim to after the
			 * state is final (bl_signals_hold()): a handler's
			 * fork then finds NONE or READY, never a making half
			 * done in its thread. Only for a heap to make. */
			bl_signals_hold(&held);
			if (atomic_compare_exchange_strong_explicit(A32(&b->state), &st,
								    BL_ST_CREATING,
								    memory_order_acquire,
								    memory_order_relaxed)) {
				int ret;

				bl_tls.making_heap = true;
				ret = make_heap(b);
				bl_tls.making_heap = false;
				if (ret)
					retry_later(b);
				else
					b->failures = 0;
				st_release(A32(&b->state), ret ? BL_ST_FAILED : BL_ST_READY);
				bl_signals_restore(&held);
				return ret ? NULL : &b->heap;
			}
			bl_signals_restore(&held);
		}
		st = wait_made(b, st);
	}
	if (st == BL_ST_READY) {
		/* A corrupt heap is never written again (only handles taken
		 * before, which point at known-good places, still are). */
		if (ld_relaxed(A32(&b->heap.corrupt))) {
			bl_error(EIO, "blamer: the heap is corrupt");
			return NULL;
		}
		return &b->heap;
	}
	if (st == BL_ST_CREATING || st == BL_ST_NONE)
		bl_error(EAGAIN, "blamer: the heap is being made by another thread");
	else
		bl_error(EIO, "blamer: no heap (making it failed earlier; tried again shortly)");
	return NULL;
}

struct bl_heap *bl_heap_for(struct blamer **bp, int *err)
{
	struct bl_heap *h;

	*bp = bl_ctx(*bp);
	if (!*bp) {
		*err = -ENODEV;
		return NULL;
	}
	h = bl_ready(*bp);
	if (!h)
		*err = -EAGAIN;
	return h;
}

int blamer_open(const struct blamer_config *cfg, struct blamer **out)
{
	struct blamer_config def = { 0 };
	struct blamer *b;
	sigset_t held;
	int ret;

	pthread_once(&once, init_once);
	*out = NULL;
	if (!cfg)
		cfg = &def;
	if (cfg->slab_size && (cfg->slab_size % 4096 || cfg->slab_size < BLAMER_MIN_SLAB_SIZE ||
			       cfg->slab_size > BLAMER_MAX_SLAB_SIZE))
		return bl_error(EINVAL, "blamer: slab_size must be a multiple of 4096 in [4 KiB, 1 GiB]");
	if (cfg->max_slabs > BLAMER_MAX_SLABS)
		return bl_error(EINVAL, "blamer: max_slabs must be at most %u", BLAMER_MAX_SLABS);
	if (cfg->stack_depth > 1024 || cfg->log_slots > 65536)
		return bl_error(EINVAL, "blamer: stack_depth <= 1024 and log_slots <= 65536");
	if (cfg->dir && strlen(cfg->dir) >= sizeof(b->dir))
		return bl_error(ENAMETOOLONG, "blamer: directory name too long");
	b = calloc(1, sizeof(*b));
	if (!b)
		return bl_error(ENOMEM, "blamer: no memory for a context");
	b->requested_backend = cfg->backend;
	b->slab_size = cfg->slab_size ? cfg->slab_size : (1u << 20);
	b->max_slabs = cfg->max_slabs ? cfg->max_slabs : 16;
	b->stack_depth = cfg->stack_depth ? cfg->stack_depth : 16;
	b->log_slots = cfg->log_slots ? cfg->log_slots : 64;
	b->flags = cfg->flags;
	ret = bl_clock_choose(secure_getenv("BLAMER_CLOCK"), &b->clock);
	if (ret) {
		free(b);
		return ret;
	}
	if (cfg->dir)
		strcpy(b->dir, cfg->dir);
	b->inherit.data[0] = malloc(BL_DATA_BYTES);
	b->inherit.data[1] = malloc(BL_DATA_BYTES);
	if (!b->inherit.data[0] || !b->inherit.data[1]) {
		bl_inherit_free(b);
		free(b);
		return bl_error(ENOMEM, "blamer: no memory for a context");
	}
	b->serial = bl_registry_serial();
	b->be.devfd = b->be.dirfd = -1;
	/* Relaxed: nobody else knows b yet. */
	st_relaxed(A32(&b->state), BL_ST_CREATING);
	/* Held until b is in the registry, where the fork handler finds
	 * it: a handler's fork before that left the child a context on the
	 * parent's heap (bl_signals_hold()). */
	bl_signals_hold(&held);
	ret = make_heap(b);
	if (ret) {
		bl_signals_restore(&held);
		bl_inherit_free(b);
		free(b);
		return ret;
	}
	st_release(A32(&b->state), BL_ST_READY);
	bl_registry_add(b);
	bl_signals_restore(&held);
	if (!(b->flags & BLAMER_OPEN_NO_MODULES))
		bl_modules_record(b);
	*out = b;
	return 0;
}

static void finish(struct blamer *b, bool clean)
{
	/* A heap with a service's series stays, marked closed, for an
	 * exporter to fold: removed now, its counts would leave the totals
	 * (a counter going down). The exporter releases it once folded;
	 * without one, the retention limits take it like any dead heap. */
	bool keep;

	if (!b)
		return;
	keep = clean && ld_acquire(A32(&b->state)) == BL_ST_READY &&
	       (bl_heap_flags(&b->heap) & BLAMER_HEAP_F_FOLD);
	bl_registry_remove(b);
	bl_tls_forget(b);
	if (ld_acquire(A32(&b->state)) == BL_ST_READY) {
		if (clean && !(bl_heap_flags(&b->heap) & BLAMER_HEAP_F_CORRUPT)) {
			struct blamer_process *p = bl_heap_get(&b->heap, b->process,
							       BLAMER_REC_PROCESS, sizeof(*p));
			if (p)
				st_release(A32(&p->phase), BLAMER_PHASE_EXITED_CLEANLY);
			/* Release: a reader that sees DELETED sees the phase. */
			st_release(A32(&b->heap.hh->state), BLAMER_HEAP_DELETED);
		}
		bl_heap_unmap(&b->heap);
	}
	bl_backend_close(&b->be, clean && !keep);
	bl_handles_free(b);
	bl_inherit_free(b);
	free(b);
}

void blamer_close(struct blamer *b)
{
	if (!b) {
		blamer_reset();
		return;
	}
	if (b == atomic_load(&default_ctx)) {
		blamer_reset();
		return;
	}
	finish(b, true);
}

/* NULL: the process default, if it was made (none is made to be
 * abandoned); the next use makes another, as after blamer_reset(). */
void blamer_abandon(struct blamer *b)
{
	if (!b || b == atomic_load(&default_ctx)) {
		pthread_mutex_lock(&default_lock);
		if (!b || b == atomic_load(&default_ctx))
			b = atomic_exchange(&default_ctx, NULL);
		pthread_mutex_unlock(&default_lock);
	}
	finish(b, false);
}

int blamer_init(const struct blamer_config *cfg)
{
	struct blamer *b;
	int ret;

	pthread_mutex_lock(&default_lock);
	if (atomic_load(&default_ctx)) {
		pthread_mutex_unlock(&default_lock);
		return bl_error(EBUSY, "blamer: the default context is already set up");
	}
	ret = blamer_open(cfg, &b);
	if (!ret)
		atomic_store_explicit(&default_ctx, b, memory_order_release);
	default_failed = ret != 0;
	pthread_mutex_unlock(&default_lock);
	return ret;
}

struct blamer *blamer_default(void)
{
	/* Acquire: pairs with the release store once the context is built. */
	struct blamer *b = atomic_load_explicit(&default_ctx, memory_order_acquire);

	if (b)
		return b;
	bool tried = false;

	pthread_mutex_lock(&default_lock);
	b = atomic_load_explicit(&default_ctx, memory_order_relaxed);
	if (!b && !default_failed) {
		tried = true;
		if (blamer_open(NULL, &b) == 0)
			atomic_store_explicit(&default_ctx, b, memory_order_release);
		else
			default_failed = true;	/* blamer_open() said why */
	}
	pthread_mutex_unlock(&default_lock);
	if (!b && !tried)
		bl_error(ENODEV, "blamer: no default context (setting it up failed earlier; "
			 "blamer_reset() to retry)");
	return b;
}

void blamer_reset(void)
{
	struct blamer *b;

	pthread_mutex_lock(&default_lock);
	b = atomic_exchange(&default_ctx, NULL);
	default_failed = false;
	pthread_mutex_unlock(&default_lock);
	finish(b, true);
}

struct blamer *bl_default_peek(void)
{
	return atomic_load_explicit(&default_ctx, memory_order_acquire);
}

struct blamer *bl_ctx(struct blamer *b)
{
	return b ? b : blamer_default();
}

int blamer_heap_info(struct blamer *b, struct blamer_heap_info *info)
{
	struct bl_heap *h;

	memset(info, 0, sizeof(*info));
	b = bl_ctx(b);
	if (!b)
		return -ENODEV;
	/* Also for a corrupt heap: reporting it is the point. */
	h = ld_acquire(A32(&b->state)) == BL_ST_READY ? &b->heap : bl_ready(b);
	if (!h)
		return -EAGAIN;
	info->backend = (int)b->be.kind;
	info->slab_count = ld_acquire(A32(&h->nslabs));
	info->max_slabs = h->max_slabs;
	info->flags = bl_heap_flags(h);
	info->slab_size = h->slab_size;
	info->heap_id = h->heap_id;
	info->bytes_used = bl_heap_used(h);
	info->pid = b->pid;
	info->start_ns = b->start_ns;
	memcpy(info->dir, b->be.dir, sizeof(info->dir));
	return 0;
}

