// SPDX-License-Identifier: MIT
/*
 * The fleet state file: a fold's remainder and the folded heaps, as text
 * (one record a line, strings escaped, doubles in hex so they read back
 * to the same bits), closed by a line with the count of lines and a hash
 * of every byte before it.
 *
 *   blamer-fold 3       (2: node and unit lines have no UID; 1: nor
 *                        definitions; both still read)
 *   generation G
 *   folded N
 *   source SOURCE       (what the heaps were read from; older states lack it)
 *   node UID ID NAME
 *   unit UID UNIT BASE NAME
 *   def UID NAME KIND BASE MODE FLAGS NLABELS LABEL... NBUCKETS UPPER... HELP
 *   series DEF UID DEPTH NODE... VALUE... NEXACT PARTIAL... VALUE STAMP NBUCKETS COUNT...
 *   lost SERIES N       (a counter's or histogram's parts the fold threw away,
 *                        their sum not fitting; only if N > 0, after the
 *                        series: an older exporter refuses the state, rather
 *                        than show the series again as if whole)
 *   path UID UNIT DEPTH NODE... VALUE
 *   drop UID REASON VALUE
 *   heap PID START HEAP_ID HEAP_KEY DEAD_NS
 *   end LINES HASH
 *
 * Strings are "s:" and their bytes, each byte outside '!'..'~' and '%'
 * written %XX. The file is the exporter's: it is written to a temporary
 * file in its directory, fsync()ed, renamed over the old one, and the
 * directory fsync()ed, so a crash leaves the old state or the new one,
 * all through the directory's descriptor, opened once (fl_dir_open()).
 * It is read as untrusted input all the same: its owner must be the
 * caller, nobody else may write it or its directory (a sticky one
 * excepted) or change or redirect the path to it, every count and value
 * is checked, and the hash must match;
 * anything else is refused with the line it is about, never guessed at
 * (a state half believed would count heaps twice, or lose them).
 *
 * A definition is a uid's (the reader chooses one per name and uid, so
 * that no user's processes outvote another's); a series is of its uid's
 * definition. Version 1 had one definition per name for every uid: read,
 * each becomes one per uid whose series use it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fleet.h"
#include "hash.h"
#include "numtext.h"

#define STATE_MAGIC	"blamer-fold 3"
#define STATE_MAGIC_2	"blamer-fold 2"	/* node and unit names without their uid */
#define STATE_MAGIC_1	"blamer-fold 1"	/* definitions without their uid too */
#define NO_UID		UINT32_MAX	/* a version 1 definition's, until a series says */

void fl_test_abort(const struct blamer_fleet *f, uint32_t step)
{
	if (f->test_abort == step)
		abort();	/* the test's kill -9 at a known point */
}

static void def_free(struct blamer_snap_metric_def *d)
{
	uint32_t k;

	free(d->help);
	for (k = 0; k < d->nlabels && k < BLAMER_METRIC_LABELS_MAX; k++)
		free(d->labels[k]);
	free(d->upper);
}

void fl_state_free(struct blamer_fleet *f)
{
	size_t i, k;

	for (i = 0; i < f->ndefs; i++)
		def_free(&f->defs[i]);
	for (i = 0; i < f->nseries; i++) {
		for (k = 0; k < BLAMER_METRIC_LABELS_MAX; k++)
			free(f->series[i].values[k]);
		free(f->series[i].exact);
		free(f->series[i].buckets);
	}
	free(f->defs);
	free(f->def_uids);
	free(f->series);
	free(f->paths);
	free(f->drops);
	free(f->idents);
	free(f->nodes);
	free(f->units);
	free(f->source);
	f->source = NULL;
	f->defs = NULL;
	f->def_uids = NULL;
	f->series = NULL;
	f->paths = NULL;
	f->drops = NULL;
	f->idents = NULL;
	f->nodes = NULL;
	f->units = NULL;
	f->ndefs = f->nseries = f->npaths = f->ndrops = f->nidents = f->nnodes = f->nunits = 0;
	free(f->series_ix.slot);
	free(f->paths_ix.slot);
	free(f->nodes_ix.slot);
	free(f->units_ix.slot);
	free(f->defs_ix.slot);
	free(f->uidn_ix.slot);
	free(f->uidn);
	f->uidn = NULL;
	f->nuidn = 0;
	memset(&f->uidn_ix, 0, sizeof(f->uidn_ix));
	memset(&f->series_ix, 0, sizeof(f->series_ix));
	memset(&f->paths_ix, 0, sizeof(f->paths_ix));
	memset(&f->nodes_ix, 0, sizeof(f->nodes_ix));
	memset(&f->units_ix, 0, sizeof(f->units_ix));
	memset(&f->defs_ix, 0, sizeof(f->defs_ix));
	f->generation = f->folded = 0;
	f->conflicts = 0;
}

bool fl_def_add(struct blamer_fleet *f, const struct blamer_snap_metric_def *d, uint32_t uid)
{
	struct blamer_snap_metric_def c = *d, *v;
	uint32_t *u, i;
	bool ok;

	c.help = strdup(d->help ? d->help : "");
	for (i = 0; i < d->nlabels; i++)
		c.labels[i] = strdup(d->labels[i] ? d->labels[i] : "");
	c.upper = d->nbuckets ? malloc(d->nbuckets * sizeof(double)) : NULL;
	if (c.upper)
		memcpy(c.upper, d->upper, d->nbuckets * sizeof(double));
	ok = c.help && (!d->nbuckets || c.upper);
	for (i = 0; i < d->nlabels; i++)
		ok = ok && c.labels[i];
	v = ok ? realloc(f->defs, (f->ndefs + 1) * sizeof(*v)) : NULL;
	if (v)
		f->defs = v;
	u = v ? realloc(f->def_uids, (f->ndefs + 1) * sizeof(*u)) : NULL;
	if (!u) {
		def_free(&c);
		return false;
	}
	f->def_uids = u;
	f->defs[f->ndefs] = c;
	f->def_uids[f->ndefs++] = uid;
	return true;
}

static uint64_t fnv(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
	return h;
}

/* ---- writing ---- */

struct out {
	char *p;
	size_t len, cap;
	bool oom;
	size_t lines;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->oom)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 4096;
		char *np;

		while (cap < o->len + n + 1)
			cap *= 2;
		np = realloc(o->p, cap);
		if (!np) {
			o->oom = true;
			return;
		}
		o->p = np;
		o->cap = cap;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void putf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct out *o, const char *fmt, ...)
{
	char b[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	put(o, b, n < 0 ? 0 : (size_t)n < sizeof(b) ? (size_t)n : sizeof(b) - 1);
}

static void put_str(struct out *o, const char *s)
{
	put(o, " s:", 3);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c > ' ' && c < 0x7f && c != '%')
			put(o, s, 1);
		else
			putf(o, "%%%02X", c);
	}
}

/* A double in hex, so it reads back to the same bits; '.' whatever the
 * program's LC_NUMERIC, for the exporter that reads it may have another. */
static void put_double(struct out *o, double v)
{
	char b[32];

	b[0] = ' ';
	ex_double_hex(b + 1, sizeof(b) - 1, v);
	put(o, b, strlen(b));
}

static void put_nodes(struct out *o, uint32_t depth, const uint64_t *nodes)
{
	uint32_t i;

	putf(o, " %" PRIu32, depth);
	for (i = 0; i < depth; i++)
		putf(o, " %" PRIx64, nodes[i]);
}

static void end_line(struct out *o)
{
	put(o, "\n", 1);
	o->lines++;
}

static void write_state(const struct blamer_fleet *f, struct out *o)
{
	size_t i, k;

	put(o, STATE_MAGIC, strlen(STATE_MAGIC));
	end_line(o);
	putf(o, "generation %" PRIu64, f->generation);
	end_line(o);
	putf(o, "folded %" PRIu64, f->folded);
	end_line(o);
	if (f->source) {
		put(o, "source", 6);
		put_str(o, f->source);
		end_line(o);
	}
	for (i = 0; i < f->nnodes; i++) {
		putf(o, "node %" PRIu32 " %" PRIx64, f->nodes[i].uid, f->nodes[i].node.id);
		put_str(o, f->nodes[i].node.name);
		end_line(o);
	}
	for (i = 0; i < f->nunits; i++) {
		putf(o, "unit %" PRIu32 " %" PRIu32 " %" PRIu32, f->units[i].uid,
		     f->units[i].def.unit, f->units[i].def.base);
		put_str(o, f->units[i].def.name);
		end_line(o);
	}
	for (i = 0; i < f->ndefs; i++) {
		const struct blamer_snap_metric_def *d = &f->defs[i];

		putf(o, "def %" PRIu32, f->def_uids[i]);
		put_str(o, d->name);
		putf(o, " %u %u %u %u %u", d->kind, d->base, d->gauge_mode, d->flags, d->nlabels);
		for (k = 0; k < d->nlabels; k++)
			put_str(o, d->labels[k]);
		putf(o, " %u", d->nbuckets);
		for (k = 0; k < d->nbuckets; k++)
			put_double(o, d->upper[k]);
		put_str(o, d->help);
		end_line(o);
	}
	for (i = 0; i < f->nseries; i++) {
		const struct fl_series *x = &f->series[i];
		const struct blamer_snap_metric_def *d = &f->defs[x->def];

		putf(o, "series %" PRIu32 " %" PRIu32, x->def, x->uid);
		put_nodes(o, x->depth, x->nodes);
		for (k = 0; k < d->nlabels; k++)
			put_str(o, x->values[k]);
		putf(o, " %" PRIu32, x->nexact);
		for (k = 0; k < x->nexact; k++)
			put_double(o, x->exact[k]);
		put_double(o, x->value);
		putf(o, " %" PRIu64 " %u", x->stamp,
		     d->kind == BLAMER_METRIC_HISTOGRAM ? d->nbuckets : 0);
		for (k = 0; d->kind == BLAMER_METRIC_HISTOGRAM && k < d->nbuckets; k++)
			putf(o, " %" PRIu64, x->buckets[k]);
		end_line(o);
	}
	for (i = 0; i < f->nseries; i++) {
		if (!f->series[i].lost)
			continue;
		putf(o, "lost %zu %" PRIu64, i, f->series[i].lost);
		end_line(o);
	}
	for (i = 0; i < f->npaths; i++) {
		putf(o, "path %" PRIu32 " %" PRIu32, f->paths[i].uid, f->paths[i].unit);
		put_nodes(o, f->paths[i].depth, f->paths[i].nodes);
		putf(o, " %" PRIu64, f->paths[i].value);
		end_line(o);
	}
	for (i = 0; i < f->ndrops; i++) {
		putf(o, "drop %" PRIu32 " %" PRIu32 " %" PRIu64, f->drops[i].uid, f->drops[i].reason,
		     f->drops[i].value);
		end_line(o);
	}
	for (i = 0; i < f->nidents; i++) {
		const struct fl_ident *x = &f->idents[i];

		putf(o, "heap %" PRId32 " %" PRIu64 " %" PRIx64 " %" PRIx64 " %" PRIu64, x->pid,
		     x->start, x->heap_id, x->heap_key, x->dead_ns);
		end_line(o);
	}
	putf(o, "end %zu %016" PRIx64 "\n", o->lines, fnv(o->p, o->len));
}

/* The directory part of @path ("." if none) into @dir. */
static void dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, len, ".");
	else if (slash == path)
		snprintf(dir, len, "/");
	else
		snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

/*
 * A commit's temporary file, "STATE.tmp-XXXXXX" (the name
 * drop_temporaries() knows, mkostemp()'s letters), made in the state's
 * directory through its descriptor: mkostemp() takes a path, which is
 * looked up again at every commit (a directory on it re-pointed after
 * the open once sent a commit elsewhere). Random, and O_EXCL: a name
 * another user made first in a sticky directory is passed over, never
 * opened. Its name into @tmp; the descriptor, or -1 with errno.
 */
static int make_temporary(const struct blamer_fleet *f, char *tmp, size_t len)
{
	static const char letters[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned tries;
	size_t at;
	int fd, i;

	if (snprintf(tmp, len, "%s" FL_TMP_MARK "XXXXXX", f->name) >= (int)len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	at = strlen(tmp) - 6;
	for (tries = 0; tries < 100; tries++) {
		uint64_t r = ex_seed(tmp);

		for (i = 0; i < 6; i++, r /= sizeof(letters) - 1)
			tmp[at + i] = letters[r % (sizeof(letters) - 1)];
		fd = openat(f->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;	/* EEXIST */
}

int fl_state_save(struct blamer_fleet *f, char *err, size_t errlen)
{
	char tmp[NAME_MAX + 1];
	struct out o = { 0 };
	size_t done = 0;
	int fd = -1, e;

	tmp[0] = '\0';
	write_state(f, &o);
	if (o.oom) {
		free(o.p);
		snprintf(err, errlen, "writing the state %s: out of memory", f->path);
		return -ENOMEM;
	}
	/* one the next start would refuse: the exporter could not start */
	if (o.len > FL_STATE_MAX) {
		free(o.p);
		snprintf(err, errlen, "the state %s would be larger than %u MiB: not written (lower $BLAMER_FOLD_MAX_BYTES)",
			 f->path, FL_STATE_MAX >> 20);
		return -EFBIG;
	}
	fd = make_temporary(f, tmp, sizeof(tmp));
	if (fd < 0) {
		tmp[0] = '\0';	/* none made: none to remove */
		goto fail;
	}
	if (fchmod(fd, 0600))
		goto fail;
	while (done < o.len) {
		ssize_t n = write(fd, o.p + done, o.len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		done += (size_t)n;
	}
	fl_test_abort(f, 2);
	if (fsync(fd))
		goto fail;
	fl_test_abort(f, 3);
	if (close(fd)) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	/* in the directory checked at the open, whatever its path is now */
	if (renameat(f->dirfd, tmp, f->dirfd, f->name))
		goto fail;
	tmp[0] = '\0';
	fl_test_abort(f, 4);
	/* the rename itself durable: the directory's entry (failed, the new
	 * state may be read back and yet be lost at a crash: Linux can say
	 * a later fsync() succeeded after the error lost the data) */
	if (fsync(f->dirfd)) {
		f->unsynced = true;
		goto fail;
	}
	fl_test_abort(f, 5);
	free(o.p);
	return 0;
fail:
	e = errno ? errno : EIO;
	if (fd >= 0)
		close(fd);
	if (tmp[0])
		unlinkat(f->dirfd, tmp, 0);
	free(o.p);
	/* a state another user made meanwhile in a sticky directory */
	if ((e == EPERM || e == EACCES) &&
	    fl_squatter(f, "the state", f->name, f->path, err, errlen))
		return -e;
	snprintf(err, errlen, "writing the state %s: %s", f->path, strerror(e));
	return -e;
}

/* ---- reading ---- */

struct in {
	char *line;		/* the current line, cut into words as read */
	unsigned no;		/* its number */
	unsigned version;	/* of the state: 1, 2 or 3 */
	const char *why;	/* the first thing wrong */
};

/* The next word of the line, or NULL (and why) at its end. */
static char *word(struct in *in)
{
	char *w = in->line, *sp;

	if (!w || !*w) {
		if (!in->why)
			in->why = "too few fields";
		return NULL;
	}
	sp = strchr(w, ' ');
	if (sp) {
		*sp = '\0';
		in->line = sp + 1;
	} else {
		in->line = w + strlen(w);
	}
	return w;
}

static bool u64_of(struct in *in, int base, uint64_t *v)
{
	char *w = word(in), *end;

	if (!w)
		return false;
	errno = 0;
	*v = strtoull(w, &end, base);
	if (errno || *end || end == w || *w == '-' || *w == '+' || *w == ' ') {
		in->why = "not a number";
		return false;
	}
	return true;
}

static bool u32_of(struct in *in, uint32_t max, uint32_t *v)
{
	uint64_t x;

	if (!u64_of(in, 10, &x))
		return false;
	if (x > max) {
		in->why = "a number out of range";
		return false;
	}
	*v = (uint32_t)x;
	return true;
}

static bool dbl_of(struct in *in, double *v)
{
	char *w = word(in);

	if (!w)
		return false;
	if (!ex_double_of(w, v)) {
		in->why = "not a number";
		return false;
	}
	return true;
}

/* A string written by put_str(): malloc()ed, at most @max bytes. */
static char *str_of(struct in *in, size_t max)
{
	char *w = word(in), *s;
	size_t n = 0;

	if (!w)
		return NULL;
	if (strncmp(w, "s:", 2)) {
		in->why = "not a string";
		return NULL;
	}
	w += 2;
	s = malloc(strlen(w) + 1);
	if (!s) {
		in->why = "out of memory";
		return NULL;
	}
	while (*w) {
		unsigned c;

		if (*w == '%') {
			if (sscanf(w + 1, "%2x", &c) != 1 || !w[1] || !w[2] || !c) {
				free(s);
				in->why = "a bad escape";
				return NULL;
			}
			w += 3;
		} else {
			c = (unsigned char)*w++;
		}
		s[n++] = (char)c;
	}
	s[n] = '\0';
	if (n > max) {
		free(s);
		in->why = "a string too long";
		return NULL;
	}
	return s;
}

static bool name_ok(const char *s, bool colon)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_' ||
		      (colon && s[i] == ':') || (i && s[i] >= '0' && s[i] <= '9')))
			return false;
	return i > 0;
}

static bool nodes_of(struct in *in, uint32_t *depth, uint64_t *nodes)
{
	uint32_t i;

	if (!u32_of(in, BLAMER_SNAP_MAX_DEPTH, depth))
		return false;
	for (i = 0; i < *depth; i++)
		if (!u64_of(in, 16, &nodes[i]))
			return false;
	return true;
}

#define GROW(arr, n) \
	do { void *g_ = realloc((arr), ((n) + 1) * sizeof(*(arr))); \
	     if (!g_) { in->why = "out of memory"; return false; } \
	     (arr) = g_; memset(&(arr)[(n)], 0, sizeof(*(arr))); } while (0)

static bool read_def(struct blamer_fleet *f, struct in *in)
{
	struct blamer_snap_metric_def *d;
	char *name;
	uint32_t i;

	GROW(f->defs, f->ndefs);
	GROW(f->def_uids, f->ndefs);
	d = &f->defs[f->ndefs++];
	f->def_uids[f->ndefs - 1] = NO_UID;
	if (in->version > 1 && (!u32_of(in, NO_UID - 1, &f->def_uids[f->ndefs - 1]))) {
		in->why = in->why ? in->why : "a bad uid";
		return false;
	}
	name = str_of(in, BLAMER_METRIC_NAME_MAX);
	if (!name)
		return false;
	snprintf(d->name, sizeof(d->name), "%s", name);
	free(name);
	if (!name_ok(d->name, true) ||
	    !u32_of(in, BLAMER_METRIC_HISTOGRAM, &d->kind) || !d->kind ||
	    !u32_of(in, BLAMER_BASE_BYTES, &d->base) ||
	    !u32_of(in, BLAMER_GAUGE_LIVEMOSTRECENT, &d->gauge_mode) ||
	    (d->kind == BLAMER_METRIC_GAUGE) != (d->gauge_mode != 0) ||
	    !u32_of(in, BLAMER_METRIC_PER_PROCESS, &d->flags) ||
	    !u32_of(in, BLAMER_METRIC_LABELS_MAX, &d->nlabels)) {
		if (!in->why)
			in->why = "a bad definition";
		return false;
	}
	for (i = 0; i < d->nlabels; i++)
		if (!(d->labels[i] = str_of(in, BLAMER_METRIC_LABEL_NAMES_MAX)) ||
		    !name_ok(d->labels[i], false)) {
			in->why = in->why ? in->why : "a bad label name";
			return false;
		}
	if (!u32_of(in, BLAMER_METRIC_BUCKETS_MAX, &d->nbuckets) ||
	    (d->kind == BLAMER_METRIC_HISTOGRAM) != (d->nbuckets >= 2))
		goto bad;
	if (d->nbuckets) {
		d->upper = malloc(d->nbuckets * sizeof(double));
		if (!d->upper)
			goto bad;
		for (i = 0; i < d->nbuckets; i++)
			if (!dbl_of(in, &d->upper[i]) ||
			    (i && !(d->upper[i] > d->upper[i - 1])))
				goto bad;
		if (d->upper[d->nbuckets - 1] != __builtin_inf())
			goto bad;
	}
	d->help = str_of(in, BLAMER_METRIC_HELP_MAX);
	return d->help != NULL;
bad:
	if (!in->why)
		in->why = "bad buckets";
	return false;
}

/* A counter's or histogram's values as a fold keeps them: partials of a
 * finite sum, and @n buckets whose count fits 64 bits. A fold never adds
 * one past that (fleet.c, sums_fit()): shown, it would be +Inf, or lower
 * than before (wrapped), at every start for good. */
static bool sum_fits(const struct fl_series *x, uint32_t n)
{
	struct blamer_exact_sum e;
	uint64_t count = 0;
	uint32_t i;

	memset(&e, 0, sizeof(e));
	for (i = 0; i < x->nexact; i++)
		blamer_exact_sum_add(&e, x->exact[i]);
	for (i = 0; i < n; i++)
		if (__builtin_add_overflow(count, x->buckets[i], &count))
			return false;
	return !e.has_special;
}

static bool read_series(struct blamer_fleet *f, struct in *in)
{
	const struct blamer_snap_metric_def *d;
	struct fl_series *x;
	uint32_t i, n;

	GROW(f->series, f->nseries);
	x = &f->series[f->nseries++];
	if (!u32_of(in, UINT32_MAX, &x->def) || x->def >= f->ndefs) {
		in->why = in->why ? in->why : "a series of no definition";
		return false;
	}
	d = &f->defs[x->def];
	if (!u32_of(in, UINT32_MAX, &x->uid) || !nodes_of(in, &x->depth, x->nodes))
		return false;
	if (in->version > 1 && f->def_uids[x->def] != x->uid) {
		in->why = "a series of another uid's definition";
		return false;
	}
	for (i = 0; i < d->nlabels; i++)
		if (!(x->values[i] = str_of(in, BLAMER_METRIC_VALUES_MAX * 3)))
			return false;
	if (!u32_of(in, BLAMER_EXACT_PARTIALS, &x->nexact))
		return false;
	if (x->nexact) {
		x->exact = malloc(x->nexact * sizeof(double));
		if (!x->exact) {
			in->why = "out of memory";
			return false;
		}
	}
	for (i = 0; i < x->nexact; i++)
		if (!dbl_of(in, &x->exact[i]))
			return false;
	if (!dbl_of(in, &x->value) || !u64_of(in, 10, &x->stamp) ||
	    !u32_of(in, BLAMER_METRIC_BUCKETS_MAX, &n))
		return false;
	if (n != (d->kind == BLAMER_METRIC_HISTOGRAM ? d->nbuckets : 0)) {
		in->why = "buckets not the definition's";
		return false;
	}
	if (n && !(x->buckets = malloc(n * sizeof(uint64_t)))) {
		in->why = "out of memory";
		return false;
	}
	for (i = 0; i < n; i++)
		if (!u64_of(in, 10, &x->buckets[i]))
			return false;
	if (d->kind != BLAMER_METRIC_GAUGE && !sum_fits(x, n)) {
		in->why = "a counter's or histogram's sum that is not finite, or a count past 2^64 - 1 (an older exporter could write one: move the state away)";
		return false;
	}
	return true;
}

/* A series' lost parts: of a counter or histogram read before, once,
 * at least one (none is not written). */
static bool read_lost(struct blamer_fleet *f, struct in *in)
{
	uint32_t i;
	uint64_t n;

	if (!u32_of(in, UINT32_MAX, &i) || !u64_of(in, 10, &n))
		return false;
	if (i >= f->nseries || f->defs[f->series[i].def].kind == BLAMER_METRIC_GAUGE ||
	    f->series[i].lost || !n) {
		in->why = "a lost count of no counter or histogram, twice, or of 0";
		return false;
	}
	f->series[i].lost = n;
	return true;
}

static bool read_line(struct blamer_fleet *f, struct in *in)
{
	char *kind = word(in), *s;
	uint64_t v;

	if (!kind)
		return false;
	if (!strcmp(kind, "generation"))
		return u64_of(in, 10, &f->generation);
	if (!strcmp(kind, "folded"))
		return u64_of(in, 10, &f->folded);
	if (!strcmp(kind, "source")) {
		if (f->source) {
			in->why = "a second source";
			return false;
		}
		f->source = str_of(in, PATH_MAX);
		return f->source != NULL;
	}
	/* version 3: each uid's own names; before, one for every uid (NO_UID
	 * until names_per_uid() says whose) */
	if (!strcmp(kind, "node")) {
		struct blamer_snap_uid_node *x;

		GROW(f->nodes, f->nnodes);
		x = &f->nodes[f->nnodes];
		x->uid = NO_UID;
		if ((in->version > 2 && !u32_of(in, NO_UID - 1, &x->uid)) ||
		    !u64_of(in, 16, &x->node.id) || !(s = str_of(in, 32)))
			return false;
		snprintf(x->node.name, sizeof(x->node.name), "%s", s);
		f->nnodes++;
		free(s);
		return true;
	}
	if (!strcmp(kind, "unit")) {
		struct blamer_snap_unit_def *u;

		GROW(f->units, f->nunits);
		f->units[f->nunits].uid = NO_UID;
		if (in->version > 2 && !u32_of(in, NO_UID - 1, &f->units[f->nunits].uid))
			return false;
		u = &f->units[f->nunits++].def;
		if (!u32_of(in, UINT32_MAX, &u->unit) || u->unit < BLAMER_UNIT_APP_BASE ||
		    !u32_of(in, BLAMER_BASE_BYTES, &u->base) || !(s = str_of(in, 31))) {
			in->why = in->why ? in->why : "a bad unit";
			return false;
		}
		snprintf(u->name, sizeof(u->name), "%s", s);
		free(s);
		if (!name_ok(u->name, false)) {
			in->why = "a bad unit name";
			return false;
		}
		return true;
	}
	if (!strcmp(kind, "def"))
		return read_def(f, in);
	if (!strcmp(kind, "series"))
		return read_series(f, in);
	if (!strcmp(kind, "lost"))
		return read_lost(f, in);
	if (!strcmp(kind, "path")) {
		struct fl_path *p;

		GROW(f->paths, f->npaths);
		p = &f->paths[f->npaths++];
		return u32_of(in, UINT32_MAX, &p->uid) && u32_of(in, UINT32_MAX, &p->unit) &&
		       nodes_of(in, &p->depth, p->nodes) && p->depth &&
		       u64_of(in, 10, &p->value);
	}
	if (!strcmp(kind, "drop")) {
		struct fl_drop *d;

		GROW(f->drops, f->ndrops);
		d = &f->drops[f->ndrops++];
		return u32_of(in, UINT32_MAX, &d->uid) && u32_of(in, BLAMER_DROP_MAX - 1, &d->reason) &&
		       u64_of(in, 10, &d->value);
	}
	if (!strcmp(kind, "heap")) {
		struct fl_ident *x;
		char *w, *end;
		long pid;

		GROW(f->idents, f->nidents);
		x = &f->idents[f->nidents++];
		w = word(in);
		if (!w)
			return false;
		pid = strtol(w, &end, 10);
		if (*end || end == w || pid < 0 || pid > INT32_MAX) {
			in->why = "a bad pid";
			return false;
		}
		x->pid = (int32_t)pid;
		return u64_of(in, 10, &x->start) && u64_of(in, 16, &x->heap_id) &&
		       u64_of(in, 16, &x->heap_key) && u64_of(in, 10, &v) && (x->dead_ns = v, true);
	}
	in->why = "an unknown record";
	return false;
}

/* A directory no other user may change: ours or root's, and writable by
 * nobody else, but for a sticky one (its other users may neither remove
 * nor rename our entries, only make a name first, which fl_squatter()
 * names). */
static bool dir_ours(const struct stat *st)
{
	return (st->st_uid == geteuid() || st->st_uid == 0) &&
	       (!(st->st_mode & 022) || (st->st_mode & S_ISVTX));
}

/* The state's directory itself (@f->dirfd): checked at the open and at
 * every read, for a new state too, which would otherwise fold and
 * release heaps into a file the next start refuses. */
static int dir_trusted(const struct blamer_fleet *f, char *err, size_t errlen)
{
	struct stat ds;

	if (fstat(f->dirfd, &ds)) {
		int e = errno;

		snprintf(err, errlen, "the directory of the state %s: %s", f->path, strerror(e));
		return -e;
	}
	if (!dir_ours(&ds)) {
		snprintf(err, errlen, "the directory of the state %s may be changed by others (uid %u, mode %o): refused",
			 f->path, (unsigned)ds.st_uid, (unsigned)(ds.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Symlinks followed on the way to the state's directory, at most (the
 * kernel's own bound, MAXSYMLINKS). */
#define FL_MAX_LINKS	40

/*
 * The path to the state's directory, walked a component at a time from
 * "/" (or the working directory) with O_PATH | O_NOFOLLOW: checking only
 * the directory it led to (stat(), which follows symlinks) accepted a
 * path through another user's symlink or directory, which that user
 * could re-point after the check, so that a commit by path landed in
 * their directory, and at the next start the state was one of their
 * choosing (rolled back: counts of released heaps lost). Each directory a
 * name is looked up in must be one no other user may change (dir_ours():
 * else they could put anything at that name), and a symlink is followed
 * only if it is ours or root's (another user's may be replaced by one
 * pointing elsewhere, as fs.protected_symlinks says in sticky
 * directories, and here everywhere). The directory reached is then held
 * open: after this nothing is looked up by the path.
 */
int fl_dir_open(struct blamer_fleet *f, char *err, size_t errlen)
{
	char rest[PATH_MAX], where[PATH_MAX], target[PATH_MAX], next_rest[PATH_MAX];
	const char *slash = strrchr(f->path, '/');
	unsigned links = 0;
	struct stat st;
	size_t wlen;
	char *p, *name;
	int cur, fd, e;
	ssize_t n;

	f->name = slash ? slash + 1 : f->path;
	if (!*f->name || !strcmp(f->name, ".") || !strcmp(f->name, "..")) {
		snprintf(err, errlen, "the state %s does not name a file", f->path);
		return -EISDIR;
	}
	/* the names made beside it: STATE.lock, STATE.tmp-XXXXXX */
	if (strlen(f->path) >= sizeof(rest) ||
	    strlen(f->name) + strlen(FL_TMP_MARK) + 6 > NAME_MAX) {
		snprintf(err, errlen, "the state path %s is too long", f->path);
		return -ENAMETOOLONG;
	}
	dir_of(f->path, rest, sizeof(rest));
	p = rest;
	cur = open(*p == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		goto sys;
	snprintf(where, sizeof(where), "%s", *p == '/' ? "" : ".");
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		name = p;
		p += strcspn(p, "/");
		if (*p)
			*p++ = '\0';
		if (!strcmp(name, "."))
			continue;
		/* a name looked up in @cur: whoever may change @cur chooses
		 * what it is */
		if (fstat(cur, &st))
			goto sys;
		if (!dir_ours(&st)) {
			snprintf(err, errlen, "the state %s is reached through the directory %s of uid %u (mode %o), which others may change: refused (each directory on its path must be root's or uid %u's, and writable by nobody else unless sticky)",
				 f->path, *where ? where : "/", (unsigned)st.st_uid,
				 (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
			close(cur);
			return -EPERM;
		}
		/* (the path walked, for the messages: as long as the kernel's) */
		wlen = strlen(where);
		if (snprintf(where + wlen, sizeof(where) - wlen, "/%s", name) >=
		    (int)(sizeof(where) - wlen)) {
			close(cur);
			snprintf(err, errlen, "the directory of the state %s: %s", f->path,
				 strerror(ENAMETOOLONG));
			return -ENAMETOOLONG;
		}
		fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			e = errno;
			if (fd >= 0)
				close(fd);
			close(cur);
			snprintf(err, errlen, "the directory of the state %s: %s: %s", f->path, where,
				 strerror(e));
			return -e;
		}
		if (S_ISDIR(st.st_mode)) {
			close(cur);
			cur = fd;
			continue;
		}
		if (!S_ISLNK(st.st_mode)) {
			close(fd);
			close(cur);
			snprintf(err, errlen, "the directory of the state %s: %s: %s", f->path, where,
				 strerror(ENOTDIR));
			return -ENOTDIR;
		}
		if (st.st_uid != geteuid() && st.st_uid != 0) {
			close(fd);
			close(cur);
			snprintf(err, errlen, "the state %s is reached through the symlink %s of uid %u: refused (a symlink on its path must be root's or uid %u's: another user's may be made to point elsewhere)",
				 f->path, where, (unsigned)st.st_uid, (unsigned)geteuid());
			return -EPERM;
		}
		n = readlinkat(fd, "", target, sizeof(target));
		e = errno;
		close(fd);
		if (n < 0 || n >= (ssize_t)sizeof(target) || ++links > FL_MAX_LINKS) {
			e = n < 0 ? e : n >= (ssize_t)sizeof(target) ? ENAMETOOLONG : ELOOP;
			close(cur);
			snprintf(err, errlen, "the directory of the state %s: %s: %s", f->path, where,
				 strerror(e));
			return -e;
		}
		target[n] = '\0';
		/* its target, then what was left after it */
		if (snprintf(next_rest, sizeof(next_rest), "%s/%s", target, p) >=
		    (int)sizeof(next_rest)) {
			close(cur);
			snprintf(err, errlen, "the directory of the state %s: %s: %s", f->path, where,
				 strerror(ENAMETOOLONG));
			return -ENAMETOOLONG;
		}
		memcpy(rest, next_rest, sizeof(rest));
		p = rest;
		if (*p == '/') {
			close(cur);
			cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (cur < 0)
				goto sys;
			where[0] = '\0';
		} else {
			where[wlen] = '\0';	/* relative to the link's directory */
		}
	}
	/* the directory reached: held, and only reached through it after */
	f->dirfd = openat(cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	e = errno;
	close(cur);
	if (f->dirfd < 0) {
		snprintf(err, errlen, "the directory of the state %s: %s", f->path, strerror(e));
		return -e;
	}
	return dir_trusted(f, err, errlen);
sys:
	e = errno;
	if (cur >= 0)
		close(cur);
	snprintf(err, errlen, "the directory of the state %s: %s", f->path, strerror(e));
	return -e;
}

bool fl_squatter(const struct blamer_fleet *f, const char *what, const char *name,
		 const char *path, char *err, size_t errlen)
{
	struct stat st;

	struct stat dir;

	if (fstatat(f->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) || st.st_uid == geteuid())
		return false;
	if (!fstat(f->dirfd, &dir) && !(dir.st_mode & 022))
		snprintf(err, errlen, "%s %s is uid %u's, not uid %u's: refused (left by uid %u, say an exporter run as that user: remove it or give it to uid %u)",
			 what, path, (unsigned)st.st_uid, (unsigned)geteuid(),
			 (unsigned)st.st_uid, (unsigned)geteuid());
	else
		snprintf(err, errlen, "%s %s is uid %u's, not uid %u's: refused (another user made it first in a directory others may write: have it removed, or keep the state in a directory only uid %u may write)",
			 what, path, (unsigned)st.st_uid, (unsigned)geteuid(), (unsigned)geteuid());
	return true;
}

/* Whose the file (and its directory) are: refused unless the caller's
 * and nobody else may change them. */
static int trusted(const struct blamer_fleet *f, int fd, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_uid != geteuid() && fl_squatter(f, "the state", f->name, f->path, err, errlen))
		return -EPERM;
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		snprintf(err, errlen, "the state %s is not a regular file of uid %u that only it may write (uid %u, mode %o, %lu links): refused",
			 f->path, (unsigned)geteuid(), (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777), (unsigned long)st.st_nlink);
		return -EPERM;
	}
	return dir_trusted(f, err, errlen);
}

int fl_ident_cmp(const void *a, const void *b)
{
	const struct fl_ident *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->heap_id != y->heap_id)
		return x->heap_id < y->heap_id ? -1 : 1;
	return (x->heap_key > y->heap_key) - (x->heap_key < y->heap_key);
}

static int unit_order(const void *a, const void *b)
{
	const struct blamer_snap_uid_unit_def *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return (x->def.unit > y->def.unit) - (x->def.unit < y->def.unit);
}

/* Orders of the state's series, paths, definitions and drops by what
 * makes each one (qsort_r(): the fleet is the context). */
static int series_key_cmp(const void *a, const void *b, void *arg)
{
	const struct blamer_fleet *f = arg;
	const struct fl_series *x = &f->series[*(const size_t *)a];
	const struct fl_series *y = &f->series[*(const size_t *)b];
	uint32_t k;
	int c;

	if (x->def != y->def)
		return x->def < y->def ? -1 : 1;
	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	c = memcmp(x->nodes, y->nodes, x->depth * sizeof(x->nodes[0]));
	for (k = 0; !c && k < f->defs[x->def].nlabels; k++)
		c = strcmp(x->values[k], y->values[k]);
	return c;
}

static int path_key_cmp(const void *a, const void *b, void *arg)
{
	const struct blamer_fleet *f = arg;
	const struct fl_path *x = &f->paths[*(const size_t *)a];
	const struct fl_path *y = &f->paths[*(const size_t *)b];

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->unit != y->unit)
		return x->unit < y->unit ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return memcmp(x->nodes, y->nodes, x->depth * sizeof(x->nodes[0]));
}

static int def_key_cmp(const void *a, const void *b, void *arg)
{
	const struct blamer_fleet *f = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(f->defs[x].name, f->defs[y].name);

	if (c)
		return c;
	return (f->def_uids[x] > f->def_uids[y]) - (f->def_uids[x] < f->def_uids[y]);
}

static int drop_key_cmp(const void *a, const void *b, void *arg)
{
	const struct blamer_fleet *f = arg;
	const struct fl_drop *x = &f->drops[*(const size_t *)a];
	const struct fl_drop *y = &f->drops[*(const size_t *)b];

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return (x->reason > y->reason) - (x->reason < y->reason);
}

/* Whether two of @n elements are the same by @cmp: sorted, then
 * neighbours (pairwise, a state of 40,000 series took 12 s to load, the
 * exporter blocked meanwhile; now 0.14 s). -1: out of memory. */
static int any_twice(const struct blamer_fleet *f, size_t n,
		     int (*cmp)(const void *, const void *, void *))
{
	size_t *ix, i;
	int found = 0;

	if (n < 2)
		return 0;
	ix = malloc(n * sizeof(*ix));
	if (!ix)
		return -1;
	for (i = 0; i < n; i++)
		ix[i] = i;
	qsort_r(ix, n, sizeof(*ix), cmp, (void *)f);
	for (i = 1; i < n && !found; i++)
		found = !cmp(&ix[i - 1], &ix[i], (void *)f);
	free(ix);
	return found;
}

/* Every key once: a series, path or drop twice would be written twice. */
static const char *duplicates(const struct blamer_fleet *f)
{
	int (*const cmp[])(const void *, const void *, void *) = {
		def_key_cmp, series_key_cmp, path_key_cmp, drop_key_cmp,
	};
	const size_t n[] = { f->ndefs, f->nseries, f->npaths, f->ndrops };
	static const char *const what[] = {
		"a metric defined twice for a uid", "a series listed twice", "a path listed twice",
		"a drop reason listed twice",
	};
	size_t i;

	for (i = 0; i < f->nidents; i++)
		if (i && !fl_ident_cmp(&f->idents[i - 1], &f->idents[i]))
			return "a heap listed twice";
	for (i = 0; i < f->nnodes; i++)
		if (i && !fl_uid_node_cmp(&f->nodes[i - 1], &f->nodes[i]))
			return "a node named twice for a uid";
	for (i = 0; i < f->nunits; i++)
		if (i && !unit_order(&f->units[i - 1], &f->units[i]))
			return "a unit named twice for a uid";
	for (i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		int r = any_twice(f, n[i], cmp[i]);

		if (r < 0)
			return "out of memory";
		if (r)
			return what[i];
	}
	return NULL;
}

static int def_uid_order(const void *a, const void *b, void *arg)
{
	const struct blamer_fleet *f = arg;
	const struct fl_series *x = &f->series[*(const size_t *)a];
	const struct fl_series *y = &f->series[*(const size_t *)b];

	if (x->def != y->def)
		return x->def < y->def ? -1 : 1;
	return (x->uid > y->uid) - (x->uid < y->uid);
}

/*
 * A version 1 state's definitions made per uid: a definition's series of
 * its first uid keep it, each other uid's get a copy of it (of the very
 * definition they name: a state may name one twice), and one no series
 * uses is dropped (it would say no uid). Sorted, not searched: a state
 * is read as untrusted input, and a search per series was quadratic.
 * NULL, or why not.
 */
static const char *defs_per_uid(struct blamer_fleet *f)
{
	size_t *ix = malloc((f->nseries + 1) * sizeof(*ix)), i, k;
	uint32_t *to, at = 0, last = NO_UID, last_uid = 0;

	if (!ix)
		return "out of memory";
	for (i = 0; i < f->nseries; i++)
		ix[i] = i;
	qsort_r(ix, f->nseries, sizeof(*ix), def_uid_order, f);
	/* (x->def is rewritten as it goes: the walk keeps what it was) */
	for (i = 0; i < f->nseries; i++) {
		struct fl_series *x = &f->series[ix[i]];
		uint32_t d = x->def;

		if (d == last) {
			if (x->uid != last_uid) {	/* the next uid of d: a copy */
				if (!fl_def_add(f, &f->defs[d], x->uid)) {
					free(ix);
					return "out of memory";
				}
				at = (uint32_t)(f->ndefs - 1);
				last_uid = x->uid;
			}
			x->def = at;
			continue;
		}
		f->def_uids[d] = x->uid;	/* d's first uid */
		at = last = d;
		last_uid = x->uid;
	}
	free(ix);
	to = malloc((f->ndefs + 1) * sizeof(*to));
	if (!to)
		return "out of memory";
	for (i = 0, k = 0; i < f->ndefs; i++) {
		if (f->def_uids[i] == NO_UID) {
			def_free(&f->defs[i]);
			continue;
		}
		to[i] = (uint32_t)k;
		f->def_uids[k] = f->def_uids[i];
		f->defs[k++] = f->defs[i];
	}
	f->ndefs = k;
	for (i = 0; i < f->nseries; i++)
		f->series[i].def = to[f->series[i].def];
	free(to);
	return NULL;
}

/* A uid and a node id, or a unit, that the remainder's records use. */
struct uid_use {
	uint32_t uid;
	uint64_t id;
};

static int use_cmp(const void *a, const void *b)
{
	const struct uid_use *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->uid > y->uid) - (x->uid < y->uid);
}

static uint64_t node_key(const void *p)
{
	return ((const struct blamer_snap_uid_node *)p)->node.id;
}

static uint64_t unit_key(const void *p)
{
	return ((const struct blamer_snap_uid_unit_def *)p)->def.unit;
}

/* Both name records begin with their uid, which spread() sets. */
_Static_assert(offsetof(struct blamer_snap_uid_node, uid) == 0 &&
	       offsetof(struct blamer_snap_uid_unit_def, uid) == 0, "uid first");

/*
 * The uid-less names @old (*@n of @size bytes, each of @key, put in
 * order of @key alone by @order: their uids are all NO_UID) copied to
 * every (uid, key) of @use (@m, sorted by use_cmp()), one no record uses
 * dropped: the new array in *@out (@old freed), its length in *@n. NULL,
 * or why not (@twice: a key named twice; @old then kept).
 */
static const char *spread(void *old, size_t *n, size_t size,
			  int (*order)(const void *, const void *), uint64_t (*key)(const void *),
			  const struct uid_use *use, size_t m, const char *twice, void **out)
{
	const char *o = old;
	size_t i, j, k;
	char *nv;

	*out = old;
	if (!*n)
		return NULL;
	qsort(old, *n, size, order);
	for (i = 1; i < *n; i++)
		if (key(o + (i - 1) * size) == key(o + i * size))
			return twice;
	nv = malloc((m + 1) * size);
	if (!nv)
		return "out of memory";
	for (i = 0, j = 0, k = 0; i < m; i++) {
		if (i && !use_cmp(&use[i - 1], &use[i]))
			continue;
		while (j < *n && key(o + j * size) < use[i].id)
			j++;
		if (j < *n && key(o + j * size) == use[i].id) {
			memcpy(nv + k * size, o + j * size, size);
			memcpy(nv + k * size, &use[i].uid, sizeof(use[i].uid));
			k++;
		}
	}
	free(old);
	*out = nv;
	*n = k;
	return NULL;
}

/*
 * A version 1 or 2 state's node and unit names, which served every uid,
 * made per uid: each is copied to every uid whose series or paths use it
 * (so no label the exporter wrote changes), and one no record uses is
 * dropped. From then on a uid's names are its own (written as version 3
 * at the next commit). Sorted, not searched (untrusted input). NULL, or
 * why not.
 */
static const char *names_per_uid(struct blamer_fleet *f)
{
	size_t n = 0, i, m;
	const char *why;
	struct uid_use *v;
	uint32_t d;
	void *nv;

	for (i = 0; i < f->nseries; i++)
		n += f->series[i].depth;
	for (i = 0; i < f->npaths; i++)
		n += f->paths[i].depth + 1;
	v = malloc((n + 1) * sizeof(*v));
	if (!v)
		return "out of memory";
	/* nodes: every (uid, id) of a series or path */
	for (i = 0, m = 0; i < f->nseries; i++)
		for (d = 0; d < f->series[i].depth; d++)
			v[m++] = (struct uid_use){ f->series[i].uid, f->series[i].nodes[d] };
	for (i = 0; i < f->npaths; i++)
		for (d = 0; d < f->paths[i].depth; d++)
			v[m++] = (struct uid_use){ f->paths[i].uid, f->paths[i].nodes[d] };
	qsort(v, m, sizeof(*v), use_cmp);
	why = spread(f->nodes, &f->nnodes, sizeof(*f->nodes), fl_uid_node_cmp, node_key, v, m,
		     "a node named twice", &nv);
	f->nodes = nv;
	if (!why) {
		/* units: every (uid, unit) of a path */
		for (i = 0, m = 0; i < f->npaths; i++)
			v[m++] = (struct uid_use){ f->paths[i].uid, f->paths[i].unit };
		qsort(v, m, sizeof(*v), use_cmp);
		why = spread(f->units, &f->nunits, sizeof(*f->units), unit_order, unit_key, v, m,
			     "a unit named twice", &nv);
		f->units = nv;
	}
	free(v);
	return why;
}

int fl_state_load(struct blamer_fleet *f, char *err, size_t errlen)
{
	struct in in = { 0 };
	char *buf = NULL, *p, *nl, *last;
	unsigned long long nlines = 0, hash = 0;
	struct stat st;
	ssize_t n;
	size_t len = 0;
	int fd, ret;

	fl_state_free(f);
	fd = openat(f->dirfd, f->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return dir_trusted(f, err, errlen);	/* a new state: nothing folded yet */
	if (fd < 0) {
		ret = -errno;
		/* another user's symlink, or a file we may not read */
		if (fl_squatter(f, "the state", f->name, f->path, err, errlen))
			return -EPERM;
		snprintf(err, errlen, "cannot open the state %s: %s", f->path, strerror(-ret));
		return ret;
	}
	ret = trusted(f, fd, err, errlen);
	if (ret)
		goto out;
	if (fstat(fd, &st) || st.st_size > FL_STATE_MAX) {
		snprintf(err, errlen, "the state %s is larger than %u MiB: refused", f->path,
			 FL_STATE_MAX >> 20);
		ret = -EFBIG;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		snprintf(err, errlen, "reading the state %s: out of memory", f->path);
		goto out;
	}
	while (len < (size_t)st.st_size && (n = read(fd, buf + len, (size_t)st.st_size - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			snprintf(err, errlen, "reading the state %s: %s", f->path, strerror(errno));
			goto out;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	/* the last line: "end LINES HASH", over every byte before it */
	last = len && buf[len - 1] == '\n' ? buf + len - 1 : NULL;
	if (last) {
		*last = '\0';
		last = strrchr(buf, '\n');
		last = last ? last + 1 : buf;
	}
	if (!last || sscanf(last, "end %llu %16llx", &nlines, &hash) != 2 ||
	    hash != fnv(buf, (size_t)(last - buf)) || memchr(buf, '\0', (size_t)(last - buf))) {
		snprintf(err, errlen, "the state %s is not whole (no end line, or its hash does not match): refused; move it away to start from nothing",
			 f->path);
		ret = -EINVAL;
		goto out;
	}
	*(last ? last : buf) = '\0';
	for (p = buf; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = '\0';
		in.line = p;
		in.no++;
		in.why = NULL;
		if (in.no == 1) {
			in.version = !strcmp(p, STATE_MAGIC) ? 3 : !strcmp(p, STATE_MAGIC_2) ? 2 :
				     !strcmp(p, STATE_MAGIC_1) ? 1 : 0;
			if (!in.version) {
				in.why = "not a blamer fold state (version 1, 2 or 3)";
				break;
			}
			continue;
		}
		if (!read_line(f, &in))
			break;
		if (*in.line) {
			in.why = "more fields than its record has";
			break;
		}
	}
	if (!in.why && !in.no)
		in.why = "not a blamer fold state (version 1, 2 or 3)";
	if (!in.why && in.version == 1)
		in.why = defs_per_uid(f);
	if (!in.why && in.version < 3)
		in.why = names_per_uid(f);
	if (!in.why && in.no != nlines)
		in.why = "the count of lines does not match";
	if (!in.why) {
		if (f->nidents)
			qsort(f->idents, f->nidents, sizeof(*f->idents), fl_ident_cmp);
		if (f->nnodes)
			qsort(f->nodes, f->nnodes, sizeof(*f->nodes), fl_uid_node_cmp);
		if (f->nunits)
			qsort(f->units, f->nunits, sizeof(*f->units), unit_order);
		in.why = duplicates(f);
	}
	if (in.why) {
		snprintf(err, errlen, "the state %s, line %u: %s: refused", f->path, in.no, in.why);
		fl_state_free(f);
		ret = -EINVAL;
	} else if (fsync(fd) || fsync(f->dirfd)) {
		/*
		 * Heaps are released on the strength of what is read here: it
		 * must be on disk (a commit killed between its rename and its
		 * directory's fsync left a state a crash could still undo).
		 */
		ret = -errno;
		snprintf(err, errlen, "the state %s cannot be made durable: %s", f->path,
			 strerror(errno));
		fl_state_free(f);
	}
out:
	free(buf);
	close(fd);
	return ret;
}
