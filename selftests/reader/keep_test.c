// SPDX-License-Identifier: MIT
/*
 * reader-unit, dead heaps kept decoded by a long-lived reader
 * (BLAMER_READ_KEEP_DEAD) while their files are unchanged. Built with
 * ASan and UBSan.
 */
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "testsupport.h"
#include "rtest.h"

/* Bytes this process has read through read()/pread() so far. */
static uint64_t bytes_read(void)
{
	char line[128];
	uint64_t n = 0;
	FILE *f = fopen("/proc/self/io", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "rchar: %" SCNu64, &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* A snapshot of @r as JSON and Prometheus text, its own times zeroed:
 * what it holds, comparable. */
static char *snapshot_json(struct blamer_reader *r, uint64_t *read)
{
	struct blamer_snapshot *s;
	uint64_t before = bytes_read();
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (blamer_reader_snapshot(r, &s, NULL, 0))
		return NULL;
	*read = bytes_read() - before;
	s->realtime_ns = s->monotonic_ns = 0;
	f = open_memstream(&text, &len);
	if (f) {
		blamer_snapshot_write_json(s, f, 0, NULL, 0);
		blamer_snapshot_write_prometheus(s, f);	/* and the unit names */
		fclose(f);
	}
	blamer_snapshot_free(s);
	return text;
}

/*
 * BLAMER_READ_KEEP_DEAD: a dead heap is read once, then its kept copy
 * shows the same (every record kind, the unit names) without a byte read,
 * until a file of it changes, and never while a writer holds its lock
 * (one in another pid namespace, which /proc does not show).
 */
TEST(long_lived_reader_keeps_dead_heaps_while_unchanged)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL };
	struct blamer_reader *fresh, *kept;
	uint64_t n, p_late[] = { FX_ROOT, 0x777 };
	char *want, *got, path[256];
	struct fx_heap a;
	int lock;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	fx_standard(&a, 3999031, 31, 2);
	fx_unit(&a, BLAMER_UNIT_APP_BASE, BLAMER_BASE_BYTES, "cache");
	((struct blamer_dag_path *)fx_at(&a, fx_path(&a, p_late, 1, 5, 6)))->units[1] =
		BLAMER_UNIT_APP_BASE;
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999031, 31));
	sleep(2);	/* its files quiet: a kept heap's files are (see dir.c) */
	fresh = blamer_reader_open(&o, NULL, 0);
	o.flags |= BLAMER_READ_KEEP_DEAD;
	kept = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, fresh);
	ASSERT_NE(NULL, kept);

	want = snapshot_json(fresh, &n);
	ASSERT_NE(NULL, want);
	EXPECT_NE(NULL, strstr(want, "blamer_app_cache_bytes_total"));
	got = snapshot_json(kept, &n);	/* read and kept */
	ASSERT_NE(NULL, got);
	EXPECT_STREQ(want, got);
	EXPECT_GT(n, 1000);
	free(got);
	got = snapshot_json(kept, &n);	/* the kept copy */
	ASSERT_NE(NULL, got);
	EXPECT_STREQ(want, got);
	EXPECT_LT(n, 1000);	/* /proc only: no slab file read */
	free(got);
	free(want);

	/* changed: read again, and the change shown */
	fx_node(&a, 0x777, "late");
	fx_edge(&a, FX_ROOT, 0x777);
	fx_path(&a, p_late, 2, 5, 6);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999031, 31));
	got = snapshot_json(kept, &n);
	ASSERT_NE(NULL, got);
	EXPECT_NE(NULL, strstr(got, "\"late\""));
	EXPECT_GT(n, 1000);
	want = snapshot_json(fresh, &n);
	ASSERT_NE(NULL, want);
	EXPECT_STREQ(want, got);
	free(got);
	free(want);

	/* a writer holds the lock: read every time, whatever its files say */
	sleep(2);
	snprintf(path, sizeof(path), "%s/3999031-31.0.slab", tmpdir);
	lock = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, lock);
	ASSERT_EQ(0, flock(lock, LOCK_SH));
	got = snapshot_json(kept, &n);
	free(got);
	got = snapshot_json(kept, &n);
	ASSERT_NE(NULL, got);
	EXPECT_GT(n, 1000);
	free(got);
	close(lock);
	got = snapshot_json(kept, &n);	/* read, now kept */
	free(got);
	got = snapshot_json(kept, &n);
	EXPECT_LT(n, 1000);
	free(got);

	/* released: gone from the next snapshot, kept copy and all */
	ASSERT_EQ(0, unlink(path));
	snprintf(path, sizeof(path), "%s/3999031-31.1.slab", tmpdir);
	ASSERT_EQ(0, unlink(path));
	got = snapshot_json(kept, &n);
	ASSERT_NE(NULL, got);
	EXPECT_EQ(NULL, strstr(got, "3999031"));
	free(got);

	blamer_reader_close(fresh);
	blamer_reader_close(kept);
	rm_tmpdir();
	fx_free(&a);
}

TEST_HARNESS_MAIN
