// SPDX-License-Identifier: MIT
/*
 * The values behind blamer.prometheus (bindings/python/blamer/
 * prometheus.py): what prometheus_client's metrics hold in place of its
 * MmapedValue. Their inc() and set() are the hot path of an application
 * that counts with prometheus_client, so they are here, in C: one write
 * to a blamer series, plus this process's own running value, which get()
 * returns (as MmapedValue.get() returns what its process wrote).
 *
 * MPFamily is what one MultiProcessValue() class shares: the process
 * identifier function and the identity the values were resolved for.
 * With the default identifier (os.getpid) nothing is called per write:
 * a process changes identity only by a fork, which pyb_fork_gen tells
 * (the C handles keep working in the child; the running values start
 * again at 0, as the child's MmapedValue reads its own new file). With
 * an identifier of the application's, it is called at every write, as
 * prometheus_client does, and a new identity has the family's switch()
 * (Python) move every value to that identity's heap.
 *
 * Roles: a counter's or gauge's value writes its series; a histogram's
 * _sum (and a summary's) observes the amount in the histogram's series,
 * which counts it in its bucket too; the _bucket values (and a summary's
 * _count) only keep their running value, for get(): prometheus_client's
 * Histogram.observe() adds to _sum first, then to the bucket.
 */
#include <math.h>
#include <string.h>

#include "pyblamer.h"

#define MPV_COUNTER	0u
#define MPV_GAUGE	1u
#define MPV_OBSERVE	2u
#define MPV_LOCAL	3u

typedef struct {
	PyObject_HEAD
	PyObject *identify;	/* the identifier function, or NULL (the pid: forks tell) */
	PyObject *current;	/* the identity the values are resolved for */
	PyObject *resolve;	/* resolve(value) -> Series or None */
	PyObject *switch_to;	/* switch_to(identity) */
	uint64_t epoch;		/* bumped by each switch */
} pyb_MPFamily;

typedef struct {
	PyObject_HEAD
	pyb_MPFamily *fam;
	PyObject *params;	/* (typ, metric_name, name, labelnames, labelvalues, help, mode) */
	pyb_Series *series;	/* the one it writes, once resolved */
	uint32_t role;		/* MPV_* */
	bool resolved;
	double value;		/* this process's own, since its start or identity */
	double bound;		/* a histogram bucket's upper bound (le), else NaN */
	uint64_t fork_gen, epoch;
} pyb_MPValue;

PyTypeObject pyb_MPFamilyType, pyb_MPValueType;

/* ---- MPFamily ---- */

static PyObject *fam_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *names[] = { "identify", "resolve", "switch_to", NULL };
	PyObject *identify, *resolve, *switch_to;
	pyb_MPFamily *f;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO:MPFamily", names, &identify, &resolve,
					 &switch_to))
		return NULL;
	if (!PyCallable_Check(resolve) || !PyCallable_Check(switch_to) ||
	    (identify != Py_None && !PyCallable_Check(identify))) {
		PyErr_SetString(PyExc_TypeError, "blamer: MPFamily takes callables");
		return NULL;
	}
	f = (pyb_MPFamily *)type->tp_alloc(type, 0);
	if (!f)
		return NULL;
	f->identify = identify == Py_None ? NULL : Py_NewRef(identify);
	f->resolve = Py_NewRef(resolve);
	f->switch_to = Py_NewRef(switch_to);
	f->current = Py_NewRef(Py_None);
	f->epoch = 0;
	return (PyObject *)f;
}

static int fam_traverse(pyb_MPFamily *f, visitproc visit, void *arg)
{
	Py_VISIT(f->identify);
	Py_VISIT(f->current);
	Py_VISIT(f->resolve);
	Py_VISIT(f->switch_to);
	return 0;
}

static int fam_clear(pyb_MPFamily *f)
{
	Py_CLEAR(f->identify);
	Py_CLEAR(f->current);
	Py_CLEAR(f->resolve);
	Py_CLEAR(f->switch_to);
	return 0;
}

static void fam_dealloc(pyb_MPFamily *f)
{
	PyObject_GC_UnTrack(f);
	fam_clear(f);
	Py_TYPE(f)->tp_free((PyObject *)f);
}

static PyObject *fam_get_current(pyb_MPFamily *f, void *unused)
{
	(void)unused;
	return Py_NewRef(f->current ? f->current : Py_None);
}

static int fam_set_current(pyb_MPFamily *f, PyObject *v, void *unused)
{
	(void)unused;
	if (!v) {
		PyErr_SetString(PyExc_AttributeError, "cannot delete current");
		return -1;
	}
	Py_XSETREF(f->current, Py_NewRef(v));
	return 0;
}

static PyObject *fam_bump(pyb_MPFamily *f, PyObject *unused)
{
	(void)unused;
	f->epoch++;
	Py_RETURN_NONE;
}

static PyObject *fam_get_epoch(pyb_MPFamily *f, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLongLong(f->epoch);
}

static PyGetSetDef fam_getset[] = {
	{ "current", (getter)fam_get_current, (setter)fam_set_current,
	  "the identity the values are resolved for", NULL },
	{ "epoch", (getter)fam_get_epoch, NULL, "switches so far", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef fam_methods[] = {
	{ "bump", (PyCFunction)fam_bump, METH_NOARGS,
	  "Every value resolves its series again at its next use (a new identity)." },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pyb_MPFamilyType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "blamer._blamer.MPFamily",
	.tp_basicsize = sizeof(pyb_MPFamily),
	.tp_dealloc = (destructor)fam_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "MPFamily(identify, resolve, switch_to): the state one blamer.prometheus\n"
		  ".MultiProcessValue() class shares (internal).",
	.tp_traverse = (traverseproc)fam_traverse,
	.tp_clear = (inquiry)fam_clear,
	.tp_methods = fam_methods,
	.tp_getset = fam_getset,
	.tp_new = fam_new,
};

/* ---- MPValue ---- */

/* PyArg's "I" wraps: 2**32 + 1 was role 1. */
static int conv_role(PyObject *o, void *out)
{
	return pyb_u32(o, "role", out) == 0;
}

static PyObject *mpv_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *names[] = { "family", "role", "params", "bound", NULL };
	PyObject *fam, *params;
	uint32_t role;
	double bound = NAN;
	pyb_MPValue *v;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O&O!|d:MPValue", names, &pyb_MPFamilyType,
					 &fam, conv_role, &role, &PyTuple_Type, &params, &bound))
		return NULL;
	if (role > MPV_LOCAL) {
		PyErr_SetString(PyExc_ValueError, "blamer: no such MPValue role");
		return NULL;
	}
	v = (pyb_MPValue *)type->tp_alloc(type, 0);
	if (!v)
		return NULL;
	v->fam = (pyb_MPFamily *)Py_NewRef(fam);
	v->params = Py_NewRef(params);
	v->series = NULL;
	v->role = role;
	v->resolved = role == MPV_LOCAL;
	v->value = 0;
	v->bound = bound;
	v->fork_gen = pyb_fork_gen;
	v->epoch = v->fam->epoch;
	return (PyObject *)v;
}

static int mpv_traverse(pyb_MPValue *v, visitproc visit, void *arg)
{
	Py_VISIT(v->fam);
	Py_VISIT(v->params);
	Py_VISIT(v->series);
	return 0;
}

static int mpv_clear(pyb_MPValue *v)
{
	Py_CLEAR(v->fam);
	Py_CLEAR(v->params);
	Py_CLEAR(v->series);
	return 0;
}

static void mpv_dealloc(pyb_MPValue *v)
{
	PyObject_GC_UnTrack(v);
	mpv_clear(v);
	Py_TYPE(v)->tp_free((PyObject *)v);
}

/* The series of @v, resolved by the family (Python): 0 or -1. */
static int mpv_resolve(pyb_MPValue *v)
{
	PyObject *r = PyObject_CallOneArg(v->fam->resolve, (PyObject *)v);

	if (!r)
		return -1;
	if (r != Py_None && !PyObject_TypeCheck(r, &pyb_SeriesType)) {
		PyErr_Format(PyExc_TypeError, "blamer: resolve() gave %.80s, not a Series",
			     Py_TYPE(r)->tp_name);
		Py_DECREF(r);
		return -1;
	}
	Py_XSETREF(v->series, r == Py_None ? NULL : (pyb_Series *)r);
	if (r == Py_None)
		Py_DECREF(r);
	v->resolved = true;
	return 0;
}

/*
 * Before each use: the identity (an application's identifier is asked;
 * the default's changes only with a fork), the running value (0 in a new
 * process or identity), the series (resolved again for a new identity,
 * or after its context was closed). The usual case is two compares.
 */
static inline int mpv_ready(pyb_MPValue *v)
{
	pyb_MPFamily *f = v->fam;

	if (f->identify) {
		PyObject *id = PyObject_CallNoArgs(f->identify);
		int same;

		if (!id)
			return -1;
		same = PyObject_RichCompareBool(id, f->current, Py_EQ);
		if (same == 0) {
			PyObject *r = PyObject_CallOneArg(f->switch_to, id);

			Py_XDECREF(r);
			same = r ? 1 : -1;
		}
		Py_DECREF(id);
		if (same < 0)
			return -1;
	}
	if (__builtin_expect(v->fork_gen != pyb_fork_gen || v->epoch != f->epoch, 0)) {
		v->value = 0;
		if (v->epoch != f->epoch && v->role != MPV_LOCAL) {
			v->resolved = false;
			Py_CLEAR(v->series);
		}
		v->fork_gen = pyb_fork_gen;
		v->epoch = f->epoch;
	}
	/* resolve() runs Python code: a signal handler, another thread or a
	 * finalizer may reset/close the context after it made the Series and
	 * before it is used here: check again, and resolve again */
	for (int tries = 0; tries < 8; tries++) {
		if (__builtin_expect(v->resolved, 1) &&
		    (!v->series || __builtin_expect(v->series->epoch == v->series->ctx->epoch, 1)))
			return 0;
		if (mpv_resolve(v) < 0)
			return -1;
	}
	Py_CLEAR(v->series);	/* still stale: write nothing this time */
	v->resolved = false;
	return 0;
}

static PyObject *mpv_inc(pyb_MPValue *v, PyObject *arg)
{
	double d = PyFloat_AsDouble(arg);

	if ((d == -1 && PyErr_Occurred()) || mpv_ready(v) < 0)
		return NULL;
	if (v->series) {
		switch (v->role) {
		case MPV_COUNTER:
			blamer_counter_add(v->series->s, d);
			break;
		case MPV_GAUGE:
			blamer_gauge_add(v->series->s, d);
			break;
		case MPV_OBSERVE:
			blamer_histogram_observe(v->series->s, d);
			break;
		}
	}
	v->value += d;
	Py_RETURN_NONE;
}

/*
 * prometheus_client's Histogram.observe() in one call (blamer.prometheus
 * puts it in place of the Python loop over the bounds): @v is the
 * histogram's _sum, @buckets its _bucket values, in the order of their
 * bounds. The series counts the value in its bucket itself; the running
 * values are kept as the Python loop keeps them (the first bucket whose
 * bound is >= the value).
 */
static PyObject *mpv_hist_observe(pyb_MPValue *v, PyObject *const *args, Py_ssize_t nargs)
{
	Py_ssize_t i, n;
	double d;

	if (nargs != 2 || !PyList_Check(args[1])) {
		PyErr_SetString(PyExc_TypeError, "hist_observe(amount, buckets: list)");
		return NULL;
	}
	d = PyFloat_AsDouble(args[0]);
	if ((d == -1 && PyErr_Occurred()) || mpv_ready(v) < 0)
		return NULL;
	if (v->series && v->role == MPV_OBSERVE)
		blamer_histogram_observe(v->series->s, d);
	v->value += d;
	n = PyList_GET_SIZE(args[1]);
	for (i = 0; i < n; i++) {
		PyObject *o = PyList_GET_ITEM(args[1], i);
		pyb_MPValue *b;

		if (!PyObject_TypeCheck(o, &pyb_MPValueType)) {
			PyErr_SetString(PyExc_TypeError, "hist_observe(): a bucket is not a blamer value");
			return NULL;
		}
		b = (pyb_MPValue *)o;
		if (d <= b->bound) {
			Py_INCREF(b);	/* mpv_ready() may run Python code that drops it */
			if (mpv_ready(b) < 0) {
				Py_DECREF(b);
				return NULL;
			}
			b->value += 1;
			Py_DECREF(b);
			break;
		}
	}
	Py_RETURN_NONE;
}

static PyObject *mpv_set(pyb_MPValue *v, PyObject *arg)
{
	double d = PyFloat_AsDouble(arg);

	if ((d == -1 && PyErr_Occurred()) || mpv_ready(v) < 0)
		return NULL;
	/* Only gauges are set (a counter has no set() in prometheus_client). */
	if (v->series && v->role == MPV_GAUGE)
		blamer_gauge_set(v->series->s, d);
	v->value = d;
	Py_RETURN_NONE;
}

static PyObject *mpv_get(pyb_MPValue *v, PyObject *unused)
{
	(void)unused;
	if (mpv_ready(v) < 0)
		return NULL;
	return PyFloat_FromDouble(v->value);
}

/* Exemplars: not kept in multiprocess mode (prometheus_client neither). */
static PyObject *mpv_set_exemplar(pyb_MPValue *v, PyObject *arg)
{
	(void)v;
	(void)arg;
	Py_RETURN_NONE;
}

static PyObject *mpv_get_exemplar(pyb_MPValue *v, PyObject *unused)
{
	(void)v;
	(void)unused;
	Py_RETURN_NONE;
}

static PyObject *mpv_get_params(pyb_MPValue *v, void *unused)
{
	(void)unused;
	return Py_NewRef(v->params);
}

static PyObject *mpv_get_role(pyb_MPValue *v, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLong(v->role);
}

static PyObject *mpv_get_bound(pyb_MPValue *v, void *unused)
{
	(void)unused;
	return PyFloat_FromDouble(v->bound);
}

static PyObject *mpv_get_series(pyb_MPValue *v, void *unused)
{
	(void)unused;
	return Py_NewRef(v->series ? (PyObject *)v->series : Py_None);
}

static PyGetSetDef mpv_getset[] = {
	{ "params", (getter)mpv_get_params, NULL,
	  "(typ, metric_name, name, labelnames, labelvalues, help_text, multiprocess_mode)", NULL },
	{ "role", (getter)mpv_get_role, NULL, "MPV_COUNTER, _GAUGE, _OBSERVE or _LOCAL", NULL },
	{ "series", (getter)mpv_get_series, NULL, "the Series it writes, None before it is resolved",
	  NULL },
	{ "bound", (getter)mpv_get_bound, NULL, "a bucket's upper bound, else nan", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef mpv_methods[] = {
	{ "inc", (PyCFunction)mpv_inc, METH_O, "inc(amount)" },
	{ "set", (PyCFunction)mpv_set, METH_O, "set(value)" },
	{ "hist_observe", (PyCFunction)(void (*)(void))mpv_hist_observe, METH_FASTCALL,
	  "hist_observe(amount, buckets)\n\nHistogram.observe() of the histogram whose _sum this is." },
	{ "get", (PyCFunction)mpv_get, METH_NOARGS,
	  "get() -> float\n\nWhat this process wrote (since its start or its identity's change)." },
	{ "set_exemplar", (PyCFunction)mpv_set_exemplar, METH_O,
	  "set_exemplar(exemplar)\n\nNot kept in multiprocess mode." },
	{ "get_exemplar", (PyCFunction)mpv_get_exemplar, METH_NOARGS, "get_exemplar() -> None" },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pyb_MPValueType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "blamer._blamer.MPValue",
	.tp_basicsize = sizeof(pyb_MPValue),
	.tp_dealloc = (destructor)mpv_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "MPValue(family, role, params, bound=nan): a prometheus_client value on a blamer series\n"
		  "(blamer.prometheus; internal).",
	.tp_traverse = (traverseproc)mpv_traverse,
	.tp_clear = (inquiry)mpv_clear,
	.tp_methods = mpv_methods,
	.tp_getset = mpv_getset,
	.tp_new = mpv_new,
};

int pyb_promvalue_init(PyObject *m)
{
	if (PyType_Ready(&pyb_MPFamilyType) < 0 || PyType_Ready(&pyb_MPValueType) < 0)
		return -1;
	if (PyModule_AddObjectRef(m, "MPFamily", (PyObject *)&pyb_MPFamilyType) < 0 ||
	    PyModule_AddObjectRef(m, "MPValue", (PyObject *)&pyb_MPValueType) < 0)
		return -1;
	if (pyb_add_int(m, "MPV_COUNTER", MPV_COUNTER) < 0 ||
	    pyb_add_int(m, "MPV_GAUGE", MPV_GAUGE) < 0 ||
	    pyb_add_int(m, "MPV_OBSERVE", MPV_OBSERVE) < 0 || pyb_add_int(m, "MPV_LOCAL", MPV_LOCAL) < 0)
		return -1;
	return 0;
}
