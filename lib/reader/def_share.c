// SPDX-License-Identifier: MIT
/*
 * Metric definitions decoded once per snapshot: the workers of a service
 * inherit their definitions across fork(), so 1,000 heaps hold the same
 * few definitions 1,000 times, byte for byte but for their owner. Checking
 * and copying each one again (its name, help, labels, buckets) was 8 % of
 * a scrape of 1,000 live workers.
 *
 * A definition a heap of this snapshot decoded is noted with its bytes
 * (all but its block header and owner, which say where and whose it is,
 * not what); a later heap's definition with exactly those bytes gets the
 * decoding noted, whose strings are in the snapshot already, instead of
 * decoding them again. Decoding depends on nothing but those bytes, so
 * the result is the one its own decoding would give: a heap gains nothing
 * from another's but time, whoever's it is. The owner is still checked
 * against each heap's own process (rd_owner_ok()) before the lookup.
 *
 * Bounded: at most RD_DEFSHARE_MAX definitions per snapshot are noted
 * (the rest decode as before), in a table keyed with a secret seed by
 * what tells definitions apart first (kind, layout and name: hashing all
 * 600 bytes cost half of what sharing saved), and compared whole. Heaps
 * may make many definitions alike in those and different in the rest:
 * a lookup looks at most PROBES slots, so they cost a few comparisons
 * each, then decode as before. The notes point into the snapshot: they
 * are forgotten when it ends (rd_defshare_reset()).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SLOTS	(2 * RD_DEFSHARE_MAX)	/* at most half full */
#define PROBES	8u

/* What a definition is: its bytes after the owner; hashed: up to its help. */
#define KEY_OFF		offsetof(struct blamer_metric_def_rec, kind)
#define KEY_LEN		(sizeof(struct blamer_metric_def_rec) - KEY_OFF)
#define HASH_LEN	(offsetof(struct blamer_metric_def_rec, help) - KEY_OFF)
_Static_assert(KEY_OFF % 8 == 0 && HASH_LEN % 8 == 0, "hashed in words");

struct rd_defshare_slot {
	uint64_t hash;	/* 0: empty */
	uint32_t key;	/* index of its bytes in keys */
	struct blamer_snap_metric_def def;
};

static uint64_t key_hash(const struct rd_defshare *t, const struct blamer_metric_def_rec *r)
{
	const unsigned char *k = (const unsigned char *)r + KEY_OFF;
	uint64_t h = t->seed, w;
	size_t i;

	for (i = 0; i < HASH_LEN; i += 8) {
		memcpy(&w, k + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	h = rd_mix(h);
	return h ? h : 1;
}

/* The slot of @r's bytes (where they are, or where they would go), or
 * NULL if neither is within PROBES slots. */
static struct rd_defshare_slot *find(const struct rd_defshare *t,
				     const struct blamer_metric_def_rec *r, uint64_t h)
{
	size_t at = h & (SLOTS - 1);
	uint32_t i;

	for (i = 0; i < PROBES; i++, at = (at + 1) & (SLOTS - 1)) {
		struct rd_defshare_slot *s = &t->slot[at];

		if (!s->hash ||
		    (s->hash == h &&
		     !memcmp(t->keys + (size_t)s->key * KEY_LEN, (const unsigned char *)r + KEY_OFF,
			     KEY_LEN)))
			return s;
	}
	return NULL;
}

bool rd_defshare_get(struct rd_defshare *t, const struct blamer_metric_def_rec *r,
		     struct blamer_snap_metric_def *d)
{
	struct rd_defshare_slot *s;

	if (!t || !t->n)
		return false;
	s = find(t, r, key_hash(t, r));
	if (!s || !s->hash)
		return false;
	*d = s->def;
	return true;
}

void rd_defshare_put(struct rd_defshare *t, const struct blamer_metric_def_rec *r,
		     const struct blamer_snap_metric_def *d)
{
	struct rd_defshare_slot *s;
	uint64_t h;

	if (!t || t->n >= RD_DEFSHARE_MAX)
		return;
	if (!t->slot) {
		if (!t->seed)
			t->seed = rd_seed_new();
		t->slot = calloc(SLOTS, sizeof(*t->slot));
		t->keys = malloc(RD_DEFSHARE_MAX * KEY_LEN);
		if (!t->slot || !t->keys) {
			rd_defshare_free(t);	/* no sharing: each decodes its own */
			return;
		}
	}
	h = key_hash(t, r);
	s = find(t, r, h);
	if (!s || s->hash)
		return;
	memcpy(t->keys + (size_t)t->n * KEY_LEN, (const unsigned char *)r + KEY_OFF, KEY_LEN);
	s->hash = h;
	s->key = t->n++;
	s->def = *d;
}

void rd_defshare_reset(struct rd_defshare *t)
{
	if (t->n)
		memset(t->slot, 0, SLOTS * sizeof(*t->slot));
	t->n = 0;
}

void rd_defshare_free(struct rd_defshare *t)
{
	free(t->slot);
	free(t->keys);
	t->slot = NULL;
	t->keys = NULL;
	t->n = 0;
}
