// SPDX-License-Identifier: MIT
/*
 * Activity: what blamer.activity() returns, a push on entry and a pop on
 * exit, as a context manager or (through blamer._decorate) a decorator.
 * It holds no per-use state, so one Activity may be entered by many
 * threads at once, and recursively: the stack is the thread's, in the
 * heap.
 *
 * The cost of `with blamer.activity(label):` is an object made and two
 * method calls around the C push and pop (Documentation/performance.rst);
 * the label's UTF-8 is the str's own bytes for an ASCII label (no copy),
 * kept valid by the reference held here.
 */
#include <stddef.h>
#include <string.h>

#include "pyblamer.h"

typedef struct {
	PyObject_HEAD
	pyb_Context *ctx;
	PyObject *label;	/* str */
	const char *utf8;	/* its UTF-8, owned by it */
	uint32_t kind;
	uint64_t data[2];
} pyb_Activity;

static const char *const act_names[] = { "label", "kind", "data0", "data1", NULL };

PyObject *pyb_activity_new(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
			   PyObject *kwnames)
{
	PyObject *v[4] = { NULL };
	pyb_Activity *a;
	const char *utf8;
	uint32_t kind = BLAMER_ACTIVITY_TASK;
	uint64_t d0 = 0, d1 = 0;

	if (nargs == 1 && !kwnames) {	/* the usual call: a label alone */
		v[0] = args[0];
	} else {
		if (pyb_parse_kw("activity", args, nargs, kwnames, act_names, 1, 4, v) < 0)
			return NULL;
		if ((v[1] && pyb_u32(v[1], "kind", &kind) < 0) ||
		    (v[2] && pyb_u64(v[2], "data0", &d0) < 0) ||
		    (v[3] && pyb_u64(v[3], "data1", &d1) < 0))
			return NULL;
	}
	utf8 = pyb_utf8(v[0], "label", NULL);
	if (!utf8)
		return NULL;
	a = PyObject_New(pyb_Activity, &pyb_ActivityType);
	if (!a)
		return NULL;
	Py_INCREF(ctx);
	a->ctx = ctx;
	Py_INCREF(v[0]);
	a->label = v[0];
	a->utf8 = utf8;
	a->kind = kind;
	a->data[0] = d0;
	a->data[1] = d1;
	return (PyObject *)a;
}

static void act_dealloc(pyb_Activity *a)
{
	Py_DECREF(a->label);
	Py_DECREF(a->ctx);
	PyObject_Free(a);
}

/*
 * The fork generation of each with block this thread is inside, by
 * depth: a block a fork happened inside ends in the child too, and must
 * not pop what the child pushed since (its own stack holds nothing of
 * the parent's). Per thread, as the stack is; a fork child's thread has
 * its forking thread's copy. Past ACT_GENS deep, blocks pop as before.
 */
#define ACT_GENS 64
static __thread uint64_t act_gen[ACT_GENS];
static __thread uint32_t act_depth;

/*
 * A push that could not be recorded (a full heap, a stack past its
 * slots) is counted in the heap (DROPS); raising here would make the
 * instrumentation break the program it watches.
 */
static PyObject *act_enter(pyb_Activity *a, PyObject *unused)
{
	(void)unused;
	if (__builtin_expect(!pyb_context_usable(a->ctx), 0))
		return NULL;	/* entering an activity of a closed context */
	(void)blamer_push(a->ctx->b, a->kind, a->utf8, a->data[0], a->data[1]);
	if (act_depth < ACT_GENS)
		act_gen[act_depth] = pyb_fork_gen;
	act_depth++;
	Py_INCREF(a);
	return (PyObject *)a;
}

static PyObject *act_exit(pyb_Activity *a, PyObject *const *args, Py_ssize_t nargs)
{
	bool inherited = false;

	(void)args;
	(void)nargs;
	if (act_depth) {
		act_depth--;
		inherited = act_depth < ACT_GENS && act_gen[act_depth] != pyb_fork_gen;
	}
	/* its context closed inside the block, or a fork since its push:
	 * nothing of its to pop */
	if (!a->ctx->closed && !inherited)
		blamer_pop(a->ctx->b);
	Py_RETURN_FALSE;
}

/* @activity(func): the decorator, written in Python (blamer._decorate):
 * functools.wraps, methods and signatures come with it. */
static PyObject *act_call(pyb_Activity *a, PyObject *args, PyObject *kw)
{
	static PyObject *decorate;	/* blamer._decorate, found once */

	if (kw || PyTuple_GET_SIZE(args) != 1) {
		PyErr_SetString(PyExc_TypeError,
				"blamer: an Activity decorates one function: @blamer.activity(label)");
		return NULL;
	}
	if (!decorate) {
		PyObject *mod = PyImport_ImportModule("blamer");

		if (!mod)
			return NULL;
		decorate = PyObject_GetAttrString(mod, "_decorate");
		Py_DECREF(mod);
		if (!decorate)
			return NULL;
	}
	return PyObject_CallFunctionObjArgs(decorate, (PyObject *)a, PyTuple_GET_ITEM(args, 0),
					    NULL);
}

static PyObject *act_set_data(pyb_Activity *a, PyObject *const *args, Py_ssize_t nargs,
			      PyObject *kwnames)
{
	if (!pyb_context_usable(a->ctx))
		return NULL;
	return pyb_set_data_scoped(a->ctx, BLAMER_DATA_ACTIVITY, args, nargs, kwnames);
}

static PyObject *act_repr(pyb_Activity *a)
{
	return PyUnicode_FromFormat("<blamer.Activity %R kind=%u>", a->label, (unsigned)a->kind);
}

static PyObject *get_data0(pyb_Activity *a, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLongLong(a->data[0]);
}

static PyObject *get_data1(pyb_Activity *a, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLongLong(a->data[1]);
}

static PyObject *get_kind(pyb_Activity *a, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLong(a->kind);
}

static PyObject *get_label(pyb_Activity *a, void *unused)
{
	(void)unused;
	Py_INCREF(a->label);
	return a->label;
}

static PyObject *get_context(pyb_Activity *a, void *unused)
{
	(void)unused;
	Py_INCREF(a->ctx);
	return (PyObject *)a->ctx;
}

static PyGetSetDef act_getset[] = {
	{ "label", (getter)get_label, NULL, "the label pushed", NULL },
	{ "kind", (getter)get_kind, NULL, "ACTIVITY_*", NULL },
	{ "data0", (getter)get_data0, NULL, "first word of kind-specific data", NULL },
	{ "data1", (getter)get_data1, NULL, "second word of kind-specific data", NULL },
	{ "context", (getter)get_context, NULL, "the Context it pushes to", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef act_methods[] = {
	{ "__enter__", (PyCFunction)act_enter, METH_NOARGS,
	  "Pushes the activity on the calling thread's stack." },
	{ "__exit__", (PyCFunction)(void (*)(void))act_exit, METH_FASTCALL,
	  "Pops the calling thread's top activity. Exceptions pass through." },
	{ "set_data", (PyCFunction)(void (*)(void))act_set_data, METH_FASTCALL | METH_KEYWORDS,
	  "set_data(name, value, type=None, capacity=None)\n\n"
	  "Inside the with block: user data of the thread's top activity (this\n"
	  "one), shown with it and gone with its pop (scope DATA_ACTIVITY)." },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pyb_ActivityType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "blamer.Activity",
	.tp_basicsize = sizeof(pyb_Activity),
	.tp_dealloc = (destructor)act_dealloc,
	.tp_repr = (reprfunc)act_repr,
	.tp_call = (ternaryfunc)act_call,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "An activity of the calling thread (blamer.activity()): a context manager\n"
		  "and a decorator. Entering pushes it on the thread's stack in the heap,\n"
		  "leaving pops it; an exception passes through. One Activity may be\n"
		  "used by many threads and recursively: it keeps no state of its own.",
	.tp_methods = act_methods,
	.tp_getset = act_getset,
};
