# SPDX-License-Identifier: MIT
"""uWSGI's entry for the server tests: what gunicorn.conf.py does for
gunicorn. prometheus_client's multiprocess mode switched to blamer heaps
before the application and its metrics are loaded (in the master: uWSGI
loads the application once, then forks its workers), and each worker's
role set first thing after the fork. uWSGI forks in C, so Python's
os.register_at_fork() hooks do not run in its workers: what blamer needs
in a child is done by pthread_atfork() handlers, which do."""
import blamer
import blamer.prometheus

blamer.prometheus.install()
blamer.set_role("master")

import uwsgi  # noqa: E402 (only inside uWSGI)

from app import app as application, worker_started  # noqa: E402,F401

uwsgi.post_fork_hook = lambda: worker_started(uwsgi.worker_id())
