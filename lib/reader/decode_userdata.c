// SPDX-License-Identifier: MIT
/*
 * Decoder of USERDATA records: named, typed fields, each changing in
 * place while it is read. Scalars are single atomic stores, so any copy
 * holds a whole value; strings and bytes are written under the field's
 * own seq, and a field whose seq was odd, or whose value differs between
 * the two copies, is torn: marked, not shown (heap_format.h).
 *
 * A record is decoded once per heap, however many activities point at
 * it (a writer never shares one, a hostile heap may point every slot at
 * the same big record): later references show the same decoded fields,
 * within the heap's budget of fields and bytes shown (internal.h), past
 * which the heap is truncated.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Fixed value sizes per field type; 0 = any. */
static size_t field_value_size(uint32_t type)
{
	switch (type) {
	case BLAMER_FIELD_RAW_REF:
	case BLAMER_FIELD_STRING_REF: return 16;
	case BLAMER_FIELD_CHAR:
	case BLAMER_FIELD_BOOL: return 1;
	case BLAMER_FIELD_SIGNED:
	case BLAMER_FIELD_UNSIGNED:
	case BLAMER_FIELD_DOUBLE: return 8;
	default: return 0;
	}
}

/* What a walk over the fields found. */
struct fields_seen {
	uint32_t n;		/* fields */
	uint32_t torn;		/* of them torn (changed between the copies) */
	uint64_t bytes;		/* their names and string or raw values */
};

/*
 * Walk the fields of area @a (@used bytes); @b is a second copy taken
 * after @a, to tell values that changed in between (torn). Without @out
 * it only counts; with @out, whose array has room for what a counting
 * walk of the same copies found, it also fills it. Problems are reported
 * if @report (once, not on every try).
 */
static void walk_fields(struct rd_ctx *c, const uint8_t *a, const uint8_t *b, uint32_t used,
			struct blamer_snap_fields *out, bool report, struct fields_seen *seen)
{
	uint32_t pos = 0;

	memset(seen, 0, sizeof(*seen));
	while ((uint64_t)pos + sizeof(struct blamer_field) <= used) {
		struct blamer_field fa, fb;
		struct blamer_snap_field *sf = NULL;
		uint32_t namepad, area, want;
		const uint8_t *val;
		bool torn, cut;

		memcpy(&fa, a + pos, sizeof(fa));
		memcpy(&fb, b + pos, sizeof(fb));
		/* Version 3: a cut value says so in value_size's top bit. */
		cut = c->h->version >= 3 && (fa.value_size & BLAMER_VALUE_CUT);
		if (c->h->version >= 3) {
			fa.value_size = BLAMER_VALUE_SIZE(fa.value_size);
			fb.value_size = BLAMER_VALUE_SIZE(fb.value_size);
		}
		/* A field being made (type END) has its size from its claim:
		 * step over it; without one, the fields end here. */
		if (fa.type == BLAMER_FIELD_END) {
			if (fa.record_size < sizeof(fa) || fa.record_size % 8 ||
			    (uint64_t)pos + fa.record_size > used)
				break;
			pos += fa.record_size;
			continue;
		}
		namepad = (((uint32_t)fa.name_size + 7u) & ~7u);
		if (fa.name_size == 0 || fa.record_size < sizeof(fa) + namepad ||
		    (uint64_t)pos + fa.record_size > used) {
			if (report)
				rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
					   "user data field at +%u: bad name or record size %u", pos,
					   fa.record_size);
			return;
		}
		area = fa.record_size - sizeof(fa) - namepad;
		if (fa.value_size > area) {
			if (report)
				rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
					   "user data field at +%u: value %u > area %u", pos,
					   fa.value_size, area);
			return;
		}
		if (seen->n >= RD_MAX_FIELDS) {
			if (report)
				rd_problem(c->p, BLAMER_HEALTH_TRUNCATED,
					   "user data over %u fields: the rest not read", RD_MAX_FIELDS);
			return;
		}
		val = a + pos + sizeof(fa) + namepad;
		want = field_value_size(fa.type);
		/*
		 * Scalars are single atomic stores: copy a holds a whole value
		 * even if it changed since. Longer values are under the field's
		 * seq: odd (being written) or changed between copies = torn.
		 */
		torn = !(want && fa.value_size == want && fb.value_size == want) &&
		       (fa.value_size != fb.value_size || (fa.seq & 1) || fa.seq != fb.seq ||
			memcmp(val, b + (val - a), fa.value_size));
		/* mid-update (value_size 0) or the wrong size for the type */
		torn |= want && fa.value_size != want && fa.type <= BLAMER_FIELD_DOUBLE;
		seen->n++;
		seen->torn += torn;
		seen->bytes += fa.name_size + (want ? 0 : fa.value_size);
		if (out) {
			sf = &out->v[out->n++];
			memset(sf, 0, sizeof(*sf));
			sf->type = fa.type;
			sf->name = rd_alloc(c->h->s, (size_t)fa.name_size + 1);
			if (!sf->name) {
				out->n--;
				rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
				return;
			}
			rd_sanitize(sf->name, (const char *)a + pos + sizeof(fa), fa.name_size);
			/* torn, or a type this reader does not know: shown as such */
			sf->torn = torn || fa.type > BLAMER_FIELD_DOUBLE;
			sf->cut = cut && (fa.type == BLAMER_FIELD_STRING || fa.type == BLAMER_FIELD_RAW);
		}
		if (!sf || sf->torn)
			goto next;
		switch (fa.type) {
		case BLAMER_FIELD_SIGNED:
			memcpy(&sf->i, val, 8);
			break;
		case BLAMER_FIELD_UNSIGNED:
			memcpy(&sf->u, val, 8);
			break;
		case BLAMER_FIELD_DOUBLE:
			memcpy(&sf->d, val, 8);
			break;
		case BLAMER_FIELD_BOOL:
		case BLAMER_FIELD_CHAR:
			sf->u = val[0];
			break;
		case BLAMER_FIELD_RAW_REF:
		case BLAMER_FIELD_STRING_REF:
			memcpy(&sf->u, val, 8);
			memcpy(&sf->ref_size, val + 8, 8);
			break;
		default:	/* RAW, STRING */
			sf->bytes = rd_alloc(c->h->s, (size_t)fa.value_size + 1);
			if (!sf->bytes) {
				sf->torn = true;
				rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
				return;
			}
			memcpy(sf->bytes, val, fa.value_size);
			sf->bytes[fa.value_size] = 0;
			sf->len = fa.value_size;
		}
next:
		pos += fa.record_size;
	}
}

struct ud_read {
	struct rd_ctx *c;
	uint32_t capacity;	/* of the record, as first read */
};

/* Settled when no field was torn. Else read again, as far as the second
 * copy's header says is used (the capacity first read bounds it). */
static bool ud_settled(struct rd_stable *r)
{
	struct ud_read *u = r->arg;
	struct blamer_userdata h2;
	struct fields_seen seen;
	uint32_t used = (uint32_t)(r->len - sizeof(h2));

	walk_fields(u->c, r->first + sizeof(h2), r->other + sizeof(h2), used, NULL, false, &seen);
	if (!seen.torn)
		return true;
	memcpy(&h2, r->other, sizeof(h2));
	used = h2.used < h2.capacity ? h2.used : h2.capacity;
	r->len = sizeof(h2) + (used < u->capacity ? used : u->capacity);
	return false;
}

/* Decodes the record at @ref into @f (fields in the snapshot's memory). */
static void decode(struct rd_ctx *c, blamer_ref ref, struct rd_ud *ud)
{
	struct ud_read ur = { .c = c };
	struct rd_stable r = { .ref = ref, .grow = true, .settled = ud_settled, .arg = &ur };
	struct blamer_userdata u;
	struct blamer_block b;
	struct fields_seen seen;
	enum rd_read got;
	uint32_t used;

	if (!rd_record(c, ref, BLAMER_REC_USERDATA, &b, &u, sizeof(u)) || !rd_owner_ok(c, &u.owner))
		return;
	if (u.capacity > b.size - sizeof(u)) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "user data at %#llx: capacity %u too big",
			   (unsigned long long)ref, u.capacity);
		return;
	}
	ur.capacity = u.capacity;
	r.len = sizeof(u) + (u.used < u.capacity ? u.used : u.capacity);
	got = rd_read_stable(c->h, &r);
	if (got == RD_READ_NOMEM)
		rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
	if (got != RD_READ_STABLE && got != RD_READ_TORN)
		goto out;
	/* the last copies read, stable or not: count, then fill */
	used = (uint32_t)(r.len - sizeof(u));
	walk_fields(c, r.first + sizeof(u), r.other + sizeof(u), used, NULL, false, &seen);
	if (seen.torn)
		c->p->torn_records++;
	if (seen.n) {
		ud->f.v = rd_alloc(c->h->s, seen.n * sizeof(*ud->f.v));
		if (!ud->f.v) {
			rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			goto out;
		}
	}
	walk_fields(c, r.first + sizeof(u), r.other + sizeof(u), used, seen.n ? &ud->f : NULL,
		    true, &seen);
	ud->bytes = seen.bytes;
out:
	free(r.first);
	free(r.second);
}

/* The cache entry of @ref: found, or new with ref set; NULL out of memory. */
static struct rd_ud *cache_slot(struct rd_ctx *c, blamer_ref ref, bool *found)
{
	struct rd_udcache *uc = &c->ud;
	uint64_t seed = rd_ref_seed(c);
	size_t i;

	if ((uc->n + 1) * 2 > uc->cap) {
		size_t ncap = uc->cap ? uc->cap * 2 : 16, j;
		struct rd_ud *nv = calloc(ncap, sizeof(*nv));

		if (!nv) {
			rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			return NULL;
		}
		for (j = 0; j < uc->cap; j++) {
			if (!uc->v[j].ref)
				continue;
			for (i = rd_mix(uc->v[j].ref ^ seed) & (ncap - 1); nv[i].ref; i = (i + 1) & (ncap - 1))
				;
			nv[i] = uc->v[j];
		}
		free(uc->v);
		uc->v = nv;
		uc->cap = ncap;
	}
	for (i = rd_mix(ref ^ seed) & (uc->cap - 1); uc->v[i].ref; i = (i + 1) & (uc->cap - 1)) {
		if (uc->v[i].ref == ref) {
			*found = true;
			return &uc->v[i];
		}
	}
	*found = false;
	uc->v[i].ref = ref;
	uc->n++;
	return &uc->v[i];
}

void rd_decode_userdata(struct rd_ctx *c, blamer_ref ref, struct blamer_snap_fields *out)
{
	struct rd_ud *ud;
	bool found;

	if (!ref || out->n || (c->h->flags & BLAMER_READ_NO_USERDATA))
		return;
	ud = cache_slot(c, ref, &found);
	if (!ud)
		return;
	if (!found && c->shown_fields < RD_MAX_SHOWN_FIELDS && c->shown_bytes < RD_MAX_SHOWN_BYTES)
		decode(c, ref, ud);	/* touches no other entry: ud stays put */
	else if (!found)
		ud->over = true;	/* the budget is spent: not even decoded */
	if (ud->over || c->shown_fields + ud->f.n > RD_MAX_SHOWN_FIELDS ||
	    c->shown_bytes + ud->bytes > RD_MAX_SHOWN_BYTES) {
		rd_problem(c->p, BLAMER_HEALTH_TRUNCATED,
			   "user data shown over %u fields or %u bytes: the rest not shown",
			   RD_MAX_SHOWN_FIELDS, RD_MAX_SHOWN_BYTES);
		return;
	}
	c->shown_fields += ud->f.n;
	c->shown_bytes += ud->bytes;
	*out = ud->f;
}
