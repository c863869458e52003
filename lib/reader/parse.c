// SPDX-License-Identifier: MIT
/*
 * Parse one heap (its slabs already ordered) into a blamer_snap_process.
 *
 * Every access goes through rd_copy(), which bounds-checks the reference
 * against the trusted slab size and copies into a local. Walks are
 * bounded (visited-set on the iterable list, counts capped by what fits
 * in the slab). Records that keep changing under us are retried
 * h->retries times, then counted as torn and left out. Anything invalid
 * marks the heap corrupt with the first reason; what can still be read
 * is kept.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "internal.h"

#define SLAB_HDR	sizeof(struct blamer_slab_header)
#define HEAP_HDR_OFF	SLAB_HDR
#define ALIGN8(x)	(((x) + 7u) & ~7u)

void rd_slab_drop(struct rd_slab *s)
{
	if (s->unmap && s->buf)
		munmap(s->buf, s->size);
	else if (s->owned)
		free(s->buf);
	if (s->fd >= 0)
		close(s->fd);
	s->buf = NULL;
	s->fd = -1;
	s->unmap = s->owned = false;
}

/* Copy len bytes at (slab, off) without the record-offset rule. */
static bool copy_raw(const struct rd_heap *h, uint32_t slab, uint64_t off,
		     size_t len, void *dst)
{
	const struct rd_slab *s;

	if (slab >= h->nslabs)
		return false;
	s = &h->slabs[slab];
	if (!s->buf || off > s->size || len > s->size - off)
		return false;
	memcpy(dst, s->buf + off, len);
	return true;
}

/* A record reference: not null, 8-aligned, past the slab header, in range. */
static bool rd_copy(const struct rd_heap *h, blamer_ref ref, size_t len, void *dst)
{
	uint32_t off = blamer_ref_offset(ref);

	if (off < SLAB_HDR || off % BLAMER_ALIGN)
		return false;
	return copy_raw(h, blamer_ref_slab(ref), off, len, dst);
}

/*
 * Counters a live writer keeps adding to: @n u64 at @ref, each read with
 * one 8-byte load where the copy is aligned (a byte-wise copy could tear
 * a value, and a counter that looks smaller than before is a reset to
 * Prometheus). Bounds as rd_copy().
 */
static bool rd_load_u64s(const struct rd_heap *h, blamer_ref ref, size_t n, uint64_t *dst)
{
	uint32_t off = blamer_ref_offset(ref), slab = blamer_ref_slab(ref);
	const uint8_t *src;
	size_t i;

	if (!rd_copy(h, ref, n * sizeof(*dst), dst))
		return false;
	src = h->slabs[slab].buf + off;
	if ((uintptr_t)src % sizeof(*dst))
		return true;	/* caller's unaligned buffer: no writer there */
	for (i = 0; i < n; i++)
		dst[i] = __atomic_load_n((const uint64_t *)src + i, __ATOMIC_RELAXED);
	return true;
}

/*
 * Re-fetch a range from its source before a re-read. Device slabs are live
 * mappings (nothing to do); dir slabs are private copies, re-read with
 * pread() so a record torn in the first bulk copy can be seen whole.
 * A short read (file truncated) keeps the old bytes: never a fault.
 */
static void rd_refresh(const struct rd_heap *h, blamer_ref ref, size_t len)
{
	uint32_t slab = blamer_ref_slab(ref), off = blamer_ref_offset(ref);
	const struct rd_slab *s;

	if (slab >= h->nslabs)
		return;
	s = &h->slabs[slab];
	if (s->fd < 0 || !s->owned || off > s->size || len > s->size - off)
		return;
	if (pread(s->fd, s->buf + off, len, off) < 0)
		return;
}

static void fence(void)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
}

/* Make a fixed char array printable and NUL-terminated (dst has n+1). */
static void sanitize(char *dst, const char *src, size_t n)
{
	size_t i;

	for (i = 0; i < n && src[i]; i++) {
		unsigned char c = (unsigned char)src[i];

		dst[i] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
	}
	dst[i] = '\0';
}

/* Grow a dynamic array by one element; NULL when the cap or memory is hit. */
static void *push(void **arr, size_t *n, size_t elsz, struct blamer_snap_process *p)
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

/* Visited set of list references (open addressing), for loop detection. */
struct refset {
	uint64_t *v;
	size_t cap, n;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* 1 inserted, 0 already there, -1 out of memory */
static int refset_add(struct refset *s, uint64_t ref)
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

/* ---- records ---- */

struct ctx {
	struct rd_heap *h;
	struct blamer_snap_process *p;
	int64_t pid, stamp;	/* owner identity of the process record */
	blamer_ref ud_process, ud_global;	/* first list USERDATA by scope */
	blamer_ref logs[16];
	unsigned nlogs;
	struct bl_clock clock;	/* the heap's activity clock */
	struct bl_clock now;	/* ours, taken after the first stamps were read */
	bool have_now;
	struct refset shards;	/* DAG shards summed so far: each counts once */
};

/* An activity timestamp as CLOCK_MONOTONIC ns (0: unknown). Called after
 * the stamp was copied, so the reader's pair comes after it. */
static uint64_t stamp_ns(struct ctx *c, uint64_t stamp)
{
	if (c->clock.kind == BLAMER_CLOCK_TSC && !c->have_now) {
		bl_clock_start(&c->now, BLAMER_CLOCK_TSC);
		c->have_now = true;
	}
	return bl_clock_to_ns(&c->clock, &c->now, stamp);
}

/* Validate a block header at ref for a record of at least min bytes. */
static bool get_block(struct ctx *c, blamer_ref ref, size_t min, uint32_t type,
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

/* Per-process records carry the owner; data_id 0 = not (or no longer) valid. */
static bool owner_ok(struct ctx *c, const struct blamer_owner *o)
{
	if (!o->data_id)
		return false;
	if (c->p->have_record && (o->pid != c->pid || o->create_stamp != c->stamp))
		return false;	/* left over from another owner: not ours */
	return true;
}

static void parse_process(struct ctx *c, blamer_ref ref)
{
	struct blamer_process r;
	struct blamer_block b;
	uint32_t i, n;

	if (!get_block(c, ref, sizeof(r), BLAMER_REC_PROCESS, &b) ||
	    !rd_copy(c->h, ref, sizeof(r), &r) || !r.owner.data_id)
		return;
	c->p->have_record = true;
	c->pid = r.owner.pid;
	c->stamp = r.owner.create_stamp;
	c->p->rec_pid = r.owner.pid;
	c->p->phase = r.phase;
	n = r.cmdline_len < BLAMER_CMDLINE_MAX ? r.cmdline_len : BLAMER_CMDLINE_MAX;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)r.cmdline[i];

		c->p->cmdline[i] = ch == 0 ? ' ' : (ch < 0x20 || ch >= 0x7f) ? '?' : (char)ch;
	}
	while (n && c->p->cmdline[n - 1] == ' ')
		n--;
	c->p->cmdline[n] = '\0';
	/* stash scope refs for later; parsed once the list is walked */
	c->ud_process = r.user_data;
	c->ud_global = r.global_data;
	if (r.log && c->nlogs < 16)
		c->logs[c->nlogs++] = r.log;
}

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
static int decode_fields(struct ctx *c, const uint8_t *a, const uint8_t *b,
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
		namepad = ALIGN8((uint32_t)fa.name_size);
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
		sf = push((void **)&out->v, &out->n, sizeof(*sf), c->p);
		if (!sf)
			return -1;
		sf->type = fa.type;
		sf->name = malloc((size_t)fa.name_size + 1);
		if (!sf->name) {
			out->n--;
			rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			return -1;
		}
		sanitize(sf->name, (const char *)a + pos + sizeof(fa), fa.name_size);
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

static void parse_userdata(struct ctx *c, blamer_ref ref, struct blamer_snap_fields *out)
{
	struct blamer_userdata u, u2;
	struct blamer_block b;
	uint8_t *a = NULL, *bb = NULL;
	uint32_t used, attempt;
	int torn = 0;

	if (!ref || out->n)
		return;
	if (!get_block(c, ref, sizeof(u), BLAMER_REC_USERDATA, &b) ||
	    !rd_copy(c->h, ref, sizeof(u), &u) || !owner_ok(c, &u.owner))
		return;
	if (u.capacity > b.size - sizeof(u)) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "user data at %#llx: capacity %u too big",
			   (unsigned long long)ref, u.capacity);
		return;
	}
	for (attempt = 0; attempt <= c->h->retries; attempt++) {
		used = u.used < u.capacity ? u.used : u.capacity;
		free(a);
		free(bb);
		a = malloc(used + 1);
		bb = malloc(used + 1);
		if (!a || !bb) {
			rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			goto out;
		}
		if (!rd_copy(c->h, ref + sizeof(u), used, a))
			goto out;
		fence();
		rd_refresh(c->h, ref, sizeof(u) + used);
		if (!rd_copy(c->h, ref + sizeof(u), used, bb) ||
		    !rd_copy(c->h, ref, sizeof(u2), &u2))
			goto out;
		rd_fields_free(out);
		torn = decode_fields(c, a, bb, used, out);
		if (torn <= 0)
			break;
		u = u2;
		if (u.capacity > b.size - sizeof(u))
			break;
	}
	if (torn > 0)
		c->p->torn_records++;
out:
	free(a);
	free(bb);
}

static void parse_thread(struct ctx *c, blamer_ref ref)
{
	struct blamer_thread t, t2;
	struct blamer_block b;
	struct blamer_snap_thread *st;
	struct blamer_activity *acts = NULL;
	uint32_t attempt, n = 0, max_slots, i;
	bool ok = false;

	if (!get_block(c, ref, sizeof(t), BLAMER_REC_THREAD, &b) ||
	    !rd_copy(c->h, ref, sizeof(t), &t) || !owner_ok(c, &t.owner))
		return;
	max_slots = (b.size - sizeof(t)) / sizeof(struct blamer_activity);
	for (attempt = 0; attempt <= c->h->retries; attempt++) {
		if (t.stack_slots > max_slots) {
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
				   "thread at %#llx: %u stack slots in a %u-byte record",
				   (unsigned long long)ref, t.stack_slots, b.size);
			free(acts);
			return;
		}
		n = t.depth < t.stack_slots ? t.depth : t.stack_slots;
		free(acts);
		acts = calloc(n ? n : 1, sizeof(*acts));
		if (!acts) {
			rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			return;
		}
		if (n && !rd_copy(c->h, ref + sizeof(t), (size_t)n * sizeof(*acts), acts))
			break;
		fence();
		rd_refresh(c->h, ref, sizeof(t) + (size_t)n * sizeof(*acts));
		if (!rd_copy(c->h, ref, sizeof(t2), &t2))
			break;
		if (t2.data_version == t.data_version && t2.depth == t.depth &&
		    t2.stack_slots == t.stack_slots) {
			ok = true;
			break;
		}
		t = t2;		/* changed under us: read again */
	}
	st = push((void **)&c->p->threads, &c->p->nthreads, sizeof(*st), c->p);
	if (!st) {
		free(acts);
		return;
	}
	st->tid = t.tid;
	st->start_time_ns = t.start_time_ns;
	sanitize(st->name, t.name, BLAMER_NAME_MAX);
	st->depth = t.depth;
	st->stack_slots = t.stack_slots;
	st->overflows = t.overflows;
	if (!ok) {
		st->torn = true;
		c->p->torn_records++;
		free(acts);
		return;
	}
	st->acts = calloc(n ? n : 1, sizeof(*st->acts));
	if (!st->acts) {
		free(acts);
		rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
		return;
	}
	st->nacts = n;
	for (i = 0; i < n; i++) {
		struct blamer_snap_activity *sa = &st->acts[i];

		sa->time_ns = stamp_ns(c, acts[i].timestamp);
		sa->calling_address = acts[i].calling_address;
		sa->data[0] = acts[i].data[0];
		sa->data[1] = acts[i].data[1];
		sa->kind = acts[i].kind;
		sanitize(sa->label, acts[i].label, sizeof(acts[i].label));
		if (acts[i].user_data)
			parse_userdata(c, acts[i].user_data, &sa->fields);
	}
	free(acts);
}

static void parse_module(struct ctx *c, blamer_ref ref)
{
	struct blamer_module m;
	struct blamer_block b;
	struct blamer_snap_module *sm;
	uint32_t attempt, seq2;
	bool ok = false;

	if (!get_block(c, ref, sizeof(m), BLAMER_REC_MODULE, &b))
		return;
	for (attempt = 0; attempt <= c->h->retries; attempt++) {
		if (!rd_copy(c->h, ref, sizeof(m), &m))
			return;
		fence();
		rd_refresh(c->h, ref, sizeof(m));
		if (!rd_copy(c->h, ref + offsetof(struct blamer_module, seq), 4, &seq2))
			return;
		if (!(m.seq & 1) && seq2 == m.seq) {
			ok = true;
			break;
		}
	}
	if (!owner_ok(c, &m.owner))
		return;
	if (!ok) {
		c->p->torn_records++;
		return;
	}
	sm = push((void **)&c->p->modules, &c->p->nmodules, sizeof(*sm), c->p);
	if (!sm)
		return;
	sanitize(sm->path, m.path, m.path_len < BLAMER_PATH_MAX ? m.path_len : BLAMER_PATH_MAX);
	sm->base = m.base;
	sm->size = m.size;
	sm->loaded = m.loaded != 0;
	sm->build_id_len = m.build_id_len < BLAMER_BUILD_ID_MAX ? m.build_id_len
								   : BLAMER_BUILD_ID_MAX;
	memcpy(sm->build_id, m.build_id, sm->build_id_len);
}

static int log_cmp(const void *a, const void *b)
{
	const struct blamer_snap_log *x = a, *y = b;

	return x->number < y->number ? -1 : x->number > y->number;
}

static void parse_log(struct ctx *c, blamer_ref ref)
{
	struct blamer_log l;
	struct blamer_block b;
	uint32_t i, nslots;

	if (!get_block(c, ref, sizeof(l), BLAMER_REC_LOG, &b) ||
	    !rd_copy(c->h, ref, sizeof(l), &l) || !owner_ok(c, &l.owner))
		return;
	nslots = (b.size - sizeof(l)) / sizeof(struct blamer_log_slot);
	if (l.slot_count > nslots) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "log at %#llx: %u slots in %u bytes",
			   (unsigned long long)ref, l.slot_count, b.size);
		return;
	}
	for (i = 0; i < l.slot_count; i++) {
		blamer_ref sref = ref + sizeof(l) + (uint64_t)i * sizeof(struct blamer_log_slot);
		struct blamer_log_slot s;
		struct blamer_snap_log *sl;
		uint32_t seq2, attempt;
		bool ok = false;

		for (attempt = 0; attempt <= c->h->retries; attempt++) {
			if (!rd_copy(c->h, sref, sizeof(s), &s))
				return;
			fence();
			rd_refresh(c->h, sref, sizeof(s));
			if (!rd_copy(c->h, sref, 4, &seq2))
				return;
			if (!(s.seq & 1) && s.seq == seq2) {
				ok = true;
				break;
			}
		}
		if (!ok) {
			c->p->torn_records++;
			continue;
		}
		/* never written, or overwritten since head moved on */
		if (!s.seq || s.number >= l.head || l.head - s.number > l.slot_count)
			continue;
		sl = push((void **)&c->p->logs, &c->p->nlogs, sizeof(*sl), c->p);
		if (!sl)
			return;
		sl->number = s.number;
		sl->time_ns = s.time_ns;
		sanitize(sl->text, s.text, s.len < BLAMER_LOG_MSG_MAX ? s.len : BLAMER_LOG_MSG_MAX);
	}
}

static void parse_child(struct ctx *c, blamer_ref ref)
{
	struct blamer_child r;
	struct blamer_block b;
	struct blamer_snap_child *sc;

	if (!get_block(c, ref, sizeof(r), BLAMER_REC_CHILD, &b) ||
	    !rd_copy(c->h, ref, sizeof(r), &r) || !owner_ok(c, &r.owner))
		return;
	sc = push((void **)&c->p->children, &c->p->nchildren, sizeof(*sc), c->p);
	if (!sc)
		return;
	sc->pid = r.child_pid;
	sc->launch_time_ns = r.launch_time_ns;
	sc->exit_time_ns = r.exit_time_ns;
	sc->exit_status = r.exit_status;
	sc->state = r.state;
}

static void parse_node(struct ctx *c, blamer_ref ref)
{
	struct blamer_dag_node r;
	struct blamer_block b;
	struct blamer_snap_node *sn;

	if (!get_block(c, ref, sizeof(r), BLAMER_REC_DAG_NODE, &b) ||
	    !rd_copy(c->h, ref, sizeof(r), &r) || !owner_ok(c, &r.owner))
		return;
	sn = push((void **)&c->p->nodes, &c->p->nnodes, sizeof(*sn), c->p);
	if (!sn)
		return;
	sn->id = r.id;
	sn->type = r.node_type;
	sanitize(sn->name, r.name, BLAMER_NAME_MAX);
}

static void parse_edge(struct ctx *c, blamer_ref ref)
{
	struct blamer_dag_edge r;
	struct blamer_block b;
	struct blamer_snap_edge *se;

	if (!get_block(c, ref, sizeof(r), BLAMER_REC_DAG_EDGE, &b) ||
	    !rd_copy(c->h, ref, sizeof(r), &r) || !owner_ok(c, &r.owner))
		return;
	se = push((void **)&c->p->edges, &c->p->nedges, sizeof(*se), c->p);
	if (!se)
		return;
	se->parent = r.parent_id;
	se->child = r.child_id;
}

/*
 * Adds to @sum the values of the shards on the chain from @ref of the
 * path at @path (unsigned, wrapping like the writer's adds). A shard is
 * on one chain, once; one met twice (a loop, or chains that merge), one
 * that is not a shard of this path, or a bad link is corruption: the
 * walk stops there and the sum keeps what came before.
 */
static void add_shards(struct ctx *c, blamer_ref path, blamer_ref ref, uint64_t *sum)
{
	for (; ref; ) {
		struct blamer_dag_shard s;
		uint64_t v[BLAMER_DAG_MAX_UNITS];
		struct blamer_block b;
		int fresh = refset_add(&c->shards, ref);
		uint32_t i;

		if (fresh <= 0) {
			if (fresh < 0)
				rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			else
				rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
					   "path at %#llx: shard %#llx is on a chain twice",
					   (unsigned long long)path, (unsigned long long)ref);
			return;
		}
		if (!get_block(c, ref, sizeof(b), 0, &b))
			return;
		if (b.type != BLAMER_REC_DAG_SHARD || b.size < sizeof(s) ||
		    !rd_copy(c->h, ref, sizeof(s), &s) || !owner_ok(c, &s.owner) ||
		    s.path != path) {
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
				   "path at %#llx: %#llx is not one of its shards",
				   (unsigned long long)path, (unsigned long long)ref);
			return;
		}
		if (!rd_load_u64s(c->h, ref + offsetof(struct blamer_dag_shard, values),
				  BLAMER_DAG_MAX_UNITS, v))
			return;
		for (i = 0; i < BLAMER_DAG_MAX_UNITS; i++)
			sum[i] += v[i];
		ref = s.next_shard;
	}
}

static void parse_path(struct ctx *c, blamer_ref ref)
{
	uint64_t sum[BLAMER_DAG_MAX_UNITS];
	struct blamer_dag_path r;
	struct blamer_block b;
	struct blamer_snap_path *sp;
	uint32_t i;

	if (!get_block(c, ref, sizeof(r), BLAMER_REC_DAG_PATH, &b) ||
	    !rd_copy(c->h, ref, sizeof(r), &r) || !owner_ok(c, &r.owner))
		return;
	if (r.depth == 0 || r.depth > BLAMER_DAG_MAX_DEPTH) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "path at %#llx: depth %u",
			   (unsigned long long)ref, r.depth);
		return;
	}
	if (!rd_load_u64s(c->h, ref + offsetof(struct blamer_dag_path, values),
			  BLAMER_DAG_MAX_UNITS, sum))
		return;
	add_shards(c, ref, r.shards, sum);
	sp = push((void **)&c->p->paths, &c->p->npaths, sizeof(*sp), c->p);
	if (!sp)
		return;
	sp->depth = r.depth;
	memcpy(sp->nodes, r.nodes, r.depth * sizeof(r.nodes[0]));
	for (i = 0; i < BLAMER_DAG_MAX_UNITS; i++) {
		if (r.units[i] == BLAMER_UNIT_NONE && sum[i] == 0)
			continue;
		sp->units[sp->nvalues] = r.units[i];
		sp->values[sp->nvalues++] = sum[i];
	}
}

static void dispatch(struct ctx *c, blamer_ref ref, uint32_t type)
{
	switch (type) {
	case BLAMER_REC_PROCESS:
		if (!c->p->have_record)
			parse_process(c, ref);
		break;
	case BLAMER_REC_THREAD: parse_thread(c, ref); break;
	case BLAMER_REC_MODULE: parse_module(c, ref); break;
	case BLAMER_REC_LOG:
		if (c->nlogs < 16)
			c->logs[c->nlogs++] = ref;
		break;
	case BLAMER_REC_CHILD: parse_child(c, ref); break;
	case BLAMER_REC_DAG_NODE: parse_node(c, ref); break;
	case BLAMER_REC_DAG_EDGE: parse_edge(c, ref); break;
	case BLAMER_REC_DAG_PATH: parse_path(c, ref); break;
	case BLAMER_REC_DAG_SHARD: break;	/* summed through its path's chain */
	case BLAMER_REC_USERDATA: {
		struct blamer_userdata u;

		if (!rd_copy(c->h, ref, sizeof(u), &u))
			break;
		if (u.scope == BLAMER_DATA_PROCESS && !c->ud_process)
			c->ud_process = ref;
		else if (u.scope == BLAMER_DATA_GLOBAL && !c->ud_global)
			c->ud_global = ref;
		break;
	}
	default:
		break;	/* retired, transitioning, or newer than us: skip */
	}
}

static void walk_list(struct ctx *c, const struct blamer_heap_header *hh)
{
	struct blamer_block b;
	struct refset seen = { 0 };
	blamer_ref ref = hh->list_head;
	uint64_t total = 0, limit, count = 0;
	uint32_t i;

	if (!ref)
		return;
	for (i = 0; i < c->h->nslabs; i++)
		total += c->h->slabs[i].size;
	limit = total / sizeof(struct blamer_block) + 1;
	if (!rd_copy(c->h, ref, sizeof(b), &b) || b.cookie != BLAMER_BLOCK_QUEUE) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "list head %#llx is not a queue block",
			   (unsigned long long)ref);
		return;
	}
	refset_add(&seen, ref);
	/* circular through the dummy head; next == 0: the end (mid-append) */
	for (ref = b.next; ref && ref != hh->list_head; ref = b.next) {
		int r = refset_add(&seen, ref);

		if (r < 0) {
			rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			break;
		}
		if (r == 0 || ++count > limit) {
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "record list loops at %#llx",
				   (unsigned long long)ref);
			break;
		}
		if (!get_block(c, ref, sizeof(b), 0, &b))
			break;
		dispatch(c, ref, b.type);
	}
	free(seen.v);
}

bool rd_heap_order(struct rd_heap *h, struct rd_slab *raw, uint32_t n)
{
	struct blamer_slab_header sh, sh0;
	uint64_t heap_id = 0;
	bool have0 = false;
	uint32_t i, other_version = 0;

	h->nslabs = 0;
	for (i = 0; i < n; i++) {
		if (raw[i].size < SLAB_HDR || !raw[i].buf)
			continue;
		memcpy(&sh, raw[i].buf, sizeof(sh));
		if (sh.magic == BLAMER_HEAP_MAGIC && sh.slab_index == 0 &&
		    sh.version == BLAMER_HEAP_VERSION && !have0) {
			have0 = true;
			heap_id = sh.heap_id;
			sh0 = sh;
		} else if (sh.magic == BLAMER_HEAP_MAGIC && sh.slab_index == 0) {
			other_version = sh.version;
		}
	}
	if (!have0 && other_version) {
		rd_problem(h->p, BLAMER_HEALTH_UNREADABLE,
			   "heap format version %u (this reader reads %u)", other_version,
			   BLAMER_HEAP_VERSION);
		return false;
	}
	if (!have0) {
		rd_problem(h->p, BLAMER_HEALTH_EMPTY, "no initialized slab 0");
		return false;
	}
	(void)sh0;
	for (i = 0; i < n; i++) {
		if (raw[i].size < SLAB_HDR || !raw[i].buf)
			continue;
		memcpy(&sh, raw[i].buf, sizeof(sh));
		if (sh.magic == 0 && sh.heap_id == 0)
			continue;	/* created, not yet initialized: being added */
		if (sh.magic != BLAMER_HEAP_MAGIC || sh.version != BLAMER_HEAP_VERSION ||
		    sh.header_size != SLAB_HDR || sh.slab_index >= BLAMER_MAX_SLABS ||
		    sh.heap_id != heap_id) {
			rd_problem(h->p, BLAMER_HEALTH_CORRUPT,
				   "slab %llu: bad slab header (magic %#x, index %u)",
				   (unsigned long long)raw[i].id, sh.magic, sh.slab_index);
			continue;
		}
		if (sh.slab_index >= n) {
			rd_problem(h->p, BLAMER_HEALTH_CORRUPT,
				   "slab %llu claims index %u of %u",
				   (unsigned long long)raw[i].id, sh.slab_index, n);
			continue;
		}
		if (h->slabs[sh.slab_index].buf) {
			rd_problem(h->p, BLAMER_HEALTH_CORRUPT, "two slabs claim index %u",
				   sh.slab_index);
			continue;
		}
		h->slabs[sh.slab_index] = raw[i];
		h->slabs[sh.slab_index].index = sh.slab_index;
	}
	/* usable slabs: the prefix without holes */
	for (i = 0; i < n && h->slabs[i].buf; i++)
		;
	h->nslabs = i;
	return true;
}

void rd_heap_parse(struct rd_heap *h)
{
	struct blamer_heap_header hh;
	struct blamer_snap_process *p = h->p;
	struct ctx c = { .h = h, .p = p };
	uint32_t i, nvalid;
	uint64_t used = 0;

	for (i = 0; i < h->nslabs; i++) {
		struct blamer_slab_header sh;

		uint64_t sz = h->slabs[i].real_size ? h->slabs[i].real_size : h->slabs[i].size;

		if (copy_raw(h, i, 0, sizeof(sh), &sh))
			used += sh.freeptr < sz ? sh.freeptr : sz;
	}
	p->used = used;
	if (!copy_raw(h, 0, HEAP_HDR_OFF, sizeof(hh), &hh)) {
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "slab 0 too small for the heap header");
		return;
	}
	p->heap_state = hh.state;
	p->heap_flags = hh.flags;
	p->heap_create_time_ns = hh.create_time_ns;
	c.clock.kind = hh.clock;
	c.clock.anchor_tsc = hh.clock_anchor_tsc;
	c.clock.anchor_ns = hh.clock_anchor_ns;
	if (hh.state == BLAMER_HEAP_UNINIT) {
		rd_problem(p, BLAMER_HEALTH_EMPTY, "heap not initialized yet");
		return;
	}
	if (hh.state != BLAMER_HEAP_READY && hh.state != BLAMER_HEAP_DELETED) {
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "unknown heap state %u", hh.state);
		return;
	}
	if (hh.flags & BLAMER_HEAP_F_CORRUPT)
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "the writer marked the heap corrupt");
	if (hh.clock != BLAMER_CLOCK_MONOTONIC && hh.clock != BLAMER_CLOCK_TSC)
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "unknown activity clock %u", hh.clock);
	if (hh.max_slabs > BLAMER_MAX_SLABS || hh.slab_count > hh.max_slabs) {
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "slab count %u / max %u out of range",
			   hh.slab_count, hh.max_slabs);
		hh.slab_count = 1;
	}
	if (hh.slab_count > h->nslabs)
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "heap claims %u slabs, %u readable",
			   hh.slab_count, h->nslabs);
	/* only published slabs may be referenced */
	nvalid = hh.slab_count < h->nslabs ? hh.slab_count : h->nslabs;
	if (nvalid == 0)
		nvalid = 1;
	for (i = 0; i < nvalid && h->check_ids; i++) {
		if (hh.slab_ids[i] != h->slabs[i].id) {
			rd_problem(p, BLAMER_HEALTH_CORRUPT,
				   "slab %u is %llu, the heap names %llu", i,
				   (unsigned long long)h->slabs[i].id,
				   (unsigned long long)hh.slab_ids[i]);
			break;
		}
	}
	h->nslabs = nvalid;

	if (hh.process)
		parse_process(&c, hh.process);
	if (h->headers_only) {
		if (!p->problem[0])
			p->health = BLAMER_HEALTH_SUMMARY;
		return;
	}
	walk_list(&c, &hh);
	free(c.shards.v);
	parse_userdata(&c, c.ud_process, &p->user_data);
	parse_userdata(&c, c.ud_global, &p->global_data);
	for (i = 0; i < c.nlogs; i++) {
		bool dup = false;
		uint32_t j;

		for (j = 0; j < i; j++)
			dup |= c.logs[j] == c.logs[i];
		if (!dup)
			parse_log(&c, c.logs[i]);
	}
	if (p->nlogs)
		qsort(p->logs, p->nlogs, sizeof(*p->logs), log_cmp);
	if (p->torn_records)
		rd_problem(p, BLAMER_HEALTH_TORN, "%u records kept changing while read",
			   p->torn_records);
}

