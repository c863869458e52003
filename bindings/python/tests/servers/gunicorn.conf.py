# SPDX-License-Identifier: MIT
"""gunicorn's configuration for the gunicorn test: prometheus_client's
multiprocess mode switched to blamer heaps (one call, before the
application and its metrics are loaded), 4 sync workers restarted every
~20 requests, the application loaded once in the master (its metrics and
their blamer series are made before the workers fork)."""
import os

import blamer
import blamer.prometheus

blamer.prometheus.install()

bind = os.environ["APP_BIND"]
workers = 4
worker_class = "sync"
max_requests = 20
max_requests_jitter = 5
preload_app = True
graceful_timeout = 5
timeout = 30


def when_ready(server):
    blamer.set_role("master")


def post_fork(server, worker):
    from app import worker_started
    worker_started(worker.age)
