/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus exporter's parts (prom.c is the model): prom_text.c
 * makes the text (a buffer, numbers, the one escaper), prom_path.c the
 * path labels, prom_cache.c a long-lived exporter's texts kept between
 * scrapes. Private to lib/export.
 */
#ifndef BLAMER_PROM_H
#define BLAMER_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "blamer.h"

struct prom_label {
	const char *name;
	const char *value;
};

/*
 * The exposition is made in memory: a scrape of 1,000 processes is some
 * 70,000 lines, and per-character stdio calls cost more than the
 * snapshot. Into a FILE it goes out in PROM_OUT_CHUNK pieces; for an HTTP
 * answer it is kept whole.
 */
struct prom_out {
	char *p;
	size_t len, cap;
	bool oom;
	FILE *f;	/* if set, written out in PROM_OUT_CHUNK pieces: memory stays flat */
};

#define PROM_OUT_CHUNK	(256u << 10)

/* ---- prom_text.c ---- */
bool prom_room(struct prom_out *o, size_t n);	/* false: out of memory or a write failed */
void prom_put(struct prom_out *o, const void *s, size_t n);
void prom_puts(struct prom_out *o, const char *s);
void prom_putc(struct prom_out *o, char c);
void prom_u64(struct prom_out *o, uint64_t v);
void prom_ns(struct prom_out *o, uint64_t v);	/* nanoseconds as "S.NNNNNNNNN" */
size_t prom_utf8_seq(const unsigned char *s, uint32_t *cp);
bool prom_is_control(uint32_t cp);
/* The one escaper of label values (@help: of HELP text). */
void prom_escape(struct prom_out *o, const char *str, bool help);
void prom_family(struct prom_out *o, const char *name, const char *type, const char *help);
void prom_labels(struct prom_out *o, const struct prom_label *l, size_t n);
void prom_sample_u64(struct prom_out *o, const char *name, const struct prom_label *l, size_t n,
		     uint64_t v);

/* ---- prom_path.c ---- */
/* Enough for one element: 32 bytes each percent-encoded, "@0x" and an id. */
#define ELEM_MAX (3 * 32 + 24)

/*
 * The snapshot's nodes as path elements, each uid's own, each made once:
 * whether another node of its uid has the same name, and its element
 * when made.
 */
struct prom_names {
	const struct blamer_snapshot *s;
	const struct blamer_snap_uid_node *v;	/* by uid, then id */
	size_t n;
	struct blamer_snap_uid_node *own;	/* v if made here (no per-uid names) */
	bool per_uid;		/* else every uid's names are v's (uid 0) */
	bool *shared;		/* by index of v */
	uint32_t *off;		/* by index: where its element is in pool, +1; 0: not yet */
	uint32_t *len;		/* by index: its length there */
	struct prom_out pool;	/* the elements made, escaped */
};

bool prom_names_init(struct prom_names *nm, const struct blamer_snapshot *s);
void prom_names_free(struct prom_names *nm);
/* path="/e/e/..." of @p, its names @uid's, unambiguous for any node names. */
void prom_path_label(struct prom_out *o, struct prom_names *nm, uint32_t uid,
		     const struct blamer_snap_path *p);

/* ---- prom.c: the model, shared with prom_cache.c ---- */

/* A named unit: its family name and index. */
struct named {
	const struct blamer_snap_unit_def *def;
	uint32_t uid;		/* whose name (0: every uid's, without per-uid names) */
	char fam[80];
	size_t fam_index;
};

/* One (path, unit) value of a process: values[k] of its paths[path],
 * its family and whether it is in nanoseconds (exported as seconds).
 * 16 bytes: a hostile heap can hold half a million of them. */
struct entry {
	uint32_t path;
	uint32_t fam;
	uint32_t unit;
	uint8_t k;
	bool ns;
};

/*
 * What writing needs of the snapshot, made once per scrape: the
 * processes in key order, the named units and their families, and the
 * node names path labels are made of.
 */
struct exp {
	const struct blamer_snapshot *s;
	const struct blamer_snap_process **procs;
	size_t nprocs;
	struct named *nv;	/* by uid, then unit */
	size_t nn, nfam;	/* named units; attribution families */
	bool per_uid;		/* nv per uid (else every uid's are uid 0's) */
	struct prom_names nm;
};

/*
 * One process being written: its key labels (pid, start_time_ns, heap,
 * identity: digits, hex and two words, nothing to escape), its (family,
 * path, unit) values sorted, the next one to write, and its path labels,
 * each made once (a path has a series in each of its units' families).
 * identity says whose word pid, uid, start time and comm are: "kernel"
 * (device backend) or "claimed" (dir backend: the heap's file name and
 * its own record, which any process of the user could have written). It
 * is on every series so that no query shows a claim as a fact, and it
 * never changes for a heap.
 */
struct pw {
	const struct blamer_snap_process *p;
	char key[112];		/* 97 at most */
	struct entry *v;
	size_t n, at;
	struct { uint32_t off, len; } *lab;	/* by path: in pool, off + 1 */
	struct prom_out *pool;
	struct prom_guard_proc *guard;	/* a long-lived exporter's: counters held up */
};

/* A process's key (pid, start_time_ns, heap): the order processes are
 * written in, and each key is written once. */
struct prom_key {
	int32_t pid;
	uint64_t start, heap;
};
struct prom_key prom_key_of(const struct blamer_snap_process *p);
/* Its labels as every per-process series has them (pid, start_time_ns,
 * heap, identity), 97 bytes at most. */
void prom_key_labels(const struct blamer_snap_process *p, char *buf, size_t len);
int prom_key_cmp(const struct prom_key *x, const struct prom_key *y);

/* ---- prom_guard.c: no counter goes down (a long-lived exporter's) ---- */

struct guard_series;

/* What one process's series were, by series (sorted by id), and how
 * often its heap showed a counter lower than the time before. */
struct prom_guard_proc {
	struct prom_key key;
	uint64_t seen_ns;	/* last exported (CLOCK_MONOTONIC) */
	uint64_t decreases;
	struct guard_series *v;	/* in the order last written */
	size_t n, capv;
	/* while it is written (prom_guard_clamp()): the series written, where
	 * the memory is matched up to, and (once the order broke) an index of
	 * the memory by id and which of it was matched */
	struct guard_series *fresh;
	size_t nnew, capnew, pos;
	uint32_t *idx;
	uint8_t *used;
	uint64_t seed;
	uint64_t now_ns;	/* at prom_guard_begin() (CLOCK_MONOTONIC) */
	bool oom;
};

/* Every process's memory, by key. */
struct prom_guard {
	struct prom_guard_proc *v;
	size_t n;
};

/* Before a process's series are written (@seed: the cache's secret). */
void prom_guard_begin(struct prom_guard_proc *g, uint64_t seed);
/* The value to emit for the series whose text (name and labels) is
 * @series, the heap showing @shown: never less than emitted before. */
uint64_t prom_guard_clamp(struct prom_guard_proc *g, const char *series, size_t len,
			  uint64_t shown);
/* After: what was written becomes the process's memory; false if out of
 * memory (the memory stays the last one). */
bool prom_guard_end(struct prom_guard_proc *g);
void prom_guard_proc_free(struct prom_guard_proc *g);
/* The last scrape's memory of @key (looked up in key order from *at). */
struct prom_guard_proc *prom_guard_find(struct prom_guard *gd, const struct prom_key *key,
					size_t *at);
/* The end of a scrape: @cur (malloc()ed, the processes written, in key
 * order) is kept, with those of the last scrape absent from it for a
 * while. */
void prom_guard_swap(struct prom_guard *gd, struct prom_guard_proc *cur, size_t ncur,
		     uint64_t now_ns);
void prom_guard_free(struct prom_guard *gd);

/* The per-process gauges, in output order after blamer_heaps. */
#define NGAUGES 10

bool prom_exp_init(struct exp *e, const struct blamer_snapshot *s);
void prom_exp_free(struct exp *e);
size_t prom_nvalues(const struct blamer_snap_process *p);
bool prom_pw_init(struct exp *e, struct pw *w, const struct blamer_snap_process *p,
		  struct entry *v, struct prom_out *pool);
void prom_pw_free(struct pw *w);
void prom_write_heaps(struct exp *e, struct prom_out *o);
void prom_gauge_family(struct prom_out *o, size_t g);
void prom_write_gauge(struct pw *w, size_t g, struct prom_out *o);
void prom_attr_family(struct exp *e, size_t f, uint32_t uid, uint32_t unit, struct prom_out *o);
void prom_write_attr(struct exp *e, struct pw *w, size_t f, struct prom_out *o);
/* @p's blamer_counter_decreases_total sample: @n. */
void prom_write_decreases(const struct blamer_snap_process *p, uint64_t n, struct prom_out *o);
#define PROM_DECREASES_FAMILY	"blamer_counter_decreases_total"
#define PROM_DECREASES_HELP	"Times a heap showed a counter lower than the time before (each series held at its highest: never a reset)."
/* The exposition, family by family, straight into @o: a one-off export. */
int prom_write_all(const struct blamer_snapshot *s, struct prom_out *o);
/* The attribution family of @uid's @unit (its index, and whether its
 * values are nanoseconds written as seconds: @uid's base, never another
 * user's), and the name of family @f. */
size_t prom_unit_family(const struct exp *e, uint32_t uid, uint32_t unit, bool *ns);
const char *prom_fam_name(const struct exp *e, size_t f, uint32_t uid, uint32_t unit);
/* Family @f's series have a unit label (the unnamed units' family, and
 * named ones, which units of one name share). */
bool prom_fam_has_unit(size_t f);

/* ---- prom_metric.c: metric families (blamer_metric_define()) ---- */

/* Sample names a scrape has written (each once). */
struct pm_names {
	char **v;
	size_t n, cap;
	uint64_t seed;		/* the table's secret (hash.h) */
};
/* Takes the sample names of @d's family; false if one is taken (the
 * family is not written: it would make the scrape invalid). */
bool pm_claim(struct pm_names *n, const struct blamer_snap_metric_def *d);
void pm_names_free(struct pm_names *n);
/* A family to write: its definition (its least uid's) and that uid. */
struct pm_run {
	const struct blamer_snap_metric_def *def;
	uint32_t uid;
	bool ok;		/* claimed: written */
};
/* Claims the families of @runs by their least uid first (then in their
 * order), so that where two families' sample names meet (a counter foo's
 * foo_total and a gauge foo_total, or foo itself) the lesser uid's is the
 * one written, whatever the names' order; sets each run's ok. False out
 * of memory (none written). */
bool pm_claim_runs(struct pm_names *n, struct pm_run *runs, size_t nruns);
/* The family name of @d: a counter's ends in _total. */
void pm_family_name(const struct blamer_snap_metric_def *d, char *buf, size_t len);
/* A double exactly: the shortest decimal that reads back as it. */
void pm_double(struct prom_out *o, double v);

/* One series to write: its definition, labels, path, extra labels
 * (already written: uid="...", or a process's key) and values. */
struct pm_series {
	const struct blamer_snap_metric_def *def;
	char *const *values;
	uint32_t depth;
	const uint64_t *nodes;
	uint32_t uid;		/* whose names its path label is made of */
	const char *extra;
	double value;		/* counter, gauge; histogram: the sum */
	const uint64_t *buckets;	/* histogram: not cumulative */
	/* a long-lived exporter's: a counter, a histogram's buckets, count
	 * and sum held at their highest (prom_guard_clamp()); NULL: as they
	 * are */
	struct prom_guard_proc *guard;
};
void pm_family(struct prom_out *o, const struct blamer_snap_metric_def *d);
void pm_series(struct prom_out *o, const struct pm_series *x, struct prom_names *nm);
/* @v in an unsigned order of its own (a guard's): a < b as doubles if
 * and only if pm_order(a) < pm_order(b), for every double but NaN. */
uint64_t pm_order(double v);
double pm_unorder(uint64_t u);
/* Every process's own series, family by family (export --per-process);
 * with @guards (one per e->procs, begun) each process's counters held
 * up by its own. */
void pm_write_processes(struct exp *e, struct prom_out *o, struct prom_guard_proc *guards);

#endif /* BLAMER_PROM_H */
