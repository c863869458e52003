# SPDX-License-Identifier: MIT
"""Reference counts: every entry point of the extension, on its good and
its error paths, run many times under Debian's debug interpreter
(python3-dbg: sys.gettotalrefcount()), leaves the interpreter's total of
references and of allocated blocks where it was. A reference taken and
never given back, or an object never freed, grows them by at least one
per round. Skipped under a release interpreter."""
import gc
import os
import sys
import unittest

import blamer
from common import BACKEND, HeapTest

ROUNDS = 100
WARMUP = 300
WINDOWS = 3


def _raises(f, *exc):
    try:
        f()
    except exc or Exception:
        return
    raise AssertionError("%r did not raise" % f)


@unittest.skipUnless(hasattr(sys, "gettotalrefcount"), "needs the debug interpreter (python3-dbg)")
class RefLeaks(HeapTest):
    def check(self, body):
        """body() in WINDOWS windows of ROUNDS rounds each, after WARMUP
        rounds that fill the interpreter's free lists and caches (they
        hold blocks up to a bound: an error path's exception and
        traceback objects take a few hundred rounds). A leak of one
        reference or block per round grows every window by ROUNDS; a
        cache that grew once, or a dict that resized, grows one window.
        So a window that grew by less than half a round each passes."""
        for _ in range(WARMUP):
            body()
        grew = []
        for _ in range(WINDOWS):
            gc.collect()
            refs, blocks = sys.gettotalrefcount(), sys.getallocatedblocks()
            for _ in range(ROUNDS):
                body()
            gc.collect()
            grew.append((sys.gettotalrefcount() - refs, sys.getallocatedblocks() - blocks))
            if grew[-1][0] < ROUNDS // 2 and grew[-1][1] < ROUNDS // 2:
                return
        self.fail("references and blocks grew by %s in %d windows of %d rounds"
                  % (grew, WINDOWS, ROUNDS))

    def test_writer(self):
        def body():
            with blamer.activity("a", kind=blamer.ACTIVITY_GENERIC, data0=1, data1=2) as a:
                a.set_data("user", "x")
                blamer.set_data("act", 1, scope=blamer.DATA_ACTIVITY)
            blamer.push("p")
            blamer.pop()
            for name, v, t in (("b", True, None), ("i", 5, None), ("u", 5, "uint"),
                               ("c", "c", "char"), ("d", 1.5, None), ("s", "str", None),
                               ("r", b"raw", None)):
                val = blamer.set_data(name, v, type=t)
                val.set(v)
                repr(val), val.name, val.type, val.scope
            blamer.set_data("cap", "x", capacity=32).set("y")
            blamer.set_data("i", 1).add(2)
            blamer.set_role("w", "1")
            blamer.set_phase(blamer.PHASE_MAIN_LOOP)
            blamer.log("m")
            blamer.set_thread_name("t")
            blamer.dag_node("n", type=1)
            blamer.dag_link("n", blamer.dag_id("m"))
            blamer.dag_unit(1001, "u")
            p = blamer.path(["n", 5], [1, 1001])
            p.add(1)
            p.add(2, index=1)
            p.nodes, p.units
            blamer.heap_info()

            @blamer.activity("dec")
            def f():
                return 1
            f()
            repr(blamer.activity("r")), blamer.activity("r").label
        self.check(body)

    def test_metrics(self):
        ctx = blamer.default_context()

        def body():
            c = ctx.counter("c", "help", ["a"], base=blamer.BASE_NONE)
            s = c.labels("x", path=["n", 1])
            s.inc()
            s.inc(2.5)
            repr(c), repr(s), c.name, c.labels, c.kind, s.metric
            g = ctx.gauge("g", mode="livesum")
            g.set(1)
            g.inc()
            g.dec(2)
            h = ctx.histogram("h", buckets=[1, 2, float("inf")])
            h.observe(1.5)
            e = ctx.histogram("e", schema=0, min_exp=-2, max_exp=2)
            e.observe(3)
            _raises(lambda: s.set(1), TypeError)
            _raises(lambda: s.inc(-1), ValueError)
            _raises(lambda: s.inc(float("inf")), ValueError)
            _raises(lambda: h.observe(float("-inf")), ValueError)
            _raises(lambda: g.set(float("nan")), ValueError)
            _raises(lambda: c.inc(), ValueError)
            _raises(lambda: c.labels(), ValueError)
            _raises(lambda: ctx.gauge("g", mode="median"), ValueError)
            _raises(lambda: ctx.counter("g"), blamer.Error)
            _raises(lambda: ctx.counter("x", labels="ab"), TypeError)
            _raises(lambda: ctx.histogram("h2", buckets=list(range(40))), ValueError)
            _raises(lambda: ctx.counter("c3", mode="all"), TypeError)
            # a label value with control characters (a copy made), on the
            # good path and each way labels() fails after it was made
            c.labels("x\ny\x85").inc()
            _raises(lambda: c.labels("x\ny", path=[]), ValueError)
            _raises(lambda: c.labels("x\ny", path=[object()]), TypeError)
            u = ctx.counter("u", "help", ["path"])
            _raises(lambda: u.labels("x\ny", path=["n"]), blamer.Error)
        self.check(body)

    def test_prometheus_values(self):
        try:
            from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, \
                Summary, values
        except ImportError:
            self.skipTest("python3-prometheus-client not installed")
        import blamer.prometheus as bp
        saved = values.ValueClass
        reg = CollectorRegistry()
        col = bp.MultiProcessCollector(reg, path=self.dir if BACKEND == "dir" else None)
        try:
            values.ValueClass = bp.MultiProcessValue()
            c = Counter("pc", "help", ["l"], registry=None)
            g = Gauge("pg", "help", registry=None, multiprocess_mode="all")
            h = Histogram("ph", "help", registry=None)
            s = Summary("ps", "help", registry=None)
            ident = [1]
            values.ValueClass = bp.MultiProcessValue(lambda: ident[0])
            c2 = Counter("pc", "help", ["l"], registry=None)

            state = os.path.join(self.dir, "fold.state") if BACKEND == "dir" else None
            folding = bp.MultiProcessCollector(None, path=self.dir if BACKEND == "dir" else None,
                                               state=state, keep_dead=0)

            def body():
                pid = os.fork()
                if pid == 0:
                    c.labels("x").inc()
                    os._exit(0)
                os.waitpid(pid, 0)
                folding.collect()
                _raises(lambda: blamer.Fleet(None).fold(1, 2), TypeError)
                _raises(lambda: blamer.Fleet(state), blamer.Error)     # in use
                c.labels("x").inc()
                g.set(2)
                g.inc()
                h.observe(0.3)
                s.observe(1)
                c.labels("x")._value.get()
                ident[0] = 3 - ident[0]      # another identity each round
                c2.labels("y").inc()
                col.collect()
                reg.get_sample_value("pc_total", {"l": "x"})
            self.check(body)
        finally:
            values.ValueClass = saved
            bp._reset_identities()
            folding.close()

    def test_writer_errors(self):
        v = blamer.set_data("i", 1)
        p = blamer.path(["n"], [1])

        def body():
            _raises(lambda: blamer.activity("a\0"), ValueError)
            _raises(lambda: blamer.activity(1), TypeError)
            _raises(lambda: blamer.activity("x", data0=-1), OverflowError)
            _raises(lambda: blamer.activity("x", bad=1), TypeError)
            _raises(lambda: blamer.activity("x")(1, 2), TypeError)
            _raises(lambda: blamer.set_data("i", "s"), blamer.Error)
            _raises(lambda: blamer.set_data("z", object()), TypeError)
            _raises(lambda: blamer.set_data("z", 1, type="q"), ValueError)
            _raises(lambda: blamer.set_data("z", 1, capacity=3), ValueError)
            _raises(lambda: v.set("s"), TypeError)
            _raises(lambda: v.set(2**70), OverflowError)
            _raises(lambda: p.add(1, index=3), IndexError)
            _raises(lambda: p.add(-1), OverflowError)
            _raises(lambda: blamer.path([], [1]), ValueError)
            _raises(lambda: blamer.path([1.0], [1]), TypeError)
            _raises(lambda: blamer.set_role("other"), blamer.Error)
            _raises(lambda: blamer.dag_unit(1001, "Bad-Name"), blamer.Error)
            _raises(lambda: blamer.open(backend="tape"), ValueError)
            _raises(lambda: blamer.open(slab_size=5), blamer.Error)
            _raises(lambda: blamer.init(), blamer.Error)
        blamer.set_role("w")
        self.check(body)

    def test_contexts(self):
        if BACKEND != "dir":
            self.skipTest("dir backend")
        other = os.path.join(self.dir, "o")

        def body():
            with blamer.open(backend="dir", dir=other) as c:
                v = c.set_data("x", 1)
                with c.activity("a"):
                    pass
            _raises(lambda: v.add(1), ValueError)
            _raises(lambda: c.activity("a"), ValueError)
            c2 = blamer.open(backend="dir", dir=other)
            c2.log("x")
            del c2
        self.check(body)

    def test_reader_init_again_after_a_failure(self):
        # a Reader whose __init__ failed may be initialized again: the
        # first attempt's path bytes are given back (they leaked one
        # reference per call)
        r = blamer.Reader.__new__(blamer.Reader)

        def body():
            _raises(lambda: r.__init__(backend="device", device="/nonexistent/blamer",
                                       dir="/nonexistent/blamer"),
                    blamer.Error, OSError)
        self.check(body)

    def test_reader(self):
        blamer.set_role("w", "1")
        blamer.set_data("s", "text")
        blamer.set_data("g", 1, scope=blamer.DATA_GLOBAL)
        blamer.dag_node("n")
        blamer.path(["n"], [1]).add(1)
        blamer.log("log")
        blamer.process_launched(os.getpid())
        kw = {"backend": BACKEND}
        if BACKEND == "dir":
            kw["dir"] = self.dir

        def body():
            with blamer.activity("a"):
                s = blamer.snapshot(**kw)
            for p in s.processes:
                for t in p.threads:
                    for f in t.stack:
                        f.fields
                repr(p)
            s.totals, s.tree, s.nodes, s.units, s.unit_defs, s.skipped
            s.to_json(), s.to_json(summary=True, pids=[os.getpid()]), s.prometheus()
            s.path_string([blamer.dag_id("n")]), s.node_name(1), s.unit_name(1)
            s.path_string([1], uid=0), s.node_name(1, uid=0), s.unit_name(1001, uid=0)
            _raises(lambda: s.path_string([1], uid=-1), ValueError)
            _raises(lambda: s.node_name(1, uid="0"), TypeError)
            s.process(os.getpid()), s.total(["n"], 1)
            _raises(lambda: s.to_json(pids=["x"]), TypeError)
            with blamer.Reader(**kw) as r:
                r.snapshot()
                r.status()
                r.fileno()
                _raises(lambda: r.release(s.process(os.getpid())), blamer.Error)
                _raises(lambda: r.release(1), TypeError)
            _raises(lambda: r.snapshot(), ValueError)
            _raises(lambda: blamer.snapshot(bad=1), TypeError)
            [p.health for p in blamer.snapshot_from_memory([b"\0" * 64]).processes]
            _raises(lambda: blamer.snapshot_from_memory([]), ValueError)
        self.check(body)


if __name__ == "__main__":
    unittest.main()
