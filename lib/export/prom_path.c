// SPDX-License-Identifier: MIT
/*
 * Path labels: "/e/e/...", one element per node, unambiguous for any
 * node names, so that distinct paths of node ids are distinct series.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

static int node_name_cmp(const void *a, const void *b)
{
	const struct blamer_snap_uid_node *x = *(const struct blamer_snap_uid_node *const *)a;
	const struct blamer_snap_uid_node *y = *(const struct blamer_snap_uid_node *const *)b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return strcmp(x->node.name, y->node.name);
}

/*
 * Each uid's names (a snapshot made by hand, without BLAMER_SNAP_UID_NAMES:
 * its nodes, for every uid), and which of them another node of the same
 * uid names alike: another user's heap naming a node as one of a uid's
 * neither renames it nor makes its element "name@0x<id>".
 */
bool prom_names_init(struct prom_names *nm, const struct blamer_snapshot *s)
{
	const struct blamer_snap_uid_node **v;
	size_t i, n;

	memset(nm, 0, sizeof(*nm));
	nm->s = s;
	nm->per_uid = s->flags & BLAMER_SNAP_UID_NAMES;
	if (nm->per_uid) {
		nm->v = s->uid_nodes;
		n = s->nuid_nodes;
	} else {
		struct blamer_snap_uid_node *own = calloc(s->nnodes + 1, sizeof(*own));

		if (!own)
			return false;
		for (i = 0; i < s->nnodes; i++)
			own[i].node = s->nodes[i];
		nm->v = nm->own = own;
		n = s->nnodes;
	}
	nm->n = n;
	v = malloc((n + 1) * sizeof(*v));
	nm->shared = calloc(n + 1, sizeof(*nm->shared));
	nm->off = calloc(n + 1, sizeof(*nm->off));
	nm->len = calloc(n + 1, sizeof(*nm->len));
	if (!v || !nm->shared || !nm->off || !nm->len) {
		free(v);
		return false;
	}
	for (i = 0; i < n; i++)
		v[i] = &nm->v[i];
	qsort(v, n, sizeof(*v), node_name_cmp);
	for (i = 1; i < n; i++)
		if (v[i]->node.name[0] && v[i - 1]->uid == v[i]->uid &&
		    !strcmp(v[i - 1]->node.name, v[i]->node.name))
			nm->shared[v[i - 1] - nm->v] = nm->shared[v[i] - nm->v] = true;
	free(v);
	return true;
}

void prom_names_free(struct prom_names *nm)
{
	free(nm->own);
	free(nm->shared);
	free(nm->off);
	free(nm->len);
	free(nm->pool.p);
}

/* The index of @uid's node @id in nm->v (sorted by uid, then id), or
 * SIZE_MAX. */
static size_t node_find(const struct prom_names *nm, uint32_t uid, uint64_t id)
{
	size_t lo = 0, hi = nm->n;

	if (!nm->per_uid)
		uid = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct blamer_snap_uid_node *x = &nm->v[mid];

		if (x->uid == uid && x->node.id == id)
			return mid;
		if (x->uid < uid || (x->uid == uid && x->node.id < id))
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

/*
 * A named node's path element into @o (ELEM_MAX bytes): its name,
 * percent-encoded so that '/' separates elements only ('%', '/' and '@'
 * in a name become %25, %2F and %40, as do control characters and bytes
 * that are not valid UTF-8), a leading "0x" written %30x (so a name never
 * looks like an unnamed node), then "@0x<id>" if another node has the
 * same name. A node without a name is "0x<id>". So distinct paths of ids
 * give distinct labels. Returns the length.
 */
static size_t make_element(char *o, const struct blamer_snap_node *n, bool shared)
{
	const unsigned char *s = (const unsigned char *)n->name;
	char *start = o;
	uint32_t cp;
	size_t len;

	if (s[0] == '0' && s[1] == 'x') {
		o += sprintf(o, "%%30");
		s++;
	}
	while (*s) {
		len = prom_utf8_seq(s, &cp);
		if (len && !prom_is_control(cp) && *s != '%' && *s != '/' && *s != '@') {
			memcpy(o, s, len);
			o += len;
			s += len;
		} else {
			for (len = len ? len : 1; len; len--, s++)
				o += sprintf(o, "%%%02X", *s);
		}
	}
	if (shared)
		o += sprintf(o, "@0x%" PRIx64, n->id);
	return (size_t)(o - start);
}

/* "0x<id>" in lowercase hex, as PRIx64 would write it. Returns the length. */
static size_t put_hex_id(char *o, uint64_t id)
{
	static const char digit[] = "0123456789abcdef";
	char b[16];
	size_t i = sizeof(b), n;

	do {
		b[--i] = digit[id & 15];
		id >>= 4;
	} while (id);
	o[0] = '0';
	o[1] = 'x';
	n = sizeof(b) - i;
	memcpy(o + 2, b + i, n);
	return n + 2;
}

/*
 * Node @k's element, escaped as every label value, into the pool once:
 * a scrape writes each node's element many times (every path through it,
 * every unit, every process), so it is made and escaped only the first
 * time. False if out of memory.
 */
static bool element_made(struct prom_names *nm, size_t k)
{
	const struct blamer_snap_node *n = &nm->v[k].node;
	char tmp[ELEM_MAX + 1];
	size_t len, start;

	if (nm->off[k])
		return true;
	if (nm->pool.len > UINT32_MAX - 4 * ELEM_MAX)	/* escaped: 3 bytes each at most */
		return false;
	len = n->name[0] ? make_element(tmp, n, nm->shared[k]) : put_hex_id(tmp, n->id);
	tmp[len] = '\0';
	start = nm->pool.len;
	prom_escape(&nm->pool, tmp, false);	/* may hold " or \ */
	if (nm->pool.oom)
		return false;
	nm->off[k] = (uint32_t)start + 1;
	nm->len[k] = (uint32_t)(nm->pool.len - start);
	return true;
}

/* path="/e/e/..." (escaped as every label value), its names @uid's. */
void prom_path_label(struct prom_out *o, struct prom_names *nm, uint32_t uid,
		     const struct blamer_snap_path *p)
{
	char tmp[ELEM_MAX + 1];
	uint32_t i;

	prom_put(o, "path=\"", 6);
	for (i = 0; i < p->depth && i < BLAMER_SNAP_MAX_DEPTH; i++) {
		size_t k = node_find(nm, uid, p->nodes[i]);

		prom_putc(o, '/');
		if (k == SIZE_MAX) {
			prom_put(o, tmp, put_hex_id(tmp, p->nodes[i]));
		} else if (element_made(nm, k)) {
			prom_put(o, nm->pool.p + nm->off[k] - 1, nm->len[k]);
		} else {
			tmp[nm->v[k].node.name[0] ? make_element(tmp, &nm->v[k].node, nm->shared[k]) :
			    put_hex_id(tmp, p->nodes[i])] = '\0';
			prom_escape(o, tmp, false);
		}
	}
	prom_putc(o, '"');
}
