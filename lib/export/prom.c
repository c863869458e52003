// SPDX-License-Identifier: MIT
/*
 * Prometheus text exposition (format 0.0.4) of a snapshot, for
 * node_exporter's textfile collector or any scraper. One writer: each
 * family is written once with HELP and TYPE (family()), each sample
 * through sample(), whose label values all pass the one escaper
 * (label_value(): \\, \" and \n). Process series carry pid, comm and heap
 * (the heap key in hex: unique even when a pid was reused). Attribution
 * totals are summed over processes (the snapshot's attribution view),
 * labelled by path (blamer_snap_path_string(): "/name/name/...",
 * unnamed nodes as their hex ID).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "blamer.h"

struct label {
	const char *name;
	const char *value;
};

/* The one escaper of label values. */
static void label_value(FILE *f, const char *s)
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

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* "name{l1="v1",...} " (no braces without labels); the value follows. */
static void sample(FILE *f, const char *name, const struct label *l, size_t n)
{
	size_t i;

	fputs(name, f);
	for (i = 0; i < n; i++) {
		fprintf(f, "%c%s=\"", i ? ',' : '{', l[i].name);
		label_value(f, l[i].value);
		fputc('"', f);
	}
	fputs(n ? "} " : " ", f);
}

static void sample_u64(FILE *f, const char *name, const struct label *l, size_t n, uint64_t v)
{
	sample(f, name, l, n);
	fprintf(f, "%" PRIu64 "\n", v);
}

/* A process's labels, in bufs that live as long as @l is used. */
struct proc_labels {
	char pid[16], heap[20];
	struct label l[3];
};

static const struct label *proc_labels(struct proc_labels *pl, const struct blamer_snap_process *p)
{
	snprintf(pl->pid, sizeof(pl->pid), "%d", p->pid);
	snprintf(pl->heap, sizeof(pl->heap), "%" PRIx64, p->heap_key);
	pl->l[0] = (struct label){ "pid", pl->pid };
	pl->l[1] = (struct label){ "comm", p->comm };
	pl->l[2] = (struct label){ "heap", pl->heap };
	return pl->l;
}

/* One gauge per process: @value(p), skipping those @skip(p) says to. */
static void per_process(FILE *f, const struct blamer_snapshot *s, const char *name,
			const char *help, uint64_t (*value)(const struct blamer_snap_process *p),
			bool (*skip)(const struct blamer_snap_process *p))
{
	struct proc_labels pl;
	size_t i;

	family(f, name, "gauge", help);
	for (i = 0; i < s->nprocs; i++)
		if (!skip || !skip(&s->procs[i]))
			sample_u64(f, name, proc_labels(&pl, &s->procs[i]), 3, value(&s->procs[i]));
}

static uint64_t p_size(const struct blamer_snap_process *p) { return p->size; }
static uint64_t p_used(const struct blamer_snap_process *p) { return p->used; }
static uint64_t p_live(const struct blamer_snap_process *p) { return p->state == BLAMER_PROC_LIVE; }
static uint64_t p_phase(const struct blamer_snap_process *p) { return p->phase; }
static uint64_t p_threads(const struct blamer_snap_process *p) { return p->nthreads; }
static uint64_t p_signal(const struct blamer_snap_process *p) { return p->exit_signal; }
static bool p_not_exited(const struct blamer_snap_process *p) { return !p->exited; }

static uint64_t p_corrupt(const struct blamer_snap_process *p)
{
	return p->health == BLAMER_HEALTH_CORRUPT || p->health == BLAMER_HEALTH_UNREADABLE;
}

/* The families attribution totals go to, by unit; app units share the
 * last one with a unit label. */
static const struct {
	const char *name, *help;
} attribution_families[] = {
	{ "blamer_attribution_cpu_seconds_total",
	  "CPU time attributed to a DAG path, summed over processes." },
	{ "blamer_attribution_bytes_total",
	  "Bytes attributed to a DAG path, summed over processes." },
	{ "blamer_attribution_count_total",
	  "Events counted on a DAG path, summed over processes." },
	{ "blamer_attribution_value_total",
	  "Application-unit measurements on a DAG path, summed over processes." },
};

static size_t unit_family(uint32_t unit)
{
	switch (unit) {
	case BLAMER_UNIT_CPU_NS: return 0;
	case BLAMER_UNIT_BYTES: return 1;
	case BLAMER_UNIT_COUNT: return 2;
	default: return 3;
	}
}

static void attribution(FILE *f, const struct blamer_snapshot *s)
{
	size_t i, k;

	for (k = 0; k < sizeof(attribution_families) / sizeof(attribution_families[0]); k++) {
		const char *name = attribution_families[k].name;
		bool any = false;

		for (i = 0; i < s->ntotals; i++) {
			const struct blamer_snap_total *t = &s->totals[i];
			char path[512], unit[16];
			struct label l[2] = { { "path", path }, { "unit", unit } };

			if (unit_family(t->unit) != k)
				continue;
			if (!any)
				family(f, name, "counter", attribution_families[k].help);
			any = true;
			blamer_snap_path_string(s, t->nodes, t->depth, path, sizeof(path));
			snprintf(unit, sizeof(unit), "%u", t->unit);
			sample(f, name, l, k == 3 ? 2 : 1);
			if (t->unit == BLAMER_UNIT_CPU_NS)
				fprintf(f, "%.9f\n", (double)t->value / 1e9);
			else
				fprintf(f, "%" PRIu64 "\n", t->value);
		}
	}
}

int blamer_snapshot_write_prometheus(const struct blamer_snapshot *s, FILE *f)
{
	struct label state[1] = { { "state", "live" } };
	size_t i, live = 0, dead = 0;

	for (i = 0; i < s->nprocs; i++) {
		if (s->procs[i].state == BLAMER_PROC_LIVE)
			live++;
		else
			dead++;
	}
	family(f, "blamer_heaps", "gauge", "Heaps visible to the reader, by owner state.");
	sample_u64(f, "blamer_heaps", state, 1, live);
	state[0].value = "dead";
	sample_u64(f, "blamer_heaps", state, 1, dead);
	per_process(f, s, "blamer_heap_size_bytes", "Bytes of all slabs of a heap.", p_size, NULL);
	per_process(f, s, "blamer_heap_used_bytes", "Bytes allocated in a heap's slabs.", p_used,
		    NULL);
	per_process(f, s, "blamer_process_live", "1 if the heap's owner is running, 0 if dead.",
		    p_live, NULL);
	per_process(f, s, "blamer_heap_corrupt",
		    "1 if the reader found the heap corrupt or unreadable.", p_corrupt, NULL);
	per_process(f, s, "blamer_process_phase", "Process phase (see blamer(1)).", p_phase, NULL);
	per_process(f, s, "blamer_process_threads", "Threads with an activity tracker.",
		    p_threads, NULL);
	per_process(f, s, "blamer_process_exit_signal",
		    "Signal that killed a dead process (0: exited normally), from the kernel.",
		    p_signal, p_not_exited);
	attribution(f, s);
	return ferror(f) ? -EIO : 0;
}
