# SPDX-License-Identifier: MIT
"""The load generator of the gunicorn test: REQUESTS requests, one after
another, to / and /users in turn, and one to /crash every CRASH_EVERY
(whose worker dies without answering). Prints one line per route and
method: how many answers (200) it got, which is what the server counted.

    load.py URL REQUESTS CRASH_EVERY
"""
import collections
import http.client
import sys
import time
import urllib.parse


def main():
    url, n, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    u = urllib.parse.urlsplit(url)
    ok = collections.Counter()
    crashes = failures = 0
    for i in range(n):
        path = "/crash" if every and i % every == every - 1 else ("/" if i % 2 else "/users")
        for attempt in range(20):
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
            try:
                c.request("GET", path)
                r = c.getresponse()
                r.read()
                if r.status == 200:
                    ok[(path, "GET")] += 1
                    break
                failures += 1
            except (OSError, http.client.HTTPException):
                if path == "/crash":
                    crashes += 1
                    break
                # a worker being replaced refused the connection: no
                # answer, not counted by the server either; again
                failures += 1
                time.sleep(0.05)
            finally:
                c.close()
    for (route, method), count in sorted(ok.items()):
        print("%s %s %d" % (route, method, count))
    print("# crashes %d, attempts without an answer %d" % (crashes, failures))


if __name__ == "__main__":
    main()
