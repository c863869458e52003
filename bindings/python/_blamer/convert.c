// SPDX-License-Identifier: MIT
/*
 * Conversions every part of the extension needs: arguments in (keyword
 * parsing for the fast calling convention, strings for C, ids, ranged
 * integers) and reader text out.
 */
#include <string.h>

#include "pyblamer.h"

int pyb_parse_kw(const char *fn, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
		 const char *const *names, Py_ssize_t min_pos, Py_ssize_t max_pos,
		 PyObject **out)
{
	Py_ssize_t i, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, nnames = 0;

	while (names[nnames])
		nnames++;
	if (nargs > max_pos) {
		PyErr_Format(PyExc_TypeError, "%s() takes at most %zd positional argument%s (%zd given)",
			     fn, max_pos, max_pos == 1 ? "" : "s", nargs);
		return -1;
	}
	for (i = 0; i < nargs; i++)
		out[i] = args[i];
	for (i = 0; i < nkw; i++) {
		PyObject *k = PyTuple_GET_ITEM(kwnames, i);
		Py_ssize_t j;

		for (j = 0; j < nnames; j++)
			if (PyUnicode_CompareWithASCIIString(k, names[j]) == 0)
				break;
		if (j == nnames) {
			PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'",
				     fn, k);
			return -1;
		}
		if (j < nargs) {	/* (a name twice: Python refuses the call) */
			PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'",
				     fn, names[j]);
			return -1;
		}
		out[j] = args[nargs + i];
	}
	for (i = 0; i < min_pos; i++)
		if (!out[i]) {
			PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fn,
				     names[i]);
			return -1;
		}
	return 0;
}

const char *pyb_utf8_any(PyObject *o, const char *what, Py_ssize_t *len)
{
	if (!PyUnicode_Check(o)) {
		PyErr_Format(PyExc_TypeError, "blamer: %s must be str, not %.80s", what,
			     Py_TYPE(o)->tp_name);
		return NULL;
	}
	/* ASCII strings: the str's own bytes, no copy, no allocation. */
	return PyUnicode_AsUTF8AndSize(o, len);
}

const char *pyb_utf8(PyObject *o, const char *what, Py_ssize_t *len)
{
	Py_ssize_t n;
	const char *s = pyb_utf8_any(o, what, &n);

	if (!s)
		return NULL;
	if (memchr(s, '\0', (size_t)n)) {
		PyErr_Format(PyExc_ValueError, "blamer: %s contains a NUL character", what);
		return NULL;
	}
	if (len)
		*len = n;
	return s;
}

PyObject *pyb_tuple_of(PyObject *o, const char *what)
{
	PyObject *t = PySequence_Tuple(o);

	if (!t && PyErr_ExceptionMatches(PyExc_TypeError)) {
		PyErr_Clear();
		PyErr_SetString(PyExc_TypeError, what);
	}
	return t;
}

int pyb_node_id(PyObject *o, uint64_t *id)
{
	if (PyUnicode_Check(o)) {
		const char *s = pyb_utf8(o, "a node name", NULL);

		if (!s)
			return -1;
		*id = blamer_dag_id(s);
		return 0;
	}
	if (PyLong_Check(o))
		return pyb_u64(o, "a node id", id);
	PyErr_Format(PyExc_TypeError, "blamer: a node is a name (str) or an id (int), not %.80s",
		     Py_TYPE(o)->tp_name);
	return -1;
}

/* @o as an unsigned int of @bits bits; the error names that range. */
static int unsigned_of(PyObject *o, const char *what, unsigned int bits, uint64_t *out)
{
	unsigned long long v;

	if (!PyLong_Check(o)) {
		PyErr_Format(PyExc_TypeError, "blamer: %s must be int, not %.80s", what,
			     Py_TYPE(o)->tp_name);
		return -1;
	}
	v = PyLong_AsUnsignedLongLong(o);
	if ((v == (unsigned long long)-1 && PyErr_Occurred()) ||
	    (bits < 64 && v >> bits)) {
		PyErr_Clear();
		PyErr_Format(PyExc_OverflowError, "blamer: %s must be 0..2**%u-1", what, bits);
		return -1;
	}
	*out = v;
	return 0;
}

int pyb_u64(PyObject *o, const char *what, uint64_t *out)
{
	return unsigned_of(o, what, 64, out);
}

int pyb_u32(PyObject *o, const char *what, uint32_t *out)
{
	uint64_t v;

	if (unsigned_of(o, what, 32, &v) < 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

PyObject *pyb_str(const char *s)
{
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

PyObject *pyb_text(const uint8_t *s, size_t len)
{
	return PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)len, "replace");
}

int pyb_add_int(PyObject *m, const char *name, long long v)
{
	PyObject *o = PyLong_FromLongLong(v);
	int ret;

	if (!o)
		return -1;
	ret = PyModule_AddObjectRef(m, name, o);
	Py_DECREF(o);
	return ret;
}
