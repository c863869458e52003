/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers and the fixture of the library tests (include after
 * kselftest_harness.h). The tests are built from the library sources
 * (with sanitizers), so they may look inside a context
 * (lib/writer/internal.h) to check what the writer wrote.
 *
 * BLAMER_TEST_BACKEND=device runs the backend-neutral tests against
 * /dev/blamer (in the VM); the default is the dir backend in a private
 * temporary directory per test.
 */
#ifndef BLAMER_TEST_COMMON_H
#define BLAMER_TEST_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blamer.h"
#include "writer/internal.h"
#include "validate.h"

static inline int t_backend(void)
{
	const char *e = getenv("BLAMER_TEST_BACKEND");

	return e && !strcmp(e, "device") ? BLAMER_BACKEND_DEVICE : BLAMER_BACKEND_DIR;
}

/* A private 0700 directory for dir heaps (also used by device tests). */
static inline void t_mkdir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/blamer-test-XXXXXX");
	if (!mkdtemp(dir))
		abort();
}

static inline void t_rmdir(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "# cleanup of %s failed\n", dir);
}

/* A snapshot of @b's own heap as the reader reads it (its mappings):
 * NULL if the reader refuses it. */
static inline struct blamer_snapshot *t_own_snapshot(struct blamer *b)
{
	struct blamer_mem_slab m[BLAMER_MAX_SLABS];
	struct blamer_snapshot *s;
	uint32_t i, n = __atomic_load_n(&b->heap.nslabs, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++) {
		m[i].data = b->heap.slabs[i].base;
		m[i].size = b->heap.slabs[i].size;
	}
	return blamer_snapshot_from_memory(m, n, &s) ? NULL : s;
}

static inline struct blamer_config t_cfg(const char *dir, uint64_t slab_size, uint32_t max_slabs)
{
	struct blamer_config c = { 0 };

	c.backend = t_backend();
	c.dir = dir;
	c.slab_size = slab_size;
	c.max_slabs = max_slabs;
	c.flags = BLAMER_OPEN_NO_MODULES;
	return c;
}

/* The context's own mappings, for v_check(). */
static inline void t_view(struct blamer *b, struct v_heap *v)
{
	uint32_t i;

	memset(v, 0, sizeof(*v));
	v->n = __atomic_load_n(&b->heap.nslabs, __ATOMIC_ACQUIRE);
	for (i = 0; i < v->n; i++) {
		v->slab[i] = b->heap.slabs[i].base;
		v->size[i] = b->heap.slabs[i].size;
	}
}

/*
 * Another process's heap, through its files or the device. The slabs are
 * listed first and mapped after: a writer that adds a slab in between
 * leaves a header counting one more slab than the list had (seen on the
 * slow debug kernels). That is a stale listing, not a corrupt heap: list
 * again, a bounded number of times. The other way round, a slab the
 * writer has made but not yet counted (its header may still be zeros:
 * the count is published after it) is not part of the heap yet: drop it.
 */
static inline int t_load(const char *dir, int64_t pid, int64_t start_ns, struct v_heap *v)
{
	const struct blamer_heap_header *hh;
	uint32_t count;
	int i, ret = 0;

	for (i = 0; i < 100; i++) {
		if (t_backend() == BLAMER_BACKEND_DEVICE)
			ret = v_load_device(pid, v);
		else
			ret = v_load_dir(dir, pid, start_ns, v);
		if (ret || !v->n)
			return ret;
		hh = (const void *)(v->slab[0] + BLAMER_HEAP_HEADER_OFFSET);
		count = __atomic_load_n(&hh->slab_count, __ATOMIC_ACQUIRE);
		if (count <= v->n) {
			while (count && v->n > count) {
				v->n--;
				munmap((void *)v->slab[v->n], v->size[v->n]);
				v->slab[v->n] = NULL;
				v->size[v->n] = 0;
			}
			return 0;
		}
		v_unload(v);
	}
	return t_backend() == BLAMER_BACKEND_DEVICE ? v_load_device(pid, v) :
		v_load_dir(dir, pid, start_ns, v);
}

/* A record type for allocator tests (any live type would do). */
#define T_REC_TEST 31u	/* no record type of the format */

/*
 * The fixture of every test: a private directory (for dir heaps; device
 * tests may use it too) and the context under test. The harness runs the
 * teardown after a failed assert too: it closes the context and removes
 * the directory, so a failure leaks neither.
 */
FIXTURE(ctx) {
	char dir[64];
	struct blamer *b;	/* the open context the teardown closes, if any */
};

FIXTURE_SETUP(ctx)
{
	t_mkdir(self->dir, sizeof(self->dir));
}

FIXTURE_TEARDOWN(ctx)
{
	if (self->b)
		blamer_close(self->b);
	t_rmdir(self->dir);
}

/* blamer_open(), the context then the fixture's to close. */
static inline int t_open(FIXTURE_DATA(ctx) *self, const struct blamer_config *c,
			 struct blamer **b)
{
	int ret = blamer_open(c, b);

	if (!ret)
		self->b = *b;
	return ret;
}

static inline void t_close(FIXTURE_DATA(ctx) *self, struct blamer *b)
{
	if (b == self->b)
		self->b = NULL;
	blamer_close(b);
}

static inline void t_abandon(FIXTURE_DATA(ctx) *self, struct blamer *b)
{
	if (b == self->b)
		self->b = NULL;
	blamer_abandon(b);
}

#endif
