// SPDX-License-Identifier: MIT
/*
 * Seeds for fuzz/corpus: valid heaps from the fixture builder and
 * truncated / looping variants (of the record list and of a path's shard
 * chain), in the fuzz input format (byte 0 = slab count - 1, then the
 * slabs back to back). `make fuzz-corpus` rewrites them.
 */
#include <stdio.h>
#include <string.h>

#include "fixture.h"

static int put(const char *dir, const char *name, struct fx_heap *h, size_t cut)
{
	char path[4096];
	unsigned char n = (unsigned char)(h->nslabs - 1);
	FILE *f;
	unsigned i;
	size_t total = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	fwrite(&n, 1, 1, f);
	for (i = 0; i < h->nslabs; i++) {
		size_t len = h->size[i];

		if (cut && total + len > cut)
			len = cut > total ? cut - total : 0;
		fwrite(h->slab[i], 1, len, f);
		total += len;
	}
	return fclose(f);
}

int main(int argc, char **argv)
{
	struct fx_heap h;
	const char *dir = argc > 1 ? argv[1] : "fuzz/corpus";
	int ret = 0;

	fx_standard(&h, 100, 200, 1);
	ret |= put(dir, "standard", &h, 0);
	ret |= put(dir, "truncated-1000", &h, 1000);
	ret |= put(dir, "truncated-5000", &h, 5000);
	((struct blamer_block *)fx_at(&h, BLAMER_LIST_HEAD_REF))->next = BLAMER_LIST_HEAD_REF + 24;
	fx_free(&h);

	fx_init(&h, 1, 4096, 7, 7);
	fx_process(&h, 2, "tiny");
	ret |= put(dir, "tiny", &h, 0);
	{
		blamer_ref t = fx_thread(&h, 7, "t", 2), ud;

		fx_push(&h, t, BLAMER_ACTIVITY_TASK, "a", 1, 0);
		fx_push(&h, t, BLAMER_ACTIVITY_TASK, "b", 2, 0);
		fx_push(&h, t, BLAMER_ACTIVITY_TASK, "c", 3, 0);	/* overflow */
		ud = fx_userdata(&h, BLAMER_DATA_PROCESS, 128, 1);
		fx_field_u64(&h, ud, "n", 5);
		fx_field_str(&h, ud, "s", "hello");
		((struct blamer_process *)fx_at(&h, fx_hh(&h)->process))->user_data = ud;
		ret |= put(dir, "thread-userdata", &h, 0);
		/* the same, stamped with a TSC: the reader converts */
		fx_clock(&h, BLAMER_CLOCK_TSC, 1000000, 2000000);
		ret |= put(dir, "thread-tsc", &h, 0);
		fx_clock(&h, BLAMER_CLOCK_MONOTONIC, 0, 0);
		/* a self loop */
		((struct blamer_block *)fx_at(&h, t))->next = t;
		ret |= put(dir, "loop", &h, 0);
	}
	fx_free(&h);

	fx_init(&h, 1, 4096, 8, 8);
	fx_process(&h, 2, "shards");
	{
		uint64_t ids[2] = { FX_ROOT, FX_TAB };
		blamer_ref p = fx_path(&h, ids, 2, 100, 4096), s;

		fx_shard(&h, p, 8, 20, 512);
		s = fx_shard(&h, p, 0, 3, 64);
		ret |= put(dir, "shards", &h, 0);
		/* the newest shard links back to itself */
		((struct blamer_dag_shard *)fx_at(&h, s))->next_shard = s;
		ret |= put(dir, "shard-loop", &h, 0);
	}
	fx_free(&h);
	if (ret)
		perror("mkcorpus");
	return ret ? 1 : 0;
}
