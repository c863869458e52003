# SPDX-License-Identifier: MIT
"""blamer.prometheus: prometheus_client's multiprocess mode on blamer heaps.

prometheus_client's multiprocess mode keeps one mmap'd file per process
and metric type and reads them all at every scrape. With this module the
same application, unchanged, records its Counter, Gauge (every
multiprocess_mode), Histogram and Summary values into blamer heaps
instead: lock-free writes with no system call, one heap per process that
readers merge (`blamer export --listen`, or MultiProcessCollector below),
nothing to wipe between runs, no global lock to deadlock a fork, and a
dead worker's last activity in `blamer postmortem`.

Switching it on is one call, made before the application makes its
first metric (gunicorn: in its configuration file; else at the top of
the program)::

    import blamer.prometheus
    blamer.prometheus.install()

It is a call and not an environment variable because prometheus_client
picks its value class when it is imported: a variable could only act
through code of ours run at every interpreter's start (a .pth hook that
every Python program on the machine would pay for), while a call is
made exactly where the program says, and fails there, with a message,
if something is wrong. install() replaces prometheus_client.values
.ValueClass with MultiProcessValue(), and prometheus_client.multiprocess
's MultiProcessCollector and mark_process_dead with this module's. Its
heaps go where blamer's go (BLAMER_BACKEND, BLAMER_DIR: the device, or
/dev/shm/blamer-UID); PROMETHEUS_MULTIPROC_DIR is not used.

The same names and signatures as prometheus_client's own pieces:

MultiProcessValue(process_identifier=os.getpid)
    The value class. A process identifier of the application's is
    called at every write, as prometheus_client does; each identity a
    process takes after its first gets a heap of its own (in a
    directory of its own, identity-ID under the heaps' directory), which
    is how tests fake several processes in one.
MultiProcessCollector(registry, path=None, state=None, keep_dead=8)
    A collector of every heap's metrics, merged as prometheus_client
    merges its files: counters and histograms summed over processes
    live and dead, gauges by their mode (all and liveall: one sample per
    process, labelled pid; live* modes: live processes only). path: a
    blamer heap directory (dir backend); None: where the program's heaps
    are. Its series are `blamer export`'s, the same numbers for the same
    heaps. state: a fold state file, to fold dead heaps into and release
    them as `blamer export --listen --state` does (one folder per set of
    heaps: this collector or the exporter).
mark_process_dead(pid, path=None)
    Needless: blamer knows which processes died (the kernel says so on
    the device backend, /proc and file locks on the dir backend). Kept
    for programs that call it (gunicorn's child_exit hook); for an
    identity faked in this process it makes that identity dead.

What differs from prometheus_client 0.16: a Summary is recorded as a
histogram of one bucket (le="0") whose _count and _sum are the
summary's; Info and Enum stay in their process, as prometheus_client
keeps them in multiprocess mode; a histogram has at most 32 bucket
bounds; a gauge set to NaN is dropped (and counted in the heap); label
names pid, uid, le, quantile, start_time_ns, heap, identity and
metric names starting with blamer_ are the exporter's own; label values
are cut at 255 bytes in all (cut values are marked and counted). The
mostrecent and livemostrecent gauge modes of later prometheus_client
versions work. Documentation/python.rst says what later versions break.
"""
import errno
import math
import os
import re
import threading

import blamer
from . import _blamer

__all__ = ["MultiProcessValue", "MultiProcessCollector", "mark_process_dead", "install",
           "uninstall"]

# The user-data field (DATA_PROCESS) that names a process's identity when
# its process identifier is the application's: the pid label of its
# all/liveall gauges, as prometheus_client labels them.
IDENTITY_FIELD = "prometheus_process_identifier"

# A summary's histogram: one bucket, so _count and _sum are exported
# under their own names.
_SUMMARY_BOUNDS = (0.0,)

# Identities made dead by mark_process_dead() in this process.
_dead_identities = set()


class _ForkLock:
    """A reentrant lock made again in a fork child: `with lock.get():`. A
    lock held by another thread of the parent at the fork is held for
    ever in the child, which has only the forking thread
    (prometheus_client's multiprocess lock deadlocks threaded programs'
    children so). The child is told by the C library's count of forks (a
    pthread_atfork() handler), not by os.register_at_fork(): a server that
    forks in C (uWSGI) runs no Python fork hook in its workers. Its first
    use makes the child's lock, and that may be in several threads at
    once (uWSGI's --threads, a gthread worker: a request's first new
    label set): one lock per generation, installed with dict.setdefault()
    (one step under the GIL), so every thread of the child gets the same
    one; and get() hands the lock itself to the with statement, which
    releases the very lock it took. (Installing it in two steps, and
    releasing whatever lock was current at the exit, let two threads
    each make their own: one released the other's, RuntimeError, and
    its own stayed held for ever.) The writes take no lock at all."""

    def __init__(self):
        self._locks = {_blamer._fork_generation(): threading.RLock()}

    def get(self):
        """This process's lock."""
        gen = _blamer._fork_generation()
        lock = self._locks.get(gen)
        if lock is None:
            lock = self._locks.setdefault(gen, threading.RLock())
        return lock


_lock = _ForkLock()


def _identity_dir_name(ident):
    s = str(ident)
    if re.fullmatch(r"[A-Za-z0-9._-]{1,64}", s) and s not in (".", ".."):
        return "identity-" + s
    return "identity-x" + s.encode().hex()[:120]


def _heap_root(path=None):
    """The dir backend's directory: @path, BLAMER_DIR, or blamer's default."""
    if path:
        return path
    return os.environ.get("BLAMER_DIR") or "/dev/shm/blamer-%d" % os.geteuid()


class _Identities:
    """The identities this process took (process identifiers of the
    application's): its first writes its default heap, each later one a
    heap of its own, in directory identity-ID under the heaps' directory.
    One per process, for every MultiProcessValue() class: tests make a
    class per faked identity."""

    def __init__(self):
        self.fork_gen = None
        self.first = None
        self.contexts = {}        # (heap directory, str(identity)) -> Context

    def context(self, ident):
        """The context of @ident (under _lock)."""
        gen = _blamer._fork_generation()
        if gen != self.fork_gen:
            # a new process (or the first use): inherited identities are not its
            self.fork_gen, self.first, self.contexts = gen, str(ident), {}
        if str(ident) == self.first:
            ctx = blamer.default_context()
        else:
            key = (_heap_root(), str(ident))
            ctx = self.contexts.get(key)
            if ctx is None or ctx.closed:
                ctx = blamer.open(backend="dir",
                                  dir=os.path.join(key[0], _identity_dir_name(ident)))
                self.contexts[key] = ctx
        # the pid label of its all/liveall gauges (set again: cheap, and a
        # context made again since has it too)
        ctx.set_data(IDENTITY_FIELD, str(ident))
        return ctx

    def faked(self):
        """Whether this process took identities beyond its first (tests)."""
        return self.fork_gen == _blamer._fork_generation() and bool(self.contexts)

    def known(self, ident):
        return self.fork_gen == _blamer._fork_generation() and (
            str(ident) == self.first or any(k[1] == str(ident) for k in self.contexts))

    def reset(self):
        for ctx in self.contexts.values():
            ctx.close()
        self.__init__()


_identities = _Identities()


class _Family:
    """What one MultiProcessValue() class shares: its process identifier
    and the histograms being made."""

    def __init__(self, process_identifier):
        default = process_identifier is None or process_identifier is os.getpid
        self.identify = None if default else process_identifier
        self.c = _blamer.MPFamily(self.identify, self._resolve, self._switch_to)
        self.lock = _ForkLock()
        self.hist_bounds = {}     # (metric_name, labelvalues): bounds of a histogram being made
        self.hist_sums = {}       # (metric_name, labelvalues): its _sum, until its +Inf bucket

    # ---- identities ----

    def _switch_to(self, ident):
        """The process identifier now says @ident (called from C): every
        value resolves its series in @ident's heap at its next use."""
        self.c.current = ident
        self.c.bump()

    def context(self):
        """The context the current identity writes."""
        if self.identify is None:
            return blamer.default_context()
        with _lock.get():
            return _identities.context(self.c.current)

    # ---- values ----

    def value(self, cls, typ, metric_name, name, labelnames, labelvalues, help_text, mode):
        """A new value of prometheus_client's metric, as ValueClass(...)."""
        labelnames, labelvalues = tuple(labelnames), tuple(str(v) for v in labelvalues)
        params = (typ, metric_name, name, labelnames, labelvalues, help_text, mode or "")
        if typ == "counter":
            role = _blamer.MPV_COUNTER
        elif typ == "gauge":
            role = _blamer.MPV_GAUGE
        elif typ in ("histogram", "summary") and name == metric_name + "_sum":
            role = _blamer.MPV_OBSERVE
        elif typ == "histogram" and name == metric_name + "_bucket":
            role = _blamer.MPV_LOCAL
        elif typ == "summary" and name == metric_name + "_count":
            role = _blamer.MPV_LOCAL
        else:
            raise ValueError("blamer.prometheus: no %s value named %r" % (typ, name))
        with self.lock.get():
            if typ == "histogram" and role == _blamer.MPV_OBSERVE:
                # the _sum is made first, then a _bucket per bound
                self.hist_bounds[(metric_name, labelvalues)] = []
            elif typ == "histogram":
                bounds = self.hist_bounds.setdefault((metric_name, labelvalues[:-1]), [])
                bounds.append(float(labelvalues[-1]))
        bound = float(labelvalues[-1]) if typ == "histogram" and role == _blamer.MPV_LOCAL \
            else math.nan
        v = _blamer.MPValue.__new__(cls, self.c, role, params, bound)
        # Defined now, so that a metric blamer cannot hold fails where it
        # is made; a histogram's once its last bucket (+Inf) is made.
        if role != _blamer.MPV_LOCAL and typ != "histogram":
            v.get()
        elif typ == "histogram" and role == _blamer.MPV_OBSERVE:
            with self.lock.get():
                self.hist_sums[(metric_name, labelvalues)] = v
        elif typ == "histogram" and math.isinf(float(labelvalues[-1])):
            with self.lock.get():
                s = self.hist_sums.pop((metric_name, labelvalues[:-1]), None)
            if s is not None:
                s.get()
        return v

    def _define(self, params):
        typ, metric_name, name, labelnames, labelvalues, help_text, mode = params
        ctx = self.context()
        if typ == "counter":
            m = ctx.counter(metric_name, help_text, labelnames)
        elif typ == "gauge":
            m = ctx.gauge(metric_name, help_text, labelnames, mode=mode or "all")
        elif typ == "summary":
            m = ctx.histogram(metric_name, help_text, labelnames, buckets=_SUMMARY_BOUNDS)
        else:
            with self.lock.get():
                bounds = list(self.hist_bounds.get((metric_name, labelvalues), ()))
            if bounds and math.isinf(bounds[-1]):
                bounds.pop()
            if len(bounds) > 32:
                raise ValueError("blamer.prometheus: histogram %s has %d bucket bounds; "
                                 "blamer keeps at most 32" % (metric_name, len(bounds)))
            m = ctx.histogram(metric_name, help_text, labelnames, buckets=bounds)
        return m.labels(*labelvalues)

    def _resolve(self, v):
        """The Series value @v writes, in the current identity's heap
        (called from C at its first use and after a new identity)."""
        if v.role == _blamer.MPV_LOCAL:
            return None
        try:
            for tries in range(_RESOLVE_TRIES):
                try:
                    return self._define(v.params)
                except blamer.StaleHandle:
                    # A reset() or close() between the metric's
                    # definition and labels() (a signal handler, another
                    # thread, a finalizer) left the metric's handle stale:
                    # define it again in the context now current, as the
                    # C side does with a stale series. A write raises only
                    # if that happens at every try.
                    if tries == _RESOLVE_TRIES - 1:
                        raise
        except blamer.Error as e:
            # A full heap (a label's values without bound, a user id per
            # request): prometheus_client's inc() and labels() never
            # raise for it, and an instrumented request must not fail.
            # The value writes nothing (its running get() still counts);
            # the heap counted the series it could not make (drops
            # heap_full, blamer_dropped_total). Not tried again: a live
            # heap never gets room back.
            if e.errno != errno.ENOSPC:
                raise
            return None


# How often _resolve() defines a series again that a reset or a close
# made stale meanwhile (blamer.StaleHandle: a handle's context, an
# identity's context closed).
_RESOLVE_TRIES = 8


def MultiProcessValue(process_identifier=os.getpid):
    """The value class of prometheus_client's metrics on blamer heaps.

    prometheus_client makes one per metric child and series
    (ValueClass(typ, metric_name, name, labelnames, labelvalues,
    help_text, multiprocess_mode=...)). Its inc() and set() write the
    blamer series (C: no lock, no system call); get() is what this
    process wrote since it started (or took its identity), as
    MmapedValue.get() is.

    process_identifier: called at every write if given (as
    prometheus_client does); a process's first identity writes its heap,
    each later one a heap of its own. The default, os.getpid, is never
    called: a process changes identity only by forking, which the
    library sees.
    """
    family = _Family(process_identifier)

    class BlamerValue(_blamer.MPValue):
        __slots__ = ()
        _multiprocess = True

        def __new__(cls, typ, metric_name, name, labelnames, labelvalues, help_text,
                    multiprocess_mode="", **kwargs):
            return family.value(cls, typ, metric_name, name, labelnames, labelvalues, help_text,
                                multiprocess_mode)

        def __repr__(self):
            return "<blamer.prometheus value %s%r>" % (self.params[2], self.params[4])

    BlamerValue._family = family
    return BlamerValue


# ---- collecting ----

class MultiProcessCollector:
    """Every heap's metrics, merged, as prometheus_client metric families.

    MultiProcessCollector(registry, path=None, state=None, keep_dead=8,
                          blamer_metrics=False)

    Registers itself with @registry (if not None). path: a blamer heap
    directory (dir backend); None: where this program's heaps are
    (BLAMER_BACKEND, BLAMER_DIR).

    Its series are `blamer export`'s (blamer.Fleet): one per metric and
    label set over every process, live and dead (counters and histograms
    summed exactly, gauges by their mode; all and liveall gauges one per
    process, labelled pid), the same numbers the exporter gives for the
    same heaps. The label uid is left out while one user's heaps are
    read; histogram bounds are written as prometheus_client writes them.

    state: a fold state file. Then each collect folds the dead heaps into
    it, durably, and releases them but the last @keep_dead (kept for
    postmortems), as `blamer export --listen --state` does: the series
    stay as many and no counter goes down however many workers come and
    go. One folder per set of heaps (this collector or `blamer export`,
    not both: each would count only what it folded). Without a state,
    dead heaps count while they exist; blamer's retention deletes dead
    dir heaps beyond BLAMER_DIR_MAX_DEAD (64), the device its oldest
    orphans: a long-running service wants a folder.

    blamer_metrics: also blamer's own series (blamer_processes by role,
    busy threads, drops, attribution paths).

    Only when this process faked identities (a process identifier of its
    own that took several values: tests) are the processes' own series
    merged here instead: those heaps are in directories of their own,
    and identities it marked dead are left out of the live* gauges.
    """

    _READ = dict(threads=False, stacks=False, modules=False, log=False, children=False,
                 dag=False, totals=False)

    def __init__(self, registry, path=None, state=None, keep_dead=8, blamer_metrics=False):
        # (a fork child's collector opens its own reader: see _snapshots)
        self._pid = os.getpid()
        self._path = path
        self._state = state
        self._keep = keep_dead
        self._own = blamer_metrics
        self._lock = _ForkLock()
        self._reader = None
        self._fleet = None
        if registry:
            registry.register(self)

    def _snapshots(self):
        """The reader and its snapshot, and [(identity directory,
        Snapshot)] of faked identities' heaps."""
        with self._lock.get():
            if self._pid != os.getpid():
                # inherited from a parent: its fold state is the parent's
                self._reader = self._fleet = None
                self._pid = os.getpid()
            if self._reader is None:
                kw = dict(self._READ, keep_dead=True)
                if self._own:
                    kw.update(dag=True)
                if self._path is not None:
                    kw.update(backend="dir", dir=self._path)
                self._reader = blamer.Reader(**kw)
                self._fleet = blamer.Fleet(self._state)
            reader, fleet = self._reader, self._fleet
        # Identity directories are read only where this process faked
        # identities: anywhere else one (a test's left behind, or made by
        # whoever may write the directory) turned every collect into the
        # per-process merge, which neither folds nor counts the state's
        # remainder: the counters fell back by what was folded.
        with _lock.get():
            faked = _identities.faked() or bool(_dead_identities)
        root = _heap_root(self._path)
        try:
            names = sorted(n for n in os.listdir(root) if n.startswith("identity-")) \
                if faked else []
        except OSError:
            names = []
        idents = []
        for n in names:
            d = os.path.join(root, n)
            if os.path.isdir(d) and not os.path.islink(d):
                idents.append((n, blamer.snapshot(backend="dir", dir=d, **self._READ)))
        return reader, fleet, reader.snapshot(), idents

    @staticmethod
    def _identity(p):
        f = p.user_data.get(IDENTITY_FIELD)
        if f is not None and isinstance(f.value, str) and f.value:
            return f.value
        return str(p.pid)

    @classmethod
    def _from_processes(cls, snaps):
        """The processes' own series merged here, as `blamer export` merges
        them, but for identities: a process is dead if it died or its
        identity was marked dead. [(definition, labels, path, uid, pid,
        parts, count, buckets)]"""
        merged, order = {}, []
        for _, snap in snaps:
            for p in snap.processes:
                ident = cls._identity(p)
                dead = not p.live or ident in _dead_identities
                for m in p.metrics:
                    d = m.definition
                    if m.conflict or (dead and d.mode.startswith("live")):
                        continue
                    each = d.per_process or d.mode in ("all", "liveall")
                    key = (d.name, tuple(sorted(m.labels.items())), m.path, p.uid,
                           ident if each else None)
                    e = merged.get(key)
                    if e is None:
                        merged[key] = e = [d, m.labels, m.path, p.uid, key[4], [], 0,
                                           [0] * len(m.buckets), None]
                        order.append(key)
                    elif e[0].kind != d.kind or e[0].buckets != d.buckets:
                        continue
                    mode = d.mode.replace("live", "")
                    if d.kind != "gauge" or mode in ("sum", "all"):
                        e[5].extend(list(m.exact) or [m.value])
                        e[6] += m.count
                        e[7] = [a + b for a, b in zip(e[7], m.buckets)]
                    elif mode == "min":
                        e[5] = [m.value if not e[5] else min(e[5][0], m.value)]
                    elif mode == "max":
                        e[5] = [m.value if not e[5] else max(e[5][0], m.value)]
                    elif mode == "mostrecent" and (e[8] is None or m.stamp_ns > e[8]):
                        e[5], e[8] = [m.value], m.stamp_ns
        return [tuple(merged[k][:8]) for k in order]

    # A histogram's count past this would wrap in blamer's 64-bit counts
    # (go down: a reset to Prometheus): `blamer export` leaves such a
    # series out, and so does the merge here.
    _COUNT_MAX = 2 ** 64 - 1

    @staticmethod
    def _sum_of(parts):
        """The exact sum of parts (math.fsum), or None if finite parts add up
        past the largest double (fsum raises OverflowError then) or the
        sum is not finite."""
        try:
            value = math.fsum(parts)
        except (OverflowError, ValueError):
            return None
        return value if math.isfinite(value) else None

    @classmethod
    def _families_of(cls, entries, own=False):
        """The merged entries as families. A counter or histogram whose sum
        does not fit (past the largest double, a count past 2^64 - 1) is
        left out, as `blamer export` leaves it out ("A sum must fit" in
        reader.rst): shown, it would be +Inf or wrapped, and the scrape
        failed on math.fsum's OverflowError, every family with it. With
        own (blamer_metrics=True), blamer_metric_conflicts counts them."""
        from prometheus_client.metrics_core import Metric
        from prometheus_client.utils import floatToGoString

        several_uids = len({e[3] for e in entries}) > 1
        families = {}
        left_out = 0
        for d, labels, path, uid, pid, parts, count, buckets in entries:
            metric = families.get(d.name)
            if metric is None:
                metric = families[d.name] = Metric(d.name, d.help, d.kind)
            lab = dict(labels)
            if path:
                lab["path"] = "/".join("%x" % n for n in path)
            if several_uids:
                lab["uid"] = str(uid)
            if pid is not None:
                lab["pid"] = pid
            value = cls._sum_of(parts)
            if d.kind != "gauge" and (value is None or sum(buckets) > cls._COUNT_MAX):
                left_out += 1
                continue
            if value is None:
                # a gauge is not a sum that must grow: as blamer's exact
                # sum, infinite (or NaN) when its parts are so or overflow
                value = sum(parts)
            if d.kind == "counter":
                metric.add_sample(d.name + "_total", lab, value)
            elif d.kind == "gauge":
                metric.add_sample(d.name, lab, value)
            else:
                acc = 0
                for bound, n in zip(d.buckets, buckets):
                    acc += n
                    metric.add_sample(d.name + "_bucket", dict(lab, le=floatToGoString(bound)),
                                      float(acc))
                metric.add_sample(d.name + "_count", lab, float(acc))
                metric.add_sample(d.name + "_sum", lab, value)
        out = list(families.values())
        if own:
            m = Metric("blamer_metric_conflicts",
                       "Series left out: their sum does not fit (a counter past the largest "
                       "double, a histogram's count past 2^64 - 1).", "gauge")
            m.add_sample("blamer_metric_conflicts", {}, float(left_out))
            out.append(m)
        return out

    def _families_of_text(self, text, snap):
        """`blamer export`'s text as prometheus_client families: its own
        series (blamer_*) left out unless asked for, the label uid while
        one user's heaps are read, le as prometheus_client writes it, and
        a pid the identity its process took, if it took one."""
        from prometheus_client.metrics_core import Metric
        from prometheus_client.parser import text_string_to_metric_families
        from prometheus_client.utils import floatToGoString

        fams = [f for f in text_string_to_metric_families(text)
                if self._own or not f.name.startswith("blamer_")]
        uids = {s.labels.get("uid") for f in fams for s in f.samples}
        idents = None
        out = []
        for f in fams:
            m = Metric(f.name, f.documentation, f.type)
            for s in f.samples:
                lab = dict(s.labels)
                if len(uids) == 1:
                    lab.pop("uid", None)
                if "le" in lab and not self._own or "le" in lab and \
                        not f.name.startswith("blamer_"):
                    lab["le"] = floatToGoString(float(lab["le"]))
                if "pid" in lab and not f.name.startswith("blamer_"):
                    if idents is None:
                        idents = {str(p.pid): self._identity(p) for p in snap.processes}
                    lab["pid"] = idents.get(lab["pid"], lab["pid"])
                m.add_sample(s.name, lab, s.value, s.timestamp, s.exemplar)
            out.append(m)
        return out

    def close(self):
        """Closes its reader and its fold state (another collector or
        exporter may take the state then). The next collect opens them
        again."""
        with self._lock.get():
            reader, fleet = self._reader, self._fleet
            self._reader = self._fleet = None
        if reader is not None:
            reader.close()
        if fleet is not None:
            fleet.close()

    def collect(self):
        reader, fleet, snap, idents = self._snapshots()
        if idents or _dead_identities:
            return self._families_of(self._from_processes([(None, snap)] + idents),
                                     own=self._own)
        if self._state is not None:
            fleet.fold(reader, snap, keep=self._keep)
        return self._families_of_text(fleet.prometheus(snap), snap)


def mark_process_dead(pid, path=None):
    """Needless with blamer (it knows which processes died); for an
    identity faked in this process (MultiProcessValue(process_identifier)),
    makes that identity dead: its live* gauges are no longer collected."""
    with _lock.get():
        if _identities.known(pid):
            _dead_identities.add(str(pid))


def _reset_identities():
    """Forgets the identities taken and marked dead, closing their heaps
    (tests, between cases)."""
    with _lock.get():
        _identities.reset()
        _dead_identities.clear()


_saved = None


def _fast_observe(orig):
    """Histogram.observe() as one C call when the histogram's values are
    blamer's (prometheus_client's loop over the bounds, in Python, costs
    more than the writes): the same buckets, sum and running values."""

    def observe(self, amount, exemplar=None):
        if not exemplar:
            try:
                hist_observe = self._sum.hist_observe
            except AttributeError:      # not blamer's, or a metric with labels unset
                pass
            else:
                hist_observe(amount, self._buckets)
                return
        orig(self, amount, exemplar)
    observe.__doc__ = orig.__doc__
    observe.__wrapped__ = orig
    return observe


def install():
    """Makes prometheus_client's multiprocess mode record into blamer heaps.

    Call it before the first metric is made (a metric made before keeps
    the value class it was made with). Replaces
    prometheus_client.values.ValueClass with MultiProcessValue() and
    prometheus_client.multiprocess.MultiProcessCollector and
    mark_process_dead with this module's, and Histogram.observe with one
    that, for a histogram on blamer values, makes one C call instead of
    its loop over the bounds (the same result). Calling it again does
    nothing.
    """
    global _saved
    from prometheus_client import Histogram, multiprocess, values
    with _lock.get():
        if _saved is not None:
            return
        _saved = (values.ValueClass, multiprocess.MultiProcessCollector,
                  multiprocess.mark_process_dead, Histogram.observe)
    values.ValueClass = MultiProcessValue()
    multiprocess.MultiProcessCollector = MultiProcessCollector
    multiprocess.mark_process_dead = mark_process_dead
    Histogram.observe = _fast_observe(Histogram.observe)


def uninstall():
    """Undoes install() (tests): metrics made after it use
    prometheus_client's own value class again."""
    global _saved
    from prometheus_client import Histogram, multiprocess, values
    with _lock.get():
        if _saved is None:
            return
        values.ValueClass, multiprocess.MultiProcessCollector, \
            multiprocess.mark_process_dead, Histogram.observe = _saved
        _saved = None
