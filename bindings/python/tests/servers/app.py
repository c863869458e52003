# SPDX-License-Identifier: MIT
"""The application of the server tests (server-test.sh): a Flask app
instrumented as prometheus_client's documentation shows, nothing of
blamer in it but one activity per request and its workers' role. The
switch to blamer heaps is in the server's configuration
(gunicorn.conf.py; uwsgi_app.py for uWSGI).

Routes: / and /users answer; /crash kills its worker (SIGKILL) inside
its activity, as a crash would; /pid says which worker answered.
"""
import os
import signal
import time

import blamer
from flask import Flask, request
from prometheus_client import Counter, Gauge, Histogram, Summary

REQUESTS = Counter("app_requests", "Requests answered", ["route", "method"])
LATENCY = Histogram("app_request_seconds", "Time to answer", ["route"])
SIZE = Summary("app_response_bytes", "Bytes answered")
INPROGRESS = Gauge("app_inprogress", "Requests being answered", multiprocess_mode="livesum")
STARTED = Gauge("app_worker_started_seconds", "When the worker started",
                multiprocess_mode="liveall")

app = Flask(__name__)


class Instrumented:
    """WSGI middleware: each request inside a blamer activity, timed,
    counted once its answer is made (a request that kills its worker
    made no answer and is not counted)."""

    def __init__(self, wsgi):
        self.wsgi = wsgi

    def __call__(self, environ, start_response):
        route = environ.get("PATH_INFO", "/")
        method = environ.get("REQUEST_METHOD", "GET")
        with blamer.activity("%s %s" % (method, route)), INPROGRESS.track_inprogress():
            t0 = time.perf_counter()
            body = b"".join(self.wsgi(environ, start_response))
            LATENCY.labels(route).observe(time.perf_counter() - t0)
            SIZE.observe(len(body))
            REQUESTS.labels(route, method).inc()
        return [body]


app.wsgi_app = Instrumented(app.wsgi_app)


@app.route("/")
def index():
    return "hello\n"


@app.route("/users")
def users():
    return "alice bob\n"


@app.route("/pid")
def pid():
    return "%d\n" % os.getpid()


@app.route("/crash")
def crash():
    blamer.log("about to crash on %s" % request.path)
    os.kill(os.getpid(), signal.SIGKILL)


def worker_started(ident):
    """The servers' post-fork hook: first thing in a worker, its heap made
    with its role; its start time; and its pid listed in
    $SERVER_TEST_WORKERS for the test, which counts the workers that died
    by the pids listed that are gone (a server's log may say a worker
    restarts, then the worker die of its last request: one death)."""
    blamer.set_role("worker", ident)
    STARTED.set_to_current_time()
    path = os.environ.get("SERVER_TEST_WORKERS")
    if path:
        with open(path, "a") as f:
            f.write("%d\n" % os.getpid())
    return "unreachable\n"
