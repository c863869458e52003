# SPDX-License-Identifier: MIT
"""The reader API: snapshots as Python objects, the exporters, hostile
heaps and strings, and the GIL released while a reader blocks."""
import glob
import json
import os
import random
import signal
import subprocess
import threading
import time

import blamer
from common import BACKEND, HeapTest, close_races


class Reading(HeapTest):
    def test_snapshot_objects(self):
        blamer.set_role("worker", "2")
        blamer.set_data("n", 5)
        blamer.dag_node("root")
        with blamer.activity("GET /a"):
            s = self.snap()
        self.assertEqual(s.backend, BACKEND)
        self.assertGreater(s.realtime_ns, 0)
        self.assertGreater(s.monotonic_ns, 0)
        p = s.process(os.getpid())
        self.assertIsInstance(p, blamer.Process)
        self.assertTrue(p.live)
        self.assertEqual(p.health, "ok")
        self.assertEqual(p.problem, "")
        self.assertEqual(p.heap_state, "ready")
        self.assertEqual(p.rec_pid, os.getpid())
        self.assertIn("python", p.cmdline)
        self.assertIsInstance(p.threads[0], blamer.Thread)
        self.assertIsInstance(p.threads[0].stack[0], blamer.Frame)
        self.assertIsInstance(p.user_data["n"], blamer.Field)
        self.assertIsInstance(p.slab_ids, tuple)
        self.assertEqual(p.dropped, 0)
        self.assertIsNone(p.parent_claim)
        self.assertIn("root", [n.name for n in s.nodes])
        # cached: the same list twice
        self.assertIs(s.processes, s.processes)
        with self.assertRaises(AttributeError):
            p.pid = 1

    def test_flags_leave_things_out(self):
        blamer.set_data("n", 5)
        blamer.log("x")
        with blamer.activity("a"):
            s = self.snap(threads=False, user_data=False, log=False)
        p = s.process(os.getpid())
        self.assertEqual((p.threads, p.user_data, p.logs), ([], {}, []))
        self.assertEqual(s.flags & blamer.READ_NO_THREADS, blamer.READ_NO_THREADS)
        p = self.snap(headers_only=True).process(os.getpid())
        self.assertEqual(p.health, "unchecked")

    def test_json_and_prometheus(self):
        blamer.set_role("worker", "9")
        s = self.snap()
        doc = json.loads(s.to_json())
        self.assertIn(os.getpid(), [p["pid"] for p in doc["processes"]])
        doc = json.loads(s.to_json(summary=True, attribution=False, pids=[os.getpid()]))
        self.assertEqual([p["pid"] for p in doc["processes"]], [os.getpid()])
        with self.assertRaises(ValueError):
            s.to_json(pids=[-1])
        text = s.prometheus()
        self.assertIn('blamer_process_info{pid="%d"' % os.getpid(), text)
        self.assertIn('role="worker"', text)

    def test_family_name_taken_twice(self):
        # A counter famcoll exports famcoll_total; a gauge named
        # famcoll_total would too: the family goes to one, the other is a
        # conflict, never samples of a gauge under the counter's TYPE.
        cli = os.environ.get("BLAMER_CLI")
        if not cli or BACKEND != "dir":
            self.skipTest("BLAMER_CLI and the dir backend")
        blamer.counter("famcoll", "a counter").inc(5)
        blamer.gauge("famcoll_total", "a gauge", mode="max").set(7)
        for args in (["export"], ["export", "--per-process"]):
            out = subprocess.run([cli, "--dir", self.dir] + args, capture_output=True,
                                 text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith("famcoll_total")]
            self.assertEqual(len(lines), 1, (args, lines))
            self.assertTrue(lines[0].endswith(" 5"), (args, lines))
            self.assertIn("# TYPE famcoll_total counter", out.stdout)

    def test_units_left_out_of_the_totals_stay_the_processes(self):
        # 16 other heaps measure in 16 units of their own (two heaps each):
        # unit 2000 of this one is left out of the totals, and only of them
        ctxs = [blamer.open(backend=BACKEND, dir=self.dir if BACKEND == "dir" else None)
                for _ in range(17)]
        try:
            for i, c in enumerate(ctxs):
                if i == 0:
                    c.path(["victim"], [2000]).add(42)
                else:
                    u = 1001 + 2 * (i % 8)
                    c.path(["crowd"], [u, u + 1]).add(1)
            s = self.snap()
            self.assertEqual(s.units_left_out, 1)
            self.assertNotIn(2000, s.units)
            mine = [v for p in s.processes for path in p.paths
                    for u, v in path.values.items() if u == 2000]
            self.assertEqual(mine, [42])
        finally:
            for c in ctxs:
                c.close()

    def test_sums_that_do_not_fit_are_counted(self):
        # two heaps of this user, each a counter of 1.5e308 (valid alone):
        # their sum is past the largest double, so the series is left out
        # of Snapshot.series; Snapshot.overflows counts it, as JSON's
        # service.overflows does (metric_conflicts is for definitions)
        ctxs = [blamer.open(backend=BACKEND, dir=self.dir if BACKEND == "dir" else None)
                for _ in range(2)]
        try:
            for c in ctxs:
                c.counter("big").inc(1.5e308)
                c.counter("ok").inc(1)
            s = self.snap()
            self.assertEqual([x.value for x in s.series if x.name == "ok"], [2])
            self.assertNotIn("big", [x.name for x in s.series])
            self.assertEqual(s.overflows, 1)
            self.assertEqual(s.metric_conflicts, 0)
            self.assertEqual(int(json.loads(s.to_json())["service"]["overflows"]), 1)
            for c in ctxs:
                c.counter("big2").inc(1)
            self.assertEqual(self.snap().overflows, 1)
        finally:
            for c in ctxs:
                c.close()

    def test_close_while_other_threads_ask(self):
        # fileno(), .backend and .source run with the GIL and without the
        # reader's lock; close() let the GIL go before it took the reader
        # away, so they could read it freed (valgrind, python-valgrind,
        # reports such a read). Now they get ValueError.
        kw = {"backend": BACKEND}
        if BACKEND == "dir":
            kw["dir"] = self.dir

        def ask(r):
            r.fileno()
            r.backend
            r.source
        rounds, errors = close_races(1, lambda: blamer.Reader(**kw), ask, 0.0005)
        self.assertEqual(errors, [])

    def test_reader_object(self):
        kw = {"backend": BACKEND}
        if BACKEND == "dir":
            kw["dir"] = self.dir
        with blamer.Reader(keep_dead=True, **kw) as r:
            self.assertEqual(r.backend, BACKEND)
            blamer.log("x")
            a = r.snapshot()
            b = r.snapshot()
            self.assertEqual([p.pid for p in a.processes], [p.pid for p in b.processes])
            st = r.status()
            self.assertEqual(st["backend"], BACKEND)
            if BACKEND == "dir":
                self.assertEqual(r.fileno(), -1)
                self.assertEqual(st["heaps"], 1)
                self.assertFalse(r.wait(0.01))
            else:
                self.assertGreaterEqual(r.fileno(), 0)
            with self.assertRaises(ValueError):
                r.wait(-1)
        with self.assertRaises(ValueError):
            r.snapshot()
        r.close()

    def test_release_dead_heap(self):
        pid = os.fork()
        if pid == 0:
            try:
                blamer.log("child")
            finally:
                os.kill(os.getpid(), signal.SIGKILL)
        os.waitpid(pid, 0)
        kw = {"backend": BACKEND}
        if BACKEND == "dir":
            kw["dir"] = self.dir
        with blamer.Reader(**kw) as r:
            me = r.snapshot().process(os.getpid())
            with self.assertRaises(blamer.Error):
                r.release(me)             # alive: refused
            dead = r.snapshot().process(pid)
            self.assertFalse(dead.live)
            self.assertEqual([e.text for e in dead.logs], ["child"])
            r.release(dead)
            self.assertIsNone(r.snapshot().process(pid))
            with self.assertRaises(TypeError):
                r.release((1, 2))

    def test_unreadable_backends(self):
        with self.assertRaises(blamer.Error) as cm:
            blamer.snapshot(backend="device", device="/nonexistent/blamer")
        self.assertIn("not found", str(cm.exception))
        # a directory where no heap was ever made: no heaps
        self.assertEqual(blamer.snapshot(backend="dir", dir=os.path.join(self.dir, "none"))
                         .processes, [])
        with self.assertRaises(ValueError):
            blamer.snapshot(backend="floppy")
        with self.assertRaises(TypeError):
            blamer.snapshot(depth=3)

    def test_gil_released_while_waiting(self):
        if BACKEND != "dir":
            self.skipTest("on the device, wait() returns at the first event")
        r = blamer.Reader(backend="dir", dir=self.dir)
        started, done = threading.Event(), threading.Event()

        def waiter():
            started.set()
            r.wait(1.0)
            done.set()
        t = threading.Thread(target=waiter)
        t.start()
        started.wait()
        ran = set()
        while not done.is_set():
            ran.add(int(time.monotonic() * 100))
        t.join()
        r.close()
        # With the GIL held through the wait this thread could not run
        # until it ended: a switch interval (5 ms) or two at most. It ran
        # in most of the wait's hundred 10 ms ticks instead; a count of
        # its loops said the same but depended on the machine's speed
        # (26,378 under valgrind on a loaded machine, 100,000 wanted).
        self.assertGreater(len(ran), 20)

    def test_wait_lets_signal_handlers_run(self):
        # The dir backend's wait restarted its sleep at every signal: a
        # handler (Ctrl-C's, a SIGTERM's) ran only when the whole timeout
        # was over; wait(None) returned at once (a negative sleep).
        if BACKEND != "dir":
            self.skipTest("dir backend")

        class Alarm(Exception):
            pass

        def raise_alarm(sig, frame):
            raise Alarm()
        old = signal.signal(signal.SIGALRM, raise_alarm)
        r = blamer.Reader(backend="dir", dir=self.dir)
        try:
            for timeout in (30, None):
                t = time.monotonic()
                signal.setitimer(signal.ITIMER_REAL, 0.3)
                with self.assertRaises(Alarm):
                    r.wait(timeout)
                self.assertGreater(time.monotonic() - t, 0.2, timeout)
                self.assertLess(time.monotonic() - t, 10, timeout)
            # a handler that returns: the wait goes on to its end
            signal.signal(signal.SIGALRM, lambda sig, frame: None)
            t = time.monotonic()
            signal.setitimer(signal.ITIMER_REAL, 0.1)
            self.assertFalse(r.wait(0.5))
            self.assertGreater(time.monotonic() - t, 0.45)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
            r.close()

    def test_process_is_the_newest_heap_of_its_pid(self):
        # A process may own several heaps (a context abandoned and made
        # again, an exec): process(pid) gave the first in the snapshot's
        # order (pid, start time, then a hash of the heap), any of them,
        # its data stale. Eight heaps in each of three children and this
        # process: the old code picked the last one by chance 1 time in
        # 8**4.
        if BACKEND != "dir":
            self.skipTest("dir backend")

        def heaps(n):
            for i in range(n):
                blamer.set_data("n", i)
                blamer.default_context().abandon()
            blamer.set_data("n", n)
        pids = []
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                try:
                    heaps(7)
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
            pids.append(pid)
        heaps(7)
        s = self.snap()
        for pid in pids + [os.getpid()]:
            self.assertEqual(len([p for p in s.processes if p.pid == pid]), 8)
            self.assertEqual(s.process(pid).user_data["n"].value, 7)
        self.assertTrue(s.process(os.getpid()).live)

    def test_names_per_uid(self):
        # uid= looks a name up in that uid's heaps alone (another user's
        # heap renames none of its nodes or units); None, over every uid.
        blamer.dag_node("server")
        blamer.dag_node("handler")
        blamer.dag_unit(1001, "requests")
        p = blamer.path(["server", "handler"], [blamer.UNIT_CPU_NS, 1001])
        p.add(1)
        srv = p.nodes[0]
        s = self.snap()
        uid = s.process(os.getpid()).uid
        other = (uid + 1) % 2**32
        # one uid's heaps: its names are the snapshot's
        for kw in ({}, {"uid": None}, {"uid": uid}):
            self.assertEqual(s.path_string(p.nodes, **kw), "/server/handler")
            self.assertEqual(s.node_name(srv, **kw), "server")
            self.assertEqual(s.unit_name(1001, **kw), "requests")
        # no heap of another uid names them
        self.assertEqual(s.path_string(p.nodes, uid=other),
                         "/0x%x/0x%x" % p.nodes)
        self.assertIsNone(s.node_name(srv, uid=other))
        self.assertEqual(s.unit_name(1001, uid=other), "unit1001")
        self.assertEqual(s.unit_name(blamer.UNIT_CPU_NS, uid=other), "cpu_ns")
        self.assertIsNone(s.node_name(srv, uid=2**32 - 1))
        # the arguments: an int 0..2**32-1 or None, by keyword
        for bad, exc in (("0", TypeError), (1.0, TypeError), (True, TypeError),
                         (-1, ValueError), (2**32, ValueError), (2**64, ValueError)):
            for f in (lambda: s.path_string(p.nodes, uid=bad),
                      lambda: s.node_name(srv, uid=bad), lambda: s.unit_name(1001, uid=bad)):
                with self.assertRaises(exc):
                    f()
        with self.assertRaises(TypeError):
            s.node_name(srv, uid)           # keyword only
        with self.assertRaises(TypeError):
            s.unit_name(1001, user=uid)

    def test_names_are_the_heaps_owners(self):
        # A dir heap's uid is its files' owner: heaps chowned to another
        # uid name their nodes and units for that uid, not the reader's.
        if BACKEND != "dir" or os.geteuid() != 0:
            self.skipTest("dir backend, as root")
        other, owner = os.path.join(self.dir, "other"), 54321
        c = blamer.open(backend="dir", dir=other, modules=False)
        c.dag_node("server")
        c.dag_unit(1001, "requests")
        p = c.path(["server"], [1001])
        p.add(1)
        c.abandon()
        for name in os.listdir(other) + [""]:
            os.chown(os.path.join(other, name), owner, owner)
        s = blamer.snapshot(backend="dir", dir=other, dead_full=True)
        self.assertEqual([x.uid for x in s.processes], [owner])
        self.assertEqual(s.path_string(p.nodes, uid=owner), "/server")
        self.assertEqual(s.node_name(p.nodes[0], uid=owner), "server")
        self.assertEqual(s.unit_name(1001, uid=owner), "requests")
        self.assertEqual(s.path_string(p.nodes, uid=0), "/0x%x" % p.nodes[0])
        self.assertIsNone(s.node_name(p.nodes[0], uid=0))
        self.assertEqual(s.unit_name(1001, uid=0), "unit1001")


class Hostile(HeapTest):
    def heap_bytes(self):
        """The slabs of this process's heap, as bytes (dir backend)."""
        files = sorted(glob.glob(os.path.join(self.dir, "%d-*.slab" % os.getpid())),
                       key=lambda f: int(f.rsplit(".", 2)[-2]))
        return [open(f, "rb").read() for f in files]

    def test_strings_from_a_heap(self):
        if BACKEND != "dir":
            self.skipTest("dir backend")
        evil = "\x1b[2J\x1b]0;owned\x07 \u202e"
        blamer.set_data("evil", evil)
        blamer.set_data("raw", b"\xff\xfe\x1b")
        blamer.set_role("w\x1bk" if False else "worker")
        blamer.dag_node("node\x1b[31m")
        blamer.log("log \x1b[31m red")
        with blamer.activity("label \x1b[2J"):
            p = blamer.snapshot_from_memory(self.heap_bytes()).processes[0]
        # the writer's text as it set it (a script escapes it to print it)
        self.assertEqual(p.user_data["evil"].value, evil)
        self.assertEqual(p.user_data["raw"].value, b"\xff\xfe\x1b")
        # names, labels and log text: printable ASCII, made so by the reader
        self.assertEqual(p.threads[0].stack[0].label, "label ?[2J")
        self.assertEqual(p.logs[0].text, "log ?[31m red")
        self.assertEqual([n.name for n in p.nodes], ["node?[31m"])

    def test_invalid_utf8_in_a_string_field(self):
        if BACKEND != "dir":
            self.skipTest("dir backend")
        blamer.set_data("s", "abcdef")
        blob = self.heap_bytes()
        i = blob[0].find(b"abcdef")
        self.assertGreater(i, 0)
        slab = bytearray(blob[0])
        slab[i:i + 3] = b"\xff\xc3\x28"
        p = blamer.snapshot_from_memory([bytes(slab)] + blob[1:]).processes[0]
        v = p.user_data["s"].value
        self.assertIsInstance(v, str)
        self.assertTrue(v.endswith("def"), v)
        self.assertIn("\ufffd", v)

    def test_garbage_never_crashes(self):
        if BACKEND != "dir":
            self.skipTest("dir backend")
        blamer.set_data("n", 1)
        blamer.set_data("s", "text")
        with blamer.activity("a"):
            good = self.heap_bytes()
        rng = random.Random(25)
        n = len(good[0])
        seen = set()
        for i in range(300):
            slab = bytearray(good[0])
            for _ in range(rng.randint(1, 64)):
                slab[rng.randrange(min(n, 65536))] = rng.randrange(256)
            try:
                s = blamer.snapshot_from_memory([bytes(slab)] + good[1:])
            except blamer.Error:
                seen.add("refused")
                continue
            for p in s.processes:
                seen.add(p.health)
                # every part made, whatever it holds
                repr(p)
        # the mutations hit checked fields: some heaps were found corrupt
        self.assertIn("corrupt", seen)
        for bad in ([], [b""], [b"\0" * 4096], [b"x"] * 65):
            try:
                s = blamer.snapshot_from_memory(bad)
                self.assertNotEqual([p.health for p in s.processes], ["ok"])
            except (blamer.Error, ValueError):
                pass
        with self.assertRaises(TypeError):
            blamer.snapshot_from_memory([1])
        # one bytes object is no list of slabs: said so (it named 'int')
        with self.assertRaises(TypeError) as cm:
            blamer.snapshot_from_memory(b"abc")
        self.assertIn("sequence of bytes-like objects", str(cm.exception))


class Crash(HeapTest):
    def test_postmortem_of_a_killed_python_process(self):
        cli = os.environ.get("BLAMER_CLI")
        r = subprocess.Popen(
            [os.sys.executable, "-c",
             "import blamer, os, sys\n"
             "blamer.set_role('worker', 1)\n"
             "with blamer.activity('GET /users/42'):\n"
             "    sys.stdout.write('in\\n'); sys.stdout.flush()\n"
             "    os.kill(os.getpid(), 9)\n"],
            env=dict(os.environ, PYTHONPATH=os.pathsep.join(os.sys.path)),
            stdout=subprocess.PIPE, text=True)
        self.assertEqual(r.stdout.readline(), "in\n")
        r.wait()
        self.assertEqual(r.returncode, -9)
        p = self.proc(r.pid)
        self.assertFalse(p.live)
        self.assertEqual([f.label for t in p.threads for f in t.stack], ["GET /users/42"])
        if not cli:
            self.skipTest("BLAMER_CLI not set: the blamer tool's postmortem not checked")
        out = subprocess.run([cli, "postmortem", str(r.pid)], capture_output=True, text=True,
                             env=dict(os.environ), timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("GET /users/42", out.stdout)
