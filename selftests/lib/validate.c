// SPDX-License-Identifier: MIT
/* Minimal heap validator for tests: see validate.h. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uapi/linux/blamer.h"
#include "validate.h"

#define FAIL(...) do { snprintf(st->why, sizeof(st->why), __VA_ARGS__); return -1; } while (0)

static const struct blamer_block *block(const struct v_heap *h, blamer_ref ref, bool head)
{
	uint32_t s = blamer_ref_slab(ref), off = blamer_ref_offset(ref);
	const struct blamer_block *b;
	uint32_t min = s ? 64 : BLAMER_SLAB0_FIRST_RECORD;

	if (s >= h->n || off % 8 || (uint64_t)off + 24 > h->size[s])
		return NULL;
	if (head ? ref != BLAMER_LIST_HEAD_REF : off < min)
		return NULL;
	b = (const void *)(h->slab[s] + off);
	if (b->size < 24 || b->size % 8 || (uint64_t)off + b->size > h->size[s])
		return NULL;
	if (b->cookie != (head ? BLAMER_BLOCK_QUEUE : BLAMER_BLOCK_COOKIE))
		return NULL;
	return b;
}

int v_check(const struct v_heap *h, struct v_stats *st)
{
	const struct blamer_heap_header *hh;
	const struct blamer_block *b;
	blamer_ref ref, limit = 0;
	uint32_t i;

	memset(st, 0, sizeof(*st));
	if (!h->n || h->size[0] < BLAMER_SLAB0_FIRST_RECORD)
		FAIL("no slab 0");
	for (i = 0; i < h->n; i++) {
		const struct blamer_slab_header *sh = (const void *)h->slab[i];

		if (sh->magic != BLAMER_HEAP_MAGIC || sh->version != BLAMER_HEAP_VERSION ||
		    sh->header_size != sizeof(*sh) || sh->slab_index != i)
			FAIL("slab %u: bad header", i);
		if (sh->heap_id != ((const struct blamer_slab_header *)h->slab[0])->heap_id)
			FAIL("slab %u: other heap", i);
		if (__atomic_load_n(&sh->freeptr, __ATOMIC_RELAXED) > h->size[i])
			FAIL("slab %u: freeptr beyond end", i);
		limit += h->size[i] / 24;
	}
	hh = (const void *)(h->slab[0] + BLAMER_HEAP_HEADER_OFFSET);
	st->state = __atomic_load_n(&hh->state, __ATOMIC_ACQUIRE);
	st->flags = __atomic_load_n(&hh->flags, __ATOMIC_RELAXED);
	st->slab_count = __atomic_load_n(&hh->slab_count, __ATOMIC_ACQUIRE);
	if (st->state != BLAMER_HEAP_READY && st->state != BLAMER_HEAP_DELETED)
		FAIL("heap state %u", st->state);
	if (st->slab_count > h->n || st->slab_count > BLAMER_MAX_SLABS)
		FAIL("slab_count %u but %u slabs", st->slab_count, h->n);
	if (!block(h, BLAMER_LIST_HEAD_REF, true))
		FAIL("bad list head");
	ref = BLAMER_LIST_HEAD_REF;
	for (;;) {
		uint32_t t;

		b = block(h, ref, ref == BLAMER_LIST_HEAD_REF);
		ref = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE);
		if (ref == BLAMER_LIST_HEAD_REF || ref == 0)
			break;
		b = block(h, ref, false);
		/*
		 * A live writer may grow the heap while this walks it: a
		 * record in a slab counted since the view was taken ends
		 * the view (the list is append-only, so all before it was
		 * walked); any other bad reference is corruption.
		 */
		if (!b && blamer_ref_slab(ref) >= h->n &&
		    blamer_ref_slab(ref) < __atomic_load_n(&hh->slab_count, __ATOMIC_ACQUIRE)) {
			st->grew = true;
			break;
		}
		if (!b)
			FAIL("bad record ref %#" PRIx64 " on the list", ref);
		if (++st->records > limit)
			FAIL("list loops");
		t = __atomic_load_n(&b->type, __ATOMIC_ACQUIRE);
		if (t == BLAMER_REC_TRANSITIONING)
			st->transitioning++;
		else if (t < 32 && t)
			st->by_type[t]++;
		else if (~t < 32 && ~t)
			st->retired[~t]++;
		else
			FAIL("record %#" PRIx64 " has type %#x", ref, t);
		if (t == BLAMER_REC_PROCESS && b->size >= sizeof(struct blamer_process)) {
			const struct blamer_process *p = (const void *)b;

			st->data_id = __atomic_load_n(&p->owner.data_id, __ATOMIC_ACQUIRE);
			st->pid = p->owner.pid;
		}
	}
	return 0;
}

#undef FAIL
#define FAIL(...) do { snprintf(why, 64, __VA_ARGS__); return -1; } while (0)

static void add_values(uint64_t *sum, const uint64_t *v)
{
	uint32_t i;

	for (i = 0; i < BLAMER_DAG_MAX_UNITS; i++)
		sum[i] += __atomic_load_n(&v[i], __ATOMIC_RELAXED);
}

int v_path_values(const struct v_heap *h, blamer_ref path,
		  uint64_t values[BLAMER_DAG_MAX_UNITS], uint64_t *nshards, char *why)
{
	const struct blamer_dag_path *p = (const void *)block(h, path, false);
	blamer_ref ref;
	uint64_t limit = 0;
	uint32_t i;

	memset(values, 0, BLAMER_DAG_MAX_UNITS * sizeof(*values));
	*nshards = 0;
	if (!p || p->hdr.size < sizeof(*p) ||
	    __atomic_load_n(&p->hdr.type, __ATOMIC_ACQUIRE) != BLAMER_REC_DAG_PATH)
		FAIL("%#" PRIx64 " is not a path", path);
	add_values(values, p->values);
	for (i = 0; i < h->n; i++)
		limit += h->size[i] / sizeof(struct blamer_dag_shard);
	for (ref = __atomic_load_n(&p->shards, __ATOMIC_ACQUIRE); ref;) {
		const struct blamer_dag_shard *s = (const void *)block(h, ref, false);

		if (!s || s->hdr.size < sizeof(*s) ||
		    __atomic_load_n(&s->hdr.type, __ATOMIC_ACQUIRE) != BLAMER_REC_DAG_SHARD)
			FAIL("shard %#" PRIx64 " is not a shard", ref);
		if (s->path != path)
			FAIL("shard %#" PRIx64 " is of path %#" PRIx64, ref, s->path);
		if (++*nshards > limit)
			FAIL("the shard chain loops");
		add_values(values, s->values);
		ref = s->next_shard;
	}
	return 0;
}

static int map_ro(int fd, uint64_t size, off_t off, const uint8_t **out)
{
	void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, off);

	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

int v_load_dir(const char *dir, int64_t pid, int64_t start_ns, struct v_heap *h)
{
	char path[512];
	struct stat st;
	int fd, ret;

	memset(h, 0, sizeof(*h));
	for (h->n = 0; h->n < BLAMER_MAX_SLABS; h->n++) {
		snprintf(path, sizeof(path), "%s/%" PRId64 "-%" PRId64 ".%u.slab", dir, pid,
			 start_ns, h->n);
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			break;
		if (fstat(fd, &st) || st.st_size < 4096) {
			close(fd);
			break;
		}
		ret = map_ro(fd, st.st_size, 0, &h->slab[h->n]);
		close(fd);
		if (ret)
			return ret;
		h->size[h->n] = st.st_size;
	}
	return h->n ? 0 : -ENOENT;
}

int v_load_device(int64_t pid, struct v_heap *h)
{
	struct blamer_slab_info info[256];
	struct blamer_list l = { .info_size = sizeof(info[0]), .slabs = (uintptr_t)info,
				 .capacity = 256 };
	uint64_t serial = 0;
	uint32_t i;
	int fd, ret = 0;

	memset(h, 0, sizeof(*h));
	fd = open("/dev/blamer", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, BLAMER_IOC_LIST, &l)) {
		ret = -errno;
		goto out;
	}
	/* The newest heap of pid (highest file_serial), slabs by index. */
	for (i = 0; i < l.count; i++)
		if (info[i].pid == pid && info[i].file_serial > serial)
			serial = info[i].file_serial;
	for (i = 0; i < l.count; i++) {
		struct blamer_open o = { .id = info[i].id };
		const uint8_t *p = NULL;
		uint32_t idx;

		if (info[i].pid != pid || info[i].file_serial != serial)
			continue;
		if (ioctl(fd, BLAMER_IOC_OPEN, &o)) {
			ret = -errno;
			goto out;
		}
		ret = map_ro(o.fd, info[i].size, 0, &p);
		close(o.fd);
		if (ret)
			goto out;
		idx = ((const struct blamer_slab_header *)p)->slab_index;
		if (idx >= BLAMER_MAX_SLABS || h->slab[idx]) {
			munmap((void *)p, info[i].size);
			continue;
		}
		h->slab[idx] = p;
		h->size[idx] = info[i].size;
	}
	while (h->n < BLAMER_MAX_SLABS && h->slab[h->n])
		h->n++;
	ret = h->n ? 0 : -ENOENT;
out:
	close(fd);
	return ret;
}

void v_unload(struct v_heap *h)
{
	uint32_t i;

	for (i = 0; i < BLAMER_MAX_SLABS; i++)
		if (h->slab[i])
			munmap((void *)h->slab[i], h->size[i]);
	memset(h, 0, sizeof(*h));
}
