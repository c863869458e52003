// SPDX-License-Identifier: MIT
/*
 * What every record decoder (decode_*.c) needs: the block header checked
 * (a reference in range, a whole block inside its slab, the type still
 * the one it was listed with), the owner checked, a snapshot array grown
 * within its bound, a string made printable, a timestamp converted, and
 * a set of references already seen.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

bool rd_block(struct rd_ctx *c, blamer_ref ref, size_t min, uint32_t type,
	      struct blamer_block *b)
{
	uint32_t off = blamer_ref_offset(ref), slab = blamer_ref_slab(ref);

	if (!rd_copy(c->h, ref, sizeof(*b), b)) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "bad reference %#llx",
			   (unsigned long long)ref);
		return false;
	}
	if (b->cookie != BLAMER_BLOCK_COOKIE || b->size < min || b->size % BLAMER_ALIGN ||
	    (uint64_t)off + b->size > c->h->slabs[slab].size) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
			   "bad block at %#llx (size %u, cookie %#x)",
			   (unsigned long long)ref, b->size, b->cookie);
		return false;
	}
	if (type && b->type != type)
		return false;	/* retired or re-typed since it was linked */
	return true;
}

bool rd_owner_ok(struct rd_ctx *c, const struct blamer_owner *o)
{
	if (!o->data_id)
		return false;
	if (c->p->have_record && (o->pid != c->pid || o->create_stamp != c->stamp))
		return false;	/* left over from another owner: not ours */
	return true;
}

void *rd_push(void **arr, size_t *n, size_t elsz, struct blamer_snap_process *p)
{
	void *na;

	if (*n >= RD_MAX_RECORDS_KIND) {
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "more than %u records of one kind",
			   RD_MAX_RECORDS_KIND);
		return NULL;
	}
	/* grow by doubling: only at powers of two */
	if ((*n & (*n - 1)) == 0) {
		na = realloc(*arr, (*n ? *n * 2 : 1) * elsz);
		if (!na) {
			rd_problem(p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			return NULL;
		}
		*arr = na;
	}
	memset((char *)*arr + *n * elsz, 0, elsz);
	return (char *)*arr + (*n)++ * elsz;
}

void rd_sanitize(char *dst, const char *src, size_t n)
{
	size_t i;

	for (i = 0; i < n && src[i]; i++) {
		unsigned char c = (unsigned char)src[i];

		dst[i] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
	}
	dst[i] = '\0';
}

uint64_t rd_stamp_ns(struct rd_ctx *c, uint64_t stamp)
{
	if (c->clock.kind == BLAMER_CLOCK_TSC && !c->have_now) {
		bl_clock_start(&c->now, BLAMER_CLOCK_TSC);
		c->have_now = true;
	}
	return bl_clock_to_ns(&c->clock, &c->now, stamp);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

int rd_refset_add(struct rd_refset *s, uint64_t ref)
{
	size_t i;

	if ((s->n + 1) * 2 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64, j;
		uint64_t *nv = calloc(ncap, sizeof(*nv));

		if (!nv)
			return -1;
		for (j = 0; j < s->cap; j++) {
			if (!s->v[j])
				continue;
			for (i = mix(s->v[j]) & (ncap - 1); nv[i]; i = (i + 1) & (ncap - 1))
				;
			nv[i] = s->v[j];
		}
		free(s->v);
		s->v = nv;
		s->cap = ncap;
	}
	for (i = mix(ref) & (s->cap - 1); s->v[i]; i = (i + 1) & (s->cap - 1))
		if (s->v[i] == ref)
			return 0;
	s->v[i] = ref;
	s->n++;
	return 1;
}
