// SPDX-License-Identifier: MIT
/*
 * Snapshot: a C snapshot (blamer_reader_snapshot()) as Python objects.
 * The Snapshot keeps the C one (for the exporters) and makes its
 * processes, totals and tree as Python objects the first time they are
 * asked for: a collector that wants one part pays for that part.
 * Records are struct sequences (named, immutable tuples; help() lists
 * their fields).
 *
 * Everything here comes from heaps, so from other processes: the reader
 * checked and bounded it and made names, labels and log text printable
 * ASCII (rd_sanitize()); string fields' values are the writer's bytes,
 * decoded as UTF-8 with invalid bytes replaced, and are text a script
 * must escape before it prints them to a terminal.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pyblamer.h"

typedef struct {
	PyObject_HEAD
	struct blamer_snapshot *s;
	PyObject *procs, *totals, *tree, *nodes, *unit_defs, *skipped, *series, *roles;
					/* made on first use */
	PyObject *defs;			/* {address: MetricDef}, shared by those */
	bool changing;			/* a fold is changing s (without the GIL) */
} pyb_Snapshot;

/* The C snapshot may be read (no fold is changing it); else RuntimeError. */
static bool snap_ok(pyb_Snapshot *o)
{
	if (!o->changing)
		return true;
	PyErr_SetString(PyExc_RuntimeError, "blamer: the snapshot is being folded");
	return false;
}

PyTypeObject pyb_ProcessType;
static PyTypeObject ThreadType, FrameType, FieldType, ModuleType, LogType,
	ChildType, NodeType, EdgeType, PathRecType, TotalType, UnitDefType, TreeNodeType,
	SkippedType, ParentClaimType, MetricDefType, ProcMetricType, MetricSeriesType, RoleType;

#define F(name, doc) { name, doc }
static PyStructSequence_Field process_fields[] = {
	F("pid", "its pid (0: not visible in this pid namespace)"),
	F("uid", "its user"),
	F("comm", "its command name"),
	F("start_time_ns", "its start, ns since boot (with the pid: who it was)"),
	F("live", "whether it runs"),
	F("kernel_facts", "whether the facts below come from the kernel (device backend)"),
	F("exited", "exit_code and exit_signal are valid"),
	F("coredump", "it dumped core"),
	F("exit_code", "its exit code"),
	F("exit_signal", "the signal that ended it, 0 if none"),
	F("create_time_ns", "device: when its heap was made (CLOCK_BOOTTIME)"),
	F("orphan_time_ns", "device: when it died (CLOCK_BOOTTIME)"),
	F("last_seen_ns", "dir, dead: CLOCK_REALTIME of its last sign of life, 0 if unknown"),
	F("heap_key", "the heap's key (device: file serial; dir: a hash)"),
	F("slab_ids", "its slabs (kernel ids or file indexes)"),
	F("size", "bytes of its slabs"),
	F("used", "bytes allocated in them"),
	F("health", "how much could be read: 'ok', 'corrupt', 'torn', ..."),
	F("problem", "the first problem found, '' if none"),
	F("torn_records", "records that kept changing while read"),
	F("heap_state", "'uninit', 'ready' or 'deleted' (closed cleanly)"),
	F("heap_flags", "HEAP_F_* (CORRUPT, FULL)"),
	F("heap_create_time_ns", "when the heap was made, as it says"),
	F("rec_pid", "the pid its process record names"),
	F("phase", "PHASE_* or the application's own"),
	F("phase_name", "the phase as text"),
	F("cmdline", "its arguments joined by spaces"),
	F("role", "blamer_set_role()'s role, '' if none"),
	F("instance", "blamer_set_role()'s instance, '' if none"),
	F("user_data", "DATA_PROCESS fields: {name: Field}"),
	F("global_data", "DATA_GLOBAL fields: {name: Field}"),
	F("threads", "[Thread]"),
	F("modules", "[Module]"),
	F("logs", "[LogEntry], oldest first"),
	F("children", "[Child] it launched"),
	F("nodes", "[Node] it described"),
	F("edges", "[Edge] it described"),
	F("paths", "[MeasuredPath] it measured"),
	F("drops", "{reason: count} of writes not recorded in full"),
	F("dropped", "their sum"),
	F("parent_claim", "dir backend: ParentClaim (how its parent says it ended) or None"),
	F("heap_id", "its heap's random id: with pid and start time, who it is"),
	F("metrics", "[ProcessMetric]: its own series of its metrics"),
	F("busy_threads", "threads inside an activity (stack depth > 0)"),
	{ NULL, NULL },
};
static PyStructSequence_Field metricdef_fields[] = {
	F("name", "the metric's name"), F("help", "its help text (the writer's)"),
	F("kind", "'counter', 'gauge' or 'histogram'"),
	F("base", "'', 'seconds' or 'bytes': what its values are in"),
	F("mode", "gauges: how they merge ('all', 'livesum', ...); else ''"),
	F("per_process", "exported per process only"),
	F("labels", "its label names"),
	F("buckets", "histograms: the buckets' upper bounds ('le'), the last inf; else ()"),
	F("layout", "histograms: 'fixed' or 'exponential'; else ''"),
	F("schema", "exponential histograms: the schema"),
	F("min_exp", "exponential histograms: the window's lower power of 2"),
	F("max_exp", "exponential histograms: its upper power of 2"), { NULL, NULL },
};
static PyStructSequence_Field procmetric_fields[] = {
	F("name", "the metric's name"), F("definition", "its MetricDef, as its heap gives it"),
	F("labels", "{label name: value} (values made valid UTF-8 by the reader)"),
	F("cut", "the writer cut the label values it was given"),
	F("conflict", "its heap defines the name otherwise than the snapshot does: not merged"),
	F("path", "its DAG path (node ids), () if none"),
	F("value", "counter: the sum; gauge: the value; histogram: the sum"),
	F("exact", "counters, histograms: partials whose exact sum is value"),
	F("stamp_ns", "mostrecent gauges: CLOCK_REALTIME of the last set, else 0"),
	F("count", "histograms: observations"),
	F("buckets", "histograms: counts per bucket (not cumulative)"), { NULL, NULL },
};
static PyStructSequence_Field series_fields[] = {
	F("name", "the metric's name"), F("definition", "the MetricDef of its name"),
	F("labels", "{label name: value}"), F("path", "its DAG path (node ids), () if none"),
	F("uid", "the user whose processes it merges"),
	F("pid", "a series per process (all, liveall, per_process): its pid; else None"),
	F("process", "a series per process: its index in Snapshot.processes; else None"),
	F("nprocs", "processes merged"), F("nlive", "of which live"),
	F("value", "counter: the sum; gauge: the merged value; histogram: the sum"),
	F("exact", "counters, histograms: partials whose exact sum is value"),
	F("stamp_ns", "mostrecent gauges: CLOCK_REALTIME of the value's set"),
	F("count", "histograms: observations"),
	F("buckets", "histograms: counts per bucket (not cumulative)"), { NULL, NULL },
};
static PyStructSequence_Field role_fields[] = {
	F("role", "the role ('' none)"), F("live", "live processes"), F("dead", "dead ones"),
	F("threads", "threads of the live ones"), F("busy", "of which inside an activity"),
	{ NULL, NULL },
};
static PyStructSequence_Field thread_fields[] = {
	F("tid", "thread id"), F("name", "its name"),
	F("start_time_ns", "when it registered"),
	F("depth", "stack depth as it reports it (may exceed len(stack))"),
	F("stack_slots", "slots of its stack"),
	F("overflows", "pushes past its slots"),
	F("torn", "the stack kept changing while read: stack empty"),
	F("stack", "[Frame], bottom first"), { NULL, NULL },
};
static PyStructSequence_Field frame_fields[] = {
	F("label", "the activity's label"), F("kind", "ACTIVITY_*"),
	F("kind_name", "the kind as text"),
	F("time_ns", "CLOCK_MONOTONIC at its push, 0 if unknown"),
	F("calling_address", "where it was pushed from"),
	F("data", "its two words of data"),
	F("fields", "its DATA_ACTIVITY fields: {name: Field}"),
	F("label_cut", "the writer's label was longer"), { NULL, NULL },
};
static PyStructSequence_Field field_fields[] = {
	F("name", "the field's name"),
	F("type", "'bool', 'char', 'int', 'uint', 'double', 'string', 'raw', "
		  "'string_ref', 'raw_ref'"),
	F("value", "bool, str, int, float or bytes; a *_ref's address; None if torn"),
	F("cut", "a string or raw value set was longer than the field"),
	F("torn", "the value kept changing while read"),
	F("ref_size", "a *_ref's size"), { NULL, NULL },
};
static PyStructSequence_Field module_fields[] = {
	F("path", "the shared object"), F("base", "its load address"), F("size", "its size"),
	F("build_id", "its GNU build ID (bytes)"), F("loaded", "still loaded"), { NULL, NULL },
};
static PyStructSequence_Field log_fields[] = {
	F("number", "its sequence number"), F("time_ns", "CLOCK_REALTIME"),
	F("text", "the message"), { NULL, NULL },
};
static PyStructSequence_Field child_fields[] = {
	F("pid", "the child's pid"), F("launch_time_ns", "when it was launched"),
	F("exit_time_ns", "when it exited"), F("exit_status", "its wait status"),
	F("state", "'running' or 'exited'"),
	F("start_time_ns", "its start as the parent read it, 0 if unknown"), { NULL, NULL },
};
static PyStructSequence_Field node_fields[] = {
	F("id", "its id"), F("type", "the application's type number"), F("name", "its name"),
	{ NULL, NULL },
};
static PyStructSequence_Field edge_fields[] = {
	F("parent", "parent id"), F("child", "child id"), { NULL, NULL },
};
static PyStructSequence_Field pathrec_fields[] = {
	F("nodes", "node ids, root first"), F("values", "{unit: value}"), { NULL, NULL },
};
static PyStructSequence_Field total_fields[] = {
	F("nodes", "node ids, root first"), F("unit", "the unit"),
	F("value", "summed over every process"), F("nprocs", "processes contributing"),
	{ NULL, NULL },
};
static PyStructSequence_Field unitdef_fields[] = {
	F("unit", "the unit (>= UNIT_APP_BASE)"), F("base", "BASE_*"), F("name", "its name"),
	{ NULL, NULL },
};
static PyStructSequence_Field treenode_fields[] = {
	F("nodes", "node ids, root first"),
	F("walked", "some process measured exactly this path"),
	F("nprocs", "processes that measured it or a path below it"),
	F("end", "index past its subtree in Snapshot.tree"),
	F("self", "{unit: value} measured on exactly this path"),
	F("inclusive", "{unit: value} on it and every path below"), { NULL, NULL },
};
static PyStructSequence_Field skipped_fields[] = {
	F("name", "the directory entry (printable, cut)"), F("why", "why it was not read"),
	{ NULL, NULL },
};
static PyStructSequence_Field claim_fields[] = {
	F("wait_status", "as from waitpid()"), F("pid", "the parent"),
	F("exit_time_ns", "CLOCK_REALTIME"), { NULL, NULL },
};
#undef F

#define DESC(var, name, doc, fields)                                                    \
	static PyStructSequence_Desc var = { "blamer." name, doc, fields,                \
					     sizeof(fields) / sizeof(fields[0]) - 1 }
DESC(process_desc, "Process", "A heap and the process that wrote it, as read.", process_fields);
DESC(thread_desc, "Thread", "A thread of a process and its activity stack.", thread_fields);
DESC(frame_desc, "Frame", "An activity on a thread's stack.", frame_fields);
DESC(field_desc, "Field", "A user-data field.", field_fields);
DESC(module_desc, "Module", "A shared object a process loaded.", module_fields);
DESC(log_desc, "LogEntry", "A message of a process's log ring.", log_fields);
DESC(child_desc, "Child", "A child a process launched.", child_fields);
DESC(node_desc, "Node", "A DAG node.", node_fields);
DESC(edge_desc, "Edge", "A DAG edge.", edge_fields);
DESC(pathrec_desc, "MeasuredPath", "A DAG path a process measured.", pathrec_fields);
DESC(total_desc, "Total", "A (path, unit) total over every process.", total_fields);
DESC(unitdef_desc, "UnitDef", "An application unit's name, as a heap gives it.",
     unitdef_fields);
DESC(treenode_desc, "TreeNode", "A node of the inclusive attribution tree.", treenode_fields);
DESC(skipped_desc, "Skipped", "A directory entry the dir backend did not read.",
     skipped_fields);
DESC(claim_desc, "ParentClaim", "How a dead process's parent says it ended (a claim).",
     claim_fields);
DESC(metricdef_desc, "MetricDef", "A metric's definition, as a heap gives it.", metricdef_fields);
DESC(procmetric_desc, "ProcessMetric", "A series of a metric, as one process wrote it.",
     procmetric_fields);
DESC(series_desc, "MetricSeries",
     "A metric's series merged over the snapshot's processes (Snapshot.series).", series_fields);
DESC(role_desc, "Role", "The processes of one role.", role_fields);
#undef DESC

/*
 * A struct sequence of @type from @n new references (which it steals);
 * NULL if any of them is (an exception is set), the others released.
 */
static PyObject *mkseq(PyTypeObject *type, int n, ...)
{
	PyObject *r = PyStructSequence_New(type);
	bool bad = !r;
	va_list ap;
	int i;

	va_start(ap, n);
	for (i = 0; i < n; i++) {
		PyObject *o = va_arg(ap, PyObject *);

		if (!o)
			bad = true;
		if (r)
			PyStructSequence_SET_ITEM(r, i, o);	/* NULLs are fine in a dealloc */
		else
			Py_XDECREF(o);
	}
	va_end(ap);
	if (r && !bad && Py_SIZE(r) != n) {	/* a field list and its maker disagree */
		PyErr_Format(PyExc_SystemError, "blamer: %s made with %d of %zd fields",
			     type->tp_name, n, Py_SIZE(r));
		bad = true;
	}
	if (bad) {
		Py_XDECREF(r);
		return NULL;
	}
	return r;
}

#define U64(v) PyLong_FromUnsignedLongLong(v)
#define I64(v) PyLong_FromLongLong(v)
#define BOOL(v) PyBool_FromLong(v)

static PyObject *ids_tuple(const uint64_t *ids, uint32_t n)
{
	PyObject *t;
	uint32_t i;

	if (n > BLAMER_SNAP_MAX_DEPTH)
		n = BLAMER_SNAP_MAX_DEPTH;
	t = PyTuple_New(n);
	for (i = 0; t && i < n; i++) {
		PyObject *o = U64(ids[i]);

		if (!o) {
			Py_CLEAR(t);
			break;
		}
		PyTuple_SET_ITEM(t, i, o);
	}
	return t;
}

/* {unit: value} from parallel arrays. */
static PyObject *unit_dict(const uint32_t *units, const uint64_t *values, size_t n)
{
	PyObject *d = PyDict_New();
	size_t i;

	for (i = 0; d && i < n; i++) {
		PyObject *k = PyLong_FromUnsignedLong(units[i]), *v = U64(values[i]);

		if (!k || !v || PyDict_SetItem(d, k, v) < 0)
			Py_CLEAR(d);
		Py_XDECREF(k);
		Py_XDECREF(v);
	}
	return d;
}

static const char *field_type_str(uint32_t type)
{
	switch (type) {
	case BLAMER_FIELD_RAW: return "raw";
	case BLAMER_FIELD_RAW_REF: return "raw_ref";
	case BLAMER_FIELD_STRING: return "string";
	case BLAMER_FIELD_STRING_REF: return "string_ref";
	case BLAMER_FIELD_CHAR: return "char";
	case BLAMER_FIELD_BOOL: return "bool";
	case BLAMER_FIELD_SIGNED: return "int";
	case BLAMER_FIELD_UNSIGNED: return "uint";
	case BLAMER_FIELD_DOUBLE: return "double";
	}
	return "unknown";
}

static PyObject *field_value(const struct blamer_snap_field *f)
{
	if (f->torn)
		Py_RETURN_NONE;
	switch (f->type) {
	case BLAMER_FIELD_RAW:
		return PyBytes_FromStringAndSize((const char *)f->bytes, (Py_ssize_t)f->len);
	case BLAMER_FIELD_STRING:
		return pyb_text(f->bytes, f->len);
	case BLAMER_FIELD_CHAR: {
		char c = (char)f->u;

		return PyUnicode_DecodeLatin1(&c, 1, NULL);
	}
	case BLAMER_FIELD_BOOL:
		return BOOL(f->u != 0);
	case BLAMER_FIELD_SIGNED:
		return I64(f->i);
	case BLAMER_FIELD_DOUBLE:
		return PyFloat_FromDouble(f->d);
	default:	/* UNSIGNED, *_REF (the address) */
		return U64(f->u);
	}
}

static PyObject *fields_dict(const struct blamer_snap_fields *fs)
{
	PyObject *d = PyDict_New();
	size_t i;

	for (i = 0; d && i < fs->n; i++) {
		const struct blamer_snap_field *f = &fs->v[i];
		PyObject *k = pyb_str(f->name ? f->name : "");
		PyObject *v = k ? mkseq(&FieldType, 6, Py_NewRef(k),
					PyUnicode_FromString(field_type_str(f->type)),
					field_value(f), BOOL(f->cut), BOOL(f->torn),
					U64(f->ref_size)) : NULL;

		if (!v || PyDict_SetItem(d, k, v) < 0)
			Py_CLEAR(d);
		Py_XDECREF(k);
		Py_XDECREF(v);
	}
	return d;
}

/* A list of @n items made by @make(item i). */
static PyObject *list_of(const void *base, size_t n, size_t elsz,
			 PyObject *(*make)(const void *item, const void *arg), const void *arg)
{
	PyObject *l = PyList_New((Py_ssize_t)n);
	size_t i;

	for (i = 0; l && i < n; i++) {
		PyObject *o = make((const char *)base + i * elsz, arg);

		if (!o) {
			Py_CLEAR(l);
			break;
		}
		PyList_SET_ITEM(l, (Py_ssize_t)i, o);
	}
	return l;
}

static PyObject *make_frame(const void *item, const void *arg)
{
	const struct blamer_snap_activity *a = item;
	const char *kn = blamer_activity_kind_name(a->kind);

	(void)arg;
	return mkseq(&FrameType, 8, pyb_str(a->label), PyLong_FromUnsignedLong(a->kind),
		     PyUnicode_FromString(kn ? kn : "unknown"), U64(a->time_ns),
		     U64(a->calling_address), Py_BuildValue("(KK)", a->data[0], a->data[1]),
		     fields_dict(&a->fields), BOOL(a->label_cut));
}

static PyObject *make_thread(const void *item, const void *arg)
{
	const struct blamer_snap_thread *t = item;

	(void)arg;
	return mkseq(&ThreadType, 8, I64(t->tid), pyb_str(t->name), U64(t->start_time_ns),
		     PyLong_FromUnsignedLong(t->depth), PyLong_FromUnsignedLong(t->stack_slots),
		     PyLong_FromUnsignedLong(t->overflows), BOOL(t->torn),
		     list_of(t->acts, t->nacts, sizeof(t->acts[0]), make_frame, NULL));
}

static PyObject *make_module(const void *item, const void *arg)
{
	const struct blamer_snap_module *m = item;
	uint32_t n = m->build_id_len < sizeof(m->build_id) ? m->build_id_len : sizeof(m->build_id);

	(void)arg;
	return mkseq(&ModuleType, 5, pyb_str(m->path), U64(m->base), U64(m->size),
		     PyBytes_FromStringAndSize((const char *)m->build_id, n), BOOL(m->loaded));
}

static PyObject *make_log(const void *item, const void *arg)
{
	const struct blamer_snap_log *l = item;

	(void)arg;
	return mkseq(&LogType, 3, U64(l->number), U64(l->time_ns), pyb_str(l->text));
}

static PyObject *make_child(const void *item, const void *arg)
{
	const struct blamer_snap_child *c = item;

	(void)arg;
	return mkseq(&ChildType, 6, I64(c->pid), U64(c->launch_time_ns), U64(c->exit_time_ns),
		     PyLong_FromLong(c->exit_status),
		     PyUnicode_FromString(c->state == BLAMER_CHILD_EXITED ? "exited" : "running"),
		     U64(c->start_time_ns));
}

static PyObject *make_node(const void *item, const void *arg)
{
	const struct blamer_snap_node *n = item;

	(void)arg;
	return mkseq(&NodeType, 3, U64(n->id), PyLong_FromUnsignedLong(n->type), pyb_str(n->name));
}

static PyObject *make_edge(const void *item, const void *arg)
{
	const struct blamer_snap_edge *e = item;

	(void)arg;
	return mkseq(&EdgeType, 2, U64(e->parent), U64(e->child));
}

static PyObject *make_pathrec(const void *item, const void *arg)
{
	const struct blamer_snap_path *p = item;
	uint32_t n = p->nvalues < BLAMER_SNAP_MAX_UNITS ? p->nvalues : BLAMER_SNAP_MAX_UNITS;

	(void)arg;
	return mkseq(&PathRecType, 2, ids_tuple(p->nodes, p->depth),
		     unit_dict(p->units, p->values, n));
}

static PyObject *drops_dict(const struct blamer_snap_process *p)
{
	PyObject *d = PyDict_New();
	uint32_t r;

	for (r = 0; d && r < BLAMER_DROP_MAX; r++) {
		const char *name = blamer_drop_reason_name(r);
		char buf[32];
		PyObject *v;

		if (!p->drops[r])
			continue;
		if (!name) {	/* a reason newer than this library */
			snprintf(buf, sizeof(buf), "reason%u", (unsigned)r);
			name = buf;
		}
		v = U64(p->drops[r]);
		if (!v || PyDict_SetItemString(d, name, v) < 0)
			Py_CLEAR(d);
		Py_XDECREF(v);
	}
	return d;
}

static PyObject *doubles_tuple(const double *v, size_t n)
{
	PyObject *t = PyTuple_New((Py_ssize_t)(v ? n : 0));
	size_t i;

	for (i = 0; t && v && i < n; i++) {
		PyObject *o = PyFloat_FromDouble(v[i]);

		if (!o) {
			Py_CLEAR(t);
			break;
		}
		PyTuple_SET_ITEM(t, (Py_ssize_t)i, o);
	}
	return t;
}

static PyObject *counts_tuple(const uint64_t *v, size_t n)
{
	PyObject *t = PyTuple_New((Py_ssize_t)(v ? n : 0));
	size_t i;

	for (i = 0; t && v && i < n; i++) {
		PyObject *o = U64(v[i]);

		if (!o) {
			Py_CLEAR(t);
			break;
		}
		PyTuple_SET_ITEM(t, (Py_ssize_t)i, o);
	}
	return t;
}

static PyObject *make_metric_def(const struct blamer_snap_metric_def *d)
{
	uint32_t nl = d->nlabels < BLAMER_METRIC_LABELS_MAX ? d->nlabels : BLAMER_METRIC_LABELS_MAX;
	bool hist = d->kind == BLAMER_METRIC_HISTOGRAM;
	PyObject *labels = PyTuple_New(nl);
	uint32_t i;

	for (i = 0; labels && i < nl; i++) {
		PyObject *o = pyb_str(d->labels[i] ? d->labels[i] : "");

		if (!o) {
			Py_CLEAR(labels);
			break;
		}
		PyTuple_SET_ITEM(labels, i, o);
	}
	return mkseq(&MetricDefType, 12, pyb_str(d->name),
		     d->help ? pyb_text((const uint8_t *)d->help, strlen(d->help)) : pyb_str(""),
		     PyUnicode_FromString(blamer_metric_kind_name(d->kind)),
		     PyUnicode_FromString(blamer_base_name(d->base)),
		     PyUnicode_FromString(d->kind == BLAMER_METRIC_GAUGE ?
					  blamer_gauge_mode_name(d->gauge_mode) : ""),
		     BOOL(d->flags & BLAMER_METRIC_PER_PROCESS), labels,
		     doubles_tuple(hist ? d->upper : NULL, d->nbuckets),
		     PyUnicode_FromString(!hist ? "" : d->layout == BLAMER_HIST_FIXED ? "fixed" :
					  "exponential"),
		     PyLong_FromLong(d->schema), PyLong_FromLong(d->min_exp),
		     PyLong_FromLong(d->max_exp));
}

/* The MetricDef object of @d, one per definition: @cache maps its address. */
static PyObject *def_object(PyObject *cache, const struct blamer_snap_metric_def *d)
{
	PyObject *k = PyLong_FromVoidPtr((void *)d), *o;

	if (!k)
		return NULL;
	o = PyDict_GetItemWithError(cache, k);
	if (o) {
		Py_DECREF(k);
		return Py_NewRef(o);
	}
	if (PyErr_Occurred() || !(o = make_metric_def(d)) || PyDict_SetItem(cache, k, o) < 0) {
		Py_DECREF(k);
		Py_XDECREF(o);
		return NULL;
	}
	Py_DECREF(k);
	return o;
}

/* {label name: value} of a series with @def's label names. */
static PyObject *labels_dict(const struct blamer_snap_metric_def *d, char *const *values)
{
	uint32_t nl = d->nlabels < BLAMER_METRIC_LABELS_MAX ? d->nlabels : BLAMER_METRIC_LABELS_MAX;
	PyObject *r = PyDict_New();
	uint32_t i;

	for (i = 0; r && i < nl; i++) {
		PyObject *k = pyb_str(d->labels[i] ? d->labels[i] : "");
		PyObject *v = values[i] ? pyb_text((const uint8_t *)values[i], strlen(values[i])) :
					  pyb_str("");

		if (!k || !v || PyDict_SetItem(r, k, v) < 0)
			Py_CLEAR(r);
		Py_XDECREF(k);
		Py_XDECREF(v);
	}
	return r;
}

static PyObject *make_proc_metric(const void *item, const void *arg)
{
	const struct blamer_snap_metric *m = item;
	const struct blamer_snap_metric_def *d = m->def;
	PyObject *cache = (PyObject *)arg, *def;

	if (!d)
		return PyErr_Format(PyExc_SystemError, "blamer: a series without a definition");
	def = def_object(cache, d);
	if (!def)
		return NULL;
	return mkseq(&ProcMetricType, 11, pyb_str(d->name), def, labels_dict(d, m->values),
		     BOOL(m->cut), BOOL(m->conflict), ids_tuple(m->nodes, m->depth),
		     PyFloat_FromDouble(m->value), doubles_tuple(m->exact, m->nexact),
		     U64(m->stamp_ns), U64(m->count),
		     counts_tuple(d->kind == BLAMER_METRIC_HISTOGRAM ? m->buckets : NULL,
				  d->nbuckets));
}

static PyObject *make_process(const void *item, const void *arg)
{
	const struct blamer_snap_process *p = item;
	static const char *const states[] = { "uninit", "ready", "deleted" };
	const char *phase = blamer_phase_name(p->phase);
	uint32_t nslabs = p->nslabs < 64 ? p->nslabs : 64, i;
	PyObject *slabs = PyTuple_New(nslabs), *claim;

	for (i = 0; slabs && i < nslabs; i++) {
		PyObject *o = U64(p->slab_ids[i]);

		if (!o) {
			Py_CLEAR(slabs);
			break;
		}
		PyTuple_SET_ITEM(slabs, i, o);
	}
	if (p->parent_claim)
		claim = mkseq(&ParentClaimType, 3, PyLong_FromLong(p->parent_wait_status),
			      PyLong_FromLong(p->parent_pid), U64(p->parent_exit_time_ns));
	else
		claim = Py_NewRef(Py_None);
	return mkseq(&pyb_ProcessType, 44, PyLong_FromLong(p->pid), PyLong_FromUnsignedLong(p->uid),
		     pyb_str(p->comm), U64(p->start_time_ns), BOOL(p->state == BLAMER_PROC_LIVE),
		     BOOL(p->kernel_facts), BOOL(p->exited), BOOL(p->coredump),
		     PyLong_FromLong(p->exit_code), PyLong_FromUnsignedLong(p->exit_signal),
		     U64(p->create_time_ns), U64(p->orphan_time_ns), U64(p->last_seen_ns),
		     U64(p->heap_key), slabs, U64(p->size), U64(p->used),
		     PyUnicode_FromString(blamer_health_name(p->health)), pyb_str(p->problem),
		     PyLong_FromUnsignedLong(p->torn_records),
		     PyUnicode_FromString(p->heap_state < 3 ? states[p->heap_state] : "unknown"),
		     PyLong_FromUnsignedLong(p->heap_flags), U64(p->heap_create_time_ns),
		     I64(p->rec_pid), PyLong_FromUnsignedLong(p->phase),
		     PyUnicode_FromString(phase ? phase : "app"), pyb_str(p->cmdline),
		     pyb_str(p->role), pyb_str(p->instance), fields_dict(&p->user_data),
		     fields_dict(&p->global_data),
		     list_of(p->threads, p->nthreads, sizeof(p->threads[0]), make_thread, NULL),
		     list_of(p->modules, p->nmodules, sizeof(p->modules[0]), make_module, NULL),
		     list_of(p->logs, p->nlogs, sizeof(p->logs[0]), make_log, NULL),
		     list_of(p->children, p->nchildren, sizeof(p->children[0]), make_child, NULL),
		     list_of(p->nodes, p->nnodes, sizeof(p->nodes[0]), make_node, NULL),
		     list_of(p->edges, p->nedges, sizeof(p->edges[0]), make_edge, NULL),
		     list_of(p->paths, p->npaths, sizeof(p->paths[0]), make_pathrec, NULL),
		     drops_dict(p), U64(p->dropped), claim, U64(p->heap_id),
		     list_of(p->metrics, p->nmetrics, sizeof(p->metrics[0]), make_proc_metric, arg),
		     PyLong_FromUnsignedLong(p->busy_threads));
}

static PyObject *make_role(const void *item, const void *arg)
{
	const struct blamer_snap_role *r = item;

	(void)arg;
	return mkseq(&RoleType, 5, pyb_str(r->role), PyLong_FromUnsignedLong(r->live),
		     PyLong_FromUnsignedLong(r->dead), PyLong_FromUnsignedLong(r->threads),
		     PyLong_FromUnsignedLong(r->busy));
}

static PyObject *make_total(const void *item, const void *arg)
{
	const struct blamer_snap_total *t = item;

	(void)arg;
	return mkseq(&TotalType, 4, ids_tuple(t->nodes, t->depth),
		     PyLong_FromUnsignedLong(t->unit), U64(t->value),
		     PyLong_FromUnsignedLong(t->nprocs));
}

static PyObject *make_tree_node(const void *item, const void *arg)
{
	const struct blamer_snap_tree_node *t = item;
	const struct blamer_snapshot *s = arg;

	return mkseq(&TreeNodeType, 6, ids_tuple(t->nodes, t->depth), BOOL(t->walked),
		     PyLong_FromUnsignedLong(t->nprocs), PyLong_FromSize_t(t->end),
		     unit_dict(s->units, t->self, s->nunits),
		     unit_dict(s->units, t->inclusive, s->nunits));
}

static PyObject *make_unitdef(const void *item, const void *arg)
{
	const struct blamer_snap_unit_def *u = item;

	(void)arg;
	return mkseq(&UnitDefType, 3, PyLong_FromUnsignedLong(u->unit),
		     PyLong_FromUnsignedLong(u->base), pyb_str(u->name));
}

static PyObject *make_skipped(const void *item, const void *arg)
{
	const struct blamer_snap_skipped *k = item;

	(void)arg;
	return mkseq(&SkippedType, 2, pyb_str(k->name), pyb_str(k->why));
}

/* ---- Snapshot ---- */

PyObject *pyb_snapshot_wrap(struct blamer_snapshot *s)
{
	pyb_Snapshot *o = PyObject_New(pyb_Snapshot, &pyb_SnapshotType);

	if (!o) {
		blamer_snapshot_free(s);
		return NULL;
	}
	o->s = s;
	o->procs = o->totals = o->tree = o->nodes = o->unit_defs = o->skipped = NULL;
	o->series = o->roles = NULL;
	o->changing = false;
	o->defs = PyDict_New();
	if (!o->defs) {
		Py_DECREF(o);
		return NULL;
	}
	return (PyObject *)o;
}

static void snap_dealloc(pyb_Snapshot *o)
{
	Py_XDECREF(o->procs);
	Py_XDECREF(o->totals);
	Py_XDECREF(o->tree);
	Py_XDECREF(o->nodes);
	Py_XDECREF(o->unit_defs);
	Py_XDECREF(o->skipped);
	Py_XDECREF(o->series);
	Py_XDECREF(o->roles);
	Py_XDECREF(o->defs);
	blamer_snapshot_free(o->s);
	PyObject_Free(o);
}

/* A cached list, made on first use. */
static PyObject *cached(PyObject **slot, const void *base, size_t n, size_t elsz,
			PyObject *(*make)(const void *, const void *), const void *arg)
{
	if (!*slot)
		*slot = list_of(base, n, elsz, make, arg);
	Py_XINCREF(*slot);
	return *slot;
}

static PyObject *snap_processes(pyb_Snapshot *o, void *unused)
{
	(void)unused;
	if (!snap_ok(o))
		return NULL;
	return cached(&o->procs, o->s->procs, o->s->nprocs, sizeof(o->s->procs[0]), make_process,
		      o->defs);
}

static PyObject *make_series(const void *item, const void *arg)
{
	const struct blamer_snap_series *x = item;
	const pyb_Snapshot *o = arg;
	const struct blamer_snap_metric_def *d = x->def;
	PyObject *def, *pid, *idx;

	if (!d || !x->first)
		return PyErr_Format(PyExc_SystemError, "blamer: a series without a definition");
	def = def_object(o->defs, d);
	if (!def)
		return NULL;
	if (x->proc) {
		pid = PyLong_FromLong(x->proc->pid);
		idx = PyLong_FromSsize_t(x->proc - o->s->procs);
	} else {
		pid = Py_NewRef(Py_None);
		idx = Py_NewRef(Py_None);
	}
	return mkseq(&MetricSeriesType, 14, pyb_str(d->name), def,
		     labels_dict(d, x->first->values), ids_tuple(x->first->nodes, x->first->depth),
		     PyLong_FromUnsignedLong(x->uid), pid, idx, PyLong_FromUnsignedLong(x->nprocs),
		     PyLong_FromUnsignedLong(x->nlive), PyFloat_FromDouble(x->value),
		     doubles_tuple(x->exact, x->nexact), U64(x->stamp_ns), U64(x->count),
		     counts_tuple(d->kind == BLAMER_METRIC_HISTOGRAM ? x->buckets : NULL,
				  d->nbuckets));
}

static PyObject *snap_series(pyb_Snapshot *o, void *unused)
{
	(void)unused;
	if (!snap_ok(o))
		return NULL;
	return cached(&o->series, o->s->series, o->s->nseries, sizeof(o->s->series[0]),
		      make_series, o);
}

static PyObject *snap_roles(pyb_Snapshot *o, void *unused)
{
	(void)unused;
	if (!snap_ok(o))
		return NULL;
	return cached(&o->roles, o->s->roles, o->s->nroles, sizeof(o->s->roles[0]), make_role,
		      NULL);
}

static PyObject *snap_totals(pyb_Snapshot *o, void *unused)
{
	(void)unused;
	if (!snap_ok(o))
		return NULL;
	return cached(&o->totals, o->s->totals, o->s->ntotals, sizeof(o->s->totals[0]),
		      make_total, NULL);
}

static PyObject *snap_tree(pyb_Snapshot *o, void *unused)
{
	(void)unused;
	if (!snap_ok(o))
		return NULL;
	return cached(&o->tree, o->s->tree, o->s->ntree, sizeof(o->s->tree[0]), make_tree_node,
		      o->s);
}

static PyObject *snap_nodes(pyb_Snapshot *o, void *unused)
{
	(void)unused;
	if (!snap_ok(o))
		return NULL;
	return cached(&o->nodes, o->s->nodes, o->s->nnodes, sizeof(o->s->nodes[0]), make_node,
		      NULL);
}

static PyObject *snap_unit_defs(pyb_Snapshot *o, void *unused)
{
	(void)unused;
	if (!snap_ok(o))
		return NULL;
	return cached(&o->unit_defs, o->s->unit_defs, o->s->nunit_defs,
		      sizeof(o->s->unit_defs[0]), make_unitdef, NULL);
}

static PyObject *snap_skipped(pyb_Snapshot *o, void *unused)
{
	(void)unused;
	if (!snap_ok(o))
		return NULL;
	return cached(&o->skipped, o->s->skipped, o->s->nskipped, sizeof(o->s->skipped[0]),
		      make_skipped, NULL);
}

static PyObject *snap_units(pyb_Snapshot *o, void *unused)
{
	PyObject *t;
	size_t i;

	(void)unused;
	if (!snap_ok(o))
		return NULL;
	t = PyTuple_New((Py_ssize_t)o->s->nunits);
	for (i = 0; t && i < o->s->nunits; i++) {
		PyObject *v = PyLong_FromUnsignedLong(o->s->units[i]);

		if (!v) {
			Py_CLEAR(t);
			break;
		}
		PyTuple_SET_ITEM(t, (Py_ssize_t)i, v);
	}
	return t;
}

static PyObject *snap_backend(pyb_Snapshot *o, void *unused)
{
	(void)unused;
	if (!snap_ok(o))
		return NULL;
	return PyUnicode_FromString(o->s->backend == BLAMER_BACKEND_DEVICE ? "device" : "dir");
}

static PyObject *snap_source(pyb_Snapshot *o, void *unused)
{
	(void)unused;
	if (!snap_ok(o))
		return NULL;
	return PyUnicode_DecodeFSDefault(o->s->source);
}

#define SNAP_U64(field)                                                 \
	static PyObject *snap_##field(pyb_Snapshot *o, void *unused)   \
	{                                                               \
		(void)unused;                                           \
		return snap_ok(o) ? U64(o->s->field) : NULL;            \
	}
SNAP_U64(generation)
SNAP_U64(realtime_ns)
SNAP_U64(monotonic_ns)
SNAP_U64(flags)
SNAP_U64(skipped_total)
SNAP_U64(metric_conflicts)
SNAP_U64(noverflows)
SNAP_U64(units_left_out)
#undef SNAP_U64

static PyGetSetDef snap_getset[] = {
	{ "processes", (getter)snap_processes, NULL, "[Process]: every heap read", NULL },
	{ "totals", (getter)snap_totals, NULL,
	  "[Total]: each (path, unit) summed over the processes, by path then unit", NULL },
	{ "tree", (getter)snap_tree, NULL, "[TreeNode]: the inclusive attribution tree", NULL },
	{ "nodes", (getter)snap_nodes, NULL, "[Node]: the DAG nodes, merged by id", NULL },
	{ "units", (getter)snap_units, NULL, "the units of the totals, in numeric order", NULL },
	{ "units_left_out", (getter)snap_units_left_out, NULL,
	  "units processes measure in left out of totals, units and tree (they hold the 16\n"
	  "most processes measure in); each process's own paths keep every unit", NULL },
	{ "unit_defs", (getter)snap_unit_defs, NULL, "[UnitDef] the heaps give, one per unit (the least), by unit", NULL },
	{ "skipped", (getter)snap_skipped, NULL, "dir: [Skipped] entries not read (the first 256)",
	  NULL },
	{ "skipped_total", (getter)snap_skipped_total, NULL, "dir: how many were skipped", NULL },
	{ "series", (getter)snap_series, NULL,
	  "[MetricSeries]: the metrics merged over the processes, live and dead, per uid\n"
	  "(counters and histograms summed, gauges by their mode; all, liveall and\n"
	  "per-process metrics a series per process), by name, uid, labels, path", NULL },
	{ "metric_conflicts", (getter)snap_metric_conflicts, NULL,
	  "series left out: their heap defines the name otherwise", NULL },
	/* (a count, as JSON's service.overflows: the C snapshot keeps their
	 * keys without values, which MetricSeries would show as 0s) */
	{ "overflows", (getter)snap_noverflows, NULL,
	  "counter and histogram series left out: their sum over the processes does not fit\n"
	  "(past the largest double, a histogram's count past 2^64 - 1)", NULL },
	{ "roles", (getter)snap_roles, NULL, "[Role]: the processes by role", NULL },
	{ "backend", (getter)snap_backend, NULL, "'device' or 'dir'", NULL },
	{ "source", (getter)snap_source, NULL, "the device path or the directory", NULL },
	{ "generation", (getter)snap_generation, NULL, "the device's event generation (dir: 0)",
	  NULL },
	{ "realtime_ns", (getter)snap_realtime_ns, NULL, "CLOCK_REALTIME when it was taken", NULL },
	{ "monotonic_ns", (getter)snap_monotonic_ns, NULL, "CLOCK_MONOTONIC when it was taken",
	  NULL },
	{ "flags", (getter)snap_flags, NULL, "the READ_* flags it was taken with", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

/* The text an exporter writes into a memory stream, as str. */
static PyObject *memstream_str(char *buf, size_t len)
{
	PyObject *r = PyUnicode_DecodeUTF8(buf ? buf : "", (Py_ssize_t)len, "replace");

	free(buf);
	return r;
}

static const char *const json_names[] = { "summary", "processes", "attribution", "pids", NULL };

static int int32_list(PyObject *o, int32_t **out, size_t *n)
{
	/* an item's __index__ runs Python code */
	PyObject *seq = pyb_tuple_of(o, "blamer: pids must be a sequence of ints");
	Py_ssize_t i, len;

	if (!seq)
		return -1;
	len = PySequence_Fast_GET_SIZE(seq);
	*out = PyMem_Malloc(sizeof(int32_t) * (size_t)(len ? len : 1));
	if (!*out) {
		Py_DECREF(seq);
		PyErr_NoMemory();
		return -1;
	}
	for (i = 0; i < len; i++) {
		long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));

		if ((v == -1 && PyErr_Occurred()) || v < 0 || v > INT32_MAX) {
			if (!PyErr_Occurred())
				PyErr_Format(PyExc_ValueError, "blamer: no pid %ld", v);
			PyMem_Free(*out);
			*out = NULL;
			Py_DECREF(seq);
			return -1;
		}
		(*out)[i] = (int32_t)v;
	}
	*n = (size_t)len;
	Py_DECREF(seq);
	return 0;
}

static PyObject *snap_to_json(pyb_Snapshot *o, PyObject *const *args, Py_ssize_t nargs,
			      PyObject *kwnames)
{
	PyObject *v[4] = { NULL };
	uint32_t flags = 0;
	int32_t *pids = NULL;
	size_t npids = 0, len = 0;
	char *buf = NULL;
	FILE *f;
	int ret, t;

	if (pyb_parse_kw("to_json", args, nargs, kwnames, json_names, 0, 0, v) < 0)
		return NULL;
	if (v[0] && (t = PyObject_IsTrue(v[0])) != 0) {
		if (t < 0)
			return NULL;
		flags |= BLAMER_JSON_SUMMARY;
	}
	if (v[1] && (t = PyObject_IsTrue(v[1])) != 1) {
		if (t < 0)
			return NULL;
		flags |= BLAMER_JSON_NO_PROCS;
	}
	if (v[2] && (t = PyObject_IsTrue(v[2])) != 1) {
		if (t < 0)
			return NULL;
		flags |= BLAMER_JSON_NO_ATTRIB;
	}
	if (v[3] && v[3] != Py_None && int32_list(v[3], &pids, &npids) < 0)
		return NULL;
	/* after the conversions (__bool__, __index__, a generator of pids),
	 * as in path_string() */
	if (!snap_ok(o)) {
		PyMem_Free(pids);
		return NULL;
	}
	f = open_memstream(&buf, &len);
	if (!f) {
		PyMem_Free(pids);
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	ret = blamer_snapshot_write_json(o->s, f, flags, pids, npids);
	if (fclose(f) != 0 && ret == 0)
		ret = -errno;
	PyMem_Free(pids);
	if (ret < 0) {
		free(buf);
		return pyb_raise_msg(-ret, "blamer: writing JSON failed");
	}
	return memstream_str(buf, len);
}

static PyObject *snap_prometheus(pyb_Snapshot *o, PyObject *unused)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int ret;

	(void)unused;
	if (!snap_ok(o))
		return NULL;
	ret = blamer_snapshot_prometheus_text(o->s, &buf, &len, &cap);
	if (ret < 0) {
		free(buf);
		return pyb_raise_msg(-ret, "blamer: writing Prometheus text failed");
	}
	return memstream_str(buf, len);
}

/*
 * A name lookup's uid=: absent or None is UID_ANY, the names over every
 * uid's heaps; else an int 0..2**32-1, whose heaps alone give the names
 * (blamer_snap_uid_node_name()). A bool is refused: uid=True would be
 * uid 1.
 */
#define UID_ANY UINT64_MAX

static int uid_arg(PyObject *o, uint64_t *uid)
{
	long long v;
	int over;

	*uid = UID_ANY;
	if (!o || o == Py_None)
		return 0;
	if (!PyLong_Check(o) || PyBool_Check(o)) {
		PyErr_Format(PyExc_TypeError, "blamer: uid must be an int or None, not %.80s",
			     Py_TYPE(o)->tp_name);
		return -1;
	}
	v = PyLong_AsLongLongAndOverflow(o, &over);
	if (v == -1 && PyErr_Occurred())
		return -1;
	if (over || v < 0 || v > UINT32_MAX) {
		PyErr_Format(PyExc_ValueError, "blamer: uid must be 0..2**32-1, not %R", o);
		return -1;
	}
	*uid = (uint64_t)v;
	return 0;
}

static const char *const path_string_names[] = { "nodes", "uid", NULL };

static PyObject *snap_path_string(pyb_Snapshot *o, PyObject *const *args, Py_ssize_t nargs,
				  PyObject *kwnames)
{
	uint64_t ids[BLAMER_SNAP_MAX_DEPTH], uid;
	char buf[BLAMER_SNAP_MAX_DEPTH * 40];
	PyObject *v[2] = { NULL }, *seq;
	Py_ssize_t i, n;

	if (pyb_parse_kw("path_string", args, nargs, kwnames, path_string_names, 1, 1, v) < 0 ||
	    uid_arg(v[1], &uid) < 0)
		return NULL;
	/* converted first, checked after: a generator's code may let the GIL
	 * go, and another thread's fold change the snapshot meanwhile */
	seq = PySequence_Fast(v[0], "blamer: a path is a sequence of node ids");
	if (!seq)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	if (n > BLAMER_SNAP_MAX_DEPTH) {
		Py_DECREF(seq);
		return PyErr_Format(PyExc_ValueError, "blamer: a path has at most %d nodes",
				    BLAMER_SNAP_MAX_DEPTH);
	}
	for (i = 0; i < n; i++)
		if (pyb_u64(PySequence_Fast_GET_ITEM(seq, i), "a node id", &ids[i]) < 0) {
			Py_DECREF(seq);
			return NULL;
		}
	Py_DECREF(seq);
	if (!snap_ok(o))
		return NULL;
	if (uid == UID_ANY)
		blamer_snap_path_string(o->s, ids, (uint32_t)n, buf, sizeof(buf));
	else
		blamer_snap_uid_path_string(o->s, (uint32_t)uid, ids, (uint32_t)n, buf,
					    sizeof(buf));
	return pyb_str(buf);
}

static const char *const node_name_names[] = { "id", "uid", NULL };

static PyObject *snap_node_name(pyb_Snapshot *o, PyObject *const *args, Py_ssize_t nargs,
				PyObject *kwnames)
{
	PyObject *v[2] = { NULL };
	const char *name;
	uint64_t id, uid;

	if (!snap_ok(o))
		return NULL;
	if (pyb_parse_kw("node_name", args, nargs, kwnames, node_name_names, 1, 1, v) < 0 ||
	    pyb_u64(v[0], "a node id", &id) < 0 || uid_arg(v[1], &uid) < 0)
		return NULL;
	if (uid == UID_ANY)
		name = blamer_snap_node_name(o->s, id);
	else
		name = blamer_snap_uid_node_name(o->s, (uint32_t)uid, id);
	if (!name)
		Py_RETURN_NONE;
	return pyb_str(name);
}

static const char *const unit_name_names[] = { "unit", "uid", NULL };

static PyObject *snap_unit_name(pyb_Snapshot *o, PyObject *const *args, Py_ssize_t nargs,
				PyObject *kwnames)
{
	const struct blamer_snap_unit_def *d;
	PyObject *v[2] = { NULL };
	const char *name;
	uint64_t uid;
	uint32_t unit;

	if (!snap_ok(o))
		return NULL;
	if (pyb_parse_kw("unit_name", args, nargs, kwnames, unit_name_names, 1, 1, v) < 0 ||
	    pyb_u32(v[0], "a unit", &unit) < 0 || uid_arg(v[1], &uid) < 0)
		return NULL;
	if (uid == UID_ANY)
		d = blamer_snap_unit_def(o->s, unit);
	else
		d = blamer_snap_uid_unit_def(o->s, (uint32_t)uid, unit);
	if (d)
		return pyb_str(d->name);
	name = blamer_unit_name(unit);
	if (name)
		return PyUnicode_FromString(name);
	return PyUnicode_FromFormat("unit%u", (unsigned)unit);
}

/* @a is a later heap of a pid than @b: a running process's before a
 * dead one's (a pid reused), then the later process, then the heap it
 * made last (after an exec, or a context abandoned and opened again). */
static bool heap_later(const struct blamer_snap_process *a, const struct blamer_snap_process *b)
{
	bool la = a->state == BLAMER_PROC_LIVE, lb = b->state == BLAMER_PROC_LIVE;

	if (la != lb)
		return la;
	if (a->start_time_ns != b->start_time_ns)
		return a->start_time_ns > b->start_time_ns;
	return a->heap_create_time_ns > b->heap_create_time_ns;
}

static PyObject *snap_process(pyb_Snapshot *o, PyObject *arg)
{
	long pid = PyLong_AsLong(arg);
	size_t i, pick = SIZE_MAX;
	PyObject *procs, *r;

	if (!snap_ok(o))
		return NULL;
	if (pid == -1 && PyErr_Occurred())
		return NULL;
	/* A pid may have several heaps: the first found was any of them
	 * (they come by pid, start time and heap key, a hash), so an old
	 * one, its data stale. */
	for (i = 0; i < o->s->nprocs; i++)
		if (o->s->procs[i].pid == pid && pid != 0 &&
		    (pick == SIZE_MAX || heap_later(&o->s->procs[i], &o->s->procs[pick])))
			pick = i;
	if (pick == SIZE_MAX)
		Py_RETURN_NONE;
	procs = snap_processes(o, NULL);
	if (!procs)
		return NULL;
	r = Py_NewRef(PyList_GET_ITEM(procs, (Py_ssize_t)pick));
	Py_DECREF(procs);
	return r;
}

static PyObject *snap_total(pyb_Snapshot *o, PyObject *const *args, Py_ssize_t nargs)
{
	uint64_t ids[BLAMER_SNAP_MAX_DEPTH];
	const struct blamer_snap_total *t;
	PyObject *seq;
	Py_ssize_t i, n;
	uint32_t unit;

	if (nargs != 2)
		return PyErr_Format(PyExc_TypeError, "total() takes 2 arguments: nodes, unit");
	if (pyb_u32(args[1], "a unit", &unit) < 0)
		return NULL;
	seq = PySequence_Fast(args[0], "blamer: a path is a sequence of nodes");
	if (!seq)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	if (n < 1 || n > BLAMER_SNAP_MAX_DEPTH) {
		Py_DECREF(seq);
		return PyErr_Format(PyExc_ValueError, "blamer: a path has 1 to %d nodes",
				    BLAMER_SNAP_MAX_DEPTH);
	}
	for (i = 0; i < n; i++)
		if (pyb_node_id(PySequence_Fast_GET_ITEM(seq, i), &ids[i]) < 0) {
			Py_DECREF(seq);
			return NULL;
		}
	Py_DECREF(seq);
	/* after the conversion, as in path_string() */
	if (!snap_ok(o))
		return NULL;
	t = blamer_snap_total_find(o->s, ids, (uint32_t)n, unit);
	if (!t)
		Py_RETURN_NONE;
	return U64(t->value);
}

static PyMethodDef snap_methods[] = {
	{ "to_json", (PyCFunction)(void (*)(void))snap_to_json, METH_FASTCALL | METH_KEYWORDS,
	  "to_json(summary=False, processes=True, attribution=True, pids=None) -> str\n\n"
	  "The snapshot as `blamer dump --json` writes it (Documentation/\n"
	  "blamer-json-schema.json); pids: only those processes." },
	{ "prometheus", (PyCFunction)snap_prometheus, METH_NOARGS,
	  "prometheus() -> str\n\nThe snapshot in Prometheus's text format, as `blamer export` writes it." },
	{ "path_string", (PyCFunction)(void (*)(void))snap_path_string,
	  METH_FASTCALL | METH_KEYWORDS,
	  "path_string(nodes, *, uid=None) -> str\n\n"
	  "A path as text: '/name/name/0x1f...'. uid: the names uid's heaps give\n"
	  "(another user's heap names none of them); None: any heap's." },
	{ "node_name", (PyCFunction)(void (*)(void))snap_node_name, METH_FASTCALL | METH_KEYWORDS,
	  "node_name(id, *, uid=None) -> str or None\n\n"
	  "The name some heap gives node @id; uid: some heap of that uid." },
	{ "unit_name", (PyCFunction)(void (*)(void))snap_unit_name, METH_FASTCALL | METH_KEYWORDS,
	  "unit_name(unit, *, uid=None) -> str\n\n"
	  "The name of @unit: a heap's dag_unit() name (uid: a heap of that uid's),\n"
	  "a built-in one, or 'unitN'." },
	{ "process", (PyCFunction)snap_process, METH_O,
	  "process(pid) -> Process or None\n\nThe heap of @pid in the snapshot: its newest if it has several\n"
	  "(after an exec, or a context abandoned and made again), a running\n"
	  "process's before a dead one's. Every heap: [p for p in processes if p.pid == pid]." },
	{ "total", (PyCFunction)(void (*)(void))snap_total, METH_FASTCALL,
	  "total(nodes, unit) -> int or None\n\nThe total of a path (names or ids) in @unit." },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pyb_SnapshotType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "blamer.Snapshot",
	.tp_basicsize = sizeof(pyb_Snapshot),
	.tp_dealloc = (destructor)snap_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Every heap the caller may read, as one snapshot (blamer.snapshot(),\n"
		  "Reader.snapshot()): processes with their threads, stacks, user data,\n"
		  "logs and paths, and the attribution view summed over them. Plain data,\n"
		  "copied out of the heaps and checked: nothing in it changes.",
	.tp_methods = snap_methods,
	.tp_getset = snap_getset,
};

struct blamer_snapshot *pyb_snapshot_begin_change(PyObject *obj)
{
	pyb_Snapshot *o = (pyb_Snapshot *)obj;

	if (!PyObject_TypeCheck(obj, &pyb_SnapshotType)) {
		PyErr_Format(PyExc_TypeError, "blamer: expected a Snapshot, not %.80s",
			     Py_TYPE(obj)->tp_name);
		return NULL;
	}
	if (!snap_ok(o))
		return NULL;
	/* Python objects made of it stay valid (they are copies); the cache
	 * goes: the snapshot is about to hold other processes. */
	Py_CLEAR(o->procs);
	Py_CLEAR(o->totals);
	Py_CLEAR(o->tree);
	Py_CLEAR(o->nodes);
	Py_CLEAR(o->unit_defs);
	Py_CLEAR(o->skipped);
	Py_CLEAR(o->series);
	Py_CLEAR(o->roles);
	PyDict_Clear(o->defs);
	o->changing = true;
	return o->s;
}

void pyb_snapshot_end_change(PyObject *obj)
{
	((pyb_Snapshot *)obj)->changing = false;
}

const struct blamer_snapshot *pyb_snapshot_get(PyObject *obj)
{
	if (!PyObject_TypeCheck(obj, &pyb_SnapshotType)) {
		PyErr_Format(PyExc_TypeError, "blamer: expected a Snapshot, not %.80s",
			     Py_TYPE(obj)->tp_name);
		return NULL;
	}
	return snap_ok((pyb_Snapshot *)obj) ? ((pyb_Snapshot *)obj)->s : NULL;
}

PyObject *pyb_snapshot_from_memory(PyObject *self, PyObject *arg)
{
	struct blamer_mem_slab slabs[64];
	Py_buffer views[64];
	struct blamer_snapshot *s = NULL;
	PyObject *seq;
	Py_ssize_t i, n;
	int ret;

	(void)self;
	/* one bytes object is a sequence too, of ints: said as what it is */
	if (PyObject_CheckBuffer(arg))
		return PyErr_Format(PyExc_TypeError,
				    "blamer: slabs is a sequence of bytes-like objects (one a slab), not one %.80s",
				    Py_TYPE(arg)->tp_name);
	seq = PySequence_Fast(arg, "blamer: slabs must be a sequence of bytes");
	if (!seq)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	if (n < 1 || n > 64) {
		Py_DECREF(seq);
		return PyErr_Format(PyExc_ValueError, "blamer: a heap has 1 to 64 slabs, not %zd", n);
	}
	for (i = 0; i < n; i++) {
		if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, i), &views[i], PyBUF_SIMPLE) < 0) {
			while (i--)
				PyBuffer_Release(&views[i]);
			Py_DECREF(seq);
			return NULL;
		}
		slabs[i].data = views[i].buf;
		slabs[i].size = (size_t)views[i].len;
	}
	ret = blamer_snapshot_from_memory(slabs, (size_t)n, &s);
	for (i = 0; i < n; i++)
		PyBuffer_Release(&views[i]);
	Py_DECREF(seq);
	if (ret < 0)
		return pyb_raise_msg(-ret, "blamer: the slabs are not a heap");
	return pyb_snapshot_wrap(s);
}

int pyb_snapshot_types_init(PyObject *m)
{
	static const struct {
		PyTypeObject *t;
		PyStructSequence_Desc *d;
	} seqs[] = {
		{ &pyb_ProcessType, &process_desc }, { &ThreadType, &thread_desc },
		{ &FrameType, &frame_desc },	 { &FieldType, &field_desc },
		{ &ModuleType, &module_desc },	 { &LogType, &log_desc },
		{ &ChildType, &child_desc },	 { &NodeType, &node_desc },
		{ &EdgeType, &edge_desc },	 { &PathRecType, &pathrec_desc },
		{ &TotalType, &total_desc },	 { &UnitDefType, &unitdef_desc },
		{ &TreeNodeType, &treenode_desc }, { &SkippedType, &skipped_desc },
		{ &ParentClaimType, &claim_desc }, { &MetricDefType, &metricdef_desc },
		{ &ProcMetricType, &procmetric_desc }, { &MetricSeriesType, &series_desc },
		{ &RoleType, &role_desc },
	};
	size_t i;

	for (i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
		if (PyStructSequence_InitType2(seqs[i].t, seqs[i].d) < 0)
			return -1;
		/* "blamer.Process" -> "Process" */
		if (PyModule_AddObjectRef(m, strchr(seqs[i].d->name, '.') + 1,
					  (PyObject *)seqs[i].t) < 0)
			return -1;
	}
	if (PyType_Ready(&pyb_SnapshotType) < 0 ||
	    PyModule_AddObjectRef(m, "Snapshot", (PyObject *)&pyb_SnapshotType) < 0)
		return -1;
	return 0;
}
