// SPDX-License-Identifier: MIT
/*
 * What a long-lived reader carries from one snapshot to the next, in one
 * shape for all of it (dir read hints, device mappings, kept dead heaps):
 * the last snapshot's entries, sorted and looked up by key, and the
 * current snapshot's, appended while it is taken. At the end of a
 * snapshot the current ones become the last ones (rd_carry_swap()); the
 * caller has dropped whatever of the last ones was not carried over.
 * The two arrays swap places, so neither is allocated again.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void *rd_carry_add(struct rd_carry *c)
{
	size_t cap;
	void *nv;

	if (c->ncur == c->capcur) {
		cap = c->capcur ? 2 * c->capcur : 64;
		if (cap > c->max)
			cap = c->max;
		if (c->ncur >= cap)
			return NULL;
		nv = realloc(c->cur, cap * c->elsz);
		if (!nv)
			return NULL;
		c->cur = nv;
		c->capcur = cap;
	}
	return (char *)c->cur + c->ncur++ * c->elsz;
}

void *rd_carry_find(const struct rd_carry *c, const void *key,
		    int (*cmp)(const void *key, const void *entry))
{
	return c->nlast ? bsearch(key, c->last, c->nlast, c->elsz, cmp) : NULL;
}

void rd_carry_swap(struct rd_carry *c, int (*sort)(const void *, const void *))
{
	void *t = c->last;
	size_t cap = c->caplast;

	if (sort && c->ncur > 1)
		qsort(c->cur, c->ncur, c->elsz, sort);
	c->last = c->cur;
	c->nlast = c->ncur;
	c->caplast = c->capcur;
	c->cur = t;
	c->capcur = cap;
	c->ncur = 0;
}

void rd_carry_close_last(struct rd_carry *c, size_t fd_off)
{
	size_t i;
	int fd;

	for (i = 0; i < c->nlast; i++) {
		memcpy(&fd, (char *)c->last + i * c->elsz + fd_off, sizeof(fd));
		if (fd >= 0)
			close(fd);
	}
	c->nlast = 0;
}

void rd_carry_free(struct rd_carry *c)
{
	free(c->last);
	free(c->cur);
	c->last = c->cur = NULL;
	c->nlast = c->ncur = c->caplast = c->capcur = 0;
}
