// SPDX-License-Identifier: MIT
/*
 * The reader's front: opening a backend, taking a snapshot (pipeline.c
 * reads every heap the backend, dir.c or dev.c, lists; attrib.c adds
 * what spans them), a backend's status, waiting for a change, releasing a dead
 * heap, and reading one heap from memory.
 *
 * Layering inside the reader (internal.h has the map): reader.c ->
 * attrib.c series.c -> pipeline.c -> dir*.c dev.c (the backends' ops)
 * -> keep.c alive.c -> parse.c -> decode_*.c -> record.c copy.c slabs.c
 * -> snapshot.c (the model). Nothing calls back up.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "internal.h"
#include "where.h"

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

struct blamer_reader *blamer_reader_open(const struct blamer_reader_opts *opts,
					 char *err, size_t errlen)
{
	struct blamer_reader *r = calloc(1, sizeof(*r));
	enum blamer_backend env;
	const char *dev, *envdir = secure_getenv("BLAMER_DIR");
	bool named;
	char grp[64];
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
	r->dw.fd = -1;
	r->backend = r->opts.backend;
	dev = r->opts.device ? r->opts.device : BLAMER_DEVICE;
	if (r->backend == BLAMER_BACKEND_AUTO) {
		/* as the writer: $BLAMER_BACKEND=device|dir|auto */
		if (blamer_backend_from_env(&env, err, errlen)) {
			free(r);
			errno = EINVAL;
			return NULL;
		}
		r->backend = env;
	}
	/* a directory named (an empty name is none, as bl_slabdir_path() says) */
	named = (r->opts.dir && *r->opts.dir) || (envdir && *envdir);
	if (r->backend == BLAMER_BACKEND_AUTO) {
		/* an explicit directory wins; else the device when it exists */
		if (named || access(dev, F_OK))
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
		r->explicit_dir = named;
		if (bl_slabdir_path(r->source, sizeof(r->source), r->opts.dir)) {
			const char *d = r->opts.dir && *r->opts.dir ? r->opts.dir : envdir;

			rd_err(err, errlen, "directory name too long (%zu bytes, at most %zu): %.40s...",
			       strlen(d), sizeof(r->source) - 1, d);
			free(r);
			errno = ENAMETOOLONG;
			return NULL;
		}
	}
	r->ops = r->backend == BLAMER_BACKEND_DEVICE ? &rd_dev_ops : &rd_dir_ops;
	r->opts.dir = NULL;	/* r->source is the copy we keep */
	r->opts.device = NULL;
	r->pool = rd_pool_new();	/* none: each snapshot its own memory */
	return r;
}

void blamer_reader_close(struct blamer_reader *r)
{
	if (!r)
		return;
	r->ops->close(r);
	rd_keep_free(&r->keep);
	if (r->devfd >= 0)
		close(r->devfd);
	free(r->buf);
	rd_defmap_free(&r->scratch.defs);	/* decode_metric.c's, kept in the scratch */
	rd_defshare_free(&r->scratch.share);	/* and def_share.c's */
	rd_scratch_free(&r->scratch);
	rd_pool_put(r->pool);
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

int blamer_reader_snapshot(struct blamer_reader *r, struct blamer_snapshot **out,
			   char *err, size_t errlen)
{
	struct blamer_snapshot *s = rd_snapshot_new(r->pool);
	int ret;

	*out = NULL;
	if (!s) {
		rd_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->backend = r->backend;
	s->flags = r->opts.flags & ~BLAMER_SNAP_UID_NAMES;
	snprintf(s->source, sizeof(s->source), "%s", r->source);
	ret = rd_pipeline_snapshot(r, s, err, errlen);
	if (ret) {
		blamer_snapshot_free(s);
		return ret;
	}
	/* "Now" is taken after every heap was read, so every time in the
	 * snapshot is at or before it: an activity pushed while the reader
	 * went through the heaps is young, never in the future. */
	s->realtime_ns = bl_clock_ns(CLOCK_REALTIME);
	s->monotonic_ns = bl_clock_ns(CLOCK_MONOTONIC);
	rd_finish_snapshot(s);
	rd_service_view(s);
	if (s->backend == BLAMER_BACKEND_DIR)
		rd_join_parent_claims(s);
	*out = s;
	return 0;
}

size_t blamer_snapshot_filter(struct blamer_snapshot *s,
			      bool (*keep)(const struct blamer_snap_process *p, void *arg), void *arg)
{
	size_t i, k = 0;

	for (i = 0; i < s->nprocs; i++) {
		if (keep(&s->procs[i], arg))
			s->procs[k++] = s->procs[i];
		else
			rd_process_free(&s->procs[i]);
	}
	s->nprocs = k;
	/* the views of the processes kept, made as for a fresh snapshot */
	free(s->totals);
	free(s->units);
	free(s->tree);
	free(s->nodes);
	free(s->uid_nodes);
	s->uid_nodes = NULL;
	s->nuid_nodes = 0;
	s->totals = NULL;
	s->units = NULL;
	s->tree = NULL;
	s->nodes = NULL;
	s->ntotals = s->nunits = s->ntree = s->nnodes = 0;
	rd_finish_snapshot(s);
	rd_service_view(s);
	return k;
}

static int i32_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return x < y ? -1 : x > y;
}

struct pid_set {
	const int32_t *pids;	/* as given */
	int32_t *sorted;	/* sorted, or NULL (out of memory: the walk) */
	size_t n;
};

static bool pid_wanted(const struct blamer_snap_process *p, void *arg)
{
	const struct pid_set *ps = arg;
	size_t j;

	if (!ps->n)
		return true;
	if (ps->sorted)
		return bsearch(&p->pid, ps->sorted, ps->n, sizeof(*ps->sorted), i32_cmp);
	for (j = 0; j < ps->n; j++)
		if (p->pid == ps->pids[j])
			return true;
	return false;
}

size_t blamer_snapshot_select(struct blamer_snapshot *s, const int32_t *pids, size_t npids)
{
	struct pid_set ps = { pids, NULL, npids };
	size_t k;

	/* sorted once, each process looked up: no walk of every pid per
	 * process (a long list of pids times many heaps) */
	if (npids) {
		ps.sorted = malloc(npids * sizeof(*ps.sorted));
		if (ps.sorted) {
			memcpy(ps.sorted, pids, npids * sizeof(*ps.sorted));
			qsort(ps.sorted, npids, sizeof(*ps.sorted), i32_cmp);
		}
	}
	k = blamer_snapshot_filter(s, pid_wanted, &ps);
	free(ps.sorted);
	return k;
}

int blamer_reader_fd(const struct blamer_reader *r)
{
	return r->backend == BLAMER_BACKEND_DEVICE ? r->devfd : -1;
}

int blamer_reader_wait(struct blamer_reader *r, int timeout_ms)
{
	struct pollfd pfd;
	int n;

	/* The dir backend has nothing to watch: a poll() of no descriptor is
	 * the same sleep, a negative timeout for ever, and a signal ends it
	 * as it ends the device's (a nanosleep() restarted on EINTR kept a
	 * caller's signal handlers waiting out the whole timeout). */
	pfd.fd = r->backend == BLAMER_BACKEND_DEVICE ? r->devfd : -1;
	pfd.events = POLLIN;
	n = poll(&pfd, pfd.fd < 0 ? 0 : 1, timeout_ms);
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
	return r->ops->release(r, p, err, errlen);
}

int blamer_reader_status(struct blamer_reader *r, struct blamer_backend_status *st,
			 char *err, size_t errlen)
{
	struct blamer_snapshot *s;
	uint32_t flags = r->opts.flags;
	size_t i, j;
	int ret;

	memset(st, 0, sizeof(*st));
	st->backend = r->backend;
	snprintf(st->source, sizeof(st->source), "%s", r->source);
	if (r->ops->status) {
		ret = r->ops->status(r, st, err, errlen);
		if (ret)
			return ret;
	}
	/*
	 * Every heap read to its DROPS record (dead ones too, which are
	 * where lost writes matter most), nothing else decoded; on the dir
	 * backend the same pass counts the heaps.
	 */
	r->opts.flags = BLAMER_READ_DEAD_FULL | BLAMER_READ_NO_THREADS | BLAMER_READ_NO_STACKS |
			BLAMER_READ_NO_USERDATA | BLAMER_READ_NO_MODULES | BLAMER_READ_NO_LOG |
			BLAMER_READ_NO_CHILDREN | BLAMER_READ_NO_DAG;
	ret = blamer_reader_snapshot(r, &s, err, errlen);
	r->opts.flags = flags;
	if (ret)
		return ret;
	for (i = 0; i < s->nprocs; i++) {
		const struct blamer_snap_process *p = &s->procs[i];

		/* machine-wide: saturating, as every total over processes */
		for (j = 0; j < BLAMER_DROP_MAX; j++)
			st->drops[j] = rd_sat_add(st->drops[j], p->drops[j]);
		st->dropped = rd_sat_add(st->dropped, p->dropped);
		st->dropping_heaps += p->dropped != 0;
		if (r->backend == BLAMER_BACKEND_DIR) {
			st->bytes += p->size;
			st->dead += p->state == BLAMER_PROC_DEAD;
		}
	}
	if (r->backend == BLAMER_BACKEND_DIR)
		st->heaps = s->nprocs;
	blamer_snapshot_free(s);
	return 0;
}

int blamer_snapshot_from_memory(const struct blamer_mem_slab *slabs, size_t n,
				struct blamer_snapshot **out)
{
	struct blamer_snapshot *s = rd_snapshot_new(NULL);
	struct rd_slab raw[BLAMER_MAX_SLABS], ordered[BLAMER_MAX_SLABS];
	struct rd_heap h = { 0 };
	struct blamer_snap_process *p;
	size_t i;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	p = rd_new_process(s);
	if (!p) {
		blamer_snapshot_free(s);
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
		raw[i].real_size = slabs[i].size;
		raw[i].fd = -1;
		raw[i].id = i;
		p->size += slabs[i].size;
	}
	p->state = BLAMER_PROC_LIVE;
	p->nslabs = (uint32_t)n;
	h.slabs = ordered;
	h.retries = RD_DEFAULT_RETRIES;
	h.s = s;
	h.p = p;
	if (rd_heap_order(&h, raw, (uint32_t)n)) {
		for (i = 0; i < h.nslabs; i++)
			p->slab_ids[i] = i;
		rd_heap_parse(&h);
	}
	if (p->have_record)
		p->pid = (int32_t)p->rec_pid;
	rd_finish_snapshot(s);
	rd_service_view(s);
	if (s->backend == BLAMER_BACKEND_DIR)
		rd_join_parent_claims(s);
	*out = s;
	return 0;
}

