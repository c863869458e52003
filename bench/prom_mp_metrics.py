# SPDX-License-Identifier: MIT
"""The baseline of bench/fleet_bench.c's scrape of N live workers:
prometheus_client's multiprocess mode over N processes' files, each
process holding the metrics one of the benchmark's workers holds:

    http_requests_total{route, code}    4 routes x 2 codes
    http_request_duration_seconds{route}  a histogram, 12 buckets, 4 routes
    http_requests_in_flight             a gauge, multiprocess_mode livesum

    prom_mp_metrics.py DIR N

Writes one process's .db files into DIR as the library does, copies them
for N - 1 more processes (each file named after its pid), then times
MultiProcessCollector's collect and generate_latest(), the work of a
scrape, and prints "series S bytes B" and "collect+generate_latest
SECONDS" (CPU time, the median of 3; interpreter start and file writing
are not counted).
"""
import os
import sys
import time

ROUTES = ["/", "/hello", "/users/:id", "/orders/:id"]
BOUNDS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


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
    d, n = sys.argv[1], int(sys.argv[2])
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = d
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, values
    from prometheus_client.multiprocess import MultiProcessCollector

    pid = [2000000000]
    values.ValueClass = values.MultiProcessValue(lambda: pid[0])
    reg = CollectorRegistry()
    req = Counter("http_requests", "requests", ["route", "code"], registry=reg)
    dur = Histogram("http_request_duration_seconds", "time", ["route"], buckets=BOUNDS,
                    registry=reg)
    inflight = Gauge("http_requests_in_flight", "in flight", registry=reg,
                     multiprocess_mode="livesum")
    for i, r in enumerate(ROUTES):
        for code in ("200", "404"):
            req.labels(r, code).inc(i + 1)
        dur.labels(r).observe(0.001 * (i + 1))
    inflight.set(1)
    copy_files(d, pid[0], n)
    times = []
    for _ in range(3):
        t0 = time.process_time()
        reg = CollectorRegistry()
        MultiProcessCollector(reg, path=d)
        out = generate_latest(reg)
        times.append(time.process_time() - t0)
    times.sort()
    print("series %d bytes %d" % (len([l for l in out.split(b"\n") if l and not l.startswith(b"#")]),
                                  len(out)))
    print("collect+generate_latest %.6f" % times[len(times) // 2])


if __name__ == "__main__":
    main()
