// SPDX-License-Identifier: MIT
/*
 * The module blamer._blamer: its functions, constants and error types.
 * The pure-Python package blamer (bindings/python/blamer/) re-exports it
 * and binds the module-level writer calls to the default context.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "pyblamer.h"

PyObject *pyb_Error;
PyObject *pyb_StaleHandle;
volatile uint64_t pyb_fork_gen;

int pyb_lock_fresh(PyThread_type_lock *lock, uint64_t *gen)
{
	PyThread_type_lock l;

	if (__builtin_expect(*gen == pyb_fork_gen && *lock, 1))
		return 0;
	l = PyThread_allocate_lock();
	if (!l) {
		PyErr_NoMemory();
		return -1;
	}
	*lock = l;
	*gen = pyb_fork_gen;
	return 0;
}

PyObject *pyb_raise_msg(int err, const char *msg)
{
	PyObject *args;

	if (err > 0)
		args = Py_BuildValue("(is)", err, msg);
	else
		args = Py_BuildValue("(s)", msg);
	if (args) {
		PyErr_SetObject(pyb_Error, args);
		Py_DECREF(args);
	}
	return NULL;
}

PyObject *pyb_raise(int ret, const char *what)
{
	const char *msg = blamer_errmsg();

	if (!msg || !msg[0] || strcmp(msg, "no error") == 0)
		msg = what;
	/* ret 0: a call that returned NULL; the library keeps why (the
	 * Error's errno was None: ENOSPC could not be told from EINVAL) */
	if (ret == 0)
		ret = -blamer_errno();
	return pyb_raise_msg(ret < 0 ? -ret : 0, msg);
}

/* In a fork child, before anything else runs there. */
static void atfork_child(void)
{
	pyb_fork_gen++;
}

static PyObject *mod_default_context(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return Py_NewRef(pyb_default_ctx);
}

static PyObject *mod_fork_generation(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyLong_FromUnsignedLongLong(pyb_fork_gen);
}

/* name_fn(n) as str, or None where the library has no name. */
static PyObject *name_of(PyObject *arg, const char *(*fn)(uint32_t))
{
	const char *s;
	uint32_t v;

	if (pyb_u32(arg, "the value", &v) < 0)
		return NULL;
	s = fn(v);
	if (!s)
		Py_RETURN_NONE;
	return PyUnicode_FromString(s);
}

static PyObject *mod_phase_name(PyObject *self, PyObject *arg)
{
	(void)self;
	return name_of(arg, blamer_phase_name);
}

static PyObject *mod_unit_name(PyObject *self, PyObject *arg)
{
	(void)self;
	return name_of(arg, blamer_unit_name);
}

static PyObject *mod_activity_kind_name(PyObject *self, PyObject *arg)
{
	(void)self;
	return name_of(arg, blamer_activity_kind_name);
}

static PyObject *mod_drop_reason_name(PyObject *self, PyObject *arg)
{
	(void)self;
	return name_of(arg, blamer_drop_reason_name);
}

#define FASTKW (METH_FASTCALL | METH_KEYWORDS)
static PyMethodDef mod_methods[] = {
	{ "open", (PyCFunction)(void (*)(void))pyb_open, FASTKW,
	  "open(*, backend=None, dir=None, max_slabs=0, slab_size=0, stack_depth=0,\n"
	  "     log_slots=0, modules=True) -> Context\n\n"
	  "Makes a heap of its own for this process (most programs need only the\n"
	  "default context). backend: 'auto' (BLAMER_BACKEND decides; the device\n"
	  "if /dev/blamer opens, else dir), 'device' or 'dir'; dir: the dir\n"
	  "backend's directory (default BLAMER_DIR or /dev/shm/blamer-UID; a\n"
	  "process has one heap per directory); 0 means the library's default\n"
	  "(16 slabs of 1 MiB, 16 activity slots per thread, 64 log messages);\n"
	  "modules=False: do not record the loaded shared objects. Raises Error." },
	{ "init", (PyCFunction)(void (*)(void))pyb_init, FASTKW,
	  "init(*, backend=None, dir=None, ...) \n\n"
	  "Sets up the default context with open()'s options, before its first\n"
	  "use (which otherwise makes it from the environment). Raises Error\n"
	  "(EBUSY) if it is already set up." },
	{ "reset", (PyCFunction)pyb_reset, METH_NOARGS,
	  "reset()\n\n"
	  "Closes the default context (a clean end: its heap is removed); the next\n"
	  "use makes a new one. Handles made from it stop working (StaleHandle)." },
	{ "default_context", (PyCFunction)mod_default_context, METH_NOARGS,
	  "default_context() -> Context\n\nThe process-default context, which the module-level calls use." },
	{ "dag_id", (PyCFunction)pyb_dag_id, METH_O,
	  "dag_id(name) -> int\n\nThe node id of @name: FNV-1a 64 of its UTF-8, the same in every process." },
	{ "snapshot", (PyCFunction)(void (*)(void))pyb_snapshot, METH_VARARGS | METH_KEYWORDS,
	  "snapshot(**options) -> Snapshot\n\n"
	  "Every heap the caller may read, now: Reader(**options).snapshot()." },
	{ "snapshot_from_memory", (PyCFunction)pyb_snapshot_from_memory, METH_O,
	  "snapshot_from_memory(slabs) -> Snapshot\n\n"
	  "One heap from its slabs' bytes (a copy, a core file's pages), as a\n"
	  "snapshot of one process." },
	{ "phase_name", (PyCFunction)mod_phase_name, METH_O,
	  "phase_name(phase) -> str or None" },
	{ "unit_name", (PyCFunction)mod_unit_name, METH_O,
	  "unit_name(unit) -> str or None\n\nThe built-in unit's name ('cpu_ns', 'bytes', 'count')." },
	{ "activity_kind_name", (PyCFunction)mod_activity_kind_name, METH_O,
	  "activity_kind_name(kind) -> str or None" },
	{ "drop_reason_name", (PyCFunction)mod_drop_reason_name, METH_O,
	  "drop_reason_name(reason) -> str or None" },
	{ "_fork_generation", (PyCFunction)mod_fork_generation, METH_NOARGS,
	  "How many forks this process is removed from the one that imported blamer." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef mod_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "blamer._blamer",
	.m_doc = "The C part of blamer (libblamer's writer and reader); use the package blamer.",
	.m_size = -1,
	.m_methods = mod_methods,
};

static const struct {
	const char *name;
	long long v;
} constants[] = {
	{ "BACKEND_AUTO", BLAMER_BACKEND_AUTO },
	{ "BACKEND_DEVICE", BLAMER_BACKEND_DEVICE },
	{ "BACKEND_DIR", BLAMER_BACKEND_DIR },
	{ "PHASE_UNKNOWN", BLAMER_PHASE_UNKNOWN },
	{ "PHASE_LAUNCHED", BLAMER_PHASE_LAUNCHED },
	{ "PHASE_MAIN_LOOP", BLAMER_PHASE_MAIN_LOOP },
	{ "PHASE_SHUTTING_DOWN", BLAMER_PHASE_SHUTTING_DOWN },
	{ "PHASE_EXITED_CLEANLY", BLAMER_PHASE_EXITED_CLEANLY },
	{ "PHASE_APP_BASE", BLAMER_PHASE_APP_BASE },
	{ "ACTIVITY_TASK", BLAMER_ACTIVITY_TASK },
	{ "ACTIVITY_LOCK_ACQUIRE", BLAMER_ACTIVITY_LOCK_ACQUIRE },
	{ "ACTIVITY_EVENT_WAIT", BLAMER_ACTIVITY_EVENT_WAIT },
	{ "ACTIVITY_THREAD_JOIN", BLAMER_ACTIVITY_THREAD_JOIN },
	{ "ACTIVITY_PROCESS_WAIT", BLAMER_ACTIVITY_PROCESS_WAIT },
	{ "ACTIVITY_GENERIC", BLAMER_ACTIVITY_GENERIC },
	{ "DATA_GLOBAL", BLAMER_DATA_GLOBAL },
	{ "DATA_PROCESS", BLAMER_DATA_PROCESS },
	{ "DATA_ACTIVITY", BLAMER_DATA_ACTIVITY },
	{ "UNIT_NONE", BLAMER_UNIT_NONE },
	{ "UNIT_CPU_NS", BLAMER_UNIT_CPU_NS },
	{ "UNIT_BYTES", BLAMER_UNIT_BYTES },
	{ "UNIT_COUNT", BLAMER_UNIT_COUNT },
	{ "UNIT_APP_BASE", BLAMER_UNIT_APP_BASE },
	{ "BASE_NONE", BLAMER_BASE_NONE },
	{ "BASE_SECONDS", BLAMER_BASE_SECONDS },
	{ "BASE_BYTES", BLAMER_BASE_BYTES },
	{ "HEAP_F_CORRUPT", BLAMER_HEAP_F_CORRUPT },
	{ "HEAP_F_FULL", BLAMER_HEAP_F_FULL },
	{ "READ_HEADERS_ONLY", BLAMER_READ_HEADERS_ONLY },
	{ "READ_DEAD_FULL", BLAMER_READ_DEAD_FULL },
	{ "READ_NO_THREADS", BLAMER_READ_NO_THREADS },
	{ "READ_NO_STACKS", BLAMER_READ_NO_STACKS },
	{ "READ_NO_USERDATA", BLAMER_READ_NO_USERDATA },
	{ "READ_NO_MODULES", BLAMER_READ_NO_MODULES },
	{ "READ_NO_LOG", BLAMER_READ_NO_LOG },
	{ "READ_NO_CHILDREN", BLAMER_READ_NO_CHILDREN },
	{ "READ_NO_DAG", BLAMER_READ_NO_DAG },
	{ "READ_KEEP_DEAD", BLAMER_READ_KEEP_DEAD },
	{ "READ_NO_TOTALS", BLAMER_READ_NO_TOTALS },
	{ "READ_NO_METRICS", BLAMER_READ_NO_METRICS },
	{ "READ_LIVE_ONLY", BLAMER_READ_LIVE_ONLY },
	{ "GAUGE_ALL", BLAMER_GAUGE_ALL },
	{ "GAUGE_LIVEALL", BLAMER_GAUGE_LIVEALL },
	{ "GAUGE_MIN", BLAMER_GAUGE_MIN },
	{ "GAUGE_LIVEMIN", BLAMER_GAUGE_LIVEMIN },
	{ "GAUGE_MAX", BLAMER_GAUGE_MAX },
	{ "GAUGE_LIVEMAX", BLAMER_GAUGE_LIVEMAX },
	{ "GAUGE_SUM", BLAMER_GAUGE_SUM },
	{ "GAUGE_LIVESUM", BLAMER_GAUGE_LIVESUM },
	{ "GAUGE_MOSTRECENT", BLAMER_GAUGE_MOSTRECENT },
	{ "GAUGE_LIVEMOSTRECENT", BLAMER_GAUGE_LIVEMOSTRECENT },
};

PyMODINIT_FUNC PyInit__blamer(void)
{
	PyObject *m = PyModule_Create(&mod_def);
	size_t i;

	if (!m)
		return NULL;
	pyb_Error = PyErr_NewExceptionWithDoc(
		"blamer.Error",
		"A libblamer call failed: errno and a one-line reason (blamer_errmsg()).",
		PyExc_OSError, NULL);
	if (!pyb_Error || PyModule_AddObjectRef(m, "Error", pyb_Error) < 0)
		goto fail;
	/* a ValueError, as the stale case was before it had a class: code
	 * that catches ValueError still does */
	pyb_StaleHandle = PyErr_NewExceptionWithDoc(
		"blamer.StaleHandle",
		"An object of a closed context was used: an opened Context after\n"
		"close() or abandon(), or a handle (Activity, Value, Path, Metric,\n"
		"Series) made before its context was closed or blamer.reset() ran\n"
		"(which a signal handler, another thread or a finalizer may call at\n"
		"any time). A ValueError; make the handle again from a live context.",
		PyExc_ValueError, NULL);
	if (!pyb_StaleHandle || PyModule_AddObjectRef(m, "StaleHandle", pyb_StaleHandle) < 0)
		goto fail;
	for (i = 0; i < sizeof(constants) / sizeof(constants[0]); i++)
		if (pyb_add_int(m, constants[i].name, constants[i].v) < 0)
			goto fail;
	if (PyType_Ready(&pyb_ActivityType) < 0 || PyType_Ready(&pyb_ValueType) < 0 ||
	    PyType_Ready(&pyb_PathType) < 0 || PyType_Ready(&pyb_ReaderType) < 0)
		goto fail;
	if (PyModule_AddObjectRef(m, "Activity", (PyObject *)&pyb_ActivityType) < 0 ||
	    PyModule_AddObjectRef(m, "Value", (PyObject *)&pyb_ValueType) < 0 ||
	    PyModule_AddObjectRef(m, "Path", (PyObject *)&pyb_PathType) < 0 ||
	    PyModule_AddObjectRef(m, "Reader", (PyObject *)&pyb_ReaderType) < 0)
		goto fail;
	if (PyType_Ready(&pyb_FleetType) < 0 ||
	    PyModule_AddObjectRef(m, "Fleet", (PyObject *)&pyb_FleetType) < 0)
		goto fail;
	if (PyType_Ready(&pyb_MetricType) < 0 || PyType_Ready(&pyb_SeriesType) < 0 ||
	    PyModule_AddObjectRef(m, "Metric", (PyObject *)&pyb_MetricType) < 0 ||
	    PyModule_AddObjectRef(m, "Series", (PyObject *)&pyb_SeriesType) < 0)
		goto fail;
	if (pyb_context_init(m) < 0 || pyb_snapshot_types_init(m) < 0 || pyb_promvalue_init(m) < 0)
		goto fail;
	if (pthread_atfork(NULL, NULL, atfork_child) != 0) {
		PyErr_SetString(PyExc_RuntimeError, "blamer: pthread_atfork failed");
		goto fail;
	}
	return m;
fail:
	Py_DECREF(m);
	return NULL;
}
