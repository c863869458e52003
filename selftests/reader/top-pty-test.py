#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# cli-top: `blamer top` on a terminal, driven through a pty with keys:
# alternate screen and colour, pause, sort and reverse, filter by name
# and by pid, the interval keys, help, quit with q and with Ctrl-C (the
# terminal put back both times), NO_COLOR, and a pipe (no keys, no
# escape sequences).
#   top-pty-test.py BLAMER MKHEAP
import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time

BLAMER, MKHEAP = sys.argv[1], sys.argv[2]
n = 0
fails = 0


def report(good, what, detail=""):
    global n, fails
    n += 1
    if not good:
        fails += 1
        for line in detail.splitlines()[-30:]:
            print("#   " + line)
    print("%s %d - %s" % ("ok" if good else "not ok", n, what))


class Top:
    """blamer top in a pty of 30x120; out is everything it wrote."""

    def __init__(self, env, args=("--interval", "0.3")):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.environ.update(env)
            os.execv(BLAMER, [BLAMER, "top"] + list(args))
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
        self.out = b""
        self.status = None

    def pump(self, seconds):
        end = time.time() + seconds
        while time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    return
                if not data:
                    return
                self.out += data

    def frames(self):
        """Complete frames: each starts at cursor home, ends at the status line."""
        return [f for f in self.out.split(b"\x1b[H")[1:] if b"\x1b[30;1H" in f]

    def last(self):
        f = self.frames()
        return strip(f[-1]) if f else ""

    def until(self, pred, seconds=5.0):
        """Pumps until pred(last frame) holds; the frame, or None."""
        end = time.time() + seconds
        while time.time() < end:
            self.pump(0.1)
            f = self.last()
            if pred(f):
                return f
        return None

    def key(self, keys):
        os.write(self.fd, keys.encode())

    def wait(self, seconds=5.0):
        end = time.time() + seconds
        while time.time() < end:
            self.pump(0.05)
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = st
                return os.waitstatus_to_exitcode(st)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return None


def strip(frame):
    """A frame as text: colours and line ends gone, one line per row."""
    text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", frame).replace(b"\r", b"")
    return text.decode("utf-8", "replace")


def rows(frame):
    """The process rows of a frame: (pid, comm)."""
    got = []
    for line in frame.split("\n"):
        m = re.match(r"^ *(\d+) (\S+) ", line)
        if m:
            got.append((int(m.group(1)), m.group(2)))
    return got


def main():
    d = tempfile.mkdtemp(prefix="blamer-top.")
    os.chmod(d, 0o700)
    lives = []
    try:
        subprocess.run([MKHEAP, d, "dead", "3999001", "5", "1"], check=True)
        # a second live writer with another command name
        other = os.path.join(d, "otherheap")
        shutil.copy(MKHEAP, other)
        for prog in (MKHEAP, other):
            p = subprocess.Popen([prog, d, "live", "2"], stdout=subprocess.PIPE)
            lives.append((p, int(p.stdout.readline())))
        mk_pid, other_pid = lives[0][1], lives[1][1]
        env = {"BLAMER_DIR": d, "TERM": "xterm", "NO_COLOR": ""}

        print("TAP version 13")
        print("1..18")
        t = Top(env)
        f = t.until(lambda f: len(rows(f)) == 3)
        report(f is not None, "top shows the two live writers and the dead heap", t.last())
        report(b"\x1b[?1049h" in t.out and b"\x1b[7m" in t.out and b"\x1b[1m" in t.out,
               "on a terminal: the alternate screen, a bold title, a reverse-video header")

        t.key("p")
        f = t.until(lambda f: "PAUSED" in f)
        before = len(t.frames())
        t.pump(1.0)
        report(f is not None and len(t.frames()) == before,
               "p pauses: PAUSED in the title, no new frame for 1 s (interval 0.3 s)",
               "%d frames before, %d after" % (before, len(t.frames())))
        t.key("p")
        f = t.until(lambda f: "PAUSED" not in f)
        before = len(t.frames())
        t.pump(1.0)
        report(f is not None and len(t.frames()) > before, "p again resumes the refresh")

        t.key("s")
        f = t.until(lambda f: "sort: command" in f)
        comms = [c for _, c in rows(f or "")]
        report(f is not None and "COMM*" in f and comms == sorted(comms) and len(comms) == 3,
               "s sorts by command, the column marked", f or t.last())
        t.key("r")
        f = t.until(lambda f: "(reversed)" in f)
        comms = [c for _, c in rows(f or "")]
        report(f is not None and "COMM^" in f and comms == sorted(comms, reverse=True),
               "r reverses the order", f or t.last())
        t.key("r")
        t.key("ssss")
        f = t.until(lambda f: "sort: activity age" in f)
        report(f is not None and "ACTIVITY*" in f, "s cycles through the columns", t.last())
        t.key("s")
        f = t.until(lambda f: "sort: pid" in f)
        pids = [p for p, _ in rows(f or "")]
        report(f is not None and pids == sorted(pids), "back to pid order", t.last())

        t.key("/oth")
        f = t.until(lambda f: "filter (a pid" in f and ": oth_" in f)
        report(f is not None, "/ opens the filter prompt and echoes what is typed", t.last())
        t.key("\r")
        f = t.until(lambda f: "filter: oth" in f)
        report(f is not None and rows(f) == [(other_pid, "otherheap")],
               "a name filter keeps the processes whose command contains it", t.last())
        t.key("/\x7f\x7f\x7f%d\r" % mk_pid)
        f = t.until(lambda f: "filter: %d" % mk_pid in f)
        report(f is not None and rows(f) == [(mk_pid, "mkheap")],
               "a pid filter keeps that process (backspace edits the filter)", t.last())
        t.key("f" + "\x7f" * 10 + "\r")
        f = t.until(lambda f: "filter:" not in f and len(rows(f)) == 3)
        report(f is not None, "an empty filter shows everything again", t.last())

        t.key("+")
        f = t.until(lambda f: "every 0.6s" in f)
        report(f is not None, "+ doubles the interval", t.last())
        t.key("h")
        f = t.until(lambda f: "keys:" in f and "pause or resume" in f)
        report(f is not None, "h shows the keys", t.last())

        t.key("q")
        code = t.wait()
        attrs = termios.tcgetattr(t.fd)
        report(code == 0 and t.out.endswith(b"\x1b[?25h\x1b[?1049l") and
               attrs[3] & termios.ICANON and attrs[3] & termios.ECHO,
               "q quits with status 0 and puts the terminal back",
               "status %s, ends %r" % (code, t.out[-40:]))
        os.close(t.fd)

        # NO_COLOR, and Ctrl-C
        t = Top(dict(env, NO_COLOR="1"))
        f = t.until(lambda f: len(rows(f)) == 3)
        t.key("\x03")
        code = t.wait()
        attrs = termios.tcgetattr(t.fd)
        report(f is not None and not re.search(rb"\x1b\[[0-9;]*m", t.out),
               "NO_COLOR: no colour at all")
        report(code == 0 and t.out.endswith(b"\x1b[?1049l") and attrs[3] & termios.ICANON,
               "Ctrl-C quits with status 0 and puts the terminal back",
               "status %s" % code)
        os.close(t.fd)

        # a pipe: plain frames, no escape sequences
        r = subprocess.run([BLAMER, "top", "--count", "2", "--interval", "0.1"],
                           env=dict(os.environ, BLAMER_DIR=d, TERM="xterm"),
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
        report(r.returncode == 0 and b"\x1b" not in r.stdout and
               r.stdout.count(b"blamer top - ") == 2,
               "on a pipe: two plain frames, no escape sequences", r.stdout.decode())
    finally:
        for p, _ in lives:
            p.kill()
            p.wait()
        shutil.rmtree(d, ignore_errors=True)
    return 0 if fails == 0 else 1


sys.exit(main())
