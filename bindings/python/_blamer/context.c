// SPDX-License-Identifier: MIT
/*
 * Context: one heap of this process, the process default (the object
 * blamer.default_context() returns, which the module-level calls of
 * blamer/__init__.py are bound methods of) or one blamer.open() made.
 * Its methods are the writer API but for the handle types, which have
 * files of their own.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "pyblamer.h"

pyb_Context *pyb_default_ctx;

pyb_Context *pyb_context_arg(PyObject *obj)
{
	if (!obj || obj == Py_None)
		return pyb_default_ctx;
	if (!PyObject_TypeCheck(obj, &pyb_ContextType)) {
		PyErr_Format(PyExc_TypeError, "blamer: expected a Context, not %.80s",
			     Py_TYPE(obj)->tp_name);
		return NULL;
	}
	if (!pyb_context_usable((pyb_Context *)obj))
		return NULL;
	return (pyb_Context *)obj;
}

void pyb_default_epoch_bump(void)
{
	pyb_default_ctx->epoch++;
}

/* ---- configuration: blamer.open(), blamer.init() ---- */

static const char *const cfg_names[] = {
	"backend", "dir", "max_slabs", "slab_size", "stack_depth", "log_slots", "modules", NULL,
};

static int parse_backend(PyObject *o, int *out)
{
	if (PyUnicode_Check(o)) {
		static const char *const names[] = { "auto", "device", "dir" };
		int i;

		for (i = 0; i < 3; i++)
			if (PyUnicode_CompareWithASCIIString(o, names[i]) == 0) {
				*out = i;
				return 0;
			}
		PyErr_Format(PyExc_ValueError,
			     "blamer: backend must be 'auto', 'device' or 'dir', not %R", o);
		return -1;
	}
	if (PyLong_Check(o)) {
		long v = PyLong_AsLong(o);

		if (v >= BLAMER_BACKEND_AUTO && v <= BLAMER_BACKEND_DIR) {
			*out = (int)v;
			return 0;
		}
		if (!PyErr_Occurred())
			PyErr_Format(PyExc_ValueError, "blamer: no backend %ld", v);
		return -1;
	}
	PyErr_Format(PyExc_TypeError, "blamer: backend must be str, not %.80s",
		     Py_TYPE(o)->tp_name);
	return -1;
}

/*
 * Keyword arguments to a struct blamer_config. @dir_buf keeps the
 * directory's bytes (the str's UTF-8 or a path-like's bytes) for as
 * long as @cfg is used: the caller releases it.
 */
static int parse_config(const char *fn, PyObject *const *args, Py_ssize_t nargs,
			PyObject *kwnames, struct blamer_config *cfg, PyObject **dir_buf)
{
	PyObject *v[7] = { NULL };

	memset(cfg, 0, sizeof(*cfg));
	*dir_buf = NULL;
	if (pyb_parse_kw(fn, args, nargs, kwnames, cfg_names, 0, 0, v) < 0)
		return -1;
	if (v[0] && v[0] != Py_None && parse_backend(v[0], &cfg->backend) < 0)
		return -1;
	if (v[1] && v[1] != Py_None) {
		if (!PyUnicode_FSConverter(v[1], dir_buf))
			return -1;
		cfg->dir = PyBytes_AS_STRING(*dir_buf);
		if (strlen(cfg->dir) != (size_t)PyBytes_GET_SIZE(*dir_buf)) {
			PyErr_SetString(PyExc_ValueError, "blamer: dir contains a NUL character");
			goto fail;
		}
	}
	if (v[2] && pyb_u32(v[2], "max_slabs", &cfg->max_slabs) < 0)
		goto fail;
	if (v[3] && pyb_u64(v[3], "slab_size", &cfg->slab_size) < 0)
		goto fail;
	if (v[4] && pyb_u32(v[4], "stack_depth", &cfg->stack_depth) < 0)
		goto fail;
	if (v[5] && pyb_u32(v[5], "log_slots", &cfg->log_slots) < 0)
		goto fail;
	if (v[6]) {
		int t = PyObject_IsTrue(v[6]);

		if (t < 0)
			goto fail;
		if (!t)
			cfg->flags |= BLAMER_OPEN_NO_MODULES;
	}
	return 0;
fail:
	Py_CLEAR(*dir_buf);
	return -1;
}

PyObject *pyb_open(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	struct blamer_config cfg;
	PyObject *dir_buf;
	struct blamer *b;
	pyb_Context *c;
	int ret;

	(void)self;
	if (parse_config("open", args, nargs, kwnames, &cfg, &dir_buf) < 0)
		return NULL;
	/* Makes files or slabs: may block. */
	Py_BEGIN_ALLOW_THREADS
	ret = blamer_open(&cfg, &b);
	Py_END_ALLOW_THREADS
	Py_XDECREF(dir_buf);
	if (ret < 0)
		return pyb_raise(ret, "blamer_open");
	c = PyObject_New(pyb_Context, &pyb_ContextType);
	if (!c) {
		blamer_close(b);
		return NULL;
	}
	c->b = b;
	c->epoch = 0;
	c->is_default = false;
	c->closed = false;
	c->busy = 0;
	c->draining = 0;
	c->busy_gen = pyb_fork_gen;
	c->weakrefs = NULL;
	return (PyObject *)c;
}

PyObject *pyb_init(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	struct blamer_config cfg;
	PyObject *dir_buf;
	int ret;

	(void)self;
	if (parse_config("init", args, nargs, kwnames, &cfg, &dir_buf) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = blamer_init(&cfg);
	Py_END_ALLOW_THREADS
	Py_XDECREF(dir_buf);
	if (ret < 0)
		return pyb_raise(ret, "blamer_init");
	Py_RETURN_NONE;
}

/*
 * A call that lets the GIL go takes @c's C context with ctx_lend() (with
 * the GIL) and gives it back with ctx_done() (with the GIL again): close,
 * abandon and reset wait in wait_idle() until none is out.
 *
 * The count is this process's: in a fork child it is reset (the calls
 * out at the fork were other threads', which the child does not have: a
 * close there waited for ever), and so are the default's resets under
 * way, whose threads the child does not have either.
 */
static void busy_fresh(pyb_Context *c)
{
	if (c->busy_gen != pyb_fork_gen) {
		c->busy = 0;
		c->draining = 0;
		c->busy_gen = pyb_fork_gen;
	}
}

/* Let the GIL go for a moment, for the threads we wait for. */
static void pause_gil(void)
{
	Py_BEGIN_ALLOW_THREADS
	usleep(100);
	Py_END_ALLOW_THREADS
}

/*
 * While a reset of the default waits for the calls out, a new one waits
 * for the reset: the default's calls never end while others keep
 * starting (a thread looping on heap_info() held off reset() for ever).
 * An opened context refuses calls once closing (closed is set first).
 */
static struct blamer *ctx_lend(pyb_Context *c)
{
	busy_fresh(c);
	while (c->draining) {
		pause_gil();
		busy_fresh(c);
	}
	c->busy++;
	return c->b;
}

static void ctx_done(pyb_Context *c)
{
	c->busy--;
}

/* Until no call that let the GIL go still uses @c's C context. Waits
 * with the GIL let go, so that they can finish. */
static void wait_idle(pyb_Context *c)
{
	busy_fresh(c);
	while (c->busy)
		pause_gil();
}

/*
 * With the GIL, after the calls on the default that let it go are done
 * (@end: blamer_reset() or abandon_default()): every other writer of the
 * default (the module's functions, handles) runs with the GIL, so none is
 * inside the default while it is freed (with the GIL let go, a thread's
 * blamer.log() used the freed default).
 */
static void end_default(void (*end)(void))
{
	/* First: no handle of the old default is used again. */
	pyb_default_epoch_bump();
	busy_fresh(pyb_default_ctx);
	pyb_default_ctx->draining++;
	wait_idle(pyb_default_ctx);
	/* again: a handle made while waiting (the GIL let go) has the epoch
	 * bumped above but a C handle of the default that end() frees */
	pyb_default_epoch_bump();
	end();
	/* a fork while waiting made the child's count fresh: never below 0 */
	if (pyb_default_ctx->draining)
		pyb_default_ctx->draining--;
}

/* The default as after a crash, if it was made (abandoning makes none). */
static void abandon_default(void)
{
	blamer_abandon(NULL);
}

PyObject *pyb_reset(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	end_default(blamer_reset);
	Py_RETURN_NONE;
}

/* ---- methods ---- */

static PyObject *ctx_close(pyb_Context *self, PyObject *unused)
{
	struct blamer *b = self->b;

	(void)unused;
	if (self->is_default)
		return pyb_reset(NULL, NULL);
	if (self->closed)
		Py_RETURN_NONE;
	self->closed = true;
	self->epoch++;
	self->b = NULL;
	wait_idle(self);	/* no other thread's call uses b any more */
	Py_BEGIN_ALLOW_THREADS
	blamer_close(b);
	Py_END_ALLOW_THREADS
	Py_RETURN_NONE;
}

static PyObject *ctx_abandon(pyb_Context *self, PyObject *unused)
{
	struct blamer *b = self->b;

	(void)unused;
	if (self->is_default) {
		end_default(abandon_default);
		Py_RETURN_NONE;
	}
	if (self->closed)
		Py_RETURN_NONE;
	self->epoch++;
	self->closed = true;
	self->b = NULL;
	wait_idle(self);
	Py_BEGIN_ALLOW_THREADS
	blamer_abandon(b);
	Py_END_ALLOW_THREADS
	Py_RETURN_NONE;
}

static PyObject *ctx_enter(pyb_Context *self, PyObject *unused)
{
	(void)unused;
	if (!pyb_context_usable(self))
		return NULL;
	Py_INCREF(self);
	return (PyObject *)self;
}

static PyObject *ctx_exit(pyb_Context *self, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *r;

	(void)args;
	(void)nargs;
	r = ctx_close(self, NULL);
	if (!r)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_FALSE;
}

static PyObject *ctx_activity(pyb_Context *self, PyObject *const *args, Py_ssize_t nargs,
			      PyObject *kwnames)
{
	if (!pyb_context_usable(self))
		return NULL;
	return pyb_activity_new(self, args, nargs, kwnames);
}

static const char *const push_names[] = { "label", "kind", "data0", "data1", NULL };

static PyObject *ctx_push(pyb_Context *self, PyObject *const *args, Py_ssize_t nargs,
			  PyObject *kwnames)
{
	PyObject *v[4] = { NULL };
	uint32_t kind = BLAMER_ACTIVITY_TASK;
	uint64_t d0 = 0, d1 = 0;
	const char *label;
	int depth;

	if (!pyb_context_usable(self))
		return NULL;
	if (pyb_parse_kw("push", args, nargs, kwnames, push_names, 1, 4, v) < 0)
		return NULL;
	label = pyb_utf8(v[0], "label", NULL);
	if (!label || (v[1] && pyb_u32(v[1], "kind", &kind) < 0) ||
	    (v[2] && pyb_u64(v[2], "data0", &d0) < 0) || (v[3] && pyb_u64(v[3], "data1", &d1) < 0))
		return NULL;
	depth = blamer_push(self->b, kind, label, d0, d1);
	if (depth < 0)
		return pyb_raise(depth, "blamer_push");
	return PyLong_FromLong(depth);
}

static PyObject *ctx_pop(pyb_Context *self, PyObject *unused)
{
	(void)unused;
	if (!pyb_context_usable(self))
		return NULL;
	blamer_pop(self->b);
	Py_RETURN_NONE;
}

/* One string argument to an int-returning call. */
static PyObject *call_str(pyb_Context *self, PyObject *arg, const char *what,
			  int (*fn)(struct blamer *, const char *))
{
	const char *s;
	int ret;

	if (!pyb_context_usable(self))
		return NULL;
	s = pyb_utf8(arg, what, NULL);
	if (!s)
		return NULL;
	ret = fn(self->b, s);
	if (ret < 0)
		return pyb_raise(ret, what);
	Py_RETURN_NONE;
}

static PyObject *ctx_set_thread_name(pyb_Context *self, PyObject *arg)
{
	return call_str(self, arg, "thread name", blamer_thread_set_name);
}

static int log_str(struct blamer *b, const char *s)
{
	return blamer_log(b, "%s", s);
}

static PyObject *ctx_log(pyb_Context *self, PyObject *arg)
{
	return call_str(self, arg, "log message", log_str);
}

static PyObject *ctx_set_phase(pyb_Context *self, PyObject *arg)
{
	uint32_t phase;
	int ret;

	if (!pyb_context_usable(self) || pyb_u32(arg, "phase", &phase) < 0)
		return NULL;
	ret = blamer_set_phase(self->b, phase);
	if (ret < 0)
		return pyb_raise(ret, "blamer_set_phase");
	Py_RETURN_NONE;
}

static const char *const role_names[] = { "role", "instance", NULL };

static PyObject *ctx_set_role(pyb_Context *self, PyObject *const *args, Py_ssize_t nargs,
			      PyObject *kwnames)
{
	PyObject *v[2] = { NULL };
	const char *role, *inst = NULL;
	int ret;

	if (pyb_parse_kw("set_role", args, nargs, kwnames, role_names, 1, 2, v) < 0)
		return NULL;
	role = pyb_utf8(v[0], "role", NULL);
	if (!role)
		return NULL;
	if (v[1] && v[1] != Py_None) {
		if (PyLong_Check(v[1])) {	/* a worker number */
			PyObject *s = PyObject_Str(v[1]);

			if (!s)
				return NULL;
			/* the str lives on in v[1]'s place for the call; checked
			 * after str(), whose __str__ may have closed the context
			 * (its b NULL, which C takes for the default) */
			inst = pyb_utf8(s, "instance", NULL);
			ret = inst && pyb_context_usable(self) ?
				blamer_set_role(self->b, role, inst) : 0;
			Py_DECREF(s);
			if (PyErr_Occurred())
				return NULL;
			goto done;
		}
		inst = pyb_utf8(v[1], "instance", NULL);
		if (!inst)
			return NULL;
	}
	if (!pyb_context_usable(self))
		return NULL;
	ret = blamer_set_role(self->b, role, inst);
done:
	if (ret < 0)
		return pyb_raise(ret, "blamer_set_role");
	Py_RETURN_NONE;
}

static PyObject *ctx_process_launched(pyb_Context *self, PyObject *arg)
{
	struct blamer *b;
	long pid;
	int ret;

	pid = PyLong_AsLong(arg);
	if (pid == -1 && PyErr_Occurred())
		return NULL;
	/* after the conversion: __index__ may have closed it (its b NULL,
	 * which C takes for the default) */
	if (!pyb_context_usable(self))
		return NULL;
	if (pid <= 0 || pid > INT32_MAX)
		return PyErr_Format(PyExc_ValueError, "blamer: no pid %ld", pid);
	/* reads /proc/<pid>/stat */
	b = ctx_lend(self);
	Py_BEGIN_ALLOW_THREADS
	ret = blamer_process_launched(b, (pid_t)pid);
	Py_END_ALLOW_THREADS
	ctx_done(self);
	if (ret < 0)
		return pyb_raise(ret, "blamer_process_launched");
	Py_RETURN_NONE;
}

static PyObject *ctx_process_exited(pyb_Context *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct blamer *b;
	long pid, status;
	int ret;

	if (nargs != 2)
		return PyErr_Format(PyExc_TypeError,
				    "process_exited() takes 2 arguments: pid, wait status");
	pid = PyLong_AsLong(args[0]);
	if (pid == -1 && PyErr_Occurred())
		return NULL;
	status = PyLong_AsLong(args[1]);
	if (status == -1 && PyErr_Occurred())
		return NULL;
	/* after the conversions, as in process_launched() */
	if (!pyb_context_usable(self))
		return NULL;
	if (pid <= 0 || pid > INT32_MAX)
		return PyErr_Format(PyExc_ValueError, "blamer: no pid %ld", pid);
	if (status < INT32_MIN || status > INT32_MAX)
		return PyErr_Format(PyExc_ValueError, "blamer: no wait status %ld", status);
	/* may remove the child's heap files */
	b = ctx_lend(self);
	Py_BEGIN_ALLOW_THREADS
	ret = blamer_process_exited(b, (pid_t)pid, (int)status);
	Py_END_ALLOW_THREADS
	ctx_done(self);
	if (ret < 0)
		return pyb_raise(ret, "blamer_process_exited");
	return PyLong_FromLong(ret);
}

static PyObject *ctx_modules_refresh(pyb_Context *self, PyObject *unused)
{
	struct blamer *b;
	int ret;

	(void)unused;
	if (!pyb_context_usable(self))
		return NULL;
	/* takes the loader's lock */
	b = ctx_lend(self);
	Py_BEGIN_ALLOW_THREADS
	ret = blamer_modules_refresh(b);
	Py_END_ALLOW_THREADS
	ctx_done(self);
	if (ret < 0)
		return pyb_raise(ret, "blamer_modules_refresh");
	return PyLong_FromLong(ret);
}

static PyTypeObject HeapInfoType;
static PyStructSequence_Field heap_info_fields[] = {
	{ "backend", "'device' or 'dir'" },
	{ "slab_count", "slabs the heap has now" },
	{ "max_slabs", "slabs it may grow to" },
	{ "flags", "HEAP_F_* (CORRUPT, FULL)" },
	{ "slab_size", "bytes per slab" },
	{ "heap_id", "the heap's id" },
	{ "bytes_used", "bytes allocated in it" },
	{ "pid", "the process it was made for" },
	{ "start_ns", "that process's start time (ns since boot)" },
	{ "dir", "dir backend: the directory, else ''" },
	{ NULL, NULL },
};
static PyStructSequence_Desc heap_info_desc = {
	"blamer.HeapInfo", "What a context is writing to (Context.heap_info()).",
	heap_info_fields, 10,
};

static PyObject *ctx_heap_info(pyb_Context *self, PyObject *unused)
{
	struct blamer_heap_info hi;
	struct blamer *b;
	PyObject *r;
	int ret;

	(void)unused;
	if (!pyb_context_usable(self))
		return NULL;
	/* may make the heap (a fork child's first write) */
	b = ctx_lend(self);
	Py_BEGIN_ALLOW_THREADS
	ret = blamer_heap_info(b, &hi);
	Py_END_ALLOW_THREADS
	ctx_done(self);
	if (ret < 0)
		return pyb_raise(ret, "blamer_heap_info");
	r = PyStructSequence_New(&HeapInfoType);
	if (!r)
		return NULL;
	PyStructSequence_SET_ITEM(r, 0, PyUnicode_FromString(
		hi.backend == BLAMER_BACKEND_DEVICE ? "device" : "dir"));
	PyStructSequence_SET_ITEM(r, 1, PyLong_FromUnsignedLong(hi.slab_count));
	PyStructSequence_SET_ITEM(r, 2, PyLong_FromUnsignedLong(hi.max_slabs));
	PyStructSequence_SET_ITEM(r, 3, PyLong_FromUnsignedLong(hi.flags));
	PyStructSequence_SET_ITEM(r, 4, PyLong_FromUnsignedLongLong(hi.slab_size));
	PyStructSequence_SET_ITEM(r, 5, PyLong_FromUnsignedLongLong(hi.heap_id));
	PyStructSequence_SET_ITEM(r, 6, PyLong_FromUnsignedLongLong(hi.bytes_used));
	PyStructSequence_SET_ITEM(r, 7, PyLong_FromLongLong(hi.pid));
	PyStructSequence_SET_ITEM(r, 8, PyLong_FromLongLong(hi.start_ns));
	PyStructSequence_SET_ITEM(r, 9, PyUnicode_DecodeFSDefault(hi.dir));
	for (Py_ssize_t i = 0; i < 10; i++)
		if (!PyStructSequence_GET_ITEM(r, i)) {
			Py_DECREF(r);
			return NULL;
		}
	return r;
}

/* A method that checks the context, then is the function of the layer
 * below (pyb_NAME(), its arguments as given). */
#define CTX_FORWARD(name)                                                             \
	static PyObject *ctx_##name(pyb_Context *self, PyObject *const *args,          \
				    Py_ssize_t nargs, PyObject *kwnames)               \
	{                                                                             \
		if (!pyb_context_usable(self))                                        \
			return NULL;                                                  \
		return pyb_##name(self, args, nargs, kwnames);                        \
	}
CTX_FORWARD(set_data)
CTX_FORWARD(dag_node)
CTX_FORWARD(dag_unit)
CTX_FORWARD(path)
CTX_FORWARD(counter)
CTX_FORWARD(gauge)
CTX_FORWARD(histogram)
#undef CTX_FORWARD

static PyObject *ctx_dag_link(pyb_Context *self, PyObject *const *args, Py_ssize_t nargs)
{
	if (!pyb_context_usable(self))
		return NULL;
	return pyb_dag_link(self, args, nargs);
}

#define FASTKW (METH_FASTCALL | METH_KEYWORDS)
static PyMethodDef ctx_methods[] = {
	{ "activity", (PyCFunction)(void (*)(void))ctx_activity, FASTKW,
	  "activity(label, kind=ACTIVITY_TASK, data0=0, data1=0) -> Activity\n\n"
	  "An activity of the calling thread: a context manager and a decorator\n"
	  "that push it on the thread's stack on entry and pop it on exit:\n\n"
	  "    with blamer.activity('GET /users'):\n"
	  "        ...\n\n"
	  "    @blamer.activity('nightly job')\n"
	  "    def job(): ...\n\n"
	  "label: str, the first 80 bytes of its UTF-8 kept (longer: cut, marked\n"
	  "and counted); kind: ACTIVITY_*; data0, data1: two numbers (0..2**64-1)\n"
	  "the kind gives a meaning (a lock's address, a pid, a task id).\n"
	  "A push or pop makes no system call; a full heap or a stack past its\n"
	  "slots is counted in the heap, never raised." },
	{ "push", (PyCFunction)(void (*)(void))ctx_push, FASTKW,
	  "push(label, kind=ACTIVITY_TASK, data0=0, data1=0) -> depth\n\n"
	  "Pushes an activity (what activity() does on entry); pop() ends it.\n"
	  "Returns the new depth of the thread's stack. Raises Error if the\n"
	  "thread could not be given a stack (heap full or corrupt)." },
	{ "pop", (PyCFunction)ctx_pop, METH_NOARGS,
	  "pop()\n\nPops the calling thread's top activity (none: nothing)." },
	{ "set_thread_name", (PyCFunction)ctx_set_thread_name, METH_O,
	  "set_thread_name(name)\n\nNames the calling thread in the heap (32 bytes kept)." },
	{ "set_data", (PyCFunction)(void (*)(void))ctx_set_data, FASTKW,
	  "set_data(name, value, scope=DATA_PROCESS, type=None, capacity=None) -> Value\n\n"
	  "Sets user-data field @name to @value and returns its handle (a Value,\n"
	  "whose set() and add() update it in place), or None for the scope\n"
	  "DATA_ACTIVITY (such a field ends with its activity). The type follows\n"
	  "the value: bool, int (signed 64-bit), float, str, bytes; type= says\n"
	  "otherwise: 'bool', 'char', 'int', 'uint', 'double', 'string', 'raw'.\n"
	  "A str or bytes field keeps the capacity of its first value unless\n"
	  "capacity= reserves more (str only). A scope's fields share one 4 KiB\n"
	  "record: at most 4080 bytes for a lone field, less beside others.\n"
	  "Scopes: DATA_PROCESS (this process), DATA_GLOBAL (the application:\n"
	  "readers merge it over processes), DATA_ACTIVITY (the calling thread's\n"
	  "top activity). Setting a name again with another type raises Error." },
	{ "set_phase", (PyCFunction)ctx_set_phase, METH_O,
	  "set_phase(phase)\n\nThe process's phase: PHASE_* or an application's own >= 1000." },
	{ "set_role", (PyCFunction)(void (*)(void))ctx_set_role, FASTKW,
	  "set_role(role, instance=None)\n\n"
	  "Names this process's role and instance ('worker', 2) in its heap, for\n"
	  "every view and the exporters' labels: 1..31 printable bytes each. Once\n"
	  "per heap: again the same way is a no-op, another way raises Error\n"
	  "(EEXIST). A fork child's heap does not inherit its parent's role: call\n"
	  "it first thing in the child." },
	{ "log", (PyCFunction)ctx_log, METH_O,
	  "log(message)\n\nAppends @message (120 bytes kept) to the heap's ring of recent messages." },
	{ "process_launched", (PyCFunction)ctx_process_launched, METH_O,
	  "process_launched(pid)\n\nRecords a child this process started." },
	{ "process_exited", (PyCFunction)(void (*)(void))ctx_process_exited, METH_FASTCALL,
	  "process_exited(pid, wait_status) -> files removed\n\n"
	  "Records how a child ended (the status from os.waitpid()); on the dir\n"
	  "backend a child that exited with 0 has its heap files removed." },
	{ "modules_refresh", (PyCFunction)ctx_modules_refresh, METH_NOARGS,
	  "modules_refresh() -> count\n\nRecords the loaded shared objects again (after a dlopen)." },
	{ "dag_node", (PyCFunction)(void (*)(void))ctx_dag_node, FASTKW,
	  "dag_node(name, type=0, id=None) -> id\n\n"
	  "Describes node @name (id: dag_id(name) unless given) of the attribution\n"
	  "DAG; @type is the application's own number for its kind." },
	{ "dag_link", (PyCFunction)(void (*)(void))ctx_dag_link, METH_FASTCALL,
	  "dag_link(parent, child)\n\nA DAG edge; nodes by name or id." },
	{ "dag_unit", (PyCFunction)(void (*)(void))ctx_dag_unit, FASTKW,
	  "dag_unit(unit, name, base=BASE_NONE)\n\n"
	  "Names application unit @unit (>= UNIT_APP_BASE) for readers and\n"
	  "exporters ([a-z_][a-z0-9_]*, up to 31) and says what it counts\n"
	  "(BASE_NONE, BASE_SECONDS: values in ns, BASE_BYTES)." },
	{ "path", (PyCFunction)(void (*)(void))ctx_path, FASTKW,
	  "path(nodes, units) -> Path\n\n"
	  "The handle of a DAG path (up to 8 nodes, by name or id, root first)\n"
	  "with up to 8 measurements in @units (UNIT_* or application units);\n"
	  "Path.add() adds to them. Get it at setup: it walks the heap." },
	{ "counter", (PyCFunction)(void (*)(void))ctx_counter, FASTKW,
	  "counter(name, help=None, labels=(), *, base=BASE_NONE, per_process=False) -> Metric\n\n"
	  "Defines a counter (a double that only grows) in the heap, or finds it.\n"
	  "name: [a-zA-Z_:][a-zA-Z0-9_:]*, up to 63 bytes, not starting with\n"
	  "'blamer_'; exported as name_total. help: 127 bytes kept. labels: up to\n"
	  "8 names (not le, quantile, pid, uid, start_time_ns, heap, identity,\n"
	  "path or __*). base: what values count (BASE_SECONDS: seconds).\n"
	  "per_process: exported per process only, never summed over them.\n"
	  "Readers sum a counter over every process, live and dead. Raises Error\n"
	  "for a bad definition or one of that name defined otherwise." },
	{ "gauge", (PyCFunction)(void (*)(void))ctx_gauge, FASTKW,
	  "gauge(name, help=None, labels=(), *, mode='all', base=BASE_NONE, per_process=False)\n"
	  "    -> Metric\n\n"
	  "Defines a gauge: a double that is set and added to. mode: how readers\n"
	  "merge it over processes, as prometheus_client's multiprocess_mode: all\n"
	  "and liveall (a series per process), min, max, sum, mostrecent (one over\n"
	  "them), and their live* forms, which leave dead processes out." },
	{ "histogram", (PyCFunction)(void (*)(void))ctx_histogram, FASTKW,
	  "histogram(name, help=None, labels=(), *, buckets=None, schema=3, min_exp=-10,\n"
	  "          max_exp=10, base=BASE_NONE, per_process=False) -> Metric\n\n"
	  "Defines a histogram: observations counted in buckets, and summed.\n"
	  "buckets: up to 32 ascending finite bounds (a last +Inf is implied); else\n"
	  "exponential buckets, bucket k ending at 2**(k * 2**-schema) over the\n"
	  "window 2**min_exp .. 2**max_exp (at most 256 buckets), which merge\n"
	  "exactly over processes like Prometheus's native histograms." },
	{ "heap_info", (PyCFunction)ctx_heap_info, METH_NOARGS,
	  "heap_info() -> HeapInfo\n\nWhat the context is writing to." },
	{ "close", (PyCFunction)ctx_close, METH_NOARGS,
	  "close()\n\n"
	  "A clean end: the heap is marked deleted and removed. Its handles stop\n"
	  "working (ValueError). On the default context: blamer.reset()." },
	{ "abandon", (PyCFunction)ctx_abandon, METH_NOARGS,
	  "abandon()\n\nUnmaps without marking anything: the heap stays as after a crash,\n"
	  "beside any heap made after it (on the default context: at its next use)." },
	{ "__enter__", (PyCFunction)ctx_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)(void (*)(void))ctx_exit, METH_FASTCALL, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyObject *ctx_repr(pyb_Context *self)
{
	if (self->is_default)
		return PyUnicode_FromString("<blamer.Context default>");
	if (self->closed)
		return PyUnicode_FromString("<blamer.Context closed>");
	return PyUnicode_FromFormat("<blamer.Context %p>", (void *)self->b);
}

static PyObject *ctx_get_closed(pyb_Context *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(self->closed);
}

static PyGetSetDef ctx_getset[] = {
	{ "closed", (getter)ctx_get_closed, NULL, "whether close() or abandon() ended it", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

/*
 * An opened context nobody refers to any more (its handles keep it
 * alive) is closed, as a file is: a clean end.
 */
static void ctx_dealloc(pyb_Context *self)
{
	if (self->weakrefs)
		PyObject_ClearWeakRefs((PyObject *)self);
	if (!self->is_default && !self->closed && self->b)
		blamer_close(self->b);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject pyb_ContextType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "blamer.Context",
	.tp_basicsize = sizeof(pyb_Context),
	.tp_dealloc = (destructor)ctx_dealloc,
	.tp_repr = (reprfunc)ctx_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A heap of this process: the process default (blamer.default_context(),\n"
		  "which blamer's module-level calls use) or one blamer.open() made.\n"
		  "Its methods are the writer API. An opened context is a context\n"
		  "manager that closes it at the end of the with block.",
	.tp_weaklistoffset = offsetof(pyb_Context, weakrefs),
	.tp_methods = ctx_methods,
	.tp_getset = ctx_getset,
};

int pyb_context_init(PyObject *m)
{
	if (PyType_Ready(&pyb_ContextType) < 0)
		return -1;
	if (PyStructSequence_InitType2(&HeapInfoType, &heap_info_desc) < 0)
		return -1;
	if (PyModule_AddObjectRef(m, "Context", (PyObject *)&pyb_ContextType) < 0 ||
	    PyModule_AddObjectRef(m, "HeapInfo", (PyObject *)&HeapInfoType) < 0)
		return -1;
	pyb_default_ctx = PyObject_New(pyb_Context, &pyb_ContextType);
	if (!pyb_default_ctx)
		return -1;
	pyb_default_ctx->b = NULL;
	pyb_default_ctx->epoch = 0;
	pyb_default_ctx->is_default = true;
	pyb_default_ctx->closed = false;
	pyb_default_ctx->busy = 0;
	pyb_default_ctx->draining = 0;
	pyb_default_ctx->busy_gen = pyb_fork_gen;
	pyb_default_ctx->weakrefs = NULL;
	/* Ours stays for the process's life (the pointer is used without a
	 * lookup); the module holds a second one. */
	return PyModule_AddObjectRef(m, "_default", (PyObject *)pyb_default_ctx);
}
