// SPDX-License-Identifier: MIT
/*
 * Fleet: the service's series of `blamer export` (blamer_fleet_*()): one
 * per metric, label set, path and uid over every process, live and
 * dead, with dead heaps folded into a durable remainder in a state file
 * and then released, so the series stay as many and no counter goes
 * down however many workers come and go. blamer.prometheus's collector
 * is built on it, so it gives the numbers `blamer export` gives.
 *
 * A fold writes and fsyncs the state and releases heaps: the GIL is
 * released around it, with the fleet's lock and the reader's held. It
 * changes the snapshot (the folded processes leave it), which must not
 * be used meanwhile: pyb_snapshot_begin_change() marks it so (its
 * readers raise) and drops the Python views made of it before.
 */
#include <errno.h>
#include <string.h>

#include "pyblamer.h"

typedef struct {
	PyObject_HEAD
	struct blamer_fleet *f;		/* NULL once closed */
	PyThread_type_lock lock;
	uint64_t lock_gen;		/* pyb_fork_gen when it was made */
	PyObject *state;		/* str or None */
} pyb_Fleet;

static PyObject *fleet_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *names[] = { "state", NULL };
	PyObject *state = Py_None, *bytes = NULL;
	char err[256] = "";
	pyb_Fleet *o;
	int e = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:Fleet", names, &state))
		return NULL;
	if (state != Py_None) {
		if (!PyUnicode_FSConverter(state, &bytes))
			return NULL;
		if (strlen(PyBytes_AS_STRING(bytes)) != (size_t)PyBytes_GET_SIZE(bytes)) {
			Py_DECREF(bytes);
			PyErr_SetString(PyExc_ValueError, "blamer: state contains a NUL character");
			return NULL;
		}
	}
	o = (pyb_Fleet *)type->tp_alloc(type, 0);
	if (!o) {
		Py_XDECREF(bytes);
		return NULL;
	}
	o->state = Py_NewRef(state);
	if (pyb_lock_fresh(&o->lock, &o->lock_gen) < 0) {
		Py_XDECREF(bytes);
		Py_DECREF(o);
		return NULL;
	}
	/* reads and checks the state file */
	Py_BEGIN_ALLOW_THREADS
	o->f = blamer_fleet_open(bytes ? PyBytes_AS_STRING(bytes) : NULL, err, sizeof(err));
	if (!o->f)
		e = errno;
	Py_END_ALLOW_THREADS
	Py_XDECREF(bytes);
	if (!o->f) {
		Py_DECREF(o);
		return pyb_raise_msg(e, err[0] ? err : "blamer_fleet_open");
	}
	return (PyObject *)o;
}

static void fleet_dealloc(pyb_Fleet *o)
{
	if (o->f)
		blamer_fleet_close(o->f);
	if (o->lock)
		PyThread_free_lock(o->lock);
	Py_XDECREF(o->state);
	Py_TYPE(o)->tp_free((PyObject *)o);
}

static bool fleet_usable(pyb_Fleet *o)
{
	if (!o->f) {
		PyErr_SetString(PyExc_ValueError, "blamer: the Fleet is closed");
		return false;
	}
	return pyb_lock_fresh(&o->lock, &o->lock_gen) == 0;
}

static const char *const fold_names[] = { "reader", "snapshot", "keep", NULL };

static PyObject *fleet_fold(pyb_Fleet *o, PyObject *const *args, Py_ssize_t nargs,
			    PyObject *kwnames)
{
	PyObject *v[3] = { NULL };
	struct blamer_snapshot *s;
	struct blamer_reader *r;
	PyThread_type_lock rlock;
	uint32_t keep = 8;
	char err[256] = "";
	int ret = -EBADF;

	if (!fleet_usable(o) || pyb_parse_kw("fold", args, nargs, kwnames, fold_names, 2, 3, v) < 0)
		return NULL;
	if (v[2] && pyb_u32(v[2], "keep", &keep) < 0)
		return NULL;
	if (!pyb_reader_get(v[0], &r, &rlock))
		return NULL;
	s = pyb_snapshot_begin_change(v[1]);
	if (!s)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	PyThread_acquire_lock(o->lock, WAIT_LOCK);
	PyThread_acquire_lock(rlock, WAIT_LOCK);
	if (o->f && pyb_reader_still(v[0], r))
		ret = blamer_fleet_fold(o->f, r, s, keep, err, sizeof(err));
	PyThread_release_lock(rlock);
	PyThread_release_lock(o->lock);
	Py_END_ALLOW_THREADS
	pyb_snapshot_end_change(v[1]);
	if (ret < 0)
		return pyb_raise_msg(-ret, err[0] ? err : "blamer_fleet_fold: closed meanwhile");
	return PyLong_FromLong(ret);
}

static PyObject *fleet_prometheus(pyb_Fleet *o, PyObject *snap)
{
	const struct blamer_snapshot *s;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	PyObject *r;
	int ret;

	if (!fleet_usable(o))
		return NULL;
	/* The lock keeps a fold (which runs without the GIL) off the
	 * remainder; it is waited for without the GIL, and the text made with
	 * it (CPU only, and the snapshot may not change meanwhile). */
	Py_BEGIN_ALLOW_THREADS
	PyThread_acquire_lock(o->lock, WAIT_LOCK);
	Py_END_ALLOW_THREADS
	s = pyb_snapshot_get(snap);
	ret = !s ? -EINVAL : o->f ? blamer_fleet_prometheus_text(o->f, s, &buf, &len, &cap) : -EBADF;
	PyThread_release_lock(o->lock);
	if (!s)
		return NULL;
	if (ret < 0) {
		free(buf);
		return pyb_raise_msg(-ret, "blamer_fleet_prometheus_text");
	}
	r = PyUnicode_DecodeUTF8(buf ? buf : "", (Py_ssize_t)len, "replace");
	free(buf);
	return r;
}

static PyObject *fleet_close(pyb_Fleet *o, PyObject *unused)
{
	struct blamer_fleet *f;

	(void)unused;
	if (pyb_lock_fresh(&o->lock, &o->lock_gen) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	PyThread_acquire_lock(o->lock, WAIT_LOCK);
	f = o->f;
	o->f = NULL;
	if (f)
		blamer_fleet_close(f);
	PyThread_release_lock(o->lock);
	Py_END_ALLOW_THREADS
	Py_RETURN_NONE;
}

static PyObject *fleet_get_state(pyb_Fleet *o, void *unused)
{
	(void)unused;
	return Py_NewRef(o->state);
}

static PyGetSetDef fleet_getset[] = {
	{ "state", (getter)fleet_get_state, NULL, "the state file, None if none", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef fleet_methods[] = {
	{ "fold", (PyCFunction)(void (*)(void))fleet_fold, METH_FASTCALL | METH_KEYWORDS,
	  "fold(reader, snapshot, keep=8) -> int\n\n"
	  "Folds the dead heaps of @snapshot (taken by @reader) not folded yet into\n"
	  "the state, durably, then releases through @reader the folded heaps but\n"
	  "the @keep seen dead last (kept for postmortems). The snapshot then holds\n"
	  "the processes not folded. Returns how many heaps were folded; raises\n"
	  "Error (and changes nothing) if the state could not be written." },
	{ "prometheus", (PyCFunction)fleet_prometheus, METH_O,
	  "prometheus(snapshot) -> str\n\n"
	  "The service's series of @snapshot and the remainder, as `blamer export`\n"
	  "writes them (Prometheus's text format)." },
	{ "close", (PyCFunction)fleet_close, METH_NOARGS, "close()" },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pyb_FleetType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "blamer.Fleet",
	.tp_basicsize = sizeof(pyb_Fleet),
	.tp_dealloc = (destructor)fleet_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Fleet(state=None): the service's series, as `blamer export` makes them:\n"
		  "one per metric, label set, path and uid over every process, live and\n"
		  "dead. With a state file (its directory the caller's, writable by\n"
		  "nobody else), fold() moves dead heaps into a durable remainder and\n"
		  "releases them, so the series stay flat and exact however many\n"
		  "workers come and go. One folder per set of heaps: two exporters\n"
		  "folding the same heaps would each count only what it folded.",
	.tp_methods = fleet_methods,
	.tp_getset = fleet_getset,
	.tp_new = fleet_new,
};
