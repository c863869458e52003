// SPDX-License-Identifier: MIT
/*
 * Reader front end: opening a backend, taking a snapshot (the backend
 * fills in processes, this file adds the cross-process attribution
 * totals), freeing it, and the name tables the views share.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "reader_internal.h"

void rd_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * The name of group GID from /etc/group, for a hint in an error message
 * only: the static build has no NSS, and a group it cannot name is
 * given by number.
 */
static void group_name(gid_t gid, char *buf, size_t len)
{
	char line[512], *pw, *id, *end;
	FILE *f = fopen("/etc/group", "re");

	snprintf(buf, len, "gid %u", (unsigned)gid);
	if (!f)
		return;
	/* name:password:gid:members */
	while (fgets(line, sizeof(line), f)) {
		pw = strchr(line, ':');
		id = pw ? strchr(pw + 1, ':') : NULL;
		if (!id || pw == line)
			continue;
		*pw = '\0';
		if (strtoul(id + 1, &end, 10) == gid && end != id + 1 && *end == ':') {
			snprintf(buf, len, "%.*s", (int)(len - 1), line);
			break;
		}
	}
	fclose(f);
}

struct blamer_snap_process *rd_new_process(struct blamer_snapshot *s)
{
	struct blamer_snap_process *np;

	if ((s->nprocs & (s->nprocs - 1)) == 0) {
		np = realloc(s->procs, (s->nprocs ? s->nprocs * 2 : 1) * sizeof(*np));
		if (!np)
			return NULL;
		s->procs = np;
	}
	np = &s->procs[s->nprocs++];
	memset(np, 0, sizeof(*np));
	return np;
}

static const char *default_dir(char *buf, size_t len)
{
	const char *env = getenv("BLAMER_DIR");

	if (env && *env)
		return env;
	snprintf(buf, len, "/dev/shm/blamer-%u", (unsigned)geteuid());	/* as the writer */
	return buf;
}

struct blamer_reader *blamer_reader_open(const struct blamer_reader_opts *opts,
					 char *err, size_t errlen)
{
	struct blamer_reader *r = calloc(1, sizeof(*r));
	const char *dev;
	char dbuf[64], grp[64];
	struct stat st;
	int e;

	if (!r) {
		rd_err(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	if (opts)
		r->opts = *opts;
	if (!r->opts.max_retries)
		r->opts.max_retries = RD_DEFAULT_RETRIES;
	if (!r->opts.max_slab_bytes)
		r->opts.max_slab_bytes = RD_DEFAULT_MAX_SLAB;
	r->devfd = -1;
	r->backend = r->opts.backend;
	dev = r->opts.device ? r->opts.device : "/dev/blamer";
	if (r->backend == BLAMER_BACKEND_AUTO) {
		/* as the writer: $BLAMER_BACKEND=device|dir, else auto */
		const char *env = getenv("BLAMER_BACKEND");

		if (env && !strcmp(env, "device"))
			r->backend = BLAMER_BACKEND_DEVICE;
		else if (env && !strcmp(env, "dir"))
			r->backend = BLAMER_BACKEND_DIR;
	}
	if (r->backend == BLAMER_BACKEND_AUTO) {
		/* an explicit directory wins; else the device when it exists */
		if (r->opts.dir || getenv("BLAMER_DIR") || access(dev, F_OK))
			r->backend = BLAMER_BACKEND_DIR;
		else
			r->backend = BLAMER_BACKEND_DEVICE;
	}
	if (r->backend == BLAMER_BACKEND_DEVICE) {
		snprintf(r->source, sizeof(r->source), "%s", dev);
		r->devfd = open(dev, O_RDWR | O_CLOEXEC);
		if (r->devfd < 0 && (errno == EACCES || errno == EPERM))
			r->devfd = open(dev, O_RDONLY | O_CLOEXEC);
		if (r->devfd < 0) {
			e = errno;
			if (e == ENOENT || e == ENODEV || e == ENXIO)
				rd_err(err, errlen,
				       "%s not found: the blamer module is not loaded (run `blamer load`, or use --backend dir)",
				       dev);
			else if ((e == EACCES || e == EPERM) && stat(dev, &st) == 0 && st.st_gid != 0) {
				group_name(st.st_gid, grp, sizeof(grp));
				rd_err(err, errlen, "%s: permission denied: it is for the group %s (ask an administrator to add you to it)",
				       dev, grp);
			} else if (e == EACCES || e == EPERM)
				rd_err(err, errlen, "%s: permission denied (ask an administrator to open access to the device)",
				       dev);
			else
				rd_err(err, errlen, "%s: %s", dev, strerror(e));
			free(r);
			errno = e;
			return NULL;
		}
	} else {
		snprintf(r->source, sizeof(r->source), "%s",
			 r->opts.dir ? r->opts.dir : default_dir(dbuf, sizeof(dbuf)));
	}
	r->opts.dir = NULL;	/* r->source is the copy we keep */
	r->opts.device = NULL;
	return r;
}

void blamer_reader_close(struct blamer_reader *r)
{
	if (!r)
		return;
	if (r->devfd >= 0)
		close(r->devfd);
	free(r);
}

enum blamer_backend blamer_reader_backend(const struct blamer_reader *r)
{
	return r->backend;
}

const char *blamer_reader_source(const struct blamer_reader *r)
{
	return r->source;
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- cross-process attribution totals ---- */

static int total_cmp(const void *a, const void *b)
{
	const struct blamer_snap_total *x = a, *y = b;
	uint32_t i, d = x->depth < y->depth ? x->depth : y->depth;

	for (i = 0; i < d; i++)
		if (x->nodes[i] != y->nodes[i])
			return x->nodes[i] < y->nodes[i] ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->unit < y->unit ? -1 : x->unit > y->unit;
}

/* for sorting: equal (path, unit) runs ordered by process index */
static int total_cmp_sort(const void *a, const void *b)
{
	const struct blamer_snap_total *x = a, *y = b;
	int c = total_cmp(a, b);

	if (c)
		return c;
	return x->nprocs < y->nprocs ? -1 : x->nprocs > y->nprocs;
}

static int node_cmp(const void *a, const void *b)
{
	const struct blamer_snap_node *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	/* named before unnamed, so the first of a run is the best */
	return (x->name[0] == 0) - (y->name[0] == 0);
}

static int proc_cmp(const void *a, const void *b)
{
	const struct blamer_snap_process *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start_time_ns != y->start_time_ns)
		return x->start_time_ns < y->start_time_ns ? -1 : 1;
	return x->heap_key < y->heap_key ? -1 : x->heap_key > y->heap_key;
}

void rd_finish_snapshot(struct blamer_snapshot *s)
{
	size_t i, j, k, n = 0, nn = 0;
	struct blamer_snap_total *t;
	struct blamer_snap_node *nodes;

	/* views list processes by pid (then start time: a reused pid's old heap first) */
	if (s->nprocs > 1)
		qsort(s->procs, s->nprocs, sizeof(*s->procs), proc_cmp);

	for (i = 0; i < s->nprocs; i++) {
		for (j = 0; j < s->procs[i].npaths; j++)
			n += s->procs[i].paths[j].nvalues;
		nn += s->procs[i].nnodes;
	}
	t = calloc(n ? n : 1, sizeof(*t));
	nodes = calloc(nn ? nn : 1, sizeof(*nodes));
	if (!t || !nodes) {
		free(t);
		free(nodes);
		return;		/* totals stay empty: the per-process data remains */
	}
	n = 0;
	nn = 0;
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];

		for (j = 0; j < p->npaths; j++) {
			for (k = 0; k < p->paths[j].nvalues; k++) {
				t[n].depth = p->paths[j].depth;
				memcpy(t[n].nodes, p->paths[j].nodes, sizeof(t[n].nodes));
				t[n].unit = p->paths[j].units[k];
				t[n].value = p->paths[j].values[k];
				t[n].nprocs = (uint32_t)i;	/* temporarily: process index */
				n++;
			}
		}
		if (p->nnodes)
			memcpy(nodes + nn, p->nodes, p->nnodes * sizeof(*nodes));
		nn += p->nnodes;
	}
	qsort(t, n, sizeof(*t), total_cmp_sort);
	/* merge equal (path, unit); count distinct processes (sorted within run) */
	for (i = 0, k = 0; i < n; k++) {
		struct blamer_snap_total m = t[i];
		uint32_t last = t[i].nprocs;

		m.nprocs = 1;
		for (j = i + 1; j < n && total_cmp(&t[j], &m) == 0; j++) {
			m.value += t[j].value;
			if (t[j].nprocs != last)
				m.nprocs++;
			last = t[j].nprocs;
		}
		t[k] = m;
		i = j;
	}
	s->totals = t;
	s->ntotals = k;
	qsort(nodes, nn, sizeof(*nodes), node_cmp);
	for (i = 0, k = 0; i < nn; i++)
		if (k == 0 || nodes[k - 1].id != nodes[i].id)
			nodes[k++] = nodes[i];
	s->nodes = nodes;
	s->nnodes = k;
}

int blamer_reader_snapshot(struct blamer_reader *r, struct blamer_snapshot **out,
			   char *err, size_t errlen)
{
	struct blamer_snapshot *s = calloc(1, sizeof(*s));
	int ret;

	*out = NULL;
	if (!s) {
		rd_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->backend = r->backend;
	snprintf(s->source, sizeof(s->source), "%s", r->source);
	s->realtime_ns = now_ns(CLOCK_REALTIME);
	s->monotonic_ns = now_ns(CLOCK_MONOTONIC);
	if (r->backend == BLAMER_BACKEND_DEVICE)
		ret = rd_dev_snapshot(r, s, err, errlen);
	else
		ret = rd_dir_snapshot(r, s, err, errlen);
	if (ret) {
		blamer_snapshot_free(s);
		return ret;
	}
	rd_finish_snapshot(s);
	*out = s;
	return 0;
}

void blamer_snapshot_free(struct blamer_snapshot *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nprocs; i++)
		rd_process_free(&s->procs[i]);
	free(s->procs);
	free(s->totals);
	free(s->nodes);
	free(s);
}

int blamer_reader_wait(struct blamer_reader *r, int timeout_ms)
{
	struct pollfd pfd;
	int n;

	if (r->backend != BLAMER_BACKEND_DEVICE || r->devfd < 0) {
		struct timespec ts = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		return 0;
	}
	pfd.fd = r->devfd;
	pfd.events = POLLIN;
	n = poll(&pfd, 1, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n > 0;
}

int blamer_reader_release(struct blamer_reader *r, const struct blamer_snap_process *p,
			  char *err, size_t errlen)
{
	if (p->state != BLAMER_PROC_DEAD) {
		rd_err(err, errlen, "pid %d is still running: only dead processes can be released",
		       p->pid);
		return -EBUSY;
	}
	if (r->backend == BLAMER_BACKEND_DEVICE)
		return rd_dev_release(r, p, err, errlen);
	return rd_dir_release(r, p, err, errlen);
}

int blamer_snapshot_from_memory(const struct blamer_mem_slab *slabs, size_t n,
				struct blamer_snapshot **out)
{
	struct blamer_snapshot *s = calloc(1, sizeof(*s));
	struct rd_slab raw[BLAMER_MAX_SLABS], ordered[BLAMER_MAX_SLABS];
	struct rd_heap h = { 0 };
	struct blamer_snap_process *p;
	size_t i;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	p = rd_new_process(s);
	if (!p) {
		free(s);
		return -ENOMEM;
	}
	if (n > BLAMER_MAX_SLABS) {
		rd_problem(p, BLAMER_HEALTH_CORRUPT, "%zu slabs, at most %u", n,
			   BLAMER_MAX_SLABS);
		n = BLAMER_MAX_SLABS;
	}
	s->backend = BLAMER_BACKEND_AUTO;
	snprintf(s->source, sizeof(s->source), "memory");
	memset(raw, 0, sizeof(raw));
	memset(ordered, 0, sizeof(ordered));
	for (i = 0; i < n; i++) {
		/* the heap is only read; rd_refresh needs fd >= 0 to write */
		raw[i].buf = (uint8_t *)(uintptr_t)slabs[i].data;
		raw[i].size = slabs[i].size;
		raw[i].fd = -1;
		raw[i].id = i;
		p->size += slabs[i].size;
	}
	p->state = BLAMER_PROC_LIVE;
	p->nslabs = (uint32_t)n;
	h.slabs = ordered;
	h.retries = RD_DEFAULT_RETRIES;
	h.p = p;
	if (rd_heap_order(&h, raw, (uint32_t)n)) {
		for (i = 0; i < h.nslabs; i++)
			p->slab_ids[i] = i;
		rd_heap_parse(&h);
	}
	if (p->have_record)
		p->pid = (int32_t)p->rec_pid;
	rd_finish_snapshot(s);
	*out = s;
	return 0;
}

/* ---- names ---- */

const char *blamer_snap_node_name(const struct blamer_snapshot *s, uint64_t id)
{
	size_t lo = 0, hi = s->nnodes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->nodes[mid].id == id)
			return s->nodes[mid].name[0] ? s->nodes[mid].name : NULL;
		if (s->nodes[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *blamer_health_name(enum blamer_health h)
{
	switch (h) {
	case BLAMER_HEALTH_OK: return "ok";
	case BLAMER_HEALTH_SUMMARY: return "summary";
	case BLAMER_HEALTH_EMPTY: return "empty";
	case BLAMER_HEALTH_TORN: return "torn";
	case BLAMER_HEALTH_CORRUPT: return "corrupt";
	case BLAMER_HEALTH_UNREADABLE: return "unreadable";
	}
	return "unknown";
}

const char *blamer_unit_name(uint32_t unit)
{
	switch (unit) {
	case BLAMER_UNIT_NONE: return "none";
	case BLAMER_UNIT_CPU_NS: return "cpu_ns";
	case BLAMER_UNIT_BYTES: return "bytes";
	case BLAMER_UNIT_COUNT: return "count";
	}
	return NULL;
}

const char *blamer_phase_name(uint32_t phase)
{
	switch (phase) {
	case BLAMER_PHASE_UNKNOWN: return "unknown";
	case BLAMER_PHASE_LAUNCHED: return "launched";
	case BLAMER_PHASE_MAIN_LOOP: return "main-loop";
	case BLAMER_PHASE_SHUTTING_DOWN: return "shutting-down";
	case BLAMER_PHASE_EXITED_CLEANLY: return "exited-cleanly";
	}
	return NULL;
}

const char *blamer_field_type_name(uint32_t type)
{
	static const char *const names[] = {
		"end", "raw", "raw_ref", "string", "string_ref", "char", "bool",
		"signed", "unsigned", "double",
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "unknown";
}

const char *blamer_activity_kind_name(uint32_t kind)
{
	static const char *const names[] = {
		"none", "task", "lock-acquire", "event-wait", "thread-join",
		"process-wait", "generic",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "unknown";
}
