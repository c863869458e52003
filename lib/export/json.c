// SPDX-License-Identifier: MIT
/*
 * JSON views of a snapshot and of a backend's status, written through
 * the one JSON writer (json_writer.c). The schema is
 * Documentation/blamer-json-schema.json (schema_version
 * BLAMER_JSON_SCHEMA_VERSION); fields are only ever added within a
 * version. Every value takes its width from the model (json_writer.h):
 * 32-bit integers are numbers, 64-bit ones decimal strings, ids and
 * addresses hex strings, so no parser rounds them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "blamer.h"
#include "json_metric.h"
#include "json_writer.h"

static const char *backend_name(enum blamer_backend b)
{
	return b == BLAMER_BACKEND_DEVICE ? "device" : b == BLAMER_BACKEND_DIR ? "dir" : "memory";
}

/* The members every document starts with. */
static void head(struct bl_json *j, const char *kind, enum blamer_backend backend,
		 const char *source)
{
	bl_json_object(j);
	bl_json_kv_u32(j, "schema_version", BLAMER_JSON_SCHEMA_VERSION);
	bl_json_kv_string(j, "kind", kind);
	bl_json_kv_string(j, "backend", backend_name(backend));
	bl_json_kv_string(j, "source", source);
}

static void field_value(struct bl_json *j, const struct blamer_snap_field *x)
{
	char ch;

	if (x->torn) {
		bl_json_null(j);
		return;
	}
	switch (x->type) {
	case BLAMER_FIELD_SIGNED:
		bl_json_i64(j, x->i);
		break;
	case BLAMER_FIELD_UNSIGNED:
		bl_json_u64(j, x->u);
		break;
	case BLAMER_FIELD_DOUBLE:
		bl_json_double(j, x->d);
		break;
	case BLAMER_FIELD_BOOL:
		bl_json_bool(j, x->u != 0);
		break;
	case BLAMER_FIELD_CHAR:
		ch = (char)x->u;
		bl_json_string_n(j, &ch, 1);
		break;
	case BLAMER_FIELD_STRING:
		bl_json_string_n(j, (const char *)x->bytes, x->len);
		break;
	case BLAMER_FIELD_RAW:
		bl_json_hex(j, x->bytes, x->len);
		break;
	case BLAMER_FIELD_RAW_REF:
	case BLAMER_FIELD_STRING_REF:
		bl_json_object(j);
		bl_json_kv_id(j, "address", x->u);
		bl_json_kv_u64(j, "size", x->ref_size);
		bl_json_object_end(j);
		break;
	default:
		bl_json_null(j);
	}
}

static void fields(struct bl_json *j, const char *key, const struct blamer_snap_fields *fs)
{
	size_t i;

	bl_json_key(j, key);
	bl_json_array(j);
	for (i = 0; i < fs->n; i++) {
		const struct blamer_snap_field *x = &fs->v[i];

		bl_json_object(j);
		bl_json_kv_string(j, "name", x->name ? x->name : "");
		bl_json_kv_string(j, "type", blamer_field_type_name(x->type));
		bl_json_kv_bool(j, "torn", x->torn);
		bl_json_key(j, "value");
		field_value(j, x);
		bl_json_kv_bool(j, "cut", x->cut);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
}

/* A unit and its name: the library's, the name its heaps give it
 * (blamer_dag_unit(), as Prometheus uses it: a process's, its uid's
 * heaps'; the attribution view's, BL_JSON_ANY_UID, every uid's), else
 * "unitN". */
static void unit(struct bl_json *j, const struct blamer_snapshot *s, uint64_t uid, uint32_t u)
{
	const struct blamer_snap_unit_def *d = uid == BL_JSON_ANY_UID ? blamer_snap_unit_def(s, u) :
					       blamer_snap_uid_unit_def(s, (uint32_t)uid, u);
	const char *n = blamer_unit_name(u);
	char app[24];

	bl_json_kv_u32(j, "unit", u);
	if (!n && d)
		n = d->name;
	if (!n) {
		snprintf(app, sizeof(app), "unit%u", u);
		n = app;
	}
	bl_json_kv_string(j, "unit_name", n);
	if (d)
		bl_json_kv_string(j, "unit_base", blamer_base_name(d->base));
}

static void node(struct bl_json *j, const struct blamer_snap_node *n)
{
	bl_json_object(j);
	bl_json_key(j, "id");
	bl_json_id(j, n->id);
	bl_json_kv_u32(j, "type", n->type);
	bl_json_kv_string(j, "name", n->name);
	bl_json_object_end(j);
}

/*
 * Where an activity was pushed: the raw address, and as text shows it
 * (module+offset, from the process's own module list) with the module's
 * full path, for addr2line; null for both when no module holds it.
 */
static void calling(struct bl_json *j, const struct blamer_snap_process *p, uint64_t addr)
{
	const struct blamer_snap_module *m = blamer_snap_module_at(p, addr);
	char loc[300];

	bl_json_kv_id(j, "calling_address", addr);
	blamer_snap_addr_string(p, addr, loc, sizeof(loc));
	bl_json_key(j, "calling_location");
	if (m && addr)
		bl_json_string(j, loc);
	else
		bl_json_null(j);
	bl_json_key(j, "calling_module");
	if (m && addr)
		bl_json_string(j, m->path);
	else
		bl_json_null(j);
}

static void threads(struct bl_json *j, const struct blamer_snap_process *p)
{
	size_t i, k;

	bl_json_key(j, "threads");
	bl_json_array(j);
	for (i = 0; i < p->nthreads; i++) {
		const struct blamer_snap_thread *t = &p->threads[i];

		bl_json_object(j);
		bl_json_kv_i64(j, "tid", t->tid);
		bl_json_kv_string(j, "name", t->name);
		bl_json_kv_u64(j, "start_time_ns", t->start_time_ns);
		bl_json_kv_u32(j, "depth", t->depth);
		bl_json_kv_u32(j, "stack_slots", t->stack_slots);
		bl_json_kv_u32(j, "overflows", t->overflows);
		bl_json_kv_bool(j, "torn", t->torn);
		bl_json_key(j, "activities");
		bl_json_array(j);
		for (k = 0; k < t->nacts; k++) {
			const struct blamer_snap_activity *a = &t->acts[k];

			bl_json_object(j);
			bl_json_kv_u64(j, "time_ns", a->time_ns);
			calling(j, p, a->calling_address);
			bl_json_kv_u32(j, "kind", a->kind);
			bl_json_kv_string(j, "kind_name", blamer_activity_kind_name(a->kind));
			bl_json_kv_string(j, "label", a->label);
			bl_json_kv_bool(j, "label_cut", a->label_cut);
			bl_json_key(j, "data");	/* two words the writer chose: hex */
			bl_json_array(j);
			bl_json_id(j, a->data[0]);
			bl_json_id(j, a->data[1]);
			bl_json_array_end(j);
			fields(j, "user_data", &a->fields);
			bl_json_object_end(j);
		}
		bl_json_array_end(j);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
}

static void details(struct bl_json *j, const struct blamer_snapshot *s,
		    const struct blamer_snap_process *p)
{
	size_t i, k;

	fields(j, "user_data", &p->user_data);
	fields(j, "global_data", &p->global_data);
	threads(j, p);
	bl_json_key(j, "modules");
	bl_json_array(j);
	for (i = 0; i < p->nmodules; i++) {
		const struct blamer_snap_module *m = &p->modules[i];

		bl_json_object(j);
		bl_json_kv_string(j, "path", m->path);
		bl_json_kv_id(j, "base", m->base);
		bl_json_kv_u64(j, "size", m->size);
		bl_json_kv_bool(j, "loaded", m->loaded);
		bl_json_key(j, "build_id");
		bl_json_hex(j, m->build_id, m->build_id_len);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
	bl_json_key(j, "log");
	bl_json_array(j);
	for (i = 0; i < p->nlogs; i++) {
		bl_json_object(j);
		bl_json_kv_u64(j, "number", p->logs[i].number);
		bl_json_kv_u64(j, "time_ns", p->logs[i].time_ns);
		bl_json_kv_string(j, "text", p->logs[i].text);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
	bl_json_key(j, "children");
	bl_json_array(j);
	for (i = 0; i < p->nchildren; i++) {
		const struct blamer_snap_child *c = &p->children[i];

		bl_json_object(j);
		bl_json_kv_i64(j, "pid", c->pid);
		bl_json_kv_u64(j, "launch_time_ns", c->launch_time_ns);
		bl_json_kv_u64(j, "exit_time_ns", c->exit_time_ns);
		bl_json_kv_i32(j, "exit_status", c->exit_status);
		bl_json_kv_string(j, "state", c->state == BLAMER_CHILD_EXITED ? "exited" :
					      c->state == BLAMER_CHILD_RUNNING ? "running" :
					      "unknown");
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
	bl_json_key(j, "dag");
	bl_json_object(j);
	bl_json_key(j, "nodes");
	bl_json_array(j);
	for (i = 0; i < p->nnodes; i++)
		node(j, &p->nodes[i]);
	bl_json_array_end(j);
	bl_json_key(j, "edges");
	bl_json_array(j);
	for (i = 0; i < p->nedges; i++) {
		bl_json_object(j);
		bl_json_key(j, "parent");
		bl_json_id(j, p->edges[i].parent);
		bl_json_key(j, "child");
		bl_json_id(j, p->edges[i].child);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
	bl_json_key(j, "paths");
	bl_json_array(j);
	for (i = 0; i < p->npaths; i++) {
		const struct blamer_snap_path *sp = &p->paths[i];

		bl_json_object(j);
		bl_json_path(j, s, p->uid, sp->nodes, sp->depth);
		bl_json_key(j, "values");
		bl_json_array(j);
		for (k = 0; k < sp->nvalues; k++) {
			bl_json_object(j);
			unit(j, s, p->uid, sp->units[k]);
			bl_json_kv_u64(j, "value", sp->values[k]);
			bl_json_object_end(j);
		}
		bl_json_array_end(j);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
	bl_json_object_end(j);
	bl_json_process_metrics(j, s, p);
}

/*
 * The members of a process that are its writer's word, not the
 * kernel's. With kernel_facts (the device backend) the kernel vouches
 * for pid, uid, comm, start time, state and how it ended; the dir
 * backend has only the heap's files and contents, so all of them are
 * claims. What the heap holds (cmdline, phase and every detail) is a
 * claim on both (Documentation/reader.rst, "Facts and claims").
 */
static void claimed(struct bl_json *j, const struct blamer_snap_process *p)
{
	static const char *const identity[] = {
		"pid", "uid", "comm", "start_time_ns", "state", "exited", "exit_code",
		"exit_signal", "coredump", "last_seen_ns",
	};
	size_t i;

	bl_json_key(j, "claimed");
	bl_json_array(j);
	for (i = 0; i < sizeof(identity) / sizeof(identity[0]) && !p->kernel_facts; i++)
		bl_json_string(j, identity[i]);
	bl_json_string(j, "cmdline");
	bl_json_string(j, "phase");
	bl_json_array_end(j);
}

/* "dropped": the total, "drops": {reason: count} of the reasons counted. */
static void drops(struct bl_json *j, const uint64_t *counts, uint64_t total)
{
	uint32_t i;

	bl_json_kv_u64(j, "dropped", total);
	bl_json_key(j, "drops");
	bl_json_object(j);
	for (i = 0; i < BLAMER_DROP_MAX; i++) {
		const char *n = blamer_drop_reason_name(i);
		char other[16];

		if (!counts[i])
			continue;
		if (!n) {
			snprintf(other, sizeof(other), "%u", i);	/* a newer writer's */
			n = other;
		}
		bl_json_kv_u64(j, n, counts[i]);
	}
	bl_json_object_end(j);
}

/* How the parent that launched it says it ended (dir backend), or null. */
static void parent_claim(struct bl_json *j, const struct blamer_snap_process *p)
{
	bl_json_key(j, "parent_claim");
	if (!p->parent_claim) {
		bl_json_null(j);
		return;
	}
	bl_json_object(j);
	bl_json_kv_i32(j, "parent_pid", p->parent_pid);
	bl_json_kv_i32(j, "wait_status", p->parent_wait_status);
	bl_json_kv_bool(j, "exited", WIFEXITED(p->parent_wait_status));
	bl_json_kv_i32(j, "exit_code", WIFEXITED(p->parent_wait_status) ?
		       WEXITSTATUS(p->parent_wait_status) : 0);
	bl_json_kv_u32(j, "exit_signal", WIFSIGNALED(p->parent_wait_status) ?
		       (uint32_t)WTERMSIG(p->parent_wait_status) : 0);
	bl_json_kv_u64(j, "exit_time_ns", p->parent_exit_time_ns);
	bl_json_object_end(j);
}

static void process(struct bl_json *j, const struct blamer_snapshot *s,
		    const struct blamer_snap_process *p, bool summary)
{
	const char *phase = blamer_phase_name(p->phase);
	char app[24];
	uint32_t i;

	bl_json_object(j);
	bl_json_kv_i32(j, "pid", p->pid);
	bl_json_kv_u32(j, "uid", p->uid);
	bl_json_kv_string(j, "comm", p->comm);
	bl_json_kv_u64(j, "start_time_ns", p->start_time_ns);
	bl_json_kv_string(j, "state", p->state == BLAMER_PROC_LIVE ? "live" : "dead");
	bl_json_kv_bool(j, "kernel_facts", p->kernel_facts);
	bl_json_kv_bool(j, "exited", p->exited);
	bl_json_kv_i32(j, "exit_code", p->exit_code);
	bl_json_kv_u32(j, "exit_signal", p->exit_signal);
	bl_json_kv_bool(j, "coredump", p->coredump);
	bl_json_kv_u64(j, "create_time_ns", p->create_time_ns);
	bl_json_kv_u64(j, "orphan_time_ns", p->orphan_time_ns);
	bl_json_kv_u64(j, "last_seen_ns", p->last_seen_ns);
	claimed(j, p);
	bl_json_kv_bool(j, "disproved", p->disproved);
	bl_json_kv_string(j, "disproved_why", p->disproved ? p->disproved_why : "");
	bl_json_kv_id(j, "heap", p->heap_key);
	bl_json_key(j, "slabs");
	bl_json_array(j);
	for (i = 0; i < p->nslabs && i < 64; i++)
		bl_json_u64(j, p->slab_ids[i]);
	bl_json_array_end(j);
	bl_json_kv_u64(j, "size", p->size);
	bl_json_kv_u64(j, "used", p->used);
	bl_json_kv_string(j, "health", blamer_health_name(p->health));
	bl_json_kv_string(j, "problem", p->problem);
	bl_json_kv_u32(j, "torn_records", p->torn_records);
	bl_json_kv_u32(j, "heap_state", p->heap_state);
	bl_json_kv_u32(j, "heap_flags", p->heap_flags);
	bl_json_kv_u32(j, "phase", p->phase);
	if (!phase) {
		snprintf(app, sizeof(app), "app%u", p->phase);
		phase = app;
	}
	bl_json_kv_string(j, "phase_name", phase);
	bl_json_kv_string(j, "cmdline", p->cmdline);
	bl_json_kv_string(j, "role", p->role);
	bl_json_kv_string(j, "instance", p->instance);
	bl_json_kv_u32(j, "busy_threads", p->busy_threads);
	drops(j, p->drops, p->dropped);
	parent_claim(j, p);
	if (!summary)
		details(j, s, p);
	bl_json_object_end(j);
}

/* The attribution view: nodes, totals, units and the inclusive tree. */
static void attribution(struct bl_json *j, const struct blamer_snapshot *s)
{
	size_t i, u;

	bl_json_key(j, "attribution");
	bl_json_object(j);
	bl_json_key(j, "nodes");
	bl_json_array(j);
	for (i = 0; i < s->nnodes; i++)
		node(j, &s->nodes[i]);
	bl_json_array_end(j);
	bl_json_key(j, "totals");
	bl_json_array(j);
	for (i = 0; i < s->ntotals; i++) {
		const struct blamer_snap_total *t = &s->totals[i];

		bl_json_object(j);
		bl_json_path(j, s, BL_JSON_ANY_UID, t->nodes, t->depth);
		unit(j, s, BL_JSON_ANY_UID, t->unit);
		bl_json_kv_u64(j, "value", t->value);
		bl_json_kv_u32(j, "processes", t->nprocs);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
	bl_json_kv_u64(j, "units_left_out", s->units_left_out);
	bl_json_key(j, "units");
	bl_json_array(j);
	for (u = 0; u < s->nunits; u++) {
		bl_json_object(j);
		unit(j, s, BL_JSON_ANY_UID, s->units[u]);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
	bl_json_key(j, "tree");
	bl_json_array(j);
	for (i = 0; i < s->ntree; i++) {
		const struct blamer_snap_tree_node *t = &s->tree[i];

		bl_json_object(j);
		bl_json_path(j, s, BL_JSON_ANY_UID, t->nodes, t->depth);
		bl_json_kv_bool(j, "walked", t->walked);
		bl_json_kv_u32(j, "processes", t->nprocs);
		bl_json_key(j, "self");
		bl_json_array(j);
		for (u = 0; u < s->nunits; u++)
			bl_json_u64(j, t->self[u]);
		bl_json_array_end(j);
		bl_json_key(j, "inclusive");
		bl_json_array(j);
		for (u = 0; u < s->nunits; u++)
			bl_json_u64(j, t->inclusive[u]);
		bl_json_array_end(j);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
	bl_json_object_end(j);
}

/* Directory entries the dir backend did not read, and why. */
static void skipped(struct bl_json *j, const struct blamer_snapshot *s)
{
	size_t i;

	bl_json_key(j, "skipped");
	bl_json_array(j);
	for (i = 0; i < s->nskipped; i++) {
		bl_json_object(j);
		bl_json_kv_string(j, "name", s->skipped[i].name);
		bl_json_kv_string(j, "why", s->skipped[i].why);
		bl_json_object_end(j);
	}
	bl_json_array_end(j);
	bl_json_kv_u64(j, "skipped_total", s->skipped_total);
	bl_json_kv_u64(j, "empty_files", s->empty_files);
}

static int i32_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return x < y ? -1 : x > y;
}

int blamer_snapshot_write_json(const struct blamer_snapshot *s, FILE *f,
			       uint32_t flags, const int32_t *pids, size_t npids)
{
	struct bl_json j;
	size_t i, k;

	bl_json_init(&j, f);
	head(&j, "snapshot", s->backend, s->source);
	bl_json_kv_u64(&j, "generation", s->generation);
	/* when it was taken, after every heap was read: the monotonic one
	 * turns activity time_ns into ages, the realtime one log times */
	bl_json_kv_u64(&j, "time_realtime_ns", s->realtime_ns);
	bl_json_kv_u64(&j, "time_monotonic_ns", s->monotonic_ns);
	skipped(&j, s);
	if (!(flags & BLAMER_JSON_NO_PROCS)) {
		bl_json_key(&j, "processes");
		bl_json_array(&j);
		int32_t *sorted = npids ? malloc(npids * sizeof(*sorted)) : NULL;

		/* sorted once and searched: postmortem asks for every dead pid */
		if (sorted) {
			memcpy(sorted, pids, npids * sizeof(*sorted));
			qsort(sorted, npids, sizeof(*sorted), i32_cmp);
		}
		for (i = 0; i < s->nprocs; i++) {
			bool want = npids == 0;

			if (sorted)
				want = bsearch(&s->procs[i].pid, sorted, npids, sizeof(*sorted), i32_cmp);
			for (k = 0; npids && !sorted && k < npids; k++)
				want |= pids[k] == s->procs[i].pid;	/* out of memory */
			if (want)
				process(&j, s, &s->procs[i], flags & BLAMER_JSON_SUMMARY);
		}
		free(sorted);
		bl_json_array_end(&j);
	}
	if (!(flags & BLAMER_JSON_NO_ATTRIB)) {
		attribution(&j, s);
		bl_json_service(&j, s);
	}
	bl_json_object_end(&j);
	return bl_json_finish(&j);
}

int blamer_status_write_json(const struct blamer_backend_status *st, FILE *f)
{
	struct bl_json j;
	size_t i;

	bl_json_init(&j, f);
	head(&j, "status", st->backend, st->source);
	if (st->backend == BLAMER_BACKEND_DEVICE) {
		bl_json_kv_u64(&j, "user_slabs", st->user_slabs);
		bl_json_kv_u64(&j, "user_orphans", st->user_orphans);
		bl_json_kv_u64(&j, "user_bytes", st->user_bytes);
		if (st->device_totals) {
			bl_json_kv_u64(&j, "slabs", st->slabs);
			bl_json_kv_u64(&j, "orphans", st->orphans);
			bl_json_kv_u64(&j, "bytes", st->bytes);
		}
		bl_json_kv_u64(&j, "max_slab_bytes", st->max_slab_bytes);
		bl_json_kv_u64(&j, "max_user_bytes", st->max_user_bytes);
		bl_json_kv_u64(&j, "max_total_bytes", st->max_total_bytes);
		bl_json_kv_u64(&j, "max_user_orphans", st->max_user_orphans);
		bl_json_key(&j, "parameters");
		bl_json_object(&j);
		for (i = 0; i < st->nparams; i++)
			bl_json_kv_string(&j, st->params[i].name, st->params[i].value);
		bl_json_object_end(&j);
	} else {
		bl_json_kv_u64(&j, "heaps", st->heaps);
		bl_json_kv_u64(&j, "dead", st->dead);
		bl_json_kv_u64(&j, "bytes", st->bytes);
	}
	drops(&j, st->drops, st->dropped);
	bl_json_kv_u64(&j, "dropping_heaps", st->dropping_heaps);
	bl_json_object_end(&j);
	return bl_json_finish(&j);
}
