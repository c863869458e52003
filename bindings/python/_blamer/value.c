// SPDX-License-Identifier: MIT
/*
 * User data: set_data() and Value, the handle of a PROCESS or GLOBAL
 * field. An update through a Value is the C handle's update (one store,
 * or an atomic add) after a type check; no name lookup, no system call.
 * In a fork child the same Value writes to the child's heap (the C
 * handle is fork-safe). ACTIVITY fields get no Value: their handle ends
 * with the activity's pop, which Python cannot see coming.
 */
#include <string.h>

#include "pyblamer.h"

typedef struct {
	PyObject_HEAD
	pyb_Context *ctx;
	uint64_t epoch;
	struct blamer_value *h;
	uint32_t type;		/* BLAMER_FIELD_* */
	uint32_t scope;		/* BLAMER_DATA_* */
	PyObject *name;		/* str */
} pyb_Value;

static const struct {
	const char *name;
	uint32_t type;
} type_names[] = {
	{ "bool", BLAMER_FIELD_BOOL },	   { "char", BLAMER_FIELD_CHAR },
	{ "int", BLAMER_FIELD_SIGNED },	   { "uint", BLAMER_FIELD_UNSIGNED },
	{ "double", BLAMER_FIELD_DOUBLE }, { "string", BLAMER_FIELD_STRING },
	{ "raw", BLAMER_FIELD_RAW },
};

static const char *type_name(uint32_t type)
{
	size_t i;

	for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (type_names[i].type == type)
			return type_names[i].name;
	return "?";
}

/* The field type of @value unless @type_arg names one. */
static int field_type(PyObject *value, PyObject *type_arg, uint32_t *type)
{
	size_t i;

	if (type_arg && type_arg != Py_None) {
		for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
			if (PyUnicode_Check(type_arg) &&
			    PyUnicode_CompareWithASCIIString(type_arg, type_names[i].name) == 0) {
				*type = type_names[i].type;
				return 0;
			}
		PyErr_Format(PyExc_ValueError,
			     "blamer: type must be 'bool', 'char', 'int', 'uint', 'double', "
			     "'string' or 'raw', not %R", type_arg);
		return -1;
	}
	if (PyBool_Check(value))
		*type = BLAMER_FIELD_BOOL;
	else if (PyLong_Check(value))
		*type = BLAMER_FIELD_SIGNED;
	else if (PyFloat_Check(value))
		*type = BLAMER_FIELD_DOUBLE;
	else if (PyUnicode_Check(value))
		*type = BLAMER_FIELD_STRING;
	else if (PyObject_CheckBuffer(value))
		*type = BLAMER_FIELD_RAW;
	else {
		PyErr_Format(PyExc_TypeError,
			     "blamer: a field holds bool, int, float, str or bytes, not %.80s",
			     Py_TYPE(value)->tp_name);
		return -1;
	}
	return 0;
}

/* Scalars of @value for @type: the conversions set_data() and set() share. */
struct scalar {
	bool b;
	char c;
	int64_t i;
	uint64_t u;
	double d;
};

static int to_scalar(PyObject *v, uint32_t type, struct scalar *s)
{
	switch (type) {
	case BLAMER_FIELD_BOOL: {
		int t = PyObject_IsTrue(v);

		if (t < 0)
			return -1;
		s->b = t;
		return 0;
	}
	case BLAMER_FIELD_CHAR: {
		const char *c;
		Py_ssize_t n;

		if (PyLong_Check(v)) {
			long l = PyLong_AsLong(v);

			if (l == -1 && PyErr_Occurred())
				return -1;
			if (l < -128 || l > 255) {
				PyErr_SetString(PyExc_OverflowError, "blamer: a char is one byte");
				return -1;
			}
			s->c = (char)l;
			return 0;
		}
		c = PyUnicode_Check(v) ? PyUnicode_AsUTF8AndSize(v, &n) : NULL;
		if (!c && PyErr_Occurred())
			return -1;
		if (!c || n != 1) {
			PyErr_SetString(PyExc_ValueError,
					"blamer: a char is a str of one ASCII character or an int");
			return -1;
		}
		s->c = c[0];
		return 0;
	}
	case BLAMER_FIELD_SIGNED:
		if (!PyLong_Check(v)) {
			PyErr_Format(PyExc_TypeError, "blamer: an int field needs an int, not %.80s",
				     Py_TYPE(v)->tp_name);
			return -1;
		}
		s->i = PyLong_AsLongLong(v);
		if (s->i == -1 && PyErr_Occurred()) {
			PyErr_Clear();
			PyErr_SetString(PyExc_OverflowError,
					"blamer: an int field holds -2**63..2**63-1 (type='uint' "
					"for 0..2**64-1)");
			return -1;
		}
		return 0;
	case BLAMER_FIELD_UNSIGNED:
		return pyb_u64(v, "a uint field's value", &s->u);
	case BLAMER_FIELD_DOUBLE:
		s->d = PyFloat_AsDouble(v);
		return s->d == -1.0 && PyErr_Occurred() ? -1 : 0;
	}
	return 0;
}

/*
 * Makes or sets field @name; the C handle or NULL with an exception.
 * @v is converted first: a conversion may run Python code (__bool__,
 * __float__, __index__) that closes the context or resets the default,
 * so the context is checked after it, against @epoch, the one the
 * caller found usable (a closed context's ctx->b would be the default's).
 */
static struct blamer_value *set_field(pyb_Context *ctx, uint64_t epoch, unsigned scope,
				      const char *name, uint32_t type, PyObject *v,
				      Py_ssize_t capacity)
{
	struct blamer_value *h = NULL;
	struct scalar s;

	if (type == BLAMER_FIELD_STRING) {
		const char *str = pyb_utf8(v, "a string field's value", NULL);

		if (!str || !pyb_handle_live(ctx, epoch))
			return NULL;
		if (capacity > 0 && !blamer_reserve_string(ctx->b, scope, name, (size_t)capacity))
			goto fail;
		h = blamer_set_string(ctx->b, scope, name, str);
	} else if (type == BLAMER_FIELD_RAW) {
		Py_buffer view;

		if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) < 0)
			return NULL;
		if (!pyb_handle_live(ctx, epoch)) {
			PyBuffer_Release(&view);
			return NULL;
		}
		h = blamer_set_raw(ctx->b, scope, name, view.buf, (size_t)view.len);
		PyBuffer_Release(&view);
	} else {
		if (to_scalar(v, type, &s) < 0 || !pyb_handle_live(ctx, epoch))
			return NULL;
		switch (type) {
		case BLAMER_FIELD_BOOL:
			h = blamer_set_bool(ctx->b, scope, name, s.b);
			break;
		case BLAMER_FIELD_CHAR:
			h = blamer_set_char(ctx->b, scope, name, s.c);
			break;
		case BLAMER_FIELD_SIGNED:
			h = blamer_set_int(ctx->b, scope, name, s.i);
			break;
		case BLAMER_FIELD_UNSIGNED:
			h = blamer_set_uint(ctx->b, scope, name, s.u);
			break;
		case BLAMER_FIELD_DOUBLE:
			h = blamer_set_double(ctx->b, scope, name, s.d);
			break;
		}
	}
	if (h)
		return h;
fail:
	pyb_raise(0, "blamer_set");
	return NULL;
}

static const char *const set_names[] = { "name", "value", "scope", "type", "capacity", NULL };
static const char *const set_scoped_names[] = { "name", "value", "type", "capacity", NULL };

static PyObject *set_data(pyb_Context *ctx, unsigned scope, PyObject *name_obj, PyObject *v,
			  PyObject *type_arg, PyObject *cap_arg)
{
	uint64_t epoch = ctx->epoch;	/* the caller found it usable */
	Py_ssize_t capacity = 0;
	struct blamer_value *h;
	const char *name;
	pyb_Value *val;
	uint32_t type;

	name = pyb_utf8(name_obj, "a field name", NULL);
	if (!name || field_type(v, type_arg, &type) < 0)
		return NULL;
	if (cap_arg && cap_arg != Py_None) {
		capacity = PyLong_AsSsize_t(cap_arg);
		if (capacity == -1 && PyErr_Occurred())
			return NULL;
		if (type != BLAMER_FIELD_STRING || capacity < 1 || capacity > 32752) {
			PyErr_SetString(PyExc_ValueError,
					"blamer: capacity is for str fields, 1..32752 bytes");
			return NULL;
		}
	}
	h = set_field(ctx, epoch, scope, name, type, v, capacity);
	if (!h)
		return NULL;
	if (scope == BLAMER_DATA_ACTIVITY)
		Py_RETURN_NONE;
	val = PyObject_New(pyb_Value, &pyb_ValueType);
	if (!val)
		return NULL;
	Py_INCREF(ctx);
	val->ctx = ctx;
	val->epoch = epoch;
	val->h = h;
	val->type = type;
	val->scope = scope;
	Py_INCREF(name_obj);
	val->name = name_obj;
	return (PyObject *)val;
}

PyObject *pyb_set_data(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
		       PyObject *kwnames)
{
	PyObject *v[5] = { NULL };
	uint32_t scope = BLAMER_DATA_PROCESS;

	if (pyb_parse_kw("set_data", args, nargs, kwnames, set_names, 2, 5, v) < 0)
		return NULL;
	if (v[2] && pyb_u32(v[2], "scope", &scope) < 0)
		return NULL;
	if (scope < BLAMER_DATA_GLOBAL || scope > BLAMER_DATA_ACTIVITY)
		return PyErr_Format(PyExc_ValueError,
				    "blamer: scope must be DATA_GLOBAL, DATA_PROCESS or DATA_ACTIVITY");
	return set_data(ctx, scope, v[0], v[1], v[3], v[4]);
}

PyObject *pyb_set_data_scoped(pyb_Context *ctx, unsigned scope, PyObject *const *args,
			      Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *v[4] = { NULL };

	if (pyb_parse_kw("set_data", args, nargs, kwnames, set_scoped_names, 2, 4, v) < 0)
		return NULL;
	return set_data(ctx, scope, v[0], v[1], v[2], v[3]);
}

/* ---- Value ---- */

/* The value is converted before the handle is checked: a conversion
 * may run Python code that closes the context (set_field()). */
static PyObject *val_set(pyb_Value *self, PyObject *v)
{
	const char *str = NULL;
	struct scalar s;

	switch (self->type) {
	case BLAMER_FIELD_BOOL:
	case BLAMER_FIELD_SIGNED:
	case BLAMER_FIELD_UNSIGNED:
	case BLAMER_FIELD_DOUBLE:
		if (to_scalar(v, self->type, &s) < 0)
			return NULL;
		break;
	case BLAMER_FIELD_STRING:
		str = pyb_utf8(v, "a string field's value", NULL);
		if (!str)
			return NULL;
		break;
	default: {	/* CHAR, RAW: no handle update in C; set by name */
		const char *name = pyb_utf8(self->name, "a field name", NULL);

		if (!name || !set_field(self->ctx, self->epoch, self->scope, name, self->type, v,
					0))
			return NULL;
		Py_RETURN_NONE;
	}
	}
	if (!pyb_handle_live(self->ctx, self->epoch))
		return NULL;
	switch (self->type) {
	case BLAMER_FIELD_BOOL:
		blamer_value_bool(self->h, s.b);
		break;
	case BLAMER_FIELD_SIGNED:
		blamer_value_int(self->h, s.i);
		break;
	case BLAMER_FIELD_UNSIGNED:
		blamer_value_uint(self->h, s.u);
		break;
	case BLAMER_FIELD_DOUBLE:
		blamer_value_double(self->h, s.d);
		break;
	default:
		blamer_value_string(self->h, str);
	}
	Py_RETURN_NONE;
}

static PyObject *val_add(pyb_Value *self, PyObject *v)
{
	long long d;

	if (self->type != BLAMER_FIELD_SIGNED && self->type != BLAMER_FIELD_UNSIGNED) {
		PyErr_Format(PyExc_TypeError, "blamer: add() is for int and uint fields, not %s",
			     type_name(self->type));
		return NULL;
	}
	/* converted first: __index__ may close the context (val_set()) */
	d = PyLong_AsLongLong(v);
	if ((d == -1 && PyErr_Occurred()) || !pyb_handle_live(self->ctx, self->epoch))
		return NULL;
	blamer_value_add(self->h, d);
	Py_RETURN_NONE;
}

static void val_dealloc(pyb_Value *self)
{
	Py_DECREF(self->name);
	Py_DECREF(self->ctx);
	PyObject_Free(self);
}

static PyObject *val_repr(pyb_Value *self)
{
	return PyUnicode_FromFormat("<blamer.Value %R %s>", self->name, type_name(self->type));
}

static PyObject *val_get_name(pyb_Value *self, void *unused)
{
	(void)unused;
	Py_INCREF(self->name);
	return self->name;
}

static PyObject *val_get_type(pyb_Value *self, void *unused)
{
	(void)unused;
	return PyUnicode_FromString(type_name(self->type));
}

static PyObject *val_get_scope(pyb_Value *self, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLong(self->scope);
}

static PyGetSetDef val_getset[] = {
	{ "name", (getter)val_get_name, NULL, "the field's name", NULL },
	{ "type", (getter)val_get_type, NULL, "'bool', 'char', 'int', 'uint', 'double', "
	  "'string' or 'raw'", NULL },
	{ "scope", (getter)val_get_scope, NULL, "DATA_PROCESS or DATA_GLOBAL", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef val_methods[] = {
	{ "set", (PyCFunction)val_set, METH_O,
	  "set(value)\n\nStores @value in the field, in place (a str longer than the field's\n"
	  "capacity is cut, marked and counted)." },
	{ "add", (PyCFunction)val_add, METH_O,
	  "add(delta)\n\nAdds @delta (an int) to an int or uint field: one atomic add." },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pyb_ValueType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "blamer.Value",
	.tp_basicsize = sizeof(pyb_Value),
	.tp_dealloc = (destructor)val_dealloc,
	.tp_repr = (reprfunc)val_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The handle of a user-data field (set_data()): set() and add() update it\n"
		  "in place, without a name lookup or a system call. It keeps working in a\n"
		  "fork child, writing to the child's own heap.",
	.tp_methods = val_methods,
	.tp_getset = val_getset,
};
