// SPDX-License-Identifier: MIT
/* What the reader-unit tests of more than one concern share (rtest.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtest.h"

struct blamer_snapshot *read_heap(struct fx_heap *h)
{
	struct blamer_mem_slab m[FX_MAX_SLABS];
	struct blamer_snapshot *s = NULL;

	fx_mem(h, m);
	if (blamer_snapshot_from_memory(m, h->nslabs, &s))
		return NULL;
	return s;
}

char tmpdir[64];

struct blamer_snapshot *dir_snapshot(uint32_t flags)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR, .dir = tmpdir,
					.flags = flags, .max_slab_bytes = 1 << 20 };
	struct blamer_reader *r = blamer_reader_open(&o, NULL, 0);
	struct blamer_snapshot *s = NULL;

	if (!r)
		return NULL;
	if (blamer_reader_snapshot(r, &s, NULL, 0))
		s = NULL;
	blamer_reader_close(r);
	return s;
}

void rm_tmpdir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		return;
}

const struct blamer_snap_process *by_pid(const struct blamer_snapshot *s, int32_t pid)
{
	size_t i;

	for (i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

const struct blamer_snap_series *find_series(const struct blamer_snapshot *s,
					     const char *name, const char *v0)
{
	size_t i;

	for (i = 0; i < s->nseries; i++)
		if (!strcmp(s->series[i].def->name, name) &&
		    (!v0 || !strcmp(s->series[i].first->values[0], v0)))
			return &s->series[i];
	return NULL;
}
