// SPDX-License-Identifier: MIT
/*
 * Reader: a long-lived reader of every heap the caller may see
 * (blamer_reader_open()), and blamer.snapshot(), a reader for one
 * snapshot. Taking a snapshot reads files or slabs and may take long:
 * the GIL is released around it, and around waiting, releasing and
 * status. A reader is used by one thread at a time (its lock, taken
 * without the GIL), so Reader objects may be shared between threads.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "pyblamer.h"

typedef struct {
	PyObject_HEAD
	struct blamer_reader *r;	/* NULL once closed */
	PyThread_type_lock lock;
	uint64_t lock_gen;		/* pyb_fork_gen when it was made */
	PyObject *dir, *device;		/* bytes the options point into */
} pyb_Reader;

static char *reader_kw[] = {
	"backend", "dir", "device", "threads", "stacks", "user_data", "modules", "log",
	"children", "dag", "totals", "headers_only", "dead_full", "keep_dead", "max_retries",
	"max_slab_bytes", NULL,
};

/* PyArg's "I" and "K" wrap what does not fit (-1 retries was 2^32 - 1). */
static int conv_retries(PyObject *v, void *out)
{
	return pyb_u32(v, "max_retries", out) == 0;
}

static int conv_slab_bytes(PyObject *v, void *out)
{
	return pyb_u64(v, "max_slab_bytes", out) == 0;
}

/* The options a Reader(...) or snapshot(...) call gives; @o keeps the
 * bytes of dir and device. */
static int parse_opts(PyObject *args, PyObject *kw, struct blamer_reader_opts *opts,
		      pyb_Reader *o)
{
	PyObject *backend = NULL, *dir = NULL, *device = NULL;
	int threads = 1, stacks = 1, user_data = 1, modules = 1, log = 1, children = 1, dag = 1,
	    totals = 1, headers_only = 0, dead_full = 1, keep_dead = 0;
	uint32_t retries = 0;
	uint64_t max_slab = 0;

	memset(opts, 0, sizeof(*opts));
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOpppppppppppO&O&:Reader", reader_kw,
					 &backend, &dir, &device, &threads, &stacks, &user_data,
					 &modules, &log, &children, &dag, &totals, &headers_only,
					 &dead_full, &keep_dead, conv_retries, &retries,
					 conv_slab_bytes, &max_slab))
		return -1;
	if (backend && backend != Py_None) {
		if (PyUnicode_Check(backend) && PyUnicode_CompareWithASCIIString(backend, "auto") == 0)
			opts->backend = BLAMER_BACKEND_AUTO;
		else if (PyUnicode_Check(backend) &&
			 PyUnicode_CompareWithASCIIString(backend, "device") == 0)
			opts->backend = BLAMER_BACKEND_DEVICE;
		else if (PyUnicode_Check(backend) &&
			 PyUnicode_CompareWithASCIIString(backend, "dir") == 0)
			opts->backend = BLAMER_BACKEND_DIR;
		else {
			PyErr_Format(PyExc_ValueError,
				     "blamer: backend must be 'auto', 'device' or 'dir', not %R", backend);
			return -1;
		}
	}
	/* a Reader whose __init__ failed may be initialized again */
	Py_CLEAR(o->dir);
	Py_CLEAR(o->device);
	if (dir && dir != Py_None) {
		if (!PyUnicode_FSConverter(dir, &o->dir))
			return -1;
		opts->dir = PyBytes_AS_STRING(o->dir);
	}
	if (device && device != Py_None) {
		if (!PyUnicode_FSConverter(device, &o->device))
			return -1;
		opts->device = PyBytes_AS_STRING(o->device);
	}
	if ((opts->dir && strlen(opts->dir) != (size_t)PyBytes_GET_SIZE(o->dir)) ||
	    (opts->device && strlen(opts->device) != (size_t)PyBytes_GET_SIZE(o->device))) {
		PyErr_SetString(PyExc_ValueError, "blamer: a path contains a NUL character");
		return -1;
	}
	opts->flags = (threads ? 0 : BLAMER_READ_NO_THREADS) | (stacks ? 0 : BLAMER_READ_NO_STACKS) |
		      (user_data ? 0 : BLAMER_READ_NO_USERDATA) |
		      (modules ? 0 : BLAMER_READ_NO_MODULES) | (log ? 0 : BLAMER_READ_NO_LOG) |
		      (children ? 0 : BLAMER_READ_NO_CHILDREN) | (dag ? 0 : BLAMER_READ_NO_DAG) |
		      (totals ? 0 : BLAMER_READ_NO_TOTALS) |
		      (headers_only ? BLAMER_READ_HEADERS_ONLY : 0) |
		      (dead_full ? BLAMER_READ_DEAD_FULL : 0) | (keep_dead ? BLAMER_READ_KEEP_DEAD : 0);
	opts->max_retries = retries;
	opts->max_slab_bytes = max_slab;
	return 0;
}

static int reader_init(pyb_Reader *o, PyObject *args, PyObject *kw)
{
	struct blamer_reader_opts opts;
	char err[256] = "";
	int e = 0;

	if (o->r) {
		PyErr_SetString(PyExc_RuntimeError, "blamer: Reader already open");
		return -1;
	}
	if (parse_opts(args, kw, &opts, o) < 0)
		return -1;
	if (pyb_lock_fresh(&o->lock, &o->lock_gen) < 0)
		return -1;
	Py_BEGIN_ALLOW_THREADS
	o->r = blamer_reader_open(&opts, err, sizeof(err));
	if (!o->r)
		e = errno;
	Py_END_ALLOW_THREADS
	if (!o->r) {
		pyb_raise_msg(e, err);
		return -1;
	}
	return 0;
}

static void reader_dealloc(pyb_Reader *o)
{
	if (o->r)
		blamer_reader_close(o->r);
	if (o->lock)
		PyThread_free_lock(o->lock);
	Py_XDECREF(o->dir);
	Py_XDECREF(o->device);
	Py_TYPE(o)->tp_free((PyObject *)o);
}

/* Takes the reader's lock without the GIL; false (ValueError) if closed. */
#define LOCKED_BEGIN(o)                                                 \
	Py_BEGIN_ALLOW_THREADS                                          \
	PyThread_acquire_lock((o)->lock, WAIT_LOCK);
#define LOCKED_END(o)                                                   \
	PyThread_release_lock((o)->lock);                               \
	Py_END_ALLOW_THREADS

/* Open (ValueError if not), its lock usable in this process. */
static bool reader_open(pyb_Reader *o)
{
	if (!o->r) {
		PyErr_SetString(PyExc_ValueError, "blamer: the Reader is closed");
		return false;
	}
	return pyb_lock_fresh(&o->lock, &o->lock_gen) == 0;
}

static PyObject *reader_snapshot(pyb_Reader *o, PyObject *unused)
{
	struct blamer_snapshot *s = NULL;
	char err[256] = "";
	int ret = -EBADF;

	(void)unused;
	if (!reader_open(o))
		return NULL;
	LOCKED_BEGIN(o)
	if (o->r)
		ret = blamer_reader_snapshot(o->r, &s, err, sizeof(err));
	LOCKED_END(o)
	if (ret < 0)
		return pyb_raise_msg(-ret, err[0] ? err : "blamer: the Reader is closed");
	return pyb_snapshot_wrap(s);
}

/*
 * wait() in slices of at most WAIT_SLICE_MS: between them other threads
 * get the reader's lock, and the main thread's signal handlers run (PEP
 * 475: a handler that raises ends the wait with its exception; one that
 * returns lets it go on). A signal only interrupts the thread it was
 * delivered to, which need not be the one waiting.
 */
#define WAIT_SLICE_MS 200

static int64_t wait_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static PyObject *reader_wait(pyb_Reader *o, PyObject *const *args, Py_ssize_t nargs)
{
	double timeout = -1;
	int64_t deadline = -1, left;
	int ms, ret = -EBADF;

	if (!reader_open(o))
		return NULL;
	if (nargs > 1)
		return PyErr_Format(PyExc_TypeError, "wait() takes at most 1 argument");
	if (nargs == 1 && args[0] != Py_None) {
		timeout = PyFloat_AsDouble(args[0]);
		if (timeout == -1 && PyErr_Occurred())
			return NULL;
		if (!(timeout >= 0 && timeout <= 86400))	/* NaN too */
			return PyErr_Format(PyExc_ValueError, "blamer: timeout is 0..86400 s");
	}
	if (timeout >= 0)
		deadline = wait_now_ms() + (int64_t)(timeout * 1000);
	for (;;) {
		ms = WAIT_SLICE_MS;
		if (deadline >= 0) {
			left = deadline - wait_now_ms();
			ms = left < 0 ? 0 : left < ms ? (int)left : ms;
		}
		ret = -EBADF;
		LOCKED_BEGIN(o)
		if (o->r)
			ret = blamer_reader_wait(o->r, ms);
		LOCKED_END(o)
		if (ret != 0)
			break;
		if (PyErr_CheckSignals() < 0)
			return NULL;
		if (deadline >= 0 && wait_now_ms() >= deadline)
			break;
	}
	if (ret < 0)
		return pyb_raise_msg(-ret, "blamer_reader_wait");
	return PyBool_FromLong(ret > 0);
}

static PyObject *reader_fileno(pyb_Reader *o, PyObject *unused)
{
	(void)unused;
	if (!reader_open(o))
		return NULL;
	return PyLong_FromLong(blamer_reader_fd(o->r));
}

/*
 * Releases the heap of a dead Process of a snapshot: what the backend
 * needs of it is its pid, start time, state and slabs, all fields of
 * the Process (so a Process from any snapshot of this reader works).
 */
static PyObject *reader_release(pyb_Reader *o, PyObject *proc)
{
	struct blamer_snap_process *p;
	char err[256] = "";
	PyObject *slabs, *f;
	Py_ssize_t i, n;
	int ret = -EBADF;

	if (!reader_open(o))
		return NULL;
	if (!PyObject_TypeCheck(proc, &pyb_ProcessType))
		return PyErr_Format(PyExc_TypeError, "blamer: release() takes a Process, not %.80s",
				    Py_TYPE(proc)->tp_name);
	p = PyMem_Calloc(1, sizeof(*p));
	if (!p)
		return PyErr_NoMemory();
	f = PyObject_GetAttrString(proc, "pid");
	p->pid = f ? (int32_t)PyLong_AsLong(f) : 0;
	Py_XDECREF(f);
	f = PyObject_GetAttrString(proc, "start_time_ns");
	p->start_time_ns = f ? PyLong_AsUnsignedLongLong(f) : 0;
	Py_XDECREF(f);
	f = PyObject_GetAttrString(proc, "live");
	p->state = f && PyObject_IsTrue(f) == 0 ? BLAMER_PROC_DEAD : BLAMER_PROC_LIVE;
	Py_XDECREF(f);
	/* which heap of the process (dir: one of several, by its key) */
	f = PyObject_GetAttrString(proc, "heap_key");
	p->heap_key = f ? PyLong_AsUnsignedLongLong(f) : 0;
	Py_XDECREF(f);
	slabs = PyObject_GetAttrString(proc, "slab_ids");
	if (PyErr_Occurred() || !slabs || !PyTuple_Check(slabs)) {
		Py_XDECREF(slabs);
		PyMem_Free(p);
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError, "blamer: not a Process");
		return NULL;
	}
	n = PyTuple_GET_SIZE(slabs);
	for (i = 0; i < n && i < 64; i++)
		p->slab_ids[i] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(slabs, i));
	p->nslabs = (uint32_t)i;
	Py_DECREF(slabs);
	if (PyErr_Occurred()) {
		PyMem_Free(p);
		return NULL;
	}
	LOCKED_BEGIN(o)
	if (o->r)
		ret = blamer_reader_release(o->r, p, err, sizeof(err));
	LOCKED_END(o)
	PyMem_Free(p);
	if (ret < 0)
		return pyb_raise_msg(-ret, err[0] ? err : "blamer_reader_release");
	Py_RETURN_NONE;
}

static PyObject *reader_status(pyb_Reader *o, PyObject *unused)
{
	struct blamer_backend_status *st;
	char err[256] = "";
	PyObject *d, *params;
	size_t i;
	int ret = -EBADF;

	(void)unused;
	if (!reader_open(o))
		return NULL;
	st = PyMem_Calloc(1, sizeof(*st));
	if (!st)
		return PyErr_NoMemory();
	LOCKED_BEGIN(o)
	if (o->r)
		ret = blamer_reader_status(o->r, st, err, sizeof(err));
	LOCKED_END(o)
	if (ret < 0) {
		PyMem_Free(st);
		return pyb_raise_msg(-ret, err[0] ? err : "blamer_reader_status");
	}
	params = PyDict_New();
	for (i = 0; params && i < st->nparams && i < 32; i++) {
		PyObject *v = pyb_str(st->params[i].value);

		if (!v || PyDict_SetItemString(params, st->params[i].name, v) < 0)
			Py_CLEAR(params);
		Py_XDECREF(v);
	}
	d = params ? Py_BuildValue(
		"{s:s,s:N,s:K,s:K,s:K,s:K,s:K,s:K,s:O,s:K,s:K,s:K,s:K,s:K,s:K,s:N}",
		"backend", st->backend == BLAMER_BACKEND_DEVICE ? "device" : "dir",
		"source", PyUnicode_DecodeFSDefault(st->source),
		"bytes", st->bytes, "heaps", st->heaps, "dead", st->dead,
		"user_slabs", st->user_slabs, "user_orphans", st->user_orphans,
		"user_bytes", st->user_bytes, "device_totals", st->device_totals ? Py_True : Py_False,
		"slabs", st->slabs, "orphans", st->orphans, "max_slab_bytes", st->max_slab_bytes,
		"max_user_bytes", st->max_user_bytes, "max_total_bytes", st->max_total_bytes,
		"max_user_orphans", st->max_user_orphans, "params", params) : NULL;
	PyMem_Free(st);
	return d;
}

static PyObject *reader_close(pyb_Reader *o, PyObject *unused)
{
	struct blamer_reader *r;

	(void)unused;
	if (!o->lock)		/* never opened */
		Py_RETURN_NONE;
	if (pyb_lock_fresh(&o->lock, &o->lock_gen) < 0)
		return NULL;
	/* Gone with the GIL held: fileno(), .backend and .source use o->r
	 * with the GIL and without the lock (they read it freed while this
	 * waited for the lock without the GIL). The calls that hold the lock
	 * read o->r under it: this waits for them before the reader goes. */
	r = o->r;
	o->r = NULL;
	LOCKED_BEGIN(o)
	if (r)
		blamer_reader_close(r);
	LOCKED_END(o)
	Py_RETURN_NONE;
}

static PyObject *reader_enter(pyb_Reader *o, PyObject *unused)
{
	(void)unused;
	if (!reader_open(o))
		return NULL;
	return Py_NewRef(o);
}

static PyObject *reader_exit(pyb_Reader *o, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *r;

	(void)args;
	(void)nargs;
	r = reader_close(o, NULL);
	Py_XDECREF(r);
	if (!r)
		return NULL;
	Py_RETURN_FALSE;
}

static PyObject *reader_get_backend(pyb_Reader *o, void *unused)
{
	(void)unused;
	if (!reader_open(o))
		return NULL;
	return PyUnicode_FromString(blamer_reader_backend(o->r) == BLAMER_BACKEND_DEVICE ?
					    "device" : "dir");
}

static PyObject *reader_get_source(pyb_Reader *o, void *unused)
{
	(void)unused;
	if (!reader_open(o))
		return NULL;
	return PyUnicode_DecodeFSDefault(blamer_reader_source(o->r));
}

static PyGetSetDef reader_getset[] = {
	{ "backend", (getter)reader_get_backend, NULL, "'device' or 'dir'", NULL },
	{ "source", (getter)reader_get_source, NULL, "the device path or the directory", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef reader_methods[] = {
	{ "snapshot", (PyCFunction)reader_snapshot, METH_NOARGS,
	  "snapshot() -> Snapshot\n\nReads every heap (the GIL released meanwhile)." },
	{ "wait", (PyCFunction)(void (*)(void))reader_wait, METH_FASTCALL,
	  "wait(timeout=None) -> bool\n\n"
	  "Waits up to @timeout seconds (None: for ever) for heaps to come or go\n"
	  "(device; the dir backend just sleeps). True if something changed.\n"
	  "Signal handlers run meanwhile; one that raises ends the wait." },
	{ "fileno", (PyCFunction)reader_fileno, METH_NOARGS,
	  "fileno() -> int\n\nThe descriptor wait() polls, for a select()/poll() loop; -1 if none (dir)." },
	{ "release", (PyCFunction)reader_release, METH_O,
	  "release(process)\n\nFrees the heap of a dead Process (device: its slabs; dir: its files)." },
	{ "status", (PyCFunction)reader_status, METH_NOARGS,
	  "status() -> dict\n\nWhat the backend says about itself (`blamer status`)." },
	{ "close", (PyCFunction)reader_close, METH_NOARGS, "close()\n\nCloses the reader." },
	{ "__enter__", (PyCFunction)reader_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)(void (*)(void))reader_exit, METH_FASTCALL, NULL },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pyb_ReaderType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "blamer.Reader",
	.tp_basicsize = sizeof(pyb_Reader),
	.tp_dealloc = (destructor)reader_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Reader(*, backend=None, dir=None, device=None, threads=True, stacks=True,\n"
		  "       user_data=True, modules=True, log=True, children=True, dag=True,\n"
		  "       totals=True, headers_only=False, dead_full=True, keep_dead=False,\n"
		  "       max_retries=0, max_slab_bytes=0)\n\n"
		  "A reader of every heap the caller may see: the device (/dev/blamer) or\n"
		  "a directory (dir backend), as BLAMER_BACKEND and BLAMER_DIR say unless\n"
		  "given. The flags leave out what a caller does not use (each costs\n"
		  "reading). dead_full: dead heaps of the dir backend are read in full,\n"
		  "as `blamer dump`, `postmortem` and `export` read them (False: from\n"
		  "their headers only, as `blamer list`). keep_dead keeps what was decoded of dead heaps from one\n"
		  "snapshot to the next (a long-lived reader). Raises Error (with the\n"
		  "reader's one-line reason) if the backend cannot be read.",
	.tp_methods = reader_methods,
	.tp_getset = reader_getset,
	.tp_init = (initproc)reader_init,
	.tp_new = PyType_GenericNew,
};

bool pyb_reader_get(PyObject *o, struct blamer_reader **r, PyThread_type_lock *lock)
{
	if (!PyObject_TypeCheck(o, &pyb_ReaderType)) {
		PyErr_Format(PyExc_TypeError, "blamer: expected a Reader, not %.80s",
			     Py_TYPE(o)->tp_name);
		return false;
	}
	if (!reader_open((pyb_Reader *)o))
		return false;
	*r = ((pyb_Reader *)o)->r;
	*lock = ((pyb_Reader *)o)->lock;
	return true;
}

bool pyb_reader_still(PyObject *o, struct blamer_reader *r)
{
	return ((pyb_Reader *)o)->r == r;
}

PyObject *pyb_snapshot(PyObject *self, PyObject *args, PyObject *kw)
{
	pyb_Reader *o;
	PyObject *s;

	(void)self;
	o = (pyb_Reader *)PyType_GenericNew(&pyb_ReaderType, NULL, NULL);
	if (!o)
		return NULL;
	if (reader_init(o, args, kw) < 0) {
		Py_DECREF(o);
		return NULL;
	}
	s = reader_snapshot(o, NULL);
	Py_DECREF(o);
	return s;
}
