// SPDX-License-Identifier: MIT
/*
 * The snapshot model as the backends and the parser fill it in: adding a
 * process, noting what was wrong with its heap (the worst health wins,
 * the first reason is kept), one-line errors for the caller, and
 * freeing it all.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void rd_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

struct blamer_snap_process *rd_new_process(struct blamer_snapshot *s)
{
	struct blamer_snap_process *np;

	if ((s->nprocs & (s->nprocs - 1)) == 0) {
		np = realloc(s->procs, (s->nprocs ? s->nprocs * 2 : 1) * sizeof(*np));
		if (!np)
			return NULL;
		s->procs = np;
	}
	np = &s->procs[s->nprocs++];
	memset(np, 0, sizeof(*np));
	return np;
}

static int severity(enum blamer_health h)
{
	switch (h) {
	case BLAMER_HEALTH_OK: return 0;
	case BLAMER_HEALTH_SUMMARY: return 1;
	case BLAMER_HEALTH_EMPTY: return 2;
	case BLAMER_HEALTH_TORN: return 3;
	case BLAMER_HEALTH_CORRUPT: return 4;
	case BLAMER_HEALTH_UNREADABLE: return 5;
	}
	return 5;
}

void rd_problem(struct blamer_snap_process *p, enum blamer_health h,
		const char *fmt, ...)
{
	va_list ap;

	if (severity(h) > severity(p->health))
		p->health = h;
	if (p->problem[0] || !fmt)
		return;
	va_start(ap, fmt);
	vsnprintf(p->problem, sizeof(p->problem), fmt, ap);
	va_end(ap);
}

void rd_fields_free(struct blamer_snap_fields *f)
{
	size_t i;

	for (i = 0; i < f->n; i++) {
		free(f->v[i].name);
		free(f->v[i].bytes);
	}
	free(f->v);
	f->v = NULL;
	f->n = 0;
}

void rd_process_free(struct blamer_snap_process *p)
{
	size_t i, j;

	rd_fields_free(&p->user_data);
	rd_fields_free(&p->global_data);
	for (i = 0; i < p->nthreads; i++) {
		for (j = 0; j < p->threads[i].nacts; j++)
			rd_fields_free(&p->threads[i].acts[j].fields);
		free(p->threads[i].acts);
	}
	free(p->threads);
	free(p->modules);
	free(p->logs);
	free(p->children);
	free(p->nodes);
	free(p->edges);
	free(p->paths);
}

void blamer_snapshot_free(struct blamer_snapshot *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nprocs; i++)
		rd_process_free(&s->procs[i]);
	free(s->procs);
	free(s->totals);
	free(s->units);
	free(s->tree);
	free(s->nodes);
	free(s);
}
