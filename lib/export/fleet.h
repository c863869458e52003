/* SPDX-License-Identifier: MIT */
/*
 * A fleet exporter's memory (fleet.c, fleet_state.c, prom_fleet.c): the
 * remainder of dead heaps folded into it, and which heaps those were.
 * Private to lib/export.
 *
 * The remainder is what the exporter's aggregate series add to the live
 * (and not yet folded) processes' values: per series (metric name, uid,
 * label values, path) a counter's exact sum, a histogram's buckets and
 * exact sum, a gauge's value by its mode; per (path, unit, uid) an
 * attribution total; per (reason, uid) a drop count. With it are the
 * definitions of its metrics (per name and uid, as the reader merges), the names of the DAG nodes and units its
 * paths use (so its series keep their labels when the last process that
 * named them is gone), and the identities of the folded heaps still
 * present (skipped, not counted twice).
 */
#ifndef BLAMER_EXPORT_FLEET_H
#define BLAMER_EXPORT_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blamer.h"
#include "prom.h"

/* What a heap is: its backend, pid, start time and its random id (and the
 * device's file serial): the same heap, across boots too. */
struct fl_ident {
	uint32_t backend;
	int32_t pid;
	uint64_t start, heap_id, heap_key;
	uint64_t dead_ns;	/* when it was seen dead (CLOCK_REALTIME): the newest are kept */
};

/* A series of the remainder. */
struct fl_series {
	uint32_t def;		/* index in fleet->defs */
	uint32_t uid;
	char *values[BLAMER_METRIC_LABELS_MAX];	/* malloc()ed */
	uint32_t depth;
	uint64_t nodes[BLAMER_SNAP_MAX_DEPTH];
	double *exact;		/* counters, histograms, sum gauges: the exact sum */
	uint32_t nexact;
	double value;		/* min, max, mostrecent gauges */
	uint64_t stamp;		/* mostrecent gauges */
	uint64_t *buckets;	/* histograms: the definition's nbuckets */
	/* counters, histograms: dead heaps' parts the fold threw away, their
	 * sum with the rest not fitting ("A sum must fit"); a series with
	 * one is no longer its total: left out of the exposition for good */
	uint64_t lost;
};

struct fl_path {
	uint32_t uid, unit, depth;
	uint64_t nodes[BLAMER_SNAP_MAX_DEPTH];
	uint64_t value;
};

struct fl_drop {
	uint32_t uid, reason;
	uint64_t value;
};

/* What a commit's temporary file adds to the state's name, before
 * mkostemp()'s 6 characters: distinct enough that an operator's copies
 * ("STATE.backup") are never taken for one and removed. */
#define FL_TMP_MARK ".tmp-"

/* Indexes into one of the remainder's arrays by a keyed hash (fleet.c):
 * what a fold looks up per definition, series, path, node and unit. In
 * memory only, made again from the array whenever it does not cover it
 * exactly. */
struct fl_index {
	uint32_t *slot;		/* entry + 1; 0 free */
	size_t mask;
	size_t n;		/* the array's entries it holds */
};

struct blamer_fleet {
	char *path;		/* the state file, NULL: none (nothing folded) */
	const char *name;	/* its last component, in @path */
	int dirfd;		/* its directory, opened once (fl_dir_open()) and
				 * the only way to it after: -1 */
	char *source;		/* what its heaps were read from (the reader's
				 * source), NULL: not yet said */
	struct blamer_snap_metric_def *defs;	/* malloc()ed strings and bounds */
	uint32_t *def_uids;	/* whose each one is: a name has one per uid */
	size_t ndefs;
	struct fl_series *series;
	size_t nseries;
	struct fl_path *paths;
	size_t npaths;
	struct fl_drop *drops;
	size_t ndrops;
	struct fl_ident *idents;	/* folded heaps still present, sorted */
	size_t nidents;
	/* names the remainder's paths use, each uid's own (as the reader
	 * keeps them: no user's heap names another's), by uid then id */
	struct blamer_snap_uid_node *nodes;
	size_t nnodes;
	/* names of the units they use, each uid's own, by uid then unit */
	struct blamer_snap_uid_unit_def *units;
	size_t nunits;
	uint64_t generation;	/* commits made */
	uint64_t folded;	/* heaps folded, ever */
	uint64_t fold_errors;	/* folds that could not be made durable */
	size_t conflicts;	/* remainder series its definitions no longer match */
	uint32_t test_abort;	/* BLAMER_TEST_FOLD_ABORT: abort() at this step */
	bool broken;		/* a failed fold's state could not be read back */
	/* a commit's rename happened but its directory's fsync failed: the
	 * state read back is not known to be on disk */
	bool unsynced;
	int lockfd;		/* the state's lock (one exporter per state), -1 */
	/* what each counter of the service's series was last (prom_guard.c:
	 * never shown lower, whatever a heap does or when a heap leaves
	 * unfolded), keyed with a secret seed; in memory only */
	struct prom_guard_proc guard;
	uint64_t seed;
	/* the fold's lookups (fleet.c); fl_state_free() drops them */
	struct fl_index series_ix, paths_ix, nodes_ix, units_ix, defs_ix;
	/* the remainder's series per uid and the bytes its records may take
	 * in the state (fleet.c, the *_bytes() bounds), counted when the
	 * state is read and kept at each fold, and the most a uid may have
	 * there ($BLAMER_FOLD_MAX_SERIES, $BLAMER_FOLD_MAX_BYTES) */
	struct fl_uid_series {
		uint32_t uid;
		size_t n;
		size_t bytes;
	} *uidn;
	size_t nuidn;
	struct fl_index uidn_ix;
	size_t max_series, max_bytes;
	size_t held;		/* dead heaps the last fold held back by those bounds */
};

/* The series a uid may have in the remainder unless
 * $BLAMER_FOLD_MAX_SERIES says otherwise: a dead heap that would take its
 * uid past it is not folded (counted while it is there), so that no user
 * grows the state, which every start reads, without bound. */
#define FL_MAX_SERIES_DEFAULT	100000
#define FL_MAX_SERIES_LIMIT	10000000

/* Bytes of the state a uid's records (series, paths, definitions, and the
 * nodes and units it named first) may take, unless $BLAMER_FOLD_MAX_BYTES
 * says otherwise: a series bound alone let one user's series of long
 * label values and histograms, or its paths (not bounded at all), grow
 * the state past what a start reads (FL_STATE_MAX), and made every
 * commit (the state written whole) as large. */
#define FL_MAX_BYTES_DEFAULT	(16u << 20)
#define FL_MAX_BYTES_MIN	(64u << 10)
#define FL_MAX_BYTES_LIMIT	FL_STATE_MAX

/* Bytes of a state file read at most: a commit that would write more is
 * refused (a fold error, the heaps kept), never written to be refused at
 * the next start. */
#define FL_STATE_MAX		(256u << 20)

/* fleet_state.c: the state file. */
/* Reads @f->path into @f (missing: an empty state); -errno and a
 * one-line message if it is not a state this exporter may trust. */
int fl_state_load(struct blamer_fleet *f, char *err, size_t errlen);
/* Writes @f durably over @f->path (temporary file, fsync, rename, fsync
 * of the directory); -errno and a message on failure (nothing changed). */
int fl_state_save(struct blamer_fleet *f, char *err, size_t errlen);
/* Opens the directory of the state @f->path into @f->dirfd (and sets
 * @f->name), walking its path a component at a time: each directory on
 * it, and the last, ours or root's and not writable by others (but for a
 * sticky one), each symlink ours or root's, so that no other user may
 * change or redirect where it leads; else -errno and a one-line message
 * naming the component and its owner. Everything after (the lock, the
 * temporaries, the state, the commit) is reached through that
 * descriptor, never by the path again. */
int fl_dir_open(struct blamer_fleet *f, char *err, size_t errlen);
/* @name in the state's directory exists and is another user's (made
 * first in a directory others may write, a sticky one): true, with a
 * one-line message naming it (@what, @path) and its owner. */
bool fl_squatter(const struct blamer_fleet *f, const char *what, const char *name,
		 const char *path, char *err, size_t errlen);
/* Frees what @f holds, the remainder and the identities (not @f, its
 * path and directory, hook and error count). */
void fl_state_free(struct blamer_fleet *f);
/* Appends a copy of @d (its strings and bounds its own) as @uid's
 * definition; false out of memory (nothing added). */
bool fl_def_add(struct blamer_fleet *f, const struct blamer_snap_metric_def *d, uint32_t uid);
/* The order of folded heaps' identities (qsort()/bsearch(): the state
 * lists them in it, each once). */
int fl_ident_cmp(const void *a, const void *b);
/* The step of a fold the test hook stops at (abort()s) if it is @step. */
void fl_test_abort(const struct blamer_fleet *f, uint32_t step);

/* fleet.c: lookups for prom_fleet.c. */
/* The identity of @p. */
struct fl_ident fl_ident_of(const struct blamer_snap_process *p);
/* @p was folded (its identity is listed). */
bool fl_folded(const struct blamer_fleet *f, const struct blamer_snap_process *p);

/*
 * A drop count summed over heaps (the live ones' and the remainder's in
 * blamer_dropped_total, a folded heap's into the remainder): at most
 * 2^64 - 1, as the reader's totals, never wrapped to near nothing by one
 * heap's count near the top.
 */
static inline uint64_t fl_sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* uint32_t in increasing order (qsort() of uids). */
static inline int fl_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* The order of per-uid node names: by uid, then id (qsort()). */
static inline int fl_uid_node_cmp(const void *a, const void *b)
{
	const struct blamer_snap_uid_node *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return (x->node.id > y->node.id) - (x->node.id < y->node.id);
}

#endif /* BLAMER_EXPORT_FLEET_H */
