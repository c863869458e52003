// SPDX-License-Identifier: MIT
/*
 * Typed user data: named fields in a USERDATA record, set and overwritten
 * in place without locks (format: heap_format.h, struct blamer_field).
 *
 * Invariants:
 *  - Space for a field is claimed by a CAS on the record's used; the
 *    field's type is stored last (release), so a field of type END is one
 *    being made and a walker stops there.
 *  - Scalars are single atomic stores (no torn values, nothing to retry);
 *    strings and bytes go under the field's seq (odd while writing). Two
 *    threads setting the same string at once: the one that does not win
 *    the seq CAS drops its value (writers never wait).
 *  - A name is looked up by walking the fields; concurrent first sets of
 *    one name may make two fields, readers show the last one.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "atomic.h"
#include "context.h"

#define FIELD_HDR	8u
#define ACTIVITY_DATA_BYTES	1024u

static uint32_t pad8(uint32_t n)
{
	return (n + 7) & ~7u;
}

/* The calling thread's top activity's data record, made if needed. */
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

		if (bl_heap_change_type(&b->heap, s, BLAMER_REC_USERDATA,
					BLAMER_RETIRED(BLAMER_REC_USERDATA), true)) {
			ref = s;
			u = bl_ptr(&b->heap, ref);
			u->scope = BLAMER_DATA_ACTIVITY;
			u->capacity = u->hdr.size - sizeof(*u);
			bl_owner_set(b, &u->owner);
		}
	}
	if (!ref)
		ref = bl_userdata_new(b, BLAMER_DATA_ACTIVITY, ACTIVITY_DATA_BYTES);
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
		ref = b->global_data;
		break;
	case BLAMER_DATA_PROCESS:
		ref = b->process_data;
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

static uint8_t *value_area(struct blamer_field *f)
{
	return (uint8_t *)f + FIELD_HDR + pad8(f->name_size);
}

static uint32_t value_capacity(struct blamer_field *f)
{
	return f->record_size - FIELD_HDR - pad8(f->name_size);
}

static struct blamer_field *find_or_add(struct blamer_userdata *u, uint8_t type,
					const char *name, uint32_t cap)
{
	size_t nlen = name ? strlen(name) : 0;
	uint32_t off = 0, used, rs;
	struct blamer_field *f;

	if (!nlen || nlen > 255) {
		bl_error(EINVAL, "blamer: a field name has 1 to 255 bytes");
		return NULL;
	}
	/* Acquire: pairs with the release CAS that claimed space, so the
	 * headers of fields below used are (being) written by their maker. */
	used = ld_acquire(A32(&u->used));
	if (used > u->capacity)
		return NULL;
	while (off + FIELD_HDR <= used) {
		f = (void *)(u->fields + off);
		/* Acquire: pairs with the type's release: header and name are
		 * complete if the type is not END. */
		if (ld_acquire(A8(&f->type)) == BLAMER_FIELD_END)
			break;
		rs = f->record_size;
		if (rs < FIELD_HDR || rs % 8 || off + rs > used)
			break;
		if (f->name_size == nlen && !memcmp(f + 1, name, nlen)) {
			if (f->type != type) {
				bl_error(EINVAL, "blamer: field %s has another type", name);
				return NULL;
			}
			return f;
		}
		off += rs;
	}
	rs = FIELD_HDR + pad8((uint32_t)nlen) + pad8(cap ? cap : 8);
	if (rs > 0xffff) {
		bl_error(EINVAL, "blamer: field %s too large", name);
		return NULL;
	}
	do {
		if (used + rs > u->capacity) {
			bl_error(ENOSPC, "blamer: no room for field %s", name);
			return NULL;
		}
	/* Release: not needed for the claim itself (the field publishes
	 * through its type), but cheap and keeps used monotonic for readers. */
	} while (!atomic_compare_exchange_weak_explicit(A32(&u->used), &used, used + rs,
							memory_order_release,
							memory_order_acquire));
	f = (void *)(u->fields + used);
	f->name_size = (uint8_t)nlen;
	f->record_size = (uint16_t)rs;
	memcpy(f + 1, name, nlen);
	return f;	/* type still END: the caller writes the value, then publishes */
}

static void publish(struct blamer_field *f, uint8_t type, uint16_t value_size)
{
	st_relaxed(A16(&f->value_size), value_size);
	/* Release: readers that see the type see name and value. */
	st_release(A8(&f->type), type);
}

static struct blamer_value *set_scalar(struct blamer *b, unsigned scope, const char *name,
				       uint8_t type, uint64_t bits, uint16_t size)
{
	struct blamer_userdata *u;
	struct blamer_field *f;
	bool fresh;

	b = bl_ctx(b);
	if (!b)
		return NULL;
	u = scope_record(b, scope);
	if (!u)
		return NULL;
	f = find_or_add(u, type, name, 8);
	if (!f)
		return NULL;
	fresh = ld_relaxed(A8(&f->type)) == BLAMER_FIELD_END;
	/* Relaxed: one atomic store is the whole update; for a new field the
	 * release of its type publishes it. */
	if (size == 1)
		st_relaxed(A8(value_area(f)), (uint8_t)bits);
	else
		st_relaxed(A64(value_area(f)), bits);
	if (fresh)
		publish(f, type, size);
	return (struct blamer_value *)f;
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

/* Writes @len bytes under seq; cut to the field's capacity. False if
 * another writer holds the field. */
static bool write_bytes(struct blamer_field *f, const void *v, size_t len)
{
	uint16_t seq = ld_relaxed(A16(&f->seq));
	uint32_t cap = value_capacity(f);

	if (seq & 1)
		return false;
	/* Acquire: our writes to the value stay after the odd seq. */
	if (!atomic_compare_exchange_strong_explicit(A16(&f->seq), &seq, seq + 1,
						     memory_order_acquire, memory_order_relaxed))
		return false;
	/* Release fence: a reader that sees any of the bytes below also
	 * sees the odd seq (it re-checks seq after copying). */
	atomic_thread_fence(memory_order_release);
	st_relaxed(A16(&f->value_size), 0);
	if (len > cap)
		len = cap;
	memcpy(value_area(f), v, len);
	st_relaxed(A16(&f->value_size), (uint16_t)len);
	/* Release: the bytes and size are complete before seq is even. */
	st_release(A16(&f->seq), seq + 2);
	return true;
}

static struct blamer_value *set_bytes(struct blamer *b, unsigned scope, const char *name,
				      uint8_t type, const void *v, size_t len, size_t cap)
{
	struct blamer_userdata *u;
	struct blamer_field *f;

	b = bl_ctx(b);
	if (!b)
		return NULL;
	u = scope_record(b, scope);
	if (!u)
		return NULL;
	if (cap > 0xffff - 8 - 256) {
		bl_error(EINVAL, "blamer: value of %s too large", name);
		return NULL;
	}
	f = find_or_add(u, type, name, (uint32_t)cap);
	if (!f)
		return NULL;
	if (ld_relaxed(A8(&f->type)) == BLAMER_FIELD_END) {
		/* New field: nobody else can see it yet, no seq needed. */
		len = len > value_capacity(f) ? value_capacity(f) : len;
		memcpy(value_area(f), v, len);
		publish(f, type, (uint16_t)len);
	} else {
		write_bytes(f, v, len);
	}
	return (struct blamer_value *)f;
}

struct blamer_value *blamer_set_string(struct blamer *b, unsigned scope, const char *name,
				       const char *v)
{
	size_t len = v ? strlen(v) : 0;

	return set_bytes(b, scope, name, BLAMER_FIELD_STRING, v, len, len ? len : 8);
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

/* Handle updates: one type check, one atomic store, no lookup. */
static struct blamer_field *typed(struct blamer_value *h, uint8_t type)
{
	struct blamer_field *f = (struct blamer_field *)h;

	return f && ld_relaxed(A8(&f->type)) == type ? f : NULL;
}

void blamer_value_bool(struct blamer_value *h, bool v)
{
	struct blamer_field *f = typed(h, BLAMER_FIELD_BOOL);

	if (f)
		st_relaxed(A8(value_area(f)), v);
}

void blamer_value_int(struct blamer_value *h, int64_t v)
{
	struct blamer_field *f = typed(h, BLAMER_FIELD_SIGNED);

	if (f)
		st_relaxed(A64(value_area(f)), (uint64_t)v);
}

void blamer_value_uint(struct blamer_value *h, uint64_t v)
{
	struct blamer_field *f = typed(h, BLAMER_FIELD_UNSIGNED);

	if (f)
		st_relaxed(A64(value_area(f)), v);
}

void blamer_value_double(struct blamer_value *h, double v)
{
	struct blamer_field *f = typed(h, BLAMER_FIELD_DOUBLE);
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	if (f)
		st_relaxed(A64(value_area(f)), bits);
}

void blamer_value_add(struct blamer_value *h, int64_t delta)
{
	struct blamer_field *f = (struct blamer_field *)h;
	uint8_t t = f ? ld_relaxed(A8(&f->type)) : 0;

	/* Relaxed: a counter; readers want the value, not an ordering. */
	if (t == BLAMER_FIELD_SIGNED || t == BLAMER_FIELD_UNSIGNED)
		atomic_fetch_add_explicit(A64(value_area(f)), (uint64_t)delta,
					  memory_order_relaxed);
}

void blamer_value_string(struct blamer_value *h, const char *v)
{
	struct blamer_field *f = typed(h, BLAMER_FIELD_STRING);

	if (f && v)
		write_bytes(f, v, strlen(v));
}
