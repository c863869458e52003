# SPDX-License-Identifier: MIT
"""blamer: what every process is doing and what it costs, in shared memory.

A program records what it is doing into a heap of shared memory that
other processes read, live or after it crashed: the activity each thread
is in, typed user data, a log of recent messages, its phase and role,
and measurements attributed along a graph of components (DAG paths).
Writes make no system call and take no lock. The `blamer` tool reads
every heap (`blamer top`, `blamer dump`, `blamer postmortem`, `blamer
export --listen` for Prometheus); so does blamer.snapshot() here.

Writing (the process-default context, made on first use from
BLAMER_BACKEND and BLAMER_DIR; blamer.init() sets it up explicitly)::

    import blamer

    blamer.set_role("worker", 3)
    with blamer.activity("GET /users"):          # the thread's stack
        ...

    @blamer.activity("nightly job")
    def job(): ...

    served = blamer.set_data("requests_served", 0)   # a Value handle
    served.add(1)
    blamer.log("reloaded config")
    blamer.set_phase(blamer.PHASE_MAIN_LOOP)

    p = blamer.path(["server", "handler", "db"], [blamer.UNIT_CPU_NS])
    p.add(1200)

    requests = blamer.counter("app_requests", "Requests", ["route"])
    requests.labels("/users").inc()                 # a Series handle
    latency = blamer.histogram("app_latency_seconds", buckets=[.01, .1, 1])
    latency.observe(0.042)

Reading::

    snap = blamer.snapshot()
    for proc in snap.processes:
        print(proc.pid, proc.role, proc.live,
              [f.label for t in proc.threads for f in t.stack])
    for s in snap.series:                  # metrics merged over processes
        print(s.name, s.labels, s.value)

prometheus_client in multiprocess mode (gunicorn and the like) records
into blamer heaps instead of mmap files with blamer.prometheus: see
help(blamer.prometheus).

Threads and fork: every call is thread-safe; one Activity, Value or Path
may be used by any number of threads. After os.fork() every object
keeps working in the child, writing to the child's own heap (made by its
first write), with nothing to call. Activities are per thread: in
asyncio, keep a `with blamer.activity()` free of awaits, or the stack
shows what other tasks did meanwhile.

Documentation/python.rst is the full reference.
"""

import functools as _functools
import inspect as _inspect

from . import _blamer
from ._blamer import (  # noqa: F401 (re-exported)
    Activity, Child, Context, Edge, Error, Field, Fleet, Frame, HeapInfo, LogEntry,
    MeasuredPath, Metric, MetricDef, MetricSeries, Module, Node, ParentClaim, Path, Process,
    ProcessMetric, Reader, Role, Series, Skipped, Snapshot, StaleHandle, Thread, Total,
    TreeNode, UnitDef, Value,
    activity_kind_name, dag_id, default_context, drop_reason_name, init, open, phase_name,
    reset, snapshot, snapshot_from_memory, unit_name,
)

# The constants: BACKEND_*, PHASE_*, ACTIVITY_*, DATA_*, UNIT_*, BASE_*,
# HEAP_F_*, READ_*, GAUGE_* (MPV_* are blamer.prometheus's).
globals().update({k: v for k, v in vars(_blamer).items()
                  if k.isupper() and not k.startswith("MPV_")})

_default = _blamer.default_context()

# The writer API on the process-default context: bound methods of it, so
# a call costs what a method call on the Context costs.
activity = _default.activity
push = _default.push
pop = _default.pop
set_thread_name = _default.set_thread_name
set_data = _default.set_data
set_phase = _default.set_phase
set_role = _default.set_role
log = _default.log
process_launched = _default.process_launched
process_exited = _default.process_exited
modules_refresh = _default.modules_refresh
dag_node = _default.dag_node
dag_link = _default.dag_link
dag_unit = _default.dag_unit
path = _default.path
counter = _default.counter
gauge = _default.gauge
histogram = _default.histogram
heap_info = _default.heap_info


def _decorate(act, func):
    """@blamer.activity(label): each call of func inside the activity."""
    if _inspect.iscoroutinefunction(func) or _inspect.isasyncgenfunction(func) or \
            _inspect.isgeneratorfunction(func):
        raise TypeError(
            "blamer: an activity cannot decorate %r: it would be pushed while the "
            "generator or coroutine is made, not while it runs, and its awaits or yields "
            "would leave it on the thread's stack; use `with blamer.activity(...)` "
            "inside it, around code without await or yield" % (func,))

    @_functools.wraps(func)
    def wrapper(*args, **kwargs):
        with act:
            return func(*args, **kwargs)
    return wrapper


__all__ = [name for name in globals() if not name.startswith("_")
           and name != "open"]  # blamer.open, never a shadowed builtin open
