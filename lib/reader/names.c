// SPDX-License-Identifier: MIT
/* Names of the values a snapshot shows, for every view. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "blamer.h"

const char *blamer_health_name(enum blamer_health h)
{
	switch (h) {
	case BLAMER_HEALTH_OK: return "ok";
	case BLAMER_HEALTH_UNCHECKED: return "unchecked";
	case BLAMER_HEALTH_EMPTY: return "empty";
	case BLAMER_HEALTH_TORN: return "torn";
	case BLAMER_HEALTH_CORRUPT: return "corrupt";
	case BLAMER_HEALTH_UNREADABLE: return "unreadable";
	case BLAMER_HEALTH_TRUNCATED: return "truncated";
	}
	return "unknown";
}

const char *blamer_unit_name(uint32_t unit)
{
	switch (unit) {
	case BLAMER_UNIT_NONE: return "none";
	case BLAMER_UNIT_CPU_NS: return "cpu_ns";
	case BLAMER_UNIT_BYTES: return "bytes";
	case BLAMER_UNIT_COUNT: return "count";
	}
	return NULL;
}

const char *blamer_phase_name(uint32_t phase)
{
	switch (phase) {
	case BLAMER_PHASE_UNKNOWN: return "unknown";
	case BLAMER_PHASE_LAUNCHED: return "launched";
	case BLAMER_PHASE_MAIN_LOOP: return "main-loop";
	case BLAMER_PHASE_SHUTTING_DOWN: return "shutting-down";
	case BLAMER_PHASE_EXITED_CLEANLY: return "exited-cleanly";
	}
	return NULL;
}

const char *blamer_field_type_name(uint32_t type)
{
	static const char *const names[] = {
		"end", "raw", "raw_ref", "string", "string_ref", "char", "bool",
		"signed", "unsigned", "double",
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "unknown";
}

const char *blamer_activity_kind_name(uint32_t kind)
{
	static const char *const names[] = {
		"none", "task", "lock-acquire", "event-wait", "thread-join",
		"process-wait", "generic",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "unknown";
}

const struct blamer_snap_module *blamer_snap_module_at(const struct blamer_snap_process *p,
							uint64_t addr)
{
	const struct blamer_snap_module *best = NULL;
	size_t i, lo = 0, hi = p->nmodule_spans;

	if (p->module_spans) {
		/* the last span starting at or before addr, if it reaches it */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (p->module_spans[mid].first <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!lo || p->module_spans[lo - 1].last < addr ||
		    p->module_spans[lo - 1].module >= p->nmodules)
			return NULL;
		return &p->modules[p->module_spans[lo - 1].module];
	}
	/* the module holding addr, as the process reported its mappings;
	 * the last one listed wins (a library mapped again later) */
	for (i = 0; i < p->nmodules; i++) {
		const struct blamer_snap_module *m = &p->modules[i];

		if (m->loaded && addr >= m->base && addr - m->base < m->size)
			best = m;
	}
	return best;
}

int blamer_snap_addr_string(const struct blamer_snap_process *p, uint64_t addr,
			    char *buf, size_t len)
{
	const struct blamer_snap_module *m = blamer_snap_module_at(p, addr);
	const char *base;

	if (!m)
		return snprintf(buf, len, "0x%llx", (unsigned long long)addr);
	base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	return snprintf(buf, len, "%s+0x%llx", base, (unsigned long long)(addr - m->base));
}
