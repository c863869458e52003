// SPDX-License-Identifier: MIT
/*
 * Typed user data: named fields in a USERDATA record, set and overwritten
 * in place without locks (format: heap_format.h, struct blamer_field).
 *
 * Invariants:
 *  - A field is claimed by a CAS of its 8-byte header from 0 (the space
 *    past the last field is zero: fresh, or cleared when a retired record
 *    is taken over) to a claim word: type END, its record_size, its name's
 *    hash. used is moved past it after, by its maker or any walker. The
 *    header is stored again, whole, with release when the name and value
 *    are written: that publishes the field. A field of type END is being
 *    made; walkers step over it by its record_size.
 *  - Each name is made once (find_or_add() says how): lookups and the
 *    allocation are one walk, so readers need not merge duplicates.
 *  - Scalars are single atomic stores (no torn values, nothing to retry);
 *    strings and bytes go under the field's seq (odd while writing). Two
 *    threads setting the same string at once: the one that does not win
 *    the seq CAS drops its value (writers never wait).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "atomic.h"
#include "internal.h"

#define FIELD_HDR	8u
_Static_assert(sizeof(struct blamer_field) == FIELD_HDR, "a field header is one word");
#define ACTIVITY_DATA_BYTES	1024u

static uint32_t pad8(uint32_t n)
{
	return (n + 7) & ~7u;
}

/* The calling thread's top activity's data record, made if needed: one of
 * its spares, else one any thread retired, else a new one. */
static blamer_ref activity_data(struct blamer *b)
{
	struct bl_tls_ent *e = bl_thread_get(b);
	struct blamer_activity *a;
	struct blamer_userdata *u;
	blamer_ref ref = 0;
	uint32_t d;

	if (!e)
		return 0;
	d = ld_relaxed(A32(&e->rec->depth));
	if (!d || d > e->rec->stack_slots) {
		bl_error(ENOENT, "blamer: no recorded activity to attach data to");
		return 0;
	}
	a = &e->rec->stack[d - 1];
	if (a->user_data)
		return a->user_data;
	while (e->nspare && !ref) {
		blamer_ref s = e->spare[--e->nspare];

		if (bl_heap_take(&b->heap, s, BLAMER_REC_USERDATA, BL_DATA_LINK))
			ref = s;
	}
	if (!ref)
		ref = bl_heap_free_pop(&b->heap, &b->heap.free_data, BLAMER_REC_USERDATA,
				       BL_DATA_LINK);
	if (ref) {
		u = bl_ptr(&b->heap, ref);
		u->scope = BLAMER_DATA_ACTIVITY;
		u->capacity = u->hdr.size - sizeof(*u);
		bl_owner_set(b, &u->owner);
	} else {
		ref = bl_userdata_new(b, BLAMER_DATA_ACTIVITY, ACTIVITY_DATA_BYTES);
	}
	if (!ref) {
		bl_error(ENOSPC, "blamer: no room for activity data");
		return 0;
	}
	/* Release: a reader following the ref sees the record's header. */
	st_release(A64(&a->user_data), ref);
	return ref;
}

static struct blamer_userdata *scope_record(struct blamer *b, unsigned scope)
{
	struct bl_heap *h = bl_ready(b);
	blamer_ref ref;

	if (!h)
		return NULL;
	switch (scope) {
	case BLAMER_DATA_GLOBAL:
		ref = bl_part(b, BL_PART_GLOBAL_DATA);
		break;
	case BLAMER_DATA_PROCESS:
		ref = bl_part(b, BL_PART_PROCESS_DATA);
		break;
	case BLAMER_DATA_ACTIVITY:
		ref = activity_data(b);
		break;
	default:
		bl_error(EINVAL, "blamer: unknown data scope %u", scope);
		return NULL;
	}
	return bl_heap_get(h, ref, BLAMER_REC_USERDATA, sizeof(struct blamer_userdata));
}

/*
 * The header is read with atomic loads even where it no longer changes:
 * a walker that loses the race to claim it CASes it too (a failed CAS,
 * which a race detector counts as a write).
 */
static uint32_t hdr_name_size(struct blamer_field *f)
{
	return ld_relaxed(A8(&f->name_size));
}

static uint8_t *value_area(struct blamer_field *f)
{
	return (uint8_t *)f + FIELD_HDR + pad8(hdr_name_size(f));
}

static uint32_t value_capacity(struct blamer_field *f)
{
	return ld_relaxed(A16(&f->record_size)) - FIELD_HDR - pad8(hdr_name_size(f));
}

/* The claim word: a field's 8-byte header while it is being made. Its
 * type is END, record_size is its size (so walkers can step over it) and
 * value_size and seq hold the name's hash (they mean nothing until the
 * field is published), so a walker knows at once that a field being made
 * is not of its name. */
static uint64_t claim_word(uint8_t nlen, uint16_t rs, uint32_t hash)
{
	struct blamer_field h = {
		.type = BLAMER_FIELD_END, .name_size = nlen, .value_size = (uint16_t)hash,
		.record_size = rs, .seq = (uint16_t)(hash >> 16),
	};
	uint64_t w;

	memcpy(&w, &h, sizeof(w));
	return w;
}

/* FNV-1a 32 of the name. */
static uint32_t name_hash(const char *name, size_t nlen)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < nlen; i++)
		h = (h ^ (uint8_t)name[i]) * 16777619u;
	return h;
}

/*
 * The name of field @f, still being made, against ours (same length):
 * 1 the same, 0 another, -1 not all written yet. Its bytes were zero
 * before the claim and each is stored once, so a non-zero byte is final.
 */
static int pending_name(struct blamer_field *f, const char *name, size_t nlen)
{
	const uint8_t *p = (const uint8_t *)(f + 1);
	int whole = 1;
	size_t i;

	for (i = 0; i < nlen; i++) {
		uint8_t c = ld_relaxed(A8(p + i));

		if (!c)
			whole = -1;
		else if (c != (uint8_t)name[i])
			return 0;
	}
	return whole;
}

/* Moves used from @off to @end if no one has: the claimer of the field at
 * @off may not have yet (or died before it could). Release: a walker that
 * loads used (acquire) past the field sees its claim word. */
static void advance_used(struct blamer_userdata *u, uint32_t off, uint32_t end)
{
	uint32_t cur = off;

	atomic_compare_exchange_strong_explicit(A32(&u->used), &cur, end, memory_order_release,
						memory_order_relaxed);
}

enum found { FOUND_PUBLISHED, FOUND_MADE, FOUND_OTHERS };

/*
 * The field @name of @u: the published one, the one we just claimed
 * (FOUND_MADE: type END, name written; the caller writes the value and
 * publishes it), or one another thread is making under the same name
 * (FOUND_OTHERS: not ours to write).
 *
 * Each name is made once, without locks and without waiting. A field is
 * claimed by a CAS of its header from 0 to its claim word, at the first
 * offset whose header is 0, and the walk that reaches that offset has
 * looked at every field before it: published ones by name, ones being
 * made by the hash in their claim word (and by name bytes when the hashes
 * agree). So no field before ours has our name, and every later walker
 * sees ours. The one case this cannot decide without waiting, a field of
 * our name's length and hash whose maker has not finished writing the
 * name, fails with EAGAIN: this set overlaps that creation and is ordered
 * before it, its value dropped (as for two string writers at once).
 * Walkers step over fields being made (their claim word has their size),
 * so a maker that stalls, or a thread interrupted by a signal handler
 * that sets data, hides or duplicates nothing. used follows the claims:
 * whoever sees a claimed header at used moves it on (advance_used()).
 */
static struct blamer_field *find_or_add(struct blamer *b, struct blamer_userdata *u,
					uint8_t type, const char *name, uint32_t cap,
					enum found *how)
{
	size_t nlen = name ? strlen(name) : 0;
	uint32_t off = 0, used, rs, hash, i, cap_bytes = u->capacity;
	struct blamer_field *f, h;
	uint64_t w;

	if (!nlen || nlen > 255) {
		bl_error(EINVAL, "blamer: a field name has 1 to 255 bytes");
		return NULL;
	}
	rs = FIELD_HDR + pad8((uint32_t)nlen) + pad8(cap ? cap : 8);
	if (rs > 0xffff) {
		bl_error(EINVAL, "blamer: field %s too large", name);
		return NULL;
	}
	hash = name_hash(name, nlen);
	/* Acquire: pairs with the release that moved used, so the claim
	 * words of the fields below it are visible. */
	used = ld_acquire(A32(&u->used));
	if (used > cap_bytes) {
		bl_error(EIO, "blamer: user data used %u > capacity %u", used, cap_bytes);
		return NULL;
	}
	/* cap_bytes: the capacity does not change, and a local copy is not
	 * reloaded after every acquire below. */
	for (; off + FIELD_HDR <= cap_bytes; off += h.record_size) {
		f = (void *)(u->fields + off);
		/* Acquire: pairs with the claim CAS and with the publishing
		 * store: a published header comes with its name and value. */
		w = ld_acquire(A64(f));
		if (__builtin_expect(!w, 0)) {
			if (off < used) {
				/* used moves past a field only after its claim */
				bl_error(EIO, "blamer: user data field at +%u is corrupt", off);
				return NULL;
			}
			if (off + rs > cap_bytes)
				break;
			/* Acquire on failure: the winner's word is re-read. */
			if (!atomic_compare_exchange_strong_explicit(A64(f), &w,
								     claim_word((uint8_t)nlen, (uint16_t)rs, hash),
								     memory_order_acquire,
								     memory_order_acquire)) {
				h.record_size = 0;	/* this offset again */
				continue;
			}
			advance_used(u, off, off + rs);
			/* Byte stores: walkers read the bytes while we write them. */
			for (i = 0; i < nlen; i++)
				st_relaxed(A8((uint8_t *)(f + 1) + i), (uint8_t)name[i]);
			*how = FOUND_MADE;
			return f;
		}
		memcpy(&h, &w, sizeof(h));
		/* What stepping over it needs (a multiple of 8, not 0, inside);
		 * its name only if we read it. */
		if (!h.record_size || h.record_size % 8 || off + h.record_size > cap_bytes) {
			bl_error(EIO, "blamer: user data field at +%u is corrupt", off);
			return NULL;
		}
		if (__builtin_expect(off + h.record_size > used, 0)) {
			advance_used(u, off, off + h.record_size);
			used = off + h.record_size;
		}
		if (h.name_size != nlen)
			continue;
		if (h.record_size < FIELD_HDR + pad8(h.name_size)) {
			bl_error(EIO, "blamer: user data field at +%u is corrupt", off);
			return NULL;
		}
		if (h.type != BLAMER_FIELD_END) {
			if (!memcmp(f + 1, name, nlen)) {
				if (h.type != type) {
					bl_error(EINVAL, "blamer: field %s has another type", name);
					return NULL;
				}
				*how = FOUND_PUBLISHED;
				return f;
			}
		} else if ((h.value_size | (uint32_t)h.seq << 16) == hash) {
			switch (pending_name(f, name, nlen)) {
			case 1:
				*how = FOUND_OTHERS;
				return f;
			case -1:
				bl_drop(b, BLAMER_DROP_BUSY);
				bl_error(EAGAIN, "blamer: field %s is being made by another thread",
					 name);
				return NULL;
			}
		}
	}
	bl_drop(b, BLAMER_DROP_HEAP_FULL);
	bl_error(ENOSPC, "blamer: no room for field %s", name);
	return NULL;
}

/* One store of the whole header: the field is published with its real
 * value_size and seq (the claim word held the name's hash there).
 * Release: readers that see the type see name and value. */
static void publish(struct blamer_field *f, uint8_t type, uint16_t value_size)
{
	struct blamer_field h = {
		.type = type, .name_size = (uint8_t)hdr_name_size(f), .value_size = value_size,
		.record_size = ld_relaxed(A16(&f->record_size)), .seq = 0,
	};
	uint64_t w;

	memcpy(&w, &h, sizeof(w));
	st_release(A64(f), w);
}

/* The value size a field of @type is published with before any value
 * is set (a fork child's field made again: zero, "", null). */
static uint16_t empty_size(uint8_t type)
{
	switch (type) {
	case BLAMER_FIELD_BOOL:
	case BLAMER_FIELD_CHAR:
		return 1;
	case BLAMER_FIELD_SIGNED:
	case BLAMER_FIELD_UNSIGNED:
	case BLAMER_FIELD_DOUBLE:
		return 8;
	case BLAMER_FIELD_STRING_REF:
	case BLAMER_FIELD_RAW_REF:
		return 16;
	}
	return 0;
}

/* handle.c: a PROCESS or GLOBAL handle in a fork child: its field found
 * (inherited) or made again, empty, in the child's heap. */
static void *value_remake(struct bl_handle *hd, struct blamer *b, blamer_ref *ref)
{
	struct blamer_value *v = (struct blamer_value *)hd;
	struct blamer_userdata *u = scope_record(b, v->scope);
	struct blamer_field *f;
	enum found how;

	*ref = 0;
	if (!u)
		return NULL;
	f = find_or_add(b, u, v->type, v->name, v->cap, &how);
	if (!f)
		return NULL;
	if (how == FOUND_MADE)
		publish(f, v->type, empty_size(v->type));
	*ref = (uint64_t)(uintptr_t)f;
	return value_area(f);
}

/*
 * What a set returns for field @f: an ACTIVITY field's address, tagged
 * (it lives and dies with its activity), else the (scope, name) handle
 * from the context's table (handle.c), which survives a fork.
 */
static struct blamer_value *handle_of(struct blamer *b, unsigned scope, const char *name,
				      uint8_t type, uint32_t cap, struct blamer_field *f)
{
	size_t nlen;

	if (!f)
		return NULL;
	if (scope == BLAMER_DATA_ACTIVITY)
		return (struct blamer_value *)((uintptr_t)f | 1u);
	nlen = strlen(name);
	return bl_value_handle(b, scope, name, nlen, name_hash(name, nlen), type, (uint16_t)cap,
			       value_remake, f, value_area(f));
}

static struct blamer_value *set_scalar(struct blamer *b, unsigned scope, const char *name,
				       uint8_t type, uint64_t bits, uint16_t size)
{
	struct blamer_userdata *u;
	struct blamer_field *f;
	enum found how;

	b = bl_ctx(b);
	if (!b)
		return NULL;
	u = scope_record(b, scope);
	if (!u)
		return NULL;
	f = find_or_add(b, u, type, name, 8, &how);
	/* Another thread's field being made: our set is ordered before its
	 * first value, which overwrites ours anyway (not a loss: counted
	 * as BUSY all the same, the value never showed). */
	if (!f)
		return NULL;
	if (how == FOUND_OTHERS) {
		bl_drop(b, BLAMER_DROP_BUSY);
		return handle_of(b, scope, name, type, 8, f);
	}
	/* Relaxed: one atomic store is the whole update; a new field is
	 * published by the release of its header. */
	if (size == 1)
		st_relaxed(A8(value_area(f)), (uint8_t)bits);
	else
		st_relaxed(A64(value_area(f)), bits);
	if (how == FOUND_MADE)
		publish(f, type, size);
	return handle_of(b, scope, name, type, 8, f);
}

struct blamer_value *blamer_set_bool(struct blamer *b, unsigned scope, const char *name, bool v)
{
	return set_scalar(b, scope, name, BLAMER_FIELD_BOOL, v, 1);
}

struct blamer_value *blamer_set_char(struct blamer *b, unsigned scope, const char *name, char v)
{
	return set_scalar(b, scope, name, BLAMER_FIELD_CHAR, (uint8_t)v, 1);
}

struct blamer_value *blamer_set_int(struct blamer *b, unsigned scope, const char *name, int64_t v)
{
	return set_scalar(b, scope, name, BLAMER_FIELD_SIGNED, (uint64_t)v, 8);
}

struct blamer_value *blamer_set_uint(struct blamer *b, unsigned scope, const char *name,
				     uint64_t v)
{
	return set_scalar(b, scope, name, BLAMER_FIELD_UNSIGNED, v, 8);
}

struct blamer_value *blamer_set_double(struct blamer *b, unsigned scope, const char *name,
				       double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	return set_scalar(b, scope, name, BLAMER_FIELD_DOUBLE, bits, 8);
}

/* The value size stored for @len bytes asked into a field of @cap:
 * cut to it, and then marked (BLAMER_VALUE_CUT) and counted. */
static uint16_t stored_size(struct blamer *b, size_t len, uint32_t cap)
{
	if (len <= cap)
		return (uint16_t)len;
	bl_drop(b, BLAMER_DROP_STRING_CUT);
	return (uint16_t)(cap | BLAMER_VALUE_CUT);
}

/* Writes @len bytes under seq; cut to the field's capacity. False if
 * another writer holds the field (counted: our value is lost). */
static bool write_bytes(struct blamer *b, struct blamer_field *f, const void *v, size_t len)
{
	uint16_t seq = ld_relaxed(A16(&f->seq));
	uint32_t cap = value_capacity(f);
	uint16_t vs;

	/* Acquire: our writes to the value stay after the odd seq. */
	if ((seq & 1) ||
	    !atomic_compare_exchange_strong_explicit(A16(&f->seq), &seq, seq + 1,
						     memory_order_acquire, memory_order_relaxed)) {
		bl_drop(b, BLAMER_DROP_BUSY);
		return false;
	}
	/* Release fence: a reader that sees any of the bytes below also
	 * sees the odd seq (it re-checks seq after copying). */
	atomic_thread_fence(memory_order_release);
	st_relaxed(A16(&f->value_size), 0);
	vs = stored_size(b, len, cap);
	memcpy(value_area(f), v, BLAMER_VALUE_SIZE(vs));
	st_relaxed(A16(&f->value_size), vs);
	/* Release: the bytes and size are complete before seq is even. */
	st_release(A16(&f->seq), seq + 2);
	return true;
}

static struct blamer_value *set_bytes(struct blamer *b, unsigned scope, const char *name,
				      uint8_t type, const void *v, size_t len, size_t cap)
{
	struct blamer_userdata *u;
	struct blamer_field *f;
	enum found how;

	b = bl_ctx(b);
	if (!b)
		return NULL;
	u = scope_record(b, scope);
	if (!u)
		return NULL;
	if (cap > BLAMER_VALUE_AREA_MAX) {
		bl_error(EINVAL, "blamer: value of %s too large (at most %u bytes)", name,
			 BLAMER_VALUE_AREA_MAX);
		return NULL;
	}
	f = find_or_add(b, u, type, name, (uint32_t)cap, &how);
	if (!f)
		return NULL;
	if (how == FOUND_OTHERS) {
		bl_drop(b, BLAMER_DROP_BUSY);	/* as in set_scalar() */
	} else if (how == FOUND_MADE) {
		/* New field: no one reads its value yet, no seq needed. */
		uint16_t vs = stored_size(b, len, value_capacity(f));

		memcpy(value_area(f), v, BLAMER_VALUE_SIZE(vs));
		publish(f, type, vs);
	} else {
		write_bytes(b, f, v, len);
	}
	return handle_of(b, scope, name, type, (uint32_t)cap, f);
}

struct blamer_value *blamer_set_string(struct blamer *b, unsigned scope, const char *name,
				       const char *v)
{
	size_t len = v ? strlen(v) : 0;

	return set_bytes(b, scope, name, BLAMER_FIELD_STRING, v, len, len ? len : 8);
}

struct blamer_value *blamer_reserve_string(struct blamer *b, unsigned scope, const char *name,
					   size_t capacity)
{
	if (!capacity) {
		bl_error(EINVAL, "blamer: a reserved string has room for 1 byte or more");
		return NULL;
	}
	return set_bytes(b, scope, name, BLAMER_FIELD_STRING, "", 0, capacity);
}

struct blamer_value *blamer_set_raw(struct blamer *b, unsigned scope, const char *name,
				    const void *v, size_t len)
{
	return set_bytes(b, scope, name, BLAMER_FIELD_RAW, v, len, len ? len : 8);
}

static struct blamer_value *set_ref(struct blamer *b, unsigned scope, const char *name,
				    uint8_t type, const void *addr, size_t len)
{
	uint64_t v[2] = { (uint64_t)(uintptr_t)addr, len };

	return set_bytes(b, scope, name, type, v, sizeof(v), sizeof(v));
}

struct blamer_value *blamer_set_string_ref(struct blamer *b, unsigned scope, const char *name,
					   const char *addr, size_t len)
{
	return set_ref(b, scope, name, BLAMER_FIELD_STRING_REF, addr, len);
}

struct blamer_value *blamer_set_raw_ref(struct blamer *b, unsigned scope, const char *name,
					const void *addr, size_t len)
{
	return set_ref(b, scope, name, BLAMER_FIELD_RAW_REF, addr, len);
}

/* Handle updates: the field (made again in a fork child, handle.c), one
 * type check, one store. */

/* A write through @h that found no field of its type: lost, counted. An
 * ACTIVITY handle does not say its context: the default's counts. */
static __attribute__((noinline, cold)) void bad_write(struct blamer_value *h)
{
	bl_drop((uintptr_t)h & 1u ? bl_default_peek() : h->h.b, BLAMER_DROP_BAD_HANDLE);
}

/*
 * Where a write through @h of @type goes (any integer type with @ints):
 * the value's bytes, and *@fp its field (if @fp); NULL and the write counted as
 * lost if @h names no field of that type: a wrong type, or an ACTIVITY
 * handle whose activity is gone (a fork child has none of its parent's).
 * A PROCESS or GLOBAL handle knows its field's type (a published field
 * never changes type): one load of its record, none from the heap
 * before the write. Inline: it is most of a handle update.
 */
static inline __attribute__((always_inline)) uint8_t *
value_of(struct blamer_value *h, uint8_t type, bool ints, struct blamer_field **fp)
{
	uintptr_t a = (uintptr_t)h;
	struct blamer_field *f;
	uint8_t t;

	if (!h)
		return NULL;
	if (a & 1u) {
		f = (struct blamer_field *)(a & ~(uintptr_t)1u);
		t = ld_relaxed(A8(&f->type));
	} else {
		f = NULL;
		t = h->type;
	}
	if (__builtin_expect(!(t == type || (ints && (t == BLAMER_FIELD_SIGNED ||
						       t == BLAMER_FIELD_UNSIGNED))), 0)) {
		bad_write(h);
		return NULL;
	}
	if (f) {
		if (fp)
			*fp = f;
		return value_area(f);
	}
	/* made again in a fork child, if need be; NULL: counted there */
	a = (uintptr_t)bl_handle_rec(&h->h);
	if (fp)
		*fp = (struct blamer_field *)(uintptr_t)bl_handle_ref(&h->h);
	return (uint8_t *)a;
}

void blamer_value_bool(struct blamer_value *h, bool v)
{
	uint8_t *p = value_of(h, BLAMER_FIELD_BOOL, false, NULL);

	if (p)
		st_relaxed(A8(p), v);
}

void blamer_value_int(struct blamer_value *h, int64_t v)
{
	uint8_t *p = value_of(h, BLAMER_FIELD_SIGNED, false, NULL);

	if (p)
		st_relaxed(A64(p), (uint64_t)v);
}

void blamer_value_uint(struct blamer_value *h, uint64_t v)
{
	uint8_t *p = value_of(h, BLAMER_FIELD_UNSIGNED, false, NULL);

	if (p)
		st_relaxed(A64(p), v);
}

void blamer_value_double(struct blamer_value *h, double v)
{
	uint8_t *p = value_of(h, BLAMER_FIELD_DOUBLE, false, NULL);
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	if (p)
		st_relaxed(A64(p), bits);
}

void blamer_value_add(struct blamer_value *h, int64_t delta)
{
	uint8_t *p = value_of(h, BLAMER_FIELD_SIGNED, true, NULL);

	/* Relaxed: a counter; readers want the value, not an ordering. */
	if (p)
		atomic_fetch_add_explicit(A64(p), (uint64_t)delta, memory_order_relaxed);
}

void blamer_value_string(struct blamer_value *h, const char *v)
{
	struct blamer_field *f;
	uint8_t *p = value_of(h, BLAMER_FIELD_STRING, false, &f);

	if (p && v)
		write_bytes((uintptr_t)h & 1u ? bl_default_peek() : h->h.b, f, v, strlen(v));
}
