/* SPDX-License-Identifier: MIT */
/*
 * What the writer and the reader agree on about metrics beyond the bytes
 * (heap_format.h): which names and labels are valid, where a histogram's
 * buckets end (both sides must put a value in the same bucket the reader
 * says it ends at), and how doubles are summed exactly.
 *
 * Exact sums: a counter is a double per thread shard, and a reader adds
 * the shards of many processes, then a long-lived exporter moves a dead
 * process's part into a remainder. Floating-point addition is not
 * associative, so adding the same numbers in another order (a fold moves
 * one out of the live sum into the remainder) can give a result one unit
 * in the last place lower: Prometheus reads that as a counter reset and
 * rate() counts the whole counter again. So every sum of doubles here is
 * exact: a list of non-overlapping partials whose sum is exactly the sum
 * of the numbers added (Shewchuk's algorithm, as Python's math.fsum),
 * rounded once, correctly. Correct rounding is monotonic: a sum of
 * numbers that each only grow never shows a lower value, whatever the
 * order they were added in.
 */
#ifndef BLAMER_METRIC_H
#define BLAMER_METRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A name as the format allows: [a-zA-Z_:][a-zA-Z0-9_:]* of 1..max bytes
 * (metric names; with @colon false, label names: no ':'). */
bool bl_metric_name_ok(const char *s, size_t max, bool colon);
/* A label name the exporter writes itself (le, quantile, pid, uid, ...),
 * or one starting with "__" (Prometheus' own), so an application's may
 * not be it; path only if the series has a DAG path. */
bool bl_label_reserved(const char *name, bool path);

/* A histogram's buckets (from a METRIC_DEF), for bl_hist_*(). */
struct bl_hist {
	uint32_t layout;	/* BLAMER_HIST_FIXED or _EXPONENTIAL */
	uint32_t nbuckets;	/* +Inf included */
	int32_t schema, min_exp, max_exp;
	const double *bounds;	/* fixed: nbuckets - 1, ascending, finite */
};

/* Buckets of an exponential layout (the one below the window and +Inf
 * included), or 0 if the layout is not one the format allows. */
uint32_t bl_hist_exp_buckets(int32_t schema, int32_t min_exp, int32_t max_exp);
/* @h is a layout the format allows (bounds ascending and finite, counts
 * in range, the exponential window consistent with nbuckets). */
bool bl_hist_ok(const struct bl_hist *h);
/* The upper bound ("le") of bucket @i: +Inf for the last. */
double bl_hist_upper(const struct bl_hist *h, uint32_t i);
/* The bucket of @v (not NaN): the first whose upper bound is >= v. */
uint32_t bl_hist_index(const struct bl_hist *h, double v);

/*
 * The writer's bucket lookup: bl_hist_index()'s answer for every value
 * (not NaN) in O(1): a few shifts, one table entry, an integer compare,
 * no loop and no branch on values inside the buckets' range. An
 * observation has a tight budget (issue 24: 1.5 measurement adds), so
 * this is written for the fewest instructions and the shortest latency;
 * bl_hist_fast_init() makes it, the hot part in the series handle, the
 * table once per metric.
 *
 * Both layouts cut a range of the double's bits into cells small enough
 * that (nearly always) at most one bound lies in a cell. A cell's entry
 * is the bucket its lowest value falls in (the first candidate) and
 * where in the cell that one bound lies: a compare of the value's place
 * in its cell with the bound's adds the carry to the candidate.
 *
 * Exponential, schema >= 0: the exponent gives the power of two, the top
 * 9 bits of the mantissa a cell of [1, 2). The thresholds 2^(j/2^schema)
 * are more than 1/512 apart, so at most one lies in a cell; the compare
 * is of the 43 mantissa bits below the cell's (shifted to the top). The
 * bucket is exponent * 2^schema + the cell's j, whose entry holds j less
 * the window's start; a negative value's exponent, shifted arithmetically
 * with its sign, lies below every window, +Inf's above it, and the clamp
 * to [0, last] puts both, zero and denormals where bl_hist_index() does.
 * The clamps are branches taken only by values outside the buckets'
 * range: an observation's cost is mostly the latency from the value to
 * the address of the count it adds to, which a branchless clamp adds to
 * every lookup.
 * Schema < 0 (2^-schema powers of two per bucket) needs no table.
 *
 * Fixed bounds: a double's bits as an unsigned key that orders as the
 * doubles do (bl_hist_key(); -0.0 bounds are kept as +0.0, which
 * compares the same) in cells of 2^shift keys from the first bound's, as
 * many as it takes to hold the last bound (at most BL_HIST_CELLS, the
 * last cell holding none). A value's key less the first bound's is
 * compared whole with its cell's bound's (the two share the cell's high
 * bits): no mask. Bounds closer together than a cell take `more` further
 * compares with the bounds' keys (mode FIXED_MORE; FIXED and POS have
 * none).
 */
#define BL_HIST_CELLS		1024u	/* fixed: cells at most */
#define BL_HIST_EXP_CELLS	512u
#define BL_HIST_EXP_LOW		43	/* mantissa bits below a cell's 9 */

/*
 * The layout, in f->mode. FIXED: at most one bound in a cell (more ==
 * 0); MORE: bounds closer than a cell, the further compares; POS: FIXED
 * with every bound >= +0 and below 2^1023, and cells of at most
 * 2^BL_HIST_POS_SHIFT keys (the usual layout of latencies and sizes),
 * whose lookup needs no key; EXP: schema >= 0; WIDE: schema < 0.
 *
 * An observation's first load, the mode, is also the shift its lookup
 * takes (a shift by a register uses the count's low 6 bits): POS is
 * BL_HIST_FAST_POS + the cells' shift, EXP is BL_HIST_FAST_EXP + the
 * schema (a bucket per 2^-schema of a binade: the exponent shifted by
 * it), and the writer's one compare of the mode, with BL_HIST_FAST_POS,
 * picks its lookup (bl_hist_hot()). Every other layout takes the
 * exponential one too, through ecell = bl_hist_no_cells, whose buckets
 * lie far below 0: the range compare that follows sends every value of
 * theirs the long way, and no compare of the mode with EXP is needed.
 */
enum {
	BL_HIST_FAST_NONE, BL_HIST_FAST_FIXED, BL_HIST_FAST_EXP_WIDE, BL_HIST_FAST_FIXED_MORE,
	BL_HIST_FAST_EXP = 64,		/* + schema (0..8) */
	BL_HIST_FAST_POS = 192,		/* + shift (0..BL_HIST_POS_SHIFT) */
};
#define BL_HIST_POS_SHIFT	51

struct bl_hist_cell {
	uint64_t off;		/* its bound: exponential, where in the cell; fixed,
				 * its key less the first bound's; all ones: none */
	int64_t j;		/* the first candidate (exponential: less the exponent's part) */
};

/* Per metric: the cells, and the fixed bounds' keys for `more`. */
struct bl_hist_table {
	uint64_t key[BLAMER_METRIC_BOUNDS_MAX + 1];	/* the bounds', then UINT64_MAX */
	struct bl_hist_cell cell[];
};

/* The fields bl_hist_hot() reads first, then the other lookups'. */
struct bl_hist_fast {
	uint32_t mode;		/* the layout (above): NONE, not a histogram */
	uint32_t shift;		/* fixed: log2 of keys per cell; wide: -schema */
	int64_t last;		/* nbuckets - 1 */
	const struct bl_hist_cell *ecell;	/* EXP's cells, else bl_hist_no_cells */
	uint64_t kmin;		/* fixed: the first bound's key; POS: its bits */
	uint64_t lastcell;	/* fixed: cells - 1 */
	const struct bl_hist_cell *cell;	/* fixed: the cells */
	uint64_t more;		/* fixed: the most bounds in a cell, less one */
	const uint64_t *key;	/* fixed: the bounds' keys, then UINT64_MAX */
	int64_t n;		/* wide: the boundary index of 2^min_exp */
};

/* BL_HIST_EXP_CELLS cells whose candidates are far below any bucket, for
 * the layouts that are not EXP (the writer takes their lookup too). */
extern const struct bl_hist_cell bl_hist_no_cells[BL_HIST_EXP_CELLS];

/* The cells of @h's table (bl_hist_table's cell[]). */
uint32_t bl_hist_fast_cells(const struct bl_hist *h);
/* @f and @t (with bl_hist_fast_cells() cells) for @h; f's cells point
 * into @t. */
void bl_hist_fast_init(struct bl_hist_fast *f, struct bl_hist_table *t, const struct bl_hist *h);
/* @f for a series that is no histogram (mode NONE). */
void bl_hist_fast_none(struct bl_hist_fast *f);

static inline bool bl_hist_fast_pos(const struct bl_hist_fast *f)
{
	return f->mode >= BL_HIST_FAST_POS;
}

static inline bool bl_hist_fast_exp(const struct bl_hist_fast *f)
{
	return f->mode - BL_HIST_FAST_EXP < BL_HIST_FAST_POS - BL_HIST_FAST_EXP;
}

/* A double's bits as a key in the doubles' order (for non-NaN). */
static inline uint64_t bl_hist_key(uint64_t bits)
{
	return bits ^ ((uint64_t)((int64_t)bits >> 63) | (1ull << 63));
}

/* Into [0, last]: one branch, taken only by values outside the window
 * (as the fixed lookup's, below). */
static inline int64_t bl_hist_clamp(const struct bl_hist_fast *f, int64_t k)
{
	if (__builtin_expect((uint64_t)k > (uint64_t)f->last, 0))
		k = k < 0 ? 0 : f->last;
	return k;
}

/* @x shifted by the mode's low 6 bits (which the layout's shift is,
 * above): the CPU takes a shift count's low 6 bits, C does not, and
 * GCC keeps the mask for a count that two lookups share. */
static inline uint64_t bl_hist_shr_mode(uint64_t x, uint32_t mode)
{
#if defined(__x86_64__)
	__asm__("shr %%cl, %0" : "+r"(x) : "c"(mode) : "cc");
	return x;
#else
	return x >> (mode & 63);
#endif
}

static inline uint64_t bl_hist_shl_mode(uint64_t x, uint32_t mode)
{
#if defined(__x86_64__)
	__asm__("shl %%cl, %0" : "+r"(x) : "c"(mode) : "cc");
	return x;
#else
	return x << (mode & 63);
#endif
}

/* The exponential bucket of @bits before the clamp: in [0, last] for
 * values in the window, below 0 for those under it and every negative
 * one (NaN and -Inf among them), past last for those above it and +Inf
 * and every positive NaN (their exponent, 1024, is at least 2 past any
 * window's top, which is below 2^1023). */
static inline int64_t bl_hist_exp_k(const struct bl_hist_fast *f, uint64_t bits)
{
	const struct bl_hist_cell *c = &f->ecell[(bits >> BL_HIST_EXP_LOW) & (BL_HIST_EXP_CELLS - 1)];
	/* the biased exponent, the sign shifted in: negative below -1;
	 * times 2^schema (unsigned: a negative one's shift is defined) */
	uint64_t k = bl_hist_shl_mode((uint64_t)((int64_t)bits >> 52), f->mode);

	return (int64_t)(k + (uint64_t)c->j) + ((bits << (64 - BL_HIST_EXP_LOW)) > c->off);
}

static inline uint32_t bl_hist_exp_index(const struct bl_hist_fast *f, uint64_t bits)
{
	return (uint32_t)bl_hist_clamp(f, bl_hist_exp_k(f, bits));
}

/* FIXED: the bucket of the key's cell, and the carry of its one bound. */
static inline uint32_t bl_hist_fixed_cell(const struct bl_hist_fast *f, uint64_t key)
{
	uint64_t d = key - f->kmin, at = d >> f->shift;
	const struct bl_hist_cell *c;

	/* Outside the table (below the first bound, or past the last
	 * cell): branches taken only by values outside the bounds, which a
	 * histogram that fits its data sees seldom; a branchless clamp
	 * would lengthen every lookup. */
	if (__builtin_expect((key < f->kmin) | (at > f->lastcell), 0)) {
		d = key < f->kmin ? 0 : d;
		at = key < f->kmin ? 0 : f->lastcell;
	}
	c = &f->cell[at];
	return (uint32_t)c->j + (d > c->off);
}

static inline uint32_t bl_hist_fixed_index(const struct bl_hist_fast *f, uint64_t bits)
{
	return bl_hist_fixed_cell(f, bl_hist_key(bits));
}

/*
 * POS: for a value not below the first bound, its bits less the first
 * bound's (@d) are its key's less the first bound's key, in cell @at =
 * d >> shift. A value below the first bound (positive: the difference
 * wraps past 2^63; negative: its bits are at least 2^63, the last
 * bound's below 2^63 - 2^52), +Inf and every NaN (bits at least 2^52
 * above the last bound's, which is below 2^1023) all land 2 cells or
 * more past the last bound's when cells hold at most 2^51 keys: past
 * lastcell, which one unsigned compare tells; the writer checks for NaN
 * there alone.
 */
static inline uint32_t bl_hist_pos_cell(const struct bl_hist_fast *f, uint64_t d, uint64_t at)
{
	const struct bl_hist_cell *c = &f->cell[at];

	return (uint32_t)c->j + (d > c->off);
}

static inline uint32_t bl_hist_fixed_pos_index(const struct bl_hist_fast *f, uint64_t bits)
{
	uint64_t d = bits - f->kmin, at = d >> f->shift;

	if (__builtin_expect(at > f->lastcell, 0))
		return bits < f->kmin || (int64_t)bits < 0 ? 0 : (uint32_t)f->last;
	return bl_hist_pos_cell(f, d, at);
}

/*
 * The writer's hot lookup: the bucket of a value inside a POS or EXP
 * layout's range into *@bucket, one compare of the mode and one range
 * compare; false for every other value and layout (the long way:
 * bl_hist_fast_index(), or a refusal). A value in range is no NaN and
 * no infinity, and not negative (its sign bit would make it a POS key
 * past the last cell, an exponent below every window).
 */
static inline bool bl_hist_hot(const struct bl_hist_fast *f, uint64_t bits, uint64_t *bucket)
{
	uint32_t mode = f->mode;
	int64_t k;

	if (mode >= BL_HIST_FAST_POS) {
		uint64_t d = bits - f->kmin, at = bl_hist_shr_mode(d, mode);

		if (__builtin_expect(at > f->lastcell, 0))
			return false;
		*bucket = bl_hist_pos_cell(f, d, at);
		return true;
	}
	k = bl_hist_exp_k(f, bits);
	*bucket = (uint64_t)k;
	return (uint64_t)k <= (uint64_t)f->last;
}

/* FIXED_MORE: then the compares with the bounds past the cell's first. */
static inline uint32_t bl_hist_fixed_more_index(const struct bl_hist_fast *f, uint64_t bits)
{
	uint64_t key = bl_hist_key(bits), i;
	uint32_t j = bl_hist_fixed_cell(f, key);

	for (i = f->more; i; i--)
		j += key > f->key[j];
	return j;
}

static inline uint32_t bl_hist_wide_index(const struct bl_hist_fast *f, uint64_t bits)
{
	int64_t e = ((int64_t)bits >> 52) - 1023;
	uint32_t sh = f->shift;

	/* ceil(log2(v) / 2^sh): exact for a power of two, else floor + 1 */
	e = (bits & ((1ull << 52) - 1)) ? (e >> sh) + 1 : -((-e) >> sh);
	return (uint32_t)bl_hist_clamp(f, e - f->n);
}

/* The bucket of @v (not NaN); @f's mode is not NONE. */
static inline uint32_t bl_hist_fast_index(const struct bl_hist_fast *f, double v)
{
	uint64_t bits;

	__builtin_memcpy(&bits, &v, sizeof(bits));
	if (bl_hist_fast_exp(f))
		return bl_hist_exp_index(f, bits);
	if (f->mode == BL_HIST_FAST_FIXED)
		return bl_hist_fixed_index(f, bits);
	if (f->mode == BL_HIST_FAST_FIXED_MORE)
		return bl_hist_fixed_more_index(f, bits);
	if (bl_hist_fast_pos(f))
		return bl_hist_fixed_pos_index(f, bits);
	return bl_hist_wide_index(f, bits);
}

/* Exact sums: blamer_exact_sum_*() (blamer.h), implemented here. */
#include "blamer.h"
#define BL_FSUM_PARTIALS	BLAMER_EXACT_PARTIALS

#endif /* BLAMER_METRIC_H */
