// SPDX-License-Identifier: MIT
/*
 * The attribution DAG: node ids, nodes, links, unit names, and Path, the
 * handle of a measured path. Nodes are given by name (the id is
 * blamer_dag_id() of it, the same in every process) or by id.
 * Path.add() is blamer_path_add(): lock-free, no system call, exact from
 * any number of threads, and in a fork child it adds to the child's heap.
 */
#include <string.h>

#include "pyblamer.h"

typedef struct {
	PyObject_HEAD
	pyb_Context *ctx;
	uint64_t epoch;
	struct blamer_path *p;
	uint32_t nunits;
	uint32_t depth;
	uint64_t ids[BLAMER_SNAP_MAX_DEPTH];
	uint32_t units[BLAMER_SNAP_MAX_UNITS];
} pyb_Path;

PyObject *pyb_dag_id(PyObject *self, PyObject *name)
{
	const char *s;

	(void)self;
	s = pyb_utf8(name, "a node name", NULL);
	if (!s)
		return NULL;
	return PyLong_FromUnsignedLongLong(blamer_dag_id(s));
}

static const char *const node_names[] = { "name", "type", "id", NULL };

PyObject *pyb_dag_node(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
		       PyObject *kwnames)
{
	PyObject *v[3] = { NULL };
	uint32_t type = 0;
	uint64_t id;
	const char *name;
	int ret;

	if (pyb_parse_kw("dag_node", args, nargs, kwnames, node_names, 1, 3, v) < 0)
		return NULL;
	name = pyb_utf8(v[0], "a node name", NULL);
	if (!name || (v[1] && pyb_u32(v[1], "type", &type) < 0))
		return NULL;
	if (v[2] && v[2] != Py_None) {
		if (pyb_u64(v[2], "id", &id) < 0)
			return NULL;
	} else {
		id = blamer_dag_id(name);
	}
	ret = blamer_dag_node(ctx->b, id, type, name);
	if (ret < 0)
		return pyb_raise(ret, "blamer_dag_node");
	return PyLong_FromUnsignedLongLong(id);
}

PyObject *pyb_dag_link(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs)
{
	uint64_t parent, child;
	int ret;

	if (nargs != 2)
		return PyErr_Format(PyExc_TypeError, "dag_link() takes 2 arguments: parent, child");
	if (pyb_node_id(args[0], &parent) < 0 || pyb_node_id(args[1], &child) < 0)
		return NULL;
	ret = blamer_dag_link(ctx->b, parent, child);
	if (ret < 0)
		return pyb_raise(ret, "blamer_dag_link");
	Py_RETURN_NONE;
}

static const char *const unit_names[] = { "unit", "name", "base", NULL };

PyObject *pyb_dag_unit(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
		       PyObject *kwnames)
{
	PyObject *v[3] = { NULL };
	uint32_t unit, base = BLAMER_BASE_NONE;
	const char *name;
	int ret;

	if (pyb_parse_kw("dag_unit", args, nargs, kwnames, unit_names, 2, 3, v) < 0)
		return NULL;
	if (pyb_u32(v[0], "unit", &unit) < 0)
		return NULL;
	name = pyb_utf8(v[1], "a unit name", NULL);
	if (!name || (v[2] && pyb_u32(v[2], "base", &base) < 0))
		return NULL;
	ret = blamer_dag_unit(ctx->b, unit, name, base);
	if (ret < 0)
		return pyb_raise(ret, "blamer_dag_unit");
	Py_RETURN_NONE;
}

static const char *const path_names[] = { "nodes", "units", NULL };

/* A sequence of at most @max items, each through @conv, into @out. */
static int seq_of(PyObject *o, const char *what, Py_ssize_t max, uint32_t *n,
		  int (*conv)(PyObject *, void *), void *out, size_t elsz)
{
	PyObject *seq = PySequence_Fast(o, what);
	Py_ssize_t i, len;

	if (!seq)
		return -1;
	len = PySequence_Fast_GET_SIZE(seq);
	if (len < 1 || len > max) {
		PyErr_Format(PyExc_ValueError, "blamer: %s: 1 to %zd of them, not %zd", what, max,
			     len);
		Py_DECREF(seq);
		return -1;
	}
	for (i = 0; i < len; i++)
		if (conv(PySequence_Fast_GET_ITEM(seq, i), (char *)out + (size_t)i * elsz) < 0) {
			Py_DECREF(seq);
			return -1;
		}
	*n = (uint32_t)len;
	Py_DECREF(seq);
	return 0;
}

static int conv_node(PyObject *o, void *out)
{
	return pyb_node_id(o, out);
}

static int conv_unit(PyObject *o, void *out)
{
	return pyb_u32(o, "a unit", out);
}

PyObject *pyb_path(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *v[2] = { NULL };
	pyb_Path *p;

	if (pyb_parse_kw("path", args, nargs, kwnames, path_names, 2, 2, v) < 0)
		return NULL;
	p = PyObject_New(pyb_Path, &pyb_PathType);
	if (!p)
		return NULL;
	p->ctx = ctx;
	Py_INCREF(ctx);
	p->p = NULL;
	if (seq_of(v[0], "a path's nodes", BLAMER_SNAP_MAX_DEPTH, &p->depth, conv_node, p->ids,
		   sizeof(p->ids[0])) < 0 ||
	    seq_of(v[1], "a path's units", BLAMER_SNAP_MAX_UNITS, &p->nunits, conv_unit, p->units,
		   sizeof(p->units[0])) < 0) {
		Py_DECREF(p);
		return NULL;
	}
	/* The sequences may be generators, whose code may have closed the
	 * context: its b is NULL then, which C takes for the process
	 * default, and the Path would write (and outlive) another heap. */
	if (!pyb_context_usable(ctx)) {
		Py_DECREF(p);
		return NULL;
	}
	p->epoch = ctx->epoch;
	p->p = blamer_path_get(ctx->b, p->ids, p->depth, p->units, p->nunits);
	if (!p->p) {
		Py_DECREF(p);
		return pyb_raise(0, "blamer_path_get");
	}
	return (PyObject *)p;
}

static const char *const add_names[] = { "value", "index", NULL };

static PyObject *path_add(pyb_Path *self, PyObject *const *args, Py_ssize_t nargs,
			  PyObject *kwnames)
{
	PyObject *v[2] = { NULL };
	uint64_t value;
	uint32_t index = 0;

	if (nargs == 1 && !kwnames) {
		v[0] = args[0];
	} else {
		if (pyb_parse_kw("add", args, nargs, kwnames, add_names, 1, 2, v) < 0)
			return NULL;
		if (v[1] && pyb_u32(v[1], "index", &index) < 0)
			return NULL;
	}
	if (!pyb_handle_live(self->ctx, self->epoch) || pyb_u64(v[0], "a measurement", &value) < 0)
		return NULL;
	if (index >= self->nunits)
		return PyErr_Format(PyExc_IndexError, "blamer: the path has %u units",
				    (unsigned)self->nunits);
	blamer_path_add(self->p, index, value);
	Py_RETURN_NONE;
}

static void path_dealloc(pyb_Path *self)
{
	/* the C handle is the context's (freed by its close) */
	Py_DECREF(self->ctx);
	PyObject_Free(self);
}

static PyObject *path_get_nodes(pyb_Path *self, void *unused)
{
	PyObject *t = PyTuple_New(self->depth);
	uint32_t i;

	(void)unused;
	for (i = 0; t && i < self->depth; i++) {
		PyObject *o = PyLong_FromUnsignedLongLong(self->ids[i]);

		if (!o) {
			Py_CLEAR(t);
			break;
		}
		PyTuple_SET_ITEM(t, i, o);
	}
	return t;
}

static PyObject *path_get_units(pyb_Path *self, void *unused)
{
	PyObject *t = PyTuple_New(self->nunits);
	uint32_t i;

	(void)unused;
	for (i = 0; t && i < self->nunits; i++) {
		PyObject *o = PyLong_FromUnsignedLong(self->units[i]);

		if (!o) {
			Py_CLEAR(t);
			break;
		}
		PyTuple_SET_ITEM(t, i, o);
	}
	return t;
}

static PyGetSetDef path_getset[] = {
	{ "nodes", (getter)path_get_nodes, NULL, "the node ids, root first", NULL },
	{ "units", (getter)path_get_units, NULL, "the units of its measurements", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef path_methods[] = {
	{ "add", (PyCFunction)(void (*)(void))path_add, METH_FASTCALL | METH_KEYWORDS,
	  "add(value, index=0)\n\nAdds @value (0..2**64-1) to measurement @index (the index of\n"
	  "its unit in path()'s units): lock-free, exact from any number of threads." },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pyb_PathType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "blamer.Path",
	.tp_basicsize = sizeof(pyb_Path),
	.tp_dealloc = (destructor)path_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The handle of a DAG path and its measurements (Context.path()).\n"
		  "In a fork child it adds to the child's own heap.",
	.tp_methods = path_methods,
	.tp_getset = path_getset,
};
