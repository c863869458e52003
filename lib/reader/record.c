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
#include <sys/random.h>
#include <time.h>

#include "internal.h"

static bool block_ok(const struct rd_ctx *c, blamer_ref ref, size_t min,
		     const struct blamer_block *b)
{
	uint32_t off = blamer_ref_offset(ref), slab = blamer_ref_slab(ref);

	return b->cookie == BLAMER_BLOCK_COOKIE && b->size >= min && b->size % BLAMER_ALIGN == 0 &&
	       (uint64_t)off + b->size <= c->h->slabs[slab].size;
}

bool rd_block(struct rd_ctx *c, blamer_ref ref, size_t min, uint32_t type,
	      struct blamer_block *b)
{
	if (!rd_copy(c->h, ref, sizeof(*b), b)) {
		/* a record appended after the read began is not damage */
		if (!rd_ref_pending(c->h, ref, sizeof(*b)))
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "bad reference %#llx",
				   (unsigned long long)ref);
		return false;
	}
	/* A dir copy may hold a record from before its writer made it (the
	 * reference to it was copied later): read it again once. */
	if (!block_ok(c, ref, min, b) && c->h->live && rd_refresh(c->h, ref, sizeof(*b)) &&
	    rd_copy(c->h, ref, sizeof(*b), b) && block_ok(c, ref, min, b))
		rd_refresh(c->h, ref, b->size);
	if (!block_ok(c, ref, min, b)) {
		if (!rd_ref_pending(c->h, ref, b->size >= min ? b->size : min))
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
				   "bad block at %#llx (size %u, cookie %#x)",
				   (unsigned long long)ref, b->size, b->cookie);
		return false;
	}
	if (type && b->type != type)
		return false;	/* retired or re-typed since it was linked */
	return true;
}

/* rd_block(), with the record's first @len bytes in @rec whenever the
 * block holds them. */
static bool record(struct rd_ctx *c, blamer_ref ref, size_t min, uint32_t type,
		   struct blamer_block *b, void *rec, size_t len)
{
	/* One copy where the header in it is good: the record and its
	 * header copied apart were two for every record decoded. */
	if (rd_copy(c->h, ref, len, rec)) {
		memcpy(b, rec, sizeof(*b));
		if (block_ok(c, ref, min, b))
			return !type || b->type == type;
	}
	if (!rd_block(c, ref, min, type, b))
		return false;
	/* a block of @len bytes or more is in the slab: so is the copy */
	rd_copy(c->h, ref, len, rec);
	return true;
}

bool rd_record(struct rd_ctx *c, blamer_ref ref, uint32_t type, struct blamer_block *b,
	       void *rec, size_t len)
{
	return record(c, ref, len, type, b, rec, len);
}

bool rd_chained(struct rd_ctx *c, blamer_ref ref, struct blamer_block *b, void *rec, size_t len)
{
	return record(c, ref, sizeof(*b), 0, b, rec, len);
}

bool rd_owner_ok(struct rd_ctx *c, const struct blamer_owner *o)
{
	if (!o->data_id)
		return false;
	if (c->p->have_record && (o->pid != c->pid || o->create_stamp != c->stamp))
		return false;	/* left over from another owner: not ours */
	return true;
}

/* The scratch buffer @arr grows in (taken if it has none yet), or NULL. */
static struct rd_grow *grow_of(struct rd_ctx *c, void **arr, size_t *n, size_t elsz)
{
	struct rd_scratch *sc = c->h->scratch;
	struct rd_grow *g, *free_one = NULL;
	size_t i;

	if (!sc)
		return NULL;
	if (sc->a[sc->last].owner == arr)
		return &sc->a[sc->last];
	for (i = 0; i < RD_SCRATCH_ARRAYS; i++) {
		g = &sc->a[i];
		if (g->owner == arr) {
			sc->last = (uint32_t)i;
			return g;
		}
		if (!g->owner && !free_one)
			free_one = g;
	}
	if (free_one && !*n) {
		free_one->owner = arr;
		free_one->n = n;
		free_one->elsz = elsz;
	}
	return *n ? NULL : free_one;
}

void rd_scratch_commit(struct rd_heap *h)
{
	struct rd_scratch *sc = h->scratch;
	struct rd_grow *g;
	size_t i;
	void *a;

	for (i = 0; sc && i < RD_SCRATCH_ARRAYS; i++) {
		g = &sc->a[i];
		if (!g->owner)
			continue;
		a = *g->n ? rd_alloc(h->s, *g->n * g->elsz) : NULL;
		if (a)
			memcpy(a, g->buf, *g->n * g->elsz);
		else if (*g->n)
			rd_problem(h->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
		*g->owner = a;
		if (!a)
			*g->n = 0;
		g->owner = NULL;
	}
}

void rd_scratch_free(struct rd_scratch *sc)
{
	size_t i;

	for (i = 0; i < RD_SCRATCH_ARRAYS; i++)
		free(sc->a[i].buf);
	rd_seen_free(&sc->listed);
	rd_seen_free(&sc->shards);
	memset(sc, 0, sizeof(*sc));	/* defs, share: freed by their owners first */
}

void *rd_push(struct rd_ctx *c, void **arr, size_t *n, size_t elsz)
{
	struct blamer_snap_process *p = c->p;
	struct rd_grow *g;
	void *na;

	if (*n >= RD_MAX_RECORDS_KIND) {
		rd_problem(p, BLAMER_HEALTH_TRUNCATED,
			   "more than %u records of one kind: the rest not read",
			   RD_MAX_RECORDS_KIND);
		return NULL;
	}
	g = grow_of(c, arr, n, elsz);
	if (g) {
		if ((*n + 1) * elsz > g->cap) {
			size_t cap = g->cap ? g->cap * 2 : 16 * elsz;

			while (cap < (*n + 1) * elsz)
				cap *= 2;
			na = realloc(g->buf, cap);
			if (!na) {
				rd_problem(p, BLAMER_HEALTH_UNREADABLE, "out of memory");
				return NULL;
			}
			g->buf = na;
			g->cap = cap;
		}
		*arr = g->buf;
	} else if (*n == 0 || (*n >= 16 && (*n & (*n - 1)) == 0)) {
		na = rd_alloc(c->h->s, (*n ? *n * 2 : 16) * elsz);
		if (!na) {
			rd_problem(p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			return NULL;
		}
		if (*n)
			memcpy(na, *arr, *n * elsz);	/* the old copy stays in the arena */
		*arr = na;
	}
	memset((char *)*arr + *n * elsz, 0, elsz);
	return (char *)*arr + (*n)++ * elsz;
}

size_t rd_printable_span(const char *s, size_t n)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	size_t i = 0;

	/* Eight bytes at a time while all are printable ASCII: no byte
	 * below 0x20 (NUL included) and none above 0x7e (the high bit of a
	 * byte of each test says so, for bytes under 0x80 and, for the
	 * second test, for any byte). */
	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, s + i, sizeof(w));
		if (((w - ones * 0x20) & ~w & highs) | (((w + ones * (0x7f - 0x7e)) | w) & highs))
			break;
	}
	while (i < n && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f)
		i++;
	return i;
}

void rd_sanitize(char *dst, const char *src, size_t n)
{
	size_t i = rd_printable_span(src, n);

	memcpy(dst, src, i);
	for (; i < n && src[i]; i++) {
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

/* A bitmap this small (a slab up to 512 KiB) is kept for the next heap
 * and cleared in full; a larger one is calloc()ed, whose untouched pages
 * cost nothing until a record is met, and freed. */
#define RD_SEEN_KEEP_WORDS	1024u

bool rd_seen_clear(struct rd_ctx *c, struct rd_seen *s, uint32_t slab)
{
	size_t need = c->h->slabs[slab].size / BLAMER_ALIGN / 64 + 1;

	if (s->bits[slab] && need <= s->words[slab] && need <= RD_SEEN_KEEP_WORDS) {
		memset(s->bits[slab], 0, need * sizeof(uint64_t));
	} else {
		free(s->bits[slab]);
		s->words[slab] = 0;
		s->bits[slab] = calloc(need, sizeof(uint64_t));
		if (!s->bits[slab]) {
			rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			return false;
		}
		s->words[slab] = (uint32_t)need;
	}
	s->cleared |= 1ull << slab;
	return true;
}

void rd_seen_free(struct rd_seen *s)
{
	size_t i;

	for (i = 0; i < BLAMER_MAX_SLABS; i++)
		free(s->bits[i]);
	memset(s, 0, sizeof(*s));
}

void rd_seen_done(struct rd_seen *s, bool keep)
{
	uint64_t used = s->cleared;

	if (!keep) {
		rd_seen_free(s);
		return;
	}
	/* a bitmap too large to keep was made for this heap: one of its
	 * slabs, whose bit is in cleared */
	while (used) {
		unsigned i = (unsigned)__builtin_ctzll(used);

		used &= used - 1;
		if (s->words[i] > RD_SEEN_KEEP_WORDS) {
			free(s->bits[i]);
			s->bits[i] = NULL;
			s->words[i] = 0;
		}
	}
	s->cleared = 0;	/* the next heap's walk clears what it uses */
}

uint64_t rd_seed_new(void)
{
	struct timespec t;
	uint64_t seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == sizeof(seed))
		return seed;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return rd_mix((uint64_t)t.tv_nsec ^ (uint64_t)(uintptr_t)&t);
}

uint64_t rd_ref_seed(struct rd_ctx *c)
{
	if (!c->defs.seed)
		c->defs.seed = rd_seed_new();
	return c->defs.seed;
}
