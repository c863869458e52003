# SPDX-License-Identifier: MIT
"""What the tests share: a private heap directory per test, the default
context set up on it, and readers of it."""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import blamer

# The backend under test: dir on the host (a private directory per test);
# BLAMER_TEST_BACKEND=device in the VM, with the module loaded.
BACKEND = os.environ.get("BLAMER_TEST_BACKEND", "dir")


def close_races(seconds, make, use, pause, least=11):
    """Rounds for @seconds, and at least @least of them (under valgrind
    on a loaded machine one round took the whole time), of a close racing
    another thread's calls: an object from make(), a thread calling
    use(obj) until it raises ValueError (closed, the promised outcome),
    and this thread closing it @pause s after that thread started.
    Returns the rounds and what else the other thread raised (the bug, if
    anything)."""
    end, rounds, errors = time.time() + seconds, 0, []
    while time.time() < end or rounds < least:
        obj, go = make(), threading.Event()

        def other():
            go.set()
            try:
                while True:
                    use(obj)
            except ValueError:
                pass
            except Exception as e:  # noqa: BLE001 - any other is the bug
                errors.append(e)
        t = threading.Thread(target=other)
        t.start()
        go.wait()
        time.sleep(pause)
        obj.close()
        t.join()
        rounds += 1
    return rounds, errors


class HeapTest(unittest.TestCase):
    """The default context on a directory of the test's own (dir backend),
    closed and removed afterwards, whatever the test did."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="blamer-pytest.")
        os.chmod(self.dir, 0o700)
        blamer.reset()
        # For children (subprocess, fork + exec) and readers alike.
        self._env = {k: os.environ.get(k) for k in ("BLAMER_BACKEND", "BLAMER_DIR")}
        os.environ["BLAMER_BACKEND"] = BACKEND
        os.environ["BLAMER_DIR"] = self.dir
        blamer.init(backend=BACKEND, dir=self.dir if BACKEND == "dir" else None)

    def tearDown(self):
        blamer.reset()
        for k, v in self._env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(self.dir, ignore_errors=True)

    def snap(self, **kw):
        kw.setdefault("backend", BACKEND)
        if BACKEND == "dir":
            kw.setdefault("dir", self.dir)
        return blamer.snapshot(**kw)

    def proc(self, pid=None, snap=None):
        """The Process of @pid (default: this one) in a new snapshot."""
        s = snap or self.snap()
        p = s.process(pid or os.getpid())
        self.assertIsNotNone(p, "pid %s not in the snapshot" % (pid or os.getpid()))
        return p

    def run_py(self, code, *args, check=True, env=None, timeout=60):
        """Runs @code in a new interpreter (the one running the tests) that
        imports blamer from the same place; its CompletedProcess."""
        e = dict(os.environ)
        e["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        e.update(env or {})
        r = subprocess.run([sys.executable, "-c", code] + list(args), env=e,
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            self.fail("child failed (%d): %s" % (r.returncode, r.stderr[-2000:]))
        return r
