// SPDX-License-Identifier: MIT
/*
 * The metrics of a snapshot in JSON (json.c writes the rest): each
 * process's own series, and the service view: the series merged over
 * processes (with a histogram's count, sum and p50/p90/p99) and the
 * processes by role. Names are as Prometheus writes them.
 */
#include <math.h>

#include "blamer.h"
#include "json_metric.h"
#include "json_writer.h"

void bl_json_path(struct bl_json *j, const struct blamer_snapshot *s, uint64_t uid,
		  const uint64_t *nodes, uint32_t depth)
{
	uint32_t i;

	bl_json_key(j, "path");
	bl_json_array(j);
	for (i = 0; i < depth; i++)
		bl_json_id(j, nodes[i]);
	bl_json_array_end(j);
	bl_json_key(j, "names");
	bl_json_array(j);
	for (i = 0; i < depth; i++)
		bl_json_string(j, uid == BL_JSON_ANY_UID ? blamer_snap_node_name(s, nodes[i]) :
				  blamer_snap_uid_node_name(s, (uint32_t)uid, nodes[i]));
	bl_json_array_end(j);
}

/* "labels": {name: value, ...} */
static void labels(struct bl_json *j, const struct blamer_snap_metric_def *d,
		   char *const *values)
{
	uint32_t i;

	bl_json_key(j, "labels");
	bl_json_object(j);
	for (i = 0; i < d->nlabels && i < BLAMER_METRIC_LABELS_MAX; i++) {
		bl_json_key(j, d->labels[i]);	/* checked: [a-zA-Z_][a-zA-Z0-9_]* */
		bl_json_text(j, values[i]);
	}
	bl_json_object_end(j);
}

/* "buckets": [{le, count}, ...] (counts not cumulative; le of the last:
 * "+Inf"), with the quantiles when @quantiles. */
static void buckets(struct bl_json *j, const struct blamer_snap_metric_def *d,
		    const uint64_t *b, bool quantiles)
{
	static const struct {
		const char *key;
		double q;
	} qs[] = { { "p50", 0.5 }, { "p90", 0.9 }, { "p99", 0.99 } };
	uint32_t i;

	bl_json_key(j, "buckets");
	bl_json_array(j);
	for (i = 0; i < d->nbuckets; i++) {
		bl_json_object(j);
		bl_json_key(j, "le");
		if (isinf(d->upper[i]))
			bl_json_string(j, "+Inf");
		else
			bl_json_double(j, d->upper[i]);
		bl_json_kv_u64(j, "count", b[i]);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
	for (i = 0; quantiles && i < sizeof(qs) / sizeof(qs[0]); i++) {
		bl_json_key(j, qs[i].key);
		bl_json_double(j, blamer_histogram_quantile(d, b, qs[i].q));	/* NaN: null */
	}
}

/* What every series shows of its definition. */
static void def_head(struct bl_json *j, const struct blamer_snap_metric_def *d)
{
	bl_json_kv_string(j, "name", d->name);
	bl_json_kv_string(j, "kind", blamer_metric_kind_name(d->kind));
	bl_json_kv_string(j, "base", blamer_base_name(d->base));
	if (d->kind == BLAMER_METRIC_GAUGE)
		bl_json_kv_string(j, "gauge_mode", blamer_gauge_mode_name(d->gauge_mode));
	bl_json_kv_bool(j, "per_process", d->flags & BLAMER_METRIC_PER_PROCESS);
}

/* value, or count, sum and buckets */
static void values(struct bl_json *j, const struct blamer_snap_metric_def *d, double value,
		   uint64_t count, const uint64_t *b, uint64_t stamp, bool quantiles)
{
	if (d->kind == BLAMER_METRIC_HISTOGRAM) {
		bl_json_kv_u64(j, "count", count);
		bl_json_key(j, "sum");
		bl_json_double(j, value);
		buckets(j, d, b, quantiles);
		return;
	}
	bl_json_key(j, "value");
	bl_json_double(j, value);
	if (d->gauge_mode == BLAMER_GAUGE_MOSTRECENT || d->gauge_mode == BLAMER_GAUGE_LIVEMOSTRECENT)
		bl_json_kv_u64(j, "set_time_ns", stamp);
}

void bl_json_process_metrics(struct bl_json *j, const struct blamer_snapshot *s,
			     const struct blamer_snap_process *p)
{
	size_t i;

	bl_json_key(j, "metrics");
	bl_json_array(j);
	for (i = 0; i < p->nmetrics; i++) {
		const struct blamer_snap_metric *m = &p->metrics[i];

		if (!m->def)
			continue;
		bl_json_object(j);
		def_head(j, m->def);
		labels(j, m->def, m->values);
		bl_json_path(j, s, p->uid, m->nodes, m->depth);
		bl_json_kv_bool(j, "cut", m->cut);
		bl_json_kv_bool(j, "conflict", m->conflict);
		values(j, m->def, m->value, m->count, m->buckets, m->stamp_ns, false);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
}

void bl_json_service(struct bl_json *j, const struct blamer_snapshot *s)
{
	size_t i;

	bl_json_key(j, "service");
	bl_json_object(j);
	bl_json_key(j, "series");
	bl_json_array(j);
	for (i = 0; i < s->nseries; i++) {
		const struct blamer_snap_series *x = &s->series[i];

		bl_json_object(j);
		def_head(j, x->def);
		bl_json_kv_string(j, "help", x->def->help);
		bl_json_kv_u32(j, "uid", x->uid);
		labels(j, x->def, x->first->values);
		bl_json_path(j, s, x->uid, x->first->nodes, x->first->depth);
		if (x->proc) {
			bl_json_kv_i32(j, "pid", x->proc->pid);
			bl_json_kv_u64(j, "start_time_ns", x->proc->start_time_ns);
		}
		bl_json_kv_u32(j, "processes", x->nprocs);
		bl_json_kv_u32(j, "live", x->nlive);
		values(j, x->def, x->value, x->count, x->buckets, x->stamp_ns, true);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
	bl_json_kv_u64(j, "conflicts", s->metric_conflicts);
	bl_json_kv_u64(j, "overflows", s->noverflows);
	bl_json_key(j, "roles");
	bl_json_array(j);
	for (i = 0; i < s->nroles; i++) {
		const struct blamer_snap_role *r = &s->roles[i];

		bl_json_object(j);
		bl_json_kv_string(j, "role", r->role);
		bl_json_kv_u32(j, "live", r->live);
		bl_json_kv_u32(j, "dead", r->dead);
		bl_json_kv_u32(j, "threads", r->threads);
		bl_json_kv_u32(j, "busy_threads", r->busy);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
	bl_json_object_end(j);
}
