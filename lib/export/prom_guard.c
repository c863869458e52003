// SPDX-License-Identifier: MIT
/*
 * No exported counter ever goes down, whatever a heap does (a long-lived
 * exporter's promise, Documentation/reader.rst, "Counter model"). A
 * process's sums only grow while it runs, as its writer keeps them; but a
 * heap is its writer's memory, and a writer that rewrites its own words
 * could make a series go down, which Prometheus reads as a reset (rate()
 * and increase() then count the whole value again): the writer would
 * control what rate() says.
 *
 * So the exporter remembers, per series, the value it emitted last and
 * the value the heap showed last: it emits max(shown, emitted) and counts
 * a decrease each time the heap shows less than the time before (a heap
 * that stays low counts once). The series is its text, metric name and
 * every label, exactly what Prometheus keys it by, hashed with a secret
 * seed. What a process's series remember is kept while its heap is
 * exported and for GUARD_KEEP_NS after it was last (a heap that vanishes
 * for a scrape, or is made to, comes back to the same floor), and never
 * more than GUARD_MAX_SERIES series of absent processes. Within one
 * memory (a process's, or the service's, which holds every uid's) a
 * series not written keeps its floor as long, and at most as many such
 * series are kept as were written (GUARD_MIN_ABSENT at least), the most
 * recently written first: kept for good, a heap whose label values
 * changed every scrape grew root's exporter by its series count each
 * time (50 MB to 110 MB in 85 s, 20,000 series rewritten every 300 ms).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hash.h"
#include "prom.h"

#define GUARD_KEEP_NS		(600ull * 1000000000ull)
#define GUARD_MAX_SERIES	(1u << 20)
#define GUARD_MIN_ABSENT	4096u

struct guard_series {
	uint64_t id;
	uint64_t emitted, shown;
	uint64_t seen_ns;	/* last written (CLOCK_MONOTONIC) */
};

static uint64_t series_id(uint64_t seed, const char *text, size_t len)
{
	return ex_mix_bytes(seed, text, len);
}

/* prom_key_cmp()'s order, its own: prom.c calls this file, never back */
static int key_cmp(const struct prom_key *x, const struct prom_key *y)
{
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->heap > y->heap) - (x->heap < y->heap);
}

/*
 * A process's series are written in the same order every scrape (by
 * family, path and unit), so its memory is kept in that order and each
 * series is first looked for where the last one left off: one compare,
 * no search and no sort while the order holds. When it does not (a path
 * came or went, a label changed), an index of the memory sorted by id is
 * made once for that process's scrape and searched.
 */
/* qsort_r()'s order of indexes into the memory @arg, by series id */
static int idx_cmp(const void *a, const void *b, void *arg)
{
	const struct guard_series *v = arg;
	uint64_t x = v[*(const uint32_t *)a].id, y = v[*(const uint32_t *)b].id;

	return (x > y) - (x < y);
}

/* The memory's entry of series @id, or NULL (marked used when found). */
static struct guard_series *find(struct prom_guard_proc *g, uint64_t id)
{
	size_t lo = 0, hi;

	if (g->pos < g->n && g->v[g->pos].id == id) {
		if (g->used)
			g->used[g->pos] = 1;
		return &g->v[g->pos++];
	}
	if (!g->n)
		return NULL;
	if (!g->idx) {
		size_t i;

		g->idx = malloc(g->n * sizeof(*g->idx));
		g->used = calloc(g->n, 1);
		if (!g->idx || !g->used) {
			g->oom = true;
			return NULL;
		}
		/* what was matched in order so far is used */
		memset(g->used, 1, g->pos);
		for (i = 0; i < g->n; i++)
			g->idx[i] = (uint32_t)i;
		qsort_r(g->idx, g->n, sizeof(*g->idx), idx_cmp, g->v);
	}
	hi = g->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t m = g->v[g->idx[mid]].id;

		if (m == id) {
			g->used[g->idx[mid]] = 1;
			g->pos = g->idx[mid] + 1;	/* the order may hold from here */
			return &g->v[g->idx[mid]];
		}
		if (m < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void prom_guard_begin(struct prom_guard_proc *g, uint64_t seed)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	g->now_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	g->seed = seed;
	g->nnew = 0;
	g->pos = 0;
}

uint64_t prom_guard_clamp(struct prom_guard_proc *g, const char *series, size_t len,
			  uint64_t shown)
{
	uint64_t id = series_id(g->seed, series, len), emitted = shown;
	struct guard_series *old = find(g, id), *nv;

	if (old) {
		if (shown < old->shown)
			g->decreases++;
		if (old->emitted > emitted)
			emitted = old->emitted;
	}
	if (g->nnew == g->capnew) {
		size_t cap = g->capnew ? 2 * g->capnew : 16;

		nv = realloc(g->fresh, cap * sizeof(*nv));
		if (!nv) {
			g->oom = true;
			return emitted;	/* not remembered: the floor stays the old one */
		}
		g->fresh = nv;
		g->capnew = cap;
	}
	g->fresh[g->nnew++] = (struct guard_series){ .id = id, .emitted = emitted,
						     .shown = shown, .seen_ns = g->now_ns };
	return emitted;
}

/* Whether the memory's series @i, not written this time, is kept. */
static bool left_kept(const struct prom_guard_proc *g, size_t i)
{
	return !(g->used && g->used[i]) && (g->idx || i >= g->pos) &&
	       g->now_ns - g->v[i].seen_ns < GUARD_KEEP_NS;
}

/*
 * The series written this time become the process's memory, in the
 * order written, followed by those of the last time not written now (a
 * path that went missing for a scrape keeps its floor), the most recently
 * written first, while they were written less than GUARD_KEEP_NS ago and
 * number no more than those written now (GUARD_MIN_ABSENT at least).
 */
bool prom_guard_end(struct prom_guard_proc *g)
{
	size_t i, left = 0, cap, room = g->nnew > GUARD_MIN_ABSENT ? g->nnew : GUARD_MIN_ABSENT;
	struct guard_series *t;
	bool ok = !g->oom;

	g->oom = false;
	/* all matched in order (the common case): nothing of the old is left */
	if (ok && (g->idx || g->pos < g->n)) {
		for (i = 0; i < g->n && left < room; i++)
			left += left_kept(g, i);
	}
	if (ok && left) {
		cap = g->nnew + left;
		if (cap > g->capnew) {
			t = realloc(g->fresh, cap * sizeof(*t));
			if (!t) {
				ok = false;
				goto out;
			}
			g->fresh = t;
			g->capnew = cap;
		}
		for (i = 0; i < g->n && left; i++) {
			if (left_kept(g, i)) {
				g->fresh[g->nnew++] = g->v[i];
				left--;
			}
		}
	}
	if (ok) {
		/* the new memory; the old array is the next scrape's to fill */
		t = g->v;
		cap = g->capv;
		g->v = g->fresh;
		g->n = g->nnew;
		g->capv = g->capnew;
		g->fresh = t;
		g->capnew = cap;
	}
out:
	free(g->idx);
	free(g->used);
	g->idx = NULL;
	g->used = NULL;
	g->nnew = 0;
	return ok;
}

void prom_guard_proc_free(struct prom_guard_proc *g)
{
	free(g->v);
	free(g->fresh);
	free(g->idx);
	free(g->used);
	memset(g, 0, sizeof(*g));
}

/*
 * The end of a scrape: @cur (the processes exported, in key order, each
 * with its memory) becomes the guard's, with the processes of the last
 * scrape that were not exported and were last less than GUARD_KEEP_NS
 * ago, while their series number fewer than GUARD_MAX_SERIES; the rest
 * is forgotten.
 */
void prom_guard_swap(struct prom_guard *gd, struct prom_guard_proc *cur, size_t ncur,
		     uint64_t now_ns)
{
	struct prom_guard_proc *m = malloc((gd->n + ncur + 1) * sizeof(*m));
	size_t i = 0, j = 0, k = 0, absent = 0;

	if (!m) {
		/* out of memory: the present ones only */
		for (j = 0; j < gd->n; j++)
			prom_guard_proc_free(&gd->v[j]);
		free(gd->v);
		gd->v = cur;
		gd->n = ncur;
		return;
	}
	while (i < ncur || j < gd->n) {
		int c = i == ncur ? 1 : j == gd->n ? -1 : key_cmp(&cur[i].key, &gd->v[j].key);

		if (c <= 0) {
			cur[i].seen_ns = now_ns;
			m[k++] = cur[i++];
			if (!c)
				prom_guard_proc_free(&gd->v[j++]);	/* taken over: empty */
		} else if (now_ns - gd->v[j].seen_ns < GUARD_KEEP_NS &&
			   absent + gd->v[j].n < GUARD_MAX_SERIES) {
			absent += gd->v[j].n;
			m[k++] = gd->v[j++];
		} else {
			prom_guard_proc_free(&gd->v[j++]);
		}
	}
	free(gd->v);
	free(cur);
	gd->v = m;
	gd->n = k;
}

struct prom_guard_proc *prom_guard_find(struct prom_guard *gd, const struct prom_key *key,
					size_t *at)
{
	while (*at < gd->n && key_cmp(key, &gd->v[*at].key) > 0)
		++*at;
	return *at < gd->n && !key_cmp(key, &gd->v[*at].key) ? &gd->v[*at] : NULL;
}

void prom_guard_free(struct prom_guard *gd)
{
	size_t i;

	for (i = 0; i < gd->n; i++)
		prom_guard_proc_free(&gd->v[i]);
	free(gd->v);
	memset(gd, 0, sizeof(*gd));
}
