// SPDX-License-Identifier: MIT
/*
 * Folding: a long-lived exporter moves each dead heap's final values
 * into its remainder (fleet.h), makes that durable, and only then lets
 * the heap go. Its aggregate series (prom_fleet.c) are the remainder
 * plus the processes not folded, so they stay flat (one series per
 * metric, label set, path and uid, whatever the number of workers that
 * came and went) and exact: nothing is counted twice or lost, whenever
 * the exporter is killed.
 *
 * A fold is one transaction (fleet_state.c writes the state to a
 * temporary file, fsyncs it, renames it over the old one and fsyncs the
 * directory): the remainder with the dead heaps' values added and their
 * identities listed, or the state before. Heaps are released after the
 * commit, never before. On a restart the state says which heaps it
 * holds: those still present are skipped (their values are in the
 * remainder), and a heap whose fold was not committed is folded again.
 * Identities of heaps gone are dropped at the next commit, but for the
 * kept ones (still_listed()).
 *
 * Values are added exactly (blamer_exact_sum_*()): a counter's remainder
 * plus the live processes' parts is the same number however the parts
 * moved from one to the other, so no fold makes a counter go down.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "fleet.h"
#include "hash.h"

struct fl_ident fl_ident_of(const struct blamer_snap_process *p)
{
	return (struct fl_ident){ .backend = 0, .pid = p->pid, .start = p->start_time_ns,
				  .heap_id = p->heap_id, .heap_key = p->heap_key };
}

static struct fl_ident *ident_find(const struct blamer_fleet *f, const struct fl_ident *k)
{
	return f->nidents ? bsearch(k, f->idents, f->nidents, sizeof(*k), fl_ident_cmp) : NULL;
}

bool fl_folded(const struct blamer_fleet *f, const struct blamer_snap_process *p)
{
	struct fl_ident k = fl_ident_of(p);

	return ident_find(f, &k) != NULL;
}

/* ---- opening ---- */

/*
 * One exporter per state: two folding into one file would each commit
 * the heaps the other folded (counted twice) or lose the other's. A lock
 * file next to it, held (flock) for the fleet's life: the kernel drops
 * it when the process dies, however it dies. Made only in the directory
 * fl_dir_open() accepted, through its descriptor; in a sticky one others
 * may write, another user may have made it first: said so, with whose it
 * is.
 */
static int take_lock(struct blamer_fleet *f, char *err, size_t errlen)
{
	char path[PATH_MAX];
	const char *name = path + (f->name - f->path);	/* in the directory */
	struct stat st;
	int e;

	if (snprintf(path, sizeof(path), "%s.lock", f->path) >= (int)sizeof(path)) {
		snprintf(err, errlen, "the state path %s is too long", f->path);
		return -ENAMETOOLONG;
	}
	f->lockfd = openat(f->dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (f->lockfd < 0) {
		e = errno;
		if (fl_squatter(f, "the lock", name, path, err, errlen))
			return -EPERM;	/* (EACCES or ELOOP: fs.protected_*) */
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
		return -e;
	}
	if (fl_squatter(f, "the lock", name, path, err, errlen))
		return -EPERM;
	if (fstat(f->lockfd, &st) || st.st_uid != geteuid() || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a file of uid %u: refused", path,
			 (unsigned)geteuid());
		return -EPERM;
	}
	if (flock(f->lockfd, LOCK_EX | LOCK_NB)) {
		e = errno;
		if (e == EWOULDBLOCK)
			snprintf(err, errlen, "the state %s is in use by another exporter (one exporter per state: give this one --state elsewhere)",
				 f->path);
		else
			snprintf(err, errlen, "cannot lock %s: %s", path, strerror(e));
		return e == EWOULDBLOCK ? -EBUSY : -e;
	}
	return 0;
}

/*
 * The temporary files of commits that did not finish (an exporter killed
 * between writing and renaming one: "STATE.tmp-XXXXXX", mkostemp()'s):
 * ours, since we hold the lock, and never read. Removed, so that killed
 * exporters leave nothing behind; nothing else is (an operator's
 * "STATE.backup" once was: any 6 characters after a dot matched).
 */
static void drop_temporaries(const struct blamer_fleet *f)
{
	const char *base = f->name;
	size_t blen = strlen(base), mlen = strlen(FL_TMP_MARK);
	struct dirent *de;
	DIR *d;
	int fd;

	/* the directory checked at the open, not its path again (its own
	 * descriptor: closedir() closes it) */
	fd = openat(f->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (strlen(de->d_name) != blen + mlen + 6 || strncmp(de->d_name, base, blen) ||
		    strncmp(de->d_name + blen, FL_TMP_MARK, mlen) ||
		    strchr(de->d_name + blen + mlen, '.'))
			continue;
		if (!fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
		    st.st_uid == geteuid() && st.st_nlink == 1)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

/* $@name into *@out (@def if unset); false, and why, if it is not a
 * count from @min to @max. */
static bool count_from_env(const char *name, size_t def, size_t min, size_t max, size_t *out,
			   char *err, size_t errlen)
{
	const char *e = secure_getenv(name);
	char *end;
	unsigned long long n;

	*out = def;
	if (!e)
		return true;
	errno = 0;
	n = strtoull(e, &end, 10);
	if (*e < '0' || *e > '9' || *end || errno || n < min || n > max) {
		snprintf(err, errlen, "%s: want a count from %zu to %zu, got '%.32s'", name, min, max,
			 e);
		return false;
	}
	*out = (size_t)n;
	return true;
}

/* The bounds of a uid's part of the remainder, from the environment. */
static bool bounds_from_env(struct blamer_fleet *f, char *err, size_t errlen)
{
	return count_from_env("BLAMER_FOLD_MAX_SERIES", FL_MAX_SERIES_DEFAULT, 1,
			      FL_MAX_SERIES_LIMIT, &f->max_series, err, errlen) &&
	       count_from_env("BLAMER_FOLD_MAX_BYTES", FL_MAX_BYTES_DEFAULT, FL_MAX_BYTES_MIN,
			      FL_MAX_BYTES_LIMIT, &f->max_bytes, err, errlen);
}

struct blamer_fleet *blamer_fleet_open(const char *state, char *err, size_t errlen)
{
	struct blamer_fleet *f = calloc(1, sizeof(*f));
	const char *hook = secure_getenv("BLAMER_TEST_FOLD_ABORT");
	int ret;

	if (!f) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	f->lockfd = -1;
	f->dirfd = -1;
	if (!bounds_from_env(f, err, errlen)) {
		free(f);
		errno = EINVAL;
		return NULL;
	}
	f->seed = ex_seed(f);
	if (hook)
		f->test_abort = (uint32_t)strtoul(hook, NULL, 10);
	if (!state)
		return f;
	f->path = strdup(state);
	if (!f->path) {
		free(f);
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	/* the directory first: nothing is made (the lock) or removed (the
	 * temporaries) in one the state may not be kept in, and it is held
	 * open: the path is not looked up again */
	ret = fl_dir_open(f, err, errlen);
	if (!ret)
		ret = take_lock(f, err, errlen);
	if (!ret) {
		drop_temporaries(f);
		ret = fl_state_load(f, err, errlen);
	}
	if (ret) {
		blamer_fleet_close(f);
		errno = -ret;
		return NULL;
	}
	return f;
}

void blamer_fleet_close(struct blamer_fleet *f)
{
	if (!f)
		return;
	fl_state_free(f);
	prom_guard_proc_free(&f->guard);
	if (f->lockfd >= 0)
		close(f->lockfd);	/* the lock goes with it */
	if (f->dirfd >= 0)
		close(f->dirfd);
	free(f->path);
	free(f);
}

/* ---- the fold's lookups ---- */

/*
 * What a dead heap adds is found in the remainder by a keyed hash, not by
 * a walk of it: a heap chooses its series, paths and node names, and a
 * walk per series made a fold quadratic (one dead heap of 32,700 label
 * values took 3.8 s to fold, and each such heap more than the last: an
 * exporter any local user could stall). Each index covers its array
 * exactly (ix->n entries) and is made again from it when it does not.
 */
typedef uint64_t (*ix_hash_fn)(const struct blamer_fleet *f, size_t i);

/* @ix holding the first @n entries of its array, with room for one more;
 * false out of memory. */
static bool ix_fit(const struct blamer_fleet *f, struct fl_index *ix, size_t n, ix_hash_fn hash)
{
	size_t cap = 64, i, at;
	uint32_t *slot;

	if (ix->slot && ix->n == n && 2 * (n + 1) <= ix->mask + 1)
		return true;
	while (cap < 2 * (n + 1))
		cap *= 2;
	slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return false;
	for (i = 0; i < n; i++) {
		for (at = hash(f, i) & (cap - 1); slot[at]; at = (at + 1) & (cap - 1))
			;
		slot[at] = (uint32_t)i + 1;
	}
	free(ix->slot);
	ix->slot = slot;
	ix->mask = cap - 1;
	ix->n = n;
	return true;
}

/* Entry @i, just appended, into @ix at the free slot @at its probe ended on. */
static void ix_add(struct fl_index *ix, size_t at, size_t i)
{
	ix->slot[at] = (uint32_t)i + 1;
	ix->n = i + 1;
}

static uint64_t series_key(const struct blamer_fleet *f, size_t def, uint32_t uid, uint32_t depth,
			   const uint64_t *nodes, char *const *values, uint32_t nlabels)
{
	uint64_t h = ex_mix(ex_mix(f->seed, def), uid);
	uint32_t i;

	h = ex_mix_bytes(h, nodes, depth * sizeof(*nodes));
	for (i = 0; i < nlabels; i++)
		h = ex_mix_str(h, values[i]);
	return h;
}

static uint64_t series_hash(const struct blamer_fleet *f, size_t i)
{
	const struct fl_series *x = &f->series[i];

	return series_key(f, x->def, x->uid, x->depth, x->nodes, x->values,
			  f->defs[x->def].nlabels);
}

static uint64_t path_key(const struct blamer_fleet *f, uint32_t uid, uint32_t unit,
			 uint32_t depth, const uint64_t *nodes)
{
	return ex_mix_bytes(ex_mix(ex_mix(f->seed ^ 1, uid), unit), nodes,
			    depth * sizeof(*nodes));
}

static uint64_t path_hash(const struct blamer_fleet *f, size_t i)
{
	const struct fl_path *x = &f->paths[i];

	return path_key(f, x->uid, x->unit, x->depth, x->nodes);
}

static uint64_t node_hash(const struct blamer_fleet *f, size_t i)
{
	return ex_mix(ex_mix(f->seed ^ 2, f->nodes[i].uid), f->nodes[i].node.id);
}

static uint64_t unit_hash(const struct blamer_fleet *f, size_t i)
{
	return ex_mix(ex_mix(f->seed ^ 3, f->units[i].uid), f->units[i].def.unit);
}

static uint64_t uidn_hash(const struct blamer_fleet *f, size_t i)
{
	return ex_mix(f->seed ^ 5, f->uidn[i].uid);
}

/* @uid's counts in the remainder (made 0 if new); NULL out of memory. */
static struct fl_uid_series *uid_series(struct blamer_fleet *f, uint32_t uid)
{
	struct fl_index *ix = &f->uidn_ix;
	struct fl_uid_series *v;
	size_t at;

	if (!ix_fit(f, ix, f->nuidn, uidn_hash))
		return NULL;
	for (at = ex_mix(f->seed ^ 5, uid) & ix->mask; ix->slot[at]; at = (at + 1) & ix->mask)
		if (f->uidn[ix->slot[at] - 1].uid == uid)
			return &f->uidn[ix->slot[at] - 1];
	v = realloc(f->uidn, (f->nuidn + 1) * sizeof(*v));
	if (!v)
		return NULL;
	f->uidn = v;
	v[f->nuidn] = (struct fl_uid_series){ .uid = uid };
	ix_add(ix, at, f->nuidn);
	return &v[f->nuidn++];
}

/*
 * What a record may take in the state, at most (fleet_state.c writes it:
 * a number is at most FL_NUM_BYTES with its space, a string's bytes
 * escaped %XX at most 3 each): a uid's bytes so counted bound its part of
 * the file, however its values grow (a series' partials are at most
 * BLAMER_EXACT_PARTIALS, each counted).
 */
#define FL_NUM_BYTES	25	/* " -0x1.fffffffffffffp+1023", a u64 */

static size_t str_bytes(const char *s)
{
	return 4 + 3 * strlen(s ? s : "");	/* " s:" and the bytes */
}

static size_t def_bytes(const struct blamer_snap_metric_def *d)
{
	size_t n = 4 + 8 * FL_NUM_BYTES + str_bytes(d->name) + str_bytes(d->help);
	uint32_t i;

	for (i = 0; i < d->nlabels && i < BLAMER_METRIC_LABELS_MAX; i++)
		n += str_bytes(d->labels[i]);
	return n + (size_t)d->nbuckets * FL_NUM_BYTES;
}

/* A series of @d, path @depth, labels @values and @nexact partials. */
static size_t series_bytes(const struct blamer_snap_metric_def *d, uint32_t depth,
			   char *const *values, uint32_t nexact)
{
	size_t n = 7 + (7 + (size_t)depth + nexact) * FL_NUM_BYTES;
	uint32_t i;

	for (i = 0; i < d->nlabels && i < BLAMER_METRIC_LABELS_MAX; i++)
		n += str_bytes(values[i]);
	return n + (d->kind == BLAMER_METRIC_HISTOGRAM ? (size_t)d->nbuckets * FL_NUM_BYTES : 0);
}

/* A series' "lost" line (its index and count). */
#define FL_LOST_BYTES	(6 + 2 * FL_NUM_BYTES)

static size_t path_bytes(uint32_t depth)
{
	return 5 + (4 + (size_t)depth) * FL_NUM_BYTES;
}

/* A node's or a unit's line (names of at most 32 bytes). */
#define FL_NAME_BYTES	(6 + 2 * FL_NUM_BYTES + 4 + 3 * 32)

/* The index of @uid's node @id in the remainder, f->nnodes if none (*@at
 * the free slot its probe ended on); SIZE_MAX out of memory. */
static size_t node_at(struct blamer_fleet *f, uint32_t uid, uint64_t id, size_t *at)
{
	struct fl_index *ix = &f->nodes_ix;
	const struct blamer_snap_uid_node *x;

	if (!ix_fit(f, ix, f->nnodes, node_hash))
		return SIZE_MAX;
	for (*at = ex_mix(ex_mix(f->seed ^ 2, uid), id) & ix->mask; ix->slot[*at];
	     *at = (*at + 1) & ix->mask) {
		x = &f->nodes[ix->slot[*at] - 1];
		if (x->uid == uid && x->node.id == id)
			return ix->slot[*at] - 1;
	}
	return f->nnodes;
}

/* The index of @uid's named unit @unit in the remainder, as node_at(). */
static size_t unit_at(struct blamer_fleet *f, uint32_t uid, uint32_t unit, size_t *at)
{
	struct fl_index *ix = &f->units_ix;
	const struct blamer_snap_uid_unit_def *x;

	if (!ix_fit(f, ix, f->nunits, unit_hash))
		return SIZE_MAX;
	for (*at = ex_mix(ex_mix(f->seed ^ 3, uid), unit) & ix->mask; ix->slot[*at];
	     *at = (*at + 1) & ix->mask) {
		x = &f->units[ix->slot[*at] - 1];
		if (x->uid == uid && x->def.unit == unit)
			return ix->slot[*at] - 1;
	}
	return f->nunits;
}

/* The names @nodes use charged to @u, each once (@charged: by index);
 * false out of memory. */
static bool charge_nodes(struct blamer_fleet *f, struct fl_uid_series *u, bool *charged,
			 uint32_t uid, const uint64_t *nodes, uint32_t depth)
{
	size_t at, k;
	uint32_t i;

	for (i = 0; i < depth; i++) {
		k = node_at(f, uid, nodes[i], &at);
		if (k == SIZE_MAX)
			return false;
		if (k < f->nnodes && !charged[k]) {
			charged[k] = true;
			u->bytes += FL_NAME_BYTES;
		}
	}
	return true;
}

/* What each uid's series, paths and definitions take, and the nodes and
 * units their records name first; false out of memory. */
static bool count_records(struct blamer_fleet *f, bool *node_charged, bool *unit_charged)
{
	struct fl_uid_series *u;
	size_t i, k, at;

	for (i = 0; i < f->ndefs; i++) {
		if (!(u = uid_series(f, f->def_uids[i])))
			return false;
		u->bytes += def_bytes(&f->defs[i]);
	}
	for (i = 0; i < f->nseries; i++) {
		const struct fl_series *x = &f->series[i];

		if (!(u = uid_series(f, x->uid)) ||
		    !charge_nodes(f, u, node_charged, x->uid, x->nodes, x->depth))
			return false;
		u->n++;
		u->bytes += series_bytes(&f->defs[x->def], x->depth, x->values, x->nexact) +
			    (x->lost ? FL_LOST_BYTES : 0);
	}
	for (i = 0; i < f->npaths; i++) {
		const struct fl_path *x = &f->paths[i];

		if (!(u = uid_series(f, x->uid)) ||
		    !charge_nodes(f, u, node_charged, x->uid, x->nodes, x->depth) ||
		    (k = unit_at(f, x->uid, x->unit, &at)) == SIZE_MAX)
			return false;
		u->bytes += path_bytes(x->depth);
		if (k < f->nunits && !unit_charged[k]) {
			unit_charged[k] = true;
			u->bytes += FL_NAME_BYTES;
		}
	}
	return true;
}

/* Each uid's series and bytes in the remainder, counted after the state
 * was read (fl_state_free() drops the counts; the fold keeps them
 * since). */
static bool count_uid_series(struct blamer_fleet *f)
{
	bool *nc = calloc(f->nnodes + 1, sizeof(*nc)), *uc = calloc(f->nunits + 1, sizeof(*uc));
	bool ok;

	f->nuidn = 0;
	f->uidn_ix.n = SIZE_MAX;	/* covers nothing: made again */
	ok = nc && uc && count_records(f, nc, uc);
	free(nc);
	free(uc);
	return ok;
}

/* ---- what a dead heap adds ---- */

static char *dup_str(const char *s)
{
	return strdup(s ? s : "");
}

static uint64_t def_key(const struct blamer_fleet *f, const char *name, uint32_t uid)
{
	return ex_mix_str(ex_mix(f->seed ^ 4, uid), name);
}

static uint64_t def_hash(const struct blamer_fleet *f, size_t i)
{
	return def_key(f, f->defs[i].name, f->def_uids[i]);
}

/* The index of the remainder's definition of @name for @uid; f->ndefs if
 * none, and *@at the free slot its index probe ended on (SIZE_MAX: no
 * index, out of memory: then found by a walk). */
static size_t def_named(struct blamer_fleet *f, const char *name, uint32_t uid, size_t *at)
{
	struct fl_index *ix = &f->defs_ix;
	size_t i;

	if (!ix_fit(f, ix, f->ndefs, def_hash)) {
		*at = SIZE_MAX;
		for (i = 0; i < f->ndefs && (f->def_uids[i] != uid || strcmp(f->defs[i].name, name));
		     i++)
			;
		return i;
	}
	for (*at = def_key(f, name, uid) & ix->mask; ix->slot[*at]; *at = (*at + 1) & ix->mask) {
		i = ix->slot[*at] - 1;
		if (f->def_uids[i] == uid && !strcmp(f->defs[i].name, name))
			return i;
	}
	return f->ndefs;
}

/* The remainder's definition of @d's name for @uid, added if new; NULL if
 * it holds another (a conflict) or out of memory (*oom). */
static struct blamer_snap_metric_def *def_of(struct blamer_fleet *f,
					     const struct blamer_snap_metric_def *d,
					     struct fl_uid_series *u, size_t *idx, bool *oom)
{
	uint32_t uid = u->uid;
	size_t at, i = def_named(f, d->name, uid, &at);

	if (i < f->ndefs) {
		*idx = i;
		return blamer_metric_def_cmp(&f->defs[i], d) ? NULL : &f->defs[i];
	}
	if (!fl_def_add(f, d, uid)) {
		*oom = true;
		return NULL;
	}
	if (at != SIZE_MAX)
		ix_add(&f->defs_ix, at, i);
	*idx = i;
	u->bytes += def_bytes(d);
	return &f->defs[i];
}

static bool series_is(const struct fl_series *x, size_t def, uint32_t uid,
		      const struct blamer_snap_metric *m, uint32_t nlabels)
{
	uint32_t i;

	if (x->def != def || x->uid != uid || x->depth != m->depth ||
	    memcmp(x->nodes, m->nodes, m->depth * sizeof(m->nodes[0])))
		return false;
	for (i = 0; i < nlabels; i++)
		if (strcmp(x->values[i], m->values[i]))
			return false;
	return true;
}

/* @x's exact sum plus @add (@n partials): the partials of the total. */
static bool exact_add(struct fl_series *x, const double *add, uint32_t n)
{
	struct blamer_exact_sum e;
	uint32_t i;
	double *p;

	memset(&e, 0, sizeof(e));
	for (i = 0; i < x->nexact; i++)
		blamer_exact_sum_add(&e, x->exact[i]);
	for (i = 0; i < n; i++)
		blamer_exact_sum_add(&e, add[i]);
	n = e.has_special ? 1 : e.n;
	p = n ? malloc(n * sizeof(*p)) : NULL;
	if (n && !p)
		return false;
	if (e.has_special)
		p[0] = e.special;
	else if (n)
		memcpy(p, e.p, n * sizeof(*p));
	free(x->exact);
	x->exact = p;
	x->nexact = n;
	return true;
}

/* The index of the remainder's series of (@def, @uid, @m's values and
 * path): f->nseries if none, and *@at the free slot its probe ended on;
 * SIZE_MAX out of memory. */
static size_t series_find(struct blamer_fleet *f, size_t def, uint32_t uid,
			  const struct blamer_snap_metric *m, size_t *at)
{
	const struct blamer_snap_metric_def *d = &f->defs[def];
	struct fl_index *ix = &f->series_ix;

	if (!ix_fit(f, ix, f->nseries, series_hash))
		return SIZE_MAX;
	for (*at = series_key(f, def, uid, m->depth, m->nodes, m->values, d->nlabels) & ix->mask;
	     ix->slot[*at]; *at = (*at + 1) & ix->mask)
		if (series_is(&f->series[ix->slot[*at] - 1], def, uid, m, d->nlabels))
			return ix->slot[*at] - 1;
	return f->nseries;
}

/* The remainder's series of (@def, @uid, @m's values and path), added if
 * new (counted for @uid); NULL out of memory. */
static struct fl_series *series_of(struct blamer_fleet *f, size_t def,
				   struct fl_uid_series *u, const struct blamer_snap_metric *m)
{
	const struct blamer_snap_metric_def *d = &f->defs[def];
	uint32_t i, uid = u->uid;
	struct fl_series *x, *v;
	size_t at, k = series_find(f, def, uid, m, &at);

	if (k < f->nseries)
		return &f->series[k];
	if (k == SIZE_MAX)
		return NULL;
	u->n++;
	u->bytes += series_bytes(d, m->depth, m->values, 0);	/* its partials as they come */
	v = realloc(f->series, (f->nseries + 1) * sizeof(*v));
	if (!v)
		return NULL;
	f->series = v;
	x = &f->series[f->nseries];
	memset(x, 0, sizeof(*x));
	x->def = (uint32_t)def;
	x->uid = uid;
	x->depth = m->depth;
	memcpy(x->nodes, m->nodes, m->depth * sizeof(m->nodes[0]));
	ix_add(&f->series_ix, at, f->nseries++);
	for (i = 0; i < d->nlabels; i++)
		if (!(x->values[i] = dup_str(m->values[i])))
			return NULL;
	if (d->kind == BLAMER_METRIC_HISTOGRAM &&
	    !(x->buckets = calloc(d->nbuckets, sizeof(*x->buckets))))
		return NULL;
	/* a gauge of min, max or mostrecent: no value until one is folded */
	x->value = d->kind == BLAMER_METRIC_GAUGE ? __builtin_nan("") : 0;
	return x;
}

/* Whether a series of definition @d outlives its process in the
 * remainder (the LIVE* gauges and per-process metrics end with it). */
static bool folds(const struct blamer_snap_metric_def *d)
{
	if (!d || (d->flags & BLAMER_METRIC_PER_PROCESS))
		return false;
	return d->kind != BLAMER_METRIC_GAUGE ||
	       !(d->gauge_mode == BLAMER_GAUGE_ALL || d->gauge_mode == BLAMER_GAUGE_LIVEALL ||
		 d->gauge_mode == BLAMER_GAUGE_LIVEMIN || d->gauge_mode == BLAMER_GAUGE_LIVEMAX ||
		 d->gauge_mode == BLAMER_GAUGE_LIVESUM ||
		 d->gauge_mode == BLAMER_GAUGE_LIVEMOSTRECENT);
}

/* The bytes @nodes' names may add that the remainder has not named
 * (counted again if a heap names one twice: a bound, never less). */
static size_t new_names_bytes(struct blamer_fleet *f, const struct blamer_snapshot *s,
			      uint32_t uid, const uint64_t *nodes, uint32_t depth)
{
	size_t n = 0, at;
	uint32_t i;

	for (i = 0; i < depth; i++)
		if (blamer_snap_uid_node_name(s, uid, nodes[i]) &&
		    node_at(f, uid, nodes[i], &at) == f->nnodes)
			n += FL_NAME_BYTES;
	return n;
}

/* The index of the remainder's (@uid, @sp's unit @k, path) value,
 * f->npaths if none (*@at the free slot its probe ended on); SIZE_MAX
 * out of memory. */
static size_t path_find(struct blamer_fleet *f, uint32_t uid, const struct blamer_snap_path *sp,
			uint32_t k, size_t *at)
{
	struct fl_index *ix = &f->paths_ix;
	const struct fl_path *x;

	if (!ix_fit(f, ix, f->npaths, path_hash))
		return SIZE_MAX;
	for (*at = path_key(f, uid, sp->units[k], sp->depth, sp->nodes) & ix->mask; ix->slot[*at];
	     *at = (*at + 1) & ix->mask) {
		x = &f->paths[ix->slot[*at] - 1];
		if (x->uid == uid && x->unit == sp->units[k] && x->depth == sp->depth &&
		    !memcmp(x->nodes, sp->nodes, sp->depth * sizeof(sp->nodes[0])))
			return ix->slot[*at] - 1;
	}
	return f->npaths;
}

/* The bytes @p's paths may add to the state (their values, and the
 * names of the nodes and units they bring); SIZE_MAX out of memory. */
static size_t paths_cost(struct blamer_fleet *f, const struct blamer_snapshot *s,
			 const struct blamer_snap_process *p)
{
	size_t i, at, k, n = 0;
	uint32_t j;

	for (i = 0; i < p->npaths; i++) {
		const struct blamer_snap_path *sp = &p->paths[i];

		for (j = 0; j < sp->nvalues; j++) {
			if ((k = path_find(f, p->uid, sp, j, &at)) == SIZE_MAX ||
			    unit_at(f, p->uid, sp->units[j], &at) == SIZE_MAX)
				return SIZE_MAX;
			if (k == f->npaths)
				n += path_bytes(sp->depth);
			if (sp->units[j] >= BLAMER_UNIT_APP_BASE &&
			    blamer_snap_uid_unit_def(s, p->uid, sp->units[j]) &&
			    unit_at(f, p->uid, sp->units[j], &at) == f->nunits)
				n += FL_NAME_BYTES;
		}
		n += new_names_bytes(f, s, p->uid, sp->nodes, sp->depth);
	}
	return n;
}

/* A heap's series in the order the remainder keys them (name, label
 * values, path): one a heap lists twice side by side. Of one name, one
 * definition: new_lost() sorts none in conflict. */
static int metric_key_cmp(const void *a, const void *b)
{
	const struct blamer_snap_metric *x = *(const struct blamer_snap_metric *const *)a;
	const struct blamer_snap_metric *y = *(const struct blamer_snap_metric *const *)b;
	uint32_t i;
	int c = strcmp(x->def->name, y->def->name);

	if (c)
		return c;
	for (i = 0; i < x->def->nlabels && i < BLAMER_METRIC_LABELS_MAX; i++)
		if ((c = strcmp(x->values[i], y->values[i])))
			return c;
	return blamer_path_cmp(x->nodes, x->depth, y->nodes, y->depth);
}

/*
 * How many of dead heap @p's counters and histograms (none in conflict:
 * keepable() looked) the fold will find not fitting in the remainder and
 * mark lost (fold_metric()), for the bytes their "lost" lines take: the
 * series' exact sum with the remainder's not finite, or its count with
 * the remainder's past 64 bits (so is a bucket: a count is their sum). A
 * series the heap lists twice is summed first (its parts are at least 0:
 * if the sum fits, so does each part added on its way); one the
 * remainder lost already is not counted again. -1 out of memory.
 */
static long new_lost(struct blamer_fleet *f, const struct blamer_snap_process *p)
{
	const struct blamer_snap_metric **v = malloc((p->nmetrics + 1) * sizeof(*v));
	size_t i, j, k, n = 0, at, def;
	long ret = 0;

	if (!v)
		return -1;
	for (i = 0; i < p->nmetrics; i++)
		if (folds(p->metrics[i].def) && p->metrics[i].def->kind != BLAMER_METRIC_GAUGE)
			v[n++] = &p->metrics[i];
	if (n > 1)
		qsort(v, n, sizeof(*v), metric_key_cmp);
	for (i = 0; i < n; i = j) {
		const struct blamer_snap_metric_def *d = v[i]->def;
		const struct fl_series *x = NULL;
		struct blamer_exact_sum e;
		uint64_t count = 0;
		bool over = false;

		for (j = i + 1; j < n && !metric_key_cmp(&v[i], &v[j]); j++)
			;
		memset(&e, 0, sizeof(e));
		def = def_named(f, d->name, p->uid, &at);
		k = def < f->ndefs ? series_find(f, def, p->uid, v[i], &at) : f->nseries;
		if (k == SIZE_MAX) {
			ret = -1;
			break;
		}
		if (def < f->ndefs && k < f->nseries)
			x = &f->series[k];
		if (x && x->lost)
			continue;
		for (k = 0; x && k < x->nexact; k++)
			blamer_exact_sum_add(&e, x->exact[k]);
		for (k = 0; x && x->buckets && k < d->nbuckets; k++)
			over |= __builtin_add_overflow(count, x->buckets[k], &count);
		for (k = i; k < j; k++) {
			uint32_t b;

			for (b = 0; b < v[k]->nexact; b++)
				blamer_exact_sum_add(&e, v[k]->exact[b]);
			if (d->kind == BLAMER_METRIC_HISTOGRAM)
				over |= __builtin_add_overflow(count, v[k]->count, &count);
		}
		ret += over || e.has_special;
	}
	free(v);
	return ret;
}

/* Whether @m's part fits in the remainder's series @x ("A sum must
 * fit"): their exact sum finite, their buckets' count within 64 bits.
 * The state then never holds inf or a wrapped count (fleet_state.c
 * refuses one). */
static bool part_fits(const struct fl_series *x, const struct blamer_snap_metric *m)
{
	const struct blamer_snap_metric_def *d = m->def;
	struct blamer_exact_sum e;
	uint64_t count = 0, b;
	uint32_t i;

	memset(&e, 0, sizeof(e));
	for (i = 0; i < x->nexact; i++)
		blamer_exact_sum_add(&e, x->exact[i]);
	for (i = 0; i < m->nexact; i++)
		blamer_exact_sum_add(&e, m->exact[i]);
	for (i = 0; d->kind == BLAMER_METRIC_HISTOGRAM && i < d->nbuckets; i++)
		if (__builtin_add_overflow(x->buckets[i], m->buckets[i], &b) ||
		    __builtin_add_overflow(count, b, &count))
			return false;
	return !e.has_special;
}

/*
 * Whether the remainder can keep every series of dead heap @p: none
 * whose definition lost to another of its name in this snapshot
 * (m->conflict), nor whose name the remainder holds defined otherwise
 * for @p's uid. A heap with one is not folded, so not released: its
 * values stay counted while it is there (its conflicts shown in
 * blamer_metric_conflicts, as the exposition finds them), where a fold
 * would have recorded them as kept and thrown them away (a redeploy that
 * changed a metric's labels lost every later worker's counts, silently).
 * Nor one whose new series would take its uid past f->max_series in the
 * remainder, or whose records (series, paths, definitions, node and unit
 * names, each at most what it may take: *_bytes()) past f->max_bytes of
 * the state: a user whose heaps choose ever new label values or paths
 * would grow the state every start reads until it could not start, and
 * every commit writes it whole (a series the fold will mark lost counted
 * with its "lost" line: new_lost()). *@held: held back by those bounds.
 *
 * A counter or histogram whose sum with the remainder would not fit does
 * not hold the heap back: its other series fold, that part is thrown
 * away and counted (fold_metric()). Held, a heap of an honest counter
 * beside a series the remainder cannot grow (a count of 2^64 - 1 folded
 * once, which nothing takes out) was held for good, and its counter's
 * counts lost once retention took it, or the exporter restarted.
 */
static bool keepable(struct blamer_fleet *f, const struct blamer_snapshot *s,
		     const struct blamer_snap_process *p, bool *held)
{
	struct fl_uid_series *have = uid_series(f, p->uid);
	size_t i, j, at, fresh = 0, bytes;
	long lost;

	*held = false;
	if (!have || (bytes = paths_cost(f, s, p)) == SIZE_MAX)
		return false;	/* out of memory: not now */
	for (i = 0; i < p->nmetrics; i++) {
		const struct blamer_snap_metric *m = &p->metrics[i];

		if (!folds(m->def))
			continue;
		if (m->conflict)
			return false;
		j = def_named(f, m->def->name, p->uid, &at);
		if (j < f->ndefs && blamer_metric_def_cmp(&f->defs[j], m->def))
			return false;
		bytes += new_names_bytes(f, s, p->uid, m->nodes, m->depth);
		if (j == f->ndefs)
			bytes += def_bytes(m->def);	/* (once per series: a bound) */
		if (j == f->ndefs || series_find(f, j, p->uid, m, &at) == f->nseries) {
			fresh++;	/* (a series a heap lists twice counts twice) */
			bytes += series_bytes(m->def, m->depth, m->values, 0);
		}
		bytes += (size_t)m->nexact * FL_NUM_BYTES;	/* partials it may add */
	}
	lost = new_lost(f, p);
	if (lost < 0)
		return false;	/* out of memory: not now */
	bytes += (size_t)lost * FL_LOST_BYTES;
	*held = have->n + fresh > f->max_series || bytes > f->max_bytes ||
		have->bytes > f->max_bytes - bytes;
	return !*held;
}

/* What merging a dead process's series into the remainder keeps. */
static bool fold_metric(struct blamer_fleet *f, struct fl_uid_series *u,
			const struct blamer_snap_metric *m, bool *oom)
{
	const struct blamer_snap_metric_def *d = m->def;
	struct fl_series *x;
	size_t idx;
	uint32_t i, before;

	if (!folds(d) || m->conflict)
		return true;	/* keepable() held back a heap with a conflict */
	if (!def_of(f, d, u, &idx, oom)) {
		if (!*oom)
			f->conflicts++;
		return !*oom;
	}
	x = series_of(f, idx, u, m);
	if (!x) {
		*oom = true;
		return false;
	}
	/*
	 * A counter's or histogram's part that does not fit (its sum with
	 * the remainder's past the largest double, a count past 2^64 - 1):
	 * thrown away and counted, the remainder's series left as it is,
	 * and so every later part of a series lost once. Added, the state
	 * would hold inf or a wrapped count for good; the heap held back
	 * instead, its other series were never folded. Without the part the
	 * series is not its total: the exposition leaves it out for good, as
	 * it left it out while the part was counted there (it did not fit).
	 */
	if (d->kind != BLAMER_METRIC_GAUGE && (x->lost || !part_fits(x, m))) {
		if (!x->lost)
			u->bytes += FL_LOST_BYTES;	/* its "lost" line */
		x->lost++;
		return true;
	}
	if (d->kind == BLAMER_METRIC_HISTOGRAM)
		for (i = 0; i < d->nbuckets; i++)
			x->buckets[i] += m->buckets[i];	/* part_fits(): no wrap */
	before = x->nexact;
	if (d->kind != BLAMER_METRIC_GAUGE) {
		if (!exact_add(x, m->exact, m->nexact))
			return (*oom = true, false);
		u->bytes += ((size_t)x->nexact - before) * FL_NUM_BYTES;	/* modulo: fewer too */
		return true;
	}
	switch (d->gauge_mode) {
	case BLAMER_GAUGE_MIN:
		if (x->value != x->value || m->value < x->value)
			x->value = m->value;
		break;
	case BLAMER_GAUGE_MAX:
		if (x->value != x->value || m->value > x->value)
			x->value = m->value;
		break;
	case BLAMER_GAUGE_MOSTRECENT:
		if (x->value != x->value || m->stamp_ns > x->stamp) {
			x->value = m->value;
			x->stamp = m->stamp_ns;
		}
		break;
	default:	/* SUM */
		if (!exact_add(x, &m->value, 1))
			return (*oom = true, false);
		u->bytes += ((size_t)x->nexact - before) * FL_NUM_BYTES;
	}
	return true;
}

static bool fold_path(struct blamer_fleet *f, struct fl_uid_series *u,
		      const struct blamer_snap_path *sp, uint32_t k)
{
	struct fl_path *x, *v;
	size_t at, i = path_find(f, u->uid, sp, k, &at);

	if (i == SIZE_MAX)
		return false;
	if (i < f->npaths) {
		f->paths[i].value += sp->values[k];	/* modulo 2^64, as the writer adds */
		return true;
	}
	v = realloc(f->paths, (f->npaths + 1) * sizeof(*v));
	if (!v)
		return false;
	f->paths = v;
	ix_add(&f->paths_ix, at, f->npaths);
	x = &f->paths[f->npaths++];
	memset(x, 0, sizeof(*x));
	x->uid = u->uid;
	x->unit = sp->units[k];
	x->depth = sp->depth;
	memcpy(x->nodes, sp->nodes, sp->depth * sizeof(sp->nodes[0]));
	x->value = sp->values[k];
	u->bytes += path_bytes(sp->depth);
	return true;
}

static bool fold_drop(struct blamer_fleet *f, uint32_t uid, uint32_t reason, uint64_t n)
{
	struct fl_drop *v;
	size_t i;

	for (i = 0; i < f->ndrops; i++)
		if (f->drops[i].uid == uid && f->drops[i].reason == reason) {
			f->drops[i].value = fl_sat_add(f->drops[i].value, n);
			return true;
		}
	v = realloc(f->drops, (f->ndrops + 1) * sizeof(*v));
	if (!v)
		return false;
	f->drops = v;
	f->drops[f->ndrops++] = (struct fl_drop){ uid, reason, n };
	return true;
}

static int node_cmp(const void *a, const void *b)
{
	const struct blamer_snap_uid_node *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return (x->node.id > y->node.id) - (x->node.id < y->node.id);
}

/* The name @s gives @u's node @id (its uid's heaps' name, never another
 * user's), kept for the remainder's labels (the first kept wins: a
 * series' labels do not change), charged to @u. Appended: the fold sorts
 * the nodes once it is done (sort_nodes()), not at each one. */
static bool remember_node(struct blamer_fleet *f, struct fl_uid_series *u,
			  const struct blamer_snapshot *s, uint64_t id)
{
	const char *name = blamer_snap_uid_node_name(s, u->uid, id);
	struct blamer_snap_uid_node *v;
	size_t at, k;

	if (!name)
		return true;
	k = node_at(f, u->uid, id, &at);
	if (k != f->nnodes)
		return k != SIZE_MAX;
	v = realloc(f->nodes, (f->nnodes + 1) * sizeof(*v));
	if (!v)
		return false;
	f->nodes = v;
	memset(&v[f->nnodes], 0, sizeof(*v));
	v[f->nnodes].uid = u->uid;
	v[f->nnodes].node.id = id;
	snprintf(v[f->nnodes].node.name, sizeof(v->node.name), "%s", name);
	ix_add(&f->nodes_ix, at, f->nnodes++);
	u->bytes += FL_NAME_BYTES;
	return true;
}

/* The nodes in id order (the state's, and the exposition's lookups),
 * once a fold added some; their index is then made again. */
static void sort_nodes(struct blamer_fleet *f, size_t before)
{
	if (f->nnodes == before)
		return;
	qsort(f->nodes, f->nnodes, sizeof(*f->nodes), node_cmp);
	free(f->nodes_ix.slot);
	memset(&f->nodes_ix, 0, sizeof(f->nodes_ix));
}

static bool remember_unit(struct blamer_fleet *f, struct fl_uid_series *u,
			  const struct blamer_snapshot *s, uint32_t unit)
{
	const struct blamer_snap_unit_def *d = unit >= BLAMER_UNIT_APP_BASE ?
					       blamer_snap_uid_unit_def(s, u->uid, unit) : NULL;
	struct blamer_snap_uid_unit_def *v;
	size_t at, k;

	if (!d)
		return true;
	k = unit_at(f, u->uid, unit, &at);
	if (k != f->nunits)
		return k != SIZE_MAX;
	v = realloc(f->units, (f->nunits + 1) * sizeof(*v));
	if (!v)
		return false;
	f->units = v;
	f->units[f->nunits].uid = u->uid;
	f->units[f->nunits].def = *d;
	ix_add(&f->units_ix, at, f->nunits++);
	u->bytes += FL_NAME_BYTES;
	return true;
}

/* Everything dead @p adds to the remainder, charged to its uid; false
 * out of memory. */
static bool fold_one(struct blamer_fleet *f, const struct blamer_snapshot *s,
		     const struct blamer_snap_process *p)
{
	/* (keepable() made it: no uid is added meanwhile, so it stays put) */
	struct fl_uid_series *u = uid_series(f, p->uid);
	bool oom = false;
	size_t i;
	uint32_t k;

	if (!u)
		return false;
	for (i = 0; i < p->nmetrics; i++) {
		const struct blamer_snap_metric *m = &p->metrics[i];

		if (!fold_metric(f, u, m, &oom))
			return false;
		for (k = 0; k < m->depth; k++)
			if (!remember_node(f, u, s, m->nodes[k]))
				return false;
	}
	for (i = 0; i < p->npaths; i++) {
		const struct blamer_snap_path *sp = &p->paths[i];

		for (k = 0; k < sp->nvalues; k++)
			if (!fold_path(f, u, sp, k) || !remember_unit(f, u, s, sp->units[k]))
				return false;
		for (k = 0; k < sp->depth; k++)
			if (!remember_node(f, u, s, sp->nodes[k]))
				return false;
	}
	for (k = 0; k < BLAMER_DROP_MAX; k++)
		if (p->drops[k] && !fold_drop(f, p->uid, k, p->drops[k]))
			return false;
	return true;
}

/*
 * A dead heap read in full (or holding nothing): its values are final.
 * Not a disproved one: /proc contradicts its claim, which may be a
 * writer's in another pid or time namespace that runs still; it is
 * counted while it is there, never folded nor released by the fold
 * (retention decides; if it goes, the guard holds its series).
 */
static bool foldable(const struct blamer_snap_process *p)
{
	return p->state == BLAMER_PROC_DEAD && !p->disproved &&
	       p->health != BLAMER_HEALTH_UNCHECKED &&
	       p->health != BLAMER_HEALTH_UNREADABLE && p->health != BLAMER_HEALTH_TORN;
}

static bool not_folded(const struct blamer_snap_process *p, void *arg)
{
	return !fl_folded(arg, p);
}

struct folded_proc {
	const struct fl_ident *id;
	const struct blamer_snap_process *p;
};

/* qsort() of identities by pointer (a struct folded_proc starts with
 * one), the ones seen dead last first. */
static int newest_first(const void *a, const void *b)
{
	const struct fl_ident *x = *(const struct fl_ident *const *)a;
	const struct fl_ident *y = *(const struct fl_ident *const *)b;

	return (x->dead_ns < y->dead_ns) - (x->dead_ns > y->dead_ns);
}

/* Folded processes by uid, the ones seen dead last first. */
static int uid_newest_first(const void *a, const void *b)
{
	const struct folded_proc *x = a, *y = b;

	if (x->p->uid != y->p->uid)
		return x->p->uid < y->p->uid ? -1 : 1;
	return newest_first(a, b);
}

/*
 * Releases the folded heaps of @s beyond the @keep of each uid seen dead
 * last: one list for every user let one user's churn (ten short processes
 * killed in 5 s) release another user's crashed heap, its postmortem.
 */
static void release_old(struct blamer_fleet *f, struct blamer_reader *r,
			const struct blamer_snapshot *s, unsigned keep)
{
	struct folded_proc *v = malloc((s->nprocs + 1) * sizeof(*v));
	size_t i, n = 0, k, kept = 0;
	char e[256];

	if (!v)
		return;
	for (i = 0; i < s->nprocs; i++) {
		struct fl_ident id = fl_ident_of(&s->procs[i]);
		const struct fl_ident *x = ident_find(f, &id);

		if (x)
			v[n++] = (struct folded_proc){ x, &s->procs[i] };
	}
	qsort(v, n, sizeof(*v), uid_newest_first);
	for (k = 0; k < n; k++) {
		kept = k && v[k].p->uid == v[k - 1].p->uid ? kept + 1 : 1;
		if (kept <= keep)
			continue;
		/* gone already, or refused: the next fold tries again */
		blamer_reader_release(r, v[k].p, e, sizeof(e));
		fl_test_abort(f, 6);
	}
	free(v);
}

/* How many uids the heaps kept may be of: those with a remainder, or
 * with a process in @s, whichever are more (identities hold no uid). */
static size_t kept_uids(const struct blamer_fleet *f, const struct blamer_snapshot *s)
{
	uint32_t *u = malloc((s->nprocs + 1) * sizeof(*u));
	size_t i, n = 0;

	if (!u)
		return f->nuidn + s->nprocs;	/* more than enough */
	for (i = 0; i < s->nprocs; i++)
		u[i] = s->procs[i].uid;
	qsort(u, s->nprocs, sizeof(*u), fl_u32_cmp);
	for (i = 0; i < s->nprocs; i++)
		n += !i || u[i] != u[i - 1];
	free(u);
	return n > f->nuidn ? n : f->nuidn;
}

/*
 * The listed heaps that stay listed, into @out (*n of them): those still
 * present in @s, and of those not seen, the @keep of each uid seen dead
 * last (identities hold no uid: the newest @keep times kept_uids()). The
 * others are gone: released by a fold (all but the kept ones are), or
 * by retention or eviction. A kept heap the reader missed once (a read
 * that failed, a file moved away and back) is not released by the fold,
 * so it comes back: had its identity been dropped, the next fold would
 * have counted it twice. False out of memory.
 */
static bool still_listed(const struct blamer_fleet *f, const struct blamer_snapshot *s,
			 unsigned keep, struct fl_ident *out, size_t *n)
{
	const struct fl_ident **by = malloc((f->nidents + 1) * sizeof(*by));
	bool *seen = calloc(f->nidents + 1, sizeof(*seen));
	size_t i, kept = (size_t)keep * kept_uids(f, s);

	if (!by || !seen) {
		free(by);
		free(seen);
		return false;
	}
	for (i = 0; i < s->nprocs; i++) {
		struct fl_ident id = fl_ident_of(&s->procs[i]), *x = ident_find(f, &id);

		if (x)
			seen[x - f->idents] = true;
	}
	for (i = 0; i < f->nidents; i++)
		by[i] = &f->idents[i];
	if (f->nidents)
		qsort(by, f->nidents, sizeof(*by), newest_first);
	for (i = 0; i < kept && i < f->nidents; i++)
		seen[by[i] - f->idents] = true;
	for (i = 0, *n = 0; i < f->nidents; i++)
		if (seen[i])
			out[(*n)++] = f->idents[i];
	free(by);
	free(seen);
	return true;
}

int blamer_fleet_fold(struct blamer_fleet *f, struct blamer_reader *r, struct blamer_snapshot *s,
		      unsigned keep, char *err, size_t errlen)
{
	struct fl_ident *present = NULL;
	size_t i, npresent = 0, folded = 0, nodes;
	const char *src;
	int ret;

	if (!f->path)
		return 0;	/* no state: nothing can be folded durably */
	if (f->broken) {
		snprintf(err, errlen, "the state %s could not be read back after a failed fold: restart the exporter",
			 f->path);
		return -EIO;
	}
	/* A state folds the heaps of one source: the heaps it has folded
	 * and keeps (--keep-dead) are listed by identity, and an identity
	 * not seen in a snapshot is dropped (but the kept ones), so a fold
	 * of another
	 * directory's heaps into it, and then of the first's again, counted
	 * the kept heaps twice. The source is recorded at the first fold. */
	src = r ? blamer_reader_source(r) : NULL;
	if (f->source && src && strcmp(f->source, src)) {
		snprintf(err, errlen, "the state %s holds the heaps of %s, not of %s: nothing folded (give this exporter a --state of its own)",
			 f->path, f->source, src);
		return -EINVAL;
	}
	if (!f->source && src && !(f->source = strdup(src)))
		goto oom;
	present = calloc(f->nidents + s->nprocs + 1, sizeof(*present));
	if (!present || (!f->nuidn && !count_uid_series(f)) ||
	    !still_listed(f, s, keep, present, &npresent))
		goto oom;
	nodes = f->nnodes;
	f->held = 0;
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];
		struct fl_ident id = fl_ident_of(p);
		bool held;

		if (!foldable(p) || ident_find(f, &id))
			continue;
		if (!keepable(f, s, p, &held)) {
			f->held += held;
			continue;
		}
		if (!fold_one(f, s, p))
			goto oom_reload;
		id.dead_ns = s->realtime_ns;
		present[npresent++] = id;
		folded++;
	}
	sort_nodes(f, nodes);
	if (!folded && npresent == f->nidents)
		goto done;	/* nothing to commit */
	qsort(present, npresent, sizeof(*present), fl_ident_cmp);
	free(f->idents);
	f->idents = present;
	f->nidents = npresent;
	present = NULL;
	f->folded += folded;
	f->generation++;
	fl_test_abort(f, 1);
	ret = fl_state_save(f, err, errlen);
	if (ret) {
		uint64_t errors = f->fold_errors + 1, committed = f->generation - 1;
		bool unsynced = f->unsynced;
		size_t at;
		char e2[256];

		/*
		 * The file holds what was committed: back to it. Not if it
		 * cannot be read, nor if it is gone (its directory removed: an
		 * empty remainder would lower every series), nor if the commit
		 * was renamed in but not made durable (the heaps it folded
		 * would be released on it): no fold until a restart.
		 */
		fl_state_free(f);
		e2[0] = '\0';
		f->broken = fl_state_load(f, e2, sizeof(e2)) != 0 || unsynced ||
			    f->generation < committed;
		f->unsynced = false;
		f->fold_errors = errors;
		at = strlen(err);
		if (f->broken && at < errlen)
			snprintf(err + at, errlen - at, "%s%s", e2[0] ? "; reading it back: " : "",
				 e2[0] ? e2 : f->generation < committed ?
				 "; the state is gone: no more folds until a restart" :
				 "; no more folds until a restart");
		return ret;
	}
done:
	free(present);
	release_old(f, r, s, keep);
	blamer_snapshot_filter(s, not_folded, f);
	return (int)folded;
oom_reload:
	{
		char e2[256];

		fl_state_free(f);
		f->broken = fl_state_load(f, e2, sizeof(e2)) != 0;
	}
oom:
	free(present);
	f->fold_errors++;
	snprintf(err, errlen, "folding dead heaps: out of memory");
	return -ENOMEM;
}
