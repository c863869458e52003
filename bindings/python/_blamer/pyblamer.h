/* SPDX-License-Identifier: MIT */
/*
 * The CPython extension blamer._blamer over libblamer (include/blamer.h):
 * what its files share. One file per job:
 *   module.c    the module: constants, the error types, the calls on the
 *               process-default context, the fork counter
 *   context.c   Context: a heap of the process (the default or one opened)
 *   activity.c  Activity: a push/pop pair as a context manager
 *   value.c     Value: a user-data field's handle
 *   dag.c       DAG nodes, links, units and Path handles
 *   metric.c    Metric and Series: counters, gauges and histograms
 *   promvalue.c MPFamily and MPValue: blamer.prometheus's values
 *   fleet.c     Fleet: `blamer export`'s service series, folding
 *   reader.c    Reader and blamer.snapshot()
 *   snapshot.c  Snapshot: a C snapshot as Python objects
 *   convert.c   small conversions shared by the others
 *
 * Rules every file keeps (Documentation/python.rst, "Threads and fork"):
 *  - The GIL is released only around calls that can block (opening and
 *    closing heaps, taking snapshots, waiting); a write (push, pop, a
 *    handle's update, a path add) keeps it: it costs less than releasing
 *    it would, and it makes no system call.
 *  - A handle object (Value, Path, ...) keeps a reference to its Context
 *    and the context's epoch when it was made. Closing a context (or
 *    blamer.reset() for the default) bumps the epoch, with the GIL held,
 *    before the C handles are freed: a handle whose epoch is not its
 *    context's is never passed to C again.
 *  - A fork needs little here: the C library makes every handle work
 *    in the child. pyb_fork_gen counts forks (a pthread_atfork child
 *    handler) for what the binding keeps per process: blamer.prometheus
 *    values' running counts, and the locks of Readers and Fleets, which
 *    a thread of the parent may have held (pyb_lock_fresh()).
 */
#ifndef PYBLAMER_H
#define PYBLAMER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>

#include "blamer.h"

/* ---- module.c ---- */
extern PyObject *pyb_Error;		/* blamer.Error, an OSError */
/* blamer.StaleHandle, a ValueError: an object of a context closed (or of
 * the default before a reset()) was used. Its own class so that callers
 * (blamer.prometheus) tell it from a bad argument without reading the
 * message. */
extern PyObject *pyb_StaleHandle;
/* Forks this process is removed from the process that imported us
 * (bumped in the child by a pthread_atfork handler). */
extern volatile uint64_t pyb_fork_gen;
/*
 * A lock of an object's own (Reader, Fleet) that a fork child may use:
 * the lock of its parent may have been held by a thread the child does
 * not have, so the child's first use makes a new one (the old is left:
 * it may be held for ever). Call with the GIL held, before taking it.
 * 0, or -1 with MemoryError.
 */
int pyb_lock_fresh(PyThread_type_lock *lock, uint64_t *gen);
/* Raises blamer.Error(-ret, blamer_errmsg() or @what); returns NULL. */
PyObject *pyb_raise(int ret, const char *what);
/* The same for a call that failed with errno set (reader calls). */
PyObject *pyb_raise_msg(int err, const char *msg);

/* ---- context.c ---- */
typedef struct {
	PyObject_HEAD
	struct blamer *b;	/* NULL: the process default */
	uint64_t epoch;		/* bumped when its handles die (close, reset) */
	bool is_default;
	bool closed;		/* an opened context after close()/abandon() */
	uint32_t busy;		/* calls using b without the GIL (close waits) */
	uint32_t draining;	/* default: resets waiting for busy to reach 0 */
	uint64_t busy_gen;	/* pyb_fork_gen when busy was counted */
	PyObject *weakrefs;
} pyb_Context;

extern PyTypeObject pyb_ContextType;
/* The default context's object (a borrowed reference, module lifetime). */
extern pyb_Context *pyb_default_ctx;
/* @obj (None or NULL: the default) as a context; NULL and an exception
 * if it is neither or closed. Borrowed. */
pyb_Context *pyb_context_arg(PyObject *obj);
/* NULL with StaleHandle if @c is closed. */
static inline bool pyb_context_usable(pyb_Context *c)
{
	if (!c->closed)
		return true;
	PyErr_SetString(pyb_StaleHandle, "blamer: the context is closed");
	return false;
}
/* The default context's handles die (reset, init). */
void pyb_default_epoch_bump(void);
int pyb_context_init(PyObject *m);
PyObject *pyb_open(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *pyb_init(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *pyb_reset(PyObject *self, PyObject *unused);

/* A handle's check before each use: its context still the one it was
 * made in (one load and compare). Sets StaleHandle if not. */
static inline bool pyb_handle_live(pyb_Context *c, uint64_t epoch)
{
	if (__builtin_expect(c->epoch == epoch, 1))
		return true;
	PyErr_SetString(pyb_StaleHandle,
			"blamer: this handle's context was closed (or blamer.reset() called)");
	return false;
}

/* ---- activity.c ---- */
extern PyTypeObject pyb_ActivityType;
PyObject *pyb_activity_new(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
			   PyObject *kwnames);

/* ---- value.c ---- */
extern PyTypeObject pyb_ValueType;
PyObject *pyb_set_data(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
		       PyObject *kwnames);
/* The same without a scope argument: @scope. */
PyObject *pyb_set_data_scoped(pyb_Context *ctx, unsigned scope, PyObject *const *args,
			      Py_ssize_t nargs, PyObject *kwnames);

/* ---- dag.c ---- */
extern PyTypeObject pyb_PathType;
PyObject *pyb_dag_id(PyObject *self, PyObject *name);
PyObject *pyb_dag_node(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
		       PyObject *kwnames);
PyObject *pyb_dag_link(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs);
PyObject *pyb_dag_unit(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
		       PyObject *kwnames);
PyObject *pyb_path(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
		   PyObject *kwnames);

/* ---- metric.c ---- */
typedef struct {
	PyObject_HEAD
	PyObject *metric;	/* its Metric */
	pyb_Context *ctx;	/* the metric's */
	uint64_t epoch;
	struct blamer_series *s;
	uint32_t kind;		/* BLAMER_METRIC_* */
} pyb_Series;

extern PyTypeObject pyb_MetricType, pyb_SeriesType;
PyObject *pyb_counter(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
		      PyObject *kwnames);
PyObject *pyb_gauge(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *pyb_histogram(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
			PyObject *kwnames);
PyObject *pyb_series_inc(pyb_Series *s, PyObject *const *args, Py_ssize_t nargs);
PyObject *pyb_series_dec(pyb_Series *s, PyObject *const *args, Py_ssize_t nargs);
PyObject *pyb_series_set(pyb_Series *s, PyObject *const *args, Py_ssize_t nargs);
PyObject *pyb_series_observe(pyb_Series *s, PyObject *const *args, Py_ssize_t nargs);

/* ---- promvalue.c ---- */
int pyb_promvalue_init(PyObject *m);

/* ---- reader.c, snapshot.c ---- */
extern PyTypeObject pyb_ReaderType;
extern PyTypeObject pyb_SnapshotType;
extern PyTypeObject pyb_ProcessType;	/* a struct sequence */
int pyb_snapshot_types_init(PyObject *m);
PyObject *pyb_snapshot_wrap(struct blamer_snapshot *s);
PyObject *pyb_snapshot(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pyb_snapshot_from_memory(PyObject *self, PyObject *arg);
/* A Reader's C reader and its lock (TypeError, ValueError if closed). */
bool pyb_reader_get(PyObject *o, struct blamer_reader **r, PyThread_type_lock *lock);
/* Under its lock: the Reader still has @r (not closed meanwhile). */
bool pyb_reader_still(PyObject *o, struct blamer_reader *r);
/* A Snapshot's C snapshot, to be changed (a fold) without the GIL: its
 * Python views are dropped and its readers raise until end_change. */
struct blamer_snapshot *pyb_snapshot_begin_change(PyObject *o);
void pyb_snapshot_end_change(PyObject *o);
/* A Snapshot's C snapshot to read now (TypeError, RuntimeError). */
const struct blamer_snapshot *pyb_snapshot_get(PyObject *o);

/* ---- fleet.c ---- */
extern PyTypeObject pyb_FleetType;

/* ---- convert.c ---- */
/*
 * The arguments of a METH_FASTCALL|METH_KEYWORDS call by name: out[i]
 * (NULL-initialized by the caller) is the value given for names[i]
 * (NULL-terminated list), positionally (the first @max_pos names) or
 * by keyword; the first @min_pos are required. TypeError otherwise.
 */
int pyb_parse_kw(const char *fn, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
		 const char *const *names, Py_ssize_t min_pos, Py_ssize_t max_pos,
		 PyObject **out);
/* A str argument as UTF-8 with no NUL inside (ValueError), for C. */
const char *pyb_utf8(PyObject *o, const char *what, Py_ssize_t *len);
/* The same with NULs left in, for a caller that replaces them (@len). */
const char *pyb_utf8_any(PyObject *o, const char *what, Py_ssize_t *len);
/*
 * @o's items as a tuple of the caller's own (new reference), where a
 * conversion of an item runs Python code: a list's items are borrowed
 * (PySequence_Fast()), and an item's __float__ or __index__ may empty the
 * list meanwhile. NULL with TypeError(@what) if @o is not iterable.
 */
PyObject *pyb_tuple_of(PyObject *o, const char *what);
/* A node id: an int (0..2^64-1) as is, a str as blamer_dag_id(). */
int pyb_node_id(PyObject *o, uint64_t *id);
/* Unsigned 32/64-bit arguments with range checks (OverflowError). */
int pyb_u32(PyObject *o, const char *what, uint32_t *out);
int pyb_u64(PyObject *o, const char *what, uint64_t *out);
/* A fixed, NUL-terminated char array from the reader (printable ASCII
 * already: rd_sanitize) as str. */
PyObject *pyb_str(const char *s);
/* Bytes from a heap (a string field's value) as str: invalid UTF-8
 * replaced, nothing else changed. */
PyObject *pyb_text(const uint8_t *s, size_t len);

/* Adds int constant NAME to module @m; -1 on failure. */
int pyb_add_int(PyObject *m, const char *name, long long v);

#endif /* PYBLAMER_H */
