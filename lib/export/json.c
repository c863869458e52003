// SPDX-License-Identifier: MIT
/*
 * JSON view of a snapshot. The schema is Documentation/blamer-json-schema.json
 * (schema_version BLAMER_JSON_SCHEMA_VERSION); fields are only ever added.
 * Node IDs are hex strings ("0x..."): they are 64-bit hashes and would
 * lose precision as JSON numbers in most consumers. Every string is
 * escaped to ASCII, so the output is valid UTF-8 whatever a heap holds.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "blamer.h"

static void jstr_n(FILE *f, const char *s, size_t n)
{
	size_t i;

	fputc('"', f);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);	/* bytes shown as Latin-1 */
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void jstr(FILE *f, const char *s)
{
	jstr_n(f, s, strlen(s));
}

static void jkey(FILE *f, bool *first, const char *k)
{
	if (!*first)
		fputc(',', f);
	*first = false;
	jstr(f, k);
	fputc(':', f);
}

static void jid(FILE *f, uint64_t id)
{
	fprintf(f, "\"0x%llx\"", (unsigned long long)id);
}

static void jfields(FILE *f, const struct blamer_snap_fields *fs)
{
	size_t i, j;

	fputc('[', f);
	for (i = 0; i < fs->n; i++) {
		const struct blamer_snap_field *x = &fs->v[i];
		bool first = true;

		if (i)
			fputc(',', f);
		fputc('{', f);
		jkey(f, &first, "name");
		jstr(f, x->name ? x->name : "");
		jkey(f, &first, "type");
		jstr(f, blamer_field_type_name(x->type));
		jkey(f, &first, "torn");
		fputs(x->torn ? "true" : "false", f);
		jkey(f, &first, "value");
		if (x->torn) {
			fputs("null", f);
		} else {
			switch (x->type) {
			case BLAMER_FIELD_SIGNED:
				fprintf(f, "%lld", (long long)x->i);
				break;
			case BLAMER_FIELD_UNSIGNED:
				fprintf(f, "%llu", (unsigned long long)x->u);
				break;
			case BLAMER_FIELD_DOUBLE:
				if (isfinite(x->d))
					fprintf(f, "%.17g", x->d);
				else
					fputs("null", f);
				break;
			case BLAMER_FIELD_BOOL:
				fputs(x->u ? "true" : "false", f);
				break;
			case BLAMER_FIELD_CHAR: {
				char ch = (char)x->u;

				jstr_n(f, &ch, 1);
				break;
			}
			case BLAMER_FIELD_STRING:
				jstr_n(f, (const char *)x->bytes, x->len);
				break;
			case BLAMER_FIELD_RAW:
				fputc('"', f);
				for (j = 0; j < x->len; j++)
					fprintf(f, "%02x", x->bytes[j]);
				fputc('"', f);
				break;
			case BLAMER_FIELD_RAW_REF:
			case BLAMER_FIELD_STRING_REF:
				fprintf(f, "{\"address\":%llu,\"size\":%llu}",
					(unsigned long long)x->u, (unsigned long long)x->ref_size);
				break;
			default:
				fputs("null", f);
			}
		}
		fputc('}', f);
	}
	fputc(']', f);
}

static void jpath(FILE *f, const struct blamer_snapshot *s, const uint64_t *nodes,
		  uint32_t depth)
{
	uint32_t i;

	fputs("\"path\":[", f);
	for (i = 0; i < depth; i++) {
		if (i)
			fputc(',', f);
		jid(f, nodes[i]);
	}
	fputs("],\"names\":[", f);
	for (i = 0; i < depth; i++) {
		const char *n = blamer_snap_node_name(s, nodes[i]);

		if (i)
			fputc(',', f);
		if (n)
			jstr(f, n);
		else
			fputs("null", f);
	}
	fputc(']', f);
}

static void junit(FILE *f, uint32_t unit)
{
	const char *n = blamer_unit_name(unit);

	fprintf(f, "\"unit\":%u,\"unit_name\":", unit);
	if (n)
		jstr(f, n);
	else
		fprintf(f, "\"unit%u\"", unit);
}

static void jthreads(FILE *f, const struct blamer_snap_process *p)
{
	size_t i, j;

	fputc('[', f);
	for (i = 0; i < p->nthreads; i++) {
		const struct blamer_snap_thread *t = &p->threads[i];

		if (i)
			fputc(',', f);
		fprintf(f, "{\"tid\":%lld,\"name\":", (long long)t->tid);
		jstr(f, t->name);
		fprintf(f, ",\"start_time_ns\":%llu,\"depth\":%u,\"stack_slots\":%u,"
			"\"overflows\":%u,\"torn\":%s,\"activities\":[",
			(unsigned long long)t->start_time_ns, t->depth, t->stack_slots,
			t->overflows, t->torn ? "true" : "false");
		for (j = 0; j < t->nacts; j++) {
			const struct blamer_snap_activity *a = &t->acts[j];

			if (j)
				fputc(',', f);
			fprintf(f, "{\"time_ns\":%llu,\"calling_address\":%llu,\"kind\":%u,"
				"\"kind_name\":", (unsigned long long)a->time_ns,
				(unsigned long long)a->calling_address, a->kind);
			jstr(f, blamer_activity_kind_name(a->kind));
			fputs(",\"label\":", f);
			jstr(f, a->label);
			fprintf(f, ",\"data\":[%llu,%llu],\"user_data\":",
				(unsigned long long)a->data[0], (unsigned long long)a->data[1]);
			jfields(f, &a->fields);
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputc(']', f);
}

static void jdetails(FILE *f, const struct blamer_snapshot *s,
		     const struct blamer_snap_process *p)
{
	size_t i, j;

	fputs(",\"user_data\":", f);
	jfields(f, &p->user_data);
	fputs(",\"global_data\":", f);
	jfields(f, &p->global_data);
	fputs(",\"threads\":", f);
	jthreads(f, p);
	fputs(",\"modules\":[", f);
	for (i = 0; i < p->nmodules; i++) {
		const struct blamer_snap_module *m = &p->modules[i];

		if (i)
			fputc(',', f);
		fputs("{\"path\":", f);
		jstr(f, m->path);
		fprintf(f, ",\"base\":%llu,\"size\":%llu,\"loaded\":%s,\"build_id\":\"",
			(unsigned long long)m->base, (unsigned long long)m->size,
			m->loaded ? "true" : "false");
		for (j = 0; j < m->build_id_len; j++)
			fprintf(f, "%02x", m->build_id[j]);
		fputs("\"}", f);
	}
	fputs("],\"log\":[", f);
	for (i = 0; i < p->nlogs; i++) {
		if (i)
			fputc(',', f);
		fprintf(f, "{\"number\":%llu,\"time_ns\":%llu,\"text\":",
			(unsigned long long)p->logs[i].number,
			(unsigned long long)p->logs[i].time_ns);
		jstr(f, p->logs[i].text);
		fputc('}', f);
	}
	fputs("],\"children\":[", f);
	for (i = 0; i < p->nchildren; i++) {
		const struct blamer_snap_child *c = &p->children[i];

		fprintf(f, "%s{\"pid\":%lld,\"launch_time_ns\":%llu,\"exit_time_ns\":%llu,"
			"\"exit_status\":%d,\"state\":\"%s\"}", i ? "," : "",
			(long long)c->pid, (unsigned long long)c->launch_time_ns,
			(unsigned long long)c->exit_time_ns, c->exit_status,
			c->state == BLAMER_CHILD_EXITED ? "exited" :
			c->state == BLAMER_CHILD_RUNNING ? "running" : "unknown");
	}
	fputs("],\"dag\":{\"nodes\":[", f);
	for (i = 0; i < p->nnodes; i++) {
		fprintf(f, "%s{\"id\":", i ? "," : "");
		jid(f, p->nodes[i].id);
		fprintf(f, ",\"type\":%u,\"name\":", p->nodes[i].type);
		jstr(f, p->nodes[i].name);
		fputc('}', f);
	}
	fputs("],\"edges\":[", f);
	for (i = 0; i < p->nedges; i++) {
		fprintf(f, "%s{\"parent\":", i ? "," : "");
		jid(f, p->edges[i].parent);
		fputs(",\"child\":", f);
		jid(f, p->edges[i].child);
		fputc('}', f);
	}
	fputs("],\"paths\":[", f);
	for (i = 0; i < p->npaths; i++) {
		const struct blamer_snap_path *sp = &p->paths[i];

		fprintf(f, "%s{", i ? "," : "");
		jpath(f, s, sp->nodes, sp->depth);
		fputs(",\"values\":[", f);
		for (j = 0; j < sp->nvalues; j++) {
			fprintf(f, "%s{", j ? "," : "");
			junit(f, sp->units[j]);
			fprintf(f, ",\"value\":%llu}", (unsigned long long)sp->values[j]);
		}
		fputs("]}", f);
	}
	fputs("]}", f);
}

static void jprocess(FILE *f, const struct blamer_snapshot *s,
		     const struct blamer_snap_process *p, bool summary)
{
	const char *phase = blamer_phase_name(p->phase);
	uint32_t i;

	fprintf(f, "{\"pid\":%d,\"uid\":%u,\"comm\":", p->pid, p->uid);
	jstr(f, p->comm);
	fprintf(f, ",\"start_time_ns\":%llu,\"state\":\"%s\",\"kernel_facts\":%s,"
		"\"exited\":%s,\"exit_code\":%d,\"exit_signal\":%u,\"coredump\":%s,"
		"\"create_time_ns\":%llu,\"orphan_time_ns\":%llu,\"slabs\":[",
		(unsigned long long)p->start_time_ns,
		p->state == BLAMER_PROC_LIVE ? "live" : "dead",
		p->kernel_facts ? "true" : "false", p->exited ? "true" : "false",
		p->exit_code, p->exit_signal, p->coredump ? "true" : "false",
		(unsigned long long)p->create_time_ns, (unsigned long long)p->orphan_time_ns);
	for (i = 0; i < p->nslabs && i < 64; i++)
		fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)p->slab_ids[i]);
	fprintf(f, "],\"size\":%llu,\"used\":%llu,\"health\":\"%s\",\"problem\":",
		(unsigned long long)p->size, (unsigned long long)p->used,
		blamer_health_name(p->health));
	jstr(f, p->problem);
	fprintf(f, ",\"torn_records\":%u,\"heap_state\":%u,\"heap_flags\":%u,"
		"\"phase\":%u,\"phase_name\":", p->torn_records, p->heap_state,
		p->heap_flags, p->phase);
	if (phase)
		jstr(f, phase);
	else
		fprintf(f, "\"app%u\"", p->phase);
	fputs(",\"cmdline\":", f);
	jstr(f, p->cmdline);
	if (!summary)
		jdetails(f, s, p);
	fputc('}', f);
}

int blamer_snapshot_write_json(const struct blamer_snapshot *s, FILE *f,
			       uint32_t flags, const int32_t *pids, size_t npids)
{
	size_t i, j;
	bool first = true;

	fprintf(f, "{\"schema_version\":%d,\"kind\":\"snapshot\",\"backend\":\"%s\",\"source\":",
		BLAMER_JSON_SCHEMA_VERSION,
		s->backend == BLAMER_BACKEND_DEVICE ? "device" :
		s->backend == BLAMER_BACKEND_DIR ? "dir" : "memory");
	jstr(f, s->source);
	fprintf(f, ",\"generation\":%llu,\"time_realtime_ns\":%llu",
		(unsigned long long)s->generation, (unsigned long long)s->realtime_ns);
	if (!(flags & BLAMER_JSON_NO_PROCS)) {
		fputs(",\"processes\":[", f);
		for (i = 0; i < s->nprocs; i++) {
			bool want = npids == 0;

			for (j = 0; j < npids; j++)
				want |= pids[j] == s->procs[i].pid;
			if (!want)
				continue;
			if (!first)
				fputc(',', f);
			first = false;
			jprocess(f, s, &s->procs[i], flags & BLAMER_JSON_SUMMARY);
		}
		fputc(']', f);
	}
	if (!(flags & BLAMER_JSON_NO_ATTRIB)) {
		fputs(",\"attribution\":{\"nodes\":[", f);
		for (i = 0; i < s->nnodes; i++) {
			fprintf(f, "%s{\"id\":", i ? "," : "");
			jid(f, s->nodes[i].id);
			fprintf(f, ",\"type\":%u,\"name\":", s->nodes[i].type);
			jstr(f, s->nodes[i].name);
			fputc('}', f);
		}
		fputs("],\"totals\":[", f);
		for (i = 0; i < s->ntotals; i++) {
			const struct blamer_snap_total *t = &s->totals[i];

			fprintf(f, "%s{", i ? "," : "");
			jpath(f, s, t->nodes, t->depth);
			fputc(',', f);
			junit(f, t->unit);
			fprintf(f, ",\"value\":%llu,\"processes\":%u}",
				(unsigned long long)t->value, t->nprocs);
		}
		fputs("]}", f);
	}
	fputs("}\n", f);
	return ferror(f) ? -EIO : 0;
}
