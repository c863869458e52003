# SPDX-License-Identifier: MIT
"""blamer.prometheus: prometheus_client's multiprocess mode on blamer heaps.

(being written: it needs the metric types of libblamer.)
"""
