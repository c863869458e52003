/* SPDX-License-Identifier: MIT */
/*
 * Where slabs come from (backend.c): the /dev/blamer device or files
 * in a directory. The allocator (heap.c) only sees bl_backend_slab().
 */
#ifndef BLAMER_BACKEND_H
#define BLAMER_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "heap.h"

struct bl_backend {
	uint32_t kind;		/* BLAMER_BACKEND_DEVICE or _DIR */
	int devfd;		/* device: the open /dev/blamer, else -1 */
	uint32_t dev_nids;	/* device: slabs created, released by a clean close */
	uint64_t dev_ids[BLAMER_MAX_SLABS];
	int dirfd;		/* dir: the checked directory, else -1 */
	int64_t pid;		/* dir file names: <pid>-<start_ns>.<index>.slab */
	int64_t start_ns;
	char dir[256];
};

/* @requested: enum blamer_backend (AUTO honours $BLAMER_BACKEND). */
int bl_backend_open(struct bl_backend *be, int requested, const char *dir,
		    int64_t pid, int64_t start_ns);
/* A zeroed slab of at least @size bytes mapped RW; *id is its backend name. */
int bl_backend_slab(struct bl_backend *be, uint32_t index, uint64_t size,
		    struct bl_slab_map *m, uint64_t *id);
void bl_backend_unmap(struct bl_slab_map *m);
/* After fork: the mapping becomes private zero memory (old pointers stay valid). */
void bl_backend_scratch(struct bl_slab_map *m);
/* The process is exiting (dir: slab 0's modification time says when). */
void bl_backend_exiting(struct bl_backend *be);
/* Closes fds; with @remove, deletes the heap's files (dir) or releases its slabs (device). */
void bl_backend_close(struct bl_backend *be, bool remove);

#endif /* BLAMER_BACKEND_H */
