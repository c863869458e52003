/* SPDX-License-Identifier: MIT */
/*
 * A minimal heap validator for the writer's tests (the real reader is
 * lib/reader*.c). It checks what the writer promises: headers, a list
 * that is well formed and bounded, every listed record a valid block, and
 * counts records by type. It never trusts the heap (it may be read while
 * its writer runs or after the writer was killed mid-update).
 */
#ifndef BLAMER_TEST_VALIDATE_H
#define BLAMER_TEST_VALIDATE_H

#include <stdbool.h>
#include <stdint.h>

#include "heap_format.h"

struct v_heap {
	const uint8_t *slab[BLAMER_MAX_SLABS];
	uint64_t size[BLAMER_MAX_SLABS];
	uint32_t n;
};

struct v_stats {
	uint32_t slab_count;
	uint32_t flags;
	uint32_t state;
	uint64_t records;		/* listed records */
	uint64_t by_type[32];		/* live types 1..31 */
	uint64_t retired[32];		/* retired types 1..31 */
	uint64_t transitioning;
	int64_t pid;			/* from the process record */
	uint32_t data_id;
	bool grew;			/* the list went on into a slab the view
					 * did not have: the heap grew meanwhile */
	char why[128];			/* the first problem, if any */
};

/* 0 if valid, -1 with st->why otherwise. */
int v_check(const struct v_heap *h, struct v_stats *st);
/*
 * What a reader shows for the DAG_PATH at @path: its own values plus
 * those of every shard on its chain, each loaded with one 8-byte load
 * (so it may run while writers add). *nshards: shards on the chain.
 * 0, or -1 with @why (64 bytes) if the path or a shard is not valid.
 */
int v_path_values(const struct v_heap *h, blamer_ref path,
		  uint64_t values[BLAMER_DAG_MAX_UNITS], uint64_t *nshards, char *why);
/* Maps read-only the slabs of heap <pid>-<start_ns> in @dir; 0 or -errno. */
int v_load_dir(const char *dir, int64_t pid, int64_t start_ns, struct v_heap *h);
/* Maps read-only the slabs of @pid's live heap via /dev/blamer; 0 or -errno. */
int v_load_device(int64_t pid, struct v_heap *h);
void v_unload(struct v_heap *h);

#endif
