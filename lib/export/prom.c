// SPDX-License-Identifier: MIT
/*
 * Prometheus text exposition (format 0.0.4) of a snapshot, for
 * node_exporter's textfile collector or any scraper. Each family is
 * written once with HELP and TYPE. Label values are escaped (\\, \", \n);
 * heap names are already printable ASCII. Process series carry pid, comm
 * and heap (the heap key in hex: unique even when a pid was reused).
 * Attribution totals are summed over processes, labelled by path
 * ("/name/name/...", unnamed nodes as their hex ID).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "blamer.h"

static void lstr(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void plabels(FILE *f, const struct blamer_snap_process *p)
{
	fprintf(f, "{pid=\"%d\",comm=\"", p->pid);
	lstr(f, p->comm);
	fprintf(f, "\",heap=\"%llx\"}", (unsigned long long)p->heap_key);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void path_label(FILE *f, const struct blamer_snapshot *s,
		       const struct blamer_snap_total *t)
{
	uint32_t i;

	fputs("path=\"", f);
	for (i = 0; i < t->depth; i++) {
		const char *n = blamer_snap_node_name(s, t->nodes[i]);

		fputc('/', f);
		if (n)
			lstr(f, n);
		else
			fprintf(f, "0x%llx", (unsigned long long)t->nodes[i]);
	}
	fputc('"', f);
}

/* Which exported family a unit goes to; app units share one with a label. */
static const char *unit_family(uint32_t unit)
{
	switch (unit) {
	case BLAMER_UNIT_CPU_NS: return "blamer_attribution_cpu_seconds_total";
	case BLAMER_UNIT_BYTES: return "blamer_attribution_bytes_total";
	case BLAMER_UNIT_COUNT: return "blamer_attribution_count_total";
	default: return "blamer_attribution_value_total";
	}
}

int blamer_snapshot_write_prometheus(const struct blamer_snapshot *s, FILE *f)
{
	static const struct { const char *name, *help; } fams[] = {
		{ "blamer_attribution_cpu_seconds_total",
		  "CPU time attributed to a DAG path, summed over processes." },
		{ "blamer_attribution_bytes_total",
		  "Bytes attributed to a DAG path, summed over processes." },
		{ "blamer_attribution_count_total",
		  "Events counted on a DAG path, summed over processes." },
		{ "blamer_attribution_value_total",
		  "Application-unit measurements on a DAG path, summed over processes." },
	};
	size_t i, k, live = 0, dead = 0;

	for (i = 0; i < s->nprocs; i++) {
		if (s->procs[i].state == BLAMER_PROC_LIVE)
			live++;
		else
			dead++;
	}
	family(f, "blamer_heaps", "gauge", "Heaps visible to the reader, by owner state.");
	fprintf(f, "blamer_heaps{state=\"live\"} %zu\nblamer_heaps{state=\"dead\"} %zu\n",
		live, dead);

	family(f, "blamer_heap_size_bytes", "gauge", "Bytes of all slabs of a heap.");
	for (i = 0; i < s->nprocs; i++) {
		fputs("blamer_heap_size_bytes", f);
		plabels(f, &s->procs[i]);
		fprintf(f, " %llu\n", (unsigned long long)s->procs[i].size);
	}
	family(f, "blamer_heap_used_bytes", "gauge", "Bytes allocated in a heap's slabs.");
	for (i = 0; i < s->nprocs; i++) {
		fputs("blamer_heap_used_bytes", f);
		plabels(f, &s->procs[i]);
		fprintf(f, " %llu\n", (unsigned long long)s->procs[i].used);
	}
	family(f, "blamer_process_live", "gauge", "1 if the heap's owner is running, 0 if dead.");
	for (i = 0; i < s->nprocs; i++) {
		fputs("blamer_process_live", f);
		plabels(f, &s->procs[i]);
		fprintf(f, " %d\n", s->procs[i].state == BLAMER_PROC_LIVE);
	}
	family(f, "blamer_heap_corrupt", "gauge",
	       "1 if the reader found the heap corrupt or unreadable.");
	for (i = 0; i < s->nprocs; i++) {
		fputs("blamer_heap_corrupt", f);
		plabels(f, &s->procs[i]);
		fprintf(f, " %d\n", s->procs[i].health == BLAMER_HEALTH_CORRUPT ||
			s->procs[i].health == BLAMER_HEALTH_UNREADABLE);
	}
	family(f, "blamer_process_phase", "gauge", "Process phase (see blamer(1)).");
	for (i = 0; i < s->nprocs; i++) {
		fputs("blamer_process_phase", f);
		plabels(f, &s->procs[i]);
		fprintf(f, " %u\n", s->procs[i].phase);
	}
	family(f, "blamer_process_threads", "gauge", "Threads with an activity tracker.");
	for (i = 0; i < s->nprocs; i++) {
		fputs("blamer_process_threads", f);
		plabels(f, &s->procs[i]);
		fprintf(f, " %zu\n", s->procs[i].nthreads);
	}
	family(f, "blamer_process_exit_signal", "gauge",
	       "Signal that killed a dead process (0: exited normally), from the kernel.");
	for (i = 0; i < s->nprocs; i++) {
		if (!s->procs[i].exited)
			continue;
		fputs("blamer_process_exit_signal", f);
		plabels(f, &s->procs[i]);
		fprintf(f, " %u\n", s->procs[i].exit_signal);
	}
	for (k = 0; k < sizeof(fams) / sizeof(fams[0]); k++) {
		bool any = false;

		for (i = 0; i < s->ntotals; i++) {
			const struct blamer_snap_total *t = &s->totals[i];

			if (strcmp(unit_family(t->unit), fams[k].name))
				continue;
			if (!any)
				family(f, fams[k].name, "counter", fams[k].help);
			any = true;
			fprintf(f, "%s{", fams[k].name);
			path_label(f, s, t);
			if (k == 3)
				fprintf(f, ",unit=\"%u\"", t->unit);
			if (t->unit == BLAMER_UNIT_CPU_NS)
				fprintf(f, "} %.9f\n", (double)t->value / 1e9);
			else
				fprintf(f, "} %llu\n", (unsigned long long)t->value);
		}
	}
	return ferror(f) ? -EIO : 0;
}
