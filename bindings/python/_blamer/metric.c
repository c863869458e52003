// SPDX-License-Identifier: MIT
/*
 * Metrics of a service (include/blamer.h, "Metrics"): Context.counter(),
 * .gauge() and .histogram() define one (Metric), Metric.labels() gives
 * the handle of one series (Series), whose writes are the C writes:
 * lock-free, no system call, exact from any number of threads, and in a
 * fork child they write the child's heap.
 *
 * A write the C library refuses (NaN, a counter add below 0, an infinite
 * add or observation) is counted in the heap there; here it raises
 * ValueError first, as a mistake of the caller's that it can see.
 */
#include <math.h>
#include <string.h>

#include "pyblamer.h"

typedef struct {
	PyObject_HEAD
	pyb_Context *ctx;
	uint64_t epoch;
	struct blamer_metric *m;
	uint32_t kind;		/* BLAMER_METRIC_* */
	uint32_t nlabels;
	PyObject *name;		/* str */
	PyObject *labels;	/* tuple of str */
	PyObject *unlabelled;	/* its one Series if it has no labels, else NULL */
} pyb_Metric;

static const char *const mode_names[] = {
	NULL, "all", "liveall", "min", "livemin", "max", "livemax", "sum", "livesum",
	"mostrecent", "livemostrecent",
};

static const char *kind_name(uint32_t kind)
{
	const char *s = blamer_metric_kind_name(kind);

	return s ? s : "metric";
}

/* ---- definitions ---- */

/* A gauge mode by name or number. */
static int parse_mode(PyObject *o, uint32_t *mode)
{
	uint32_t i;

	if (!o || o == Py_None) {
		*mode = BLAMER_GAUGE_ALL;
		return 0;
	}
	if (PyLong_Check(o)) {
		if (pyb_u32(o, "mode", mode) < 0)
			return -1;
		if (*mode >= 1 && *mode <= BLAMER_GAUGE_LIVEMOSTRECENT)
			return 0;
	} else if (PyUnicode_Check(o)) {
		for (i = 1; i <= BLAMER_GAUGE_LIVEMOSTRECENT; i++)
			if (PyUnicode_CompareWithASCIIString(o, mode_names[i]) == 0) {
				*mode = i;
				return 0;
			}
	}
	PyErr_Format(PyExc_ValueError,
		     "blamer: a gauge's mode is one of all, liveall, min, livemin, max, livemax, "
		     "sum, livesum, mostrecent, livemostrecent (or GAUGE_*), not %R", o);
	return -1;
}

/*
 * Label names from a sequence of str into @names (UTF-8 pointers into
 * the strs, which @keep holds as a tuple).
 */
static int parse_labels(PyObject *o, const char **names, uint32_t *n, PyObject **keep)
{
	Py_ssize_t i, len;

	*n = 0;
	*keep = PyTuple_New(0);
	if (!o || o == Py_None)
		return *keep ? 0 : -1;
	Py_CLEAR(*keep);
	if (PyUnicode_Check(o)) {
		PyErr_SetString(PyExc_TypeError,
				"blamer: labels is a sequence of names, not one str");
		return -1;
	}
	*keep = PySequence_Tuple(o);
	if (!*keep)
		return -1;
	len = PyTuple_GET_SIZE(*keep);
	if (len > BLAMER_METRIC_LABELS_MAX) {
		PyErr_Format(PyExc_ValueError, "blamer: a metric has at most %d labels, not %zd",
			     BLAMER_METRIC_LABELS_MAX, len);
		return -1;
	}
	for (i = 0; i < len; i++) {
		names[i] = pyb_utf8(PyTuple_GET_ITEM(*keep, i), "a label name", NULL);
		if (!names[i])
			return -1;
	}
	*n = (uint32_t)len;
	return 0;
}

/* Help text: at most 127 bytes of UTF-8 are kept, cut at a character. */
static const char *parse_help(PyObject *o, char *buf, size_t len)
{
	const char *s;
	Py_ssize_t n;

	if (!o || o == Py_None)
		return NULL;
	s = pyb_utf8(o, "help", &n);
	if (!s)
		return (const char *)-1;
	if ((size_t)n >= len) {
		n = (Py_ssize_t)len - 1;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;	/* not inside a character */
	}
	memcpy(buf, s, (size_t)n);
	buf[n] = '\0';
	return buf;
}

static PyObject *metric_new(pyb_Context *ctx, uint64_t epoch, struct blamer_metric_def *def,
			    PyObject *name, PyObject *labels);

static const char *const def_names[] = {
	"name", "help", "labels", "base", "per_process", "mode", "buckets", "schema", "min_exp",
	"max_exp", NULL,
};

/* Context.counter(), .gauge(), .histogram(): @kind's definition. */
static PyObject *define(pyb_Context *ctx, uint32_t kind, const char *fn, PyObject *const *args,
			Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *v[10] = { NULL }, *keep = NULL, *r = NULL, *bseq = NULL;
	uint64_t epoch = ctx->epoch;	/* the caller found it usable */
	const char *labels[BLAMER_METRIC_LABELS_MAX];
	double bounds[BLAMER_METRIC_BOUNDS_MAX];
	struct blamer_metric_def def = { 0 };
	char help[BLAMER_METRIC_HELP_MAX + 1];
	Py_ssize_t i;
	int t;

	if (pyb_parse_kw(fn, args, nargs, kwnames, def_names, 1, 3, v) < 0)
		return NULL;
	def.kind = kind;
	def.name = pyb_utf8(v[0], "a metric name", NULL);
	if (!def.name)
		return NULL;
	def.help = parse_help(v[1], help, sizeof(help));
	if (def.help == (const char *)-1)
		return NULL;
	if (parse_labels(v[2], labels, &def.nlabels, &keep) < 0)
		goto out;
	def.labels = labels;
	if (v[3] && pyb_u32(v[3], "base", &def.base) < 0)
		goto out;
	if (v[4] && (t = PyObject_IsTrue(v[4])) != 0) {
		if (t < 0)
			goto out;
		def.flags |= BLAMER_METRIC_PER_PROCESS;
	}
	if (kind != BLAMER_METRIC_GAUGE && v[5]) {
		PyErr_Format(PyExc_TypeError, "blamer: %s() takes no mode (gauges do)", fn);
		goto out;
	}
	if (kind == BLAMER_METRIC_GAUGE && parse_mode(v[5], &def.gauge_mode) < 0)
		goto out;
	if (kind != BLAMER_METRIC_HISTOGRAM && (v[6] || v[7] || v[8] || v[9])) {
		PyErr_Format(PyExc_TypeError, "blamer: %s() takes no buckets (histograms do)", fn);
		goto out;
	}
	if (kind == BLAMER_METRIC_HISTOGRAM) {
		if (v[6] && v[6] != Py_None) {
			/* a bound's __float__ runs Python code */
			bseq = pyb_tuple_of(v[6], "blamer: buckets is a sequence of numbers");
			if (!bseq)
				goto out;
			/* a last +Inf, as prometheus_client's lists end, is implied here */
			for (i = 0; i < PySequence_Fast_GET_SIZE(bseq); i++) {
				double b = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(bseq, i));

				if (b == -1 && PyErr_Occurred())
					goto out;
				if (isinf(b) && b > 0 && i == PySequence_Fast_GET_SIZE(bseq) - 1)
					break;
				if (def.nbounds == BLAMER_METRIC_BOUNDS_MAX) {
					PyErr_Format(PyExc_ValueError,
						     "blamer: a histogram has at most %d bucket bounds (or "
						     "exponential buckets: schema, min_exp, max_exp)",
						     BLAMER_METRIC_BOUNDS_MAX);
					goto out;
				}
				bounds[def.nbounds++] = b;
			}
			if (!def.nbounds) {
				PyErr_SetString(PyExc_ValueError, "blamer: buckets without a finite bound");
				goto out;
			}
			def.bounds = bounds;
		} else {
			/* exponential: Prometheus's native-histogram buckets */
			long s = 3, lo = -10, hi = 10;

			if ((v[7] && (s = PyLong_AsLong(v[7])) == -1 && PyErr_Occurred()) ||
			    (v[8] && (lo = PyLong_AsLong(v[8])) == -1 && PyErr_Occurred()) ||
			    (v[9] && (hi = PyLong_AsLong(v[9])) == -1 && PyErr_Occurred()))
				goto out;
			if (s < INT32_MIN || s > INT32_MAX || lo < INT32_MIN || lo > INT32_MAX ||
			    hi < INT32_MIN || hi > INT32_MAX) {
				PyErr_SetString(PyExc_OverflowError, "blamer: schema, min_exp, max_exp");
				goto out;
			}
			def.schema = (int32_t)s;
			def.min_exp = (int32_t)lo;
			def.max_exp = (int32_t)hi;
		}
	}
	/* the arguments' conversions may have run Python code (a labels
	 * generator, a bucket's __float__) that closed the context: a
	 * closed context's ctx->b would be the default's */
	if (pyb_handle_live(ctx, epoch))
		r = metric_new(ctx, epoch, &def, v[0], keep);
out:
	Py_XDECREF(bseq);
	Py_XDECREF(keep);
	return r;
}

PyObject *pyb_counter(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
		      PyObject *kwnames)
{
	return define(ctx, BLAMER_METRIC_COUNTER, "counter", args, nargs, kwnames);
}

PyObject *pyb_gauge(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	return define(ctx, BLAMER_METRIC_GAUGE, "gauge", args, nargs, kwnames);
}

PyObject *pyb_histogram(pyb_Context *ctx, PyObject *const *args, Py_ssize_t nargs,
			PyObject *kwnames)
{
	return define(ctx, BLAMER_METRIC_HISTOGRAM, "histogram", args, nargs, kwnames);
}

/* ---- Series ---- */

PyObject *pyb_series_new(pyb_Metric *m, PyObject *values);

static PyObject *metric_new(pyb_Context *ctx, uint64_t epoch, struct blamer_metric_def *def,
			    PyObject *name, PyObject *labels)
{
	struct blamer_metric *cm = blamer_metric_define(ctx->b, def);
	pyb_Metric *m;

	if (!cm)
		return pyb_raise(0, "blamer_metric_define");
	m = PyObject_GC_New(pyb_Metric, &pyb_MetricType);
	if (!m)
		return NULL;
	Py_INCREF(ctx);
	m->ctx = ctx;
	/* the epoch cm was made in, not ctx's now: the allocation above may
	 * have run a collection, and a __del__ closed the context (cm freed
	 * with it) */
	m->epoch = epoch;
	m->m = cm;
	m->kind = def->kind;
	m->nlabels = def->nlabels;
	m->name = Py_NewRef(name);
	m->labels = Py_NewRef(labels);
	m->unlabelled = NULL;
	PyObject_GC_Track(m);
	if (!def->nlabels) {
		PyObject *empty = PyTuple_New(0);

		m->unlabelled = empty ? pyb_series_new(m, empty) : NULL;
		Py_XDECREF(empty);
		if (!m->unlabelled) {
			Py_DECREF(m);
			return NULL;
		}
	}
	return (PyObject *)m;
}

/*
 * A label value (UTF-8 of a str: no surrogates) as every reader shows
 * it: its control characters (C0 with NUL, DEL, C1) made U+FFFD, as the
 * reader's utf8_clean() makes them. Written as given, "a\nb" and "a\tb"
 * were two series of one process that read as one label set: readers
 * summed them over processes, and an exporter's per-process view showed
 * one of them only. Cleaned, they are one series. @s itself if it has
 * none, else a copy kept in *@keep (a bytes object the caller releases).
 */
static const char *label_as_read(const char *s, Py_ssize_t n, PyObject **keep)
{
	const unsigned char *u = (const unsigned char *)s;
	Py_ssize_t i;
	char *o;

	*keep = NULL;
	for (i = 0; i < n; i++)
		if (u[i] < 0x20 || u[i] == 0x7f || (u[i] == 0xc2 && i + 1 < n && u[i + 1] < 0xa0))
			break;
	if (i == n)
		return s;
	/* at most 3 bytes for each: U+FFFD for one byte (C0, DEL) or two (C1) */
	*keep = PyBytes_FromStringAndSize(NULL, 3 * n);
	if (!*keep)
		return NULL;
	o = PyBytes_AS_STRING(*keep);
	memcpy(o, s, (size_t)i);
	o += i;
	for (; i < n; i++) {
		if (u[i] < 0x20 || u[i] == 0x7f) {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
		} else if (u[i] == 0xc2 && i + 1 < n && u[i + 1] < 0xa0) {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		} else {
			*o++ = (char)u[i];
		}
	}
	*o = '\0';
	return PyBytes_AS_STRING(*keep);
}

/* The series of @values (a tuple of str, one per label) and @path. */
static PyObject *series_of(pyb_Metric *m, PyObject *values, PyObject *path)
{
	PyObject *keep[BLAMER_METRIC_LABELS_MAX] = { NULL };
	const char *vals[BLAMER_METRIC_LABELS_MAX];
	uint64_t ids[BLAMER_SNAP_MAX_DEPTH];
	struct blamer_series *cs;
	PyObject *seq = NULL;
	Py_ssize_t i, n = PyTuple_GET_SIZE(values), depth = 0;
	pyb_Series *s;

	if ((uint32_t)n != m->nlabels)
		return PyErr_Format(PyExc_ValueError, "blamer: %U has %u labels, %zd values given",
				    m->name, (unsigned)m->nlabels, n);
	for (i = 0; i < n; i++) {
		Py_ssize_t len;

		/* a NUL too becomes U+FFFD: any str is a label value, as in
		 * prometheus_client, whose labels() takes what a request had */
		vals[i] = pyb_utf8_any(PyTuple_GET_ITEM(values, i), "a label value", &len);
		if (vals[i])
			vals[i] = label_as_read(vals[i], len, &keep[i]);
		if (!vals[i])
			goto fail;
	}
	if (path && path != Py_None) {
		seq = PySequence_Fast(path, "blamer: a path is a sequence of nodes");
		if (!seq)
			goto fail;
		depth = PySequence_Fast_GET_SIZE(seq);
		if (depth < 1 || depth > BLAMER_SNAP_MAX_DEPTH) {
			Py_DECREF(seq);
			PyErr_Format(PyExc_ValueError, "blamer: a path has 1 to %d nodes",
				     BLAMER_SNAP_MAX_DEPTH);
			goto fail;
		}
		for (i = 0; i < depth; i++)
			if (pyb_node_id(PySequence_Fast_GET_ITEM(seq, i), &ids[i]) < 0) {
				Py_DECREF(seq);
				goto fail;
			}
		Py_DECREF(seq);
	}
	/* Checked after the path is converted: a path given as a generator
	 * runs Python code, which may close the context (m->m freed) or
	 * reset the default. */
	if (!pyb_handle_live(m->ctx, m->epoch))
		goto fail;
	cs = blamer_metric_series(m->m, n ? vals : NULL, depth ? ids : NULL, (unsigned)depth);
	for (i = 0; i < n; i++)
		Py_CLEAR(keep[i]);
	if (!cs)
		return pyb_raise(0, "blamer_metric_series");
	s = PyObject_GC_New(pyb_Series, &pyb_SeriesType);
	if (!s)
		return NULL;
	Py_INCREF(m);
	s->metric = (PyObject *)m;
	Py_INCREF(m->ctx);
	s->ctx = m->ctx;
	s->epoch = m->epoch;
	s->s = cs;
	s->kind = m->kind;
	PyObject_GC_Track(s);
	return (PyObject *)s;
fail:
	for (i = 0; i < n; i++)
		Py_XDECREF(keep[i]);
	return NULL;
}

PyObject *pyb_series_new(pyb_Metric *m, PyObject *values)
{
	return series_of(m, values, NULL);
}

static PyObject *metric_labels(pyb_Metric *m, PyObject *const *args, Py_ssize_t nargs,
			       PyObject *kwnames)
{
	PyObject *values, *path = NULL, *r;

	if (kwnames) {
		Py_ssize_t i, nkw = PyTuple_GET_SIZE(kwnames);

		for (i = 0; i < nkw; i++) {
			if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "path")) {
				PyErr_Format(PyExc_TypeError,
					     "labels() takes label values and path=, not %R",
					     PyTuple_GET_ITEM(kwnames, i));
				return NULL;
			}
			path = args[nargs + i];
		}
	}
	values = PyTuple_New(nargs);
	if (!values)
		return NULL;
	for (Py_ssize_t i = 0; i < nargs; i++) {
		PyObject *s = PyUnicode_Check(args[i]) ? Py_NewRef(args[i]) : PyObject_Str(args[i]);

		if (!s) {
			Py_DECREF(values);
			return NULL;
		}
		PyTuple_SET_ITEM(values, i, s);
	}
	r = series_of(m, values, path);
	Py_DECREF(values);
	return r;
}

/* The unlabelled metric's writes go to its one series. */
static PyObject *the_series(pyb_Metric *m)
{
	if (m->unlabelled)
		return m->unlabelled;
	PyErr_Format(PyExc_ValueError, "blamer: %U has labels: write through labels(...)",
		     m->name);
	return NULL;
}

#define FORWARD(method)                                                              \
	static PyObject *metric_##method(pyb_Metric *m, PyObject *const *args,        \
					 Py_ssize_t nargs)                           \
	{                                                                            \
		PyObject *s = the_series(m);                                         \
		return s ? pyb_series_##method((pyb_Series *)s, args, nargs) : NULL; \
	}
FORWARD(inc)
FORWARD(dec)
FORWARD(set)
FORWARD(observe)
#undef FORWARD

/* A metric without labels and its one series refer to each other: the
 * cycle collector frees them. */
static int metric_traverse(pyb_Metric *m, visitproc visit, void *arg)
{
	Py_VISIT(m->unlabelled);
	return 0;
}

static int metric_clear(pyb_Metric *m)
{
	Py_CLEAR(m->unlabelled);
	return 0;
}

static void metric_dealloc(pyb_Metric *m)
{
	PyObject_GC_UnTrack(m);
	Py_XDECREF(m->unlabelled);
	Py_XDECREF(m->labels);
	Py_XDECREF(m->name);
	Py_DECREF(m->ctx);
	PyObject_GC_Del(m);
}

static PyObject *metric_repr(pyb_Metric *m)
{
	return PyUnicode_FromFormat("<blamer.Metric %s %R labels=%R>", kind_name(m->kind), m->name,
				    m->labels);
}

static PyObject *metric_get_name(pyb_Metric *m, void *unused)
{
	(void)unused;
	return Py_NewRef(m->name);
}

static PyObject *metric_get_labels(pyb_Metric *m, void *unused)
{
	(void)unused;
	return Py_NewRef(m->labels);
}

static PyObject *metric_get_kind(pyb_Metric *m, void *unused)
{
	(void)unused;
	return PyUnicode_FromString(kind_name(m->kind));
}

static PyGetSetDef metric_getset[] = {
	{ "name", (getter)metric_get_name, NULL, "its name", NULL },
	{ "labels", (getter)metric_get_labels, NULL, "its label names", NULL },
	{ "kind", (getter)metric_get_kind, NULL, "'counter', 'gauge' or 'histogram'", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef metric_methods[] = {
	{ "labels", (PyCFunction)(void (*)(void))metric_labels, METH_FASTCALL | METH_KEYWORDS,
	  "labels(*values, path=None) -> Series\n\n"
	  "The series of these label values (one per label name; not str: str()\n"
	  "of it) and, if given, DAG path (nodes by name or id, root first).\n"
	  "Keep it: asking again costs a hash lookup." },
	{ "inc", (PyCFunction)(void (*)(void))metric_inc, METH_FASTCALL,
	  "inc(amount=1)\n\nSeries.inc() of a metric without labels." },
	{ "dec", (PyCFunction)(void (*)(void))metric_dec, METH_FASTCALL,
	  "dec(amount=1)\n\nSeries.dec() of a gauge without labels." },
	{ "set", (PyCFunction)(void (*)(void))metric_set, METH_FASTCALL,
	  "set(value)\n\nSeries.set() of a gauge without labels." },
	{ "observe", (PyCFunction)(void (*)(void))metric_observe, METH_FASTCALL,
	  "observe(value)\n\nSeries.observe() of a histogram without labels." },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pyb_MetricType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "blamer.Metric",
	.tp_basicsize = sizeof(pyb_Metric),
	.tp_dealloc = (destructor)metric_dealloc,
	.tp_repr = (reprfunc)metric_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_traverse = (traverseproc)metric_traverse,
	.tp_clear = (inquiry)metric_clear,
	.tp_doc = "A metric of this process's heap (Context.counter(), .gauge(), .histogram()).\n"
		  "labels(...) gives a Series to write; a metric without labels is written\n"
		  "directly. Readers merge the series of every process, live and dead\n"
		  "(`blamer export`, Snapshot.series).",
	.tp_methods = metric_methods,
	.tp_getset = metric_getset,
};

/* ---- the writes ---- */

/* The number argument of a write: @def if none; NaN refused. */
static int amount(PyObject *const *args, Py_ssize_t nargs, double def, const char *fn,
		  double *out)
{
	if (nargs > 1) {
		PyErr_Format(PyExc_TypeError, "%s() takes at most 1 argument", fn);
		return -1;
	}
	if (nargs == 0) {
		if (isnan(def)) {
			PyErr_Format(PyExc_TypeError, "%s() takes a value", fn);
			return -1;
		}
		*out = def;
		return 0;
	}
	*out = PyFloat_AsDouble(args[0]);
	if (*out == -1 && PyErr_Occurred())
		return -1;
	if (isnan(*out)) {
		PyErr_Format(PyExc_ValueError, "blamer: %s(NaN)", fn);
		return -1;
	}
	return 0;
}

static bool kind_is(pyb_Series *s, uint32_t k1, uint32_t k2, const char *fn)
{
	if (s->kind == k1 || s->kind == k2)
		return pyb_handle_live(s->ctx, s->epoch);
	PyErr_Format(PyExc_TypeError, "blamer: %s() is not a %s's", fn, kind_name(s->kind));
	return false;
}

PyObject *pyb_series_inc(pyb_Series *s, PyObject *const *args, Py_ssize_t nargs)
{
	double d;

	if (amount(args, nargs, 1, "inc", &d) < 0 ||
	    !kind_is(s, BLAMER_METRIC_COUNTER, BLAMER_METRIC_GAUGE, "inc"))
		return NULL;
	if (s->kind == BLAMER_METRIC_COUNTER) {
		if (d < 0)
			return PyErr_Format(PyExc_ValueError,
					    "blamer: a counter only goes up (inc(%R))", args[0]);
		if (isinf(d))
			return PyErr_Format(PyExc_ValueError,
					    "blamer: a counter's sum stays finite (inc(%R))", args[0]);
		blamer_counter_add(s->s, d);
	} else {
		blamer_gauge_add(s->s, d);
	}
	Py_RETURN_NONE;
}

PyObject *pyb_series_dec(pyb_Series *s, PyObject *const *args, Py_ssize_t nargs)
{
	double d;

	if (amount(args, nargs, 1, "dec", &d) < 0 ||
	    !kind_is(s, BLAMER_METRIC_GAUGE, BLAMER_METRIC_GAUGE, "dec"))
		return NULL;
	blamer_gauge_add(s->s, -d);
	Py_RETURN_NONE;
}

PyObject *pyb_series_set(pyb_Series *s, PyObject *const *args, Py_ssize_t nargs)
{
	double d;

	if (amount(args, nargs, NAN, "set", &d) < 0 ||
	    !kind_is(s, BLAMER_METRIC_GAUGE, BLAMER_METRIC_GAUGE, "set"))
		return NULL;
	blamer_gauge_set(s->s, d);
	Py_RETURN_NONE;
}

PyObject *pyb_series_observe(pyb_Series *s, PyObject *const *args, Py_ssize_t nargs)
{
	double d;

	if (amount(args, nargs, NAN, "observe", &d) < 0 ||
	    !kind_is(s, BLAMER_METRIC_HISTOGRAM, BLAMER_METRIC_HISTOGRAM, "observe"))
		return NULL;
	if (isinf(d))
		return PyErr_Format(PyExc_ValueError,
				    "blamer: a histogram's sum stays finite (observe(%R))", args[0]);
	blamer_histogram_observe(s->s, d);
	Py_RETURN_NONE;
}

static int series_traverse(pyb_Series *s, visitproc visit, void *arg)
{
	Py_VISIT(s->metric);
	return 0;
}

static int series_clear(pyb_Series *s)
{
	/* the metric's C handle outlives it (its context's), so may its writes */
	Py_CLEAR(s->metric);
	return 0;
}

static void series_dealloc(pyb_Series *s)
{
	PyObject_GC_UnTrack(s);
	Py_XDECREF(s->metric);
	Py_DECREF(s->ctx);
	PyObject_GC_Del(s);
}

static PyObject *series_get_metric(pyb_Series *s, void *unused)
{
	(void)unused;
	return Py_NewRef(s->metric ? s->metric : Py_None);
}

static PyObject *series_repr(pyb_Series *s)
{
	if (!s->metric)
		return PyUnicode_FromString("<blamer.Series>");
	return PyUnicode_FromFormat("<blamer.Series of %R>", ((pyb_Metric *)s->metric)->name);
}

static PyGetSetDef series_getset[] = {
	{ "metric", (getter)series_get_metric, NULL, "its Metric", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef series_methods[] = {
	{ "inc", (PyCFunction)(void (*)(void))pyb_series_inc, METH_FASTCALL,
	  "inc(amount=1)\n\nAdds @amount: to a counter (>= 0), or a gauge (atomic)." },
	{ "dec", (PyCFunction)(void (*)(void))pyb_series_dec, METH_FASTCALL,
	  "dec(amount=1)\n\nSubtracts @amount from a gauge (atomic)." },
	{ "set", (PyCFunction)(void (*)(void))pyb_series_set, METH_FASTCALL,
	  "set(value)\n\nSets a gauge (a mostrecent gauge also records when)." },
	{ "observe", (PyCFunction)(void (*)(void))pyb_series_observe, METH_FASTCALL,
	  "observe(value)\n\nCounts @value in a histogram's bucket and adds it to its sum." },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pyb_SeriesType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "blamer.Series",
	.tp_basicsize = sizeof(pyb_Series),
	.tp_dealloc = (destructor)series_dealloc,
	.tp_repr = (reprfunc)series_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_traverse = (traverseproc)series_traverse,
	.tp_clear = (inquiry)series_clear,
	.tp_doc = "One series of a Metric (Metric.labels()): its writes are lock-free, make\n"
		  "no system call and are exact from any number of threads; in a fork\n"
		  "child they write the child's own heap, its series starting at zero.",
	.tp_methods = series_methods,
	.tp_getset = series_getset,
};
