/* SPDX-License-Identifier: MIT */
/*
 * libblamer: cross-process activity and resource reporting through shared
 * memory. The one public header. See Documentation/library.rst (writer)
 * and Documentation/reader.rst (reader).
 */
#ifndef BLAMER_H
#define BLAMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ---- Values ----
 * Every value the writer API takes and a snapshot shows has one name,
 * here. Heaps store most of these numbers (Documentation/heap-format.rst),
 * and a heap outlives the program that wrote it: a value never changes
 * its meaning; new ones are only ever added.
 */

/* Where heaps live (blamer_config.backend, blamer_reader_opts.backend,
 * blamer_heap_info.backend, blamer_snapshot.backend). */
enum blamer_backend {
	BLAMER_BACKEND_AUTO = 0,	/* device if /dev/blamer exists, else dir */
	BLAMER_BACKEND_DEVICE = 1,
	BLAMER_BACKEND_DIR = 2,
};

/* The device node: the kernel's ABI names no path (udev does); this is
 * the name its rule gives it, and the one the library opens. */
#define BLAMER_DEVICE		"/dev/blamer"

/*
 * The backend $BLAMER_BACKEND asks for: "device", "dir", or "auto" (also
 * unset or empty): BLAMER_BACKEND_AUTO. 0 and *out, or -EINVAL and a
 * one-line reason in @err (which may be NULL) for anything else. The
 * writer, the reader and the blamer tool all decide with it.
 */
int blamer_backend_from_env(enum blamer_backend *out, char *err, size_t errlen);

/* Process phases (blamer_set_phase(), blamer_snap_process.phase);
 * >= BLAMER_PHASE_APP_BASE are the application's. */
#define BLAMER_PHASE_UNKNOWN		0u
#define BLAMER_PHASE_LAUNCHED		1u
#define BLAMER_PHASE_MAIN_LOOP		2u
#define BLAMER_PHASE_SHUTTING_DOWN	3u
#define BLAMER_PHASE_EXITED_CLEANLY	4u
#define BLAMER_PHASE_APP_BASE		1000u

/* Activity kinds (blamer_push(), blamer_snap_activity.kind). */
#define BLAMER_ACTIVITY_TASK		1u
#define BLAMER_ACTIVITY_LOCK_ACQUIRE	2u
#define BLAMER_ACTIVITY_EVENT_WAIT	3u
#define BLAMER_ACTIVITY_THREAD_JOIN	4u
#define BLAMER_ACTIVITY_PROCESS_WAIT	5u
#define BLAMER_ACTIVITY_GENERIC		6u

/* Scopes of user data (blamer_set_*()). */
#define BLAMER_DATA_GLOBAL	1u	/* about the application: readers merge across processes */
#define BLAMER_DATA_PROCESS	2u	/* about this process */
#define BLAMER_DATA_ACTIVITY	3u	/* about the calling thread's top activity */

/* Types of user data fields (blamer_snap_field.type). */
#define BLAMER_FIELD_END	0u	/* (in a heap: a field being made) */
#define BLAMER_FIELD_RAW	1u	/* bytes */
#define BLAMER_FIELD_RAW_REF	2u	/* address and size of bytes outside the heap */
#define BLAMER_FIELD_STRING	3u
#define BLAMER_FIELD_STRING_REF	4u	/* address and size of a string outside the heap */
#define BLAMER_FIELD_CHAR	5u
#define BLAMER_FIELD_BOOL	6u
#define BLAMER_FIELD_SIGNED	7u	/* int64_t */
#define BLAMER_FIELD_UNSIGNED	8u	/* uint64_t */
#define BLAMER_FIELD_DOUBLE	9u

/* Measurement units (blamer_path_get(), snapshot paths and totals);
 * >= BLAMER_UNIT_APP_BASE are the application's. */
#define BLAMER_UNIT_NONE	0u
#define BLAMER_UNIT_CPU_NS	1u
#define BLAMER_UNIT_BYTES	2u
#define BLAMER_UNIT_COUNT	3u
#define BLAMER_UNIT_APP_BASE	1000u

/* Base units of an application unit (blamer_dag_unit(), exporters):
 * what its values count. SECONDS: values are nanoseconds. */
#define BLAMER_BASE_NONE	0u	/* events, items: a plain count */
#define BLAMER_BASE_SECONDS	1u
#define BLAMER_BASE_BYTES	2u

/* Heap states (blamer_snap_process.heap_state). */
#define BLAMER_HEAP_UNINIT	0u	/* being made */
#define BLAMER_HEAP_READY	1u	/* in use */
#define BLAMER_HEAP_DELETED	2u	/* its owner closed it (a clean end) */

/* Heap flags (blamer_heap_info.flags, blamer_snap_process.heap_flags). */
#define BLAMER_HEAP_F_CORRUPT	(1u << 0)
#define BLAMER_HEAP_F_FULL	(1u << 1)
#define BLAMER_HEAP_F_FOLD	(1u << 2)	/* holds series an exporter folds: a clean
						 * end leaves it (blamer_close()) */

/*
 * Why a write was not recorded in full (blamer_snap_process.drops[],
 * `blamer_dropped_total{reason=...}`): a closed set, each counted in the
 * heap that lost it. Documentation/library.rst, "Nothing lost silently".
 */
#define BLAMER_DROP_HEAP_FULL		0u	/* no room for a record or field */
#define BLAMER_DROP_STRING_CUT		1u	/* a string or raw value cut to its field */
#define BLAMER_DROP_LABEL_CUT		2u	/* an activity label cut */
#define BLAMER_DROP_NAME_CUT		3u	/* a thread/node name, role or instance cut */
#define BLAMER_DROP_LOG_CUT		4u	/* a log message cut */
#define BLAMER_DROP_STACK_OVERFLOW	5u	/* a push past the stack's slots */
#define BLAMER_DROP_BUSY		6u	/* another writer held the field or heap */
#define BLAMER_DROP_NO_HEAP		7u	/* the context had no heap to write */
#define BLAMER_DROP_BAD_HANDLE		8u	/* a handle naming no field of its type */
#define BLAMER_DROP_LABEL_VALUES_CUT	9u	/* a metric's label values cut to their room */
#define BLAMER_DROP_BAD_VALUE		10u	/* a metric write of NaN, an infinite add or
						 * observation, a counter add < 0, an add
						 * that would make a sum infinite (or a
						 * gauge's NaN) */
#define BLAMER_DROP_REASONS		11u
#define BLAMER_DROP_MAX			16u	/* room in the snapshot for later reasons */

/* Whether a heap's owner runs (blamer_snap_process.state). */
#define BLAMER_PROC_LIVE	1
#define BLAMER_PROC_DEAD	2

/* States of a child a process launched (blamer_snap_child.state). */
#define BLAMER_CHILD_RUNNING	1u
#define BLAMER_CHILD_EXITED	2u

/* ---- Writer API ---- */
#include <sys/types.h>	/* pid_t */

/*
 * A context: one heap of the calling process (the slabs it writes) plus
 * the bookkeeping around it. Every function takes the context first;
 * NULL means the process-default context, created on first use from the
 * environment (BLAMER_BACKEND, BLAMER_DIR) or by blamer_init().
 * Functions returning int return 0 (or a non-negative value) on success
 * and a negative errno on failure; blamer_errmsg() then holds a one-line
 * explanation. Documentation/library.rst is the reference.
 */
struct blamer;

/* Configuration for blamer_open() / blamer_init(); zero means default. */
struct blamer_config {
	int backend;		/* enum blamer_backend; AUTO honours $BLAMER_BACKEND */
	uint32_t max_slabs;	/* slabs the heap may grow to (<= 64); 0: 16 */
	uint64_t slab_size;	/* bytes per slab (page multiple); 0: 1 MiB */
	const char *dir;	/* dir backend: NULL = $BLAMER_DIR or /dev/shm/blamer-<uid> */
	uint32_t stack_depth;	/* activity slots per thread; 0: 16 */
	uint32_t log_slots;	/* log ring size; 0: 64 */
	uint32_t flags;		/* BLAMER_OPEN_* */
	uint32_t reserved;
};
#define BLAMER_OPEN_NO_MODULES	(1u << 0)	/* skip blamer_modules_refresh() at open */
/*
 * fork(): every handle (context, path, value, thread record) made before
 * a fork works in the child, writing to the child's own heap, made on the
 * child's first write (Documentation/library.rst, "fork()"). Nothing to
 * call; the child's heap records the modules the parent had at the fork.
 */

int blamer_open(const struct blamer_config *cfg, struct blamer **out);
/* Marks the heap deleted (a clean exit) and removes it: its files (dir backend) or its slabs
 * (device backend, released). */
void blamer_close(struct blamer *b);
/* Unmaps without marking anything: the heap stays as if the process died (device: its
 * slabs stay live until the process exits). NULL: the process default, if it was made. */
void blamer_abandon(struct blamer *b);

/* Process-default context. */
int blamer_init(const struct blamer_config *cfg);	/* -EBUSY if already set up */
struct blamer *blamer_default(void);	/* creates it on first use; NULL on failure */
void blamer_reset(void);		/* closes the default (tests); next use re-creates */

const char *blamer_errmsg(void);	/* last error of the calling thread */
/* That error's errno (EINVAL, ENOSPC...), 0 if none: what a call that
 * returns NULL failed with (an int-returning one returns it negated). */
int blamer_errno(void);

/* What the context is writing to. */
struct blamer_heap_info {
	int backend;		/* BLAMER_BACKEND_DEVICE or BLAMER_BACKEND_DIR */
	uint32_t slab_count;
	uint32_t max_slabs;
	uint32_t flags;		/* BLAMER_HEAP_F_* */
	uint64_t slab_size;
	uint64_t heap_id;
	uint64_t bytes_used;
	int64_t pid;
	int64_t start_ns;	/* process start, ns since boot (dir file names) */
	char dir[256];		/* dir backend directory, else "" */
};
int blamer_heap_info(struct blamer *b, struct blamer_heap_info *info);

/* ---- Process ---- */
int blamer_set_phase(struct blamer *b, uint32_t phase);	/* BLAMER_PHASE_* or >= 1000 */
/* A parent records the children it starts and their end. */
int blamer_process_launched(struct blamer *b, pid_t pid);
/*
 * Call after waitpid(): records the exit status and, in the dir backend,
 * if the child exited with status 0, removes its heap files when pid AND
 * start time match the launch record (a reused pid with another start
 * time is left alone; a crashed child's heap stays for postmortem).
 * Returns the number of files removed.
 */
int blamer_process_exited(struct blamer *b, pid_t pid, int wait_status);

/*
 * Names this process's role and instance ("worker", "2") in its heap, for
 * every view and the exporters' labels: 1..31 printable bytes each
 * (instance may be NULL or ""). Set once per heap: again the same way is
 * a no-op, another way -EEXIST. Call it before the first other write of a
 * fork child, so the child's heap is made with it; a child's heap does
 * not inherit its parent's role.
 */
int blamer_set_role(struct blamer *b, const char *role, const char *instance);

/* ---- Thread activity stack (async-signal-safe push/pop) ---- */
/*
 * Pushes an activity of @kind on the calling thread's stack with a
 * timestamp, the caller's address and two words of kind-specific data
 * (lock address, pid, task id...). @label: text, first 80 bytes kept
 * (BLAMER_LABEL_MAX; longer: cut, marked and counted). Returns the new depth (> stack depth: counted as overflow, not
 * recorded) or a negative errno. No lock, no malloc, no system call
 * after the thread's first push.
 */
int blamer_push(struct blamer *b, uint32_t kind, const char *label,
		uint64_t data0, uint64_t data1);
void blamer_pop(struct blamer *b);
int blamer_thread_set_name(struct blamer *b, const char *name);

/* ---- Typed user data ---- */
/*
 * Handle to one field, for updates without a name lookup: valid until the
 * scope ends (pop, close). A PROCESS or GLOBAL handle is process memory
 * that names its field: in a fork child it writes to the child's heap.
 * An ACTIVITY handle belongs to its activity, which a fork child does not
 * have: writes through it there are dropped and counted (BAD_HANDLE).
 */
struct blamer_value;

struct blamer_value *blamer_set_bool(struct blamer *b, unsigned scope, const char *name, bool v);
struct blamer_value *blamer_set_char(struct blamer *b, unsigned scope, const char *name, char v);
struct blamer_value *blamer_set_int(struct blamer *b, unsigned scope, const char *name, int64_t v);
struct blamer_value *blamer_set_uint(struct blamer *b, unsigned scope, const char *name, uint64_t v);
struct blamer_value *blamer_set_double(struct blamer *b, unsigned scope, const char *name, double v);
/* Strings and raw bytes: the first set decides the capacity (longer later values are cut,
 * marked and counted), unless blamer_reserve_string() made the field first. */
struct blamer_value *blamer_set_string(struct blamer *b, unsigned scope, const char *name, const char *v);
struct blamer_value *blamer_set_raw(struct blamer *b, unsigned scope, const char *name,
				    const void *v, size_t len);
/* Makes string field @name with room for @capacity bytes and value "", for later sets of
 * longer values; an existing field keeps its capacity (no-op). A scope's fields share one
 * 4 KiB record: at most 4080 bytes for a lone field of a short name, less beside others
 * (ENOSPC). */
struct blamer_value *blamer_reserve_string(struct blamer *b, unsigned scope, const char *name,
					   size_t capacity);
/* References to memory outside the heap: only address and size are stored. */
struct blamer_value *blamer_set_string_ref(struct blamer *b, unsigned scope, const char *name,
					   const char *addr, size_t len);
struct blamer_value *blamer_set_raw_ref(struct blamer *b, unsigned scope, const char *name,
					const void *addr, size_t len);

/* Fast in-place updates through a handle (type must match: else no-op). */
void blamer_value_bool(struct blamer_value *h, bool v);
void blamer_value_int(struct blamer_value *h, int64_t v);
void blamer_value_uint(struct blamer_value *h, uint64_t v);
void blamer_value_double(struct blamer_value *h, double v);
void blamer_value_add(struct blamer_value *h, int64_t delta);	/* SIGNED/UNSIGNED, atomic */
void blamer_value_string(struct blamer_value *h, const char *v);

/* ---- Modules and log ---- */
/* Re-reads the loaded shared objects; call after dlopen()/dlclose(). Returns the count. */
int blamer_modules_refresh(struct blamer *b);
/* Appends a message to the bounded ring of recent messages. */
int blamer_log(struct blamer *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- Attribution DAG ---- */
/* A stable 64-bit node id: FNV-1a 64 of @name, the same in every process. */
uint64_t blamer_dag_id(const char *name);
int blamer_dag_node(struct blamer *b, uint64_t id, uint32_t node_type, const char *name);
int blamer_dag_link(struct blamer *b, uint64_t parent_id, uint64_t child_id);

/*
 * A path: node ids from the root to a node, as actually walked, with up to
 * 8 measurements whose units are given by @units (BLAMER_UNIT_* or >= 1000).
 * Finds the existing record for the same path and units or makes one.
 */
struct blamer_path;
struct blamer_path *blamer_path_get(struct blamer *b, const uint64_t *ids, unsigned depth,
				    const uint32_t *units, unsigned nunits);
/* Atomic add; @unit_index < nunits of blamer_path_get(). Lock-free, no syscall. */
void blamer_path_add(struct blamer_path *p, unsigned unit_index, uint64_t value);

/*
 * Names application unit @unit (>= BLAMER_UNIT_APP_BASE) for readers and
 * exporters, e.g. "requests" or "bytes_read", and says what its values
 * count (BLAMER_BASE_*). @name: 1..31 of [a-z0-9_], not starting with a
 * digit. Call it before the paths that use the unit; naming a unit again
 * the same way is a no-op, otherwise -EEXIST.
 */
int blamer_dag_unit(struct blamer *b, uint32_t unit, const char *name, uint32_t base);

/* ---- Metrics: counters, gauges and histograms of a service ---- */
/*
 * A metric is defined once per heap (a fork child inherits the
 * definition) and written through series handles, one per label set
 * (and DAG path, if given). Readers merge the processes' series: the
 * exporter's default is one series per metric, label set, path and uid
 * over every process, live and dead, with dead heaps folded into a
 * durable remainder. Documentation/library.rst, "Metrics".
 */
/* Kinds (blamer_metric_def.kind, blamer_snap_metric_def.kind). */
#define BLAMER_METRIC_COUNTER		1u	/* only grows: double, per-thread shards */
#define BLAMER_METRIC_GAUGE		2u	/* set and added to: one double */
#define BLAMER_METRIC_HISTOGRAM		3u	/* observations counted in buckets, and summed */

/* How readers merge a gauge over processes (prometheus_client's
 * multiprocess_mode): ALL and LIVEALL give one series per process (a pid
 * label), the others one over processes; LIVE* leave dead ones out. */
#define BLAMER_GAUGE_ALL		1u
#define BLAMER_GAUGE_LIVEALL		2u
#define BLAMER_GAUGE_MIN		3u
#define BLAMER_GAUGE_LIVEMIN		4u
#define BLAMER_GAUGE_MAX		5u
#define BLAMER_GAUGE_LIVEMAX		6u
#define BLAMER_GAUGE_SUM		7u
#define BLAMER_GAUGE_LIVESUM		8u
#define BLAMER_GAUGE_MOSTRECENT		9u	/* the value set last (a clock read per set) */
#define BLAMER_GAUGE_LIVEMOSTRECENT	10u

/* blamer_metric_def.flags */
#define BLAMER_METRIC_PER_PROCESS	(1u << 0)	/* exported per process only, never summed */

/* Histogram layouts (blamer_snap_metric_def.layout). */
#define BLAMER_HIST_FIXED		1u	/* bounds the program chose */
#define BLAMER_HIST_EXPONENTIAL		2u	/* powers of 2^(2^-schema) */

#define BLAMER_METRIC_NAME_MAX		63u	/* bytes of a name */
#define BLAMER_METRIC_HELP_MAX		127u	/* bytes of help text */
#define BLAMER_METRIC_LABELS_MAX	8u	/* label names of a metric */
#define BLAMER_METRIC_LABEL_NAMES_MAX	127u	/* their bytes, one NUL after each */
#define BLAMER_METRIC_VALUES_MAX	255u	/* a series' label values, one NUL after each */
#define BLAMER_METRIC_BOUNDS_MAX	32u	/* fixed bounds of a histogram */
#define BLAMER_METRIC_BUCKETS_MAX	258u	/* buckets of a histogram: 256 in an exponential
						 * window, the one below it and +Inf */

/*
 * What a metric is. name: [a-zA-Z_:][a-zA-Z0-9_:]*, 1..63 bytes, not
 * starting with "blamer_" (the exporter's own); a counter is exported
 * as name + "_total" (unless it ends so), a histogram as name_bucket,
 * name_sum and name_count. labels: nlabels names of [a-zA-Z_][a-zA-Z0-9_]*,
 * not starting with "__", none of the exporter's own (le, quantile, pid,
 * uid, start_time_ns, heap, identity) and, for a series given a DAG
 * path, not path. A histogram has either
 * fixed bounds (1..32, ascending, finite; +Inf is implied) or, with
 * nbounds 0, exponential buckets: bucket k ends at 2^(k * 2^-schema)
 * for schema -4..8, over the window 2^min_exp .. 2^max_exp (-1022 <
 * min_exp < max_exp < 1023), with one bucket below it (values <=
 * 2^min_exp, zero and negative ones too) and +Inf above: at most 256
 * buckets in the window (258 in all). Such buckets merge exactly across processes.
 * Zero-fill it: reserved members are 0.
 */
struct blamer_metric_def {
	const char *name;
	const char *help;		/* NULL: none */
	uint32_t kind;			/* BLAMER_METRIC_* */
	uint32_t base;			/* BLAMER_BASE_*: what values are in (shown, not
					 * converted: seconds are seconds) */
	uint32_t gauge_mode;		/* gauges: BLAMER_GAUGE_*, 0: ALL */
	uint32_t flags;			/* BLAMER_METRIC_* */
	const char *const *labels;	/* nlabels label names */
	uint32_t nlabels;
	uint32_t nbounds;		/* histograms: fixed bounds, or 0 */
	const double *bounds;
	int32_t schema;			/* exponential histograms (nbounds 0) */
	int32_t min_exp, max_exp;
	uint32_t reserved[4];
};

/*
 * The metric @def in @b's heap, made or found: the same handle for the
 * same name, for the context's life (a fork child's first write through
 * it makes it in the child's heap). NULL (blamer_errmsg()) on a bad
 * definition (-EINVAL), one of that name defined otherwise (-EEXIST) or
 * no room (-ENOSPC, counted). Not async-signal-safe: call it at setup.
 */
struct blamer_metric;
struct blamer_metric *blamer_metric_define(struct blamer *b, const struct blamer_metric_def *def);

/*
 * The series of @m with label values @values (one per label name, any
 * bytes but NUL; NULL when the metric has no labels) and, if @depth >
 * 0, attributed to the DAG path @path (node ids root first, 1..8 of
 * them): the same handle for the same values and path. Values longer
 * than the room (255 bytes with a NUL after each) are cut, marked and
 * counted. NULL (blamer_errmsg()) on bad arguments or no room.
 * Lock-free, no system call after the first; not async-signal-safe
 * (malloc the first time).
 */
struct blamer_series;
struct blamer_series *blamer_metric_series(struct blamer_metric *m, const char *const *values,
					   const uint64_t *path, unsigned depth);

/*
 * The writes: lock-free, no system call (a mostrecent gauge's set reads
 * the clock through the vDSO), async-signal-safe. A write to a series of
 * another kind is dropped and counted (bad_handle), as is NaN, a counter
 * add below 0 or infinite, an infinite observation, and an add or
 * observation that would take the sum past the largest double, or a
 * gauge's add that would make it NaN (+Inf less +Inf) (bad_value; the
 * series keeps its value): a sum that merges over processes into a
 * durable total stays finite.
 */
void blamer_counter_add(struct blamer_series *s, double v);
void blamer_gauge_set(struct blamer_series *s, double v);
void blamer_gauge_add(struct blamer_series *s, double v);	/* atomic */
void blamer_histogram_observe(struct blamer_series *s, double v);

/* ---- end of writer API ---- */

/* ---- Reader API ---- */
#include <stdio.h>	/* FILE for the exporters */

/*
 * The reader turns every heap the caller may see into one snapshot: plain
 * data, copied out of the heaps and validated, that stays valid until
 * blamer_snapshot_free(). Nothing in a snapshot points into shared memory.
 * Its strings are the snapshot's, read-only: processes whose heaps hold
 * the same metric definition may share one copy of its help, labels and
 * bounds, and series whose label values are the same bytes one copy of
 * them. See Documentation/reader.rst.
 */
/* blamer_reader_opts.flags */
#define BLAMER_READ_HEADERS_ONLY (1u << 0) /* slab/heap headers + process record */
#define BLAMER_READ_DEAD_FULL	(1u << 1) /* dir: read dead heaps fully too */
/*
 * Kinds of records a caller does not show, left undecoded (a view pays
 * only for what it prints). Their arrays stay empty; the snapshot's
 * flags say which were left out.
 */
#define BLAMER_READ_NO_THREADS	(1u << 2) /* thread records */
#define BLAMER_READ_NO_STACKS	(1u << 3) /* threads listed, activity stacks not read */
#define BLAMER_READ_NO_USERDATA	(1u << 4) /* process, global and activity user data */
#define BLAMER_READ_NO_MODULES	(1u << 5)
#define BLAMER_READ_NO_LOG	(1u << 6)
#define BLAMER_READ_NO_CHILDREN	(1u << 7)
#define BLAMER_READ_NO_DAG	(1u << 8) /* nodes, edges, paths: no attribution view */
/*
 * A long-lived reader (top, an exporter): a dead heap is decoded once and
 * what was decoded kept for the snapshots after, for as long as the
 * backend shows its slabs unchanged (Documentation/reader.rst, "Cost"). Costs a copy of what was decoded of the dead heaps (at most
 * 1 GiB).
 */
#define BLAMER_READ_KEEP_DEAD	(1u << 9)
/* The processes' own paths without the view summed over them: totals,
 * units and tree stay empty (nodes are still merged). For a caller that
 * exports each process's own values. */
#define BLAMER_READ_NO_TOTALS	(1u << 10)
/* Metric definitions and series left undecoded (no series merged). */
#define BLAMER_READ_NO_METRICS	(1u << 11)
/* Dead heaps left out: processes, totals, series and roles are the
 * live ones' (a view's --live-only). */
#define BLAMER_READ_LIVE_ONLY	(1u << 12)
/* dir: a live writer's name (comm) read when the reader first finds it
 * alive, not again each second after: for a long-lived caller that shows
 * no names (the service's series). */
#define BLAMER_READ_COMM_ONCE	(1u << 13)

struct blamer_reader_opts {
	enum blamer_backend backend;
	const char *dir;	/* dir backend: NULL = $BLAMER_DIR or /dev/shm/blamer-<uid> */
	const char *device;	/* NULL = /dev/blamer */
	uint32_t flags;		/* BLAMER_READ_* */
	uint32_t max_retries;	/* torn-read retries per record, 0 = 10 */
	uint64_t max_slab_bytes; /* dir: bytes read of one slab file (more: the heap is
				  * truncated), 0 = 256 MiB */
};

/* How much of a heap could be read (blamer_snap_process.health). */
enum blamer_health {
	BLAMER_HEALTH_OK = 0,
	BLAMER_HEALTH_UNCHECKED, /* headers checked, records not read: list,
				  * and a dead dir heap not read in full */
	BLAMER_HEALTH_EMPTY,	/* heap header not (yet) initialized */
	BLAMER_HEALTH_TORN,	/* some records kept changing: marked, not shown */
	BLAMER_HEALTH_CORRUPT,	/* invalid contents found; the rest was read */
	BLAMER_HEALTH_UNREADABLE, /* could not map/read (see problem) */
	BLAMER_HEALTH_TRUNCATED, /* over a reader limit: the rest was not read
				  * (Documentation/reader.rst, "Limits") */
};

struct blamer_snap_field {
	char *name;
	uint32_t type;		/* BLAMER_FIELD_* */
	bool torn;		/* value kept changing: not shown */
	int64_t i;		/* SIGNED */
	uint64_t u;		/* UNSIGNED, BOOL, CHAR, *_REF address */
	uint64_t ref_size;	/* *_REF size */
	double d;		/* DOUBLE */
	uint8_t *bytes;		/* RAW, STRING (NUL-terminated copy) */
	size_t len;
	bool cut;		/* RAW, STRING: the value set was longer than the field */
};

struct blamer_snap_fields {
	struct blamer_snap_field *v;
	size_t n;
};

struct blamer_snap_activity {
	uint64_t time_ns;	/* CLOCK_MONOTONIC at push (converted from the heap's clock), 0: unknown */
	uint64_t calling_address;
	uint64_t data[2];
	uint32_t kind;		/* BLAMER_ACTIVITY_* */
	char label[81];		/* BLAMER_LABEL_MAX bytes (16 in version 2 heaps) */
	struct blamer_snap_fields fields;
	bool label_cut;		/* the writer's label was longer: cut */
};

struct blamer_snap_thread {
	int64_t tid;
	uint64_t start_time_ns;
	char name[33];
	uint32_t depth;		/* as the thread reports it; may exceed nacts */
	uint32_t stack_slots;
	uint32_t overflows;
	bool torn;		/* stack kept changing: acts empty */
	struct blamer_snap_activity *acts;	/* bottom first */
	size_t nacts;
};

struct blamer_snap_module {
	char path[257];
	uint64_t base, size;
	uint8_t build_id[32];
	uint32_t build_id_len;
	bool loaded;
};

/* Addresses first..last (inclusive) are modules[module]'s: the module
 * blamer_snap_module_at() gives for them. */
struct blamer_snap_module_span {
	uint64_t first, last;
	uint32_t module;
};

struct blamer_snap_log {
	uint64_t number;
	uint64_t time_ns;	/* CLOCK_REALTIME */
	char text[121];
};

struct blamer_snap_child {
	int64_t pid;
	uint64_t launch_time_ns, exit_time_ns;
	int32_t exit_status;	/* wait status */
	uint32_t state;		/* BLAMER_CHILD_* */
	uint64_t start_time_ns;	/* the child's start, as the parent read it; 0: unknown */
};

struct blamer_snap_node {
	uint64_t id;
	uint32_t type;
	char name[33];
};

struct blamer_snap_edge {
	uint64_t parent, child;
};

#define BLAMER_SNAP_MAX_DEPTH	8
#define BLAMER_SNAP_MAX_UNITS	8

struct blamer_snap_path {
	uint32_t depth;
	uint64_t nodes[BLAMER_SNAP_MAX_DEPTH];
	uint32_t nvalues;
	uint32_t units[BLAMER_SNAP_MAX_UNITS];
	uint64_t values[BLAMER_SNAP_MAX_UNITS];
};

struct blamer_snap_process {
	/* facts from the backend: the kernel (device) or names and /proc (dir) */
	int32_t pid;		/* 0 if not visible in our pid namespace */
	uint32_t uid;
	char comm[17];
	uint64_t start_time_ns;	/* boot-based, the PID-reuse guard */
	uint32_t state;		/* BLAMER_PROC_* */
	bool kernel_facts;	/* the fields below come from the kernel */
	bool exited;		/* exit_code / exit_signal are valid; without
				 * kernel_facts: the heap says the process
				 * called exit() (dir backend) */
	bool coredump;
	int32_t exit_code;
	uint32_t exit_signal;
	uint64_t create_time_ns, orphan_time_ns; /* CLOCK_BOOTTIME */
	/* dir backend, a dead owner: CLOCK_REALTIME of the latest sign of
	 * life its heap and files show (when it called exit(), if exited),
	 * so it ended then or later; 0 if unknown */
	uint64_t last_seen_ns;
	uint64_t heap_key;	/* file_serial (device) or a hash (dir: of pid,
				 * start time and the heap's seq) */
	uint32_t nslabs;
	uint64_t slab_ids[64];	/* kernel slab IDs or dir file indexes */
	uint64_t size;		/* bytes of all slabs (trusted) */
	uint64_t used;		/* bytes allocated in them (heap claim, clamped) */

	/* what the heap says, validated */
	enum blamer_health health;
	char problem[160];	/* first problem found, "" if none */
	uint32_t torn_records;
	uint32_t heap_state;	/* BLAMER_HEAP_UNINIT, _READY, _DELETED */
	uint32_t heap_flags;	/* BLAMER_HEAP_F_* */
	uint64_t heap_create_time_ns;
	bool have_record;	/* a process record was found */
	int64_t rec_pid;
	uint32_t phase;		/* BLAMER_PHASE_* */
	char cmdline[257];	/* argv joined by spaces */

	struct blamer_snap_fields user_data, global_data;
	struct blamer_snap_thread *threads;	size_t nthreads;
	struct blamer_snap_module *modules;	size_t nmodules;
	struct blamer_snap_log *logs;		size_t nlogs;	/* oldest first */
	struct blamer_snap_child *children;	size_t nchildren;
	struct blamer_snap_node *nodes;		size_t nnodes;
	struct blamer_snap_edge *edges;		size_t nedges;
	struct blamer_snap_path *paths;		size_t npaths;

	/* version 3 heaps: role and instance (blamer_set_role(), "" if
	 * none), and writes not recorded in full, by BLAMER_DROP_* */
	char role[33];
	char instance[33];
	uint64_t drops[BLAMER_DROP_MAX];
	uint64_t dropped;	/* their sum */
	/* dir backend, no kernel facts: how the parent that launched this
	 * process said it ended (blamer_process_exited()), found in the
	 * parent's heap. A claim, not a fact: exit_code/exit_signal stay the
	 * kernel's (device backend) or the heap's own (exit()) */
	bool parent_claim;
	int32_t parent_wait_status;	/* as from waitpid() */
	int32_t parent_pid;
	uint64_t parent_exit_time_ns;	/* CLOCK_REALTIME */

	/* the module list as sorted, disjoint address ranges, each the
	 * module that holds it (blamer_snap_module_at() searches it); made
	 * by the reader, NULL in a process made by hand (then the list is
	 * walked) */
	const struct blamer_snap_module_span *module_spans;
	size_t nmodule_spans;
	/* dir backend: what /proc shows contradicts the heap's claim to be
	 * process pid (started at start_time_ns, files of uid): that pid
	 * has run since before that start, or runs as a uid that cannot
	 * have made the files; or /proc shows no such pid, yet a writer
	 * holds the heap's lock (one in another pid namespace). Then state
	 * is BLAMER_PROC_DEAD (the claimed process does not run here) and
	 * nothing of /proc's (comm) is taken as the heap's. Why, in a line,
	 * in disproved_why. */
	bool disproved;
	char disproved_why[128];

	/* its heap's random id (slab header): with pid and start time, who
	 * it is, across boots too */
	uint64_t heap_id;
	/* metrics (blamer_metric_define()): the definitions its heap holds,
	 * and its series, each naming one of those */
	struct blamer_snap_metric_def *metric_defs;	size_t nmetric_defs;
	struct blamer_snap_metric *metrics;		size_t nmetrics;
	/* threads inside an activity (stack depth > 0): busy */
	uint32_t busy_threads;
};

/* A metric as a heap defines it (blamer_metric_define()), checked. */
struct blamer_snap_metric_def {
	char name[64];		/* [a-zA-Z_:][a-zA-Z0-9_:]* */
	char *help;		/* the writer's bytes (exporters escape them) */
	uint32_t kind;		/* BLAMER_METRIC_* */
	uint32_t base;		/* BLAMER_BASE_* */
	uint32_t gauge_mode;	/* gauges: BLAMER_GAUGE_* */
	uint32_t flags;		/* BLAMER_METRIC_* */
	uint32_t nlabels;
	char *labels[BLAMER_METRIC_LABELS_MAX];	/* label names, checked */
	/* histograms: the buckets' layout (BLAMER_HIST_*), their number and
	 * upper bounds ("le"), the last +Inf */
	uint32_t layout, nbuckets;
	int32_t schema, min_exp, max_exp;
	double *upper;
};

/*
 * One series of a process (or, blamer_snap_series, merged). A counter's
 * value and a histogram's sum are doubles summed exactly: exact[] holds
 * partials whose sum is exactly the value (an exporter that adds numbers
 * of its own adds them to these, so that no order of adding makes a
 * counter go down), value is that sum rounded once.
 */
struct blamer_snap_metric {
	const struct blamer_snap_metric_def *def;	/* its process's definition */
	char *values[BLAMER_METRIC_LABELS_MAX];	/* def->nlabels label values: valid
						 * UTF-8, control characters and bytes
						 * that are not UTF-8 made U+FFFD */
	bool cut;		/* the writer cut the values it was given */
	bool conflict;		/* another definition of its name won: not merged */
	uint32_t depth;		/* its DAG path, if > 0 */
	uint64_t nodes[BLAMER_SNAP_MAX_DEPTH];
	double value;		/* counter: the sum; gauge: the value; histogram: the sum */
	const double *exact;	/* counters and histograms: value, exactly */
	uint32_t nexact;
	uint64_t stamp_ns;	/* mostrecent gauges: CLOCK_REALTIME of the last set; 0 */
	uint64_t count;		/* histograms: observations (the buckets' sum) */
	uint64_t *buckets;	/* histograms: def->nbuckets counts, not cumulative */
};

/*
 * A metric's series merged over the snapshot's processes, live and dead,
 * per uid (a heap of one user never adds to another's): counters and
 * histograms summed, gauges by their mode (LIVE* modes: live processes
 * only). Gauges of ALL and LIVEALL and PER_PROCESS metrics are a series
 * per process (proc). Only metrics whose heap defines their name as the
 * snapshot does are merged (blamer_snapshot.metric_conflicts), and only
 * counters and histograms whose sum fits (blamer_snapshot.overflows).
 */
struct blamer_snap_series {
	const struct blamer_snap_metric_def *def;	/* the definition of its name */
	const struct blamer_snap_metric *first;	/* a series merged: its values, cut */
	const struct blamer_snap_process *proc;	/* a series per process: its; else NULL */
	uint32_t uid;
	uint32_t nprocs, nlive;	/* processes merged, live ones */
	double value;
	const double *exact;
	uint32_t nexact;
	uint64_t stamp_ns;
	uint64_t count;
	uint64_t *buckets;
};

/* The processes of one role (blamer_set_role(); "" none), for
 * autoscalers: how many, and how many of their threads are busy (inside
 * an activity) in the live ones. */
struct blamer_snap_role {
	char role[33];
	uint32_t live, dead;
	uint32_t threads, busy;
};

/*
 * The attribution view: the DAG paths of every process, summed. Paths
 * are listed in one order everywhere, blamer_path_cmp()'s: node by node
 * from the root (ids as unsigned numbers), a path right before the paths
 * it is a prefix of.
 */

/* One (path, unit) total summed over every process of the snapshot. */
struct blamer_snap_total {
	uint32_t depth;
	uint64_t nodes[BLAMER_SNAP_MAX_DEPTH];
	uint32_t unit;
	uint64_t value;
	uint32_t nprocs;	/* processes contributing */
};

/*
 * One node of the inclusive tree: a path some process measured, or a
 * prefix of one. self[i] and inclusive[i] are in unit
 * blamer_snapshot.units[i].
 */
struct blamer_snap_tree_node {
	uint32_t depth;
	uint64_t nodes[BLAMER_SNAP_MAX_DEPTH];	/* root first */
	bool walked;		/* some process measured exactly this path */
	uint32_t nprocs;	/* processes that measured it or a path below it */
	size_t end;		/* past its subtree: tree[this + 1 .. end) is below it */
	const uint64_t *self;		/* measured on exactly this path */
	const uint64_t *inclusive;	/* on this path and every path below it */
};

/* An application unit's name and base unit, as a heap defines it. */
struct blamer_snap_unit_def {
	uint32_t unit;		/* >= BLAMER_UNIT_APP_BASE */
	uint32_t base;		/* BLAMER_BASE_* */
	char name[33];		/* [a-z_][a-z0-9_]*, checked */
};

/* One uid's name of a node, or of an application unit: what the heaps of
 * that uid give (blamer_snap_uid_node_name(), blamer_snap_uid_unit_def()). */
struct blamer_snap_uid_node {
	uint32_t uid;
	struct blamer_snap_node node;
};
struct blamer_snap_uid_unit_def {
	uint32_t uid;
	struct blamer_snap_unit_def def;
};

/* A directory entry the dir backend did not read, and why. */
struct blamer_snap_skipped {
	char name[64];		/* made printable, cut */
	char why[96];
};

struct blamer_snapshot {
	enum blamer_backend backend;
	char source[256];	/* device path or directory */
	uint64_t generation;	/* device event generation, 0 for dir */
	/* when it was taken: after every heap was read, so every time in
	 * the snapshot is at or before these */
	uint64_t realtime_ns, monotonic_ns;
	struct blamer_snap_process *procs;	size_t nprocs;
	struct blamer_snap_total *totals;	size_t ntotals; /* by path, then unit */
	/* by id; named where every uid naming or walking it names it alike */
	struct blamer_snap_node *nodes;		size_t nnodes;
	/* the units of the totals, in numeric order */
	uint32_t *units;			size_t nunits;
	/* the inclusive tree, by path: a node, then its subtree */
	struct blamer_snap_tree_node *tree;	size_t ntree;
	uint32_t flags;		/* BLAMER_READ_* it was taken with */
	/* dir: entries not read (the first 256), and how many there were */
	struct blamer_snap_skipped *skipped;	size_t nskipped;
	size_t skipped_total;
	/* the names heaps give their units (blamer_dag_unit()), in unit
	 * order: one per unit every uid naming or measuring in it names
	 * alike (within a uid, the least by (name, base)); none for a unit
	 * uids disagree on, or one a uid measures in unnamed */
	struct blamer_snap_unit_def *unit_defs;	size_t nunit_defs;
	/* dir: slab files of heaps none of whose files holds a heap (empty,
	 * shorter than a slab header, or not starting with the heap's
	 * magic): counted here, not shown as processes */
	size_t empty_files;
	/* metrics merged over processes (blamer_snap_series), ordered by
	 * name, uid, label values, path, process; how many processes' series
	 * were left out because their heap defines the name otherwise than
	 * their uid's others (per name and uid, the definition most of the
	 * uid's processes give wins, then the least) */
	struct blamer_snap_series *series;	size_t nseries;
	size_t metric_conflicts;
	/* the processes by role, ordered by role */
	struct blamer_snap_role *roles;		size_t nroles;
	/*
	 * Added in 0.3, valid only when flags has BLAMER_SNAP_UID_NAMES (the
	 * reader sets it; a snapshot made by hand without it has none, and
	 * the per-uid lookups fall back to nodes and unit_defs): the names
	 * per uid, so that no user's heap names another user's nodes or
	 * units. One per (uid, id), by uid then id (a named one wins, else
	 * the first, as in nodes); one per (uid, unit), by uid then unit
	 * (the least by (name, base) of that uid's heaps).
	 */
	struct blamer_snap_uid_node *uid_nodes;		size_t nuid_nodes;
	struct blamer_snap_uid_unit_def *uid_unit_defs;	size_t nuid_unit_defs;
	/*
	 * Added in 0.3: the merged counters and histograms whose sum does not
	 * fit (a sum past the largest double, a bucket or the count past
	 * 2^64 - 1: heaps each valid alone can add up to either), left out
	 * of series, which would show them infinite or wrapped (lower), in
	 * series' order. Each has its def, first, proc, uid, nprocs and
	 * nlive, no values: an exporter that adds values of its own to
	 * series (a fold's remainder) leaves these out too, rather than show
	 * a part as the whole.
	 */
	struct blamer_snap_series *overflows;	size_t noverflows;
	/*
	 * Added in 0.3: how many units processes measure in were left out
	 * of the attribution view (totals, units, tree), which holds the 16
	 * most processes measure in. Each process's own paths keep every
	 * unit.
	 */
	size_t units_left_out;
};
/* blamer_snapshot.flags: uid_nodes and uid_unit_defs are set (reader-made) */
#define BLAMER_SNAP_UID_NAMES	(1u << 31)

struct blamer_reader;

/*
 * Open a reader. Returns NULL with errno set and a one-line message in
 * err (what went wrong and what to do) on failure.
 */
struct blamer_reader *blamer_reader_open(const struct blamer_reader_opts *opts,
					 char *err, size_t errlen);
void blamer_reader_close(struct blamer_reader *r);
enum blamer_backend blamer_reader_backend(const struct blamer_reader *r);
const char *blamer_reader_source(const struct blamer_reader *r);

/* Take a snapshot: 0 or -errno (message in err). */
int blamer_reader_snapshot(struct blamer_reader *r, struct blamer_snapshot **out,
			   char *err, size_t errlen);
void blamer_snapshot_free(struct blamer_snapshot *s);

/* What a backend says about itself (blamer status). */
struct blamer_backend_status {
	enum blamer_backend backend;
	char source[256];	/* device path or directory */
	uint64_t bytes;		/* device: of all slabs (device_totals); dir: of all heap files */
	/* dir: from the heaps' headers */
	uint64_t heaps, dead;
	/* device (BLAMER_IOC_STATUS): what is charged to the caller's user,
	 * the limits, and, only if device_totals (callers who may read every
	 * slab), the device's slabs, orphans and bytes */
	uint64_t user_slabs, user_orphans, user_bytes;
	bool device_totals;
	uint64_t slabs, orphans;
	uint64_t max_slab_bytes, max_user_bytes, max_total_bytes, max_user_orphans;
	/* device: the module's parameters, as sysfs shows them */
	struct {
		char name[64];
		char value[128];
	} params[32];
	size_t nparams;
	/* both: writes the heaps the caller reads could not record in full,
	 * summed by reason (BLAMER_DROP_*), their total, and how many heaps
	 * dropped any */
	uint64_t drops[BLAMER_DROP_MAX];
	uint64_t dropped, dropping_heaps;
};
/* 0 or -errno (message in err). */
int blamer_reader_status(struct blamer_reader *r, struct blamer_backend_status *st,
			 char *err, size_t errlen);

/*
 * Wait up to timeout_ms (< 0: for ever) for a change (device: poll() on
 * /dev/blamer, woken when slabs are created or orphaned; dir: just
 * sleeps). 1 = event, 0 = timeout or a signal handled meanwhile, -errno
 * on error.
 */
int blamer_reader_wait(struct blamer_reader *r, int timeout_ms);

/*
 * The descriptor blamer_reader_wait() polls, for a caller's own poll()
 * loop: readable (POLLIN) when the next snapshot would differ in which
 * heaps there are; taking a snapshot clears it. -1 if the backend has
 * none (dir: poll with a timeout instead).
 */
int blamer_reader_fd(const struct blamer_reader *r);

/* Free a dead heap (device: BLAMER_IOC_RELEASE of @p's slab_ids; dir:
 * unlink of its files, named by pid, start_time_ns, slab_ids and heap_key,
 * which says which of the process's heaps: 0, the first). 0 or -errno. */
int blamer_reader_release(struct blamer_reader *r, const struct blamer_snap_process *p,
			  char *err, size_t errlen);

/*
 * Read one heap from memory (slabs in any order), e.g. for tests, fuzzing
 * or a copied-out core file: a snapshot with one process.
 */
struct blamer_mem_slab {
	const void *data;
	size_t size;
};
int blamer_snapshot_from_memory(const struct blamer_mem_slab *slabs, size_t n,
				struct blamer_snapshot **out);

/*
 * Keeps only the processes whose pid is one of @pids (all if @npids is
 * 0), frees the others, and makes the attribution view (totals, units,
 * tree, nodes) again from those kept. Returns how many are kept.
 */
size_t blamer_snapshot_select(struct blamer_snapshot *s, const int32_t *pids, size_t npids);
/*
 * An exact sum of doubles: the partials (non-overlapping, Shewchuk's
 * algorithm, as Python's math.fsum) whose sum is exactly that of every
 * number added, read rounded once (correctly: ties to even). The same
 * numbers in any order give the same result, so a sum of numbers that
 * each only grow never reads lower: how a counter's parts add up
 * (blamer_snap_metric.exact). Zero it to start.
 */
#define BLAMER_EXACT_PARTIALS	48u
struct blamer_exact_sum {
	double p[BLAMER_EXACT_PARTIALS];
	uint32_t n;
	bool has_special;
	double special;		/* infinities and NaNs added, summed apart */
};
void blamer_exact_sum_add(struct blamer_exact_sum *e, double x);
double blamer_exact_sum_value(const struct blamer_exact_sum *e);

/* The same for the processes @keep says to keep. */
size_t blamer_snapshot_filter(struct blamer_snapshot *s,
			      bool (*keep)(const struct blamer_snap_process *p, void *arg), void *arg);

/* Paths in view order: < 0, 0 or > 0 as @a comes before, is, or comes after @b. */
int blamer_path_cmp(const uint64_t *a, uint32_t adepth, const uint64_t *b, uint32_t bdepth);
/* The total of (path, unit), or NULL. */
const struct blamer_snap_total *blamer_snap_total_find(const struct blamer_snapshot *s,
							const uint64_t *nodes, uint32_t depth,
							uint32_t unit);
/* The index of @unit in s->units, or -1. */
int blamer_snap_unit_index(const struct blamer_snapshot *s, uint32_t unit);
/* A path as text, "/name/name/0x1f..." (a node without a name as its
 * id): snprintf()'s contract, the length it needs. */
int blamer_snap_path_string(const struct blamer_snapshot *s, const uint64_t *nodes,
			    uint32_t depth, char *buf, size_t len);

/* The module of @p holding @addr (its own module list), or NULL. */
const struct blamer_snap_module *blamer_snap_module_at(const struct blamer_snap_process *p,
							uint64_t addr);
/* An address as every view shows it: "libfoo.so+0x120" (the basename of
 * the module holding it, and the offset into it), else "0x7f...":
 * snprintf()'s contract. */
int blamer_snap_addr_string(const struct blamer_snap_process *p, uint64_t addr,
			    char *buf, size_t len);

/* Lookups: NULL if unknown. */
/* The definition of @unit the snapshot's processes give, or NULL; when
 * a uid's heaps disagree, the least by (name, base), so every reader
 * picks the same one whatever order the heaps come in; when uids
 * disagree, or a uid measures in it without naming it, NULL (no user's
 * heap names another's unit). A binary search:
 * unit_defs must be in unit order (a snapshot made by hand may repeat a
 * unit: the least of its entries). */
const struct blamer_snap_unit_def *blamer_snap_unit_def(const struct blamer_snapshot *s,
							uint32_t unit);
const char *blamer_snap_node_name(const struct blamer_snapshot *s, uint64_t id);
/*
 * The same as @uid's heaps give them: the exports that show a uid's
 * series (the service's Prometheus series, each process's own, JSON's
 * per-process paths) look names up here, so that another user's heap can
 * neither rename a node or a unit of @uid nor change its base (the scale
 * of its values). blamer_snap_unit_def() and blamer_snap_node_name() are
 * over every uid, the names all uids give alike: for the views that merge
 * every process (blame's and top's totals, JSON's attribution). A snapshot without
 * BLAMER_SNAP_UID_NAMES (made by hand) answers as those.
 */
const struct blamer_snap_unit_def *blamer_snap_uid_unit_def(const struct blamer_snapshot *s,
							    uint32_t uid, uint32_t unit);
const char *blamer_snap_uid_node_name(const struct blamer_snapshot *s, uint32_t uid,
				      uint64_t id);
int blamer_snap_uid_path_string(const struct blamer_snapshot *s, uint32_t uid,
				const uint64_t *nodes, uint32_t depth, char *buf, size_t len);
const char *blamer_health_name(enum blamer_health h);
const char *blamer_unit_name(uint32_t unit);		/* "cpu_ns", "bytes", ... */
const char *blamer_phase_name(uint32_t phase);
const char *blamer_field_type_name(uint32_t type);
const char *blamer_activity_kind_name(uint32_t kind);
const char *blamer_drop_reason_name(uint32_t reason);	/* "heap_full", ...; NULL past the set */
const char *blamer_metric_kind_name(uint32_t kind);	/* "counter", "gauge", "histogram" */
const char *blamer_gauge_mode_name(uint32_t mode);	/* "all", "livesum", ... */
const char *blamer_base_name(uint32_t base);		/* "", "seconds", "bytes" */
/*
 * The @q-quantile (0..1) of a histogram with @def's buckets and these
 * counts, as Prometheus' histogram_quantile() computes it: interpolated
 * linearly within the bucket it falls in (from 0 for the first bucket
 * when its bound is positive; the bound below +Inf for the last). NaN
 * without observations or for q outside 0..1.
 */
double blamer_histogram_quantile(const struct blamer_snap_metric_def *def,
				 const uint64_t *buckets, double q);
/* Definitions in the order the merge keeps them, by all that merging
 * depends on (name, kind, base, gauge mode, flags, labels, buckets; not
 * help): 0 when series of the two merge as one definition's. */
int blamer_metric_def_cmp(const struct blamer_snap_metric_def *a,
			  const struct blamer_snap_metric_def *b);

/* Exporters. Return 0 or -errno. */
#define BLAMER_JSON_SCHEMA_VERSION 4
#define BLAMER_JSON_SUMMARY	(1u << 0)	/* processes without details */
#define BLAMER_JSON_NO_PROCS	(1u << 1)	/* attribution only */
#define BLAMER_JSON_NO_ATTRIB	(1u << 2)
int blamer_snapshot_write_json(const struct blamer_snapshot *s, FILE *f,
			       uint32_t flags, const int32_t *pids, size_t npids);
int blamer_snapshot_write_prometheus(const struct blamer_snapshot *s, FILE *f);
/*
 * The same into *buf (malloc'ed, or NULL with *cap 0; grown with
 * realloc(), *cap its size), *len bytes, for a caller that writes many:
 * a long-lived endpoint keeps its buffer (and its faulted-in pages) from
 * scrape to scrape. The caller frees *buf.
 */
int blamer_snapshot_prometheus_text(const struct blamer_snapshot *s, char **buf, size_t *len,
				    size_t *cap);
/*
 * A long-lived exporter's memory of what it wrote (`blamer export
 * --listen`, `--interval`): each process's text is made again only when
 * something it shows changed, else copied from the last scrape. The
 * output is the same as blamer_snapshot_prometheus_text()'s. One cache
 * per series of scrapes, used by one thread at a time; NULL if out of
 * memory.
 */
struct blamer_prom_cache;
struct blamer_prom_cache *blamer_prom_cache_new(void);
void blamer_prom_cache_free(struct blamer_prom_cache *c);
/* blamer_snapshot_prometheus_text() through @c (NULL: none). */
int blamer_snapshot_prometheus_text_cached(const struct blamer_snapshot *s,
					   struct blamer_prom_cache *c, char **buf, size_t *len,
					   size_t *cap);
/*
 * A fleet exporter (`blamer export`'s aggregate series): one series per
 * metric, label set, DAG path and uid over every process, live and
 * dead, flat and exact however many workers come and go. Dead heaps are
 * folded into a remainder kept in a state file (written durably: a
 * temporary file, fsync(), rename(), fsync() of its directory) before
 * they are released, so a counter never goes down and nothing is counted
 * twice, whenever the exporter is killed. Documentation/reader.rst,
 * "Fleet series".
 *
 * blamer_fleet_open(): the state at @state (made at the first fold; it
 * and its directory must be the caller's and writable by nobody else, a
 * sticky directory excepted, where another user who made the state or
 * its lock first is named in the message; each directory on the path to
 * it root's or the caller's and writable by nobody else unless sticky,
 * each symlink on it root's or the caller's; the directory is held open
 * and the path never looked up again),
 * or none (@state NULL: nothing is folded, dead heaps are counted while
 * they exist). NULL with errno and a one-line message if the state
 * cannot be trusted or read (never half believed).
 */
struct blamer_fleet;
struct blamer_fleet *blamer_fleet_open(const char *state, char *err, size_t errlen);
void blamer_fleet_close(struct blamer_fleet *f);
/*
 * Folds the dead heaps of @s (taken with BLAMER_READ_DEAD_FULL) not
 * folded yet into the state, in one transaction, then releases through
 * @r the folded heaps but the @keep of each uid seen dead last (kept for
 * postmortems). @s then holds the processes not folded (its views made
 * again). Returns how many heaps were folded, or -errno with a message:
 * then nothing changed and the heaps are counted as before.
 */
int blamer_fleet_fold(struct blamer_fleet *f, struct blamer_reader *r, struct blamer_snapshot *s,
		      unsigned keep, char *err, size_t errlen);
/* The aggregate exposition of @s (after blamer_fleet_fold()) and @f's
 * remainder (@f NULL: none), into *buf as
 * blamer_snapshot_prometheus_text(). @f remembers every counter sample
 * it wrote and never writes one lower (counting the times a heap showed
 * less in blamer_counter_decreases_total): call it with the same @f
 * scrape after scrape. 0 or -ENOMEM. */
int blamer_fleet_prometheus_text(struct blamer_fleet *f, const struct blamer_snapshot *s,
				 char **buf, size_t *len, size_t *cap);
/* The same written to @out as it is made (memory stays flat however big
 * the exposition: a one-off export's); no counter is held (that needs
 * the text in memory), as a one-off has nothing to hold it against.
 * 0, or -errno (-EIO: a write failed). */
int blamer_fleet_write_prometheus(struct blamer_fleet *f, const struct blamer_snapshot *s,
				  FILE *out);
/* The status as one JSON document (kind "status", same schema). */
int blamer_status_write_json(const struct blamer_backend_status *st, FILE *f);

/* ---- end of reader API ---- */

#ifdef __cplusplus
}
#endif

#endif /* BLAMER_H */
