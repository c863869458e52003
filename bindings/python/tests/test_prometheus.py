# SPDX-License-Identifier: MIT
"""blamer.prometheus against Debian's prometheus_client (0.16).

Class MultiProcess holds the cases of prometheus_client's own
tests/test_multiprocess.py (0.16; the file is not in the Debian package:
these are written from its documented behaviour), with blamer's values
and collector where prometheus_client's use mmap files: faked process
identifiers (MultiProcessValue(lambda: 123)), every gauge mode,
mark_process_dead, a counter across an identity change, the collected
samples exactly. The classes after it use real processes (fork), the
switch (install()), and the two merges (the C reader's and the
per-process one) against each other.
"""
import json
import locale
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

import blamer
import blamer.prometheus as bp
from common import BACKEND, HeapTest

try:
    import prometheus_client
    from prometheus_client import (CollectorRegistry, Counter, Enum, Gauge, Histogram, Info,
                                   Summary, generate_latest, values)
    from prometheus_client.samples import Sample
except ImportError:        # pragma: no cover
    prometheus_client = None


def comma_locale(tmp):
    """Makes current a locale whose decimal point is ',': the system's if
    it has one, else de_DE made by localedef into @tmp and found through
    LOCPATH (Debian installs none). None, or why there is none."""
    for name in ("de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "nl_NL.UTF-8"):
        try:
            locale.setlocale(locale.LC_ALL, name)
        except locale.Error:
            continue
        if locale.localeconv()["decimal_point"] == ",":
            return None
    if not shutil.which("localedef"):
        return "no locale with a decimal comma, and no localedef to make one"
    r = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8",
                        os.path.join(tmp, "de_DE.UTF-8")], capture_output=True, text=True)
    if r.returncode:
        return "localedef could not make de_DE.UTF-8: " + (r.stderr.strip() or "?")[:200]
    os.environ["LOCPATH"] = tmp
    try:
        locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")
    except locale.Error as e:
        return "the de_DE.UTF-8 made by localedef: %s" % e
    if locale.localeconv()["decimal_point"] != ",":
        return "the de_DE.UTF-8 made by localedef has no decimal comma"
    return None


@unittest.skipIf(prometheus_client is None, "python3-prometheus-client not installed")
class PromTest(HeapTest):
    def setUp(self):
        super().setUp()
        bp._reset_identities()
        self._saved_value_class = values.ValueClass
        values.ValueClass = bp.MultiProcessValue(lambda: 123)
        self.registry = CollectorRegistry()
        self.collector = bp.MultiProcessCollector(self.registry, path=self.dir)

    def tearDown(self):
        values.ValueClass = self._saved_value_class
        bp._reset_identities()
        super().tearDown()

    def value(self, name, labels=None):
        return self.registry.get_sample_value(name, labels or {})


class MultiProcess(PromTest):
    """prometheus_client's tests/test_multiprocess.py, TestMultiProcess."""

    def test_counter_adds(self):
        c1 = Counter('c', 'help', registry=None)
        values.ValueClass = bp.MultiProcessValue(lambda: 456)
        c2 = Counter('c', 'help', registry=None)
        self.assertEqual(0, self.value('c_total'))
        c1.inc(1)
        c2.inc(2)
        self.assertEqual(3, self.value('c_total'))

    def test_summary_adds(self):
        s1 = Summary('s', 'help', registry=None)
        values.ValueClass = bp.MultiProcessValue(lambda: 456)
        s2 = Summary('s', 'help', registry=None)
        self.assertEqual(0, self.value('s_count'))
        self.assertEqual(0, self.value('s_sum'))
        s1.observe(1)
        s2.observe(2)
        self.assertEqual(2, self.value('s_count'))
        self.assertEqual(3, self.value('s_sum'))

    def test_histogram_adds(self):
        h1 = Histogram('h', 'help', registry=None)
        values.ValueClass = bp.MultiProcessValue(lambda: 456)
        h2 = Histogram('h', 'help', registry=None)
        self.assertEqual(0, self.value('h_count'))
        self.assertEqual(0, self.value('h_sum'))
        self.assertEqual(0, self.value('h_bucket', {'le': '5.0'}))
        h1.observe(1)
        h2.observe(2)
        self.assertEqual(2, self.value('h_count'))
        self.assertEqual(3, self.value('h_sum'))
        self.assertEqual(2, self.value('h_bucket', {'le': '5.0'}))

    def test_sums_that_do_not_fit_are_left_out_not_a_failed_scrape(self):
        # two identities' counters of 1.5e308 (each valid alone): their
        # sum is past the largest double, and math.fsum's OverflowError
        # failed the whole collect; left out, as `blamer export` does
        c1 = Counter('big', 'help', registry=None)
        h1 = Histogram('h', 'help', registry=None, buckets=(1,))
        ok1 = Counter('ok', 'help', registry=None)
        g1 = Gauge('g', 'help', registry=None, multiprocess_mode='sum')
        values.ValueClass = bp.MultiProcessValue(lambda: 456)
        c2 = Counter('big', 'help', registry=None)
        h2 = Histogram('h', 'help', registry=None, buckets=(1,))
        ok2 = Counter('ok', 'help', registry=None)
        g2 = Gauge('g', 'help', registry=None, multiprocess_mode='sum')
        for c, h, ok, g in ((c1, h1, ok1, g1), (c2, h2, ok2, g2)):
            c.inc(1.5e308)
            h.observe(1.5e308)
            ok.inc(1)
            g.set(1.5e308)
        text = generate_latest(self.registry).decode()
        self.assertEqual(2, self.value('ok_total'))
        self.assertIsNone(self.value('big_total'), text)
        self.assertIsNone(self.value('h_count'), text)
        self.assertIsNone(self.value('h_bucket', {'le': '+Inf'}), text)
        # a gauge is not a sum that must grow: infinite, as blamer's
        self.assertEqual(math.inf, self.value('g'))
        # counted where blamer's own series are asked for
        own = CollectorRegistry()
        bp.MultiProcessCollector(own, path=self.dir, blamer_metrics=True)
        self.assertEqual(2, own.get_sample_value('blamer_metric_conflicts'))
        self.assertEqual(2, own.get_sample_value('ok_total'))

    def test_histogram_count_past_64_bits_is_left_out(self):
        # buckets of 2^63 in two heaps: `blamer export` leaves the
        # series out rather than wrap; the merge here added Python ints
        # and showed 2^64, which no heap can hold
        from types import SimpleNamespace
        d = SimpleNamespace(name='h', help='help', kind='histogram', buckets=(1.0, math.inf))
        c = SimpleNamespace(name='c', help='help', kind='counter', buckets=())
        entries = [(d, {}, (), 0, None, [0.5, 0.5], 2 ** 64, [2 ** 64, 0]),
                   (d, {'k': 'a'}, (), 0, None, [1.0], 2 ** 64 - 1, [2 ** 64 - 2, 1]),
                   (c, {}, (), 0, None, [3.0], 0, [])]
        fams = self.collector._families_of(entries, own=True)
        got = {(x.name, tuple(sorted(x.labels.items()))): x.value
               for f in fams for x in f.samples}
        self.assertNotIn(('h_count', ()), got)
        self.assertEqual(2.0 ** 64, got[('h_count', (('k', 'a'),))])
        self.assertEqual(3.0, got[('c_total', ())])
        self.assertEqual(1, got[('blamer_metric_conflicts', ())])

    def test_gauge_all(self):
        g1 = Gauge('g', 'help', registry=None)
        values.ValueClass = bp.MultiProcessValue(lambda: 456)
        g2 = Gauge('g', 'help', registry=None)
        self.assertEqual(0, self.value('g', {'pid': '123'}))
        self.assertEqual(0, self.value('g', {'pid': '456'}))
        g1.set(1)
        g2.set(2)
        bp.mark_process_dead(123)
        self.assertEqual(1, self.value('g', {'pid': '123'}))
        self.assertEqual(2, self.value('g', {'pid': '456'}))

    def test_gauge_liveall(self):
        g1 = Gauge('g', 'help', registry=None, multiprocess_mode='liveall')
        values.ValueClass = bp.MultiProcessValue(lambda: 456)
        g2 = Gauge('g', 'help', registry=None, multiprocess_mode='liveall')
        self.assertEqual(0, self.value('g', {'pid': '123'}))
        self.assertEqual(0, self.value('g', {'pid': '456'}))
        g1.set(1)
        g2.set(2)
        self.assertEqual(1, self.value('g', {'pid': '123'}))
        self.assertEqual(2, self.value('g', {'pid': '456'}))
        bp.mark_process_dead(123, self.dir)
        self.assertEqual(None, self.value('g', {'pid': '123'}))
        self.assertEqual(2, self.value('g', {'pid': '456'}))

    def _two(self, mode):
        g1 = Gauge('g', 'help', registry=None, multiprocess_mode=mode)
        values.ValueClass = bp.MultiProcessValue(lambda: 456)
        g2 = Gauge('g', 'help', registry=None, multiprocess_mode=mode)
        self.assertEqual(0, self.value('g'))
        g1.set(1)
        g2.set(2)
        return g1, g2

    def test_gauge_min(self):
        self._two('min')
        self.assertEqual(1, self.value('g'))

    def test_gauge_livemin(self):
        self._two('livemin')
        self.assertEqual(1, self.value('g'))
        bp.mark_process_dead(123)
        self.assertEqual(2, self.value('g'))

    def test_gauge_max(self):
        self._two('max')
        self.assertEqual(2, self.value('g'))

    def test_gauge_livemax(self):
        g1, g2 = self._two('livemax')
        g1.set(3)
        self.assertEqual(3, self.value('g'))
        bp.mark_process_dead(123)
        self.assertEqual(2, self.value('g'))

    def test_gauge_sum(self):
        self._two('sum')
        self.assertEqual(3, self.value('g'))
        bp.mark_process_dead(123)
        self.assertEqual(3, self.value('g'))

    def test_gauge_livesum(self):
        self._two('livesum')
        self.assertEqual(3, self.value('g'))
        bp.mark_process_dead(123)
        self.assertEqual(2, self.value('g'))

    def test_namespace_subsystem(self):
        c1 = Counter('c', 'help', registry=None, namespace='ns', subsystem='ss')
        c1.inc(1)
        self.assertEqual(1, self.value('ns_ss_c_total'))

    def test_counter_across_forks(self):
        pid = 0
        values.ValueClass = bp.MultiProcessValue(lambda: pid)
        c1 = Counter('c', 'help', registry=None)
        self.assertEqual(0, self.value('c_total'))
        c1.inc(1)
        c1.inc(1)
        pid = 1
        c1.inc(1)
        self.assertEqual(3, self.value('c_total'))
        self.assertEqual(1, c1._value.get())

    def test_initialization_detects_pid_change(self):
        pid = 0
        values.ValueClass = bp.MultiProcessValue(lambda: pid)

        def heaps():
            """The identities with a heap: the process's first writes its own."""
            idents = {bp.MultiProcessCollector._identity(p)
                      for p in self.snap().processes}
            for d in sorted(os.listdir(self.dir)):
                if d.startswith("identity-"):
                    idents |= {bp.MultiProcessCollector._identity(p) for p in
                               blamer.snapshot(backend="dir", dir=os.path.join(self.dir, d))
                               .processes}
            return sorted(idents)
        Counter('c1', 'c1', registry=None)
        self.assertEqual(heaps(), ['0'])
        Counter('c2', 'c2', registry=None)
        self.assertEqual(heaps(), ['0'])
        pid = 1
        Counter('c3', 'c3', registry=None)
        self.assertEqual(heaps(), ['0', '1'])

    def test_collect(self):
        pid = 0
        values.ValueClass = bp.MultiProcessValue(lambda: pid)
        labels = {i: i for i in 'abcd'}

        def add_label(key, value):
            lab = labels.copy()
            lab[key] = value
            return lab

        c = Counter('c', 'help', labelnames=labels.keys(), registry=None)
        g = Gauge('g', 'help', labelnames=labels.keys(), registry=None)
        h = Histogram('h', 'help', labelnames=labels.keys(), registry=None)
        c.labels(**labels).inc(1)
        g.labels(**labels).set(1)
        h.labels(**labels).observe(1)
        pid = 1
        c.labels(**labels).inc(1)
        g.labels(**labels).set(1)
        h.labels(**labels).observe(5)
        metrics = {m.name: m for m in self.collector.collect()}
        self.assertEqual(metrics['c'].samples, [Sample('c_total', labels, 2.0)])
        metrics['g'].samples.sort(key=lambda x: x[1]['pid'])
        self.assertEqual(metrics['g'].samples, [
            Sample('g', add_label('pid', '0'), 1.0),
            Sample('g', add_label('pid', '1'), 1.0),
        ])
        metrics['h'].samples.sort(key=lambda x: (x[0], float(x[1].get('le', 0))))
        expected_histogram = [
            Sample('h_bucket', add_label('le', le), n) for le, n in (
                ('0.005', 0.0), ('0.01', 0.0), ('0.025', 0.0), ('0.05', 0.0), ('0.075', 0.0),
                ('0.1', 0.0), ('0.25', 0.0), ('0.5', 0.0), ('0.75', 0.0), ('1.0', 1.0),
                ('2.5', 1.0), ('5.0', 2.0), ('7.5', 2.0), ('10.0', 2.0), ('+Inf', 2.0))
        ] + [Sample('h_count', labels, 2.0), Sample('h_sum', labels, 6.0)]
        self.assertEqual(metrics['h'].samples, expected_histogram)

    def test_unset_syncdir_env(self):
        # prometheus_client refuses a collector without PROMETHEUS_MULTIPROC_DIR;
        # blamer's heaps have a place without it
        os.environ.pop('PROMETHEUS_MULTIPROC_DIR', None)
        bp.MultiProcessCollector(CollectorRegistry())


class Values(PromTest):
    """What the value class does beyond prometheus_client's test cases."""

    def test_get_and_fork(self):
        values.ValueClass = bp.MultiProcessValue()     # the default: os.getpid
        c = Counter('c', 'help', ['route'], registry=None)
        g = Gauge('g', 'help', registry=None, multiprocess_mode='livesum')
        h = Histogram('h', 'help', registry=None, buckets=(1, 2))
        c.labels('/').inc(2)
        g.set(7)
        h.observe(1.5)
        self.assertEqual((c.labels('/')._value.get(), g._value.get()), (2, 7))
        self.assertEqual([b.get() for b in h._buckets], [0, 1, 0])
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            ok = c.labels('/')._value.get() == 0 and g._value.get() == 0
            c.labels('/').inc(5)
            g.inc(3)
            h.observe(0.5)
            ok = ok and c.labels('/')._value.get() == 5
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
        os.close(w)
        self.assertEqual(os.read(r, 1), b"1", "the child's running values")
        os.waitpid(pid, 0)
        self.assertEqual(self.value('c_total', {'route': '/'}), 7)
        self.assertEqual(self.value('g'), 7)          # livesum: the child is dead
        self.assertEqual(self.value('h_count'), 2)
        self.assertEqual(self.value('h_bucket', {'le': '1.0'}), 1)
        self.assertEqual(self.value('h_sum'), 2.0)

    def test_killed_children_counted_liveall_gone(self):
        values.ValueClass = bp.MultiProcessValue()
        c = Counter('jobs', 'help', registry=None)
        la = Gauge('busy', 'help', registry=None, multiprocess_mode='liveall')
        al = Gauge('last', 'help', registry=None, multiprocess_mode='all')
        pids = []
        for i in range(3):
            pid = os.fork()
            if pid == 0:
                c.inc(10)
                la.set(1)
                al.set(i)
                os.kill(os.getpid(), signal.SIGKILL)
            os.waitpid(pid, 0)
            pids.append(pid)
        c.inc(1)
        self.assertEqual(self.value('jobs_total'), 31)
        for i, pid in enumerate(pids):
            self.assertIsNone(self.value('busy', {'pid': str(pid)}))
            self.assertEqual(self.value('last', {'pid': str(pid)}), i)
        self.assertEqual(self.value('busy', {'pid': str(os.getpid())}), 0)

    def test_mostrecent_modes(self):
        # prometheus_client 0.16's Gauge refuses them; a later one's passes
        # the mode to the value class as this does
        V = bp.MultiProcessValue(lambda: 1)
        a = V('gauge', 'm', 'm', (), (), 'help', multiprocess_mode='mostrecent')
        V2 = bp.MultiProcessValue(lambda: 2)
        b = V2('gauge', 'm', 'm', (), (), 'help', multiprocess_mode='mostrecent')
        a.set(5)
        b.set(9)
        self.assertEqual(self.value('m'), 9)
        a.set(4)
        self.assertEqual(self.value('m'), 4)

    def test_what_blamer_cannot_hold_fails_where_made(self):
        values.ValueClass = bp.MultiProcessValue()
        with self.assertRaises(blamer.Error):
            Counter('blamer_mine', 'help', registry=None)
        with self.assertRaises(blamer.Error):
            Counter('c', 'help', ['uid'], registry=None).labels('1')
        with self.assertRaises(ValueError):
            Histogram('h', 'help', buckets=[float(i) for i in range(40)], registry=None)
        Counter('c2', 'help', ['l'], registry=None).labels('x' * 1000).inc()
        self.assertEqual(self.proc().drops.get('label_values_cut'), 1)

    def test_full_heap_drops_not_raises(self):
        # Label values without bound fill the heap: prometheus_client's
        # labels() and inc() raised blamer.Error (ENOSPC) in the
        # application's request then; now the series is not recorded,
        # the heap counts it (heap_full), and the program runs on.
        blamer.reset()
        blamer.init(backend="dir", dir=self.dir, max_slabs=1, slab_size=65536)
        values.ValueClass = bp.MultiProcessValue()
        # what is not a full heap still fails where made
        with self.assertRaises(blamer.Error):
            Counter('c', 'help', ['uid'], registry=None).labels('1')
        c = Counter('per_user', 'help', ['user'], registry=None)
        made = 0
        for i in range(2000):
            c.labels(str(i)).inc(2)
            made += 1
        self.assertEqual(made, 2000)
        self.assertEqual(c.labels('1999')._value.get(), 2)    # its running count
        p = self.proc()
        self.assertGreater(p.drops.get('heap_full', 0), 0)
        kept = self.value('per_user_total', {'user': '0'})
        self.assertEqual(kept, 2)
        self.assertIsNone(self.value('per_user_total', {'user': '1999'}))

    def test_reset_while_a_value_resolves_its_series(self):
        # The series is made by Python code (the family's _define()); a
        # reset() there (a signal handler, another thread, a finalizer:
        # here a trace hook) left the value a freed series to write
        # through (a segfault). It resolves again, or writes nothing.
        import sys
        values.ValueClass = bp.MultiProcessValue()
        child = Counter('reqs', 'help', ['route'], registry=None).labels('/a')
        child.inc()
        blamer.reset()
        armed = [True]

        def tracer(frame, event, arg):
            if event == 'return' and frame.f_code.co_name == '_define' and armed[0]:
                armed[0] = False
                blamer.reset()
            return tracer
        sys.settrace(tracer)
        try:
            child.inc()
        finally:
            sys.settrace(None)
        self.assertFalse(armed[0], "the reset did not run inside _define()")
        child.inc()
        self.assertEqual(self.value('reqs_total', {'route': '/a'}) >= 1, True)

    def test_reset_between_definition_and_labels_does_not_raise(self):
        # A reset() after the family's ctx.counter() and before its
        # labels() made the metric handle stale: inc() raised ValueError,
        # where prometheus_client's writes never raise. It defines again.
        import linecache
        import sys
        values.ValueClass = bp.MultiProcessValue()
        child = Counter('defs', 'help', ['route'], registry=None).labels('/b')
        child.inc()
        blamer.reset()          # its next use defines the series again
        before = self.value('defs_total', {'route': '/b'}) or 0
        armed = [True]

        def in_define(frame, event, arg):
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
            if event == 'line' and 'labels(' in line and armed[0]:
                armed[0] = False
                blamer.reset()
            return in_define

        def tracer(frame, event, arg):
            return in_define if frame.f_code.co_name == '_define' else None
        sys.settrace(tracer)
        try:
            child.inc()
        finally:
            sys.settrace(None)
        self.assertFalse(armed[0], "the reset did not run inside _define()")
        self.assertEqual(self.value('defs_total', {'route': '/b'}), before + 1)

    def test_histogram_buckets_dropped_by_the_identifier(self):
        # observe() through the fast path held a bucket as a borrowed list
        # item while the process identifier (Python code) ran; one that
        # empties the list freed it before its count was written (an
        # invalid write under python-valgrind).
        calls, state = [0], {}

        def ident():
            calls[0] += 1
            if calls[0] == state.get('arm'):
                state['h']._buckets[:] = []
            return 123
        values.ValueClass = bp.MultiProcessValue(ident)
        h = Histogram('dropped', 'help', buckets=[1.0, 2.0], registry=None)
        h.observe(0.1)
        state['h'] = h
        state['arm'] = calls[0] + 2     # after the sum's, the bucket's
        h._sum.hist_observe(0.5, h._buckets)   # install()'s observe()
        self.assertEqual(h._buckets, [])
        self.assertEqual(h._sum.get(), 0.6)

    def test_info_and_enum_stay_in_the_process(self):
        values.ValueClass = bp.MultiProcessValue()
        reg = CollectorRegistry()
        i = Info('build', 'help', registry=reg)
        i.info({'version': '1'})
        e = Enum('state', 'help', states=['a', 'b'], registry=reg)
        e.state('b')
        self.assertEqual(reg.get_sample_value('build_info', {'version': '1'}), 1)
        self.assertEqual(reg.get_sample_value('state', {'state': 'b'}), 1)
        self.assertEqual(self.snap().series, [])

    def test_threads(self):
        import threading
        values.ValueClass = bp.MultiProcessValue()
        c = Counter('t', 'help', registry=None)
        h = Histogram('th', 'help', registry=None, buckets=(0.5,))

        def work():
            for _ in range(10000):
                c.inc()
                h.observe(0.25)
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(self.value('t_total'), 40000)
        self.assertEqual(self.value('th_bucket', {'le': '0.5'}), 40000)
        self.assertEqual(self.value('th_sum'), 10000.0)


class ForkWithThreads(PromTest):
    """A fork while another thread holds a lock of ours: the child has
    only the forking thread, so that lock would be held for ever
    (prometheus_client's multiprocess lock so deadlocks threaded
    programs' children). The child makes metrics, writes and collects."""

    def child_ok(self, child, timeout=20, fork=os.fork):
        pid = fork()
        if pid == 0:
            code = 1
            try:
                child()
                code = 0
            finally:
                os._exit(code)
        import time
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            p, status = os.waitpid(pid, os.WNOHANG)
            if p:
                return status == 0
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        self.fail("the fork child hung (a lock held by the parent's other thread?)")

    def test_locks_held_by_other_threads(self):
        self.locks_held_by_other_threads(os.fork)

    def test_locks_held_by_other_threads_fork_in_c(self):
        """The same through fork() called in C, as uWSGI forks its
        workers: no os.register_at_fork() hook runs in the child (the
        GIL held across the call, as a C server holds it)."""
        import ctypes
        self.locks_held_by_other_threads(ctypes.PyDLL(None).fork)

    def locks_held_by_other_threads(self, fork):
        import threading
        V = bp.MultiProcessValue()
        values.ValueClass = V
        c = Counter('fc', 'help', registry=None)
        col = bp.MultiProcessCollector(None, path=self.dir)
        col.collect()
        reader = blamer.Reader(backend="dir", dir=self.dir)
        held, release = threading.Event(), threading.Event()

        def hold():
            with V._family.lock.get(), bp._lock.get():
                held.set()
                release.wait(30)
        waiter = threading.Thread(target=lambda: reader.wait(3))   # the reader's lock
        t = threading.Thread(target=hold)
        t.start()
        waiter.start()
        held.wait(10)
        import time
        time.sleep(0.2)        # the waiter is inside wait()

        def child():
            Histogram('fh', 'help', registry=None).observe(1)
            c.inc()
            reader.snapshot()
            col.collect()
        try:
            self.assertTrue(self.child_ok(child, fork=fork))
        finally:
            release.set()
            t.join()
            waiter.join()
            reader.close()
            col.close()


    def test_first_use_in_a_child_from_many_threads(self):
        """A fork child's threads (uWSGI's --threads, a gthread worker)
        make their first label sets at once: each takes the family's
        lock first in this child. All must get the same lock, and none
        may release another's: two made their own, then RuntimeError
        ('cannot release un-acquired lock') in one and a lock held for
        ever in the other (1 child in 100 here before)."""
        import threading
        V = bp.MultiProcessValue()
        values.ValueClass = V
        hs = [Histogram('ft%d' % i, 'help', ['k'], registry=None) for i in range(16)]

        def child():
            errors, seen = [], set()
            barrier = threading.Barrier(16)

            def first_use(i):
                barrier.wait()
                try:
                    seen.add(id(V._family.lock.get()))
                    hs[i].labels('v').observe(1)
                except Exception as e:
                    errors.append(e)
            ts = [threading.Thread(target=first_use, args=(i,)) for i in range(16)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(10)
            if errors or any(t.is_alive() for t in ts) or len(seen) != 1:
                raise AssertionError((errors, len(seen)))
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)    # a switch between any two steps
        try:
            for _ in range(100):
                self.assertTrue(self.child_ok(child))
        finally:
            sys.setswitchinterval(interval)


class Switch(PromTest):
    def test_install_unchanged_application(self):
        values.ValueClass = self._saved_value_class
        bp.install()
        try:
            bp.install()       # again: nothing
            from prometheus_client import multiprocess
            self.assertIs(multiprocess.MultiProcessCollector, bp.MultiProcessCollector)
            self.assertIs(multiprocess.mark_process_dead, bp.mark_process_dead)
            # the application, as it is written for prometheus_client
            requests = Counter('app_requests', 'Requests', ['method'], registry=None)
            latency = Histogram('app_latency_seconds', 'Latency', registry=None)
            inflight = Gauge('app_inflight', 'In flight', registry=None,
                             multiprocess_mode='livesum')
            with inflight.track_inprogress():
                with latency.time():
                    requests.labels('GET').inc()
            # observe() is one C call now: the same buckets and running values
            for v in (0.001, 0.005, 0.3, 7.5, 11, 1e9):
                latency.observe(v)
            self.assertEqual([b.get() for b in latency._buckets],
                             [3, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 2])
            self.assertEqual(latency._sum.get() > 1e9, True)
            with self.assertRaises(ValueError):     # a parent without label values
                Histogram('lab', 'help', ['l'], registry=None).observe(1)
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry, path=self.dir)
            text = generate_latest(registry).decode()
            self.assertIn('app_requests_total{method="GET"} 1.0', text)
            self.assertIn('app_latency_seconds_count 7.0', text)
            self.assertIn('app_latency_seconds_bucket{le="0.005"} 3.0', text)
            self.assertIn('app_latency_seconds_bucket{le="7.5"} 5.0', text)
            self.assertIn('app_inflight 0.0', text)
            multiprocess.mark_process_dead(os.getpid())
            self.assertEqual(len(self.snap().series), 3)
        finally:
            bp.uninstall()
        self.assertIsNot(values.ValueClass.__module__, bp.__name__)


class Merges(PromTest):
    """The collector's two merges agree on real processes: the usual one,
    `blamer export`'s (the C library's fleet series), and the one of the
    processes' own series (faked identities); and the collector gives
    the numbers the blamer tool's export gives for the same heaps."""

    def fork_workers(self):
        values.ValueClass = bp.MultiProcessValue()
        c = Counter('c', 'help', ['k'], registry=None)
        hs = Histogram('h', 'help', ['k'], registry=None, buckets=(0.1, 1.0))
        gs = {m: Gauge('g_' + m, 'help', ['k'], registry=None, multiprocess_mode=m)
              for m in Gauge._MULTIPROC_MODES}
        for g in gs.values():
            g.labels('a').set(100)         # this process is alive
        for i in range(4):
            pid = os.fork()
            if pid == 0:
                for k in ('a', 'b'):
                    c.labels(k).inc(0.1 * (i + 1))
                    hs.labels(k).observe(0.3 * i)
                    for g in gs.values():
                        g.labels(k).set(i * 10 + len(k))
                if i % 2:
                    os.kill(os.getpid(), signal.SIGKILL)
                os._exit(0)
            os.waitpid(pid, 0)

    @staticmethod
    def samples(families):
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for f in families for s in f.samples}

    def test_same_numbers(self):
        self.fork_workers()
        col = bp.MultiProcessCollector(None, path=self.dir)
        a = self.samples(col.collect())
        b = self.samples(col._families_of(col._from_processes([(None, self.snap())])))
        self.assertEqual(sorted(a), sorted(b))
        for k in a:
            self.assertEqual(a[k], b[k], k)
        # per label a: c, h (4 buckets' and count, sum), min, max, sum,
        # their live forms (this process), all (5 processes), liveall (1)
        self.assertEqual(len([k for k in a if ('k', 'a') in k[1]]), 1 + 5 + 6 + 5 + 1)
        self.assertAlmostEqual(a[('c_total', (('k', 'a'),))], 1.0)
        self.assertEqual(a[('g_max', (('k', 'a'),))], 100)
        self.assertEqual(a[('g_livesum', (('k', 'a'),))], 100)
        self.assertEqual(a[('g_min', (('k', 'b'),))], 1)

    @staticmethod
    def exported(text):
        """{(name, labels): value} of blamer export's text, with the labels
        prometheus_client's collector writes (no uid, its le)."""
        from prometheus_client.parser import text_string_to_metric_families
        r = {}
        for f in text_string_to_metric_families(text):
            if f.name.startswith("blamer_"):
                continue
            for s in f.samples:
                lab = dict(s.labels)
                lab.pop("uid")
                if "le" in lab:
                    lab["le"] = str(float(lab["le"])) if lab["le"] != "+Inf" else "+Inf"
                r[(s.name, tuple(sorted(lab.items())))] = s.value
        return r

    def assertSameNumbers(self, exported, per_process=True):
        collected = self.samples(bp.MultiProcessCollector(None, path=self.dir).collect())
        if not per_process:
            def merged(d):
                return {k: v for k, v in d.items() if not any(lab == "pid" for lab, _ in k[1])}
            collected, exported = merged(collected), merged(exported)
        self.assertEqual(sorted(exported), sorted(collected))
        for k in exported:
            self.assertEqual(exported[k], collected[k], k)

    def test_same_numbers_as_blamer_export(self):
        cli = os.environ.get("BLAMER_CLI")
        if not cli:
            self.skipTest("BLAMER_CLI not set")
        import subprocess
        self.fork_workers()
        out = subprocess.run([cli, "--dir", self.dir, "export"], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertSameNumbers(self.exported(out.stdout))

    def test_same_numbers_as_blamer_export_listen(self):
        cli = os.environ.get("BLAMER_CLI")
        if not cli:
            self.skipTest("BLAMER_CLI not set")
        import socket
        import subprocess
        import time
        import urllib.request
        self.fork_workers()
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        os.mkdir(os.path.join(self.dir, "st"), 0o700)
        # it folds the 4 dead workers into its state and keeps their heaps
        # (--keep-dead 8), so this collector still reads them
        p = subprocess.Popen([cli, "--dir", self.dir, "export", "--listen",
                              "127.0.0.1:%d" % port, "--state",
                              os.path.join(self.dir, "st", "fold.state")],
                             stderr=subprocess.PIPE, text=True)
        try:
            text = None
            for _ in range(100):
                try:
                    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                                timeout=5) as r:
                        text = r.read().decode()
                    break
                except OSError:
                    time.sleep(0.1)
            self.assertIsNotNone(text, "the exporter did not answer")
            self.assertIn("blamer_folded_heaps_total 4", text)
            # A folded process's all/liveall gauges end with the fold (they
            # are its own); this collector, folding nothing, still shows
            # them: the merged series are compared.
            self.assertSameNumbers(self.exported(text), per_process=False)
        finally:
            p.terminate()
            p.wait(10)
            p.stderr.close()

    def test_fold_keeps_counts_flat(self):
        values.ValueClass = bp.MultiProcessValue()
        c = Counter('jobs', 'help', registry=None)
        h = Histogram('job_seconds', 'help', registry=None, buckets=(1,))
        state = os.path.join(self.dir, "state")
        col = bp.MultiProcessCollector(None, path=self.dir, state=state, keep_dead=2)
        seen = []
        for round_ in range(4):
            for i in range(5):
                pid = os.fork()
                if pid == 0:
                    c.inc(2)
                    h.observe(0.5)
                    os._exit(0)
                os.waitpid(pid, 0)
            seen.append(self.samples(col.collect()))
            # folded: only the last 2 dead heaps are left, and this process
            self.assertLessEqual(len(self.snap().processes), 3)
        for n, s in enumerate(seen, 1):
            self.assertEqual(s[('jobs_total', ())], 10 * n)
            self.assertEqual(s[('job_seconds_count', ())], 5 * n)
        self.assertEqual(len({len(s) for s in seen}), 1, "series count not flat")
        # a collector started again on the same state: the same counts
        with self.assertRaises(blamer.Error):      # one folder per state
            bp.MultiProcessCollector(None, path=self.dir, state=state).collect()
        col.close()
        again = bp.MultiProcessCollector(None, path=self.dir, state=state)
        self.assertEqual(self.samples(again.collect())[('jobs_total', ())], 40)

    def test_numbers_have_a_point_whatever_the_locale(self):
        # A program that called locale.setlocale(LC_ALL, "") under a
        # locale whose decimal point is ',' got "sum":0,55 from to_json(),
        # samples of 20,5 that prometheus_client's parser refused (every
        # scrape of the collector failed with ValueError), and a fold
        # state of 0x1,48p+4 that `blamer export --state` refused.
        cli = os.environ.get("BLAMER_CLI")
        if not cli or BACKEND != "dir":
            self.skipTest("BLAMER_CLI and the dir backend")
        from prometheus_client.parser import text_string_to_metric_families
        saved, locpath = locale.setlocale(locale.LC_ALL), os.environ.get("LOCPATH")
        tmp = tempfile.mkdtemp(prefix="blamer-loc.")
        self.addCleanup(shutil.rmtree, tmp, True)
        self.addCleanup(locale.setlocale, locale.LC_ALL, saved)
        self.addCleanup(lambda: os.environ.pop("LOCPATH", None) if locpath is None
                        else os.environ.__setitem__("LOCPATH", locpath))
        why = comma_locale(tmp)
        if why:
            self.skipTest(why)
        values.ValueClass = bp.MultiProcessValue()
        c = Counter('jobs', 'help', registry=None)
        h = Histogram('job_seconds', 'help', registry=None, buckets=(0.01, 0.25))
        c.inc(20.5)
        h.observe(0.3)
        pid = os.fork()
        if pid == 0:
            c.inc(0.25)
            h.observe(0.25)
            os._exit(0)
        os.waitpid(pid, 0)
        s = self.snap()
        doc = json.loads(s.to_json())
        sums = [x["sum"] for x in doc["service"]["series"] if "sum" in x]
        self.assertEqual(len(sums), 1)
        self.assertAlmostEqual(sums[0], 0.55)
        text = s.prometheus()
        self.assertIn("} 20.5\n", text)
        self.assertTrue(list(text_string_to_metric_families(text)))
        # the collector folds the dead child into its state
        state = os.path.join(self.dir, "state")
        reg = CollectorRegistry()
        col = bp.MultiProcessCollector(reg, path=self.dir, state=state, keep_dead=0)
        text = generate_latest(reg).decode()
        self.assertEqual(self.samples(text_string_to_metric_families(text))
                         [('jobs_total', ())], 20.75)
        self.assertEqual([p.live for p in self.snap().processes], [True])
        col.close()
        with open(state) as f:
            self.assertNotIn(",", f.read())
        # and the blamer tool, in the C locale, takes that state
        out = subprocess.run([cli, "--dir", self.dir, "export", "--state", state],
                             capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, LC_ALL="C"))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.exported(out.stdout)[('jobs_total', ())], 20.75)
        self.assertEqual(locale.localeconv()["decimal_point"], ",")

    def test_stray_identity_directory_changes_nothing(self):
        # An identity-* directory this process did not make (a test's left
        # behind, or made by whoever may write the heaps' directory) made
        # every collect merge the processes itself, neither folding nor
        # counting the state's remainder: 6, then 8 (not 13), then 1
        # once the dead heaps were gone.
        values.ValueClass = bp.MultiProcessValue()
        c = Counter('jobs', 'help', registry=None)
        state = os.path.join(self.dir, "state")
        col = bp.MultiProcessCollector(None, path=self.dir, state=state, keep_dead=0)

        def child(n):
            pid = os.fork()
            if pid == 0:
                c.inc(n)
                os._exit(0)
            os.waitpid(pid, 0)
        c.inc(1)
        child(5)
        self.assertEqual(self.samples(col.collect())[('jobs_total', ())], 6)
        os.mkdir(os.path.join(self.dir, "identity-stale"), 0o700)
        child(7)
        self.assertEqual(self.samples(col.collect())[('jobs_total', ())], 13)
        # folded: no dead heap left, the remainder holds them
        self.assertEqual([p.live for p in self.snap().processes], [True])
        self.assertEqual(self.samples(col.collect())[('jobs_total', ())], 13)
        col.close()


if __name__ == '__main__':
    unittest.main()
