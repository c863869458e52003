// SPDX-License-Identifier: MIT
/*
 * Metrics as the text views show them (blame, top, dump): a series as
 * Prometheus names it (a counter's family ends in _total, labels in
 * braces, the DAG path as a path label), its value, or a histogram's
 * count, sum and p50/p90/p99 interpolated as histogram_quantile() does;
 * and the processes by role. Every string from a heap goes through
 * tty_printf().
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "term.h"

/* "name{l="v",...,path="/a/b"}" into @buf (the family name, as Prometheus;
 * the path's node names @uid's). */
static void series_name(const struct blamer_snapshot *s, uint32_t uid,
			const struct blamer_snap_metric_def *d, char *const *values, uint32_t depth,
			const uint64_t *nodes, char *buf, size_t len)
{
	size_t n = strlen(d->name), at;
	uint32_t i;
	bool any = false;

	at = (size_t)snprintf(buf, len, "%s%s", d->name,
			      d->kind == BLAMER_METRIC_COUNTER &&
			      !(n >= 6 && !strcmp(d->name + n - 6, "_total")) ? "_total" : "");
	for (i = 0; i < d->nlabels && at < len; i++, any = true)
		at += (size_t)snprintf(buf + at, len - at, "%s%s=\"%s\"", any ? "," : "{",
				       d->labels[i], values[i]);
	if (depth && at < len) {
		at += (size_t)snprintf(buf + at, len - at, "%spath=\"", any ? "," : "{");
		if (at < len) {
			int w = blamer_snap_uid_path_string(s, uid, nodes, depth, buf + at,
							    len - at);

			at += w > 0 ? (size_t)w : 0;
		}
		if (at < len)
			at += (size_t)snprintf(buf + at, len - at, "\"");
		any = true;
	}
	if (any && at < len)
		snprintf(buf + at, len - at, "}");
}

/* A value of @d's base: seconds as time, bytes as sizes; else all its
 * digits (@exact: a counter's, a gauge's) or four (a quantile). */
static void fmt_metric(char *buf, size_t len, const struct blamer_snap_metric_def *d, double v,
		       bool exact)
{
	if (v != v || isinf(v)) {
		snprintf(buf, len, "%g", v);
	} else if (d->base == BLAMER_BASE_SECONDS) {
		if (fabs(v) >= 1)
			snprintf(buf, len, "%.3gs", v);
		else if (fabs(v) >= 1e-3)
			snprintf(buf, len, "%.3gms", v * 1e3);
		else
			snprintf(buf, len, "%.3gus", v * 1e6);
	} else if (d->base == BLAMER_BASE_BYTES && v >= 0 && v < 1.8e19) {
		fmt_bytes(buf, len, (uint64_t)v);
	} else {
		snprintf(buf, len, exact ? "%.15g" : "%.4g", v);
	}
}

/* value, or count, sum, p50, p90, p99 */
static void fmt_values(char *buf, size_t len, const struct blamer_snap_metric_def *d, double value,
		       uint64_t count, const uint64_t *buckets)
{
	char v[4][32];

	if (d->kind != BLAMER_METRIC_HISTOGRAM) {
		fmt_metric(buf, len, d, value, true);
		return;
	}
	fmt_metric(v[0], sizeof(v[0]), d, value, true);
	fmt_metric(v[1], sizeof(v[1]), d, blamer_histogram_quantile(d, buckets, 0.5), false);
	fmt_metric(v[2], sizeof(v[2]), d, blamer_histogram_quantile(d, buckets, 0.9), false);
	fmt_metric(v[3], sizeof(v[3]), d, blamer_histogram_quantile(d, buckets, 0.99), false);
	snprintf(buf, len, "count %llu sum %s p50 %s p90 %s p99 %s", (unsigned long long)count,
		 v[0], v[1], v[2], v[3]);
}

void fmt_series(char *buf, size_t len, const struct blamer_snapshot *s,
		const struct blamer_snap_series *x)
{
	char name[512], val[256];

	series_name(s, x->uid, x->def, x->first->values, x->first->depth, x->first->nodes, name,
		    sizeof(name));
	fmt_values(val, sizeof(val), x->def, x->value, x->count, x->buckets);
	snprintf(buf, len, "%s = %s", name, val);
}

void print_series(FILE *f, const struct blamer_snapshot *s, bool uids, bool live_counts)
{
	size_t i;

	if (!s->nseries) {
		if (s->metric_conflicts)
			fprintf(f, "metrics: %zu series left out: their heaps define them otherwise\n",
				s->metric_conflicts);
		if (s->noverflows)
			fprintf(f, "metrics: %zu series left out: their sum does not fit\n",
				s->noverflows);
		return;
	}
	fprintf(f, "%-9s %5s %s\n", "KIND", live_counts ? "PROCS" : "", "SERIES = VALUE");
	for (i = 0; i < s->nseries; i++) {
		const struct blamer_snap_series *x = &s->series[i];
		const struct blamer_snap_metric_def *d = x->def;
		char name[512], val[256], who[64] = "";

		series_name(s, x->uid, d, x->first->values, x->first->depth, x->first->nodes,
			    name, sizeof(name));
		fmt_values(val, sizeof(val), d, x->value, x->count, x->buckets);
		if (x->proc)
			snprintf(who, sizeof(who), " pid %d", x->proc->pid);
		else if (uids)
			snprintf(who, sizeof(who), " uid %u", x->uid);
		tty_printf(f, "%-9s %5u %s = %s%s%s\n", blamer_metric_kind_name(d->kind), x->nprocs,
			   name, val, who, x->first->cut ? " [cut]" : "");
	}
	if (s->metric_conflicts)
		fprintf(f, "  (%zu series left out: their heaps define them otherwise)\n",
			s->metric_conflicts);
	if (s->noverflows)
		fprintf(f, "  (%zu series left out: their sum does not fit)\n", s->noverflows);
}

void print_process_metrics(FILE *f, const char *indent, const struct blamer_snapshot *s,
			   const struct blamer_snap_process *p)
{
	size_t i;

	for (i = 0; i < p->nmetrics; i++) {
		const struct blamer_snap_metric *m = &p->metrics[i];
		char name[512], val[256];

		if (!m->def)
			continue;
		series_name(s, p->uid, m->def, m->values, m->depth, m->nodes, name, sizeof(name));
		fmt_values(val, sizeof(val), m->def, m->value, m->count, m->buckets);
		tty_printf(f, "%s%s %s = %s%s%s\n", indent, blamer_metric_kind_name(m->def->kind),
			   name, val, cut_mark(m->cut), m->conflict ? " [defined otherwise: not merged]" : "");
	}
}

void print_roles(FILE *f, const struct blamer_snapshot *s)
{
	size_t i;

	if (!s->nroles)
		return;
	fprintf(f, "%-20s %6s %6s %8s %6s\n", "ROLE", "LIVE", "DEAD", "THREADS", "BUSY");
	for (i = 0; i < s->nroles; i++) {
		const struct blamer_snap_role *r = &s->roles[i];

		tty_printf(f, "%-20s %6u %6u %8u %6u\n", r->role[0] ? r->role : "-", r->live, r->dead,
			   r->threads, r->busy);
	}
}
