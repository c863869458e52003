// SPDX-License-Identifier: MIT
/*
 * reader-unit, a long-lived exporter: the Prometheus cache writes what
 * a fresh export writes, and its counters never go down. Built with
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
#include "export/fleet.h"	/* the service guard's memory, white-box */

/* Does the cached text of the next snapshot of @r equal a fresh export's? */
static bool cached_matches(struct blamer_reader *r, struct blamer_prom_cache *c, size_t *len)
{
	char *want = NULL, *got = NULL;
	size_t wlen = 0, wcap = 0, gcap = 0;
	struct blamer_snapshot *s;
	bool same;

	if (blamer_reader_snapshot(r, &s, NULL, 0))
		return false;
	same = !blamer_snapshot_prometheus_text(s, &want, &wlen, &wcap) &&
	       !blamer_snapshot_prometheus_text_cached(s, c, &got, len, &gcap) &&
	       *len == wlen && !memcmp(want, got, wlen);
	if (!same)
		fprintf(stderr, "# fresh:\n%.*s\n# cached:\n%.*s\n", (int)wlen, want, (int)*len, got);
	free(want);
	free(got);
	blamer_snapshot_free(s);
	return same;
}

/*
 * blamer_prom_cache: scrape after scrape, the text a long-lived exporter
 * writes is the one-off export's, byte for byte, while processes keep
 * their values, change them, come and go, and while what every process's
 * text depends on changes (a unit named, two nodes of one name).
 */
TEST(prometheus_cache_writes_what_a_fresh_export_writes)
{
	struct blamer_reader_opts o = { .backend = BLAMER_BACKEND_DIR,
					.flags = BLAMER_READ_DEAD_FULL | BLAMER_READ_KEEP_DEAD |
						 BLAMER_READ_NO_TOTALS };
	uint64_t twin[] = { FX_ROOT, 0x999 }, app[] = { FX_ROOT, FX_GPU };
	struct blamer_prom_cache *c = blamer_prom_cache_new();
	struct blamer_reader *r;
	struct fx_heap a, b, d;
	char path[256];
	size_t len;

	ASSERT_NE(NULL, c);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/blamer-rt.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(tmpdir));
	o.dir = tmpdir;
	fx_standard(&a, 3999041, 41, 1);
	ASSERT_EQ(0, fx_write_dir(&a, tmpdir, 3999041, 41));
	fx_standard(&b, 3999042, 42, 2);
	ASSERT_EQ(0, fx_write_dir(&b, tmpdir, 3999042, 42));
	r = blamer_reader_open(&o, NULL, 0);
	ASSERT_NE(NULL, r);
	EXPECT_TRUE(cached_matches(r, c, &len));	/* all made */
	EXPECT_GT(len, 1000);
	EXPECT_TRUE(cached_matches(r, c, &len));	/* all kept */
	sleep(2);	/* now the reader keeps the heaps too */
	EXPECT_TRUE(cached_matches(r, c, &len));
	EXPECT_TRUE(cached_matches(r, c, &len));

	/* one process's values change */
	fx_free(&b);
	fx_standard(&b, 3999042, 42, 3);
	ASSERT_EQ(0, fx_write_dir(&b, tmpdir, 3999042, 42));
	EXPECT_TRUE(cached_matches(r, c, &len));
	EXPECT_TRUE(cached_matches(r, c, &len));

	/* a new process names another node "tab": every "tab" label changes */
	fx_standard(&d, 3999043, 43, 1);
	d.cur = 1;
	fx_node(&d, 0x999, "tab");
	fx_path(&d, twin, 2, 100, 200);
	d.cur = 0;
	ASSERT_EQ(0, fx_write_dir(&d, tmpdir, 3999043, 43));
	EXPECT_TRUE(cached_matches(r, c, &len));
	EXPECT_TRUE(cached_matches(r, c, &len));

	/* a unit gets a name: its values move to a family of their own */
	d.cur = 1;
	fx_unit(&d, BLAMER_UNIT_APP_BASE + 1, BLAMER_BASE_SECONDS, "render");
	((struct blamer_dag_path *)fx_at(&d, fx_path(&d, app, 2, 300, 400)))->units[1] =
		BLAMER_UNIT_APP_BASE + 1;
	d.cur = 0;
	ASSERT_EQ(0, fx_write_dir(&d, tmpdir, 3999043, 43));
	EXPECT_TRUE(cached_matches(r, c, &len));
	EXPECT_TRUE(cached_matches(r, c, &len));

	/* a process goes */
	snprintf(path, sizeof(path), "%s/3999041-41.0.slab", tmpdir);
	ASSERT_EQ(0, unlink(path));
	snprintf(path, sizeof(path), "%s/3999041-41.1.slab", tmpdir);
	ASSERT_EQ(0, unlink(path));
	EXPECT_TRUE(cached_matches(r, c, &len));
	EXPECT_TRUE(cached_matches(r, c, &len));

	blamer_prom_cache_free(c);
	blamer_reader_close(r);
	rm_tmpdir();
	fx_free(&a);
	fx_free(&b);
	fx_free(&d);
}

/* The value of the sample of @text whose line starts with @prefix, or -1. */
static double sample(const char *text, const char *prefix)
{
	const char *at = text;
	size_t n = strlen(prefix);

	while ((at = strstr(at, prefix))) {
		if (at == text || at[-1] == '\n')
			return strtod(strchr(at, ' ') + 1, NULL);
		at += n;
	}
	return -1;
}

/*
 * A long-lived exporter's counters never go down, whatever the heap
 * shows (prom_guard.c): a heap whose counters are rewritten lower keeps
 * its series at their highest, and the decreases are counted for it
 * (once per series each time the heap shows less than the time before,
 * not again while it stays low); a heap that grows past the floor is
 * shown as it is; a process that is gone for a scrape comes back to its
 * floor. A one-off export has no memory: it shows what the heap says.
 */
TEST(prometheus_counters_never_go_down_in_a_long_lived_exporter)
{
	static const char frame[] =
		"blamer_attribution_cpu_seconds_total{pid=\"4242\",";
	static const char dec[] = "blamer_counter_decreases_total{pid=\"4242\"";
	struct blamer_prom_cache *c = blamer_prom_cache_new();
	struct blamer_snapshot *s, *none;
	char *buf = NULL, *one = NULL, *first = NULL;
	size_t len, cap = 0, olen, ocap = 0;
	struct fx_heap h, other;
	const char *at;
	int i;

	ASSERT_NE(NULL, c);
	/* the frame path's cpu series: 5 ms per scale step */
	fx_standard(&h, 4242, 777, 5);
	s = read_heap(&h);
	ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap));
	blamer_snapshot_free(s);
	first = strndup(buf, len);
	at = strstr(first, frame);
	ASSERT_NE(NULL, at);
	ASSERT_NE(NULL, strstr(at, "path=\"/browser/tab/frame\"} 0.025000000\n"));
	EXPECT_EQ(NULL, strstr(first, "blamer_counter_decreases_total"));
	/* rewritten lower, twice (the second time the same): held, counted once */
	for (i = 0; i < 2; i++) {
		fx_free(&h);
		fx_standard(&h, 4242, 777, 3);
		s = read_heap(&h);
		ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap));
		buf[len] = '\0';
		at = strstr(buf, frame);
		ASSERT_NE(NULL, at);
		EXPECT_NE(NULL, strstr(at, "path=\"/browser/tab/frame\"} 0.025000000\n"));
		/* every counter of the heap went down: each series counted */
		EXPECT_LT(0, sample(buf, dec));
		EXPECT_NE(NULL, strstr(buf, "# TYPE blamer_counter_decreases_total counter\n"));
		/* the one-off export says what the heap says */
		ASSERT_EQ(0, blamer_snapshot_prometheus_text(s, &one, &olen, &ocap));
		one[olen] = '\0';
		EXPECT_NE(NULL, strstr(one, "path=\"/browser/tab/frame\"} 0.015000000\n"));
		EXPECT_EQ(NULL, strstr(one, "blamer_counter_decreases_total"));
		blamer_snapshot_free(s);
	}
	{
		double d = sample(buf, dec);

		/* up again, below the floor: held, no new decrease */
		fx_free(&h);
		fx_standard(&h, 4242, 777, 4);
		s = read_heap(&h);
		ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap));
		blamer_snapshot_free(s);
		buf[len] = '\0';
		EXPECT_NE(NULL, strstr(buf, "path=\"/browser/tab/frame\"} 0.025000000\n"));
		EXPECT_EQ(d, sample(buf, dec));
		/* gone for a scrape, then back lower still: the floor holds */
		fx_standard(&other, 4243, 778, 1);
		none = read_heap(&other);
		ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(none, c, &buf, &len, &cap));
		blamer_snapshot_free(none);
		fx_free(&other);
		fx_free(&h);
		fx_standard(&h, 4242, 777, 2);
		s = read_heap(&h);
		ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap));
		blamer_snapshot_free(s);
		buf[len] = '\0';
		EXPECT_NE(NULL, strstr(buf, "path=\"/browser/tab/frame\"} 0.025000000\n"));
		EXPECT_LT(d, sample(buf, dec));
	}
	/* past the floor: as the heap says */
	fx_free(&h);
	fx_standard(&h, 4242, 777, 9);
	s = read_heap(&h);
	ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap));
	blamer_snapshot_free(s);
	buf[len] = '\0';
	EXPECT_NE(NULL, strstr(buf, "path=\"/browser/tab/frame\"} 0.045000000\n"));
	/* a path comes (the series come in another order) and all go lower:
	 * each still held at its own floor, the new one as the heap says */
	{
		uint64_t mid[] = { FX_ROOT, 0x250 };

		fx_free(&h);
		fx_standard(&h, 4242, 777, 2);
		h.cur = 1;
		fx_node(&h, 0x250, "mid");
		fx_path(&h, mid, 2, 7000000, 5);
		h.cur = 0;
		s = read_heap(&h);
		ASSERT_EQ(0, blamer_snapshot_prometheus_text_cached(s, c, &buf, &len, &cap));
		blamer_snapshot_free(s);
		buf[len] = '\0';
		EXPECT_NE(NULL, strstr(buf, "path=\"/browser/tab/frame\"} 0.045000000\n"));
		EXPECT_NE(NULL, strstr(buf, "path=\"/browser/mid\"} 0.007000000\n"));
		EXPECT_NE(NULL, strstr(buf, "path=\"/browser/gpu\"} 0.004500000\n"));
	}
	free(buf);
	free(one);
	free(first);
	fx_free(&h);
	blamer_prom_cache_free(c);
}

/*
 * The service's guard remembers every counter it wrote, to never write
 * one lower; what it did not write this time it kept for good, so a heap
 * whose label values changed every scrape grew a long-lived exporter by
 * its series count each time. Kept now: at most as many unwritten series
 * as written ones (4096 at least), written less than 10 minutes ago.
 * 1,000 series relabelled over 12 scrapes: at most 1,000 + 4,096
 * remembered, not 12,000.
 */
TEST(the_service_guard_forgets_what_it_no_longer_writes)
{
	struct blamer_fleet *f;
	struct blamer_snapshot *s;
	struct fx_heap h;
	char *buf = NULL, v[16], err[128];
	size_t len, cap = 0;
	blamer_ref d;
	int r, i;

	f = blamer_fleet_open(NULL, err, sizeof(err));
	ASSERT_NE(NULL, f) TH_LOG("%s", err);
	for (r = 0; r < 12; r++) {
		fx_init(&h, 1, 1 << 20, 4242, 777);
		fx_process(&h, BLAMER_PHASE_MAIN_LOOP, "svc");
		d = fx_metric_def(&h, "rot", BLAMER_METRIC_COUNTER, 0, "k", 1, NULL, 0);
		for (i = 0; i < 1000; i++) {
			int n = snprintf(v, sizeof(v), "%d-%d", r, i);

			fx_metric(&h, d, v, (size_t)n + 1, 1, NULL);
		}
		s = read_heap(&h);
		ASSERT_NE(NULL, s);
		ASSERT_EQ(1000, s->nseries);
		ASSERT_EQ(0, blamer_fleet_prometheus_text(f, s, &buf, &len, &cap));
		blamer_snapshot_free(s);
		fx_free(&h);
	}
	EXPECT_LE(f->guard.n, 1000 + 4096);
	EXPECT_GE(f->guard.n, 1000);
	free(buf);
	blamer_fleet_close(f);
}

TEST_HARNESS_MAIN
