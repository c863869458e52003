# SPDX-License-Identifier: MIT
"""fork(): objects made before it keep working in the child, writing to
the child's own heap; the parent's heap is untouched."""
import multiprocessing
import os
import signal
import threading
import time

import blamer
from common import BACKEND, HeapTest


def labels(p):
    return [[f.label for f in t.stack] for t in p.threads if t.stack]


class Fork(HeapTest):
    def fork(self, child):
        """Runs child() in a fork child that then waits for a byte on a
        pipe; returns (pid, write end). The child exits 0 if child() did
        not raise."""
        r, w = os.pipe()
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(w)
                os.close(ready_r)
                child()
                os.write(ready_w, b"x")
                os.read(r, 1)
                code = 0
            finally:
                os._exit(code)
        os.close(r)
        os.close(ready_w)
        self.assertEqual(os.read(ready_r, 1), b"x", "the child failed")
        os.close(ready_r)
        return pid, w

    def finish(self, pid, w):
        os.write(w, b"x")
        os.close(w)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(status, 0)

    def test_handles_from_before_the_fork(self):
        act = blamer.activity("serving")
        v = blamer.set_data("requests", 100)
        p = blamer.path(["server"], [blamer.UNIT_COUNT])
        p.add(5)
        blamer.set_role("master")

        def child():
            blamer.set_role("worker", 1)
            act.__enter__()
            v.add(1)
            p.add(2)
            blamer.log("in the child")
        pid, w = self.fork(child)
        s = self.snap()
        me, ch = s.process(os.getpid()), s.process(pid)
        self.finish(pid, w)
        self.assertEqual((me.role, ch.role, ch.instance), ("master", "worker", "1"))
        # the child's heap: data inherited as at the fork, then its own writes
        self.assertEqual(ch.user_data["requests"].value, 101)
        self.assertEqual(me.user_data["requests"].value, 100)
        # measurements are not inherited: each process its own
        self.assertEqual([x.values for x in ch.paths], [{blamer.UNIT_COUNT: 2}])
        self.assertEqual([x.values for x in me.paths], [{blamer.UNIT_COUNT: 5}])
        self.assertEqual(s.total(["server"], blamer.UNIT_COUNT), 7)
        self.assertEqual(labels(ch), [["serving"]])
        self.assertEqual(labels(me), [])
        self.assertEqual([e.text for e in ch.logs], ["in the child"])
        self.assertEqual(me.logs, [])
        self.assertGreater(blamer._blamer._fork_generation(), -1)

    def test_a_block_the_fork_was_inside_pops_nothing_in_the_child(self):
        # the child pushes its own, then the block entered before the fork
        # ends there too: the child's own stays (its own blocks pop alike)
        def forked_inside():
            with blamer.activity("outer"):
                pid = os.fork()
                if pid == 0:
                    blamer.push("own")
                    with blamer.activity("own-block"):
                        pass
            return pid
        r, w = os.pipe()
        pid = forked_inside()
        if pid == 0:    # the child, past both blocks
            os.close(r)
            me = self.snap().process(os.getpid())
            os.write(w, b"y" if labels(me) == [["own"]] else b"n")
            os._exit(0)
        os.close(w)
        got = os.read(r, 1)
        os.close(r)
        os.waitpid(pid, 0)
        self.assertEqual(got, b"y", "the inherited block popped the child's own activity")

    def test_child_that_writes_nothing_makes_no_heap(self):
        blamer.log("parent")
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        self.assertIsNone(self.snap().process(pid))

    def test_fork_while_threads_write(self):
        stop = threading.Event()
        p = blamer.path(["busy"], [blamer.UNIT_COUNT])

        def busy():
            a = blamer.activity("busy thread")
            while not stop.is_set():
                with a:
                    p.add(1)
        ts = [threading.Thread(target=busy) for _ in range(3)]
        for t in ts:
            t.start()
        try:
            pids = []
            for i in range(5):
                def child():
                    blamer.activity("child %d" % i).__enter__()   # left on the stack
                    for _ in range(1000):
                        p.add(1)
                    # threads of the child, with the same handles
                    cts = [threading.Thread(target=lambda: [p.add(1) for _ in range(500)])
                           for _ in range(2)]
                    for t in cts:
                        t.start()
                    for t in cts:
                        t.join()
                pids.append(self.fork(child))
            s = self.snap()
            for i, (pid, w) in enumerate(pids):
                ch = s.process(pid)
                self.assertEqual([x.values for x in ch.paths], [{blamer.UNIT_COUNT: 2000}])
                self.assertEqual(labels(ch), [["child %d" % i]])
                self.finish(pid, w)
        finally:
            stop.set()
            for t in ts:
                t.join()

    def test_child_closes_what_parent_threads_were_using(self):
        # A thread of the parent inside a call that lets the GIL go at the
        # fork left the context's count of calls out at 1 in the child,
        # where no thread would bring it down: close() and reset() there
        # waited for ever (19 children of 20).
        other = blamer.open(backend=BACKEND, dir=self.dir if BACKEND == "dir" else None,
                            modules=False)
        stop = []

        def call():
            while not stop:
                other.modules_refresh()
                blamer.heap_info()
        ts = [threading.Thread(target=call, daemon=True) for _ in range(2)]
        for t in ts:
            t.start()
        try:
            for _ in range(10):
                pid = os.fork()
                if pid == 0:
                    try:
                        other.close()
                        blamer.reset()
                    finally:
                        os._exit(0)
                for _ in range(1200):       # up to 120 s, then it hangs
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        break
                    time.sleep(0.1)
                else:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    self.fail("a fork child's close() or reset() hung")
                self.assertEqual(status, 0)
        finally:
            stop.append(1)
            for t in ts:
                t.join()
            other.close()

    def test_killed_child_keeps_its_last_activity(self):
        def child():
            blamer.set_role("worker", 7)
            blamer.activity("GET /crash", data0=42).__enter__()
        pid, w = self.fork(child)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(w)
        ch = self.proc(pid)
        self.assertFalse(ch.live)
        self.assertEqual(labels(ch), [["GET /crash"]])
        self.assertEqual(ch.threads[0].stack[0].data, (42, 0))
        self.assertEqual((ch.role, ch.instance), ("worker", "7"))

    def test_multiprocessing_fork_pool(self):
        blamer.dag_unit(1001, "jobs")
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(3) as pool:
            pids = set(pool.map(_job, range(30)))
        s = self.snap()
        self.assertEqual(s.total(["pool"], 1001), 30)
        self.assertTrue(pids <= {p.pid for p in s.processes})


_pool_path = None


def _job(i):
    global _pool_path
    if _pool_path is None:
        _pool_path = blamer.path(["pool"], [1001])
    with blamer.activity("job %d" % i):
        _pool_path.add(1)
    return os.getpid()
