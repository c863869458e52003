// SPDX-License-Identifier: MIT
/*
 * Decoder of USERDATA records: named, typed fields, each changing in
 * place while it is read. Scalars are single atomic stores, so any copy
 * holds a whole value; strings and bytes are written under the field's
 * own seq, and a field whose seq was odd, or whose value differs between
 * the two copies, is torn: marked, not shown (heap_format.h).
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

/*
 * Decode the fields of area a (used bytes); b is a second copy taken after
 * a, used to tell values that changed in between (torn). Returns the
 * number of torn fields, or -1 on a layout error (reported).
 */
static int decode_fields(struct rd_ctx *c, const uint8_t *a, const uint8_t *b,
			 uint32_t used, struct blamer_snap_fields *out)
{
	uint32_t pos = 0;
	int torn = 0;

	while ((uint64_t)pos + sizeof(struct blamer_field) <= used) {
		struct blamer_field fa, fb;
		struct blamer_snap_field *sf;
		uint32_t namepad, area, want;
		const uint8_t *val;

		memcpy(&fa, a + pos, sizeof(fa));
		memcpy(&fb, b + pos, sizeof(fb));
		if (fa.type == BLAMER_FIELD_END)
			break;
		namepad = (((uint32_t)fa.name_size + 7u) & ~7u);
		if (fa.record_size < sizeof(fa) + namepad ||
		    (uint64_t)pos + fa.record_size > used) {
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
				   "user data field at +%u: bad record size %u", pos,
				   fa.record_size);
			return -1;
		}
		area = fa.record_size - sizeof(fa) - namepad;
		if (fa.value_size > area) {
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
				   "user data field at +%u: value %u > area %u", pos,
				   fa.value_size, area);
			return -1;
		}
		if (out->n >= RD_MAX_FIELDS) {
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "too many user data fields");
			return -1;
		}
		sf = rd_push((void **)&out->v, &out->n, sizeof(*sf), c->p);
		if (!sf)
			return -1;
		sf->type = fa.type;
		sf->name = malloc((size_t)fa.name_size + 1);
		if (!sf->name) {
			out->n--;
			rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			return -1;
		}
		rd_sanitize(sf->name, (const char *)a + pos + sizeof(fa), fa.name_size);
		val = a + pos + sizeof(fa) + namepad;
		want = field_value_size(fa.type);
		/*
		 * Scalars are single atomic stores: copy a holds a whole value
		 * even if it changed since. Longer values are under the field's
		 * seq: odd (being written) or changed between copies = torn.
		 */
		if (!(want && fa.value_size == want && fb.value_size == want) &&
		    (fa.value_size != fb.value_size || (fa.seq & 1) || fa.seq != fb.seq ||
		     memcmp(val, b + (val - a), fa.value_size))) {
			sf->torn = true;
			torn++;
			goto next;
		}
		if (fa.type > BLAMER_FIELD_DOUBLE) {
			sf->torn = true;	/* unknown type: shown as such */
			goto next;
		}
		if (want && fa.value_size != want) {
			/* mid-update (value_size 0) or wrong size */
			sf->torn = true;
			torn++;
			goto next;
		}
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
			sf->bytes = malloc((size_t)fa.value_size + 1);
			if (!sf->bytes) {
				rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
				return -1;
			}
			memcpy(sf->bytes, val, fa.value_size);
			sf->bytes[fa.value_size] = 0;
			sf->len = fa.value_size;
		}
next:
		pos += fa.record_size;
	}
	return torn;
}

struct ud_read {
	struct rd_ctx *c;
	struct blamer_snap_fields *out;
	uint32_t capacity;	/* of the record, as first read */
	int torn;		/* torn fields in the last decode, -1: layout error */
};

/* Settled when no field was torn: the decode of the first copy stands.
 * Else read again, as far as the second copy's header says is used (the
 * capacity first read bounds it). */
static bool ud_settled(struct rd_stable *r)
{
	struct ud_read *u = r->arg;
	struct blamer_userdata h2;
	uint32_t used = (uint32_t)(r->len - sizeof(h2));

	rd_fields_free(u->out);
	u->torn = decode_fields(u->c, r->first + sizeof(h2), r->second + sizeof(h2), used,
				u->out);
	if (u->torn <= 0)
		return true;
	memcpy(&h2, r->second, sizeof(h2));
	used = h2.used < h2.capacity ? h2.used : h2.capacity;
	r->len = sizeof(h2) + (used < u->capacity ? used : u->capacity);
	return false;
}

void rd_decode_userdata(struct rd_ctx *c, blamer_ref ref, struct blamer_snap_fields *out)
{
	struct ud_read ur = { .c = c, .out = out };
	struct rd_stable r = { .ref = ref, .grow = true, .settled = ud_settled, .arg = &ur };
	enum rd_read got;
	struct blamer_userdata u;
	struct blamer_block b;

	if (!ref || out->n)
		return;
	if (!rd_block(c, ref, sizeof(u), BLAMER_REC_USERDATA, &b) ||
	    !rd_copy(c->h, ref, sizeof(u), &u) || !rd_owner_ok(c, &u.owner))
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
	else if (got != RD_READ_BAD && ur.torn > 0)
		c->p->torn_records++;
	free(r.first);
	free(r.second);
}
