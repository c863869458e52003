# SPDX-License-Identifier: MIT
"""The Python binding's costs, each against its baseline in the same run
(Documentation/performance.rst, "Python"):

  1. writes: prometheus_client's Counter.inc() and Histogram.observe()
     switched to blamer (blamer.prometheus) against prometheus_client's
     own multiprocess MmapedValue.inc() (target: at most 0.5x), and
     prometheus_client's whole multiprocess Histogram.observe(); `with
     blamer.activity(...)` (target: under 1 us), and the binding's native
     writes;
  2. collecting N dead workers' metrics (N = 1,000 and 10,000): each
     worker a forked process that counts a request (a counter with a
     label), observes its latency (a histogram, prometheus_client's
     default buckets) and holds an in-progress gauge (livesum), into
     both prometheus_client's mmap files and blamer heaps, then dies
     (prometheus_client's mark_process_dead() called for it, as
     gunicorn's child_exit hook does); MultiProcessCollector +
     generate_latest() of each over the same workers (target: blamer,
     its dead heaps folded, at least 20x faster, and not slower at
     10,000 than at 1,000); blamer's folding collect, and without a
     fold state (every dead heap read at every collect).

    python_bench.py [MAX_WORKERS]     (default 10000)

Microbenchmarks run interleaved (A, B, A, B, ...) for 11 rounds; each
figure is the median, each ratio the median of the per-round ratios.
Collector times are CPU time of this process (the reading is here),
the median of 3 runs (1 at 10,000 for prometheus_client). Run with
Debian's /usr/bin/python3 and PYTHONPATH=build/python.
"""
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
import timeit

ROUNDS = 11


def interleaved(cases, number):
    """{name: (median ns per op, [per-round ns])} of timeit cases
    (name, stmt, globals), measured A, B, A, B... for ROUNDS rounds."""
    timers = [(name, timeit.Timer(stmt, globals=g)) for name, stmt, g in cases]
    per = {name: [] for name, _ in timers}
    for t in timers:      # warm up
        t[1].timeit(number // 10)
    for _ in range(ROUNDS):
        for name, t in timers:
            per[name].append(t.timeit(number) / number * 1e9)
    return per


def ratio(per, a, b):
    return statistics.median(x / y for x, y in zip(per[a], per[b]))


def med(per, a):
    return statistics.median(per[a])


def verdict(ok):
    return "PASS" if ok else "FAIL"


def writes(tmp):
    """Part 1: the hot path."""
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = os.path.join(tmp, "mmap-writes")
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    from prometheus_client import Counter, Histogram, values
    import blamer
    import blamer.prometheus as bp

    values.ValueClass = values.MultiProcessValue()
    mc = Counter("mc", "help", registry=None)
    mh = Histogram("mh", "help", registry=None)
    mmap_value = mc._value
    mmap_observe = Histogram.observe          # prometheus_client's own
    bp.install()                              # as an application switches
    bc = Counter("bc", "help", registry=None)
    bh = Histogram("bh", "help", registry=None)
    ctx = blamer.default_context()
    series = ctx.counter("native", "help").labels()
    path = blamer.path(["server", "handler"], [blamer.UNIT_COUNT])
    # 2,000 other paths in the heap: a path asked for at every call
    # (blamer.path(...).add(), no handle kept) costs a lookup by key
    for i in range(2000):
        blamer.path(["server", "route-%d" % i], [blamer.UNIT_COUNT]).add(1)
    value = blamer.set_data("requests", 0)
    act = blamer.activity
    g = dict(locals())
    per = interleaved([
        ("mmap_inc", "mmap_value.inc(1)", g),
        ("counter_inc", "bc.inc()", g),
        ("hist_observe", "bh.observe(0.3)", g),
        ("mmap_hist_observe", "mmap_observe(mh, 0.3)", g),
        ("activity", "with act('GET /users'): pass", g),
        ("series_inc", "series.inc()", g),
        ("path_add", "path.add(1)", g),
        ("path_asked", "blamer.path(['server', 'handler'], [blamer.UNIT_COUNT]).add(1)", g),
        ("value_add", "value.add(1)", g),
        ("empty", "pass", g),
    ], 20000)
    print("# 1. writes: ns per operation (median of %d interleaved rounds; ratios: median of "
          "per-round ratios)" % ROUNDS)
    print("%-58s %9s %10s %s" % ("operation", "ns", "ratio", "target"))
    base = med(per, "mmap_inc")
    print("%-58s %9.0f %10s" % ("prometheus_client MmapedValue.inc(1) (baseline)", base, ""))
    r = ratio(per, "counter_inc", "mmap_inc")
    print("%-58s %9.0f %9.2fx %s" % ("Counter.inc() switched to blamer", med(per, "counter_inc"),
                                     r, "<= 0.5x " + verdict(r <= 0.5)))
    r = ratio(per, "hist_observe", "mmap_inc")
    print("%-58s %9.0f %9.2fx %s" % ("Histogram.observe() switched to blamer (15 buckets)",
                                     med(per, "hist_observe"), r,
                                     "<= 0.5x " + verdict(r <= 0.5)))
    r = ratio(per, "hist_observe", "mmap_hist_observe")
    print("%-58s %9.0f %9.2fx" % ("  against prometheus_client's own Histogram.observe()",
                                  med(per, "mmap_hist_observe"), r))
    a = med(per, "activity")
    print("%-58s %9.0f %10s %s" % ("with blamer.activity('GET /users'): pass", a, "",
                                   "< 1000 ns " + verdict(a < 1000)))
    for name, label in (("series_inc", "Series.inc() (native counter)"),
                        ("path_add", "Path.add(1)"),
                        ("path_asked", "blamer.path(nodes, units).add(1), 2,000 paths made"),
                        ("value_add", "Value.add(1)"),
                        ("empty", "empty statement (the timing loop)")):
        print("%-58s %9.0f" % (label, med(per, name)))
    sys.stdout.flush()


def make_workers(n, mmap_dir, heap_dir):
    """@n workers, each a forked process that writes both systems' metrics
    and dies (two at a time)."""
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = mmap_dir
    from prometheus_client import Counter, Gauge, Histogram, values
    import blamer
    import blamer.prometheus as bp

    blamer.reset()
    blamer.init(backend="dir", dir=heap_dir, slab_size=65536, max_slabs=4, modules=False)
    from prometheus_client.multiprocess import mark_process_dead

    def app():
        """The application's metrics, children made before the fork (as a
        preloaded application's are): under the value class of now."""
        c = Counter("app_requests", "Requests", ["route"], registry=None)
        return ({r: c.labels(r) for r in ("/users", "/orders")},
                Histogram("app_request_seconds", "Latency", registry=None),
                Gauge("app_inprogress", "In progress", registry=None, multiprocess_mode="livesum"))
    values.ValueClass = values.MultiProcessValue()
    m = app()
    bp.install()
    b = app()
    running = []

    def reap():
        pid = running.pop(0)
        os.waitpid(pid, 0)
        mark_process_dead(pid, mmap_dir)     # prometheus_client's (gunicorn's child_exit)
    for i in range(n):
        if len(running) == 2:
            reap()
        pid = os.fork()
        if pid == 0:
            for c, h, g in (m, b):
                g.inc()
                c["/users" if i % 2 else "/orders"].inc()
                h.observe((i % 100) / 100.0)
                g.dec()
            os._exit(0)
        running.append(pid)
    while running:
        reap()
    blamer.reset()


def collect_time(collector_class, path, runs, **kw):
    from prometheus_client import CollectorRegistry, generate_latest
    reg = CollectorRegistry()
    collector_class(reg, path=path, **kw)
    times = []
    out = b""
    for _ in range(runs):
        gc.collect()
        t0 = time.process_time()
        out = generate_latest(reg)
        times.append(time.process_time() - t0)
    return times, out


def samples(text):
    """{(name, labels): value} of an exposition, for comparing two."""
    from prometheus_client.parser import text_string_to_metric_families
    r = {}
    for fam in text_string_to_metric_families(text.decode()):
        for s in fam.samples:
            r[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return r


def same_samples(a, b):
    """The same series and values (sums: prometheus_client adds doubles
    in file order, blamer exactly: the last digit may differ)."""
    return a.keys() == b.keys() and all(
        abs(a[k] - b[k]) <= 1e-12 * max(1.0, abs(a[k])) for k in a)


def collectors(tmp, sizes):
    """Part 2: collecting dead workers."""
    import prometheus_client.multiprocess as pmp
    import blamer.prometheus as bp

    print()
    print("# 2. collecting N dead workers' metrics: MultiProcessCollector + generate_latest(), "
          "CPU ms (median)")
    print("%-8s %12s %12s %12s %12s %9s %s" % (
        "workers", "prom_client", "blamer fold", "blamer next", "no state", "ratio", "target"))
    os.environ["BLAMER_DIR_MAX_DEAD"] = "1000000"
    os.environ["BLAMER_DIR_MAX_DEAD_BYTES"] = "64G"
    for n in sizes:
        mmap_dir = os.path.join(tmp, "mmap-%d" % n)
        heap_dir = os.path.join(tmp, "heaps-%d" % n)
        os.makedirs(mmap_dir)
        os.makedirs(heap_dir, mode=0o700)
        t0 = time.time()
        pid = os.fork()
        if pid == 0:          # a master of its own, so this process stays small
            try:
                make_workers(n, mmap_dir, heap_dir)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        pmp.mark_process_dead(pid, mmap_dir)   # that master is gone too
        made = time.time() - t0
        pt, pout = collect_time(pmp.MultiProcessCollector, mmap_dir, 1 if n >= 10000 else 3)
        # without a state: every dead heap read (decoded once, then kept)
        nt, _ = collect_time(bp.MultiProcessCollector, heap_dir, 4)
        # with one: the first collect folds them (and releases all but 8)
        state = os.path.join(heap_dir, "fold.state")
        bt, bout = collect_time(bp.MultiProcessCollector, heap_dir, 6, state=state)
        fold, nxt = bt[0], statistics.median(bt[1:])
        same = same_samples(samples(pout), samples(bout))
        r = statistics.median(pt) / nxt
        print("%-8d %12.1f %12.1f %12.2f %12.1f %8.0fx %s%s" % (
            n, statistics.median(pt) * 1e3, fold * 1e3, nxt * 1e3,
            statistics.median(nt[1:]) * 1e3, r, ">= 20x " + verdict(r >= 20),
            "" if same else "  (OUTPUTS DIFFER)"))
        print("#   %d workers made in %.0f s; %d samples, the same in both: %s" % (
            n, made, len(samples(bout)), "yes" if same else "NO"))
        sys.stdout.flush()
        shutil.rmtree(mmap_dir, ignore_errors=True)
        shutil.rmtree(heap_dir, ignore_errors=True)
    print("# blamer fold: the first collect with a state, which folds every dead heap; next: the "
          "ones after (the remainder and the heaps left); no state: each dead heap read at every "
          "collect (decoded once)")


def main():
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    tmp = tempfile.mkdtemp(prefix="blamer-pybench.", dir="/dev/shm")
    os.chmod(tmp, 0o700)
    os.environ["BLAMER_BACKEND"] = "dir"
    os.environ["BLAMER_DIR"] = os.path.join(tmp, "heaps")
    try:
        print("# python_bench: %s, prometheus_client %s, load average %s" % (
            sys.version.split()[0], __import__("prometheus_client").__version__
            if hasattr(__import__("prometheus_client"), "__version__") else "0.16",
            open("/proc/loadavg").read().split()[0]))
        pid = os.fork()
        if pid == 0:          # part 1 in a process of its own (its own metrics)
            try:
                writes(tmp)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        collectors(tmp, [n for n in (1000, 10000) if n <= top])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
