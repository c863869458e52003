#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""prometheus-endpoint: `blamer export --listen` as the other local users
meet it. While clients misbehave in each way a local user can (50 that
trickle their request a byte at a time, 300 that connect and say
nothing, 50 that ask and never read, a flood of 200 that scrape as fast
as they can, and all of these at once), a well-behaved scrape keeps
succeeding: each one's time is measured and printed, and what is
asserted is that it succeeded (within a generous 5 s), never how fast.
Also: a client that trickles forever is dropped by its deadline from
accept; one peer holds at most HTTP_MAX_PER_PEER connections; the
exporter's peak RSS stays bounded; a Unix socket (mode 0660) serves the
same, a scraper that asks a while after it connected included, and
refuses a uid outside its owner and group; as root, another uid's
attacks (a peer of its own, by the kernel's word, on TCP as on the Unix
socket) cannot blind root's scrapes, and a scraper taking a large answer
slowly but steadily is not let go for the connections of nine other
uids filling the server, whether they never read or take their answers
a little at a time. A connection the server lets go
before its client took its answer (a deadline, room for another) leaves
no orphan holding the rest in the kernel (FIN-WAIT-1 with data queued).
Localhost only; every wait is bounded; everything started is stopped.

    endpoint-test.py BLAMER MKHEAP
    endpoint-test.py --lazy-scrape SOCKET DELAY   (one scrape, for the test)
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

B, MK = sys.argv[1], sys.argv[2]
MAX_PER_PEER = 32          # tools/blamer/http.h
REQUEST_MS = 5000
ANSWER_MS = 10000
STALL_MS = 1000
TIMEOUT = 5.0              # a scrape must succeed within this (generous)
LAZY = 0.2                 # how long a lazy scraper waits to ask
n = 0
fails = 0


def ok(cond, msg):
    global n, fails
    n += 1
    if not cond:
        fails += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, msg), flush=True)


def connect(addr):
    fam = socket.AF_UNIX if isinstance(addr, str) else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    s.connect(addr)
    return s


def curl_scrape(addr):
    """One well-behaved scrape by a process of its own, as Prometheus is
    (curl: the request sent the moment it is connected, the answer read
    at once): (seconds, None) or (seconds, why it failed)."""
    t0 = time.monotonic()
    where = ["--unix-socket", addr, "http://blamer/metrics"] if isinstance(addr, str) else \
        ["http://%s:%d/metrics" % addr]
    r = subprocess.run(["curl", "-sS", "-m", str(TIMEOUT), "-o", "/dev/null", "-w",
                        "%{http_code} %{size_download}"] + where,
                       capture_output=True, text=True)
    dt = time.monotonic() - t0
    if r.returncode or not r.stdout.startswith("200 "):
        return dt, "curl %d %s %s" % (r.returncode, r.stdout, r.stderr.strip()[:80])
    return dt, None


def scrape(addr, delay=0.0):
    """A scrape by a thread of ours (the flood's), asking @delay s after
    it connected: (seconds, None) or (seconds, why it failed)."""
    t0 = time.monotonic()
    try:
        s = connect(addr)
        time.sleep(delay)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: blamer\r\n\r\n")
        data = b""
        while time.monotonic() - t0 < TIMEOUT:
            b = s.recv(1 << 16)
            if not b:
                break
            data += b
        s.close()
    except OSError as e:
        return time.monotonic() - t0, repr(e)
    dt = time.monotonic() - t0
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200 "):
        return dt, "answer %r" % head[:40]
    want = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
    if not want or int(want[0].split(b":")[1]) != len(body) or b"\nblamer_heaps{" not in body:
        return dt, "a cut answer (%d bytes)" % len(body)
    return dt, None


def steady_scrape(addr, rate):
    """A scrape taking its answer steadily at @rate bytes a second (a
    slow link), in small reads: (seconds, None) or (seconds, why it
    failed)."""
    t0 = time.monotonic()
    data = b""
    try:
        s = connect(addr)
        s.settimeout(ANSWER_MS / 1000 + 5)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: blamer\r\n\r\n")
        while True:
            b = s.recv(1 << 14)
            if not b:
                break
            data += b
            ahead = len(data) / rate - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)
        s.close()
    except OSError as e:
        return time.monotonic() - t0, "%r after %d bytes" % (e, len(data))
    dt = time.monotonic() - t0
    head, _, body = data.partition(b"\r\n\r\n")
    want = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
    if not head.startswith(b"HTTP/1.1 200 ") or not want or int(want[0].split(b":")[1]) != len(body):
        return dt, "a cut answer (%d of %s bytes)" % (len(body), want[0].split(b":")[1].strip().decode()
                                                     if want else "?")
    return dt, None


def mute(addr, count):
    """@count TCP connections that ask and never read (a receive buffer
    of 4 KiB: the window shuts at once)."""
    socks = []
    for _ in range(count):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(TIMEOUT)
        s.connect(addr)
        s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        socks.append(s)
    return socks


def cut(socks):
    """How many of @socks the server let go (reset: the client's end is
    closed; closed the ordinary way with the answer unsent, the FIN would
    still wait behind it and the client's end stay established)."""
    return sum(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] == 7 for s in socks)


def orphans(port):
    """The server's sockets on @port closed with data of theirs still
    queued in the kernel (FIN-WAIT-1, Send-Q more than the FIN); None if
    ss cannot say. Only this port's: other sockets of the host do not
    count."""
    try:
        r = subprocess.run(["ss", "-tnH", "state", "fin-wait-1", "( sport = :%d )" % port],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode:
        return None
    # Recv-Q Send-Q Local Peer: no State column when a state is asked for
    return sum(1 for l in r.stdout.splitlines() if len(l.split()) >= 2 and int(l.split()[1]) > 1)


def lazy_scrape(addr):
    """A well-behaved scrape by a process of its own that asks LAZY s
    after it connected, as curl does on a machine busy enough to run it a
    while later (the request is due within REQUEST_MS of accept): (seconds,
    None) or (seconds, why it failed)."""
    t0 = time.monotonic()
    try:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--lazy-scrape", addr,
                            str(LAZY)], capture_output=True, text=True, timeout=TIMEOUT + 10)
    except subprocess.TimeoutExpired:
        return time.monotonic() - t0, "lazy: no end within %d s" % (TIMEOUT + 10)
    dt = time.monotonic() - t0
    if r.returncode:
        return dt, "lazy %d %s" % (r.returncode, (r.stdout + r.stderr).strip()[:80])
    return dt, None


class Attack:
    """Misbehaving clients in a thread of their own until stop()."""

    def __init__(self, addr, kind, count, uid=None):
        self.addr, self.kind, self.count = addr, kind, count
        self.stopping = threading.Event()
        self.threads = []
        self.done = 0
        self.served = 0      # the flood's scrapes answered in full

    def start(self):
        if self.kind == "flood":
            for _ in range(self.count):
                t = threading.Thread(target=self.flood, daemon=True)
                t.start()
                self.threads.append(t)
        else:
            t = threading.Thread(target=self.hold, daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def flood(self):
        while not self.stopping.is_set():
            if scrape(self.addr)[1] is None:
                self.served += 1
            self.done += 1

    def opener(self):
        try:
            s = connect(self.addr)
            s.setblocking(False)
            if self.kind == "mute":
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.send(b"GET /metrics HTTP/1.1\r\n\r\n")
            elif self.kind == "slow":
                s.send(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
            return s
        except OSError:
            return None

    def hold(self):
        """Keeps @count connections open (reopened when dropped): slow
        ones trickle a byte every 0.1 s, idle ones say nothing, mute
        ones asked and never read."""
        socks = [self.opener() for _ in range(self.count)]
        while not self.stopping.wait(0.1):
            for i, s in enumerate(socks):
                alive = s is not None
                if alive:
                    try:
                        if s.recv(1, socket.MSG_PEEK) == b"":
                            alive = False
                    except BlockingIOError:
                        pass
                    except OSError:
                        alive = False
                if alive and self.kind == "slow":
                    try:
                        s.send(b"a")
                    except OSError:
                        alive = False
                if not alive:
                    if s is not None:
                        s.close()
                    socks[i] = self.opener()
                    self.done += 1
        for s in socks:
            if s is not None:
                s.close()

    def stop(self):
        self.stopping.set()
        end = time.monotonic() + TIMEOUT + 5   # every thread's scrape ends by then
        for t in self.threads:
            t.join(max(0.0, end - time.monotonic()))


def under(addr, attacks, label, scrapes=10, scraper=curl_scrape):
    """Well-behaved scrapes, 0.2 s apart, while @attacks run."""
    for a in attacks:
        a.start()
    time.sleep(0.5)          # the attack in full swing first
    times, bad = [], []
    for _ in range(scrapes):
        dt, why = scraper(addr)
        times.append(dt)
        if why:
            bad.append(why)
        time.sleep(0.2)
    for a in attacks:
        a.stop()
    times.sort()
    ok(not bad, "%s: %d of %d scrapes answered in full (median %.3f s, worst %.3f s, %d within 1 s)%s"
       % (label, scrapes - len(bad), scrapes, times[len(times) // 2], times[-1],
          sum(t <= 1.0 for t in times), "; failed: %s" % bad[:3] if bad else ""))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_exporter(d, listen):
    p = subprocess.Popen([B, "--dir", d, "export", "--prometheus", "--listen", listen],
                         stderr=subprocess.PIPE)
    return p


def wait_up(addr):
    for _ in range(100):
        if scrape(addr)[1] is None:
            return True
        time.sleep(0.1)
    return False


def hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def as_uid(uid, fn):
    """Runs fn() in a child as @uid (root only); its pid."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            fn()
        finally:
            os._exit(0)
    return pid


def reap(pid, secs):
    """The exit status of child @pid, waited for at most @secs s (then
    killed: None)."""
    end = time.monotonic() + secs
    while time.monotonic() < end:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            return st
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def main():
    # killed (a timeout), still stop what was started: the finally below
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    tmp = tempfile.mkdtemp(prefix="blamer-endpoint.")
    heaps = os.path.join(tmp, "heaps")
    os.mkdir(heaps, 0o700)
    # 40 dead heaps
    for i in range(40):
        subprocess.run([MK, heaps, "dead", str(3990000 + i), "5", "1"], check=True)
    # and one heap as large as the reader reads, a tenth of it: an answer
    # of some 1.7 MB, more than the kernel holds for a client
    big = os.path.join(tmp, "big")
    os.mkdir(big, 0o700)
    subprocess.run([MK, big, "max", "3990100", "5", "10"], check=True)
    port = free_port()
    addr = ("127.0.0.1", port)
    sock = os.path.join(tmp, "metrics.sock")
    procs = []
    children = []
    print("TAP version 13")
    print("1..22", flush=True)
    try:
        exp = start_exporter(heaps, "127.0.0.1:%d" % port)
        procs.append(exp)
        if not wait_up(addr):
            ok(False, "the exporter answers")
            return
        under(addr, [], "no attack")
        under(addr, [Attack(addr, "slow", 50)], "50 clients trickling their requests")
        under(addr, [Attack(addr, "idle", 300)], "300 idle connections")
        under(addr, [Attack(addr, "mute", 50)], "50 clients that never read")
        under(addr, [Attack(addr, "flood", 200)], "a flood of 200 clients scraping")
        under(addr, [Attack(addr, "slow", 50), Attack(addr, "idle", 300),
                     Attack(addr, "mute", 50), Attack(addr, "flood", 200)], "all of them at once")

        # a trickling client is dropped by the deadline counted from
        # accept(), however steadily it trickles
        s = connect(addr)
        s.send(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
        t0, gone = time.monotonic(), None
        while time.monotonic() - t0 < REQUEST_MS / 1000 + 5:
            try:
                s.send(b"a")
                s.settimeout(0.2)
                if s.recv(1) == b"":
                    gone = time.monotonic() - t0
                    break
            except socket.timeout:
                pass
            except OSError:
                gone = time.monotonic() - t0
                break
        s.close()
        ok(gone is not None and gone < REQUEST_MS / 1000 + 2,
           "a client trickling a byte every 0.2 s is dropped %s s after it connected (budget %d ms from accept)"
           % ("%.1f" % gone if gone else "never", REQUEST_MS))

        # one peer (every local client of one uid) holds at most
        # MAX_PER_PEER connections: 100 that each sent part of a request
        # (one that sends nothing is not even accepted: TCP_DEFER_ACCEPT),
        # the oldest let go
        socks = [connect(addr) for _ in range(100)]
        for s in socks:
            s.send(b"GET /metr")
        time.sleep(0.5)
        held = 0
        for s in socks:
            s.setblocking(False)
            try:
                if s.recv(1, socket.MSG_PEEK) != b"":
                    held += 1
            except BlockingIOError:
                held += 1
            except OSError:
                pass
            s.close()
        ok(0 < held <= MAX_PER_PEER, "100 unfinished requests of one peer: %d held (at most %d)"
           % (held, MAX_PER_PEER))
        # connections let go before their client took the answer (room
        # for another, a deadline) are reset: closed the ordinary way,
        # each would be an orphan holding the rest of its answer (up to
        # 4 MiB) in the kernel for as long as the client keeps its window
        # shut, counted by no cap. A peer's 32 that never read (of the
        # large answer) stop taking it; 32 more of the same peer push
        # them out; those reach the end of their answer's budget
        bport = free_port()
        baddr = ("127.0.0.1", bport)
        procs.append(start_exporter(big, "127.0.0.1:%d" % bport))
        wait_up(baddr)
        first = mute(baddr, MAX_PER_PEER)
        time.sleep(STALL_MS / 1000 + 0.5)
        second = mute(baddr, MAX_PER_PEER)
        time.sleep(0.5)
        o = orphans(bport)
        ok(o == 0 and cut(first) == len(first),
           "%d never-reading connections let go for %d more of their peer: %d reset, %s left as orphans holding data"
           % (len(first), len(second), cut(first), o))
        time.sleep(ANSWER_MS / 1000 + 1)
        o = orphans(bport)
        ok(o == 0 and cut(second) == len(second),
           "%d never-reading connections past their answer's budget (%d ms): %d reset, %s left as orphans holding data"
           % (len(second), ANSWER_MS, cut(second), o))
        for s in first + second:
            s.close()
        hwm = hwm_kib(exp.pid)
        ok(hwm < 64 * 1024, "the exporter's peak RSS after all of it: %d KiB (bound 64 MiB)" % hwm)

        # the Unix socket: mode 0660, the same answers, the same defences.
        # Its directory may be searched by all: the socket's mode is what
        # keeps another uid out (below)
        os.chmod(tmp, 0o711)
        uexp = start_exporter(heaps, "unix:" + sock)
        procs.append(uexp)
        up = wait_up(sock)
        mode = os.stat(sock).st_mode & 0o777 if up else 0
        ok(up and mode == 0o660, "unix:PATH: a socket of mode %o that answers" % mode)
        # The attackers are the scraper's uid, one peer with it (no
        # TCP_DEFER_ACCEPT here: the idle ones take room), so what is
        # promised is what http.c promises within a peer: the attackers
        # are threads of this one process, and a full peer lets go of a
        # connection of the process holding the most of its connections,
        # never of the scraper's (curl, a process of its own), even before
        # the scraper has asked. A uid attacking from as many processes as
        # connections would compete with its scraper: not promised, not
        # asserted.
        under(sock, [Attack(sock, "slow", 50), Attack(sock, "idle", 100),
                     Attack(sock, "flood", 50)], "the Unix socket, attacked three ways")
        # the same with a scraper that asks LAZY s after it connected (a
        # loaded machine runs curl that late): some hundred connections of
        # the attacking process come and go meanwhile, and before, one of
        # them pushed the scraper's out unread (a broken pipe)
        under(sock, [Attack(sock, "slow", 50), Attack(sock, "idle", 100),
                     Attack(sock, "flood", 50)],
              "the Unix socket, attacked three ways, a scraper asking %.1f s after it connected" % LAZY,
              scraper=lazy_scrape)
        # systemd's socket activation: the socket made (and its rights
        # set) by systemd, passed as fd 3 (--listen systemd)
        if os.path.exists("/usr/bin/systemd-socket-activate"):
            sport = free_port()
            sa = subprocess.Popen(["/usr/bin/systemd-socket-activate", "-l",
                                   "127.0.0.1:%d" % sport, B, "--dir", heaps, "export",
                                   "--prometheus", "--listen", "systemd"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            procs.append(sa)
            ok(wait_up(("127.0.0.1", sport)), "--listen systemd: serves the socket systemd passes")
        else:
            ok(True, "# SKIP systemd-socket-activate not installed")

        if os.geteuid() != 0:
            ok(True, "# SKIP not root: no other uid to attack from")
            ok(True, "# SKIP not root: no other uid to connect as")
            ok(True, "# SKIP not root: no other uid to attack the Unix socket from")
            ok(True, "# SKIP not root: no nine other uids to fill the server from")
            return
        # another uid: its connections are a peer of their own (TCP: the
        # kernel says whose the client socket is), so its flood of fast
        # readers, however big, does not take root's room; and the Unix
        # socket (0660, root's) does not let it in at all
        def flood_tcp():
            a = Attack(addr, "flood", 150).start()
            b = Attack(addr, "idle", 200).start()
            time.sleep(6)
            a.stop()
            b.stop()
        children.append(as_uid(65534, flood_tcp))
        denied = []

        def try_unix():
            try:
                connect(sock)
            except PermissionError:
                os._exit(0)
            except OSError:
                os._exit(2)
            os._exit(1)
        pid = as_uid(65534, try_unix)
        _, st = os.waitpid(pid, 0)
        denied.append(os.WEXITSTATUS(st) == 0)
        under(addr, [], "root scraping while uid 65534 floods (150 readers, 200 idle)", scrapes=15)
        ok(all(denied), "uid 65534 may not connect to the Unix socket (mode 0660, root's)")

        # the socket's group given to uid 65534: its three attacks are a
        # peer of their own (SO_PEERCRED), so however its connections
        # come and go, root's scraper, even one that asks late, is never
        # let go for one of them. The attacker says (exit status) whether
        # its flood was served: an attack that never got in proves nothing
        os.chown(sock, -1, 65534)

        def attack_unix():
            attacks = [Attack(sock, "slow", 50).start(), Attack(sock, "idle", 100).start(),
                       Attack(sock, "flood", 50).start()]
            time.sleep(8)
            for a in attacks:
                a.stop()
            os._exit(0 if attacks[2].served else 3)
        attacker = as_uid(65534, attack_unix)
        children.append(attacker)
        under(sock, [], "root scraping the Unix socket (asking %.1f s after it connected) while "
              "uid 65534, of its group, attacks three ways" % LAZY, scraper=lazy_scrape)
        st = reap(attacker, TIMEOUT + 15)
        children.remove(attacker)
        ok(st is not None and os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0,
           "uid 65534's attack on the Unix socket got in (its flood was answered)")

        # a scraper taking a large answer (1.7 MB) slowly but steadily
        # fills the kernel's buffer at the end of nearly every write, as
        # a client that never reads does; it is not let go while nine
        # other uids (more than the total cap over the peer cap) keep the
        # server full of connections that ask and never read, churning
        # them as fast as they are let go. Before, each write that filled
        # the buffer counted it as not taking its answer, and it went
        # first, being the oldest
        #
        # And the same on TCP when the flood's connections take their
        # answers a little at a time (small buffers, 4 kB every 20 ms), so
        # that they look as busy as the scraper: the server, full, lets go
        # one of the peer holding the most (a flooder's), never the
        # scraper's peer's one. Before, the one whose answer moved longest
        # ago went, the scraper between two of its reads (reset after
        # 128 kB in 3 of 3 scrapes)
        bsock = os.path.join(tmp, "big.sock")
        bexp = start_exporter(big, "unix:" + bsock)
        procs.append(bexp)
        wait_up(bsock)
        os.chmod(bsock, 0o666)
        btcp = ("127.0.0.1", free_port())
        procs.append(start_exporter(big, "%s:%d" % btcp))
        wait_up(btcp)
        for nibble in (False, True):
            stop_at = time.monotonic() + 14
            where = btcp if nibble else bsock

            def flood():
                held, made = [], 0
                while time.monotonic() < stop_at:
                    try:
                        s = connect(where)
                        if nibble:
                            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
                        s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
                        s.setblocking(False)
                        held.append(s)
                        made += 1
                    except OSError:
                        pass
                    for s in held if nibble else ():
                        try:
                            s.recv(4096)
                        except OSError:
                            pass
                    if len(held) > 30:
                        held.pop(0).close()
                    time.sleep(0.02)
                os._exit(0 if made > 30 else 3)
            flooders = [as_uid(2001 + k, flood) for k in range(9)]
            children.extend(flooders)
            time.sleep(2)
            got = [steady_scrape(where, 250000 if nibble else 500000) for _ in range(2)]
            sts = [reap(pid, 30) for pid in flooders]
            for pid in flooders:
                children.remove(pid)
            bad = [why for _, why in got if why]
            ok(not bad and all(st is not None and os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0
                               for st in sts),
               "a scraper taking 1.7 MB at %s while 9 other uids flood connections that %s: "
               "%d of %d answered in full (%s s)%s"
               % ("250 kB/s on TCP" if nibble else "500 kB/s on the Unix socket",
                  "take their answers a little at a time" if nibble else "never read",
                  len(got) - len(bad), len(got), ", ".join("%.1f" % t for t, _ in got),
                  "; failed: %s" % bad if bad else ""))
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        for p in procs:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        gone = not os.path.exists(sock)
        subprocess.run(["rm", "-rf", tmp])
        if procs:
            ok(all(p.returncode == 0 for p in procs) and gone,
               "SIGTERM ends each exporter with status 0 (%s), the socket file removed"
               % [p.returncode for p in procs])
    sys.exit(1 if fails else 0)


def lazy_child(addr, delay):
    """--lazy-scrape: one scrape asking @delay s after it connected;
    exits 0 if it was answered in full, else prints why and exits 1."""
    why = scrape(addr, float(delay))[1]
    if why:
        print(why)
    sys.exit(1 if why else 0)


if sys.argv[1] == "--lazy-scrape":
    lazy_child(sys.argv[2], sys.argv[3])
else:
    main()
