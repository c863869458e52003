# SPDX-License-Identifier: MIT
"""The hot path makes no system call: a process that pushes, pops,
updates Values, adds to Paths, writes metrics and prometheus_client's
metrics switched to blamer 10,000 times each, after its first use of
each, makes none at all between two marker calls, as strace sees it (the
C library's promise, kept by the binding; prometheus_client's own
MmapedValue.inc() calls os.getpid() at every write)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from common import HeapTest

CHILD = r"""
import os, sys, blamer
act = blamer.activity("hot")
v = blamer.set_data("n", 0)
d = blamer.set_data("x", 0.0)
p = blamer.path(["a", "b"], [blamer.UNIT_COUNT, blamer.UNIT_BYTES])
c = blamer.counter("c", labels=["k"]).labels("v")
g = blamer.gauge("g", mode="mostrecent")
h = blamer.histogram("h", buckets=[0.1, 1])
e = blamer.histogram("e")                # exponential buckets
prom = None
try:
    import blamer.prometheus, prometheus_client
    blamer.prometheus.install()
    prom = (prometheus_client.Counter("pc", "h", ["route"], registry=None).labels("/"),
            prometheus_client.Histogram("ph", "h", registry=None),
            prometheus_client.Gauge("pg", "h", registry=None, multiprocess_mode="livesum"),
            prometheus_client.Summary("ps", "h", registry=None))
except ImportError:
    pass
def once():
    with act:
        v.add(1)
        d.set(2.5)
        p.add(1)
        p.add(64, 1)
    with blamer.activity("made each time"):
        pass
    blamer.push("pushed", data0=1)
    blamer.pop()
    c.inc()
    g.set(3)                 # mostrecent: the clock, through the vDSO
    g.inc()
    h.observe(0.5)
    e.observe(3.5)
    if prom:
        prom[0].inc()
        prom[1].observe(0.2)
        prom[2].inc()
        prom[2].dec()
        prom[3].observe(7)
        prom[0]._value.get()
once()                              # the thread registers, shards are made
import gc; gc.disable()             # no collection (and its allocations) in the loop
os.getppid()                        # marker: start
for _ in range(10000):
    once()
os.getppid()                        # marker: end
"""


class NoSyscall(HeapTest):
    def test_hot_path(self):
        strace = shutil.which("strace")
        if not strace:
            self.skipTest("strace not installed")
        with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
            r = subprocess.run([strace, "-f", "-qq", "-o", log.name, sys.executable, "-c", CHILD],
                               env=env, capture_output=True, text=True, timeout=120)
            if r.returncode != 0 and "ptrace" in r.stderr:
                self.skipTest("strace cannot trace here: " + r.stderr.strip()[:200])
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            lines = log.read().splitlines()
        marks = [i for i, l in enumerate(lines) if "getppid()" in l]
        self.assertEqual(len(marks), 2, "markers not found in %d lines" % len(lines))
        between = lines[marks[0] + 1:marks[1]]
        self.assertEqual(between, [], "system calls on the hot path")
        # and the test can see one: the heap was made, through the kernel
        self.assertTrue(any("openat" in l and ".slab" in l for l in lines[:marks[0]]) or
                        any("/dev/blamer" in l for l in lines[:marks[0]]))


if __name__ == "__main__":
    unittest.main()
