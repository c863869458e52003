// SPDX-License-Identifier: MIT
/*
 * The writes of metrics: counter adds and histogram observations through
 * per-thread shards (METRIC_SHARD, as dag_shard.c does for paths), gauge
 * sets and adds on the series record itself.
 *
 * Invariants (those of dag_shard.c, for a series):
 *  - A shard has one writer, the thread whose tid is in its claim; it
 *    claims a free shard or makes one, and its exit releases it.
 *  - Shards are pushed at the head of the series' chain and never
 *    unlinked, retired or zeroed: a counter's sum and a histogram's
 *    counts only grow.
 *  - The series' home thread, the first to find (or make) its shard in
 *    the slow path, finds it in the handle: a compare of the thread's
 *    token with the handle's home, nothing else. The home is claimed once
 *    (NONE -> CLAIMING -> token: the shard pointer is stored before the
 *    token, so a signal handler on that thread that sees its token sees
 *    the pointer) and kept for the handle's life; tokens are never
 *    reused, and a thread's exit or a fork drops its own (tls.c,
 *    context.c), so a shard released at exit is no home any more. A fork
 *    child's handles have no home (their shards are the parent's).
 *  - Every other thread finds its shard through the same TLS cache as
 *    path adds, keyed by the handle's id (paths and series share the id
 *    space).
 *  - No shard to be had: the write goes to the series record's own words
 *    with atomic operations. Nothing is lost.
 *
 * A double in a thread's own shard is added to with a plain load, add and
 * store: the thread is its only writer. A signal handler could run on the
 * same thread between the load and the store and write the same series;
 * its add would then be lost. So the thread marks the store under way
 * (its token is BL_TOKEN_BUSY meanwhile, with compiler barriers around
 * the add: the mark is the thread's own, no fence between CPUs is
 * needed) and a write that finds it marked is a handler's: it goes to
 * the series record's own words with atomic operations instead. The
 * mark in the token costs the home's write no load: the token compare
 * it makes anyway fails in a handler (no home is BL_TOKEN_BUSY). A
 * compare-and-swap in the shard would do without the mark, but costs
 * more: even an unlocked cmpxchg loop made the counter add 5.9 ns where
 * the mark's is 4.6 (Documentation/performance.rst).
 */
#include <string.h>

#include "atomic.h"
#include "internal.h"

#if defined(__SANITIZE_THREAD__)
#define BL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BL_TSAN 1
#endif
#endif

/* Writes without a shard before the thread tries again (as dag_shard.c). */
#define SHARD_RETRY	65536u

static inline uint64_t dbits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static inline double bitsd(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

/* An add to a count of this thread's own shard: one instruction. */
static inline void own_add_u64(uint64_t *v, uint64_t x)
{
#if defined(__x86_64__) && !defined(BL_TSAN)
	__asm__ volatile("addq %1, %0" : "+m"(*v) : "er"(x));
#else
	atomic_fetch_add_explicit(A64(v), x, memory_order_relaxed);
#endif
}

/*
 * A sum a write may leave: finite, of either sign. Every infinity and NaN
 * has all exponent bits set: with the sign shifted out, its bits are at
 * least 0x7ff << 53. A sum that is not refuses its write (counted as
 * bad_value, the series keeps its last sum): the reader takes an
 * infinite sum for a heap's corruption (decode_metric.c), and an exporter
 * would keep it in the service's durable sum for good. Tested on the
 * result, not the argument: an add of +Inf makes one too, so the counter
 * needs no compare of its argument with DBL_MAX, and the test (a shift
 * and a compare fused with its branch, off the chain through memory)
 * costs the hot path next to nothing (Documentation/performance.rst).
 */
static inline bool sum_ok(uint64_t bits)
{
	return bits << 1 < 0xffe0000000000000ull;
}

/* sum_ok() for a sum that an add of a number >= +0 or -0 made: a finite
 * sum of either sign plus such a number is finite or +Inf, whose bits
 * are the largest of them all as a signed integer. One instruction fewer
 * (the shift), for the writes whose argument is known not negative: a
 * counter's add and an observation that took bl_hist_hot(). */
static inline bool sum_ok_up(uint64_t bits)
{
	return (int64_t)bits < 0x7ff0000000000000ll;
}

/*
 * Word @w of this thread's own shard plus @d, as bits, not stored (see
 * own_store()): one writer, under the mark (see the top), so a plain
 * load of the word, whole (aligned 8 bytes). On x86-64 through a general
 * register and movq, not movsd: the adds to one series form a chain
 * through memory (each load waits for the last store), and an integer
 * load gets a stored value sooner than a floating-point one (about 8
 * ticks of the TSC per add of a tight loop in place of 10, measured on
 * the bench machine; Documentation/performance.rst). Under TSan, relaxed
 * atomics (which it sees).
 */
static inline uint64_t own_sum(const uint64_t *w, double d)
{
#if defined(__x86_64__) && !defined(BL_TSAN)
	uint64_t bits;
	double sum;

	__asm__ volatile("mov %[w], %[bits]\n\t"
			 "movq %[bits], %[sum]\n\t"
			 "addsd %[d], %[sum]\n\t"
			 "movq %[sum], %[bits]"
			 : [bits] "=&r"(bits), [sum] "=&x"(sum)
			 : [w] "m"(*w), [d] "x"(d));
	return bits;
#else
	return dbits(bitsd(ld_relaxed(A64(w))) + d);
#endif
}

/* The sum own_sum() made, stored: from the same general register. */
static inline void own_store(uint64_t *w, uint64_t bits)
{
#if defined(__x86_64__) && !defined(BL_TSAN)
	__asm__ volatile("mov %[bits], %[w]" : [w] "=m"(*w) : [bits] "r"(bits));
#else
	st_relaxed(A64(w), bits);
#endif
}

/* No shard: the series record's own words, shared by every thread;
 * false, nothing stored, if the sum would be one no write may leave:
 * not finite (sum_ok()), or for a gauge (@gauge), whose value may be an
 * infinity (blamer_gauge_set() takes one), NaN (+Inf less +Inf).
 * Relaxed: counters; no other data hangs on them. */
static bool shared_add_double(uint64_t *w, double d, bool gauge)
{
	uint64_t old = ld_relaxed(A64(w)), sum;

	do {
		sum = dbits(bitsd(old) + d);
		if (gauge ? bitsd(sum) != bitsd(sum) : !sum_ok(sum))
			return false;
	} while (!atomic_compare_exchange_weak_explicit(A64(w), &old, sum, memory_order_relaxed,
							memory_order_relaxed));
	return true;
}

static void shared_add_u64(uint64_t *w, uint64_t x)
{
	atomic_fetch_add_explicit(A64(w), x, memory_order_relaxed);
}

/*
 * A walk along a series' shard chain, every shard validated (type, size,
 * its series) and the walk bounded by how many shards the heap could
 * hold: a bad link or a loop is corruption, never a crash or a hang.
 */
struct shard_walk {
	struct bl_heap *h;
	blamer_ref series, next;
	uint32_t size;
	uint64_t left;
};

static void walk_start(struct shard_walk *w, struct blamer_series *s,
		       struct blamer_metric_rec *rec)
{
	w->h = &s->h.b->heap;
	w->series = bl_handle_ref(&s->h);
	w->size = (uint32_t)(sizeof(struct blamer_metric_shard) + s->nvalues * sizeof(uint64_t));
	/* Acquire: pairs with the release CAS that pushed the newest shard. */
	w->next = ld_acquire(A64(&rec->shards));
	w->left = (uint64_t)w->h->max_slabs * w->h->slab_size / sizeof(struct blamer_metric_shard);
}

static struct blamer_metric_shard *walk_next(struct shard_walk *w)
{
	struct blamer_metric_shard *sh;

	if (!w->next)
		return NULL;
	sh = bl_heap_get(w->h, w->next, BLAMER_REC_METRIC_SHARD, w->size);
	if (!sh || sh->metric != w->series || !w->left--) {
		bl_heap_set_corrupt(w->h);
		return NULL;
	}
	w->next = sh->next_shard;
	return sh;
}

/* This thread's shard of @s, found, claimed or made; NULL if none. */
static uint64_t *shard_values(struct blamer_series *s, struct blamer_metric_rec *rec)
{
	struct blamer *b = s->h.b;
	struct blamer_metric_shard *sh;
	struct bl_tls_ent *e;
	struct shard_walk w;
	blamer_ref ref, head;
	int64_t tid;

	/* Registered, the thread's exit releases what it claims. */
	e = bl_thread_get(b);
	if (!e || ld_relaxed(A32(&b->heap.corrupt)))
		return NULL;
	tid = bl_tls.tid;
	/* Relaxed: only a thread with this tid stores it there. */
	for (walk_start(&w, s, rec); (sh = walk_next(&w));)
		if (ld_relaxed(A64(&sh->claim)) == (uint64_t)tid)
			goto mine;
	for (walk_start(&w, s, rec); (sh = walk_next(&w));) {
		uint64_t free = 0;

		/* Acquire: pairs with the release of the claim at the last
		 * claimer's exit, so its writes come before ours. */
		if (!ld_relaxed(A64(&sh->claim)) &&
		    atomic_compare_exchange_strong_explicit(A64(&sh->claim), &free, (uint64_t)tid,
							    memory_order_acquire,
							    memory_order_relaxed))
			goto mine;
	}
	ref = bl_record_new(b, BLAMER_REC_METRIC_SHARD, w.size, false);
	if (!ref)
		return NULL;
	sh = bl_ptr(&b->heap, ref);
	sh->metric = w.series;
	sh->nvalues = s->nvalues;
	/* Relaxed: published with the record by the push below. */
	st_relaxed(A64(&sh->claim), (uint64_t)tid);
	bl_owner_set(b, &sh->owner);
	head = ld_relaxed(A64(&rec->shards));
	do
		sh->next_shard = head;
	/* Release: whoever loads the new head (acquire) sees the shard whole. */
	while (!atomic_compare_exchange_weak_explicit(A64(&rec->shards), &head, ref,
						      memory_order_release, memory_order_relaxed));
mine:
	bl_claim_note(b, e, sh);
	return sh->value;
}

/* A write of @v to word 0 (a double) and, for a histogram, 1 to the
 * count of bucket @bucket (word bucket + 1), under the thread's mark
 * (its token BL_TOKEN_BUSY, then @token, the token it had); false,
 * nothing written, if the sum would not be finite (sum_ok(), or
 * sum_ok_up() if @up: @v is not negative). */
static inline bool own_write(struct bl_tls *t, uint64_t token, uint64_t *values, uint64_t bucket,
			     double v, bool hist, bool up)
{
	uint64_t sum;
	bool ok;

	t->token = BL_TOKEN_BUSY;
	atomic_signal_fence(memory_order_seq_cst);
	sum = own_sum(&values[0], v);
	ok = up ? sum_ok_up(sum) : sum_ok(sum);
	if (__builtin_expect(ok, 1)) {
		if (hist)
			own_add_u64(&values[bucket + 1], 1);
		own_store(&values[0], sum);
	}
	atomic_signal_fence(memory_order_seq_cst);
	t->token = token;
	return ok;
}

/* A signal handler's, on a thread interrupted in own_write(). */
static inline bool in_write(const struct bl_tls *t)
{
	return t->token == BL_TOKEN_BUSY;
}

/* Tokens handed out: one per thread that wrote a series (atomic). */
static uint64_t thread_tokens;

/* @s's home is this thread's shard @values, if @s has none yet. */
static void home_claim(struct bl_tls *t, struct blamer_series *s, uint64_t *values)
{
	uint64_t none = BL_HOME_NONE;

	if (ld_relaxed(A64(&s->home)) != BL_HOME_NONE)
		return;
	if (!t->token)
		t->token = atomic_fetch_add_explicit(A64(&thread_tokens), 1,
						     memory_order_relaxed) + 1;
	/* Relaxed: only this thread ever reads home_values through its
	 * token; the CAS makes it the one thread that stores them. */
	if (!atomic_compare_exchange_strong_explicit(A64(&s->home), &none, BL_HOME_CLAIMING,
						     memory_order_relaxed, memory_order_relaxed))
		return;
	s->home_values = values;
	atomic_signal_fence(memory_order_seq_cst);
	st_relaxed(A64(&s->home), t->token);
}

/* A write the series cannot take: counted in its context's heap. */
__attribute__((noinline))
static void refused(struct blamer_series *s, uint32_t kind)
{
	bl_drop(s->h.b, s->kind != kind ? BLAMER_DROP_BAD_HANDLE : BLAMER_DROP_BAD_VALUE);
}

/* A write whose sum would not be finite (sum_ok()): counted, out of line. */
__attribute__((noinline))
static void sum_refused(struct blamer_series *s)
{
	bl_drop(s->h.b, BLAMER_DROP_BAD_VALUE);
}

/* Out of line: the hit path then saves no registers. */
__attribute__((noinline))
static void write_slow(struct blamer_series *s, uint64_t bucket, double v, bool hist)
{
	struct bl_tls *t = &bl_tls;
	struct bl_shard_slot *slot = &t->shard[s->id & (BL_SHARD_SLOTS - 1)];
	uint32_t seq = bl_slot_read_begin(t);
	bool none = slot->path_id == s->id && !slot->values;
	/* The record in this process's heap, made again if the handle is
	 * from before a fork (handle.c); NULL: lost, and counted. */
	struct blamer_metric_rec *rec = bl_handle_rec(&s->h);
	uint64_t *values;

	if (!rec)
		return;
	/* a handler that interrupted this thread's own write: not the shard */
	if (in_write(t))
		goto shared;
	if (!bl_slot_read_retry(t, seq) && none && t->shard_retry) {
		t->shard_retry--;
		goto shared;
	}
	values = shard_values(s, rec);
	if (!values)
		t->shard_retry = SHARD_RETRY;
	bl_slot_fill(t, slot, s->id, values);
	if (values) {
		home_claim(t, s, values);
		if (!own_write(t, t->token, values, bucket, v, hist, false))
			sum_refused(s);
		return;
	}
shared:
	/* the sum first: a refused observation counts in no bucket */
	if (!shared_add_double(&rec->value[0], v, false))
		sum_refused(s);
	else if (hist)
		shared_add_u64(&rec->value[bucket + 1], 1);
}

/* Another thread than the home: its shard found in its slot, else the
 * slow way. */
static inline void write_away(struct blamer_series *s, uint64_t bucket, double v, bool hist)
{
	struct bl_tls *t = &bl_tls;
	struct bl_shard_slot *slot = &t->shard[s->id & (BL_SHARD_SLOTS - 1)];
	uint32_t seq = bl_slot_read_begin(t);
	uint64_t *values = slot->values, token = t->token;

	if (__builtin_expect(slot->path_id == s->id && values && token != BL_TOKEN_BUSY &&
			     !bl_slot_read_retry(t, seq), 1)) {
		if (__builtin_expect(!own_write(t, token, values, bucket, v, hist, false), 0))
			sum_refused(s);
	} else {
		write_slow(s, bucket, v, hist);
	}
}

__attribute__((noinline))
static void observe_away(struct blamer_series *s, uint64_t bucket, double v)
{
	write_away(s, bucket, v, true);
}

/*
 * The hits: the home thread's adds to its own shard, else write_away().
 * A counter add takes write_away() inline (as a call it made the other
 * threads' adds half again as long); an observation calls it, which
 * keeps the home's path shorter (measured: performance.rst). Always
 * inline: GCC once made one observation's write() a call. @up: @v is
 * not negative (own_write()).
 */
static inline __attribute__((always_inline)) void write(struct blamer_series *s, uint64_t bucket,
							 double v, bool hist, bool up)
{
	struct bl_tls *t = &bl_tls;
	/* Relaxed: only this thread stores its own token there, after the
	 * pointer (home_claim()). */
	uint64_t home = ld_relaxed(A64(&s->home));

	/* a busy thread's token (a handler's write) is no home */
	if (__builtin_expect(home == t->token, 1)) {
		if (__builtin_expect(!own_write(t, home, s->home_values, bucket, v, hist, up), 0))
			sum_refused(s);
	} else if (hist)
		observe_away(s, bucket, v);
	else
		write_away(s, bucket, v, false);
}

BL_HOT void blamer_counter_add(struct blamer_series *s, double v)
{
	if (!s)
		return;
	/* false for NaN too; +Inf, and an add that would make the sum
	 * infinite, own_write() refuses (sum_ok()) */
	if (__builtin_expect(s->kind != BLAMER_METRIC_COUNTER || !(v >= 0), 0)) {
		refused(s, BLAMER_METRIC_COUNTER);
		return;
	}
	write(s, 0, v, false, true);
}

/* NaN or an infinity (all exponent bits set): refused, as for a
 * counter's add (the sum would keep it for good). */
static inline bool nan_or_inf(uint64_t bits)
{
	return (~bits & 0x7ff0000000000000ull) == 0;
}

/* What the hot path does not take, out of line: the other layouts, a
 * POS value outside the cells, NaN and the infinities, and the kinds
 * that are not histograms (refused). The bucket from the one lookup of
 * every layout, bl_hist_fast_index(). */
__attribute__((noinline))
static void observe_other(struct blamer_series *s, uint64_t bits, double v)
{
	if (nan_or_inf(bits) || s->fast.mode == BL_HIST_FAST_NONE)
		refused(s, BLAMER_METRIC_HISTOGRAM);
	else
		write(s, bl_hist_fast_index(&s->fast, v), v, true, false);
}

/*
 * The two layouts of nearly every histogram, POS and exponential, in
 * bl_hist_hot(): one compare of the mode, one range compare, which sends
 * the values outside the buckets' range (below the first bound or the
 * window, above the last), NaN, the infinities and every other layout
 * the long way (metric.h). A value in range is >= +0.
 */
BL_HOT void blamer_histogram_observe(struct blamer_series *s, double v)
{
	uint64_t bits, bucket;

	if (!s)
		return;
	memcpy(&bits, &v, sizeof(bits));
	if (__builtin_expect(bl_hist_hot(&s->fast, bits, &bucket), 1))
		write(s, bucket, v, true, true);
	else
		observe_other(s, bits, v);
}

void blamer_gauge_set(struct blamer_series *s, double v)
{
	struct blamer_metric_rec *rec;

	if (!s)
		return;
	if (__builtin_expect(s->kind != BLAMER_METRIC_GAUGE || v != v, 0)) {
		refused(s, BLAMER_METRIC_GAUGE);
		return;
	}
	rec = bl_handle_rec(&s->h);
	if (!rec)
		return;		/* counted where the record could not be had */
	/* Relaxed: one aligned 8-byte store is never torn. */
	st_relaxed(A64(&rec->value[0]), dbits(v));
	/* Release, after the value: a reader that sees the time sees this
	 * value or a later one (heap-format.rst, METRIC). */
	if (s->stamped)
		st_release(A64(&rec->stamp), bl_realtime_ns());
}

void blamer_gauge_add(struct blamer_series *s, double v)
{
	struct blamer_metric_rec *rec;

	if (!s)
		return;
	if (__builtin_expect(s->kind != BLAMER_METRIC_GAUGE || v != v, 0)) {
		refused(s, BLAMER_METRIC_GAUGE);
		return;
	}
	rec = bl_handle_rec(&s->h);
	if (!rec)
		return;
	/* +Inf less +Inf: refused, as a set of NaN */
	if (!shared_add_double(&rec->value[0], v, true)) {
		refused(s, BLAMER_METRIC_GAUGE);
		return;
	}
	if (s->stamped)
		st_release(A64(&rec->stamp), bl_realtime_ns());
}
