// SPDX-License-Identifier: MIT
/*
 * Names of the values metrics store (as names.c for the others): one
 * name each, the same in every view (text, JSON, Prometheus).
 */
#include "internal.h"

const char *blamer_metric_kind_name(uint32_t kind)
{
	switch (kind) {
	case BLAMER_METRIC_COUNTER: return "counter";
	case BLAMER_METRIC_GAUGE: return "gauge";
	case BLAMER_METRIC_HISTOGRAM: return "histogram";
	}
	return "unknown";
}

const char *blamer_gauge_mode_name(uint32_t mode)
{
	/* prometheus_client's multiprocess_mode names */
	static const char *const names[] = {
		"", "all", "liveall", "min", "livemin", "max", "livemax", "sum", "livesum",
		"mostrecent", "livemostrecent",
	};

	return mode < sizeof(names) / sizeof(names[0]) ? names[mode] : "unknown";
}

const char *blamer_base_name(uint32_t base)
{
	switch (base) {
	case BLAMER_BASE_NONE: return "";
	case BLAMER_BASE_SECONDS: return "seconds";
	case BLAMER_BASE_BYTES: return "bytes";
	}
	return "unknown";
}
