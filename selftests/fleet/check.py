#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check.py EXPOSITION M: the service's series of fleet-worker's metrics
after workers 0 .. M-1, exactly as an exporter must show them, or a
line saying what differs (exit 1).

A counter of doubles is the correctly rounded exact sum of each worker's
own sum (math.fsum: what blamer_exact_sum_*() computes), so it is
compared with ==, as are every count. The series must be these and no
others (flat: as many whatever the number of workers).
"""
import math
import re
import sys

text, m = open(sys.argv[1]).read(), int(sys.argv[2])
got = {}
for line in text.splitlines():
    if line.startswith("#"):
        continue
    name = line.split("{")[0].split(" ")[0]
    if not re.match(r"(jobs_total|work_seconds_total|job_seconds_\w+|queue_depth)$", name):
        continue
    key, value = line.rsplit(" ", 1)
    key = re.sub(r'uid="\d+"', "", key).replace(",}", "}").replace("{,", "{").replace("{}", "")
    assert key not in got, "a series twice: " + line
    got[key] = float(value)

work = []
for k in range(m):
    v = 0.0
    for _ in range(5):
        v += (k % 7 + 1) / 10
    work.append(v)
obs = [(k % 5) / 4 for k in range(m)]
want = {
    "jobs_total": 5.0 * m,
    "work_seconds_total": math.fsum(work),
    'job_seconds_bucket{le="0.25"}': float(sum(1 for o in obs if o <= 0.25)),
    'job_seconds_bucket{le="0.5"}': float(sum(1 for o in obs if o <= 0.5)),
    'job_seconds_bucket{le="1"}': float(sum(1 for o in obs if o <= 1)),
    'job_seconds_bucket{le="+Inf"}': float(m),
    "job_seconds_count": float(m),
    "job_seconds_sum": math.fsum(obs),
    "queue_depth": float(m - 1) if m else 0.0,
}
if m == 0:
    want = {k: v for k, v in want.items() if False}
bad = []
for k in sorted(set(want) | set(got)):
    if got.get(k) != want.get(k):
        bad.append("%s: %r, want %r" % (k, got.get(k), want.get(k)))
if bad:
    print("; ".join(bad))
    sys.exit(1)
