// SPDX-License-Identifier: MIT
/*
 * Decoders of metrics (heap format version 3): METRIC_DEF (what a metric
 * is) and METRIC (one series and its values: its own words plus those of
 * every METRIC_SHARD on its chain, each shard counted once; shards have
 * no decoder of their own).
 *
 * A series names its definition by reference. Definitions are decoded
 * once each, when the list reaches them or a series names them first
 * (a hostile heap may list them in any order), and found again through a
 * table keyed by reference with a secret seed (a heap chooses where its
 * records are: an unkeyed table could be made to collide). Everything a
 * definition and a series hold is checked against the format: a
 * definition the format does not allow is corrupt, and so is a series
 * that names one, or whose values do not fit their definition.
 *
 * Doubles are summed exactly (lib/format/metric.h): a counter whose
 * shards only grow never shows a lower value, whatever order they are
 * added in. A part no writer can leave (a counter's below 0, a NaN or an
 * infinity in a counter or a histogram's sum: metric_write.c refuses
 * them) makes the series corrupt, left out: once an exporter folded it
 * into its durable remainder, the service's series would be NaN or
 * infinite for good, or a counter would go down. So are bucket counts
 * whose sum does not fit 64 bits.
 *
 * A series' process-side definition is kept by index while the
 * heap is parsed (its array may move) and made a pointer after
 * (rd_metrics_link()).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "metric.h"

#define DEF_BAD	UINT32_MAX	/* a definition found bad: not decoded again */

/* The slot of @ref in the table (where it is, or where it would go). */
static size_t def_slot(const struct rd_defmap *m, blamer_ref ref)
{
	size_t at = rd_mix(ref ^ m->seed) & (m->cap - 1);

	while (m->ref[at] && m->ref[at] != ref)
		at = (at + 1) & (m->cap - 1);
	return at;
}

/* Notes @ref as definition @idx (DEF_BAD: a bad one); false out of memory. */
static bool def_note(struct rd_ctx *c, blamer_ref ref, uint32_t idx)
{
	struct rd_defmap *m = &c->defs;
	size_t i, at;

	if (2 * (m->n + 1) > m->cap) {	/* at most half full */
		struct rd_defmap g = { .seed = rd_ref_seed(c), .cap = m->cap ? m->cap * 2 : 64 };

		g.ref = calloc(g.cap, sizeof(*g.ref));
		g.idx = calloc(g.cap, sizeof(*g.idx));
		if (!g.ref || !g.idx) {
			free(g.ref);
			free(g.idx);
			rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			return false;
		}
		for (i = 0; i < m->cap; i++) {
			if (!m->ref[i])
				continue;
			at = def_slot(&g, m->ref[i]);
			g.ref[at] = m->ref[i];
			g.idx[at] = m->idx[i];
		}
		g.n = m->n;
		free(m->ref);
		free(m->idx);
		*m = g;
	}
	at = def_slot(m, ref);
	m->ref[at] = ref;
	m->idx[at] = idx;
	m->n++;
	return true;
}

void rd_defmap_free(struct rd_defmap *m)
{
	free(m->ref);
	free(m->idx);
	memset(m, 0, sizeof(*m));
}

/* A table this large is not emptied for every heap after (a hostile
 * heap's thousands of definitions would cost each heap after it). */
#define DEFMAP_KEEP_MAX	1024u

void rd_defmap_done(struct rd_defmap *m, struct rd_defmap *keep)
{
	uint64_t seed = m->seed;

	if (!keep || m->cap > DEFMAP_KEEP_MAX) {
		rd_defmap_free(m);
		if (keep)
			keep->seed = seed;
		return;
	}
	if (m->n)
		memset(m->ref, 0, m->cap * sizeof(*m->ref));
	m->n = 0;
	*keep = *m;
	memset(m, 0, sizeof(*m));
}

/* A copy of @n bytes of @src and a NUL in the snapshot, or NULL (reported). */
static char *dup_str(struct rd_ctx *c, const char *src, size_t n)
{
	char *d = rd_alloc(c->h->s, n + 1);

	if (!d) {
		rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
		return NULL;
	}
	memcpy(d, src, n);
	d[n] = '\0';
	return d;
}

/*
 * @n NUL-terminated strings one after the other in @area (@len bytes),
 * each at @at[i] with length @sl[i]: false if they are not all there.
 */
static bool split(const char *area, size_t len, uint32_t n, size_t *at, size_t *sl)
{
	size_t o = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		const char *nul = memchr(area + o, '\0', len - o);

		if (!nul)
			return false;
		at[i] = o;
		sl[i] = (size_t)(nul - (area + o));
		o += sl[i] + 1;
		if (o > len)
			return false;
	}
	return true;
}

static bool def_labels(struct rd_ctx *c, const struct blamer_metric_def_rec *r,
		       struct blamer_snap_metric_def *d)
{
	size_t at[BLAMER_METRIC_LABELS_MAX], sl[BLAMER_METRIC_LABELS_MAX];
	uint32_t i, j;

	if (r->nlabels > BLAMER_METRIC_LABELS_MAX ||
	    !split(r->labels, sizeof(r->labels), r->nlabels, at, sl))
		return false;
	for (i = 0; i < r->nlabels; i++) {
		const char *l = r->labels + at[i];

		/* an exporter's own label twice would make the scrape invalid */
		if (!bl_metric_name_ok(l, BLAMER_METRIC_LABEL_NAMES_MAX, false) ||
		    bl_label_reserved(l, false))
			return false;
		for (j = 0; j < i; j++)
			if (!strcmp(l, r->labels + at[j]))
				return false;
		d->labels[i] = dup_str(c, l, sl[i]);
		if (!d->labels[i])
			return false;
	}
	d->nlabels = r->nlabels;
	return true;
}

static bool def_buckets(struct rd_ctx *c, const struct blamer_metric_def_rec *r,
			struct blamer_snap_metric_def *d)
{
	struct bl_hist h = { .layout = r->layout, .nbuckets = r->nbuckets, .schema = r->schema,
			     .min_exp = r->min_exp, .max_exp = r->max_exp, .bounds = r->bounds };
	uint32_t i;

	if (!bl_hist_ok(&h))
		return false;
	d->upper = rd_alloc(c->h->s, h.nbuckets * sizeof(double));
	if (!d->upper) {
		rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
		return false;
	}
	for (i = 0; i < h.nbuckets; i++)
		d->upper[i] = bl_hist_upper(&h, i);
	d->layout = h.layout;
	d->nbuckets = h.nbuckets;
	if (h.layout == BLAMER_HIST_EXPONENTIAL) {
		d->schema = h.schema;
		d->min_exp = h.min_exp;
		d->max_exp = h.max_exp;
	}
	return true;
}

/* The definition at @ref, checked, as an element of the process's
 * definitions; false if it is not one the format allows. */
static bool decode_def(struct rd_ctx *c, blamer_ref ref, uint32_t *idx)
{
	struct blamer_metric_def_rec r;
	struct blamer_snap_metric_def d = { 0 }, *sd;
	struct rd_defshare *share;
	struct blamer_block b;
	const char *nul;

	if (!rd_record(c, ref, BLAMER_REC_METRIC_DEF, &b, &r, sizeof(r)) || !rd_owner_ok(c, &r.owner))
		return false;
	share = c->h->scratch ? &c->h->scratch->share : NULL;
	if (rd_defshare_get(share, &r, &d))
		goto good;	/* another heap's decoding of these bytes */
	nul = memchr(r.help, '\0', sizeof(r.help));
	if (r.kind < BLAMER_METRIC_COUNTER || r.kind > BLAMER_METRIC_HISTOGRAM ||
	    r.base > BLAMER_BASE_BYTES || !nul ||
	    !bl_metric_name_ok(r.name, BLAMER_METRIC_NAME_MAX, true) ||
	    !strncmp(r.name, "blamer_", 7) ||
	    (r.kind == BLAMER_METRIC_GAUGE) != (r.gauge_mode != 0) ||
	    r.gauge_mode > BLAMER_GAUGE_LIVEMOSTRECENT)
		goto bad;
	memcpy(d.name, r.name, sizeof(d.name));
	d.kind = r.kind;
	d.base = r.base;
	d.gauge_mode = r.gauge_mode;
	d.flags = r.flags & BLAMER_METRIC_PER_PROCESS;	/* later flags: not ours */
	d.help = dup_str(c, r.help, (size_t)(nul - r.help));
	if (!d.help || !def_labels(c, &r, &d) ||
	    (r.kind == BLAMER_METRIC_HISTOGRAM && !def_buckets(c, &r, &d)))
		goto bad;
	rd_defshare_put(share, &r, &d);
good:
	sd = rd_push(c, (void **)&c->p->metric_defs, &c->p->nmetric_defs, sizeof(*sd));
	if (!sd)
		return false;
	*sd = d;
	*idx = (uint32_t)(c->p->nmetric_defs - 1);
	return true;
bad:
	rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "metric definition at %#llx: not one the format allows",
		   (unsigned long long)ref);
	return false;
}

/* The index of the definition at @ref among the process's, decoded now
 * if it was not yet; DEF_BAD if it is not a good one. */
static uint32_t def_index(struct rd_ctx *c, blamer_ref ref)
{
	uint32_t idx = DEF_BAD;

	if (c->defs.cap) {
		size_t at = def_slot(&c->defs, ref);

		if (c->defs.ref[at])
			return c->defs.idx[at];
	}
	if (!decode_def(c, ref, &idx))
		idx = DEF_BAD;
	def_note(c, ref, idx);
	return idx;
}

void rd_decode_metric_def(struct rd_ctx *c, blamer_ref ref)
{
	def_index(c, ref);
}

/* A string's bytes as valid UTF-8, control characters and bytes that
 * are not UTF-8 made U+FFFD: the label value every output shows. */
static char *utf8_clean(struct rd_ctx *c, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	char *d, *o;
	size_t i;

	/* printable ASCII (routes, codes, methods): as it is, and no room
	 * for replacements (found eight bytes at a time: a byte at a time
	 * was 3 % of a scrape) */
	if (rd_printable_span(s, n) == n)
		return dup_str(c, s, n);
	d = rd_alloc(c->h->s, 3 * n + 1);
	o = d;
	i = 0;
	if (!d) {
		rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
		return NULL;
	}
	while (i < n) {
		uint32_t cp = u[i], need = 0, min = 0, k;

		if (cp >= 0xf0 && cp < 0xf5) {
			need = 3, min = 0x10000, cp &= 0x07;
		} else if (cp >= 0xe0 && cp < 0xf0) {
			need = 2, min = 0x800, cp &= 0x0f;
		} else if (cp >= 0xc2 && cp < 0xe0) {
			need = 1, min = 0x80, cp &= 0x1f;
		} else if (cp >= 0x20 && cp < 0x7f) {
			*o++ = (char)cp;
			i++;
			continue;
		} else {
			goto replace;	/* a control character, DEL, or no start byte */
		}
		for (k = 1; k <= need; k++) {
			if (i + k >= n || (u[i + k] & 0xc0) != 0x80)
				goto replace;
			cp = cp << 6 | (u[i + k] & 0x3f);
		}
		/* overlong, surrogates, past U+10FFFF, C1 controls: replaced */
		if (cp < min || (cp >= 0xd800 && cp < 0xe000) || cp > 0x10ffff ||
		    (cp >= 0x80 && cp < 0xa0))
			goto replace;
		memcpy(o, u + i, need + 1);
		o += need + 1;
		i += need + 1;
		continue;
replace:
		memcpy(o, "\xef\xbf\xbd", 3);
		o += 3;
		i++;
	}
	*o = '\0';
	return d;
}

/*
 * Whether @words (a series' own words or a shard's, @n of them) can be a
 * writer's, added to @sum and @counts if so; if not, reported. Word 0 is
 * the sum: finite, and for a counter not below 0 (-0 is 0).
 */
static bool add_part(struct rd_ctx *c, blamer_ref series, uint32_t kind, const uint64_t *words,
		     uint32_t n, struct blamer_exact_sum *sum, uint64_t *counts)
{
	double d;
	uint32_t i;

	memcpy(&d, &words[0], sizeof(d));
	if (d - d != 0 || (kind == BLAMER_METRIC_COUNTER && d < 0)) {	/* NaN, inf, < 0 */
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "series at %#llx: a part of its sum is %g",
			   (unsigned long long)series, d);
		return false;
	}
	for (i = 1; i < n; i++)
		if (__builtin_add_overflow(counts[i - 1], words[i], &counts[i - 1])) {
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
				   "series at %#llx: its bucket counts overflow",
				   (unsigned long long)series);
			return false;
		}
	/* a zero adds nothing (the series' own words are 0 where its
	 * threads' shards took every add) */
	if (d != 0)
		blamer_exact_sum_add(sum, d);
	return true;
}

/* Adds the words of the shards on the chain from @ref of series @series
 * (@n words each) to @sum and @counts; corruption ends the walk, keeping
 * what came before (as decode_dag.c's add_shards()). False: a shard's
 * words are no writer's (add_part()), the series is bad. */
static bool add_shards(struct rd_ctx *c, blamer_ref series, uint32_t kind, blamer_ref ref,
		       uint32_t n, struct blamer_exact_sum *sum, uint64_t *counts, uint64_t *words)
{
	size_t size = sizeof(struct blamer_metric_shard) + n * sizeof(uint64_t);

	while (ref) {
		struct blamer_metric_shard sh;
		struct blamer_block b;
		int fresh;

		if (!rd_chained(c, ref, &b, &sh, sizeof(sh)))
			return true;
		fresh = rd_seen_add(c, c->shards, ref);
		if (fresh <= 0) {
			if (fresh == 0)
				rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
					   "series at %#llx: shard %#llx is on a chain twice",
					   (unsigned long long)series, (unsigned long long)ref);
			return true;
		}
		if (b.type != BLAMER_REC_METRIC_SHARD || b.size < size || !rd_owner_ok(c, &sh.owner) ||
		    sh.metric != series || sh.nvalues != n) {
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
				   "series at %#llx: %#llx is not one of its shards",
				   (unsigned long long)series, (unsigned long long)ref);
			return true;
		}
		if (!rd_load_u64s(c->h, ref + sizeof(sh), n, words))
			return true;
		if (!add_part(c, series, kind, words, n, sum, counts))
			return false;
		ref = sh.next_shard;
	}
	return true;
}

/* A gauge's value and time: the time read before and after the value,
 * the same both times (bounded retries; a torn pair keeps the last). */
static bool gauge_read(struct rd_ctx *c, blamer_ref ref, uint64_t *value, uint64_t *stamp)
{
	blamer_ref at = ref + offsetof(struct blamer_metric_rec, stamp);
	uint64_t t2 = 0;
	uint32_t i;

	for (i = 0; i <= c->h->retries; i++) {
		if (!rd_load_u64s(c->h, at, 1, stamp) ||
		    !rd_load_u64s(c->h, ref + sizeof(struct blamer_metric_rec), 1, value) ||
		    !rd_load_u64s(c->h, at, 1, &t2))
			return false;
		if (t2 == *stamp)
			break;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	}
	return true;
}

void rd_decode_metric(struct rd_ctx *c, blamer_ref ref)
{
	size_t at[BLAMER_METRIC_LABELS_MAX], sl[BLAMER_METRIC_LABELS_MAX];
	/* not zeroed here: counts[0 .. n - 2] are zeroed before the record's
	 * words are added (zeroing all 258 was 2 KB a series) */
	uint64_t words[1 + BLAMER_METRIC_BUCKETS_MAX], counts[BLAMER_METRIC_BUCKETS_MAX];
	const struct blamer_snap_metric *like;
	const struct blamer_snap_metric_def *d;
	struct blamer_snap_metric *m;
	struct blamer_metric_rec r;
	struct blamer_block b;
	struct blamer_exact_sum sum;
	uint32_t idx, n, i;

	if (!rd_record(c, ref, BLAMER_REC_METRIC, &b, &r, sizeof(r)) || !rd_owner_ok(c, &r.owner))
		return;
	idx = def_index(c, r.def);
	if (idx == DEF_BAD) {
		rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "series at %#llx: no good definition at %#llx",
			   (unsigned long long)ref, (unsigned long long)r.def);
		return;
	}
	d = &c->p->metric_defs[idx];
	n = d->kind == BLAMER_METRIC_HISTOGRAM ? 1 + d->nbuckets : 1;
	if (r.nvalues != n || b.size < sizeof(r) + n * sizeof(uint64_t) ||
	    r.depth > BLAMER_DAG_MAX_DEPTH ||
	    !split(r.values, sizeof(r.values), d->nlabels, at, sl))
		goto bad;
	for (i = 0; i < d->nlabels; i++)
		if (r.depth && !strcmp(d->labels[i], "path"))
			goto bad;	/* two labels named path */
	/* made where it stays (zeroed), taken back if the series is bad:
	 * the element was built aside and copied in, 5 % of its decoding */
	m = rd_push(c, (void **)&c->p->metrics, &c->p->nmetrics, sizeof(*m));
	if (!m)
		return;
	/* the definition's index, made a pointer after the heap is parsed */
	m->def = (const struct blamer_snap_metric_def *)(uintptr_t)(idx + 1);
	m->cut = r.flags & BLAMER_METRIC_F_CUT;
	m->depth = r.depth;
	memcpy(m->nodes, r.nodes, r.depth * sizeof(r.nodes[0]));
	like = c->h->like && c->p->nmetrics <= c->h->like->nmetrics
		       ? &c->h->like->metrics[c->p->nmetrics - 1] : NULL;
	for (i = 0; i < d->nlabels; i++) {
		const char *raw = r.values + at[i];	/* NUL-terminated (split()) */

		/* the same bytes as the value of the process before's series
		 * in this place: that string (cleaned, so these bytes clean
		 * to themselves), shared; else a copy cleaned */
		if (like && like->values[i] && !strcmp(like->values[i], raw))
			m->values[i] = like->values[i];
		else if (!(m->values[i] = utf8_clean(c, raw, sl[i])))
			goto drop;
	}
	/* what blamer_exact_sum_add() reads before it writes: the partials
	 * past n are not (zeroing all of them was 2 % of a scrape) */
	sum.n = 0;
	sum.has_special = false;
	sum.special = 0;
	if (d->kind == BLAMER_METRIC_GAUGE) {
		if (!gauge_read(c, ref, &words[0], &m->stamp_ns))
			goto drop;
		memcpy(&m->value, &words[0], sizeof(m->value));
		if (m->value != m->value) {	/* blamer_gauge_set() refuses NaN */
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "series at %#llx: a gauge of NaN",
				   (unsigned long long)ref);
			goto drop;
		}
		if (d->gauge_mode != BLAMER_GAUGE_MOSTRECENT &&
		    d->gauge_mode != BLAMER_GAUGE_LIVEMOSTRECENT)
			m->stamp_ns = 0;
	} else {
		if (!rd_load_u64s(c->h, ref + sizeof(r), n, words))
			goto drop;
		/* the counts this series has, not all the array could hold */
		memset(counts, 0, (n - 1) * sizeof(counts[0]));
		if (!add_part(c, ref, d->kind, words, n, &sum, counts) ||
		    !add_shards(c, ref, d->kind, r.shards, n, &sum, counts, words))
			goto drop;
		if (sum.has_special) {	/* finite parts whose sum is not */
			rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "series at %#llx: its sum overflows",
				   (unsigned long long)ref);
			goto drop;
		}
		m->value = blamer_exact_sum_value(&sum);
		m->nexact = sum.n;
		if (m->nexact) {
			double *e = rd_alloc(c->h->s, m->nexact * sizeof(double));

			if (!e) {
				rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
				goto drop;
			}
			memcpy(e, sum.p, m->nexact * sizeof(double));
			m->exact = e;
		}
	}
	if (d->kind == BLAMER_METRIC_HISTOGRAM) {
		for (i = 0; i < d->nbuckets; i++)
			if (__builtin_add_overflow(m->count, counts[i], &m->count)) {
				rd_problem(c->p, BLAMER_HEALTH_CORRUPT,
					   "series at %#llx: its bucket counts overflow",
					   (unsigned long long)ref);
				goto drop;
			}
		m->buckets = rd_alloc(c->h->s, d->nbuckets * sizeof(uint64_t));
		if (!m->buckets) {
			rd_problem(c->p, BLAMER_HEALTH_UNREADABLE, "out of memory");
			goto drop;
		}
		memcpy(m->buckets, counts, d->nbuckets * sizeof(uint64_t));
	}
	return;
drop:
	c->p->nmetrics--;	/* the last element: nothing was pushed since */
	return;
bad:
	rd_problem(c->p, BLAMER_HEALTH_CORRUPT, "series at %#llx: its values do not fit its definition",
		   (unsigned long long)ref);
}

void rd_metrics_link(struct blamer_snap_process *p)
{
	size_t i;

	for (i = 0; i < p->nmetrics; i++) {
		uintptr_t idx = (uintptr_t)p->metrics[i].def;

		p->metrics[i].def = idx && idx <= p->nmetric_defs ? &p->metric_defs[idx - 1] : NULL;
	}
}
