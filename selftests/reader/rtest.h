/* SPDX-License-Identifier: MIT */
/*
 * What the reader-unit tests of more than one concern share (rtest.c):
 * a heap read from memory, and dir heaps in a temporary directory.
 */
#ifndef BLAMER_RTEST_H
#define BLAMER_RTEST_H

#include <stdint.h>

#include "testsupport.h"

/* fuzz/ (its corpus and regressions), as the build names it. */
#ifndef FUZZ_DIR
#define FUZZ_DIR "fuzz"
#endif

/* @h read from memory (blamer_snapshot_from_memory()), or NULL. */
struct blamer_snapshot *read_heap(struct fx_heap *h);

/* The directory of the test's dir heaps (dir_snapshot(), rm_tmpdir()). */
extern char tmpdir[64];

/* One snapshot of tmpdir's heaps by a reader opened for it with @flags, or NULL. */
struct blamer_snapshot *dir_snapshot(uint32_t flags);

/* Removes tmpdir and what it holds. */
void rm_tmpdir(void);

/* The process @pid of @s, or NULL. */
const struct blamer_snap_process *by_pid(const struct blamer_snapshot *s, int32_t pid);

/* The merged series @name of @s whose first label value is @v0 (any if
 * NULL), or NULL. */
const struct blamer_snap_series *find_series(const struct blamer_snapshot *s,
					     const char *name, const char *v0);

#endif /* BLAMER_RTEST_H */
