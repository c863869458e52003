# SPDX-License-Identifier: MIT
"""The baseline of bench/reader_bench.c: prometheus_client's multiprocess
mode over N processes' files, each process holding what one blamer heap
of the benchmark holds as counters and gauges (PATHS paths x 2 units,
FIELDS numbers).

    prom_mp.py DIR N PATHS FIELDS

Writes one process's .db files into DIR as the library does, copies them
for N - 1 more processes (each file is named after its pid), then times MultiProcessCollector's collect
and generate_latest(), the work of a scrape, and prints
"collect+generate_latest SECONDS" (CPU time, the median of 3; interpreter
start and file writing are not counted).
"""
import os
import sys
import time


def copy_files(d, pid, n):
    """The files of process @pid copied for n - 1 more processes: the
    bytes in use (the first 4 bytes of a file say how many), the rest a
    hole of the same size, as the library leaves it."""
    for name in os.listdir(d):
        if not name.endswith("_%d.db" % pid):
            continue
        with open(os.path.join(d, name), "rb") as f:
            data = f.read()
        used = int.from_bytes(data[:4], "little")
        for p in range(1, n):
            other = os.path.join(d, name.replace(str(pid), str(pid + p)))
            with open(other, "wb") as f:
                f.write(data[:used])
                f.truncate(len(data))


def main():
    d, n, paths, fields = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = d
    from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest, values
    from prometheus_client.multiprocess import MultiProcessCollector

    pid = [2000000000]
    # Each value goes to the file of the "process" current when it is made.
    values.ValueClass = values.MultiProcessValue(lambda: pid[0])
    for p in range(1):
        reg = CollectorRegistry()
        cpu = Counter("blamer_attribution_cpu_seconds", "cpu", ["path"], registry=reg)
        byt = Counter("blamer_attribution_bytes", "bytes", ["path"], registry=reg)
        g = Gauge("app_field", "a field", ["name"], registry=reg, multiprocess_mode="all")
        for i in range(paths):
            path = "/server/handler_%d/step_%d" % (i % 6, i)
            cpu.labels(path).inc(i * 1e-6)
            byt.labels(path).inc(i * 64)
        for i in range(fields):
            g.labels("field_%02d" % i).set(i * 1000)
    copy_files(d, pid[0], n)
    times = []
    for _ in range(3 if n < 10000 else 1):
        t0 = time.process_time()
        reg = CollectorRegistry()
        MultiProcessCollector(reg, path=d)
        out = generate_latest(reg)
        times.append(time.process_time() - t0)
    times.sort()
    print("series %d bytes %d" % (out.count(b"\n"), len(out)))
    print("collect+generate_latest %.6f" % times[len(times) // 2])


if __name__ == "__main__":
    main()
