/* SPDX-License-Identifier: MIT */
/*
 * One fuzz input -> one heap read -> every exporter. Shared by the
 * libFuzzer harness (fuzz_reader.c) and the regression replay test
 * (selftests/reader), so a crash found once is replayed forever.
 *
 * Input: byte 0 picks the slab count (1..4), the rest is split into that
 * many equal slabs (the last takes the remainder).
 */
#ifndef BLAMER_FUZZ_ONE_H
#define BLAMER_FUZZ_ONE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blamer.h"

static inline int fuzz_one(const uint8_t *data, size_t size, FILE *sink)
{
	struct blamer_mem_slab slabs[4];
	struct blamer_snapshot *s;
	uint8_t *copy[4] = { 0 };
	size_t n, chunk, i, off;
	int ret;

	if (size < 1)
		return 0;
	n = (size_t)(data[0] % 4) + 1;
	data++;
	size--;
	chunk = size / n;
	for (i = 0, off = 0; i < n; i++) {
		size_t len = i == n - 1 ? size - off : chunk;

		/* private copies: exact-size allocations so ASan sees overreads */
		copy[i] = malloc(len ? len : 1);
		if (!copy[i])
			goto out;
		memcpy(copy[i], data + off, len);
		slabs[i].data = copy[i];
		slabs[i].size = len;
		off += len;
	}
	ret = blamer_snapshot_from_memory(slabs, n, &s);
	if (ret == 0) {
		blamer_snapshot_write_json(s, sink, 0, NULL, 0);
		blamer_snapshot_write_prometheus(s, sink);
		blamer_snapshot_free(s);
	}
out:
	for (i = 0; i < n; i++)
		free(copy[i]);
	return 0;
}

#endif /* BLAMER_FUZZ_ONE_H */
